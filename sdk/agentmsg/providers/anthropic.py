"""Anthropic Messages: the spec, the request formatter, and the reader of whole replies and SSE streams.

Layout (docs/formatters.md): SYSTEM messages -> top-level ``system``; user and assistant turns of
content blocks, strictly alternating (consecutive messages of one role are merged, reported);
signed thinking byte for byte, first in its message or in its place among its blocks (interleaved
thinking), redacted thinking as ``redacted_thinking``; every tool result of a batch in the one user
turn after the calls, with images inside ``tool_result``; ``max_tokens`` always set (default 4096).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentmsg._codec.jsontext import json_type, loads
from agentmsg.blocks import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.errors import ValidationError
from agentmsg.message import Msg
from agentmsg.providers._request import cache as C
from agentmsg.providers._request import context as F
from agentmsg.providers._request import structured as S
from agentmsg.providers._request.common import WEB_URL, media_kind
from agentmsg.providers._request.context import Context, FormatOptions, FormattedRequest
from agentmsg.providers._request.fields import field_table, mapped, reported
from agentmsg.providers._request.media import inline_base64
from agentmsg.providers._request.run import Draft, run_format, usable_choice
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._request.tools import ToolChoice, ToolDef, anthropic_tool_choice, anthropic_tools
from agentmsg.providers._request.turns import TurnWalk
from agentmsg.providers._response.builder import StreamBuilder
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ, THINK_TAGS, ReplyField
from agentmsg.providers._response.payload import as_object, safe_int, usage_dict
from agentmsg.providers._response.reader import PayloadReader
from agentmsg.providers.base import CacheMarkers, CountEndpoint, Entry, OwnTools, Spec, TokenProfile
from agentmsg.providers.spec import own_tool_name

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "PROVIDERS",
    "SPEC",
    "Reader",
    "StreamParser",
    "format_request",
    "parse_response",
    "parse_stream",
    "response_events",
]


# ---- spec --------------------------------------------------------------------------------------------------

#: What the formatter does with each field (providers/_request/fields.py)
FIELDS: Final = field_table(
    {
        "message.name": mapped(
            "name-dropped", note="no name field (said once per request); in multi-agent mode, in the text"
        ),
        "tool_use.content": mapped(
            "tool-arguments-invalid",
            "field-dropped",
            note="the input object is sent; raw text that is not its JSON is said",
        ),
        "thinking.thinking": mapped(
            "thinking-dropped",
            "thinking-demoted",
            "thinking-moved",
            note="a thinking block, signed (unsigned reasoning cannot be replayed)",
        ),
        "thinking.metadata.redacted": mapped("thinking-dropped", note="a redacted_thinking block"),
        "thinking.metadata.redactedData": mapped("thinking-dropped", note="the redacted_thinking block's data"),
        "thinking.metadata.providerBlock": mapped(
            "provider-tool-dropped",
            "field-dropped",
            note="a server tool's block (server_tool_use, *_tool_result), back unchanged in its place; another"
            " provider's said (a Responses message item's phase: field-dropped)",
        ),
        "thinking.metadata.citations": mapped(
            "citations-dropped", note="back on the text block sent right before it; another provider's said"
        ),
        "tool_use.metadata.thoughtSignature": reported("signature-dropped", note="no field for a call's signature"),
        "tool_result.state": mapped(note="error, denied and interrupted: is_error"),
        "message.metadata._cache_control": mapped(
            "cache-breakpoint-dropped",
            "cache-ttl-order",
            note="cache_control {type: ephemeral, ttl} on the marked block (or the nearest before it that takes one);"
            " at most 4 breakpoints, the tools' and system prompt's first, then the latest",
        ),
        "data.name": mapped(
            "field-dropped",
            note="a document's title (PDF, text), in a placeholder's text; else not sent (field-dropped)",
        ),
    }
)


#: why plain text is sent as a placeholder: its bytes are not UTF-8 (a text document's data is text)
_NOT_UTF8: Final = "text/plain data that is not UTF-8"


def media_placeholder(block: Any, in_result: bool, options: Any = None) -> str | None:
    """Why a medium of a user turn or a tool result is sent as a text placeholder naming it (None: it is sent): an
    image of a type Anthropic takes (JPEG, PNG, GIF, WebP; a URL of no known type too) and, outside a tool result, a
    PDF or plain-text document are sent; audio, video and every other file are not, nor is plain text whose inline
    bytes (a base64 source, a data: URL) are not UTF-8. The count reads it from the token profile
    (``TokenProfile.media_placeholder``). Plain text read from a file or a download is found not to be UTF-8 only
    when the formatter reads it (``_media``), by the same test (:func:`_decode_text`)."""
    kind, mime = media_kind(block)
    if kind == "image" and (mime is None or mime in _IMAGE_TYPES):
        return None
    if kind == "file" and not in_result and mime in ("application/pdf", "text/plain"):
        if mime == "text/plain":
            data = inline_base64(block.source)
            if data is not None and _decode_text(data) is None:
                return _NOT_UTF8
        return None
    return f"{mime or kind} in {'a tool result' if in_result else 'a user turn'}"


#: Anthropic's own tools (server and client tools): a type dated ``_YYYYMMDD`` (``web_search_20250305``,
#: ``bash_20250124``, ``text_editor_20250728``, ``code_execution_20250825``, ``computer_20250124``,
#: ``memory_20250818``...), or tool search's
_OWN_TYPE: Final = re.compile(r"[a-z][a-z0-9_]*_20[0-9]{6}")
_OWN_UNDATED: Final = frozenset({"tool_search_tool_bm25", "tool_search_tool_regex"})


def _own_tool(tool: Mapping[str, Any]) -> str | None:
    """The name of one of Anthropic's own tools (its ``name``, else its type); None for any other definition."""
    kind = tool.get("type")
    if not isinstance(kind, str) or not (_OWN_TYPE.fullmatch(kind) or kind in _OWN_UNDATED):
        return None
    return own_tool_name(tool, kind)


