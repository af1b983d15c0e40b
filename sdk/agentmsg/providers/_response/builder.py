"""The AgentEvents of one provider response: :class:`StreamBuilder`, which every provider parser drives.

A provider parser (``providers/<provider>.py``, section ``# ---- stream``) reads the provider's payloads
and calls a :class:`StreamBuilder`, which writes AgentEvent dicts valid against
``schemas/agent-event.schema.json``; the one :class:`agentmsg.Reducer` folds them into the message. No
provider keeps an accumulator of its own: the builder only remembers which blocks and calls are open.

What the events of one provider response look like (one *choice* / candidate)::

    AGENT_START (replyId = the provider's response id, name)
    MODEL_CALL_START (modelName)
      THINKING_BLOCK_* / TEXT_BLOCK_* / TOOL_CALL_*   blocks in the order they started
      CUSTOM agentmsg.error        a provider error mid-stream, or a stream cut short (then:)
      REQUEST_STOP                 generateReason when it is not MODEL_STOP (TOOL_CALLS, INTERRUPTED),
                                   ``reason`` = the provider's finish reason or the error's ``type``
                                   (its message is the error event's alone)
    MODEL_CALL_END (usage)
    AGENT_END

Choices other than the first (OpenAI ``n > 1``, Gemini ``candidateCount``) carry ``source: "choice/<i>"``
on every event, so ``reduce_events(events)`` is choice 0 and ``reduce_events(events, source="choice/1")``
is choice 1.

A non-streaming response is written through a builder too, as the events its stream would give
(:func:`agentmsg.providers._response.parser.read_response`).

The values it writes are read from payloads by :mod:`._payload`; JSON numbers a double cannot hold, by
:mod:`._numbers`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import operator
import os
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import msgspec
import orjson

from agentmsg._codec.jsontext import INT_MAX, INT_MIN, deeper_than, has_lone_surrogate, json_type
from agentmsg._codec.jsontext import loads as codec_loads
from agentmsg._codec.limits import limits
from agentmsg.errors import Problem, ValidationError
from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT
from agentmsg.events.reducer import DEFAULT_MAX_PROBLEMS
from agentmsg.providers._request.common import MINTED_ID
from agentmsg.providers._response.numbers import (
    OVERFLOW,
    HugeNumber,
    as_event_value,
    first_beyond_double,
    json_text_of,
    overflowed,
)
from agentmsg.providers._response.payload import shown, text_or_none

__all__ = [
    "ERROR_EVENT",
    "NOT_KEPT_EVENT",
    "PROBLEM_EVENT",
    "StreamBuilder",
]


class _Call:
    __slots__ = (
        "args",
        "custom",
        "ended",
        "given",
        "id",
        "input",
        "kept",
        "late_signature",
        "minted",
        "name",
        "name_said",
        "no_id",
        "open",
        "pieces",
        "repeated",
        "said",
        "seq",
        "signature",
        "size",
        "stale",
        "started",
        "text",
    )

    def __init__(self, call_id: str | None, name: str | None, seq: int = 0) -> None:
        self.id = call_id or ""  # (set when it starts when the provider gave none: see _start_call)
        self.seq = seq  # its place among its choice's calls, in the order they appeared (see _Choice.settled)
        #: the id the provider gave (``id`` may get a suffix: see _start_call), None until it gives one: no value
        #: of the wire's stands for "none" (an id "\x00..." was once taken for that mark and replaced)
        self.given = call_id
        self.name = name
        #: (OpenAI's family) the name's fragments before its first argument text, as the SDK's accumulator joins
        #: them, and whether the last of them repeated the name so far (see StreamBuilder.tool_call). The name is
        #: ``pieces[:kept]`` joined, ``size`` characters long; joined only when read (:meth:`whole_name`), while
        #: ``stale`` (``name`` then holds an earlier, shorter join): joining at each piece was quadratic in them
        self.pieces: list[str] = []
        self.repeated = False
        self.kept = 0
        self.size = 0
        self.stale = False
        self.open = True
        self.started = False
        self.ended = False  # it ended before it could start (a call before it waits for its name): its END waits
        self.args = False  # whether an argument delta was emitted
        self.text: list[str] = []  # its argument fragments, read once when the reply ends (see _check_arguments)
        self.said = False  # its arguments were said to be unfinished (see incomplete_call)
        self.name_said = False  # a name of it that is no text, or its having none, was said (said once)
        #: a thought signature that came after the call started without one (a later part of a streamed
        #: Gemini call): sent with its TOOL_CALL_END, as the call's metadata
        self.late_signature: str | None = None
        #: the first thought signature it got (one that differs later is said, once: see StreamBuilder.tool_call),
        #: or "" once that was said
        self.signature: str | None = None
        self.input: dict[str, Any] | None = None  # its input when its text does not say it (see end_tool_call)
        self.custom = False  # an OpenAI custom tool's call: its text is free text, not JSON arguments (tool_call)
        self.minted = False  # the provider gave no id: agentmsg minted it (see _start_call, MINTED_ID)
        self.no_id = False  # the provider never gives it an id (OpenAI's legacy function_call): none is waited for

    def whole_name(self) -> str | None:
        """The call's name, its pieces joined if they were not yet (see :attr:`pieces`)."""
        if self.stale:
            self.name = "".join(self.pieces[: self.kept])
            self.stale = False
        return self.name


class _Choice:
    """What the builder remembers of one choice: its open blocks and calls (no content)."""

    __slots__ = (
        "appeared",
        "blocks",
        "calls",
        "calls_by_id",
        "done",
        "error",
        "finish",
        "grounding",
        "json",
        "minted",
        "normal",
        "over",
        "reason",
        "refusal",
        "reply_id",
        "settled",
        "source",
        "started",
        "suffixes",
        "waiting",
    )

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.started = False
        self.reply_id = ""
        self.blocks: dict[str, tuple[str, str]] = {}  # slot -> (kind, blockId), open blocks
        self.calls: dict[Any, _Call] = {}  # key (index / slot) -> call
        self.calls_by_id: dict[str, _Call] = {}
        self.suffixes: dict[str, int] = {}  # id -> the next suffix to try for a call that repeats it
        self.waiting: deque[_Call] = deque()  # calls not started yet, in the order they appeared
        #: (StreamBuilder.ids_expected) calls whose seq is below it have their whole name: a later call's argument
        #: text came (see StreamBuilder.tool_call)
        self.settled = 0
        self.appeared = 0  # calls that appeared so far (each call's seq)
        self.finish: str | None = None  # the provider's finish reason
        self.normal = False  # the finish reason is a plain stop
        self.over = False  # the provider said the choice is over (its finish reason): a fragment after it is said
        self.minted = 0  # tool call ids minted so far
        self.reason: str | None = None  # generate reason when not MODEL_STOP
        self.error: dict[str, Any] | None = None
        self.done = False
        self.refusal = False  # the model declined (MODEL_CALL_END metadata refusal: message agentmsg_refusal)
        self.json: list[str] = []  # the answer's text, when the request asked for structured output (see text)
        #: the provider's citation and grounding data of the whole reply, by its field names (StreamBuilder.grounding)
        self.grounding: dict[str, Any] | None = None


def _says_something(value: Any) -> bool:
    """Whether a provider's value says something: not null, empty, or an object whose every value says nothing
    (DashScope's ``{"extra_tool_info": [], "search_results": []}`` on every chunk after the one with the results)."""
    if isinstance(value, dict):
        return any(_says_something(v) for v in value.values())
    if isinstance(value, (str, list)):
        return bool(value)
    return value is not None  # (a number or a boolean says something, 0 and false too)


class _Data:
    """A data block the provider streams as bytes (see :meth:`StreamBuilder.data`): held until it can start, then
    its bytes of no whole 3-byte group yet, carried to the next piece."""

    __slots__ = ("block_id", "bytes", "held", "sniff")

    def __init__(self, sniff: Callable[[bytes], str], block_id: str | None) -> None:
        self.sniff = sniff
        self.block_id = block_id  # the id it asks for (a provider's), if any
        self.bytes = bytearray()  # before it starts: all its bytes; after: the 0-2 left over
        self.held = False


#: Text slots that are not the answer (OpenAI's refusal, an audio reply's transcript): not structured output
_NOT_ANSWER = frozenset(("refusal", "transcript"))

#: Problems a reply says at most (the reducer's default ``max_problems``): those beyond are counted, and said once
#: at the end (rule ``max-problems``). Each said one is held for the reply's life (``problems``, and its words to say
#: it once): a body of a million distinct bad payloads held them all, memory 4 times the body's bytes.
MAX_PROBLEMS = DEFAULT_MAX_PROBLEMS
#: The levels above a member of provider JSON an event or a message holds as it came (:meth:`StreamBuilder._holdable`):
#: a carrier's ``providerBlock`` in a conversation (the list, the message, its content, the block, its metadata); a
#: member nested deeper than ``limits.max_depth`` less these is kept as its JSON text
HOLD_ROOM: Final = 6

#: How many bytes a data block's media type is read from (:meth:`StreamBuilder.data`): "RIFF....WAVE" is 12
SNIFF_BYTES = 12


#: The default clock's parts (:func:`now`), package-internal (not in ``__all__``): the stream parser's feed
#: (``providers/_response/parser.py``) writes createdAt from them inline, as :func:`now` does
SECOND: tuple[int, str] = (-1, "")  # the last second formatted ("2026-12-02T15:31:12."), shared by every builder
MILLIS = tuple(f"{n:03d}" for n in range(1000))  # a createdAt's milliseconds, written once
MICROS_Z = tuple(f"{n:03d}Z" for n in range(1000))  # a createdAt's last 3 digits and its Z, written once


_LOW_DIGITS = tuple(f"{n:03x}" for n in range(4096))  # a counter's last 3 hex digits, written once


