"""Forward compatibility (schemas 1.1): unknown keys kept, written back after the declared keys, reported,
rejected by strict reading; the closed variant is derived, never kept by hand."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    ChatUsage,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    URLSource,
    UserMessage,
    ValidationError,
)
from agentmsg.errors import WrongTypeError

# A newer producer's usage key (schemas 1.3 declare cacheCreationInputTokens and reasoningTokens; futureTokens stands
# for the next one).
NEWER = (
    '{"id":"m1","name":"Friday","role":"ASSISTANT","content":[{"type":"text","text":"Hello"}],"metadata":{},'
    '"timestamp":"2025-01-01 12:00:00.000","usage":{"inputTokens":7,"outputTokens":3,"cachedTokens":0,'
    '"time":0.0,"totalTokens":10,"futureTokens":5}}'
)


def _objects(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = []
    if isinstance(node, dict):
        if "properties" in node:
            out.append((path, node))
        for k, v in node.items():
            out += _objects(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _objects(v, f"{path}/{i}")
    return out


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in _differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}/{i}")]
    return [] if a == b else [path]


def test_every_record_states_the_open_policy_and_the_closed_variant_is_derived() -> None:
    for name, doc in agentmsg.schema_documents().items():
        records = []
        for path, node in _objects(doc):
            if "/if" in path or "/then" in path or "anyOf" in node or node.get("x-agentmsg-map"):
                continue  # role rules, union roots, free-form maps
            if str(node.get("$comment", "")).startswith("Closed on purpose: "):  # and says why (the cache marker)
                assert node.get("additionalProperties") is False, f"{name}{path}"
                continue
            assert node.get("additionalProperties") is True, f"{name}{path}: neither an open record nor a map"
            records.append(path)
        if records:
            assert "Forward compatible" in doc["description"], name
        closed = agentmsg.closed_schema_documents()[name]
        # The closed variant differs exactly at the records' additionalProperties, now false.
        assert _differences(doc, closed) == [f"{p}/additionalProperties" for p in records], name
        assert all(node.get("additionalProperties") is False for path, node in _objects(closed) if path in set(records))


def test_a_newer_producers_usage_key_round_trips_and_is_reported() -> None:
    msg = Msg.from_json(NEWER)
    assert msg.usage is not None and msg.usage.unknown_keys == {"futureTokens": 5}
    assert msg.to_json() == NEWER  # written back after the declared keys, byte for byte
    (problem,) = agentmsg.find_unknown_keys(msg)
    assert (problem.pointer, problem.rule) == ("/usage/futureTokens", "unknown-key")
    assert "ChatUsage" in problem.message
    with pytest.raises(ValidationError) as info:
        Msg.from_json(NEWER, strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/usage", "additionalProperties")]
    assert agentmsg.decode_messages(f"[{NEWER}]")[0] == msg
    with pytest.raises(ValidationError):
        agentmsg.decode_messages(f"[{NEWER}]", strict=True)


def test_the_schemas_version_each_message_names_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown key's message names the schemas' version, and VERSION.json was read for it every time an
    instance was searched that the closed schema refuses: for each instance with a problem or an unknown key
    (agentmsg validate on 100,000 events, each missing createdAt: 3.3 s of its 5.8 s). Read once, as the documents
    are; the message the same."""
    import importlib.resources

    import agentmsg._codec.schemas as schemas

    version = agentmsg.schema_version()
    (first,) = agentmsg.find_unknown_keys(json.loads(NEWER))
    reads: list[str] = []
    files = importlib.resources.files

    class Spy:
        @staticmethod
        def files(package: str) -> Any:
            reads.append(package)
            return files(package)

    monkeypatch.setattr(schemas, "resources", Spy)
    bad = {"id": "m", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}
    for _ in range(3):
        assert agentmsg.find_unknown_keys(json.loads(NEWER)) == [first]
        assert agentmsg.find_unknown_keys(bad) == []
    assert reads == [] and f"agentmsg's schemas {version}:" in first.message
    assert agentmsg.schema_version() == version


def test_unknown_keys_keep_their_order_after_the_declared_keys() -> None:
    text = '{"zeta":1,"id":"m","alpha":{"b":1,"a":2},"role":"USER","content":[{"z":0,"type":"text","text":"a","a":1}]}'
    msg = Msg.from_json(text)
    assert list(msg.unknown_keys or {}) == ["zeta", "alpha"]
    assert msg.to_json().endswith('"usage":null,"zeta":1,"alpha":{"b":1,"a":2}}')
    assert '{"type":"text","text":"a","z":0,"a":1}' in msg.to_json()
    assert list(msg.to_dict()) == ["id", "name", "role", "content", "metadata", "timestamp", "usage", "zeta", "alpha"]


