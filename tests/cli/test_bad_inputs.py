"""Every subcommand of ``agentmsg``, enumerated from the CLI itself (a new one is covered without a change here),
over the same corpus of bad inputs (issue 28, class 8: "the CLI answers every input in one clear line"): no
traceback, no exception out of ``main``, every stderr line (and validate's report lines) short enough to read,
the exit code one that the command's ``--help`` documents, and the hint that gets the user unstuck where one
applies. Run in-process (``agentmsg.cli.main``), as the other CLI tests do."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import limits
from agentmsg.cli import build_parser, main
from agentmsg.providers import providers
from tests._support.providers import same_reader
from tests.conftest import ROOT

#: the longest line a command may print on stderr (validate: on stdout too), its input's path left out
BOUND = 240

_MSG = {"id": "m1", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
_EVENT = {"type": "TEXT_BLOCK_DELTA", "replyId": "r", "blockId": "b", "delta": "x", "createdAt": "2025-01-01T00:00:00Z"}


def _corpus(root: Path) -> dict[str, Path]:
    """The bad inputs, as files under ``root`` (and a path that does not exist, and a directory)."""
    files = {
        "empty": b"",
        "bom+[]": b"\xef\xbb\xbf[]",
        "bom alone": b"\xef\xbb\xbf",
        "invalid utf-8": b'{"id": "\xff\xfe"}\n',
        "binary": bytes(range(256)) * 40,
        "deep": b"[" * 10_000 + b"]" * 10_000,
        "deep object": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        "huge line": b'{"id": "' + b"x" * 3_000_000 + b'"}',
        "long bad value": orjson.dumps({**_MSG, "role": "x" * 6_000}),
        "json lines": orjson.dumps(_MSG) + b"\n" + orjson.dumps(_MSG) + b"\n",
        "pretty document": orjson.dumps(_MSG, option=orjson.OPT_INDENT_2),
        "provider reply": (ROOT / "tests/fixtures/providers/openai/chat_completion_text.json").read_bytes(),
        "provider stream": (ROOT / "tests/fixtures/providers/anthropic/stream_docs_basic.sse").read_bytes(),
        "events": orjson.dumps(_EVENT) + b"\n" + orjson.dumps(_EVENT) + b"\n",
        "nul": b'{"id": "a\x00b"}\x00\n',
    }
    paths = {}
    for i, (name, data) in enumerate(files.items()):
        paths[name] = root / f"input{i}"
        paths[name].write_bytes(data)
    (root / "folder").mkdir()
    paths["directory"] = root / "folder"
    paths["missing"] = root / "no-such-file"
    return paths


#: (command, input) -> what its stderr says to get the user unstuck
HINTS = {
    # ("validate", "events"): none: validate tells them from the file and checks them as events (--kind auto)
    ("validate", "provider reply"): "agentmsg parse --provider openai",
    ("events", "events"): "agentmsg reduce",
    ("events", "provider reply"): "agentmsg parse --provider openai",
    ("reduce", "json lines"): "agentmsg events",
    ("reduce", "pretty document"): "agentmsg events",
    ("reduce", "provider reply"): "agentmsg parse --provider openai",
    ("reduce", "provider stream"): "agentmsg parse --provider anthropic",
    ("format", "events"): "these look like agent events",
    ("format", "provider reply"): "agentmsg parse --provider openai",
    ("trim", "events"): "these look like agent events",
    ("trim", "provider reply"): "agentmsg parse --provider openai",
    ("parse", "events"): "agentmsg reduce",
    ("parse", "json lines"): "agentmsg validate",
    ("parse", "pretty document"): "agentmsg validate",
    ("parse", "provider stream"): "try --provider anthropic",
    ("serve", "json lines"): "agentmsg events",
    ("validate", "directory"): "give its files",
}

#: (command, input) -> the exit code its --help gives for it, where the input decides it
CODES = {
    **{(c, "missing"): 2 for c in ("validate", "reduce", "events", "format", "trim", "parse", "serve")},
    **{(c, "directory"): 2 for c in ("validate", "reduce", "events", "format", "trim", "parse", "serve")},
    ("validate", "bom+[]"): 0,  # a BOM at the start is skipped everywhere (docs/wire-format.md)
    ("events", "bom+[]"): 0,
    ("format", "bom+[]"): 1,  # an empty conversation: nothing to send
    ("trim", "bom+[]"): 1,  # nor to trim
    ("trim", "json lines"): 0,  # two messages, within the budget
    ("parse", "provider stream"): 2,  # another provider's: not a response of that provider at all
    ("parse", "provider reply"): 0,  # (openai's own)
}


def _without_whole_pointer(line: str) -> str:
    """A problem's JSON line (format, count and trim write them on stderr) with its pointer left out: the pointer is
    data, kept whole there as validate --json keeps it (a long key's, an array's 254 levels in past max-depth), and
    bounded by the limits (its steps by limits.max_depth), not by this line's bound."""
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if type(row) is not dict or type(row.get("pointer")) is not str:
        return line
    assert row["pointer"].count("/") <= limits.max_depth, row["pointer"][:120]
    return orjson.dumps({**row, "pointer": "..."}).decode()


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _documented(p: argparse.ArgumentParser) -> set[int]:
    """The exit codes a command's --help lists (its ``exit status:`` epilog), and argparse's 2."""
    epilog = p.epilog or ""
    assert epilog.startswith("exit status:"), f"{p.prog}: --help says no exit status"
    return {int(code) for code in re.findall(r"^\s+(\d+)\s", epilog, re.M)} | {2}


