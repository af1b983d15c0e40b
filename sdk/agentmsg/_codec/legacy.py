"""Legacy keys: shapes of the seed documents (AgentScope's own docs, which describe builders and events the 2.x
code does not have) read in their current form, with a note, never silently emptied.

Each note is a :class:`~agentmsg.Problem` with rule ``legacy-key``, the pointer of the key as read, and a message
saying what it was read as. The readers (``Msg.from_json``/``from_dict``, ``decode_messages``, ``block_from_dict``,
the event reducer in Python and TypeScript, ``agentmsg validate``/``reduce``/``format``) map these; strict
reading refuses them (docs/wire-format.md, "Legacy keys"):

========================  ==========================================  =========================================
where                     legacy key (seed document)                   read as
========================  ==========================================  =========================================
tool_use block            ``arguments`` (message.md)                  ``input`` (an object), or ``content`` and
                                                                      its parse in ``input`` (text)
tool_result block         ``result`` (message.md)                     ``output``: a block as ``[block]``, a list
                                                                      as it is, text as ``[text block]``
tool_result block         ``toolUseId`` (message-system-architecture)  ``id``
MODEL_CALL_END            ``inputTokens``, ``outputTokens`` ... on     ``usage.<key>``
                          the event (message-and-event.md)
DATA_BLOCK_DELTA          ``data`` (message-and-event.md)             ``delta``
TOOL_RESULT_DATA_DELTA    ``data`` (base64 text), ``url``,            ``data``: a data block with a base64 or
                          ``mediaType`` (message-and-event.md)         URL source of that media type
========================  ==========================================  =========================================

Messages AgentScope **Python** wrote (1.x ``Msg.to_dict()``, 2.x ``Msg.model_dump()``) are read the same way:

========================  ==========================================  =========================================
where                     AgentScope Python                           read as
========================  ==========================================  =========================================
message (lowercase role)  ``role`` user / assistant / system          uppercase; ``system`` holding a
                                                                      tool_result (1.x's ReAct agent) is TOOL
any message               ``content`` text; ``metadata`` null         ``[text block]``; ``{}``
message (2.x)             ``created_at``                              ``timestamp`` (Java's form: ``T`` as a
                                                                      space, the fraction as given)
message (2.x)             ``usage`` snake-case keys                   camel case (``cache_input_tokens`` is
                                                                      ``cachedTokens``)
message (2.x)             ``structured_output``, ``finished_reason``  metadata ``_structured_output``,
                                                                      ``agentscope_generate_reason``
message (2.x)             ``finished_at``, ``error``, finished reason  kept as unknown keys
                          ``error``
any block                 ``tool_call`` with ``input`` text (2.x)     ``tool_use``, ``content`` and ``input``
any tool_result           ``output`` text                             ``[text block]``
tool_use (1.x)            ``raw_input``                               ``content``
thinking (2.x)            ``signature``, ``redacted_thinking_data``   metadata ``signature``, ``redactedData``
data/media (2.x)          URL source ``media_type``; ``name`` null    ``mime_type``; dropped
blocks (2.x)              text/thinking ``id``, ``created_at``,       kept as unknown keys
                          ``finished_at``
========================  ==========================================  =========================================

A 2.x key holding null is dropped (said); one that collides with what the message holds stays an unknown key
(said). Only a message with a lowercase role has its Python keys read; text content, text output, null metadata
and ``tool_call`` blocks are read in any message. The role rules apply to the message as read.

The blocks the events carry whole are read as blocks are: the tool results of an EXTERNAL_EXECUTION_RESULT
(``toolResults``, which join the message), the tool calls of a REQUIRE_USER_CONFIRM and a REQUIRE_EXTERNAL_EXECUTION
(``toolCalls``) and of a USER_CONFIRM_RESULT (``confirmResults/<i>/toolCall``), kept in metadata ``agentmsg_hitl``
(and ``agentscope_confirm_results``), and the message of an AGENT_RESULT (``result``, which ``check_results``
compares). When the current key is there too: the same value, the legacy key is dropped (said); another value, the legacy
key stays as an unknown key (said), since neither value may be lost. A legacy value of no shape that maps stays as
an unknown key (said). Nothing here changes its input: a mapped object is a copy.
"""

from __future__ import annotations

import re
from typing import Any

from agentmsg._codec.jsontext import (  # (the reducer's parse: the same text in every runtime)
    as_given,
    deep_value_pointer,
    deeper_than,
    depth_error,
    parse_arguments,
)
from agentmsg._codec.limits import limits
from agentmsg.errors import Problem, pointer_of, wrong_type

__all__ = [
    "LEGACY_EVENT_TYPES",
    "RULE",
    "block",
    "event",
    "message",
    "read_legacy_keys",
    "read_legacy_keys_checked",
    "refuse",
    "same",
    "tell",
    "written_at",
]

