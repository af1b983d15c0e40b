"""The request's structure across messages, for the count: how many messages, turns or items the request opens for
each message of a conversation (:class:`Frames`), as the formatters shape it (``providers/_request/walk.py``): merged
turns, one system prompt, text ahead of a call, parallel results, left-out messages, repair results, the multi-agent
layouts. :func:`agentmsg.context.count.count_tokens` frames each message by it, in its one pass over the
conversation.

It restates the formatters' merge rules (running a formatter costs about as much as the count itself);
``tests/context/test_count.py`` holds it to the bodies the formatters build, on written and on seeded random
conversations."""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any, Final

from agentmsg.blocks import HintBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request.context import (
    MEDIA,
    has_result,
    has_tool_use,
    is_carrier,
    is_current_agent,
    is_history_message,
    reasoning_item,
)
from agentmsg.providers._request.walk import answered_after, orphans_calls
from agentmsg.providers.spec import TokenProfile

__all__ = [
    "AS_TEXT",
    "DROPPED",
    "REASONING",
    "SENT_BY",
    "Frames",
    "dropping",
    "kept",
    "reasoning_sent",
    "sent_by",
    "text_alone",
]

#: the roles, read once (an enum member's lookup on its class costs about ten times a global's)
_USER, _ASSISTANT, _SYSTEM, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM, MsgRole.TOOL


