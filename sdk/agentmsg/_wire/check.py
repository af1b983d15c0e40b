"""Checking a file of messages, events or blocks as data: :func:`agentmsg.check` and :func:`agentmsg.iter_check`
give, for a file (a path, its bytes, a binary stream, or parsed JSON), the problems and notes ``agentmsg validate``
prints for it: the same kind detection, rules, JSON pointers and lines (the command is a shell over
:func:`iter_check`; tests/cli/test_check_api.py compares the two on every vector and fixture).

Beyond each instance's schema (and its legacy and unknown keys, notes), the rules that hold across a file's
instances: an event stream's order and pairing, as the reducer reads it, and a stream cut inside a reply; a
conversation's tool-call/result pairing and, with ``provider``, what that provider's formatter would not send as it
is (its diagnostics: those ``strict=True`` refuses are problems, its rewrites notes)."""

from __future__ import annotations

import io
import os
import re
from array import array
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, Final

import attrs
import msgspec
import orjson

from agentmsg._codec.jsontext import (
    as_given,
    check_json_value,
    deep_value_pointer,
    deeper_than,
    depth_error,
)
from agentmsg._codec.legacy import read_legacy_keys, read_legacy_keys_checked, written_at
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import KINDS, find_unknown_keys, schema_documents, validate, validate_checked
from agentmsg._wire.peek import Peeked
from agentmsg._wire.records import Readable, read_records, read_sse
from agentmsg._wire.sse import SSEEvent, sniff_format
from agentmsg.errors import Problem, SizeLimitError, ValidationError, unknown_choice, wrong_type

if TYPE_CHECKING:  # (at run time, agentmsg.events and agentmsg.conversation are imported where an event stream or a
    # conversation is checked: a file of messages needs neither, a third of `agentmsg validate FILE`'s start-up)
    from agentmsg.events import Reducer

__all__ = ["AUTO", "CONVERSATION", "CheckReport", "CheckStream", "Finding", "check", "detect_kind", "iter_check"]

#: the kinds :func:`check` takes besides the schemas' (``agentmsg.KINDS``): told from the file, or a conversation
AUTO: Final = "auto"
CONVERSATION: Final = "conversation"

#: bytes read ahead to tell a file's kind (and read again as the file's start: nothing is read twice from it)
HEAD = 1 << 17

_BOM = b"\xef\xbb\xbf"
_EVENT_TYPE = re.compile(rb'"type"\s*:\s*"[A-Z][A-Z_]+"')
_ROLE = re.compile(rb'"role"\s*:\s*"')
_BLOCK_TYPE = re.compile(rb'"type"\s*:\s*"[a-z][a-z_]*"')

#: the pairing rules a conversation breaks whatever the provider (the formatters' shared rules)
PAIRING: Final = ("tool-use-orphan", "tool-result-orphan")


@attrs.frozen
class Finding:
    """One problem or note of a file, as ``agentmsg validate --json`` prints it: ``instance`` (the 0-based index of
    the item or record in an array, JSON Lines or SSE file; None when the file is one instance, or for what is the
    file's: a stream cut short), ``pointer`` (RFC 6901, within the instance), ``rule``, ``message``, ``line`` (the
    file's line, 1-based, where the instance starts, for every finding inside it: a JSON Lines record's, an array
    item's first line, an SSE event's first field line; a JSON syntax error's own line; None for what is the
    file's, a stream cut short) and ``note`` (True for a note: an unknown or legacy key, a formatter's rewrite; it
    does not make the file invalid)."""

    instance: int | None
    pointer: str
    rule: str
    message: str
    line: int | None = None
    note: bool = False

    @property
    def at(self) -> str:
        """The pointer within the file (``/N`` and the pointer within the instance), as the text report shows it."""
        return self.pointer if self.instance is None else f"/{self.instance}{self.pointer}"

    @property
    def problem(self) -> Problem:
        """The finding as a :class:`~agentmsg.Problem` whose pointer is the file's (:attr:`at`)."""
        return Problem(self.at, self.rule, self.message)


