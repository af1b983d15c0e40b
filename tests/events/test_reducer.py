"""The event reducer against the language-neutral vectors in tests/conformance/reducer/."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import AssistantMessage, Reducer, reduce_events, reduce_stream
from tests._support.events import CASES, PROPOSED, events_of, load, writable


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
        # a lone surrogate escape is not valid JSON: such a line is skipped, rule json).
        r = Reducer()
        reduce_stream("".join(json.dumps(e) + "\n" for e in case["events"]).encode(), reducer=r)
        assert "json" in {p.rule for p in r.problems}
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
    assert [p.rule for p in reducer.problems] == ["json", "json"]
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
        ]


def test_reducer_handles_exactly_the_schema_event_types() -> None:
    from agentmsg.events._handlers import HANDLERS

    schema_types = agentmsg.schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"]
    assert set(HANDLERS) == set(schema_types), "a new event type in the schema needs a reducer rule (and a vector)"


def test_an_unhashable_event_type_is_reported_not_raised() -> None:
    """Found by the differential run against the TypeScript reducer (tests/test_client_differential.py)."""
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
        assert [b.text for b in msg.content] == ["a\ufffdb", "ok \U0001f600"]
        assert agentmsg.Msg.from_json(msg.to_json()).to_dict() == msg.to_dict()
        assert [(p.pointer, p.rule) for p in r.problems] == [("/1", "lone-surrogate")]
    r = Reducer()
    for e in events[:-1]:
        r.feed(e)
    snap = r.snapshot()  # a snapshot joins and replaces the same way (nothing said until the end)
    assert snap is not None and [b.text for b in snap.content] == ["a\ufffdb", "ok \U0001f600"]
