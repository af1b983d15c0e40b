"""JSON records out of a byte stream: a file of messages, events or blocks, as one JSON value, a JSON array or
JSON Lines, told apart by the file itself (:func:`read_records`, public as ``agentmsg.read_records``).

It reads in bounded memory, under :data:`agentmsg.limits`: JSON Lines one line at a time (a line beyond the
limit is dropped as it is read, never held whole), a document up to ``limits.max_bytes`` + 1 bytes (a JSON
array's items parsed one at a time: its text and one item's objects held). Each instance comes with its place
in the file (its pointer prefix and, where it is known, its line), and one that cannot be read with its
problem, in the API's rules; the other instances are read all the same. No schema knowledge: the values are
plain JSON.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from itertools import repeat
from typing import Any, NamedTuple, Protocol

import msgspec

from agentmsg._codec.jsontext import duplicate_keys, loads, parse_fast
from agentmsg._codec.limits import limits
from agentmsg._wire.sse import SSE_FIELDS, SSEDecoder, SSEEvent, _line_end
from agentmsg.errors import Problem, ValidationError, WrongTypeError

__all__ = ["Readable", "Record", "read_records", "read_sse"]


class Readable(Protocol):
    """What :func:`read_records` needs of a binary stream."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readline(self, size: int = -1, /) -> bytes: ...


_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"


def _too_big() -> Problem:
    return Problem(
        "", "max-bytes", f"larger than the limit of {limits.max_bytes} bytes (limits.max_bytes): not read whole"
    )


def _parse(text: bytes) -> tuple[Any, Problem | None]:
    try:
        return loads(text), None
    except ValidationError as exc:
        return None, exc.problems[0]


def _record(pointer: str, text: bytes, value: Any, line: int | None, unique_keys: bool) -> Record:
    """The record of an instance read from ``text`` whole (a JSON Lines record, a document of one instance): with
    ``unique_keys``, refused (no value) for the first key given twice in one of its objects."""
    if unique_keys:
        duplicates = duplicate_keys(text, value)
        if duplicates:
            return Record(pointer, None, _first(duplicates), line)
    return Record(pointer, value, None, line)


def _first(duplicates: list[Problem], prefix: str = "") -> Problem:
    """The problem of an instance with keys given twice (``duplicates``, their pointers under ``prefix``): the
    first, its pointer the instance's, saying how many more there are."""
    first = duplicates[0]
    more = f" (+{len(duplicates) - 1} more in this instance)" if len(duplicates) > 1 else ""
    return Problem(first.pointer[len(prefix) :], first.rule, first.message + more)


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


def _blank_run(stream: Readable, first: bytes, limit: int) -> bytes:
    """``first`` (blanks, no newline) and the chunks of its line after it while they are blank: through the first
    chunk that holds something else or ends the line, or to the end of the input, or past ``limit`` bytes."""
    parts = [first]
    size = len(first)
    while size <= limit:
        more = stream.readline(_CHUNK)
        if not more:
            break
        parts.append(more)
        size += len(more)
        if more.strip() or more.endswith(b"\n"):
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


class Record(NamedTuple):
    """One instance of a file, as :func:`read_records` reads it (its fields are described there)."""

    pointer: str
    value: Any
    problem: Problem | None
    line: int | None


_AT = re.compile(r"line (\d+) column (\d+) \(char \d+\)")
_BYTE = re.compile(r"at byte \d+")