class Frames:
    """How many messages, turns or items the request opens for each message (each framed once, ``per_message``), as
    the formatters shape the request across messages (``providers/_request/walk.py``): a user message with nothing
    to send is left out; assistant text between a tool call and its result goes ahead of the call, into the message
    or turn that holds it (:func:`answered_after`; the Responses API puts a run of it in one message item), joined
    to the text there by a newline (the chat family, the Responses API: :attr:`newline`); the leading system
    messages are one instruction (``leading_system``: every one of them, each joined to the one before by a
    newline); in the turn family (``turns``) every system message is in the one system prompt, and the messages
    that send parts of one role one after another are one turn, hints sent as parts of a user turn once no call is
    open; each tool result is a message of its own (``result_messages``), the message that holds it one more when
    it holds more than results; the calls still open before a message that answers none, or at the end, are
    orphans (:meth:`Walk.orphans`): with the ``repair`` option each gets an error result (:attr:`repaired`: a tool
    message or output item each, a part of a user turn in the turn family), and a result that answers no open call
    is left out (:attr:`dropped`). In multi-agent mode (``multi``, the current agent ``agent``) another speaker's
    turn (a user message, another agent's assistant message of no call and no result) is a user turn
    (:attr:`prefixed`: ``[Name]: `` before its first text, so a text is sent even when empty), text between a call and
    its result goes ahead of the call only when the current agent's; in the ``history`` layout a run of other
    speakers' turns (:func:`is_history_message`) is one user turn, opened by the first of them that sends a line or a
    medium (:attr:`folding`). Fed the messages in order (:meth:`of`), then :meth:`end`."""

    __slots__ = (
        "agent",
        "apart",
        "call_turn",
        "calls",
        "demote",
        "drop",
        "dropped",
        "families",
        "folded",
        "folding",
        "held",
        "hints",
        "history",
        "items",
        "joined",
        "leading",
        "msgs",
        "multi",
        "newline",
        "other",
        "own",
        "prefixed",
        "profile",
        "repair",
        "repaired",
        "repairs_framed",
        "result_messages",
        "role",
        "speaker",
        "started",
        "system",
        "tail",
        "turns",
        "until",
        "waiting",
    )

    def __init__(
        self,
        profile: TokenProfile,
        msgs: Sequence[Msg],
        repair: bool,
        multi: bool = False,
        agent: str | None = None,
        history: bool = False,
        families: Container[str] = (),
        demote: bool = False,
    ) -> None:
        self.msgs = msgs
        self.profile = profile
        self.families = families
        self.demote = demote
        self.multi = multi
        self.agent = agent
        self.history = history  # (multi-agent ``history`` layout)
        self.folding = False  # a folded run of other speakers' turns sends a user turn (the history layout)
        self.turns = profile.turns
        self.items = profile.items
        self.leading = profile.leading_system
        self.result_messages = profile.result_messages
        self.repair = repair
        self.drop = dropping(profile)  # which texts (and hints) are left out
        self.calls: set[str] = set()  # the calls not answered yet
        self.speaker: str | None = None  # the name on the message of the last call
        self.until = -1  # the result that ends the run of text between a call and it (-1: none)
        self.system = False  # the system prompt or instruction is framed already
        self.started = False  # a message other than a system message came (the leading ones are over)
        self.role = ""  # the role of the turn being built (the turn family)
        self.call_turn = False  # the turn being built is the assistant turn of the open calls (the turn family)
        self.waiting = False  # hints wait for no open call, then go after the last item (the Responses API)
        self.hints = False  # hints wait for no call to be open (the turn family)
        self.joined = False  # text between a call and its result has a message item to join (the Responses API)
        #: what the item the request holds last is (the Responses API): 1 an assistant message item, 2 a call, 0 else
        self.tail = 0
        self.apart = False  # a message was sent after the one of the open calls
        self.held = False  # the chat message of the open calls holds text, which text between joins (the chat family)
        #: of the message :meth:`of` was given last: the error results the repair option sent before it (or, from
        #: :meth:`end`, after the last) and the frames they open (of those :meth:`of` gives), the newlines that join
        #: its text to text before it, the results of it left out (repair), and whether it is sent as a message of its
        #: own (not merged, not only results)
        self.repaired = 0
        self.repairs_framed = 0
        self.newline = 0
        self.dropped: list[Any] = []
        self.own = True
        #: of the message :meth:`of` was given last, in multi-agent mode: folded into the history turn; sent as another
        #: speaker's user turn (``[Name]: text``); another agent's assistant message (its reasoning not sent)
        self.folded = False
        self.prefixed = False
        self.other = False

    def of(self, i: int, msg: Msg, later_piece: bool = False) -> int:
        """The frames the request opens for message ``i`` (and for the repair results sent before it). ``later_piece``:
        ``msg`` is a piece of message ``i`` after its first (:func:`~agentmsg.providers._request.walk.pieces`), after
        whose calls' results the hints waiting are sent before it, once no call is open (:meth:`Walk.next_piece`)."""
        role = msg.role
        blocks: list[Any] = msg.content if role is not _TOOL else sent_by(role, msg.content)  # (a call there: none)
        calls = self.calls
        self.repaired = self.newline = self.repairs_framed = 0
        self.own = True
        if self.dropped:
            self.dropped = []
        n = 0
        if self.multi:
            whole = self.msgs[i]  # (the message of a piece: count.py frames one of several model calls by piece)
            if self.history and is_history_message(whole, self.agent):
                return self._fold(blocks)
            self.folding = self.folded = False
            self.other = other = role is _ASSISTANT and not is_current_agent(whole, self.agent)
            self.prefixed = role is _USER or (other and not has_tool_use(whole) and not has_result(whole))
        if calls and orphans_calls(msg):
            if (
                role is _ASSISTANT
                and (self.call_turn if self.turns else not self.apart)
                and (self.until > i or (self._alone(msg) and self._answered(i)))
            ):  # (text between a call and its result: merged ahead of the call, when the calls are what the request
                # ends with)
                self.own = False
                return self._between(blocks)
            n = self._orphans()
        if later_piece and self.hints and not calls:  # (in the user turn of the results before it)
            n += self._hints(False)
        if role is _SYSTEM:
            if self.turns or (self.leading and not self.started):
                if self.system:
                    self.own = False
                    self.newline = 0 if self.turns else 1  # (the Responses API: each leading one, joined by newlines)
                elif self.turns and not self._texts(blocks):
                    self.own = False
                else:
                    self.system = True
                    n += 1
            elif self.drop and not self._texts(blocks):  # (nothing to send: left out)
                self.own = False
            else:
                n += 1
                self.tail = 0
            return n + self._hints(False)
        self.started = True
        multi = self.multi
        if multi and self.prefixed:
            role = _USER  # (another speaker's turn: a user turn)
        assistant = role is _ASSISTANT
        items = self.items
        drop = self.drop
        # (its first text carries the speaker's label, sent even when empty: a user turn's, the turn family's)
        labelled = multi and (self.prefixed or (self.other and self.turns))
        sends = False  # it opens or joins a turn of its role
        results = 0  # the results it sends
        hints = False
        last: Any = None  # the kind of the block before the run of calls
        calls_of = False  # a call of it came
        tail = self.tail if assistant else 0  # what the item it sends last is (:attr:`tail`)
        for b in blocks:
            kind = type(b)
            if kind is TextBlock:
                text = b.text
                if labelled or not drop or (text and (drop == 1 or not text.isspace())):  # (a text sent: kept, inline)
                    sends = True
                    # (a text alone: an item, even empty, but in multi-agent mode, which sends none the short way)
                    if text or (len(blocks) == 1 and not multi):
                        tail = 1
                labelled = False
                if not text and items:  # (no part of the run of texts a Responses message item sends)
                    continue
            elif kind is ToolUseBlock:
                if not calls_of:  # (the chat message of its calls sends all its texts)
                    calls_of = True
                    self.held = self._joins(blocks)
                    self.speaker = msg.name
                calls.add(b.id)
                # (its texts right before its calls, else the item before the run of calls the request ends with)
                if items:
                    if sends and last is not None:  # (something of its own before its calls; an empty text is not)
                        self.joined = last is TextBlock
                    elif tail != 2:
                        self.joined = tail == 1
                tail = 2
                sends = True
                continue
            elif kind is ToolResultBlock:
                if role is not _USER:
                    if b.id in calls:
                        calls.discard(b.id)
                        results += 1
                    elif self.repair:  # (an orphan result: left out)
                        self.dropped.append(b)
                        continue
                    else:  # (an orphan result: sent)
                        results += 1
                    tail = 0
            elif kind is HintBlock:
                if not kept(b.hint, drop):  # (left out, as an empty text: not placed)
                    continue
                hints = True
                if items:  # (sent after the turn: the run of texts goes on)
                    continue
            elif kind is ThinkingBlock:
                if not assistant or self.other:
                    continue
                how = reasoning_sent(b, self.profile, self.families, self.demote)
                if how == DROPPED:  # (left out: nothing sent, the run of texts goes on)
                    continue
                sends = True
                if how == AS_TEXT:  # (a text of its own, not empty, in its place)
                    tail = 1
                    kind = TextBlock
                else:
                    tail = 0
            elif kind in MEDIA:
                sends = True
                tail = 1
                labelled = False
                kind = TextBlock  # (in an assistant message a placeholder, text of the run of texts)
            last = kind
        # (the hints are sent after it when no call is open, else once none is: the item the request ends with)
        placed = hints and not calls
        if sends or results:  # (sent after the open calls, which text between no longer joins, unless it made them)
            self.apart = not calls_of
            self.tail = tail if assistant and not results and not placed else 0  # (results, hints: items after its own)
        elif placed:
            self.tail = 0
        if items:
            if hints and calls:
                self.waiting = True
            elif self.waiting and not calls:
                self.waiting = False
                self.tail = 0
        if role is _TOOL:
            self.own = False
            if not self.turns:
                return n + results if self.result_messages else n + (results > 0)
            turn = "u" if results else ""
        elif role is _USER:
            if not self.turns:
                self.own = sends
                return n + sends  # (left out when it has nothing to send)
            turn = "u" if sends else ""
        elif not self.turns:
            if self.result_messages and (results or self.dropped) and not items:
                self.own = any(type(b) is not ToolResultBlock and type(b) is not HintBlock for b in blocks)
                return n + results + self.own
            if drop and not sends and not results:  # (nothing to send: left out, where empty text is)
                self.own = False
                return n
            return n + 1
        elif results:  # (an assistant message's results: the user turn after it)
            n += self._open("a") if sends else 0
            turn = "u"
        else:
            turn = "a" if sends else ""
        if turn and turn != self.role:  # (:meth:`_open`, inline: the turn family's every message comes here)
            self.role = turn
            self.call_turn = False
            n += 1
        if calls_of and turn == "a":
            self.call_turn = True
        return n + self._hints(hints) if hints or self.hints else n

    def end(self) -> int:
        """The frames the request opens after the last message: the repair results of the calls still open (said in
        :attr:`repaired`), and the hints sent after them."""
        self.repaired = self.newline = self.repairs_framed = 0
        self.folding = self.folded = False
        if self.dropped:
            self.dropped = []
        n = self._orphans() if self.calls else 0
        return n + self._hints(False)

    def _fold(self, blocks: Sequence[Any]) -> int:
        """The frames of another speaker's turn in the history layout: the repair results of the calls it makes
        orphans, and the one user turn of the run it is folded into, on the first of the run that sends a line (a text)
        or a medium (``history_parts``: a run that sends none sends no turn); its hints are placed as anywhere."""
        self.own = False
        self.folded = True
        self.prefixed = self.other = False
        self.started = True
        n = self._orphans() if self.calls else 0
        hints = False
        sends = False
        for b in blocks:
            kind = type(b)
            if kind is TextBlock or kind in MEDIA:
                sends = True
            elif kind is HintBlock and kept(b.hint, self.drop):
                hints = True
        if sends and not self.folding:
            self.folding = True
            self.apart = True
            self.tail = 0
            n += self._open("u") if self.turns else 1
        return n + self._hints(hints)

    def _hints(self, hints: bool) -> int:
        """The user turn the hints waiting open once no call is (the turn family; else each is a message, framed as
        the blocks are counted)."""
        if not self.turns:
            return 0
        self.hints = self.hints or hints
        if self.hints and not self.calls:  # (sent as user text once no call is open)
            self.hints = False
            return self._open("u")
        return 0

    def _orphans(self) -> int:
        """The calls still open are orphans: the frames of their repair results (none without the option)."""
        k = len(self.calls)
        self.calls.clear()
        if not self.repair:
            return 0
        self.repaired += k
        self.tail = 0
        framed = self._open("u") if self.turns else k
        self.repairs_framed += framed
        return framed

    def _alone(self, msg: Msg) -> bool:
        """Whether a message holds text alone that can go ahead of a call (:meth:`Walk.text_only`: in multi-agent mode,
        the current agent's)."""
        return text_alone(msg) and (not self.multi or is_current_agent(msg, self.agent))

    def _answered(self, i: int) -> bool:
        """Whether assistant message ``i`` (text alone) starts a run of text a result ends (:func:`answered_after`)."""
        self.until = answered_after(self.msgs, i, self.speaker, self._alone)
        return self.until > i

    def _between(self, blocks: Sequence[Any]) -> int:
        """The frames of a message of text between a call and its result, merged ahead of the call; its texts are
        joined to the text there by a newline (:attr:`newline`). A message of empty texts alone is left out."""
        if not any(type(b) is TextBlock and b.text for b in blocks) or (self.drop and not self._texts(blocks)):
            return 0
        if self.turns:  # (text parts of the turn of the call)
            return 0
        if self.items:  # (the message item before the calls, else one of its own: framed once)
            if not self.joined:
                self.joined = True
                return 1
        elif not self.held:  # (the chat message of the calls had no text: this one is its content)
            self.held = True
            return 0
        self.newline = 1
        return 0

    def _joins(self, blocks: Sequence[Any]) -> bool:
        """Whether a chat message of calls sends text that text between a call and its result joins (its texts and
        media placeholders, joined by newlines, make a text that is not empty)."""
        kept = 0
        for b in blocks:
            kind = type(b)
            if kind is TextBlock:
                if b.text:
                    return True
                kept += not self.drop
            elif kind in MEDIA:
                return True
        return kept > 1

    def _open(self, role: str) -> int:
        """1 when a part of ``role`` opens a turn, 0 when it joins the one being built (the turn family)."""
        if role == self.role:
            return 0
        self.role = role
        self.call_turn = False
        return 1

    def _texts(self, blocks: Sequence[Any]) -> bool:
        """Whether any of ``blocks`` is a text the request sends."""
        drop = self.drop
        return any(type(b) is TextBlock and kept(b.text, drop) for b in blocks)


