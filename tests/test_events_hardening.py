"""Regression tests for the event/SSE/stream reproductions of issue 8 ("Hardening"): every bad input ends
in a recorded problem (tolerant) or a ValidationError (strict), in bounded memory, with nothing lost."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import Reducer, SizeLimitError, SSEDecoder, ValidationError, encode_sse, reduce_events, reduce_stream
from agentmsg.events import stream as stream_mod

TS = "2025-01-01T00:00:00Z"


def ev(n: int, type_: str, **keys: Any) -> dict[str, Any]:
    return {"type": type_, "id": f"e{n}", "createdAt": TS, "replyId": "r", **keys}


def jsonl(events: list[Any]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def rules(r: Reducer) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in r.problems]


def reduced(events: list[Any]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Reduce one by one, through feed_many and through JSONL bytes: all three must agree."""
    out = []
    for how in ("feed", "feed_many", "jsonl"):
        r = Reducer()
        if how == "feed":
            for e in events:
                r.feed(e)
            msgs = r.finish()
        elif how == "feed_many":
            r.feed_many(events)
            msgs = r.finish()
        else:
            msgs = reduce_stream(jsonl(events), reducer=r, sse=False)
        for m in msgs:
            assert agentmsg.is_valid(orjson.loads(m.to_json_bytes()))
        dicts = [m.to_dict() for m in msgs]
        for d in dicts:
            if not d["id"].startswith("r"):
                d["id"] = "minted"  # a reply that carried no id gets a new one on each run
        out.append((dicts, rules(r)))
    assert out[0] == out[1] == out[2]
    return out[0]


# ---- 1. time and memory -------------------------------------------------------------------------------


def test_sse_line_without_newline_is_dropped_as_it_arrives() -> None:
    decoder = SSEDecoder(max_line_bytes=1 << 20)
    chunk = b"x" * 4096
    events = decoder.feed(b"data: ")
    for _ in range(2000):  # 8 MB, fed in 4 KB pieces: never buffered whole
        events += decoder.feed(chunk)
        assert len(decoder._line) <= (1 << 20) + len(chunk)
    events += decoder.feed(b"\n\ndata: after\n\n")
    assert [(e.data, e.problem and e.problem.rule) for e in events] == [("", "max-line-bytes"), ("after", None)]


def test_reduce_stream_sse_long_line_is_a_problem_and_the_rest_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_event_bytes", 1 << 16)
    good = encode_sse(
        [
            ev(0, "AGENT_START"),
            ev(1, "TEXT_BLOCK_START", blockId="t"),
            ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="kept"),
        ]
    )
    body = good.encode() + b"data: " + b"x" * 200_000 + b"\n\n" + encode_sse([ev(3, "AGENT_END")]).encode()
    r = Reducer()
    (msg,) = reduce_stream(io.BytesIO(body), reducer=r)
    assert msg.text_content == "kept"
    assert rules(r) == [("/3", "max-line-bytes")]
    with pytest.raises(SizeLimitError):
        reduce_stream(body, strict=True)


def test_jsonl_long_line_is_a_problem_in_every_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_event_bytes", 1 << 16)
    long_line = orjson.dumps(ev(1, "TEXT_BLOCK_DELTA", blockId="t", delta="y" * 100_000))
    body = (
        jsonl([ev(0, "AGENT_START")]) + long_line + b"\n" + jsonl([ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="z")])
    )
    for source in (body, io.BytesIO(body), [body[i : i + 1000] for i in range(0, len(body), 1000)]):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.text_content == "z"
        assert rules(r)[0] == ("/1", "max-event-bytes") and "line 2" in r.problems[0].message
    with pytest.raises(SizeLimitError):
        list(agentmsg.events.iter_jsonl(body))
    # Without a final newline the long line still does not end up buffered whole in a reader.
    r = Reducer()
    reduce_stream(io.BytesIO(body[: -len(b"\n")] + b"y" * 200_000), reducer=r)
    assert [p.rule for p in r.problems].count("max-event-bytes") == 2


