"""The dashscope payload reader (``agentmsg.providers.dashscope``'s ``Reader``, through ``parse_stream`` and
``parse_response``): DashScope native (text generation, multimodal generation, the Application API). Hand-made
bodies, odd but valid and broken: what the reader keeps, what it says (problems and notes, once), what it never
loses on a cut; work counted, never timed, where a body could make it super-linear."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import ThinkingBlock, ToolUseBlock
from agentmsg.cli import main
from agentmsg.providers import dashscope, openai
from tests._support.providers import (
    FIXTURES,
    OUTSIDE,
    _no_counts,
    all_of,
    calls,
    custom,
    dsc,
    one,
    reduce_ok,
    said,
    said_texts,
    sse,
)


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
        assert (one(ThinkingBlock, msg.content[0]).thinking, msg.text_content) == ("I think hard", "Hello world")
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
    assert said_texts(msg.content) == [
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
    assert said_texts(msg.content) == [
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
    output: dict[str, Any] | None
    for output in (None, {}):
        error = {"status_code": 400, "code": "DataInspectionFailed", "message": "bad", "output": output}
        events = list(dashscope.parse_stream(sse(_ds("Once"), error, done=False)))
        msg = reduce_ok(events)
        assert msg.text_content == "Once" and msg.generate_reason == "INTERRUPTED"
        assert msg.to_dict()["metadata"]["agentmsg_errors"][0]["type"] == "DataInspectionFailed"


def test_a_bad_name_repeated_by_each_cumulative_chunk_is_said_once() -> None:
    def chunk_of(args: str, finish: str = "null") -> bytes:
        call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": 5, "arguments": args}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        body = {"output": {"choices": [{"message": message, "finish_reason": finish}]}, "request_id": "q"}
        return b"data:" + orjson.dumps(body) + b"\n\n"

    events = list(dashscope.parse_stream(chunk_of('{"a"') + chunk_of('{"a": 1') + chunk_of('{"a": 1}', "tool_calls")))
    assert calls(reduce_ok(events)) == [("call_1", "", {"a": 1})]
    assert said(events) == ["type"]


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


def test_dashscope_search_info_is_kept_and_tool_info_said() -> None:
    """The web search's sources (output.search_info) are the message's (agentmsg_grounding), as DashScope gave them;
    the code interpreter's runs (tool_info) are said as not kept."""
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
    info = {"search_results": [{"index": 1, "title": "Example", "url": "https://example.com/a"}]}
    last = {
        "output": {
            "choices": [{"message": {"content": "2", "role": "assistant"}, "finish_reason": "stop"}],
            "search_info": info,
        },
        "request_id": "ci-1",
    }
    events = list(dashscope.parse_stream(sse(first, last, done=False), incremental=True))
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert len(notes) == 1 and "tool_info" in notes[0]
    grounding = {"provider": "dashscope", "search_info": info}
    assert reduce_ok(events).metadata["agentmsg_grounding"] == grounding
    whole = dashscope.response_events(last)
    assert said(whole, "agentmsg.not-kept") == [] and said(whole) == []
    assert reduce_ok(whole).metadata["agentmsg_grounding"] == grounding


def test_dashscope_search_info_of_the_first_chunk_is_kept_streamed() -> None:
    """DashScope sends the search sources in a stream's first chunk (enable_source with incremental output; the
    shape its docs show) and, on every later chunk, search_info with empty lists: those say nothing, and the sources
    are kept; the same reply whole gives the same message."""
    doc = orjson.loads((FIXTURES / "dashscope" / "native_response_search_info_docs.json").read_bytes())
    info = doc["output"]["search_info"]
    text = doc["output"]["choices"][0]["message"]["content"]

    def chunk_of(content: str, finish: str, search: Any) -> dict[str, Any]:
        message = {"content": content, "role": "assistant"}
        output = {"choices": [{"message": message, "finish_reason": finish}], "search_info": search}
        return {"output": output, "usage": doc["usage"], "request_id": doc["request_id"]}

    empty: dict[str, list[Any]] = {"extra_tool_info": [], "search_results": []}
    chunks = [chunk_of("", "null", info), chunk_of(text[:10], "null", empty), chunk_of(text[10:], "null", empty)]
    chunks.append(chunk_of("", "stop", empty))
    events = list(dashscope.parse_stream(sse(*chunks, done=False), incremental=True))
    streamed = reduce_ok(events)
    assert said(events, "agentmsg.not-kept") == [] and said(events) == []
    whole = dashscope.parse_response(doc)
    assert streamed.metadata["agentmsg_grounding"] == whole.metadata["agentmsg_grounding"]
    assert whole.metadata["agentmsg_grounding"] == {"provider": "dashscope", "search_info": info}
    assert streamed.text_content == whole.text_content == text


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


