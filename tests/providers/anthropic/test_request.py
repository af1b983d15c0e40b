"""The anthropic formatter (``agentmsg.providers.anthropic.format_request``): Anthropic Messages. The body's layout,
the provider's rules and the diagnostics; every body goes through its oracle (``tests.oracles``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
    ContentBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
)
from agentmsg.providers import FormatOptions, MediaPolicy, anthropic, get
from tests._support.budget import examples
from tests._support.providers import ANY_TOOLS, PNG, TOOLS, _call, _merged, _thinking, rules, text, tool_loop
from tests.oracles import formatted

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


def test_anthropic_layout_and_parallel_results_in_one_turn() -> None:
    r = formatted("anthropic", tool_loop(), tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    b = r.body
    assert b["system"] == "You are helpful." and b["max_tokens"] == 4096
    assert [m["role"] for m in b["messages"]] == ["user", "assistant", "user", "assistant"]
    assert b["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Two cities.",
        "signature": "EqQBCkYIBxgCKkA",
    }
    results = b["messages"][2]["content"]
    assert [x["tool_use_id"] for x in results] == ["call_1", "call_2"]
    assert b["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert rules(r) == [("/4", "turns-merged")]
    assert r.headers == {"anthropic-version": "2023-06-01"}


def test_anthropic_thinking_first_and_byte_exact() -> None:
    sig = 'Eq\u00e9+/=\\"x' * 20
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                TextBlock(text="Let me think."),
                ThinkingBlock(thinking="", metadata={"signature": sig, "provider": "anthropic"}),
                ThinkingBlock(
                    thinking="", metadata={"redacted": True, "redactedData": "ENC==", "provider": "anthropic"}
                ),
                ToolUseBlock(id="toolu_1", name="get_weather", input={"city": "Oslo"}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="toolu_1", name="get_weather", output="cold", state="error")),
    ]
    r = formatted("anthropic", msgs, tools=TOOLS)
    content = r.body["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": "", "signature": sig}
    assert content[1] == {"type": "redacted_thinking", "data": "ENC=="}
    assert [c["type"] for c in content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert json.loads(r.body_bytes())["messages"][1]["content"][0]["signature"] == sig
    assert rules(r) == [("/1/content/1", "thinking-moved")]  # said once, for both blocks
    assert r.diagnostics[0].pointers == ("/1/content/1", "/1/content/2")
    assert r.body["messages"][2]["content"][0]["is_error"] is True


def test_anthropic_unsigned_and_foreign_reasoning() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage([ThinkingBlock(thinking="mine, unsigned"), TextBlock(text="a")]),
        UserMessage("q2"),
        AssistantMessage([ThinkingBlock(thinking="from gpt", metadata={"provider": "openai"}), TextBlock(text="b")]),
    ]
    r = formatted("anthropic", msgs)
    assert rules(r) == [("/1/content/0", "thinking-dropped"), ("/3/content/0", "thinking-dropped")]
    r = formatted("anthropic", msgs, options={"reasoning": "text"})
    assert rules(r) == [("/1/content/0", "thinking-demoted"), ("/3/content/0", "thinking-demoted")]
    assert r.body["messages"][3]["content"][0] == {"type": "text", "text": "from gpt"}


def test_anthropic_ids_mapped_alike_in_call_and_result() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                ToolUseBlock(id="functions.get_weather:0", name="get_weather", input={}),
                ToolUseBlock(id="functions_get_weather_0", name="get_weather", input={}),
            ]
        ),
        ToolResultMessage(
            [
                ToolResultBlock(id="functions.get_weather:0", name="get_weather", output="a", state="success"),
                ToolResultBlock(id="functions_get_weather_0", name="get_weather", output="b", state="success"),
            ]
        ),
    ]
    r = formatted("anthropic", msgs, tools=TOOLS)
    calls = [c["id"] for c in r.body["messages"][1]["content"]]
    results = [c["tool_use_id"] for c in r.body["messages"][2]["content"]]
    assert calls == results and len(set(calls)) == 2
    assert calls[1] == "functions_get_weather_0"  # already valid: unchanged
    assert calls[0].startswith("functions_get_weather_0_")  # mapped, and distinct from it
    assert rules(r) == [("/1/content/0", "tool-id-mapped")]


def test_anthropic_system_hoisted_empty_text_and_prefill() -> None:
    msgs = [
        UserMessage([TextBlock(text=""), TextBlock(text="hi")]),
        SystemMessage("Late rule."),
        AssistantMessage("Sure thing.  "),
    ]
    r = formatted("anthropic", msgs)
    assert r.body["system"] == "Late rule."
    assert r.body["messages"][0]["content"] == [{"type": "text", "text": "hi"}]
    assert r.body["messages"][1]["content"] == [{"type": "text", "text": "Sure thing."}]
    assert rules(r) == [
        ("/0/content/0", "empty-text-dropped"),
        ("/1", "system-hoisted"),
        ("/2/content/0", "trailing-whitespace-stripped"),
    ]


def test_the_stripped_prefill_text_is_said_at_its_block_in_a_merged_turn() -> None:
    """A final assistant turn of several messages: the stripped text is said where it is, /i/content/j. It was said
    at the turn's last message, ``/2``, a message of signed thinking alone (which goes to the turn's start: the text
    of /1 stays last), and at a message, not the block, where the message holds several texts."""
    thought = ThinkingBlock(thinking="hm", metadata={"signature": "c2ln"})
    msgs = [UserMessage("q"), AssistantMessage("Sure thing.  "), AssistantMessage([thought])]
    r = formatted("anthropic", msgs)
    assert r.body["messages"][-1]["content"][-1] == {"type": "text", "text": "Sure thing."}
    assert ("/1/content/0", "trailing-whitespace-stripped") in rules(r)
    assert ("/2", "trailing-whitespace-stripped") not in rules(r)
    texts = AssistantMessage([TextBlock(text="a"), TextBlock(text="b "), TextBlock(text=" ")])
    r = formatted("anthropic", [UserMessage("q"), texts])
    assert rules(r) == [("/1/content/2", "empty-text-dropped"), ("/1/content/1", "trailing-whitespace-stripped")]


def test_anthropic_media() -> None:
    msgs = [
        UserMessage(
            [
                ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
                DataBlock(source=URLSource(url="https://e.com/doc.pdf"), name="doc.pdf"),
                DataBlock(source=Base64Source(media_type="text/plain", data="aGVsbG8=")),
                AudioBlock(source=URLSource(url="https://e.com/a.mp3")),
            ]
        )
    ]
    r = formatted("anthropic", msgs, thinking_budget=2048, max_tokens=8000, stop="END")
    c = r.body["messages"][0]["content"]
    assert c[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert c[1] == {"type": "document", "source": {"type": "url", "url": "https://e.com/doc.pdf"}, "title": "doc.pdf"}
    assert c[2]["source"] == {"type": "text", "media_type": "text/plain", "data": "hello"}
    assert c[3] == {"type": "text", "text": "[audio: https://e.com/a.mp3]"}
    assert rules(r) == [("/0/content/3", "media-unsupported")]
    assert r.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert r.body["max_tokens"] == 8000  # the caller's, not the 4096 default
    assert r.body["stop_sequences"] == ["END"]


def test_anthropic_plain_text_by_url_is_sent_as_its_text_never_as_a_pdf_url() -> None:
    """A text/plain data block given by URL goes as a text document of the bytes fetched under the media policy:
    Anthropic's URL document source is a PDF's (URLPDFSource), so the URL passed through had the API fetch the text
    as a PDF and refuse the request. Downloads off, the SDK refuses it, naming the block, as for any provider
    that needs the bytes; a PDF by URL still passes through."""
    notes = DataBlock(source=URLSource(url="https://e.com/notes.txt"), name="notes")
    declared = DataBlock(source=URLSource(url="https://e.com/notes", mime_type="text/plain"))
    pdf = DataBlock(source=URLSource(url="https://e.com/doc.pdf"))
    msgs = [UserMessage([notes, declared, pdf])]
    with pytest.raises(ValidationError) as exc:
        anthropic.format_request(msgs)
    assert [(p.pointer, p.rule) for p in exc.value.problems] == [("/0/content/0", "media-download-refused")]

    fetched: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        fetched.append(str(request.url))
        body = httpx.ByteStream("h\u00e9llo".encode())
        return httpx.Response(200, stream=body, headers={"content-type": "text/plain; charset=utf-8"})

    policy = MediaPolicy(allow_download=True, allow_private=True, transport=httpx.MockTransport(handler))
    r = formatted("anthropic", msgs, options=FormatOptions(media=policy))
    c = r.body["messages"][0]["content"]
    text_doc = {"type": "text", "media_type": "text/plain", "data": "h\u00e9llo"}
    assert c == [
        {"type": "document", "source": text_doc, "title": "notes"},
        {"type": "document", "source": text_doc},
        {"type": "document", "source": {"type": "url", "url": "https://e.com/doc.pdf"}},
    ]
    assert fetched == ["https://e.com/notes.txt", "https://e.com/notes"]
    assert rules(r) == []


def test_anthropic_empty_and_blank_text_or_hint_in_a_tool_result_is_left_out_and_said() -> None:
    """Anthropic refuses a text block that is empty or only whitespace, in a tool result too. An empty text in a
    result was left out unsaid (a blank one was said), and a hint in a result went as its text whatever it was: an
    empty or blank hint made a text block the API refuses. Each is left out now, said at its place."""
    output: list[TextBlock | HintBlock] = [
        TextBlock(text="a"),
        TextBlock(text=""),
        HintBlock(hint=""),
        HintBlock(hint=" \n"),
        TextBlock(text="\t"),
        HintBlock(hint="b"),
    ]
    msgs = [
        UserMessage("q"),
        AssistantMessage([ToolUseBlock(id="c1", name="f", input={}), ToolUseBlock(id="c2", name="f", input={})]),
        ToolResultMessage([ToolResultBlock(id="c1", name="f", output=output)]),
        ToolResultMessage([ToolResultBlock(id="c2", name="f", output=[TextBlock(text="")])]),
    ]
    r = formatted("anthropic", msgs)
    results = r.body["messages"][2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert results[1] == {"type": "tool_result", "tool_use_id": "c2"}
    dropped = [p for p in r.diagnostics if p.rule == "empty-text-dropped"]
    assert [p.pointers for p in dropped] == [
        ("/2/content/0/output/1", "/2/content/0/output/4", "/3/content/0/output/0"),
        ("/2/content/0/output/2", "/2/content/0/output/3"),
    ]


def test_anthropic_thinking_opening_a_merged_message_stays_in_its_place() -> None:
    """Consecutive assistant messages (a continuation after pause_turn, say) go in one turn, as the API itself
    would combine them. When that turn starts with thinking, thinking that opens the second message stays after
    the first message's blocks, where the model produced it: moved ahead of them, its prefix would change (the
    preserved-thinking check). Only the merge is said. (It was moved to the start of the turn, said thinking-moved.)"""
    turn, said = _merged("anthropic", [_thinking("1"), TextBlock(text="a")], [_thinking("2"), TextBlock(text="b")])
    assert turn == [("thinking", "step 1"), ("text", "a"), ("thinking", "step 2"), ("text", "b")]
    assert said == [("/2", "turns-merged")]
    # a thinking block is sent byte for byte with its signature, in its place
    r = anthropic.format_request(
        [UserMessage("q"), AssistantMessage([_thinking("1")]), AssistantMessage([_thinking("2"), _call("1")])]
    )
    assert r.body["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "step 1", "signature": "sig1"},
        {"type": "thinking", "thinking": "step 2", "signature": "sig2"},
    ]


@pytest.mark.fuzz
@settings(max_examples=examples(80), deadline=None)
@given(sig=st.text(min_size=1, max_size=200), thought=text, data=st.text(min_size=1, max_size=50))
def test_signed_reasoning_reaches_anthropic_byte_for_byte(sig: str, thought: str, data: str) -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                TextBlock(text="first"),
                ThinkingBlock(thinking=thought, metadata={"signature": sig, "provider": "anthropic"}),
                ThinkingBlock(thinking="", metadata={"redacted": True, "redactedData": data}),
                ToolUseBlock(id="c", name="get_weather", input={}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="ok", state="success")),
    ]
    request = get("anthropic").format_request(msgs, tools=ANY_TOOLS)
    content = json.loads(request.body_bytes())["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": thought, "signature": sig}
    assert content[1] == {"type": "redacted_thinking", "data": data}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


@pytest.mark.parametrize(
    ("ids", "sent"),
    [
        # a.b is mapped (Anthropic ids are [A-Za-z0-9_-]+): '_' for each other character, '_' and 10 hex digits
        # of its SHA-256; a_b, valid, goes as it is: the two stay distinct
        (["a.b", "a_b"], ["a_b_" + _digest("a.b"), "a_b"]),
        (["a_b", "a.b"], ["a_b", "a_b_" + _digest("a.b")]),
        # an id of the conversation that is already what a.b maps to: the mapping takes its digest again
        (["a.b", "a_b_" + _digest("a.b")], ["a_b_" + _digest("a.b") + "_" + _digest("a.b"), "a_b_" + _digest("a.b")]),
    ],
)
def test_anthropic_ids_that_clash_once_sanitized_are_mapped_to_distinct_values(ids: list[str], sent: list[str]) -> None:
    msgs = [
        UserMessage("x"),
        AssistantMessage(
            [ToolUseBlock(id=i, name="get_weather", input={"city": c}) for i, c in zip(ids, "PR", strict=True)]
        ),
        ToolResultMessage(
            [
                ToolResultBlock(id=i, name="get_weather", output=o, state="success")
                for i, o in zip(ids, "ab", strict=True)
            ]
        ),
    ]
    r = formatted("anthropic", msgs, tools=TOOLS)
    assert [c["id"] for c in r.body["messages"][1]["content"]] == sent
    assert [c["tool_use_id"] for c in r.body["messages"][2]["content"]] == sent
    assert rules(r) == [(f"/1/content/{ids.index('a.b')}", "tool-id-mapped")]


@pytest.mark.parametrize(
    ("cid", "as_is"),
    [
        ("call_1", True),
        ("_x", True),
        ("9ab", True),  # (not an identifier: the pattern's way)
        ("toolu-01x", True),
        ("ü_x", False),  # an identifier, not ASCII
        ("ａb", False),  # a fullwidth letter
        ("a b", False),
        ("a.b", False),
        ("x\n", False),
    ],
)
def test_anthropic_a_tool_call_id_is_sent_as_it_is_only_when_of_its_characters(cid: str, as_is: bool) -> None:
    msgs = [
        UserMessage("x"),
        AssistantMessage([ToolUseBlock(id=cid, name="get_weather", input={})]),
        ToolResultMessage([ToolResultBlock(id=cid, name="get_weather", output="a", state="success")]),
    ]
    r = formatted("anthropic", msgs, tools=TOOLS)
    sent = r.body["messages"][1]["content"][0]["id"]
    assert r.body["messages"][2]["content"][0]["tool_use_id"] == sent
    assert (sent == cid) is as_is
    assert rules(r) == ([] if as_is else [("/1/content/0", "tool-id-mapped")])


@pytest.mark.parametrize("state", ["error", "denied", "interrupted", "success"])
def test_anthropic_a_multi_part_error_result_is_marked_is_error(state: str) -> None:
    """A failed result of several blocks (text and an image: not the one-text fast path) is sent whole with
    is_error: true; a successful one without it."""
    output: list[ContentBlock] = [
        TextBlock(text="boom"),
        ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
    ]
    msgs = [
        UserMessage("x"),
        AssistantMessage([ToolUseBlock(id="c1", name="get_weather", input={"city": "Oslo"})]),
        ToolResultMessage(ToolResultBlock(id="c1", name="get_weather", output=output, state=state)),
    ]
    r = formatted("anthropic", msgs, tools=TOOLS)
    expected: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [
            {"type": "text", "text": "boom"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }
    if state != "success":
        expected["is_error"] = True
    assert r.body["messages"][2]["content"] == [expected]
    assert rules(r) == []
