"""The openai-responses reader on constructed events (shapes of the SDK's event types, no recording has them): what
it says of events and items the message has no place for, a cut reasoning item, an incomplete response, a refusal,
annotations, items interleaved, and events that name their item by item_id only."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from agentmsg import AssistantMessage, Msg, TextBlock, ThinkingBlock, ToolUseBlock, UserMessage, reduce_events
from agentmsg.providers import get
from tests._support.providers import all_of, reduce_ok, rules
from tests.oracles import formatted

P = get("openai-responses")
RESP: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "model": "gpt-5",
    "status": "in_progress",
    "output": [],
    "usage": None,
}


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


def _created() -> dict[str, Any]:
    return {"type": "response.created", "response": RESP}


def _done(status: str = "completed", **extra: Any) -> dict[str, Any]:
    usage = {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    return {"type": f"response.{status}", "response": {**RESP, "status": status, "usage": usage, **extra}}


def _said(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"]


def test_hosted_tool_events_and_items_are_said_not_dropped() -> None:
    item = {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}
    events = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
                {"type": "response.output_item.done", "output_index": 0, "item": {**item, "status": "completed"}},
                _done(),
            )
        )
    )
    said = _said(events)
    assert [name for name, _ in said] == ["agentmsg.not-kept", "agentmsg.not-kept"]
    assert "web_search_call output items" in said[0][1] and "response.web_search_call.searching" in said[1][1]
    reduce_ok(events)


def test_payloads_of_no_event_type_are_said_once() -> None:
    events = list(P.parse_stream(_sse(_created(), _done()) + b'data: {"x": 1}\n\n'))
    assert [m.split(":")[0] for _, m in _said(events)] == ["a payload after the end of the reply"]
    foreign = list(P.parse_stream(b'data: {"x": 1}\n\ndata: {"y": 2}\n\n'))
    assert any("no Responses event shape" in m for _, m in _said(foreign))


def test_a_reasoning_item_cut_before_it_is_done_keeps_its_id() -> None:
    item = {"type": "reasoning", "id": "rs_cut", "summary": [], "encrypted_content": "partial"}
    events = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Hm"},
            )
        )
    )
    (msg,) = reduce_events(events)
    (thinking,) = msg.blocks("thinking")
    assert thinking.metadata is not None
    assert thinking.thinking == "Hm" and thinking.metadata["itemId"] == "rs_cut"
    assert "signature" not in thinking.metadata  # (the added item's encrypted content may be incomplete: not kept)
    assert msg.to_dict()["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_an_incomplete_response_gives_its_reason() -> None:
    events = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "delta": "Once"},
                _done("incomplete", incomplete_details={"reason": "max_output_tokens"}),
            )
        )
    )
    msg = reduce_ok(events)
    assert msg.metadata["agentmsg_finish_reason"] == "max_output_tokens" and msg.text_content == "Once"
    assert msg.usage is not None and msg.usage.total_tokens == 8


def test_a_refusal_and_annotations() -> None:
    cite = {"type": "url_citation", "url": "https://a.example", "title": "A", "start_index": 0, "end_index": 2}
    msg_item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    events = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": msg_item},
                {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hi"},
                {
                    "type": "response.output_text.annotation.added",
                    "output_index": 0,
                    "content_index": 0,
                    "annotation_index": 0,
                    "annotation": cite,
                },
                {"type": "response.refusal.delta", "output_index": 0, "content_index": 1, "delta": "No."},
                _done(),
            )
        )
    )
    msg = reduce_ok(events)
    assert [b.text for b in msg.blocks("text")] == ["Hi", "No."]
    assert msg.metadata["agentmsg_refusal"] is True
    assert msg.metadata["agentmsg_grounding"]["annotations"] == [cite]


def test_a_whole_failed_response_and_an_error_envelope() -> None:
    failed = {**RESP, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    msg = P.parse_response(failed)
    assert msg.to_dict()["metadata"]["agentmsg_errors"][0]["message"] == "boom"
    envelope = {
        "error": {"message": "bad key", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}
    }
    err = P.parse_response(envelope).to_dict()["metadata"]["agentmsg_errors"][0]
    assert (err["type"], err["code"]) == ("invalid_request_error", "invalid_api_key")


ENVELOPE = {"error": {"message": "quota", "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}


@pytest.mark.parametrize(
    "body",
    [orjson.dumps(ENVELOPE), b"data: " + orjson.dumps(ENVELOPE) + b"\n\n"],
    ids=["json", "sse data line"],
)
def test_an_error_envelope_where_a_stream_was_asked_for_is_the_error(body: bytes) -> None:
    """The HTTP error envelope (``{"error": {...}}``, no ``type``) where a stream was asked for (a proxy's, with a
    200) was no Responses event: the stream ended 'before the provider finished the reply', the provider's error
    unread, where parse_response reads it (and Chat Completions' stream parser does). Now it is the reply's error,
    as parse_response says it."""
    whole = P.parse_response(ENVELOPE).to_dict()["metadata"]["agentmsg_errors"]
    events = list(P.parse_stream(body))
    (msg,) = reduce_events(events)
    assert msg.generate_reason == "INTERRUPTED"
    assert msg.to_dict()["metadata"]["agentmsg_errors"] == whole
    assert whole[0]["message"] == "quota" and whole[0]["type"] == "insufficient_quota"


@pytest.mark.parametrize(
    "envelope",
    [{"error": "Unauthorized"}, {"error": ["quota", 2]}, {"type": None, "error": {"message": "quota", "code": "c"}}],
    ids=["string", "list", "type null"],
)
def test_an_error_envelope_of_any_shape_in_a_stream_is_said_as_parse_response_says_it(
    envelope: dict[str, Any],
) -> None:
    """An envelope whose ``error`` is no object (a proxy's ``{"error": "Unauthorized"}``) was said by the stream
    reader as Python's repr of the whole envelope (``{'error': 'Unauthorized'}``), and one with ``"type": null``
    as a stream that ended early, where parse_response says the error itself: the stream now says what it says."""
    whole = P.parse_response(envelope).to_dict()["metadata"]["agentmsg_errors"]
    (msg,) = reduce_events(list(P.parse_stream(orjson.dumps(envelope))))
    assert msg.to_dict()["metadata"]["agentmsg_errors"] == whole
    assert "{'" not in whole[0]["message"] and whole[0]["type"] == "provider_error"


def test_a_failed_responses_misalignment_review_is_said() -> None:
    # ResponseError.misalignment (a misalignment_policy_violation's public explanation, its classification and the
    # target that continues the review) was dropped unsaid: the error event holds the code and message alone
    misalignment = {
        "detailed_explanation": "the call would send data elsewhere",
        "error_type": "potentially_unintended_data_transfer",
        "review_target": "rt_1",
    }
    error = {"code": "misalignment_policy_violation", "message": "blocked", "misalignment": misalignment}
    failed = {**RESP, "status": "failed", "error": error}
    stream = _sse(_created(), {"type": "response.failed", "response": failed})
    for events in (P.response_events(failed), list(P.parse_stream(stream))):
        (msg,) = reduce_events(events)
        err = msg.to_dict()["metadata"]["agentmsg_errors"][0]
        assert (err["code"], err["message"]) == ("misalignment_policy_violation", "blocked")
        notes = [e["value"]["message"] for e in events if e.get("name") == "agentmsg.not-kept"]
        assert len(notes) == 1 and "rt_1" in notes[0] and "the call would send data elsewhere" in notes[0]
    # an error without one says nothing more
    plain = {**RESP, "status": "failed", "error": {"code": "server_error", "message": "boom", "misalignment": None}}
    assert not [e for e in P.response_events(plain) if e.get("name") == "agentmsg.not-kept"]


def test_a_function_call_given_only_in_its_done_item() -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "f", "arguments": '{"a":1}'}
    events = list(
        P.parse_stream(
            _sse(_created(), {"type": "response.output_item.done", "output_index": 0, "item": call}, _done())
        )
    )
    msg = reduce_ok(events)
    assert [(b.id, b.name, b.input) for b in msg.blocks("tool_use")] == [("call_9", "f", {"a": 1})]
    assert msg.to_dict()["metadata"]["agentscope_generate_reason"] == "TOOL_CALLS"


def test_a_failed_stream_keeps_the_open_reasoning_items_id() -> None:
    item = {"type": "reasoning", "id": "rs_f", "summary": []}
    failed = {**RESP, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    events = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Hm"},
                {"type": "response.failed", "response": failed},
            )
        )
    )
    (msg,) = reduce_events(events)
    (thinking,) = msg.blocks("thinking")
    assert thinking.metadata is not None and thinking.metadata["itemId"] == "rs_f"
    assert msg.to_dict()["metadata"]["agentmsg_errors"][0]["message"] == "boom"


def test_a_reasoning_item_whose_summary_parts_are_empty_keeps_its_id() -> None:
    """A streamed reasoning item with summary parts of no text (and no encrypted content) was lost whole: the empty
    deltas opened no block but counted as one, so no empty carrier kept its id, as one is kept for an item of no
    summary part, and as the whole response keeps it (found by test_synthetic.py against openai's accumulator). Each
    empty part is a block of its own now, marked summaryText (test_empty_reasoning_parts_come_back_as_they_came)."""
    from tests.providers.openai_responses.test_synthetic import payloads

    P = get("openai-responses")
    for summary in ([], [[""]], [["", ""], [""]]):
        stream = payloads([{"kind": "reasoning", "id": "rs_0", "summary": summary}])
        body = b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in stream)
        (msg,) = reduce_events(list(P.parse_stream(body)))
        expected: list[tuple[str, str, str, bool | None]] = [("thinking", "", "rs_0", True)] * len(summary) or [
            ("thinking", "", "rs_0", None)
        ]
        seen = [
            (b.type, b.thinking, (b.metadata or {}).get("itemId"), (b.metadata or {}).get("summaryText"))
            for b in all_of(ThinkingBlock, msg.content)
        ]
        assert seen == expected, summary
        whole = P.parse_response(stream[-1]["response"])
        assert whole.to_dict()["content"] == msg.to_dict()["content"]


# ---- fields the official SDK's models name that the reader dropped unsaid (its types are the oracle) -----------


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True, warnings=False)
    return dumped


def _whole(*output: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**RESP, "status": "completed", "output": list(output), **extra}


def test_a_function_calls_namespace_and_program_caller_are_said_as_not_kept() -> None:
    # a function_call of a namespace tool, called by a program item's code: the tool_use block names the function
    # alone and has no place for its caller; both were dropped unsaid (whole and streamed)
    pytest.importorskip("openai")
    from openai.types.responses.response_function_tool_call import CallerProgram, ResponseFunctionToolCall

    call = _dump(
        ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",
            call_id="call_1",
            name="lookup",
            arguments='{"q": 1}',
            namespace="crm",
            caller=CallerProgram(type="program", caller_id="prog_1"),
            status="completed",
        )
    )
    whole = P.response_events(orjson.dumps(_whole(call)))
    streamed = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": {**call, "arguments": ""}},
                {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"q": 1}'},
                {"type": "response.output_item.done", "output_index": 0, "item": call},
                _done(),
            )
        )
    )
    for events in (whole, streamed):
        msg = reduce_ok(events)
        assert [(b.type, b.name, b.input) for b in all_of(ToolUseBlock, msg.content)] == [
            ("tool_use", "lookup", {"q": 1})
        ]
        said = " ".join(m for _, m in _said(events))
        assert 'namespace ("crm")' in said
        assert '"caller_id":"prog_1"' in said
    # a direct caller and no namespace: nothing to say
    plain = {**call, "caller": {"type": "direct"}}
    del plain["namespace"]
    assert _said(P.response_events(orjson.dumps(_whole(plain)))) == []


def test_a_responses_moderation_withheld_inputs_and_cache_diagnostics_are_said() -> None:
    # moderation results, the reasoning inputs the API withheld, the prompt cache diagnostics: news of this call
    # (Chat Completions' moderation and Anthropic's input_transformations are said so); dropped unsaid before
    pytest.importorskip("openai")
    from openai.types.responses.response import (
        InputTransformation,
        PromptCacheDiagnosticsCacheMiss,
    )

    withheld = _dump(InputTransformation(id="rs_old", action="removed", reason="model_mismatch", type="reasoning"))
    miss = _dump(PromptCacheDiagnosticsCacheMiss(type="cache_miss", reason="tools_changed", cache_missed_tokens=812))
    moderation = {"input": {"type": "moderation_results", "model": "omni-moderation", "results": []}}
    text = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}]}  # fmt: skip
    extra: dict[str, Any] = {
        "input_transformations": [withheld],
        "prompt_cache_diagnostics": miss,
        "moderation": moderation,
    }
    events = P.response_events(orjson.dumps(_whole(text, **extra)))
    assert reduce_ok(events).text_content == "hi"
    said = " ".join(m for _, m in _said(events))
    assert '"rs_old"' in said and '"tools_changed"' in said and '"omni-moderation"' in said
    streamed = list(P.parse_stream(_sse(_created(), _done(**extra))))
    assert len(_said(streamed)) == 3
    # empty ones say nothing
    quiet: dict[str, Any] = {
        "input_transformations": [],
        "prompt_cache_diagnostics": None,
        "moderation": {"input": None},
    }
    assert _said(P.response_events(orjson.dumps(_whole(text, **quiet)))) == []


def test_a_text_deltas_logprobs_are_said_when_no_done_item_follows() -> None:
    # a stream cut after its text deltas: the logprobs they carried were dropped unsaid (only the done item's were)
    pytest.importorskip("openai")
    from openai.types.responses import ResponseTextDeltaEvent
    from openai.types.responses.response_text_delta_event import Logprob

    delta = _dump(
        ResponseTextDeltaEvent(
            type="response.output_text.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta="hi",
            logprobs=[Logprob(token="hi", logprob=-0.25)],
            sequence_number=3,
        )
    )
    added = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    events = list(
        P.parse_stream(
            _sse(_created(), {"type": "response.output_item.added", "output_index": 0, "item": added}, delta)
        )
    )
    assert [m for _, m in _said(events) if "logprobs" in m]


def test_texts_given_only_by_their_done_events_are_kept() -> None:
    # a stream (a proxy's) that gives each part's text, refusal, reasoning and a call's arguments only in its .done
    # event (the SDK's ResponseTextDoneEvent, ...), with no delta and no output in response.completed: it ended as
    # an empty message, nothing said. Each .done is read as one delta when no delta came
    pytest.importorskip("openai")
    from openai.types.responses import (
        ResponseFunctionCallArgumentsDoneEvent,
        ResponseReasoningSummaryTextDoneEvent,
        ResponseRefusalDoneEvent,
        ResponseTextDoneEvent,
    )

    def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
        return {"type": "response.output_item.added", "output_index": index, "item": item, "sequence_number": 1}

    msg_item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    events = [
        _created(),
        added(0, {"type": "reasoning", "id": "rs_1", "summary": []}),
        _dump(
            ResponseReasoningSummaryTextDoneEvent(
                type="response.reasoning_summary_text.done",
                item_id="rs_1",
                output_index=0,
                summary_index=0,
                text="thought",
                sequence_number=2,
            )
        ),
        added(1, msg_item),
        _dump(
            ResponseTextDoneEvent(
                type="response.output_text.done",
                item_id="msg_1",
                output_index=1,
                content_index=0,
                text="answer",
                logprobs=[],
                sequence_number=2,
            )
        ),
        _dump(
            ResponseRefusalDoneEvent(
                type="response.refusal.done",
                item_id="msg_1",
                output_index=1,
                content_index=1,
                refusal="no",
                sequence_number=2,
            )
        ),
        added(2, call),
        _dump(
            ResponseFunctionCallArgumentsDoneEvent(
                type="response.function_call_arguments.done",
                item_id="fc_1",
                output_index=2,
                arguments='{"x": 1}',
                sequence_number=2,
            )
        ),
        _done(),
    ]
    msg = reduce_ok(list(P.parse_stream(_sse(*events))))
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in msg.content[:3]] == [
        ("thinking", "thought"),
        ("text", "answer"),
        ("text", "no"),
    ]
    assert [(b.type, b.input) for b in all_of(ToolUseBlock, msg.content[3:])] == [("tool_use", {"x": 1})]
    # with their deltas and done items (the API's own streams) each is read once
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "answer"}
    text_done = {**events[4], "output_index": 0}
    done_item = {**msg_item, "status": "completed", "content": [{"type": "output_text", "text": "answer"}]}
    item_done = {"type": "response.output_item.done", "output_index": 0, "item": done_item}
    for body in (
        [_created(), added(0, msg_item), delta, text_done, item_done, _done()],
        [_created(), added(0, msg_item), item_done, text_done, _done()],
    ):
        assert reduce_ok(list(P.parse_stream(_sse(*body)))).text_content == "answer"


def test_a_message_part_of_a_type_the_sdk_does_not_list_is_said() -> None:
    # the SDK's ResponseOutputMessage content is output_text or refusal; a part of another type (a proxy's, a newer
    # API's) was dropped unsaid, whole and after streamed text; now said as not kept, once per type
    pytest.importorskip("openai")
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    message = _dump(
        ResponseOutputMessage(
            type="message",
            id="msg_1",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="hi", annotations=[])],
        )
    )
    message["content"].append({"type": "output_audio", "data": "UklGRg==", "transcript": "hi"})
    whole = P.response_events(orjson.dumps(_whole(message)))
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "hi"}
    done = {"type": "response.output_item.done", "output_index": 0, "item": message}
    added = {**message, "status": "in_progress", "content": []}
    streamed = list(
        P.parse_stream(
            _sse(
                _created(),
                {"type": "response.output_item.added", "output_index": 0, "item": added},
                delta,
                done,
                _done(),
            )
        )
    )
    for events in (whole, streamed):
        assert reduce_ok(events).text_content == "hi"
        assert [m for _, m in _said(events)] == [
            "output_audio parts of a message are not kept (the message has no place for them)"
        ]


def test_a_calls_arguments_given_in_its_added_item_are_read_once() -> None:
    # a function_call whose output_item.added already holds its arguments (a proxy's; openai's accumulator starts the
    # call's arguments from the added item and appends the deltas), with no delta: its done item (and a
    # function_call_arguments.done) gave them again, read as '{"a":1}{"a":1}', not JSON, and the input was emptied
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}
    added = {"type": "response.output_item.added", "output_index": 0, "item": {**call, "status": "in_progress"}}
    args_done = {"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_1"}
    item_done = {"type": "response.output_item.done", "output_index": 0, "item": {**call, "status": "completed"}}
    whole = P.parse_response(_whole(call))
    assert [(b.content, b.input) for b in whole.blocks("tool_use")] == [('{"a":1}', {"a": 1})]
    for body in (
        [_created(), added, item_done, _done()],
        [_created(), added, {**args_done, "arguments": '{"a":1}'}, item_done, _done()],
    ):
        msg = reduce_ok(list(P.parse_stream(_sse(*body))))
        assert [(b.content, b.input) for b in msg.blocks("tool_use")] == [('{"a":1}', {"a": 1})]
    # the added item's arguments begun, the deltas the rest: read as openai's accumulator reads them
    delta = {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": ":1}"}
    begun = {**added, "item": {**call, "arguments": '{"a"'}}
    msg = reduce_ok(list(P.parse_stream(_sse(_created(), begun, delta, item_done, _done()))))
    assert [b.input for b in msg.blocks("tool_use")] == [{"a": 1}]


def test_annotations_given_only_in_the_done_item_of_a_streamed_text_are_kept() -> None:
    # a stream (a proxy's) whose text came by deltas and whose annotations came only in the message's done item, with
    # no response.output_text.annotation.added: they were dropped unsaid (the done item of a streamed message was not
    # read for them), where the whole response and openai's accumulator (its completed items) keep them. With their
    # events too (the API's own streams, as pydantic-ai's web search recording has) they are kept once
    cite = {"type": "url_citation", "url": "https://x.test", "title": "t", "start_index": 0, "end_index": 2}
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hi", "annotations": [cite], "logprobs": []}],
    }
    added = {"type": "response.output_item.added", "output_index": 0, "item": {**message, "content": []}}
    delta = {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_1"}
    event = {"type": "response.output_text.annotation.added", "output_index": 0, "content_index": 0}
    done = {"type": "response.output_item.done", "output_index": 0, "item": message}
    whole = P.parse_response(_whole(message))
    assert whole.metadata["agentmsg_grounding"]["annotations"] == [cite]
    for body in (
        [_created(), added, {**delta, "delta": "Hi"}, done, _done()],
        [_created(), added, {**delta, "delta": "Hi"}, {**event, "item_id": "msg_1", "annotation": cite}, done, _done()],
    ):
        msg = reduce_ok(list(P.parse_stream(_sse(*body))))
        assert msg.text_content == "Hi"
        assert msg.metadata["agentmsg_grounding"]["annotations"] == [cite]


def test_a_refusal_messages_phase_and_id_are_kept() -> None:
    # a message item of one refusal part (no output_text) with a phase: its phase and id were dropped unsaid (the
    # carrier was kept only after an output_text's text), so the next request sent the refusal back without the
    # phase the API asks for on every assistant message. Kept after the refusal's text, whole and streamed, and sent
    refusal = {"type": "refusal", "refusal": "I can't"}
    message: dict[str, Any] = {"type": "message", "id": "msg_r", "role": "assistant", "status": "completed"}
    message |= {"phase": "final_answer", "content": [refusal]}
    added = {"type": "response.output_item.added", "output_index": 0, "item": {**message, "content": []}}
    delta = {"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "item_id": "msg_r"}
    done = {"type": "response.output_item.done", "output_index": 0, "item": message}
    streamed = reduce_ok(list(P.parse_stream(_sse(_created(), added, {**delta, "delta": "I can't"}, done, _done()))))
    for msg in (P.parse_response(_whole(message)), streamed):
        assert msg.metadata["agentmsg_refusal"] is True
        carrier = {"type": "message", "phase": "final_answer", "id": "msg_r"}
        text, kept = msg.content
        assert text.type == "text" and kept.type == "thinking" and (kept.metadata or {})["providerBlock"] == carrier
        (sent,) = formatted("openai-responses", [UserMessage("hi"), msg, UserMessage("why")]).body["input"][1:2]
        assert (sent["id"], sent["phase"], sent["content"]) == ("msg_r", "final_answer", [refusal])


# ---- output items arriving out of output_index order ------------------------------------------------------------


def _arriving(stream: list[dict[str, Any]], order: list[int]) -> list[dict[str, Any]]:
    """``stream`` (test_synthetic.payloads) with its items' events arriving in ``order`` of their output_index, their
    sequence numbers in the order they arrive (as a server that sends them so numbers them: not a reordered stream)."""
    head = [p for p in stream if "output_index" not in p and p["type"] != "response.completed"]
    tail = [p for p in stream if p["type"] == "response.completed"]
    arrived = head + [p for i in order for p in stream if p.get("output_index") == i] + tail
    return [{**p, "sequence_number": n} if "sequence_number" in p else p for n, p in enumerate(arrived)]


def _blocks(msg: Any) -> list[tuple[str, Any]]:
    return [
        (b.type, b.text if b.type == "text" else b.name if b.type == "tool_use" else b.thinking) for b in msg.content
    ]


def test_items_arriving_out_of_their_order_are_kept_in_output_index_order() -> None:
    """Items whose events come before an earlier item's (output_index 2, then 0, then 1) were kept in the order they
    arrived, while the whole response keeps output_index order; the SDK's final response is in output_index order too
    (the completed response's output, or without one the done items sorted by index). A later item's events wait
    until the items before it are done (or the reply ends), so the stream gives the whole response's blocks."""
    from tests.providers.openai_responses.sdk import final_response
    from tests.providers.openai_responses.test_synthetic import payloads

    output: list[dict[str, Any]] = [
        {"kind": "reasoning", "id": "rs_0", "summary": [["thi", "nk"]], "encrypted": "gAAAAenc"},
        {"kind": "message", "id": "msg_1", "parts": [["hel", "lo"]]},
        {"kind": "function_call", "id": "fc_2", "call_id": "call_2", "name": "f", "args": ['{"a":', "1}"]},
    ]
    stream = payloads(output)
    whole = _blocks(P.parse_response(stream[-1]["response"]))
    assert whole == [("thinking", "think"), ("text", "hello"), ("tool_use", "f")]
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]):
        arriving = _arriving(stream, order)
        events = list(P.parse_stream(_sse(*arriving)))
        assert not [e for e in events if e.get("name") == "agentmsg.problem"], order
        assert _blocks(reduce_ok(events)) == whole, order
        # the SDK: the completed response's output; without one, its done items by output_index
        without = [*arriving[:-1], {**arriving[-1], "response": {**arriving[-1]["response"], "output": None}}]
        for sdk_stream in (arriving, without):
            final = final_response(sdk_stream)
            assert [item.type for item in final.output] == ["reasoning", "message", "function_call"], order
        # a stream cut before its end: what came is kept, in output_index order
        cut = list(P.parse_stream(_sse(*arriving[:-1])))
        assert _blocks(reduce_events(cut)[0]) == whole, order


def test_a_later_item_waits_only_while_an_earlier_one_is_missing() -> None:
    """Items in order stream as they come (each item's events at once); an item that comes before an earlier one
    waits until that one is done, then comes whole, and the items after it come as they arrive again."""
    from tests.providers.openai_responses.test_synthetic import payloads

    output: list[dict[str, Any]] = [
        {"kind": "message", "id": "msg_0", "parts": [["a"]]},
        {"kind": "message", "id": "msg_1", "parts": [["b"]]},
        {"kind": "message", "id": "msg_2", "parts": [["c"]]},
    ]
    arriving = _arriving(payloads(output), [1, 0, 2])
    parser = P.stream_parser()
    seen: list[str] = []
    for payload in arriving:
        events = parser.feed(_sse(payload))
        seen.extend(e["delta"] for e in events if e["type"] == "TEXT_BLOCK_DELTA")
        if payload["type"] == "response.output_text.delta":
            # item 1's text waits until item 0 is done; item 0's and item 2's come with their payload
            assert seen == {"b": [], "a": ["a"], "c": ["a", "b", "c"]}[payload["delta"]], payload
    seen.extend(e["delta"] for e in parser.close() if e["type"] == "TEXT_BLOCK_DELTA")
    assert seen == ["a", "b", "c"]


# ---- empty reasoning parts: kept, and sent back ------------------------------------------------------------------


def _reasoning_sent(msg: Any) -> list[dict[str, Any]]:
    body = P.format_request([UserMessage("hi"), msg, UserMessage("go on")], model="gpt-5").body
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def test_empty_reasoning_parts_come_back_as_they_came() -> None:
    """A reasoning item's empty summary parts (``summary_text`` of text "") and empty ``reasoning_text`` parts were
    dropped on the round trip (parse, then format_request sent ``summary: []``): each part is a thinking block now,
    an empty one marked (metadata ``summaryText: true``, or ``reasoningText: true``) so that it is told from the one
    empty block an item of no part keeps, and the item goes back with the parts it came with. Whole and streamed (its
    parts added and filled by empty deltas, or added and never filled), and a stream cut before the item is done."""
    from tests.providers.openai_responses.test_synthetic import _whole, payloads

    cases: list[tuple[list[list[str]], list[list[str]]]] = [
        ([], []),
        ([[""]], []),
        ([[]], []),  # (added, never filled: no delta)
        (([["a"], [""]]), []),
        (([[""], ["b", ""]]), []),
        ([["", ""], []], [[""]]),
        ([], [[], ["c"]]),
    ]
    for summary, content in cases:
        item = {"kind": "reasoning", "id": "rs_0", "summary": summary, "encrypted": "gAAAAenc"}
        if content:
            item["content"] = content
        output = [item, {"kind": "message", "id": "msg_1", "parts": [["ok"]]}]
        expected = _whole(item)
        expected.pop("type")
        expected.setdefault("content", None)
        stream = payloads(output)
        whole = P.parse_response(stream[-1]["response"])
        streamed = reduce_ok(list(P.parse_stream(_sse(*stream))))
        for msg in (whole, streamed):
            (sent,) = _reasoning_sent(msg)
            assert {k: sent.get(k) for k in expected} == expected, (summary, content, msg.to_dict()["content"])
        assert whole.to_dict()["content"] == streamed.to_dict()["content"]
        # a stream that adds no part (a proxy's: deltas only): an empty part no event opened is kept from the done
        # item, after the parts the deltas gave
        bare = [p for p in stream if not p["type"].endswith("part.added")]
        (sent,) = _reasoning_sent(reduce_ok(list(P.parse_stream(_sse(*bare)))))
        for key in ("summary", "content"):
            assert sorted(map(str, sent.get(key) or [])) == sorted(map(str, expected[key] or [])), (summary, content)
        # cut before the item is done: the parts that came are kept, the empty ones too (no encrypted content yet)
        cut = [p for p in stream if p["type"] not in ("response.output_item.done", "response.completed")]
        (msg,) = reduce_events(list(P.parse_stream(_sse(*cut))))
        parts = [(b.thinking, (b.metadata or {}).get("reasoningText", False)) for b in msg.blocks("thinking")]
        came = [("".join(p), False) for p in summary] + [("".join(p), True) for p in content]
        assert parts == came, (summary, content)


def test_a_refusal_goes_back_as_a_refusal_part_of_its_output_message() -> None:
    """The reader keeps a message's refusal part as a text block of its own (the message marked agentmsg_refusal),
    its id and phase in a carrier: sent back, the output message holds the refusal as a ``refusal`` part after its
    output_text (it went as output_text, joined to the text with a newline). An assistant message item of no id
    takes text only (the openai package's EasyInputMessageParam; the oracle refuses a refusal part there): the text,
    as before."""
    reply = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "phase": "final_answer",
                "content": [
                    {"type": "output_text", "text": "Hi.", "annotations": []},
                    {"type": "refusal", "refusal": "I can't help with that."},
                ],
            }
        ],
    }
    msg = P.parse_response(reply)
    assert msg.metadata["agentmsg_refusal"] is True
    sent = formatted("openai-responses", [UserMessage("q"), msg])
    assert sent.body["input"][1] == {
        "role": "assistant",
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Hi.", "annotations": []},
            {"type": "refusal", "refusal": "I can't help with that."},
        ],
        "phase": "final_answer",
    }
    assert rules(sent) == []
    only = AssistantMessage(
        [TextBlock(text="No."), msg.content[2]], metadata={"agentmsg_refusal": True}
    )  # (a refusal alone: no output_text part)
    assert formatted("openai-responses", [UserMessage("q"), only]).body["input"][1]["content"] == [
        {"type": "refusal", "refusal": "No."}
    ]
    no_id = AssistantMessage([TextBlock(text="Hi."), TextBlock(text="No.")], metadata={"agentmsg_refusal": True})
    assert formatted("openai-responses", [UserMessage("q"), no_id]).body["input"][1] == {
        "role": "assistant",
        "content": "Hi.\nNo.",
    }


