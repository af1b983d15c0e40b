"""A change a formatter makes at many places is said once: diagnostics grow with the kinds of change a conversation
needs, not with its length (``providers/_request/context.py``, ``grouped``). The one diagnostic points at the
first place, its text counts and lists some, and its ``pointers`` hold every one, so a caller that reads them still
finds each message changed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    UserMessage,
    ValidationError,
)
from agentmsg.errors import MESSAGE_MAX
from agentmsg.providers import NAMES, get
from tests._support.providers import TOOLS, agent_conversation

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


@pytest.mark.parametrize("multi_agent", [False, True], ids=["chat", "multi-agent"])
@pytest.mark.parametrize("provider", NAMES)
def test_a_change_at_every_turn_is_said_once(provider: str, multi_agent: bool) -> None:
    """1,000 messages say no more diagnostics than 40 do (openai said thinking-dropped 250 times, anthropic in
    multi-agent mode turns-merged 250 times): no rule and text twice, each place in a diagnostic's pointers."""
    kwargs: dict[str, Any] = {"model": "m", "tools": TOOLS}
    if multi_agent:
        kwargs.update(multi_agent=True, agent_name="Friday")
    small = get(provider).format_request(agent_conversation(10), **kwargs)
    big = get(provider).format_request(agent_conversation(250), **kwargs)
    # Every case changes this conversation (so the checks below have diagnostics to check), but two: Anthropic's and
    # Gemini's multi-agent modes keep the names (in the history's text) and merge no turns, and say nothing at any
    # length.
    assert bool(small.diagnostics) is not (multi_agent and provider in ("anthropic", "gemini")), small.diagnostics
    assert [(d.pointer, d.rule) for d in big.diagnostics] == [(d.pointer, d.rule) for d in small.diagnostics]
    said = Counter((d.rule, d.message) for d in big.diagnostics)
    assert all(n == 1 for n in said.values()), said
    for d in big.diagnostics:
        assert d.pointers[0] == d.pointer and len(set(d.pointers)) == d.count
        assert len(d.message) <= MESSAGE_MAX and "characters left out" not in d.message, d.message
        if d.count > 1:
            assert f" {d.count} " in d.message, d.message  # (name-dropped, unknown-key-dropped: in their own words)
    # a change at every turn: each turn's place in the pointers, none lost
    assert [d.count for d in big.diagnostics] == [25 * d.count for d in small.diagnostics]
    small_places = {(q, d.rule) for d in small.diagnostics for q in d.pointers}
    assert small_places <= {(q, d.rule) for d in big.diagnostics for q in d.pointers}


def test_reasoning_dropped_at_every_turn_is_one_diagnostic_with_every_place() -> None:
    r = get("openai").format_request(agent_conversation(250), model="m", tools=TOOLS)
    dropped = [d for d in r.diagnostics if d.rule == "thinking-dropped"]
    assert len(dropped) == 1
    d = dropped[0]
    assert d.pointer == "/1/content/0" and d.count == 250
    assert d.pointers == tuple(f"/{4 * t + 1}/content/0" for t in range(250))
    assert d.message.startswith("openai takes no reasoning in requests (said once for 250 places: /1/content/0,")
    assert ", /37/content/0, ...; the first is pointed at)" in d.message  # the first 10 listed
    assert r.diagnostics_dicts()[0]["pointers"] == list(d.pointers)


def test_media_a_provider_cannot_take_is_one_diagnostic_per_kind() -> None:
    """Each image was said with its placeholder's text (its URL): 1,000 messages to DeepSeek said 125."""
    r = get("deepseek").format_request(agent_conversation(250), model="m", tools=TOOLS)
    media = [d for d in r.diagnostics if d.rule == "media-unsupported"]
    assert [(d.pointer, d.count) for d in media] == [("/0/content/1", 125)]
    assert media[0].pointers == tuple(f"/{8 * t}/content/1" for t in range(125))
    assert media[0].message.startswith(
        "deepseek takes no media (text only); sent as a text placeholder (said once for 125 places:"
    )


