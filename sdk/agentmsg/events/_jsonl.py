"""JSON lines into the reducer: the reference (each line parsed and fed in turn) and the fast path that
gives the same result for a run of lines.

The fast path decodes a whole run in one msgspec call into small views (type, id, blockId,
toolCallId, delta). When the run is clean (one event object per line, known types, distinct ids none
of which is in the dedupe window, no subagent ``source``, no thinking ``signature``/``redactedData``),
its ids enter the window at once and every delta that the reply's routing table can place is appended
directly; any other line is parsed and applied as the reference does. A run that is not clean goes
through the reference. So messages and problems are exactly those of feeding the lines one by one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import orjson

from .._schemas import schema_documents
from ._handlers import apply
from ._state import CALL_DELTA, TEXT_DELTA, THINKING_DELTA, State, Text

Feed = Callable[[Any], None]


def parse_line(line: bytes, line_no: int) -> tuple[Any, str | None, str]:
    """``(event, rule, message)`` for one non-blank line. ``event`` is None when the line is not JSON
    (rule ``json``); a line that is JSON once its invalid UTF-8 is replaced by U+FFFD gives the event
    with rule ``utf-8`` (the change is reported, nothing else of the line is lost)."""
    try:
        return orjson.loads(line), None, ""
    except orjson.JSONDecodeError as exc:
        error = exc
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        try:
            event = orjson.loads(line.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            pass
        else:
            return event, "utf-8", f"line {line_no}: invalid UTF-8 at byte {bad.start}, replaced by U+FFFD"
    return None, "json", f"line {line_no}: not valid JSON: {error}"


def feed_lines(st: State, feed: Feed, lines: list[bytes], first_line: int) -> None:
    """The reference: each non-blank line parsed and fed (unparsable lines count as one event)."""
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        feed_line(st, feed, line, first_line + offset)


def feed_line(st: State, feed: Feed, line: bytes, line_no: int) -> None:
    event, rule, message = parse_line(line, line_no)
    if rule is not None:
        st.problem(st.count, "", rule, message)
        if event is None:
            st.count += 1
            return
    feed(event)


# A Literal of the schema's event types: msgspec returns the interned constant (no str allocation per
# event) and rejects unknown types, which sends the run through the reference path where they are
# reported. Derived from agent-event.schema.json, the one list of event types.
if TYPE_CHECKING:
    _EventType = str
else:
    _EventType = Literal[
        tuple(sys.intern(t) for t in schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"])
    ]
assert all(sys.intern(t) is t for t in (TEXT_DELTA, THINKING_DELTA, CALL_DELTA))  # the constants are interned


class _View(msgspec.Struct, gc=False):
    """The few keys of an event the fast path needs; the rest of a line is skipped by the decoder.
    Keys typed ``None`` make the decoder reject a run that sets them (a forwarded subagent event, a
    thinking delta carrying a signature or redacted data), which then takes the reference path: this
    costs nothing per event, where scanning the bytes for those keys cost more than the decoding."""

    type: _EventType
    id: str | None = None
    blockId: str | None = None
    toolCallId: str | None = None
    delta: str | None = None
    source: None = None
    signature: None = None
    redactedData: None = None


_views = msgspec.json.Decoder(_View)


_NO_ROUTES: tuple[dict[str, Text], dict[str, Text], dict[str, Text]] = ({}, {}, {})


def _valid_utf8(run: memoryview) -> bool:
    """Whether a run is valid UTF-8 (ASCII is checked at memory speed; other text is decoded)."""
    if bytes(run).isascii():
        return True
    try:
        str(run, "utf-8")
    except UnicodeDecodeError:
        return False
    return True


def feed_run(st: State, feed: Feed, data: bytes, start: int, end: int, first_line: int) -> int:
    """Feed ``data[start:end]``, whole lines (the first one is line ``first_line``), as the reference
    does; returns the number of lines."""
    count = data.count(b"\n", start, end) + 1
    views: list[_View] | None = None
    if not st.strict and st.source is None:
        with memoryview(data) as view:
            run = view[start:end]
            try:
                views = _views.decode_lines(run)
            except (msgspec.DecodeError, UnicodeDecodeError, ValueError):
                views = None
            # decode_lines skips blank lines (their line numbers would not match); msgspec skips what a
            # view does not hold without checking its UTF-8, where the reference (orjson) rejects a line
            # with invalid UTF-8 anywhere; the ids must be new.
            if views is not None and (
                len(views) != count or not _valid_utf8(run) or not st.window.add_fresh([v.id for v in views])  # type: ignore[misc]
            ):
                views = None
    if views is None:
        feed_lines(st, feed, data[start:end].split(b"\n"), first_line)
        return count
    lines: list[bytes] | None = None
    base = st.count
    reply = st.reply
    texts, thinkings, calls = (reply.texts, reply.thinkings, reply.calls) if reply is not None else _NO_ROUTES
    i = -1
    for v in views:
        i += 1
        kind = v.type  # interned: identity comparisons
        if kind is TEXT_DELTA:
            text = texts.get(v.blockId)  # type: ignore[arg-type]
        elif kind is CALL_DELTA:
            text = calls.get(v.toolCallId)  # type: ignore[arg-type]
        elif kind is THINKING_DELTA:
            text = thinkings.get(v.blockId)  # type: ignore[arg-type]
        else:
            text = None
        if text is not None:
            delta = v.delta
            if delta is not None:
                text.append(delta)
                continue
        # Any other event: the full event, applied as feed() would (duplicates were checked above).
        if lines is None:
            lines = data[start:end].split(b"\n")
        st.count = base + i
        event, rule, message = parse_line(lines[i], first_line + i)
        if rule is not None:
            st.problem(base + i, "", rule, message)
        st.count = base + i + 1
        if type(event) is dict:  # msgspec decoded an object there, so orjson does too
            apply(st, event, base + i)
        reply = st.reply
        texts, thinkings, calls = (reply.texts, reply.thinkings, reply.calls) if reply is not None else _NO_ROUTES
    st.count = base + len(views)
    if st.reply is not None:
        st.reply.sync()
    return count
