"""docs/ci.md's jobs are valid YAML and run what the tests run: each `agentmsg ...` line of a GitHub Actions step
or a GitLab script is run here, as the job's shell would (quoted patterns left to agentmsg, `> FILE` written), in a
scratch tree of good files (exit 0, a clean report; a project with no file of one of the kinds the hook checks
passes too) and with broken files (exit 1, the report says them, of every kind the hook checks); the pre-commit
snippet names the hook the repository's manifest declares."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from tests._support.cli import run
from tests.conftest import ROOT

DOC = ROOT / "docs" / "ci.md"


def blocks() -> list[Any]:
    text = DOC.read_text("utf-8")
    return [yaml.safe_load(m.group(1)) for m in re.finditer(r"^```yaml\n(.*?)^```", text, re.S | re.M)]


def commands() -> list[str]:
    """The agentmsg lines of the GitHub Actions steps and the GitLab scripts."""
    github, gitlab, _ = blocks()
    lines = [step["run"] for job in github["jobs"].values() for step in job["steps"] if "run" in step]
    lines += gitlab["agentmsg"]["script"]
    return [line for line in lines if line.startswith("agentmsg ")]


def test_the_jobs_and_the_hook_are_as_the_repository_has_them() -> None:
    github, gitlab, precommit = blocks()
    assert github["jobs"]["agentmsg"]["runs-on"] and gitlab["agentmsg"]["artifacts"]["reports"]["junit"]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert precommit["repos"][0]["hooks"][0]["id"] in {h["id"] for h in hooks}
    formats = {shlex.split(line)[shlex.split(line).index("--output-format") + 1] for line in commands()}
    assert formats == {"github", "sarif", "junit"}


def test_the_hooks_files_pattern_keeps_to_the_files_the_hook_reads() -> None:
    """A ``files:`` in the user's config replaces the hook's own (pre-commit's rule): the snippet's pattern must
    keep the hook's extensions, or every text file under the folder (a README.md) is validated and fails."""
    precommit = blocks()[2]
    given = re.compile(precommit["repos"][0]["hooks"][0]["files"])
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    own = re.compile(next(h["files"] for h in hooks if h["id"] == "agentmsg-validate"))
    for name in ("data/chat.json", "data/a/events.jsonl", "data/reply.sse", "data/x.ndjson"):
        assert given.search(name) and own.search(name), name
    for name in ("data/README.md", "data/notes.txt", "src/chat.json"):
        assert not given.search(name), name


def run_line(line: str, cwd: Path) -> tuple[int, str]:
    """One job line as its shell runs it: the words (quotes kept from the shell's globbing), ``> FILE`` the
    output; (exit status, what was written)."""
    words = shlex.split(line)
    target = None
    if ">" in words:
        at = words.index(">")
        words, target = words[:at], words[at + 1]
    r = run(*words[1:], cwd=cwd)
    if target is not None:
        (cwd / target).write_text(r.stdout, "utf-8")
    return r.returncode, r.stdout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    call = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}
    result = {"type": "tool_result", "id": "c1", "name": "get_weather", "output": [{"type": "text", "text": "ok"}]}
    conversation = [
        {"id": "m1", "role": "USER", "content": [{"type": "text", "text": "?"}]},
        {"id": "m2", "role": "ASSISTANT", "content": [call]},
        {"id": "m3", "role": "TOOL", "content": [result]},
    ]
    (tmp_path / "data" / "chats").mkdir(parents=True)
    (tmp_path / "data" / "chats" / "a.json").write_text(json.dumps(conversation), "utf-8")
    done = run(
        "events", "-", stdin=json.dumps({"id": "r1", "role": "ASSISTANT", "content": [{"type": "text", "text": "hi"}]})
    )
    assert done.returncode == 0, done.stderr
    events = done.stdout
    (tmp_path / "data" / "events.jsonl").write_text(events, "utf-8")
    (tmp_path / "data" / "chats" / "b.ndjson").write_text("".join(json.dumps(m) + "\n" for m in conversation), "utf-8")
    return tmp_path


def test_the_jobs_commands_pass_good_files_and_fail_a_broken_one(tree: Path) -> None:
    for line in commands():
        status, out = run_line(line, tree)
        assert status == 0, (line, out)
    assert json.loads((tree / "agentmsg.sarif").read_text())["runs"][0]["results"] == []
    suite = ET.parse(tree / "agentmsg-junit.xml").getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0"  # .json, .jsonl, .ndjson: no .sse here
    broken = json.loads((tree / "data" / "chats" / "a.json").read_text())[:2]  # the tool call left unanswered
    (tree / "data" / "chats" / "a.json").write_text(json.dumps(broken), "utf-8")
    for line in commands():
        status, out = run_line(line, tree)
        assert status == 1, (line, out)
    assert "tool-use-orphan" in run_line(commands()[0], tree)[1]
    results = json.loads((tree / "agentmsg.sarif").read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["tool-use-orphan"]
    failures = ET.parse(tree / "agentmsg-junit.xml").getroot().findall(".//failure")
    assert [f.get("type") for f in failures] == ["tool-use-orphan"]
    sse = run("events", "--sse", "-", stdin=json.dumps({"id": "r2", "role": "ASSISTANT", "content": []}))
    (tree / "data" / "reply.sse").write_text(sse.stdout.replace("AGENT_END", "AGENT_OVER"), "utf-8")
    for line in commands():  # the files the pre-commit hook checks, every kind of them
        status, out = run_line(line, tree)
        assert status == 1, (line, out)
    failed = {c.get("name") for c in ET.parse(tree / "agentmsg-junit.xml").getroot().iter("testcase") if len(c)}
    assert failed == {"data/chats/a.json", "data/reply.sse"}
