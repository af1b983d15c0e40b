"""``tests/_support/cli.py``'s runner: a child of its zygote gives what a fresh ``python -m agentmsg`` gives (exit
status, stdout and stderr as ``subprocess.run(text=True)`` reads them), in the caller's directory and environment
at the time of the call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests._support import cli
from tests._support.cli import fresh, run
from tests._support.events import jsonl_lines

GOOD = {"id": "m1", "name": "Friday", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
BAD = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}


def _same(r: subprocess.CompletedProcess[str], f: subprocess.CompletedProcess[str]) -> None:
    assert (r.args, r.returncode, r.stdout, r.stderr) == (f.args, f.returncode, f.stdout, f.stderr)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    (tmp_path / "bad.json").write_text(json.dumps(BAD))
    (tmp_path / "conv.json").write_text(json.dumps([GOOD]))
    return {name: str(tmp_path / f"{name}.json") for name in ("good", "bad", "conv")}


def test_runs_as_a_fresh_process_does(files: dict[str, str]) -> None:
    cases = [
        ("validate", files["good"]),
        ("validate", "--output-format", "json", files["bad"], files["good"]),
        ("validate", "--nope", files["good"]),
        ("validate", "--help"),
        ("count", "--provider", "openai", files["conv"]),
        ("count", "--provider", "dashscope", files["conv"]),
        ("trim", "--provider", "openai", "--model", "gpt-4", "--budget", "1000", files["conv"]),
        ("validate", "-"),  # stdin is /dev/null in both: an empty input
    ]
    ran = [run(*args) for args in cases]
    for args, r in zip(cases, ran, strict=True):
        _same(r, fresh(*args))
    assert [r.returncode for r in ran[:4]] == [0, 1, 2, 0]
    _same(run("validate", "-", stdin=json.dumps(BAD)), fresh("validate", "-", stdin=json.dumps(BAD)))


def test_stdin_stdout_and_stderr_are_apart(files: dict[str, str], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    r = run("validate", "-", files["bad"], missing, stdin=json.dumps(GOOD))
    assert r.returncode == 2
    assert r.stderr == f"agentmsg: {missing}: cannot read: No such file or directory\n"
    assert r.stdout.startswith(f"{files['bad']}:/content/0/type: ") and "-:" not in r.stdout
    assert run("validate", "-", stdin=json.dumps(GOOD)).returncode == 0
    assert run("validate", "-", stdin=json.dumps(BAD)).stdout.startswith("-:/content/0/type: ")


def test_stdout_given_as_a_file_is_written_there(files: dict[str, str], tmp_path: Path) -> None:
    """``stdout=`` a file: the command writes its output there, as ``subprocess.run(stdout=file)`` makes it (a
    full disk's error the same too); the result's stdout is None."""
    outputs: list[str] = []
    for how in (run, fresh):
        with (tmp_path / f"{how.__name__}.txt").open("w") as out:
            r = how("validate", "--output-format", "json", files["bad"], files["good"], stdout=out)
        assert r.stdout is None and r.returncode == 1 and r.stderr == ""
        outputs.append((tmp_path / f"{how.__name__}.txt").read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1] and files["bad"] in outputs[0]
    for how in (run, fresh):
        with open("/dev/full", "w") as full:
            r = how("schema", "msg", stdout=full)
        assert r.stdout is None
        assert (r.returncode, r.stderr) == (2, "agentmsg: cannot write the output: No space left on device\n")


def test_output_is_decoded_as_text_mode_decodes_it(tmp_path: Path) -> None:
    """A file name with non-ASCII (printed as it is) and CR LF (printed escaped, as every control character of a
    name the terminal shows): read as ``text=True`` reads it."""
    odd = tmp_path / "bé\r\nd.json"
    odd.write_text(json.dumps(BAD))
    raw = subprocess.run([*cli.command("validate", str(odd))], capture_output=True, stdin=subprocess.DEVNULL)
    assert b"b\xc3\xa9\\r\\nd.json:" in raw.stdout
    r = run("validate", str(odd))
    assert "bé\\r\\nd.json:" in r.stdout and "\r" not in r.stdout
    _same(r, fresh("validate", str(odd)))


def test_environment_and_directory_are_the_callers_at_the_call(
    files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTMSG_RULES_URL", raising=False)
    args = ("validate", "--output-format", "sarif", files["bad"])
    assert "https://rules.test/r#" not in run(*args).stdout
    monkeypatch.setenv("AGENTMSG_RULES_URL", "https://rules.test/r")
    assert "https://rules.test/r#role-content" in run(*args).stdout
    monkeypatch.chdir(tmp_path)
    r = run("validate", "bad.json")
    assert r.returncode == 1 and r.stdout.startswith("bad.json:/content/0/type: ")
    other = tmp_path / "other"
    other.mkdir()
    (other / "bad.json").write_text(json.dumps(GOOD))
    assert run("validate", "bad.json", cwd=other).returncode == 0
    assert run("validate", "bad.json").returncode == 1


def test_variables_read_at_start_get_their_own_interpreter(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's own variables or agentmsg's AGENTMSG_PURE_PYTHON differ: a run started with them (its stdout's
    encoding is PYTHONIOENCODING's), from another zygote."""
    odd = Path(files["bad"]).with_name("né.json")
    odd.write_text(json.dumps(BAD))
    monkeypatch.setenv("PYTHONIOENCODING", "ascii:backslashreplace")
    assert "n\\xe9.json:" in run("validate", str(odd)).stdout
    monkeypatch.delenv("PYTHONIOENCODING")
    assert "né.json:" in run("validate", str(odd)).stdout
    monkeypatch.setenv("AGENTMSG_PURE_PYTHON", "1")
    _same(run("validate", files["bad"]), fresh("validate", files["bad"]))
    if not os.environ.get("AGENTMSG_TEST_CLI_FRESH"):
        assert ("1", *sorted(cli._startup(dict(os.environ)).items())) in cli._zygotes


def test_a_megabyte_each_way_does_not_block(tmp_path: Path) -> None:
    """2.4 MB on stdout for 1.2 MB on stdin: the pipes are written and read at once, as communicate does."""
    text = "é" * 600_000
    conversation = json.dumps([{"id": "m1", "role": "ASSISTANT", "content": [{"type": "text", "text": text}]}])
    r = run("events", "-", stdin=conversation)
    assert r.returncode == 0 and r.stderr == ""
    events = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_BLOCK_DELTA") == text


def test_a_run_past_its_timeout_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    """A FIFO nobody writes: the command waits for ever; the run raises TimeoutExpired, as subprocess.run does,
    and the next run is served."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(cli, "TIMEOUT", 0.5)
    with pytest.raises(subprocess.TimeoutExpired):
        run("validate", str(fifo))
    monkeypatch.undo()
    assert run("validate", files["good"]).returncode == 0


def test_a_dead_zygote_is_replaced(files: dict[str, str]) -> None:
    if os.environ.get("AGENTMSG_TEST_CLI_FRESH"):
        pytest.skip("AGENTMSG_TEST_CLI_FRESH=1: no zygote")
    assert run("validate", files["good"]).returncode == 0
    key = (os.environ.get(cli.AT_IMPORT), *sorted(cli._startup(dict(os.environ)).items()))
    zygote = cli._zygotes[key]
    assert zygote is not None
    zygote.proc.kill()
    zygote.proc.wait()
    _same(run("validate", files["bad"]), fresh("validate", files["bad"]))  # (made afresh)
    assert cli._zygotes.get(key) is not zygote
    assert run("validate", files["good"]).returncode == 0


def test_count_and_trim_are_served_by_a_zygote_that_holds_the_vocabularies(files: dict[str, str]) -> None:
    """``count`` and ``trim`` (which load a tokenizer's vocabulary, 1-2 s a fresh run) run in children of a zygote of
    their own, which has loaded them all; the other commands in children of the zygote that has not."""
    if os.environ.get("AGENTMSG_TEST_CLI_FRESH"):
        pytest.skip("AGENTMSG_TEST_CLI_FRESH=1: no zygote")
    plain = (os.environ.get(cli.AT_IMPORT), *sorted(cli._startup(dict(os.environ)).items()))
    assert cli._key(dict(os.environ), ["validate", files["good"]]) == plain
    for command in ("count", "trim"):
        assert cli._key(dict(os.environ), [command, "--provider", "openai"]) == (*plain, "tokenizers")
    assert run("count", "--provider", "openai", files["conv"]).returncode == 0
    assert run("validate", files["good"]).returncode == 0
    assert cli._zygotes.get((*plain, "tokenizers")) is not None and cli._zygotes.get(plain) is not None
