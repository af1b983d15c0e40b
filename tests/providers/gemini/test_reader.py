"""The gemini payload reader (``agentmsg.providers.gemini``'s ``Reader``, through ``parse_stream`` and
``parse_response``): Gemini (generateContent, the Gemini API and Vertex AI). Hand-made bodies, odd but valid and
broken: what the reader keeps, what it says (problems and notes, once), what it never loses on a cut; work counted,
never timed, where a body could make it super-linear."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import reduce_events
from agentmsg.providers import gemini
from tests._support.providers import (
    BIG,
    OUTSIDE,
    _run,
    all_of,
    calls,
    custom,
    data,
    gem,
    gem_sse,
    once,
    one,
    reduce_ok,
    said,
    sse,
)


def test_gemini_error_mid_stream_and_nested_partial_args() -> None:
    fc = {"name": "plan", "willContinue": True}
    parts = [
        {"functionCall": fc},
        {
            "functionCall": {
                "partialArgs": [{"jsonPath": "$.trip.city", "stringValue": "Par", "willContinue": True}],
                "willContinue": True,
            }
        },
        {"functionCall": {"partialArgs": [{"jsonPath": "$.trip.city", "stringValue": "is"}], "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.trip.days[0]", "numberValue": 1}], "willContinue": True}},
        {
            "functionCall": {
                "partialArgs": [
                    {"jsonPath": "$.trip.days[1]", "numberValue": 2},
                    {"jsonPath": "$.ok", "boolValue": True},
                ],
                "willContinue": True,
            }
        },
        {"functionCall": {}},
    ]
    body = b"".join(
        b"data: "
        + orjson.dumps({"candidates": [{"content": {"role": "model", "parts": [p]}}], "responseId": "g1"})
        + b"\r\n\r\n"
        for p in parts
    )
    ok = (
        body
        + b"data: "
        + orjson.dumps({"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]})
        + b"\r\n\r\n"
    )
    msg = reduce_ok(list(gemini.parse_stream(ok)))
    assert calls(msg)[0][1:] == ("plan", {"trip": {"city": "Paris", "days": [1, 2]}, "ok": True})
    broken = body[: body.find(b'numberValue":1') + 200]
    broken = (
        broken[: broken.rfind(b"\r\n\r\n") + 4]
        + b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\r\n\r\n'
    )
    events = list(gemini.parse_stream(broken))
    msg = reduce_ok(events)
    assert msg.generate_reason.value == "INTERRUPTED"
    call = msg.blocks("tool_use")[0]
    assert (
        call.content is not None
        and call.content.startswith('{"trip":{"city":"Paris","days":[1')
        and call.name == "plan"
    )
    err = next(e for e in events if e["type"] == "CUSTOM")
    assert err["value"]["message"] == "The model is overloaded." and err["value"]["code"] == 503


def test_gemini_finish_message_is_said_with_its_text() -> None:
    """finishMessage (why Gemini stopped: a malformed function call, say) has no place in the message: it is
    said as not kept, its text in the note, so the caller sees why the reply ended; streamed or not."""
    from agentmsg.providers import gemini

    why = "Malformed function call: print(default_api.get_weather(city='Paris'"
    chunk = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Let me check."}], "role": "model"},
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": why,
                "index": 0,
            }
        ],
        "modelVersion": "gemini-2.5-flash",
    }
    parser = gemini.StreamParser()
    events = [*parser.feed(b"data: " + orjson.dumps(chunk) + b"\r\n\r\n"), *parser.close()]
    msg = reduce_ok(events)
    assert msg.text_content == "Let me check." and msg.metadata["agentmsg_finish_reason"] == "MALFORMED_FUNCTION_CALL"
    assert parser.problems == []
    ((rule, message),) = [(p.rule, p.message) for p in parser.builder.not_kept_notes]
    assert rule == "not-kept" and why in message
    assert custom(events) == [("agentmsg.not-kept", "not-kept")]
    response = gemini.parse_response(orjson.dumps(chunk))
    assert response.text_content == "Let me check."


def test_exact_digits_for_many_calls_in_one_payload_take_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact decode of a payload is walked once for all its calls (it went on from the last call found),
    not once per call: 2,000 calls with integers beyond 64 bits in one chunk keep their digits, with a number
    of comparisons proportional to the calls (it was quadratic)."""

    from agentmsg.providers._response import builder as _builder

    compared = [0]
    real = json.dumps

    class CountingJson:
        @staticmethod
        def dumps(*args: Any, **kwargs: Any) -> str:
            compared[0] += 1
            return real(*args, **kwargs)

    monkeypatch.setattr(_builder, "json", CountingJson)
    n = 2000
    parts = ",".join(f'{{"functionCall":{{"name":"f","args":{{"n":{BIG}{k}}}}}}}' for k in range(n))
    gem = f'{{"candidates":[{{"content":{{"parts":[{parts}],"role":"model"}},"finishReason":"STOP","index":0}}],"responseId":"r"}}'
    msg = reduce_ok(list(gemini.parse_stream(b"data: " + gem.encode() + b"\n\n")))
    assert [b.content for b in msg.blocks("tool_use")] == [f'{{"n":{BIG}{k}}}' for k in range(n)]
    assert compared[0] <= 4 * n


