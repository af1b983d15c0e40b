"""OpenAI Responses API: the spec, the request formatter, and the reader of whole responses and typed SSE events.

Layout (docs/formatters.md has the full rules): the leading SYSTEM messages -> ``instructions`` (a later one stays in
place as a ``system`` input item); USER -> a ``user`` message item (a lone text as a string, else ``input_text`` /
``input_image`` / ``input_file`` parts); ASSISTANT -> its blocks as items in their order: texts as an ``assistant``
message, each call a ``function_call`` item, this API's reasoning (thinking metadata ``itemId``) a ``reasoning`` item
with its id, summary and ``encrypted_content`` (the thinking blocks of one item, however many, rebuild that one
item); each tool result -> a ``function_call_output`` item (its media as parts of ``output``). No request is stored
by default (``store: false``: the conversation is replayed whole), and a request that may produce reasoning asks for
its encrypted content (``include: ["reasoning.encrypted_content"]``) so that the next request can replay it.

Replies: each reasoning item's summary parts (and ``reasoning_text`` parts) are thinking blocks, in order, each with
metadata ``itemId`` (and ``reasoningText: true`` for a ``reasoning_text`` part), an empty part too (marked
``summaryText: true`` when it is a summary part); the item's ``encrypted_content`` is the signature of its last block
(an item of no part is one empty thinking block, unmarked). Streams are read by their typed
events (``response.output_text.delta``, ``response.function_call_arguments.delta``,
``response.reasoning_summary_text.delta``, ``response.completed``, ...), routed by ``output_index``; the completed
item (``response.output_item.done``) is the one kept, as the API's documentation asks. Blocks are in ``output_index``
order, whole and streamed: an item that comes before an earlier one waits until the items before it are done.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from agentmsg._codec.jsontext import json_type
from agentmsg.blocks import HintBlock, ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.errors import ValidationError
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request import context as F
from agentmsg.providers._request import structured as S
from agentmsg.providers._request.chat import ChatWalk, custom_input, refusal_at
from agentmsg.providers._request.common import WEB_URL, media_kind
from agentmsg.providers._request.context import Context, FormatOptions, FormattedRequest
from agentmsg.providers._request.fields import field_table, mapped, reported
from agentmsg.providers._request.run import Draft, run_format, usable_choice
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._request.tools import ToolChoice, ToolDef, native_chosen
from agentmsg.providers._request.walk import split_at
from agentmsg.providers._response.builder import StreamBuilder
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ, THINK_TAGS, ReplyField
from agentmsg.providers._response.payload import as_object, safe_int, usage_dict
from agentmsg.providers._response.reader import PayloadReader, value_at
from agentmsg.providers.base import Entry, OwnTools, Spec
from agentmsg.providers.openai import TOKENS as CHAT_TOKENS
from agentmsg.providers.spec import own_tool_name

__all__ = [
    "ITEM_ID",
    "PROVIDER",
    "PROVIDERS",
    "REASONING_TEXT",
    "SPEC",
    "SUMMARY_TEXT",
    "Reader",
    "StreamParser",
    "format_request",
    "parse_response",
    "parse_stream",
    "response_events",
]

#: thinking metadata: the id (``rs_...``) of the reasoning item the block is a part of
ITEM_ID: Final = F.ITEM_ID
#: thinking metadata: True when the block is a ``reasoning_text`` part (raw reasoning), not a summary part
REASONING_TEXT: Final = F.REASONING_TEXT
#: thinking metadata: True when the block is an empty ``summary_text`` part (sent back as one), not the one empty block
#: that an item of no part keeps (its carrier); a summary part with text needs no mark
SUMMARY_TEXT: Final = F.SUMMARY_TEXT

# ---- spec --------------------------------------------------------------------------------------------------

_NO_MEDIA: Final = reported("media-unsupported", note="the video is a text placeholder: no video parts")
FIELDS: Final = field_table(
    {
        "message.name": mapped(
            "name-dropped", note="no name field (said once per request); in multi-agent mode, in the text"
        ),
        "tool_use.content": mapped(
            "tool-arguments-invalid",
            "field-dropped",
            note="the function_call's arguments, byte for byte when it is the JSON of input",
        ),
        "thinking.thinking": mapped(
            "thinking-dropped",
            "thinking-demoted",
            note="a reasoning item's summary (or reasoning_text) part: this API's reasoning with its item id (metadata"
            " itemId); other reasoning is said",
        ),
        "thinking.metadata.signature": mapped(
            "thinking-dropped", note="the reasoning item's encrypted_content, byte for byte"
        ),
        "message.metadata.agentmsg_refusal": mapped(
            note="the refusal (the message's last text block) goes back as a refusal part of the output message its"
            " item id is kept for (the providerBlock carrier the reader keeps for a message holding a refusal or a"
            " phase); an assistant message item of no id takes text only (the openai package's"
            " EasyInputMessageParam): there it is the message's text"
        ),
        "thinking.metadata.providerBlock": mapped(
            "provider-tool-dropped",
            "field-dropped",
            note="a message item's id and phase (the reader's carrier), back on the assistant text before it (with no"
            " text before it: field-dropped); another provider's block said",
        ),
        "thinking.metadata.redacted": reported("thinking-dropped", note="redacted reasoning cannot be sent"),
        "thinking.metadata.redactedData": reported("thinking-dropped", note="redacted reasoning cannot be sent"),
        "tool_use.metadata.thoughtSignature": reported("signature-dropped", note="no field for a call's signature"),
        "tool_result.state": reported("tool-result-state-dropped", note="a function_call_output has no error field"),
        **{f"video.{k}": _NO_MEDIA for k in ("fps", "maxFrames", "minPixels", "maxPixels", "totalPixels")},
        "data.name": mapped("field-dropped", note="an input_file's filename; else not sent (field-dropped)"),
    }
)


def media_placeholder(block: Any, in_result: bool = False, options: Any = None) -> str | None:
    """Why the Responses API's request sends a medium (of a user message or a tool result's output) as a text
    placeholder naming it (None: it is sent as a part): it takes text, images and files, no audio or video. The
    count reads it from the token profile (``TokenProfile.media_placeholder``, whose arguments it takes: ``in_result``
    and ``options`` change nothing)."""
    kind = media_kind(block)[0]
    return None if kind in ("image", "file") else f"{kind} (text, images and files only)"


#: the Responses API's built-in tools (``tool_param.py`` of the openai SDK; ``function`` and ``custom`` aside)
_OWN_TYPES: Final = frozenset(
    {
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "file_search",
        "code_interpreter",
        "mcp",
        "image_generation",
        "computer",
        "computer_use_preview",
        "local_shell",
        "shell",
        "apply_patch",
        "tool_search",
        "namespace",
        "programmatic_tool_calling",
    }
)


def _own_tool(tool: Mapping[str, Any]) -> str | None:
    """The name of one of the Responses API's built-in tools (its ``name``, else its type); None for any other
    definition."""
    kind = tool.get("type")
    if not isinstance(kind, str) or kind not in _OWN_TYPES:
        return None
    return own_tool_name(tool, kind)


def _mcp_choice(choice: Mapping[str, Any]) -> str | None:
    """How a refusal names what a tool_choice forcing an MCP server's tool forces (``tool_choice_mcp_param.py``:
    ``{"type": "mcp", "server_label": L, "name"?: N}``); None for any other tool_choice."""
    label, name = choice.get("server_label"), choice.get("name")
    if (
        choice.get("type") != "mcp"
        or not isinstance(label, str)
        or not choice.keys() <= {"type", "server_label", "name"}
    ):
        return None
    if name is not None and not isinstance(name, str):
        return None
    return f"the MCP server {label!r}" if name is None else f"tool {name!r} of the MCP server {label!r}"


def _mcp_chooses(choice: Mapping[str, Any], tool: Mapping[str, Any]) -> bool:
    """Whether ``tool`` is the MCP server an MCP tool_choice forces (an ``mcp`` tool of its ``server_label``)."""
    return tool.get("type") == "mcp" and tool.get("server_label") == choice.get("server_label")


SPEC: Final = Spec(
    name="openai-responses",
    title="OpenAI Responses",
    base_url="https://api.openai.com/v1",
    env=("OPENAI_API_KEY",),
    auth="bearer",
    default_model="gpt-5",
    families=("openai-responses",),
    fields=FIELDS,
    custom_tools=True,  # (free-text input, GPT-5: custom_tool_param.py)
    # a built-in tool is forced by its type, those tool_choice_types_param.py takes
    own_tools=OwnTools(
        recognize=_own_tool,
        types=", ".join(sorted(_OWN_TYPES)),
        by_type=True,
        choice=_mcp_choice,
        chooses=_mcp_chooses,
        forced=frozenset(
            {
                "file_search",
                "web_search_preview",
                "web_search_preview_2025_03_11",
                "computer",
                "computer_use_preview",
                "computer_use",
                "image_generation",
                "code_interpreter",
            }
        ),
    ),
    # the same models and vocabulary as Chat Completions behind another request shape; its framing is taken to be
    # Chat Completions' (not measured: no recorded Responses request with its official count was at hand), each
    # input item framed as a message; a tool result's media go in its function_call_output, not again in a user
    # message (result_text); no speaker name is sent (name-dropped)
    tokens=attrs.evolve(
        CHAT_TOKENS,
        result_text=False,
        per_name=0,
        items=True,
        thinking="items",
        leading_system=True,
        own_reasoning="items",
        result_join="texts",  # (a result of texts alone: one output string; else output parts)
        media_placeholder=media_placeholder,
    ),
)
DEFAULT_MODEL: Final = SPEC.default_model
#: the built-in tools a tool_choice forces by type (the spec's)
_FORCED: Final = SPEC.own_tools.forced if SPEC.own_tools is not None else frozenset()

_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,64}")
#: generation parameters the Responses API names otherwise, or takes none of (said, param-dropped)
_PARAMS: Final[Mapping[str, str | None]] = {
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
    "top_k": None,
    "thinking_budget": None,
    "seed": None,
    "stop": None,
    "frequency_penalty": None,
    "presence_penalty": None,
    "n": None,
    "logprobs": None,
    "stream_options": None,
    "logit_bias": None,
    "modalities": None,
    "audio": None,
    "prediction": None,
    "web_search_options": None,
    "functions": None,
    "function_call": None,
}
_ENCRYPTED: Final = "reasoning.encrypted_content"
#: models that reason (the API refuses ``include: reasoning.encrypted_content`` for the others)
_REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5|gpt-oss|codex)", re.IGNORECASE)


# ---- request -----------------------------------------------------------------------------------------------


def format_request(
    messages: Sequence[Msg],
    *,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    agent_name: str | None = None,
    stream: bool = False,
    strict: bool = False,
    options: FormatOptions | Mapping[str, Any] | None = None,
    structured_output: StructuredOutputLike | None = None,
    **params: Any,
) -> FormattedRequest:
    """Format a conversation as an OpenAI Responses request (``POST /responses``).

    ``params``: ``max_tokens`` (-> ``max_output_tokens``), ``reasoning_effort`` (-> ``reasoning.effort``),
    ``verbosity`` (-> ``text.verbosity``), ``reasoning``, ``temperature``, ``top_p``, ``parallel_tool_calls``,
    ``store`` (default false), ``include`` (a list of strings; another type raises :class:`~agentmsg.ValidationError`), ``text``, ...
    pass through; ``stop``, ``seed``, ``top_k``,
    ``frequency_penalty``, ``presence_penalty``, ``n``, ``thinking_budget`` and Chat Completions' ``logit_bias``,
    ``modalities``, ``audio``, ``prediction``, ``web_search_options``, ``functions``, ``function_call`` are not
    taken (param-dropped). ``structured_output`` (or a ``response_format`` parameter):
    ``text.format``. Raises :class:`~agentmsg.ValidationError` for bad input, refused media, and with ``strict`` for
    every lossy or error diagnostic."""

    def build(ctx: Context, msgs: Sequence[Msg], tool_defs: list[ToolDef], choice: ToolChoice | None) -> Draft:
        extra = dict(params)
        store = extra.pop("store", None)
        walk = _Walk(ctx, multi_agent, agent_name, stored=store is True)
        items = walk.run(msgs)
        F.require_turns(items, ctx.provider, system_beside=True)
        name = model or SPEC.default_model
        body: dict[str, Any] = {"model": name}
        if walk.instructions:
            body["instructions"] = "\n".join(walk.instructions)
        body["input"] = items
        if stream:
            body["stream"] = True
        want = S.asked(ctx, extra)
        reading: dict[str, Any] = {}
        text_format = None
        if want is not None:
            if want.output is not None and want.output.mode == "tool":
                tool_defs, choice, reading = S.as_tool(ctx, want, tool_defs, choice)
            else:
                response_format = S.chat_response_format(ctx, want, msgs)
                text_format = _text_format(response_format) if response_format is not None else None
                reading = S.reading(want)
        if tool_defs:
            body["tools"] = _tools(tool_defs, ctx)
        choice = usable_choice(ctx, choice, tool_defs)
        if choice is not None:
            body["tool_choice"] = _tool_choice(choice, ctx, tool_defs)
        if text_format is not None:
            text = extra.pop("text", None)
            text = text if isinstance(text, Mapping) else {}
            if text.get("format") is not None:  # (two ways of saying the format: refused, not one replaced)
                F.refuse_built("text", "text.format", {"text.format": None})
            body["text"] = {**text, "format": text_format}
        verbosity = extra.pop("verbosity", None)
        if verbosity is not None:  # (Chat Completions' verbosity is this API's text.verbosity)
            text = body.get("text")
            if text is None and isinstance(extra.get("text"), Mapping):
                text = extra.pop("text")
            text = dict(text or {})  # (a text parameter of another type stays: refused as the request's text)
            if text.get("verbosity") is not None:
                F.refuse_built("verbosity", "text.verbosity", {"text.verbosity": None})
            body["text"] = {**text, "verbosity": verbosity}
        effort = extra.pop("reasoning_effort", None)
        reasoning = extra.pop("reasoning", None)
        if effort is not None or reasoning is not None:
            body["reasoning"] = {**(reasoning if isinstance(reasoning, Mapping) else {})}
            if effort is not None:
                # (two names of one field: refused, as apply_params refuses max_tokens with max_output_tokens)
                if body["reasoning"].get("effort") is not None:
                    F.refuse_built("reasoning_effort", "reasoning.effort", {"reasoning.effort": None})
                body["reasoning"]["effort"] = effort
        body["store"] = bool(store) if store is not None else False
        include = extra.pop("include", None)
        if include is not None and not isinstance(include, (list, tuple)):
            # (the API takes an array; a string would go as given and be refused there, and a wrapped one would
            # hide a caller's mistake, such as a comma-separated list: refused here, naming the field)
            raise ValidationError.single(
                "/params/include",
                "type",
                f"include must be a list of strings (['reasoning.encrypted_content']), not a {type(include).__name__}:"
                f" {include!r:.80}",
            )
        include = list(include) if include is not None else []
        if (
            not body["store"]
            and isinstance(include, list)
            and _ENCRYPTED not in include
            and ("reasoning" in body or walk.replayed or _REASONING_MODEL.match(name))
        ):
            include.append(_ENCRYPTED)  # (stateless: the next request replays the reasoning by its encrypted content)
        if include:
            body["include"] = include
        F.apply_params(ctx, extra, _PARAMS, body)
        return Draft(body=body, path="/responses", model=name, parser_options=reading)

    return run_format(
        SPEC,
        messages,
        build,
        tools=tools,
        tool_choice=tool_choice,
        stream=stream,
        strict=strict,
        options=options,
        tool_name_ok=_NAME_OK,
        structured_output=structured_output,
        model=model,
        params=params,
    )


def _tools(tools: list[ToolDef], ctx: Context) -> list[dict[str, Any]]:
    """Function tools, flat (``{type, name, description, parameters, strict}``). ``strict`` is always sent: a tool
    that does not say is sent ``strict: false``, as Chat Completions takes it (the Responses API would make it
    strict). A custom tool (free-text input) is flat too (``{type: custom, name, description, format}``). The API's
    own tools (``web_search``, ``file_search``, ``mcp``...) go as given, in their place."""
    out = []
    for t in tools:
        if t.native is not None:
            out.append(t.native[1])
            continue
        kind = "function" if t.custom is None else "custom"
        tool: dict[str, Any] = {"type": kind, "name": ctx.tool_name(t.name, t.pointer + "/name")}
        if t.description is not None:
            tool["description"] = t.description
        if t.custom is not None:
            if t.custom:  # (flat, as this API has it: tools.py took either spelling)
                tool["format"] = dict(t.custom)
            out.append(tool)
            continue
        tool["parameters"] = t.parameters
        tool["strict"] = bool(t.strict)
        out.append(tool)
    return out


def _tool_choice(choice: ToolChoice, ctx: Context, tools: list[ToolDef]) -> Any:
    if choice.own is not None:  # (an MCP server's tool: run_format found its server among the tools)
        return choice.own[1]
    native = native_chosen(choice, tools)
    if native is not None:  # (a built-in tool is forced by its type, those the API takes so)
        kind = native.native[1]["type"] if native.native is not None else None
        if kind not in _FORCED:
            raise ValidationError.single(
                "/tool_choice",
                "enum",
                f"tool_choice names {kind!r}, a built-in tool the Responses API cannot force (it forces "
                f"{', '.join(sorted(_FORCED))})",
            )
        return {"type": kind}
    if choice.mode == "tool":
        kind = "custom" if choice.custom else "function"
        return {"type": kind, "name": ctx.tool_name(choice.name or "", "/tool_choice")}
    return choice.mode


def _text_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``response_format`` as the Responses ``text.format`` (``json_schema`` flat)."""
    if response_format.get("type") == "json_schema" and isinstance(response_format.get("json_schema"), Mapping):
        return {"type": "json_schema", **response_format["json_schema"]}
    return dict(response_format)


