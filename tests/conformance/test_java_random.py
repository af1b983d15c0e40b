"""Principle 2 on random messages: what agentmsg writes, AgentScope Java 2.0.0 reads, and what Java writes back,
agentmsg reads as the message it wrote.

The conformance vectors (test_java.py) are chosen by hand; here Hypothesis makes the messages
(tests/_support/strategies.py: every role and block kind, every declared metadata key, signatures and
provenance, unknown keys at every level, long and non-ASCII text, 64-bit integer edges, both timestamp forms).
One run of the harness (tests/java/run.sh, mode roundtrip) reads each with Java's own codec and writes it back;
agentmsg then reads Java's text. The only differences allowed are the ones docs/java-compatibility.md lists: keys
Java's classes lack are dropped outside metadata maps, a data block read without an id gets one, ``fps`` comes back
as the Float Java holds, and Java's usage writes its own counters only (with zeros for those not given, and
totalTokens recomputed as input + output), the others coming back from metadata ``_chat_usage``. It found the
ranges the schemas now give sizing hints, ``fps``, tool-result metadata and usage counts (Java refused whole messages
beyond them). Skips only when Java or Maven is not installed."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path
from typing import Any

import hypothesis
import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import agentmsg
from tests._support.budget import SEED, examples
from tests._support.strategies import messages
from tests.conformance.test_java import EVENT_EXTENSIONS, JAVA_USAGE_KEYS, _drop_data_ids_java_added, java_roundtrip
from tests.conformance.test_schema_vectors import _drop

pytestmark = [
    pytest.mark.skipif(
        shutil.which("java") is None or shutil.which("mvn") is None or shutil.which("javac") is None,
        reason="the AgentScope Java round trip needs a JDK (java, javac) and Maven on PATH",
    ),
    pytest.mark.timeout(1320),  # (the harness is built on first use: see test_java.py)
    pytest.mark.xdist_group("java"),
    pytest.mark.oracle,
    pytest.mark.fuzz,
]

#: what Java's ChatUsage writes for a counter it was not given
_FILLED = {"inputTokens": 0, "outputTokens": 0, "cachedTokens": 0, "time": 0.0}


def _through_java(tmp_path: Path, written: list[dict[str, Any]], kind: str = "msg") -> dict[str, str]:
    """Java's text for each value of ``kind`` (``msg`` or ``event``, by index), read and written back by its codec."""
    out = java_roundtrip(tmp_path, kind, {str(i): m for i, m in enumerate(written)})
    verdicts = orjson.loads((out / f"roundtrip-{kind}.json").read_bytes())
    unread = {k: (v.get("error"), written[int(k)]) for k, v in verdicts.items() if not v["read"]}
    assert not unread, f"AgentScope Java cannot read what agentmsg wrote: {dict(list(unread.items())[:3])}"
    raw: dict[str, str] = orjson.loads((out / f"roundtrip-{kind}.raw.json").read_bytes())
    return raw


def _where(what: str, i: int, seed: int, mine: dict[str, Any], raw: str) -> str:
    """The failure message of value ``i`` of a seed's run: what agentmsg wrote and what Java wrote back."""
    return (
        f"{what} {i} of seed {seed} (AGENTMSG_FUZZ_SEED={seed} replays it): {orjson.dumps(mine).decode()[:1500]}"
        f"\nJava wrote {raw[:1500]}"
    )


def _usage_back(mine: dict[str, Any] | None, back: dict[str, Any] | None, where: str) -> None:
    """Every count agentmsg wrote is back (totalTokens: or Java's input + output, which Java writes whatever it read);
    Java adds only the counters it was not given (zeros, and totalTokens)."""
    if mine is None:
        assert back is None, where
        return
    assert back is not None, where
    total = back.get("inputTokens", 0) + back.get("outputTokens", 0)  # (Java's getter: what it writes, always)
    assert {k: v for k, v in back.items() if k in mine and k != "totalTokens"} == {
        k: v for k, v in mine.items() if k != "totalTokens"
    }, where
    assert back.get("totalTokens") in (mine.get("totalTokens"), total), where
    filled = {**_FILLED, "totalTokens": total}
    added = {k: back[k] for k in set(back) - set(mine)}
    assert set(added) <= JAVA_USAGE_KEYS and all(added[k] == filled[k] for k in added), (where, added)


def _as_java_floats(value: Any) -> Any:
    """``value`` with each video block's ``fps`` as AgentScope Java's Float holds it (about 7 significant digits)."""
    if isinstance(value, dict):
        out = {k: _as_java_floats(v) for k, v in value.items()}
        if value.get("type") == "video" and isinstance(value.get("fps"), (int, float)):
            out["fps"] = struct.unpack("f", struct.pack("f", value["fps"]))[0]
        return out
    if isinstance(value, list):
        return [_as_java_floats(v) for v in value]
    return value


