"""Odd-but-valid and broken provider streams, hand-made: what the peers get wrong (parallel calls merged,
names appended, reasoning lost, everything lost on a cut) and the CLI that reads them."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import Reducer, reduce_events
from agentmsg.cli import main
from agentmsg.clients import OpenAIClient
from agentmsg.providers import anthropic, dashscope, gemini, openai
from agentmsg.testing import ReplayServer, Reply

FIX = Path(__file__).parent / "fixtures" / "providers"


def sse(*payloads: Any, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (p if isinstance(p, bytes) else orjson.dumps(p)) + b"\n\n" for p in payloads)
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


def ev(kind: str, **data: Any) -> bytes:
    """One Anthropic SSE event (``event:`` and ``data:`` lines)."""
    return f"event: {kind}\ndata: ".encode() + orjson.dumps({"type": kind, **data}) + b"\n\n"


CITE = {"type": "char_location", "cited_text": "sky", "document_index": 0}


def cited_response(message_id: str) -> dict[str, Any]:
    """A whole Anthropic response whose one text block ("blue") has a citation."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "blue", "citations": [CITE]}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }


def reduce_ok(events: list[dict[str, Any]]) -> agentmsg.AssistantMessage:
    for e in events:
        agentmsg.validate(e, "event")
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert r.problems == []
    return msg


def calls(msg: agentmsg.Msg) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.input) for c in msg.blocks("tool_use")]


def tc(index: int, id: str | None = None, name: str | None = None, args: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    out: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        out["id"] = id
    return out


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
    assert msg.content[0].thinking == "think more" and msg.text_content == "Hi"
    assert calls(msg) == [("call_a", "f", {"x": 1}), ("call_b", "g", {"y": 2})]
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (7, 3)
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


def test_anthropic_ping_unknown_events_signature_only_and_redacted() -> None:
    body = b"".join(
        [
            ev(
                "message_start",
                message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 5, "output_tokens": 1}},
            ),
            ev("ping"),
            ev("content_block_start", index=0, content_block={"type": "thinking", "thinking": "", "signature": ""}),
            ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hmm"}),
            ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "SIG"}),
            ev("content_block_stop", index=0),
            ev("content_block_start", index=1, content_block={"type": "redacted_thinking", "data": "ENC"}),
            ev("content_block_stop", index=1),
            ev("some_future_event", payload=1),
            ev("content_block_start", index=2, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=2, delta={"type": "text_delta", "text": "ok"}),
            ev("content_block_delta", index=2, delta={"type": "citations_delta", "citation": {}}),
            ev("content_block_stop", index=2),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9}),
            ev("message_stop"),
        ]
    )
    parser = anthropic.StreamParser()
    msg = reduce_ok([*parser.feed(body), *parser.close()])
    t0, t1, text = msg.content
    assert (t0.thinking, agentmsg.thinking_signature(t0)) == ("hmm", "SIG")
    assert agentmsg.is_redacted(t1) and t1.metadata["redactedData"] == "ENC" and t1.thinking == ""
    assert text.text == "ok" and msg.usage.output_tokens == 9 and msg.usage.input_tokens == 5
    # what the message has no place for is said, not dropped silently; it is no problem of the input
    assert parser.problems == []
    assert [(p.rule, p.message) for p in parser.builder.not_kept_notes] == [
        ("not-kept", "the citations of text block 2 are not kept (the message has no place for them)")
    ]


def test_anthropic_citations_and_unknown_deltas_are_reported_once_per_block() -> None:
    body = b"".join(
        [
            ev("message_start", message={"id": "msg_2", "model": "claude", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block={"type": "text", "text": "", "citations": []}),
            *[ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITE})] * 3,
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "blue"}),
            *[ev("content_block_delta", index=0, delta={"type": "future_delta", "x": 1})] * 2,
            ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
            ev("message_stop"),
        ]
    )
    events = list(anthropic.parse_stream(body))
    assert custom(events) == [("agentmsg.not-kept", "not-kept"), ("agentmsg.problem", "enum")]
    assert reduce_ok(events).text_content == "blue"
    # the whole response: its text block's citations are reported too
    response = cited_response("msg_3")
    events = anthropic.response_events(response)
    assert custom(events) == [("agentmsg.not-kept", "not-kept")]
    assert anthropic.parse_response(response).text_content == "blue"


def custom(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]["rule"]) for e in events if e["type"] == "CUSTOM"]


def test_openai_and_gemini_extras_the_message_has_no_place_for_are_said_once() -> None:
    lp = {"content": [{"token": "a", "logprob": -0.1, "bytes": [97], "top_logprobs": []}]}
    body = sse(
        {**chunk({"content": "a"}), "choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": lp}]},
        {**chunk({"content": "b"}), "choices": [{"index": 0, "delta": {"content": "b"}, "logprobs": lp}]},
        chunk({"annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}]}, "stop"),
    )
    events = list(openai.parse_stream(body))
    assert custom(events) == [("agentmsg.not-kept", "not-kept")] * 2  # logprobs once, annotations once
    assert reduce_ok(events).text_content == "ab"
    response = {
        "id": "c",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ab"}, "logprobs": lp, "finish_reason": "stop"}
        ],
    }
    assert custom(openai.response_events(response)) == [("agentmsg.not-kept", "not-kept")]
    plain = {**response, "choices": [{**response["choices"][0], "logprobs": None}]}
    assert custom(openai.response_events(plain)) == []

    grounded = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "sunny"}]},
                "groundingMetadata": {"webSearchQueries": ["weather"]},
                "citationMetadata": {"citations": [{"uri": "https://x"}]},
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
    assert [n.split(" (")[0] for n in notes] == [
        "executableCode parts",
        "codeExecutionResult parts",
        "grounding",
        "citation data",
    ]
    assert custom(events) == [("agentmsg.not-kept", "not-kept")] * 4
    assert reduce_ok(events).text_content == "sunny"


