"""Usage on every recorded reply, checked against the official SDKs' usage types (marker ``oracle``): each count of
the message's usage is the provider field schemas/chat-usage.schema.json names for it, as the SDK reads that field
(openai ``CompletionUsage``, anthropic ``Usage`` and its stream accumulator, google-genai
``GenerateContentResponseUsageMetadata``, dashscope ``Usage``), and nothing the SDK reports as cache reads, cache
writes or reasoning is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests import oracles
from tests._support.providers import FIXTURES, ids, module, recorded_payloads, reduce_checked, sse_payloads

pytestmark = pytest.mark.oracle

RESPONSES = sorted(p for p in FIXTURES.glob("*/*.json") if not p.name.startswith("request_"))  # (a request: not read)
# (the docs' extended-thinking example is edited: it has no usage at all, so there is nothing to compare)
STREAMS = sorted(
    p for p in FIXTURES.glob("*/*") if p.suffix in (".sse", ".jsonl") and "extended_thinking" not in p.name
)


def _family(path: Path) -> str:
    vendor = path.parent.name
    if vendor == "deepseek" or path.name.startswith("compat_"):
        return "openai"
    return vendor


def _counts(**counts: int | None) -> dict[str, int]:
    """The usage the schema's field mapping gives for these counts (None: the provider did not say)."""
    out = {k: v for k, v in counts.items() if v is not None}
    if "inputTokens" in out and "outputTokens" in out:
        out["totalTokens"] = out["inputTokens"] + out["outputTokens"]
    return out


def _openai(usage: Any) -> dict[str, int]:
    """openai ``CompletionUsage``: prompt_tokens includes the cache reads and writes, completion_tokens the
    reasoning (provider-fields.md 1.2). DeepSeek's own prompt_cache_hit_tokens is an extra field of the model."""
    u = oracles.require("openai.types").CompletionUsage.model_validate(usage)
    details, out_details = u.prompt_tokens_details, u.completion_tokens_details
    cached = details.cached_tokens if details is not None else None
    if cached is None:
        cached = (u.model_extra or {}).get("prompt_cache_hit_tokens")
    return _counts(
        inputTokens=u.prompt_tokens,
        outputTokens=u.completion_tokens,
        cachedTokens=cached,
        cacheCreationInputTokens=getattr(details, "cache_write_tokens", None),
        reasoningTokens=out_details.reasoning_tokens if out_details is not None else None,
    )


def _responses(usage: Any) -> dict[str, int]:
    """openai ``ResponseUsage`` (the Responses API): input_tokens includes the cache reads (and writes, gpt-5.5's
    cache_write_tokens), output_tokens the reasoning. Read leniently (``construct_type``), as the SDK reads replies:
    recordings older than gpt-5.5 lack cache_write_tokens, which its type requires."""
    from openai._models import construct_type
    from openai.types.responses import ResponseUsage

    u = construct_type(type_=ResponseUsage, value=usage)
    details, out_details = u.input_tokens_details, u.output_tokens_details
    return _counts(
        inputTokens=u.input_tokens,
        outputTokens=u.output_tokens,
        cachedTokens=getattr(details, "cached_tokens", None),
        cacheCreationInputTokens=getattr(details, "cache_write_tokens", None),
        reasoningTokens=getattr(out_details, "reasoning_tokens", None),
    )


def _anthropic(u: Any) -> dict[str, int]:
    """anthropic ``Usage``: input_tokens leaves the cache reads and writes out, output_tokens includes the thinking
    (provider-fields.md 2.2)."""
    written, read = u.cache_creation_input_tokens, u.cache_read_input_tokens
    details = getattr(u, "output_tokens_details", None)
    return _counts(
        inputTokens=u.input_tokens + (written or 0) + (read or 0),
        outputTokens=u.output_tokens,
        cachedTokens=read,
        cacheCreationInputTokens=written,
        reasoningTokens=details.thinking_tokens if details is not None else None,
    )


def _gemini(meta: Any) -> dict[str, int]:
    """google-genai ``GenerateContentResponseUsageMetadata``: candidates leave the thoughts out, the prompt holds the
    cached content (provider-fields.md 3.2); the tool-use prompt is input too."""
    thoughts = meta.thoughts_token_count
    candidates = meta.candidates_token_count
    if candidates is None and meta.prompt_token_count:
        candidates = 0  # proto3 JSON leaves a count of 0 out
    return _counts(
        inputTokens=None
        if meta.prompt_token_count is None
        else meta.prompt_token_count + (meta.tool_use_prompt_token_count or 0),
        outputTokens=None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0),
        cachedTokens=meta.cached_content_token_count,
        reasoningTokens=thoughts,
    )


def _dashscope(usage: dict[str, Any]) -> dict[str, int]:
    """dashscope ``Usage`` (v2): the three canonical counters, every other key an extra (provider-fields.md 4.2)."""
    u = oracles.require("dashscope.v2.types.common").Usage.model_validate(usage)
    extra = u.model_extra or {}
    details = extra.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", extra.get("cached_tokens"))
    out_details = extra.get("output_tokens_details") or {}
    return _counts(
        inputTokens=u.input_tokens,
        outputTokens=u.output_tokens,
        cachedTokens=cached,
        cacheCreationInputTokens=details.get("cache_creation_input_tokens"),
        reasoningTokens=out_details.get("reasoning_tokens"),
    )


