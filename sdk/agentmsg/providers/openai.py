"""OpenAI Chat Completions, and the OpenAI-compatible family as thin variants.

Variants (registry names): ``openai``, ``deepseek`` (``reasoning_content`` replayed in the current
turn's tool loop), ``dashscope-compatible`` (DashScope's OpenAI-compatible mode: ``reasoning_content``,
video parts, Qwen-VL sizing hints, ``enable_thinking``/``thinking_budget``/``top_k`` extensions).

Layout (docs/formatters.md has the full rules and examples): SYSTEM -> ``system``; USER -> ``user``
(a lone text block as a string, else content parts); ASSISTANT -> ``assistant`` with ``tool_calls``
(``content: null`` when there is only tool calls); each tool result -> a ``tool`` message. Media in a
tool result follows in a ``user`` message after the batch of tool messages (reported).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from agentmsg._codec.jsontext import INT_MAX, INT_MIN, json_type
from agentmsg.blocks import ImageBlock
from agentmsg.errors import ValidationError, unknown_choice
from agentmsg.message import Msg
from agentmsg.providers._qwen import QWEN_TOKENS
from agentmsg.providers._request import cache as C
from agentmsg.providers._request import context as F
from agentmsg.providers._request import structured as S
from agentmsg.providers._request.chat import ChatWalk, copy_hints
from agentmsg.providers._request.common import AUDIO_FORMATS, WEB_URL, media_kind
from agentmsg.providers._request.context import Context, FormatOptions, FormattedRequest
from agentmsg.providers._request.fields import field_table, mapped, reported
from agentmsg.providers._request.run import Draft, run_format, usable_choice
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._request.tools import ToolChoice, ToolDef, openai_tool_choice, openai_tools
from agentmsg.providers._response import parser
from agentmsg.providers._response.builder import SNIFF_BYTES, StreamBuilder
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ, THINK_TAGS, ReplyField
from agentmsg.providers._response.payload import as_object, base64_source, safe_int, usage_dict
from agentmsg.providers._response.reader import PayloadReader, value_at
from agentmsg.providers.base import CacheMarkers, Entry, Spec, TokenProfile

__all__ = [
    "PROVIDERS",
    "SPECS",
    "VARIANTS",
    "OpenAIVariant",
    "Reader",
    "StreamParser",
    "format_request",
    "parse_response",
    "parse_stream",
    "response_events",
]


# ---- spec --------------------------------------------------------------------------------------------------

_NO_VIDEO: Final = reported("media-unsupported", note="the video is a text placeholder: no video parts")
_TEXT_ONLY: Final = reported("media-unsupported", note="the media block is a text placeholder: text only")
_CHAT_FIELDS: Final = {
    "message.name": mapped(
        "name-sanitized", "name-dropped", note="the message's name field, sanitized; none on tool messages"
    ),
    "tool_use.content": mapped(
        "tool-arguments-invalid",
        "field-dropped",
        note="the call's arguments, byte for byte when it is the JSON of input",
    ),
}
_PIXELS: Final = mapped(note="sent as the part's min_pixels / max_pixels / fps / total_pixels (Qwen-VL)")
_NO_SIGNATURE: Final = reported("signature-dropped", note="no field for a signature")
_NO_REDACTED: Final = reported("thinking-dropped", note="redacted reasoning cannot be sent")
_NO_STATE: Final = reported("tool-result-state-dropped", note="a tool message has no error field")
#: what a variant with a reasoning field (reasoning_content) does with reasoning
_REASONING: Final = {
    "thinking.thinking": mapped(
        "thinking-dropped",
        "thinking-demoted",
        "thinking-pruned",
        note="the assistant message's reasoning_content (the provider's own reasoning)",
    ),
    "thinking.metadata.signature": _NO_SIGNATURE,
    "thinking.metadata.redacted": _NO_REDACTED,
    "thinking.metadata.redactedData": _NO_REDACTED,
    "tool_use.metadata.thoughtSignature": _NO_SIGNATURE,
    "tool_result.state": _NO_STATE,
}
#: DashScope's explicit cache (both modes)
_DASHSCOPE_CACHE: Final = mapped(
    "cache-breakpoint-dropped",
    "cache-ttl-dropped",
    note="cache_control {type: ephemeral} on the message's last content part (content as a list); at most 4, the"
    " system prompt's first, then the latest; one lifetime (5 minutes)",
)
#: What each variant's formatter does with each field (providers/_request/fields.py)
FIELDS: Final = {
    "openai": field_table(
        {
            **_CHAT_FIELDS,
            "message.metadata.agentmsg_refusal": mapped(
                note="the refusal (the message's last text block) goes back in the assistant's refusal field"
            ),
            "thinking.thinking": reported(
                "thinking-dropped", "thinking-demoted", note="no reasoning in requests (as text: reasoning='text')"
            ),
            "thinking.metadata.signature": _NO_SIGNATURE,
            "thinking.metadata.redacted": _NO_REDACTED,
            "thinking.metadata.redactedData": _NO_REDACTED,
            "tool_use.metadata.thoughtSignature": mapped(
                "signature-dropped", note="Gemini's, through Google's compatible endpoint: extra_content.google"
            ),
            "tool_result.state": _NO_STATE,
            "message.metadata._cache_control": mapped(
                "cache-automatic",
                "cache-breakpoint-dropped",
                "cache-ttl-dropped",
                note="gpt-5.6 and later: prompt_cache_breakpoint {mode: explicit} on the message's last content part,"
                " at most 4, the request's lifetime; other models cache on their own (said once)",
            ),
            **{f"video.{k}": _NO_VIDEO for k in ("fps", "maxFrames", "minPixels", "maxPixels", "totalPixels")},
            "data.name": mapped(
                "field-dropped", note="a PDF's file name, in a placeholder's text; else not sent (field-dropped)"
            ),
        }
    ),
    "deepseek": field_table(
        {
            **_CHAT_FIELDS,
            **_REASONING,
            "image.minPixels": _TEXT_ONLY,
            "image.maxPixels": _TEXT_ONLY,
            **{f"video.{k}": _TEXT_ONLY for k in ("fps", "maxFrames", "minPixels", "maxPixels", "totalPixels")},
            "data.name": mapped(note="in the placeholder's text (text only)"),
        }
    ),
    "dashscope-compatible": field_table(
        {
            **_CHAT_FIELDS,
            **_REASONING,
            "image.minPixels": _PIXELS,
            "image.maxPixels": _PIXELS,
            **{f"video.{k}": _PIXELS for k in ("fps", "minPixels", "maxPixels", "totalPixels")},
            "data.name": mapped("field-dropped", note="in a placeholder's text; else not sent (field-dropped)"),
            "message.metadata._cache_control": _DASHSCOPE_CACHE,
        }
    ),
}

_GPT_VERSION = re.compile(r"(?:^|[/:])gpt-(\d+)(?:\.(\d+))?")


@functools.lru_cache(maxsize=256)  # (a regex search per call: the model repeats from one call to the next)
def explicit_breakpoints(model: str) -> bool:
    """Whether an OpenAI model takes explicit prompt-cache breakpoints on content parts: gpt-5.6 and later (the
    SDK's docstrings, provider-fields.md 1.4); the others cache on their own only."""
    m = _GPT_VERSION.search(model.lower())
    return m is not None and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 6)


