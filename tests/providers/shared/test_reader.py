"""What every payload reader does (``agentmsg.providers._response`` and ``base.py``'s ``parse_stream`` /
``parse_response``), tested across providers: a provider's error ends the reply and what follows is said, raw
JSON values and plain-text errors are read, tool calls that never get a name or an id, usage counts that are no
counts, replies without a finish reason, payloads of no known shape; and the recorded payloads mutated (marker
``fuzz``): the readers never raise and every event they emit is valid."""

from __future__ import annotations

import importlib
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    Msg,
    ValidationError,
    reduce_events,
    validate,
)
from agentmsg.cli import main
from agentmsg.errors import MESSAGE_MAX
from agentmsg.providers import anthropic, dashscope, gemini, get, openai
from agentmsg.providers._response import builder as builder_module
from tests._support.budget import SEED, examples, rounds
from tests._support.deep import nested_arrays
from tests._support.mutators import (
    HUGE_VALUES,
    garble_bytes,
    hostile_json_text,
    hostile_payloads,
    mutate_json,
    mutate_payloads,
    random_cuts,
)
from tests._support.providers import (
    ANT_START,
    FIX,
    _nameless,
    _no_counts,
    calls,
    chunk,
    custom,
    data,
    dsc,
    ev,
    gem,
    gem_sse,
    oai,
    parser_for,
    reduce_ok,
    said,
    said_texts,
    sse,
    tc,
)
from tests._support.strategies import json_value


def test_media_a_reply_carries_becomes_media_blocks_in_place() -> None:
    """An image the model made (Gemini ``inlineData`` / ``fileData``, DashScope ``{"image": ...}`` parts) is
    a media block in its place, whole and streamed alike, and goes back to Gemini as it came; a part that
    cannot be read is a problem, a thought image is said as not kept: nothing is dropped silently."""
    png = "iVBORw0KGgo="
    parts = [
        {"text": "Here is your cat:"},
        {"inlineData": {"mimeType": "image/png", "data": png}, "thoughtSignature": "c2ln"},
        {"text": "Enjoy."},
        {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}},
    ]
    whole = {
        "responseId": "r1",
        "modelVersion": "gemini-image",
        "candidates": [{"index": 0, "content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
    }
    msg = gemini.parse_response(orjson.dumps(whole))
    content = msg.to_dict()["content"]
    assert [b["type"] for b in content] == ["text", "data", "thinking", "text", "data"]
    assert content[1]["source"] == {"type": "base64", "media_type": "image/png", "data": png}
    assert content[4]["source"] == {"type": "url", "url": "gs://b/v.mp4", "mime_type": "video/mp4"}
    streamed = sse(
        *(
            {**whole, "candidates": [{"content": {"parts": [p]}, **({"finishReason": "STOP"} if k == 3 else {})}]}
            for k, p in enumerate(parts)
        ),
        done=False,
    )
    assert reduce_ok(list(gemini.parse_stream(streamed))).to_dict()["content"] == content
    request = gemini.format_request([msg], model="m")
    assert request.body["contents"][0]["parts"] == parts  # the signature back on its image part
    assert not [d for d in request.diagnostics if d.rule != "thinking-dropped"]

    odd = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": "not base64!"}},
                        {"thought": True, "inlineData": {"mimeType": "image/png", "data": png}},
                        {"fileData": {"mimeType": "image/png"}},
                    ]
                },
                "finishReason": "STOP",
            }
        ]
    }
    events = list(gemini.parse_stream(sse(odd, done=False)))
    assert custom(events) == [
        ("agentmsg.problem", "type"),
        ("agentmsg.not-kept", "not-kept"),
        ("agentmsg.problem", "type"),
    ]
    assert reduce_ok(events).content == []

    image = {"image": "https://x/y.png?sig=1"}
    inline = {"image": f"data:image/png;base64,{png}"}
    reply = {
        "request_id": "q1",
        "output": {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": [image, {"text": "a cat"}, inline, {"weird": 1}]},
                }
            ]
        },
    }
    events = dashscope.response_events(orjson.dumps(reply))
    assert custom(events) == [("agentmsg.problem", "enum")]
    assert reduce_ok(events).to_dict()["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png?sig=1"}},
        {"type": "text", "text": "a cat"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
    ]
    # cumulative output repeats the parts so far: each image is taken once
    chunks = [[{"text": "a"}], [{"text": "a cat"}, image], [{"text": "a cat"}, image, inline]]
    body = sse(
        *(
            {"request_id": "q1", "output": {"choices": [{"finish_reason": "null", "message": {"content": c}}]}}
            for c in chunks
        ),
        {"request_id": "q1", "output": {"choices": [{"finish_reason": "stop", "message": {"content": chunks[-1]}}]}},
        done=False,
    )
    got = reduce_ok(list(dashscope.parse_stream(body))).to_dict()["content"]
    assert [b["type"] for b in got] == ["text", "image", "image"]
    assert got[0]["text"] == "a cat"


def test_done_without_a_finish_reason_is_a_whole_reply() -> None:
    """[DONE] (or Anthropic's message_stop) before any finish reason: the provider said the reply is over
    without saying why (Snowflake's OpenAI-compatible streams do so): the reply is whole, MODEL_STOP (TOOL_CALLS
    with calls), without agentmsg_finish_reason and without an error; a stream cut before its end is not."""
    events = list(openai.parse_stream(sse(chunk({"content": "Hi"}))))
    msg = reduce_ok(events)
    assert msg.text_content == "Hi" and msg.generate_reason == "MODEL_STOP"
    assert [e for e in events if e["type"] == "CUSTOM"] == []
    assert "agentmsg_finish_reason" not in msg.to_dict()["metadata"]
    with_call = list(openai.parse_stream(sse(chunk({"tool_calls": [tc(0, "c1", "f", "{}")]}))))
    assert reduce_ok(with_call).generate_reason == "TOOL_CALLS"
    cut = list(openai.parse_stream(sse(chunk({"content": "Hi"}), done=False)))
    assert [e["value"]["message"] for e in cut if e["type"] == "CUSTOM"] == [
        "the stream ended before the provider finished the reply"
    ]
    assert reduce_ok(cut).generate_reason == "INTERRUPTED"
    body = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {}}) + ev("message_stop")
    assert reduce_ok(list(anthropic.parse_stream(body))).generate_reason == "MODEL_STOP"


def test_an_event_without_data_is_no_news_but_an_error_event_without_data_is_an_error() -> None:
    """An SSE event whose data is empty (a ``ping`` with ``data:``, a keep-alive ``data:``) carries nothing: it is
    skipped, as the SDKs skip it, without a problem. An ``error`` event without data still ends the reply."""
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    rest = [
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
        ev("message_stop"),
    ]
    parser = anthropic.StreamParser()
    events = parser.feed(b"".join([start, b"event: ping\ndata: \n\n", *rest])) + parser.close()
    assert reduce_ok(events).text_content == "Hi" and parser.problems == []
    assert [e for e in events if e["type"] == "CUSTOM"] == []
    parser = openai.StreamParser()
    events = parser.feed(b"data:\n\n" + sse(chunk({"content": "Hi"}, finish="stop"))) + parser.close()
    assert reduce_ok(events).text_content == "Hi" and parser.problems == []
    events = list(anthropic.parse_stream(start + b"event: error\ndata:\n\n"))
    msg = reduce_ok(events)
    assert msg.generate_reason == "INTERRUPTED" and msg.to_dict()["metadata"]["agentmsg_errors"][0]["message"] == (
        "error event without data"
    )


def test_a_call_that_repeats_an_open_calls_id_is_a_call_of_its_own() -> None:
    """The same while the first call is still open: overlapping Anthropic tool_use blocks, or OpenAI parallel
    calls (two indexes) that share an id. A fragment under another key that names a call starts one (its id
    suffixed, said); they used to be joined, the second name lost and the arguments run together."""
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    blocks = [
        ev("content_block_start", index=i, content_block={"type": "tool_use", "id": "t1", "name": n, "input": {}})
        for i, n in enumerate("fg")
    ]
    blocks += [
        ev("content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": a})
        for i, a in enumerate(('{"x":1}', '{"y":2}'))
    ]
    blocks += [ev("content_block_stop", index=i) for i in range(2)]
    end = ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}) + ev("message_stop")
    parser = anthropic.StreamParser()
    events = parser.feed(b"".join([start, *blocks, end])) + parser.close()
    assert calls(reduce_ok(events)) == [("t1", "f", {"x": 1}), ("t1-2", "g", {"y": 2})]
    assert [p.rule for p in parser.problems] == ["id"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({"id": "c", "model": "m", "choices": [choice]}) + b"\n\n"

    tool_calls = [
        {"index": i, "id": "a", "type": "function", "function": {"name": n, "arguments": ""}}
        for i, n in enumerate("fg")
    ]
    body = chunk({"tool_calls": tool_calls})
    body += chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x":1}'}}]})
    body += chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"y":2}'}}]})
    body += chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    parser2 = openai.StreamParser()
    events = parser2.feed(body) + parser2.close()
    assert calls(reduce_ok(events)) == [("a", "f", {"x": 1}), ("a-2", "g", {"y": 2})]
    assert [p.rule for p in parser2.problems] == ["id"]
    # A fragment that repeats the open call's id without a name, under another index, is still that call's.
    again = chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x":'}}]})
    again += chunk({"tool_calls": [{"index": 5, "id": "a", "function": {"arguments": "1}"}}]})
    again += chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    assert calls(reduce_ok(list(openai.parse_stream(again)))) == [("a", "f", {"x": 1})]


def test_a_refusal_is_marked_on_the_message() -> None:
    """The model declining (OpenAI's ``refusal``, Anthropic's ``refusal`` stop reason) reaches the message as
    metadata ``agentmsg_refusal: true`` (its text is the reply's text), streamed and whole; an answer has none."""
    for path in ("openai/stream_refusal.sse", "anthropic/stream_sdk_refusal.sse"):
        mod = openai if path.startswith("openai") else anthropic
        msg = reduce_ok(list(mod.parse_stream((FIX / path).read_bytes())))
        assert msg.to_dict()["metadata"]["agentmsg_refusal"] is True, path
    whole = openai.parse_response((FIX / "openai" / "chat_completion_refusal.json").read_bytes())
    assert whole.to_dict()["metadata"]["agentmsg_refusal"] is True and whole.text_content
    answer = openai.parse_response((FIX / "openai" / "chat_completion_text.json").read_bytes())
    assert "agentmsg_refusal" not in answer.to_dict()["metadata"]
    # n > 1: only the choice that refused
    events = list(
        openai.parse_stream(
            sse(chunk({"refusal": "No."}, index=1, finish="stop"), chunk({"content": "Yes."}, finish="stop"))
        )
    )
    assert "agentmsg_refusal" not in reduce_ok(events).to_dict()["metadata"]
    assert reduce_events(events, source="choice/1")[0].to_dict()["metadata"]["agentmsg_refusal"] is True


