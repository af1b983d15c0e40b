"""The hand-written parts that must follow the schemas, checked against them: each failure names what a
maintainer who changed a schema has to update (README, "Changing a schema").

The schemas are the truth and ``make codegen`` derives the models, the fast path and the TypeScript types.
What cannot be derived is the agent-event vocabulary: which event carries which block field, and what the
reducers (Python, its C and JSON-lines fast paths, TypeScript) do with each event key. A schema change that
those parts do not follow loses data silently (a block field the emitter has no event for), so these tests
compare them with the schema, and the last one runs a scratch schema change through codegen end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    HintBlock,
    Reducer,
    TextBlock,
    ToolUseBlock,
    ValidationError,
    emit_events,
    reduce_stream,
)
from agentmsg.blocks import BLOCK_CLASSES
from agentmsg.events import _handlers, _jsonl, emitter
from agentmsg.providers import NAMES, get
from agentmsg.providers._request.context import FORMATTED_BLOCKS
from agentmsg.providers._request.fields import COMMON
from tests.conftest import ROOT

SCHEMA_CHANGE = "README.md, 'Changing a schema'"


def _block_schemas() -> dict[str, dict[str, Any]]:
    """Block type -> its definition, for every branch of the content-block union."""
    doc = agentmsg.schema_documents()["content-block.schema.json"]
    defs = [doc["$defs"][b["$ref"].rpartition("/")[2]] for b in doc["anyOf"]]
    return {d["properties"]["type"]["const"]: d for d in defs}


def block_drift() -> list[str]:
    """What the hand-written block code lacks for the block types and fields the schema declares."""
    out = []
    for tag, node in _block_schemas().items():
        cls = BLOCK_CLASSES.get(tag)
        title = node["title"]
        if cls is None or cls.__name__ != title:
            out.append(f"block type {tag!r} ({title}) has no SDK class in agentmsg.blocks.BLOCK_CLASSES")
        elif getattr(agentmsg, title, None) is not cls or title not in agentmsg.__all__:
            out.append(
                f"block type {tag!r}: export {title} from sdk/agentmsg/blocks.py (__all__ and the TYPE_CHECKING"
                " imports) and sdk/agentmsg/__init__.py (import and __all__)"
            )
        if cls is not None and cls not in FORMATTED_BLOCKS:
            out.append(
                f"block type {tag!r} has no rule in the provider formatters: decide what each provider gets"
                " (sdk/agentmsg/providers/_request: turns.py, chat.py, context.py history_parts, each provider's module),"
                " add formatter vectors (tests/conformance/formatters), then add it to FORMATTED_BLOCKS in"
                " providers/_request/context.py"
            )
        if tag not in emitter.EMITTERS:
            out.append(
                f"block type {tag!r} has no events: add an emitter to EMITTERS and its carried keys to CARRIED"
                " (sdk/agentmsg/events/emitter.py), the events that carry it to schemas/agent-event.schema.json,"
                " their handling to both reducers (sdk/agentmsg/events/_handlers.py, sdk/typescript/src/handlers.ts)"
                " and a reducer vector (tests/conformance/reducer)"
            )
            continue
        if cls is not None and cls in FORMATTED_BLOCKS:
            for name in NAMES:
                fields = get(name).spec.fields or COMMON
                for key in sorted(set(node["properties"]) - set(fields.get(tag, {}))):
                    out.append(
                        f"{title}.{key}: the formatters' field table does not name it ({name}): decide what each"
                        " provider does with it (sent, mapped, reported, not sent) in COMMON"
                        " (sdk/agentmsg/providers/_request/fields.py) or the provider's FIELDS, and make the walks"
                        " do it (tests/providers/shared/test_fields.py checks)"
                    )
                    break
        carried = emitter.CARRIED.get(tag, frozenset())
        if carried is not None:
            for key in sorted(set(node["properties"]) - carried):
                out.append(
                    f"{title}.{key}: no agent event carries it, so emit_events -> reduce loses it. Give it an event"
                    " key (schemas/agent-event.schema.json), write it in sdk/agentmsg/events/emitter.py and add it"
                    f" to CARRIED[{tag!r}] there, read it in both reducers (sdk/agentmsg/events/_handlers.py and"
                    " _build.py, sdk/typescript/src/handlers.ts) and add a reducer vector (tests/conformance/reducer)"
                )
    return out


def test_every_block_type_and_field_of_the_schema_is_constructed_exported_and_emitted() -> None:
    problems = block_drift()
    assert not problems, f"the schema declares what the SDK does not handle ({SCHEMA_CHANGE}):\n" + "\n".join(problems)


@pytest.fixture
def uncached() -> Any:
    """The emitter caches what each block class's events carry: forget it around a test that patches CARRIED."""
    emitter._uncarried.cache_clear()
    yield
    emitter._uncarried.cache_clear()


