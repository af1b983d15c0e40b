"""The prompt-cache marker's common handling (``providers/_request/run.py``): a provider whose formatter says nothing
of the markers (one added later: its table's common row, ``cache-automatic``) still says them, once."""

from __future__ import annotations

from typing import Any

import attrs

from agentmsg import UserMessage
from agentmsg.providers._request.run import Draft, run_format
from agentmsg.providers.openai import SPECS


def _build(ctx: Any, msgs: Any, tools: Any, choice: Any) -> Draft:
    return Draft(body={"messages": [m.text_content for m in msgs]}, path="/x", model="m")


def test_a_formatter_that_ignores_markers_has_them_said_once() -> None:
    spec = attrs.evolve(SPECS[0], name="newcomer", title="Newcomer", fields=None)
    msgs = [UserMessage("a", metadata={"_cache_control": True}), UserMessage("b", metadata={"_cache_control": True})]
    tools = [{"name": "f", "parameters": {"type": "object"}, "_cache_control": True}]
    r = run_format(spec, msgs, _build, tools=tools, tool_choice=None, stream=False, strict=True, options=None)
    assert [(p.pointer, p.rule) for p in r.diagnostics] == [("/tools/0/_cache_control", "cache-automatic")]
    assert "Newcomer caches prompt prefixes on its own" in r.diagnostics[0].message
    r = run_format(
        spec, [UserMessage("a")], _build, tools=None, tool_choice=None, stream=False, strict=False, options=None
    )
    assert r.diagnostics == ()
