"""``agentmsg.errors``: the SDK's exceptions as users handle them."""

from __future__ import annotations

import copy
import pickle
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from agentmsg import (
    SizeLimitError,
    UserMessage,
    ValidationError,
    block_to_json,
    read_records,
    reduce_events,
    reduce_stream,
    validate,
)
from agentmsg.errors import MESSAGE_MAX, SHOWN_PROBLEMS, Problem, WrongTypeError, bounded, short_repr
from agentmsg.events import sniff_format
from agentmsg.providers import get as get_provider
from agentmsg.ui import get as ui_get
from agentmsg.ui import negotiate


@pytest.mark.parametrize("cls", [ValidationError, SizeLimitError])
def test_validation_errors_pickle_and_copy(cls: type[ValidationError]) -> None:
    """Exception's reduce rebuilt the error from its text, taken for its problems: one per character."""
    original = cls([Problem("/content/0/type", "role-content", "USER may not hold thinking")], "msg")
    vars(original)["__notes__"] = ["while reading conversation.json"]  # (add_note, __notes__ typed: Python 3.11+)
    for again in (pickle.loads(pickle.dumps(original)), copy.copy(original), copy.deepcopy(original)):
        assert type(again) is cls
        assert again.problems == original.problems and again.kind == "msg"
        assert str(again) == str(original) == "invalid msg: /content/0/type: USER may not hold thinking [role-content]"
        assert vars(again)["__notes__"] == ["while reading conversation.json"]


def test_a_long_message_keeps_its_start_and_its_end_and_says_how_much_it_leaves_out() -> None:
    """A message quotes the value it is about, and a value may be megabytes (an image's base64 in the wrong field):
    the schema's messages repeated it whole, so one bad field made an exception's text, and a log line, as large."""
    value = "A" * 10_000
    problem = Problem("/content/0/text", "type", f'"{value}" is not of type "string"')
    assert len(problem.message) <= MESSAGE_MAX + len("...(10,000 characters left out)...")
    assert problem.message == f'"{"A" * 279}...(9,666 characters left out)...{"A" * 55}" is not of type "string"'
    assert bounded("x" * MESSAGE_MAX) == "x" * MESSAGE_MAX  # (at the limit: whole)
    assert bounded("é" * (MESSAGE_MAX + 1)).count("é") == MESSAGE_MAX * 360 // 400


def test_the_pointer_stays_whole_and_is_shown_bounded() -> None:
    key = "k" * 5_000
    problem = Problem(f"/metadata/{key}", "not", "null is not allowed")
    assert problem.pointer == f"/metadata/{key}"  # (machine-readable: RFC 6901, whole)
    assert len(str(problem)) < 2 * MESSAGE_MAX and str(problem).endswith(": null is not allowed [not]")


def test_an_error_of_many_problems_lists_the_first_ones_and_keeps_them_all() -> None:
    msg = {"id": "m", "role": "USER", "content": [{"type": "text", "text": 1}] * 5_000, "metadata": {}}
    with pytest.raises(ValidationError) as info:
        validate(msg, "msg")
    assert len(info.value.problems) == 5_000
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid msg: 5000 problems" and len(lines) == 2 + SHOWN_PROBLEMS
    assert lines[1] == '  /content/0/text: 1 is not of type "string" [type]'
    assert lines[-1] == f"  ... and {5_000 - SHOWN_PROBLEMS:,} more (the error's problems list them all)"
    few = ValidationError([Problem(f"/{i}", "type", "no") for i in range(SHOWN_PROBLEMS)], "event")
    assert len(str(few).splitlines()) == 1 + SHOWN_PROBLEMS  # (all shown: no "more" line)


def test_a_problem_said_of_several_places() -> None:
    """A formatter says a change made at many places once: ``pointers`` holds every place, ``under`` prefixes each."""
    p = Problem("/1", "turns-merged", "merged", None, ("/2", "/5"))
    assert p.pointers == ("/1", "/2", "/5") and p.count == 3
    assert p.under("/0").pointers == ("/0/1", "/0/2", "/0/5")
    single = Problem("/1", "type", "bad")
    assert single.pointers == ("/1",) and single.count == 1 and single.other_pointers == ()


@pytest.mark.parametrize(
    ("lookup", "said"),
    [
        ("agentmsg.providers.get", "unknown provider 'nope'; known: openai"),
        ("agentmsg.ui.get", "no UI protocol 'nope': one of agentscope"),
    ],
)
def test_an_unknown_name_is_an_sdk_error_and_still_a_key_error(lookup: str, said: str) -> None:
    """providers.get and ui.get raised a bare KeyError for a name they do not know, which ``except
    agentmsg.AgentmsgError`` let through: one class now, UnknownNameError, an AgentmsgError and a KeyError (an
    ``except KeyError`` written before still catches it), with the same message."""
    import importlib

    from agentmsg import AgentmsgError, UnknownNameError

    module, _, name = lookup.rpartition(".")
    get = getattr(importlib.import_module(module), name)
    with pytest.raises(UnknownNameError) as info:
        get("nope")
    assert isinstance(info.value, AgentmsgError) and isinstance(info.value, KeyError)
    assert said in str(info.value)


