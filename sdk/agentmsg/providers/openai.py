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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from agentmsg import reduce_events
from agentmsg.blocks import (
    AudioBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from agentmsg.message import Msg, MsgRole

from . import _format as F
from ._common import AUDIO_FORMATS, media_kind
from ._format import Context, FormatOptions, FormattedRequest
from ._stream import BaseStreamParser, StreamBuilder, as_object, run_parser, usage_dict
from ._tools import normalize_tool_choice, normalize_tools, openai_tool_choice, openai_tools

__all__ = [
    "VARIANTS",
    "OpenAIVariant",
    "StreamParser",
    "format_request",
    "parse_response",
    "parse_stream",
    "response_events",
]

_USER, _ASSISTANT, _SYSTEM, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM, MsgRole.TOOL
_MEDIA: Final = frozenset({ImageBlock, AudioBlock, VideoBlock, DataBlock})


@attrs.frozen(kw_only=True)
class OpenAIVariant:
    """What one OpenAI-compatible provider accepts."""

    name: str
    families: tuple[str, ...]  # thinking metadata ``provider`` values replayed as native reasoning
    default_model: str
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


VARIANTS: Final[dict[str, OpenAIVariant]] = {
    v.name: v
    for v in (
        OpenAIVariant(
            name="openai",
            families=("openai",),
            default_model="gpt-4o",
            params={"max_tokens": "max_completion_tokens", "top_k": None, "thinking_budget": None},
        ),
        OpenAIVariant(
            name="deepseek",
            families=("deepseek",),
            default_model="deepseek-chat",
            reasoning_field="reasoning_content",
            reasoning_current_turn_only=True,
            files=False,
            tool_strict=True,
            params={"top_k": None, "thinking_budget": None, "seed": None},
        ),
        OpenAIVariant(
            name="dashscope-compatible",
            families=("dashscope",),
            default_model="qwen-plus",
            reasoning_field="reasoning_content",
            video=True,
            audio_urls=True,
            files=False,
            pixel_hints=True,
            tool_strict=False,
            required_choice=False,
            params={},
        ),
    )
}


# ---- request (issue 9) ----------------------------------------------------------------------------


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
    variant: str = "openai",
    **params: Any,
) -> FormattedRequest:
    """Format a conversation as an OpenAI Chat Completions request (or a compatible variant's).

    ``params`` are generation parameters (``temperature``, ``max_tokens``, ``top_p``, ``stop``,
    ``seed``, ...): common names are mapped to the variant's; others pass through to the body.
    Raises :class:`~agentmsg.ValidationError` for bad input, refused media, and with ``strict`` for
    every lossy or error diagnostic."""
    v = VARIANTS.get(variant)
    if v is None:
        raise ValueError(f"unknown OpenAI variant {variant!r}; known: {', '.join(VARIANTS)}")
    msgs = F.check_messages(messages)
    opts = F.as_options(options)
    tool_defs = normalize_tools(tools)
    choice = normalize_tool_choice(tool_choice)
    ctx = Context(v.name, v.families, opts, tool_name_ok=_NAME_OK)
    try:
        out = _Walk(ctx, v, multi_agent, agent_name).run(msgs)
    finally:
        ctx.media.close()
    body: dict[str, Any] = {"model": model or v.default_model, "messages": out}
    if stream:
        body["stream"] = True
        if v.stream_options:
            body["stream_options"] = {"include_usage": True}
    if tool_defs:
        body["tools"] = openai_tools(tool_defs, ctx, strict_field=v.tool_strict)
    if choice is not None:
        if tool_defs or choice.mode == "none":
            body["tool_choice"] = openai_tool_choice(choice, ctx, required=v.required_choice)
        else:
            ctx.report("/tool_choice", "param-dropped", "tool_choice without tools is not sent")
    params = dict(params)
    if v.name == "dashscope-compatible" and params.get("thinking_budget") is not None:
        params.setdefault("enable_thinking", True)
    F.apply_params(ctx, params, v.params, body)
    diagnostics = ctx.finish(strict)
    return FormattedRequest(
        body=body,
        diagnostics=diagnostics,
        model=body["model"],
        path="/chat/completions",
        headers={},
        stream=stream,
    )


_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,64}")


