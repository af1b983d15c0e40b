"""AG-UI's own client reading agentmsg's endpoint: @ag-ui/client's HttpAgent (Node) runs against
``agentmsg.web.EventEndpoint`` under uvicorn on loopback, as a CopilotKit front end would (POST of a
RunAgentInput, its SSE reader, its protocol verifier, its message builder): every reducer vector's stream is
accepted, and a reply renders as the messages AG-UI builds."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from agentmsg import AssistantMessage, emit_events
from agentmsg.blocks import TextBlock, ThinkingBlock, ToolUseBlock
from agentmsg.web import EventEndpoint
from tests._support.events import CASES, events_of, load, writable
from tests._support.jsclient import NODE
from tests.conftest import ROOT
from tests.web._http import serving

SCRIPT = ROOT / "tests" / "typescript" / "agui_oracle.mjs"
MODULES = ROOT / "tests" / "typescript" / "node_modules" / "@ag-ui" / "client"
AT = "2026-01-01T00:00:00Z"

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(
        NODE is None or not MODULES.is_dir(),
        reason="node or tests/typescript/node_modules/@ag-ui not installed: make ts-deps",
    ),
]


def run_agents(endpoints: list[EventEndpoint], query: str = "?protocol=ag-ui") -> list[dict[str, Any]]:
    """HttpAgent.runAgent against each endpoint (mounted at /run/<n>): what each run saw and built."""
    routes = [Route(f"/run/{n}", e, methods=["GET", "POST"]) for n, e in enumerate(endpoints)]
    with serving(Starlette(routes=routes)) as port:
        urls = [f"http://127.0.0.1:{port}/run/{n}{query}" for n in range(len(endpoints))]
        assert NODE is not None
        r = subprocess.run([NODE, str(SCRIPT), "run", *urls], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def ev(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{n}", "createdAt": AT, **fields}


REPLY = [
    ev("AGENT_START", 0, replyId="r", name="Friday"),
    ev("MODEL_CALL_START", 1, replyId="m", modelName="gpt"),
    ev("THINKING_BLOCK_START", 2, replyId="m", blockId="thinking"),
    ev("THINKING_BLOCK_DELTA", 3, replyId="m", blockId="thinking", delta="weather?"),
    ev("THINKING_BLOCK_DELTA", 4, replyId="m", blockId="thinking", delta="", signature="sig"),
    ev("THINKING_BLOCK_END", 5, replyId="m", blockId="thinking"),
    ev("TEXT_BLOCK_START", 6, replyId="m", blockId="text"),
    ev("TEXT_BLOCK_DELTA", 7, replyId="m", blockId="text", delta="Let me "),
    ev("TEXT_BLOCK_DELTA", 8, replyId="m", blockId="text", delta="check."),
    ev("TEXT_BLOCK_END", 9, replyId="m", blockId="text"),
    ev("TOOL_CALL_START", 10, replyId="m", toolCallId="call_1", toolCallName="get_weather"),
    ev("TOOL_CALL_DELTA", 11, replyId="m", toolCallId="call_1", delta='{"city":'),
    ev("TOOL_CALL_DELTA", 12, replyId="m", toolCallId="call_1", delta='"Paris"}'),
    ev("TOOL_CALL_END", 13, replyId="m", toolCallId="call_1"),
    ev("MODEL_CALL_END", 14, replyId="m", usage={"inputTokens": 10, "outputTokens": 4}),
    ev("TOOL_RESULT_START", 15, replyId="r", toolCallId="call_1", toolCallName="get_weather"),
    ev("TOOL_RESULT_TEXT_DELTA", 16, replyId="r", toolCallId="call_1", delta="18C"),
    ev("TOOL_RESULT_END", 17, replyId="r", toolCallId="call_1", state="success"),
    ev("AGENT_END", 18, replyId="r"),
]


def test_a_reply_renders_as_the_messages_ag_ui_builds() -> None:
    (run,) = run_agents([EventEndpoint(REPLY)])
    assert run["errors"] == []
    assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED"
    reasoning, assistant, tool = run["messages"]
    assert (reasoning["role"], reasoning["content"], reasoning["encryptedValue"]) == ("reasoning", "weather?", "sig")
    assert (assistant["role"], assistant["content"]) == ("assistant", "Let me check.")
    (call,) = assistant["toolCalls"]
    assert call["id"] == "call_1" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert (tool["role"], tool["toolCallId"], tool["content"]) == ("tool", "call_1", "18C")


def test_every_reducer_vector_is_a_stream_the_client_accepts() -> None:
    """AG-UI's verifier refuses events out of order (a message not started, a run finished with a message open,
    events after RUN_FINISHED, a first event other than RUN_STARTED): none of the vectors' streams, however
    broken as AgentEvents, gives one."""
    names = [n for n in CASES if writable(events_of(load(n)))]
    runs = run_agents([EventEndpoint(events_of(load(n))) for n in names])
    for name, run in zip(names, runs, strict=True):
        assert run["errors"] == [], name
        assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED", name


def test_the_run_result_is_the_message_and_a_failing_source_is_a_run_error() -> None:
    msg = AssistantMessage(
        [ThinkingBlock(thinking="hmm"), TextBlock(text="ok"), ToolUseBlock(id="c", name="f", input={"x": 1})]
    )

    def failing() -> Any:
        yield REPLY[0]
        yield REPLY[6]
        raise RuntimeError("model went away")

    whole, failed = run_agents([EventEndpoint(emit_events(msg)), EventEndpoint(failing())])
    assert whole["errors"] == [] and whole["result"] == msg.to_dict()
    assert failed["errors"] == ["RuntimeError: model went away"]
    assert failed["types"] == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]


def test_an_endpoint_whose_default_is_ag_ui_needs_no_query() -> None:
    (run,) = run_agents([EventEndpoint(REPLY, protocols=["ag-ui", "agentscope"])], query="")
    assert run["errors"] == [] and run["messages"][1]["content"] == "Let me check."


def test_java_restarted_tool_calls_reach_the_client_whole() -> None:
    """AgentScope Java ends an open call when a chunk of another arrives and goes on with it later in the same
    model call (the reducer continues it): the AG-UI client gets the call started again, its arguments whole; a
    call id given again in a later model call (a new call to the reducer) gets an AG-UI id of its own."""
    events = events_of(load("java-interleaved-tool-calls"))
    (run,) = run_agents([EventEndpoint(events)])
    assert run["errors"] == []
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in run["messages"][1]["toolCalls"]]
    assert calls[:2] == [("call_a", "get_weather", '{"city":"Paris"}'), ("call_b", "get_time", '{"tz":"CET"}')]
    assert calls[2][0] != "call_a" and calls[2][0].startswith("call_a") and calls[2][1:] == ("search", '{"q":1}')