def test_a_refusal_of_a_message_without_a_phase_goes_back_as_its_refusal_part() -> None:
    """Most replies carry no phase, and the reader kept a message item's id only with one: their refusal went back
    as text, joined to the message's text with a newline. A message holding a refusal keeps its id in the carrier it
    has with a phase (no phase in it), whole and streamed, so the refusal goes back as a ``refusal`` part of that
    output message (no phase sent); a message of no refusal and no phase keeps no carrier, as before."""
    parts = [{"type": "output_text", "text": "Hi.", "annotations": []}, {"type": "refusal", "refusal": "I can't."}]
    message: dict[str, Any] = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    message |= {"content": parts}
    added = {"type": "response.output_item.added", "output_index": 0, "item": {**message, "content": []}}
    at = {"output_index": 0, "item_id": "msg_1"}
    text = {"type": "response.output_text.delta", "content_index": 0, "delta": "Hi.", **at}
    refused = {"type": "response.refusal.delta", "content_index": 1, "delta": "I can't.", **at}
    done = {"type": "response.output_item.done", "output_index": 0, "item": message}
    streamed = reduce_ok(list(P.parse_stream(_sse(_created(), added, text, refused, done, _done()))))
    for msg in (P.parse_response(_whole(message)), streamed):
        assert msg.metadata["agentmsg_refusal"] is True
        *texts, kept = msg.content
        assert [t.text for t in all_of(TextBlock, texts)] == ["Hi.", "I can't."]
        assert kept.type == "thinking" and (kept.metadata or {})["providerBlock"] == {"type": "message", "id": "msg_1"}
        sent = formatted("openai-responses", [UserMessage("q"), msg, UserMessage("why")])
        assert sent.body["input"][1] == {"role": "assistant", **message}
        assert rules(sent) == []
    plain = {**message, "content": parts[:1]}
    assert [b.type for b in P.parse_response(_whole(plain)).content] == ["text"]


