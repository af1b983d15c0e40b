"""How each event type changes the reducer's state: one handler per type, and :func:`apply`, which
picks the handler and makes sure bad input becomes a recorded problem, never an exception.

Tolerant mode checks every event except the plain deltas against the event schema first (unless the
producer guarantees valid events: ``Reducer.feed_many(trusted=True)``), and reports what breaks it (pointer and rule from the schema, ``schema_location`` set). The event is then
applied as it is: handlers take only values of the right kind (a wrong one is left out; an event
without a value it needs is skipped), and whatever reaches the message is checked when it is built
(``_build``'s salvage). Plain deltas (text, thinking, tool-call, data and tool-result text) are the
bulk of a stream: their handlers check the few keys they use themselves, so they cost no schema
validation.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from agentmsg._codec import legacy
from agentmsg._codec.jsontext import INT_MAX, INT_MIN
from agentmsg._codec.schemas import schema_documents, validate
from agentmsg._codec.timestamps import java_form_of_instant
from agentmsg._native import speedups as _speedups
from agentmsg.errors import Problem, SizeLimitError, ValidationError, pointer_of, short_repr
from agentmsg.events._build import close_reply
from agentmsg.events._state import JOIN_EVERY, THINKING_DELTA, Block, Reply, State, Text, ToolResult

Handler = Callable[[State, dict[str, Any], int], None]

#: the C delta loop (None: pure Python): see :func:`fold`
_fold_deltas: Callable[..., int] | None = _speedups.fold_deltas if _speedups is not None else None

_MAX_INT = 2**63 - 1  # the largest 64-bit count: where a sum the schema bounds no lower stops
_USAGE_PROPS: dict[str, Any] = schema_documents()["chat-usage.schema.json"]["properties"]
#: The usage keys a reply sums over its model calls, in the schema's order: every count the usage schema declares
#: (an integer) and ``time`` (a number). A key added to the schema is summed with no change here.
SUMMED_USAGE: dict[str, bool] = {
    key: prop.get("type") == "integer"
    for key, prop in _USAGE_PROPS.items()
    if prop.get("type") in ("integer", "number")
}
#: Where each summed key's sum stops: the schema's ``maximum`` (the counts AgentScope Java holds in an int: 2^31-1),
#: else 2^63-1
USAGE_MAX: dict[str, int] = {key: int(_USAGE_PROPS[key].get("maximum", _MAX_INT)) for key in SUMMED_USAGE}
#: Message metadata key of the citation and grounding data a provider gave for the whole reply (MODEL_CALL_END
#: envelope ``metadata.grounding``)
GROUNDING = "agentmsg_grounding"


def fold(st: State, events: Iterable[Any], feed: Callable[[Any], None]) -> None:
    """:func:`fold_events` of ``events``; of a list, its plain deltas in runs taken by the C delta loop
    (``_speedups.fold_deltas``, which takes exactly the events :func:`fold_events` would append to an open text, and
    stops at any other), each other event by :func:`fold_events`."""
    if _fold_deltas is None or type(events) is not list:
        fold_events(st, events, feed)
        return
    window = st.window
    size = window.size or 0
    i, n = 0, len(events)
    while i < n:
        reply = st.reply
        if reply is not None:
            j = _fold_deltas(events, i, window.current, window.previous, size, reply.routes, reply.calls, JOIN_EVERY)
            st.count += j - i
            if j == n:
                return
            i = j
        fold_events(st, (events[i],), feed)
        i += 1


def fold_events(st: State, events: Iterable[Any], feed: Callable[[Any], None]) -> None:
    """The tolerant reducer's feed loop (``Reducer.feed_many``; the caller checked the reducer is neither strict
    nor reducing a ``source``): each plain top-level event is counted, checked for duplicates and applied; an event
    that needs :meth:`Reducer.feed`'s checks (no dict, a ``source``, an id that is no string) goes to ``feed``. The
    duplicate check (:meth:`DedupeWindow.seen`) and apply's plain delta (:func:`apply`) are written out here:
    this loop takes every event of a live stream, one chunk's few events at a time, and a call each cost about as
    much as the rest of the loop. It defines what the C delta loop (``_speedups.fold_deltas``) takes: a former C
    loop that took every event cost more to set up than this whole loop on a chunk's events; the delta loop takes
    only plain deltas, from arguments the caller has at hand."""
    window = st.window
    for event in events:
        if type(event) is not dict or "source" in event:
            feed(event)
            continue
        event_id = event.get("id")
        if type(event_id) is not str:
            feed(event)
            continue
        index = st.count
        st.count = index + 1
        current = window.current  # DedupeWindow.seen
        if event_id in current or event_id in window.previous:
            continue
        current.add(event_id)
        if window.size is not None and len(current) >= window.size:
            window.previous, window.current = current, set()
        reply = st.reply  # apply's plain delta
        kind = event.get("type")
        if reply is not None and type(kind) is str:
            table = reply.routes.get(kind)
            if table is not None:
                key = event.get("toolCallId" if table is reply.calls else "blockId")
                delta = event.get("delta")
                if (
                    type(key) is str
                    and type(delta) is str
                    and (kind != THINKING_DELTA or ("signature" not in event and "redactedData" not in event))
                ):
                    text = table.get(key)
                    if text is not None:
                        parts = text.parts
                        parts.append(delta)
                        if len(parts) >= JOIN_EVERY:
                            text.flush()
                        continue
        _handle(st, event, index, kind)


def apply(st: State, e: dict[str, Any], i: int) -> None:
    """Apply event ``e`` (index ``i``), already checked for its source and for duplicates."""
    kind = e.get("type")
    reply = st.reply
    if reply is not None and type(kind) is str:
        # The common case first: a plain delta for an open block or call, through the routing table.
        table = reply.routes.get(kind)
        if table is not None:
            key = e.get("toolCallId" if table is reply.calls else "blockId")
            delta = e.get("delta")
            if (
                type(key) is str
                and type(delta) is str
                and (kind != THINKING_DELTA or ("signature" not in e and "redactedData" not in e))
            ):
                text = table.get(key)
                if text is not None:
                    parts = text.parts  # Text.add, inlined: the bulk of every stream comes here
                    parts.append(delta)
                    if len(parts) >= JOIN_EVERY:
                        text.flush()
                    return
    _handle(st, e, i, kind)


def _handle(st: State, e: dict[str, Any], i: int, kind: Any) -> None:
    """Apply event ``e`` of type ``kind`` (``e["type"]``) by its handler: anything but a plain delta for an open
    block or call."""
    handler = HANDLERS.get(kind) if type(kind) is str else None
    if handler is None:
        st.problem(i, "/type", "enum", f"unknown event type {short_repr(kind)}: event skipped")
        return
    if kind in legacy.LEGACY_EVENT_TYPES:
        # The seed documents' shapes (a MODEL_CALL_END's own inputTokens, a DATA_BLOCK_DELTA's data, ...): read in
        # their current form, each said (rule legacy-key; strict mode stops at the first)
        notes: list[Problem] = []
        try:
            e = legacy.event(e, notes)
        except SizeLimitError as exc:  # (its legacy keys nest past the limit in their current form: as a message's)
            for p in exc.problems:  # (strict: raised, a limit)
                st.problem(i, p.pointer, p.rule, f"{p.message}: event skipped", limit=True)
            return
        for note in notes:
            st.problem(i, note.pointer, note.rule, note.message)
    trusted = st.trusted
    if not (trusted or st.strict or kind in PLAIN_DELTAS) and not _schema_check(st, e, i):
        return
    opened = st.reply is None
    if opened and st.ended is not None and (kind in ONLY_EMPTY or (kind == "CUSTOM" and e.get("name") == ERROR_EVENT)):
        st.problem(
            i,
            "",
            "after-end",
            f"{kind} after the reply ended (AGENT_END at /{st.ended}) would only open an empty reply: event skipped",
        )
        return
    st.event_id = e.get("id")  # a reply this event opens is named after it when nothing else names it
    try:
        try:
            handler(st, e, i)
        except ValidationError:
            raise  # strict mode, or a limit
        except KeyError as exc:
            st.problem(i, "", "required", f"{kind} event without {exc}: event skipped")
            if opened:  # a skipped event opens no reply (an empty message was added for it)
                st.reply = None
        except Exception as exc:  # never let bad input escape as a bare exception
            st.problem(i, "", "type", f"malformed {kind} event ({type(exc).__name__}: {exc}): event skipped")
            if opened:
                st.reply = None
    except ValidationError:
        if opened:  # strict: the reducer keeps what it had, not the implicit reply opened before the event was refused
            st.reply = None
        raise
    finally:
        if not trusted and st.reply is not None:
            st.reply.trusted = False


#: the rules that skip an event: a value nested too deep, or (sharing its members) written longer than
#: ``limits.max_bytes`` (the message could not be written back)
_SKIPPED = frozenset({"max-depth", "max-bytes"})


def _schema_check(st: State, e: dict[str, Any], i: int) -> bool:
    """Report what in the event breaks the event schema (problems carrying the schema location); the
    event is still applied as it is (the handlers use only what they can, and whatever reaches the
    message is checked when it is built), unless it is too deep or not JSON at all (False: skipped)."""
    try:
        validate(e, "event")
    except ValidationError as exc:
        problems = exc.problems
    else:
        return True
    for p in problems:
        if p.pointer == "/id" and type(e.get("id")) is not str:
            continue  # reported by the duplicate check
        if p.pointer == "" and p.rule in ("required", "additionalProperties"):
            continue  # handlers report the keys they need; unknown keys are not used
        message = p.message if len(p.message) <= 300 else p.message[:300] + "..."  # it may quote the value
        if p.rule == "max-problems" and p.pointer == "":  # the check's count of the problems past those it lists:
            st.problem(i, "", p.rule, message)  # the event is applied, as for the listed ones
            continue
        if p.pointer == "" or p.rule in _SKIPPED:  # (too deep, too long: at the array or object that crosses the limit)
            st.problem(i, p.pointer, p.rule, f"{message}: event skipped", schema=p.schema_location)
            return False
        st.problem(i, p.pointer, p.rule, message, schema=p.schema_location)
    return True


def _make_room(st: State, reply: Reply, i: int) -> None:
    """Bound the open blocks, tool calls and tool results of a reply: beyond ``max_open`` the one
    opened first is closed as it is (its content kept), with a problem (strict: SizeLimitError)."""
    if reply.open_count() < st.max_open:
        return
    table, key = reply.oldest_open()
    st.problem(
        i,
        "",
        "max-open-blocks",
        f"more than {st.max_open} blocks, tool calls and tool results open in one reply: the {table} {short_repr(key)}"
        " opened first is closed as it is",
        limit=True,
    )
    if table == "block":
        reply.close_block(key)
    elif table == "call":
        reply.close_call(key)
        reply.by_call[key].extra.pop("implicit", None)
    else:
        t = reply.by_result[key]
        t.flush_text()
        t.state = "interrupted"
        reply.close_result(key)


# ---- replies and model calls ----------------------------------------------------------------------


def _agent_start(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.reply
    if reply is not None:
        if reply.explicit:
            st.problem(i, "/type", "order", "AGENT_START inside an open reply: the open reply is closed as interrupted")
        close_reply(st, reply, interrupted=reply.explicit)
    reply = st.reply = Reply(explicit=True, origin=i, first_id=e.get("id"))
    reply.msg_id = e.get("replyId") or None
    reply.name = e.get("name")
    reply.timestamp = java_form_of_instant(e.get("createdAt"))


def _agent_end(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.reply
    if reply is None:
        st.problem(i, "/type", "order", "AGENT_END without an open reply: ignored")
        return
    close_reply(st, reply, interrupted=False)
    st.ended = i


def _agent_result(st: State, e: dict[str, Any], i: int) -> None:
    result = e["result"]
    if not isinstance(result, dict):
        raise TypeError("result is not an object")
    st.current().result = result


def _model_start(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.current()
    reply.model_open += 1
    if reply.msg_id is None and not reply.explicit:
        reply.msg_id = e.get("replyId") or None  # an implicit reply is named after its first model call
    model = e.get("modelName")
    if type(model) is str:  # a wrong one is reported by the schema check
        reply.model = model


def _ending(st: State, meta: dict[str, Any], i: int, key: str) -> str | None:
    """A string from MODEL_CALL_END's envelope metadata ``meta`` (``finishReason``, ``model``); another value is
    reported (rule ``type``) and not taken."""
    value = meta.get(key)
    if value is None or type(value) is str:
        return value
    st.problem(i, f"/metadata/{key}", "type", f"{key} {short_repr(value)} is not a string: not taken")
    return None


def _model_end(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.current()
    # What the event says is read and checked whole first, then applied: strict mode raises at its first problem,
    # and the reducer keeps what it had (the model call and its tool calls still open: a cut stream stays cut).
    meta = e.get("metadata")
    if type(meta) is dict:  # looked up and type-checked once (it was three times each)
        finish_reason = _ending(st, meta, i, "finishReason")
        model = _ending(st, meta, i, "model")
        refusal = meta.get("refusal")
        if refusal is not None and refusal is not True:
            st.problem(i, "/metadata/refusal", "type", f"refusal {short_repr(refusal)} is not true: not taken")
        structured = meta.get("structuredOutput")
        if structured is not None and type(structured) is not dict:
            st.problem(
                i,
                "/metadata/structuredOutput",
                "type",
                f"structuredOutput {short_repr(structured)} is no object: not taken",
            )
        grounding = meta.get("grounding")
        if grounding is not None and type(grounding) is not dict:
            st.problem(
                i, "/metadata/grounding", "type", f"grounding {short_repr(grounding)} is not an object: not taken"
            )
    else:
        finish_reason = model = refusal = structured = grounding = None
    usage = e.get("usage")
    changed = _usage_sums(st, reply, usage, i) if usage and type(usage) is dict else None
    if reply.model_open > 0:
        reply.model_open -= 1
    # A model call's tool calls end with it. Java sends no TOOL_CALL_END for a call it never STARTed
    # (placeholder-named fragments), so such a call would otherwise stay open into the next model call.
    for call_id in list(reply.calls):
        reply.close_call(call_id)
        reply.by_call[call_id].extra.pop("implicit", None)
    if finish_reason is not None:
        reply.finish_reason = finish_reason
    if model is not None:
        reply.model = model
    if refusal is True:
        reply.refusal = True
    if type(structured) is dict:  # the reply's JSON (a provider parser reads it): the message's _structured_output
        reply.meta["_structured_output"] = structured
    if type(grounding) is dict:  # the provider's citation and grounding data of the whole reply: the last wins
        reply.meta[GROUNDING] = grounding
    if usage and type(usage) is not dict:
        raise TypeError("usage is not an object")
    if changed:
        if reply.usage is None:
            reply.usage = changed
        else:
            reply.usage.update(changed)  # (a built message copies it)


def _usage_sums(st: State, reply: Reply, usage: dict[str, Any], i: int) -> dict[str, Any]:
    """What a MODEL_CALL_END's ``usage`` changes in the reply's usage (each problem said; nothing changed yet): the
    reply's usage is not copied per event (a key of each event's own made that quadratic)."""
    before = reply.usage if reply.usage is not None else {}
    # The sums so far are ``before``'s: each key is read and written once (the summed keys in the first loop, the
    # others in the second), so none is read after ``changed`` took it. (A ChainMap of the two, whose get is Python
    # code, cost about 3% of a short reply's whole parse and reduce.)
    changed: dict[str, Any] = {}
    for k, count in SUMMED_USAGE.items():
        v = usage.get(k)
        if v is None:
            continue
        if count and type(v) is float and v.is_integer() and INT_MIN <= v <= INT_MAX:
            v = int(v)  # 7.0 is an integer to JSON Schema (and to AgentScope Java): summed as the int it is
        if count and (type(v) is not int or not INT_MIN <= v <= INT_MAX):
            # JSON integers beyond 64 bits come back from the parser as floats: never sum them as such (an int
            # beyond 64 bits, from events given as objects, is ignored as the same stream's JSON text is).
            st.problem(i, f"/usage/{k}", "type", f"usage {k} {v!r:.40} is not a 64-bit integer: value ignored")
            continue
        if not count and type(v) is not int and type(v) is not float:
            # (a bool is no number: True was summed as 1; a string made the whole event skipped, the other counts lost)
            st.problem(i, f"/usage/{k}", "type", f"usage {k} {v!r:.40} is not a number: value ignored")
            continue
        if v < 0:
            # Counts and times are never negative (schema: minimum 0): such a value is not summed, so a sum
            # stays a valid count (a negative one would make the whole usage invalid).
            st.problem(i, f"/usage/{k}", "minimum", f"usage {k} {v!r:.40} is negative: value ignored")
            continue
        s = before.get(k, 0) + v
        top = USAGE_MAX[k]
        if s > top:
            st.problem(
                i,
                f"/usage/{k}",
                "maximum",
                f"usage {k} summed over the reply exceeds {top} ("
                + ("the largest 64-bit count" if top == _MAX_INT else "AgentScope Java's ChatUsage holds it in an int")
                + "): kept at that value",
            )
            s = top
        changed[k] = s
    for k, v in usage.items():
        if k in SUMMED_USAGE:
            continue
        # A key the usage schema declares no count (a newer producer's): kept as given and written back. It
        # cannot be summed, so a later model call's value replaces the earlier one, said.
        if k in before:
            st.problem(
                i,
                pointer_of(("usage", k)),
                "usage-not-summed",
                f"usage {short_repr(k)} is no count the usage schema declares, so it is not summed: this model call's"
                f" value replaces the earlier one ({_shown_value(before[k])})",
            )
        changed[k] = v
    return changed


def _shown_value(value: Any) -> str:
    """A JSON value as a problem quotes it: its JSON text, cut after 80 characters."""
    try:
        text = orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:80] + "..."


# ---- text, thinking and data blocks -------------------------------------------------------------------


def _block_start(kind: str) -> Handler:
    def start(st: State, e: dict[str, Any], i: int) -> None:
        reply = st.current()
        block_id = e["blockId"]
        if block_id in reply.by_block:
            st.problem(i, "/blockId", "order", f"{kind} block {block_id!r} started twice: the second START is ignored")
            return
        _make_room(st, reply, i)
        b = Block(kind, i)
        if kind == "thinking":
            for key in ("provider", "model"):
                if isinstance(e.get(key), str):  # a wrong one is reported by the schema check
                    b.extra[key] = e[key]
        elif kind == "data":
            whole = e.get("block")
            if whole is not None:
                b.kind, b.block = "whole", whole
            else:
                media_type = e.get("mediaType")  # a wrong one is reported by the schema check
                b.extra["mediaType"] = media_type if isinstance(media_type, str) and media_type else _OCTETS
                if isinstance(e.get("name"), str):
                    b.name = e["name"]
                b.extra["id"] = block_id
        reply.open_block(block_id, b)

    return start


def _open_block(st: State, e: dict[str, Any], i: int, kind: str) -> Block:
    """The open block of ``kind`` a delta is for; started here (with a problem) when there is none."""
    reply = st.current()
    block_id = e["blockId"]
    b = reply.by_block.get(block_id)
    if b is not None and (b.kind == kind or (kind == "data" and b.kind == "whole")):
        return b
    if b is None:
        st.problem(
            i,
            "/blockId",
            "order",
            f"{kind} delta for block {short_repr(block_id)} that was never started: the block is started here",
        )
    else:
        # The id belongs to an open block of another kind: that block keeps what it has and is closed,
        # the delta starts a block of its own kind under the id (never mixed into the other block).
        st.problem(
            i,
            "/blockId",
            "order",
            f"{kind} delta for block {short_repr(block_id)}, an open {b.kind} block: that block is closed, a {kind} block started",
        )
        reply.close_block(block_id)
    _block_start(kind)(st, {"blockId": block_id}, i)
    return reply.by_block[block_id]


def _delta(e: dict[str, Any]) -> str:
    delta = e["delta"]
    if type(delta) is not str:
        raise TypeError("delta is not a string")
    return delta


def _text_delta(st: State, e: dict[str, Any], i: int) -> None:
    delta = _delta(e)  # (before any block is started for it: a skipped event starts nothing)
    reply = st.reply
    b = reply.by_block.get(e["blockId"]) if reply is not None else None
    if b is None or b.kind != "text":
        b = _open_block(st, e, i, "text")
    b.text.add(delta)


_SIGNATURE_SCHEMA = "agent-event.schema.json#/$defs/ThinkingBlockDeltaEvent/properties/"


def _thinking_delta(st: State, e: dict[str, Any], i: int) -> None:
    delta = _delta(e)
    reply = st.reply
    b = reply.by_block.get(e["blockId"]) if reply is not None else None
    if b is None or b.kind != "thinking":
        b = _open_block(st, e, i, "thinking")
    if delta:
        b.text.add(delta)
    for key in ("signature", "redactedData"):
        value = e.get(key)
        if value is None:
            continue
        if type(value) is not str:
            st.problem(
                i,
                f"/{key}",
                "type",
                f"{key} {short_repr(value)} is not a string: ignored",
                schema=_SIGNATURE_SCHEMA + key,
            )
            continue
        if key == "signature":
            if b.signature is None:
                b.signature = Text()
            b.signature.add(value)
        else:
            if b.redacted is None:
                b.redacted = Text()
            b.redacted.add(value)


_BASE64_SCHEMA = "source.schema.json#/$defs/Base64Source/properties/data/pattern"


def _data_delta(st: State, e: dict[str, Any], i: int) -> None:
    delta = _delta(e)
    b = _open_block(st, e, i, "data")
    if b.kind == "whole":
        st.problem(i, "/delta", "order", "data delta for a block delivered whole: ignored")
        return
    if not _is_base64_fragment(delta):
        st.problem(i, "/delta", "pattern", "data delta is not base64: delta dropped")
        return
    # The joined data must match the schema's base64 pattern: '=' padding only at the very end.
    pad = len(delta) - len(delta.rstrip("="))
    if (b.pad and delta) or b.pad + pad > 2:
        st.problem(
            i, "/delta", "pattern", "data delta after the '=' padding of the data: delta dropped", schema=_BASE64_SCHEMA
        )
        return
    b.pad += pad
    b.text.add(delta)


def _is_base64_fragment(s: str) -> bool:
    try:
        base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _block_end(kind: str) -> Handler:
    def end(st: State, e: dict[str, Any], i: int) -> None:
        block_id = e["blockId"]
        reply = st.reply  # (between replies nothing is open: ignored, no implicit reply opened for it)
        b = reply.by_block.get(block_id) if reply is not None else None
        if reply is None or b is None:
            st.problem(i, "/blockId", "order", f"END for {kind} block {block_id!r} that is not open: ignored")
            return
        if "metadata" in e:
            b.meta = e["metadata"]
        reply.close_block(block_id)

    return end


# ---- tool calls ------------------------------------------------------------------------------------------


_OCTETS = "application/octet-stream"
_CALL_STATES = frozenset(schema_documents()["content-block.schema.json"]["$defs"]["ToolCallState"]["enum"])
_RESULT_STATES = frozenset(schema_documents()["content-block.schema.json"]["$defs"]["ToolResultState"]["enum"])


def _placeholder(name: Any) -> bool:
    """AgentScope Java's placeholder tool names (``__fragment__``, ``__pending__``): a call whose first
    chunks carry one gets no TOOL_CALL_START (Java hides ``__`` names) but its deltas are emitted."""
    return isinstance(name, str) and name.startswith("__")


def _same_model_call(b: Block, e: dict[str, Any]) -> bool:
    reply_id = b.extra.get("replyId")
    return reply_id is not None and reply_id == e.get("replyId")


def _adopt_name(b: Block, name: Any) -> None:
    if isinstance(name, str) and name and (b.name is None or (_placeholder(b.name) and not _placeholder(name))):
        b.name = name


def _tool_call_start(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.current()
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
            st.problem(i, "/toolCallId", "order", f"tool call {call_id!r} started twice: the second START is ignored")
            return
        if _same_model_call(existing, e):
            # Java ends every open call whenever a chunk of another call arrives, and starts this one
            # again when its next chunk comes: within one model call (same replyId) it is the same call.
            _make_room(st, reply, i)
            reply.open_call(call_id, existing, new=False)
            _adopt_name(existing, e.get("toolCallName"))
            return
        if existing.extra.get("replyId") is None or e.get("replyId") is None:
            st.problem(
                i,
                "/toolCallId",
                "order",
                f"tool call {call_id!r} started again after its END: a new call block is added",
            )
        # else: a later model call reusing a provider's call id: a new call.
    _make_room(st, reply, i)
    b = Block("tool_use", i)
    name = e.get("toolCallName")
    b.name = name if isinstance(name, str) else None  # a wrong one is reported by the schema check
    if isinstance(e.get("thoughtSignature"), str):
        b.extra["thoughtSignature"] = e["thoughtSignature"]
    b.extra["id"] = call_id
    b.extra["replyId"] = e.get("replyId")
    reply.open_call(call_id, b, new=True)


def _call(st: State, e: dict[str, Any], i: int) -> Block | None:
    """The open call a TOOL_CALL_DELTA/END is for; None when the event is to be ignored."""
    reply = st.current()
    call_id = e["toolCallId"]
    name = e.get("toolCallName")
    b = reply.by_call.get(call_id)
    if b is not None and not b.open:
        if e["type"] == "TOOL_CALL_END":
            st.problem(i, "/toolCallId", "order", f"END for tool call {call_id!r} that is not open: ignored")
            return None
        if _same_model_call(b, e):
            # Java: a fragment of a call it ended when another call's chunk arrived (see above).
            if not _placeholder(name):
                st.problem(
                    i, "/toolCallId", "order", f"delta for tool call {call_id!r} after its END: the call goes on"
                )
            _make_room(st, reply, i)
            reply.open_call(call_id, b, new=False)
            b.extra["implicit"] = True
            _adopt_name(b, name)
            return b
    if b is None or not b.open:
        if not (_placeholder(name) and e["type"] == "TOOL_CALL_DELTA"):
            st.problem(
                i,
                "/toolCallId",
                "order",
                f"{e['type']} for tool call {call_id!r} that is not open: the call is started here",
            )
        _tool_call_start(st, {"toolCallId": call_id, "toolCallName": name, "replyId": e.get("replyId")}, i)
        b = reply.by_call[call_id]
        b.extra["implicit"] = True
    _adopt_name(b, name)
    return b


def _tool_call_delta(st: State, e: dict[str, Any], i: int) -> None:
    delta = _delta(e)
    reply = st.reply
    b = reply.by_call.get(e["toolCallId"]) if reply is not None else None
    if b is None or not b.open:
        b = _call(st, e, i)
        assert b is not None  # only END is ever ignored
    b.text.add(delta)


def _tool_call_end(st: State, e: dict[str, Any], i: int) -> None:
    state = e.get("state")
    known = state in _CALL_STATES  # (an unhashable one raises here, before the call is touched: event skipped)
    b = _call(st, e, i)
    if b is None:
        return
    call_id = e["toolCallId"]
    # Values the schema check reported as wrong are not taken (the call keeps what it has).
    if isinstance(e.get("input"), dict):
        b.extra["input"] = e["input"]
    if known:
        b.extra["state"] = state
    if "metadata" in e:
        b.meta = e["metadata"]
    st.current().close_call(call_id)


# ---- tool results ------------------------------------------------------------------------------------------


def _tool_result_start(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.current()
    call_id = e["toolCallId"]
    if call_id in reply.by_result:
        st.problem(i, "/toolCallId", "order", f"tool result {call_id!r} started twice: the second START is ignored")
        return
    _make_room(st, reply, i)
    name = e.get("toolCallName")
    reply.open_result(ToolResult(call_id, name if isinstance(name, str) else None, i))


def _result(st: State, e: dict[str, Any], i: int) -> ToolResult:
    reply = st.current()
    call_id = e["toolCallId"]
    t = reply.by_result.get(call_id)
    if t is None:
        st.problem(
            i,
            "/toolCallId",
            "order",
            f"{e['type']} for tool result {call_id!r} that was never started: the result is started here",
        )
        _tool_result_start(st, {"toolCallId": call_id, "toolCallName": e.get("toolCallName")}, i)
        t = reply.by_result[call_id]
    return t


def _tool_result_text(st: State, e: dict[str, Any], i: int) -> None:
    delta = _delta(e)
    t = _result(st, e, i)
    if t.text is None:
        t.text = Text()
    t.text.add(delta)


def _tool_result_data(st: State, e: dict[str, Any], i: int) -> None:
    data = e["data"]
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TypeError("data is not a content block")
    t = _result(st, e, i)
    t.flush_text()
    t.output.append(data)


def _tool_result_end(st: State, e: dict[str, Any], i: int) -> None:
    # (what can make the event skipped is read first: a skipped event starts and ends nothing)
    state = e["state"]
    known = state in _RESULT_STATES  # a wrong one is reported by the schema check; the result still ends
    meta = e.get("metadata")
    meta = dict(meta) if meta else None
    t = _result(st, e, i)
    t.flush_text()
    if known:
        t.state = state
    if meta is not None:
        t.meta = meta
    st.current().close_result(t.id)


# ---- everything else ------------------------------------------------------------------------------------


def _hint(st: State, e: dict[str, Any], i: int) -> None:
    b = Block("hint", i)
    b.block = {"type": "hint", "id": e.get("blockId"), "hint": e["hint"], "source": e.get("hintSource")}
    b.open = False
    st.current().blocks.append(b)


def _exceed(st: State, e: dict[str, Any], i: int) -> None:
    st.current().reason = "MAX_ITERATIONS"


def _request_stop(st: State, e: dict[str, Any], i: int) -> None:
    reply = st.current()
    reply.reason = e.get("generateReason") or "MIDDLEWARE_STOP_REQUESTED"
    reason = e.get("reason")
    if type(reason) is str and reason:  # a wrong one is reported by the schema check
        reply.stop_reason = reason


# The CUSTOM events agentmsg's producers send (the provider parsers, the clients), by name; public in
# agentmsg.events. Their value is an object with a ``message``.
#: CUSTOM event name of an error a producer reports in the stream (a provider error mid-stream, a cut stream, a
#: timeout, a cancellation; value ``{"type", "message"}``): the reducer keeps it in ``agentmsg_errors``.
ERROR_EVENT = "agentmsg.error"
#: CUSTOM event name of a payload a provider parser could not read (skipped), or of a tool call's arguments that
#: are no JSON object (value ``{"rule", "message"}``, and ``toolCallId`` for a tool call's).
PROBLEM_EVENT = "agentmsg.problem"
#: CUSTOM event name of provider data the message has no place for, said once (value ``{"rule": "not-kept",
#: "message"}``).
NOT_KEPT_EVENT = "agentmsg.not-kept"


#: Notes a reply's message keeps at most in metadata ``agentmsg_notes``: the rest are counted, and said by one last
#: entry (rule ``max-problems``, as the provider parsers say the problems they do not say).
MAX_NOTES = 100


def _custom(st: State, e: dict[str, Any], i: int) -> None:
    name = e.get("name")
    if name == ERROR_EVENT:
        value = e.get("value")
        if type(value) is dict:  # a wrong one is reported by the schema check
            st.current().errors.append(value)
    elif name in (PROBLEM_EVENT, NOT_KEPT_EVENT):
        value = e.get("value")
        if type(value) is dict and st.reply is not None:  # a wrong one: the schema check's
            # (between replies, before the first or after an AGENT_END, e.g. a payload a reader skipped after the
            # reply's end, a note opens no reply, as a CUSTOM event of another name opens none: it stays in the events)
            reply = st.current()
            if len(reply.notes) < MAX_NOTES:
                reply.notes.append(value)
            else:
                reply.notes_omitted += 1


def _hitl(reason: str | None, state: str | None, meta_key: str | None) -> Handler:
    def handle(st: State, e: dict[str, Any], i: int) -> None:
        reply = st.current()
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
                t = Block("whole", i)
                t.block, t.open = res, False
                reply.blocks.append(t)

    return handle


def _ignore(st: State, e: dict[str, Any], i: int) -> None:
    return None


#: Events that bring a reply no content (no block, tool call or tool result) and open no model call: between replies
#: after an AGENT_END, where they would open an implicit reply (rule 1) with nothing in it (an AGENT_RESULT: a second,
#: empty message under the same id), they are skipped (rule after-end); so is a CUSTOM agentmsg.error there.
ONLY_EMPTY = frozenset(
    {
        "AGENT_RESULT",
        "MODEL_CALL_END",
        "EXCEED_MAX_ITERS",
        "REQUEST_STOP",
        "ALL_TOOLS_DENIED",
        "REQUIRE_USER_CONFIRM",
        "REQUIRE_EXTERNAL_EXECUTION",
        "USER_CONFIRM_RESULT",
    }
)

#: Deltas whose handlers check every key they use: not validated against the schema in tolerant mode.
PLAIN_DELTAS = frozenset(
    {"TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA", "DATA_BLOCK_DELTA", "TOOL_RESULT_TEXT_DELTA"}
)

HANDLERS: dict[str, Handler] = {
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
    "CUSTOM": _custom,
}