@pytest.mark.parametrize(
    ("call", "pointer"),
    [
        (lambda: sniff_format(None), "/head"),  # type: ignore[arg-type]
        (lambda: UserMessage("x").blocks(1), "/kind"),  # type: ignore[call-overload]
        (lambda: negotiate([ui_get("ag-ui")], 1, None), "/query"),  # type: ignore[arg-type]
        # (a source or a block that is none: a bare TypeError from the loop, then a ValidationError alone)
        (lambda: reduce_events(None), ""),  # type: ignore[arg-type]
        (lambda: list(read_records(None)), ""),  # type: ignore[arg-type]
        (lambda: block_to_json(None), ""),  # type: ignore[arg-type]
        (lambda: reduce_stream(None), ""),  # type: ignore[arg-type]
        (lambda: list(get_provider("openai").parse_stream(None)), ""),  # type: ignore[arg-type]
    ],
)
def test_an_argument_of_the_wrong_type_is_a_validation_error_and_still_a_type_error(
    call: Callable[[], object], pointer: str
) -> None:
    """These calls raised a bare TypeError for an argument of the wrong type, then a ValidationError (a
    ValueError), which an ``except TypeError`` written before let through: WrongTypeError is both, and pickles."""
    with pytest.raises(WrongTypeError) as info:
        call()
    assert isinstance(info.value, ValidationError) and isinstance(info.value, TypeError)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "type")]
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is WrongTypeError and again.problems == info.value.problems


def test_a_count_or_seconds_past_any_float_or_printable_int_is_the_sdks_error() -> None:
    """An int past the interpreter's digit limit (4300) or a float's range given as a count or seconds raised a
    bare ValueError ("Exceeds the limit ... for integer string conversion", its repr in the message) or
    OverflowError (``math.isnan``, ``float()``): trim(budget=-10**5000), a client's timeout=10**400. Now it is the
    SDK's ValidationError (rule minimum or maximum), quoted bounded; a huge count or seconds where infinity is
    taken is taken."""
    from agentmsg import Msg, context
    from agentmsg.errors import ValidationError, require_count, require_seconds

    huge = 10**5000
    msgs = [Msg.from_dict({"id": "u", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}})]
    for call, rule in (
        (lambda: context.trim(msgs, budget=-huge, provider="openai"), "minimum"),
        (lambda: require_count(-huge, "n", 1, "n is a count"), "minimum"),
        (lambda: require_seconds(-huge, "t", "t is seconds", infinite=True), "exclusiveMinimum"),
        (lambda: require_seconds(huge, "t", "t is seconds", infinite=False), "maximum"),
    ):
        try:
            call()
        except ValidationError as exc:
            assert exc.problems[0].rule == rule and len(str(exc)) < 400, str(exc)[:400]
        else:
            raise AssertionError("accepted")
    assert require_seconds(huge, "t", "t is seconds", infinite=True) == float("inf")
    assert require_count(huge, "n", 1, "n is a count") == huge
    assert short_repr(-huge) == "-2**16609 or more in size (16610 bits)" and len(short_repr([[-huge]])) <= 80


