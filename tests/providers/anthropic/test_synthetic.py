"""The Anthropic reader on synthetic streams against the official SDK's accumulator (anthropic
``accumulate_event``); tests/providers/anthropic/test_recorded.py does the same on recorded ones.

Hypothesis builds *valid* streams the way Anthropic varies them, and each one is read three ways: the
accumulator fed the payloads as dicts (the reference snapshot); ``reduce_events(parse_stream(body))`` compared
with it field by field and with ``parse_response(snapshot)``; the same body cut into random byte chunks and
``agentmsg parse`` (in process): the same messages.

What is varied: thinking (text deltas, then a ``signature_delta``, rarely two: the last wins), redacted
thinking, text (possibly empty), tool_use with ``input_json_delta`` split anywhere or with empty input (no delta,
one empty delta, ``{}``), ``ping`` events anywhere, ``message_delta`` with usage (input counts repeated or not)
and every stop reason; deltas of another block's type, before a block's start or after its stop; SSE written as
servers write it.

Where agentmsg deliberately differs from the SDK, the comparison says so where it is made: no empty text blocks;
a call that received no argument text has ``content`` None (the SDK: ``""``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentmsg
from agentmsg import reduce_events
from tests._support.providers import (
    ARGS_OBJECT,
    COUNT,
    IDENT,
    SETTINGS,
    TEXT,
    TOOL_NAME,
    all_of,
    cli_messages,
    comparable,
    cut_body,
    every_choice,
    json_text,
    module,
    one,
    reduce_checked,
    same_with_and_without_routes,
    split,
    sse_body,
)

STOP = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]


SIGNATURE = st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), min_size=1)


@st.composite
def anthropic_block(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One content block's events: content_block_start, its deltas, content_block_stop."""
    kind = draw(st.sampled_from(["thinking", "redacted_thinking", "text", "text", "tool_use", "tool_use"]))
    deltas: list[dict[str, Any]] = []
    if kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        thinking = draw(TEXT)
        deltas = [{"type": "thinking_delta", "thinking": p} for p in (draw(split(thinking)) if thinking else ())]
        # one signature_delta, as the API sends it; more than one: the last is the signature (as the SDK)
        deltas += [
            {"type": "signature_delta", "signature": s} for s in draw(st.lists(SIGNATURE, min_size=1, max_size=2))
        ]
    elif kind == "redacted_thinking":
        start = {"type": "redacted_thinking", "data": draw(SIGNATURE)}
    elif kind == "text":
        start = {"type": "text", "text": ""}
        text = draw(TEXT)  # may be empty: a text block with no delta
        deltas = [{"type": "text_delta", "text": p} for p in (draw(split(text)) if text else ())]
    else:
        start = {"type": "tool_use", "id": f"toolu_{index}_{draw(IDENT)}", "name": draw(TOOL_NAME), "input": {}}
        args = draw(ARGS_OBJECT)
        # empty input, as the API varies it: no delta, one empty delta, "{}" whole or split
        empty = st.sampled_from([[], [""], ["{}"], ["{", "}"]])
        pieces = draw(split(draw(json_text(args)))) if args else draw(empty)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


@st.composite
def anthropic_stream(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bytes]:
    """A Messages stream: its events (for the SDK) and its SSE body (for agentmsg)."""
    usage: dict[str, Any] = {"input_tokens": draw(COUNT), "output_tokens": draw(st.integers(0, 5))}
    if draw(st.booleans()):
        usage["cache_creation_input_tokens"] = draw(COUNT)
        usage["cache_read_input_tokens"] = draw(COUNT)
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_" + draw(IDENT),
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    events: list[dict[str, Any]] = [start]
    blocks = [draw(anthropic_block(i)) for i in range(draw(st.integers(0, 5)))]
    for block in blocks:  # blocks come one after another, pings anywhere between events
        for e in block:
            if draw(st.integers(0, 5)) == 0:
                events.append({"type": "ping"})
            events.append(e)
    reason = draw(st.sampled_from(STOP))
    final_usage: dict[str, Any] = {"output_tokens": draw(COUNT)}
    if draw(st.booleans()):  # newer API versions repeat the (cumulative) input counts
        final_usage["input_tokens"] = usage["input_tokens"]
        for k in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            if k in usage:
                final_usage[k] = usage[k]
    stop_sequence = "###" if reason == "stop_sequence" else None
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": stop_sequence},
            "usage": final_usage,
        }
    )
    events.append({"type": "message_stop"})
    return events, draw(sse_body([(e["type"], e) for e in events]))


