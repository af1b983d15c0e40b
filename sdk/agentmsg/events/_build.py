"""From a reply's state to an assistant :class:`~agentmsg.Msg`, and salvage when what the stream
carried does not make a valid message: every valid part is kept, every dropped part reported."""

from __future__ import annotations

import re
from typing import Any

import attrs

from agentmsg._codec.converter import surely_writes
from agentmsg._codec.jsontext import (
    INT_MAX,
    INT_MIN,
    has_lone_surrogate,
    join_surrogates,
    parse_arguments,
    shares_members,
    written_within,
)
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import validate
from agentmsg.errors import Problem, ValidationError, pointer_of
from agentmsg.events._pointer import deepest_last_first, replaced, tokens, without
from agentmsg.events._state import Block, Reply, State, ToolResult
from agentmsg.message import JAVA_USAGE_KEYS, METADATA_CHAT_USAGE, AssistantMessage, Msg
from agentmsg_models.generate_reason import GenerateReason


def close_reply(st: State, reply: Reply, interrupted: bool) -> None:
    """The reply is over: its message joins the completed ones; salvage problems are recorded."""
    st.done.append(build(reply, interrupted=interrupted, default_name=st.default_name, close=True, st=st))
    st.results.append(reply.result if isinstance(reply.result, dict) else None)
    st.reply = None


def _tool_use_dict(b: Block, closing: bool) -> dict[str, Any]:
    raw = b.text.value() if b.text.received else None
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
        raw, args, err = parse_arguments(raw)
        if err is not None:
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


def _block_dict(b: Any, close: bool) -> dict[str, Any] | None:
    if isinstance(b, ToolResult):
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


