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

from collections.abc import Callable, Sequence
from typing import Any

from agentmsg.blocks import HintBlock, ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request import context as F
from agentmsg.providers._request.cache import block_indexes as cache_blocks
from agentmsg.providers._request.context import Context
from agentmsg.providers._request.fields import NEVER, Quick

_USER, _ASSISTANT, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.TOOL
#: what :meth:`Walk.between` says (``turns-merged``), with the role of the provider's assistant turn
BETWEEN = "text between a tool call and its result merged into the {} turn of the call, ahead of the call"


class Walk:
    """One pass over a conversation; subclasses implement the hooks below."""

    #: the class attributes (a subclass's flags) the walk reads per message or block, copied onto each walk
    #: (``__init__``): CPython 3.11 specializes no read of a class attribute through an instance (tens of ns each).
    #: Keep it short: a 3.11 instance of 30 attributes or more loses its fast layout, and every read is slower
    hot_flags: tuple[str, ...] = ()

    def __init__(self, ctx: Context, multi: bool, agent: str | None) -> None:
        for name in self.hot_flags:  # (as instance attributes: see hot_flags)
            setattr(self, name, getattr(self, name))
        self.ctx = ctx
        self.multi = multi
        self.agent = agent
        self.demote = ctx.options.reasoning == "text"  # reasoning='text': foreign or unsigned reasoning as text
        self.deferred: list[Any] = []  # sent once no call is open
        self.history_seen = False  # a folded run of other speakers was sent (history layout)
        #: what the usual paths look at of the fields no request carries, as they send the blocks (fields.Quick): the
        #: message methods return True when they looked at every block of the message and found nothing to say
        self.quick: Quick = ctx.quick if ctx.quick is not None else NEVER
        #: prompt-cache markers this walk places (message index -> cache.Mark; None: none, or the provider places
        #: none): :meth:`cut` records the part each marked block became, in ``cuts``
        self.marks: dict[int, Any] | None = ctx.cache_marks if self.places_marks else None
        self.cuts: list[tuple[int, int | None, Any]] = []
        #: the index of the result that ends the run of assistant text :meth:`_answered_after` found (-1: none)
        self.between_until = -1

    #: the role of the provider's assistant turn (Gemini's is ``model``)
    assistant_role = "assistant"
    #: text parts are {"type": "text", "text": ...} (text_part is not called); else :meth:`text_part` makes them
    typed_text = True
    #: a speaker's name goes in a field of the request's messages (the chat family's ``name``); else a message's name
    #: is said dropped (``ctx.names_dropped``)
    send_name = False
    #: whether the walk records where the prompt-cache markers go (:meth:`cut`)
    places_marks = False
    #: markers go on whole messages (:meth:`mark_begin`, :meth:`mark_end`), not on blocks (:meth:`cut` as the block
    #: loops go)
    marks_whole = False

    def mark_begin(self) -> int:
        """Where the request stands before a marked message is sent (:meth:`mark_end`)."""
        raise NotImplementedError

    def mark_end(self, i: int, msg: Msg, begin: int) -> None:
        """After marked message ``i`` is sent from ``begin`` (:meth:`mark_begin`): record its cut."""
        raise NotImplementedError

    def marked(self, i: int, content: list[Any]) -> frozenset[int] | None:
        """The indexes of the blocks of message ``i`` that a cache marker marks, or None."""
        marks = self.marks
        if not marks:
            return None
        mark = marks.get(i)
        return None if mark is None else cache_blocks(mark, content)

    def cacheable(self, part: Any) -> bool:
        """Whether a part of the request takes a cache marker (the walk goes back to the nearest one that does)."""
        return True

    def cut(self, i: int, j: int | None, parts: Sequence[Any]) -> None:
        """Block ``j`` of message ``i`` (None: the message) is marked: its breakpoint is the last part of ``parts``
        (what the message has put so far) that takes a marker, or none."""
        part = None
        for p in reversed(parts):
            if self.cacheable(p):
                part = p
                break
        self.cuts.append((i, j, part))

    # ---- hooks ----

    def text_turn(self, role: MsgRole, text: str, msg: Msg, i: int) -> bool:
        """Send message ``i``, a USER or ASSISTANT message holding one text block (the usual turn),
        in the shortest way; False when that text needs the general way (e.g. it is empty)."""
        raise NotImplementedError

    def user_message(self, msg: Msg, i: int, prefix: bool) -> bool:
        """Send a USER message, or another speaker's ASSISTANT message (``prefix``: with its name). True: it looked at
        the fields of every block as :attr:`quick` says and found nothing to say (so does :meth:`assistant_message`,
        :meth:`tool_message`); False: ``fields.scan`` looks at the message."""
        raise NotImplementedError

    def user_text(self, text: str) -> Any:
        """The part of one text of a user turn, or None to leave it out (an empty text, reported)."""
        raise NotImplementedError

    def user_media(self, block: Any, pointer: str) -> Any:
        """The part of one media block of a user turn, or None when it is not sent (reported)."""
        raise NotImplementedError

    def inline_image(self, block: Any) -> Any:
        """The part :meth:`user_media` makes of an image block when that part is the block as it is (base64
        data, no sizing hint: nothing to resolve or report), else None. Tried first: the usual image needs no
        pointer made."""
        return None

    def text_part(self, text: str) -> Any:
        raise NotImplementedError

    def provider_part(self, meta: dict[str, Any], i: int, j: int, prev: Any) -> Any:
        """The part of a carrier of the target provider's own data (thinking metadata ``providerBlock`` or
        ``citations``, see :func:`~.context.is_carrier`), sent back unchanged in its place; ``prev`` is the part the
        message put last so far (citations go back on it). None: no part to add (attached, or not sent: said). A
        provider whose replies carry no such data sends none (said)."""
        F.carrier_dropped(self.ctx, meta, (i, j), f"{self.ctx.provider} takes no such data back")
        return None

    def carrier(self, meta: dict[str, Any], i: int, j: int, prev: Any, other: bool) -> Any:
        """A carrier in an assistant message: its part when it is the target provider's own data (origin in the
        request's families, :meth:`provider_part`), else None, said (``provider-tool-dropped`` or
        ``citations-dropped``): another provider's blocks and citations mean nothing to this one."""
        ctx = self.ctx
        if other:
            F.carrier_dropped(ctx, meta, (i, j), "it is another agent's")
            return None
        origin = meta.get("provider")
        if isinstance(origin, str) and origin in ctx.families:
            return self.provider_part(meta, i, j, prev)
        why = f"only {origin} takes it back" if isinstance(origin, str) else "the provider that made it is not known"
        F.carrier_dropped(ctx, meta, (i, j), why)
        return None

    def _hint(self, b: Any, i: int, j: int) -> None:
        """Defer or send a hint block (each walk places hints its provider's way)."""
        raise NotImplementedError

    def assistant_message(self, msg: Msg, i: int) -> bool:
        """Send an ASSISTANT message of the current agent (or another agent's that calls tools or holds results). A
        message of several model calls (tool results followed by more of the reply: :func:`split_at`) is sent as
        pieces, each from the block after ``ctx.before_piece`` (the pointers stay the message's), the next one after the
        results of the one before (:meth:`next_piece`)."""
        raise NotImplementedError

    def next_piece(self, msg: Msg, i: int, start: int) -> bool:
        """Send the piece of assistant message ``i`` that starts at block ``start``, after the results that end the
        piece before, as a message of its own would go: the calls still open are orphans first when it answers none
        of them (nor does the rest of the message), the deferred parts are sent once no call is open."""
        ctx = self.ctx
        blocks: list[Any] = msg.content
        if ctx.open_calls and not any(type(b) is ToolResultBlock for b in blocks[start:]):
            self.orphans()
        if self.deferred and not ctx.open_calls:
            self.send_deferred()
        ctx.before_piece = start - 1
        try:
            return self.assistant_message(msg, i)
        finally:
            ctx.before_piece = -1

    def tool_message(self, msg: Msg, i: int) -> bool:
        raise NotImplementedError

    def system_message(self, msg: Msg, i: int) -> None:
        raise NotImplementedError

    def fold(self, group: list[tuple[int, Msg]]) -> bool:
        """Send a run of other speakers' turns as one user turn (multi-agent ``history`` layout); False when the run
        had nothing to send (no turn was sent)."""
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

    # ---- shared by the walks ----

    def user_parts(self, msg: Msg, i: int, prefix: bool) -> list[Any]:
        """The parts of a USER message, or of another speaker's ASSISTANT message (``prefix``: its text
        starts with the speaker's name): texts and media through :meth:`user_text` / :meth:`user_media`,
        hints placed by the walk, reasoning and other blocks left out and reported."""
        ctx = self.ctx
        label = f"[{F.speaker_label(msg)}]: " if prefix else ""
        parts: list[Any] = []
        blocks: list[Any] = msg.content
        marked = self.marked(i, blocks) if self.marks and not self.marks_whole else None
        j = -1  # the block's index (counted: cheaper than an enumerate per message)
        for b in blocks:
            j += 1
            if marked is not None and j - 1 in marked:
                self.cut(i, j - 1, parts)
            t = type(b)
            if t is TextBlock:
                part = self.user_text(label + b.text if label else b.text)
                if part is None:
                    ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty text block not sent")
                    continue
                parts.append(part)
                label = ""
            elif t in F.MEDIA:
                if label:
                    parts.append(self.text_part(label.rstrip()))
                    label = ""
                part = self.inline_image(b) if t is ImageBlock else None
                if part is None:
                    part = self.user_media(b, f"/{i}/content/{j}")
                if part is not None:
                    parts.append(part)
            elif t is HintBlock:
                self._hint(b, i, j)
            elif t is ThinkingBlock:
                if F.is_carrier(b.metadata):
                    F.carrier_dropped(ctx, b.metadata, (i, j), "it is another speaker's")
                else:
                    ctx.report(f"/{i}/content/{j}", "thinking-dropped", "reasoning of another speaker is not sent")
            else:
                ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a user turn")
        if marked:
            self._cut_rest(i, j, marked, parts)
        if prefix and not label:  # (the label was sent)
            F.prefix_name(ctx, msg, i)
        if not parts:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
        return parts

    def _cut_rest(self, i: int, last: int, marked: frozenset[int], parts: Sequence[Any]) -> None:
        """After the last block (``last``) of a marked message: its cut, and the cuts of indexes beyond its content
        (said when placed)."""
        for j in sorted(marked):
            if j >= last:
                self.cut(i, j, parts) if j == last else self.cuts.append((i, j, None))

    def usual_user_parts(self, blocks: list[Any]) -> list[Any] | None:
        """The parts of a user message of the usual kind, texts neither empty nor blank and images :meth:`inline_image`
        takes, built as :meth:`user_parts` builds them (:meth:`user_text`, :meth:`inline_image`) and looked at as
        :attr:`quick` says in the same loop; None for any other message (then user_parts makes its parts), and for a
        block :attr:`quick` finds something to say of (then fields.scan says it). Nothing is reported or resolved
        here, so falling back repeats nothing (tests/providers/shared/test_request.py compares the two ways)."""
        parts: list[Any] = []
        typed = self.typed_text
        quick = self.quick
        for b in blocks:
            t = type(b)
            if t is TextBlock:
                text = b.text
                # (user_text may leave it out, reported: an empty text, or a blank one where the provider takes none)
                if not text or text.isspace() or b.unknown_keys is not None or not quick.text:
                    return None
                parts.append({"type": "text", "text": text} if typed else self.text_part(text))
            elif t is ImageBlock:
                part = self.inline_image(b)
                if part is None or b.unknown_keys is not None or not quick.image or b.source.unknown_keys is not None:
                    return None
                parts.append(part)
            else:
                return None
        return parts or None

    # ---- the pass ----

    def run(self, msgs: Sequence[Msg], start: int = 0) -> list[dict[str, Any]]:
        """Walk ``msgs`` from message ``start`` on (the ones before are held by a cache the request names: Gemini's
        cachedContent), building the request's messages or turns."""
        ctx = self.ctx
        history = self.multi and ctx.options.multi_agent_layout == "history"
        group: list[tuple[int, Msg]] = []
        open_calls = ctx.open_calls
        deferred = self.deferred
        multi = self.multi
        text_turn = self.text_turn
        quick = self.quick
        message_keys = quick.message_keys
        text_quick = quick.text
        unscanned: list[int] = []  # the messages fields.scan looks at: the others were looked at here (Quick)
        whole = self.marks if self.marks_whole else None  # markers on whole messages: mark_begin / mark_end
        begin = -1
        user, assistant, tool, text_block = _USER, _ASSISTANT, _TOOL, TextBlock  # (read per message: locals)
        for i, msg in enumerate(msgs[start:] if start else msgs, start):
            role = msg.role
            meta = msg.metadata
            if meta and F.GROUNDING in meta:  # the reply's citations and grounding: no provider takes them back
                F.grounding_dropped(ctx, msg, i)
            if history:
                if F.is_history_message(msg, self.agent):
                    if open_calls:
                        self.orphans()
                    group.append((i, msg))
                    unscanned.append(i)
                    if whole is not None and i in whole:
                        self.cuts.append((i, None, None))
                    continue
                if group:
                    self._fold(group)
            if whole is not None and i in whole:
                begin = self.mark_begin()
            try:
                # (a TOOL message orphans no call: it is not asked)
                if open_calls and role is not tool and orphans_calls(msg):
                    if role is assistant and self._answered_after(msgs, i) and self.between(msg, i):
                        # (text between a call and its result: sent ahead of the call, said there)
                        if whole is not None and i in whole:
                            begin = self.mark_begin() - 1  # (its cut: the message the text went into)
                            self.mark_end(i, msg, begin)
                        unscanned.append(i)
                        continue
                    self.orphans()
                if role is user or role is assistant:
                    content: list[Any] = msg.content
                    if (
                        not multi
                        and len(content) == 1
                        and type(first := content[0]) is text_block
                        and text_turn(role, first.text, msg, i)
                    ):  # the usual turn, one text block: sent the short way
                        looked = text_quick and not first.unknown_keys
                    elif role is user:
                        looked = self.user_message(msg, i, multi)
                    elif (
                        multi
                        and not F.is_current_agent(msg, self.agent)
                        and not F.has_tool_use(msg)
                        and not F.has_result(msg)
                    ):
                        looked = self.user_message(msg, i, True)
                    else:
                        looked = self.assistant_message(msg, i)
                elif role is tool:
                    looked = self.tool_message(msg, i)
                else:
                    self.system_message(msg, i)
                    looked = False
            except (AttributeError, TypeError, KeyError) as exc:
                raise F.broken_message(i, exc, msg) from None
            if whole is not None and i in whole:
                self.mark_end(i, msg, begin)
            if (
                not looked
                or msg.unknown_keys is not None
                or (meta and message_keys and not message_keys.isdisjoint(meta))
            ):
                unscanned.append(i)
            if deferred and not open_calls:
                self.send_deferred()
        if group:
            self._fold(group)
        if open_calls:
            self.orphans()
        self.send_deferred()
        ctx.unscanned = unscanned if ctx.quick is not None else None
        return self.result()

    def _answered_after(self, msgs: Sequence[Msg], i: int) -> bool:
        """Whether message ``i`` is assistant text between a tool call and its result (:func:`answered_after`, from
        the speaker of the open calls' message; in multi-agent mode the current agent). (Walked only while a call is
        open and a message answers none: never on the usual path, a call then its results.)"""
        if self.between_until > i:  # (the run of text this scan found already)
            return True
        calls = self.ctx.open_calls
        speaker = msgs[next(reversed(calls.values()))[3]].name if calls else None
        k = answered_after(msgs, i, speaker, self.text_only)
        if k < 0:
            return False
        self.between_until = k
        return True

    def text_only(self, msg: Msg) -> bool:
        """Whether an assistant message holds text alone, which :meth:`between` can put ahead of a call."""
        blocks: list[Any] = msg.content
        if not blocks or (self.multi and not F.is_current_agent(msg, self.agent)):
            return False
        return all(type(b) is TextBlock for b in blocks)

    def between(self, msg: Msg, i: int) -> bool:
        """Put the text of assistant message ``i`` (:meth:`text_only`), which comes between a tool call and its
        result, into the assistant turn that made the call, ahead of the call (where the providers expect text in a
        turn that calls tools), and say so; False (nothing done) when that turn is not the last the request holds.
        Each walk finds the place and puts the texts there; :meth:`between_texts` collects and says them."""
        return False

    def between_texts(
        self, msg: Msg, i: int, drop_empty: bool, drop_blank: bool = False, part: Callable[[str], Any] | None = None
    ) -> list[Any]:
        """What :meth:`between` puts of message ``i``, said: each text block's text (``part``: the part it becomes),
        but those the provider takes none of (each said ``empty-text-dropped``): an empty one with ``drop_empty``, one
        of whitespace alone with ``drop_blank``, and every one of a message whose texts are all empty (whatever
        ``drop_empty`` says: they would add nothing but a turn's ``""`` or ``\n``, as the call's turn ``null``
        content turned ``""``); the message said ``turns-merged`` (and its name dropped where the request carries
        none), or ``empty-message-dropped`` when nothing is left (an empty list: nothing to put). A marked block's cut
        (markers on blocks) is the last of these parts up to it."""
        ctx = self.ctx
        added: list[Any] = []
        blocks: list[Any] = msg.content
        if not drop_empty and not any(b.text for b in blocks):
            drop_empty = True  # (all empty: nothing to merge, said dropped as the providers that drop empty text say)
        marked = self.marked(i, blocks) if self.marks and not self.marks_whole else None
        for j, b in enumerate(blocks):
            text = b.text
            if (drop_empty and not text) or (drop_blank and text.isspace()):
                ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty text block not sent")
            else:
                added.append(part(text) if part else text)
            if marked and j in marked:
                self.cut(i, j, added)
        if marked:
            self._cut_rest(i, len(blocks), marked, ())
        if not added:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
            return added
        if msg.name and not self.send_name and not self.multi:  # (else the name is the caller's: one speaker)
            ctx.names_dropped.append(i)
        ctx.report(f"/{i}", "turns-merged", BETWEEN.format(self.assistant_role))
        return added

    def _fold(self, group: list[tuple[int, Msg]]) -> None:
        if self.fold(group):
            self.history_seen = True  # (a run with nothing to send leaves the history prompt to the next one)
        group.clear()
        if self.deferred and not self.ctx.open_calls:
            self.send_deferred()

    def orphans(self) -> None:
        """Report the open calls as orphans (before a turn that answers none, or at the end)."""
        repair = self.ctx.options.repair
        for sent, tool in F.orphan_calls(self.ctx):
            if repair:
                self.repair(sent, tool)


