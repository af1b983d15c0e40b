"""Fuzz and property suite of the message codec (issue 8, Deliver 4 and 5, message side).

Oracles:
* python-jsonschema (an independent validator) decides validity, on the open schemas and on the closed
  variant (strict reading); agentmsg must agree on every input that is JSON agentmsg can write back;
* what JSON cannot hold back is decided independently here (Python's own json module keeps big integers and
  lone surrogates): depth over 254, integers outside 64 bits, lone surrogates, NaN must be rejected with their
  rules;
* whatever is accepted can be written and reads back equal (same class, same unknown keys), byte-stably;
* the fast path and the detailed path decide and decode alike;
* the linear error reporter reports exactly what the (cubic) reference reporter reports;
* nothing raises but ValidationError.

Budget: ``make test`` runs the numbers below; ``make fuzz`` multiplies them (tests/_support/budget.py).
"""

from __future__ import annotations

import copy
import json
import math
import re
from datetime import datetime, timezone
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

import agentmsg
from agentmsg import ContentBlock, Msg, ValidationError
from agentmsg import message as message_module
from tests._support.budget import examples
from tests._support.mutators import edited_json_text, mutated
from tests._support.reference import reference_problems
from tests._support.strategies import any_block, messages
from tests.conftest import ROOT

pytestmark = [pytest.mark.fuzz, pytest.mark.oracle]

MSG_URI = "https://agentmsg.dev/schemas/v1/msg.schema.json"
BLOCK_URI = "https://agentmsg.dev/schemas/v1/content-block.schema.json"
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _registry(docs: Any) -> Any:
    from referencing import Registry, Resource

    return Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])


_LEAP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:)60((?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2}))")


def _date_time(value: object) -> bool:
    """RFC 3339 date-time as the oracle reads it: rfc3339-validator (python-jsonschema's checker), which
    takes no leap second at all, plus the one RFC 3339 allows: second 60 at 23:59 UTC (what agentmsg and
    jsonschema-rs accept; a leap second at any other minute is refused by both)."""
    if not isinstance(value, str):
        return True
    value = value.upper()  # as python-jsonschema's own check does
    if validate_rfc3339(value):
        return True
    m = _LEAP.fullmatch(value)
    if m is None or not validate_rfc3339(f"{m.group(1)}59{m.group(2)}"):
        return False
    # The fraction is dropped (it moves no minute): Python 3.10's fromisoformat reads only 3 or 6 digits of it.
    stamp = re.sub(r"\.[0-9]+", "", f"{m.group(1)}59{m.group(2)}").replace("Z", "+00:00")
    utc = datetime.fromisoformat(stamp).astimezone(timezone.utc)
    return (utc.hour, utc.minute) == (23, 59)


_FORMATS = copy.deepcopy(jsonschema.Draft202012Validator.FORMAT_CHECKER)
_FORMATS.checks("date-time")(_date_time)


def _oracle(uri: str, closed: bool) -> jsonschema.Draft202012Validator:
    docs = agentmsg.closed_schema_documents().values() if closed else agentmsg.schema_documents().values()
    return jsonschema.Draft202012Validator({"$ref": uri}, registry=_registry(docs), format_checker=_FORMATS)


OPEN = {"msg": _oracle(MSG_URI, False), "content-block": _oracle(BLOCK_URI, False)}
CLOSED = {"msg": _oracle(MSG_URI, True), "content-block": _oracle(BLOCK_URI, True)}
assert (ROOT / "schemas" / "msg.schema.json").exists()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _stdlib_parse(text: str | bytes) -> Any:
    """Python's own reading of the text (big integers exact, lone surrogates kept), or ValueError."""
    return json.loads(text, parse_constant=_reject_constant)


def _unwritable(value: Any) -> set[str]:
    """The rules agentmsg may report for a value JSON cannot hold back (it reports the first it finds; the
    value may break several): empty when the value can be written."""
    stack = [(value, 1)]
    rules = set()
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > 254:
                rules.add("max-depth")
            items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            for key, child in items:
                if isinstance(key, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in key):
                    rules.add("lone-surrogate")
                stack.append((child, depth + 1))
        elif isinstance(node, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in node):
                rules.add("lone-surrogate")
        elif isinstance(node, bool) or node is None:
            pass
        elif isinstance(node, int):
            if not -(2**63) <= node <= 2**64 - 1:
                rules.add("integer-range")
        elif isinstance(node, float) and not math.isfinite(node):
            rules.add("json")
    return rules


def _written(value: Msg | ContentBlock) -> bytes:
    """A message's or a block's JSON, as agentmsg writes it."""
    return value.to_json_bytes() if isinstance(value, Msg) else agentmsg.block_to_json(value).encode()