#: the blocks every formatter sends of a TOOL message (its results, and its hints, placed) and of a SYSTEM one (its
#: texts): any other is left out, said ``block-dropped``
SENT_BY: Final = {_TOOL: (ToolResultBlock, HintBlock), _SYSTEM: (TextBlock,)}


def sent_by(role: MsgRole, blocks: list[Any]) -> list[Any]:
    """The blocks of a TOOL or SYSTEM message its request sends (:data:`SENT_BY`): a text, a call, a medium or
    reasoning in a TOOL message, a block other than text put in a SYSTEM message after construction, is not counted."""
    sent = SENT_BY[role]
    for b in blocks:
        if type(b) not in sent:
            return [b for b in blocks if type(b) in sent]
    return blocks


def dropping(profile: TokenProfile) -> int:
    """Which texts the formatter of ``profile`` leaves out (and hints, sent as text; ``Walk._hint``): 0 none, 1 empty
    ones (``drop_empty``: DashScope), 2 blank ones too (the turn family)."""
    return 2 if profile.turns else 1 if profile.drop_empty else 0


def kept(text: str, drop: int) -> bool:
    """Whether a text (or a hint) is sent where the texts :func:`dropping` says (``drop``) are left out. (The walk of
    a message's blocks tests it inline: :meth:`Frames.of`.)"""
    return not drop or (bool(text) and (drop == 1 or not text.isspace()))