class _Walk:
    """One pass over the conversation, building the ``messages`` array."""

    __slots__ = ("agent", "ctx", "deferred", "last_user", "multi", "out", "v")

    def __init__(self, ctx: Context, v: OpenAIVariant, multi: bool, agent: str | None) -> None:
        self.ctx = ctx
        self.v = v
        self.multi = multi
        self.agent = agent
        self.out: list[dict[str, Any]] = []
        self.deferred: list[dict[str, Any]] = []  # hints and tool-result media, sent once no call is open
        self.last_user = -1

    def run(self, msgs: Sequence[Msg]) -> list[dict[str, Any]]:
        ctx = self.ctx
        if self.v.reasoning_current_turn_only:
            for i in range(len(msgs) - 1, -1, -1):
                if msgs[i].role is _USER:
                    self.last_user = i
                    break
        out = self.out
        for i, msg in enumerate(msgs):
            role = msg.role
            try:
                if ctx.open_calls and role is not _TOOL and not _has_result(msg):
                    self._orphans()
                if role is _ASSISTANT:
                    if self.multi and not F.is_current_agent(msg, self.agent) and not _has_tool_use(msg):
                        self._user(msg, i, prefix=True)
                    else:
                        self._assistant(msg, i)
                elif role is _USER:
                    self._user(msg, i, prefix=self.multi)
                elif role is _TOOL:
                    self._tool(msg, i)
                else:
                    self._system(msg, i)
            except (AttributeError, TypeError, KeyError) as exc:
                raise F.broken_message(i, exc) from None
            if self.deferred and not ctx.open_calls:
                out.extend(self.deferred)
                self.deferred.clear()
        if ctx.open_calls:
            self._orphans()
        out.extend(self.deferred)
        return out

    # ---- roles ----

    def _name(self, msg: Msg, i: int, entry: dict[str, Any]) -> None:
        name = msg.name
        if name:
            if self.v.send_name:
                entry["name"] = self.ctx.speaker_name(name, f"/{i}/name")
            elif not self.multi:
                self.ctx.report(f"/{i}/name", "name-dropped", f"{self.v.name} takes no message name")

    def _system(self, msg: Msg, i: int) -> None:
        texts = []
        for j, b in enumerate(_blocks(msg)):
            if type(b) is TextBlock:
                texts.append(b.text)
            else:
                self.ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a system message")
        entry: dict[str, Any] = {"role": "system", "content": "\n".join(texts)}
        self._name(msg, i, entry)
        self.out.append(entry)

    def _user(self, msg: Msg, i: int, prefix: bool) -> None:
        content = _blocks(msg)
        ctx = self.ctx
        label = f"[{F.speaker_label(msg)}]: " if prefix else ""
        if len(content) == 1 and type(content[0]) is TextBlock:
            entry: dict[str, Any] = {"role": "user", "content": label + content[0].text}
        else:
            parts: list[dict[str, Any]] = []
            for j, b in enumerate(content):
                t = type(b)
                if t is TextBlock:
                    parts.append({"type": "text", "text": b.text})
                elif t in _MEDIA:
                    parts.append(self._media(b, f"/{i}/content/{j}"))
                elif t is HintBlock:
                    self._hint(b, i, j)
                elif t is ThinkingBlock:
                    ctx.report(f"/{i}/content/{j}", "thinking-dropped", "reasoning of another speaker is not sent")
                else:
                    ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a user turn")
            if not parts:
                ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
                return
            if label:
                if parts[0]["type"] == "text":
                    parts[0] = {"type": "text", "text": label + parts[0]["text"]}
                else:
                    parts.insert(0, {"type": "text", "text": label.rstrip()})
            if len(parts) == 1 and parts[0]["type"] == "text":
                entry = {"role": "user", "content": parts[0]["text"]}
            else:
                entry = {"role": "user", "content": parts}
        self._name(msg, i, entry)
        self.out.append(entry)

    def _assistant(self, msg: Msg, i: int) -> None:
        ctx = self.ctx
        v = self.v
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[tuple[ToolResultBlock, int]] = []
        other = self.multi and not F.is_current_agent(msg, self.agent)
        for j, b in enumerate(_blocks(msg)):
            t = type(b)
            if t is TextBlock:
                texts.append(b.text)
            elif t is ToolUseBlock:
                pointer = f"/{i}/content/{j}"
                _, arguments = F.tool_arguments(b, ctx, pointer)
                calls.append(
                    {
                        "id": ctx.call_id(b.id, pointer),
                        "type": "function",
                        "function": {"name": ctx.tool_name(b.name, pointer + "/name"), "arguments": arguments},
                    }
                )
                F.open_call(ctx, b, pointer)
            elif t is ThinkingBlock:
                self._thinking(b, i, j, reasoning, texts, other)
            elif t is ToolResultBlock:
                results.append((b, j))
            elif t is HintBlock:
                self._hint(b, i, j)
            else:
                label = F.block_label(b)
                ctx.report(f"/{i}/content/{j}", "media-unsupported", f"{b.type} in an assistant turn sent as {label!r}")
                texts.append(label)
        if other and texts:
            texts[0] = f"[{F.speaker_label(msg)}]: {texts[0]}"
        entry: dict[str, Any] = {"role": "assistant"}
        if texts:
            entry["content"] = texts[0] if len(texts) == 1 else "\n".join(texts)
        else:
            entry["content"] = None if calls else ""
        self._name(msg, i, entry)
        if reasoning:
            entry[v.reasoning_field or "reasoning_content"] = "\n".join(reasoning)
        if calls:
            entry["tool_calls"] = calls
        if texts or calls or reasoning or not results:
            self.out.append(entry)
        for b, j in results:
            self._result(b, f"/{i}/content/{j}")

    def _thinking(self, b: ThinkingBlock, i: int, j: int, reasoning: list[str], texts: list[str], other: bool) -> None:
        ctx = self.ctx
        v = self.v
        pointer = f"/{i}/content/{j}"
        if other:
            ctx.report(pointer, "thinking-dropped", "reasoning of another agent is not sent")
            return
        origin = F.reasoning_origin(b)
        meta = b.metadata or {}
        if origin is not None and origin not in ctx.families:
            if F.foreign_reasoning(ctx, b, pointer, origin) == F.DEMOTE:
                texts.append(b.thinking)
            return
        if v.reasoning_field is None:
            if ctx.options.reasoning == "text" and b.thinking:
                ctx.report(pointer, "thinking-demoted", f"{v.name} takes no reasoning; sent as text")
                texts.append(b.thinking)
            else:
                ctx.report(pointer, "thinking-dropped", f"{v.name} takes no reasoning in requests")
            return
        if meta.get("redacted") is True:
            ctx.report(pointer, "thinking-dropped", f"redacted reasoning cannot be sent to {v.name}")
            return
        if v.reasoning_current_turn_only and i < self.last_user:
            ctx.report(pointer, "thinking-pruned", f"{v.name} takes reasoning of the current turn only")
            return
        if meta.get("signature") is not None:
            ctx.report(pointer, "signature-dropped", f"{v.name} has no field for a reasoning signature")
        reasoning.append(b.thinking)

    def _tool(self, msg: Msg, i: int) -> None:
        ctx = self.ctx
        for j, b in enumerate(_blocks(msg)):
            t = type(b)
            if t is ToolResultBlock:
                self._result(b, f"/{i}/content/{j}")
            elif t is HintBlock:
                self._hint(b, i, j)
            else:
                ctx.report(
                    f"/{i}/content/{j}", "block-dropped", f"{b.type} block outside a tool result in a TOOL message"
                )

    def _result(self, b: ToolResultBlock, pointer: str) -> None:
        ctx = self.ctx
        paired, _ = F.close_call(ctx, b, pointer)
        if not paired and ctx.options.repair:
            ctx.report(pointer, "tool-result-dropped", f"orphaned tool result {b.id!r} left out")
            return
        media: list[tuple[Any, str]] = []
        output = b.output
        text = F.text_of_blocks(output, ctx, pointer + "/output", media) if output else ""
        call_id = ctx.call_id(b.id, pointer)
        if media:
            labels = [F.block_label(m) for m, _ in media]
            text = "\n".join([text, *labels]) if text else "\n".join(labels)
            parts: list[dict[str, Any]] = [{"type": "text", "text": f"Media returned by tool call {call_id}:"}]
            for m, p in media:
                ctx.report(p, "tool-result-media-fallback", f"{m.type} sent in a user message after the tool results")
                parts.append(self._media(m, p))
            self.deferred.append({"role": "user", "content": parts})
        self.out.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def _hint(self, b: HintBlock, i: int, j: int) -> None:
        self.ctx.report(f"/{i}/content/{j}", "hint-placed", "hint sent as a system message after this turn")
        self.deferred.append({"role": "system", "content": b.hint})

    def _orphans(self) -> None:
        ctx = self.ctx
        for call_id, _pointer, _name in F.orphan_calls(ctx):
            if ctx.options.repair:
                self.out.append(
                    {"role": "tool", "tool_call_id": ctx.id_cache.get(call_id, call_id), "content": F.REPAIR_TEXT}
                )

    # ---- media ----

    def _media(self, b: Any, pointer: str) -> dict[str, Any]:
        ctx = self.ctx
        v = self.v
        kind, mime = media_kind(b)
        if kind == "image":
            m = ctx.media.resolve(b.source, pointer, inline=False)
            part: dict[str, Any] = {"type": "image_url", "image_url": {"url": m.url or m.data_uri()}}
            if v.pixel_hints:
                _hints(b, part, ("min_pixels", "max_pixels"))
            return part
        if kind == "audio":
            fmt = AUDIO_FORMATS.get(mime or "")
            if fmt is None:
                return self._placeholder(b, pointer, f"audio format {mime!r} (only wav and mp3)")
            m = ctx.media.resolve(b.source, pointer, inline=not v.audio_urls)
            return {"type": "input_audio", "input_audio": {"data": m.url or m.data or "", "format": fmt}}
        if kind == "video":
            if not v.video:
                return self._placeholder(b, pointer, "video")
            m = ctx.media.resolve(b.source, pointer, inline=False)
            part = {"type": "video_url", "video_url": {"url": m.url or m.data_uri()}}
            if v.pixel_hints:
                _hints(b, part, ("fps", "min_pixels", "max_pixels", "total_pixels"))
            return part
        if not v.files or mime != "application/pdf":
            return self._placeholder(b, pointer, f"{mime or 'unknown'} data")
        m = ctx.media.resolve(b.source, pointer, inline=True)
        file: dict[str, Any] = {"filename": getattr(b, "name", None) or "document.pdf", "file_data": m.data_uri()}
        return {"type": "file", "file": file}

    def _placeholder(self, b: Any, pointer: str, what: str) -> dict[str, Any]:
        label = F.block_label(b)
        self.ctx.report(pointer, "media-unsupported", f"{self.v.name} takes no {what}; sent as {label!r}")
        return {"type": "text", "text": label}


