"""The event reducer against the language-neutral vectors in tests/conformance/reducer/."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    Msg,
    Reducer,
    SizeLimitError,
    TextBlock,
    ToolUseBlock,
    ValidationError,
    emit_events,
    reduce_events,
    reduce_stream,
)
from agentmsg.events import CUT_RULE
from agentmsg.events import stream as stream_mod
from tests._support.events import (
    CASES,
    PROPOSED,
    TS,
    _jsonable,
    _validator,
    base_streams,
    by_stream,
    comparable,
    ev,
    events_of,
    jsonl,
    load,
    problems_of,
    reference_lines,
    rules,
    seeded,
    writable,
)
from tests._support.mutators import garble_events


def matches(actual: Any, expected: Any) -> bool:
    """Equality where the expected string "*" matches any string (implementation-defined texts)."""
    if expected == "*":
        return isinstance(actual, str)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(matches(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(matches(a, b) for a, b in zip(actual, expected, strict=True))
        )
    return bool(actual == expected) and (
        type(actual) is type(expected) or {type(actual), type(expected)} <= {int, float}
    )


def test_there_are_vectors_for_every_case_the_issue_names() -> None:
    assert {
        "java-case5",
        "java-case5-duplicate-type-jsonl",
        "interleaved-parallel-tool-calls",
        "multi-iteration-reply",
        "invalid-tool-arguments",
        "tool-result-text-and-data",
        "duplicate-events-ignored",
        "interrupted-stream",
        "several-replies",
        "require-user-confirm",
        "bad-input-tolerant",
        "missing-reply-id",
        "thinking-signature-delta",
        "java-interleaved-tool-calls",  # Java 2.x's tool-call block lifecycle (docs/events.md rule 3)
        "delta-of-another-kind",
    } <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_vector_tolerant(name: str) -> None:
    case = load(name)
    reducer = Reducer()
    reducer.feed_many(events_of(case))
    messages = reducer.finish()
    got = [orjson.loads(m.to_json_bytes()) for m in messages]
    assert len(got) == len(case["expected"])
    for actual, expected in zip(got, case["expected"], strict=True):
        assert matches(actual, expected), f"\n got      {json.dumps(actual)}\n expected {json.dumps(expected)}"
        assert agentmsg.is_valid(actual)
    assert [{"pointer": p.pointer, "rule": p.rule} for p in reducer.problems] == case["problems"]
    if "problem_messages" in case:  # (said word for word alike in every runtime)
        assert [p.message for p in reducer.problems] == case["problem_messages"]
    if "checks" in case:  # (check_results, said word for word alike in every runtime)
        assert [{"pointer": p.pointer, "rule": p.rule, "message": p.message} for p in reducer.check_results()] == case[
            "checks"
        ]


@pytest.mark.parametrize("name", CASES)
def test_vector_events_are_schema_valid_or_named_bad(name: str) -> None:
    case = load(name)
    strict = case.get("strict")
    if strict is None:
        for event in events_of(case):
            agentmsg.validate(event, "event")
        strict_out = [m.to_dict() for m in reduce_events(events_of(case), strict=True)]
        assert strict_out == [m.to_dict() for m in reduce_events(events_of(case))]
        return
    reducer = Reducer(strict=True)
    with pytest.raises(agentmsg.ValidationError) as info:
        reducer.feed_many(events_of(case))
    assert any(p.pointer == strict["pointer"] and p.rule == strict["rule"] for p in info.value.problems), [
        str(p) for p in info.value.problems
    ]
    # Nothing received before the error is lost: the messages are those of the events before it.
    partial = reducer.finish()
    before = events_of(case)[: int(strict["pointer"].split("/")[1])]
    assert all(isinstance(m, AssistantMessage) for m in partial)
    assert [m.to_dict() for m in partial] == [m.to_dict() for m in reduce_events(before)]


@pytest.mark.parametrize("name", CASES)
def test_vector_through_bytes_jsonl_and_sse(name: str) -> None:
    case = load(name)
    if "events" in case and not writable(case["events"]):
        # Events as objects with lone surrogates: JSON text cannot carry them (orjson will not write them, and
        # a lone surrogate escape is not valid JSON: such a line is skipped, rule lone-surrogate, as agentmsg
        # validate says it).
        r = Reducer()
        reduce_stream("".join(json.dumps(e) + "\n" for e in case["events"]).encode(), reducer=r)
        assert "lone-surrogate" in {p.rule for p in r.problems}
        assert "json" not in {p.rule for p in r.problems}
        return
    jsonl = case.get("jsonl") or "".join(orjson.dumps(e).decode() + "\n" for e in case["events"])
    expected = [m.to_dict() for m in reduce_events(events_of(case))]
    via_jsonl = [m.to_dict() for m in reduce_stream(jsonl.encode())]
    via_sse = [m.to_dict() for m in reduce_stream(agentmsg.encode_sse(events_of(case)).encode())]
    # Byte for byte, ids included: the reducer mints no random ids (docs/events.md rule 8).
    assert via_jsonl == expected and via_sse == expected


def test_javascript_problems_differ_only_by_precision() -> None:
    """problems_javascript (what a JS runtime reports where its numbers cannot hold a value) is the shared
    problems plus `precision` entries at usage counts, nothing else."""
    seen = 0
    for name in CASES:
        case = load(name)
        if "problems_javascript" not in case:
            continue
        seen += 1
        js = case["problems_javascript"]
        assert [p for p in js if p["rule"] != "precision"] == case["problems"], name
        assert all("/usage/" in p["pointer"] for p in js if p["rule"] == "precision"), name
    assert seen


def test_snapshot_is_consistent_at_every_step() -> None:
    events = events_of(load("multi-iteration-reply"))
    reducer = Reducer()
    texts = []
    for event in events[:-1]:
        reducer.feed(event)
        snap = reducer.snapshot()
        assert snap is not None and agentmsg.is_valid(snap.to_dict())
        texts.append(snap.text_content)
    assert texts[6] == "Checking." and texts[-1] == "Checking.\nIt is sunny."
    # Taking snapshots does not disturb the result.
    reducer.feed(events[-1])
    assert reducer.snapshot() is None
    assert reducer.finish()[0].to_dict() == reduce_events(events)[0].to_dict()


def test_tool_arguments_are_parsed_only_at_the_end() -> None:
    reducer = Reducer()
    for event in [
        {"type": "AGENT_START", "id": "1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
        {
            "type": "TOOL_CALL_START",
            "id": "2",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "m",
            "toolCallId": "c",
            "toolCallName": "f",
        },
        {
            "type": "TOOL_CALL_DELTA",
            "id": "3",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "m",
            "toolCallId": "c",
            "delta": '{"a": ',
        },
    ]:
        reducer.feed(event)
    snap = reducer.snapshot()
    assert snap is not None
    call = snap.content[0]
    assert isinstance(call, ToolUseBlock)
    assert call.content == '{"a": ' and call.input == {} and "argumentsError" not in call.metadata


def test_generated_event_objects_are_accepted() -> None:
    from agentmsg_models.agent_event import AgentStartEvent, TextBlockDeltaEvent, TextBlockStartEvent

    out = reduce_events(
        [
            AgentStartEvent(id="1", created_at="2025-01-01T00:00:00Z", reply_id="r"),
            TextBlockStartEvent(id="2", created_at="2025-01-01T00:00:00Z", reply_id="r", block_id="text"),
            TextBlockDeltaEvent(id="3", created_at="2025-01-01T00:00:00Z", reply_id="r", block_id="text", delta="x"),
        ]
    )
    assert out[0].text_content == "x"


def test_unknown_type_strict_names_the_rule() -> None:
    with pytest.raises(agentmsg.ValidationError) as info:
        reduce_events([{"type": "RUN_STARTED", "id": "1", "createdAt": "2025-01-01T00:00:00Z"}], strict=True)
    assert info.value.problems[0].pointer == "/0/type" and info.value.problems[0].rule == "enum"


def test_bad_jsonl_line_is_reported_and_the_rest_kept() -> None:
    good = [
        {"type": "AGENT_START", "id": "1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "2", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "text"},
        {
            "type": "TEXT_BLOCK_DELTA",
            "id": "3",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "text",
            "delta": "kept",
        },
    ]
    data = (
        b"\n".join(orjson.dumps(e) for e in good[:2])
        + b"\n{not json\n"
        + orjson.dumps(good[2])
        + b'\n{"type":"TEXT_BLOCK_DELTA","id":"4","delta":'
    )
    reducer = Reducer()
    messages = reduce_stream(data, reducer=reducer)
    assert messages[0].text_content == "kept"
    assert messages[0].generate_reason.value == "INTERRUPTED"
    assert [p.rule for p in reducer.problems] == ["json", "json", "incomplete_stream"]  # (no AGENT_END: cut)
    assert "line 3" in reducer.problems[0].message


def test_tolerant_reducer_survives_odd_ids_and_names() -> None:
    """Found by a differential run against the TypeScript reducer: nothing here may raise, and every
    value left out is reported."""
    events = [
        {"type": "AGENT_START", "id": {"x": 1}, "createdAt": "2025-01-01T00:00:00Z", "replyId": True, "name": {"a": 1}},
        {
            "type": "TEXT_BLOCK_START",
            "id": ["a"],
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "text",
        },
        {
            "type": "TEXT_BLOCK_DELTA",
            "id": "3",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "text",
            "delta": "ok",
        },
    ]
    for feed_many in (True, False):
        reducer = Reducer()
        if feed_many:
            reducer.feed_many(events)
        else:
            for e in events:
                reducer.feed(e)
        (msg,) = reducer.finish()
        assert msg.text_content == "ok" and msg.name is None and msg.id
        # Nothing is dropped silently: the ill-typed name and replyId are reported (and ignored) too.
        assert [(p.pointer, p.rule) for p in reducer.problems] == [
            ("/0/id", "type"),
            ("/0/name", "type"),
            ("/0/replyId", "type"),
            ("/1/id", "type"),
            ("/0", "incomplete_stream"),  # the stream ended inside the reply
        ]


def test_reducer_handles_exactly_the_schema_event_types() -> None:
    from agentmsg.events._handlers import HANDLERS

    schema_types = agentmsg.schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"]
    assert set(HANDLERS) == set(schema_types), "a new event type in the schema needs a reducer rule (and a vector)"


def test_an_unhashable_event_type_is_reported_not_raised() -> None:
    """Found by the differential run against the TypeScript reducer (tests/jsclient/test_reducer.py)."""
    reducer = Reducer()
    reducer.feed_many([{"type": ["TEXT_BLOCK_DELTA"], "id": "a"}, {"type": {"x": 1}, "id": "b"}])
    assert [(p.pointer, p.rule) for p in reducer.problems] == [("/0/type", "enum"), ("/1/type", "enum")]


@pytest.mark.parametrize("path", sorted(PROPOSED.glob("*.json")) or [None], ids=lambda p: p.stem if p else "none")
def test_proposed_vectors(path: Any) -> None:
    """Vectors for rules the TypeScript reducer does not have yet (proposed/README.md): Python runs them,
    through feed_many and through JSONL bytes. The README lists the pending ones ("Pending: none." when
    every vector has moved up into the shared set)."""
    readme = (PROPOSED / "README.md").read_text(encoding="utf-8")
    if path is None:
        assert "Pending: none." in readme
        return
    assert f"`{path.stem}`" in readme and "Pending: none." not in readme
    case = json.loads(path.read_text(encoding="utf-8"))
    r = Reducer()
    r.feed_many(case["events"])
    got = [orjson.loads(m.to_json_bytes()) for m in r.finish()]
    assert len(got) == len(case["expected"]) and all(matches(a, e) for a, e in zip(got, case["expected"], strict=True))
    assert [{"pointer": p.pointer, "rule": p.rule} for p in r.problems] == case["problems"]
    r2 = Reducer()
    again = reduce_stream(b"".join(orjson.dumps(e) + b"\n" for e in case["events"]), reducer=r2)
    assert [orjson.loads(m.to_json_bytes()) for m in again] == got and r2.problems == r.problems


def _e(i: int, kind: str, **keys: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{i}", "createdAt": "2025-01-01T00:00:00Z", **keys}


def test_reply_end_values_of_the_wrong_kind_are_reported_not_taken() -> None:
    """Round-2 rule 3: only strings (objects for agentmsg_errors) reach the metadata; the rest is reported."""
    reducer = Reducer()
    reducer.feed_many(
        [
            _e(0, "AGENT_START", replyId="r"),
            _e(1, "MODEL_CALL_START", replyId="m", modelName=5),
            _e(2, "CUSTOM", name="agentmsg.error", value="cut"),
            _e(3, "CUSTOM", name="agentmsg.error", value={"message": "kept"}),
            _e(4, "REQUEST_STOP", reason=["x"]),
            _e(5, "MODEL_CALL_END", replyId="m", metadata={"finishReason": None, "model": "m-1"}),
            _e(6, "AGENT_END", replyId="r"),
        ]
    )
    (msg,) = reducer.finish()
    assert msg.metadata == {
        "agentmsg_model": "m-1",
        "agentmsg_errors": [{"message": "kept"}],
        "agentscope_generate_reason": "MIDDLEWARE_STOP_REQUESTED",
    }
    assert [(p.pointer, p.rule) for p in reducer.problems] == [
        ("/1/modelName", "type"),
        ("/2/value", "type"),
        ("/4/reason", "type"),
    ]


def test_an_event_breaking_the_schema_past_the_listed_problems_is_applied() -> None:
    """An event whose schema check finds more problems than a check lists (10,000: the rest counted, rule
    max-problems at the event) is applied as one with fewer is, as docs/events.md's tolerant rules say and
    @agentmsg/client does: the count at the event's root read as "event skipped" and the message was lost."""
    result = {
        "id": "m",
        "role": "ASSISTANT",
        "content": [{"type": "tool_result", "id": "c", "name": "f", "output": [0] * 5001}],
    }
    reducer = Reducer(max_problems=None)
    reducer.feed_many([_e(0, "AGENT_RESULT", result=result)])
    assert [m.id for m in reducer.finish()] == ["m"]
    problems = reducer.problems
    assert len(problems) > 10_000 - 10 and problems[-1].pointer == "/0" and problems[-1].rule == "max-problems"
    assert not any(p.message.endswith("event skipped") for p in problems)