def test_recorded_shapes_from_other_projects() -> None:
    """Shapes seen in streams recorded by other projects: an Anthropic message whole in its message_start
    (programmatic tool calling: content and stop reason there, then message_stop); compaction and fallback
    blocks said as not kept, their deltas skipped; a second message_start said; Mistral's content part lists
    with thinking parts; xAI's usage, whose completion_tokens leave the reasoning out; Perplexity's citations
    and OpenAI's moderation said; logprobs of nulls not said."""
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "rollDie", "input": {"player": "p2"}}
    start = {"id": "msg_1", "model": "claude", "content": [tool_use], "stop_reason": "tool_use", "usage": {}}
    msg = reduce_ok(list(anthropic.parse_stream(ev("message_start", message=start) + ev("message_stop"))))
    assert calls(msg) == [("toolu_1", "rollDie", {"player": "p2"})] and msg.generate_reason == "TOOL_CALLS"
    parser = anthropic.StreamParser()
    body = b"".join(
        [
            ev("message_start", message={"id": "msg_2", "model": "claude", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block={"type": "compaction", "content": None}),
            ev("content_block_delta", index=0, delta={"type": "compaction_delta", "content": "summary"}),
            ev("content_block_stop", index=0),
            ev("content_block_start", index=1, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hi"}),
            ev("content_block_stop", index=1),
            ev("message_start", message={"id": "msg_3", "model": "claude", "usage": {}}),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
            ev("message_stop"),
        ]
    )
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert msg.text_content == "Hi" and [p.rule for p in parser.problems] == ["order"]
    assert [n.message.split(" (")[0] for n in parser.builder.not_kept_notes] == ["the context compaction"]
    mistral: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "2+2"}]}]},
        {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " is 4"}]}]},
        {"content": [{"type": "text", "text": "4"}]},
    ]
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": 1,
        "total_tokens": 303,
        "completion_tokens_details": {"reasoning_tokens": 290},
    }
    parser = openai.StreamParser()
    body = sse(
        *[chunk(d) for d in mistral],
        chunk(
            {}, finish="stop", usage=usage, citations=["https://a.example"], moderation={"input": {"flagged": False}}
        ),
        {**chunk(), "choices": [{"index": 0, "delta": {}, "logprobs": {"content": None, "refusal": None}}]},
    )
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert said_texts(msg.content) == [
        ("thinking", "2+2 is 4"),
        ("text", "4"),
    ]
    assert msg.usage is not None and (msg.usage.output_tokens, msg.usage.total_tokens) == (291, 303)
    assert sorted(n.message.split(" (")[0] for n in parser.builder.not_kept_notes) == [
        "citations",
        "moderation results",
    ]


def test_raw_json_lines_are_read_for_every_provider_and_said_once() -> None:
    error = b'{"error": {"message": "overloaded", "type": "server_error"}}\n'
    body = sse(chunk({"content": "a"}), done=False) + error + b"\n" + error
    events = list(openai.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "a" and msg.to_dict()["metadata"]["agentmsg_errors"][0]["message"] == "overloaded"
    assert said(events) == ["sse", "order"]  # the second one comes after the error that ended the reply


#: Turns that are no reply: a request's user turn (Anthropic's, OpenAI's), an AgentScope Python message, an agentmsg
#: message (a user's, and an assistant's in agentmsg's own shape, which no provider streams)
_NOT_REPLIES = [
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {"role": "user", "content": "hi"},
    {"name": "u", "role": "user", "content": [{"type": "text", "text": "hi"}], "metadata": {}},
    {"id": "m", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}},
    {"id": "m", "role": "ASSISTANT", "content": [{"type": "text", "text": "hi"}], "metadata": {}},
]


@pytest.mark.parametrize("framing", ["json", "sse"])
@pytest.mark.parametrize("provider", agentmsg.providers.NAMES)
def test_a_turn_that_is_no_reply_read_as_a_stream_is_not_the_providers_reply(provider: str, framing: str) -> None:
    """Anthropic's stream reader took a lone JSON object with a content list for a whole Messages response that came
    where a stream was asked for, whatever its role: a request's user turn or an AgentScope Python message read as
    an assistant reply saying "hi", nothing said (its whole-reply reader refused it: role assistant only), and
    ``agentmsg validate`` of such a file said to read it with ``agentmsg parse --provider anthropic --stream``. No
    provider's stream reader makes a reply of a turn that is no reply: its text is not kept, and what was skipped is
    said."""
    reader = agentmsg.providers.get(provider)
    for turn in _NOT_REPLIES:
        body = orjson.dumps(turn) + b"\n" if framing == "json" else b"data: " + orjson.dumps(turn) + b"\n\n"
        parser = reader.stream_parser()
        events = parser.feed(body) + parser.close()
        kinds = [e["type"] for e in events]
        assert not [k for k in kinds if k.startswith(("TEXT_BLOCK", "THINKING_BLOCK", "TOOL_CALL"))], (turn, kinds)
        assert said(events), (turn, kinds)


#: A reply's first text ("hi") as each provider streams it, for the framing tests of every provider
HI = {
    "openai": sse(chunk({"content": "hi"}), done=False),
    "anthropic": ev("message_start", message={"id": "m1", "model": "c", "role": "assistant", "content": []})
    + ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
    + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"}),
    "gemini": sse(gem({"text": "hi"}), done=False),
    "dashscope": b'id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"output":{"choices":[{"message":'
    b'{"role":"assistant","content":"hi"},"finish_reason":"null"}]},"request_id":"q"}\n\n',
}


@pytest.mark.parametrize("provider", sorted(HI))
@pytest.mark.parametrize(
    "error",
    [b'{"code": "Throttling", "message": "boom"}\n', b'{\n  "code": "Throttling",\n  "message": "boom"\n}\n'],
    ids=["one-line", "pretty"],
)
def test_an_error_event_whose_data_is_a_raw_json_value_is_the_providers_error(provider: str, error: bytes) -> None:
    # `event: error`, then the error as a JSON value with no `data:`: the value is that event's data (the event
    # name was lost, and with it the error for the providers that know an error by its event: a payload of no
    # choices, a foreign payload, nothing said)
    module = agentmsg.providers.get(provider)
    bodies = [HI[provider] + name + error + b"\n" for name in (b"event: error\n", b"event:error\n")]
    if b"\n  " not in error:  # and as the event's data (Gemini read it as a response of nothing, said nothing)
        bodies.append(HI[provider] + b"event: error\ndata: " + error + b"\n")
    for body in bodies:
        events = list(module.parse_stream(body))
        msg = reduce_ok(events)
        meta = msg.to_dict()["metadata"]
        assert msg.text_content == "hi" and meta["agentscope_generate_reason"] == "INTERRUPTED"
        assert len(meta["agentmsg_errors"]) == 1 and "boom" in meta["agentmsg_errors"][0]["message"]
        assert said(events) == (["sse"] if b"data:" not in body[len(HI[provider]) :] else [])


def test_an_error_event_with_data_before_a_raw_json_value_keeps_its_own_data() -> None:
    # the event had its data: it is dispatched as it is, and the raw value after it is a payload of its own
    body = HI["openai"] + b'event: error\ndata: {"message": "first"}\n{"error": {"message": "second"}}\n\n'
    events = list(openai.parse_stream(body))
    meta = reduce_ok(events).to_dict()["metadata"]
    assert [e["message"] for e in meta["agentmsg_errors"]] == ["first"]
    assert said(events) == ["order"]  # the raw value came after the error that ended the reply: skipped, said


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_a_raw_json_value_with_invalid_utf8_is_said_as_read_outside_a_field_and_as_replaced(size: int) -> None:
    # two things happened, each said once: the value was read outside any SSE field (sse), and bytes were
    # replaced (utf-8); the raw value was said as utf-8 only
    body = HI["gemini"] + b'{"error": {"code": 500, "message": "bad \xff byte", "status": "INTERNAL"}}\n'
    parser = gemini.StreamParser()
    events = [e for k in range(0, len(body), size) for e in parser.feed(body[k : k + size])] + parser.close()
    meta = reduce_ok(events).to_dict()["metadata"]
    assert meta["agentmsg_errors"][0]["message"] == "bad \ufffd byte"
    assert said(events) == ["sse", "utf-8"]
    # a cut one is skipped whole: said as read outside a field and cut, its bytes not read
    cut = HI["gemini"] + b'{"error": {"code": 500, "message": "bad \xff byte",\n\n'
    events = list(gemini.parse_stream(cut))
    assert said(events) == ["sse", "incomplete"]
    assert reduce_ok(events).text_content == "hi"


@pytest.mark.parametrize("provider", sorted(HI))
def test_a_plain_text_error_on_lines_of_no_sse_field_is_the_providers_error(provider: str) -> None:
    # `event: error`, then its text with no `data:` (a proxy's): the spec dispatches nothing (no data), so the
    # error was lost and the reply read as a cut stream; `event: error` alone was lost too
    module = agentmsg.providers.get(provider)
    for tail, message in (
        (b"event: error\nInternal Server Error\n\n", "Internal Server Error"),
        (b"event: error\nupstream: timed out\nafter 30 s\n\n", "upstream: timed out\nafter 30 s"),
        (b"event: error\n\n", "error event without data"),
    ):
        events = list(module.parse_stream(HI[provider] + tail))
        msg = reduce_ok(events)
        meta = msg.to_dict()["metadata"]
        assert msg.text_content == "hi" and meta["agentscope_generate_reason"] == "INTERRUPTED"
        assert [e["message"] for e in meta["agentmsg_errors"]] == [message]
        assert said(events) == ([] if tail == b"event: error\n\n" else ["sse"])


def test_lines_of_no_sse_field_that_are_no_json_are_said_once() -> None:
    # a proxy's HTML page, a stray line: the spec skips them, and so does agentmsg, but no longer silently
    body = HI["openai"] + b"<html>\n<body>502 Bad Gateway</body>\n\ngarbage\n\n" + sse(chunk({"content": "!"}, "stop"))
    events = list(openai.parse_stream(body))
    assert reduce_ok(events).text_content == "hi!"
    assert said(events) == ["sse"]
    assert "'<html>'" in next(e["value"]["message"] for e in events if e["type"] == "CUSTOM")


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", sorted(HI))
def test_a_tool_call_that_never_gets_a_name_is_said_once(provider: str, whole: bool) -> None:
    module = agentmsg.providers.get(provider)

    def read(name: Any) -> tuple[agentmsg.AssistantMessage, list[str]]:
        body = _nameless(provider, name, whole)
        events = module.response_events(body) if whole else list(module.parse_stream(body))
        return reduce_ok(events), said(events)

    for name in (None, ""):  # kept with an empty name, and said (it was not)
        msg, rules = read(name)
        (call,) = msg.blocks("tool_use")
        assert call.name == "" and call.input == {"a": 1}
        assert rules == ["required"]
    # a name that is no text is said as such, once, and not again as missing (an earlier attempt said both);
    # Gemini made it text ("5"), unsaid; Anthropic skipped the whole call (its id and input lost)
    msg, rules = read(5)
    (call,) = msg.blocks("tool_use")
    assert call.name == "" and call.input == {"a": 1} and rules == ["type"]
    msg, rules = read("f")
    assert [c.name for c in msg.blocks("tool_use")] == ["f"] and rules == []


def test_a_tool_call_whose_id_is_no_text_keeps_its_name_and_input() -> None:
    # the whole fragment was skipped: Anthropic's call lost its name (a nameless call made of its deltas) or
    # was lost whole (a response's)
    body = _nameless("anthropic", "f", whole=True)
    body["content"][0]["id"] = 5
    streamed = _nameless("anthropic", "f", whole=False).replace(b'"id":"t1"', b'"id":5')
    for events in (anthropic.response_events(body), list(anthropic.parse_stream(streamed))):
        (call,) = reduce_ok(events).blocks("tool_use")
        assert call.name == "f" and call.input == {"a": 1} and call.id.startswith("call_")
        assert said(events) == ["type"]


