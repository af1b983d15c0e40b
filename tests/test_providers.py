"""Provider formatters: layout, provider rules and diagnostics. Every body goes through its oracle
(``tests.oracles.formatted``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
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
    VideoBlock,
)
from agentmsg.providers import NAMES, RULES, FormatOptions, get
from tests.oracles import formatted

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def rules(request: Any) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in request.diagnostics]


def tool_loop(signature: str = "EqQBCkYIBxgCKkA", provider: str = "anthropic") -> list[Any]:
    return [
        SystemMessage("You are helpful."),
        UserMessage("Weather in Paris and Rome?"),
        AssistantMessage(
            [
                ThinkingBlock(thinking="Two cities.", metadata={"signature": signature, "provider": provider}),
                ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
                ToolUseBlock(id="call_2", name="get_weather", input={"city": "Rome"}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="call_1", name="get_weather", output="Sunny", state="success")),
        ToolResultMessage(ToolResultBlock(id="call_2", name="get_weather", output="Rain", state="success")),
        AssistantMessage("Paris sunny, Rome rain."),
    ]


# ---- every provider -------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", NAMES)
def test_same_input_same_bytes(provider: str) -> None:
    a = formatted(provider, tool_loop(), tools=TOOLS, tool_choice="auto", temperature=0.5)
    b = formatted(provider, tool_loop(), tools=TOOLS, tool_choice="auto", temperature=0.5)
    assert a.body_bytes() == b.body_bytes()
    assert a.diagnostics == b.diagnostics


@pytest.mark.parametrize("provider", NAMES)
def test_every_rule_is_in_the_table(provider: str) -> None:
    msgs = [*tool_loop(), AssistantMessage([HintBlock(hint="Be brief."), TextBlock(text="ok")])]
    request = formatted(provider, msgs, tools=TOOLS)
    assert request.diagnostics, "the foreign/unsupported thinking or the hint is reported"
    for p in request.diagnostics:
        assert p.rule in RULES
        assert p.pointer.startswith("/")


@pytest.mark.parametrize("provider", NAMES)
def test_strict_raises_on_lossy_only(provider: str) -> None:
    lossless = [SystemMessage("Be brief."), UserMessage("hi"), AssistantMessage("hello")]
    assert formatted(provider, lossless, strict=True).diagnostics == ()
    lossy = [UserMessage("hi"), AssistantMessage([ThinkingBlock(thinking="x", metadata={"provider": "elsewhere"})])]
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request(lossy, strict=True)
    assert [(p.pointer, p.rule) for p in exc.value.problems] == [("/1/content/0", "thinking-dropped")]


@pytest.mark.parametrize("provider", NAMES)
def test_not_messages_is_a_validation_error(provider: str) -> None:
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request([UserMessage("hi"), {"role": "USER"}])  # type: ignore[list-item]
    assert exc.value.problems[0].pointer == "/1"
    with pytest.raises(ValidationError):
        get(provider).format_request("hi")  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request([UserMessage("hi")], tools=[{"description": "no name"}])
    assert exc.value.problems[0].pointer == "/tools/0/name"
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request([UserMessage("hi")], tool_choice="sometimes")
    assert exc.value.problems[0].pointer == "/tool_choice"


@pytest.mark.parametrize("provider", NAMES)
def test_a_mutated_message_is_a_validation_error(provider: str) -> None:
    msg = AssistantMessage("hi")
    msg.content.append(object())  # type: ignore[arg-type]  # mutation bypasses validation
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request([UserMessage("q"), msg])
    assert exc.value.problems[0].pointer == "/1"
    assert exc.value.problems[0].rule == "invalid-message"


@pytest.mark.parametrize("provider", NAMES)
def test_orphans_detected_and_repaired(provider: str) -> None:
    msgs = [
        UserMessage("go"),
        AssistantMessage([ToolUseBlock(id="call_a", name="get_weather", input={"city": "Oslo"})]),
        UserMessage("never mind"),
        ToolResultMessage(ToolResultBlock(id="call_zzz", name="get_weather", output="late", state="success")),
        AssistantMessage("ok"),
    ]
    plain = get(provider).format_request(msgs, tools=TOOLS)
    assert ("/1/content/0", "tool-use-orphan") in rules(plain)
    assert ("/3/content/0", "tool-result-orphan") in rules(plain)
    with pytest.raises(ValidationError):
        get(provider).format_request(msgs, tools=TOOLS, strict=True)
    repaired = formatted(provider, msgs, tools=TOOLS, options={"repair": True})
    assert ("/1/content/0", "tool-use-repaired") in rules(repaired)
    assert ("/3/content/0", "tool-result-dropped") in rules(repaired)
    text = json.dumps(repaired.body)
    assert "call_zzz" not in text and "not answered" in text


@pytest.mark.parametrize("provider", NAMES)
def test_conversation_ending_in_calls_is_orphaned(provider: str) -> None:
    msgs = [UserMessage("go"), AssistantMessage([ToolUseBlock(id="c1", name="get_weather", input={})])]
    assert ("/1/content/0", "tool-use-orphan") in rules(get(provider).format_request(msgs))
    repaired = formatted(provider, msgs, options=FormatOptions(repair=True))
    assert "not answered" in json.dumps(repaired.body)


# ---- OpenAI family --------------------------------------------------------------------------------


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


# ---- Anthropic ------------------------------------------------------------------------------------


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
    assert rules(r) == [("/1/content/1", "thinking-moved"), ("/1/content/2", "thinking-moved")]
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
        ("/2", "trailing-whitespace-stripped"),
    ]


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
    assert r.body["stop_sequences"] == ["END"]


# ---- Gemini ---------------------------------------------------------------------------------------


def test_gemini_layout() -> None:
    msgs = tool_loop(signature="c2ln", provider="gemini")
    msgs[2].content[1].metadata["thoughtSignature"] = "Q2lR"
    r = formatted("gemini", msgs, tools=TOOLS, tool_choice={"name": "get_weather"}, model="gemini-3-pro", max_tokens=64)
    b = r.body
    assert "model" not in b and r.model == "gemini-3-pro"
    assert r.path == "/v1beta/models/gemini-3-pro:generateContent"
    assert b["systemInstruction"] == {"parts": [{"text": "You are helpful."}]}
    assert [c["role"] for c in b["contents"]] == ["user", "model", "user", "model"]
    model = b["contents"][1]["parts"]
    assert model[0] == {"text": "Two cities.", "thought": True, "thoughtSignature": "c2ln"}
    assert model[1] == {
        "functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": "Q2lR",
    }
    responses = b["contents"][2]["parts"]
    assert [p["functionResponse"]["response"] for p in responses] == [{"output": "Sunny"}, {"output": "Rain"}]
    assert b["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}
    assert b["generationConfig"] == {"maxOutputTokens": 64}
    assert rules(r) == [("/4", "turns-merged")]
    assert formatted("gemini", msgs, stream=True).path.endswith(":streamGenerateContent?alt=sse")


def test_gemini_signatures_policy() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                ToolUseBlock(
                    id="a", name="f", input={}, metadata={"thoughtSignature": "T1BFTkFJ", "provider": "openai"}
                ),
                ToolUseBlock(id="b", name="f", input={}),
            ]
        ),
        ToolResultMessage(
            [
                ToolResultBlock(id="a", name="f", output=[], state="success"),
                ToolResultBlock(id="b", name="f", output="x", state="denied"),
            ]
        ),
    ]
    r = formatted("gemini", msgs)
    parts = r.body["contents"][1]["parts"]
    assert all("thoughtSignature" not in p for p in parts)
    assert rules(r) == [("/1/content/0", "signature-dropped"), ("/2", "turns-merged")] or (
        "/1/content/0",
        "signature-dropped",
    ) in rules(r)
    assert r.body["contents"][2]["parts"][1]["functionResponse"]["response"] == {"error": "x"}
    r = formatted("gemini", msgs, options={"missing_thought_signature": "skip"})
    assert [p["thoughtSignature"] for p in r.body["contents"][1]["parts"]] == ["skip_thought_signature_validator"] * 2
    assert ("/1/content/1", "signature-added") in rules(r)
    # "auto" (the default): the placeholder for Gemini 3, which refuses a current call without a signature
    r = formatted("gemini", msgs, model="gemini-3-pro-preview")
    assert [p["thoughtSignature"] for p in r.body["contents"][1]["parts"]] == ["skip_thought_signature_validator"] * 2
    assert ("/1/content/1", "signature-added") in rules(r)


def test_gemini_no_empty_parts_and_media() -> None:
    msgs = [
        UserMessage([TextBlock(text=""), ImageBlock(source=URLSource(url="https://e.com/x.jpg"))]),
        AssistantMessage([TextBlock(text="")]),
        UserMessage([VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA"), fps=1.5)]),
        AssistantMessage([ToolUseBlock(id="t", name="shot", input={})]),
        ToolResultMessage(
            ToolResultBlock(
                id="t",
                name="shot",
                output=[ImageBlock(source=Base64Source(media_type="image/png", data=PNG))],
                state="success",
            )
        ),
    ]
    r = formatted("gemini", msgs)
    contents = r.body["contents"]
    # the empty assistant turn is left out, so the two user turns are one
    assert contents[0]["parts"] == [
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://e.com/x.jpg"}},
        {"inlineData": {"mimeType": "video/mp4", "data": "AAAA"}, "videoMetadata": {"fps": 1.5}},
    ]
    assert ("/2", "turns-merged") in rules(r)
    fr = contents[-1]["parts"][0]["functionResponse"]
    assert fr["parts"] == [{"inlineData": {"mimeType": "image/png", "data": PNG}}]
    assert ("/1", "empty-message-dropped") in rules(r)
    for content in contents:
        assert content["parts"]


def test_gemini_schema_subset() -> None:
    tools = [
        {
            "name": "search",
            "parameters": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "q": {"type": "string", "minLength": 1},
                    "mode": {"const": "fast"},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                    "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                    "choice": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                },
                "required": ["q"],
                "additionalProperties": False,
                "$defs": {"tag": {"type": "string", "enum": ["a", "b"]}},
            },
        }
    ]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    params = r.body["tools"][0]["functionDeclarations"][0]["parameters"]
    assert params["properties"]["tags"]["items"] == {"type": "STRING", "enum": ["a", "b"]}
    assert params["properties"]["mode"] == {"enum": ["fast"]}
    assert params["properties"]["limit"] == {"type": "INTEGER", "nullable": True}
    assert "additionalProperties" not in params and "$defs" not in params
    got = rules(r)
    for pointer, rule in [
        ("/tools/0/parameters/$schema", "schema-keyword-dropped"),
        ("/tools/0/parameters/additionalProperties", "schema-keyword-dropped"),
        ("/tools/0/parameters/properties/limit/exclusiveMinimum", "schema-keyword-dropped"),
        ("/tools/0/parameters/properties/mode/const", "schema-keyword-converted"),
        ("/tools/0/parameters/properties/choice/oneOf", "schema-keyword-converted"),
        ("/tools/0/parameters/properties/tags/items/$ref", "schema-keyword-converted"),
    ]:
        assert (pointer, rule) in got


def test_gemini_recursive_ref_is_reported_not_looped() -> None:
    tools = [
        {
            "name": "tree",
            "parameters": {
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/node"}},
                "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
            },
        }
    ]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    assert ("/tools/0/parameters/properties/node/properties/child/$ref", "schema-keyword-dropped") in rules(r)


# ---- DashScope native -----------------------------------------------------------------------------


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


# ---- multi-agent ----------------------------------------------------------------------------------


def debate() -> list[Any]:
    return [
        SystemMessage("You are Bob."),
        UserMessage("Topic?", name="moderator"),
        AssistantMessage("Yes.", name="Alice"),
        AssistantMessage([ToolUseBlock(id="c", name="get_weather", input={"city": "Oslo"})], name="Bob"),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="cold", state="success"), name="Bob"),
        AssistantMessage("It is cold.", name="Bob"),
        AssistantMessage("No.", name="Alice"),
    ]


@pytest.mark.parametrize("provider", NAMES)
def test_multi_agent_prefix(provider: str) -> None:
    r = formatted(provider, debate(), multi_agent=True, agent_name="Bob", tools=TOOLS)
    text = json.dumps(r.body)
    assert "[Alice]: Yes." in text and "[moderator]: Topic?" in text and "[Alice]: No." in text
    assert "[Bob]" not in text  # the current agent keeps its assistant turns
    assert "It is cold." in text


@pytest.mark.parametrize("provider", NAMES)
def test_multi_agent_history(provider: str) -> None:
    r = formatted(
        provider, debate(), multi_agent=True, agent_name="Bob", tools=TOOLS, options={"multi_agent_layout": "history"}
    )
    text = json.dumps(r.body)
    assert "<history>\\nmoderator: Topic?\\nAlice: Yes.\\n</history>" in text
    assert "# Conversation History" in text and text.count("# Conversation History") == 1
    assert "<history>\\nAlice: No.\\n</history>" in text


def test_multi_agent_without_agent_name_makes_every_speaker_a_user_turn() -> None:
    msgs = [UserMessage("hi", name="a"), AssistantMessage("yo", name="b")]
    r = formatted("anthropic", msgs, multi_agent=True)
    assert [m["role"] for m in r.body["messages"]] == ["user"]
    assert r.body["messages"][0]["content"] == [
        {"type": "text", "text": "[a]: hi"},
        {"type": "text", "text": "[b]: yo"},
    ]


# ---- hints ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", NAMES)
def test_hint_after_the_tool_results(provider: str) -> None:
    msgs = tool_loop()
    msgs[2].content.insert(0, HintBlock(hint="Use Celsius.", source="system"))
    r = formatted(provider, msgs, tools=TOOLS)
    assert ("/2/content/0", "hint-placed") in rules(r)
    text = json.dumps(r.body)
    assert text.index("Use Celsius.") > text.index("Rain")  # after the last tool result


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


def test_a_gemini_call_signature_sent_elsewhere_is_said() -> None:
    """A function call's Gemini thoughtSignature has no field at any other provider: signature-dropped."""
    call = ToolUseBlock(id="c", name="get_weather", input={}, metadata={"thoughtSignature": "c2ln"})
    msgs = [
        UserMessage("q"),
        AssistantMessage([call]),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="x", state="success")),
    ]
    for provider in ("openai", "deepseek", "dashscope-compatible", "anthropic", "dashscope"):
        assert ("/1/content/0", "signature-dropped") in rules(formatted(provider, msgs, tools=TOOLS)), provider