def test_dashscope_application_counts_per_model_that_are_no_counts_are_said() -> None:
    models = [{"model_id": "qwen-plus", "input_tokens": 5, "output_tokens": -1}, {"model_id": "q", "output_tokens": 2}]
    message = {"role": "assistant", "content": "hi"}
    body = {"output": {"choices": [{"message": message, "finish_reason": "stop"}]}, "usage": {"models": models}}
    events = dashscope.response_events(body)
    assert _no_counts(events) == ["usage.models[].output_tokens"]
    msg = reduce_ok(events)
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (5, 2)


def test_dashscope_text_held_to_tell_the_mode_comes_before_the_error() -> None:
    """DashScope output whose mode is not known yet ("**" then "**Plan" may be either): the held text is
    emitted (as the API's default, cumulative) before the error event, not after it."""
    body = dsc("**") + dsc("**Plan") + b'event:error\ndata:{"code":"X","message":"boom"}\n\n'
    events = list(dashscope.parse_stream(body))
    msg = reduce_ok(events)
    assert msg.text_content == "**Plan"
    last_delta = max(k for k, e in enumerate(events) if e["type"] == "TEXT_BLOCK_DELTA")
    error_at = next(k for k, e in enumerate(events) if e.get("name") == "agentmsg.error")
    assert last_delta < error_at


def test_dashscope_cached_tokens_are_read_where_the_docs_put_them() -> None:
    """DashScope's docs (context cache; the qwen-vl example) and its SDKs' usage classes put the cache hits at
    usage.prompt_tokens_details.cached_tokens, in the native text and multimodal APIs (beside
    input_tokens_details: text_tokens, image_tokens, ...) and in compatible mode: read as cachedTokens."""
    usage = {
        "input_tokens": 1112,
        "output_tokens": 91,
        "total_tokens": 1203,
        "input_tokens_details": {"text_tokens": 21, "image_tokens": 1091},
        "prompt_tokens_details": {"cached_tokens": 512},
    }
    out = {"choices": [{"message": {"role": "assistant", "content": [{"text": "Hi"}]}, "finish_reason": "stop"}]}
    whole = {"output": out, "usage": usage, "request_id": "r1"}
    expected = {"inputTokens": 1112, "outputTokens": 91, "cachedTokens": 512, "totalTokens": 1203}
    assert dashscope.parse_response(whole).to_dict()["usage"] == expected
    streamed = reduce_ok(list(dashscope.parse_stream(b"data:" + orjson.dumps(whole) + b"\n\n")))
    assert streamed.to_dict()["usage"] == expected
    compat = {
        "id": "chatcmpl-1",
        "model": "qwen-plus",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 3019,
            "completion_tokens": 104,
            "total_tokens": 3123,
            "prompt_tokens_details": {"cached_tokens": 2048},
        },
    }
    msg = openai.parse_response(compat, variant="dashscope-compatible")
    assert msg.to_dict()["usage"]["cachedTokens"] == 2048


