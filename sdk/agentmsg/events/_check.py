"""Does each reduced message cover its reply's AGENT_RESULT? (``Reducer.check_results``)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmsg._codec.converter import dict_of
from agentmsg.errors import Problem, short_repr
from agentmsg.message import AssistantMessage


def check_results(done: Sequence[AssistantMessage], results: Sequence[Any]) -> list[Problem]:
    """One :class:`Problem` (rule ``agent-result``) per disagreement between a completed message and
    its AGENT_RESULT: a role other than ASSISTANT (pointer ``/<message>/role``), text or thinking of the
    result missing from the message's, a tool call missing or with another name or input (pointer
    ``/<message>/content``). Replies without AGENT_RESULT are not checked."""
    problems: list[Problem] = []
    for index, (msg, result) in enumerate(zip(done, results, strict=True)):
        if result is None:
            continue
        role = result.get("role")
        if role is not None and role != "ASSISTANT":
            problems.append(
                Problem(
                    f"/{index}/role",
                    "agent-result",
                    f"AGENT_RESULT's role {short_repr(role, 40)} differs from the reduced message's 'ASSISTANT'"
                    " (events carry assistant replies only)",
                )
            )
        content = result.get("content")
        if not isinstance(content, list):
            continue
        ours = dict_of(msg, "msg", copy=False)["content"]  # (read only; not to_json: orjson caches UTF-8 in a str)
        pointer = f"/{index}/content"
        for kind in ("text", "thinking"):
            mine = "".join(b[kind] for b in ours if b["type"] == kind)
            for b in content:
                if not isinstance(b, dict) or b.get("type") != kind:
                    continue
                said = b.get(kind)
                # (a text that is no string is in no text: never str()'d, which is the whole repr of a list or dict)
                if type(said) is not str or said not in mine:
                    problems.append(
                        Problem(
                            pointer, "agent-result", f"AGENT_RESULT's {kind} {short_repr(said)} is not in the stream's"
                        )
                    )
        calls: dict[str, list[tuple[Any, Any]]] = {}
        for b in ours:
            if b["type"] == "tool_use":
                calls.setdefault(b["id"], []).append((b["name"], b["input"]))
        for b in content:
            if not isinstance(b, dict) or b.get("type") != "tool_use":
                continue
            call_id = b.get("id")
            mine_calls = calls.get(call_id) if isinstance(call_id, str) else None
            if mine_calls is None:
                problems.append(
                    Problem(
                        pointer, "agent-result", f"AGENT_RESULT's tool call {short_repr(call_id)} is not in the stream"
                    )
                )
            elif (b.get("name"), b.get("input")) not in mine_calls:
                name, args = mine_calls[-1]
                problems.append(
                    Problem(
                        pointer,
                        "agent-result",
                        f"tool call {short_repr(call_id)}: the stream gives {short_repr(name)} {short_repr(args)},"
                        f" AGENT_RESULT {short_repr(b.get('name'))} {short_repr(b.get('input'))}",
                    )
                )
    return problems
