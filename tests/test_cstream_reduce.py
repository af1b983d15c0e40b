"""The reducer's C fast path (``agentmsg._speedups.reduce_reply``, sdk/agentmsg/_csrc/reduce.c) against the Python
reducer, which defines the results: for ``reduce_events(events, trusted=True)`` of a list, the C path gives the very
message the Python reducer gives (equal as objects, the same bytes written), or it gives up (None) and the Python
reducer reduces the list.

Lists: every provider fixture through every provider's Python stream parser and response reader, the reducer's
conformance vectors, ``emit_events`` of the conformance messages (with and without AGENT_RESULT), and a seeded,
time-boxed mutation of them all (``AGENTMSG_FUZZ_SECONDS``, ``AGENTMSG_FUZZ_SEED``: drop, duplicate, reorder,
retype, change values and their types, remove keys, add keys and CUSTOM events). Memory: many runs of each list
leave nothing behind."""

from __future__ import annotations

import copy
import gc
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentmsg import (
    Msg,
    Reducer,
    ValidationError,
    emit_events,
    encode_messages,
    reduce_events,
)
from agentmsg.events import reducer as reducer_mod
from agentmsg.events._batch import EventList
from agentmsg.providers import anthropic, dashscope, gemini, openai
from agentmsg.providers._stream import run_parser
from tests.test_events_reducer import CASES, events_of, load

pytestmark = pytest.mark.skipif(reducer_mod._reduce_reply is None, reason="the C speed-ups are not built")

ROOT = Path(__file__).resolve().parent
FIX = ROOT / "fixtures" / "providers"
PROVIDERS: dict[str, Any] = {"anthropic": anthropic, "openai": openai, "gemini": gemini, "dashscope": dashscope}
BUDGET = float(os.environ.get("AGENTMSG_FUZZ_SECONDS", "15"))
SEED = int(os.environ.get("AGENTMSG_FUZZ_SEED", "0"))
STAMP = "2025-01-02T03:04:05.678901Z"


def python_reduce(events: list[Any]) -> list[Any]:
    """The Python reducer's result for ``reduce_events(events, trusted=True)`` (the C path not tried)."""
    r = Reducer()
    r.feed_many(events, trusted=True)
    return r.finish()


def c_reduce(events: list[Any]) -> Msg | None:
    return reducer_mod._fast_reply(events)


def same_or_gives_up(events: list[Any]) -> bool:
    """The C path's message is the Python reducer's (True), or it gave up (False)."""
    before = copy.deepcopy(events)
    got = c_reduce(events)
    assert events == before  # nothing changed in the events
    want = python_reduce(events)
    if got is None:
        return False
    assert len(want) == 1 and type(got) is type(want[0])
    assert [got] == want
    assert encode_messages([got]) == encode_messages(want)
    assert not _containers(got) & _containers(events)  # the message shares no list or dict with the events
    return True


