"""What the commands share: exit codes, usage errors, opening and reading inputs, telling what they hold,
printing problems. (The records of a JSON or JSON Lines file are read by ``agentmsg.read_records``.)"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, Final, TextIO, TypeVar, overload

from agentmsg import Limits, limits
from agentmsg.errors import Problem, SizeLimitError, escaped, one_line, short_repr

T = TypeVar("T")

#: bytes read at a time from an input the commands read as it comes (events, a provider's stream)
CHUNK = 1 << 17
#: the UTF-8 byte-order mark: skipped at the start of an input (the library's readers skip it too; docs/wire-format.md)
BOM = b"\xef\xbb\xbf"
#: the longest message, pointer or value a command prints in one line (longer: cut, with its length said)
TEXT_LIMIT = 160
#: the longest JSON pointer a problem's line shows (``FILE:POINTER: message``, a GitHub annotation's text)
POINTER_LIMIT = 80

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
    reported as :data:`EMPTY_INPUT`), never the same input again."""
    where = [what for what, path in given if path == "-"]
    if len(where) > 1:
        raise UsageError(f"'-' (stdin) given {len(where)} times ({', '.join(where)}): stdin can be read only once")


def shown_path(path: str) -> str:
    """A file name as a command shows it: bytes that are not UTF-8 (a name Python holds with surrogate escapes)
    as ``\\xNN``, which any output can write (JSON cannot hold them, nor a UTF-8 stdout or stderr without
    surrogateescape: PYTHONIOENCODING=utf-8)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if path != "-" else path


def said_path(path: str) -> str:
    """A file name as a command prints it to the terminal (its messages, its text reports): :func:`shown_path`'s,
    with control characters (ESC, CR, a newline: a hostile directory's) escaped as :func:`one_line` escapes them,
    so that a name cannot split a line nor drive the terminal. Machine output (JSON, SARIF, JUnit) keeps
    :func:`shown_path`'s: its own escaping holds them. A name that begins with ``::`` is shown as ``./::...`` (the
    same file): a line of text output begins with the name, and a GitHub Actions step's log runs a line that
    begins with ``::`` as a workflow command (``::error file=...::``, ``::add-mask::``, ``::stop-commands::``)."""
    return said_name(shown_path(path))


def said_name(where: str) -> str:
    """A file name already shown (:func:`shown_path`) as a line of text output begins with it: its control characters
    escaped (:func:`one_line`), ``./`` before one that begins with ``::`` (see :func:`said_path`)."""
    said = one_line(where)
    # (GitHub's runner strips a line's leading whitespace before it looks for "::")
    return "./" + said if said.lstrip().startswith("::") else said


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to the output file ``path`` (``-o``, ``--out``) atomically: into a temporary file in the same
    directory, then ``os.replace`` onto ``path``, so that a reader sees the old file or the new one, never a part;
    on any error (a full disk, Ctrl-C) the old file is untouched and the temporary one removed. The new file
    keeps the old one's permissions (a new one: 0666 less the umask, as ``open`` makes it). A symbolic link is
    written through, as ``open`` writes it: the file it names is replaced and the link stays a link. A path that
    is no regular file (``/dev/stdout``, a FIFO) is written as it is: it cannot be replaced. An error is a
    :class:`UsageError` (``cannot write``)."""
    try:
        try:
            old = os.stat(path)
        except FileNotFoundError:
            old = None
        if old is not None and not stat.S_ISREG(old.st_mode):
            with open(path, "wb") as f:
                f.write(data)
            return
        target = os.path.realpath(path)  # (a link: the file it names, or would name, in its own folder)
        folder, name = os.path.split(target)
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            if old is not None:
                mode = stat.S_IMODE(old.st_mode)
            else:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise UsageError(f"{said_path(path)}: cannot write: {exc.strerror or exc}") from None


def read_bytes(path: str) -> bytes:
    """The whole content of a file, or of stdin for ``-``, read in bounded memory: more than
    ``limits.max_bytes`` raises :class:`~agentmsg.SizeLimitError` (rule ``max-bytes``) without reading on."""
    whole = read_bytes_or_chunks(path, None)
    assert isinstance(whole, bytes)
    return whole


