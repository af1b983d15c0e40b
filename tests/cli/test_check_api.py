"""``agentmsg.check`` / ``agentmsg.iter_check``: the verdict of ``agentmsg validate`` as data. The command is a shell
over the API: on every file of the conformance vectors (valid and invalid) and of the fixtures, with each of its
options, the command's lines are the API's findings, one for one (the JSON report field for field, the text
report line for line, the exit status the report's validity). Then what the API takes (a path, bytes, a stream,
parsed JSON) and refuses, and that it reads JSON Lines in bounded memory."""

from __future__ import annotations

import collections
import datetime
import io
import json
import tracemalloc
import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any
from unittest.mock import ANY

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import CheckReport, Finding, UserMessage, check, iter_check
from agentmsg.cli._io import POINTER_LIMIT, clip
from agentmsg.errors import WrongTypeError
from agentmsg.providers import NAMES
from tests._support.budget import examples
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests._support.mutators import has_tool_blocks, legacy_keyed, python_valued
from tests.conftest import ROOT, VECTORS, load_vectors

# one worker for the module: its files and their reports (module fixtures, about 2 s) are made once, not per worker
pytestmark = pytest.mark.xdist_group("check-api")

FIXTURES = sorted(p for root in (VECTORS, ROOT / "tests" / "fixtures") for p in root.rglob("*") if p.is_file())
KINDS = ("msg", "event", "content-block")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Every file of tests/fixtures and tests/conformance/vectors, and the vectors' cases as files: each case's
    instance alone (valid and invalid), each kind's instances as JSON Lines and as a JSON array, and the
    reducer vectors' event streams as JSON Lines."""
    root = tmp_path_factory.mktemp("check")
    made: list[Path] = []
    for kind in KINDS:
        cases = json.loads((VECTORS / f"{kind}.json").read_text(encoding="utf-8"))["cases"]
        folder = root / kind
        folder.mkdir()
        for case in cases:
            made.append(folder / f"{case['id']}.json")
            made[-1].write_text(json.dumps(case["instance"]), encoding="utf-8")
        made.append(root / f"{kind}.jsonl")
        made[-1].write_text("".join(json.dumps(c["instance"]) + "\n" for c in cases), encoding="utf-8")
        made.append(root / f"{kind}-array.json")
        made[-1].write_text(json.dumps([c["instance"] for c in cases], indent=1), encoding="utf-8")
    (root / "reducer").mkdir()
    for vector in sorted((ROOT / "tests" / "conformance" / "reducer").glob("*.json")):
        made.append(root / "reducer" / f"{vector.stem}.jsonl")
        stream = json.loads(vector.read_text(encoding="utf-8"))
        if "jsonl" in stream:  # (its lines as they are: a duplicate key, an integer beyond 64 bits)
            made[-1].write_text(stream["jsonl"], encoding="utf-8")
        else:
            made[-1].write_text("".join(json.dumps(e) + "\n" for e in stream["events"]), encoding="utf-8")
    return FIXTURES + made


@pytest.fixture(scope="module")
def reports(files: list[Path]) -> dict[Path, CheckReport]:
    """``check(p)`` of every file, with no keywords: what two tests compare (made once: about a second)."""
    return {p: check(p) for p in files}


#: each run of the command (its options) and the API's keywords for the same
OPTIONS: list[tuple[list[str], dict[str, Any]]] = [
    ([], {}),
    (["--strict"], {"strict": True}),
    (["--kind", "event"], {"kind": "event"}),
    (["--kind", "conversation"], {"kind": "conversation"}),
    (["--provider", NAMES[0]], {"provider": NAMES[0]}),
    (["--provider", "anthropic"], {"provider": "anthropic"}),
]


def _row(path: Path, f: Finding) -> dict[str, Any]:
    return {
        "file": str(path),
        "instance": f.instance,
        "line": f.line,
        "pointer": f.pointer,
        "rule": f.rule,
        "kind": "note" if f.note else "error",
        "message": f.message,
    }


def test_the_files_are_of_every_kind_valid_and_invalid(files: list[Path], reports: dict[Path, CheckReport]) -> None:
    """What the comparison below runs over: messages, conversations, event streams (JSON Lines, SSE, arrays),
    blocks, valid files and invalid ones, problems and notes; a message or block vector alone is valid as its case
    says (an event alone may break the stream's rules: an end with no start)."""
    assert list(reports) == files
    assert len(files) > 350
    assert {r.kind for r in reports.values()} >= {"msg", "conversation", "event", "content-block"}
    assert any(r.valid for r in reports.values()) and any(not r.valid for r in reports.values())
    assert any(r.notes for r in reports.values())
    assert any(f.instance is not None and f.line is not None for r in reports.values() for f in r.findings)
    assert any(p.suffix == ".sse" for p in files)
    for kind in ("msg", "content-block"):
        for case in json.loads((VECTORS / f"{kind}.json").read_text(encoding="utf-8"))["cases"]:
            report = next(r for p, r in reports.items() if p.parent.name == kind and p.stem == case["id"])
            assert report.valid == case["valid"], case["id"]
            assert report.kind == kind or not case["valid"], case["id"]  # (a broken one may read as another kind)
            if not case["valid"] and "pointer" in case:
                assert (case["pointer"], case["rule"]) in [(f.pointer, f.rule) for f in report.problems]


@pytest.mark.parametrize(("argv", "keywords"), OPTIONS, ids=lambda o: " ".join(o) if isinstance(o, list) else None)
def test_the_command_prints_the_apis_findings(
    files: list[Path], reports: dict[Path, CheckReport], argv: list[str], keywords: dict[str, Any]
) -> None:
    if argv[:1] != []:  # every file with the default; one in two with --strict, one in three with the others, and
        # the first file of each kind the sample misses (a file added anywhere shifts it: one more reducer vector
        # left no conversation in it); --strict took 14 s of a loaded make test whole (its run and its text
        # report's), the others 3-5 s: 5-7 and 1-2 now
        sample = files[::2] if argv == ["--strict"] else files[::3]
        missing = {r.kind for r in reports.values()} - {reports[p].kind for p in sample}
        files = sample + [next(p for p in files if reports[p].kind == kind) for kind in sorted(missing)]
    if keywords:
        reports = {p: check(p, **keywords) for p in files}
    every = {keywords["kind"]} if "kind" in keywords else {"msg", "conversation", "event", "content-block"}
    assert {r.kind for r in reports.values()} >= every and any(r.valid for r in reports.values())
    done = run("validate", "--json", *argv, *map(str, files))
    want = [_row(p, f) for p, r in reports.items() for f in r.findings]
    assert [json.loads(line) for line in jsonl_lines(done.stdout)] == want
    assert done.returncode == (0 if all(r.valid for r in reports.values()) else 1)
    if argv[:1] not in ([], ["--strict"]):
        return  # (the text report is the same findings in other words: checked with two of the options)
    text = run("validate", *argv, *map(str, files))
    assert text.stdout.splitlines() == [_text(p, f) for p, r in reports.items() for f in r.findings]
    assert text.returncode == done.returncode


