"""The Vercel AI SDK's UI message stream (``ai`` 5-7, what ``useChat`` reads), both ways.

:class:`AiSdkEncoder` turns AgentEvents into UI message chunks (``start``, ``start-step``, ``text-delta``,
``tool-input-available``, ``finish``, ...) and :class:`AiSdkDecoder` turns UI chunks back into AgentEvents, so
that a UI stream reduces with the one :class:`~agentmsg.Reducer` to the message its AgentEvents reduce to.
docs/ai-sdk.md has the mapping, chunk by chunk, both ways.

What the UI stream has no chunk for is never dropped silently:

* An AgentEvent, or a key of one, that no chunk carries (the AGENT_RESULT, HITL events, usage, a thinking
  signature, a tool call's state and metadata, ...) rides on a *transient* ``data-agentmsg`` chunk: the AI SDK's
  reader hands it to ``onData`` and leaves it out of the UIMessage, and :class:`AiSdkDecoder` puts it back. A
  ``data-agentmsg`` chunk holds either ``{"event": {...}}`` (a whole event, without its id) or ``{"rest": TYPE,
  "fields": {...}}`` (the keys of the next event of that type the chunks after it do not carry). The encoder
  notes each once per stream (rule ``ui-wrapped``).
* A chunk or key of a UI stream agentmsg has no place for (``source-document``, ``custom``, ``steering-message``,
  ``messageMetadata`` of another producer, ``providerMetadata``, ``citations``, preliminary tool outputs, ...) is
  noted by the decoder, once per stream and kind (rule ``ui-not-kept``); the values such a chunk carries (an
  ``abort``'s or a tool approval's ``reason``, an approval request's ``signature``, ``approvalDescriptor``,
  ``inputSchemaInput`` and ``isAutomatic``, a call's ``title``, ``toolMetadata`` and ``inputEncoding`` ``text``,
  an ``errorText`` on ``tool-output-denied``, whose result has no output) are quoted in its note as JSON (at most
  200 characters), said once per value.
* Event envelopes: ``id`` has no counterpart (the decoder mints ids, ``<prefix><n>``); ``createdAt`` is carried
  for AGENT_START (the message's timestamp) and whole events only, the decoder stamps the others with its clock.

Bad input raises :class:`~agentmsg.ValidationError` naming the JSON pointer (``/<index of the chunk or event
fed>/<key>``) and the rule, as the AI SDK's reader refuses a chunk its schema refuses.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import orjson

from agentmsg._codec.jsontext import parse_arguments
from agentmsg._codec.timestamps import event_now
from agentmsg.errors import Problem, ValidationError
from agentmsg.events._dedupe import DEFAULT_DEDUPE_WINDOW, DedupeWindow
from agentmsg.events.reducer import opens_reply
from agentmsg.ui._protocol import SAFE_INTEGER, Notes, quoted, same_json, sse_frame, value_text
from agentmsg.ui._requests import ChatRequest, read_chat_request

NAME: Final = "ai-sdk"
#: what an ``Accept`` header asks for this protocol by (the AI SDK defines none, and its client sends no Accept of its
#: own: point useChat at ``?protocol=ai-sdk``, or serve it as the default, ``agentmsg serve --protocol ai-sdk``); the
#: response is ``text/event-stream``
MEDIA_TYPE: Final = "application/vnd.ai-sdk.ui-message-stream+json"
#: the headers the AI SDK's ``createUIMessageStreamResponse`` sends (``UI_MESSAGE_STREAM_HEADERS``)
RESPONSE_HEADERS: Final = (
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    ("x-vercel-ai-ui-message-stream", "v1"),
    ("x-accel-buffering", "no"),
)
#: what the stream ends with (``JsonToSseTransformStream``)
DONE_FRAME: Final = b"data: [DONE]\n\n"
#: the chunk type of what only agentmsg reads (transient: never part of a UIMessage)
CARRIER: Final = "data-agentmsg"
CARRIED_RULE: Final = "ui-wrapped"
NOT_KEPT_RULE: Final = "ui-not-kept"
ERROR_EVENT: Final = "agentmsg.error"
#: CUSTOM events sent as transient data chunks: what a UI need not keep in the message
TRANSIENT_CUSTOM: Final = frozenset({"agentmsg.problem", "agentmsg.not-kept"})
#: Java's placeholder tool names (docs/events.md rule 3): a call so named gets its real name later
PLACEHOLDER_NAMES: Final = frozenset({"__fragment__", "__pending__"})
_ENVELOPE = frozenset({"type", "id", "createdAt"})
#: a carried key that contradicts what the chunk itself says (not applied)
CONFLICT_RULE: Final = "ui-carrier-conflict"


def _settable(kind: str, key: str, carried: Any, visible: Any) -> bool:
    """Whether a carrier's ``rest`` may set ``key`` of a decoded ``kind`` event the decoder set (to ``visible``)
    already: what the decoder mints (``id``, ``createdAt``) or takes from its context (``replyId``, but AGENT_START's:
    the ``start`` chunk's ``messageId``); what the chunk holds only in part (an error event's ``value``, of which the
    ``error`` chunk shows the message: the same message, or a value without one, shown as JSON; a tool call's
    ``input`` that is no object, which ``tool-input-available`` cannot hold); never what the chunk itself says (the
    type, a text, a block or call id, a name)."""
    if key in ("id", "createdAt"):
        return True
    if key == "replyId":
        return kind != "AGENT_START"
    if key == "value" and kind == "CUSTOM" and isinstance(visible, dict) and visible.keys() == {"message"}:
        message = carried.get("message") if isinstance(carried, dict) else None
        return not isinstance(message, str) or message == visible["message"]
    return key == "input" and kind == "TOOL_CALL_END" and not isinstance(carried, dict)


def _taken_name(name: Any) -> bool:
    """Whether the reducer names a call ``name`` (a non-empty string, no placeholder: ``_adopt_name``), which a
    carried tool name may then not change from the one the chunk shows."""
    return isinstance(name, str) and name != "" and not name.startswith("__")


#: generate reason (metadata ``agentscope_generate_reason``) -> ``finishReason``
FINISH_REASONS: Final = {
    "MODEL_STOP": "stop",
    "STRUCTURED_OUTPUT": "stop",
    "TOOL_CALLS": "tool-calls",
    "TOOL_SUSPENDED": "tool-calls",
    "PERMISSION_ASKING": "tool-calls",
    "INTERRUPTED": "interrupted",
}
#: a provider's raw finish reason (MODEL_CALL_END ``metadata.finishReason``, lowercased) -> ``finishReason``
RAW_FINISH_REASONS: Final = {
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "content_filter": "content-filter",
    "safety": "content-filter",
    "refusal": "content-filter",
}


def frame(chunk: Mapping[str, Any], position: int = 0) -> bytes:
    """One chunk as the AI SDK writes it: ``data: <JSON>`` and a blank line (no ``id:`` or ``event:`` line: the
    stream is not resumable by ``Last-Event-ID``)."""
    return sse_frame(chunk, None)


# ---------------------------------------------------------------------------------------------------------------
# AgentEvents -> UI chunks


#: events that open no reply when they come outside one
_NO_REPLY: Final = frozenset({"AGENT_START", "AGENT_END", "SUBAGENT_EXPOSED"})
#: a carrier saying that the chunk after it is for the UI only: the decoder makes no event of it
_UI_ONLY: Final = {"type": CARRIER, "data": {"uiOnly": True}, "transient": True}


def _carried(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``event`` carried whole (without its id) on a transient data chunk, for the decoder to give its reducer."""
    return [{"type": CARRIER, "data": {"event": {k: v for k, v in event.items() if k != "id"}}, "transient": True}]


_EventEncoder = Callable[["AiSdkEncoder", dict[str, Any], int], list[dict[str, Any]]]


def _is_plain_id(value: Any) -> bool:
    return isinstance(value, str) and value != ""