@attrs.frozen
class CheckReport:
    """What :func:`check` found in a file: the ``kind`` it was checked as (told from its start with ``auto``) and
    its ``findings`` in the order ``agentmsg validate`` prints them."""

    kind: str
    findings: tuple[Finding, ...]

    @property
    def problems(self) -> list[Finding]:
        """The findings that make the file invalid (not the notes)."""
        return [f for f in self.findings if not f.note]

    @property
    def notes(self) -> list[Finding]:
        return [f for f in self.findings if f.note]

    @property
    def valid(self) -> bool:
        """Whether the file is valid: no problem (notes do not count), as ``agentmsg validate`` exits 0."""
        return not any(not f.note for f in self.findings)


def check(source: Any, *, kind: str = AUTO, provider: str | None = None, strict: bool = False) -> CheckReport:
    """Check a file as ``agentmsg validate`` does and return what it prints as data (:class:`CheckReport`).

    ``source``: a path (``str`` or ``os.PathLike``), the file's bytes, a binary stream (anything with ``read`` and
    ``readline``, read from where it is and not closed), or parsed JSON (a dict, a list; a :class:`~agentmsg.Msg`
    or anything with ``to_dict()``), checked as the file holding its compact JSON. ``kind``: ``auto`` (told from
    the file's start: agent events, a conversation (a JSON array of messages), a message or JSON Lines of them, a
    content block), ``conversation``, or one of ``agentmsg.KINDS``. ``provider``: a conversation is also checked
    as that provider's formatter reads it. ``strict``: keys the schema does not declare, and legacy keys, are
    problems, not notes. Bad content is findings, never an exception; a path that cannot be opened or read raises
    :class:`OSError` (as ``open`` does), a path no file system can hold (a lone surrogate, a NUL) a
    :class:`~agentmsg.ValidationError` at ``/source`` (rule ``path``), an unknown ``kind`` one at ``/kind`` (rule
    ``enum``; both are ValueErrors too), parsed JSON holding what is no JSON value a ValidationError naming the
    first at its pointer, as ``Msg.from_dict`` refuses it (a set, a tuple, a UUID, a datetime, bytes, a key that
    is no string, a str, int or dict subclass, a mapping that is no dict, a NaN or an infinity: ``json-value``,
    whatever orjson would write for it; an integer beyond 64 bits: ``integer-range``; a lone surrogate:
    ``lone-surrogate``; nested too deep, or a list or dict holding itself: a SizeLimitError, ``max-depth``). As
    the readers take them, the value given and each item of a list given that is a mapping but no dict is read
    as its dict, and a str or int enum member anywhere as its value. A legacy key is a note, but what the readers
    refuse once they read it in its current form is a problem, as ``Msg.from_json`` says it: its rule, its pointer
    in the form read (a tool result's ``result`` of ``["x"]``: ``/content/0/output/0``, ``anyOf``), its message
    naming where the file writes it (``written at /content/0/result/0``). Reads in bounded memory
    (:data:`agentmsg.limits`); the findings are kept (:func:`iter_check` gives them one by one)."""
    stream = iter_check(source, kind=kind, provider=provider, strict=strict)
    return CheckReport(stream.kind, tuple(stream))