def test_many_distinct_open_blocks_are_bounded() -> None:
    """10,000 TEXT_BLOCK_START lines with distinct ids: the routing table is never rebuilt and stays
    within the open-block limit; every block is kept, each one closed early is reported."""
    events = [ev(0, "AGENT_START")] + [ev(n, "TEXT_BLOCK_START", blockId=f"b{n}") for n in range(1, 10_001)]
    events += [ev(10_001, "TEXT_BLOCK_DELTA", blockId="b10000", delta="last")]
    r = Reducer()
    (msg,) = reduce_stream(jsonl(events), reducer=r)
    assert len(msg.content) == 10_000 and msg.content[-1].text == "last"
    limit = agentmsg.limits.max_open_blocks
    assert [p.rule for p in r.problems] == ["max-open-blocks"] * (10_000 - limit)
    with pytest.raises(SizeLimitError):
        reduce_events(events, strict=True)


# ---- 2. accepted but cannot be written -----------------------------------------------------------------


def test_usage_sum_saturates_at_java_long_max_and_is_reported() -> None:
    big = 2**63 - 1
    events = [ev(0, "AGENT_START")] + [ev(n, "MODEL_CALL_END", usage={"inputTokens": big}) for n in (1, 2, 3)]
    events.append(ev(4, "AGENT_END"))
    (msg,), problems = reduced(events)
    assert msg["usage"]["inputTokens"] == big
    assert problems == [("/2/usage/inputTokens", "maximum"), ("/3/usage/inputTokens", "maximum")]


def test_usage_beyond_64_bits_is_rejected_not_turned_into_a_float() -> None:
    line = b'{"type":"MODEL_CALL_END","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","usage":{"inputTokens":18446744073709551617}}\n'
    r = Reducer()
    (msg,) = reduce_stream(line, reducer=r)
    assert msg.usage is None and rules(r) == [("/0/usage/inputTokens", "type")]


# ---- 3. silently changed --------------------------------------------------------------------------------


def test_invalid_utf8_in_sse_data_is_reported_and_the_event_kept() -> None:
    body = encode_sse([ev(0, "AGENT_START")]).encode()
    body += b'data: {"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"a\xffb"}\n\n'
    r = Reducer()
    (msg,) = reduce_stream(body, reducer=r)
    assert msg.text_content == "a\ufffdb"
    assert rules(r) == [("/1", "utf-8"), ("/1/blockId", "order")]
    with pytest.raises(ValidationError) as info:
        reduce_stream(body, strict=True)
    assert info.value.problems[0].rule == "utf-8"