class _Walk(ChatWalk):
    """The conversation as input items (a flat list, as Chat's messages are, but an assistant's blocks are items of
    their own, in their order)."""

    send_name = False
    typed_text = False

    def __init__(self, ctx: Context, multi: bool, agent: str | None, *, stored: bool) -> None:
        super().__init__(ctx, multi, agent)
        self.stored = stored
        self.instructions: list[str] = []
        self.replayed = False  # reasoning items of this API were replayed
        self.where: dict[int, tuple[int, int]] = {}  # id() of a reasoning item -> its first block's place
        #: id() of an assistant message item whose text ends with a refusal (refusal_at) -> (the text before it,
        #: the refusal): a refusal part where the item goes back as the output message of its id (provider_part)
        self.refusals_in: dict[int, tuple[str, str]] = {}
        #: the call ids of the custom tool calls sent (custom_tool_call items): their results are custom_tool_call_output
        self.custom_ids: set[str] = set()

    # ---- parts ----

    def text_part(self, text: str) -> dict[str, Any]:
        return {"type": "input_text", "text": text}

    def user_content(self, parts: list[dict[str, Any]]) -> Any:
        if len(parts) == 1 and parts[0].get("type") == "input_text":
            return parts[0]["text"]
        return parts

    def inline_image(self, b: Any) -> dict[str, Any] | None:
        if b.min_pixels is not None or b.max_pixels is not None:
            return None
        src = b.source
        if src.type == "base64":
            return {
                "type": "input_image",
                "image_url": f"data:{src.media_type.lower()};base64,{src.data}",
                "detail": "auto",
            }
        if src.url.startswith(WEB_URL):
            return {"type": "input_image", "image_url": src.url, "detail": "auto"}
        return None

    def media_part(self, b: Any, pointer: str) -> dict[str, Any]:
        ctx = self.ctx
        if type(b) is ImageBlock:
            usual = self.inline_image(b)
            if usual is not None:
                return usual
        why = media_placeholder(b)
        if why is not None:
            return self.placeholder(b, pointer, why)
        kind, _ = media_kind(b)
        if kind == "image":
            F.media_options(b, (), ctx, pointer)
            m = ctx.media.resolve(b.source, pointer, inline=False)
            F.name_not_sent(b, ctx, pointer)
            return {"type": "input_image", "image_url": m.url or m.data_uri(), "detail": "auto"}
        m = ctx.media.resolve(b.source, pointer, inline=False)  # (a file)
        part: dict[str, Any] = {"type": "input_file"}
        name = getattr(b, "name", None)
        if m.url is not None:
            part["file_url"] = m.url
            if name:
                F.name_not_sent(b, ctx, pointer)
        else:
            part["filename"] = name or ("document.pdf" if m.mime == "application/pdf" else "file")
            part["file_data"] = m.data_uri()
        return part

    # ---- messages ----

    def run(self, msgs: Sequence[Msg], start: int = 0) -> list[dict[str, Any]]:
        self.first = next((i for i, m in enumerate(msgs) if m.role is not MsgRole.SYSTEM), len(msgs))
        return super().run(msgs, start)

    def system_message(self, msg: Msg, i: int) -> None:
        if i > self.first:  # a system message in the conversation: an input item in its place
            ChatWalk.system_message(self, msg, i)
            return
        texts = []
        for j, b in enumerate(_blocks(msg)):
            if type(b) is TextBlock:
                texts.append(b.text)
            else:
                self.ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a system message")
        if msg.name:
            self.ctx.names_dropped.append(i)
        self.instructions.append("\n".join(texts))

    def text_turn(self, role: MsgRole, text: str, msg: Msg, i: int) -> bool:
        self.out.append({"role": "user" if role is MsgRole.USER else "assistant", "content": text})
        if msg.name and not self.multi:
            self.ctx.names_dropped.append(i)
        return True

    def assistant_message(self, msg: Msg, i: int) -> bool:
        ctx = self.ctx
        quick = self.quick
        looked = quick.text and quick.call and quick.thinking is not None
        thinking_keys = quick.thinking
        other = self.multi and not F.is_current_agent(msg, self.agent)
        label = f"[{F.speaker_label(msg)}]: " if other else ""
        items: list[dict[str, Any]] = []
        texts: list[str] = []  # the texts of the message item being built
        reasoning: dict[str, Any] | None = None  # the reasoning item being built (its thinking blocks follow)
        results: list[tuple[ToolResultBlock, int]] = []
        open_calls = ctx.open_calls
        refusal_j = -1 if other else refusal_at(msg)
        refusal: list[str] = []  # the refusal, when it is the last of ``texts``

        def flush() -> None:
            if texts:
                items.append({"role": "assistant", "content": "\n".join(texts)})
                if refusal:
                    self.refusals_in[id(items[-1])] = ("\n".join(texts[:-1]), refusal.pop())
                texts.clear()

        content = _blocks(msg)
        stop = 0  # where the next piece starts (0: none; Walk.assistant_message)
        start = ctx.before_piece + 1  # (a later piece's first block: Walk.next_piece)
        for j, b in enumerate(content[start:] if start else content, start):
            t = type(b)
            if b.unknown_keys:
                looked = False
            if t is ThinkingBlock:
                meta = b.metadata
                if meta and thinking_keys and not thinking_keys.isdisjoint(meta):
                    looked = False
                if meta and (F.PROVIDER_BLOCK in meta or F.CITATIONS in meta):
                    if not other and meta.get("provider") in self.ctx.families:
                        F.stand_in_said(self.ctx, b, (i, j), "its provider data")  # (sent; dropped is said by carrier)
                    flush()  # (a message item's carrier follows its text: it goes back on that item)
                    self.carrier(meta, i, j, items[-1] if items else None, other)
                    continue
                part = self._reasoning(b, i, j, other)
                if type(part) is str:  # (reasoning='text': sent as text, said)
                    texts.append(part)
                    continue
                if part is None:
                    continue
                item_id, encrypted, kind, text = part
                if reasoning is None or reasoning["id"] != item_id or items[-1] is not reasoning:
                    flush()
                    reasoning = {"type": "reasoning", "id": item_id, "summary": []}
                    self.where[id(reasoning)] = (i, j)
                    items.append(reasoning)
                    self.replayed = True
                if kind == "content":
                    reasoning.setdefault("content", []).append({"type": "reasoning_text", "text": text})
                elif kind == "summary":  # (None: the empty block of an item of no part)
                    reasoning["summary"].append({"type": "summary_text", "text": text})
                if encrypted:
                    reasoning["encrypted_content"] = encrypted
                continue
            if t is TextBlock:
                if not b.text:
                    ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty text block not sent")
                    continue
                if label:
                    texts.append(label + b.text)
                    label = ""
                    if not start:  # (said once a message: each piece's first text is labelled)
                        F.prefix_name(ctx, msg, i)
                else:
                    texts.append(b.text)
                if j == refusal_j:
                    refusal[:] = [b.text]
            elif t is ToolUseBlock:
                flush()
                cid = b.id
                tool = ctx.tool_name_cache.get(b.name) or ctx.tool_name(b.name, f"/{i}/content/{j}/name")
                if b.metadata and b.metadata.get("toolType") == "custom":
                    # an OpenAI custom tool's call (free-text input): back as one, its result as its output
                    items.append({"type": "custom_tool_call", "call_id": cid, "name": tool, "input": custom_input(b)})
                    self.custom_ids.add(cid)
                else:
                    # (a function's call of an id a custom call had before, ids a provider reuses turn by turn: its
                    # result is a function_call_output)
                    self.custom_ids.discard(cid)
                    if b.content is None:
                        arguments = F.json_text(b.input)
                    else:
                        arguments = F.tool_arguments(b, ctx, f"/{i}/content/{j}")[1]
                    items.append({"type": "function_call", "call_id": cid, "name": tool, "arguments": arguments})
                open_calls[cid] = (cid, tool, b.name, i, j)
                if b.metadata and b.metadata.get("thoughtSignature"):
                    ctx.report(
                        f"/{i}/content/{j}", "signature-dropped", f"{ctx.provider} has no field for a call's signature"
                    )
            elif t is ToolResultBlock:
                results.append((b, j))
                looked = False
                stop = split_at(content, j)
                if stop:  # (more of the reply after the results: the next piece, its items after their outputs)
                    for k in range(j + 1, stop):  # (the hints right after the results)
                        self._hint(content[k], i, k)
                    break
            elif t is HintBlock:
                self._hint(b, i, j)
                looked = False
            else:
                looked = False
                tag = F.block_label(b)
                ctx.report(
                    f"/{i}/content/{j}",
                    "media-unsupported",
                    f"{b.type} in an assistant turn sent as a text placeholder",
                )
                texts.append(tag)
        flush()
        if stop and label and not start:  # (no text of this piece holds the label: a later one's does)
            F.prefix_name(ctx, msg, i)
        if items:
            self.out.extend(items)
            if msg.name and (label or not self.multi):  # (another agent's name is in its first text: with none, none)
                ctx.names_dropped.append(i)
        elif results and msg.name:  # results alone: sent as a tool message's, whose name is said in every mode
            ctx.names_dropped.append(i)
        elif not results and not start:  # (a later piece left out: the pieces before it sent their results)
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
        for b, j in results:
            self._result(b, i, j)
        if stop:
            return self.next_piece(msg, i, stop) and looked
        return looked

    def between(self, msg: Msg, i: int) -> bool:
        """The text goes before the run of ``function_call`` (and ``custom_tool_call``) items the request ends with: into
        the assistant message item right before them (joined by ``\\n``, as the texts of one message), or as one of its
        own."""
        out = self.out
        k = len(out)
        while k and out[k - 1].get("type") in _CALL_ITEMS:
            k -= 1
        if k == len(out):
            return False
        texts = self.between_texts(msg, i, True)  # (no empty text)
        if not texts:
            return True
        prev = out[k - 1] if k else None
        if (
            prev is not None
            and prev.keys() == {"role", "content"}
            and prev["role"] == "assistant"
            and isinstance(prev["content"], str)
        ):
            prev["content"] = "\n".join([prev["content"], *texts])
        else:
            out.insert(k, {"role": "assistant", "content": "\n".join(texts)})
        return True

    def _reasoning(self, b: ThinkingBlock, i: int, j: int, other: bool) -> Any:
        """(item id, encrypted content, part kind, text) of a thinking block this API takes back as a reasoning item's
        part (kind ``summary`` or ``content``; None for the empty block of an item of no part: an empty block is a part
        when it is marked one, ``reasoningText`` or ``summaryText``); its text when it goes as text (option reasoning='text', said); or None (said: another agent's or
        provider's reasoning, reasoning of no item, redacted)."""
        ctx = self.ctx
        pointer = (i, j)
        if other:
            ctx.report(pointer, "thinking-dropped", "reasoning of another agent is not sent")
            return None
        part = F.reasoning_item(b, ctx.families)  # (what the token count reads too)
        if part is not None:
            return (*part, b.thinking)
        # not sent as a reasoning item's part: why, in this order
        origin = F.reasoning_origin(b)
        if origin is not None and origin not in ctx.families:
            if F.foreign_reasoning(ctx, b, pointer, origin, self.demote) == F.DEMOTE:
                return b.thinking
            return None
        if b.metadata and b.metadata.get("redacted") is True:
            ctx.report(pointer, "thinking-dropped", f"redacted reasoning cannot be sent to {ctx.provider}")
            return None
        if self.demote and b.thinking:
            ctx.report(pointer, "thinking-demoted", f"reasoning of no reasoning item sent to {ctx.provider} as text")
            return b.thinking
        ctx.report(
            pointer,
            "thinking-dropped",
            f"reasoning of no reasoning item (no metadata {ITEM_ID}) cannot be sent to {ctx.provider}",
        )
        return None

    def provider_part(self, meta: dict[str, Any], i: int, j: int, prev: Any) -> Any:
        """A message item's id and phase (the reader's carrier after its text: providerBlock ``{type: "message", id,
        phase}``, kept with a phase or for a refusal), back on the assistant message sent right before it: the
        output message the API gave (``id``, ``status``, ``phase``, its text as one ``output_text``, a refusal as its
        ``refusal`` part), or without an id the message with its ``phase`` (the API asks that a phase be sent back on
        every assistant message)."""
        block = meta.get(F.PROVIDER_BLOCK)
        kind = block.get("type") if isinstance(block, dict) else None
        if kind != "message":
            F.carrier_dropped(self.ctx, meta, (i, j), f"{self.ctx.provider} takes back no {str(kind)[:40]} item")
            return None
        if not (isinstance(prev, dict) and prev.get("role") == "assistant" and isinstance(prev.get("content"), str)):
            F.carrier_dropped(self.ctx, meta, (i, j), "no assistant text is sent right before it")
            return None
        assert isinstance(block, dict)
        phase, item_id = block.get("phase"), block.get("id")
        if isinstance(item_id, str) and item_id:
            text = prev.pop("content")
            prev.update(type="message", id=item_id, status="completed")
            before, refusal = self.refusals_in.get(id(prev), (text, None))
            parts: list[dict[str, Any]] = [{"type": "output_text", "text": before, "annotations": []}] if before else []
            if refusal is not None:  # (the output message's own part for it, where the API gave it)
                parts.append({"type": "refusal", "refusal": refusal})
            prev["content"] = parts
        if isinstance(phase, str) and phase:
            prev["phase"] = phase
        return None

    def tool_message(self, msg: Msg, i: int) -> bool:
        for j, b in enumerate(_blocks(msg)):
            if type(b) is ToolResultBlock:
                self._result(b, i, j)
            elif type(b) is HintBlock:
                self._hint(b, i, j)
            else:
                self.ctx.report(
                    f"/{i}/content/{j}", "block-dropped", f"{b.type} block outside a tool result in a TOOL message"
                )
        if msg.name:
            self.ctx.names_dropped.append(i)
        return False

    def _result(self, b: ToolResultBlock, i: int, j: int, call: Any = False) -> None:
        ctx = self.ctx
        pointer = f"/{i}/content/{j}"
        if call is False:
            call = ctx.open_calls.pop(b.id, None)
        if call is None:
            ctx.report(pointer, "tool-result-orphan", f"tool result {b.id!r} answers no open tool call")
            if ctx.options.repair:
                ctx.report(pointer, "tool-result-dropped", f"orphaned tool result {b.id!r} left out")
                return
        if b.state in F.ERROR_STATES:
            ctx.report(pointer, "tool-result-state-dropped", f"{ctx.provider} takes no {b.state} state")
        output: list[Any] = b.output
        value: Any
        if len(output) == 1 and type(output[0]) is TextBlock:
            value = output[0].text
        elif all(type(o) is TextBlock for o in output):
            value = "\n".join(o.text for o in output)
        else:
            parts: list[dict[str, Any]] = []
            for k, o in enumerate(output):
                if type(o) is TextBlock:
                    parts.append(self.text_part(o.text))
                elif type(o) is HintBlock:
                    parts.append(self.text_part(o.hint))
                    F.hint_in_result(ctx, f"{pointer}/output/{k}")
                elif type(o) in F.MEDIA:
                    parts.append(self.media_part(o, f"{pointer}/output/{k}"))
                else:
                    ctx.report(f"{pointer}/output/{k}", "block-dropped", f"{o.type} block inside a tool result")
            value = parts
        call_id = call[0] if call is not None else b.id
        self._output(call_id, value)

    def repair(self, sent: str, tool: str) -> None:
        self._output(sent, F.REPAIR_TEXT)

    def _output(self, call_id: str, value: Any) -> None:
        """A call's result item: ``custom_tool_call_output`` for a custom tool's call, else ``function_call_output``."""
        kind = "custom_tool_call_output" if call_id in self.custom_ids else "function_call_output"
        self.out.append({"type": kind, "call_id": call_id, "output": value})

    def result(self) -> list[dict[str, Any]]:
        if not self.stored:
            self.out = [item for item in self.out if not self._unsigned(item)]
        return self.out

    def _unsigned(self, item: dict[str, Any]) -> bool:
        """A reasoning item without its encrypted content, in a request that is not stored: the API cannot find it by
        its id (``Items are not persisted when store is false``): left out, said."""
        if item.get("type") != "reasoning" or item.get("encrypted_content"):
            return False
        self.ctx.report(
            self.where.get(id(item), "/"),
            "thinking-dropped",
            f"reasoning item {str(item['id'])[:80]!r} has no encrypted_content: without store it cannot be replayed",
        )
        return True


