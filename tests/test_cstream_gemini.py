"""The C whole-body fast path of the Gemini stream parser (agentmsg._speedups.gemini_stream, _csrc/gemini.c)
against gemini.StreamParser, which defines the results: for every body it does not give up on, the very same
events, key for key and in the same order.

* every recorded stream of the bench's row is taken by C, and equal; every other Gemini fixture is equal or given up;
* thousands of bodies mutated from the fixtures (seeded: events dropped, duplicated, reordered, cut; payload values
  replaced by other JSON values; keys removed and added; partial arguments and usage counts of other kinds; text
  with escapes; CRLF/LF; [DONE] moved) are equal or given up, and a good share of the ones the Python parser reads
  without a problem is taken;
* ``parse_stream(body)`` returns an EventList of the parser's events (ids and times aside).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from agentmsg import _native
from agentmsg.events._batch import EventList
from agentmsg.providers import gemini
from agentmsg.providers._stream import run_parser
from tests._cstream import fast_events, python_events, same_or_gives_up
from tests.fuzz.budget import examples
from tests.fuzz.msg_strategies import json_paths

if _native.speedups is None:
    pytest.skip("agentmsg._speedups is not built here (or AGENTMSG_PURE_PYTHON is set)", allow_module_level=True)
speedups = _native.speedups
FAST = speedups.gemini_stream

FIX = Path(__file__).parent / "fixtures" / "providers" / "gemini"
BENCH_ROW = [
    "stream_function_call.sse",
    "stream_function_call_no_args_partial.sse",
    "stream_function_call_partial_args.sse",
    "stream_function_call_thought_signature.sse",
    "stream_text.sse",
    "stream_thinking.sse",
    "stream_thinking_gemini3.sse",
]


def _fixtures() -> list[Path]:
    return sorted(f for f in FIX.iterdir() if f.suffix in (".sse", ".jsonl", ".json"))


@pytest.mark.parametrize("name", BENCH_ROW)
def test_the_recorded_streams_of_the_bench_are_taken_and_equal(name: str) -> None:
    body = (FIX / name).read_bytes()
    assert same_or_gives_up(gemini.StreamParser, FAST, body), f"{name}: the C path gave up"


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.name)
def test_every_gemini_fixture_is_equal_or_given_up(path: Path) -> None:
    same_or_gives_up(gemini.StreamParser, FAST, path.read_bytes())


@pytest.mark.parametrize("name", BENCH_ROW)
def test_parse_stream_returns_the_parsers_events(name: str) -> None:
    body = (FIX / name).read_bytes()
    got = gemini.parse_stream(body)
    assert isinstance(got, EventList)
    want = list(run_parser(gemini.StreamParser(), body))

    def shape(events: Any) -> list[list[tuple[str, Any]]]:
        return [[(k, None if k in ("id", "createdAt") else v) for k, v in e.items()] for e in events]

    assert shape(got) == shape(want)


# ---- the shapes the fast path reads, and what it gives up on ---------------------------------------------


def _sse(*payloads: Any, crlf: bool = True) -> bytes:
    end = b"\r\n" if crlf else b"\n"
    return b"".join(b"data: " + (p if isinstance(p, bytes) else json.dumps(p).encode()) + end + end for p in payloads)


def _chunk(parts: list[Any], **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    cand.update(extra.pop("cand", {}))
    return {"candidates": [cand], "modelVersion": "gemini-x", "responseId": "r1", **extra}


def _taken(body: bytes) -> bool:
    return same_or_gives_up(gemini.StreamParser, FAST, body)


def test_partial_arguments_of_every_value_kind_are_written_as_the_writer_writes_them() -> None:
    fc = {"name": "f", "willContinue": True}
    updates = [
        {"jsonPath": "$.s", "stringValue": 'a"\\\n\x01é😀', "willContinue": True},
        {"jsonPath": "$.s", "stringValue": "b"},
        {"jsonPath": "$.n", "numberValue": 1.5},
        {"jsonPath": "$.i", "numberValue": 12},
        {"jsonPath": "$.b", "boolValue": False},
        {"jsonPath": "$.z", "nullValue": None},
        {"jsonPath": "$.t", "stringValue": "open", "willContinue": True},
    ]
    body = _sse(
        _chunk([{"functionCall": fc}]),
        _chunk([{"functionCall": {"partialArgs": updates, "willContinue": True}}]),
        _chunk([{"functionCall": {}}], cand={"finishReason": "STOP"}),
    )
    assert _taken(body)
    events = fast_events(FAST, body)
    assert events is not None
    text = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_DELTA")
    assert json.loads(text) == {"s": 'a"\\\n\x01é😀b', "n": 1.5, "i": 12, "b": False, "z": None, "t": "open"}


@pytest.mark.parametrize(
    "body",
    [
        # a candidate other than the first
        _sse(_chunk([{"text": "a"}], cand={"index": 1})),
        # a path given again (the writer's note), and nested paths (not read here)
        _sse(
            _chunk([{"functionCall": {"name": "f", "willContinue": True}}]),
            _chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}] * 2}}]),
        ),
        _sse(_chunk([{"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "$.a.b", "numberValue": 1}]}}])),
        # a call cut by a new call, by the finish
        _sse(
            _chunk([{"functionCall": {"name": "f", "willContinue": True}}]),
            _chunk([{"functionCall": {"name": "g"}}]),
        ),
        _sse(_chunk([{"functionCall": {"name": "f", "willContinue": True}}], cand={"finishReason": "STOP"})),
        # an error, media, proto names, a count that is no count, a finish reason as a number
        _sse({"error": {"code": 500, "message": "boom"}}),
        _sse(_chunk([{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}])),
        _sse(_chunk([{"text": "a", "thought_signature": "s"}])),
        _sse(_chunk([{"text": "a"}], usageMetadata={"promptTokenCount": 1, "candidatesTokenCount": -1})),
        _sse(_chunk([{"text": "a"}], cand={"finishReason": 1})),
        # no response id: the Python builder makes a random one
        _sse({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}),
    ],
)
def test_what_the_fast_path_gives_up_on(body: bytes) -> None:
    assert fast_events(FAST, body) is None


def test_not_kept_data_server_parts_and_usage_are_reproduced() -> None:
    body = _sse(
        _chunk(
            [{"text": "a"}, {"executableCode": {"code": "1"}}, {"text": "b", "thoughtSignature": "sig"}],
            usageMetadata={"promptTokenCount": 3, "toolUsePromptTokenCount": 2, "cachedContentTokenCount": 1},
            cand={"safetyRatings": [{"x": 1}], "citationMetadata": {}},
        ),
        _chunk(
            [{"text": "c", "thought": True}],
            usageMetadata={"promptTokenCount": 3, "thoughtsTokenCount": 4, "totalTokenCount": 9},
            cand={"finishReason": "MAX_TOKENS", "finishMessage": "x" * 600},
        ),
        crlf=False,
    )
    assert _taken(body)


# ---- mutations ----------------------------------------------------------------------------------------------

VALUES: list[Any] = [
    None, 0, -1, 5, 1.5, 1e308, 2**64 - 1, 2**70, -(2**70), True, False, "", "x", "STOP", "[DONE]", "é" * 3,
    "a\"b\\c\n\x00\u2028😀", [], [None], [1, "a"], {}, {"type": None}, {"a": {"b": []}}, {"text": "t"},
]  # fmt: skip
KEYS = ["text", "thought", "thoughtSignature", "functionCall", "name", "args", "id", "willContinue", "partialArgs",
        "jsonPath", "stringValue", "numberValue", "boolValue", "nullValue", "finishReason", "index", "usageMetadata",
        "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "error", "safetyRatings", "finishMessage",
        "executableCode", "inlineData", "thought_signature", "unknownKey", "responseId", "modelVersion"]  # fmt: skip
PATHS = ["$.a", "$.location", "$.a.b", "$[0]", "$", "", "x", "$x", "$.", "$.a[1]", "$['a']", 5, None]


def _mutate(value: Any, rng: random.Random) -> Any:
    paths = [p for p in json_paths(value) if p]
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not paths:
            break
        path = rng.choice(paths)
        node = value
        try:
            for key in path[:-1]:
                node = node[key]
            r = rng.random()
            if isinstance(node, dict) and r < 0.15:
                del node[path[-1]]
            elif isinstance(node, dict) and r < 0.3:
                node[rng.choice(KEYS)] = rng.choice(VALUES)
            elif path[-1] == "jsonPath" or (isinstance(node, dict) and "jsonPath" in node and r < 0.5):
                node["jsonPath"] = rng.choice(PATHS)
            else:
                node[path[-1]] = json.loads(json.dumps(rng.choice(VALUES)))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced this path
    return value


def _dump(value: Any, rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.4:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    if r < 0.8:
        return json.dumps(value).encode()  # (non-ASCII and controls as \u escapes)
    text = json.dumps(value)
    return text.replace("é", "\\ud83d").encode()  # (a lone surrogate escape where it had é)


def _events_of(raw: bytes) -> tuple[list[bytes], bytes]:
    end = b"\r\n" if b"\r\n" in raw else b"\n"
    return [e for e in raw.split(end + end) if e.strip()], end


def _mutated(raw: bytes, rng: random.Random) -> bytes:
    events, end = _events_of(raw)
    for _ in range(rng.choice((1, 1, 2, 3))):
        r = rng.random()
        i = rng.randrange(len(events)) if events else 0
        if not events:
            break
        if r < 0.45 and events[i].startswith(b"data: {"):
            payload = json.loads(events[i][6:])
            events[i] = b"data: " + _dump(_mutate(payload, rng), rng)
        elif r < 0.55:
            del events[i]
        elif r < 0.62:
            events.insert(i, events[i])
        elif r < 0.69:
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
        elif r < 0.74:
            events.insert(rng.randrange(len(events) + 1), b"data: [DONE]")
        elif r < 0.78:
            events.insert(
                rng.randrange(len(events) + 1), rng.choice([b": ping", b"event: ping\r\ndata: {}", b"data: "])
            )
        elif r < 0.82:
            events[i] = rng.choice([b"event: error", b"event: other", b"id: 7"]) + end + events[i]
        elif r < 0.86:
            events.insert(i, b'data: {"unknown": 1}')
        elif r < 0.9:
            body = end.join(e + end for e in events)
            return body[: rng.randrange(len(body) + 1)]  # cut anywhere
    body = b"".join(e + end + end for e in events)
    if rng.random() < 0.1:
        body = body.replace(b"\r\n", b"\n") if end == b"\r\n" else body.replace(b"\n", b"\r\n")
    if rng.random() < 0.1 and events:
        cuts = [k for k in range(len(body)) if body.startswith(end + end, k)]
        body = body[: rng.choice(cuts) + 2 * len(end)] if cuts else body  # truncated at an event boundary
    return body


def _clean(events: list[dict[str, Any]]) -> bool:
    """The Python parser read the body without a problem or an error."""
    return not any(e["type"] == "CUSTOM" and e["name"] in ("agentmsg.problem", "agentmsg.error") for e in events)


def test_mutated_bodies_are_equal_or_given_up() -> None:
    rng = random.Random("cstream-gemini/0")
    raws = [(FIX / name).read_bytes() for name in BENCH_ROW]
    n = examples(3000)
    taken = clean = clean_taken = 0
    for k in range(n):
        body = _mutated(raws[k % len(raws)], rng)
        got = same_or_gives_up(gemini.StreamParser, FAST, body)  # asserts equality when taken
        taken += got
        if _clean(python_events(gemini.StreamParser, body)):
            clean += 1
            clean_taken += got
    print(f"gemini fast path: {taken} of {n} mutated bodies taken; {clean_taken} of {clean} read without a problem")
    assert clean > n // 4
    assert clean_taken >= clean * 0.75, (clean_taken, clean)


def test_truncated_at_every_event_boundary_is_equal_or_given_up() -> None:
    for name in BENCH_ROW:
        raw = (FIX / name).read_bytes()
        for k in range(len(raw) + 1):
            if raw.startswith(b"\r\n\r\n", k - 4) or raw.startswith(b"\r\n", k - 2):
                same_or_gives_up(gemini.StreamParser, FAST, raw[:k])


def test_the_fast_path_holds_no_memory() -> None:
    import gc
    import sys

    import orjson

    from agentmsg.providers._builder import arguments_problem

    bodies = [(FIX / name).read_bytes() for name in BENCH_ROW]
    bodies.append(bodies[2][: len(bodies[2]) // 2])  # (a cut stream: its calls end unfinished)
    rng = random.Random("cstream-gemini-memory/0")
    bodies += [_mutated(bodies[k % 7], rng) for k in range(60)]  # (many give up, at every step)
    for _ in range(200):  # (warm caches)
        for b in bodies:
            FAST(b, "0" * 22, "t", orjson.loads, arguments_problem)
    growth = []
    for _ in range(2):  # (a leak grows in both runs; a cache filled once, in one)
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(300):
            for b in bodies:
                FAST(b, "0" * 22, "t", orjson.loads, arguments_problem)
        gc.collect()
        growth.append(sys.getallocatedblocks() - before)
    assert min(growth) < 100, growth


def _random_part(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.2:
        return {"text": rng.choice(["", "a", "é\n", 'q"\\'])}
    if r < 0.3:
        part: dict[str, Any] = {"text": rng.choice(["", "t"]), "thought": rng.choice([True, True, False, None, 1])}
    elif r < 0.4:
        part = {"text": rng.choice(["", "x", None])}
    elif r < 0.45:
        part = {rng.choice(["executableCode", "toolCall", "other"]): {}}
    else:
        fc: dict[str, Any] = {}
        for key, values in (
            ("name", ["f", "g", "", None, 5]),
            ("id", ["c1", "c2", "", 7, None]),
            ("willContinue", [True, False, None, 1, ""]),
            ("args", [{}, {"a": 1}, {"a": {"b": [1, 2.5, None]}}, [1], "s", None, {"x": 1e300}, {"x": 2**64 - 1}]),
        ):
            if rng.random() < 0.5:
                fc[key] = rng.choice(values)
        if rng.random() < 0.6:
            fc["partialArgs"] = [
                {
                    k: v
                    for k, v in (
                        ("jsonPath", rng.choice(PATHS)),
                        (
                            rng.choice(["stringValue", "stringValue", "numberValue", "boolValue", "nullValue"]),
                            rng.choice(["", "ab", 'c"\n', 3, 1.25, True, None]),
                        ),
                        ("willContinue", rng.choice([True, True, False, None])),
                    )
                    if rng.random() < 0.85
                }
                for _ in range(rng.randint(0, 3))
            ]
        part = {"functionCall": fc}
    if rng.random() < 0.3:
        part["thoughtSignature"] = rng.choice(["s1", "s2", "", None, 3])
    return part


def test_random_call_and_part_sequences_are_equal_or_given_up() -> None:
    """Structured bodies: chunks of random parts (calls whole or streamed with partial arguments, thoughts,
    signatures, server parts), usage and finish reasons."""
    rng = random.Random("cstream-gemini-calls/0")
    n = examples(1500)
    taken = 0
    for _ in range(n):
        chunks = []
        for _k in range(rng.randint(1, 6)):
            extra: dict[str, Any] = {}
            if rng.random() < 0.5:
                extra["usageMetadata"] = {
                    key: rng.choice([3, 0, 2**63, 1.0, None])
                    for key in ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount")
                    if rng.random() < 0.6
                }
            cand = {"finishReason": rng.choice(["STOP", "MAX_TOKENS", ""])} if rng.random() < 0.2 else {}
            chunks.append(_chunk([_random_part(rng) for _ in range(rng.randint(0, 3))], cand=cand, **extra))
        taken += _taken(_sse(*chunks, crlf=rng.random() < 0.5))
    print(f"gemini fast path: {taken} of {n} random bodies taken")
    assert taken > n // 10


@pytest.mark.parametrize("limit", [("max_bytes", 12), ("max_depth", 2), ("max_depth", 3)])
def test_arguments_the_limits_refuse_are_said_as_the_parser_says_them(limit: tuple[str, int]) -> None:
    from agentmsg import limits

    body = _sse(
        _chunk([{"functionCall": {"name": "f", "args": {"a": {"b": {"c": "long enough"}}}}}]),
        _chunk([{"functionCall": {"name": "g", "willContinue": True}}]),
        _chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.s", "stringValue": "a long value"}]}}]),
        _chunk([{"text": "a"}], cand={"finishReason": "STOP"}),
    )
    name, value = limit
    old = limits[name]
    limits[name] = value
    try:
        taken = _taken(body)
        events = python_events(gemini.StreamParser, body)
    finally:
        limits[name] = old
    said = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    # (the limit is said of a call's arguments; at max_depth 3 the arguments, 3 levels deep, are within it)
    assert bool(said) == (limit != ("max_depth", 3))
    assert taken or name == "max_depth"  # (at max_depth 2, a partial argument's path is too deep: said)


@pytest.mark.parametrize("response_id", ["r", "é" * 70 + "x", "r" * 127, "r" * 128, "r" * 300, "\U0001f600" * 40])
def test_minted_call_ids_are_the_builders(response_id: str) -> None:
    body = _sse(
        {**_chunk([{"functionCall": {"name": "f", "args": {}}}]), "responseId": response_id},
        {**_chunk([{"functionCall": {"name": "g"}}], cand={"finishReason": "STOP"}), "responseId": response_id},
    )
    assert _taken(body)