@pytest.mark.parametrize("bad", [b"\xff", b"\xed\xa0\x80"], ids=["invalid-byte", "cesu8-surrogate"])
def test_invalid_utf8_in_a_jsonl_line_is_reported_and_the_event_kept(bad: bytes) -> None:
    body = jsonl([ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t")])
    body += (
        b'{"type":"TEXT_BLOCK_DELTA","id":"e2","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"a'
        + bad
        + b'b"}\n'
    )
    for source in (body, io.BytesIO(body)):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.text_content.startswith("a\ufffd") and msg.text_content.endswith("b")
        assert rules(r) == [("/2", "utf-8")]


# ---- 6. the tolerant reducer never raises ------------------------------------------------------------


def _deep(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


ODD_EVENTS: list[list[dict[str, Any]]] = [
    [{"type": {"x": 1}, "id": "e1", "createdAt": TS}],
    [{"type": ["TEXT_BLOCK_DELTA"], "id": "e1", "createdAt": TS}],
    [ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_DELTA", blockId=["a"], delta="x")],
    [ev(0, "AGENT_START"), ev(1, "TOOL_CALL_DELTA", toolCallId={"a": 1}, delta="x")],
    [
        ev(0, "AGENT_START"),
        ev(1, "AGENT_RESULT", result={"id": "m", "role": "ASSISTANT", "content": [], "metadata": 5}),
    ],
    [
        ev(0, "TOOL_RESULT_START", toolCallId="c"),
        ev(1, "TOOL_RESULT_END", toolCallId="c", state="success", metadata=[1]),
    ],
    [ev(0, "THINKING_BLOCK_START", blockId="t"), ev(1, "THINKING_BLOCK_DELTA", blockId="t", delta="", signature=5)],
    [ev(0, "THINKING_BLOCK_DELTA", blockId="t", delta=5)],
    [ev(0, "DATA_BLOCK_DELTA", blockId="d", delta=None)],
    [ev(0, "TOOL_RESULT_DATA_DELTA", toolCallId="c", data={"type": "image", "source": 5})],
    [ev(0, "MODEL_CALL_END", usage={"inputTokens": "5"})],
    [ev(0, "MODEL_CALL_END", usage=5)],
    [ev(0, "AGENT_START", createdAt="2025-13-45T99:99:99Z")],
    [ev(0, "EXTERNAL_EXECUTION_RESULT", toolResults=[5, {"type": "text"}])],
    [ev(0, "USER_CONFIRM_RESULT", confirmResults=[5, {"toolCall": 5}])],
    [{"type": "AGENT_START", "id": "e0", "createdAt": TS, "replyId": "r", "metadata": {"a": float("nan")}}],
    [ev(0, "TEXT_BLOCK_START", blockId="t", metadata={"k": _deep(2000)})],
    [ev(0, "TOOL_CALL_DELTA", toolCallId="c", toolCallName=5, delta="x")],
]


@pytest.mark.parametrize("events", ODD_EVENTS, ids=range(len(ODD_EVENTS)))
def test_tolerant_reducer_never_raises(events: list[dict[str, Any]]) -> None:
    r = Reducer()
    for e in events:
        r.feed(e)
        snap = r.snapshot()
        if snap is not None:
            assert agentmsg.is_valid(snap.to_dict())
    for m in r.finish():
        m.to_json()
        assert agentmsg.is_valid(m.to_dict())
    assert r.problems, "bad input must be reported"
    r2 = Reducer()
    r2.feed_many(events)
    r2.finish()
    assert rules(r2) == rules(r)


def test_agent_result_with_bad_metadata_does_not_stick() -> None:
    r = Reducer()
    r.feed(ev(0, "AGENT_START"))
    r.feed(ev(1, "AGENT_RESULT", result={"id": "m", "role": "ASSISTANT", "content": [], "metadata": 5, "name": "N"}))
    r.feed(ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="x"))
    assert r.snapshot() is not None
    r.feed(ev(3, "AGENT_END"))
    (msg,) = r.finish()
    assert msg.name == "N" and msg.text_content == "x"
    assert ("/1/result/metadata", "type") in rules(r)


def test_cli_reduce_of_invalid_utf8_prints_messages(tmp_path: Any) -> None:
    from tests._support.cli import run

    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        jsonl([ev(0, "AGENT_START")])
        + b'{"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"\xed\xa0\x80"}\n'
        + b"\xff\xfe\n"
    )
    out = run("reduce", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stdout.splitlines()) == 1 and "[utf-8]" in out.stderr and "[json]" in out.stderr


# ---- 7. nothing lost silently ----------------------------------------------------------------------------


def test_tool_result_with_a_bogus_state_keeps_its_text_and_reports() -> None:
    events = [
        ev(0, "AGENT_START"),
        ev(1, "TOOL_RESULT_START", toolCallId="c", toolCallName="f"),
        ev(2, "TOOL_RESULT_TEXT_DELTA", toolCallId="c", delta="IMPORTANT"),
        ev(3, "TOOL_RESULT_END", toolCallId="c", state="bogus"),
        ev(4, "AGENT_END"),
    ]
    (msg,), problems = reduced(events)
    assert msg["content"][0]["output"] == [{"type": "text", "text": "IMPORTANT"}]
    assert ("/3/state", "enum") in problems


@pytest.mark.parametrize(
    ("bad", "pointer", "rule"),
    [
        (ev(3, "TOOL_CALL_END", toolCallId="c", input="oops"), "/3/input", "type"),
        (ev(3, "TOOL_CALL_END", toolCallId="c", toolCallName=5), "/3/toolCallName", "type"),
    ],
)
def test_bad_tool_call_values_are_reported_and_the_call_kept(bad: dict[str, Any], pointer: str, rule: str) -> None:
    events = [
        ev(0, "AGENT_START"),
        ev(1, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(2, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a": 1}'),
        bad,
        ev(4, "TOOL_CALL_END", toolCallId="c"),
        ev(5, "AGENT_END"),
    ]
    (msg,), problems = reduced(events)
    (call,) = msg["content"]
    assert call["name"] == "f" and call["input"] == {"a": 1}
    assert (pointer, rule) in problems


def test_bad_thinking_provider_and_media_type_are_reported() -> None:
    events = [
        ev(0, "AGENT_START"),
        ev(1, "THINKING_BLOCK_START", blockId="t", provider=5),
        ev(2, "THINKING_BLOCK_DELTA", blockId="t", delta="hm"),
        ev(3, "DATA_BLOCK_START", blockId="d", mediaType=5),
        ev(4, "DATA_BLOCK_DELTA", blockId="d", delta="AAAA"),
        ev(5, "AGENT_END"),
    ]
    (msg,), problems = reduced(events)
    assert msg["content"][0]["thinking"] == "hm" and msg["content"][1]["source"]["data"] == "AAAA"
    assert [p for p in problems if p[1] != "order"] == [("/1/provider", "type"), ("/3/mediaType", "type")]


def test_base64_fragments_each_valid_alone_but_not_joined() -> None:
    events = [
        ev(0, "DATA_BLOCK_START", blockId="d", mediaType="image/png"),
        ev(1, "DATA_BLOCK_DELTA", blockId="d", delta="QQ=="),
        ev(2, "DATA_BLOCK_DELTA", blockId="d", delta="QQ=="),
        ev(3, "DATA_BLOCK_END", blockId="d"),
    ]
    (msg,), problems = reduced(events)
    assert msg["content"][0]["source"]["data"] == "QQ=="
    assert problems == [("/2/delta", "pattern")]


def test_salvage_reports_in_problems_not_only_in_metadata() -> None:
    events = [
        ev(0, "DATA_BLOCK_START", blockId="d", mediaType="image/png"),
        ev(1, "DATA_BLOCK_DELTA", blockId="d", delta="QUJD"),
        ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="kept"),
    ]
    # A data block whose media type is valid for the event but not for the block: left out, reported.
    events[0]["mediaType"] = "not a media type"
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    if len(msg.content) == 1:  # the block schema rejected it: it must be reported
        assert any(p.pointer == "/0" for p in r.problems)
    assert msg.text_content == "kept"


# ---- 8. disagreements ------------------------------------------------------------------------------------------


EVENTS = [
    ev(0, "AGENT_START", name="F"),
    ev(1, "TEXT_BLOCK_START", blockId="t"),
    ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="héllo"),
    ev(3, "TEXT_BLOCK_END", blockId="t"),
    ev(4, "AGENT_END"),
]


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7])
def test_sse_is_detected_however_the_first_chunk_is_cut(split: int) -> None:
    body = encode_sse(EVENTS).encode()
    pieces = [body[i : i + split] for i in range(0, len(body), split)]
    r = Reducer()
    (msg,) = reduce_stream(iter(pieces), reducer=r)
    assert msg.text_content == "héllo" and r.problems == []
    assert [e["id"] for e in agentmsg.events.read_events(iter(pieces))] == [e["id"] for e in EVENTS]
    # JSONL fed one byte at a time, too (and a BOM split across chunks).
    data = b"\xef\xbb\xbf" + jsonl(EVENTS)
    (msg,) = reduce_stream(iter([data[i : i + split] for i in range(0, len(data), split)]))
    assert msg.text_content == "héllo"