def test_cli_parse_exits_0_when_only_data_not_kept_was_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Data the message has no place for is said in the events, but the reply was read whole: exit 0."""

    body = b"".join(
        [
            ev("message_start", message={"id": "msg_4", "model": "claude", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "blue"}),
            ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITE}),
            ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
            ev("message_stop"),
        ]
    )
    path = tmp_path / "cited.sse"
    path.write_bytes(body)
    assert main(["parse", "--provider", "anthropic", "--stream", str(path)]) == 0
    out, err = capsys.readouterr()
    assert agentmsg.Msg.from_json(out).text_content == "blue"
    assert (
        err
        == f"{path}: note: the citations of text block 0 are not kept (the message has no place for them) [not-kept]\n"
    )
    whole = tmp_path / "cited.json"
    whole.write_bytes(orjson.dumps(cited_response("msg_5")))
    assert main(["parse", "--provider", "anthropic", str(whole)]) == 0


def test_cli_parse_says_why_it_exits_1_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 (a payload skipped, a cut stream, the provider's error) comes with one stderr line each saying
    why; the message on stdout keeps everything received."""
    head = [
        ev("message_start", message={"id": "msg_6", "model": "claude", "usage": {"input_tokens": 1}}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
    ]
    path = tmp_path / "odd.sse"
    path.write_bytes(b"".join([*head, b"data: {not json\n\n"]))
    assert main(["parse", "--provider", "anthropic", "--stream", str(path)]) == 1
    out, err = capsys.readouterr()
    assert agentmsg.Msg.from_json(out).text_content == "Hi"
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{path}: a payload is not JSON") and lines[0].endswith("[json]")
    assert lines[1] == f"{path}: error: the stream ended before the provider finished the reply [incomplete_stream]"
    # the same lines beside --events; a choice other than the first is named
    assert main(["parse", "--provider", "anthropic", "--stream", "--events", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == lines
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    n2 = [
        {**chunk, "choices": [{"index": 1, "delta": {"content": "x"}, "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "delta": {"content": "y"}, "finish_reason": "stop"}]},
    ]
    path.write_bytes(b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in n2))  # cut before [DONE]
    assert main(["parse", "--provider", "openai", "--stream", "--choice", "all", str(path)]) == 1
    out, err = capsys.readouterr()
    assert [agentmsg.Msg.from_json(line).text_content for line in out.splitlines()] == ["y", "x"]
    assert err.startswith(f"{path}: choice/1: error: ") and err.endswith("[incomplete_stream]\n")


def test_a_payload_after_the_end_of_the_reply_is_skipped_and_said_once() -> None:
    """After Anthropic's message_stop (or ``[DONE]``) the reply is over: a payload that follows (a second reply
    pasted into the file, say) is skipped and said once (problem ``order``), in the same chunk, a later one or
    at the end without its blank line; another ``[DONE]``, a ping or a comment is no news."""
    reply = [
        ev("message_start", message={"id": "msg_7", "model": "claude", "usage": {"input_tokens": 1}}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "A"}),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
        ev("message_stop"),
    ]
    body = b"".join(reply)
    for chunks in (
        [body + body],
        [body, body],
        [body, body[:-2]],
        [body, b": ok\n\n", ev("ping"), b"data: [DONE]\n\n"],
    ):
        parser = anthropic.StreamParser()
        events = [e for c in chunks for e in parser.feed(c)] + parser.close()
        said = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
        assert reduce_ok(events).text_content == "A"
        if len(chunks) == 4:
            assert said == [] and parser.problems == []
        else:
            assert len(said) == 1 and said[0].startswith("a payload after the end of the reply: skipped")
            assert [p.rule for p in parser.problems] == ["order"]


def test_dashscope_cumulative_mode_and_detection() -> None:
    def payload(content: str, reasoning: str = "", finish: str = "null", calls: Any = None) -> dict[str, Any]:
        m: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning}
        if calls:
            m["tool_calls"] = calls
        return {"output": {"choices": [{"message": m, "finish_reason": finish}]}, "request_id": "r1"}

    body = b"".join(
        b"data:" + orjson.dumps(p) + b"\n\n"
        for p in [
            payload("", "I think"),
            payload("", "I think hard"),
            payload("Hello", "I think hard"),
            payload("Hello world", "I think hard", "stop"),
        ]
    )
    for incremental in (False, None):  # told, or found out from the stream
        msg = reduce_ok(list(dashscope.parse_stream(body, incremental=incremental)))
        assert (msg.content[0].thinking, msg.text_content) == ("I think hard", "Hello world")
    fn = {"name": "get", "arguments": '{"city": "Hang'}
    calls_body = b"".join(
        b"data:" + orjson.dumps(p) + b"\n\n"
        for p in [
            payload("", "", calls=[{"id": "c1", "type": "function", "function": fn}]),
            payload(
                "",
                "",
                "tool_calls",
                [{"id": "c1", "type": "function", "function": {**fn, "arguments": '{"city": "Hangzhou"}'}}],
            ),
        ]
    )
    msg = reduce_ok(list(dashscope.parse_stream(calls_body, incremental=False)))
    assert calls(msg) == [("c1", "get", {"city": "Hangzhou"})]


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
    assert call.content.startswith('{"trip":{"city":"Paris","days":[1') and call.name == "plan"
    err = next(e for e in events if e["type"] == "CUSTOM")
    assert err["value"]["message"] == "The model is overloaded." and err["value"]["code"] == 503


# ---- CLI ------------------------------------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_cli_parse_exits_3_for_tool_arguments_the_provider_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid stream whose tool call arguments the provider cut at max_tokens (Anthropic's recorded one) exited 1,
    as a broken input does, though every payload was read: the message keeps the raw text (argumentsError) and
    the problem is said. Now exit 3 (documented), for every provider, streamed (with --events too) and whole;
    the problem's value names the call (toolCallId). A broken input beside it still exits 1, and so does a cut
    stream."""
    fixture = FIX / "anthropic" / "stream_sdk_incomplete_partial_json.sse"
    assert main(["parse", "--provider", "anthropic", "--stream", str(fixture)]) == 3
    out, err = capsys.readouterr()
    (call,) = agentmsg.Msg.from_json(out).blocks("tool_use")
    assert call.metadata["argumentsError"] and call.content and call.content.startswith('{"filename"')
    assert err.startswith(f"{fixture}: the reply ended (max_tokens) with tool call 'make_file'")
    assert err.endswith("[incomplete]\n") and len(err.splitlines()) == 1
    assert main(["parse", "--provider", "anthropic", "--stream", "--events", str(fixture)]) == 3
    (said,) = [orjson.loads(x) for x in capsys.readouterr().out.splitlines() if b"agentmsg.problem" in x.encode()]
    assert said["value"]["toolCallId"] == call.id
    cut_args = '{"city": "Par'
    whole_openai = {
        "id": "c",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [tc(0, "c1", "f", cut_args)]},
                "finish_reason": "length",
            }
        ],
    }
    gem_cut = {"functionCall": {"name": "f", "willContinue": True}}
    gem_more = {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}]}}
    gem_more["functionCall"]["willContinue"] = True
    dashscope_msg = {"role": "assistant", "content": "", "tool_calls": [tc(0, "c1", "f", cut_args)]}
    cases = {
        ("openai", "--stream"): sse(
            chunk({"tool_calls": [tc(0, "c1", "f", cut_args[:5])]}),
            chunk({"tool_calls": [tc(0, None, None, cut_args[5:])]}),
            chunk({}, "length"),
        ),
        ("openai", None): orjson.dumps(whole_openai),
        ("openai", "not an object"): sse(chunk({"tool_calls": [tc(0, "c1", "f", "[1]")]}), chunk({}, "tool_calls")),
        ("gemini", "--stream"): b"".join(
            b"data: " + orjson.dumps({"candidates": [cand], "responseId": "g1"}) + b"\n\n"
            for cand in (
                {"content": {"role": "model", "parts": [gem_cut]}, "index": 0},
                {"content": {"role": "model", "parts": [gem_more]}, "index": 0, "finishReason": "MAX_TOKENS"},
            )
        ),
        ("dashscope", "--stream"): b"data:"
        + orjson.dumps(
            {"output": {"choices": [{"message": dashscope_msg, "finish_reason": "length"}]}, "request_id": "r1"}
        )
        + b"\n\n",
    }
    for (provider, flag), body in cases.items():
        path = tmp_path / "reply"
        path.write_bytes(body)
        args = ["parse", "--provider", provider, *([flag] if flag == "--stream" else []), str(path)]
        assert main(args) == 3, (provider, flag)
        out, err = capsys.readouterr()
        (call,) = agentmsg.Msg.from_json(out).blocks("tool_use")
        assert call.metadata["argumentsError"], (provider, flag)
        assert err.endswith("[type]\n" if flag == "not an object" else "[incomplete]\n"), (provider, flag, err)
    # a broken input beside it: 1 (the input was not read whole); a stream cut inside the arguments: 1
    path.write_bytes(cases[("openai", "--stream")].replace(b"data: {", b"data: {not json\n\ndata: {", 1))
    assert main(["parse", "--provider", "openai", "--stream", str(path)]) == 1
    assert "[json]" in capsys.readouterr().err
    path.write_bytes(cases[("openai", "--stream")].rsplit(b"data: {", 1)[0])
    assert main(["parse", "--provider", "openai", "--stream", str(path)]) == 1
    assert capsys.readouterr().err.endswith("[incomplete_stream]\n")


@pytest.mark.parametrize(
    ("provider", "path", "stream"),
    [
        ("openai", "openai/stream_parallel_tool_calls.sse", True),
        ("dashscope-compatible", "dashscope/compat_stream_tool_call.sse", True),
        ("anthropic", "anthropic/stream_thinking_signature.sse", True),
        ("gemini", "gemini/generate_content_function_call.json", False),
        ("dashscope", "dashscope/native_stream_reasoning_tool_call_sdkprint.jsonl", True),
        ("deepseek", "deepseek/chat_completion_reasoner.json", False),
    ],
)
def test_cli_parse(provider: str, path: str, stream: bool) -> None:
    args = ["parse", "--provider", provider, *(["--stream"] if stream else []), str(FIX / path)]
    code, out = run_cli(*args)
    assert code == 0
    (line,) = out.splitlines()
    msg = agentmsg.Msg.from_json(line)
    assert msg.content
    code, out = run_cli(*args, "--events")
    assert code == 0
    events = [orjson.loads(x) for x in out.splitlines()]
    assert reduce_events(events)[0].to_dict()["content"] == msg.to_dict()["content"]


def test_cli_parse_reads_an_sse_body_as_a_stream_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """A stream saved to a file and given without ``--stream`` is SSE all the same: read as a stream (it
    failed as "not valid JSON" at its first byte); a JSON body without the flag is still a response."""
    fixtures = Path(__file__).parent / "fixtures" / "providers"
    for provider, name in (("openai", "openai/stream_parallel_tool_calls.sse"), ("gemini", "gemini/stream_text.sse")):
        path = str(fixtures / name)
        assert main(["parse", "--provider", provider, "--stream", path]) == 0
        streamed = capsys.readouterr().out
        assert main(["parse", "--provider", provider, path]) == 0
        assert strip_time(capsys.readouterr().out) == strip_time(streamed)
    assert main(["parse", "--provider", "openai", str(fixtures / "openai/chat_completion_text.json")]) == 0
    assert agentmsg.Msg.from_json(capsys.readouterr().out).text_content


def strip_time(line: str) -> dict[str, Any]:
    d: dict[str, Any] = orjson.loads(line)
    d.pop("timestamp")
    if d.get("usage"):
        d["usage"].pop("time", None)
    return d


def test_cli_parse_choices_and_cut_stream(tmp_path: Path) -> None:
    code, out = run_cli(
        "parse",
        "--provider",
        "openai",
        "--stream",
        "--choice",
        "all",
        str(FIX / "openai/stream_n3_multiple_choices.sse"),
    )
    assert code == 0 and len(out.splitlines()) == 3
    cut = tmp_path / "cut.sse"
    data = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    code, out = run_cli("parse", "--provider", "openai", "--stream", str(cut))
    assert code == 1 and agentmsg.Msg.from_json(out).generate_reason.value == "INTERRUPTED"
    code, _ = run_cli("parse", "--provider", "openai", "--choice", "5", str(FIX / "openai/chat_completion_text.json"))
    assert code == 2


def _chat(monkeypatch: pytest.MonkeyPatch, provider: str, route: str, fixture: str, prompt: str) -> tuple[int, str]:
    """``agentmsg chat`` against the replay server playing a recorded stream."""
    monkeypatch.setenv({"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider], "sk-test")
    with ReplayServer() as server:
        server.add(route, Reply(body=(FIX / fixture).read_bytes(), sse=True))
        return run_cli("chat", "--provider", provider, "--base-url", server.url, prompt)


def test_cli_chat_over_replay_server(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _chat(monkeypatch, "openai", "/chat/completions", "openai/stream_parallel_tool_calls.sse", "weather?")
    assert code == 0
    assert "[tool call] GetWeatherArgs" in out and "[usage] input 149 · output 60 · total 209 · " in out
    assert isinstance(OpenAIClient, type)
    # a reply whose provider gave no token counts says so, not "input None"
    code, out = _chat(
        monkeypatch, "anthropic", "/v1/messages", "anthropic/stream_docs_extended_thinking.sse", "27*453?"
    )
    assert code == 0 and "\n6. 10,800 + 1,350 + 81 = 12,231\n\n27 * 453 = 12,231\n" in out  # the answer apart
    assert out.startswith("[thinking] Let me solve this step by step:")
    usage = out.splitlines()[-1]
    assert usage.startswith("[usage] no token counts from the provider · ") and usage.endswith(" s")


def test_parse_cli_reads_streams_incrementally_and_bounds_whole_bodies(tmp_path: Path) -> None:
    """--stream feeds the parser chunk by chunk (a body far larger than one read is reduced whole); a
    non-streamed body over --max-bytes is refused with rule max-bytes instead of being read on."""
    import json as _json
    import subprocess
    import sys

    text = "x" * 50
    chunks = [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    ]
    chunks += [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"'
        + text
        + '"},"finish_reason":null}]}\n\n'
    ] * 4000
    chunks.append(
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    body = tmp_path / "stream.sse"
    body.write_text("".join(chunks))
    assert body.stat().st_size > 4 * 65536  # several reads
    run = subprocess.run(
        [sys.executable, "-m", "agentmsg", "parse", "--provider", "openai", "--stream", str(body)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    (msg,) = [_json.loads(line) for line in run.stdout.splitlines()]
    assert msg["content"] == [{"type": "text", "text": text * 4000}]
    assert msg["metadata"]["agentmsg_finish_reason"] == "stop"
    response = tmp_path / "response.json"
    response.write_text(_json.dumps({"id": "x", "padding": "y" * 5000}))
    run = subprocess.run(
        [sys.executable, "-m", "agentmsg", "parse", "--provider", "openai", "--max-bytes", "1000", str(response)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "[max-bytes]" in run.stderr


def test_anthropic_server_tools_are_no_client_calls() -> None:
    """A tool the provider runs itself (web search) streams its input as input_json_delta like a client
    tool: it must not become a call for the client to run (nor make the reply TOOL_CALLS). Its blocks are
    said as not kept; the answer around them is kept."""

    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://x", "title": "t", "encrypted_content": "E"}],
    }
    body = b"".join(
        [
            ev("message_start", message={"id": "msg_6", "model": "claude", "usage": {"input_tokens": 5}}),
            ev("content_block_start", index=0, content_block=use),
            ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"query": "sky"}'}),
            ev("content_block_stop", index=0),
            ev("content_block_start", index=1, content_block=result),
            ev("content_block_stop", index=1),
            ev("content_block_start", index=2, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=2, delta={"type": "text_delta", "text": "blue"}),
            ev("content_block_stop", index=2),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9}),
            ev("message_stop"),
        ]
    )
    events = list(anthropic.parse_stream(body))
    assert not [e for e in events if e["type"].startswith("TOOL_CALL")]
    assert custom(events) == [("agentmsg.not-kept", "not-kept")] * 2
    msg = reduce_ok(events)
    assert [b.type for b in msg.content] == ["text"] and msg.text_content == "blue"
    assert msg.generate_reason is None or msg.generate_reason.value == "MODEL_STOP"
    whole = {
        "id": "msg_7",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{**use, "input": {"query": "sky"}}, result, {"type": "text", "text": "blue"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 9},
    }
    assert anthropic.parse_response(whole).content == msg.content
    # an unknown block type stays a problem (the reply was not read whole)
    odd = {**whole, "content": [{"type": "future_block", "x": 1}, {"type": "text", "text": "blue"}]}
    assert custom(anthropic.response_events(odd)) == [("agentmsg.problem", "enum")]


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


def test_openai_error_objects_done_and_reasoning_details_as_the_sdk_reads_them() -> None:
    """``"error": null`` / ``{}`` on a chunk is no error (the SDK raises on a truthy one only); an error beside
    choices (OpenRouter: finish_reason "error") ends the reply interrupted after what they carry;
    ``data: [DONE] `` ends the stream as the SDK's ``startswith`` does (a payload after it is skipped, as the
    SDK skips it, and said); OpenRouter's reasoning_details are said as not kept."""
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
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


def test_an_error_event_with_plain_text_data_is_the_providers_error() -> None:
    body = ev("message_start", message={"id": "m1", "model": "claude", "usage": {"input_tokens": 1}}) + (
        b"event: error\ndata: Internal Server Error\n\n"
    )
    events = list(anthropic.parse_stream(body))
    errors = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert errors == ["Internal Server Error"]
    assert reduce_ok(events).generate_reason.value == "INTERRUPTED"


def test_gemini_parts_keep_their_order_and_their_signatures() -> None:
    """Text after a call, a thought or a signed part is a block of its own, each signed thought is a thinking
    block of its own (two whole signatures are never joined), and the formatter sends each signature back
    on its part."""

    def gem(*parts: dict[str, Any], finish: bool = False) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
        return {"candidates": [{**cand, **({"finishReason": "STOP"} if finish else {})}], "responseId": "r1"}

    def shape(body: bytes) -> list[tuple[str, Any, Any]]:
        msg = reduce_ok(list(gemini.parse_stream(body)))
        whole = gemini.parse_response(orjson.dumps(gem(*(p for c in chunks for p in c), finish=True)))
        assert whole.to_dict()["content"] == msg.to_dict()["content"]  # whole and streamed alike
        return [
            (b["type"], b.get("text") or b.get("thinking") or b.get("name"), (b.get("metadata") or {}).get("signature"))
            for b in msg.to_dict()["content"]
        ]

    call = {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "S1"}
    chunks: list[list[dict[str, Any]]] = [[{"text": "Before "}], [call], [{"text": "after"}]]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert shape(body) == [("text", "Before ", None), ("tool_use", "f", None), ("text", "after", None)]

    chunks = [
        [{"text": "t1", "thought": True}],
        [{"text": "a1"}],
        [{"text": "t2", "thought": True}],
        [{"text": "a2"}],
    ]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert [s[:2] for s in shape(body)] == [("thinking", "t1"), ("text", "a1"), ("thinking", "t2"), ("text", "a2")]

    chunks = [
        [{"text": "think A", "thought": True, "thoughtSignature": "SIGA"}],
        [{"text": " think B", "thought": True, "thoughtSignature": "SIGB"}],
        [{"text": "first", "thoughtSignature": "VFM="}],
        [{"text": " second"}],
    ]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert shape(body) == [
        ("thinking", "think A", "SIGA"),
        ("thinking", " think B", "SIGB"),
        ("text", "first", None),
        ("thinking", None, "VFM="),
        ("text", " second", None),
    ]
    msg = reduce_ok(list(gemini.parse_stream(body)))
    sent = gemini.format_request([msg], model="m").body["contents"][0]["parts"]
    assert sent == [*chunks[0], *chunks[1], *chunks[2], *chunks[3]]  # each signature back on its part


def test_gemini_a_thought_after_a_server_part_or_a_signature_part_is_a_block_of_its_own() -> None:
    """A thought after a part the provider ran itself (executableCode, toolCall, toolResponse) or after a signed empty
    part is a block of its own, after that part's signature: it was merged with the thought before, across the part,
    and the part's signature put after both, so the formatter sent the later thought's signature on the earlier
    thought's text and the part's own after it."""
    for between in (
        {"executableCode": {"code": "1", "language": "PYTHON"}, "thoughtSignature": "U0lHMQ=="},
        {"toolResponse": {"response": {"r": 1}}, "thoughtSignature": "U0lHMQ=="},
        {"text": "", "thoughtSignature": "U0lHMQ=="},
    ):
        parts = [
            {"text": "t1", "thought": True},
            between,
            {"text": "t2", "thought": True, "thoughtSignature": "U0lHMg=="},
        ]
        chunks = [
            {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "responseId": "r"} for p in parts
        ]
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        whole = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "responseId": "r",
        }
        for msg in (reduce_ok(list(gemini.parse_stream(sse(*chunks, done=False)))), gemini.parse_response(whole)):
            assert [(b.thinking, b.metadata.get("signature")) for b in msg.blocks("thinking")] == [
                ("t1", None),
                ("", "U0lHMQ=="),
                ("t2", "U0lHMg=="),
            ]
            sent = gemini.format_request([msg], model="m").body["contents"][0]["parts"]
            assert [(p.get("text"), p.get("thoughtSignature")) for p in sent] == [
                ("t1", None),
                ("", "U0lHMQ=="),
                ("t2", "U0lHMg=="),
            ]


def test_gemini_empty_text_part_with_a_signature_goes_back_as_it_came() -> None:
    """Gemini 3 streams the answer's signature on a last, empty text part of its own ({"text": "",
    "thoughtSignature": ...}, no thought). It went back with thought: true when no answer part came before it
    (after a call or a thought, or alone), and merged onto the text part before it otherwise: a part of another
    kind, signed parts merged. It goes back as it came, a part of its own, as google-genai's chat history
    replays it; an empty *thought* part with a signature still goes back as a thought."""
    from tests import oracles

    def gem(*parts: dict[str, Any], finish: bool = False) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
        return {"candidates": [{**cand, **({"finishReason": "STOP"} if finish else {})}], "responseId": "r1"}

    signed = {"text": "", "thoughtSignature": "c2ln"}
    call = {"functionCall": {"id": "c1", "name": "f", "args": {"a": 1}}, "thoughtSignature": "QUJD"}
    cases = [
        [[{"text": "Hello"}], [signed]],
        [[call], [signed]],
        [[{"text": "hm", "thought": True}], [signed]],
        [[signed]],
        [[{"text": "", "thought": True, "thoughtSignature": "c2ln"}]],  # a thought: stays one
    ]
    for chunks in cases:
        body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
        whole = gem(*(p for c in chunks for p in c), finish=True)
        for msg in (reduce_ok(list(gemini.parse_stream(body))), gemini.parse_response(whole)):
            request = gemini.format_request([agentmsg.UserMessage("q"), msg], model="gemini-3-pro-preview")
            assert request.body["contents"][1]["parts"] == [p for c in chunks for p in c]
            assert {d.rule for d in request.diagnostics} <= {"tool-use-orphan"}  # (the call: no result follows)
            assert oracles.check("gemini", request) == []


def _ds(content: str = "", finish: str = "null", **message: Any) -> dict[str, Any]:
    choice = {"message": {"content": content, "role": "assistant", **message}, "finish_reason": finish}
    return {"output": {"choices": [choice]}, "request_id": "req-1"}


@pytest.mark.parametrize(
    ("payloads", "text"),
    [
        # incremental fragments where the second starts with the first: held until the third tells
        ([_ds("**"), _ds("**Plan"), _ds("**", "stop")], "****Plan**"),
        ([_ds("ha"), _ds("ha"), _ds("!", "stop")], "haha!"),
        # cumulative: a value equal to the last one adds nothing
        ([_ds("Hello"), _ds("Hello", "stop")], "Hello"),
        ([_ds("Hel"), _ds("Hello"), _ds("Hello world", "stop")], "Hello world"),
        # only two values that may be either: the API's default (cumulative)
        ([_ds("a"), _ds("ab", "stop")], "ab"),
    ],
)
def test_dashscope_mode_told_from_the_stream(payloads: list[dict[str, Any]], text: str) -> None:
    body = sse(*payloads, done=False)
    for pieces in ([body], [body[i : i + 7] for i in range(0, len(body), 7)]):
        events = list(dashscope.parse_stream(pieces))
        assert custom(events) == []
        assert reduce_ok(events).text_content == text


def test_dashscope_cumulative_reasoning_and_tool_calls_told_from_the_stream() -> None:
    body = sse(
        _ds(reasoning_content="Th"),
        _ds(reasoning_content="Think"),
        _ds("A", reasoning_content="Think"),
        _ds("AB", "stop", reasoning_content="Think"),
        done=False,
    )
    msg = reduce_ok(list(dashscope.parse_stream(body)))
    assert [(b.type, b.thinking if b.type == "thinking" else b.text) for b in msg.content] == [
        ("thinking", "Think"),
        ("text", "AB"),
    ]

    def call(args: str) -> list[dict[str, Any]]:
        return [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": args}}]

    body = sse(
        _ds(tool_calls=call('{"city": "Hang')),
        _ds("", "tool_calls", tool_calls=call('{"city": "Hangzhou"}')),
        done=False,
    )
    msg = reduce_ok(list(dashscope.parse_stream(body)))
    assert calls(msg) == [("c1", "get", {"city": "Hangzhou"})]
    assert msg.generate_reason.value == "TOOL_CALLS"


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
    for delta, said in cases:
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
        (block,) = reduce_ok(events).content
        assert (block.content, block.metadata["argumentsError"]) == (args, "arguments are not valid JSON")
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


def test_a_number_beyond_a_double_in_a_payloads_input_keeps_the_payload_and_the_models_text() -> None:
    """A tool input a payload carries as JSON (a Gemini call's args or partial argument, an Anthropic tool_use input,
    OpenAI-compatible arguments as an object) holding a number beyond a double's range (1e400, or an integer of
    hundreds of digits) keeps the model's text, raw with argumentsError (said: json), streamed and whole, as
    arguments sent as text do: the payload was not JSON to orjson and was skipped whole, its text and the call lost
    (a whole response raised)."""

    def check(msg: agentmsg.Msg, args: str) -> None:
        assert msg.text_content == "calling"
        (call,) = msg.blocks("tool_use")
        assert (call.name, call.input, call.content, call.metadata["argumentsError"]) == (
            "f",
            {},
            args,
            "arguments are not valid JSON",
        )

    for args in ('{"n":1e400}', '{"n":[-2E+999]}', '{"n":' + "9" * 500 + "}"):
        parts = f'[{{"text":"calling"}},{{"functionCall":{{"name":"f","args":{args}}}}}]'
        gem = f'{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}},"finishReason":"STOP"}}],"responseId":"r"}}'
        events = list(gemini.parse_stream(b"data: " + gem.encode() + b"\n\n"))
        check(reduce_ok(events), args)
        rule = "integer-range" if "9" * 500 in args else "json"  # (an integer read exactly: beyond 64 bits)
        assert [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"] == [rule]
        check(gemini.parse_response(gem.encode()), args)
        block = f'{{"type":"tool_use","id":"t1","name":"f","input":{args}}}'
        whole = f'{{"id":"m","type":"message","role":"assistant","model":"c","content":[{{"type":"text","text":"calling"}},{block}],"stop_reason":"tool_use","usage":{{"input_tokens":1,"output_tokens":1}}}}'
        check(anthropic.parse_response(whole.encode()), args)
        start = ev("message_start", message={"id": "m", "model": "c", "usage": {"input_tokens": 1}})
        body = b"".join(
            [
                start,
                ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
                ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "calling"}),
                ev("content_block_stop", index=0),
                f'event: content_block_start\ndata: {{"type":"content_block_start","index":1,"content_block":{block}}}\n\n'.encode(),
                ev("content_block_stop", index=1),
                ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}),
                ev("message_stop"),
            ]
        )
        check(reduce_ok(list(anthropic.parse_stream(body))), args)
        call = f'{{"index":0,"id":"c1","function":{{"name":"f","arguments":{args}}}}}'
        oai = f'{{"id":"x","model":"m","choices":[{{"index":0,"delta":{{"content":"calling","tool_calls":[{call}]}},"finish_reason":"tool_calls"}}]}}'
        check(reduce_ok(list(openai.parse_stream(b"data: " + oai.encode() + b"\n\ndata: [DONE]\n\n"))), args)
    # a Gemini partial argument's numberValue so
    update = '{"functionCall":{"name":"f","partialArgs":[{"jsonPath":"$.n","numberValue":1e400}],"willContinue":false}}'
    gem = f'{{"candidates":[{{"content":{{"parts":[{{"text":"calling"}},{update}]}},"finishReason":"STOP"}}],"responseId":"r"}}'
    check(reduce_ok(list(gemini.parse_stream(b"data: " + gem.encode() + b"\n\n"))), '{"n":1e400}')
    # a number so where no input goes is no count: the rest of the payload is read
    usage = b'"usageMetadata":{"promptTokenCount":1e400,"candidatesTokenCount":2}'
    body = b'data: {"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}],' + usage + b"}\n\n"
    msg = reduce_ok(list(gemini.parse_stream(body)))
    assert msg.text_content == "x" and msg.usage is not None and msg.usage.output_tokens == 2