def anthropic_snapshot(events: list[dict[str, Any]]) -> dict[str, Any]:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    bufs: dict[int, bytes] = {}
    for e in events:
        if e["type"] == "ping":
            continue  # the SDK's stream drops pings before accumulating
        snapshot = accumulate_event(event=e, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None
    return snapshot.to_dict()  # type: ignore[no-any-return]


def check_anthropic(events: list[dict[str, Any]], body: bytes) -> None:
    pytest.importorskip("anthropic.lib.streaming._messages", reason="the official anthropic package is not installed")
    mod = module("anthropic")
    whole = anthropic_snapshot(events)
    parsed = list(mod.parse_stream(body))
    # a valid stream reports no error or problem; the stop sequence that ended it is said as not kept
    said = [e["value"]["message"] for e in parsed if e["type"] == "CUSTOM"]
    stop_sequence = whole.get("stop_sequence")
    assert said == (
        [
            f"the stop sequence that ended the reply (stop_sequence: {orjson.dumps(stop_sequence).decode()}) is not kept (the message has no place for it)"
        ]
        if stop_sequence
        else []
    )
    streamed = reduce_checked(parsed)
    assert comparable(streamed) == comparable(mod.parse_response(whole))
    # the snapshot's blocks, field by field; agentmsg creates no empty text block (the SDK keeps one)
    theirs = [b for b in whole["content"] if not (b["type"] == "text" and not b["text"])]
    assert [b.type for b in streamed.content] == [
        {"redacted_thinking": "thinking"}.get(b["type"], b["type"]) for b in theirs
    ]
    for ours_b, b in zip(streamed.content, theirs, strict=True):
        if b["type"] == "thinking":
            thinking = one(agentmsg.ThinkingBlock, ours_b)
            assert thinking.thinking == b["thinking"]
            assert agentmsg.thinking_signature(thinking) == b["signature"]
        elif b["type"] == "redacted_thinking":
            redacted = one(agentmsg.ThinkingBlock, ours_b)
            assert redacted.thinking == "" and redacted.metadata is not None
            assert redacted.metadata.get("redacted") is True
            assert redacted.metadata.get("redactedData") == b["data"]
        elif b["type"] == "text":
            assert one(agentmsg.TextBlock, ours_b).text == b["text"]
        else:
            call = one(agentmsg.ToolUseBlock, ours_b)
            assert (call.id, call.name, call.input) == (b["id"], b["name"], b["input"])
            assert "argumentsError" not in (call.metadata or {})
    meta = streamed.to_dict()["metadata"]
    assert meta["agentmsg_finish_reason"] == whole["stop_reason"]
    tool_reason = whole["stop_reason"] == "tool_use" or (
        whole["stop_reason"] in ("end_turn", "stop_sequence") and streamed.blocks("tool_use")
    )
    assert streamed.generate_reason == ("TOOL_CALLS" if tool_reason else "MODEL_STOP")
    u = whole["usage"]
    cached = u.get("cache_read_input_tokens")
    total_in = u["input_tokens"] + (u.get("cache_creation_input_tokens") or 0) + (cached or 0)
    got = streamed.usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens) == (total_in, u["output_tokens"])
    assert got.cached_tokens == cached


@pytest.mark.fuzz
@pytest.mark.oracle
@SETTINGS
@given(anthropic_stream(), st.lists(st.integers(0, 1 << 20), max_size=12))
def test_anthropic_synthetic_equals_accumulate_event(stream: Any, cuts: list[int]) -> None:
    events, body = stream
    check_anthropic(events, body)
    mod = module("anthropic")
    whole = every_choice(list(mod.parse_stream(body)))
    assert every_choice(list(mod.parse_stream(cut_body(body, cuts)))) == whole
    assert cli_messages("anthropic", body) == whole


