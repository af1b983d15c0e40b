"""A provider error mid-stream ends the reply; Gemini's streamed arguments with a repeated path; DashScope's
cached-token count; Anthropic thinking replayed in the model's order (interleaved thinking)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from agentmsg import AssistantMessage, ToolResultMessage, UserMessage
from agentmsg.blocks import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.providers import anthropic, dashscope, gemini, openai
from agentmsg.providers._response.partial_json import json_fragment_writer
from tests.test_providers_odd import reduce_ok


def data(payload: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


def ant(kind: str, **fields: Any) -> bytes:
    return data({"type": kind, **fields}, kind)


def oai(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return data({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra})


def gem(text: str, finish: str | None = None) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return data({"candidates": [cand], "responseId": "g1", "modelVersion": "gemini-x"})


def dsc(content: str, finish: str = "null", event: str = "result") -> bytes:
    payload = {"output": {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}]}}
    return (
        f"event:{event}\n:HTTP_STATUS/200\n".encode()
        + b"data:"
        + orjson.dumps({**payload, "request_id": "r1"})
        + b"\n\n"
    )


ANT_START = ant(
    "message_start", message={"id": "msg_1", "model": "claude", "content": [], "usage": {"input_tokens": 3}}
) + ant("content_block_start", index=0, content_block={"type": "text", "text": ""})

#: provider -> (parser, the payloads before the error, the error, the payloads after it)
STREAMS: dict[str, tuple[Any, bytes, bytes, bytes]] = {
    "anthropic": (
        anthropic.StreamParser,
        ANT_START + ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        ant("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ant("content_block_delta", index=0, delta={"type": "text_delta", "text": " more"})
        + ant("content_block_stop", index=0)
        + ant("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9})
        + ant("message_stop"),
    ),
    "anthropic-untyped": (  # an error object without its event type (a proxy's; one on lines of no SSE field)
        anthropic.StreamParser,
        ANT_START + ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
        data({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ant("content_block_delta", index=0, delta={"type": "text_delta", "text": " more"}) + ant("message_stop"),
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
        gem("Hi"),
        data({"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}),
        gem(" more", "STOP"),
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
    events = parser.feed(before + error + b": keep-alive\n\n" + b"data: [DONE]\n\n" + ant("ping")) + parser.close()
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


def test_anthropic_an_error_keeps_its_request_id() -> None:
    """Anthropic's error event names the request beside the error (``request_id``, what its support asks for):
    kept in the error, streamed and whole; it was dropped unsaid."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_9"}
    parser = anthropic.StreamParser()
    streamed = reduce_ok(parser.feed(ANT_START + ant("error", **{k: v for k, v in error.items() if k != "type"})))
    whole = anthropic.parse_response(orjson.dumps(error))
    for msg in (streamed, whole):
        (err,) = msg.to_dict()["metadata"]["agentmsg_errors"]
        assert (err["type"], err["message"], err["request_id"]) == ("overloaded_error", "Overloaded", "req_9")


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


def test_gemini_a_json_array_stops_at_the_error() -> None:
    """streamGenerateContent without alt=sse (a JSON array of responses) read whole: the responses after an
    error are skipped and said, as in the stream."""
    items = [
        orjson.loads(gem("Hi")[6:]),
        {"error": {"code": 500, "message": "boom"}},
        orjson.loads(gem("!", "STOP")[6:]),
    ]
    events = gemini.response_events(orjson.dumps(items))
    msg = reduce_ok(events)
    assert (msg.text_content, msg.generate_reason.value) == ("Hi", "INTERRUPTED")
    said = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert [s["rule"] for s in said] == ["order"] and "after the provider's error" in said[0]["message"]


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


# ---- Gemini partialArgs: a path given again, out of order ------------------------------------------


def write(*updates: tuple[Any, ...]) -> tuple[str, list[str]]:
    """The text the updates write (checked to be one JSON object, each key once) and the notes; the text is the
    object of every update, or the writer says that object (:meth:`changed`), which is then returned as text."""
    w = json_fragment_writer()
    out = []
    for path, value, *more in updates:
        out.append(w.add(path, value, is_string=isinstance(value, str), more=bool(more and more[0])))
    out.append(w.close())
    text = "".join(out)
    once(text)
    changed = w.changed()
    return (text if changed is None else orjson.dumps(changed).decode()), [rule for rule, _ in w.notes]