def test_reply_end_metadata_keys_are_declared_by_the_schema() -> None:
    """A value of the wrong kind under a declared key (here from AGENT_RESULT) is left out by the salvage."""
    reducer = Reducer()
    meta = {"agentmsg_finish_reason": 5, "agentmsg_errors": ["x"], "ok": 1}
    reducer.feed_many(
        [
            _e(0, "AGENT_START"),
            _e(1, "AGENT_RESULT", result={"id": "", "role": "ASSISTANT", "content": [], "metadata": meta}),
            _e(2, "AGENT_END"),
        ]
    )
    (msg,) = reducer.finish()
    assert msg.id == "msg-e0"
    assert msg.metadata == {
        "ok": 1,
        "agentmsg_reduce_errors": ["/metadata/agentmsg_errors/0 [type]", "/metadata/agentmsg_finish_reason [type]"],
    }
    salvage = [(p.pointer, p.rule) for p in reducer.problems if p.pointer == "/0"]
    assert salvage == [("/0", "type"), ("/0", "type")]


def test_the_fallback_id_is_the_same_in_snapshots_and_in_the_message() -> None:
    reducer = Reducer()
    reducer.feed(_e(0, "TEXT_BLOCK_START", blockId="t"))
    reducer.feed(_e(1, "TEXT_BLOCK_DELTA", blockId="t", delta="x"))
    snap = reducer.snapshot()
    assert snap is not None and snap.id == "msg-e0"
    assert [m.id for m in reducer.finish()] == ["msg-e0"]
    assert [m.id for m in reduce_stream(b'{"type": "TEXT_BLOCK_START", "blockId": "t"}\n')] == ["msg-0"]