#: the input (and output) items of an assistant's calls (a function's; a custom tool's, of free-text input)
_CALL_ITEMS: Final = ("function_call", "custom_tool_call")
#: of each call item: the field of its call's text (JSON arguments; a custom tool's free-text input), and how a
#: problem names the call
_CALL_INPUT: Final[Mapping[str, tuple[str, str]]] = {
    "function_call": ("arguments", "a function call"),
    "custom_tool_call": ("input", "a custom tool call"),
}


def _blocks(msg: Msg) -> list[Any]:
    blocks: list[Any] = msg.content
    return blocks


# ---- payload values: what a response's and an event's fields hold -----------------------------------------
# A whole Responses response becomes the events its stream would give, reduced by the one Reducer.


def _usage(u: Any, b: StreamBuilder) -> dict[str, Any] | None:
    """``input_tokens`` (cached included), ``output_tokens`` (reasoning included), ``input_tokens_details``
    ``cached_tokens`` and ``cache_write_tokens``, ``output_tokens_details.reasoning_tokens``."""
    if not isinstance(u, dict):
        if u is not None:
            b.no_usage("usage", u)
        return None
    details = as_object(u.get("input_tokens_details"))
    out_details = as_object(u.get("output_tokens_details"))
    return usage_dict(
        safe_int(u.get("input_tokens"), b, "usage.input_tokens"),
        safe_int(u.get("output_tokens"), b, "usage.output_tokens"),
        safe_int(details.get("cached_tokens"), b, "usage.input_tokens_details.cached_tokens"),
        safe_int(u.get("total_tokens"), b, "usage.total_tokens"),
        cache_write=safe_int(details.get("cache_write_tokens"), b, "usage.input_tokens_details.cache_write_tokens"),
        reasoning=safe_int(out_details.get("reasoning_tokens"), b, "usage.output_tokens_details.reasoning_tokens"),
        say=b,
        total_field="usage.total_tokens",
    )