#: The Messages API version every request names (the ``anthropic-version`` header)
API_VERSION: Final = "2023-06-01"
SPEC: Final = Spec(
    name="anthropic",
    title="Anthropic",
    base_url="https://api.anthropic.com",
    env=("ANTHROPIC_API_KEY",),
    auth="x-api-key",
    headers={"anthropic-version": API_VERSION},
    default_model="claude-sonnet-4-5",
    families=("anthropic",),
    user_first=True,
    signature_chain=True,
    # cache_control on the last tool too; a 5m or 1h ttl, and no 1h breakpoint after a 5m one (prompt-caching docs)
    cache_markers=CacheMarkers(tools=True, lifetimes=True, lifetimes_in_order=True, blocks=True),
    own_tools=OwnTools(  # (a tool_choice forces one by name, as a function tool)
        recognize=_own_tool,
        types="a server or client tool's dated type (web_search_20250305, bash_20250124, ...), "
        + " or ".join(sorted(_OWN_UNDATED)),
    ),
    client_class="AnthropicClient",
    fields=FIELDS,
    # no offline tokenizer for Claude 3+: o200k scaled (measured); a tool-use system prompt of 346 tokens (tool_choice
    # auto/none, Anthropic's tool-use pricing table); previous turns' thinking is not counted (token-counting docs)
    tokens=TokenProfile(
        vocab="o200k_base",
        own=False,
        scale=1.2,
        text_error=0.25,
        per_message=2,
        priming=4,
        per_call=10,
        per_result=8,
        thinking="current",
        tools_base=346,
        per_tool=8,
        image="anthropic",
        assistant_media=False,  # (an assistant turn's media: placeholders)
        media_placeholder=media_placeholder,  # (audio, video, other files: placeholders)
        hint_parts=True,  # (a text part of the user turn after it)
        turns=True,
        own_reasoning="signed",
        pdf_per_page=2250,
        per_error=5,  # (an error result's "is_error":true: 4 o200k tokens, scaled; its rendering not published)
    ),
    # POST /v1/messages/count_tokens -> {"input_tokens": N}: the request's fields MessageCountTokensParams declares
    # (it lacks max_tokens, stream, stop_sequences, metadata, service_tier, temperature ...) [anthropic 2.15.0:
    # message_count_tokens_params.py, message_tokens_count.py]
    counting=CountEndpoint(
        path="/v1/messages/count_tokens",
        keep=(
            "messages",
            "model",
            "system",
            "tools",
            "tool_choice",
            "thinking",
            "output_config",
            "cache_control",
            "speed",
        ),
        reply=("input_tokens",),
        source="Anthropic token-counting docs; anthropic 2.15.0 MessageCountTokensParams",
    ),
)
DEFAULT_MODEL: Final = SPEC.default_model
DEFAULT_MAX_TOKENS: Final = 4096
_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_ID_SEARCH = re.compile(r"[^A-Za-z0-9_-]").search  # tool-call ids are [A-Za-z0-9_-]+


def _id_bad(cid: str) -> Any:
    """The first character of a tool-call id that Anthropic takes none of (:data:`_ID_SEARCH`), or None. An ASCII
    identifier (of [A-Za-z0-9_], as the usual id is) is told good first: a third of the cost of the search."""
    return None if cid.isascii() and cid.isidentifier() else _ID_SEARCH(cid)


_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,128}")
_PARAMS: Final[Mapping[str, str | None]] = {
    "stop": "stop_sequences",
    "seed": None,
    "frequency_penalty": None,
    "presence_penalty": None,
}


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
    """Format a conversation as an Anthropic Messages request (``POST /v1/messages``).

    ``params``: ``max_tokens`` (default 4096), ``temperature``, ``top_p``, ``top_k``, ``stop``
    (-> ``stop_sequences``), ``thinking_budget`` (-> ``thinking``), ``parallel_tool_calls=False``
    (-> ``disable_parallel_tool_use``); other names pass through to the body. ``structured_output`` (or a
    ``response_format`` parameter, mapped): ``output_config.format``; JSON mode, or ``mode="tool"``, a forced tool."""

    def build(ctx: Context, msgs: Sequence[Msg], tool_defs: list[ToolDef], choice: ToolChoice | None) -> Draft:
        walk = _AnthropicWalk(ctx, multi_agent, agent_name)
        turns = walk.run(msgs)
        F.require_turns(turns, ctx.provider, system_beside=True)
        extra = dict(params)
        body: dict[str, Any] = {
            "model": model or SPEC.default_model,
            "max_tokens": extra.pop("max_tokens", None) or DEFAULT_MAX_TOKENS,
            "messages": turns,
        }
        system = walk.system_texts()
        if system:
            body["system"] = system[0] if len(system) == 1 else [{"type": "text", "text": t} for t in system]
        if stream:
            body["stream"] = True
        want = S.asked(ctx, extra)
        reading: dict[str, Any] = {}
        output_config = None
        if want is not None and want.output is not None:
            if want.output.mode == "tool" or want.output.schema is None:
                why = "" if want.output.mode == "tool" else " (Anthropic has no JSON mode)"
                if extra.get("thinking_budget") is not None:
                    why += "; the API refuses a forced tool with extended thinking"
                tool_defs, choice, reading = S.as_tool(ctx, want, tool_defs, choice, why)
            else:
                output_config = S.anthropic_output_config(ctx, want, extra.pop("output_config", None))
                reading = S.reading(want)
        elif want is not None:
            S.anthropic_output_config(ctx, want, None)  # (a response_format of no JSON: said)
        elif isinstance(extra.get("output_config"), Mapping) and extra["output_config"].get("format"):
            reading = S.text_reading()  # output_config.format given as a parameter: JSON all the same
        if tool_defs:
            body["tools"] = anthropic_tools(tool_defs, ctx)
        parallel = extra.pop("parallel_tool_calls", None)
        tc = anthropic_tool_choice(usable_choice(ctx, choice, tool_defs), parallel if tool_defs else None, ctx)
        if tc is not None:
            body["tool_choice"] = tc
        budget = extra.pop("thinking_budget", None)
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if output_config is not None:
            body["output_config"] = output_config
        stop = extra.get("stop")
        if isinstance(stop, str):
            extra["stop"] = [stop]
        F.apply_params(ctx, extra, _PARAMS, body)
        _strip_final_assistant(turns, walk, ctx)
        if ctx.cache_marks or any(t.cache is not None for t in tool_defs):
            _place_cache(ctx, msgs, walk, body, tool_defs)
        return Draft(
            body=body, path="/v1/messages", model=body["model"], headers=dict(SPEC.headers), parser_options=reading
        )

    return run_format(
        SPEC,
        messages,
        build,
        tools=tools,
        tool_choice=tool_choice,
        stream=stream,
        strict=strict,
        options=options,
        id_bad=_id_bad,
        tool_name_ok=_NAME_OK,
        structured_output=structured_output,
        model=model,
        params=params,
    )


def _place_cache(
    ctx: Context, msgs: Sequence[Msg], walk: _AnthropicWalk, body: dict[str, Any], tool_defs: list[ToolDef]
) -> None:
    """The prompt-cache markers as ``cache_control`` on the blocks they mark (tools, system, messages; at most four,
    docs/context.md): the system prompt is sent as a list of text blocks when one of them is marked."""
    system_blocks: list[dict[str, Any]] | None = None

    def part_of(part: Any) -> dict[str, Any] | None:
        nonlocal system_blocks
        if type(part) is tuple:  # (SYSTEM, index of the text)
            if system_blocks is None:
                system_blocks = body["system"] = [{"type": "text", "text": t} for t in walk.system_texts()]
            return system_blocks[part[1]]
        return part  # type: ignore[no-any-return]

    found = C.tool_points(tool_defs, body.get("tools")) + C.points(ctx, msgs, walk.cuts, part_of)
    # a top-level cache_control parameter (automatic caching: the last cacheable block) takes one of the four slots
    C.place(ctx, found, C.anthropic_put, limit=C.LIMIT - ("cache_control" in body), ttl_order=True)


def _strip_final_assistant(turns: list[dict[str, Any]], walk: _AnthropicWalk, ctx: Context) -> None:
    """A final assistant turn (a prefill) may not end with whitespace: strip it, reported."""
    if not turns or turns[-1]["role"] != "assistant":
        return
    last = turns[-1]["content"][-1]
    text = last["text"] if last.get("type") == "text" else None
    if text is not None and text != text.rstrip():
        last["text"] = text.rstrip()
        ctx.report(
            _text_from(text, walk, ctx), "trailing-whitespace-stripped", "the final assistant text was right-stripped"
        )