#: OpenAI's models, Chat Completions and Responses alike (openai_responses.py takes it): 3 per message
#: (<|start|>role ... <|end|>), 1 per name, 3 to prime the reply (OpenAI cookbook "How to count tokens with
#: tiktoken"); functions rendered as a TypeScript namespace in the system turn. gpt-4o, gpt-4.1 and gpt-4.5 frame a
#: message with 4 tokens (o-series and gpt-5 with 3; measured on tests/fixtures/context)
TOKENS: Final = TokenProfile(
    vocab="o200k_base",
    own=True,
    per_name=1,
    tools_base=12,
    per_tool=4,
    tool_style="typescript",
    result_messages=True,  # (a tool message per result)
    assistant_media=False,  # (an assistant turn's media: placeholders, in Chat Completions and Responses alike)
    result_text=True,  # (Chat Completions; openai_responses.py sends a result's media in its output)
    own_reasoning="text",  # (no reasoning field: reasoning="text" sends it as text)
    models=((("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o"), {"per_message": 4}),),
    vocabs=((("gpt-4", "gpt-4-*", "gpt-3.5*"), "cl100k_base"),),  # (gpt-4 and gpt-3.5: tiktoken's model table)
)
#: DeepSeek: its vocabulary ships only in a package whose vocabulary licence is not stated; o200k counts CJK text at
#: about half DeepSeek-V3's tokens (reference section 7's samples), hence the wide error; no official count was at
#: hand to measure it
_DEEPSEEK_TOKENS: Final = TokenProfile(
    vocab="o200k_base",
    own=False,
    scale=1.1,
    text_error=0.5,
    per_message=4,
    priming=2,
    result_messages=True,
    thinking="tool_turns",  # (the reasoning its variant sends back: reasoning_current_turn_only)
    text_only=True,  # (its variant sends media as a text placeholder)
    assistant_media=False,
    result_text=True,
)


def media_placeholder(variant: str, block: Any) -> str | None:
    """Why the variant ``variant`` sends a medium (of a user message, or of a tool result, sent in the user message
    after the results) as a text placeholder naming it (None: it is sent as a part): every medium where it takes text
    only; else audio but WAV and MP3, video where it takes none, and any file but a PDF (or every file where it
    takes none). The count reads it from the token profile (``TokenProfile.media_placeholder``)."""
    v = VARIANTS[variant]
    if v.text_only:
        return "media (text only)"
    kind, mime = media_kind(block)
    if kind == "image":
        return None
    if kind == "audio":
        return None if mime in AUDIO_FORMATS else f"audio format {mime!r} (only wav and mp3)"
    if kind == "video":
        return None if v.video else "video"
    return None if v.files and mime == "application/pdf" else f"{mime or 'unknown'} data"


def _placeholders(variant: str) -> Callable[[Any, bool, Any], str | None]:
    """The variant's :func:`media_placeholder` as a token profile takes it (``(block, in_result, options)``)."""
    return lambda block, in_result, options: media_placeholder(variant, block)


SPECS: Final = (
    Spec(
        name="openai",
        title="OpenAI",
        base_url="https://api.openai.com/v1",
        env=("OPENAI_API_KEY",),
        auth="bearer",
        default_model="gpt-4o",
        families=("openai",),
        client_class="OpenAIClient",
        fields=FIELDS["openai"],
        tokens=attrs.evolve(TOKENS, media_placeholder=_placeholders("openai")),
        cache_markers=CacheMarkers(models=explicit_breakpoints),  # (on messages, not tools; gpt-5.6 and later)
        custom_tools=True,  # (free-text input, GPT-5)
    ),
    Spec(
        name="deepseek",
        title="DeepSeek",
        base_url="https://api.deepseek.com",
        env=("DEEPSEEK_API_KEY",),
        auth="bearer",
        default_model="deepseek-chat",
        families=("deepseek",),
        client_class="DeepSeekClient",
        fields=FIELDS["deepseek"],
        tokens=attrs.evolve(_DEEPSEEK_TOKENS, media_placeholder=_placeholders("deepseek")),
    ),
    Spec(
        name="dashscope-compatible",
        title="DashScope (compatible mode)",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        env=("DASHSCOPE_API_KEY",),
        auth="bearer",
        default_model="qwen-plus",
        families=("dashscope",),
        client_class="DashScopeCompatibleClient",
        fields=FIELDS["dashscope-compatible"],
        # (Qwen's tokenizer behind either endpoint)
        tokens=attrs.evolve(QWEN_TOKENS, media_placeholder=_placeholders("dashscope-compatible")),
        cache_markers=CacheMarkers(),  # (on messages; its system prompt's marker caches the tools before it)
    ),
)
_SPEC: Final = {spec.name: spec for spec in SPECS}


@attrs.frozen(kw_only=True)
class OpenAIVariant:
    """What one OpenAI-compatible provider accepts (its spec has its name, default model and families)."""

    name: str
    reasoning_field: str | None = None  # assistant field carrying reasoning text
    reasoning_current_turn_only: bool = False  # replay reasoning only after the last user message
    send_name: bool = True
    video: bool = False
    audio_urls: bool = False  # input_audio.data may be a URL (else bytes are needed)
    files: bool = True  # {"type": "file"} parts (PDF)
    pixel_hints: bool = False  # min_pixels / max_pixels / fps siblings on media parts
    tool_strict: bool = True
    required_choice: bool = True
    params: Mapping[str, str | None] = attrs.field(factory=dict)
    stream_options: bool = True
    hint_role: str = "system"
    text_only: bool = False  # no media parts at all: content is a string (media become placeholders)
    drop_empty: bool = False  # leave out empty text (and messages left empty), reported
    id_max: int = 0  # longest tool-call id taken (0: no limit); longer ids are mapped
    google_signatures: bool = False  # calls' Gemini thought signatures sent in extra_content (Google's endpoint)
    refusals: bool = False  # a parsed refusal (message.refusal) sent back in the assistant's refusal field
    thinking_budget_enables: bool = False  # thinking_budget also sets enable_thinking (DashScope's extension)
    json_schema: bool = True  # response_format json_schema (else JSON mode only: a schema is approximated)
    cache_markers: bool = False  # prompt-cache markers as cache_control on content parts (DashScope); else automatic


VARIANTS: Final[dict[str, OpenAIVariant]] = {
    v.name: v
    for v in (
        OpenAIVariant(
            name="openai",
            id_max=40,
            google_signatures=True,
            refusals=True,
            params={"max_tokens": "max_completion_tokens", "top_k": None, "thinking_budget": None},
        ),
        OpenAIVariant(
            name="deepseek",
            reasoning_field="reasoning_content",
            reasoning_current_turn_only=True,
            files=False,
            text_only=True,
            tool_strict=True,
            json_schema=False,
            params={"top_k": None, "thinking_budget": None, "seed": None},
        ),
        OpenAIVariant(
            name="dashscope-compatible",
            reasoning_field="reasoning_content",
            video=True,
            audio_urls=True,
            files=False,
            pixel_hints=True,
            tool_strict=False,
            required_choice=False,
            hint_role="user",
            drop_empty=True,
            thinking_budget_enables=True,
            cache_markers=True,
            params={},
        ),
    )
}