def once(text: str) -> None:
    """``text`` is JSON whose objects hold each key once (a repeated key was written: the text said two values)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        assert len(keys) == len(set(keys)), f"a key written twice: {text!r}"
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)


@pytest.mark.parametrize(
    ("updates", "value", "said"),
    [
        ([("$.city", "Paris"), ("$.city", "Rome")], {"city": "Rome"}, ["duplicate"]),
        ([("$.city", "Paris"), ("$.n", 1), ("$.city", "Rome")], {"city": "Rome", "n": 1}, ["duplicate"]),
        ([("$.a.x", 1), ("$.b", 2), ("$.a.y", 3)], {"a": {"x": 1, "y": 3}, "b": 2}, ["order"]),
        ([("$.a[0]", 1), ("$.a[1]", 2), ("$.a[0]", 9)], {"a": [9, 2]}, ["duplicate"]),
        ([("$.a[1]", "b"), ("$.a[0]", "a")], {"a": ["a", "b"]}, ["order"]),
        ([("$.a", 1), ("$.a.b", 2)], {"a": {"b": 2}}, ["order"]),
        ([("$.s", "ab", True), ("$.s", "cd"), ("$.s", "X", True), ("$.s", "Y")], {"s": "XY"}, ["duplicate"]),
        ([("$.a", "1"), ("$.a", "2", True), ("$.a", "3"), ("$.b", 5)], {"a": "23", "b": 5}, ["duplicate"]),
        # what Gemini sends: a string in pieces, the last one (empty) without willContinue; nothing said
        (
            [("$.c", "USA", True), ("$.c", ""), ("$.m[0][0]", 1), ("$.m[0][1]", 2), ("$.m[1][0]", 3)],
            {"c": "USA", "m": [[1, 2], [3]]},
            [],
        ),
    ],
)
def test_partial_args_the_last_value_of_a_path_wins(updates: list[Any], value: Any, said: list[str]) -> None:
    """The arguments are the object every update builds, the last value of a path winning (as a JSON parser reads
    a repeated key): the streamed text, read by a JSON parser, is that object; an update that could not be
    appended (a path given again, a container already complete, an index out of order) is noted once."""
    text, notes = write(*updates)
    assert orjson.loads(text) == value
    assert notes == said


def _gem_call(fc: dict[str, Any], finish: str | None = None) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"functionCall": fc}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return data({"candidates": [cand], "responseId": "g1"})


def test_gemini_a_repeated_argument_path_is_said_and_the_last_value_wins() -> None:
    arg = lambda path, value: {"jsonPath": path, "stringValue": value}  # noqa: E731
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


# ---- DashScope: cached input tokens -----------------------------------------------------------------


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


# ---- Anthropic: thinking in the model's order ---------------------------------------------------------


def _thinking(n: str) -> ThinkingBlock:
    return ThinkingBlock(thinking=f"step {n}", metadata={"signature": f"sig{n}", "provider": "anthropic"})


def _call(n: str) -> ToolUseBlock:
    return ToolUseBlock(id=f"toolu_{n}", name="f", input={})


TOOLS = [{"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]


def _assistant_turn(*blocks: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
    msgs = [UserMessage("q"), AssistantMessage(list(blocks))]
    msgs += [ToolResultMessage(ToolResultBlock(id=c.id, name="f", output="ok")) for c in calls]
    r = anthropic.format_request(msgs, tools=TOOLS)
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


def _merged(provider: str, *messages: list[Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The first assistant turn of ``q`` + consecutive assistant ``messages`` (merged into it), and the diagnostics."""
    from tests.oracles import formatted

    r = formatted(provider, [UserMessage("q"), *(AssistantMessage(blocks) for blocks in messages)])
    turn = r.body["messages" if provider == "anthropic" else "contents"][1]
    shown = []
    for p in turn["content" if provider == "anthropic" else "parts"]:
        kind = p.get("type") or ("thought" if p.get("thought") else "text")
        shown.append((kind, p.get("thinking") or p.get("text") or ""))
    return shown, [(d.pointer, d.rule) for d in r.diagnostics]