@pytest.mark.differential
@pytest.mark.kernel_only
@pytest.mark.fuzz
@SETTINGS
@given(anthropic_stream(), st.lists(st.integers(0, 1 << 20), max_size=12))
def test_anthropic_text_deltas_read_in_c_as_in_python(stream: Any, cuts: list[int]) -> None:
    """The text deltas in the API's bytes are read in C (``_speedups.json_string_between``, see
    ``PayloadReader.route_text``) where it was built: the events are those of the Python path (orjson and
    the reader's ``chunk``), whole and cut into chunks anywhere."""
    from agentmsg.providers._response import parser as _stream

    if _stream._string_between is None:
        pytest.skip("agentmsg._speedups is not built (or AGENTMSG_PURE_PYTHON is set): only the Python path runs")
    _, body = stream
    same_with_and_without_routes(module("anthropic"), body, cut_body(body, cuts))


#: Deltas of a type that does not belong to the block: the SDK's accumulator applies a delta only to a block of
#: its kind (it ignores the others), and so does agentmsg, saying so.
MISPLACED = {
    "text": ["input_json_delta", "thinking_delta", "signature_delta"],
    "thinking": ["text_delta", "input_json_delta"],
    "redacted_thinking": ["text_delta", "thinking_delta", "signature_delta", "input_json_delta"],
    "tool_use": ["text_delta", "thinking_delta", "signature_delta"],
}


MISPLACED_DELTA = {
    "text_delta": {"type": "text_delta", "text": "misplaced"},
    "thinking_delta": {"type": "thinking_delta", "thinking": "misplaced"},
    "signature_delta": {"type": "signature_delta", "signature": "MISPLACED"},
    "input_json_delta": {"type": "input_json_delta", "partial_json": '{"misplaced": 1}'},
}


@st.composite
def with_misplaced_deltas(draw: st.DrawFn, events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[Any]]:
    """``events`` with deltas of the wrong type sent to blocks while they are open (between their
    content_block_start and content_block_stop), and the (block index, delta type) pairs sent."""
    out: list[dict[str, Any]] = []
    sent: set[Any] = set()
    open_kinds: dict[int, str] = {}
    for e in events:
        if e["type"] == "content_block_stop":
            open_kinds.pop(e["index"], None)
        out.append(e)
        if e["type"] == "content_block_start":
            open_kinds[e["index"]] = e["content_block"]["type"]
        for index, kind in open_kinds.items():
            if draw(st.integers(0, 3)) == 0:
                dkind = draw(st.sampled_from(MISPLACED[kind]))
                out.append({"type": "content_block_delta", "index": index, "delta": MISPLACED_DELTA[dkind]})
                sent.add((index, dkind))
    return out, sent