def test_a_custom_tool_call_is_the_block_chat_completions_reader_makes() -> None:
    """A custom tool's call (custom_tool_call item: call_id, name, its free-text input) was said as not kept and the
    call lost, whole and streamed (response.custom_tool_call_input.delta / .done). Now it is the block Chat
    Completions' reader makes of one: input {}, the text as its content, metadata toolType custom; sent back to
    this API as a custom_tool_call, and to a provider without custom tools as Chat's reader's block is. The reply
    is built by the openai package's models (Response; its stream accumulator gives the same item)."""
    from openai.types.responses import Response

    from agentmsg.providers import openai
    from tests._support.providers import FIX
    from tests.providers.openai_responses.sdk import final_response

    chat = openai.parse_response((FIX / "openai/chat_completion_custom_tool_call.json").read_bytes())
    want = chat.blocks("tool_use")[0]
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": want.id, "name": "math_exp", "input": "4 + 4"}
    item = {**item, "status": "completed"}
    whole = Response.model_validate(_whole(item, created_at=1, tool_choice="auto", tools=[], parallel_tool_calls=True))
    whole_msg = P.parse_response(orjson.dumps(whole.model_dump(mode="json", exclude_none=True)))
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {**item, "input": "", "status": "in_progress"},
    }
    deltas = [
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1", "delta": d}
        for d in ("4 +", " 4")
    ]
    input_done = {
        "type": "response.custom_tool_call_input.done",
        "output_index": 0,
        "item_id": "ctc_1",
        "input": "4 + 4",
    }
    item_done = {"type": "response.output_item.done", "output_index": 0, "item": item}
    completed = _done(output=[item])
    streams = {
        "deltas": [_created(), added, *deltas, input_done, item_done, completed],
        "done event only": [_created(), added, input_done, item_done, completed],
        "done item only": [_created(), added, item_done, completed],
        "cut after the deltas": [_created(), added, *deltas],
    }
    for what, stream in streams.items():
        events = list(P.parse_stream(_sse(*stream)))
        said = [e["name"] for e in events if e["type"] == "CUSTOM"]
        assert said == (["agentmsg.error"] if "cut" in what else []), what  # (a cut stream: its error alone)
        msgs = reduce_events(events)
        assert [(b.id, b.name, b.input, b.content, b.metadata) for b in msgs[0].blocks("tool_use")] == [
            (want.id, "math_exp", {}, "4 + 4", {"toolType": "custom"})
        ], what
        if "cut" not in what:  # (the openai package reads the same item)
            final = final_response(stream)
            assert [(o.type, o.input) for o in final.output] == [("custom_tool_call", "4 + 4")], what
    assert whole_msg.blocks("tool_use") == chat.blocks("tool_use")
    # back to this API as the call it was, and to a provider without custom tools as Chat's reader's block goes
    back = formatted("openai-responses", [UserMessage("Add four plus four."), whole_msg])
    assert back.body["input"][1] == {
        "type": "custom_tool_call",
        "call_id": want.id,
        "name": "math_exp",
        "input": "4 + 4",
    }
    for provider in ("deepseek", "anthropic"):
        via_chat = formatted(provider, [UserMessage("Add four plus four."), chat])
        via_responses = formatted(provider, [UserMessage("Add four plus four."), whole_msg])
        assert via_responses.body == via_chat.body, provider
        assert rules(via_responses) == rules(via_chat), provider
        # (a function call there: its text, no JSON, is said, tool-arguments-invalid)
        assert ("/1/content/0", "tool-arguments-invalid") in rules(via_responses), provider