def _ours(msg: Any) -> dict[str, Any]:
    usage = msg.to_dict()["usage"] or {}
    return {k: v for k, v in usage.items() if k != "time"}


@pytest.mark.parametrize("path", RESPONSES, ids=ids(RESPONSES))
def test_a_replys_usage_is_what_the_sdk_reads(path: Path) -> None:
    body = orjson.loads(path.read_bytes())
    family = _family(path)
    if family == "openai":
        pytest.importorskip("openai")
        expected = _openai(body["usage"])
    elif family == "openai-responses":
        pytest.importorskip("openai")
        expected = _responses(body["usage"])
    elif family == "anthropic":
        pytest.importorskip("anthropic")
        expected = _anthropic(oracles.require("anthropic.types").Message.model_validate(body).usage)
    elif family == "gemini":
        if not oracles.usable("google.genai"):
            pytest.skip("google-genai is not usable here")
        types = oracles.require("google.genai.types")
        expected = _gemini(types.GenerateContentResponse._from_response(response=body, kwargs={}).usage_metadata)
    else:
        pytest.importorskip("dashscope")
        expected = _dashscope(body["usage"])
    msg = module(family).parse_response(body)
    assert _ours(msg) == expected
    # the counts AgentScope Java 2.0.0 lacks ride in _chat_usage as well, where they survive a trip through Java
    extra = set(expected) - {"inputTokens", "outputTokens", "cachedTokens", "totalTokens"}
    assert ("_chat_usage" in msg.metadata) == bool(extra)


def _stream_usage(path: Path, family: str) -> dict[str, int]:
    """The usage the SDK makes of a whole stream: its accumulator's (openai, anthropic, dashscope), the last
    chunk's cumulative usageMetadata (google-genai has no accumulator)."""
    payloads = recorded_payloads(path)
    if family == "openai":
        pytest.importorskip("openai")
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk

        state = ChatCompletionStreamState()
        for chunk in payloads:
            state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
        usage = state.current_completion_snapshot.usage
        return _openai(usage.model_dump(mode="json")) if usage is not None else {}
    if family == "openai-responses":
        pytest.importorskip("openai")
        from tests.providers.openai_responses.sdk import final_response

        final = final_response(payloads)
        return (
            _responses(final.usage.model_dump(mode="json", warnings=False)) if final is not None and final.usage else {}
        )
    if family == "anthropic":
        streaming = pytest.importorskip("anthropic.lib.streaming._messages")
        snapshot = None
        bufs: dict[int, bytes] = {}
        for p in payloads:
            if p.get("type") not in ("ping", "error"):
                snapshot = streaming.accumulate_event(event=p, current_snapshot=snapshot, json_bufs=bufs)
        assert snapshot is not None
        return _anthropic(snapshot.usage)
    if family == "gemini":
        if not oracles.usable("google.genai"):
            pytest.skip("google-genai is not usable here")
        types = oracles.require("google.genai.types")
        last = [p for p in payloads if p.get("usageMetadata")][-1]
        return _gemini(types.GenerateContentResponse._from_response(response=last, kwargs={}).usage_metadata)
    pytest.importorskip("dashscope")
    from dashscope.v2.resources.chat.completions import _aggregate
    from dashscope.v2.types.completions import parse_chunk

    final = _aggregate([parse_chunk(p) for p in payloads]).model_dump(mode="json", exclude_none=True)
    return _dashscope(final["usage"]) if final.get("usage") else {}


@pytest.mark.parametrize("path", STREAMS, ids=ids(STREAMS))
def test_a_streams_usage_is_what_the_sdk_accumulates(path: Path) -> None:
    family = _family(path)
    expected = _stream_usage(path, family)
    events = list(module(family).parse_stream(path.read_bytes()))
    msg = reduce_checked(events)
    assert _ours(msg) == expected


def test_anthropic_cache_reads_and_writes_from_a_recorded_stream() -> None:
    """The one recording with both (provider-fields.md 2.2): message_start writes 3068 tokens to the cache, the final
    message_delta says 3337 written and 6289 read (cumulative counts, the last wins), input_tokens apart from them."""
    path = FIXTURES / "anthropic" / "stream_code_execution_cache_usage.sse"
    deltas = [p["usage"] for _, p in sse_payloads(path.read_bytes()) if p.get("type") == "message_delta"]
    msg = reduce_checked(list(module("anthropic").parse_stream(path.read_bytes())))
    usage = msg.usage
    assert usage is not None
    last = deltas[-1]
    assert (usage.cached_tokens, usage.cache_creation_input_tokens) == (6289, 3337)
    assert usage.input_tokens == last["input_tokens"] + 3337 + 6289
    assert usage.reasoning_tokens == last["output_tokens_details"]["thinking_tokens"]
    assert msg.metadata["_chat_usage"] == msg.to_dict()["usage"]