@pytest.mark.fuzz
@SETTINGS
@given(st.data())
def test_anthropic_deltas_of_another_blocks_type_are_skipped_as_the_sdk_skips_them(data: st.DataObject) -> None:
    """Hand-made streams may send a delta to a block of another type (a ``thinking_delta`` to a text block,
    an ``input_json_delta`` to a thinking block). The SDK's accumulator ignores it. agentmsg made a block of
    the delta's kind at that index: a text block inside a tool call's place, or a call with no name. Now the
    message equals the one without those deltas (itself checked against the SDK above), and the SDK's snapshot
    does too; each (block, delta type) is one problem, rule ``order``."""
    pytest.importorskip("anthropic.lib.streaming._messages", reason="the official anthropic package is not installed")
    clean, _ = data.draw(anthropic_stream())
    events, sent = data.draw(with_misplaced_deltas(clean))
    mod = module("anthropic")
    assert anthropic_snapshot(events) == anthropic_snapshot(clean)
    body = data.draw(sse_body([(e["type"], e) for e in events]))
    parsed = list(mod.parse_stream(body))
    clean_parsed = list(mod.parse_stream(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in clean)))
    got, want = every_choice(parsed), every_choice(clean_parsed)
    notes = [note for m in got for note in m["metadata"].pop("agentmsg_notes", [])]  # (the clean body's, and below)
    clean_notes = [note for m in want for note in m["metadata"].pop("agentmsg_notes", [])]
    assert got == want
    problems = [e["value"] for e in parsed if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert [n for n in notes if n not in problems] == clean_notes and [n for n in notes if n in problems] == problems
    assert all(p["rule"] == "order" and p["message"].endswith("skipped (and any more like it)") for p in problems)
    assert sorted(p["message"].split(",")[0] for p in problems) == sorted(
        f"{dkind} for block {index}" for index, dkind in sent
    )


def test_anthropic_deltas_before_start_or_after_stop_are_kept_or_skipped_and_said() -> None:
    """A text or reasoning fragment for a block that did not start, or that has stopped, is kept in a block of
    its own; arguments and signatures there have no call or block to go to and are skipped; all said
    (rule ``order``), once per block, delta type and case. (The SDK raises for a block that did not start,
    and appends to a stopped one.)"""

    def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": d}

    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}}
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        delta(0, {"type": "text_delta", "text": "A"}),
        {"type": "content_block_stop", "index": 0},
        delta(0, {"type": "text_delta", "text": "B"}),
        delta(0, {"type": "text_delta", "text": "C"}),
        delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
        delta(3, {"type": "thinking_delta", "thinking": "T"}),
        delta(4, {"type": "signature_delta", "signature": "S"}),
        delta(5, {"type": "input_json_delta", "partial_json": "{}"}),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    parsed = list(module("anthropic").parse_stream(body))
    msg = reduce_checked(parsed)
    assert [(b.type, getattr(b, "text", None) or getattr(b, "thinking", None)) for b in msg.content] == [
        ("text", "A"),
        ("text", "BC"),
        ("thinking", "T"),
    ]
    assert msg.generate_reason == "MODEL_STOP"
    assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == [
        ("order", "text_delta for block 0 after its content_block_stop: kept in a block of its own"),
        ("order", "input_json_delta for block 0 after its content_block_stop: skipped (and any more like it)"),
        (
            "order",
            "thinking_delta for block 3, which did not start (no content_block_start before it): kept in a block"
            " of its own",
        ),
        (
            "order",
            "signature_delta for block 4, which did not start (no content_block_start before it): skipped (and"
            " any more like it)",
        ),
        (
            "order",
            "input_json_delta for block 5, which did not start (no content_block_start before it): skipped (and"
            " any more like it)",
        ),
    ]


@pytest.mark.oracle
def test_anthropic_signature_is_a_whole_value_the_last_one_wins() -> None:
    """Regression: ``signature_delta`` carries the block's whole signature (the SDK's accumulator sets it,
    a later one replacing an earlier one or the start's). agentmsg appended every signature it saw
    (``"S0" + "AB" + "CD"``); the builder now holds a block's whole signature and sends it once when the
    block ends, also when the stream is cut before ``content_block_stop``."""
    start: dict[str, Any] = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []},
    }
    start["message"].update(stop_reason=None, stop_sequence=None, usage={"input_tokens": 1, "output_tokens": 1})
    thinking = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "a", "signature": "S0"},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "b"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "AB"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "CD"}},
    ]
    end: list[dict[str, Any]] = [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    events: list[dict[str, Any]] = [start, *thinking, *end]
    body = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)
    check_anthropic(events, body)
    (block,) = all_of(agentmsg.ThinkingBlock, reduce_checked(list(module("anthropic").parse_stream(body))).content)
    assert (block.thinking, agentmsg.thinking_signature(block)) == ("ab", "CD")
    cut = body[: body.index(b"event: content_block_stop")]
    (msg,) = reduce_events(list(module("anthropic").parse_stream(cut)))
    assert [(b.thinking, agentmsg.thinking_signature(b)) for b in all_of(agentmsg.ThinkingBlock, msg.content)] == [
        ("ab", "CD")
    ]
    assert msg.to_dict()["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_anthropic_reader_subclass_reads_every_text_delta_through_chunk() -> None:
    """A subclass of the Anthropic reader may read payloads its own way: every text delta reaches its chunk().
    The C text route (PayloadReader.route_text: the next text deltas of a block read by the parser, no chunk()
    call) is the plain Reader's alone, which takes it where the C kernels are built."""
    from agentmsg.providers import anthropic, get
    from agentmsg.providers._response import reader
    from agentmsg.providers._response.parser import StreamParser

    seen: list[str] = []

    class Counting(anthropic.Reader):
        def chunk(self, event: str, obj: dict[str, Any]) -> None:
            seen.append(obj.get("type", event))
            super().chunk(event, obj)

    payloads: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in "abc"),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    frames = [b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in payloads]
    spec = get("anthropic").spec
    parser = StreamParser(Counting, spec)
    events = parser.feed(b"".join(frames)) + parser.close()
    assert seen.count("content_block_delta") == 3 and parser.reader.route is None
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_BLOCK_DELTA") == "abc"
    plain = StreamParser(anthropic.Reader, spec)
    plain.feed(b"".join(frames[:3]))  # up to the first text delta
    assert (plain.reader.route is not None) is (reader._between is not None)  # the plain reader routes the next (in C)