def test_arguments_too_deep_to_write_are_not_valid_json() -> None:
    deep = "[" * 300 + "]" * 300
    (msg,) = reduce_events(
        [
            _e(0, "AGENT_START", replyId="r"),
            _e(1, "TOOL_CALL_START", replyId="m", toolCallId="c", toolCallName="f"),
            _e(2, "TOOL_CALL_DELTA", replyId="m", toolCallId="c", delta='{"a": ' + deep + "}"),
            _e(3, "TOOL_CALL_END", replyId="m", toolCallId="c"),
        ]
    )
    call = msg.content[0]
    assert isinstance(call, ToolUseBlock)
    assert call.input == {} and call.metadata == {"argumentsError": "arguments are not valid JSON"}
    assert msg.to_json()  # the message can be written


@pytest.mark.parametrize("name", CASES)
def test_trusted_feeding_changes_nothing_for_valid_events(name: str) -> None:
    """Reducer.feed_many(trusted=True) (producers whose events are valid by construction) skips the per-event
    schema check and builds messages through the codec's fast path: for valid events, the same messages
    byte for byte and the same problems; for events that break the promise it still never raises."""
    case = load(name)
    general, trusted = Reducer(), Reducer()
    general.feed_many(events_of(case))
    trusted.feed_many(events_of(case), trusted=True)
    got = [m.to_json_bytes() for m in trusted.finish()]
    assert all(agentmsg.is_valid(orjson.loads(m)) for m in got)
    if "strict" not in case:
        assert got == [m.to_json_bytes() for m in general.finish()]
        assert trusted.problems == general.problems


@pytest.mark.parametrize(
    ("created_at", "timestamp"),
    [
        ("2026-11-22T10:34:38.5Z", "2026-11-22 10:34:38.500"),
        ("2026-11-22t10:34:38.123456789z", "2026-11-22 10:34:38.123"),
        ("2026-11-22T10:34:38,5Z", None),
        ("2026-11-22T10:34:38.Z", None),
        ("2026-11-22T10:34:38.1234567890Z", None),
        ("2026-11-22T10:34:38.abcZ", None),
        ("2026-11-22T10:34:38.5 Z", None),
        ("2026-11-22T10:34:38.\u0661Z", None),  # an Arabic-Indic digit: a digit to Python's re, not to RFC 3339
        ("2026-02-30T10:00:00.123456Z", None),  # no real date and time (see also the test below)
        ("2025-02-29T10:00:00.123456Z", None),
        ("2026-04-31T10:00:00Z", None),
        ("2026-01-10T24:00:00Z", None),
        ("2026-01-10T10:60:00Z", None),
        ("2026-01-10T10:00:60Z", None),
        ("2024-02-29T10:00:00.123456Z", "2024-02-29 10:00:00.123"),
        ("0000-01-01T10:00:00.123456Z", None),  # no year 0 (parse_timestamp, datetime, the TypeScript reducer)
        ("2026-12-31T23:59:60.5Z", "2026-12-31 23:59:60.500"),
    ],
)
def test_only_an_rfc3339_instant_in_utc_gives_the_timestamp(created_at: str, timestamp: str | None) -> None:
    """The message's timestamp comes from AGENT_START createdAt only when it is an RFC 3339 instant in UTC
    (ASCII digits), in Python as in TypeScript (sdk/typescript/test/reducer.test.mjs has the same cases)."""
    at = "2026-11-22T10:34:38Z"
    (msg,) = reduce_events(
        [
            {"type": "AGENT_START", "id": "1", "createdAt": created_at, "replyId": "m"},
            {"type": "AGENT_END", "id": "2", "createdAt": at, "replyId": "m"},
        ]
    )
    assert msg.to_dict()["timestamp"] == timestamp


@pytest.mark.parametrize(
    "created_at",
    ["2026-02-30T10:00:00.123456Z", "2025-02-29T10:00:00.123456Z", "2026-01-10T24:00:00Z", "2026-01-10T10:00:60Z"],
)
def test_a_created_at_of_no_real_date_gives_no_timestamp_as_any_that_is_no_instant(created_at: str) -> None:
    """Trusted events (a provider's reply) whose AGENT_START createdAt is no real date and time: the message
    took it as '2026-02-30 10:00:00.123', which the Msg schema refuses, so the reducer left it out and blamed
    the message it had made (rule timestamp). Now the message has none and no problem is said, as for a
    createdAt that is no instant at all; untrusted, the event schema's date-time check alone says it."""
    at = "2026-11-22T10:34:38Z"
    events = [
        {"type": "AGENT_START", "id": "1", "createdAt": created_at, "replyId": "m"},
        {"type": "AGENT_END", "id": "2", "createdAt": at, "replyId": "m"},
    ]
    for trusted in (True, False):
        r = Reducer()
        r.feed_many(events, trusted=trusted)
        (msg,) = r.finish()
        assert msg.timestamp is None
        assert Msg.from_json(msg.to_json()).timestamp is None
        assert [(p.pointer, p.rule) for p in r.problems] == ([] if trusted else [("/0/createdAt", "format")])


