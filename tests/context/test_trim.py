"""agentmsg.context.trim: one test per rule (units, openers, the signature chain, assistant-first, the summary, an
impossible budget, a counter that is not additive), with a counter of their own (each message's JSON length) so
that the numbers are known; tests/context/test_trim_properties.py checks the rules on random conversations."""

from __future__ import annotations

import asyncio
import importlib
import itertools
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

import agentmsg
from agentmsg import Msg, MsgRole, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.context import TRIM_RULES, TrimBudgetError, Trimmed, atrim, count_tokens, trim
from agentmsg.providers.base import Entry
from tests._support.providers import module

OVERHEAD = 3


@attrs.frozen
class Count:
    total: int
    messages: tuple[int, ...]


class Counter:
    """4 tokens a message and one per 4 bytes of its text (a fixed, known count), with a fixed overhead; counts
    how often it is called and on how many messages."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, messages: Sequence[Msg]) -> Count:
        self.calls.append(len(messages))
        per = tuple(tokens(m) for m in messages)
        return Count(sum(per) + OVERHEAD, per)


def tokens(m: Msg) -> int:
    n = 4
    for b in m.content:
        if isinstance(b, TextBlock):
            n += len(b.text) // 4
        elif isinstance(b, ThinkingBlock):
            n += len(b.thinking) // 4
        elif isinstance(b, ToolResultBlock):
            n += sum(len(o.text) // 4 for o in b.output if isinstance(o, TextBlock))
    return n


def user(text: str) -> Msg:
    return Msg(MsgRole.USER, text)


def assistant(*blocks: Any) -> Msg:
    return Msg(MsgRole.ASSISTANT, list(blocks) or "ok")


def call(cid: str) -> ToolUseBlock:
    return ToolUseBlock(id=cid, name="search", input={"q": cid})


def result(*cids: str) -> Msg:
    return Msg(
        MsgRole.TOOL, [ToolResultBlock(id=c, name="search", output=[TextBlock(text="found " * 8)]) for c in cids]
    )


def thinking() -> ThinkingBlock:
    return ThinkingBlock(thinking="let me think " * 4, metadata={"signature": "sig", "provider": "anthropic"})


SYSTEM = Msg(MsgRole.SYSTEM, "You are terse.")


def total(messages: Sequence[Msg]) -> int:
    return sum(map(tokens, messages)) + OVERHEAD


def run(messages: list[Msg], budget: int, provider: str = "openai", **kw: Any) -> Trimmed:
    return trim(messages, budget, provider=provider, counter=Counter(), **kw)


def kept_indexes(messages: list[Msg], out: Trimmed) -> list[int]:
    ids = {id(m) for m in out.messages}
    return [i for i, m in enumerate(messages) if id(m) in ids]


def test_a_conversation_within_the_budget_is_given_back_whole() -> None:
    msgs = [SYSTEM, user("hi " * 10), assistant(TextBlock(text="hello"))]
    out = run(msgs, total(msgs))
    assert out.messages == tuple(msgs) and out.removed == () and out.diagnostics == () and out.summary is None
    assert out.tokens == total(msgs) and out.fits


def test_oldest_turns_go_first_each_removal_reported_with_its_pointer() -> None:
    msgs = [SYSTEM, user("one " * 20), assistant(TextBlock(text="a " * 20)), user("two"), assistant(), user("three")]
    out = run(msgs, total(msgs) - 1)
    assert out.removed == (1, 2)
    assert out.messages == (SYSTEM, msgs[3], msgs[4], msgs[5])
    [d] = out.diagnostics
    assert (d.pointer, d.rule) == ("/1", "trim-removed") and "/2" in d.message
    assert out.tokens == total(out.messages) <= out.budget
    assert d.rule in TRIM_RULES


def test_a_question_goes_with_its_last_answer_and_an_answer_never_stays_without_its_question() -> None:
    # the first turn's answers go one by one; the question goes with the last of them
    msgs = [
        SYSTEM,
        user("q1"),
        assistant(call("a")),
        result("a"),
        assistant(call("b")),
        result("b"),
        assistant(TextBlock(text="done " * 10)),
        user("q2"),
    ]
    step = tokens(msgs[2]) + tokens(msgs[3])
    out = run(msgs, total(msgs) - step)  # one unit (the first call and its result) is enough
    assert out.removed == (2, 3)
    assert kept_indexes(msgs, out) == [0, 1, 4, 5, 6, 7]
    out = run(msgs, total(msgs) - sum(map(tokens, msgs[2:7])))  # every answer goes: the question with them
    assert out.removed == (1, 2, 3, 4, 5, 6)


def test_a_tool_call_and_all_its_results_go_together() -> None:
    msgs = [
        SYSTEM,
        user("q1"),
        assistant(call("a"), call("b")),
        result("a"),
        Msg(MsgRole.SYSTEM, "a reminder"),  # a system message inside the unit is kept
        result("b"),
        assistant(TextBlock(text="both found")),
        user("q2"),
    ]
    out = run(msgs, total(msgs) - 1)
    assert set(out.removed) >= {2, 3, 5} or not {2, 3, 5} & set(out.removed)
    assert 4 not in out.removed and 0 not in out.removed
    assert out.removed == (2, 3, 5)  # the smallest unit that makes room: the calls and both results


def test_a_call_id_used_again_pairs_with_its_latest_call() -> None:
    """Some providers number their calls per turn (call_0 in every turn): a result answers the latest call of its id,
    so each turn's call is its own unit, not one unit from the first call to the last result."""
    msgs = [SYSTEM]
    for i in range(4):
        msgs += [user(f"q{i}"), assistant(call("call_0")), result("call_0"), assistant()]
    out = run(msgs, total(msgs) - 1)
    assert out.removed == (2, 3)


def test_system_messages_are_never_removed() -> None:
    msgs = [SYSTEM, user("x " * 40), Msg(MsgRole.SYSTEM, "later"), assistant(), user("last")]
    out = run(msgs, total([SYSTEM, msgs[2], msgs[4]]))
    assert out.messages == (SYSTEM, msgs[2], msgs[4])


