"""Google Gemini generateContent (REST JSON, camelCase): the spec, the request formatter, and the reader of
whole replies and SSE streams.

Layout (docs/formatters.md): SYSTEM messages -> ``systemInstruction``; ``user`` and ``model``
contents of parts, never an empty part or an empty ``parts``; function calls with their
``thoughtSignature`` replayed; thought parts in their place among the parts, as Gemini returned them; every
function response of a batch in the one ``user`` content after
the calls (``response: {"output": ...}`` or ``{"error": ...}``, media in ``functionResponse.parts``).
The model goes in the URL (``FormattedRequest.model`` / ``.path``), not in the body, quoted as one path segment
(``models/NAME``, ``tunedModels/NAME``): a ``/`` or ``..`` in a name stays in it (``%2F``), never a path of its own
that leads out of ``models/``. No other provider puts the model in a path (theirs is in the body).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

from agentmsg import Msg
from agentmsg._codec.jsontext import INT_MAX, INT_MIN, json_type
from agentmsg.blocks import HintBlock, ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.errors import ValidationError
from agentmsg.providers._request import cache as C
from agentmsg.providers._request import context as F
from agentmsg.providers._request import structured as S
from agentmsg.providers._request.common import WEB_URL, media_kind, mime_of
from agentmsg.providers._request.context import Context, FormatOptions, FormattedRequest
from agentmsg.providers._request.fields import field_table, mapped, reported
from agentmsg.providers._request.media import scheme_of
from agentmsg.providers._request.run import Draft, run_format, usable_choice
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._request.tools import ToolChoice, ToolDef, gemini_tool_config, gemini_tools
from agentmsg.providers._request.turns import TurnWalk
from agentmsg.providers._response.builder import StreamBuilder
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ, THINK_TAGS, ReplyField
from agentmsg.providers._response.partial_json import json_fragment_writer
from agentmsg.providers._response.payload import as_object, base64_source, safe_int, usage_dict
from agentmsg.providers._response.reader import PayloadReader
from agentmsg.providers.base import CountEndpoint, Entry, OwnTools, Spec, TokenProfile

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDERS",
    "SKIP_SIGNATURE",
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
            "thinking-dropped", "thinking-demoted", note="a thought part (thought: true), in its place"
        ),
        "thinking.metadata.signature": mapped(
            "signature-dropped", "signature-added", note="the part's thoughtSignature (base64), to Gemini only"
        ),
        "thinking.metadata.redacted": reported("thinking-dropped", note="Gemini has no redacted reasoning"),
        "thinking.metadata.redactedData": reported("thinking-dropped", note="Gemini has no redacted reasoning"),
        "thinking.metadata.providerBlock": mapped(
            "provider-tool-dropped",
            "field-dropped",
            note="a built-in tool's part (executableCode, codeExecutionResult, toolCall, toolResponse), back unchanged"
            " in its place with its thoughtSignature; another provider's said (a Responses message item's phase:"
            " field-dropped)",
        ),
        "tool_use.metadata.thoughtSignature": mapped(
            "signature-dropped", "signature-added", note="the functionCall part's thoughtSignature"
        ),
        "tool_result.state": mapped(note="error, denied and interrupted: response {error: ...}"),
        "video.fps": mapped(note="sent as the part's videoMetadata.fps"),
        "data.name": mapped("field-dropped", note="in a placeholder's text; else not sent (field-dropped)"),
        "message.metadata._cache_control": mapped(
            "cached-content-used",
            "cache-automatic",
            note="a marker with a name: cachedContent, the messages up to it, system instruction and tools not sent"
            " (the cache holds them); without one, Gemini caches implicitly (said once)",
        ),
    }
)


def signature_ok(value: str) -> bool:
    """Whether ``value`` is a Gemini thought signature: base64 as google-genai reads a part's bytes (a signature it
    refuses never reaches the API): the standard or the URL-safe alphabet (not both mixed), padding optional but no
    more than the last group lacks (``QQ``, ``QQ=``, ``QQ==``; not ``=``, ``QUJD=``, ``QUI==``), canonical trailing
    bits (those of the last character beyond the last whole byte are zero: what decoding and encoding again gives
    back unchanged, told without doing it). Gemini's formatter sends no other (``signature-dropped``); the token
    count reads it from the profile (``TokenProfile.valid_signature``)."""
    text = value.rstrip("=")
    rest = len(text) % 4
    if rest == 1 or not _B64_EITHER(text):
        return False
    padding = len(value) - len(text)
    if padding and (not rest or padding > 4 - rest):  # (google-genai refused a signature "=" sent as it was)
        return False
    # the last character of 2 (3) carries 4 (2) bits beyond the byte (two bytes) they make
    return not rest or _B64_VALUE[text[-1]] & (0b1111 if rest == 2 else 0b11) == 0


_B64_STANDARD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_EITHER = re.compile(r"[A-Za-z0-9+/]*|[A-Za-z0-9_-]*").fullmatch  # one alphabet or the other
_B64_VALUE: Final = {c: v for v, c in enumerate(_B64_STANDARD)} | {"-": 62, "_": 63}


def media_placeholder(block: Any, in_result: bool, options: FormatOptions) -> str | None:
    """Why a medium is sent as a text placeholder naming it, in a user turn and in a tool result alike (None: it is
    sent as a part): a web URL of no known MIME type (none declared, no extension that implies one), which Gemini
    cannot take by URL and the request may not download (``MediaPolicy.allow_download``). In a tool result the
    placeholder joins the result's output text (function response parts hold media only). The count reads it from
    the token profile (``TokenProfile.media_placeholder``)."""
    source = block.source
    if source.type != "url" or options.media.allow_download or mime_of(source) is not None:
        return None
    if scheme_of(source.url) not in ("http", "https"):
        return None
    return f"unknown MIME type of a URL {media_kind(block)[0]}"


#: the keys of a ``Tool`` that are Gemini's own tools (google-genai's ``types.Tool``), snake and camel case
_OWN_KEYS: Final = frozenset(
    {
        spelling
        for key in (
            "google_search",
            "google_search_retrieval",
            "code_execution",
            "url_context",
            "retrieval",
            "computer_use",
            "file_search",
            "google_maps",
            "enterprise_web_search",
            "parallel_ai_search",
            "exa_ai_search",
            "mcp_servers",
        )
        for spelling in (key, re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key))
    }
)


def _own_tool(tool: Mapping[str, Any]) -> str | None:
    """The name of one of Gemini's own tools (a ``Tool`` with one of its keys, no ``type`` and no ``name``: its first
    such key); None for any other definition."""
    if tool.get("type") is not None or "name" in tool or _OWN_KEYS.isdisjoint(tool.keys()):
        return None
    return next(str(k) for k in tool if k in _OWN_KEYS)


SPEC: Final = Spec(
    name="gemini",
    title="Gemini",
    base_url="https://generativelanguage.googleapis.com",
    env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),  # google-genai: GOOGLE_API_KEY wins when both are set
    auth="x-goog-api-key",
    default_model="gemini-2.5-flash",
    families=("gemini", "google"),
    user_first=True,
    own_tools=OwnTools(  # (a tool_choice cannot force one: gemini_tool_config)
        recognize=_own_tool, types='none by type (they are given by their key: {"google_search": {}})'
    ),
    client_class="GeminiClient",
    fields=FIELDS,
    # no offline tokenizer (google-genai's LocalTokenizer downloads its model): o200k, within 50%; 258 per image
    # tile, 263/s video, 32/s audio (ai.google.dev tokens page); Gemini 1.x and 2.0 count tool definitions at about a
    # third of their JSON (2.5 and later at about all of it; measured on tests/fixtures/context)
    tokens=TokenProfile(
        vocab="o200k_base",
        own=False,
        scale=1.0,
        text_error=0.5,
        per_message=1,
        priming=0,
        per_call=0,
        per_result=0,
        thinking="all",
        tools_base=0,
        per_tool=20,
        image="gemini",
        pdf_per_page=258,
        timed_documented=True,
        hint_parts=True,  # (a text part of the user turn after it)
        turns=True,
        own_reasoning="thought",
        valid_signature=signature_ok,  # (a thought of another signature is sent unsigned)
        result_join="all",  # (a result's texts and hints: one output string)
        media_placeholder=media_placeholder,  # (a URL of no known MIME type: its placeholder text)
        models=((("gemini-1.", "gemini-2.0"), {"tools_scale": 0.3, "per_tool": 5}),),
    ),
    # POST /v1beta/models/{model}:countTokens with the whole generateContent body (model named "models/...") under
    # generateContentRequest, so that the system instruction and the tools are counted too (google-genai's
    # Developer-API path sends only contents) -> {"totalTokens": N, ...}; a tuned model at its own resource,
    # /v1beta/tunedModels/{name}:countTokens, as generateContent's (google-genai's t_model keeps its tunedModels/)
    # [generativelanguage v1beta CountTokensRequest; google-genai 3.6.1 models.py _CountTokensResponse_from_mldev]
    counting=CountEndpoint(
        path="/v1beta/{model}:countTokens",
        wrap="generateContentRequest",
        collections=("models", "tunedModels"),
        reply=("totalTokens",),
        source="generativelanguage v1beta CountTokensRequest; google-genai 3.6.1 models.py",
    ),
)
DEFAULT_MODEL: Final = SPEC.default_model
#: Google's documented placeholder for function calls that have no thought signature
SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
_NAME_OK = F.id_matcher(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
_GENERATION: Final[Mapping[str, str | None]] = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "candidate_count": "candidateCount",
    "response_mime_type": "responseMimeType",
    "response_schema": "responseSchema",
    "response_json_schema": "responseJsonSchema",
    "parallel_tool_calls": None,
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
    """Format a conversation as a Gemini ``generateContent`` request (``streamGenerateContent?alt=sse``
    when ``stream``). ``params``: ``temperature``, ``top_p``, ``top_k``, ``max_tokens``, ``stop``,
    ``seed``, ... go into ``generationConfig``; ``thinking_budget`` into its ``thinkingConfig``;
    other names pass through to the body (e.g. ``safetySettings``). ``structured_output`` (or a ``response_format``
    parameter, mapped): ``generationConfig.responseMimeType`` ``application/json`` and ``responseJsonSchema``."""

    def build(ctx: Context, msgs: Sequence[Msg], tool_defs: list[ToolDef], choice: ToolChoice | None) -> Draft:
        walk = _GeminiWalk(ctx, multi_agent, agent_name, model or SPEC.default_model)
        extra = dict(params)
        cache = _cached_content(ctx, extra, tool_defs)
        contents = walk.run(msgs, cache[2] if cache is not None else 0)
        F.require_turns(contents, ctx.provider, system_beside=True)
        body: dict[str, Any] = {"contents": contents}
        system = walk.system_texts()
        if system:
            body["systemInstruction"] = {"parts": [{"text": t} for t in system]}
        want = S.asked(ctx, extra)
        reading: dict[str, Any] = {}
        if want is not None and want.output is not None and want.output.mode == "tool":
            tool_defs, choice, reading = S.as_tool(ctx, want, tool_defs, choice)
            want = None
        if tool_defs:
            body["tools"] = gemini_tools(tool_defs, ctx)
        choice = usable_choice(ctx, choice, tool_defs)
        if choice is not None:
            body["toolConfig"] = gemini_tool_config(choice, ctx, tool_defs)
        generation: dict[str, Any] = {}
        budget = extra.pop("thinking_budget", None)
        stop = extra.get("stop")
        if isinstance(stop, str):
            extra["stop"] = [stop]
        passthrough: dict[str, Any] = {}
        for key, value in extra.items():
            if value is None:
                continue
            if key in _GENERATION:
                F.apply_params(ctx, {key: value}, _GENERATION, generation)
            else:
                passthrough[key] = value
        if budget is not None:
            generation["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
        if want is not None:
            if S.gemini_generation(ctx, want, generation):
                reading = S.text_reading()
        elif generation.get("responseMimeType") == "application/json" and not reading:
            reading = S.text_reading()  # JSON asked for with Gemini's own parameters
        if generation:
            body["generationConfig"] = generation
        for key in passthrough:
            F.refuse_built(key, key, body)
        body.update(passthrough)
        if cache is not None:
            _use_cache(ctx, body, cache)
        name, resource = _model_path(model or SPEC.default_model)
        action = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return Draft(body=body, path=f"{resource}:{action}", model=name, parser_options=reading)

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


@functools.lru_cache(maxsize=256)
def _model_path(model: str) -> tuple[str, str]:
    """The model's name as the request gives it (``models/`` left out) and its resource's path, ``/v1beta/models/NAME``
    (a pure function of the name: kept for the names of recent calls, as an agent names one model call after call).
    A tuned model is a resource of its own (tunedModels/...), as google-genai names it; any other name is a model's.
    The name is quoted as one path segment: a character a URL gives a meaning to (?, #, %, a space) stays part of the
    name, and a '/' or '..' in it cannot leave the models/ path (the API key goes along)."""
    name = model[len("models/") :] if model.startswith("models/") else model
    kind, _, own = name.partition("/") if name.startswith("tunedModels/") else ("models", "", name)
    return name, f"/v1beta/{kind}/{quote(own, safe='')}"


def _cached_content(ctx: Context, extra: dict[str, Any], tools: list[ToolDef]) -> tuple[str, str, int] | None:
    """The explicit cache the request names: (its name, the pointer that gave it, the first message sent), from the
    ``cached_content`` parameter (``cachedContent`` too) or the last cache marker with a ``name`` (the messages up to
    and including its message are held by the cache: not sent); None when none does: markers are then said once
    (``cache-automatic``: Gemini caches implicitly)."""
    named_by_param = "cached_content" in extra or "cachedContent" in extra
    if not ctx.cache_marks and not named_by_param and all(t.cache is None for t in tools):
        return None  # (the usual call: no cache named, no marker to say)
    marks = ctx.cache_marks or {}
    named = [i for i, m in marks.items() if m.name is not None]
    start = max(named) + 1 if named else 0
    name: Any = None
    for key in ("cached_content", "cachedContent"):
        value = extra.pop(key, None)
        if value is not None and name is None:
            name, pointer = value, f"/params/{key}"
    if name is not None:
        if not isinstance(name, str) or not name:
            raise ValidationError.single(pointer, "type", "cached_content is a cache's name (cachedContents/...)")
    elif named:
        name, pointer = marks[max(named)].name, f"/{max(named)}/metadata/{C.MARKER}"
    if name is None or any(m.name is None for m in marks.values()) or any(t.cache is not None for t in tools):
        C.automatic(
            ctx,
            {i: m for i, m in marks.items() if m.name is None},
            tools,
            "Gemini caches prompt prefixes on its own (implicit caching; an explicit cache is named with a marker's"
            " name or the cached_content parameter)",
        )
    if name is None:
        return None
    return (name if name.startswith("cachedContents/") else f"cachedContents/{name}"), pointer, start


def _use_cache(ctx: Context, body: dict[str, Any], cache: tuple[str, str, int]) -> None:
    """Name the cache (``cachedContent``): a request naming one may not set a system instruction, tools or a tool
    config (the API refuses it: they belong in the cache), so they are not sent, nor the messages the cache holds."""
    name, pointer, start = cache
    left = [f"messages 0 to {start - 1}"] if start else []
    left += [what for key, what in _CACHE_HELD if body.pop(key, None) is not None]
    body["cachedContent"] = name
    held = f": {', '.join(left)} not sent (the cache holds them)" if left else ""
    ctx.report(pointer, "cached-content-used", f"the request names the cache {name}{held}")


#: what a request naming a cache does not send (Gemini refuses it beside cachedContent)
_CACHE_HELD: Final = (
    ("systemInstruction", "the system instruction"),
    ("tools", "the tools"),
    ("toolConfig", "the tool config"),
)


class _GeminiWalk(TurnWalk):
    assistant_role = "model"
    parts_key = "parts"
    typed_text = False
    minted_ids = False  # a call Gemini gave no id goes back without one (matched by name and order), as it came

    def __init__(self, ctx: Context, multi: bool, agent: str | None, model: str) -> None:
        super().__init__(ctx, multi, agent)
        option = ctx.options.missing_thought_signature
        self.skip_signature = option == "skip"
        # Gemini 3 refuses a function call of the current turn without a signature: the calls of a turn that
        # has none (another provider's) get the placeholder; Gemini's own parallel calls (a signature on the
        # first only) are sent as they came
        self.auto_skip = option == "auto" and "gemini-3" in model
        self._signed: dict[int, bool] = {}

    def text_part(self, text: str) -> Any:
        return {"text": text}

    def thinking_part(self, block: ThinkingBlock, i: int, j: int, prev: Any) -> Any:
        ctx = self.ctx
        meta = block.metadata or {}
        if meta.get("redacted") is True:
            ctx.report(f"/{i}/content/{j}", "thinking-dropped", "gemini has no redacted reasoning")
            return None
        part: dict[str, Any] = {"text": block.thinking, "thought": True}
        signature = meta.get("signature")
        if isinstance(signature, str) and signature and not signature_ok(signature):
            ctx.report(
                f"/{i}/content/{j}", "signature-dropped", "signature is not base64, so not a Gemini thought signature"
            )
            signature = None
        if isinstance(signature, str) and signature:
            if not block.thinking and meta.get(EMPTY_TEXT_PART) is True:
                # Gemini's signature on an empty text part of its own (a stream's last chunk): back as that part,
                # as it came (google-genai's chat history replays it so), not as a thought
                return False, {"text": "", "thoughtSignature": signature}
            if not block.thinking and _answer_part(prev):
                # Gemini's signature on an answer part (the parser keeps it as a signature-only thinking
                # block right after that part's content): back on the part, where Gemini returned it
                prev["thoughtSignature"] = signature
                return None
            part["thoughtSignature"] = signature
        elif not block.thinking:
            ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty unsigned reasoning not sent")
            return None
        # in its place: Gemini asks for a response's parts back as they came, in their order (its thought
        # signatures docs), and sets no rule that thoughts come first (it was moved to the turn's start)
        return False, part

    def provider_part(self, meta: dict[str, Any], i: int, j: int, prev: Any) -> Any:
        """Gemini's own parts, kept by the reader, back as Gemini gave them, in their place (with their
        ``thoughtSignature``): the code it ran and its result (``executableCode``, ``codeExecutionResult``) and a
        built-in tool's call and response (``toolCall``, ``toolResponse``, which the API asks to be echoed back).
        Gemini's parts carry no citations (a candidate's grounding is the message's: agentmsg_grounding)."""
        part = meta.get(F.PROVIDER_BLOCK)
        if isinstance(part, dict) and ", ".join(sorted(k for k in part if k != "thoughtSignature")) in _SERVER_PARTS:
            return dict(part)
        why = (
            "it is no part of a tool Gemini runs itself" if part is not None else "gemini takes no citations on a part"
        )
        F.carrier_dropped(self.ctx, meta, (i, j), why)
        return None

    def is_call(self, part: Any) -> bool:
        return "functionCall" in part

    def tool_use_part(self, block: ToolUseBlock, sent: str, tool: str, i: int, j: int) -> Any:
        args = block.input
        call: dict[str, Any] = {"id": sent, "name": tool, "args": args} if sent else {"name": tool, "args": args}
        meta = block.metadata
        signature = meta.get("thoughtSignature") if meta else None
        skip = self.skip_signature or (self.auto_skip and not self._turn_signed(i))
        if signature is None and not skip:  # a call with no signature to replay
            return {"functionCall": call}
        ctx = self.ctx
        part: dict[str, Any] = {"functionCall": call}
        pointer = f"/{i}/content/{j}"
        if isinstance(signature, str) and signature:
            origin = meta.get("provider")
            if not signature_ok(signature):
                ctx.report(pointer, "signature-dropped", "thoughtSignature is not base64, so not a Gemini signature")
                signature = None
            elif origin is None or origin in ctx.families:
                part["thoughtSignature"] = signature
            else:
                ctx.report(pointer, "signature-dropped", f"thought signature from {origin} not sent to gemini")
                signature = None
        if not signature and skip:
            ctx.report(pointer, "signature-added", "function call without a thought signature: placeholder added")
            part["thoughtSignature"] = SKIP_SIGNATURE
        return part

    def _turn_signed(self, i: int) -> bool:
        """Whether message ``i`` has a function call with a thought signature that is sent (Gemini's own)."""
        signed = self._signed.get(i)
        if signed is None:
            signed = self._signed[i] = any(
                type(b) is ToolUseBlock and self._own_signature(b.metadata or {}) for b in self.ctx.messages[i].content
            )
        return signed

    def _own_signature(self, meta: Mapping[str, Any]) -> bool:
        signature = meta.get("thoughtSignature")
        origin = meta.get("provider")
        return (
            isinstance(signature, str)
            and bool(signature)
            and signature_ok(signature)
            and (origin is None or origin in self.ctx.families)
        )

    def tool_result_part(
        self, block: ToolResultBlock, sent: str, tool: str | None, i: int, j: int, text: str | None
    ) -> Any:
        key = "error" if block.state in F.ERROR_STATES else "output"
        if tool is not None and text is not None:  # the usual result
            if sent:
                return {"functionResponse": {"id": sent, "name": tool, "response": {key: text}}}
            return {"functionResponse": {"name": tool, "response": {key: text}}}
        ctx = self.ctx
        output: list[Any] = block.output
        media: list[tuple[Any, str]] = []
        if text is None:
            text = F.text_of_blocks(output, ctx, f"/{i}/content/{j}/output", media) if output else ""
        if tool is None:  # an orphan: the result's own tool name
            own = block.name or "unknown"
            tool = ctx.tool_name_cache.get(own) or ctx.tool_name(own, f"/{i}/content/{j}/name")
        response: dict[str, Any] = (
            {"id": sent, "name": tool, "response": {key: text}} if sent else {"name": tool, "response": {key: text}}
        )
        if media:
            parts = []
            names: dict[int, str] = {}  # the media the text names (id: text): placeholders (parts hold media only)
            as_parts: list[Any] = []
            for m, p in media:
                part = self._media(m, p)
                if "text" in part:
                    names[id(m)] = part["text"]
                else:
                    parts.append(part)
                    as_parts.append(m)
            if as_parts and text and F.text_before(output, ids := {id(m) for m in as_parts}):
                # the parts follow the text, so a medium before a text reads as after it: the text names every part
                # in its place (in the parts' order), and each medium that a text or hint followed is said
                last = max(k for k, b in enumerate(output) if type(b) is TextBlock or type(b) is HintBlock)
                for k, b in enumerate(output):
                    if id(b) in ids:
                        names[id(b)] = F.block_label(b)
                        if k < last:
                            ctx.report(
                                f"/{i}/content/{j}/output/{k}",
                                "tool-result-media-reordered",
                                _AFTER_TEXT.format(b.type),
                            )
            response["response"][key] = F.name_media(output, text, names)
            if parts:
                response["parts"] = parts
        return {"functionResponse": response}

    def media_part(self, block: Any, pointer: str, assistant: bool) -> Any:
        return self._media(block, pointer)

    def inline_image(self, block: Any) -> dict[str, Any] | None:
        src = block.source
        if block.min_pixels is not None or block.max_pixels is not None:
            return None
        if src.type == "base64":
            return {"inlineData": {"mimeType": src.media_type.lower(), "data": src.data}}
        if src.mime_type and src.url.startswith(WEB_URL):  # passed through as _media would (MediaSession.resolve)
            return {"fileData": {"mimeType": src.mime_type.lower(), "fileUri": src.url}}
        return None

    def _media(self, block: Any, pointer: str) -> dict[str, Any]:
        ctx = self.ctx
        if type(block) is ImageBlock:
            usual = self.inline_image(block)
            if usual is not None:
                return usual
        why = media_placeholder(block, False, ctx.options)
        if why is not None:
            ctx.report(pointer, "media-unsupported", f"{why}; sent as a text placeholder")
            return {"text": F.block_label(block)}
        kind, mime = media_kind(block)
        inline = mime is None
        m = ctx.media.resolve(block.source, pointer, inline=inline, schemes=("http", "https", "gs"), kind=kind)
        part: dict[str, Any]
        if m.url is not None:
            part = {"fileData": {"mimeType": m.mime, "fileUri": m.url}}
        else:
            part = {"inlineData": {"mimeType": m.mime or "application/octet-stream", "data": m.data}}
        fps = getattr(block, "fps", None)
        if fps is not None:
            part["videoMetadata"] = {"fps": fps}
        F.media_options(block, ("fps",), ctx, pointer)
        F.name_not_sent(block, ctx, pointer)
        return part

    def repair_part(self, sent: str, tool: str) -> Any:
        response: dict[str, Any] = {"id": sent, "name": tool} if sent else {"name": tool}
        response["response"] = {"error": F.REPAIR_TEXT}
        return {"functionResponse": response}