_EARLY_ITEMS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    # the item, its text's delta event, its .done event and the field that holds its text there
    "message": (
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "4 + 4", "annotations": []}]},
        "response.output_text.delta", "response.output_text.done", "text",
    ),
    "function_call": (
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": '{"a":4}',
         "status": "completed"},
        "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments",
    ),
    "custom_tool_call": (
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "math_exp", "input": "4 + 4",
         "status": "completed"},
        "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input",
    ),
}  # fmt: skip


@pytest.mark.parametrize("first", ["delta", "done"])
@pytest.mark.parametrize("kind", list(_EARLY_ITEMS))
def test_an_items_text_that_comes_before_its_added_event_is_read_once(kind: str, first: str) -> None:
    """Found by the custom-call fuzzer: an item's delta (or its text's .done event) before its output_item.added (a
    proxy's order) opened the item, and the added event then made it anew, as if nothing had streamed: the done
    item's text was read again, "4 + 4" became "4 + 44 + 4" (a function call's arguments no JSON, said; a custom
    tool's input and a message's text doubled unsaid). Now the item keeps what its events gave: the message is the
    whole response's."""
    item, delta_type, done_type, field = _EARLY_ITEMS[kind]
    text = item["content"][0]["text"] if kind == "message" else item[field]
    at = {"output_index": 0, "item_id": item["id"], **({"content_index": 0} if kind == "message" else {})}
    delta = {"type": delta_type, **at, "delta": text}
    done = {"type": done_type, **at, field: text}
    empty = {**item, "content": []} if kind == "message" else {**item, field: ""}
    added = {"type": "response.output_item.added", "output_index": 0, "item": {**empty, "status": "in_progress"}}
    early = [delta, added, done] if first == "delta" else [done, added]
    events = list(
        P.parse_stream(
            _sse(_created(), *early, {"type": "response.output_item.done", "output_index": 0, "item": item}, _done())
        )
    )
    assert _said(events) == []
    whole = P.parse_response(orjson.dumps(_whole(item)))
    assert reduce_ok(events).content == whole.content