class CheckStream(Iterator[Finding]):
    """The findings of a file, as they are found (:func:`iter_check`). ``kind``: what the file is checked as;
    ``head``: its first bytes (up to 128 KiB), read ahead to tell its kind.

    A path given is opened here and closed once the findings are all given, or on :meth:`close`; a stream given
    is read from where it is and never closed. Used in ``with``, the stream is closed at the block's end, also
    when the block raises or leaves the findings unread (``with iter_check(path) as findings: ...``), as a file
    is. After :meth:`close` (or the ``with`` block), ``next()`` raises :class:`ValueError`, as reading a closed
    file does: a closed stream's findings are not an empty list, which would read as a valid file."""

    def __init__(self, source: Any, kind: str, provider: str | None, strict: bool) -> None:
        if not isinstance(kind, str) or (kind not in (AUTO, CONVERSATION) and kind not in KINDS):
            schema_documents()  # (every shipped schema registered in KINDS)
            if not isinstance(kind, str) or kind not in KINDS:
                raise unknown_choice(kind, "kind", [AUTO, CONVERSATION, *sorted(KINDS)], "kind")
        if provider is not None:  # (an unknown name: UnknownNameError, as get, count_tokens and trim raise it)
            from agentmsg.providers import get

            get(provider)
        self._own: IO[bytes] | None = None
        self._closed = False
        stream = _stream(source)
        if stream is None:
            self._own = stream = _open(source)
        try:
            self._peeked = Peeked(stream, HEAD)
        except BaseException:
            self._release()
            raise
        self.head = self._peeked.head
        self.kind = detect_kind(self.head) if kind == AUTO else kind
        self._findings: Iterator[Finding] = _findings(self._peeked, self.kind, provider, strict)

    def __next__(self) -> Finding:
        if self._closed:
            raise ValueError("the findings of a closed CheckStream (closed, or its with block left)")
        try:
            return next(self._findings)
        except BaseException:
            self._release()
            raise

    def __enter__(self) -> CheckStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """No more findings: the file this opened (a path given) is closed, a stream given is left open, and
        ``next()`` raises :class:`ValueError` from now on. Closing again does nothing."""
        self._closed = True
        self._findings = iter(())  # (what the rules across the file kept, let go)
        self._release()

    def _release(self) -> None:
        """Close the file this opened (a path given); a stream given is left open."""
        if self._own is not None:
            self._own.close()
            self._own = None


def iter_check(source: Any, *, kind: str = AUTO, provider: str | None = None, strict: bool = False) -> CheckStream:
    """:func:`check`'s findings one at a time, as the file is read (a file of messages in bounded memory whatever
    its length; an event stream or a conversation keeps what the rules across its instances need): what
    ``agentmsg validate`` runs. The file's first bytes are read at once, to tell its kind (``.kind``)."""
    return CheckStream(source, kind, provider, strict)


def _stream(source: Any) -> Readable | None:
    """``source`` as a binary stream, None for a path (opened by the caller)."""
    if isinstance(source, (str, os.PathLike)):
        return None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(source)
    if isinstance(source, (io.BufferedIOBase, io.RawIOBase)):  # (open(path, "rb"), sys.stdin.buffer, BytesIO)
        return source
    if callable(getattr(source, "read", None)) and callable(getattr(source, "readline", None)):
        return _Binary(source)
    return io.BytesIO(_json_text(source))


def _json_text(source: Any) -> bytes:
    """The compact JSON of parsed JSON given to check, held to what the readers hold it to (``Msg.from_dict``,
    ``block_from_dict``, ``validate``, the reducer: :func:`~agentmsg._codec.jsontext.check_json_value`): what they
    refuse as no JSON raises their ValidationError, the first in document order at its pointer (a tuple, a UUID,
    a datetime, a set, bytes, a NaN or an infinity, a str, int or dict subclass, a mapping that is no dict, a key
    that is no string: ``json-value``; an integer beyond 64 bits: ``integer-range``; a lone surrogate:
    ``lone-surrogate``; nested too deep, or a list or dict holding itself: a SizeLimitError, ``max-depth``), never
    checked as what orjson writes for it (a tuple as an array, a UUID as a string, a NaN as null). As the readers
    take them, the value and each item of a list given: a mapping that is no dict (a ``MappingProxyType``, an
    ``OrderedDict``) is read as the dict of its items, an object with ``to_dict()`` (a :class:`~agentmsg.Msg`) as
    its dict; a str or int enum member anywhere is its value."""
    source = _as_read(source)
    if type(source) is list and not all(type(item) is dict for item in source):
        source = [_as_read(item) for item in source]
    check_json_value(source)  # (the usual value, plain JSON: the readers' own two C passes)
    return orjson.dumps(source)


