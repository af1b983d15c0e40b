"""The package as users get it: the wheel and the sdist hold every module and data file of the source tree,
and the suite tests the copy it is meant to test.

`make test` builds dist/, installs the wheel (not editable) into .venv-wheel and runs the whole suite there
with AGENTMSG_TEST_WHEEL / AGENTMSG_TEST_SDIST naming the files it built ("wheel mode"). Elsewhere (e.g.
`pytest` in the development virtualenv) these tests build a wheel and an sdist of the checkout themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest

import agentmsg
import agentmsg_models
from tests.conftest import ROOT, c_compiler_available

# Import package -> its folder in the source tree.
PACKAGES = {"agentmsg": ROOT / "sdk" / "agentmsg", "agentmsg_models": ROOT / "generated" / "agentmsg_models"}
WHEEL_MODE = bool(os.environ.get("AGENTMSG_TEST_WHEEL"))


def _ignored(rel: PurePosixPath) -> bool:
    """Not part of a package: caches, node_modules, hidden files (pyproject.toml excludes the same), and
    compiled extensions (an editable install builds them into the tree; the wheel's are checked apart)."""
    return rel.suffix in (".pyc", ".pyo", ".so", ".pyd") or any(
        part in ("__pycache__", "node_modules") or part.startswith(".") for part in rel.parts
    )


def source_files() -> set[str]:
    """Every file of the packages' source trees, found by walking them, as wheel paths ("agentmsg/x/y.py")."""
    found = set()
    for name, folder in PACKAGES.items():
        for path in folder.rglob("*"):
            rel = PurePosixPath(path.relative_to(folder).as_posix())
            if path.is_file() and not _ignored(rel):
                found.add(f"{name}/{rel}")
    return found


def _not_copied(folder: str, names: list[str]) -> set[str]:
    """What a build of the checkout does not need: caches, virtualenvs, node_modules, build outputs."""
    skip = {n for n in names if n in ("__pycache__", "node_modules") or n.startswith(".")}
    if Path(folder) == ROOT:
        skip |= {n for n in names if n in ("build", "dist") or n.endswith(".egg-info")}
    if Path(folder) == ROOT / "tests" / "java":
        skip |= {"target", "out"}
    return skip


# Outside wheel mode the module's fixture builds a wheel and an sdist: once, with every test on one pytest-xdist
# worker.
pytestmark = pytest.mark.xdist_group("packaging")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if WHEEL_MODE:
        return {"wheel": Path(os.environ["AGENTMSG_TEST_WHEEL"]), "sdist": Path(os.environ["AGENTMSG_TEST_SDIST"])}
    # Built from a copy, so that the checkout gets no build/ or *.egg-info (an egg-info beside tests/ would
    # shadow the installed package's metadata in a later wheel-mode run).
    src = tmp_path_factory.mktemp("src") / "agentmsg"
    shutil.copytree(ROOT, src, ignore=_not_copied)
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def test_the_source_walk_sees_modules_data_and_subpackages() -> None:
    files = source_files()
    assert {"agentmsg/__init__.py", "agentmsg/py.typed", "agentmsg/events/__init__.py"} <= files
    assert {
        "agentmsg_models/__init__.py",
        "agentmsg_models/py.typed",
        "agentmsg_models/schemas/msg.schema.json",
    } <= files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


def test_wheel_holds_exactly_the_source_tree(dists: dict[str, Path]) -> None:
    names = wheel_names(dists["wheel"])
    tops = {n.split("/")[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == set(PACKAGES), f"unexpected top-level entries in the wheel: {tops - dist_info}"
    shipped = {n for n in names if n.split("/")[0] in PACKAGES and not _ignored(PurePosixPath(n))}
    missing = sorted(source_files() - shipped)
    assert not missing, f"in the source tree but not in the wheel (see [tool.setuptools] in pyproject.toml): {missing}"
    extra = sorted(shipped - source_files())
    assert not extra, f"in the wheel but not in the source tree: {extra}"


def test_wheel_holds_the_c_writer_built_for_its_platform(dists: dict[str, Path]) -> None:
    """The optional C writer (agentmsg._speedups) is in the wheel, built for the Python that built it, and is
    the only compiled file; without a C compiler the wheel is pure Python (said by the skip)."""
    names = wheel_names(dists["wheel"])
    compiled = [n for n in names if PurePosixPath(n).suffix in (".so", ".pyd")]
    if not compiled and not c_compiler_available():
        pytest.skip("no C compiler here: the wheel was built without agentmsg._speedups (pure Python)")
    assert compiled == [f"agentmsg/_speedups{sysconfig.get_config_var('EXT_SUFFIX')}"]
    assert "-none-any.whl" not in dists["wheel"].name


def test_without_a_c_compiler_the_sdist_builds_a_pure_python_agentmsg(dists: dict[str, Path], tmp_path: Path) -> None:
    """Where no C compiler is found, the sdist still builds and installs (the C writer is optional), and that
    agentmsg writes the same bytes as this one, in pure Python."""
    out, target = tmp_path / "wheel", tmp_path / "site"
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "PIP_NO_INDEX": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(dists["sdist"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    assert not [n for n in wheel_names(wheel) if PurePosixPath(n).suffix in (".so", ".pyd")]
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    msg = agentmsg.AssistantMessage(
        [agentmsg.ThinkingBlock(thinking="hm \u00e9"), agentmsg.TextBlock(text='a\n"b"')],
        usage=agentmsg.ChatUsage(input_tokens=1, output_tokens=2, time=1e-7),
    )
    script = (
        "import sys, agentmsg; from agentmsg._codec import converter as c;"
        f"assert agentmsg.__file__.startswith({str(target)!r}), agentmsg.__file__;"
        "assert c._speedups is None;"
        "sys.stdout.buffer.write(agentmsg.Msg.from_json(sys.stdin.buffer.read()).to_json_bytes())"
    )
    # -S: no .pth files, so no editable install's import hook; the dependencies come from this environment
    paths = sysconfig.get_paths()
    pythonpath = os.pathsep.join(dict.fromkeys([str(target), paths["purelib"], paths["platlib"]]))
    run = subprocess.run(
        [sys.executable, "-S", "-c", script],
        input=msg.to_json_bytes(),
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    assert run.stdout == msg.to_json_bytes()


def test_wheel_holds_every_schema_as_in_schemas(dists: dict[str, Path]) -> None:
    schemas = sorted((ROOT / "schemas").glob("*.schema.json"))
    assert len(schemas) >= 6
    with zipfile.ZipFile(dists["wheel"]) as zf:
        for path in schemas:
            assert zf.read(f"agentmsg_models/schemas/{path.name}") == path.read_bytes(), path.name


def test_wheel_metadata_declares_python_and_the_command(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as zf:
        info = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = zf.read(f"{info}/METADATA").decode()
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
    assert "Name: agentmsg\n" in meta
    assert "Requires-Python: >=3.10\n" in meta
    assert "[console_scripts]\nagentmsg = " in entry_points


def test_sdist_holds_the_sources(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as tf:
        names = {PurePosixPath(*PurePosixPath(m.name).parts[1:]).as_posix() for m in tf.getmembers() if m.isfile()}
    expected = {
        f"{PACKAGES[f.split('/')[0]].relative_to(ROOT).parent.as_posix()}/{f}" for f in source_files()
    }  # agentmsg/x.py -> sdk/agentmsg/x.py
    missing = sorted(expected - names)
    assert not missing, f"not in the sdist: {missing}"
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_suite_imports_the_copy_it_is_meant_to_test(dists: dict[str, Path]) -> None:
    """Wheel mode: agentmsg comes from site-packages, installed from that wheel and nothing else; otherwise:
    from this checkout's sdk/ and generated/."""
    modules = {"agentmsg": agentmsg, "agentmsg_models": agentmsg_models}
    if not WHEEL_MODE:
        for name, module in modules.items():
            assert Path(module.__file__ or "").resolve().parent == PACKAGES[name].resolve(), module.__file__
        return
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for name, module in modules.items():
        path = Path(module.__file__ or "").resolve()
        assert path.is_relative_to(site), f"{name} imported from {path}, not from {site}"
        assert not path.is_relative_to(ROOT / "sdk") and not path.is_relative_to(ROOT / "generated")
    dist = metadata.distribution("agentmsg")
    assert Path(str(dist.locate_file("agentmsg/__init__.py"))).resolve() == site / "agentmsg" / "__init__.py", (
        "agentmsg's metadata is not the installed wheel's (an agentmsg.egg-info on sys.path?)"
    )
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")  # editable installs always have one
    assert not direct_url.get("dir_info", {}).get("editable"), "agentmsg is an editable install"
    # What is on disk is byte for byte what the wheel holds, and nothing else (no file left from before).
    recorded = {f.as_posix() for f in dist.files or [] if f.parts[0] in PACKAGES and "__pycache__" not in f.parts}
    on_disk = {
        p.relative_to(site).as_posix()
        for name in PACKAGES
        for p in (site / name).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    with zipfile.ZipFile(dists["wheel"]) as zf:
        shipped = {n for n in zf.namelist() if n.split("/")[0] in PACKAGES}
        assert on_disk == recorded == shipped
        for name in sorted(shipped):
            assert (site / name).read_bytes() == zf.read(name), f"{site / name} differs from the wheel's copy"


def test_the_agentmsg_command_runs() -> None:
    script = Path(sysconfig.get_path("scripts")) / "agentmsg"
    assert script.is_file(), f"no {script}: the console script was not installed"
    r = subprocess.run([str(script), "schema"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert {line.split("\t")[0] for line in r.stdout.splitlines()} >= {"msg", "content-block", "event"}