def _regular(stream: IO[bytes]) -> bool:
    """Whether ``stream`` is a regular file (one too long to be read as a stream is read whole, refused at its
    limit)."""
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def read_bytes_or_chunks(path: str, streams: Callable[[bytes], bool] | None) -> bytes | Iterator[bytes]:
    """What :func:`read_bytes` reads, whole; or, for a regular file of at most ``limits.max_bytes`` whose start
    (its first :data:`CHUNK` bytes) ``streams`` takes for a stream, its chunks (that start first) as they are read,
    so that a stream reader holds none of it whole (``agentmsg parse`` of a 32 MiB SSE body saved without
    ``--stream`` held all of it while it was read). A file that grows past the limit as it is read raises
    :class:`~agentmsg.SizeLimitError` when it does. Anything else (stdin from a pipe, a FIFO) whose first line,
    as it arrives, ``streams`` takes for a stream: its chunks as they arrive (``curl ... | agentmsg parse``: a
    Ctrl-C keeps what came, where the whole input was waited for); else it is read whole."""
    stream = open_binary(path)
    chunked = False
    try:
        try:
            info = os.fstat(stream.fileno())
            sized = stat.S_ISREG(info.st_mode) and info.st_size <= limits.max_bytes
            start = stream.tell() if sized and streams is not None else None
        except (OSError, ValueError, AttributeError):  # (no file descriptor: a stream in memory)
            start = None
        if start is not None:
            head = stream.read(CHUNK)
            if head and streams is not None and streams(head):
                chunked = True
                return _chunks_at_most(path, stream, head)
            stream.seek(start)  # (read again in one piece: the head joined to the rest would be a copy of all)
        elif streams is not None and hasattr(stream, "read1") and not _regular(stream):
            # A pipe (``curl ... | agentmsg parse``): its first line as it comes tells a stream, read as it arrives
            # (a Ctrl-C then keeps what came); anything else is read whole, that line first
            head = _first_line(stream)
            if head and streams(head):
                chunked = True
                return _chunks_at_most(path, stream, head, stream.read1)
            data = head + _read_at_most(stream, limits.max_bytes + 1 - len(head))
            if len(data) > limits.max_bytes:
                raise SizeLimitError([_too_big()])
            return data
        data = _read_at_most(stream, limits.max_bytes + 1)
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    finally:
        if path != "-" and not chunked:  # (a file of ours; not stdin, which may even be closed: None)
            stream.close()
    if len(data) > limits.max_bytes:
        raise SizeLimitError([_too_big()])
    return data


def _first_line(stream: IO[bytes]) -> bytes:
    """A pipe's bytes, as they arrive (``read1``: no wait for more than is there), up to the end of the body's first
    line that is not blank, past any HTTP response heads (``curl -i``): what tells an SSE stream from a whole body
    (:func:`~agentmsg._wire.framing.is_sse_body`); or to :data:`CHUNK` bytes, or the end, whichever comes first.
    Whether the start is told is looked at on a piece holding a line end, :data:`_LOOKS` times at most (each look
    reads the bytes so far: a producer writing a line end at a time then costs no more than that many passes)."""
    head = bytearray()
    read1 = stream.read1  # type: ignore[attr-defined]
    looks = 0
    while len(head) < CHUNK and (piece := read1(CHUNK - len(head))):
        head += piece
        if looks < _LOOKS and (b"\n" in piece or b"\r" in piece):
            looks += 1
            if _told(bytes(head)):
                break
    return bytes(head)


#: how many times :func:`_first_line` looks at the bytes so far
_LOOKS: Final = 64


def _told(head: bytes) -> bool:
    """Whether ``head`` holds a whole first line of its body that is not blank, past any whole HTTP heads."""
    from agentmsg.providers import without_http_heads  # (here: every command imports this module)

    body, _ = without_http_heads(head)
    start = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start[:5] == b"HTTP/":  # (a head not ended yet: its blank line is to come)
        return False
    return b"\n" in start or b"\r" in start


def _chunks_at_most(
    path: str, stream: IO[bytes], head: bytes, read: Callable[[int], bytes] | None = None
) -> Iterator[bytes]:
    """``head``, then the rest of ``stream`` in chunks of :data:`CHUNK` bytes (``read``: of at most that, as they
    arrive: a pipe's ``read1``), to at most ``limits.max_bytes`` in all (more raises
    :class:`~agentmsg.SizeLimitError`); the stream is closed at the end (not stdin)."""
    read = read or stream.read
    try:
        left = limits.max_bytes - len(head)
        yield head
        while chunk := read(CHUNK):
            left -= len(chunk)
            if left < 0:
                raise SizeLimitError([_too_big()])
            yield chunk
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    finally:
        if path != "-":
            stream.close()