#: a medium of a function response before a text of it (said ``tool-result-media-reordered``)
_AFTER_TEXT: Final = (
    "{} in functionResponse.parts, after the response's text that followed it (parts hold media only):"
    " the text names it in its place"
)


def _answer_part(part: Any) -> bool:
    """A text or media part of the answer (not a thought, call or response) without a signature yet."""
    return (
        part is not None
        and "thoughtSignature" not in part
        and not part.get("thought")
        and ("text" in part or "inlineData" in part or "fileData" in part)
    )


# ---- payload values: what a reply's and a chunk's fields hold ----------------------------------------------
# A Gemini generateContent response becomes the events its stream would give, reduced by the one Reducer.


def _usage(u: Any, b: StreamBuilder) -> dict[str, Any] | None:
    """outputTokens counts the reasoning too (candidates + thoughts), as the usage schema says; reasoningTokens is
    the thoughts (``thoughtsTokenCount``), cachedTokens the cached content (``cachedContentTokenCount``, a part of
    ``promptTokenCount``). Gemini reports no cache writes. A count given that is no count is said (``safe_int``),
    the rest kept (a usage that is no object: said)."""
    if not isinstance(u, dict):
        if u is not None:
            b.no_usage("usageMetadata", u)
        return None
    cand = safe_int(u.get("candidatesTokenCount"), b, "usageMetadata.candidatesTokenCount")
    thoughts = safe_int(u.get("thoughtsTokenCount"), b, "usageMetadata.thoughtsTokenCount")
    # inputTokens counts every input token: the prompt and the tool-use prompt (the results of tools Gemini
    # ran itself, which totalTokenCount counts too)
    prompt = safe_int(u.get("promptTokenCount"), b, "usageMetadata.promptTokenCount")
    tool_prompt = safe_int(u.get("toolUsePromptTokenCount"), b, "usageMetadata.toolUsePromptTokenCount")
    if cand is None and prompt and u.get("candidatesTokenCount") is None:
        # Gemini writes proto3 JSON, which leaves out a count of 0: a usage that counts the prompt and not the
        # candidates says that no candidate token came (a blocked prompt, a reply of thoughts or calls only).
        # (A usage without the prompt count, a chunk's partial one, tells nothing of the candidates; nor does one
        # whose candidates count is no count.)
        cand = 0
    out = None if cand is None and thoughts is None else (cand or 0) + (thoughts or 0)
    inp = prompt if tool_prompt is None or prompt is None else prompt + tool_prompt
    cached = safe_int(u.get("cachedContentTokenCount"), b, "usageMetadata.cachedContentTokenCount")
    total = safe_int(u.get("totalTokenCount"), b, "usageMetadata.totalTokenCount")
    return usage_dict(inp, out, cached, total, reasoning=thoughts, say=b, total_field="usageMetadata.totalTokenCount")


