"""What the commands share: reading inputs, splitting them into instances, printing problems, exit codes."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, Protocol, TextIO, TypeVar

from agentmsg._codec.jsontext import loads
from agentmsg._codec.limits import limits
from agentmsg.errors import Problem, SizeLimitError, ValidationError
from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT, sniff_format

T = TypeVar("T")

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: ``agentmsg parse``: the reply was read whole, but a tool call's arguments, as the provider gave them, are no JSON
#: object the message can hold (cut at max_tokens, say): kept raw, with argumentsError
EXIT_ARGUMENTS = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
EXIT_BROKEN_PIPE = 141  # the output was closed early (`| head`), as shells report SIGPIPE


class UsageError(Exception):
    """A usage problem (bad arguments, unreadable file): printed as ``agentmsg: ...``, exit 2."""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that an epilog starting ``exit status:`` keeps its lines as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("exit status:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def exit_status(*lines: str, interrupt: bool = True) -> dict[str, Any]:
    """``add_parser`` keywords for a command's ``--help`` to end with its exit codes, one ``CODE  meaning``
    line each (continuation lines indented by the caller); ``interrupt`` adds Ctrl-C's 130."""
    rows = [*lines, "130  interrupted (Ctrl-C)"] if interrupt else list(lines)
    return {"epilog": "exit status:\n" + "\n".join("  " + row for row in rows), "formatter_class": HelpFormatter}


def stdin_once(*given: tuple[str, str | None]) -> None:
    """A :class:`UsageError` when ``-`` (stdin) is given more than once, in ``(what, path)`` pairs (``what`` the
    argument's name; a path None when not given): stdin is read once, and the second read as empty (then
    reported as "no JSON value"), never the same input again."""
    where = [what for what, path in given if path == "-"]
    if len(where) > 1:
        raise UsageError(f"'-' (stdin) given {len(where)} times ({', '.join(where)}): stdin can be read only once")


def shown_path(path: str) -> str:
    """A file name as a command shows it: bytes that are not UTF-8 (a name Python holds with surrogate escapes)
    as ``\\xNN``, which any output can write (JSON cannot hold them, nor a UTF-8 stdout or stderr without
    surrogateescape: PYTHONIOENCODING=utf-8)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if path != "-" else path


def read_bytes(path: str) -> bytes:
    """The whole content of a file, or of stdin for ``-``, read in bounded memory: more than
    ``limits.max_bytes`` raises :class:`~agentmsg.SizeLimitError` (rule ``max-bytes``) without reading on."""
    stream = open_binary(path)
    try:
        data = stream.read(limits.max_bytes + 1)
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if len(data) > limits.max_bytes:
        raise SizeLimitError([_too_big()])
    return data


def chunks_of(path: str, size: int = 1 << 16) -> Iterator[bytes]:
    """A file (or stdin for ``-``) in chunks of at most ``size`` bytes, for readers that work incrementally."""
    stream = open_binary(path)
    read = getattr(stream, "read1", stream.read)  # what a pipe holds already: a live producer's data as it comes
    try:
        while chunk := read(size):
            yield chunk
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def open_binary(path: str) -> IO[bytes]:
    """A binary stream for a file, or stdin for ``-`` (the caller closes files, not stdin)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None


def reading(path: str, items: Iterable[T]) -> Iterator[T]:
    """``items`` as they are read from ``path``; an OSError while reading them is a :class:`UsageError`
    (``cannot read``). Only the reading: an error writing the output, in the caller's loop, is not caught."""
    it = iter(items)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except OSError as exc:
            raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
        yield item


class Readable(Protocol):
    """What the readers here need of a binary stream."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readline(self, size: int = -1, /) -> bytes: ...


class Peeked:
    """A binary stream whose first bytes were read ahead (to tell what a file holds) and are served
    again: ``read`` and ``readline`` as on the stream, no copies of what remains of the head."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream = stream
        self.head = stream.read(size) or b""
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        head, at = self.head, self._at
        if at >= len(head):
            return self._stream.read(size)
        end = len(head) if size < 0 else min(len(head), at + size)
        self._at = end
        out = head[at:end]
        if size < 0:
            return out + self._stream.read()
        return out

    def readline(self, size: int = -1) -> bytes:
        head, at = self.head, self._at
        if at >= len(head):
            return self._stream.readline(size)
        nl = head.find(b"\n", at)
        end = len(head) if nl < 0 else nl + 1
        if size >= 0:
            end = min(end, at + size)
        self._at = end
        out = head[at:end]
        if end == len(head) and not out.endswith(b"\n") and (size < 0 or len(out) < size):
            out += self._stream.readline(size - len(out) if size >= 0 else -1)  # the line goes on after the head
        return out


