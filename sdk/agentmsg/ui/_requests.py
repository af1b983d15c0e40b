"""The inbound direction of the UI protocols: what a front end POSTs, read into agentmsg messages.

* :func:`read_chat_request`: the Vercel AI SDK's chat request (``useChat`` with ``DefaultChatTransport``: ``{id,
  messages: UIMessage[], trigger, messageId, ...}``), :func:`agentmsg.ui.ai_sdk.read_request`;
* :func:`read_run_input`: AG-UI's ``RunAgentInput`` (``threadId, runId, state, messages, tools, context,
  forwardedProps``), :func:`agentmsg.ui.agui.read_input`.

Each part of the posted chat is kept: mapped to a content block (text, reasoning -> thinking, tool parts ->
``tool_use`` + ``tool_result``, files -> media blocks), or, when no block holds it (a source, a data part, a step
boundary, a key a block has no field for), kept whole in the message's metadata (``ai_sdk_parts`` / ``ag_ui``) with a
note (rule ``ui-mapped``, the JSON pointer of the part in the body). Bad input raises
:class:`~agentmsg.ValidationError` naming the pointer and the rule (``type``, ``required``, ``enum``, ``minItems``,
``role-content``, ``max-bytes``, ``max-depth``), as the protocol's own schema refuses it; every problem at once, in
one pass over the body (linear in its size; nesting bounded by ``limits.max_depth``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from agentmsg._codec.jsontext import JsonInput, check_json_value, json_type, loads, parse_arguments
from agentmsg._codec.schemas import BASE64_DATA  # (checked where the body holds it: a problem points there)
from agentmsg.blocks import block_from_dict
from agentmsg.errors import Problem, ValidationError, pointer_of
from agentmsg.message import Msg, new_id
from agentmsg.ui._protocol import Notes, value_text

__all__ = ["ChatRequest", "RunInput", "read_chat_request", "read_run_input"]

MAPPED_RULE: Final = "ui-mapped"
#: the message metadata key that keeps what no block of an AI SDK UIMessage holds
AI_SDK_PARTS: Final = "ai_sdk_parts"
#: the message metadata key that keeps what no block or field of an AG-UI message holds
AG_UI_KEY: Final = "ag_ui"
#: the message metadata key that keeps the keys of an AG-UI content part its block does not hold
AG_UI_PARTS: Final = "ag_ui_parts"

_MEDIA_DEFAULT: Final = {"image": "image/*", "audio": "audio/*", "video": "video/*", "data": "application/octet-stream"}
_DATA_URL: Final = re.compile(r"^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$", re.S)
_USER_BLOCKS: Final = frozenset({"text", "data", "image", "audio", "video"})


@attrs.frozen
class ChatRequest:
    """An AI SDK chat request as agentmsg reads it: ``messages`` the posted UIMessages as messages, ``chat_id`` the
    body's ``id``, ``trigger`` (``submit-message`` or ``regenerate-message``), ``message_id`` (the message a
    regeneration replaces), ``extra`` the body's other keys (what the app adds with the transport's ``body``), and
    ``notes`` what was kept elsewhere than in a block (rule ``ui-mapped``, pointer into the body)."""

    messages: list[Msg]
    chat_id: str | None = None
    trigger: str | None = None
    message_id: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)
    notes: list[Problem] = attrs.field(factory=list)


@attrs.frozen
class RunInput:
    """An AG-UI ``RunAgentInput`` as agentmsg reads it: ``messages`` as agentmsg messages, the run's ids, ``state``,
    ``tools`` and ``context`` (the dicts as posted, checked against the protocol), ``forwarded_props``, ``resume``,
    ``activities`` (activity messages: UI state, no conversation turn), ``extra`` (keys the protocol does not
    declare) and ``notes`` (rule ``ui-mapped``, pointer into the body)."""

    thread_id: str
    run_id: str
    messages: list[Msg]
    parent_run_id: str | None = None
    protocol_version: str | None = None
    state: Any = None
    tools: list[dict[str, Any]] = attrs.field(factory=list)
    context: list[dict[str, Any]] = attrs.field(factory=list)
    forwarded_props: Any = None
    resume: list[dict[str, Any]] | None = None
    activities: list[dict[str, Any]] = attrs.field(factory=list)
    extra: dict[str, Any] = attrs.field(factory=dict)
    notes: list[Problem] = attrs.field(factory=list)


class _Reader:
    """What both readers share: the problems found (raised together at the end), the notes, type checks."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.problems: list[Problem] = []
        self.notes: list[Problem] = Notes()
        self._noted: set[tuple[str, str]] = set()

    def body(self, body: Mapping[str, Any] | JsonInput) -> dict[str, Any]:
        if isinstance(body, (str, bytes, bytearray, memoryview)):
            parsed = loads(body, self.kind)
        else:
            check_json_value(body, self.kind)  # (depth, JSON types: linear, no recursion)
            parsed = body
        if not isinstance(parsed, dict):
            raise ValidationError.single("", "type", f"expected a JSON object, got {json_type(parsed)}", self.kind)
        return parsed

    def fail(self, where: str, rule: str, message: str) -> None:
        self.problems.append(Problem(where, rule, message))

    def note(self, where: str, key: str, message: str, rule: str = MAPPED_RULE) -> None:
        """A note once per ``key`` (a kind of thing) and message (the pointer's first two steps)."""
        scope = "/".join(where.split("/")[:3])
        if (scope, key) not in self._noted:
            self._noted.add((scope, key))
            self.notes.append(Problem(where, rule, message))

    def get(
        self, obj: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...], required: bool = True
    ) -> Any:
        """``obj[key]`` when it is of ``kind``; None (and a problem) when it is missing and required or of
        another type. An optional key that is absent is None without a problem (``null`` included, as JSON
        readers of optional keys take it)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.fail(where, "required", f"{key!r} is required")
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            names = {"str": "string", "dict": "object", "list": "array", "bool": "boolean"}
            for py, js in names.items():
                name = name.replace(py, js)
            self.fail(where + pointer_of([key]), "type", f"{key} must be a {name}, not {json_type(value)}")
            return None
        return value

    def objects(self, obj: Mapping[str, Any], key: str, what: str, strings: tuple[str, ...]) -> list[Any]:
        """The optional list ``obj[key]`` (``[]`` when absent), each item an object with the string keys
        ``strings`` (a problem for each that is not)."""
        items: list[Any] = self.get(obj, key, "", list, required=False) or []
        for i, item in enumerate(items):
            where = f"/{key}/{i}"
            if not isinstance(item, dict):
                self.fail(where, "type", f"{what} must be an object, not {json_type(item)}")
                continue
            for name in strings:
                self.get(item, name, where, str)
        return items

    def raise_problems(self) -> None:
        if self.problems:
            raise ValidationError(self.problems, self.kind)

    def message(self, wire: dict[str, Any], where: str) -> Msg | None:
        try:
            return Msg.from_dict(wire, notes=self.notes)
        except ValidationError as exc:  # (what the UI schema lets through and a message refuses)
            self.problems.extend(p.under(where) for p in exc.problems)
            return None


def _media_block(kind: str, media: str, url: str) -> dict[str, Any]:
    """A media block of ``kind`` (image, audio, video, data): base64 from a ``data:...;base64,`` URL, else a URL
    source (never read nor downloaded here: formatters read local files and download URLs only when allowed)."""
    m = _DATA_URL.match(url)
    if m:
        return {"type": kind, "source": {"type": "base64", "media_type": media, "data": m.group(2)}}
    source: dict[str, Any] = {"type": "url", "url": url}
    if media != _MEDIA_DEFAULT[kind]:
        source["mime_type"] = media
    return {"type": kind, "source": source}


# ---------------------------------------------------------------------------------------------------------------
# The Vercel AI SDK: {id, messages: UIMessage[], trigger, messageId, ...}

_UI_ROLES: Final = {"user": "USER", "assistant": "ASSISTANT", "system": "SYSTEM"}
_TRIGGERS: Final = frozenset({"submit-message", "regenerate-message"})
_TOOL_STATES: Final = frozenset(
    {
        "input-streaming",
        "input-available",
        "approval-requested",
        "approval-responded",
        "output-available",
        "output-error",
        "output-denied",
    }
)
#: part types no block holds: kept whole in the message's metadata (``ai_sdk_parts``), required keys and their types
_WHOLE_PARTS: Final[dict[str, dict[str, type]]] = {
    "step-start": {},
    "source-url": {"sourceId": str, "url": str},
    "source-document": {"sourceId": str, "mediaType": str, "title": str},
    "custom": {"kind": str},
    "reasoning-file": {"mediaType": str, "url": str},
    "steering-message": {"id": str, "parts": list},
}
#: keys of a part its block holds (the rest are kept in ``ai_sdk_parts``); ``state: done`` goes without saying
_BLOCK_KEYS: Final = {
    "text": frozenset({"type", "text"}),
    "reasoning": frozenset({"type", "text"}),
    "file": frozenset({"type", "mediaType", "url"}),
    "tool": frozenset({"type", "toolCallId", "toolName", "input", "output", "errorText"}),
}


def read_chat_request(body: Mapping[str, Any] | JsonInput) -> ChatRequest:
    """The AI SDK chat request ``body`` (its JSON text, or the parsed object) read into agentmsg messages: see
    :func:`agentmsg.ui.ai_sdk.read_request`."""
    r = _Reader("ai-sdk chat request")
    data = r.body(body)
    chat_id = r.get(data, "id", "", str, required=False)
    trigger = r.get(data, "trigger", "", str, required=False)
    if trigger is not None and trigger not in _TRIGGERS:
        r.fail("/trigger", "enum", f"trigger {trigger[:60]!r} is not one of {', '.join(sorted(_TRIGGERS))}")
    message_id = r.get(data, "messageId", "", str, required=False)
    raw = r.get(data, "messages", "", list)
    messages: list[Msg] = []
    if raw is not None and not raw:
        r.fail("/messages", "minItems", "messages must not be empty (the AI SDK's validateUIMessages refuses it)")
    for i, ui in enumerate(raw or ()):
        msg = _ui_message(r, ui, f"/messages/{i}")
        if msg is not None:
            messages.append(msg)
    r.raise_problems()
    extra = {k: v for k, v in data.items() if k not in ("id", "messages", "trigger", "messageId")}
    return ChatRequest(messages, chat_id, trigger, message_id, extra, r.notes)


def _ui_message(r: _Reader, ui: Any, where: str) -> Msg | None:
    if not isinstance(ui, dict):
        r.fail(where, "type", f"a UIMessage must be an object, not {json_type(ui)}")
        return None
    before = len(r.problems)
    msg_id = r.get(ui, "id", where, str)
    role_name = r.get(ui, "role", where, str)
    role = _UI_ROLES.get(role_name) if role_name is not None else None
    if role_name is not None and role is None:
        r.fail(f"{where}/role", "enum", f"role {role_name[:60]!r} is not one of system, user, assistant")
    parts = r.get(ui, "parts", where, list)
    if parts is not None and not parts and role_name in ("user", "system"):
        r.fail(f"{where}/parts", "minItems", "a user or system UIMessage must have at least one part")
    content: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for j, part in enumerate(parts or ()):
        _ui_part(r, part, f"{where}/parts/{j}", j, role or "", content, kept)
    if len(r.problems) > before or role is None:
        return None
    metadata: dict[str, Any] = {}
    if kept:
        metadata[AI_SDK_PARTS] = kept
    if ui.get("metadata") is not None:
        metadata["ai_sdk_metadata"] = ui["metadata"]
        r.note(
            f"{where}/metadata", "metadata", "the UIMessage's metadata: kept in the message metadata ai_sdk_metadata"
        )
    for key in ui:
        if key not in ("id", "role", "parts", "metadata"):
            metadata.setdefault("ai_sdk_keys", {})[key] = ui[key]
            r.note(
                where + pointer_of([key]),
                f"key:{key}",
                f"{key[:60]!r}: no UIMessage key; kept in the metadata ai_sdk_keys",
            )
    if not msg_id:
        msg_id = new_id()
        r.note(f"{where}/id", "id", "an empty UIMessage id: the message gets a new one")
    wire = {"id": msg_id, "role": role, "content": content, "metadata": metadata}
    return r.message(wire, where)


def _ui_part(
    r: _Reader, part: Any, where: str, index: int, role: str, content: list[dict[str, Any]], kept: list[dict[str, Any]]
) -> None:
    if not isinstance(part, dict):
        r.fail(where, "type", f"a part must be an object, not {json_type(part)}")
        return
    kind = r.get(part, "type", where, str)
    if kind is None:
        return
    if kind.startswith("tool-") or kind == "dynamic-tool":
        _tool_part(r, part, where, index, kind, role, content, kept)
        return
    if kind.startswith("data-"):  # (its ``data`` may be absent: the AI SDK's schema takes any value)
        kept.append({"at": index, "part": part})
        r.note(
            where,
            kind,
            f"{kind}: no content block holds a data part; kept whole in the message metadata {AI_SDK_PARTS}",
        )
        return
    if kind in _WHOLE_PARTS:
        for key, key_kind in _WHOLE_PARTS[kind].items():
            r.get(part, key, where, key_kind)
        kept.append({"at": index, "part": part})
        r.note(where, kind, f"{kind}: no content block holds it; kept whole in the message metadata {AI_SDK_PARTS}")
        return
    block: dict[str, Any]
    extra: dict[str, Any] = {}
    if kind in ("text", "reasoning"):
        text = r.get(part, "text", where, str)
        if text is None:
            return
        block = {"type": "text", "text": text} if kind == "text" else {"type": "thinking", "thinking": text}
    elif kind == "file":
        media, url = r.get(part, "mediaType", where, str), r.get(part, "url", where, str)
        if media is None or url is None:
            return
        major = media.split("/", 1)[0]
        block = _media_block(major if major in ("image", "audio", "video") else "data", media, url)
        if not url:
            r.fail(f"{where}/url", "minLength", "a file part's url must not be empty")
            return
        if not media:
            r.fail(
                f"{where}/mediaType", "minLength", "a file part's mediaType must not be empty (a media block's type)"
            )
            return
        if block["source"]["type"] == "base64" and not BASE64_DATA.fullmatch(block["source"]["data"]):
            r.fail(f"{where}/url", "pattern", "the data of a ;base64, data: URL is not base64")
            return
        if block["type"] == "data" and isinstance(part.get("filename"), str):
            block["name"] = part["filename"]
        if block["source"]["type"] == "base64":  # (the block holds the base64 and the part's mediaType)
            head = url[: url.index(",") + 1]
            if head != f"data:{media};base64,":  # another media type, or parameters (name=...): kept
                extra = {"url": head}
    else:
        r.fail(
            f"{where}/type", "enum", f"{kind[:60]!r} is no UI message part type (text, reasoning, file, tool-*, ...)"
        )
        return
    if (role == "SYSTEM" and block["type"] != "text") or (role == "USER" and block["type"] not in _USER_BLOCKS):
        r.fail(where, "role-content", f"a {kind} part has no place in a {role.lower()} message (agentmsg's role rules)")
        return
    if part.get("state") not in (None, "done", "streaming"):
        r.fail(f"{where}/state", "enum", "state must be streaming or done")
        return
    held = _BLOCK_KEYS[kind] | ({"filename"} if "name" in block else set())
    _keep_rest(r, part, where, index, held, kept, ("done",), extra)
    content.append(block)


def _keep_rest(
    r: _Reader,
    part: Mapping[str, Any],
    where: str,
    index: int,
    held: frozenset[str] | set[str],
    kept: list[dict[str, Any]],
    implied_states: tuple[str, ...] = (),
    extra: Mapping[str, Any] | None = None,
) -> None:
    """The keys of ``part`` its block does not hold, kept in ``ai_sdk_parts`` with a note (``state`` when it is
    implied by the block: text that is done, a tool part's state its blocks say), and ``extra``: what the block
    leaves out of a key it holds (a data: URL's header that says more than the part's ``mediaType``)."""
    rest = {k: v for k, v in part.items() if k not in held and not (k == "state" and v in implied_states)}
    rest.update(extra or {})
    if rest:
        kept.append({"at": index, "keys": rest})
        names = ", ".join(sorted(rest))
        r.note(where, f"rest:{part.get('type')}:{names}", f"{names}: no block field holds it; kept in {AI_SDK_PARTS}")


def _tool_part(
    r: _Reader,
    part: Mapping[str, Any],
    where: str,
    index: int,
    kind: str,
    role: str,
    content: list[dict[str, Any]],
    kept: list[dict[str, Any]],
) -> None:
    call_id = r.get(part, "toolCallId", where, str)
    state = r.get(part, "state", where, str)
    name = kind[5:] if kind != "dynamic-tool" else r.get(part, "toolName", where, str)
    if call_id is None or state is None or name is None:
        return
    if state not in _TOOL_STATES:
        r.fail(f"{where}/state", "enum", f"state {state[:60]!r} is not one of {', '.join(sorted(_TOOL_STATES))}")
        return
    if role != "ASSISTANT":
        r.fail(where, "role-content", f"a tool part has no place in a {role.lower()} message (agentmsg's role rules)")
        return
    if state == "output-error":
        error = r.get(part, "errorText", where, str)
        if error is None:
            return
    use: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    given = part.get("input")
    if isinstance(given, dict):
        use["input"] = given
    elif "input" in part:  # (text, or JSON that is no object, null too: kept as the call's raw arguments, as a model's)
        _arguments(r, use, given if isinstance(given, str) and given else value_text(given), f"{where}/input")
    if state == "input-streaming":
        use["state"] = "pending"
    elif state == "approval-requested":
        use["state"] = "asking"
    elif state == "approval-responded":
        approval = part.get("approval")
        use["state"] = "allowed" if isinstance(approval, dict) and approval.get("approved") is True else "asking"
    content.append(use)
    held = _BLOCK_KEYS["tool"]
    if state in ("output-available", "output-error", "output-denied"):
        result: dict[str, Any] = {"type": "tool_result", "id": call_id, "name": name}
        if state == "output-available":
            # (no ``output``: the tool returned nothing, undefined, which JSON.stringify leaves out of the body)
            output, as_json = _tool_output(part["output"]) if "output" in part else ([], False)
            if as_json:
                r.note(
                    f"{where}/output",
                    "output-json",
                    f"a tool output of JSON type {json_type(part['output'])}, no text nor content blocks: its JSON"
                    " text in a text block (as a string of that text would be)",
                )
            result["output"], result["state"] = output, "success"
        elif state == "output-error":
            result["output"], result["state"] = [{"type": "text", "text": part["errorText"]}], "error"
        else:
            result["output"], result["state"] = [], "denied"
        content.append(result)
    # (the states the blocks say: the others, input-streaming and approval-responded, are kept)
    said = ("input-available", "approval-requested", "output-available", "output-error", "output-denied")
    # (a dynamic-tool part, a tool the app did not declare, is a call as a tool-NAME part is: its type is kept)
    _keep_rest(r, part, where, index, held, kept, said, {"type": kind} if kind == "dynamic-tool" else None)


def _arguments(r: _Reader, use: dict[str, Any], text: str, at: str) -> None:
    """A tool call's arguments ``text`` (not empty) into the tool_use ``use``: its ``input`` the JSON object they
    are; else the text kept in ``content``, input ``{}``, ``argumentsError`` the runtime-neutral text of the
    conformance vectors, and a note at ``at`` naming the rule the JSON reader found broken (``integer-range``,
    ``json``, ... at its pointer in them; ``type`` when they are JSON but no object)."""
    why: list[Problem] = []
    raw, parsed, error = parse_arguments(text, why)
    use["content"], use["input"] = raw, parsed
    if error is None:
        return
    use["metadata"] = {"argumentsError": error}
    for problem in why[:1] or [Problem("", "type", error)]:  # (JSON, but no object: its type)
        inside = f" at {problem.pointer} in them" if problem.pointer else ""
        r.note(
            at,
            f"arguments:{problem.rule}",
            f"arguments kept as text in the tool_use's content, input {{}} (rule {problem.rule}{inside}):"
            f" {problem.message}",
        )


def _tool_output(output: Any) -> tuple[list[dict[str, Any]], bool]:
    """A tool part's ``output`` as a tool result's blocks: a string is a text block; a list of content blocks (what
    agentmsg's encoder sends for a result of several blocks) those blocks; anything else its JSON text (and True)."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}], False
    if (
        isinstance(output, list)
        and output
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in output)
    ):
        try:
            for b in output:
                block_from_dict(b, strict=True)
        except ValidationError:
            pass
        else:
            return list(output), False
    return [{"type": "text", "text": value_text(output)}], True


# ---------------------------------------------------------------------------------------------------------------
# AG-UI: RunAgentInput

_AG_ROLES: Final = frozenset({"developer", "system", "assistant", "user", "tool", "activity", "reasoning"})
_AG_PARTS: Final = {"image": "image", "audio": "audio", "video": "video", "document": "data"}
_AG_SOURCES: Final = frozenset({"data", "url", "file"})
_RUN_KEYS: Final = frozenset(
    {
        "threadId",
        "runId",
        "parentRunId",
        "protocolVersion",
        "state",
        "messages",
        "tools",
        "context",
        "forwardedProps",
        "resume",
    }
)


def read_run_input(body: Mapping[str, Any] | JsonInput) -> RunInput:
    """The AG-UI ``RunAgentInput`` ``body`` (its JSON text, or the parsed object) read into agentmsg messages: see
    :func:`agentmsg.ui.agui.read_input`."""
    r = _Reader("ag-ui run input")
    data = r.body(body)
    thread_id = r.get(data, "threadId", "", str)
    run_id = r.get(data, "runId", "", str)
    parent = r.get(data, "parentRunId", "", str, required=False)
    version = r.get(data, "protocolVersion", "", str, required=False)
    tools = r.objects(data, "tools", "a tool", ("name", "description"))
    context = r.objects(data, "context", "a context item", ("description", "value"))
    resume = r.get(data, "resume", "", list, required=False)
    for i, entry in enumerate(resume or ()):
        if not isinstance(entry, dict):
            r.fail(f"/resume/{i}", "type", f"a resume entry must be an object, not {json_type(entry)}")
            continue
        r.get(entry, "interruptId", f"/resume/{i}", str)
        status = r.get(entry, "status", f"/resume/{i}", str)
        if status is not None and status not in ("resolved", "cancelled"):
            r.fail(f"/resume/{i}/status", "enum", "status must be resolved or cancelled")
    raw = r.get(data, "messages", "", list)
    messages: list[Msg] = []
    activities: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> tool name, for the tool messages after the call
    thinking: tuple[dict[str, Any], str] | None = None  # a reasoning message waiting for its assistant message
    for i, item in enumerate(raw or ()):
        where = f"/messages/{i}"
        wire = _ag_message(r, item, where, names, activities)
        if wire is None:
            continue
        if thinking is not None:
            block, at = thinking
            thinking = None
            if wire["role"] == "ASSISTANT" and not _is_reasoning(wire):
                block.setdefault("metadata", {}).setdefault(AG_UI_KEY, {})["id"] = block.pop("_id")
                wire["content"].insert(0, block)
                r.note(
                    at,
                    "reasoning-merged",
                    "a reasoning message: its thinking block opens the assistant message after it (its id in the"
                    f" block's metadata {AG_UI_KEY}.id)",
                )
            else:
                messages += _msg_or_none(r, _reasoning_alone(block, at), at)
        if _is_reasoning(wire):  # (what the reasoning message keeps besides its text goes with its block)
            block = wire["content"][0]
            if wire["metadata"]:
                block.setdefault("metadata", {}).update(wire["metadata"])
            thinking = (block, where)
            continue
        messages += _msg_or_none(r, wire, where)
    if thinking is not None:
        messages += _msg_or_none(r, _reasoning_alone(*thinking), thinking[1])
    r.raise_problems()
    extra = {k: v for k, v in data.items() if k not in _RUN_KEYS}
    if extra:
        r.note("", "extra", f"{', '.join(sorted(extra))}: no RunAgentInput key; kept in extra")
    return RunInput(
        thread_id=thread_id or "",
        run_id=run_id or "",
        messages=messages,
        parent_run_id=parent,
        protocol_version=version,
        state=data.get("state"),
        tools=tools,
        context=context,
        forwarded_props=data.get("forwardedProps"),
        resume=resume,
        activities=activities,
        extra=extra,
        notes=r.notes,
    )


def _is_reasoning(wire: Mapping[str, Any]) -> bool:
    return wire.get("_reasoning") is True


def _reasoning_alone(block: dict[str, Any], where: str) -> dict[str, Any]:
    return {"id": block.pop("_id", new_id()), "role": "ASSISTANT", "content": [block], "metadata": {}}


def _msg_or_none(r: _Reader, wire: dict[str, Any], where: str) -> list[Msg]:
    wire.pop("_reasoning", None)
    for block in wire["content"]:
        block.pop("_id", None)
    msg = r.message(wire, where)
    return [] if msg is None else [msg]


def _ag_message(
    r: _Reader, item: Any, where: str, names: dict[str, str], activities: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The wire form of one AG-UI message (a reasoning message: a thinking block, marked ``_reasoning``), or None
    (a problem, or an activity message, kept in ``activities``)."""
    if not isinstance(item, dict):
        r.fail(where, "type", f"a message must be an object, not {json_type(item)}")
        return None
    before = len(r.problems)
    msg_id = r.get(item, "id", where, str)
    role = r.get(item, "role", where, str)
    if role is not None and role not in _AG_ROLES:
        r.fail(f"{where}/role", "enum", f"role {role[:60]!r} is not one of {', '.join(sorted(_AG_ROLES))}")
        return None
    if role is None or msg_id is None:
        return None
    if role == "activity":
        r.get(item, "activityType", where, str)
        r.get(item, "content", where, dict)
        if len(r.problems) == before:
            activities.append(item)
            r.note(where, "activity", "an activity message (UI state, no conversation turn): kept in activities")
        return None
    r.get(item, "name", where, str, required=False)
    content: list[dict[str, Any]] = []
    held = {"id", "role", "name", "content"}
    ours = {"developer": "SYSTEM", "system": "SYSTEM", "user": "USER", "assistant": "ASSISTANT"}.get(role, "TOOL")
    wire: dict[str, Any] = {"id": msg_id, "role": ours, "name": item.get("name"), "content": content, "metadata": {}}
    if role in ("developer", "system", "reasoning"):
        text = r.get(item, "content", where, str)
        if text is not None:
            content.append(
                {"type": "thinking", "thinking": text} if role == "reasoning" else {"type": "text", "text": text}
            )
        if role == "reasoning":
            wire["role"], wire["_reasoning"] = "ASSISTANT", True
            if content and isinstance(item.get("encryptedValue"), str):  # (no content: refused above)
                content[0]["metadata"] = {"signature": item["encryptedValue"]}
                held.add("encryptedValue")
            if content:
                content[0]["_id"] = msg_id
    elif role == "assistant":
        text = r.get(item, "content", where, str, required=False)
        if text is not None:  # ("" too, as a user's or system's: a round trip tells it from no content)
            content.append({"type": "text", "text": text})
        calls = r.get(item, "toolCalls", where, list, required=False)
        held.add("toolCalls")
        for k, call in enumerate(calls or ()):
            use = _ag_call(r, call, f"{where}/toolCalls/{k}")
            if use is not None:
                names[use["id"]] = use["name"]
                content.append(use)
    else:  # user, tool
        given = item.get("content")
        if isinstance(given, str):
            content.append({"type": "text", "text": given})
        elif isinstance(given, list):
            kept: list[dict[str, Any]] = []
            for k, part in enumerate(given):
                block = _ag_part(r, part, f"{where}/content/{k}", k, kept)
                if block is not None:
                    content.append(block)
            if kept:
                wire["metadata"][AG_UI_PARTS] = kept
        else:
            r.get(item, "content", where, (str, list))
        if role == "tool":
            call_id = r.get(item, "toolCallId", where, str)
            error = r.get(item, "error", where, str, required=False)
            held |= {"toolCallId", "error"}
            result = {"type": "tool_result", "id": call_id, "name": names.get(call_id or ""), "output": list(content)}
            result["state"] = "error" if error is not None else _carried_state(item) or "success"
            if error is not None:
                result["output"].append({"type": "text", "text": error})
            content[:] = [result]
    if len(r.problems) > before:
        return None
    if role == "developer":
        wire["metadata"][AG_UI_KEY] = {"role": "developer"}
        r.note(
            f"{where}/role", "developer", "a developer message: a SYSTEM message (metadata ag_ui.role says developer)"
        )
    rest = _unheld(item, held, _AG_MESSAGE_KEYS)
    if rest:
        wire["metadata"].setdefault(AG_UI_KEY, {}).update(rest)
        names_ = ", ".join(sorted(rest))
        r.note(
            where, f"rest:{names_}", f"{names_}: no message field holds it; kept in the message metadata {AG_UI_KEY}"
        )
    return wire


#: the keys AG-UI declares on a message (any role), a tool call and its function: a null of one of them is the
#: optional key left out (as :meth:`_Reader.get` reads it); a null of any other key is data, kept
_AG_MESSAGE_KEYS: Final = frozenset(
    {"id", "role", "name", "content", "encryptedValue", "metadata", "subagentRunId", "toolCalls", "toolCallId", "error"}
)
_AG_CALL_KEYS: Final = frozenset({"id", "type", "function", "encryptedValue", "metadata"})
_AG_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})


def _unheld(obj: Mapping[str, Any], held: set[str] | frozenset[str], declared: frozenset[str]) -> dict[str, Any]:
    """The keys of an AG-UI object (a message, a tool call, its function) that no field of what it is read into
    holds, with their values; a null of a key AG-UI ``declared`` is that optional key left out, a null of another
    key is kept (it is data: nothing says what it means)."""
    return {k: v for k, v in obj.items() if k not in held and (v is not None or k not in declared)}


_RESULT_STATES: Final = frozenset({"success", "error", "interrupted", "denied", "running"})


def _carried_state(item: Mapping[str, Any]) -> str | None:
    """The tool result state agentmsg's own AG-UI encoder sends in a tool message's ``metadata.agentmsg.state``
    (AG-UI's tool message has only ``error``), when it is one."""
    meta = item.get("metadata")
    ours = meta.get("agentmsg") if isinstance(meta, dict) else None
    state = ours.get("state") if isinstance(ours, dict) else None
    return state if isinstance(state, str) and state in _RESULT_STATES else None


def _ag_call(r: _Reader, call: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(call, dict):
        r.fail(where, "type", f"a tool call must be an object, not {json_type(call)}")
        return None
    call_id = r.get(call, "id", where, str)
    function = r.get(call, "function", where, dict)
    if function is None or call_id is None:
        return None
    name = r.get(function, "name", f"{where}/function", str)
    arguments = r.get(function, "arguments", f"{where}/function", str)
    if name is None or arguments is None:
        return None
    if call.get("type", "function") != "function":
        r.fail(f"{where}/type", "const", "a tool call's type must be function")
        return None
    if "type" not in call:  # (ag-ui-protocol's ToolCall defaults it; @ag-ui/core's schema requires it)
        r.note(where, "call-type", "a tool call without type: read as a function call (its only type)")
    use: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    if arguments:
        _arguments(r, use, arguments, f"{where}/function/arguments")
    meta = use.setdefault("metadata", {})
    held = {"id", "type", "function"}
    if isinstance(call.get("encryptedValue"), str):
        meta["thoughtSignature"] = call["encryptedValue"]
        held.add("encryptedValue")
    rest = _unheld(call, held, _AG_CALL_KEYS)
    in_function = _unheld(function, _AG_FUNCTION_KEYS, _AG_FUNCTION_KEYS)
    if in_function:
        rest["function"] = in_function
    if rest:
        meta[AG_UI_KEY] = rest
        names = ", ".join(sorted(rest))
        r.note(where, f"call-rest:{names}", f"{names}: no tool_use field holds it; kept in its metadata {AG_UI_KEY}")
    if not meta:
        del use["metadata"]
    return use


#: the keys of an AG-UI content part (and of its source) its block holds
AG_PART_KEYS: Final = frozenset({"type", "text", "source"})
AG_SOURCE_KEYS: Final = frozenset({"type", "value", "mimeType"})


def _ag_part(r: _Reader, part: Any, where: str, index: int, kept: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One AG-UI content part as a block; the part's keys the block has no field for (its ``id``, ``metadata``, a
    file source's ``provider``, ...) kept in ``kept`` (``{"at": <index>, "keys": {...}}``, the source's under
    ``source``) with a note."""
    block = _ag_part_block(r, part, where)
    if block is None:
        return None
    rest = {k: v for k, v in part.items() if k not in AG_PART_KEYS}
    source = part.get("source")
    if isinstance(source, dict):
        extra = {k: v for k, v in source.items() if k not in AG_SOURCE_KEYS}
        if extra:
            rest["source"] = extra
    if rest:
        kept.append({"at": index, "keys": rest})
        names = ", ".join(sorted(rest))
        r.note(where, f"part-rest:{names}", f"{names}: no block field holds it; kept in {AG_UI_PARTS}")
    return block


def _ag_part_block(r: _Reader, part: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        r.fail(where, "type", f"a content part must be an object, not {json_type(part)}")
        return None
    kind = r.get(part, "type", where, str)
    if kind is None:
        return None
    if kind == "text":
        text = r.get(part, "text", where, str)
        return None if text is None else {"type": "text", "text": text}
    if kind not in _AG_PARTS:
        r.fail(f"{where}/type", "enum", f"{kind[:60]!r} is no AG-UI content part (text, image, audio, video, document)")
        return None
    source = r.get(part, "source", where, dict)
    if source is None:
        return None
    at = f"{where}/source"
    value = r.get(source, "value", at, str)
    source_kind = r.get(source, "type", at, str)
    mime = r.get(source, "mimeType", at, str, required=source_kind == "data")
    if value is None or source_kind is None:
        return None
    if source_kind not in _AG_SOURCES:
        r.fail(f"{at}/type", "enum", f"source type {source_kind[:60]!r} is not one of data, url, file")
        return None
    if mime == "":
        r.fail(f"{at}/mimeType", "minLength", "a source's mimeType must not be empty (a media block's type)")
        return None
    if source_kind == "data" and not BASE64_DATA.fullmatch(value):
        r.fail(f"{at}/value", "pattern", "the value of a data source is not base64")
        return None
    if source_kind != "data" and not value:
        r.fail(f"{at}/value", "minLength", f"the value of a {source_kind} source must not be empty")
        return None
    ours = _AG_PARTS[kind]
    if source_kind == "data":
        return {"type": ours, "source": {"type": "base64", "media_type": mime or "", "data": value}}
    src: dict[str, Any] = {"type": "url", "url": value}
    if mime is not None:
        src["mime_type"] = mime
    if source_kind == "file":  # (a provider's file id: a URL source as the decoder of AG-UI's stream reads it)
        r.note(at, "file-source", "a file source (a provider's file id): read as a URL source")
    return {"type": ours, "source": src}