def _as_read(value: Any) -> Any:
    """A value given to check, or an item of a list given, as the readers take it (:func:`_json_text`)."""
    value = as_given(value)
    if type(value) is dict or type(value) is list:
        return value
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def _open(path: str | os.PathLike[str]) -> IO[bytes]:
    """The file at ``path``, opened to read bytes. A path no file system can hold (a lone surrogate, which has no
    UTF-8 bytes; a NUL) is a bad argument: a ValidationError at ``/source``, rule ``path`` (a ValueError too, as
    open's UnicodeEncodeError was); a path that cannot be opened raises open's OSError."""
    try:
        return open(os.fspath(path), "rb")  # (closed by CheckStream._release(), at the end)
    except ValueError as exc:  # (UnicodeEncodeError is one; OSError is not)
        raise ValidationError.single("/source", "path", f"{path!r} is no path a file system can hold: {exc}") from None


class _Binary:
    """A stream given, checked to read bytes (a text stream: a WrongTypeError at ``/source``, a TypeError too)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _bytes(self, data: Any) -> bytes:
        if isinstance(data, (bytes, bytearray)):
            return bytes(data)
        raise wrong_type("/source", "check reads a binary stream (open the file with 'rb'), one giving bytes", data)

    def read(self, size: int = -1, /) -> bytes:
        return self._bytes(self._stream.read(size))

    def readline(self, size: int = -1, /) -> bytes:
        return self._bytes(self._stream.readline(size))


def _findings(stream: Peeked, kind: str, provider: str | None, strict: bool) -> Iterator[Finding]:
    """Each instance's problems then notes, as it is read; then the rules across the file's instances."""
    across = Across(kind, provider)
    checked = schema_kind(kind)
    records, parsed = _records(stream, checked)
    for prefix, instance, error, line in records:
        # (a conversation is one document, the array of its messages: each message one level down in it)
        held_at = prefix if kind == CONVERSATION else ""
        problems, notes = ([error], []) if error is not None else _check(instance, checked, strict, parsed, held_at)
        across.add(instance if error is None else None, problems, line, prefix)
        at = int(prefix[1:]) if prefix else None
        for p in problems:
            yield Finding(at, p.pointer, p.rule, p.message, line)
        for p in notes:
            yield Finding(at, p.pointer, p.rule, p.message, line, note=True)
    problems, notes = across.problems()  # each said as its instance's (/N and the pointer within it)
    for group, note in ((problems, False), (notes, True)):
        for p in group:
            prefix, within = across.split(p)
            yield Finding(
                int(prefix[1:]) if prefix else None,
                within.pointer,
                within.rule,
                within.message,
                across.line_of(p.pointer),
                note,
            )


def _check(
    instance: Any, kind: str, strict: bool, parsed: bool = False, at: str = ""
) -> tuple[list[Problem], list[Problem]]:
    """(problems, notes) of one instance. The verdict is the schema's on the instance as it is; a legacy key
    (AgentScope's seed documents) is also said as the readers read it (a note, rule ``legacy-key``, even where the
    schema rejects the legacy form: the note says what a reader makes of it), and what they refuse in the form
    they read is a problem (:func:`_refused_as_read`); ``strict`` refuses it (an error).
    ``parsed``: the instance was read by ``loads`` (``read_records``), which held it to ``check_json_value``
    already: it is not checked again, nor its depth walked again for its legacy keys (an SSE event's data is).

    The form read is held to the depth limit as the readers hold it (``Msg.from_json`` refuses a legacy ``result``
    chain whose ``output`` lists nest past it): the same problem at the same pointer. ``at``: the instance's pointer
    in the document holding it, a conversation's message (``/N``), whose depth counts the array's level as
    ``decode_messages`` counts it (docs/wire-format.md, "Limits"); ``""`` for an instance that is its own
    document (one JSON value, a JSON Lines record)."""
    try:
        if parsed:
            read, legacy = read_legacy_keys_checked(instance, kind, at)
            legacy = [_within(p, at) for p in legacy]
        else:
            read, legacy = read_legacy_keys(instance, kind)
        if read is not instance and not strict:  # (strict reading refuses the legacy keys themselves, as said below)
            _hold_depth(read, kind, at)
    except SizeLimitError as exc:  # (legacy keys nesting past the limit in their current form: as the readers say it)
        return [_within(p, at) for p in exc.problems], []
    try:
        (validate_checked if parsed else validate)(instance, kind, strict=strict)
    except ValidationError as exc:
        if strict:
            refused = [Problem(p.pointer, p.rule, f"strict reading refuses it: {p.message}") for p in legacy]
            return list(exc.problems) + refused, []
        problems = list(exc.problems)
        return problems + _refused_as_read(instance, read, kind, problems), legacy + _unknown_keys(
            instance, kind, legacy, parsed
        )
    if strict:
        return [], []  # (a legacy key is a key the closed schema does not declare: never strict-valid)
    notes = sorted(legacy + _unknown_keys(instance, kind, legacy, parsed), key=lambda p: p.pointer)
    return _refused_as_read(instance, read, kind, []), notes


def _refused_as_read(instance: Any, read: Any, kind: str, said: list[Problem]) -> list[Problem]:
    """What the readers refuse an instance with once its legacy keys are read (``read``, the form ``Msg.from_dict``,
    ``Msg.from_json``, ``decode_messages`` and ``block_from_dict`` validate): a tool result's ``result`` of ["x"] is
    an ``output`` whose item is no block. Each problem as the reader says it (its pointer in the form read, its
    rule), its message naming where the instance writes that part (:func:`~agentmsg._codec.legacy.written_at`),
    but those said of the instance as it is already (``said``: the same pointer and rule). None for an instance
    with no legacy key, or an event's (the reducer, which reads it, says its problems: :class:`Across`)."""
    if read is instance or kind == "event":
        return []
    try:
        validate(read, kind)  # (not validate_checked: a legacy arguments text is parsed into new values)
    except ValidationError as exc:
        problems = exc.problems
    else:
        return []
    seen = {(p.pointer, p.rule) for p in said}
    out = []
    for p in problems:
        if (p.pointer, p.rule) in seen:
            continue
        written = written_at(instance, p.pointer)
        where = f": written at {written or '(the instance)'}" if written != p.pointer else ""
        out.append(attrs.evolve(p, message=f"{p.message} (as the readers read the legacy keys{where})"))
    return out


def _within(problem: Problem, at: str) -> Problem:
    """A problem said of the document holding an instance at ``at``, said of the instance (``at`` left out)."""
    if not at or not (problem.pointer == at or problem.pointer.startswith(at + "/")):
        return problem
    return attrs.evolve(problem, pointer=problem.pointer[len(at) :])


def _hold_depth(read: Any, kind: str, at: str) -> None:
    """An instance with its legacy keys read (``read``) held to ``limits.max_depth`` as the readers hold it (a
    ``result`` object is one level where the ``output`` list it is read as is two): a SizeLimitError at the list or
    dict that crosses the limit, pointed within the instance, as ``Msg.from_json`` (``check_json_value`` of the form
    read) and ``decode_messages`` (``at``: the instance is that many levels down in its document) name it."""
    limit = limits.max_depth - at.count("/")
    if deeper_than(read, limit):
        raise depth_error(kind, deep_value_pointer(read, limit))


def _unknown_keys(instance: Any, kind: str, legacy: list[Problem], parsed: bool) -> list[Problem]:
    """The keys an instance's schema does not declare, but its legacy keys (said already), by pointer: a valid
    instance's, and an invalid one's too, as ``--strict`` says them (a misspelt key is often why a required one
    is missing). Empty for a value that is no JSON the validator reads (its problem is said). (The schema's
    search, not ``agentmsg.find_unknown_keys``, which reads the legacy keys again to say those: left out here.)"""
    said = {p.pointer for p in legacy}
    try:
        unknown = find_unknown_keys(instance, kind, checked=parsed)
    except ValidationError:  # (not JSON that can be written back: an integer out of range, a lone surrogate, ...)
        return []
    return [p for p in unknown if p.pointer not in said]


#: (pointer prefix, instance, problem, line) of one instance of a file (``agentmsg.read_records``)
_Record = tuple[str, Any, Problem | None, int | None]


def _records(stream: Peeked, kind: str) -> tuple[Iterator[_Record], bool]:
    """The records of a file (``agentmsg.read_records``), and whether their values were read by ``loads`` (held
    to ``check_json_value``); with kind ``event``, an SSE stream too (what ``agentmsg reduce`` and ``agentmsg
    serve`` read), whose values were not: each SSE event's data is an instance, prefix ``/N`` for the N-th
    event."""
    if sniff_format(stream.head.removeprefix(_BOM).lstrip(b" \t\r\n")) != "sse":
        return read_records(stream, unique_keys=True), True  # (a key given twice: refused, rule duplicate-key)
    return _sse_records(stream, kind), False


def _sse_records(stream: Peeked, kind: str) -> Iterator[_Record]:
    """The records of an SSE file (:func:`_records`)."""
    if kind != "event":
        yield (
            "",
            None,
            Problem("", "json", "not valid JSON: it is an SSE stream (validate --kind event reads one)"),
            None,
        )
        return
    from agentmsg.events.stream import event_sse_decoder, sse_agent_events

    events = _Lines(read_sse(stream, event_sse_decoder()))
    pending: list[tuple[Problem, int]] = []
    index = 0
    for event in sse_agent_events(events, strict=False, on_problem=lambda p: pending.append((p, events.take()))):
        for problem, line in pending:  # events skipped before this one, each at its own index; bad UTF-8 is this one's
            yield f"/{index}", None, problem, line
            if problem.rule != "utf-8":
                index += 1
        if pending and pending[-1][0].rule == "utf-8":
            pending.clear()
            index += 1
            continue  # its text was replaced: already invalid, said
        pending.clear()
        yield f"/{index}", event, None, events.take()
        index += 1
    for problem, line in pending:
        yield f"/{index}", None, problem, line
        index += 1


class _Lines(Iterator[SSEEvent]):
    """The SSE events of a file (:func:`~agentmsg._wire.records.read_sse`), and :meth:`take`, the line of the one
    an agent event or problem is about: the first read since it was last taken. Each event's is given before the
    next is read, but the end event's problem, said once what follows it is read: the end event's line then."""

    def __init__(self, events: Iterator[tuple[int, SSEEvent]]) -> None:
        self._events = events
        self._line = 0
        self._taken = True

    def __next__(self) -> SSEEvent:
        line, event = next(self._events)
        if self._taken:
            self._line, self._taken = line, False
        return event

    def take(self) -> int:
        self._taken = True
        return self._line


def detect_kind(head: bytes) -> str:
    """The kind of a file that starts with ``head``: ``event`` for agent events (SSE, JSON Lines or a JSON array
    of them), ``conversation`` for a JSON array of messages, ``content-block`` for blocks, else ``msg`` (one
    message, JSON Lines of messages, and what is no JSON at all: its problem is said as a message's). Told from
    the first instance's own keys (an uppercase type: an event; a role: a message; a lowercase type: a block)
    when the head holds it whole, else from the first of those keys in the text."""
    text = head.removeprefix(_BOM).lstrip()
    if sniff_format(text) == "sse" and not text.startswith((b"{", b"[")):
        return "event"
    first = _first_instance(text)
    if isinstance(first, dict):
        kind = first.get("type")
        if isinstance(kind, str) and kind[:1].isupper():  # (an event may have a role too: AGENT_START's)
            found = "event"
        elif "role" in first:
            found = "msg"
        elif isinstance(kind, str):
            found = "content-block"
        else:
            found = "msg"
    else:
        event, role = _EVENT_TYPE.search(text), _ROLE.search(text)
        if event is not None and (role is None or event.start() < role.start()):
            found = "event"
        elif role is not None:
            found = "msg"
        elif _BLOCK_TYPE.search(text):
            found = "content-block"
        else:
            found = "msg"
    return CONVERSATION if found == "msg" and text.startswith(b"[") else found


def _first_instance(text: bytes) -> Any:
    """The first instance of a file starting with ``text`` when it is whole there: the whole text (one document,
    an array: its first item), or its first line (JSON Lines); else None."""
    for candidate in (text, text.split(b"\n", 1)[0]):
        try:
            value = orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, list):
            return value[0] if value else None
        return value
    return None