def test_merged_turns_are_one_diagnostic_listing_the_messages() -> None:
    msgs = [UserMessage(f"q{i}") for i in range(30)] + [AssistantMessage("a")]
    r = get("anthropic").format_request(msgs, model="m")
    assert [(d.pointer, d.rule, d.count) for d in r.diagnostics] == [("/1", "turns-merged", 29)]
    d = r.diagnostics[0]
    assert d.pointers == tuple(f"/{i}" for i in range(1, 30))
    assert d.message == (
        "merged into the user turn before it (said once for 29 places: messages 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,"
        " 12, 13, 14, 15, 16, 17, 18, 19, 20, ...; the first is pointed at)"
    )


def test_strict_lists_each_kind_of_change_once() -> None:
    """A strict error's problems are the kinds of change, each with its places: its first 20 were all one rule."""
    with pytest.raises(ValidationError) as caught:
        get("dashscope").format_request(agent_conversation(250), model="m", tools=TOOLS, strict=True)
    problems = caught.value.problems
    assert [(p.rule, p.count) for p in problems] == [
        ("signature-dropped", 250),
        ("tool-result-state-dropped", 250),
    ]
    assert "2 problems" in str(caught.value)


def test_different_texts_are_said_apart() -> None:
    """One rule, two texts (reasoning from two providers): two diagnostics, each with its places."""
    msgs: list[Any] = []
    for t in range(4):
        origin = "gemini" if t % 2 else "anthropic"
        msgs += [
            UserMessage(f"q{t}"),
            AssistantMessage(
                [
                    ThinkingBlock(thinking="hm", metadata={"provider": origin, "signature": "c2ln"}),
                    ToolUseBlock(id=f"c{t}", name="get_weather", input={}),
                ]
            ),
            ToolResultMessage([ToolResultBlock(id=f"c{t}", name="get_weather", output="ok", state="success")]),
        ]
    r = get("openai").format_request(msgs, model="m", tools=TOOLS, options={"reasoning": "drop"})
    assert [(d.rule, d.pointers) for d in r.diagnostics] == [
        ("thinking-dropped", ("/1/content/0", "/7/content/0")),
        ("thinking-dropped", ("/4/content/0", "/10/content/0")),
    ]


def test_repeats_in_runs_and_apart_group_alike() -> None:
    """grouped takes a run of one rule and text without making its key (the usual repeat, a change at every turn):
    a run broken by another diagnostic, and resumed, is the same group, its places in order; an equal text of another
    object (a tuple made again) is the same text."""
    from agentmsg.providers._request.context import as_problem, grouped

    said = ("{} takes no reasoning in requests", "openai")
    again = ("{} takes no reasoning in requests", "openai")
    diagnostics = [
        ((1, 0), "thinking-dropped", said),
        ((5, 0), "thinking-dropped", said),
        ("/6/name", "name-sanitized", "name 'a b' sent as 'a_b'"),
        ((9, 0), "thinking-dropped", again),
        ("/10/name", "name-sanitized", "name 'a b' sent as 'a_b'"),
        ("/11/name", "name-sanitized", "name 'a b' sent as 'a_b'"),
        ((13, 0), "thinking-dropped", said),
        ("/14", "turns-merged", "merged"),
    ]
    problems = [as_problem(d) for d in grouped(diagnostics)]
    assert [(p.pointer, p.rule, p.pointers) for p in problems] == [
        ("/1/content/0", "thinking-dropped", ("/1/content/0", "/5/content/0", "/9/content/0", "/13/content/0")),
        ("/6/name", "name-sanitized", ("/6/name", "/10/name", "/11/name")),
        ("/14", "turns-merged", ("/14",)),
    ]
    assert problems[0].message.startswith("openai takes no reasoning in requests (said once for 4 places:")