def _error(b: StreamBuilder, err: Any) -> None:
    """An error object (``{code, message, type?, param?, misalignment?}``), or an ``error`` event's fields."""
    if not isinstance(err, dict):
        b.error(str(err) if err else "the provider reported an error", kind="provider_error")
        return
    code = err.get("code")
    misalignment = err.get("misalignment")
    if any(misalignment.values()) if isinstance(misalignment, dict) else misalignment:
        # (a misalignment_policy_violation's review: its public explanation, classification, the target that
        # continues it; the error event holds scalars: said, with its value, before the error ends the reply)
        b.not_kept(
            "misalignment",
            f"the error's misalignment review (misalignment: {b.shown(misalignment, 400)}) is not kept (the message"
            " has no place for it)",
        )
    b.error(
        str(err.get("message") or err),
        kind=str(err.get("type") or "provider_error"),
        code=code,  # (a number no event holds as its text, another JSON type left out: StreamBuilder.error says)
        param=err.get("param"),  # (a scalar as it came, another JSON type left out: StreamBuilder.error says)
    )


_LOGPROBS: Final = "log probabilities (logprobs) are not kept (the message has no place for them)"

#: What a response says of this call that the message has no place for: said (StreamBuilder.not_kept) when it says
#: something, as Chat Completions' ``moderation`` and Anthropic's ``input_transformations`` and ``diagnostics`` are
_RESPONSE_NOT_KEPT: Final = (
    ("moderation", "moderation results"),
    ("input_transformations", "the reasoning inputs the API withheld from the model"),
    ("prompt_cache_diagnostics", "the prompt cache diagnostics"),
)
_RESPONSE_NOT_KEPT_KEYS: Final = frozenset(key for key, _ in _RESPONSE_NOT_KEPT)


def _response_not_kept(b: StreamBuilder, r: Mapping[str, Any]) -> None:
    for key, what in _RESPONSE_NOT_KEPT:
        value = r.get(key)
        if any(value.values()) if isinstance(value, dict) else value:  # (an object of nulls or empties: nothing)
            b.not_kept(key, f"{what} ({key}: {b.shown(value)}) are not kept (the message has no place for them)")


def _call_not_kept(b: StreamBuilder, item: Mapping[str, Any]) -> None:
    """What a function_call item says beside its call that the message has no place for: its ``namespace`` (the
    tool_use block's name is the function's alone) and its ``caller`` when the call is not the model's own (a
    ``program`` item's code called it); said once per reply and kind."""
    namespace = item.get("namespace")
    if namespace:
        b.not_kept(
            "namespace",
            f"a function call's namespace ({b.shown(namespace, 80)}) is not kept: the tool_use block names the"
            " function alone",
        )
    caller = item.get("caller")
    kind = caller.get("type") if isinstance(caller, dict) else caller
    if caller and kind != "direct":
        b.not_kept(
            f"caller/{str(kind)[:40]}",
            f"the caller of a function call ({b.shown(caller)}: code the provider runs calls the tool) is not kept"
            " (the message has no place for it)",
        )


#: Output item types of tools the provider runs itself (and others the message has no place for): said as not kept
_TOOL_ITEMS = "tools the provider ran itself, and items the message has no place for"


class _Item:
    """What the reader knows of one output item (by ``output_index``) while it streams."""

    __slots__ = ("annotated", "by_done", "done", "empty", "id", "kind", "named", "slots", "streamed")

    def __init__(self, kind: Any, item_id: Any) -> None:
        self.kind = kind
        self.id = item_id if isinstance(item_id, str) else None
        #: reasoning: the thinking blocks opened, in order (a dict as an ordered set: a part's lookup is O(1), so an item
        #: of many parts reads in linear time)
        self.slots: dict[str, None] = {}
        self.empty: set[str] = set()  # reasoning: those opened for a part that has no text yet (SUMMARY_TEXT)
        self.streamed = False  # deltas came for it (its done item is not read again)
        self.by_done = False  # ... or the .done events of its parts, with no delta (each of them is read)
        self.done = False
        self.annotated = False  # annotation events came for it (its done item's annotations are not read again)
        #: a call: the call_id and name its output_item.added gave (its done item's are compared, not read); None:
        #: no added item named it
        self.named: tuple[str | None, Any] | None = None