@pytest.mark.parametrize("first", ["delta", "done"])
@pytest.mark.parametrize("kind", ["function_call", "custom_tool_call"])
def test_a_call_its_deltas_open_takes_its_id_and_name_from_its_done_item(kind: str, first: str) -> None:
    """Found by the custom-call fuzzer: a call whose deltas (or .done event) came with no output_item.added (a
    proxy's) was opened by them, and its done item gave only its text: the call got a minted id and an empty name
    (said "ended without a name") though the done item names both. Now the done item gives them, as the whole
    response does; a call its added event named keeps that event's."""
    item, delta_type, done_type, field = _EARLY_ITEMS[kind]
    at = {"output_index": 0, "item_id": item["id"]}
    early = (
        {"type": delta_type, **at, "delta": item[field]}
        if first == "delta"
        else {"type": done_type, **at, field: item[field]}
    )
    item_done = {"type": "response.output_item.done", "output_index": 0, "item": item}
    events = list(P.parse_stream(_sse(_created(), early, item_done, _done())))
    assert _said(events) == []
    whole = P.parse_response(orjson.dumps(_whole(item)))
    assert reduce_ok(events).content == whole.content
    assert [(b.id, b.name) for b in whole.blocks("tool_use")] == [("call_1", item["name"])]


class _Scanned:
    """A reasoning item's record of its blocks (``_Item.slots``), as the reader keeps it, that adds up the entries each
    ``in`` looks at: all of them for a list, one for a dict (a hash lookup)."""

    looked = 0

    def __init__(self, real: Any) -> None:
        self.real = real

    def __contains__(self, slot: object) -> bool:
        _Scanned.looked += len(self.real) if isinstance(self.real, list) else 1
        return slot in self.real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __iter__(self) -> Any:
        return iter(self.real)

    def __len__(self) -> int:
        return len(self.real)

    def __getitem__(self, key: Any) -> Any:
        return self.real[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.real[key] = value

    def __reversed__(self) -> Any:
        return reversed(self.real)


def test_a_reasoning_item_of_many_summary_parts_is_read_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each summary part of a reasoning item was looked up in a list of the parts opened so far (three times a
    part, streamed: as added, at its first delta, as done): quadratic in the parts, 5.7 s for a stream of 20,000
    parts (1.1 MB) and 2.5 s for a whole response of 20,000, where 2,000 took 0.13 and 0.07 s. The lookups are now
    one step each; the blocks are as they were: one per part, in order, the encrypted content on the last."""
    from agentmsg.providers import openai_responses

    class Probed(openai_responses._Item):
        def __init__(self, kind: Any, item_id: Any) -> None:
            super().__init__(kind, item_id)
            self.slots: Any = _Scanned(self.slots)

    monkeypatch.setattr(openai_responses, "_Item", Probed)
    n = 1000  # (under the reducer's 1,024 blocks open at once)
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ZW5j"}
    events: list[dict[str, Any]] = [
        _created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    for k in range(n):
        where = {"item_id": "rs_1", "output_index": 0, "summary_index": k}
        events += [
            {"type": "response.reasoning_summary_part.added", **where, "part": {"type": "summary_text", "text": ""}},
            {"type": "response.reasoning_summary_text.delta", **where, "delta": f"t{k}"},
        ]
    parts = [{"type": "summary_text", "text": f"t{k}"} for k in range(n)]
    events += [{"type": "response.output_item.done", "output_index": 0, "item": {**item, "summary": parts}}, _done()]
    reads: list[Callable[[], Msg]] = [
        lambda: reduce_ok(list(P.parse_stream(_sse(*events)))),
        lambda: P.parse_response(_whole({**item, "summary": parts})),
    ]
    for read in reads:
        _Scanned.looked = 0
        msg = read()
        assert _Scanned.looked <= 4 * n
        blocks = all_of(ThinkingBlock, msg.content)
        assert [b.thinking for b in blocks] == [f"t{k}" for k in range(n)]
        assert [(b.metadata or {}).get("signature") for b in blocks[-2:]] == [None, "ZW5j"]


#: (kind of item, the delta event, its .done event and the field of it that holds the whole text, where the part is)
_DONE_KINDS: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("message", "response.output_text.delta", "response.output_text.done", "text", {"content_index": 0}),
    ("message", "response.refusal.delta", "response.refusal.done", "refusal", {"content_index": 0}),
    (
        "reasoning",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "text",
        {"summary_index": 0},
    ),
    ("reasoning", "response.reasoning_text.delta", "response.reasoning_text.done", "text", {"content_index": 0}),
    (
        "function_call",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "arguments",
        {},
    ),
    (
        "custom_tool_call",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "input",
        {},
    ),
]


def _read_by(body: bytes, by: str) -> list[dict[str, Any]]:
    """The events of an SSE ``body`` read whole (``by`` "whole") or fed to a stream parser event by event."""
    if by == "whole":
        return list(P.parse_stream(body))
    parser = P.stream_parser()
    events = [e for part in body.split(b"\n\n") if part for e in parser.feed(part + b"\n\n")]
    return events + parser.close()


def _streamed_then_done(kind: str, delta: str, done: str, field: str, where: dict[str, Any], whole: str) -> bytes:
    item: dict[str, Any] = {"type": kind, "id": "it_1"}
    if kind in ("function_call", "custom_tool_call"):
        item.update(call_id="call_1", name="f")
    at = {"item_id": "it_1", "output_index": 0, **where}
    pieces = ['{"a"', ": ", '"b"', "}"]  # (four deltas of one shape: the parser routes all but the first)
    return _sse(
        _created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *({"type": delta, **at, "delta": piece, "sequence_number": n} for n, piece in enumerate(pieces)),
        {"type": done, **at, field: whole},
        _done(),
    )


@pytest.mark.parametrize(("kind", "delta", "done", "field", "where"), _DONE_KINDS, ids=[k[2] for k in _DONE_KINDS])
@pytest.mark.parametrize("by", ["whole", "event by event"])
def test_a_done_text_that_differs_from_its_deltas_is_said_and_the_deltas_kept(
    kind: str, delta: str, done: str, field: str, where: dict[str, Any], by: str
) -> None:
    """A part's ``.done`` event repeats its whole text (a call's arguments); when deltas gave it, it was not read, and
    one that differs from them (a proxy's rewrite, a cut and resumed stream) was dropped unsaid. The deltas' text is
    kept (it went out as its events: no event takes text back) and the other is said, quoted, once per reply and kind
    (rule not-kept), with the part's place; the same text again says nothing. The four deltas are routed but the
    first (read in C), and the stream is read whole and event by event: the same."""
    same = '{"a": "b"}'
    for whole, said in ((same, False), ('{"a": "c"}', True)):
        body = _streamed_then_done(kind, delta, done, field, where, whole)
        events = _read_by(body, by)
        msg = reduce_ok(events)
        texts = [
            getattr(b, "text", None) or getattr(b, "thinking", None) or getattr(b, "content", None) for b in msg.content
        ]
        assert texts == [same]
        notes = [m for name, m in _said(events) if name == "agentmsg.not-kept"]
        if not said:
            assert notes == []
            continue
        place = "".join(f"output_index 0, {key} 0" for key in where) or "output_index 0"
        assert notes == [
            f"a {done} event that does not repeat its deltas ({place}: its {field}, 10 characters, where they gave 10)"
            f' is not kept: the deltas\' text is the reply\'s; its {field}: "{{\\"a\\": \\"c\\"}}"'
        ]


#: (kind of item, its delta event, the part's .done event and the field it repeats the text in, where the part is, the
#: done item's content that holds the whole text (``{}``: the text itself), the place and field its note names)
_ITEM_KINDS: list[tuple[str, str, str, str, dict[str, Any], Callable[[str], dict[str, Any]], str, str]] = [
    (
        "message",
        "response.output_text.delta",
        "response.output_text.done",
        "text",
        {"content_index": 0},
        lambda t: {"content": [{"type": "output_text", "text": t, "annotations": []}]},
        "output_index 0",
        "text",
    ),
    (
        "message",
        "response.refusal.delta",
        "response.refusal.done",
        "refusal",
        {"content_index": 0},
        lambda t: {"content": [{"type": "refusal", "refusal": t}]},
        "output_index 0",
        "refusal",
    ),
    (
        "reasoning",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "text",
        {"summary_index": 0},
        lambda t: {"summary": [{"type": "summary_text", "text": t}]},
        "output_index 0, summary_index 0",
        "text",
    ),
    (
        "reasoning",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "text",
        {"content_index": 0},
        lambda t: {"summary": [], "content": [{"type": "reasoning_text", "text": t}]},
        "output_index 0, content_index 0",
        "text",
    ),
    (
        "function_call",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "arguments",
        {},
        lambda t: {"arguments": t},
        "output_index 0",
        "arguments",
    ),
    (
        "custom_tool_call",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "input",
        {},
        lambda t: {"input": t},
        "output_index 0",
        "input",
    ),
]


@pytest.mark.parametrize("case", _ITEM_KINDS, ids=[k[2].split(".")[1] for k in _ITEM_KINDS])
@pytest.mark.parametrize("by", ["whole", "event by event"])
@pytest.mark.parametrize("done_by", ["response.output_item.done", "response.completed"])
@pytest.mark.parametrize("part_done", [True, False], ids=["part .done", "no part .done"])
def test_a_done_item_that_differs_from_its_deltas_is_said_and_the_deltas_kept(
    case: tuple[str, str, str, str, dict[str, Any], Callable[[str], dict[str, Any]], str, str],
    by: str,
    done_by: str,
    part_done: bool,
) -> None:
    """A streamed item's done item (``response.output_item.done``, or the completed response's output when that event
    did not come) repeats its whole content; it was not read again, and one that differs from what the deltas gave
    (a proxy's rewrite) was dropped unsaid. Compared as a part's ``.done`` event is: the deltas' text is kept and the
    other said, quoted, with the item's place (rule not-kept); the same content says nothing. With or without the
    part's own ``.done`` event (repeating the deltas) before it, read whole and event by event."""
    kind, delta, done, field, where, content, place, said_field = case
    same = '{"a": "b"}'
    for whole, said in ((same, False), ('{"a": "c"}', True)):
        item: dict[str, Any] = {"type": kind, "id": "it_1"}
        if kind in ("function_call", "custom_tool_call"):
            item.update(call_id="call_1", name="f")
        at = {"item_id": "it_1", "output_index": 0, **where}
        pieces = ['{"a"', ": ", '"b"', "}"]
        done_item = {**item, **content(whole)}
        end = (
            [{"type": "response.output_item.done", "output_index": 0, "item": done_item}, _done()]
            if done_by == "response.output_item.done"
            else [_done(output=[done_item])]
        )
        body = _sse(
            _created(),
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            *({"type": delta, **at, "delta": piece, "sequence_number": n} for n, piece in enumerate(pieces)),
            *([{"type": done, **at, field: same}] if part_done else []),
            *end,
        )
        events = _read_by(body, by)
        msg = reduce_ok(events)
        texts = [
            getattr(b, "text", None) or getattr(b, "thinking", None) or getattr(b, "content", None) for b in msg.content
        ]
        assert [t for t in texts if t is not None] == [same]  # (a refusal's message: a carrier of its id after it)
        notes = [m for name, m in _said(events) if name == "agentmsg.not-kept"]
        if not said:
            assert notes == []
            continue
        assert notes == [
            f"a {done_by} event that does not repeat its deltas ({place}: its {said_field}, 10 characters, where they"
            f' gave 10) is not kept: the deltas\' text is the reply\'s; its {said_field}: "{{\\"a\\": \\"c\\"}}"'
        ]


def test_a_done_item_names_what_its_deltas_did_not_give() -> None:
    """A done item's part no delta gave (a second summary part, a refusal where only text streamed) and a streamed
    part its done item leaves out: each said with its place, the deltas' blocks kept as they came."""
    reasoning = {"type": "reasoning", "id": "rs_1"}
    at = {"item_id": "rs_1", "output_index": 0}
    body = _sse(
        _created(),
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": "one"},
        {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 1, "delta": "two"},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**reasoning, "summary": [{"type": "summary_text", "text": "one"}]},
        },
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "m_1"}},
        {"type": "response.output_text.delta", "item_id": "m_1", "output_index": 1, "content_index": 0, "delta": "hi"},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {
                "type": "message",
                "id": "m_1",
                "content": [{"type": "output_text", "text": "hi"}, {"type": "refusal", "refusal": "no"}],
            },
        },
        _done(),
    )
    events = list(P.parse_stream(body))
    msg = reduce_ok(events)
    assert [getattr(b, "thinking", None) or getattr(b, "text", None) for b in msg.content] == ["one", "two", "hi"]
    assert [m for name, m in _said(events) if name == "agentmsg.not-kept"] == [
        "a response.output_item.done event that does not repeat its deltas (output_index 0, summary_index 1: its"
        " text, 0 characters, where they gave 3) is not kept: the deltas' text is the reply's; its text: \"\"",
        "a response.output_item.done event that does not repeat its deltas (output_index 1: its refusal, 2"
        " characters, where they gave 0) is not kept: the deltas' text is the reply's; its refusal: \"no\"",
    ]