def _text_from(text: str, walk: _AnthropicWalk, ctx: Context) -> str:
    """The block a text part of the final assistant turn was sent for, ``/i/content/j``: the last block of the turn's
    messages that sends that text (a text block's, after another speaker's ``[Name]: `` in multi-agent mode; reasoning
    sent as text; an assistant medium's placeholder). The turn's last message (``/i``) when none does: it is not
    always the block's (a message merged into the turn whose thinking goes to its start adds no part at its end)."""
    messages = ctx.messages
    for i in range(min(walk.last_i, len(messages) - 1), -1, -1):
        msg = messages[i]
        if msg.role.value != "ASSISTANT":
            continue
        blocks: list[Any] = msg.content
        for j in range(len(blocks) - 1, -1, -1):
            b = blocks[j]
            t = type(b)
            if t is TextBlock:
                sent = b.text
                if sent == text or (text.endswith(sent) and text == f"[{F.speaker_label(msg)}]: {sent}"):
                    return f"/{i}/content/{j}"
            elif (t is ThinkingBlock and b.thinking == text) or (t in F.MEDIA and F.block_label(b) == text):
                return f"/{i}/content/{j}"
    return f"/{walk.last_i}"


class _AnthropicWalk(TurnWalk):
    assistant_role = "assistant"
    parts_key = "content"
    places_marks = True

    def cacheable(self, part: Any) -> bool:
        """Every block takes ``cache_control`` but thinking (the API's params declare none) and empty text."""
        kind = part.get("type")
        return kind != "thinking" and kind != "redacted_thinking" and (kind != "text" or bool(part.get("text")))

    def text_part(self, text: str) -> Any:
        return {"type": "text", "text": text}

    def __init__(self, ctx: Context, multi: bool, agent: str | None) -> None:
        super().__init__(ctx, multi, agent)
        #: (message, the part before it) of the run of thinking blocks that goes first in that message's turn (set
        #: here: a class default is read the slow way until first set, Walk.hot_flags)
        self._lead_run: tuple[int, Any] | None = None

    def thinking_part(self, block: ThinkingBlock, i: int, j: int, prev: Any) -> Any:
        """Whether a thinking block of message ``i`` goes to the start of its turn (else it stays in its place), and
        its part.

        The API returns an assistant message that has thinking with thinking first, rejects one that has
        thinking but starts otherwise ("the first block must be thinking or redacted_thinking"), and asks for
        each turn back exactly as it returned it: moving a thinking block fails the prefix check of models with
        preserved thinking (a 400, or the block dropped). So thinking stays where the model put it, interleaved
        thinking (after a tool_use) included; only in a message that does not start with thinking does its
        first run of thinking blocks go first (said ``thinking-moved``), the least move the API accepts.

        The same holds for the turn a message is merged into (consecutive assistant messages, which the API
        itself would combine into one turn in their order): when that turn starts with thinking, the merged
        message's thinking stays in its place after the turn's blocks, as the model produced it (a
        continuation, say after ``pause_turn``, is generated after them: moving its thinking ahead of them would
        change its prefix); only when the turn holds no thinking yet does the message's first run go to the
        start of the turn (said ``thinking-moved``)."""
        ctx = self.ctx
        meta = block.metadata or {}
        if meta.get("redacted") is True:
            data = meta.get("redactedData")
            if not isinstance(data, str) or not data:
                ctx.report(
                    f"/{i}/content/{j}", "thinking-dropped", "redacted thinking without redactedData cannot be replayed"
                )
                return None
            F.stand_in_said(ctx, block, (i, j), "its redactedData")
            part = {"type": "redacted_thinking", "data": data}
        else:
            signature = meta.get("signature")
            if not isinstance(signature, str) or not signature:
                if self.demote and block.thinking:
                    ctx.report(f"/{i}/content/{j}", "thinking-demoted", "unsigned reasoning sent to anthropic as text")
                    return False, {"type": "text", "text": block.thinking}
                ctx.report(
                    f"/{i}/content/{j}",
                    "thinking-dropped",
                    "unsigned reasoning cannot be sent as an Anthropic thinking block",
                )
                return None
            part = {"type": "thinking", "thinking": block.thinking, "signature": signature}
        # where it goes (the docstring says why; here, not in a method of its own: one call less per block)
        if self.role == self.assistant_role and self.lead:  # merged into a turn that starts with thinking
            return False, part
        if prev is None:  # the message starts with thinking (or this continues that first run)
            self._lead_run = (i, None)
            return True, part
        run = self._lead_run
        if run is None or run[0] != i:  # the message's first thinking, after other parts: its run goes first
            self._lead_run = (i, prev)
            return True, part
        return run[1] is prev, part  # the same run (its blocks went first, so nothing came between), else in place

    def provider_part(self, meta: dict[str, Any], i: int, j: int, prev: Any) -> Any:
        """Anthropic's own data, kept by the reader, back as the API gave it: a server tool's block (``server_tool_use``,
        ``web_search_tool_result``, ...: ``encrypted_content`` byte for byte, as the API asks for multi-turn search) in
        its place, and a text block's citations (``encrypted_index`` included) on that text block."""
        block = meta.get(F.PROVIDER_BLOCK)
        if block is not None:
            kind = block.get("type") if isinstance(block, dict) else None
            if _server_side(kind) or kind == "text":  # (what the reader keeps so: a cited text block of no text too)
                return dict(block)  # (a copy: the final turn's text may be right-stripped, never the message's)
            F.carrier_dropped(self.ctx, meta, (i, j), "it is no block of a tool Anthropic runs itself")
            return None
        citations = meta.get(F.CITATIONS)
        if not isinstance(citations, list):
            F.carrier_dropped(self.ctx, meta, (i, j), "they are no list")
        elif isinstance(prev, dict) and prev.get("type") == "text" and "citations" not in prev:
            prev["citations"] = citations  # (the text part was made for this turn: never the message's)
        else:
            F.carrier_dropped(self.ctx, meta, (i, j), "no text block is sent right before them")
        return None

    def is_call(self, part: Any) -> bool:
        return bool(part.get("type") == "tool_use")

    def tool_use_part(self, block: ToolUseBlock, sent: str, tool: str, i: int, j: int) -> Any:
        meta = block.metadata
        if meta and meta.get("thoughtSignature"):
            self.ctx.report(f"/{i}/content/{j}", "signature-dropped", "anthropic has no field for a call's signature")
        return {"type": "tool_use", "id": sent, "name": tool, "input": block.input}

    def tool_result_part(
        self, block: ToolResultBlock, sent: str, tool: str | None, i: int, j: int, text: str | None
    ) -> Any:
        if text and not text.isspace():  # the usual result
            if block.state in F.ERROR_STATES:
                return {
                    "type": "tool_result",
                    "tool_use_id": sent,
                    "content": [{"type": "text", "text": text}],
                    "is_error": True,
                }
            return {"type": "tool_result", "tool_use_id": sent, "content": [{"type": "text", "text": text}]}
        ctx = self.ctx
        output: list[Any] = block.output
        part: dict[str, Any] = {"type": "tool_result", "tool_use_id": sent}
        content: list[dict[str, Any]] = []
        out_pointer = f"/{i}/content/{j}/output"
        for k, b in enumerate(output):
            kind = b.type
            if kind == "text" or kind == "hint":  # (the API refuses a text block that is empty or only whitespace)
                text = b.text if kind == "text" else b.hint
                if kind == "hint":
                    F.hint_in_result(ctx, f"{out_pointer}/{k}")
                if text.strip():
                    content.append({"type": "text", "text": text})
                else:
                    ctx.report(f"{out_pointer}/{k}", "empty-text-dropped", f"blank {kind} in a tool result not sent")
            elif kind in ("image", "data", "audio", "video"):
                media = self._media(b, f"{out_pointer}/{k}", in_result=True)
                content.append(media)
            else:
                ctx.report(f"{out_pointer}/{k}", "block-dropped", f"{kind} block inside a tool result is not sent")
        if content:
            part["content"] = content
        if F.result_is_error(block):
            part["is_error"] = True
        return part

    def media_part(self, block: Any, pointer: str, assistant: bool) -> Any:
        if assistant:
            label = F.block_label(block)
            self.ctx.report(
                pointer, "media-unsupported", f"{block.type} in an assistant turn sent as a text placeholder"
            )
            return {"type": "text", "text": label}
        return self._media(block, pointer, in_result=False)

    def inline_image(self, block: Any) -> dict[str, Any] | None:
        src = block.source
        if (
            src.type == "base64"
            and src.media_type in _IMAGE_TYPES
            and block.min_pixels is None
            and block.max_pixels is None
        ):
            return {"type": "image", "source": {"type": "base64", "media_type": src.media_type, "data": src.data}}
        if (
            src.type == "url"
            and src.mime_type
            and src.mime_type.lower() in _IMAGE_TYPES
            and src.url.startswith(WEB_URL)
            and block.min_pixels is None
            and block.max_pixels is None
        ):  # a web URL of a declared image type, passed through as _media would (MediaSession.resolve)
            return {"type": "image", "source": {"type": "url", "url": src.url}}
        return None

    def _media(self, block: Any, pointer: str, in_result: bool) -> dict[str, Any]:
        ctx = self.ctx
        if type(block) is ImageBlock:
            usual = self.inline_image(block)
            if usual is not None:
                return usual
        kind, mime = media_kind(block)
        F.media_options(block, (), ctx, pointer)
        why = media_placeholder(block, in_result)
        if why is not None:
            return self._placeholder(block, pointer, why)
        if kind == "image":
            m = ctx.media.resolve(block.source, pointer, inline=False)
            if m.url is not None:
                F.name_not_sent(block, ctx, pointer)
                return {"type": "image", "source": {"type": "url", "url": m.url}}
            if m.mime in _IMAGE_TYPES:
                F.name_not_sent(block, ctx, pointer)
                return {"type": "image", "source": {"type": "base64", "media_type": m.mime, "data": m.data}}
            where = "a tool result" if in_result else "a user turn"  # (bytes of a type it does not take)
            return self._placeholder(block, pointer, f"{mime or kind} in {where}")
        # a PDF or plain-text document; a URL document is a PDF to Anthropic (URLPDFSource): plain text goes as its
        # text, so its bytes are needed
        m = ctx.media.resolve(block.source, pointer, inline=mime == "text/plain")
        doc: dict[str, Any]
        if m.url is not None:
            doc = {"type": "document", "source": {"type": "url", "url": m.url}}
        elif mime == "application/pdf":
            doc = {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": m.data},
            }
        else:
            text = _decode_text(m.data or "")
            if text is None:
                return self._placeholder(block, pointer, _NOT_UTF8)
            doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
        name = getattr(block, "name", None)
        if name:
            doc["title"] = name
        return doc

    def _placeholder(self, block: Any, pointer: str, what: str) -> dict[str, Any]:
        label = F.block_label(block)
        self.ctx.report(pointer, "media-unsupported", f"anthropic takes no {what}; sent as a text placeholder")
        return {"type": "text", "text": label}

    def repair_part(self, sent: str, tool: str) -> Any:
        return {
            "type": "tool_result",
            "tool_use_id": sent,
            "content": [{"type": "text", "text": F.REPAIR_TEXT}],
            "is_error": True,
        }


