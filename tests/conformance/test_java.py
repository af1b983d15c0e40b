"""AgentScope Java (io.agentscope:agentscope-core, released 2.x from Maven Central) runs our vectors.

tests/java/run.sh builds a small harness against AgentScope's own JSON codec and builders; this test
checks what it wrote. Differences are either fixed in our schemas or listed in
docs/java-compatibility.md (and in KNOWN below). Skips only when Java or Maven is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg._codec.converter import json_default as _json_default
from tests._support.events import read_jsonl
from tests.conformance.test_schema_vectors import _drop
from tests.conftest import ROOT, load_vectors

pytestmark = [
    pytest.mark.skipif(
        shutil.which("java") is None or shutil.which("mvn") is None or shutil.which("javac") is None,
        reason="the AgentScope Java conformance run needs a JDK (java, javac) and Maven on PATH",
    ),
    # The first test builds the harness unless `make deps` did: on a fresh machine Maven downloads for
    # minutes (run.sh bounds it at 1,200 s), so these tests get more than pytest's default 300 s.
    pytest.mark.timeout(1320),
    # One harness run (tests/conformance/conftest.py) for every test: all on one pytest-xdist worker.
    pytest.mark.xdist_group("java"),
    pytest.mark.oracle,
]

# Valid vectors AgentScope Java 2.0.0 cannot read (its bugs, documented in docs/java-compatibility.md).
JAVA_CANNOT_READ = {"event:java-all-tools-denied"}  # AllToolsDeniedEvent has no Jackson creator in 2.0.0
# Java's ChatUsage has primitive counters: a usage left empty (its keys were all unknown) is written with zeros.
JAVA_FILLS_EMPTY_USAGE = {"msg:usage-snake-case"}  # documented in docs/java-compatibility.md
# agentmsg's event extension keys: Java ignores them on read, so they are gone when Java writes back.
EVENT_EXTENSIONS = {
    "THINKING_BLOCK_START": {"provider", "model"},
    "THINKING_BLOCK_DELTA": {"signature", "redactedData"},
    "DATA_BLOCK_START": {"mediaType", "name", "block"},
    "TOOL_CALL_START": {"thoughtSignature"},
    "TOOL_CALL_END": {"input", "state"},
    "MODEL_CALL_START": {"modelName"},
}


def _load(out: Path, name: str) -> dict[str, Any]:
    return json.loads((out / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _canonical(kind: str, value: Any) -> Any:
    """What both sides mean, independent of key order and of Java's own additions."""
    if kind == "msg":
        return orjson.loads(agentmsg.Msg.from_dict(value).to_json_bytes())
    if kind == "content-block":
        return orjson.loads(agentmsg.block_to_json(agentmsg.block_from_dict(value)))
    return value


def _drop_data_ids_java_added(original: Any, java: Any) -> Any:
    """Java mints an id for a data block read without one (documented)."""
    if isinstance(original, dict) and isinstance(java, dict):
        if java.get("type") == "data" and "id" in java and "id" not in original:
            java = {k: v for k, v in java.items() if k != "id"}
        return {k: _drop_data_ids_java_added(original.get(k), v) for k, v in java.items()}
    if isinstance(original, list) and isinstance(java, list) and len(original) == len(java):
        return [_drop_data_ids_java_added(a, b) for a, b in zip(original, java, strict=True)]
    return java