@pytest.mark.parametrize("by", ["whole", "event by event"])
@pytest.mark.parametrize("kind", ["function_call", "custom_tool_call", "message", "reasoning"])
def test_a_done_item_whose_id_or_name_differs_from_its_added_item_is_said(kind: str, by: str) -> None:
    """A streamed item's done item whose ``id`` (a call's ``call_id`` and ``name`` too) differs from its added item's
    (a proxy's rewrite, a stream resumed elsewhere) was not compared: the added item's were kept and the done item's
    dropped unsaid (the openai package's accumulator raises "Completed output item identity changed." for an id or
    call_id). Compared now, as its content is (_item_again): the added item's kept, the other said, quoted, once per
    field (rule not-kept); a done item that repeats them says nothing."""
    call = kind in ("function_call", "custom_tool_call")
    added: dict[str, Any] = {"type": kind, "id": "it_1"}
    if call:
        added.update(call_id="call_1", name="f")
    fields: dict[str, tuple[str, dict[str, Any]]] = {
        "function_call": ("response.function_call_arguments.delta", {"arguments": "{}"}),
        "custom_tool_call": ("response.custom_tool_call_input.delta", {"input": "{}"}),
        "message": ("response.output_text.delta", {"content": [{"type": "output_text", "text": "{}"}]}),
        "reasoning": ("response.reasoning_summary_text.delta", {"summary": [{"type": "summary_text", "text": "{}"}]}),
    }
    delta, field = fields[kind]
    at = {"item_id": "it_1", "output_index": 0, **({"summary_index": 0} if kind == "reasoning" else {})}
    at.update({"content_index": 0} if kind == "message" else {})
    renamed = {"id": "it_2", **({"call_id": "call_2", "name": "g"} if call else {})}
    for done_item, said in (({**added, **field}, []), ({**added, **field, **renamed}, sorted(renamed))):
        body = _sse(
            _created(),
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": delta, **at, "delta": "{}"},
            {"type": "response.output_item.done", "output_index": 0, "item": done_item},
            _done(),
        )
        if by == "whole":
            events = list(P.parse_stream(body))
        else:
            parser = P.stream_parser()
            events = [e for part in body.split(b"\n\n") if part for e in parser.feed(part + b"\n\n")]
            events += parser.close()
        msg = reduce_ok(events)
        notes = sorted(m for name, m in _said(events) if name == "agentmsg.not-kept")
        assert notes == [
            "a response.output_item.done event whose item does not repeat its response.output_item.added"
            f' (output_index 0: its {key} "{renamed[key]}", where the added item\'s is "{added[key]}") is not kept:'
            f" the added item's {key} is the reply's"
            for key in said
        ]
        if call:
            assert [(b.id, b.name, b.content) for b in all_of(ToolUseBlock, msg.content)] == [("call_1", "f", "{}")]
        elif kind == "reasoning":
            assert [(b.metadata or {}).get("itemId") for b in all_of(ThinkingBlock, msg.content)] == ["it_1"]