def _containers(root: Any) -> set[int]:
    """The ids of the lists and dicts reachable from ``root`` (a message's through its blocks' and its own maps)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, Msg):
            stack.extend([node.metadata, *node.content])
        elif hasattr(node, "__attrs_attrs__"):
            stack.extend(getattr(node, a.name) for a in node.__attrs_attrs__)
        elif type(node) in (dict, list) and id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.values() if type(node) is dict else node)
    return seen


def test_message_shares_no_container_with_the_events() -> None:
    """The message is built from the events' values (msgspec.convert keeps what it is given where the type is Any):
    none of its lists or dicts is one of the events', nested in a map or not (a change to one never shows in the
    other), whether the C path's data went through the JSON text or not."""

    def reply(end: dict[str, Any], model_end: dict[str, Any]) -> list[dict[str, Any]]:
        ev = [
            {"type": "AGENT_START", "replyId": "r", "role": "assistant"},
            {"type": "MODEL_CALL_START", "replyId": "r", "modelName": "m"},
            {"type": "TOOL_CALL_START", "replyId": "r", "toolCallId": "c1", "toolCallName": "f"},
            {"type": "TOOL_CALL_DELTA", "replyId": "r", "toolCallId": "c1", "delta": '{"a": {"b": [1]}, "d": 1}'},
            {"type": "TOOL_CALL_END", "replyId": "r", "toolCallId": "c1", "toolCallName": "f", **end},
            {"type": "MODEL_CALL_END", "replyId": "r", **model_end},
            {"type": "AGENT_END", "replyId": "r"},
        ]
        return [{"id": f"e{i}", "createdAt": STAMP, **e} for i, e in enumerate(ev)]

    taken = 0
    for end, model_end in [
        ({}, {}),
        ({"metadata": {"k": "v"}}, {"metadata": {"finishReason": "stop", "model": "m"}}),
        ({"metadata": {"k": {"nested": [1]}}}, {"usage": {"inputTokens": 1, "outputTokens": 2}}),
        ({"input": {"x": {"y": [1, {"z": 2}]}}}, {"metadata": {"finishReason": "stop"}}),
        ({"input": {"x": 1}, "metadata": {"thoughtSignature": "s"}}, {}),
    ]:
        taken += same_or_gives_up(reply(end, model_end))
    assert taken


def _stream_events(provider: str, body: bytes) -> list[dict[str, Any]] | None:
    try:
        return list(run_parser(PROVIDERS[provider].StreamParser(), body))
    except ValidationError:
        return None


def _own(path: Path) -> str:
    """The provider whose parser reads a fixture (DashScope's compatible mode is OpenAI's)."""
    folder = path.parent.name
    if folder == "dashscope" and path.name.startswith("compat_"):
        return "openai"
    return "openai" if folder == "deepseek" else folder


def recorded() -> list[tuple[str, list[dict[str, Any]]]]:
    """The recorded streams, each through its own provider's parser."""
    out = []
    for path in sorted(FIX.glob("*/*.sse")):
        events = _stream_events(_own(path), path.read_bytes())
        assert events is not None
        out.append((f"{path.parent.name}/{path.name}", events))
    return out


def corpus() -> list[tuple[str, list[Any]]]:
    out: list[tuple[str, list[Any]]] = []
    for path in sorted(FIX.glob("*/*.sse")) + sorted(FIX.glob("*/*.jsonl")):
        body = path.read_bytes()
        for provider in PROVIDERS:
            events = _stream_events(provider, body)
            if events is not None:
                out.append((f"{path.parent.name}/{path.name} as {provider}", events))
    for path in sorted(FIX.glob("*/*.json")):
        for provider, mod in PROVIDERS.items():
            try:
                events = mod.response_events(path.read_bytes())
            except ValidationError:
                continue
            out.append((f"{path.parent.name}/{path.name} as a {provider} response", events))
    for name in CASES:
        out.append((f"reducer vector {name}", events_of(load(name))))
    cases = json.loads((ROOT / "conformance" / "vectors" / "msg.json").read_text(encoding="utf-8"))["cases"]
    for case in cases:
        if not case.get("valid") or case["instance"].get("role") != "ASSISTANT":
            continue
        msg = Msg.from_dict(case["instance"])
        for chunk in (None, 3):
            ids = (f"e{n}" for n in range(10**9))
            events = emit_events(msg, chunk_size=chunk, id_factory=ids.__next__, clock=lambda: STAMP)
            out.append((f"emit_events({case['id']}, chunk_size={chunk})", events))
            no_result = [e for e in events if e["type"] != "AGENT_RESULT"]
            out.append((f"emit_events({case['id']}, chunk_size={chunk}) without AGENT_RESULT", no_result))
    return out


CORPUS = corpus()
RECORDED = recorded()
#: recorded streams the C path gives up on, and why
NOT_TAKEN = {"openai/stream_n3_multiple_choices.sse": "three choices: three replies"}