def test_a_content_block_start_for_a_block_that_has_not_stopped_is_said() -> None:
    """A second content_block_start for a block index whose block has not stopped (a replaying proxy, two streams
    joined) had its content joined to the open block's, unsaid: text "A", then a new block's "X" and its delta "Y",
    read as one text "AXY"; a tool call started over an open text block took the text's place. It is said (rule order)
    and the open block ends there, as its content_block_stop would end it: each block keeps its own content."""

    def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": d}

    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}}
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        delta(0, {"type": "text_delta", "text": "A"}),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "X"}},
        delta(0, {"type": "text_delta", "text": "Y"}),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "f"}},
        delta(0, {"type": "input_json_delta", "partial_json": '{"a": 1}'}),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    parsed = list(module("anthropic").parse_stream(body))
    msg = reduce_checked(parsed)
    assert [(b.type, getattr(b, "text", None) or getattr(b, "content", None)) for b in msg.content] == [
        ("text", "A"),
        ("text", "XY"),
        ("tool_use", '{"a": 1}'),
    ]
    assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == [
        (
            "order",
            "a content_block_start ('text') for block 0, whose 'text' block has not stopped: that block ends there,"
            " the new one is kept after it",
        ),
        (
            "order",
            "a content_block_start ('tool_use') for block 0, whose 'text' block has not stopped: that block ends"
            " there, the new one is kept after it",
        ),
    ]