def test_the_anthropic_current_turn_with_signed_thinking_before_a_call_stays_whole() -> None:
    msgs = [
        SYSTEM,
        user("old"),
        assistant(TextBlock(text="old answer " * 10)),
        user("now"),
        assistant(thinking(), call("a")),
        result("a"),
        assistant(call("b")),
        result("b"),
        assistant(TextBlock(text="answer")),
    ]
    just_enough = total([SYSTEM, *msgs[3:]])
    out = run(msgs, just_enough, "anthropic")
    assert out.removed == (1, 2)
    with pytest.raises(TrimBudgetError) as caught:  # the chain cannot be cut: the whole current turn or nothing
        run(msgs, just_enough - 1, "anthropic")
    assert caught.value.problems[0].rule == "trim-over-budget"
    assert caught.value.result is not None and caught.value.result.messages == (SYSTEM, *msgs[3:])
    # OpenAI checks no chain: the current turn's oldest step goes, its question stays
    out = run(msgs, just_enough - 1, "openai")
    assert out.removed == (1, 2, 4, 5)
    assert kept_indexes(msgs, out) == [0, 3, 6, 7, 8]


def test_another_providers_thinking_makes_no_chain() -> None:
    foreign = ThinkingBlock(thinking="x " * 20, metadata={"provider": "openai", "signature": "s"})
    msgs = [SYSTEM, user("now"), assistant(foreign, call("a")), result("a"), assistant(TextBlock(text="answer"))]
    out = run(msgs, total([SYSTEM, msgs[1], msgs[4]]), "anthropic")
    assert out.removed == (2, 3)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_of_assistant_messages_is_not_cut_where_its_thinking_would_move(provider: str) -> None:
    # Anthropic sends 2-5 as one turn that starts with thinking, so 4's thinking stays in its place; kept from 3 on,
    # the turn would start with text and 4's thinking would be moved to its start (a rewrite the untrimmed
    # conversation did not need): 3 goes with 2, and the kept turn starts with 4's thinking
    msgs = [
        SYSTEM,
        user("q"),
        assistant(thinking(), TextBlock(text="first " * 10)),
        assistant(TextBlock(text="second")),
        assistant(thinking(), TextBlock(text="third")),
        assistant(TextBlock(text="fourth")),
    ]
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider)
    assert out.removed == (2, 3)
    assert kept_indexes(msgs, out) == [0, 1, 4, 5]
    from agentmsg.providers import get

    rules = {p.rule for p in get("anthropic").format_request(list(out.messages)).diagnostics}
    assert "thinking-moved" not in rules
    # a message that starts with thinking, or after which the run holds none, can be the first kept
    out = run(msgs, total(msgs) - sum(map(tokens, msgs[2:4])), provider)
    assert out.removed == (2, 3)
    out = run(msgs, total(msgs) - sum(map(tokens, msgs[2:5])), provider)
    assert out.removed == (2, 3, 4)


@pytest.mark.parametrize("provider", ["anthropic", "deepseek"])  # (each trimmed result is formatted for every name)
def test_reasoning_a_formatter_leaves_out_or_sends_only_in_tool_turns_rewrites_no_trimmed_turn(provider: str) -> None:
    """For every provider the trimmed conversation formats for each as the untrimmed one. Two ways it did not: a
    message that starts with another model's reasoning (which Anthropic and Gemini leave out) was taken to start the
    turn with thinking and kept first, the turn's later thinking moved to its start (``thinking-moved``); and a turn's
    call cut before its answer holding reasoning left a turn that called no tool, whose reasoning DeepSeek no longer
    sends (``thinking-pruned``), also with a message between them or the reasoning before the call. Each budget from
    the whole count down is tried."""
    from agentmsg.providers import NAMES, get

    own = {"provider": "anthropic", "signature": "c2lnbmF0dXJl"}
    moved = [
        user("first question"),
        assistant(ThinkingBlock(thinking="plan " * 40, metadata=own), TextBlock(text="let me look")),
        assistant(
            ThinkingBlock(thinking="another model's", metadata={"provider": "openai"}), TextBlock(text="calling")
        ),
        assistant(ThinkingBlock(thinking="more", metadata=own), call("c1")),
        result("c1"),
        user("second question"),
        assistant(TextBlock(text="answer two")),
    ]
    pruned = [
        user("first question"),
        assistant(ThinkingBlock(thinking="I should search " * 20), call("c1")),
        result("c1"),
        assistant(ThinkingBlock(thinking="now I can answer"), TextBlock(text="answer one")),
        user("second question"),
        assistant(TextBlock(text="answer two")),
    ]

    def rules(messages: Sequence[Msg]) -> dict[str, set[str]]:
        return {name: {p.rule for p in get(name).format_request(list(messages)).diagnostics} for name in NAMES}

    between = [*pruned[:3], assistant(TextBlock(text="Found it.")), *pruned[3:]]  # (a message between them)
    before = [  # (reasoning before the call, in its own message)
        user("first question"),
        assistant(ThinkingBlock(thinking="I should look it up " * 10)),
        assistant(TextBlock(text="looking"), call("c1")),
        result("c1"),
        assistant(ThinkingBlock(thinking="found"), TextBlock(text="answer one")),
        user("second question"),
        assistant(TextBlock(text="answer two")),
    ]
    for msgs in (moved, pruned, between, before):
        untrimmed = rules(msgs)
        for budget in range(count_tokens(msgs, provider=provider).total - 1, 0, -6):
            try:
                out = trim(msgs, budget, provider=provider)
            except TrimBudgetError:
                break
            for name, said in rules(out.messages).items():
                assert said <= untrimmed[name], (budget, out.removed, name, said - untrimmed[name])


def _every_trim(msgs: Sequence[Msg], provider: str) -> list[Trimmed]:
    """``trim`` of ``msgs`` for ``provider`` at every other budget from the whole count down, until one cannot be met."""
    out: list[Trimmed] = []
    for budget in range(count_tokens(msgs, provider=provider).total - 1, 0, -2):
        try:
            out.append(trim(msgs, budget, provider=provider))
        except TrimBudgetError:
            break
    return out