def limit_options(p: Any) -> None:
    """``--max-bytes`` / ``--max-depth``: the API's limits (agentmsg.limits) for one run of a command."""
    p.add_argument(
        "--max-bytes",
        type=whole_number("--max-bytes"),
        metavar="N",
        help=f"largest document or JSON Lines record, in bytes (default: agentmsg.limits, {limits.max_bytes})",
    )
    p.add_argument(
        "--max-depth",
        type=whole_number("--max-depth", 254),
        metavar="N",
        help=f"deepest nesting of arrays and objects, 1-254 (default: agentmsg.limits, {limits.max_depth})",
    )


@contextlib.contextmanager
def command_limits(args: Any) -> Iterator[None]:
    """The limits ``--max-bytes`` / ``--max-depth`` ask for, while the command runs (restored after, so
    that ``main()`` called in-process leaves ``agentmsg.limits`` as it was)."""
    saved = limits.max_bytes, limits.max_depth
    try:
        if args.max_bytes is not None:
            limits.max_bytes = args.max_bytes
        if args.max_depth is not None:
            limits.max_depth = args.max_depth
        yield
    finally:
        limits.max_bytes, limits.max_depth = saved


def whole_number(name: str, maximum: int | None = None, minimum: int = 1) -> Any:
    """An argparse type: a whole number from ``minimum`` (1) to ``maximum``; anything else is a usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
            raise argparse.ArgumentTypeError(f"{name} must be {bound}, got {value}")
        return value

    return parse


def seconds(name: str) -> Any:
    """An argparse type: a number of seconds above 0."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number of seconds, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{name} must be above 0, got {text}")
        return value

    return parse


def print_problems(where: str, prefix: str, problems: Iterable[Problem], out: TextIO, *, note: bool = False) -> int:
    """One ``FILE:POINTER: message [rule]`` line per problem (``FILE: message [rule]`` for the whole
    instance; ``note: `` before the message for notes); returns how many were printed."""
    n = 0
    head = "note: " if note else ""
    for p in problems:
        pointer = prefix + p.pointer
        where_at = f"{where}:{pointer}" if pointer else where
        out.write(f"{where_at}: {head}{p.message} [{p.rule}]\n")
        n += 1
    return n


def say(where: str, e: dict[str, Any], err: TextIO) -> int:
    """One line on ``err`` for what a provider parser said in a CUSTOM event (a problem, an error, data not
    kept); the exit status it calls for: :data:`EXIT_INVALID` for an error or a problem of the input, :data:`EXIT_ARGUMENTS` for a
    problem of a tool call's arguments as the provider gave them (its value names the call: ``toolCallId``),
    :data:`EXIT_OK` for a note."""
    name, value = e.get("name"), e.get("value")
    if name not in (PROBLEM_EVENT, ERROR_EVENT, NOT_KEPT_EVENT) or not isinstance(value, dict):
        return EXIT_OK
    source = e.get("source")
    head = f"{where}: {source}: " if source else f"{where}: "
    if name == ERROR_EVENT:
        err.write(f"{head}error: {value.get('message')} [{value.get('type')}]\n")
        return EXIT_INVALID
    if name == NOT_KEPT_EVENT:
        err.write(f"{head}note: {value.get('message')} [not-kept]\n")
        return EXIT_OK
    err.write(f"{head}{value.get('message')} [{value.get('rule')}]\n")
    return EXIT_ARGUMENTS if "toolCallId" in value else EXIT_INVALID


_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"


def _too_big() -> Problem:
    return Problem(
        "", "max-bytes", f"larger than the limit of {limits.max_bytes} bytes (limits.max_bytes): not read whole"
    )


