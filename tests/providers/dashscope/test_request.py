"""The dashscope formatter (``agentmsg.providers.dashscope.format_request``): DashScope native (text generation,
multimodal generation, the Application API). The body's layout, the provider's rules and the diagnostics; every body
goes through its oracle (``tests.oracles``)."""

from __future__ import annotations

import pytest

from agentmsg import (
    ImageBlock,
    SystemMessage,
    TextBlock,
    URLSource,
    UserMessage,
)
from tests._support.providers import TOOLS, rules, tool_loop
from tests.oracles import formatted

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


def test_dashscope_text_endpoint() -> None:
    r = formatted("dashscope", tool_loop(provider="dashscope"), tools=TOOLS, stream=True, tool_choice="required")
    assert r.path == "/services/aigc/text-generation/generation"
    assert r.headers == {"X-DashScope-SSE": "enable"}
    b = r.body
    assert b["parameters"]["incremental_output"] is True and b["parameters"]["result_format"] == "message"
    msgs = b["input"]["messages"]
    assert msgs[2]["reasoning_content"] == "Two cities." and msgs[2]["content"] == ""
    assert msgs[3] == {"role": "tool", "content": "Sunny", "tool_call_id": "call_1", "name": "get_weather"}
    assert b["parameters"]["tool_choice"] == "auto"
    assert ("/2/content/0", "signature-dropped") in rules(r)


def test_dashscope_multimodal_endpoint() -> None:
    msgs = [
        UserMessage([TextBlock(text="what?"), ImageBlock(source=URLSource(url="https://e.com/a.png"), max_pixels=1000)])
    ]
    r = formatted("dashscope", msgs)
    assert r.path == "/services/aigc/multimodal-generation/generation"
    assert r.body["input"]["messages"][0]["content"] == [
        {"text": "what?"},
        {"image": "https://e.com/a.png", "max_pixels": 1000},
    ]
    r = formatted("dashscope", [UserMessage("hi")], model="qwen-vl-max")
    assert r.path.endswith("multimodal-generation/generation")
    assert r.body["input"]["messages"][0]["content"] == [{"text": "hi"}]


@pytest.mark.parametrize("provider", ["dashscope", "dashscope-compatible"])
def test_dashscope_leaves_out_empty_system_text_as_it_does_elsewhere(provider: str) -> None:
    """DashScope (both modes) leaves out empty text blocks and messages left with nothing, said: system messages
    too (they were sent as they were, an empty system message as content "")."""
    msgs = [
        SystemMessage(""),
        SystemMessage([TextBlock(text="a"), TextBlock(text=""), TextBlock(text="b")]),
        UserMessage("q"),
    ]
    r = formatted(provider, msgs)
    sent = r.body["messages"] if "messages" in r.body else r.body["input"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[0]["content"] in ("a\nb", [{"text": "a\nb"}])
    assert [(d.pointers, d.rule) for d in r.diagnostics] == [
        (("/0/content/0", "/1/content/1"), "empty-text-dropped"),  # said once for both
        (("/0",), "empty-message-dropped"),
    ]
    r = formatted("openai", msgs)  # OpenAI takes empty strings: sent as they are
    assert [m["content"] for m in r.body["messages"]] == ["", "a\n\nb", "q"] and r.diagnostics == ()