def test_a_value_nested_deeper_than_orjson_writes_never_costs_its_payload() -> None:
    """A payload may be nested as deep as orjson reads (1,024 levels), deeper than it writes (254): a call's input so
    deep (OpenAI-compatible arguments as an object, a Gemini call's args, an Anthropic tool_use's input) is kept as it
    came (raw, argumentsError; said: max-depth), and an Anthropic field said as not kept is named by its type. The
    payload was skipped as "an unexpected payload shape": the call lost, and a message_delta's stop reason with it."""
    deep = "[" * 300 + "1" + "]" * 300
    args = '{"a":' + deep + "}"

    def check(events: list[dict[str, Any]]) -> None:
        msg = reduce_ok(events)
        assert msg.text_content == "calling"
        (call,) = msg.blocks("tool_use")
        assert (call.name, call.input, call.content) == ("f", {}, args)
        assert [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"] == ["max-depth"]

    tool_calls = '[{"index":0,"id":"c1","function":{"name":"f","arguments":' + args + "}}]"
    oai = '{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"calling","tool_calls":' + tool_calls + "}"
    oai += ',"finish_reason":"tool_calls"}]}'
    check(list(openai.parse_stream(b"data: " + oai.encode() + b"\n\ndata: [DONE]\n\n")))
    parts = '[{"text":"calling"},{"functionCall":{"name":"f","args":' + args + "}}]"
    gem = '{"candidates":[{"content":{"parts":' + parts + ',"role":"model"},"finishReason":"STOP"}],"responseId":"r"}'
    check(list(gemini.parse_stream(b"data: " + gem.encode() + b"\n\n")))
    start = ev("message_start", message={"id": "msg_1", "model": "c", "usage": {"input_tokens": 1}})
    text = [
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "calling"}),
        ev("content_block_stop", index=0),
    ]
    block = '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"f","input":'
    call = [f"event: content_block_start\ndata: {block}{args}}}}}\n\n".encode(), ev("content_block_stop", index=1)]
    end = b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":'
    end += (
        b'{"output_tokens":1},"context_management":{"applied_edits":' + deep.encode() + b"}}\n\n" + ev("message_stop")
    )
    events = list(anthropic.parse_stream(b"".join([start, *text, *call, end])))
    check(events)
    assert reduce_ok(events).to_dict()["metadata"]["agentmsg_finish_reason"] == "tool_use"
    (note,) = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
    assert "context_management: a JSON object nested too deep to show" in note


