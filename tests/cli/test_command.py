"""The agentmsg command line as a whole, run as a real subprocess: what every command shares (help pages, exit
codes, an output closed early, a full disk, an unknown option, file names that are not UTF-8) and refusing binary or
empty input. Each command's own tests are in its file beside this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.cli import run

GOOD: dict[str, object] = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
    "timestamp": None,
    "usage": None,
}
BAD = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}


def test_subcommand_help_pages_have_descriptions() -> None:
    for command in ("validate", "schema", "reduce", "events", "format", "parse", "chat", "serve"):
        r = run(command, "--help")
        _, _, rest = r.stdout.partition("\n\n")
        assert r.returncode == 0 and rest.strip() and not rest.startswith(("positional", "options")), command


def test_every_help_page_ends_with_its_exit_codes() -> None:
    for command in ("validate", "schema", "reduce", "events", "format", "parse", "chat", "serve"):
        r = run(command, "--help")
        _, _, status = r.stdout.partition("\nexit status:\n")
        codes = [line.split()[0] for line in status.splitlines() if line[:3].strip().isdigit()]
        assert codes == sorted(codes, key=int) and {"0", "2"} <= set(codes), command
        assert "130" in codes or command == "serve", command  # serve: Ctrl-C is how it stops (0)
    reduce_help = run("reduce", "--help").stdout.partition("exit status:")[2]
    assert "a reply was cut" in reduce_help


def _cut_short(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run agentmsg with its stdout read for a few bytes then closed, as `| head -c 16` does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    proc.stdout.read(16)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(60), err


def test_output_closed_early_stops_quietly_with_141(tmp_path: Path) -> None:
    """`agentmsg ... | head`: no traceback, no 'Exception ignored', not 'cannot read: Broken pipe' (validate
    and events said so, exit 2, as if the input could not be read), and not exit 0 (validate's problems were
    not all printed): 141, as a tool killed by SIGPIPE."""
    reply = {**GOOD, "role": "ASSISTANT", "content": [{"type": "text", "text": "hello " * 50}]}
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{**reply, "id": f"m{i}"} for i in range(3000)]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text((json.dumps(BAD) + "\n") * 5000)
    events = run("events", str(many)).stdout.encode()
    for args, stdin in (
        (("validate", str(bad)), b""),
        (("validate", "--json", str(bad), str(bad)), b""),
        (("events", "--chunk-size", "2", str(many)), b""),
        (("events", "--sse", str(many)), b""),
        (("reduce", "-"), events),
    ):
        code, err = _cut_short(*args, stdin=stdin)
        assert (code, err) == (141, ""), args


def test_an_output_cut_short_is_said_with_141_under_pythonunbuffered_too(tmp_path: Path) -> None:
    """PYTHONUNBUFFERED=1 (set in many CI and container images) makes stdout's text layer write to the file
    itself, and CPython's TextIOWrapper takes a partial write for a whole one: an output written at once
    (format's body, validate's SARIF log) cut short by `| head` ended with exit 0 (format) or 1 (validate), the
    rest of it dropped without a word, as a full disk's short write would be. The output is written whole, or
    the command says it could not be: 141 here, as without the variable."""
    user = {**GOOD, "content": [{"type": "text", "text": "hello " * 50}]}
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{**user, "id": f"m{i}"} for i in range(3000)]))  # a body of about 1 MB
    bad = tmp_path / "bad.jsonl"
    bad.write_text((json.dumps(BAD) + "\n") * 5000)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for args in (
        ("format", "--provider", "openai", str(many)),
        ("validate", "--output-format", "sarif", str(bad)),
    ):
        code, err = _cut_short(*args, env=env)
        assert (code, err) == (141, ""), args
    r = subprocess.run(  # and written whole when nothing cuts it (the same bytes as without the variable)
        [sys.executable, "-m", "agentmsg", "format", "--provider", "openai", str(many)],
        env=env,
        capture_output=True,
        check=False,
    )
    assert r.returncode == 0 and r.stdout == run("format", "--provider", "openai", str(many)).stdout.encode()


def test_reduce_and_serve_refuse_binary_and_empty_input_at_once(tmp_path: Path) -> None:
    """Binary data (/dev/zero never ends: reduce read it forever) is refused after one chunk; an empty input
    is said (reduce printed nothing and exited 0). A text file whose first line is not an event (a log line)
    is still reduced, that line said."""
    pytest.importorskip("uvicorn")
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    for path in ("/dev/zero", str(png)):
        r = run("reduce", path)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.startswith(f"{path}: not an event stream (JSON lines, SSE or a JSON array): binary data (")
        s = run("serve", path, "--port", "0")
        assert s.returncode == 2 and s.stderr.startswith(f"agentmsg: {path} is not an event stream")
        p = run("parse", "--provider", "openai", "--stream", path)
        assert p.returncode == 2 and p.stderr.startswith(f"agentmsg: {path}: not an openai stream: binary data")
    r = run("reduce", str(empty))
    said = "the input is empty (no bytes, or only blanks): nothing to read [empty]"
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{empty}: {said}\n")
    s = run("serve", "-", "--port", "0", stdin="")
    assert s.returncode == 2 and s.stderr == f"agentmsg: -: {said}\n"
    reply = {**GOOD, "role": "ASSISTANT"}
    events = run("events", "-", stdin=json.dumps(reply)).stdout
    r = run("reduce", "-", stdin="starting the agent...\n" + events)
    assert r.returncode == 1 and json.loads(r.stdout)["content"] == reply["content"]
    assert r.stderr.startswith("-:/0: line 1: not valid JSON")


@pytest.mark.skipif(not Path("/dev/full").exists() or not Path("/proc/self/mem").exists(), reason="Linux devices")
def test_write_and_read_errors_are_one_line_each_naming_the_right_side(tmp_path: Path) -> None:
    """Output to a full disk printed a traceback (chat, reduce, schema...) or blamed the input ('msg.json:
    cannot read: No space left on device': validate, events); an input that fails mid-read (EIO) is named."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps({**GOOD, "role": "ASSISTANT"}))
    events = tmp_path / "events.jsonl"
    events.write_text(run("events", str(reply)).stdout)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BAD))
    for args in (
        ("events", str(reply)),
        ("validate", str(bad)),
        ("validate", "--json", str(bad)),
        ("reduce", str(events)),
        ("schema", "msg"),
        ("format", "--provider", "openai", str(reply)),
        ("--help",),  # (argparse swallowed a failed write of its help and version: exit 0, nothing printed)
        ("--version",),
        ("validate", "--help"),
    ):
        with open("/dev/full", "w") as full:
            r = run(*args, stdout=full)
        assert (r.returncode, r.stderr) == (2, "agentmsg: cannot write the output: No space left on device\n"), args
    for unbuffered, args in (
        ("1", ("--version",)),
        ("", ("reduce", "--help")),
    ):  # (a write fails at once, or the flush)
        env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "agentmsg", *args], stdout=full, stderr=subprocess.PIPE, env=env, timeout=60
            )
        assert (done.returncode, done.stderr) == (
            2,
            b"agentmsg: cannot write the output: No space left on device\n",
        )
    for command in ("reduce", "events", "validate"):
        r = run(command, "/proc/self/mem")
        assert r.returncode == 2 and r.stderr == "agentmsg: /proc/self/mem: cannot read: Input/output error\n"