def build(
    reply: Reply,
    *,
    interrupted: bool,
    default_name: str | None,
    close: bool,
    st: State | None = None,
    text_too: bool = False,
) -> AssistantMessage:
    """The reply's message. ``st`` given (the reply is closing): salvage problems are recorded there.
    ``text_too`` (without ``st``: a snapshot): events were fed as objects, so the text is scanned too."""
    origins: list[int] = []
    content: list[Any] = []
    for b in reply.blocks:
        d = _block_dict(b, close)
        if d is not None:
            content.append(d)
            origins.append(b.origin)
    result = reply.result if isinstance(reply.result, dict) else {}
    result_meta = result.get("metadata")
    metadata: dict[str, Any] = dict(result_meta) if isinstance(result_meta, dict) else {}
    metadata.update(reply.meta)
    if reply.hitl:
        metadata["agentmsg_hitl"] = list(reply.hitl)
    # The keys the reducer builds itself, valid by construction (the fast path does not check them again).
    own: list[str] = []
    # What the reply ended with (rule 3 of docs/events.md's "Reducing events to messages"): strings the handlers
    # took as strings, and True.
    if reply.finish_reason is not None:
        metadata["agentmsg_finish_reason"] = reply.finish_reason
        own.append("agentmsg_finish_reason")
    if reply.model is not None:
        metadata["agentmsg_model"] = reply.model
        own.append("agentmsg_model")
    if reply.stop_reason is not None:
        metadata["agentmsg_stop_reason"] = reply.stop_reason
        own.append("agentmsg_stop_reason")
    if reply.refusal:
        metadata["agentmsg_refusal"] = True
        own.append("agentmsg_refusal")
    if reply.errors:
        metadata["agentmsg_errors"] = list(reply.errors)
    if reply.notes:
        notes: list[Any] = list(reply.notes)
        if reply.notes_omitted:
            notes.append({"rule": "max-problems", "message": f"{reply.notes_omitted} more notes not kept"})
        metadata["agentmsg_notes"] = notes
    reason = "INTERRUPTED" if interrupted else reply.reason
    if reason is not None:
        metadata["agentscope_generate_reason"] = reason
        if type(reason) is str and reason in _GENERATE_REASONS:  # (else a REQUEST_STOP's value: checked)
            own.append("agentscope_generate_reason")
    if reply.usage is not None:
        usage: Any = dict(reply.usage)
    else:
        usage = result.get("usage") if "usage" in result else None
    own_copy = type(usage) is dict and not JAVA_USAGE_KEYS.issuperset(usage)
    if own_copy:
        # A usage holding a key AgentScope Java 2.0.0's ChatUsage lacks keeps a copy of itself in metadata
        # _chat_usage, a map Java keeps whole: the key survives a trip through Java (docs/wire-format.md).
        metadata[METADATA_CHAT_USAGE] = dict(usage)
        own.append(METADATA_CHAT_USAGE)  # (valid when the usage is: the fast path checks it as the usage)
    # Ids and names come from the stream: only non-empty strings (ids) and strings (names) are used.
    msg_id = result.get("id")
    if not (isinstance(msg_id, str) and msg_id):
        msg_id = reply.msg_id if isinstance(reply.msg_id, str) and reply.msg_id else reply.fallback_id
    name = result.get("name")
    if not isinstance(name, str):
        name = reply.name if isinstance(reply.name, str) else default_name
    data = {
        "id": msg_id,
        "name": name,
        "role": "ASSISTANT",
        "content": content,
        "metadata": metadata,
        "timestamp": result.get("timestamp") if "timestamp" in result else reply.timestamp,
        "usage": usage,
    }
    # (events fed as objects whose values share their members: nothing writes the message before its check, which
    # refuses one written past limits.max_bytes, and the salvage leaves out what it names; the parsers' events, read
    # from JSON text, share none: not walked, about 2% of a client's recorded reply)
    # (the C writer's dry run first, jsontext.written_within: shares_members' walk of every dict's keys was 1.7% of a
    # reply reduced from a list of events)
    shared = (
        ((reply.trusted and (st is None or not st.parsed)) or (st is not None and st.unchecked))
        and not written_within(data)
        and shares_members(data)
    )
    if reply.trusted and not shared and (surely_writes(data) or not any(_unwritable(data, text_too=True))):
        # Valid events parsed from JSON text (Reducer.feed_many(trusted=True)): the data is JSON values, so the
        # message takes the codec's fast path, its typed checks on the values as they are. (Written as JSON
        # and read back, the reply's text was held three times at the end, its JSON bytes ten times over
        # with orjson's reserve.) What JSON cannot carry is looked for first, the text included (the C
        # writer's check, else the walk): found (the promise is broken, e.g. a lone surrogate), or a value
        # the fast path does not take, the message is decided and salvaged below as any other reply's.
        # Usage is restored from a _chat_usage copy only: none, or the usage's own (the fast path takes a usage of
        # known keys and no nulls, so its copy restores no key), is skipped (about 1% of a short reply's instructions).
        # The typed checks get only the metadata keys holding an event's value (a _chat_usage the usage is restored
        # from among them); the reducer's own (a short reply's whole metadata) are valid by construction. The
        # message gets the whole metadata, in its order, and so does the general path below.
        if own:
            data["metadata"] = {} if len(own) == len(metadata) else {k: v for k, v in metadata.items() if k not in own}
        msg = Msg._from_json_value(data, not own_copy and METADATA_CHAT_USAGE in metadata)
        if msg is not None:
            assert isinstance(msg, AssistantMessage)
            msg.metadata = metadata
            return msg
        data["metadata"] = metadata
    unwritable, lone, recheck = _unwritable(data, text_too=reply.trusted or (text_too if st is None else st.unchecked))
    found: list[Problem] = []
    for path in deepest_last_first(lone):
        # A string holding surrogates (from events fed as objects): a pair split across deltas is joined, as
        # UTF-16 (JavaScript) strings join it; a surrogate still alone is replaced by U+FFFD, reported.
        text = join_surrogates(_at(data, path))
        if has_lone_surrogate(text):
            text = _SURROGATE.sub("\ufffd", text)
            found.append(
                Problem(
                    f"/{_origin(path, origins, reply.origin)}",
                    "lone-surrogate",
                    f"the reduced message's {pointer_of(path)} holds a lone UTF-16 surrogate (not encodable as"
                    " UTF-8): replaced by U+FFFD",
                )
            )
        data = replaced(data, path, text)
    for path in deepest_last_first(unwritable):
        # Integers JSON cannot carry (beyond 64 bits, from events fed as Python objects): left out, reported.
        data = without(data, path)
        found.append(
            Problem(
                f"/{_origin(path, origins, reply.origin)}",
                "json-value",
                f"the reduced message's {pointer_of(path)} cannot be written as JSON (an integer beyond 64 bits):"
                " left out",
            )
        )
    if st is not None:
        for p in found:
            st.add(p)
    try:
        # Checked above (and the bulk text comes from checked deltas): the JSON-value check is not run
        # again, since it writes every string with orjson, which keeps a UTF-8 copy inside each non-ASCII
        # str it writes (the message's text would then take twice its memory).
        msg = Msg._from_parsed(data, False, checked=not (recheck or shared), notes=[])
    except ValidationError as exc:
        msg = _salvage(data, exc, origins, reply.origin, st)
    assert isinstance(msg, AssistantMessage)
    return msg