def _parse(text: bytes, kind: str) -> tuple[Any, Problem | None]:
    try:
        return loads(text, kind), None
    except ValidationError as exc:
        return None, exc.problems[0]


def _skip_line(stream: Readable) -> None:
    """Read and drop the rest of a line (bounded memory)."""
    while True:
        chunk = stream.readline(_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def _read_line(stream: Readable, limit: int, first: bytes = b"", *, drain: bool = True) -> bytes | None:
    """One line (through its newline, or to the end of the input), read in chunks after ``first``; None when it
    is longer than ``limit`` bytes: at most ``limit`` + one chunk was held, and with ``drain`` the rest of the
    line is read and dropped (bounded memory), so that the next call reads the next line."""
    parts = [first] if first else []
    size = len(first)
    if first.endswith(b"\n"):
        return first if size <= limit else None
    while True:
        chunk = stream.readline(_CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            parts.clear()
            if drain and not chunk.endswith(b"\n"):
                _skip_line(stream)
            return None
        parts.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(parts)


def _read_rest(stream: Readable, limit: int) -> bytes:
    """The rest of the input in chunks, at most ``limit`` + 1 bytes."""
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


#: (pointer prefix, instance, problem, line): ``line`` is the file's line (1-based) where the instance starts, when
#: it is known (a JSON Lines record, a one-line document, a document that is no JSON at all), else None
Record = tuple[str, Any, Problem | None, int | None]

_AT = re.compile(r"line (\d+) column (\d+) \(char \d+\)")


def _relocate(problem: Problem | None, line: int) -> tuple[Problem | None, int]:
    """A parse problem of text starting at the file's line ``line``: the position the parser gives (``line L
    column C (char K)``, counted from the start of that text) made the file's (``line N column C``), and that
    line (``line`` when the problem says none)."""
    if problem is None:
        return None, line
    found = _AT.search(problem.message)
    if found is None:
        return problem, line
    at = line + int(found[1]) - 1
    message = problem.message[: found.start()] + f"line {at} column {found[2]}" + problem.message[found.end() :]
    return Problem(problem.pointer, problem.rule, message), at


def records(stream: Readable, kind: str) -> Iterator[tuple[str, Any, Problem | None]]:
    """(pointer prefix, instance, problem) for each instance of a file: :func:`numbered_records` without the
    line."""
    for prefix, instance, problem, _ in numbered_records(stream, kind):
        yield prefix, instance, problem


def numbered_records(stream: Readable, kind: str) -> Iterator[Record]:
    """(pointer prefix, instance, problem, line) for each instance of a file: one JSON value, an array (each item
    an instance, prefix ``/N``) or JSON Lines (each non-blank line, prefix ``/N``). Reads in bounded memory: a
    document is read up to ``limits.max_bytes`` + 1 bytes, JSON Lines one line at a time; a record beyond the
    limit gives ``max-bytes`` without being read whole. Parse problems carry the API's rules (``json``,
    ``max-bytes``, ``max-depth``, ``integer-range``, ``lone-surrogate``), and the position they give is the
    file's (a JSON Lines record's error is on its own line of the file, not on "line 1")."""
    max_bytes = limits.max_bytes
    blank = 0  # bytes of leading blank lines (part of a document)
    at = 1  # the line the first value starts on
    chunk = stream.readline(_CHUNK)
    if chunk.startswith(_BOM):
        chunk = chunk[len(_BOM) :]
    while chunk and not chunk.strip() and chunk.endswith(b"\n") and blank <= max_bytes:
        blank += len(chunk)
        at += 1
        chunk = stream.readline(_CHUNK)
    head = chunk.lstrip()
    if not head or head[:1] not in b'{["-0123456789tfn':
        # Not the start of any JSON value (binary data, /dev/zero, an empty file): read no further.
        shown = f"it starts with {head[:1]!r}" if head else "there is no JSON value"
        yield "", None, Problem("", "json", f"not valid JSON: {shown}"), at if head else None
        return
    line = _read_line(stream, max_bytes - blank, chunk, drain=False)
    if line is None:  # one line beyond the limit: document or record, it cannot be taken
        yield "", None, _too_big(), at
        return
    first = line
    if first.endswith(b"\n"):
        value, problem = _parse(first, kind)
        if problem is None:
            # The first line is a whole value: JSON Lines when another non-blank line follows.
            nxt, nxt_at = _read_line(stream, max_bytes), at + 1
            while nxt is not None and nxt.endswith(b"\n") and not nxt.strip():
                nxt, nxt_at = _read_line(stream, max_bytes), nxt_at + 1
            if nxt is None or nxt.strip():
                yield from _jsonl(stream, kind, (value, at), (nxt, nxt_at))
            else:
                yield from _items(value, at, one_line=True)
            return
        if problem.rule != "json":
            yield "", None, problem, at
            return
        yield from _document_or_jsonl(stream, kind, first, at, blank)
        return
    text = first  # the whole input is one line (or lines ended by CR alone)
    if len(text) + blank > max_bytes:
        yield "", None, _too_big(), at
        return
    value, problem = _parse(text, kind)
    if problem is None:
        yield from _items(value, at, one_line=b"\n" not in text.rstrip())
        return
    # Lines ended by CR alone: JSON Lines whose first line is broken when most of the next lines are JSON objects
    # or arrays on their own (see _document_or_jsonl).
    numbered = _nonblank_lines(text, at)
    head_lines = list(itertools.islice(numbered, _SAMPLE + 1))
    alone = sum(1 for _, line in head_lines[1:] if _alone(line, kind))
    if problem.rule != "json" or alone == 0 or 2 * alone < len(head_lines) - 1:
        yield ("", None, *_relocate(problem, at))
        return
    for index, (line_at, line) in enumerate(itertools.chain(head_lines, numbered)):
        value, problem = _parse(line, kind)
        yield f"/{index}", value, _relocate(problem, line_at)[0], line_at


_SAMPLE = 100  # lines looked at to tell JSON Lines with a broken first line from a broken document


def _alone(line: bytes, kind: str) -> bool:
    """Whether a line is a JSON object or array on its own."""
    return line.lstrip()[:1] in b"{[" and _parse(line, kind)[1] is None


def _document_or_jsonl(stream: Readable, kind: str, first: bytes, at: int, blank: int) -> Iterator[Record]:
    """The instances of a file whose first line (``first``, on line ``at``) is no JSON value: a document over
    several lines (a pretty-printed one), or JSON Lines whose first record is broken. Told apart by the next
    (up to ``_SAMPLE``) non-blank lines: JSON Lines when most of them are JSON objects or arrays on their own.
    No line of a valid document over several lines can be so (each is followed by a line starting with ``,``
    ``]`` or ``}``, or closes what the first line opened), so a valid document is never taken for JSON Lines,
    and one with a mistake (a missing comma) is one problem at its place rather than one per line. JSON Lines
    are then read on line by line (bounded memory, any size), a document within ``limits.max_bytes``."""
    max_bytes = limits.max_bytes
    held: list[bytes] = []  # every line read after the first, blank ones included (the document's text)
    size = blank + len(first)
    sample: list[tuple[int, bytes]] = []  # the non-blank ones, with their line numbers
    line_at = at
    too_long = False
    while len(sample) < _SAMPLE and size <= max_bytes:
        line = _read_line(stream, max_bytes)
        line_at += 1
        if line is None:  # a line beyond the limit (read and dropped): no record nor document can take it whole
            too_long = True
            break
        if not line:
            break
        held.append(line)
        size += len(line)
        if line.strip():
            sample.append((line_at, line))
    if 2 * sum(1 for _, line in sample if _alone(line, kind)) > len(sample):
        held.clear()
        problem = _parse(first.rstrip(b"\r\n"), kind)[1]
        yield ("/0", None, *_relocate(problem, at))
        for index, (record_at, line) in enumerate(sample, 1):
            value, problem = _parse(line, kind)
            if problem is not None and problem.rule == "json":
                problem = _parse(line.rstrip(b"\r\n"), kind)[1] or problem
            yield f"/{index}", value, _relocate(problem, record_at)[0], record_at
        index = len(sample) + 1
        if too_long:
            yield f"/{index}", None, _too_big(), line_at
            index += 1
        yield from _jsonl_rest(stream, kind, index, _read_line(stream, max_bytes), line_at + 1)
        return
    if too_long or size > max_bytes:
        yield "", None, _too_big(), at
        return
    text = first + b"".join(held) + _read_rest(stream, max_bytes - size)
    held.clear()
    if len(text) + blank > max_bytes:
        yield "", None, _too_big(), at
        return
    value, problem = _parse(text, kind)
    if problem is None:
        yield from _items(value, at, one_line=False)
    else:
        yield ("", None, *_relocate(problem, at))


def _nonblank_lines(text: bytes, at: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each non-blank line of ``text`` (a line ends at LF; one holding lone CRs counts as
    several, as ``bytes.splitlines`` has it), without a copy of the text in a list."""
    start = 0
    while start < len(text):
        end = text.find(b"\n", start)
        end = len(text) if end < 0 else end
        for part in text[start:end].splitlines():
            if part.strip():
                yield at, part
        start, at = end + 1, at + 1


def _items(value: Any, at: int, *, one_line: bool) -> Iterator[Record]:
    """The instances of a document starting on line ``at``: itself, or its items (their line known only when the
    document is one line)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield f"/{index}", item, None, at if one_line else None
    else:
        yield "", value, None, at


def _jsonl(stream: Readable, kind: str, first: tuple[Any, int], second: tuple[bytes | None, int]) -> Iterator[Record]:
    yield "/0", first[0], None, first[1]
    yield from _jsonl_rest(stream, kind, 1, *second)


def _jsonl_rest(stream: Readable, kind: str, index: int, line: bytes | None, at: int) -> Iterator[Record]:
    """JSON Lines records from ``line`` (read already, on line ``at``; None when it was beyond the limit) on,
    the first of them instance ``index``."""
    max_bytes = limits.max_bytes
    while True:
        if line is None:  # longer than the limit (and dropped)
            yield f"/{index}", None, _too_big(), at
            index += 1
        elif not line:
            return
        elif line.strip():
            value, problem = _parse(line, kind)
            if problem is not None and problem.rule == "json":  # its position on this line, not after its newline
                problem = _parse(line.rstrip(b"\r\n"), kind)[1] or problem
            yield f"/{index}", value, _relocate(problem, at)[0], at
            index += 1
        line, at = _read_line(stream, max_bytes), at + 1


# ---- what an input holds, told from its first bytes (events, reduce, serve, parse) ----

_EVENT_TYPE = re.compile(rb'"type"\s*:\s*"[A-Z][A-Z_]+"')
_ROLE = re.compile(rb'"role"\s*:\s*"[A-Za-z]+"')


def is_sse(head: bytes) -> bool:
    """Whether input that starts with ``head`` is SSE (text/event-stream), as the event readers tell it
    (``agentmsg.events.sniff_format``), however many blanks the head holds before its first field."""
    return sniff_format(head.removeprefix(_BOM).lstrip(b" \t\r\n")) == "sse"


def looks_like(head: bytes) -> str | None:
    """ "events" or "messages" when the start of a file clearly holds one of them, else None."""
    text = head.removeprefix(_BOM).lstrip()
    if is_sse(text) or _EVENT_TYPE.search(text):
        return "events"
    if text[:1] in (b"{", b"[") and _ROLE.search(text):
        return "messages"
    return None


def binary(head: bytes) -> str | None:
    """What shows that input starting with ``head`` is binary data, not text (JSON lines, SSE, a JSON array):
    a NUL byte (JSON and SSE text never hold one) or mostly bytes that are not text; None when it is text or
    starts as events do. A text file that does not start with an event (a log line first) is not refused: its
    bad lines are said one by one, its events reduced."""
    text = head.removeprefix(_BOM).lstrip()
    if not text or text[:1] in b"{[" or sniff_format(text) in ("sse", None):  # (None: the start of an SSE field)
        return None
    shown = f"it starts with {text[:8]!r}"
    if b"\x00" in text:
        return f"binary data ({shown}, a NUL byte at byte {head.index(0)})"
    decoded = text.decode("utf-8", "replace")
    odd = sum(1 for c in decoded if c == "\ufffd" or (c < " " and c not in "\t\n\r\f\v"))
    return f"binary data ({shown})" if odd * 8 > len(decoded) else None