def test_stdout_or_stderr_closed_at_start_is_exit_2_never_a_traceback(tmp_path: Path) -> None:
    """`agentmsg schema msg >&-` died with an AttributeError traceback (sys.stdout is None); with `2>&-` the
    diagnostics went to stdout (print(file=None)), among the output. Now nothing is run, exit 2: a closed stdout is
    said on stderr, a closed stderr is not said at all (stdout holds nothing)."""
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([GOOD]))
    command = [sys.executable, "-m", "agentmsg"]
    args: tuple[str, ...]
    for args in (("schema", "msg"), ("validate", str(tmp_path / "none.json")), ("--version",)):
        r = subprocess.run(
            ["sh", "-c", '"$@" >&-', "sh", *command, *args], stderr=subprocess.PIPE, text=True, timeout=60
        )
        assert (r.returncode, r.stderr) == (
            2,
            "agentmsg: the standard output is closed: nothing can be written (to discard it: >/dev/null)\n",
        ), args
    for args in (("validate", str(tmp_path / "none.json")), ("format", "--provider", "anthropic", str(conv))):
        r = subprocess.run(
            ["sh", "-c", '"$@" 2>&-', "sh", *command, *args], stdout=subprocess.PIPE, text=True, timeout=60
        )
        assert (r.returncode, r.stdout) == (2, ""), args


def test_stdin_closed_at_start_is_no_traceback(tmp_path: Path) -> None:
    """`agentmsg format ... conv.json <&-` (stdin closed, as under some service managers and cron setups) died with
    an AttributeError traceback, exit 1, though it reads no stdin: sys.stdin is None, and read_bytes asked for
    its buffer. A file is read as ever; '-' is one that cannot be read (exit 2, said in one line)."""
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([GOOD]))
    command = [sys.executable, "-m", "agentmsg"]

    def closed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", '"$@" <&-', "sh", *command, *args], capture_output=True, text=True, timeout=60
        )

    for args in (("format", "--provider", "openai"), ("count", "--provider", "openai"), ("validate",)):
        r = closed(*args, str(conv))
        assert (r.returncode, r.stderr) == (0, ""), args
    for args in (("format", "--provider", "openai"), ("validate",), ("reduce",), ("events",)):
        r = closed(*args, "-")
        assert (r.returncode, r.stderr) == (2, "agentmsg: -: cannot read: the standard input is closed\n"), args


def test_an_unknown_option_is_said_with_the_commands_usage() -> None:
    """argparse said 'agentmsg: error: unrecognized arguments: --bogus' under the top-level usage, as if the
    command were unknown: the command's own usage and name now."""
    r = run("reduce", "--bogus", "events.jsonl")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: agentmsg reduce ")
    assert r.stderr.endswith("agentmsg reduce: error: unrecognized arguments: --bogus\n")
    r = run("validate", "x.json", "--jsn")
    assert r.returncode == 2 and r.stderr.endswith("agentmsg validate: error: unrecognized arguments: --jsn\n")