def _hints(block: Any, part: dict[str, Any], names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(block, name, None)
        if value is not None:
            part[name] = value


def _blocks(msg: Msg) -> list[Any]:
    return msg.content


def _has_result(msg: Msg) -> bool:
    return any(type(b) is ToolResultBlock for b in msg.content)


def _has_tool_use(msg: Msg) -> bool:
    return any(type(b) is ToolUseBlock for b in msg.content)


# ---- response (issue 10) --------------------------------------------------------------------------
# An OpenAI Chat Completions response (and the compatible family: DeepSeek, DashScope compatible mode,
# ...) becomes the events a stream of it would give, reduced by the one Reducer: parse_response and
# reduce(parse_stream) cannot drift apart.


_TOOL_FINISH = ("tool_calls", "function_call")


def _usage(u: Any) -> dict[str, Any] | None:
    if not isinstance(u, dict):
        return None
    details = u.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = u.get("prompt_cache_hit_tokens")  # DeepSeek
    return usage_dict(u.get("prompt_tokens"), u.get("completion_tokens"), cached, u.get("total_tokens"))


def _text_of(content: Any) -> str:
    """``content`` as a string, or the text of its parts (some compatible providers send a part list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _reasoning(m: Mapping[str, Any]) -> str:
    r = m.get("reasoning_content")
    if not isinstance(r, str) or not r:
        r = m.get("reasoning")  # OpenRouter / vLLM spelling
    return r if isinstance(r, str) else ""


def _message(b: StreamBuilder, i: int, m: Mapping[str, Any]) -> None:
    """One choice's message (non-streaming) or delta (streaming) into the builder."""
    reasoning = _reasoning(m)
    if reasoning:
        b.thinking(reasoning, choice=i)
    text = _text_of(m.get("content"))
    if text:
        b.text(text, choice=i)
    refusal = m.get("refusal")
    if isinstance(refusal, str) and refusal:
        b.text(refusal, choice=i, slot="refusal")


def _tool_calls(b: StreamBuilder, i: int, calls: Any, whole: bool) -> None:
    if not isinstance(calls, list):
        return
    for position, tc in enumerate(calls):
        if not isinstance(tc, dict):
            continue
        fn = as_object(tc.get("function"))
        index = tc.get("index")
        key = ("index", index) if isinstance(index, int) else ("position", position)
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = orjson.dumps(args).decode() if isinstance(args, (dict, list)) else None
        sig = fn.get("thought_signature") or tc.get("thought_signature")
        b.tool_call(
            key,
            choice=i,
            call_id=tc.get("id") if isinstance(tc.get("id"), str) else None,
            name=fn.get("name") if isinstance(fn.get("name"), str) else None,
            arguments=args,
            thought_signature=sig if isinstance(sig, str) else None,
        )
        if whole:
            b.end_tool_call(key, choice=i)


def _finish(b: StreamBuilder, i: int, reason: Any) -> None:
    if isinstance(reason, str) and reason and reason != "null":
        b.finish(i, reason, tool_calls=reason in _TOOL_FINISH, normal=reason == "stop")


def _provider_error(b: StreamBuilder, err: Any) -> None:
    if isinstance(err, dict):
        b.error(
            str(err.get("message") or err),
            kind=str(err.get("type") or "provider_error"),
            code=err.get("code") if isinstance(err.get("code"), (str, int)) else None,
        )
    else:
        b.error(str(err))


def _family(variant: str) -> str:
    """The provider name kept in thinking provenance for a variant (``deepseek``, ``dashscope``, ...)."""
    v = VARIANTS.get(variant)
    return v.families[0] if v is not None else variant


def response_events(
    body: bytes | str | Mapping[str, Any], *, variant: str = "openai", **options: Any
) -> list[dict[str, Any]]:
    """The AgentEvents of a non-streaming response (every choice; choice i > 0 under ``source: choice/i``)."""
    obj = orjson.loads(body) if isinstance(body, (bytes, str)) else body
    b = StreamBuilder(options.pop("provider", _family(variant)), **options)
    if not isinstance(obj, Mapping):
        raise TypeError("an OpenAI response is a JSON object")
    if "error" in obj and "choices" not in obj:
        _provider_error(b, obj["error"])
        b.close()
        return b.drain()
    b.identify(obj.get("id"), obj.get("model"))
    b.set_usage(_usage(obj.get("usage")))
    for choice in obj.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        i = choice.get("index", 0) if isinstance(choice.get("index"), int) else 0
        m = as_object(choice.get("message"))
        b.choice(i)
        _message(b, i, m)
        _tool_calls(b, i, m.get("tool_calls"), whole=True)
        _finish(b, i, choice.get("finish_reason") or "stop")
    b.close()
    return b.drain()


def parse_response(
    body: bytes | str | Mapping[str, Any], *, choice: int = 0, variant: str = "openai", **options: Any
) -> Msg:
    """The assistant message of a Chat Completions response (choice ``choice``; ``variant`` names the
    compatible provider, kept as the reasoning's provenance). Options: see :class:`StreamBuilder`."""
    events = response_events(body, variant=variant, **options)
    return reduce_events(events, source=None if choice == 0 else f"choice/{choice}")[0]


# ---- stream (issue 10) ----------------------------------------------------------------------------


class StreamParser(BaseStreamParser):
    """Chat Completions SSE (``data: {chunk}`` ... ``data: [DONE]``) -> AgentEvents, incrementally.

    Tool-call fragments are routed by ``index`` to their call (a new id at an index starts a new call),
    names are set once, ``reasoning_content`` / ``reasoning`` become thinking, ``refusal`` a text block of
    its own, ``n > 1`` choices are kept apart (``source: choice/i``), the usage-only final chunk gives
    the usage, and an ``error`` payload mid-stream ends the reply interrupted with everything kept."""

    provider = "openai"

    def __init__(self, *, variant: str = "openai", **options: Any) -> None:
        options.setdefault("provider", _family(variant))
        super().__init__(**options)

    def payload(self, event: str, obj: dict[str, Any]) -> None:
        b = self.builder
        if "error" in obj and not obj.get("choices"):
            _provider_error(b, obj["error"])
            return
        if event == "error":
            _provider_error(b, obj)
            return
        b.identify(obj.get("id"), obj.get("model"))
        usage = obj.get("usage")
        if usage:
            b.set_usage(_usage(usage))
        for ch in obj.get("choices") or ():
            i = ch.get("index", 0)
            if type(i) is not int:
                i = 0
            delta = ch.get("delta")
            if not isinstance(delta, dict):
                delta = as_object(ch.get("message"))
            content = delta.get("content")
            if content and type(content) is str and (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
                b.text(content, choice=i)  # the common case: a text fragment
            else:
                _message(b, i, delta)
                calls = delta.get("tool_calls")
                if calls:
                    _tool_calls(b, i, calls, whole=False)
            reason = ch.get("finish_reason")
            if reason:
                _finish(b, i, reason)


def parse_stream(chunks: Iterable[bytes | str] | bytes | str, **options: Any) -> Iterator[dict[str, Any]]:
    """AgentEvents of a Chat Completions SSE body (whole, or an iterable of chunks as they arrive)."""
    return run_parser(StreamParser(**options), chunks)