def _variant(variant: str) -> tuple[Spec, OpenAIVariant]:
    v = VARIANTS.get(variant) if isinstance(variant, str) else None
    if v is None:  # (a ValidationError at /variant, rule enum: a ValueError, as it was; type for no string)
        raise unknown_choice(variant, "variant", VARIANTS, "OpenAI variant")
    return _SPEC[variant], v


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
    variant: str = "openai",
    **params: Any,
) -> FormattedRequest:
    """Format a conversation as an OpenAI Chat Completions request (or a compatible variant's).

    ``params`` are generation parameters (``temperature``, ``max_tokens``, ``top_p``, ``stop``,
    ``seed``, ...): common names are mapped to the variant's; others pass through to the body.
    ``structured_output`` (or a ``response_format`` parameter): ``response_format`` ``json_schema`` (DeepSeek:
    ``json_object``, approximated). Raises :class:`~agentmsg.ValidationError` for bad input, refused media, and with ``strict`` for
    every lossy or error diagnostic."""
    spec, v = _variant(variant)

    def build(ctx: Context, msgs: Sequence[Msg], tool_defs: list[ToolDef], choice: ToolChoice | None) -> Draft:
        explicit = v.name == "openai" and explicit_breakpoints(model or spec.default_model)
        walk = _OpenAIWalk(ctx, v, multi_agent, agent_name, explicit)
        # Google's OpenAI-compatible endpoint (a Gemini model) takes a call's signature back in extra_content,
        # which OpenAI's own API refuses (its tool calls have no other field)
        walk.google_signatures = v.google_signatures and "gemini" in (model or "").lower()
        out = walk.run(msgs)
        F.require_turns(out, ctx.provider)
        body: dict[str, Any] = {"model": model or spec.default_model, "messages": out}
        if stream:
            body["stream"] = True
            if v.stream_options:
                body["stream_options"] = {"include_usage": True}
        extra = dict(params)
        want = S.asked(ctx, extra)
        reading: dict[str, Any] = {}
        response_format = None
        if want is not None:
            if want.output is not None and want.output.mode == "tool":
                tool_defs, choice, reading = S.as_tool(ctx, want, tool_defs, choice)
            else:
                response_format = S.chat_response_format(ctx, want, msgs, json_schema=v.json_schema)
                reading = S.reading(want)
        if tool_defs:
            body["tools"] = openai_tools(tool_defs, ctx, strict_field=v.tool_strict)
        choice = usable_choice(ctx, choice, tool_defs)
        if choice is not None:
            body["tool_choice"] = openai_tool_choice(choice, ctx, required=v.required_choice)
        if response_format is not None:
            body["response_format"] = response_format
        if v.thinking_budget_enables and extra.get("thinking_budget") is not None:
            extra.setdefault("enable_thinking", True)
        F.apply_params(ctx, extra, v.params, body)
        if ctx.cache_marks or any(t.cache is not None for t in tool_defs):
            if explicit:
                C.place_openai(ctx, msgs, walk.cuts, tool_defs)
            elif walk.places_marks:
                C.place_chat(ctx, msgs, walk.cuts, tool_defs, typed=True)
            else:
                C.automatic(ctx, ctx.cache_marks, tool_defs, _AUTOMATIC.get(v.name, _AUTOMATIC["openai"]))
        return Draft(body=body, path="/chat/completions", model=body["model"], parser_options=reading)

    return run_format(
        spec,
        messages,
        build,
        tools=tools,
        tool_choice=tool_choice,
        stream=stream,
        strict=strict,
        options=options,
        tool_name_ok=_NAME_OK,
        id_max=v.id_max,
        structured_output=structured_output,
        model=model,
        params=params,
    )


_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,64}")
#: why a variant that caches on its own takes no marker (cache-automatic)
_AUTOMATIC: Final = {
    "openai": "OpenAI caches prompt prefixes of 1024 tokens or more on its own (a prompt_cache_key parameter is sent"
    " as given; gpt-5.6 and later take explicit breakpoints)",
    "deepseek": "DeepSeek caches prompt prefixes on its own (its disk cache)",
}


class _OpenAIWalk(ChatWalk):
    def __init__(self, ctx: Context, v: OpenAIVariant, multi: bool, agent: str | None, explicit: bool = False) -> None:
        self.places_marks = v.cache_markers or explicit  # (before Walk.__init__ reads it)
        super().__init__(ctx, multi, agent)
        self.v = v
        self.reasoning_field = v.reasoning_field
        self.reasoning_current_turn_only = v.reasoning_current_turn_only
        self.send_name = v.send_name
        self.hint_role = v.hint_role
        self.drop_empty = v.drop_empty
        self.custom_calls = _SPEC[v.name].custom_tools  # (custom tool calls sent back as such)
        self.refusals = v.refusals
        self.takes_media = not v.text_only

    def user_content(self, parts: list[dict[str, Any]]) -> Any:
        if self.v.text_only:
            return "\n".join(p["text"] for p in parts)
        return ChatWalk.user_content(self, parts)

    def inline_image(self, b: Any) -> dict[str, Any] | None:
        src = b.source
        if self.v.text_only or b.min_pixels is not None or b.max_pixels is not None:
            return None
        if src.type == "base64":
            return {"type": "image_url", "image_url": {"url": f"data:{src.media_type.lower()};base64,{src.data}"}}
        url = src.url
        if url.startswith(WEB_URL):  # a web URL, passed through as media_part would (MediaSession.resolve)
            return {"type": "image_url", "image_url": {"url": url}}
        return None

    def media_part(self, b: Any, pointer: str) -> dict[str, Any]:
        ctx = self.ctx
        v = self.v
        src = b.source
        if type(b) is ImageBlock:
            usual = self.inline_image(b)
            if usual is not None:
                return usual
        why = media_placeholder(v.name, b)
        if why is not None:
            return self.placeholder(b, pointer, why)
        kind, mime = media_kind(b)
        if kind == "image":
            m = ctx.media.resolve(src, pointer, inline=False)
            part: dict[str, Any] = {"type": "image_url", "image_url": {"url": m.url or m.data_uri()}}
            kept: tuple[str, ...] = ("min_pixels", "max_pixels") if v.pixel_hints else ()
            copy_hints(b, part, kept)
            F.media_options(b, kept, ctx, pointer)
            F.name_not_sent(b, ctx, pointer)
            return part
        if kind == "audio":
            fmt = AUDIO_FORMATS[mime or ""]
            m = ctx.media.resolve(b.source, pointer, inline=not v.audio_urls)
            F.name_not_sent(b, ctx, pointer)
            return {"type": "input_audio", "input_audio": {"data": m.url or m.data or "", "format": fmt}}
        if kind == "video":
            m = ctx.media.resolve(b.source, pointer, inline=False)
            part = {"type": "video_url", "video_url": {"url": m.url or m.data_uri()}}
            kept = ("fps", "min_pixels", "max_pixels", "total_pixels") if v.pixel_hints else ()
            copy_hints(b, part, kept)
            F.media_options(b, kept, ctx, pointer)
            F.name_not_sent(b, ctx, pointer)
            return part
        m = ctx.media.resolve(b.source, pointer, inline=True)  # (a PDF)
        file: dict[str, Any] = {"filename": getattr(b, "name", None) or "document.pdf", "file_data": m.data_uri()}
        return {"type": "file", "file": file}


