"""The anthropic reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds
from the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from tests._support.providers import FIXTURES, STREAMS, comparable, ids, module, one, reduce_checked, sse_payloads

pytestmark = pytest.mark.oracle

# The docs' extended-thinking example is edited (no usage at all): the SDK's accumulator cannot run on it.
ANTHROPIC_STREAMS = [p for p in STREAMS if p.parent.name == "anthropic" and "extended_thinking" not in p.name]


@pytest.mark.parametrize("path", ANTHROPIC_STREAMS, ids=ids(ANTHROPIC_STREAMS))
def test_anthropic_equals_accumulate_event(path: Path) -> None:
    streaming = pytest.importorskip("anthropic.lib.streaming._messages")
    snapshot = None
    bufs: dict[int, bytes] = {}
    for _, payload in sse_payloads(path.read_bytes()):
        if payload.get("type") in ("ping", "error"):
            continue
        snapshot = streaming.accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None
    whole_body = snapshot.to_dict()
    mod = module("anthropic")
    streamed = reduce_checked(list(mod.parse_stream(path.read_bytes())))
    ours = comparable(streamed)
    theirs = comparable(mod.parse_response(whole_body))
    if "incomplete_partial_json" in path.name:
        # max_tokens cut the tool input: the SDK parses it leniently (partial JSON); agentmsg keeps the raw
        # text with input {} and says why. The raw text, parsed the SDK's way, is the SDK's input.
        from jiter import from_json

        call = streamed.blocks("tool_use")[0]
        assert call.input == {} and "argumentsError" in (call.metadata or {}) and call.content is not None
        assert from_json(call.content.encode(), partial_mode=True) == whole_body["content"][1]["input"]
        ours["content"] = ours["content"][:1]
        theirs["content"] = theirs["content"][:1]
    if "usage" not in whole_body or not whole_body["usage"]:
        ours["usage"] = theirs["usage"] = {}
    assert ours == theirs
    # the snapshot's blocks, field by field: a text block's citations follow it in a carrier, and a server tool's
    # block is a carrier in its place; what they keep is what the SDK's snapshot holds for those fields
    expected: list[tuple[str, Any]] = []
    for b in whole_body["content"]:
        if b["type"] == "text" and b["text"]:
            expected.append(("text", b["text"]))
            if b.get("citations"):
                expected.append(("citations", b["citations"]))
        elif b["type"] == "thinking":
            expected.append(("thinking", (b["thinking"], b["signature"])))
        elif b["type"] == "tool_use":
            expected.append(("tool_use", (b["id"], b["name"], b["input"])))
        elif b["type"] != "text":
            expected.append(("providerBlock", b))
    got: list[tuple[str, Any]] = []
    for block in streamed.content:
        if isinstance(block, agentmsg.TextBlock):
            got.append(("text", block.text))
            continue
        if isinstance(block, agentmsg.ToolUseBlock):
            got.append(("tool_use", (block.id, block.name, block.input)))
            continue
        thinking = one(agentmsg.ThinkingBlock, block)
        meta = thinking.metadata or {}
        if "citations" in meta:
            got.append(("citations", meta["citations"]))
        elif "providerBlock" in meta:
            assert thinking.thinking == "" and meta["provider"] == "anthropic"
            got.append(("providerBlock", meta["providerBlock"]))
        else:
            got.append(("thinking", (thinking.thinking, agentmsg.thinking_signature(thinking))))
    if "incomplete_partial_json" in path.name:
        expected, got = expected[:1], got[:1]
    assert got == expected


ANTHROPIC_RESPONSES = sorted((FIXTURES / "anthropic").glob("message_*.json"))


@pytest.mark.parametrize("path", ANTHROPIC_RESPONSES, ids=ids(ANTHROPIC_RESPONSES))
def test_anthropic_replay_equals_the_sdks_to_param(path: Path) -> None:
    """A reply read by parse_response and formatted for Anthropic again is the assistant turn the official SDK sends
    for the same reply: ``Message.to_param()``, each block dumped as the SDK dumps a model in a request body. Server
    tools' blocks go back as they came, in their place (``encrypted_content`` byte for byte), citations on their text
    block (``encrypted_index`` included); nothing is said. (The SDK also sends ``citations: null`` where the reply had
    it, and a tool call's ``caller``, which agentmsg says as not kept: those are left out of the comparison.)"""
    models = pytest.importorskip("anthropic._models")
    types = pytest.importorskip("anthropic.types")
    dump = pytest.importorskip("anthropic._utils._json").openapi_model_dump
    body = orjson.loads(path.read_bytes())
    message = models.construct_type(type_=types.Message, value=body)  # (how the SDK makes a response's Message)
    theirs = []
    for block in message.to_param()["content"]:
        d = dump(block)
        if d.get("citations", ()) is None:
            del d["citations"]
        if d["type"] == "tool_use":
            d.pop("caller", None)
        if not (d["type"] == "text" and not d["text"].strip()):
            theirs.append(d)
    msg = module("anthropic").parse_response(path.read_bytes())
    request = module("anthropic").format_request([agentmsg.UserMessage("q"), msg, agentmsg.UserMessage("and?")])
    if not theirs:  # (a refusal of no content: nothing to send back)
        assert "empty-message-dropped" in [p.rule for p in request.diagnostics]
        return
    assert [(p.pointer, p.rule) for p in request.diagnostics if p.rule != "tool-use-orphan"] == []
    assert request.body["messages"][1]["content"] == theirs
