"""The openai formatter (``agentmsg.providers.openai.format_request``): OpenAI Chat Completions and the compatible
family (DeepSeek, DashScope's compatible mode, Azure, Groq, Moonshot, Snowflake, Google's compatible endpoint,
OpenRouter). The body's layout, the provider's rules and the diagnostics; every body goes through its oracle
(``tests.oracles``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
    DataBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
    VideoBlock,
)
from agentmsg.providers import anthropic, get, openai
from tests._support.providers import (
    _PCM,
    FIX,
    PNG,
    TOOLS,
    _assistant,
    _audio_response,
    _signed_call,
    reduce_ok,
    rules,
    sse,
    tool_loop,
)
from tests.oracles import formatted


def test_openai_formatter_sends_an_audio_replys_transcript_and_says_its_audio() -> None:
    """Sent back, the transcript is the assistant's content; the audio, which an assistant turn cannot carry, is
    its label, said (media-unsupported), not dropped silently."""
    msg = reduce_ok(openai.response_events(_audio_response(_PCM)))
    req = openai.format_request([agentmsg.UserMessage("Hi"), msg, agentmsg.UserMessage("Again")])
    assistant = req.body["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"].startswith("Hello there\n")
    assert [d.rule for d in req.diagnostics] == ["media-unsupported"]


def test_openai_layout() -> None:
    r = formatted("openai", tool_loop(), tools=TOOLS, tool_choice={"name": "get_weather"}, max_tokens=100)
    m = r.body["messages"]
    assert [x["role"] for x in m] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert m[2]["content"] is None  # tool-only assistant turn
    assert [c["id"] for c in m[2]["tool_calls"]] == ["call_1", "call_2"]
    assert m[2]["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
    assert m[3] == {"role": "tool", "content": "Sunny", "tool_call_id": "call_1"}
    assert r.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert r.body["max_completion_tokens"] == 100
    assert rules(r) == [("/2/content/0", "thinking-dropped")]
    assert r.path == "/chat/completions"


def test_openai_raw_arguments_replayed_when_they_match() -> None:
    raw = '{"city": "Paris"}'
    msgs = [UserMessage("x"), AssistantMessage([ToolUseBlock(id="c", name="f", input={"city": "Paris"}, content=raw)])]
    r = formatted("openai", msgs, options={"repair": True})
    assert r.body["messages"][1]["tool_calls"][0]["function"]["arguments"] == raw
    broken = [UserMessage("x"), AssistantMessage([ToolUseBlock(id="c", name="f", input={}, content='{"city": ')])]
    r = formatted("openai", broken, options={"repair": True})
    assert r.body["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert ("/1/content/0", "tool-arguments-invalid") in rules(r)


def test_openai_name_sanitized() -> None:
    r = formatted("openai", [UserMessage("hi", name="Alice Smith!")])
    assert r.body["messages"][0]["name"] == "Alice_Smith_"
    assert rules(r) == [("/0/name", "name-sanitized")]


def test_openai_tool_result_media_fallback_after_the_batch() -> None:
    msgs = tool_loop()
    msgs[3] = ToolResultMessage(
        ToolResultBlock(
            id="call_1",
            name="get_weather",
            output=[TextBlock(text="Sunny"), ImageBlock(source=Base64Source(media_type="image/png", data=PNG))],
            state="success",
        )
    )
    r = formatted("openai", msgs, tools=TOOLS)
    m = r.body["messages"]
    assert [x["role"] for x in m] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assert m[3]["content"] == "Sunny\n[image: image/png]"
    assert m[5]["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert ("/3/content/0/output/1", "tool-result-media-fallback") in rules(r)


def test_openai_media_parts() -> None:
    msgs = [
        UserMessage(
            [
                TextBlock(text="look"),
                ImageBlock(source=URLSource(url="https://example.com/a.png")),
                AudioBlock(source=Base64Source(media_type="audio/wav", data="UklGRg==")),
                DataBlock(source=Base64Source(media_type="application/pdf", data="JVBERg=="), name="r.pdf"),
                VideoBlock(source=URLSource(url="https://example.com/v.mp4")),
                AudioBlock(source=Base64Source(media_type="audio/ogg", data="T2dn")),
            ]
        )
    ]
    r = formatted("openai", msgs)
    parts = r.body["messages"][0]["content"]
    assert parts[2] == {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    assert parts[3] == {
        "type": "file",
        "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
    }
    assert parts[4] == {"type": "text", "text": "[video: https://example.com/v.mp4]"}
    assert rules(r) == [("/0/content/4", "media-unsupported"), ("/0/content/5", "media-unsupported")]


def test_openai_audio_url_needs_download() -> None:
    msgs = [UserMessage([AudioBlock(source=URLSource(url="https://example.com/a.mp3"))])]
    with pytest.raises(ValidationError) as exc:
        get("openai").format_request(msgs)
    assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/0/content/0", "media-download-refused")
    # DashScope's compatible mode takes the URL
    r = formatted("dashscope-compatible", msgs)
    assert r.body["messages"][0]["content"] == [
        {"type": "input_audio", "input_audio": {"data": "https://example.com/a.mp3", "format": "mp3"}}
    ]


def test_deepseek_reasoning_of_the_current_turn_only() -> None:
    msgs = [
        UserMessage("q1"),
        AssistantMessage([ThinkingBlock(thinking="old"), TextBlock(text="a1")]),
        UserMessage("q2"),
        AssistantMessage([ThinkingBlock(thinking="new"), ToolUseBlock(id="c", name="get_weather", input={})]),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="x", state="success")),
    ]
    r = formatted("deepseek", msgs, tools=TOOLS)
    m = r.body["messages"]
    assert "reasoning_content" not in m[1]
    assert m[3]["reasoning_content"] == "new"
    assert rules(r) == [("/1/content/0", "thinking-pruned")]


def test_dashscope_compatible_video_and_hints() -> None:
    msgs = [
        UserMessage(
            [
                ImageBlock(source=URLSource(url="https://e.com/a.jpg"), min_pixels=100, max_pixels=2000),
                VideoBlock(source=URLSource(url="https://e.com/v.mp4"), fps=2.0, max_frames=8),
            ]
        )
    ]
    r = formatted("dashscope-compatible", msgs, thinking_budget=500)
    parts = r.body["messages"][0]["content"]
    assert parts[0] == {
        "type": "image_url",
        "image_url": {"url": "https://e.com/a.jpg"},
        "min_pixels": 100,
        "max_pixels": 2000,
    }
    assert parts[1] == {"type": "video_url", "video_url": {"url": "https://e.com/v.mp4"}, "fps": 2.0}
    assert ("/0/content/1/maxFrames", "media-option-dropped") in rules(r)
    assert r.body["enable_thinking"] is True and r.body["thinking_budget"] == 500
    r = formatted("openai", msgs)
    assert ("/0/content/0/minPixels", "media-option-dropped") in rules(r)


def test_openai_required_choice_and_dashscope_fallback() -> None:
    assert formatted("openai", tool_loop(), tools=TOOLS, tool_choice="required").body["tool_choice"] == "required"
    r = formatted("dashscope-compatible", tool_loop(), tools=TOOLS, tool_choice="required")
    assert r.body["tool_choice"] == "auto"
    assert ("/tool_choice", "tool-choice-changed") in rules(r)


def test_openai_stream_options() -> None:
    r = formatted("openai", [UserMessage("hi")], stream=True)
    assert r.body["stream"] is True and r.body["stream_options"] == {"include_usage": True} and r.stream


def test_openai_unsupported_param_reported() -> None:
    r = formatted("openai", [UserMessage("hi")], top_k=5, temperature=0.1)
    assert "top_k" not in r.body and r.body["temperature"] == 0.1
    assert rules(r) == [("/params/top_k", "param-dropped")]


def test_openai_long_call_ids_mapped_alike() -> None:
    long_id = "toolu_" + "a" * 50
    msgs = [
        UserMessage("x"),
        AssistantMessage([ToolUseBlock(id=long_id, name="get_weather", input={})]),
        ToolResultMessage(ToolResultBlock(id=long_id, name="get_weather", output="ok", state="success")),
    ]
    r = formatted("openai", msgs, tools=TOOLS)
    sent = r.body["messages"][1]["tool_calls"][0]["id"]
    assert len(sent) == 40 and sent == r.body["messages"][2]["tool_call_id"]
    assert rules(r) == [("/1/content/0", "tool-id-mapped")]


def test_deepseek_keeps_the_reasoning_of_earlier_turns_that_called_tools() -> None:
    """DeepSeek's thinking mode requires the reasoning of a turn that called tools in every later request
    (it answers 400 without it): only the reasoning of earlier turns without tool calls is pruned."""
    msgs = [
        UserMessage("q1"),
        AssistantMessage([ThinkingBlock(thinking="t1"), ToolUseBlock(id="c", name="get_weather", input={})]),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="x", state="success")),
        AssistantMessage([ThinkingBlock(thinking="t2"), TextBlock(text="a1")]),
        UserMessage("q2"),
        AssistantMessage([ThinkingBlock(thinking="t3"), TextBlock(text="a2")]),
        UserMessage("q3"),
    ]
    r = formatted("deepseek", msgs, tools=TOOLS)
    got = [m.get("reasoning_content") for m in r.body["messages"] if m["role"] == "assistant"]
    assert got == ["t1", "t2", None]
    assert rules(r) == [("/5/content/0", "thinking-pruned")]


def test_openai_formatter_sends_a_custom_call_back_as_one() -> None:
    msg = openai.parse_response((FIX / "openai/chat_completion_custom_tool_call.json").read_bytes())
    sent = openai.format_request([UserMessage("Add four plus four."), msg]).body["messages"][1]
    assert sent["tool_calls"] == [
        {"id": "call_QpgJRI5C9DcjExMNU6lrJPcu", "type": "custom", "custom": {"name": "math_exp", "input": "4 + 4"}}
    ]
    # a compatible provider has no custom tools: a function call, its input not JSON said (lossy)
    r = openai.format_request([UserMessage("Add four plus four."), msg], variant="deepseek")
    assert r.body["messages"][1]["tool_calls"][0]["type"] == "function"
    assert ("/1/content/0", "tool-arguments-invalid") in [(p.pointer, p.rule) for p in r.diagnostics]


def test_openai_custom_tool_definitions_and_choice_are_sent_as_openai_has_them() -> None:
    # the tool whose calls a conversation holds can be given too (it could not: a custom tool definition was
    # read as a function tool with no parameters)
    from tests.oracles import openai_errors

    msg = openai.parse_response((FIX / "openai/chat_completion_custom_tool_call.json").read_bytes())
    grammar = {"type": "grammar", "grammar": {"syntax": "lark", "definition": "start: /[0-9+ ]+/"}}
    tools: list[dict[str, Any]] = [
        {"type": "custom", "custom": {"name": "math_exp", "description": "Arithmetic", "format": grammar}},
        {"type": "custom", "name": "notes"},  # its keys beside the type
        {"name": "f", "parameters": {"type": "object", "properties": {}}},
    ]
    choice = {"type": "custom", "custom": {"name": "math_exp"}}
    r = openai.format_request([UserMessage("Add four plus four."), msg], tools=tools, tool_choice=choice, model="gpt-5")
    assert r.body["tools"][:2] == [
        {"type": "custom", "custom": {"name": "math_exp", "description": "Arithmetic", "format": grammar}},
        {"type": "custom", "custom": {"name": "notes"}},
    ]
    assert r.body["tools"][2]["type"] == "function"
    assert r.body["tool_choice"] == {"type": "custom", "custom": {"name": "math_exp"}}
    assert openai_errors(r.body) == [] and [d.rule for d in r.diagnostics] == ["tool-use-orphan"]  # (no result)
    # every other provider has no tool whose input is free text: refused, the tool named
    for provider in ("deepseek", "dashscope-compatible", "dashscope", "anthropic", "gemini"):
        with pytest.raises(agentmsg.ValidationError, match="no custom tools") as caught:
            agentmsg.providers.get(provider).format_request([UserMessage("q")], tools=tools)
        assert caught.value.problems[0].pointer == "/tools/0/custom", provider
    # a bad definition is said where it is
    for bad, pointer in (
        ({"type": "custom", "custom": "x"}, "/tools/0/custom"),
        ({"type": "custom", "custom": {"name": ""}}, "/tools/0/custom/name"),
        ({"type": "custom", "custom": {"name": "n", "format": "lark"}}, "/tools/0/custom/format"),
    ):
        with pytest.raises(agentmsg.ValidationError) as caught:
            openai.format_request([UserMessage("q")], tools=[bad])
        assert caught.value.problems[0].pointer == pointer


def test_openai_compatible_gemini_thought_signature_is_kept_and_sent_back() -> None:
    # Google's compat endpoint puts Gemini 3's call signature in extra_content (and refuses the next turn without
    # it): it was dropped silently
    whole = {
        "id": "r10",
        "model": "gemini-3-pro-preview",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "tool_calls": [_signed_call()]},
            }
        ],
    }
    chunk = {
        "id": "r9",
        "model": "gemini-3.1-flash-lite",
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "tool_calls": [_signed_call(0)]}, "finish_reason": None}
        ],
    }
    end = {"id": "r9", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    for events in (openai.response_events(whole), list(openai.parse_stream(sse(chunk, end)))):
        msg = reduce_ok(events)
        (call,) = msg.blocks("tool_use")
        assert call.metadata == {"thoughtSignature": "Eo4GCosG"} and call.input == {"q": "x"}
        r = openai.format_request([UserMessage("go"), msg], model="gemini-3-pro-preview")
        (sent,) = r.body["messages"][1]["tool_calls"]
        assert sent["extra_content"] == {"google": {"thought_signature": "Eo4GCosG"}}
        assert "signature-dropped" not in [p.rule for p in r.diagnostics]
        # OpenAI's own API (its request schema refuses the field) and DeepSeek have no place for it: said
        every: list[dict[str, Any]] = [{"model": "gpt-4o"}, {"model": "gemini-3-pro-preview", "variant": "deepseek"}]
        for options in every:
            r = openai.format_request([UserMessage("go"), msg], **options)
            assert "extra_content" not in r.body["messages"][1]["tool_calls"][0]
            assert "signature-dropped" in [p.rule for p in r.diagnostics]


def test_an_anthropic_refusal_is_no_openai_refusal() -> None:
    """Anthropic's refusal is its stop reason (agentmsg_finish_reason "refusal"): the text is what the model said
    before it was stopped, its answer, not a refusal message: it goes to OpenAI as content."""
    body = orjson.loads((FIX / "anthropic" / "message_refusal.json").read_bytes())
    body["content"] = [{"type": "text", "text": "Here is how to"}]
    reply = anthropic.parse_response(body)
    assert reply.metadata["agentmsg_refusal"] is True and reply.metadata["agentmsg_finish_reason"] == "refusal"
    entry, _ = _assistant("openai", reply)
    assert entry == {"role": "assistant", "content": "Here is how to"}


def test_a_message_of_text_only_marked_refused_by_hand_is_taken_for_one() -> None:
    """The mark and the message's last text block make a refusal, however the message was made (read from JSON, a
    message the caller built): the text before it stays content."""
    msg = agentmsg.AssistantMessage(["Here is half.", "No more."], metadata={"agentmsg_refusal": True})
    entry, _ = _assistant("openai", msg)
    assert entry == {"role": "assistant", "content": "Here is half.", "refusal": "No more."}
    unmarked = agentmsg.AssistantMessage(["No more."])
    assert _assistant("openai", unmarked)[0] == {"role": "assistant", "content": "No more."}


def test_openai_call_ids_at_the_length_limit_are_kept_and_one_over_is_mapped_to_its_value() -> None:
    """OpenAI takes tool-call ids of at most 40 characters: one of exactly 40 goes as it is; one of 41 is mapped to
    its first 29 characters, '_' and the first 10 hex digits of its SHA-256 (40 in all: docs/formatters.md, "Ids and
    names"), alike in the call and its result, said once."""
    at_limit, over = "c" * 40, "d" * 41
    msgs = [
        UserMessage("x"),
        AssistantMessage(
            [
                ToolUseBlock(id=at_limit, name="get_weather", input={"city": "Oslo"}),
                ToolUseBlock(id=over, name="get_weather", input={"city": "Rome"}),
            ]
        ),
        ToolResultMessage(
            [
                ToolResultBlock(id=at_limit, name="get_weather", output="cold", state="success"),
                ToolResultBlock(id=over, name="get_weather", output="warm", state="success"),
            ]
        ),
    ]
    mapped = "d" * 29 + "_" + hashlib.sha256(over.encode()).hexdigest()[:10]
    r = formatted("openai", msgs, tools=TOOLS)
    assert [c["id"] for c in r.body["messages"][1]["tool_calls"]] == [at_limit, mapped]
    assert [m["tool_call_id"] for m in r.body["messages"][2:]] == [at_limit, mapped]
    assert rules(r) == [("/1/content/1", "tool-id-mapped")]
    # results that answer no call (orphans, sent as they are) follow the same rule
    orphans = [UserMessage("x"), msgs[2], UserMessage("y")]
    r = formatted("openai", orphans, tools=TOOLS)
    assert [m["tool_call_id"] for m in r.body["messages"][1:3]] == [at_limit, mapped]
    assert rules(r) == [
        ("/1/content/0", "tool-result-orphan"),
        ("/1/content/1", "tool-result-orphan"),
        ("/1/content/1", "tool-id-mapped"),
    ]
    # DeepSeek and DashScope's compatible mode document no limit: both ids go as they are
    for provider in ("deepseek", "dashscope-compatible"):
        r = formatted(provider, msgs, tools=TOOLS)
        assert [c["id"] for c in r.body["messages"][1]["tool_calls"]] == [at_limit, over], provider
        assert rules(r) == [], provider


def test_deepseek_names_a_tool_results_media_and_adds_no_user_message() -> None:
    """DeepSeek takes text only: a tool result's image is named in the tool message and said media-unsupported; no
    user message follows (it could hold nothing but the same label, and as a part list, which DeepSeek's string
    contents are not). Found by the AgentScope oracle (tests/conformance/test_java_formatters.py). The OpenAI family
    that takes media sends them in a user message after the results."""
    msgs = [
        UserMessage("Take a screenshot."),
        AssistantMessage([ToolUseBlock(id="t1", name="get_weather", input={"city": "Oslo"})]),
        ToolResultMessage(
            ToolResultBlock(
                id="t1",
                name="get_weather",
                output=[TextBlock(text="Here."), ImageBlock(source=Base64Source(media_type="image/png", data=PNG))],
                state="success",
            )
        ),
        AssistantMessage("One pixel."),
    ]
    r = formatted("deepseek", msgs, tools=TOOLS)
    assert r.body["messages"][2:] == [
        {"role": "tool", "content": "Here.\n[image: image/png]", "tool_call_id": "t1"},
        {"role": "assistant", "content": "One pixel."},
    ]
    assert rules(r) == [("/2/content/0/output/1", "media-unsupported")]
    r = formatted("openai", msgs, tools=TOOLS)
    assert [m["role"] for m in r.body["messages"][2:]] == ["tool", "user", "assistant"]
    assert rules(r) == [("/2/content/0/output/1", "tool-result-media-fallback")]


@pytest.mark.parametrize(("variant", "rule"), [("nope", "enum"), (1, "type"), (["openai"], "type")])
def test_an_unknown_variant_is_a_validation_error_at_variant(variant: Any, rule: str) -> None:
    """openai.format_request(..., variant="nope") raised a bare ValueError (an unhashable variant a bare TypeError
    from the table's lookup): now a ValidationError (a ValueError still) at /variant listing the variants; a
    TypeError too for one that is no string. The module's other calls that take a variant say the same."""
    calls: list[Callable[[], object]] = [
        lambda: openai.format_request([agentmsg.UserMessage("q")], model="m", variant=variant),
        lambda: openai.response_events(b"{}", variant=variant),
        lambda: openai.StreamParser(variant=variant),
    ]
    for call in calls:
        with pytest.raises(agentmsg.ValidationError) as info:
            call()
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/variant", rule)]
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError) == (rule == "type")
