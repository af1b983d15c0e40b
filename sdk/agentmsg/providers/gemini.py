"""gemini request formatter (in progress), response and stream parsers (issue 10)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from agentmsg import reduce_events
from agentmsg.message import Msg

from ._format import FormattedRequest
from ._stream import BaseStreamParser, StreamBuilder, json_fragment_writer, run_parser, safe_int, usage_dict

__all__ = ["StreamParser", "format_request", "parse_response", "parse_stream", "response_events"]

# ---- request (issue 9) ----------------------------------------------------------------------------


def format_request(messages: Sequence[Msg], **kwargs: Any) -> FormattedRequest:
    raise NotImplementedError("gemini formatter: in progress")


# ---- response (issue 10) --------------------------------------------------------------------------
# A Gemini generateContent response becomes the events its stream would give, reduced by the one Reducer.


def _usage(u: Any) -> dict[str, Any] | None:
    """outputTokens counts the reasoning too (candidates + thoughts), as the usage schema says."""
    if not isinstance(u, dict):
        return None
    cand, thoughts = safe_int(u.get("candidatesTokenCount")), safe_int(u.get("thoughtsTokenCount"))
    out = None if cand is None and thoughts is None else (cand or 0) + (thoughts or 0)
    return usage_dict(u.get("promptTokenCount"), out, u.get("cachedContentTokenCount"), u.get("totalTokenCount"))


class _Calls:
    """Per candidate: the function call whose arguments are streaming (``willContinue``)."""

    __slots__ = ("count", "open", "writer")

    def __init__(self) -> None:
        self.count = 0
        self.open: str | None = None  # the open call's key
        self.writer: json_fragment_writer | None = None


_VALUE_KEYS = (("stringValue", True), ("numberValue", False), ("boolValue", False), ("nullValue", False))


def _partial(writer: json_fragment_writer, partial: Any) -> str:
    out = []
    for p in partial if isinstance(partial, list) else ():
        if not isinstance(p, dict):
            continue
        for key, is_string in _VALUE_KEYS:
            if key in p:
                value = None if key == "nullValue" else p[key]
                out.append(
                    writer.add(
                        str(p.get("jsonPath") or "$"), value, is_string=is_string, more=bool(p.get("willContinue"))
                    )
                )
                break
    return "".join(out)


def _function_call(b: StreamBuilder, i: int, calls: _Calls, part: Mapping[str, Any]) -> None:
    fc = part["functionCall"]
    if not isinstance(fc, dict):
        return
    sig = part.get("thoughtSignature")
    more = bool(fc.get("willContinue"))
    key = calls.open
    if key is None:
        calls.count += 1
        key = f"fc{calls.count}"
        fid = fc.get("id")
        b.tool_call(
            key,
            choice=i,
            call_id=fid if isinstance(fid, str) and fid else None,
            name=str(fc.get("name") or ""),
            thought_signature=sig if isinstance(sig, str) else None,
        )
        if "args" in fc and fc["args"] is not None:
            b.tool_call(key, choice=i, arguments=orjson.dumps(fc["args"]).decode())
        if more:
            calls.open, calls.writer = key, json_fragment_writer()
    if "partialArgs" in fc and calls.writer is not None:
        text = _partial(calls.writer, fc["partialArgs"])
        if text:
            b.tool_call(key, choice=i, arguments=text)
    if not more:
        if calls.writer is not None:
            rest = calls.writer.close() or "{}"
            b.tool_call(key, choice=i, arguments=rest)
        elif not ("args" in fc and fc["args"] is not None):
            b.tool_call(key, choice=i, arguments="{}")
        b.end_tool_call(key, choice=i)
        calls.open, calls.writer = None, None


def _candidate(b: StreamBuilder, cand: Mapping[str, Any], calls: dict[int, _Calls]) -> None:
    i = cand.get("index", 0)
    if type(i) is not int:
        i = 0
    content = cand.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts or ():
        if not isinstance(part, dict):
            continue
        sig = part.get("thoughtSignature")
        sig = sig if isinstance(sig, str) and sig else None
        if "functionCall" in part:
            _function_call(b, i, calls.setdefault(i, _Calls()), part)
            continue
        text = part.get("text")
        if part.get("thought"):
            b.thinking(text if isinstance(text, str) else "", choice=i, signature=sig)
            continue
        if isinstance(text, str) and text:
            b.end_block("thinking", i)  # the reasoning is over once the answer starts
            b.text(text, choice=i)
        elif "text" not in part:
            kinds = ", ".join(sorted(k for k in part if k != "thoughtSignature"))
            b.problem("enum", f"part kind {kinds!r} is not supported: skipped")
        if sig is not None:
            # A signature on an answer part (Gemini 3 sends it on the last part, often empty text): kept as a
            # signature-only thinking block at that place, so it is replayed.
            b.thinking("", choice=i, slot="signature", signature=sig)
            b.end_block("signature", i)
    reason = cand.get("finishReason")
    if isinstance(reason, str) and reason:
        if calls.get(i) is not None and calls[i].open is not None:
            _function_call(b, i, calls[i], {"functionCall": {}})  # a call still streaming ends with the reply
        b.finish(i, reason, normal=reason == "STOP")


def _payload(b: StreamBuilder, obj: Mapping[str, Any], calls: dict[int, _Calls]) -> None:
    err = obj.get("error")
    if isinstance(err, dict):
        b.error(str(err.get("message") or err), kind=str(err.get("status") or "provider_error"), code=err.get("code"))
        return
    b.identify(obj.get("responseId"), obj.get("modelVersion"))
    if "usageMetadata" in obj:
        b.set_usage(_usage(obj["usageMetadata"]))
    for cand in obj.get("candidates") or ():
        if isinstance(cand, dict):
            _candidate(b, cand, calls)
    feedback = obj.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason") and not obj.get("candidates"):
        b.choice(0)
        b.finish(0, str(feedback["blockReason"]))


def response_events(body: bytes | str | Mapping[str, Any], **options: Any) -> list[dict[str, Any]]:
    """The AgentEvents of a non-streaming generateContent response (candidate i > 0 under ``source: choice/i``)."""
    obj = orjson.loads(body) if isinstance(body, (bytes, str)) else body
    if isinstance(obj, list):  # a streamGenerateContent response read without alt=sse: a JSON array
        b = StreamBuilder(options.pop("provider", "gemini"), **options)
        calls: dict[int, _Calls] = {}
        for item in obj:
            if isinstance(item, dict):
                _payload(b, item, calls)
        b.close()
        return b.drain()
    if not isinstance(obj, Mapping):
        raise TypeError("a Gemini response is a JSON object")
    b = StreamBuilder(options.pop("provider", "gemini"), **options)
    _payload(b, obj, {})
    b.close()
    return b.drain()


def parse_response(body: bytes | str | Mapping[str, Any], *, choice: int = 0, **options: Any) -> Msg:
    """The assistant message of a generateContent response: thought parts as thinking, thoughtSignature
    on thinking / tool calls (a signature on an answer part as a signature-only thinking block), function
    calls, usage (output = candidates + thoughts), finish reason mapped to the generate reason."""
    return reduce_events(response_events(body, **options), source=None if choice == 0 else f"choice/{choice}")[0]


# ---- stream (issue 10) ----------------------------------------------------------------------------


class StreamParser(BaseStreamParser):
    """streamGenerateContent?alt=sse -> AgentEvents, incrementally. Every chunk is a whole response
    holding the next parts; usage is cumulative (the last wins). Streamed function-call arguments
    (``partialArgs`` / ``willContinue``) become argument deltas of valid JSON text; a call's
    thoughtSignature goes on its TOOL_CALL_START; an ``error`` payload ends the reply interrupted."""

    provider = "gemini"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._calls: dict[int, _Calls] = {}

    def payload(self, event: str, obj: dict[str, Any]) -> None:
        _payload(self.builder, obj, self._calls)


def parse_stream(chunks: Iterable[bytes | str] | bytes | str, **options: Any) -> Iterator[dict[str, Any]]:
    """AgentEvents of a streamGenerateContent SSE body (whole, or an iterable of chunks as they arrive)."""
    return run_parser(StreamParser(**options), chunks)
