"""Shapes found in recordings outside the project (other projects' cassettes, vendors' docs): provider
extensions and encodings the parsers first missed, each read (or said) as the official SDKs read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

import agentmsg
from agentmsg import Reducer, UserMessage
from agentmsg.providers import openai

FIX = Path(__file__).parent / "fixtures" / "providers"


def sse(*payloads: Any, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (p if isinstance(p, bytes) else orjson.dumps(p)) + b"\n\n" for p in payloads)
    return out + (b"data: [DONE]\n\n" if done else b"")


def reduce_ok(events: list[dict[str, Any]]) -> agentmsg.AssistantMessage:
    for e in events:
        agentmsg.validate(e, "event")
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert r.problems == []
    return msg


def said(events: list[dict[str, Any]], name: str = "agentmsg.problem") -> list[str]:
    return [e["value"]["rule"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


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
