"""``read_records`` (``agentmsg validate``) and the event reducer (``agentmsg reduce``) read the same lines of the
same JSON Lines bytes: a line ends at LF (a CRLF is one end), a CR anywhere else ends nothing, and a line that is
not JSON is one problem with the same rule on the same line in both."""

from __future__ import annotations

import io
import json
import re
import tracemalloc
from typing import Any

import orjson
import pytest

from agentmsg import Problem, Reducer, ValidationError, limits, read_records
from agentmsg._wire import records
from agentmsg._wire.records import Record, read_sse
from agentmsg.events import reduce_stream
from agentmsg.events.stream import event_sse_decoder
from tests._support.events import ev


def _e(n: int) -> bytes:
    event = ev(n, "CUSTOM", name="app.note", value={})
    del event["replyId"]  # (CUSTOM has none: a line of an unknown key sends the run off the fast path)
    return orjson.dumps(event)


LONE = b'{"type":"CUSTOM","id":"e9","name":"\\ud800","value":{}}'

#: bytes -> the (line, rule) of each line that cannot be read, as both readers must say it
CASES: dict[str, tuple[bytes, list[tuple[int, str]]]] = {
    "cr-between-values": (_e(1) + b"\r" + _e(2) + b"\n", [(1, "json")]),
    "cr-between-values-then-a-line": (_e(1) + b"\r" + _e(2) + b"\n" + _e(3) + b"\n", [(1, "json")]),
    "cr-line-ends-only": (_e(1) + b"\r" + _e(2) + b"\r", [(1, "json")]),
    "cr-no-final-end": (_e(1) + b"\r" + _e(2), [(1, "json")]),
    "cr-on-the-second-line": (_e(1) + b"\n" + _e(2) + b"\r" + _e(3) + b"\n", [(2, "json")]),
    "two-values-on-a-line": (_e(1) + b" " + _e(2) + b"\n" + _e(3) + b"\n", [(1, "json")]),
    "no-final-lf": (_e(1) + b"\n" + _e(2), []),
    "lone-trailing-cr": (_e(1) + b"\n" + _e(2) + b"\r", []),
    "crlf": (_e(1) + b"\r\n" + _e(2) + b"\r\n", []),
    "lone-surrogate-escape": (_e(1) + b"\n" + LONE + b"\n" + _e(3) + b"\n", [(2, "lone-surrogate")]),
}


def _said(problems: list[Problem]) -> list[tuple[int, str]]:
    out = []
    for p in problems:
        found = re.match(r"line (\d+): ", p.message)
        assert found is not None, p
        out.append((int(found[1]), p.rule))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_and_reduce_read_the_same_lines(name: str) -> None:
    data, bad = CASES[name]
    records = list(read_records(data))
    assert [(r.line, r.problem.rule) for r in records if r.problem is not None] == bad
    whole = Reducer()
    whole.feed_jsonl(data)
    whole.finish()
    assert _said(whole.problems) == bad
    streamed = Reducer()
    reduce_stream(io.BytesIO(data), reducer=streamed)
    assert _said(streamed.problems) == bad
    # The reducer counts each line as one event (read or not), as read_records counts its records.
    assert [p.pointer for p in whole.problems] == [f"/{line - 1}" for line, _ in bad]
    assert len(records) == data.replace(b"\r\n", b"\n").rstrip(b"\r\n").count(b"\n") + 1


BAD_DELTA = orjson.dumps(ev(1, "TEXT_BLOCK_DELTA", blockId="t", delta=5))

#: one event (a delta of 5), framed as a file can hold it -> (the instance and the pointer of the schema problem as
#: agentmsg validate / agentmsg.check say them, the pointer of the reducer's problem as agentmsg validate says it)
ONE_EVENT: dict[str, tuple[bytes, int | None, str, str]] = {
    "one-line": (BAD_DELTA, None, "/delta", ""),
    "one-line-lf": (BAD_DELTA + b"\n", None, "/delta", ""),
    "one-line-crlf": (BAD_DELTA + b"\r\n", None, "/delta", ""),
    "one-line-bom-and-blank-lines": (b"\xef\xbb\xbf\n" + BAD_DELTA + b"\n\n  \n", None, "/delta", ""),
    "one-value-on-lines": (orjson.dumps(orjson.loads(BAD_DELTA), option=orjson.OPT_INDENT_2), None, "/delta", ""),
    "array-of-one": (b"[" + BAD_DELTA + b"]\n", 0, "/0/delta", "/0"),
    "one-sse-event": (b"data: " + BAD_DELTA + b"\n\n", 0, "/0/delta", "/0"),
}


