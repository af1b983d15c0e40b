"""Alibaba DashScope native API: request formatter; response and stream parsers (issue 10).

The body is ``{"model", "input": {"messages": [...]}, "parameters": {...}}``. The endpoint is
multimodal generation when the model is a multimodal one (Qwen-VL, QVQ, Omni, Qwen3.5+, ...) or the
conversation holds media, and text generation otherwise (``FormattedRequest.path``). Text
generation takes string contents; multimodal generation takes part lists (``{"text"}``,
``{"image"}``, ``{"audio"}``, ``{"video"}`` with Qwen-VL sizing hints). Messages keep the OpenAI
shape (``tool_calls``, ``tool`` messages with ``tool_call_id`` and ``name``, ``reasoning_content``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentmsg.blocks import AudioBlock, DataBlock, ImageBlock, ToolResultBlock, VideoBlock
from agentmsg.message import Msg

from . import _format as F
from ._chat import ChatWalk, copy_hints
from ._common import media_kind
from ._format import Context, FormatOptions, FormattedRequest
from ._tools import normalize_tool_choice, normalize_tools, openai_tool_choice, openai_tools

__all__ = ["DEFAULT_MODEL", "MULTIMODAL_PATH", "TEXT_PATH", "format_request", "is_multimodal_model"]

DEFAULT_MODEL: Final = "qwen-plus"
TEXT_PATH: Final = "/services/aigc/text-generation/generation"
MULTIMODAL_PATH: Final = "/services/aigc/multimodal-generation/generation"
FAMILIES: Final = ("dashscope",)
_MEDIA: Final = frozenset({ImageBlock, AudioBlock, VideoBlock, DataBlock})
_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,64}")
_PARAMS: Final[Mapping[str, str | None]] = {}
_HINTS: Final = {"image": ("min_pixels", "max_pixels"), "video": ("fps", "min_pixels", "max_pixels", "total_pixels")}


def is_multimodal_model(model: str) -> bool:
    """Models served by the multimodal-generation endpoint (as AgentScope Java decides, plus Omni)."""
    m = model.lower()
    if m.startswith("qwen3.6-max-preview") or m.startswith("qwen3.7-max"):
        return False
    return (
        m.startswith("qvq")
        or "-vl" in m
        or "-asr" in m
        or "omni" in m
        or m.startswith(("qwen3.5", "qwen3.6", "qwen3.7", "qwen3.8-max"))
        or m in ("kimi-k2.5", "kimi-k2.6")
    )


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
    **params: Any,
) -> FormattedRequest:
    """Format a conversation as a DashScope native generation request.

    ``params`` go into ``parameters`` as they are (``temperature``, ``top_p``, ``top_k``,
    ``max_tokens``, ``stop``, ``seed``, ``enable_thinking``, ``thinking_budget`` (which also sets
    ``enable_thinking``), ``enable_search``, ...)."""
    msgs = F.check_messages(messages)
    opts = F.as_options(options)
    tool_defs = normalize_tools(tools)
    choice = normalize_tool_choice(tool_choice)
    name = model or DEFAULT_MODEL
    multimodal = is_multimodal_model(name) or _has_media(msgs)
    ctx = Context("dashscope", FAMILIES, opts, tool_name_ok=_NAME_OK)
    walk = _DashScopeWalk(ctx, multi_agent, agent_name, multimodal)
    try:
        out = walk.run(msgs)
    finally:
        ctx.media.close()
    F.require_turns(out, ctx.provider)
    parameters: dict[str, Any] = {"result_format": "message"}
    if stream:
        parameters["incremental_output"] = True
    params = dict(params)
    if params.get("thinking_budget") is not None:
        params.setdefault("enable_thinking", True)
    F.apply_params(ctx, params, _PARAMS, parameters)
    if tool_defs:
        parameters["tools"] = openai_tools(tool_defs, ctx, strict_field=False)
    if choice is not None:
        if tool_defs or choice.mode == "none":
            parameters["tool_choice"] = openai_tool_choice(choice, ctx, required=False)
        else:
            ctx.report("/tool_choice", "param-dropped", "tool_choice without tools is not sent")
    body = {"model": name, "input": {"messages": out}, "parameters": parameters}
    diagnostics = ctx.finish(strict)
    return FormattedRequest(
        body=body,
        diagnostics=diagnostics,
        model=name,
        path=MULTIMODAL_PATH if multimodal else TEXT_PATH,
        headers={"X-DashScope-SSE": "enable"} if stream else {},
        stream=stream,
    )


def _has_media(msgs: Sequence[Msg]) -> bool:
    media = _MEDIA
    for msg in msgs:
        blocks: list[Any] = msg.content
        for b in blocks:
            t = type(b)
            if t in media:
                return True
            if t is ToolResultBlock and any(type(o) in media for o in b.output):
                return True
    return False


class _DashScopeWalk(ChatWalk):
    reasoning_field = "reasoning_content"
    hint_role = "user"
    tool_name_field = True
    typed_text = False
    drop_empty = True

    def __init__(self, ctx: Context, multi: bool, agent: str | None, multimodal: bool) -> None:
        super().__init__(ctx, multi, agent)
        self.multimodal = multimodal
        self.plain = not multimodal
        self.tool_only_content = [{"text": ""}] if multimodal else ""

    def text_part(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def user_content(self, parts: list[dict[str, Any]]) -> Any:
        if self.multimodal:
            return parts
        # text generation: no media can be here (they select the multimodal endpoint)
        return parts[0]["text"] if len(parts) == 1 else "\n".join(p.get("text", "") for p in parts)

    def text_content(self, text: str) -> Any:
        return [{"text": text}] if self.multimodal else text

    def media_part(self, b: Any, pointer: str) -> dict[str, Any]:
        ctx = self.ctx
        src = b.source
        if type(b) is ImageBlock and src.type == "base64" and b.min_pixels is None and b.max_pixels is None:
            return {"image": f"data:{src.media_type};base64,{src.data}"}
        kind, mime = media_kind(b)
        if kind == "file":
            return self.placeholder(b, pointer, f"{mime or 'unknown'} data")
        m = ctx.media.resolve(b.source, pointer, inline=False, schemes=("http", "https", "oss"))
        part: dict[str, Any] = {kind: m.url or m.data_uri()}
        kept = _HINTS.get(b.type, ())
        copy_hints(b, part, kept)
        F.media_options(b, kept, ctx, pointer)
        return part


# ---- response (issue 10) --------------------------------------------------------------------------

# ---- stream (issue 10) ----------------------------------------------------------------------------