class _Float32:
    """A real number that is no float subclass, as numpy.float32 is (numbers.Real registers it)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __float__(self) -> float:
        return self.value

    def __lt__(self, other: object) -> bool:
        return self.value < other  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        return self.value <= other  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, _Float32) else other)

    __hash__ = None  # type: ignore[assignment]


def test_seconds_that_are_nan_are_refused_whatever_real_type_holds_them() -> None:
    """NaN seconds held by a real number that is no float (numpy.float32's NaN) were refused (math.isnan); once the
    NaN test looked at floats only, to spare an int past a float's range, they were taken and returned as nan, a
    timeout of no length at all. They are refused again (rule type), and the huge int is still taken."""
    import numbers

    from agentmsg.errors import require_seconds

    numbers.Real.register(_Float32)
    for infinite in (False, True):
        with pytest.raises(WrongTypeError) as info:
            require_seconds(_Float32(float("nan")), "t", "t is seconds", infinite=infinite)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/t", "type")]
        assert require_seconds(_Float32(1.5), "t", "t is seconds", infinite=infinite) == 1.5
    assert require_seconds(10**5000, "t", "t is seconds", infinite=True) == float("inf")


class _SelfEqualNaN(float):
    """A float subclass whose ``!=`` says it equals itself, NaN too (a subclass's comparisons are its own)."""

    def __ne__(self, other: object) -> bool:
        return False


def test_seconds_are_checked_as_the_float_they_are_returned_as() -> None:
    """8c2a5344 made the NaN test ``value != value``, of the value given, and dropped math.isnan of a float: a float
    subclass whose ``!=`` says otherwise then passed as NaN seconds (math.isnan had refused it), and a Fraction above
    0 too small for a float came back as 0.0 seconds where more than 0 is asked. The float returned is checked too:
    NaN is rule type, 0.0 exclusiveMinimum; 1.5 of the subclass is still taken."""
    from fractions import Fraction

    from agentmsg.errors import require_seconds

    for infinite in (False, True):
        with pytest.raises(WrongTypeError) as info:
            require_seconds(_SelfEqualNaN("nan"), "t", "t is seconds", infinite=infinite)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/t", "type")]
    with pytest.raises(ValidationError) as tiny:
        require_seconds(Fraction(1, 10**400), "t", "t is seconds", infinite=False)
    assert [(p.pointer, p.rule) for p in tiny.value.problems] == [("/t", "exclusiveMinimum")]
    assert require_seconds(_SelfEqualNaN(1.5), "t", "t is seconds", infinite=False) == 1.5
    assert require_seconds(Fraction(1, 10**400), "t", "t is seconds", infinite=False, zero=True) == 0.0


class _BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _shared(make: Callable[[Any], Any]) -> Any:
    """A value of ten members, each the same value of ten, seven levels down: 10**7 paths held in 70 objects."""
    value: Any = "x" * 200
    for _ in range(7):
        value = make(value)
    return value


def _peak_of(call: Callable[[], object]) -> tuple[int, object]:
    """The traced memory's peak while ``call`` runs, and what it gave."""
    tracemalloc.start()
    try:
        out = call()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "make",
    [
        lambda: "x" * 100_000_000,
        lambda: b"y" * 100_000_000,
        lambda: list(range(1_000_000)),
        lambda: dict.fromkeys(range(1_000_000)),
        lambda: set(range(1_000_000)),
        lambda: _nested(100_000),
        lambda: _BrokenRepr(),
        lambda: [ValueError("z" * 100_000_000)],
        lambda: 10**5000,
        lambda: _shared(lambda v: [v] * 10),
        lambda: _shared(lambda v: (v,) * 10),
        lambda: _shared(lambda v: dict.fromkeys(range(10), v)),
    ],
    ids=[
        "str-100MB",
        "bytes-100MB",
        "list-1e6",
        "dict-1e6",
        "set-1e6",
        "nested-1e5",
        "raising-repr",
        "exception",
        "int",
        "shared-list",
        "shared-tuple",
        "shared-dict",
    ],
)
def test_a_quoted_value_costs_bounded_memory_whatever_it_is(make: Callable[[], object]) -> None:
    """Three helpers quoted a value in a message: jsontext's safe_repr took ``repr(value)`` whole before cutting it
    (a 100 MB string copied whole: 100,000,180 bytes at its peak, a million-item list 9 MB), its _short raised
    on a value nested past the stack or with a raising ``__repr__``, and short_repr sorted a dict's keys (8 MB)
    and copied bytes whole (reprlib has no cut for them). One helper quotes every value now, in memory bounded
    whatever the value, never raising: a Message's repr with a 100 MB id as well. A value that shares its members
    (a list of ten of the same list, seven levels down) was quoted whole to reprlib's depth and width before being
    cut, 6**6 reprs, 1.2 MB at the peak and 86 ms for 80 characters: the members are quoted only until the quote is
    full."""
    value = make()
    peak, text = _peak_of(lambda: short_repr(value))
    assert isinstance(text, str) and len(text) <= 80 and peak < 64_000, (peak, text)
    if isinstance(value, _BrokenRepr):
        assert text == "<_BrokenRepr>"
    msg = UserMessage("hi")
    msg.id = value  # type: ignore[assignment]
    peak, text = _peak_of(lambda: repr(msg))
    assert isinstance(text, str) and text.startswith("UserMessage(id=") and peak < 64_000, (peak, text)


def test_a_provider_is_named_with_its_article_by_one_rule() -> None:
    """Three places chose "a" or "an" before a provider's name or title, each by its own test of the first letter
    (tools.py's of an uppercase vowel, the CLI's and the client's of a lowercase one): one function says it now,
    the same words for every registered provider."""
    from agentmsg.errors import with_article
    from agentmsg.providers import get, providers

    for entry in providers():
        for word in (entry.spec.name, get(entry.spec.name).spec.title):
            assert with_article(word) == ("an " if word[0].lower() in "aeiou" else "a ") + word
    assert [with_article(w) for w in ("openai", "Anthropic", "gemini", "DashScope", "")] == [
        "an openai",
        "an Anthropic",
        "a gemini",
        "a DashScope",
        "a ",
    ]