def _indexed(provider: str, index: Any, text: str, finish: str | None = None) -> dict[str, Any]:
    """A payload of ``provider`` (a stream's chunk; ``finish``: the last one) whose one choice (Gemini: candidate) has
    the ``index`` given (``...``: none) and the text given."""
    at = {} if index is ... else {"index": index}
    if provider == "openai":
        return {"id": "c1", "model": "m", "choices": [{**at, "delta": {"content": text}, "finish_reason": finish}]}
    if provider == "gemini":
        cand = {**at, "content": {"role": "model", "parts": [{"text": text}]}}
        return {"candidates": [{**cand, "finishReason": finish} if finish else cand], "responseId": "r1"}
    choice = {**at, "message": {"role": "assistant", "content": text}, "finish_reason": finish or "null"}
    return {"output": {"choices": [choice]}, "request_id": "q1"}


def _written(*payloads: Any) -> bytes:
    """SSE of the payloads, written by the standard library (an integer beyond 64 bits too)."""
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


@pytest.mark.parametrize("index", [True, "1", 1.5, [0]], ids=["true", "string", "fraction", "list"])
@pytest.mark.parametrize("provider", ["openai", "gemini", "dashscope"])
def test_a_choice_index_that_is_no_integer_is_said_and_read_as_the_first(provider: str, index: Any) -> None:
    """A choice's (Gemini: a candidate's) index that is no integer (true, "1", 1.5, a list) was read as choice 0
    unsaid (DashScope: as its place in the list), its text joined to the first choice's: a rewrite no note told. It
    is still read so (the text kept, in its place) and said (rule type), once per reply, streamed and whole; an index
    left out, or null, is the first choice and says nothing."""
    mod = get(provider)
    stop = "STOP" if provider == "gemini" else "stop"
    first, last = _indexed(provider, 0, "A"), _indexed(provider, 0, "", stop)
    what = "a candidate's index" if provider == "gemini" else "a choice's index"
    kind = {bool: "boolean", str: "string", list: "array"}.get(type(index), "number")
    message = [("type", f"{what} is not an integer (a JSON {kind}): read as 0")]
    events = list(
        mod.parse_stream(_written(first, _indexed(provider, index, "B"), _indexed(provider, index, "C"), last))
    )
    assert [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == message
    assert reduce_ok([e for e in events if e["type"] != "CUSTOM"]).text_content == "ABC"
    whole = _indexed(provider, index, "B", stop)
    if provider == "openai":
        whole["choices"][0]["message"] = whole["choices"][0].pop("delta")
    events = mod.response_events(json.dumps(whole))
    assert [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == message
    assert mod.parse_response(json.dumps(whole)).text_content == "B"
    for absent in (None, ...):
        events = list(mod.parse_stream(_written(first, _indexed(provider, absent, "B"), last)))
        assert [e for e in events if e["type"] == "CUSTOM"] == []
        assert reduce_ok(events).text_content == "AB"


NO_FINISH: dict[str, dict[str, Any]] = {
    "openai": {
        "id": "gen-1",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
    },
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "Hi"}],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
    "dashscope": {"output": {"choices": [{"message": {"role": "assistant", "content": "Hi"}}]}, "request_id": "q1"},
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}],
        "responseId": "r9",
    },
}


@pytest.mark.parametrize("provider", sorted(NO_FINISH))
def test_a_whole_response_without_a_finish_reason_is_whole_and_invents_none(provider: str) -> None:
    module = agentmsg.providers.get(provider)
    events = module.response_events(NO_FINISH[provider])
    msg = reduce_ok(events)
    meta = msg.to_dict()["metadata"]
    assert msg.text_content == "Hi" and msg.generate_reason is not None
    assert "agentscope_generate_reason" not in meta  # MODEL_STOP
    assert "agentmsg_finish_reason" not in meta and "agentmsg_errors" not in meta
    assert said(events) == []
    # with a call: TOOL_CALLS, as a stream the provider ends without a finish reason
    if provider == "openai":
        body = dict(NO_FINISH["openai"])
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        body["choices"] = [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]
        whole = openai.parse_response(body)
        streamed = reduce_ok(list(openai.parse_stream(sse(chunk({"tool_calls": [{"index": 0, **call}]})))))
        assert whole.to_dict()["metadata"] == streamed.to_dict()["metadata"]
        assert whole.to_dict()["metadata"]["agentscope_generate_reason"] == "TOOL_CALLS"


def test_the_same_reply_streamed_without_a_finish_reason_gives_the_same_message() -> None:
    whole = openai.parse_response(NO_FINISH["openai"])
    streamed = reduce_ok(list(openai.parse_stream(sse(chunk({"role": "assistant", "content": "Hi"}, id="gen-1")))))
    assert whole.to_dict()["metadata"] == streamed.to_dict()["metadata"] and whole.content == streamed.content
    a = NO_FINISH["anthropic"]
    start = {**a, "content": [], "stop_reason": None}
    body = (
        ev("message_start", message=start)
        + ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
        + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"})
        + ev("content_block_stop", index=0)
        + ev("message_delta", delta={"stop_reason": None}, usage={"output_tokens": 1})
        + ev("message_stop")
    )
    streamed = reduce_ok(list(anthropic.parse_stream(body)))
    whole = anthropic.parse_response(a)
    assert whole.to_dict()["metadata"] == streamed.to_dict()["metadata"] and whole.content == streamed.content


def test_tool_arguments_cut_at_max_tokens_are_said_for_every_provider() -> None:
    # Anthropic: the SDK's own test stream (fixtures/providers/anthropic, its README names the source)
    events = list(anthropic.parse_stream((FIX / "anthropic" / "stream_sdk_incomplete_partial_json.sse").read_bytes()))
    msg = reduce_ok(events)
    call = msg.to_dict()["content"][-1]
    assert call["metadata"]["argumentsError"] and call["content"].startswith('{"filename"')
    assert said(events) == ["incomplete"]
    # OpenAI: streamed and whole alike
    cut = '{"city": "Par'
    call_chunk = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": cut}}
    events = list(openai.parse_stream(sse(chunk({"tool_calls": [call_chunk]}), chunk({}, finish="length"))))
    assert said(events) == ["incomplete"]
    whole: dict[str, Any] = {
        "id": "chatcmpl-x",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "tool_calls": [{k: v for k, v in call_chunk.items() if k != "index"}]},
                "finish_reason": "length",
            }
        ],
    }
    assert said(openai.response_events(whole)) == ["incomplete"]
    assert reduce_ok(events).content == openai.parse_response(whole).content
    # not said when the reply was cut (the error says it) or the arguments are whole
    assert said(list(openai.parse_stream(sse(chunk({"tool_calls": [call_chunk]}), done=False)))) == []
    whole["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": "Paris"}'
    assert said(openai.response_events(whole)) == []
    # Gemini: a streamed call the reply leaves unfinished is said once, as before
    start = gem({"functionCall": {"name": "f", "willContinue": True}})
    part = gem(
        {
            "functionCall": {
                "partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}],
                "willContinue": True,
            }
        }
    )
    events = list(gemini.parse_stream(sse(start, part, gem(finish="MAX_TOKENS"), done=False)))
    assert said(events) == ["incomplete"]


# Raw numbers orjson cannot write, put in a body in place of these stand-ins: a number beyond a double's range (no
# count), an integer beyond 64 bits (a count: it saturates, unsaid, as before) and a negative one (no count)
_RAW = {b"777777": b"1e400", b"888888": b"9" * 30, b"666666": b"-" + b"9" * 30}


#: Per provider: a usage with counts that are no counts ("12", -3, 1.5, true, 1e400, a negative integer beyond 64
#: bits), one beyond 64 bits that is a count, a null (no news) and detail counts the converter does not read (unsaid),
#: and the fields said
ODD_USAGE: dict[str, tuple[dict[str, Any], list[str]]] = {
    "openai": (
        {
            "prompt_tokens": 888888,
            "completion_tokens": "12",
            "total_tokens": 777777,
            "prompt_tokens_details": {"cached_tokens": -3, "audio_tokens": "x"},
            "completion_tokens_details": {"reasoning_tokens": 1.5},
            "prompt_cache_hit_tokens": None,
        },
        [
            "usage.completion_tokens",
            "usage.completion_tokens_details.reasoning_tokens",
            "usage.prompt_tokens_details.cached_tokens",
            "usage.total_tokens",
        ],
    ),
    "anthropic": (
        {
            "input_tokens": 888888,
            "output_tokens": "12",
            "cache_read_input_tokens": True,
            "cache_creation_input_tokens": 666666,
            "server_tool_use": {"web_search_requests": "x"},
            "service_tier": None,
        },
        ["usage.cache_creation_input_tokens", "usage.cache_read_input_tokens", "usage.output_tokens"],
    ),
    "gemini": (
        {
            "promptTokenCount": 888888,
            "candidatesTokenCount": "12",
            "thoughtsTokenCount": -3,
            "cachedContentTokenCount": 1.5,
            "totalTokenCount": 777777,
            "toolUsePromptTokenCount": None,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": "x"}],
        },
        [
            "usageMetadata.cachedContentTokenCount",
            "usageMetadata.candidatesTokenCount",
            "usageMetadata.thoughtsTokenCount",
            "usageMetadata.totalTokenCount",
        ],
    ),
    "dashscope": (
        {
            "input_tokens": 888888,
            "output_tokens": True,
            "total_tokens": 666666,
            "prompt_tokens_details": {"cached_tokens": "12"},
            "plugins": {"search": {"count": "x"}},
        },
        ["usage.output_tokens", "usage.prompt_tokens_details.cached_tokens", "usage.total_tokens"],
    ),
}


def _raw(body: bytes) -> bytes:
    for stand_in, raw in _RAW.items():
        body = body.replace(stand_in, raw)
    return body