def _gem(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "responseId": "resp-1", "modelVersion": "gemini-3-pro-preview"}


def _fc(**fc: Any) -> dict[str, Any]:
    return {"functionCall": fc}


def _arg(path: str, value: str, more: bool = False) -> dict[str, Any]:
    return {"jsonPath": path, "stringValue": value, **({"willContinue": True} if more else {})}


def test_gemini_streamed_calls_keep_what_the_model_sent() -> None:
    """Streamed function-call arguments (partialArgs, willContinue): a call the reply leaves unfinished (cut by
    MAX_TOKENS, or a new call begins) keeps its arguments as they came, raw with argumentsError, and is said,
    never closed into JSON the model did not write; partialArgs without willContinue are read; a signature on a
    later part is kept; args {} beside willContinue is no argument text."""
    parser = gemini.StreamParser()
    body = sse(
        _gem(_fc(name="write", willContinue=True)),
        _gem(_fc(partialArgs=[_arg("$.text", "Once upon a ti", more=True)], willContinue=True), finish="MAX_TOKENS"),
        done=False,
    )
    msg = reduce_ok(parser.feed(body) + parser.close())
    (call,) = msg.blocks("tool_use")
    assert (call.input, call.content) == ({}, '{"text":"Once upon a ti')
    assert call.metadata["argumentsError"] == "arguments are not valid JSON"
    assert [p.rule for p in parser.problems] == ["incomplete"]
    parser = gemini.StreamParser()
    body = sse(
        _gem(_fc(name="f", willContinue=True)),
        _gem(_fc(partialArgs=[_arg("$.a", "1")], willContinue=True)),
        _gem(_fc(name="g", args={"b": 2})),  # a new call while f streams: f is left unfinished
        _gem(_fc(name="h", partialArgs=[_arg("$.c", "3")])),  # partialArgs without willContinue
        _gem(_fc(name="k", args={}, willContinue=True)),  # {} beside willContinue: the arguments follow
        _gem({**_fc(partialArgs=[_arg("$.d", "4")], willContinue=True), "thoughtSignature": "sig-late"}),
        _gem(_fc(), finish="STOP"),
        done=False,
    )
    msg = reduce_ok(parser.feed(body) + parser.close())
    calls = msg.blocks("tool_use")
    assert [b.metadata.pop("agentmsg_minted_id") for b in calls] == [b.id for b in calls]  # Gemini gave no ids
    got = [(b.name, b.input, b.content, b.metadata) for b in calls]
    assert got == [
        ("f", {}, '{"a":"1"', {"argumentsError": "arguments are not valid JSON"}),
        ("g", {"b": 2}, '{"b":2}', {}),
        ("h", {"c": "3"}, '{"c":"3"}', {}),
        ("k", {"d": "4"}, '{"d":"4"}', {"thoughtSignature": "sig-late"}),
    ]
    assert [p.rule for p in parser.problems] == ["incomplete"]