_SURROGATE = re.compile("[\ud800-\udfff]")
_GENERATE_REASONS = frozenset(g.value for g in GenerateReason)  # (metadata agentscope_generate_reason's values)


def _at(node: Any, path: list[str | int]) -> Any:
    for key in path:
        node = node[key]
    return node


def _origin(path: list[str | int], origins: list[int], origin: int) -> int:
    """The index of the event a value of the message came from: the block's start, else the reply's."""
    return origins[path[1]] if path[0] == "content" and isinstance(path[1], int) else origin


_BIG_TEXT = frozenset({"text", "thinking", "content", "data"})  # a message's bulk: built from checked deltas
#: the values (dicts, lists and what they hold) :func:`_unwritable` meets before it remembers the dicts and lists it
#: walked: a small message pays nothing for it, and a value shared below that is walked at each of its paths
_REMEMBER_AFTER = 1 << 12


def _unwritable(
    data: dict[str, Any], text_too: bool = False
) -> tuple[list[list[str | int]], list[list[str | int]], bool]:
    """Paths of values orjson cannot write, integers outside -2**63 .. 2**64-1 and strings holding a
    surrogate (two lists): they can only come from events fed as Python objects; and whether the message needs the full
    JSON-value check anyway (a list or map nested ``limits.max_depth`` deep or more, a key that is not a
    string or has a lone surrogate, a value of any other type, NaN or an infinity). The bulk text fields
    (built from deltas, which are checked when parsed from bytes) are not scanned, so this stays cheap, unless
    ``text_too``: events fed as Python objects, whose text nothing has checked.

    Past :data:`_REMEMBER_AFTER` values, a dict or list met again no deeper than it was walked at is not walked again
    (it holds nothing deeper than it did), so that a value sharing its members (events fed as objects: a grounding
    listing the same big dict 40 times, or the same dict twice a hundred levels down) costs its values, not its
    paths. The values in one not walked again are at paths not listed: when any value is listed and any container was
    not walked again, the full check is asked for too (it finds them, and the salvage says what it leaves out)."""
    out: list[list[str | int]] = []
    lone: list[list[str | int]] = []
    recheck = False
    max_depth = limits.max_depth
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    # (past _REMEMBER_AFTER values, each container's id and the greatest depth it was walked at, as
    # jsontext.check_json_value's walk keeps them; ``data`` holds every one of them alive)
    walked: dict[int, int] | None = None
    left = _REMEMBER_AFTER
    skipped = False
    while stack:
        node, path = stack.pop()
        kind = type(node)
        if kind is dict or kind is list:
            if walked is not None:
                seen = walked.get(id(node))
                if seen is not None and seen >= len(path):
                    skipped = True
                    continue
                walked[id(node)] = len(path)
            else:
                left -= len(node) + 1
                if left < 0:
                    walked = {id(node): len(path)}
        if kind is dict:
            if len(path) >= max_depth or any(type(k) is not str or has_lone_surrogate(k) for k in node):
                recheck = True
            for key, child in node.items():
                if (
                    not text_too
                    and key in _BIG_TEXT
                    and type(child) is str
                    and path
                    and path[0] == "content"
                    and len(path) <= 4
                ):
                    continue
                stack.append((child, [*path, key]))
        elif kind is list:
            if len(path) >= max_depth:
                recheck = True
            stack.extend((child, [*path, i]) for i, child in enumerate(node))
        elif kind is int:
            if not INT_MIN <= node <= INT_MAX:
                out.append(path)
        elif kind is str:
            if has_lone_surrogate(node):
                lone.append(path)
        elif kind is float:
            if node - node != 0.0:  # NaN or an infinity
                recheck = True
        elif kind is not bool and node is not None:
            recheck = True
    return out, lone, recheck or (skipped and bool(out or lone))


