"""Hypothesis strategies for whole conversations that a provider takes as they are: a system prompt, then turns
(a user message, then assistant steps: text, reasoning with its signature, parallel tool calls answered by TOOL
messages or, AgentScope's way, in the calling message, images in user messages and in tool results; call ids unique
or numbered per turn), every call answered before the next turn. Long and
tool-heavy when asked (``max_turns``, ``max_steps``); each thinking block carries the provider and signature of
the family under test, so the Anthropic signature chain is exercised."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from agentmsg import Base64Source, ImageBlock, Msg, MsgRole, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
words = st.text(st.characters(codec="utf-8", categories=["L", "N", "Zs", "P"]), min_size=1, max_size=60).filter(
    lambda t: not t.isspace()
)


def _image() -> ImageBlock:
    return ImageBlock(source=Base64Source(media_type="image/png", data=_PNG))


@st.composite
def _user(draw: st.DrawFn) -> Msg:
    blocks: list[Any] = [TextBlock(text=draw(words))]
    if draw(st.integers(0, 5)) == 0:
        blocks.append(_image())
    return Msg(MsgRole.USER, blocks)


@st.composite
def _step(draw: st.DrawFn, ids: Any, thinking: str | None, final: bool) -> list[Msg]:
    """One assistant step: reasoning first (when ``thinking`` names its provider), then text and/or calls; when
    it calls tools, the TOOL messages answering them follow (one per call, or one for all)."""
    blocks: list[Any] = []
    if thinking is not None and draw(st.booleans()):
        blocks.append(ThinkingBlock(thinking=draw(words), metadata={"provider": thinking, "signature": draw(words)}))
    calls = 0 if final else draw(st.integers(0, 3))
    if calls == 0 or draw(st.booleans()):
        blocks.append(TextBlock(text=draw(words)))
    uses = []
    for _ in range(calls):
        cid = f"call_{next(ids)}"
        uses.append(
            ToolUseBlock(id=cid, name=draw(st.sampled_from(["search", "read_file", "shell"])), input={"q": draw(words)})
        )
    blocks.extend(uses)
    results = []
    for use in uses:
        output: list[Any] = [TextBlock(text=draw(words))]
        if draw(st.integers(0, 6)) == 0:
            output.append(_image())
        results.append(ToolResultBlock(id=use.id, name=use.name, output=output))
    if results and draw(st.integers(0, 5)) == 0:  # AgentScope's way: the results in the calling message itself
        return [Msg(MsgRole.ASSISTANT, [*blocks, *results])]
    out = [Msg(MsgRole.ASSISTANT, blocks)]
    if results:
        if draw(st.booleans()):
            out.append(Msg(MsgRole.TOOL, results))
        else:
            out.extend(Msg(MsgRole.TOOL, [r]) for r in results)
    return out


@st.composite
def conversations(
    draw: st.DrawFn,
    thinking: str | None = None,
    max_turns: int = 6,
    max_steps: int = 4,
    end_with_user: bool | None = None,
) -> list[Msg]:
    """A system prompt (sometimes none), then 1..max_turns turns of a user message and 0..max_steps assistant
    steps; the last turn ends with a user message or an assistant answer. ``thinking``: the provider family its
    reasoning is marked with (None: no reasoning)."""
    counter = iter(range(10**9))
    out: list[Msg] = []
    if draw(st.integers(0, 4)):
        out.append(Msg(MsgRole.SYSTEM, [TextBlock(text=draw(words))]))
    turns = draw(st.integers(1, max_turns))
    per_turn = draw(st.booleans())  # call ids numbered per turn (call_0 in every turn), as some providers do
    for turn in range(turns):
        if per_turn:
            counter = iter(range(10**9))
        out.append(draw(_user()))
        last = turn == turns - 1
        if last and (end_with_user if end_with_user is not None else draw(st.booleans())):
            break
        steps = draw(st.integers(1, max_steps))
        for s in range(steps):
            out.extend(draw(_step(counter, thinking, s == steps - 1)))
    return out