def test_gemini_an_errors_details_are_said() -> None:
    # A Google API error is {code, message, status, details}: its details (google.rpc RetryInfo's retryDelay,
    # QuotaFailure's violations...) were dropped unsaid, in a stream's error payload and a whole error reply alike
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]
    err = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": details}}
    for events in (list(gemini.parse_stream(sse(err, done=False))), gemini.response_events(err)):
        (value,) = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
        assert (value["type"], value["code"], value["message"]) == ("RESOURCE_EXHAUSTED", 429, "quota")
        notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
        assert len(notes) == 1 and "retryDelay" in notes[0] and "31s" in notes[0]
    plain = {"error": {"code": 500, "message": "boom", "status": "INTERNAL", "details": []}}
    assert not [e for e in gemini.response_events(plain) if e.get("name") == "agentmsg.not-kept"]


def test_gemini_code_parts_usage_signature_parts_and_an_error_beside_candidates() -> None:
    """Text after a part the provider ran itself (executableCode) is a block of its own, as after a call (it
    was glued to the text before); the tool-use prompt counts as input (totalTokenCount counts it); a part
    that is only a thoughtSignature is no unsupported part; candidates beside an error are kept."""
    code = {"executableCode": {"language": "PYTHON", "code": "print(2+2)"}}
    usage = {"promptTokenCount": 100, "toolUsePromptTokenCount": 25, "candidatesTokenCount": 37, "totalTokenCount": 162}
    body = sse(
        _gem({"text": "I'll compute."}, code, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4"}})
        | {"usageMetadata": usage},
        _gem({"text": "The answer is 4."}, {"thoughtSignature": "c2ln"}, finish="STOP") | {"usageMetadata": usage},
        done=False,
    )
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert [b.text for b in msg.blocks("text")] == ["I'll compute.", "The answer is 4."]
    # the code and its result, kept in their place for Gemini (carriers), then the answer's signature
    code_kept, result_kept, signed = msg.blocks("thinking")
    assert code_kept.metadata is not None and result_kept.metadata is not None
    assert (
        code_kept.metadata["providerBlock"] == code and "codeExecutionResult" in result_kept.metadata["providerBlock"]
    )
    assert agentmsg.thinking_signature(signed) == "c2ln"
    assert parser.problems == []
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.total_tokens) == (125, 162)
    error = _gem({"text": "y"}) | {"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}}
    msg = reduce_ok(list(gemini.parse_stream(sse(_gem({"text": "x"}), error, done=False))))
    assert msg.text_content == "xy" and msg.generate_reason == "INTERRUPTED"


# Gemini's error after the SSE events, as raw JSON lines (no data:), as the Firebase AI SDKs' test data has it
# (FirebaseExtended/vertexai-sdk-test-data, Apache-2.0: mock-responses/vertexai/streaming-failure-error-mid-stream.txt,
# shortened here) and as google-genai reads it (lines gathered until the braces balance, then APIError).
RAW_ERROR = b'{\n  "error": {\n    "code": 499,\n    "message": "The operation was cancelled.",\n    "status": "CANCELLED"\n  }\n}\n'


ONE_LINE_ERROR = b'{"error": {"code": 503, "message": "The model is overloaded {[.", "status": "UNAVAILABLE"}}\n'


@pytest.mark.parametrize("error", [RAW_ERROR, ONE_LINE_ERROR], ids=["pretty", "one-line"])
@pytest.mark.parametrize("size", [1, 5, 10_000])
def test_gemini_raw_json_error_after_the_events_ends_the_reply_with_its_code(error: bytes, size: int) -> None:
    body = sse(gem({"text": "First "}, finish="STOP"), gem({"text": "Second "}, finish="STOP"), done=False) + error
    parser = gemini.StreamParser()
    events: list[dict[str, Any]] = []
    for k in range(0, len(body), size):
        events += parser.feed(body[k : k + size])
    assert any(e["type"] == "AGENT_END" for e in events), "the error ends the reply as it arrives, not at close"
    events += parser.close()
    msg = reduce_ok(events)
    assert msg.text_content == "First Second "
    meta = msg.to_dict()["metadata"]
    assert meta["agentscope_generate_reason"] == "INTERRUPTED"
    err = orjson.loads(error)["error"]
    assert meta["agentmsg_errors"] == [
        {"type": err["status"], "message": err["message"], "provider": "gemini", "code": err["code"]}
    ]
    # the error said once; the second chunk's text, after the first's finishReason, said too (kept: "Second ")
    assert said(events) == ["order", "sse"]


def test_a_raw_json_value_cut_before_it_is_whole_is_said_and_the_events_after_it_read() -> None:
    body = (
        sse(gem({"text": "a"}), done=False)
        + b'{\n  "error": {"code": 1,\n\n'
        + sse(gem({"text": "b"}, finish="STOP"), done=False)
    )
    for cut in (body, body + b'{"error": {\n'):
        events = list(gemini.parse_stream(cut))
        assert said(events) == ["sse", "incomplete"] + (["incomplete"] if cut is not body else [])
        assert reduce_ok(events).text_content == "ab"


def test_a_raw_json_value_over_the_event_limit_is_dropped_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_event_bytes", 200)
    big = b'{"error": {"code": 1,\n' + b'"message": "' + b"x" * 150 + b'",\n' + b'"status": "' + b"y" * 150 + b'"}}\n'
    events = list(gemini.parse_stream(sse(gem({"text": "a"}, finish="STOP"), done=False) + big))
    assert said(events) == ["max-event-bytes"]
    assert reduce_ok(events).text_content == "a"


def test_gemini_safety_ratings_are_said_as_not_kept() -> None:
    # the ratings (a blocked category: why the reply stopped at SAFETY) were dropped unsaid; Azure's content
    # filter results, their like, are said
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    body = gem({"text": "x"})
    last = {
        "candidates": [{"content": {"role": "model"}, "index": 0, "finishReason": "SAFETY", "safetyRatings": ratings}]
    }
    for events in (list(gemini.parse_stream(sse(body, last, done=False))), gemini.response_events(last)):
        notes = said(events, "agentmsg.not-kept")
        assert notes == ["not-kept"]
        assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == "SAFETY"
    # the average log probability (Vertex sends it unasked, as Azure sends its filter results), as logprobsResult is
    whole = gemini.response_events(gem({"text": "x"}, finish="STOP") | {"candidates": [{"avgLogprobs": -0.25}]})
    assert said(whole, "agentmsg.not-kept") == ["not-kept"] and "avgLogprobs" in str(whole)
    # the prompt's (a blocked prompt's: why), as Azure's prompt filter results are
    blocked = {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": ratings}, "responseId": "r"}
    events = gemini.response_events(blocked)
    assert said(events, "agentmsg.not-kept") == ["not-kept"] and "promptFeedback" in str(events)


def test_gemini_an_empty_function_call_after_a_call_ended_is_no_call() -> None:
    # the last update of a streamed call lacked willContinue (the call ended there), then the usual closing
    # `functionCall: {}`: it made a second call, nameless, with arguments {} the model never wrote
    body = sse(
        gem({"functionCall": {"name": "f", "willContinue": True}}),
        gem({"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}]}}),
        gem({"functionCall": {}}, finish="STOP"),
        done=False,
    )
    events = list(gemini.parse_stream(body))
    assert [(c.name, c.input) for c in reduce_ok(events).blocks("tool_use")] == [("f", {"a": 1})]
    assert said(events) == []


def test_gemini_block_reason_message_is_said_as_not_kept() -> None:
    blocked = {
        "promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "The prompt was blocked for safety reasons."},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "responseId": "rb1",
    }
    for events in (list(gemini.parse_stream(sse(blocked, done=False))), gemini.response_events(blocked)):
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
        assert len(notes) == 1 and "The prompt was blocked for safety reasons." in notes[0]
        msg = reduce_ok(events)
        assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "SAFETY"
        # proto3 JSON leaves out a zero count: no candidatesTokenCount beside the prompt's is 0 output tokens
        assert msg.usage is not None and msg.usage.output_tokens == 0 and msg.usage.input_tokens == 7


def test_gemini_usage_without_the_prompt_count_does_not_zero_the_output() -> None:
    first = gem({"text": "a"}, usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12})
    last = gem(finish="STOP", usageMetadata={"totalTokenCount": 12})
    msg = reduce_ok(list(gemini.parse_stream(sse(first, last, done=False))))
    assert msg.usage is not None and msg.usage.output_tokens == 7


def test_a_gemini_empty_part_is_skipped_quietly() -> None:
    body = gem({"text": "Here:"}, {}, {"text": " done"}, finish="STOP")
    for events in (list(gemini.parse_stream(sse(body, done=False))), gemini.response_events(body)):
        assert reduce_ok(events).text_content == "Here: done"
        assert [e for e in events if e["type"] == "CUSTOM"] == []


def test_gemini_a_json_array_stops_at_the_error() -> None:
    """streamGenerateContent without alt=sse (a JSON array of responses) read whole: the responses after an
    error are skipped and said, as in the stream."""
    items = [
        orjson.loads(gem_sse("Hi")[6:]),
        {"error": {"code": 500, "message": "boom"}},
        orjson.loads(gem_sse("!", "STOP")[6:]),
    ]
    events = gemini.response_events(orjson.dumps(items))
    msg = reduce_ok(events)
    assert (msg.text_content, msg.generate_reason.value) == ("Hi", "INTERRUPTED")
    said = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert [s["rule"] for s in said] == ["order"] and "after the provider's error" in said[0]["message"]


def _gem_call(fc: dict[str, Any], finish: str | None = None) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": fc}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return data({"candidates": [cand], "responseId": "g1"})


def test_gemini_a_repeated_argument_path_is_said_and_the_last_value_wins() -> None:
    def arg(path: str, value: str) -> dict[str, str]:
        return {"jsonPath": path, "stringValue": value}

    body = (
        _gem_call({"name": "f", "willContinue": True})
        + _gem_call({"partialArgs": [arg("$.trip.city", "Paris"), arg("$.n", "1")], "willContinue": True})
        + _gem_call({"partialArgs": [arg("$.trip.city", "Rome"), arg("$.trip.day", "2")], "willContinue": True})
        + _gem_call({"partialArgs": [arg("$.n", "3")], "willContinue": True})
        + _gem_call({}, finish="STOP")
    )
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    (call,) = msg.blocks("tool_use")
    assert call.input == {"trip": {"city": "Rome", "day": "2"}, "n": "3"}
    assert "argumentsError" not in call.metadata
    # its text, never taken back, is one JSON object with each key once (it wrote trip and n again, after the
    # streamed ones: two values for one key), keeping their first values: the input says the last
    assert call.content is not None
    once(call.content)
    assert orjson.loads(call.content) == {"trip": {"city": "Paris"}, "n": "1"}
    assert [p.rule for p in parser.problems] == ["duplicate"]  # said once for the call
    assert "$.trip.city" in parser.problems[0].message and "last value" in parser.problems[0].message


def test_gemini_a_cut_call_keeps_the_updates_held_after_a_repeat() -> None:
    """A call cut (MAX_TOKENS) after a repeated path: what came after the repeat is kept in its raw arguments."""
    arg = {"jsonPath": "$.a", "stringValue": "x"}
    body = (
        _gem_call({"name": "f", "willContinue": True})
        + _gem_call({"partialArgs": [arg, arg, {"jsonPath": "$.b", "numberValue": 7}], "willContinue": True})
        + _gem_call({"partialArgs": [], "willContinue": True}, finish="MAX_TOKENS")
    )
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    (call,) = msg.blocks("tool_use")
    assert call.content == '{"a":"x","a":"x","b":7'
    assert call.metadata["argumentsError"] == "arguments are not valid JSON"
    assert [p.rule for p in parser.problems] == ["duplicate", "incomplete"]


def test_gemini_a_partial_argument_of_the_wrong_type_is_said() -> None:
    """stringValue 5 was written as "" (the JSON text of 5 without its first and last character): said, skipped."""
    body = (
        _gem_call({"name": "f", "willContinue": True})
        + _gem_call(
            {"partialArgs": [{"jsonPath": "$.a", "stringValue": 12345}, {"jsonPath": "$.b", "boolValue": True}]}
        )
        + _gem_call({}, finish="STOP")
    )
    parser = gemini.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert msg.blocks("tool_use")[0].input == {"b": True}
    assert [p.rule for p in parser.problems] == ["type"]


def _pa(parts: list[dict[str, Any]], more: bool, name: str | None = None) -> bytes:
    fc: dict[str, Any] = {"partialArgs": parts, "willContinue": more}
    if name:
        fc["name"] = name
    return _gem_call(fc)


def test_probe_gemini_held_updates_deep_paths_odd_indexes_and_plain_text_errors() -> None:
    held = _pa([{"jsonPath": "$.a", "stringValue": "one"}], True, "f") + _pa(
        [{"jsonPath": "$.a", "stringValue": "two"}], True
    )
    held += _pa([{"jsonPath": "$.b", "stringValue": "HELD"}], True)
    # held updates are kept when the reply ends at an error or a cut (they were dropped)
    for end in (data({"error": {"code": 500, "message": "x", "status": "INTERNAL"}}), b""):
        msg, _ = _run(gemini.StreamParser(), held + end)
        (call,) = all_of(agentmsg.ToolUseBlock, msg.content)
        assert call.content is not None
        assert orjson.loads(call.content + "}") == {"a": "two", "b": "HELD"}
    # a path deeper than a message holds is skipped and said; the finish reason still counts (orjson's recursion
    # limit raised at close: the payload, its STOP and the held values were lost)
    deep = _pa([{"jsonPath": "$.a", "numberValue": 1}], True, "f") + _pa([{"jsonPath": "$.a", "numberValue": 2}], True)
    deep += _pa([{"jsonPath": "$.b" + ".c" * 300, "numberValue": 3}], False) + gem_sse(" after", "STOP")
    msg, said = _run(gemini.StreamParser(), deep)
    assert msg.generate_reason.value == "TOOL_CALLS" and one(agentmsg.ToolUseBlock, msg.content[0]).input == {"a": 2}
    assert said == ["duplicate", "max-depth"]
    # an index of digits that are not ASCII ("²": int() refused it and the payload was skipped) is a key
    odd = _pa([{"jsonPath": "$.a[²]", "numberValue": 1}], False, "f") + gem_sse("", "STOP")
    msg, said = _run(gemini.StreamParser(), odd)
    assert one(agentmsg.ToolUseBlock, msg.content[0]).input == {"a": {"²": 1}} and said == []
    # an error that is plain text ends the reply (it was ignored, the text after it applied)
    msg, said = _run(gemini.StreamParser(), gem_sse("a") + data({"error": "quota exceeded"}) + gem_sse("c", "STOP"))
    assert msg.text_content == "a" and msg.generate_reason.value == "INTERRUPTED" and said == ["order"]
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["quota exceeded"]


def _gem_reply(cand: dict[str, Any], **extra: Any) -> dict[str, Any]:
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
        events = gemini.response_events(_gem_reply({"content": {"parts": [{"text": "x"}]}, "finishReason": number}))
        assert said(events) == [] and said(events, "agentmsg.not-kept") == []
        assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == name
    # a call and STOP as a number: TOOL_CALLS, as with the name
    call = {"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}, "finishReason": 1}
    assert reduce_ok(list(gemini.parse_stream(sse(_gem_reply(call), done=False)))).generate_reason == "TOOL_CALLS"
    # a blocked prompt: blockReason 1 is SAFETY (it read as finish reason "1")
    blocked = {"promptFeedback": {"blockReason": 1}, "usageMetadata": {"promptTokenCount": 4}}
    for events in (gemini.response_events(blocked), list(gemini.parse_stream(sse(blocked, done=False)))):
        assert said(events) == []
        assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == "SAFETY"


def test_gemini_integer_enum_the_two_apis_name_differently_is_kept_and_said() -> None:
    # 7 is BLOCKLIST on the Gemini API, PROHIBITED_CONTENT on Vertex AI: a stop all the same (not a cut reply)
    body = sse(_gem_reply({"content": {"parts": [{"text": "x"}]}}), _gem_reply({"finishReason": 7}), done=False)
    for events in (list(gemini.parse_stream(body)), gemini.response_events(_gem_reply({"finishReason": 7}))):
        assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]
        msg = reduce_ok(events)
        assert msg.to_dict()["metadata"]["agentmsg_finish_reason"] == "7"
        assert msg.generate_reason == "MODEL_STOP"
    # a finish reason of another type is said, no longer dropped silently
    assert said(gemini.response_events(_gem_reply({"content": {"parts": [{"text": "x"}]}, "finishReason": [1]}))) == [
        "type"
    ]
    # a block reason of another type is said and left out, as a finish reason is (it was made text: "[1]", "True")
    for bad in ([1], {"a": 1}, 1.5, True):
        blocked = {"promptFeedback": {"blockReason": bad}}
        for events in (gemini.response_events(blocked), list(gemini.parse_stream(sse(blocked, done=False)))):
            assert said(events) == ["type"]
            assert "agentmsg_finish_reason" not in reduce_events(events)[0].to_dict()["metadata"]


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
    assert said(events) == [] and said(events, "agentmsg.not-kept") == []
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


def test_gemini_built_in_tool_call_and_response_parts_are_said_not_unknown() -> None:
    """Gemini's server-side tool parts (google-genai Part.tool_call / tool_response: a built-in tool, Google Search
    say, that the model called beside function calling; "the client is NOT expected to execute" it, but is to echo
    it back) are kept as Gemini gave them, their signature with them, in their place (carriers), streamed and whole:
    they were unknown part kinds (a problem each, exit 1), then said as not kept. Text after them is a block of its
    own."""

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
    assert parser.problems == [] and parser.builder.not_kept_notes == []
    assert [
        (
            b.type,
            b.text
            if isinstance(b, agentmsg.TextBlock)
            else (one(agentmsg.ThinkingBlock, b).metadata or {})["providerBlock"],
        )
        for b in msg.content
    ] == [
        ("text", "Let me look."),
        ("thinking", call),
        ("thinking", answer),
        ("text", "Found."),
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
        (
            b.type,
            b.thinking
            if isinstance(b, agentmsg.ThinkingBlock)
            else b.text
            if isinstance(b, agentmsg.TextBlock)
            else one(agentmsg.ToolUseBlock, b).input,
        )
        for b in msg.content
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
    chunks: list[dict[str, Any]] = [
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
    assert (one(agentmsg.ThinkingBlock, msg.content[0]).metadata or {})["signature"] == "c2ln"
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


def test_gemini_grounding_is_the_last_that_says_something_and_a_different_one_is_said() -> None:
    """A candidate's grounding (groundingMetadata, citationMetadata, urlContextMetadata) is the message's
    (agentmsg_grounding, provider gemini): a stream's chunks carry {} until the one that carries it whole, and
    {} says nothing; a later value that differs from an earlier one replaces it, said (not-kept), so that nothing
    is dropped unsaid. Fields keep the order they were first given in, streamed and whole."""
    g1 = {"webSearchQueries": ["weather"]}
    g2 = {"webSearchQueries": ["weather today"]}
    urls = {"urlMetadata": [{"retrievedUrl": "https://x", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}]}

    def cand(text: str, **extra: Any) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0, **extra}]}

    chunks = [
        cand("a", groundingMetadata={}, urlContextMetadata=urls),
        cand("b", groundingMetadata={}),
        cand("c", groundingMetadata=g1, finishReason="STOP"),
    ]
    events = list(gemini.parse_stream(sse(*chunks, done=False)))
    msg = reduce_ok(events)
    assert custom(events) == []
    assert msg.metadata["agentmsg_grounding"] == {
        "provider": "gemini",
        "groundingMetadata": g1,
        "urlContextMetadata": urls,
    }
    assert list(msg.metadata["agentmsg_grounding"]) == ["provider", "groundingMetadata", "urlContextMetadata"]
    whole = cand("abc", groundingMetadata=g1, urlContextMetadata=urls, finishReason="STOP")
    assert gemini.parse_response(whole).metadata["agentmsg_grounding"] == msg.metadata["agentmsg_grounding"]
    chunks[1] = cand("b", groundingMetadata=g2)
    events = list(gemini.parse_stream(sse(*chunks, done=False)))
    assert custom(events) == [("agentmsg.not-kept", "not-kept")]
    assert reduce_ok(events).metadata["agentmsg_grounding"]["groundingMetadata"] == g1


def test_gemini_a_json_array_stream_without_its_closing_bracket_is_said_cut() -> None:
    """streamGenerateContent without alt=sse is a JSON array of responses, streamed piecewise: a body that ends
    before its ']' was cut, even when its last response ended the reply (finishReason), and is said so (rule
    incomplete, as reduce_stream says an agent event array's), given whole or a byte at a time. Whole, the array
    is read as before."""
    body = orjson.dumps([gem({"text": "Hel"}), gem({"text": "lo"}, finish="STOP")], option=orjson.OPT_INDENT_2)
    assert said(list(gemini.parse_stream(body))) == []
    cut = body.rstrip()[:-1]
    for chunks in (cut, [cut[i : i + 1] for i in range(len(cut))]):
        events = list(gemini.parse_stream(chunks))
        msg = reduce_ok(events)
        assert msg.text_content == "Hello" and msg.generate_reason == "MODEL_STOP"
        problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
        assert [p["rule"] for p in problems] == ["incomplete"] and "']'" in problems[0]["message"]
    # cut inside its last response: that response said cut (as before), then the array's end
    events = list(gemini.parse_stream(body.rstrip()[:-20]))
    messages = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert said(events) == ["incomplete", "incomplete"] and "']'" in messages[1]
    assert reduce_ok(events).generate_reason == "INTERRUPTED"


def test_gemini_a_media_parts_display_name_is_the_data_blocks_name() -> None:
    """An inlineData or fileData part's ``displayName`` (google-genai Blob / FileData ``display_name``): the data
    block's name (a file name or label), whole and streamed; it was dropped unsaid."""
    pytest.importorskip("google.genai")
    from google.genai import types

    parts = [
        types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG", display_name="chart.png")),
        types.Part(file_data=types.FileData(mime_type="application/pdf", file_uri="gs://b/r.pdf", display_name="r")),
    ]
    dumped = [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in parts]
    whole = gemini.parse_response(json.dumps(gem(*dumped, finish="STOP")))
    streamed = reduce_ok(list(gemini.parse_stream(data(gem(*dumped, finish="STOP")))))
    for msg in (whole, streamed):
        assert [(b.type, b.name) for b in all_of(agentmsg.DataBlock, msg.content)] == [
            ("data", "chart.png"),
            ("data", "r"),
        ]


def test_gemini_what_a_part_carries_beside_its_text_call_or_media_is_said() -> None:
    """A part's videoMetadata, mediaResolution, partMetadata (google-genai Part fields) beside the text, call or media
    the reader keeps: the message has no place for them, and they were dropped unsaid; now said, once per field."""
    pytest.importorskip("google.genai")
    from google.genai import types

    parts = [
        types.Part(text="a", video_metadata=types.VideoMetadata(fps=2.0, start_offset="1s")),
        types.Part(text="b", part_metadata={"trace": "t-1"}),
        types.Part(
            function_call=types.FunctionCall(name="f", args={"x": 1}),
            media_resolution=types.PartMediaResolution(level="MEDIA_RESOLUTION_LOW"),
        ),
        types.Part(text="c", part_metadata={"trace": "t-2"}),
    ]
    dumped = [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in parts]
    for events in (
        gemini.response_events(json.dumps(gem(*dumped, finish="STOP"))),
        list(gemini.parse_stream(data(gem(*dumped, finish="STOP")))),
    ):
        msg = reduce_ok(events)
        assert [b.type for b in msg.content] == ["text", "tool_use", "text"]
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
        assert sorted(notes) == [
            f"a part's {key} is not kept (the message has no place for it)"
            for key in ("mediaResolution", "partMetadata", "videoMetadata")
        ]
    # a text part with a thought and its signature says nothing
    plain = types.Part(text="t", thought=True, thought_signature=b"sig").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    assert said(gemini.response_events(json.dumps(gem(plain, finish="STOP"))), "agentmsg.not-kept") == []