def _relocate(problem: Problem | None, line: int, *, one_line: bool = False) -> tuple[Problem | None, int]:
    """A parse problem of text starting at the file's line ``line``: the position the parser gives (``line L
    column C (char K)``, counted from the start of that text) made the file's (``line N column C``), and that
    line (``line`` when the problem says none). In text that is ``one_line`` (a JSON Lines record), the byte
    where it stops being UTF-8 (``at byte K``, counted from the line's start) is said with its line too."""
    if problem is None:
        return None, line
    found = _AT.search(problem.message)
    if found is None:
        at_byte = _BYTE.search(problem.message) if one_line and problem.rule in ("utf-8", "lone-surrogate") else None
        if at_byte is not None:
            message = f"{problem.message[: at_byte.end()]} of line {line}{problem.message[at_byte.end() :]}"
            return Problem(problem.pointer, problem.rule, message), line
        return problem, line
    at = line + int(found[1]) - 1
    message = problem.message[: found.start()] + f"line {at} column {found[2]}" + problem.message[found.end() :]
    return Problem(problem.pointer, problem.rule, message), at


def read_records(source: bytes | Readable, *, unique_keys: bool = False) -> Iterator[Record]:
    """The instances of a file of JSON records, as they are read: named tuples ``(pointer, value, problem,
    line)``. The file is one JSON value (one instance), a JSON array (each item an instance) or JSON Lines
    (each non-blank line one; a line ends at LF, CRLF included, and a CR alone ends none, as the event reducer
    reads JSON Lines), told apart by the file itself. ``source``: the file's bytes, or a binary file
    (anything with ``read`` and ``readline``: ``open(path, "rb")``, ``sys.stdin.buffer``), read from where it is.

    ``pointer``: where the instance is in the file, the prefix of its problems' pointers: ``""`` for a file of
    one JSON value, ``/N`` for the N-th (0-based) item or line. ``value``: the parsed JSON (None when it could
    not be read). ``problem``: why it could not be read (an :class:`~agentmsg.Problem` with the API's rules:
    ``json``, ``max-bytes``, ``max-depth``, ``integer-range``, ``lone-surrogate``), else None. ``line``: the
    file's line (1-based) the instance starts on (an array's item: the line its first byte is on, found in time
    linear in the text); None only for a file with no value at all (empty, or blanks).

    Reads in bounded memory under :data:`agentmsg.limits`: a document up to ``limits.max_bytes`` + 1 bytes (an
    array's items parsed one at a time, never all at once), JSON Lines one line at a time; a document or record
    beyond the limit gives ``max-bytes`` without being read whole. A leading UTF-8 BOM is left out. What cannot
    be read is a record with a ``problem`` (the others are still read: a broken line of JSON Lines does not stop
    the next), and the position a syntax error gives is the file's (a JSON Lines record's is on its own line of
    the file, not on "line 1"). A key given twice in one
    object keeps its last value, as the JSON parsers keep it; ``unique_keys=True`` (what ``agentmsg validate``
    reads with) refuses the instance instead: problem ``duplicate-key``, pointed at the first such key (the
    object's pointer and the key), found in time linear in the text. The values are not
    checked against a schema: :func:`agentmsg.validate` or :meth:`agentmsg.Msg.from_dict` does that::

        for record in agentmsg.read_records(open("messages.jsonl", "rb")):
            if record.problem is not None:
                print(record.pointer, record.problem)
            else:
                msg = agentmsg.Msg.from_dict(record.value)
    """
    stream: Readable = io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else source
    if not callable(getattr(stream, "readline", None)):
        hint = ": JSON text is read as its UTF-8 bytes (text.encode())" if isinstance(source, str) else ""
        raise WrongTypeError.single(
            "", "type", f"expected bytes or a binary file to read records from, not {type(source).__name__}{hint}"
        )
    max_bytes = limits.max_bytes
    blank = 0  # bytes of leading blank lines (part of a document)
    at = 1  # the line the first value starts on
    chunk = stream.readline(_CHUNK)
    if chunk.startswith(_BOM):
        chunk = chunk[len(_BOM) :]
    while chunk and not chunk.strip() and blank <= max_bytes:
        if not chunk.endswith(b"\n"):
            # a run of blanks longer than a chunk, its line going on: read on while it is blank, and keep it (a
            # value after it starts on this line, at its column); the whole line blank is a blank line
            chunk = _blank_run(stream, chunk, max_bytes - blank)
            if chunk.strip() or not chunk.endswith(b"\n"):
                break
        blank += len(chunk)
        at += 1
        chunk = stream.readline(_CHUNK)
    head = chunk.lstrip()
    if not head or head[:1] not in b'{["-0123456789tfn':
        # Not the start of any JSON value (binary data, /dev/zero, an empty file): read no further.
        shown = f"it starts with {head[:1]!r}" if head else "there is no JSON value"
        yield Record("", None, Problem("", "json", f"not valid JSON: {shown}"), at if head else None)
        return
    line = _read_line(stream, max_bytes - blank, chunk, drain=False)
    if line is None:  # one line beyond the limit: document or record, it cannot be taken
        yield Record("", None, _too_big(), at)
        return
    first = line
    if first.endswith(b"\n"):
        # (an array whose items are read one at a time, :func:`_raw_items`, is not parsed whole, unless it is a JSON
        # Lines record)
        raws = _raw_items(first)
        value, problem = (None, None) if raws is not None else _parse(first)
        if problem is None:
            # The first line is a whole value: JSON Lines when another non-blank line follows.
            nxt, nxt_at = _read_line(stream, max_bytes), at + 1
            while nxt is not None and nxt.endswith(b"\n") and not nxt.strip():
                nxt, nxt_at = _read_line(stream, max_bytes), nxt_at + 1
            if nxt is None or nxt.strip():
                if raws is not None:
                    raws, value = None, _parse(first)[0]
                yield _record("/0", first, value, at, unique_keys)
                yield from _jsonl_rest(stream, 1, nxt, nxt_at, unique_keys)
            elif raws is not None:
                yield from _raw_records(first, raws, at, unique_keys, one_line=True)
            else:
                yield from _items(first, value, at, unique_keys, one_line=True)
            return
        if problem.rule != "json":
            yield Record("", None, problem, at)
            return
        yield from _document_or_jsonl(stream, first, at, blank, unique_keys)
        return
    # the whole input is one line: a CR alone ends no line of JSON Lines, whatever it ends in
    yield from _document(first, at, blank, unique_keys, one_line=True)