def test_text_with_a_lone_surrogate_fed_as_python_objects_is_replaced_and_said() -> None:
    """Events fed as Python objects (parsed by the standard library's json, which reads a lone surrogate
    escape) may carry text no JSON writer takes: a pair split across deltas is joined (as JavaScript's UTF-16
    strings join it), a surrogate still alone is replaced by U+FFFD and said (rule lone-surrogate, the event
    that started the block), the rest of the text kept, so the message can be written back. (It was left out
    whole: the block's other text was lost.) From JSON text the codec reads, such text never comes."""
    at = "2026-11-22T10:34:38Z"

    def ev(type_: str, id_: str, **extra: Any) -> dict[str, Any]:
        return {"type": type_, "id": id_, "createdAt": at, "replyId": "m", **extra}

    events = [
        ev("AGENT_START", "1"),
        ev("TEXT_BLOCK_START", "2", blockId="t"),
        ev("TEXT_BLOCK_DELTA", "3", blockId="t", delta=json.loads('"a\\ud800b"')),
        ev("TEXT_BLOCK_END", "4", blockId="t"),
        ev("TEXT_BLOCK_START", "5", blockId="u"),
        ev("TEXT_BLOCK_DELTA", "6", blockId="u", delta="ok \ud83d"),
        ev("TEXT_BLOCK_DELTA", "7", blockId="u", delta="\ude00"),
        ev("AGENT_END", "8"),
    ]
    for trusted in (False, True):  # (trusted: a broken promise is checked all the same)
        r = Reducer()
        r.feed_many(events, trusted=trusted)
        (msg,) = r.finish()
        assert msg.content == [TextBlock(text="a\ufffdb"), TextBlock(text="ok \U0001f600")]
        assert agentmsg.Msg.from_json(msg.to_json()).to_dict() == msg.to_dict()
        assert [(p.pointer, p.rule) for p in r.problems] == [("/1", "lone-surrogate")]
    r = Reducer()
    for e in events[:-1]:
        r.feed(e)
    snap = r.snapshot()  # a snapshot joins and replaces the same way (nothing said until the end)
    assert snap is not None and snap.content == [TextBlock(text="a\ufffdb"), TextBlock(text="ok \U0001f600")]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"type": "TEXT_BLOCK_DELTA"}\n', "got str (JSON text: reduce_stream reads"),
        (b'{"type": "TEXT_BLOCK_DELTA"}\n', "got bytes (JSON text"),
        ({"type": "AGENT_START", "id": "e1", "replyId": "r"}, "got dict (one event: feed(event)"),
        (None, "got NoneType (a list of event dicts"),
        (7, "got int (a list of event dicts"),
    ],
)
def test_events_given_as_text_or_one_event_are_a_mistake_not_a_stream(value: Any, says: str) -> None:
    """Reduced to nothing before (each character or key a problem no caller of reduce_events can see); None or a
    number raised a bare TypeError ('NoneType' object is not iterable) from inside the loop."""
    calls = (
        lambda: reduce_events(value),
        lambda: reduce_events(value, strict=True),
        lambda: Reducer().feed_many(value),
    )
    for call in calls:
        with pytest.raises(ValidationError) as info:
            call()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("", "type") and says in problem.message
    assert reduce_events(iter(emit_events(AssistantMessage("hi"))))[0].text_content == "hi"  # any iterable


EVENT_VALIDATOR = _validator("agent-event")


def by_feed(events: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return comparable(r.finish()), problems_of(r)


def check_loss(events: list[Any], messages: list[Any], problems: list[tuple[str, str]]) -> None:
    """Every delta of a valid, first-seen, top-level event is in a message or named by a problem:
    text and thinking deltas in the text / thinking, tool-call deltas in a call's raw arguments, data
    deltas in a data block's base64, tool-result text deltas in a result's text."""
    seen: set[Any] = set()
    blocks = [b for m in messages for b in m["content"]]
    texts = {
        "TEXT_BLOCK_DELTA": "".join(b["text"] for b in blocks if b["type"] == "text"),
        "THINKING_BLOCK_DELTA": "".join(b["thinking"] for b in blocks if b["type"] == "thinking"),
        "TOOL_CALL_DELTA": "".join(b["content"] or "" for b in blocks if b["type"] == "tool_use"),
        "DATA_BLOCK_DELTA": "".join(
            b["source"].get("data", "") for b in blocks if b["type"] == "data" and isinstance(b.get("source"), dict)
        ),
        "TOOL_RESULT_TEXT_DELTA": "".join(
            o.get("text", "") for b in blocks if b["type"] == "tool_result" for o in b["output"] if o["type"] == "text"
        ),
    }
    # (a cut reply's problem points at its first event: it names no lost delta)
    flagged = {p.split("/")[1] for p, rule in problems if p.count("/") >= 1 and rule != CUT_RULE}
    for index, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        event_id = e.get("id")
        duplicate = isinstance(event_id, str) and event_id in seen
        if isinstance(event_id, str):
            seen.add(event_id)
        if duplicate or e.get("source") is not None or not EVENT_VALIDATOR.is_valid(e):
            continue
        joined = texts.get(e["type"])
        if joined is not None and e["delta"] and e["delta"] not in joined:
            assert str(index) in flagged, f"delta of event {index} lost: {e!r}"


@pytest.mark.fuzz
def test_garbled_event_streams() -> None:
    for rng in seeded("events", 15):
        seed = rng.seed_label  # type: ignore[attr-defined]
        events = garble_events(rng, base_streams(rng))
        try:
            ref = by_feed(events)
            r = Reducer()
            r.feed_many(events)
            assert (comparable(r.finish()), problems_of(r)) == ref
            check_loss(events, *ref)
            # Strict raises exactly when an event is invalid (for python-jsonschema, or JSON that cannot be
            # written: an integer beyond 64 bits or a lone surrogate, even under a key the schema does not
            # declare) or tolerant had a problem.
            dict_events = [e for e in events if isinstance(e, dict)]
            if len(dict_events) == len(events) and all(isinstance(e.get("id"), str) for e in dict_events):
                invalid = any(not EVENT_VALIDATOR.is_valid(e) or not _jsonable(e) for e in dict_events)
                strict = Reducer(strict=True)
                try:
                    strict.feed_many(events)
                    raised = False
                except agentmsg.ValidationError:
                    raised = True
                if invalid:
                    assert raised
                elif not [p for p in ref[1] if p[1] != CUT_RULE]:  # (a cut stream is no bad event)
                    assert not raised
            # Through bytes: the fast path at odd run sizes equals the reference. (JSONL said, not detected: a
            # garbled first event that is a JSON array makes the body a JSON array of events, see tests/events/test_stream.py.)
            data = b"".join(orjson.dumps(e) + b"\n" for e in events if _jsonable(e))
            assert by_stream(data, chunk=rng.choice([64, 331, 4096]), sse=False) == reference_lines(data)
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


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


@pytest.mark.no_kernel
def test_many_distinct_open_blocks_are_bounded() -> None:
    """10,000 TEXT_BLOCK_START lines with distinct ids: the routing table is never rebuilt and stays
    within the open-block limit; every block is kept, each one closed early is reported."""
    events = [ev(0, "AGENT_START")] + [ev(n, "TEXT_BLOCK_START", blockId=f"b{n}") for n in range(1, 10_001)]
    events += [ev(10_001, "TEXT_BLOCK_DELTA", blockId="b10000", delta="last")]
    r = Reducer()
    (msg,) = reduce_stream(jsonl(events), reducer=r)
    assert len(msg.content) == 10_000 and msg.content[-1] == TextBlock(text="last")
    limit = agentmsg.limits.max_open_blocks
    assert [p.rule for p in r.problems] == ["max-open-blocks"] * (10_000 - limit) + ["incomplete_stream"]
    # the cut names the first blocks still open and counts the rest: its words stay short
    assert r.problems[-1].message.endswith(f"{limit - 10} more): kept with what arrived, marked INTERRUPTED")
    with pytest.raises(SizeLimitError):
        reduce_events(events, strict=True)


def test_usage_sum_saturates_at_its_maximum_and_is_reported() -> None:
    """A sum stops at the usage schema's maximum: 2^31-1 for a count AgentScope Java holds in an int (inputTokens,
    outputTokens, cachedTokens: Java refuses a message beyond it), 2^63-1 for the others (totalTokens here)."""
    java_int, long = 2**31 - 1, 2**63 - 1
    events = [ev(0, "AGENT_START")] + [
        ev(n, "MODEL_CALL_END", usage={"inputTokens": java_int, "totalTokens": long}) for n in (1, 2, 3)
    ]
    events.append(ev(4, "AGENT_END"))
    (msg,), problems = reduced(events)
    assert msg["usage"]["inputTokens"] == java_int and msg["usage"]["totalTokens"] == long
    assert problems == [
        ("/2/usage/inputTokens", "maximum"),
        ("/2/usage/totalTokens", "maximum"),
        ("/3/usage/inputTokens", "maximum"),
        ("/3/usage/totalTokens", "maximum"),
    ]


def test_a_reply_skips_restoring_usage_from_its_own_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A usage with a key Java lacks (reasoningTokens) keeps a copy of itself in metadata _chat_usage; the
    message built on the fast path from such a copy has nothing to restore, so restore_usage is not asked."""
    import agentmsg.message as message_mod

    asked: list[object] = []
    monkeypatch.setattr(message_mod, "restore_usage", asked.append)
    usage = {"inputTokens": 3, "outputTokens": 2, "reasoningTokens": 1}
    events = [ev(0, "AGENT_START"), ev(1, "MODEL_CALL_END", usage=usage), ev(2, "AGENT_END")]
    (msg,) = reduce_events(orjson.loads(orjson.dumps(events)), trusted=True)
    assert asked == []
    assert msg.to_dict()["usage"] == usage and msg.metadata["_chat_usage"] == usage


def test_usage_beyond_64_bits_is_rejected_not_turned_into_a_float() -> None:
    line = b'{"type":"MODEL_CALL_END","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","usage":{"inputTokens":18446744073709551617}}\n'
    r = Reducer()
    (msg,) = reduce_stream(line, reducer=r)
    # (the event's schema check says it is beyond inputTokens' maximum, 2^31-1, before the sum says it is no count)
    assert msg.usage is None and rules(r) == [("/0/usage/inputTokens", "maximum"), ("/0/usage/inputTokens", "type")]


def _deep(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


def test_a_reply_s_own_metadata_is_not_checked_again_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata keys the reducer builds itself (finish reason, model, stop reason, refusal, a generate reason of
    the enum, the usage's _chat_usage copy) are valid by construction: the fast path is given only the keys holding
    an event's value to check (here the structured output), and the message still gets the whole metadata, in its
    order."""
    given: list[Any] = []
    fast = Msg._from_json_value.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Msg], data: Any, restore: bool = True) -> Msg | None:
        given.append(data["metadata"])
        return fast(cls, data, restore)  # type: ignore[no-any-return]

    monkeypatch.setattr(Msg, "_from_json_value", classmethod(spy))
    usage = {"inputTokens": 3, "outputTokens": 2, "reasoningTokens": 1}
    end = {"finishReason": "stop", "model": "m-1", "refusal": True, "structuredOutput": {"a": 1}}
    events = [
        ev(0, "AGENT_START"),
        ev(1, "REQUEST_STOP", reason="length"),
        ev(2, "MODEL_CALL_END", usage=usage, metadata=end),
        ev(3, "AGENT_END"),
    ]
    (msg,) = reduce_events(orjson.loads(orjson.dumps(events)), trusted=True)
    assert list(msg.metadata) == [
        "_structured_output",
        "agentmsg_finish_reason",
        "agentmsg_model",
        "agentmsg_stop_reason",
        "agentmsg_refusal",
        "agentscope_generate_reason",
        "_chat_usage",
    ]
    assert given == [{"_structured_output": {"a": 1}}]  # an event's value: checked
    assert msg.metadata["agentscope_generate_reason"] == "MIDDLEWARE_STOP_REQUESTED"  # (REQUEST_STOP's default)
    assert msg.metadata["_chat_usage"] == usage and msg.metadata["agentmsg_finish_reason"] == "stop"