def _random_messages(seed: int, n: int, role: agentmsg.MsgRole | None = None) -> list[agentmsg.Msg]:
    """``n`` messages Hypothesis makes (of ``role`` when given), reproducibly from ``seed`` (one harness run for all
    of them, so they are made first: as many examples as messages, each as Hypothesis varies them)."""
    made: list[agentmsg.Msg] = []

    @hypothesis.seed(seed)
    @settings(
        max_examples=n, phases=[Phase.generate], deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(messages(role))
    def make(m: agentmsg.Msg) -> None:
        made.append(m)

    make()
    return made


def test_random_messages_agentmsg_wrote_come_back_from_java(tmp_path_factory: Any) -> None:
    seed = SEED or random.randrange(2**32)
    msgs = _random_messages(seed, examples(150))
    written = [orjson.loads(m.to_json_bytes()) for m in msgs]  # (the JSON text's values: what Java is given)
    raw = _through_java(tmp_path_factory.mktemp("java-random"), written)
    for i, mine in enumerate(written):
        where = _where("message", i, seed, mine, raw[str(i)])
        java = orjson.loads(raw[str(i)])
        agentmsg.validate(java, "msg")  # what Java writes, agentmsg reads
        back = agentmsg.Msg.from_json(raw[str(i)])
        again = orjson.loads(back.to_json_bytes())
        _usage_back(mine.get("usage"), again.get("usage"), where)
        # Keys Java's classes lack are gone outside metadata maps (usage aside: its counts came back above).
        unknown = [p.pointer for p in agentmsg.find_unknown_keys(mine, "msg")]
        dropped = [p for p in unknown if "/metadata/" not in p and not p.startswith("/usage/")]
        expected = _drop({**mine, "usage": None}, dropped)
        got = _drop_data_ids_java_added(expected, {**again, "usage": None})
        assert _as_java_floats(got) == _as_java_floats(expected), where


def test_random_events_agentmsg_wrote_come_back_from_java(tmp_path_factory: Any) -> None:
    """The events agentmsg emits for random assistant messages (``emit_events``: every block kind's START, deltas
    and END, tool results, usage, the AGENT_RESULT message), read and written back by Java's codec: each comes back as
    it went but for what docs/java-compatibility.md lists for events (agentmsg's extension keys and the usage counts
    Java's ChatUsage lacks are dropped, unknown keys outside metadata maps too; Java fills its own usage counters)."""
    seed = SEED or random.randrange(2**32)
    msgs = _random_messages(seed, examples(100), agentmsg.MsgRole.ASSISTANT)
    written = [orjson.loads(orjson.dumps(e)) for m in msgs for e in agentmsg.emit_events(m)]
    raw = _through_java(tmp_path_factory.mktemp("java-random-events"), written, "event")
    assert set(raw) == {str(i) for i in range(len(written))}
    kinds = set()
    for i, mine in enumerate(written):
        where = _where("event", i, seed, mine, raw[str(i)])
        java = orjson.loads(raw[str(i)])
        agentmsg.validate(java, "event")  # what Java writes, agentmsg reads
        kinds.add(mine["type"])
        unknown = [p.pointer for p in agentmsg.find_unknown_keys(mine, "event")]
        expected = _drop(mine, [p for p in unknown if "/metadata/" not in p and not p.startswith("/usage/")])
        expected = {k: v for k, v in expected.items() if k not in EVENT_EXTENSIONS.get(mine["type"], set())}
        if isinstance(expected.get("usage"), dict):
            _usage_back({k: v for k, v in expected["usage"].items() if k in JAVA_USAGE_KEYS}, java.get("usage"), where)
            expected["usage"] = java["usage"]
        if expected.get("metadata") == {} and "metadata" not in java:
            del expected["metadata"]  # (Java omits an event's empty metadata map: docs/java-compatibility.md)
        if expected["type"] == "AGENT_RESULT":  # the message inside: as the message test compares one
            back = orjson.loads(agentmsg.Msg.from_json(orjson.dumps(java["result"])).to_json_bytes())
            _usage_back(mine["result"].get("usage"), back.get("usage"), where)  # (its _chat_usage copy restores)
            expected["result"] = {**expected["result"], "usage": None}
            java = {**java, "result": {**back, "usage": None}}
        got = _drop_data_ids_java_added(expected, java)
        assert _as_java_floats(got) == _as_java_floats(expected), where
    assert {"AGENT_START", "MODEL_CALL_END", "AGENT_RESULT", "TOOL_RESULT_START"} <= kinds
