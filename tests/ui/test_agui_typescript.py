"""agentmsg.ui.agui against AG-UI's own TypeScript schemas: @ag-ui/core's zod ``EventSchemas`` (what
@ag-ui/client checks every event against) accepts each event the encoder writes for every reducer vector, and
refuses what AG-UI forbids (so that the check can fail)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentmsg import AssistantMessage, emit_events
from agentmsg.blocks import TextBlock, ThinkingBlock, ToolUseBlock
from tests._support.events import CASES, events_of, load, writable
from tests._support.jsclient import NODE
from tests.conftest import ROOT
from tests.ui.test_agui import encode

SCRIPT = ROOT / "tests" / "typescript" / "agui_oracle.mjs"
MODULES = ROOT / "tests" / "typescript" / "node_modules" / "@ag-ui"

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(
        NODE is None or not (MODULES / "core").is_dir() or not (MODULES / "client").is_dir(),
        reason="node or tests/typescript/node_modules/@ag-ui not installed: make ts-deps",
    ),
]


def validate(events: list[Any], tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events), encoding="utf-8")
    assert NODE is not None
    r = subprocess.run([NODE, str(SCRIPT), "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_every_event_written_passes_ag_ui_core_schemas(tmp_path: Path) -> None:
    written: list[Any] = []
    for name in CASES:
        events = events_of(load(name))
        if writable(events):
            written += encode(events)[0]
    msg = AssistantMessage(
        [ThinkingBlock(thinking="why"), TextBlock(text="so"), ToolUseBlock(id="c", name="f", input={"a": [1]})]
    )
    written += encode(emit_events(msg, chunk_size=2))[0]
    verdict = validate(written, tmp_path)
    assert verdict == {"count": len(written), "invalid": []}
    assert {e["type"] for e in written} >= {
        "RUN_STARTED", "RUN_FINISHED", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END", "REASONING_END", "REASONING_ENCRYPTED_VALUE", "TOOL_CALL_START", "TOOL_CALL_ARGS",
        "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM",
    }  # fmt: skip


def test_the_schemas_refuse_what_ag_ui_forbids(tmp_path: Path) -> None:
    bad = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "name": None},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "timestamp": 1.5},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"totalTokens": 2**63}]},
        {"type": "TOOL_CALL_START", "toolCallId": "c"},
    ]
    assert [i[0] for i in validate(bad, tmp_path)["invalid"]] == [0, 1, 2, 3]
