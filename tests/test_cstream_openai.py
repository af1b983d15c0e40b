"""The C whole-body fast path of the OpenAI Chat Completions stream parser (``agentmsg._speedups.openai_stream``,
``sdk/agentmsg/_csrc/openai.c``) against the Python parser (``providers/openai.py``'s StreamParser), which defines
the results: the same events key for key, or it gives up (None). The bench row's recorded streams are all taken
(but the n=3 one: choice 0 only); fuzzed bodies and hand-written tool call fragments either match or give up."""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import _native
from agentmsg.events._batch import EventList
from agentmsg.providers import openai
from agentmsg.providers._stream import run_parser
from tests._cstream import fast_events, python_events
from tests._cstream import same_or_gives_up as _same_or_gives_up
from tests.fuzz.budget import SCALE, examples
from tests.fuzz.msg_strategies import json_paths

if _native.speedups is None:
    pytest.skip("agentmsg._speedups is not built here (or AGENTMSG_PURE_PYTHON is set)", allow_module_level=True)
speedups = _native.speedups
FAST = speedups.openai_stream
Parser = openai.StreamParser

FIX = Path(__file__).parent / "fixtures" / "providers"
#: The bench row (bench/bench_streams.py _streams("openai")): every one taken but the n=3 stream (choice 0 only)
ROW = sorted((FIX / "openai").glob("*.sse")) + sorted((FIX / "dashscope").glob("compat_*.sse"))
NOT_TAKEN = {"stream_n3_multiple_choices.sse"}
OTHERS = [
    p for d in ("openai", "dashscope", "deepseek") for p in sorted((FIX / d).glob("*.sse")) if p not in ROW
]  # (none today: the row is every OpenAI-family stream)


def same_or_gives_up(parser: Any, fast: Any, body: bytes) -> bool:
    """tests._cstream.same_or_gives_up, and the events' JSON the same byte for byte (the key order of nested
    values too: a usage's counts, a not-kept note's value)."""
    took = _same_or_gives_up(parser, fast, body)
    if took:
        got = fast_events(fast, body)
        assert got is not None
        assert [orjson.dumps(e) for e in got] == [orjson.dumps(e) for e in python_events(parser, body)]
    return took


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


# ---- a. the recorded streams ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ROW, ids=_ids(ROW))
def test_recorded_streams_taken_by_c(path: Path) -> None:
    took = same_or_gives_up(Parser, FAST, path.read_bytes())
    assert took is (path.name not in NOT_TAKEN)


@pytest.mark.parametrize("path", OTHERS, ids=_ids(OTHERS))
def test_other_recorded_streams_same_or_given_up(path: Path) -> None:
    same_or_gives_up(Parser, FAST, path.read_bytes())


# ---- c. the public parse_stream -------------------------------------------------------------------------------


def _without_ids(events: list[dict[str, Any]]) -> list[list[tuple[str, Any]]]:
    return [[(k, v) for k, v in e.items() if k not in ("id", "createdAt")] for e in events]


@pytest.mark.parametrize("path", ROW, ids=_ids(ROW))
def test_parse_stream_gives_the_parsers_events(path: Path) -> None:
    body = path.read_bytes()
    out = openai.parse_stream(body)
    assert isinstance(out, EventList) is (path.name not in NOT_TAKEN)
    got = list(out)
    want = list(run_parser(Parser(), body))
    assert _without_ids(got) == _without_ids(want)
    assert len({e["id"] for e in got}) == len(got)  # ids unique, in order of the counter
    assert [e["id"] for e in got] == sorted(e["id"] for e in got)


# ---- tool calls: the clean case reproduced, the rest given up ------------------------------------------------


def _sse(*payloads: dict[str, Any] | str, done: bool = True) -> bytes:
    out = [p if isinstance(p, str) else json.dumps(p) for p in payloads]
    if done:
        out.append("[DONE]")
    return "".join(f"data: {p}\n\n" for p in out).encode()


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-1", "model": "m", "choices": [choice], **extra}