class _Calls:
    """Per candidate: the function call whose arguments are streaming (``willContinue``)."""

    __slots__ = ("count", "open", "writer")

    def __init__(self) -> None:
        self.count = 0
        self.open: str | None = None  # the open call's key
        self.writer: json_fragment_writer | None = None


#: The value fields of a partial argument: (field, written as a string, the Python types it may hold)
_VALUE_KEYS: tuple[tuple[str, bool, tuple[type, ...]], ...] = (
    ("stringValue", True, (str,)),
    ("numberValue", False, (int, float)),
    ("boolValue", False, (bool,)),
    ("nullValue", False, (object,)),
)
_VALUE_NAMES = frozenset(key for key, _, _ in _VALUE_KEYS)


def _partial(b: StreamBuilder, writer: json_fragment_writer, partial: Any) -> str:
    """The argument text of a part's ``partialArgs``. A value of a type its field never holds is said (problem
    ``type``) and skipped; an update the writer cannot append (a path given again, say) is said once per call:
    the call's arguments are the object of every update, the last value of a path winning."""
    out = []
    for p in partial if isinstance(partial, list) else ():
        if not isinstance(p, dict):
            continue
        if None in p.values():
            # Null fields beside the value are absent fields (google-genai's model_dump writes every field); a null
            # with no other value is its own (nullValue: null is how proto3 JSON writes a null)
            given = {k: v for k, v in p.items() if v is not None}
            if not _VALUE_NAMES.isdisjoint(given):
                p = given
        for key, is_string, types in _VALUE_KEYS:
            if key in p:
                value = None if key == "nullValue" else p[key]
                if not isinstance(value, types) or (key == "numberValue" and isinstance(value, bool)):
                    b.problem("type", f"a partial argument's {key} is a JSON {json_type(value)}: skipped")
                    break
                out.append(
                    writer.add(
                        str(p.get("jsonPath") or "$"), value, is_string=is_string, more=bool(p.get("willContinue"))
                    )
                )
                break
    if writer.notes:
        rule, why = writer.notes[0]
        writer.notes.clear()
        b.problem(
            rule,
            f"{why}: the call's input is the object of every update, the last value of a path winning (its"
            " streamed text, never taken back, keeps a key's first value; keys it lacks follow when the call ends)",
        )
    return "".join(out)