def test_anthropic_thinking_opening_a_merged_message_stays_in_its_place() -> None:
    """Consecutive assistant messages (a continuation after pause_turn, say) go in one turn, as the API itself
    would combine them. When that turn starts with thinking, thinking that opens the second message stays after
    the first message's blocks, where the model produced it: moved ahead of them, its prefix would change (the
    preserved-thinking check). Only the merge is said. (It was moved to the start of the turn, said thinking-moved.)"""
    turn, said = _merged("anthropic", [_thinking("1"), TextBlock(text="a")], [_thinking("2"), TextBlock(text="b")])
    assert turn == [("thinking", "step 1"), ("text", "a"), ("thinking", "step 2"), ("text", "b")]
    assert said == [("/2", "turns-merged")]
    # a thinking block is sent byte for byte with its signature, in its place
    r = anthropic.format_request(
        [UserMessage("q"), AssistantMessage([_thinking("1")]), AssistantMessage([_thinking("2"), _call("1")])]
    )
    assert r.body["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "step 1", "signature": "sig1"},
        {"type": "thinking", "thinking": "step 2", "signature": "sig2"},
    ]


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


def _thought(n: str) -> ThinkingBlock:
    return ThinkingBlock(thinking=f"step {n}", metadata={"signature": "c2lnbmF0dXJl", "provider": "gemini"})