_SAMPLE = 100  # lines looked at to tell JSON Lines with a broken first line from a broken document


def _alone(line: bytes) -> bool:
    """Whether a line is a JSON object or array on its own."""
    return line.lstrip()[:1] in b"{[" and _parse(line)[1] is None


def _document_or_jsonl(stream: Readable, first: bytes, at: int, blank: int, unique_keys: bool) -> Iterator[Record]:
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
    if 2 * sum(1 for _, line in sample if _alone(line)) > len(sample):
        held.clear()
        problem = _parse(first.rstrip(b"\r\n"))[1]
        yield Record("/0", None, *_relocate(problem, at, one_line=True))
        for index, (record_at, line) in enumerate(sample, 1):
            yield _line_record(index, line, record_at, unique_keys)
        index = len(sample) + 1
        if too_long:
            yield Record(f"/{index}", None, _too_big(), line_at)
            index += 1
        yield from _jsonl_rest(stream, index, _read_line(stream, max_bytes), line_at + 1, unique_keys)
        return
    if too_long or size > max_bytes:
        yield Record("", None, _too_big(), at)
        return
    text = first + b"".join(held) + _read_rest(stream, max_bytes - size)
    held.clear()
    yield from _document(text, at, blank, unique_keys, one_line=False)


def _document(text: bytes, at: int, blank: int, unique_keys: bool, *, one_line: bool) -> Iterator[Record]:
    """The instances of a whole document ``text`` starting on line ``at`` after ``blank`` bytes of blank lines: one
    problem when it is over ``limits.max_bytes`` or no JSON, else :func:`_items`."""
    if len(text) + blank > limits.max_bytes:
        yield Record("", None, _too_big(), at)
        return
    raws = _raw_items(text)
    if raws is not None:
        yield from _raw_records(text, raws, at, unique_keys, one_line=one_line)
        return
    value, problem = _parse(text)
    if problem is None:
        yield from _items(text, value, at, unique_keys, one_line=one_line)
    else:
        yield Record("", None, *_relocate(problem, at))