def test_arguments_the_message_could_not_hold_are_said_when_sent_back() -> None:
    """A call whose arguments are JSON the message could not hold (an integer beyond 64 bits, nesting beyond the
    limits: kept raw with argumentsError, input {}) goes back with its parsed input, {}, and every formatter says so
    (tool-arguments-invalid), as for text that is no JSON object: orjson reads such text (rounded, or deeper than a
    message goes) as an object, so it was sent as {} unsaid, the model's arguments lost."""
    from agentmsg.providers import get

    for args in (f'{{"n": {BIG}}}', '{"a":' + "[" * 300 + "]" * 300 + "}", '{"x": 1e400}'):
        body = sse(chunk({"tool_calls": [tc(0, "c1", "f", args)]}), chunk({}, finish="tool_calls"))
        msg = reduce_ok(list(openai.parse_stream(body)))
        assert msg.blocks("tool_use")[0].metadata["argumentsError"]
        for name in ("openai", "anthropic", "gemini", "dashscope"):
            request = get(name).format_request([agentmsg.UserMessage("hi"), msg], model="m")
            assert ("/1/content/0", "tool-arguments-invalid") in [(d.pointer, d.rule) for d in request.diagnostics]


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


def test_anthropic_how_the_reply_ended_beyond_its_reason_is_said() -> None:
    """The stop sequence that ended the reply, stop_details and the container are said as not kept (the
    message has no place for them), streamed and whole."""
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    end = ev(
        "message_delta",
        delta={"stop_reason": "stop_sequence", "stop_sequence": "###", "stop_details": {"type": "x"}},
        usage={"output_tokens": 1},
    )
    parser = anthropic.StreamParser()
    events = parser.feed(start + end + ev("message_stop")) + parser.close()
    reduce_ok(events)
    notes = [p.message for p in parser.builder.not_kept_notes]
    assert notes == [
        'the stop sequence that ended the reply (stop_sequence: "###") is not kept (the message has no place for it)',
        'stop_details (why the reply stopped) (stop_details: {"type":"x"}) is not kept (the message has no place'
        " for it)",
    ]
    whole = {**cited_response("msg_2"), "stop_reason": "stop_sequence", "stop_sequence": "###"}
    whole["content"] = [{"type": "text", "text": "x"}]
    events = anthropic.response_events(orjson.dumps({**whole, "container": {"id": "c1"}}))
    said = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert len(said) == 2 and said[0].startswith("the stop sequence") and said[1].startswith("the code execution")


