# ---- response (issue 10) ----
# An OpenAI Chat Completions response (and the compatible family: DeepSeek, DashScope compatible mode,
# ...) becomes the events a stream of it would give, reduced by the one Reducer: parse_response and
# reduce(parse_stream) cannot drift apart.

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from ..events import reduce_events
from ..message import Msg
from ._stream import BaseStreamParser, StreamBuilder, run_parser, usage_dict

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
        return "".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
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
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
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


def response_events(
    body: bytes | str | Mapping[str, Any], *, provider: str = "openai", **options: Any
) -> list[dict[str, Any]]:
    """The AgentEvents of a non-streaming response (every choice; choice i > 0 under ``source: choice/i``)."""
    obj = orjson.loads(body) if isinstance(body, (bytes, str)) else body
    b = StreamBuilder(provider, **options)
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
        m = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        b.choice(i)
        _message(b, i, m)
        _tool_calls(b, i, m.get("tool_calls"), whole=True)
        _finish(b, i, choice.get("finish_reason") or "stop")
    b.close()
    return b.drain()


def parse_response(
    body: bytes | str | Mapping[str, Any], *, choice: int = 0, provider: str = "openai", **options: Any
) -> Msg:
    """The assistant message of a Chat Completions response (choice ``choice``)."""
    events = response_events(body, provider=provider, **options)
    return reduce_events(events, source=None if choice == 0 else f"choice/{choice}")[0]


# ---- stream (issue 10) ----


class StreamParser(BaseStreamParser):
    """Chat Completions SSE (``data: {chunk}`` ... ``data: [DONE]``) -> AgentEvents, incrementally.

    Tool-call fragments are routed by ``index`` to their call (a new id at an index starts a new call),
    names are set once, ``reasoning_content`` / ``reasoning`` become thinking, ``refusal`` a text block of
    its own, ``n > 1`` choices are kept apart (``source: choice/i``), the usage-only final chunk gives
    the usage, and an ``error`` payload mid-stream ends the reply interrupted with everything kept."""

    provider = "openai"

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
                delta = ch.get("message") if isinstance(ch.get("message"), dict) else {}
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