#: what a formatter makes of a thinking block of an assistant message (:func:`reasoning_sent`)
DROPPED: Final = 0
REASONING: Final = 1
AS_TEXT: Final = 2


def reasoning_sent(block: ThinkingBlock, profile: TokenProfile, families: Container[str], demote: bool) -> int:
    """What the formatter of a provider makes of a thinking block of the current agent's assistant message:
    :data:`REASONING` (sent as reasoning, or as the provider's own data a carrier holds), :data:`AS_TEXT` (a text of
    its own in its place: the option ``reasoning="text"``, ``demote``, and a text that is not empty) or
    :data:`DROPPED`. Reasoning from a provider not of ``families`` is text or left out (``foreign_reasoning``); the
    provider's own as ``profile.own_reasoning`` says: ``field`` reasoning but redacted; ``text`` text
    or left out (OpenAI Chat: ``ChatWalk._thinking``); ``signed`` reasoning when signed or redacted with its data,
    else text or left out (Anthropic's ``thinking_part``); ``thought`` reasoning but redacted, or empty and unsigned
    (Gemini's; a signature ``profile.valid_signature`` refuses is none); ``items`` reasoning as a reasoning item's part
    (:func:`reasoning_item`), else text or left out, redacted never text (the Responses API's ``_reasoning``). The
    count frames and prices a thinking block by it."""
    meta = block.metadata
    thinking = block.thinking
    rule = profile.own_reasoning
    if not meta:  # (the provider's own: no signature, no item, not redacted)
        if rule == "field":
            return REASONING
        if rule == "thought":
            return REASONING if thinking else DROPPED
        return AS_TEXT if demote and thinking else DROPPED
    if thinking and len(meta) == 1:  # (the usual one, signed and no more said, told at once: as below)
        signature = meta.get("signature")
        if type(signature) is str and signature:
            return REASONING if rule != "text" and rule != "items" else AS_TEXT if demote else DROPPED
    if is_carrier(meta):
        return REASONING
    origin = meta.get("provider")
    if isinstance(origin, str) and origin not in families:
        return AS_TEXT if demote and thinking else DROPPED
    redacted = meta.get("redacted") is True
    if rule == "text":
        return AS_TEXT if demote and thinking else DROPPED
    if rule == "signed":
        if redacted:
            data = meta.get("redactedData")
            return REASONING if isinstance(data, str) and data else DROPPED
        signature = meta.get("signature")
        if isinstance(signature, str) and signature:
            return REASONING
    elif rule == "items":
        if reasoning_item(block, families) is not None:
            return REASONING
        if redacted:
            return DROPPED
    elif redacted:
        return DROPPED
    elif rule == "thought":  # (a signature the formatter refuses is left out: valid_signature)
        if thinking:
            return REASONING
        signature = meta.get("signature")
        valid = profile.valid_signature
        sent = isinstance(signature, str) and signature != "" and (valid is None or valid(signature))
        return REASONING if sent else DROPPED
    else:
        return REASONING
    return AS_TEXT if demote and thinking else DROPPED


def text_alone(msg: Msg) -> bool:
    """Whether a message holds text alone (:meth:`Walk.text_only`, one speaker)."""
    blocks: list[Any] = msg.content
    return bool(blocks) and all(type(b) is TextBlock for b in blocks)
