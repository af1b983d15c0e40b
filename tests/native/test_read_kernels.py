"""``make test``'s pure-Python pass skips the tests marked ``no_kernel``, and tests/conftest.py holds that mark true by
watching the read-side C kernels where agentmsg binds them (``READ_KERNELS``) while each marked test runs. A binding
missing from that list is a kernel the watch cannot see: a marked test that reaches it passes the watch, and the pure
pass silently skips the Python that the kernel stands in for. So every module-level binding of a read-side kernel in
the installed agentmsg is in ``READ_KERNELS``, and each listed binding is one."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import agentmsg
from agentmsg._native import PURE_PYTHON, speedups
from tests.conftest import READ_KERNELS, WRITE_KERNELS, c_compiler_available

if speedups is None:
    if PURE_PYTHON:
        pytestmark = pytest.mark.skip("AGENTMSG_PURE_PYTHON is set: no kernel is bound")
    elif not c_compiler_available():
        pytestmark = pytest.mark.skip("no C compiler or Python headers here: agentmsg was built without its kernels")


def _modules() -> list[ModuleType]:
    """Every module of the installed agentmsg (``__main__`` aside: importing it runs the CLI)."""
    names = [m.name for m in pkgutil.walk_packages(agentmsg.__path__, "agentmsg.") if not m.name.endswith("__main__")]
    return [importlib.import_module(name) for name in sorted(names)]


def _read_kernels() -> dict[int, str]:
    """id -> name of each function of ``agentmsg._speedups`` outside the JSON writer."""
    assert speedups is not None, "a C compiler is here, but agentmsg._speedups was not built"
    found = {
        id(value): name
        for name, value in vars(speedups).items()
        if callable(value) and not name.startswith("_") and name not in WRITE_KERNELS
    }
    return found


def test_the_watch_sees_every_binding_of_a_read_side_kernel() -> None:
    kernels = _read_kernels()
    assert set(kernels.values()) >= {"sse_scan", "sse_idle", "fold_deltas", "json_string_between"}
    bound = sorted(
        (module.__name__, name)
        for module in _modules()
        for name, value in vars(module).items()
        if id(value) in kernels and module.__name__ != "agentmsg._speedups"
    )
    assert bound, "no module binds a read-side kernel: the search found nothing to check"
    assert sorted(READ_KERNELS) == bound, "tests/conftest.py READ_KERNELS is not every read-side kernel's binding"


def test_each_writer_function_named_is_one() -> None:
    assert speedups is not None, "a C compiler is here, but agentmsg._speedups was not built"
    assert all(callable(getattr(speedups, name, None)) for name in WRITE_KERNELS)