def test_constructors_take_unknown_keys_and_refuse_declared_ones() -> None:
    block = TextBlock(text="a", unknown_keys={"annotations": []})
    assert agentmsg.block_to_json(block) == '{"type":"text","text":"a","annotations":[]}'
    assert TextBlock(text="a", unknown_keys={}) == TextBlock(text="a")  # empty means none
    msg = UserMessage([block], id="m", timestamp=None, unknown_keys={"future": True})
    assert Msg.from_json(msg.to_json()) == msg and msg.copy(name="x").unknown_keys == {"future": True}
    with pytest.raises(ValidationError) as info:
        TextBlock(text="a", unknown_keys={"text": "b"})
    assert (info.value.problems[0].pointer, info.value.problems[0].rule) == ("/text", "unknown-key")
    with pytest.raises(ValidationError):
        ImageBlock(source=URLSource(url="u"), unknown_keys={"min_pixels": 3})  # an accepted spelling
    with pytest.raises(ValidationError):
        UserMessage("x", unknown_keys={"role": "USER"})
    with pytest.raises(ValidationError):
        UserMessage("x", unknown_keys=[("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        UserMessage("x", unknown_keys={"a": float("nan")})


def test_sources_and_usage_given_as_objects_or_dicts_keep_unknown_keys() -> None:
    image = ImageBlock(source=URLSource(url="u", unknown_keys={"detail": "high"}))
    assert agentmsg.block_to_dict(image)["source"] == {"type": "url", "url": "u", "detail": "high"}
    assert ImageBlock(source=URLSource(url="u", unknown_keys={})) == ImageBlock(source=URLSource(url="u"))
    from_dict = ImageBlock(source={"type": "url", "url": "u", "detail": "high"})  # type: ignore[arg-type]
    assert from_dict == image
    usage = AssistantMessage("x", usage={"inputTokens": 1, "futureTokens": 2}).usage
    assert usage == ChatUsage(input_tokens=1, unknown_keys={"futureTokens": 2})
    assert AssistantMessage("x", usage=ChatUsage(unknown_keys={})).usage == ChatUsage()


def test_strict_readers_everywhere() -> None:
    block = {"type": "text", "text": "a", "newer": 1}
    assert agentmsg.block_from_dict(block).unknown_keys == {"newer": 1}
    for reject in (
        lambda: agentmsg.block_from_dict(block, strict=True),
        lambda: agentmsg.block_from_json(json.dumps(block), strict=True),
        lambda: agentmsg.blocks.source_from_dict({"type": "url", "url": "u", "x": 1}, strict=True),
        lambda: agentmsg.validate(block, "content-block", strict=True),
    ):
        with pytest.raises(ValidationError) as info:
            reject()
        assert info.value.problems[0].rule == "additionalProperties"
    assert agentmsg.is_valid(block, "content-block") and not agentmsg.is_valid(block, "content-block", strict=True)


def test_nested_unknown_keys_are_found_with_their_pointers() -> None:
    inner = TextBlock(text="x", unknown_keys={"deep": 1})
    result = ToolResultBlock(id="c", output=[ToolResultBlock(id="d", output=[inner])])
    msg = AssistantMessage([result])
    assert [p.pointer for p in agentmsg.find_unknown_keys(msg)] == ["/content/0/output/0/output/0/deep"]
    assert [p.pointer for p in agentmsg.find_unknown_keys(result)] == ["/output/0/output/0/deep"]
    assert agentmsg.find_unknown_keys(msg.to_dict(), "msg") == agentmsg.find_unknown_keys(msg)
    event = {"type": "AGENT_END", "id": "e", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "x": 1}
    assert [p.pointer for p in agentmsg.find_unknown_keys(event, "event")] == ["/x"]


def test_a_kind_or_a_value_of_the_wrong_type_is_the_sdks_error_never_read_as_another() -> None:
    """``find_unknown_keys`` read any falsy ``kind`` as none given: ``""``, ``[]`` or ``0`` checked a dict as a
    message and a model as its own kind, without a word; and an attrs instance that is no agentmsg model raised a
    bare ValueError. A kind that is no string is a WrongTypeError at /kind, an empty one an unknown kind (rule
    ``enum``), another class's instance a WrongTypeError at /value; None still means the default."""

    @attrs.define
    class Point:
        x: int = 1

    value = {"id": "m", "role": "USER", "content": [], "metadata": {}, "future": 1}
    kinds: tuple[Any, ...] = ([], {}, 0, False, b"msg")
    for kind in kinds:
        with pytest.raises(WrongTypeError) as caught:
            agentmsg.find_unknown_keys(value, kind)
        assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/kind", "type")]
        with pytest.raises(WrongTypeError):
            agentmsg.find_unknown_keys(agentmsg.TextBlock(text="x"), kind)
    for given in (value, agentmsg.TextBlock(text="x")):
        with pytest.raises(ValidationError) as refused:
            agentmsg.find_unknown_keys(given, "")
        assert [(p.pointer, p.rule) for p in refused.value.problems] == [("/kind", "enum")]
    with pytest.raises(WrongTypeError) as caught:
        agentmsg.find_unknown_keys(Point())
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/value", "type")]
    assert [p.pointer for p in agentmsg.find_unknown_keys(value, None)] == ["/future"]
    assert [p.pointer for p in agentmsg.find_unknown_keys(value)] == ["/future"]