def _tc(index: Any, args: str | None = None, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    tc: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        tc["id"] = id
    return tc


def _calls(*tcs: dict[str, Any]) -> dict[str, Any]:
    return _chunk({"tool_calls": list(tcs)})


FINISH = _chunk(finish="tool_calls")
USAGE = {"id": "chatcmpl-1", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}

TAKEN: dict[str, bytes] = {
    # each call's first fragment: index, id, name and arguments (empty or not); later ones: index and arguments
    "one call": _sse(_calls(_tc(0, "", "call_a", "f")), _calls(_tc(0, '{"a"')), _calls(_tc(0, ": 1}")), FINISH),
    "first fragment with text": _sse(_calls(_tc(0, '{"a": 1', "call_a", "f")), _calls(_tc(0, "}")), FINISH, USAGE),
    "two calls": _sse(
        _calls(_tc(0, "", "call_a", "f")),
        _calls(_tc(0, "{}")),
        _calls(_tc(1, "", "call_b", "g")),
        _calls(_tc(1, '{"b": 2}')),
        FINISH,
    ),
    # a call without argument text starts when a later call's text comes (settled)
    "no arguments, then a later call's text": _sse(
        _calls(_tc(0, "", "call_a", "f")), _calls(_tc(1, "", "call_b", "g")), _calls(_tc(1, "{}")), FINISH
    ),
    # ... or in the same fragment list
    "two calls in one chunk": _sse(_calls(_tc(0, "", "call_a", "f"), _tc(1, "{}", "call_b", "g")), FINISH),
    # ... or when the reply ends, after the blocks end ([DONE], or a finish reason and the body's end)
    "waiting at the end": _sse(_chunk({"content": "Hi"}), _calls(_tc(0, "", "call_a", "f")), FINISH),
    "waiting at the end, calls before it": _sse(
        _calls(_tc(0, "{}", "call_a", "f")), _calls(_tc(1, "", "call_b", "g")), _calls(_tc(2, "", "call_c", "h"))
    ),
    "waiting, finish, no [DONE]": _sse(_calls(_tc(0, "", "call_a", "f")), FINISH, done=False),
    "waiting, thinking open": _sse(
        _chunk({"reasoning_content": "hmm"}), _calls(_tc(0, "", "call_a", "f")), _chunk(finish="stop")
    ),
    # ... or when a text or thinking block opens (the reply moved on)
    "moved on to text": _sse(_calls(_tc(0, "", "call_a", "f")), _chunk({"content": "after"}), FINISH),
    "moved on to thinking": _sse(_calls(_tc(0, "", "call_a", "f")), _chunk({"reasoning": "think"}), FINISH),
    "moved on to a refusal": _sse(_calls(_tc(0, "", "call_a", "f")), _chunk({"refusal": "no"}), FINISH),
    "text open, then a call": _sse(
        _chunk({"content": "a"}), _calls(_tc(0, "", "call_a", "f")), _chunk({"content": "b"})
    ),
    # reasoning ends when a call starts; a repeated id (DashScope's "") or the call's own is no news
    "thinking then a call": _sse(_chunk({"reasoning_content": "r"}), _calls(_tc(0, "{}", "call_a", "f")), FINISH),
    "later fragment with the id": _sse(
        _calls(_tc(0, "", "call_a", "f")), _calls(_tc(0, "{}", "call_a")), _calls(_tc(0, "", "")), FINISH
    ),
    "arguments not JSON at the end": _sse(_calls(_tc(0, '{"a": ', "call_a", "f")), _chunk(finish="length")),
    "arguments JSON but no object": _sse(_calls(_tc(0, "[1]", "call_a", "f")), FINISH),
    "stop with calls": _sse(_calls(_tc(0, "{}", "call_a", "f")), _chunk(finish="stop")),
    "no finish, [DONE]": _sse(_calls(_tc(0, "{}", "call_a", "f"))),
    "cut, call started": _sse(_calls(_tc(0, "{", "call_a", "f")), done=False),
    "indexes out of order": _sse(_calls(_tc(3, "", "call_a", "f")), _calls(_tc(1, "{}", "call_b", "g")), FINISH),
    "fragment not an object": _sse(_calls("x", _tc(0, "{}", "call_a", "f")), FINISH),  # type: ignore[arg-type]
    # a blank line more between events is nothing, as in the SSE decoder (once read as the event before again)
    "a blank line more": _sse(_chunk({"content": "a"})).replace(b"\n\n", b"\n\n\n", 1),
}

GIVEN_UP: dict[str, bytes] = {
    "name in a later fragment": _sse(_calls(_tc(0, "", "call_a", "f")), _calls(_tc(0, "{}", None, "f")), FINISH),
    "name split": _sse(_calls(_tc(0, "", "call_a", "get_")), _calls(_tc(0, "", None, "weather")), FINISH),
    "no index": _sse(_calls(_tc(None, "{}", "call_a", "f")), FINISH),
    "bool index": _sse(_calls(_tc(True, "{}", "call_a", "f")), FINISH),
    "id that changes": _sse(_calls(_tc(0, "{", "call_a", "f")), _calls(_tc(0, "}", "call_b")), FINISH),
    "second call at an index": _sse(_calls(_tc(0, "{}", "call_a", "f")), _calls(_tc(0, "{}", "call_b", "g")), FINISH),
    "no id": _sse(_calls(_tc(0, "{}", None, "f")), FINISH),
    "id after the name": _sse(_calls(_tc(0, "", None, "f")), _calls(_tc(0, "{}", "call_a")), FINISH),
    # (the builder marks a call without an id so: such an id is read as none, and the call's id minted)
    "id starting with NUL": _sse(_calls(_tc(0, "{}", "\x00call_a", "f")), FINISH),
    "no name": _sse(_calls(_tc(0, "{}", "call_a")), FINISH),
    "fragment at an index without a call": _sse(_calls(_tc(0, "{}")), FINISH),
    "repeated id": _sse(_calls(_tc(0, "{}", "call_a", "f")), _calls(_tc(1, "{}", "call_a", "g")), FINISH),
    "repeated id, both waiting": _sse(
        _calls(_tc(0, "", "call_a", "f")), _calls(_tc(1, "", "call_a", "g")), _calls(_tc(1, "{}")), FINISH
    ),
    "arguments as an object": _sse(_calls({"index": 0, "id": "c", "function": {"name": "f", "arguments": {}}})),
    "custom tool": _sse(_calls({"index": 0, "id": "c", "custom": {"name": "f", "input": "x"}}), FINISH),
    "thought signature": _sse(
        _calls({"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}, "thought_signature": "s"})
    ),
    "legacy function_call": _sse(_chunk({"function_call": {"name": "f", "arguments": "{}"}}), FINISH),
    "cut while a call waits": _sse(_calls(_tc(0, "", "call_a", "f")), done=False),
    "second choice": _sse({"id": "x", "choices": [{"index": 1, "delta": {"content": "a"}}]}),
    "error beside choices": _sse(_chunk({"content": "a"}, error={"message": "boom"})),
    "images": _sse(_chunk({"images": [{"image_url": {"url": "https://x"}}]})),
    "content parts": _sse(_chunk({"content": [{"type": "text", "text": "a"}]})),
    "a usage count that is no count": _sse(_chunk({"content": "a"}), {"id": "x", "usage": {"prompt_tokens": "3"}}),
    "a foreign payload": _sse({"hello": 1}, _chunk({"content": "a"})),
    "no id for the reply": _sse({"choices": [{"index": 0, "delta": {"content": "a"}}]}),
    # bodies the SSE reader gives up on (cs_sse_next's give-up was once read as the event before it again)
    "cut mid-line": _sse(_chunk({"content": "a"}))[:-3],
}


@pytest.mark.parametrize("name", list(TAKEN))
def test_clean_tool_call_fragments_taken(name: str) -> None:
    assert same_or_gives_up(Parser, FAST, TAKEN[name])


@pytest.mark.parametrize("name", list(GIVEN_UP))
def test_other_fragments_given_up(name: str) -> None:
    assert fast_events(FAST, GIVEN_UP[name]) is None
    python_events(Parser, GIVEN_UP[name])  # (the Python parser reads it)


def test_waiting_call_starts_where_the_parser_starts_it() -> None:
    # (a check of the comparison's own premise: the waiting call's START is where the builder puts it)
    events = fast_events(FAST, TAKEN["moved on to text"])
    assert events is not None
    kinds = [e["type"] for e in events]
    assert kinds.index("TOOL_CALL_START") < kinds.index("TEXT_BLOCK_START")
    events = fast_events(FAST, TAKEN["waiting at the end"])
    assert events is not None
    kinds = [e["type"] for e in events]
    assert kinds.index("TEXT_BLOCK_END") < kinds.index("TOOL_CALL_START") < kinds.index("TOOL_CALL_END")


# ---- b. mutated bodies ----------------------------------------------------------------------------------------

VALUES: list[Any] = [
    None, 0, -1, 5, 1.5, 1e308, 2**70, -(2**70), 2**63, True, False, "", "x", "null", "[DONE]", "stop",
    "tool_calls", "é" * 3, [], [None], [1, "a"], {}, {"type": None}, {"a": {"b": []}}, {"content": "z"},
]  # fmt: skip
TEXTS = ["é", "\u2028", "😀", "a\\nb", '"q"', "\\", "\x00", "\U0010ffff", "Ω" * 50, " "]
RAW_STRINGS = ['"\\ud83d"', '"\\ude00x"', '"\\ud83d\\ude00"', '"\\u00e9\\n\\t\\"\\\\"', '"\\u0000"', '"\\/"']


def _events(body: bytes) -> list[bytes]:
    return [e for e in body.split(b"\n\n") if e.strip()]


def _join(events: list[bytes], sep: bytes = b"\n") -> bytes:
    return b"".join(e + sep + sep for e in events)


def _payload_of(event: bytes) -> Any:
    data = event.split(b"data: ", 1)[-1]
    try:
        return json.loads(data)
    except ValueError:
        return None


def _with_payload(event: bytes, obj: Any, raw: str | None = None) -> bytes:
    head = event.split(b"data: ", 1)[0]
    text = raw if raw is not None else json.dumps(obj, ensure_ascii=False)
    return head + b"data: " + text.encode("utf-8", "surrogatepass")  # (a lone surrogate: bytes of no UTF-8)


def _mutate_payload(obj: Any, rng: random.Random) -> tuple[Any, str | None]:
    paths = [p for p in json_paths(obj) if p]
    if not paths:
        return obj, None
    path = rng.choice(paths)
    node = obj
    for key in path[:-1]:
        node = node[key]
    op = rng.random()
    if op < 0.2 and isinstance(node, dict):
        del node[path[-1]]
    elif op < 0.3 and isinstance(node, dict):
        node[rng.choice(["zz_unknown", "type", "index", "id", "name", "arguments"])] = rng.choice(VALUES)
    elif op < 0.45 and isinstance(node[path[-1]], str):
        node[path[-1]] = rng.choice(TEXTS) + node[path[-1]] + rng.choice(TEXTS)
    elif op < 0.55 and isinstance(node[path[-1]], str):  # a raw JSON string (escapes, lone surrogates)
        marker = "\x01MARK\x01"
        node[path[-1]] = marker
        raw = json.dumps(obj).replace(json.dumps(marker), rng.choice(RAW_STRINGS))
        return obj, raw
    else:
        node[path[-1]] = json.loads(json.dumps(rng.choice(VALUES)))
    return obj, None


def _mutated(raw: bytes, rng: random.Random) -> bytes:
    events = _events(raw)
    sep = b"\n"
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.randrange(10)
        if not events:
            break
        i = rng.randrange(len(events))
        if op <= 2:  # a payload's field removed, replaced, added; a string changed
            obj = _payload_of(events[i])
            if obj is not None:
                obj, text = _mutate_payload(obj, rng)
                events[i] = _with_payload(events[i], obj, text)
        elif op == 3:
            del events[i]
        elif op == 4:
            events.insert(i, events[i])
        elif op == 5 and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif op == 6:  # [DONE] moved (or added)
            events = [e for e in events if b"[DONE]" not in e]
            events.insert(rng.randrange(len(events) + 1), b"data: [DONE]")
        elif op == 7:  # an event type, a comment, an id field
            events[i] = (
                rng.choice([b"event: foo\n", b"event: error\n", b": hi\n", b"id: 7\n", b"event: ping\n"]) + events[i]
            )
        elif op == 8:  # an unknown payload, or a blank one
            events.insert(i, rng.choice([b'data: {"object": "x"}', b"data: ", b'data: {"choices": []}', b"data: 5"]))
        else:  # line ends
            sep = rng.choice([b"\r\n", b"\n"])
    body = _join(events, sep)
    if rng.random() < 0.1:
        body = body[: rng.randrange(len(body) + 1)]  # cut anywhere
    return body


def _random_reply(rng: random.Random) -> bytes:
    """A reply of random chunks: text, reasoning, refusal, tool call fragments of every shape (index, id, name and
    arguments each present or not), logprobs, finish reasons and usage, in any order, ended or cut."""
    chunks: list[dict[str, Any] | str] = []
    for _ in range(rng.randint(1, 9)):
        kind = rng.random()
        if kind < 0.5:
            tc: dict[str, Any] = {}
            if rng.random() < 0.95:
                tc["index"] = rng.choice([0, 0, 1, 1, 2, 3])
            if rng.random() < 0.5:
                tc["id"] = rng.choice(["call_a", "call_b", "call_c", "", "call_a"])
            fn: dict[str, Any] = {}
            if rng.random() < 0.5:
                fn["name"] = rng.choice(["f", "g", "", "f"])
            if rng.random() < 0.8:
                fn["arguments"] = rng.choice(["", "", "{", "}", "{}", '"a"', "1"])
            tc["function"] = fn
            chunks.append(_calls(tc))
        elif kind < 0.6:
            chunks.append(_chunk({rng.choice(["content", "reasoning_content", "reasoning", "refusal"]): "x"}))
        elif kind < 0.65:
            chunks.append(_chunk({"content": "y"}, logprobs={"content": [1]}))
        elif kind < 0.8:
            chunks.append(_chunk(finish=rng.choice(["stop", "tool_calls", "length", "null"])))
        else:
            chunks.append(USAGE)
    return _sse(*chunks, done=rng.random() < 0.8)


def _clean(events: list[dict[str, Any]]) -> bool:
    """The Python parser read it without a problem or an error."""
    return not any(e["type"] == "CUSTOM" and e["name"] in ("agentmsg.problem", "agentmsg.error") for e in events)


def test_cut_at_every_event_boundary() -> None:
    taken = total = 0
    for path in ROW:
        events = _events(path.read_bytes())
        for n in range(len(events) + 1):
            total += 1
            taken += same_or_gives_up(Parser, FAST, _join(events[:n]))
    # a reply cut while a call waits for its text is given up; the rest are taken
    assert taken > total * 0.7, (taken, total)


def test_mutated_bodies_same_or_given_up() -> None:
    rng = random.Random(20261127)
    sources = [p.read_bytes() for p in ROW]
    deadline = time.monotonic() + 8.0 * SCALE
    n = taken = clean = clean_taken = 0
    for k in range(examples(4000)):
        if time.monotonic() > deadline and k >= 500:
            break
        body = _random_reply(rng) if k % 3 == 2 else _mutated(sources[k % len(sources)], rng)
        want = python_events(Parser, body)
        took = same_or_gives_up(Parser, FAST, body)
        n += 1
        taken += took
        if _clean(want):
            clean += 1
            clean_taken += took
    print(
        f"openai C fast path: {taken}/{n} mutated bodies taken; of the {clean} the parser reads cleanly, {clean_taken}"
    )
    assert clean_taken > clean * 0.5, (clean_taken, clean)


# ---- memory ---------------------------------------------------------------------------------------------------


def test_no_leak() -> None:
    rng = random.Random(7)
    bodies = [p.read_bytes() for p in ROW] + list(TAKEN.values()) + list(GIVEN_UP.values())
    bodies += [_mutated(bodies[k % len(ROW)], rng) for k in range(100)]

    def run(times: int) -> None:
        for _ in range(times):
            for b in bodies:
                fast_events(FAST, b)

    run(20)
    gc.collect()
    before = sys.getallocatedblocks()
    run(200)
    gc.collect()
    assert sys.getallocatedblocks() - before < 200
