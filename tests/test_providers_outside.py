"""Shapes found in recordings outside the project (other projects' cassettes, vendors' docs): provider
extensions and encodings the parsers first missed, each read (or said) as the official SDKs read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import UserMessage, reduce_events
from agentmsg.cli import main
from agentmsg.providers import anthropic, dashscope, gemini, openai
from tests.test_providers_odd import reduce_ok, said, sse

FIX = Path(__file__).parent / "fixtures" / "providers"
OUTSIDE = Path(__file__).parent / "fixtures" / "outside"


# ---- OpenAI custom tool calls (GPT-5 custom / grammar tools) -----------------------------------------------


def _custom_chunk(tool_call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    delta = {"tool_calls": [tool_call]} if tool_call else {}
    return {"id": "chatcmpl-c1", "model": "gpt-5", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


CUSTOM_STREAM = sse(
    _custom_chunk({"index": 0, "id": "call_c1", "type": "custom", "custom": {"name": "math_exp", "input": ""}}),
    _custom_chunk({"index": 0, "custom": {"input": "4 + "}}),
    _custom_chunk({"index": 0, "custom": {"input": "4"}}),
    _custom_chunk({}, "tool_calls"),
)


def test_openai_custom_tool_call_keeps_its_name_and_free_text_input() -> None:
    # recorded (dd-trace-py cassette, gpt-5): type "custom", custom.name and custom.input; it read as a call with
    # name "" and input {}, said "ended without a name", the name and the text lost
    whole = openai.response_events((FIX / "openai/chat_completion_custom_tool_call.json").read_bytes())
    streamed = list(openai.parse_stream(CUSTOM_STREAM))
    for events, call_id in ((whole, "call_QpgJRI5C9DcjExMNU6lrJPcu"), (streamed, "call_c1")):
        assert said(events) == []  # no argumentsError, no "incomplete": free text is not JSON arguments
        msg = reduce_ok(events)
        (call,) = msg.blocks("tool_use")
        assert (call.id, call.name, call.input, call.content) == (call_id, "math_exp", {}, "4 + 4")
        assert call.metadata == {"toolType": "custom"}
        assert msg.generate_reason == "TOOL_CALLS"


def test_openai_custom_tool_call_free_text_that_is_json_is_not_read_as_arguments() -> None:
    body = sse(
        _custom_chunk({"index": 0, "id": "c", "type": "custom", "custom": {"name": "sql", "input": '{"a": 1}'}}),
        _custom_chunk({}, "tool_calls"),
    )
    (call,) = reduce_ok(list(openai.parse_stream(body))).blocks("tool_use")
    assert (call.input, call.content, call.metadata) == ({}, '{"a": 1}', {"toolType": "custom"})


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
    tools = [
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


# ---- Gemini enums as numbers (enum-encoding=int: the Go SDKs, the Vertex AI SDK's REST transport) -------------


def _gem(cand: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"candidates": [cand], "modelVersion": "gemini-2.0-flash", "responseId": "r", **extra}


def test_gemini_integer_finish_reason_ends_the_reply_as_its_name_does() -> None:
    # recorded (langchaingo, generativelanguage): finishReason 1 was dropped, so the stream read as cut (INTERRUPTED)
    events = list(gemini.parse_stream((OUTSIDE / "gemini/stream_enum_int_array.json").read_bytes()))
    assert said(events) == [] and not [e for e in events if e.get("name") == "agentmsg.error"]
    msg = reduce_ok(events)
    assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "STOP"
    assert msg.generate_reason == "MODEL_STOP" and msg.text_content.startswith("Clementine")
    # recorded (Vertex AI): finishReason 2 was dropped silently
    whole = gemini.response_events((OUTSIDE / "gemini/vertex_enum_int_max_tokens.json").read_bytes())
    assert reduce_ok(whole).to_dict()["metadata"]["agentmsg_finish_reason"] == "MAX_TOKENS"


def test_gemini_integer_enums_by_their_proto_numbers() -> None:
    for number, name in enumerate(("FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER")):
        events = gemini.response_events(_gem({"content": {"parts": [{"text": "x"}]}, "finishReason": number}))
        assert said(events) == [] and said(events, "agentmsg.not-kept") == []
        assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == name
    # a call and STOP as a number: TOOL_CALLS, as with the name
    call = {"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}, "finishReason": 1}
    assert reduce_ok(list(gemini.parse_stream(sse(_gem(call), done=False)))).generate_reason == "TOOL_CALLS"
    # a blocked prompt: blockReason 1 is SAFETY (it read as finish reason "1")
    blocked = {"promptFeedback": {"blockReason": 1}, "usageMetadata": {"promptTokenCount": 4}}
    for events in (gemini.response_events(blocked), list(gemini.parse_stream(sse(blocked, done=False)))):
        assert said(events) == []
        assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == "SAFETY"


def test_gemini_integer_enum_the_two_apis_name_differently_is_kept_and_said() -> None:
    # 7 is BLOCKLIST on the Gemini API, PROHIBITED_CONTENT on Vertex AI: a stop all the same (not a cut reply)
    body = sse(_gem({"content": {"parts": [{"text": "x"}]}}), _gem({"finishReason": 7}), done=False)
    for events in (list(gemini.parse_stream(body)), gemini.response_events(_gem({"finishReason": 7}))):
        assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]
        msg = reduce_ok(events)
        assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "7"
        assert msg.generate_reason == "MODEL_STOP"
    # a finish reason of another type is said, no longer dropped silently
    assert said(gemini.response_events(_gem({"content": {"parts": [{"text": "x"}]}, "finishReason": [1]}))) == ["type"]
    # a block reason of another type is said and left out, as a finish reason is (it was made text: "[1]", "True")
    for bad in ([1], {"a": 1}, 1.5, True):
        blocked = {"promptFeedback": {"blockReason": bad}}
        for events in (gemini.response_events(blocked), list(gemini.parse_stream(sse(blocked, done=False)))):
            assert said(events) == ["type"]
            assert "agentmsg_finish_reason" not in reduce_events(events)[0].to_dict()["metadata"]


# ---- Gemini 3 thought signatures through Google's OpenAI-compatible endpoint ----------------------------------


def _signed_call(index: int | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {
        "extra_content": {"google": {"thought_signature": "Eo4GCosG"}},
        "function": {"arguments": '{"q":"x"}', "name": "task"},
        "id": "FL1tqiJ9",
        "type": "function",
    }
    if index is not None:
        call["index"] = index
    return call


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
        for options in ({"model": "gpt-4o"}, {"model": "gemini-3-pro-preview", "variant": "deepseek"}):
            r = openai.format_request([UserMessage("go"), msg], **options)
            assert "extra_content" not in r.body["messages"][1]["tool_calls"][0]
            assert "signature-dropped" in [p.rule for p in r.diagnostics]


def test_openai_compatible_empty_thought_signature_hides_no_signature() -> None:
    # an empty thought_signature beside extra_content hid the signature there: dropped silently (the next turn,
    # sent without it, is refused by Google's endpoint)
    def reply(**fields: Any) -> dict[str, Any]:
        call = {**_signed_call(0), **fields}
        delta = {"role": "assistant", "tool_calls": [call]}
        return {"id": "r9", "model": "gemini-3-pro-preview", "choices": [
            {"index": 0, "delta": delta, "message": delta, "finish_reason": "tool_calls"}
        ]}  # fmt: skip

    for fields in ({"thought_signature": ""}, {"function": {**_signed_call()["function"], "thought_signature": ""}}):
        for events in (openai.response_events(reply(**fields)), list(openai.parse_stream(sse(reply(**fields))))):
            assert said(events) == []
            (call,) = reduce_ok(events).blocks("tool_use")
            assert call.metadata == {"thoughtSignature": "Eo4GCosG"}
    # two that differ: the first kept, the other said; an extra_content that is no object is said
    events = openai.response_events(reply(thought_signature="Other"))
    assert said(events) == ["duplicate"]
    assert reduce_ok(events).blocks("tool_use")[0].metadata == {"thoughtSignature": "Other"}
    for extra in ("Eo4GCosG", {"google": "Eo4GCosG"}):
        events = openai.response_events(reply(extra_content=extra))
        assert said(events) == ["type"] and not reduce_ok(events).blocks("tool_use")[0].metadata


def test_a_thought_signature_a_later_fragment_changes_is_said_and_the_first_kept() -> None:
    # a call's later fragment (before its first argument text, while the call waits) with another signature replaced
    # the first, silently; after the call started it was dropped, silently. The same one again is no news.
    def frag(signature: str, function: dict[str, Any], **fields: Any) -> dict[str, Any]:
        call = {"index": 0, "function": function, "extra_content": {"google": {"thought_signature": signature}}}
        return {"id": "r9", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{**call, **fields}]}}]}

    end = {"id": "r9", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    for first_args, later_args in ((None, "{}"), ("{", "}")):  # the later fragment before the call starts, or after
        for second, said_rules in (("Eo4GCosG", []), ("T3RoZXI=", ["duplicate"])):
            function = {"name": "task"} if first_args is None else {"name": "task", "arguments": first_args}
            first = frag("Eo4GCosG", function, id="c1", type="function")
            events = list(openai.parse_stream(sse(first, frag(second, {"arguments": later_args}), end)))
            assert said(events) == said_rules
            (call,) = reduce_ok(events).blocks("tool_use")
            assert (call.name, call.input, call.metadata) == ("task", {}, {"thoughtSignature": "Eo4GCosG"})


# ---- images the model made, through OpenRouter / Vercel AI Gateway ------------------------------------------


PNG = "iVBORw0KGgo="


def test_openai_compatible_images_are_image_blocks() -> None:
    # message.images / delta.images (documented by OpenRouter and Vercel AI Gateway): dropped silently
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}, "index": 0}
    whole = {
        "id": "gen-2",
        "model": "google/gemini-2.5-flash-image",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Here is your image.", "images": [image]},
            }
        ],
    }
    first = {"id": "gen-1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Here is it."}}]}
    last = {
        "id": "gen-1",
        "choices": [{"index": 0, "delta": {"content": "", "images": [image]}, "finish_reason": "stop"}],
    }
    for events in (openai.response_events(whole), list(openai.parse_stream(sse(first, last)))):
        assert said(events) == [] and said(events, "agentmsg.not-kept") == []
        d = reduce_ok(events).to_dict()
        assert [b["type"] for b in d["content"]] == ["text", "image"]
        assert d["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}


def test_openai_compatible_image_url_content_part_is_an_image_block() -> None:
    # it was said "not kept (the message has no place for them)", though the message has image blocks
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "https://x.test/i.png"}}]
    events = openai.response_events(
        {"id": "r", "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": parts}}]}
    )
    assert said(events, "agentmsg.not-kept") == []
    d = reduce_ok(events).to_dict()
    assert d["content"][1] == {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}}
    # an image that cannot be read is said, not dropped silently
    bad = {"type": "image_url", "image_url": {"url": "data:image/png;base64,not base64!"}}
    events = openai.response_events(
        {"id": "r", "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "a", "images": [bad]}}]}
    )
    assert said(events) == ["type"]


# ---- Moonshot / Kimi: the usage inside the last chunk's choice --------------------------------------------------


def test_moonshot_usage_in_the_choice_is_read() -> None:
    first = {"id": "cmpl-1", "model": "moonshot-v1-8k", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    usage = {"prompt_tokens": 19, "completion_tokens": 13, "total_tokens": 32, "cached_tokens": 10}
    last = {"id": "cmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}]}
    msg = reduce_ok(list(openai.parse_stream(sse(first, last))))
    assert msg.to_dict()["usage"] == {"inputTokens": 19, "outputTokens": 13, "cachedTokens": 10, "totalTokens": 32}
    whole = {
        "id": "c",
        "choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop", "usage": usage}],
    }
    assert reduce_ok(openai.response_events(whole)).to_dict()["usage"]["inputTokens"] == 19
    # a top-level usage is the reply's (the choice's is not read over it)
    top = {**last, "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
    assert reduce_ok(list(openai.parse_stream(sse(first, top)))).to_dict()["usage"]["inputTokens"] == 1


# ---- an `error:` SSE line (GPUStack / llama-box) --------------------------------------------------------------


def test_an_error_field_line_is_the_providers_error() -> None:
    # the spec ignores the unknown field, so the provider's message was lost and the reply read as cut
    first = {"id": "chatcmpl-g1", "model": "qwen3", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    error = b'error: {"detail":"failed to decode","error":{"message":"failed to decode, try again"}}\n\n'
    for body in (sse(first, done=False) + error, sse(first, done=False)[:-1] + error):  # its own event, or not
        for chunks in ([body], [body[:k] for k in range(1, len(body) + 1)]):  # whole, and byte by byte
            parser = openai.StreamParser()
            events = [e for c in chunks for e in parser.feed(c[-1:] if len(chunks) > 1 else c)]
            events += parser.close()
            assert said(events) == ["sse"]
            errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
            assert [(e["type"], e["message"]) for e in errors] == [("provider_error", "failed to decode, try again")]
            msg = reduce_ok(events)
            assert msg.text_content == "Hel" and msg.generate_reason == "INTERRUPTED"
    # plain text after `error:` is the error's text; Gemini reads the line as its own error payload
    events = list(gemini.parse_stream(b'data: {"candidates": []}\n\nerror: {"error": {"message": "boom"}}\n\n'))
    assert [e["value"]["message"] for e in events if e.get("name") == "agentmsg.error"] == ["boom"]
    events = list(openai.parse_stream(sse(first, done=False) + b"error: upstream gone\n\n"))
    assert [e["value"]["message"] for e in events if e.get("name") == "agentmsg.error"] == ["upstream gone"]


def test_a_body_that_starts_with_an_error_field_line_is_sse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # an error before any data: the body was sniffed as JSON lines, "not JSON", the error lost and the reply cut
    error = b'error: {"error":{"message":"context too long"}}\n\n'
    for body in (error, b"\xef\xbb\xbf\n" + error, b"error: upstream gone\n\n"):
        for mod in (openai, gemini, anthropic, dashscope):
            for chunks in ([body], [body[k : k + 1] for k in range(len(body))]):
                events = list(mod.parse_stream(chunks))
                assert said(events) == ["sse"], (mod, body)
                errors = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.error"]
                assert errors == ["upstream gone" if b"gone" in body else "context too long"], (mod, body)
    # agentmsg parse (without --stream) reads it as the stream it is: exit 1 and the error, not exit 2 "not JSON"
    path = tmp_path / "e.sse"
    path.write_bytes(error)
    assert main(["parse", "--provider", "openai", str(path)]) == 1
    assert "context too long" in capsys.readouterr().err


# ---- payloads of no shape the parser knows: said once, as Anthropic's parser says them ------------------------


def test_payloads_of_no_known_shape_are_said_once() -> None:
    chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}
    # OpenAI: chunks wrapped ({"data": chunk}) were skipped silently: an empty message, exit 0
    events = list(openai.parse_stream(sse({"data": chunk}, {"data": chunk})))
    assert said(events) == ["type"]
    (message,) = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.problem"]
    assert message.startswith("2 payload(s)") and message.endswith("not an openai stream?")
    # beside real chunks: said too (without the question), the chunks read
    events = list(openai.parse_stream(sse({"ping": 1}, chunk)))
    assert said(events) == ["type"] and reduce_ok(events).text_content == "Hi"
    # a usage-only chunk, Azure's prompt filter chunk (choices []), an error: chunks, nothing said
    usage = {"id": "c", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    azure = {"id": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    assert said(list(openai.parse_stream(sse(azure, chunk, usage)))) == []
    # Gemini: a proxy's wrapper ({"data": response}); Code Assist's own envelope is read (the test below)
    gem = {"candidates": [{"content": {"parts": [{"text": "Hello"}]}, "finishReason": "STOP"}]}
    events = list(gemini.parse_stream(sse({"data": gem}, done=False)))
    assert said(events) == ["type"]
    # DashScope native
    events = list(
        dashscope.parse_stream(sse({"foo": {"output": {"text": "Hello", "finish_reason": "stop"}}}, done=False))
    )
    assert said(events) == ["type"]


def test_gemini_code_assist_envelope_is_read_whole_and_streamed() -> None:
    # The Code Assist API behind gemini-cli (a Google login) wraps each response: {"response": ..., "traceId": ...}.
    # It was skipped as a payload of no Gemini shape: the reply's text, call and usage lost ("not a stream?").
    first = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}],
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r-1",
    }
    last = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "lo"}, {"functionCall": {"name": "f", "args": {"a": 1}}}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r-1",
    }
    plain = reduce_ok(list(gemini.parse_stream(sse(first, last, done=False))))
    events = list(gemini.parse_stream(sse(*({"response": r, "traceId": "t-9"} for r in (first, last)), done=False)))
    wrapped = reduce_ok(events)
    assert said(events) == [] and said(events, "agentmsg.not_kept") == []
    assert wrapped.id == plain.id == "r-1" and wrapped.text_content == "Hello"
    assert [(c.name, c.input) for c in wrapped.blocks("tool_use")] == [("f", {"a": 1})]
    assert wrapped.usage is not None and wrapped.usage.output_tokens == 2
    # whole: one response, and a JSON array of them (streamGenerateContent without alt=sse)
    whole = gemini.parse_response({"response": last, "traceId": "t-9"})
    assert whole.text_content == "lo" and whole.generate_reason == gemini.parse_response(last).generate_reason
    arr = gemini.parse_response(orjson.dumps([{"response": first}, {"response": last}]))
    assert arr.text_content == "Hello"
    # an envelope holding no response shape is still no Gemini response
    with pytest.raises(agentmsg.ValidationError, match="candidates"):
        gemini.parse_response({"response": {"foo": 1}, "traceId": "t"})


# ---- DashScope Application API (dashscope.Application.call) and async tasks -----------------------------------


def test_dashscope_application_reasoning_and_usage_per_model() -> None:
    # output.thoughts (a deepseek-r1 app's reasoning) and usage.models[] were dropped silently (no thinking, usage null)
    events = dashscope.response_events((OUTSIDE / "dashscope/application_thoughts.json").read_bytes())
    assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]  # the retrieval's thoughts
    d = reduce_ok(events).to_dict()
    assert [b["type"] for b in d["content"]] == ["thinking", "text"]
    assert d["content"][0]["thinking"].startswith("好的，我现在需要总结")
    assert d["content"][1]["text"].startswith("《xUnit Test Patterns》")
    assert d["usage"] == {"inputTokens": 1129, "outputTokens": 1126, "totalTokens": 2255}
    # streamed: the usage per model, cumulative (the last wins)
    events = list(dashscope.parse_stream((OUTSIDE / "dashscope/application_stream_usage_models.sse").read_bytes()))
    assert said(events) == []
    assert reduce_ok(events).to_dict()["usage"] == {"inputTokens": 2304, "outputTokens": 244, "totalTokens": 2548}
    # several models: summed
    body = {"output": {"text": "x", "finish_reason": "stop"}, "usage": {"models": [
        {"model_id": "a", "input_tokens": 1, "output_tokens": 2}, {"model_id": "b", "input_tokens": 3, "output_tokens": 4}
    ]}, "request_id": "r"}  # fmt: skip
    assert reduce_ok(dashscope.response_events(body)).to_dict()["usage"]["inputTokens"] == 4


def test_dashscope_application_reasoning_in_an_output_of_no_text() -> None:
    # an output of thoughts with no text (nor choices) lost its reasoning silently: it read as no choice at all
    think = {
        "output": {"thoughts": [{"action_type": "reasoning", "thought": "hm"}], "session_id": "s"},
        "request_id": "r",
    }
    last = {"output": {"text": "x", "finish_reason": "stop", "session_id": "s"}, "request_id": "r"}
    for options in ({}, {"incremental": True}):
        events = list(dashscope.parse_stream(sse(think, last, done=False), **options))
        assert said(events) == []
        assert [(b.type, b.thinking if b.type == "thinking" else b.text) for b in reduce_ok(events).content] == [
            ("thinking", "hm"),
            ("text", "x"),
        ]
    assert [b.type for b in dashscope.parse_response(think).content] == ["thinking"]


def test_dashscope_application_thoughts_that_cannot_be_read_are_said() -> None:
    # a reasoning thought whose text is no string, an entry that is no object, thoughts that are no list: dropped
    # silently (the reasoning lost, nothing said); now each is said (type), what can be read kept
    def read(thoughts: Any) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        body = {"output": {"thoughts": thoughts, "text": "x", "finish_reason": "stop"}, "request_id": "r"}
        events = dashscope.response_events(body)
        problems = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
        blocks = [(b.type, b.thinking if b.type == "thinking" else b.text) for b in reduce_ok(events).content]
        return said(events), problems, blocks

    rules, problems, blocks = read([{"action_type": "reasoning", "thought": 5, "response": "hm"}])
    assert rules == ["type"] and "output.thoughts[].thought" in problems[0] and "number" in problems[0]
    assert blocks == [("thinking", "hm"), ("text", "x")]  # the response, which repeats the thought, is read
    rules, problems, blocks = read([{"action_type": "reasoning", "thought": {"text": "hm"}}])
    assert rules == ["type"] and "object" in problems[0] and blocks == [("text", "x")]
    rules, problems, blocks = read(["hm", {"action_type": "reasoning", "thought": "ok"}])
    assert rules == ["type"] and "an entry of output.thoughts" in problems[0]
    assert blocks == [("thinking", "ok"), ("text", "x")]
    rules, problems, blocks = read({"action_type": "reasoning", "thought": "hm"})
    assert rules == ["type"] and "output.thoughts is not a list" in problems[0] and blocks == [("text", "x")]
    # an output of thoughts alone (no text, no session id) is read too (it was no choice at all)
    only = {"output": {"thoughts": [{"action_type": "reasoning", "thought": "hm"}]}, "request_id": "r"}
    assert [(b.type, b.thinking) for b in dashscope.parse_response(only).content] == [("thinking", "hm")]


def test_dashscope_application_thoughts_beside_reasoning_content() -> None:
    # output.thoughts' reasoning was dropped unsaid when the choice had a reasoning_content: the same text is kept
    # once; a different one is said as not kept (the model's reasoning_content is the reply's reasoning)
    def reply(app: str, model: Any, text: str = "x") -> dict[str, Any]:
        message = {"role": "assistant", "reasoning_content": model, "content": text}
        output = {"thoughts": [{"action_type": "reasoning", "thought": app}], "choices": [
            {"message": message, "finish_reason": "stop" if text else "null"}
        ]}  # fmt: skip
        return {"output": output, "request_id": "r"}

    for body in (reply("hm", "hm"), sse(reply("h", "h", ""), reply("m", "m"), done=False)):
        events = dashscope.response_events(body) if isinstance(body, dict) else list(dashscope.parse_stream(body))
        assert said(events) == [] and said(events, "agentmsg.not-kept") == []
        assert [b.type for b in reduce_ok(events).content] == ["thinking", "text"]
        assert reduce_ok(events).content[0].thinking == "hm"
    events = dashscope.response_events(reply("the app's", "the model's"))
    assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
    assert "output.thoughts" in notes[0] and "reasoning_content" in notes[0]
    assert reduce_ok(events).content[0].thinking == "the model's"
    # a reasoning_content that is no text is said (it was dropped silently); the thoughts' reasoning is kept then
    events = dashscope.response_events(reply("hm", 7))
    assert said(events) == ["type"] and reduce_ok(events).content[0].thinking == "hm"


def test_dashscope_pending_task_is_not_a_reply() -> None:
    # an async task submission read as an empty assistant message, exit 0
    body = (OUTSIDE / "dashscope/task_pending.json").read_bytes()
    with pytest.raises(agentmsg.ValidationError) as exc:
        dashscope.response_events(body)
    assert exc.value.problems[0].rule == "shape" and "PENDING" in exc.value.problems[0].message
    # the CLI: exit 2, not a DashScope reply
    path = OUTSIDE / "dashscope/task_pending.json"
    assert main(["parse", "--provider", "dashscope", str(path)]) == 2


def test_dashscope_task_status_other_than_pending_is_no_empty_reply() -> None:
    # a FAILED task's code and message, and a SUCCEEDED (or UNKNOWN) task's status, read as an empty message (exit 0)
    failed = {"request_id": "q", "output": {"task_id": "t", "task_status": "FAILED", "code": "Bad", "message": "no"}}
    errors = [e["value"] for e in dashscope.response_events(failed) if e.get("name") == "agentmsg.error"]
    assert errors == [{"type": "Bad", "message": "no", "provider": "dashscope", "task_id": "t"}]
    assert reduce_ok(dashscope.response_events(failed)).generate_reason == "INTERRUPTED"
    results = {"results": [{"url": "https://example.com/a.png"}], "task_metrics": {"TOTAL": 1, "SUCCEEDED": 1}}
    for output in ({"task_status": "SUCCEEDED", **results}, {"task_status": "UNKNOWN"}, {"task_status": "FAILED"}):
        with pytest.raises(agentmsg.ValidationError) as exc:
            dashscope.response_events({"request_id": "q", "output": {"task_id": "t", **output}})
        assert exc.value.problems[0].rule == "shape" and output["task_status"] in exc.value.problems[0].message
    # task_metrics (the tasks' key) beside a reply's choices is said as not kept, as task_metric is
    body = {"output": {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], **results}}
    notes = [e["value"]["message"] for e in dashscope.response_events(body) if e.get("name") == "agentmsg.not-kept"]
    assert any("(task_metrics)" in n for n in notes)


# ---- DeepSeek: a generation the provider interrupted -----------------------------------------------------------


def test_deepseek_insufficient_system_resource_is_an_interrupted_reply() -> None:
    # documented: the generation was interrupted for want of resources; it read as a normal stop (MODEL_STOP)
    first = {"id": "d1", "model": "deepseek-chat", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    last = {"id": "d1", "choices": [{"index": 0, "delta": {}, "finish_reason": "insufficient_system_resource"}]}
    whole = {
        "id": "d2",
        "model": "deepseek-chat",
        "choices": [{"index": 0, "message": {"content": "Hel"}, "finish_reason": "insufficient_system_resource"}],
    }
    streamed = list(openai.parse_stream(sse(first, last), variant="deepseek"))
    for events in (streamed, openai.response_events(whole, variant="deepseek")):
        errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
        assert [e["code"] for e in errors] == ["insufficient_system_resource"]
        d = reduce_ok(events).to_dict()
        assert d["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
        assert d["metadata"]["agentmsg_finish_reason"] == "insufficient_system_resource"
        assert d["content"] == [{"type": "text", "text": "Hel"}]


def test_gemini_built_in_tool_call_and_response_parts_are_said_not_unknown() -> None:
    """Gemini's server-side tool parts (google-genai Part.tool_call / tool_response: a built-in tool, Google Search
    say, that the model called beside function calling; "the client is NOT expected to execute" it) are said as
    not kept, as executableCode is, streamed and whole: they were unknown part kinds (a problem each, exit 1). Their
    signature is kept in its place; text after them is a block of its own."""

    def resp(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"index": 0, "content": {"role": "model", "parts": list(parts)}}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "responseId": "r1", "modelVersion": "gemini-3-pro"}

    call = {
        "toolCall": {"id": "tc1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"queries": ["x"]}},
        "thoughtSignature": "c2ln",
    }
    answer = {"toolResponse": {"id": "tc1", "toolType": "GOOGLE_SEARCH_WEB", "response": {"results": []}}}
    chunks = [resp({"text": "Let me look."}), resp(call), resp(answer), resp({"text": "Found."}, finish="STOP")]
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(sse(*chunks, done=False)) + parser.close())
    assert parser.problems == []
    assert [(b.type, b.text if b.type == "text" else b.metadata["signature"]) for b in msg.content] == [
        ("text", "Let me look."),
        ("thinking", "c2ln"),
        ("text", "Found."),
    ]
    assert sorted(n.message.split(" (")[0] for n in parser.builder.not_kept_notes) == [
        "toolCall parts",
        "toolResponse parts",
    ]
    whole = resp(*[part for c in chunks for part in c["candidates"][0]["content"]["parts"]], finish="STOP")
    assert gemini.parse_response(whole).content == msg.content


def test_gemini_fields_given_as_null_are_absent() -> None:
    """A Gemini payload whose parts write every field, null where unset (a response re-serialised with pydantic's
    model_dump, as a proxy or a test built from google-genai's types writes it), reads as the same payload
    without the nulls, as google-genai reads it (proto3 JSON): "functionCall": null beside text made every text part
    a call (the text lost, each call's arguments written twice: '{"x":1}{}'); a partial argument's null fields
    beside its value are absent, while "nullValue": null alone is still a null."""
    nulls = dict.fromkeys(("text", "thought", "thoughtSignature", "functionCall", "inlineData", "executableCode"))

    def part(**given: Any) -> dict[str, Any]:
        return {**nulls, **given}

    def value(**given: Any) -> dict[str, Any]:
        return {**dict.fromkeys(("stringValue", "numberValue", "boolValue", "nullValue", "willContinue")), **given}

    def resp(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        cand = {"index": 0, "content": {"role": "model", "parts": list(parts)}, "finishReason": finish}
        return {"candidates": [cand], "responseId": "r1", "modelVersion": "gemini-3-pro", "usageMetadata": None}

    call = {"id": None, "name": "f", "args": {"x": 1}, "partialArgs": None, "willContinue": None}
    streamed = {
        "id": "c2",
        "name": "g",
        "args": None,
        "willContinue": True,
        "partialArgs": [value(jsonPath="$.s", stringValue="a")],
    }
    rest = [value(jsonPath="$.n", numberValue=3), {"jsonPath": "$.z", "nullValue": None}]
    chunks = [
        resp(part(text="Let me ", thought=True, thoughtSignature="c2ln"), part(text="check.")),
        resp(part(functionCall=call), part(functionCall=streamed)),
        resp(part(functionCall={"id": None, "name": None, "args": None, "partialArgs": rest, "willContinue": None})),
        resp(part(text=""), finish="STOP"),
    ]
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(sse(*chunks, done=False)) + parser.close())
    assert parser.problems == []
    assert [
        (b.type, b.thinking if b.type == "thinking" else b.text if b.type == "text" else b.input) for b in msg.content
    ] == [
        ("thinking", "Let me "),
        ("text", "check."),
        ("tool_use", {"x": 1}),
        ("tool_use", {"s": "a", "n": 3, "z": None}),
    ]


def test_gemini_proto_field_names_are_read_as_their_camel_case() -> None:
    """A Gemini response written with the proto's field names (finish_reason, usage_metadata, function_call,
    thought_signature, ...: what google-genai's own to_json_dict and model_dump write, and what proto3 JSON parsers
    accept beside lowerCamelCase) reads as the same response in lowerCamelCase, streamed and whole; a call's args
    keep their own keys. It read as text alone: calls and media were unknown parts, the usage and the finish reason
    lost (a cut stream, exit 1)."""
    chunks = [
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"text": "Plan", "thought": True, "thought_signature": "c2ln"}],
                    }
                }
            ],
            "response_id": "r1",
            "model_version": "gemini-3-pro",
        },
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"function_call": {"id": "c1", "name": "f", "args": {"city_name": "Paris"}}},
                            {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}},
                        ],
                    },
                    "finish_reason": "STOP",
                }
            ],
            "usage_metadata": {"prompt_token_count": 10, "candidates_token_count": 5, "thoughts_token_count": 2},
            "response_id": "r1",
            "model_version": "gemini-3-pro",
        },
    ]
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(sse(*chunks, done=False)) + parser.close())
    assert parser.problems == []
    assert [b.type for b in msg.content] == ["thinking", "tool_use", "data"]
    assert msg.content[0].metadata["signature"] == "c2ln"
    assert [(c.id, c.name, c.input) for c in msg.blocks("tool_use")] == [("c1", "f", {"city_name": "Paris"})]
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (10, 7)
    assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "STOP"
    whole = chunks[1] | {
        "candidates": [
            chunks[1]["candidates"][0]
            | {
                "content": {
                    "role": "model",
                    "parts": [
                        *chunks[0]["candidates"][0]["content"]["parts"],
                        *chunks[1]["candidates"][0]["content"]["parts"],
                    ],
                }
            }
        ]
    }
    assert gemini.parse_response(whole).content == msg.content


def test_gemini_a_field_given_both_ways_keeps_its_camel_case_value_and_says_the_other() -> None:
    """A field given both in lowerCamelCase and with its proto name (a proxy's mix; google-genai refuses it) keeps
    the lowerCamelCase value, the API's, and says the other when it differs (duplicate, once per object): the later
    key won, silently (a part's functionCall lost to its function_call, a finish reason replaced). A null says
    nothing (a null lowerCamelCase field takes the other); the same value both ways is no news. Only proto names are
    renamed: "text_" or "_x" is no field of the part's ("text_" replaced the part's text). A camelCase usage or
    function call with proto names inside is read field by field too (its counts were lost, unsaid)."""
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Plan", "thoughtSignature": "c2ln", "thought_signature": "c2ln"},
                        {"text": "hi", "text_": "bye"},
                        {"functionCall": {"name": "f", "args": {}}, "function_call": {"name": "g", "args": {"a": 1}}},
                        {"functionCall": {"name": "h", "args": {"my_key": 1}, "will_continue": False}},
                    ],
                },
                "finishReason": None,
                "finish_reason": "MAX_TOKENS",
                "safetyRatings": [],
                "safety_ratings": [{"category": "X"}],
            }
        ],
        "usageMetadata": {"promptTokenCount": 4, "candidates_token_count": 3},
        "modelVersion": "g",
        "model_version": "g",
    }
    body = sse(response, done=False)
    for events in (list(gemini.parse_stream(body)), gemini.response_events(response)):
        msg = reduce_ok(events)
        assert [b.type for b in msg.content] == ["text", "thinking", "text", "tool_use", "tool_use"]
        assert [b.text for b in msg.blocks("text")] == ["Plan", "hi"]
        assert [(c.name, c.input) for c in msg.blocks("tool_use")] == [("f", {}), ("h", {"my_key": 1})]
        assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "MAX_TOKENS"
        assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (4, 3)
        assert [e["value"]["message"] for e in events if e.get("name") == "agentmsg.problem"] == [
            "a candidate gives a field both in lowerCamelCase and with its proto name, with different values: the"
            " lowerCamelCase value kept, 'safety_ratings' left out",
            "a part gives a field both in lowerCamelCase and with its proto name, with different values: the"
            " lowerCamelCase value kept, 'function_call' left out",
        ]