def schema_kind(kind: str) -> str:
    """The schema each instance of a file of ``kind`` is checked against."""
    return "msg" if kind == CONVERSATION else kind


class Across:
    """The rules across the instances of one file, fed each instance as it is read (``None`` for one that
    could not be read), said at the end by :meth:`problems` as (errors, notes)."""

    def __init__(self, kind: str, provider: str | None) -> None:
        self.kind = kind
        self.provider = provider
        self._reducer: Reducer | None = None
        self._said_max = 0  # (the instances' problems kept for the reducer's: as many as it keeps)
        if kind == "event":
            from agentmsg.events import DEFAULT_MAX_PROBLEMS, Reducer

            self._reducer, self._said_max = Reducer(), DEFAULT_MAX_PROBLEMS
        self._messages: list[bytes] | None = [] if kind == CONVERSATION else None
        self._invalid = False  # (a message of the conversation is not valid: its rules across are not checked)
        # What the rules across the file need, kept only for them (events, a conversation: each message's JSON text,
        # what the check at its end reads, a sixth of the memory of its dicts, till one is not valid): a file of
        # messages is checked record by record in bounded memory. The instances' problems, that the reducer's word on
        # the same spot is not said twice: as many as the reducer keeps (beyond, a repeat is said, nothing lost).
        self._said: set[tuple[str, str]] = set()
        self._lines: array[int] | None = array("q") if self._reducer is not None or self._messages is not None else None
        self._count = 0
        self._single = False
        # The reducer's refusal to build a reply's message at all (a --max-depth too small for any message: 1 or 2);
        # the events after it are not reduced (what it said before is kept)
        self._stopped: Problem | None = None

    def add(self, instance: Any, problems: list[Problem], line: int | None = None, prefix: str = "/") -> None:
        """One instance of the file (None: it could not be read), the problems said of it already (their
        pointers the instance's): the reducer's own word on the same spot and rule is not said again; its line in
        the file, when known, and its pointer prefix (``""``: the file is this one instance)."""
        if self._reducer is not None and len(self._said) < self._said_max:
            # keyed as the reducer points: /N, the instance's index in the file, even where the file is this one
            # instance and its problems are said without /0 (a bad createdAt was said twice there)
            at = f"/{self._count}"
            self._said.update((at + p.pointer, p.rule) for p in problems)
        self._single = self._single or prefix == ""  # the file is one instance (its pointers the instance's)
        if self._lines is not None:
            self._lines.append(-1 if line is None else line)
        self._count += 1
        valid = not problems
        if self._reducer is not None:
            if self._stopped is not None:
                pass
            elif instance is None:  # keeps the reducer's indexes the file's (its problem is said already)
                self._reducer.feed_unreadable("unreadable", rule="json")
            else:
                self._reduced(self._reducer.feed, instance)
            self._reducer._forget_done()  # (only the problems are read: no reply's message held past its end)
        elif self._messages is not None and not self._invalid:
            if valid:
                self._messages.append(msgspec.json.encode(instance))
            else:
                self._invalid = True
                self._messages.clear()

    def split(self, problem: Problem) -> tuple[str, Problem]:
        """(the instance's prefix ``/N``, the problem within it) of a problem found across the file (its pointer
        the file's): said as the instance's, as a problem of its schema is; ``""`` and the problem as it is when
        it is the file's (a cut stream) or the file is one instance."""
        head = problem.pointer[1:].partition("/")[0]
        if not problem.pointer.startswith("/") or not head.isdigit():
            return "", problem
        within = Problem(problem.pointer[len(head) + 1 :], problem.rule, problem.message, problem.schema_location)
        return ("" if self._single else f"/{head}"), within

    def line_of(self, pointer: str) -> int | None:
        """The file's line of the instance a pointer is in (``/N/...``: the N-th), when known."""
        first = pointer.split("/", 2)[1] if pointer.startswith("/") else ""
        lines = self._lines
        if lines is None or not first.isdigit() or int(first) >= len(lines):
            return None
        return lines[int(first)] if lines[int(first)] >= 0 else None

    def _reduced(self, step: Callable[..., object], *args: Any) -> None:
        """``step(*args)`` of the reducer, which raises where no message of a reply can be built under the limits
        (``limits.max_depth`` 1 or 2: a message is deeper; the tolerant reducer's last resort, an empty message, is
        too). That is said as a problem at the event that ended the reply (its rule the limit's), and the events
        after it are not reduced: it was a SizeLimitError out of :func:`check` (a traceback out of ``agentmsg
        validate --max-depth 2`` on any event stream), where bad content is findings."""
        try:
            step(*args)
        except SizeLimitError as exc:
            first = exc.problems[0]
            self._stopped = Problem(
                f"/{max(self._count - 1, 0)}",
                first.rule,
                f"the reply's message cannot be built: {first.message}; the events after are not reduced",
            )

    def problems(self) -> tuple[list[Problem], list[Problem]]:
        if self._reducer is not None:
            found = self._event_problems(self._reducer, self._said)
            if not self._count and not found:  # (`[]`: no event, as `agentmsg reduce` says it)
                found.append(Problem("", "empty", "no events in the input"))
            return found, []
        # (no message at all, `[]`, is a conversation the schema takes; a provider's formatter takes none:
        # empty-conversation, as `agentmsg format` says it)
        if self._messages is not None and not self._invalid and (self._messages or self.provider is not None):
            return conversation_problems(b"[" + b",".join(self._messages) + b"]", self.provider)
        return [], []

    def _event_problems(self, reducer: Reducer, said: set[tuple[str, str]]) -> list[Problem]:
        """The reducer's problems (order, pairing, ... as ``agentmsg reduce`` says them), those of an
        instance that could not be read left out (said already), and a reply the stream cut short."""
        from agentmsg.events import CUT_RULE

        found = [
            p
            for p in reducer.problems
            if p.message != "unreadable" and p.rule != "legacy-key" and (p.pointer, p.rule) not in said
        ]  # (a legacy key is said as a note of its instance)
        if self._stopped is None:  # (its problem for a cut reply is not in found, taken before: said below)
            self._reduced(reducer.finish)
        if self._stopped is not None:
            return [*found, self._stopped]
        cut = reducer.cut
        if cut is not None:
            found.append(
                Problem(
                    "",
                    CUT_RULE,
                    f"the stream ended inside reply {cut.id} (no AGENT_END, or a block or model call still open)",
                )
            )
        return found


def conversation_problems(messages: bytes, provider: str | None) -> tuple[list[Problem], list[Problem]]:
    """(problems, notes) of a conversation (``messages``: its JSON text) whose messages are each valid: formatted
    for ``provider`` (or, with none, for the registry's first, keeping only the pairing rules every provider
    shares), the diagnostics ``strict=True`` refuses (lossy and error) are problems, the rewrites notes."""
    from agentmsg.conversation import decode_messages  # (here: a message or events file needs neither)
    from agentmsg.providers import ERROR, LOSSY, NAMES, RULES, get

    try:
        msgs = decode_messages(messages, notes=[])  # (legacy keys: said as each message's notes)
        request = get(provider or NAMES[0]).format_request(msgs)
    except ValidationError as exc:  # (with no provider named, what only a provider refuses is not said: media)
        return [p for p in exc.problems if provider is not None or not p.rule.startswith("media-")], []
    if provider is None:
        return [p for p in request.diagnostics if p.rule in PAIRING], []
    problems = [p for p in request.diagnostics if RULES[p.rule][0] in (LOSSY, ERROR)]
    notes = [p for p in request.diagnostics if RULES[p.rule][0] not in (LOSSY, ERROR)]
    return problems, notes