# ---- reply fields: what each becomes (providers/_response/fields.py) ---------------------------------------

_SERVING = "describes the serving, not the reply"
_ECHO = "the request's own settings, echoed"
#: What the reader does with each field of a response (a stream's events carry the same: ``response.*`` events
#: the response, ``response.output_item.*`` its output items, the delta events their content)
REPLY_FIELDS: Final = (
    ReplyField("id", MAPPED, "the message id"),
    ReplyField("model", MAPPED, "metadata `agentmsg_model` (thinking blocks' `model`)"),
    ReplyField("object|created_at|completed_at|service_tier|billing|access_programs|image", NOT_READ, _SERVING),
    ReplyField(
        "instructions|tools|tool_choice|text|reasoning|store|temperature|top_p|max_output_tokens|truncation"
        "|parallel_tool_calls|metadata|previous_response_id|user|prompt|prompt_cache_key|prompt_cache_retention|prompt_cache_options"
        "|safety_identifier|background|conversation|max_tool_calls|top_logprobs",
        NOT_READ,
        _ECHO,
    ),
    ReplyField(
        "status", MAPPED, "`completed`: finish reason `completed`; `failed`, `cancelled`: an error (INTERRUPTED)"
    ),
    ReplyField(
        "incomplete_details.reason",
        MAPPED,
        "status `incomplete`: metadata `agentmsg_finish_reason` (`max_output_tokens`)",
    ),
    ReplyField("error", MAPPED, "an error event (metadata `agentmsg_errors`); the reply ends INTERRUPTED"),
    ReplyField(
        "error.misalignment",
        NOT_KEPT,
        "a misalignment_policy_violation's review (explanation, classification, review target): its value in the note",
    ),
    ReplyField(
        "output[] message .content[] output_text", KEPT, "a text block (structured output: `_structured_output`)"
    ),
    ReplyField("output[] message .content[] output_text (think_tags)", MAPPED, THINK_TAGS),
    ReplyField(
        "output[] message .content[] output_text .annotations",
        MAPPED,
        "metadata `agentmsg_grounding` (`annotations`, as given)",
    ),
    ReplyField("output[] message .content[] output_text .logprobs", NOT_KEPT),
    ReplyField(
        "output[] message .content[] (a part of another type)", NOT_KEPT, "the SDK lists output_text and refusal"
    ),
    ReplyField("output[] message .content[] refusal", MAPPED, "a text block of its own; metadata `agentmsg_refusal`"),
    ReplyField(
        "output[] message .phase",
        MAPPED,
        "a carrier after its text (thinking metadata `providerBlock` `{type: message, id, phase}`; of a message"
        " holding a refusal, `{type: message, id}` without one): sent back on it",
    ),
    ReplyField(
        "output[] message .id|.status|.role",
        NOT_READ,
        "the id is kept with a phase or a refusal (above: its output message sent back); else not replayed",
    ),
    ReplyField(
        "output[] reasoning .summary[]",
        MAPPED,
        "a thinking block per summary part, metadata `itemId` (the item's `id`); an empty part: an empty block,"
        " `summaryText: true`",
    ),
    ReplyField(
        "output[] reasoning .content[]",
        MAPPED,
        "a thinking block per reasoning_text part, metadata `itemId`, `reasoningText: true`",
    ),
    ReplyField(
        "output[] reasoning .encrypted_content",
        MAPPED,
        "the `signature` of the item's last thinking block (an item of no part: one empty thinking block)",
    ),
    ReplyField("output[] reasoning .id", MAPPED, "metadata `itemId` of each of its thinking blocks"),
    ReplyField("output[] function_call", MAPPED, "a tool_use block (`call_id`, `name`, `arguments`)"),
    ReplyField("output[] function_call .id|.status", NOT_READ, "calls are replayed by their call_id"),
    ReplyField(
        "output[] function_call .namespace|.caller",
        NOT_KEPT,
        "a tool namespace's function; programmatic tool calling (a `program` item's code called it)",
    ),
    ReplyField(
        "output[] web_search_call, file_search_call, code_interpreter_call, ... (other item types)",
        NOT_KEPT,
        _TOOL_ITEMS,
    ),
    ReplyField(
        "moderation|input_transformations|prompt_cache_diagnostics", NOT_KEPT, "what the API did with the request"
    ),
    ReplyField("tool_usage", NOT_READ, "hosted tools' usage: counts the usage has no field for"),
    ReplyField("usage.input_tokens", MAPPED, "usage `inputTokens`"),
    ReplyField("usage.output_tokens", MAPPED, "usage `outputTokens`"),
    ReplyField(
        "usage.total_tokens",
        MAPPED,
        "usage `totalTokens` when a count is missing; a total that is not input + output is said (not kept)",
    ),
    ReplyField("usage.input_tokens_details.cached_tokens", MAPPED, "usage `cachedTokens`"),
    ReplyField("usage.input_tokens_details.cache_write_tokens", MAPPED, "usage `cacheCreationInputTokens`"),
    ReplyField("usage.output_tokens_details.reasoning_tokens", MAPPED, "usage `reasoningTokens`"),
    ReplyField(
        "sequence_number|obfuscation",
        NOT_READ,
        "a stream's event order (one that does not increase is said; a delta's is not read) and padding",
    ),
)


# ---- reader: whole responses and stream events -------------------------------------------------------------

#: Stream events that carry nothing the reader does not read elsewhere (a part opening or closing; the whole text or
#: arguments again, read only when no delta gave them: _DONE_TEXTS)
_QUIET = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)


#: The type of a reasoning item's part, by the list it is in (:meth:`Reader._reasoning_done`)
_PART_TYPES: Final = {"summary": "summary_text", "content": "reasoning_text"}

#: The part openings that open an empty block for a reasoning item's part (:meth:`Reader._part_added`)
_PARTS_ADDED: Final = frozenset({"response.reasoning_summary_part.added", "response.content_part.added"})

#: The ``.done`` events that give a part's whole text (or a call's arguments), and the field that holds it: read only
#: when no delta gave it (:meth:`Reader._done_text`)
_DONE_TEXTS: Final[Mapping[str, str]] = {
    "response.output_text.done": "text",
    "response.refusal.done": "refusal",
    "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.done": "input",
    "response.reasoning_summary_text.done": "text",
    "response.reasoning_text.done": "text",
}


#: Below every sequence_number a stream's payload holds as an integer (orjson's: -2^63 and more): the first follows it
_NO_SEQUENCE: Final = -(2**63) - 1