def _items(text: bytes, value: Any, at: int, unique_keys: bool, *, one_line: bool) -> Iterator[Record]:
    """The instances of a document ``text`` (``value`` parsed) starting on line ``at``: itself, or its items (each
    on the line it starts on, :func:`_item_lines`); with ``unique_keys``, an instance with a key given twice in
    one of its objects is refused (the first such key in it)."""
    if not isinstance(value, list):
        yield _record("", text, value, at, unique_keys)
        return
    duplicates: dict[int, list[Problem]] = {}
    for problem in duplicate_keys(text, value) if unique_keys else ():
        duplicates.setdefault(int(problem.pointer[1:].partition("/")[0]), []).append(problem)
    refused = {index: _first(found, f"/{index}") for index, found in duplicates.items()}
    lines = repeat(at) if one_line else _item_lines(text, at)
    for index, item in enumerate(value):
        bad = refused.get(index)
        yield Record(f"/{index}", item if bad is None else None, bad, next(lines, None))


_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'


def _nested(depth: int) -> bytes:
    """A JSON array or object with containers nested at most ``depth`` deep in it (valid JSON: a bracket closes
    what it opens, so ``[`` and ``{`` need not be told apart), matched in time linear in its text: what may follow
    at each step is told by its first byte (a string, a container, a run of other bytes, which ends only before
    one of theirs), so no text can be matched two ways. Each container is matched atomically (a lookahead's group
    matched again, as ``(?>...)`` does from Python 3.11): a match that fails does not go back into the containers
    it matched, which ``re`` otherwise did, in time exponential in the depth (a 20 KB array of arrays and objects
    nested 9 deep took seconds; each container's match is the only one there is, so what matches is the same)."""
    inner = _nested(depth - 1) + b"|" if depth else b""
    name = b"c%d" % depth
    body = rb'[\[{](?:[^"\[\]{}]+(?=["\[\]{}])|' + _STRING + b"|" + inner + rb")*[\]}]"
    return b"(?=(?P<" + name + b">" + body + b"))(?P=" + name + b")"


#: what comes before the next bracket, brace or comma of an array's items outside their strings and outside the
#: containers nested up to 4 deep in them (an item of a conversation or an event stream is matched whole), and that
#: one (group ``at``)
_STRUCTURAL = re.compile(
    rb'(?:[^"\[\]{},]+(?=["\[\]{},])|' + _STRING + b"|" + _nested(4) + rb")*(?P<at>[\[\]{},])", re.S
)
_VALUE = re.compile(rb"[^ \t\r\n]")


def _item_lines(text: bytes, at: int) -> Iterator[int]:
    """The file's line each item of the JSON array ``text`` (valid JSON, starting on line ``at``) starts on, in
    order: where its first byte is (after ``[`` or a comma of the array's own, past blanks), told by a scan of the
    brackets, braces and commas outside strings (:data:`_STRUCTURAL`), the LFs before it counted (as the parser
    counts lines). Time linear in the text; nothing held but the count."""
    opening = text.index(b"[")
    depth = 1
    counted = 0  # the LFs before this byte are counted in ``at``
    start = _VALUE.search(text, opening + 1)
    while start is not None and text[start.start()] != 0x5D:  # (``]``: the end of the array)
        at += text.count(b"\n", counted, start.start())
        counted = start.start()
        yield at
        start = None
        for found in _STRUCTURAL.finditer(text, counted):
            byte = found["at"]
            if byte in b"[{":
                depth += 1
            elif byte in b"]}":
                depth -= 1
                if depth == 0:
                    return
            elif depth == 1:  # a comma of the array's: the next item
                start = _VALUE.search(text, found.end())
                break


#: the items of a JSON array as their bytes (each a :class:`msgspec.Raw`, a view of the text: no object built), and
#: what comes between two of them
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw]).decode
_SEPARATOR = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*")


