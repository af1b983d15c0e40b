"""Provider chunks -> agentmsg AgentEvents: the machinery every provider stream parser shares.

A provider parser (``providers/<provider>.py``, section ``# ---- stream``) reads the provider's payloads
and calls a :class:`StreamBuilder`, which writes AgentEvent dicts valid against
``schemas/agent-event.schema.json``; the one :class:`agentmsg.Reducer` folds them into the message. No
provider keeps an accumulator of its own: the builder only remembers which blocks and calls are open.

What the events of one provider response look like (one *choice* / candidate)::

    AGENT_START (replyId = the provider's response id, name)
    MODEL_CALL_START (modelName)
      THINKING_BLOCK_* / TEXT_BLOCK_* / TOOL_CALL_*   blocks in the order they started
      CUSTOM agentmsg.error        a provider error mid-stream, or a stream cut short (then:)
      REQUEST_STOP                 generateReason when it is not MODEL_STOP (TOOL_CALLS, INTERRUPTED),
                                   ``reason`` = the provider's finish reason or the error message
    MODEL_CALL_END (usage)
    AGENT_END

Choices other than the first (OpenAI ``n > 1``, Gemini ``candidateCount``) carry ``source: "choice/<i>"``
on every event, so ``reduce_events(events)`` is choice 0 and ``reduce_events(events, source="choice/1")``
is choice 1.

A non-streaming response is turned into the events its stream would give (:func:`read_response` reads
the body, the provider writes through a builder) and reduced the same way (:func:`response_message`).

Framing: :class:`Framer` turns raw bytes into payloads through the one SSE decoder
(:class:`agentmsg._sse.SSEDecoder`), or reads JSON lines when the body is not SSE (a body that does not
start with an SSE field or comment: DashScope's SDK-printed streams, logs, an error page).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

import orjson

from .._json import json_type
from .._json import loads as json_loads
from .._limits import limits
from .._lines import LineSplitter, Run
from .._sse import SNIFF_LIMIT, FormatSniffer, JSONDataDecoder, SSEEvent, _event_end
from .._values import ValueSplitter
from ..errors import Problem, ValidationError
from ..events.reducer import reduce_events
from ..message import Msg

__all__ = [
    "ERROR_EVENT",
    "NOT_KEPT_EVENT",
    "PROBLEM_EVENT",
    "BaseStreamParser",
    "Framer",
    "StreamBuilder",
    "as_chunks",
    "base64_source",
    "json_fragment_writer",
]

ERROR_EVENT = "agentmsg.error"  # CUSTOM event name: a provider error or a cut stream
PROBLEM_EVENT = "agentmsg.problem"  # CUSTOM event name: a payload that could not be read (skipped)
NOT_KEPT_EVENT = "agentmsg.not-kept"  # CUSTOM event name: provider data the message has no place for


def as_chunks(chunks: Iterable[bytes | str] | bytes | str) -> Iterable[bytes | str]:
    """A whole body or an iterable of chunks, as an iterable of chunks."""
    if isinstance(chunks, (bytes, bytearray, str)):
        return (chunks,)
    return chunks


# ---- framing -----------------------------------------------------------------------------------------


_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r\n"
_HTTP = b"HTTP/"  # a captured response's status line starts so (curl -i)
#: A payload read at the end of a body without its terminator (SSE: the blank line; JSON lines: the newline).
#: Bodies saved from docs and logs often lack it, so the payload is still taken when it is whole JSON.
TRAILING = Problem("", "incomplete", "the stream ended inside this payload (no end of event or line after it)")


class Framer:
    """Raw body chunks -> payloads (:class:`agentmsg._sse.SSEEvent`: event name, data text, problem): SSE
    through :class:`SSEDecoder`, or JSON lines (the one line splitter, :class:`agentmsg._lines.LineSplitter`)
    when the body does not start as SSE does (:func:`agentmsg._sse.sniff`, as for agent event streams: a
    body that is neither, an HTML error page say, is then reported line by line, not skipped as SSE), or
    JSON values one after another (:class:`agentmsg._values.ValueSplitter`) when it starts with ``[`` (a
    JSON array of payloads: Gemini without ``alt=sse``, a saved list of chunks) or with ``{`` alone on its
    first line (pretty-printed payloads).

    Nothing is changed or dropped silently: ``problem`` is the decoder's (rule ``utf-8``: invalid UTF-8
    replaced by U+FFFD, the data otherwise whole; ``max-line-bytes`` / ``max-event-bytes``: a line or
    event over ``limits.max_event_bytes`` was dropped, ``data`` is empty) or :data:`TRAILING` for the last
    payload of a body that ended inside it. The SSE ``data: [DONE]`` sentinel is passed on as ``"[DONE]"``.
    Time is linear in the body, whatever the chunking; memory holds one line or event."""

    __slots__ = ("_decoder", "_format", "_head", "_lines", "_mode", "_scanned", "_values", "notes")

    def __init__(self) -> None:
        self._mode: str | None = None  # "sse" | "jsonl" | "values", decided by the body's first bytes
        self._format: FormatSniffer | None = FormatSniffer()  # (None once decided)
        self._decoder = JSONDataDecoder()  # data as bytes, for BaseStreamParser._data
        self._lines: LineSplitter | None = None  # made when the body is JSON lines
        self._values: ValueSplitter | None = None  # made when the body is JSON values
        self._head: bytearray | None = bytearray()  # the body's start while it may be an HTTP head (None: past it)
        self._scanned = 0  # bytes of the held head with no blank line in them
        #: What was left out that is not the reply's: the status lines of a captured response (``curl -i``),
        #: for the parser to say (:meth:`BaseStreamParser.feed`).
        self.notes: list[str] = []

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogatepass")  # a lone surrogate becomes invalid UTF-8: reported
        if self._head is not None:
            chunk = self._past_http_head(chunk)
            if self._head is not None:
                return []
        if self._mode is None:
            chunk = self._decide(chunk)
            if self._mode is None:
                return []
        if self._mode == "sse":
            return self._decoder.feed(chunk)
        if self._values is not None:
            return self._value_payloads(self._values.feed(chunk), trailing=False)
        assert self._lines is not None
        return self._payloads(self._lines.feed(chunk), trailing=False)

    def _past_http_head(self, chunk: bytes) -> bytes:
        """A body saved with its HTTP response head (``curl -i``: a status line, headers, a blank line; an
        interim ``100 Continue`` head before it): the heads are left out and their status lines noted; then
        the rest of the body. Other bodies are given back as they are, with no copy. A head is held until its
        blank line (each byte looked at once), at most 64 KiB: without a blank line by then, it is no head."""
        head = self._head
        assert head is not None
        if not head and chunk[: len(_HTTP)] != _HTTP[: len(chunk)]:
            self._head = None  # the usual case: no HTTP head
            return chunk
        head += chunk
        while True:
            if head[: len(_HTTP)] != _HTTP[: len(head)]:
                self._head = None
                return bytes(head)
            if len(head) < len(_HTTP):
                return b""  # maybe "HTTP/" cut across chunks: wait
            start = max(0, self._scanned - 3)  # (a blank line may straddle the last chunk's end)
            end = _event_end(bytes(head[start:]))
            if end < 0:
                self._scanned = len(head)
                if len(head) <= SNIFF_LIMIT:
                    return b""  # the head goes on in the next chunk
                self._head = None  # no blank line in 64 KiB: no HTTP head after all
                return bytes(head)
            end += start
            status = bytes(head[: head.find(b"\n")]).strip().decode("utf-8", "replace")[:200]
            self.notes.append(f"the body starts with an HTTP response head ({status!r}): left out")
            del head[:end]
            self._scanned = 0

    def _decide(self, chunk: bytes) -> bytes:
        """Read the body's first bytes until they tell its format (:class:`agentmsg._sse.FormatSniffer`, as
        ``reduce_stream`` tells them); then the bytes to parse."""
        assert self._format is not None
        kind = self._format.feed(chunk)
        return b"" if kind is None else self._begin(kind)

    def _begin(self, kind: str) -> bytes:
        """Read the body as ``kind`` from now on; the bytes read so far, to parse (a BOM left out for JSON lines
        and values; the SSE decoder handles its own)."""
        assert self._format is not None
        head = self._format.head
        self._format = None  # the head is handed over: not held twice
        self._mode = kind
        if kind == "sse":
            return head
        if kind == "values":
            self._values = ValueSplitter(limits.max_event_bytes)
        else:
            self._lines = LineSplitter(limits.max_event_bytes)
        return head.removeprefix(_BOM)

    def close(self) -> list[SSEEvent]:
        """End of the body: a last payload not followed by its terminator, with :data:`TRAILING` (or the
        decoder's own problem)."""
        if self._head:  # the body ended inside what may be an HTTP head: read as a body after all
            held, self._head = bytes(self._head), None
            return self.feed(held) + self.close()
        self._head = None
        first: list[SSEEvent] = []
        if self._mode is None:  # the body ended before it told its format (blanks, or "{" and blanks): lines
            head = self._begin("jsonl")
            assert self._lines is not None
            first = self._payloads(self._lines.feed(head), trailing=False)
        if self._values is not None:
            return self._value_payloads(self._values.close(), trailing=True)
        if self._lines is not None:
            return first + self._payloads(self._lines.close(), trailing=True)
        # A last event without its blank line: dispatched (the spec discards it; saved bodies lack it).
        out = self._decoder.feed(b"\n\n")
        for e in out:
            e.problem = e.problem or TRAILING
        return out

    def _value_payloads(self, items: list[tuple[bytes, bool] | None], trailing: bool) -> list[SSEEvent]:
        # text between values that is no value is read, and reported, as a payload that is not JSON
        out = [_dropped("value") if item is None else _payload(item[0], "value") for item in items]
        return _trailing(out) if trailing else out

    def _payloads(self, runs: list[Run | None], trailing: bool) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for run in runs:
            if run is None:
                out.append(_dropped("line"))
                continue
            data, start, end = run
            out.extend(_payload(line, "line") for line in data[start:end].split(b"\n") if line.strip(_BLANK))
        return _trailing(out) if trailing else out


def _payload(data: bytes, what: str) -> SSEEvent:
    """A JSON line's or value's payload: its text (invalid UTF-8 replaced by U+FFFD and said, rule ``utf-8``)."""
    try:
        return SSEEvent(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        problem = Problem("", "utf-8", f"invalid UTF-8 (byte {exc.start} of a {what}) replaced by U+FFFD")
        return SSEEvent(data.decode("utf-8", "replace"), problem=problem)


def _dropped(what: str) -> SSEEvent:
    """The empty payload said in place of a line or value over ``limits.max_event_bytes``."""
    limit = limits.max_event_bytes
    return SSEEvent("", problem=Problem("", "max-event-bytes", f"a {what} longer than {limit} bytes: dropped"))


def _trailing(out: list[SSEEvent]) -> list[SSEEvent]:
    """The payloads read at the end of a body: the last one lacked its terminator (:data:`TRAILING`)."""
    if out and out[-1].problem is None:
        out[-1].problem = TRAILING
    return out


# ---- the event builder -------------------------------------------------------------------------------


class _Call:
    __slots__ = ("args", "id", "name", "open", "started")

    def __init__(self, call_id: str, name: str | None) -> None:
        self.id = call_id
        self.name = name
        self.open = True
        self.started = False
        self.args = False  # whether an argument delta was emitted


class _Choice:
    """What the builder remembers of one choice: its open blocks and calls (no content)."""

    __slots__ = (
        "blocks",
        "calls",
        "calls_by_id",
        "done",
        "error",
        "finish",
        "minted",
        "normal",
        "reason",
        "reply_id",
        "source",
        "started",
        "waiting",
    )

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.started = False
        self.reply_id = ""
        self.blocks: dict[str, tuple[str, str]] = {}  # slot -> (kind, blockId), open blocks
        self.calls: dict[Any, _Call] = {}  # key (index / slot) -> call
        self.calls_by_id: dict[str, _Call] = {}
        self.waiting: list[_Call] = []  # calls not started yet, in the order they appeared
        self.finish: str | None = None  # the provider's finish reason
        self.normal = False  # the finish reason is a plain stop
        self.minted = 0  # tool call ids minted so far
        self.reason: str | None = None  # generate reason when not MODEL_STOP
        self.error: dict[str, Any] | None = None
        self.done = False


_SECOND: tuple[int, str] = (-1, "")  # the last second formatted, shared by every builder


def _now() -> str:
    """createdAt now (RFC 3339 UTC, microseconds); the date-time part is formatted once per second."""
    global _SECOND
    secs, micros = divmod(time.time_ns() // 1000, 1_000_000)
    second = _SECOND
    if second[0] != secs:  # (one tuple: threads never pair one second's date with another's)
        second = _SECOND = (secs, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)))
    return f"{second[1]}.{micros:06d}Z"


class StreamBuilder:
    """Writes the AgentEvents of one provider response; provider stream parsers drive it.

    ``provider`` goes into thinking blocks' provenance (``provider``, ``model``). ``name`` is the reply's
    agent name (the message's ``name``). ``reply_id`` overrides the provider's response id as the message
    id. ``id_factory`` / ``clock`` make event ids and createdAt deterministic. ``started_at``
    (``time.monotonic()`` when the request was sent) adds the call's wall-clock ``time`` to the usage.
    ``agent_events=False`` leaves out AGENT_START/AGENT_END (for an agent loop that frames its own reply).

    Events accumulate in :attr:`events`; :meth:`drain` hands them over.
    """

    def __init__(
        self,
        provider: str,
        *,
        name: str | None = None,
        reply_id: str | None = None,
        id_factory: Callable[[], str] | None = None,
        clock: Callable[[], str] | None = None,
        started_at: float | None = None,
        agent_events: bool = True,
    ) -> None:
        self.provider = provider
        self.name = name
        #: The provider names every call with an id, possibly after its name (OpenAI's family): a call waits
        #: for its id before it starts, so an id that comes late is the call's own (as the official
        #: accumulator merges it), not a new call's; a call that never gets one starts, with a derived id,
        #: when it ends. Otherwise (Gemini: no ids) a call starts as soon as it has its name.
        self.ids_expected = False
        self.model: str | None = None
        self.response_id: str | None = reply_id
        self._fixed_id = reply_id is not None
        self.events: list[dict[str, Any]] = []
        self.problems: list[Problem] = []
        self.not_kept_notes: list[Problem] = []  # provider data not kept (see not_kept)
        self._not_kept_keys: set[str] = set()
        self.usage: dict[str, Any] | None = None  # see usage_later: the last one may wait in _later
        self._later: tuple[Callable[[Any], dict[str, Any] | None], Any] | None = None
        self.errors: list[dict[str, Any]] = []  # the errors reported (error events' values)
        self.started_at = started_at
        self.agent_events = agent_events
        self.closed = False
        if id_factory is None:
            prefix = os.urandom(11).hex()
            counter = iter(range(1 << 62))

            def id_factory() -> str:
                return f"{prefix}{next(counter):010x}"  # 32 hex characters, like Java's ids

        self._new_id: Callable[[], str] = id_factory
        self._now = clock or _now
        self._stamp = self._now()
        self._choices: dict[int, _Choice] = {}
        self._blocks = 0
        self._pending: dict[int, list[str]] = {}  # argument fragments of calls not started yet
        self._signatures: dict[int, str] = {}  # thought signatures of calls not started yet
        self._whole_signatures: dict[str, str] = {}  # blockId -> its whole signature, sent when it ends

    # ---- plumbing -------------------------------------------------------------------------------

    def drain(self) -> list[dict[str, Any]]:
        out = self.events
        self.events = []
        return out

    def tick(self) -> None:
        """Take the time: the events built until the next tick share it as createdAt (a parser ticks once
        per chunk of the body it is fed: the events of one network read were created together)."""
        self._stamp = self._now()

    def _ev(self, c: _Choice, type_: str, **fields: Any) -> dict[str, Any]:
        e: dict[str, Any] = {"type": type_, "id": self._new_id(), "createdAt": self._stamp}
        if c.source is not None:
            e["source"] = c.source
        e.update(fields)
        self.events.append(e)
        return e

    def identify(self, response_id: Any = None, model: Any = None) -> None:
        """The provider's response id (the message id) and model, as soon as a payload names them."""
        if not self._fixed_id and self.response_id is None and isinstance(response_id, str) and response_id:
            self.response_id = response_id
        if self.model is None and isinstance(model, str) and model:
            self.model = model

    def choice(self, index: int = 0) -> _Choice:
        """The state of choice ``index``, opened (AGENT_START, MODEL_CALL_START) on first use."""
        c = self._choices.get(index)
        if c is not None and c.started:
            return c
        if c is None:
            c = self._choices[index] = _Choice(None if index == 0 else f"choice/{index}")
        if self.response_id is None:
            self.response_id = uuid.uuid4().hex  # none from the provider: unique (two replies never share one)
        c.reply_id = self.response_id if index == 0 else f"{self.response_id}-{index}"
        c.started = True
        if self.agent_events:
            start: dict[str, Any] = {"replyId": c.reply_id}
            if self.name is not None:
                start["name"] = self.name
            self._ev(c, "AGENT_START", **start, role="assistant")
        if self.model is not None:
            self._ev(c, "MODEL_CALL_START", replyId=c.reply_id, modelName=self.model)
        else:
            self._ev(c, "MODEL_CALL_START", replyId=c.reply_id)
        return c

    # ---- blocks ---------------------------------------------------------------------------------

    def _open(self, c: _Choice, slot: str, kind: str) -> str:
        block = c.blocks.get(slot)
        if block is not None:
            if block[0] == kind:
                return block[1]
            self.end_block(slot, c)
        self._blocks += 1
        block_id = f"{kind}-{self._blocks}"
        c.blocks[slot] = (kind, block_id)
        if kind == "thinking":
            extra: dict[str, Any] = {"provider": self.provider}
            if self.model is not None:
                extra["model"] = self.model
            self._ev(c, "THINKING_BLOCK_START", replyId=c.reply_id, blockId=block_id, **extra)
        else:
            self._ev(c, "TEXT_BLOCK_START", replyId=c.reply_id, blockId=block_id)
        return block_id

    def text(self, delta: str, *, choice: int = 0, slot: str = "text") -> None:
        """A text fragment for the text block in ``slot`` (opened on first use)."""
        if not delta:
            return  # an empty fragment opens no block (no empty text blocks)
        if type(delta) is not str:
            self._not_text("a text fragment", delta)
            return
        c = self._choices.get(choice)
        if c is None or not c.started:
            c = self.choice(choice)
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "text" else self._open(c, slot, "text")
        e = {
            "type": "TEXT_BLOCK_DELTA",
            "id": self._new_id(),
            "createdAt": self._stamp,
            "replyId": c.reply_id,
            "blockId": block_id,
            "delta": delta,
        }
        if c.source is not None:
            e["source"] = c.source
        self.events.append(e)

    def thinking(
        self,
        delta: str,
        *,
        choice: int = 0,
        slot: str = "thinking",
        signature: str | None = None,
        redacted: str | None = None,
    ) -> None:
        """A reasoning fragment (and/or a signature or redacted-data fragment) for the thinking block in ``slot``."""
        if not (delta or signature or redacted):
            return
        if not (_text_or_none(delta) and _text_or_none(signature) and _text_or_none(redacted)):
            self._not_text("a thinking fragment, signature or redacted data", delta, signature, redacted)
            return
        c = self.choice(choice)
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "thinking" else self._open(c, slot, "thinking")
        e = self._ev(c, "THINKING_BLOCK_DELTA", replyId=c.reply_id, blockId=block_id, delta=delta)
        if signature:
            e["signature"] = signature
        if redacted:
            e["redactedData"] = redacted

    def signature(self, value: str, *, choice: int = 0, slot: str = "thinking") -> None:
        """The *whole* signature of the thinking block in ``slot`` (opened on first use), where the provider
        sends it as one value that a later one replaces (Anthropic's ``signature_delta``): held, the last
        one winning, and emitted once as a signature-only delta when the block ends. (``thinking(...,
        signature=)`` is for signature *fragments*, which the reducer concatenates.)"""
        if not value:
            return
        if type(value) is not str:
            self._not_text("a signature", value)
            return
        c = self.choice(choice)
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "thinking" else self._open(c, slot, "thinking")
        self._whole_signatures[block_id] = value

    def media(self, block: dict[str, Any], *, choice: int = 0) -> None:
        """A whole media block of the reply (an image the model made, say: a ``data`` block, see
        ``schemas/content-block.schema.json``), in its place among the blocks: the open text and thinking
        blocks end first, then DATA_BLOCK_START carrying the block and its DATA_BLOCK_END."""
        c = self.choice(choice)
        for slot in list(c.blocks):
            self.end_block(slot, c)
        self._blocks += 1
        block_id = f"data-{self._blocks}"
        self._ev(c, "DATA_BLOCK_START", replyId=c.reply_id, blockId=block_id, block=block)
        self._ev(c, "DATA_BLOCK_END", replyId=c.reply_id, blockId=block_id)

    def opened(self) -> bool:
        """Whether a choice has started (its AGENT_START and MODEL_CALL_START emitted)."""
        return bool(self._choices)

    def end_block(self, slot: str, c: _Choice | int = 0) -> None:
        if isinstance(c, int):
            c = self._choices.get(c)  # type: ignore[assignment]
            if c is None:
                return
        assert isinstance(c, _Choice)
        block = c.blocks.pop(slot, None)
        if block is None:
            return
        kind, block_id = block
        signature = self._whole_signatures.pop(block_id, None)
        if signature is not None:
            self._ev(c, "THINKING_BLOCK_DELTA", replyId=c.reply_id, blockId=block_id, delta="", signature=signature)
        self._ev(
            c, "THINKING_BLOCK_END" if kind == "thinking" else "TEXT_BLOCK_END", replyId=c.reply_id, blockId=block_id
        )

    # ---- tool calls -----------------------------------------------------------------------------

    def tool_call(
        self,
        key: Any,
        *,
        choice: int = 0,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
        thought_signature: str | None = None,
    ) -> None:
        """One fragment of a tool call addressed by ``key`` (the provider's index or block slot).

        A fragment with an id other than the open call's at that key starts a new call (providers that
        reuse an index for parallel calls); a name is set once, never appended. Calls start in the order
        they appeared, each once it has its name (and, where :attr:`ids_expected`, its id; the id then is
        the provider's, or one derived when the provider gave none): a call whose name comes after its id,
        or its id after its name, or either after a later call's first fragment, keeps its name, its id and
        its place. Fragments that come before are held until it starts, or until the call (or the stream)
        ends."""
        if not (
            _text_or_none(call_id)
            and _text_or_none(name)
            and _text_or_none(arguments)
            and _text_or_none(thought_signature)
        ):
            self._not_text(
                "a tool call's id, name, arguments or thought signature", call_id, name, arguments, thought_signature
            )
            return
        c = self.choice(choice)
        call = c.calls.get(key)
        if call_id and call is not None and call.id != call_id and not call.id.startswith("\x00"):
            self._end_call(c, call)
            call = None
        if call is None or not call.open:
            if call_id and call_id in c.calls_by_id and c.calls_by_id[call_id].open:
                call = c.calls_by_id[call_id]  # the same call under another key
            else:
                call = _Call(call_id or f"\x00{key}", name or None)
                c.calls[key] = call
                c.waiting.append(call)
                self._pending[id(call)] = []
        elif call.id.startswith("\x00") and call_id:
            call.id = call_id  # an id that arrives late
        if name and not call.name:
            call.name = name
        if thought_signature:
            self._signatures[id(call)] = thought_signature
        if not call.started and self._ready(call):
            self._start_ready(c)
        if arguments:
            if call.started:
                self._ev(c, "TOOL_CALL_DELTA", replyId=c.reply_id, toolCallId=call.id, delta=arguments)
                call.args = True
            else:
                self._pending[id(call)].append(arguments)

    def _ready(self, call: _Call) -> bool:
        """A waiting call can start: it has its name (and its id, see :attr:`ids_expected`)."""
        return bool(call.name) and not (self.ids_expected and call.id.startswith("\x00"))

    def _start_ready(self, c: _Choice) -> None:
        """Start the waiting calls that are ready (:meth:`_ready`), in order, up to the first that is not."""
        while c.waiting and self._ready(c.waiting[0]):
            self._start_call(c, c.waiting.pop(0))

    def _start_call(self, c: _Choice, call: _Call) -> None:
        if call.id.startswith("\x00"):
            # No id from the provider (Gemini, some compatible servers): one derived from the response id
            # and the call's place, so a reply parsed twice, streamed or whole, gets the same ids.
            c.minted += 1
            seed = f"{self.response_id}/{c.source}/{c.minted}".encode()
            call.id = f"call_{hashlib.blake2b(seed, digest_size=12).hexdigest()}"
        for slot in [s for s, b in c.blocks.items() if b[0] == "thinking"]:
            self.end_block(slot, c)  # reasoning is over once the model calls a tool
        call.started = True
        c.calls_by_id[call.id] = call
        fields: dict[str, Any] = {"replyId": c.reply_id, "toolCallId": call.id, "toolCallName": call.name or ""}
        sig = self._signatures.pop(id(call), None)
        if sig:
            fields["thoughtSignature"] = sig
        self._ev(c, "TOOL_CALL_START", **fields)
        pending = self._pending.pop(id(call), None)
        if pending:
            self._ev(c, "TOOL_CALL_DELTA", replyId=c.reply_id, toolCallId=call.id, delta="".join(pending))
            call.args = True

    def end_tool_call(self, key: Any, *, choice: int = 0, default_arguments: str | None = None) -> None:
        """The call at ``key`` is complete. ``default_arguments`` is what the provider gave as the call's
        arguments before any delta (Anthropic's ``input`` on content_block_start), emitted when no delta came."""
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        if c is None or call is None or not call.open:
            return
        if default_arguments is not None and not call.args and not self._pending.get(id(call)):
            self.tool_call(key, choice=choice, arguments=default_arguments)
        self._end_call(c, call)

    def _end_call(self, c: _Choice, call: _Call) -> None:
        if not call.started:  # it starts as it is, and so do the calls before it
            while c.waiting:
                first = c.waiting.pop(0)
                self._start_call(c, first)
                if first is call:
                    break
            self._start_ready(c)
        if call.open:
            call.open = False
            self._ev(c, "TOOL_CALL_END", replyId=c.reply_id, toolCallId=call.id, toolCallName=call.name or "")

    def open_call(self, key: Any, *, choice: int = 0) -> bool:
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        return call is not None and call.open

    # ---- end of a response ----------------------------------------------------------------------

    def set_usage(self, usage: dict[str, Any] | None) -> None:
        """The response's usage so far (providers send cumulative usage: the last one wins)."""
        if usage:
            self.usage = usage
            self._later = None

    def usage_later(self, convert: Callable[[Any], dict[str, Any] | None], raw: Any, input_key: str) -> None:
        """The provider's cumulative usage ``raw`` of this chunk, converted by ``convert`` only if it is
        still the last when the reply ends (Gemini and DashScope send it with every chunk: converting each
        would cost more than the chunk's text). That is when its input count (``raw[input_key]``) is a
        token count, so that ``convert(raw)`` cannot be empty; otherwise it is converted now, and kept only
        if it is not empty, as :meth:`set_usage` keeps it. Either way the last non-empty usage wins."""
        n = raw.get(input_key) if isinstance(raw, dict) else None
        if type(n) is int and n >= 0:
            self._later = (convert, raw)
        else:
            self.set_usage(convert(raw))

    def _settle_usage(self) -> None:
        later = self._later
        if later is not None:
            self._later = None
            self.set_usage(later[0](later[1]))

    def finish(self, choice: int, finish_reason: Any, *, tool_calls: bool = False, normal: bool = False) -> None:
        """The provider's finish reason for a choice. ``tool_calls``: the reason says the model called
        tools; ``normal``: a plain stop, which means TOOL_CALLS too when the choice holds tool calls
        (Gemini has no tool finish reason; some compatible providers say ``stop``). Anything else
        (length, content filter, refusal, ...) keeps MODEL_STOP."""
        c = self.choice(choice)
        c.finish = finish_reason if isinstance(finish_reason, str) else "stop"
        c.normal = normal
        if tool_calls and c.reason is None:
            c.reason = "TOOL_CALLS"

    def finished(self) -> bool:
        """True when every choice seen has its finish reason."""
        return bool(self._choices) and all(c.finish is not None or c.error for c in self._choices.values())

    def error(self, message: str, *, kind: str = "provider_error", choice: int | None = None, **info: Any) -> None:
        """A provider error in the middle of the stream (or a cut stream): every open choice ends interrupted,
        keeping what it received. ``info`` (e.g. ``status``, ``code``) goes into the error event."""
        value = {"type": kind, "message": message, "provider": self.provider}
        value.update((k, v) for k, v in info.items() if v is not None)
        self.errors.append(value)
        targets = [choice] if choice is not None else (list(self._choices) or [0])
        for index in targets:
            c = self.choice(index)
            if c.done or c.error is not None:
                continue
            c.error = value
            self._ev(c, "CUSTOM", name=ERROR_EVENT, value=value)
            c.reason = "INTERRUPTED"
            c.finish = None

    def _not_text(self, what: str, *values: Any) -> None:
        bad = next((v for v in values if v and type(v) is not str), None)
        self.problem("type", f"{what} is not a string (a JSON {json_type(bad)}): skipped")

    def not_kept(self, key: str, message: str, choice: int = 0) -> None:
        """Provider data the message has no place for (citations, log probabilities, grounding): said once
        per ``key`` and reply, in :attr:`not_kept_notes` and as a CUSTOM ``agentmsg.not-kept`` event, not
        dropped silently. Unlike a problem, the input was fine: nothing about the reply is wrong."""
        if key in self._not_kept_keys:
            return
        self._not_kept_keys.add(key)
        self.not_kept_notes.append(Problem("", "not-kept", message))
        c = self.choice(choice)
        self._ev(c, "CUSTOM", name=NOT_KEPT_EVENT, value={"rule": "not-kept", "message": message})

    def problem(self, rule: str, message: str) -> None:
        """A payload that could not be read: recorded, reported as a CUSTOM event, and skipped."""
        self.problems.append(Problem("", rule, message))
        c = self.choice(0)
        self._ev(c, "CUSTOM", name=PROBLEM_EVENT, value={"rule": rule, "message": message})

    def close(self) -> None:
        """End of the response: close every open block and call, then each choice's terminal events. A
        choice without a finish reason (the stream stopped early) ends INTERRUPTED with an error event."""
        if self.closed:
            return
        self.closed = True
        if not self._choices:
            self.choice(0)
        for index in sorted(self._choices):
            c = self._choices[index]
            if c.done:
                continue
            if c.finish is None and c.error is None:
                self.error(
                    "the stream ended before the provider finished the reply", kind="incomplete_stream", choice=index
                )
            self._close_choice(c, usage=index == 0)

    def _close_choice(self, c: _Choice, usage: bool) -> None:
        for slot in list(c.blocks):
            self.end_block(slot, c)
        for call in list(c.calls.values()):
            if call.open:
                self._end_call(c, call)
        if c.reason is None and c.normal and c.calls_by_id:
            c.reason = "TOOL_CALLS"
        if c.reason is not None:
            reason = c.error["message"] if c.error is not None else (c.finish or "")
            self._ev(c, "REQUEST_STOP", reason=str(reason), generateReason=c.reason)
        end: dict[str, Any] = {"replyId": c.reply_id}
        if usage:
            u = self.usage_event()
            if u is not None:
                end["usage"] = u
        meta = {}
        if c.finish is not None:
            meta["finishReason"] = c.finish
        if self.model is not None:
            meta["model"] = self.model
        if meta:
            end["metadata"] = meta
        self._ev(c, "MODEL_CALL_END", **end)
        if self.agent_events:
            self._ev(c, "AGENT_END", replyId=c.reply_id)
        c.done = True

    def usage_event(self) -> dict[str, Any] | None:
        self._settle_usage()
        usage = self.usage
        if usage is None and self.started_at is None:
            return None
        out = dict(usage or {})
        if self.started_at is not None:
            out["time"] = round(max(0.0, time.monotonic() - self.started_at), 6)
        return out


# ---- JSON text from Gemini's partial arguments -------------------------------------------------------


def _path_parts(path: str) -> list[str | int]:
    """``$.a.b[0]['c d']`` -> ["a", "b", 0, "c d"] (JSONPath as Gemini's partialArgs use it)."""
    out: list[str | int] = []
    i = 1 if path.startswith("$") else 0
    n = len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            j = i + 1
            while j < n and path[j] not in ".[":
                j += 1
            out.append(path[i + 1 : j])
            i = j
        elif ch == "[":
            j = path.find("]", i)
            if j < 0:
                out.append(path[i + 1 :])
                break
            inner = path[i + 1 : j]
            if inner[:1] in ("'", '"') and inner[-1:] == inner[:1] and len(inner) >= 2:
                out.append(inner[1:-1])
            elif inner.isdigit():
                out.append(int(inner))
            else:
                out.append(inner)
            i = j + 1
        else:
            j = i
            while j < n and path[j] not in ".[":
                j += 1
            out.append(path[i:j])
            i = j
    return out


class json_fragment_writer:
    """Writes a JSON object as text, incrementally, from (path, value, more) updates: Gemini's streamed
    function-call arguments (``partialArgs``). ``add`` returns the text to append; ``close`` the rest."""

    __slots__ = ("_open_string", "_stack", "_started")

    def __init__(self) -> None:
        self._stack: list[tuple[list[str | int], str, bool]] = []  # (path, "{"/"[", has items)
        self._open_string: list[str | int] | None = None
        self._started = False

    def add(self, path: str, value: Any, *, is_string: bool, more: bool) -> str:
        parts = _path_parts(path) or [path]
        out: list[str] = []
        if not self._started:
            self._started = True
            self._stack.append(([], "{", False))
            out.append("{")
        if self._open_string is not None:
            if self._open_string == parts and is_string:
                out.append(orjson.dumps(value).decode()[1:-1] if value else "")
                if not more:
                    out.append('"')
                    self._open_string = None
                return "".join(out)
            out.append('"')
            self._open_string = None
        parent, last = parts[:-1], parts[-1]
        # close containers that are not ancestors of this value
        while len(self._stack) > 1 and self._stack[-1][0] != parent[: len(self._stack[-1][0])]:
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        while len(self._stack) > 1 and len(self._stack[-1][0]) > len(parent):
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        # open the containers down to the parent
        depth = len(self._stack[-1][0])
        for level in range(depth, len(parent)):
            key = parent[level]
            out.append(self._item(key))
            child_kind = "[" if isinstance(parent[level + 1] if level + 1 < len(parent) else last, int) else "{"
            out.append(child_kind)
            self._stack.append((parent[: level + 1], child_kind, False))
        out.append(self._item(last))
        if is_string:
            out.append('"' + (orjson.dumps(value).decode()[1:-1] if value else ""))
            if more:
                self._open_string = parts
            else:
                out.append('"')
        else:
            out.append(orjson.dumps(value).decode())
        return "".join(out)

    def _item(self, key: str | int) -> str:
        path, kind, has = self._stack[-1]
        self._stack[-1] = (path, kind, True)
        sep = "," if has else ""
        if kind == "[":
            return sep
        return sep + orjson.dumps(str(key)).decode() + ":"

    def close(self) -> str:
        if not self._started:
            return ""
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        return "".join(out)


_ESCAPE = re.compile(r"\\\\|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # an escaped backslash, or a surrogate escape


def _without_lone_surrogates(data: str) -> str | None:
    """``data`` with each lone surrogate escape (``\\ud83d`` not followed by a low one, or a low one alone)
    written as ``\\ufffd``, or None when it has none. JSON's grammar allows them; orjson (and the message,
    which must be written back) does not. One pass over the escapes."""
    if "\\u" not in data:
        return None
    out: list[str] = []
    last = 0
    pending: re.Match[str] | None = None  # a high surrogate escape waiting for its low half
    changed = False
    for m in _ESCAPE.finditer(data):
        token = m.group()
        if token == "\\\\":
            continue
        high = token[2].lower() == "d" and token[3].lower() in "89ab"
        if pending is not None:
            if not high and m.start() == pending.end():
                pending = None  # a whole pair
                continue
            out.append(data[last : pending.start()] + "\\ufffd")
            last, changed = pending.end(), True
            pending = None
        if high:
            pending = m
        else:
            out.append(data[last : m.start()] + "\\ufffd")
            last, changed = m.end(), True
    if pending is not None:
        out.append(data[last : pending.start()] + "\\ufffd")
        last, changed = pending.end(), True
    if not changed:
        return None
    out.append(data[last:])
    return "".join(out)


def loads(data: str | bytes) -> Any:
    """orjson.loads, for the parsers (one import site)."""
    return orjson.loads(data)


# ---- the incremental parser every provider's StreamParser extends ----------------------------------


class BaseStreamParser:
    """Raw body bytes in, AgentEvent dicts out: ``feed(chunk) -> events``, ``close() -> events``.

    Framing (SSE or JSON lines), JSON decoding, the ``[DONE]`` sentinel and unreadable payloads are
    handled here; a provider subclass implements :meth:`payload` (one decoded JSON payload and its SSE
    event name) by driving :attr:`builder`. Keyword arguments go to :class:`StreamBuilder`."""

    provider: ClassVar[str] = "unknown"

    def __init__(self, **options: Any) -> None:
        self.builder = StreamBuilder(options.pop("provider", self.provider), **options)
        self._framer = Framer()
        self.done = False  # the provider's end-of-stream signal was seen
        self._after_end = False  # a payload after the end was said (see _past_end)
        self._joined_said = False  # SSE events joined for want of blank lines were said (see _lines_of)

    @property
    def problems(self) -> list[Problem]:
        return self.builder.problems

    def feed(self, chunk: bytes | str) -> list[dict[str, Any]]:
        """Parse the next piece of the body; the events it completes."""
        b = self.builder
        if b.closed:
            if not self._after_end:  # read on only to say whether the body goes on after its end
                for payload in self._framer.feed(chunk):
                    self._past_end(payload.event, payload.data)
            return b.drain()
        b.tick()
        framer = self._framer
        for payload in framer.feed(chunk):
            self._data(payload.event, payload.data, payload.problem)
        if framer.notes and b.opened():
            self._say_notes()
        return b.drain()

    def _say_notes(self) -> None:
        """What the framer left out that is not the reply's (an HTTP response head), said as not kept once the
        reply is open (said before its first payload, it would open the reply before the payload names it)."""
        for note in self._framer.notes:
            self.builder.not_kept(f"framing/{note}", note)
        self._framer.notes.clear()

    def _past_end(self, event: str, data: str | bytes) -> None:
        """A payload after the provider's end-of-stream signal (``[DONE]``, Anthropic's ``message_stop``): the
        reply is over, so it is skipped, and said once (problem ``order``), not dropped silently. Another
        ``[DONE]``, a ping or an empty payload is no news."""
        if self._after_end or event == "ping":
            return
        text = data.strip() if isinstance(data, str) else data.strip().decode("utf-8", "replace")
        if not text or text.startswith("[DONE]"):
            return
        self._after_end = True
        self.builder.problem(
            "order", f"a payload after the end of the reply: skipped, as is any after it: {text[:80]!r}"
        )

    def _data(self, event: str, data: str | bytes, problem: Problem | None) -> None:
        if self.done:
            self._past_end(event, data)
            return
        if type(data) is bytes:  # a simple event's data from the C scanner: UTF-8, checked; orjson reads it as is
            if problem is None and data[:1] == b"{":
                try:
                    obj = orjson.loads(data)
                except orjson.JSONDecodeError:
                    pass  # read again below, as text, to say why
                else:
                    if type(obj) is dict:
                        self._dispatch(event, obj)
                        return
            data = data.decode("utf-8")
        assert isinstance(data, str)  # (for the type checker)
        if problem is not None and problem is not TRAILING:
            self.builder.problem(problem.rule, f"{problem.message}: {'skipped' if not data else 'payload kept'}")
            if not data:
                return
        if data.startswith("[DONE]"):  # as the OpenAI SDK reads it (a trailing space, say)
            self.done = True
            self.builder.close()
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            fixed = _without_lone_surrogates(data)
            if fixed is not None:
                try:
                    obj = orjson.loads(fixed)
                except orjson.JSONDecodeError:
                    pass
                else:  # a surrogate pair split across two payloads (a server cutting UTF-16): all else kept
                    self.builder.problem(
                        "surrogate", "a lone UTF-16 surrogate escape (half of a character) replaced by U+FFFD"
                    )
                    self._object(event, obj, data)
                    return
            if "\n" in data and self._lines_of(event, data):
                return
            if event == "error":  # an error event whose data is plain text ("Internal Server Error")
                self.builder.error(data[:1000] or "error event without data")
            elif problem is TRAILING:
                self.builder.problem("incomplete", f"{problem.message}, and it is not JSON: skipped: {data[:80]!r}")
            else:
                self.builder.problem("json", f"a payload is not JSON ({exc}): skipped: {data[:80]!r}")
            return
        self._object(event, obj, data)

    def _lines_of(self, event: str, data: str) -> bool:
        """SSE saved without the blank lines between events (``data: {…}`` lines one after another): the spec
        joins them into one event's data, which is then no JSON. When each of its lines is a JSON object (or
        ``[DONE]``), they are the payloads: each read as a payload of its own (True), and said once (problem
        ``sse``). The SDKs' decoders, which join them too, lose them all."""
        lines = [line for line in data.split("\n") if line.strip()]
        try:
            payloads = len(lines) > 1 and all(
                line.startswith("[DONE]") or type(orjson.loads(line)) is dict for line in lines
            )
        except orjson.JSONDecodeError:
            return False
        if not payloads:
            return False
        for k, line in enumerate(lines):
            if k == 1 and not self._joined_said:  # said once the first payload has opened (and named) the reply
                self._joined_said = True
                self.builder.problem(
                    "sse",
                    f"an SSE event's data holds {len(lines)} JSON payloads on lines of their own (no blank line"
                    " between events?): read one by one",
                )
            self._data(event, line, None)
        return True

    def _dispatch(self, event: str, obj: dict[str, Any]) -> None:
        try:
            self.payload(event, obj)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            self.builder.problem("type", f"an unexpected payload shape ({type(exc).__name__}: {exc}): skipped")

    def _object(self, event: str, obj: Any, data: str) -> None:
        if not isinstance(obj, dict):
            self.builder.problem("type", f"a payload is not a JSON object: skipped: {data[:80]!r}")
            return
        self._dispatch(event, obj)

    def payload(self, event: str, obj: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def end_payloads(self) -> None:
        """No payload comes after this one (the body or the transport ended): a subclass emits what it holds."""

    def error(self, message: str, **info: Any) -> list[dict[str, Any]]:
        """The transport failed (disconnect, timeout, cancellation): end every open choice as interrupted,
        keeping all that was received. Returns the closing events."""
        b = self.builder
        if not b.closed:
            b.tick()
            for payload in self._framer.close():
                self._data(payload.event, payload.data, payload.problem)
            if self._framer.notes:
                self._say_notes()
            self.end_payloads()
            b.error(message, **info)
            b.close()
        return b.drain()

    def close(self) -> list[dict[str, Any]]:
        """End of the body: the closing events (a reply the provider did not finish ends interrupted)."""
        b = self.builder
        if b.closed and self.done and not self._after_end:  # a last payload after the end, without its blank line
            for payload in self._framer.close():
                self._past_end(payload.event, payload.data)
        if not b.closed:
            b.tick()
            for payload in self._framer.close():
                self._data(payload.event, payload.data, payload.problem)
            if self._framer.notes:
                self._say_notes()
            self.end_payloads()
            b.close()
        if self._framer.notes:  # (a body of nothing but an HTTP head and the end signal)
            self._say_notes()
        return b.drain()


# ---- non-streaming responses: one reader for every provider --------------------------------------


def read_response(
    body: bytes | str | Mapping[str, Any] | list[Any],
    what: str,
    events: Callable[[Any], list[dict[str, Any]]],
    *,
    arrays: bool = False,
) -> list[dict[str, Any]]:
    """The AgentEvents ``events(obj)`` makes of a response body (text is read under :data:`agentmsg.limits`;
    ``arrays``: a JSON array of responses is accepted too). Whatever is not such a response raises
    :class:`ValidationError`: text that is not JSON (rule ``json``, ...), a body that is not an object
    (``type``), or a shape the provider's reader cannot follow (``shape``), never a bare TypeError."""
    obj = json_loads(body) if isinstance(body, (bytes, bytearray, memoryview, str)) else body
    if not (isinstance(obj, Mapping) or (arrays and isinstance(obj, list))):
        raise ValidationError.single("", "type", f"{what} is a JSON object, not a JSON {json_type(obj)}")
    try:
        return events(obj)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise ValidationError.single(
            "", "shape", f"{what} has an unexpected shape ({type(exc).__name__}: {exc})"
        ) from None


def response_message(events: list[dict[str, Any]], choice: int, what: str) -> Msg:
    """The message of choice ``choice`` among a response's events; :class:`ValidationError` (rule
    ``choice``) when the response has no such choice."""
    msgs = reduce_events(events, source=None if choice == 0 else f"choice/{choice}", trusted=True)
    if not msgs:
        raise ValidationError.single("", "choice", f"{what} has no choice {choice}")
    return msgs[0]


def run_parser(parser: BaseStreamParser, chunks: Iterable[bytes | str] | bytes | str) -> Iterator[dict[str, Any]]:
    """Every event of a body given whole or as chunks."""
    for chunk in as_chunks(chunks):
        yield from parser.feed(chunk)
    yield from parser.close()


def _text_or_none(value: Any) -> bool:
    """A string field of a payload that may be absent (None, or empty)."""
    return not value or type(value) is str


_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")  # the source schema's pattern for base64 data


def base64_source(media_type: Any, data: Any) -> dict[str, Any] | None:
    """A base64 source (``schemas/source.schema.json``) for media a reply carries inline, or None when
    ``data`` is not standard base64 text (a MIME type missing is ``application/octet-stream``)."""
    if not isinstance(data, str) or not _BASE64.fullmatch(data):
        return None
    mime = media_type if isinstance(media_type, str) and media_type else "application/octet-stream"
    return {"type": "base64", "media_type": mime, "data": data}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one (payload fields of unexpected types)."""
    return value if isinstance(value, list) else []


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (payload fields of unexpected types)."""
    return value if isinstance(value, dict) else {}


def safe_int(value: Any) -> int | None:
    """A token count as the usage schema wants it (a non-negative int), or None; counts saturate at Java's
    long maximum, as the reducer's sums do."""
    if type(value) is int and value >= 0:
        return min(value, _LONG_MAX)
    if type(value) is float and value >= 0 and value.is_integer():
        return min(int(value), _LONG_MAX)
    return None


_LONG_MAX = 2**63 - 1


def usage_dict(input_tokens: Any, output_tokens: Any, cached: Any = None, total: Any = None) -> dict[str, Any] | None:
    """A ChatUsage dict from provider counts (only the counts given; totalTokens = input + output)."""
    out: dict[str, Any] = {}
    i, o, c = safe_int(input_tokens), safe_int(output_tokens), safe_int(cached)  # sums of counts, too
    if i is not None:
        out["inputTokens"] = i
    if o is not None:
        out["outputTokens"] = o
    if c is not None:
        out["cachedTokens"] = c
    t = safe_int(total)
    if i is not None and o is not None:
        out["totalTokens"] = min(i + o, _LONG_MAX)
    elif t is not None:
        out["totalTokens"] = t
    return out or None