def _decode_text(data: str) -> str | None:
    try:
        return base64.b64decode(data).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


# ---- payload values: what a reply's and a chunk's fields hold ----------------------------------------------
# An Anthropic Messages response becomes the events its stream would give, reduced by the one Reducer.


_NORMAL_STOP = ("end_turn", "stop_sequence")


#: The usage counts :func:`_usage` reads
_COUNTS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "output_tokens_details",
)


def _usage(u: Mapping[str, Any], b: StreamBuilder) -> dict[str, Any] | None:
    """Anthropic counts cached input apart from ``input_tokens`` (the tokens after the last cache breakpoint):
    inputTokens is the sum of the three (every input token, as the other providers count it, and as AgentScope
    Java's Anthropic parser sums them), cachedTokens the cache reads, cacheCreationInputTokens the cache writes.
    ``output_tokens`` includes the thinking (``output_tokens_details.thinking_tokens``: reasoningTokens). A count
    given that is no count is said (``safe_int``), the rest kept."""
    given = safe_int(u.get("input_tokens"), b, "usage.input_tokens")
    written = safe_int(u.get("cache_creation_input_tokens"), b, "usage.cache_creation_input_tokens")
    read = safe_int(u.get("cache_read_input_tokens"), b, "usage.cache_read_input_tokens")
    total_in = None if given is None else given + (written or 0) + (read or 0)
    details = u.get("output_tokens_details")
    thinking = (
        safe_int(details.get("thinking_tokens"), b, "usage.output_tokens_details.thinking_tokens")
        if isinstance(details, dict)
        else None
    )
    return usage_dict(
        total_in,
        safe_int(u.get("output_tokens"), b, "usage.output_tokens"),
        read,
        cache_write=written,
        reasoning=thinking,
    )


def _finish(b: StreamBuilder, reason: Any, over: bool = True) -> None:
    if reason and type(reason) is not str:
        reason = b.string(reason, "stop_reason")  # (said, left out: as an absent one)
    if isinstance(reason, str) and reason:
        b.finish(0, reason, tool_calls=reason == "tool_use", normal=reason in _NORMAL_STOP, over=over)
        if reason == "refusal":
            b.refused(0)


#: What a message (or its message_delta) says of how it ended, or of where it ran, that the message has no
#: place for: said (StreamBuilder.not_kept), not dropped silently.
_ENDING_NOT_KEPT = (
    ("stop_sequence", "the stop sequence that ended the reply"),
    ("stop_details", "stop_details (why the reply stopped)"),
    ("container", "the code execution container"),
)


def _ending_not_kept(b: StreamBuilder, holder: Mapping[str, Any]) -> None:
    for key, what in _ENDING_NOT_KEPT:
        value = holder.get(key)
        if value:
            shown = b.shown(value)
            b.not_kept(key, f"{what} ({key}: {shown}) is not kept (the message has no place for it)")


