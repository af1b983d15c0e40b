"""Prompt caching in Gemini requests: an explicit cache named by a marker's ``name`` or the ``cached_content``
parameter (``cachedContent``; what the cache holds is not sent: the API refuses a system instruction, tools or a
tool config beside it), else implicit caching, said once (``cache-automatic``). Bodies go through the google-genai
types (``tests.oracles.formatted``)."""

from __future__ import annotations

import json

import pytest

from agentmsg import AssistantMessage, SystemMessage, UserMessage, ValidationError
from tests._support.providers import TOOLS, rules
from tests.oracles import formatted


def _conversation() -> list[object]:
    return [
        SystemMessage("You are helpful."),
        UserMessage("a long document"),
        AssistantMessage("read it", metadata={"_cache_control": {"name": "cachedContents/abc123"}}),
        UserMessage("the question"),
    ]


@pytest.mark.no_kernel
def test_named_marker_names_the_cache_and_leaves_out_what_it_holds() -> None:
    r = formatted("gemini", _conversation(), tools=TOOLS, tool_choice="auto")
    b = r.body
    assert b["cachedContent"] == "cachedContents/abc123"
    assert b["contents"] == [{"role": "user", "parts": [{"text": "the question"}]}]
    assert not {"systemInstruction", "tools", "toolConfig"} & set(b)
    [(pointer, rule)] = rules(r)
    assert (pointer, rule) == ("/2/metadata/_cache_control", "cached-content-used")
    assert "messages 0 to 2" in r.diagnostics[0].message and "the tools" in r.diagnostics[0].message


@pytest.mark.no_kernel
def test_parameter_names_the_cache() -> None:
    msgs = [SystemMessage("sys"), UserMessage("q")]
    r = formatted("gemini", msgs, cached_content="xyz")
    assert r.body["cachedContent"] == "cachedContents/xyz"
    assert r.body["contents"] == [{"role": "user", "parts": [{"text": "q"}]}] and "systemInstruction" not in r.body
    assert rules(r) == [("/params/cached_content", "cached-content-used")]
    with pytest.raises(ValidationError):
        formatted("gemini", msgs, cached_content=3)


@pytest.mark.no_kernel
def test_unnamed_markers_are_implicit_caching_said_once() -> None:
    msgs = [
        SystemMessage("sys", metadata={"_cache_control": True}),
        UserMessage("q", metadata={"_cache_control": {"ttl": "1h"}}),
    ]
    r = formatted("gemini", msgs)
    assert rules(r) == [("/0/metadata/_cache_control", "cache-automatic")]
    assert "cachedContent" not in r.body and r.body["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert r.diagnostics_dicts()[0]["kind"] == "info"


def test_recorded_cache_hit_in_usage() -> None:
    """A recorded reply to a request naming an explicit cache (pydantic-ai's cassette, tests/fixtures README):
    cachedContentTokenCount is the cache read, a part of promptTokenCount; Gemini reports no cache write."""
    from tests._support.providers import FIXTURES, module

    body = json.loads((FIXTURES / "gemini" / "generate_content_cached_content_usage.json").read_bytes())
    usage = module("gemini").parse_response(body).usage
    assert usage is not None
    assert (usage.cached_tokens, usage.input_tokens, usage.cache_creation_input_tokens) == (3512, 3520, None)


@pytest.mark.no_kernel
def test_a_cache_that_ends_inside_a_tool_call_leaves_its_results_answering_it() -> None:
    """A cache that holds a turn of tool calls (its marker on the calls' message) and not their results: the
    results after it answer the held calls. They were said to be orphans and, with the repair option, left out: the
    request then started with a model turn, the cache's calls answered by nothing. Now they are sent with the id and
    name their calls went with; a held call no result answers is an orphan (repaired with an error result)."""
    from agentmsg import ToolResultBlock, ToolResultMessage, ToolUseBlock

    msgs = [
        SystemMessage("sys"),
        UserMessage("weather in Oslo and Rome?"),
        AssistantMessage(
            [
                ToolUseBlock(id="c1", name="get_weather", input={"city": "Oslo"}),
                ToolUseBlock(id="c2", name="get_weather", input={"city": "Rome"}),
            ],
            metadata={"_cache_control": {"name": "cachedContents/abc"}},
        ),
        ToolResultMessage([ToolResultBlock(id="c1", name="get_weather", output="sunny", state="success")]),
        AssistantMessage("Oslo is sunny."),
        UserMessage("thanks"),
    ]
    r = formatted("gemini", msgs)
    first = r.body["contents"][0]
    assert first["role"] == "user"
    assert first["parts"] == [
        {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"output": "sunny"}}}
    ]
    assert rules(r) == [("/2/content/1", "tool-use-orphan"), ("/2/metadata/_cache_control", "cached-content-used")]
    repaired = formatted("gemini", msgs, options={"repair": True})
    parts = repaired.body["contents"][0]["parts"]
    assert [p["functionResponse"]["id"] for p in parts] == ["c1", "c2"] and "error" in parts[1]["functionResponse"][
        "response"
    ]
    assert ("/3/content/0", "tool-result-dropped") not in rules(repaired)