def _function_call(b: StreamBuilder, i: int, calls: _Calls, part: Mapping[str, Any]) -> None:
    """A functionCall part: a whole call, or the first or a later part of a call whose arguments stream
    (``willContinue``; later parts carry ``partialArgs``, the last ends it)."""
    fc = part["functionCall"]
    if not isinstance(fc, dict):
        return
    if None in fc.values():  # a field given as null is absent, as in a part
        fc = {k: v for k, v in fc.items() if v is not None}
    sig = part.get("thoughtSignature")
    sig = sig if isinstance(sig, str) and sig else b.string(sig, "a part's thoughtSignature") if sig else None
    more = bool(fc.get("willContinue"))
    name = fc.get("name")
    key = calls.open
    if key is not None and isinstance(name, str) and name:  # a new call: the one streaming was left unfinished
        _cut_call(b, i, calls, "a new function call began while the one before was streaming its arguments")
        key = None
    if key is None and sig is None and fc.keys() <= {"willContinue"}:
        return  # an empty functionCall with no call streaming (the end of one whose last update ended it): nothing
    if key is None:
        calls.count += 1
        key = f"fc{calls.count}"
        fid = fc.get("id")
        b.tool_call(
            key,
            choice=i,
            call_id=fid if isinstance(fid, str) and fid else None,
            name=name,  # (one that is no text is said by the builder: it was made text, 5 -> "5")
            thought_signature=sig,
        )
        args = fc.get("args")
        if args is not None and not (more and args == {}):  # ({} beside willContinue: they follow as partialArgs)
            b.tool_call(key, choice=i, arguments=b.json_text(args))
        if more or "partialArgs" in fc:
            calls.writer = json_fragment_writer()
        if more:
            calls.open = key
    elif sig is not None:
        b.tool_call(key, choice=i, thought_signature=sig)  # on a later part: kept with the call's end
    if "partialArgs" in fc and calls.writer is not None:
        text = _partial(b, calls.writer, fc["partialArgs"])
        if text:
            b.tool_call(key, choice=i, arguments=text)
    if not more:
        changed = None
        if calls.writer is not None:
            rest = calls.writer.close() or "{}"
            b.tool_call(key, choice=i, arguments=rest)
            changed = calls.writer.changed()  # (a key given again: its text keeps the first value, input the last)
        elif not ("args" in fc and fc["args"] is not None):
            b.tool_call(key, choice=i, arguments="{}")
        b.end_tool_call(key, choice=i, input=changed)
        calls.open, calls.writer = None, None


def _cut_call(b: StreamBuilder, i: int, calls: _Calls, why: str) -> None:
    """The call whose arguments were streaming ends unfinished: its arguments stay as they came (not closed
    into JSON the model did not write: the message keeps them raw, with ``argumentsError``), and it is said."""
    assert calls.open is not None
    b.incomplete_call(calls.open, why, choice=i)
    _write_held(b, i, calls)
    b.end_tool_call(calls.open, choice=i)
    calls.open, calls.writer = None, None