#: What a message (message_start's, or the whole response) or a message_delta event reports of what the API did
#: with the request (beta fields: the context edits it applied, the input blocks it changed or dropped, why the
#: prompt cache missed): news of this call, unlike fields that only name the serving (OpenAI's
#: ``system_fingerprint``, ``service_tier``); said (StreamBuilder.not_kept) when it says something.
_REQUEST_NOT_KEPT = (
    ("context_management", "the context edits the API applied to the request"),
    ("input_transformations", "the changes the API made to the request's input (blocks dropped or let through)"),
    ("diagnostics", "the request's diagnostics (why the prompt cache missed)"),
)


_REQUEST_NOT_KEPT_KEYS = frozenset(key for key, _ in _REQUEST_NOT_KEPT)


def _request_not_kept(b: StreamBuilder, holder: Mapping[str, Any]) -> None:
    if _REQUEST_NOT_KEPT_KEYS.isdisjoint(holder):  # (the usual message and message_delta: none of them, one set test)
        return
    for key, what in _REQUEST_NOT_KEPT:
        value = holder.get(key)
        if any(value.values()) if isinstance(value, dict) else value:  # (an object of nulls or empties: nothing)
            shown = b.shown(value)
            b.not_kept(key, f"{what} ({key}: {shown}) is not kept (the message has no place for it)")


def _call_not_kept(b: StreamBuilder, block: Mapping[str, Any]) -> None:
    """What a tool_use block says beside its call that the message has no place for: its ``caller`` when the call
    is not the model's own (programmatic tool calling: code the provider runs calls the tool) and its
    ``toolset_name``; said once per reply and kind."""
    caller = block.get("caller")
    kind = caller.get("type") if isinstance(caller, dict) else caller
    if caller and kind != "direct":
        shown = b.shown(caller)
        b.not_kept(
            f"caller/{str(kind)[:40]}",
            f"the caller of a tool call ({shown}: code the provider runs calls the tool) is not kept (the message has"
            " no place for it)",
        )
    toolset = block.get("toolset_name")
    if toolset:
        b.not_kept("toolset_name", f"a tool call's toolset ({b.named(toolset, 80)}) is not kept")


def _error(b: StreamBuilder, obj: Mapping[str, Any]) -> None:
    raw = obj.get("error")
    if not isinstance(raw, dict):  # (a proxy's error as text, or none: the message says what came)
        message = obj.get("message")
        if raw is None and isinstance(message, str) and message:  # a proxy's {code, message} after event: error
            b.error(message, kind="provider_error", code=obj.get("code"))
            return
        shown = raw if isinstance(raw, str) and raw else b.shown(obj, None)
        b.error(shown, kind="provider_error")
        return
    err = as_object(raw)
    # (the request's id, beside the error: what Anthropic's support asks for)
    rid = obj.get("request_id")
    b.error(str(err.get("message") or err), kind=str(err.get("type") or "provider_error"), request_id=rid)


def _server_side(kind: Any) -> bool:
    """A block of a tool the provider runs itself (``server_tool_use``, ``web_search_tool_result``,
    ``mcp_tool_use``, ``code_execution_tool_result``, ...): no call for the client to run."""
    return isinstance(kind, str) and (kind.endswith(("_tool_use", "_tool_result")) or kind == "container_upload")


#: Block types the API sends that the message has no place for (not tools): said, their deltas skipped.
_NOT_KEPT_BLOCKS = {
    "compaction": "the context compaction (the summary that replaces the earlier turns)",
    "fallback": "the notice that another model answered",
    "mcp_tool_listing": "the tool listing fetched from an MCP server",
}


def _citations(b: StreamBuilder, index: Any, value: Any) -> list[Any]:
    """A text block's ``citations`` (null or a list; another value is said, ``type``, and left out)."""
    if value is None or isinstance(value, list):
        return value or []
    b.problem("type", f"the citations of text block {index} are a JSON {json_type(value)}, not a list: left out")
    return []


def _cited(b: StreamBuilder, slot: str, text: bool, block: Mapping[str, Any], citations: list[Any]) -> None:
    """The citations of the text block in ``slot``, which just ended: kept in a carrier right after it (metadata
    ``citations``), which the formatter puts back on that block. A cited block of no text (the message has no empty
    text block) is kept whole in its place (metadata ``providerBlock``): the citations go with their own block."""
    if not citations:
        return
    if text:
        b.carrier({"citations": citations}, slot=f"cites-{slot}")
    else:
        b.carrier({"providerBlock": {**block, "citations": citations}}, slot=f"cites-{slot}")


def _no_input(b: StreamBuilder, index: Any, block: Mapping[str, Any]) -> None:
    """A tool_use block with no input (the key missing, or null) and no input_json_delta to give it one: its call
    is kept with input ``{}`` (what a call of no arguments holds; the SDK's accumulator keeps ``input`` None), and
    that is said (rule shape): the API always sends an input object."""
    given = "null" if "input" in block else "missing"
    b.problem(
        "shape",
        f"tool_use block {str(index)[:20]} ({str(block.get('name'))[:80]!r}) has no input ({given}): its call is"
        " kept with input {}",
    )


def _block(b: StreamBuilder, index: Any, block: Mapping[str, Any], whole: bool) -> None:
    """A content block: whole (non-streaming) or as content_block_start gives it (the reader then follows its deltas:
    citations, a server tool's input)."""
    slot = f"b{index}"
    kind = block.get("type")
    if kind is not None and type(kind) is not str:  # (a list or an object: no kind of block; it raised TypeError)
        b.problem("type", f"content block {index}'s type is a JSON {json_type(kind)}, not a string: left out")
        return
    if kind == "text":
        text = block.get("text") or ""
        b.text(text, slot=slot)
        if whole:
            citations = _citations(b, index, block.get("citations"))
            b.end_block(slot)
            _cited(b, slot, bool(text), block, citations)
        return
    elif kind == "thinking":
        b.thinking(block.get("thinking") or "", slot=slot)
        sig = block.get("signature")
        if isinstance(sig, str):
            b.signature(sig, slot=slot)  # a signature_delta after it replaces it
        elif sig is not None:
            b.string(sig, "a thinking block's signature")  # (said: the turn cannot be replayed with it)
    elif kind == "redacted_thinking":
        b.thinking("", slot=slot, redacted=str(block.get("data") or ""))
    elif kind == "tool_use":
        args = None
        if whole:
            if block.get("input") is None:
                _no_input(b, index, block)
            args = b.json_text(block.get("input") if block.get("input") is not None else {})
        b.tool_call(slot, call_id=block.get("id"), name=block.get("name"), arguments=args)
        if whole:
            b.end_tool_call(slot)
        if len(block) > 4:  # (id, name, input, type: what a call holds; anything beside them is said)
            _call_not_kept(b, block)
        return
    elif _server_side(kind):
        # A tool the provider runs itself: kept as it came, in its place, for Anthropic only (a carrier: metadata
        # providerBlock). Never a call for the client to run. Streamed, the reader opens its carrier here and ends it
        # with the block once its input is whole.
        if whole:
            b.carrier({"providerBlock": dict(block)}, slot=slot)
        else:
            b.open_carrier(slot)
        return
    elif kind in _NOT_KEPT_BLOCKS:
        detail = ""
        if kind == "fallback" and isinstance(block.get("from"), dict):
            detail = f": from {str(block['from'].get('model'))[:80]!r}"
        served = block.get("to")
        if kind == "fallback" and isinstance(served, dict) and isinstance(served.get("model"), str) and served["model"]:
            b.model = served["model"]  # the model that served what follows (the SDK relabels its snapshot so)
        b.not_kept(
            f"block/{kind}",
            f"{_NOT_KEPT_BLOCKS[kind]} ({kind} blocks{detail}) is not kept (the message has no place for it)",
        )
        return
    else:
        b.problem("enum", f"content block type {b.named(kind)} is not supported: skipped")
        return
    if whole:
        b.end_block(slot)


