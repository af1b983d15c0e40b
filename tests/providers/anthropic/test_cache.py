"""Prompt-cache markers (message metadata ``_cache_control``, a tool's ``_cache_control``) in Anthropic requests:
``cache_control`` on the marked block, at most four breakpoints, the lifetimes' order. Every body goes through the
request-schema oracle (``tests.oracles.formatted``) and, where marked ``oracle``, the anthropic SDK's own request
type."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import AssistantMessage, SystemMessage, TextBlock, ThinkingBlock, UserMessage
from agentmsg.providers import get
from tests._support.providers import TOOLS, places, rules, tool_loop
from tests.oracles import formatted, require

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

EPHEMERAL = {"type": "ephemeral"}


def _marked(body: dict[str, Any]) -> list[str]:
    """Where the body's cache_control markers are: tools/N, system/N, messages/N/M."""
    out = [f"tools/{k}" for k, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        out += [f"system/{k}" for k, b in enumerate(system) if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        out += [f"messages/{i}/{j}" for j, b in enumerate(m["content"]) if "cache_control" in b]
    return out


def test_markers_on_system_tools_and_a_block() -> None:
    msgs = [
        SystemMessage("You are helpful.", metadata={"_cache_control": True}),
        UserMessage(
            [TextBlock(text="a long document"), TextBlock(text="the question")],
            metadata={"_cache_control": {"blocks": [0]}},
        ),
    ]
    tools = [dict(TOOLS[0], _cache_control=True)]
    r = formatted("anthropic", msgs, tools=tools)
    b = r.body
    assert b["system"] == [{"type": "text", "text": "You are helpful.", "cache_control": EPHEMERAL}]
    assert b["tools"][0]["cache_control"] == EPHEMERAL and "_cache_control" not in b["tools"][0]
    assert b["messages"][0]["content"] == [
        {"type": "text", "text": "a long document", "cache_control": EPHEMERAL},
        {"type": "text", "text": "the question"},
    ]
    assert r.diagnostics == ()


def test_unmarked_request_is_unchanged() -> None:
    """No marker: the system prompt stays a string and no block carries cache_control."""
    r = formatted("anthropic", tool_loop(), tools=TOOLS)
    assert r.body["system"] == "You are helpful." and _marked(r.body) == []


def test_ttl_and_the_order_of_lifetimes() -> None:
    msgs = [
        SystemMessage("sys", metadata={"_cache_control": {"ttl": "1h"}}),
        UserMessage("q1", metadata={"_cache_control": {"ttl": "5m"}}),
        AssistantMessage("a1", metadata={"_cache_control": {"ttl": "1h"}}),
        UserMessage("q2"),
    ]
    r = formatted("anthropic", msgs)
    assert r.body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert r.body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert rules(r) == [("/2/metadata/_cache_control", "cache-ttl-order")]  # a 1h after a 5m: the API refuses


def test_at_most_four_breakpoints_stable_ones_and_latest_kept() -> None:
    msgs: list[Any] = [SystemMessage("sys", metadata={"_cache_control": True})]
    for k in range(6):
        msgs.append(UserMessage(f"q{k}", metadata={"_cache_control": True}))
        msgs.append(AssistantMessage(f"a{k}"))
    r = formatted("anthropic", msgs, tools=[dict(TOOLS[0], _cache_control=True)])
    # tools, system, then the latest two of the six user turns (messages 9 and 11: turns 8 and 10)
    assert _marked(r.body) == ["tools/0", "system/0", "messages/8/0", "messages/10/0"]
    dropped = [p for p, rule in places(r) if rule == "cache-breakpoint-dropped"]
    assert dropped == [f"/{i}/metadata/_cache_control" for i in (1, 3, 5, 7)]
    assert [p for p, rule in rules(r) if rule == "cache-breakpoint-dropped"] == ["/1/metadata/_cache_control"]


def test_marker_walks_back_past_thinking_and_says_what_it_cannot_place() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                ThinkingBlock(thinking="t", metadata={"signature": "sig", "provider": "anthropic"}),
                TextBlock(text="answer"),
                ThinkingBlock(thinking="t2", metadata={"signature": "sig2", "provider": "anthropic"}),
            ],
            metadata={"_cache_control": True},
        ),
        UserMessage("next", metadata={"_cache_control": {"blocks": [0, 5]}}),
        AssistantMessage(
            [ThinkingBlock(thinking="t", metadata={"signature": "s", "provider": "anthropic"})],
            metadata={"_cache_control": True},
        ),
    ]
    r = formatted("anthropic", msgs)
    assert r.body["messages"][1]["content"][1] == {"type": "text", "text": "answer", "cache_control": EPHEMERAL}
    assert r.body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL
    said = [(p, rule) for p, rule in rules(r) if rule.startswith("cache")]
    assert said == [
        ("/2/metadata/_cache_control/blocks/1", "cache-breakpoint-dropped"),  # no block 5
        ("/3/metadata/_cache_control", "cache-breakpoint-dropped"),  # only thinking: nothing takes it
    ]