def _usage_reply(provider: str, usages: list[dict[str, Any]], whole: bool) -> bytes:
    """A reply of "hi" whose usage is ``usages[0]`` (whole), or that streams each of ``usages`` in turn."""
    if whole:
        (u,) = usages
        if provider == "openai":
            body: Any = {"id": "c1", "object": "chat.completion", "model": "m", "usage": u}
            body["choices"] = [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
        elif provider == "anthropic":
            body = {"id": "m1", "type": "message", "role": "assistant", "model": "c", "usage": u}
            body |= {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}
        elif provider == "gemini":
            body = gem({"text": "hi"}, finish="STOP", usageMetadata=u)
        else:
            message = {"role": "assistant", "content": "hi"}
            body = {
                "output": {"choices": [{"message": message, "finish_reason": "stop"}]},
                "usage": u,
                "request_id": "q",
            }
        return _raw(orjson.dumps(body))
    first, last = usages
    if provider == "openai":
        return _raw(sse(chunk({"content": "hi"}), chunk({}, "stop"), chunk(usage=first), chunk(usage=last)))
    if provider == "anthropic":
        return _raw(
            ev("message_start", message={"id": "m1", "model": "c", "role": "assistant", "content": [], "usage": first})
            + ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
            + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"})
            + ev("content_block_stop", index=0)
            + ev("message_delta", delta={"stop_reason": "end_turn"}, usage=last)
            + ev("message_stop")
        )
    if provider == "gemini":
        return _raw(sse(gem({"text": "h"}, usageMetadata=first), gem({"text": "i"}, finish="STOP", usageMetadata=last)))

    def ds(content: str, finish: str, u: dict[str, Any]) -> bytes:
        message = {"role": "assistant", "content": content}
        payload = {
            "output": {"choices": [{"message": message, "finish_reason": finish}]},
            "usage": u,
            "request_id": "q",
        }
        return b"data:" + orjson.dumps(payload) + b"\n\n"

    return _raw(ds("h", "null", first) + ds("i", "stop", last))


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", sorted(ODD_USAGE))
def test_a_usage_count_that_is_no_count_is_said_once_per_field_and_the_rest_kept(provider: str, whole: bool) -> None:
    # a count that is not a non-negative whole number ("12", -3, 1.5, true, 1e400) was dropped unsaid, in every
    # provider's usage; a null says nothing, an integer beyond 64 bits is a count (it saturates, as documented: an
    # input count at 2^31-1, which AgentScope Java holds in an int), and the detail counts the converter does not read
    # stay unsaid
    module = agentmsg.providers.get(provider)
    usage, fields = ODD_USAGE[provider]
    body = _usage_reply(provider, [usage] if whole else [usage, usage], whole)
    events = module.response_events(body) if whole else list(module.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "hi"
    assert sorted(_no_counts(events)) == fields  # once each, though a stream sent the usage twice
    assert msg.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cached_tokens, msg.usage.total_tokens) == (
        2**31 - 1,
        None,
        None,
        None,
    )
    if whole:
        assert module.parse_response(body).usage == msg.usage
    shown = {
        "openai": "usage.completion_tokens is no token count ('12'): not kept",
        "anthropic": "usage.cache_read_input_tokens is no token count (true): not kept",
        "gemini": "usageMetadata.totalTokenCount is no token count (1e400): not kept",
        "dashscope": "usage.total_tokens is no token count (a negative number beyond 64 bits): not kept",
    }[provider]
    assert shown in [e["value"]["message"] for e in events if e.get("name") == "agentmsg.problem"]


# Per provider: the input count's field, and the field the output count is read from
_IN_OUT = {
    "openai": ("prompt_tokens", "completion_tokens"),
    "anthropic": ("input_tokens", "output_tokens"),
    "gemini": ("promptTokenCount", "candidatesTokenCount"),
    "dashscope": ("input_tokens", "output_tokens"),
}


@pytest.mark.parametrize("provider", sorted(_IN_OUT))
def test_a_count_that_is_no_count_in_every_usage_of_a_stream_is_said_once(provider: str) -> None:
    # each usage a stream sends with a count that is no count, with another value each time: said once (the field)
    module = agentmsg.providers.get(provider)
    key, out = _IN_OUT[provider]
    usages = [{key: "12", out: 2, "total": None}, {key: "13", out: 2}]
    events = list(module.parse_stream(_usage_reply(provider, usages, whole=False)))
    msg = reduce_ok(events)
    where = "usageMetadata" if provider == "gemini" else "usage"
    assert _no_counts(events) == [f"{where}.{key}"]
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (None, 2)
    # and all well: nothing said
    events = list(module.parse_stream(_usage_reply(provider, [{key: 1, out: 2}, {key: 3, out: 4}], whole=False)))
    usage = reduce_ok(events).usage
    assert _no_counts(events) == [] and usage is not None and usage.input_tokens == 3


@pytest.mark.parametrize("usage", ["12 tokens", [], 7], ids=["string", "empty-array", "number"])
@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", sorted(_IN_OUT))
def test_a_usage_that_is_no_object_is_said_once(provider: str, whole: bool, usage: Any) -> None:
    # a usage that is no JSON object was dropped unsaid (its counts lost); said once per reply, the text kept
    module = agentmsg.providers.get(provider)
    body = _usage_reply(provider, [usage] if whole else [usage, usage], whole)
    events = module.response_events(body) if whole else list(module.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "hi" and msg.usage is None
    where = "usageMetadata" if provider == "gemini" else "usage"
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    kind = {str: "string", list: "array", int: "number"}[type(usage)]
    assert problems == [{"rule": "type", "message": f"{where} is no object ({kind}): its counts not kept"}]
    # and a null usage says nothing
    events = module.response_events(_usage_reply(provider, [None], True))  # type: ignore[list-item]
    assert [e for e in events if e.get("name") == "agentmsg.problem"] == []


#: provider -> (parser, the payloads before the error, the error, the payloads after it)
STREAMS: dict[str, tuple[Any, bytes, bytes, bytes]] = {
    "anthropic": (
        anthropic.StreamParser,
        ANT_START + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": " more"})
        + ev("content_block_stop", index=0)
        + ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9})
        + ev("message_stop"),
    ),
    "anthropic-untyped": (  # an error object without its event type (a proxy's; one on lines of no SSE field)
        anthropic.StreamParser,
        ANT_START + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        data({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": " more"}) + ev("message_stop"),
    ),
    "openai": (
        openai.StreamParser,
        oai("Hi"),
        data({"error": {"message": "Overloaded", "type": "server_error"}}),
        oai(" more", "stop") + oai(usage={"prompt_tokens": 1, "completion_tokens": 9}) + b"data: [DONE]\n\n",
    ),
    "openai-event": (
        openai.StreamParser,
        oai("Hi"),
        data({"message": "Overloaded"}, "error"),
        oai(" more", "stop") + b"data: [DONE]\n\n",
    ),
    "gemini": (
        gemini.StreamParser,
        gem_sse("Hi"),
        data({"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}),
        gem_sse(" more", "STOP"),
    ),
    "dashscope": (
        dashscope.StreamParser,
        dsc("Hi"),
        b"event:error\n:HTTP_STATUS/500\n" + b'data:{"code":"Overloaded","message":"Overloaded"}\n\n',
        dsc(" more", "stop"),
    ),
    "dashscope-result": (
        dashscope.StreamParser,
        dsc("Hi"),
        b'event:result\ndata:{"code":"Overloaded","message":"Overloaded","request_id":"r1"}\n\n',
        dsc(" more", "stop"),
    ),
}


def chunkings(body: bytes) -> list[list[bytes]]:
    return [[body], [body[i : i + 7] for i in range(0, len(body), 7)], [bytes([c]) for c in body]]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_provider_error_ends_the_reply_and_what_follows_is_skipped_and_said(name: str) -> None:
    """The SDKs' streams raise (or end) at a provider's error; agentmsg keeps what came before it, ends the reply
    there (INTERRUPTED, the error in agentmsg_errors), and skips what follows, said once (problem order), as a
    payload after [DONE] or message_stop is. The text and finish reason after the error were applied before."""
    make, before, error, after = STREAMS[name]
    for chunks in chunkings(before + error + after):
        parser = make()
        events = [e for c in chunks for e in parser.feed(c)] + parser.close()
        msg = reduce_ok(events)
        assert msg.text_content == "Hi"
        assert msg.generate_reason.value == "INTERRUPTED"
        meta = msg.to_dict()["metadata"]
        assert [e["message"] for e in meta["agentmsg_errors"]] == ["Overloaded"]
        assert "agentmsg_finish_reason" not in meta
        assert [p.rule for p in parser.problems] == ["order"]
        assert parser.problems[0].message.startswith("a payload after the end of the reply: skipped")
        # the error is the reply's last news: nothing of the reply after it
        kinds = [e["type"] for e in events]
        at = next(k for k, e in enumerate(events) if e.get("name") == "agentmsg.error")
        assert "TEXT_BLOCK_DELTA" not in kinds[at:]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_an_error_at_the_end_says_nothing_more(name: str) -> None:
    """An error that ends the body (or is followed only by [DONE], a ping or a comment) is no payload after
    the end: no problem."""
    make, before, error, _ = STREAMS[name]
    parser = make()
    events = parser.feed(before + error + b": keep-alive\n\n" + b"data: [DONE]\n\n" + ev("ping")) + parser.close()
    assert reduce_ok(events).text_content == "Hi"
    assert parser.problems == []


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_plain_text_error_event_ends_the_reply_too(name: str) -> None:
    """An SSE ``event: error`` whose data is plain text (a proxy's "Internal Server Error") is the provider's
    error with that text, and ends the reply as a JSON error does: what follows is skipped and said once."""
    make, before, _, after = STREAMS[name]
    parser = make()
    events = parser.feed(before + b"event: error\ndata: Internal Server Error\n\n" + after) + parser.close()
    msg = reduce_ok(events)
    assert msg.text_content == "Hi" and msg.generate_reason.value == "INTERRUPTED"
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["Internal Server Error"]
    assert [p.rule for p in parser.problems] == ["order"]


def _deep(levels: int) -> str:
    return '{"a":' * levels + "null" + "}" * levels


@pytest.mark.parametrize("mod", [openai, anthropic, gemini, dashscope])
def test_a_stream_payload_too_deep_to_write_as_text_is_said_not_raised(mod: Any) -> None:
    # A payload's depth is orjson's (1,024): an error message 1,000 levels deep made str() raise RecursionError
    # out of parse_stream (a traceback from `agentmsg parse`); vLLM's stop_reason so too
    deep = _deep(1000)
    bodies = [
        b'data: {"error": {"message": %s}}\n\n' % deep.encode(),
        b'data: {"error": %s}\n\n' % deep.encode(),
        b"event: error\n%s\n\n" % deep.encode(),
        oai("a")
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":%s}]}\n\n' % deep.encode(),
    ]
    for body in bodies:
        for chunks in (body, [body[i : i + 7] for i in range(0, len(body), 7)]):
            events = list(mod.parse_stream(chunks, reply_id="r"))
            problems = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
            assert problems, body[:40]


@pytest.mark.parametrize(
    ("mod", "body"),
    [
        (gemini, data({"error": {"code": {"a": [[[1]]]}, "message": "m", "status": "S"}})),
        (dashscope, data({"code": "X", "message": "m", "request_id": {"a": 1}})),
        (openai, data({"error": {"message": "m", "code": [1]}})),
    ],
)
def test_a_provider_errors_code_or_request_id_of_no_scalar_is_said_and_left_out(mod: Any, body: bytes) -> None:
    # Gemini and DashScope passed it into the error event as it came (a value nested past the event's depth
    # limit made the event invalid against the AgentEvent schema); OpenAI's left it out unsaid
    from agentmsg import validate

    events = list(mod.parse_stream(body, reply_id="r"))
    for e in events:
        validate(e, "event")
    errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
    assert errors and errors[0]["message"] == "m"
    assert not {"code", "request_id"} & errors[0].keys()
    assert any(
        e["value"]["rule"] == "type" and "not a scalar" in e["value"]["message"]
        for e in events
        if e.get("name") == "agentmsg.problem"
    )


@pytest.mark.parametrize(
    "number",
    ["1" + "0" * 400, "18446744073709551616", "-9223372036854775809", "-1e400"],
    ids=["400-digits", "2**64", "-2**63-1", "-1e400"],
)
@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("openai", b'data: {"error":{"message":"m","code":NUMBER}}\n\n'),
        ("openai-responses", b'data: {"type":"error","error":{"type":"t","message":"m","code":NUMBER}}\n\n'),
        ("gemini", b'data: {"error":{"code":NUMBER,"message":"m","status":"S"}}\n\n'),
    ],
    ids=["openai", "openai-responses", "gemini"],
)
def test_a_provider_errors_code_no_event_holds_is_kept_as_its_text_and_said(
    provider: str, body: bytes, number: str
) -> None:
    """A provider error's numeric code beyond 64 bits or a double: the error event carried a 400-digit integer as
    it came (an invalid event, found by the reader fuzz in openai-responses), while OpenAI's readers dropped
    2**64 unsaid (orjson reads it as a float) and Gemini's kept it rounded. It is kept as its text and said."""
    events = list(get(provider).parse_stream(body.replace(b"NUMBER", number.encode()), reply_id="r"))
    for e in events:
        validate(e, "event")
    errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
    assert len(errors) == 1 and errors[0]["message"] == "m"
    assert errors[0]["code"] == number
    assert "number-as-text" in said(events)


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


ROUNDS = 20


#: every provider module of the registry (``agentmsg.providers.MODULES``), by name: a provider added there is fuzzed
#: with no edit here
MODULES: dict[str, Any] = {
    name: importlib.import_module(f"agentmsg.providers.{name}") for name in agentmsg.providers.MODULES
}


def _files(provider: str) -> list[Path]:
    """A provider module's seeds: every recorded reply and stream it reads (``parser_for``: the module of the
    fixtures folder's registry name, OpenAI's for a ``compat_`` file), a module without any refused."""
    mod = MODULES[provider]
    files = [f for f in sorted(FIX.glob("*/*")) if f.suffix in (".sse", ".json", ".jsonl") and parser_for(f) is mod]
    assert files, f"no recorded reply or stream in {FIX} for agentmsg.providers.{provider}"
    return files


def _comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in ("id", "createdAt", "replyId")} for e in events]