def _numbered_text(*pieces: str, obfuscation: bool = False) -> list[dict[str, Any]]:
    """A stream of one message whose text deltas are ``pieces``, each event numbered in order (``obfuscation``: each
    delta's padding after its sequence_number, the key order of no server but still read)."""
    item = {"type": "message", "id": "m_1", "role": "assistant", "content": []}
    at = {"item_id": "m_1", "output_index": 0, "content_index": 0}
    whole = {**item, "content": [{"type": "output_text", "text": "".join(pieces)}]}
    events = [
        _created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *({"type": "response.output_text.delta", **at, "delta": d} for d in pieces),
        {"type": "response.output_item.done", "output_index": 0, "item": whole},
        _done(),
    ]
    pad = {"obfuscation": "x"} if obfuscation else {}
    return [{**e, "sequence_number": n, **(pad if "delta" in e else {})} for n, e in enumerate(events)]


@pytest.mark.parametrize("obfuscation", [False, True], ids=["number last", "padding after the number"])
def test_a_sequence_number_that_does_not_increase_is_said(obfuscation: bool) -> None:
    """A stream's ``sequence_number`` was not read: a duplicated or reordered event (a replaying proxy, a retried
    stream) was read unsaid. Each event's number but a delta's (a route reads most deltas in C, no number read) is
    compared with the last one read (one int) and one that does not increase is said (rule order, once per reply,
    with the event's type, output_index and both numbers); the event is still read as it came (a duplicate kept, as
    the openai package's ResponseStream accumulates every event it gets). A number of another type is said (rule
    type) and not read. Read with the routes and without, whole and event by event: the same events."""
    from tests._support.providers import route_events

    events = _numbered_text("a", "b", "c", "d", obfuscation=obfuscation)
    added, c, done = events[1], events[4], events[6]

    def order(kind: str, at: str, seq: int, last: int) -> tuple[str, str]:
        return (
            "order",
            f"a {kind} event{at} whose sequence_number, {seq}, does not increase (the last one read was {last}): a"
            " duplicated or reordered event (a replaying proxy, a retried stream?), read as it came, as any other",
        )

    def typed(kind: str, shape: str) -> tuple[str, str]:
        return ("type", f"a {kind} event's sequence_number is not an integer ({shape}): not read")

    done_at = " (output_index 0)"
    streams: dict[str, tuple[list[dict[str, Any]], list[tuple[str, str]]]] = {
        "in order": (events, []),
        "retried": ([*events[:6], *events], [order("response.created", "", 0, 1)]),
        "duplicated": ([*events[:7], done, *events[7:]], [order("response.output_item.done", done_at, 6, 6)]),
        "reordered": ([added, events[0], *events[2:]], [order("response.created", "", 0, 1)]),
        "a string": (
            [events[0], {**added, "sequence_number": "1"}, *events[2:]],
            [typed("response.output_item.added", "a JSON string")],
        ),
        "beyond 64 bits": (
            [*events[:6], {**done, "sequence_number": 2**70}, *events[7:]],
            [typed("response.output_item.done", "a number beyond 64 bits")],
        ),
        "a delta again": ([*events[:5], c, *events[5:]], []),  # (a delta's number is not read: the same either way)
    }
    for name, (stream, said) in streams.items():
        # (written by the standard library: an integer beyond 64 bits too; compact, as the API writes)
        parts = [f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in stream]
        body = b"".join(parts)
        want = route_events(P, body, routes=False)
        assert route_events(P, body, routes=True) == want, name
        assert route_events(P, parts, routes=True) == want, name
        problems = [
            (e["value"]["rule"], e["value"]["message"])
            for e in want
            if e.get("name") == "agentmsg.problem" and e["value"]["rule"] in ("order", "type")
        ]
        assert problems == said, name