def test_a_turns_opener_with_reasoning_the_provider_leaves_out_after_it_still_opens_the_turn() -> None:
    """A message of unsigned reasoning alone after a question sends nothing to Anthropic: it went with the question (a
    unit that sends nothing goes with the one before it). DeepSeek sends that reasoning because the turn called a
    tool, so it is glued to the call, and the question was glued with them: that unit opened no turn, the first turn
    ran on to the second one's answer, and its answers went without its question, which was then kept before the
    second question (``turns-merged``, which the untrimmed conversation does not say). Each budget from the whole
    count down is tried; the kept conversation formats for Anthropic as the untrimmed one."""
    from agentmsg.providers import get

    msgs = [
        user("first question " * 5),
        assistant(call("c1")),
        result("c1"),
        assistant(TextBlock(text="answer one")),
        user("second question " * 5),
        assistant(ThinkingBlock(thinking="unsigned " * 20)),
        assistant(call("c2")),
        result("c2"),
        assistant(TextBlock(text="answer two " * 3)),
        user("third question"),
        assistant(TextBlock(text="answer three")),
    ]
    untrimmed = _format_rules(msgs)
    assert "turns-merged" not in untrimmed
    trims = _every_trim(msgs, "anthropic")
    for out in trims:
        said = {p.rule for p in get("anthropic").format_request(list(out.messages)).diagnostics}
        assert said <= untrimmed, (out.removed, said - untrimmed)
        if 3 in out.removed:  # the first turn's last answer went: its question with it
            assert 0 in out.removed, out.removed
    assert len(trims) > 5


def test_an_answer_another_provider_sends_nothing_of_goes_with_the_unit_before_it() -> None:
    """An answer of reasoning alone that Anthropic leaves out (unsigned) sends something to Gemini, which sends it as a
    thought: trimmed for Gemini, the answer before it went and it was kept alone after the question, and Anthropic
    then sent the question and the next one as one turn (``turns-merged``, which the untrimmed conversation does
    not say). For every provider it now goes with the unit before it. Each budget from the whole count down is tried,
    each trimmed conversation formatted for every provider."""
    from agentmsg.providers import NAMES, get

    own = {"provider": "anthropic", "signature": "c2lnbmF0dXJl"}
    msgs = [
        user("first question " * 5),
        assistant(ThinkingBlock(thinking="unsigned " * 10), ThinkingBlock(thinking="signed " * 10, metadata=own)),
        assistant(ThinkingBlock(thinking="more unsigned " * 10)),
        user("second question " * 5),
        assistant(TextBlock(text="answer two " * 3), call("c1")),
        result("c1"),
        assistant(TextBlock(text="answer three")),
    ]

    def rules(messages: Sequence[Msg]) -> dict[str, set[str]]:
        return {name: {p.rule for p in get(name).format_request(list(messages)).diagnostics} for name in NAMES}

    untrimmed = rules(msgs)
    assert "turns-merged" not in untrimmed["anthropic"]
    trims = _every_trim(msgs, "gemini")
    for out in trims:
        assert 1 not in out.removed or 2 in out.removed, out.removed
        for name, said in rules(out.messages).items():
            assert said <= untrimmed[name], (out.removed, name, said - untrimmed[name])
    assert len(trims) > 5


def _format_rules(msgs: Sequence[Msg], **kw: Any) -> set[str]:
    from agentmsg.providers import get

    return {p.rule for p in get("anthropic").format_request(list(msgs), **kw).diagnostics}


@pytest.mark.parametrize("empty", ["", " \n", []])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_user_message_that_sends_nothing_does_not_end_a_run_of_assistant_messages(provider: str, empty: Any) -> None:
    # every formatter leaves 3 out where it sends nothing (the turn family where its text is blank too): Anthropic
    # sends 2, 4, 5 as one turn that starts with thinking. 3 was an opener of its own: the first turn (1, 2) went and
    # the kept 3-5 sent 4's text first, 5's thinking moved to its start (thinking-moved, which the untrimmed
    # conversation did not say). 3 and 4 now go with 2, and the kept turn starts with 5's thinking
    msgs = [
        SYSTEM,
        user("q"),
        assistant(thinking(), TextBlock(text="first " * 10)),
        Msg(MsgRole.USER, empty),
        assistant(TextBlock(text="second")),
        assistant(thinking(), TextBlock(text="third")),
    ]
    assert "thinking-moved" not in _format_rules(msgs)
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider)
    assert out.removed == (2, 3, 4)
    assert kept_indexes(msgs, out) == [0, 1, 5]
    assert "thinking-moved" not in _format_rules(out.messages)


def _first_turn_role(provider: str, msgs: Sequence[Msg], **kw: Any) -> str:
    """The role of the first turn the provider's request sends (system prompts aside; ``kw``: format_request's)."""
    from agentmsg.providers import get

    body = get(provider).format_request(list(msgs), **kw).body
    turns = body.get("contents") or [m for m in body["messages"] if m["role"] != "system"]
    return str(turns[0]["role"])


@pytest.mark.parametrize("empty", ["", " \n", []])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_user_message_that_sends_nothing_opens_no_turn(provider: str, empty: Any) -> None:
    # 3 sends nothing (every formatter leaves it out where it holds no text; the turn family where its text is blank
    # too), so 2 and 4 meet: one answer to 1. 3 was taken for the opener of 4's turn: the kept tail was 3-4 and the
    # first turn (1, 2) went whole, its question with it: Anthropic and Gemini were sent 4 alone, an assistant turn
    # first (which they refuse; not said), OpenAI an empty question. The question now stays with its last answer (3
    # goes with 2, the unit before it: test_a_user_message_that_sends_nothing_goes_with_the_unit_before_it)
    msgs = [
        SYSTEM,
        user("What is 2+2?"),
        assistant(TextBlock(text="It is four. " * 4)),
        Msg(MsgRole.USER, empty),
        assistant(TextBlock(text="Anything else?")),
    ]
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider)
    assert out.removed == (2, 3)
    assert kept_indexes(msgs, out) == [0, 1, 4]
    assert _first_turn_role(provider, out.messages) == "user"
    # before any question: 1-2 are the lead an assistant turn opens, which goes (within budget too) where the
    # provider takes no assistant turn first; 1 opened a turn, and the request was sent starting with 2
    msgs = [SYSTEM, Msg(MsgRole.USER, empty), assistant(TextBlock(text="Hello.")), user("q"), assistant()]
    out = run(msgs, 10**6, provider)
    assert out.removed == ((1, 2) if provider != "openai" else ())
    assert _first_turn_role(provider, out.messages) == ("user" if provider != "openai" or empty != [] else "assistant")