# ---- payload values: what a reply's and a chunk's fields hold ----------------------------------------------
# An OpenAI Chat Completions response (and the compatible family: DeepSeek, DashScope compatible mode,
# ...) becomes the events a stream of it would give, reduced by the one Reducer: parse_response and
# reduce(parse_stream) cannot drift apart.


_TOOL_FINISH = ("tool_calls", "function_call")


def _usage(u: Any, b: StreamBuilder) -> dict[str, Any] | None:
    """The counts read (schemas/chat-usage.schema.json names each field): ``prompt_tokens`` (cache reads and writes
    included), ``completion_tokens`` (reasoning included), cache reads from ``prompt_tokens_details.cached_tokens``
    (DeepSeek's ``prompt_cache_hit_tokens``, Moonshot's flat ``cached_tokens``), cache writes from
    ``prompt_tokens_details.cache_write_tokens`` (DashScope's explicit cache: ``cache_creation_input_tokens``),
    reasoning from ``completion_tokens_details.reasoning_tokens``. One given that is no count is said
    (``safe_int``), the rest kept (a usage that is no object: said)."""
    if not isinstance(u, dict):
        if u is not None:
            b.no_usage("usage", u)
        return None
    details = u.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = details.get("cached_tokens")
    cached_field = "usage.prompt_tokens_details.cached_tokens"
    if cached is None:
        cached, cached_field = u.get("prompt_cache_hit_tokens"), "usage.prompt_cache_hit_tokens"  # DeepSeek
        if cached is None:
            cached, cached_field = u.get("cached_tokens"), "usage.cached_tokens"  # Moonshot / Kimi
    written = details.get("cache_write_tokens")
    written_field = "usage.prompt_tokens_details.cache_write_tokens"
    if written is None:  # DashScope (compatible mode), explicit cache
        written = details.get("cache_creation_input_tokens")
        written_field = "usage.prompt_tokens_details.cache_creation_input_tokens"
    p = safe_int(u.get("prompt_tokens"), b, "usage.prompt_tokens")
    c = safe_int(u.get("completion_tokens"), b, "usage.completion_tokens")
    t = safe_int(u.get("total_tokens"), b, "usage.total_tokens")
    out_details = u.get("completion_tokens_details")
    r = None
    if isinstance(out_details, dict):
        r = safe_int(out_details.get("reasoning_tokens"), b, "usage.completion_tokens_details.reasoning_tokens")
        if p is not None and c is not None and r and t is not None and p + c != t == p + c + r:
            c += r  # xAI: completion_tokens leaves the reasoning out (total_tokens counts it)
    return usage_dict(
        p,
        c,
        safe_int(cached, b, cached_field),
        t,
        cache_write=safe_int(written, b, written_field),
        reasoning=r,
        say=b,
        total_field="usage.total_tokens",
    )


def _text_of(b: StreamBuilder, content: Any) -> str:
    """``content`` as a string (a part list is read by :func:`_parts`)."""
    if type(content) is str:
        return content
    return b.string(content, "a message's content") or ""


def _parts(b: StreamBuilder, i: int, parts: list[Any]) -> None:
    """A content part list (some compatible providers send one), in order: ``text`` parts as text,
    ``thinking`` parts (Mistral's Magistral: ``thinking`` a list of text parts, or a string) as reasoning;
    another part type is said as not kept."""
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "thinking" or (kind is None and "thinking" in part):
            inner = part.get("thinking")
            if isinstance(inner, list):
                inner = "".join(t["text"] for t in inner if isinstance(t, dict) and isinstance(t.get("text"), str))
            if isinstance(inner, str) and inner:
                b.thinking(inner, choice=i)
        elif isinstance(part.get("text"), str):
            if part["text"]:
                b.end_block("thinking", i)
                b.text(part["text"], choice=i)
        elif kind == "image_url":
            _image(b, i, part)
        else:
            b.not_kept(
                f"part/{str(kind)[:40]}/{i}",
                f"content parts of type {b.named(kind, 40)} are not kept (the message has no place for them)",
                i,
            )


def _image(b: StreamBuilder, i: int, part: Any) -> None:
    """An ``image_url`` part of a reply (an image the model made: OpenRouter's and Vercel AI Gateway's
    ``images``, a content part): an image block in its place, a ``data:...;base64,`` URL as a base64 source."""
    url = part.get("image_url") if isinstance(part, dict) else None
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url:
        b.problem("type", "an image of the reply without a URL: skipped")
        return
    head, comma, data = url.partition(",")
    if comma and head.startswith("data:") and head.endswith(";base64"):
        source = base64_source(head[5:-7], data)
        if source is None:
            b.problem("type", "an image of the reply whose data URL is not standard base64: skipped")
            return
    else:
        source = {"type": "url", "url": url}
    b.media({"type": "image", "source": source}, choice=i)


def _audio(b: StreamBuilder, i: int, audio: Any) -> None:
    """A reply's audio (``modalities: ["text", "audio"]``): ``message.audio`` whole, or ``delta.audio`` fragments
    (``{id, transcript}``, ``{transcript}``, ``{data}``, ``{expires_at, id}``). The transcript (the words spoken)
    is a text block of its own (slot ``transcript``: beside the content's text, never joined to it); the audio a
    ``data`` block (:meth:`StreamBuilder.data`: each piece's base64 decoded, the deltas the base64 of the bytes
    joined), its blockId (so the block's id) the audio's id, its media type read from its first bytes
    (:func:`_audio_type`). It starts after the transcript's block (held until the transcript starts, or the reply
    ends), so a stream gives the blocks in the order the whole response does. ``expires_at`` is said as not kept."""
    if not isinstance(audio, dict):
        b.problem("type", f"a message's audio is a JSON {json_type(audio)}, not an object: left out")
        return
    if not any(audio.values()):  # Snowflake's zero values ({"data": "", "id": "", "expires_at": 0, ...}): no audio
        return
    transcript = b.string(audio.get("transcript"), "the audio's transcript")
    if transcript:
        b.text(transcript, choice=i, slot="transcript")
        b.release(choice=i, slot="audio")
    audio_id = b.string(audio.get("id"), "the audio's id") or None
    data = b.string(audio.get("data"), "the audio's data")
    raw = b""
    if data:
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            b.problem("type", "a piece of the reply's audio (audio.data) is not standard base64: skipped")
    if raw or audio_id:
        started = b.data_id(choice=i, slot="audio")
        if audio_id and started is not None and started != audio_id:
            b.not_kept(
                f"audio-id/{i}",
                f"the audio's id ({audio_id[:80]!r}, given after its data began) is not kept (the data block's id is"
                " the reply's own)",
                i,
            )
        b.data(raw, choice=i, slot="audio", sniff=_audio_type, block_id=audio_id, hold=not b.is_open("transcript", i))
    expires = audio.get("expires_at")
    if expires is not None:
        b.not_kept(
            f"audio-expires/{i}",
            f"the audio's expires_at ({str(expires)[:40]}: when the provider forgets the audio by its id, the data"
            " block's id) is not kept (the message has no place for it)",
            i,
        )


#: The media type of OpenAI's ``pcm16`` (raw 16-bit little-endian PCM, 24 kHz, mono; what a stream always gives):
#: as Google documents such audio (Gemini Live). Not ``audio/L16``: RFC 2586's L16 is big-endian.
PCM16 = "audio/pcm;rate=24000"


