"""The anthropic payload reader (``agentmsg.providers.anthropic``'s ``Reader``, through ``parse_stream`` and
``parse_response``): Anthropic Messages. Hand-made bodies, odd but valid and broken: what the reader keeps, what it
says (problems and notes, once), what it never loses on a cut; work counted, never timed, where a body could make it
super-linear."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import AssistantMessage, ToolResultMessage, UserMessage
from agentmsg.blocks import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.providers import anthropic
from agentmsg.providers._response import builder as _builder
from agentmsg.providers._response.parser import run_parser
from tests._support.providers import (
    ANT_START,
    CITE,
    _call,
    _merged,
    _nameless,
    _run,
    _thinking,
    all_of,
    calls,
    cited_response,
    custom,
    ev,
    one,
    reduce_ok,
    said,
)


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
    t0, t1, text, cited = msg.content
    assert isinstance(t0, ThinkingBlock) and isinstance(t1, ThinkingBlock) and isinstance(cited, ThinkingBlock)
    assert isinstance(text, TextBlock) and msg.usage is not None and cited.metadata is not None
    assert (t0.thinking, agentmsg.thinking_signature(t0)) == ("hmm", "SIG")
    assert agentmsg.is_redacted(t1) and (t1.metadata or {})["redactedData"] == "ENC" and t1.thinking == ""
    assert text.text == "ok" and msg.usage.output_tokens == 9 and msg.usage.input_tokens == 5
    # the text's citation (an empty one, as it came) is kept right after it, for Anthropic; nothing is said
    assert cited.thinking == "" and cited.metadata["citations"] == [{}] and cited.metadata["provider"] == "anthropic"
    assert parser.problems == [] and parser.builder.not_kept_notes == []


def test_anthropic_citations_are_kept_after_their_text_streamed_and_whole() -> None:
    """A text block's citations (its content_block_start's, then each citations_delta, as the SDK's accumulator
    appends them) are kept in a carrier right after it: an empty thinking block, metadata ``citations`` and the
    provider. A whole response gives the same message; an unknown delta type is said once per block."""
    body = b"".join(
        [
            ev("message_start", message={"id": "msg_2", "model": "claude", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block={"type": "text", "text": "", "citations": [CITE]}),
            *[ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITE})] * 2,
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "blue"}),
            *[ev("content_block_delta", index=0, delta={"type": "future_delta", "x": 1})] * 2,
            ev("content_block_stop", index=0),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
            ev("message_stop"),
        ]
    )
    events = list(anthropic.parse_stream(body))
    assert custom(events) == [("agentmsg.problem", "enum")]
    streamed = reduce_ok(events)
    text, cited = streamed.content
    assert isinstance(text, TextBlock) and isinstance(cited, ThinkingBlock)
    assert text.text == "blue" and streamed.text_content == "blue"
    assert cited.thinking == "" and cited.metadata == {
        "provider": "anthropic",
        "model": "claude",
        "citations": [CITE] * 3,
    }
    # the whole response: the same message, nothing said
    response = {**cited_response("msg_2"), "content": [{"type": "text", "text": "blue", "citations": [CITE] * 3}]}
    assert custom(anthropic.response_events(response)) == []
    assert anthropic.parse_response(response).content == streamed.content
    # a text block of no text, cited: kept whole in its place (the message has no empty text block to follow)
    empty = {"type": "text", "text": "", "citations": [CITE]}
    msg = anthropic.parse_response({**cited_response("msg_3"), "content": [empty, {"type": "text", "text": "x"}]})
    assert [b.type for b in msg.content] == ["thinking", "text"]
    assert (one(ThinkingBlock, msg.content[0]).metadata or {})["providerBlock"] == empty
    # citations that are no list are said, the text kept
    odd = {**cited_response("msg_4"), "content": [{"type": "text", "text": "blue", "citations": "x"}]}
    assert custom(anthropic.response_events(odd)) == [("agentmsg.problem", "type")]
    assert [b.type for b in anthropic.parse_response(odd).content] == ["text"]


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


def test_a_json_array_of_payloads_cut_after_the_reply_ended_is_said() -> None:
    """A saved list of Anthropic's payloads (a JSON array) that ends before its ']' was cut after message_stop ended
    the reply: the reply is whole, and the cut said (rule incomplete) after its end, as Gemini's array's is."""
    payloads = [
        {"type": "message_start", "message": {"id": "msg_7", "model": "claude", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    body = orjson.dumps(payloads)
    assert custom(list(anthropic.parse_stream(body))) == []
    events = list(anthropic.parse_stream(body[:-1]))
    assert reduce_ok(events).text_content == "A"
    assert custom(events) == [("agentmsg.problem", "incomplete")] and events[-1]["type"] == "CUSTOM"


def test_anthropic_server_tools_are_no_client_calls() -> None:
    """A tool the provider runs itself (web search) streams its input as input_json_delta like a client
    tool: it must not become a call for the client to run (nor make the reply TOOL_CALLS). Its blocks are
    kept as Anthropic gave them, in their place (carriers: metadata providerBlock), its input the JSON its
    fragments make (as the SDK's accumulator reads a server_tool_use); the answer around them is kept."""

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
    assert custom(events) == []
    msg = reduce_ok(events)
    assert [b.type for b in msg.content] == ["thinking", "thinking", "text"] and msg.text_content == "blue"
    carriers = all_of(ThinkingBlock, msg.content[:2])
    assert [(b.metadata or {})["providerBlock"] for b in carriers] == [{**use, "input": {"query": "sky"}}, result]
    assert all(b.thinking == "" and (b.metadata or {})["provider"] == "anthropic" for b in carriers)
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


def test_an_error_event_with_plain_text_data_is_the_providers_error() -> None:
    body = ev("message_start", message={"id": "m1", "model": "claude", "usage": {"input_tokens": 1}}) + (
        b"event: error\ndata: Internal Server Error\n\n"
    )
    events = list(anthropic.parse_stream(body))
    errors = [e["value"]["message"] for e in events if e["type"] == "CUSTOM"]
    assert errors == ["Internal Server Error"]
    assert reduce_ok(events).generate_reason.value == "INTERRUPTED"


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


def test_anthropic_proxy_error_of_code_and_message_after_an_error_event_is_its_message() -> None:
    # event: error whose data is {"code": ..., "message": ...} (a proxy's, no Anthropic error object): the error's
    # message is the provider's text and its code is kept (the whole JSON was the message)
    start = ev("message_start", message={"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}})
    events = list(anthropic.parse_stream(start + b'event: error\ndata: {"code": 529, "message": "Overloaded"}\n\n'))
    msg = reduce_ok(events)
    (error,) = msg.to_dict()["metadata"]["agentmsg_errors"]
    assert msg.generate_reason == "INTERRUPTED"
    assert (error["message"], error["code"], error["type"]) == ("Overloaded", 529, "provider_error")


def test_anthropic_an_error_keeps_its_request_id() -> None:
    """Anthropic's error event names the request beside the error (``request_id``, what its support asks for):
    kept in the error, streamed and whole; it was dropped unsaid."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_9"}
    parser = anthropic.StreamParser()
    streamed = reduce_ok(parser.feed(ANT_START + ev("error", **{k: v for k, v in error.items() if k != "type"})))
    whole = anthropic.parse_response(orjson.dumps(error))
    for msg in (streamed, whole):
        (err,) = msg.to_dict()["metadata"]["agentmsg_errors"]
        assert (err["type"], err["message"], err["request_id"]) == ("overloaded_error", "Overloaded", "req_9")


F_TOOLS = [{"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]


def _assistant_turn(*blocks: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
    msgs = [UserMessage("q"), AssistantMessage(list(blocks))]
    msgs += [ToolResultMessage(ToolResultBlock(id=c.id, name="f", output="ok")) for c in calls]
    r = anthropic.format_request(msgs, tools=F_TOOLS)
    turn = r.body["messages"][1]["content"]
    shown = [(p["type"], p.get("thinking") or p.get("id") or p.get("text")) for p in turn]
    return shown, [(d.pointer, d.rule) for d in r.diagnostics if d.rule == "thinking-moved"]


def test_anthropic_interleaved_thinking_keeps_its_place() -> None:
    """Interleaved thinking (thinking after a tool_use in one reply) is sent back as the API returned it: Anthropic
    asks for each assistant turn back exactly as received, and moving a thinking block fails the prefix check of
    models with preserved thinking. (It was moved ahead of the first tool_use, said thinking-moved.)"""
    turn, moved = _assistant_turn(_thinking("1"), _call("1"), _thinking("2"), _call("2"))
    assert turn == [("thinking", "step 1"), ("tool_use", "toolu_1"), ("thinking", "step 2"), ("tool_use", "toolu_2")]
    assert moved == []
    turn, moved = _assistant_turn(_thinking("1"), TextBlock(text="a"), _thinking("2"), _call("1"))
    assert [t for t, _ in turn] == ["thinking", "text", "thinking", "tool_use"] and moved == []


def test_anthropic_a_message_not_starting_with_thinking_has_its_first_run_moved() -> None:
    """The API rejects an assistant message that holds thinking but starts otherwise ("the first block must be
    thinking or redacted_thinking"): its first run of thinking goes first (said), later thinking stays put."""
    turn, moved = _assistant_turn(TextBlock(text="a"), _thinking("1"), _call("1"), _thinking("2"), _call("2"))
    assert turn == [
        ("thinking", "step 1"),
        ("text", "a"),
        ("tool_use", "toolu_1"),
        ("thinking", "step 2"),
        ("tool_use", "toolu_2"),
    ]
    assert moved == [("/1/content/1", "thinking-moved")]


def test_anthropic_a_merged_turn_without_thinking_gets_the_first_run_first() -> None:
    """A turn that would hold thinking but not start with it is what the API rejects: when the first message of
    the turn has no thinking, the merged message's first run goes to the start of the turn, said once (it was
    said twice when that run did not open its message), later thinking in its place."""
    turn, said = _merged("anthropic", [TextBlock(text="a")], [_thinking("1"), TextBlock(text="b"), _thinking("2")])
    assert turn == [("thinking", "step 1"), ("text", "a"), ("text", "b"), ("thinking", "step 2")]
    assert said == [("/2/content/0", "thinking-moved"), ("/2", "turns-merged")]
    turn, said = _merged("anthropic", [TextBlock(text="a")], [TextBlock(text="b"), _thinking("1")])
    assert turn == [("thinking", "step 1"), ("text", "a"), ("text", "b")]
    assert said == [("/2/content/1", "thinking-moved"), ("/2", "turns-merged")]


def test_probe_anthropic_an_error_that_is_text_is_said_with_its_text() -> None:
    body = ANT_START + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"})
    msg, said = _run(anthropic.StreamParser(), body + ev("error", error="Overloaded") + ev("message_stop"))
    assert msg.text_content == "Hi" and msg.generate_reason.value == "INTERRUPTED" and said == ["order"]
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["Overloaded"]  # (it was '{}')


def test_anthropic_usage_of_many_keys_then_many_events_is_copied_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each message_delta's usage is merged into the counts so far and a copy handed on (converted at the end): the
    copy held every key any event gave, so one usage of 5,000 keys (no count among them) and 5,000 events after it
    copied 25 million keys. Only the counts read are kept now."""
    handed = []
    usage_later = _builder.StreamBuilder.usage_later

    def counted(self: _builder.StreamBuilder, convert: Any, raw: Any, input_key: str) -> None:
        handed.append(len(raw))
        usage_later(self, convert, raw, input_key)

    monkeypatch.setattr(_builder.StreamBuilder, "usage_later", counted)
    n = 5000
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": []}
    body = ev("message_start", message={**message, "usage": {"input_tokens": 7, "output_tokens": 1}})
    body += ev("message_delta", delta={}, usage={f"k{i}": {"n": i} for i in range(n)})
    body += b"".join(ev("message_delta", delta={}, usage={"output_tokens": i}) for i in range(n))
    body += ev("message_delta", delta={"stop_reason": "end_turn"}) + ev("message_stop")
    # (the Python parser: the whole-body C fast path of parse_stream keeps its own 4 counts, and calls no usage_later)
    (msg,) = agentmsg.reduce_events(list(run_parser(anthropic.StreamParser(), body)))
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (7, n - 1)
    assert len(handed) == n + 2 and sum(handed) <= 4 * len(handed), sum(handed)


def test_anthropic_server_tool_cut_or_odd_is_kept_and_said() -> None:
    """A server tool's block the stream cut before its input was whole keeps the start's input and says the rest
    (``incomplete``: nothing received is dropped unsaid); a delta of an unknown type for such a block is said once;
    a cut text block's citations follow it; the message_start of a message that comes whole keeps its server
    blocks too."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    head = [
        ev("message_start", message={"id": "msg_8", "model": "claude", "usage": {"input_tokens": 5}}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Searching."}),
        ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITE}),
        ev("content_block_stop", index=0),
        ev("content_block_start", index=1, content_block=use),
        ev("content_block_delta", index=1, delta={"type": "future_delta", "x": 1}),
        ev("content_block_delta", index=1, delta={"type": "future_delta", "x": 2}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '{"query": "sk'}),
    ]
    events = list(anthropic.parse_stream(b"".join(head)))
    msg = reduce_ok(events)
    assert [b.type for b in msg.content] == ["text", "thinking", "thinking"]
    assert (one(ThinkingBlock, msg.content[1]).metadata or {})["citations"] == [CITE]
    assert (one(ThinkingBlock, msg.content[2]).metadata or {})[
        "providerBlock"
    ] == use  # (its start's input: the rest was cut)
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert [p["rule"] for p in problems] == ["enum", "incomplete"]
    assert (
        "the input of a server_tool_use block is not kept, the stream ended before it was whole"
        in problems[1]["message"]
    )
    assert msg.generate_reason.value == "INTERRUPTED"
    # cut inside the cited text: its citations still follow it
    events = list(anthropic.parse_stream(b"".join(head[:4])))
    assert [b.type for b in reduce_ok(events).content] == ["text", "thinking"]
    # a message that comes whole in its message_start (its content there): server blocks kept in place
    whole: dict[str, Any] = {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "stop_reason": "end_turn",
    }
    whole["content"] = [{**use, "input": {"query": "sky"}}, {"type": "text", "text": "blue", "citations": [CITE]}]
    body = ev("message_start", message=whole) + ev("message_stop")
    msg = reduce_ok(list(anthropic.parse_stream(body)))
    assert [b.type for b in msg.content] == ["thinking", "text", "thinking"]
    assert msg.content == anthropic.parse_response(whole).content