@pytest.mark.parametrize("empty", ["", " \n", []])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_user_message_that_sends_nothing_goes_with_the_unit_before_it(provider: str, empty: Any) -> None:
    # a user message the formatters leave out answers nothing and asks nothing: it goes with the unit before it (the
    # first unit: the one after it). It was a unit of its own: removed as a step of its own (a trim-removed of a few
    # tokens apart), and at the end of the conversation the last unit, which keep_last kept with its turn's opener
    # while the answer before it went: 1, 3 and 5 were kept, 4 (the answer to 3) removed
    msgs = [
        SYSTEM,
        user("What is 2+2?"),
        assistant(TextBlock(text="It is four. " * 4)),
        user("And 3+3?"),
        assistant(TextBlock(text="Six.")),
        Msg(MsgRole.USER, empty),
    ]
    out = run(msgs, total(msgs) - tokens(msgs[1]), provider)
    assert kept_indexes(msgs, out) == [0, 3, 4, 5]
    assert [p.pointer for p in out.diagnostics] == ["/1"]  # (one step: the first turn)
    with pytest.raises(TrimBudgetError) as info:  # (the last turn, its answer with it, is what is kept at least)
        run(msgs, total(msgs) - tokens(msgs[1]) - tokens(msgs[2]) - 1, provider)
    assert info.value.result is not None
    assert kept_indexes(msgs, info.value.result) == [0, 3, 4, 5]
    # in a turn: with the answer before it, one step, one diagnostic
    msgs = [SYSTEM, user("q"), assistant(TextBlock(text="a " * 20)), Msg(MsgRole.USER, empty), assistant(), user("r")]
    msgs.append(assistant())
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider)
    assert out.removed == (2, 3)
    assert [(p.pointer, p.message.split(":")[0]) for p in out.diagnostics] == [("/2", "removed with /3")]
    # before any question: with the question after it, which stays an opener (its answer is not sent first)
    msgs = [SYSTEM, Msg(MsgRole.USER, empty), user("q"), assistant(TextBlock(text="a " * 20)), user("r"), assistant()]
    out = run(msgs, total(msgs) - 1, provider)
    assert out.removed == (1, 2, 3)
    assert _first_turn_role(provider, out.messages) == "user"


def test_a_message_the_provider_leaves_out_goes_with_the_unit_before_it() -> None:
    # a message the formatter leaves out (its count 0: an empty text for Anthropic, reasoning the Responses API does
    # not send back) sends nothing, as a quiet user message: it was a unit of its own, which keep_last kept while the
    # answer before it went. Anthropic was sent the question 3 alone, its call and result gone; the Responses API
    # nothing at all, which its formatter refuses, though the trim said the result fits
    msgs = [
        SYSTEM,
        user("What is 2+2? " * 20),
        assistant(TextBlock(text="It is four. " * 20)),
        user("Look it up."),
        assistant(call("c1")),
        result("c1"),
        assistant(TextBlock(text="")),
    ]
    counts = count_tokens(msgs, provider="anthropic")
    assert counts.messages[6] == 0
    with pytest.raises(TrimBudgetError) as info:  # the call and its result are the last unit: kept, with 3
        trim(msgs, counts.total - counts.messages[1] - counts.messages[2] - 1, provider="anthropic")
    assert info.value.result is not None and info.value.result.removed == (1, 2)
    silent = Msg(MsgRole.ASSISTANT, [ThinkingBlock(thinking="unsigned")])  # (not sent back by the Responses API)
    msgs = [SYSTEM, assistant(TextBlock(text="Hello, how can I help? " * 20)), silent]
    budget = trim(msgs, 10**6, provider="openai-responses").tokens - 1
    with pytest.raises(TrimBudgetError) as info:  # the greeting is the last message that sends something: kept
        trim(msgs, budget, provider="openai-responses")
    assert info.value.result is not None and info.value.result.removed == ()