def _raw_items(text: bytes) -> list[msgspec.Raw] | None:
    """The items of the JSON array document ``text``, each as its bytes, when :func:`loads` reads every one of them
    (each parsed and let go): they are then parsed again one at a time as they are handed out (:func:`_raw_records`),
    their objects never all held, with what reading ``text`` whole gives. None when ``text`` is no JSON array with
    items, or an item is refused (then ``text`` is read whole, which says why before any item, as it did).

    msgspec reads the array's items as bytes (``list[Raw]``: one C pass that checks the syntax and builds nothing
    but the list) and refuses any text that is no JSON. It takes what :func:`loads` refuses inside a value (an
    integer beyond 64 bits, a float beyond a double, bytes that are not UTF-8 in a string, a nesting deeper than
    ``limits.max_depth``), so each item is read by :func:`loads` before any is handed out, in brackets (as deep as
    it is in the array): the text is the array of those items, so loads reads it whole if and only if it reads
    each of them."""
    try:
        raws = _RAW_ITEMS(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not raws:
        return None
    try:
        for raw in raws:
            loads(b"[" + raw + b"]")
    except ValidationError:
        return None
    return raws


def _raw_records(
    text: bytes, raws: list[msgspec.Raw], at: int, unique_keys: bool, *, one_line: bool
) -> Iterator[Record]:
    """The records of the items ``raws`` (:func:`_raw_items`) of the JSON array document ``text`` starting on line
    ``at``, each item parsed as it is handed out: what :func:`_items` gives for ``text`` parsed whole. Each on the
    line its first byte is on (one line for text that is ``one_line``): the first item's start is the first byte
    after ``[`` that is no blank, and the next one's is after the item's bytes, a comma and blanks. With
    ``unique_keys``, an item with a key given twice in one of its objects is refused (:func:`_record`)."""
    found = _VALUE.search(text, text.index(b"[") + 1)
    assert found is not None  # (an array with items)
    start, line, counted = found.start(), at, 0
    for index, raw in enumerate(raws):
        if not one_line:
            line += text.count(b"\n", counted, start)
            counted = start
        end = start + len(raw)
        item = text[start:end]
        yield _record(f"/{index}", item, parse_fast(item), line, unique_keys)
        separator = _SEPARATOR.match(text, end)
        start = separator.end() if separator is not None else end


def _line_record(index: int, line: bytes, at: int, unique_keys: bool) -> Record:
    """The record of the ``index``-th line of JSON Lines, on the file's line ``at``."""
    value, problem = _parse(line)
    if problem is None:
        return _record(f"/{index}", line, value, at, unique_keys)
    if problem.rule == "json":  # its position on this line, not after its newline
        problem = _parse(line.rstrip(b"\r\n"))[1] or problem
    return Record(f"/{index}", None, _relocate(problem, at, one_line=True)[0], at)


def _jsonl_rest(stream: Readable, index: int, line: bytes | None, at: int, unique_keys: bool) -> Iterator[Record]:
    """JSON Lines records from ``line`` (read already, on line ``at``; None when it was beyond the limit) on,
    the first of them instance ``index``."""
    max_bytes = limits.max_bytes
    while True:
        if line is None:  # longer than the limit (and dropped)
            yield Record(f"/{index}", None, _too_big(), at)
            index += 1
        elif not line:
            return
        elif line.strip():
            yield _line_record(index, line, at, unique_keys)
            index += 1
        line, at = _read_line(stream, max_bytes), at + 1


_LINE_END = rb"(?:\r\n|\r(?!\n)|\n)"
#: an event (or a run of comments) up to its blank line, each line a comment or a field the SSE spec knows with its
#: colon: the decoder says nothing of any line of it alone, so the events it gives for it are the event's
_EVENT = re.compile(rb"(?:(?::|(?:" + b"|".join(SSE_FIELDS) + rb"):)[^\r\n]*" + _LINE_END + rb")*" + _LINE_END)


def _first_field(chunk: bytes, pos: int, end: int, line: int) -> int:
    """The line of the first line of ``chunk[pos:end]`` (on line ``line``, whole lines) that is no comment."""
    while pos < end and chunk[pos] == 0x3A:
        pos, line = _line_end(chunk, pos), line + 1
    return line


def read_sse(stream: Readable, decoder: SSEDecoder) -> Iterator[tuple[int, SSEEvent]]:
    """The events ``decoder`` reads from an SSE file, each with the file's line (1-based) it starts on: its first
    field line (comments and blank lines before it are not the event's), or, for what the decoder says of one line
    alone (a line of no SSE field, :class:`agentmsg.events.iter_sse_events`'s), that line. A line ends at LF, CRLF
    or CR, as SSE reads it (a CRLF split across reads is one line end); a leading BOM is no part of the first line.

    The lines are counted here, for the files ``agentmsg validate`` reads, not in the decoder (whose readers of live
    streams need no line, nor its cost): an event whose lines are all fields the spec knows or comments
    (:data:`_EVENT`), whole in a read of 64 KiB, is fed to it at once, its lines counted; any other, a line at a
    time (a long line in reads, so memory stays bounded as the decoder bounds it), the events each line completes
    being the event ``start`` began (at a blank line, or the file's end) or that line's own (any other line)."""
    line = 1  # the line being read
    start: int | None = None  # the first field line of the event being read
    fresh = True  # at a line's start
    blank = comment = False  # what the line being read is (told by its first byte)
    before: int | None = None  # start as it was before this line
    lf_owed = False  # the last read ended in a CR: an LF first in the next is its CRLF's
    regular = True  # whether the event at hand may be fed whole (see _EVENT)
    head = True
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        pos = 0
        if head:
            head = False
            while len(chunk) < len(_BOM) and _BOM.startswith(chunk):  # (a read shorter than a BOM: it is told whole)
                more = stream.read(_CHUNK)
                if not more:
                    break
                chunk += more
            if chunk.startswith(_BOM):
                yield from ((line, event) for event in decoder.feed(chunk[: len(_BOM)]))
                pos = len(_BOM)
        size, cr = len(chunk), 13 in chunk
        if lf_owed:
            lf_owed = False
            if chunk[:1] == b"\n":
                yield from ((line - 1, event) for event in decoder.feed(chunk[:1]))
                pos += 1
        while pos < size:
            whole = _EVENT.match(chunk, pos) if fresh and start is None and regular else None
            regular = whole is not None  # (none: line by line up to the next blank line, not tried at each line)
            if whole is not None:  # a whole event of fields and comments (the common one): fed at once
                end = whole.end()
                at = line if chunk[pos] != 0x3A else _first_field(chunk, pos, end, line)
                for event in decoder.feed(chunk[pos:end]):
                    yield at, event
                line += chunk.count(b"\n", pos, end)
                if cr:
                    line += chunk.count(b"\r", pos, end) - chunk.count(b"\r\n", pos, end)
                lf_owed = chunk[end - 1] == 0x0D and end == size
                pos = end
                continue
            end = _line_end(chunk, pos)
            if fresh:
                first = chunk[pos]
                blank, comment, before, fresh = first in (0x0A, 0x0D), first == 0x3A, start, False
                if not (blank or comment) and start is None:
                    start = line
            events = decoder.feed(chunk[pos:end])
            for event in events:
                yield (start if start is not None else line) if blank else line, event
            last = chunk[end - 1]
            if last in (0x0A, 0x0D):  # the line ended
                if blank:
                    start, regular = None, True
                elif events:  # what the decoder said of this line alone: no field of the event
                    start = before
                line, fresh = line + 1, True
                lf_owed = last == 0x0D and end == size
            pos = end
    for event in decoder.close():
        yield (start if start is not None else max(line - fresh, 1)), event