def _argv(name: str, p: argparse.ArgumentParser, path: str) -> list[str]:
    """The command run on ``path``: each positional argument is the input, each required option its first
    choice (``--provider``: the registry's first), or a number where it takes one (``--budget``), so that the input
    is read."""
    argv = [name]
    for action in p._actions:
        if action.option_strings and action.required:
            value = str(next(iter(action.choices))) if action.choices else "100000" if action.type is not None else "x"
            argv += [action.option_strings[0], value]
    argv += [path for action in p._actions if not action.option_strings and action.dest != "help"]
    return argv + (["--port", "0"] if name == "serve" else [])


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key (chat stops before any connection) and no server run (serve returns once it would serve)."""
    for provider in providers():
        for variable in provider.spec.env:
            monkeypatch.delenv(variable, raising=False)
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)


def test_every_subcommand_answers_every_bad_input_in_short_lines_with_a_documented_exit_code(
    tmp_path: Path, quiet: None, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path)
    commands = _subcommands()
    assert {"validate", "reduce", "events", "format", "parse", "serve"} <= set(commands)
    failures: list[str] = []
    for name, p in commands.items():
        documented = _documented(p)
        for what, path in corpus.items():
            capsys.readouterr()
            try:
                code: Any = main(_argv(name, p, str(path)))
            except BaseException as exc:  # (SystemExit too: main returns the code)
                code = f"raised {type(exc).__name__}: {exc!s:.200}"
            out, err = capsys.readouterr()
            where = f"{name} on {what}"
            if not isinstance(code, int) or code not in documented:
                failures.append(f"{where}: exit {code}, --help documents {sorted(documented)}")
            if CODES.get((name, what), code) != code:
                failures.append(f"{where}: exit {code}, expected {CODES[(name, what)]}")
            if "Traceback" in err or "Error:" in err.split(": ", 1)[0]:
                failures.append(f"{where}: a traceback: {err[-300:]!r}")
            report = err.splitlines() + (out.splitlines() if name == "validate" else [])
            for line in report:
                shown = _without_whole_pointer(line.replace(str(path), "FILE"))
                if len(shown) > BOUND:
                    failures.append(f"{where}: a line of {len(shown)} characters: {shown[:120]!r}...")
            hint = HINTS.get((name, what))
            if hint is not None and hint not in err:
                failures.append(f"{where}: no hint {hint!r} in {err[-300:]!r}")
    assert not failures, "\n".join(failures)


def test_the_corpus_and_the_tables_name_only_what_exists(tmp_path: Path) -> None:
    """The tables above name commands the CLI has and inputs the corpus holds (a renamed one is not silently
    skipped), and every command documents its exit codes."""
    corpus = _corpus(tmp_path)
    commands = _subcommands()
    for name, what in [*HINTS, *CODES]:
        assert name in commands and what in corpus, (name, what)
    for p in commands.values():
        assert _documented(p)


def test_validate_kind_event_on_a_vector_file_prints_short_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """``validate --kind event`` on a conformance vector file (an object holding cases: one instance) printed a
    4,700-character line, 5,000+ for a long bad value: each message is cut with its length said."""
    vector = next(iter(sorted((ROOT / "tests/conformance/reducer").glob("*.json"))))
    assert main(["validate", "--kind", "event", str(vector)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(len(line.replace(str(vector), "FILE")) <= BOUND for line in lines)
    assert any("characters)" in line for line in lines), lines[:3]


def test_a_long_bad_value_is_cut_with_its_length_in_every_report_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.json"
    path.write_bytes(orjson.dumps({**_MSG, "role": "x" * 6_000}))
    for fmt in ("text", "github"):
        assert main(["validate", "--output-format", fmt, str(path)]) == 1
        out = capsys.readouterr().out
        assert out and all(len(line) <= BOUND + len(str(path)) for line in out.splitlines()), out[:300]


def test_a_leading_bom_is_read_alike_by_every_command_and_the_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one BOM policy (docs/wire-format.md): a UTF-8 BOM at the start of a JSON text is skipped by every
    reader, the library's (Msg.from_json, str or bytes, decode_messages) and every command's; elsewhere it is
    what it is. ``format --provider openai`` on BOM + ``[]`` was an IndexError traceback."""
    import agentmsg
    from agentmsg.conversation import decode_messages

    assistant = {**_MSG, "role": "ASSISTANT"}
    bom = b"\xef\xbb\xbf"
    data = bom + orjson.dumps(assistant)
    assert agentmsg.Msg.from_json(data).id == "m1"
    assert agentmsg.Msg.from_json(data.decode()).id == "m1"
    assert agentmsg.Msg.from_json(bytearray(data)).id == "m1"
    assert [m.id for m in decode_messages(bom + orjson.dumps([_MSG]))] == ["m1"]
    with pytest.raises(agentmsg.ValidationError):
        agentmsg.Msg.from_json(bom + bom + orjson.dumps(assistant))  # one BOM, at the start
    with pytest.raises(agentmsg.ValidationError):
        agentmsg.Msg.from_json(b" " + data)  # not at the start
    path = tmp_path / "bom.json"
    path.write_bytes(data)
    for argv in (
        ["validate", str(path)],
        ["events", str(path)],
        ["format", "--provider", "openai", str(path)],
    ):
        assert main(argv) == 0, argv
    capsys.readouterr()
    path.write_bytes(bom + b"[]")
    assert main(["format", "--provider", "openai", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and '"rule":"empty-conversation"' in err


def test_the_reply_hint_names_the_provider_and_never_an_agentmsg_message_or_garbage() -> None:
    from agentmsg.cli._io import CHUNK, reply_hint

    body = (ROOT / "tests/fixtures/providers/openai/chat_completion_text.json").read_bytes()
    assert reply_hint(body) is not None and "--provider openai" in str(reply_hint(body))
    assert reply_hint(orjson.dumps(_MSG)) is None
    assert reply_hint(orjson.dumps(_MSG, option=orjson.OPT_INDENT_2)) is None  # (a lenient stream reader took it)
    assert reply_hint(b"\x00" * CHUNK) is None
    assert reply_hint(b"") is None


def test_a_tools_file_is_read_as_every_json_text_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--tools`` (format, count, trim) keeps the one BOM policy (docs/wire-format.md: every command skips a
    leading BOM): a tools file saved by PowerShell was a usage error, 'not valid JSON: UTF-8 byte order mark
    (BOM) is not supported'. A BOM anywhere else is still a syntax error."""
    conversation = tmp_path / "conversation.json"
    conversation.write_bytes(orjson.dumps([_MSG]))
    tool = {"name": "get_weather", "description": "w", "parameters": {"type": "object", "properties": {}}}
    tools = tmp_path / "tools.json"
    tools.write_bytes(b"\xef\xbb\xbf" + orjson.dumps([tool]))
    for argv in (
        ["format", "--provider", "openai"],
        ["count", "--provider", "openai"],
        ["trim", "--provider", "openai", "--budget", "1000"],
    ):
        assert main([*argv, "--tools", str(tools), str(conversation)]) == 0, argv
        assert capsys.readouterr().err == "", argv
    tools.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbf" + orjson.dumps([tool]))  # one BOM, at the start
    assert main(["format", "--provider", "openai", "--tools", str(tools), str(conversation)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agentmsg: {tools}: not valid JSON"), err


@pytest.mark.parametrize("held", ["null", "{}", '"f"'])
def test_a_tools_file_that_is_not_an_array_is_said_in_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: str
) -> None:
    """A ``--tools`` file holding ``null`` was taken as no tools, silently, by format, count and trim; any other
    value that is no array was exit 1 with a ``/tools`` problem in format and count but a usage error (exit 2) in
    trim. Now every command says it alike: rule ``type`` at ``/tools``, exit 1."""
    conversation = tmp_path / "conversation.json"
    conversation.write_bytes(orjson.dumps([_MSG]))
    tools = tmp_path / "tools.json"
    tools.write_text(held, "utf-8")
    for argv in (
        ["format", "--provider", "openai"],
        ["count", "--provider", "openai"],
        ["trim", "--provider", "openai", "--budget", "1000"],
    ):
        assert main([*argv, "--output-format", "json", "--tools", str(tools), str(conversation)]) == 1, argv
        said = [orjson.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
        assert [(p["pointer"], p["rule"]) for p in said] == [("/tools", "type")], (argv, said)
        assert ("null" in said[0]["message"]) == (held == "null")


def test_a_jsonl_line_of_invalid_utf8_is_said_alike_by_every_command_that_reads_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON Lines record holding invalid UTF-8 (and no JSON once it is replaced) is said in the SDK's words, as
    a whole document of invalid UTF-8 is (rule ``utf-8``, the byte where it stops being UTF-8), with its line. It
    was orjson's ``str is not valid UTF-8: surrogates not allowed`` [json] in ``reduce`` (the input held no
    surrogate), the whole file's byte without the line in ``format``/``count``/``trim``, and orjson's words
    for a ``--tools`` file."""
    good = orjson.dumps(_MSG)
    messages = tmp_path / "messages.jsonl"
    messages.write_bytes(good + b'\n{"role": "USER", "id": "m2", "content": "h\xffi"\n')
    at = len(b'{"role": "USER", "id": "m2", "content": "h')
    said = f"not valid JSON: invalid UTF-8 at byte {at} of line 2 (invalid start byte)"
    for argv in (["validate"], ["events"]):
        assert main([*argv, str(messages)]) == 1, argv
        captured = capsys.readouterr()
        assert f"{messages}:/1: {said} [utf-8]\n" in captured.out + captured.err, argv
    for argv in (
        ["format", "--provider", "openai"],
        ["count", "--provider", "openai"],
        ["trim", "--provider", "openai", "--budget", "1000"],
    ):
        assert main([*argv, str(messages)]) == 1, argv
        rows = [orjson.loads(line) for line in capsys.readouterr().err.splitlines()]
        assert {"pointer": "/1", "rule": "utf-8", "kind": "error", "message": said} in rows, argv
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"type": "AGENT_START"}\n{"type": "TEXT\xff"\n')
    assert main(["reduce", str(events)]) == 1
    err = capsys.readouterr().err
    assert f"{events}:/1: line 2: not valid JSON: invalid UTF-8 at byte 14 (invalid start byte) [utf-8]\n" in err
    assert "surrogate" not in err
    tools = tmp_path / "tools.json"
    tools.write_bytes(b'[{"name": "\xff"}]')
    assert main(["format", "--provider", "openai", "--tools", str(tools), str(messages)]) == 2
    err = capsys.readouterr().err
    assert err == f"agentmsg: {tools}: not valid JSON: invalid UTF-8 at byte 11 (invalid start byte) [utf-8]\n"


@pytest.mark.parametrize(
    ("held", "said"),
    [
        (
            b'[{"name": "\\ud800"}]',
            "not valid JSON: a lone UTF-16 surrogate escape (no low surrogate in string: line 1 column 12) [lone-surrogate]",
        ),
        (b"[1]\n[2]\n", "not valid JSON: unexpected content after document: line 2 column 1 (char 4) [json]"),
        (b"[", "not valid JSON: unexpected end of data: line 1 column 2 [json]"),
    ],
)
def test_a_tools_file_that_is_not_json_says_the_rule_in_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], held: bytes, said: str
) -> None:
    """A ``--tools`` file that is not JSON (a usage error, exit 2) was said without its rule (``not valid JSON:
    invalid UTF-8 at byte 11 (invalid start byte)``), where ``parse`` says a body that is not JSON with it
    (``... [utf-8]``) and the messages file's problems carry theirs: the rule is said after the message."""
    conversation = tmp_path / "conversation.json"
    conversation.write_bytes(orjson.dumps([_MSG]))
    tools = tmp_path / "tools.json"
    tools.write_bytes(held)
    for argv in (
        ["format", "--provider", "openai"],
        ["count", "--provider", "openai"],
        ["trim", "--provider", "openai", "--budget", "1000"],
    ):
        assert main([*argv, "--tools", str(tools), str(conversation)]) == 2, argv
        assert capsys.readouterr().err == f"agentmsg: {tools}: {said}\n", argv


def test_clip_counts_the_original_text_and_says_how_much_it_shows() -> None:
    """``clip`` said the length of the text with its control characters escaped (200 ESC characters were "800
    characters") and could cut an escape in two (``\\x``); it now says ``first K of N`` in the text's own
    characters and keeps each escape whole, the line within the limit."""
    from agentmsg.cli._io import POINTER_LIMIT, TEXT_LIMIT, clip

    escapes = clip("\x1b" * 200)
    shown = escapes.split("...")[0]
    assert escapes.endswith(f"... (first {len(shown) // 4} of 200 characters)"), escapes
    assert shown == "\\x1b" * (len(shown) // 4) and len(escapes) <= TEXT_LIMIT
    long = clip("a" * 6_000)
    head, _, tail = long.partition("...")
    assert head == "a" * len(head) and tail == f" (first {len(head)} of 6,000 characters)"
    assert len(long) <= TEXT_LIMIT and len(head) > 100
    assert len(clip("b" * 1_000, POINTER_LIMIT)) <= POINTER_LIMIT
    assert clip("c" * TEXT_LIMIT) == "c" * TEXT_LIMIT and clip("d\ne") == "d\\ne"


def test_an_empty_input_is_said_alike_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty file, or stdin of only blanks, was "not valid JSON: there is no JSON value" [json] (validate,
    events), orjson's "Input is a zero-length, empty document" (format, count, trim, parse: a usage error),
    "no events in the input" (reduce), a cut stream (parse --stream) and "holds no events: it is empty" (serve).
    It is now one line, rule ``empty``, from one helper (serve refuses it as a usage error, in the same words)."""
    import io
    import sys

    from agentmsg.cli._io import UsageError
    from agentmsg.cli.serve import _head

    said = "the input is empty (no bytes, or only blanks): nothing to read"
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    commands = (
        ["validate"],
        ["reduce"],
        ["events"],
        ["parse", "--provider", "openai"],
        ["parse", "--provider", "openai", "--stream"],
    )
    conversation = (
        ["format", "--provider", "openai"],
        ["count", "--provider", "openai"],
        ["trim", "--provider", "openai", "--budget", "1000"],
    )
    # (and blanks longer than what validate and events peek at, 128 KiB: they said `json` "no JSON value")
    blanks = tmp_path / "blanks.json"
    blanks.write_bytes(b" \t" * 100_000 + b"\n" + b" " * 100_000)
    for path, stdin in ((str(empty), b""), ("-", b"\xef\xbb\xbf \n\t\r\n"), (str(blanks), b"")):
        for argv in (*commands, *conversation):
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
            assert main([*argv, path]) == 1, argv
            captured = capsys.readouterr()
            lines = (captured.out + captured.err).splitlines()
            if argv in conversation:
                assert [orjson.loads(line) for line in lines] == [
                    {"pointer": "", "rule": "empty", "kind": "error", "message": said}
                ], argv
            else:
                assert lines == [f"{path}: {said} [empty]"], argv
        with pytest.raises(UsageError) as caught:
            _head(io.BytesIO(stdin), path)
        assert str(caught.value) == f"{path}: {said} [empty]"
    not_empty = tmp_path / "none.json"
    not_empty.write_bytes(b"[]")  # something, but no event: said as such
    assert main(["reduce", str(not_empty)]) == 1
    assert capsys.readouterr().err == f"{not_empty}: no events in the input [empty]\n"


def test_a_file_name_reaches_the_terminal_escaped_and_machine_output_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name from a hostile directory (ESC, CR, a newline) was printed as it is: it recoloured the terminal and
    split a problem's line in two. Every text line now shows it escaped (``\\x1b``, ``\\n``); JSON keeps it."""
    folder = tmp_path / "evil\x1b[31m\r\ndir"
    folder.mkdir()
    shown = str(folder).replace("\x1b", "\\x1b").replace("\r", "\\r").replace("\n", "\\n")
    bad = folder / "m.json"
    bad.write_bytes(orjson.dumps({**_MSG, "role": 1}))
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() and all(line.startswith(f"{shown}/m.json:/role: ") for line in out.splitlines()), out
    assert main(["validate", "--output-format", "json", str(bad)]) == 1
    assert {orjson.loads(line)["file"] for line in capsys.readouterr().out.splitlines()} == {str(bad)}
    messages = folder / "messages.json"
    messages.write_bytes(orjson.dumps(_MSG))
    assert main(["reduce", str(messages)]) == 2  # a hint, printed as it is by the command
    assert capsys.readouterr().err.startswith(f"agentmsg: {shown}/messages.json holds messages, not events: ")
    assert main(["format", "--provider", "openai", str(folder / "none.json")]) == 2  # a usage error
    assert capsys.readouterr().err == f"agentmsg: {shown}/none.json: cannot read: No such file or directory\n"
    for argv in (["events"], ["parse", "--provider", "openai"], ["reduce"]):
        empty = folder / "empty.json"
        empty.write_bytes(b"")
        assert main([*argv, str(empty)]) == 1, argv
        assert capsys.readouterr().err.startswith(f"{shown}/empty.json: the input is empty"), argv


def _given(action: argparse.Action, k: int) -> str:
    """The ``k``-th value (0 or 1) given to an option that takes one: two of its choices, else two values its type
    takes (a number, ``KEY=JSON``), else words."""
    if action.choices:
        choices = [str(c) for c in action.choices]
        return choices[min(k, len(choices) - 1)]
    if action.type is None:
        return "ab"[k]
    for text in (str(k + 1), f"k{k}={k + 1}"):
        with contextlib.suppress(argparse.ArgumentTypeError, ValueError, TypeError):
            action.type(text)  # type: ignore[operator]
            return text
    raise AssertionError(f"no value for {action.option_strings}")


def test_every_single_valued_option_given_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse takes the last of an option given twice: `--provider openai --provider anthropic` formatted for
    anthropic, `--stream --stream`, `--budget 5 --budget=6` all went through without a word. Every command's
    single-valued options (store, store_const, store_true, store_false), enumerated from the parsers, now stop
    with a usage error naming the option and both values (as parsed), exit 2; given once, it parses; the
    options meant to repeat (append, count) still do, and nothing of the check is left in the parsed arguments."""
    checked = 0
    repeated = 0
    for name, p in _subcommands().items():
        positionals = ["x" for a in p._actions if not a.option_strings]
        for action in p._actions:
            if not action.option_strings:
                continue
            required = []
            for other in p._actions:
                if other.option_strings and other.required and other is not action:
                    required += [other.option_strings[0], _given(other, 0)]
            option = action.option_strings[-1]
            once: list[str] = [option] if action.nargs == 0 else [option, _given(action, 0)]
            twice = once + ([option] if action.nargs == 0 else [f"{option}={_given(action, 1)}"])
            if isinstance(action, (argparse._AppendAction, argparse._CountAction)):
                args = build_parser().parse_args([name, *required, *twice, *positionals])
                assert len(getattr(args, action.dest)) == 2 if isinstance(action, argparse._AppendAction) else True
                repeated += 1
                continue
            if not isinstance(action, (argparse._StoreAction, argparse._StoreConstAction)):
                continue  # (--help)
            args = build_parser().parse_args([name, *required, *once, *positionals])
            assert not any(key.startswith("_") for key in vars(args)), (name, option)
            second = build_parser().parse_args([name, *required, *twice[len(once) :], *positionals])
            capsys.readouterr()
            with pytest.raises(SystemExit) as exit:
                build_parser().parse_args([name, *required, *twice, *positionals])
            values = "" if action.nargs == 0 else f" ({getattr(args, action.dest)}, {getattr(second, action.dest)})"
            err = capsys.readouterr().err
            assert exit.value.code == 2, (name, option, err)
            assert err.endswith(f"agentmsg {name}: error: {option} given twice{values}\n"), (name, option, err)
            checked += 1
    assert checked > 40 and repeated >= 2, (checked, repeated)
    capsys.readouterr()
    assert main(["format", "--provider", "openai", "--provider", "anthropic", "x.json"]) == 2
    assert capsys.readouterr().err.endswith("agentmsg format: error: --provider given twice (openai, anthropic)\n")


def test_a_limit_option_past_what_agentmsg_limits_takes_is_a_usage_error(
    tmp_path: Path, quiet: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-bytes`` took any whole number, and a command then set ``agentmsg.limits.max_bytes`` to it: past 2**62,
    the most the limits take, every command that has the option ended in a ValidationError traceback (``validate
    --max-bytes 99999999999999999999999 FILE``). It is now a usage error naming the option and its range, exit 2, in
    every command (enumerated from the parsers); 2**62 itself runs the command as no option does."""
    path = tmp_path / "message.json"
    path.write_bytes(orjson.dumps(_MSG))
    most = 2**62
    checked = 0
    for name, p in _subcommands().items():
        if not any("--max-bytes" in a.option_strings for a in p._actions):
            continue
        argv = _argv(name, p, str(path))
        capsys.readouterr()
        plain = main(argv)
        plain_out = capsys.readouterr().out
        assert main([argv[0], "--max-bytes", str(most), *argv[1:]]) == plain, name
        assert capsys.readouterr().out == plain_out, name
        assert main([argv[0], "--max-bytes", str(most + 1), *argv[1:]]) == 2, name
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.endswith(
            f"agentmsg {name}: error: argument --max-bytes: --max-bytes is out of range: must be between 1 and {most},"
            f" got {most + 1}\n"
        ), (name, err[-400:])
        checked += 1
    assert checked >= 6, checked


def test_two_options_of_one_setting_given_together_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Two options that set one thing (``validate --json --output-format text``, ``parse --cumulative
    --incremental``, ``--think-tags --think-tags-open``) took the last silently: the JSON asked for came out as
    text. Every such pair, enumerated from the parsers, is now a usage error naming both, exit 2; each alone parses."""
    pairs = 0
    for name, p in _subcommands().items():
        positionals = ["x" for a in p._actions if not a.option_strings]
        required = [
            arg for a in p._actions if a.option_strings and a.required for arg in (a.option_strings[0], _given(a, 0))
        ]
        by_dest: dict[str, list[argparse.Action]] = {}
        for action in p._actions:
            if action.option_strings and isinstance(action, (argparse._StoreAction, argparse._StoreConstAction)):
                by_dest.setdefault(action.dest, []).append(action)
        for actions in by_dest.values():
            for first, then in itertools.permutations(actions, 2):
                given = [
                    arg
                    for a in (first, then)
                    for arg in ([a.option_strings[-1]] if a.nargs == 0 else [a.option_strings[-1], _given(a, 0)])
                ]
                build_parser().parse_args([name, *required, *given[: 1 if first.nargs == 0 else 2], *positionals])
                capsys.readouterr()
                with pytest.raises(SystemExit) as exit:
                    build_parser().parse_args([name, *required, *given, *positionals])
                err = capsys.readouterr().err
                said = f"{first.option_strings[-1]} and {then.option_strings[-1]} set the same thing: give one"
                if any(first in g._group_actions and then in g._group_actions for g in p._mutually_exclusive_groups):
                    said = f"argument {then.option_strings[-1]}: not allowed with argument {first.option_strings[-1]}"
                assert exit.value.code == 2 and err.endswith(f"agentmsg {name}: error: {said}\n"), (name, err)
                pairs += 1
    assert pairs >= 8, pairs  # (validate, parse twice, chat: 8 ordered pairs)


def test_an_input_is_told_empty_without_a_copy_of_it() -> None:
    """``empty_input`` (every command's check of a whole input) stripped the input's blanks, which copied all of it
    when it ended with a newline: a 32 MiB body was held twice while parse told it was not empty. It now looks for
    a byte that is no blank in place; its answers are strip's."""
    import tracemalloc

    from agentmsg.cli._io import BOM, EMPTY_INPUT, blank, empty_input

    for data in (b"", b" \t\r\n", BOM, BOM + b"\n ", b" x ", BOM + b"x", b"\x0b", BOM[:2], BOM * 2, b"\n{}\n"):
        assert blank(data) is (not data.removeprefix(BOM).strip(b" \t\r\n")), data
    assert empty_input(b"\r\n") is EMPTY_INPUT and empty_input(b"{}\n") is None

    def peak(size: int) -> int:
        data = b"\n" + b"x" * size + b"\n"
        marked = BOM + data
        tracemalloc.start()
        try:
            assert empty_input(data) is None and empty_input(marked) is None
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    n = 1 << 20
    assert peak(4 * n) < 2 * peak(n) + 4096 < n // 8


def _first_line_past_a_chunk(kind: str, size: int) -> bytes:
    """A provider's stream whose first payload holds ``size`` bytes of text (longer than :data:`CHUNK`, or not): an
    Anthropic SSE stream (its first text delta), OpenAI's chunks as JSON lines (the first one's content)."""
    from tests._support.providers import FIX

    if kind == "anthropic":
        start, rest = (FIX / "anthropic" / "stream_docs_basic.sse").read_bytes().split(b"event: ping", 1)
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "y" * size}}
        return start + b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\nevent: ping" + rest
    events = (FIX / "openai" / "stream_finish_length.sse").read_bytes().split(b"\n\n")
    payloads = [orjson.loads(e.split(b"data:", 1)[1]) for e in events if e.strip() and b"[DONE]" not in e]
    payloads[0]["choices"][0]["delta"]["content"] = "q" * size
    return b"".join(orjson.dumps(p) + b"\n" for p in payloads)


@pytest.mark.parametrize(
    ("kind", "command"),
    [
        ("anthropic", ["reduce"]),
        ("anthropic", ["validate"]),
        *(
            ("openai", command)
            for command in (
                ["reduce"],
                ["events"],
                ["validate"],
                ["format", "--provider", "gemini"],
                ["count", "--provider", "gemini"],
                ["trim", "--provider", "gemini", "--budget", "100"],
            )
        ),
    ],
)
def test_every_command_s_reply_hint_reads_the_start_to_a_line_end(
    kind: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reply hint of reduce, events, validate, format, count and trim was asked about the input's first
    read (CHUNK bytes), which ends inside a first payload longer than that: no hint (reduce took OpenAI's
    JSON lines for messages: "holds messages, not events"). It reads the start to the end of a line, as
    ``agentmsg parse``'s hint does (cli._io.hint_head): the command that reads the stream is named, as for the
    same stream with a short first payload; OpenAI's JSON lines as a stream (--stream), not as a reply (its first
    line, alone in the head, is one JSON value: the head is not all of the input)."""
    from agentmsg.cli._io import CHUNK

    hints = []
    for size in (100, 2 * CHUNK):
        path = tmp_path / f"stream-{size}"
        path.write_bytes(_first_line_past_a_chunk(kind, size))
        capsys.readouterr()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main([*command, str(path)])
        err = capsys.readouterr().err.replace(str(path), "FILE")
        assert code in (1, 2)
        hints.append([line for line in err.splitlines() if "'agentmsg parse --provider" in line])
    short, long = hints
    flag = "" if kind == "anthropic" else " --stream"  # (OpenAI's as JSON lines: no SSE)
    said = f"--provider {'/'.join(same_reader(kind))}{flag}'"  # (every registry name whose reader reads it)
    assert len(short) == 1 and said in short[0], short
    assert long == short


def test_the_hint_s_head_holds_at_most_its_limit_of_a_long_first_line() -> None:
    """``HintHead`` kept the whole first piece it was given (a ``readline`` up to limits.max_bytes) for the
    command's life, though the hint reads :data:`HEAD_LIMIT` bytes of it at most: a 4 MiB first line was held
    whole. It keeps the head's bytes alone; what it says is the same."""
    import tracemalloc

    from agentmsg.cli._io import HEAD_LIMIT, HintHead, hint_head

    line = b"[" + b"0," * (2 * 1024 * 1024) + b"0]\n"  # 4 MiB and more
    expected = hint_head(line + b"{}\n", whole=False)
    for way in ("first", "readline"):
        tracemalloc.start()
        try:
            data = line + b"{}\n"
            if way == "first":
                head = HintHead(data)
            else:
                head = HintHead()
                assert head.reading(io.BytesIO(data)).readline() == line
            del data
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert head.bytes == expected == line[:HEAD_LIMIT] and not head.whole
        assert held < HEAD_LIMIT + HEAD_LIMIT // 2 < len(line), (way, held)