def _read_at_most(stream: IO[bytes], size: int) -> bytes:
    """At most ``size`` bytes of ``stream``, to its end. One ``read(size)`` would reserve ``size`` bytes whatever
    the stream holds (``--max-bytes 100000000000``: a MemoryError on a file of 300 bytes): a regular file is read
    in one read of its size (and on, should it have grown), anything else a piece at a time."""
    try:
        known = os.fstat(stream.fileno()).st_size
    except (OSError, ValueError, AttributeError):  # (no file descriptor: a stream in memory)
        known = 0
    pieces: list[bytes] = []
    left = size
    step = min(left, known + 1) if known else min(left, 1 << 20)
    while left > 0:
        piece = stream.read(step)
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
        step = min(left, 1 << 20)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


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
        if path != "-":  # (a file of ours; not stdin, which may even be closed: None)
            stream.close()


def open_binary(path: str, *, file_only: bool = False) -> IO[bytes]:
    """A binary stream for a file, or stdin for ``-`` (the caller closes files, not stdin). ``file_only``: a
    regular file or a :class:`UsageError`, never waiting to open (a path found a file, then replaced by a named
    pipe, would wait for a writer)."""
    if path == "-":
        if sys.stdin is None:  # started with `<&-`: Python sets it to None
            raise UsageError("-: cannot read: the standard input is closed")
        return sys.stdin.buffer
    try:
        if not file_only:
            return open(path, "rb")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UsageError(f"{shown_path(path)}: cannot read: no longer a file (it changed after it was found)")
            return os.fdopen(fd, "rb")  # (O_NONBLOCK does nothing to a file's reads)
        except BaseException:
            os.close(fd)
            raise
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