def _text(path: Path, f: Finding) -> str:
    """The finding as the text report prints it (agentmsg.cli._io.print_problems)."""
    at = clip(f.at, POINTER_LIMIT)
    return (f"{path}:{at}: " if at else f"{path}: ") + ("note: " if f.note else "") + f"{clip(f.message)} [{f.rule}]"


def test_each_file_alone_is_what_it_is_among_others(files: list[Path], reports: dict[Path, CheckReport]) -> None:
    """A file's findings do not depend on the files checked before it (the command checks many in one run)."""
    some = files[::7]
    done = run("validate", "--json", *map(str, some))
    by_file: dict[str, list[dict[str, Any]]] = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        by_file.setdefault(row["file"], []).append(row)
    for p in some:
        assert by_file.get(str(p), []) == [_row(p, f) for f in reports[p].findings], p


def test_a_path_its_bytes_a_stream_and_parsed_json_give_the_same_report(tmp_path: Path) -> None:
    good = UserMessage("hi", name="alice").to_dict()
    bad = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}], "futureKey": 1}
    for value in ([good, bad], bad, good):
        path = tmp_path / "file.json"
        path.write_bytes(json.dumps(value, separators=(",", ":")).encode())
        by_path = check(path)
        assert check(str(path)) == by_path
        assert check(path.read_bytes()) == by_path
        with path.open("rb") as stream:
            assert check(stream) == by_path
            assert not stream.closed  # (a stream given is left open)
        assert check(value) == by_path
    report = check([good, bad])
    assert report.kind == "conversation" and not report.valid
    assert [(f.instance, f.pointer, f.rule, f.note) for f in report.findings] == [
        (1, "/content/0/type", "role-content", False),
        (1, "/futureKey", "unknown-key", True),  # (an invalid message's unknown key: a note too)
    ]
    assert check([good, dict(good, futureKey=1)]).findings == (Finding(1, "/futureKey", "unknown-key", ANY, 1, True),)
    assert report.problems[0].at == "/1/content/0/type" and report.problems[0].problem.pointer == "/1/content/0/type"
    assert check(UserMessage("hi")).valid and check(good, kind="msg") == CheckReport("msg", ())
    # a Msg inside a list is its dict (to_dict); an event stream given as parsed events
    assert check([UserMessage("a"), UserMessage("b")]).kind == "conversation"


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
def test_parsed_json_holding_a_nan_or_an_infinity_is_refused_as_the_readers_refuse_it(number: float) -> None:
    """Parsed JSON is checked as the file of its compact JSON, which orjson writes with a NaN or an infinity (what
    Python's json reads ``1e400`` as) as ``null``, without a word: under a key the schema does not declare the
    message was valid, the key "kept and written back" as null; under a count, "null is not of type integer". The
    readers refuse it at its pointer (Msg.from_dict, the reducer: json-value), as JSON text holding ``1e400`` is
    refused (json). Now so is check: the readers' problem, never a null in its place."""
    text = {"type": "text", "text": "x"}
    for at, msg in (
        ("/extra", {"id": "m", "role": "USER", "content": [text], "extra": number}),
        ("/extra/0/a", {"id": "m", "role": "USER", "content": [text], "extra": [{"a": number}]}),
        ("/content/0/extra", {"id": "m", "role": "USER", "content": [dict(text, extra=number)]}),
        ("/usage/inputTokens", {"id": "m", "role": "USER", "content": [text], "usage": {"inputTokens": number}}),
    ):
        with pytest.raises(agentmsg.ValidationError) as read:
            agentmsg.Msg.from_dict(msg, notes=[])
        said = [(p.pointer, p.rule, p.message) for p in read.value.problems]
        assert said == [(at, "json-value", f"{number!r} is not a JSON number")]
        for source, prefix in ((msg, ""), ([msg], "/0")):
            with pytest.raises(agentmsg.ValidationError) as checked:
                check(source)
            assert [(p.pointer, p.rule, p.message) for p in checked.value.problems] == [
                (prefix + pointer, rule, message) for pointer, rule, message in said
            ]
    assert check({"id": "m", "role": "USER", "content": [text], "extra": None}).valid  # (a null given is one)


_TEXT = {"type": "text", "text": "x"}


class _Name(str):
    pass


_NO_JSON = {  # (what orjson cannot write, where it is: the message's pointer, the rule Msg.from_dict names)
    "int-past-64-bits": ({"extra": 2**64}, "/extra", "integer-range"),
    "int-below-64-bits": ({"extra": [1, {"a": -(2**63) - 1}]}, "/extra/1/a", "integer-range"),
    "set": ({"extra": {"a": {1}}}, "/extra/a", "json-value"),
    "key-no-string": ({"extra": {1: "a"}}, "/extra", "json-value"),
    "lone-surrogate": ({"content": [dict(_TEXT, text="a\ud800")]}, "/content/0/text", "lone-surrogate"),
    "lone-surrogate-key": ({"extra": {"\udc00": 1}}, "/extra", "lone-surrogate"),
    "an-object": ({"content": [dict(_TEXT, extra=object())]}, "/content/0/extra", "json-value"),
    "first-of-two": ({"extra": [float("nan"), {1}]}, "/extra/0", "json-value"),  # (the first, a NaN orjson writes)
    # what orjson writes without a word, as what it is not (an array, a string, an object): refused as no JSON
    "tuple": ({"content": (_TEXT,)}, "/content", "json-value"),
    "uuid": ({"id": uuid.UUID(int=1)}, "/id", "json-value"),
    "datetime": ({"metadata": {"at": datetime.datetime(2026, 1, 1)}}, "/metadata/at", "json-value"),
    "date": ({"extra": [datetime.date(2026, 1, 1)]}, "/extra/0", "json-value"),
    "bytes": ({"content": [dict(_TEXT, text=b"x")]}, "/content/0/text", "json-value"),
    "str-subclass": ({"name": _Name("u")}, "/name", "json-value"),
    "dict-subclass": ({"metadata": collections.OrderedDict(a=1)}, "/metadata", "json-value"),
    "mapping": ({"metadata": types.MappingProxyType({"a": 1})}, "/metadata", "json-value"),
}