def test_gemini_nested_snake_case_args_go_as_they_came() -> None:
    """A call's arguments are the caller's own JSON: snake_case keys at any depth (in an object inside a
    list, say, as Gemini itself returned them in recorded replies) go back as they came, and the oracle
    takes them (it took them only at the top level of args and rejected those replies' bodies)."""
    args = {"steps": [{"step_number": 1, "depends_on": []}], "level": {"level_type": "ground"}}
    msgs = [
        UserMessage("plan"),
        AssistantMessage([ToolUseBlock(id="call_1", name="plan", input=args)]),
        ToolResultMessage(ToolResultBlock(id="call_1", name="plan", output="done", state="success")),
    ]
    r = formatted("gemini", msgs)
    assert r.body["contents"][1]["parts"][0]["functionCall"]["args"] == args


def test_gemini_model_path_tuned_models_and_quoting() -> None:
    """A tuned model is its own resource (tunedModels/..., as google-genai names it; it became
    models/tunedModels/...), and a name's URL characters are quoted (a ? or # cut the path there)."""
    msgs = [UserMessage("hi")]
    tuned = formatted("gemini", msgs, model="tunedModels/my-model-7")
    assert tuned.path == "/v1beta/tunedModels/my-model-7:generateContent"
    assert formatted("gemini", msgs, model="models/gemini-2.5-flash").path == (
        "/v1beta/models/gemini-2.5-flash:generateContent"
    )
    odd = formatted("gemini", msgs, model="a?b#c d", stream=True)
    assert odd.path == "/v1beta/models/a%3Fb%23c%20d:streamGenerateContent?alt=sse"