def limit_options(p: Any) -> None:
    """``--max-bytes`` / ``--max-depth``: the API's limits (agentmsg.limits) for one run of a command, each in the
    range agentmsg.limits takes (outside it: a usage error)."""
    p.add_argument(
        "--max-bytes",
        type=whole_number("--max-bytes", Limits.MOST),
        metavar="N",
        help=f"largest document or JSON Lines record, in bytes (default: agentmsg.limits, {limits.max_bytes})",
    )
    p.add_argument(
        "--max-depth",
        type=whole_number("--max-depth", Limits.MOST_DEPTH),
        metavar="N",
        help=f"deepest nesting of arrays and objects, 1-{Limits.MOST_DEPTH} (default: agentmsg.limits, {limits.max_depth})",
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


def think_tags_options(p: Any) -> None:
    """``--think-tags`` / ``--think-tags-open``: the parser option ``think_tags`` (True, ``"open"``; default False)."""
    think = p.add_mutually_exclusive_group()
    think.add_argument(
        "--think-tags",
        dest="think_tags",
        action="store_const",
        const=True,
        default=False,
        help="read <think>...</think> in the reply's text as reasoning (reasoning models on compatible servers)",
    )
    think.add_argument(
        "--think-tags-open",
        dest="think_tags",
        action="store_const",
        const="open",
        help="the same, for a template that puts <think> in the prompt (the reply only closes it)",
    )


#: What int() reads as an integer (a sign, digits with single underscores between, blanks around)
_INTEGER = re.compile(r"\s*[+-]?\d+(?:_\d+)*\s*")


def whole_number(name: str, maximum: int | None = None, minimum: int = 1) -> Any:
    """An argparse type: a whole number from ``minimum`` (1) to ``maximum``; anything else is a usage error."""

    bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            if _INTEGER.fullmatch(text):  # (past the interpreter's digit limit for int(): a whole number still)
                digits = sum(c.isdigit() for c in text)
                raise argparse.ArgumentTypeError(
                    f"{name} is out of range: must be {bound}, got {short_repr(text)} ({digits:,} digits)"
                ) from None
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {short_repr(text)}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{name} is out of range: must be {bound}, got {short_repr(value)}")
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


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` as part of one short output line: line breaks and other control characters escaped (a line is one
    line), and when that is longer than ``limit`` characters, as many of its first characters as fit, then how many
    were shown of how many the text has (``... (first K of N characters)``, counted in ``text``, not in its escapes;
    an escape is never cut), so that a long value (a vector of 4,000 numbers, a string of megabytes) does not
    become an unreadable line. The whole is at most ``limit`` characters."""
    shown = one_line(text)
    if len(shown) <= limit:
        return shown
    room = max(0, limit - len(f"... (first {limit:,} of {len(text):,} characters)"))
    head: list[str] = []
    used = 0
    for c in text:
        piece = escaped(c)
        if used + len(piece) > room:
            break
        head.append(piece)
        used += len(piece)
    return f"{''.join(head)}... (first {len(head):,} of {len(text):,} characters)"


def write_json_line(out: TextIO, data: bytes) -> None:
    """One JSON line, ``data`` (UTF-8, as ``to_json_bytes`` writes it), on ``out``: to its byte buffer where it has
    one that writes UTF-8 (stdout), not decoded to text and encoded back. ``out.write(msg.to_json() + "\n")`` held a
    message's JSON three times over (its bytes, their text, the text with its newline, then the bytes written):
    ``agentmsg parse`` of a reply that keeps 29 MB of text peaked 60 MB above the message while writing it."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is not None and isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8":
        out.flush()  # (what was written as text goes first)
        buffer.write(data)
        buffer.write(b"\n")
        if getattr(out, "line_buffering", False):  # (python -u: each line as it is written)
            buffer.flush()
        return
    out.write(data.decode())
    out.write("\n")


def print_problems(where: str, prefix: str, problems: Iterable[Problem], out: TextIO, *, note: bool = False) -> int:
    """One ``FILE:POINTER: message [rule]`` line per problem (``FILE: message [rule]`` for the whole
    instance; ``note: `` before the message for notes); returns how many were printed."""
    n = 0
    head = "note: " if note else ""
    where = said_name(where)  # (a file's name as shown: its control characters escaped, as said_path does)
    for p in problems:
        pointer = clip(prefix + p.pointer, POINTER_LIMIT)
        where_at = f"{where}:{pointer}" if pointer else where
        out.write(f"{where_at}: {head}{clip(p.message)} [{p.rule}]\n")
        n += 1
    return n


def say(where: str, e: dict[str, Any], err: TextIO) -> int:
    """One line on ``err`` for what a provider parser said in a CUSTOM event (a problem, an error, data not
    kept); the exit status it calls for: :data:`EXIT_INVALID` for an error or a problem of the input, :data:`EXIT_ARGUMENTS` for a
    problem of a tool call's arguments as the provider gave them (its value names the call: ``toolCallId``),
    :data:`EXIT_OK` for a note."""
    from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT  # (the CLI's start imports no events)

    name, value = e.get("name"), e.get("value")
    if name not in (PROBLEM_EVENT, ERROR_EVENT, NOT_KEPT_EVENT) or not isinstance(value, dict):
        return EXIT_OK
    source = e.get("source")
    where = said_name(where)
    head = f"{where}: {one_line(str(source))}: " if source else f"{where}: "
    if name == ERROR_EVENT:
        err.write(f"{head}error: {clip(str(value.get('message')))} [{value.get('type')}]\n")
        return EXIT_INVALID
    if name == NOT_KEPT_EVENT:
        err.write(f"{head}note: {clip(str(value.get('message')))} [not-kept]\n")
        return EXIT_OK
    err.write(f"{head}{clip(str(value.get('message')))} [{value.get('rule')}]\n")
    return EXIT_ARGUMENTS if "toolCallId" in value else EXIT_INVALID


#: what JSON (and JSON lines, SSE) skips between values: an input of nothing else is empty
BLANKS = b" \t\r\n"


_NOT_BLANK = re.compile(b"[^" + re.escape(BLANKS) + b"]")


def blank(data: bytes) -> bool:
    """Whether ``data`` holds nothing but blanks (:data:`BLANKS`), after a leading BOM. Looked for in place: a whole
    input is not copied to be told empty (``strip`` copied a 32 MiB stream, twice its bytes held at once)."""
    return _NOT_BLANK.search(data, len(BOM) if data.startswith(BOM) else 0) is None


def first_line_reads(data: bytes) -> bool:
    """Whether ``data``, read as JSON Lines (``agentmsg.read_records``: lines end at LF, a CR alone ends none), has
    a line after its first and a first line that is a JSON value on its own: else its records are the one
    document, or a first record that cannot be read, and a reader that wants JSON Lines whose records read gets
    nothing from reading it again (a document over many lines that is no JSON was read whole once more, 64 MB or
    not). Looked for in place, as :func:`blank` looks; the first line alone is decoded."""
    start = _NOT_BLANK.search(data, len(BOM) if data.startswith(BOM) else 0)
    if start is None:
        return False
    end = data.find(b"\n", start.start())
    if end < 0 or _NOT_BLANK.search(data, end) is None:
        return False
    import msgspec

    try:
        msgspec.json.decode(data[start.start() : end])  # (the decoder agentmsg's readers read JSON with)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


#: what every command says of an input with nothing to read, a file or stdin of no bytes or only blanks (rule
#: ``empty``, exit 1; ``serve``, which refuses it before serving, says the same words as a usage error, exit 2)
EMPTY_INPUT = Problem("", "empty", "the input is empty (no bytes, or only blanks): nothing to read")


def empty_input(data: bytes) -> Problem | None:
    """:data:`EMPTY_INPUT` when ``data`` (the whole input, or all of it there is) holds nothing but blanks; None
    when it holds something (what it holds is then said by the command's reader)."""
    return EMPTY_INPUT if blank(data) else None


def said_empty(head: bytes, problem: Problem, line: int | None) -> Problem:
    """A record problem of ``agentmsg.read_records`` as a command that reads records (validate, events) says it:
    :data:`EMPTY_INPUT` where it means the input held nothing but blanks, however many (the reader says such an
    input "no JSON value" at no line, having read it to its end or to ``limits.max_bytes``; ``head``, the input's
    start the command peeked at, is blank); any other problem as it is."""
    return EMPTY_INPUT if line is None and problem.rule == "json" and blank(head) else problem


class Emptiness:
    """Whether an input read in chunks (as it comes) was empty, as :func:`empty_input` tells a whole input: pass
    its chunks :meth:`through` it, then ask :attr:`problem` at the end."""

    def __init__(self) -> None:
        self._blank = True

    def through(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            if self._blank and not blank(chunk):
                self._blank = False
            yield chunk

    @property
    def problem(self) -> Problem | None:
        """:data:`EMPTY_INPUT` when every chunk so far was blank (or none came), else None."""
        return EMPTY_INPUT if self._blank else None


def _too_big() -> Problem:
    """What :func:`read_bytes` says of a file beyond the limit (as ``agentmsg.read_records`` says it)."""
    return Problem(
        "", "max-bytes", f"larger than the limit of {limits.max_bytes} bytes (limits.max_bytes): not read whole"
    )


# ---- what an input holds, told from its first bytes (events, reduce, serve, parse) ----

_ROLE = re.compile(rb'"role"\s*:\s*"[A-Za-z]+"')
_AGENTMSG_ROLE = re.compile(rb'"role"\s*:\s*"(?:USER|ASSISTANT|SYSTEM|TOOL)"')
#: a message AgentScope Python wrote (the readers read it: docs/wire-format.md): a lowercase role beside the time it
#: writes on every message, 1.x's ``timestamp`` or 2.x's ``created_at``, as text. No provider's reply in the registry
#: has both (where one says ``created_at`` it is a number), though a lenient reply reader takes such a message.
_AGENTSCOPE_PYTHON_ROLE = re.compile(rb'"role"\s*:\s*"(?:user|assistant|system)"')
_AGENTSCOPE_PYTHON_TIME = re.compile(rb'"(?:timestamp|created_at)"\s*:\s*"')


def is_sse(head: bytes) -> bool:
    """Whether input that starts with ``head`` is SSE (text/event-stream), as the event readers tell it
    (``agentmsg.events.sniff_format``), however many blanks the head holds before its first field."""
    from agentmsg.events import sniff_format

    return sniff_format(head.removeprefix(BOM).lstrip(b" \t\r\n")) == "sse"


def looks_like(head: bytes) -> str | None:
    """ "events" or "messages" when the start of a file clearly holds one of them, else None: the kind
    ``agentmsg validate`` tells (``agentmsg.iter_check(...).kind``, from the first instance's own keys, so that a
    message whose values hold an uppercase ``"type"``, a tool's input ``{"type": "PDF"}``, is no event), messages
    only where a role is seen."""
    from agentmsg import iter_check

    text = head.removeprefix(BOM).lstrip()
    with iter_check(text) as told:
        kind = told.kind
    if kind == "event":
        return "events"
    if kind in ("msg", "conversation") and text[:1] in (b"{", b"[") and _ROLE.search(text):
        return "messages"
    return None


def binary(head: bytes) -> str | None:
    """What shows that input starting with ``head`` is binary data, not text (JSON lines, SSE, a JSON array):
    a NUL byte (JSON and SSE text never hold one) or mostly bytes that are not text; None when it is text or
    starts as events do. A text file that does not start with an event (a log line first) is not refused: its
    bad lines are said one by one, its events reduced."""
    from agentmsg.events import sniff_format

    text = head.removeprefix(BOM).lstrip()
    if not text or text[:1] in b"{[" or sniff_format(text) in ("sse", None):  # (None: the start of an SSE field)
        return None
    shown = f"it starts with {text[:8]!r}"
    if b"\x00" in text:
        return f"binary data ({shown}, a NUL byte at byte {head.index(0)})"
    decoded = text.decode("utf-8", "replace")
    odd = sum(1 for c in decoded if c == "\ufffd" or (c < " " and c not in "\t\n\r\f\v"))
    return f"binary data ({shown})" if odd * 8 > len(decoded) else None


def reads_as(provider: str, data: bytes | Mapping[str, Any], *, stream: bool) -> bool:
    """Whether ``provider``'s reader takes ``data`` (a whole response, or the start of a stream) as its own: what
    the hints that name another provider (``try --provider X``, ``agentmsg parse --provider X``) are told by. A
    whole response may be given decoded (``decode_body``'s object), so that asking every provider
    about one body decodes it once."""
    from agentmsg.events import PROBLEM_EVENT
    from agentmsg.providers import get

    try:
        if not stream:
            get(provider).response_events(data)
            return True
        assert isinstance(data, bytes)  # (a stream's start is read as bytes)
        parser = get(provider).stream_parser()
        events = parser.feed(data) + parser.close()
    except (ValueError, TypeError, RecursionError):  # (ValidationError and orjson's errors are ValueErrors)
        return False
    # A stream reader skips what it cannot read: its start is the provider's when some part of the reply came
    # (a block, a tool call) and no payload was skipped (the start may be cut: the end of the stream is not asked).
    said = any(e.get("type") == "CUSTOM" and e.get("name") == PROBLEM_EVENT for e in events)
    return not said and any(e.get("type", "").startswith(_REPLY_PARTS) for e in events)


_REPLY_PARTS = ("TEXT_BLOCK_", "THINKING_BLOCK_", "TOOL_CALL_", "DATA_BLOCK_")


def foreign(e: dict[str, Any]) -> bool:
    """Whether a provider parser's event says the body held none of its payloads (another provider's stream)."""
    value = e.get("value")
    return e.get("type") == "CUSTOM" and isinstance(value, dict) and value.get("foreign") is True


class ProviderNames(Sequence[str]):
    """The registry's names (``agentmsg.providers.NAMES``) as an option's choices, read when argparse first
    checks or lists them: a command whose ``--provider`` is optional (validate) and not given does not import
    the providers."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        from agentmsg.providers import NAMES

        return NAMES[index]

    def __len__(self) -> int:
        from agentmsg.providers import NAMES

        return len(NAMES)


def reply_hint(head: bytes, *, whole: bool = True) -> str | None:
    """When ``head`` (a file's start: :func:`hint_head`) reads as a provider's reply or stream: the command that
    reads it. ``whole``: ``head`` is all of the input; a start that more follows is no whole reply (a first JSON
    line longer than a chunk, alone in the head, read as a reply: "read it with 'agentmsg parse'", without
    --stream, which refuses JSON lines), so it is asked about as a stream only."""
    from agentmsg.providers import NAMES

    if _AGENTMSG_ROLE.search(head):  # an agentmsg message (which a lenient stream reader might take)
        return None
    if _AGENTSCOPE_PYTHON_ROLE.search(head) and _AGENTSCOPE_PYTHON_TIME.search(head):  # AgentScope Python's message
        return None
    stream = not whole or is_sse(head) or head.removeprefix(BOM).lstrip()[:1] not in (b"{", b"[")
    names = [name for name in NAMES if reads_as(name, head, stream=stream)]
    if not names and not stream:
        stream, names = True, [name for name in NAMES if reads_as(name, head, stream=True)]
    if not names:
        return None
    flag = " --stream" if stream and not is_sse(head) else ""
    return f"it reads as a provider's {'stream' if stream else 'reply'}: read it with 'agentmsg parse --provider {'/'.join(names)}{flag}'"


#: the most of an input's start a hint is asked about (:func:`hint_head`, :class:`HintHead`): the end of the line its
#: first :data:`CHUNK` bytes end in is looked for this far (a longer line: its start, cut here)
HEAD_LIMIT = 16 * CHUNK


def hint_head(data: bytes, *, whole: bool = True) -> bytes:
    """The first :data:`CHUNK` bytes of ``data`` to the end of the line they end in (LF, where every reader of
    JSON lines ends one), :data:`HEAD_LIMIT` bytes at most: what every command's hint (:func:`reply_hint`, and
    ``agentmsg parse``'s) is asked about, whole lines and whole payloads, a line longer than a chunk to its end. A
    start cut where a read ended (inside a payload) read as nobody's reply: no hint. ``whole``: ``data`` is all of
    the input (not only its start), so its last line is whole too."""
    if whole and len(data) <= CHUNK:
        return data
    end = data.find(b"\n", CHUNK - 1, HEAD_LIMIT)
    return data[:HEAD_LIMIT] if end < 0 else data[: end + 1]


class HintHead:
    """An input's start as it is read, for the hint: pass its chunks :meth:`through` it (or read it through
    :meth:`reading`); :attr:`bytes` is then :func:`hint_head` of it. What is read is held until the line that byte
    :data:`CHUNK` is on has ended, :data:`HEAD_LIMIT` bytes at most (then nothing more)."""

    def __init__(self, first: bytes = b"") -> None:
        self._pieces: list[bytes] = []
        self._size = 0
        self.holding = True  # False once enough is held; while True, what is held is all that came
        self.add(first)

    def add(self, piece: bytes) -> None:
        """``piece``, the next bytes of the input, held while the head is not whole."""
        if self.holding and piece:
            # HEAD_LIMIT bytes at most: a long first line read whole (a readline) is not held whole
            self._pieces.append(piece if self._size + len(piece) <= HEAD_LIMIT else piece[: HEAD_LIMIT - self._size])
            start, self._size = self._size, self._size + len(piece)
            ended = self._size >= CHUNK and piece.find(b"\n", max(0, CHUNK - 1 - start)) >= 0
            self.holding = not ended and self._size < HEAD_LIMIT

    def through(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            if self.holding:
                self.add(chunk)
            yield chunk

    def reading(self, stream: IO[bytes]) -> _HeadReading:
        """``stream`` to be read (``read``, ``readline``) with what it gives held here."""
        return _HeadReading(stream, self)

    @property
    def bytes(self) -> bytes:
        return hint_head(b"".join(self._pieces), whole=self.holding)

    @property
    def whole(self) -> bool:
        """Whether :attr:`bytes` is all of the input (asked once all of it was read: all that came is held)."""
        return self.holding


class _HeadReading:
    """A binary stream read through a :class:`HintHead` (:meth:`HintHead.reading`); once the head is whole, its
    ``read`` and ``readline`` are the stream's own (nothing more to hold: no cost per line)."""

    def __init__(self, stream: IO[bytes], head: HintHead) -> None:
        self._stream = stream
        self._head = head

    def read(self, size: int = -1, /) -> bytes:
        data: bytes = self._stream.read(size)
        self._held(data)
        return data

    def readline(self, size: int = -1, /) -> bytes:
        data: bytes = self._stream.readline(size)
        self._held(data)
        return data

    def _held(self, data: bytes) -> None:
        self._head.add(data)
        if not self._head.holding:
            self.read = self._stream.read  # type: ignore[method-assign]
            self.readline = self._stream.readline  # type: ignore[method-assign]