RULE = "legacy-key"
_OCTETS = "application/octet-stream"
#: The usage keys a MODEL_CALL_END may carry on itself (the seed's flat inputTokens / outputTokens): every key the
#: usage schema declares.
_USAGE_KEYS: tuple[str, ...] | None = None
#: The event types that may hold a legacy key (anything else is never looked at).
LEGACY_EVENT_TYPES = frozenset(
    {
        "MODEL_CALL_END",
        "DATA_BLOCK_DELTA",
        "TOOL_RESULT_DATA_DELTA",
        "EXTERNAL_EXECUTION_RESULT",
        "REQUIRE_USER_CONFIRM",
        "REQUIRE_EXTERNAL_EXECUTION",
        "USER_CONFIRM_RESULT",
        "AGENT_RESULT",
    }
)


#: Where the keys say a message is AgentScope Python's (1.x ``Msg.to_dict()``, 2.x ``Msg.model_dump()``).
_PY = "AgentScope Python"
_PY2 = "AgentScope Python 2.x"
_PYTHON_ROLES = frozenset({"user", "assistant", "system"})
#: The message keys of 2.x agentmsg's message lacks (``usage`` is read for its snake-case keys).
_PY_MSG_KEYS = ("created_at", "finished_at", "finished_reason", "structured_output", "error", "usage")
#: 2.x block keys with no home in agentmsg's block of that type (besides ``created_at`` and ``finished_at``).
_PY_BLOCK_KEYS: dict[Any, tuple[str, ...]] = {"text": ("id",), "thinking": ("id",), "tool_use": ("suggested_rules",)}
_PY_USAGE = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_input_tokens": "cachedTokens",
    "cache_creation_input_tokens": "cacheCreationInputTokens",
}
#: 2.x ``finished_reason`` values (``ReplyFinishedReason``) with a GenerateReason; ``error`` has none.
_PY_REASONS = {"completed": "MODEL_STOP", "interrupted": "INTERRUPTED", "exceed_max_iters": "MAX_ITERATIONS"}
#: 2.x's ``created_at``: ``datetime.now().isoformat()``, no zone.
_NAIVE_ISO = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?\Z")