def _decide(kind: str, text: str | bytes) -> None:
    """Decode ``text`` with agentmsg and check it against every oracle."""
    decode = Msg.from_json if kind == "msg" else agentmsg.block_from_json
    try:
        got: Any = decode(text, notes=[])
    except ValidationError as exc:
        got = exc
    try:
        parsed = _stdlib_parse(text)
    except (ValueError, RecursionError) as exc:
        assert isinstance(got, ValidationError), "agentmsg accepted text Python's json cannot read"
        rules = {"json", "lone-surrogate", "max-depth", "utf-8"}
        if type(exc) is json.JSONDecodeError:  # UTF-8 text with a syntax error: said as one, a lone surrogate
            rules = {"json", "max-depth"}  # escape before it or not (as JSON.parse in @agentmsg/client says it)
        assert got.problems[0].rule in rules, got
        return
    bad = _unwritable(parsed)
    if bad:
        assert isinstance(got, ValidationError), f"accepted a value it cannot write back ({bad})"
        assert {p.rule for p in got.problems} <= bad, (bad, got)
        return
    # Readers read legacy shapes (AgentScope's seeds, AgentScope Python's lowercase roles, text content...) in their
    # current form first: the oracles judge that form.
    current, legacy = agentmsg.read_legacy_keys(parsed, kind)
    valid = OPEN[kind].is_valid(current)
    assert valid == (not isinstance(got, ValidationError)), (valid, got)
    if not valid:
        ours = sorted({(p.pointer, p.rule, p.message) for p in got.problems})
        assert ours == reference_problems(current, kind), "the linear reporter differs from the reference"
        return
    # Accepted: it writes back and reads back equal; strict reading and the unknown keys agree with the oracle.
    written = _written(got)
    again = decode(written)
    assert again == got and type(again) is type(got)
    assert _written(again) == written
    unknown = agentmsg.find_unknown_keys(got)
    assert CLOSED[kind].is_valid(current) == (not unknown)
    strict_ok = True
    try:
        (Msg.from_json(text, strict=True) if kind == "msg" else agentmsg.block_from_json(text, strict=True))
    except ValidationError:
        strict_ok = False
    assert strict_ok == (not unknown and not legacy)
    if kind == "msg":  # the detailed path decodes the same
        detailed = Msg._from_parsed(parsed, False, notes=[])
        assert detailed == got and type(detailed) is type(got)


@settings(SETTINGS, max_examples=examples(60))
@given(messages())
def test_constructed_messages_round_trip_byte_stably(m: Msg) -> None:
    text = m.to_json_bytes()
    again = Msg.from_json(text)
    assert again == m and type(again).__name__ != "Msg"
    assert again.to_json_bytes() == text and Msg.from_json(text.decode()) == m
    assert Msg.from_dict(m.to_dict()) == m
    parsed = json.loads(text)
    assert OPEN["msg"].is_valid(parsed)
    fast = message_module._fast_path()
    assert fast is not None and fast.decode(text) in (None, m)
    assert [p.pointer for p in agentmsg.find_unknown_keys(m)] == [
        p.pointer for p in agentmsg.find_unknown_keys(parsed, "msg")
    ]
    assert CLOSED["msg"].is_valid(parsed) == (not agentmsg.find_unknown_keys(m))


@settings(SETTINGS, max_examples=examples(100))
@given(st.data())
def test_mutated_messages_decide_as_the_oracles(data: st.DataObject) -> None:
    base = data.draw(messages()).to_dict()
    value = data.draw(mutated(json.loads(json.dumps(base, default=str))))
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    edited = data.draw(edited_json_text(text))
    if isinstance(edited, bytes):
        _decide_bytes(edited)
        return
    text = edited
    _decide("msg", text)
    _decide("msg", text.encode("utf-8", "surrogatepass"))


def _decide_bytes(raw: bytes) -> None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(ValidationError) as info:
            Msg.from_json(raw)
        assert info.value.problems[0].rule in {"json", "lone-surrogate", "utf-8"}
        return
    _decide("msg", raw)


@settings(SETTINGS, max_examples=examples(60))
@given(st.data())
def test_mutated_blocks_decide_as_the_oracles(data: st.DataObject) -> None:
    block = agentmsg.block_to_dict(data.draw(any_block))
    value = data.draw(mutated(json.loads(json.dumps(block, default=str))))
    _decide("content-block", json.dumps(value))