def test_emitting_a_block_field_no_event_carries_raises(monkeypatch: pytest.MonkeyPatch, uncached: None) -> None:
    """A declared field the events cannot carry (as `citations` on TextBlock, added to the schema alone, was)
    used to be dropped by emit_events without a word: reduce(emit(m)) lost it."""
    monkeypatch.setitem(emitter.CARRIED, "hint", frozenset({"type", "hint", "id"}))  # as if `source` were new
    m = AssistantMessage(["hi", HintBlock(hint="h", source="alice")], id="m")
    with pytest.raises(ValidationError) as exc:
        emit_events(m)
    (p,) = exc.value.problems
    assert (p.pointer, p.rule) == ("/content/1/source", "no-event-carrier")
    assert "HintBlock.source" in p.message
    # Unset (null or the default), the field loses nothing: the message is emitted.
    (back,) = agentmsg.reduce_events(emit_events(AssistantMessage(["hi", HintBlock(hint="h")], id="m")))
    assert back.content[1] == HintBlock(hint="h")
    # A field whose default is a factory (tool input: {}) counts as unset when it holds what a new block holds.
    monkeypatch.setitem(emitter.CARRIED, "tool_use", frozenset({"type", "id", "name", "content", "metadata", "state"}))
    assert emit_events(AssistantMessage([ToolUseBlock(id="c", name="f")], id="m"))
    with pytest.raises(ValidationError, match=r"ToolUseBlock\.input"):
        emit_events(AssistantMessage([ToolUseBlock(id="c", name="f", input={"a": 1})], id="m"))


def test_emitting_a_block_type_without_events_raises(monkeypatch: pytest.MonkeyPatch, uncached: None) -> None:
    """A block type with no emitter (a new type in the schema) raised a bare KeyError from emit_events."""
    monkeypatch.delitem(emitter.EMITTERS, "hint")
    with pytest.raises(ValidationError) as exc:
        emit_events(AssistantMessage([TextBlock(text="a"), HintBlock(hint="h")], id="m"))
    (p,) = exc.value.problems
    assert (p.pointer, p.rule) == ("/content/1/type", "no-event-carrier")
    assert "EMITTERS" in p.message


# ---- events: what the reducers do with each key -------------------------------------------------------

#: Keys of the three delta types the reducers fold without their handler (through the routing table, in
#: Python's apply and fold, the JSON-lines fast path and the TypeScript apply): the shortcut uses or ignores these.
SHORTCUT_KEYS = {"type", "id", "createdAt", "replyId", "blockId", "toolCallId", "toolCallName", "delta", "metadata"}