def test_a_tool_call_id_an_earlier_call_has_is_made_unique_and_said() -> None:
    """Two calls with one id would be joined into one by the reducer (its rule: one id, one call), losing the
    second's name: the second gets the id with a suffix, and that is said (problem ``id``)."""
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    blocks = []
    for index, (name, args) in enumerate((("f", '{"x":1}'), ("g", '{"y":2}'))):
        blocks += [
            ev(
                "content_block_start",
                index=index,
                content_block={"type": "tool_use", "id": "t1", "name": name, "input": {}},
            ),
            ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": args}),
            ev("content_block_stop", index=index),
        ]
    end = ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}) + ev("message_stop")
    parser = anthropic.StreamParser()
    events = parser.feed(b"".join([start, *blocks, end])) + parser.close()
    assert calls(reduce_ok(events)) == [("t1", "f", {"x": 1}), ("t1-2", "g", {"y": 2})]
    assert [str(p) for p in parser.problems] == [
        "tool call id 't1' is an earlier call's too: this call's is 't1-2' [id]"
    ]


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
    (block,) = reduce_ok(events).content
    assert block.content == "[1, 2]" and block.metadata["argumentsError"].startswith("arguments are JSON but not")
    assert [(p.rule, p.message.split(":")[0]) for p in parser.problems] == [
        ("type", "tool call 'f''s arguments are JSON but not an object (array)")
    ]


BIG = "123456789012345678901234567890"