@pytest.mark.parametrize("layout", ["prefix", "history"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_multi_agent_run_is_the_current_agents_turn_as_the_formatter_sends_it(provider: str, layout: str) -> None:
    # multi-agent (Bob speaking): another agent's reasoning is never sent, so Alice's message 3 of reasoning alone
    # sends nothing and Anthropic sends Bob's 2, 4, 5 as one turn that starts with thinking. 3 "started with
    # thinking" and was let be the first kept: 3-5 kept, the turn started with 4's text and 5's thinking moved
    # (thinking-moved). 3 and 4 now go with 2
    kw: dict[str, Any] = {"multi_agent": True, "agent_name": "Bob", "options": {"multi_agent_layout": layout}}
    msgs = [
        SYSTEM,
        user("q"),
        attrs.evolve(assistant(thinking(), TextBlock(text="first " * 10)), name="Bob"),
        attrs.evolve(assistant(thinking()), name="Alice"),
        attrs.evolve(assistant(TextBlock(text="second")), name="Bob"),
        attrs.evolve(assistant(thinking(), TextBlock(text="third")), name="Bob"),
    ]
    assert "thinking-moved" not in _format_rules(msgs, **kw)
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider, **kw)
    assert out.removed == (2, 3, 4)
    assert "thinking-moved" not in _format_rules(out.messages, **kw)
    # Alice's text is a user turn of her own: it ends Bob's run, so Bob's 2 can go (3 went with it: the run was taken
    # to go on through Alice's message to 4's thinking), with 1, the question it answered, and the kept turn 4-5
    # starts with thinking
    msgs[3:] = [
        attrs.evolve(assistant(TextBlock(text="I disagree")), name="Alice"),
        attrs.evolve(assistant(thinking(), TextBlock(text="second")), name="Bob"),
        attrs.evolve(assistant(TextBlock(text="third")), name="Bob"),
    ]
    out = run(msgs, total(msgs) - tokens(msgs[2]), provider, **kw)
    assert out.removed == (1, 2)
    assert "thinking-moved" not in _format_rules(out.messages, **kw)


@pytest.mark.parametrize("layout", ["prefix", "history"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_another_agents_message_opens_a_turn_in_multi_agent_mode(provider: str, layout: str) -> None:
    # AgentScope's multi-agent conversation: every speaker's messages are ASSISTANT messages with a name, and the
    # request sends the other speakers' as user turns. They were taken as assistant turns: a conversation that fits
    # was said trim-assistant-first (an error) for Anthropic and Gemini though its request starts with Bob's user
    # turn, and Bob's questions went apart from Alice's answers, which were kept after their question went: kept
    # [4, 5], the request starting with Alice's assistant turn
    kw: dict[str, Any] = {"multi_agent": True, "agent_name": "Alice", "options": {"multi_agent_layout": layout}}
    msgs = [
        SYSTEM,
        attrs.evolve(assistant(TextBlock(text="What is 2+2? " * 4)), name="Bob"),
        attrs.evolve(assistant(TextBlock(text="It is four. " * 4)), name="Alice"),
        attrs.evolve(assistant(TextBlock(text="And 3+3? " * 4)), name="Bob"),
        attrs.evolve(assistant(TextBlock(text="Six. " * 4)), name="Alice"),
        attrs.evolve(assistant(TextBlock(text="And 4+4?")), name="Bob"),
    ]
    out = run(msgs, total(msgs), provider, **kw)
    assert out.removed == () and out.diagnostics == ()
    out = run(msgs, total(msgs) - tokens(msgs[1]) - tokens(msgs[2]) - tokens(msgs[3]), provider, **kw)
    assert out.removed == (1, 2, 3, 4)  # each answer with its question
    assert [p.pointer for p in out.diagnostics] == ["/1", "/3"]
    assert _first_turn_role(provider, out.messages, **kw) == "user"


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_an_assistant_turn_first_goes_where_the_provider_refuses_it(provider: str) -> None:
    msgs = [SYSTEM, assistant(TextBlock(text="Hello, how can I help?")), user("q"), assistant()]
    out = run(msgs, 10**6, provider)  # within budget, yet the opening assistant turn goes
    assert out.removed == (1,) and out.messages == (SYSTEM, msgs[2], msgs[3])
    assert "no assistant turn first" in out.diagnostics[0].message
    out = run(msgs, 10**6, "openai")  # OpenAI takes it
    assert out.removed == ()


def test_an_assistant_first_conversation_with_no_user_message_is_said() -> None:
    msgs = [SYSTEM, assistant(TextBlock(text="x"))]
    out = run(msgs, 10**6, "anthropic")
    assert out.removed == () and [d.rule for d in out.diagnostics] == ["trim-assistant-first"]


def test_keep_last_keeps_more_units() -> None:
    msgs = [SYSTEM, user("q1"), assistant(), user("q2"), assistant()]
    with pytest.raises(TrimBudgetError):
        run(msgs, total([SYSTEM, *msgs[2:]]), keep_last=4)
    out = run(msgs, total([SYSTEM, *msgs[3:]]), keep_last=2)
    assert out.removed == (1, 2)


def test_an_impossible_budget_raises_with_the_smallest_result_and_both_numbers() -> None:
    msgs = [SYSTEM, user("q1"), assistant(), user("q2 " * 30)]
    smallest = total([SYSTEM, msgs[3]])
    with pytest.raises(TrimBudgetError) as caught:
        run(msgs, smallest - 1)
    error = caught.value
    assert error.result is not None and error.result.tokens == smallest and error.result.removed == (1, 2)
    [p] = error.problems
    assert p.rule == "trim-over-budget" and str(smallest) in p.message and str(smallest - 1) in p.message


WEATHER = {"name": "get_weather", "description": "The weather of a city", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("msgs", "tools", "said"),
    [
        ([], None, "the request's framing alone counts {total} tokens"),
        ([], [WEATHER], "the request's framing and the tool definitions alone count {total} tokens"),
        ([user("q " * 40)], None, "the latest turn alone counts {messages} tokens, {total} with the request's framing"),
        (
            [user("q " * 40)],
            [WEATHER],
            "the latest turn alone counts {messages} tokens, {total} with the request's framing and the tool"
            " definitions",
        ),
        (
            [SYSTEM, user("q " * 40)],
            None,
            "the system messages and the latest turn alone count {messages} tokens, {total} with the request's framing",
        ),
        ([SYSTEM], None, "the system messages alone count {messages} tokens, {total} with the request's framing"),
    ],
)
def test_an_impossible_budget_says_what_its_count_holds(msgs: list[Msg], tools: Any, said: str) -> None:
    """The problem said "the system messages alone count N" of a conversation with no system message, where N was
    the request's framing (and the tool definitions): it now names what the count holds, each part it has."""
    count = agentmsg.context.count_tokens(msgs, provider="anthropic", tools=tools)
    with pytest.raises(TrimBudgetError) as caught:
        trim(msgs, 1, provider="anthropic", tools=tools)
    [p] = caught.value.problems
    expected = said.format(total=count.total, messages=sum(count.messages))
    assert p.message == f"{expected}: over the budget of 1"


def test_summarize_replaces_what_went_after_the_system_prompt() -> None:
    msgs = [SYSTEM, user("q1 " * 20), assistant(TextBlock(text="a1 " * 20)), user("q2"), assistant()]
    seen: list[list[Msg]] = []

    def summarize(removed: list[Msg]) -> str:
        seen.append(removed)
        return "Earlier: q1 was asked and answered."

    out = run(msgs, total(msgs) - 10, summarize=summarize)
    assert seen == [[msgs[1], msgs[2]]]
    assert out.summary is not None and out.summary.role is MsgRole.SYSTEM
    assert out.messages == (SYSTEM, out.summary, msgs[3], msgs[4])
    assert out.tokens == total(out.messages) <= out.budget
    assert [d.rule for d in out.diagnostics] == ["trim-removed", "trim-summarized"]


def test_a_summary_too_large_makes_room_or_is_left_out_and_said() -> None:
    msgs = [SYSTEM, user("q1 " * 20), assistant(TextBlock(text="a1 " * 20)), user("q2"), assistant(), user("q3")]
    calls: list[int] = []

    def shrinking(removed: list[Msg]) -> Msg:
        calls.append(len(removed))
        return Msg(MsgRole.SYSTEM, "s " * (56 if len(calls) == 1 else 1))

    out = run(msgs, total(msgs) - 10, summarize=shrinking)
    assert calls == [2, 4] and out.removed == (1, 2, 3, 4)  # room made, the second summary covers all that went
    assert out.summary is not None and out.fits

    out = run(msgs, total(msgs) - 10, summarize=lambda removed: "x " * 1000)
    assert out.summary is None and out.fits
    assert out.diagnostics[-1].rule == "trim-summary-dropped"


@pytest.mark.parametrize("size", ["never", "growing"])
def test_a_summary_left_out_gives_back_what_went_only_to_make_room_for_it(size: str) -> None:
    """Room was made for a summary that then did not fit (larger than the budget, or growing with what it covers),
    and the summary was left out, but what went to make room stayed out: 20 messages removed where 2 were enough.
    The result is now the oldest-first trim alone, with the summary's dropping said."""
    msgs = [SYSTEM]
    for i in range(10):
        msgs += [user(f"question {i} " * 5), assistant(TextBlock(text=f"answer {i} " * 5))]
    msgs.append(user("last"))
    budget = total(msgs) - 5
    plain = run(msgs, budget)
    assert plain.removed == (1, 2)

    def summarize(removed: list[Msg]) -> str:
        return "s " * (10_000 if size == "never" else 60 * len(removed))

    out = run(msgs, budget, summarize=summarize)
    assert out.summary is None and out.fits
    assert (out.removed, out.messages, out.tokens) == (plain.removed, plain.messages, plain.tokens)
    assert [d.rule for d in out.diagnostics] == ["trim-removed", "trim-summary-dropped"]
    out = asyncio.run(atrim(msgs, budget, provider="openai", counter=Counter(), summarize=summarize))
    assert out.summary is None and out.removed == plain.removed


def test_a_summary_the_whole_count_refuses_gives_back_what_went_for_it() -> None:
    """A counter that is not additive: the summary fits by its own count, but the conversation with it does not,
    whatever goes; the summary is dropped and what went after it came back in comes back."""

    class Penalized(Counter):
        def __call__(self, messages: Sequence[Msg]) -> Count:
            found = super().__call__(messages)
            penalty = 1000 if any(m.text_content == "SUMMARY" for m in messages) and len(messages) > 1 else 0
            return Count(found.total + penalty, found.messages)

    msgs = [SYSTEM]
    for i in range(10):
        msgs += [user(f"question {i} " * 5), assistant(TextBlock(text=f"answer {i} " * 5))]
    msgs.append(user("last"))
    budget = total(msgs) - 5
    out = trim(msgs, budget, provider="openai", counter=Penalized(), summarize=lambda removed: "SUMMARY")
    assert out.summary is None and out.removed == (1, 2) and out.fits
    assert [d.rule for d in out.diagnostics] == ["trim-removed", "trim-summary-dropped"]


def test_the_strategy_and_the_arguments_are_checked() -> None:
    msgs = [user("q")]
    with pytest.raises(ValueError, match="needs a summarize"):
        run(msgs, 100, strategy="summarize")
    with pytest.raises(ValueError, match="takes no summarize"):
        run(msgs, 100, strategy="oldest", summarize=lambda r: "s")
    with pytest.raises(ValueError, match="budget"):
        run(msgs, -1)
    with pytest.raises(ValueError, match="keep_last"):
        run(msgs, 100, keep_last=0)
    with pytest.raises(ValueError, match="summary is a USER or SYSTEM"):
        run([user("q " * 40), assistant(), user("q")], 20, summarize=lambda r: assistant())
    with pytest.raises(KeyError):
        run(msgs, 100, provider="nope")
    # (these raised a bare TypeError or AttributeError from inside)
    with pytest.raises(ValueError, match="model"):
        trim(msgs, 100, provider="openai", model=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="counter is a function"):
        trim(msgs, 100, provider="openai", counter=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="summarize is a function"):
        trim(msgs, 100, provider="openai", summarize=5)  # type: ignore[arg-type]
    # (infinity raised a bare OverflowError; a text, bytes or bools of digits were read as counts)
    wrong = (float("inf"), "7", b"7", True)
    for answer in (None, [float("nan")], "many", *([x] * len(msgs) for x in wrong)):

        def counter(messages: Sequence[Msg], answer: Any = answer) -> Any:
            return answer

        with pytest.raises(ValueError, match="the counter gives each message's count"):
            trim(msgs, 100, provider="openai", counter=counter)
    # (a negative count was taken: a message "giving back" tokens, kept or removed against the budget)
    for negative, said in (
        ([-5] * len(msgs), "negative count [(]-5 for message 0[)]"),
        (_Counts([1] * len(msgs), -1), "negative count [(]-1 for the total[)]"),
        (_Counts([1] * len(msgs), "x"), "the counter's total is a count"),
    ):

        def counter(messages: Sequence[Msg], answer: Any = negative) -> Any:
            return answer if len(messages) == len(msgs) else [1] * len(messages)

        with pytest.raises(ValueError, match=said):
            trim(msgs, 100, provider="openai", counter=counter)


@attrs.define
class _Counts:
    """A counter's answer with a total (as count_tokens gives)."""

    messages: list[int]
    total: Any


def test_the_counter_is_asked_once_for_the_conversation_and_once_for_the_result() -> None:
    msgs = [SYSTEM]
    for i in range(200):
        msgs += [user(f"q{i} " * 5), assistant(call(f"c{i}")), result(f"c{i}"), assistant()]
    counter = Counter()
    out = trim(msgs, total(msgs) // 3, provider="openai", counter=counter)
    assert counter.calls == [len(msgs), len(out.messages)]


@pytest.mark.parametrize("summarize", [None, "summary"])
def test_the_default_counter_reads_the_messages_checked_once(monkeypatch: pytest.MonkeyPatch, summarize: Any) -> None:
    """The messages are checked (``members``: roles and blocks read as their members) once a trim, by the trim: the
    default counter is given them checked and checks them no more, for the conversation and for the result (it was
    three passes over them, each about 0.2 ms a thousand messages), and its count is count_tokens' all the same
    (a summary is checked alone)."""
    from agentmsg.context import count_tokens
    from agentmsg.message import members

    trim_module, count = (importlib.import_module(f"agentmsg.context.{name}") for name in ("trim", "count"))

    msgs = [SYSTEM]
    for i in range(50):
        msgs += [user(f"q{i} " * 5), assistant(call(f"c{i}")), result(f"c{i}"), assistant()]
    budget = count_tokens(msgs, provider="openai").total // 3
    passes: list[int] = []

    def counting(messages: Sequence[Msg]) -> Sequence[Msg]:
        passes.append(len(messages))
        return members(messages)

    for where in (trim_module, count):
        monkeypatch.setattr(where, "members", counting)
    out = trim(msgs, budget, provider="openai", summarize=(lambda removed: summarize) if summarize else None)
    assert out.removed and (out.summary is not None) is bool(summarize)
    assert passes == [len(msgs)] + ([1] if summarize else [])
    assert out.tokens == count_tokens(list(out.messages), provider="openai").total


def test_a_counter_that_is_not_additive_is_checked_and_met() -> None:
    """The result is counted again by the same counter: a count higher than the per-message sum makes more go."""

    def growing(messages: Sequence[Msg]) -> Count:
        per = tuple(tokens(m) for m in messages)
        return Count(sum(per) + OVERHEAD + 2 * len(messages), per)  # 2 more per message, not in the per-message counts

    msgs = [SYSTEM]
    for i in range(20):
        msgs += [user(f"q{i}"), assistant()]
    budget = total(msgs) // 2
    out = trim(msgs, budget, provider="openai", counter=growing)
    assert out.tokens == growing(list(out.messages)).total <= budget


def test_per_message_counts_alone_are_a_counter() -> None:
    msgs = [user("q1 " * 10), assistant(), user("q2")]
    out = trim(msgs, tokens(msgs[2]), provider="openai", counter=lambda ms: [tokens(m) for m in ms])
    assert out.messages == (msgs[2],) and out.tokens == tokens(msgs[2])


def test_fractional_counts_are_rounded_up_so_the_result_fits_by_the_counter() -> None:
    """(1.9 a message was read as 1: three messages "fit" a budget of 3, which they are 5.7 by the counter's own
    measure)"""
    msgs = [user("q1"), assistant(), user("q2")]
    out = trim(msgs, 3, provider="openai", counter=lambda ms: [1.9] * len(ms))
    assert out.removed == (0, 1) and out.tokens == 2


def test_atrim_awaits_an_async_summarize() -> None:
    msgs = [SYSTEM, user("q1 " * 20), assistant(TextBlock(text="a1 " * 20)), user("q2")]

    async def summarize(removed: list[Msg]) -> str:
        await asyncio.sleep(0)
        return f"{len(removed)} messages before"

    out = asyncio.run(atrim(msgs, total(msgs) - 10, provider="openai", counter=Counter(), summarize=summarize))
    assert out.summary is not None and out.summary.text_content == "2 messages before"
    assert out.messages[1] is out.summary


def test_every_trim_rule_is_listed_for_the_reports_and_docs() -> None:
    from agentmsg.cli._rules import RULES

    assert set(TRIM_RULES) <= set(RULES)


def test_a_provider_object_and_the_default_counter() -> None:
    from agentmsg.context import count_tokens
    from agentmsg.providers import get

    msgs = [SYSTEM, user("q1 " * 50), assistant(TextBlock(text="a1 " * 50)), user("q2")]
    whole = count_tokens(msgs, provider="gemini").total
    out = trim(msgs, whole - 1, provider=get("gemini"))
    assert out.removed == (1, 2) and out.tokens == count_tokens(list(out.messages), provider="gemini").total
    assert out.diagnostics_dicts()[0] == {
        "pointer": "/1",
        "rule": "trim-removed",
        "kind": "lossy",
        "message": out.diagnostics[0].message,
    }


def test_roles_set_to_their_plain_strings_trim_as_their_members() -> None:
    """A role set after construction to its plain string (``msg.role = "USER"``) matched none of the roles the plan
    tells apart by identity: a system prompt so changed could be removed, a question taken for no opener. Such
    messages trim as their members do, the result holding the caller's own messages; an unknown role is refused."""
    msgs = [SYSTEM, user("one " * 20), assistant(TextBlock(text="a " * 20)), user("two"), assistant(), user("three")]
    expected = run(msgs, total(msgs) - 1)
    changed = [Msg(m.role, list(m.content)) for m in msgs]
    for m in changed:
        m.role = m.role.value  # type: ignore[assignment]
    out = run(changed, total(changed) - 1)
    assert (out.removed, out.diagnostics) == (expected.removed, expected.diagnostics)
    assert all(any(k is m for m in changed) for k in out.messages)
    changed[3].role = "BOSS"  # type: ignore[assignment]
    with pytest.raises(agentmsg.ValidationError) as info:
        run(changed, total(changed) - 1)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/3/role", "enum")]


@pytest.mark.parametrize("messages", ["hi", [{"role": "USER"}], [SYSTEM, 1]])
def test_what_is_no_list_of_messages_is_a_validation_error(messages: Any) -> None:
    """A string, or items that are no messages, are refused naming them (not an AttributeError), by trim and by
    place_cache_markers alike."""
    from agentmsg.context import place_cache_markers

    for call in (lambda: run(messages, 100), lambda: place_cache_markers(messages, provider="anthropic")):
        with pytest.raises(agentmsg.ValidationError) as info:
            call()
        assert info.value.problems[0].rule == "type"


def _own_provider(*, user_first: bool = False, signature_chain: bool = False) -> Entry:
    """A provider defined here, in no registry: the rules trim keeps to come from its spec, not from its name
    (both off, as OpenAI's are)."""
    from agentmsg.providers import get

    openai = module("openai")
    spec = attrs.evolve(
        get("openai").spec,
        name="acme-trim",
        title="Acme",
        families=("acme",),
        user_first=user_first,
        signature_chain=signature_chain,
    )
    return Entry(spec, openai.format_request, openai.Reader, "agentmsg.providers.openai")


def test_the_first_turn_rule_is_the_specs_not_a_vendor_list() -> None:
    msgs = [SYSTEM, assistant(TextBlock(text="Hello, how can I help?")), user("q"), assistant()]
    out = trim(msgs, 10**6, provider=_own_provider(user_first=True), counter=Counter())
    assert out.removed == (1,) and "no assistant turn first" in out.diagnostics[0].message
    assert trim(msgs, 10**6, provider=_own_provider(), counter=Counter()).removed == ()


def test_the_signature_chain_rule_is_the_specs_not_a_vendor_list() -> None:
    own = ThinkingBlock(thinking="let me think " * 4, metadata={"signature": "sig", "provider": "acme"})
    msgs = [SYSTEM, user("now"), assistant(own, call("a")), result("a"), assistant(call("b")), result("b")]
    msgs += [assistant(TextBlock(text="answer"))]
    budget = total([SYSTEM, *msgs[1:]]) - 1
    with pytest.raises(TrimBudgetError):  # the chain cannot be cut
        trim(msgs, budget, provider=_own_provider(signature_chain=True), counter=Counter())
    assert trim(msgs, budget, provider=_own_provider(), counter=Counter()).removed == (2, 3)


@pytest.mark.parametrize("fn", ["trim", "atrim"])
def test_trim_counts_the_request_the_format_arguments_make(fn: str) -> None:
    """``trim`` and ``atrim`` take the request's ``options``, ``multi_agent`` and ``agent_name`` (as ``format_request``
    and ``count_tokens`` do) and count that request: the multi-agent history layout sends more than the single-agent
    request (the history prompt and tags), so a budget the single-agent count fits is too small for it. (They took
    none: every conversation was counted as the single-agent request, and trimmed to a budget it overruns.)"""
    from agentmsg.context import count_tokens

    msgs = [
        Msg(role="USER", content=[TextBlock(text="Plan the trip.")], name="Bob"),
        Msg(role="ASSISTANT", content=[TextBlock(text="Flights first.")], name="Alice"),
        Msg(role="USER", content=[TextBlock(text="And hotels?")], name="Bob"),
        Msg(role="ASSISTANT", content=[TextBlock(text="Near Alfama.")], name="Me"),
        Msg(role="USER", content=[TextBlock(text="Thanks.")], name="Bob"),
    ]
    args: dict[str, Any] = {"multi_agent": True, "agent_name": "Me", "options": {"multi_agent_layout": "history"}}
    budget = count_tokens(msgs, provider="openai").total
    assert count_tokens(msgs, provider="openai", **args).total > budget

    def run(**kwargs: Any) -> Trimmed:
        if fn == "trim":
            return trim(msgs, budget, provider="openai", **kwargs)
        return asyncio.run(atrim(msgs, budget, provider="openai", **kwargs))

    assert run().removed == ()
    cut = run(**args)
    assert cut.removed and cut.fits
    assert cut.tokens == count_tokens(list(cut.messages), provider="openai", **args).total


@pytest.mark.parametrize(
    ("call", "pointer", "rule"),
    [
        (lambda m: run(m, -1), "/budget", "minimum"),
        (lambda m: run(m, "10"), "/budget", "type"),  # type: ignore[arg-type]
        (lambda m: run(m, True), "/budget", "type"),
        (lambda m: run(m, 100, keep_last=0), "/keep_last", "minimum"),
        (lambda m: run(m, 100, keep_last=1.5), "/keep_last", "type"),
        (lambda m: run(m, 100, strategy="newest"), "/strategy", "enum"),
        (lambda m: run(m, 100, strategy="summarize"), "/summarize", "strategy"),
        (lambda m: trim(m, 100, provider="openai", counter=5), "/counter", "type"),  # type: ignore[arg-type]
        (lambda m: trim(m, 100, provider="openai", summarize=5), "/summarize", "type"),  # type: ignore[arg-type]
        (lambda m: trim(m, 100, provider="openai", counter=lambda ms: None), "/counter", "count"),
        (lambda m: trim(m, 100, provider="openai", counter=lambda ms: [-1]), "/counter", "count"),
        (lambda m: trim(m, 100, provider="openai", counter=lambda ms: [1, 1]), "/counter", "count"),
        (lambda m: run([user("q " * 40), assistant(), user("q")], 20, summarize=lambda r: 5), "/summarize", "type"),
        (
            lambda m: run([user("q " * 40), assistant(), user("q")], 20, summarize=lambda r: assistant()),
            "/summarize",
            "role",
        ),
    ],
)
def test_a_bad_argument_of_trim_is_a_validation_error(call: Any, pointer: str, rule: str) -> None:
    """trim's own argument checks raised a bare ValueError (a summary that is no Msg a bare TypeError): now the
    SDK's error naming the argument and the rule, still the ValueError (or TypeError) it was."""
    with pytest.raises(agentmsg.ValidationError) as info:
        call([user("q")])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    assert isinstance(info.value, TypeError if rule == "type" else ValueError)


@pytest.mark.parametrize(
    ("provider", "tools"),
    [
        ("anthropic", [{"type": "custom", "name": "sql", "format": {"type": "text"}}]),
        ("openai", [{"type": "web_search_20250305", "name": "web_search"}]),
        ("gemini", [{"name": "f"}, {"name": "f"}]),
    ],
)
def test_tools_the_formatter_refuses_are_refused_by_the_trim_as_by_the_formatter(
    provider: str, tools: list[dict[str, Any]]
) -> None:
    """The trim counts the request the formatter would send (its default counter): tools that formatter refuses
    were counted and the conversation trimmed for them; now trim and atrim raise the formatter's ValidationError."""
    from agentmsg.providers import get

    convo = [user("hello " * 20), assistant(), user("and then?")]
    with pytest.raises(agentmsg.ValidationError) as formatted:
        get(provider).format_request(convo, tools=tools)
    with pytest.raises(agentmsg.ValidationError) as trimmed:
        trim(convo, budget=10_000, provider=provider, tools=tools)
    assert trimmed.value.problems == formatted.value.problems
    with pytest.raises(agentmsg.ValidationError) as trimmed:
        asyncio.run(atrim(convo, budget=10_000, provider=provider, tools=tools))
    assert trimmed.value.problems == formatted.value.problems


@pytest.mark.parametrize("name", agentmsg.providers.NAMES)
def test_a_trim_with_repair_gives_what_the_formatter_takes(name: str) -> None:
    """With ``repair`` the error result of a call left open is counted on the message before which the formatter
    sends it: a message that sends nothing itself (an empty assistant message, reasoning the provider does not take)
    after an open call counted that result, so the trim took it for a unit that sends something, kept it alone (the
    call went, and the repair result with it), and gave a conversation that fits the budget but that the formatter
    refuses, ``nothing to send`` (empty-conversation). Now such a message goes with the call, as it does without
    ``repair``: every budget gives a conversation the provider's formatter takes, or TrimBudgetError."""
    from agentmsg.providers import FormatOptions, get

    options = FormatOptions(repair=True)
    call = Msg(MsgRole.ASSISTANT, [ToolUseBlock(id="c1", name="f", input={})])
    after = {
        "empty": Msg(MsgRole.ASSISTANT, []),
        "empty-text": Msg(MsgRole.ASSISTANT, [TextBlock(text="")]),
        "thinking": Msg(MsgRole.ASSISTANT, [ThinkingBlock(thinking="hmm")]),
    }
    before = {"alone": [], "text": [assistant()], "system": [Msg(MsgRole.SYSTEM, [TextBlock(text="be brief")])]}
    refused = []
    for (first, head), (last, tail) in itertools.product(before.items(), after.items()):
        convo = [*head, call, tail]
        get(name).format_request(convo, model="m", options=options)  # (the whole conversation is taken)
        total = count_tokens(convo, provider=name, options=options).total
        for budget in range(total + 1):
            try:
                cut = trim(convo, budget, provider=name, options=options)
            except TrimBudgetError:
                continue
            try:
                get(name).format_request(list(cut.messages), model="m", options=options)
            except agentmsg.ValidationError as exc:
                refused.append(f"{first} + call + {last}, budget {budget}: {exc.problems[0].rule}")
                break
    assert not refused, refused
