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

The blocks the events carry whole are read as blocks are: the tool results of an EXTERNAL_EXECUTION_RESULT
(``toolResults``, which join the message), the tool calls of a REQUIRE_USER_CONFIRM and a REQUIRE_EXTERNAL_EXECUTION
(``toolCalls``) and of a USER_CONFIRM_RESULT (``confirmResults/<i>/toolCall``), kept in metadata ``agentmsg_hitl``
(and ``agentscope_confirm_results``), and the message of an AGENT_RESULT (``result``, which ``check_results``
compares). When the current key is there too: the same value, the legacy key is dropped (said); another value, the legacy
key stays as an unknown key (said), since neither value may be lost. A legacy value of no shape that maps stays as
an unknown key (said). Nothing here changes its input: a mapped object is a copy.
"""

from __future__ import annotations

from typing import Any

from agentmsg._codec.jsontext import parse_arguments  # (the reducer's parse: the same text in every runtime)
from agentmsg.errors import Problem, pointer_of

__all__ = ["LEGACY_EVENT_TYPES", "RULE", "block", "event", "message", "read_legacy_keys", "refuse", "same", "tell"]

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


def _usage_keys() -> tuple[str, ...]:
    global _USAGE_KEYS
    if _USAGE_KEYS is None:
        from agentmsg._codec.schemas import schema_documents

        _USAGE_KEYS = tuple(schema_documents()["chat-usage.schema.json"]["properties"])
    return _USAGE_KEYS


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value (a number is no boolean; 1 and 1.0 are the same number)."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if ta is dict and tb is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if ta is list and tb is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return ta is tb and bool(a == b)


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


def _unread(notes: list[Problem], here: str, key: str, value: Any, wanted: str) -> None:
    _note(
        notes,
        here,
        f"legacy key {key!r} (AgentScope's seed documents) is a JSON {_json_type(value)}, not {wanted}: kept as an"
        " unknown key",
    )


def block(data: Any, notes: list[Problem], at: str = "") -> Any:
    """A content block (parsed JSON) with its legacy keys, and those of the blocks it holds, read in their current
    form; ``data`` itself when it has none (or is no block). Notes go to ``notes``, pointers under ``at``."""
    if type(data) is not dict:
        return data
    kind = data.get("type")
    if kind == "tool_use" and "arguments" in data:
        return _tool_use(data, notes, at)
    if kind != "tool_result":
        return data
    out = data
    if "toolUseId" in out:
        out = _tool_use_id(out, notes, at)
    where: list[str] | None = None  # where each output block was read, when not at output/<i>
    if "result" in out:
        out, where = _result(out, notes, at)
    output = out.get("output")
    if type(output) is not list:
        return out
    mapped = [block(b, notes, where[i] if where else f"{at}/output/{i}") for i, b in enumerate(output)]
    if any(m is not b for m, b in zip(mapped, output, strict=True)):
        out = {**out, "output": mapped}
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

    raw, parsed, error = parse_arguments(args) if args else (args, {}, None)
    out = {k: v for k, v in data.items() if k != "arguments"}
    out["input"], out["content"] = parsed, raw
    how = " (the raw arguments) and their JSON object as 'input'"
    if error is not None:
        meta = data.get("metadata")
        out["metadata"] = {**(meta if type(meta) is dict else {}), "argumentsError": error}
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
    """A message (parsed JSON) with the legacy keys of its blocks read in their current form; ``data`` itself when
    there are none."""
    if type(data) is not dict:
        return data
    content = data.get("content")
    if type(content) is not list:
        return data
    mapped = [block(b, notes, f"{at}/content/{i}") for i, b in enumerate(content)]
    if all(m is b for m, b in zip(mapped, content, strict=True)):
        return data
    return {**data, "content": mapped}


def event(data: Any, notes: list[Problem], at: str = "") -> Any:
    """An agent event (parsed JSON) with its legacy keys read in their current form; ``data`` itself when there are
    none."""
    if type(data) is not dict:
        return data
    kind = data.get("type")
    if kind not in LEGACY_EVENT_TYPES:
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
            mapped.append(block(item, notes, here))
        elif type(item) is dict and inner in item:
            b = block(item[inner], notes, f"{here}/{inner}")
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


_READERS = {"msg": message, "content-block": block, "event": event}


def read_legacy_keys(value: Any, kind: str = "msg") -> tuple[Any, list[Problem]]:
    """``value``, parsed JSON of ``kind`` (``msg``, ``content-block`` or ``event``; any other kind has none), with
    the legacy keys of AgentScope's seed documents read in their current form (a tool_use ``arguments``, a
    tool_result ``result`` or ``toolUseId``, a MODEL_CALL_END's own ``inputTokens``..., a DATA_BLOCK_DELTA ``data``,
    a TOOL_RESULT_DATA_DELTA's ``data`` text, ``url`` and ``mediaType``; the blocks of the HITL events and the message
    of an AGENT_RESULT as blocks and messages), and one note per key: a
    :class:`~agentmsg.Problem` with rule ``legacy-key``, the key's pointer and what it was read as
    (docs/wire-format.md). ``value`` is not changed: a mapped object is a copy; without legacy keys the value is
    returned as it is, with no notes. The readers do this themselves (``Msg.from_json``, ``decode_messages``,
    ``block_from_dict``, the event reducer)."""
    notes: list[Problem] = []
    reader = _READERS.get(kind)
    return (reader(value, notes) if reader is not None else value), notes


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