def test_dashscope_application_reasoning_and_usage_per_model() -> None:
    # output.thoughts (a deepseek-r1 app's reasoning) and usage.models[] were dropped silently (no thinking, usage null)
    events = dashscope.response_events((OUTSIDE / "dashscope/application_thoughts.json").read_bytes())
    # the retrieval's thoughts, and the session id (said since the SDK's ApplicationOutput showed it went unsaid)
    assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept", "not-kept"]
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
        assert said_texts(reduce_ok(events).content) == [
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
        blocks = said_texts(reduce_ok(events).content)
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
    assert [(b.type, b.thinking) for b in all_of(ThinkingBlock, dashscope.parse_response(only).content)] == [
        ("thinking", "hm")
    ]


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
        assert one(ThinkingBlock, reduce_ok(events).content[0]).thinking == "hm"
    events = dashscope.response_events(reply("the app's", "the model's"))
    assert said(events) == [] and said(events, "agentmsg.not-kept") == ["not-kept"]
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
    assert "output.thoughts" in notes[0] and "reasoning_content" in notes[0]
    assert one(ThinkingBlock, reduce_ok(events).content[0]).thinking == "the model's"
    # a reasoning_content that is no text is said (it was dropped silently); the thoughts' reasoning is kept then
    events = dashscope.response_events(reply("hm", 7))
    assert said(events) == ["type"] and one(ThinkingBlock, reduce_ok(events).content[0]).thinking == "hm"


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
    for silent in ({}, {"message": None}, {"message": ""}):  # (no message: said so, not read as the word "None")
        task = {"task_id": "t", "task_status": "FAILED", "code": "Bad", **silent}
        errors = [e["value"] for e in dashscope.response_events({"output": task}) if e.get("name") == "agentmsg.error"]
        assert [e["message"] for e in errors] == ["the task failed without a message"]
    results = {"results": [{"url": "https://example.com/a.png"}], "task_metrics": {"TOTAL": 1, "SUCCEEDED": 1}}
    outputs: list[dict[str, Any]] = [
        {"task_status": "SUCCEEDED", **results},
        {"task_status": "UNKNOWN"},
        {"task_status": "FAILED"},
    ]
    for output in outputs:
        with pytest.raises(agentmsg.ValidationError) as exc:
            dashscope.response_events({"request_id": "q", "output": {"task_id": "t", **output}})
        assert exc.value.problems[0].rule == "shape" and output["task_status"] in exc.value.problems[0].message
    # task_metrics (the tasks' key) beside a reply's choices is said as not kept, as task_metric is
    body = {"output": {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], **results}}
    notes = [e["value"]["message"] for e in dashscope.response_events(body) if e.get("name") == "agentmsg.not-kept"]
    assert any("(task_metrics)" in n for n in notes)


