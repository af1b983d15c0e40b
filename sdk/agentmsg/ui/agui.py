"""``ag-ui``: agentmsg's events as AG-UI 1.0 events (the protocol of CopilotKit and most agent UIs), both ways.

Encoder (AgentEvents -> AG-UI) and decoder (AG-UI -> AgentEvents); docs/ag-ui.md has the table, event by event
both ways, and the rules. In short:

* AGENT_START / AGENT_END -> RUN_STARTED / RUN_FINISHED (``runId`` = replyId, ``threadId`` = sessionId or the
  replyId; RUN_FINISHED has the summed ``usage``, the AGENT_RESULT's message as ``result`` and the ``outcome`` of a
  HITL pause); MODEL_CALL_START / END -> STEP_STARTED / STEP_FINISHED (``stepName`` = the model call's replyId);
  text blocks -> TEXT_MESSAGE_START / CONTENT / END; thinking blocks -> REASONING_START, REASONING_MESSAGE_START /
  CONTENT / END, REASONING_END, a signature -> REASONING_ENCRYPTED_VALUE; tool calls -> TOOL_CALL_START / ARGS /
  END; a tool result -> one TOOL_CALL_RESULT at its end; CUSTOM -> CUSTOM; a failing source -> RUN_ERROR.
* An AgentEvent AG-UI has no event for (data blocks, hints, HITL, AGENT_RESULT, REQUEST_STOP, subagent events,
  tool results' start and deltas, an event out of order) is sent whole as ``CUSTOM`` named ``agentscope.event``
  (rule ``ui-wrapped``, said once per type in the encoder's notes).
* What an AgentEvent has and its AG-UI event has no field for (the event ``id``, a ``createdAt`` that is not whole
  milliseconds in UTC, ``replyId`` of a block, a tool call's parsed ``input`` and ``state``, usage, ...) travels in
  the AG-UI event's ``metadata`` under ``agentmsg`` (``agentmsg.absent`` lists the keys it lacked), so that the
  decoder gives back the very same events; AG-UI events agentmsg writes only to keep AG-UI's rules (a run opened
  for events outside a reply, a message closed at the end of the run, the span around a reasoning message) have
  ``metadata`` ``{"agentmsg.implicit": true}`` and decode to nothing.
* Decoding an AG-UI stream from elsewhere: the table backwards; ``*_CHUNK`` events expanded as ``@ag-ui/client``
  expands them, the 0.0.x ``THINKING_*`` events read as REASONING_* (rule ``ui-legacy``); events agentmsg has no
  event for (STATE_*, MESSAGES_SNAPSHOT, ACTIVITY_*, RAW, SUBAGENT_*, text messages of other roles) become CUSTOM
  ``ag-ui.<TYPE>`` with the event as value; fields without a place (``parentMessageId``, ``rawEvent``, a run's
  ``input`` and ``result``, ...) are said once per stream (rule ``ui-not-kept``). An event that breaks AG-UI (a
  required field missing, of the wrong type, null where it must be omitted, a message not started) is a note
  (rule ``required``, ``type``, ``enum`` or ``order``, pointer ``/<event index>/<key>``) or, ``strict=True``, a
  :class:`~agentmsg.ValidationError`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final, TypeGuard

from agentmsg._codec.jsontext import parse_arguments
from agentmsg._codec.timestamps import event_now, parse_timestamp
from agentmsg.errors import Problem, ValidationError, pointer_of
from agentmsg.events._dedupe import DEFAULT_DEDUPE_WINDOW, DedupeWindow
from agentmsg.ui._protocol import SAFE_INTEGER, Decoder, Encoder, Notes, quoted, same_json, sse_frame, value_text
from agentmsg.ui._requests import AG_PART_KEYS, AG_SOURCE_KEYS, RunInput, read_run_input

__all__ = ["AGUI", "PROTOCOL", "TYPES", "WRAPPED", "AGUIDecoder", "AGUIEncoder", "RunInput", "read_input"]

#: the AG-UI CUSTOM event name of an AgentEvent sent whole (value: the event)
WRAPPED: Final = "agentscope.event"
#: metadata keys of the AG-UI events agentmsg writes: what the AG-UI event has no field for; the keys the
#: AgentEvent lacked; an event written only to keep AG-UI's rules
CARRY: Final = "agentmsg"
ABSENT: Final = "agentmsg.absent"
IMPLICIT: Final = "agentmsg.implicit"
#: the prefix of the CUSTOM AgentEvents that hold an AG-UI event agentmsg has no event for
FOREIGN: Final = "ag-ui."

_PLACEHOLDERS = ("__fragment__", "__pending__")  # AgentScope Java's tool-call names before the real one
_IMPLICIT_META: Final = {IMPLICIT: True}


def _implicit() -> dict[str, Any]:
    return {"metadata": {IMPLICIT: True}}


#: keys the decoder sets on a block's or tool call's AgentEvent (to the step's or run's id) that never equal the
#: AgentEvent's own for sure: always carried when the AgentEvent has them, listed as absent when it has not
_REPLY: Final = ("replyId",)


#: AgentEvents whose ``replyId`` the AG-UI event itself says (``runId``, ``stepName``): a carrier may set it only
#: where the encoder put a fallback in its place (the AgentEvent's was no non-empty string)
_SAID_REPLY: Final = frozenset({"AGENT_START", "AGENT_END", "MODEL_CALL_START", "MODEL_CALL_END"})
_RENAMED = re.compile(r"~[0-9]+")


def _renamed(visible: Any, carried: Any) -> bool:
    """Whether ``visible`` is the id the encoder made of ``carried`` for AG-UI: it, or it with ``~<n>`` (made unique
    in the stream; ``block`` for an empty one)."""
    if not isinstance(carried, str) or not isinstance(visible, str):
        return False
    base = carried or "block"
    return visible == base or (visible.startswith(base) and _RENAMED.fullmatch(visible, len(base)) is not None)


def _settable(kind: str, key: str, carried: Any, visible: Any) -> bool:
    """Whether a carrier (``metadata.agentmsg``, or ``agentmsg.absent`` with ``carried`` None) may set ``key`` of a
    decoded ``kind`` event the decoder set to ``visible``: what the decoder mints (``id``, ``createdAt``) or takes from
    its context (a block's or call's ``replyId``, a result's ``state``), a fallback the encoder wrote for an id or
    name the AgentEvent lacked, an id the encoder made unique; never what the AG-UI event itself says."""
    if key in ("id", "createdAt"):
        return True
    if key == "replyId":
        return kind not in _SAID_REPLY or not _str(carried)
    if key == "state":
        return kind == "TOOL_RESULT_END"
    if key == "toolCallName":
        return kind == "TOOL_CALL_START" and (not _str(carried) or carried in _PLACEHOLDERS)
    if key == "toolCallId":
        return _str(carried) and _renamed(visible, carried)
    if key == "blockId":
        return kind in ("TEXT_BLOCK_START", "THINKING_BLOCK_START") and _renamed(visible, carried)
    return False


def _shows(carried: Any, text: str, parsed: Any) -> bool:
    """Whether a TOOL_CALL_END's carried ``input`` is what its call's arguments showed (``text``, read by the
    reducer's rules as ``parsed``): the same JSON value, or the very text the encoder wrote of it (what the reducer's
    reader refuses: a lone surrogate, an integer past 64 bits); or no object, which the reducer never takes as an
    input (its check says so)."""
    return not isinstance(carried, Mapping) or same_json(carried, parsed) or value_text(carried) == text


#: an RFC 3339 time in UTC as agentmsg writes it (Java's too): the date, the time, a fraction, ``Z``
_UTC = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?[Zz]")
_DAY_MS: Final = 86_400_000
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS: Final = timedelta(milliseconds=1)


@functools.lru_cache(maxsize=64)
def _day(date: str) -> int | None:
    """Epoch milliseconds of a date's midnight (UTC); None: no such date."""
    try:
        return (datetime.fromisoformat(date).replace(tzinfo=timezone.utc) - _EPOCH) // _MS
    except ValueError:
        return None


@functools.lru_cache(maxsize=64)
def _date(day: int) -> str:
    return (_EPOCH + timedelta(days=day)).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=64)
def _second(text: str) -> int | None:
    """Epoch milliseconds of ``YYYY-MM-DDTHH:MM:SS`` (UTC); None: not one. Cached: a stream's events come many to
    a second, and this was most of the work of reading their times."""
    day = _day(text[:10]) if text[10] == "T" and text[13] == text[16] == ":" else None
    hms = text[11:13], text[14:16], text[17:19]
    if day is None or not all(p.isdigit() and p.isascii() for p in hms):
        return None
    hour, minute, second = int(hms[0]), int(hms[1]), int(hms[2])
    if hour < 24 and minute < 60 and second < 60:
        return day + ((hour * 60 + minute) * 60 + second) * 1000
    return None


