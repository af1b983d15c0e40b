"""Alibaba DashScope native API: the spec, the request formatter, and the reader of whole replies and SSE
streams.

The body is ``{"model", "input": {"messages": [...]}, "parameters": {...}}``. The endpoint is
multimodal generation when the model is a multimodal one (Qwen-VL, QVQ, Omni, Qwen3.5+, ...) or the
conversation holds media, and text generation otherwise (``FormattedRequest.path``). Text
generation takes string contents; multimodal generation takes part lists (``{"text"}``,
``{"image"}``, ``{"audio"}``, ``{"video"}`` with Qwen-VL sizing hints). Messages keep the OpenAI
shape (``tool_calls``, ``tool`` messages with ``tool_call_id`` and ``name``, ``reasoning_content``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

import attrs

from agentmsg._codec.jsontext import INT_MAX, INT_MIN, json_type
from agentmsg.blocks import ImageBlock, ToolResultBlock
from agentmsg.errors import ValidationError
from agentmsg.message import Msg
from agentmsg.providers._qwen import QWEN_TOKENS
from agentmsg.providers._request import cache as C
from agentmsg.providers._request import context as F
from agentmsg.providers._request import structured as S
from agentmsg.providers._request.chat import ChatWalk, copy_hints
from agentmsg.providers._request.common import WEB_URL, media_kind
from agentmsg.providers._request.context import Context, FormatOptions, FormattedRequest
from agentmsg.providers._request.fields import field_table, mapped, reported
from agentmsg.providers._request.run import Draft, run_format, usable_choice
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._request.tools import ToolChoice, ToolDef, openai_tool_choice, openai_tools
from agentmsg.providers._response.builder import StreamBuilder
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ, THINK_TAGS, ReplyField
from agentmsg.providers._response.payload import as_object, base64_source, safe_int, usage_dict
from agentmsg.providers._response.reader import PayloadReader
from agentmsg.providers.base import CacheMarkers, CountEndpoint, Entry, Spec, StreamFlag

__all__ = [
    "DEFAULT_MODEL",
    "MULTIMODAL_PATH",
    "PROVIDERS",
    "SPEC",
    "TEXT_PATH",
    "Reader",
    "StreamParser",
    "format_request",
    "is_multimodal_model",
    "parse_response",
    "parse_stream",
    "response_events",
]


# ---- spec --------------------------------------------------------------------------------------------------

_PIXELS: Final = mapped(note="sent as the part's min_pixels / max_pixels / fps / total_pixels (Qwen-VL)")
#: What the formatter does with each field (providers/_request/fields.py)
FIELDS: Final = field_table(
    {
        "message.name": mapped(
            "name-sanitized", "name-dropped", note="the message's name field, sanitized; a tool message's is the tool's"
        ),
        "tool_use.content": mapped(
            "tool-arguments-invalid",
            "field-dropped",
            note="the call's arguments, byte for byte when it is the JSON of input",
        ),
        "thinking.thinking": mapped(
            "thinking-dropped", "thinking-demoted", note="the assistant message's reasoning_content (its own reasoning)"
        ),
        "thinking.metadata.signature": reported("signature-dropped", note="no field for a signature"),
        "thinking.metadata.redacted": reported("thinking-dropped", note="redacted reasoning cannot be sent"),
        "thinking.metadata.redactedData": reported("thinking-dropped", note="redacted reasoning cannot be sent"),
        "tool_use.metadata.thoughtSignature": reported("signature-dropped", note="no field for a signature"),
        "tool_result.state": reported("tool-result-state-dropped", note="a tool message has no error field"),
        "image.minPixels": _PIXELS,
        "image.maxPixels": _PIXELS,
        **{f"video.{k}": _PIXELS for k in ("fps", "minPixels", "maxPixels", "totalPixels")},
        "data.name": mapped("field-dropped", note="in a placeholder's text; else not sent (field-dropped)"),
        "message.metadata._cache_control": mapped(
            "cache-breakpoint-dropped",
            "cache-ttl-dropped",
            note="cache_control {type: ephemeral} on the message's last content part (content as a list); at most 4,"
            " the system prompt's first, then the latest; one lifetime (5 minutes)",
        ),
    }
)


def media_placeholder(block: Any, in_result: bool = False, options: Any = None) -> str | None:
    """Why DashScope's native request sends a medium (of a user message, or of a tool result, sent in the user
    message after the results) as a text placeholder naming it (None: it is sent as a part): it takes images, audio
    and video, no other file, alike in a tool result (``in_result`` and ``options`` change nothing: the arguments
    of the token profile's rule, ``TokenProfile.media_placeholder``, which the count reads)."""
    kind, mime = media_kind(block)
    return f"{mime or 'unknown'} data" if kind == "file" else None


SPEC: Final = Spec(
    name="dashscope",
    title="DashScope",
    base_url="https://dashscope.aliyuncs.com/api/v1",
    env=("DASHSCOPE_API_KEY",),
    auth="bearer",
    default_model="qwen-plus",
    families=("dashscope",),
    stream_flags=(
        StreamFlag(
            flag="--cumulative",
            option="incremental",
            value=False,
            help="DashScope native: each chunk repeats the text so far (incremental_output=false)",
        ),
        StreamFlag(
            flag="--incremental", option="incremental", value=True, help="DashScope native: each chunk is new text"
        ),
    ),
    client_class="DashScopeClient",
    fields=FIELDS,
    tokens=attrs.evolve(QWEN_TOKENS, media_placeholder=media_placeholder),
    cache_markers=CacheMarkers(),  # (on messages; its system prompt's marker caches the tools before it)
    # POST {base}/tokenizer with {model, input: {messages}, parameters} (dashscope 2.0.2 tokenizers/tokenization.py,
    # FUNCTION "tokenizer"); the count in usage.input_tokens. Only some older models (qwen-turbo, qwen-plus,
    # qwen-7b/14b/72b-chat; help.aliyun.com token-api); the reply's shape is the SDK's reading of it, not verified
    counting=CountEndpoint(
        path="/tokenizer",
        keep=("model", "input", "parameters"),
        reply=("usage", "input_tokens"),
        source="dashscope 2.0.2 tokenizers/tokenization.py; help.aliyun.com token-api",
    ),
)
DEFAULT_MODEL: Final = SPEC.default_model
TEXT_PATH: Final = "/services/aigc/text-generation/generation"
MULTIMODAL_PATH: Final = "/services/aigc/multimodal-generation/generation"
_NAME_OK = F.id_matcher(r"[A-Za-z0-9_-]{1,64}")
_PARAMS: Final[Mapping[str, str | None]] = {}
_HINTS: Final = {"image": ("min_pixels", "max_pixels"), "video": ("fps", "min_pixels", "max_pixels", "total_pixels")}


@functools.lru_cache(maxsize=256)  # (a pure function of the name: an agent names one model call after call)
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
    """Format a conversation as a DashScope native generation request.

    ``params`` go into ``parameters`` as they are (``temperature``, ``top_p``, ``top_k``,
    ``max_tokens``, ``stop``, ``seed``, ``enable_thinking``, ``thinking_budget`` (which also sets
    ``enable_thinking``), ``enable_search``, ...). ``structured_output`` (or a ``response_format`` parameter):
    ``parameters.response_format`` (``json_schema``: a few models take it, the others ``json_object``)."""
    name = model or SPEC.default_model

    def build(ctx: Context, msgs: Sequence[Msg], tool_defs: list[ToolDef], choice: ToolChoice | None) -> Draft:
        multimodal = is_multimodal_model(name) or _has_media(msgs)
        walk = _DashScopeWalk(ctx, multi_agent, agent_name, multimodal)
        out = walk.run(msgs)
        F.require_turns(out, ctx.provider)
        parameters: dict[str, Any] = {"result_format": "message"}
        if stream:
            parameters["incremental_output"] = True
        extra = dict(params)
        want = S.asked(ctx, extra)
        reading: dict[str, Any] = {}
        if want is not None:
            if want.output is not None and want.output.mode == "tool":
                tool_defs, choice, reading = S.as_tool(ctx, want, tool_defs, choice)
            else:
                response_format = S.chat_response_format(ctx, want, msgs)
                if response_format is not None:
                    extra["response_format"] = response_format
                reading = S.reading(want)
        if extra.get("thinking_budget") is not None:
            extra.setdefault("enable_thinking", True)
        F.apply_params(ctx, extra, _PARAMS, parameters)
        if tool_defs:
            parameters["tools"] = openai_tools(tool_defs, ctx, strict_field=False)
        choice = usable_choice(ctx, choice, tool_defs)
        if choice is not None:
            parameters["tool_choice"] = openai_tool_choice(choice, ctx, required=False)
        if ctx.cache_marks or any(t.cache is not None for t in tool_defs):
            C.place_chat(ctx, msgs, walk.cuts, tool_defs, typed=False)
        body = {"model": name, "input": {"messages": out}, "parameters": parameters}
        return Draft(
            body=body,
            path=MULTIMODAL_PATH if multimodal else TEXT_PATH,
            model=name,
            headers={"X-DashScope-SSE": "enable"} if stream else {},
            parser_options=reading,
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
        tool_name_ok=_NAME_OK,
        structured_output=structured_output,
        model=model,
        params=params,
    )


def _parser_options(request: FormattedRequest) -> dict[str, Any]:
    """The stream parser options a request asks for: incremental output or not (``incremental_output``; the API's
    default, when the request says nothing, is cumulative, but a server may differ: then told from the stream)."""
    params = request.body.get("parameters") if isinstance(request.body, dict) else None
    inc = params.get("incremental_output") if isinstance(params, dict) else None
    return {"incremental": inc if isinstance(inc, bool) else None}


def _has_media(msgs: Sequence[Msg]) -> bool:
    media = F.MEDIA
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
    places_marks = True
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

    def inline_image(self, b: Any) -> dict[str, Any] | None:
        src = b.source
        if b.min_pixels is not None or b.max_pixels is not None:
            return None
        if src.type == "base64":
            return {"image": f"data:{src.media_type.lower()};base64,{src.data}"}
        if src.url.startswith(WEB_URL):  # passed through as media_part would (MediaSession.resolve)
            return {"image": src.url}
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
        kind = media_kind(b)[0]
        m = ctx.media.resolve(b.source, pointer, inline=False, schemes=("http", "https", "oss"))
        part: dict[str, Any] = {kind: m.url or m.data_uri()}
        kept = _HINTS.get(b.type, ())
        copy_hints(b, part, kept)
        F.media_options(b, kept, ctx, pointer)
        F.name_not_sent(b, ctx, pointer)
        return part


# ---- payload values: what a reply's and a chunk's fields hold ----------------------------------------------
# A DashScope native generation response (text or multimodal) becomes the events its stream would give,
# reduced by the one Reducer.


_TOOL_FINISH = ("tool_calls", "function_call")
_MEDIA_KINDS = ("image", "audio", "video")  # content parts of a reply that become media blocks
#: What an output says beside its choices that the message has no place for: said (StreamBuilder.not_kept)
_NOT_KEPT = (
    ("tool_info", "the runs of tools the provider runs itself (code interpreter, ...)"),
    ("task_metric", "the counts of the task's results (images made: TOTAL, SUCCEEDED, FAILED)"),
    ("task_metrics", "the counts of the task's results (TOTAL, SUCCEEDED, FAILED: the async tasks' key)"),
    ("audio", "audio outputs (Qwen-TTS's, Omni's: a URL or base64 data, read as no audio block)"),
    ("doc_references", "an application's document references (the knowledge base passages it cited)"),
    ("workflow_message", "a workflow application's node messages (what each node of the flow said)"),
)
#: The output's keys beside its choices that are read (model_name: the model, as qwen-mt says it; thoughts: an
#: application's reasoning, see _thoughts) or said
_OUTPUT_KEYS = frozenset(key for key, _ in _NOT_KEPT) | {"model_name", "thoughts", "search_info", "session_id"}


def _thoughts(b: StreamBuilder, thoughts: Any) -> str:
    """The reasoning of an Application API reply (``output.thoughts`` of an app with ``has_thoughts``: the entries
    of ``action_type`` ``reasoning``, a deepseek-r1 app's), its text joined; its other entries (knowledge retrieval,
    plugin and tool runs, with their observations) are said as not kept."""
    texts: list[str] = []
    other = False
    if not isinstance(thoughts, list):
        b.problem("type", f"output.thoughts is not a list (a JSON {json_type(thoughts)}): left out")
        return ""
    for t in thoughts:
        if not isinstance(t, dict):
            b.problem("type", f"an entry of output.thoughts is not an object (a JSON {json_type(t)}): left out")
            continue
        if t.get("action_type") == "reasoning" or t.get("action") == "reasoning":
            # the text is in ``thought`` (``response`` repeats it): one that is no text is said, the other read
            text = b.string(t.get("thought"), "an application's reasoning thought (output.thoughts[].thought)")
            if not text:
                text = b.string(t.get("response"), "an application's reasoning thought (output.thoughts[].response)")
            if text:
                texts.append(text)
        else:
            other = True
    if other:
        b.not_kept(
            "thoughts",
            "an application's thoughts other than its reasoning (knowledge retrieval, plugin and tool runs, and their"
            " observations) are not kept (the message has no place for them)",
        )
    return "\n\n".join(texts)


def _usage(u: Any, b: StreamBuilder) -> dict[str, Any] | None:
    """The counts read (schemas/chat-usage.schema.json names each field): native ``input_tokens`` /
    ``output_tokens`` or compatible-mode ``prompt_tokens`` / ``completion_tokens``; cache reads from
    ``prompt_tokens_details.cached_tokens`` (some native models: the flat ``cached_tokens``), cache writes from
    ``prompt_tokens_details.cache_creation_input_tokens`` (explicit cache), reasoning from
    ``output_tokens_details.reasoning_tokens`` (native) or ``completion_tokens_details.reasoning_tokens``
    (compatible). One given that is no count is said (``safe_int``), the rest kept (a usage that is no object:
    said)."""
    if not isinstance(u, dict):
        if u is not None:
            b.no_usage("usage", u)
        return None
    if "input_tokens" in u:
        inp, in_field = u["input_tokens"], "usage.input_tokens"
    else:
        inp, in_field = u.get("prompt_tokens"), "usage.prompt_tokens"
    if "output_tokens" in u:
        out, out_field = u["output_tokens"], "usage.output_tokens"
    else:
        out, out_field = u.get("completion_tokens"), "usage.completion_tokens"
    if inp is None and out is None and isinstance(u.get("models"), list):  # an Application API reply: per model
        models = [m for m in u["models"] if isinstance(m, dict)]
        ins = [
            n for m in models if (n := safe_int(m.get("input_tokens"), b, "usage.models[].input_tokens")) is not None
        ]
        outs = [
            n for m in models if (n := safe_int(m.get("output_tokens"), b, "usage.models[].output_tokens")) is not None
        ]
        i, o = sum(ins) if ins else None, sum(outs) if outs else None
    else:
        i, o = safe_int(inp, b, in_field), safe_int(out, b, out_field)
    details = u.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    if "cached_tokens" in details:
        cached = safe_int(details["cached_tokens"], b, "usage.prompt_tokens_details.cached_tokens")
    else:
        cached = safe_int(u.get("cached_tokens"), b, "usage.cached_tokens")
    total = safe_int(u.get("total_tokens"), b, "usage.total_tokens")
    written = safe_int(
        details.get("cache_creation_input_tokens"), b, "usage.prompt_tokens_details.cache_creation_input_tokens"
    )
    reasoning = None
    for key in ("output_tokens_details", "completion_tokens_details"):
        out_details = u.get(key)
        if isinstance(out_details, dict) and "reasoning_tokens" in out_details:
            reasoning = safe_int(out_details["reasoning_tokens"], b, f"usage.{key}.reasoning_tokens")
            break
    return usage_dict(
        i, o, cached, total, cache_write=written, reasoning=reasoning, say=b, total_field="usage.total_tokens"
    )


def _text_of(content: Any) -> str:
    """``content``: a string (text generation) or a list of ``{"text": ...}`` parts (multimodal)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _content(b: StreamBuilder, i: int, content: Any) -> list[Any] | None:
    """A message's ``content`` that is no string: a list of parts, whose items that are no object or whose ``text``
    is no string are said (problem ``type``, once) and left out; any other JSON value is said and left out (None)."""
    if not isinstance(content, list):
        b.problem("type", f"choice {i}'s content is a JSON {json_type(content)}, neither text nor parts: left out")
        return None
    bad = next((p for p in content if not isinstance(p, dict) or not isinstance(p.get("text", ""), str)), None)
    if bad is None:
        return content
    text = bad.get("text") if isinstance(bad, dict) else None
    what = f"a part whose text is a JSON {json_type(text)}" if isinstance(bad, dict) else f"a JSON {json_type(bad)}"
    b.problem("type", f"choice {i}'s content holds {what}, not a part of text or media: left out")
    return [p for p in content if isinstance(p, dict) and isinstance(p.get("text", ""), str)]


def _choices(output: Mapping[str, Any], b: StreamBuilder) -> list[tuple[int, Mapping[str, Any], Any]]:
    """(index, message, finish_reason) per choice; the legacy ``result_format=text`` output too. A choice's log
    probabilities (``logprobs: true``) are said as not kept."""
    out: list[tuple[int, Mapping[str, Any], Any]] = []
    choices = output.get("choices")
    if choices is not None and not isinstance(choices, list):
        b.array(choices, "output.choices")  # (said: left out)
    if isinstance(choices, list):
        if len(choices) != 1 or not isinstance(choices[0], dict):  # (the usual chunk: one choice, an object)
            b.objects(choices, "output.choices")  # (an item that is no object said; each choice keeps its position)
        for position, ch in enumerate(choices):
            if isinstance(ch, dict):
                i = ch.get("index", position)
                if type(i) is not int or not INT_MIN <= i <= INT_MAX:  # (beyond 64 bits: as a stream's float)
                    i = b.index(i, position, "a choice's index")
                if ch.get("logprobs"):
                    b.not_kept(
                        f"logprobs/{i}",
                        "log probabilities (logprobs) are not kept (the message has no place for them)",
                        i,
                    )
                m = ch.get("message") or ch.get("delta") or {}
                if not isinstance(m, dict):
                    m = b.mapping(m, f"choice {i}'s message")
                out.append((i, m, ch.get("finish_reason")))
        if output.get("text") or output.get("finish_reason") not in (None, "null"):  # (null beside choices: the usual)
            b.not_kept(
                "output.text",
                "output.text and output.finish_reason beside output.choices are not kept (the choices are the reply):"
                f" {b.shown({k: output.get(k) for k in ('text', 'finish_reason')}, 500)}",
            )
    elif "text" in output:
        out.append((0, {"content": output.get("text")}, output.get("finish_reason")))
    return out


def _part_extras(b: StreamBuilder, i: int, parts: list[Any]) -> None:
    """What a text part carries beside its text (Qwen-VL OCR's ``ocr_result``: the words and their places):
    said as not kept, once per key (the text is kept)."""
    for part in parts:
        if isinstance(part, dict) and len(part) > 1 and "text" in part:
            for key in part:
                if key != "text":
                    name = str(key)[:40]
                    b.not_kept(
                        f"part/{name}/{i}",
                        f"{name!r} beside a content part's text is not kept (the message has no place for it)",
                        i,
                    )


def _is_error(obj: Mapping[str, Any]) -> bool:
    """An error response: a code and a message, and no output (absent, null or empty: the SDK prints
    ``"output": null``)."""
    return not obj.get("output") and isinstance(obj.get("code"), str) and bool(obj.get("code")) and "message" in obj


#: What a routed chunk holds (Reader._route; its message: _PLAIN_MESSAGE)
_ROUTED_KEYS = frozenset(("output", "usage", "request_id"))
_ROUTED_CHOICE_KEYS = frozenset(("message", "finish_reason", "index"))

#: The keys of a choice's message that hold only its reasoning and text (see Reader._read)
_PLAIN_MESSAGE = frozenset(("content", "reasoning_content", "role"))


def _status_not_kept(b: StreamBuilder, obj: Mapping[str, Any]) -> None:
    """A reply's ``code`` and ``message`` beside its output (the SDK prints them empty on success; a failure's,
    with no output, is the error): a non-empty one is the provider's word on a reply that came, said with its
    value, not dropped."""
    shown = ", ".join(f"{key}: {b.shown(obj[key])}" for key in ("code", "message") if obj.get(key))
    b.not_kept(
        "code|message",
        f"what DashScope says beside the reply's output ({shown}) is not kept (the message has no place for it)",
    )


def _finish(b: StreamBuilder, i: int, reason: Any) -> None:
    if reason and type(reason) is not str:
        reason = b.string(reason, "finish_reason")  # (said, left out: as an absent one)
    if isinstance(reason, str) and reason and reason != "null":
        b.finish(i, reason, tool_calls=reason in _TOOL_FINISH, normal=reason == "stop")


# ---- reply fields: what each becomes (providers/_response/fields.py) ---------------------------------------

#: What the reader does with each field of a reply (a stream's chunks carry the same)
REPLY_FIELDS: Final = (
    ReplyField("request_id|requestId", MAPPED, "the message id"),
    ReplyField("output.model_name", MAPPED, "metadata `agentmsg_model` (qwen-mt)"),
    ReplyField(
        "output.choices[].message.content", KEPT, "a text block, or image/audio/video blocks (multimodal parts)"
    ),
    ReplyField("output.choices[].message.content (think_tags)", MAPPED, f"{THINK_TAGS}; `output.text` too"),
    ReplyField("output.choices[].message.content[] .ocr_result, ...", NOT_KEPT, "what a part carries beside its text"),
    ReplyField("output.choices[].message.reasoning_content", MAPPED, "a thinking block"),
    ReplyField("output.choices[].message.tool_calls[]", MAPPED, "tool_use blocks"),
    ReplyField("output.choices[].message.role", NOT_READ, "always the assistant"),
    ReplyField("output.choices[].finish_reason", MAPPED, "metadata `agentmsg_finish_reason`; the generate reason"),
    ReplyField("output.choices[].logprobs", NOT_KEPT),
    ReplyField("output.text|output.finish_reason", MAPPED, "`result_format: text`: a text block, the finish reason"),
    ReplyField("output.text|output.finish_reason (beside output.choices)", NOT_KEPT, "the choices are the reply"),
    ReplyField("output.thoughts", MAPPED, "an application's reasoning: a thinking block; its other entries not kept"),
    ReplyField(
        "output.search_info", MAPPED, "metadata `agentmsg_grounding` (`search_info`: web search sources, as given)"
    ),
    ReplyField(
        "output.tool_info|task_metric|task_metrics|audio|doc_references|workflow_message|session_id",
        NOT_KEPT,
        "the provider's own tool runs, task counts, audio outputs, references, an application's workflow node"
        " messages and session id (its value in the note)",
    ),
    ReplyField("usage.input_tokens|usage.prompt_tokens", MAPPED, "usage `inputTokens`"),
    ReplyField("usage.output_tokens|usage.completion_tokens", MAPPED, "usage `outputTokens`"),
    ReplyField(
        "usage.total_tokens",
        MAPPED,
        "usage `totalTokens` when a count is missing; else `totalTokens` is input + output (as Java derives it),"
        " and a total that is not that sum is said (not kept)",
    ),
    ReplyField(
        "usage.prompt_tokens_details.cached_tokens|usage.cached_tokens",
        MAPPED,
        "usage `cachedTokens` (flat: some models)",
    ),
    ReplyField("usage.prompt_tokens_details.cache_creation_input_tokens", MAPPED, "usage `cacheCreationInputTokens`"),
    ReplyField("usage.output_tokens_details.reasoning_tokens", MAPPED, "usage `reasoningTokens`"),
    ReplyField("usage.models[]", MAPPED, "an application's usage per model: summed"),
    ReplyField(
        "usage.input_tokens_details, usage.output_tokens_details.*, usage.image_tokens, usage.plugins",
        NOT_READ,
        "the other token details: the usage has no field for them",
    ),
    ReplyField("code|message", MAPPED, "an error reply: an error event (metadata `agentmsg_errors`); INTERRUPTED"),
    ReplyField(
        "code|message (beside an output)",
        NOT_KEPT,
        "a reply's code and message beside its output (empty on success): said with their value",
    ),
)

# ---- reader: whole replies and stream payloads -------------------------------------------------------------


class Reader(PayloadReader):
    """Native payloads -> AgentEvents: a whole text- or multimodal-generation response (``result_format``
    ``message`` or ``text``: reasoning_content, content (string or parts), tool calls, usage, finish; choice
    i > 0 under ``source: choice/i``), and each chunk of the native SSE stream (``id:`` / ``event:result`` /
    ``:HTTP_STATUS/200`` / ``data:{...}``; also the JSON-lines form the SDK prints, ``requestId``): cumulative
    usage (the last wins), ``finish_reason: "null"`` while streaming, tool-call continuations with ``id: ""``
    and no index, an error payload (``code`` + ``message``) ending the reply interrupted (payloads after it
    skipped and said).

    ``incremental``: True when each chunk carries only the new text (``incremental_output=true``), False when it
    carries everything so far (the default of ``incremental_output=false``), None to tell from the stream (see
    :meth:`_delta`)."""

    options = ("incremental",)

    def __init__(self, builder: StreamBuilder, spec: Spec, *, incremental: bool | None = None) -> None:
        super().__init__(builder, spec)
        self.incremental = incremental
        self.seen: dict[tuple[int, str], str] = {}  # cumulative mode / detection: the text so far per field
        self.last_key: dict[int, Any] = {}
        self.media_seen: dict[int, list[Any]] = {}  # per choice: the media parts of the last chunk
        # While the mode is not known: a value that may be either (field, the value before, it, its emitter).
        self.held: tuple[tuple[int, str], str, str, Callable[[str], None]] | None = None
        self.emitters: dict[tuple[int, str], Callable[[str], None]] = {}
        self.last_call: dict[int, str] = {}  # per choice: the call the last fragment went to (its field name)
        self.restarts: set[tuple[int, str]] = set()  # (choice, field)s a cumulative value restarted, said once
        self.called: set[int] = set()  # choices a tool call came in (a cumulative text may restart after one)

    def _new_text(self, i: int, field: str, value: str, method: Callable[..., None]) -> None:
        """The new text of ``field`` to the builder's ``method`` (text or thinking) for choice ``i``: straight
        on once the output is known to be incremental (the common chunk), else through :meth:`_delta` with
        ``method`` bound to the choice (made once per choice)."""
        if self.incremental is True:
            method(value, choice=i)
            return
        key = (i, method.__name__)
        emit = self.emitters.get(key)
        if emit is None:
            emit = self.emitters[key] = partial(method, choice=i)
        self._delta(i, field, value, emit)

    def _delta(self, i: int, field: str, value: str, emit: Callable[[str], None]) -> None:
        """Emit (``emit``) the new text of a field's ``value``: all of it in incremental mode, what it adds to
        the field's last value in cumulative mode.

        While the mode is not known: a field's first value is new text either way; a second value that does
        not start with the first means incremental. One that does may be either (incremental ``"**"`` then
        ``"**Plan"``, or ``"ha"`` then ``"ha"``): it is held until the next value tells (it starts with its
        field's last value again: cumulative; it does not: incremental) or the reply ends (cumulative, the
        API's default). After a tool call of the choice, a value that does not start with the held one is a
        cumulative text that starts afresh (the model's text after its calls: the chunk that held it repeated the
        text before them, with the calls), not incremental output: the mode is cumulative and the value is new
        text, said (problem ``cumulative``) as every restart of a cumulative text is."""
        if not value:
            return
        key = (i, field)
        if self.incremental is None:
            prev = self.seen.get(key)
            if prev is None:  # a field's first value is new text either way: it tells nothing
                self.seen[key] = value
                emit(value)
                return
            if self.held is not None:
                (at, held_field), *_ = self.held
                restart = at == i and i in self.called and not held_field.startswith("arguments")
                self._settle(value.startswith(prev) or restart)
            elif value.startswith(prev):
                self.held = (key, prev, value, emit)
                self.seen[key] = value
                return
            else:
                self.incremental = True
                self.seen.clear()
        if self.incremental:
            emit(value)
            return
        prev = self.seen.get(key, "")
        self.seen[key] = value
        if value.startswith(prev):
            if len(value) > len(prev):
                emit(value[len(prev) :])
            return
        if key not in self.restarts:  # said once per field (a reply that restarts does so on many chunks)
            self.restarts.add(key)
            self.b.problem(
                "cumulative",
                f"a cumulative {field} does not extend the text so far: taken as new text (and any later one like it)",
            )
        emit(value)

    def _moves_on(self, i: int, carried: tuple[bool, bool, bool]) -> None:
        """While a value is held: choice ``i``'s chunk brings text (reasoning, answer, tool calls: ``carried``)
        but none of the held field's kind. The output is then incremental, since a cumulative chunk repeats
        all the text so far; decided before the new text ends the held field's block (the held text would
        otherwise come after it, in a block of its own)."""
        assert self.held is not None
        (at, field), *_ = self.held
        kind = 0 if field == "reasoning" else 1 if field == "content" else 2
        if at == i and any(carried) and not carried[kind]:
            self._settle(cumulative=False)

    def _settle(self, cumulative: bool = True) -> None:
        """Decide the mode of a held value and emit it (see :meth:`_delta`)."""
        if self.held is None:
            return
        _key, prev, value, emit = self.held
        self.held = None
        self.incremental = not cumulative
        if cumulative:
            emit(value[len(prev) :])
        else:
            self.seen.clear()
            emit(value)

    def settle(self) -> None:
        """No more text comes: a value still held to tell the mode is taken as cumulative output."""
        self._settle()

    def whole(self, obj: dict[str, Any]) -> bool:
        # a stream's chunk says "null" (a string) where its reply goes on: no whole response
        output = obj.get("output")
        if not isinstance(output, dict):
            return True
        if output.get("finish_reason") == "null":
            return False
        choices = output.get("choices")
        return not (
            isinstance(choices, list) and any(type(c) is dict and c.get("finish_reason") == "null" for c in choices)
        )

    def end(self) -> None:
        self.settle()
        self.say_foreign(
            "no DashScope shape (no output, usage or error; choices without an output: a compatible-mode chunk, which"
            " dashscope-compatible reads)"
        )

    def reply(self, obj: Any) -> None:
        if not isinstance(obj.get("output"), dict) and not _is_error(obj):  # (a list: an OpenAI Responses reply)
            raise ValidationError.single(
                "", "shape", "a DashScope response has an output object (or a code and a message)"
            )
        output = as_object(obj.get("output"))
        status = output.get("task_status")
        failed = False
        if status is not None and "choices" not in output and "text" not in output:
            # An async task's status (GET /tasks/<task_id>): a FAILED one's code and message are the provider's
            # error; any other (PENDING, RUNNING; SUCCEEDED with its results, an image task's URLs; UNKNOWN,
            # CANCELED) is no chat reply (it read as an empty message, exit 0, a FAILED task's error lost)
            failed = status == "FAILED" and isinstance(output.get("code"), str) and bool(output["code"])
            if not failed:
                why = "is not a reply: the reply is the task's result (GET /tasks/<task_id>)"
                if status not in ("PENDING", "RUNNING"):
                    why = "is no chat reply (an image, audio or file task's results are not read)"
                raise ValidationError.single(
                    "/output/task_status",
                    "shape",
                    f"an async task's submission or status (task_status {str(status)[:40]}, task_id"
                    f" {str(output.get('task_id'))[:80]!r}) {why}",
                )
        b = self.b
        if failed:
            b.identify(obj.get("request_id"), None)
            message = output.get("message")  # (none: said as such, not as the word "None")
            text = "the task failed without a message" if message is None or message == "" else str(message)
            b.error(text, kind=output["code"], task_id=output.get("task_id"))
            b.close()
            return
        self.incremental = True  # (a whole reply holds each text once)
        self._read(obj, whole=True)
        b.close(ended=True)  # the whole response: a choice without a finish reason is whole (no reason invented)

    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        if event == "error" and not _is_error(obj):
            self.settle()  # a value held to tell the mode is text received before the error
            if not obj.get("message") and isinstance(obj.get("error"), dict):
                obj = obj["error"]  # OpenAI's shape ({"error": {"message", ...}}: an `error:` line's, GPUStack's)
            self.b.error(str(obj.get("message") or obj), kind=str(obj.get("code") or "provider_error"))
        elif not obj.get("output") and _is_error(obj):
            self.settle()
            self._read(obj, whole=False)  # the error
        elif "output" in obj or ("usage" in obj and "choices" not in obj):
            # (a chunk of choices and usage, no output, is an OpenAI chat chunk: the compatible mode's, foreign here;
            # read for its usage, its choices went unsaid)
            self._read(obj, whole=False)
            if type(self) is Reader:  # (a subclass may read payloads its own way: chunk() would not see them)
                self._route(event, obj)
            return
        else:
            self.foreign += 1  # (another provider's payload, a wrapper around one): said when the body ends
            return
        self.end_at_error()  # the provider's error ends the reply (the SDK's stream ends there)

    def _route(self, event: str, obj: dict[str, Any]) -> None:
        """An incremental text or reasoning chunk read as ``b.text(text)`` or ``b.thinking(reasoning)`` and its usage
        kept for later, and nothing else: the next ones of the same bytes around their text and their usage counts
        (the same request id, input count...) are read so in C (:meth:`PayloadReader.route_value`), with no orjson
        and no :meth:`chunk` call; the usage of the last is read from its bytes when the reply ends."""
        b = self.b
        if self.incremental is not True or self.held is not None or b.response_id is None:
            return
        if not _ROUTED_KEYS.issuperset(obj) or b.closed:
            return
        output = obj.get("output")
        choices = output.get("choices") if type(output) is dict and len(output) == 1 else None
        if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
            return
        ch = choices[0]
        m = ch.get("message")
        if (
            not _ROUTED_CHOICE_KEYS.issuperset(ch)
            or ch.get("index", 0) != 0
            or ch.get("finish_reason") not in (None, "null")
            or type(m) is not dict
            or not _PLAIN_MESSAGE.issuperset(m)
        ):
            return
        text, reasoning = m.get("content"), m.get("reasoning_content", "")
        if type(text) is str and text and reasoning == "":  # (an empty reasoning says nothing)
            kind, key, slot = "text", b'"content":', "text"
        elif type(reasoning) is str and reasoning and text in ("", None):
            kind, key, slot, text = "thinking", b'"reasoning_content":', "thinking", reasoning
        else:
            return
        usage = self.usage_holes(obj.get("usage"), "usage", "input_tokens", _usage)
        if usage is not None:  # (else it was converted now: not this route)
            self.route_value(key, text, slot, event, *usage, kind=kind)

    def _read(self, obj: Mapping[str, Any], whole: bool) -> None:
        b = self.b
        output = obj.get("output")
        if not output and _is_error(obj):
            b.error(str(obj.get("message")), kind=str(obj.get("code")), request_id=obj.get("request_id"))
            return
        if b.response_id is None or (b.model is None and "model" in obj):  # (the native API names no model)
            b.identify(obj.get("request_id") or obj.get("requestId"), obj.get("model"))
        if obj.get("message") or obj.get("code"):
            _status_not_kept(b, obj)
        u = obj.get("usage")
        if u is not None:
            b.usage_later(_usage, u, "input_tokens")  # with every chunk: converted once, the last
        if not isinstance(output, dict):
            return
        if (len(output) > 1 or "choices" not in output) and not _OUTPUT_KEYS.isdisjoint(output):
            # (output is mostly {"choices": [...]})
            if b.model is None:
                b.identify(None, output.get("model_name"))  # (qwen-mt names the model there; nothing else does)
            for key, what in _NOT_KEPT:
                if output.get(key):
                    b.not_kept(key, f"{what} ({key}) are not kept (the message has no place for them)")
            session = output.get("session_id")
            if session:  # (the application's multi-turn session: the next call's session_id continues it)
                b.not_kept(
                    "session_id",
                    f"an application's session id ({str(session)[:100]!r}: the next call's session_id continues the"
                    " session) is not kept (the message has no place for it)",
                )
            if "search_info" in output:
                # the web search's sources (enable_search with enable_source): the message's (agentmsg_grounding), as
                # DashScope gave them (a stream's first chunk carries them, the others empty lists)
                b.grounding({"search_info": output["search_info"]})
            app_reasoning = _thoughts(b, output["thoughts"]) if output.get("thoughts") is not None else ""
        else:
            app_reasoning = ""
        choices = _choices(output, b)
        if app_reasoning and not choices:  # an application's reasoning in an output of no text (nor choices)
            choices = [(0, {}, output.get("finish_reason"))]
        for i, m, reason in choices:
            b.choice(i)
            content = m.get("content")
            reasoning = m.get("reasoning_content")
            if (
                self.incremental is True
                and self.held is None
                and not app_reasoning
                and _PLAIN_MESSAGE.issuperset(m)
                and (reasoning is None or type(reasoning) is str)
                and (content is None or type(content) is str or content == [])
            ):
                # The common chunk, incremental reasoning or text (or both) and nothing else: what the rest of the
                # loop does with it, in fewer calls (an empty content, "" or [], carries nothing)
                if reasoning:
                    b.thinking(reasoning, choice=i)
                if content:
                    b.text(content, choice=i, ends="thinking")
                if reason is not None and reason != "null":
                    _finish(b, i, reason)
                continue
            reasoning = b.string(reasoning, "reasoning_content")
            if content is not None and type(content) is not str:
                content = _content(b, i, content)
            if app_reasoning and i == 0:
                if not reasoning:
                    reasoning = app_reasoning  # an application's reasoning (output.thoughts), as the model's
                elif app_reasoning != reasoning:  # (the same text twice is kept once)
                    b.not_kept(
                        "thoughts/reasoning",
                        "an application's reasoning (output.thoughts) that differs from the reasoning_content beside"
                        " it is not kept (the reasoning_content is the reply's reasoning)",
                    )
            calls = m.get("tool_calls")
            if self.held is not None:
                carried = (bool(reasoning and type(reasoning) is str), bool(_text_of(content)), bool(calls))
                self._moves_on(i, carried)
            if reasoning and type(reasoning) is str:
                self._new_text(i, "reasoning", reasoning, b.thinking)
            if self.incremental is True and isinstance(content, list):
                _part_extras(b, i, content)
                self._parts(i, content)  # each part in its place
            else:
                text = _text_of(content)
                if text:
                    b.end_block("thinking", i)
                    self._new_text(i, "content", text, b.text)
                if isinstance(content, list):  # (part lists only: no cost for the text of a string content)
                    _part_extras(b, i, content)
                    self._media(i, content)
            if calls is not None:  # (another JSON value is said: a list's calls were read, one's were emptied)
                self._tool_calls(i, b.array(calls, f"choice {i}'s tool_calls"), whole)
            if self.held is not None and self.held[0][0] == i and reason and reason != "null":
                # the choice's text held to tell the mode was received before its finish reason: emitted before it
                # (as cumulative, the API's default, as end() would), not after it (a fragment after is said: late)
                self._settle()
            _finish(b, i, reason)

    def _parts(self, i: int, parts: list[Any]) -> None:
        """Multimodal content parts in order: text, and media (an image the model made) as media blocks."""
        for part in parts:
            if not isinstance(part, dict):
                continue
            if "text" in part:
                if isinstance(part["text"], str) and part["text"]:
                    self.b.end_block("thinking", i)
                    self.b.text(part["text"], choice=i)
            else:
                self._media_part(i, part)

    def _media(self, i: int, parts: list[Any]) -> None:
        """The media parts of a chunk whose text was read as a whole (cumulative output or not known yet):
        after its text; parts a cumulative chunk repeats from the one before are not taken again."""
        media = [p for p in parts if isinstance(p, dict) and "text" not in p]
        seen = self.media_seen.get(i)
        self.media_seen[i] = media
        if seen and media[: len(seen)] == seen:
            media = media[len(seen) :]
        if media:
            self._settle()  # the text held before them is emitted first (with the API's default mode)
        for part in media:
            self._media_part(i, part)

    def _media_part(self, i: int, part: Mapping[str, Any]) -> None:
        kinds = [k for k in _MEDIA_KINDS if isinstance(part.get(k), str) and part[k]]
        if len(kinds) != 1:
            names = ", ".join(sorted(part))
            self.b.problem("enum", f"content part kind {names!r} is not supported: skipped")
            return
        kind, value = kinds[0], part[kinds[0]]
        head, comma, data = value.partition(",")
        is_inline = comma and head.startswith("data:") and head.endswith(";base64")
        inline = base64_source(head[5:-7], data) if is_inline else None
        self.b.media({"type": kind, "source": inline or {"type": "url", "url": value}}, choice=i)

    def _arguments(self, i: int, key: Any, call_id: str | None, text: str) -> None:
        self.b.tool_call(key, choice=i, call_id=call_id, arguments=text)

    def _tool_calls(self, i: int, calls: list[Any], whole: bool) -> None:
        b = self.b
        for position, tc in enumerate(calls):  # (each call keyed by its place among all: none left out renumbers)
            if not isinstance(tc, dict):
                b.problem(
                    "type", f"an item of choice {i}'s tool_calls is not an object (a JSON {json_type(tc)}): left out"
                )
                continue
            call_id = tc.get("id") if isinstance(tc.get("id"), str) else ""
            index = b.call_index(tc.get("index"))  # (beyond 64 bits, a boolean: none, said)
            at = index if index is not None else call_id or position
            if b.call_left_out(tc, _CALL_TYPES, "function" in tc, f"call/{i}/{at}", i):
                continue
            fn = b.mapping(tc.get("function"), "a tool call's function")
            if index is not None:
                key: Any = ("index", index)
            elif whole or self.incremental is False:
                key = ("position", position)
            elif call_id:
                key = ("id", call_id)
            else:
                key = self.last_key.get(i, ("position", position))  # a continuation: id "" and no index
            self.last_key[i] = key
            self.called.add(i)
            args = fn.get("arguments")
            if isinstance(args, (dict, list)):
                args = b.json_text(args)
            name = fn.get("name")
            by_delta = isinstance(args, str) and self.incremental is not True and not whole
            b.tool_call(
                key,
                choice=i,
                call_id=call_id or None,
                name=name,  # (one that is no text is said by the builder, once per call)
                arguments=args if isinstance(args, str) and not by_delta else None,
            )
            if by_delta:  # cumulative (or not known yet): the arguments' new text, per call
                assert isinstance(args, str)
                # The call's own field: by its index or id; a continuation (id "" and no index) is the last
                # call's (keyed by its place in the chunk, parallel continuations would share one field).
                if index is not None:
                    field = f"arguments/index {index}"
                elif call_id:
                    field = f"arguments/id {call_id}"
                elif self.incremental is None and i in self.last_call:
                    field = self.last_call[i]
                else:
                    field = f"arguments/position {position}"
                self.last_call[i] = field
                self._delta(i, field, args, partial(self._arguments, i, key, call_id or None))
            if whole:
                b.end_tool_call(key, choice=i)


#: the types of tool call the reader reads ("" on some continuation fragments; another: StreamBuilder.call_left_out)
_CALL_TYPES: Final = ("function", "")


# ---- registry entries and the module's functions -----------------------------------------------------------

PROVIDER: Final = Entry(SPEC, format_request, Reader, __name__, request_options=_parser_options)
PROVIDERS: Final = (PROVIDER,)

response_events = PROVIDER.response_events
parse_response = PROVIDER.parse_response
parse_stream = PROVIDER.parse_stream
StreamParser = PROVIDER.stream_parser