# ---- reply fields: what each becomes (providers/_response/fields.py) ---------------------------------------

_SERVING = "describes the serving, not the reply"
#: What the reader does with each field of a reply (a stream's events carry the same: message_start's message,
#: content blocks and their deltas, message_delta's)
REPLY_FIELDS: Final = (
    ReplyField("id", MAPPED, "the message id"),
    ReplyField("model", MAPPED, "metadata `agentmsg_model` (thinking blocks' `model`)"),
    ReplyField("type|role", NOT_READ, "always a message of the assistant"),
    ReplyField("content[] text", KEPT, "a text block (structured output: metadata `_structured_output`)"),
    ReplyField("content[] text (think_tags)", MAPPED, THINK_TAGS),
    ReplyField(
        "content[] text .citations",
        MAPPED,
        "a carrier after the text block: thinking metadata `citations`, as given (`citations_delta` too)",
    ),
    ReplyField("content[] thinking", MAPPED, "a thinking block, its `signature` in metadata"),
    ReplyField(
        "thinking_delta.estimated_tokens",
        NOT_KEPT,
        "streams: a thinking delta's estimate of the block's tokens (beta `thinking-token-count`); usage"
        " `reasoningTokens` has the count",
    ),
    ReplyField("content[] redacted_thinking", MAPPED, "a thinking block: metadata `redacted`, `redactedData`"),
    ReplyField("content[] tool_use", MAPPED, "a tool_use block (`id`, `name`, `input`)"),
    ReplyField("content[] tool_use .caller|.toolset_name", NOT_KEPT, "programmatic tool calling, toolsets"),
    ReplyField(
        "content[] server_tool_use, web_search_tool_result, mcp_tool_use, ... (a *_tool_use or *_tool_result)",
        MAPPED,
        "tools the provider runs itself: a carrier in its place (thinking metadata `providerBlock`, as given); never a"
        " call for the client",
    ),
    ReplyField("content[] compaction|fallback|mcp_tool_listing", NOT_KEPT, "a `fallback` names the model of the rest"),
    ReplyField(
        "stop_reason", MAPPED, "metadata `agentmsg_finish_reason`; the generate reason (`refusal`: `agentmsg_refusal`)"
    ),
    ReplyField("stop_sequence", NOT_KEPT),
    ReplyField("stop_details", NOT_KEPT),
    ReplyField("container", NOT_KEPT),
    ReplyField("context_management|input_transformations|diagnostics", NOT_KEPT, "what the API did with the request"),
    ReplyField(
        "usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens",
        MAPPED,
        "usage `inputTokens` (their sum: every input token)",
    ),
    ReplyField("usage.cache_read_input_tokens", MAPPED, "usage `cachedTokens`"),
    ReplyField("usage.cache_creation_input_tokens", MAPPED, "usage `cacheCreationInputTokens`"),
    ReplyField("usage.output_tokens", MAPPED, "usage `outputTokens`"),
    ReplyField("usage.output_tokens_details.thinking_tokens", MAPPED, "usage `reasoningTokens`"),
    ReplyField(
        "usage.cache_creation, usage.server_tool_use, usage.iterations, usage.fallback_credit, usage.service_tier,"
        " usage.speed, usage.inference_geo",
        NOT_READ,
        "details the usage has no field for (the per-TTL cache writes, server tool requests, per-iteration counts),"
        " and where and how it was served",
    ),
    ReplyField("error", MAPPED, "an error event (metadata `agentmsg_errors`, `request_id` kept); INTERRUPTED"),
)

# ---- reader: whole replies and stream payloads -------------------------------------------------------------


#: The block type each delta type belongs to (the SDK's accumulator applies a delta only to a block of it).
_DELTA_BLOCK: dict[Any, Any] = {
    "text_delta": "text",
    "citations_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool_use",
}
_ENDED = object()  # a block whose content_block_stop came
#: The deltas the parser may read in C (PayloadReader.route_text): each one's bytes before its string, as the API
#: writes them (then the string and ``}}``), and what the string is read as (the route's kind)
_ROUTED_DELTAS: Final = {
    "text_delta": (b'{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":', "text"),
    "input_json_delta": (
        b'{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":',
        "call",
    ),
    "thinking_delta": (
        b'{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":',
        "thinking",
    ),
}


_UNTYPED: Final = object()  # (a payload's type when it has none)
#: the event types the reader reads, which a payload of no type may be read as by its SSE event line's name (not
#: "message": the SSE name of data with no event line, a whole message's type, which is read only by its own type)
_NAMED_EVENTS: Final = frozenset(
    (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    )
)