@pytest.mark.parametrize("by", ["whole", "event by event"])
def test_deltas_after_their_items_done_event_are_said(by: str) -> None:
    """A delta of an item whose ``response.output_item.done`` came already (a replaying or reordering proxy: the done
    item moved before its deltas) was read unsaid: a text or reasoning fragment opened a block after the item's, the
    message holding the text twice, and a call's arguments made a second call, nameless, of a minted id. Each is said
    (rule order, once per item and event type), as Anthropic's deltas after their content_block_stop are: the text
    kept in a block of its own, the call's arguments skipped (its call is whole). The text deltas are routed (read in
    C) but the first: read whole and event by event, the same."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]}
    message = {"type": "message", "id": "m_1", "content": [{"type": "output_text", "text": "hi"}]}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}

    def delta(kind: str, index: int, item_id: str, text: str, **at: int) -> dict[str, Any]:
        return {"type": f"response.{kind}.delta", "output_index": index, "item_id": item_id, **at, "delta": text}

    body = _sse(
        _created(),
        {"type": "response.output_item.added", "output_index": 0, "item": {**reasoning, "summary": []}},
        delta("reasoning_summary_text", 0, "rs_1", "think", summary_index=0),
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        delta("reasoning_summary_text", 0, "rs_1", " again", summary_index=0),
        delta("reasoning_summary_text", 0, "rs_1", "!", summary_index=0),
        {"type": "response.output_item.added", "output_index": 1, "item": {**message, "content": []}},
        delta("output_text", 1, "m_1", "hi", content_index=0),
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        *(delta("output_text", 1, "m_1", piece, content_index=0) for piece in (" there", ",", " you")),
        {"type": "response.output_item.added", "output_index": 2, "item": {**call, "arguments": ""}},
        delta("function_call_arguments", 2, "fc_1", "{}"),
        {"type": "response.output_item.done", "output_index": 2, "item": call},
        delta("function_call_arguments", 2, "fc_1", '{"x": 1}'),
        delta("function_call_arguments", 2, "fc_1", "2"),
        _done(),
    )
    events = _read_by(body, by)
    msg = reduce_ok(events)
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in msg.content] == [
        ("thinking", "think"),
        ("thinking", " again!"),
        ("text", "hi"),
        ("text", " there, you"),
        ("tool_use", None),
    ]
    assert [(c.id, c.name, c.content) for c in msg.blocks("tool_use")] == [("call_1", "f", "{}")]
    assert [(e["value"]["rule"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"] == [
        (
            "order",
            "reasoning_summary_text.delta for output_index 0 after its response.output_item.done: kept in a block of"
            " its own",
        ),
        (
            "order",
            "output_text.delta for output_index 1 after its response.output_item.done: kept in a block of its own",
        ),
        (
            "order",
            "function_call_arguments.delta for output_index 2 after its response.output_item.done: skipped (and any"
            " more like it)",
        ),
    ]
