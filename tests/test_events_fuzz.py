"""Fuzzing the event reducer, the JSONL fast path and the SSE reader with a seeded mutator.

Streams come from the emitter (random messages) and from the conformance vectors; the mutator garbles
them at the event level (drop, duplicate, replay, reorder, retype, remove or replace keys with junk) and at
the byte level (flip, cut, insert newlines, invalid UTF-8, truncate), and every split point of a few
streams is tried. Oracles:

* the tolerant reducer never raises, and every message it returns is valid per python-jsonschema (an
  implementation independent of the SDK's) and can be written;
* ``feed()`` is the reference: ``feed_many``, the JSONL fast path at any run size and reading from
  chunks of any size give the same messages and the same problems;
* strict mode raises exactly when python-jsonschema finds an invalid event (or the tolerant reducer
  reported a problem);
* loss: every text and thinking delta of a valid, first-seen, top-level event is in the result or named
  by a problem.

Budget (tests/_support/budget.py): a fixed number of seeded streams per test in ``make test``, seeded from
``AGENTMSG_FUZZ_SEED`` (default 0); ``make fuzz`` gives each test ``AGENTMSG_FUZZ_SECONDS`` with a fresh seed
and tries every split point. A failure names its seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import jsonschema
import orjson
import pytest

import agentmsg
from agentmsg import AssistantMessage, Msg, Reducer, emit_events, encode_sse, reduce_stream
from agentmsg.events import stream as stream_mod
from tests._support.budget import SECONDS, SEED, rounds
from tests._support.events import TEXT_CASES, events_of, feed_text, load
from tests._support.mutators import garble_bytes, garble_events

pytestmark = pytest.mark.fuzz

DEEP = (SECONDS or 0) > 60  # `make fuzz`: every split point of every stream too

_DOCS = agentmsg.schema_documents()
_REGISTRY: Any = None


def _validator(kind: str) -> Any:
    global _REGISTRY
    from referencing import Registry, Resource

    if _REGISTRY is None:
        _REGISTRY = Registry().with_resources((doc["$id"], Resource.from_contents(doc)) for doc in _DOCS.values())
    schema = _DOCS[f"{kind}.schema.json"]
    return jsonschema.Draft202012Validator(
        schema, registry=_REGISTRY, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


EVENT_VALIDATOR = _validator("agent-event")
MSG_VALIDATOR = _validator("msg")


def _random_message(rng: random.Random, n: int) -> Msg:
    words = ["the", "weather", "é", "☀", "25°C", '"', "\\", "\n", "{", "}"]

    def text(k: int) -> str:
        return "".join(rng.choice(words) for _ in range(rng.randint(0, k)))

    content: list[Any] = []
    for j in range(rng.randint(1, 5)):
        kind = rng.choice(["text", "thinking", "tool_use", "tool_result", "data"])
        if kind == "text":
            content.append({"type": "text", "text": text(30)})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": text(20), "metadata": None})
        elif kind == "tool_use":
            args = {"q": text(5)}
            content.append(
                {
                    "type": "tool_use",
                    "id": f"c{n}-{j}",
                    "name": "f",
                    "input": args,
                    "content": json.dumps(args),
                    "metadata": {},
                    "state": "pending",
                }
            )
        elif kind == "tool_result":
            content.append(
                {
                    "type": "tool_result",
                    "id": f"c{n}-{j}",
                    "name": "f",
                    "output": [{"type": "text", "text": text(10)}],
                    "metadata": {},
                    "state": "success",
                }
            )
        else:
            content.append(
                {"type": "data", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}, "id": f"d{j}"}
            )
    return Msg.from_dict({"id": f"m{n}", "role": "ASSISTANT", "content": content, "metadata": {}, "name": "F"})


def base_streams(rng: random.Random) -> list[dict[str, Any]]:
    if rng.random() < 0.4:
        return [dict(e) for e in events_of(load(rng.choice(TEXT_CASES)))]
    counter = iter(range(10**9))
    events: list[dict[str, Any]] = []
    for n in range(rng.randint(1, 3)):
        events += emit_events(
            _random_message(rng, n),
            chunk_size=rng.choice([None, 1, 3, 7]),
            id_factory=lambda: f"e{next(counter)}",
            clock=lambda: "2025-01-01T00:00:00.000000Z",
        )
    return events


def comparable(messages: list[AssistantMessage], *, check: bool = True) -> list[Any]:
    out = []
    for m in messages:
        d = orjson.loads(m.to_json_bytes())
        if check:
            assert not list(MSG_VALIDATOR.iter_errors(d)), d
        if not (d["id"].startswith(("m", "r")) or d["id"] in ("bad",)):
            d["id"] = "minted"
        out.append(d)
    return out


def problems_of(r: Reducer) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in r.problems]


def by_feed(events: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return comparable(r.finish()), problems_of(r)


def reference_lines(data: bytes) -> tuple[list[Any], list[tuple[str, str]]]:
    """The reference for bytes: each line parsed and fed in turn (no fast path, no runs)."""
    r = Reducer()
    data = data.removeprefix(b"\xef\xbb\xbf")  # a leading BOM is not part of the first line
    for n, line in enumerate(data.split(b"\n"), 1):
        if line.strip():
            feed_text(r, line, f"line {n}")
    return comparable(r.finish()), problems_of(r)


def by_stream(data: bytes, *, chunk: int, pieces: int | None = None, sse: bool | None = None) -> Any:
    r = Reducer()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stream_mod, "CHUNK", chunk)
        source: Any = data if pieces is None else iter([data[i : i + pieces] for i in range(0, len(data), pieces)])
        out = reduce_stream(source, reducer=r, sse=sse)
    return comparable(out), problems_of(r)


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
    flagged = {p.split("/")[1] for p, _ in problems if p.count("/") >= 1}
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


def seeded(name: str, n: int) -> Iterator[random.Random]:
    """The seeded generators of a test: ``n`` of them, or as many as ``make fuzz`` gives it time for."""
    for k in rounds(n):
        seed = SEED * 1_000_003 + k
        rng = random.Random(f"{name}-{seed}")
        rng.seed_label = seed  # type: ignore[attr-defined]
        yield rng


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
                elif not ref[1]:
                    assert not raised
            # Through bytes: the fast path at odd run sizes equals the reference. (JSONL said, not detected: a
            # garbled first event that is a JSON array makes the body a JSON array of events, see test_events_stream.)
            data = b"".join(orjson.dumps(e) + b"\n" for e in events if _jsonable(e))
            assert by_stream(data, chunk=rng.choice([64, 331, 4096]), sse=False) == reference_lines(data)
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


def _jsonable(e: Any) -> bool:
    try:
        orjson.dumps(e)
    except TypeError:
        return False
    return True


def test_garbled_bytes_fast_path_equals_the_reference() -> None:
    for rng in seeded("bytes", 40):
        seed = rng.seed_label  # type: ignore[attr-defined]
        events = garble_events(rng, base_streams(rng))
        data = garble_bytes(rng, b"".join(orjson.dumps(e) + b"\n" for e in events if _jsonable(e)))
        try:
            ref = reference_lines(data)
            assert by_stream(data, chunk=rng.choice([16, 97, 1000, 1 << 17]), sse=False) == ref
            assert by_stream(data, chunk=1 << 17, pieces=rng.choice([1, 2, 5, 64]), sse=False) == ref
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


def test_garbled_sse_never_raises_and_any_split_agrees() -> None:
    for rng in seeded("sse", 60):
        seed = rng.seed_label  # type: ignore[attr-defined]
        events = [e for e in garble_events(rng, base_streams(rng)) if isinstance(e, dict) and _jsonable(e)]
        body = garble_bytes(rng, encode_sse(events).replace("\n", rng.choice(["\n", "\r\n", "\r"])).encode())
        try:
            whole = by_stream(body, chunk=1 << 17, sse=True)
            assert by_stream(body, chunk=1 << 17, pieces=rng.choice([1, 3, 17]), sse=True) == whole
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("name", ["java-case5", "multi-iteration-reply", "bad-input-tolerant"])
def test_every_split_point(name: str) -> None:
    """A stream cut into two chunks at any byte gives what the whole stream gives (JSONL and SSE):
    every cut in ``make fuzz``, every cut within the first 64 bytes and every 7th after that otherwise."""
    events = events_of(load(name))
    for data, sse in ((b"".join(orjson.dumps(e) + b"\n" for e in events), False), (encode_sse(events).encode(), True)):
        whole = by_stream(data, chunk=1 << 17, sse=None)
        if not sse:
            assert whole == reference_lines(data)
        cuts = range(1, len(data)) if DEEP else [*range(1, 64), *range(64, len(data), 7)]
        for cut in cuts:
            r = Reducer()
            got = reduce_stream(iter([data[:cut], data[cut:]]), reducer=r)
            assert (comparable(got, check=False), problems_of(r)) == whole, f"cut at {cut}"