class Reader(PayloadReader):
    """Messages payloads -> AgentEvents: a whole response (a message: text, thinking with its signature,
    redacted thinking, tool calls, usage, stop reason mapped to the generate reason), and each event of an SSE
    stream: blocks by ``index``; thinking with ``signature_delta`` (signature-only deltas), redacted thinking,
    ``input_json_delta`` fragments routed to their tool_use; ``ping`` and unknown event types ignored; an
    ``error`` event mid-stream ends the reply interrupted with everything before it kept (payloads after it are
    skipped and said, as after ``message_stop``)."""

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        super().__init__(builder, spec, **options)
        self._usage: dict[str, Any] = {}
        self._inputs: dict[str, str] = {}  # tool_use slot -> its start input (used when no delta comes)
        self._no_input: dict[str, Mapping[str, Any]] = {}  # tool_use slot -> its start, which gave no input
        self._skipped: set[str] = set()  # slots of blocks not kept (their deltas are skipped too)
        #: slots of the server tools' blocks streaming: (the block as content_block_start gave it, its input's
        #: input_json_delta fragments), kept whole when the block stops
        self._server: dict[str, tuple[dict[str, Any], list[str]]] = {}
        #: text slot -> (its content_block_start, its citations so far: the start's, then each citations_delta)
        self._cites: dict[str, tuple[dict[str, Any], list[Any]]] = {}
        self._kinds: dict[str, Any] = {}  # slot -> its block's type (content_block_start); _ENDED once stopped
        self._started = False  # a message_start came
        self._slots: dict[int, str] = {}  # block index -> its slot name (made once)
        self._foreign = 0  # payloads of no Anthropic event type (another provider's stream, say)

    def reply(self, obj: Any) -> None:
        b = self.b
        if obj.get("type") != "error" and (
            (obj.get("type") != "message" and not isinstance(obj.get("content"), list))
            or obj.get("role", "assistant")
            != "assistant"  # an agentmsg message (role USER, ASSISTANT), a request's turn
        ):
            raise ValidationError.single(
                "", "shape", "a Messages response is a message (type, content, role assistant) or an error"
            )
        if obj.get("type") == "error":
            _error(b, obj)
        else:
            b.identify(obj.get("id"), obj.get("model"))
            if isinstance(obj.get("usage"), dict):
                b.set_usage(_usage(obj["usage"], b))
            elif obj.get("usage") is not None:
                b.no_usage("usage", obj["usage"])
            b.choice(0)
            for index, block in enumerate(b.array(obj.get("content"), "the message's content")):
                if isinstance(block, dict):
                    _block(b, index, block, whole=True)
                else:
                    b.problem("type", f"content block {index} is a JSON {json_type(block)}, not an object: left out")
            _finish(b, obj.get("stop_reason"))
            _ending_not_kept(b, obj)
            _request_not_kept(b, obj)
        b.close(ended=True)  # a whole message without a stop reason is whole, as one that ends with message_stop

    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        b = self.b
        kind = obj.get("type", _UNTYPED)
        if kind is _UNTYPED:
            kind = self._untyped(event)
        if kind == "content_block_delta":
            delta = obj["delta"]
            dkind = delta.get("type")
            index = obj.get("index")  # (the slot looked up inline: the common payload)
            slot = (self._slots.get(index) if type(index) is int else None) or self._slot(index)
            if slot in self._skipped:
                return  # the deltas of a block not kept: skipped with it
            if slot in self._server:
                self._server_delta(slot, dkind, delta)
                return
            block_kind = self._kinds.get(slot)
            if block_kind != _DELTA_BLOCK.get(dkind, block_kind) and not self._misplaced(slot, dkind, block_kind):
                return
            routed = _ROUTED_DELTAS.get(dkind)
            if routed is not None and block_kind == _DELTA_BLOCK[dkind] and type(index) is int and type(self) is Reader:
                # the next deltas of this kind and block, in the API's bytes, are read as this one (in C); not in a
                # subclass, which may read payloads its own way (chunk() would not see them)
                self.route_text(routed[0] % index, b"}}", slot, event, kind=routed[1])
            if dkind == "text_delta":
                b.text(delta.get("text") or "", slot=slot)
            elif dkind == "input_json_delta":
                b.tool_call(slot, arguments=delta.get("partial_json") or "")
            elif dkind == "thinking_delta":
                b.thinking(delta.get("thinking") or "", slot=slot)
                if "estimated_tokens" in delta:  # (a delta with it is never routed: its bytes are not the route's)
                    shown = str(delta["estimated_tokens"])[:80]
                    b.not_kept(
                        "estimated_tokens",
                        f"a thinking delta's estimate of its tokens (estimated_tokens: {shown}) is not kept (the"
                        " message has no place for it; the usage's reasoningTokens is the count)",
                    )
            elif dkind == "signature_delta":
                b.signature(delta.get("signature") or "", slot=slot)  # the whole signature: the last one wins
            elif dkind == "citations_delta":
                citation = delta.get("citation")
                if isinstance(citation, dict):
                    self._cites.setdefault(slot, ({"type": "text", "text": ""}, []))[1].append(citation)
                else:
                    b.problem("type", f"a citations_delta whose citation is a JSON {json_type(citation)}: left out")
            else:  # (said once: the builder says each problem once, and holds no more than MAX_PROBLEMS)
                b.problem("enum", f"content block delta type {b.named(dkind)} is not supported: skipped")
        elif kind == "content_block_start":
            block = obj["content_block"]
            slot = self._slot(obj.get("index"))
            if self._kinds.get(slot, _ENDED) is not _ENDED or slot in self._skipped:
                self._restarted(slot, block.get("type"))
            if block.get("type") == "tool_use":
                start_input = block.get("input")
                self._inputs[slot] = b.json_text(start_input if start_input is not None else {})
                if start_input is None:
                    self._no_input[slot] = block  # said at its stop if no input_json_delta gave it one
                elif self._no_input:
                    self._no_input.pop(slot, None)
            kind = block.get("type")
            if kind is not None and type(kind) is not str:  # (said by _block: its deltas are skipped with it)
                self._skipped.add(slot)
            elif kind in _NOT_KEPT_BLOCKS:
                self._skipped.add(slot)  # its deltas are skipped with it
            elif kind == "text":
                citations = _citations(b, obj.get("index"), block.get("citations"))
                if citations:
                    self._cites[slot] = (block, list(citations))
            elif _server_side(kind):
                self._server[slot] = (dict(block), [])  # its input_json_delta are not the client's: kept in it
            self._kinds[slot] = kind
            _block(b, obj.get("index"), block, whole=False)
        elif kind == "content_block_stop":
            self._stop(self._slot(obj.get("index")))
        elif kind == "message_start":
            self._message_start(obj.get("message") or {})
        elif kind == "message_delta":
            self._add_usage(obj.get("usage"))
            delta = obj.get("delta") or {}
            _finish(b, delta.get("stop_reason"))
            _ending_not_kept(b, delta)
            _request_not_kept(b, obj)  # (beside the delta, on the event)
        elif kind == "message_stop":
            self.done = True
            self._flush()
            b.close(ended=True)
        elif (
            kind == "message"
            and not self._started
            and isinstance(obj.get("content"), list)
            and obj.get("role", "assistant") == "assistant"
        ):
            # A whole Messages response where a stream was asked for (a server or proxy that ignores "stream": true,
            # a saved response read with --stream): the message_start of a message that comes whole, then its end.
            # Its role is the assistant's, as reply() asks: a request's user turn, an AgentScope Python or agentmsg
            # message is no reply (counted foreign below, said when the body ends).
            self._message_start(obj)  # (its stop reason too)
            self.done = True
            b.close(ended=True)
        elif kind == "error" or ("type" not in obj and isinstance(obj.get("error"), dict)):
            _error(b, obj)  # (an error without its type: a proxy's, or one on lines of no SSE field)
            self.end_at_error()
        elif kind != "ping":
            self._foreign += 1  # an event type not known (a newer API's: skipped, as the SDK skips it)
            if self._started and type(obj.get("type")) is not str:
                # (a type no text, or none and no SSE event name to read it by: no newer API's event, a broken one)
                given = f"a JSON {json_type(obj['type'])}" if "type" in obj else "missing"
                b.problem("type", f"a payload of no event type (its type {given}): skipped")

    def _untyped(self, event: str) -> str:
        """The type of a payload that has none: the name its SSE ``event:`` line gives (``""`` when none). An
        Anthropic event read so is said (rule type, once per name): the SDK builds its events from the payload
        alone and drops such a one. Another name goes on as an unknown type would (said below, once a message
        started); an ``error`` is said as the error it is, a ``ping`` holds nothing."""
        if event in _NAMED_EVENTS:
            self.b.problem("type", f"a payload of no type, read as the {event} its SSE event line names")
        return event

    def _stop(self, slot: str) -> None:
        """The block in ``slot`` stops (its content_block_stop)."""
        b = self.b
        if slot in self._skipped:
            return
        if slot in self._kinds:
            self._kinds[slot] = _ENDED
        if slot in self._server:
            self._end_server(slot)
        elif b.open_call(slot):
            start = self._no_input.pop(slot, None)
            if start is not None and not b.call_text(slot):
                _no_input(b, slot[1:], start)
            b.end_tool_call(slot, default_arguments=self._inputs.pop(slot, None))
        else:
            self._end_text(slot)

    def _restarted(self, slot: str, kind: Any) -> None:
        """A content_block_start for a block index whose block has not stopped (a replaying proxy, a stream joined
        to another): said, and that block ends here as its content_block_stop would end it, so that the new block's
        content is its own (neither joined to the old one's text nor lost with a block not kept before it)."""
        if slot in self._skipped:
            self._skipped.discard(slot)
        else:
            self.b.problem(
                "order",
                f"a content_block_start ({self.b.named(kind, 40)}) for block {slot[1:]}, whose"
                f" {self.b.named(self._kinds.get(slot), 40)} block has not stopped: that block ends there, the new one"
                " is kept after it",
            )
            self._stop(slot)

    def _message_start(self, m: Mapping[str, Any]) -> None:
        b = self.b
        self._started = True
        if b.opened() and m.get("id") and b.response_id and m.get("id") != b.response_id:
            b.problem(
                "order",
                f"a second message_start (message {str(m.get('id'))[:80]!r}) before the first one stopped:"
                " its content is kept in the same reply",
            )
        b.identify(m.get("id"), m.get("model"))
        self._add_usage(m.get("usage"))
        b.choice(0)
        # A message that comes whole in its message_start (programmatic tool calling: content and stop
        # reason there, then message_stop)
        for index, block in enumerate(b.array(m.get("content"), "message_start's content")):
            if isinstance(block, dict):
                _block(b, index, block, whole=True)
                self._kinds[f"b{index}"] = _ENDED
            else:
                b.problem("type", f"content block {index} is a JSON {json_type(block)}, not an object: left out")
        if m.get("stop_reason"):
            # (a message_delta's replaces it, as in the SDK's accumulator: the blocks that follow are no late content)
            _finish(b, m.get("stop_reason"), over=False)
        _ending_not_kept(b, m)
        _request_not_kept(b, m)

    def _slot(self, index: Any) -> str:
        """The builder slot of content block ``index`` (named once per index)."""
        slot = self._slots.get(index) if type(index) is int else None
        if slot is None:
            slot = f"b{index}"
            if type(index) is int:
                self._slots[index] = slot
        return slot

    def _end_text(self, slot: str) -> None:
        """End the (text or thinking) block in ``slot``; a text block's citations follow it (see _cited)."""
        b = self.b
        text = b.is_open(slot)  # (an empty text block opens nothing)
        b.end_block(slot)
        cited = self._cites.pop(slot, None)
        if cited is not None:
            _cited(b, slot, text, cited[0], cited[1])

    def _server_delta(self, slot: str, dkind: Any, delta: Mapping[str, Any]) -> None:
        """A delta of a server tool's block: its input's fragments are kept in it (as the SDK's accumulator reads a
        ``server_tool_use`` input, like a client tool's); another delta type is said, once per block and type."""
        if dkind == "input_json_delta":
            piece = delta.get("partial_json")
            if isinstance(piece, str):
                self._server[slot][1].append(piece)
            elif piece is not None:
                self.b.problem("type", f"an input_json_delta whose partial_json is a JSON {json_type(piece)}: skipped")
        else:  # (said once, by the builder)
            self.b.problem("enum", f"content block delta type {self.b.named(dkind)} for a server tool's block: skipped")

    def _end_server(self, slot: str, cut: bool = False) -> None:
        """A server tool's block is whole (its content_block_stop; ``cut``: the stream ended before it): kept in its
        carrier, its input the JSON its fragments make (the start's input when none came). Fragments that make no
        whole JSON object (a cut stream) are said (``incomplete``), the start's input kept."""
        block, pieces = self._server.pop(slot)
        raw = "".join(pieces)
        if raw:
            try:
                value = loads(raw.encode("utf-8", "surrogatepass"))
            except ValidationError:
                value = None
            if isinstance(value, dict):
                block["input"] = value
            else:
                shown = raw if len(raw) <= 200 else raw[:200] + "..."
                why = "the stream ended before it was whole" if cut else "it is no JSON object"
                self.b.problem(
                    "incomplete" if cut else "json",
                    f"the input of a {str(block.get('type'))[:40]} block is not kept, {why}: {shown!r}",
                )
        self.b.carrier({"providerBlock": block}, slot=slot)

    def _flush(self) -> None:
        """What is held when the reply ends: server tools' blocks that did not stop, citations of a text block that
        did not stop (each after its block)."""
        for slot in list(self._server):
            self._end_server(slot, cut=True)
        for slot in list(self._cites):
            self._end_text(slot)

    def whole(self, obj: dict[str, Any]) -> bool:
        return obj.get("type") == "message"  # (a stream's payloads are events: message_start, ...)

    def end(self) -> None:
        self._flush()
        if not self._started and self._foreign:
            self.b.problem(
                "type",
                f"no message_start, and {self._foreign} payloads of no Anthropic event type: not an Anthropic"
                " stream? (they were skipped)",
                foreign=True,
            )

    def _misplaced(self, slot: str, dkind: Any, block_kind: Any) -> bool:
        """A delta whose type is not its block's (a ``thinking_delta`` for a text block, say), for a block
        that never started or has stopped: whether it is kept. The SDK's accumulator applies a delta only to
        a block of its kind; agentmsg does the same and says so, once per block and delta type: a text or
        reasoning fragment of a block that did not start (no ``content_block_start``) or has stopped is kept,
        in a block of its own (nothing received is lost); any other is skipped (arguments or a signature
        have no block of theirs to go to)."""
        index = slot[1:]
        keep = dkind in ("text_delta", "thinking_delta") and block_kind in (None, _ENDED)
        if block_kind is None:
            where = f"block {index}, which did not start (no content_block_start before it)"
        elif block_kind is _ENDED:
            where = f"block {index} after its content_block_stop"
        else:
            where = f"block {index}, a {str(block_kind)[:40]!r} block"
        return self.b.late(f"{dkind} for {where}", keep)  # (said once per block, type and case: the builder)

    def _add_usage(self, u: Any) -> None:
        if not isinstance(u, dict):
            if u is not None:
                self.b.no_usage("usage", u)
            return
        # cumulative counts: last wins. Only the counts _usage reads are kept: the copy each event hands on stays
        # that small (a copy of every key any event gave was quadratic: one usage of many keys, then many events)
        for k in _COUNTS:
            v = u.get(k)
            if v is not None:
                self._usage[k] = v
        self.b.usage_later(_usage, dict(self._usage), "input_tokens")  # converted once, at the end


# ---- registry entries and the module's functions -----------------------------------------------------------

PROVIDER: Final = Entry(SPEC, format_request, Reader, __name__)
PROVIDERS: Final = (PROVIDER,)

response_events = PROVIDER.response_events
parse_response = PROVIDER.parse_response
parse_stream = PROVIDER.parse_stream
StreamParser = PROVIDER.stream_parser
