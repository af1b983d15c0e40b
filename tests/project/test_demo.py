"""`make demo`'s tour (examples/demo.py) as a newcomer reads it: six sections on about a screen each, no line
wider than the terminal's 100 columns, each diagnostic rule said once, long bodies only in the files it
names (and printed with --full), and the provider recordings it plays ending where their replies end."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from agentmsg.providers import NAMES

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"

# one worker for the module: the tour (a module fixture, a whole demo run) is made once, not per worker
pytestmark = pytest.mark.xdist_group("demo")
FIXTURES = ROOT / "tests" / "fixtures" / "providers"


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(DEMO), *args], capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agentmsg_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("tour")
    return run("--out", str(out)), out


def test_the_tour_is_six_short_sections(tour: tuple[str, Path], demo: ModuleType) -> None:
    text, out = tour
    lines = text.splitlines()
    headings = [line for line in lines if re.match(r"\d\. ", line)]
    assert [h[0] for h in headings] == list("123456"), headings
    assert len(lines) <= 90, len(lines)
    widest = max(lines, key=demo.columns)
    assert demo.columns(widest) <= 100, widest
    said = [line.strip() for line in lines if line.strip()]
    assert len(said) == len(set(said)), [line for line in said if said.count(line) > 1]
    assert f"the full output: {out}/" in text


def test_each_diagnostic_rule_is_said_once_and_in_full_in_the_files(tour: tuple[str, Path]) -> None:
    text, out = tour
    section = text.split("\n4. ", 1)[1].split("\n5. ", 1)[0]
    rules = set()
    for name in NAMES:
        request = json.loads((out / "4-requests" / f"{name}.json").read_text(encoding="utf-8"))
        assert request["path"] and request["body"]
        # the screen's size is the body's in the file: the file holds the whole of it
        size = len(orjson.dumps(request["body"]))
        assert re.search(rf"^   {re.escape(name)} +{re.escape(request['path'])} +{size} B ", section, re.M), name
        for diagnostic in request["diagnostics"]:
            assert diagnostic["message"] and diagnostic["kind"] in ("lossy", "rewrite", "error")
            rules.add(diagnostic["rule"])
    assert rules
    for rule in rules:
        assert len(re.findall(rf" {re.escape(rule)} ", section)) == 1, rule


def test_the_long_output_is_in_the_files_and_printed_with_full(tmp_path: Path) -> None:
    text = run("--out", str(tmp_path), "--full")
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 1 + 1 + len(NAMES) + 2 * 5 + 1
    assert len((tmp_path / "4-requests" / "anthropic.json").read_bytes()) > 1000
    for path in files:
        assert textwrap.indent(path.read_text(encoding="utf-8").rstrip("\n"), "   ") in text, path


def test_the_recordings_played_end_where_their_replies_end(tour: tuple[str, Path], demo: ModuleType) -> None:
    """Not a recording its README says was cut (TRUNCATED, chunks elided), and each reply read whole."""
    _, out = tour
    played = {provider: fixture for provider, (fixture, _) in demo.RECORDINGS.items()}
    for fixture in [*played.values(), demo.CUT[0]]:
        folder, name = fixture.split("/")
        readme = (FIXTURES / folder / "README.md").read_text(encoding="utf-8")
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` |"))
        assert not re.search(r"truncat|elide", row, re.I), row
    for provider in played:
        msg = json.loads((out / "5-streams" / f"{provider}.message.json").read_text(encoding="utf-8"))
        assert msg["metadata"].get("agentmsg_finish_reason"), provider
        assert msg["metadata"].get("agentscope_generate_reason") != "INTERRUPTED", provider
    cut = json.loads((out / "6-cut-stream.message.json").read_text(encoding="utf-8"))
    assert cut["metadata"]["agentscope_generate_reason"] == "INTERRUPTED" and cut["content"][0]["text"]