def _stream_with_replay(distance: int, deltas: int = 6000) -> list[dict[str, Any]]:
    events = [ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t")]
    events += [ev(n, "TEXT_BLOCK_DELTA", blockId="t", delta=f"{n},") for n in range(2, deltas + 2)]
    # A reconnect replays the events of the last `distance` positions.
    events += events[len(events) - distance :]
    events += [ev(deltas + 2, "TEXT_BLOCK_END", blockId="t"), ev(deltas + 3, "AGENT_END")]
    return events


@pytest.mark.parametrize("distance", [1, 3, 500, 4095, 4096])
def test_replays_within_the_window_are_ignored_on_every_path(distance: int) -> None:
    events = _stream_with_replay(distance)
    expected = "".join(f"{n}," for n in range(2, 6002))
    (msg,), problems = reduced(events)
    assert msg["content"][0]["text"] == expected and problems == []
    with pytest.MonkeyPatch.context() as mp:
        for chunk in (97, 4096, 1 << 17):
            mp.setattr(stream_mod, "CHUNK", chunk)
            (got,) = reduce_stream(jsonl(events))
            assert got.text_content == expected


def test_replay_far_back_is_treated_the_same_on_every_path_and_memory_is_bounded() -> None:
    events = _stream_with_replay(10_000, deltas=12_000)
    reduced(events)  # feed, feed_many and the fast path agree, whatever the window remembers
    r = Reducer()
    r.feed_many(_stream_with_replay(1, deltas=50_000))
    window = r._st.window
    assert len(window.current) < 4096 and len(window.previous) <= 4096


def test_no_fragment_is_lost_where_text_is_joined() -> None:
    """Streams far longer than the 512-fragment join, with tool calls and thinking interleaved."""
    events = [ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t"), ev(2, "THINKING_BLOCK_START", blockId="h")]
    events += [ev(3, "TOOL_CALL_START", toolCallId="c", toolCallName="f")]
    text, thinking, args = [], [], ['{"a": "']
    events.append(ev(4, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a": "'))
    for n in range(5, 7000):
        piece = f"<{n}>"
        kind = n % 3
        if kind == 0:
            text.append(piece)
            events.append(ev(n, "TEXT_BLOCK_DELTA", blockId="t", delta=piece))
        elif kind == 1:
            thinking.append(piece)
            events.append(ev(n, "THINKING_BLOCK_DELTA", blockId="h", delta=piece))
        else:
            args.append(piece)
            events.append(ev(n, "TOOL_CALL_DELTA", toolCallId="c", delta=piece))
    events.append(ev(7000, "TOOL_CALL_DELTA", toolCallId="c", delta='"}'))
    events += [ev(7001, "TOOL_CALL_END", toolCallId="c"), ev(7002, "AGENT_END")]
    (msg,), problems = reduced(events)
    assert problems == []
    assert msg["content"][0]["text"] == "".join(text) and msg["content"][1]["thinking"] == "".join(thinking)
    assert msg["content"][2]["input"] == {"a": "".join(args[1:])}
    # A snapshot at every 613th event sees every fragment so far.
    r = Reducer()
    for n, e in enumerate(events):
        r.feed(e)
        if n % 613 == 0 and n > 5:
            snap = r.snapshot()
            assert snap is not None
            so_far = "".join(x["delta"] for x in events[: n + 1] if x["type"] == "TEXT_BLOCK_DELTA")
            assert snap.content[0].text == so_far


def test_line_numbers_do_not_drift_after_blank_lines_across_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [orjson.dumps(ev(0, "AGENT_START"))]
    for n in range(1, 400):
        lines.append(orjson.dumps(ev(n, "TEXT_BLOCK_DELTA", blockId="t", delta="x")))
        if n % 7 == 0:
            lines.append(b"")
            lines.append(b"   ")
        if n % 50 == 0:
            lines.append(b"{not json %d" % n)
    body = b"\n".join(lines) + b"\n"
    expected = [str(i + 1) for i, line in enumerate(lines) if line.startswith(b"{not")]
    for chunk in (64, 333, 4096, 1 << 17):
        monkeypatch.setattr(stream_mod, "CHUNK", chunk)
        for source in (body, io.BytesIO(body)):
            r = Reducer()
            reduce_stream(source, reducer=r)
            bad = [p for p in r.problems if p.rule == "json"]
            assert [p.message.split(":")[0].removeprefix("line ") for p in bad] == expected


def test_incomplete_sse_event_is_reported_not_as_a_size_limit() -> None:
    body = encode_sse(EVENTS).encode() + b'data: {"type":'
    r = Reducer()
    (msg,) = reduce_stream(body, reducer=r)
    assert msg.text_content == "héllo" and rules(r) == [("/5", "incomplete")]
    with pytest.raises(ValidationError) as info:
        reduce_stream(body, strict=True)
    assert not isinstance(info.value, SizeLimitError) and info.value.problems[0].rule == "incomplete"


def test_invalid_value_under_a_numeric_looking_key_is_left_out() -> None:
    events = [ev(0, "AGENT_START"), ev(1, "THINKING_BLOCK_END", blockId="t", metadata={"0": 1, "signature": 5})]
    events.insert(1, ev(2, "THINKING_BLOCK_START", blockId="t"))
    (msg,), problems = reduced(events)
    # Left out when the message is built (salvage), reported at the event that started the block.
    assert problems == [("/1", "type")]
    assert msg["content"][0]["metadata"] == {"0": 1}


def test_a_leading_bom_is_not_part_of_the_first_line() -> None:
    data = b"\xef\xbb\xbf" + jsonl(EVENTS)
    for source in (data, io.BytesIO(data), iter([data[:1], data[1:2], data[2:]])):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.name == "F" and r.problems == []
    assert len(list(agentmsg.events.iter_jsonl(data))) == len(EVENTS)


def test_problem_messages_do_not_quote_huge_values() -> None:
    big = "x" * 1_000_000
    r = Reducer()
    r.feed_many([ev(0, "AGENT_START", name=[big]), ev(1, "TOOL_CALL_START", toolCallId="c", toolCallName="f")])
    r.feed(ev(2, "TOOL_CALL_END", toolCallId="c", state=big))
    r.finish()
    assert r.problems and all(len(p.message) < 1000 for p in r.problems)


def test_a_start_with_a_wrong_name_keeps_the_calls_arguments() -> None:
    """Found by the fuzz suite (seed 777002997): a wrong name used to make the built block invalid, so
    salvage dropped it with every argument delta."""
    events = [
        ev(0, "AGENT_START"),
        ev(1, "TOOL_CALL_START", toolCallId="B", toolCallName=2**63),
        ev(2, "TOOL_CALL_DELTA", toolCallId="B", delta='{"y": 2}'),
        ev(3, "TOOL_CALL_END", toolCallId="B"),
        ev(4, "TOOL_RESULT_START", toolCallId="B", toolCallName=5),
        ev(5, "TOOL_RESULT_TEXT_DELTA", toolCallId="B", delta="out"),
        ev(6, "TOOL_RESULT_END", toolCallId="B", state="success"),
        ev(7, "AGENT_END"),
    ]
    (msg,), problems = reduced(events)
    assert [b["type"] for b in msg["content"]] == ["tool_use", "tool_result"]
    assert msg["content"][0]["input"] == {"y": 2} and msg["content"][1]["output"] == [{"type": "text", "text": "out"}]
    assert problems == [("/1/toolCallName", "type"), ("/4/toolCallName", "type")]


def test_values_json_cannot_carry_are_left_out_and_reported() -> None:
    """Found by the fuzz suite (seed 4242013383): events fed as Python objects may hold integers beyond
    64 bits or lone surrogates, which a message could not be written with: such an integer is left out, a
    lone surrogate replaced by U+FFFD (rule lone-surrogate, as @agentmsg/client does)."""
    events = [
        ev(0, "AGENT_START"),
        ev(1, "REQUIRE_USER_CONFIRM", toolCalls=[], signature=2**64 + 1),
        ev(2, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(3, "TOOL_CALL_END", toolCallId="c", metadata={"k": "\ud800", "ok": 1}),
        ev(4, "AGENT_END"),
    ]
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    msg.to_json()
    assert msg.content[0].metadata == {"k": "\ufffd", "ok": 1}
    assert [(p.pointer, p.rule) for p in r.problems if p.rule in ("json-value", "lone-surrogate")] == [
        ("/3/metadata/k", "lone-surrogate"),  # the event's schema check
        ("/2", "lone-surrogate"),  # the message's value: replaced
        ("/0", "json-value"),
    ]


def _stream_with_text(text_deltas: list[str], args: str) -> bytes:
    head = [
        {"type": "AGENT_START", "id": "e0", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "e1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "t"},
    ]
    deltas = [
        {
            "type": "TEXT_BLOCK_DELTA",
            "id": f"d{i}",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "t",
            "delta": d,
        }
        for i, d in enumerate(text_deltas)
    ]
    tail = [
        {"type": "TEXT_BLOCK_END", "id": "e2", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "t"},
        {
            "type": "TOOL_CALL_START",
            "id": "e3",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "toolCallId": "c",
            "toolCallName": "f",
        },
        {
            "type": "TOOL_CALL_DELTA",
            "id": "e4",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "toolCallId": "c",
            "delta": args,
        },
        {"type": "TOOL_CALL_END", "id": "e5", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "toolCallId": "c"},
        {"type": "AGENT_END", "id": "e6", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
    ]
    return b"\n".join(orjson.dumps(e) for e in head + deltas + tail)


def test_reducing_keeps_one_copy_of_non_ascii_text_and_a_bounded_peak() -> None:
    """The message is built from checked deltas without writing its text through orjson (which keeps a
    UTF-8 copy inside every non-ASCII str it writes) and without orjson's reader (about 13 bytes of memory
    per byte read); large tool arguments are checked by the walk, which writes nothing: the strings hold no
    second copy, and the peak stays a small multiple of the message."""
    import sys
    import tracemalloc

    data = _stream_with_text(["25°C, sunny. "] * 20_000, orjson.dumps({"log": "25°C " * 20_000}).decode())
    tracemalloc.start()
    try:
        (msg,) = reduce_stream(io.BytesIO(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = msg.content[0].text
    assert text == "25°C, sunny. " * 20_000
    # a Latin-1 str is its characters plus a fixed header; a cached UTF-8 copy would add len + extra bytes
    assert sys.getsizeof(text) < len(text) + 100
    assert msg.content[1].input == {"log": "25°C " * 20_000}
    assert sys.getsizeof(msg.content[1].input["log"]) < 100_000 + 100  # nor do the parsed arguments
    assert peak < 6 * len(msg.to_json_bytes())


def test_a_usage_count_beyond_64_bits_is_ignored_as_objects_as_in_json_text() -> None:
    """A count that is no 64-bit integer is not summed (rule type) whether the events are JSON text (the parser
    reads it as a float) or objects (a Python int beyond 64 bits, which was summed and kept at 2^63-1)."""
    events = [
        ev(1, "AGENT_START"),
        ev(2, "MODEL_CALL_END", usage={"inputTokens": 10**20, "outputTokens": 3}),
        ev(3, "AGENT_END"),
    ]
    as_objects, as_text = Reducer(), Reducer()
    for e in events:
        as_objects.feed(e)
    text = "".join(json.dumps(e) + "\n" for e in events)  # (orjson cannot write 10**20)
    reduce_stream(text.encode(), reducer=as_text)
    (a,), (b,) = as_objects.finish(), as_text.finish()
    assert a.to_dict() == b.to_dict()
    assert a.usage is not None and a.usage.input_tokens is None and a.usage.output_tokens == 3
    assert rules(as_text) == [("/1/usage/inputTokens", "type")]
    assert rules(as_objects) == [("/1/usage/inputTokens", "integer-range"), ("/1/usage/inputTokens", "type")]