def _audio_type(head: bytes) -> str:
    """The media type of audio from its first bytes (:data:`SNIFF_BYTES`): WAV, MP3 (an ID3 tag, or an MPEG
    layer III frame header), FLAC, Ogg (Opus); else OpenAI's ``pcm16`` (:data:`PCM16`)."""
    head = head[:SNIFF_BYTES]
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:3] == b"ID3":
        return "audio/mpeg"
    if (
        len(head) >= 3
        and head[0] == 0xFF
        and head[1] & 0xE6 == 0xE2  # frame sync (11 bits), layer III
        and head[1] & 0x18 != 0x08  # not the reserved MPEG version
        and 0 < head[2] >> 4 < 15  # a bitrate (not free, not bad)
        and head[2] & 0x0C != 0x0C  # a sampling rate (not reserved)
    ):
        return "audio/mpeg"
    if head[:4] == b"fLaC":
        return "audio/flac"
    if head[:4] == b"OggS":
        return "audio/ogg"
    return PCM16


def _reasoning(b: StreamBuilder, m: Mapping[str, Any]) -> str:
    r = b.string(m.get("reasoning_content"), "reasoning_content")
    if not r:
        r = b.string(m.get("reasoning"), "reasoning")  # OpenRouter / vLLM spelling
    return r or ""


def _message(b: StreamBuilder, i: int, m: Mapping[str, Any]) -> None:
    """One choice's message (non-streaming) or delta (streaming) into the builder."""
    reasoning = _reasoning(b, m)
    if reasoning:
        b.thinking(reasoning, choice=i)
    content = m.get("content")
    if isinstance(content, list):
        _parts(b, i, content)
    else:
        text = _text_of(b, content)
        if text:
            b.text(text, choice=i)
    images = m.get("images")  # images the model made (OpenRouter, Vercel AI Gateway), after the text
    if images:
        if isinstance(images, list):
            for part in images:
                _image(b, i, part)
        else:
            b.problem("type", f"images is a JSON {json_type(images)}, not an array: left out")
    refusal = b.string(m.get("refusal"), "a refusal")
    if refusal:
        b.text(refusal, choice=i, slot="refusal")
        b.refused(i)
    annotations = m.get("annotations")
    if annotations:
        # the reply's URL citations (search models): the message's (agentmsg_grounding), as OpenAI gave them; a stream's
        # deltas each add theirs
        if isinstance(annotations, list):
            b.grounding({"annotations": annotations}, choice=i, extend=True)
        else:
            b.problem("type", f"annotations is a JSON {json_type(annotations)}, not an array: left out")
    audio = m.get("audio")
    if audio:
        _audio(b, i, audio)
    if m.get("reasoning_details"):
        b.not_kept(
            f"reasoning_details/{i}",
            "reasoning_details (OpenRouter's structured reasoning: signatures, encrypted reasoning) are not kept;"
            " the reasoning text is",
            i,
        )


def _has_data(value: Any) -> bool:
    """A value that says something: not empty, and not an object of nulls (``{"content": null}``)."""
    return any(v for v in value.values()) if isinstance(value, dict) else bool(value)


def _stop_not_kept(b: StreamBuilder, i: int, ch: Mapping[str, Any]) -> None:
    """The stop string or token that ended a choice (vLLM's ``stop_reason``, SGLang's ``matched_stop``; null when
    the model ended it), read beside its finish reason: said as not kept, as Anthropic's ``stop_sequence`` is."""
    for key in ("stop_reason", "matched_stop"):
        value = ch.get(key)
        if value is not None and value != "":
            b.not_kept(f"{key}/{i}", f"the stop that ended the reply ({key}: {str(value)[:200]!r}) is not kept", i)


def _not_kept_choice(b: StreamBuilder, i: int, ch: Mapping[str, Any]) -> None:
    if _has_data(ch.get("logprobs")):
        b.not_kept(f"logprobs/{i}", "log probabilities (logprobs) are not kept (the message has no place for them)", i)
    if ch.get("content_filter_results"):
        b.not_kept(
            f"content_filter_results/{i}",
            "content filter results (Azure's content_filter_results) are not kept (the message has no place for them)",
            i,
        )


def _not_kept_response(b: StreamBuilder, obj: Mapping[str, Any]) -> None:
    """What a chunk (or response) says beside its choices that the message has no place for. Fields that
    describe the serving, not the reply (``created``, ``system_fingerprint``, ``service_tier``), are not said."""
    for key, what in _RESPONSE_NOT_KEPT:
        if _has_data(obj.get(key)):
            b.not_kept(key, f"{what} ({key}) are not kept (the message has no place for them)")


#: What a chunk (or response) may say beside its choices that the message has no place for.
_RESPONSE_NOT_KEPT = (
    ("prompt_filter_results", "prompt filter results (Azure's)"),
    ("moderation", "moderation results"),
    ("citations", "citations (Perplexity's sources)"),
    ("search_results", "search results"),
)
_RESPONSE_NOT_KEPT_KEYS = frozenset(key for key, _ in _RESPONSE_NOT_KEPT)


def _legacy_messages(
    b: StreamBuilder, i: int, messages: Any, key: str | None, roles: dict[tuple[int, int], Any]
) -> None:
    """Azure's legacy "On Your Data" choice (the ``extensions`` API before 2024-02-15): ``messages`` in place of
    ``message``, each with its ``delta`` (streamed: ``key`` "delta") or the message itself (whole). The assistant's
    messages are read as a message is; a ``tool`` message (the documents retrieved, as citations JSON) is said as
    not kept. A message's role comes on its first delta: ``roles`` remembers it, by the message's place."""
    if not isinstance(messages, list):
        b.problem("shape", f"a choice's messages is a JSON {json_type(messages)}, not an array: left out")
        return
    for k, item in enumerate(messages):
        m = as_object(item.get(key) if key is not None and isinstance(item, dict) else item)
        # (its index as a choice's is read: beyond 64 bits, or no integer, its place, said)
        at = b.index(item.get("index"), k, "a legacy message's index") if isinstance(item, dict) else k
        role = m.get("role") or roles.get((i, at))
        roles[(i, at)] = role
        if role in (None, "assistant"):
            _message(b, i, m)
            _tool_calls(b, i, m, whole=key is None)
        else:
            b.not_kept(
                f"legacy-messages/{str(role)[:40]}/{i}",
                f"{str(role)[:40]!r} messages of Azure's legacy On Your Data choices (the documents retrieved, the"
                " citations) are not kept (the message has no place for them)",
                i,
            )


#: the types of tool call the reader reads (another: StreamBuilder.call_left_out)
_CALL_TYPES: Final = ("function", "custom")