class AiSdkEncoder:
    """AgentEvents (dicts) -> UI message chunks (dicts), for one stream (it keeps what is open)."""

    def __init__(self) -> None:
        self.notes: list[Problem] = Notes()
        self._noted: set[str] = set()
        self._count = 0
        self._reply: Any = None  # the replyId the decoder will give events (AGENT_START's, then each model call's)
        self._started = False  # a ``start`` chunk was sent for the open reply
        self._step_open = False
        #: the open reply's model calls not ended, as the reducer counts them (a MODEL_CALL_START inside an open one
        #: nests; UI steps do not): one left open cuts an implicit reply (INTERRUPTED)
        self._model_open = 0
        self._text: set[str] = set()
        self._reasoning: set[str] = set()
        #: the blocks the end of a model call closed (a step ends its parts) that the source has not ended: the reducer
        #: holds them open, so a START for one is a second START it ignores (its deltas go on in the same block)
        self._stepped: set[str] = set()
        #: the tool calls a model call's start finished (a step ends its parts) before any END or MODEL_CALL_END: the
        #: reducer holds them open, so a START, delta or END for one in the next model call goes on in that call
        self._stepped_calls: set[str] = set()
        self._calls: dict[str, dict[str, Any]] = {}  # open tool calls: name, text so far, chunks held, started
        self._known_calls: dict[str, str] = {}  # call id -> tool name, every call started in the stream
        #: the UI message's calls finished (their part's final chunk sent) -> the replyId their events named (or
        #: None): an event for that id naming it again is the reducer's same call going on (_gone_on)
        self._finished_calls: dict[str, str | None] = {}
        self._results: dict[str, list[dict[str, Any]]] = {}  # open tool results: their events, held to the END
        self._data: dict[str, list[dict[str, Any]]] = {}  # data blocks built from deltas: their events
        self._generate_reason: str | None = None
        self._raw_finish: str | None = None
        self._errored = False
        self._usage: dict[str, Any] = {}
        self._model: str | None = None
        self._done = False
        self._implicit = False  # the open reply is an implicit one (no AGENT_START)
        self._ended = False  # a reply ended (AGENT_END): what would only open an empty reply after it opens none
        self._message_id: str | None = None  # the UIMessage's id
        self._reader_id = ""  # the UIMessage the AI SDK's reader builds (a ``start`` naming another resets it)
        self._window = DedupeWindow(DEFAULT_DEDUPE_WINDOW)  # the reducer's: a replayed event is not sent twice

    # -- notes and carrying ----------------------------------------------------------------------------------
    def _note(self, key: str, message: str, rule: str = CARRIED_RULE) -> None:
        if key not in self._noted:
            if Notes.room(self.notes):  # (past it, not held: counted by the notes)
                self._noted.add(key)
            self.notes.append(Problem(f"/{self._count}", rule, message))

    def _order(self, message: str) -> None:
        """An event out of order that the encoder puts in order, as the reducer would (its rule ``order``): the
        UI stream is valid, the reducer of the decoded events then has nothing to say."""
        self.notes.append(Problem(f"/{self._count}", "order", message))

    def _whole(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        """An event no chunk stands for, carried whole on a transient data chunk (without its id)."""
        kind = event.get("type")
        if isinstance(kind, str) and kind in _ENCODERS:
            self._note(f"whole:{kind}", f"{kind} has no UI chunk: carried on a transient {CARRIER} chunk")
        return _carried(event)

    def _rest(
        self, event: Mapping[str, Any], carried: Iterable[str], chunks: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """``chunks``, preceded by a carrier of the keys of ``event`` they do not carry (if any)."""
        skip = _ENVELOPE.union(carried)
        fields = {k: v for k, v in event.items() if k not in skip}
        if fields.get("replyId", self._reply) == self._reply:
            fields.pop("replyId", None)
        elif "replyId" in fields:
            self._reply = fields["replyId"]  # the decoder's too: a replyId carried sticks
        if not fields:
            return chunks
        kind = event["type"]
        self._note(
            f"rest:{kind}:{','.join(sorted(fields))}",
            f"{kind} {', '.join(sorted(fields))}: no UI chunk field; carried on a transient {CARRIER} chunk",
        )
        return [{"type": CARRIER, "data": {"rest": kind, "fields": fields}, "transient": True}, *chunks]

    # -- the API ---------------------------------------------------------------------------------------------
    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The chunks for one more event (none, one or several). It never raises: an event it cannot translate
        (not an object, an unknown type, without the id a block or call needs) is a note with the rule the reducer
        reports it by, and is carried whole when it is an object, so the reducer of the decoded stream says the
        same."""
        index = self._count
        try:
            if self._done:
                self.notes.append(Problem(f"/{index}", "order", "an event after the stream ended: not sent"))
                return []
            if not isinstance(event, Mapping):
                self.notes.append(
                    Problem(f"/{index}", "type", f"not an event object ({type(event).__name__}): not sent")
                )
                return []
            kind = event.get("type")
            if not isinstance(kind, str) or kind not in _ENCODERS:
                rule = "enum" if isinstance(kind, str) else ("required" if kind is None else "type")
                self.notes.append(Problem(f"/{index}/type", rule, f"{kind!r} is no AgentEvent type: carried as it is"))
                return self._whole(event)
            event_id = event.get("id")
            if isinstance(event_id, str) and self._window.seen(event_id):
                return []  # a repeat, which the reducer ignores (docs/events.md rule 9)
            if event.get("source") is not None:  # a subagent's event: not part of this message
                return self._whole(event)
            ev = dict(event)
            # an event that needs a reply, outside one, opens an implicit reply (docs/events.md rule 1)
            opens = kind not in _NO_REPLY and (kind != "CUSTOM" or ev.get("name") == ERROR_EVENT)
            if opens and not self._started:
                opened, said = opens_reply(ev, after_end=self._ended)
                if not opened:
                    # between replies, an event the reducer opens no reply for (a block END outside one, one it skips
                    # for a missing key, after an AGENT_END one that would only open an empty reply: rule after-end)
                    # goes whole, in no UI message: said as the reducer says it. (A ``start`` and ``finish`` of no
                    # message reached the AI SDK's reader: an id-less ``start`` goes on with the message before it,
                    # whose finish reason and metadata the ``finish`` set again.)
                    self.notes.extend(Problem(f"/{index}{p.pointer[2:]}", p.rule, p.message) for p in said)
                    return self._whole(event)
            before = self._open_start(ev) if opens else []
            try:
                return before + _ENCODERS[kind](self, ev, index)
            except ValidationError as exc:  # a key the chunks need is missing or of the wrong type
                self.notes.extend(exc.problems)
                return before + self._whole(event)
        finally:
            self._count += 1

    def close(self) -> list[dict[str, Any]]:
        """The end of the stream: what is still held (a tool result or data block never ended is carried whole,
        so that the decoder's reply is cut where this one was)."""
        out = self._cut()
        self._done = True
        return out

    def _cut(self) -> list[dict[str, Any]]:
        """The open reply ends where it is (the stream ends, or another reply starts): what it still holds, and
        for an implicit reply complete after its model calls its ``finish``. What it had open is forgotten: the
        AI SDK's reader starts a new message at a ``start`` with another id, without the parts of this one."""
        out = self._unended()
        out += self._finish_calls(ended_only=True)
        if self._started and self._implicit and not self._model_open and not self._step_open and not self._calls:
            # an implicit reply the stream ended after its model calls: complete, its UI message finished too
            # (a carrier tells the decoder that this ``finish`` stands for no AGENT_END)
            out += [_UI_ONLY]
            out.append(self._finish_chunk())
        self._text.clear()
        self._reasoning.clear()
        self._stepped.clear()
        self._stepped_calls.clear()
        self._step_open = False
        return out

    def _unended(self) -> list[dict[str, Any]]:
        """The events of the tool results and data blocks still held (never ended), carried whole where the reply
        ends (the stream ends, another reply starts, or its AGENT_END: in it, not after its ``finish``, where the
        decoder would read them as an implicit reply of their own)."""
        out: list[dict[str, Any]] = []
        for events in [*self._results.values(), *self._data.values()]:
            for ev in events[1:]:  # (their STARTs were carried at their place)
                out += self._whole(ev)
        self._results.clear()
        self._data.clear()
        return out

    def fail(self, message: str) -> list[dict[str, Any]]:
        """The event source failed: what :meth:`close` gives, then an ``error`` chunk (the AI SDK's way to say
        it; the decoder reads it as a CUSTOM ``agentmsg.error``, which the reducer keeps in ``agentmsg_errors``)."""
        if self._done:
            return []
        return [*self.close(), {"type": "error", "errorText": message}]

    # -- helpers ----------------------------------------------------------------------------------------------
    def _require(self, event: Mapping[str, Any], index: int, key: str, kind: type = str) -> Any:
        value = event.get(key)
        if value is None:
            raise ValidationError.single(f"/{index}", "required", f"{event['type']} needs {key!r}")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValidationError.single(f"/{index}/{key}", "type", f"{key} must be a {kind.__name__}")
        return value

    def _open_start(self, ev: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Events outside AGENT_START ... AGENT_END form an implicit reply (docs/events.md rule 1), named after
        the first model call's replyId: a ``start`` with that id for the UI, after a transient carrier that tells
        the decoder it stands for no AGENT_START."""
        if self._started:
            return []
        self._started = True
        self._fresh()
        start: dict[str, Any] = {"type": "start"}
        if ev.get("type") == "MODEL_CALL_START" and _is_plain_id(ev.get("replyId")):
            start["messageId"] = self._message_id = ev["replyId"]
            self._new_message(ev["replyId"])
        self._implicit = True
        self._note("implicit", f"an implicit reply: its start is carried on a transient {CARRIER} chunk")
        if isinstance(ev.get("id"), str):  # it names the reply when nothing else does (docs/events.md rule 8)
            return [{"type": CARRIER, "data": {"uiOnly": True, "opener": ev["id"]}, "transient": True}, start]
        return [_UI_ONLY, start]

    def _fresh(self) -> None:
        """A reply starts (AGENT_START, or an implicit one): nothing its ``finish`` says is the reply before's."""
        self._generate_reason = self._raw_finish = self._model = None
        self._finished_calls = {}  # (the reducer's calls are a reply's: one of another reply is no call going on)
        self._model_open = 0
        self._errored = False
        self._usage = {}

    def _new_message(self, message_id: str) -> None:
        """A ``start`` naming ``message_id``: the AI SDK's reader starts a new UIMessage when it names another than
        the one it builds, and knows none of the earlier message's tool calls (a result of one is carried whole)."""
        if message_id != self._reader_id:
            self._reader_id = message_id
            self._finished_calls = {}  # (a new UIMessage: no part yet)
            held = self._calls.keys() | self._results.keys()  # (still open: their chunks name them)
            self._known_calls = {k: v for k, v in self._known_calls.items() if k in held}

    def _close_open_parts(self, stepped: bool = False) -> list[dict[str, Any]]:
        """The ends of the open text and reasoning parts; ``stepped``: at the end of a model call (a step), which
        does not end them for the reducer (:attr:`_stepped`): those ends are for the UI only (the decoder made a
        block END of them, and a reply cut with such a block open, INTERRUPTED for the reducer, came back whole)."""
        out: list[dict[str, Any]] = [{"type": "text-end", "id": i} for i in self._text]
        out += [{"type": "reasoning-end", "id": i} for i in self._reasoning]
        if stepped:
            self._stepped.update(self._text, self._reasoning)
            out = self._ui_only(out)
        self._text.clear()
        self._reasoning.clear()
        return out

    # -- reply and model calls ---------------------------------------------------------------------------------
    def _agent_start(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        # a reply still open (cut, or implicit) ends here, as the reducer ends it: the new ``start`` resets the AI
        # SDK's reader, so nothing of the old reply may be ended or continued after it
        cut = self._cut() if self._started else []
        self._implicit = False
        self._reply = ev.get("replyId")
        self._started = True
        self._fresh()
        start: dict[str, Any] = {"type": "start"}
        self._message_id = None
        if _is_plain_id(self._reply):
            start["messageId"] = self._message_id = self._reply
            self._new_message(self._reply)
        # the reply's createdAt is the message's timestamp: carried too
        rest = {k: v for k, v in ev.items() if k not in ("type", "id", "replyId")}
        if not _is_plain_id(self._reply):
            if "replyId" in ev:
                rest["replyId"] = self._reply
            if isinstance(ev.get("id"), str):  # the reply's fallback id is made of it (docs/events.md rule 8)
                rest["id"] = ev["id"]
        self._note("rest:AGENT_START", f"AGENT_START {', '.join(sorted(rest))}: carried on a transient {CARRIER} chunk")
        return [*cut, {"type": CARRIER, "data": {"rest": "AGENT_START", "fields": rest}, "transient": True}, start]

    def _agent_end(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        if not self._started:  # no reply open: the reducer ignores it (rule order); carried as it is
            return self._whole(ev)
        out = self._unended()
        out += self._close_open_parts()
        self._stepped.clear()  # (the reply's blocks and calls end with it)
        self._stepped_calls.clear()
        out += self._finish_calls()
        if self._step_open:
            self._step_open = False
            out.append({"type": "finish-step"})
        out.append(self._finish_chunk())
        self._started = False
        self._ended = True
        out = self._rest(ev, (), out)
        self._reply = None  # events after the reply are outside it (the decoder forgets it at ``finish`` too)
        return out

    def _finish_chunk(self) -> dict[str, Any]:
        """``finish``: the reason, and as ``messageMetadata`` the reply's usage (summed over its model calls) and
        model, what a UI shows of a reply (they merge into the UIMessage's ``metadata``)."""
        finish: dict[str, Any] = {"type": "finish", "finishReason": self._finish_reason()}
        meta: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        for key, value in self._usage.items():
            if (isinstance(value, float) and math.isfinite(value)) or (
                isinstance(value, int) and value <= SAFE_INTEGER
            ):
                usage[key] = value
                continue
            # (a sum of 2^64 or more raised in frame(), which JSON cannot write; inf was written as null)
            beyond = "no finite number" if isinstance(value, float) else "beyond 2^53-1, what a JavaScript number holds"
            self.notes.append(
                Problem(
                    f"/{self._count}",
                    "maximum",
                    f"usage {key[:40]} summed over the reply is {beyond}: left out of finish",
                )
            )
        if usage:
            meta["usage"] = usage
        if self._model:
            meta["model"] = self._model
        if meta:
            finish["messageMetadata"] = meta
        return finish

    def _finish_reason(self) -> str:
        if self._errored:
            return "error"
        reason = self._generate_reason or "MODEL_STOP"
        if reason == "MODEL_STOP" and self._raw_finish is not None:
            return RAW_FINISH_REASONS.get(self._raw_finish.lower(), "stop")
        return FINISH_REASONS.get(reason, "other")

    def _model_call_start(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        out = self._open_start(ev)
        # (a call not ended, its model call not ended: the UI part is finished here, the reducer's call goes on)
        self._stepped_calls.update(k for k, call in self._calls.items() if call["end"] is None)
        out += self._finish_calls()
        if self._step_open:
            # a model call inside an open one: the reducer nests it (the open one is not ended), the UI's steps do
            # not: the open step ends for the UI only, so that the decoded stream's model calls nest too
            out += self._close_open_parts(stepped=True)
            out += [_UI_ONLY, {"type": "finish-step"}]
        self._model_open += 1
        self._step_open = True
        if isinstance(ev.get("modelName"), str):
            self._model = ev["modelName"]
        out.append({"type": "start-step"})
        if ev.get("replyId") is None and self._reply is not None:
            # a model call of no replyId, where the decoder would give it the reply's: its replyId names an implicit
            # reply (docs/events.md rule 8), so its absence is carried (null, which the decoder drops) and sticks
            self._note(
                "rest:MODEL_CALL_START:no-replyId", f"MODEL_CALL_START of no replyId: carried on a {CARRIER} chunk"
            )
            self._reply = None
            fields = {k: v for k, v in ev.items() if k not in _ENVELOPE}
            fields["replyId"] = None
            return [{"type": CARRIER, "data": {"rest": "MODEL_CALL_START", "fields": fields}, "transient": True}, *out]
        return self._rest(ev, (), out)

    def _model_call_end(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        out = self._open_start(ev)
        usage = ev.get("usage")
        if isinstance(usage, dict):
            for key, value in usage.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                    self._usage[key] = self._usage.get(key, 0) + value
        meta = ev.get("metadata")
        if isinstance(meta, dict):
            if isinstance(meta.get("finishReason"), str):
                self._raw_finish = meta["finishReason"]
            if isinstance(meta.get("model"), str):
                self._model = meta["model"]
            out += _sources(meta.get("grounding"))
        # the calls of this model call end with it (docs/events.md rule 3), and those open since an earlier one
        out += self._finish_calls()
        self._stepped_calls.clear()
        if self._model_open:
            self._model_open -= 1
        if self._step_open:
            self._step_open = False
            out += self._close_open_parts(stepped=True)
            out.append({"type": "finish-step"})
        else:  # a model call end without its start: the UI needs a step to end, the decoder no MODEL_CALL_START (one
            # would name an implicit reply, docs/events.md rule 8): the start-step is for the UI only
            out += [_UI_ONLY, {"type": "start-step"}, {"type": "finish-step"}]
        return self._rest(ev, (), out)

    # -- text and thinking --------------------------------------------------------------------------------------
    # -- media ---------------------------------------------------------------------------------------------------
    def _data_start(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        block_id = self._require(ev, index, "blockId")
        out = self._open_start(ev)
        block = ev.get("block")
        if isinstance(block, dict):
            chunk = _file_chunk(block)
            if chunk is not None:
                self._data.pop(block_id, None)
                fields = {k: v for k, v in ev.items() if k not in _ENVELOPE}
                if fields.get("replyId", self._reply) == self._reply:  # (none, or the reply's: not carried)
                    fields.pop("replyId", None)
                if _block_of_file(chunk) == block:
                    fields.pop("block")
                self._note("rest:DATA_BLOCK_START", f"DATA_BLOCK_START blockId: carried on a transient {CARRIER} chunk")
                carrier = {"type": CARRIER, "data": {"rest": "DATA_BLOCK_START", "fields": fields}, "transient": True}
                self._data[block_id] = []  # its END follows
                return [*out, carrier, chunk]
        self._data[block_id] = [ev]
        return [*out, *self._whole(ev)]

    def _data_delta(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        block_id = self._require(ev, index, "blockId")
        held = self._data.get(block_id)
        if held is None or not held:  # not open (or delivered whole): the reducer says it; carried as it is
            return self._whole(ev)
        held.append(ev)
        return []

    def _data_end(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        block_id = self._require(ev, index, "blockId")
        held = self._data.pop(block_id, None)
        if held is None:
            return self._whole(ev)
        if not held:  # a whole block, sent at its START: its END has no chunk
            return self._whole(ev)
        start, deltas = held[0], held[1:]
        joined = "".join(d["delta"] for d in deltas if isinstance(d.get("delta"), str))
        plain = {*_ENVELOPE, "replyId", "blockId", "delta"}
        if any(not isinstance(d.get("delta"), str) or set(d) - plain for d in deltas) or not _is_base64(joined):
            # what the reducer must judge delta by delta: carried as it came
            out: list[dict[str, Any]] = []
            for e in (*deltas, ev):
                out += self._whole(e)
            return out
        media = start.get("mediaType") if isinstance(start.get("mediaType"), str) else "application/octet-stream"
        chunk = {"type": "file", "mediaType": media, "url": f"data:{media};base64,{joined}"}
        fields = {"blockId": block_id, **self._extra(ev, ("blockId",))}
        carrier = {"type": CARRIER, "data": {"rest": "DATA_BLOCK", "fields": fields}, "transient": True}
        return [carrier, chunk]

    # -- tool calls --------------------------------------------------------------------------------------------
    # A call's final chunk (tool-input-available / -error) is sent when the call can no longer go on: at the end of
    # its model call, of the reply or of the stream, or when its result comes. Its TOOL_CALL_END alone does not end
    # it: AgentScope Java ends every open call when another call's chunk arrives and goes on with it at its next
    # chunk, which the reducer reads as one call (docs/events.md rule 3), and so must the UI.
    def _held(
        self, call: dict[str, Any], ev: Mapping[str, Any], chunks: list[dict[str, Any]]
    ) -> list[dict[str, Any]] | None:
        """A call whose name is still a Java placeholder has no UI part yet (``tool-input-start`` needs the name):
        its events are carried whole at their place (the block keeps its place for the reducer) and its UI chunks
        held until a START names it or it is finished, then sent for the UI only. None: the call is named."""
        if call["name"] not in PLACEHOLDER_NAMES:
            return None
        call["held"] += chunks
        return self._whole(ev)

    @staticmethod
    def _ui_only(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [x for chunk in chunks for x in (_UI_ONLY, chunk)]

    def _open_call(self, call_id: str, ev: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A new call and its ``tool-input-start`` (held while its name is a placeholder: then [])."""
        name = ev.get("toolCallName")
        name = name if isinstance(name, str) else "__pending__"
        # (its argument deltas, "text", are joined once, when the call is finished)
        call = {
            "name": name,
            "text": [],
            "held": [],
            "end": None,
            "reply": ev.get("replyId", self._reply),
            "own": ev.get("replyId"),  # (the event's own: what the reducer's "same model call" compares)
        }
        self._calls[call_id] = call
        self._known_calls[call_id] = name
        chunk = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}
        if name in PLACEHOLDER_NAMES:
            call["held"].append(chunk)
            return call, []
        return call, [chunk]

    def _name_call(self, call: dict[str, Any], call_id: str, name: Any) -> list[dict[str, Any]]:
        if call["name"] in PLACEHOLDER_NAMES and isinstance(name, str) and name not in PLACEHOLDER_NAMES:
            call["name"] = self._known_calls[call_id] = name
            held: list[dict[str, Any]] = call["held"]
            call["held"] = []
            for chunk in held:
                if "toolName" in chunk:
                    chunk["toolName"] = name
            return self._ui_only(held)
        return []

    def _going_on(self, call_id: str, ev: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The call a START or delta continues: one ended in the same model call goes on; one ended in another
        model call is finished, and the event starts a new call."""
        call = self._calls.get(call_id)
        if call is None or call["end"] is None:
            return call, []
        own = ev.get("replyId")
        if call.get("by_end"):
            # a call its END started (the END went whole): the reducer's block has the END's replyId, and goes on
            # only when the event names the same model call; the decoded events take the reply's replyId when they
            # have none, so an event of none where the reply's is the END's goes on there: said, at this event
            if call["own"] is not None and own == call["own"]:
                return call, []
            if own is None and self._reply == call["own"]:
                self._order(
                    f"{ev['type']} for tool call {quoted(call_id, 60)} that an END started, with no replyId: the"
                    " reducer adds a new call; the UI stream adds one too, but its reader's reducer goes on with the"
                    " call (the decoder gives its events the reply's replyId)"
                )
            return None, self._finish_call(call_id)
        if ev.get("replyId", self._reply) == call["reply"]:
            if call["own"] is None or ev.get("replyId") is None:
                # the reducer goes on with an ended call in the same model call only when both events name it (a
                # replyId each): here it adds a new call; the decoder gives every event the reply's replyId, so the
                # decoded stream's reducer goes on with this one. Said, at this event
                self._order(
                    f"{ev['type']} for tool call {quoted(call_id, 60)} after its END, with no replyId on"
                    f" {'its START' if call['own'] is None else 'it'}: the reducer adds a new call; the UI stream"
                    " goes on with the call, and so does its reader's reducer (the decoder gives its events the"
                    " reply's replyId)"
                )
            # The END goes whole, at its place: the decoder gives the reducer the END, then the call going on, and
            # the reducer keeps of each END what it keeps (an object input, a known state, metadata), as it did here.
            # The UI's final chunk shows what the ENDs gave it (the last object input, the name).
            end, call["end"] = call["end"], None
            call["was"] = {**call.get("was", {}), **end}
            if call.pop("sent", False):  # (it went whole already, before an event carried whole)
                return call, []
            return call, self._whole(end)
        return None, self._finish_call(call_id)

    def _ends_at_their_place(self) -> list[dict[str, Any]]:
        """The ENDs held (the call may go on) go whole before an event of no chunk of its own (:func:`_carry_whole`):
        the reducer applies them in their order (a REQUIRE_USER_CONFIRM's state over its call's END's). The call's
        final chunk is then the UI's alone, unless it goes on (:meth:`_going_on`)."""
        out: list[dict[str, Any]] = []
        for call in self._calls.values():
            end = call["end"]
            if end is not None and not call.get("sent") and end.get("replyId", self._reply) == call["reply"]:
                call["sent"] = True
                out += self._whole(end)
        return out

    def _finish_call(self, call_id: str) -> list[dict[str, Any]]:
        """The call's final chunk, after what it still held: ``tool-input-available`` with its input (the END's, or
        its arguments parsed as the reducer parses them), ``tool-input-error`` when they are no JSON object."""
        call = self._calls.pop(call_id)
        self._finished_calls[call_id] = call["own"]
        out = self._ui_only(call["held"])
        last = call["end"] or {}  # the END the final chunk stands for (an earlier one went whole: _going_on)
        end = last
        if "was" in call:  # what the call's earlier ENDs gave it, which the UI part shows: the last object input
            end = {**call["was"], **last}
            if isinstance(call["was"].get("input"), dict) and not isinstance(end.get("input"), dict):
                end["input"] = call["was"]["input"]
        name = call["name"]
        keep: list[str] = ["toolCallId", "toolCallName"]
        if _taken_name(end.get("toolCallName")):  # (the AI SDK's reader renames the part to it: shown, not carried)
            name = end["toolCallName"]
        given = end.get("input")
        chunk: dict[str, Any]
        if isinstance(given, dict):
            if given is last.get("input"):  # (an earlier END's went whole: a later one's that is no object is carried)
                keep.append("input")
            chunk = {"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": given}
        else:  # no arguments at all are {} to the reducer, not an error
            text = "".join(call["text"])
            parsed, error = _parse_arguments(text) if text else ({}, None)
            if error is None:
                chunk = {"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": parsed}
            else:
                chunk = {
                    "type": "tool-input-error",
                    "toolCallId": call_id,
                    "toolName": name,
                    "input": text,
                    "errorText": error,
                }
        if call.get("sent"):  # its END went whole at its place, and the call did not go on: the UI's alone
            return out + self._ui_only([chunk])
        if not last:  # the model call or the reply ended it (the reducer ends it there too)
            return [*out, chunk]
        if last.get("toolCallName", name) != name or call.get("named_by_end"):
            keep.remove("toolCallName")
        return out + self._rest(last, keep, [chunk])

    def _finish_calls(self, *, ended_only: bool = False) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call_id, call in list(self._calls.items()):
            if call["end"] is not None or not ended_only:
                out += self._finish_call(call_id)
            else:  # cut while it streamed: what it held, nothing more
                out += self._ui_only(self._calls.pop(call_id)["held"])
        return out

    def _stepped_call(self, ev: Mapping[str, Any], call_id: str) -> None:
        """An event for a call a model call's start finished (:attr:`_stepped_calls`), which the reducer holds open
        and goes on with: said (rule order), once, as the UI has a new part for it (or, for an END, none)."""
        if call_id not in self._stepped_calls:
            return
        self._stepped_calls.discard(call_id)
        if ev["type"] == "TOOL_CALL_END":
            what = "the reducer ends that call with it): its part ended with that step, so it is carried as it is"
        else:
            what = "the reducer goes on with that call): a new call, as the step that ended finished it"
        self._order(f"{ev['type']} for a tool call open since an earlier model call ({what}")

    def _gone_on(self, ev: dict[str, Any], call_id: str) -> bool:
        """Whether ``ev``, a START, delta or END for a call not open here, names the model call (``replyId``) of a
        call whose part was finished (a step ended it): the reducer goes on with that call (docs/events.md rule 3:
        its arguments joined, its END taken), where the decoder, which gives the events of a step that step's
        replyId, would start a new one. The event goes whole, so that the decoded stream's reducer goes on with the
        call too (its arguments joined), and the UI's part stays as it was; said once per call (rule ``order``). The
        part's final chunk gave the decoded call the input it shows, which the decoded reducer keeps: where the
        joined arguments are another object, or none, the round trip keeps that input (said)."""
        own = ev.get("replyId")
        if own is None or call_id in self._calls or self._finished_calls.get(call_id) != own:
            return False
        self._note(
            f"gone-on/{call_id}",
            f"{ev['type']} for tool call {quoted(call_id, 60)}, whose part a step finished, naming that call's model"
            f" call ({quoted(own, 60)}): the reducer goes on with the call; carried as it is, the UI part as it was"
            " (the round trip keeps the input that part shows)",
            "order",
        )
        return True

    def _tool_call_start(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        stepped = call_id in self._stepped_calls
        self._stepped_call(ev, call_id)
        out = self._open_start(ev)
        call, finished = self._going_on(call_id, ev)
        out += finished
        if call is None and not stepped and self._gone_on(ev, call_id):
            return out + self._whole(ev)
        if call is not None:  # a second START (or one going on): carried as it is; it may name a placeholder call
            return [*out, *self._whole(ev), *self._name_call(call, call_id, ev.get("toolCallName"))]
        call, chunks = self._open_call(call_id, ev)
        if not chunks:  # a placeholder name
            return out + self._whole(ev)
        return out + self._rest(ev, ("toolCallId", "toolCallName"), chunks)

    def _tool_call_delta(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        text = self._require(ev, index, "delta")
        stepped = call_id in self._stepped_calls  # (open for the reducer: its delta goes on in it)
        self._stepped_call(ev, call_id)
        out = self._open_start(ev)
        call, finished = self._going_on(call_id, ev)
        out += finished
        if call is None and not stepped and self._gone_on(ev, call_id):
            return out + self._whole(ev)
        name = ev.get("toolCallName")
        if call is None:
            call, chunks = self._open_call(call_id, ev)
            if chunks and not stepped:
                # a delta for a call not open: the reducer starts the call here (rule order). The delta goes whole,
                # so that the decoded stream's reducer does the same and says it (a decoded START would open the
                # call unsaid); the call's part is opened, and this delta shown, for the UI only
                call["text"].append(text)
                chunk = {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}
                return [*out, *self._whole(ev), *self._ui_only([*chunks, chunk])]
            out += chunks
        else:
            out += self._name_call(call, call_id, name)
        call["text"].append(text)
        chunk = {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": text}
        held = self._held(call, ev, [chunk])
        if held is not None:
            return out + held
        # the chunk names no tool: a name other than the call's rides on the carrier (the call's own goes unsaid)
        keep = (
            ("toolCallId", "delta", "toolCallName") if name is None or name == call["name"] else ("toolCallId", "delta")
        )
        return out + self._rest(ev, keep, [chunk])

    def _tool_call_end(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        stepped = call_id in self._stepped_calls
        self._stepped_call(ev, call_id)
        if not stepped and self._gone_on(ev, call_id):
            return self._whole(ev)
        call = self._calls.get(call_id)
        if call is None:
            # a call never started: the reducer starts it here (rule order) and ends it. The END goes whole (the
            # decoded stream's reducer does the same, and says it), the UI's part is opened and finished for the UI
            # only; a START or delta of the call in the same model call goes on with it (:meth:`_going_on`)
            call, chunks = self._open_call(call_id, ev)
            call.update(end=ev, sent=True, by_end=True)
            return [*self._whole(ev), *self._ui_only(chunks)]
        if call["end"] is not None:
            return self._whole(ev)  # the reducer ignores it: carried as it came
        out = self._name_call(call, call_id, ev.get("toolCallName"))
        if out:  # the END named a call its placeholder hid: the reducer's block takes the name from it (carried)
            call["named_by_end"] = True
        call["end"] = ev
        return out

    # -- tool results ------------------------------------------------------------------------------------------
    def _tool_result_start(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        if call_id in self._results or call_id not in self._known_calls:
            # a second START (the reducer ignores it), or a result of a call this stream never showed (the AI SDK's
            # reader refuses an output for a call it does not know): carried as it came, with what follows
            return self._whole(ev)
        self._results[call_id] = [ev]
        # carried at its place, so that the result block keeps its place among the blocks (rule 2)
        return self._whole(ev)

    def _tool_result_delta(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        held = self._results.get(call_id)
        if held is None:
            return self._whole(ev)
        held.append(ev)
        return []

    def _extra(self, event: Mapping[str, Any], carried: Iterable[str]) -> dict[str, Any]:
        """The keys of ``event`` a group's carrier holds (a data block's, a tool result's): its replyId when it is not
        the one the decoder gives. Unlike a single event's carrier (:meth:`_rest`), the decoder applies it to the
        group's events only: it does not stick (here neither), so the events after the group take the replyId they
        took before it."""
        skip = _ENVELOPE.union(carried)
        out = {k: v for k, v in event.items() if k not in skip}
        if out.get("replyId", self._reply) == self._reply:
            out.pop("replyId", None)
        return out

    def _tool_result_end(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        call_id = self._require(ev, index, "toolCallId")
        held = self._results.pop(call_id, None)
        if held is None:
            return self._whole(ev)
        deltas = held[1:]
        # the UI shows an output after its call's input
        before = self._finish_call(call_id) if call_id in self._calls else []
        output, exact = _result_output(deltas)
        state = ev.get("state")
        chunk: dict[str, Any]
        if state == "error":
            text = output if isinstance(output, str) else value_text(output)
            chunk, derived = {"type": "tool-output-error", "toolCallId": call_id, "errorText": text}, "error"
        elif state == "denied" and not deltas:
            chunk, derived = {"type": "tool-output-denied", "toolCallId": call_id}, "denied"
        else:
            chunk, derived = {"type": "tool-output-available", "toolCallId": call_id, "output": output}, "success"
        name = self._known_calls[call_id]
        fields: dict[str, Any] = {}
        if not exact:
            fields["deltas"] = [{k: v for k, v in d.items() if k != "id"} for d in deltas]
        extra = self._extra(ev, ("toolCallId", "toolCallName", "state"))
        if ev.get("toolCallName", name) != name:
            extra["toolCallName"] = ev["toolCallName"]
        if state != derived:
            extra["state"] = state
        if extra:
            fields["end"] = extra
        if fields:
            self._note(
                f"rest:TOOL_RESULT:{','.join(sorted(fields))}",
                f"a tool result's {', '.join(sorted(fields))} (no UI chunk field): carried on a transient {CARRIER} chunk",
            )
            return [
                *before,
                {"type": CARRIER, "data": {"rest": "TOOL_RESULT", "fields": fields}, "transient": True},
                chunk,
            ]
        return [*before, chunk]

    # -- the rest -------------------------------------------------------------------------------------------------
    def _custom(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        name = ev.get("name")
        if name == ERROR_EVENT:
            self._errored = True
            value = ev.get("value")
            text = value.get("message") if isinstance(value, dict) else None
            error = {"type": "error", "errorText": text if isinstance(text, str) else value_text(value)}
            return self._open_start(ev) + self._rest(ev, ("name",), [error])
        if not isinstance(name, str) or f"data-{name}" == CARRIER or "value" not in ev or not self._started:
            # (outside a reply the reducer opens none for it: it goes whole, in no UI message)
            return self._whole(ev)
        chunk: dict[str, Any] = {"type": f"data-{name}", "data": ev["value"]}
        if name in TRANSIENT_CUSTOM:
            chunk["transient"] = True
        return self._open_start(ev) + self._rest(ev, ("name", "value"), [chunk])

    def _request_stop(self, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        reason = ev.get("generateReason")
        self._generate_reason = reason if isinstance(reason, str) else "MIDDLEWARE_STOP_REQUESTED"
        return self._whole(ev)


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _parse_arguments(text: str) -> tuple[Any, str | None]:
    """A tool call's argument text as the reducer judges it (docs/events.md rule 4)."""
    _, value, error = parse_arguments(text)
    return value, error


def _result_output(deltas: list[dict[str, Any]]) -> tuple[Any, bool]:
    """A tool result's output for ``tool-output-*``, as the reducer builds it (text deltas join into one text block
    until a data delta, a whole block, comes; docs/events.md rule 5): its text when that is one text block, else
    the blocks; and whether the decoder gets the same message back from it (one text delta of that text)."""
    plain = {*_ENVELOPE, "replyId", "toolCallId", "toolCallName", "delta"}
    blocks: list[Any] = []
    texts: list[tuple[dict[str, Any], list[str]]] = []  # the text blocks joined and their deltas (joined once)
    joining: list[str] | None = None
    for d in deltas:
        if d["type"] == "TOOL_RESULT_TEXT_DELTA" and isinstance(d.get("delta"), str):
            if joining is not None:
                joining.append(d["delta"])
            else:
                joining = [d["delta"]]
                blocks.append({"type": "text", "text": ""})
                texts.append((blocks[-1], joining))
        else:
            blocks.append(d.get("data"))
            joining = None
    for block, pieces in texts:
        block["text"] = "".join(pieces)
    if not blocks:
        return "", True
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].get("type") == "text" and blocks[0]["text"]:
        return blocks[0]["text"], all(d["type"] == "TOOL_RESULT_TEXT_DELTA" and set(d) <= plain for d in deltas)
    return blocks, False


def _sources(grounding: Any) -> list[dict[str, Any]]:
    """``source-url`` chunks for the URLs a reply's grounding names (any object with a ``url`` or ``uri`` string,
    and its ``title``): the UI shows them; the grounding itself rides with MODEL_CALL_END's metadata."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    # (a dict's or list's id, once walked whole: the least depth it was, whose walk saw all that one deeper would;
    # so a grounding sharing its members, a dict of the same dict twice 30 levels down, costs its containers, not
    # its 2**30 paths. The grounding holds each alive.)
    walked: dict[int, int] = {}

    def walk(value: Any, depth: int) -> None:
        if depth > 32:
            return
        if isinstance(value, (dict, list)):
            done = walked.get(id(value))
            if done is not None and done <= depth:
                return
            visit(value, depth)
            if walked.get(id(value), depth) >= depth:
                walked[id(value)] = depth

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, dict):
            url = value.get("url", value.get("uri"))
            if isinstance(url, str) and re.match(r"^https?://", url) and url not in seen:
                seen.add(url)
                chunk = {"type": "source-url", "sourceId": f"source-{len(out) + 1}", "url": url}
                if isinstance(value.get("title"), str):
                    chunk["title"] = value["title"]
                out.append(chunk)
            for v in value.values():
                walk(v, depth + 1)
        elif isinstance(value, list):
            for v in value:
                walk(v, depth + 1)

    walk(grounding, 0)
    return out


_MEDIA_DEFAULT = {"image": "image/*", "audio": "audio/*", "video": "video/*", "data": "application/octet-stream"}


def _file_chunk(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``file`` chunk of a whole media block (DATA_BLOCK_START ``block``), or None for no media block."""
    kind = block.get("type")
    source = block.get("source")
    if kind not in _MEDIA_DEFAULT or not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        media = source.get("media_type") if isinstance(source.get("media_type"), str) else _MEDIA_DEFAULT[kind]
        return {"type": "file", "mediaType": media, "url": f"data:{media};base64,{source['data']}"}
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        media = source.get("mime_type") if isinstance(source.get("mime_type"), str) else _MEDIA_DEFAULT[kind]
        return {"type": "file", "mediaType": media, "url": source["url"]}
    return None


_DATA_URL = re.compile(r"^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$", re.S)


def _block_of_file(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """The media block a ``file`` chunk stands for: its kind from the media type, a base64 source from a
    ``data:`` URL, a URL source otherwise."""
    media = chunk["mediaType"]
    major = media.split("/", 1)[0]
    kind = major if major in ("image", "audio", "video") else "data"
    m = _DATA_URL.match(chunk["url"])
    if m:
        return {"type": kind, "source": {"type": "base64", "media_type": media, "data": m.group(2)}}
    source: dict[str, Any] = {"type": "url", "url": chunk["url"]}
    if media != _MEDIA_DEFAULT[kind]:
        source["mime_type"] = media
    return {"type": kind, "source": source}


def _carry_whole(reason: str | None) -> _EventEncoder:
    """The encoder of an event no chunk stands for; ``reason``: the generate reason it ends the reply with."""

    def carry(self: AiSdkEncoder, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        if reason is not None:
            self._generate_reason = reason
        return self._ends_at_their_place() + self._whole(ev)

    return carry


def _block_encoder(step: str, part: str, other_part: str) -> _EventEncoder:
    """The encoder of TEXT_BLOCK_* (``part`` text) or THINKING_BLOCK_* (reasoning) ``step`` (START, DELTA, END)."""

    def parts(self: AiSdkEncoder) -> tuple[set[str], set[str]]:
        return (self._text, self._reasoning) if part == "text" else (self._reasoning, self._text)

    def start(self: AiSdkEncoder, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        open_ids, other = parts(self)
        block_id = self._require(ev, index, "blockId")
        out = self._open_start(ev)
        if block_id in open_ids:  # the reducer ignores a second START, and says it: carried as it came
            return out + _carried(ev)
        stepped = block_id in self._stepped
        if stepped:  # (a part its model call's end closed, still open for the reducer)
            self._stepped.discard(block_id)
            self._order(
                f"{ev['type']} for a block open since an earlier model call (the reducer ignores this START and goes"
                " on with that block): a new part, as the step that ended closed it"
            )
        if block_id in other:
            # the reducer ignores it (a block of that id is open: "started twice"), and a delta of this kind ends
            # that block and starts one of its own: carried as it came, the part open as it is
            self._order(f"{ev['type']} for a block open as {other_part}: carried as it is (the reducer ignores it)")
            return out + _carried(ev)
        open_ids.add(block_id)
        if stepped:  # the START whole, for the decoder's reducer to ignore as this one does; the new part the UI's
            return [*out, *self._whole(ev), *self._ui_only([{"type": f"{part}-start", "id": block_id}])]
        return self._rest(ev, ("blockId",), [*out, {"type": f"{part}-start", "id": block_id}])

    def delta(self: AiSdkEncoder, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        open_ids, other = parts(self)
        block_id = self._require(ev, index, "blockId")
        text = self._require(ev, index, "delta")
        out = self._open_start(ev)
        if block_id in self._stepped:  # (a part its model call's end closed, still open for the reducer): the UI's
            self._stepped.discard(block_id)  # new part (the reducer's block goes on)
            open_ids.add(block_id)
            out += self._ui_only([{"type": f"{part}-start", "id": block_id}])
        elif block_id not in open_ids:
            self._order(f"{ev['type']} for a block not open: it is started here (the reducer starts it there)")
            if block_id in other:
                other.discard(block_id)
                out.append({"type": f"{other_part}-end", "id": block_id})
            open_ids.add(block_id)
            out.append({"type": f"{part}-start", "id": block_id})
        chunk = {"type": f"{part}-delta", "id": block_id, "delta": text}
        return self._rest(ev, ("blockId", "delta"), [*out, chunk])

    def end(self: AiSdkEncoder, ev: dict[str, Any], index: int) -> list[dict[str, Any]]:
        open_ids, other = parts(self)
        block_id = self._require(ev, index, "blockId")
        if block_id not in open_ids:  # (or the reducer ends there a block its model call's end closed)
            if block_id in self._stepped:  # (its part ended with its step: the END goes whole, keys and all)
                self._stepped.discard(block_id)
                return self._whole(ev)
            if block_id in other:
                # the reducer ends the block of that id, of the other kind: the END goes whole (its keys and all,
                # the decoded stream's reducer ends it too) and that part ends, for the UI only (a START of that id
                # after it opens a new part, as the reducer opens a new block)
                self._order(f"{ev['type']} for a block open as {other_part}: that block ends (carried as it is)")
                other.discard(block_id)
                return [*_carried(ev), *self._ui_only([{"type": f"{other_part}-end", "id": block_id}])]
            # an END naming no open part (another id than its START's, one ended already): the AI SDK's reader
            # refuses a {part}-end of a part it does not have, and the reducer says it and ignores it (or ends a
            # block of the other kind): carried as it came, so that the decoded stream's reducer does the same
            self._order(f"{ev['type']} for a {part} part not open ({quoted(block_id, 60)}): carried as it is")
            return _carried(ev)
        open_ids.discard(block_id)
        return self._rest(ev, ("blockId",), [{"type": f"{part}-end", "id": block_id}])

    return {"START": start, "DELTA": delta, "END": end}[step]


_ENCODERS: dict[str, _EventEncoder] = {
    "AGENT_START": AiSdkEncoder._agent_start,
    "AGENT_END": AiSdkEncoder._agent_end,
    "MODEL_CALL_START": AiSdkEncoder._model_call_start,
    "MODEL_CALL_END": AiSdkEncoder._model_call_end,
    "DATA_BLOCK_START": AiSdkEncoder._data_start,
    "DATA_BLOCK_DELTA": AiSdkEncoder._data_delta,
    "DATA_BLOCK_END": AiSdkEncoder._data_end,
    "TOOL_CALL_START": AiSdkEncoder._tool_call_start,
    "TOOL_CALL_DELTA": AiSdkEncoder._tool_call_delta,
    "TOOL_CALL_END": AiSdkEncoder._tool_call_end,
    "TOOL_RESULT_START": AiSdkEncoder._tool_result_start,
    "TOOL_RESULT_TEXT_DELTA": AiSdkEncoder._tool_result_delta,
    "TOOL_RESULT_DATA_DELTA": AiSdkEncoder._tool_result_delta,
    "TOOL_RESULT_END": AiSdkEncoder._tool_result_end,
    "CUSTOM": AiSdkEncoder._custom,
    "REQUEST_STOP": AiSdkEncoder._request_stop,
}
for _kind in ("START", "DELTA", "END"):
    _ENCODERS[f"TEXT_BLOCK_{_kind}"] = _block_encoder(_kind, "text", "reasoning")
    _ENCODERS[f"THINKING_BLOCK_{_kind}"] = _block_encoder(_kind, "reasoning", "text")
for _kind, _reason in (
    # AGENT_RESULT: its message id, when it names the message otherwise (docs/events.md rule 8), is not the
    # UIMessage's: the AI SDK's reader starts a new message at a ``start`` with another id
    ("AGENT_RESULT", None),
    ("HINT_BLOCK", None),
    ("EXCEED_MAX_ITERS", "MAX_ITERATIONS"),
    ("REQUIRE_USER_CONFIRM", "PERMISSION_ASKING"),
    ("REQUIRE_EXTERNAL_EXECUTION", "TOOL_SUSPENDED"),
    ("USER_CONFIRM_RESULT", None),
    ("EXTERNAL_EXECUTION_RESULT", None),
    ("ALL_TOOLS_DENIED", "ALL_TOOLS_DENIED"),
    ("SUBAGENT_EXPOSED", None),
):
    _ENCODERS[_kind] = _carry_whole(_reason)


# ---------------------------------------------------------------------------------------------------------------
# UI chunks -> AgentEvents

_STR, _OBJ, _ANY, _BOOL = str, dict, object, bool
#: chunk type -> its required keys and their JSON types (ai ``uiMessageChunkSchema``); optional keys checked
#: when present
_REQUIRED: Final[dict[str, dict[str, type]]] = {
    "start": {},
    "start-step": {},
    "finish-step": {},
    "reset-step": {},
    "text-start": {"id": _STR},
    "text-delta": {"id": _STR, "delta": _STR},
    "text-end": {"id": _STR},
    "reasoning-start": {"id": _STR},
    "reasoning-delta": {"id": _STR, "delta": _STR},
    "reasoning-end": {"id": _STR},
    "tool-input-start": {"toolCallId": _STR, "toolName": _STR},
    "tool-input-delta": {"toolCallId": _STR, "inputTextDelta": _STR},
    "tool-input-available": {"toolCallId": _STR, "toolName": _STR, "input": _ANY},
    "tool-input-error": {"toolCallId": _STR, "toolName": _STR, "input": _ANY, "errorText": _STR},
    "tool-approval-request": {"approvalId": _STR, "toolCallId": _STR},
    "tool-approval-response": {"approvalId": _STR, "approved": _BOOL},
    "tool-output-available": {"toolCallId": _STR, "output": _ANY},
    "tool-output-error": {"toolCallId": _STR, "errorText": _STR},
    "tool-output-denied": {"toolCallId": _STR},
    "source-url": {"sourceId": _STR, "url": _STR},
    "source-document": {"sourceId": _STR, "mediaType": _STR, "title": _STR},
    "file": {"url": _STR, "mediaType": _STR},
    "reasoning-file": {"url": _STR, "mediaType": _STR},
    "custom": {"kind": _STR},
    "steering-message": {"id": _STR, "parts": list},
    "message-metadata": {"messageMetadata": _ANY},
    "finish": {},
    "abort": {},
    "error": {"errorText": _STR},
}
#: the chunk types (with agentmsg's carrier): what :func:`agentmsg.ui.detect` tells a UI message stream by
TYPES: Final = frozenset(_REQUIRED) | {CARRIER}
_OPTIONAL: Final[dict[str, type]] = {
    "messageId": _STR,
    "finishReason": _STR,
    "providerMetadata": _OBJ,
    "providerExecuted": _BOOL,
    "preliminary": _BOOL,
    "transient": _BOOL,
    "title": _STR,
    "dynamic": _BOOL,
}
#: the chunks uiMessageChunkSchema gives a ``toolMetadata`` (a record of JSON values: an object)
_TOOL_METADATA_KINDS: Final = (
    "tool-input-start",
    "tool-input-available",
    "tool-input-error",
    "tool-output-available",
    "tool-output-error",
)
#: optional keys of one chunk kind that agentmsg reads (each quoted in a note): the type uiMessageChunkSchema gives them
_OPTIONAL_OF: Final[dict[str, dict[str, type]]] = {
    "abort": {"reason": _STR},
    "tool-approval-request": {
        "reason": _STR,
        "signature": _STR,
        "approvalDescriptor": _ANY,
        "inputSchemaInput": _ANY,
        "isAutomatic": _BOOL,
    },
    "tool-approval-response": {"reason": _STR},
    **{kind: {"toolMetadata": _OBJ} for kind in _TOOL_METADATA_KINDS},
}
_INPUT_ENCODINGS: Final = ("json", "text")
_FINISH_REASONS: Final = frozenset({"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"})
_FINISH_REASONS_SAID: Final = ", ".join(quoted(r) for r in sorted(_FINISH_REASONS))
#: ``finishReason`` -> the generate reason a REQUEST_STOP gives the reply (the others: said, rule ui-not-kept)
GENERATE_REASONS: Final = {"tool-calls": "TOOL_CALLS", "interrupted": "INTERRUPTED"}
#: chunk kinds and keys agentmsg has no place for: said once per stream (rule ``ui-not-kept``)
_NOT_KEPT_CHUNKS: Final = {
    "reset-step": "reset-step (a step's parts withdrawn): agentmsg's events do not withdraw what was sent",
    "source-document": "source-document: a source that is no URL",
    "reasoning-file": "reasoning-file: a file in the reasoning",
    "custom": "custom: a provider's own part",
    "steering-message": "steering-message: a user message mid-stream",
    "message-metadata": "messageMetadata: the app's message metadata",
    "tool-approval-request": "tool-approval-request: an approval the UI asks for",
    "tool-approval-response": "tool-approval-response: an approval the UI gave",
    "abort": "abort: the stream was aborted (the reply stays cut: INTERRUPTED)",
}


#: keys of the tool chunks agentmsg has no place for whose value a note quotes (once per call and value)
_TOOL_VALUES_NOT_KEPT: Final = {
    "title": "a tool call's display title",
    "toolMetadata": "a tool's own data on a call",
}


def _type_name(kind: type) -> str:
    return {str: "string", dict: "object", bool: "boolean", list: "array"}.get(kind, "value")


class AiSdkDecoder:
    """UI message chunks (dicts) -> AgentEvents (dicts), for one stream.

    ``id_prefix`` and ``clock`` make the events' ids (``<prefix><n>``) and ``createdAt`` (an RFC 3339 string;
    default: now), which UI chunks do not have."""

    def __init__(self, *, strict: bool = False, id_prefix: str = "ui-", clock: Callable[[], str] | None = None) -> None:
        self.strict = strict
        self.notes: list[Problem] = Notes()
        self._noted: set[str] = set()
        self._prefix = id_prefix
        self._clock = clock or event_now
        self._count = 0
        self._minted = 0
        self._reply: Any = None
        self._in_reply = False
        self._carried = False  # this reply's stream came from agentmsg (it has data-agentmsg chunks)
        self._rest: dict[str, dict[str, Any]] = {}
        self._calls: dict[str, dict[str, Any]] = {}  # call id -> {name, text (streamed), open}
        self._sources: list[dict[str, Any]] = []
        self._step_open = False
        self._finish_reason: str | None = None
        self._open_results: set[str] = set()  # tool results whose START was carried
        self._skip = False  # the next chunk is for the UI only (no event stands behind it)
        self._opener: str | None = None  # the id the next event takes (it opens an implicit reply)
        self._ui_message: str | None = None  # the messageId of the last ``start`` (the AI SDK reader's message)
        self._ui_started = False  # a ``start`` came (the AI SDK's reader builds a message a start names no other of)

    def _note(self, key: str, message: str, rule: str = NOT_KEPT_RULE) -> None:
        if key not in self._noted:
            if Notes.room(self.notes):  # (past it, not held: counted by the notes)
                self._noted.add(key)
            self.notes.append(Problem(f"/{self._count}", rule, message))

    def _mint(self) -> str:
        self._minted += 1
        if self._opener is not None:
            opener, self._opener = self._opener, None
            return opener
        return f"{self._prefix}{self._minted}"

    def _event(
        self, kind: str, fields: Mapping[str, Any] | None = None, *, shown: Mapping[str, Any] | None = None, **more: Any
    ) -> dict[str, Any]:
        """An AgentEvent of the decoder's keys, ``fields`` and ``more`` (but None), and what the carrier held for
        it may add or set (:func:`_settable`); ``shown``: what the chunk shows of keys the event leaves out, which a
        carrier may not contradict either (a tool-input-available's ``toolName``)."""
        out: dict[str, Any] = {"type": kind, "id": self._mint(), "createdAt": self._clock()}
        if self._reply is not None and kind not in ("AGENT_RESULT", "EXCEED_MAX_ITERS", "REQUEST_STOP", "CUSTOM"):
            out["replyId"] = self._reply
        if fields:
            out.update(fields)
        out.update((k, v) for k, v in more.items() if v is not None)
        rest = self._rest.pop(kind, None)
        if rest:
            for key, value in rest.items():
                if shown and key in shown and _taken_name(value) and value != shown[key]:
                    self._conflict(kind, key, value, shown[key])
                elif key not in out or _settable(kind, key, value, out[key]):
                    out[key] = value
                elif not same_json(value, out[key]):
                    self._conflict(kind, key, value, out[key])
            if "replyId" in rest and kind != "AGENT_START":
                self._reply = rest["replyId"]  # a carried replyId sticks, as in the encoder
                if self._reply is None:  # (carried null: the event had none)
                    out.pop("replyId", None)
        return out

    def _conflict(self, kind: str, key: str, value: Any, visible: Any) -> None:
        """A carried key that would change what the chunk itself says: not applied, said (rule
        ``ui-carrier-conflict``): what the AI SDK's reader shows is what agentmsg keeps."""
        message = (
            f"{CARRIER} {quoted(key, 40)} {quoted(value, 60)} contradicts {kind} {quoted(visible, 60)}: not applied"
        )
        problem = Problem(f"/{self._count}", CONFLICT_RULE, message)
        if self.strict:
            raise ValidationError([problem])
        self.notes.append(problem)

    def _check(self, chunk: Any, index: int) -> str:
        if not isinstance(chunk, Mapping):
            raise ValidationError.single(
                f"/{index}", "type", f"a UI message chunk is an object, not {type(chunk).__name__}"
            )
        kind = chunk.get("type")
        if not isinstance(kind, str):
            raise ValidationError.single(
                f"/{index}/type" if "type" in chunk else f"/{index}",
                "required" if kind is None else "type",
                "a UI message chunk needs a string 'type'",
            )
        required = _REQUIRED.get(kind)
        if required is None:
            if kind.startswith("data-") and len(kind) > 5:
                required = {"data": _ANY}
            else:
                raise ValidationError.single(
                    f"/{index}/type", "enum", f"{quoted(kind)} is no UI message chunk type (ai 7: uiMessageChunkSchema)"
                )
        for key, want in required.items():
            if key not in chunk:
                raise ValidationError.single(f"/{index}", "required", f"a {kind} chunk needs {quoted(key)}")
            if want is not _ANY and (
                not isinstance(chunk[key], want) or (want is not bool and isinstance(chunk[key], bool))
            ):
                raise ValidationError.single(f"/{index}/{key}", "type", f"{key} must be a {_type_name(want)}")
        for key, want in [*_OPTIONAL.items(), *_OPTIONAL_OF.get(kind, {}).items()]:
            if key in chunk and chunk[key] is not None and key not in required and not isinstance(chunk[key], want):
                raise ValidationError.single(f"/{index}/{key}", "type", f"{key} must be a {_type_name(want)}")
        encoding = chunk.get("inputEncoding") if kind == "tool-input-start" else None
        if encoding is not None and encoding not in _INPUT_ENCODINGS:
            raise ValidationError.single(f"/{index}/inputEncoding", "enum", 'inputEncoding must be "json" or "text"')
        if kind == "finish" and chunk.get("finishReason") is not None and chunk["finishReason"] not in _FINISH_REASONS:
            raise ValidationError.single(
                f"/{index}/finishReason",
                "enum",
                f"finishReason {quoted(chunk['finishReason'])} is not one of {_FINISH_REASONS_SAID}",
            )
        return kind

    def feed(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The AgentEvents of one more chunk."""
        index = self._count
        try:
            try:
                kind = self._check(chunk, index)
                if kind == CARRIER:
                    return self._carrier(chunk, index)
            except ValidationError as exc:
                if self.strict:
                    raise
                self.notes.extend(exc.problems)
                return []
            if kind == CARRIER:
                return self._carrier(chunk, index)
            if kind == "start":
                self._same_message(chunk)
            if self._skip:  # for the UI only: the start or finish of an implicit reply, a held call's chunks
                self._skip = False
                if kind == "finish":
                    self._reply, self._carried = None, False
                elif kind == "tool-input-start":  # (its events came carried: the call is open, its text streamed)
                    self._calls[chunk["toolCallId"]] = {"name": chunk["toolName"], "streamed": True, "open": True}
                return []
            if kind.startswith("data-"):
                return self._data(chunk, kind)
            if "providerMetadata" in chunk and not self._carried:
                self._note("providerMetadata", "providerMetadata: a provider's own data on a part")
            if kind.startswith("tool-") and not self._carried:
                self._tool_keys(chunk)
            return _DECODERS[kind](self, chunk)
        finally:
            self._count += 1

    def close(self) -> list[dict[str, Any]]:
        """The end of the stream: nothing to add (a reply without its ``finish`` stays cut: the reducer marks it
        INTERRUPTED)."""
        return []

    def _tool_keys(self, chunk: Mapping[str, Any]) -> None:
        """The keys of a tool chunk from another producer that no AgentEvent keeps: said once per stream each, a
        ``title`` or ``toolMetadata`` once per call and value, quoted."""
        if chunk.get("providerExecuted"):
            self._note("providerExecuted", "providerExecuted: a tool the provider ran, read as a call")
        if chunk.get("dynamic") is not None:
            self._note("dynamic", "dynamic: a tool the app did not declare, read as a call")
        call = chunk.get("toolCallId")
        of_call = f" of tool call {quoted(call)}" if isinstance(call, str) else ""
        for key, what in _TOOL_VALUES_NOT_KEPT.items():
            if chunk.get(key) is not None:
                said = f"{key} {quoted(chunk[key])}{of_call}"
                self._note(said, f"{said}: {what}")

    # -- carried -------------------------------------------------------------------------------------------------
    def _carrier(self, chunk: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
        self._carried = True
        data = chunk["data"]
        if isinstance(data, dict) and isinstance(data.get("event"), dict):
            event = dict(data["event"])
            event["id"] = self._mint()
            event.setdefault("createdAt", self._clock())
            if event.get("type") == "TOOL_RESULT_START" and isinstance(event.get("toolCallId"), str):
                self._open_results.add(event["toolCallId"])
            return [event]
        if isinstance(data, dict) and data.get("uiOnly") is True:
            self._skip = True
            if isinstance(data.get("opener"), str):  # the id of the event that opened an implicit reply
                self._opener = data["opener"]
            return []
        if isinstance(data, dict) and isinstance(data.get("rest"), str) and isinstance(data.get("fields"), dict):
            fields = data["fields"]
            if data["rest"] == "TOOL_RESULT":  # (its own shape: the result's events and its end's fields)
                deltas, end = fields.get("deltas", []), fields.get("end", {})
                if type(deltas) is not list or not all(type(d) is dict for d in deltas):
                    raise ValidationError.single(
                        f"/{index}/data/fields/deltas", "type", "a tool result's carried deltas are a list of events"
                    )
                if type(end) is not dict:
                    raise ValidationError.single(
                        f"/{index}/data/fields/end", "type", "a tool result's carried end is an object of fields"
                    )
            self._rest[data["rest"]] = fields
            return []
        raise ValidationError.single(
            f"/{index}/data", "type", f"a {CARRIER} chunk's data is {{event}} or {{rest, fields}}"
        )

    def _data(self, chunk: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
        if "id" in chunk:
            self._note(
                "data-id",
                "a data chunk's id (a later one with the same id replaces it): CUSTOM events are not replaced",
            )
        return [self._event("CUSTOM", name=kind[5:], value=chunk["data"])]

    # -- reply and steps ---------------------------------------------------------------------------------------
    def _same_message(self, chunk: Mapping[str, Any]) -> None:
        """A ``start`` naming the message the one before it named, or no message after another ``start``: the AI
        SDK's reader goes on with that UIMessage (it starts a new one only for another id), where the decoder starts
        another reply (two messages): said (rule ``duplicate``, at the chunk), once per id (a start of no id, once
        per message it goes on with)."""
        message_id = chunk.get("messageId")
        started, self._ui_started = self._ui_started, True
        if not isinstance(message_id, str):
            if started:  # (a messageId of another type is said by _check, the chunk not read)
                on = "the message before it" if self._ui_message is None else f"message {quoted(self._ui_message)}"
                self._note(
                    f"start-none:{on}",
                    f"start names no message after a start: the AI SDK's reader goes on with {on} (one UIMessage);"
                    " decoded as another reply (two messages)",
                    "duplicate",
                )
            return
        if message_id == self._ui_message:
            said = quoted(message_id)
            self._note(
                f"start:{said}",
                f"start names message {said} again: the AI SDK's reader goes on with that message (one UIMessage);"
                " decoded as another reply of that id (two messages)",
                "duplicate",
            )
        self._ui_message = message_id

    def _start(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        rest = self._rest.get("AGENT_START", {})
        self._reply = chunk.get("messageId") if isinstance(chunk.get("messageId"), str) else rest.get("replyId")
        if self._reply is None and "AGENT_START" not in self._rest:  # another producer's start without an id
            self._reply = f"{self._prefix}message-{self._minted + 1}"
        self._in_reply = True
        self._calls.clear()
        self._sources = []
        self._finish_reason = None
        if chunk.get("messageMetadata") is not None and not self._carried:
            self._note("messageMetadata", _NOT_KEPT_CHUNKS["message-metadata"])
        return [self._event("AGENT_START")]

    def _ensure_reply(self) -> list[dict[str, Any]]:
        """Chunks before any ``start``: an implicit reply, as events outside AGENT_START ... AGENT_END are."""
        return []

    def _start_step(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        self._step_open = True
        self._sources = []
        return [*out, self._event("MODEL_CALL_START")]

    def _finish_step(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        self._step_open = False
        event = self._event("MODEL_CALL_END")
        if self._sources and "metadata" not in event:
            event["metadata"] = {"grounding": {"provider": NAME, "sources": self._sources}}
        self._sources = []
        return [*out, event]

    def _finish(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        reason = chunk.get("finishReason")
        if chunk.get("messageMetadata") is not None and not self._carried:
            self._note("messageMetadata", _NOT_KEPT_CHUNKS["message-metadata"])
        if self._sources:
            self._note("sources-after-step", "source-url after the last finish-step: no model call to hold it")
        if isinstance(reason, str) and not self._carried:  # agentmsg's own streams carry their stop events
            if reason in GENERATE_REASONS:
                out.append(self._event("REQUEST_STOP", generateReason=GENERATE_REASONS[reason]))
            elif reason != "stop":
                self._note(
                    f"finishReason:{reason}",
                    f"finishReason {quoted(reason)}: agentmsg's generate reasons have none for it",
                )
        out.append(self._event("AGENT_END"))
        self._reply = None
        self._in_reply = False
        self._carried = False
        return out

    # -- tool calls ------------------------------------------------------------------------------------------------
    def _call_start(self, call_id: str, name: str) -> dict[str, Any]:
        self._calls[call_id] = {"name": name, "streamed": False, "open": True}
        return self._event("TOOL_CALL_START", toolCallId=call_id, toolCallName=name)

    def _tool_input_start(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        if chunk.get("inputEncoding") == "text":  # (``json``, the default, is how the decoder reads the deltas)
            call = quoted(chunk["toolCallId"])
            self._note(
                f"inputEncoding:{call}",
                f'inputEncoding "text" of tool call {call}: its input streamed as plain text, not JSON (no AgentEvent'
                " says so: the reducer reads the text as JSON arguments)",
            )
        return [*out, self._call_start(chunk["toolCallId"], chunk["toolName"])]

    def _tool_input_delta(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        call = self._calls.get(chunk["toolCallId"])
        if call is not None:
            call["streamed"] = True
        return [*out, self._event("TOOL_CALL_DELTA", toolCallId=chunk["toolCallId"], delta=chunk["inputTextDelta"])]

    def _tool_input_end(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        call_id, name = chunk["toolCallId"], chunk["toolName"]
        call = self._calls.get(call_id)
        if call is None or not call["open"]:
            out.append(self._call_start(call_id, name))
            call = self._calls[call_id]
        given = chunk["input"]
        end: dict[str, Any] = {"toolCallId": call_id}
        shown: dict[str, Any] = {}
        if name != call["name"]:
            end["toolCallName"] = name
        else:  # (the name the call started with: a carrier may not name another)
            shown["toolCallName"] = name
        if chunk["type"] == "tool-input-error":
            if not call["streamed"]:
                text = given if isinstance(given, str) else value_text(given)
                out.append(self._event("TOOL_CALL_DELTA", toolCallId=call_id, delta=text))
            if not self._carried:
                end["metadata"] = {"argumentsError": chunk["errorText"]}
        elif isinstance(given, dict):
            end["input"] = given
        elif not call["streamed"]:  # not an object: its JSON text, which the reducer judges (rule 4)
            out.append(self._event("TOOL_CALL_DELTA", toolCallId=call_id, delta=value_text(given)))
        call["open"] = False
        out.append(self._event("TOOL_CALL_END", end, shown=shown))
        return out

    # -- tool results ----------------------------------------------------------------------------------------------
    def _tool_output(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        if chunk.get("preliminary"):
            self._note("preliminary", "a preliminary tool output (the final one replaces it): not kept")
            return out
        call_id = chunk["toolCallId"]
        rest = self._rest.pop("TOOL_RESULT", {})
        call = self._calls.get(call_id)
        name = call["name"] if call is not None else None
        if call_id in self._open_results:
            self._open_results.discard(call_id)
        else:
            out.append(self._event("TOOL_RESULT_START", toolCallId=call_id, toolCallName=name))
        kind = chunk["type"]
        if kind == "tool-output-denied" and chunk.get("errorText") is not None:
            # a denied result has no output: the AI SDK's chunk has no errorText, nor an output-denied part one
            said = f"errorText {quoted(chunk['errorText'])} of tool call {quoted(call_id)}"
            self._note(
                said,
                f"{said}: a denied tool output has no text (the AI SDK's tool-output-denied chunk has no errorText,"
                " its reader ignores one)",
            )
        if "deltas" in rest:
            for d in rest["deltas"]:
                created = d.get("createdAt")  # (absent, null or empty: now; anything else kept, the reducer judges it)
                out.append({**d, "id": self._mint(), "createdAt": self._clock() if created in (None, "") else created})
        elif kind != "tool-output-denied":
            text = chunk["output"] if kind == "tool-output-available" else chunk["errorText"]
            if not isinstance(text, str):
                text = value_text(text)
            if text:
                out.append(self._event("TOOL_RESULT_TEXT_DELTA", toolCallId=call_id, toolCallName=name, delta=text))
        state = {"tool-output-available": "success", "tool-output-error": "error", "tool-output-denied": "denied"}[kind]
        end = self._event("TOOL_RESULT_END", toolCallId=call_id, toolCallName=name, state=state)
        end.update(rest.get("end", {}))
        if end.get("state", 0) is None:
            del end["state"]
        out.append(end)
        return out

    # -- the rest ----------------------------------------------------------------------------------------------------
    def _source(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        source = {k: v for k, v in chunk.items() if k in ("sourceId", "url", "title")}
        self._sources.append(source)
        if not self._step_open:
            self._note("source-outside-step", "source-url outside a step: no model call to hold it")
        return []

    def _file(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        built = self._rest.pop("DATA_BLOCK", None)
        if built is not None:  # a block built from deltas, whose START was carried: the data URL's base64
            m = _DATA_URL.match(chunk["url"])
            if m:
                out.append(self._event("DATA_BLOCK_DELTA", blockId=built.get("blockId"), delta=m.group(2)))
            return [*out, self._event("DATA_BLOCK_END", built)]
        rest = self._rest.pop("DATA_BLOCK_START", None)
        if rest is None:
            self._minted += 1
            start = self._event("DATA_BLOCK_START", blockId=f"file-{self._minted}", block=_block_of_file(chunk))
            return [*out, start, self._event("DATA_BLOCK_END", blockId=start["blockId"])]
        start = self._event("DATA_BLOCK_START", rest)
        if "block" not in start:
            start["block"] = _block_of_file(chunk)
        return [*out, start]

    def _error(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        return [*out, self._event("CUSTOM", name=ERROR_EVENT, value={"message": chunk["errorText"]})]

    def _not_kept(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        """A chunk no event stands for: said once per stream, or once per text it carries (quoted)."""
        kind = chunk["type"]
        said = ", ".join(f"{k} {quoted(chunk[k])}" for k in _OPTIONAL_OF.get(kind, {}) if chunk.get(k) is not None)
        if said:
            self._note(f"{kind}; {said}", f"{_NOT_KEPT_CHUNKS[kind]}; {said}")
        else:
            self._note(kind, _NOT_KEPT_CHUNKS[kind])
        return []


def _part(event: str) -> Callable[[AiSdkDecoder, Mapping[str, Any]], list[dict[str, Any]]]:
    """The decoder of a text or reasoning chunk: the TEXT_BLOCK_* / THINKING_BLOCK_* event ``event``."""

    def decode(self: AiSdkDecoder, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = self._ensure_reply()
        fields: dict[str, Any] = {"blockId": chunk["id"]}
        if "delta" in chunk:
            fields["delta"] = chunk["delta"]
        if chunk.get("citations") is not None:
            self._note("citations", "citations on a text part")
        return [*out, self._event(event, fields)]

    return decode


_DECODERS: dict[str, Callable[[AiSdkDecoder, Mapping[str, Any]], list[dict[str, Any]]]] = {
    "start": AiSdkDecoder._start,
    "start-step": AiSdkDecoder._start_step,
    "finish-step": AiSdkDecoder._finish_step,
    "finish": AiSdkDecoder._finish,
    "tool-input-start": AiSdkDecoder._tool_input_start,
    "tool-input-delta": AiSdkDecoder._tool_input_delta,
    "tool-input-available": AiSdkDecoder._tool_input_end,
    "tool-input-error": AiSdkDecoder._tool_input_end,
    "tool-output-available": AiSdkDecoder._tool_output,
    "tool-output-error": AiSdkDecoder._tool_output,
    "tool-output-denied": AiSdkDecoder._tool_output,
    "source-url": AiSdkDecoder._source,
    "file": AiSdkDecoder._file,
    "error": AiSdkDecoder._error,
    **{kind: AiSdkDecoder._not_kept for kind in _NOT_KEPT_CHUNKS if kind != "message-metadata"},
    "message-metadata": lambda self, chunk: [] if self._carried else self._not_kept(chunk),
}
for _chunk_part, _event in (("text", "TEXT_BLOCK"), ("reasoning", "THINKING_BLOCK")):
    for _step, _kind in (("start", "START"), ("delta", "DELTA"), ("end", "END")):
        _DECODERS[f"{_chunk_part}-{_step}"] = _part(f"{_event}_{_kind}")


class AiSdkProtocol:
    """The AI SDK UI message stream as a UI protocol (``agentmsg.ui``): name ``ai-sdk``."""

    name: str = NAME
    media_type: str = MEDIA_TYPE
    #: the AI SDK's own header (the endpoint sends content type, cache control and ``x-accel-buffering`` already)
    response_headers: tuple[tuple[str, str], ...] = (("x-vercel-ai-ui-message-stream", "v1"),)
    #: the AI SDK resumes at the app's own ``GET <api>/<chatId>/stream``, not by ``Last-Event-ID``: frames have no ids
    resumable: bool = False

    def encoder(self) -> AiSdkEncoder:
        return AiSdkEncoder()

    def decoder(self, *, strict: bool = False) -> AiSdkDecoder:
        return AiSdkDecoder(strict=strict)

    def frame(self, event: Mapping[str, Any], position: int) -> bytes:
        return frame(event, position)

    def trailer(self, error: str | None) -> bytes:
        """``data: [DONE]`` in both cases: a failure is said by :meth:`AiSdkEncoder.fail`'s ``error`` chunk."""
        return DONE_FRAME

    def strip_end(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """A saved body's bytes without its ``data: [DONE]`` line, which is no chunk (its data is no JSON): what
        readers of SSE bytes (``agentmsg reduce --protocol ai-sdk``) read through."""
        return strip_done(chunks)


PROTOCOL: Final = AiSdkProtocol()


def encode(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The UI chunks of a whole event stream (each event fed, then closed)."""
    enc = AiSdkEncoder()
    out: list[dict[str, Any]] = []
    for event in events:
        out += enc.feed(event)
    return out + enc.close()


def decode(chunks: Iterable[Mapping[str, Any]], **options: Any) -> list[dict[str, Any]]:
    """The AgentEvents of whole UI chunks (options: :class:`AiSdkDecoder`'s)."""
    dec = AiSdkDecoder(**options)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        out += dec.feed(chunk)
    return out + dec.close()


def encode_sse(events: Iterable[Mapping[str, Any]]) -> bytes:
    """A whole event stream as the body a UI message stream response has: a frame per chunk, then ``[DONE]``."""
    return b"".join(frame(c) for c in encode(events)) + DONE_FRAME


_DONE_LINE = re.compile(rb"(?:^|(?<=[\r\n]))data: ?\[DONE\](?=\r\n|\r|\n|$)")
_DONE_PREFIXES = (b"data: [DONE]", b"data:[DONE]")


def strip_done(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` without the text of a ``data: [DONE]`` line (its line end kept: a blank line dispatches nothing),
    split anywhere. Only a line's start that may still become the marker is held back, so memory stays bounded."""
    tail = b""
    for chunk in chunks:
        data = tail + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        lines, tail = data[:cut], data[cut:]
        if not any(p.startswith(tail) for p in _DONE_PREFIXES):
            lines, tail = data, b""  # the last line cannot be the marker: all of it goes on
        if b"[DONE]" in lines:
            lines = _DONE_LINE.sub(b"", lines)
        if lines:
            yield lines
    if tail and not _DONE_LINE.fullmatch(tail):
        yield tail


def iter_chunks(source: Iterable[bytes] | bytes) -> Iterator[dict[str, Any]]:
    """The chunks of a UI message stream body (SSE): each ``data`` parsed as JSON, ``[DONE]`` ending it. An event
    whose data is no JSON raises :class:`ValidationError` (pointer ``/<index>``, rule ``json``); one nested deeper
    than a stream's JSON text may be (orjson's 1,024 levels), rule ``max-depth``. (What a chunk holds deeper than
    ``limits.max_depth`` is the decoder's to keep: a tool output as its JSON text.)"""
    from agentmsg._wire.sse import SSEDecoder

    sse = SSEDecoder()
    index = 0
    for piece in [source] if isinstance(source, bytes) else source:
        for ev in sse.feed(piece):
            if ev.data == "[DONE]":
                return
            try:
                value = orjson.loads(ev.data)
            except orjson.JSONDecodeError:
                try:  # a lone surrogate escape (half a character), which JSON.parse reads too
                    value = json.loads(ev.data)
                except RecursionError:  # (nested past the stack: past the 1,024 levels orjson reads)
                    why = "chunk data nested deeper than a stream's JSON text may be (1,024 levels)"
                    raise ValidationError.single(f"/{index}", "max-depth", why) from None
                except ValueError as exc:
                    raise ValidationError.single(f"/{index}", "json", f"chunk data is not JSON: {exc}") from None
            yield value
            index += 1


def read_request(body: Mapping[str, Any] | str | bytes) -> ChatRequest:
    """What ``useChat`` POSTs (``DefaultChatTransport``: ``{id, messages, trigger, messageId, ...}``; the JSON text or
    the parsed object) as agentmsg messages, in a :class:`ChatRequest` (``messages``, ``chat_id``, ``trigger``,
    ``message_id``, ``extra``: the app's own keys, ``notes``). Each UIMessage is a message of its role, each part a
    block: text, reasoning -> thinking, ``file`` -> an image, audio, video or data block (a ``data:`` URL as base64, a
    URL as a URL source: never read nor downloaded here), a tool part -> ``tool_use`` (its state: ``pending``,
    ``asking``, ``allowed``) and, once it has an output, ``tool_result`` (``success``, ``error``, ``denied``). A part
    no block holds (``source-url``, ``source-document``, ``data-*``, ``step-start``, ...) and the keys a block has no
    field for are kept in the message's metadata (``ai_sdk_parts``: ``{"at": <index>, "part": {...}}`` for a whole part,
    ``{"at": <index>, "keys": {...}}`` for keys), the UIMessage's
    ``metadata`` as ``ai_sdk_metadata``, each kind with a note (rule ``ui-mapped``, the part's JSON pointer). What
    the ``ai`` package's ``validateUIMessages`` refuses, or agentmsg's role rules do (a reasoning or tool part in a
    user message), raises :class:`~agentmsg.ValidationError` listing every problem (pointer + rule)."""
    return read_chat_request(body)