def test_dashscope_a_compatible_mode_stream_is_said_not_read_as_an_empty_reply() -> None:
    """Chunks of DashScope's OpenAI-compatible mode (openai's ChatCompletionChunk: choices, and ``usage: null`` on
    each) given to the native reader: each was read as a native payload of no output for its ``usage`` key, the
    choices (a tool call here) dropped unsaid, an empty message with its usage and no word. Now they are foreign
    payloads, said (the body is not a dashscope stream?), as a whole compatible-mode response is refused."""
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        obj = ChatCompletionChunk.model_validate(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "qwen3-max",
                "choices": [choice] if delta or finish else [],
                "usage": usage,
            }
        )
        return b"data: " + orjson.dumps(obj.model_dump(mode="json")) + b"\n\n"

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"a": 1}'}}
    body = (
        chunk({"role": "assistant", "content": None, "tool_calls": [call]})
        + chunk({}, "tool_calls")
        + chunk({}, usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
        + b"data: [DONE]\n\n"
    )
    events = list(dashscope.parse_stream(body))
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert len(problems) == 1 and problems[0]["foreign"] is True
    assert "3 payload(s)" in problems[0]["message"] and "dashscope-compatible" in problems[0]["message"]
    # the compatible-mode provider reads the same body
    compat = reduce_ok(list(agentmsg.providers.get("dashscope-compatible").parse_stream(body)))
    assert [(b.type, b.name) for b in all_of(ToolUseBlock, compat.content)] == [("tool_use", "weather")]


def test_dashscope_an_applications_session_id_and_workflow_messages_are_said() -> None:
    """The Application API's output (dashscope's ApplicationOutput): its ``session_id`` (the session the next call
    continues) and a workflow app's ``workflow_message`` (what a node of the flow said) were dropped unsaid, whole
    and streamed; now said as not kept, the session id with its value, once per reply."""
    pytest.importorskip("dashscope")
    from dashscope.app.application_response import (
        ApplicationModelUsage,
        ApplicationOutput,
        ApplicationUsage,
        WorkflowMessage,
    )

    node = WorkflowMessage(
        node_id="LLM_1",
        node_name="LLM",
        node_type="LLM",
        node_status="executing",
        node_is_completed="false",
        node_msg_seq_id=1,
        message=WorkflowMessage.Message(role="assistant", content="Hel"),
    )
    usage = ApplicationUsage(models=[ApplicationModelUsage(model_id="qwen-plus", input_tokens=3, output_tokens=2)])

    def reply(text: str, finish: str | None) -> dict[str, Any]:
        output = ApplicationOutput(text=text, finish_reason=finish, session_id="sess-7", workflow_message=node)
        return {"request_id": "req-1", "output": output, "usage": usage}

    whole = dashscope.response_events(orjson.dumps(reply("Hello", "stop")))
    streamed = list(dashscope.parse_stream(sse(reply("Hel", "null"), reply("lo", "stop"))))
    for events in (whole, streamed):
        assert reduce_ok(events).text_content == "Hello"
        notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
        assert len(notes) == 2
        assert any("'sess-7'" in n for n in notes) and any("(workflow_message)" in n for n in notes)


def _native_sse(payloads: list[dict[str, Any]]) -> bytes:
    """Payloads in the native stream's framing, as recorded (native_stream_text_docs.sse): id, event, status, data."""
    return b"".join(
        b"id:%d\nevent:result\n:HTTP_STATUS/200\ndata:" % (k + 1) + orjson.dumps(p) + b"\n\n"
        for k, p in enumerate(payloads)
    )


def test_a_cumulative_text_that_starts_afresh_after_a_tool_call_is_new_text_told_or_not() -> None:
    """Cumulative output (incremental_output false) repeats the text so far in each chunk, the calls' chunk too; after
    the calls the model's text can start afresh (AgentScope Java #1211 saw the cumulative text reset at a tool call).
    The restarted value is new text, said once (``cumulative``), whether the parser was told the mode or finds it
    out: a stream whose text had one value before the calls was read as incremental, the text doubled
    ("Let me checkLet me checkIt isIt is sunny")."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    base = {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}
    body = _native_sse(
        [
            _ds("Let me check") | {"usage": base},
            _ds("Let me check", tool_calls=[call]) | {"usage": base},
            _ds("It is") | {"usage": base},
            _ds("It is sunny.", "stop") | {"usage": base},
        ]
    )
    for incremental in (False, None):
        events = list(dashscope.parse_stream(body, incremental=incremental))
        msg = reduce_ok(events)
        assert msg.text_content == "Let me checkIt is sunny.", incremental
        assert calls(msg) == [("call_1", "get_weather", {})]
        assert said(events) == ["cumulative"]
    # the same text streamed incrementally (each chunk new text) is still read so when not told
    inc = _native_sse([_ds("Let me check"), _ds("", tool_calls=[call]), _ds("It is"), _ds(" sunny.", "stop")])
    assert reduce_ok(list(dashscope.parse_stream(inc))).text_content == "Let me checkIt is sunny."


def test_dashscope_a_message_beside_a_replys_output_is_said() -> None:
    """A reply with its output and a non-empty top-level message (and code): DashScope's word on a reply that came
    (its SDK prints both empty on success) was dropped unsaid, whole and streamed; it is said, with its value, once
    per reply, and the reply is kept. Empty ones say nothing."""
    warning = "Input data may contain inappropriate content."
    usage = {"input_tokens": 3, "output_tokens": 2}
    for extra, shown in (
        ({"code": "", "message": warning}, f'(message: "{warning}")'),
        ({"code": "DataInspectionFailed", "message": warning}, f'(code: "DataInspectionFailed", message: "{warning}")'),
    ):
        body = {**_ds("Hello", "stop"), "usage": usage, **extra}
        # streamed: incremental chunks read on the quick path, then the one that carries the message
        chunks = [_ds("He"), _ds("ll"), {**_ds("o", "stop"), "usage": usage, **extra}]
        stream = b"".join(b"data:" + orjson.dumps(c) + b"\n\n" for c in chunks)
        for events in (dashscope.response_events(body), list(dashscope.parse_stream(stream, incremental=True))):
            assert reduce_ok(events).text_content == "Hello"
            notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
            assert notes == [
                f"what DashScope says beside the reply's output {shown} is not kept (the message has no place for it)"
            ]
            assert said(events) == []
    quiet = dashscope.response_events({**_ds("Hello", "stop"), "code": "", "message": ""})
    assert [e for e in quiet if e["type"] == "CUSTOM"] == []
