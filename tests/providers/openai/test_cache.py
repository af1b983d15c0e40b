"""Prompt caching on OpenAI and DeepSeek: automatic; a marker is not sent and is said once, as information
(``cache-automatic``, kind info: not raised by ``strict``); ``prompt_cache_key`` is sent as given (OpenAI's
request schema, ``tests.oracles.formatted``)."""

from __future__ import annotations

import json

import pytest

from agentmsg import AssistantMessage, SystemMessage, UserMessage
from tests._support.providers import FIXTURES, TOOLS, module, rules
from tests.oracles import formatted


@pytest.mark.no_kernel
@pytest.mark.parametrize("provider", ["openai", "deepseek"])
def test_markers_said_once_and_not_sent(provider: str) -> None:
    msgs = [
        SystemMessage("sys", metadata={"_cache_control": True}),
        UserMessage("q"),
        AssistantMessage("a", metadata={"_cache_control": {"ttl": "1h"}}),
        UserMessage("q2"),
    ]
    r = formatted(provider, msgs, strict=True)  # info: strict sends it
    assert rules(r) == [("/0/metadata/_cache_control", "cache-automatic")]
    assert r.diagnostics_dicts()[0]["kind"] == "info"
    assert "cache_control" not in str(r.body)


@pytest.mark.no_kernel
def test_tool_marker_said_and_prompt_cache_key_sent() -> None:
    r = formatted("openai", [UserMessage("q")], tools=[dict(TOOLS[0], _cache_control=True)], prompt_cache_key="user-42")
    assert r.body["prompt_cache_key"] == "user-42"
    assert "_cache_control" not in str(r.body["tools"])
    assert rules(r) == [("/tools/0/_cache_control", "cache-automatic")]


@pytest.mark.no_kernel
def test_no_marker_nothing_said() -> None:
    r = formatted("openai", [UserMessage("q")], prompt_cache_key="k")
    assert r.diagnostics == ()


def test_recorded_deepseek_cache_counts_in_usage() -> None:
    """DeepSeek's own cache counts (prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens) in a recorded
    reply (tests/fixtures README): the hit count is the cache read. (No recording here has OpenAI's own non-zero
    cached_tokens or cache_write_tokens: tests/providers/shared/test_usage.py reads them in the documented shape
    against the openai SDK's CompletionUsage.)"""
    body = json.loads((FIXTURES / "deepseek" / "chat_completion_reasoner.json").read_bytes())
    usage = module("openai").parse_response(body).usage
    assert usage is not None
    assert (usage.cached_tokens, usage.input_tokens) == (0, 6)
    body["usage"] = {**body["usage"], "prompt_tokens_details": None, "prompt_cache_hit_tokens": 4}
    usage = module("openai").parse_response(body).usage
    assert usage is not None and usage.cached_tokens == 4


@pytest.mark.no_kernel
@pytest.mark.parametrize("model", ["gpt-5.6", "gpt-5.6-mini", "gpt-6", "ft:gpt-5.7:acme"])
def test_explicit_breakpoints_from_gpt_5_6(model: str) -> None:
    """gpt-5.6 and later take ``prompt_cache_breakpoint: {"mode": "explicit"}`` on content parts (provider-fields.md
    1.4; OpenAI's request schema holds it): on the marked message's last part, content in list form; the lifetime is
    the request's, so a marker's ttl is said; a tool definition takes none."""
    msgs = [
        SystemMessage("sys", metadata={"_cache_control": True}),
        UserMessage("q"),
        AssistantMessage("a", metadata={"_cache_control": {"ttl": "1h"}}),
        UserMessage("q2"),
    ]
    r = formatted("openai", msgs, model=model, tools=[dict(TOOLS[0], _cache_control=True)])
    out = r.body["messages"]
    breakpoint_ = {"mode": "explicit"}
    assert out[0]["content"] == [{"type": "text", "text": "sys", "prompt_cache_breakpoint": breakpoint_}]
    assert out[2]["content"] == [{"type": "text", "text": "a", "prompt_cache_breakpoint": breakpoint_}]
    assert out[1]["content"] == "q" and out[3]["content"] == "q2"
    assert rules(r) == [
        ("/2/metadata/_cache_control", "cache-ttl-dropped"),
        ("/tools/0/_cache_control", "cache-breakpoint-dropped"),
    ]


@pytest.mark.no_kernel
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-5", "gpt-5.5", "o3"])
def test_older_models_cache_on_their_own(model: str) -> None:
    r = formatted("openai", [UserMessage("q", metadata={"_cache_control": True})], model=model)
    assert rules(r) == [("/0/metadata/_cache_control", "cache-automatic")]
    assert "prompt_cache_breakpoint" not in str(r.body)