def _problems_of(value: Any, kind: str) -> tuple[Problem, ...]:
    try:
        validate(value, kind)
    except ValidationError as exc:
        return exc.problems
    return ()


def _salvage(data: dict[str, Any], exc: ValidationError, origins: list[int], origin: int, st: State | None) -> Msg:
    """Keep every block, metadata key and field that is valid on its own; report the rest (in
    ``st.problems`` when closing, one problem per part left out or pruned, and always in metadata
    ``agentmsg_reduce_errors``: every schema problem of those parts as ``"<pointer in the message> [<rule>]"``,
    sorted by code point, at most 20, so the text is the same in every runtime). Parts valid alone that fail together
    (a block pruned until valid alone, still too deep inside the message) are pruned again where the message's check
    says, else the message keeps its text and thinking; the last resort keeps the id, name and timestamp."""
    found: list[Problem] = []
    entries: set[str] = set()

    def drop(at: int, where: str, problems: tuple[Problem, ...], what: str) -> None:
        entries.update(f"{where}{_entry(p)}" for p in problems)
        first = problems[0] if problems else Problem("", "schema", "invalid")
        text = first.message if len(first.message) <= 300 else first.message[:300] + "..."
        place = where + first.pointer  # ("": the message itself, as a limits.max_depth of 1 finds any part of it)
        subject = f"the reduced message's {place}" if place else "the reduced message"
        found.append(
            Problem(
                f"/{at}",
                first.rule,
                f"{subject} is invalid ({text}): {what}",
                first.schema_location or "msg.schema.json",
            )
        )

    def whole(problems: tuple[Problem, ...], what: str = "") -> None:
        """Said of the whole message (a rule across parts): it keeps its text and thinking blocks only."""
        found.extend(
            Problem(
                f"/{origin}", p.rule, f"the reduced message: {p.message}{what}", p.schema_location or "msg.schema.json"
            )
            for p in problems
        )
        entries.update(_entry(p) for p in problems)
        fixed["content"] = [b for b in fixed["content"] if b.get("type") in ("text", "thinking")]

    def pruned(block: Any, j: int, problems: tuple[Problem, ...]) -> Any:
        """Block ``j`` without the values ``problems`` name (pointers within it), when what is left is valid, or None:
        said either way (value or block left out)."""
        out = block
        for path in deepest_last_first([tokens(p.pointer) for p in problems if p.pointer]):
            out = without(out, path)
        if out is not block and not _problems_of(out, "content-block"):
            drop(origins[j], f"/content/{j}", problems, "value left out")
            return out
        drop(origins[j], f"/content/{j}", problems, "block left out")
        return None

    content = []
    kept: list[int] = []  # (the index in data["content"] of each block kept)
    for j, block in enumerate(data["content"]):
        problems = _problems_of(block, "content-block")
        # (a block the schema rejects: the values it names left out, the block kept when what is left is valid)
        part = pruned(block, j, problems) if problems else block
        if part is not None:
            content.append(part)
            kept.append(j)
    metadata: dict[str, Any] = {}
    fixed = {**data, "content": content, "metadata": metadata}
    # Each metadata key, the usage, the timestamp and the name is checked alone, in an empty message; where that is
    # invalid itself (limits.max_depth 1: its content list is 2 levels deep), none of them can be singled out, and
    # the whole message is said below (each was said left out, none at fault, an absent one too)
    alone = not _problems_of(_EMPTY_REPLY, "msg")
    for key, value in data["metadata"].items():
        problems = _problems_of({**_EMPTY_REPLY, "metadata": {key: value}}, "msg") if alone else ()
        if problems:
            drop(origin, "", problems, f"metadata key {key!r} left out")
        else:
            metadata[key] = value
    for key in ("usage", "timestamp", "name") if alone else ():
        problems = _problems_of({**_EMPTY_REPLY, key: data[key]}, "msg")
        if problems:
            drop(origin, "", problems, f"{key} left out")
            fixed[key] = None
    said_whole = not found or not alone
    if said_whole:  # nothing singled out: a rule across parts (or none can be); keep the text at least
        whole(exc.problems)

    def built() -> tuple[Msg | None, ValidationError | None]:
        fixed["metadata"] = {**metadata, "agentmsg_reduce_errors": sorted(entries)[:MAX_REDUCE_ERRORS]}
        try:
            return Msg.from_dict(fixed, notes=[]), None
        except ValidationError as failed:
            return None, failed

    msg, last = built()
    if last is not None and not said_whole:
        # The parts valid alone break a rule together: a block pruned until it is valid alone is still nested too
        # deep two levels down, in the message (events fed trusted: no event check cut its input first). The
        # values inside a block the message's check names are left out too, as above (the block when what is left
        # is invalid); what else it names is said of the whole message, which keeps its text and thinking.
        inside: dict[int, list[Problem]] = {}
        rest: list[Problem] = []
        for p in last.problems:
            path = tokens(p.pointer)
            if len(path) > 2 and path[0] == "content" and isinstance(path[1], int) and path[1] < len(kept):
                inside.setdefault(path[1], []).append(attrs.evolve(p, pointer=pointer_of(path[2:])))
            else:
                rest.append(p)
        blocks = [
            block if i not in inside else pruned(block, kept[i], tuple(inside[i]))
            for i, block in enumerate(fixed["content"])
        ]
        fixed["content"] = [block for block in blocks if block is not None]
        if rest:
            whole(tuple(rest), _TEXT_ONLY)
            said_whole = True
        msg, last = built()
    if last is not None and not said_whole:  # (the check names one of several values too deep: said of the whole)
        whole(last.problems, _TEXT_ONLY)
        msg, last = built()
    if last is not None:
        # The last resorts: the message without its blocks (each other part was valid alone), then of its id, name and
        # timestamp only; each says why and what it left out.
        entries.update(_entry(p) for p in last.problems)
        errors = {"agentmsg_reduce_errors": sorted(entries)[:MAX_REDUCE_ERRORS]}
        bare: dict[str, Any] = {
            "id": fixed["id"] if isinstance(fixed["id"], str) and fixed["id"] else "msg-" + str(origin),
            "name": fixed["name"] if alone else None,
            "role": "ASSISTANT",
            "content": [],
            "metadata": errors,
            "timestamp": fixed["timestamp"] if alone else None,
        }
        for resort, what in (
            ({**bare, "metadata": {**metadata, **errors}, "usage": fixed["usage"]}, ": its blocks left out"),
            (bare, ": its content, metadata and usage left out"),
        ):
            if resort is bare or alone:
                try:
                    msg = Msg.from_dict(resort, notes=[])
                except ValidationError:
                    continue
                whole(last.problems, what)
                break
        else:  # (no message fits the limits: what was found is said, then the error raised)
            if st is not None:
                for p in found:
                    st.add(p)
            Msg.from_dict(bare, notes=[])
    assert msg is not None
    if st is not None:
        for p in found:
            st.add(p)
    return msg


MAX_REDUCE_ERRORS = 20  # entries of metadata agentmsg_reduce_errors
_TEXT_ONLY = ": its blocks but text and thinking left out"  # (what _salvage says it did when parts fail together)
_EMPTY_REPLY: dict[str, Any] = {"id": "x", "role": "ASSISTANT", "content": []}  # what _salvage checks a part in


def _entry(p: Problem) -> str:
    return f"{p.pointer} [{p.rule}]"