@pytest.mark.parametrize(("label", "events"), CORPUS, ids=[label for label, _ in CORPUS])
def test_corpus_same_as_python(label: str, events: list[Any]) -> None:
    same_or_gives_up(events)


def test_corpus_taken() -> None:
    taken = sum(same_or_gives_up(events) for _, events in CORPUS)
    assert taken >= len(CORPUS) // 3, f"C took {taken} of {len(CORPUS)} lists"


@pytest.mark.parametrize(("label", "events"), RECORDED, ids=[label for label, _ in RECORDED])
def test_recorded_streams_taken(label: str, events: list[dict[str, Any]]) -> None:
    """The recorded provider streams, as their own parser emits them, are all clean replies: the C path takes each."""
    assert same_or_gives_up(events) is (label not in NOT_TAKEN)


def test_reduce_events_takes_lists_and_untouched_event_lists() -> None:
    events = next(events for label, events in RECORDED if label == "anthropic/stream_sdk_basic.sse")
    want = python_reduce(events)
    assert reduce_events(events, trusted=True) == want
    assert reduce_events(EventList(events), trusted=True) == want
    read = EventList(events)
    next(read)  # an EventList read from is reduced from where it is, by Python
    assert reduce_events(read, trusted=True) == python_reduce(events[1:])
    # not trusted, strict, a source or a name: the Python reducer
    assert reduce_events(events) == want
    assert reduce_events(events, trusted=True, name="agent") == python_reduce_named(events, "agent")


def python_reduce_named(events: list[Any], name: str) -> list[Any]:
    r = Reducer(name=name)
    r.feed_many(events, trusted=True)
    return r.finish()


# ---- mutations ------------------------------------------------------------------------------------------------

JUNK: list[Any] = [
    None,
    5,
    -1,
    0,
    2**63,
    2**64 + 1,
    1.5,
    float("nan"),
    True,
    False,
    "",
    "x",
    "__fragment__",
    "STOP",
    [],
    [1],
    {},
    {"a": 1},
    {"rule": "r", "message": "m"},
    "\ud800",
    "\u00e9\u2600",
]
TYPES = [
    "AGENT_START",
    "AGENT_END",
    "MODEL_CALL_START",
    "MODEL_CALL_END",
    "TEXT_BLOCK_START",
    "TEXT_BLOCK_DELTA",
    "TEXT_BLOCK_END",
    "THINKING_BLOCK_START",
    "THINKING_BLOCK_DELTA",
    "THINKING_BLOCK_END",
    "TOOL_CALL_START",
    "TOOL_CALL_DELTA",
    "TOOL_CALL_END",
    "REQUEST_STOP",
    "CUSTOM",
    "AGENT_RESULT",
    "DATA_BLOCK_START",
    "bogus",
]
KEYS = [
    "type",
    "id",
    "createdAt",
    "replyId",
    "name",
    "blockId",
    "delta",
    "signature",
    "redactedData",
    "provider",
    "model",
    "modelName",
    "toolCallId",
    "toolCallName",
    "thoughtSignature",
    "metadata",
    "input",
    "state",
    "usage",
    "reason",
    "generateReason",
    "value",
    "source",
    "role",
    "unknownKey",
]
VALUES: dict[str, list[Any]] = {
    "metadata": [
        {"finishReason": "stop"},
        {"finishReason": 5},
        {"model": "m2", "refusal": True},
        {"refusal": 1},
        {"agentmsg_minted_id": "x"},
        {"a": None},
        {"x": [1, {"y": 2**64}]},
    ],
    "usage": [
        {"inputTokens": 5},
        {"outputTokens": -3, "time": 0.5},
        {"totalTokens": 2**63},
        {"time": "1"},
        {"time": True},
        {"inputTokens": 1.0},
        {"cachedTokens": 2**64 - 1},
        {"time": float("nan")},
    ],
    "input": [{"a": 1}, {}, [1], "x", {"b": float("inf")}],
    "state": ["pending", "allowed", "bogus", 5, ["x"]],
    "createdAt": [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:00.1z",
        "2025-01-01t00:00:00.1234567890Z",
        "2025-01-01T00:00:00+01:00",
        "2025-1-01T00:00:00Z",
        "2025-01-01T00:00:00.Z",
        "\uff12025",
    ],
    "generateReason": ["TOOL_CALLS", "", "bogus", 5],
    "delta": ["", "{", '{"a":', "1}", '{"x": "\\ud800"}', "\ud800", "\udc00"],
    "name": ["agentmsg.error", "agentmsg.problem", "agentmsg.not-kept"],
    "value": [{"message": "boom"}, {"rule": "r"}, []],
    "toolCallName": ["__fragment__", "f", ""],
}