def _ms(created: Any) -> tuple[int | None, bool]:
    """An RFC 3339 ``createdAt`` as epoch milliseconds (None: not one), and whether :func:`_iso` writes it back
    as the same text (UTC with ``Z``, no fraction or three digits of one that are not all 0)."""
    if not isinstance(created, str):
        return None, False
    n = len(created)
    if n >= 20 and created[-1] == "Z" and created[19] == ("Z" if n == 20 else "."):
        second = _second(created[:19])
        frac = created[20:-1]  # ("" when n is 20)
        if second is not None and (n == 20 or (frac.isdigit() and frac.isascii())):
            return second + int((frac + "000")[:3]), frac == "" or (len(frac) == 3 and frac != "000")
    match = _UTC.fullmatch(created)  # lower-case t or z, an offset, a leap second: the slow way, inexact
    if match is None:
        try:
            if created[10:11] in ("T", "t") and created[17:19] == "60":  # a leap second, which datetime refuses:
                when = parse_timestamp(created)  # the SDK's one rule, the next minute's first instant (or not one)
            else:
                when = datetime.fromisoformat(created)
        except (ValueError, ValidationError):
            return None, False
        return ((when - _EPOCH) // _MS, False) if when.tzinfo is not None else (None, False)
    day = _day(match[1])
    if day is None:
        return None, False
    frac = match[5] or ""
    ms = day + ((int(match[2]) * 60 + int(match[3])) * 60 + int(match[4])) * 1000 + int((frac + "000")[:3])
    return ms, False


def _iso(ms: int) -> str:
    """Epoch milliseconds as a ``createdAt``: UTC, ``Z``, the milliseconds only when not 0."""
    day, rest = divmod(ms, _DAY_MS)
    seconds, frac = divmod(rest, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    text = f"{_date(day)}T{hour:02d}:{minute:02d}:{second:02d}"
    return f"{text}.{frac:03d}Z" if frac else f"{text}Z"


def _str(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""


#: The keys of an event the encoder keys its open messages by: one that is no string is no AgentEvent's
_ID_KEYS: Final = ("blockId", "toolCallId", "replyId")


def _ids_are_text(e: Mapping[str, Any]) -> bool:
    """Whether each id the encoder keys by (:data:`_ID_KEYS`) is absent, null or a string (else the event is carried
    whole). Per event, so no generator: it was a sixth of the encoder's time."""
    block, call, reply = e.get("blockId"), e.get("toolCallId"), e.get("replyId")
    return (
        (block is None or type(block) is str)
        and (call is None or type(call) is str)
        and (reply is None or type(reply) is str)
    )


# ==== AgentEvents -> AG-UI ========================================================================================


class _Run:
    __slots__ = (
        "args", "began", "calls", "ended_args", "ids", "implicit", "last_text", "model", "names", "outcome",
        "pending", "reasoning", "replies", "result", "results", "run_id", "step", "texts", "thread_id", "usage",
    )  # fmt: skip

    def __init__(self, run_id: str, thread_id: str, implicit: bool) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.implicit = implicit
        self.texts: dict[Any, str] = {}  # open text blocks: blockId -> messageId
        self.reasoning: dict[Any, str] = {}  # open thinking blocks: blockId -> messageId
        self.calls: dict[Any, bool] = {}  # open tool calls: toolCallId -> whether arguments were sent
        # the TOOL_CALL_ARGS text of each AG-UI call as the decoder joins it (its _args, _began, _ended): the open
        # calls' deltas, and the step (or run) each began in; of those ended, that step and their text, which a START
        # in that step goes on
        self.args: dict[Any, list[str]] = {}
        self.began: dict[Any, str] = {}
        self.ended_args: dict[Any, tuple[str, str]] = {}
        self.names: dict[Any, str] = {}  # the AG-UI toolCallName of each call of the run
        # the replyId each call of the run was started under (the reducer's block of it): a call ended and started
        # again under it goes on (the reducer's rule: same replyId, same toolCallId, one call; AgentScope Java starts
        # a call it ended again), under another it is a new call
        self.replies: dict[Any, Any] = {}
        self.ids: dict[Any, str] = {}  # a call id given again under another replyId: its AG-UI toolCallId
        self.pending: dict[Any, list[str]] = {}  # fragments of calls not started yet (wrapped): their text
        self.results: dict[Any, list[Any]] = {}  # started tool results: toolCallId -> text and blocks so far
        self.step: str | None = None
        self.last_text: str | None = None
        self.usage: dict[str, int] = {}
        self.model: str | None = None
        self.result: Any = None
        self.outcome: dict[str, Any] | None = None


def _goes_on(run: _Run, call: Any, e: Mapping[str, Any]) -> bool:
    """Whether ``e`` (a TOOL_CALL_START or DELTA of ``call``, not open) goes on with the call ended before: the
    reducer's rule (``_same_model_call``): the call's block was started under ``e``'s replyId, END or no END between,
    other model calls or not (the same replyId and toolCallId are one call; AgentScope Java starts a call it ended
    again); under another replyId, or none, it is a new call."""
    reply = e.get("replyId")
    return reply is not None and call in run.replies and run.replies[call] == reply


class AGUIEncoder:
    """AgentEvents -> AG-UI events (see the module docstring)."""

    def __init__(self) -> None:
        self.notes: list[Problem] = Notes()
        self._index = -1
        self._run: _Run | None = None
        self._used: set[str] = set()
        self._count = 0
        self._said: set[str] = set()
        self._closed = False
        self._created: tuple[Any, int | None, bool] = (None, None, False)  # the last createdAt read, and its time
        self._window = DedupeWindow(DEFAULT_DEDUPE_WINDOW)  # the reducer's: a replayed event is not sent twice

    # ---- the contract ----

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._index += 1
        if self._closed:
            self.notes.append(Problem(f"/{self._index}", "order", "an event after the stream ended: not sent"))
            return []
        if type(event) is not dict and not isinstance(event, Mapping):
            return self._wrap(event)
        event_id, source = event.get("id"), event.get("source")
        if type(event_id) is str and source is None and self._window.seen(event_id):
            return []  # a repeat (a replay), which the reducer ignores (docs/events.md rule 9): an AG-UI client would not
        kind = event.get("type")
        handler = _ENCODE.get(kind) if type(kind) is str else None
        if handler is None or source is not None or not _ids_are_text(event):
            return self._wrap(event)
        return handler(self, event)

    def close(self) -> list[dict[str, Any]]:
        out = self._end_run(None, implicit=True) if self._run is not None and not self._closed else []
        self._closed = True
        return out

    def fail(self, message: str) -> list[dict[str, Any]]:
        if self._closed:
            return []
        out = self._ensure_run(None)
        out.append({"type": "RUN_ERROR", "message": message})
        self._run = None
        self._closed = True
        return out

    # ---- helpers ----

    def _fresh(self, base: str) -> str:
        """An id no message of this stream has had: ``base``, else ``base~2``, ``base~3``, ..."""
        mid = base
        while mid in self._used:
            self._count += 1
            mid = f"{base}~{self._count}"
        self._used.add(mid)
        return mid

    def _out(
        self, agui: dict[str, Any], e: Mapping[str, Any], derived: Mapping[str, Any], loose: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """``agui`` with a ``timestamp`` and, in ``metadata``, what of ``e`` the decoder would not give back from
        it: ``derived`` are the keys the decoder sets (besides ``id`` and ``createdAt``) and their values, ``loose``
        keys it sets to values that may differ (carried whenever ``e`` has them)."""
        created = e.get("createdAt")
        if created is not self._created[0] and created != self._created[0]:
            self._created = (created, *_ms(created))
        _, ms, exact = self._created
        if ms is not None:
            agui["timestamp"] = ms
        # what of e the decoder would not give back: a copy, less the rest (a third of the time of a filter of each key)
        carry = e.copy() if type(e) is dict else dict(e.items())
        carry.pop("type", None)
        if exact:
            carry.pop("createdAt", None)
        for key, value in derived.items():
            if key in carry and value == carry[key]:
                del carry[key]
        meta: dict[str, Any] = {CARRY: carry} if carry else {}
        if "id" not in e or "createdAt" not in e or not derived.keys() <= e.keys() or (loose and loose[0] not in e):
            meta[ABSENT] = [key for key in ("id", "createdAt", *loose, *derived) if key not in e]  # (the decoder's)
        if meta:
            agui["metadata"] = meta
        return agui

    def _wrap(self, e: Any) -> list[dict[str, Any]]:
        """``e`` sent whole as CUSTOM ``agentscope.event`` (said once per type)."""
        kind = e.get("type") if isinstance(e, Mapping) else None
        label = kind if isinstance(kind, str) else "an event that is not an AgentEvent"
        if label not in self._said:
            if Notes.room(self.notes):  # (past it, not held: counted by the notes, as a stream's said-once keys)
                self._said.add(label)
            self.notes.append(
                Problem(
                    f"/{self._index}",
                    "ui-wrapped",
                    f"{label[:60]} has no AG-UI event here: sent whole as CUSTOM {WRAPPED!r}",
                )
            )
        out = self._ensure_run(e if isinstance(e, Mapping) else None)
        out.append({"type": "CUSTOM", "name": WRAPPED, "value": e})
        if isinstance(e, Mapping) and self._run is not None and e.get("source") is None:  # (not a subagent's)
            self._note_run(e)
        return out

    def _note_run(self, e: Mapping[str, Any]) -> None:
        """What a wrapped event tells RUN_FINISHED: the result, a HITL pause, a tool result's content."""
        run = self._run
        assert run is not None
        kind = e.get("type")
        call = e.get("toolCallId")
        call = call if isinstance(call, str) else None  # (any other id keys nothing: an event carried whole)
        if kind == "AGENT_RESULT":
            run.result = e.get("result")
        elif kind == "REQUIRE_USER_CONFIRM":
            interrupts = [
                {"id": call_id, "reason": "tool_call_confirmation", "toolCallId": run.ids.get(call_id, call_id)}
                for call_id in self._paused_calls(e)
            ]
            if interrupts:  # (AG-UI's interrupt outcome names one at least: a pause naming no call has none)
                run.outcome = {"type": "interrupt", "interrupts": interrupts}
        elif kind == "REQUIRE_EXTERNAL_EXECUTION":
            run.outcome = {"type": "success", "pendingToolCallIds": self._paused_calls(e)}
        elif kind == "TOOL_RESULT_START" and isinstance(call, str):
            run.results[call] = []
        elif kind == "TOOL_RESULT_TEXT_DELTA" and call in run.results and isinstance(e.get("delta"), str):
            run.results[call].append(e["delta"])
        elif kind == "TOOL_RESULT_DATA_DELTA" and call in run.results and isinstance(e.get("data"), Mapping):
            run.results[call].append(e["data"])

    def _paused_calls(self, e: Mapping[str, Any]) -> list[str]:
        """The ids of a HITL pause's ``toolCalls``, for RUN_FINISHED's outcome. ``toolCalls`` that is not a list (it
        raised TypeError when not iterable), or a call that is not an object with a string ``id``, names no call:
        said (rule ``type``); the event itself is sent whole."""
        calls = e.get("toolCalls")
        if calls is None:
            return []
        if not isinstance(calls, list):
            self.notes.append(
                Problem(f"/{self._index}/toolCalls", "type", "toolCalls is not a list: the run's outcome names no call")
            )
            return []
        ids: list[str] = []
        for k, call in enumerate(calls):
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if _str(call_id):
                ids.append(call_id)
            else:
                self.notes.append(
                    Problem(
                        f"/{self._index}/toolCalls/{k}",
                        "type",
                        "a tool call is an object with a non-empty string id: the run's outcome does not name this one",
                    )
                )
        return ids

    def _ensure_run(self, e: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """A run for an event outside a reply (AG-UI's events belong to runs): opened, ``agentmsg.implicit``."""
        if self._run is not None:
            return []
        reply = e.get("replyId") if e is not None else None
        run_id = self._fresh(reply if _str(reply) else "run")
        self._run = _Run(run_id, run_id, implicit=True)
        return [{"type": "RUN_STARTED", "threadId": run_id, "runId": run_id, "metadata": dict(_IMPLICIT_META)}]

    def _close_open(self) -> list[dict[str, Any]]:
        """AG-UI refuses RUN_FINISHED while a message, tool call or step is open: each closed, implicitly."""
        run = self._run
        assert run is not None
        out: list[dict[str, Any]] = []
        for mid in run.texts.values():
            out.append({"type": "TEXT_MESSAGE_END", "messageId": mid, "metadata": dict(_IMPLICIT_META)})
        for mid in run.reasoning.values():
            out.append({"type": "REASONING_MESSAGE_END", "messageId": mid, "metadata": dict(_IMPLICIT_META)})
            out.append({"type": "REASONING_END", "messageId": mid, "metadata": dict(_IMPLICIT_META)})
        out += self._close_calls()
        if run.step is not None:
            out.append({"type": "STEP_FINISHED", "stepName": run.step, "metadata": dict(_IMPLICIT_META)})
            run.step = None
        run.texts.clear()
        run.reasoning.clear()
        return out

    def _close_calls(self) -> list[dict[str, Any]]:
        run = self._run
        assert run is not None
        out = [
            {"type": "TOOL_CALL_END", "toolCallId": run.ids.get(c, c), "metadata": dict(_IMPLICIT_META)}
            for c in run.calls
        ]
        for c in run.calls:
            self._args_ended(run.ids.get(c, c))
        run.calls.clear()  # (a call started again under its replyId goes on, to the reducer too: ``replies``)
        run.pending.clear()
        return out

    def _args_started(self, ag: Any) -> None:
        """A TOOL_CALL_START of ``ag`` written: its arguments begin, or go on as the decoder continues them."""
        run = self._run
        assert run is not None
        step = run.step or run.run_id
        ended = run.ended_args.pop(ag, None)
        run.args[ag] = [ended[1]] if ended is not None and ended[0] == step else []
        run.began[ag] = step

    def _args_ended(self, ag: Any) -> str:
        """A TOOL_CALL_END of ``ag`` written: the whole text of its arguments, as the decoder joins them."""
        run = self._run
        assert run is not None
        text = "".join(run.args.pop(ag, ()))
        run.ended_args[ag] = (run.began.pop(ag, run.step or run.run_id), text)
        return text

    def _end_run(self, e: Mapping[str, Any] | None, *, implicit: bool) -> list[dict[str, Any]]:
        run = self._run
        assert run is not None
        out = self._close_open()
        done: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": run.thread_id, "runId": run.run_id}
        if run.usage:
            usage: dict[str, Any] = {"model": run.model} if run.model else {}
            for key, value in run.usage.items():
                if value <= SAFE_INTEGER:
                    usage[key] = value
                else:  # AG-UI's schema caps counts at 2^53-1 (what a JS number holds exactly)
                    self.notes.append(
                        Problem(f"/{self._index}", "maximum", f"usage {key} {value} is beyond AG-UI's 2^53-1: left out")
                    )
            done["usage"] = [usage]
        if run.result is not None:
            done["result"] = run.result
        if run.outcome is not None:
            done["outcome"] = run.outcome
        if e is not None and not implicit:
            out.append(self._out(done, e, {"replyId": run.run_id}))
        else:
            done["metadata"] = dict(_IMPLICIT_META)
            out.append(done)
        self._run = None
        return out

    # ---- the events ----

    def _agent_start(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._end_run(None, implicit=True) if self._run is not None else []
        reply, session = e.get("replyId"), e.get("sessionId")
        run_id = reply if _str(reply) else self._fresh("run")
        self._used.add(run_id)
        thread = session if _str(session) else run_id
        self._run = _Run(run_id, thread, implicit=False)
        derived: dict[str, Any] = {"replyId": run_id}
        if thread != run_id:
            derived["sessionId"] = thread
        out.append(self._out({"type": "RUN_STARTED", "threadId": thread, "runId": run_id}, e, derived))
        return out

    def _agent_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        if self._run is None:
            return self._wrap(e)
        return self._end_run(e, implicit=False)

    def _model_call_start(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_run(e)
        run = self._run
        assert run is not None
        reply = e.get("replyId")
        if run.step is not None:  # (its open calls stay open, to the reducer too)
            out.append({"type": "STEP_FINISHED", "stepName": run.step, "metadata": dict(_IMPLICIT_META)})
        run.step = reply if _str(reply) else "model call"
        if _str(e.get("modelName")):
            run.model = e["modelName"]
        out.append(self._out({"type": "STEP_STARTED", "stepName": run.step}, e, {"replyId": run.step}))
        return out

    def _model_call_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        if run is None or run.step is None:
            return self._wrap(e)
        usage = e.get("usage")
        if isinstance(usage, Mapping):
            for ours, theirs in _USAGE_OUT.items():
                value = usage.get(ours)
                if type(value) is int and value >= 0:
                    run.usage[theirs] = run.usage.get(theirs, 0) + value
        meta = e.get("metadata")
        if isinstance(meta, Mapping) and _str(meta.get("model")):
            run.model = meta["model"]
        out = self._close_calls()  # (the reducer ends a model call's open calls at its end too)
        out.append(self._out({"type": "STEP_FINISHED", "stepName": run.step}, e, {"replyId": run.step}))
        run.step = None
        return out

    def _block_start(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        block = e.get("blockId")
        thinking = e["type"] == "THINKING_BLOCK_START"
        run = self._run
        if not isinstance(block, str) or (run is not None and block in (run.reasoning if thinking else run.texts)):
            return self._wrap(e)
        out = self._ensure_run(e)
        run = self._run
        assert run is not None
        mid = self._fresh(block or "block")
        derived = {"blockId": mid}  # (the decoder's blockId: the messageId, unless carried)
        if thinking:
            run.reasoning[block] = mid
            out.append({"type": "REASONING_START", "messageId": mid, "metadata": dict(_IMPLICIT_META)})
            out.append(
                self._out(
                    {"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"}, e, derived, _REPLY
                )
            )
        else:
            run.texts[block] = mid
            run.last_text = mid
            out.append(
                self._out({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"}, e, derived, _REPLY)
            )
        return out

    def _block_delta(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        thinking = e["type"] == "THINKING_BLOCK_DELTA"
        block, delta = e.get("blockId"), e.get("delta")
        mid = (run.reasoning if thinking else run.texts).get(block) if run is not None else None
        if mid is None or not isinstance(delta, str):
            return self._wrap(e)
        derived = {"blockId": block, "delta": delta}
        if not thinking:
            return [self._out({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta}, e, derived, _REPLY)]
        signature = e.get("signature")
        out: list[dict[str, Any]] = []
        if delta or not isinstance(signature, str):
            out.append(
                self._out({"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": delta}, e, derived, _REPLY)
            )
        if isinstance(signature, str):
            value: dict[str, Any] = {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": mid}
            value["encryptedValue"] = signature
            if out:
                value["metadata"] = dict(_IMPLICIT_META)
                out.append(value)
            else:
                out.append(self._out(value, e, {**derived, "signature": signature}, _REPLY))
        return out

    def _block_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        thinking = e["type"] == "THINKING_BLOCK_END"
        block = e.get("blockId")
        mid = (run.reasoning if thinking else run.texts).pop(block, None) if run is not None else None
        if mid is None:
            return self._wrap(e)
        derived = {"blockId": block}
        if not thinking:
            return [self._out({"type": "TEXT_MESSAGE_END", "messageId": mid}, e, derived, _REPLY)]
        return [
            self._out({"type": "REASONING_MESSAGE_END", "messageId": mid}, e, derived, _REPLY),
            {"type": "REASONING_END", "messageId": mid, "metadata": dict(_IMPLICIT_META)},
        ]

    def _tool_call_start(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call, name = e.get("toolCallId"), e.get("toolCallName")
        run = self._run
        if not _str(call) or (run is not None and call in run.calls):
            return self._wrap(e)
        again = run is not None and _goes_on(run, call, e)  # a call started again under its replyId
        if not _str(name) or name in _PLACEHOLDERS:
            if not again:
                return self._wrap(e)
            assert run is not None
            name = run.names[call]
        out = self._ensure_run(e)
        run = self._run
        assert run is not None
        if not again:  # a call id given again under another replyId (a new call) gets an AG-UI id of its own:
            ag = self._fresh(call) if call in run.names else call  # AG-UI's ids are per run
            self._used.add(call)
            run.ids.pop(call, None)
            if ag != call:
                run.ids[call] = ag
        ag = run.ids.get(call, call)
        run.calls[call] = again  # (its arguments so far were sent: none from the input at its end)
        if not again:
            run.replies[call] = e.get("replyId")
        run.names[call] = name
        start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": ag, "toolCallName": name}
        if run.last_text is not None:
            start["parentMessageId"] = run.last_text
        out.append(self._out(start, e, {"toolCallId": ag, "toolCallName": name}, _REPLY))
        self._args_started(ag)
        early = run.pending.pop(call, None)
        if early:  # AgentScope Java's fragments before the call's name (wrapped): the client's arguments begin so
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": ag, "delta": "".join(early), **_implicit()})
            run.args[ag] += early
            run.calls[call] = True
        signature = e.get("thoughtSignature")
        if isinstance(signature, str):
            value: dict[str, Any] = {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": ag}
            value["encryptedValue"] = signature
            value["metadata"] = dict(_IMPLICIT_META)
            out.append(value)
        return out

    def _tool_call_delta(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        call, delta = e.get("toolCallId"), e.get("delta")
        if run is None or not isinstance(delta, str) or (call not in run.calls and not _goes_on(run, call, e)):
            wrapped = self._wrap(e)
            if self._run is not None and isinstance(delta, str) and _str(call) and call not in self._run.calls:
                self._run.pending.setdefault(call, []).append(delta)  # (sent when the call starts)
            return wrapped
        out: list[dict[str, Any]] = []
        if call not in run.calls:  # AgentScope Java's next fragment of a call it ended: the call goes on
            restart = {
                "type": "TOOL_CALL_START",
                "toolCallId": run.ids.get(call, call),
                "toolCallName": run.names[call],
            }
            if run.last_text is not None:
                restart["parentMessageId"] = run.last_text
            restart["metadata"] = dict(_IMPLICIT_META)
            out.append(restart)
            self._args_started(restart["toolCallId"])
        run.calls[call] = True
        ag = run.ids.get(call, call)
        run.args.setdefault(ag, []).append(delta)
        derived = {"toolCallId": ag, "delta": delta}
        out.append(self._out({"type": "TOOL_CALL_ARGS", "toolCallId": ag, "delta": delta}, e, derived, _REPLY))
        return out

    def _tool_call_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        call = e.get("toolCallId")
        if run is None or call not in run.calls:
            return self._wrap(e)
        out: list[dict[str, Any]] = []
        args = e.get("input")
        ag = run.ids.get(call, call)
        if not run.calls.pop(call) and isinstance(args, Mapping):  # no deltas: the arguments from the input
            text = value_text(args)
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": ag, "delta": text, "metadata": dict(_IMPLICIT_META)})
            run.args.setdefault(ag, []).append(text)
        shown = self._args_ended(ag)
        if isinstance(args, Mapping):
            self._input_not_shown(args, shown)
        out.append(self._out({"type": "TOOL_CALL_END", "toolCallId": ag}, e, {"toolCallId": ag}, _REPLY))
        return out

    def _input_not_shown(self, given: Mapping[str, Any], text: str) -> None:
        """A TOOL_CALL_END's ``input`` that is not the arguments its call's TOOL_CALL_ARGS show (``text``, read by
        the reducer's rules): the reducer keeps the input over them, but an AG-UI client shows the arguments, and so
        does the decoder (it quotes the carried input, rule ``ui-carrier-conflict``). Said here, by that rule: the
        round trip does not give this input back."""
        _, parsed, _ = parse_arguments(text) if text else ("", {}, None)
        if _shows(given, text, parsed):
            return
        message = (
            f"TOOL_CALL_END input {quoted(given, 60)} is not the arguments its TOOL_CALL_ARGS show {quoted(text, 60)}:"
            f" carried in metadata.{CARRY}, which the decoder does not apply (an AG-UI client shows the arguments)"
        )
        self.notes.append(Problem(f"/{self._index}/input", "ui-carrier-conflict", message))

    def _tool_result_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        run = self._run
        call = e.get("toolCallId")
        if run is None or call not in run.results or not isinstance(call, str):
            return self._wrap(e)
        parts = run.results.pop(call)
        content: Any = "".join(parts) if all(isinstance(p, str) for p in parts) else [_part_out(p) for p in parts]
        ag = run.ids.get(call, call)
        result = {"type": "TOOL_CALL_RESULT", "messageId": self._fresh(f"{ag}-result"), "toolCallId": ag}
        result.update(content=content, role="tool")
        out = self._out(result, e, {"toolCallId": ag, "state": "success"}, _REPLY)
        out.setdefault("metadata", {})[IMPLICIT] = "end"  # start and deltas went before, wrapped
        return [out]

    def _custom(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        name = e.get("name")
        if not isinstance(name, str) or name == WRAPPED or "value" not in e:
            return self._wrap(e)
        out = self._ensure_run(e)
        out.append(
            self._out({"type": "CUSTOM", "name": name, "value": e["value"]}, e, {"name": name, "value": e["value"]})
        )
        return out


def _part_out(part: Any) -> dict[str, Any]:
    """A tool result's text or block as an AG-UI content part (what has no part: its JSON as text)."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = part.get("type")
    source = part.get("source")
    if kind in ("image", "audio", "video", "data") and isinstance(source, Mapping):
        ag_kind = "document" if kind == "data" else kind
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            src = {"type": "data", "value": source["data"], "mimeType": str(source.get("media_type") or "")}
            return {"type": ag_kind, "source": src}
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            src = {"type": "url", "value": source["url"]}
            if isinstance(source.get("mime_type"), str):
                src["mimeType"] = source["mime_type"]
            return {"type": ag_kind, "source": src}
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return {"type": "text", "text": value_text(part)}


#: agentmsg usage key -> AG-UI TokenUsage key
_USAGE_OUT: Final = {
    "inputTokens": "inputTokens",
    "outputTokens": "outputTokens",
    "totalTokens": "totalTokens",
    "cachedTokens": "cachedInputTokens",
    "cacheCreationInputTokens": "cacheWriteInputTokens",
    "reasoningTokens": "reasoningTokens",
}
_USAGE_IN: Final = {v: k for k, v in _USAGE_OUT.items()}

_ENCODE: Final[dict[str, Callable[[AGUIEncoder, Mapping[str, Any]], list[dict[str, Any]]]]] = {
    "AGENT_START": AGUIEncoder._agent_start,
    "AGENT_END": AGUIEncoder._agent_end,
    "MODEL_CALL_START": AGUIEncoder._model_call_start,
    "MODEL_CALL_END": AGUIEncoder._model_call_end,
    "TEXT_BLOCK_START": AGUIEncoder._block_start,
    "TEXT_BLOCK_DELTA": AGUIEncoder._block_delta,
    "TEXT_BLOCK_END": AGUIEncoder._block_end,
    "THINKING_BLOCK_START": AGUIEncoder._block_start,
    "THINKING_BLOCK_DELTA": AGUIEncoder._block_delta,
    "THINKING_BLOCK_END": AGUIEncoder._block_end,
    "TOOL_CALL_START": AGUIEncoder._tool_call_start,
    "TOOL_CALL_DELTA": AGUIEncoder._tool_call_delta,
    "TOOL_CALL_END": AGUIEncoder._tool_call_end,
    "TOOL_RESULT_END": AGUIEncoder._tool_result_end,
    "CUSTOM": AGUIEncoder._custom,
}


# ==== AG-UI -> AgentEvents ========================================================================================

_STR, _ANY, _LIST, _OBJ = "string", "any", "array", "object"

#: every AG-UI 1.0 event type (and the 0.0.x THINKING_* ones) with its required fields and their JSON types
_REQUIRED: Final[dict[str, dict[str, str]]] = {
    "RUN_STARTED": {"threadId": _STR, "runId": _STR},
    "RUN_FINISHED": {"threadId": _STR, "runId": _STR},
    "RUN_ERROR": {"message": _STR},
    "STEP_STARTED": {"stepName": _STR},
    "STEP_FINISHED": {"stepName": _STR},
    "TEXT_MESSAGE_START": {"messageId": _STR},
    "TEXT_MESSAGE_CONTENT": {"messageId": _STR, "delta": _STR},
    "TEXT_MESSAGE_END": {"messageId": _STR},
    "TEXT_MESSAGE_CHUNK": {},
    "TOOL_CALL_START": {"toolCallId": _STR, "toolCallName": _STR},
    "TOOL_CALL_ARGS": {"toolCallId": _STR, "delta": _STR},
    "TOOL_CALL_END": {"toolCallId": _STR},
    "TOOL_CALL_CHUNK": {},
    "TOOL_CALL_RESULT": {"messageId": _STR, "toolCallId": _STR, "content": _ANY},
    "REASONING_START": {"messageId": _STR},
    "REASONING_END": {"messageId": _STR},
    "REASONING_MESSAGE_START": {"messageId": _STR},
    "REASONING_MESSAGE_CONTENT": {"messageId": _STR, "delta": _STR},
    "REASONING_MESSAGE_END": {"messageId": _STR},
    "REASONING_MESSAGE_CHUNK": {},
    "REASONING_ENCRYPTED_VALUE": {"subtype": _STR, "entityId": _STR, "encryptedValue": _STR},
    "STATE_SNAPSHOT": {"snapshot": _ANY},
    "STATE_DELTA": {"delta": _LIST},
    "MESSAGES_SNAPSHOT": {"messages": _LIST},
    "ACTIVITY_SNAPSHOT": {"messageId": _STR, "activityType": _STR, "content": _OBJ},
    "ACTIVITY_DELTA": {"messageId": _STR, "activityType": _STR, "patch": _LIST},
    "RAW": {"event": _ANY},
    "CUSTOM": {"name": _STR, "value": _ANY},
    "SUBAGENT_STARTED": {"subagentRunId": _STR, "name": _STR},
    "SUBAGENT_FINISHED": {"subagentRunId": _STR},
    "SUBAGENT_ERROR": {"subagentRunId": _STR, "message": _STR},
    "THINKING_START": {},
    "THINKING_END": {},
    "THINKING_TEXT_MESSAGE_START": {},
    "THINKING_TEXT_MESSAGE_CONTENT": {"delta": _STR},
    "THINKING_TEXT_MESSAGE_END": {},
}

#: optional fields with a JSON type (others are any JSON)
_OPTIONAL: Final[dict[str, str]] = {
    "role": _STR,
    "name": _STR,
    "parentMessageId": _STR,
    "code": _STR,
    "delta": _STR,
    "messageId": _STR,
    "toolCallId": _STR,
    "toolCallName": _STR,
    "metadata": _OBJ,
    "usage": _LIST,
}

_KINDS = {_STR: str, _LIST: list, _OBJ: Mapping}


def _checks(kind: str) -> tuple[frozenset[str], dict[str, type]]:
    """An AG-UI event type's rules for :meth:`AGUIDecoder._valid`'s quick look: the keys it requires, and the exact
    type of each key that has one (a required key's own type, else the optional one; ``timestamp`` an int): an
    event whose values are none null and all of exactly those types keeps them all (a subclass of one, a Mapping
    that is no dict: the full walk)."""
    exact = {_STR: str, _LIST: list, _OBJ: dict}
    types: dict[str, type] = {key: exact[want] for key, want in _OPTIONAL.items()}
    types["timestamp"] = int
    for key, want in _REQUIRED[kind].items():
        if want != _ANY:
            types[key] = exact[want]
        else:
            types.pop(key, None)  # (any JSON value: its optional rule is not its own)
    return frozenset(_REQUIRED[kind]), types


_CHECKS: Final = {kind: _checks(kind) for kind in _REQUIRED}

#: AG-UI fields that carry nothing an AgentEvent lacks (ids of what the events build, the type's own constants)
_STRUCTURAL: Final = frozenset({"type", "messageId", "toolCallId", "timestamp", "role", "delta"})

#: AG-UI events agentmsg has no event for: kept as CUSTOM ``ag-ui.<TYPE>``
_FOREIGN_TYPES: Final = frozenset(
    {
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "RAW",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
    }
)

_LEGACY: Final = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}


class AGUIDecoder:
    """AG-UI events -> AgentEvents (see the module docstring). ``clock`` gives ``createdAt`` for an event without
    ``timestamp`` before any with one (default: now)."""

    def __init__(self, *, strict: bool = False, clock: Callable[[], str] | None = None) -> None:
        self.notes: list[Problem] = Notes()
        self.strict = strict
        self._clock = clock or event_now
        self._index = -1
        self._minted = 0
        self._created: str | None = None
        self._stamp: int | None = None  # the timestamp _created was made from
        self._said: set[str] = set()
        self._run: str | None = None  # the open run's id
        self._outside = False  # an event outside a run was said
        self._ours = False  # the open run was written by agentmsg (its RUN_FINISHED adds nothing)
        self._usage_seen = False
        self._step: str | None = None
        self._texts: dict[str, Any] = {}  # open text messages: messageId -> blockId
        self._others: set[str] = set()  # open text messages of another role
        self._reasoning: dict[str, Any] = {}  # open reasoning messages: messageId -> blockId
        self._calls: dict[str, str] = {}  # open tool calls: toolCallId -> name
        self._known_calls: dict[str, dict[str, Any]] = {}  # this run's tool calls: id -> {id, name, input text}
        self._args: dict[str, list[str]] = {}  # the open calls' argument deltas (joined once, at their end)
        # the model call (reply) each open call began in; of the calls ended, that reply and their argument text: a
        # call started again in it goes on (as the reducer continues a call started again under its replyId, other
        # model calls between or not), its text with it
        self._began: dict[str, str] = {}
        self._ended: dict[str, tuple[str, str]] = {}
        self._shown: tuple[str, Any] | None = None  # the ending call's argument text and input (TOOL_CALL_END's)
        # tool-call encrypted values before the call's start: toolCallId -> (value, index of the event)
        self._signatures: dict[str, tuple[str, int]] = {}
        self._chunk: tuple[str, str] | None = None  # the message a *_CHUNK opened: (kind, id)
        self._thinking: str | None = None  # the legacy THINKING_TEXT_MESSAGE's id
        self._carry: Mapping[str, Any] | None = None
        self._absent: Any = None

    # ---- the contract ----

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._index += 1
        if type(event) is not dict and not isinstance(event, Mapping):  # (a dict at once: ABC checks are slow)
            self._problem("", "type", "an AG-UI event is a JSON object")
            return []
        kind = event.get("type")
        if not isinstance(kind, str):
            self._problem("/type", "required" if kind is None else "type", "an AG-UI event has a string type")
            return []
        if kind not in _REQUIRED:
            self._problem("/type", "enum", f"{quoted(kind, 60)} is not an AG-UI 1.0 event type")
            return []
        if not self._valid(event, kind):
            return []
        out: list[dict[str, Any]] = []
        if self._chunk is not None and not (kind.endswith("_CHUNK") and _CHUNK_KIND[kind] == self._chunk[0]):
            out += self._close_chunk()
        meta = event.get("metadata")  # (an object, when there: _valid)
        if meta is None:
            self._carry = self._absent = implicit = None
        else:
            carry = meta.get(CARRY)
            self._carry = carry if type(carry) is dict or isinstance(carry, Mapping) else None
            self._absent, implicit = meta.get(ABSENT), meta.get(IMPLICIT)
        stamp = event.get("timestamp")
        if type(stamp) is int and stamp != self._stamp:
            try:
                self._created, self._stamp = _iso(stamp), stamp
            except (OverflowError, ValueError):
                self._problem("/timestamp", "maximum", "timestamp is not a time in milliseconds: not read")
        if kind in _LEGACY:
            self._say_once("legacy", f"{kind} is AG-UI 0.0.x's, read as {_LEGACY[kind]}", "ui-legacy")
        if self._carry is None and implicit is None:
            self._say_unkept(event, kind)
            if self._run is None and kind not in ("RUN_STARTED", "RUN_ERROR") and not self._outside:
                self._outside = True  # (said once per stretch outside a run: the events are read all the same)
                self._problem("/type", "order", f"{kind} outside a run: AG-UI's events come after RUN_STARTED")
        if implicit is True and kind == "REASONING_ENCRYPTED_VALUE":
            return out  # (a signature the AgentEvent carried already)
        produced = _DECODE[kind](self, event)
        if implicit is True:
            produced = []
        elif implicit == "end":  # a tool result whose start and deltas came before, wrapped
            produced = produced[-1:]
        out += produced
        return out

    def close(self) -> list[dict[str, Any]]:
        out = self._close_chunk()
        self._unused_signatures()
        return out

    # ---- helpers ----

    def _problem(self, where: str, rule: str, message: str) -> None:
        problem = Problem(f"/{self._index}{where}", rule, message)
        if self.strict:
            raise ValidationError([problem], "AG-UI event")
        self.notes.append(problem)

    def _say_once(
        self, key: str, message: str, rule: str = "ui-not-kept", where: str = "", index: int | None = None
    ) -> None:
        if key not in self._said:
            if Notes.room(self.notes):  # (past it, not held: counted by the notes)
                self._said.add(key)
            self.notes.append(Problem(f"/{self._index if index is None else index}{where}", rule, message))

    def _unused_signatures(self) -> None:
        """The run ends (or the stream): a tool-call encrypted value whose call never started is said (once per
        stream, at the first such event) and forgotten."""
        if self._signatures:
            first = min(index for _, index in self._signatures.values())
            message = "REASONING_ENCRYPTED_VALUE of a tool call that never started: left out"
            self._say_once("encrypted-unused", message, index=first)
            self._signatures.clear()

    def _valid(self, event: Mapping[str, Any], kind: str) -> bool:
        """Whether ``event`` keeps AG-UI's rules for its type; the first broken one is a problem (:meth:`_broken`)."""
        required, types = _CHECKS[kind]
        if type(event) is dict and required <= event.keys():
            for key, value in event.items():
                want = types.get(key)
                if value is None or (want is not None and type(value) is not want):
                    break  # (or a subclass of the type: the walk below tells)
            else:
                return True
        return self._broken(event, kind)

    def _broken(self, event: Mapping[str, Any], kind: str) -> bool:
        """:meth:`_valid`'s walk of the rules in order, the first broken one said (False), or True: all kept."""
        for key, value in event.items():
            if value is None:
                self._problem(f"/{key}", "type", f"{key} is null: AG-UI omits an optional field, never nulls it")
                return False
        required = _REQUIRED[kind]
        for key, want in required.items():
            if key not in event:
                self._problem(f"/{key}", "required", f"{kind} needs {key}")
                return False
            if want != _ANY and not isinstance(event[key], _KINDS[want]):
                self._problem(f"/{key}", "type", f"{kind} {key} is a JSON {want}")
                return False
        for key, want in _OPTIONAL.items():  # (a key the type requires has its own rule, above: STATE_DELTA's delta)
            if key in event and key not in required and not isinstance(event[key], _KINDS[want]):
                self._problem(f"/{key}", "type", f"{key} is a JSON {want}")
                return False
        stamp = event.get("timestamp")
        if stamp is not None and type(stamp) is not int:
            self._problem("/timestamp", "type", "timestamp is an integer (milliseconds)")
            return False
        return True

    def _say_unkept(self, event: Mapping[str, Any], kind: str) -> None:
        """The fields of an AG-UI event from elsewhere that no AgentEvent keeps (once per type and field)."""
        kept = _KEPT.get(kind)
        if kept is None:
            return
        for key in event:
            if key not in kept and key not in _STRUCTURAL:
                self._say_once(f"{kind}/{key}", f"{kind} {key[:40]}: no AgentEvent keeps it (left out)")

    def _ev(self, kind: str, primary: bool = True, **fields: Any) -> dict[str, Any]:
        """An AgentEvent: ``id`` minted, ``createdAt`` from the last timestamp; for the event an AG-UI event
        stands for (``primary``) what agentmsg carried in its metadata is put back."""
        self._minted += 1
        if self._created is None:
            self._created = self._clock()
        out: dict[str, Any] = {"type": kind, "id": f"ag-ui-{self._minted}", "createdAt": self._created}
        out.update(fields)
        if primary and self._carry is not None:
            for key, value in self._carry.items():
                if key == "input" and self._shown is not None and not _shows(value, *self._shown):
                    self._conflict(kind, key, value, self._shown[1], absent=False)
                elif key not in out or key == "id" or key == "createdAt" or _settable(kind, key, value, out[key]):
                    out[key] = value
                elif not same_json(value, out[key]):
                    self._conflict(kind, key, value, out[key], absent=False)
        if primary and isinstance(self._absent, list):
            for key in self._absent:
                if isinstance(key, str) and key in out:
                    if _settable(kind, key, None, out[key]):
                        del out[key]
                    else:
                        self._conflict(kind, key, None, out[key], absent=True)
        return out

    def _conflict(self, kind: str, key: str, value: Any, visible: Any, *, absent: bool) -> None:
        """A carried key (``value``), or one listed absent, that would change what the AG-UI event itself says: not
        applied, said (rule ``ui-carrier-conflict``): what an AG-UI client shows is what agentmsg keeps."""
        said = f"{ABSENT} {quoted(key, 40)}" if absent else f"{CARRY} {quoted(key, 40)} {quoted(value, 60)}"
        message = f"{said} contradicts {kind} {quoted(visible, 60)}: not applied"
        self._problem("/metadata", "ui-carrier-conflict", message)

    def _reply(self) -> str:
        # (an empty step name or run id is still the reply its MODEL_CALL_START or AGENT_START opened)
        if self._step is not None:
            return self._step
        return self._run if self._run is not None else "ag-ui"

    def _close_chunk(self) -> list[dict[str, Any]]:
        """The message a ``*_CHUNK`` opened ends at an event of another kind (as ``@ag-ui/client`` ends it)."""
        if self._chunk is None:
            return []
        kind, mid = self._chunk
        self._chunk = None
        if kind == "text" and mid in self._texts:
            return [self._ev("TEXT_BLOCK_END", False, replyId=self._reply(), blockId=self._texts.pop(mid))]
        if kind == "reasoning" and mid in self._reasoning:
            return [self._ev("THINKING_BLOCK_END", False, replyId=self._reply(), blockId=self._reasoning.pop(mid))]
        if kind == "tool" and mid in self._calls:
            del self._calls[mid]
            return [self._ev("TOOL_CALL_END", False, replyId=self._reply(), toolCallId=mid)]
        return []

    def _close_all(self, why: str) -> list[dict[str, Any]]:
        """What is still open when a run finishes: ended (AG-UI refuses such a RUN_FINISHED: said); the signatures
        no block took, said."""
        out: list[dict[str, Any]] = []
        if self._texts or self._reasoning or self._calls or self._others:
            self._problem("", "order", f"{why} while a message or tool call is still open: ended there")
        for block in self._texts.values():
            out.append(self._ev("TEXT_BLOCK_END", False, replyId=self._reply(), blockId=block))
        for block in self._reasoning.values():
            out.append(self._ev("THINKING_BLOCK_END", False, replyId=self._reply(), blockId=block))
        for call in self._calls:
            self._take_arguments(call)  # (ended here: its input is what its arguments say, as at its own end)
            out.append(self._ev("TOOL_CALL_END", False, replyId=self._reply(), toolCallId=call))
        self._texts.clear()
        self._reasoning.clear()
        self._calls.clear()
        self._others.clear()
        self._unused_signatures()
        return out

    # ---- the events ----

    def _run_started(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self._run is not None:
            self._problem("", "order", "RUN_STARTED while a run is open: the open one ends here")
            out += self._close_all("RUN_STARTED")
            out.append(self._ev("AGENT_END", False, replyId=self._run))
        self._run, self._step, self._usage_seen, self._outside = e["runId"], None, False, False
        meta = e.get("metadata")
        self._ours = self._carry is not None or (isinstance(meta, Mapping) and IMPLICIT in meta)
        self._known_calls.clear()
        self._args.clear()
        self._began.clear()
        self._ended.clear()
        fields: dict[str, Any] = {"replyId": e["runId"]}
        if e["threadId"] != e["runId"]:
            fields["sessionId"] = e["threadId"]
        out.append(self._ev("AGENT_START", **fields))
        return out

    def _run_finished(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        if self._run is None:
            self._problem("", "order", "RUN_FINISHED without a run started")
        out = self._close_all("RUN_FINISHED")
        reply = e["runId"]
        if not self._ours:
            out += self._run_extras(e, reply)
        out.append(self._ev("AGENT_END", replyId=reply))
        self._run = self._step = None
        return out

    def _run_extras(self, e: Mapping[str, Any], reply: str) -> list[dict[str, Any]]:
        """What a RUN_FINISHED from elsewhere says beyond the end: its usage (when no step said one), a pause. What
        of them no AgentEvent keeps is said, once per stream and kind (rule ``ui-not-kept``, pointer at it)."""
        out: list[dict[str, Any]] = []
        usage = e.get("usage")
        if isinstance(usage, list) and usage and not self._usage_seen:
            total: dict[str, int] = {}
            models = set()
            for i, entry in enumerate(usage):
                if not isinstance(entry, Mapping):
                    self._say_once(
                        "usage-entry", "RUN_FINISHED usage: an entry that is no object (left out)", where=f"/usage/{i}"
                    )
                    continue
                for theirs, ours in _USAGE_IN.items():
                    value = entry.get(theirs)
                    if type(value) is int and value >= 0:
                        total[ours] = total.get(ours, 0) + value
                for key, value in entry.items():
                    counted = type(value) is int and value >= 0
                    if counted if key in _USAGE_IN else key == "model" and isinstance(value, str):
                        continue
                    where = f"/usage/{i}" + pointer_of([key])
                    message = f"RUN_FINISHED usage {key[:40]}: no AgentEvent keeps it (left out)"
                    self._say_once(f"usage/{key}", message, where=where)
                if isinstance(entry.get("model"), str):
                    models.add(entry["model"])
            if len(models) > 1:
                self._say_once("usage-models", "RUN_FINISHED usage of several models: no model kept", where="/usage")
            if total:
                meta = {"model": models.pop()} if len(models) == 1 else {}
                out.append(self._ev("MODEL_CALL_START", False, replyId=reply))
                end = self._ev("MODEL_CALL_END", False, replyId=reply, usage=total)
                if meta:
                    end["metadata"] = meta
                out.append(end)
        outcome = e.get("outcome")
        kind = outcome.get("type") if isinstance(outcome, Mapping) else None
        if kind == "interrupt" and isinstance(outcome, Mapping) and isinstance(outcome.get("interrupts"), list):
            calls = []
            for k, item in enumerate(outcome["interrupts"]):
                wanted = item.get("toolCallId") if isinstance(item, Mapping) else None
                call = self._known_calls.get(wanted) if isinstance(wanted, str) else None
                if call is None:
                    self._say_once("interrupt", "RUN_FINISHED interrupts without a known tool call: left out")
                    continue
                calls.append(dict(call))  # (a copy: the event handed out never changes with the decoder)
                for key in item:
                    if key not in ("toolCallId", "reason"):
                        where = f"/outcome/interrupts/{k}" + pointer_of([key])
                        message = f"RUN_FINISHED interrupt {key[:40]}: no AgentEvent keeps it (left out)"
                        self._say_once(f"interrupt/{key}", message, where=where)
            if calls:
                out.append(self._ev("REQUIRE_USER_CONFIRM", False, replyId=reply, toolCalls=calls))
        elif kind == "cancelled":
            out.append(self._ev("REQUEST_STOP", False, generateReason="INTERRUPTED", reason="cancelled"))
        elif isinstance(outcome, Mapping) and isinstance(outcome.get("pendingToolCallIds"), list):
            known = self._known_calls
            calls = [dict(known[i]) for i in outcome["pendingToolCallIds"] if isinstance(i, str) and i in known]
            if len(calls) < len(outcome["pendingToolCallIds"]):
                message = "RUN_FINISHED pendingToolCallIds without a known tool call: left out"
                self._say_once("pending", message, where="/outcome/pendingToolCallIds")
            if calls:
                out.append(self._ev("REQUIRE_EXTERNAL_EXECUTION", False, replyId=reply, toolCalls=calls))
        elif outcome is not None and kind != "success":
            self._say_once(
                "outcome", "RUN_FINISHED outcome of no AG-UI 1.0 shape: not read (left out)", where="/outcome"
            )
        return out

    def _run_error(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        value: dict[str, Any] = {"type": e.get("code", "RUN_ERROR"), "message": e["message"]}
        out = [self._ev("CUSTOM", name="agentmsg.error", value=value)]
        self._unused_signatures()
        self._texts.clear()
        self._reasoning.clear()
        self._calls.clear()
        self._others.clear()
        self._run = self._step = None  # the reply is cut: the reducer keeps it as INTERRUPTED
        return out

    def _step_started(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._step = e["stepName"]
        return [self._ev("MODEL_CALL_START", replyId=e["stepName"])]

    def _step_finished(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = [self._ev("MODEL_CALL_END", replyId=e["stepName"])]
        if "usage" in out[0]:
            self._usage_seen = True
        self._step = None
        return out

    def _text_start(self, e: Mapping[str, Any], mid: str | None = None) -> list[dict[str, Any]]:
        mid = e["messageId"] if mid is None else mid
        if mid in self._texts or mid in self._others:
            self._problem("/messageId", "order", f"TEXT_MESSAGE_START of {quoted(mid, 40)}, already open: ignored")
            return []
        if e.get("role", "assistant") != "assistant":
            self._others.add(mid)
            return [self._ev("CUSTOM", name=FOREIGN + "TEXT_MESSAGE_START", value=dict(e))]
        block = self._carry.get("blockId", mid) if self._carry is not None else mid
        block = block if _renamed(mid, block) else mid  # (any other carried blockId: said by _ev, not applied)
        self._texts[mid] = block
        return [self._ev("TEXT_BLOCK_START", replyId=self._reply(), blockId=block)]

    def _text_content(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e["messageId"]
        if mid in self._others:
            return [self._ev("CUSTOM", name=FOREIGN + "TEXT_MESSAGE_CONTENT", value=dict(e))]
        out: list[dict[str, Any]] = []
        if mid not in self._texts:
            self._problem(
                "/messageId", "order", f"TEXT_MESSAGE_CONTENT of {quoted(mid, 40)}, not started: started here"
            )
            out += self._text_start({"messageId": mid}, mid)
        out.append(self._ev("TEXT_BLOCK_DELTA", replyId=self._reply(), blockId=self._texts[mid], delta=e["delta"]))
        return out

    def _text_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e["messageId"]
        if mid in self._others:
            self._others.discard(mid)
            return [self._ev("CUSTOM", name=FOREIGN + "TEXT_MESSAGE_END", value=dict(e))]
        if mid not in self._texts:
            self._problem("/messageId", "order", f"TEXT_MESSAGE_END of {quoted(mid, 40)}, not open: ignored")
            return []
        return [self._ev("TEXT_BLOCK_END", replyId=self._reply(), blockId=self._texts.pop(mid))]

    def _text_chunk(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e.get("messageId")
        out: list[dict[str, Any]] = []
        if mid is not None and (self._chunk is None or self._chunk[1] != mid):
            out += self._close_chunk()
            start = {"messageId": mid, **({"role": e["role"]} if "role" in e else {})}
            out += self._text_start(start)
            self._chunk = ("text", mid)
        elif self._chunk is None:
            self._problem("/messageId", "required", "the first TEXT_MESSAGE_CHUNK of a message needs messageId")
            return out
        if isinstance(e.get("delta"), str) and e["delta"]:
            out += self._text_content({"messageId": self._chunk[1], "delta": e["delta"]})
        return out

    def _reasoning_start(self, e: Mapping[str, Any], mid: str | None = None) -> list[dict[str, Any]]:
        mid = e["messageId"] if mid is None else mid
        if mid in self._reasoning:
            self._problem("/messageId", "order", f"REASONING_MESSAGE_START of {quoted(mid, 40)}, already open: ignored")
            return []
        block = self._carry.get("blockId", mid) if self._carry is not None else mid
        block = block if _renamed(mid, block) else mid  # (any other carried blockId: said by _ev, not applied)
        self._reasoning[mid] = block
        return [self._ev("THINKING_BLOCK_START", replyId=self._reply(), blockId=block)]

    def _reasoning_content(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e["messageId"]
        out: list[dict[str, Any]] = []
        if mid not in self._reasoning:
            self._problem(
                "/messageId", "order", f"REASONING_MESSAGE_CONTENT of {quoted(mid, 40)}, not started: started here"
            )
            out += self._reasoning_start({"messageId": mid}, mid)
        block = self._reasoning[mid]
        out.append(self._ev("THINKING_BLOCK_DELTA", replyId=self._reply(), blockId=block, delta=e["delta"]))
        return out

    def _reasoning_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e["messageId"]
        if mid not in self._reasoning:
            self._problem("/messageId", "order", f"REASONING_MESSAGE_END of {quoted(mid, 40)}, not open: ignored")
            return []
        return [self._ev("THINKING_BLOCK_END", replyId=self._reply(), blockId=self._reasoning.pop(mid))]

    def _reasoning_chunk(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        mid = e.get("messageId")
        out: list[dict[str, Any]] = []
        if mid is not None and (self._chunk is None or self._chunk[1] != mid):
            out += self._close_chunk()
            out += self._reasoning_start({"messageId": mid})
            self._chunk = ("reasoning", mid)
        elif self._chunk is None:
            self._problem("/messageId", "required", "the first REASONING_MESSAGE_CHUNK of a message needs messageId")
            return out
        if isinstance(e.get("delta"), str) and e["delta"]:
            out += self._reasoning_content({"messageId": self._chunk[1], "delta": e["delta"]})
        return out

    def _span(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        return []  # REASONING_START / REASONING_END: a span around reasoning messages, nothing of its own

    def _legacy(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        kind = e["type"]
        if kind == "THINKING_TEXT_MESSAGE_START":
            self._minted += 1
            self._thinking = f"thinking-{self._minted}"
            return self._reasoning_start({"messageId": self._thinking})
        if self._thinking is None:
            if kind == "THINKING_TEXT_MESSAGE_CONTENT":
                return self._legacy({"type": "THINKING_TEXT_MESSAGE_START"}) + self._legacy(e)
            return []
        if kind == "THINKING_TEXT_MESSAGE_CONTENT":
            return self._reasoning_content({"messageId": self._thinking, "delta": e["delta"]})
        if kind == "THINKING_TEXT_MESSAGE_END":
            mid, self._thinking = self._thinking, None
            return self._reasoning_end({"messageId": mid})
        return []  # THINKING_START / THINKING_END: the span

    def _encrypted(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        entity, value = e["entityId"], e["encryptedValue"]
        if e["subtype"] == "message":
            if entity in self._reasoning:
                block = self._reasoning[entity]
                return [
                    self._ev("THINKING_BLOCK_DELTA", replyId=self._reply(), blockId=block, delta="", signature=value)
                ]
            self._say_once("encrypted-closed", "REASONING_ENCRYPTED_VALUE of a reasoning message not open: left out")
            return []
        if e["subtype"] == "tool-call":
            if entity in self._calls or entity in self._known_calls:
                self._say_once("encrypted-call", "REASONING_ENCRYPTED_VALUE of a tool call already started: left out")
                return []
            self._signatures[entity] = (value, self._index)
            return []
        self._problem("/subtype", "enum", "REASONING_ENCRYPTED_VALUE subtype is 'message' or 'tool-call'")
        return []

    def _tool_start(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call, name = e["toolCallId"], e["toolCallName"]
        if call in self._calls:
            self._problem("/toolCallId", "order", f"TOOL_CALL_START of {quoted(call, 40)}, already open: ignored")
            return []
        self._calls[call] = name
        self._known_calls[call] = {"type": "tool_use", "id": call, "name": name, "input": {}}
        reply = self._reply()
        ended = self._ended.pop(call, None)
        if ended is not None and ended[0] == reply:  # (the reducer continues it: its text goes on)
            self._args[call] = [ended[1]]
        self._began[call] = reply
        fields: dict[str, Any] = {"replyId": self._reply(), "toolCallId": call, "toolCallName": name}
        if call in self._signatures:
            fields["thoughtSignature"] = self._signatures.pop(call)[0]
        return [self._ev("TOOL_CALL_START", **fields)]

    def _tool_args(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = e["toolCallId"]
        if call not in self._calls:
            self._problem("/toolCallId", "order", f"TOOL_CALL_ARGS of {quoted(call, 40)}, not started: ignored")
            return []
        if call in self._known_calls:
            self._args.setdefault(call, []).append(e["delta"])
        return [self._ev("TOOL_CALL_DELTA", replyId=self._reply(), toolCallId=call, delta=e["delta"])]

    def _tool_end(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = e["toolCallId"]
        if call not in self._calls:
            self._problem("/toolCallId", "order", f"TOOL_CALL_END of {quoted(call, 40)}, not open: ignored")
            return []
        del self._calls[call]
        self._shown = self._take_arguments(call)
        try:
            return [self._ev("TOOL_CALL_END", replyId=self._reply(), toolCallId=call)]
        finally:
            self._shown = None

    def _take_arguments(self, call: str) -> tuple[str, Any]:
        """A call of this run ends (its TOOL_CALL_END, or the run's end while it is open): its argument deltas,
        joined (after those before an end in the same model call: the reducer continues the call), are its input
        when they make a JSON object, read by the reducer's rules (``parse_arguments``: a surrogate pair split
        across deltas is one character, an integer past 64 bits no input). Returns the text and that input (``{}``
        when none): what an AG-UI client shows, what the reducer keeps."""
        known = self._known_calls.get(call)
        text = "".join(self._args.pop(call, ()))
        _, parsed, error = parse_arguments(text) if text else ("", {}, None)
        if known is not None:
            if error is None:
                known["input"] = parsed
            self._ended[call] = (self._began.pop(call, self._reply()), text)
        return text, parsed

    def _tool_chunk(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = e.get("toolCallId")
        out: list[dict[str, Any]] = []
        if call is not None and (self._chunk is None or self._chunk[1] != call):
            out += self._close_chunk()
            name = e.get("toolCallName")
            if not isinstance(name, str):
                self._problem("/toolCallName", "required", "the first TOOL_CALL_CHUNK of a call needs toolCallName")
                return out
            out += self._tool_start({"toolCallId": call, "toolCallName": name})
            self._chunk = ("tool", call)
        elif self._chunk is None:
            self._problem("/toolCallId", "required", "the first TOOL_CALL_CHUNK of a call needs toolCallId")
            return out
        if isinstance(e.get("delta"), str) and e["delta"]:
            out += self._tool_args({"toolCallId": self._chunk[1], "delta": e["delta"]})
        return out

    def _tool_result(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        call, content = e["toolCallId"], e["content"]
        reply = self._reply()
        name = self._known_calls.get(call, {}).get("name")
        named = {"toolCallName": name} if isinstance(name, str) else {}
        out = [self._ev("TOOL_RESULT_START", False, replyId=reply, toolCallId=call, **named)]
        if isinstance(content, str):
            parts: list[Any] = [content] if content else []
        elif isinstance(content, list):
            parts = content
        else:
            self._problem("/content", "type", "TOOL_CALL_RESULT content is a string or a list of content parts")
            parts = []
        for n, part in enumerate(parts):
            if isinstance(part, str):
                out.append(self._ev("TOOL_RESULT_TEXT_DELTA", False, replyId=reply, toolCallId=call, delta=part))
                continue
            block = _part_in(part)
            if block is not None:
                self._say_part_unkept(part, f"/content/{n}")
            if block is None:
                self._say_once(f"part/{n}", "a TOOL_CALL_RESULT content part of no known type: left out")
            elif block.get("type") == "text":
                out.append(
                    self._ev("TOOL_RESULT_TEXT_DELTA", False, replyId=reply, toolCallId=call, delta=block["text"])
                )
            else:
                out.append(self._ev("TOOL_RESULT_DATA_DELTA", False, replyId=reply, toolCallId=call, data=block))
        out.append(self._ev("TOOL_RESULT_END", replyId=reply, toolCallId=call, state="success"))
        return out

    def _say_part_unkept(self, part: Mapping[str, Any], where: str) -> None:
        """The keys of a TOOL_CALL_RESULT content part (and of its source) that its block has no field for (a
        part's ``id`` and ``metadata``, a file source's ``provider``, ...): said once per stream and key."""
        for key in part:
            if key not in AG_PART_KEYS:
                message = f"TOOL_CALL_RESULT content part {key[:40]}: no block keeps it (left out)"
                self._say_once(f"part-key/{key}", message, where=where + pointer_of([key]))
        source = part.get("source")
        for key in source if isinstance(source, Mapping) else ():
            if key not in AG_SOURCE_KEYS:
                message = f"TOOL_CALL_RESULT content part source {key[:40]}: no block keeps it (left out)"
                self._say_once(f"source-key/{key}", message, where=f"{where}/source" + pointer_of([key]))

    def _custom(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        if e["name"] == WRAPPED:
            value = e["value"]
            self._track_wrapped(value)
            return [value]
        if not isinstance(e["value"], Mapping):  # an AgentEvent's CUSTOM value is an object: the event kept whole
            return self._foreign(e)
        return [self._ev("CUSTOM", name=e["name"], value=e["value"])]

    def _track_wrapped(self, value: Any) -> None:
        """An AgentEvent sent whole: what it opens or closes in the run (a model call's end)."""
        if isinstance(value, Mapping) and value.get("type") == "MODEL_CALL_END" and value.get("usage") is not None:
            self._usage_seen = True

    def _foreign(self, e: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self._ev("CUSTOM", name=FOREIGN + e["type"], value=dict(e))]


def _part_in(part: Any) -> dict[str, Any] | None:
    """An AG-UI content part as an agentmsg block (text, or a media block); None: not a part."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    source = part.get("source")
    if kind not in ("image", "audio", "video", "document") or not isinstance(source, Mapping):
        return None
    ours = "data" if kind == "document" else kind
    value, mime = source.get("value"), source.get("mimeType")
    if not isinstance(value, str):
        return None
    if source.get("type") == "data":
        return {
            "type": ours,
            "source": {"type": "base64", "media_type": mime or "application/octet-stream", "data": value},
        }
    if source.get("type") in ("url", "file"):
        src: dict[str, Any] = {"type": "url", "url": value}
        if isinstance(mime, str):
            src["mime_type"] = mime
        return {"type": ours, "source": src}
    return None


#: the event types of AG-UI (1.0, and 0.0.x's THINKING_*) that no AgentEvent has: a stream whose first event has
#: one is an AG-UI stream (``agentmsg serve`` reads such a file through the decoder)
TYPES: Final = frozenset(_REQUIRED) - {"CUSTOM"}

_CHUNK_KIND: Final = {"TEXT_MESSAGE_CHUNK": "text", "TOOL_CALL_CHUNK": "tool", "REASONING_MESSAGE_CHUNK": "reasoning"}

#: the fields each AG-UI event type's AgentEvents keep (others, but the structural ones, are said once: ui-not-kept)
_KEPT: Final[dict[str, frozenset[str]]] = {
    "RUN_STARTED": frozenset({"threadId", "runId"}),
    "RUN_FINISHED": frozenset({"threadId", "runId", "usage", "outcome"}),
    "RUN_ERROR": frozenset({"message", "code"}),
    "STEP_STARTED": frozenset({"stepName"}),
    "STEP_FINISHED": frozenset({"stepName"}),
    "TEXT_MESSAGE_START": frozenset(),
    "TEXT_MESSAGE_CONTENT": frozenset(),
    "TEXT_MESSAGE_END": frozenset(),
    "TEXT_MESSAGE_CHUNK": frozenset(),
    "TOOL_CALL_START": frozenset({"toolCallName"}),
    "TOOL_CALL_ARGS": frozenset(),
    "TOOL_CALL_END": frozenset(),
    "TOOL_CALL_CHUNK": frozenset({"toolCallName"}),
    "TOOL_CALL_RESULT": frozenset({"content"}),
    "REASONING_MESSAGE_START": frozenset(),
    "REASONING_MESSAGE_CONTENT": frozenset(),
    "REASONING_MESSAGE_END": frozenset(),
    "REASONING_MESSAGE_CHUNK": frozenset(),
    "REASONING_ENCRYPTED_VALUE": frozenset({"subtype", "entityId", "encryptedValue"}),
    "CUSTOM": frozenset({"name", "value"}),
}

_DECODE: Final[dict[str, Callable[[AGUIDecoder, Mapping[str, Any]], list[dict[str, Any]]]]] = {
    "RUN_STARTED": AGUIDecoder._run_started,
    "RUN_FINISHED": AGUIDecoder._run_finished,
    "RUN_ERROR": AGUIDecoder._run_error,
    "STEP_STARTED": AGUIDecoder._step_started,
    "STEP_FINISHED": AGUIDecoder._step_finished,
    "TEXT_MESSAGE_START": AGUIDecoder._text_start,
    "TEXT_MESSAGE_CONTENT": AGUIDecoder._text_content,
    "TEXT_MESSAGE_END": AGUIDecoder._text_end,
    "TEXT_MESSAGE_CHUNK": AGUIDecoder._text_chunk,
    "TOOL_CALL_START": AGUIDecoder._tool_start,
    "TOOL_CALL_ARGS": AGUIDecoder._tool_args,
    "TOOL_CALL_END": AGUIDecoder._tool_end,
    "TOOL_CALL_CHUNK": AGUIDecoder._tool_chunk,
    "TOOL_CALL_RESULT": AGUIDecoder._tool_result,
    "REASONING_START": AGUIDecoder._span,
    "REASONING_END": AGUIDecoder._span,
    "REASONING_MESSAGE_START": AGUIDecoder._reasoning_start,
    "REASONING_MESSAGE_CONTENT": AGUIDecoder._reasoning_content,
    "REASONING_MESSAGE_END": AGUIDecoder._reasoning_end,
    "REASONING_MESSAGE_CHUNK": AGUIDecoder._reasoning_chunk,
    "REASONING_ENCRYPTED_VALUE": AGUIDecoder._encrypted,
    "CUSTOM": AGUIDecoder._custom,
    **{kind: AGUIDecoder._foreign for kind in _FOREIGN_TYPES},
    **{kind: AGUIDecoder._legacy for kind in _LEGACY},
}


class AGUI:
    """The AG-UI protocol: frames are ``id: <position>`` and ``data: <JSON>`` (no ``event:`` field: AG-UI's
    client reads only ``data``); nothing follows the last event (its RUN_FINISHED or RUN_ERROR)."""

    name = "ag-ui"
    media_type = "application/vnd.ag-ui.event+json"
    response_headers: tuple[tuple[str, str], ...] = ()
    resumable = True

    def encoder(self) -> Encoder:
        return AGUIEncoder()

    def decoder(self, *, strict: bool = False) -> Decoder:
        return AGUIDecoder(strict=strict)

    def frame(self, event: Mapping[str, Any], position: int) -> bytes:
        return sse_frame(event, position)

    def trailer(self, error: str | None) -> bytes:
        return b""


PROTOCOL = AGUI()


def read_input(body: Mapping[str, Any] | str | bytes) -> RunInput:
    """What an AG-UI front end POSTs (``RunAgentInput``: ``threadId``, ``runId``, ``state``, ``messages``, ``tools``,
    ``context``, ``forwardedProps``, ...; the JSON text or the parsed object) as a :class:`RunInput`: the messages as
    agentmsg messages (user and system as theirs, developer as SYSTEM, assistant text and ``toolCalls`` as text and
    ``tool_use`` blocks, a tool message as a TOOL message of one ``tool_result``, a reasoning message as a thinking
    block opening the assistant message after it, its ``encryptedValue`` the signature; image, audio, video and
    document parts as media blocks, never read nor downloaded here), and the run's ids, ``state``, ``tools``,
    ``context``, ``forwarded_props``, ``resume`` as posted. Activity messages (UI state) are kept in ``activities``;
    what no field holds in the message's (a tool call's: its ``tool_use``'s) metadata (``ag_ui``; a content part's
    keys no block holds, its ``id`` and ``metadata`` say, in ``ag_ui_parts``), each with a note (rule ``ui-mapped``,
    pointer into the body). What ``@ag-ui/core``'s schema refuses raises :class:`~agentmsg.ValidationError` listing
    every problem (pointer + rule)."""
    return read_run_input(body)