def _write_held(b: StreamBuilder, i: int, calls: _Calls) -> None:
    """Updates the open call's writer held (see json_fragment_writer): they came, so they are kept too, in its
    arguments as they are."""
    held = calls.writer.pending() if calls.open is not None and calls.writer is not None else ""
    if held:
        b.tool_call(calls.open, choice=i, arguments=held)


def _media_part(b: StreamBuilder, i: int, part: Mapping[str, Any]) -> None:
    """An ``inlineData`` (base64) or ``fileData`` (URI) part of a reply, an image the model made say: a
    ``data`` block in its place. Interim images of the reasoning (``thought: true``) are said as not kept."""
    if part.get("thought"):
        b.not_kept(f"thought-media/{i}", "media in thought parts (interim images of the reasoning) are not kept", i)
        return
    inline, file = part.get("inlineData"), part.get("fileData")
    source: dict[str, Any] | None = None
    if isinstance(inline, dict):
        source = base64_source(inline.get("mimeType"), inline.get("data"))
    elif isinstance(file, dict):
        uri, mime = file.get("fileUri"), file.get("mimeType")
        if isinstance(uri, str) and uri:
            source = {"type": "url", "url": uri}
            if isinstance(mime, str) and mime:
                source["mime_type"] = mime
    if source is None:
        what = "inlineData without standard base64 data" if inline is not None else "fileData without a fileUri"
        b.problem("type", f"a part with {what}: skipped")
        return
    block: dict[str, Any] = {"type": "data", "source": source}
    name = as_object(inline if isinstance(inline, dict) else file).get("displayName")  # (its label: the block's name)
    if isinstance(name, str) and name:
        block["name"] = name
    b.media(block, choice=i)


#: Parts of tools the provider runs itself (no call for the client): the code it ran and its result, and a built-in
#: tool's call and response (``toolCall``, ``toolResponse``: Google Search, say, beside function calling), each
#: with what it is.
_SERVER_PARTS = {
    "executableCode": "code the provider runs itself",
    "codeExecutionResult": "code the provider runs itself",
    "toolCall": "a built-in tool the provider runs itself",
    "toolResponse": "a built-in tool the provider runs itself",
}

#: What the reader reads of a part (its kind, and a thought's flag and signature); the kinds it reads beside it
_READ_PART_KINDS = frozenset(("text", "functionCall", "inlineData", "fileData"))
_READ_PART_KEYS = _READ_PART_KINDS | {"thought", "thoughtSignature"}


def _part_not_kept(b: StreamBuilder, i: int, part: Mapping[str, Any]) -> None:
    """The fields of a part the reader reads (a text, a call, media) that the message has no place for, beside what
    it reads (a ``videoMetadata``, a ``mediaResolution``, a ``partMetadata``, another kind of part's field): said
    once per reply and field, not dropped silently."""
    for key in part:
        if key not in _READ_PART_KEYS and part[key] is not None:
            shown = str(key)[:60]
            b.not_kept(f"part-{shown}/{i}", f"a part's {shown} is not kept (the message has no place for it)", i)


#: A candidate's citation and grounding data: the message's (metadata agentmsg_grounding), as Gemini gave it
_GROUNDING_KEYS = ("groundingMetadata", "citationMetadata", "urlContextMetadata")

# Candidate data the message has no place for: said (StreamBuilder.not_kept), not dropped silently.
_NOT_KEPT = (
    ("logprobsResult", "log probabilities"),
    ("safetyRatings", "safety rating data (harm categories, probabilities, whether it blocked)"),
    ("avgLogprobs", "the average log probability"),
    ("continuationToken", "the continuation token"),
)

_NOT_KEPT_KEYS = frozenset(key for key, _ in _NOT_KEPT)


#: The metadata of a signature-only thinking block whose signature came on an empty text part of its own
#: (``{"text": "", "thoughtSignature": ...}``, no ``thought``): sent back as that part (GeminiTurns.thinking_part).
EMPTY_TEXT_PART: Final = "emptyTextPart"


# ---- proto field names (snake_case) ------------------------------------------------------------------------
# Proto3 JSON parsers accept a message's field names as the proto writes them (``finish_reason``) as well as in
# lowerCamelCase (``finishReason``, what the API sends); google-genai reads both, and its own dumps
# (``to_json_dict``, ``model_dump``) write the proto names. A response, candidate or part written so is read under
# the lowerCamelCase names, field by field where the parser reads one (never inside a call's args or a tool's
# response: the model's data).

#: Proto names of a response's and a candidate's fields (each is told by one of them: a chunk may hold no other)
_SNAKE_RESPONSE = frozenset(
    ("response_id", "model_version", "usage_metadata", "prompt_feedback", "create_time", "model_status")
)
_SNAKE_CANDIDATE = frozenset(
    (
        "finish_reason",
        "finish_message",
        "safety_ratings",
        "citation_metadata",
        "grounding_metadata",
        "url_context_metadata",
        "avg_logprobs",
        "logprobs_result",
        "token_count",
        "continuation_token",
    )
)


