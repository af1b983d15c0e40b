from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "conformance" / "vectors"
SHARED = ROOT.parent / "shared"


def load_vectors(kind_file: str) -> dict[str, Any]:
    return json.loads((VECTORS / kind_file).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def schema_registry() -> Any:
    """python-jsonschema registry of every schema: the independent oracle."""
    from referencing import Registry, Resource

    resources = []
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


#: The C kernels on the read side, where agentmsg binds them (module, name): the SSE scanner, the reducer's delta
#: loop, the text-delta reader and the route finder that uses it. Every module-level binding of a read-side kernel
#: is listed (tests/native/test_read_kernels.py finds them all). (The C JSON writer, WRITE_KERNELS, is held to the
#: Python byte for byte by tests/native.)
READ_KERNELS = (
    ("agentmsg._wire.sse", "_scan"),
    ("agentmsg._wire.sse", "_idle"),
    ("agentmsg._wire.sse", "_Scanner"),
    ("agentmsg.events._handlers", "_fold_deltas"),
    ("agentmsg.events.reducer", "_fold_deltas"),
    ("agentmsg.providers._response.parser", "_string_between"),
    ("agentmsg.providers._response.reader", "_between"),
)

#: The functions of agentmsg._speedups on the write side (the JSON writer): every other one is a read-side kernel.
WRITE_KERNELS = frozenset({"make_plan", "encode", "writes"})


#: make test's first pass writes into this folder (``AGENTMSG_KERNEL_LOG``) the tests of the pure-Python pass's
#: selection (the paths in ``AGENTMSG_KERNEL_LOG_PATHS``) that reached no read-side C kernel and started no process,
#: one file per worker; the pure-Python pass (``AGENTMSG_PURE_PYTHON=1``, the same folder) leaves them out, since it
#: would run the same code again: the ``no_kernel`` marker, found by the run itself. A test not written there (one
#: that reached a kernel or started a process, one new since, or every test where the C is not built) runs.
KERNEL_LOG = os.environ.get("AGENTMSG_KERNEL_LOG") or None
KERNEL_LOG_PATHS = tuple(os.environ.get("AGENTMSG_KERNEL_LOG_PATHS", "").split())


def _pure() -> bool:
    """Whether AGENTMSG_PURE_PYTHON turns the C kernels off (agentmsg's own reading of it, imported when asked)."""
    from agentmsg._native import PURE_PYTHON

    return PURE_PYTHON


def _watch_kernels(monkeypatch: pytest.MonkeyPatch, reached: list[str]) -> bool:
    """Each read-side kernel wrapped where agentmsg binds it, its name put in ``reached`` when it is called, and a
    process started (``subprocess.Popen``, a run of the CLI's zygote) put there too; False where none is built."""
    import importlib
    import subprocess

    from tests._support import cli

    watched = False
    for module_name, name in READ_KERNELS:
        module = importlib.import_module(module_name)
        kernel = getattr(module, name)
        if kernel is None:  # pure Python: nothing to watch
            continue

        def watch(*args: Any, _kernel: Any = kernel, _name: str = f"{module_name}.{name}", **kw: Any) -> Any:
            reached.append(_name)
            return _kernel(*args, **kw)

        monkeypatch.setattr(module, name, watch)
        watched = True
    if watched:
        popen_init = subprocess.Popen.__init__

        def started(self: Any, *args: Any, **kw: Any) -> None:
            reached.append("a process")
            popen_init(self, *args, **kw)

        forked = cli._forked

        def forked_run(*args: Any, **kw: Any) -> Any:
            reached.append("a process")
            return forked(*args, **kw)

        monkeypatch.setattr(subprocess.Popen, "__init__", started)
        monkeypatch.setattr(cli, "_forked", forked_run)
    return watched


@pytest.fixture(autouse=True)
def _no_kernel_is_true(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test marked ``no_kernel`` (make test's pure-Python pass skips it: it would run the same code twice) must
    reach none of the read-side C kernels in this process: where they are built, each is watched while it runs,
    and one it calls fails it, naming the kernel. (A subprocess it starts is not watched.) In make test's first
    pass, a test of the pure-Python pass's selection that reaches none and starts no process is written into
    :data:`KERNEL_LOG`."""
    node = request.node
    marked = node.get_closest_marker("no_kernel") is not None
    logged = (
        KERNEL_LOG is not None
        and not _pure()
        and not marked
        and node.nodeid.startswith(KERNEL_LOG_PATHS)  # (False when there are none)
        and node.get_closest_marker("kernel_only") is None
    )
    reached: list[str] = []
    if not (marked or logged) or not _watch_kernels(monkeypatch, reached):
        yield
        return
    yield
    if marked:
        kernels = sorted(set(reached) - {"a process"})
        assert not kernels, f"marked no_kernel, but it reached {kernels}: the pure-Python pass must run it"
    elif not reached:  # (logged: KERNEL_LOG is set)
        assert KERNEL_LOG is not None
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(Path(KERNEL_LOG, f"{worker}.txt"), "a", encoding="utf-8") as log:
            log.write(node.nodeid + "\n")


def _kernel_log() -> set[str]:
    """The tests the first pass wrote into :data:`KERNEL_LOG`."""
    assert KERNEL_LOG is not None
    return {line for path in Path(KERNEL_LOG).glob("*.txt") for line in path.read_text("utf-8").splitlines()}


def pytest_configure(config: pytest.Config) -> None:
    """The first pass starts :data:`KERNEL_LOG` empty (in the process that runs the session, before any worker)."""
    if KERNEL_LOG is not None and not _pure() and not hasattr(config, "workerinput"):
        Path(KERNEL_LOG).mkdir(parents=True, exist_ok=True)
        for path in Path(KERNEL_LOG).glob("*.txt"):
            path.unlink()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The pure-Python pass leaves out the tests the first pass found reaching no kernel (:data:`KERNEL_LOG`)."""
    if KERNEL_LOG is None or not _pure():
        return
    same = _kernel_log()
    left = [item for item in items if item.nodeid in same]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item.nodeid not in same]


def c_compiler_available() -> bool:
    """Whether agentmsg's optional C writer can be built here: a C compiler and the Python headers."""
    import shutil
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None and Path(sysconfig.get_paths()["include"], "Python.h").is_file()


def pytest_report_header() -> str:
    """Say which agentmsg the suite tests: the installed wheel (`make test`) or a source tree."""
    import agentmsg

    how = "installed wheel" if os.environ.get("AGENTMSG_TEST_WHEEL") else "source tree / editable install"
    return f"agentmsg under test: {Path(agentmsg.__file__ or '').parent} ({how})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """A test that ran without an oracle's check (tests/oracles.usable) says so on its report, which reaches the
    summary below from a pytest-xdist worker too (the record itself stays in the worker's process)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        from tests import oracles

        for reason, tests in oracles.NOT_CHECKED.items():
            if item.nodeid in tests or any(t.endswith(item.nodeid) for t in tests):
                report.user_properties.append(("oracle_not_checked", reason))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say which paths the suite ran: the C speed-ups (JSON writer, SSE scanner, JSON string reader), or pure Python
    (tests/native/test_speedups.py says why)."""
    from agentmsg import _native

    if _native.speedups is not None:
        name = Path(_native.speedups.__file__ or "").name
        terminalreporter.write_line(f"JSON writer, SSE scanner and JSON string reader: C ({name})")
    else:
        terminalreporter.write_line(
            "JSON writer, SSE scanner and JSON string reader: pure Python (agentmsg._speedups not built or turned off)",
            yellow=True,
        )
    if KERNEL_LOG is not None and _pure():
        terminalreporter.write_line(
            f"pure-Python pass: {len(_kernel_log())} tests the first pass ran reached no C kernel and started no "
            f"process; left out, as they would run the same code again ({KERNEL_LOG})"
        )
    # An oracle whose pinned version needs a newer Python (google-genai on 3.10): its skips and the tests that ran
    # without its check, said in two lines, since pytest lists skip reasons only with -rs.
    from tests import oracles

    for module in oracles.NEEDS_NEWER_PYTHON:
        reason = oracles.missing(module)
        if reason is None:
            continue
        skipped = [r for r in terminalreporter.stats.get("skipped", []) if reason in str(getattr(r, "longrepr", ""))]
        if skipped:
            terminalreporter.write_line(f"{len(skipped)} tests skipped: {reason}", yellow=True)
        # the tests that run on without this oracle's checks (request bodies, stream chunks: tests/oracles.usable)
        reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
        unchecked = {r.nodeid for r in reports if ("oracle_not_checked", reason) in getattr(r, "user_properties", ())}
        terminalreporter.write_line(f"{len(unchecked)} tests ran without its checks: {reason}", yellow=True)
    # A fuzz test that failed: the seed of the seeded loops, to replay them (Hypothesis prints its own).
    failed_fuzz = [r for r in terminalreporter.stats.get("failed", []) if "fuzz" in getattr(r, "keywords", {})]
    if failed_fuzz:
        from tests._support.budget import SEED

        terminalreporter.write_line(
            f"{len(failed_fuzz)} fuzz tests failed with AGENTMSG_FUZZ_SEED={SEED}: replay with "
            f"AGENTMSG_FUZZ_SEED={SEED} pytest <test> (make fuzz FUZZ_SEED={SEED})",
            red=True,
        )
