"""Trimming a conversation to a token budget: :func:`trim` (and :func:`atrim`, its async twin).

The conversation is cut into **units**, the smallest pieces that can go without breaking what a provider checks:

- a tool call and every result that answers it are one unit, with all the messages between them (parallel calls
  whose results interleave make one unit);
- a USER message that sends nothing (every formatter leaves it out) goes with the unit before it (the first unit:
  the one after it); it opens no turn;
- a **turn** starts at a USER message that sends something (its *opener*; in multi-agent mode another speaker's
  message the request sends as a user turn too) and runs to the next; what answers an opener is kept with it:
  the opener goes only with the last unit of its turn, so a kept answer always follows its question, and the
  result never starts with an assistant turn where the conversation did not;
- in a run of assistant messages (one turn in the turn family, whose thinking moves to its start unless it starts
  with thinking), a message that does not start with thinking goes with the unit before it when it or a later
  message of the run holds thinking, so the kept part of the run is rewritten no more than the whole run was (the
  run as the request sends it: a user message that sends nothing does not end it; in multi-agent mode another
  agent's message is a user turn that does, unless it holds a call or a result, and its reasoning is not sent);
- where the provider checks a thinking-signature chain (its spec's ``signature_chain``; Anthropic: the thinking
  that opens the current turn's tool loop must come back unchanged before its ``tool_use``), the current turn is
  one unit when it holds its reasoning and a tool call;
- before the first opener (a conversation that starts with an assistant turn), the units go together, and always,
  for a provider that takes no assistant turn first (its spec's ``user_first``: Anthropic, Gemini).

System messages are never removed, and neither are the last ``keep_last`` units with the opener of their turn.
The units go oldest first until the conversation fits; each removal is reported (rule ``trim-removed``). With a
``summarize`` function the removed messages are replaced by its summary, inserted after the leading system
messages; the result is counted again with it, and when it does not fit, more units go and the summary is asked
again (at most :data:`SUMMARY_TRIES` times), else it is left out (``trim-summary-dropped``) and what went only to make
room for it comes back.

Counts are computed once, for the whole conversation (``counter``, by default
:func:`agentmsg.context.count_tokens` for the provider); the result is counted once more to check it, by the same
counter, so the time is linear in the conversation's length. When the system messages and the kept tail alone
exceed the budget, :class:`TrimBudgetError` is raised (rule ``trim-over-budget``), holding the smallest result.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from agentmsg.blocks import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.context._frames import DROPPED, REASONING, reasoning_sent
from agentmsg.errors import Problem, ValidationError, require_count, wrong_type
from agentmsg.message import Msg, MsgRole, members
from agentmsg.providers._request.context import as_options, has_result, has_tool_use, is_current_agent

if TYPE_CHECKING:
    from agentmsg.providers import FormatOptions, Provider

__all__ = [
    "SUMMARY_TRIES",
    "TRIM_RULES",
    "TrimBudgetError",
    "Trimmed",
    "atrim",
    "trim",
]

_USER, _ASSISTANT, _SYSTEM = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM

#: how many times a summary is asked for when it does not fit (each time after removing more to make room)
SUMMARY_TRIES: Final = 3

#: rule -> (kind, meaning), as the formatters' RULES: the diagnostics of a trim
TRIM_RULES: Final[dict[str, tuple[str, str]]] = {
    "trim-removed": ("lossy", "messages were removed to fit the token budget (a whole unit: a call with its results)"),
    "trim-summarized": ("rewrite", "the removed messages were replaced by a summary, after the system prompt"),
    "trim-summary-dropped": ("lossy", "the summary did not fit the budget and was left out"),
    "trim-assistant-first": (
        "error",
        "the kept conversation starts with an assistant turn (no user message before the latest turn), which the"
        " provider refuses",
    ),
    "trim-over-budget": (
        "error",
        "what is never removed (the system messages, the latest turn, the request's framing and tool definitions)"
        " alone exceeds the token budget",
    ),
}

#: a counter: messages -> their counts (an object with ``messages`` and ``total``, as count_tokens gives, or the
#: per-message counts themselves)
Counter = Callable[[Sequence[Msg]], Any]
Summarize = Callable[[list[Msg]], "Msg | str"]
ASummarize = Callable[[list[Msg]], "Awaitable[Msg | str] | Msg | str"]


@attrs.frozen
class Trimmed:
    """What :func:`trim` made. ``messages``: the trimmed conversation (the input's own messages, in order, and the
    summary). ``removed``: the indexes of the input's messages left out, ascending. ``summary``: the message inserted
    (None: none). ``tokens``: the count of ``messages`` by the trim's counter, tools and overhead included.
    ``budget``: the budget asked for. ``diagnostics``: what was done, as :class:`~agentmsg.Problem` (pointer into the
    input conversation, rule from :data:`TRIM_RULES`)."""

    messages: tuple[Msg, ...]
    removed: tuple[int, ...]
    summary: Msg | None
    tokens: int
    budget: int
    diagnostics: tuple[Problem, ...]

    @property
    def fits(self) -> bool:
        """Whether the count is within the budget."""
        return self.tokens <= self.budget

    def diagnostics_dicts(self) -> list[dict[str, str]]:
        """The diagnostics as plain dicts (``pointer``, ``rule``, ``kind``, ``message``), as a formatter's."""
        return [
            {"pointer": p.pointer, "rule": p.rule, "kind": TRIM_RULES[p.rule][0], "message": p.message}
            for p in self.diagnostics
        ]