@pytest.mark.parametrize("name", sorted(ONE_EVENT))
def test_one_event_is_pointed_at_as_its_file_holds_it_and_the_reducer_counts_it_as_event_0(name: str) -> None:
    """A file of one JSON value is that value, whatever its line ends: a one-line JSON Lines file (with or without
    its newline, CRLF, BOM or blank lines) cannot be told from a JSON document, so agentmsg validate, agentmsg.check
    and read_records point into it from "" (instance None), as into a pretty-printed one; an array's item and an
    SSE event are instance 0 (/0/...). The reducer (agentmsg reduce, reduce_stream's problems) counts events from
    /0 whatever holds them. docs/ci.md, "Pointers"."""
    import agentmsg

    data, instance, at, reduced_at = ONE_EVENT[name]
    report = agentmsg.check(data, kind="event")
    assert [(f.instance, f.at, f.rule) for f in report.findings] == [
        (instance, at, "type"),
        (instance, reduced_at, "type"),
    ]
    if not name.startswith("one-sse"):
        assert [r.pointer for r in read_records(data)] == ["" if instance is None else "/0"]
    r = Reducer()
    reduce_stream(data, reducer=r)
    assert [(p.pointer, p.rule) for p in r.problems] == [("/0", "type")]


def test_a_value_after_a_line_of_blanks_longer_than_a_chunk_is_read_at_its_column() -> None:
    """Leading blank lines were read past, but a run of blanks within one line stopped at the reader's first chunk
    (64 KiB): a valid document after 70,000 spaces was "not valid JSON: there is no JSON value". The run is read
    on while it is blank, kept (an error in the value says its column on that line), in bounded memory."""
    assert [(r.value, r.problem, r.line) for r in read_records(b" " * 70_000 + b'{"a":1}')] == [({"a": 1}, None, 1)]
    two = list(read_records(b"\t" * 200_000 + b'{"a":1}\n{"b":2}\n'))
    assert [(r.pointer, r.value, r.line) for r in two] == [("/0", {"a": 1}, 1), ("/1", {"b": 2}, 2)]
    blank_line = list(read_records(b" " * 70_000 + b'\n{"a":1}'))
    assert [(r.value, r.line) for r in blank_line] == [({"a": 1}, 2)]
    broken = list(read_records(b" " * 70_000 + b'{"a":}'))
    assert broken[0].problem is not None and broken[0].problem.message.endswith("line 1 column 70006")
    nothing = list(read_records(b" " * 200_000))
    assert [(r.problem.rule if r.problem else None, r.line) for r in nothing] == [("json", None)]


DUP = b'{"a":1,"b":{"k":1,"\\u006b":2},"a":3}'  # "a" twice, and "k" twice in /b (once spelled as an escape)
ONE = b'{"a":1}'