@pytest.mark.parametrize("fields", _NO_JSON.values(), ids=_NO_JSON.keys())
def test_parsed_json_that_orjson_cannot_write_is_refused_at_its_pointer_as_the_readers_refuse_it(
    fields: tuple[dict[str, Any], str, str],
) -> None:
    """What orjson cannot write (an integer past 64 bits, a set, a key that is no string, a lone surrogate) was
    refused at the document's top with rule ``type`` and orjson's words ("not JSON: Integer exceeds 64-bit range"),
    naming neither where nor which rule. Msg.from_dict names it at its pointer with its own rule; so does check now,
    the same problem, under ``/0`` in a conversation."""
    extra, at, rule = fields
    msg = {"id": "m", "role": "USER", "content": [_TEXT], **extra}
    with pytest.raises(agentmsg.ValidationError) as read:
        agentmsg.Msg.from_dict(msg, notes=[])
    said = [(p.pointer, p.rule, p.message) for p in read.value.problems]
    assert [(pointer, rule_of) for pointer, rule_of, _ in said] == [(at, rule)]
    for source, prefix in ((msg, ""), ([msg], "/0"), ([UserMessage("a"), msg], "/1")):
        with pytest.raises(agentmsg.ValidationError) as checked:
            check(source)
        assert [(p.pointer, p.rule, p.message) for p in checked.value.problems] == [
            (prefix + pointer, rule_of, message) for pointer, rule_of, message in said
        ]


def test_a_mapping_given_is_read_as_its_dict_as_the_readers_read_it() -> None:
    """Msg.from_dict and the reducer read a mapping given that is no dict (a MappingProxyType, an OrderedDict) as
    the dict of its items: so does check, the value given and each item of a list given (it was refused, json-value
    at the top); nested, it is refused as they refuse it."""
    msg = {"id": "m", "role": "USER", "content": [_TEXT]}
    for mapping in (types.MappingProxyType(msg), collections.OrderedDict(msg)):
        agentmsg.Msg.from_dict(mapping)
        assert check(mapping) == check(msg) == CheckReport("msg", ())
        assert check([mapping, msg]) == check([msg, msg]) and check([mapping]).valid
    assert check(types.MappingProxyType({"type": "text", "text": "x"}), kind="content-block").valid


def test_parsed_json_nested_past_what_orjson_writes_is_refused_as_the_readers_refuse_it() -> None:
    """300 levels, past what orjson writes: was ``type`` at the top ("not JSON: Recursion limit reached"); now the
    SizeLimitError Msg.from_dict raises, ``max-depth`` at the level that crosses the limit."""
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    msg = {"id": "m", "role": "USER", "content": [_TEXT], "extra": deep}
    with pytest.raises(agentmsg.SizeLimitError) as read:
        agentmsg.Msg.from_dict(msg, notes=[])
    with pytest.raises(agentmsg.SizeLimitError) as checked:
        check(msg)
    said = [(p.pointer, p.rule, p.message) for p in checked.value.problems]
    assert said == [(p.pointer, p.rule, p.message) for p in read.value.problems]
    assert said[0][:2] == ("/extra" + "/0" * 253, "max-depth")


#: the valid instances of the conformance vectors, by kind, and each kind's reader of parsed JSON
_VALID = {
    kind: [c["instance"] for c in load_vectors(f"{kind}.json")["cases"] if c["valid"]]
    for kind in ("msg", "content-block", "event")
}
_READERS: dict[str, Callable[[Any], object]] = {
    "msg": lambda v: agentmsg.Msg.from_dict(v, notes=[]),
    "content-block": lambda v: agentmsg.block_from_dict(v, notes=[]),
    # (as the reducer reads an event, a mapping as its dict; a stream's rules, order and pairing, aside)
    "event": lambda v: agentmsg.validate(v, "event"),
}
#: the valid message and block vectors holding tool calls or results: what legacy_keyed writes in legacy forms
_LEGACY = {kind: [v for v in _VALID[kind] if has_tool_blocks(v)] for kind in ("msg", "content-block")}


def _as_is_valid(kind: str, value: Any) -> bool:
    """Whether the schema takes ``value`` as it is (each item of a list): its legacy keys as unknown keys."""
    return all(agentmsg.is_valid(v, kind) for v in (value if type(value) is list else [value]))


#: the rules of a value that is no JSON the readers write back: said before any schema's
_NO_JSON_RULES = frozenset({"json-value", "integer-range", "lone-surrogate", "max-depth", "cycle", "max-bytes"})


def _read(kind: str, value: Any) -> tuple[str, str] | None:
    """(pointer, rule) of the first problem the kind's reader refuses ``value`` with (a list: each item, under
    ``/N``; what is no JSON first, as a file's is), None where it reads it."""
    items = list(enumerate(value)) if type(value) is list else [(None, value)]
    refusals = []
    for index, item in items:
        try:
            _READERS[kind](item)
        except agentmsg.ValidationError as exc:
            first = exc.problems[0]
            refusals.append((("" if index is None else f"/{index}") + first.pointer, first.rule))
    no_json = [r for r in refusals if r[1] in _NO_JSON_RULES]
    return no_json[0] if no_json else refusals[0] if refusals else None


