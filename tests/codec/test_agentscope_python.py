"""Messages written by AgentScope Python (1.x ``Msg.to_dict()``, 2.x ``Msg.model_dump()``; recorded by AgentScope
itself: tests/fixtures/agentscope_python/README.md) are read in agentmsg's form, each key mapped or kept with a note
(rule ``legacy-key``), never silently dropped; strict readers refuse them (docs/wire-format.md, "Legacy keys")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentmsg
from agentmsg import GenerateReason, Msg, MsgRole, Problem, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.providers import get

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "agentscope_python"
FIXTURES = sorted(HERE.glob("v*/*.json"))


def _load(name: str) -> dict[str, Any]:
    return json.loads((HERE / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _read(data: Any) -> tuple[Msg, dict[str, str]]:
    notes: list[Problem] = []
    msg = Msg.from_dict(data, notes=notes)
    assert {p.rule for p in notes} == {"legacy-key"}
    said = {p.pointer: p.message for p in notes}
    assert len(said) == len(notes)  # one note per key
    return msg, said


def _paths(value: Any, at: str = "") -> set[str]:
    """The pointer of every object key in ``value``."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{at}/{k}"
            out |= {here} | _paths(v, here)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out |= _paths(v, f"{at}/{i}")
    return out


def test_there_are_fixtures_of_both_versions() -> None:
    assert {p.parent.name for p in FIXTURES} == {"v1", "v2"} and len(FIXTURES) >= 20


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_fixture_is_read_with_notes_written_back_valid_and_refused_strictly(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    original = json.loads(path.read_text(encoding="utf-8"))
    assert not agentmsg.is_valid(data, "msg")  # what AgentScope Python writes is no agentmsg message as it is
    msg, said = _read(data)
    assert data == original  # the input is not changed
    assert said["/role"].startswith(f"role {data['role']!r} (AgentScope Python): read as ")
    assert msg.role.value == ("TOOL" if path.stem.startswith("system_tool_result") else data["role"].upper())
    written = msg.to_dict()
    agentmsg.validate(written, "msg")  # the current form, valid
    assert Msg.from_dict(written, notes=[]) == msg and Msg.from_json(msg.to_json()) == msg  # and no more notes
    assert agentmsg.read_legacy_keys(written, "msg")[1] == []
    # Nothing dropped without a word: every key of the input is in the output at the same place, or said.
    kept = _paths(written)
    for pointer in _paths(data):
        assert pointer in kept or any(pointer.startswith(p) for p in said), pointer
    # the readers agree: from_json, decode_messages (pointers under the message's index), read_legacy_keys
    assert Msg.from_json(json.dumps(data), notes=[]) == msg
    notes: list[Problem] = []
    assert agentmsg.decode_messages(json.dumps([data]), notes=notes) == [msg]
    assert {p.pointer for p in notes} == {f"/0{p}" for p in said}
    current, again = agentmsg.read_legacy_keys(data, "msg")
    assert {p.pointer: p.message for p in again} == said and Msg.from_dict(current, notes=[]) == msg
    with pytest.warns(agentmsg.LegacyKeyWarning):
        Msg.from_dict(data)
    with pytest.raises(agentmsg.ValidationError) as info:
        Msg.from_dict(data, strict=True)
    assert {p.pointer for p in info.value.problems if p.rule == "legacy-key"} == set(said)
    # the formatter path takes the mapped message
    body = get("openai").format_request([msg]).body
    assert body["messages"]


def test_v1_text_content_tool_use_and_system_tool_results() -> None:
    user, said = _read(_load("v1/user_text.json"))
    assert user.text_content == "hello" and said["/content"].startswith("content is text")
    assert user.timestamp == _load("v1/user_text.json")["timestamp"]  # already Java's form
    call_msg, said = _read(_load("v1/assistant_tool_use.json"))
    (call,) = call_msg.blocks(ToolUseBlock)
    assert (call.input, call.content) == ({"city": "Paris"}, '{"city": "Paris"}')
    assert "read as 'content'" in said["/content/1/raw_input"]
    result_msg, said = _read(_load("v1/system_tool_result_text.json"))
    assert result_msg.role is MsgRole.TOOL and "holds tool results" in said["/role"]
    (result,) = result_msg.blocks(ToolResultBlock)
    assert [b.text for b in result.output] == ["Sunny, 21 C"]  # type: ignore[union-attr]
    listed, _ = _read(_load("v1/system_tool_result_list.json"))
    (result,) = listed.blocks(ToolResultBlock)
    assert [b.type for b in result.output] == ["text", "image"]
    meta, _ = _read(_load("v1/assistant_text.json"))
    assert meta.metadata == {"note": "kept"}


def test_a_system_message_of_text_stays_system_and_role_rules_still_apply() -> None:
    system, _ = _read(_load("v1/system_text.json"))
    assert system.role is MsgRole.SYSTEM
    bad = {"id": "m", "role": "system", "content": [{"type": "thinking", "thinking": "x"}]}
    with pytest.raises(agentmsg.ValidationError) as info:
        Msg.from_dict(bad, notes=[])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/content/0/type", "role-content")]
    bad = {"id": "m", "role": "user", "content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{}"}]}
    with pytest.raises(agentmsg.ValidationError) as info:  # a USER message holds no tool call, read or not
        Msg.from_dict(bad, notes=[])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/content/0/type", "role-content")]