def _round_trips(messages: list[Any]) -> None:
    for m in messages:
        data = m.to_json_bytes()
        assert Msg.from_json(data).to_json_bytes() == data


def _check_stream(mod: Any, body: bytes, rng: random.Random, label: str) -> None:
    events = list(mod.parse_stream(body, reply_id="r"))
    for e in events:
        validate(e, "event")  # raises: the parser emitted an event its promise does not cover
    trusted = reduce_events(events, trusted=True)
    checked = reduce_events(events)
    assert [m.to_json_bytes() for m in trusted] == [m.to_json_bytes() for m in checked], label
    _round_trips(trusted)
    cut = list(mod.parse_stream(random_cuts(body, rng), reply_id="r"))
    assert _comparable(cut) == _comparable(events), label


def _check_response(mod: Any, body: bytes, label: str) -> None:
    try:
        msg = mod.parse_response(body)
    except ValidationError:
        return
    _round_trips([msg])


@pytest.mark.fuzz
@pytest.mark.parametrize("provider", list(MODULES))
def test_provider_parsers_survive_mutated_payloads(provider: str) -> None:
    mod = MODULES[provider]
    rng = random.Random(f"{SEED}/{provider}")
    files = _files(provider)
    for round_ in rounds(ROUNDS, share=1 / len(MODULES)):
        for f in files:
            raw = f.read_bytes()
            label = f"{f.name} (seed {SEED}, round {round_ + 1})"
            if f.suffix == ".json":
                _check_response(mod, json.dumps(mutate_json(json.loads(raw), rng)).encode(), label)
            else:
                _check_stream(mod, mutate_payloads(raw, f.suffix == ".sse", rng), rng, label)


@pytest.mark.fuzz
@pytest.mark.parametrize("provider", list(MODULES))
def test_what_a_reader_says_of_a_huge_value_is_bounded(provider: str) -> None:
    """A payload field of tens of kilobytes where the reader expects another kind of value (a delta type, a block
    index, an id): the problem it says quotes it cut (errors.MESSAGE_MAX), in its Problem and in its CUSTOM event,
    and the reply reduces. Anthropic's reader quoted the value whole: a 20 kB delta type, a 20 kB event."""
    mod = MODULES[provider]
    rng = random.Random(f"{SEED}/huge/{provider}")
    for round_ in rounds(3, share=1 / len(MODULES)):
        for f in _files(provider):
            if f.suffix == ".json":
                continue
            body = mutate_payloads(f.read_bytes(), f.suffix == ".sse", rng, values=HUGE_VALUES)
            label = f"{f.name} (seed {SEED}, round {round_ + 1})"
            events = list(mod.parse_stream(body, reply_id="r"))
            for e in events:
                value = e.get("value")
                if e["type"] == "CUSTOM" and isinstance(value, dict) and e["name"] != "agentmsg.error":
                    assert len(str(value.get("message"))) <= MESSAGE_MAX + 40, (label, str(value)[:200])
            reduce_events(events)


def test_a_reply_says_max_problems_then_counts_the_rest_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body of ever new bad payloads (here Anthropic deltas of a new unknown type each): the reply says the first
    MAX_PROBLEMS, then counts, and at its end says how many it did not (rule max-problems). Every problem said was
    held for the reply's life, by the builder and by Anthropic's reader (its own said-once set): 200,000 such
    payloads held 89 MB, now 3 MB; here, a fifth of the payloads after the cap adds next to nothing."""
    monkeypatch.setattr(builder_module, "MAX_PROBLEMS", 50)
    parser = get("anthropic").stream_parser()

    def bad(k: int) -> bytes:
        return ev("content_block_delta", index=0, delta={"type": f"new_delta_{k}", "text": "a"})

    events = parser.feed(ANT_START)  # (its content_block_start opens block 0, which the bad deltas name)
    events += parser.feed(b"".join(bad(k) for k in range(200)))  # (past the cap: held from here on)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(200, 1200):
            events += parser.feed(bad(k))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    events += parser.close()
    assert grown < 20_000, grown  # (each problem held: ~440 bytes, 440 kB for these 1,000)
    said = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert len(said) == 51 and said[0]["message"] == "content block delta type 'new_delta_0' is not supported: skipped"
    assert said[-1] == {
        "rule": "max-problems",
        "message": "1,150 more problems were not said (a reply says 50 at most)",
    }
    assert [p.rule for p in parser.problems][-1] == "max-problems" and len(parser.problems) == 51
    (msg,) = reduce_events(events)
    assert msg.text_content == ""  # (the unknown deltas skipped, as said)


@pytest.mark.parametrize("huge_first", [True, False], ids=["number-first", "surrogate-first"])
@pytest.mark.parametrize("framing", ["sse", "whole-json"])
def test_a_payload_with_a_huge_number_and_a_lone_surrogate_keeps_neither_fault(huge_first: bool, framing: str) -> None:
    """Found by the provider-body fuzzer: orjson stops at a payload's first fault. A number beyond a double first
    sent the payload to the reader of such numbers, which keeps lone surrogates: a text delta and a thinking
    signature carried '\\ud800', events no reader takes. A lone surrogate first: the payload was read without it,
    then failed on the number and was skipped whole as no JSON. Now both: U+FFFD, said once, the number kept."""
    big = b"9" * 400
    head = b'"role":"assistant","model":"c"' + (b',"x":' + big if huge_first else b"")
    tail = b"" if huge_first else b',"x":' + big
    blocks = b'[{"type":"thinking","thinking":"hm","signature":"\\ud800"},{"type":"text","text":"a\\udc00b"}]'
    payload = b'{"id":"m","type":"message",' + head + b',"content":' + blocks + tail
    payload += b',"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}'
    body = payload if framing == "whole-json" else b"data: " + payload + b"\n\n"
    events = list(anthropic.parse_stream(body, reply_id="r"))
    for e in events:
        validate(e, "event")
    (msg,) = reduce_events(events)
    assert msg.text_content == "a\ufffdb"
    assert [(b.metadata or {})["signature"] for b in msg.blocks("thinking")] == ["\ufffd"]
    assert said(events) == ["surrogate"]


# ---- hostile bodies (issue 28, deliver 6: the provider-body fuzzer) ------------------------------------------

HOSTILE_ROUNDS = 6


def _contract_error(exc: BaseException, label: str) -> None:
    """The one exception a reader may raise: the SDK's own ValidationError, each problem at a JSON pointer."""
    if not isinstance(exc, ValidationError):
        raise AssertionError(f"{label}: {type(exc).__name__} escaped the reader: {exc!r:.300}") from exc
    assert exc.problems, label
    for p in exc.problems:
        assert isinstance(p.pointer, str) and (p.pointer == "" or p.pointer.startswith("/")), (label, p)
        assert p.rule and isinstance(p.rule, str), (label, p)


def _bounded(events: list[dict[str, Any]], body: bytes, label: str) -> None:
    """What a reader makes of a body is bounded by the body: no event list or text that grows past it (counted
    by repr: an event may hold a HugeNumber, which no JSON writer but the SDK's takes)."""
    size = sum(len(repr(e)) for e in events)
    assert size <= 40 * len(body) + 200_000, f"{label}: {size} bytes of events from a {len(body)}-byte body"


def _hostile_stream(mod: Any, body: bytes, rng: random.Random, label: str) -> None:
    try:
        events = list(mod.parse_stream(body, reply_id="r"))
        cut = list(mod.parse_stream(random_cuts(body, rng, most=16), reply_id="r")) if len(body) > 1 else events
    except Exception as exc:  # (the contract: only the SDK's own error)
        _contract_error(exc, label)
        return
    _bounded(events, body, label)
    for e in events:
        try:
            validate(e, "event")
        except ValidationError as exc:
            raise AssertionError(f"{label}: the reader emitted an invalid event: {exc}") from exc
    assert _comparable(cut) == _comparable(events), f"{label}: chunked at random boundaries differs"
    try:
        messages = reduce_events(events)
    except Exception as exc:
        _contract_error(exc, label)
        return
    _round_trips(messages)


def _hostile_response(mod: Any, body: bytes, label: str) -> None:
    try:
        msg = mod.parse_response(body)
    except Exception as exc:  # (the contract: only the SDK's own error)
        _contract_error(exc, label)
        return
    data = msg.to_json_bytes()
    assert len(data) <= 40 * len(body) + 200_000, label
    validate(orjson.loads(data), "msg")
    _round_trips([msg])


#: Provider JSON a reader keeps as it came, at the places a hostile stream put too deep a value: (name, provider, the
#: chunk holding ``value``, the kept field's name, the levels of that field's value above ``value``, and whether a
#: field too deep is kept as its text (a message's block metadata holds a provider block as an object: left out))
_HELD = [
    (
        "gemini-grounding",
        "gemini",
        lambda v: {
            "candidates": [
                {"index": 0, "content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
                | {"groundingMetadata": {"x": v}}
            ],
            "responseId": "r",
        },
        "groundingMetadata",
        1,
        True,
    ),
    (
        "gemini-server-tool",
        "gemini",
        lambda v: {
            "candidates": [
                {
                    "index": 0,
                    "content": {"role": "model", "parts": [{"toolCall": {"id": "t", "toolType": "X", "args": v}}]},
                    "finishReason": "STOP",
                }
            ],
            "responseId": "r",
        },
        "providerBlock",
        2,
        False,
    ),
    (
        "openai-annotations",
        "openai",
        lambda v: {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "hi", "annotations": [{"type": "x", "v": v}]},
                    "finish_reason": "stop",
                }
            ],
        },
        "annotations",
        2,
        True,
    ),
]


