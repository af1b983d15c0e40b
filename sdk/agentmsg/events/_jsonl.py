"""JSON lines into the reducer: the reference (each line parsed and fed in turn) and the fast path that
gives the same result for a run of lines.

The fast path decodes a whole run in one msgspec call into small views (type, id, blockId,
toolCallId, delta). When the run is clean (one event object per line, known types, distinct ids none
of which is in the dedupe window, no subagent ``source``, no thinking ``signature``/``redactedData``),
its ids enter the window at once and every delta that the reply's routing table can place is appended
directly; any other line is parsed and applied as the reference does. A run that is not clean goes
through the reference. So messages and problems are exactly those of feeding the lines one by one.

A strict reducer reads a run with :func:`feed_lines_strict`: the events are checked against the event schema's
branch for their type (which accepts exactly what the whole schema does), those of a type in one call, then
applied; a run with anything else is fed line by line, an event not accepted as the reference feeds it, so the
errors are the same.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

import msgspec
import orjson

from agentmsg._codec.jsontext import _STRICT, TooDeep, loads_bounded, not_utf8, unreadable
from agentmsg._codec.limits import MAX_WRITABLE_DEPTH, limits
from agentmsg._codec.schemas import (
    event_array_validator,
    event_type_array_validators,
    event_type_validators,
    schema_documents,
)
from agentmsg.events._handlers import apply, fold
from agentmsg.events._state import CALL_DELTA, TEXT_DELTA, THINKING_DELTA, State, Text

Feed = Callable[[Any], None]


def parse_line(line: bytes, line_no: int) -> tuple[Any, str | None, str, str]:
    """``(event, rule, message, pointer)`` for one non-blank line (``pointer``: where in the event the problem is,
    ``""`` for the whole line; a line nested too deep, rule ``max-depth``: the array or object that crosses the limit).
    ``event`` is None when the line is not JSON (rule ``json``, or ``lone-surrogate`` for a lone surrogate escape:
    :func:`~agentmsg._codec.jsontext.unreadable`), or not UTF-8 and no JSON even once that is replaced (rule ``utf-8``
    with the byte where it stops being UTF-8, as ``agentmsg validate`` and ``from_json`` say it:
    :func:`~agentmsg._codec.jsontext.not_utf8`); a line that is JSON once its invalid UTF-8 is replaced by U+FFFD gives
    the event with rule ``utf-8`` (the change is reported, nothing else of the line is lost)."""
    try:
        return loads_bounded(line), None, "", ""
    except TooDeep as exc:
        return None, "max-depth", str(exc), exc.pointer
    except orjson.JSONDecodeError as exc:
        error = exc
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        try:
            event = loads_bounded(line.decode("utf-8", "replace"))
        except TooDeep as exc:
            return None, "max-depth", str(exc), exc.pointer
        except orjson.JSONDecodeError:
            # the bytes said, as a document's are (orjson says "str is not valid UTF-8: surrogates not allowed")
            rule, words = not_utf8(line) or ("utf-8", str(bad))
        else:
            return event, "utf-8", f"line {line_no}: invalid UTF-8 at byte {bad.start}, replaced by U+FFFD", ""
    else:
        rule, words = unreadable(error, line)
    return None, rule, f"line {line_no}: not valid JSON: {words}", ""


def feed_lines(st: State, feed: Feed, lines: list[bytes], first_line: int) -> None:
    """The reference: each non-blank line parsed and fed (unparsable lines count as one event)."""
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        feed_line(st, feed, line, first_line + offset)


#: Nesting more than ``MAX_WRITABLE_DEPTH`` arrays and objects takes more than that many brackets, each closed:
#: a shorter line cannot be too deep to write back.
_DEEP_LINE = 2 * MAX_WRITABLE_DEPTH


def feed_lines_strict(st: State, feed: Feed, lines: list[bytes], first_line: int) -> None:
    """:func:`feed_lines` for a strict reducer (``feed`` is its ``_feed_parsed``; each line with or without its
    newline): the same events, messages and errors. Usually one call checks the whole run
    (:func:`~agentmsg._codec.schemas.event_array_validator`), when no line is blank or long enough to be too deep to
    write back. Else every line is read; when each is blank or an object of
    a known event type that orjson can write back (see :func:`_feed_checked`), and the events of each type are
    valid against that type's branch of the event schema (one call per type:
    :func:`~agentmsg._codec.schemas.event_type_array_validators`), they are applied in order as ``Reducer._feed``
    would, unchecked again (by the tolerant ``Reducer.feed_many``'s loop, or :func:`_apply_valid`). Otherwise the lines go through :func:`_feed_checked`, one at a time: it applies the
    valid events before the first invalid one, which then raises what the general path raises."""
    arrays = event_type_array_validators()
    if limits.max_depth != MAX_WRITABLE_DEPTH or not arrays:
        feed_lines(st, feed, lines, first_line)
        return
    valid_all = event_array_validator()
    if valid_all is not None and max(map(len, lines), default=0) < _DEEP_LINE:
        # The usual run: no blank line, no line long enough to be too deep to write back; one check for all.
        try:
            parsed = list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:
            pass
        else:
            if valid_all(parsed):
                _apply_all(st, feed, parsed)
                return
    loads, dumps, decode_error, encode_error = (
        orjson.loads,
        orjson.dumps,
        orjson.JSONDecodeError,
        orjson.JSONEncodeError,
    )
    events: list[dict[str, Any]] = []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        try:
            event = loads(line)
        except decode_error:
            if line.strip():
                break
            continue
        kind = event.get("type") if type(event) is dict else None
        if type(kind) is not str or kind not in arrays:
            break
        if len(line) >= _DEEP_LINE:
            try:
                dumps(event, option=_STRICT)
            except encode_error:
                break
        group = by_type.get(kind)
        if group is None:
            group = by_type[kind] = []
        group.append(event)
        events.append(event)
    else:
        if all(arrays[kind](group) for kind, group in by_type.items()):
            _apply_all(st, feed, events)
            return
    _feed_checked(st, feed, lines, first_line)


def _apply_all(st: State, feed: Feed, events: list[dict[str, Any]]) -> None:
    """Apply events valid against the event schema, in order: by Reducer.feed_many's tolerant loop
    (:func:`~._handlers.fold`: an event it hands to feed is checked again), or :func:`_apply_valid` for a reducer
    of a ``source``."""
    if st.source is None:
        fold(st, events, feed)
        return
    _apply_valid(st, events)


def _apply_valid(st: State, events: list[dict[str, Any]]) -> None:
    """Apply events valid against the event schema as ``Reducer._feed`` does after checking them: subagent
    source, duplicates, then :func:`~._handlers.apply`."""
    source, seen = st.source, st.window.seen
    for event in events:
        index = st.count
        st.count = index + 1
        if event.get("source") != source:
            continue
        event_id = event.get("id")
        if type(event_id) is str:
            if seen(event_id):
                continue
        elif event_id is not None:
            st.problem(index, "/id", "type", f"event id {event_id!r:.80} is not a string: not checked for duplicates")
        apply(st, event, index)


def _feed_checked(st: State, feed: Feed, lines: list[bytes], first_line: int) -> None:
    """The lines one at a time. A line that orjson reads as an object whose ``type`` names an event type, that
    orjson can write back (the depth check of ``validate_parsed``; a line shorter than ``_DEEP_LINE`` always can:
    orjson reads only what it can write but for the depth) and that the event schema's branch for its type
    accepts (:func:`~agentmsg._codec.schemas.event_type_validators`: then the whole event schema accepts it) is valid
    and applied (:func:`_apply_valid`). Any other line goes through :func:`feed_line` / ``feed`` unchanged, which
    check it again in full and raise what they raise. ``tests/events/test_strict_jsonl.py`` compares the paths."""
    checks = event_type_validators()
    loads, dumps, decode_error, encode_error = (
        orjson.loads,
        orjson.dumps,
        orjson.JSONDecodeError,
        orjson.JSONEncodeError,
    )
    line_no = first_line - 1
    for line in lines:
        line_no += 1
        try:
            event = loads(line)
        except decode_error:
            if line.strip():  # (a blank line is no event)
                feed_line(st, feed, line[:-1] if line.endswith(b"\n") else line, line_no)
            continue
        if len(line) >= _DEEP_LINE:
            try:
                dumps(event, option=_STRICT)
            except encode_error:  # nested too deep: refused as the reader refuses it
                feed_line(st, feed, line[:-1] if line.endswith(b"\n") else line, line_no)
                continue
        kind = event.get("type") if type(event) is dict else None
        check = checks.get(kind) if type(kind) is str else None
        if check is None:
            feed(event)
            continue
        if not check(event):
            feed(event)
            continue
        _apply_valid(st, [event])


def _read_problem(st: State, index: int, rule: str, message: str, pointer: str) -> None:
    """Record what :func:`parse_line` found. A line nested too deep is said as the reducer says an event fed as a
    dict that is (the same problem, whether the event came as text or parsed), a limit (strict:
    :class:`~agentmsg.SizeLimitError`)."""
    if rule == "max-depth":
        st.problem(index, pointer, rule, message if st.strict else f"{message}: event skipped", limit=True)
        return
    st.problem(index, "", rule, message)


def feed_line(st: State, feed: Feed, line: bytes, line_no: int) -> None:
    event, rule, message, at = parse_line(line, line_no)
    if rule is not None:
        _read_problem(st, st.count, rule, message, at)
        if event is None:
            st.count += 1
            return
    feed(event)


def _view_types() -> dict[str, type]:
    """One struct per event type (msgspec tagged union on ``type``), holding every key the schema
    gives that type, unknown keys forbidden: msgspec skips what a struct does not hold without checking
    its UTF-8, where the reference (orjson) rejects a line with invalid UTF-8 anywhere, so nothing may
    be skipped; a line with a key the schema does not know sends its run through the reference path.
    Keys typed ``None`` make the decoder reject a run that sets them (a forwarded subagent event, a
    thinking delta carrying a signature or redacted data): such runs take the reference path too. The
    keys the fast path reads are typed; the rest are decoded as they are (``Any``) and not used."""
    typed: dict[str, Any] = {
        "id": str | None,
        "blockId": str | None,
        "toolCallId": str | None,
        "delta": str | None,
        "source": None,
        "signature": None,
        "redactedData": None,
    }
    out: dict[str, type] = {}
    for name, node in schema_documents()["agent-event.schema.json"]["$defs"].items():
        tag = node.get("properties", {}).get("type", {}).get("const")
        if not isinstance(tag, str):
            continue
        keys = [k for k in node["properties"] if k != "type"]
        fields = [(k, typed.get(k, Any), None) for k in sorted({*keys, "id", "blockId", "toolCallId", "delta"})]
        out[sys.intern(tag)] = msgspec.defstruct(
            f"_{name}View", fields, tag_field="type", tag=tag, gc=False, forbid_unknown_fields=True
        )
    return out


_VIEWS = _view_types()
_TEXT_VIEW, _THINKING_VIEW, _CALL_VIEW = _VIEWS[TEXT_DELTA], _VIEWS[THINKING_DELTA], _VIEWS[CALL_DELTA]
assert set(_VIEWS) == set(schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"])

if TYPE_CHECKING:

    class _View(msgspec.Struct):
        id: str | None
        blockId: str | None
        toolCallId: str | None
        delta: str | None

    _views: msgspec.json.Decoder[_View]
else:
    _views = msgspec.json.Decoder(Union[tuple(_VIEWS.values())])  # noqa: UP007  (a run-time union of classes)


def _may_be_too_deep(data: bytes, start: int, end: int, count: int) -> bool:
    """Whether a line of ``data[start:end]`` (``count`` lines, each an object) may nest deeper than
    ``limits.max_depth``: such a line has more opening brackets than the limit, the others at least one each. The
    reference path refuses that line (rule ``max-depth``), so the run goes there. Two C scans, and a split only
    when the run holds that many brackets (JSON or code in the text)."""
    max_depth = limits.max_depth
    if data.count(b"{", start, end) + data.count(b"[", start, end) < count + max_depth:
        return False
    return any(
        len(line) > 2 * max_depth and line.count(b"{") + line.count(b"[") > max_depth
        for line in data[start:end].split(b"\n")
    )


_NO_ROUTES: tuple[dict[str, Text], dict[str, Text], dict[str, Text]] = ({}, {}, {})


#: A stretch of blank lines (what ``bytes.strip`` leaves empty): from the newline ending a line to the one ending the
#: last blank line after it.
#: Bytes of lines :meth:`Reducer.feed_jsonl` decodes at a time (as ``reduce_stream`` reads them).
RUN = 1 << 17

_BLANK_LINES = re.compile(rb"\n[ \t\r\x0b\x0c\n]*\n")


def feed_run(st: State, feed: Feed, data: bytes, start: int, end: int, first_line: int) -> int:
    """Feed ``data[start:end]``, whole lines (the first one is line ``first_line``), as the reference
    does; returns the number of lines. Stretches of blank lines are counted, never split into lines nor parsed
    (one regex scan): 60 MB of newlines cost a scan of them, and the lines between take the paths below whole."""
    pos, line = start, first_line
    for blank in _BLANK_LINES.finditer(data, start, end):
        ends, last = blank.start(), blank.end() - 1  # the newline ending a line; the one ending the last blank line
        line += _feed_lines_of(st, feed, data, pos, ends, line) if ends > pos else 1
        line += data.count(b"\n", ends + 1, last + 1)
        pos = last + 1
    if pos == start:
        return _feed_lines_of(st, feed, data, start, end, first_line)
    line += _feed_lines_of(st, feed, data, pos, end, line) if end > pos else 1
    return line - first_line


def _feed_lines_of(st: State, feed: Feed, data: bytes, start: int, end: int, first_line: int) -> int:
    """:func:`feed_run` of lines with no two blank lines in a row."""
    if st.strict:
        # The lines with their newlines (BytesIO finds them with memchr: several times faster than split);
        # a run ending with a newline ends with one more, empty, line.
        kept = io.BytesIO(data[start:end]).readlines()
        feed_lines_strict(st, feed, kept, first_line)
        return len(kept) + 1 if not kept or kept[-1].endswith(b"\n") else len(kept)
    count = data.count(b"\n", start, end) + 1
    views: list[_View] | None = None
    if not st.strict and st.source is None:
        with memoryview(data) as view:
            run = view[start:end]
            try:
                views = _views.decode_lines(run)
            except (msgspec.DecodeError, UnicodeDecodeError, ValueError, RecursionError):
                views = None  # (the reference path says what is wrong, a line nested too deep included)
            # decode_lines skips blank lines (their line numbers would not match) and reads values one after another,
            # however they are spaced (two on a line, or split by a CR alone, which ends no line here): the count
            # matches only when each line holds one, or when a line of two makes up for a blank one, which can only
            # be the run's first or last line (feed_run takes the others out). The ids must be new.
            if views is not None and (
                len(views) != count
                or not data[start : data.find(b"\n", start, end) % (end + 1)].strip()
                or not data[data.rfind(b"\n", start, end) + 1 : end].strip()
                or _may_be_too_deep(data, start, end, count)
                or not st.window.add_fresh([v.id for v in views])  # type: ignore[misc]
            ):
                views = None
    if views is None:
        feed_lines(st, feed, data[start:end].split(b"\n"), first_line)
        return count
    lines: list[bytes] | None = None
    text_view, call_view, thinking_view = _TEXT_VIEW, _CALL_VIEW, _THINKING_VIEW
    base = st.count
    reply = st.reply
    texts, thinkings, calls = (reply.texts, reply.thinkings, reply.calls) if reply is not None else _NO_ROUTES
    i = -1
    for v in views:
        i += 1
        kind = type(v)
        if kind is text_view:
            text = texts.get(v.blockId)  # type: ignore[arg-type]
        elif kind is call_view:
            text = calls.get(v.toolCallId)  # type: ignore[arg-type]
        elif kind is thinking_view:
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
        event, rule, message, at = parse_line(lines[i], first_line + i)
        if rule is not None:
            _read_problem(st, base + i, rule, message, at)
        st.count = base + i + 1
        if type(event) is dict:  # msgspec decoded an object there, so orjson does too
            apply(st, event, base + i)
        reply = st.reply
        texts, thinkings, calls = (reply.texts, reply.thinkings, reply.calls) if reply is not None else _NO_ROUTES
    st.count = base + len(views)
    if st.reply is not None:
        st.reply.sync()
    return count
