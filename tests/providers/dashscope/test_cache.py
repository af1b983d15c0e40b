"""Prompt-cache markers in DashScope requests (native and compatible mode): ``cache_control: {"type":
"ephemeral"}`` on the marked message's last content part, content in its list form (provider-fields.md 4.4); at
most four; one lifetime; none on a tool definition. Every body goes through its oracle (the dashscope package's own
request building for native, OpenAI's closed schema with DashScope's documented extensions for compatible mode)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    ImageBlock,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
)
from tests._support.providers import FIXTURES, TOOLS, module, places, rules, tool_loop
from tests.oracles import formatted

EPHEMERAL = {"type": "ephemeral"}


def _messages(provider: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    return body["input"]["messages"] if provider == "dashscope" else body["messages"]  # type: ignore[no-any-return]


@pytest.mark.no_kernel
@pytest.mark.parametrize("provider", ["dashscope", "dashscope-compatible"])
def test_marker_on_the_last_part_of_the_message(provider: str) -> None:
    msgs = [
        SystemMessage("You are helpful.", metadata={"_cache_control": True}),
        UserMessage("q1"),
        AssistantMessage("a1", metadata={"_cache_control": True}),
        UserMessage("q2"),
    ]
    r = formatted(provider, msgs)
    out = _messages(provider, r.body)

    def text(t: str) -> dict[str, str]:
        return {"text": t} if provider == "dashscope" else {"type": "text", "text": t}

    assert out[0]["content"] == [{**text("You are helpful."), "cache_control": EPHEMERAL}]
    assert out[2]["content"] == [{**text("a1"), "cache_control": EPHEMERAL}]
    assert out[1]["content"] in ("q1", [text("q1")])  # unmarked: as before
    assert r.diagnostics == ()


@pytest.mark.no_kernel
def test_compatible_marker_on_a_multimodal_message() -> None:
    msgs = [
        UserMessage(
            [TextBlock(text="look"), ImageBlock(source=URLSource(url="https://example.com/a.png"))],
            metadata={"_cache_control": {"blocks": [0]}},
        ),
    ]
    r = formatted("dashscope-compatible", msgs, model="qwen-vl-plus")
    parts = r.body["messages"][0]["content"]
    # one marker per message: on its last part (the prefix it caches holds the marked block)
    assert [p.get("cache_control") for p in parts] == [None, EPHEMERAL]


@pytest.mark.no_kernel
@pytest.mark.parametrize("provider", ["dashscope", "dashscope-compatible"])
def test_ttl_tools_and_limit_said(provider: str) -> None:
    msgs: list[Any] = [SystemMessage("sys", metadata={"_cache_control": {"ttl": "1h"}})]
    for k in range(5):
        msgs += [UserMessage(f"q{k}", metadata={"_cache_control": True}), AssistantMessage(f"a{k}")]
    r = formatted(provider, msgs, tools=[dict(TOOLS[0], _cache_control=True)])
    said = [(p, rule) for p, rule in places(r) if rule.startswith("cache")]
    assert ("/0/metadata/_cache_control", "cache-ttl-dropped") in said
    assert ("/tools/0/_cache_control", "cache-breakpoint-dropped") in said
    # the system prompt's, then the latest three user turns': the two oldest said
    assert [p for p, rule in said if rule == "cache-breakpoint-dropped" and p != "/tools/0/_cache_control"] == [
        "/1/metadata/_cache_control",
        "/3/metadata/_cache_control",
    ]
    marked = [i for i, m in enumerate(_messages(provider, r.body)) if "cache_control" in str(m["content"])]
    assert marked == [0, 5, 7, 9]
    assert "cache_control" not in str(r.body.get("tools") or r.body.get("parameters", {}).get("tools"))


@pytest.mark.no_kernel
@pytest.mark.parametrize("provider", ["dashscope", "dashscope-compatible"])
def test_tool_only_assistant_walks_back_to_content(provider: str) -> None:
    """An assistant message that only calls tools has no content part: the marker goes on the last message it put
    that has content, else it is said."""
    msgs = tool_loop()
    msgs[2] = msgs[2].copy(metadata={"_cache_control": True})
    msgs[3] = msgs[3].copy(metadata={"_cache_control": True})
    r = formatted(provider, msgs, tools=TOOLS)
    out = _messages(provider, r.body)
    assert "cache_control" not in str(out[2])  # the calls: no content
    assert "cache_control" in str(out[3]["content"])  # the first tool result
    assert ("/2/metadata/_cache_control", "cache-breakpoint-dropped") in rules(r)


def test_recorded_cache_hit_in_usage() -> None:
    """The docs' recorded native reply with an implicit-cache hit (tests/fixtures README): prompt_tokens_details
    .cached_tokens is the cache read, a part of input_tokens."""
    body = json.loads((FIXTURES / "dashscope" / "native_multimodal_response_implicit_cache_docs.json").read_bytes())
    usage = module("dashscope").parse_response(body).usage
    assert usage is not None
    assert (usage.cached_tokens, usage.input_tokens, usage.cache_creation_input_tokens) == (1152, 1292, None)


def test_explicit_cache_write_and_read_in_usage() -> None:
    """The explicit cache's counts as the context-cache docs show them (provider-fields.md 4.2; no recording has
    them): cache_creation_input_tokens the write, cached_tokens the read, in both modes."""
    details = {"cache_creation_input_tokens": 1500, "cached_tokens": 1024, "cache_type": "ephemeral"}
    native = {
        "request_id": "q",
        "output": {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]},
        "usage": {"input_tokens": 3019, "output_tokens": 10, "total_tokens": 3029, "prompt_tokens_details": details},
    }
    compat = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "qwen-plus",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 3019,
            "completion_tokens": 10,
            "total_tokens": 3029,
            "prompt_tokens_details": details,
        },
    }
    for family, body in (("dashscope", native), ("openai", compat)):
        usage = module(family).parse_response(body).usage
        assert usage is not None
        assert (usage.cached_tokens, usage.cache_creation_input_tokens, usage.input_tokens) == (1024, 1500, 3019)


@pytest.mark.no_kernel
def test_one_marker_on_a_message_of_calls_alone_is_one_breakpoint() -> None:
    """A multimodal request's assistant messages of tool calls alone each get content ``[{"text": ""}]``: one list,
    made once, went into every such message, so a marker placed on one of them marked them all (six breakpoints
    sent, no diagnostic, where DashScope takes four)."""
    image = ImageBlock(source=URLSource(url="https://example.com/photo.png"))
    msgs: list[Any] = [UserMessage([TextBlock(text="what is in this photo?"), image])]
    for i in range(6):
        call = AssistantMessage([ToolUseBlock(id=f"c{i}", name="s", input={})])
        msgs += [call.copy(metadata={"_cache_control": True}) if i == 0 else call]
        msgs += [ToolResultMessage([ToolResultBlock(id=f"c{i}", name="s", output=["r"])])]
    request = formatted("dashscope", msgs)
    sent = _messages("dashscope", request.body)
    assert json.dumps(sent).count("cache_control") == 1
    assert sent[1]["content"] == [{"text": "", "cache_control": EPHEMERAL}] and sent[3]["content"] == [{"text": ""}]