def test_an_integer_beyond_64_bits_in_tool_input_keeps_its_digits_streamed_and_whole() -> None:
    """A tool input holding an integer beyond 64 bits (which a message cannot hold, and which orjson reads as
    the nearest float) keeps the model's digits in the call's raw arguments text, with argumentsError and
    ``input: {}``, whole and streamed alike, for every provider that sends arguments as JSON; the reply is
    never rejected for it, and two calls whose numbers round to the same float keep their own digits."""
    args = f'{{"n":{BIG},"m":[1,{{"k":-{BIG}7}}]}}'
    other = f'{{"n":{BIG[:-1]}1}}'

    def check(msg: agentmsg.Msg) -> None:
        blocks = msg.blocks("tool_use")
        assert [(b.input, b.content, b.metadata.get("argumentsError")) for b in blocks] == [
            ({}, args, "arguments are not valid JSON"),
            ({}, other, "arguments are not valid JSON"),
        ]
        assert msg.text_content == "calling"

    parts = f'[{{"text":"calling"}},{{"functionCall":{{"name":"f","args":{args}}}}},{{"functionCall":{{"name":"g","args":{other}}}}}]'
    gem = f'{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}},"finishReason":"STOP","index":0}}],"responseId":"r","modelVersion":"g"}}'
    check(reduce_ok(list(gemini.parse_stream(b"data: " + gem.encode() + b"\n\n"))))
    check(gemini.parse_response(gem.encode()))
    blocks = f'[{{"type":"text","text":"calling"}},{{"type":"tool_use","id":"t1","name":"f","input":{args}}},{{"type":"tool_use","id":"t2","name":"g","input":{other}}}]'
    whole = f'{{"id":"msg_1","type":"message","role":"assistant","model":"c","content":{blocks},"stop_reason":"tool_use","usage":{{"input_tokens":1,"output_tokens":{BIG}}}}}'
    msg = anthropic.parse_response(whole.encode())
    check(msg)
    assert msg.usage is not None and msg.usage.output_tokens == 2**63 - 1  # a count saturates
    start = ev("message_start", message={"id": "msg_1", "model": "c", "usage": {"input_tokens": 1}})
    text = [
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "calling"}),
        ev("content_block_stop", index=0),
    ]
    calls_sse = []
    for index, (name, raw) in enumerate((("f", args), ("g", other)), start=1):
        block = f'{{"type":"tool_use","id":"t{index}","name":"{name}","input":{raw}}}'  # input whole on the start
        calls_sse += [
            f'event: content_block_start\ndata: {{"type":"content_block_start","index":{index},"content_block":{block}}}\n\n'.encode(),
            ev("content_block_stop", index=index),
        ]
    end = ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1}) + ev("message_stop")
    check(reduce_ok(list(anthropic.parse_stream(b"".join([start, *text, *calls_sse, end])))))
    # OpenAI-compatible servers that send arguments as an object
    tcs = f'[{{"index":0,"id":"c1","function":{{"name":"f","arguments":{args}}}}},{{"index":1,"id":"c2","function":{{"name":"g","arguments":{other}}}}}]'
    oai = f'{{"id":"x","model":"m","choices":[{{"index":0,"delta":{{"content":"calling","tool_calls":{tcs}}},"finish_reason":"tool_calls"}}]}}'
    check(reduce_ok(list(openai.parse_stream(b"data: " + oai.encode() + b"\n\ndata: [DONE]\n\n"))))
    # anything else the codec refuses still rejects a whole reply
    with pytest.raises(agentmsg.ValidationError) as info:
        anthropic.parse_response(whole.replace('"calling"', '"\\ud800"').encode())
    assert info.value.problems[0].rule == "lone-surrogate"


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


def test_exact_digits_for_many_calls_in_one_payload_take_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact decode of a payload is walked once for all its calls (it went on from the last call found),
    not once per call: 2,000 calls with integers beyond 64 bits in one chunk keep their digits, with a number
    of comparisons proportional to the calls (it was quadratic)."""
    import json

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


def test_dashscope_mode_told_when_the_reply_moves_on_and_parallel_continuations() -> None:
    """Not told the mode: a held reasoning value is decided by the chunk that starts the answer (a cumulative
    chunk repeats the reasoning so far; one without it is incremental), before the answer ends the thinking
    block; parallel calls continued by id-"" fragments keep each its own arguments (their fields were keyed by
    place in the chunk and shared); an error payload with "output": null (as the SDK prints it) is the
    provider's error."""
    body = sse(
        _ds(reasoning_content="**"),
        _ds(reasoning_content="**Plan"),
        _ds("Answer", reasoning_content=""),
        _ds(" here", "stop"),
        done=False,
    )
    parser = dashscope.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert [(b.type, b.thinking if b.type == "thinking" else b.text) for b in msg.content] == [
        ("thinking", "****Plan"),
        ("text", "Answer here"),
    ]
    assert parser.problems == []

    def frag(index: int, call_id: str, args: str) -> dict[str, Any]:
        fn = {"name": "get_current_weather", "arguments": args} if call_id else {"arguments": args}
        return {"index": index, "id": call_id, "type": "function", "function": fn}

    body = sse(
        _ds(tool_calls=[frag(0, "call_a", '{"location": "杭州')]),
        _ds(tool_calls=[frag(0, "", '"}')]),
        _ds(tool_calls=[frag(1, "call_b", '{"location": "北京')]),
        _ds("", "tool_calls", tool_calls=[frag(1, "", '"}')]),
        done=False,
    )
    for incremental in (None, True):
        parser = dashscope.StreamParser(incremental=incremental)
        msg = reduce_ok(parser.feed(body) + parser.close())
        assert calls(msg) == [
            ("call_a", "get_current_weather", {"location": "杭州"}),
            ("call_b", "get_current_weather", {"location": "北京"}),
        ], incremental
    for output in (None, {}):
        error = {"status_code": 400, "code": "DataInspectionFailed", "message": "bad", "output": output}
        events = list(dashscope.parse_stream(sse(_ds("Once"), error, done=False)))
        msg = reduce_ok(events)
        assert msg.text_content == "Once" and msg.generate_reason == "INTERRUPTED"
        assert msg.to_dict()["metadata"]["agentmsg_errors"][0]["type"] == "DataInspectionFailed"


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
    assert agentmsg.thinking_signature(msg.blocks("thinking")[0]) == "c2ln"
    assert parser.problems == []
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.total_tokens) == (125, 162)
    error = _gem({"text": "y"}) | {"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}}
    msg = reduce_ok(list(gemini.parse_stream(sse(_gem({"text": "x"}), error, done=False))))
    assert msg.text_content == "xy" and msg.generate_reason == "INTERRUPTED"


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
    mistral = [
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
    assert [(b.type, b.thinking if b.type == "thinking" else b.text) for b in msg.content] == [
        ("thinking", "2+2 is 4"),
        ("text", "4"),
    ]
    assert msg.usage is not None and (msg.usage.output_tokens, msg.usage.total_tokens) == (291, 303)
    assert sorted(n.message.split(" (")[0] for n in parser.builder.not_kept_notes) == [
        "citations",
        "moderation results",
    ]


def test_anthropic_request_reports_are_said_as_not_kept() -> None:
    """The beta fields that report what the API did with the request (context_management's applied edits,
    input_transformations, diagnostics' cache miss reason) were dropped unsaid, on message_start's message, on
    message_delta and on the whole response; each is said as not kept once it says something (an empty list, an
    object of nulls: nothing), as container is; fields that only name the serving (system_fingerprint) are not."""
    edits = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2}]}
    dropped = [{"type": "thinking_dropped", "message_index": 1, "block_index": 0}]
    cache = {"cache_miss_reason": {"type": "tools_changed"}}
    start = {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}, "diagnostics": cache}
    body = b"".join(
        [
            ev("message_start", message=start),
            ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
            ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1},
               context_management=edits, input_transformations=dropped),
            ev("message_stop"),
        ]
    )  # fmt: skip
    whole = {"id": "msg_1", "type": "message", "model": "claude", "content": [{"type": "text", "text": "Hi"}],
             "stop_reason": "end_turn", "context_management": edits, "input_transformations": dropped,
             "diagnostics": cache}  # fmt: skip
    for events in (list(anthropic.parse_stream(body)), anthropic.response_events(whole)):
        assert reduce_ok(events).text_content == "Hi" and said(events) == []
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
        keys = ("context_management", "input_transformations", "diagnostics")
        assert len(notes) == 3 and all(any(f"({k}: " in n for n in notes) for k in keys)
        assert any("clear_tool_uses_20250919" in n for n in notes)
    # nothing to say: not said
    quiet = {**whole, "context_management": {"applied_edits": []}, "input_transformations": [],
             "diagnostics": {"cache_miss_reason": None}}  # fmt: skip
    assert said(anthropic.response_events(quiet), "agentmsg.not-kept") == []


