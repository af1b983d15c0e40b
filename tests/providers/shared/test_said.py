"""What a formatter leaves out of a conversation is said, at the pointer of what is lost (docs/formatters.md): cases
an audit found sent without a word (a name no part of the request carried, a thinking block's own text where its
provider data stands in, a hint sent as a tool's output). Each case is checked on every provider: where the lost
value is not in the body, a diagnostic points at it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    ContentBlock,
    HintBlock,
    Msg,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agentmsg.providers import NAMES, get

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


def _said(request: Any) -> dict[str, set[str]]:
    """The pointers each rule of the request's diagnostics names."""
    out: dict[str, set[str]] = {}
    for d in request.diagnostics:
        out.setdefault(d.rule, set()).update(d.pointers)
    return out


def _in_body(request: Any, value: str) -> bool:
    return value in json.dumps(request.body, ensure_ascii=False)


def _lost_or_said(request: Any, value: str, pointer: str, rule: str) -> None:
    """``value`` is in the body, or ``rule`` names ``pointer``."""
    said = _said(request)
    assert _in_body(request, value) or pointer in said.get(rule, set()), (value, pointer, said, request.body)


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("repair", [False, True])
@pytest.mark.parametrize("kept", ["hint", "text", "orphan result"])
def test_a_tool_message_that_sends_no_result_says_its_name_dropped(provider: str, repair: bool, kept: str) -> None:
    """A TOOL message holding a hint alone (sent as its own turn), a stray text (dropped) or a result that answers no
    call (left out with ``repair``) sends no tool result to carry its name: Anthropic and Gemini sent none of it
    without a word, as every other provider said."""
    blocks: dict[str, ContentBlock] = {
        "hint": HintBlock(hint="remember X"),
        "text": TextBlock(text="stray"),
        "orphan result": ToolResultBlock.text("nope", "stray result"),
    }
    block = blocks[kept]
    conversation = [UserMessage("hello"), Msg("TOOL", [block], name="toolbot"), UserMessage("again")]
    r = get(provider).format_request(conversation, options={"repair": repair})
    _lost_or_said(r, "toolbot", "/1/name", "name-dropped")


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("tail", ["empty text", "another provider's thinking"])
def test_a_later_piece_that_sends_nothing_says_the_name_left_to_it_dropped(provider: str, tail: str) -> None:
    """An assistant message of tool results and then a block that sends nothing (an empty text DashScope drops,
    another provider's reasoning): the piece of results alone left the name to the piece after it, which sent
    none, and nothing said it (DashScope, both APIs)."""
    last: Any = (
        TextBlock(text="") if tail == "empty text" else ThinkingBlock(thinking="why", metadata={"provider": "x"})
    )
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={})], name="alice")
    conversation = [
        UserMessage("go"),
        call,
        AssistantMessage([ToolResultBlock.text("c1", "result"), last], name="alice"),
    ]
    r = get(provider).format_request(conversation)
    body: Any = r.body.get("messages") or r.body.get("contents") or r.body.get("input")
    if isinstance(body, dict):  # (DashScope's native API: input.messages)
        body = body["messages"]
    sent_last = "alice" in json.dumps(body[-1])  # (the first message's name is in the body too where sent)
    assert sent_last or "/2/name" in _said(r).get("name-dropped", set()), (r.body, _said(r))


def test_a_name_sent_by_an_earlier_piece_is_not_said_dropped_by_a_later_one() -> None:
    """The piece after the results carries the name (its text); a last piece that sends nothing drops nothing."""
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={}), ToolUseBlock(id="c2", name="f", input={})])
    blocks: list[ContentBlock] = [
        ToolResultBlock.text("c1", "r1"),
        TextBlock(text="a"),
        ToolResultBlock.text("c2", "r2"),
        TextBlock(text=""),
    ]
    r = get("dashscope").format_request([UserMessage("go"), call, AssistantMessage(blocks, name="alice")])
    assert _in_body(r, "alice") and "name-dropped" not in _said(r), (r.body, _said(r))


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("layout", ["prefix", "history"])
def test_a_system_message_s_name_in_multi_agent_mode_is_sent_or_said(provider: str, layout: str) -> None:
    """No text of a system message holds its speaker's name in multi-agent mode: where the API has no name field
    (the Responses API), it is said dropped, as Anthropic and Gemini say it."""
    conversation = [
        SystemMessage("the rules", name="host"),
        UserMessage("hello", name="alice"),
        AssistantMessage("hi", name="Bob"),
        SystemMessage("mid-conversation rule", name="moderator"),
    ]
    r = get(provider).format_request(
        conversation, multi_agent=True, agent_name="Bob", options={"multi_agent_layout": layout}
    )
    _lost_or_said(r, "host", "/0/name", "name-dropped")
    _lost_or_said(r, "moderator", "/3/name", "name-dropped")


def _stand_ins() -> list[tuple[str, dict[str, Any]]]:
    """(provider, thinking metadata) of blocks whose provider data is sent in their place."""
    return [
        ("anthropic", {"provider": "anthropic", "redacted": True, "redactedData": "EmwKAhgBEgy3"}),
        (
            "anthropic",
            {
                "provider": "anthropic",
                "providerBlock": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            },
        ),
        ("gemini", {"provider": "gemini", "providerBlock": {"executableCode": {"language": "PYTHON", "code": "1"}}}),
        (
            "openai-responses",
            {"provider": "openai-responses", "providerBlock": {"type": "message", "id": "msg_1", "phase": "final"}},
        ),
    ]


@pytest.mark.parametrize(("provider", "meta"), _stand_ins())
@pytest.mark.parametrize("own", ["text", "signature", "both", "neither"])
def test_a_thinking_block_s_own_text_and_signature_where_provider_data_stands_in_are_said(
    provider: str, meta: dict[str, Any], own: str
) -> None:
    """A redacted thinking block (its ``redactedData`` sent) or a carrier (its provider block sent) given a text or
    a signature of its own by its caller: the request holds neither, and said nothing. The readers make such
    blocks of neither, which are said nothing (nothing is lost)."""
    text = "VISIBLE REASONING" if own in ("text", "both") else ""
    if own in ("signature", "both"):
        meta = {**meta, "signature": "SIG-OWN"}
    block = ThinkingBlock(thinking=text, metadata=meta)
    conversation = [UserMessage("q"), AssistantMessage([TextBlock(text="before"), block, TextBlock(text="answer")])]
    r = get(provider).format_request(conversation)
    said = _said(r).get("thinking-dropped", set())
    if own == "neither":
        assert "/1/content/1" not in said, _said(r)
        return
    assert "/1/content/1" in said, (r.body, _said(r))
    assert not _in_body(r, "VISIBLE REASONING") and not _in_body(r, "SIG-OWN")


@pytest.mark.parametrize("provider", NAMES)
def test_a_hint_inside_a_tool_result_is_said_sent_as_the_result_s_text(provider: str) -> None:
    """A hint is a system-authority reminder, sent as its own turn; inside a tool result it is sent as the result's
    text, which no provider reads with that authority: said (``hint-placed`` at the hint)."""
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={})])
    result = ToolResultBlock(id="c1", name="f", output=[TextBlock(text="result text"), HintBlock(hint="REMINDER")])
    r = get(provider).format_request([UserMessage("go"), call, Msg("TOOL", [result])])
    assert _in_body(r, "REMINDER")
    assert "/2/content/0/output/1" in _said(r).get("hint-placed", set()), _said(r)