class Reader(PayloadReader):
    """Responses payloads -> AgentEvents: a whole response (its output items in order: messages, reasoning, function
    calls; usage; status), and each typed event of a stream, routed to its item by ``output_index`` (items may
    interleave). The completed item (``response.output_item.done``) gives what its deltas did not (an item that came
    whole, the reasoning's encrypted content); ``response.completed`` / ``response.incomplete`` end the reply,
    ``response.failed`` and ``error`` end it interrupted. An event type of no item the message holds (hosted tools) is
    said as not kept, once per type."""

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        super().__init__(builder, spec, **options)
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, int] = {}  # item id -> its output_index
        self._failed = False  # an error event came (the response.failed after it ends the reply)
        self._started = False
        #: items that came before an earlier one (see _new): their events (event, payload, its bytes) by output_index,
        #: read once every item before them is done (_release), or when the reply ends (_flush); an item waits while
        #: its index is here
        self._waiting: dict[int, list[tuple[str, dict[str, Any], str | bytes | None]]] = {}
        #: the keys of _waiting, as a min-heap (kept equal to them): _new and _release ask for the lowest index that
        #: waits each time an item is named or done, and read the items in that order (a min() of _waiting each
        #: time would cost a reply of many items out of order time quadratic in their number)
        self._heap: list[int] = []
        self._low = 0  # the lowest output_index no event has named yet
        self._ready = 0  # the lowest output_index not done (every item before it is)
        self._releasing = False
        self._flushing = False  # the reply ends: nothing waits any more
        #: the text the deltas gave each part, by its block's slot (the builder's, routed deltas too), until its .done
        #: event, whose whole text is compared with it (:meth:`_done_again`)
        self._texts: dict[Any, list[str]] = {}
        builder.block_texts = self._texts
        #: the text each part of a streamed item was given (its deltas', or its .done event's when no delta came), by
        #: slot, once its .done event took it from _texts: the done item's whole content is compared with it and what
        #: _texts still holds (:meth:`_item_again`)
        self._given: dict[Any, list[str]] = {}
        #: the last event's sequence_number (an integer; one that does not increase is said: :meth:`_say_sequence`)
        self._seq: int = _NO_SEQUENCE
        self._seq_said = False  # (said once per reply)
        self._again = False  # events read again (held, then replayed): their numbers were read as they came

    # ---- whole ----

    def reply(self, obj: Any) -> None:
        b = self.b
        if not isinstance(obj.get("output"), list) and not (obj.get("error") and "choices" not in obj):
            raise ValidationError.single(
                "", "shape", "a Responses response is a response object (output, status) or an error: none here"
            )
        if not isinstance(obj.get("output"), list):  # the HTTP error envelope {"error": {...}}
            _error(b, obj["error"])
            b.close()
            return
        self._response(obj)
        for index, item in enumerate(obj["output"]):
            if isinstance(item, dict):
                self._item_done(index, item)
            else:
                self.b.problem("type", f"output item {index} is a JSON {json_type(item)}, not an object: left out")
        self._status(obj)

    # ---- stream ----

    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        kind = obj.get("type", event)
        # the HTTP error envelope {"error": ...} (a proxy's, with a 200; its error of any shape), as reply() reads it
        envelope = obj.get("type") is None and bool(obj.get("error")) and not isinstance(obj.get("output"), list)
        if envelope:
            kind = "error"
        if kind == "response.output_text.delta":
            st = self._at(obj, event)
            if st is not None and (not st.done or self._late(kind, obj, keep=True)):
                st.streamed = True
                delta = self.b.string(obj.get("delta"), "a text delta") or ""
                slot = f"m{obj['output_index']}"
                if obj.get("logprobs"):  # (the done item repeats them, said there too: a cut stream has none)
                    self.b.not_kept("logprobs", _LOGPROBS)
                self.b.text(delta, slot=slot)
                if delta:
                    self._texts.setdefault(slot, []).append(delta)
                    if type(self) is Reader and not st.done:  # (a subclass may read payloads its own way)
                        self._route(event, obj, delta, slot)
            return
        if kind == "response.function_call_arguments.delta":
            st = self._at(obj, event)
            if st is not None and st.kind == "function_call" and (not st.done or self._late(kind, obj)):
                st.streamed = True
                delta = obj.get("delta") or ""
                self.b.tool_call(obj["output_index"], arguments=delta)
                if delta and type(delta) is str and type(self) is Reader:
                    self._route(event, obj, delta, obj["output_index"], "call")
            return
        if kind == "response.custom_tool_call_input.delta":
            st = self._at(obj, event)
            # (a custom tool's free-text input, as arguments)
            if st is not None and st.kind == "custom_tool_call" and (not st.done or self._late(kind, obj)):
                st.streamed = True
                delta = self.b.string(obj.get("delta"), "a custom tool call's input delta") or ""
                self.b.tool_call(obj["output_index"], arguments=delta, custom=True)
            return
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            st = self._at(obj, event)
            if st is not None and (not st.done or self._late(kind, obj, keep=True)):
                k = obj.get("summary_index" if kind.endswith("summary_text.delta") else "content_index", 0)
                slot = f"r{obj['output_index']}/{'s' if 'summary' in kind else 'c'}{k}"
                st.streamed = True
                delta = self.b.string(obj.get("delta"), "a reasoning delta") or ""
                if delta:  # (an empty delta opens no block: the item may yet need a carrier)
                    if slot not in st.slots:
                        st.slots[slot] = None
                    elif st.empty:  # (its part was added empty: filled now)
                        st.empty.discard(slot)
                self.b.thinking(delta, slot=slot)
                if delta:
                    self._texts.setdefault(slot, []).append(delta)
                    if type(self) is Reader and not st.done:
                        self._route(event, obj, delta, slot, "thinking")
            return
        # The events' order: each event's sequence_number but the deltas' above (a route reads most of them in C, from
        # their bytes, with no number read) follows the last one read
        seq = obj.get("sequence_number")
        if type(seq) is int and seq > self._seq:
            self._seq = seq
        elif seq is not None and not self._again:
            self._say_sequence(seq, obj)
        if kind in _QUIET:
            if kind in _DONE_TEXTS:
                st = self._at(obj, event)
                if st is not None and not st.done:
                    if st.by_done or not st.streamed:  # (no delta came: a proxy's)
                        self._done_text(kind, obj, st)
                    else:
                        self._done_again(kind, obj)
            elif kind in _PARTS_ADDED:
                self._part_added(kind, event, obj)
            return
        if kind == "response.output_item.added":
            self._added(event, obj)
        elif kind == "response.output_item.done":
            index, item = obj.get("output_index"), obj.get("item")
            if type(index) is int and isinstance(item, dict):
                st = self._items.get(index)
                if st is None:
                    st = self._new(index, item.get("type"), item.get("id"))
                if index in self._waiting:
                    self._waiting[index].append((event, obj, self.b.payload))
                else:
                    self._item_done(index, item)
                    if self._waiting:
                        self._release()
            else:
                self.b.problem("shape", "a response.output_item.done without its output_index and item: skipped")
        elif kind == "response.refusal.delta":
            st = self._at(obj, event)
            if st is not None and (not st.done or self._late(kind, obj, keep=True)):
                st.streamed = True
                delta = obj.get("delta") or ""
                slot = f"m{obj['output_index']}/refusal"
                self.b.text(delta, slot=slot)
                if delta and type(delta) is str:
                    self._texts.setdefault(slot, []).append(delta)
                self.b.refused()
        elif kind == "response.output_text.annotation.added":
            annotation = obj.get("annotation")
            if annotation is not None:
                index, item_id = obj.get("output_index"), obj.get("item_id")
                if type(index) is not int:
                    index = self._by_id.get(item_id, -1) if type(item_id) is str else -1
                st = self._items.get(index)
                if st is not None:
                    if index in self._waiting:
                        self._waiting[index].append((event, obj, self.b.payload))
                        return
                    st.annotated = True
                self.b.grounding({"annotations": [annotation]}, extend=True)
        elif kind in ("response.created", "response.in_progress", "response.queued"):
            self._response(as_object(obj.get("response")))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            r = self.b.mapping(obj.get("response"), f"{kind}'s response")
            self._response(r)
            output = self.b.array(r.get("output"), "the response's output")
            self._flushing = True
            indexes: Iterable[int] = range(len(output))
            if self._waiting:  # (the items that waited, and the response's, in output_index order: all read here)
                indexes = sorted({*indexes, *self._waiting})
                self._heap.clear()
            for index in indexes:
                if index in self._waiting:
                    self._replay(index)
                item = output[index] if 0 <= index < len(output) else None
                st = self._items.get(index)
                if isinstance(item, dict) and (st is None or not st.done):
                    self._item_done(index, item, kind)  # (an item the events did not complete)
                elif item is not None and not isinstance(item, dict):
                    self.b.problem("type", f"output item {index} is a JSON {json_type(item)}, not an object: left out")
            self.done = True
            self._status(r, failed=kind == "response.failed")
        elif "type" not in obj and isinstance(obj.get("output"), list) and not self._started:
            # A whole response where a stream was asked for (a server or proxy that ignores "stream": true, a saved
            # response read with --stream): read as it is, and the reply ends
            self.done = True
            self.reply(obj)
        elif kind == "error":
            self._flush()
            err = obj.get("error")
            _error(self.b, err if envelope or isinstance(err, dict) else obj)
            self._failed = True  # (the response.failed that follows ends the reply)
        elif isinstance(kind, str) and kind.startswith("response."):
            self.b.not_kept(
                f"event/{kind[:80]}",
                f"{kind[:80]} events ({_TOOL_ITEMS}) are not kept (the message has no place for them)",
            )
        else:
            self.foreign += 1

    def _say_sequence(self, seq: Any, obj: Mapping[str, Any]) -> None:
        """An event whose ``sequence_number`` does not follow the last one read (a duplicated or reordered event: a
        replaying proxy, a retried stream): said (problem ``order``, once per reply; the numbers after it are then
        compared with it), the event still read as it came (a duplicate too, as the openai package's ResponseStream
        accumulates every event it gets: it skips only those at or before the ``starting_after`` its caller asks
        for). One that is no integer: said (``type``, as a choice's index is) and not read."""
        b = self.b
        kind = str(obj.get("type"))[:60]
        if type(seq) is not int:
            b.not_integer(seq, f"a {kind} event's sequence_number", "not read")
            return
        last, self._seq = self._seq, seq
        if self._seq_said:
            return
        self._seq_said = True
        at = f" (output_index {obj['output_index']})" if type(obj.get("output_index")) is int else ""
        b.problem(
            "order",
            f"a {kind} event{at} whose sequence_number, {seq}, does not increase (the last one read was {last}): a"
            " duplicated or reordered event (a replaying proxy, a retried stream?), read as it came, as any other",
        )

    def _late(self, kind: str, obj: Mapping[str, Any], keep: bool = False) -> bool:
        """A delta of an item whose ``response.output_item.done`` came already (a replaying or reordering proxy): said,
        once per item and event type; a text, refusal or reasoning fragment is kept (``keep``: True), in a block of
        its own after the item's (nothing received is lost, nothing joined to a block that ended), a call's
        arguments are skipped (its call is whole: they have no call to go to). As Anthropic's deltas after their
        ``content_block_stop``."""
        return self.b.late(
            f"{kind[9:60]} for output_index {obj['output_index']} after its response.output_item.done", keep
        )

    def whole(self, obj: dict[str, Any]) -> bool:
        return "type" not in obj and isinstance(obj.get("output"), list)  # (a stream's payloads are typed events)

    def end(self) -> None:
        self._flush()
        self._end_open_reasoning()
        if self._failed and not self.b.closed:
            self.done = True
            self.b.close()
        self.say_foreign("no Responses event shape (no type)")

    def _end_open_reasoning(self) -> None:
        """Reasoning items the stream did not complete (cut, or failed): their blocks end keeping the item's id (not
        the added item's encrypted content, which may be incomplete)."""
        for st in self._items.values():
            if st.kind == "reasoning" and not st.done:
                st.done = True
                for slot in st.slots:
                    self.b.end_block(slot, metadata=_reasoning_meta(st.id, slot, st.empty))

    # ---- items ----

    def _route(self, event: str, obj: Mapping[str, Any], delta: str, slot: Any, kind: str = "text") -> None:
        """A delta read as ``b.text(delta)``, ``b.thinking(delta)`` or ``b.tool_call(slot, arguments=delta)`` (``kind``)
        and nothing else: the next ones of the same bytes around their delta (the same item and index; their
        sequence number and obfuscation, which change and are not read, aside) are read so in C
        (:meth:`PayloadReader.route_value`), with no orjson and no :meth:`chunk` call."""
        data = self.b.payload
        if type(data) is not bytes:
            return
        holes = [value_at(data, b'"%s":' % key) for key in (b"obfuscation", b"sequence_number") if key.decode() in obj]
        self.route_value(b'"delta":', delta, slot, event, holes, kind=kind)

    def _at(self, obj: dict[str, Any], event: str) -> _Item | None:
        """The item an event is about (by output_index; by item_id when that is missing); None when it is not read
        now (an item that waits for an earlier one: the event waits with it, see :meth:`_new`)."""
        index = obj.get("output_index")
        if type(index) is not int:
            index = self._by_id.get(obj.get("item_id"))  # type: ignore[arg-type]
            if index is None:
                self.b.problem("shape", f"a {str(obj.get('type'))[:60]} event names no output item: skipped")
                return None
            obj["output_index"] = index
        st = self._items.get(index)
        if st is None:  # a delta before its item was added: an item of the kind the delta says
            kind = obj.get("type", "")
            st = self._new(
                index,
                "function_call"
                if "function_call" in kind
                else "custom_tool_call"
                if "custom_tool_call" in kind
                else "reasoning"
                if "reasoning" in kind
                else "message",
                obj.get("item_id"),
            )
        if index in self._waiting:
            self._waiting[index].append((event, obj, self.b.payload))
            return None
        return st

    # ---- items out of output_index order ----
    # The API gives its items one after another, in output_index order, and the whole response lists them so (as the
    # SDK's final response does). An item whose first event comes before an earlier item's (a proxy's, a server that
    # interleaves them) waits, its events held as they came, until every item before it is done, so that its blocks
    # follow theirs; the items in order are read as they come (one int compared when an item is first named).

    def _new(self, index: int, kind: Any, item_id: Any) -> _Item:
        """The state of an item an event names first; held when an item before it was not named yet, or waits."""
        items = self._items
        st = items[index] = _Item(kind, item_id)
        low = self._low
        if index == low:
            low += 1
            while low in items:
                low += 1
            self._low = low
        if index < low and (not self._heap or index < self._heap[0]):  # (a negative index: none comes before it)
            return st
        if not self._flushing:
            self._waiting[index] = []
            heapq.heappush(self._heap, index)
        return st

    def _release(self) -> None:
        """The items that waited and whose earlier items are all done now, read in output_index order."""
        if self._releasing or self._flushing:
            return
        self._releasing = True
        items, heap, waiting = self._items, self._heap, self._waiting
        try:
            while heap:
                ready = self._ready
                while (st := items.get(ready)) is not None and st.done and ready not in waiting:
                    ready += 1
                self._ready = ready
                if heap[0] > ready:
                    break
                self._replay(heapq.heappop(heap))
        finally:
            self._releasing = False

    def _flush(self) -> None:
        """The reply ends: every item that waits is read, in output_index order."""
        self._flushing = True
        while self._heap:
            self._replay(heapq.heappop(self._heap))

    def _replay(self, index: int) -> None:
        """The events an item held, read now as they came."""
        held = self._waiting.pop(index)
        b = self.b
        payload = b.payload
        again, self._again = self._again, True  # (their sequence numbers were read as they came)
        for event, obj, data in held:
            b.payload = data
            try:
                self.chunk(event, obj)
            except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
                b.problem("type", f"an unexpected payload shape ({type(exc).__name__}: {exc}): skipped")
        self._again = again
        b.payload = payload
        self.route = None  # (a route follows the payload being read; these were read late)

    def _done_text(self, kind: str, obj: Mapping[str, Any], st: _Item) -> None:
        """A part's whole text (or a call's arguments) in its ``.done`` event when no delta gave it: read as one
        delta (the done item, when it comes, is then not read again). A stream that gave them only so (a proxy's),
        and whose ``response.completed`` lists no output, ended as an empty message, unsaid."""
        b = self.b
        index = obj["output_index"]
        field = _DONE_TEXTS[kind]
        value = b.string(obj.get(field), f"a {kind[9:60]} event's {field}") or ""
        if not value:
            return
        st.streamed = st.by_done = True
        if kind == "response.function_call_arguments.done":
            if st.kind == "function_call":
                b.tool_call(index, arguments=value)
        elif kind == "response.custom_tool_call_input.done":
            if st.kind == "custom_tool_call":
                b.tool_call(index, arguments=value, custom=True)
        elif kind == "response.refusal.done":
            b.text(value, slot=f"m{index}/refusal")
            b.refused()
            self._given.setdefault(f"m{index}/refusal", []).append(value)
        elif kind == "response.output_text.done":
            b.text(value, slot=f"m{index}")
            self._given.setdefault(f"m{index}", []).append(value)
        else:
            summary = "summary" in kind
            k = obj.get("summary_index" if summary else "content_index", 0)
            slot = f"r{index}/{'s' if summary else 'c'}{k}"
            if slot not in st.slots:
                st.slots[slot] = None
            st.empty.discard(slot)
            b.thinking(value, slot=slot)
            self._given.setdefault(slot, []).append(value)

    def _done_again(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A part's ``.done`` event after its deltas: its whole text (a call's arguments) again. The deltas' text is
        kept: it went out as their events, which no event takes back (the done item of a streamed item is not read
        again either). A whole text other than theirs (a proxy's rewrite, a stream resumed elsewhere) is said, quoted,
        once per reply and kind (not-kept), so that it is not dropped unsaid."""
        b = self.b
        field = _DONE_TEXTS[kind]
        whole = b.string(obj.get(field), f"a {kind[9:60]} event's {field}")
        if whole is None:
            return
        index = obj["output_index"]
        if kind in ("response.function_call_arguments.done", "response.custom_tool_call_input.done"):
            given = b.call_text(index) or ""
        else:
            if kind == "response.output_text.done":
                slot = f"m{index}"
            elif kind == "response.refusal.done":
                slot = f"m{index}/refusal"
            else:
                summary = "summary" in kind
                slot = (
                    f"r{index}/{'s' if summary else 'c'}{obj.get('summary_index' if summary else 'content_index', 0)}"
                )
            given = "".join(self._texts.pop(slot, ()))  # (the next part of a message's block starts anew)
            self._given.setdefault(slot, []).append(given)  # (for its done item: _item_again)
        if whole == given:
            return
        place = f"output_index {index}" + "".join(
            f", {key} {obj[key]}" for key in ("content_index", "summary_index") if type(obj.get(key)) is int
        )
        self._not_repeated(f"done/{kind}", kind, place, field, whole, given)

    def _not_repeated(
        self, key: str, kind: str, place: str, field: str, whole: str, given: Any, added: bool = False
    ) -> None:
        """A whole text (``field`` of a ``kind`` event, at ``place``) other than the one its deltas gave: said, quoted,
        once per ``key`` and reply (not-kept); the deltas' is kept. ``added``: a done item's id, call_id or name
        other than the one its ``response.output_item.added`` (its events) gave, ``given`` (None: none), kept."""
        b = self.b
        if added:
            b.not_kept(
                key,
                f"a {kind} event whose item does not repeat its response.output_item.added ({place}: its {field}"
                f" {b.shown(whole, 120)}, where the added item's is {b.shown(given, 120)}) is not kept: the added"
                f" item's {field} is the reply's",
            )
            return
        b.not_kept(
            key,
            f"a {kind} event that does not repeat its deltas ({place}: its {field}, {len(whole)} characters, where"
            f" they gave {len(given)}) is not kept: the deltas' text is the reply's; its {field}: {b.shown(whole, 120)}",
        )

    def _given_text(self, slot: str) -> str:
        """The whole text the events gave a block's slot (its parts' taken at their .done, then what came since),
        forgotten here."""
        return "".join(self._given.pop(slot, ())) + "".join(self._texts.pop(slot, ()))

    def _item_again(self, event: str, index: int, st: _Item, item: Mapping[str, Any]) -> None:
        """A streamed item's done item (``event``: ``response.output_item.done``, or the response's output when that
        event did not come) repeats its whole content: its message's output_text and refusal texts (each joined),
        its reasoning parts' texts, its call's arguments (a custom call's input). Not read again (its events gave
        it, and went out); compared as :meth:`_done_again` compares a part's ``.done`` event with its deltas, and
        a content other than theirs is said (not-kept), once per reply, event and item type: the deltas' is kept.
        A field the done item does not have is not compared."""
        kind = st.kind
        key = f"done/{event}/{str(kind)[:60]}"
        place = f"output_index {index}"
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                return
            for part_kind, field, slot in (
                ("output_text", "text", f"m{index}"),
                ("refusal", "refusal", f"m{index}/refusal"),
            ):
                whole = "".join(
                    text
                    for part in content
                    if isinstance(part, dict)
                    and part.get("type") == part_kind
                    and isinstance(text := part.get(field), str)
                )
                given = self._given_text(slot)
                if whole != given:
                    self._not_repeated(key, event, place, field, whole, given)
        elif kind == "reasoning":
            for list_key, tag, index_key in (("summary", "s", "summary_index"), ("content", "c", "content_index")):
                parts = item.get(list_key)
                if not isinstance(parts, list):
                    continue
                prefix = f"r{index}/{tag}"
                ks = {k for k, part in enumerate(parts) if isinstance(part, dict)}
                ks.update(
                    int(s[len(prefix) :]) for s in st.slots if s.startswith(prefix) and s[len(prefix) :].isdigit()
                )
                for k in sorted(ks):
                    part = as_object(parts[k]) if k < len(parts) else {}
                    text = part.get("text")
                    whole = text if isinstance(text, str) else ""
                    given = self._given_text(f"{prefix}{k}")
                    if whole != given:
                        self._not_repeated(key, event, f"{place}, {index_key} {k}", "text", whole, given)
        elif kind in _CALL_ITEMS:
            field = _CALL_INPUT[kind][0]
            value = item.get(field)
            if isinstance(value, str):
                given = self.b.call_text(index) or ""
                if value != given:
                    self._not_repeated(key, event, place, field, value, given)

    def _part_added(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        """A reasoning item's summary (or ``reasoning_text``) part, added: its block opens, empty, in its place, so
        that a part that stays empty is kept (and sent back) as the whole response keeps it."""
        summary = kind == "response.reasoning_summary_part.added"
        part_kind = as_object(obj.get("part")).get("type")
        if part_kind != _PART_TYPES["summary" if summary else "content"] and (not summary or part_kind is not None):
            # (a message's part: its text opens its block; a summary part of another type: read, or said, when its
            # item is done, as a whole reply's)
            return
        st = self._at(obj, event)
        if st is None or st.done or st.kind != "reasoning":
            return
        k = obj.get("summary_index" if summary else "content_index", 0)
        slot = f"r{obj['output_index']}/{'s' if summary else 'c'}{k}"
        if slot not in st.slots:
            self.b.open_carrier(slot)
            st.slots[slot] = None
            st.empty.add(slot)

    def _added(self, event: str, obj: dict[str, Any]) -> None:
        index, item = obj.get("output_index"), obj.get("item")
        if type(index) is not int or not isinstance(item, dict):
            self.b.problem("shape", "a response.output_item.added without its output_index and item: skipped")
            return
        kind = item.get("type")
        st = self._items.get(index)
        if st is None:
            st = self._new(index, kind, item.get("id"))
        elif index not in self._waiting and (st.done or st.kind != kind):
            # (a new item at an index whose item is done, or of another kind than its early events said; an item of
            # the kind they said keeps what they gave, and its done item does not give its text a second time)
            st = self._items[index] = _Item(kind, item.get("id"))
        elif st.id is None and isinstance(item.get("id"), str):
            st.id = item["id"]
        if st.id is not None:
            self._by_id[st.id] = index
        if index in self._waiting:
            self._waiting[index].append((event, obj, self.b.payload))
            return
        if kind in _CALL_ITEMS:
            b = self.b
            field, what = _CALL_INPUT[kind]
            arguments = b.string(item.get(field), f"{what}'s {field}") or None
            call_id = b.string(item.get("call_id"), f"{what}'s call_id")
            b.tool_call(
                index, call_id=call_id, name=item.get("name"), arguments=arguments, custom=kind == "custom_tool_call"
            )
            # (arguments given here begin the call's arguments, as deltas would: its done item is not read again)
            st.streamed = st.streamed or arguments is not None
            st.named = (call_id, item.get("name"))
        elif kind not in ("message", "reasoning"):
            self._other(kind)

    def _item_done(self, index: int, item: dict[str, Any], event: str = "response.output_item.done") -> None:
        """An output item, whole (given by ``event``): what its events did not give, then its end."""
        b = self.b
        st = self._items.get(index)
        kind = item.get("type")
        if st is None:
            st = self._items[index] = _Item(kind, item.get("id"))
        st.done = True
        item_id = item.get("id")
        if st.id is None and isinstance(item_id, str):
            st.id = item_id
        elif st.kind == kind and isinstance(item_id, str) and item_id != st.id:
            # (the id its events gave is the item's: its blocks' itemId, its message's carrier)
            self._not_repeated(
                f"done/{event}/{str(kind)[:60]}/id", event, f"output_index {index}", "id", item_id, st.id, True
            )
        if st.streamed and st.kind == kind:
            self._item_again(event, index, st, item)
        if kind == "message":
            slot = f"m{index}"
            parts = b.objects(b.array(item.get("content"), "a message item's content"), "a message item's content")
            for part in parts:
                if part.get("type") == "output_text":
                    if not st.streamed:
                        b.text(b.string(part.get("text"), "an output_text's text") or "", slot=slot)
                    annotations = part.get("annotations")
                    # (a stream that gave its text by deltas but its annotations in the done item alone: a proxy's)
                    if isinstance(annotations, list) and annotations and not st.annotated:
                        b.grounding({"annotations": annotations}, extend=True)
                    elif annotations is not None and not isinstance(annotations, list):
                        b.array(annotations, "an output_text's annotations")  # (said: left out)
                elif part.get("type") == "refusal" and not st.streamed:
                    b.text(b.string(part.get("refusal"), "a refusal") or "", slot=f"{slot}/refusal")
                    b.refused()
            for part in parts:
                if isinstance(part, dict):
                    if part.get("logprobs"):
                        b.not_kept("logprobs", _LOGPROBS)
                    part_kind = part.get("type")
                    if part_kind not in ("output_text", "refusal"):  # (the SDK's two; another is said, not dropped)
                        shown = part_kind[:60] if isinstance(part_kind, str) else b.shown(part_kind, 60)
                        b.not_kept(
                            f"part/{shown}",
                            f"{shown} parts of a message are not kept (the message has no place for them)",
                        )
            refused = b.is_open(f"{slot}/refusal")
            had_text = b.is_open(slot) or refused  # (a refusal is its text too)
            b.end_block(slot)
            b.end_block(f"{slot}/refusal")
            phase = b.string(item.get("phase"), "a message's phase")
            if had_text and (phase or (refused and st.id is not None)):
                # its id and phase, for the formatter to send back on its text (the API asks for the phase on every
                # assistant message; a refusal goes back as a refusal part of the output message of its id only):
                # a carrier right after the text
                kept: dict[str, Any] = {"type": "message"}
                if phase:
                    kept["phase"] = phase
                if st.id is not None:
                    kept["id"] = st.id
                b.carrier({"providerBlock": kept}, slot=f"{slot}/item")
        elif kind == "reasoning":
            self._reasoning_done(index, st, item)
        elif kind in _CALL_ITEMS:  # (a custom tool's call: its free-text input is the call's text, as Chat's)
            _call_not_kept(b, item)
            field, what = _CALL_INPUT[kind]
            custom = kind == "custom_tool_call"
            if st.kind != kind or not b.open_call(index):
                b.tool_call(
                    index,
                    call_id=b.string(item.get("call_id"), f"{what}'s call_id"),
                    name=item.get("name"),
                    arguments=None if st.streamed else b.string(item.get(field), f"{what}'s {field}"),
                    custom=custom,
                )
            else:
                # (a call its deltas opened, no output_item.added before them: its id and name are the done item's;
                # those an added item gave are kept, the done item's compared with them)
                if st.named is not None:
                    for key, added in zip(("call_id", "name"), st.named, strict=True):
                        value = item.get(key)
                        if isinstance(value, str) and value != added:
                            place = f"output_index {index}"
                            self._not_repeated(f"done/{event}/{kind}/{key}", event, place, key, value, added, True)
                b.tool_call(
                    index,
                    call_id=None if st.named else b.string(item.get("call_id"), f"{what}'s call_id"),
                    name=None if st.named else item.get("name"),
                    arguments=None if st.streamed else b.string(item.get(field), f"{what}'s {field}"),
                    custom=custom,
                )
            b.end_tool_call(index)
            st.kind = kind
        else:
            self._other(kind)

    def _reasoning_done(self, index: int, st: _Item, item: dict[str, Any]) -> None:
        b = self.b
        streamed = st.streamed
        for key, tag in (("summary", "s"), ("content", "c")):
            for k, part in enumerate(b.array(item.get(key), f"a reasoning item's {key}")):
                if not isinstance(part, dict):
                    b.problem("type", f"a part of a reasoning item's {key} is a JSON {json_type(part)}: left out")
                    continue
                part_kind = part.get("type")
                if part_kind is not None and part_kind != _PART_TYPES[key]:  # (a kind of part with no rule here)
                    shown, usual = b.shown(part_kind, 60), _PART_TYPES[key]
                    if not isinstance(part.get("text"), str):  # no text to read: kept in the note, no block made
                        b.not_kept(
                            f"part/{index}/{key}/{k}",
                            f"a reasoning {key} part of type {shown} is not kept: {b.shown(part, 500)}",
                        )
                        continue
                    b.not_kept(f"part-type/{shown}", f"reasoning {key} parts of type {shown} are read as {usual} parts")
                slot = f"r{index}/{tag}{k}"
                if streamed:  # (its deltas gave the texts; an empty part no event opened is kept, after them)
                    if part.get("text") or slot in st.slots:
                        continue
                    text = None
                else:
                    text = b.string(part.get("text"), f"a reasoning {key} part's text")
                if text:
                    b.thinking(text, slot=slot)
                    st.empty.discard(slot)
                elif slot not in st.slots:  # (an empty part: kept, as it came)
                    b.open_carrier(slot)
                    st.empty.add(slot)
                if slot not in st.slots:
                    st.slots[slot] = None
        if not st.slots:
            slot = f"r{index}/e"
            b.open_carrier(slot)  # (an item of no text: one empty thinking block holds its id and content)
            st.slots[slot] = None
        encrypted = b.string(item.get("encrypted_content"), "a reasoning item's encrypted_content")
        if encrypted:
            b.signature(encrypted, slot=next(reversed(st.slots)))
        for slot in st.slots:
            b.end_block(slot, metadata=_reasoning_meta(st.id, slot, st.empty))

    def _other(self, kind: Any) -> None:
        shown = kind[:80] if isinstance(kind, str) else self.b.shown(kind, 80)
        self.b.not_kept(
            f"item/{shown}", f"{shown} output items ({_TOOL_ITEMS}) are not kept (the message has no place for them)"
        )

    # ---- the response ----

    def _response(self, r: Mapping[str, Any]) -> None:
        b = self.b
        if b.response_id is None or b.model is None:
            b.identify(r.get("id"), r.get("model"))
        if not _RESPONSE_NOT_KEPT_KEYS.isdisjoint(r):
            _response_not_kept(b, r)
        if r.get("usage") is not None:
            b.set_usage(_usage(r["usage"], b))
        if not self._started:
            self._started = True
            b.choice(0)

    def _status(self, r: Mapping[str, Any], failed: bool = False) -> None:
        b = self.b
        status = r.get("status")
        if failed or status in ("failed", "cancelled") or (r.get("error") and status != "completed"):
            self._end_open_reasoning()
            if not self._failed:
                err = r.get("error")
                _error(b, err if err else f"the response {'was cancelled' if status == 'cancelled' else 'failed'}")
            self.done = True
            b.close()
            return
        if r.get("error"):  # (an error beside a completed response: its content is whole; the error said, not lost)
            b.not_kept("error", f"the response's error beside its status {str(status)[:40]!r}: {b.shown(r['error'])}")
        self.say_foreign("no Responses event shape (no type)")  # (the reply ends here: end() is not called)
        if status == "incomplete":
            reason = as_object(r.get("incomplete_details")).get("reason")
            b.finish(0, b.string(reason, "incomplete_details.reason") or "incomplete")
        elif status == "completed":
            b.finish(0, "completed", normal=True)
        elif status is not None:
            b.problem("enum", f"a response of status {b.named(status, 40)} is not finished: read as it is")
        b.close(ended=True)


def _reasoning_meta(item_id: str | None, slot: str, empty: set[str]) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    if item_id is not None:
        meta[ITEM_ID] = item_id
    if "/c" in slot:
        meta[REASONING_TEXT] = True
    elif slot in empty:  # (a /c slot is told above)
        meta[SUMMARY_TEXT] = True  # (an empty summary part, told from the empty block of an item of no part)
    return meta or None


# ---- registry entries and the module's functions -----------------------------------------------------------

PROVIDER: Final = Entry(SPEC, format_request, Reader, __name__)
PROVIDERS: Final = (PROVIDER,)

response_events = PROVIDER.response_events
parse_response = PROVIDER.parse_response
parse_stream = PROVIDER.parse_stream
StreamParser = PROVIDER.stream_parser