def test_anthropic_fallback_names_the_serving_model_and_an_mcp_tool_listing_is_said() -> None:
    """Beta block types the SDK knows: a server-side fallback block names the model that served what follows
    (the SDK relabels its snapshot so, as the whole response is): the message's model is that one, streamed
    and whole alike (the requested model was kept); an mcp_tool_listing block (the tools an MCP server listed)
    is said as not kept, not an unknown block (a problem, exit 1)."""
    fallback = {"type": "fallback", "from": {"model": "claude-opus"}, "to": {"model": "claude-sonnet"}}
    listing = {"type": "mcp_tool_listing", "mcp_server_name": "srv", "tools": [{"name": "echo"}]}
    body = b"".join(
        [
            ev("message_start", message={"id": "msg_1", "model": "claude-opus", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block=listing),
            ev("content_block_stop", index=0),
            ev("content_block_start", index=1, content_block=fallback),
            ev("content_block_stop", index=1),
            ev("content_block_start", index=2, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=2, delta={"type": "text_delta", "text": "Hi"}),
            ev("content_block_stop", index=2),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
            ev("message_stop"),
        ]
    )
    parser = anthropic.StreamParser()
    msg = reduce_ok(parser.feed(body) + parser.close())
    assert parser.problems == [] and msg.text_content == "Hi"
    assert msg.to_dict()["metadata"]["agentmsg_model"] == "claude-sonnet"
    notes = sorted(n.message.split(" (")[0] for n in parser.builder.not_kept_notes)
    assert notes == ["the notice that another model answered", "the tool listing fetched from an MCP server"]
    whole = {"id": "msg_1", "type": "message", "model": "claude-sonnet", "content": [listing, fallback]}
    assert anthropic.parse_response(whole).to_dict()["metadata"]["agentmsg_model"] == "claude-sonnet"


def test_cli_chat_ctrl_c_keeps_what_arrived_and_exits_130() -> None:
    """Ctrl-C during `agentmsg chat` (a stalled stream): what arrived stays printed, with a line that says it
    was interrupted, exit 130, and no traceback; usage errors are one line, exit 2."""
    import os
    import select
    import signal
    import subprocess
    import sys

    body = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body, sse=True, stall_after=600, stall=30.0))
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "agentmsg", "chat", "--provider", "openai", "--base-url", server.url, "hi"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # the first text printed: the server now stalls
        first = os.read(proc.stdout.fileno(), 1) if ready else b""
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        out = first + out
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and err.decode().strip().endswith("agentmsg: interrupted")
    assert out.decode().startswith("I")  # the text that arrived
    for argv in (["--choice", "abc"], ["--timeout", "-1"]):
        cmd = [sys.executable, "-m", "agentmsg", "chat", "--provider", "openai", *argv, "hi"]
        done = subprocess.run(cmd, capture_output=True, env={**os.environ, "OPENAI_API_KEY": "k"}, timeout=60)
        assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_cli_parse_another_providers_reply_is_said() -> None:
    """A reply of another provider is not read as an empty one that ended well: a whole body is not this
    provider's response (exit 2), an Anthropic stream without message_start is said (exit 1)."""
    code, _ = run_cli("parse", "--provider", "anthropic", str(FIX / "openai" / "chat_completion_text.json"))
    assert code == 2
    code, _ = run_cli("parse", "--provider", "openai", str(FIX / "anthropic" / "message_text.json"))
    assert code == 2
    code, _ = run_cli("parse", "--provider", "anthropic", "--stream", str(FIX / "openai" / "stream_finish_length.sse"))
    assert code == 1
    with pytest.raises(agentmsg.ValidationError) as info:
        gemini.parse_response(b'{"a": 1}')
    assert info.value.problems[0].rule == "shape"


