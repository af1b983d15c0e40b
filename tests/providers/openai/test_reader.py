"""The openai payload reader (``agentmsg.providers.openai``'s ``Reader``, through ``parse_stream`` and
``parse_response``): OpenAI Chat Completions and the compatible family (DeepSeek, DashScope's compatible mode,
Azure, Groq, Moonshot, Snowflake, Google's compatible endpoint, OpenRouter). Hand-made bodies, odd but valid and
broken: what the reader keeps, what it says (problems and notes, once), what it never loses on a cut; work counted,
never timed, where a body could make it super-linear."""

from __future__ import annotations

import base64
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import Reducer, ThinkingBlock, ToolUseBlock, reduce_events
from agentmsg.cli import main
from agentmsg.providers import gemini, openai
from agentmsg.providers._response import builder as _builder
from tests._support.providers import (
    _PCM,
    FIX,
    _assistant,
    _audio_response,
    _openai_refusals,
    _run,
    _signed_call,
    all_of,
    calls,
    chunk,
    custom,
    data,
    oai,
    one,
    reduce_ok,
    route_events,
    said,
    sse,
    tc,
)


def test_openai_interleaved_parallel_calls_empty_deltas_usage_only() -> None:
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({}),  # an empty delta
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "more"}),
        chunk({"content": "Hi"}),
        chunk({"tool_calls": [tc(0, "call_a", "f", '{"x":'), tc(1, "call_b", "g", "")]}),
        chunk({"tool_calls": [tc(1, args='{"y": 2}')]}),
        chunk({"tool_calls": [tc(0, args="1}")]}),
        chunk({}, "tool_calls"),
        chunk(None, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}),
    )
    msg = reduce_ok(list(openai.parse_stream(body)))
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert one(ThinkingBlock, msg.content[0]).thinking == "think more" and msg.text_content == "Hi"
    assert calls(msg) == [("call_a", "f", {"x": 1}), ("call_b", "g", {"y": 2})]
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (7, 3)
    assert msg.generate_reason.value == "TOOL_CALLS"


def test_openai_same_index_new_id_is_a_new_call_and_names_are_set_once() -> None:
    body = sse(
        chunk({"tool_calls": [tc(0, "call_a", "read_file", '{"p":1}')]}),
        chunk({"tool_calls": [tc(0, "call_a", "read_file", "")]}),  # the name resent: not appended
        chunk({"tool_calls": [tc(0, "call_b", "read_file", '{"p":2}')]}),  # same index, another id
        chunk({}, "tool_calls"),
    )
    assert calls(reduce_ok(list(openai.parse_stream(body)))) == [
        ("call_a", "read_file", {"p": 1}),
        ("call_b", "read_file", {"p": 2}),
    ]


def test_openai_late_id_and_duplicate_index_in_first_chunk() -> None:
    body = sse(
        chunk({"tool_calls": [tc(0, args='{"a"')]}),  # arguments before the call has an id or a name
        chunk({"tool_calls": [tc(0, "call_late", "f", ": 1}")]}),
        chunk({"tool_calls": [tc(1, "call_1", "g", "{}"), tc(1, "call_2", "h", "{}")]}),  # duplicate index
        chunk({}, "tool_calls"),
    )
    assert calls(reduce_ok(list(openai.parse_stream(body)))) == [
        ("call_late", "f", {"a": 1}),
        ("call_1", "g", {}),
        ("call_2", "h", {}),
    ]


def test_openai_call_without_id_gets_a_stable_one() -> None:
    body = sse(chunk({"tool_calls": [tc(0, name="f", args="{}")]}), chunk({}, "stop"))
    a = reduce_ok(list(openai.parse_stream(body)))
    b = reduce_ok(list(openai.parse_stream(body)))
    assert calls(a) == calls(b) and calls(a)[0][0].startswith("call_")
    assert a.generate_reason.value == "TOOL_CALLS"  # 'stop' with calls: the model called tools


def test_openai_cut_stream_keeps_everything() -> None:
    body = sse(chunk({"content": "Hello wor"}), chunk({"tool_calls": [tc(0, "c1", "f", '{"x": [1, 2')]}), done=False)
    events = list(openai.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "Hello wor" and msg.generate_reason.value == "INTERRUPTED"
    call = msg.blocks("tool_use")[0]
    assert call.content == '{"x": [1, 2' and call.input == {} and "argumentsError" in call.metadata
    errors = [e for e in events if e["type"] == "CUSTOM"]
    assert errors[0]["value"]["type"] == "incomplete_stream"


def test_openai_logprobs_and_n2_choices() -> None:
    body = sse(
        chunk({"content": "A"}, index=0),
        chunk({"content": "B"}, index=1),
        {
            **chunk({"content": "a"}, index=0),
            "choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": {"content": []}, "finish_reason": "stop"}],
        },
        chunk({"content": "b"}, "stop", index=1),
    )
    events = list(openai.parse_stream(body))
    assert reduce_events(events)[0].text_content == "Aa"
    assert reduce_events(events, source="choice/1")[0].text_content == "Bb"


def test_openai_and_gemini_extras_the_message_has_no_place_for_are_said_once() -> None:
    """Log probabilities are said as not kept, once; a reply's citations (OpenAI annotations, Gemini grounding and
    citation metadata) and the parts Gemini ran itself are kept (agentmsg_grounding, carriers), nothing said."""
    lp = {"content": [{"token": "a", "logprob": -0.1, "bytes": [97], "top_logprobs": []}]}
    cite = {"type": "url_citation", "url_citation": {"url": "https://x"}}
    body = sse(
        {**chunk({"content": "a"}), "choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": lp}]},
        {**chunk({"content": "b"}), "choices": [{"index": 0, "delta": {"content": "b"}, "logprobs": lp}]},
        chunk({"annotations": [cite]}, "stop"),
    )
    events = list(openai.parse_stream(body))
    assert custom(events) == [("agentmsg.not-kept", "not-kept")]  # logprobs once
    msg = reduce_ok(events)
    assert msg.text_content == "ab" and msg.metadata["agentmsg_grounding"] == {
        "provider": "openai",
        "annotations": [cite],
    }
    response: dict[str, Any] = {
        "id": "c",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ab"}, "logprobs": lp, "finish_reason": "stop"}
        ],
    }
    assert custom(openai.response_events(response)) == [("agentmsg.not-kept", "not-kept")]
    plain = {**response, "choices": [{**response["choices"][0], "logprobs": None}]}
    assert custom(openai.response_events(plain)) == []

    grounded: dict[str, Any] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "sunny"}]},
                "groundingMetadata": {"webSearchQueries": ["weather"]},
                "citationMetadata": {"citations": [{"uri": "https://x"}]},
                "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}],
                "finishReason": "STOP",
            }
        ],
        "modelVersion": "gemini",
    }
    grounded["candidates"][0]["content"]["parts"][:0] = [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
    ]
    gemini_body = b"data: " + orjson.dumps(grounded) + b"\r\n\r\n"
    events = list(gemini.parse_stream(gemini_body))
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert [n.split(" (")[0] for n in notes] == ["safety rating data"]
    msg = reduce_ok(events)
    assert msg.text_content == "sunny"
    assert msg.metadata["agentmsg_grounding"] == {
        "provider": "gemini",
        "groundingMetadata": {"webSearchQueries": ["weather"]},
        "citationMetadata": {"citations": [{"uri": "https://x"}]},
    }
    assert [(b.metadata or {})["providerBlock"] for b in msg.blocks("thinking")] == grounded["candidates"][0][
        "content"
    ]["parts"][:2]


