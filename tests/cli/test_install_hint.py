"""The hint for a missing extra names a command that works: agentmsg is on no package index, so ``pip install
'agentmsg[web]'`` finds nothing (or someone else's package); the hint installs again from where this copy came
from (pip's PEP 610 record), with the extra."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentmsg.cli._install import install_command


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        (
            {"url": "file:///home/me/agentmsg/dist/agentmsg-0.1.0-cp311-cp311-linux_x86_64.whl", "archive_info": {}},
            "pip install '/home/me/agentmsg/dist/agentmsg-0.1.0-cp311-cp311-linux_x86_64.whl[web]'",
        ),
        (
            {"url": "file:///src/agent%20msg", "dir_info": {"editable": True}},
            "pip install -e '/src/agent msg[web]'",
        ),
        ({"url": "file:///src/agentmsg", "dir_info": {}}, "pip install '/src/agentmsg[web]'"),
        (
            {"url": "https://example.org/me/agentmsg.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
            "pip install 'agentmsg[web] @ git+https://example.org/me/agentmsg.git@abc123'",
        ),
        (
            {"url": "https://example.org/agentmsg-0.1.0.tar.gz", "archive_info": {}},
            "pip install 'agentmsg[web] @ https://example.org/agentmsg-0.1.0.tar.gz'",
        ),
    ],
)
def test_the_hint_installs_from_where_agentmsg_came_from(direct_url: dict[str, object], command: str) -> None:
    assert install_command("web", direct_url) == command


def test_serve_without_the_web_extra_names_the_command_for_this_install(tmp_path: Path) -> None:
    """``agentmsg serve`` where Starlette/uvicorn are missing: a usage error (exit 2) whose command installs this
    very agentmsg with the extra; under ``make wheel-test`` that is the built wheel's path, which pip accepts
    (a dry run, nothing fetched)."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['uvicorn'] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-m", "agentmsg", "serve", "events.jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    hint = install_command("web")
    assert f"serve needs the web extra (uvicorn is missing): {hint}" in r.stderr
    assert "pip install 'agentmsg[web]'" not in r.stderr
    wheel = os.environ.get("AGENTMSG_TEST_WHEEL")
    if wheel:
        assert hint == "pip install " + shlex.quote(f"{wheel}[web]")
        args = shlex.split(hint)[2:]
        dry = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert dry.returncode == 0, dry.stderr