def _tool_calls(b: StreamBuilder, i: int, m: Mapping[str, Any], whole: bool) -> None:
    """A message's (or delta's) calls: ``tool_calls``, routed by index, and the legacy ``function_call``
    (the deprecated ``functions`` API, finish reason ``function_call``: one call, no id, so the builder
    derives one) as a call of its own."""
    calls = m.get("tool_calls")
    entries: list[tuple[Any, dict[str, Any]]] = []
    if isinstance(calls, list):
        for position, tc in enumerate(calls):
            if isinstance(tc, dict):
                index = b.call_index(tc.get("index"))  # (beyond 64 bits, a boolean: none, said)
                entries.append((("index", index) if index is not None else ("position", position), tc))
            else:
                b.problem("type", f"a tool call is a JSON {json_type(tc)}, not an object: left out")
    elif calls is not None:
        b.problem("type", f"tool_calls is a JSON {json_type(calls)}, not an array: left out")
    legacy = m.get("function_call")
    if isinstance(legacy, dict):
        if any(v not in (None, "") for v in legacy.values()):  # Snowflake's {"name": "", "arguments": ""}: no call
            entries.append((("function_call",), {"function": legacy}))
    elif legacy is not None:
        b.problem("type", f"function_call is a JSON {json_type(legacy)}, not an object: left out")
    for key, tc in entries:
        fn = tc.get("function")
        custom = fn is None and type(tc.get("custom")) is dict  # (its later fragments name no type)
        if b.call_left_out(tc, _CALL_TYPES, fn is not None or custom, f"call/{i}/{key}", i):
            continue
        if custom:
            # A custom tool's call (GPT-5 custom / grammar tools): custom.name, and custom.input, the tool's
            # free-text input (not JSON), streamed as arguments are: kept as the call's raw text (content)
            fn = tc["custom"]
            args = b.string(fn.get("input"), "a custom tool call's input")
        else:
            fn = as_object(fn)
            args = fn.get("arguments")
            if type(args) is not str:
                args = b.json_text(args) if isinstance(args, (dict, list)) else b.string(args, "arguments")
        b.tool_call(
            key,
            choice=i,
            call_id=b.string(tc.get("id"), "a tool call's id"),
            name=fn.get("name"),  # (one that is no text is said by the builder, once per call)
            arguments=args,
            thought_signature=_call_signature(b, fn, tc),
            custom=custom,
            no_id=key == ("function_call",),  # (the legacy call has no id field: none comes)
        )
        if whole:
            b.end_tool_call(key, choice=i)


def _arguments_fragment(delta: Mapping[str, Any]) -> tuple[tuple[str, int], str] | None:
    """A delta that is ``{"tool_calls": [{"index": n, "function": {"arguments": "..."}}]}`` and nothing else (a call's
    later fragments): its call's key and its arguments text, which :func:`_message` (no key of its) and
    :func:`_tool_calls` (no id, name, signature or custom input) read as ``b.tool_call(key, arguments=...)``
    alone; else None."""
    calls = delta.get("tool_calls")
    if type(calls) is not list or len(calls) != 1:
        return None
    tc = calls[0]
    if type(tc) is not dict or len(tc) != 2:
        return None
    index, fn = tc.get("index"), tc.get("function")
    if type(index) is not int or not INT_MIN <= index <= INT_MAX or type(fn) is not dict or len(fn) != 1:
        return None  # (an index beyond 64 bits: read and said by _tool_calls)
    arguments = fn.get("arguments")
    return (("index", index), arguments) if type(arguments) is str else None


def _reasoning_fragment(delta: Mapping[str, Any]) -> tuple[bytes, str] | None:
    """A delta that is a reasoning fragment and nothing else (``{"reasoning_content": "..."}``, or OpenRouter's
    ``reasoning``, beside a null ``content`` and a ``role`` at most): the key of its text and the text, which
    :func:`_message` reads as ``b.thinking(text)`` alone; else None."""
    r = delta.get("reasoning_content")
    if type(r) is str and r:
        key = b'"reasoning_content":'
    else:
        r = delta.get("reasoning")
        if type(r) is not str or not r or "reasoning_content" in delta:
            return None
        key = b'"reasoning":'
    others = len(delta) - 1  # (beside the reasoning: a null content, a role)
    if "content" in delta:
        if delta["content"] is not None:
            return None
        others -= 1
    return (key, r) if others == ("role" in delta) else None


def _call_signature(b: StreamBuilder, fn: Mapping[str, Any], tc: Mapping[str, Any]) -> str | None:
    """A call's thought signature: ``thought_signature`` on the function or the call, or, Gemini 3 through Google's
    OpenAI-compatible endpoint, ``extra_content.google.thought_signature``. An empty one carries nothing and never
    hides a signature the others give; two that differ keep the first and say the other (``duplicate``)."""
    found: list[str] = []
    for sig in (fn.get("thought_signature"), tc.get("thought_signature")):
        sig = b.string(sig, "a thought signature")
        if sig:
            found.append(sig)
    extra = tc.get("extra_content")
    if extra is not None:
        google = extra.get("google") if isinstance(extra, dict) else None
        if not isinstance(extra, dict) or not isinstance(google, (dict, type(None))):
            bad = google if isinstance(extra, dict) else extra
            where = "extra_content.google" if isinstance(extra, dict) else "extra_content"
            b.problem("type", f"a tool call's {where} is not an object (a JSON {json_type(bad)}): left out")
        elif google is not None:
            sig = b.string(google.get("thought_signature"), "a thought signature (extra_content.google)")
            if sig:
                found.append(sig)
    for other in found[1:]:
        if other != found[0]:
            b.problem(
                "duplicate",
                "a tool call gives two different thought signatures (thought_signature, extra_content.google): the"
                " first kept",
            )
            break
    return found[0] if found else None


#: Finish reasons that say the provider interrupted the generation (DeepSeek's: "the inference system's resources
#: ran short"): the reply ends INTERRUPTED with the provider's error, as a cut one does, its finish reason kept
_INTERRUPTED_FINISH = {
    "insufficient_system_resource": "the provider interrupted the generation: insufficient system resources",
}


def _finish(b: StreamBuilder, i: int, reason: Any) -> None:
    reason = b.string(reason, "finish_reason")
    if reason and reason != "null":
        if reason in _INTERRUPTED_FINISH:
            b.error(_INTERRUPTED_FINISH[reason], kind="provider_error", code=reason, choice=i)
        b.finish(i, reason, tool_calls=reason in _TOOL_FINISH, normal=reason == "stop")


def _provider_error(b: StreamBuilder, err: Any) -> None:
    if isinstance(err, dict):
        b.error(
            str(err.get("message") or err),
            kind=str(err.get("type") or "provider_error"),
            code=err.get("code"),  # (a number no event holds as its text, another type left out: b.error says)
            param=err.get("param"),  # (the request parameter at fault: a scalar as it came, as code is)
        )
    else:
        b.error(str(err))


# ---- reply fields: what each becomes (providers/_response/fields.py) ---------------------------------------