def answered_after(msgs: Sequence[Msg], i: int, speaker: str | None, text_only: Callable[[Msg], bool]) -> int:
    """Where the run of assistant text from message ``i`` on ends in a tool result (the index of the message that
    holds it), or -1: message ``i`` and the ones after it up to that result are assistant messages of ``speaker``
    that hold text alone (``text_only``). Such text between a call and its result goes ahead of the call
    (:meth:`Walk.between`), as the formatters send it and ``agentmsg.context.count_tokens`` frames it."""
    k = i
    n = len(msgs)
    while k < n:
        msg = msgs[k]
        if k > i and (msg.role is _TOOL or F.has_result(msg)):
            return k
        if not (msg.role is _ASSISTANT and msg.name == speaker and text_only(msg)):
            return -1
        k += 1
    return -1


def split_at(blocks: list[Any], j: int) -> int:
    """Where the piece of an assistant message that tool result ``j`` ends stops: the index of the block after it (and
    after the hints right after it) that is neither a result nor a hint, where the next piece starts; 0 when the
    message goes on with results, or ends. The reducer puts a reply of several model calls in one message (text,
    calls, their results, more text, ...): each piece goes as an assistant turn of its own after the results of the
    one before, never ahead of them (the model would read its answer as written before the tool answered)."""
    n = len(blocks)
    k = j + 1
    while k < n and type(blocks[k]) is HintBlock:
        k += 1
    return k if k < n and type(blocks[k]) is not ToolResultBlock else 0


def pieces(blocks: list[Any]) -> list[tuple[int, int]] | None:
    """The pieces (start, stop) of an assistant message's blocks that :func:`split_at` splits, or None when it is
    sent whole (what ``agentmsg.context.count_tokens`` frames, as the walks send them)."""
    out: list[tuple[int, int]] | None = None
    start = 0
    for j, b in enumerate(blocks):
        if type(b) is ToolResultBlock:
            k = split_at(blocks, j)
            if k:
                if out is None:
                    out = []
                out.append((start, k))
                start = k
    if out is not None:
        out.append((start, len(blocks)))
    return out


def orphans_calls(msg: Msg) -> bool:
    """Whether a message that comes while tool calls are open makes them orphans (reported, and with the repair option
    given an error result, before it: :meth:`Walk.orphans`): it answers none (no TOOL message, no result in it), and is
    not text between a call and its result (:func:`answered_after`, which the caller asks). Shared by the walk and
    ``agentmsg.context.count_tokens``, which frames the repair results where the formatters send them."""
    return msg.role is not _TOOL and not F.has_result(msg)
