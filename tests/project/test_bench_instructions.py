"""The bench's ``--instructions`` modes (bench/_callgrind.py, shared by bench_formatters.py and bench_live.py): the
live child runs its warm-up, equal-work check and measured phases (here without valgrind), the table and its
targets say they are on instructions, and the counting helper gives each measured phase its own count."""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, encoding="utf-8", timeout=120, cwd=ROOT, check=False
    )


def _callgrind() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_callgrind", BENCH / "_callgrind.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_live_child_runs_its_phases_without_valgrind() -> None:
    # what valgrind runs: the server, the sides, the checked warm-up round, the measured phases (uncounted here)
    done = _python(str(BENCH / "bench_live.py"), "--instructions-child", "gemini", "sync", "floor", "agentmsg")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_live_instruction_table_and_targets() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, "bench")
        import bench_live
        row = dict(provider="openai", case="recorded", mode="sync", measure="instructions", unit="Ir/reply")
        rows = [
            dict(row, floor=3_689_134.0, agentmsg=4_120_639.0, official=30_000_000.0, vs_floor=1.117,
                 official_over_agentmsg=7.28, official_version="openai 9"),
            dict(row, case="long", mode="async", unit="Ir/chunk", floor=90_000.0, agentmsg=120_000.0,
                 vs_floor=1.333),
            {"provider": "dashscope", "official": "not installed (dashscope)", "measure": "instructions"},
        ]
        bench_live.print_instructions(rows)
        for t in bench_live.instruction_targets(rows):
            print(t["row"], t["met"])
        bench_live.print_instructions([])
        """
    )
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "targets on instructions" in done.stdout
    recorded = next(line for line in lines if "recorded" in line and "openai" in line and "Ir/reply" in line)
    assert "4,120,639" in recorded and "3,689,134" in recorded and "1.12" in recorded and "met" in recorded
    long = next(line for line in lines if " long " in line)
    assert "1.33" in long and "MISSED" in long
    assert "  dashscope: no official row: not installed (dashscope)" in lines
    assert "openai recorded sync: agentmsg Ir / floor True" in lines
    assert "openai long async: agentmsg Ir / floor False" in lines
    assert lines[-1] == "(the live rows' instruction counts need valgrind on PATH: skipped)"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_callgrind_counts_each_measured_phase(tmp_path: Path) -> None:
    # ~5 s: two phases, the second ten times the first's work; a child that fails gives nan, not a number
    script = tmp_path / "phases.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(BENCH)!r})
            import _callgrind
            work = lambda n: lambda: sum(i * i for i in range(n))
            _callgrind.measured(work(2_000))
            _callgrind.measured(work(20_000))
            raise SystemExit(int(sys.argv[1]))
            """
        )
    )
    callgrind = _callgrind()
    if not callgrind.traceable():  # (env -i .ci/run tests with the distribution's stripped python3)
        pytest.skip(callgrind.UNTRACEABLE)
    # (-S: the child needs no site-packages, whose start under valgrind is about a second of each run)
    small, large = callgrind.count(["-S", str(script), "0"], phases=2)
    assert 9 < large / small < 11
    failed = callgrind.count(["-S", str(script), "1"], phases=2)
    assert all(math.isnan(c) for c in failed)


def test_callgrind_absent_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.devnull)
    assert _callgrind().available() is False