_ODD_VALUES: dict[str, Any] = {
    "null": None,
    "nan": float("nan"),
    "infinity": float("inf"),
    "2**64": 2**64,
    "2**63": 2**63,
    "-2**63-1": -(2**63) - 1,
    "lone-surrogate": "\ud800",
    "lone-surrogate-key": {"\udc00": 1},
    "int-key": {1: "x"},
    "null-in-map": {"a": None},
    "null-in-list": [None],
    "nested-null": [[[[{"a": [1, {"b": None}]}]]]],
    "deep-250": _deep(250),
    "deep-253": _deep(253),
    "deep-300": _deep(300),
    "object": object(),
    "true": True,
    "string": "stop",
    "int": 5,
}


@pytest.mark.parametrize("value", list(_ODD_VALUES.values()), ids=list(_ODD_VALUES))
@pytest.mark.parametrize("ended", [True, False], ids=["ended", "not-ended"])
def test_the_fast_path_decides_event_metadata_as_the_general_path(
    monkeypatch: pytest.MonkeyPatch, value: Any, ended: bool
) -> None:
    """Event metadata is anything the event reader accepted: beside the keys the reducer builds itself (which the
    fast path does not check again), a value from an event's metadata (AGENT_RESULT's, a declared key's too,
    structuredOutput, grounding, an error's, a REQUEST_STOP's generate reason) gives the same message and problems as
    without the fast path."""
    end = {"finishReason": "stop", "model": "m-1", "structuredOutput": {"v": value}}
    end["grounding"] = {"provider": "p", "v": value}
    usage = {"inputTokens": 3, "reasoningTokens": 1}
    meta = {"k": value, "agentmsg_finish_reason": value, "agentmsg_model": value, "_chat_usage": value}
    events = [
        ev(0, "AGENT_START"),
        ev(1, "AGENT_RESULT", result={"id": "m", "role": "ASSISTANT", "content": [], "metadata": meta}),
        ev(2, "CUSTOM", name="agentmsg.error", value={"message": value}),
        ev(3, "MODEL_CALL_END", usage=usage, metadata=end if ended else {"v": value}),
        ev(4, "REQUEST_STOP", generateReason=value, reason=value),
        ev(5, "AGENT_END"),
    ]

    def reduced_by(fast: bool) -> Any:
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(Msg, "_from_json_value", classmethod(lambda cls, data, restore=True: None))
            r = Reducer()
            try:
                r.feed_many(events, trusted=True)
                ms = r.finish()
            except ValidationError as exc:
                return "error", exc.problems
            return [msg.to_json_bytes() for msg in ms], r.problems

    assert reduced_by(True) == reduced_by(False)


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