_SERVING = "describes the serving, not the reply"
#: What the reader does with each field of a reply (a chunk's ``delta`` is read as a ``message``)
REPLY_FIELDS: Final = (
    ReplyField("id", MAPPED, "the message id"),
    ReplyField("model", MAPPED, "metadata `agentmsg_model` (thinking blocks' `model`)"),
    ReplyField("object", NOT_READ, _SERVING),
    ReplyField("created", NOT_READ, _SERVING),
    ReplyField("system_fingerprint", NOT_READ, _SERVING),
    ReplyField("metadata", NOT_READ, "the request's own metadata, echoed (a stored completion's)"),
    ReplyField("service_tier", NOT_READ, _SERVING),
    ReplyField("obfuscation", NOT_READ, "a stream chunk's padding (it evens out the chunks' sizes)"),
    ReplyField("usage.prompt_tokens", MAPPED, "usage `inputTokens`"),
    ReplyField("usage.completion_tokens", MAPPED, "usage `outputTokens`"),
    ReplyField(
        "usage.total_tokens",
        MAPPED,
        "usage `totalTokens` when a count is missing; else `totalTokens` is input + output (as Java derives it),"
        " and a total that is not that sum is said (not kept)",
    ),
    ReplyField(
        "usage.prompt_tokens_details.cached_tokens|usage.prompt_cache_hit_tokens|usage.cached_tokens",
        MAPPED,
        "usage `cachedTokens` (OpenAI, DeepSeek, Moonshot)",
    ),
    ReplyField(
        "usage.prompt_tokens_details.cache_write_tokens|usage.prompt_tokens_details.cache_creation_input_tokens",
        MAPPED,
        "usage `cacheCreationInputTokens` (OpenAI; DashScope's explicit cache)",
    ),
    ReplyField(
        "usage.completion_tokens_details.reasoning_tokens",
        MAPPED,
        "usage `reasoningTokens` (xAI's, which its completion_tokens leave out, are added to outputTokens too)",
    ),
    ReplyField(
        "usage.prompt_tokens_details.*, usage.completion_tokens_details.*, usage.prompt_cache_miss_tokens",
        NOT_READ,
        "the other token details (audio, predictions; DeepSeek's cache misses): the usage has no field for them",
    ),
    ReplyField("x_groq.usage|choices[].usage", MAPPED, "usage (Groq's in a stream's last chunk, Moonshot's)"),
    ReplyField("choices[].index", MAPPED, "the choice: choice i > 0 under `source: choice/i`"),
    ReplyField("choices[].finish_reason", MAPPED, "metadata `agentmsg_finish_reason`; the generate reason"),
    ReplyField("choices[].logprobs", NOT_KEPT),
    ReplyField("choices[].content_filter_results", NOT_KEPT, "Azure's"),
    ReplyField("choices[].stop_reason|choices[].matched_stop", NOT_KEPT, "the stop that ended it (vLLM, SGLang)"),
    ReplyField("choices[].message.role", NOT_READ, "always the assistant"),
    ReplyField("choices[].message.content", KEPT, "a text block (structured output: metadata `_structured_output`)"),
    ReplyField("choices[].message.content (think_tags)", MAPPED, THINK_TAGS),
    ReplyField(
        "choices[].message.content[] (parts)", MAPPED, "text and `thinking` parts in order; other types not kept"
    ),
    ReplyField("choices[].message.refusal", MAPPED, "a text block of its own; metadata `agentmsg_refusal`"),
    ReplyField("choices[].message.reasoning_content|choices[].message.reasoning", MAPPED, "a thinking block"),
    ReplyField(
        "choices[].message.tool_calls[]",
        MAPPED,
        "tool_use blocks (`id`, `function.name`, `function.arguments`; custom)",
    ),
    ReplyField(
        "choices[].message.tool_calls[].extra_content.google.thought_signature", MAPPED, "metadata `thoughtSignature`"
    ),
    ReplyField("choices[].message.function_call", MAPPED, "a tool_use block (a minted id)"),
    ReplyField("choices[].message.audio", MAPPED, "a data block (`id`, `data`) and a text block (`transcript`)"),
    ReplyField("choices[].message.audio.expires_at", NOT_KEPT),
    ReplyField("choices[].message.images", MAPPED, "image blocks (OpenRouter, Vercel AI Gateway)"),
    ReplyField(
        "choices[].message.annotations",
        MAPPED,
        "metadata `agentmsg_grounding` (`annotations`: URL citations, as given)",
    ),
    ReplyField("choices[].message.reasoning_details", NOT_KEPT, "OpenRouter's (the reasoning text is kept)"),
    ReplyField(
        "choices[].messages", MAPPED, "Azure's legacy On Your Data: the assistant's read; `tool` messages not kept"
    ),
    ReplyField("prompt_filter_results", NOT_KEPT, "Azure's"),
    ReplyField("moderation", NOT_KEPT),
    ReplyField("citations|search_results", NOT_KEPT, "Perplexity's"),
    ReplyField(
        "error",
        MAPPED,
        "an error event (metadata `agentmsg_errors`); the reply ends INTERRUPTED (a whole response's: when it has no"
        " choices)",
    ),
)


# ---- reader: whole replies and stream payloads -------------------------------------------------------------