def _opened(kind: str) -> list[dict[str, Any]]:
    """Events that open a reply and the block or call that deltas of type ``kind`` go to."""
    head = [{"type": "AGENT_START", "id": "a", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"}]
    head.append({"type": "MODEL_CALL_START", "id": "b", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"})
    if kind == "TOOL_CALL_DELTA":
        head.append({"type": "TOOL_CALL_START", "id": "c", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r",
                     "toolCallId": "call", "toolCallName": "f"})  # fmt: skip
    else:
        start = kind.replace("_DELTA", "_START")
        block = kind.split("_")[0].lower()
        head.append({"type": start, "id": "c", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": block})
    return head


def _delta(kind: str, **extra: Any) -> dict[str, Any]:
    where = {"toolCallId": "call"} if kind == "TOOL_CALL_DELTA" else {"blockId": kind.split("_")[0].lower()}
    return {
        "type": kind,
        "id": "d",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "r",
        **where,
        "delta": "x",
        **extra,
    }


def _feed(events: list[dict[str, Any]]) -> None:
    r = Reducer()
    for e in events:
        r.feed(e)


def _feed_many(events: list[dict[str, Any]]) -> None:
    Reducer().feed_many(events)


def _jsonl_lines(events: list[dict[str, Any]]) -> None:
    reduce_stream(b"\n".join(json.dumps(e).encode() for e in events))


FEEDS: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "Reducer.feed (Python apply, sdk/agentmsg/events/_handlers.py)": _feed,
    "Reducer.feed_many (fold, sdk/agentmsg/events/_handlers.py)": _feed_many,
    "reduce_stream of JSON lines (sdk/agentmsg/events/_jsonl.py _view_types)": _jsonl_lines,
}


@pytest.mark.parametrize("kind", ["TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA"])
@pytest.mark.parametrize("how", list(FEEDS))
def test_a_delta_key_beyond_the_shortcut_reaches_its_handler(
    kind: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key the schema gives a delta type beyond SHORTCUT_KEYS (today the thinking delta's `signature` and
    `redactedData`; `source` sends a subagent's event elsewhere) must take the event to its handler on every
    path: the shortcuts fold the delta and drop every other key. A key added to the schema and read in the
    handler alone is lost wherever a shortcut takes the delta."""
    node = next(d for d in agentmsg.schema_documents()["agent-event.schema.json"]["$defs"].values()
                if d.get("properties", {}).get("type", {}).get("const") == kind)  # fmt: skip
    extra = sorted(set(node["properties"]) - SHORTCUT_KEYS - {"source"})
    seen: list[dict[str, Any]] = []
    handler = _handlers.HANDLERS[kind]

    def spy(st: Any, e: dict[str, Any], i: int) -> None:
        seen.append(e)
        handler(st, e, i)

    monkeypatch.setitem(_handlers.HANDLERS, kind, spy)
    for key in extra:
        seen.clear()
        FEEDS[how]([*_opened(kind), _delta(kind, **{key: "v"})])
        assert [e.get(key) for e in seen] == ["v"], (
            f"{kind} with {key!r} (declared by schemas/agent-event.schema.json) never reached its handler through"
            f" {how}: the plain-delta shortcut took it and dropped {key!r}. Make every shortcut leave a delta"
            " with that key to the handler (Python apply and fold in events/_handlers.py,"
            " `typed` None in events/_jsonl.py, apply in sdk/typescript/src/handlers.ts), or add it"
            f" to SHORTCUT_KEYS here if the reducers ignore it on purpose ({SCHEMA_CHANGE})"
        )
    assert {k for k, t in _jsonl._VIEWS[kind].__annotations__.items() if t is None} >= set(extra)


#: Every key of every agent event, as the reducers (Python, sdk/agentmsg/events/_handlers.py; TypeScript,
#: sdk/typescript/src/handlers.ts) were last reviewed for: a key the schema adds fails the test below.
REVIEWED_EVENT_KEYS: dict[str, set[str]] = {
    "AGENT_START": {"name", "replyId", "role", "sessionId"},
    "AGENT_END": {"replyId"},
    "AGENT_RESULT": {"result"},
    "MODEL_CALL_START": {"modelName", "replyId"},
    "MODEL_CALL_END": {"replyId", "usage"},
    "TEXT_BLOCK_START": {"blockId", "replyId"},
    "TEXT_BLOCK_DELTA": {"blockId", "delta", "replyId"},
    "TEXT_BLOCK_END": {"blockId", "replyId"},
    "THINKING_BLOCK_START": {"blockId", "model", "provider", "replyId"},
    "THINKING_BLOCK_DELTA": {"blockId", "delta", "redactedData", "replyId", "signature"},
    "THINKING_BLOCK_END": {"blockId", "replyId"},
    "DATA_BLOCK_START": {"block", "blockId", "mediaType", "name", "replyId"},
    "DATA_BLOCK_DELTA": {"blockId", "delta", "replyId"},
    "DATA_BLOCK_END": {"blockId", "replyId"},
    "TOOL_CALL_START": {"replyId", "thoughtSignature", "toolCallId", "toolCallName"},
    "TOOL_CALL_DELTA": {"delta", "replyId", "toolCallId", "toolCallName"},
    "TOOL_CALL_END": {"input", "replyId", "state", "toolCallId", "toolCallName"},
    "TOOL_RESULT_START": {"replyId", "toolCallId", "toolCallName"},
    "TOOL_RESULT_TEXT_DELTA": {"delta", "replyId", "toolCallId", "toolCallName"},
    "TOOL_RESULT_DATA_DELTA": {"data", "replyId", "toolCallId", "toolCallName"},
    "TOOL_RESULT_END": {"replyId", "state", "toolCallId", "toolCallName"},
    "EXCEED_MAX_ITERS": {"currentIter", "maxIters", "replyId"},
    "REQUIRE_USER_CONFIRM": {"replyId", "toolCalls"},
    "REQUIRE_EXTERNAL_EXECUTION": {"replyId", "toolCalls"},
    "USER_CONFIRM_RESULT": {"confirmResults", "replyId"},
    "EXTERNAL_EXECUTION_RESULT": {"replyId", "toolResults"},
    "REQUEST_STOP": {"generateReason", "reason"},
    "SUBAGENT_EXPOSED": {"agentId", "label", "sessionId", "subagentId"},
    "HINT_BLOCK": {"blockId", "hint", "hintSource", "replyId"},
    "ALL_TOOLS_DENIED": {"deniedToolCalls"},
    "CUSTOM": {"name", "value"},
}
_COMMON = {"type", "id", "createdAt", "source", "metadata"}


def event_drift() -> list[str]:
    out = []
    for node in agentmsg.schema_documents()["agent-event.schema.json"]["$defs"].values():
        kind = node.get("properties", {}).get("type", {}).get("const")
        if not isinstance(kind, str):
            continue
        declared = set(node["properties"]) - _COMMON
        reviewed = REVIEWED_EVENT_KEYS.get(kind)
        if reviewed is None:
            out.append(
                f"new event type {kind}: give it a handler in both reducers (HANDLERS in"
                " sdk/agentmsg/events/_handlers.py, sdk/typescript/src/handlers.ts), a reducer vector"
                " (tests/conformance/reducer), then list its keys in REVIEWED_EVENT_KEYS here"
            )
        elif declared != reviewed:
            new, gone = sorted(declared - reviewed), sorted(reviewed - declared)
            out.append(
                f"{kind}: keys added {new}, removed {gone}. Decide what both reducers do with them"
                " (sdk/agentmsg/events/_handlers.py and sdk/typescript/src/handlers.ts; for a delta type also"
                " test_a_delta_key_beyond_the_shortcut_reaches_its_handler), whether emit_events writes them"
                " (events/emitter.py), add a reducer vector (tests/conformance/reducer), then update"
                " REVIEWED_EVENT_KEYS here"
            )
    return out


def test_every_event_key_of_the_schema_was_reviewed_for_the_reducers() -> None:
    problems = event_drift()
    assert not problems, f"the event schema changed ({SCHEMA_CHANGE}):\n" + "\n".join(problems)


# ---- a scratch schema change, through codegen ---------------------------------------------------------

_SCRATCH = r"""
import json, sys
import agentmsg, agentmsg_models
from agentmsg import Msg, block_from_dict, emit_events, ValidationError
from tests.project import test_schema_drift as drift

assert agentmsg_models.__file__.startswith(sys.argv[1]), agentmsg_models.__file__
out = {"emit": []}
cite = {"type": "citation", "url": "u", "title": "t"}
try:
    block = block_from_dict(cite)
    out["class"] = type(block).__module__ + "." + type(block).__name__
except Exception as exc:
    out["class"] = repr(exc)
msg = Msg.from_dict({"id": "m", "name": None, "role": "ASSISTANT", "metadata": {}, "timestamp": None,
                     "content": [{"type": "text", "text": "hi", "citations": ["a"]}, cite]})
out["json"] = msg.to_json()
out["same"] = Msg.from_json(msg.to_json()) == msg
for content in ([msg.content[0]], [msg.content[1]]):
    try:
        back = agentmsg.reduce_events(emit_events(msg.copy(content=content)))
        out["emit"].append(back[0].to_dict()["content"])  # what came back
    except ValidationError as exc:
        out["emit"].append([exc.problems[0].pointer, exc.problems[0].rule])
    except Exception as exc:
        out["emit"].append(repr(exc))
from agentmsg.providers import get
out["format"] = {}
for provider in ("openai", "anthropic", "gemini", "dashscope"):
    for multi in (False, True):
        try:
            r = get(provider).format_request([agentmsg.UserMessage("q"), msg], model="m", multi_agent=multi, agent_name="me")
            out["format"][f"{provider}/{multi}"] = [[d.pointer, d.rule] for d in r.diagnostics if "citation" in d.message]
        except ValidationError as exc:
            out["format"][f"{provider}/{multi}"] = [exc.problems[0].pointer, exc.problems[0].rule]
try:
    out["drift"] = drift.block_drift()
except Exception as exc:
    out["drift"] = [repr(exc)]
print(json.dumps(out))
"""


def test_a_new_block_field_and_block_type_through_codegen(tmp_path: Path) -> None:
    """What a maintainer gets after adding `citations` to the text block and a `citation` block type to the
    schema and running codegen, before touching anything by hand: the new type is decoded, constructed and
    written by the SDK (its classes are derived from the schema; the list was hand-written, so
    block_from_dict raised a bare KeyError), emit_events refuses what no event carries (it dropped
    `citations` silently and raised KeyError for the type) and block_drift names what to update."""
    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", schemas)
    path = schemas / "content-block.schema.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["properties"]["type"]["enum"].append("citation")
    doc["anyOf"].append({"$ref": "#/$defs/CitationBlock"})
    doc["$defs"]["TextBlock"]["properties"]["citations"] = {
        "description": "Sources the text cites.",
        "type": "array",
        "items": {"type": "string"},
    }
    doc["$defs"]["CitationBlock"] = {
        "title": "CitationBlock",
        "description": "A source the reply cites.",
        "type": "object",
        "required": ["type", "url"],
        "additionalProperties": True,
        "properties": {
            "type": {"description": "Always `citation`.", "const": "citation"},
            "url": {"description": "Where.", "type": "string"},
            "title": {"description": "Its title, or null.", "type": ["string", "null"]},
        },
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    models = tmp_path / "models"
    subprocess.run(
        [sys.executable, str(ROOT / "codegen" / "generate.py"), "--schemas", str(schemas), "--out", str(models / "agentmsg_models")],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(models), str(ROOT), *sys.path]))
    r = subprocess.run(
        [sys.executable, "-c", _SCRATCH, str(models)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["emit"] == [["/content/0/citations", "no-event-carrier"], ["/content/0/type", "no-event-carrier"]]
    assert out["class"] == "agentmsg.blocks.CitationBlock"
    # Formatting names the new type: an error in a model's own turn (it was `cannot format this message:
    # AttributeError(...)` at /1), a diagnostic where multi-agent mode folds another agent's turn into text; the
    # new field of a known block is said as not sent (it was dropped silently).
    for key, got in out["format"].items():
        multi = key.endswith("True")
        expected = [["/1/content/1", "block-dropped"], ["/1/content/0/citations", "field-dropped"]]
        assert got == (expected if multi else ["/1/content/1/type", "unsupported-block"]), key
    # (the keys this change adds, not the whole text: a field a maintainer adds to the text block later, written as
    # null when nullable, is no failure of this test's)
    content = json.loads(out["json"])["content"]
    assert (content[0]["type"], content[0]["text"], content[0]["citations"]) == ("text", "hi", ["a"])
    assert content[1] == {"type": "citation", "url": "u", "title": "t"}
    assert out["same"]
    drift = "\n".join(out["drift"])
    assert "export CitationBlock" in drift
    assert "block type 'citation' has no events" in drift
    assert "block type 'citation' has no rule in the provider formatters" in drift
    assert "TextBlock.citations: no agent event carries it" in drift
    assert "TextBlock.citations: the formatters' field table does not name it" in drift


# ---- conformance vectors: every declared field is exercised -------------------------------------------

#: (type, key) pairs no valid vector holds yet (before this test existed); do not add to it.
_UNCOVERED_BEFORE = {("TOOL_CALL_START", "thoughtSignature")}


def _tagged_keys(value: Any, out: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(type, key) of every object with a string ``type`` in ``value``."""
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            out.update((value["type"], k) for k in value)
        for v in value.values():
            _tagged_keys(v, out)
    elif isinstance(value, list):
        for v in value:
            _tagged_keys(v, out)
    return out


def test_every_declared_block_source_and_event_key_is_in_a_valid_vector() -> None:
    """The vectors are what Python, TypeScript and AgentScope Java all run: a field no valid vector holds is
    checked by none of them (Java, which does not know a new field, drops it unseen)."""
    seen: set[tuple[str, str]] = set()
    for name in ("msg.json", "content-block.json", "event.json"):
        for case in json.loads((ROOT / "tests" / "conformance" / "vectors" / name).read_text(encoding="utf-8"))[
            "cases"
        ]:
            if case["valid"]:
                _tagged_keys(case["instance"], seen)
    for path in sorted((ROOT / "tests" / "conformance" / "reducer").glob("*.json")):
        _tagged_keys(json.loads(path.read_text(encoding="utf-8")), seen)
    missing = []
    docs = agentmsg.schema_documents()
    for file in ("content-block.schema.json", "source.schema.json", "agent-event.schema.json"):
        for node in docs[file]["$defs"].values():
            tag = node.get("properties", {}).get("type", {}).get("const")
            if isinstance(tag, str):
                for key in sorted(set(node["properties"]) - _COMMON - {"type"}):
                    if (tag, key) not in seen and (tag, key) not in _UNCOVERED_BEFORE:
                        missing.append(f"{node['title']}.{key} ({file})")
    assert not missing, (
        "declared but in no valid conformance vector: add a valid case holding each to tests/conformance/vectors"
        " (content-block.json, msg.json or event.json) or a reducer vector, then `make vectors-lock` if the"
        f" versioning test asks ({SCHEMA_CHANGE}):\n" + "\n".join(missing)
    )
