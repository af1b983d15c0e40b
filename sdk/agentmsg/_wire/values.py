"""JSON values out of a byte stream: payloads written one after another, as SDKs, logs and people save a
stream when it is not SSE or JSON lines. Gemini's ``streamGenerateContent`` without ``alt=sse`` sends a
JSON array of responses, pretty-printed; ``json.dump(chunks, indent=2)`` writes an array too; a dump of
pretty-printed objects one after another has no line per payload. No agent or provider knowledge.

:class:`ValueSplitter` hands over each top-level object (or each element of a top-level array: the array
itself is only the container of the payloads) as its bytes, in time linear in the input (a regular
expression jumps from one bracket or quote to the next), holding at most one value. Between values,
blanks and commas are skipped; anything else there (a number in the array, a stray line) is handed over up
to the next comma, line end or the array's end, so that the reader reports it as not JSON (nothing is
dropped silently). A value over the size limit is dropped as it
arrives and said (``None`` in its place). Brackets are not checked for matching: a value is cut where
its depth comes back to zero, and the JSON parser then says what is wrong with it.
"""

from __future__ import annotations

import re

__all__ = ["ValueSplitter", "starts_values"]

_BLANK = re.compile(rb"[^ \t\r\n,]")  # between values: the next byte that is not a blank or a comma
_STRUCT = re.compile(rb'["\[\]{}]')  # inside a value, outside its strings
_IN_STRING = re.compile(rb'["\\]')
_JUNK_END = re.compile(rb"[,\n]")  # text between values that is no value ends at a comma or its line end
_JUNK_END_ARRAY = re.compile(rb"[,\n\]]")  # (or where the array ends)
_OPEN = frozenset(b"[{")
_QUOTE, _BACKSLASH, _LBRACKET, _RBRACKET, _LF = b'"'[0], b"\\"[0], b"["[0], b"]"[0], b"\n"[0]


class ValueSplitter:
    """Incremental: ``feed(chunk)`` returns the items the chunk completes, ``close()`` the last one when the
    input ended inside it. An item is ``(bytes, True)`` for a value, ``(bytes, False)`` for text between
    values that is no value, or ``None`` for a value or text over ``max_bytes``."""

    __slots__ = ("_array", "_buf", "_depth", "_escape", "_junk", "_over", "_string", "arrayed", "max_bytes", "unclosed")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._depth = 0  # nesting depth inside the current value (0: between values)
        self._array = False  # inside the top-level array whose elements are the values
        self._string = False  # inside a string of the current value
        self._escape = False  # a backslash ended the last chunk, inside a string
        self._junk = False  # reading text between values that is no value, up to its line end
        self._buf = bytearray()  # the current value's (or text's) bytes from earlier chunks
        self._over = False  # the current value went over max_bytes: its bytes are dropped
        #: set by :meth:`close`: the input ended inside the top-level array (no ``]``: a cut stream)
        self.unclosed = False
        #: whether the values came inside a top-level array (a list of payloads, not values one after another)
        self.arrayed = False

    def feed(self, chunk: bytes) -> list[tuple[bytes, bool] | None]:
        out: list[tuple[bytes, bool] | None] = []
        n = len(chunk)
        i = 0
        start = 0  # where the current value's (or text's) bytes begin in this chunk
        while i < n:
            if self._junk:
                m = (_JUNK_END_ARRAY if self._array else _JUNK_END).search(chunk, i)
                if m is None:
                    break
                self._emit(chunk, start, m.start(), False, out)
                i = m.start()  # (a "]" there closes the array)
                continue
            if self._depth == 0:
                m = _BLANK.search(chunk, i)
                if m is None:
                    return out
                j = m.start()
                c = chunk[j]
                i = start = j
                if c in _OPEN:
                    if c == _LBRACKET and not self._array:
                        self._array = self.arrayed = True  # the container of the values
                        i += 1
                    else:
                        self._depth = 1
                        i += 1
                elif c == _RBRACKET and self._array:
                    self._array = False
                    i += 1
                else:
                    self._junk = True
                continue
            if self._string:
                if self._escape:
                    self._escape = False
                    i += 1
                    continue
                m = _IN_STRING.search(chunk, i)
                if m is None:
                    break
                j = m.start()
                if chunk[j] == _BACKSLASH:
                    if j + 1 < n:
                        i = j + 2
                    else:
                        self._escape = True
                        i = n
                    continue
                self._string = False
                i = j + 1
                continue
            m = _STRUCT.search(chunk, i)
            if m is None:
                break
            j = m.start()
            c = chunk[j]
            i = j + 1
            if c == _QUOTE:
                self._string = True
            elif c in _OPEN:
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._emit(chunk, start, i, True, out)
        if self._depth or self._junk:
            self._hold(chunk, start, n)
        return out

    def close(self) -> list[tuple[bytes, bool] | None]:
        """End of the input: a value (or text) it ended inside, as far as it went."""
        out: list[tuple[bytes, bool] | None] = []
        if self._depth or self._junk:
            self._emit(b"", 0, 0, not self._junk, out)
        self.unclosed = self._array
        self._array = self._string = self._escape = False
        return out

    def _hold(self, chunk: bytes, start: int, end: int) -> None:
        """Keep the current value's bytes ``chunk[start:end]`` until it ends (dropped past ``max_bytes``)."""
        if self._over:
            return
        if len(self._buf) + end - start > self.max_bytes:
            self._over = True
            self._buf = bytearray()
            return
        self._buf += chunk[start:end]

    def _emit(self, chunk: bytes, start: int, end: int, value: bool, out: list[tuple[bytes, bool] | None]) -> None:
        """The current value (or text) ends at ``chunk[end]``: handed over, and the state is between values."""
        if not self._over and len(self._buf) + end - start > self.max_bytes:
            self._over = True
        if self._over:
            out.append(None)
        elif self._buf:
            out.append((bytes(self._buf) + chunk[start:end], value))
        else:
            out.append((chunk[start:end], value))
        self._buf = bytearray()
        self._over = self._junk = self._string = self._escape = False
        self._depth = 0


def starts_values(text: bytes) -> bool | None:
    """Whether a body that is neither SSE nor empty, and starts with ``text`` (after a BOM and blanks), holds
    JSON values one after another (True: it starts with ``[``, or with ``{`` alone on its first line), JSON
    lines (False), or None while ``text`` is ``{`` and blanks only (its first line does not tell yet)."""
    if text[:1] == b"[":
        return True
    if text[:1] != b"{":
        return False
    after = text[1:].lstrip(b" \t")
    if not after:
        return None
    return after[:1] in (b"\r", b"\n")
