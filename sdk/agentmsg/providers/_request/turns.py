"""The walk shared by providers whose requests are alternating turns of blocks (Anthropic, Gemini).

System messages become the top-level system prompt; USER and TOOL messages, tool results and hints
go into user turns; the current agent's ASSISTANT messages into assistant (model) turns. Consecutive
parts of one role form one turn (every merge of two input messages is reported), so parallel tool
results always land in the one user turn after the calls. Thinking parts stay where the model put
them, unless the provider's hook sends one first in its turn (Anthropic: see its ``thinking_part``), which
is reported when that moves it. A provider module subclasses :class:`TurnWalk` and supplies the block shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmsg.blocks import HintBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request import context as F
from agentmsg.providers._request.common import MINTED_ID
from agentmsg.providers._request.context import Context
from agentmsg.providers._request.walk import Walk, split_at

_USER, _ASSISTANT, _SYSTEM, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM, MsgRole.TOOL
USER = "user"
#: a cut on the system prompt: (SYSTEM, index of its text in ``TurnWalk.system``)
SYSTEM = "system"


class TurnWalk(Walk):
    """One pass over the conversation. Subclasses set ``assistant_role`` and ``parts_key`` and
    implement the ``*_part`` hooks; each returns a part or ``None`` (nothing to send, already reported)."""

    parts_key = "content"
    #: a call whose id agentmsg minted (tool_use metadata ``agentmsg_minted_id``: the provider gave none) is sent
    #: with it, and so is its result; else (Gemini, which matches id-less calls and responses by name and order)
    #: both go without an id (``sent`` is ""), as the provider gave the call
    minted_ids = True
    hot_flags = (*Walk.hot_flags, "assistant_role", "parts_key", "typed_text", "minted_ids")

    def __init__(self, ctx: Context, multi: bool, agent: str | None) -> None:
        assert not ctx.id_max, "turn providers limit the characters of tool-call ids only"
        super().__init__(ctx, multi, agent)
        self.turns: list[dict[str, Any]] = []
        # the turn being built is the last of ``turns``: its role, its part list, the thinking parts
        # that go to its start when it closes, and the last message that put a part in it (-1: none)
        self.role: str | None = None
        self.parts: list[Any] = []
        self.lead: list[Any] = []
        self.last_i = -1
        self.system: list[tuple[str, int]] = []  # (text, message index)
        self.first_turn = 0  # index of the first message that is not a system message (set by run)
        self.earlier = False  # a piece before the one being sent (Walk.next_piece) sent something

    # ---- hooks ----

    def text_part(self, text: str) -> Any:
        raise NotImplementedError

    def thinking_part(self, block: ThinkingBlock, i: int, j: int, prev: Any) -> Any:
        """(first in the turn?, part) for the target provider's own reasoning, or None. ``prev``:
        the part the message put last in the turn so far, apart from thinking (None: none). A part
        that goes first when the message does not start with it, or when the message is merged into
        an assistant turn that holds parts already, is reported ``thinking-moved``."""
        raise NotImplementedError

    def tool_use_part(self, block: ToolUseBlock, sent: str, tool: str, i: int, j: int) -> Any:
        """The part of a tool call; ``sent`` is its id and ``tool`` its name as sent."""
        raise NotImplementedError

    def tool_result_part(
        self, block: ToolResultBlock, sent: str, tool: str | None, i: int, j: int, text: str | None
    ) -> Any:
        """The part of a tool result; ``sent`` is its id as sent, ``tool`` the tool name (as sent) of
        the call it answers (None: an orphan), ``text`` the text of its output when that is one text block (the
        usual result: :func:`one_text`), else None."""
        raise NotImplementedError

    def media_part(self, block: Any, pointer: str, assistant: bool) -> Any:
        raise NotImplementedError

    def repair_part(self, sent: str, tool: str) -> Any:
        raise NotImplementedError

    def is_call(self, part: Any) -> bool:
        """Whether a part of an assistant turn is a tool call's."""
        raise NotImplementedError

    # ---- turns ----

    def emit(self, role: str, rest: list[Any], i: int, lead: list[Any] | None = None) -> None:
        """Add a message's parts to the turn of ``role`` (a new turn when the role changes): ``rest``
        after what the turn holds, ``lead`` (thinking parts, already reported when that moves them) first in it."""
        if role != self.role:  # close the turn being built, start one
            if self.lead:
                self.parts[:0] = self.lead
                self.lead = lead or []
            elif lead:
                self.lead = lead
            self.role = role
            self.parts = rest
            self.turns.append({"role": role, self.parts_key: rest})
            self.last_i = i
            return
        if i >= 0 and self.last_i >= 0 and i != self.last_i:
            self.ctx.report(f"/{i}", "turns-merged", f"merged into the {role} turn before it")
        if lead:
            self.lead.extend(lead)
        self.parts.extend(rest)
        if i >= 0:
            self.last_i = i

    def put(self, role: str, part: Any, i: int) -> None:
        """Add one part to the turn of ``role``; ``i`` is the message it comes from (-1: generated,
        never reported as merged)."""
        self.emit(role, [part], i)

    # ---- walk ----

    def run(self, msgs: Sequence[Msg], start: int = 0) -> list[dict[str, Any]]:
        first = len(msgs)
        for i in range(start, first):  # (a loop, not a generator: no frame made per call)
            if msgs[i].role is not _SYSTEM:
                first = i
                break
        self.first_turn = first
        if start:
            self._held_calls(msgs, start)
        return super().run(msgs, start)

    def _held_calls(self, msgs: Sequence[Msg], start: int) -> None:
        """The tool calls a cache holds (the messages before ``start``, not sent: Gemini's cachedContent) that are
        still open where the request starts: a result after it answers its call (it was said to be an orphan, and
        with the repair option left out, the cache's call then answered by nothing), sent with the id and the name
        the call went with; a call no result answers is an orphan, as any."""
        ctx = self.ctx
        open_calls = ctx.open_calls
        for i in range(start):
            blocks: list[Any] = msgs[i].content
            for j, b in enumerate(blocks):
                t = type(b)
                if t is ToolUseBlock:
                    open_calls[b.id] = (*self._sent_call(b, i, j), b.name, i, j)
                elif t is ToolResultBlock:
                    open_calls.pop(b.id, None)

    def _sent_call(self, b: ToolUseBlock, i: int, j: int) -> tuple[str, str]:
        """A call's id and tool name as sent (what :meth:`assistant_message` sends, inline there)."""
        ctx = self.ctx
        cid = b.id
        id_bad = ctx.id_bad
        sent = cid if id_bad is None or (cid and id_bad(cid) is None) else ctx.sent_id(cid, (i, j))
        if not self.minted_ids and b.metadata and b.metadata.get(MINTED_ID) == cid:
            sent = ""
        return sent, ctx.tool_name_cache.get(b.name) or ctx.tool_name(b.name, f"/{i}/content/{j}/name")

    def text_turn(self, role: MsgRole, text: str, msg: Msg, i: int) -> bool:
        if not text or text.isspace():
            return False
        part = {"type": "text", "text": text} if self.typed_text else {"text": text}
        turn = self.assistant_role if role is _ASSISTANT else USER
        if turn != self.role and not self.lead:  # a new turn (emit's first case, inline: the usual one)
            self.role = turn
            self.parts = parts = [part]
            self.turns.append({"role": turn, self.parts_key: parts})
            self.last_i = i
        else:
            self.emit(turn, [part], i)
        if self.marks:
            marked = self.marked(i, msg.content)
            if marked:
                self._cut_rest(i, 0, marked, [part])
        if msg.name:  # turns have no name field: said once for the request (Context.finish); in multi-agent
            self.ctx.names_dropped.append(i)  # mode only a system or tool message's (the others' are in their text)
        return True

    def fold(self, group: list[tuple[int, Msg]]) -> bool:
        parts = F.history_parts(group, self.ctx, not self.history_seen, self.text_part, self._history_media, self._hint)
        if parts:
            self.emit(USER, parts, group[0][0])
        if self.marks:  # a marked message folded into the history turn: the turn so far is its breakpoint
            for i, msg in group:
                if self.marked(i, msg.content):
                    self.cut(i, None, parts)
        if not parts:
            return False
        self.last_i = group[-1][0]
        return True

    def _history_media(self, block: Any, pointer: str) -> Any:
        part = self.media_part(block, pointer, False)
        return part if part is not None else self.text_part(F.block_label(block))

    def send_deferred(self) -> None:
        for part in self.deferred:
            self.put(USER, part, -1)
        self.deferred.clear()

    def repair(self, sent: str, tool: str) -> None:
        self.put(USER, self.repair_part(sent, tool), -1)

    def result(self) -> list[dict[str, Any]]:
        if self.lead:  # close the last turn
            self.parts[:0] = self.lead
            self.lead = []
        return self.turns

    def system_message(self, msg: Msg, i: int) -> None:
        ctx = self.ctx
        hoisted = i > self.first_turn
        blocks: list[Any] = msg.content
        sent = len(self.system)
        marked = self.marked(i, blocks) if self.marks else None
        for j, b in enumerate(blocks):
            if type(b) is TextBlock:
                if b.text and not b.text.isspace():
                    self.system.append((b.text, i))
                else:  # a system text block must hold text (Anthropic), a part must not be empty (Gemini)
                    ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty system text not sent")
            else:
                ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a system message")
            if marked and j in marked:  # the system prompt's text sent last so far: ("system", its index)
                self.cuts.append((i, j, (SYSTEM, len(self.system) - 1) if len(self.system) > sent else None))
        if marked:
            self._cut_rest(i, len(blocks), marked, ())
        if len(self.system) == sent:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this system message")
            return
        if hoisted:
            ctx.report(f"/{i}", "system-hoisted", "system message moved to the top-level system prompt")
        if msg.name:  # in multi-agent mode too: a system prompt carries no speaker
            self.ctx.names_dropped.append(i)

    def user_text(self, text: str) -> Any:
        return None if not text or text.isspace() else self.text_part(text)

    def user_media(self, block: Any, pointer: str) -> Any:
        return self.media_part(block, pointer, False)

    def user_message(self, msg: Msg, i: int, prefix: bool) -> bool:
        marks = self.marks  # (a marked message goes the general way, which places its cuts)
        general = prefix or (marks is not None and i in marks)
        parts = None if general else self.usual_user_parts(msg.content)
        looked = parts is not None  # (the usual parts: looked at as they were made)
        if parts is None:
            parts = self.user_parts(msg, i, prefix)
        if parts:
            self.emit(USER, parts, i)
            if msg.name and not self.multi:
                self.ctx.names_dropped.append(i)
        return looked

    def assistant_message(self, msg: Msg, i: int) -> bool:
        ctx = self.ctx
        quick = self.quick
        # looked at as the blocks are sent (Quick): texts and calls have nothing but unknown keys to say
        looked = quick.text and quick.call and quick.thinking is not None
        thinking_keys = quick.thinking
        other = self.multi and not F.is_current_agent(msg, self.agent)
        label = f"[{F.speaker_label(msg)}]: " if other else ""
        lead: list[Any] = []  # thinking parts, first in the turn
        # merged into the assistant turn before (when it puts a part): parts it holds come before this message's
        merging = self.role == self.assistant_role and bool(self.parts or self.lead)
        rest: list[Any] = []
        results: list[tuple[Any, int]] | None = None  # (made for the first: an assistant message seldom holds one)
        open_calls = ctx.open_calls
        typed = self.typed_text
        id_bad = ctx.id_bad  # turn providers limit the characters of tool-call ids only
        tool_names = ctx.tool_name_cache
        blocks: list[Any] = msg.content
        marked = self.marked(i, blocks) if self.marks else None
        j = ctx.before_piece  # the block's index (counted: cheaper than an enumerate per message)
        if j >= 0:  # (a later piece: Walk.next_piece)
            blocks = blocks[j + 1 :]
        for b in blocks:
            j += 1
            if marked is not None and j - 1 in marked and j - 1 > ctx.before_piece:
                self.cut(i, j - 1, rest)
            t = type(b)
            # (each kind reads its unknown keys in its own branch: ChatWalk.assistant_message says why)
            if t is TextBlock:
                if b.unknown_keys is not None:
                    looked = False
                if label:
                    text = label + b.text
                    label = ""
                    if ctx.before_piece < 0:  # (said once a message: each piece's first text is labelled)
                        F.prefix_name(ctx, msg, i)
                else:
                    text = b.text
                if not text or text.isspace():
                    ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty text block not sent")
                    continue
                rest.append({"type": "text", "text": text} if typed else {"text": text})
            elif t is ToolUseBlock:  # (the id and the tool name as sent: _sent_call, inline)
                if b.unknown_keys is not None:
                    looked = False
                cid = b.id
                name = b.name
                sent = cid if id_bad is None or (cid and id_bad(cid) is None) else ctx.sent_id(cid, (i, j))
                if not self.minted_ids and b.metadata and b.metadata.get(MINTED_ID) == cid:
                    sent = ""
                tool = tool_names.get(name) or ctx.tool_name(name, f"/{i}/content/{j}/name")
                if b.content is not None:  # reports raw arguments that are not a JSON object
                    F.tool_arguments(b, ctx, f"/{i}/content/{j}")
                rest.append(self.tool_use_part(b, sent, tool, i, j))
                open_calls[cid] = (sent, tool, name, i, j)
            elif t is ThinkingBlock:
                meta = b.metadata
                if b.unknown_keys is not None or (meta and thinking_keys and not thinking_keys.isdisjoint(meta)):
                    looked = False
                if meta and (F.PROVIDER_BLOCK in meta or F.CITATIONS in meta):  # provider data kept in its place
                    part = self.carrier(meta, i, j, rest[-1] if rest else None, other)
                    if part is not None:  # (none: dropped, its text and all, and said by carrier)
                        F.stand_in_said(ctx, b, (i, j), "its provider data")
                        rest.append(part)
                    continue
                if other:
                    ctx.report(f"/{i}/content/{j}", "thinking-dropped", "reasoning of another agent is not sent")
                    continue
                origin = meta.get("provider") if meta else None
                if origin is not None and origin not in ctx.families:  # reasoning from another provider
                    if not self.demote:
                        ctx.diagnostics.append(((i, j), "thinking-dropped", (F.FOREIGN_DROPPED, origin, ctx.provider)))
                    elif F.foreign_reasoning(ctx, b, f"/{i}/content/{j}", origin, True) == F.DEMOTE:
                        rest.append(self.text_part(b.thinking))
                    continue
                part = self.thinking_part(b, i, j, rest[-1] if rest else None)
                if part is not None:
                    first, part = part
                    if first:
                        if rest or merging:
                            ctx.report(f"/{i}/content/{j}", "thinking-moved", "thinking moved to the start of the turn")
                        lead.append(part)
                    else:
                        rest.append(part)
            elif t is ToolResultBlock:
                if results is None:
                    results = []
                results.append((b, j))
                looked = False
                # where the next piece starts (0: none; set with results: the usual message, of none, pays nothing)
                stop = split_at(msg.content, j)
                if stop:  # (more of the reply after the results: the next piece, its own turn after them)
                    hints: list[Any] = msg.content
                    for k in range(j + 1, stop):  # (the hints right after the results)
                        self._hint(hints[k], i, k)
                    if label and ctx.before_piece < 0:  # (no text of this piece holds the label: a later one's does)
                        F.prefix_name(ctx, msg, i)
                    break
            elif t is HintBlock:
                self._hint(b, i, j)
                looked = False
            else:
                looked = False
                part = self.media_part(b, f"/{i}/content/{j}", True)
                if part is not None:
                    rest.append(part)
        if marked:
            if results is not None and stop:  # (the blocks up to the next piece; its blocks are its own)
                for k in sorted(marked):
                    if j <= k < stop:
                        self.cut(i, k, rest)
            else:
                self._cut_rest(i, j, marked, rest)
        put = bool(lead or rest)
        if put:
            self.emit(self.assistant_role, rest, i, lead)
            if msg.name and (label or not self.multi):  # (another agent's name is in its first text: with none, none)
                self.ctx.names_dropped.append(i)
        if results is not None:
            if not put and msg.name:  # results alone: sent as a tool message's, whose name is said in every mode
                self.ctx.names_dropped.append(i)
            for b, j in results:
                put = self._result(b, i, j) or put
            if stop:
                self.earlier = put or self.earlier
                looked = self.next_piece(msg, i, stop) and looked
                self.earlier = False
                return looked
        if not put and not self.earlier:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
        return looked

    def tool_message(self, msg: Msg, i: int) -> bool:
        ctx = self.ctx
        looked = self.quick.result  # (the usual results, looked at as they are sent: Quick)
        parts: list[Any] = []
        open_calls = ctx.open_calls
        blocks: list[Any] = msg.content
        marked = self.marked(i, blocks) if self.marks else None
        j = -1  # the block's index (counted: cheaper than an enumerate per message)
        for b in blocks:
            j += 1
            if marked is not None and j - 1 in marked:
                self.cut(i, j - 1, parts)
            t = type(b)
            if t is ToolResultBlock:
                call = open_calls.pop(b.id, None)
                output = b.output
                if len(output) == 1 and type(first := output[0]) is TextBlock:  # (one_text, inline)
                    text = first.text
                    if b.unknown_keys is not None or first.unknown_keys is not None:
                        looked = False
                else:
                    text = None
                    looked = False
                if call is not None:
                    # (a method call per result: 3.11 specializes it, not the read of a bound method)
                    parts.append(self.tool_result_part(b, call[0], call[1], i, j, text))
                else:
                    part = self._orphan_result(b, i, j)
                    if part is not None:
                        parts.append(part)
            elif t is HintBlock:
                self._hint(b, i, j)
                looked = False
            else:
                looked = False
                ctx.report(
                    f"/{i}/content/{j}", "block-dropped", f"{b.type} block outside a tool result in a TOOL message"
                )
        if marked:
            self._cut_rest(i, j, marked, parts)
        if parts:
            self.emit(USER, parts, i)
        elif not msg.content:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
        if msg.name and blocks:  # not carried in the text in multi-agent mode either (nor with a hint placed
            self.ctx.names_dropped.append(i)  # elsewhere, a block dropped or an orphan left out: no part sent)
        return looked

    def _orphan_result(self, b: ToolResultBlock, i: int, j: int) -> Any:
        """The part of a tool result that answers no open call (reported; None when repair leaves it out)."""
        ctx = self.ctx
        pointer = f"/{i}/content/{j}"
        ctx.report(pointer, "tool-result-orphan", f"tool result {b.id!r} answers no open tool call")
        if ctx.options.repair:
            ctx.report(pointer, "tool-result-dropped", f"orphaned tool result {b.id!r} left out")
            return None
        return self.tool_result_part(b, ctx.sent_id(b.id, pointer), None, i, j, one_text(b))

    def _result(self, b: ToolResultBlock, i: int, j: int) -> bool:
        """A tool result inside an assistant message: its own part of the user turn after."""
        call = self.ctx.open_calls.pop(b.id, None)
        if call is not None:
            part = self.tool_result_part(b, call[0], call[1], i, j, one_text(b))
        else:
            part = self._orphan_result(b, i, j)
            if part is None:
                return False
        self.emit(USER, [part], i)
        return True

    def _hint(self, b: HintBlock, i: int, j: int) -> None:
        if not b.hint.strip():  # (no provider of these walks takes a text part of no text: as a text block's)
            self.ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty hint not sent")
            return
        self.ctx.report(f"/{i}/content/{j}", "hint-placed", "hint sent as user text after this turn")
        self.deferred.append(self.text_part(b.hint))

    def between(self, msg: Msg, i: int) -> bool:
        """The text parts go into the assistant turn being built, before its first call."""
        parts = self.parts
        if self.role != self.assistant_role:
            return False
        at = next((k for k, part in enumerate(parts) if self.is_call(part)), -1)
        if at < 0:
            return False
        parts[at:at] = self.between_texts(msg, i, True, True, self.text_part)  # (no empty text, nor one of whitespace)
        return True

    def system_texts(self) -> list[str]:
        return [t for t, _ in self.system]


def one_text(block: ToolResultBlock) -> str | None:
    """The text of a tool result's output when that is one text block (the usual result), else None."""
    output: list[Any] = block.output
    return output[0].text if len(output) == 1 and type(output[0]) is TextBlock else None