def test_gemini_thought_parts_keep_their_order() -> None:
    """Gemini asks for a response's parts back as they came, in their order (thought signatures docs): a thought
    part stays where it was, in a message and in a merged turn; nothing is moved, so nothing is said but the merge.
    (Every thought part was moved to the start of its turn.)"""
    turn, said = _merged("gemini", [TextBlock(text="a"), _thought("1"), TextBlock(text="b")])
    assert turn == [("text", "a"), ("thought", "step 1"), ("text", "b")] and said == []
    turn, said = _merged("gemini", [_thought("1"), TextBlock(text="a")], [_thought("2"), TextBlock(text="b")])
    assert turn == [("thought", "step 1"), ("text", "a"), ("thought", "step 2"), ("text", "b")]
    assert said == [("/2", "turns-merged")]
    r = gemini.format_request([UserMessage("q"), AssistantMessage([TextBlock(text="a"), _thought("1")])])
    assert r.body["contents"][1]["parts"] == [
        {"text": "a"},
        {"text": "step 1", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"},
    ]


def test_partial_args_held_strings_and_gaps_stay_linear_in_the_input() -> None:
    """Held updates (after a repeat) keep a string that arrives in pieces as its pieces, joined once when written
    (appending to a str held in a dict copies it each time: quadratic in a long streamed value); an index
    beyond an array's end pads it with nulls only within the size of the updates received, so an index of
    10**9 (a 20-byte update) is skipped and said, not a billion nulls."""
    import tracemalloc

    from agentmsg.providers._response import partial_json as _partial_json

    w = json_fragment_writer()
    text = w.add("$.a", 1, is_string=False, more=False)
    text += w.add("$.a", 2, is_string=False, more=False)  # a repeat: from here on, updates are held
    n = 20_000
    for i in range(n):
        text += w.add("$.body", "xy", is_string=True, more=i < n - 1)
    held = w._tree["body"]
    assert isinstance(held, _partial_json._Pieces) and len(held.parts) == n  # pieces, not a str copied n times
    text += w.close()
    once(text)
    assert orjson.loads(text) == {"a": 1, "body": "xy" * n}  # the streamed text keeps a's first value
    assert w.changed() == {"a": 2, "body": "xy" * n}  # the call's input: the last

    tracemalloc.start()
    try:
        w = json_fragment_writer()
        assert w.add("$.a[1000000000]", 1, is_string=False, more=False) == ""
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert [rule for rule, _ in w.notes] == ["order"] and w.notes[0][1].endswith(": skipped")
    text, said = write(("$.a[2]", "c"), ("$.a[0]", "a"), ("$.a[1]", "b"))  # a small gap: padded, then filled
    assert orjson.loads(text) == {"a": ["a", "b", "c"]} and said == ["order"]


# ---- an adversarial probe of the code above (each case failed before its fix) ----------------------------


def _pa(parts: list[dict[str, Any]], more: bool, name: str | None = None) -> bytes:
    fc: dict[str, Any] = {"partialArgs": parts, "willContinue": more}
    if name:
        fc["name"] = name
    return _gem_call(fc)


def _oc(tool_calls: list[dict[str, Any]] | None, finish: str | None = None) -> bytes:
    delta = {"tool_calls": tool_calls} if tool_calls else {}
    return data({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _run(parser: Any, body: bytes) -> tuple[AssistantMessage, list[str]]:
    events = parser.feed(body) + parser.close()
    return reduce_ok(events), [p.rule for p in parser.problems]


def test_probe_gemini_held_updates_deep_paths_odd_indexes_and_plain_text_errors() -> None:
    held = _pa([{"jsonPath": "$.a", "stringValue": "one"}], True, "f") + _pa(
        [{"jsonPath": "$.a", "stringValue": "two"}], True
    )
    held += _pa([{"jsonPath": "$.b", "stringValue": "HELD"}], True)
    # held updates are kept when the reply ends at an error or a cut (they were dropped)
    for end in (data({"error": {"code": 500, "message": "x", "status": "INTERNAL"}}), b""):
        msg, _ = _run(gemini.StreamParser(), held + end)
        (call,) = msg.content
        assert orjson.loads(call.content + "}") == {"a": "two", "b": "HELD"}
    # a path deeper than a message holds is skipped and said; the finish reason still counts (orjson's recursion
    # limit raised at close: the payload, its STOP and the held values were lost)
    deep = _pa([{"jsonPath": "$.a", "numberValue": 1}], True, "f") + _pa([{"jsonPath": "$.a", "numberValue": 2}], True)
    deep += _pa([{"jsonPath": "$.b" + ".c" * 300, "numberValue": 3}], False) + gem(" after", "STOP")
    msg, said = _run(gemini.StreamParser(), deep)
    assert msg.generate_reason.value == "TOOL_CALLS" and msg.content[0].input == {"a": 2}
    assert said == ["duplicate", "max-depth"]
    # an index of digits that are not ASCII ("²": int() refused it and the payload was skipped) is a key
    odd = _pa([{"jsonPath": "$.a[²]", "numberValue": 1}], False, "f") + gem("", "STOP")
    msg, said = _run(gemini.StreamParser(), odd)
    assert msg.content[0].input == {"a": {"²": 1}} and said == []
    # an error that is plain text ends the reply (it was ignored, the text after it applied)
    msg, said = _run(gemini.StreamParser(), gem("a") + data({"error": "quota exceeded"}) + gem("c", "STOP"))
    assert msg.text_content == "a" and msg.generate_reason.value == "INTERRUPTED" and said == ["order"]
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["quota exceeded"]


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
    assert [(c.id, c.name, c.input) for c in msg.content] == [("x", "f", {"a": 1}), ("x-2", "g", {"b": 2})]
    assert said == ["id"]
    # a nameless fragment under another key joins the open call, and that key's later fragments stay with it
    body = _oc([{**f, "function": {"name": "f", "arguments": '{"a":'}}])
    body += _oc([{"index": 1, "id": "x", "function": {"arguments": "1"}}])
    body += _oc([{"index": 1, "function": {"arguments": "}"}}]) + _oc(None, "tool_calls") + b"data: [DONE]\n\n"
    msg, said = _run(openai.StreamParser(), body)
    assert [(c.id, c.name, c.input) for c in msg.content] == [("x", "f", {"a": 1})] and said == []
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
        assert said == [rule] and msg.content[0].content == args and "argumentsError" in msg.content[0].metadata


def test_probe_anthropic_an_error_that_is_text_is_said_with_its_text() -> None:
    body = ANT_START + ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"})
    msg, said = _run(anthropic.StreamParser(), body + ant("error", error="Overloaded") + ant("message_stop"))
    assert msg.text_content == "Hi" and msg.generate_reason.value == "INTERRUPTED" and said == ["order"]
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["Overloaded"]  # (it was '{}')


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
    # limit made the event invalid against the AgentEvent schema)
    from agentmsg import validate

    events = list(mod.parse_stream(body, reply_id="r"))
    for e in events:
        validate(e, "event")
    errors = [e["value"] for e in events if e.get("name") == "agentmsg.error"]
    assert errors and errors[0]["message"] == "m"
    assert not {"code", "request_id"} & errors[0].keys()
    if mod is not openai:  # (OpenAI's parser leaves such a code out itself)
        assert any(
            e["value"]["rule"] == "type" and "not a scalar" in e["value"]["message"]
            for e in events
            if e.get("name") == "agentmsg.problem"
        )