def _usage_keys() -> tuple[str, ...]:
    global _USAGE_KEYS
    if _USAGE_KEYS is None:
        from agentmsg._codec.schemas import schema_documents

        _USAGE_KEYS = tuple(schema_documents()["chat-usage.schema.json"]["properties"])
    return _USAGE_KEYS


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value (a number is no boolean; 1 and 1.0 are the same number). Pair by
    pair, without recursion: a value nested deeper than the stack (an event given as objects, once read before its
    depth was checked) raised RecursionError out of the reducer."""
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        ta, tb = type(a), type(b)
        if ta is bool or tb is bool:
            if not (ta is tb and a == b):
                return False
        elif ta in (int, float) and tb in (int, float):
            if a != b:
                return False
        elif ta is dict and tb is dict:
            if a.keys() != b.keys():
                return False
            pairs.extend((a[k], b[k]) for k in a)
        elif ta is list and tb is list:
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b, strict=True))
        elif not (ta is tb and a == b):
            return False
    return True


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) in (int, float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _note(notes: list[Problem], pointer: str, message: str) -> None:
    notes.append(Problem(pointer, RULE, message))


def _empty(value: Any) -> bool:
    return value is None or (type(value) in (dict, list) and not value)


def _move(
    obj: dict[str, Any], old: str, new: str, value: Any, at: str, notes: list[Problem], what: str
) -> dict[str, Any]:
    """``obj`` with legacy key ``old`` read as ``new`` = ``value`` (``what`` says how, in the note), unless ``new``
    holds something already: the same value (``old`` dropped) or another one (``old`` kept as an unknown key)."""
    here = at + pointer_of((old,))
    have = obj.get(new)
    if new in obj and not _empty(have):
        if same(have, value):
            _note(notes, here, f"legacy key {old!r} (AgentScope's seed documents): dropped, {new!r} holds the same")
            return {k: v for k, v in obj.items() if k != old}
        _note(
            notes,
            here,
            f"legacy key {old!r} (AgentScope's seed documents): kept as an unknown key, {new!r} is set too, to"
            " something else",
        )
        return obj
    out = {k: v for k, v in obj.items() if k != old}
    out[new] = value
    _note(notes, here, f"legacy key {old!r} (AgentScope's seed documents): read as {new!r}{what}")
    return out


def _read_arguments(out: dict[str, Any], args: str) -> str | None:
    """A tool call's arguments text read into ``out`` as the reducer reads it: the text as ``content``, its JSON
    object as ``input`` (``{}`` and metadata ``argumentsError`` when it is none). Returns that error, or None."""
    raw, parsed, error = parse_arguments(args) if args else (args, {}, None)
    out["input"], out["content"] = parsed, raw
    if error is not None:
        meta = out.get("metadata")
        out["metadata"] = {**(meta if type(meta) is dict else {}), "argumentsError": error}
    return error


def _unread(notes: list[Problem], here: str, key: str, value: Any, wanted: str) -> None:
    _note(
        notes,
        here,
        f"legacy key {key!r} (AgentScope's seed documents) is a JSON {_json_type(value)}, not {wanted}: kept as an"
        " unknown key",
    )


def block(data: Any, notes: list[Problem], at: str = "", python: bool = False, kind: str = "content-block") -> Any:
    """A content block (parsed JSON) with its legacy keys, and those of the blocks it holds, read in their current
    form; ``data`` itself when it has none (or is no block). Notes go to ``notes``, pointers under ``at``.
    ``python``: the block is in a message AgentScope Python wrote, whose 2.x block keys are read too.

    A tool result's output blocks are read with an explicit stack, not by recursion: a tool result nested in a tool
    result's output thousands deep (an event given as objects, once read before its depth was checked) raised
    RecursionError out of the reducer. The notes come in order: a block's own, then those of its output blocks.

    Each frame is a tool result and its output list, two levels: more frames than half ``limits.max_depth`` is a
    block too deep (:class:`SizeLimitError` of ``kind``, rule ``max-depth``, at the part that crosses the limit as
    read: :func:`_past_limit`), refused before its notes, whose pointers have a step per frame, grow quadratic in its
    depth (a legacy ``result`` object is one level where the ``output`` it is read as is two: the readers' depth
    check, made first, lets it by)."""
    stack: list[_Frame] = []
    done = _own_keys(data, notes, at, python, stack)
    frames = limits.max_depth // 2
    while stack:
        if len(stack) > frames:
            raise depth_error(kind, _past_limit(stack, at))
        top = stack[-1]
        if len(top.mapped) < len(top.output):
            i = len(top.mapped)
            child = _own_keys(
                top.output[i], notes, top.where[i] if top.where else f"{top.at}/output/{i}", python, stack
            )
            if stack[-1] is top:  # else: a tool result with output blocks of its own, done below
                top.mapped.append(child)
            continue
        stack.pop()
        done = top.out
        if any(m is not b for m, b in zip(top.mapped, top.output, strict=True)):
            done = {**top.out, "output": top.mapped}
        if stack:
            stack[-1].mapped.append(done)
    return done


class _Frame:
    """A tool result whose output blocks :func:`block` is reading: the result as read so far, its output, where each
    output block was read (None: at output/<i>), and the blocks read so far."""

    __slots__ = ("at", "mapped", "out", "output", "where")

    def __init__(self, out: dict[str, Any], output: list[Any], where: list[str] | None, at: str) -> None:
        self.out, self.output, self.where, self.at = out, output, where, at
        self.mapped: list[Any] = []


def _past_limit(stack: list[_Frame], at: str) -> str:
    """Where the tool results of ``stack`` (each in the output of the one before; the first read at ``at``, as deep as
    its pointer's steps) first cross ``limits.max_depth`` as they are read, named where that was read: a tool result
    (two levels below the one holding it) or its output, one level below it (its ``result`` where it was read from
    that key)."""
    below, output = divmod(limits.max_depth - at.count("/"), 2)  # (levels past the first block to the one past)
    top = stack[min(below, len(stack) - 1)]
    if not output:
        return top.at
    return top.at + ("/output" if top.where is None else "/result")


def _own_keys(data: Any, notes: list[Problem], at: str, python: bool, stack: list[_Frame]) -> Any:
    """One block's own legacy keys read (not its output blocks'): the block as read, or, for a tool result with
    output blocks, a frame pushed on ``stack`` for them (:func:`block` reads them, then makes the block)."""
    if type(data) is not dict:
        return data
    if data.get("type") == "tool_call":
        data = _tool_call(data, notes, at)
    if python:
        data = _python_block(data, notes, at)
    kind = data.get("type")
    if kind == "tool_use" and "arguments" in data:
        return _tool_use(data, notes, at)
    if kind != "tool_result":
        return data
    out = data
    if type(out.get("output")) is str:
        out = {**out, "output": [{"type": "text", "text": out["output"]}]}
        _note(notes, at + "/output", f"tool result output is text ({_PY}): read as a list of one text block")
    if "toolUseId" in out:
        out = _tool_use_id(out, notes, at)
    where: list[str] | None = None  # where each output block was read, when not at output/<i>
    if "result" in out:
        out, where = _result(out, notes, at)
    output = out.get("output")
    if type(output) is list and output:
        stack.append(_Frame(out, output, where, at))
    return out


def _tool_call(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    """AgentScope Python 2.x's ``tool_call`` block as a ``tool_use`` block: its ``input`` text (the raw arguments)
    as ``content`` and their JSON object as ``input`` (``{}`` and metadata ``argumentsError`` when they are none)."""
    out = {**data, "type": "tool_use"}
    _note(notes, at + "/type", f"block type 'tool_call' ({_PY2}): read as 'tool_use'")
    args = data.get("input")
    if type(args) is not str:
        return out  # an object is the current form; anything else the schema reports
    if not _empty(data.get("content")) and data.get("content") != args:
        del out["input"]
        out["arguments"] = args  # the seed's text arguments: _tool_use says what becomes of them
        return _tool_use(out, notes, at)
    error = _read_arguments(out, args)
    how = "its JSON object as 'input'"
    if error is not None:
        how = f"'input' {{}} ({error}: metadata argumentsError says so)"
    _note(notes, at + "/input", f"tool call input is text ({_PY2}): read as 'content' (the raw arguments) and {how}")
    return out


def _python_block(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    """The keys of a block AgentScope Python wrote that agentmsg's block lacks: mapped where there is a home (a
    thinking ``signature`` / ``redacted_thinking_data``, a 1.x ``raw_input``, a URL source's ``media_type``), null
    ones dropped, the rest kept as unknown keys; each said."""
    kind = data.get("type")
    out = data
    own = _PY_BLOCK_KEYS.get(kind, ()) if type(kind) is str else ()  # (a type that is no string: the schema says)
    for key in (*own, "created_at", "finished_at"):
        if key not in data:
            continue
        here = f"{at}/{key}"
        if data[key] is None:
            out = {k: v for k, v in out.items() if k != key}
            _note(notes, here, f"{_PY} block key {key!r} is null: dropped, nothing to read")
        else:
            _note(notes, here, f"{_PY} block key {key!r}: kept as an unknown key (agentmsg's block has no home for it)")
    if kind == "thinking":
        out = _thinking_extras(out, notes, at)
    elif kind == "tool_use" and type(out.get("raw_input")) is str:
        out = _move(out, "raw_input", "content", out["raw_input"], at, notes, " (the raw arguments)")
    elif kind in ("data", "image", "audio", "video"):
        if "name" in out and out["name"] is None:
            out = {k: v for k, v in out.items() if k != "name"}
            _note(notes, at + "/name", f"{_PY} block key 'name' is null: dropped, nothing to read")
        source = out.get("source")
        if type(source) is dict and source.get("type") == "url" and "media_type" in source:
            moved = _move(source, "media_type", "mime_type", source["media_type"], at + "/source", notes, "")
            if moved is not source:
                out = {**out, "source": moved}
    return out


def _thinking_extras(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    """2.x's Anthropic extras of a thinking block into its metadata: ``signature``, and ``redacted_thinking_data``
    as ``redactedData`` with ``redacted`` true."""
    meta = data.get("metadata")
    if not any(k in data for k in ("signature", "redacted_thinking_data")):
        return data
    if meta is not None and type(meta) is not dict:
        return data  # the schema reports the metadata; the extras stay unknown keys
    merged = dict(meta or {})
    out = dict(data)
    for key, target in (("signature", "signature"), ("redacted_thinking_data", "redactedData")):
        if key not in data:
            continue
        value, here = data[key], f"{at}/{key}"
        if type(value) is not str or (target in merged and merged[target] != value):
            _note(notes, here, f"{_PY2} thinking key {key!r}: kept as an unknown key, metadata cannot take it")
            continue
        del out[key]
        merged[target] = value
        extra = " and metadata redacted as true" if key == "redacted_thinking_data" else ""
        if extra:
            merged["redacted"] = True
        _note(notes, here, f"{_PY2} thinking key {key!r}: read as metadata {target}{extra}")
    out["metadata"] = merged
    return out


def _tool_use(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    args = data["arguments"]
    here = at + "/arguments"
    if args is None:
        _note(notes, here, "legacy key 'arguments' (AgentScope's seed documents) is null: dropped, nothing to read")
        return {k: v for k, v in data.items() if k != "arguments"}
    if type(args) is dict:
        return _move(data, "arguments", "input", args, at, notes, "")
    if type(args) is not str:
        _unread(notes, here, "arguments", args, "an object or text")
        return data
    if not _empty(data.get("input")) or data.get("content") not in (None, args):
        return _move(data, "arguments", "content", args, at, notes, "")  # says which one holds something

    out = {k: v for k, v in data.items() if k != "arguments"}
    error = _read_arguments(out, args)
    how = " (the raw arguments) and their JSON object as 'input'"
    if error is not None:
        how = f" (the raw arguments; {error}: 'input' is {{}} and metadata argumentsError says so)"
    _note(notes, here, f"legacy key 'arguments' (AgentScope's seed documents) is text: read as 'content'{how}")
    return out


def _tool_use_id(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    value = data["toolUseId"]
    if type(value) is not str:
        _unread(notes, at + "/toolUseId", "toolUseId", value, "a string")
        return data
    return _move(data, "toolUseId", "id", value, at, notes, " (the id of the call this is the result of)")


def _result(data: dict[str, Any], notes: list[Problem], at: str) -> tuple[dict[str, Any], list[str] | None]:
    """The block with ``result`` read as ``output``, and where each output block was read (None: at output/<i>)."""
    value = data["result"]
    here = at + "/result"
    if value is None:
        _note(notes, here, "legacy key 'result' (AgentScope's seed documents) is null: dropped, nothing to read")
        return {k: v for k, v in data.items() if k != "result"}, None
    if type(value) is dict:
        output, where, what = [value], [here], " (a list of the one block)"
    elif type(value) is list:
        output, where, what = value, [f"{here}/{i}" for i in range(len(value))], ""
    elif type(value) is str:
        output, where, what = [{"type": "text", "text": value}], [here], " (a list of one text block)"
    else:
        _unread(notes, here, "result", value, "a block, a list of blocks or text")
        return data, None
    out = _move(data, "result", "output", output, at, notes, what)
    return out, where if out.get("output") is output else None


def message(data: Any, notes: list[Problem], at: str = "") -> Any:
    """A message (parsed JSON) with its legacy keys, and those of its blocks, read in their current form; ``data``
    itself when there are none. A message of AgentScope Python (a lowercase role) has its 1.x / 2.x keys read too
    (:func:`_python_message`)."""
    if type(data) is not dict:
        return data
    out = data
    role = data.get("role")
    python = type(role) is str and role in _PYTHON_ROLES
    if python:
        tool = role == "system" and _holds_tool_results(out.get("content"))
        out = _python_message(out, notes, at, "TOOL" if tool else str(role).upper())
    content = out.get("content")
    if type(content) is str:
        out = {**out, "content": [{"type": "text", "text": content}]}
        _note(notes, at + "/content", f"content is text ({_PY}): read as a list of one text block")
    elif type(content) is list:
        mapped = [block(b, notes, f"{at}/content/{i}", python, "msg") for i, b in enumerate(content)]
        if any(m is not b for m, b in zip(mapped, content, strict=True)):
            out = {**out, "content": mapped}
    if "metadata" in out and out["metadata"] is None:
        out = {k: v for k, v in out.items() if k != "metadata"}
        _note(notes, at + "/metadata", f"metadata is null ({_PY}): dropped, read as {{}}")
    return out


def _holds_tool_results(content: Any) -> bool:
    return type(content) is list and any(type(b) is dict and b.get("type") == "tool_result" for b in content)


def _python_message(data: dict[str, Any], notes: list[Problem], at: str, role: str) -> dict[str, Any]:
    """A message AgentScope Python wrote (1.x ``Msg.to_dict()``, 2.x ``Msg.model_dump()``) with its keys read in
    agentmsg's form: the role uppercase; 2.x ``created_at`` as ``timestamp`` (Java's form), ``usage`` keys in
    camel case, ``structured_output`` and ``finished_reason`` into metadata; keys with no home stay unknown keys
    (said), null ones are dropped (said)."""
    out = {**data, "role": role}
    why = ""
    if role == "TOOL":  # AgentScope Python 1.x's ReAct agent records tool results in "system" messages
        why = " (it holds tool results: a SYSTEM message holds text only, TOOL is the role of tool results)"
    _note(notes, at + "/role", f"role {data['role']!r} ({_PY}): read as {role!r}{why}")
    for key in _PY_MSG_KEYS:
        if key not in out:
            continue
        value, here = out[key], f"{at}/{key}"
        if key == "usage":  # null is agentmsg's too
            out = _python_usage(out, value, notes, here)
        elif value is None:
            del out[key]
            _note(notes, here, f"{_PY2} key {key!r} is null: dropped, nothing to read")
        elif key == "created_at":
            out = _created_at(out, value, notes, here)
        elif key in ("structured_output", "finished_reason"):
            out = _into_metadata(out, key, value, notes, here)
        else:
            _note(notes, here, f"{_PY2} key {key!r}: kept as an unknown key (agentmsg has no home for it)")
    return out


def _created_at(out: dict[str, Any], value: Any, notes: list[Problem], here: str) -> dict[str, Any]:
    from agentmsg._codec.timestamps import parse_timestamp
    from agentmsg.errors import ValidationError

    stamp = value.replace("T", " ", 1) if type(value) is str and _NAIVE_ISO.match(value) else value
    try:
        ok = type(stamp) is str and parse_timestamp(stamp) is not None
    except ValidationError:
        ok = False
    if not ok or not _empty(out.get("timestamp")):
        why = "it is no timestamp agentmsg reads" if not ok else "'timestamp' is set too"
        _note(notes, here, f"{_PY2} key 'created_at': kept as an unknown key, {why}")
        return out
    out = {k: v for k, v in out.items() if k != "created_at"}
    out["timestamp"] = stamp
    how = " (Java's form: the 'T' as a space, the fraction as given)" if stamp != value else ""
    _note(notes, here, f"{_PY2} key 'created_at': read as 'timestamp'{how}")
    return out


def _python_usage(out: dict[str, Any], value: Any, notes: list[Problem], here: str) -> dict[str, Any]:
    if type(value) is not dict or not any(k in value for k in _PY_USAGE):
        return out
    usage = {_PY_USAGE.get(k, k): v for k, v in value.items()}
    if len(usage) != len(value):  # a key in both spellings: nothing is merged, the usage stays as it is
        _note(notes, here, f"{_PY2} usage has a key in both spellings: not read (the schema says what is wrong)")
        return out
    said = ", ".join(f"{k!r} as {v!r}" for k, v in _PY_USAGE.items() if k in value)
    _note(notes, here, f"{_PY2} usage keys read in camel case: {said}")
    return {**out, "usage": usage}


def _into_metadata(out: dict[str, Any], key: str, value: Any, notes: list[Problem], here: str) -> dict[str, Any]:
    if key == "structured_output":
        meta_key, meta_value, ok = "_structured_output", value, type(value) is dict
    else:
        meta_key, meta_value = "agentscope_generate_reason", _PY_REASONS.get(value) if type(value) is str else None
        ok = meta_value is not None
    meta = out.get("metadata")
    if not ok or (meta is not None and type(meta) is not dict):
        why = "no GenerateReason says it" if key == "finished_reason" else "it is no object"
        if ok:
            why = "the metadata is no object"
        _note(notes, here, f"{_PY2} key {key!r}: kept as an unknown key, {why}")
        return out
    have = (meta or {}).get(meta_key)
    if have is not None and not same(have, meta_value):
        _note(notes, here, f"{_PY2} key {key!r}: kept as an unknown key, metadata {meta_key} is set to something else")
        return out
    out = {k: v for k, v in out.items() if k != key}
    out["metadata"] = {**(meta or {}), meta_key: meta_value}
    what = f" ({value!r} is {meta_value!r})" if key == "finished_reason" else ""
    _note(notes, here, f"{_PY2} key {key!r}: read as metadata {meta_key}{what}")
    return out


def event(data: Any, notes: list[Problem], at: str = "") -> Any:
    """An agent event (parsed JSON) with its legacy keys read in their current form; ``data`` itself when there are
    none, or when it is nested deeper than ``limits.max_depth``: such an event is not read, the reducer refuses it
    (rule ``max-depth``). Read, tool results nested N deep in tool results' output gave N notes (a ``toolUseId`` at
    each level) of pointers up to N steps long: time and memory quadratic in the event's size."""
    if type(data) is not dict:
        return data
    kind = data.get("type")
    if kind == "MODEL_CALL_END" and data.keys().isdisjoint(_usage_keys()):
        # every reply ends with one, which seldom holds a flat count: returned as it is before the depth walk, which
        # went through the whole event (its usage, metadata, grounding) on every reply
        return data
    # (a type that is no string is no legacy event's: a list or an object there was looked up in the set, a bare
    # TypeError out of read_legacy_keys, agentmsg.check and agentmsg validate)
    if type(kind) is not str or kind not in LEGACY_EVENT_TYPES or deeper_than(data, limits.max_depth):
        return data
    if kind == "MODEL_CALL_END":
        return _flat_usage(data, notes, at)
    if kind == "DATA_BLOCK_DELTA":
        if "data" in data:
            value = data["data"]
            if type(value) is not str:
                _unread(notes, at + "/data", "data", value, "base64 text")
                return data
            return _move(data, "data", "delta", value, at, notes, " (the next base64 fragment)")
        return data
    if kind == "TOOL_RESULT_DATA_DELTA":
        return _tool_result_data(data, notes, at)
    if kind == "AGENT_RESULT":
        result = data.get("result")
        mapped = message(result, notes, f"{at}/result")
        return data if mapped is result else {**data, "result": mapped}
    if kind == "USER_CONFIRM_RESULT":
        return _blocks(data, "confirmResults", notes, at, "toolCall")
    # EXTERNAL_EXECUTION_RESULT's toolResults; REQUIRE_USER_CONFIRM's and REQUIRE_EXTERNAL_EXECUTION's toolCalls
    return _blocks(data, "toolResults" if kind == "EXTERNAL_EXECUTION_RESULT" else "toolCalls", notes, at)