def test_v2_message_keys() -> None:
    data = _load("v2/assistant_text.json")
    msg, said = _read(data)
    assert msg.timestamp == data["created_at"].replace("T", " ")
    assert "read as 'timestamp'" in said["/created_at"]
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (12, 7)
    assert msg.to_dict()["usage"]["cachedTokens"] == 3 and msg.to_dict()["usage"]["cacheCreationInputTokens"] == 0
    assert msg.metadata["agentscope_generate_reason"] == GenerateReason.MODEL_STOP.value
    assert "'completed' is 'MODEL_STOP'" in said["/finished_reason"]
    assert msg.unknown_keys == {"finished_at": "2025-06-01 10:20:31.000"} and "unknown key" in said["/finished_at"]
    structured, said = _read(_load("v2/assistant_structured_output.json"))
    assert structured.metadata["_structured_output"] == {"answer": 42}
    assert "null: dropped" in said["/error"]
    stopped, _ = _read(_load("v2/assistant_interrupted.json"))
    assert stopped.metadata["agentscope_generate_reason"] == "INTERRUPTED"
    failed, said = _read(_load("v2/assistant_error.json"))
    assert failed.unknown_keys == {"finished_reason": "error", "error": {"type": "unknown", "message": "rate limited"}}
    assert "no GenerateReason" in said["/finished_reason"] and "unknown key" in said["/error"]
    assert "agentscope_generate_reason" not in failed.metadata


def test_v2_blocks() -> None:
    msg, said = _read(_load("v2/assistant_tool_call.json"))
    text, call = msg.content
    assert isinstance(call, ToolUseBlock)
    assert (call.input, call.content, call.state) == ({"city": "Paris"}, '{"city": "Paris"}', "pending")
    assert said["/content/1/type"] == "block type 'tool_call' (AgentScope Python 2.x): read as 'tool_use'"
    assert "read as 'content'" in said["/content/1/input"]
    assert set(call.unknown_keys or {}) == {"suggested_rules", "created_at"}
    assert set(text.unknown_keys or {}) == {"id", "created_at"} and "null: dropped" in said["/content/0/finished_at"]
    thinking, _ = _read(_load("v2/assistant_thinking.json"))
    (block,) = thinking.blocks(ThinkingBlock)
    assert block.metadata == {"signature": "sig-abc"}
    image, said = _read(_load("v2/user_image_url.json"))
    source = image.to_dict()["content"][1]["source"]
    assert source == {"type": "url", "url": "https://example.com/cat.png", "mime_type": "image/png"}
    assert "read as 'mime_type'" in said["/content/1/source/media_type"]
    results, _ = _read(_load("v2/assistant_tool_result_blocks.json"))
    (result,) = results.blocks(ToolResultBlock)
    assert [b.type for b in result.output] == ["text", "data"] and result.state == "success"


def test_keys_that_collide_with_current_ones_are_kept_and_said() -> None:
    data = {
        "id": "m",
        "role": "assistant",
        "content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{oops"}],
        "created_at": "yesterday",
        "timestamp": "2025-01-01 12:00:00.000",
        "structured_output": {"a": 1},
        "metadata": {"_structured_output": {"a": 2}},
        "finished_reason": "done",
    }
    msg, said = _read(data)
    assert msg.unknown_keys == {"created_at": "yesterday", "structured_output": {"a": 1}, "finished_reason": "done"}
    assert "no timestamp agentmsg reads" in said["/created_at"]
    assert "set to something else" in said["/structured_output"]
    (call,) = msg.blocks(ToolUseBlock)
    assert (call.input, call.content, call.metadata) == (
        {},
        "{oops",
        {"argumentsError": "arguments are not valid JSON"},
    )
    # a Java-form message with the same names is not AgentScope Python's: its unknown keys are not noted
    java = {"id": "m", "role": "ASSISTANT", "content": [{"type": "text", "text": "x", "id": "b"}], "created_at": "x"}
    assert agentmsg.read_legacy_keys(java, "msg") == (java, [])


def test_null_metadata_and_text_content_of_any_message() -> None:
    msg, said = _read({"id": "m", "role": "ASSISTANT", "content": "hi", "metadata": None})
    assert (msg.text_content, msg.metadata) == ("hi", {})
    assert set(said) == {"/content", "/metadata"}


@pytest.mark.parametrize("kind", [[], {}, ["text"], {"a": 1}, 1, None, True])
def test_a_block_type_that_is_no_string_is_refused_in_words(kind: Any) -> None:
    # A lowercase role reads the message as AgentScope Python's, whose block keys are looked up by the block's type:
    # a list or an object there is a schema problem at that pointer, not a TypeError of the lookup.
    value = {"role": "user", "name": "u", "content": [{"type": kind, "text": "x"}]}
    for read in (
        lambda: Msg.from_dict(value, notes=[]),
        lambda: Msg.from_json(json.dumps(value), notes=[]),
        lambda: agentmsg.decode_messages(json.dumps([value]), notes=[]),
    ):
        with pytest.raises(agentmsg.ValidationError) as info:
            read()
        assert any(p.pointer.endswith("/content/0/type") for p in info.value.problems), info.value
    _, notes = agentmsg.read_legacy_keys(value, "msg")
    assert [n.pointer for n in notes] == ["/role"]