#: a file -> [(pointer, line, the pointer of its duplicate-key problem or None)] as read_records(unique_keys=True)
#: gives its records, on each path it reads one by
DUPLICATES: dict[str, tuple[bytes, list[tuple[str, int | None, str | None]]]] = {
    "one-value": (DUP, [("", 1, "/a")]),
    "one-value-bom-lf": (b"\xef\xbb\xbf" + DUP + b"\n", [("", 1, "/a")]),
    "one-value-on-lines": (DUP.replace(b",", b",\n  ") + b"\n", [("", 1, "/a")]),
    "one-line-array": (b"[" + ONE + b"," + DUP + b"]", [("/0", 1, None), ("/1", 1, "/a")]),
    "array-on-lines": (
        b"[\n" + ONE + b",\n" + DUP + b",\n" + ONE + b"\n]\n",
        [("/0", 2, None), ("/1", 3, "/a"), ("/2", 4, None)],
    ),
    "jsonl-first-line": (DUP + b"\n" + ONE + b"\n", [("/0", 1, "/a"), ("/1", 2, None)]),
    "jsonl-line-3": (
        ONE + b"\n" + ONE + b"\n\n" + DUP + b"\n" + ONE + b"\n",
        [("/0", 1, None), ("/1", 2, None), ("/2", 4, "/a"), ("/3", 5, None)],
    ),
    "jsonl-after-a-broken-first-line": (
        b"{broken\n" + DUP + b"\n" + ONE + b"\n",
        [("/0", 1, None), ("/1", 2, "/a"), ("/2", 3, None)],
    ),
    "jsonl-beyond-the-sample": (
        b"{broken\n" + b"".join(ONE + b"\n" for _ in range(150)) + DUP + b"\n",
        [("/0", 1, None)] + [(f"/{i}", i + 1, None) for i in range(1, 151)] + [("/151", 152, "/a")],
    ),
}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_a_key_given_twice_is_refused_on_every_path_with_unique_keys(name: str) -> None:
    """msgspec kept the last value of a key given twice, and read_records (agentmsg validate) said nothing: a CI
    check passed a message whose "role" was given twice, each reader of the file free to take either. With
    unique_keys the instance is refused (no value), its problem at the first such key (the others counted), on
    its line; the other instances are read as before."""
    data, expected = DUPLICATES[name]
    records = list(read_records(data, unique_keys=True))
    got = [
        (r.pointer, r.line, r.problem.pointer if r.problem and r.problem.rule == "duplicate-key" else None)
        for r in records
    ]
    assert got == expected
    for r in records:
        if r.problem is not None and r.problem.rule == "duplicate-key":
            assert r.value is None
            assert (
                r.problem.message
                == "key 'a' given 2 times in one object, its values differ: readers keep one (most, the last) (+1 more in this instance)"
            )
    # by default the last value is kept, as every JSON parser keeps it
    kept = [r.value for r in read_records(data) if r.value is not None and "a" in r.value and "b" in r.value]
    assert kept == [{"a": 3, "b": {"k": 2}}] * len(kept)


@pytest.mark.parametrize("source", [None, 7, [b"{}"], '{"a": 1}'], ids=["None", "int", "list", "str"])
def test_a_source_that_is_neither_bytes_nor_a_file_is_a_validation_error(source: Any) -> None:
    """It raised a bare AttributeError ('str' object has no attribute 'readline') from inside the reader."""
    with pytest.raises(ValidationError) as info:
        list(read_records(source))
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == ("", "type") and type(source).__name__ in problem.message
    assert ("text.encode()" in problem.message) == isinstance(source, str)


def test_an_array_over_lines_gives_each_item_the_line_it_starts_on() -> None:
    """An item of a JSON array written over several lines (pretty-printed) had no line (None): a CI annotation or
    a SARIF result pointed at the file only. Each item's line is where its first byte is; brackets, braces, commas,
    quotes and line ends inside strings, and nested arrays, are no item's; CRLF line ends count once."""
    text = (
        b'\xef\xbb\xbf\n\n  [ {"a": "[x, {y}] \\" ,\\n",\r\n'
        b'   "b": [1,\r\n 2]},\r\n'
        b"\r\n"
        b"  [3, [4,\r\n 5]], 6,\r\n"
        b'  "]", {}\r\n'
        b",\r\n"
        b'7, {"d": [[[[[[[{"e": ",]"}, 8,\r\n 9]]]]]]]}, 10]\r\n'
    )
    records = list(read_records(text))
    lines = [(r.pointer, r.line) for r in records]
    assert lines == [("/0", 3), ("/1", 7), ("/2", 8), ("/3", 9), ("/4", 9), ("/5", 11), ("/6", 11), ("/7", 12)]
    deep = {"d": [[[[[[[{"e": ",]"}, 8, 9]]]]]]]}  # (nested deeper than the scan takes an item whole)
    assert [r.value for r in records][1:] == [[3, [4, 5]], 6, "]", {}, 7, deep, 10]
    assert list(read_records(b"[\n]\n")) == [] and list(read_records(b"[\n  []\n]")) == [Record("/0", [], None, 2)]


def _tree(depth: int, width: int) -> str:
    return "1" if depth == 0 else "[" + ", ".join(_tree(depth - 1, width) for _ in range(width)) + "]"


def test_an_item_nested_deeper_than_the_scan_takes_whole_is_read_in_linear_steps() -> None:
    """An item holding, at each of 7 levels, a full array 4 deep beside the next level: the scan's match of a
    container up to 4 deep failed at each level and went back into every container it had matched, in steps
    exponential in the depth (2 KB of it ran for minutes). Now it gives each item its line at once."""
    item = "1"
    for _ in range(7):
        item = "[" + _tree(4, 3) + ", " + item + "]"
    records = list(read_records(f"[\n{item},\n1]".encode()))
    assert [(r.pointer, r.line) for r in records] == [("/0", 2), ("/1", 3)]