#: A proto field name: lower-case words joined by single underscores (``thought_signature``; not ``text_``, ``_x``)
_PROTO_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def _camel_keys(b: StreamBuilder, fields: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``fields`` with each proto name (``thought_signature``) in lowerCamelCase (``thoughtSignature``). A field
    given both ways keeps its lowerCamelCase value, the API's (google-genai refuses such a mix); the other is said
    (``duplicate``) when it says something else (a null says nothing: a null lowerCamelCase field takes the other)."""
    out: dict[str, Any] = {}
    renamed: list[tuple[str, str, Any]] = []
    for key, value in fields.items():
        if type(key) is str and "_" in key and _PROTO_NAME.fullmatch(key):
            head, *rest = key.split("_")
            renamed.append((head + "".join(word[:1].upper() + word[1:] for word in rest), key, value))
        else:
            out[key] = value
    differ: list[str] = []
    for camel, key, value in renamed:
        kept = out.get(camel)
        if kept is None:
            out[camel] = value
        elif value is not None and value != kept:
            differ.append(key)
    if differ:  # (said once per object)
        shown = ", ".join(repr(key[:80]) for key in differ[:3]) + (
            f" and {len(differ) - 3} more" if len(differ) > 3 else ""
        )
        b.problem(
            "duplicate",
            f"{where} gives a field both in lowerCamelCase and with its proto name, with different values: the"
            f" lowerCamelCase value kept, {shown} left out",
        )
    return out


#: A part's fields whose own fields have proto names too (a call's args, the model's data, are never renamed)
_PART_OBJECTS = ("functionCall", "function_call", "inlineData", "inline_data", "fileData", "file_data")


def _underscored(fields: Iterable[Any]) -> bool:
    """Whether a key of ``fields`` (an object, or its keys) is text with an underscore (a proto name)."""
    try:
        # (its keys joined in C, no generator per object: a JSON object's keys are all text, and a "_" in the
        # joined text is one in a key)
        return "_" in "".join(fields)
    except TypeError:  # a key that is no text (an object not read from JSON)
        return any(type(k) is str and "_" in k for k in fields)


def _snake_key(value: Any) -> bool:
    """Whether ``value`` is an object (a dict) with a key written with an underscore (a proto name)."""
    return type(value) is dict and _underscored(value)


def _proto_named(part: Mapping[str, Any]) -> bool:
    """Whether a part has a field with a proto name: its own, its call's, a partial argument's or its media's."""
    # The keys of the part, of its call, its partial arguments and its media, tested at once (one join; a generator
    # per object cost more). An object under its proto name (function_call) is told by its own key: only the
    # lowerCamelCase ones are looked into.
    keys = list(part)
    for key in _CAMEL_PART_OBJECTS:
        value = part.get(key)
        if type(value) is dict:
            keys += value
            partial = value.get("partialArgs")
            if type(partial) is list:
                for p in partial:
                    if type(p) is dict:
                        keys += p
    return _underscored(keys)


_CAMEL_PART_OBJECTS = _PART_OBJECTS[::2]  # ("functionCall", "inlineData", "fileData")


def _camel_part(b: StreamBuilder, part: Mapping[str, Any]) -> dict[str, Any]:
    """A part written with proto names, in lowerCamelCase: its fields, its function call's (not the args) and its
    partial arguments', its media's."""
    out = _camel_keys(b, part, "a part")
    fc = out.get("functionCall")
    if isinstance(fc, dict):
        fc = _camel_keys(b, fc, "a function call")
        if isinstance(fc.get("partialArgs"), list):
            fc["partialArgs"] = [
                _camel_keys(b, p, "a partial argument") if isinstance(p, dict) else p for p in fc["partialArgs"]
            ]
        out["functionCall"] = fc
    for key in ("inlineData", "fileData"):
        if isinstance(out.get(key), dict):
            out[key] = _camel_keys(b, out[key], key)
    return out


def _camel_response(b: StreamBuilder, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A response written with proto names, in lowerCamelCase (its candidates are read so in :func:`_candidate`)."""
    out = _camel_keys(b, obj, "a response")
    for key in ("usageMetadata", "promptFeedback"):
        if isinstance(out.get(key), dict):
            out[key] = _camel_keys(b, out[key], key)
    return out


#: The keys of a usual candidate: one that has no others has no proto name and nothing _NOT_KEPT
_USUAL_CANDIDATE_KEYS = frozenset(("content", "index", "finishReason"))


def _candidates(b: StreamBuilder, obj: Mapping[str, Any]) -> list[Any]:
    """A response's candidates that are objects; another JSON value where their list goes, or an item that is no
    object, said (problem ``type``) and left out."""
    cands = obj.get("candidates")
    if type(cands) is list and (
        (len(cands) == 1 and type(cands[0]) is dict) or all(isinstance(c, dict) for c in cands)
    ):
        return cands  # (the usual response: one candidate)
    return b.objects(b.array(cands, "the response's candidates"), "the response's candidates")


def _candidate(b: StreamBuilder, cand: Mapping[str, Any], calls: dict[int, _Calls]) -> None:
    usual = _USUAL_CANDIDATE_KEYS.issuperset(cand)  # (one set test instead of two)
    if not usual and not _SNAKE_CANDIDATE.isdisjoint(cand):
        cand = _camel_keys(b, cand, "a candidate")
    i = cand.get("index", 0)
    if type(i) is not int or not INT_MIN <= i <= INT_MAX:  # (beyond 64 bits: as a stream's float, said)
        i = b.index(i, 0, "a candidate's index")
    content = cand.get("content")
    parts = (
        content.get("parts") if isinstance(content, dict) else b.mapping(content, f"candidate {i}'s content").get("")
    )
    if not isinstance(parts, list):  # (said: an object or a string where the list of parts goes emptied it unsaid)
        parts = b.array(parts, f"candidate {i}'s content.parts")
    # Parts keep their order: a text part after a call, a thought or a signature starts a block of its own,
    # and a part with a signature is never merged with the next (Gemini's rule for sending them back).
    for part in parts or ():
        if type(part) is dict and len(part) == 1 and type(text := part.get("text")) is str:
            b.text(text, choice=i, ends="thinking")  # the common part, text alone: as below, in fewer steps
            continue
        if not isinstance(part, dict):
            b.problem("type", f"a part of candidate {i} is a JSON {json_type(part)}, not an object: left out")
            continue
        if None in part.values():  # a field given as null is absent (proto3 JSON; google-genai reads it so)
            part = {k: v for k, v in part.items() if v is not None}
        if ("text" not in part or len(part) > 1) and _proto_named(part):
            part = _camel_part(b, part)  # (written with proto names)
        sig = part.get("thoughtSignature")
        sig = sig if isinstance(sig, str) and sig else b.string(sig, "a part's thoughtSignature") if sig else None
        if not _READ_PART_KEYS.issuperset(part) and not _READ_PART_KINDS.isdisjoint(part):
            _part_not_kept(b, i, part)
        if "functionCall" in part:
            call = calls.get(i)
            if call is None:
                call = calls[i] = _Calls()
            if call.open is None:
                b.end_block("text", i)  # a new call: the text before it is over
            _function_call(b, i, call, part)
            continue
        if "inlineData" in part or "fileData" in part:
            _media_part(b, i, part)
            if sig is not None:
                b.thinking("", choice=i, slot="signature", signature=sig)  # as on an answer part (below)
                b.end_block("signature", i)
            continue
        text = part.get("text")
        if text is not None and type(text) is not str:  # (a number where text goes: said, as every reader says it)
            text = b.string(text, f"a part's text (candidate {i})")
        if part.get("thought"):
            b.end_block("text", i)
            b.thinking(text if isinstance(text, str) else "", choice=i, signature=sig)
            if sig is not None:
                b.end_block("thinking", i)  # its signature is whole: the next thought is a part of its own
            continue
        if isinstance(text, str) and text:
            b.text(text, choice=i, ends="thinking")  # the reasoning is over once the answer starts
        elif "text" not in part and set(part) != {"thoughtSignature"}:  # (a signature alone: kept below)
            kinds = ", ".join(sorted(k for k in part if k != "thoughtSignature"))
            if kinds in _SERVER_PARTS:  # a tool the provider ran itself: no call for the client
                b.end_block("text", i)  # the text after it is a part of its own, as after a call
                b.end_block("thinking", i)  # and so is a thought (it was merged with the one before, across it)
                # kept as Gemini gave it (its thoughtSignature with it), in its place, for Gemini only: a carrier
                b.carrier({"providerBlock": dict(part)}, choice=i)
                continue
            elif kinds:  # (an empty part, {}, carries nothing: skipped quietly)
                b.problem("enum", f"part kind {kinds!r} is not supported: skipped")
        if sig is not None:
            # A signature on an answer part (Gemini 3 sends it on the last part, often empty text): kept as a
            # signature-only thinking block at that place, so it is replayed. One that came on an empty text part
            # of its own (a stream's last chunk) says so (metadata emptyTextPart): the formatter sends that part
            # back as it came, not on the part before, and never as a thought. A thought before it is over (a
            # thought after it was merged with that one, across it, and its signature put after both).
            b.end_block("thinking", i)
            b.thinking("", choice=i, slot="signature", signature=sig)
            b.end_block("signature", i, metadata={EMPTY_TEXT_PART: True} if text == "" else None)
            b.end_block("text", i)  # the signed part is over: text after it is a part of its own
    if not usual and not cand.keys().isdisjoint(_GROUNDING_KEYS):
        # the candidate's citations and grounding: the message's (agentmsg_grounding), as Gemini gave them (a stream's
        # chunks carry {} until the last, which carries the whole)
        b.grounding({key: cand[key] for key in _GROUNDING_KEYS if key in cand}, choice=i)
    if not usual and not cand.keys().isdisjoint(_NOT_KEPT_KEYS):
        for key, what in _NOT_KEPT:
            if cand.get(key):
                b.not_kept(f"{key}/{i}", f"{what} ({key}) is not kept (the message has no place for it)", i)
    reason = cand.get("finishReason")
    if reason is not None and type(reason) is not str:
        reason = _enum_name(b, "finishReason", reason, _FINISH_REASONS, i)
    if isinstance(reason, str) and reason:
        note = cand.get("finishMessage")  # why it finished so (a malformed call, say): said with its text
        if note and not isinstance(note, str):
            note = b.shown(note)  # (said with its JSON text, as a finish message is)
        if isinstance(note, str) and note:
            shown = note if len(note) <= 500 else note[:500] + "..."
            b.not_kept(
                f"finishMessage/{i}", f"the finish message is not kept (the message has no place for it): {shown!r}", i
            )
        if calls.get(i) is not None and calls[i].open is not None:
            _cut_call(
                b, i, calls[i], f"the reply finished ({reason[:40]}) while a function call's arguments were streaming"
            )
        b.finish(i, reason, normal=reason == "STOP")


#: Proto enum numbers, as a response requested with ``$alt=json;enum-encoding=int`` gives them (the Go SDKs, the Vertex
#: AI Python SDK's REST transport): the numbers the Gemini API (generativelanguage) and Vertex AI (aiplatform) number
#: alike. Above them the two differ (finish reason 6 is LANGUAGE on the Gemini API, BLOCKLIST on Vertex AI; block
#: reason 5 is IMAGE_SAFETY, MODEL_ARMOR), and a response does not say which API sent it.
_FINISH_REASONS = ("FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER")
_BLOCK_REASONS = ("BLOCK_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT")


def _enum_name(b: StreamBuilder, field: str, value: Any, names: tuple[str, ...], i: int) -> str | None:
    """The name of an enum ``field`` given as its proto number (``enum-encoding=int``). A number the two APIs name
    differently is kept as its digits, said (not-kept: its name); a value of another type is said (``type``)."""
    if type(value) is not int:
        b.problem("type", f"{field} is a JSON {json_type(value)}, not an enum name or number: left out")
        return None
    if 0 <= value < len(names):
        return names[value]
    b.not_kept(
        f"{field}-number/{i}",
        f"{field} {value} is an enum number (enum-encoding=int) that the Gemini API and Vertex AI name differently:"
        " kept as the number, its name is not known",
        i,
    )
    return str(value)


#: The keys of a usual chunk (a stream's every chunk but the first, often all): a response that has no others
#: has no error, no prompt feedback and no field with a proto name, and _payload skips looking for them.
_USUAL_RESPONSE_KEYS = frozenset(("candidates", "usageMetadata", "modelVersion", "responseId", "createTime"))

#: The usage counts _usage reads: a usage object with none of them converts to nothing (says nothing either), so it
#: is not converted (Vertex AI's chunks but the last carry {"trafficType": ...} alone).
_USAGE_COUNTS = frozenset(
    (
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "promptTokenCount",
        "toolUsePromptTokenCount",
        "cachedContentTokenCount",
        "totalTokenCount",
    )
)


#: A usage's fields (google-genai's GenerateContentResponseUsageMetadata), in lowerCamelCase: a usage whose keys are
#: all among them has no key with an underscore, which one set test tells (joining its keys costs ten times as much)
_USAGE_KEYS = _USAGE_COUNTS | {
    "promptTokensDetails",
    "candidatesTokensDetails",
    "cacheTokensDetails",
    "toolUsePromptTokensDetails",
    "trafficType",
}


def _payload(b: StreamBuilder, obj: Mapping[str, Any], calls: dict[int, _Calls]) -> bool:
    """Read one response (a chunk); True when it was the provider's error, which ends the reply."""
    usual = _USUAL_RESPONSE_KEYS.issuperset(obj)  # (no error, no promptFeedback, no proto name at its top)
    u = obj.get("usageMetadata")
    if (type(u) is dict and not _USAGE_KEYS.issuperset(u) and _underscored(u)) or (
        not usual
        and (not _SNAKE_RESPONSE.isdisjoint(obj) or ("promptFeedback" in obj and _snake_key(obj["promptFeedback"])))
    ):
        obj = _camel_response(b, obj)  # (written with proto names, or its usage or prompt feedback)
        u = obj.get("usageMetadata")
    err = None if usual else obj.get("error")
    if err is not None and (isinstance(err, dict) or (isinstance(err, str) and err)):  # (a proxy's may be text)
        for cand in _candidates(b, obj):  # what came with the error is kept
            _candidate(b, cand, calls)
        if isinstance(err, str):
            b.error(err, kind="provider_error")
        else:
            details = err.get("details")
            if details:  # (google.rpc details: RetryInfo's retryDelay, QuotaFailure...; the error event holds scalars)
                b.not_kept(
                    "error-details",
                    f"the error's details are not kept (the message has no place for them): {b.shown(details, 500)}",
                )
            b.error(
                str(err.get("message") or err), kind=str(err.get("status") or "provider_error"), code=err.get("code")
            )
        return True
    if b.response_id is None or b.model is None:
        b.identify(obj.get("responseId"), obj.get("modelVersion"))
    # (a usage object with no count converts to None, unsaid: set_usage keeps nothing, so it is skipped; the usual
    # usage has the prompt's count, told by one key test)
    if u is not None and (type(u) is not dict or "promptTokenCount" in u or not _USAGE_COUNTS.isdisjoint(u)):
        b.usage_later(_usage, u, "promptTokenCount")  # with every chunk: converted once, the last
    for cand in _candidates(b, obj):
        _candidate(b, cand, calls)
    if usual:
        return False  # (no promptFeedback)
    feedback = obj.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("safetyRatings"):  # (the first chunk's: the prompt's ratings)
        b.not_kept(
            "promptFeedback/safetyRatings",
            "the prompt's safety rating data (promptFeedback.safetyRatings) is not kept (the message has no place"
            " for it)",
        )
    if isinstance(feedback, dict) and feedback.get("blockReason") and obj.get("candidates"):
        # a blocked prompt and a reply's candidates (a proxy's merge): the candidates are the reply, the block said
        b.not_kept(
            "promptFeedback/blockReason",
            "the prompt's block reason beside candidates is not kept (the candidates are the reply):"
            f" {b.shown({k: feedback.get(k) for k in ('blockReason', 'blockReasonMessage') if k in feedback}, 500)}",
        )
    elif isinstance(feedback, dict) and feedback.get("blockReason"):
        b.choice(0)
        note = feedback.get("blockReasonMessage")  # why the prompt was blocked: said with its text, as finishMessage
        if note and not isinstance(note, str):
            note = b.shown(note)  # (said with its JSON text, as a finish message is)
        if isinstance(note, str) and note:
            shown = note if len(note) <= 500 else note[:500] + "..."
            b.not_kept(
                "blockReasonMessage",
                f"the block reason message is not kept (the message has no place for it): {shown!r}",
            )
        block = feedback["blockReason"]
        block = block if type(block) is str else _enum_name(b, "blockReason", block, _BLOCK_REASONS, 0)
        if block:  # (one of another type is said and left out, as a finishReason is: not made text)
            b.finish(0, block)
    return False


#: A response has one (its proto names too: see _SNAKE_RESPONSE)
_RESPONSE_KEYS = frozenset(
    ("candidates", "promptFeedback", "error", "usageMetadata", "prompt_feedback", "usage_metadata")
)


def _a_response(obj: Any) -> bool:
    """Whether a whole body's object is a response: candidates, or a key of one that is not null (an
    ``"error": null`` alone is none: an OpenAI Responses reply has one)."""
    return "candidates" in obj or any(obj.get(key) is not None for key in _RESPONSE_KEYS)


def _unwrapped(obj: Any) -> Any:
    """The response inside Gemini Code Assist's envelope (``{"response": {...}, "traceId": ...}``, what the
    Code Assist API behind gemini-cli sends, whole and streamed), else ``obj`` itself. Only a payload of no
    response shape is looked into; ``traceId`` describes the serving, not the reply (as ``system_fingerprint``)."""
    inner = obj.get("response")
    if isinstance(inner, dict) and not _RESPONSE_KEYS.isdisjoint(inner) and _RESPONSE_KEYS.isdisjoint(obj):
        return inner
    return obj


def _after_error(b: StreamBuilder, skipped: int) -> None:
    """Responses that came after the provider's error (which ended the reply): skipped, as the SDK's stream
    raises at the error, and said once (problem ``order``)."""
    b.problem("order", f"{skipped} payload(s) after the provider's error, which ended the reply: skipped")


# ---- reply fields: what each becomes (providers/_response/fields.py) ---------------------------------------

#: What the reader does with each field of a reply (a stream's chunks carry the same)
REPLY_FIELDS: Final = (
    ReplyField("responseId", MAPPED, "the message id"),
    ReplyField("modelVersion", MAPPED, "metadata `agentmsg_model` (thinking blocks' `model`)"),
    ReplyField("createTime|modelStatus", NOT_READ, "describes the serving, not the reply"),
    ReplyField("candidates[].index", MAPPED, "the choice: candidate i > 0 under `source: choice/i`"),
    ReplyField("candidates[].content.parts[].text", KEPT, "a text block (structured output: `_structured_output`)"),
    ReplyField("candidates[].content.parts[].text (think_tags)", MAPPED, THINK_TAGS),
    ReplyField("candidates[].content.parts[].thought", MAPPED, "its text as a thinking block"),
    ReplyField(
        "candidates[].content.parts[].thoughtSignature",
        MAPPED,
        "thinking metadata `signature` (a call's: its metadata)",
    ),
    ReplyField(
        "candidates[].content.parts[].functionCall", MAPPED, "a tool_use block (`id`, `name`, `args`; `partialArgs`)"
    ),
    ReplyField(
        "candidates[].content.parts[].inlineData|fileData",
        MAPPED,
        "a data block (base64 or URL source; its `displayName` the block's `name`)",
    ),
    ReplyField(
        "candidates[].content.parts[].videoMetadata|mediaResolution|partMetadata",
        NOT_KEPT,
        "what a text, call or media part carries beside it",
    ),
    ReplyField(
        "candidates[].content.parts[].executableCode|codeExecutionResult|toolCall|toolResponse",
        MAPPED,
        "tools the provider runs itself: a carrier in its place (thinking metadata `providerBlock`, the part as given)",
    ),
    ReplyField("candidates[].content.role", NOT_READ, "always the model"),
    ReplyField("candidates[].finishReason", MAPPED, "metadata `agentmsg_finish_reason`; the generate reason"),
    ReplyField("candidates[].finishMessage", NOT_KEPT, "its text in the note"),
    ReplyField(
        "candidates[].groundingMetadata|citationMetadata|urlContextMetadata",
        MAPPED,
        "metadata `agentmsg_grounding`, under the same names, as given",
    ),
    ReplyField(
        "candidates[].logprobsResult|avgLogprobs|safetyRatings|continuationToken",
        NOT_KEPT,
    ),
    ReplyField("promptFeedback.blockReason", MAPPED, "a blocked prompt: the finish reason"),
    ReplyField(
        "promptFeedback.blockReason (beside candidates)", NOT_KEPT, "the candidates are the reply; with its message"
    ),
    ReplyField("promptFeedback.blockReasonMessage|promptFeedback.safetyRatings", NOT_KEPT),
    ReplyField(
        "usageMetadata.promptTokenCount, usageMetadata.toolUsePromptTokenCount",
        MAPPED,
        "usage `inputTokens` (their sum)",
    ),
    ReplyField(
        "usageMetadata.candidatesTokenCount, usageMetadata.thoughtsTokenCount",
        MAPPED,
        "usage `outputTokens` (their sum)",
    ),
    ReplyField("usageMetadata.thoughtsTokenCount", MAPPED, "usage `reasoningTokens`"),
    ReplyField("usageMetadata.cachedContentTokenCount", MAPPED, "usage `cachedTokens`"),
    ReplyField(
        "usageMetadata.totalTokenCount",
        MAPPED,
        "usage `totalTokens` when a count is missing; else `totalTokens` is input + output (as Java derives it),"
        " and a total that is not that sum is said (not kept)",
    ),
    ReplyField(
        "usageMetadata.*TokensDetails, usageMetadata.serviceTier, usageMetadata.trafficType",
        NOT_READ,
        "details the usage has no field for; how it was served",
    ),
    ReplyField("candidates[].tokenCount", NOT_READ, "a candidate's own count (the usage's are usageMetadata's)"),
    ReplyField("error", MAPPED, "an error event (metadata `agentmsg_errors`); INTERRUPTED"),
    ReplyField(
        "error.details", NOT_KEPT, "google.rpc details (RetryInfo's `retryDelay`, ...): their value in the note"
    ),
)

# ---- reader: whole replies and stream payloads -------------------------------------------------------------


class Reader(PayloadReader):
    """generateContent payloads -> AgentEvents: a whole response (candidate i > 0 under ``source: choice/i``;
    thought parts as thinking, thoughtSignature on thinking / tool calls, a signature on an answer part as a
    signature-only thinking block, function calls, usage (output = candidates + thoughts), finish reason mapped
    to the generate reason), a JSON array of streamed responses, and each chunk of
    ``streamGenerateContent?alt=sse``: every chunk is a whole response holding the next parts; usage is
    cumulative (the last wins). Streamed function-call arguments (``partialArgs`` / ``willContinue``) become
    argument deltas of valid JSON text; a call's thoughtSignature goes on its TOOL_CALL_START; an ``error``
    payload ends the reply interrupted (payloads after it are skipped and said)."""

    arrays = True

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        super().__init__(builder, spec, **options)
        self._calls: dict[int, _Calls] = {}

    def reply(self, obj: Any) -> None:
        b = self.b
        if isinstance(obj, list):  # a streamGenerateContent response read without alt=sse: a JSON array
            if not any(isinstance(item, dict) and _a_response(_unwrapped(item)) for item in obj):
                raise ValidationError.single(  # ([] or agent events: no reply that ended before it began)
                    "", "shape", "a streamGenerateContent array holds responses (candidates or an error): none here"
                )
            for k, item in enumerate(obj):
                if isinstance(item, dict) and _payload(b, _unwrapped(item), self._calls):
                    if k + 1 < len(obj):
                        _after_error(b, len(obj) - k - 1)
                    break
            b.close()
            return
        if "candidates" not in obj and _RESPONSE_KEYS.isdisjoint(obj):
            obj = _unwrapped(obj)
        if not _a_response(obj):
            raise ValidationError.single(
                "", "shape", "a generateContent response has candidates (or an error): none here"
            )
        _payload(b, obj, {})
        b.close(ended=True)  # the whole response: a candidate without a finishReason is whole (no reason invented)

    def end(self) -> None:
        # No payload comes after this one (an error, a cut, the end): updates a call's writer held are
        # written into its arguments (they came), before the reply closes the call.
        for i, calls in self._calls.items():
            _write_held(self.b, i, calls)
        self.say_foreign("no generateContent response shape (no candidates, promptFeedback, usageMetadata or error)")

    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        if event == "error" and not obj.get("error"):  # an SSE error event (a proxy's): its data is the error
            obj = {"error": obj}
        if "candidates" not in obj and _RESPONSE_KEYS.isdisjoint(obj):
            obj = _unwrapped(obj)  # (Code Assist's envelope)
            if "candidates" not in obj and _RESPONSE_KEYS.isdisjoint(obj):
                self.foreign += 1  # (another provider's payload, a proxy's wrapper): said at the end
                return
        if _payload(self.b, obj, self._calls):
            self.end_at_error()  # the provider's error ends the reply (the SDK's stream raises there)
        elif type(self) is Reader:  # (a subclass may read payloads its own way: chunk() would not see them)
            self._route(event, obj)

    def _route(self, event: str, obj: dict[str, Any]) -> None:
        """A text or thought chunk read as ``b.text(text)`` or ``b.thinking(text)`` and its usage kept for later, and
        nothing else: the next ones of the same bytes around their text and their usage counts (the same response id,
        model, prompt count...) are read so in C (:meth:`PayloadReader.route_value`), with no orjson and no
        :meth:`chunk` call; the usage of the last is read from its bytes when the reply ends."""
        b = self.b
        if b.response_id is None or b.model is None or not _USUAL_RESPONSE_KEYS.issuperset(obj):
            return
        cands = obj.get("candidates")
        if type(cands) is not list or len(cands) != 1:
            return
        cand = cands[0]
        if type(cand) is not dict or not _ROUTED_CANDIDATE_KEYS.issuperset(cand) or cand.get("index", 0) != 0:
            return
        content = cand.get("content")
        parts = content.get("parts") if type(content) is dict and _ROUTED_CONTENT_KEYS.issuperset(content) else None
        if type(parts) is not list or len(parts) != 1 or type(parts[0]) is not dict:
            return
        part = parts[0]
        text = part.get("text")
        if type(text) is not str or not text:
            return
        if len(part) == 1:
            kind, slot = "text", "text"
        elif len(part) == 2 and part.get("thought") is True:  # a thought (summary) without its signature
            kind, slot = "thinking", "thinking"
        else:
            return
        u = obj.get("usageMetadata")
        if u is not None and (type(u) is not dict or not _USAGE_KEYS.issuperset(u)):
            return  # (a usage with proto names is read another way)
        usage = self.usage_holes(u, "usageMetadata", "promptTokenCount", _usage)
        if usage is not None:  # (else it was converted now)
            self.route_value(b'"text":', text, slot, event, *usage, kind=kind)


#: What a routed text chunk's candidate and content hold (Reader._route)
_ROUTED_CANDIDATE_KEYS = frozenset(("content", "index"))
_ROUTED_CONTENT_KEYS = frozenset(("parts", "role"))

# ---- registry entries and the module's functions -----------------------------------------------------------

PROVIDER: Final = Entry(SPEC, format_request, Reader, __name__)
PROVIDERS: Final = (PROVIDER,)

response_events = PROVIDER.response_events
parse_response = PROVIDER.parse_response
parse_stream = PROVIDER.parse_stream
StreamParser = PROVIDER.stream_parser