WEIRD = st.one_of(
    st.none(),
    st.integers(),
    st.sampled_from([2**64, -(2**63) - 1, 2**200, float("nan"), float("inf"), -0.0, 1.5, True]),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfffb", "\U0001f600", "", "USER", "user", "text", "finished"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(
        [
            {"type": "text", "text": "x"},
            {"type": "text"},
            {"type": "tool_use", "id": "c", "name": "f"},
            {"type": "url", "url": "u"},
            {"inputTokens": 2**64},
            (1, 2),
            b"bytes",
            object(),
            [[[[[[1]]]]]],
            json.loads("[" * 260 + "]" * 260),
            agentmsg.TextBlock(text="ok"),
            agentmsg.ToolCallState.FINISHED,
        ]
    ),
)
CONSTRUCTORS = {
    agentmsg.UserMessage: ["content", "name", "id", "metadata", "timestamp", "usage", "unknown_keys"],
    agentmsg.AssistantMessage: ["content", "name", "metadata", "timestamp", "usage", "unknown_keys"],
    agentmsg.TextBlock: ["text", "unknown_keys"],
    agentmsg.ThinkingBlock: ["thinking", "metadata", "unknown_keys"],
    agentmsg.ToolUseBlock: ["id", "name", "input", "content", "metadata", "state", "unknown_keys"],
    agentmsg.ToolResultBlock: ["id", "name", "output", "metadata", "state", "unknown_keys"],
    agentmsg.ImageBlock: ["source", "min_pixels", "max_pixels", "unknown_keys"],
    agentmsg.VideoBlock: ["source", "fps", "max_frames", "total_pixels", "unknown_keys"],
    agentmsg.DataBlock: ["source", "id", "name", "unknown_keys"],
    agentmsg.HintBlock: ["hint", "id", "source", "unknown_keys"],
}
REQUIRED: dict[type[object], dict[str, Any]] = {
    agentmsg.TextBlock: {"text": "t"},
    agentmsg.ThinkingBlock: {"thinking": "t"},
    agentmsg.ToolUseBlock: {"id": "c", "name": "f"},
    agentmsg.ToolResultBlock: {"id": "c"},
    agentmsg.ImageBlock: {"source": {"type": "url", "url": "u"}},
    agentmsg.VideoBlock: {"source": {"type": "url", "url": "u"}},
    agentmsg.DataBlock: {"source": {"type": "url", "url": "u"}},
    agentmsg.HintBlock: {"hint": "h"},
}


@settings(SETTINGS, max_examples=examples(300))
@given(st.sampled_from(sorted(CONSTRUCTORS, key=lambda c: c.__name__)), st.data())
def test_constructors_accept_or_raise_validation_error_only(cls: Any, data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(CONSTRUCTORS[cls]), unique=True, max_size=3))
    kwargs = {**REQUIRED.get(cls, {}), **{name: data.draw(WEIRD) for name in names}}
    try:
        made = cls(**kwargs)
    except ValidationError:
        return
    if isinstance(made, Msg):
        assert Msg.from_json(made.to_json()) == made
    else:
        again = agentmsg.block_from_json(agentmsg.block_to_json(made))
        assert again == made and type(again) is type(made)


@settings(SETTINGS, max_examples=examples(30))
@given(st.lists(messages(), max_size=3), st.data())
def test_conversations_accepted_are_written_and_read_back_equal(msgs: list[Msg], data: st.DataObject) -> None:
    value = json.loads(agentmsg.encode_messages(msgs).decode())
    if value and data.draw(st.booleans()):
        value[0] = data.draw(mutated(value[0]))
    text = json.dumps(value)
    notes: list[agentmsg.Problem] = []  # (a mutation may give a legacy shape: read with a note, not a warning)
    try:
        decoded = agentmsg.decode_messages(text, notes=notes)
    except ValidationError:
        return
    written = agentmsg.encode_messages(decoded)
    again: list[agentmsg.Problem] = []
    assert (
        agentmsg.decode_messages(written, notes=again) == decoded
        and agentmsg.encode_messages(agentmsg.decode_messages(written)) == written
    )
    assert again == []  # what was read is written back in the current form
    assert [type(m) for m in agentmsg.decode_messages(text.encode(), notes=[])] == [type(m) for m in decoded]


@pytest.mark.parametrize(
    "stamp",
    [
        "2016-12-31T23:59:60Z",
        "2016-12-31t23:59:60z",
        "2016-12-31T23:59:60.5Z",
        "2016-12-31T22:59:60-01:00",
        "2017-01-01T00:59:60+01:00",
        "2016-12-31T23:59:60+01:00",
        "2025-01-01T12:34:60Z",
        "2025-02-30T23:59:60Z",
        "2016-12-31T23:59:59Z",
    ],
)
def test_leap_seconds_decide_as_the_oracle(stamp: str) -> None:
    """A leap second is RFC 3339's at 23:59:60 UTC only: agentmsg reads what the oracle (python-jsonschema,
    its date-time check widened to RFC 3339's leap second, see _date_time) accepts, and refuses the rest
    (found by the fuzz test above: rfc3339-validator takes no leap second at all)."""
    doc = {"id": "m", "role": "USER", "content": [{"type": "text", "text": "hi"}], "timestamp": stamp}
    try:
        Msg.from_dict(doc)
    except ValidationError as exc:
        assert not OPEN["msg"].is_valid(doc), exc
        assert [p.rule for p in exc.problems] == ["timestamp"]
    else:
        assert OPEN["msg"].is_valid(doc)