def test_a_payload_of_no_event_type_after_message_start_is_said() -> None:
    """A payload whose type is missing (and no SSE event line names it) or no string (a number, a null) was skipped
    unsaid once message_start had come: its text (" lost" here) gone with no note. Unknown event types (a string: a
    newer API's) are still skipped quietly, as the SDK skips them; these are said (rule type), once per kind; a payload
    without its type that an SSE event line names is read by that name, and said so."""

    def data(payload: dict[str, Any], event: str | None = None) -> bytes:
        return (f"event: {event}\n".encode() if event else b"") + b"data: " + orjson.dumps(payload) + b"\n\n"

    delta = {"index": 0, "delta": {"type": "text_delta", "text": " lost"}}
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}}
    body = b"".join(
        [
            data(start),
            data({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            data({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
            data(delta),
            data({"type": 5, **delta}),
            data({"type": None, **delta}),
            data({"type": "content_block_delta_v2", **delta}),
            data({**delta, "delta": {"type": "text_delta", "text": " kept"}}, "content_block_delta"),
            data({"type": "content_block_stop", "index": 0}),
            data({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
            data({"type": "message_stop"}),
        ]
    )
    parsed = list(module("anthropic").parse_stream(body))
    assert reduce_checked(parsed).text_content == "Hello kept"
    assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == [
        ("type", "a payload of no event type (its type missing): skipped"),
        ("type", "a payload of no event type (its type a JSON number): skipped"),
        ("type", "a payload of no event type (its type a JSON null): skipped"),
        ("type", "a payload of no type, read as the content_block_delta its SSE event line names"),
    ]


def test_a_tool_use_of_no_input_is_kept_with_input_empty_and_said() -> None:
    """A tool_use block with no input (the key missing, or null; the API always sends an object) was read as input
    {} unsaid, whole or streamed. The SDK's accumulator keeps its input None; a call's input is an object, so {} is
    kept (a call of no arguments) and that is said (rule shape), once per block. Streamed, input_json_delta after
    such a start give the input: nothing is rewritten, nothing said."""
    from anthropic.lib.streaming._messages import accumulate_event

    def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", **block}}

    def stop(index: int) -> dict[str, Any]:
        return {"type": "content_block_stop", "index": index}

    def calls(msg: agentmsg.AssistantMessage) -> list[tuple[str, Any]]:
        return [(b.name, b.input) for b in msg.content if isinstance(b, agentmsg.ToolUseBlock)]

    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []}
    events = [
        {"type": "message_start", "message": {**message, "usage": {"input_tokens": 1, "output_tokens": 0}}},
        start(0, {"id": "t0", "name": "f"}),
        stop(0),
        start(1, {"id": "t1", "name": "g", "input": None}),
        stop(1),
        start(2, {"id": "t2", "name": "h"}),
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
        stop(2),
        start(3, {"id": "t3", "name": "k", "input": {}}),
        stop(3),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    snapshot: Any = None
    for e in events:
        snapshot = accumulate_event(event=e, current_snapshot=snapshot, json_bufs={})
    assert [b.input for b in snapshot.content] == [None, None, {"a": 1}, {}]  # (the SDK's: None kept)

    said = [
        ("shape", "tool_use block 0 ('f') has no input (missing): its call is kept with input {}"),
        ("shape", "tool_use block 1 ('g') has no input (null): its call is kept with input {}"),
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    mod = module("anthropic")
    for parsed in (list(mod.parse_stream(body)), list(mod.parse_stream([bytes([c]) for c in body]))):
        msg = reduce_checked(parsed)
        assert calls(msg) == [("f", {}), ("g", {}), ("h", {"a": 1}), ("k", {})]
        assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == said

    blocks = [
        {"type": "tool_use", "id": "t0", "name": "f"},
        {"type": "tool_use", "id": "t1", "name": "g", "input": None},
        {"type": "tool_use", "id": "t3", "name": "k", "input": {}},
    ]
    whole = {
        **message,
        "content": blocks,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    parsed = mod.response_events(orjson.dumps(whole))
    assert calls(reduce_checked(parsed)) == [("f", {}), ("g", {}), ("k", {})]
    assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == said


def test_a_payload_of_no_type_named_by_its_sse_event_line_is_read_by_that_name_and_said() -> None:
    """A payload without its type that an SSE event line names was read by that name unsaid (the SDK builds its
    events from the payload alone: it drops such a one). It is still read so, nothing lost, and said (rule type, once
    per name): whole, cut byte by byte, and with or without the C text routes (AGENTMSG_PURE_PYTHON=1 reads as the
    Python path). A ping named so is not said: it holds nothing."""

    def data(payload: dict[str, Any], event: str | None = None) -> bytes:
        return (f"event: {event}\n".encode() if event else b"") + b"data: " + orjson.dumps(payload) + b"\n\n"

    def delta(text: str) -> dict[str, Any]:
        return {"index": 0, "delta": {"type": "text_delta", "text": text}}

    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}}
    body = b"".join(
        [
            data(start, "message_start"),
            data({"index": 0, "content_block": {"type": "text", "text": ""}}, "content_block_start"),
            data({"type": "content_block_delta", **delta("Hello")}, "content_block_delta"),
            data(delta(" there"), "content_block_delta"),
            data({}, "ping"),
            data(delta(" again"), "content_block_delta"),
            data({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            data({"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}, "message_delta"),
            data({"type": "message_stop"}, "message_stop"),
        ]
    )
    mod = module("anthropic")
    said = [
        ("type", f"a payload of no type, read as the {name} its SSE event line names")
        for name in ("content_block_start", "content_block_delta", "message_delta")
    ]
    for parsed in (list(mod.parse_stream(body)), list(mod.parse_stream([bytes([c]) for c in body]))):
        msg = reduce_checked(parsed)
        assert msg.text_content == "Hello there again"
        assert msg.usage is not None and msg.usage.output_tokens == 3
        assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == said
    same_with_and_without_routes(mod, body, [bytes([c]) for c in body])
