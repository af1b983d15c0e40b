"""The anthropic reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds
from the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmsg
from tests._support.providers import STREAMS, comparable, ids, module, reduce_checked, sse_payloads

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
        assert call.input == {} and "argumentsError" in call.metadata
        assert from_json(call.content.encode(), partial_mode=True) == whole_body["content"][1]["input"]
        ours["content"] = ours["content"][:1]
        theirs["content"] = theirs["content"][:1]
    if "usage" not in whole_body or not whole_body["usage"]:
        ours["usage"] = theirs["usage"] = {}
    assert ours == theirs
    # the snapshot's blocks, field by field
    kinds = [b["type"] for b in whole_body["content"] if not (b["type"] == "text" and not b["text"])]
    assert [b.type for b in streamed.content] == [{"thinking": "thinking"}.get(k, k) for k in kinds]
    for ours_b, b in zip(
        streamed.content, [b for b in whole_body["content"] if b["type"] != "text" or b["text"]], strict=True
    ):
        if b["type"] == "thinking":
            assert ours_b.thinking == b["thinking"] and agentmsg.thinking_signature(ours_b) == b["signature"]
        elif b["type"] == "text":
            assert ours_b.text == b["text"]