class Reader(PayloadReader):
    """Chat Completions payloads -> AgentEvents: a whole response (every choice; choice i > 0 under
    ``source: choice/i``) and each chunk of an SSE stream (``data: {chunk}`` ... ``data: [DONE]``).

    Tool-call fragments are routed by ``index`` to their call (a new id at an index starts a new call),
    names are set once, ``reasoning_content`` / ``reasoning`` become thinking, ``refusal`` a text block of
    its own, ``n > 1`` choices are kept apart, the usage-only final chunk gives the usage, and an ``error``
    payload mid-stream ends the reply interrupted with everything before it kept (payloads after it are
    skipped and said, as after ``[DONE]``)."""

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        super().__init__(builder, spec, **options)
        self._legacy_roles: dict[tuple[int, int], Any] = {}  # (choice, message) -> its role (_legacy_messages)

    def reply(self, obj: Any) -> None:
        b = self.b
        if "choices" not in obj and not obj.get("error"):
            raise ValidationError.single(
                "", "shape", "a Chat Completions response has choices (or an error): none here"
            )
        if obj.get("error") and not obj.get("choices"):
            _provider_error(b, obj["error"])
            b.close()
            return
        choices = b.objects(b.array(obj.get("choices"), "the response's choices"), "the response's choices")
        b.identify(obj.get("id"), obj.get("model"))
        usage = obj.get("usage")
        if not usage:  # Moonshot / Kimi put it in the choice (in a stream's last chunk; a response's, if so, too)
            usage = next((c["usage"] for c in choices if c.get("usage")), usage)
        b.set_usage(_usage(usage, b))
        _not_kept_response(b, obj)
        for choice in choices:
            i = b.index(choice.get("index"), 0, "a choice's index")  # (not a boolean: choice/True)
            m = b.mapping(choice.get("message"), f"choice {i}'s message")
            b.choice(i)
            if "message" not in choice and "messages" in choice:
                _legacy_messages(b, i, choice["messages"], None, {})
            elif "message" not in choice and choice.get("delta"):
                # a stream chunk's choice (ChatCompletionChunk: a delta, no message) in a whole response: it read as
                # an empty message, its text and calls gone unsaid
                b.problem(
                    "shape",
                    f"choice {i} has a delta and no message (a stream chunk's, which parse_stream reads): its delta is"
                    " not read",
                )
            _message(b, i, m)
            _not_kept_choice(b, i, choice)
            _tool_calls(b, i, m, whole=True)
            _finish(b, i, choice.get("finish_reason"))
            _stop_not_kept(b, i, choice)
        if obj.get("error"):  # an error beside choices (OpenRouter: finish_reason "error"): after what they carry, as a
            _provider_error(b, obj["error"])  # stream's chunk says it
        # The whole response is the provider's end of the reply: a choice without a finish reason (some compatible
        # servers send none) is whole, as one that ends with [DONE] is (MODEL_STOP, or TOOL_CALLS with calls)
        b.close(ended=True)

    def whole(self, obj: dict[str, Any]) -> bool:
        # a ChatCompletion, not a chunk: no chat.completion.chunk object, no choice with a delta
        choices = obj.get("choices")
        if obj.get("object") == "chat.completion.chunk" or type(choices) is not list:
            return False
        return not any(type(c) is dict and "delta" in c for c in choices)

    def end(self) -> None:
        self.say_foreign("no Chat Completions chunk shape (no choices, usage or error)")

    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        b = self.b
        b.ids_expected = True  # an id after the name is the call's (ChatCompletionStreamState)
        err = obj.get("error")  # null or {} on a chunk is no error (the SDK raises on a truthy one only)
        if event == "error":
            _provider_error(b, err or obj)
            self.end_at_error()
            return
        if err and not obj.get("choices"):
            _provider_error(b, err)
            self.end_at_error()
            return
        if b.model is None or b.response_id is None:
            b.identify(obj.get("id"), obj.get("model"))
        usage = obj.get("usage")
        if not usage and "x_groq" in obj:  # Groq sends the usage there, on the last chunk
            usage = as_object(obj["x_groq"]).get("usage")
        if usage is not None:  # ({} has no count: _usage gives None, which set_usage keeps no record of)
            b.set_usage(_usage(usage, b))
        choices = obj.get("choices")
        if type(choices) is not list or (
            (len(choices) != 1 or type(choices[0]) is not dict) and not all(type(ch) is dict for ch in choices)
        ):  # (absent: none; another JSON value, or an item that is no object: said, the objects read)
            choices = b.objects(b.array(choices, "a chunk's choices"), "a chunk's choices")
        ended = not choices
        routable: tuple[str, Any, bytes, str] | None = None  # a fragment of choice 0 and nothing else (see the end)
        if ended and "choices" not in obj and not usage and not err and _RESPONSE_NOT_KEPT_KEYS.isdisjoint(obj):
            self.foreign += 1  # no chunk (a wrapper around one, another provider's payload): said when the body ends
            return
        for ch in choices:
            i = ch.get("index", 0)
            if type(i) is not int or not INT_MIN <= i <= INT_MAX:  # (beyond 64 bits: a payload the codec read)
                i = b.index(i, 0, "a choice's index")
            delta = ch.get("delta")
            if type(delta) is not dict:
                if delta is not None:
                    b.problem("type", f"a choice's delta is a JSON {json_type(delta)}, not an object: left out")
                elif "messages" in ch:
                    _legacy_messages(b, i, ch["messages"], "delta", self._legacy_roles)
                delta = as_object(ch.get("message"))
            content = delta.get("content")
            if content and type(content) is str and (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
                b.text(content, choice=i)  # the common case: a text fragment
                routable = ("text", "text", b'"content":', content)
            elif len(delta) == 1 and (arguments := _arguments_fragment(delta)) is not None:
                b.tool_call(arguments[0], choice=i, arguments=arguments[1])  # the common case: an arguments fragment
                routable = ("call", arguments[0], b'"arguments":', arguments[1])
            elif (reasoning := _reasoning_fragment(delta)) is not None:
                b.thinking(reasoning[1], choice=i)  # the common case of a reasoning model: a reasoning fragment
                routable = ("thinking", "thinking", reasoning[0], reasoning[1])
            else:
                _message(b, i, delta)
                _tool_calls(b, i, delta, whole=False)
            if ch.get("logprobs") or ch.get("content_filter_results"):
                _not_kept_choice(b, i, ch)
                routable = None
            if i != 0:
                routable = None
            reason = ch.get("finish_reason")
            if reason:
                if not usage and ch.get("usage"):  # Moonshot / Kimi: the usage in the last chunk's choice
                    b.set_usage(_usage(ch["usage"], b))
                _finish(b, i, reason)
                _stop_not_kept(b, i, ch)
                ended = True
        # What a chunk says beside its choices comes on the first chunk (Azure's prompt filter results, with no
        # choices), on the last ones (moderation, with no choices), or on every chunk (Perplexity's citations); the
        # SDK's chunk type has it on any chunk, beside a choice's text too: looked for on every chunk read here (said
        # once per reply), as a whole response's is
        if not _RESPONSE_NOT_KEPT_KEYS.isdisjoint(obj):
            _not_kept_response(b, obj)
        if err:  # an error beside choices (OpenRouter: finish_reason "error"): after what they carry
            _provider_error(b, err)
            self.end_at_error()
        elif routable is not None and not ended and len(choices) == 1 and usage is None and type(self) is Reader:
            self._route(event, obj, routable)  # (a subclass may read payloads its own way: chunk() would not see them)

    def _route(self, event: str, obj: dict[str, Any], routable: tuple[str, Any, bytes, str]) -> None:
        """A payload read as one fragment of choice 0 and nothing else (``b.text(...)``, ``b.thinking(...)`` or
        ``b.tool_call(key, arguments=...)``: ``routable`` is the kind, the slot, the key of the fragment's string
        and the string): the next ones of the same bytes around their string (the same id, model, created...;
        OpenAI's obfuscation, which changes and is not read, aside) are read so in C
        (:meth:`PayloadReader.route_value`), with no orjson and no :meth:`chunk` call."""
        b = self.b
        data = b.payload
        if "x_groq" in obj or b.response_id is None or b.model is None or type(data) is not bytes:
            return
        holes = (value_at(data, b'"obfuscation":'),) if "obfuscation" in obj else ()
        kind, slot, key, text = routable
        self.route_value(key, text, slot, event, holes, kind=kind)


# ---- registry entries and the module's functions -----------------------------------------------------------

PROVIDERS: Final = tuple(
    Entry(spec, functools.partial(format_request, variant=spec.name), Reader, __name__) for spec in SPECS
)
_ENTRY: Final = {entry.spec.name: entry for entry in PROVIDERS}


def _entry(variant: str) -> Entry:
    _variant(variant)  # (an unknown variant: a ValidationError, a ValueError too)
    return _ENTRY[variant]


def response_events(
    body: bytes | str | Mapping[str, Any], *, variant: str = "openai", **options: Any
) -> list[dict[str, Any]]:
    """The AgentEvents of a non-streaming response (every choice; choice i > 0 under ``source: choice/i``).
    :class:`~agentmsg.ValidationError` for a body that is not such a response."""
    return _entry(variant).response_events(body, **options)


def parse_response(
    body: bytes | str | Mapping[str, Any], *, choice: int = 0, variant: str = "openai", **options: Any
) -> Msg:
    """The assistant message of a Chat Completions response (choice ``choice``; ``variant`` names the
    compatible provider, kept as the reasoning's provenance). Options: see :class:`StreamBuilder`."""
    return _entry(variant).parse_response(body, choice=choice, **options)


def StreamParser(*, variant: str = "openai", **options: Any) -> parser.StreamParser:
    """An incremental parser of a Chat Completions SSE body (``feed(chunk)``, ``close()``)."""
    return _entry(variant).stream_parser(**options)


def parse_stream(
    chunks: Iterable[bytes | str] | bytes | str, *, variant: str = "openai", **options: Any
) -> Iterator[dict[str, Any]]:
    """AgentEvents of a Chat Completions SSE body (whole, or an iterable of chunks as they arrive)."""
    return _entry(variant).parse_stream(chunks, **options)