def _blocks(data: dict[str, Any], key: str, notes: list[Problem], at: str, inner: str | None = None) -> dict[str, Any]:
    """``data`` with the blocks of its list ``key`` read as blocks are (``inner``: each item is an object holding
    the block there, as a USER_CONFIRM_RESULT's confirmResults hold toolCall); ``data`` itself when none changes."""
    items = data.get(key)
    if type(items) is not list:
        return data
    mapped: list[Any] = []
    for i, item in enumerate(items):
        here = f"{at}/{key}/{i}"
        if inner is None:
            mapped.append(block(item, notes, here, kind="event"))
        elif type(item) is dict and inner in item:
            b = block(item[inner], notes, f"{here}/{inner}", kind="event")
            mapped.append(item if b is item[inner] else {**item, inner: b})
        else:
            mapped.append(item)
    if all(m is b for m, b in zip(mapped, items, strict=True)):
        return data
    return {**data, key: mapped}


def _flat_usage(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    keys = [k for k in _usage_keys() if k in data]
    if not keys:
        return data
    usage = data.get("usage")
    if usage is not None and type(usage) is not dict:
        for k in keys:
            _note(
                notes,
                f"{at}/{k}",
                f"legacy key {k!r} (AgentScope's seed documents) on the event: not read, 'usage' is no object (it"
                " stays an unknown key of the event)",
            )
        return data
    merged = dict(usage) if usage else {}
    out = dict(data)
    for k in keys:
        value = data[k]
        if k in merged:
            if same(merged[k], value):
                del out[k]
                _note(notes, f"{at}/{k}", f"legacy key {k!r} on the event: dropped, usage.{k} holds the same")
            else:
                _note(
                    notes,
                    f"{at}/{k}",
                    f"legacy key {k!r} on the event: not read, usage.{k} is set too, to something else (it stays an"
                    " unknown key of the event)",
                )
            continue
        merged[k] = value
        del out[k]
        _note(
            notes,
            f"{at}/{k}",
            f"legacy key {k!r} on the event (AgentScope's seed documents: MODEL_CALL_END carries the counts): read as"
            f" usage.{k}",
        )
    if merged:
        out["usage"] = merged
    return out


def _tool_result_data(data: dict[str, Any], notes: list[Problem], at: str) -> dict[str, Any]:
    value, url, media_type = data.get("data"), data.get("url"), data.get("mediaType")
    if type(value) is not str and not (value is None and type(url) is str and url):
        return data  # a block (the current form), or nothing to read
    known = type(media_type) is str and bool(media_type)
    out = {k: v for k, v in data.items() if not (k == "mediaType" and known)}
    if type(value) is str:
        # base64 text: what the seed's getData() returns; no MIME type said is application/octet-stream, as for a
        # DATA_BLOCK_START without one
        out["data"] = {
            "type": "data",
            "source": {"type": "base64", "media_type": media_type if known else _OCTETS, "data": value},
        }
        _note(
            notes,
            at + "/data",
            "legacy key 'data' (AgentScope's seed documents: base64 text): read as 'data', a data block with a base64 source",
        )
        if "url" in data:
            _note(
                notes,
                at + "/url",
                "legacy key 'url' (AgentScope's seed documents): not read, 'data' is (it stays an unknown key of the event)",
            )
        what = "media_type"
    else:
        del out["url"]
        source: dict[str, Any] = {"type": "url", "url": url}
        if known:
            source["mime_type"] = media_type
        out["data"] = {"type": "data", "source": source}
        _note(
            notes,
            at + "/url",
            "legacy key 'url' (AgentScope's seed documents): read as 'data', a data block with a url source",
        )
        what = "mime_type"
    if known:
        _note(
            notes,
            at + "/mediaType",
            f"legacy key 'mediaType' (AgentScope's seed documents): read as its source's {what}",
        )
    elif "mediaType" in data:
        _unread(notes, at + "/mediaType", "mediaType", media_type, "a MIME type")
    return out


#: The keys a value read holds that a legacy form writes under another name (the tables above): for each key as
#: read, the legacy keys it may be read from, in the same object or (metadata's, a flat usage's) the one holding it.
_WRITTEN_AS: dict[str, tuple[str, ...]] = {
    "output": ("result",),
    "id": ("toolUseId",),
    "input": ("arguments",),
    "content": ("arguments", "raw_input", "input"),
    "timestamp": ("created_at",),
    "mime_type": ("media_type",),
    "media_type": ("mediaType",),
    "delta": ("data",),
    "data": ("url",),
    "source": ("url", "data"),
    **{camel: (snake,) for snake, camel in _PY_USAGE.items()},
    "_structured_output": ("structured_output",),
    "agentscope_generate_reason": ("finished_reason",),
    "redactedData": ("redacted_thinking_data",),
    "redacted": ("redacted_thinking_data",),
    "argumentsError": ("arguments", "input"),
}


def written_at(value: Any, pointer: str) -> str:
    """Where ``value`` (parsed JSON, as written) writes what its form read by :func:`read_legacy_keys` holds at
    ``pointer``: the pointer of the same part in ``value``, through the legacy keys it was read from (a tool
    result's ``output/0`` is its ``result/0``, or ``result`` where the result was one block or text; a usage's
    ``inputTokens`` its ``input_tokens``; a MODEL_CALL_END's ``usage/inputTokens`` its own ``inputTokens``;
    metadata ``_structured_output`` the message's ``structured_output``), else as deep as ``value`` goes: always a
    pointer of ``value``, the place to look at in the document. (A step the legacy form has no level for, as the
    list a single result block is read into, is passed over.)"""
    steps = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node, path = value, list[str]()
    above: tuple[Any, list[str]] | None = None  # (the object holding node, and its path)
    for step in steps:
        if type(node) is list:
            if not (step.isdigit() and int(step) < len(node)):
                break
            above, node, path = (node, path), node[int(step)], [*path, step]
            continue
        names = (step, *_WRITTEN_AS.get(step, ()))
        here = next((n for n in names if n in node), None) if type(node) is dict else None
        if here is not None:
            above, node, path = (node, path), node[here], [*path, here]
            continue
        if above is not None and type(above[0]) is dict:
            up, at = above
            there = next((n for n in names if n in up), None)
            if there is not None:  # (metadata's key read from its holder's; a flat usage's key)
                node, path = up[there], [*at, there]
                continue
        if type(node) is not dict:
            break
    return pointer_of(path)


_READERS = {"msg": message, "content-block": block, "event": event}


def read_legacy_keys(value: Any, kind: str = "msg") -> tuple[Any, list[Problem]]:
    """``value``, parsed JSON of ``kind`` (``msg``, ``content-block`` or ``event``; any other kind has none), with
    the legacy keys of AgentScope's seed documents read in their current form (a tool_use ``arguments``, a
    tool_result ``result`` or ``toolUseId``, a MODEL_CALL_END's own ``inputTokens``..., a DATA_BLOCK_DELTA ``data``,
    a TOOL_RESULT_DATA_DELTA's ``data`` text, ``url`` and ``mediaType``; the blocks of the HITL events and the message
    of an AGENT_RESULT as blocks and messages; the keys of a message AgentScope Python wrote: a lowercase role, text
    content...), and one note per key: a
    :class:`~agentmsg.Problem` with rule ``legacy-key``, the key's pointer and what it was read as
    (docs/wire-format.md). ``value`` is not changed: a mapped object is a copy; without legacy keys the value is
    returned as it is, with no notes. The readers do this themselves (``Msg.from_json``, ``decode_messages``,
    ``block_from_dict``, the event reducer), and read a mapping given that is no dict as its dict: so does this (the
    dict is returned when it has none). A ``kind`` that is no string: a
    :class:`~agentmsg.errors.WrongTypeError` at ``/kind``."""
    # (a list or a dict was looked up among the readers: a bare TypeError; None or 1 read as a kind with none)
    if not isinstance(kind, str):
        raise wrong_type("/kind", "kind is a string: msg, content-block or event", kind)
    value = as_given(value)  # (a mapping given that is no dict, as the readers read it: its dict, its keys read)
    if deeper_than(value, limits.max_depth):  # (as every reader of JSON refuses it, at the part that crosses the limit)
        raise depth_error(kind, deep_value_pointer(value, limits.max_depth))
    return read_legacy_keys_checked(value, kind)


def read_legacy_keys_checked(value: Any, kind: str, at: str = "") -> tuple[Any, list[Problem]]:
    """:func:`read_legacy_keys` of a value the caller has held to ``limits.max_depth`` already (``loads`` read
    it, or ``check_json_value`` checked it): its depth is not walked again. ``at``: the value's pointer in the
    document holding it (a conversation's message, ``/N``: one level deeper), the prefix of the notes' pointers and
    where its depth is counted from, as ``decode_messages`` counts it."""
    notes: list[Problem] = []
    reader = _READERS.get(kind)
    return (reader(value, notes, at) if reader is not None else value), notes


def check_notes(notes: object, kind: str) -> None:
    """A reader's ``notes`` argument, checked before reading: the notes are appended to it, so it must be a list
    (a tuple cannot take them, and a copy would not give them back); else a :func:`~agentmsg.errors.wrong_type`
    error naming it."""
    if not isinstance(notes, list):
        raise wrong_type("", "notes must be a list (the notes are appended to it)", notes, kind)


def tell(found: list[Problem], notes: list[Problem] | None, kind: str, stacklevel: int) -> None:
    """Notes of a reader: into the caller's ``notes`` list when given, else as one :class:`LegacyKeyWarning`
    attributed ``stacklevel`` frames up (1: the caller of this)."""
    if notes is not None:
        notes.extend(found)
        return
    import warnings

    from agentmsg.errors import LegacyKeyWarning

    warnings.warn(LegacyKeyWarning(found, kind), stacklevel=stacklevel)


def refuse(found: list[Problem], kind: str) -> None:
    """Strict reading: legacy keys are refused (rule ``legacy-key``), each saying what a reader reads it as."""
    from agentmsg.errors import ValidationError

    raise ValidationError([Problem(p.pointer, p.rule, f"strict reading refuses it: {p.message}") for p in found], kind)