@pytest.mark.parametrize(("name", "provider", "chunk_of", "field", "above", "text"), _HELD, ids=[h[0] for h in _HELD])
def test_provider_json_too_deep_for_an_event_is_kept_as_text_or_left_out_and_said(
    name: str, provider: str, chunk_of: Any, field: str, above: int, text: bool
) -> None:
    """A stream's payload is read as deep as orjson reads (1,024 levels); an event, a message and a conversation
    hold JSON only as deep as ``limits.max_depth``. Provider JSON a reader keeps as it came (grounding, a block no
    agentmsg type holds, OpenAI's annotations) was copied into the event however deep: the reader emitted an event
    that ``validate`` refused (max-depth), and no reader took back. Now a field that would not fit is kept as its
    JSON text, a string (a provider block, which a message holds as an object only, left out), and that said (rule
    ``max-depth``); one level less is kept as JSON. Every event validates, the message and a conversation of it
    validate and round-trip, and nothing is lost without a word."""
    room = agentmsg.limits.max_depth - builder_module.HOLD_ROOM
    for levels, deep in ((room - above, False), (room - above + 1, True), (900, True)):
        value = nested_arrays(levels)
        body = b"data: " + json.dumps(chunk_of(value)).encode() + b"\n\n"
        events = list(get(provider).parse_stream(body, reply_id="r"))
        for e in events:
            validate(e, "event")
        notes = [
            e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["value"].get("rule") == "max-depth"
        ]
        assert len(notes) == (1 if deep else 0), (name, levels, notes)
        (msg,) = reduce_events(events)
        data = msg.to_json_bytes()
        validate(orjson.loads(data), "msg")
        assert Msg.from_json(data) == msg and agentmsg.decode_messages(b"[" + data + b"]") == [msg]
        nodes, stack = [], [orjson.loads(data)]  # every value in the message (orjson reads what it wrote)
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node if isinstance(node, list) else ())
        held = nested_arrays(levels)
        compact = json.dumps(held, separators=(",", ":"))
        assert any(type(n) is str and compact in n for n in nodes) is (deep and text), (name, levels)  # as text
        assert (held in nodes) is not deep, (name, levels)  # or as JSON
        assert "agentmsg_reduce_errors" not in msg.metadata, msg.metadata
        if deep:
            end = "kept as its JSON text, a string" if text else "left out"
            assert (
                notes[0] == f"the {field} the reply gave is nested deeper than an event holds (limits.max_depth): {end}"
            )


def test_provider_json_too_deep_for_an_event_keeps_its_numbers_digits() -> None:
    """A member kept as its JSON text keeps each number as the payload wrote it: an integer past 64 bits was first
    made a string by the number walk (and said as number-as-text), then written into the text quoted."""
    big = 2**70
    value = nested_arrays(agentmsg.limits.max_depth, inner=big)
    candidate = {"index": 0, "content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
    chunk = {"candidates": [{**candidate, "groundingMetadata": {"x": value}}], "responseId": "r"}
    events = list(gemini.parse_stream(b"data: " + json.dumps(chunk).encode() + b"\n\n", reply_id="r"))
    assert said(events) == ["max-depth"]
    (end,) = [e for e in events if e["type"] == "MODEL_CALL_END"]
    assert json.loads(end["metadata"]["grounding"]["groundingMetadata"]) == {"x": value}


@pytest.mark.fuzz
@pytest.mark.parametrize("provider", list(MODULES))
def test_provider_readers_hold_their_contract_on_hostile_bodies(provider: str) -> None:
    """Every recorded body and stream of a provider, edited as a hostile or broken server would: bytes flipped,
    cut out or inserted, the body truncated, JSON values replaced by huge numbers, deep nesting, wrong types,
    NUL at the start of ids, text with lone surrogates; each stream read whole and chunked at random boundaries,
    each body also given to the other reader (a stream to parse_response, a JSON body to parse_stream). The
    contract: a result whose events and message validate and round-trip (the same events however the body is
    cut), bounded by the body's size, or the SDK's ValidationError naming a JSON pointer; never another
    exception. A failure names its seed and round (AGENTMSG_FUZZ_SEED=<seed> replays it)."""
    mod = MODULES[provider]
    rng = random.Random(f"{SEED}/hostile/{provider}")
    files = _files(provider)
    for round_ in rounds(HOSTILE_ROUNDS, share=1 / len(MODULES)):
        for f in files:
            raw = f.read_bytes()
            label = f"{provider} {f.name} (AGENTMSG_FUZZ_SEED={SEED}, round {round_ + 1})"
            how = rng.randrange(4)
            if f.suffix == ".json":
                if how == 0:
                    body = garble_bytes(rng, raw)
                elif how == 1:
                    body = raw[: rng.randrange(len(raw))]
                else:
                    body = hostile_json_text(json.loads(raw), rng)
                _hostile_response(mod, body, label)
                _hostile_stream(mod, body, rng, label + " read as a stream")
            else:
                sse_body = f.suffix == ".sse"
                if how == 0:
                    body = garble_bytes(rng, raw)
                elif how == 1:
                    body = raw[: rng.randrange(len(raw))]
                else:
                    body = hostile_payloads(raw, sse_body, rng)
                _hostile_stream(mod, body, rng, label)
                _hostile_response(mod, body, label + " read whole")


@pytest.mark.parametrize(
    ("number", "text"),
    [("-1e400", "-1e400"), ("1" + "0" * 400, "1" + "0" * 400), ("18446744073709551616", "18446744073709551616")],
)
@pytest.mark.parametrize("provider", ["gemini", "openai"])
def test_a_number_no_event_holds_is_kept_as_its_text_and_said(provider: str, number: str, text: str) -> None:
    """Provider JSON an event carries as it came (Gemini's grounding, OpenAI's annotations) with a number beyond a
    double or beyond 64 bits: the events validate, the number is kept as its JSON text (never rounded, nulled or
    dropped by the reducer) and a ``number-as-text`` problem says so."""
    if provider == "gemini":
        body = (
            (
                '{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP",'
                '"groundingMetadata":{"x":[NUMBER]}}],"responseId":"r"}'
            )
            .replace("NUMBER", number)
            .encode()
        )
        key = "groundingMetadata"
    else:
        body = (
            (
                '{"id":"r","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",'
                '"message":{"role":"assistant","content":"hi","annotations":[{"type":"url_citation","x":[NUMBER]}]}}]}'
            )
            .replace("NUMBER", number)
            .encode()
        )
        key = "annotations"
    mod = importlib.import_module(f"agentmsg.providers.{provider}")
    events = list(mod.parse_stream(body, reply_id="r")) if provider == "gemini" else None
    for e in events or []:
        validate(e, "event")
    if events is not None:
        rules = [e["value"]["rule"] for e in events if e["type"] == "CUSTOM" and "rule" in e.get("value", {})]
        assert "number-as-text" in rules
    msg = mod.parse_response(body)
    grounding = msg.metadata["agentmsg_grounding"]
    held = grounding[key] if provider == "gemini" else grounding[key][0]
    assert held["x"] == [text]
    assert Msg.from_json(msg.to_json()) == msg


def test_grounding_deltas_extend_the_replys_list_in_place() -> None:
    """Grounding given a piece at a time (OpenAI Responses' ``annotation.added``, one annotation each; a chat
    stream's delta annotations; the annotations of each part of a message) extends the reply's one list: a new
    list per piece copied every one before it, quadratic (64,000 annotated parts in one Responses reply took
    5.6 s to read, now 0.45 s). The list is the builder's own: what each piece came in is not changed."""
    b = builder_module.StreamBuilder("openai-responses")
    first = [{"i": 0}]
    b.grounding({"annotations": first}, extend=True)
    held = b.choice(0).grounding
    assert held is not None
    kept = held["annotations"]
    for i in range(1, 100):
        b.grounding({"annotations": [{"i": i}]}, extend=True)
        assert held["annotations"] is kept  # (the same list, grown: no copy per piece)
    assert kept == [{"i": i} for i in range(100)]
    assert first == [{"i": 0}]
    b.close()
    end = next(e for e in b.drain() if e["type"] == "MODEL_CALL_END")
    assert end["metadata"]["grounding"] == {"provider": "openai-responses", "annotations": kept}


@pytest.mark.parametrize("provider", agentmsg.providers.NAMES)
def test_a_chunk_that_is_no_bytes_or_text_is_named(provider: str) -> None:
    """``parse_stream`` of chunks that are neither bytes nor str raised ``'int' object is not subscriptable`` from
    deep inside the framer: the TypeError now says what a chunk is."""
    reader = agentmsg.providers.get(provider)
    for chunks in ([1, 2], [b"data: {}\n\n", None], memoryview(b"data: {}\n\n")):
        with pytest.raises(TypeError, match="bytes or str, not") as info:  # (the SDK's: a TypeError too)
            list(reader.parse_stream(chunks))  # type: ignore[arg-type]
        assert isinstance(info.value, agentmsg.errors.WrongTypeError) and info.value.problems[0].pointer == "/chunk"
    # a memoryview chunk is read as its bytes (as SSEDecoder.feed reads one); an option no parser takes is refused
    whole = list(reader.parse_stream([b"data: {}\n\n"]))
    viewed: Any = [memoryview(b"data: {}\n\n")]  # (not in the annotation: bytes or str)
    assert [e["type"] for e in reader.parse_stream(viewed)] == [e["type"] for e in whole]
    with pytest.raises(agentmsg.errors.WrongTypeError, match="bogus") as info:
        reader.stream_parser(bogus=1)
    assert info.value.problems[0].pointer == "/options"


@pytest.mark.parametrize(
    "nanos",
    [
        0,
        1_764_689_472_999_999_999,  # the last microsecond of a second, then the next second's first
        1_764_689_473_000_000_000,
        1_764_689_473_000_999_000,  # a millisecond's last microsecond, then the next millisecond's first
        1_764_689_473_001_000_000,
        1_764_689_473_123_456_789,
        1_764_689_473_123_457_000,  # the same millisecond: its text kept
        4_102_444_799_999_999_000,
    ],
)
def test_created_at_is_rfc_3339_utc_with_microseconds_at_every_boundary(
    nanos: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events' createdAt, the date and time formatted once per second: each value is the clock's, as datetime
    writes it (the cache keyed by the second never pairs one second's text with another's), from the builder's
    clock and from the stream parser's copy of it inline (its per-chunk tick)."""
    import datetime
    import time

    from agentmsg.providers._response import parser as _parser

    monkeypatch.setattr(time, "time_ns", lambda: nanos)  # (the builder calls time.time_ns)
    monkeypatch.setattr(_parser, "_time_ns", lambda: nanos)
    micros = nanos // 1000
    when = datetime.datetime.fromtimestamp(micros // 1_000_000, datetime.timezone.utc).replace(
        microsecond=micros % 1_000_000
    )
    expected = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert builder_module.now() == expected  # (this second's text now cached: the parser's tick below writes it inline)
    events = openai.StreamParser().feed(oai("hi"))
    assert events and {e["createdAt"] for e in events} == {expected}


def test_a_stream_parser_reads_the_clock_per_chunk_not_when_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply's parser stamps the events of each chunk with the time it was fed: the default clock is not read
    when the parser is made (that reading was never used: about 4,000 instructions a reply). A builder made
    alone reads it when it is made, and a clock given is asked then, as before."""
    import time

    from agentmsg.providers._response import parser as _parser

    read: list[int] = []

    def clock_ns() -> int:
        read.append(1)
        return 1_764_689_473_123_456_789

    monkeypatch.setattr(time, "time_ns", clock_ns)  # (the builder's clock)
    monkeypatch.setattr(_parser, "_time_ns", clock_ns)  # (the parser's inline copy of it)
    parser = openai.StreamParser()
    assert read == []
    events = parser.feed(oai("hi"))
    assert events and {e["createdAt"] for e in events} == {"2025-12-02T15:31:13.123456Z"}
    fed = len(read)
    alone = builder_module.StreamBuilder("openai")
    assert len(read) == fed + 1 and alone.stamp == "2025-12-02T15:31:13.123456Z"
    asked: list[int] = []

    def clock() -> str:
        asked.append(1)
        return "then"

    given = builder_module.StreamBuilder("openai", clock=clock)
    assert asked == [1] and given.stamp == "then"


def test_created_at_of_each_chunk_is_its_own_reading_of_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream parser keeps the text of the last chunk's millisecond (written once, taken again while the clock
    stays in it): each chunk's createdAt is still its own reading, as datetime writes it, whether the next reading is
    in the same millisecond, the next one, one before it (a clock set back), another second or the same again."""
    import datetime
    import time

    from agentmsg.providers._response import parser as _parser

    base = 1_764_689_473_123_456_789  # 15:31:13.123456789
    readings = [
        base,
        base + 500_000,  # the same millisecond
        base + 543_210,  # its last nanosecond
        base + 543_211,  # the next millisecond's first
        base + 543_210,  # back by a nanosecond: the millisecond before
        base - 1_000_000,  # a millisecond before that
        base - 123_456_789,  # the second's first nanosecond
        base - 123_456_790,  # the second before's last
        base + 2_000_000_000,  # two seconds on
        base + 2_000_000_001,
        base + 2_005_000_000,  # 5 ms on, in that second (its text and millisecond kept: small ints from here)
        base + 2_876_543_210,  # that second's last nanosecond
        base + 2_876_543_211,  # the next second's first (a millisecond on, past the second's end)
        base + 3_876_543_210,  # that second's last nanosecond (a second and a nanosecond on)
        base + 3_900_000_000,  # 24 ms on, in the next second
        base + 3_999_999_999,  # 100 ms on, in that second
        base + 3_998_999_999,  # back by a millisecond
        base + 4_999_999_998,  # a second on, but a nanosecond
        base,  # the first reading again
    ]
    now = [readings[0]]
    monkeypatch.setattr(time, "time_ns", lambda: now[0])  # (the builder's clock)
    monkeypatch.setattr(_parser, "_time_ns", lambda: now[0])  # (the parser's inline copy of it)

    def rfc3339(nanos: int) -> str:
        micros = nanos // 1000
        when = datetime.datetime.fromtimestamp(micros // 1_000_000, datetime.timezone.utc)
        return when.replace(microsecond=micros % 1_000_000).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    parser = openai.StreamParser()
    for k, nanos in enumerate(readings):
        now[0] = nanos
        events = parser.feed(oai("hi") if k == 0 else oai(f"t{k}"))
        assert events and {e["createdAt"] for e in events} == {rfc3339(nanos)}, k


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_parsers_given_clock_is_asked_once_per_chunk(provider: str) -> None:
    """A clock given to a stream parser (``clock=``) is its builder's: asked once when the builder is made, as
    before, then once for each chunk fed, and each chunk's events carry that chunk's answer, as the default clock's
    reading is taken inline (a text chunk read by its route, the first of a reply read whole)."""
    asked: list[str] = []

    def clock() -> str:
        asked.append(f"T{len(asked)}")
        return asked[-1]

    if provider == "openai":
        parser = openai.StreamParser(clock=clock)
        chunks = [oai("hi"), oai(" there"), oai(" you")]
    else:
        parser = anthropic.StreamParser(clock=clock)
        head = (
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"m","role":'
            b'"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":'
            b'{"type":"text","text":""}}\n\n'
        )
        chunks = [head] + [
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
            b'"text":"' + word + b'"}}\n\n'
            for word in (b"hi", b" there", b" you")
        ]
    assert asked == ["T0"]
    for k, piece in enumerate(chunks, 1):
        events = parser.feed(piece)
        assert asked == [f"T{n}" for n in range(k + 1)]
        assert events and {e["createdAt"] for e in events} == {f"T{k}"}, k


@pytest.mark.no_kernel
@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_value, st.booleans())
def test_route_finders_find_the_value_a_key_holds(value: Any, ascii_json: bool) -> None:
    """The text route's finders (``PayloadReader.route_value``) in a payload's bytes: ``value_at`` the start of the
    value of a key that occurs once, ``value_end`` / the string and integer ends the end of the object, array,
    string or integer there, whatever it holds (escapes, brackets and quotes inside strings, nesting)."""
    from agentmsg.providers._response import reader

    text = json.dumps(value, ensure_ascii=ascii_json, separators=(",", ":")).encode()
    data = b'{"a":[1,{"b":"}"}],"key":' + text + b',"z":"\\"key\\":0"}'
    start = reader.value_at(data, b'"key":')
    if b'"key":' in text:
        assert start == -1  # (the key twice: no route)
        return
    assert data[start:].startswith(text)
    if isinstance(value, (dict, list)):
        end = reader.value_end(data, start)
    elif isinstance(value, str) or (type(value) is int):
        end = reader._token_end(data, start)
    else:
        return
    assert data[start:end] == text
    assert reader.value_at(data + b'"key":', b'"key":') == -1  # (twice: no route)


def test_a_provider_count_saturates_at_the_usage_schemas_maximum() -> None:
    """The provider readers' usage (``usage_dict``) stops each count at its maximum in the usage schema: 2^31-1 for
    the counts AgentScope Java holds in an int (it refuses a message beyond), none below 64 bits for the others."""
    from agentmsg.providers._response.payload import usage_dict

    props = agentmsg.schema_documents()["chat-usage.schema.json"]["properties"]
    big = 2**40
    usage = usage_dict(big, big, big, cache_write=big, reasoning=big)
    assert usage is not None
    for key in ("inputTokens", "outputTokens", "cachedTokens"):
        assert usage[key] == props[key]["maximum"] == 2**31 - 1, key
    assert usage["cacheCreationInputTokens"] == usage["reasoningTokens"] == big
    assert "maximum" not in props["cacheCreationInputTokens"] and "maximum" not in props["reasoningTokens"]
    agentmsg.validate(usage, "chat-usage")


@pytest.mark.parametrize(
    ("param", "kept"),
    [('"input"', "input"), ("3", 3), ('{"at": 1}', None), ('["a"]', None)],
    ids=["string", "number", "object", "list"],
)
def test_a_responses_errors_param_is_kept_or_said(param: str, kept: object) -> None:
    """The Responses API's error ``param``: a string was kept, anything else left out without a word. A scalar is
    now kept as it came, another JSON type said (rule ``type``), as the error's ``code`` is."""
    body = b'data: {"type":"error","error":{"type":"t","message":"m","code":"c","param":PARAM}}\n\n'
    events = list(get("openai-responses").parse_stream(body.replace(b"PARAM", param.encode()), reply_id="r"))
    for e in events:
        validate(e, "event")
    errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
    assert len(errors) == 1 and errors[0]["code"] == "c"
    assert errors[0].get("param") == kept
    problems = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert any(p["rule"] == "type" and "param" in p["message"] for p in problems) == (kept is None)


#: A provider error's message of 2,000 characters, its end told apart (a reader cut it at 1,000, without a word)
LONG_ERROR = "upstream failed: " + "x" * 1970 + " (the end)"


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("anthropic", data({"code": "overloaded", "message": LONG_ERROR}, "error")),
        ("anthropic", data({"type": "error", "error": LONG_ERROR}, "error")),
        ("gemini", data({"error": LONG_ERROR})),
        ("openai-responses", data({"type": "error", "error": {"type": "server_error", "message": LONG_ERROR}})),
        (
            "openai-responses",
            data({"type": "response.failed", "response": {"id": "r", "status": "failed", "error": LONG_ERROR}}),
        ),
        ("openai", HI["openai"] + b"event: error\ndata: " + LONG_ERROR.encode() + b"\n\n"),
        ("dashscope", None),
    ],
    ids=[
        "anthropic-proxy",
        "anthropic-text",
        "gemini-text",
        "responses-object",
        "responses-failed-text",
        "plain-text-event",
        "dashscope-task",
    ],
)
def test_a_long_provider_error_message_is_kept_whole(provider: str, body: bytes | None) -> None:
    """Five readers cut a provider error's message at 1,000 characters and said nothing of the rest. The message
    is kept whole (StreamBuilder.error): its size is bounded where it is read (``limits.max_event_bytes``, the
    clients' reply limit), and an exception's text shows its start (``MESSAGE_SHOWN``)."""
    module = get(provider)
    if body is None:  # a failed DashScope task (a whole response, GET /tasks/<task_id>)
        output = {"task_id": "t", "task_status": "FAILED", "code": "InternalError", "message": LONG_ERROR}
        events = module.response_events({"request_id": "q", "output": output})
    else:
        events = list(module.parse_stream(body))
    for e in events:
        validate(e, "event")
    errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
    assert [e["message"] for e in errors] == [LONG_ERROR]
    assert [e["reason"] for e in events if e["type"] == "REQUEST_STOP"] == [errors[0]["type"]]
    meta = reduce_ok(events).to_dict()["metadata"]
    assert [e["message"] for e in meta["agentmsg_errors"]] == [LONG_ERROR]
    assert said(events) == []


