"""Bad input never crashes: every failure is an agentmsg.ValidationError naming pointer and rule."""

from __future__ import annotations

import enum
import json
import random
import tracemalloc
from collections.abc import Sequence
from typing import Any

import pytest

import agentmsg
from agentmsg import Msg, SizeLimitError, UserMessage, ValidationError
from agentmsg.errors import MESSAGE_MAX, SHOWN_PROBLEMS, Problem
from tests._support.budget import SEED, rounds
from tests._support.mutators import HUGE_KEYS, HUGE_VALUES, mutate_json
from tests.conftest import ROOT

VECTORS = ROOT / "tests" / "conformance" / "vectors"

GOOD = '{"id":"m1","name":null,"role":"USER","content":[{"type":"text","text":"hi"}],"metadata":{},"timestamp":null,"usage":null}'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "not json",
        "{",
        GOOD[:-1],
        GOOD[: len(GOOD) // 2],
        '{"id":"m1",}',
        "[]",
        "null",
        "42",
        '"a string"',
        b"\xff\xfe\x00",
        '{"id":"m1","role":"USER","content":[{"type":"text","text":"\\ud800"}]}',
    ],
)
def test_malformed_or_truncated_json(text: str | bytes) -> None:
    with pytest.raises(ValidationError) as info:
        Msg.from_json(text)
    assert info.value.problems and all(isinstance(p.pointer, str) and p.rule for p in info.value.problems)


@pytest.mark.parametrize(
    "value",
    [
        {"id": 1, "role": "USER", "content": []},
        {"id": "m", "role": ["USER"], "content": []},
        {"id": "m", "role": "USER", "content": {"type": "text"}},
        {"id": "m", "role": "USER", "content": [None]},
        {"id": "m", "role": "USER", "content": [["text"]]},
        {"id": "m", "role": "USER", "content": [{"type": 5}]},
        {"id": "m", "role": "USER", "content": [{"type": None, "text": "x"}]},
        {"id": "m", "role": "USER", "content": [{"type": "image", "source": "https://x"}]},
        {"id": "m", "role": "USER", "content": [{"type": "image", "source": {"type": None}}]},
        {
            "id": "m",
            "role": "ASSISTANT",
            "content": [{"type": "tool_result", "id": "c", "output": [{"type": "tool_use"}]}],
        },
        {"id": "m", "role": "USER", "content": [], "usage": {"inputTokens": "7"}},
        {"id": "m", "role": "USER", "content": [], "usage": {"inputTokens": 1.5}},
        {"id": "m", "role": "USER", "content": [], "metadata": []},
        {1: "non-string key"},
        {"id": "m", "role": "USER", "content": [], "metadata": {"x": object()}},
        {"id": "m", "role": "USER", "content": [], "metadata": {"x": float("nan")}},
        "a string",
        None,
        [1, 2],
    ],
)
def test_wrong_types_from_dict(value: Any) -> None:
    with pytest.raises(ValidationError):
        Msg.from_dict(value)


def _nested_json(depth: int) -> str:
    return '{"id":"m","role":"USER","content":[],"metadata":{"a":' + "[" * depth + "]" * depth + "}}"


def test_deep_nesting_json_20000() -> None:
    with pytest.raises(SizeLimitError) as info:
        Msg.from_json(_nested_json(20_000))
    assert info.value.problems[0].rule == "max-depth"
    assert isinstance(info.value, ValidationError)


def test_deep_nesting_dict_20000() -> None:
    value: Any = []
    for _ in range(20_000):
        value = [value]
    with pytest.raises(SizeLimitError):
        Msg.from_dict({"id": "m", "role": "USER", "content": [], "metadata": {"a": value}})
    tool_result: dict[str, Any] = {"type": "text", "text": "x"}
    for _ in range(20_000):
        tool_result = {"type": "tool_result", "id": "c", "output": [tool_result]}
    with pytest.raises(SizeLimitError):
        Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [tool_result]})
    with pytest.raises(SizeLimitError):
        agentmsg.validate({"id": "m", "role": "ASSISTANT", "content": [tool_result]})


def test_moderate_nesting_is_fine() -> None:
    m = Msg.from_json(_nested_json(100))
    assert Msg.from_json(m.to_json()) == m


def test_fifty_megabyte_string_round_trips() -> None:
    big = "x" * (50 * 1024 * 1024)
    m = Msg.from_json('{"id":"m","role":"USER","content":[{"type":"text","text":"' + big + '"}]}')
    assert len(m.text_content) == len(big)
    assert len(m.to_json_bytes()) > len(big)


def test_size_limit_is_a_validation_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 1024)
    with pytest.raises(SizeLimitError) as info:
        Msg.from_json('{"id":"m","role":"USER","content":[{"type":"text","text":"' + "x" * 2000 + '"}]}')
    assert info.value.problems[0].rule == "max-bytes"


def test_not_text_input() -> None:
    with pytest.raises(ValidationError):
        Msg.from_json(12345)  # type: ignore[arg-type]