def test_marked_tool_call_and_result() -> None:
    msgs = tool_loop()
    msgs[2] = msgs[2].copy(metadata={"_cache_control": True})  # the assistant turn's last block: a call
    msgs[3] = msgs[3].copy(metadata={"_cache_control": True})  # the first tool result (its turn holds both)
    r = formatted("anthropic", msgs, tools=TOOLS)
    assert r.body["messages"][1]["content"][-1]["type"] == "tool_use"
    assert r.body["messages"][1]["content"][-1]["cache_control"] == EPHEMERAL
    assert [b.get("cache_control") for b in r.body["messages"][2]["content"]] == [EPHEMERAL, None]


def test_a_marker_that_is_no_marker_is_said() -> None:
    msg = UserMessage("q")
    msg.metadata["_cache_control"] = {"ttl": "2h"}  # (mutation bypasses validation)
    r = formatted("anthropic", [msg])
    assert rules(r) == [("/0/metadata/_cache_control", "cache-breakpoint-dropped")]
    assert _marked(r.body) == []


def test_tool_marker_refused_when_malformed() -> None:
    from agentmsg import ValidationError

    with pytest.raises(ValidationError) as e:
        formatted("anthropic", [UserMessage("q")], tools=[dict(TOOLS[0], _cache_control="yes")])
    assert e.value.problems[0].pointer == "/tools/0/_cache_control"


@pytest.mark.oracle
def test_marked_body_is_an_anthropic_sdk_request() -> None:
    """The anthropic package's own request type (``MessageCreateParamsNonStreaming``, TypedDicts read by pydantic,
    which leaves out keys the types do not declare) holds every marker: the body comes back unchanged."""
    msgs = tool_loop()
    msgs[0] = msgs[0].copy(metadata={"_cache_control": {"ttl": "1h"}})
    msgs[1] = msgs[1].copy(metadata={"_cache_control": {"ttl": "1h"}})
    msgs[2] = msgs[2].copy(metadata={"_cache_control": True})
    msgs[3] = msgs[3].copy(metadata={"_cache_control": True})
    body = formatted("anthropic", msgs, tools=[dict(TOOLS[0], _cache_control={"ttl": "1h"})]).body
    assert len(_marked(body)) == 4
    assert _sdk_request(body) == body


def _sdk_request(body: dict[str, Any]) -> Any:
    """The body as the anthropic SDK's request type reads it (keys it does not declare left out)."""
    require("anthropic")
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from pydantic import TypeAdapter

    adapter = TypeAdapter(MessageCreateParamsNonStreaming)  # (alive while its lazy iterables are read)
    return _plain(adapter.validate_python(body))


def _plain(value: Any) -> Any:
    """A value pydantic read, with its lazy iterables (``Iterable[...]`` fields) made lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    return [_plain(v) for v in value]


@pytest.mark.oracle
def test_top_level_cache_control_takes_a_slot() -> None:
    """Anthropic's automatic caching (a top-level cache_control parameter, sent as given) marks the last cacheable
    block: one of the four slots, so three markers are placed. (The docs' 2025-09 request schema predates the
    parameter: the anthropic SDK's request type checks the body.)"""
    msgs: list[Any] = [SystemMessage("sys", metadata={"_cache_control": True})]
    for k in range(3):
        msgs += [UserMessage(f"q{k}", metadata={"_cache_control": True}), AssistantMessage(f"a{k}")]
    msgs.append(UserMessage("last"))
    r = get("anthropic").format_request(msgs, cache_control={"type": "ephemeral"})
    assert r.body["cache_control"] == EPHEMERAL
    assert _sdk_request(r.body) == r.body
    assert _marked(r.body) == ["system/0", "messages/2/0", "messages/4/0"]
    assert [p for p, rule in rules(r)] == ["/1/metadata/_cache_control"]
