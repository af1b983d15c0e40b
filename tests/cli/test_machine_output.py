"""``agentmsg reduce`` and ``agentmsg format`` take validate's ``--output-format``: their problems and diagnostics
on stderr as JSON lines, GitHub annotations, a SARIF 2.1.0 log (valid against the official schema) or JUnit XML,
stdout still the messages or the body; without the option, the lines they always wrote."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from agentmsg import Reducer
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests.cli.test_validate_ci import BAD_EVENTS, ORPHAN_CONVERSATION, sarif_schema


@pytest.fixture
def bad_events(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in BAD_EVENTS["events"]), "utf-8")
    return path


def test_reduce_says_its_problems_in_each_format(bad_events: Path) -> None:
    reducer = Reducer()
    reducer.feed_many(BAD_EVENTS["events"])
    expected = [(p.pointer, p.rule, p.message) for p in reducer.problems]
    plain = run("reduce", str(bad_events))
    assert plain.returncode == 1 and plain.stderr.count("\n") == len(expected)
    assert run("reduce", "--output-format", "text", str(bad_events)).stderr == plain.stderr
    r = run("reduce", "--output-format", "json", str(bad_events))
    assert r.returncode == 1 and r.stdout == plain.stdout  # the messages, as without the option
    rows = [json.loads(line) for line in jsonl_lines(r.stderr)]
    assert [(row["pointer"], row["rule"], row["message"]) for row in rows] == expected
    assert {row["file"] for row in rows} == {str(bad_events)} and {row["kind"] for row in rows} == {"error"}
    gh = run("reduce", "--output-format", "github", str(bad_events)).stderr.splitlines()
    assert len(gh) == len(expected) and all(line.startswith("::error file=") for line in gh)
    assert all(",title=agentmsg reduce [" in line for line in gh)
    sarif = run("reduce", "--output-format", "sarif", str(bad_events))
    log = json.loads(sarif.stderr)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [
        (rule, "error") for _, rule, _ in expected
    ]
    junit = ET.fromstring(run("reduce", "--output-format", "junit", str(bad_events)).stderr)
    assert [f.get("type") for f in junit.iter("failure")] == [rule for _, rule, _ in expected]


def test_format_says_its_diagnostics_in_each_format(tmp_path: Path) -> None:
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(ORPHAN_CONVERSATION), "utf-8")
    plain = run("format", "--provider", "anthropic", str(path))
    assert plain.returncode == 0 and json.loads(plain.stderr)["rule"] == "tool-use-orphan"  # its own JSON lines
    r = run("format", "--provider", "anthropic", "--output-format", "sarif", str(path))
    assert r.returncode == 0 and r.stdout == plain.stdout
    log = json.loads(r.stderr)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert [(x["ruleId"], x["level"]) for x in log["runs"][0]["results"]] == [("tool-use-orphan", "note")]
    strict = run("format", "--provider", "anthropic", "--strict", "--output-format", "junit", str(path))
    assert strict.returncode == 1 and strict.stdout == ""
    case = ET.fromstring(strict.stderr).find(".//testcase")
    assert case is not None and case.get("name") == str(path)
    assert [f.get("type") for f in case.iter("failure")] == ["tool-use-orphan"]
    text = run("format", "--provider", "anthropic", "--strict", "--output-format", "text", str(path))
    assert text.stderr.startswith(f"{path}:/1/content/0: tool call 'c1'") and text.stderr.endswith(
        "[tool-use-orphan]\n"
    )


@pytest.mark.parametrize("form", ["sarif", "junit"])
def test_a_report_lists_10000_findings_a_file_and_counts_the_rest(tmp_path: Path, form: str) -> None:
    """A SARIF log or JUnit report is written at the end, so it held every finding: 300 KB of bad records made a
    202 MB SARIF log in 1 GB of memory. It lists as many as a reducer keeps problems and counts the rest."""
    path = tmp_path / "bad.jsonl"
    path.write_text("{}\n" * 5_000)
    said = run("validate", str(path)).stdout.splitlines()  # the text form says every one, as it goes
    assert len(said) > 10_000
    done = run("validate", "--output-format", form, str(path))
    assert done.returncode == 1
    if form == "sarif":
        results = json.loads(done.stdout)["runs"][0]["results"]
        assert len(results) == 10_001
        last = results[-1]
        assert (last["ruleId"], last["level"]) == ("max-problems", "error")
        assert last["message"]["text"].startswith(f"{len(said) - 10_000:,} more problems and notes were not listed")
    else:
        failures = ET.fromstring(done.stdout).iter("failure")
        text = "".join(f.text or "" for f in failures)
        assert f"{len(said) - 10_000:,} more problems and notes were not listed" in text


def test_checking_a_file_of_messages_holds_nothing_per_record() -> None:
    """The rules across a file's instances (events, a conversation) keep what they need; a file of messages is
    checked record by record: 100,000 bad records held their problems and lines (text mode grew with them)."""
    import tracemalloc

    from agentmsg._wire.check import Across
    from agentmsg.errors import Problem

    across = Across("msg", None)
    across.add({}, [Problem("/0/role", "required", "x")], 1, "/0")
    tracemalloc.start()
    try:
        for n in range(1, 100_001):
            across.add({}, [Problem(f"/{n}/role", "required", "x")], n + 1, f"/{n}")
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert grown < 10_000, grown
    assert across.problems() == ([], [])
