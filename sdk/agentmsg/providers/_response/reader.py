"""The part of a provider's response side that the provider writes: its :class:`PayloadReader`.

A provider module defines one ``Reader(PayloadReader)``. It reads the provider's decoded JSON payloads and
drives a :class:`~agentmsg.providers._response.builder.StreamBuilder`, which writes the AgentEvents; the one
:class:`agentmsg.Reducer` folds them into the message. The same reader serves both ways a reply comes:

* a whole (non-streaming) response: :meth:`PayloadReader.reply` reads it, then the reply is closed;
* a stream: the one :class:`~agentmsg.providers._response.parser.StreamParser` frames the body, decodes each
  payload and hands it to :meth:`PayloadReader.chunk`; :meth:`PayloadReader.end` when no payload comes.

Everything a reader needs beyond the builder is here: the provider's end of stream (:attr:`PayloadReader.done`,
:meth:`PayloadReader.end_at_error`), payloads of no shape it knows (:attr:`PayloadReader.foreign`,
:meth:`PayloadReader.say_foreign`) and the text route the parser may read without the reader
(:meth:`PayloadReader.route_text`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from agentmsg._native import speedups

if TYPE_CHECKING:
    from agentmsg.providers._response.builder import StreamBuilder
    from agentmsg.providers.spec import Spec

__all__ = ["PayloadReader", "Route", "value_at", "value_end"]

#: The C kernel that reads a routed text payload (``agentmsg._speedups.json_string_between``); None without it
_between = getattr(speedups, "json_string_between", None)

#: Routes a reader finds in a payload's bytes at most (:meth:`PayloadReader.route_value`): a stream whose text
#: payloads never repeat their shape costs this many searches, no more
_MAX_FINDS = 256


#: A route (:meth:`PayloadReader.route_text`): head, tail, slot, event, after, then, kind
Route = tuple[bytes, bytes, Any, str, tuple[bytes, ...], Callable[[bytes], None] | None, str]

_INT = re.compile(rb"-?\d+")
#: A count in a usage object's bytes: its key and (group 2) its value (PayloadReader.usage_holes)
_COUNT = re.compile(rb'"(\w+)":(-?\d+)')


#: A JSON string at a position (unrolled: each byte matched one way, so a string that never closes fails in linear
#: time); its escapes are not checked (the C kernel checks the strings it reads)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _string_end(data: bytes, i: int) -> int:
    """The index of the closing quote of the JSON string that opens at ``data[i]``; -1 when none opens there, or
    it does not close."""
    # (the first quote after it, found by memchr, closes it when no backslash is just before it: the common text,
    # told with no regular expression, whose match cost about 40 ns a byte of the string; else the match)
    end = data.find(b'"', i + 1)
    if end >= 0 and data[end - 1] != 0x5C and data[i : i + 1] == b'"':
        return end
    m = _STRING.match(data, i)
    return m.end() - 1 if m is not None else -1


def _token_end(data: bytes, i: int) -> int:
    """One past the JSON string or integer at ``data[i]``; -1 when neither is there."""
    if data[i : i + 1] == b'"':
        end = _string_end(data, i)
        return end + 1 if end >= 0 else -1
    m = _INT.match(data, i)
    return m.end() if m is not None else -1


_BRACKETS = re.compile(rb'["{}\[\]]')


def value_end(data: bytes, i: int) -> int:
    """One past the JSON object or array that opens at ``data[i]`` (its strings skipped); -1 when none opens there or
    it does not close."""
    if data[i : i + 1] not in (b"{", b"["):
        return -1
    depth = 0
    while True:
        m = _BRACKETS.search(data, i)
        if m is None:
            return -1
        i = m.start()
        c = data[i]
        if c == 0x22:  # '"'
            i = _string_end(data, i)
            if i < 0:
                return -1
        elif c in b"{[":
            depth += 1
        else:
            depth -= 1
            if not depth:
                return i + 1
        i += 1


def value_at(data: bytes, key: bytes) -> int:
    """Where the value of ``key`` (``b'"obfuscation":'``) starts in a payload's bytes, when the key occurs once in
    them; else -1."""
    at = data.find(key)
    return at + len(key) if at >= 0 and data.find(key, at + 1) < 0 else -1


class PayloadReader(ABC):
    """One provider's payloads -> builder calls, for one reply.

    ``options`` (class attribute): the keyword options the reader takes itself (DashScope's ``incremental``);
    every other option of a parser or response reader goes to the :class:`StreamBuilder`."""

    options: ClassVar[tuple[str, ...]] = ()
    #: whether a whole response may also be a JSON array of responses (Gemini's stream read without SSE)
    arrays: ClassVar[bool] = False

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        self.b = builder
        self.spec = spec
        self.done = False  # the provider's end-of-stream signal was seen (a payload after it is said, not read)
        self.foreign = 0  # payloads of no shape this reader knows, skipped (see say_foreign)
        #: the routed payloads' shape: head, tail, slot, event, after, then, kind (see route_text)
        self.route: Route | None = None
        self._finds = 0  # routes looked for in a payload's bytes (route_value)

    # ---- what a provider writes ---------------------------------------------------------------------

    @abstractmethod
    def reply(self, obj: Any) -> None:
        """A whole (non-streaming) response, read as the events its stream would give, and closed
        (``self.b.close(...)``). Raise :class:`~agentmsg.ValidationError` (rule ``shape``) for a body that is
        not this provider's response; a KeyError, TypeError... is reported as rule ``shape`` too."""

    @abstractmethod
    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        """One decoded stream payload (a JSON object) and its SSE event name (``""`` when none). A KeyError,
        TypeError, AttributeError or ValueError raised here skips the payload, said as problem ``type``."""

    def whole(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj``, a body's only payload (a JSON object, neither SSE nor in an array), is a whole response,
        which a stream parser then ends as :meth:`reply` does. No, unless the reader tells a whole response from a
        stream's chunk (a reader that can says so): a chunk alone is a stream cut after it, never to be taken for a
        whole reply (Gemini's response and chunk have one shape)."""
        return False

    def end(self) -> None:
        """No payload comes after the last one (the body or the transport ended, or the provider's error):
        emit what is held, and say what was skipped (:meth:`say_foreign`)."""
        self.say_foreign("no shape this reader knows")

    # ---- what a reader may call ----------------------------------------------------------------------

    def end_at_error(self) -> None:
        """The provider's error (said already, :meth:`StreamBuilder.error`) ends the reply, as the SDKs' streams
        raise or stop there: what came before is kept, the reply closes interrupted, and a payload after it is
        skipped and said once (problem ``order``), as one after ``[DONE]`` is."""
        self.done = True
        self.end()
        self.b.close()

    def say_foreign(self, shape: str) -> None:
        """The payloads of no shape the reader knows (:attr:`foreign`: another provider's, or a wrapper around the
        provider's own), which it skipped: said once, when no more comes (problem ``type``); when nothing else
        came, the body is not this provider's stream?"""
        n, self.foreign = self.foreign, 0
        if n:
            name = self.spec.name
            alone = (
                ""
                if self.b.opened()
                else f", and nothing else: not a{'n' if name[:1] in 'aeiou' else ''} {name} stream?"
            )
            self.b.problem("type", f"{n} payload(s) of {shape} were skipped{alone}", foreign=bool(alone))

    def route_text(
        self,
        head: bytes,
        tail: bytes,
        slot: Any,
        event: str,
        after: tuple[bytes, ...] = (),
        then: Callable[[bytes], None] | None = None,
        kind: str = "text",
    ) -> None:
        """What :meth:`chunk` says of the payload it is reading: a payload whose bytes are exactly ``head``, a JSON
        string and ``tail`` would be read as ``builder.text(<the string>, slot=slot)`` and nothing else (the
        provider's common text delta, for the block now open); ``kind`` ``thinking``: as
        ``builder.thinking(<the string>, slot=slot)``; ``call``: as ``builder.tool_call(slot, arguments=<the
        string>)``, ``slot`` the call's key (a later fragment of a call's arguments), all of choice 0
        (:meth:`StreamBuilder.routed`). Until another payload comes, the parser reads such payloads so, with no
        orjson and no :meth:`chunk` call: the string is read by the generic C kernel
        ``agentmsg._speedups.json_string_between``, which leaves what it does not read exactly as orjson does to
        orjson. ``event``: the SSE event name such payloads come under (``chunk``'s). ``after``: the payload goes
        on after ``tail`` with a hole (a JSON string or integer) then the piece, for each piece: values that change
        from one payload to the next and that :meth:`chunk` does not read, or reads in ``then`` (OpenAI's
        ``obfuscation``, Gemini's usage counts); ``then(payload)`` is called after the delta, with the payload's
        bytes. Any other payload ends the route before it is read. Without the C kernels, nothing; nor for a
        ``head`` that does not begin with ``{`` (the parser takes a route only for a JSON object's bytes: it looks
        at the head, not at each payload's first byte)."""
        if _between is not None and head[:1] == b"{":
            self.route = (head, tail, slot, event, after, then, kind)

    def route_value(
        self,
        key: bytes,
        text: str,
        slot: Any,
        event: str,
        holes: Iterable[int] = (),
        then: Callable[[bytes], None] | None = None,
        kind: str = "text",
    ) -> None:
        """:meth:`route_text` for the payload being read (the builder's ``payload``), found in its bytes: the JSON
        string after ``key`` (``b'"content":'``), which occurs once in them, holds ``text``; ``holes``: where in
        them the values that may change start (:func:`value_at`), each a JSON string or integer after the text.
        The route is taken only when the C kernel reads ``text`` back from the payload with it; not at all after
        :data:`_MAX_FINDS` searches in one stream (its payloads' shape keeps changing)."""
        if _between is None or self._finds >= _MAX_FINDS:
            return
        self._finds += 1
        data = self.b.payload
        if type(data) is not bytes:
            return
        start = value_at(data, key)
        end = _string_end(data, start) if start >= 0 else -1
        if end < 0:
            return
        pieces = []
        pos = end + 1
        for hole in sorted(holes):
            if hole < pos:  # (before the text, or -1: not found)
                return
            pieces.append(data[pos:hole])
            pos = _token_end(data, hole)
            if pos < 0:
                return
        pieces.append(data[pos:])
        after = tuple(pieces[1:])
        if data[:1] == b"{" and _between(data, data[:start], pieces[0], after) == text:  # (see route_text)
            self.route = (data[:start], pieces[0], slot, event, after, then, kind)

    def usage_holes(
        self, u: Any, key: str, input_key: str, convert: Callable[[Any, StreamBuilder], dict[str, Any] | None]
    ) -> tuple[list[int], Callable[[bytes], None] | None] | None:
        """The holes and ``then`` of a route (:meth:`route_value`) whose payloads carry the provider's cumulative
        usage ``u`` under ``key``, which :meth:`chunk` keeps for later (:meth:`StreamBuilder.usage_later`, its
        input count ``input_key`` a token count; ``convert`` reads it then): every count in it but the input's is a
        hole, and a routed payload's usage is read from its bytes if it is still the last when the reply ends. No
        holes and no ``then`` for a payload without one (``u`` None); None when the payload being read is not so
        (its usage was converted at once, or its bytes do not show it once)."""
        if u is None:
            return [], None
        data = self.b.payload
        n = u.get(input_key) if type(u) is dict else None
        if type(n) is not int or n < 0 or type(data) is not bytes:
            return None
        start = value_at(data, b'"%s":' % key.encode())
        if start < 0:
            return None
        # (the usage written back as the provider writes it, compact and in its order, is most often its very bytes:
        # then they end where it does, found by one comparison; else its brackets are walked, a Python loop that cost
        # more than the payload's orjson.loads)
        try:
            written = orjson.dumps(u)
        except TypeError:  # (nested deeper than orjson writes: walked)
            written = b""
        end = start + len(written) if written and data.startswith(written, start) else value_end(data, start)
        if end < 0:
            return None
        field = input_key.encode()
        holes = [m.start(2) for m in _COUNT.finditer(data, start, end) if m.group(1) != field]
        b = self.b

        def later(raw: bytes, builder: StreamBuilder) -> dict[str, Any] | None:
            return convert(orjson.loads(raw)[key], builder)

        def then(payload: bytes) -> None:
            b.usage_later_known(later, payload)

        return holes, then