def test_a_file_name_that_is_not_utf8_is_shown_with_xnn_by_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file name with bytes that are not UTF-8 (Python holds them as surrogate escapes) was shown by events,
    reduce, parse and format as '\\udcff' (stderr's backslashreplace of the surrogate): not the name's bytes,
    and not as validate shows it. Now '\\xff', as validate does, in problem lines and usage errors alike, with
    PYTHONIOENCODING=utf-8 too."""
    names = {key: os.fsdecode(b"%s\xff.json" % key.encode()) for key in ("bad", "tools", "missing")}
    try:
        for key in ("bad", "tools"):
            (tmp_path / names[key]).write_bytes(b"{not json")
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([{"role": "USER", "content": "hi"}]))
    bad, tools, missing = (str(tmp_path / names[key]) for key in ("bad", "tools", "missing"))
    cases = [
        (["events", bad], "bad"),
        (["reduce", bad], "bad"),
        (["parse", "--provider", "openai", bad], "bad"),
        (["parse", "--provider", "openai", "--stream", bad], "bad"),
        (["format", "--provider", "openai", "--tools", tools, str(ok)], "tools"),
        (["format", "--provider", "openai", "--tools", missing, str(ok)], "missing"),
    ] + [([*command, missing], "missing") for command in (["events"], ["reduce"], ["parse", "--provider", "openai"])]
    cases.append((["format", "--provider", "openai", missing], "missing"))
    empty = tmp_path / names["bad"].replace("bad", "empty")
    empty.write_bytes(b"")
    cases += [(["serve", str(empty)], "empty"), (["serve", missing], "missing")]  # (refused before it listens)
    for encoding in (None, "utf-8"):
        if encoding is not None:  # (read as the interpreter starts: the runner starts one for it)
            monkeypatch.setenv("PYTHONIOENCODING", encoding)
        for args, key in cases:
            r = run(*args, errors="replace")
            assert r.returncode in (1, 2) and "Traceback" not in r.stderr, (args, r.stderr)
            assert f"{tmp_path}/{key}\\xff.json" in r.stderr and "\\udcff" not in r.stderr, (args, r.stderr)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["format", "--provider", os.fsdecode(b"a\xff"), "m.json"], "argument --provider: invalid choice: 'a\\xff' ("),
        (["validate", "--kind", os.fsdecode(b"\xff\n"), "m.json"], "argument --kind: invalid choice: '\\xff\\n' ("),
        ([os.fsdecode(b"\xff")], "agentmsg: error: argument command: invalid choice: '\\xff' ("),
        (["format", "--provider", "openai", "--reasoning", "x" * 5_000, "m.json"], "invalid choice: 'xxxxx"),
    ],
    ids=["provider", "kind", "command", "long"],
)
def test_an_invalid_choice_is_said_as_the_cli_says_what_it_was_given(args: list[str], said: str) -> None:
    """argparse's own invalid-choice error quoted the argument with repr: bytes that are not UTF-8 (Python holds them as
    surrogate escapes) as '\\udcff', not as the CLI says a file name or an unknown schema name ('\\xff'), and a
    long one whole (a line of 5,000 characters and more). Now as those are said: '\\xNN', control characters
    escaped, cut with its length said, on one line of at most 240 characters; the choices are listed as before."""
    r = run(*args, errors="replace")
    assert r.returncode == 2 and r.stdout == "", r.stdout
    (line,) = [line for line in r.stderr.splitlines() if "invalid choice" in line]
    assert said in line and "udcff" not in line and "(choose from '" in line, line
    assert len(line) <= 240, (len(line), line[:300])


def test_a_large_max_bytes_reads_a_small_file(tmp_path: Path) -> None:
    """``--max-bytes N`` is the most read, not what is reserved: every command that reads a file whole read it
    with one ``read(N + 1)``, which reserves N + 1 bytes whatever the file holds, so ``--max-bytes 100000000000``
    on a file of 300 bytes ended in a MemoryError traceback. A file, from its path or from stdin, is read whole
    under any limit; over it, it is still refused."""
    msg: dict[str, object] = {
        "id": "m",
        "name": None,
        "role": "USER",
        "content": [{"type": "text", "text": "hi"}],
        "metadata": {},
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([{**msg, "timestamp": None, "usage": None}]))
    huge = "100000000000"
    for args in (["format", "--provider", "openai"], ["count", "--provider", "openai"]):
        r = run(*args, "--max-bytes", huge, str(path))
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        r = run(*args, "--max-bytes", huge, "-", stdin=path.read_text())
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    r = run("parse", "--provider", "openai", "--max-bytes", huge, str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "not an openai response" in r.stderr, r.stderr
    size = len(path.read_bytes())
    assert run("format", "--provider", "openai", "--max-bytes", str(size), str(path)).returncode == 0
    r = run("format", "--provider", "openai", "--max-bytes", str(size - 1), "-", stdin=path.read_text())
    assert r.returncode == 1 and '"rule":"max-bytes"' in r.stderr, r.stderr