def test_a_provider_errors_message_is_written_once_per_choice() -> None:
    """A provider error ends every open choice: each choice's error event holds the message (its message's
    agentmsg_errors), and its REQUEST_STOP copied it again as its reason (then agentmsg_stop_reason): a 1 MiB
    message over 4 choices was 8 MiB of events and 2 MiB in each message. The reason is the error's type; the
    message is written once per choice, and each choice's message holds it once."""
    n, message = 3, "upstream failed: " + "x" * 5000 + " (the end)"
    chunks = [
        data(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": i, "delta": {"content": f"hi {i}"}, "finish_reason": None}],
            }
        )
        for i in range(n)
    ]
    events = list(openai.parse_stream(b"".join(chunks) + data({"error": {"message": message, "type": "server_error"}})))
    text = orjson.dumps(events).decode()
    assert text.count(message) == n
    stops = [(e.get("source"), e["reason"], e["generateReason"]) for e in events if e["type"] == "REQUEST_STOP"]
    assert stops == [(None, "server_error", "INTERRUPTED")] + [
        (f"choice/{i}", "server_error", "INTERRUPTED") for i in range(1, n)
    ]
    for i in range(n):
        (msg,) = reduce_events(events, source=f"choice/{i}" if i else None)
        meta = msg.to_dict()["metadata"]
        assert orjson.dumps(meta).decode().count(message) == 1
        assert meta["agentmsg_stop_reason"] == "server_error"
        assert [(e["type"], e["message"]) for e in meta["agentmsg_errors"]] == [("server_error", message)]


