"""Formatters: every change made to a conversation is said. Odd but legal shapes (a named message where the
provider has no name field, ...) formatted for every provider: what is changed appears in the diagnostics and
the body passes the provider's oracle."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from agentmsg.blocks import TextBlock, ToolResultBlock, ToolUseBlock
from agentmsg.providers import NAMES
from tests.oracles import formatted

TOOLS = [{"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]


def said(request: Any, rule: str) -> list[str]:
    return [d.pointer for d in request.diagnostics if d.rule == rule]


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_turn_providers_say_the_names_they_do_not_send(provider: str) -> None:
    """Anthropic and Gemini turns have no name field: a named message's name is not sent, said name-dropped (it
    was left out silently; the OpenAI family sends it, DashScope too). In multi-agent mode other speakers' names
    are in their text and the current agent's is agent_name: nothing is said of them."""
    msgs = [
        SystemMessage("s", name="boss"),
        UserMessage("hi", name="alice"),
        AssistantMessage("yo", name="Friday"),
        UserMessage("more", name="alice"),
        AssistantMessage([ToolUseBlock(id="c1", name="f", input={})], name="Friday"),
        ToolResultMessage(ToolResultBlock(id="c1", name="f", output="ok")),
    ]
    r = formatted(provider, msgs, tools=TOOLS)
    # said once for the request (AgentScope names every message: once per message would be one per message)
    assert said(r, "name-dropped") == ["/0/name"]
    (note,) = [d.message for d in r.diagnostics if d.rule == "name-dropped"]
    assert "the names of 5 messages were not sent (messages 0, 1, 2, 3, 4;" in note
    text = str(r.body)
    assert "alice" not in text and "Friday" not in text and "boss" not in text
    r = formatted(provider, msgs, tools=TOOLS, multi_agent=True, agent_name="Friday")
    assert said(r, "name-dropped") == ["/0/name"]  # a system prompt's name is in no text
    assert "[alice]: hi" in str(r.body)


@pytest.mark.parametrize("provider", NAMES)
def test_a_tool_message_name_is_said_everywhere(provider: str) -> None:
    """No provider takes a name on a tool message (DashScope's tool name is the tool's): said, in multi-agent mode
    too, where it is in no text either."""
    msgs = [
        UserMessage("q"),
        AssistantMessage([ToolUseBlock(id="c1", name="f", input={})]),
        ToolResultMessage(ToolResultBlock(id="c1", name="f", output="ok"), name="toolbot"),
    ]
    for multi in (False, True):
        r = formatted(provider, msgs, tools=TOOLS, multi_agent=multi)
        assert said(r, "name-dropped") == ["/2/name"], (provider, multi)
        assert "toolbot" not in str(r.body)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "dashscope-compatible", "dashscope"])
def test_chat_providers_send_names(provider: str) -> None:
    r = formatted(provider, [UserMessage("hi", name="alice"), AssistantMessage("yo", name="Friday")])
    assert said(r, "name-dropped") == [] and [
        m.get("name") for m in r.body.get("messages") or r.body["input"]["messages"]
    ] == [
        "alice",
        "Friday",
    ]


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("state", ["error", "denied", "interrupted"])
def test_an_error_result_is_marked_or_said(provider: str, state: str) -> None:
    """A failed tool result is marked where the provider has a field for it (Anthropic is_error, Gemini's error
    response); a tool message of the OpenAI family and DashScope holds text only: said tool-result-state-dropped
    (the state was lost silently), in a TOOL message or inside the assistant message (AgentScope's shape)."""
    call = ToolUseBlock(id="c1", name="f", input={})
    failed = ToolResultBlock(id="c1", name="f", output="boom", state=state)
    for msgs, at in (
        ([UserMessage("q"), AssistantMessage([call]), ToolResultMessage(failed)], "/2/content/0"),
        ([UserMessage("q"), AssistantMessage([call, failed])], "/1/content/1"),
    ):
        r = formatted(provider, msgs, tools=TOOLS)
        text = str(r.body)
        if provider == "anthropic":
            assert "'is_error': True" in text and said(r, "tool-result-state-dropped") == []
        elif provider == "gemini":
            assert "'error': 'boom'" in text and said(r, "tool-result-state-dropped") == []
        else:
            assert said(r, "tool-result-state-dropped") == [at]
    fine = ToolResultMessage(ToolResultBlock(id="c1", name="f", output="fine"))
    ok = formatted(provider, [UserMessage("q"), AssistantMessage([call]), fine], tools=TOOLS)
    assert said(ok, "tool-result-state-dropped") == []


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_blank_system_text_is_left_out_and_said(provider: str) -> None:
    """A system text block must hold text (Anthropic; Gemini takes no empty part): empty or blank system texts are
    left out, said empty-text-dropped, and a system message left with nothing empty-message-dropped (the empty
    ones were left out silently, the blank ones sent)."""
    msgs = [
        SystemMessage(""),
        SystemMessage("   "),
        SystemMessage([TextBlock(text="a"), TextBlock(text=" "), TextBlock(text="b")]),
        UserMessage("q"),
    ]
    r = formatted(provider, msgs)
    system = r.body["system"] if provider == "anthropic" else r.body["systemInstruction"]["parts"]
    assert [p["text"] for p in system] == ["a", "b"]
    assert [(d.pointer, d.rule) for d in r.diagnostics] == [
        ("/0/content/0", "empty-text-dropped"),
        ("/0", "empty-message-dropped"),
        ("/1/content/0", "empty-text-dropped"),
        ("/1", "empty-message-dropped"),
        ("/2/content/1", "empty-text-dropped"),
    ]


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
    assert [(d.pointer, d.rule) for d in r.diagnostics] == [
        ("/0/content/0", "empty-text-dropped"),
        ("/0", "empty-message-dropped"),
        ("/1/content/1", "empty-text-dropped"),
    ]
    r = formatted("openai", msgs)  # OpenAI takes empty strings: sent as they are
    assert [m["content"] for m in r.body["messages"]] == ["", "a\n\nb", "q"] and r.diagnostics == ()