def mutate(rng: random.Random, events: list[Any]) -> list[Any]:
    out: list[Any] = [dict(e) if isinstance(e, dict) else e for e in events]
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        at = rng.randrange(len(out))
        op = rng.randrange(10)
        e = out[at]
        if op == 0:
            del out[at]
        elif op == 1:
            out.insert(at, out[rng.randrange(len(out))])  # a duplicate (same id)
        elif op == 2:
            source = out[rng.randrange(len(out))]
            copied = dict(source) if isinstance(source, dict) else {}
            copied["id"] = f"new-{rng.randrange(10**6)}"
            out.insert(at, copied)  # the same event again under a new id
        elif op == 3 and at + 1 < len(out):
            out[at], out[at + 1] = out[at + 1], out[at]
        elif not isinstance(e, dict):
            continue
        elif op == 4:
            out[at] = {**e, "type": rng.choice(TYPES)}
        elif op == 5 and e:
            e = dict(e)
            del e[rng.choice(list(e))]
            out[at] = e
        elif op == 6:
            key = rng.choice(list(e)) if e and rng.random() < 0.5 else rng.choice(KEYS)
            choices = VALUES.get(key, []) + JUNK
            out[at] = {**e, key: copy.deepcopy(rng.choice(choices))}
        elif op == 7:
            custom = {"type": "CUSTOM", "id": f"c-{rng.randrange(10**6)}", "createdAt": STAMP}
            custom["name"] = rng.choice(VALUES["name"] + JUNK)
            custom["value"] = copy.deepcopy(rng.choice(VALUES["value"] + JUNK))
            out.insert(at, custom)
        elif op == 8:
            out[at] = {**e, f"x{rng.randrange(3)}": rng.choice(JUNK)}  # an unknown key
        else:
            out[at] = rng.choice([None, 5, "x", [e]])  # not an event
    return out


def test_mutations_same_as_python() -> None:
    """Mutated lists: C never diverges from Python. Of the mutations of lists C takes that Python reduces without
    a problem (a duplicate, a CUSTOM event, an unknown key, a value the rules ignore), C takes most; those it gives
    up are mostly events outside the reply (Python then makes a second message)."""
    rng = random.Random(SEED)
    bases = [(events, c_reduce(events) is not None) for _, events in CORPUS]
    deadline = time.monotonic() + BUDGET
    runs = taken = clean = clean_taken = 0
    while time.monotonic() < deadline:
        base, base_taken = rng.choice(bases)
        events = mutate(rng, base)
        runs += 1
        try:
            ok = same_or_gives_up(events)
        except AssertionError:
            raise AssertionError(f"seed {SEED}, run {runs}: C diverges from Python on {events!r:.3000}") from None
        taken += ok
        r = Reducer()
        r.feed_many(events, trusted=True)
        r.finish()
        if base_taken and not r.problems:
            clean += 1
            clean_taken += ok
    print(f"mutations: {runs} runs, C took {taken}; of {clean} clean mutations of lists C takes, C took {clean_taken}")
    assert runs > 100
    assert clean_taken >= clean // 2, f"C took {clean_taken} of the {clean} lists Python reduces without a problem"


