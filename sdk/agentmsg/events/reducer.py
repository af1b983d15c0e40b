"""Fold an AgentScope event stream back into messages: one assistant Msg per agent reply.

The reducer works on parsed events (dicts, as JSON gives them, or the generated event classes) and is
incremental: :meth:`Reducer.feed` takes one event, :meth:`Reducer.snapshot` returns a consistent
partial message at any moment, :meth:`Reducer.finish` closes the stream. :func:`reduce_events` is
the one-shot form.

Rules (``docs/events.md`` has the full list):

* A reply runs from AGENT_START to AGENT_END; events outside one open an implicit reply.
  Forwarded subagent events (``source`` set) are skipped unless the reducer is created for that source.
* Blocks appear in the order they started. Deltas are routed by ``blockId`` (text, thinking, data)
  and ``toolCallId`` (tool calls and results), so interleaved parallel calls never mix. A block id may
  be reopened after its END (AgentScope Java reuses ``text``/``thinking``): that starts a new block.
  A tool call id that comes back after its END within the same model call (``replyId``) continues its
  call (Java ends all open calls whenever another call's chunk arrives); Java's ``__`` placeholder
  names open a call without a START.
  Java's fresh replyId per model call or acting phase is normal and does not split the message.
* Tool-call arguments are concatenated and parsed at TOOL_CALL_END. Text that is not a JSON object is
  kept raw in ``content``, with ``input = {}`` and the parse error in tool_use metadata ``argumentsError``.
* Tool results (TOOL_RESULT_*) become tool_result blocks of the same message: text deltas form text
  blocks, data deltas add whole blocks, TOOL_RESULT_END gives state and metadata.
* Usage is summed over the reply's MODEL_CALL_END events. EXCEED_MAX_ITERS, REQUEST_STOP, HITL
  events and interruption set the generate reason; HITL events are kept in metadata ``agentmsg_hitl``.
* AGENT_RESULT supplies id, name, timestamp and metadata the stream does not (stream-derived metadata
  wins); without it the message id is the AGENT_START replyId and the timestamp its createdAt.
* Duplicate events (an id seen in the last ``dedupe_window`` events) are ignored.
* A stream that ends inside a reply keeps everything received: open blocks are closed, open tool
  results get state ``interrupted`` and the message's generate reason is ``INTERRUPTED``.
* Bad input (unknown type, missing keys, a delta for a block never started, invalid base64, END before
  START): with ``strict=True`` a :class:`~agentmsg.ValidationError` naming the event and the rule is
  raised and the state is left as it was; otherwise the documented tolerant rule applies and the
  problem is recorded in :attr:`Reducer.problems`. Nothing already received is lost either way.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from ..errors import Problem, ValidationError
from ..message import AssistantMessage, Msg

__all__ = ["Reducer", "reduce_events"]

_JOIN_EVERY = 512  # compact a block's fragments once this many are pending


class _Text:
    """A text accumulator: fragments are joined in groups so memory stays close to the text size
    (a Python str per fragment would cost ~50 bytes each) without re-copying what was joined.
    ``parts`` is a stable list: hot loops append to it and call :meth:`flush` every ``_JOIN_EVERY``."""

    __slots__ = ("chunks", "parts")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.chunks: list[str] = []

    def add(self, s: str) -> None:
        parts = self.parts
        parts.append(s)
        if len(parts) >= _JOIN_EVERY:
            self.flush()

    def flush(self) -> None:
        self.chunks.append("".join(self.parts))
        self.parts.clear()

    def value(self) -> str:
        if self.parts:
            self.flush()
        chunks = self.chunks
        if len(chunks) > 1:
            self.chunks = chunks = ["".join(chunks)]
        return chunks[0] if chunks else ""


class _Block:
    __slots__ = (
        "block",
        "extra",
        "had_delta",
        "kind",
        "meta",
        "name",
        "open",
        "parts",
        "redacted",
        "signature",
        "text",
    )

    def __init__(self, kind: str) -> None:
        self.kind = kind  # text | thinking | data | whole | tool_use | tool_result | hint
        self.had_delta = False
        self.text = _Text()
        self.parts = self.text.parts  # the same list: hot loops append here
        self.open = True
        self.meta: Any = None
        self.extra: dict[str, Any] = {}
        self.block: Any = None
        self.name: str | None = None
        self.signature: _Text | None = None
        self.redacted: _Text | None = None


class _ToolResult:
    __slots__ = ("id", "meta", "name", "open", "output", "state", "text")

    def __init__(self, call_id: str, name: str | None) -> None:
        self.id = call_id
        self.name = name
        self.output: list[Any] = []  # dicts of finished output blocks
        self.text: _Text | None = None  # the text block being streamed
        self.open = True
        self.state = "running"
        self.meta: dict[str, Any] = {}

    def flush_text(self) -> None:
        if self.text is not None:
            self.output.append({"type": "text", "text": self.text.value()})
            self.text = None

    def output_dicts(self) -> list[Any]:
        out = list(self.output)
        if self.text is not None:
            out.append({"type": "text", "text": self.text.value()})
        return out


class _Reply:
    __slots__ = (
        "blocks",
        "by_block",
        "by_call",
        "by_result",
        "explicit",
        "hitl",
        "meta",
        "model_open",
        "msg_id",
        "name",
        "reason",
        "result",
        "started",
        "timestamp",
        "usage",
    )

    def __init__(self, explicit: bool) -> None:
        self.explicit = explicit  # opened by AGENT_START
        self.blocks: list[Any] = []  # _Block | _ToolResult in start order
        self.by_block: dict[str, _Block] = {}  # open text/thinking/data blocks by blockId
        self.by_call: dict[str, _Block] = {}  # tool calls by toolCallId (open or closed)
        self.by_result: dict[str, _ToolResult] = {}  # open tool results by toolCallId
        self.msg_id: str | None = None
        self.name: str | None = None
        self.timestamp: str | None = None
        self.usage: dict[str, Any] | None = None
        self.reason: str | None = None
        self.meta: dict[str, Any] = {}
        self.hitl: list[Any] = []
        self.result: Any = None  # AGENT_RESULT's message dict
        self.model_open = 0
        self.started = False


def _java_timestamp(created_at: Any) -> str | None:
    """`2026-11-22T10:34:38.563248392Z` -> `2026-11-22 10:34:38.563` (agentmsg's written form, UTC)."""
    if not isinstance(created_at, str) or len(created_at) < 19 or created_at[10] not in "Tt":
        return None
    if not created_at.endswith(("Z", "z")):
        return None
    date, clock = created_at[:10], created_at[11:19]
    frac = created_at[20:-1] if len(created_at) > 20 and created_at[19] == "." else ""
    return f"{date} {clock}.{(frac + '000')[:3]}"


_USAGE_KEYS = ("inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens")


class Reducer:
    """Incremental event → message reducer. See the module docstring for the rules.

    ``strict``: raise :class:`ValidationError` on bad input instead of applying the tolerant rule.
    ``source``: reduce the events of this forwarded subagent (``source`` field) instead of the top level.
    ``dedupe_window``: duplicates are detected among the last 4,096 to 8,192 event ids by default (a
    replay after reconnect repeats recent events); None remembers every id (memory grows with the stream).
    ``name``: default message name when no AGENT_START/AGENT_RESULT gives one.
    """

    def __init__(
        self,
        *,
        strict: bool = False,
        source: str | None = None,
        dedupe_window: int | None = 4096,
        name: str | None = None,
    ) -> None:
        self.strict = strict
        self.source = source
        self.default_name = name
        self.problems: list[Problem] = []
        self.count = 0  # events fed (including skipped ones)
        self._done: list[AssistantMessage] = []
        self._results: list[Any] = []  # per completed message: its AGENT_RESULT message dict, or None
        self._reply: _Reply | None = None
        self._window = dedupe_window
        self._seen: set[str] = set()
        self._seen_old: set[str] = set()

    # ---- feeding --------------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any] | Any) -> None:
        """Reduce one event (a parsed JSON object or a generated event instance)."""
        index = self.count
        self.count = index + 1
        if not isinstance(event, dict):
            event = self._as_dict(event, index)
            if event is None:
                return
        if self.strict:
            self._check(event, index)
        if event.get("source") != self.source:
            return
        event_id = event.get("id")
        if type(event_id) is str:
            seen = self._seen
            if event_id in seen or event_id in self._seen_old:
                return
            seen.add(event_id)
            self._rotate_seen()
        elif event_id is not None:
            self._problem(index, "/id", "type", f"event id {event_id!r} is not a string: not checked for duplicates")
        self._dispatch(event, index)

    def _dispatch(self, event: dict[str, Any], index: int) -> None:
        """Apply one event (already checked for source and duplicates)."""
        kind = event.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None  # (a list or dict type is unhashable)
        if handler is None:
            self._problem(index, "/type", "enum", f"unknown event type {event.get('type')!r}: event skipped")
            return
        try:
            handler(self, event, index)
        except (KeyError, TypeError, AttributeError) as exc:
            self._problem(
                index,
                "",
                "required" if isinstance(exc, KeyError) else "type",
                f"malformed {event.get('type')} event ({type(exc).__name__}: {exc}): event skipped",
            )

    def _check(self, event: dict[str, Any], index: int) -> None:
        from .._schemas import validate

        try:
            validate(event, "event")
        except ValidationError as exc:
            raise ValidationError(
                [Problem(f"/{index}{p.pointer}", p.rule, p.message, p.schema_location) for p in exc.problems], "event"
            ) from None

    def feed_many(self, events: Iterable[Mapping[str, Any] | Any]) -> None:
        """Reduce many events; the same as calling :meth:`feed` for each, only faster (the common
        delta events are handled inline)."""
        if self.strict or self.source is not None:
            for event in events:
                self.feed(event)
            return
        seen = self._seen
        seen_add = seen.add
        old = self._seen_old
        index = self.count
        join_every = _JOIN_EVERY
        for event in events:
            if type(event) is not dict or "source" in event or type(event.get("id", "")) is not str:
                self.count = index
                self.feed(event)
                index = self.count
                seen, old = self._seen, self._seen_old
                seen_add = seen.add
                continue
            event_id = event.get("id")
            if event_id is not None:
                if event_id in seen or event_id in old:
                    index += 1
                    continue
                seen_add(event_id)
            kind = event.get("type")
            reply = self._reply
            if reply is not None:
                # Fast paths for the events that make up almost all of a stream.
                if kind == "TEXT_BLOCK_DELTA" or (
                    kind == "THINKING_BLOCK_DELTA" and "signature" not in event and "redactedData" not in event
                ):
                    b = reply.by_block.get(event.get("blockId"))  # type: ignore[arg-type]
                    delta = event.get("delta")
                    if b is not None and type(delta) is str and b.kind == _DELTA_KIND[kind]:
                        parts = b.text.parts
                        parts.append(delta)
                        if len(parts) >= join_every:
                            b.text.flush()
                        index += 1
                        continue
                elif kind == "TOOL_CALL_DELTA":
                    b = reply.by_call.get(event.get("toolCallId"))  # type: ignore[arg-type]
                    delta = event.get("delta")
                    if b is not None and b.open and type(delta) is str:
                        parts = b.text.parts
                        parts.append(delta)
                        if len(parts) >= join_every:
                            b.text.flush()
                        b.had_delta = True
                        index += 1
                        continue
            self.count = index + 1
            self._dispatch(event, index)
            index += 1
        self.count = index
        self._rotate_seen()

    def _rotate_seen(self) -> None:
        if self._window is not None and len(self._seen) >= self._window:
            self._seen_old, self._seen = self._seen, set()

    def _as_dict(self, event: Any, index: int) -> dict[str, Any] | None:
        from .._converter import unstructure_hooks

        try:
            value = unstructure_hooks[event.__class__](event)
        except Exception:
            value = None
        if not isinstance(value, dict):
            self._problem(index, "", "type", f"not an event object: {type(event).__name__}")
            return None
        return value

    def _problem(self, index: int, pointer: str, rule: str, message: str) -> None:
        problem = Problem(f"/{index}{pointer}", rule, message)
        if self.strict:
            raise ValidationError([problem], "event")
        self.problems.append(problem)

    # ---- reading --------------------------------------------------------------------------------

    def messages(self) -> list[AssistantMessage]:
        """The messages of the replies completed so far."""
        return list(self._done)

    def snapshot(self) -> AssistantMessage | None:
        """The message being assembled, as it stands (None between replies). Doesn't change state."""
        reply = self._reply
        return None if reply is None else _build(reply, interrupted=False, default_name=self.default_name, close=False)

    def finish(self) -> list[AssistantMessage]:
        """End of stream: close an open reply (as interrupted if it was cut short) and return all messages."""
        reply = self._reply
        if reply is not None:
            cut = (
                reply.explicit
                or reply.model_open > 0
                or any((b.open if isinstance(b, (_Block, _ToolResult)) else False) for b in reply.blocks)
            )
            self._close(reply, interrupted=cut)
        return list(self._done)

    # ---- internals ------------------------------------------------------------------------------

    def _current(self) -> _Reply:
        reply = self._reply
        if reply is None:
            reply = self._reply = _Reply(explicit=False)
        return reply

    def _close(self, reply: _Reply, interrupted: bool) -> None:
        self._done.append(_build(reply, interrupted=interrupted, default_name=self.default_name, close=True))
        self._results.append(reply.result if isinstance(reply.result, dict) else None)
        self._reply = None

    def check_results(self) -> list[Problem]:
        """Whether each completed message covers its reply's AGENT_RESULT (replies without one are not
        checked); one :class:`Problem` (rule ``agent-result``, pointer ``/<message index>/content``) per
        disagreement.

        AGENT_RESULT is AgentScope Java's own rebuild of the reply's *last model call* (thinking, text,
        tool calls, each kind merged into one block), so it is not expected to equal the reduced message:
        a multi-step reply has earlier steps and tool results too, and blocks reopened within a call stay
        separate here. What must hold: its text and its thinking each occur in the concatenation of the
        message's text (thinking) blocks, and each of its tool calls is in the message with the same id,
        name and input. A failure means events were lost or a runtime rewrote the result."""
        problems: list[Problem] = []
        for index, (msg, result) in enumerate(zip(self._done, self._results, strict=True)):
            content = result.get("content") if result is not None else None
            if not isinstance(content, list):
                continue
            ours = msg.to_dict()["content"]  # not to_json: orjson caches a UTF-8 copy in non-ASCII strs
            pointer = f"/{index}/content"
            for kind in ("text", "thinking"):
                mine = "".join(b[kind] for b in ours if b["type"] == kind)
                for b in content:
                    if isinstance(b, dict) and b.get("type") == kind and str(b.get(kind)) not in mine:
                        problems.append(
                            Problem(
                                pointer,
                                "agent-result",
                                f"AGENT_RESULT's {kind} {b.get(kind)!r:.80} is not in the stream's",
                            )
                        )
            calls: dict[str, list[tuple[Any, Any]]] = {}
            for b in ours:
                if b["type"] == "tool_use":
                    calls.setdefault(b["id"], []).append((b["name"], b["input"]))
            for b in content:
                if not isinstance(b, dict) or b.get("type") != "tool_use":
                    continue
                mine_calls = calls.get(b.get("id"))  # type: ignore[arg-type]
                if mine_calls is None:
                    problems.append(
                        Problem(
                            pointer, "agent-result", f"AGENT_RESULT's tool call {b.get('id')!r} is not in the stream"
                        )
                    )
                elif (b.get("name"), b.get("input")) not in mine_calls:
                    name, args = mine_calls[-1]
                    problems.append(
                        Problem(
                            pointer,
                            "agent-result",
                            f"tool call {b.get('id')!r}: the stream gives {name!r} {args!r:.80},"
                            f" AGENT_RESULT {b.get('name')!r} {b.get('input')!r:.80}",
                        )
                    )
        return problems


# ---- handlers: (reducer, event, index) -> None ---------------------------------------------------------


def _agent_start(r: Reducer, e: dict[str, Any], i: int) -> None:
    if r._reply is not None:
        if r._reply.explicit:
            r._problem(i, "/type", "order", "AGENT_START inside an open reply: the open reply is closed as interrupted")
        r._close(r._reply, interrupted=r._reply.explicit)
    reply = r._reply = _Reply(explicit=True)
    reply.msg_id = e.get("replyId") or None
    reply.name = e.get("name")
    reply.timestamp = _java_timestamp(e.get("createdAt"))


def _agent_end(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._reply
    if reply is None:
        r._problem(i, "/type", "order", "AGENT_END without an open reply: ignored")
        return
    r._close(reply, interrupted=False)


def _agent_result(r: Reducer, e: dict[str, Any], i: int) -> None:
    result = e["result"]
    if not isinstance(result, dict):
        raise TypeError("result is not an object")
    r._current().result = result


def _model_start(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._current()
    reply.model_open += 1
    if reply.msg_id is None and not reply.explicit:
        reply.msg_id = e.get("replyId") or None  # an implicit reply is named after its first model call


def _model_end(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._current()
    if reply.model_open > 0:
        reply.model_open -= 1
    # A model call's tool calls end with it. Java sends no TOOL_CALL_END for a call it never STARTed
    # (placeholder-named fragments), so such a call would otherwise stay open into the next model call.
    for b in reply.by_call.values():
        if b.open:
            b.open = False
            b.extra.pop("implicit", None)
    usage = e.get("usage")
    if usage:
        total = reply.usage
        if total is None:
            reply.usage = {k: usage[k] for k in _USAGE_KEYS if usage.get(k) is not None}
        else:
            for k in _USAGE_KEYS:
                v = usage.get(k)
                if v is not None:
                    total[k] = total.get(k, 0) + v


def _block_start(kind: str) -> Callable[[Reducer, dict[str, Any], int], None]:
    def start(r: Reducer, e: dict[str, Any], i: int) -> None:
        reply = r._current()
        block_id = e["blockId"]
        if block_id in reply.by_block:
            r._problem(i, "/blockId", "order", f"{kind} block {block_id!r} started twice: the second START is ignored")
            return
        b = _Block(kind)
        if kind == "thinking":
            for key in ("provider", "model"):
                if e.get(key) is not None:
                    b.extra[key] = e[key]
        elif kind == "data":
            whole = e.get("block")
            if whole is not None:
                b.kind, b.block = "whole", whole
            else:
                b.extra["mediaType"] = e.get("mediaType") or "application/octet-stream"
                if e.get("name") is not None:
                    b.name = e["name"]
                b.extra["id"] = block_id
        reply.by_block[block_id] = b
        reply.blocks.append(b)

    return start


def _open_block(r: Reducer, e: dict[str, Any], i: int, kind: str) -> _Block | None:
    reply = r._current()
    block_id = e["blockId"]
    b = reply.by_block.get(block_id)
    if b is not None and (b.kind == kind or (kind == "data" and b.kind == "whole")):
        return b
    if b is None:
        r._problem(
            i,
            "/blockId",
            "order",
            f"{kind} delta for block {block_id!r} that was never started: the block is started here",
        )
    else:
        # The id belongs to an open block of another kind: that block keeps what it has and is closed,
        # the delta starts a block of its own kind under the id (never mixed into the other block).
        r._problem(
            i,
            "/blockId",
            "order",
            f"{kind} delta for block {block_id!r}, an open {b.kind} block: that block is closed, a {kind} block started",
        )
        b.open = False
        del reply.by_block[block_id]
    _block_start(kind)(r, e, i)
    return reply.by_block[block_id]


def _text_delta(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._reply
    b = reply.by_block.get(e["blockId"]) if reply is not None else None
    if b is None or b.kind != "text":
        b = _open_block(r, e, i, "text")
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    b.text.add(delta)  # type: ignore[union-attr]


def _thinking_delta(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._reply
    b = reply.by_block.get(e["blockId"]) if reply is not None else None
    if b is None or b.kind != "thinking":
        b = _open_block(r, e, i, "thinking")
        assert b is not None
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    if delta:
        b.text.add(delta)
    sig = e.get("signature")
    if sig is not None:
        if b.signature is None:
            b.signature = _Text()
        b.signature.add(sig)
    red = e.get("redactedData")
    if red is not None:
        if b.redacted is None:
            b.redacted = _Text()
        b.redacted.add(red)


def _data_delta(r: Reducer, e: dict[str, Any], i: int) -> None:
    b = _open_block(r, e, i, "data")
    assert b is not None
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    if b.kind == "whole":
        r._problem(i, "/delta", "order", "data delta for a block delivered whole: ignored")
        return
    if not _is_base64_fragment(delta):
        r._problem(i, "/delta", "pattern", "data delta is not base64: delta dropped")
        return
    b.text.add(delta)


def _is_base64_fragment(s: str) -> bool:
    try:
        base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _block_end(kind: str) -> Callable[[Reducer, dict[str, Any], int], None]:
    def end(r: Reducer, e: dict[str, Any], i: int) -> None:
        reply = r._current()
        block_id = e["blockId"]
        b = reply.by_block.get(block_id)
        if b is None:
            r._problem(i, "/blockId", "order", f"END for {kind} block {block_id!r} that is not open: ignored")
            return
        if "metadata" in e:
            b.meta = e["metadata"]
        b.open = False
        del reply.by_block[block_id]

    return end


def _placeholder(name: Any) -> bool:
    """AgentScope Java's placeholder tool names (``__fragment__``, ``__pending__``): a call whose first
    chunks carry one gets no TOOL_CALL_START (Java hides ``__`` names) but its deltas are emitted."""
    return isinstance(name, str) and name.startswith("__")


def _same_model_call(b: _Block, e: dict[str, Any]) -> bool:
    reply_id = b.extra.get("replyId")
    return reply_id is not None and reply_id == e.get("replyId")


def _adopt_name(b: _Block, name: Any) -> None:
    if isinstance(name, str) and name and (b.name is None or (_placeholder(b.name) and not _placeholder(name))):
        b.name = name


def _tool_call_start(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._current()
    call_id = e["toolCallId"]
    existing = reply.by_call.get(call_id)
    if existing is not None:
        if existing.open and existing.extra.get("implicit"):
            # A START for a call its deltas already opened (Java: they came under a placeholder name,
            # or reopened the call): it is that call, which gets its real name.
            del existing.extra["implicit"]
            _adopt_name(existing, e.get("toolCallName"))
            return
        if existing.open:
            r._problem(i, "/toolCallId", "order", f"tool call {call_id!r} started twice: the second START is ignored")
            return
        if _same_model_call(existing, e):
            # Java ends every open call whenever a chunk of another call arrives, and starts this one
            # again when its next chunk comes: within one model call (same replyId) it is the same call.
            existing.open = True
            _adopt_name(existing, e.get("toolCallName"))
            return
        if existing.extra.get("replyId") is None or e.get("replyId") is None:
            r._problem(
                i,
                "/toolCallId",
                "order",
                f"tool call {call_id!r} started again after its END: a new call block is added",
            )
        # else: a later model call reusing a provider's call id: a new call.
    b = _Block("tool_use")
    b.name = e.get("toolCallName")
    if e.get("thoughtSignature") is not None:
        b.extra["thoughtSignature"] = e["thoughtSignature"]
    b.extra["id"] = call_id
    b.extra["replyId"] = e.get("replyId")
    b.signature = None
    reply.by_call[call_id] = b
    reply.blocks.append(b)


def _call(r: Reducer, e: dict[str, Any], i: int) -> _Block | None:
    """The open call a TOOL_CALL_DELTA/END is for; None when the event is to be ignored."""
    reply = r._current()
    call_id = e["toolCallId"]
    b = reply.by_call.get(call_id)
    name = e.get("toolCallName")
    if b is not None and not b.open:
        if e["type"] == "TOOL_CALL_END":
            r._problem(i, "/toolCallId", "order", f"END for tool call {call_id!r} that is not open: ignored")
            return None
        if _same_model_call(b, e):
            # Java: a fragment of a call it ended when another call's chunk arrived (see above).
            if not _placeholder(name):
                r._problem(
                    i, "/toolCallId", "order", f"delta for tool call {call_id!r} after its END: the call goes on"
                )
            b.open = True
            b.extra["implicit"] = True
            _adopt_name(b, name)
            return b
    if b is None or not b.open:
        if not (_placeholder(name) and e["type"] == "TOOL_CALL_DELTA"):
            r._problem(
                i,
                "/toolCallId",
                "order",
                f"{e['type']} for tool call {call_id!r} that is not open: the call is started here",
            )
        _tool_call_start(r, e, i)
        b = reply.by_call[call_id]
        b.extra["implicit"] = True
    _adopt_name(b, name)
    return b


def _tool_call_delta(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._reply
    b = reply.by_call.get(e["toolCallId"]) if reply is not None else None
    if b is None or not b.open:
        b = _call(r, e, i)
        assert b is not None  # only END is ever ignored
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    b.text.add(delta)
    b.had_delta = True


def _tool_call_end(r: Reducer, e: dict[str, Any], i: int) -> None:
    b = _call(r, e, i)
    if b is None:
        return
    if "input" in e:
        b.extra["input"] = e["input"]
    if "state" in e:
        b.extra["state"] = e["state"]
    if "metadata" in e:
        b.meta = e["metadata"]
    b.open = False


def _tool_result_start(r: Reducer, e: dict[str, Any], i: int) -> None:
    reply = r._current()
    call_id = e["toolCallId"]
    if call_id in reply.by_result:
        r._problem(i, "/toolCallId", "order", f"tool result {call_id!r} started twice: the second START is ignored")
        return
    t = _ToolResult(call_id, e.get("toolCallName"))
    reply.by_result[call_id] = t
    reply.blocks.append(t)


def _result(r: Reducer, e: dict[str, Any], i: int) -> _ToolResult:
    reply = r._current()
    t = reply.by_result.get(e["toolCallId"])
    if t is None:
        r._problem(
            i,
            "/toolCallId",
            "order",
            f"{e['type']} for tool result {e['toolCallId']!r} that was never started: the result is started here",
        )
        _tool_result_start(r, e, i)
        t = reply.by_result[e["toolCallId"]]
    return t


def _tool_result_text(r: Reducer, e: dict[str, Any], i: int) -> None:
    t = _result(r, e, i)
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    if t.text is None:
        t.text = _Text()
    t.text.add(delta)


def _tool_result_data(r: Reducer, e: dict[str, Any], i: int) -> None:
    t = _result(r, e, i)
    data = e["data"]
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TypeError("data is not a content block")
    t.flush_text()
    t.output.append(data)


def _tool_result_end(r: Reducer, e: dict[str, Any], i: int) -> None:
    t = _result(r, e, i)
    t.flush_text()
    t.state = e["state"]
    meta = e.get("metadata")
    if meta:
        t.meta = dict(meta)
    t.open = False
    del r._current().by_result[t.id]


def _hint(r: Reducer, e: dict[str, Any], i: int) -> None:
    b = _Block("hint")
    b.block = {"type": "hint", "id": e.get("blockId"), "hint": e["hint"], "source": e.get("hintSource")}
    b.open = False
    r._current().blocks.append(b)


def _exceed(r: Reducer, e: dict[str, Any], i: int) -> None:
    r._current().reason = "MAX_ITERATIONS"


def _request_stop(r: Reducer, e: dict[str, Any], i: int) -> None:
    r._current().reason = e.get("generateReason") or "MIDDLEWARE_STOP_REQUESTED"


def _hitl(
    reason: str | None, state: str | None, meta_key: str | None
) -> Callable[[Reducer, dict[str, Any], int], None]:
    def handle(r: Reducer, e: dict[str, Any], i: int) -> None:
        reply = r._current()
        reply.hitl.append({k: v for k, v in e.items() if k not in ("id", "createdAt")})
        if reason is not None:
            reply.reason = reason
        if meta_key is not None and e.get("replyId") is not None:
            reply.meta[meta_key] = e["replyId"]
        for call in e.get("toolCalls") or ():
            b = reply.by_call.get(str(call.get("id"))) if isinstance(call, dict) else None
            if b is not None and state is not None:
                b.extra["state"] = state
        if e["type"] == "USER_CONFIRM_RESULT":
            reply.meta["agentscope_confirm_results"] = e.get("confirmResults") or []
            for res in e.get("confirmResults") or ():
                call = res.get("toolCall") if isinstance(res, dict) else None
                b = reply.by_call.get(str(call.get("id"))) if isinstance(call, dict) else None
                if b is not None and res.get("confirmed"):
                    b.extra["state"] = "allowed"
        elif e["type"] == "EXTERNAL_EXECUTION_RESULT":
            for res in e.get("toolResults") or ():
                t = _Block("whole")
                t.block, t.open = res, False
                reply.blocks.append(t)

    return handle


def _ignore(r: Reducer, e: dict[str, Any], i: int) -> None:
    return None


_DELTA_KIND = {"TEXT_BLOCK_DELTA": "text", "THINKING_BLOCK_DELTA": "thinking"}

_HANDLERS: dict[str, Callable[[Reducer, dict[str, Any], int], None]] = {
    "AGENT_START": _agent_start,
    "AGENT_END": _agent_end,
    "AGENT_RESULT": _agent_result,
    "MODEL_CALL_START": _model_start,
    "MODEL_CALL_END": _model_end,
    "TEXT_BLOCK_START": _block_start("text"),
    "TEXT_BLOCK_DELTA": _text_delta,
    "TEXT_BLOCK_END": _block_end("text"),
    "THINKING_BLOCK_START": _block_start("thinking"),
    "THINKING_BLOCK_DELTA": _thinking_delta,
    "THINKING_BLOCK_END": _block_end("thinking"),
    "DATA_BLOCK_START": _block_start("data"),
    "DATA_BLOCK_DELTA": _data_delta,
    "DATA_BLOCK_END": _block_end("data"),
    "TOOL_CALL_START": _tool_call_start,
    "TOOL_CALL_DELTA": _tool_call_delta,
    "TOOL_CALL_END": _tool_call_end,
    "TOOL_RESULT_START": _tool_result_start,
    "TOOL_RESULT_TEXT_DELTA": _tool_result_text,
    "TOOL_RESULT_DATA_DELTA": _tool_result_data,
    "TOOL_RESULT_END": _tool_result_end,
    "HINT_BLOCK": _hint,
    "EXCEED_MAX_ITERS": _exceed,
    "REQUEST_STOP": _request_stop,
    "REQUIRE_USER_CONFIRM": _hitl("PERMISSION_ASKING", "asking", "agentscope_confirm_request_reply_id"),
    "REQUIRE_EXTERNAL_EXECUTION": _hitl(
        "TOOL_SUSPENDED", "submitted", "agentscope_external_execution_request_reply_id"
    ),
    "USER_CONFIRM_RESULT": _hitl(None, None, None),
    "EXTERNAL_EXECUTION_RESULT": _hitl(None, None, None),
    "ALL_TOOLS_DENIED": _hitl("ALL_TOOLS_DENIED", None, None),
    "SUBAGENT_EXPOSED": _ignore,
    "CUSTOM": _ignore,
}


# ---- building the message ----------------------------------------------------------------------------


def _tool_use_dict(b: _Block, closing: bool) -> dict[str, Any]:
    raw = b.text.value() if b.had_delta else None
    meta = dict(b.meta) if isinstance(b.meta, dict) else {}
    if "thoughtSignature" in b.extra:
        meta.setdefault("thoughtSignature", b.extra["thoughtSignature"])
    if "input" in b.extra:
        args = b.extra["input"]
    elif raw is None or raw == "":
        args = {}
    elif b.open and not closing:
        args = {}  # still streaming: parsed when the call ends
    else:
        err: str | None
        try:
            # Parsing bytes: orjson.loads(str) would leave a UTF-8 copy cached in the (large) str.
            args = orjson.loads(raw.encode())
        except orjson.JSONDecodeError as exc:
            args, err = None, f"arguments are not valid JSON: {exc}"
        else:
            err = None if isinstance(args, dict) else f"arguments are JSON but not an object: {type(args).__name__}"
        if err is not None:
            args = {}
            meta["argumentsError"] = err
    return {
        "type": "tool_use",
        "id": b.extra["id"],
        "name": b.name or "",
        "input": args,
        "content": raw,
        "metadata": meta,
        "state": b.extra.get("state", "pending"),
    }


def _block_dict(b: Any, interrupted: bool, close: bool) -> dict[str, Any] | None:
    if isinstance(b, _ToolResult):
        state = b.state if not b.open else ("interrupted" if close else "running")
        return {
            "type": "tool_result",
            "id": b.id,
            "name": b.name,
            "output": b.output_dicts(),
            "metadata": b.meta,
            "state": state,
        }
    kind = b.kind
    if kind == "text":
        return {"type": "text", "text": b.text.value()}
    if kind == "thinking":
        meta: Any = dict(b.meta) if isinstance(b.meta, dict) else None
        if b.extra or b.signature is not None or b.redacted is not None:
            meta = {} if meta is None else meta
            for key, value in b.extra.items():
                meta.setdefault(key, value)
            if b.signature is not None:
                meta.setdefault("signature", b.signature.value())
            if b.redacted is not None:
                meta.setdefault("redacted", True)
                meta.setdefault("redactedData", b.redacted.value())
        return {"type": "thinking", "thinking": b.text.value(), "metadata": meta}
    if kind == "data":
        out = {
            "type": "data",
            "source": {"type": "base64", "media_type": b.extra["mediaType"], "data": b.text.value()},
            "id": b.extra["id"],
        }
        if b.name is not None:
            out["name"] = b.name
        return out
    if kind in ("whole", "hint"):
        return b.block  # type: ignore[no-any-return]
    if kind == "tool_use":
        return _tool_use_dict(b, close)
    return None


def _build(reply: _Reply, *, interrupted: bool, default_name: str | None, close: bool) -> AssistantMessage:
    content = [d for d in (_block_dict(b, interrupted, close) for b in reply.blocks) if d is not None]
    result = reply.result if isinstance(reply.result, dict) else {}
    metadata: dict[str, Any] = dict(result.get("metadata") or {})
    metadata.update(reply.meta)
    if reply.hitl:
        metadata["agentmsg_hitl"] = list(reply.hitl)
    reason = "INTERRUPTED" if interrupted else reply.reason
    if reason is not None:
        metadata["agentscope_generate_reason"] = reason
    if reply.usage is not None:
        usage: Any = dict(reply.usage)
    else:
        usage = result.get("usage") if "usage" in result else None
    # Ids and names come from the stream: only non-empty strings (ids) and strings (names) are used.
    msg_id = next((v for v in (result.get("id"), reply.msg_id) if isinstance(v, str) and v), None) or _fallback_id(
        reply
    )
    name = next((v for v in (result.get("name"), reply.name) if isinstance(v, str)), default_name)
    data = {
        "id": msg_id,
        "name": name,
        "role": "ASSISTANT",
        "content": content,
        "metadata": metadata,
        "timestamp": result.get("timestamp") if "timestamp" in result else reply.timestamp,
        "usage": usage,
    }
    try:
        msg = Msg.from_dict(data)
    except ValidationError as exc:
        # What the stream carried does not make a valid message (e.g. a bad block in a data delta):
        # keep everything that is valid, report the rest.
        msg = _salvage(data, exc)
    assert isinstance(msg, AssistantMessage)
    return msg


def _salvage(data: dict[str, Any], exc: ValidationError) -> Msg:
    from .._schemas import is_valid

    content = [b for b in data["content"] if is_valid(b, "content-block")]
    metadata = {
        k: v
        for k, v in data["metadata"].items()
        if is_valid({"id": "x", "role": "ASSISTANT", "content": [], "metadata": {k: v}})
    }
    metadata["agentmsg_reduce_errors"] = [str(p) for p in exc.problems][:20]
    fixed = {**data, "content": content, "metadata": metadata}
    if not is_valid({"id": "x", "role": "ASSISTANT", "content": [], "usage": data["usage"]}):
        fixed["usage"] = None
    if not is_valid({"id": "x", "role": "ASSISTANT", "content": [], "timestamp": data["timestamp"]}):
        fixed["timestamp"] = None
    return Msg.from_dict(fixed)


def _fallback_id(reply: _Reply) -> str:
    """An id for a reply that carried none (no AGENT_START replyId, no AGENT_RESULT): minted once."""
    from ..message import new_id

    reply.msg_id = new_id()
    return reply.msg_id


def reduce_events(
    events: Iterable[Mapping[str, Any] | Any],
    *,
    strict: bool = False,
    source: str | None = None,
    name: str | None = None,
) -> list[AssistantMessage]:
    """Reduce a whole event stream: one assistant message per agent reply."""
    reducer = Reducer(strict=strict, source=source, name=name)
    reducer.feed_many(events)
    return reducer.finish()