def _id_counter(prefix: str) -> Iterator[str]:
    """Event ids of 32 hex characters, like Java's: ``prefix`` (22) and a counter, as ``f"{n:010x}"`` writes it,
    made in C (no Python frame per id) and with no formatting per id (``%`` cost about 2,000 instructions an
    event, a tenth of a text chunk's whole path): each run of 4,096 ids is the run's first 7 digits, written
    once, joined to each of :data:`_LOW_DIGITS` in turn. The first run is made at once, with no formatting and
    no call of :func:`_id_run` (a reply's ids are in it, but for the longest: the counter and its first id cost
    about a fifth less). An iterator, taken with ``next()``: its bound ``__next__`` called cost about 220
    instructions an id more (a method-wrapper, called through ``tp_call``)."""
    return _chain(
        map(_add, _repeat(prefix + "0000000", 4096), _LOW_DIGITS), _runs(map(_id_run, _repeat(prefix), _count(1)))
    )


def _id_run(prefix: str, high: int) -> Iterator[str]:
    """The ids of run ``high`` of :func:`_id_counter`: ``prefix``, ``high`` in 7 hex digits, each of :data:`_LOW_DIGITS`."""
    return map(_add, _repeat(f"{prefix}{high:07x}", 4096), _LOW_DIGITS)


# (the counter's makers, looked up once: a reply makes one)
_chain, _runs, _repeat, _count, _add, _calls = (
    itertools.chain,
    itertools.chain.from_iterable,
    itertools.repeat,
    itertools.count,
    operator.add,
    itertools.starmap,
)


def now() -> str:
    """createdAt now (RFC 3339 UTC, microseconds): the date and time are formatted once per second
    (:func:`_second`), the milliseconds and microseconds taken from :data:`MILLIS` and :data:`MICROS_Z`
    (formatting them anew cost about a tenth of a text chunk's whole path). The stream parser writes the same
    inline, once per chunk (``StreamParser.feed``)."""
    micros = time.time_ns() // 1000
    second = SECOND
    if second[0] != micros // 1_000_000:  # (one tuple: threads never pair one second's text with another's)
        second = _second(micros // 1_000_000)
    return second[1] + MILLIS[micros // 1000 % 1000] + MICROS_Z[micros % 1000]


def _second(seconds: int) -> tuple[int, str]:
    """A second and its text (``SECOND``), formatted once (strftime cost about 1 us)."""
    global SECOND
    second = SECOND = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)))
    return second


#: A number a double may not hold: an exponent, or 309 digits in a row (without one, the text holds none, and
#: first_beyond_double, which reads the whole text again, need not look)
_MAYBE_HUGE = re.compile(r"[0-9][eE][+-]?[0-9]|[0-9]{309}")


def arguments_problem(name: str | None, text: str, finish: str | None) -> tuple[str, str] | None:
    """What is wrong with a tool call's whole arguments text at the end of a reply the provider ended (no error):
    (rule, message) of the problem to say, or None when the text is a JSON object the message holds. A pair of
    surrogates split across fragments is not judged here (the reducer joins it, and reads the text). The stream
    builder says it (:meth:`StreamBuilder._check_arguments`); the C fast paths ask it too."""
    if has_lone_surrogate(text):
        return None
    try:
        # The codec's reader, as the reducer reads them: an integer beyond 64 bits or nesting beyond the
        # limits is JSON the message cannot hold (argumentsError), said as such, not as unfinished.
        value = codec_loads(text.encode())
    except ValidationError as exc:
        first = exc.problems[0] if exc.problems else Problem("", "json", "not valid JSON")
        beyond = first_beyond_double(text) if first.rule == "json" and _MAYBE_HUGE.search(text) else None
        if beyond is not None:  # whole JSON, but a number a double cannot hold (1e400): not unfinished
            return (
                "json",
                f"tool call {str(name)[:80]!r}'s arguments are JSON the message cannot hold (a number"
                f" beyond a double's range: {beyond[:40]}): kept as they came (raw, with argumentsError)",
            )
        if first.rule != "json":
            return (
                first.rule,
                f"tool call {str(name)[:80]!r}'s arguments are JSON the message cannot hold"
                f" ({first.message[:120]}): kept as they came (raw, with argumentsError)",
            )
        ended = f"({finish[:40]})" if finish else "(no finish reason)"
        return (
            "incomplete",
            f"the reply ended {ended} with tool call {str(name)[:80]!r}'s arguments not whole JSON:"
            f" kept as they came (raw, with argumentsError): ...{text[-60:]!r}",
        )
    if type(value) is not dict:  # JSON, but no object: a tool's input is one
        return (
            "type",
            f"tool call {str(name)[:80]!r}'s arguments are JSON but not an object ({json_type(value)}):"
            " kept as they came (raw, with argumentsError)",
        )
    return None


