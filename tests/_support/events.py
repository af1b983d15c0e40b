"""Helpers of the event tests: the reducer vectors (tests/conformance/reducer/) as the tests read them, agent
events written by hand (``ev``, ``jsonl``), the streams the event fuzz tests start from and garble
(mutators.py), and the references they are held to (``feed()`` event by event, python-jsonschema)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any, overload

import jsonschema
import orjson
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    Msg,
    Reducer,
    emit_events,
    reduce_stream,
)
from agentmsg._codec.jsontext import not_utf8
from agentmsg.events import stream as stream_mod
from tests._support.budget import SEED, rounds
from tests.conftest import ROOT

REDUCER = ROOT / "tests" / "conformance" / "reducer"
PROPOSED = REDUCER / "proposed"
# The shared vectors and the proposed ones (rules the TypeScript reducer does not follow yet), all run here.
CASES = sorted(p.stem for p in REDUCER.glob("*.json")) + sorted(f"proposed/{p.stem}" for p in PROPOSED.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    return json.loads((REDUCER / f"{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@overload
def jsonl_lines(data: str) -> list[str]: ...
@overload
def jsonl_lines(data: bytes) -> list[bytes]: ...
def jsonl_lines(data: str | bytes) -> list[str] | list[bytes]:
    """The non-blank lines of JSON Lines as the reducer cuts them: at LF only. str.splitlines also ended a line
    at CR, VT, FF, FS, GS, RS, NEL, U+2028 and U+2029 (bytes.splitlines at a lone CR), which orjson writes raw
    inside a string (all but CR), and a CR alone ends no line of JSON Lines (a CR before the LF is JSON space)."""
    if isinstance(data, str):  # (blank as bytes.strip says, the reducer's: str.strip also takes NEL, U+2028...)
        return [line for line in data.split("\n") if line.strip(" \t\r\x0b\x0c")]
    return [line for line in data.split(b"\n") if line.strip()]


def read_jsonl(data: str | bytes) -> list[Any]:
    """The values of JSON Lines, a line each (:func:`jsonl_lines`)."""
    return [orjson.loads(line) for line in jsonl_lines(data)]


def events_of(case: dict[str, Any]) -> list[Any]:
    if "jsonl" in case:
        return read_jsonl(case["jsonl"])
    return case["events"]  # type: ignore[no-any-return]


def writable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


#: The vectors JSON text can carry (not those whose events, given as objects, hold lone surrogates).
TEXT_CASES = [name for name in CASES if "jsonl" in load(name) or writable(load(name)["events"])]


def feed_text(r: Reducer, data: bytes, where: str) -> None:
    """One event's JSON text fed on its own: text that is not JSON is unreadable, invalid UTF-8 is reported
    (and replaced) before the event it is in."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        try:
            event = orjson.loads(data.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            # (a lone surrogate escape is said as agentmsg validate says it; bytes that are not UTF-8 by where
            # they stop being so, as a document's are: utf-8, or lone-surrogate for a surrogate encoded as UTF-8)
            undecodable = not_utf8(data)
            if undecodable is not None:
                rule = undecodable[0]
            else:
                rule = "lone-surrogate" if "surrogate in string" in str(error) else "json"
            r.feed_unreadable(where, rule=rule)
            return
        if data.decode("utf-8", "replace").encode() != data:
            r.report("utf-8", rule="utf-8")
    r.feed(event)


EVENTS = [
    {"type": "AGENT_START", "id": "e1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "name": "Friday"},
    {"type": "TEXT_BLOCK_START", "id": "e2", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "text"},
    {
        "type": "TEXT_BLOCK_DELTA",
        "id": "e3",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "r",
        "blockId": "text",
        "delta": "héllo ☀️\nline2",
    },
    {
        "type": "TEXT_BLOCK_DELTA",
        "id": "e4",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "r",
        "blockId": "text",
        "delta": " world",
    },
    {"type": "TEXT_BLOCK_END", "id": "e5", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "text"},
    {"type": "AGENT_END", "id": "e6", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
]


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
        events += map(
            dict,
            emit_events(
                _random_message(rng, n),
                chunk_size=rng.choice([None, 1, 3, 7]),
                id_factory=lambda: f"e{next(counter)}",
                clock=lambda: "2025-01-01T00:00:00.000000Z",
            ),
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


def seeded(name: str, n: int) -> Iterator[random.Random]:
    """The seeded generators of a test: ``n`` of them, or as many as ``make fuzz`` gives it time for."""
    for k in rounds(n):
        seed = SEED * 1_000_003 + k
        rng = random.Random(f"{name}-{seed}")
        rng.seed_label = seed  # type: ignore[attr-defined]
        yield rng


def _jsonable(e: Any) -> bool:
    try:
        orjson.dumps(e)
    except TypeError:
        return False
    return True


TS = "2025-01-01T00:00:00Z"


def ev(n: int, type_: str, **keys: Any) -> dict[str, Any]:
    return {"type": type_, "id": f"e{n}", "createdAt": TS, "replyId": "r", **keys}


def jsonl(events: list[Any]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def rules(r: Reducer) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in r.problems]
