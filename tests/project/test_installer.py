"""The Makefile's installer (``INSTALL_SH``): uv where it can be had, else pip, saying so.

Each test runs the function as the Makefile's recipes run it (``make`` with a one-line target that calls it, in
the environment the Makefile exports), offline, installing a one-module wheel built here with ``--target`` (into a
folder: the Python running the tests is left as it is). What a newcomer's ``make demo`` and ``make test`` rely on:
the package lands where it is told, uv's progress reads as a line per step, and where uv cannot be had or fails,
pip installs with uv's options in pip's words (a uv-only option given to pip would fail the install)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

NAME = "agentmsg_tiny"
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="no make on PATH: the installer is a Makefile function")


def _wheel(folder: Path) -> Path:
    """A wheel of one module, ``agentmsg_tiny`` (``X = 1``)."""
    info = f"{NAME}-1.0.dist-info"
    files = {
        f"{NAME}.py": b"X = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: agentmsg-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in files.items()
    )
    path = folder / f"{NAME}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in {**files, f"{info}/RECORD": (record + f"{info}/RECORD,,\n").encode()}.items():
            z.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wheel(tmp_path_factory.mktemp("installer"))


def _install(
    mode: str, python: Path, *args: str, env: dict[str, str] | None = None, **make_vars: str
) -> subprocess.CompletedProcess[str]:
    """``bash -c "$INSTALL_SH" install MODE PYTHON ARGS`` run by make in the checkout (``make_vars`` on its
    command line: UV_DIR, UV_VERSION, INSTALLER)."""
    recipe = '_agentmsg_install: ; @bash -c "$$INSTALL_SH" install $(MODE) $(PY) $(ARGS)'
    assigned = [f"{k}={v}" for k, v in {"MODE": mode, "PY": str(python), "ARGS": " ".join(args), **make_vars}.items()]
    return subprocess.run(
        [str(MAKE), "-s", "--no-print-directory", "-C", str(ROOT), "--eval", recipe, "_agentmsg_install", *assigned],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_NO_INDEX": "1", **(env or {})},
    )


def _imports(folder: Path) -> bool:
    """Whether the package was installed into ``folder`` (pip's and uv's ``--target``)."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return (
        subprocess.run([sys.executable, "-c", f"import {NAME}"], capture_output=True, env=env, timeout=60).returncode
        == 0
    )


def _pinned_uv() -> tuple[Path, str]:
    """The uv make installed (``.make/uv``) and the version the Makefile pins."""
    pinned = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text("utf-8"), re.M)
    assert pinned is not None
    return ROOT / ".make" / "uv", pinned.group(1)


def test_uv_installs_into_the_place_named_a_line_per_step(wheel: Path, tmp_path: Path) -> None:
    folder, version = _pinned_uv()
    uv = folder / "bin" / "uv"
    said = (
        subprocess.run([str(uv), "--version"], capture_output=True, text=True, timeout=60).stdout if uv.exists() else ""
    )
    if said.split()[1:2] != [version]:
        pytest.skip(f"make installed no uv {version} here ({folder}): INSTALLER=pip, or it could not be had")
    site = tmp_path / "site"
    r = _install(
        "progress", Path(sys.executable), "--no-index", "--reinstall-package", NAME, "--target", str(site), str(wheel)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("   resolved 1 package"), lines
    assert any(line.startswith("   installed 1 package") for line in lines), lines
    assert "   + agentmsg-tiny" in lines and re.fullmatch(r"   done in \d+ s", lines[-1]), lines
    assert "pip" not in r.stdout + r.stderr
    assert _imports(site)


def test_pip_installs_when_uv_fails_saying_so_with_uvs_options_in_pips_words(wheel: Path, tmp_path: Path) -> None:
    python = Path(sys.executable)
    fake = tmp_path / "uv" / "bin" / "uv"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "uv 9.9.9 (fake)"; exit 0; }\necho "error: no way out" >&2\nexit 2\n'
    )
    fake.chmod(0o755)
    site = tmp_path / "site"
    # (--reinstall-package and --reinstall are uv's: given to pip as they are, pip would refuse them and fail)
    args = ("--reinstall-package", NAME, "--reinstall", "--no-index", "--target", str(site), str(wheel))
    r = _install("progress", python, *args, UV_DIR=str(tmp_path / "uv"), UV_VERSION="9.9.9")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "make: uv failed; its log:" in r.stderr and "error: no way out" in r.stderr
    assert "make: installing with pip instead (INSTALLER=pip skips uv)" in r.stderr
    assert "   installing 1 package" in r.stdout.splitlines(), r.stdout
    assert _imports(site)


def test_pip_installs_when_uv_cannot_be_had(wheel: Path, tmp_path: Path) -> None:
    """pip finds no such uv (the index is off): pip installs, saying why, and leaves no uv behind, nor takes away
    what the folder held."""
    site = tmp_path / "site"
    (tmp_path / "uv").mkdir()
    (tmp_path / "uv" / "kept").write_text("")
    r = _install(
        "quiet",
        Path(sys.executable),
        "--no-index",
        "--target",
        str(site),
        str(wheel),
        UV_DIR=str(tmp_path / "uv"),
        UV_VERSION="0.0.0",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "getting uv 0.0.0" in r.stdout
    assert "make: could not install uv 0.0.0; installing with pip (slower)" in r.stdout
    assert [p.name for p in (tmp_path / "uv").iterdir()] == ["kept"]
    assert _imports(site)