@pytest.mark.parametrize("kind", ["msg", "content-block", "event"])
def test_java_reads_and_writes_back_every_valid_vector(java_out: Path, kind: str) -> None:
    results = _load(java_out, f"roundtrip-{kind}.json")
    for case in load_vectors(f"{kind}.json")["cases"]:
        key = f"{kind}:{case['id']}"
        got = results[case["id"]]
        if not case["valid"]:
            if case["rule"].startswith("role-content"):
                assert not got["read"], f"{key}: Java accepted a role violation our schema rejects"
            continue
        if key in JAVA_CANNOT_READ:
            assert not got["read"], (
                f"{key} is listed as unreadable by Java but Java read it: update the compatibility table"
            )
            continue
        assert got["read"], f"{key}: AgentScope Java cannot read a valid vector: {got.get('error')}"
        written = got["output"]  # the harness embeds Java's output as a JSON value
        agentmsg.validate(written, kind)  # what Java writes, we read
        # Java reads unknown keys (schema 1.1) and ignores them: they are gone from what it writes back, except
        # inside metadata maps, which Java keeps whole (docs/java-compatibility.md). agentmsg keeps them all.
        unknown = case.get("unknown_keys", [])
        in_maps = [p for p in unknown if "/metadata/" in p]
        assert [p.pointer for p in agentmsg.find_unknown_keys(written, kind)] == in_maps, key
        original = _drop(case["instance"], [p for p in unknown if p not in in_maps])
        if kind == "event":
            original = {k: v for k, v in original.items() if k not in EVENT_EXTENSIONS.get(original["type"], set())}
            if isinstance(original.get("usage"), dict):  # counts Java's ChatUsage lacks: dropped from an event
                original["usage"] = {k: v for k, v in original["usage"].items() if k in JAVA_USAGE_KEYS}
        if key in JAVA_FILLS_EMPTY_USAGE:
            assert original["usage"] == {} and set(written["usage"].values()) == {0}, key
            written = {**written, "usage": {}}
        assert _drop_data_ids_java_added(_canonical(kind, original), _canonical(kind, written)) == _canonical(
            kind, original
        ), (
            f"{key}: AgentScope Java wrote back something else. A key it lacks is dropped: for a field newly"
            " declared in schemas/, say so in docs/java-compatibility.md and leave it out of the comparison here"
            " (as EVENT_EXTENSIONS does for events); README, 'Changing a schema'"
        )


def test_java_built_objects_validate_and_decode(java_out: Path) -> None:
    counts = {}
    for name, kind in (
        ("built-msg.json", "msg"),
        ("built-content-block.json", "content-block"),
        ("built-event.json", "event"),
    ):
        built = _load(java_out, name)
        counts[kind] = len(built)
        for label, raw in built.items():
            value = raw
            agentmsg.validate(value, kind)
            if kind == "msg":
                msg = agentmsg.Msg.from_dict(value)
                assert orjson.loads(msg.to_json_bytes())["content"] == _canonical("msg", value)["content"], label
    events = _load(java_out, "built-event.json")
    schema_types = agentmsg.schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"]
    assert {k for k in events if ":" not in k} == set(schema_types), (
        "the harness builds one event of every type the schema knows"
    )
    assert counts["msg"] >= 7 and counts["content-block"] >= 13