def test_openai_an_id_after_the_name_is_the_calls_own() -> None:
    """Some compatible servers send a call's name before its id: one call with the provider's id, as
    openai's ChatCompletionStreamState merges it (not two calls, the first with a made-up id)."""
    from openai.lib.streaming.chat import ChatCompletionStreamState

    chunks = [
        chunk({"tool_calls": [tc(0, name="get_weather")]}),
        chunk({"tool_calls": [tc(0, "call_w", args='{"city": ')]}),
        chunk({"tool_calls": [tc(0, args='"Oslo"}'), tc(1, name="get_time", args="{}")]}),
        chunk({"tool_calls": [tc(1, "call_t")]}),
        chunk({}, "tool_calls"),
    ]
    msg = reduce_ok(list(openai.parse_stream(sse(*chunks))))
    assert calls(msg) == [("call_w", "get_weather", {"city": "Oslo"}), ("call_t", "get_time", {})]
    state: Any = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(_oai_chunk(c))
    official = state.current_completion_snapshot.choices[0].message.tool_calls
    assert [(t.id, t.function.name, orjson.loads(t.function.arguments)) for t in official] == calls(msg)
    # a provider that never sends ids: the calls start when they end, with ids derived from the reply
    no_ids = [chunk({"tool_calls": [tc(0, name="f", args='{"a": 1}')]}), chunk({}, "tool_calls")]
    (only,) = calls(reduce_ok(list(openai.parse_stream(sse(*no_ids)))))
    assert only[0].startswith("call_") and only[1:] == ("f", {"a": 1})


def _oai_chunk(c: dict[str, Any]) -> Any:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    return construct_type(type_=ChatCompletionChunk, value={"created": 0, **c})