# ---- memory ---------------------------------------------------------------------------------------------------


def c_data(events: list[Any]) -> Any:
    return reducer_mod._reduce_reply(events, 1024, reducer_mod._CALL_STATES, reducer_mod.parse_arguments)


def test_no_memory_left_behind() -> None:
    """20,000 runs of the C path over each recorded stream's list (taken), 2,000 over each mutated corpus list (many
    given up at some point), 1,000 of the whole way to the Msg: nothing stays behind."""
    rng = random.Random(SEED + 1)
    lists = [(events, 20_000) for _, events in RECORDED] + [(mutate(rng, events), 2_000) for _, events in CORPUS]
    runs_of = [(c_data, events, runs) for events, runs in lists]
    runs_of += [(c_reduce, events, 1_000) for _, events in RECORDED]
    gc.collect()
    gc.disable()  # (nothing here makes cycles: counting blocks needs no collection)
    try:
        for fn, events, runs in runs_of:
            for _ in range(20):  # warm: caches, interned strings
                fn(events)
            grown = []
            for _ in range(2):  # a leak grows in each round; a cache that fills up (orjson's keys) in one
                before = sys.getallocatedblocks()
                for _ in range(runs):
                    fn(events)
                grown.append(sys.getallocatedblocks() - before)
            assert min(grown) < 50, f"{grown} blocks more after {runs} runs of {fn.__name__}"
    finally:
        gc.enable()


class _Unequal:
    """A key whose == raises, with the hash of the key ``like``: a lookup of that key in an event holding it fails."""

    def __init__(self, like: str) -> None:
        self.like = like

    def __hash__(self) -> int:
        return hash(self.like)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")


def _outcome(fn: Any, events: list[Any]) -> Any:
    try:
        return fn(events)
    except Exception as exc:  # the outcome compared: a result or the type of the exception
        return type(exc)


@pytest.mark.parametrize("key", ["source", "id", "type", "blockId", "delta", "usage", "finishReason"])
def test_an_event_whose_lookup_fails_is_left_to_python(key: str) -> None:
    """C gives up (no exception of its own) when looking up a key of an event fails; Python then decides (the same
    lookup fails there: the error, or a problem)."""
    events = copy.deepcopy(next(events for label, events in RECORDED if label == "anthropic/stream_sdk_basic.sse"))
    for e in events[1:]:  # (a dict cannot hold both the key and one with its hash that fails ==)
        if key == "finishReason" and e["type"] == "MODEL_CALL_END":
            del e["metadata"][key]
            e["metadata"][_Unequal(key)] = 1
        elif key in e or key in ("source", "id", "type"):
            e.pop(key, None)
            e[_Unequal(key)] = 1
    assert c_data(events) is None
    assert _outcome(lambda ev: reduce_events(ev, trusted=True), events) == _outcome(python_reduce, events)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        chr(0xD800),
        "a" + chr(0xDFFF),
        1 << 64,
        -(1 << 63) - 1,
        1 << 70,
        type("S", (str,), {})("x"),
        (1, 2),
        {1: 2},
        b"x",
        {"deep": {"x": 1}},
    ],
)
def test_plain_json_refuses_what_the_json_round_trip_would_change(value: Any) -> None:
    """plain_json (which lets the reducer skip orjson.dumps and the JSON decoder) refuses a value the round trip
    writes otherwise (NaN as null) or refuses (a lone surrogate, an integer beyond 64 bits, a subclass, a tuple, a
    key that is no str), and a list or dict nested in a message map (msgspec.convert would keep the event's own)."""
    plain = reducer_mod._plain_json
    assert plain is not None
    assert plain({"id": "m", "metadata": {"k": 1.5, "s": "é😀", "n": None}}, 1 << 20)
    assert not plain({"id": "m", "metadata": {"k": value}}, 1 << 20)
    assert not plain({"id": "m", "content": [{"type": "text", "text": "x" * 100}]}, 100)  # over the size limit
