"""Properties of agentmsg.context.trim on random conversations (tests/_support/conversations.py: tool-heavy, with
signed thinking, images) and random budgets, for every provider in the registry: the result fits the budget by the
same counter (count_tokens, the default, or the tests' own), formats for its provider without a pairing diagnostic and with a user turn first where the provider
asks for one, keeps the Anthropic signature chain of the current turn whole, and is a subsequence of the input plus
at most the summary."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg import Msg, MsgRole, ThinkingBlock, ToolUseBlock
from agentmsg.context import TrimBudgetError, Trimmed, count_tokens, trim
from agentmsg.providers import NAMES, get
from tests._support.budget import examples
from tests._support.conversations import conversations
from tests.context.test_trim import Counter

pytestmark = pytest.mark.fuzz

#: the formatter diagnostics that say a call and its result were parted
PAIRING = {"tool-use-orphan", "tool-result-orphan", "tool-use-repaired", "tool-result-dropped"}
#: the formatter diagnostics that say a message was moved or merged to make the provider's order
ORDERING = {"thinking-moved", "system-hoisted", "system-as-user", "turns-merged", "hint-placed"}
#: the first turn of the request body, where a provider wants a user turn
FIRST_TURN = {"anthropic": ("messages", "user"), "gemini": ("contents", "user")}

cases = st.tuples(
    st.sampled_from(NAMES),
    st.sampled_from([None, "anthropic", "gemini", "openai"]),
    st.booleans(),
).flatmap(
    lambda t: st.tuples(
        st.just(t[0]),
        conversations(thinking=t[1], max_turns=8 if t[2] else 3, max_steps=6 if t[2] else 2),
        st.floats(0.0, 1.2),
        st.sampled_from([None, "short", "long"]),
        st.booleans(),
    )
)


def _subsequence(out: Sequence[Msg], messages: Sequence[Msg], summary: Msg | None) -> list[int]:
    """The indexes of the input that ``out`` holds, in order (the summary left out); fails when it is not a
    subsequence."""
    at = 0
    found = []
    for m in out:
        if m is summary:
            continue
        while at < len(messages) and messages[at] is not m:
            at += 1
        assert at < len(messages), "the result is not a subsequence of the input"
        found.append(at)
        at += 1
    return found


def _index(pointer: str) -> int:
    """The message index of a diagnostic's pointer (``/3/content/1`` -> 3)."""
    return int(pointer.split("/")[1])


def _current_turn_chain(messages: Sequence[Msg]) -> list[int]:
    """The indexes of the current turn (after the last user message) when it holds Anthropic's thinking (or thinking
    of no stated origin) and a call."""
    last = max((i for i, m in enumerate(messages) if m.role is MsgRole.USER), default=-1)
    turn = list(range(last + 1, len(messages)))
    blocks = [b for i in turn for b in messages[i].content]
    own = [
        b for b in blocks if isinstance(b, ThinkingBlock) and (b.metadata or {}).get("provider") in (None, "anthropic")
    ]
    if own and any(isinstance(b, ToolUseBlock) for b in blocks):
        return turn
    return []


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_a_trimmed_conversation_fits_formats_and_is_a_subsequence(case: Any) -> None:
    provider, messages, share, summary_size, real = case
    # the real count (count_tokens for the provider, the default) or the tests' own
    counter: Any = functools.partial(count_tokens, provider=provider) if real else Counter()
    whole = counter(messages).total
    budget = int(whole * share)
    summarize = None if summary_size is None else (lambda removed: "s " * (8 if summary_size == "short" else 400))
    try:
        out: Trimmed = trim(messages, budget, provider=provider, counter=None if real else counter, summarize=summarize)
    except TrimBudgetError as exc:
        assert exc.result is not None and exc.result.tokens > budget
        out = exc.result
    else:
        assert out.tokens <= budget
    assert counter(list(out.messages)).total == out.tokens  # the same counter says the same
    kept = _subsequence(out.messages, messages, out.summary)
    assert sorted(set(range(len(messages))) - set(kept)) == list(out.removed)
    assert len(out.messages) == len(kept) + (out.summary is not None)
    assert all(messages[i] in out.messages for i, m in enumerate(messages) if m.role is MsgRole.SYSTEM)
    inputs = iter(kept)
    source = [None if m is out.summary else next(inputs) for m in out.messages]  # each message's index in the input
    for name in NAMES:  # the pairing holds for every provider, and the trim adds no ordering rewrite
        paired = get(name).format_request(list(out.messages))
        assert not {p.rule for p in paired.diagnostics} & PAIRING, (name, paired.diagnostics)
        # (every place of a diagnostic said once for several)
        before = {(_index(q), p.rule) for p in get(name).format_request(messages).diagnostics for q in p.pointers}
        for p in paired.diagnostics:
            if p.rule in ORDERING:  # the same message moved or merged in the input's request too
                assert all((source[_index(q)], p.rule) in before for q in p.pointers), (name, p)
    request = get(provider).format_request(list(out.messages))
    if provider in FIRST_TURN:
        key, role = FIRST_TURN[provider]
        turns = request.body[key]
        assert not turns or turns[0]["role"] == role, turns[0]
    if provider == "anthropic":
        chain = _current_turn_chain(messages)
        assert not chain or set(chain) <= set(kept) or set(chain).isdisjoint(kept)
    for d in out.diagnostics:
        assert d.rule.startswith("trim-")