def test_error_lists_every_problem_with_pointer() -> None:
    with pytest.raises(ValidationError) as info:
        Msg.from_dict({"id": "", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": 1}, {"type": "image"}]})
    pointers = {p.pointer for p in info.value.problems}
    assert {"/id", "/content/0/type", "/content/0/thinking", "/content/1", "/content/1/type"} <= pointers
    text = str(info.value)
    assert "/content/0/thinking" in text and "problems" in text


def _said_briefly(problems: Sequence[Problem], label: str) -> None:
    for p in problems:
        assert len(p.message) <= MESSAGE_MAX + 40, (label, p.rule, p.message[:120])


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", ["msg", "content-block", "event"])
def test_what_is_said_of_a_huge_value_is_bounded(kind: str) -> None:
    """A value of tens of kilobytes anywhere (a string, a list, an object, a key): every problem's message stays
    short and so does the error's text, strict or tolerant, validated or read (a message's notes, a reducer's
    problems). The schema's messages quoted the value whole: one image's base64 in the wrong field made an
    exception's text, and a log line, megabytes."""
    cases = [c["instance"] for c in json.loads((VECTORS / f"{kind}.json").read_text())["cases"] if c["valid"]]
    rng = random.Random(f"{SEED}/huge/{kind}")
    for round_ in rounds(2, share=1 / 3):
        for case in cases:
            bad = mutate_json(case, rng, values=HUGE_VALUES, edits=(1, 1, 2), add=0.3, keys=HUGE_KEYS)
            label = f"{kind} (seed {SEED}, round {round_ + 1})"
            for strict in (False, True):
                try:
                    agentmsg.validate(bad, kind, strict=strict)
                except ValidationError as exc:
                    _said_briefly(exc.problems, label)
                    lines = str(exc).splitlines()
                    assert len(lines) <= SHOWN_PROBLEMS + 2 and all(len(x) < 2 * MESSAGE_MAX + 200 for x in lines)
            notes: list[Problem] = []
            try:
                if kind == "msg":
                    Msg.from_dict(bad, notes=notes)
                elif kind == "event":
                    reducer = agentmsg.Reducer()
                    reducer.feed(bad)
                    reducer.finish()
                    notes = list(reducer.problems)
            except ValidationError as exc:
                _said_briefly(exc.problems, label)
            _said_briefly(notes, label)


@pytest.mark.parametrize(
    ("value", "kind", "sentence"),
    [
        (
            {"id": "m", "role": "USER", "content": [], "metadata": {"k": None}},
            "msg",
            "metadata values may not be null (AgentScope Java drops such a key: leave it out), got None",
        ),
        (
            {"type": "tool_result", "id": "c", "name": "t", "output": [], "metadata": {"k": None}},
            "content-block",
            "a tool result's metadata values may not be null (AgentScope Java refuses the whole message: leave the key"
            " out), got None",
        ),
    ],
)
def test_a_null_metadata_value_is_refused_in_words(value: dict[str, Any], kind: str, sentence: str) -> None:
    """The schema's own sentence (x-message), where the validator said '{"type":"null"} is not allowed for null'."""
    with pytest.raises(ValidationError) as info:
        agentmsg.validate(value, kind)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule, problem.message) == ("/metadata/k", "not", sentence)


class _Text(str):
    pass


class _Count(int):
    pass


class _Score(float):  # as numpy.float64 is
    pass


class _Colour(str, enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("value", [_Text("x"), _Count(3), _Score(0.5)], ids=["str", "int", "float"])
def test_a_subclass_of_a_json_scalar_in_metadata_is_refused_with_its_pointer(value: Any) -> None:
    """A subclass of str, int or float that is no enum (numpy.float64, numpy.str_) is no JSON value: a float's
    raised TypeError from UserMessage (orjson cannot write it) and from to_json after a change; a str's or int's
    was refused by the schema validator with no pointer ('not a JSON value: Unsupported type')."""
    with pytest.raises(ValidationError) as info:
        UserMessage("hi", metadata={"k": value})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata/k", "json-value")]
    with pytest.raises(ValidationError) as info:
        agentmsg.validate({"id": "m", "role": "USER", "content": [], "metadata": {"k": value}})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata/k", "json-value")]
    msg = UserMessage("hi")
    msg.metadata["k"] = _Score(0.5)
    with pytest.raises(ValidationError) as info:
        msg.to_json()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata/k", "json-value")]


def test_an_enum_of_a_json_scalar_in_metadata_is_written_as_its_value() -> None:
    msg = UserMessage("hi", metadata={"colour": _Colour.RED, "level": _Level.HIGH})
    assert json.loads(msg.to_json())["metadata"] == {"colour": "red", "level": 3}


@pytest.mark.parametrize("sign", [1, -1])
def test_an_integer_past_pythons_decimal_limit_is_refused_as_out_of_range(sign: int) -> None:
    """An integer of more than 4300 digits given by a caller raised Python's ValueError ("Exceeds the limit (4300
    digits) for integer string conversion") from the constructors, validate and to_json: the error message wrote
    it in decimal."""
    huge = sign * 10**5000
    calls: list[Any] = [
        lambda: UserMessage("hi", metadata={"k": huge}),
        lambda: agentmsg.validate({"id": "m", "role": "USER", "content": [], "metadata": {"k": huge}}),
    ]
    for call in calls:
        with pytest.raises(ValidationError) as info:
            call()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("/metadata/k", "integer-range")
        assert "16610 bits" in problem.message and len(problem.message) < 200
    msg = UserMessage("hi")
    msg.metadata[huge] = 1  # type: ignore[index]
    with pytest.raises(ValidationError) as info:
        msg.to_json()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata", "json-value")]


@pytest.mark.parametrize("digits", [21, 400, 4300, 4301, 10_000, 100_000])
@pytest.mark.parametrize("sign", ["", "-"])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_an_integer_past_64_bits_in_text_is_integer_range_at_its_pointer_whatever_its_size(
    digits: int, sign: str, as_bytes: bool
) -> None:
    """An integer of more than 4300 digits in JSON text (more than msgspec, and Python's int, read) was refused as
    text that is no JSON (rule ``json``, "number is infinity"), where one of 21 digits is ``integer-range`` at its
    pointer. Every size is now ``integer-range`` with its pointer, said by its first digits and its length, past
    runs of digits in strings and in floats' whole parts and fractions; reading the digits takes time linear in
    them (they are never turned into an int: the test holds a 100,000-digit one, which Python refuses to)."""
    number = sign + "1" + "0" * (digits - 1)
    text = (
        '{"id":"m","role":"USER","content":[{"type":"text","text":"id 1' + "2" * digits + '"}],'
        '"metadata":{"f":[1.' + "3" * digits + ", 4" + "5" * 30 + '.5, 6e-7],"deep":[0,{"n":' + number + "}]}}"
    )
    with pytest.raises(ValidationError) as info:
        Msg.from_json(text.encode() if as_bytes else text)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == ("/metadata/deep/1/n", "integer-range")
    assert problem.message.endswith(" is outside the 64-bit range [-2**63, 2**64 - 1] JSON is written in")
    assert len(problem.message) < 200
    if digits <= 60 or digits > 4300:  # (one read as an int, from 61 digits on: its first digits, or its bits)
        shown = number if digits <= 60 else f"{number[:20]}...({len(number)} digits)"
        assert problem.message.startswith(f"integer {shown} is outside")


def _peak(kind: str, value: Any) -> int:
    """The traced memory's peak while ``agentmsg.validate`` refuses ``value`` as ``kind``."""
    tracemalloc.start()
    try:
        with pytest.raises(ValidationError):
            agentmsg.validate(value, kind)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", ["content-block", "event"])
def test_a_value_that_is_no_object_costs_a_union_what_it_costs_one_object_schema(kind: str) -> None:
    """A string (or any non-object) where a discriminated union (a content block, an event) is expected is said
    as before: ``type`` and ``anyOf`` at the root. The validator's refusal of each branch (nine for a block, one
    per event type), each with a copy of the value and a message quoting it whole, is no longer asked for: a
    4 MiB string took 44 (block) and 132 (event) times its size at the peak, against 17 for kind ``msg``."""
    uri = f"https://agentmsg.dev/schemas/v1/{'content-block' if kind == 'content-block' else 'agent-event'}.schema.json"
    with pytest.raises(ValidationError) as info:
        agentmsg.validate("ab", kind)
    assert [(p.pointer, p.rule, p.message, p.schema_location) for p in info.value.problems] == [
        ("", "anyOf", "\"ab\" is not valid under any of the schemas listed in the 'anyOf' keyword", f"{uri}#/anyOf"),
        ("", "type", '"ab" is not of type "object"', f"{uri}#/type"),
    ]

    value = "x" * (4 << 20)
    assert _peak(kind, value) < 1.25 * _peak("msg", value)


def test_an_event_of_an_unknown_type_costs_what_one_object_schema_costs() -> None:
    """An event whose ``type`` is no event type (``agentmsg validate`` of a line of a made-up type with a large
    delta) is said as before: the enum at ``/type``, nothing else. The validator is no longer handed the rest of
    the event, which it copied and quoted whole in its refusal of each of the 31 branches, none of them
    reported: a 16 MiB delta peaked at 0.9 GB, a 4 MiB one at 113 times its size here, against 17 for the same
    string where a message is expected."""
    uri = "https://agentmsg.dev/schemas/v1/agent-event.schema.json"
    with pytest.raises(ValidationError) as info:
        agentmsg.validate({"type": "NO_SUCH_TYPE", "delta": "ab"}, "event")
    assert [(p.pointer, p.rule, p.message, p.schema_location) for p in info.value.problems] == [
        (
            "/type",
            "enum",
            '"NO_SUCH_TYPE" is not one of "AGENT_START", "AGENT_END" or 29 other candidates',
            f"{uri}#/properties/type/enum",
        ),
    ]

    text = "x" * (4 << 20)
    assert _peak("event", {"type": "NO_SUCH_TYPE", "delta": text}) < 1.25 * _peak("msg", text)