class TrimBudgetError(ValidationError):
    """The budget cannot be met: the system messages and the kept tail (the last ``keep_last`` units and the
    opener of their turn) alone exceed it. ``result``: that smallest conversation, its count in ``tokens``; the
    problem (rule ``trim-over-budget``) says both numbers."""

    def __init__(self, problems: Sequence[Problem], kind: str | None = None, result: Trimmed | None = None) -> None:
        super().__init__(problems, kind)
        self.result = result


@attrs.define
class _Step:
    """Messages removed together (a unit, with its turn's opener when it is the turn's last), their tokens, and
    whether they go even when the conversation fits (an assistant turn first where the provider refuses one)."""

    indexes: list[int]
    tokens: int
    forced: bool
    why: str


def _count(value: Any) -> int:
    """One count from a counter: an int as it is, a finite fractional count rounded up (so that what fits by the
    counter's own measure fits); ValueError for what is no count (None, NaN, infinity, a bool, a text or bytes,
    whose ``int()`` would read a number out of it)."""
    kind = type(value)
    if kind is int:
        return value  # type: ignore[no-any-return]
    if kind is bool or isinstance(value, (str, bytes, bytearray)):
        raise ValueError(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return math.ceil(float(value))
    raise ValueError(value)


def _counts(counter: Counter, messages: Sequence[Msg]) -> tuple[list[int], int]:
    """(per-message counts, total) from a counter's answer."""
    found: Any = counter(messages)
    per: Any = getattr(found, "messages", found)
    try:
        counts = [_count(c) for c in per]
    except (TypeError, ValueError):  # (None, a NaN, a text: not counts)
        raise ValidationError.single(
            "/counter",
            "count",
            "the counter gives each message's count (ints, or an object with messages and total), not"
            f" {type(found).__name__} {per!r:.80}",
        ) from None
    if len(counts) != len(messages):
        raise ValidationError.single(
            "/counter", "count", f"the counter gave {len(counts)} counts for {len(messages)} messages"
        )
    total = getattr(found, "total", None)
    try:
        whole = _count(total) if total is not None else sum(counts)
    except (TypeError, ValueError):
        raise ValidationError.single(
            "/counter", "count", f"the counter's total is a count, not {type(total).__name__} {total!r:.80}"
        ) from None
    low = min(counts, default=0)
    if low < 0 or whole < 0:  # (a message that gives tokens back: removing it would make the rest longer)
        where = f"message {counts.index(low)}" if low < 0 else "the total"
        raise ValidationError.single(
            "/counter", "count", f"the counter gave a negative count ({low if low < 0 else whole} for {where})"
        )
    return counts, whole


def _families(provider: Any) -> tuple[str, ...]:
    spec = getattr(provider, "spec", None)
    families = getattr(spec, "families", None)
    return tuple(families) if families else ()


def _rules(provider: Any) -> tuple[bool, bool]:
    """The provider's spec's ``user_first`` and ``signature_chain`` (providers/spec.py): what the plan keeps to."""
    spec = getattr(provider, "spec", None)
    return bool(getattr(spec, "user_first", False)), bool(getattr(spec, "signature_chain", False))


def _has_chain(msgs: Sequence[Msg], indexes: Sequence[int], families: tuple[str, ...]) -> bool:
    """Whether these messages hold reasoning the provider replays (its own, or of no stated origin) and a call."""
    thinking = calls = False
    for i in indexes:
        if msgs[i].role is not _ASSISTANT:
            continue
        blocks: list[Any] = msgs[i].content
        for b in blocks:
            t = type(b)
            if t is ToolUseBlock:
                calls = True
            elif t is ThinkingBlock:
                origin = b.metadata.get("provider") if b.metadata else None
                thinking = thinking or origin is None or origin in families
    return thinking and calls


def _sends_nothing(blocks: list[Any], labelled: bool) -> bool:
    """Whether a user turn of these blocks sends nothing, so that the turns around it meet (every formatter leaves it
    out: ``empty-message-dropped``): reasoning alone (never sent in a user turn), and unless a label opens its first
    text (``labelled``: a multi-agent turn's ``[Name]: `` or history line, sent even when the text is empty) empty and
    blank texts too (the turn family leaves those out; taken so for every provider)."""
    for b in blocks:
        t = type(b)
        if t is ThinkingBlock or (t is TextBlock and not labelled and (not b.text or b.text.isspace())):
            continue
        return False
    return True


def _glued(
    msgs: Sequence[Msg],
    units: list[list[int]],
    multi: bool = False,
    agent: str | None = None,
    sent: _Sent | None = None,
) -> list[list[int]]:
    """The units, each that starts a cut inside a run of assistant messages where the kept turn would start otherwise
    than the run did glued to the unit before it. The turn family sends such a run as one turn, whose thinking stays
    in its place when the turn starts with thinking and else goes to its start (``thinking-moved``): kept from a
    message that does not start with thinking, with thinking in it or after it in the run, the turn would be
    rewritten where the untrimmed one was not. A message that starts with thinking, or after which the run holds none,
    can be the first kept. (For every provider: the trimmed conversation formats for each as the untrimmed one.)

    The run is what the request sends as one assistant turn: a user message that sends nothing (:func:`_sends_nothing`)
    is left out and does not end it. In multi-agent mode (``multi``, the current agent ``agent``) another speaker's
    message is a user turn (ending the run) unless it holds a tool call or result (an assistant turn) or sends nothing;
    its reasoning is never sent, so it neither starts the turn with thinking nor holds any. Each formatter of the turn
    family is asked (``sent``, :class:`_Sent`; None: the conversation holds no thinking, and nothing is glued): a
    message starts with the thinking it sends, the thinking it leaves out skipped (one that began with another
    model's reasoning, which Anthropic leaves out, was kept first, and its turn's later thinking moved to the start)."""
    if sent is None:
        return units
    n = len(msgs)
    in_run = [False] * n  # message i is in a run: an assistant turn's, or one the request leaves out
    current = [False] * n  # message i is the current agent's assistant message (its reasoning may be sent)
    for i, m in enumerate(msgs):
        role = m.role
        blocks: list[Any] = m.content
        if role is _ASSISTANT and (not multi or is_current_agent(m, agent)):
            in_run[i] = current[i] = True
        elif role is _USER or role is _ASSISTANT:
            in_run[i] = (role is _ASSISTANT and (has_tool_use(m) or has_result(m))) or _sends_nothing(blocks, multi)
    # moves[i]: kept first of its run's part, message i would start a turn a formatter of the turn family rewrites: it
    # does not start with the reasoning that formatter sends, and it or a later message of its run holds some
    moves = [False] * n
    for formatter in sent.turns:
        later = False
        for i in range(n - 1, -1, -1):
            if msgs[i].role is _SYSTEM:
                continue
            blocks = msgs[i].content
            thinks = current[i] and any(sent.how(formatter, b) == REASONING for b in blocks if type(b) is ThinkingBlock)
            later = in_run[i] and (later or thinks)
            if later and not (current[i] and sent.starts_with(formatter, blocks)):
                moves[i] = True
    out: list[list[int]] = []
    for u in units:
        first = u[0]
        if out and moves[first] and in_run[out[-1][-1]]:
            out[-1].extend(u)  # (in place: a long run glued stays linear)
            continue
        out.append(u)
    return out


class _Sent:
    """What the registry's formatters make of a thinking block (:func:`~agentmsg.context._frames.reasoning_sent`), for
    the rules that hold for every provider (a trimmed conversation formats for each as the untrimmed one): those of the
    turn family (Anthropic, Gemini: ``TokenProfile.turns``), which move thinking to the start of a turn that does not
    start with it, and those that send reasoning only in a turn that called tools (``thinking="tool_turns"``:
    DeepSeek). ``demote``: the ``reasoning="text"`` option."""

    def __init__(self, demote: bool) -> None:
        from agentmsg.providers import NAMES, get

        self.turns: list[tuple[Any, tuple[str, ...]]] = []
        self.tool_turns: list[tuple[Any, tuple[str, ...]]] = []
        for name in NAMES:
            spec = get(name).spec
            if spec.tokens is None:
                continue
            profile = spec.tokens.for_model(spec.default_model)
            if profile.turns:
                self.turns.append((profile, tuple(spec.families)))
            if profile.thinking == "tool_turns":
                self.tool_turns.append((profile, tuple(spec.families)))
        self.demote = demote

    def how(self, formatter: tuple[Any, tuple[str, ...]], block: ThinkingBlock) -> int:
        """What one formatter (a ``(profile, families)`` of :attr:`turns`) makes of a thinking block."""
        return reasoning_sent(block, formatter[0], formatter[1], self.demote)

    def starts_with(self, formatter: tuple[Any, tuple[str, ...]], blocks: Sequence[Any]) -> bool:
        """Whether the first of these blocks that one formatter sends is reasoning it sends; the thinking it leaves out
        skipped, one it sends as text a text."""
        for b in blocks:
            if type(b) is not ThinkingBlock:
                return False
            how = self.how(formatter, b)
            if how != DROPPED:
                return how == REASONING
        return False

    def left_out(self, blocks: Sequence[Any]) -> bool:
        """Whether a formatter of the turn family sends none of these blocks: reasoning alone, each of which it leaves
        out (Anthropic: unsigned reasoning, another model's). Such an assistant message sends nothing to that provider,
        so that the turns around it meet there, whatever the provider trimmed for sends of it."""
        if not blocks or any(type(b) is not ThinkingBlock for b in blocks):
            return False
        return any(all(self.how(f, b) == DROPPED for b in blocks) for f in self.turns)

    def only_in_tool_turns(self, block: Any) -> bool:
        """Whether a formatter that sends reasoning only in a turn that called tools sends this block as reasoning."""
        return type(block) is ThinkingBlock and any(
            reasoning_sent(block, profile, families, self.demote) == REASONING for profile, families in self.tool_turns
        )


@functools.lru_cache(maxsize=2)
def _sent(demote: bool) -> _Sent:
    return _Sent(demote)


def _tool_turns_glued(
    msgs: Sequence[Msg], units: list[list[int]], sent: _Sent, opens: Callable[[list[int]], bool]
) -> list[list[int]]:
    """The units, those of a turn that called tools holding reasoning a formatter sends only in such a turn
    (:class:`_Sent`: DeepSeek's) glued with its calls' units, from the first of them to the last: the calls' units
    removed and the reasoning kept (before or after them), the turn no longer called tools and the reasoning was no
    longer sent (``thinking-pruned``), where the untrimmed conversation sent it. ``opens``: whether a unit opens a
    user turn. The turn's opener holds such reasoning when a message the provider leaves out was glued to it (reasoning
    alone, which Anthropic does not send): it is cut before that message, so that the opener still opens the turn (glued
    whole with the calls, it opened none, and the turn before ran on into this one: ``turns-merged`` once trimmed)."""
    out: list[list[int]] = []
    turn: list[list[int]] = []  # the units of the turn so far

    def holds(x: int) -> bool:
        return any(sent.only_in_tool_turns(b) for b in msgs[x].content)

    def close() -> None:
        if not any(has_tool_use(msgs[x]) for u in turn for x in u):
            out.extend(turn)
            turn.clear()
            return
        first = turn[0]
        cut = next((i for i, x in enumerate(first) if holds(x)), 0)
        if cut and opens(first) and opens(first[:cut]):
            turn[0:1] = [first[:cut], first[cut:]]
        calls = [k for k, u in enumerate(turn) if any(has_tool_use(msgs[x]) for x in u)]
        held = [k for k, u in enumerate(turn) if any(holds(x) for x in u)]
        if calls and held:
            low, high = min(calls[0], held[0]), max(calls[-1], held[-1])
            glued = [x for u in turn[low : high + 1] for x in u]
            out.extend([*turn[:low], glued, *turn[high + 1 :]])
        else:
            out.extend(turn)
        turn.clear()

    for u in units:
        if opens(u):
            close()
        turn.append(u)
    close()
    return out


def _user_turn(msg: Msg, multi: bool, agent: str | None) -> bool:
    """Whether the request sends this message as (part of) a user turn: a USER message, and in multi-agent mode
    (``multi``, the current agent ``agent``) another speaker's message that holds no tool call or result."""
    role = msg.role
    if role is _USER:
        return True
    return (
        multi
        and role is _ASSISTANT
        and not is_current_agent(msg, agent)
        and not has_tool_use(msg)
        and not has_result(msg)
    )


def _quiet(msg: Msg, multi: bool) -> bool:
    """A user message the request leaves out (:func:`_sends_nothing`): the turns around it meet."""
    return msg.role is _USER and _sends_nothing(msg.content, multi)


def _quiet_glued(msgs: Sequence[Msg], units: list[list[int]], quiet: Sequence[bool]) -> list[list[int]]:
    """The units, each of messages that send nothing (``quiet``: :func:`_quiet`, and those the provider's count
    prices at 0) glued to the unit before it, or to the one after it where none is before (its unit starts with it
    then). Such a message answers nothing and is no question a kept answer can follow: on its own it was a step of a
    few tokens, said ``trim-removed`` apart, and at the end of the conversation the last unit ``keep_last`` keeps, for
    which the answer before it went (and when nothing else was kept, a request the formatter refuses: nothing to
    send)."""
    out: list[list[int]] = []
    ahead: list[int] = []  # quiet messages before the first unit that sends something
    for u in units:
        if all(quiet[x] for x in u):
            if out:
                out[-1].extend(u)  # (in place: a long run glued stays linear)
            else:
                ahead.extend(u)
        else:
            out.append(ahead + u if ahead else u)
            ahead = []
    if ahead:  # (the conversation sends nothing but system messages)
        out.append(ahead)
    return out


class _Plan:
    """The units, the kept tail and the removal order of one conversation (built once, linear)."""

    def __init__(
        self,
        msgs: Sequence[Msg],
        counts: list[int],
        families: tuple[str, ...],
        keep_last: int,
        rules: tuple[bool, bool] = (False, False),
        multi: bool = False,
        agent: str | None = None,
        alone: Sequence[int] | None = None,
        sent: _Sent | None = None,
    ) -> None:
        n = len(msgs)
        self.msgs = msgs
        self.counts = counts
        # a call's message reaches the last message holding one of its results
        reach = list(range(n))
        call_at: dict[str, int] = {}
        for i, m in enumerate(msgs):
            blocks: list[Any] = m.content
            for b in blocks:
                t = type(b)
                if t is ToolUseBlock:  # (an id used again: its results answer the latest call, as formatters pair them)
                    call_at[b.id] = i
                elif t is ToolResultBlock:
                    c = call_at.get(b.id)
                    if c is not None and reach[c] < i:
                        reach[c] = i
        units: list[list[int]] = []  # non-system message indexes, in order
        i = 0
        while i < n:
            end = reach[i]
            j = i
            while j < end:
                j += 1
                if reach[j] > end:
                    end = reach[j]
            unit = [k for k in range(i, end + 1) if msgs[k].role is not _SYSTEM]
            if unit:
                units.append(unit)
            i = end + 1
        # the messages that send nothing: a user message the request leaves out, and (``alone``: what each sends
        # itself, the provider's count, count_tokens's, less the repair results it counts) any other it leaves out,
        # which its count prices at 0 (no framing either). (An empty message after a call left open counts the error
        # result the repair option sends before it: on its own, kept without the call, it sent nothing.)
        # (and, for every provider, an assistant message a formatter of the turn family sends nothing of: kept alone
        # between two questions, they meet there: turns-merged, where the untrimmed conversation did not say it)
        quiet = [
            _quiet(m, multi)
            or (alone is not None and alone[i] == 0 and m.role is not _SYSTEM)
            or (
                sent is not None
                and m.role is _ASSISTANT
                and (not multi or is_current_agent(m, agent))
                and sent.left_out(m.content)
            )
            for i, m in enumerate(msgs)
        ]
        units = _quiet_glued(msgs, _glued(msgs, units, multi, agent, sent), quiet)

        # turns: each unit of user turns opens one (one that sends something, with the quiet ones glued to it): USER
        # messages, and in multi-agent mode another speaker's, which the request sends as user turns
        def opens(u: list[int]) -> bool:
            return all(quiet[x] or _user_turn(msgs[x], multi, agent) for x in u) and not all(
                quiet[x] or _sends_nothing(msgs[x].content, multi) for x in u
            )

        if sent is not None and sent.tool_turns:
            units = _tool_turns_glued(msgs, units, sent, opens)
        openers = [opens(u) for u in units]
        user_first, signature_chain = rules
        if signature_chain and units:
            last = max((k for k, o in enumerate(openers) if o), default=-1)
            body = [x for u in units[last + 1 :] for x in u]
            if last + 2 < len(units) and _has_chain(msgs, body, families):
                units[last + 1 :] = [body]
                openers[last + 1 :] = [False]
        self.units = units
        first_kept = max(0, len(units) - keep_last)
        # the opener of the first kept unit's turn is kept too
        keep_from = first_kept
        for k in range(first_kept, -1, -1):
            if k < len(units) and openers[k]:
                keep_from = k
                break
        kept_opener = keep_from if keep_from < first_kept else -1
        self.kept_units = [u for k, u in enumerate(units) if k >= first_kept or k == kept_opener]
        # the removal order: turn by turn, each unit of a turn, its opener with the last one
        assistant_first = user_first
        #: the kept part starts with an assistant turn (no opener before the tail) where the provider refuses one
        self.stuck_first = assistant_first and bool(self.kept_units) and not openers[keep_from]
        steps: list[_Step] = []
        k = 0
        lead = True  # before the first opener
        while k < first_kept:
            if openers[k]:
                lead = False
                opener = k
                k += 1
                answers: list[int] = []
                while k < first_kept and not openers[k]:
                    answers.append(k)
                    k += 1
                if opener == kept_opener:  # the answers before the kept tail go alone
                    steps.extend(self._step([a], False, "oldest first") for a in answers)
                elif not answers:
                    steps.append(self._step([opener], False, "oldest first (a message no answer follows)"))
                else:
                    steps.extend(self._step([a], False, "oldest first") for a in answers[:-1])
                    steps.append(self._step([opener, answers[-1]], False, "oldest first, with its turn's opener"))
            elif lead and assistant_first and not self.stuck_first:  # no opener before: goes whole, and always
                lead_units = []
                while k < first_kept and not openers[k]:
                    lead_units.append(k)
                    k += 1
                steps.append(self._step(lead_units, True, "the provider takes no assistant turn first"))
            else:
                steps.append(self._step([k], False, "oldest first"))
                k += 1
        self.steps = steps
        self.removed_steps = 0

    def _step(self, unit_ks: list[int], forced: bool, why: str) -> _Step:
        """The step of these units (ascending: their messages in order)."""
        units, counts = self.units, self.counts
        indexes = units[unit_ks[0]] if len(unit_ks) == 1 else [x for k in unit_ks for x in units[k]]
        return _Step(indexes, sum([counts[x] for x in indexes]), forced, why)

    def remove_until(self, over: int) -> int:
        """Remove steps (forced ones too, as they come) until ``over`` tokens are gone; the tokens removed."""
        steps = self.steps
        gone = 0
        while self.removed_steps < len(steps) and (gone < over or steps[self.removed_steps].forced):
            gone += steps[self.removed_steps].tokens
            self.removed_steps += 1
        return gone

    def removed(self) -> list[int]:
        return sorted(x for s in self.steps[: self.removed_steps] for x in s.indexes)

    def diagnostics(self) -> list[Problem]:
        out = []
        for s in self.steps[: self.removed_steps]:
            first, rest = s.indexes[0], s.indexes[1:]
            if len(rest) > 3:
                others = f" with {len(rest)} more (/{rest[0]} to /{rest[-1]})"
            else:
                others = " with " + ", ".join(f"/{x}" for x in rest) if rest else ""
            out.append(Problem(f"/{first}", "trim-removed", f"removed{others}: {s.tokens} tokens, {s.why}"))
        return out


def _summary_msg(value: Msg | str) -> Msg:
    if isinstance(value, str):
        return Msg(_SYSTEM, [TextBlock(text=value)])
    if not isinstance(value, Msg):
        raise wrong_type("/summarize", "summarize returns a Msg or a str", value)
    if value.role not in (_USER, _SYSTEM):
        raise ValidationError.single(
            "/summarize",
            "role",
            f"a summary is a USER or SYSTEM message (it goes first after the system prompt), not {value.role.value}",
        )
    return value


class _Trim:
    """One trim, in steps that :func:`trim` and :func:`atrim` share (the summary is asked for between them)."""

    def __init__(
        self,
        messages: Sequence[Msg],
        budget: int,
        provider: Any,
        model: str | None,
        tools: Sequence[Mapping[str, Any]] | None,
        counter: Counter | None,
        keep_last: int,
        request: Mapping[str, Any],
    ) -> None:
        require_count(budget, "budget", 0, "budget is a number of tokens (an int >= 0)")
        require_count(keep_last, "keep_last", 1, "keep_last is the number of latest units kept (an int >= 1)")
        if counter is not None and not callable(counter):
            raise wrong_type("/counter", "counter is a function of the messages", counter)
        from agentmsg.context.count import provider_of

        provider = provider_of(provider, model)
        #: what the counter's total holds beyond the messages (said when the budget cannot be met)
        self.beyond = "what the counter counts beyond the messages"
        #: the messages, each role a MsgRole member, each block of an agentmsg class (members, which refuses what is no
        #: list of messages; the only pass that checks them): what the plan tells roles apart in, and what the default
        #: counter counts; the result keeps the caller's own messages (msgs)
        self.checked = list(members(messages))
        self.msgs = list(messages)
        #: whether the counter is given the checked messages (the default: count_members, which checks them no more)
        #: or the caller's own (the caller's counter)
        self.own_counter = counter is None
        repairs: list[int] | None = None
        first: Counter | None = None
        if counter is None:
            from agentmsg.context.count import count_members

            counter = functools.partial(count_members, provider=provider, model=model, tools=tools, **request)
            #: (the first count: each message's share of the repair option's error results, apart in its count)
            repairs = [0] * len(self.checked)
            first = functools.partial(counter, repairs=repairs)
            self.beyond = "the request's framing and the tool definitions" if tools else "the request's framing"
        self.counted = self.checked if self.own_counter else self.msgs
        self.budget = budget
        self.counter = counter
        # (the total holds the tools and the request's framing too)
        counts, total = _counts(first or counter, self.counted)
        multi = bool(request.get("multi_agent"))
        agent = request.get("agent_name")
        #: what each message sends itself, as the provider's count prices it (the default counter's; None: a caller's)
        alone = [c - r for c, r in zip(counts, repairs, strict=True)] if repairs is not None else None
        # (what the registry's formatters make of each thinking block, for the rules that hold for every provider:
        # asked of a conversation that holds one, the formatters' modules loaded once)
        thinking = any(type(b) is ThinkingBlock for m in self.checked for b in m.content)
        sent = _sent(as_options(request.get("options")).reasoning == "text") if thinking else None
        self.plan = _Plan(
            self.checked, counts, _families(provider), keep_last, _rules(provider), multi, agent, alone, sent
        )
        self.kept_tokens = total
        self.summary: Msg | None = None
        #: the summary as the counter is given it (checked by members where the counter is the default)
        self.summary_counted: Msg | None = None
        self.room = True  # room could be made for the last summary offered
        #: the steps removed before any room was made for a summary: what goes back when the summary is left out
        self.base_steps: int | None = None
        self.notes: list[Problem] = []

    def fit(self, room: int) -> bool:
        """Remove oldest steps until the kept messages and ``room`` more tokens fit; False when they cannot."""
        self.kept_tokens -= self.plan.remove_until(self.kept_tokens + room - self.budget)
        return self.kept_tokens + room <= self.budget

    def removed_messages(self) -> list[Msg]:
        return [self.msgs[i] for i in self.plan.removed()]

    def offer(self, value: Msg | str) -> bool:
        """A summary: kept when it fits (True); else more goes to make room for one of its size, and False says
        whether to ask again (room was made: the next summary covers what went too) or give up."""
        summary = _summary_msg(value)
        if self.base_steps is None:
            self.base_steps = self.plan.removed_steps
        counted = members([summary])[0] if self.own_counter else summary
        counts, _ = _counts(self.counter, [counted])
        tokens = counts[0]
        if self.kept_tokens + tokens <= self.budget:
            self.summary, self.summary_counted = summary, counted
            return True
        self.room = self.fit(tokens)
        return False

    def restore(self) -> None:
        """The summary is left out: the steps removed only to make room for it come back (the result is what the
        oldest-first trim alone makes)."""
        if self.base_steps is not None and self.base_steps < self.plan.removed_steps:
            self.plan.removed_steps = self.base_steps

    def result(self, summary_tried: bool) -> Trimmed:
        if summary_tried:
            self.restore()
        removed = set(self.plan.removed())
        kept = [i for i in range(len(self.msgs)) if i not in removed]
        while True:
            out = [self.msgs[i] for i in kept]
            counted = [self.counted[i] for i in kept] if self.own_counter else out
            if self.summary is not None and self.summary_counted is not None:  # after the leading system messages kept
                checked = self.checked
                at = next((k for k, i in enumerate(kept) if checked[i].role is not _SYSTEM), len(kept))
                out = [*out[:at], self.summary, *out[at:]]
                counted = [*counted[:at], self.summary_counted, *counted[at:]] if self.own_counter else out
            counts, tokens = _counts(self.counter, counted)
            if tokens <= self.budget:
                break
            # the counter is not additive over messages: remove what is still over, and count again
            if self.plan.removed_steps == len(self.plan.steps):
                if self.summary is not None:  # the summary goes first; what went to make room for it comes back
                    self.summary = self.summary_counted = None
                    self.notes.append(Problem("", "trim-summary-dropped", "the summary does not fit the budget"))
                    self.restore()
                    removed = set(self.plan.removed())
                    kept = [i for i in range(len(self.msgs)) if i not in removed]
                    continue
                break
            self.plan.remove_until(tokens - self.budget)
            removed = set(self.plan.removed())
            kept = [i for i in range(len(self.msgs)) if i not in removed]
        diagnostics = self.plan.diagnostics()
        if self.summary is not None:
            diagnostics.append(Problem("", "trim-summarized", f"{len(removed)} removed messages replaced by a summary"))
        elif summary_tried:
            why = "no room can be made for it" if not self.room else f"none fits after {SUMMARY_TRIES} tries"
            self.notes.append(Problem("", "trim-summary-dropped", f"the summary is left out: {why}"))
        diagnostics.extend(self.notes)
        if self.plan.stuck_first:
            first = next(i for i, m in enumerate(self.checked) if i not in removed and m.role is not _SYSTEM)
            diagnostics.append(
                Problem(
                    f"/{first}",
                    "trim-assistant-first",
                    "the kept turns start with an assistant turn, which the"
                    " provider refuses: no user message comes before them",
                )
            )
        trimmed = Trimmed(tuple(out), tuple(sorted(removed)), self.summary, tokens, self.budget, tuple(diagnostics))
        if tokens > self.budget:
            raise TrimBudgetError(
                [Problem("", "trim-over-budget", self.over_budget(out, counts, tokens))], "conversation", trimmed
            )
        return trimmed

    def over_budget(self, kept: Sequence[Msg], counts: Sequence[int], tokens: int) -> str:
        """What the smallest result (``kept``, each message's count in ``counts``, ``tokens`` in all) holds, said by
        what it really is: its system messages and its latest turn where it has them, and what the count adds beyond
        the messages (the request's framing, the tool definitions)."""
        system = any(m.role is _SYSTEM for m in members(kept))
        parts = [
            what for what, has in (("the system messages", system), ("the latest turn", self.plan.kept_units)) if has
        ]
        over = f"over the budget of {self.budget}"
        n = sum(counts)
        if not parts:
            return f"{self.beyond} alone {_count_verb(self.beyond)} {tokens} tokens: {over}"
        what = " and ".join(parts)
        verb = _count_verb(what)
        if n == tokens:
            return f"{what} alone {verb} {tokens} tokens: {over}"
        return f"{what} alone {verb} {n} tokens, {tokens} with {self.beyond}: {over}"


def _count_verb(subject: str) -> str:
    """``count`` or ``counts``, as the subject (a description :meth:`_Trim.over_budget` makes) asks."""
    return "count" if " and " in subject or subject == "the system messages" else "counts"


def _strategy(strategy: str | None, summarize: Any) -> bool:
    if summarize is not None and not callable(summarize):
        raise wrong_type("/summarize", "summarize is a function of the removed messages", summarize)
    if strategy is None:
        return summarize is not None
    if strategy == "oldest":
        if summarize is not None:
            raise ValidationError.single(
                "/summarize", "strategy", "strategy='oldest' takes no summarize function (strategy='summarize' does)"
            )
        return False
    if strategy == "summarize":
        if summarize is None:
            raise ValidationError.single("/summarize", "strategy", "strategy='summarize' needs a summarize function")
        return True
    raise ValidationError.single("/strategy", "enum", f"unknown strategy {strategy!r}; known: 'oldest', 'summarize'")


def trim(
    messages: Sequence[Msg],
    budget: int,
    *,
    provider: str | Provider,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    strategy: Literal["oldest", "summarize"] | None = None,
    summarize: Summarize | None = None,
    counter: Counter | None = None,
    keep_last: int = 1,
    options: FormatOptions | Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    agent_name: str | None = None,
) -> Trimmed:
    """The conversation cut to ``budget`` tokens for ``provider`` (a registry name or a Provider), as the module
    says: system messages and the latest ``keep_last`` units (with their turn's opener) kept, whole units removed
    oldest first, each removal reported. ``strategy``: ``"oldest"`` (the default without ``summarize``) or
    ``"summarize"``: ``summarize(removed_messages)`` returns a Msg (USER or SYSTEM) or a text (made a SYSTEM message)
    inserted after the leading system messages. ``counter``: ``messages -> counts`` (an object with ``messages``
    and ``total``, or per-message counts); default :func:`agentmsg.context.count_tokens` with ``provider``,
    ``model``, ``tools`` and the request's ``options``, ``multi_agent`` and ``agent_name`` (as ``format_request``
    takes them: the request the trimmed conversation is sent in). Raises :class:`TrimBudgetError` when the kept part
    alone exceeds the budget, and
    ``ValueError`` for arguments of the wrong kind."""
    wants_summary = _strategy(strategy, summarize)
    request = {"options": options, "multi_agent": multi_agent, "agent_name": agent_name}
    t = _Trim(messages, budget, provider, model, tools, counter, keep_last, request)
    t.fit(0)
    if wants_summary and summarize is not None and t.plan.removed_steps:
        for _ in range(SUMMARY_TRIES):
            if t.offer(summarize(t.removed_messages())) or not t.room:
                break
    return t.result(wants_summary and bool(t.plan.removed_steps) and t.summary is None)


async def atrim(
    messages: Sequence[Msg],
    budget: int,
    *,
    provider: str | Provider,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    strategy: Literal["oldest", "summarize"] | None = None,
    summarize: ASummarize | None = None,
    counter: Counter | None = None,
    keep_last: int = 1,
    options: FormatOptions | Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    agent_name: str | None = None,
) -> Trimmed:
    """:func:`trim` with a ``summarize`` function that may be async (a coroutine function, or one returning an
    awaitable): an LLM call that writes the summary."""
    wants_summary = _strategy(strategy, summarize)
    request = {"options": options, "multi_agent": multi_agent, "agent_name": agent_name}
    t = _Trim(messages, budget, provider, model, tools, counter, keep_last, request)
    t.fit(0)
    if wants_summary and summarize is not None and t.plan.removed_steps:
        for _ in range(SUMMARY_TRIES):
            value = summarize(t.removed_messages())
            if inspect.isawaitable(value):
                value = await value
            if t.offer(value) or not t.room:
                break
    return t.result(wants_summary and bool(t.plan.removed_steps) and t.summary is None)