# Usage fields no recording here carries, in the shapes the providers document (provider-fields.md): a minimal
# reply around each, read by agentmsg and by the SDK's usage type.
DOCUMENTED: list[tuple[str, dict[str, Any]]] = [
    (  # OpenAI: cache writes (SDK 3.54+), cache reads and reasoning
        "openai",
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 256},
        },
    ),
    (  # DeepSeek: prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens
        "openai",
        {
            "prompt_tokens": 70,
            "completion_tokens": 12,
            "total_tokens": 82,
            "prompt_cache_hit_tokens": 64,
            "prompt_cache_miss_tokens": 6,
        },
    ),
    (  # DashScope native, explicit cache: writes and reads in prompt_tokens_details, reasoning in output details
        "dashscope",
        {
            "input_tokens": 3019,
            "output_tokens": 101,
            "total_tokens": 3120,
            "prompt_tokens_details": {
                "cache_creation_input_tokens": 1500,
                "cached_tokens": 1024,
                "cache_type": "ephemeral",
            },
            "output_tokens_details": {"text_tokens": 11, "reasoning_tokens": 90},
        },
    ),
    (  # DashScope native vision models (some regions): the flat cached_tokens
        "dashscope",
        {"input_tokens": 1292, "output_tokens": 87, "total_tokens": 1379, "cached_tokens": 1152},
    ),
    (  # Anthropic: cache writes with their TTL breakdown (not kept), reads, thinking
        "anthropic",
        {
            "input_tokens": 21,
            "cache_creation_input_tokens": 188086,
            "cache_read_input_tokens": 1000,
            "cache_creation": {"ephemeral_5m_input_tokens": 188086, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 393,
            "output_tokens_details": {"thinking_tokens": 300},
        },
    ),
]


def _reply(family: str, usage: dict[str, Any]) -> dict[str, Any]:
    if family == "openai":
        message = {"role": "assistant", "content": "ok"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}
    if family == "anthropic":
        content = [{"type": "text", "text": "ok"}]
        return {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": content, "usage": usage}
    choice = {"finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    return {"request_id": "q", "output": {"choices": [choice]}, "usage": usage}


@pytest.mark.parametrize(("family", "usage"), DOCUMENTED, ids=[f"{f}-{i}" for i, (f, _) in enumerate(DOCUMENTED)])
def test_documented_usage_fields_are_what_the_sdk_reads(family: str, usage: dict[str, Any]) -> None:
    if family == "openai":
        pytest.importorskip("openai")
        expected = _openai(usage)
    elif family == "anthropic":
        pytest.importorskip("anthropic")
        expected = _anthropic(oracles.require("anthropic.types").Usage.model_validate(usage))
    else:
        pytest.importorskip("dashscope")
        expected = _dashscope(usage)
    assert {"cachedTokens"} <= set(expected)
    assert _ours(module(family).parse_response(_reply(family, usage))) == expected


#: (provider, a whole reply whose usage holds a total, the path of that usage in it, its total's field)
_TOTALS: list[tuple[str, str, tuple[str, ...], str, str]] = [
    ("openai", "openai/chat_completion_text.json", ("usage",), "total_tokens", "usage.total_tokens"),
    (
        "gemini",
        "gemini/generate_content_text.json",
        ("usageMetadata",),
        "totalTokenCount",
        "usageMetadata.totalTokenCount",
    ),
    ("dashscope", "dashscope/native_response_search_info_docs.json", ("usage",), "total_tokens", "usage.total_tokens"),
    ("openai-responses", "openai-responses/response_text.json", ("usage",), "total_tokens", "usage.total_tokens"),
]


@pytest.mark.parametrize(("provider", "fixture", "at", "key", "field"), _TOTALS, ids=[c[0] for c in _TOTALS])
def test_a_total_that_is_not_input_plus_output_is_said(
    provider: str, fixture: str, at: tuple[str, ...], key: str, field: str
) -> None:
    """usage ``totalTokens`` is the input and output counts' sum, as AgentScope Java derives it: a provider's total
    that is another number was dropped without a word. It is said (not kept) with both numbers; a total that is
    the sum says nothing."""
    from agentmsg.providers import get

    body = orjson.loads((FIXTURES / fixture).read_bytes())
    usage = body
    for step in at:
        usage = usage[step]
    msg = get(provider).parse_response(orjson.dumps(body))
    assert msg.usage is not None and msg.usage.total_tokens == usage[key]
    assert not any(field in n["message"] for n in msg.metadata.get("agentmsg_notes", []))
    usage[key] += 7
    msg = get(provider).parse_response(orjson.dumps(body))
    assert msg.usage is not None and msg.usage.total_tokens == usage[key] - 7
    said = [n["message"] for n in msg.metadata.get("agentmsg_notes", []) if field in n["message"]]
    assert said == [
        f"{field} ({usage[key]}) is not the input and output counts' sum ({usage[key] - 7}): not kept (usage"
        " totalTokens is that sum, as AgentScope Java derives it)"
    ]