def _text(data: str | bytes) -> str:
    return data if isinstance(data, str) else data.decode()


def _sse_lines(body: bytes) -> list[tuple[int, str]]:
    """(line, the event's data or its problem's rule) of each event ``read_sse`` reads from an SSE file."""
    events = read_sse(io.BytesIO(body), event_sse_decoder())
    return [(line, e.problem.rule if e.problem else _text(e.data)) for line, e in events]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_an_sse_events_line_is_its_first_field_line(end: str) -> None:
    """An SSE event read by ``agentmsg validate`` had no line: its problems pointed at the file only. Its line is
    its first field line, whatever the line ends: comments and blank lines before it are not counted as its, a
    line of no SSE field is its own (said alone), and an event the file ends inside is where it starts."""
    body = (
        "\ufeff: a comment\n"
        "\n"
        "id: 1\n"
        "data: 1\n"
        "\n"
        "\n"
        ": a comment\n"
        "event: message\n"
        "data: 2\n"
        '{"lost": "its data:"}\n'
        "data: 3\n"
        "\n"
        ": the end\n"
        "data: 4\n"
    )
    lines = _sse_lines(body.replace("\n", end).encode())
    assert lines == [(3, "1"), (10, "sse"), (8, "2\n3"), (14, "incomplete")]


def test_a_crlf_split_across_reads_is_one_line_end() -> None:
    """The file is read 64 KiB at a time: a CRLF whose CR ends one read is one line end (not a blank line: that
    would end the event there), and a line longer than a read is one line."""
    body = b":\r\n" + b"data: " + b"x" * 65_526 + b"\r\n\r\n"
    assert body[65_535:65_537] == b"\r\n"  # its CR the first read's last byte
    body += b"data: 2\r\n" + b"data: " + b"y" * 200_000 + b"\r\n\r\ndata: 3\r\n\r\n"
    lines = [(line, data[:6]) for line, data in _sse_lines(body)]
    assert lines == [(2, "xxxxxx"), (4, "2\nyyyy"), (7, "3")]


class _Trickle(io.BytesIO):
    """A file that gives at most one byte a read (a pipe may give less than asked)."""

    def read(self, size: int | None = -1) -> bytes:
        return super().read(1)


def test_a_bom_cut_by_short_reads_is_no_part_of_the_first_line() -> None:
    """A BOM read a byte at a time was taken for the first line's text: the comment after it was then no comment,
    and the event after it got line 1 (its first field line is 2)."""
    body = "\ufeff: a comment\ndata: 1\n\n".encode()
    events = read_sse(_Trickle(body), event_sse_decoder())
    assert [(line, _text(e.data)) for line, e in events] == [(2, "1")]


def _array(n: int, indent: int | None = None, **changes: Any) -> bytes:
    """A JSON array of ``n`` messages (their ids m0, m1, ...), with ``changes`` ({"m7": {"role": 7}}) applied."""
    items = []
    for i in range(n):
        item = {"id": f"m{i}", "role": "USER", "content": [{"type": "text", "text": 'a, [b] {c} \\" ],['}]}
        items.append({**item, **changes.get(f"m{i}", {})})
    return json.dumps(items, indent=indent).encode()


_LATE = b'"id": "m290"'