def test_openai_error_objects_done_and_reasoning_details_as_the_sdk_reads_them() -> None:
    """``"error": null`` / ``{}`` on a chunk is no error (the SDK raises on a truthy one only); an error beside
    choices (OpenRouter: finish_reason "error") ends the reply interrupted after what they carry;
    ``data: [DONE] `` ends the stream as the SDK's ``startswith`` does (a payload after it is skipped, as the
    SDK skips it, and said); OpenRouter's reasoning_details are said as not kept."""
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    empty: dict[str, Any] | None
    for empty in (None, {}):
        body = sse(chunk({"content": "Hi"}), chunk({}, "stop"), {**chunk(), "usage": usage, "error": empty})
        msg = reduce_ok(list(openai.parse_stream(body)))
        assert (msg.text_content, msg.generate_reason.value, msg.usage and msg.usage.output_tokens) == (
            "Hi",
            "MODEL_STOP",
            3,
        )
    err = {"code": "server_error", "message": "Provider disconnected unexpectedly"}
    body = sse(chunk({"content": "Partial"}), {**chunk({"content": ""}, "error"), "error": err})
    events = list(openai.parse_stream(body))
    assert [(e["name"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == [
        ("agentmsg.error", "Provider disconnected unexpectedly")
    ]
    msg = reduce_ok(events)
    assert (msg.text_content, msg.generate_reason.value) == ("Partial", "INTERRUPTED")
    assert msg.metadata["agentmsg_errors"][0]["message"] == "Provider disconnected unexpectedly"

    body = (
        sse(chunk({"content": "a"}), chunk({}, "stop"), done=False)
        + b"data: [DONE] \n\n"
        + sse(chunk({"content": "zzz"}), done=False)
    )
    events = list(openai.parse_stream(body))
    assert custom(events) == [("agentmsg.problem", "order")]  # what comes after it is skipped, and said
    assert reduce_ok(events).text_content == "a"
    assert [e["type"] for e in events[-3:]] == ["MODEL_CALL_END", "AGENT_END", "CUSTOM"]

    details = [{"type": "reasoning.text", "signature": "SIG==", "index": 0}]
    body = sse(
        chunk({"reasoning": "Think", "reasoning_details": [{"type": "reasoning.text", "text": "Think"}]}),
        chunk({"content": "", "reasoning_details": details}),
        chunk({"content": "Answer"}, "stop"),
    )
    events = list(openai.parse_stream(body))
    assert custom(events) == [("agentmsg.not-kept", "not-kept")]
    msg = reduce_ok(events)
    assert [b.type for b in msg.content] == ["thinking", "text"]


def test_a_surrogate_pair_split_across_payloads_keeps_the_payloads() -> None:
    """JSON allows a lone surrogate escape, orjson (and a message that must be written back) does not: a
    pair cut across two chunks costs the character (U+FFFD each, a problem), not the chunks' other data."""
    body = sse(
        chunk({"content": "a"}),
        b'{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"\\ud83d"}}]}',
        b'{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"\\ude00 \\\\ud83d \\ud83d\\ude00"},'
        b'"finish_reason":"stop"}]}',
    )
    events = list(openai.parse_stream(body))
    assert custom(events) == [("agentmsg.problem", "surrogate")]  # (two payloads, the same news: said once)
    msg = Reducer()
    msg.feed_many(events)
    (m,) = msg.finish()
    assert m.text_content == "a\ufffd\ufffd \\ud83d \U0001f600"
    assert m.to_dict()["metadata"]["agentmsg_finish_reason"] == "stop"


def test_groq_usage_on_the_last_chunk_is_read() -> None:
    groq = {"id": "req", "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}
    body = sse(chunk({"content": "a"}), {**chunk({}, "stop"), "x_groq": groq})
    usage = reduce_ok(list(openai.parse_stream(body))).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (3, 4, 7)


@pytest.mark.parametrize(
    "first",
    [
        b"data: keep-alive\n\n",  # not JSON
        b'data: "ping"\n\n',  # JSON, not an object
        b"data: [1]\n\n",  # an array
    ],
)
def test_a_problem_before_the_first_payload_keeps_the_providers_id_and_model(first: bytes) -> None:
    """A payload that cannot be read before the one that names the reply is said inside the reply, once it
    has opened with the provider's id and model (it used to open the reply itself, with a random id)."""
    events = list(openai.parse_stream(first + sse(chunk({"content": "Hi"}, finish="stop"))))
    msg = reduce_ok(events)
    assert msg.id == "chatcmpl-x" and msg.text_content == "Hi"
    assert events[1]["type"] == "MODEL_CALL_START" and events[1]["modelName"] == "m"
    assert [e["name"] for e in events if e["type"] == "CUSTOM"] == ["agentmsg.problem"]
    # the same for a lone surrogate escape or invalid UTF-8 in the first payload itself
    body = sse(b'{"id": "chatcmpl-y", "model": "m", "choices": [{"index": 0, "delta": {"content": "a\\ud83d"}}]}')
    assert reduce_ok(list(openai.parse_stream(body))).id == "chatcmpl-y"
    bad = orjson.dumps(chunk({"content": "H\x00i"}, finish="stop")).replace(b"\\u0000", b"\xff")
    parser = openai.StreamParser()
    events = parser.feed(sse(bad)) + parser.close()
    assert reduce_ok(events).id == "chatcmpl-x" and [p.rule for p in parser.problems] == ["utf-8"]


def test_a_note_said_of_a_choice_that_has_nothing_else_opens_it() -> None:
    """What is said of a choice (its log probabilities) before it has content is held until it opens; a
    choice that never has any opens at the end to say it."""
    logprobs = {"content": [{"token": "x", "logprob": -0.1, "bytes": [120], "top_logprobs": []}]}
    c1 = {**chunk({}, index=1), "choices": [{"index": 1, "delta": {}, "logprobs": logprobs, "finish_reason": "stop"}]}
    events = list(openai.parse_stream(sse(chunk({"content": "a"}, finish="stop"), c1)))
    assert reduce_ok(events).text_content == "a"
    second = reduce_events(events, source="choice/1")
    assert len(second) == 1 and second[0].content == []
    notes = [e for e in events if e["type"] == "CUSTOM"]
    assert len(notes) == 1 and notes[0]["source"] == "choice/1" and notes[0]["name"] == "agentmsg.not-kept"


def test_openai_fields_of_the_wrong_type_are_said_and_the_rest_kept() -> None:
    """A field whose JSON type the provider never sends is left out with a problem (rule ``type``), never
    dropped silently; the rest of the payload is kept."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"content": 5}, "a message's content is not a string (a JSON number)"),
        ({"refusal": ["no"]}, "a refusal is not a string (a JSON array)"),
        ({"reasoning_content": 1}, "reasoning_content is not a string (a JSON number)"),
        ({"tool_calls": {"0": 1}}, "tool_calls is a JSON object, not an array"),
        ({"function_call": "f"}, "function_call is a JSON string, not an object"),
        ({"tool_calls": [tc(0, "c1", ["f"], "{}")]}, "a tool call's name is not a string (a JSON array)"),
        ({"tool_calls": [tc(0, 7, "f", "{}")]}, "a tool call's id is not a string (a JSON number)"),
    ]
    for delta, said in cases:  # noqa: F402 (the helper said() is not used here)
        parser = openai.StreamParser()
        body = sse(chunk({"content": "ok"}), chunk(delta), chunk({"content": "!"}, finish="stop"))
        events = parser.feed(body) + parser.close()
        msg = reduce_ok(events)
        assert msg.text_content == "ok!", delta
        assert [str(p) for p in parser.problems] == [f"{said}: left out [type]"], delta
    # the rest of a call whose id has the wrong type is kept (its arguments, its name)
    parser = openai.StreamParser()
    events = parser.feed(sse(chunk({"tool_calls": [tc(0, 7, "f", '{"a": 1}')]}, finish="tool_calls"))) + parser.close()
    assert [(n, i) for _, n, i in calls(reduce_ok(events))] == [("f", {"a": 1})]
    # a finish reason or a delta of the wrong type
    for bad_choice, said in (
        ({"index": 0, "delta": {"content": "x"}, "finish_reason": 3}, "finish_reason is not a string (a JSON number)"),
        ({"index": 0, "delta": "x", "finish_reason": "stop"}, "a choice's delta is a JSON string, not an object"),
    ):
        parser = openai.StreamParser()
        events = parser.feed(sse({**chunk(), "choices": [bad_choice]})) + parser.close()
        assert said in str(parser.problems[0]), bad_choice


def test_a_tool_name_that_a_later_fragment_changes_is_said() -> None:
    """A call's name is set once (providers repeat it on every fragment); a later fragment with another name
    (a name split in two) is said once, not appended silently."""
    parser = openai.StreamParser()
    body = sse(
        chunk({"tool_calls": [tc(0, "c1", "get_", "{")]}),
        chunk({"tool_calls": [tc(0, None, "weather", "}")]}),
        chunk({"tool_calls": [tc(0, None, "more", "")]}),
        chunk({"tool_calls": [tc(0, "c1", "get_", "")]}, finish="tool_calls"),
    )
    events = parser.feed(body) + parser.close()
    assert [(n, i) for _, n, i in calls(reduce_ok(events))] == [("get_", {})]
    assert [p.rule for p in parser.problems] == ["name"]
    assert "'weather', not 'get_'" in parser.problems[0].message


def test_a_tool_name_split_before_its_arguments_is_joined() -> None:
    """A name split across the fragments before the call's first argument text (some compatible servers stream
    it as they stream arguments: "get_", then "weather") is one name, as ChatCompletionStreamState joins it (the
    first piece was kept, the rest said and dropped), a later call's fragments between the pieces or not; a
    fragment that repeats the name so far repeats it, and each call keeps its place."""
    parser = openai.StreamParser()
    body = sse(
        chunk({"role": "assistant", "tool_calls": [tc(0, "c1", "get_", "")]}),
        chunk({"tool_calls": [tc(1, "c2", "now", "")]}),
        chunk({"tool_calls": [tc(0, None, "weather")]}),
        chunk({"tool_calls": [tc(2, "c3", "lo", "")]}),
        chunk({"tool_calls": [tc(0, None, "get_weather", '{"city":')]}),
        chunk({"tool_calls": [tc(2, None, "g", "{}")]}),
        chunk({"tool_calls": [tc(0, None, None, '"Paris"}')]}, finish="tool_calls"),
    )
    events = parser.feed(body) + parser.close()
    assert calls(reduce_ok(events)) == [("c1", "get_weather", {"city": "Paris"}), ("c2", "now", {}), ("c3", "log", {})]
    assert parser.problems == []


def test_a_name_piece_like_the_name_so_far_is_a_piece_when_a_new_piece_follows() -> None:
    """A fragment before the arguments that repeats the name so far is read as the name repeated (servers that send
    it on every fragment), but when a new piece follows it, it was a piece too: "c", "c", "x_" is "ccx_", as
    ChatCompletionStreamState joins it (it was "cx_": a name the model never wrote, nothing said)."""
    parser = openai.StreamParser()
    body = sse(
        chunk({"tool_calls": [tc(0, "c1", "c", "")]}),
        chunk({"tool_calls": [tc(0, None, "c")]}),
        chunk({"tool_calls": [tc(0, None, "x_")]}),
        chunk({"tool_calls": [tc(0, None, "_z", '{"a":')]}),
        chunk({"tool_calls": [tc(0, None, "ccx__z", "1}")]}, finish="tool_calls"),  # the whole name again
    )
    events = parser.feed(body) + parser.close()
    assert calls(reduce_ok(events)) == [("c1", "ccx__z", {"a": 1})]
    assert parser.problems == []


def test_a_call_waiting_for_its_argument_text_keeps_its_place_before_what_follows() -> None:
    """A call waits for its first argument text (its name may still be split), but once the reply moves on to text
    or reasoning its name is whole: it starts there, before them, as it came (a call that never gets argument
    text, a tool without parameters, was put after the text that followed it; whole, it is the same call)."""
    parser = openai.StreamParser()
    body = sse(
        chunk({"role": "assistant", "tool_calls": [tc(0, "c1", "get_", "")]}),
        chunk({"tool_calls": [tc(0, None, "time")]}),
        chunk({"reasoning_content": "Now the date."}),
        chunk({"tool_calls": [tc(1, "c2", "get_date", "")]}),
        chunk({"content": "Asking."}, finish="tool_calls"),
    )
    events = parser.feed(body) + parser.close()
    msg = reduce_ok(events)
    assert [b.type for b in msg.content] == ["tool_use", "thinking", "tool_use", "text"]
    assert calls(msg) == [("c1", "get_time", {}), ("c2", "get_date", {})]
    assert parser.problems == []


def test_a_call_without_argument_text_does_not_hold_back_the_calls_after_it() -> None:
    """A call that gets no argument text (a tool without parameters) waited, for its name might still grow, until
    the reply moved on or ended, and every later call's events waited behind it: a live consumer saw them only at
    the end. Calls come in index order and a name is split only before its call's argument text, so once a later
    call's argument text comes the call before it is whole: it starts then, and the later call's text flows as it
    arrives. The split name is still joined, the repeat still not, and the message is the same, fed whole."""
    payloads = [
        chunk({"role": "assistant", "tool_calls": [tc(0, "c1", "get_", "")]}),
        chunk({"tool_calls": [tc(0, None, "time")]}),  # a piece of the name
        chunk({"tool_calls": [tc(0, None, "get_time")]}),  # the whole name repeated
        chunk({"tool_calls": [tc(1, "c2", "look", "")]}),
        chunk({"tool_calls": [tc(1, None, "up", '{"q": ')]}),
        chunk({"tool_calls": [tc(1, None, None, '"x"}')]}),
        chunk({"tool_calls": [tc(2, "c3", "now", "")]}),
        chunk({}, finish="tool_calls"),
    ]
    parser = openai.StreamParser()
    seen = [
        [
            (e["type"], e.get("toolCallId"), e.get("delta"))
            for e in parser.feed(sse(p, done=False))
            if "TOOL" in e["type"]
        ]
        for p in payloads
    ]
    assert seen[:4] == [[], [], [], []]  # c1 may still grow its name: it waits; c2 waits behind it
    assert seen[4] == [
        ("TOOL_CALL_START", "c1", None),
        ("TOOL_CALL_START", "c2", None),
        ("TOOL_CALL_DELTA", "c2", '{"q": '),
    ]
    assert seen[5] == [("TOOL_CALL_DELTA", "c2", '"x"}')]
    assert seen[6] == []  # c3 (no argument text yet, and none after it) waits for the end
    end = parser.feed(b"data: [DONE]\n\n") + parser.close()
    assert [(e["type"], e.get("toolCallId")) for e in end if e["type"].startswith("TOOL")] == [
        ("TOOL_CALL_END", "c1"),
        ("TOOL_CALL_END", "c2"),
        ("TOOL_CALL_START", "c3"),
        ("TOOL_CALL_END", "c3"),
    ]
    expected = [("c1", "get_time", {}), ("c2", "lookup", {"q": "x"}), ("c3", "now", {})]
    assert calls(reduce_ok(list(openai.parse_stream(sse(*payloads))))) == expected
    assert parser.problems == []


def test_a_legacy_function_call_streams_as_it_arrives() -> None:
    """The legacy ``function_call`` (the deprecated functions API) has no id field: the call waited for an id that
    never comes, so none of it was emitted before the reply ended. It starts (its id derived) at its first argument
    text, its name joined before it; the message is the one it was, and the whole response's."""
    payloads = [
        chunk({"role": "assistant", "function_call": {"name": "get_", "arguments": ""}}),
        chunk({"function_call": {"name": "weather"}}),
        chunk({"function_call": {"arguments": '{"city":'}}),
        chunk({"function_call": {"arguments": '"Paris"}'}}),
        chunk({}, finish="function_call"),
    ]
    parser = openai.StreamParser()
    seen = [
        [(e["type"], e.get("delta")) for e in parser.feed(sse(p, done=False)) if "TOOL" in e["type"]] for p in payloads
    ]
    assert seen[:2] == [[], []]
    assert seen[2:4] == [
        [("TOOL_CALL_START", None), ("TOOL_CALL_DELTA", '{"city":')],
        [("TOOL_CALL_DELTA", '"Paris"}')],
    ]
    streamed = reduce_ok(list(openai.parse_stream(sse(*payloads))))
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    whole = {
        "id": "chatcmpl-x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
    }
    assert calls(streamed) == calls(reduce_ok(openai.response_events(whole)))
    assert [(n, i) for _, n, i in calls(streamed)] == [("get_weather", {"city": "Paris"})]


def test_arguments_with_a_number_beyond_a_double_are_said_as_such_not_as_unfinished() -> None:
    """Arguments that are whole JSON but hold a number no double can hold (1e400: the codec refuses it, the
    message keeps them raw with argumentsError) are said as JSON the message cannot hold (rule json, the
    number named), streamed and whole; they were said as "not whole JSON" (incomplete), as if cut short."""
    args = '{"x": [1, -1e400], "y": 2e999}'
    body = sse(chunk({"tool_calls": [tc(0, "c1", "f", args)]}), chunk({}, finish="tool_calls"))
    whole = {
        "id": "x",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": args}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    for events in (list(openai.parse_stream(body)), openai.response_events(whole)):
        (block,) = all_of(ToolUseBlock, reduce_ok(events).content)
        assert (block.content, (block.metadata or {})["argumentsError"]) == (args, "arguments are not valid JSON")
        said = [(e["value"]["rule"], e["value"]["message"]) for e in events if e.get("name") == "agentmsg.problem"]
        assert said == [
            (
                "json",
                "tool call 'f''s arguments are JSON the message cannot hold (a number beyond a double's range:"
                " -1e400): kept as they came (raw, with argumentsError)",
            )
        ]
    # cut short, they are still unfinished
    body = sse(chunk({"tool_calls": [tc(0, "c1", "f", '{"x": 1e400')]}), chunk({}, finish="length"))
    assert [e["value"]["rule"] for e in openai.parse_stream(body) if e.get("name") == "agentmsg.problem"] == [
        "incomplete"
    ]


# Recorded from Snowflake Cortex's OpenAI-compatible chat completions by github:pydantic/pydantic-ai@4fda38988f29
# tests/models/cassettes/test_snowflake/test_snowflake_model_simple.yaml (interaction 0, response; MIT licence).
SNOWFLAKE_RESPONSE = (
    b'{"choices": [{"finish_reason": "", "index": 0, "logprobs": {"content": null, "refusal": null}, "message":'
    b' {"annotations": null, "audio": {"data": "", "expires_at": 0, "id": "", "transcript": ""}, "content": "4",'
    b' "function_call": {"arguments": "", "name": ""}, "refusal": "", "role": "assistant", "tool_calls": null}}],'
    b' "created": 1783468047, "id": "", "model": "claude-sonnet-4-6", "object": "chat.completion",'
    b' "service_tier": "", "system_fingerprint": "", "usage": {"completion_tokens": 5, "completion_tokens_details":'
    b' {"accepted_prediction_tokens": 0, "audio_tokens": 0, "reasoning_tokens": 0, "rejected_prediction_tokens": 0},'
    b' "prompt_tokens": 22, "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0}, "total_tokens": 27}}'
)


def test_snowflake_zero_valued_function_call_and_audio_are_no_call_and_no_audio() -> None:
    """Snowflake's server writes every field of a message, unset ones as zero values: ``function_call`` as
    ``{"name": "", "arguments": ""}`` and ``audio`` as ``{"data": "", "id": "", "transcript": "", "expires_at": 0}``
    on a plain text reply. They carry nothing: no tool call (it was a call with no name, TOOL_CALLS, said as a
    problem) and no audio (its expires_at 0 was said as not kept); streamed alike."""
    events = openai.response_events(SNOWFLAKE_RESPONSE)
    msg = reduce_ok(events)
    assert msg.text_content == "4" and msg.blocks("tool_use") == [] and msg.generate_reason == "MODEL_STOP"
    assert [e for e in events if e["type"] == "CUSTOM"] == []
    delta = {"content": "4", "function_call": {"name": "", "arguments": ""}, "audio": {"id": "", "expires_at": 0}}
    events = list(openai.parse_stream(sse(chunk(delta), chunk({}, finish="stop"))))
    assert reduce_ok(events).blocks("tool_use") == [] and [e for e in events if e["type"] == "CUSTOM"] == []


def test_arguments_that_are_json_but_no_object_are_said() -> None:
    """A call whose arguments are JSON but not an object (a tool's input is one) keeps them raw with
    argumentsError in the message, and the parser says so (problem ``type``), as it says arguments that are not
    whole JSON (``incomplete``)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({"id": "c", "model": "m", "choices": [choice]}) + b"\n\n"

    call = {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}
    parser = openai.StreamParser()
    events = parser.feed(chunk({"tool_calls": [call]}) + chunk({}, "tool_calls") + b"data: [DONE]\n\n")
    events += parser.close()
    (block,) = all_of(ToolUseBlock, reduce_ok(events).content)
    assert block.content == "[1, 2]" and (block.metadata or {})["argumentsError"].startswith(
        "arguments are JSON but not"
    )
    assert [(p.rule, p.message.split(":")[0]) for p in parser.problems] == [
        ("type", "tool call 'f''s arguments are JSON but not an object (array)")
    ]


def test_azure_content_filter_results_are_said_as_not_kept() -> None:
    """Azure's first chunk (no choices, empty id) carries prompt_filter_results; each choice content_filter_results.
    Both are said once as not kept, inside the reply named by the chunks that follow."""
    first = {"id": "", "model": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    filt = {"hate": {"filtered": False, "severity": "safe"}}
    c = {**chunk(), "choices": [{"index": 0, "delta": {"content": "Hi"}, "content_filter_results": filt}]}
    parser = openai.StreamParser()
    events = parser.feed(sse(first, c, c, chunk({}, finish="stop"))) + parser.close()
    msg = reduce_ok(events)
    assert msg.id == "chatcmpl-x" and msg.text_content == "HiHi" and parser.problems == []
    assert [n.message.split(" (")[0] for n in parser.builder.not_kept_notes] == [
        "prompt filter results",
        "content filter results",
    ]


@pytest.mark.parametrize("key", ["moderation", "citations", "search_results", "prompt_filter_results"])
def test_what_a_chunk_says_beside_its_choices_is_said_on_any_chunk(key: str) -> None:
    # ChatCompletionChunk's moderation (Perplexity's citations...) on a chunk that carries a choice's text and does
    # not end it was dropped unsaid, while the same field in a whole response was said: the stream and the whole
    # reply disagreed
    value = [{"flagged": True}] if key != "citations" else ["https://a.example"]
    first = {**chunk({"content": "Hi"}), key: value}
    body = {
        "id": "chatcmpl-x",
        "model": "gpt-x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        key: value,
    }
    for events in (list(openai.parse_stream(sse(first, chunk({}, finish="stop")))), openai.response_events(body)):
        assert reduce_ok(events).text_content == "Hi"
        notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
        assert len(notes) == 1 and f"({key})" in notes[0]


def test_a_chat_completions_errors_param_is_kept() -> None:
    # OpenAI's error object is {message, type, param, code}: the reader kept all but param (the request parameter
    # at fault), dropped unsaid; the Responses reader keeps it
    err = {"message": "bad", "type": "invalid_request_error", "param": "messages[0].content", "code": "x"}
    for events in (list(openai.parse_stream(sse({"error": err}))), openai.response_events({"error": err})):
        (value,) = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
        assert (value["message"], value["code"], value["param"]) == ("bad", "x", "messages[0].content")


def test_openai_compatible_stop_that_ended_the_reply_is_said_as_not_kept() -> None:
    # vLLM's stop_reason (the stop string or token id) and SGLang's matched_stop were dropped unsaid; Anthropic's
    # stop_sequence is said; null (the model ended it) says nothing
    for key, value in (("stop_reason", "###"), ("matched_stop", 128009), ("stop_reason", None)):
        last = chunk({}, "stop")
        last["choices"][0][key] = value
        body: dict[str, Any] = {
            "id": "c1",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
        }
        body["choices"][0] |= {"finish_reason": "stop", key: value}
        for events in (list(openai.parse_stream(sse(chunk({"content": "hi"}), last))), openai.response_events(body)):
            assert reduce_ok(events).text_content == "hi"
            notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
            assert notes == (
                [] if value is None else [f"the stop that ended the reply ({key}: {str(value)!r}) is not kept"]
            )


def test_a_call_waiting_for_its_name_is_not_started_nameless_when_a_later_call_ends() -> None:
    # call_a has no name yet; call_b ends (a new id at its index): call_a was started then with name "", and its
    # name, which came later, was lost, unsaid (the reducer keeps the START's name)
    body = sse(
        chunk({"tool_calls": [tc(0, "call_a", args="{}")]}),
        chunk({"tool_calls": [tc(1, "call_b", "g", "{}")]}),
        chunk({"tool_calls": [tc(1, "call_c", "h", "{}")]}),
        chunk({"tool_calls": [tc(0, name="f")]}, "tool_calls"),
    )
    events = list(openai.parse_stream(body))
    assert calls(reduce_ok(events)) == [("call_a", "f", {}), ("call_b", "g", {}), ("call_c", "h", {})]
    assert said(events) == []


def test_a_response_body_with_a_utf8_bom_is_read(tmp_path: Path) -> None:
    body = orjson.dumps(
        {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}]}
    )
    plain = openai.parse_response(body)
    for bom in (b"\xef\xbb\xbf" + body, "\ufeff" + body.decode(), bytearray(b"\xef\xbb\xbf" + body)):
        # a bytearray on purpose: read as bytes, though the signature names bytes, str and a mapping
        msg = openai.parse_response(bom)  # type: ignore[arg-type]
        assert msg.content == plain.content and msg.to_dict()["metadata"] == plain.to_dict()["metadata"]
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + body)
    assert main(["parse", "--provider", "openai", str(path)]) == 0


def test_azure_legacy_on_your_data_messages_are_read() -> None:
    def legacy(*messages: Any, finish: str | None = None) -> dict[str, Any]:
        ch: dict[str, Any] = {"index": 0, "messages": [{"delta": m, "end_turn": False} for m in messages]}
        if finish:
            ch["finish_reason"] = finish
        return {"id": "response-id", "model": "", "object": "chat.completion", "choices": [ch]}

    body = sse(
        legacy({"role": "tool", "content": '{"citations": []}'}),
        legacy({"role": "assistant", "content": "Test chat"}),
        legacy({"content": " with data"}, finish="stop"),
    )
    events = list(openai.parse_stream(body))
    assert reduce_ok(events).text_content == "Test chat with data"
    assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]
    whole = {
        "id": "response-id",
        "model": "",
        "choices": [
            {
                "index": 0,
                "messages": [
                    {"role": "tool", "content": '{"citations": []}', "end_turn": False},
                    {"role": "assistant", "content": "Test chat with data", "end_turn": True},
                ],
                "finish_reason": "stop",
            }
        ],
    }
    events = openai.response_events(whole)
    assert reduce_ok(events).text_content == "Test chat with data"
    assert said(events, "agentmsg.not-kept") == ["not-kept"]


def test_openai_response_choice_index_of_a_boolean_is_no_choice_number(tmp_path: Any, capsys: Any) -> None:
    # index true was read as the int it subclasses: its events came as source "choice/True", and
    # `agentmsg parse --choice all` raised ValueError (a traceback) sorting the choices. It is choice 0, said (a
    # problem of the input: parse exits 1, the message printed)
    from agentmsg.cli import main

    body = {"id": "x", "choices": [{"index": True, "finish_reason": "stop", "message": {"content": "a"}}]}
    events = openai.response_events(body)
    assert {e.get("source") for e in events} == {None}
    assert custom(events) == [("agentmsg.problem", "type")]
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(body))
    assert main(["parse", "--provider", "openai", "--choice", "all", str(path)]) == 1
    out = capsys.readouterr()
    assert '"text":"a"' in out.out and "a choice's index is not an integer (a JSON boolean): read as 0" in out.err


def test_a_bad_field_a_provider_repeats_on_every_chunk_is_said_once() -> None:
    # the same problem, word for word, from every chunk (a bad images field on each delta) was said per chunk:
    # 1,000 chunks, 1,000 problems of the same news; what differs is still said
    def bad(images: Any) -> dict[str, Any]:
        return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "x", "images": images}}]}

    events = list(openai.parse_stream(sse(*[bad(5)] * 1000, bad("no"), bad(5))))
    said = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.problem"]
    assert said == [
        "images is a JSON number, not an array: left out",
        "images is a JSON string, not an array: left out",
    ]
    assert reduce_ok(events).text_content == "x" * 1002


_WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(40)


def _audio_chunks(raw: bytes, size: int, content: str | None = None) -> list[dict[str, Any]]:
    """A stream of the reply as OpenAI sends it: the id with the first transcript piece, then transcript and data
    pieces interleaved (each data piece its own base64, padded), then the expiry with the id again."""
    out = [chunk({"role": "assistant", "content": None, "audio": {"id": "audio_1", "transcript": "Hello"}})]
    if content:
        out.insert(0, chunk({"content": content}))
    for n, k in enumerate(range(0, len(raw), size)):
        out.append(chunk({"audio": {"data": base64.b64encode(raw[k : k + size]).decode()}}))
        if n == 3:
            out.append(chunk({"audio": {"transcript": " there"}}))
    return [*out, chunk({"audio": {"expires_at": 1729, "id": "audio_1"}}), chunk({}, "stop")]


def _notes(events: list[dict[str, Any]]) -> list[str]:
    return [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]


def test_openai_audio_reply_keeps_its_transcript_and_audio_whole_and_streamed() -> None:
    """The transcript (the words spoken; content is null) is a text block, the audio a data block (its base64, its
    id the audio's, its media type read from its bytes); a stream gives the same message, the data pieces (each its
    own padded base64) re-chunked so the deltas join into valid base64, on any chunking of the body."""
    whole = reduce_ok(openai.response_events(_audio_response(_PCM)))
    data = {"type": "base64", "media_type": "audio/pcm;rate=24000", "data": base64.b64encode(_PCM).decode()}
    assert whole.to_dict()["content"] == [
        {"type": "text", "text": "Hello there"},
        {"type": "data", "source": data, "id": "audio_1"},
    ]
    chunks = _audio_chunks(_PCM, 7)
    assert sum(c["choices"][0]["delta"].get("audio", {}).get("data", "").endswith("=") for c in chunks) > 10
    body = sse(*chunks)
    events = list(openai.parse_stream(body))
    deltas = [e["delta"] for e in events if e["type"] == "DATA_BLOCK_DELTA"]
    assert all("=" not in d for d in deltas[:-1]) and len(deltas) > 10
    streamed = reduce_ok(events)
    assert streamed.to_dict()["content"] == whole.to_dict()["content"]
    one_byte = reduce_ok(list(openai.parse_stream([body[k : k + 1] for k in range(len(body))])))
    assert one_byte.to_dict()["content"] == whole.to_dict()["content"]
    # the expiry has no place: said, streamed and whole alike
    expiry = [n for n in _notes(events) if "expires_at" in n]
    assert len(expiry) == 1 and expiry == [n for n in _notes(openai.response_events(_audio_response(_PCM)))]
    assert not any("audio output" in n for n in _notes(events))


def test_openai_audio_reply_text_content_too_media_types_and_bad_pieces() -> None:
    """Text content beside the transcript: both kept, in order, as blocks of their own; a WAV / MP3 / FLAC / Ogg
    header names its type; data that comes before any transcript still follows it; a piece that is no base64 is
    said and the rest kept."""
    msg = reduce_ok(openai.response_events(_audio_response(_WAV, content="Sure.")))
    assert [b.type for b in msg.content] == ["text", "text", "data"]
    assert [b.text for b in msg.blocks("text")] == ["Sure.", "Hello there"]
    assert msg.to_dict()["content"][2]["source"]["media_type"] == "audio/wav"
    streamed = reduce_ok(list(openai.parse_stream(sse(*_audio_chunks(_WAV, 5, content="Sure.")))))
    assert streamed.to_dict()["content"] == msg.to_dict()["content"]
    for head, mime in [
        (b"ID3\x04\x00", "audio/mpeg"),
        (b"\xff\xfb\x90\x64", "audio/mpeg"),
        (b"fLaC\x00\x00\x00\x22", "audio/flac"),
        (b"OggS\x00\x02", "audio/ogg"),
        (b"\xff\xff\x00\x00", "audio/pcm;rate=24000"),  # pcm16 near silence: no MP3 frame header
    ]:
        raw = head + bytes(20)
        for events in (
            openai.response_events(_audio_response(raw)),
            list(openai.parse_stream(sse(*_audio_chunks(raw, 2)))),
        ):
            (block,) = reduce_ok(events).to_dict()["content"][1:]
            assert block["source"] == {"type": "base64", "media_type": mime, "data": base64.b64encode(raw).decode()}
    # the data before the transcript (and fewer bytes than the type is read from): it still comes after it
    early = [
        chunk({"audio": {"id": "audio_1", "data": base64.b64encode(_WAV[:5]).decode()}}),
        chunk({"audio": {"transcript": "Hello there"}}),
        chunk({"audio": {"data": base64.b64encode(_WAV[5:]).decode()}}),
        chunk({}, "stop"),
    ]
    whole = reduce_ok(openai.response_events(_audio_response(_WAV)))
    assert reduce_ok(list(openai.parse_stream(sse(*early)))).to_dict()["content"] == whole.to_dict()["content"]
    # a piece that is no base64: said, the others kept
    bad = _audio_chunks(_PCM, 6)
    bad.insert(3, chunk({"audio": {"data": "not base64!"}}))
    events = list(openai.parse_stream(sse(*bad)))
    assert [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"] == ["type"]
    r = Reducer()
    r.feed_many(events)
    (got,) = r.finish()
    assert got.to_dict()["content"] == reduce_ok(openai.response_events(_audio_response(_PCM))).to_dict()["content"]


def test_openai_audio_transcript_agrees_with_chat_completion_stream_state() -> None:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    chunks = _audio_chunks(_PCM, 9)
    state: Any = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(_oai_chunk(c))
    official = state.current_completion_snapshot.choices[0].message
    msg = reduce_ok(list(openai.parse_stream(sse(*chunks))))
    assert [b.text for b in msg.blocks("text")] == [official.audio.transcript]
    (block,) = msg.blocks("data")
    assert block.id == "audio_1" and official.audio.id == "audio_1audio_1"  # (the SDK joins the id's repeats too)
    # the SDK joins the pieces' base64 as strings (padding inside: no base64); each piece decoded, the same bytes
    audio = [c["choices"][0]["delta"].get("audio", {}) for c in chunks]
    pieces = [a["data"] for a in audio if "data" in a]
    assert "".join(pieces) == official.audio.data
    assert (
        base64.b64decode(one(agentmsg.Base64Source, block.source).data)
        == b"".join(base64.b64decode(p) for p in pieces)
        == _PCM
    )


def test_openai_an_error_beside_choices_keeps_what_they_carry_and_ends_there() -> None:
    """OpenRouter: finish_reason "error" with an error object on the chunk: the chunk's text is kept, the reply
    ends there; a usage chunk after it is skipped and said."""
    body = (
        oai("A") + oai("B", "error", error={"message": "upstream died", "code": 502}) + oai(usage={"total_tokens": 3})
    )
    parser = openai.StreamParser()
    msg = reduce_ok(parser.feed(body + b"data: [DONE]\n\n") + parser.close())
    assert (msg.text_content, msg.generate_reason.value) == ("AB", "INTERRUPTED")
    assert msg.usage is None
    assert [p.rule for p in parser.problems] == ["order"]


def _oc(tool_calls: list[dict[str, Any]] | None, finish: str | None = None) -> bytes:
    delta = {"tool_calls": tool_calls} if tool_calls else {}
    return data({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_probe_tool_call_ids_repeated_renamed_and_many() -> None:
    # two parallel calls sharing an id that every chunk repeats: the second (renamed x-2) keeps its fragments
    f = {"index": 0, "id": "x", "type": "function", "function": {"name": "f", "arguments": ""}}
    g = {"index": 1, "id": "x", "type": "function", "function": {"name": "g", "arguments": ""}}
    body = _oc([f]) + _oc([g])
    for i, (a, b) in enumerate(((b'{"a":', b'{"b":'), (b"1}", b"2}"))):
        del i
        body += _oc([{"index": 0, "id": "x", "function": {"arguments": a.decode()}}])
        body += _oc([{"index": 1, "id": "x", "function": {"arguments": b.decode()}}])
    msg, said = _run(openai.StreamParser(), body + _oc(None, "tool_calls") + b"data: [DONE]\n\n")
    assert calls(msg) == [("x", "f", {"a": 1}), ("x-2", "g", {"b": 2})] and len(msg.content) == 2
    assert said == ["id"]
    # a nameless fragment under another key joins the open call, and that key's later fragments stay with it
    body = _oc([{**f, "function": {"name": "f", "arguments": '{"a":'}}])
    body += _oc([{"index": 1, "id": "x", "function": {"arguments": "1"}}])
    body += _oc([{"index": 1, "function": {"arguments": "}"}}]) + _oc(None, "tool_calls") + b"data: [DONE]\n\n"
    msg, said = _run(openai.StreamParser(), body)
    assert calls(msg) == [("x", "f", {"a": 1})] and len(msg.content) == 1 and said == []
    # many calls with one id: each gets the next free suffix, without searching from -2 again (quadratic)
    parser = openai.StreamParser()
    n = 3000
    many = b"".join(_oc([{**f, "index": i, "function": {"name": "f", "arguments": "{}"}}]) for i in range(n))
    events = parser.feed(many + _oc(None, "tool_calls") + b"data: [DONE]\n\n") + parser.close()
    ids = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert ids == ["x"] + [f"x-{k}" for k in range(2, n + 1)]
    assert parser.builder._choices[0].suffixes == {"x": n + 1}


def test_probe_arguments_json_the_message_cannot_hold_are_said_as_such() -> None:
    """Arguments orjson reads but the message cannot hold (an integer beyond 64 bits, nesting beyond the
    limits) are said with the codec's rule, not left unsaid (the message has argumentsError)."""
    for args, rule in (
        ('{"a":123456789012345678901234567890}', "integer-range"),
        ('{"a":' + "[" * 300 + "]" * 300 + "}", "max-depth"),
    ):
        call = {"index": 0, "id": "x", "type": "function", "function": {"name": "f", "arguments": args}}
        msg, said = _run(openai.StreamParser(), _oc([call]) + _oc(None, "tool_calls") + b"data: [DONE]\n\n")
        (block,) = all_of(ToolUseBlock, msg.content)
        assert said == [rule] and block.content == args and "argumentsError" in (block.metadata or {})


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


REFUSED = "I'm very sorry, but I can't assist with that."


def test_an_openai_refusal_goes_back_to_openai_as_a_refusal() -> None:
    """OpenAI gave the refusal in message.refusal: the parser keeps it as a text block of its own, the message marked
    agentmsg_refusal. Sent back to OpenAI it is the assistant's refusal, no content (as OpenAI's own Agents SDK sends
    a refusal back): it went as the assistant's content, an answer the model never gave. Nothing is said: it is
    sent where OpenAI gave it."""
    for reply in _openai_refusals():
        assert reply.metadata["agentmsg_refusal"] is True and reply.text_content.startswith("I'm ")
        entry, request = _assistant("openai", reply)
        assert entry == {"role": "assistant", "refusal": reply.text_content}
        assert list(request.diagnostics) == []


def test_an_openai_refusal_after_an_answer_keeps_the_answer_as_content() -> None:
    """A reply with content and a refusal (two text blocks, content first): the content goes back as content, the
    refusal as the refusal (they went joined as one content)."""
    body = orjson.loads((FIX / "openai" / "chat_completion_refusal.json").read_bytes())
    body["choices"][0]["message"]["content"] = "Partly:"
    reply = openai.parse_response(body)
    assert [b.text for b in reply.blocks("text")] == ["Partly:", REFUSED]
    entry, _ = _assistant("openai", reply)
    assert entry == {"role": "assistant", "content": "Partly:", "refusal": REFUSED}


def test_a_refusals_place_whole_and_streamed_and_what_goes_back_as_the_refusal() -> None:
    """Pins docs/streams.md ("A refusal"): a whole reply's ``content`` and ``refusal`` have no order, read as content
    then refusal; a stream keeps its blocks in the order they came, so a refusal may come before the content, or
    after a call. The formatter sends the message's last text block back as the refusal (``refusal_at``): the reader
    marks the message (``agentmsg_refusal``), not the block (a text block has no metadata), so in a stream whose
    refusal came before the content the content is that block and goes back as the refusal (what the SDK's
    accumulator holds is in its two fields, whatever their order)."""
    pytest.importorskip("openai.lib.streaming.chat", reason="the official openai package is not installed")
    from tests.providers.openai.test_synthetic import openai_snapshot

    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    content, refusal, tool = {"content": "Partly:"}, {"refusal": "No."}, {"tool_calls": [call]}
    cases: list[
        tuple[list[dict[str, Any]], list[str], str]
    ] = [  # the deltas in the order they come, the blocks the stream keeps, the refusal sent back
        ([content, refusal], ["Partly:", "No."], "No."),
        ([refusal, content], ["No.", "Partly:"], "Partly:"),  # (the content, last: no block says which)
        ([tool, refusal], ["f", "No."], "No."),
        ([refusal, tool], ["No.", "f"], "No."),
    ]
    for deltas, blocks, sent in cases:
        chunks = [chunk({"role": "assistant", **d}, created=1) for d in deltas] + [chunk({}, "stop", created=1)]
        snapshot = openai_snapshot(chunks)
        whole = openai.parse_response(snapshot)
        streamed = reduce_ok(list(openai.parse_stream(sse(*chunks))))
        for msg in (whole, streamed):
            assert msg.metadata["agentmsg_refusal"] is True
        kept = [b.text if b.type == "text" else b.name for b in streamed.content]  # type: ignore[union-attr]
        assert kept == blocks, deltas
        # the whole reply: content, then refusal, and the calls after them (as the SDK's message lists its fields)
        m = snapshot["choices"][0]["message"]
        texts = [t for t in (m["content"], m["refusal"]) if t]
        assert [b.type for b in whole.content] == ["text"] * len(texts) + ["tool_use"] * len(m["tool_calls"] or ())
        assert [b.text for b in whole.blocks("text")] == texts
        assert _assistant("openai", whole)[0].get("refusal") == m["refusal"] == "No."
        entry = _assistant("openai", streamed)[0]
        assert entry.get("refusal") == sent, deltas
        if sent != m["refusal"]:  # (the refusal that came first goes back as the content)
            assert entry["content"] == m["refusal"]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _call(**fn: Any) -> dict[str, Any]:
    return _chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function", "function": fn}]})


class _CountedCall(_builder._Call):
    """A call that counts the characters of every name given to it."""

    written = 0

    def __setattr__(self, key: str, value: Any) -> None:
        if key == "name" and isinstance(value, str):
            _CountedCall.written += len(value)
        super().__setattr__(key, value)


@pytest.mark.parametrize("shape", ["growing", "letters"])
def test_a_name_in_many_pieces_is_joined_once(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name split across the fragments before the arguments is every piece joined (as the SDK's accumulator joins
    them); it was joined again at each piece (the pieces so far, or the name so far plus the piece): quadratic in
    the pieces, cubic for a server that sends the name so far growing (a name of 45,150 characters from 300 pieces
    wrote 4.5 million). Now the pieces are joined when the name is read: the characters written stay a small
    multiple of the body."""
    monkeypatch.setattr(_builder, "_Call", _CountedCall)
    if shape == "growing":
        pieces = ["f" * (i + 1) for i in range(300)]
        name = "f" * (300 * 301 // 2)
    else:
        pieces = ["f", *("x" * 5000)]
        name = "f" + "x" * 5000
    body = sse(*(_call(name=p) for p in pieces), _call(arguments="{}"), _chunk({}, "tool_calls"))
    _CountedCall.written = 0
    (msg,) = agentmsg.reduce_events(list(openai.parse_stream(body)))
    (call,) = all_of(ToolUseBlock, msg.content)
    assert call.name == name and call.input == {}
    assert _CountedCall.written <= 2 * len(body), (_CountedCall.written, len(body))


_SDK = str(Path(agentmsg.__file__).parent)


def _lines_run(run: Callable[[], Any]) -> int:
    """How many lines of the SDK's Python code ``run()`` executes: work counted, not timed."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if not frame.f_code.co_filename.startswith(_SDK):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return count


def _growth(make: Callable[[int], bytes], parse: Callable[[bytes], Any], n: int) -> float:
    """The work of parsing ``make(2n)`` over that of ``make(n)``: about 2 when linear, 4 when quadratic."""
    small, large = make(n), make(2 * n)
    return _lines_run(lambda: parse(large)) / _lines_run(lambda: parse(small))


def _events(mod: Any) -> Callable[[bytes], Any]:
    return lambda body: agentmsg.reduce_events(list(mod.parse_stream(body)))


def _choice(i: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": i, "delta": delta, "finish_reason": "stop"}]}


def _choices_with_a_problem(n: int) -> bytes:
    """Choices 1..n (no choice 0), each with two calls sharing an id: a problem said of each, held for choice 0."""
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    return sse(
        *(_choice(i, {"tool_calls": [{"index": k, "id": f"t{i}", **call} for k in (0, 1)]}) for i in range(1, n + 1))
    )


def _choices_with_audio(n: int) -> bytes:
    """Choices 0..n-1, each with 3 bytes of audio: too few to tell its type, so its block waits for the end."""
    audio = base64.b64encode(b"abc").decode()
    return sse(*(_choice(i, {"audio": {"id": f"a{i}", "data": audio}}) for i in range(n)))


@pytest.mark.parametrize("make", [_choices_with_a_problem, _choices_with_audio], ids=["held-problems", "waiting-audio"])
def test_many_choices_take_work_linear_in_them(make: Callable[[int], bytes]) -> None:
    """What the builder holds per choice (problems said before choice 0 opened, audio too short to start a block)
    was looked through whole at each choice that opened or closed: quadratic in the choices (8,000 choices with a
    problem each: 53 s). Now each choice finds its own: the SDK lines run grow as the choices (about 2 for twice
    as many; 2.7 and more before)."""
    events = list(openai.parse_stream(make(2)))
    if make is _choices_with_a_problem:  # said in choice 0, which opens to say them
        said = [e for e in events if e.get("name") == "agentmsg.problem"]
        assert [("source" in e, e["value"]["rule"]) for e in said] == [(False, "id"), (False, "id")]
    for i in (1, 2) if make is _choices_with_a_problem else (0, 1):
        (msg,) = agentmsg.reduce_events(events, source=f"choice/{i}" if i else None)
        assert [b.type for b in msg.content] == (["tool_use"] * 2 if make is _choices_with_a_problem else ["data"])
    assert _growth(make, _events(openai), 300) < 2.4


@pytest.mark.parametrize("streamed", [False, True])
def test_deepseek_cache_hits_are_read_from_prompt_cache_hit_tokens(streamed: bool) -> None:
    """DeepSeek reports its context-cache hits as usage.prompt_cache_hit_tokens (and the misses as
    prompt_cache_miss_tokens), without OpenAI's prompt_tokens_details.cached_tokens: the hits are the cached count,
    whole reply or stream. OpenAI's field, when both are there, is the one read."""
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_cache_hit_tokens": 7,
        "prompt_cache_miss_tokens": 3,
    }
    both = {**usage, "prompt_tokens_details": {"cached_tokens": 6}}
    for given, cached in ((usage, 7), (both, 6)):
        msg: agentmsg.Msg
        if streamed:
            body = sse(chunk({"content": "hi"}, "stop"), chunk(None, usage=given))
            msg = reduce_ok(list(openai.parse_stream(body, variant="deepseek")))
        else:
            reply = {
                "id": "x",
                "object": "chat.completion",
                "model": "deepseek-chat",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                "usage": given,
            }
            msg = openai.parse_response(reply, variant="deepseek")
        assert msg.usage is not None
        assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cached_tokens) == (10, 5, cached)


def test_openai_annotations_of_several_deltas_are_joined_and_odd_ones_said() -> None:
    """A stream's annotations deltas each add theirs (openai's accumulator takes one such delta and raises on a
    second: agentmsg keeps both, in order); annotations that are no list are said (type) and left out."""
    a = {"type": "url_citation", "url_citation": {"url": "https://a", "start_index": 0, "end_index": 1, "title": "A"}}
    b = {"type": "url_citation", "url_citation": {"url": "https://b", "start_index": 1, "end_index": 2, "title": "B"}}
    events = list(
        openai.parse_stream(
            sse(chunk({"content": "ab"}), chunk({"annotations": [a]}), chunk({"annotations": [b]}, "stop"))
        )
    )
    assert custom(events) == []
    assert reduce_ok(events).metadata["agentmsg_grounding"] == {"provider": "openai", "annotations": [a, b]}
    events = list(openai.parse_stream(sse(chunk({"content": "ab", "annotations": {"x": 1}}, "stop"))))
    assert custom(events) == [("agentmsg.problem", "type")]
    assert "agentmsg_grounding" not in reduce_ok(events).metadata


_DELTAS = [
    {"reasoning_content": "we think"},
    {"content": None, "reasoning_content": " more"},
    {"content": None, "role": "assistant", "reasoning_content": "x"},
    {"reasoning": "openrouter's"},
    {"content": None, "reasoning": "and"},
    {"reasoning_content": "", "reasoning": "both"},
    {"reasoning_content": "a", "reasoning": "b"},
    {"content": "", "reasoning_content": "c"},
    {"content": "text", "reasoning_content": "d"},
    {"reasoning_content": 5},
    {"reasoning_content": "e", "refusal": None},
    {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]},
    {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
    {"tool_calls": [{"index": 1, "function": {"arguments": "1}"}}]},
    {"content": "hi"},
    {"role": "assistant", "content": "there"},
]


@pytest.mark.parametrize("seed", range(40))
def test_the_readers_common_chunks_read_as_its_general_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader's short ways for its common chunks (a reasoning fragment, an arguments fragment) give the events
    the general path (``_message``, ``_tool_calls``) gives the same chunks: streams of such deltas in random order,
    read as they are and with the short ways turned off."""
    rng = random.Random(seed)
    body = b"".join(
        b"data: "
        + orjson.dumps(
            {
                "id": "chatcmpl-1",
                "model": "m",
                "choices": [{"index": 0, "delta": rng.choice(_DELTAS), "finish_reason": None}],
            }
        )
        + b"\n\n"
        for _ in range(rng.randint(1, 12))
    )

    def events() -> list[dict[str, Any]]:
        return route_events(openai, body, routes=False)

    want = events()
    monkeypatch.setattr(openai, "_reasoning_fragment", lambda delta: None)
    monkeypatch.setattr(openai, "_arguments_fragment", lambda delta: None)
    assert events() == want


def test_a_stream_chunk_given_as_a_whole_response_is_said() -> None:
    # openai's ChatCompletionChunk (choices with a delta, no message) given to parse_response: it read as an empty
    # message, the delta's text and tool call gone without a word; now each such choice is a problem (shape)
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionChunk

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    chunk = ChatCompletionChunk.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-x",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": "hi", "tool_calls": [call]},
                    "finish_reason": None,
                }
            ],
        }
    ).model_dump(mode="json", exclude_none=True)
    events = openai.response_events(orjson.dumps(chunk))
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert [p["rule"] for p in problems] == ["shape"] and "choice 0 has a delta" in problems[0]["message"]
    # the same chunk in a stream is read
    msg = reduce_ok(list(openai.parse_stream(b"data: " + orjson.dumps(chunk) + b"\n\ndata: [DONE]\n\n")))
    assert msg.text_content == "hi" and [b.name for b in msg.content if b.type == "tool_use"] == ["f"]
    # a choice with an empty delta beside its message says nothing
    whole = {
        **chunk,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "delta": {}}],
    }
    assert said(openai.response_events(orjson.dumps(whole))) == []


def test_what_the_reader_said_it_left_out_is_in_the_message_whole_and_streamed() -> None:
    """A usage count ``1e400`` is said and left out, and ``logprobs`` are said not kept: the message keeps the
    saying (metadata ``agentmsg_notes``: the values of the CUSTOM ``agentmsg.problem`` / ``agentmsg.not-kept``
    events, in order). The reducer dropped them: ``parse_response`` and a stream's message lost them."""
    logprobs = {"content": [{"token": "hi", "logprob": -0.1, "bytes": None, "top_logprobs": []}]}
    usage = b'"usage": {"prompt_tokens": 1e400, "completion_tokens": 2, "total_tokens": 3}'
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": "hi"},
        "finish_reason": "stop",
        "logprobs": logprobs,
    }
    body = b'{"id": "c1", "object": "chat.completion", "choices": [' + orjson.dumps(choice) + b"], " + usage + b"}"
    count = {"rule": "type", "message": "usage.prompt_tokens is no token count (1e400): not kept"}
    kept = {
        "rule": "not-kept",
        "message": "log probabilities (logprobs) are not kept (the message has no place for them)",
    }
    whole = openai.parse_response(body)
    assert whole.metadata["agentmsg_notes"] == [count, kept]
    assert whole.text_content == "hi" and whole.usage is not None and whole.usage.output_tokens == 2
    said = [e["value"] for e in openai.response_events(body) if e["type"] == "CUSTOM"]
    assert said == [count, kept]
    first = chunk({"role": "assistant", "content": "hi"})
    first["choices"][0]["logprobs"] = logprobs
    last = b'{"id": "c", "object": "chat.completion.chunk", "choices": [], ' + usage + b"}"
    streamed = reduce_ok(list(openai.parse_stream(sse(first, chunk({}, "stop"), last))))
    assert streamed.metadata["agentmsg_notes"] == [kept, count]