def test_cli_parse_a_whole_response_saved_with_its_http_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A response saved with `curl -i` (its HTTP head before the body) is read without --stream too, whole
    or SSE, the head said as left out (exit 0)."""
    body = (FIX / "openai" / "chat_completion_text.json").read_bytes()
    path = tmp_path / "curl_i.json"
    path.write_bytes(b"HTTP/2 200\r\ncontent-type: application/json\r\n\r\n" + body)
    assert main(["parse", "--provider", "openai", str(path)]) == 0
    out, err = capsys.readouterr()
    assert agentmsg.Msg.from_json(out).text_content == openai.parse_response(body).text_content
    assert err == f"{path}: note: the body starts with an HTTP response head ('HTTP/2 200'): left out [not-kept]\n"
    sse_path = tmp_path / "curl_i.sse"
    stream = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    sse_path.write_bytes(b"HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n" + stream)
    assert main(["parse", "--provider", "openai", str(sse_path)]) == 0
    assert agentmsg.Msg.from_json(capsys.readouterr().out).text_content


# ---- probe 5: what a reply carries outside the usual shapes ---------------------------------------


def said(events: list[dict[str, Any]], name: str = "agentmsg.problem") -> list[str]:
    return [e["value"]["rule"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


def gem(*parts: Any, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "responseId": "r1", **extra}


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
    assert said(events) == ["sse"]  # said once


def test_raw_json_lines_are_read_for_every_provider_and_said_once() -> None:
    error = b'{"error": {"message": "overloaded", "type": "server_error"}}\n'
    body = sse(chunk({"content": "a"}), done=False) + error + b"\n" + error
    events = list(openai.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "a" and msg.to_dict()["metadata"]["agentmsg_errors"][0]["message"] == "overloaded"
    assert said(events) == ["sse", "order"]  # the second one comes after the error that ended the reply


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


def _nameless(provider: str, name: Any, whole: bool) -> Any:
    """A reply with one tool call (arguments {"a": 1}) whose function name is ``name`` (None: no name key)."""
    named = {} if name is None else {"name": name}
    if provider == "openai":
        call = {"index": 0, "id": "call_1", "type": "function", "function": {**named, "arguments": '{"a": 1}'}}
        if whole:
            del call["index"]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {
                "id": "c1",
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }
        return sse(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"))
    if provider == "anthropic":
        block = {"type": "tool_use", "id": "t1", **named, "input": {}}
        if whole:
            return {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [{**block, "input": {"a": 1}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        return (
            ev("message_start", message={"id": "m1", "model": "c", "role": "assistant", "content": []})
            + ev("content_block_start", index=0, content_block=block)
            + ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"a": 1}'})
            + ev("content_block_stop", index=0)
            + ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1})
            + ev("message_stop")
        )
    if provider == "gemini":
        body = gem({"functionCall": {**named, "args": {"a": 1}}}, finish="STOP")
        return body if whole else sse(body, done=False)
    call = {"index": 0, "id": "call_1", "type": "function", "function": {**named, "arguments": '{"a": 1}'}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    body = {"output": {"choices": [{"message": message, "finish_reason": "tool_calls"}]}, "request_id": "q"}
    return body if whole else b"data:" + orjson.dumps(body) + b"\n\n"


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


def test_anthropic_a_tool_calls_caller_is_said_as_not_kept() -> None:
    # programmatic tool calling: code the provider runs calls the tool (caller); it was dropped unsaid
    body = _nameless("anthropic", "f", whole=True)
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    body["content"] = [
        {**body["content"][0], "caller": caller, "toolset_name": "tools"},
        {"type": "tool_use", "id": "t2", "name": "g", "input": {}, "caller": {"type": "direct"}},
    ]
    streamed = _nameless("anthropic", "f", whole=False).replace(
        b'"name":"f"', b'"name":"f","caller":' + orjson.dumps(caller) + b',"toolset_name":"tools"'
    )
    for events in (anthropic.response_events(body), list(anthropic.parse_stream(streamed))):
        assert reduce_ok(events).blocks("tool_use")[0].name == "f"
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
        assert len(notes) == 2 and "code_execution_20250825" in notes[0] and "'tools'" in notes[1]
        assert said(events) == []


def test_openai_compatible_stop_that_ended_the_reply_is_said_as_not_kept() -> None:
    # vLLM's stop_reason (the stop string or token id) and SGLang's matched_stop were dropped unsaid; Anthropic's
    # stop_sequence is said; null (the model ended it) says nothing
    for key, value in (("stop_reason", "###"), ("matched_stop", 128009), ("stop_reason", None)):
        last = chunk({}, "stop")
        last["choices"][0][key] = value
        body = {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
        body["choices"][0] |= {"finish_reason": "stop", key: value}
        for events in (list(openai.parse_stream(sse(chunk({"content": "hi"}), last))), openai.response_events(body)):
            assert reduce_ok(events).text_content == "hi"
            notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
            assert notes == (
                [] if value is None else [f"the stop that ended the reply ({key}: {str(value)!r}) is not kept"]
            )


def test_a_bad_name_repeated_by_each_cumulative_chunk_is_said_once() -> None:
    def chunk_of(args: str, finish: str = "null") -> bytes:
        call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": 5, "arguments": args}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        body = {"output": {"choices": [{"message": message, "finish_reason": finish}]}, "request_id": "q"}
        return b"data:" + orjson.dumps(body) + b"\n\n"

    events = list(dashscope.parse_stream(chunk_of('{"a"') + chunk_of('{"a": 1') + chunk_of('{"a": 1}', "tool_calls")))
    assert calls(reduce_ok(events)) == [("call_1", "", {"a": 1})]
    assert said(events) == ["type"]


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


def test_dashscope_model_name_is_the_model_and_what_else_an_output_says_is_said_as_not_kept() -> None:
    # qwen-mt names the model in output.model_name (it was dropped: no agentmsg_model); qwen-image's task_metric,
    # Qwen-TTS's audio, a choice's logprobs and Qwen-VL OCR's ocr_result beside a part's text were dropped unsaid,
    # while search_info and tool_info were said as not kept
    message = {"role": "assistant", "content": [{"text": "INTERNATIONAL", "ocr_result": {"words_info": []}}]}
    choice = {"finish_reason": "stop", "message": message, "logprobs": {"content": [{"token": "IN", "logprob": -0.1}]}}
    output = {
        "choices": [choice],
        "model_name": "qwen-mt-plus",
        "task_metric": {"TOTAL": 1, "SUCCEEDED": 1, "FAILED": 0},
        "audio": {"url": "https://example.com/a.wav", "data": "", "id": "audio_1", "expires_at": 1},
    }
    body = {"output": output, "usage": {"input_tokens": 3, "output_tokens": 1}, "request_id": "q1"}
    streamed = list(dashscope.parse_stream(b"data:" + orjson.dumps(body) + b"\n\n"))
    for events in (dashscope.response_events(body), streamed):
        msg = reduce_ok(events)
        assert msg.text_content == "INTERNATIONAL"
        assert msg.to_dict()["metadata"]["agentmsg_model"] == "qwen-mt-plus"
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
        for key in ("(task_metric)", "(audio)", "(logprobs)", "'ocr_result'"):
            assert sum(key in n for n in notes) == 1, (key, notes)
        assert len(notes) == 4
        assert said(events) == []


NO_FINISH = {
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


def test_dashscope_search_info_and_tool_info_are_said_as_not_kept() -> None:
    first = {
        "output": {
            "choices": [
                {
                    "message": {"content": "", "reasoning_content": "Compute.", "role": "assistant"},
                    "finish_reason": "null",
                }
            ],
            "tool_info": [{"code_interpreter": {"code": "1+1"}, "type": "code_interpreter"}],
        },
        "request_id": "ci-1",
    }
    last = {
        "output": {
            "choices": [{"message": {"content": "2", "role": "assistant"}, "finish_reason": "stop"}],
            "search_info": {"search_results": [{"index": 1, "title": "Example", "url": "https://example.com/a"}]},
        },
        "request_id": "ci-1",
    }
    events = list(dashscope.parse_stream(sse(first, last, done=False), incremental=True))
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert len(notes) == 2 and "tool_info" in notes[0] and "search_info" in notes[1]
    assert said(events, "agentmsg.not-kept") == ["not-kept", "not-kept"]
    whole = dashscope.response_events(last)
    assert said(whole, "agentmsg.not-kept") == ["not-kept"] and said(whole) == []


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


def test_a_response_body_with_a_utf8_bom_is_read(tmp_path: Path) -> None:
    body = orjson.dumps(
        {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}]}
    )
    plain = openai.parse_response(body)
    for bom in (b"\xef\xbb\xbf" + body, "\ufeff" + body.decode(), bytearray(b"\xef\xbb\xbf" + body)):
        msg = openai.parse_response(bom)
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
    whole = {
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


def test_a_cumulative_text_that_restarts_on_many_chunks_is_said_once() -> None:
    # cumulative output whose text stops extending what came (a server that resets it): each such chunk's text
    # is taken as new text, and that is said once per field, not once per chunk
    def chunk_of(text: str, finish: str = "null") -> bytes:
        message = {"role": "assistant", "content": text}
        body = {"output": {"choices": [{"message": message, "finish_reason": finish}]}, "request_id": "q"}
        return b"data:" + orjson.dumps(body) + b"\n\n"

    body = chunk_of("ab") + chunk_of("abc") + chunk_of("x") + chunk_of("y") + chunk_of("z", "stop")
    events = list(dashscope.parse_stream(body, incremental=False))
    assert reduce_ok(events).text_content == "abcxyz"
    assert said(events) == ["cumulative"]


def test_anthropic_proxy_error_of_code_and_message_after_an_error_event_is_its_message() -> None:
    # event: error whose data is {"code": ..., "message": ...} (a proxy's, no Anthropic error object): the error's
    # message is the provider's text and its code is kept (the whole JSON was the message)
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    events = list(anthropic.parse_stream(start + b'event: error\ndata: {"code": 529, "message": "Overloaded"}\n\n'))
    msg = reduce_ok(events)
    (error,) = msg.to_dict()["metadata"]["agentmsg_errors"]
    assert msg.generate_reason == "INTERRUPTED"
    assert (error["message"], error["code"], error["type"]) == ("Overloaded", 529, "provider_error")


def test_openai_response_choice_index_of_a_boolean_is_no_choice_number(tmp_path: Any, capsys: Any) -> None:
    # index true was read as the int it subclasses: its events came as source "choice/True", and
    # `agentmsg parse --choice all` raised ValueError (a traceback) sorting the choices
    from agentmsg.cli import main

    body = {"id": "x", "choices": [{"index": True, "finish_reason": "stop", "message": {"content": "a"}}]}
    events = openai.response_events(body)
    assert {e.get("source") for e in events} == {None}
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(body))
    assert main(["parse", "--provider", "openai", "--choice", "all", str(path)]) == 0
    assert '"text":"a"' in capsys.readouterr().out


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


# ---- usage counts that are no counts -------------------------------------------------------------------------

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


def _no_counts(events: list[dict[str, Any]]) -> list[str]:
    """The fields said to be no token count (each problem's rule is type)."""
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert all(p["rule"] == "type" and p["message"].endswith(": not kept") for p in problems), problems
    return [p["message"].split(" is no token count (")[0] for p in problems]


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", sorted(ODD_USAGE))
def test_a_usage_count_that_is_no_count_is_said_once_per_field_and_the_rest_kept(provider: str, whole: bool) -> None:
    # a count that is not a non-negative whole number ("12", -3, 1.5, true, 1e400) was dropped unsaid, in every
    # provider's usage; a null says nothing, an integer beyond 64 bits is a count (it saturates, as documented), and
    # the detail counts the converter does not read stay unsaid
    module = agentmsg.providers.get(provider)
    usage, fields = ODD_USAGE[provider]
    body = _usage_reply(provider, [usage] if whole else [usage, usage], whole)
    events = module.response_events(body) if whole else list(module.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "hi"
    assert sorted(_no_counts(events)) == fields  # once each, though a stream sent the usage twice
    assert msg.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cached_tokens, msg.usage.total_tokens) == (
        2**63 - 1,
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


def test_dashscope_application_counts_per_model_that_are_no_counts_are_said() -> None:
    models = [{"model_id": "qwen-plus", "input_tokens": 5, "output_tokens": -1}, {"model_id": "q", "output_tokens": 2}]
    message = {"role": "assistant", "content": "hi"}
    body = {"output": {"choices": [{"message": message, "finish_reason": "stop"}]}, "usage": {"models": models}}
    events = dashscope.response_events(body)
    assert _no_counts(events) == ["usage.models[].output_tokens"]
    msg = reduce_ok(events)
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (5, 2)


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


# ---- an OpenAI reply's audio (modalities ["text", "audio"]) ----------------------------------------

_PCM = bytes(range(256)) * 3 + b"\x01\x02"  # raw pcm16 (no header): 770 bytes, not a multiple of 3
_WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(40)


def _audio_response(raw: bytes, content: str | None = None, transcript: str = "Hello there") -> dict[str, Any]:
    audio = {"id": "audio_1", "data": base64.b64encode(raw).decode(), "expires_at": 1729, "transcript": transcript}
    message = {"role": "assistant", "content": content, "audio": audio}
    return {"id": "c", "model": "gpt-audio", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


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
    assert base64.b64decode(block.source.data) == b"".join(base64.b64decode(p) for p in pieces) == _PCM


def test_openai_formatter_sends_an_audio_replys_transcript_and_says_its_audio() -> None:
    """Sent back, the transcript is the assistant's content; the audio, which an assistant turn cannot carry, is
    its label, said (media-unsupported), not dropped silently."""
    msg = reduce_ok(openai.response_events(_audio_response(_PCM)))
    req = openai.format_request([agentmsg.UserMessage("Hi"), msg, agentmsg.UserMessage("Again")])
    assistant = req.body["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"].startswith("Hello there\n")
    assert [d.rule for d in req.diagnostics] == ["media-unsupported"]


def test_cli_chat_says_the_parsers_problems_and_exits_3_for_cut_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agentmsg chat`` ignored what the parser said: a reply whose tool call arguments the provider cut at
    max_tokens (Anthropic's recorded one) exited 0 with nothing on stderr, and so did a stream with a payload
    that could not be read. Now, as ``agentmsg parse``: the problem is said on stderr after the reply, exit 3
    for cut arguments, 1 for a payload not read (its text still printed)."""
    capsys.readouterr()
    code, out = _chat(monkeypatch, "anthropic", "/v1/messages", "anthropic/stream_sdk_incomplete_partial_json.sse", "x")
    err = capsys.readouterr().err
    assert code == 3, err
    assert "[tool call] " in out and "[usage] " in out
    assert "[incomplete]" in err and err.startswith("agentmsg: ")
    body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    cut = body.replace(b"data: ", b"data: {not json\n\ndata: ", 1)  # one payload no one can read, then the rest
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=cut, sse=True))
        code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "hi")
    err = capsys.readouterr().err
    assert code == 1, err
    text = reduce_events(openai.parse_stream(body))[0].text_content
    assert text and text in out
    assert err.count("\n") == 1 and err.startswith("agentmsg: ")