@pytest.mark.parametrize("index", [2**64, 2**70, -(2**63) - 1], ids=["2^64", "2^70", "-2^63-1"])
@pytest.mark.parametrize("provider", ["openai", "gemini", "dashscope"])
def test_a_choice_index_beyond_64_bits_is_read_as_the_first_whole_and_streamed(provider: str, index: int) -> None:
    """A choice index (Gemini: a candidate's) beyond 64 bits was read two ways: a stream's payload (orjson: the
    nearest float) as choice 0, said, a whole response (the codec: the integer) as choice ``choice/<index>``, unsaid;
    Gemini's and DashScope's whole responses, and a streamed payload the codec reads (one holding a number beyond a
    double), still so after OpenAI's whole was fixed. All read it as the first choice now (StreamBuilder.index's rule
    for an index that is no integer), said alike; an index of 64 bits (2^64-1, -2^63) is still a choice of its own."""
    mod = get(provider)
    stop = "STOP" if provider == "gemini" else "stop"
    what = "a candidate's index" if provider == "gemini" else "a choice's index"
    message = [("type", f"{what} is not an integer (a number beyond 64 bits): read as 0")]

    def whole(i: int) -> dict[str, Any]:
        payload = _indexed(provider, i, "B", stop)
        if provider == "openai":
            payload["choices"][0]["message"] = payload["choices"][0].pop("delta")
        return payload

    streamed = list(mod.parse_stream(_written(_indexed(provider, 0, "A"), _indexed(provider, index, "B", stop))))
    codec = _written(_indexed(provider, 0, "A")) + _written(_indexed(provider, index, "B", stop)).replace(
        b"{", b'{"seed": 1e400, ', 1
    )  # (orjson reads no number beyond a double: the payload is read by the codec, the index an exact integer)
    for events, text in (
        (streamed, "AB"),
        (list(mod.parse_stream(codec)), "AB"),
        (mod.response_events(json.dumps(whole(index))), "B"),
    ):
        assert [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == message
        assert {e.get("source") for e in events} == {None}
        assert reduce_ok([e for e in events if e["type"] != "CUSTOM"]).text_content == text
    for edge in (2**64 - 1, -(2**63)):
        events = mod.response_events(json.dumps(whole(edge)))
        assert {e.get("source") for e in events} == {f"choice/{edge}"}
        streamed = list(mod.parse_stream(_written(_indexed(provider, edge, "B", stop))))
        assert {e.get("source") for e in streamed} == {f"choice/{edge}"}


def _called(provider: str, index: int, call: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """A payload of ``provider`` (OpenAI's, DashScope's chunk shape) whose one choice's delta (DashScope: message)
    holds one tool call of ``index``, its other fields ``call``'s; ``finish``: the stream's last payload."""
    tool_calls = [{"index": index, **call}]
    if provider == "openai":
        choice = {"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": finish}
        return {"id": "c1", "model": "m", "choices": [choice]}
    message = {"role": "assistant", "content": "", "tool_calls": tool_calls}
    return {"output": {"choices": [{"message": message, "finish_reason": finish or "null"}]}, "request_id": "q1"}


@pytest.mark.parametrize("index", [2**64, 2**70, -(2**63) - 1], ids=["2^64", "2^70", "-2^63-1"])
@pytest.mark.parametrize("provider", ["openai", "dashscope"])
def test_a_tool_call_index_beyond_64_bits_is_read_alike_whole_and_streamed(provider: str, index: int) -> None:
    """A tool call's index beyond 64 bits (OpenAI's chunk shape, DashScope's) was read two ways, unsaid: a stream's
    payload (orjson: the nearest float) as no index (the call by its place), a whole response or a streamed payload
    the codec reads (one holding 1e400) as index <the integer>; a stream whose first chunk the codec read and the
    next orjson split one call in two (the second nameless, both arguments broken). All read it as no index now
    (StreamBuilder.call_index, as StreamBuilder.index reads a choice's), said alike; an index of 64 bits (2^64-1,
    -2^63) is still the call's key and says nothing."""
    mod = get(provider)
    first = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}
    then = {"function": {"arguments": "1}"}} if provider == "openai" else {"id": "", "function": {"arguments": "1}"}}

    def runs(i: int) -> list[list[dict[str, Any]]]:
        stream = (_called(provider, i, first), _called(provider, i, then), _called(provider, i, {}, "tool_calls"))
        whole = _called(provider, i, {**first, "function": {"name": "f", "arguments": '{"a":1}'}}, "tool_calls")
        if provider == "openai":
            whole["choices"][0]["message"] = whole["choices"][0].pop("delta")
            del stream[2]["choices"][0]["delta"]["tool_calls"]
        else:
            del stream[2]["output"]["choices"][0]["message"]["tool_calls"]
        codec = _written(stream[0]).replace(b"{", b'{"seed": 1e400, ', 1) + _written(*stream[1:])
        return [
            list(mod.parse_stream(_written(*stream))),
            list(mod.parse_stream(codec)),  # (its first chunk read by the codec, the index an exact integer)
            list(mod.response_events(json.dumps(whole))),
        ]

    message = (
        "a tool call's index is not an integer (a number beyond 64 bits): read as none (the call routed by its place)"
    )
    for events in runs(index):
        assert [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == [
            ("type", message)
        ]
        assert calls(reduce_ok([e for e in events if e["type"] != "CUSTOM"])) == [("t1", "f", {"a": 1})]
    for edge in (2**64 - 1, -(2**63)):
        for events in runs(edge):
            assert said(events) == []
            assert calls(reduce_ok(events)) == [("t1", "f", {"a": 1})]


@pytest.mark.parametrize("index", [2**64, 2**70, -(2**63) - 1], ids=["2^64", "2^70", "-2^63-1"])
def test_a_legacy_message_index_beyond_64_bits_is_read_alike_whole_and_streamed(index: int) -> None:
    """A message's index in Azure's legacy On Your Data choice (``messages``) beyond 64 bits was read two ways,
    unsaid: a stream's payload (orjson: the nearest float) as the message's place, one the codec reads (holding
    1e400) as the integer. A tool message whose role came in a codec-read chunk lost it in the next, orjson's: its
    citations were read as the reply's text. It is read as a choice's index is (StreamBuilder.index): its place,
    said, streamed and whole alike; an index of 64 bits (2^64-1, -2^63) is still the message's key, unsaid."""

    def legacy(i: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        ch = {"index": 0, "messages": [{"index": i, "delta": delta, "end_turn": False}], "finish_reason": finish}
        return {"id": "r", "model": "m", "choices": [ch]}

    def runs(i: int) -> list[list[dict[str, Any]]]:
        stream = (
            legacy(i, {"role": "tool", "content": '{"citations": ['}),
            legacy(i, {"content": "]}"}),
            legacy(i, {"role": "assistant", "content": "hi"}, "stop"),
        )
        codec = _written(stream[0]).replace(b"{", b'{"seed": 1e400, ', 1) + _written(*stream[1:])
        message = {"index": i, "role": "assistant", "content": "hi", "end_turn": True}
        whole = {"id": "r", "model": "m", "choices": [{"index": 0, "messages": [message], "finish_reason": "stop"}]}
        return [
            list(openai.parse_stream(_written(*stream))),
            list(openai.parse_stream(codec)),  # (its first chunk read by the codec, the index an exact integer)
            openai.response_events(json.dumps(whole)),
        ]

    message = "a legacy message's index is not an integer (a number beyond 64 bits): read as 0"
    for events in runs(index):
        assert [e["value"]["message"] for e in events if e.get("name") == "agentmsg.problem"] == [message]
        assert reduce_ok([e for e in events if e["type"] != "CUSTOM"]).text_content == "hi"
    for edge in (2**64 - 1, -(2**63)):
        for events in runs(edge):
            assert said(events) == []
            assert reduce_ok([e for e in events if e["type"] != "CUSTOM"]).text_content == "hi"


def _late_stream(provider: str, kind: str, late: bool) -> bytes:
    """A stream of ``provider`` whose choice 0 gives two fragments of ``kind`` (text, reasoning or arguments), then,
    with ``late``, its finish reason and then three more (a late fragment repeats its shape: the C kernels route it);
    else the finish reason after the five."""
    pieces = ['{"a"', ":", "1", ",", '"b":2}'] if kind == "arguments" else ["A", "B", "C", "D", "E"]
    if provider == "anthropic":
        blocks: dict[str, dict[str, Any]] = {"text": {"type": "text", "text": ""}, "reasoning": {"type": "thinking"}}
        block = blocks.get(kind, {"type": "tool_use", "id": "t1", "name": "f", "input": {}})
        field = {"text": ("text_delta", "text"), "reasoning": ("thinking_delta", "thinking")}.get(
            kind, ("input_json_delta", "partial_json")
        )
        start: dict[str, Any] = {"id": "msg_1", "model": "claude", "content": [], "stop_reason": None}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": block},
        ]
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": field[0], field[1]: p}} for p in pieces
        ]
        stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}
        events.insert(4 if late else 7, stop)
        events += [{"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
        return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)
    payloads: list[dict[str, Any]] = []
    for n, p in enumerate(pieces):
        if provider == "openai":
            delta: dict[str, Any] = {"text": {"content": p}, "reasoning": {"reasoning_content": p}}.get(
                kind, {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}
            )
            if kind == "arguments" and n == 0:
                delta["tool_calls"][0].update(id="t1", type="function", function={"name": "f", "arguments": p})
            payloads.append(
                {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            )
        elif provider == "dashscope":
            message = {"role": "assistant", "content": p} if kind == "text" else {"reasoning_content": p}
            payloads.append({"output": {"choices": [{"message": message, "finish_reason": "null"}]}, "request_id": "q"})
        else:
            part = {"text": p, "thought": True} if kind == "reasoning" else {"text": p}
            payloads.append({"candidates": [{"content": {"role": "model", "parts": [part]}}], "responseId": "r1"})
    if provider == "openai":
        stop_payload: dict[str, Any] = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}}]}
        stop_payload["choices"][0]["finish_reason"] = "tool_calls" if kind == "arguments" else "stop"
    elif provider == "dashscope":
        stop_payload = {"output": {"choices": [{"message": {}, "finish_reason": "stop"}]}, "request_id": "q"}
    else:
        stop_payload = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}]}
    payloads.insert(2 if late else 5, stop_payload)
    return sse(*payloads, done=provider == "openai")


@pytest.mark.parametrize(
    ("provider", "kind"),
    [
        ("openai", "text"),
        ("openai", "reasoning"),
        ("openai", "arguments"),
        ("dashscope", "text"),
        ("dashscope", "reasoning"),
        ("gemini", "text"),
        ("gemini", "reasoning"),
        ("anthropic", "text"),
        ("anthropic", "reasoning"),
        ("anthropic", "arguments"),
    ],
)
def test_a_fragment_after_its_choices_finish_reason_is_said_and_kept(provider: str, kind: str) -> None:
    """A text, reasoning or arguments fragment for a choice after its finish reason (OpenAI's and DashScope's
    finish_reason, Gemini's finishReason, Anthropic's message_delta stop_reason) was joined to the choice unsaid. It
    is still kept in its place (as openai's ChatCompletionStreamState, anthropic's accumulator and google-genai's chat
    history keep it) and said once (rule order), the routed repeats too; a stream that finishes after its fragments
    says nothing, cut anywhere."""
    what = {"text": "a text fragment", "reasoning": "a reasoning fragment", "arguments": "a tool call's arguments"}
    reason = {"openai": "tool_calls" if kind == "arguments" else "stop", "gemini": "STOP", "anthropic": "end_turn"}
    message = (
        f"{what[kind]} for choice 0 after its finish reason ({reason.get(provider, 'stop')}): kept in its place (as"
        " the provider's SDK accumulates it)"
    )
    for late in (True, False):
        body = _late_stream(provider, kind, late)
        for pieces in ([body], [body[i : i + 11] for i in range(0, len(body), 11)]):
            events = list(get(provider).parse_stream(pieces))
            notes = [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"]
            assert notes == ([("order", message)] if late else [])
            msg = reduce_ok(events)
            if kind == "arguments":
                assert calls(msg) == [("t1", "f", {"a": 1, "b": 2})]
            elif kind == "reasoning":
                assert [b.thinking for b in msg.content] == ["ABCDE"]  # type: ignore[union-attr]
            else:
                assert msg.text_content == "ABCDE"


def test_dashscope_text_held_to_tell_the_mode_is_no_fragment_after_the_finish() -> None:
    """DashScope's reader holds a value that may be incremental or cumulative ("a" then "ab") until the next one tells,
    or the reply ends: the value of the finish chunk, emitted when the reply ends, came before the finish reason: it
    is no late fragment (nothing said), as it was."""
    payloads = [
        {
            "output": {"choices": [{"message": {"role": "assistant", "content": t}, "finish_reason": f}]},
            "request_id": "q",
        }
        for t, f in (("a", "null"), ("ab", "stop"))
    ]
    events = list(dashscope.parse_stream(sse(*payloads, done=False)))
    assert custom(events) == []
    assert reduce_ok(events).text_content == "ab"
