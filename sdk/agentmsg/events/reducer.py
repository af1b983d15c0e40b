"""Fold an AgentScope event stream back into messages: one assistant Msg per agent reply.

The reducer works on parsed events (dicts, as JSON gives them, or the generated event classes) and is
incremental: :meth:`Reducer.feed` takes one event, :meth:`Reducer.snapshot` returns a consistent
partial message at any moment, :meth:`Reducer.finish` closes the stream. :func:`reduce_events` is
the one-shot form; :meth:`Reducer.feed_jsonl` takes JSON lines as bytes (the fast path).

Rules (``docs/events.md`` has the full list):

* A reply runs from AGENT_START to AGENT_END; events outside one open an implicit reply.
  Forwarded subagent events (``source`` set) are skipped unless the reducer is created for that source.
* Blocks appear in the order they started. Deltas are routed by ``blockId`` (text, thinking, data)
  and ``toolCallId`` (tool calls and results), so interleaved parallel calls never mix. A block id may
  be reopened after its END (AgentScope Java reuses ``text``/``thinking``): that starts a new block.
  A tool call id that comes back after its END within the same model call (``replyId``) continues its
  call (Java ends all open calls whenever another call's chunk arrives); Java's ``__`` placeholder
  names open a call without a START.
* Tool-call arguments are concatenated and parsed at TOOL_CALL_END. Text that is not a JSON object is
  kept raw in ``content``, with ``input = {}`` and the parse error in tool_use metadata ``argumentsError``.
* Tool results (TOOL_RESULT_*) become tool_result blocks of the same message.
* Usage is summed over the reply's MODEL_CALL_END events. EXCEED_MAX_ITERS, REQUEST_STOP, HITL
  events and interruption set the generate reason; HITL events are kept in metadata ``agentmsg_hitl``.
* AGENT_RESULT supplies id, name, timestamp and metadata the stream does not (stream-derived metadata
  wins); without it the message id is the AGENT_START replyId and the timestamp its createdAt. A reply
  nothing names gets ``"msg-" + <id (or index) of its first event>``: no random ids.
* What the reply ended with is in metadata ``agentmsg_finish_reason``, ``agentmsg_model``,
  ``agentmsg_stop_reason``, ``agentmsg_refusal`` and ``agentmsg_errors`` (CUSTOM ``agentmsg.error`` events);
  what its producer could not read or left out in ``agentmsg_notes`` (CUSTOM ``agentmsg.problem`` and
  ``agentmsg.not-kept`` events, the first 100, then one ``max-problems`` entry counting the rest).
* Duplicate events (an id among the last ``dedupe_window`` ids) are ignored.
* A stream that ends inside a reply keeps everything received: open blocks are closed, open tool
  results get state ``interrupted`` and the message's generate reason is ``INTERRUPTED``. :meth:`Reducer.finish`
  says it: one problem, rule ``incomplete_stream`` (:data:`CUT_RULE`), at the reply's first event, naming what
  was open, and :attr:`Reducer.cut` is the message (a reply AgentScope stopped itself, REQUEST_STOP INTERRUPTED,
  then AGENT_END, is INTERRUPTED with no problem). Strict mode records it too, without raising.
* Bad input: with ``strict=True`` a :class:`~agentmsg.ValidationError` naming the event and the rule is
  raised and the state is left as it was; otherwise the documented tolerant rule applies and the
  problem is recorded in :attr:`Reducer.problems`. The tolerant reducer never raises on bad input, and nothing
  valid that was received is lost: it is in the messages or named in a problem. (A setting under which no
  message exists is no input of its: see :class:`Reducer` on ``limits.max_depth`` 1 or 2.)

The parts: ``_state`` (what is remembered, with the one delta routing table), ``_dedupe`` (the
duplicate window), ``_handlers`` (one handler per event type), ``_build`` (message and salvage),
``_check`` (AGENT_RESULT coverage), ``_jsonl`` (JSON lines: reference and fast path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from agentmsg._codec import legacy
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import validate, validate_parsed
from agentmsg.errors import (
    MAX_PROBLEMS,
    Problem,
    SizeLimitError,
    ValidationError,
    WrongTypeError,
    require_count,
    short_repr,
    wrong_type,
)
from agentmsg.events import _jsonl
from agentmsg.events._build import build, close_reply
from agentmsg.events._check import check_results
from agentmsg.events._dedupe import DEFAULT_DEDUPE_WINDOW
from agentmsg.events._handlers import _fold_deltas, apply, fold
from agentmsg.events._state import JOIN_EVERY, Reply, State
from agentmsg.events.types import AgentEventDict
from agentmsg.message import AssistantMessage

__all__ = ["CUT_RULE", "Reducer", "reduce_events"]


DEFAULT_MAX_PROBLEMS = MAX_PROBLEMS


class Reducer:
    """Incremental event → message reducer. See the module docstring for the rules.

    ``strict``: raise :class:`ValidationError` on bad input instead of applying the tolerant rule.
    ``source``: reduce the events of this forwarded subagent (``source`` field) instead of the top level.
    ``dedupe_window``: duplicates are detected among the last 4,096 to 8,192 event ids by default (a
    replay after reconnect repeats recent events); None remembers every id (memory grows with the stream).
    ``name``: default message name when no AGENT_START/AGENT_RESULT gives one.
    ``max_open_blocks``: open blocks, tool calls and tool results per reply (``limits["max_open_blocks"]``,
    1024): beyond it the one opened first is closed as it is (problem ``max-open-blocks``; strict:
    :class:`~agentmsg.SizeLimitError`).
    ``max_problems``: problems kept (10,000); more are counted, and :attr:`problems` ends with one
    ``max-problems`` entry saying how many were left out. A whole number of at least 0 (0 keeps none, counting
    them all); None keeps all.

    Under ``limits.max_depth`` 1 or 2 no message can be built: a message's blocks are 3 levels deep, and so is the
    tolerant rule's last resort, an empty message whose metadata says why. Building a reply's message (its
    AGENT_END, :meth:`finish`) then raises :class:`~agentmsg.SizeLimitError` (rule ``max-depth``, at the part of
    that message that crosses the limit: its ``/content`` under 1) in either mode, after the problems found so far
    are recorded: the setting, not the stream, is at fault, and a reducer that went on would give no message for any
    reply. :func:`agentmsg.check` says it as a finding at the event that ended the reply and reduces no further
    events.
    """

    def __init__(
        self,
        *,
        strict: bool = False,
        source: str | None = None,
        dedupe_window: int | None = DEFAULT_DEDUPE_WINDOW,
        name: str | None = None,
        max_open_blocks: int | None = None,
        max_problems: int | None = DEFAULT_MAX_PROBLEMS,
    ) -> None:
        if max_open_blocks is not None:
            # (a negative bound made every START fail inside the reducer, every block lost; 0 meant the default)
            require_count(
                max_open_blocks, "max_open_blocks", 1, "max_open_blocks must be a whole number of at least 1 (or None)"
            )
        if max_problems is not None:
            # (a negative bound kept no problem, as 0 does, and said so as if the caller had asked for none)
            require_count(
                max_problems, "max_problems", 0, "max_problems must be a whole number of at least 0 (or None)"
            )
        self._st = State(
            strict,
            source,
            dedupe_window,
            name,
            limits.max_open_blocks if max_open_blocks is None else max_open_blocks,
            max_problems,
        )

    @classmethod
    def _of(cls, strict: bool, source: str | None, name: str | None) -> Reducer:
        """``Reducer(strict=strict, source=source, name=name)``, the other bounds their defaults, as
        :func:`reduce_events` makes one per stream: a class called with keywords builds a dict of them and
        unpacks it again (about 1,500 instructions, a reply's tenth of a percent)."""
        reducer = cls.__new__(cls)
        reducer._st = State(strict, source, DEFAULT_DEDUPE_WINDOW, name, limits.max_open_blocks, DEFAULT_MAX_PROBLEMS)
        return reducer

    @property
    def strict(self) -> bool:
        return self._st.strict

    @property
    def source(self) -> str | None:
        return self._st.source

    @property
    def default_name(self) -> str | None:
        return self._st.default_name

    @property
    def count(self) -> int:
        """Events fed so far, skipped ones and unparsable lines included (the next event's index)."""
        return self._st.count

    @property
    def problems(self) -> list[Problem]:
        """What the tolerant rules had to fix, in order (JSON pointer ``/<event index>/...`` + rule)."""
        st = self._st
        if st.omitted:
            return [*st.problems, Problem("", "max-problems", f"{st.omitted} more problems were not kept")]
        return list(st.problems)

    # ---- feeding --------------------------------------------------------------------------------

    def feed(self, event: AgentEventDict | Mapping[str, Any] | Any) -> None:
        """Reduce one event (a parsed JSON object or a generated event instance)."""
        st = self._st
        if not st.trusted:  # (feed_many(trusted=True) hands some events to feed: they stay trusted)
            st.unchecked = True
        self._feed(event, validate)

    def _feed_parsed(self, event: Any) -> None:
        """:meth:`feed` for an event ``orjson.loads`` read from JSON text (the JSONL reader): strict mode
        checks it the same, faster (:func:`agentmsg._codec.schemas.validate_parsed`)."""
        self._feed(event, validate_parsed)

    def _feed(self, event: Any, check: Callable[[Any, str], None]) -> None:
        st = self._st
        index = st.count
        st.count = index + 1
        e: dict[str, Any] | None
        if isinstance(event, dict):
            e = cast("dict[str, Any]", event)
        elif isinstance(event, Mapping):
            e = dict(event)
        else:
            e = self._as_dict(event, index)
            if e is None:
                return
        event = e
        if st.strict:
            kind = event.get("type")
            if type(kind) is str and kind in legacy.LEGACY_EVENT_TYPES:
                notes: list[Problem] = []
                try:
                    legacy.event(event, notes)
                except SizeLimitError as exc:  # (its legacy keys nest past the limit in their current form)
                    raise exc.under(f"/{index}", "event") from None
                if notes:  # refused with its own rule, before the schema says what the legacy shape breaks
                    raise ValidationError([n.under(f"/{index}") for n in notes[:1]], "event")
            try:
                check(event, "event")
            except ValidationError as exc:
                raise exc.under(f"/{index}", "event") from None
        if event.get("source") != st.source:
            return
        event_id = event.get("id")
        if type(event_id) is str:
            if st.window.seen(event_id):
                return
        elif event_id is not None:
            st.problem(
                index, "/id", "type", f"event id {short_repr(event_id)} is not a string: not checked for duplicates"
            )
        apply(st, e, index)

    def feed_many(self, events: Iterable[AgentEventDict | Mapping[str, Any] | Any], *, trusted: bool = False) -> None:
        """Reduce many events; the same as calling :meth:`feed` for each (plain top-level dicts skip
        the per-call checks that only other inputs need).

        ``trusted=True`` is for producers whose events are valid by construction: every event is valid
        against the event schema and holds only values parsed from JSON text (agentmsg's provider stream
        parsers; ``tests/providers/shared/test_recorded.py`` validates every event they emit). The tolerant reducer
        then skips checking events other than the plain deltas against the schema, and builds the message
        through the codec's fast path. The rules do not change: an event that breaks the promise is still
        reduced by them and nothing raises, only its schema problems go unreported. Strict mode ignores it.

        ``events`` given as one str, bytes or dict (JSON text, or one event, in place of the events) raises
        :class:`ValidationError` (rule ``type``) even when tolerant: it is a mistake, not a stream (it was
        taken for its characters or keys, each a problem, and reduced to nothing); so does anything not iterable
        (None, a number), which raised a bare TypeError from inside the loop."""
        if type(events) is not list and (
            isinstance(events, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(events, Iterable)
        ):
            hint = (
                "one event: feed(event), or a list of them"
                if isinstance(events, Mapping)
                else "JSON text: reduce_stream reads JSON lines, SSE or a JSON array"
                if isinstance(events, (str, bytes, bytearray, memoryview))
                else "a list of event dicts, or any iterable of them"
            )
            raise WrongTypeError.single(
                "", "type", f"expected an iterable of events, got {type(events).__name__} ({hint})", "event"
            )
        st = self._st
        st.trusted = trusted and not st.strict
        if not trusted:
            st.unchecked = True
            st.parsed = False  # (events from elsewhere than the parsers: their values may share their members)
        try:
            if st.strict or st.source is not None:
                feed = self.feed
                for event in events:
                    feed(event)
            else:
                fold(st, events, self.feed)
        finally:
            st.trusted = False

    def _trusted_feed(self) -> Callable[[list[dict[str, Any]]], None]:
        """``feed_many(events, trusted=True)`` of lists of agentmsg's stream parser's events, without the checks
        only other callers need, as a function made once for a stream (a client's, called per chunk of it): what
        does not change while the reducer lives (strict, source, its dedupe window and bound, the C delta loop
        or none) is looked up here, once, not at each chunk. The chunk's plain deltas first, by the C delta loop
        where built (a live chunk is mostly one delta: then nothing else runs), the rest as
        :func:`~agentmsg.events._handlers.fold` takes them."""
        st = self._st
        feed = self.feed
        st.parsed = True  # (until an untrusted feed: see State.parsed)
        if st.strict or st.source is not None:

            def feed_checked(events: list[dict[str, Any]]) -> None:
                self.feed_many(events, trusted=True)

            return feed_checked

        def feed_rest(events: list[dict[str, Any]]) -> None:
            st.trusted = True
            try:
                fold(st, events, feed)
            finally:
                st.trusted = False

        fold_deltas = _fold_deltas
        if fold_deltas is None:
            return feed_rest
        window = st.window  # (its sets change as it turns: read at each call)
        size = window.size or 0
        join_every = JOIN_EVERY

        def feed_trusted(events: list[dict[str, Any]]) -> None:
            reply = st.reply
            if reply is not None:
                taken = fold_deltas(
                    events, 0, window.current, window.previous, size, reply.routes, reply.calls, join_every
                )
                st.count += taken
                if taken == len(events):
                    return
                events = events[taken:]
            feed_rest(events)

        return feed_trusted

    def feed_jsonl(
        self, data: bytes | bytearray | memoryview, start: int = 0, end: int | None = None, *, first_line: int = 1
    ) -> int:
        """Reduce JSON lines: ``data[start:end]`` holds whole lines (no final newline needed), the
        first being line ``first_line`` of the stream (for messages); returns the number of lines. The
        same as parsing each non-blank line and feeding it (a line that is not JSON is a problem, rule
        ``json``, and counts as one event), only much faster. ``data`` is bytes (a bytearray or a memoryview is read
        as its bytes); the positions are ints of at least 0 (``first_line``, 1): else a
        :class:`~agentmsg.errors.WrongTypeError` (a ``TypeError`` too) or :class:`ValidationError` at the argument;
        an ``end`` past ``data`` is its end."""
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise wrong_type("/data", "JSON lines are bytes", data)
            data = bytes(data)
        if type(start) is not int or start < 0:
            start = require_count(start, "start", 0, "start is a position in data (an int >= 0)")
        if type(first_line) is not int or first_line < 1:
            first_line = require_count(first_line, "first_line", 1, "first_line is a line number (an int >= 1)")
        if end is None:
            end = len(data)
        elif type(end) is not int or end < 0 or end > len(data):
            end = min(require_count(end, "end", 0, "end is a position in data (an int >= 0)"), len(data))
        st, feed, line = self._st, self._feed_parsed, first_line
        # In runs of about _jsonl.RUN bytes, as reduce_stream feeds them: lines are decoded a run at a time, so a
        # whole file given at once is not held decoded at once too (53 MB of lines took 324 MB more).
        while end - start > _jsonl.RUN:
            cut = data.rfind(b"\n", start, start + _jsonl.RUN)
            if cut < 0:  # a line longer than a run
                cut = data.find(b"\n", start + _jsonl.RUN, end)
            if cut < 0 or cut + 1 >= end:  # (a final newline: its empty line is the last run's)
                break
            line += _jsonl.feed_run(st, feed, data, start, cut, line)
            start = cut + 1
        return line + _jsonl.feed_run(st, feed, data, start, end, line) - first_line

    def report(self, message: str, *, rule: str) -> None:
        """Record a problem a transport found with the event it is about to feed (pointer
        ``/<its index>``), e.g. invalid UTF-8 replaced by U+FFFD. Raises :class:`ValidationError` when strict."""
        st = self._st
        st.problem(st.count, "", rule, message)

    def feed_unreadable(self, message: str, *, rule: str = "json", limit: bool = False) -> None:
        """Record input that could not be read as an event (a transport reports it here): one problem
        with pointer ``/<index>``, counted as one event. ``limit``: the input broke a size limit
        (strict: raises :class:`~agentmsg.SizeLimitError`, else :class:`ValidationError`)."""
        self._unreadable_at("", message, rule, limit)

    def _unreadable_at(self, pointer: str, message: str, rule: str, limit: bool) -> None:
        """:meth:`feed_unreadable` said at ``pointer`` in the event (an event nested too deep: the array or object
        that crosses the limit)."""
        st = self._st
        index = st.count
        st.count = index + 1
        st.problem(index, pointer, rule, message, limit=limit)

    def _as_dict(self, event: Any, index: int) -> dict[str, Any] | None:
        from agentmsg._codec.converter import unstructure_hooks

        try:
            value = unstructure_hooks[event.__class__](event)
        except Exception:
            value = None
        if not isinstance(value, dict):
            self._st.problem(index, "", "type", f"not an event object: {type(event).__name__}")
            return None
        return value

    # ---- reading --------------------------------------------------------------------------------

    def messages(self) -> list[AssistantMessage]:
        """The messages of the replies completed so far."""
        return list(self._st.done)

    def _forget_done(self) -> None:
        """Drop the messages of the replies completed so far (and their AGENT_RESULTs), for a caller that reads the
        problems alone (``agentmsg validate``, :func:`agentmsg.check`): a stream of any length is then checked in
        memory bounded by its longest reply. :meth:`finish` and :meth:`messages` give the later ones only."""
        self._st.done.clear()
        self._st.results.clear()

    def snapshot(self) -> AssistantMessage | None:
        """The message being assembled, as it stands (None between replies). Doesn't change state."""
        st = self._st
        reply = st.reply
        if reply is None:
            return None
        return build(reply, interrupted=False, default_name=st.default_name, close=False, text_too=st.unchecked)

    def finish(self) -> list[AssistantMessage]:
        """End of stream: close an open reply and return all messages. A reply the stream cut short (no
        AGENT_END, or a model call, block, tool call or tool result still open) is kept with what arrived,
        marked INTERRUPTED, and said: one problem (rule ``incomplete_stream``, pointer ``/<index of the
        reply's first event>``, naming what was open), and :attr:`cut` is its message. Strict mode records
        it too, without raising: a cut stream is a fact of the transport (a dropped connection, Ctrl-C), not
        an event that breaks a rule, and the messages received are still returned."""
        st = self._st
        reply = st.reply
        if reply is not None:
            open_parts = _still_open(reply)
            cut = reply.explicit or bool(open_parts)
            close_reply(st, reply, interrupted=cut)
            if cut:
                msg = st.done[-1]
                st.cut = msg
                what = "; ".join(
                    (["no AGENT_END"] if reply.explicit else [])
                    + ([f"open: {', '.join(open_parts)}"] if open_parts else [])
                )
                st.add(
                    Problem(
                        f"/{reply.origin}",
                        CUT_RULE,
                        f"the stream ended inside reply {msg.id} ({what}): kept with what arrived, marked INTERRUPTED",
                    )
                )
        return list(st.done)

    @property
    def cut(self) -> AssistantMessage | None:
        """The message :meth:`finish` closed because the stream ended inside its reply (the last such, when
        the reducer was fed again after a finish), else None. Its generate reason is INTERRUPTED, as is that of
        a reply AgentScope itself reports interrupted (REQUEST_STOP): this says the stream was cut."""
        return cast("AssistantMessage | None", self._st.cut)

    def check_results(self) -> list[Problem]:
        """Whether each completed message covers its reply's AGENT_RESULT (replies without one are not
        checked); one :class:`Problem` (rule ``agent-result``) per disagreement.

        AGENT_RESULT is AgentScope Java's own rebuild of the reply's *last model call* (thinking, text,
        tool calls, each kind merged into one block), so it is not expected to equal the reduced message:
        a multi-step reply has earlier steps and tool results too, and blocks reopened within a call stay
        separate here. What must hold: its role is ASSISTANT (pointer ``/<message>/role``), its text and
        its thinking each occur in the concatenation of the message's text (thinking) blocks, and each of
        its tool calls is in the message with the same id, name and input (pointer ``/<message>/content``).
        A failure means events were lost or a runtime rewrote the result."""
        return check_results(self._st.done, self._st.results)


#: the rule of the problem :meth:`Reducer.finish` records for a reply the stream cut short (the CLI's word for it too)
CUT_RULE = "incomplete_stream"
_MAX_NAMED = 10  # open things a cut problem names (the rest are counted)


def _still_open(reply: Reply) -> list[str]:
    """What is still open in ``reply``, in the order it was started: its model calls, blocks, tool calls and tool
    results (the first ``_MAX_NAMED`` named, the rest counted)."""
    named: list[tuple[int, str]] = []
    for key, b in reply.by_block.items():
        named.append((b.origin, f"{b.kind} block {short_repr(key, 40)}"))
    for key in reply.calls:
        call = reply.by_call[key]
        named.append((call.origin, f"tool call {short_repr(key, 40)} ({short_repr(call.name or '', 40)})"))
    for key, t in reply.by_result.items():
        named.append((t.origin, f"tool result {short_repr(key, 40)} ({short_repr(t.name or '', 40)})"))
    named.sort(key=lambda item: item[0])
    parts = [text for _, text in named[:_MAX_NAMED]]
    if len(named) > _MAX_NAMED:
        parts.append(f"{len(named) - _MAX_NAMED} more")
    if reply.model_open > 0:
        parts.insert(0, "a model call" if reply.model_open == 1 else f"{reply.model_open} model calls")
    return parts


def reduce_events(
    events: Iterable[AgentEventDict | Mapping[str, Any] | Any],
    *,
    strict: bool = False,
    source: str | None = None,
    name: str | None = None,
    trusted: bool = False,
) -> list[AssistantMessage]:
    """Reduce a whole event stream: one assistant message per agent reply. ``trusted``: see
    :meth:`Reducer.feed_many`."""
    reducer = Reducer._of(strict, source, name)
    reducer.feed_many(events, trusted=trusted)
    return reducer.finish()


def opens_reply(event: Mapping[str, Any], *, after_end: bool) -> tuple[bool, list[Problem]]:
    """Whether ``event``, fed between replies (``after_end``: after an AGENT_END), opens one, and what the reducer
    says of it (pointers under ``/0``): the reducer's own answer (a block END outside a reply, an event it skips
    for a missing key, one after an AGENT_END that would only open an empty reply: none). Not checked against the
    event schema (the event is fed trusted: a value shared many times over is not walked path by path).

    The seam the UI encoders (``agentmsg.ui``) ask, so that they write no message for a reply the reducer never
    has: internal, for agentmsg's own packages (not in ``__all__``, nor in :mod:`agentmsg.events`)."""
    reducer = Reducer(dedupe_window=None)
    st = reducer._st
    if after_end:
        st.ended = 0
    reducer.feed_many([event], trusted=True)
    return st.reply is not None, reducer.problems