def test_role_rules_match_java(java_out: Path) -> None:
    roles = _load(java_out, "roles.json")
    samples = {
        "text": {"type": "text", "text": "x"},
        "thinking": {"type": "thinking", "thinking": "x"},
        "image": {"type": "image", "source": {"type": "url", "url": "https://a/x.png"}},
        "audio": {"type": "audio", "source": {"type": "url", "url": "https://a/x.mp3"}},
        "video": {"type": "video", "source": {"type": "url", "url": "https://a/x.mp4"}},
        "data": {"type": "data", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
        "tool_use": {"type": "tool_use", "id": "c", "name": "f", "input": {}},
        "tool_result": {"type": "tool_result", "id": "c", "name": "f", "output": []},
        "hint": {"type": "hint", "id": "h", "hint": "x", "source": None},
    }
    ours = {
        role: {
            b: agentmsg.is_valid({"id": "m", "name": None, "role": role, "content": [s], "metadata": {}})
            for b, s in samples.items()
        }
        for role in roles
    }
    assert ours == roles


def test_streams_from_a_real_java_agent_reduce_to_valid_messages(java_out: Path) -> None:
    """The harness drives AgentScope's own ReActAgent (scripted model, no network) and records its events."""
    streams = sorted(java_out.glob("stream-*.jsonl"))
    assert streams, "the harness writes at least one stream-*.jsonl"
    for path in streams:
        data = path.read_bytes()
        for event in read_jsonl(data):
            agentmsg.validate(event, "event")  # what Java's agent emits, we accept
        reducer = agentmsg.Reducer()
        messages = agentmsg.reduce_stream(data, reducer=reducer)
        assert messages, path.name
        for msg in messages:
            agentmsg.validate(msg.to_dict())
        assert reducer.check_results() == [], f"{path.name}: reduced message does not cover AGENT_RESULT"


def _ours(kind: str, text: str) -> str:
    """What agentmsg writes for what it read from ``text``."""
    if kind == "msg":
        return agentmsg.Msg.from_json(text).to_json()
    if kind == "content-block":
        return agentmsg.block_to_json(agentmsg.block_from_json(text))
    if kind == "source":
        return orjson.dumps(agentmsg.blocks.source_from_dict(orjson.loads(text)), default=_json_default).decode()
    usage = agentmsg.message._usage(orjson.loads(text))
    return orjson.dumps(usage, default=_json_default).decode()


def _block_types(kind: str, text: str) -> set[str]:
    value = orjson.loads(text)
    blocks = value.get("content", []) if kind == "msg" else [value] if kind == "content-block" else []
    found: set[str] = set()
    while blocks:
        block = blocks.pop()
        found.add(block["type"])
        blocks.extend(block.get("output", []) if block["type"] == "tool_result" else [])
    return found


def test_agentmsg_writes_what_java_writes_byte_for_byte(java_out: Path) -> None:
    """Every message, block, source and usage AgentScope Java wrote (its builders' output and its round trip of
    each valid vector), read by agentmsg and written again, gives Java's exact bytes: key order of every block
    type (VideoBlock and HintBlock included), null and omit conventions, number forms, escaping."""
    compared: dict[str, int] = {}
    types: set[str] = set()
    restored = 0
    for kind in ("msg", "content-block", "source", "chat-usage"):
        for name in (f"built-{kind}.raw.json", f"roundtrip-{kind}.raw.json"):
            path = java_out / name
            if not path.exists():
                continue
            valid = (
                {c["id"] for c in load_vectors(f"{kind}.json")["cases"] if c["valid"]} if "roundtrip" in name else None
            )
            for label, text in _load(java_out, name).items():
                if valid is not None and label not in valid:
                    continue  # an invalid vector Java read anyway (it is more lenient): not agentmsg's to write
                if kind == "msg" and _restored_usage(text) is not None:
                    # Java dropped usage counts it lacks and kept their copy in _chat_usage: agentmsg restores them
                    # (docs/wire-format.md), so it writes Java's bytes but for those counts, back in the usage.
                    ours, java = orjson.loads(_ours(kind, text)), orjson.loads(text)
                    assert ours["usage"] == _restored_usage(text) and {**ours, "usage": None} == {**java, "usage": None}
                    restored += 1
                    continue
                assert _ours(kind, text) == text, f"{name} {label}: agentmsg writes other bytes than Java"
                compared[kind] = compared.get(kind, 0) + 1
                types |= _block_types(kind, text)
    every = set(agentmsg.blocks.BLOCK_CLASSES)
    assert every <= types, f"block types never compared: {every - types}"
    assert compared.get("msg", 0) >= 20 and compared.get("content-block", 0) >= 40, compared
    assert compared.get("source", 0) >= 5 and compared.get("chat-usage", 0) >= 3, compared
    assert restored >= 2  # msg:usage-every-count, msg:java-main-cache-creation-input-tokens


#: The keys AgentScope Java 2.0.0's ChatUsage writes (it drops any other usage key).
JAVA_USAGE_KEYS = {"inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens"}


def _restored_usage(text: str) -> dict[str, Any] | None:
    """The usage agentmsg reads from a message Java wrote, when its metadata copy _chat_usage restores counts Java
    dropped; None when it restores none."""
    value = orjson.loads(text)
    usage, copy = value.get("usage"), value.get("metadata", {}).get("_chat_usage")
    if not isinstance(usage, dict) or not isinstance(copy, dict):
        return None
    missing = {k: v for k, v in copy.items() if k not in usage and k not in JAVA_USAGE_KEYS}
    return {**usage, **missing} if missing else None


def _agentmsg_written_usage_messages() -> dict[str, agentmsg.Msg]:
    """Messages agentmsg writes whose usage goes beyond Java's: from recorded provider replies (the Anthropic stream
    with cache reads and writes, Gemini's cached content with thoughts, DeepSeek's reasoner) and one built with a
    newer producer's usage key, and one whose usage was set after it was built (``msg.usage = ...``: its copy follows)."""
    from tests._support.providers import FIXTURES, module

    anthropic = FIXTURES / "anthropic" / "stream_code_execution_cache_usage.sse"
    reducer = agentmsg.Reducer()
    reducer.feed_many(module("anthropic").parse_stream(anthropic.read_bytes()))
    (streamed,) = reducer.finish()
    gemini = orjson.loads((FIXTURES / "gemini" / "generate_content_cached_content_usage.json").read_bytes())
    deepseek = orjson.loads((FIXTURES / "deepseek" / "chat_completion_reasoner.json").read_bytes())
    assigned = agentmsg.AssistantMessage("ok", id="m-assigned", usage={"inputTokens": 5, "reasoningTokens": 4})
    assigned.usage = agentmsg.ChatUsage(input_tokens=5, output_tokens=2, reasoning_tokens=9)
    return {
        "anthropic-cache-reads-and-writes": streamed,
        "gemini-cached-content-and-thoughts": module("gemini").parse_response(gemini),
        "deepseek-reasoning": module("openai").parse_response(deepseek),
        "newer-producers-usage-key": agentmsg.AssistantMessage(
            "ok", id="m-newer", usage={"inputTokens": 5, "outputTokens": 2, "futureTokens": 3}
        ),
        "usage-assigned-after-construction": assigned,
    }


def java_roundtrip(tmp_path: Path, kind: str, instances: dict[str, Any]) -> Path:
    """The harness's output folder after its round trip of ``instances`` (valid values of ``kind``, ``msg`` or
    ``event``, by case id) through AgentScope Java's codec: ``roundtrip-KIND.json`` (verdicts) and
    ``roundtrip-KIND.raw.json`` (Java's text)."""
    vectors = tmp_path / "vectors"
    vectors.mkdir()
    cases = [
        {"id": k, "description": "written by agentmsg", "valid": True, "instance": v} for k, v in instances.items()
    ]
    schema = f"https://agentmsg.dev/schemas/v1/{'agent-event' if kind == 'event' else kind}.schema.json"
    (vectors / f"{kind}.json").write_bytes(orjson.dumps({"kind": kind, "schema": schema, "cases": cases}))
    out = tmp_path / "out"
    r = subprocess.run(
        ["bash", str(ROOT / "tests" / "java" / "run.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=1260,
        # only the roundtrip output is read: run.sh runs that mode alone (one JVM, not five)
        env={**os.environ, "AGENTMSG_VECTORS_DIR": str(vectors), "AGENTMSG_JAVA_ROUNDTRIP_ONLY": "1"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_usage_beyond_java_survives_a_round_trip_through_java(tmp_path: Path) -> None:
    """Principle 2: where agentmsg goes beyond Java, the extra data survives a round trip through Java. Messages
    agentmsg wrote (cache writes, reasoning, an unknown usage key) are read and written back by AgentScope Java
    2.0.0's own codec, then read by agentmsg: Java drops the counts from usage, keeps their copy in metadata
    _chat_usage, and agentmsg reads the message it wrote."""
    written = _agentmsg_written_usage_messages()
    out = java_roundtrip(tmp_path, "msg", {label: msg.to_dict() for label, msg in written.items()})
    raw = _load(out, "roundtrip-msg.raw.json")
    assert set(raw) == set(written), "Java read every message agentmsg wrote"
    for label, original in written.items():
        java = orjson.loads(raw[label])
        mine = original.to_dict()
        beyond = {k for k in mine["usage"] if k not in JAVA_USAGE_KEYS}
        assert beyond, label
        assert not beyond & set(java["usage"]), f"{label}: Java 2.0.0 now keeps {beyond & set(java['usage'])}"
        assert java["metadata"]["_chat_usage"] == mine["usage"], label  # the copy, kept whole
        back = agentmsg.Msg.from_json(raw[label])
        assert back.usage is not None
        usage = orjson.loads(orjson.dumps(back.to_dict()["usage"]))
        # every count agentmsg wrote is back; Java adds only its own counters it was not given (zeros, and the
        # derived totalTokens)
        assert {k: v for k, v in usage.items() if k in mine["usage"]} == mine["usage"], label
        java_filled = {"cachedTokens": 0, "time": 0.0, "totalTokens": usage["inputTokens"] + usage["outputTokens"]}
        assert {k: usage[k] for k in set(usage) - set(mine["usage"])}.items() <= java_filled.items(), label
        assert _canonical("msg", {**java, "usage": None}) == _canonical("msg", {**mine, "usage": None}), label


def test_the_seed_constructors_build_what_javas_builders_build(java_out: Path) -> None:
    """``generate_reason=`` writes what Java's ``Msg.Builder.generateReason(g)`` and ``withGenerateReason`` write, byte
    for byte; ``ToolResultBlock.error(id, name, text)`` writes what Java's ``error(text).withIdAndName(id, name)``
    writes but for the state: Java leaves it ``running`` (docs/java-compatibility.md), agentmsg says ``error``."""
    msgs = _load(java_out, "built-msg.raw.json")
    for reason in agentmsg.GenerateReason:
        java = msgs.get(f"generate-reason-{reason.value}")
        assert java is not None, (
            f"GenerateReason {reason.value} is not one of AgentScope Java's (its Java program builds one message per"
            " reason it has): Java reads an unknown reason as MODEL_STOP; say so in docs/java-compatibility.md and"
            " leave the reason out here (README, Changing a schema)"
        )
        stamp = orjson.loads(java)["timestamp"]
        assert agentmsg.Msg("ASSISTANT", "x", id="m", timestamp=stamp, generate_reason=reason).to_json() == java
    java = msgs["with-generate-reason"]
    given = orjson.loads(java)
    ours = agentmsg.AssistantMessage("x", name="Friday", generate_reason=agentmsg.GenerateReason.MAX_ITERATIONS)
    assert ours.copy(id=given["id"], timestamp=given["timestamp"]).to_json() == java
    blocks = _load(java_out, "built-content-block.raw.json")
    java = blocks["tool-result-error-with-id-and-name"]
    error = agentmsg.ToolResultBlock.error("call_15", "divide", orjson.loads(java)["output"][0]["text"])
    assert error.state is agentmsg.ToolResultState.ERROR
    error.state = agentmsg.ToolResultState.RUNNING
    assert agentmsg.block_to_json(error) == java


def test_networknt_gives_agentmsgs_verdict_on_every_schema_vector(java_out: Path) -> None:
    """Java's common JSON Schema validator (com.networknt:json-schema-validator), given the schema files as they
    are (each found by its ``$id``, format assertions on), accepts exactly the vector cases agentmsg accepts:
    role rules and the timestamp rule included, since they are written in the schemas themselves. With
    python-jsonschema, check-jsonschema and ajv (tests/conformance/test_external_validators.py): three
    validators in three languages agree on every vector."""
    verdicts = _load(java_out, "networknt.json")
    checked = 0
    for name in sorted(p.name for p in (ROOT / "tests" / "conformance" / "vectors").glob("*.json")):
        doc = load_vectors(name)
        got = verdicts[doc["kind"]]
        assert set(got) == {case["id"] for case in doc["cases"]}, name
        for case in doc["cases"]:
            ours = agentmsg.is_valid(case["instance"], doc["kind"])
            assert ours is case["valid"], (name, case["id"])
            assert got[case["id"]]["valid"] is ours, (name, case["id"], got[case["id"]]["errors"])
            checked += 1
    assert checked and any(not v["valid"] for kind in verdicts.values() for v in kind.values())