class StreamBuilder:
    """Writes the AgentEvents of one provider response; provider stream parsers drive it.

    ``provider`` goes into thinking blocks' provenance (``provider``, ``model``). ``name`` is the reply's
    agent name (the message's ``name``). ``reply_id`` overrides the provider's response id as the message
    id. ``id_factory`` / ``clock`` make event ids and createdAt deterministic. ``started_at``
    (``time.monotonic()`` when the request was sent) adds the call's wall-clock ``time`` to the usage.
    ``agent_events=False`` leaves out AGENT_START/AGENT_END (for an agent loop that frames its own reply).
    ``redact``: a function the texts of errors and problems (the provider's error message, a payload quoted)
    go through before they are said (a client's, which removes the credentials it sent).
    ``structured_output``: the request asked for structured output, the reply's JSON is in its text (``{"from":
    "text"}``) or in the input of a call of the tool it forced (``{"from": "tool", "name": ...}``): read when each
    choice ends, and given on its MODEL_CALL_END (``metadata.structuredOutput``, the message's metadata
    ``_structured_output``), or said (problem ``structured-output``) when it is no JSON object (the text is kept).

    ``_tick_later`` (a stream parser's, which ticks at each chunk before any event): the default clock is not read
    now (the events' createdAt is taken at the first :meth:`tick`).

    Events accumulate in :attr:`events`; :meth:`drain` hands them over.
    """

    # Slots: a builder has more attributes (35) than CPython 3.11 shares keys for (30), so each one made a dict
    # that grew by resizing (about 7,000 instructions a reply); its attributes are read by slot, per chunk too.
    __slots__ = (
        "_blocks",
        "_choices",
        "_data",
        "_data_ids",
        "_exact",
        "_fixed_id",
        "_held",
        "_later",
        "_not_kept_keys",
        "_pending",
        "_redact",
        "_renamed",
        "_said",
        "_signatures",
        "_unstarted",
        "_whole_signatures",
        "agent_events",
        "block_texts",
        "clock",
        "closed",
        "errors",
        "events",
        "ids",
        "ids_expected",
        "model",
        "name",
        "not_kept_notes",
        "payload",
        "problems",
        "provider",
        "response_id",
        "stamp",
        "started_at",
        "structured",
        "unsaid",
        "usage",
    )

    def __init__(
        self,
        provider: str,
        *,
        name: str | None = None,
        reply_id: str | None = None,
        id_factory: Callable[[], str] | None = None,
        clock: Callable[[], str] | None = None,
        started_at: float | None = None,
        agent_events: bool = True,
        structured_output: dict[str, Any] | None = None,
        redact: Callable[[str], str] | None = None,
        _tick_later: bool = False,
    ) -> None:
        self.provider = provider
        #: What the texts of errors and problems go through before they are said (a client's: the credentials
        #: it sent, which a server may echo in an error, replaced); None: said as they are
        self._redact = redact
        self.name = name
        #: The provider names every call with an id, possibly after its name (OpenAI's family): a call waits
        #: for its id before it starts, so an id that comes late is the call's own (as the official
        #: accumulator merges it), not a new call's; a call that never gets one starts, with a derived id,
        #: when it ends. It waits for its first argument text too (or a later call's: calls come in index order):
        #: a name split across the fragments before it is joined, as the accumulator joins it. Otherwise (Gemini: no ids) a call starts as soon as it has its
        #: name.
        self.ids_expected = False
        self.model: str | None = None
        self.response_id: str | None = reply_id
        self._fixed_id = reply_id is not None
        self.events: list[dict[str, Any]] = []
        self.problems: list[Problem] = []
        self.not_kept_notes: list[Problem] = []  # provider data not kept (see not_kept)
        self._not_kept_keys: set[str] = set()
        self._said: set[tuple[str, str]] = set()  # (rule, message) of the problems said (see problem)
        self.unsaid = 0  # problems beyond MAX_PROBLEMS: counted, said once at the end (see close)
        self.usage: dict[str, Any] | None = None  # see usage_later: the last one may wait in _later
        self._later: tuple[Callable[[Any, StreamBuilder], dict[str, Any] | None], Any] | None = None
        self.errors: list[dict[str, Any]] = []  # the errors reported (error events' values)
        self.started_at = started_at
        self.agent_events = agent_events
        if structured_output is not None and not (
            isinstance(structured_output, dict)
            and (
                structured_output.get("from") == "text"
                or (structured_output.get("from") == "tool" and isinstance(structured_output.get("name"), str))
            )
        ):
            raise ValueError(
                f"structured_output is {{'from': 'text'}} or {{'from': 'tool', 'name': ...}}, not {structured_output!r}"
            )
        self.structured = structured_output
        self.closed = False
        #: The event ids, taken with ``next()`` (see :func:`_id_counter`): an ``id_factory`` given is called for
        #: each (``starmap``: what it raises, StopIteration too, is raised as it was when it was called itself)
        #: (``ids``, ``clock`` and ``stamp`` are package-internal: the stream parser's feed takes an id, ticks with
        #: the clock and writes the stamp inline, as :meth:`tick` and :meth:`routed` do)
        self.ids: Iterator[str] = (
            _id_counter(os.urandom(11).hex()) if id_factory is None else _calls(id_factory, _repeat(()))
        )
        #: the clock createdAt is read from (:func:`now`, or the one given), and the createdAt of the events built now
        self.clock = clock or now
        if clock is not None or not _tick_later:  # (a stream parser's feed ticks before any event: not taken twice)
            self.stamp = self.clock()
        self._choices: dict[int, _Choice] = {}
        self._blocks = 0
        self._pending: dict[int, list[str]] = {}  # argument fragments of calls not started yet
        self._signatures: dict[int, str] = {}  # thought signatures of calls not started yet
        self._whole_signatures: dict[str, str] = {}  # blockId -> its whole signature, sent when it ends
        #: CUSTOM events (problems, notes) said before their choice opened: held until it opens, so that a
        #: problem with the first payload does not open the reply before a later payload names it (id, model)
        self._held: dict[int, list[tuple[str, dict[str, Any]]]] = {}  # choice -> (name, value), in order
        self._renamed: set[int] = set()  # calls (id()) a differing later name was said of
        #: the text fragments of choice 0's text and thinking blocks, by slot, for a reader that compares them with a
        #: whole text the provider gives again (OpenAI Responses' ``.done`` events): it appends those it reads and
        #: takes a slot's list when it compares; the routed deltas (:meth:`route_parts`, :meth:`routed`) are
        #: appended here too. None (the default): not kept
        self.block_texts: dict[Any, list[str]] | None = None
        self._unstarted: dict[tuple[int, str], _Data] = {}  # (choice, slot) -> a streamed data block not started yet
        self._data: dict[str, _Data] = {}  # blockId -> a streamed data block started (open)
        self._data_ids: set[str] = set()  # the provider ids streamed data blocks took as their blockId
        #: The text of the payload being read (its parser sets it): :meth:`json_text` takes numbers from it
        self.payload: str | bytes | None = None
        self._exact: tuple[str | bytes, list[Any]] | None = None  # (payload, the walk of its exact decode)

    # ---- plumbing -------------------------------------------------------------------------------

    def drain(self) -> list[dict[str, Any]]:
        out = self.events
        self.events = []
        return out

    def tick(self) -> None:
        """Take the time: the events built until the next tick share it as createdAt (a parser ticks once
        per chunk of the body it is fed: the events of one network read were created together)."""
        self.stamp = self.clock()

    def _ev(self, c: _Choice, type_: str, **fields: Any) -> dict[str, Any]:
        # (one display with the fields unpacked into it: a dict made, then updated with them, cost a method call more)
        if c.source is None:
            e = {"type": type_, "id": next(self.ids), "createdAt": self.stamp, **fields}
        else:
            e = {"type": type_, "id": next(self.ids), "createdAt": self.stamp, "source": c.source, **fields}
        self.events.append(e)
        return e

    def identify(self, response_id: Any = None, model: Any = None) -> None:
        """The provider's response id (the message id) and model, as soon as a payload names them; either of another
        JSON type than a string is said (problem ``type``) and left out (the message then has an id of its own)."""
        if not self._fixed_id and self.response_id is None and response_id:
            if type(response_id) is str:
                self.response_id = response_id
            else:
                self.string(response_id, "the response's id")
        if self.model is None and model:
            if type(model) is str:
                self.model = model
            else:
                self.string(model, "the response's model")

    def choice(self, index: int = 0) -> _Choice:
        """The state of choice ``index``, opened (AGENT_START, MODEL_CALL_START) on first use."""
        c = self._choices.get(index)
        if c is not None and c.started:
            return c
        if c is None:
            c = self._choices[index] = _Choice(None if index == 0 else f"choice/{index}")
        if self.response_id is None:
            self.response_id = uuid.uuid4().hex  # none from the provider: unique (two replies never share one)
        c.reply_id = self.response_id if index == 0 else f"{self.response_id}-{index}"
        c.started = True
        if self.agent_events:  # (its fields as keywords: no dict of them made, then unpacked into the call's)
            if self.name is not None:
                self._ev(c, "AGENT_START", replyId=c.reply_id, name=self.name, role="assistant")
            else:
                self._ev(c, "AGENT_START", replyId=c.reply_id, role="assistant")
        if self.model is not None:
            self._ev(c, "MODEL_CALL_START", replyId=c.reply_id, modelName=self.model)
        else:
            self._ev(c, "MODEL_CALL_START", replyId=c.reply_id)
        if self._held:
            # (this choice's only: scanning every choice's at each choice that opens was quadratic in the choices)
            for name, value in self._held.pop(index, ()):
                self._ev(c, "CUSTOM", name=name, value=value)
        return c

    def _say(self, index: int, name: str, value: dict[str, Any]) -> None:
        """A CUSTOM event of choice ``index``; held until the choice opens (see :attr:`_held`)."""
        c = self._choices.get(index)
        if c is None or not c.started:
            self._held.setdefault(index, []).append((name, value))
            return
        self._ev(c, "CUSTOM", name=name, value=value)

    # ---- blocks ---------------------------------------------------------------------------------

    def _open(self, c: _Choice, slot: str, kind: str) -> str:
        if c.waiting and self.ids_expected:
            self._moved_on(c)
        block = c.blocks.get(slot)
        if block is not None:
            if block[0] == kind:
                return block[1]
            self.end_block(slot, c)
        self._blocks += 1
        block_id = f"{kind}-{self._blocks}"
        c.blocks[slot] = (kind, block_id)
        if kind == "thinking":
            extra: dict[str, Any] = {"provider": self.provider}
            if self.model is not None:
                extra["model"] = self.model
            self._ev(c, "THINKING_BLOCK_START", replyId=c.reply_id, blockId=block_id, **extra)
        else:
            self._ev(c, "TEXT_BLOCK_START", replyId=c.reply_id, blockId=block_id)
        return block_id

    def text(self, delta: str, *, choice: int = 0, slot: str = "text", ends: str | None = None) -> None:
        """A text fragment for the text block in ``slot`` (opened on first use). ``ends``: the slot of a block
        the text ends, if open (the reasoning is over once the answer starts), as ``end_block(ends, choice)``
        before it would (an empty fragment ends nothing)."""
        if not delta:
            return  # an empty fragment opens no block (no empty text blocks)
        if type(delta) is not str:
            self._not_text("a text fragment", delta)
            return
        c = self._choices.get(choice)
        if c is None or not c.started:
            c = self.choice(choice)
        if c.over:
            self._after_finish(c, choice, "a text fragment")
        if ends is not None and ends in c.blocks:
            self.end_block(ends, c)
        if self.structured is not None and slot not in _NOT_ANSWER:
            c.json.append(delta)
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "text" else self._open(c, slot, "text")
        e = {
            "type": "TEXT_BLOCK_DELTA",
            "id": next(self.ids),
            "createdAt": self.stamp,
            "replyId": c.reply_id,
            "blockId": block_id,
            "delta": delta,
        }
        if c.source is not None:
            e["source"] = c.source
        self.events.append(e)

    def route_parts(self, kind: str, slot: Any) -> tuple[str, str, str, list[str] | None] | None:
        """What every delta event of choice 0's open block or call in ``slot`` holds but its id, time and delta, for a
        caller that writes such events itself while that block or call stays open and nothing else comes (the stream
        parser's routes, :meth:`PayloadReader.route_text`), as :meth:`text`, :meth:`thinking` and
        :meth:`tool_call` write them: (event type, replyId, the blockId or, for a call, its toolCallId, the call's
        argument pieces the delta joins, or the block's text pieces when :attr:`block_texts` keeps them, or None).
        ``kind``: ``text`` (``slot`` a text block's), ``thinking`` (a thinking block's) or ``call`` (``slot`` a
        started call's key, whose arguments have begun). None when the method would do more (a subclass's,
        structured output's text, a source), or nothing of that kind is open there."""
        c = self._choices.get(0)
        if type(self) is not StreamBuilder or c is None or not c.started or c.source is not None or c.over:
            return None  # (after the finish reason: each fragment said, see text)
        if kind == "call":
            call = c.calls.get(slot)
            if call is None or not call.open or not call.started or not call.args:
                return None
            return ("TOOL_CALL_DELTA", c.reply_id, call.id, call.text)
        block = c.blocks.get(slot)
        if block is None or block[0] != kind or (kind == "text" and self.structured is not None):
            return None
        texts = self.block_texts
        pieces = None if texts is None else texts.setdefault(slot, [])
        return ("TEXT_BLOCK_DELTA" if kind == "text" else "THINKING_BLOCK_DELTA", c.reply_id, block[1], pieces)

    def routed(self, kind: str, slot: Any, delta: str) -> None:
        """A routed payload's delta (:meth:`route_parts`) read as the payload it repeats was: ``text(delta, slot=)``,
        ``thinking(delta, slot=)`` or ``tool_call(slot, arguments=delta)``, of choice 0."""
        if kind != "call" and self.block_texts is not None:
            self.block_texts.setdefault(slot, []).append(delta)
        if kind == "text":
            self.text(delta, slot=slot)
        elif kind == "thinking":
            self.thinking(delta, slot=slot)
        else:
            self.tool_call(slot, arguments=delta)

    def thinking(
        self,
        delta: str,
        *,
        choice: int = 0,
        slot: str = "thinking",
        signature: str | None = None,
        redacted: str | None = None,
    ) -> None:
        """A reasoning fragment (and/or a signature or redacted-data fragment) for the thinking block in ``slot``."""
        if not (delta or signature or redacted):
            return
        if not (text_or_none(delta) and text_or_none(signature) and text_or_none(redacted)):
            self._not_text("a thinking fragment, signature or redacted data", delta, signature, redacted)
            return
        c = self.choice(choice)
        if delta and c.over:
            self._after_finish(c, choice, "a reasoning fragment")
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "thinking" else self._open(c, slot, "thinking")
        e = self._ev(c, "THINKING_BLOCK_DELTA", replyId=c.reply_id, blockId=block_id, delta=delta)
        if signature:
            e["signature"] = signature
        if redacted:
            e["redactedData"] = redacted

    def signature(self, value: str, *, choice: int = 0, slot: str = "thinking") -> None:
        """The *whole* signature of the thinking block in ``slot`` (opened on first use), where the provider
        sends it as one value that a later one replaces (Anthropic's ``signature_delta``): held, the last
        one winning, and emitted once as a signature-only delta when the block ends. (``thinking(...,
        signature=)`` is for signature *fragments*, which the reducer concatenates.)"""
        if not value:
            return
        if type(value) is not str:
            self._not_text("a signature", value)
            return
        c = self.choice(choice)
        block = c.blocks.get(slot)
        block_id = block[1] if block is not None and block[0] == "thinking" else self._open(c, slot, "thinking")
        self._whole_signatures[block_id] = value

    def media(self, block: dict[str, Any], *, choice: int = 0) -> None:
        """A whole media block of the reply (an image the model made, say: a ``data`` block, see
        ``schemas/content-block.schema.json``), in its place among the blocks: the open text and thinking
        blocks end first, then DATA_BLOCK_START carrying the block and its DATA_BLOCK_END."""
        c = self.choice(choice)
        if c.waiting and self.ids_expected:
            self._moved_on(c)
        for slot in list(c.blocks):
            self.end_block(slot, c)
        self._blocks += 1
        block_id = f"data-{self._blocks}"
        self._ev(c, "DATA_BLOCK_START", replyId=c.reply_id, blockId=block_id, block=block)
        self._ev(c, "DATA_BLOCK_END", replyId=c.reply_id, blockId=block_id)

    def data(
        self,
        raw: bytes,
        *,
        choice: int = 0,
        slot: str = "data",
        sniff: Callable[[bytes], str],
        block_id: str | None = None,
        hold: bool = False,
    ) -> None:
        """Bytes of a ``data`` block the provider streams in pieces (each piece's own base64 decoded by the
        parser: OpenAI's audio), for the block in ``slot``. It starts (DATA_BLOCK_START, its ``mediaType``
        ``sniff`` of its first :data:`SNIFF_BYTES` bytes, its blockId ``block_id`` when given and not taken) once
        it has that many bytes and is not ``hold`` (see :meth:`release`), or when it ends; its DATA_BLOCK_DELTAs
        are the base64 of whole 3-byte groups, the 0-2 bytes left carried to the next piece and written, padded,
        when it ends (:meth:`end_block`): the deltas join into the base64 of the bytes, however they came."""
        c = self.choice(choice)
        d = self._unstarted.get((choice, slot))
        if d is None:
            block = c.blocks.get(slot)
            if block is not None and block[0] == "data":
                d = self._data[block[1]]
                d.bytes += raw
                self._data_delta(c, block[1], d, end=False)
                return
            d = self._unstarted[(choice, slot)] = _Data(sniff, block_id)
        d.block_id = d.block_id or block_id
        d.bytes += raw
        d.held = d.held or hold
        if not d.held and len(d.bytes) >= SNIFF_BYTES:
            self._data_start(c, choice, slot)

    def is_open(self, slot: str, choice: int = 0) -> bool:
        """Whether choice ``choice`` has an open block in ``slot``."""
        c = self._choices.get(choice)
        return c is not None and slot in c.blocks

    def data_id(self, *, choice: int = 0, slot: str = "data") -> str | None:
        """The blockId of the data block open in ``slot`` (:meth:`data`), None when none has started there."""
        c = self._choices.get(choice)
        block = c.blocks.get(slot) if c is not None else None
        return block[1] if block is not None and block[0] == "data" else None

    def release(self, *, choice: int = 0, slot: str = "data") -> None:
        """The data block in ``slot`` (:meth:`data`) need no longer wait: it starts once it has its first bytes."""
        d = self._unstarted.get((choice, slot))
        if d is not None:
            d.held = False
            if len(d.bytes) >= SNIFF_BYTES:
                self._data_start(self.choice(choice), choice, slot)

    def _data_start(self, c: _Choice, choice: int, slot: str) -> None:
        d = self._unstarted.pop((choice, slot))
        if c.waiting and self.ids_expected:
            self._moved_on(c)
        block = c.blocks.get(slot)
        if block is not None:
            self.end_block(slot, c)
        self._blocks += 1
        block_id = d.block_id
        if not block_id or block_id in self._data_ids:
            block_id = f"data-{self._blocks}"
        else:
            self._data_ids.add(block_id)
        c.blocks[slot] = ("data", block_id)
        self._data[block_id] = d
        self._ev(
            c, "DATA_BLOCK_START", replyId=c.reply_id, blockId=block_id, mediaType=d.sniff(bytes(d.bytes[:SNIFF_BYTES]))
        )
        self._data_delta(c, block_id, d, end=False)

    def _data_delta(self, c: _Choice, block_id: str, d: _Data, *, end: bool) -> None:
        raw = d.bytes
        whole = len(raw) if end else len(raw) - len(raw) % 3
        if whole:
            delta = base64.b64encode(raw[:whole]).decode("ascii")
            del raw[:whole]
            self._ev(c, "DATA_BLOCK_DELTA", replyId=c.reply_id, blockId=block_id, delta=delta)

    def opened(self) -> bool:
        """Whether a choice has started (its AGENT_START and MODEL_CALL_START emitted)."""
        return bool(self._choices)

    def end_block(self, slot: str, c: _Choice | int = 0, *, metadata: dict[str, Any] | None = None) -> None:
        """End the block in ``slot``; ``metadata``: the block's own metadata, sent on its END event (the reducer
        keeps it, beside the provider, model and signature the block's other events gave)."""
        if isinstance(c, int):
            c = self._choices.get(c)  # type: ignore[assignment]
            if c is None:
                return
        assert isinstance(c, _Choice)
        block = c.blocks.pop(slot, None)
        if block is None:
            return
        kind, block_id = block
        if kind == "data":
            self._data_delta(c, block_id, self._data.pop(block_id), end=True)
            self._ev(c, "DATA_BLOCK_END", replyId=c.reply_id, blockId=block_id)
            return
        signature = self._whole_signatures.pop(block_id, None)
        if signature is not None:
            self._ev(c, "THINKING_BLOCK_DELTA", replyId=c.reply_id, blockId=block_id, delta="", signature=signature)
        end = self._ev(
            c, "THINKING_BLOCK_END" if kind == "thinking" else "TEXT_BLOCK_END", replyId=c.reply_id, blockId=block_id
        )
        if metadata:
            end["metadata"] = metadata

    # ---- tool calls -----------------------------------------------------------------------------

    def tool_call(
        self,
        key: Any,
        *,
        choice: int = 0,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
        thought_signature: str | None = None,
        custom: bool = False,
        no_id: bool = False,
    ) -> None:
        """One fragment of a tool call addressed by ``key`` (the provider's index or block slot).

        A fragment with an id other than the open call's at that key starts a new call (providers that
        reuse an index for parallel calls); a name is set once, never appended, except, where :attr:`ids_expected`,
        one split across the fragments before the call's first argument text (a fragment that repeats the name so
        far repeats it). Calls start in the order they appeared, each once it has its name (and, where
        :attr:`ids_expected`, its id and its first argument text, or a later call's; the id then is
        the provider's, or one derived when the provider gave none): a call whose name comes after its id,
        or its id after its name, or either after a later call's first fragment, keeps its name, its id and
        its place. Fragments that come before are held until it starts, or until the call (or the stream)
        ends. A name that is no text is said (``type``, once per call) and left out, the rest of the fragment
        kept; a call that ends with no name is said (``required``) unless that was said of it. ``custom``: the
        call is an OpenAI custom tool's, whose "arguments" are the tool's free-text input, not JSON: its
        TOOL_CALL_END gives ``input: {}`` and metadata ``toolType: "custom"`` (the text is the call's
        ``content``, never read as JSON: no ``argumentsError``, nothing said of it). ``no_id``: the provider never
        gives the call an id (OpenAI's legacy ``function_call``): where :attr:`ids_expected`, it does not wait for
        one (it starts with a derived id once it has its name and first argument text)."""
        bad_name = name
        if type(name) is not str:
            name = None
        if not (text_or_none(call_id) and text_or_none(arguments) and text_or_none(thought_signature)):
            # each field that is no text is said and left out, the rest of the fragment kept (a call whose id is a
            # number keeps its name and arguments: it gets an id as a call without one does)
            call_id = self.string(call_id, "a tool call's id")
            arguments = self.string(arguments, "a tool call's arguments")
            thought_signature = self.string(thought_signature, "a tool call's thought signature")
        c = self.choice(choice)
        if c.over and (arguments or name):
            self._after_finish(c, choice, "a tool call's arguments" if arguments else "a tool call")
        call = c.calls.get(key)
        if call_id and call is not None and call.given is not None and call.given != call_id:
            self._end_call(c, call)
            call = None
        if call is None or not call.open:
            if call_id and not name and call_id in c.calls_by_id and c.calls_by_id[call_id].open:
                # A fragment of an open call under another key (no name: it does not start a call). One that
                # names a call starts a new one, though it repeats an open call's id: see _start_call.
                call = c.calls_by_id[call_id]
                c.calls[key] = call  # (this key's later fragments, with or without the id, are this call's)
            else:
                c.appeared += 1
                call = _Call(call_id or None, None, c.appeared)  # (named below)
                c.calls[key] = call
                c.waiting.append(call)
                self._pending[id(call)] = []
        elif call.given is None and call_id:
            call.id = call.given = call_id  # an id that arrives late
        if bad_name is not name and not call.name_said:  # (bad_name is not None: no text)
            call.name_said = True
            self._problem_at(c, "type", f"a tool call's name is not a string (a JSON {json_type(bad_name)}): left out")
        if name and not call.name:
            call.name = name
            call.pieces.append(name)
            call.kept, call.size = 1, len(name)
        elif name and self.ids_expected and not call.started and not call.text:
            # A name split across the fragments before its arguments: one name, as the SDK's accumulator joins it.
            # A fragment that repeats the name so far repeats it (servers that send the name on every fragment),
            # unless a new piece follows it: then it was a piece too (the name was split, a piece like the name
            # so far: "c", "c", "x"), and the name is every piece, as the accumulator joins them. (Joined when
            # read: a piece is compared with the name only when as long, so each costs its own length.)
            call.pieces.append(name)
            if len(name) == call.size and name == call.whole_name():
                call.repeated = True
            else:
                call.repeated = False
                call.size += sum(map(len, call.pieces[call.kept :]))
                call.kept = len(call.pieces)
                call.stale = True
        elif name and name != call.whole_name() and id(call) not in self._renamed:
            self._renamed.add(id(call))  # said once per call
            self.problem(
                "name",
                f"a later fragment names a tool call {name[:80]!r}, not {str(call.name)[:80]!r}: left out (a call's"
                " name is set once)",
            )
        if custom:
            call.custom = True
        if no_id:
            call.no_id = True
        if thought_signature:
            if call.signature is None:  # its first: sent on its START, or on its END when it came after the START
                call.signature = thought_signature
                if not call.started:
                    self._signatures[id(call)] = thought_signature
                elif call.late_signature is None:
                    call.late_signature = thought_signature
            elif call.signature and thought_signature != call.signature:  # (the same one again: no news)
                call.signature = ""  # (said once per call)
                self._problem_at(
                    c,
                    "duplicate",
                    f"a later fragment of tool call {str(call.whole_name())[:80]!r} gives another thought signature: the"
                    " first kept",
                )
        if call.started:
            if arguments:
                call.text.append(arguments)
                self._ev(c, "TOOL_CALL_DELTA", replyId=c.reply_id, toolCallId=call.id, delta=arguments)
                call.args = True
            return
        if arguments:
            call.text.append(arguments)
            self._pending[id(call)].append(arguments)
            if self.ids_expected and call.seq > c.settled:
                # (OpenAI's family) A call's name is split only across the fragments before its argument text, and
                # calls come in index order: each call before this one has its whole name now, so one that never
                # gets argument text (a tool without parameters) starts once it has its id, and no longer holds
                # this one back until the reply moves on or ends
                c.settled = call.seq
        self._start_ready(c)

    def _ready(self, call: _Call, moved_on: bool = False, settled: bool = False) -> bool:
        """A waiting call can start: it has its name (and its id, see :attr:`ids_expected`), or it ended (no more
        of it comes: it starts as it is). ``moved_on``: see :meth:`_moved_on`; ``settled``: a later call's argument
        text came (:attr:`_Choice.settled`)."""
        if call.ended:
            return True
        if self.ids_expected:  # (OpenAI's family) its id, and its first argument text: its name is whole then (a
            # name split across fragments comes before it, a later call's first fragments between them or not), or
            # the reply moved on to another block, or a later call's argument text came (``settled``)
            return (
                bool(call.name) and (moved_on or settled or bool(call.text)) and (call.no_id or call.given is not None)
            )
        return bool(call.name)

    def _start_ready(self, c: _Choice, moved_on: bool = False) -> None:
        """Start the waiting calls that are ready (:meth:`_ready`), in order, up to the first that is not; one
        that ended while it waited ends too."""
        while c.waiting and self._ready(c.waiting[0], moved_on, c.waiting[0].seq < c.settled):
            call = c.waiting.popleft()  # (a deque: calls that ended behind one waiting for its name may be many)
            self._start_call(c, call)
            if call.ended:
                self._end_started(c, call)

    def _moved_on(self, c: _Choice) -> None:
        """(:attr:`ids_expected`) A block of another kind opens while calls wait for their first argument text:
        the reply has moved on, so their names are whole (a name split across fragments comes before anything
        else). Each that has its name and id starts, in order, up to the first that has not, so the calls keep
        their place before the block (a call that never gets argument text, a tool without parameters, before
        the text after it)."""
        self._start_ready(c, moved_on=True)

    def _start_call(self, c: _Choice, call: _Call) -> None:
        if call.given is None:
            # No id from the provider (Gemini, some compatible servers): one derived from the response id
            # and the call's place, so a reply parsed twice, streamed or whole, gets the same ids.
            c.minted += 1
            seed = f"{self.response_id}/{c.source}/{c.minted}".encode()
            call.id = f"call_{hashlib.blake2b(seed, digest_size=12).hexdigest()}"
            call.minted = True
        for slot in [s for s, b in c.blocks.items() if b[0] == "thinking"]:
            self.end_block(slot, c)  # reasoning is over once the model calls a tool
        if call.id in c.calls_by_id:  # an earlier call's id: the reducer would join the two into one
            taken = call.id
            n = c.suffixes.get(taken, 2)  # (from where the last search stopped: linear in the calls)
            while f"{taken}-{n}" in c.calls_by_id:
                n += 1
            c.suffixes[taken] = n + 1
            call.id = f"{taken}-{n}"
            self.problem("id", f"tool call id {taken[:80]!r} is an earlier call's too: this call's is {call.id[:90]!r}")
        call.whole_name()
        call.started = True
        call.pieces = []  # (its name is whole)
        c.calls_by_id[call.id] = call
        fields: dict[str, Any] = {"replyId": c.reply_id, "toolCallId": call.id, "toolCallName": call.name or ""}
        sig = self._signatures.pop(id(call), None)
        if sig:
            fields["thoughtSignature"] = sig
            call.late_signature = ""  # it has one: a later one is not taken
        self._ev(c, "TOOL_CALL_START", **fields)
        pending = self._pending.pop(id(call), None)
        if pending:
            self._ev(c, "TOOL_CALL_DELTA", replyId=c.reply_id, toolCallId=call.id, delta="".join(pending))
            call.args = True

    def end_tool_call(
        self,
        key: Any,
        *,
        choice: int = 0,
        default_arguments: str | None = None,
        input: dict[str, Any] | None = None,
    ) -> None:
        """The call at ``key`` is complete. ``default_arguments`` is what the provider gave as the call's
        arguments before any delta (Anthropic's ``input`` on content_block_start), emitted when no delta came.
        ``input``: the call's input, when its text is not it (Gemini's updates that changed a key the streamed
        text already holds, which is never taken back): sent on its TOOL_CALL_END."""
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        if c is None or call is None or not call.open:
            return
        call.input = input
        if default_arguments is not None and not call.args and not self._pending.get(id(call)):
            self.tool_call(key, choice=choice, arguments=default_arguments)
        self._end_call(c, call)

    def _end_call(self, c: _Choice, call: _Call) -> None:
        if not call.started:
            # No more of it comes: it starts as it is, once every call before it has started (one before it that
            # waits for its name may still get it: it is not started nameless for this one), and ends then.
            if call.open:
                call.open, call.ended = False, True
                self._start_ready(c)
            return
        if call.open:
            self._end_started(c, call)

    def _end_started(self, c: _Choice, call: _Call) -> None:
        """The END of a started call (said when it has no name, :meth:`tool_call`)."""
        call.open = False
        if not call.name and not call.name_said and c.error is None:  # (a cut reply: the cut is said)
            call.name_said = True
            self._problem_at(c, "required", f"tool call {call.id[:80]!r} ended without a name: kept with an empty name")
        end: dict[str, Any] = {"replyId": c.reply_id, "toolCallId": call.id, "toolCallName": call.name or ""}
        if call.late_signature:
            end["metadata"] = {"thoughtSignature": call.late_signature}
        if call.custom:  # free text, not JSON arguments: no input is read from it (see tool_call)
            end["metadata"] = {**end.get("metadata", {}), "toolType": "custom"}
            end["input"] = {}
        if call.minted:  # (its final id: a suffix _start_call added is part of it)
            end["metadata"] = {**end.get("metadata", {}), MINTED_ID: call.id}
        if call.input is not None:
            end["input"] = call.input
        self._ev(c, "TOOL_CALL_END", **end)

    def incomplete_call(self, key: Any, why: str, *, choice: int = 0) -> None:
        """The call at ``key`` is left unfinished by the provider (Gemini: the reply finished, or a new call
        began, while its arguments were streaming): said (problem ``incomplete``, with ``why``), once per call;
        its arguments stay as they came (the message keeps text that is not JSON raw, with ``argumentsError``)."""
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        if c is None or call is None or call.said:
            return
        call.said = True
        self._problem_at(c, "incomplete", f"{why}: its arguments are kept as they came", call)

    def _check_arguments(self, c: _Choice) -> None:
        """The reply ended as the provider ended it (no error): a call whose arguments are not whole JSON (cut at
        max_tokens, say) is said (problem ``incomplete``), once per call, as Gemini's unfinished streamed call
        is; the message keeps them raw, with ``argumentsError``. Each call's text is read once, here."""
        for call in c.calls_by_id.values():
            if call.said or not call.text or call.custom:
                continue
            said = arguments_problem(call.name, "".join(call.text), c.finish)
            if said is not None:
                call.said = True
                self._problem_at(c, said[0], said[1], call)

    def open_call(self, key: Any, *, choice: int = 0) -> bool:
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        return call is not None and call.open

    def call_text(self, key: Any, *, choice: int = 0) -> str | None:
        """The argument text the call ``key`` was given so far, joined; None when there is no such call."""
        c = self._choices.get(choice)
        call = c.calls.get(key) if c is not None else None
        return None if call is None else "".join(call.text)

    # ---- end of a response ----------------------------------------------------------------------

    def set_usage(self, usage: dict[str, Any] | None) -> None:
        """The response's usage so far (providers send cumulative usage: each count's last value wins; a
        usage without a count, Gemini's last chunk without promptTokenCount say, keeps the one before)."""
        if usage:
            later, self._later = self._later, None
            if later is not None:  # the usage held for later (usage_later): taken now, under this one
                earlier = later[0](later[1], self)
                if earlier:
                    self.usage = earlier
            self.usage = {**self.usage, **usage} if self.usage else usage

    def usage_later(
        self, convert: Callable[[Any, StreamBuilder], dict[str, Any] | None], raw: Any, input_key: str
    ) -> None:
        """The provider's cumulative usage ``raw`` of this chunk, converted by ``convert(raw, self)`` only if it
        is still the last when the reply ends (Gemini and DashScope send it with every chunk: converting each
        would cost more than the chunk's text). That is when its input count (``raw[input_key]``) is a
        token count, so that ``convert(raw)`` cannot be empty; otherwise it is converted now, and kept only
        if it is not empty, as :meth:`set_usage` keeps it. Either way the last non-empty usage wins. (A count
        that is no count is said when its usage is converted, :meth:`no_count`: a usage a later one replaced
        before it was converted is not read.)"""
        n = raw.get(input_key) if isinstance(raw, dict) else None
        if type(n) is int and n >= 0:
            self._later = (convert, raw)
        else:
            self.set_usage(convert(raw, self))

    def usage_later_known(self, convert: Callable[[Any, StreamBuilder], dict[str, Any] | None], raw: Any) -> None:
        """:meth:`usage_later` for a usage whose input count is known to be a token count: a routed payload of the
        shape of one whose was (:meth:`PayloadReader.route_text`), whose usage ``convert`` reads from the payload's
        bytes ``raw`` if it is still the last when the reply ends."""
        self._later = (convert, raw)

    def _settle_usage(self) -> None:
        later = self._later
        if later is not None:
            self._later = None
            self.set_usage(later[0](later[1], self))

    def no_count(self, field: str, value: Any) -> None:
        """A usage count ``field`` the provider gave (not null) that is no token count (a string, a negative or
        fractional number, a boolean, a number beyond a double's range): said (problem ``type``) and not kept,
        once per reply and field (a provider that sends it so sends it in every usage, with any value)."""
        key = ("count", field)  # (no problem's (rule, message): see problem)
        if key in self._said:
            return
        self._said.add(key)
        self.problem("type", f"{field} is no token count ({shown(value)}): not kept")

    def no_usage(self, field: str, value: Any) -> None:
        """A usage ``field`` the provider gave (not null) that is no JSON object: said (problem ``type``) and not
        kept, once per reply and field, as :meth:`no_count` says a count."""
        key = ("usage", field)
        if key in self._said:
            return
        self._said.add(key)
        self.problem("type", f"{field} is no object ({json_type(value)}): its counts not kept")

    def finish(
        self, choice: int, finish_reason: Any, *, tool_calls: bool = False, normal: bool = False, over: bool = True
    ) -> None:
        """The provider's finish reason for a choice. ``tool_calls``: the reason says the model called
        tools; ``normal``: a plain stop, which means TOOL_CALLS too when the choice holds tool calls
        (Gemini has no tool finish reason; some compatible providers say ``stop``). Anything else
        (length, content filter, refusal, ...) keeps MODEL_STOP. ``over``: the reason ends the choice's
        content, a fragment after it is said (:meth:`_after_finish`); False for a reason given ahead that a later
        one replaces (Anthropic's in its message_start)."""
        c = self.choice(choice)
        c.finish = finish_reason if isinstance(finish_reason, str) else "stop"
        c.normal = normal
        c.over = c.over or over
        if tool_calls and c.reason is None:
            c.reason = "TOOL_CALLS"

    def carrier(self, metadata: dict[str, Any], *, choice: int = 0, slot: str = "carrier") -> None:
        """Provider data the message keeps in its place among the blocks, for the provider that made it: its
        carrier, an empty thinking block (THINKING_BLOCK_START with the provider and model) whose metadata, on its
        THINKING_BLOCK_END, holds ``providerBlock`` (a block of the reply no agentmsg block type holds: a tool the
        provider ran itself, as it gave it) or ``citations`` (those of the text block just before it). Blocks are
        in the order they start: the reader ends the blocks the carrier follows first. With a carrier opened in
        ``slot`` (:meth:`open_carrier`), that one ends with ``metadata``."""
        c = self.choice(choice)
        block = c.blocks.get(slot)
        held = self._holdable(metadata, as_text=False)  # (a block's metadata member is an object: none as text)
        if not held and metadata and block is None:
            return  # all of it nested deeper than a message holds (said): no carrier of nothing
        if block is None or block[0] != "thinking":
            self._open(c, slot, "thinking")
        end: dict[str, Any] = {"provider": self.provider}
        if self.model is not None:
            end["model"] = self.model
        end.update(held)
        self.end_block(slot, c, metadata=end)

    def open_carrier(self, slot: str, *, choice: int = 0) -> None:
        """Open the carrier of a provider block whose content is still streaming (Anthropic's ``server_tool_use``,
        its input to come), in its place: :meth:`carrier` with the same ``slot`` ends it with its metadata. The
        reader ends every carrier it opens so (a carrier closed without it would be an empty reasoning block)."""
        c = self.choice(choice)
        self._open(c, slot, "thinking")

    def grounding(self, fields: dict[str, Any], *, choice: int = 0, extend: bool = False) -> None:
        """The provider's citation and grounding data of the whole reply (OpenAI's ``annotations``, Gemini's
        ``groundingMetadata``, DashScope's ``search_info``), under its field names: kept in the message
        (``agentmsg_grounding``, with the provider's name), sent on the choice's MODEL_CALL_END
        (``metadata.grounding``). A field that says nothing (``{}``, ``[]``, null, an object of such: what every
        chunk of a Gemini stream carries before the last, and DashScope's after its first) is no value. A later
        value replaces an earlier one (a stream's last chunk carries the whole), and one that replaced another it
        differs from is said (not-kept); ``extend``: a list is appended to the one before (deltas of one list)."""
        c = self.choice(choice)
        kept = c.grounding
        if kept is None:
            kept = c.grounding = {}
        for key, value in self._holdable(fields).items():
            if not _says_something(value):
                kept.setdefault(key, None)  # (its place: the fields keep the order they were first given in)
                continue
            before = kept.get(key)
            if extend and isinstance(before, list) and isinstance(value, list):
                # (in place: the list is the builder's own, _holdable's copy, sent at the close; a new list per
                # delta copied every one before it, quadratic in a stream of one annotation per event)
                before.extend(value)
                continue
            if before is not None and before != value:
                self.not_kept(
                    f"grounding/{key}/{choice}",
                    f"a {key} the reply gave was replaced by a later, different one: the last is kept",
                    choice,
                )
            kept[key] = value

    def _holdable(self, value: dict[str, Any], *, as_text: bool = True) -> dict[str, Any]:
        """Provider JSON an event carries as it came, with each number no event can hold (``1e400``, an integer
        beyond 64 bits) kept as its JSON text, a string, and that said (rule ``number-as-text``): the event
        validates, and nothing is rounded, nulled or dropped for it. A member nested deeper than an event holds is
        kept as its JSON text too, or, not ``as_text`` (where the schema wants an object), left out; either said
        (rule ``max-depth``)."""
        if self.payload is not None and any(overflowed(v) for v in value.values()):
            # an integer beyond 64 bits that orjson read as the nearest float: its digits, from the payload's text
            value = {k: (self._exact_node(self.payload, v) if overflowed(v) else None) or v for k, v in value.items()}
        # A stream's payload is read as deep as orjson reads (1,024 levels), an event and a message only as deep as
        # limits.max_depth: a member nested deeper than they hold it (less the levels above it) is kept as its JSON
        # text, a string (its numbers as they came: first, so that the number walk below does not quote them), and
        # that said, as a number no event can hold is (the event validates, nothing is lost)
        room = limits.max_depth - HOLD_ROOM
        deep = [key for key, member in value.items() if deeper_than(member, room)]
        if deep:
            value = dict(value)
            for key in deep:
                if as_text:
                    value[key] = json_text_of(value[key])
                else:
                    del value[key]
                self.problem(
                    "max-depth",
                    f"the {str(key)[:80]} the reply gave is nested deeper than an event holds (limits.max_depth): "
                    + ("kept as its JSON text, a string" if as_text else "left out"),
                )
        held, where = as_event_value(value)
        if where is not None:
            self.problem(
                "number-as-text",
                f"a number at {where} is beyond what JSON is written with (a double, 64-bit integers): kept as its"
                " text, a string",
            )
        return held  # type: ignore[no-any-return]

    def refused(self, choice: int = 0) -> None:
        """The model declined to answer in choice ``choice`` (OpenAI's ``refusal``, Anthropic's ``refusal``
        stop reason): its MODEL_CALL_END says so (``metadata.refusal``), the message has ``agentmsg_refusal``."""
        self.choice(choice).refusal = True

    def finished(self) -> bool:
        """True when every choice seen has its finish reason."""
        return bool(self._choices) and all(c.finish is not None or c.error for c in self._choices.values())

    def error(self, message: str, *, kind: str = "provider_error", choice: int | None = None, **info: Any) -> None:
        """A provider error in the middle of the stream (or a cut stream): every open choice ends interrupted,
        keeping what it received. ``info`` (e.g. ``status``, ``code``) goes into the error event: a scalar as it
        came, a number no event holds (``1e400``, an integer beyond 64 bits) as its text, said (``_holdable``).

        ``message`` is kept whole, as a text block is: readers pass the provider's message uncut (they cut it at
        1,000 characters once, the rest lost without a word). Its size is bounded where it is read (one event
        within ``limits.max_event_bytes``, a whole response within ``limits.max_bytes``, a client's reply
        within its limit), and what shows it is bounded there: an exception's text its first
        ``MESSAGE_SHOWN`` characters (``.message`` whole), the CLI's line clipped."""
        redact = self._redact
        value = {"type": kind, "message": message if redact is None else redact(message), "provider": self.provider}
        for k, v in info.items():
            if v is None:
                continue
            if type(v) in (str, int, float, bool, HugeNumber):
                value[k] = redact(v) if redact is not None and type(v) is str else v
            else:  # a provider's error code or request id of another JSON type (nested at will): said, left out
                self.problem("type", f"the provider error's {k} is a JSON {json_type(v)}, not a scalar: left out")
        value = self._holdable(value)
        self.errors.append(value)
        targets = [choice] if choice is not None else (list(self._choices) or [0])
        for index in targets:
            c = self.choice(index)
            if c.done or c.error is not None:
                continue
            c.error = value
            self._ev(c, "CUSTOM", name=ERROR_EVENT, value=value)
            c.reason = "INTERRUPTED"
            c.finish = None

    def json_text(self, value: Any) -> str:
        """The JSON text of a value a payload carries as JSON (a tool call's arguments object), to stream as
        the call's arguments. orjson, which reads the payloads, reads an integer beyond 64 bits as the nearest
        float: where ``value`` holds such a float, the value is taken again, digit for digit, from the
        payload's text, so the arguments say what the model wrote (the reducer keeps such text raw, with
        ``argumentsError``: a message cannot hold the number), never a rounded number."""
        if self.payload is not None and overflowed(value):
            exact = self._exact_node(self.payload, value)
            if exact is not None:
                value = exact
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            # an integer beyond 64 bits (read exactly), or nesting deeper than orjson writes (a payload may be
            # nested as deep as orjson reads): written as it came, the reducer keeps such arguments raw (a message
            # cannot hold them), never the payload lost for them
            return json_text_of(value)

    def named(self, value: Any, limit: int = 60) -> str:
        """A payload's kind (a type, a status) in a note or problem: a string as Python quotes it (``'x'``), cut after
        ``limit`` characters; any other JSON value as JSON text (``null``, ``true``, ``{"a":1}``): never Python's
        words (``None``, ``True``, ``{'a': 1}``) for what the provider sent."""
        return repr(value[:limit]) if isinstance(value, str) else self.shown(value, limit)

    def shown(self, value: Any, limit: int | None = 200) -> str:
        """``value`` as JSON text in a note (or an error's message), cut after ``limit`` characters (``...`` says
        the cut). One nested deeper than orjson writes (a payload's depth is what orjson reads) is named by its
        type: the note never costs the payload it is in; an integer beyond 64 bits has its digits as the payload
        wrote them (:meth:`json_text`)."""
        try:
            text = orjson.dumps(value).decode()
        except (orjson.JSONEncodeError, TypeError):
            return f"a JSON {json_type(value)} nested too deep to show"
        if self.payload is not None and overflowed(value):
            text = self.json_text(value)
        return text if limit is None or len(text) <= limit else text[:limit] + "..."

    def _exact_node(self, payload: str | bytes, value: Any) -> Any:
        """The node of the payload, decoded exactly (integers as read), that orjson read as ``value``: the next
        such in document order (the payload's calls are read in that order, so the walk goes on from the last
        one found: each node is looked at once per payload, and two calls whose numbers round alike keep their
        own digits), or None. ``value`` an integral float (a provider error's code): the integer it was read from."""
        if self._exact is None or self._exact[0] is not payload:
            try:
                root = msgspec.json.decode(payload)
            except msgspec.DecodeError:
                root = None
            self._exact = (payload, [root])
        stack = self._exact[1]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is dict:
                stack.extend(reversed(list(node.values())))
            elif kind is list:
                stack.extend(reversed(node))
            else:
                if kind is int and type(value) is float:
                    try:
                        if float(node) == value:
                            return node
                    except OverflowError:  # (beyond a double: no float orjson read)
                        pass
                continue
            if kind is type(value) and len(node) == len(value):
                try:
                    same = orjson.loads(json.dumps(node, allow_nan=False)) == value
                except (ValueError, RecursionError):
                    same = False
                if same:
                    # its children are still on the stack: a call's arguments never hold another call's
                    return node
        return None

    def string(self, value: Any, what: str) -> str | None:
        """A payload field that is text: ``value`` when it is a string, None when it is absent (None); any other
        JSON value is said (problem ``type``) and left out, the rest of the payload kept."""
        if value is None or type(value) is str:
            return value
        self.problem("type", f"{what} is not a string (a JSON {json_type(value)}): left out")
        return None

    def array(self, value: Any, what: str) -> list[Any]:
        """A payload field that is a JSON array: ``value``; absent (None): an empty one; any other JSON value is said
        (problem ``type``) and left out, the rest of the payload kept (an object where a list of them goes: its
        content was emptied unsaid)."""
        if isinstance(value, list):  # (a caller's parsed body may be made of subclasses: an OrderedDict's)
            return value
        if value is not None:
            self.problem("type", f"{what} is not an array (a JSON {json_type(value)}): left out")
        return []

    def mapping(self, value: Any, what: str) -> dict[str, Any]:
        """A payload field that is a JSON object: ``value``; absent (None): an empty one; any other JSON value is
        said (problem ``type``) and left out, the rest of the payload kept."""
        if isinstance(value, dict):
            return value
        if value is not None:
            self.problem("type", f"{what} is not an object (a JSON {json_type(value)}): left out")
        return {}

    def objects(self, values: list[Any], what: str) -> list[dict[str, Any]]:
        """The objects of a payload's array ``values`` (choices, parts, content blocks); an item of another JSON type
        is said (problem ``type``, once for the array) and left out, the others read."""
        if all(isinstance(v, dict) for v in values):
            return values
        bad = next(v for v in values if not isinstance(v, dict))
        self.problem("type", f"an item of {what} is not an object (a JSON {json_type(bad)}): left out")
        return [v for v in values if isinstance(v, dict)]

    def late(self, what: str, keep: bool, *, joined: bool = False) -> bool:
        """A fragment (``what``: its kind and place) for a block or item that ended or never started: said (problem
        ``order``, once per text, as every problem), and ``keep`` returned: a text or reasoning fragment is kept in a
        block of its own (nothing received is lost, nothing joined to a block that ended), arguments or a signature
        are skipped (they have no block of theirs to go to). ``joined``: the fragment came after its choice's finish
        reason, whose blocks and calls are still open: kept in its place, as the provider's SDK accumulates it (see
        :meth:`_after_finish`)."""
        if joined:
            outcome = "kept in its place (as the provider's SDK accumulates it)"
        else:
            outcome = "kept in a block of its own" if keep else "skipped (and any more like it)"
        self.problem("order", f"{what}: {outcome}")
        return keep

    def _after_finish(self, c: _Choice, index: int, what: str) -> None:
        """A fragment (``what``: its kind) for choice ``index`` after its finish reason: said (problem ``order``, once
        per choice and kind) and kept where it goes, as if it had come before the finish reason (the text joined to
        the block still open, arguments to their call), as the SDKs keep it (openai's ChatCompletionStreamState joins
        it to the message, anthropic's accumulator to its block, google-genai's chat history keeps every chunk's
        content): nothing received is lost, nor moved."""
        self.late(f"{what} for choice {index} after its finish reason ({c.finish!s:.40})", True, joined=True)

    def index(self, value: Any, default: int, what: str) -> int:
        """A choice's (a candidate's) index: ``value`` when it is an integer (a boolean is none), ``default`` when it
        is absent (None); any other JSON value is said (problem ``type``) and read as ``default``, the rest of the
        payload kept. An integer beyond 64 bits is none either: a stream's payload holds it as the nearest float
        (orjson's), a whole response as it is (the codec's): both read as ``default`` and said alike."""
        if type(value) is int and INT_MIN <= value <= INT_MAX:
            return value
        if value is not None:
            self.not_integer(value, what, f"read as {default}")
        return default

    def call_index(self, value: Any) -> int | None:
        """A tool call's index (OpenAI's chunk shape, DashScope's too): ``value`` when it is an integer of 64 bits,
        None when absent (None); any other JSON value is said (problem ``type``) and read as absent, the call routed
        as one without an index is. An integer beyond 64 bits is none, as :meth:`index` reads it: a stream's payload
        holds it as orjson's float, a whole response (a payload the codec reads) as it is: both read and said alike."""
        if type(value) is int and INT_MIN <= value <= INT_MAX:
            return value
        if value is not None:
            self.not_integer(value, "a tool call's index", "read as none (the call routed by its place)")
        return None

    def not_integer(self, value: Any, what: str, then: str) -> None:
        """A payload field that is an integer of 64 bits, ``value`` (not None) being none: said (problem ``type``),
        ``then`` saying what became of it. An integer beyond 64 bits is named so, whether the codec read it (a whole
        response) or orjson as its nearest float (a stream's payload): both say it alike."""
        kind = type(value)
        if kind is int or kind is HugeNumber or (kind is float and abs(value) >= OVERFLOW and value.is_integer()):
            shape = "a number beyond 64 bits"
        else:
            shape = f"a JSON {json_type(value)}"
        self.problem("type", f"{what} is not an integer ({shape}): {then}")

    def _not_text(self, what: str, *values: Any) -> None:
        bad = next((v for v in values if v and type(v) is not str), None)
        self.problem("type", f"{what} is not a string (a JSON {json_type(bad)}): skipped")

    def not_kept(self, key: str, message: str, choice: int = 0) -> None:
        """Provider data the message has no place for (citations, log probabilities, grounding): said once
        per ``key`` and reply, in :attr:`not_kept_notes` and as a CUSTOM ``agentmsg.not-kept`` event, not
        dropped silently. Unlike a problem, the input was fine: nothing about the reply is wrong."""
        if key in self._not_kept_keys:
            return
        self._not_kept_keys.add(key)
        note = Problem("", "not-kept", message)  # (its message bounded: the event says the same)
        self.not_kept_notes.append(note)
        self._say(choice, NOT_KEPT_EVENT, {"rule": "not-kept", "message": note.message})

    def call_left_out(
        self, call: Mapping[str, Any], kinds: tuple[str, ...], readable: bool, key: str, choice: int = 0
    ) -> bool:
        """Whether a tool call (or a fragment of one) is left out for its ``type``, said (OpenAI's and DashScope's
        ``tool_calls[].type``): a type in ``kinds``, or none, is read; another is read as a function call, said,
        when the call is ``readable`` (it has a function); else it is no call, kept in a note of its own with its
        JSON (``key``: the call's, per choice and index), and so is each later fragment of it (which names no type
        and no function), where it became a call of no name."""
        kind = call.get("type")
        if kind is not None and kind not in kinds:  # (a kind of call the reader has no rule for)
            shown = self.shown(kind, 60)
            if not readable:
                self.not_kept(key, f"a tool call of type {shown} is not kept: {self.shown(call, 500)}", choice)
                return True
            self.not_kept(f"call-type/{shown}", f"tool calls of type {shown} are read as function calls", choice)
        elif not readable and key in self._not_kept_keys:  # a later fragment of such a call
            more = f"{key}/{len(self.not_kept_notes)}"
            self.not_kept(more, f"a fragment of that tool call is not kept: {self.shown(call, 500)}", choice)
            return True
        return False

    def problem(self, rule: str, message: str, *, foreign: bool = False) -> None:
        """A payload that could not be read: recorded, reported as a CUSTOM event, and skipped. A problem the
        reply has said already, word for word (a bad field a provider repeats on every chunk), is not said
        again: each thing is said once. ``foreign``: the body held no payload of this provider's shape at all
        (another provider's stream, agent events): the value says so (``"foreign": true``)."""
        if self._redact is not None:
            message = self._redact(message)
        said = (rule, message)
        if said in self._said:
            return
        problem = self._kept(rule, message)
        if problem is None:
            return
        self._said.add(said)
        value: dict[str, Any] = {"rule": rule, "message": problem.message}
        if foreign:
            value["foreign"] = True
        self._say(0, PROBLEM_EVENT, value)

    def _kept(self, rule: str, message: str) -> Problem | None:
        """The problem to say, kept in :attr:`problems` (its message bounded: its event says the same); None past
        :data:`MAX_PROBLEMS`, where it is only counted (said at the end, see :meth:`close`)."""
        if len(self.problems) >= MAX_PROBLEMS:
            self.unsaid += 1
            return None
        problem = Problem("", rule, message)
        self.problems.append(problem)
        return problem

    def _problem_at(self, c: _Choice, rule: str, message: str, call: _Call | None = None) -> None:
        """A problem of choice ``c`` (open), said among its own events. ``call``: the problem is the arguments of
        this call as the provider gave them (cut at max_tokens, JSON but no object, ...), not the stream: its value
        names the call (``toolCallId``), so that a reader can tell a reply the provider cut from a broken input."""
        if self._redact is not None:
            message = self._redact(message)
        problem = self._kept(rule, message)
        if problem is None:
            return
        value = {"rule": rule, "message": problem.message}
        if call is not None and call.started:
            value["toolCallId"] = call.id
        self._ev(c, "CUSTOM", name=PROBLEM_EVENT, value=value)

    def close(self, *, ended: bool = False) -> None:
        """End of the response: close every open block and call, then each choice's terminal events. A
        choice without a finish reason ends INTERRUPTED with an error event (the stream stopped early),
        unless ``ended``: the provider said the stream is over (``[DONE]``, ``message_stop``), which some
        compatible servers do without a finish reason; the reply is then whole (MODEL_STOP, or TOOL_CALLS
        when it holds calls), and its message has no ``agentmsg_finish_reason``."""
        if self.closed:
            return
        self.closed = True
        if not self._choices:
            self.choice(0)
        if self.unsaid:
            message = f"{self.unsaid:,} more problems were not said (a reply says {MAX_PROBLEMS:,} at most)"
            self.problems.append(Problem("", "max-problems", message))
            self._say(0, PROBLEM_EVENT, {"rule": "max-problems", "message": message})
        if self._held:
            for index in sorted(self._held):
                self.choice(index)  # what was said of a choice that had nothing else: it opens to say it
        waiting: dict[int, list[str]] = {}  # choice -> the slots of its streamed data blocks not started yet
        if self._unstarted:
            for at, slot in self._unstarted:
                waiting.setdefault(at, []).append(slot)
        for index in sorted(self._choices):
            c = self._choices[index]
            if c.done:
                continue
            if c.finish is None and c.error is None:
                if ended:  # the provider said the reply is over, without saying why (Snowflake's [DONE]): whole
                    c.normal = True
                else:
                    self.error(
                        "the stream ended before the provider finished the reply",
                        kind="incomplete_stream",
                        choice=index,
                    )
            self._close_choice(c, index, waiting.get(index, ()), usage=index == 0)

    def _close_choice(self, c: _Choice, index: int, waiting: Iterable[str], usage: bool) -> None:
        # a streamed data block still waiting (held, or of fewer bytes than its type is read from): ``waiting``, its
        # slots (looking through every choice's at each choice was quadratic in the choices)
        for slot in waiting:
            d = self._unstarted.get((index, slot))
            if d is not None and d.bytes:
                self._data_start(c, index, slot)
            elif d is not None:
                del self._unstarted[(index, slot)]
        if c.blocks:  # (a copy of each only when there is something to end: no list made for nothing)
            for slot in list(c.blocks):
                self.end_block(slot, c)
        if c.calls:
            for call in list(c.calls.values()):
                if call.open:
                    self._end_call(c, call)
        if c.waiting:  # (none is left: each waiting call is open under its key, or ended; but never lose one)
            for call in c.waiting:
                call.open, call.ended = False, True
            self._start_ready(c)
        if c.error is None and c.calls_by_id:
            self._check_arguments(c)
        if c.reason is None and c.normal and c.calls_by_id:
            c.reason = "TOOL_CALLS"
        if c.reason is not None:
            # an error's type, not its message: the message is the choice's error event's (agentmsg_errors), and
            # a copy here wrote it twice per choice (a 1 MiB message, 4 choices: 8 MiB of events, 2 MiB a message)
            reason = c.error["type"] if c.error is not None else (c.finish or "")
            self._ev(c, "REQUEST_STOP", reason=str(reason), generateReason=c.reason)
        end: dict[str, Any] = {"replyId": c.reply_id}
        if usage:
            u = self.usage_event()
            if u is not None:
                end["usage"] = u
        meta: dict[str, Any] = {}
        if c.finish is not None:
            meta["finishReason"] = c.finish
        if self.model is not None:
            meta["model"] = self.model
        if c.refusal:
            meta["refusal"] = True
        if self.structured is not None and c.error is None and not c.refusal:
            value = self._structured_output(c)
            if value is not None:
                meta["structuredOutput"] = value
        if c.grounding and any(v is not None for v in c.grounding.values()):
            meta["grounding"] = {"provider": self.provider, **{k: v for k, v in c.grounding.items() if v is not None}}
        if meta:
            end["metadata"] = meta
        self._ev(c, "MODEL_CALL_END", **end)
        if self.agent_events:
            self._ev(c, "AGENT_END", replyId=c.reply_id)
        c.done = True

    def _structured_output(self, c: _Choice) -> dict[str, Any] | None:
        """The JSON object of a choice that ended as the provider ended it, when the request asked for structured
        output (:attr:`structured`): its answer's text, or the input of its call of the forced tool; None, said
        (problem ``structured-output``, among the choice's events), when there is none or it is no JSON object."""
        assert self.structured is not None
        finish = f" (the reply ended: {c.finish[:40]})" if c.finish and not c.normal else ""
        if self.structured["from"] == "tool":
            name = self.structured["name"]
            call = next((k for k in c.calls_by_id.values() if k.name == name), None)
            if call is None:
                self._problem_at(
                    c, "structured-output", f"the reply made no call of tool {name[:80]!r}, whose input is the"
                    f" structured output{finish}: none"
                )  # fmt: skip
                return None
            if call.input is not None:
                return call.input
            text, what = "".join(call.text), f"tool call {name[:80]!r}'s input"
        else:
            text, what = "".join(c.json), "the reply's text"
            if not text.strip():
                self._problem_at(c, "structured-output", f"the reply has no text{finish}: no structured output")
                return None
        try:
            value = codec_loads(text)
        except ValidationError as exc:
            first = exc.problems[0].message[:120] if exc.problems else "not valid JSON"
            self._problem_at(
                c,
                "structured-output",
                f"{what} is not JSON ({first}){finish}: no structured output (the text is kept): ...{text[-60:]!r}",
            )
            return None
        if type(value) is not dict:
            self._problem_at(
                c,
                "structured-output",
                f"{what} is JSON but not an object ({json_type(value)}): no structured output (the text is kept)",
            )
            return None
        return value

    def usage_event(self) -> dict[str, Any] | None:
        self._settle_usage()
        usage = self.usage
        if usage is None and self.started_at is None:
            return None
        out = dict(usage or {})
        if self.started_at is not None:
            out["time"] = round(max(0.0, time.monotonic() - self.started_at), 6)
        return out
