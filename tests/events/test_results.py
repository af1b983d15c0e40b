"""Reducer.check_results(): does each reduced message cover its reply's AGENT_RESULT?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings

from agentmsg import Msg, Reducer, emit_events
from agentmsg.errors import short_repr
from tests._support.budget import examples
from tests._support.cli import run
from tests._support.events import CASES, events_of, load
from tests._support.valid import assistant_messages


def checked(events: list[Any]) -> list[tuple[str, str, str]]:
    r = Reducer()
    r.feed_many(events)
    r.finish()
    return [(p.pointer, p.rule, p.message) for p in r.check_results()]


def test_java_streams_cover_their_result() -> None:
    with_result = [n for n in CASES if any(e.get("type") == "AGENT_RESULT" for e in events_of(load(n)))]
    assert "java-case5" in with_result and "java-case5-duplicate-type-jsonl" in with_result
    for name in with_result:  # (but a vector about what the check says: its ``checks``)
        said = [(c["pointer"], c["rule"], c["message"]) for c in load(name).get("checks", [])]
        assert checked(events_of(load(name))) == said, name


def test_lost_deltas_are_reported() -> None:
    events = events_of(load("java-case5"))
    lost = [e for e in events if not (e["type"] == "TOOL_CALL_DELTA" and e["toolCallId"] == "call_a")]
    lost = [e for e in lost if e["type"] != "TEXT_BLOCK_DELTA"]
    problems = checked(lost)
    assert [(p, rule) for p, rule, _ in problems] == [("/0/content", "agent-result")] * 2
    assert "text 'Hello'" in problems[0][2] and "'call_a'" in problems[1][2]


def test_a_renamed_tool_call_in_the_result_is_reported() -> None:
    events = events_of(load("java-case5"))
    for e in events:
        if e["type"] == "AGENT_RESULT":
            e["result"]["content"][2]["name"] = "other"
    ((pointer, rule, message),) = checked(events)
    assert (pointer, rule) == ("/0/content", "agent-result") and "'other'" in message


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(assistant_messages())
def test_emitted_streams_cover_their_result(m: Msg) -> None:
    assert checked(emit_events(m, chunk_size=2)) == []


def test_cli_check_result(tmp_path: Path) -> None:
    events = events_of(load("java-case5"))
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert run("reduce", "--check-result", str(good)).returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events if e["type"] != "TEXT_BLOCK_DELTA"))
    r = run("reduce", "--check-result", str(bad))
    assert r.returncode == 1 and "[agent-result]" in r.stderr and len(r.stdout.splitlines()) == 1
    assert run("reduce", str(bad)).returncode == 0  # not checked unless asked


def test_a_result_with_another_role_is_reported() -> None:
    events = events_of(load("java-case5"))
    for e in events:
        if e["type"] == "AGENT_RESULT":
            e["result"]["role"] = "USER"
    problems = checked(events)
    assert ("/0/role", "agent-result") in [(p, rule) for p, rule, _ in problems]


def test_a_result_in_the_seeds_shape_is_checked_in_its_current_form() -> None:
    """AGENT_RESULT's tool call with message.md's ``arguments`` is compared by what it is read as (``input``): the
    same arguments cover the stream's call; others are reported, as they would be in the current form."""
    events = events_of(load("legacy-agent-result"))
    assert checked(events) == []
    for e in events:
        if e["type"] == "AGENT_RESULT":
            e["result"]["content"][0]["arguments"] = {"path": "/etc"}
    ((pointer, rule, message),) = checked(events)
    assert (pointer, rule) == ("/0/content", "agent-result") and "'/etc'" in message


def _result_with(block: dict[str, Any], *before: dict[str, Any]) -> list[dict[str, Any]]:
    """A reply whose stream says the text "hi" (and ``before``), then an AGENT_RESULT of the one ``block``."""
    at = "2026-01-01T00:00:00Z"
    events = [
        {"type": "AGENT_START"},
        {"type": "TEXT_BLOCK_START", "blockId": "b"},
        {"type": "TEXT_BLOCK_DELTA", "blockId": "b", "delta": "hi"},
        {"type": "TEXT_BLOCK_END", "blockId": "b"},
        *before,
        {"type": "AGENT_RESULT", "result": {"id": "m", "role": "ASSISTANT", "content": [block]}},
        {"type": "AGENT_END"},
    ]
    return [{**e, "id": str(i), "createdAt": at, "replyId": "m"} for i, e in enumerate(events)]


def _trusted_checks(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    r = Reducer()
    r.feed_many(events, trusted=True)
    r.finish()
    return [(p.pointer, p.rule, p.message) for p in r.check_results()]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", ["deep", "shared"])
def test_a_result_value_nested_deep_or_shared_is_quoted_cut(shape: str) -> None:
    """AGENT_RESULT's text and tool call id were quoted by their whole ``repr`` (and a text compared by its
    ``str``): fed trusted, one nested 100,000 deep raised a bare RecursionError and one sharing its members 300
    deep (2**300 paths) hung. Each is now a problem quoting the value cut (``short_repr``): a text that is no
    string is in no text."""
    value: Any = "x"
    for _ in range(100_000 if shape == "deep" else 300):
        value = [value] if shape == "deep" else [value, value]
    cut = (
        "[[[[[[[...]]]]]]]"
        if shape == "deep"
        else "[[[[[[[...], [...]], [[...], [...]]], [[[...], [...]], [[...], [...]]]], [[[[..."
    )
    assert _trusted_checks(_result_with({"type": "text", "text": value})) == [
        ("/0/content", "agent-result", f"AGENT_RESULT's text {cut} is not in the stream's")
    ]
    assert _trusted_checks(_result_with({"type": "tool_use", "id": value, "name": "f", "input": {}})) == [
        ("/0/content", "agent-result", f"AGENT_RESULT's tool call {cut} is not in the stream")
    ]


def test_a_long_result_value_is_quoted_as_short_repr_cuts_it() -> None:
    """A long text, tool call id, name and input are quoted cut by ``short_repr`` (the middle of a string elided),
    not at the 80th character of their whole repr."""
    long = "y" * 100
    call = {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}
    end = {"type": "TOOL_CALL_END", "toolCallId": "c", "input": {"k": long}}
    assert _trusted_checks(_result_with({"type": "text", "text": long})) == [
        ("/0/content", "agent-result", f"AGENT_RESULT's text {short_repr(long)} is not in the stream's")
    ]
    got = _trusted_checks(_result_with({"type": "tool_use", "id": "c", "name": long, "input": [long]}, call, end))
    assert got == [
        (
            "/0/content",
            "agent-result",
            f"tool call 'c': the stream gives 'f' {short_repr({'k': long})},"
            f" AGENT_RESULT {short_repr(long)} {short_repr([long])}",
        )
    ]
    assert "..." in short_repr(long) and long not in got[0][2]
