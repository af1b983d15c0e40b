"""The repository's pre-commit hook (.pre-commit-hooks.yaml, id agentmsg-validate), run by the real pre-commit
tool as a user's project runs it: ``pre-commit run`` in a scratch git repository whose config names this repository's
hook, on good files (passes) and on subtly broken ones (fails, saying the problem with its rule). The config is the
one ``pre-commit try-repo <this repository> agentmsg-validate`` writes (this repository, or with uncommitted changes
pre-commit's shadow copy of it, at its commit); pre-commit installs agentmsg from it into its own environment (pip),
as it does for a user, once a commit (its store in .make/pre-commit/<commit>)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from pre_commit.commands.try_repo import _repo_ref  # type: ignore[import-untyped]

from tests.conftest import ROOT

pytestmark = [pytest.mark.no_kernel, pytest.mark.xdist_group("pre-commit")]

T = "2026-01-01T00:00:00Z"
#: pre-commit's store of each scratch repository (see scratch)
HOMES: dict[Path, Path] = {}


def msg(i: str, role: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"id": i, "role": role, "content": list(content)}


CALL = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
RESULT = {"type": "tool_result", "id": "c1", "name": "get_weather", "output": [{"type": "text", "text": "sunny"}]}


def test_the_manifest_declares_the_hook() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    hook = next(h for h in hooks if h["id"] == "agentmsg-validate")
    assert hook["entry"] == "agentmsg validate" and hook["language"] == "python"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with good and broken files of each kind, and pre-commit's store for it (its environment
    with agentmsg installed once a commit: see below)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("precommit-repo")
    events = subprocess.run(
        [sys.executable, "-m", "agentmsg", "events", "-"],
        input=json.dumps(msg("r1", "ASSISTANT", {"type": "text", "text": "hi"})),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    files = {
        "good/conversation.json": json.dumps(
            [msg("m1", "USER", {"type": "text", "text": "?"}), msg("m2", "ASSISTANT", CALL), msg("m3", "TOOL", RESULT)]
        ),
        "good/events.jsonl": events,
        "good/message.json": json.dumps(msg("m1", "USER", {"type": "text", "text": "hi"})),
        # an unanswered tool call; a stream cut inside its reply; a lowercase role
        "bad/orphan.json": json.dumps([msg("m1", "USER", {"type": "text", "text": "?"}), msg("m2", "ASSISTANT", CALL)]),
        "bad/cut.jsonl": "".join(events.splitlines(keepends=True)[:-2]),
        "bad/message.json": json.dumps(msg("m1", "user", {"type": "text", "text": "hi"})),
    }
    for name, content in files.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(content, "utf-8")
    # a file pre-commit takes for binary (a NUL byte), and a symbolic link to a broken file: skipped as not text
    (repo / "bad/nul.jsonl").write_bytes(b"\x00\n" + events.encode())
    (repo / "bad/link.json").symlink_to("message.json")
    # what try-repo runs: this repository at HEAD, or with uncommitted changes a shadow clone holding them, committed
    # (pre-commit's own step, here once for the module, so that the store installs the hook once)
    hook_repo, rev = _repo_ref(str(tmp_path_factory.mktemp("precommit-shadow")), str(ROOT), None)
    config = {"repos": [{"repo": hook_repo, "rev": rev, "hooks": [{"id": "agentmsg-validate"}]}]}
    # pre-commit's store (the hook's environment, agentmsg built and installed into it: most of the test's time)
    # kept in .make/pre-commit/<rev> (make clean removes it): a run at the same commit of a clean tree reuses it
    # (the commit is the hook's whole source), a dirty tree's shadow commit is new each run; others' are removed
    stores = ROOT / ".make" / "pre-commit"
    if stores.is_dir():
        for old in stores.iterdir():
            if old.name != rev:
                shutil.rmtree(old, ignore_errors=True)
    HOMES[repo] = stores / rev
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), "utf-8")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    return repo


def try_repo(repo: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit run`` of this repository's hook (the scratch repository's config) on ``files`` (``--files``),
    pre-commit's store the one :func:`scratch` names (one environment for the module's runs, and the commit's)."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(HOMES[repo]), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "agentmsg-validate", "--files", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_hook_passes_good_files_and_fails_broken_ones(scratch: Path) -> None:
    good = try_repo(scratch, "good/conversation.json", "good/events.jsonl", "good/message.json")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "agentmsg validate" in good.stdout and "Passed" in good.stdout
    bad = try_repo(scratch, "good/message.json", "bad/orphan.json", "bad/cut.jsonl", "bad/message.json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    for line in (
        "bad/orphan.json:/1/content/0: tool call 'c1' (get_weather) has no result before the next turn [tool-use-orphan]",
        "[incomplete_stream]",
        "bad/message.json:/role: roles are uppercase",
    ):
        assert line in bad.stdout, bad.stdout
    assert "good/message.json" not in bad.stdout
    bad = try_repo(scratch, "bad/link.json", "bad/nul.jsonl")  # (checked, not skipped, and refused)
    assert bad.returncode == 1 and "Failed" in bad.stdout, bad.stdout
    assert "bad/link.json:" in bad.stdout and "bad/nul.jsonl:" in bad.stdout, bad.stdout