#: arrays that reading an item at a time must read as reading them whole did, valid or not at any place
ARRAYS: dict[str, bytes] = {
    "compact": _array(300),
    "compact-lf": _array(300) + b"\n",
    "pretty": _array(300, 2) + b"\n",
    "bom-blank-lines-crlf": b"\xef\xbb\xbf\r\n\n  " + _array(300, 2).replace(b"\n", b"\r\n") + b"\r\n",
    "invalid-items": _array(300, m5={"role": 7}, m200={"content": None}),
    "duplicate-keys": _array(300).replace(b'"id": "m7"', b'"id": "m7", "id": "x"').replace(_LATE, _LATE + b', "id": 1'),
    "equal-duplicate-keys": _array(300).replace(b'"id": "m7"', b'"id": "m7", "id": "m7"'),
    "no-closing-bracket": _array(300)[:-1],
    "no-closing-bracket-lf": _array(300)[:-1] + b"\n",
    "trailing-comma": _array(300)[:-1] + b",]",
    "two-commas-late": _array(300).replace(b"}, {" + _LATE, b"},, {" + _LATE),
    "missing-comma-late": _array(300, 2).replace(b"},\n  {\n    " + _LATE, b"}\n  {\n    " + _LATE),
    "text-after-the-array": _array(300) + b" x",
    "a-second-array": _array(300) + b"[]",
    "integer-beyond-64-bits-late": _array(300).replace(_LATE, _LATE + b', "n": 18446744073709551616'),
    "integer-of-5000-digits-late": _array(300).replace(_LATE, _LATE + b', "n": ' + b"9" * 5000),
    "lone-surrogate-late": _array(300).replace(_LATE, _LATE + b', "s": "\\udc00"'),
    "not-utf-8-late": _array(300).replace(_LATE, _LATE + b', "s": "\xff"'),
    "too-deep-late": _array(300).replace(_LATE, _LATE + b', "d": ' + b"[" * 300 + b"]" * 300),
    "one-level-too-deep-late": _array(300).replace(  # (the item alone is as deep as the limit, not beyond it)
        _LATE, _LATE + b', "d": ' + b"[" * (limits.max_depth - 1) + b"]" * (limits.max_depth - 1)
    ),
    "float-beyond-a-double-late": _array(300).replace(_LATE, _LATE + b', "f": 1e400'),
    "jsonl-of-arrays": _array(300) + b"\n" + _array(2) + b"\n",
    "arrays-of-arrays": json.dumps([[i, [i, [i, {"k": [i]}]], "a,]"] for i in range(2000)]).encode(),
    "strings": json.dumps(['a,]\\",[{"' * (i % 7) + "}" for i in range(3000)]).encode(),
    "scalars": json.dumps([i if i % 3 else [None, True, 1.5, "x"] for i in range(5000)], indent=1).encode(),
    "first-item-unlike-the-others": json.dumps(
        [{"role": "USER"}] + [{"id": i, "n": [{"m": i}]} for i in range(2000)]
    ).encode(),
    "one-item": b'[{"id": "m0"}]',
    "empty": b"[]",
    "empty-over-lines": b"[ \n ]\n",
}


def _whole(monkeypatch: pytest.MonkeyPatch, data: bytes, unique_keys: bool) -> list[Record]:
    """What read_records gives reading an array whole (its items not read one at a time)."""
    with monkeypatch.context() as patch:
        patch.setattr(records, "_raw_items", lambda text: None)
        return list(read_records(data, unique_keys=unique_keys))


@pytest.mark.parametrize("unique_keys", [False, True], ids=["default", "unique-keys"])
@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_an_array_read_an_item_at_a_time_is_read_as_it_was_whole(
    name: str, unique_keys: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON array document was parsed whole, then its items were handed out: its objects all held at once (10
    times the text). Its items are now parsed one at a time as they are handed out, and each record is what
    reading it whole gave (pointer, value, problem, line); a problem anywhere in the text (a syntax error at its
    end, an integer or a float out of range, bad UTF-8, a nesting too deep in its last items: msgspec reads the
    last four as the bytes of an item) is still the file's one problem, said before any item (none is). Read from
    bytes and from a stream."""
    data = ARRAYS[name]
    expected = _whole(monkeypatch, data, unique_keys)
    assert list(read_records(data, unique_keys=unique_keys)) == expected
    assert list(read_records(io.BytesIO(data), unique_keys=unique_keys)) == expected
    items = records._raw_items(data.removeprefix(b"\xef\xbb\xbf").lstrip(b"\r\n"))
    if expected and expected[0].pointer == "/0" and not name.startswith("jsonl"):
        assert items is not None and len(items) == len(expected)  # (an array with items, JSON: an item at a time)
    else:  # (no JSON, no item, or JSON Lines: read whole, as before)
        assert items is None


def test_an_array_is_read_in_a_few_times_its_text() -> None:
    """An array of 5,000 small messages (350 kB), read and each record let go, peaked at 13 times its text (8 for
    the same pretty-printed): its items all parsed at once. Read an item at a time, the peak is the text (read
    from a stream: its lines joined), the bytes of its items (msgspec.Raw, views of the text) and one item's
    objects, about twice the text."""
    items = [{"role": "USER", "content": [{"type": "text", "text": f"hi {i}"}]} for i in range(5000)]
    compact = json.dumps(items).encode()
    for data in (compact, compact + b"\n", json.dumps(items, indent=2).encode()):
        tracemalloc.start()
        try:
            count = sum(1 for record in read_records(io.BytesIO(data), unique_keys=True) if record.problem is None)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert count == 5000
        assert peak < 4 * len(data), peak / len(data)
