"""The one pass every request formatter makes over a conversation.

:class:`Walk` goes through the messages once, in order. Before a message that answers no tool call
it reports the calls still open (orphans; with the repair option they get an error result); in the
multi-agent ``history`` layout it folds each run of other speakers' turns into one user turn; it
turns a message that no longer holds what its schema says into an ``invalid-message`` error; and it
sends the deferred parts (hints, media of tool results) as soon as no call is open. The two walks
built on it say how one message is sent: :class:`~._chat.ChatWalk` (a flat list of role messages:
OpenAI family, DashScope) and :class:`~._turns.TurnWalk` (alternating turns: Anthropic, Gemini).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmsg.blocks import TextBlock
from agentmsg.message import Msg, MsgRole

from . import _format as F
from ._format import Context

_USER, _ASSISTANT, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.TOOL


class Walk:
    """One pass over a conversation; subclasses implement the hooks below."""

    def __init__(self, ctx: Context, multi: bool, agent: str | None) -> None:
        self.ctx = ctx
        self.multi = multi
        self.agent = agent
        self.demote = ctx.options.reasoning == "text"  # reasoning='text': foreign or unsigned reasoning as text
        self.deferred: list[Any] = []  # sent once no call is open
        self.history_seen = False  # a folded run of other speakers was sent (history layout)

    # ---- hooks ----

    def text_turn(self, role: MsgRole, text: str, msg: Msg, i: int) -> bool:
        """Send message ``i``, a USER or ASSISTANT message holding one text block (the usual turn),
        in the shortest way; False when that text needs the general way (e.g. it is empty)."""
        raise NotImplementedError

    def user_message(self, msg: Msg, i: int, prefix: bool) -> None:
        """Send a USER message, or another speaker's ASSISTANT message (``prefix``: with its name)."""
        raise NotImplementedError

    def assistant_message(self, msg: Msg, i: int) -> None:
        raise NotImplementedError

    def tool_message(self, msg: Msg, i: int) -> None:
        raise NotImplementedError

    def system_message(self, msg: Msg, i: int) -> None:
        raise NotImplementedError

    def fold(self, group: list[tuple[int, Msg]]) -> None:
        """Send a run of other speakers' turns as one user turn (multi-agent ``history`` layout)."""
        raise NotImplementedError

    def repair(self, sent: str, tool: str) -> None:
        """Send the synthetic error result of an unanswered call (its id and tool name as sent)."""
        raise NotImplementedError

    def send_deferred(self) -> None:
        """Send the deferred parts (and forget them)."""
        raise NotImplementedError

    def result(self) -> list[dict[str, Any]]:
        """What the walk built: the messages or turns of the request."""
        raise NotImplementedError

    # ---- the pass ----

    def run(self, msgs: Sequence[Msg]) -> list[dict[str, Any]]:
        ctx = self.ctx
        history = self.multi and ctx.options.multi_agent_layout == "history"
        group: list[tuple[int, Msg]] = []
        open_calls = ctx.open_calls
        deferred = self.deferred
        multi = self.multi
        text_turn = self.text_turn
        for i, msg in enumerate(msgs):
            role = msg.role
            if history:
                if F.is_history_message(msg, self.agent):
                    if open_calls:
                        self.orphans()
                    group.append((i, msg))
                    continue
                if group:
                    self._fold(group)
            try:
                if open_calls and role is not _TOOL and not F.has_result(msg):
                    self.orphans()
                if role is _USER or role is _ASSISTANT:
                    content: list[Any] = msg.content
                    if (
                        not multi
                        and len(content) == 1
                        and type(content[0]) is TextBlock
                        and text_turn(role, content[0].text, msg, i)
                    ):
                        pass  # the usual turn, one text block: sent the short way
                    elif role is _USER:
                        self.user_message(msg, i, multi)
                    elif multi and not F.is_current_agent(msg, self.agent) and not F.has_tool_use(msg):
                        self.user_message(msg, i, True)
                    else:
                        self.assistant_message(msg, i)
                elif role is _TOOL:
                    self.tool_message(msg, i)
                else:
                    self.system_message(msg, i)
            except (AttributeError, TypeError, KeyError) as exc:
                raise F.broken_message(i, exc) from None
            if deferred and not open_calls:
                self.send_deferred()
        if group:
            self._fold(group)
        if open_calls:
            self.orphans()
        self.send_deferred()
        return self.result()

    def _fold(self, group: list[tuple[int, Msg]]) -> None:
        self.fold(group)
        self.history_seen = True
        group.clear()
        if self.deferred and not self.ctx.open_calls:
            self.send_deferred()

    def orphans(self) -> None:
        """Report the open calls as orphans (before a turn that answers none, or at the end)."""
        repair = self.ctx.options.repair
        for sent, tool in F.orphan_calls(self.ctx):
            if repair:
                self.repair(sent, tool)