@pytest.mark.fuzz
@settings(
    deadline=None,
    max_examples=examples(200),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_check_gives_the_readers_verdict_on_python_values(data: st.DataObject) -> None:
    """check(value) on parsed JSON holding Python values that are no JSON (a tuple, a UUID, a datetime, bytes, a
    NaN, a set, a str, int or dict subclass, a mapping that is no dict, a key that is no string), anywhere in a
    valid message, block or event, or in a list of them: check reads it as the kind's reader does
    (``Msg.from_dict``, ``block_from_dict``, ``validate``), never as what orjson writes for it (a tuple as an
    array, a UUID as a string): it raises the reader's ValidationError where the reader refuses what is no JSON,
    at the same pointer and rule; otherwise its problems are empty exactly when the reader takes the value, and
    the first is the reader's first. (An event's problems are the schema's only: a stream's order is the
    reducer's, and a single event breaks it.)"""
    kind = data.draw(st.sampled_from(sorted(_VALID)))
    count = data.draw(st.sampled_from([None, 1, 2]))
    picks = [data.draw(st.sampled_from(_VALID[kind])) for _ in range(count or 1)]
    items = [data.draw(python_valued(p)) if data.draw(st.booleans()) or count is None else p for p in picks]
    value: Any = items[0] if count is None else items
    read = _read(kind, value)
    try:
        report = check(value, kind=kind)
    except agentmsg.ValidationError as exc:
        assert read is not None and read[1] in _NO_JSON_RULES, (read, exc.problems)
        assert (exc.problems[0].pointer, exc.problems[0].rule) == read
        return
    assert read is None or read[1] not in _NO_JSON_RULES, (read, report.findings)
    problems = [(f.at, f.rule) for f in report.problems]
    if kind == "event":  # (the schema's problems of each event: the reducer's are a stream's)
        text = orjson.dumps([dict(i) for i in items]) if count else orjson.dumps(dict(value))
        assert report.findings == check(text, kind=kind).findings  # (what is read is the value, as JSON)
        return
    assert read is None or read in problems, (read, report.findings)  # (what the reader refuses, check does)
    if any(f.rule == "legacy-key" for f in report.findings) and not _as_is_valid(kind, value):
        return  # (a legacy form the schema refuses as it is, a text output: its verdict, docs/wire-format.md)
    assert (problems[0] if problems else None) == read, (read, report.findings)


@pytest.mark.fuzz
@settings(deadline=None, max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_check_gives_the_readers_verdict_on_legacy_keys(data: st.DataObject) -> None:
    """check(value) on a valid message or block whose tool results and calls are written in the legacy forms the
    readers map (``result``, ``toolUseId``, ``arguments``, ``tool_call``, text ``output``, a lowercase role), some
    holding what the readers refuse once read in the current form (a ``result`` of ["x"]): whatever the reader
    refuses is a problem of check, with the reader's pointer and rule; and where the schema takes the value as it
    is, check's problems are empty exactly when the reader reads it, the first the reader's first. (A ``result``
    of ["x"] was a note only: valid, where Msg.from_dict refuses it.)"""
    kind = data.draw(st.sampled_from(sorted(_LEGACY)))
    count = data.draw(st.sampled_from([None, 1, 2]))
    items = [data.draw(legacy_keyed(data.draw(st.sampled_from(_LEGACY[kind])))) for _ in range(count or 1)]
    value: Any = items[0] if count is None else items
    read = _read(kind, value)
    problems = [(f.at, f.rule) for f in check(value, kind=kind).problems]
    assert read is None or read in problems, (read, problems)
    if _as_is_valid(kind, value):
        assert (problems[0] if problems else None) == read, (read, problems)


_TOOL = {"id": "m", "role": "TOOL", "metadata": {}}
_URL = {"type": "url", "url": "https://example.com/a.png"}


@pytest.mark.parametrize(
    ("kind", "value", "written"),
    [
        ("msg", {**_TOOL, "content": [{"type": "tool_result", "id": "c", "name": "t", "result": ["x"]}]}, "/content/0/result/0"),
        ("msg", {**_TOOL, "content": [{"type": "tool_result", "id": "c", "name": "t", "result": {"type": "text"}}]}, "/content/0/result"),
        ("msg", {**_TOOL, "content": [{"type": "tool_result", "id": "c", "name": "t", "result": [{"type": "tool_result", "toolUseId": "d", "name": "t", "result": ["x"]}]}]}, "/content/0/result/0/result/0"),
        ("content-block", {"type": "tool_result", "id": "c", "name": "t", "result": [{"type": "bogus"}]}, "/result/0/type"),
        ("msg", {"id": "m", "role": "ASSISTANT", "content": [{"type": "tool_call", "id": "c", "input": "{}"}]}, "/content/0"),
        ("msg", {"id": "m", "role": "user", "content": [{"type": "tool_use", "id": "c", "name": "t", "input": {}}]}, "/content/0/type"),
        ("msg", {"id": "m", "role": "assistant", "content": "hi", "usage": {"input_tokens": "x", "output_tokens": 1}}, "/usage/input_tokens"),
        ("msg", {"id": "m", "role": "user", "content": [{"type": "image", "source": {**_URL, "media_type": 5}}]}, "/content/0/source/media_type"),
    ],
    ids=["result-list", "result-block", "result-nested", "block-result", "tool-call", "python-role", "python-usage",
         "python-media-type"],
)  # fmt: skip
def test_a_legacy_key_the_reader_refuses_as_read_is_a_problem_where_it_is_written(
    tmp_path: Path, kind: str, value: dict[str, Any], written: str
) -> None:
    """A legacy key whose value the reader refuses once read in its current form (a tool_result ``result`` of
    ["x"], read as an ``output`` whose item is no block) was a note only: check and ``agentmsg validate`` said the
    file valid where Msg.from_dict and from_json refuse it. Now each of the reader's problems is check's, at the
    reader's pointer with its rule, its message naming where the document writes it; the note stays. So in a
    conversation (each message's own), and from the command."""
    reader = _READERS[kind]
    with pytest.raises(agentmsg.ValidationError) as refused:
        reader(value)
    said = [(p.pointer, p.rule, p.message) for p in refused.value.problems]
    report = check(value, kind=kind)
    problems = [(f.pointer, f.rule) for f in report.problems]
    assert not report.valid and all(said_at[:2] in problems for said_at in said), (said, report.findings)
    first = next(f for f in report.problems if (f.pointer, f.rule) == said[0][:2])
    assert first.message.startswith(said[0][2]) and "as the readers read the legacy keys" in first.message
    assert (f"written at {written})" in first.message) == (written != first.pointer), first.message
    assert any(f.rule == "legacy-key" for f in report.notes)
    if _as_is_valid(kind, value):  # (the legacy form the schema takes: the reader's problems, in its order)
        assert problems == [p[:2] for p in said]
    assert check(orjson.dumps(value), kind=kind).findings == report.findings
    if kind == "msg":
        conversation = check([UserMessage("a").to_dict(), value])
        assert conversation.kind == "conversation" and ("/1" + said[0][0], said[0][1]) in [
            (f.at, f.rule) for f in conversation.problems
        ]
    path = tmp_path / "legacy.json"
    path.write_bytes(orjson.dumps(value))
    done = run("validate", "--json", "--kind", kind, str(path))
    assert done.returncode == 1 and [json.loads(line) for line in jsonl_lines(done.stdout)] == [
        _row(path, f) for f in report.findings
    ]


_EVENT = {"id": "e", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"}


@pytest.mark.parametrize(
    ("event", "said"),
    [
        ({**_EVENT, "type": "EXTERNAL_EXECUTION_RESULT", "toolResults": [{"type": "tool_result", "id": "c", "name": "t", "result": ["x"]}]}, ("/toolResults/0/output/0", "anyOf")),
        ({**_EVENT, "type": "MODEL_CALL_END", "inputTokens": "x"}, ("/usage/inputTokens", "type")),
        ({**_EVENT, "type": "REQUIRE_USER_CONFIRM", "toolCalls": [{"type": "tool_call", "id": "c", "input": "{}"}]}, ("/toolCalls/0", "required")),
    ],
    ids=["result", "flat-usage", "tool-call"],
)  # fmt: skip
def test_an_events_legacy_key_the_reducer_refuses_as_read_is_a_problem_of_check(
    event: dict[str, Any], said: tuple[str, str]
) -> None:
    """An event's legacy keys are read by the reducer, which check runs over the events: what it refuses in the
    form read is check's problem too, at its pointer and rule (a file of the one event: within it)."""
    from agentmsg.events import Reducer

    reducer = Reducer()
    reducer.feed(event)
    assert ("/0" + said[0], said[1]) in [(p.pointer, p.rule) for p in reducer.problems]
    report = check(orjson.dumps(event), kind="event")
    assert said in [(f.pointer, f.rule) for f in report.problems] and report.notes


def test_what_is_no_file_or_no_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind 'messages'"):
        check(b"{}", kind="messages")
    with pytest.raises(KeyError, match="unknown provider 'antropic'"):
        check(b"[]", provider="antropic")
    with pytest.raises(FileNotFoundError):
        check("/nonexistent/agentmsg-file.json")
    with pytest.raises(agentmsg.ValidationError) as exc:
        check({"id": "m", "role": "USER", "content": [], "metadata": {"x": {1, 2}}})
    assert [(p.pointer, p.rule) for p in exc.value.problems] == [("/metadata/x", "json-value")]  # (as from_dict)
    with pytest.raises(TypeError, match="binary stream"):
        check(io.StringIO('{"role": "USER"}\n'))


@pytest.mark.parametrize(("kind", "rule"), [("messages", "enum"), (1, "type"), (["msg"], "type")])
def test_a_kind_that_names_nothing_is_a_validation_error(kind: Any, rule: str) -> None:
    """An unknown kind raised a bare ValueError (one that is no string: a TypeError, unhashable, or the same
    ValueError): now the SDK's error at /kind listing the kinds check takes, a ValueError still."""
    for call in (check, iter_check):
        with pytest.raises(agentmsg.ValidationError) as info:
            call(b"{}", kind=kind)
        assert isinstance(info.value, ValueError)
        [problem] = info.value.problems
        assert (problem.pointer, problem.rule) == ("/kind", rule)
        assert "auto, conversation, chat-usage, content-block" in problem.message


@pytest.mark.parametrize("path", ["\ud800.json", "a\x00b.json"], ids=["lone-surrogate", "nul"])
def test_a_path_no_file_system_can_hold_is_a_validation_error(path: str) -> None:
    """A lone surrogate in a path raised open's bare UnicodeEncodeError, a NUL its bare ValueError: a bad argument,
    the SDK's error at /source (a ValueError still). A path that is only missing stays open's OSError, a
    surrogate-escaped byte (how Python reads a file name that is no UTF-8) too: it is a path."""
    for call in (check, iter_check):
        with pytest.raises(agentmsg.ValidationError) as info:
            call(path)
        assert isinstance(info.value, ValueError)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/source", "path")]
    with pytest.raises(FileNotFoundError):
        check("/nonexistent/agentmsg-\udcff.json")


def test_a_text_stream_is_a_wrong_type_and_still_a_type_error() -> None:
    with pytest.raises(WrongTypeError, match="binary stream") as info:
        check(io.StringIO('{"role": "USER"}\n'))
    assert isinstance(info.value, TypeError)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/source", "type")]


def test_bad_content_is_findings_never_an_exception() -> None:
    for data in (b"", b"\x00\x01", b"[" * 100_000, b"{" * 3, b'{"a": 1}\n{"b": \n', b"data: {}\n\n", b"\xff\xfe"):
        report = check(data)
        assert not report.valid and all(isinstance(f.rule, str) and f.message for f in report.findings), data[:20]


@pytest.mark.parametrize("cut", [False, True])
def test_a_depth_limit_no_message_fits_in_is_a_finding_of_the_event_stream(cut: bool) -> None:
    """Under ``limits.max_depth`` 1 or 2 no message can be built (a message's content is deeper; the reducer's last
    resort, an empty message with its reasons, too): the reducer's SizeLimitError came out of ``check`` and out of
    ``agentmsg validate --max-depth 2`` on any event stream, as a traceback. It is a finding, rule ``max-depth``, at
    the event that ended the reply (the last one of a stream cut short); deeper limits check the stream as before."""
    at = "2025-01-01T00:00:00Z"
    events = [
        {"type": "AGENT_START", "id": "e0", "createdAt": at, "replyId": "r", "name": "a"},
        {"type": "TEXT_BLOCK_START", "id": "e1", "createdAt": at, "replyId": "r", "blockId": "b"},
        {"type": "TEXT_BLOCK_DELTA", "id": "e2", "createdAt": at, "replyId": "r", "blockId": "b", "delta": "hi"},
        {"type": "TEXT_BLOCK_END", "id": "e3", "createdAt": at, "replyId": "r", "blockId": "b"},
        {"type": "AGENT_END", "id": "e4", "createdAt": at, "replyId": "r"},
    ][: 4 if cut else 5]
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    saved = agentmsg.limits.max_depth
    try:
        for depth in (1, 2):
            agentmsg.limits.max_depth = depth
            report = check(data)
            assert report.kind == "event" and not report.valid
            last = report.findings[-1]
            assert (last.instance, last.pointer, last.rule, last.note) == (len(events) - 1, "", "max-depth", False)
            assert last.message.startswith("the reply's message cannot be built: nested deeper than"), last.message
        agentmsg.limits.max_depth = 3
        assert [f.rule for f in check(data).problems] == (["incomplete_stream"] if cut else [])
    finally:
        agentmsg.limits.max_depth = saved
    r = run("validate", "--max-depth", "2", "-", stdin=data.decode())
    assert (r.returncode, r.stderr) == (1, ""), r.stderr[-600:]
    assert r.stdout.splitlines()[-1] == (
        f"-:/{len(events) - 1}: the reply's message cannot be built: nested deeper than 2 levels (limits.max_depth);"
        " the events after are not reduced [max-depth]"
    )


class _Lines(io.RawIOBase):
    """A file of ``n`` JSON Lines messages made as it is read: it never exists whole."""

    def __init__(self, n: int) -> None:
        bad = {"id": "m", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x" * 1_000}]}
        line = json.dumps(bad) + "\n"
        self._lines: Iterator[bytes] = (line.encode() for _ in range(n))
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            self._left = next(self._lines, b"")
            if not self._left:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def test_json_lines_are_read_in_bounded_memory() -> None:
    """iter_check reads JSON Lines record by record: 6,000 records (6.5 MB) with a problem each are checked in
    less than a third of that, the findings dropped as they come."""
    stream = io.BufferedReader(_Lines(6_000))
    tracemalloc.start()
    try:
        findings = iter_check(stream)
        count = sum(1 for f in findings if f.rule == "role-content")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert findings.kind == "msg" and count == 6_000
    assert peak < 2_000_000, peak  # (read whole, the file alone would be 6.5 MB)


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[IO[bytes]]:
    """The files iter_check opens from now on (a path given), to see whether they are closed."""
    import agentmsg._wire.check as check_module

    files: list[IO[bytes]] = []

    def spy(path: str, mode: str) -> IO[bytes]:
        files.append(open(path, mode))  # noqa: SIM115 (the spy's caller closes it)
        return files[-1]

    monkeypatch.setattr(check_module, "open", spy, raising=False)
    return files


def _messages(tmp_path: Path, n: int) -> Path:
    """A JSON Lines file of ``n`` messages with a problem each (a SYSTEM message's thinking block)."""
    bad = {"id": "m", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}
    path = tmp_path / "messages.jsonl"
    path.write_text("".join(json.dumps(bad) + "\n" for _ in range(n)), encoding="utf-8")
    return path


def test_with_closes_the_file_it_opened_even_unread_or_when_the_body_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _messages(tmp_path, 3)
    opened = _opened(monkeypatch)
    with iter_check(path) as findings:
        assert next(findings).rule == "role-content"
        assert len(opened) == 1 and not opened[0].closed  # (open while findings are left)
    assert opened[0].closed  # two findings never read
    with pytest.raises(RuntimeError, match="the body's"), iter_check(str(path)) as findings:
        next(findings)
        raise RuntimeError("the body's")
    assert len(opened) == 2 and opened[1].closed
    with iter_check(path) as findings:
        assert [f.instance for f in findings] == [0, 1, 2]
        assert opened[2].closed  # (all given: closed already, as without with)
    assert opened[2].closed


def test_iteration_after_close_raises_and_a_stream_given_stays_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After close() or the with block, next() raises ValueError, as a closed file's read does (an empty list of
    findings would read as a valid file); a stream given is left open. All given without close: StopIteration."""
    path = _messages(tmp_path, 3)
    opened = _opened(monkeypatch)
    findings = iter_check(path)
    next(findings)
    findings.close()
    assert opened[0].closed
    with pytest.raises(ValueError, match="closed CheckStream"):
        next(findings)
    findings.close()  # (again: nothing)
    with path.open("rb") as stream:
        with iter_check(stream) as findings:
            next(findings)
        assert not stream.closed and len(opened) == 1  # (nothing opened for a stream)
        with pytest.raises(ValueError, match="closed CheckStream"):
            list(findings)
    findings = iter_check(path.read_bytes())
    assert len(list(findings)) == 3
    with pytest.raises(StopIteration):
        next(findings)


def _sse(event: Any, name: str | None = None) -> str:
    return (f"event: {name}\n" if name else "") + "data: " + json.dumps(event) + "\n\n"


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_an_sse_streams_findings_have_the_line_their_event_starts_on(end: str) -> None:
    """An SSE event's findings had no line (None), so CI annotations and SARIF results pointed at the file only.
    Each has its event's first field line (an ``id:`` line too; a comment or blank line before it is not the
    event's), whatever the line ends: its schema's problems, the reducer's about it, and the problem of what
    follows the endpoint's end event (the end event's line)."""

    def ev(n: int, type_: str, **keys: Any) -> dict[str, Any]:
        return {"type": type_, "id": f"e{n}", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", **keys}

    body = (
        ": keep-alive\n\n"
        + _sse(ev(1, "AGENT_START", role="assistant"))  # line 3
        + _sse(ev(2, "TEXT_BLOCK_DELTA", blockId="b", delta="x"))  # 5: no block started
        + ": a comment\n"
        + _sse({"type": "AGENT_END"})  # 8: no id, ...
        + "\nid: 9\n"  # 11: the next event's first field line
        + _sse(ev(3, "AGENT_END"))  # no reply open
        + _sse({}, "end")  # 14: the endpoint's end, two events after it
        + _sse(1)
        + _sse(2)
    )
    report = check(body.replace("\n", end).encode())
    assert report.kind == "event"
    assert [(f.instance, f.pointer, f.rule, f.line) for f in report.findings] == [
        (2, "", "required", 8),
        (2, "", "required", 8),
        (2, "", "required", 8),
        (4, "", "order", 14),
        (1, "/blockId", "order", 5),
        (3, "/type", "order", 11),
    ]


_BAD_DATE = {"type": "AGENT_END", "id": "e1", "createdAt": "2026-02-30T10:00:00.123456Z", "replyId": "r"}


@pytest.mark.parametrize(
    ("body", "instance"),
    [
        (json.dumps(_BAD_DATE), None),  # one JSON value
        (json.dumps(_BAD_DATE) + "\n", None),  # one JSON line
        (json.dumps([_BAD_DATE]), 0),  # a JSON array
        (_sse(_BAD_DATE), 0),  # an SSE stream
    ],
    ids=["value", "json-line", "array", "sse"],
)
def test_an_events_schema_problem_is_said_once_where_the_file_is_one_event(body: str, instance: int | None) -> None:
    """A file of one agent event whose createdAt is no date (February 30) said its ``format`` problem twice, as
    the schema's and as the reducer's, when the file was that one event (a JSON value or a single JSON line):
    the reducer's word on the same spot and rule was left out only when its pointer (``/0/createdAt``) was the
    file's, not the instance's (``/createdAt``). Once in every form, the reducer's distinct problem kept."""
    report = check(body.encode(), kind="event")
    assert [(f.instance, f.pointer, f.rule) for f in report.findings] == [
        (instance, "/createdAt", "format"),
        (instance, "/type", "order"),  # (no reply open: the reducer's own, distinct)
    ]
    r = run("validate", "--kind", "event", "-", stdin=body)
    assert r.returncode == 1
    assert [line.rsplit(" [", 1)[1] for line in r.stdout.splitlines()] == ["format]", "order]"]


def _json_value_checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values held to ``check_json_value`` from now on (by ``loads`` and by the schemas' checks)."""
    import agentmsg._codec.jsontext as jsontext
    import agentmsg._codec.schemas as schemas

    checked: list[Any] = []
    real = jsontext.check_json_value

    def spy(instance: Any, kind: str | None = None, **options: Any) -> None:
        checked.append(instance)
        real(instance, kind, **options)

    monkeypatch.setattr(jsontext, "check_json_value", spy)
    monkeypatch.setattr(schemas, "check_json_value", spy)
    return checked


_GOOD = {"id": "m1", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
_RECORDS = [
    _GOOD,
    {**_GOOD, "futureKey": 1},  # a note: an unknown key
    {"id": "m3", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]},  # a problem
]


@pytest.mark.parametrize("strict", [False, True])
def test_a_record_read_is_held_to_the_json_value_check_once(monkeypatch: pytest.MonkeyPatch, strict: bool) -> None:
    """Each record of a JSON Lines file was held to check_json_value three times: by read_records' loads, then
    by the schema's validate and by the unknown-key search (a valid 20 MB file of 100,000 events: 0.6 s of
    its 1.2 s in those two). Once now, by loads; a JSON array's items once each (loads of each item in brackets,
    before they are parsed one at a time: records._raw_items); the findings the same."""
    lines = "".join(json.dumps(r) + "\n" for r in _RECORDS).encode()
    expected = check(lines, strict=strict).findings
    checked = _json_value_checks(monkeypatch)
    report = check(lines, strict=strict)
    assert report.findings == expected and [f.rule for f in report.findings if not f.note][-1] == "role-content"
    assert checked == _RECORDS
    checked.clear()
    assert check(json.dumps(_RECORDS).encode(), strict=strict).kind == "conversation"
    assert checked == [[record] for record in _RECORDS]


def test_an_sse_events_data_is_still_held_to_the_json_value_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """An SSE stream's events are read by the event decoder, not by loads: each is still checked as JSON that can
    be written back before the schema sees it (by validate and by the unknown-key search; the reducer's own
    check of a start or end event aside)."""
    events = [
        {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
        {"type": "AGENT_END", "id": "e2", "createdAt": "2026-01-01T00:00:01Z", "replyId": "r"},
    ]
    checked = _json_value_checks(monkeypatch)
    assert check("".join(_sse(e) for e in events).encode()).valid
    assert all(sum(c == event for c in checked) >= 2 for event in events)


def test_a_record_reads_depth_is_not_walked_again_for_its_legacy_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_legacy_keys walks a value's depth first (as every reader refuses one nested too deep); a record
    loads read is within the depth limit already: its legacy keys are read without the walk (a third of their
    cost: 2.6 -> 1.9 us per message of a conversation). The notes the same; an SSE event's depth is walked."""
    import agentmsg._codec.legacy as legacy
    from agentmsg._codec.jsontext import deeper_than

    old = {"id": "m", "role": "ASSISTANT", "content": [{"type": "tool_use", "id": "t", "name": "f", "arguments": {}}]}
    lines = "".join(json.dumps(r) + "\n" for r in [*_RECORDS, old]).encode()
    expected = check(lines).findings
    walked: list[Any] = []

    def spy(value: Any, max_depth: int, *, finite: bool = False) -> bool:
        walked.append(value)
        return deeper_than(value, max_depth, finite=finite)

    monkeypatch.setattr(legacy, "deeper_than", spy)
    report = check(lines)
    assert report.findings == expected and [f.rule for f in report.findings if f.instance == 3] == ["legacy-key"]
    assert walked == []
    event = {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"}
    check(_sse(event).encode())
    assert event in walked


def _conversation(turns: int) -> list[dict[str, Any]]:
    """A conversation of ``turns`` tool calls, each answered (every 7th not: a tool-result-orphan), with numbers of
    every kind in their metadata."""
    out: list[dict[str, Any]] = [{"id": "m", "role": "USER", "content": [{"type": "text", "text": "go"}]}]
    for i in range(turns):
        call = {"type": "tool_use", "id": f"c{i}", "name": "get_weather", "input": {"city": "Paris é\u2028"}}
        result = {"type": "tool_result", "id": f"c{i}" if i % 7 else "x", "name": "get_weather", "output": []}
        numbers = {"big": 1e300, "tenth": 0.1, "one": 1.0, "zero": -0.0, "top": 2**64 - 1, "low": -(2**63)}
        out.append({"id": f"a{i}", "role": "ASSISTANT", "content": [call], "metadata": numbers})
        out.append({"id": f"t{i}", "role": "TOOL", "content": [result]})
    return out


def test_a_conversation_is_held_as_its_messages_text_until_the_end() -> None:
    """The rules across a conversation's messages (pairing, what a provider's format says) are checked once all
    are read, so every message is held till then: each was held as parsed (52 MB of dicts for a 12 MB array of
    50,000 messages), now as its JSON text (msgspec's: orjson's keeps 4 KiB a message), which is what the check
    at the end read (a dump of the messages). What is held grows by about the text; the problems and notes are
    those of the messages dumped at once, with no provider named and with each."""
    from agentmsg._wire.check import Across, conversation_problems

    messages = _conversation(500)
    texts = [json.dumps(m).encode() for m in messages]
    for provider in (None, *NAMES):
        across = Across("conversation", provider)
        tracemalloc.start()
        try:
            for n, text in enumerate(texts):
                across.add(json.loads(text), [], n + 1, f"/{n}")  # (the message let go: only Across holds it)
            grown = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert grown < 2 * sum(map(len, texts)), grown / sum(map(len, texts))  # (8.4 times as parsed)
        problems, notes = across.problems()
        assert (problems, notes) == conversation_problems(orjson.dumps(messages), provider)
        assert len(problems if provider is None else problems + notes) >= 500 // 7


def _results_in_results(n: int) -> dict[str, Any]:
    """A message of ``n`` tool results nested in each other's legacy ``result`` (one level each as read, two read in
    their current form: an output list of one block), the innermost holding a text block."""
    block: Any = {"type": "text", "text": "x"}
    for _ in range(n):
        block = {"type": "tool_result", "id": "c", "result": block}
    return {"id": "m", "role": "ASSISTANT", "content": [block]}


@pytest.mark.parametrize("kind", ["message", "jsonl", "events"])
def test_legacy_results_past_the_limit_are_a_finding_not_a_traceback(kind: str) -> None:
    """128 tool results nested in each other's legacy ``result`` (a 5 KB file, 259 levels as read in their current
    form) made ``agentmsg.check`` and ``agentmsg validate`` raise SizeLimitError out of the legacy reader, for a
    message, JSON Lines of them and an AGENT_RESULT event alike, and the tolerant reducer raised it too (strict: its
    pointer without the event's index). It is a finding, rule ``max-depth``, at the pointer the readers name
    (Msg.from_json; the reducer's problem, the event skipped): bad content is findings, never an exception."""
    msg = _results_in_results(128)
    with pytest.raises(agentmsg.SizeLimitError) as info:
        agentmsg.Msg.from_json(json.dumps(msg), notes=[])
    (refused,) = info.value.problems
    ts = "2026-11-22T10:34:38.563248392Z"
    events = [
        {"type": t, "id": f"e{n}", "createdAt": ts, "replyId": "r", **keys}
        for n, (t, keys) in enumerate((("AGENT_START", {}), ("AGENT_RESULT", {"result": msg}), ("AGENT_END", {})))
    ]
    expected: tuple[int | None, str]
    if kind == "events":
        r = agentmsg.Reducer()
        for e in events:
            r.feed(e)
        r.finish()
        (deep,) = [p for p in r.problems if p.rule == "max-depth"]
        assert deep.pointer.startswith("/1/result/content/0/result")
        with pytest.raises(agentmsg.SizeLimitError) as strict:  # (strict: raised, at the event's pointer)
            agentmsg.reduce_events(events, strict=True)
        assert (strict.value.kind, [(p.pointer, p.rule) for p in strict.value.problems]) == (
            "event",
            [(deep.pointer, "max-depth")],
        )
        data, expected = b"".join(orjson.dumps(e) + b"\n" for e in events), (1, deep.pointer[2:])
    elif kind == "jsonl":
        data, expected = orjson.dumps(msg) + b"\n" + orjson.dumps(msg) + b"\n", (0, refused.pointer)
    else:
        data, expected = orjson.dumps(msg), (None, refused.pointer)
    report = check(data)
    deep_findings = [(f.instance, f.pointer) for f in report.findings if f.rule == "max-depth" and f.pointer]
    assert deep_findings[0] == expected
    if kind == "jsonl":
        assert deep_findings == [expected, (1, refused.pointer)]
    done = run("validate", "-", stdin=data.decode())
    assert done.returncode == 1 and "Traceback" not in done.stderr and "[max-depth]" in done.stdout + done.stderr


@pytest.mark.parametrize("limit", [254, 253])
@pytest.mark.parametrize("over", [-1, 0, 1, 60], ids=["limit-1", "limit", "limit+1", "far"])
def test_legacy_results_are_held_to_the_limit_as_the_readers_read_them(
    over: int, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tool results nested in each other's legacy ``result`` are one level each as written, two as read (an output
    list of one block): 126 of them are a 131-level message that Msg.from_json refuses (255 levels as read), and
    ``agentmsg.check`` judged it as written: valid. What check accepts, the readers read, and what they refuse
    check says, at the same pointer: a message alone (one JSON value, a JSON Lines record) as Msg.from_json says
    it; one in a conversation, which is one document, its array a level (docs/wire-format.md, "Limits"), as
    decode_messages says it; an AGENT_RESULT's as the reducer says it. ``over``: how far past the limit the
    message alone is as read."""
    monkeypatch.setattr(agentmsg.limits, "max_depth", limit)
    n, meta = divmod(limit - 3 + over, 2)  # (as read: the message 1, content 2, results at 3, 5, ...: its text 3 + 2n)
    msg = _results_in_results(n)
    if meta:  # (one level more: the text block's metadata)
        inner = msg["content"][0]
        while inner["type"] == "tool_result":
            inner = inner["result"]
        inner["metadata"] = {"k": 1}

    def refused(read: Any) -> list[tuple[str, str]]:
        try:
            read()
        except agentmsg.SizeLimitError as exc:
            return [(p.pointer, p.rule) for p in exc.problems]
        return []

    def deep(data: bytes, **kw: Any) -> list[tuple[int | None, str]]:
        return [(f.instance, f.pointer) for f in check(data, **kw).findings if f.rule == "max-depth"]

    alone = refused(lambda: agentmsg.Msg.from_json(json.dumps(msg), notes=[]))
    assert bool(alone) == (over > 0)
    assert deep(orjson.dumps(msg)) == [(None, p) for p, _ in alone]
    assert deep(orjson.dumps(msg) + b"\n" + orjson.dumps(msg) + b"\n") == [(i, p) for i in (0, 1) for p, _ in alone]
    in_array = refused(lambda: agentmsg.decode_messages(json.dumps([msg, msg]), notes=[]))
    assert bool(in_array) == (over >= 0)
    said = [(int(p[1:].partition("/")[0]), "/" + p[1:].partition("/")[2]) for p, _ in in_array]
    assert deep(orjson.dumps([msg, msg]))[: len(said)] == said
    # (JSON Lines checked as a conversation: one document too, as the conversation check reads them)
    lines = orjson.dumps(msg) + b"\n" + orjson.dumps(msg) + b"\n"
    assert deep(lines, kind="conversation")[: len(said)] == said
    ts = "2026-11-22T10:34:38.563248392Z"
    events = [
        {"type": t, "id": f"e{k}", "createdAt": ts, "replyId": "r", **keys}
        for k, (t, keys) in enumerate((("AGENT_START", {}), ("AGENT_RESULT", {"result": msg}), ("AGENT_END", {})))
    ]
    r = agentmsg.Reducer()
    for e in events:
        r.feed(e)
    r.finish()
    reduced = [(1, p.pointer[2:]) for p in r.problems if p.rule == "max-depth"]
    assert bool(reduced) == (over >= 0)
    assert deep(b"".join(orjson.dumps(e) + b"\n" for e in events)) == reduced
