"""Lines out of a byte stream: the one line splitter, for JSON lines of agent events
(:mod:`agentmsg.events.stream`) and of provider bodies (:mod:`agentmsg._wire.framing`).

It works in time linear in the input and holds at most one line: bytes are handed over in *runs* of
whole lines (``data[start:end]``, no final newline; bytes in memory are not copied), and a line longer
than the limit is dropped as it arrives (``None`` in its place), never buffered whole. Lines end at LF;
a CR before it stays in the line (JSON parsers take it as whitespace). No agent or provider knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["LineSplitter", "Run", "checked"]

Run = tuple[bytes, int, int]  # data, start, end: data[start:end] is whole lines (no final newline)


def checked(data: bytes, start: int, end: int, max_line: int) -> Iterator[Run | None]:
    """The run ``data[start:end]``, or (when it is long enough to hold a line over ``max_line``) its parts
    around such lines, a None in place of each. The number of lines is kept: a run of ``count(LF) + 1``
    lines comes out as runs and Nones that add up to as many."""
    if end - start <= max_line:
        yield data, start, end
        return
    run_start = pos = start
    while True:
        nl = data.find(b"\n", pos, end)
        stop = end if nl < 0 else nl
        if stop - pos > max_line:
            if pos > run_start:
                yield data, run_start, pos - 1
            yield None
            run_start = stop + 1
        if nl < 0:
            break
        pos = nl + 1
    if run_start < end:
        yield data, run_start, end
    elif run_start == end and end > start and data[end - 1 : end] == b"\n":
        yield data, end, end  # an empty last line after a skipped one: keeps the line count


class LineSplitter:
    """Incremental: ``feed(chunk)`` returns the runs of whole lines the chunk completes (and None for each
    line over ``max_line`` bytes), ``close()`` the last line when the input did not end with a newline.
    Each byte is looked at a bounded number of times, whatever the chunking."""

    __slots__ = ("_pending", "_skipping", "max_line")

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._pending = bytearray()  # the line being read (no newline yet)
        self._skipping = False  # inside a line over the limit: drop bytes up to its newline

    @property
    def pending(self) -> int:
        """Bytes of the unfinished last line held (0 after a newline)."""
        return len(self._pending)

    def feed(self, chunk: bytes) -> list[Run | None]:
        out: list[Run | None] = []
        if self._skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return out
            chunk, self._skipping = chunk[nl + 1 :], False
        cut = chunk.rfind(b"\n")
        if cut < 0:
            self._pending += chunk
            self._check_pending(out)
            return out
        if self._pending:
            data, cut = bytes(self._pending) + chunk, cut + len(self._pending)
            self._pending = bytearray()
        else:
            data = chunk
        out.extend(checked(data, 0, cut, self.max_line))
        self._pending += memoryview(data)[cut + 1 :]
        self._check_pending(out)
        return out

    def _check_pending(self, out: list[Run | None]) -> None:
        if len(self._pending) > self.max_line:
            out.append(None)
            self._pending, self._skipping = bytearray(), True

    def close(self) -> list[Run | None]:
        pending, skipping = self._pending, self._skipping
        self._pending, self._skipping = bytearray(), False
        if pending and not skipping:
            return list(checked(bytes(pending), 0, len(pending), self.max_line))
        return []