@pytest.mark.parametrize("late", ["AGENT_RESULT", "MODEL_CALL_END"])
def test_an_event_after_agent_end_that_would_open_an_empty_reply_is_skipped(late: str) -> None:
    # (docs/events.md, rule 1; the shared vector after-end-opens-nothing holds both reducers to it)
    result = {"id": "r", "role": "ASSISTANT", "content": [{"type": "text", "text": "x"}], "metadata": {}}
    keys = {"result": result} if late == "AGENT_RESULT" else {"usage": {"inputTokens": 1}}
    events = [
        ev(0, "AGENT_START"),
        ev(1, "TEXT_BLOCK_START", blockId="t"),
        ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="x"),
        ev(3, "TEXT_BLOCK_END", blockId="t"),
        ev(4, "AGENT_END"),
    ]
    for feed in ("feed", "jsonl"):
        r = Reducer()
        if feed == "feed":
            for e in [*events, ev(5, late, **keys)]:
                r.feed(e)
        else:
            r.feed_jsonl(jsonl([*events, ev(5, late, **keys)]))
        (msg,) = r.finish()  # one message: no second, empty one under the same id
        assert msg.id == "r" and msg.text_content == "x" and msg.usage is None
        assert rules(r) == [("/5", "after-end")]
        assert "AGENT_END at /4" in r.problems[0].message
    with pytest.raises(ValidationError) as info:
        reduce_events([*events, ev(5, late, **keys)], strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/5", "after-end")]


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


@pytest.mark.parametrize(
    ("deltas", "data", "dropped"),
    [
        (["QUJD"], "QUJD", []),  # no padding
        (["QUI="], "QUI=", []),  # one
        (["QQ=="], "QQ==", []),  # two
        (["QUJD", "QQ=="], "QUJDQQ==", []),  # two, after a whole quantum
        (["Q===", "QUJD"], "QUJD", [1]),  # three in one delta: no base64
        (["QQ===", "QUI="], "QUI=", [1]),
        (["QUJD===", "QUI="], "QUI=", [1]),  # three after a whole quantum (which base64.b64decode lets by)
        (["QQ==", "="], "QQ==", [2]),  # a third after two
        (["QUI=", "=="], "QUI=", [2]),
        (["QQ=", "QQ=="], "QQ=", [2]),  # data after padding
        (["QUI=", "A"], "QUI=", [2]),
    ],
)
def test_a_data_delta_pads_with_at_most_two_characters_in_all(deltas: list[str], data: str, dropped: list[int]) -> None:
    """The joined data must match the schema's base64 pattern (``={0,2}`` at the very end): a third '=' (in one
    delta or across several) and data after padding are each dropped and said at that delta; zero, one or two
    are kept."""
    events = [ev(0, "DATA_BLOCK_START", blockId="d", mediaType="image/png")]
    events += [ev(n, "DATA_BLOCK_DELTA", blockId="d", delta=d) for n, d in enumerate(deltas, 1)]
    events += [ev(len(deltas) + 1, "DATA_BLOCK_END", blockId="d")]
    (msg,), problems = reduced(events)
    assert msg["content"][0]["source"]["data"] == data
    assert problems == [(f"/{n}/delta", "pattern") for n in dropped]
    for n, d in enumerate(deltas, 1):  # the event's own pattern says the same of one delta alone
        assert agentmsg.is_valid(events[n], "event") == (d.count("=") <= 2 and "=" not in d.rstrip("=")), d


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
            assert snap.content[0] == TextBlock(text=so_far)


def test_invalid_value_under_a_numeric_looking_key_is_left_out() -> None:
    events = [ev(0, "AGENT_START"), ev(1, "THINKING_BLOCK_END", blockId="t", metadata={"0": 1, "signature": 5})]
    events.insert(1, ev(2, "THINKING_BLOCK_START", blockId="t"))
    (msg,), problems = reduced(events)
    # Left out when the message is built (salvage), reported at the event that started the block.
    assert problems == [("/1", "type"), ("/0", "incomplete_stream")]
    assert msg["content"][0]["metadata"] == {"0": 1}


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
    call = msg.content[0]
    assert isinstance(call, ToolUseBlock) and call.metadata == {"k": "\ufffd", "ok": 1}
    assert [(p.pointer, p.rule) for p in r.problems if p.rule in ("json-value", "lone-surrogate")] == [
        ("/3/metadata/k", "lone-surrogate"),  # the event's schema check
        ("/2", "lone-surrogate"),  # the message's value: replaced
        ("/0", "json-value"),
    ]


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
    # (as text, the event's schema check also says 10**20 is beyond inputTokens' maximum, 2^31-1)
    assert rules(as_text) == [("/1/usage/inputTokens", "maximum"), ("/1/usage/inputTokens", "type")]
    assert rules(as_objects) == [("/1/usage/inputTokens", "integer-range"), ("/1/usage/inputTokens", "type")]


def test_a_cut_reply_is_said_and_a_reply_agentscope_interrupted_is_not() -> None:
    """Both end INTERRUPTED; only the problem (rule incomplete_stream, at the reply's first event, naming what was
    open) and Reducer.cut tell the stream that was cut from the reply AgentScope stopped (REQUEST_STOP INTERRUPTED,
    e.g. a user's stop) and then ended. Strict mode says it too and does not raise: a cut is no bad event."""
    stopped = [
        ev(0, "AGENT_START"),
        ev(1, "MODEL_CALL_START"),
        ev(2, "TEXT_BLOCK_START", blockId="t"),
        ev(3, "TEXT_BLOCK_DELTA", blockId="t", delta="hi"),
        ev(4, "TEXT_BLOCK_END", blockId="t"),
        ev(5, "MODEL_CALL_END"),
        ev(6, "REQUEST_STOP", generateReason="INTERRUPTED"),
    ]
    for strict in (False, True):
        whole = Reducer(strict=strict)
        whole.feed_many([*stopped, ev(7, "AGENT_END")])
        (msg,) = whole.finish()
        assert msg.generate_reason is agentmsg.GenerateReason.INTERRUPTED
        assert (whole.problems, whole.cut) == ([], None)
        cut = Reducer(strict=strict)
        cut.feed_many(stopped)  # the same reply, its AGENT_END never came
        (msg,) = cut.finish()
        assert msg.generate_reason is agentmsg.GenerateReason.INTERRUPTED and cut.cut is msg
        (problem,) = cut.problems
        assert (problem.pointer, problem.rule) == ("/0", CUT_RULE)
        assert problem.message == (
            "the stream ended inside reply r (no AGENT_END): kept with what arrived, marked INTERRUPTED"
        )
        assert cut.finish() == [msg] and len(cut.problems) == 1  # said once
    # An implicit reply (no AGENT_START): what is open, in the order it started; a pointer at its first event.
    r = Reducer()
    r.feed_many(
        [
            ev(0, "MODEL_CALL_START"),
            ev(1, "TOOL_CALL_START", toolCallId="c1", toolCallName="search"),
            ev(2, "THINKING_BLOCK_START", blockId="th"),
            ev(3, "TOOL_RESULT_START", toolCallId="c0", toolCallName="read"),
        ]
    )
    (msg,) = r.finish()
    assert r.cut is msg and [(p.pointer, p.rule, p.message) for p in r.problems] == [
        (
            "/0",
            CUT_RULE,
            "the stream ended inside reply r (open: a model call, tool call 'c1' ('search'), thinking block 'th', "
            "tool result 'c0' ('read')): kept with what arrived, marked INTERRUPTED",
        )
    ]
    # A stream that ends between replies, or after an implicit reply's model call ended, cut nothing.
    for events in ([ev(0, "AGENT_START"), ev(1, "AGENT_END")], [ev(0, "MODEL_CALL_START"), ev(1, "MODEL_CALL_END")]):
        r = Reducer()
        r.feed_many(events)
        assert len(r.finish()) == 1 and (r.problems, r.cut) == ([], None)


@pytest.mark.parametrize(
    "event",
    [
        ev(5, "TOOL_CALL_DELTA", toolCallId="c", toolCallName="f", delta='{"a": 1}'),
        ev(5, "TOOL_CALL_END", toolCallId="c"),
        ev(5, "TOOL_RESULT_TEXT_DELTA", toolCallId="c", delta="out"),
        ev(5, "TOOL_RESULT_DATA_DELTA", toolCallId="c", data={"type": "text", "text": "out"}),
        ev(5, "TOOL_RESULT_END", toolCallId="c", state="success"),
        ev(5, "TEXT_BLOCK_DELTA", blockId="b", delta="late"),
        ev(5, "DATA_BLOCK_DELTA", blockId="d", delta="QQ=="),
    ],
    ids=lambda e: e["type"],
)
def test_strict_refusing_an_event_between_replies_opens_no_reply(event: dict[str, Any]) -> None:
    """Strict mode keeps what it had when an event raises: an out-of-order event between replies (a delta or END of
    nothing open) raises rule ``order``, and the implicit reply its handler opened before saying so is not kept.
    It was: the caller that went on (or just called finish()) got an extra message, empty or holding the refused
    event's content, in both runtimes."""
    events = [ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t")]
    events += [ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="hi"), ev(3, "TEXT_BLOCK_END", blockId="t")]
    events.append(ev(4, "AGENT_END"))
    r = Reducer(strict=True)
    r.feed_many(events)
    with pytest.raises(ValidationError) as info:
        r.feed(event)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [
        (f"/5/{next(iter(k for k in ('toolCallId', 'blockId') if k in event))}", "order")
    ]
    assert r.snapshot() is None
    assert [m.to_dict() for m in r.finish()] == [m.to_dict() for m in reduce_events(events)] and r.problems == []
    # also as the first event of all, and fed as JSON lines
    r = Reducer(strict=True)
    with pytest.raises(ValidationError):
        r.feed_jsonl(jsonl([event]))
    assert r.snapshot() is None and r.finish() == []


@pytest.mark.parametrize(
    "end",
    [
        {"metadata": {"finishReason": 3}},
        {"metadata": {"finishReason": "stop", "refusal": "yes"}},
        {"metadata": {"grounding": [1]}},
        {"usage": {"inputTokens": 2**31 - 1}},
    ],
    ids=["finish-reason", "refusal", "grounding", "usage-maximum"],
)
def test_strict_refusing_a_model_call_end_leaves_the_call_open(end: dict[str, Any]) -> None:
    """A MODEL_CALL_END strict mode refuses (a finish reason that is no string, a sum beyond its maximum: found by its
    handler, not the schema) changes nothing: the model call and its tool call stay open, so finish() still says the
    stream was cut (it had closed them first and taken what it read before the problem: the message lost its
    INTERRUPTED and the cut went unsaid)."""
    events = [ev(0, "AGENT_START"), ev(1, "MODEL_CALL_START"), ev(2, "MODEL_CALL_END", usage={"inputTokens": 1})]
    events += [ev(3, "MODEL_CALL_START"), ev(4, "TOOL_CALL_START", toolCallId="c", toolCallName="f")]
    events.append(ev(5, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a": 1}'))
    r = Reducer(strict=True)
    r.feed_many(events)
    with pytest.raises(ValidationError):
        r.feed(ev(6, "MODEL_CALL_END", **end))
    (msg,) = r.finish()
    want = Reducer(strict=True)
    want.feed_many(events)
    assert msg.to_dict() == want.finish()[0].to_dict() and r.cut is msg
    assert msg.metadata["agentscope_generate_reason"] == "INTERRUPTED"
    assert msg.usage is not None and msg.usage.input_tokens == 1
    assert [(p.rule, p.message) for p in r.problems] == [(p.rule, p.message) for p in want.problems]
    assert "a model call, tool call 'c'" in r.problems[0].message


@pytest.mark.parametrize("max_problems", [-1, 1.5, True, "5"])
def test_max_problems_below_zero_or_not_whole_is_refused(max_problems: Any) -> None:
    """``max_problems`` is a whole number of at least 0 (or None: keep every problem). -1 kept none and counted every
    one as left out, as 0 asks; 0 stays: count them, keep none."""
    with pytest.raises(ValueError, match="max_problems must be"):
        Reducer(max_problems=max_problems)
    bad = [ev(0, "AGENT_START"), ev(1, "NO_SUCH_EVENT"), ev(2, "NO_SUCH_EVENT")]
    r = Reducer(max_problems=0)
    r.feed_many(bad)
    assert [p.rule for p in r.problems] == ["max-problems"]
    r = Reducer(max_problems=None)
    r.feed_many(bad)
    assert [p.rule for p in r.problems] == ["enum", "enum"]


@pytest.mark.parametrize("max_open", [0, -1, 1.5, True])
def test_max_open_blocks_below_one_or_not_whole_is_refused(max_open: Any) -> None:
    """``max_open_blocks`` is a whole number of at least 1 (or None: ``limits.max_open_blocks``), as
    ``dedupe_window`` is. A negative one made every START fail inside the reducer ("malformed ... (ValueError: min()
    arg is an empty sequence): event skipped"), every block of the stream lost; 0 passed as the default (1,024)
    where @agentmsg/client's ``maxOpenBlocks: 0`` kept none open."""
    with pytest.raises(ValueError, match="max_open_blocks must be"):
        Reducer(max_open_blocks=max_open)
    r = Reducer(max_open_blocks=1)
    r.feed_many([ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="a"), ev(2, "TEXT_BLOCK_START", blockId="b")])
    assert [p.rule for p in r.problems] == ["max-open-blocks"]


@pytest.mark.parametrize("form", ["jsonl", "sse", "values"])
def test_a_syntax_error_after_a_lone_surrogate_is_json_in_every_reader(form: str) -> None:
    """Found by make fuzz (seed 1796385219): an event whose text broke JSON after a lone surrogate escape
    (``"deltmile \\ud83d"}``, a key with no value) was said ``lone-surrogate``, as orjson stops at the escape,
    where @agentmsg/client (JSON.parse reads the escape) says ``json``. Every reader, reducing or strict, now
    says the syntax error, with json's words; an event that is JSON but for the escape keeps its rule."""
    at = "2026-11-28T10:00:00Z"
    head = f'{{"type": "TEXT_BLOCK_DELTA", "id": "e3", "createdAt": "{at}", "replyId": "m", "blockId": "t", '
    texts = [
        f'{{"type": "AGENT_START", "id": "e1", "createdAt": "{at}", "replyId": "m"}}',
        f'{{"type": "TEXT_BLOCK_START", "id": "e2", "createdAt": "{at}", "replyId": "m", "blockId": "t"}}',
        head + '"deltmile \\ud83d"}',
        head.replace('"e3"', '"e4"') + '"delta": "\\ud83d"}',
    ]

    def body(lines: list[str]) -> bytes:
        if form == "jsonl":
            return "".join(line + "\n" for line in lines).encode()
        if form == "sse":
            return "".join(f"data: {line}\n\n" for line in lines).encode()
        return ("[" + ", ".join(lines) + "]").encode()

    r = Reducer()
    reduce_stream(body(texts), reducer=r)
    said = [(p.pointer, p.rule) for p in r.problems if p.rule in {"json", "lone-surrogate"}]
    assert said == [("/2", "json"), ("/3", "lone-surrogate")], r.problems
    assert "Expecting ':' delimiter" in next(p.message for p in r.problems if p.rule == "json")
    for line, rule in ((texts[2], "json"), (texts[3], "lone-surrogate")):
        found: list[agentmsg.Problem] = []
        assert list(agentmsg.events.read_events(body([line]), strict=False, on_problem=found.append)) == []
        assert [p.rule for p in found] == [rule]
        with pytest.raises(agentmsg.ValidationError) as info:
            list(agentmsg.events.read_events(body([line])))
        assert [p.rule for p in info.value.problems] == [rule]


class _NumpyLikeInt:
    """What a NumPy integer is to the dedupe window: no int, but an ``__index__`` and comparisons with ints."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __lt__(self, other: int) -> bool:
        return self.value < other

    def __le__(self, other: int) -> bool:
        return self.value <= other


def test_a_dedupe_window_given_as_a_numpy_like_int_is_taken_as_its_int() -> None:
    """The window compared its size with ints only, so a NumPy integer (a size read from an array, a config
    loaded with NumPy) worked, until the check of the argument refused what is not an int. It is taken as the
    int it stands for."""
    reducer = Reducer(dedupe_window=_NumpyLikeInt(2))  # type: ignore[arg-type]
    window = reducer._st.window
    assert window.size == 2 and type(window.size) is int
    assert [window.seen(i) for i in ("a", "b", "a", "c", "d", "a")] == [False, False, True, False, False, False]


def test_a_dedupe_window_of_an_int_is_taken_without_the_general_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """reduce_events makes a reducer, and its window, per reply: the window's int size went through the check a
    NumPy integer needs (hasattr, operator.index, require_count) each time. An int of at least 1 is taken at once
    (others are checked as before: the test below)."""
    from agentmsg.events import _dedupe

    def refused(*args: Any) -> None:
        raise AssertionError(f"checked: {args}")

    monkeypatch.setattr(_dedupe, "require_count", refused)
    assert _dedupe.DedupeWindow(4096).size == 4096
    assert Reducer()._st.window.size == _dedupe.DEFAULT_DEDUPE_WINDOW
    assert _dedupe.DedupeWindow(None).size is None


@pytest.mark.parametrize(
    ("keyword", "value", "rule"),
    [
        ("max_problems", -1, "minimum"),
        ("max_problems", "5", "type"),
        ("max_open_blocks", 0, "minimum"),
        ("max_open_blocks", 1.5, "type"),
        ("dedupe_window", 0, "minimum"),
        ("dedupe_window", "8", "type"),  # (was a bare TypeError from comparing a str with 1)
        ("dedupe_window", True, "type"),  # (was taken as a window of 1)
    ],
)
def test_a_bound_of_the_reducer_out_of_range_is_a_validation_error(keyword: str, value: Any, rule: str) -> None:
    """The reducer's bounds raised a bare ValueError: now the SDK's error at the argument, rule type (a TypeError
    too) or minimum, still a ValueError."""
    with pytest.raises(agentmsg.ValidationError) as info:
        Reducer(**{keyword: value})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(f"/{keyword}", rule)]
    assert isinstance(info.value, ValueError) and (rule != "type" or isinstance(info.value, TypeError))


@pytest.mark.parametrize(("strict", "source", "name"), [(False, None, None), (True, "sub", "bot")])
def test_reduce_events_reducer_is_the_keyword_one(strict: bool, source: str | None, name: str | None) -> None:
    # reduce_events makes its reducer with no keyword call (Reducer._of): its state is what the public
    # constructor with the same arguments and the default bounds makes, field by field.
    from agentmsg.events._state import State
    from agentmsg.events.reducer import Reducer

    def fields(r: Reducer) -> dict[str, Any]:
        st = r._st
        got = {slot: getattr(st, slot) for slot in State.__slots__ if slot != "window"}
        return {**got, "window": (st.window.size, st.window.current, st.window.previous)}

    assert fields(Reducer._of(strict, source, name)) == fields(Reducer(strict=strict, source=source, name=name))


def test_a_value_quoted_in_a_problem_is_cut_not_repr_whole() -> None:
    """The handlers quoted a wrong value by ``repr`` cut to 80 characters: the whole repr was made first, and a
    value nested past the stack (events fed as objects, trusted) raised in it, so the MODEL_CALL_END was skipped,
    its usage lost. Every value quoted goes through ``short_repr`` (cut in depth): the event is applied and the
    problem quotes the value's start."""
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    at = "2026-01-01T00:00:00Z"
    r = Reducer()
    r.feed_many(
        [
            {"type": "AGENT_START", "id": "0", "createdAt": at, "replyId": "r"},
            {
                "type": "MODEL_CALL_END",
                "id": "1",
                "createdAt": at,
                "replyId": "r",
                "usage": {"inputTokens": 3},
                "metadata": {"grounding": deep, "model": deep},
            },
            {"type": "AGENT_END", "id": "2", "createdAt": at, "replyId": "r"},
        ],
        trusted=True,
    )
    (message,) = r.finish()
    assert message.usage is not None and message.usage.input_tokens == 3
    assert [(p.pointer, p.rule, p.message) for p in r.problems] == [
        ("/1/metadata/model", "type", "model [[[[[[[...]]]]]]] is not a string: not taken"),
        ("/1/metadata/grounding", "type", "grounding [[[[[[[...]]]]]]] is not an object: not taken"),
    ]


@pytest.mark.parametrize(
    ("event", "after_end", "opened", "rules"),
    [
        ({"type": "TEXT_BLOCK_DELTA", "blockId": "b", "delta": "x"}, False, True, ["order"]),
        ({"type": "TEXT_BLOCK_END", "blockId": "b"}, False, False, ["order"]),
        ({"type": "TOOL_CALL_DELTA", "delta": "x"}, False, False, ["required"]),
        ({"type": "MODEL_CALL_END"}, True, False, ["after-end"]),
        ({"type": "MODEL_CALL_END"}, False, True, []),
    ],
)
def test_opens_reply_answers_as_the_reducer_fed_the_event_between_replies(
    event: dict[str, Any], after_end: bool, opened: bool, rules: list[str]
) -> None:
    """``opens_reply``, the seam the UI encoders ask (agentmsg.ui.ai_sdk), says whether the reducer opens a reply
    for an event between replies, and what it says of it: what a reducer fed the event there does."""
    from agentmsg.events.reducer import opens_reply

    got, said = opens_reply({**event, "id": "e1", "createdAt": TS}, after_end=after_end)
    assert (got, [p.rule for p in said]) == (opened, rules)
    before = [ev(0, "AGENT_START"), ev(1, "AGENT_END")] if after_end else []
    r = Reducer()
    for e in [*before, {**event, "id": "e2", "createdAt": TS}]:
        r.feed(e)
    assert len(r.finish()) == len(before) // 2 + opened
    assert [p.rule for p in r.problems if p.rule != CUT_RULE] == rules


@pytest.mark.parametrize("how", ["feed", "feed_many", "reduce_events"])
def test_a_grounding_listing_one_dict_many_times_is_walked_once(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A grounding (events fed as objects, checked against the schema) that lists the same dict 40 times: the
    message's walk for what JSON cannot carry walked that dict at each of its 40 places, 40 times its strings (a dict
    of 100,000 keys: 7 s of the reply's 10 s). It walks a dict or list it met no deeper once now: the message holds
    the grounding as given, no problem, and the strings the walk looks at are the dict's, about once."""
    from agentmsg._codec.jsontext import has_lone_surrogate

    big = {f"k{i}": f"value {i}" for i in range(5000)}
    grounding = {"provider": "p", "chunks": [big] * 40}
    events = [
        ev(0, "AGENT_START"),
        ev(1, "MODEL_CALL_END", usage={"inputTokens": 3}, metadata={"grounding": grounding}),
        ev(2, "AGENT_END"),
    ]
    looked_at = 0

    def counted(text: str) -> bool:
        nonlocal looked_at
        looked_at += 1
        return has_lone_surrogate(text)

    monkeypatch.setattr("agentmsg.events._build.has_lone_surrogate", counted)
    problems: list[Any] = []
    if how == "reduce_events":
        messages = reduce_events(events)
    else:
        r = Reducer()
        if how == "feed":
            for e in events:
                r.feed(e)
        else:
            r.feed_many(events)
        messages = r.finish()
        problems = r.problems
    (message,) = messages
    assert message.metadata["agentmsg_grounding"] == grounding and problems == []
    assert message.usage is not None and message.usage.input_tokens == 3
    assert 2 * len(big) <= looked_at < 3 * len(big)  # (its keys and values once; 40 times was 400,000)
