"""`agentmsg validate` as a CI pipeline uses it: where each problem is (file, line, pointer, rule), its report
formats (text, JSON lines, GitHub Actions annotations), verdicts that agree with an independent validator, its exit
codes, the API's limits and rules, input that never ends; and `agentmsg schema`, whose documents it checks against."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

import agentmsg
from agentmsg._wire import records
from agentmsg.cli._io import POINTER_LIMIT, clip
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests.conftest import ROOT, VECTORS, load_vectors

GOOD = {"id": "m1", "name": "Friday", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
BAD = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}


def rows(r: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in jsonl_lines(r.stdout)]


def test_a_pretty_printed_document_with_a_mistake_is_one_problem_at_its_line(tmp_path: Path) -> None:
    """A missing comma in an indented file (json.dump(indent=2), Jackson's pretty printer) was taken for JSON
    Lines with a broken first line: one problem per line of the file (53 here), each 'line 1', none where the
    mistake is. Now the document's one problem, at the file's line and column."""
    pretty = tmp_path / "pretty.json"
    text = json.dumps(GOOD, indent=2)  # line 3 is '  "name": "Friday",'
    pretty.write_text("\n" + text.replace('"Friday",', '"Friday"'))  # a blank line first: lines are the file's
    r = run("validate", str(pretty))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{pretty}: not valid JSON: unexpected character, expected ',' or '}}': line 5 column 3 [json]"
    ]
    (row,) = rows(run("validate", "--json", str(pretty)))
    assert (row["instance"], row["line"], row["pointer"], row["rule"]) == (None, 5, "", "json")
    # JSON Lines whose first line is broken are still checked record by record.
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text('{"id": broken\n' + "\n".join(json.dumps(m) for m in (GOOD, GOOD, BAD, GOOD)) + "\n")
    r = run("validate", str(jsonl))
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and len(lines) == 2
    assert (
        lines[0] == f"{jsonl}:/0: not valid JSON: unexpected character, expected a JSON value: line 1 column 8 [json]"
    )
    assert lines[1].startswith(f"{jsonl}:/3/content/0/type: ") and lines[1].endswith("[role-content]")


def test_json_lines_problems_name_the_files_line(tmp_path: Path) -> None:
    """A broken record said 'line 1 column 1 (char 0)', its position in the record; and --json had no line at
    all (the instance index is not the line when blank lines are in between). Now the file's line."""
    jsonl = tmp_path / "msgs.jsonl"
    jsonl.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(BAD) + "\n\n" + "garbage\n" + '{"id": 1,\n')
    r = run("validate", str(jsonl))
    assert r.returncode == 1
    assert r.stdout.splitlines()[1:] == [
        f"{jsonl}:/2: not valid JSON: unexpected character, expected a JSON value: line 5 column 1 [json]",
        f"{jsonl}:/3: not valid JSON: unexpected end of data: line 6 column 10 [json]",
    ]
    got = [
        (row["instance"], row["line"], row["pointer"], row["rule"])
        for row in rows(run("validate", "--json", str(jsonl)))
    ]
    assert got == [(1, 3, "/content/0/type", "role-content"), (2, 5, "", "json"), (3, 6, "", "json")]
    one_line = tmp_path / "array.json"
    one_line.write_text("\n\n" + json.dumps([GOOD, BAD]) + "\n")
    (row,) = rows(run("validate", "--json", str(one_line)))
    assert (row["instance"], row["line"]) == (1, 3)  # a one-line array: every item is on its line
    indented = tmp_path / "indented.json"
    indented.write_text(json.dumps([GOOD, BAD], indent=2))
    starts = [n for n, text in enumerate(indented.read_text().splitlines(), 1) if text == "  {"]
    (row,) = rows(run("validate", "--json", str(indented)))
    assert (row["instance"], row["line"], row["pointer"]) == (1, starts[1], "/content/0/type")  # the item's line


def test_a_file_name_that_begins_with_two_colons_starts_no_workflow_command(tmp_path: Path) -> None:
    """Text output begins each line with the file's name; a name beginning ``::`` made that line a GitHub Actions
    workflow command in a step's log (``::error file=x::y``: an annotation of the file's making). It is shown
    ``./::...``, the same file; the github format escapes it as a property."""
    for name in ("::error file=x::y.json", "  ::error file=x::y.json"):  # (GitHub strips a line's leading blanks)
        (tmp_path / name).write_text('{"id": "m1", "role": "user", "content": []}')
        r = run("validate", name, cwd=tmp_path)
        assert r.returncode == 1 and r.stdout
        assert not any(line.lstrip().startswith("::") for line in r.stdout.splitlines()), r.stdout
        assert r.stdout.startswith(f"./{name}:/role: "), r.stdout


def test_an_empty_array_gets_the_verdict_of_the_command_it_stands_for(tmp_path: Path) -> None:
    """``[]`` passed ``validate --provider anthropic``, which ``format --provider anthropic`` refuses
    (empty-conversation), and ``validate --kind event``, which ``reduce`` refuses (empty): each now gets that
    command's verdict and rule. Without a provider, ``[]`` is a conversation the schemas take."""
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    for args, rule in (
        (["--provider", "anthropic"], "empty-conversation"),
        (["--provider", "openai"], "empty-conversation"),
        (["--kind", "event"], "empty"),
    ):
        r = run("validate", *args, str(empty))
        assert r.returncode == 1 and r.stdout.rstrip().endswith(f"[{rule}]"), (args, r.stdout, r.stderr)
        standing_for = run(
            "format" if "--provider" in args else "reduce", *args[:2] * ("--provider" in args), str(empty)
        )
        assert standing_for.returncode == 1 and (
            f"[{rule}]" in standing_for.stderr or f'"rule":"{rule}"' in standing_for.stderr
        ), (
            args,
            standing_for.stderr,
        )
    assert run("validate", str(empty)).returncode == 0
    assert [f.problem.rule for f in agentmsg.check(b"[]", provider="gemini").findings] == ["empty-conversation"]
    assert [f.problem.rule for f in agentmsg.check(b"[]", kind="event").findings] == ["empty"]


def test_github_output_format_is_annotations_on_the_files(tmp_path: Path) -> None:
    """--output-format github: one workflow command per problem (::error, ::notice for a note), with the
    file's line when known; messages and properties escaped as GitHub's toolkit does."""
    jsonl = tmp_path / "a,b.jsonl"
    newer = {**GOOD, "usage": {"inputTokens": 1, "futureTokens": 5}}
    jsonl.write_text(json.dumps(GOOD) + "\n" + json.dumps(BAD) + "\n" + json.dumps(newer) + "\n")
    missing = tmp_path / "missing.json"
    r = run("validate", "--output-format", "github", str(jsonl), str(missing))
    assert r.returncode == 2 and r.stderr == f"agentmsg: {missing}: cannot read: No such file or directory\n"
    where = str(jsonl).replace(",", "%2C")
    assert r.stdout.splitlines() == [
        f"::error file={where},line=2,title=agentmsg validate [role-content]::/1/content/0/type: "
        "SYSTEM messages may only contain text blocks, got 'thinking'",
        f"::notice file={where},line=3,title=agentmsg validate [unknown-key]::/2/usage/futureTokens: "
        + r.stdout.splitlines()[1].split(": ", 1)[1],
        f"::error file={missing},title=agentmsg validate [unreadable]::cannot read: No such file or directory",
    ]
    assert "'futureTokens' is not a key" in r.stdout.splitlines()[1]
    deep = run("validate", "--output-format", "github", "--max-depth", "2", "-", stdin=json.dumps(GOOD))
    assert deep.returncode == 1
    assert deep.stdout == (
        "::error line=1,title=agentmsg validate [max-depth]::/content/0: nested deeper than 2 levels (limits.max_depth)\n"
    )
    from agentmsg.cli.validate import _gh_data, _gh_property

    assert _gh_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert _gh_property("C:\\x,y") == "C%3A\\x%2Cy"
    assert run("validate", "--output-format", "xml", str(jsonl)).returncode == 2
    help_text = " ".join(run("validate", "--help").stdout.split())
    assert "--output-format github" in help_text and "GitHub Actions" in help_text


def _oracle(kind_doc: dict[str, Any]) -> jsonschema.Draft202012Validator:
    docs = [json.loads(p.read_text()) for p in sorted((ROOT / "schemas").glob("*.schema.json"))]
    registry: Registry[Any] = Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])
    return jsonschema.Draft202012Validator(
        {"$ref": kind_doc["schema"]}, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


@pytest.mark.parametrize("name", sorted(p.name for p in VECTORS.glob("*.json")))
def test_cli_verdicts_agree_with_python_jsonschema_on_every_vector(name: str, tmp_path: Path) -> None:
    """Every conformance instance, as one JSON Lines file through the command a CI runs, against
    python-jsonschema with the files in schemas/ (draft 2020-12, formats checked): the same instances invalid;
    each invalid case's problem at its pointer with its rule; --strict rejects exactly the cases with
    unknown keys besides."""
    doc = load_vectors(name)
    cases = doc["cases"]
    jsonl = tmp_path / f"{doc['kind']}.jsonl"
    jsonl.write_text("".join(json.dumps(c["instance"]) + "\n" for c in cases))
    oracle = _oracle(doc)
    for strict in (False, True):
        r = run("validate", "--json", "--kind", doc["kind"], *(["--strict"] if strict else []), str(jsonl))
        errors: dict[int, set[tuple[str, str]]] = {}
        for row in rows(r):
            if row["kind"] == "error":
                errors.setdefault(row["instance"], set()).add((row["pointer"], row["rule"]))
        assert all(row["line"] == row["instance"] + 1 for row in rows(r))
        for i, case in enumerate(cases):
            valid = oracle.is_valid(case["instance"]) and not (strict and case.get("unknown_keys"))
            assert (i not in errors) == valid, (case["id"], strict, errors.get(i))
            if not case["valid"]:
                assert (case["pointer"], case["rule"]) in errors[i], case["id"]
        assert r.returncode == (1 if errors else 0)


def _x_keywords(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {k for k in node if k.startswith("x-")}.union(*(_x_keywords(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_x_keywords(v) for v in node))
    return set()


def test_schemas_are_usable_by_other_validators(tmp_path: Path) -> None:
    """What another tool needs is said: the README names every x- keyword the schemas carry, which ajv's
    default strict mode refuses ('strict mode: unknown keyword: "x-rule"') unless declared. Each bundle, open
    and closed, resolves with no registry in python-jsonschema and agrees with the vectors; with node and the
    ajv of tests/typescript installed, ajv compiles it with the keywords declared as the README says and
    agrees too."""
    docs = [json.loads(p.read_text()) for p in sorted((ROOT / "schemas").glob("*.schema.json"))]
    keywords = set().union(*(_x_keywords(d) for d in docs))
    readme = " ".join((ROOT / "README.md").read_text().split())
    other = readme[readme.index("**Other validators**") :][:900]
    assert keywords and all(f"`{k}`" in other for k in keywords), (keywords, other)
    assert 'ajv.addKeyword("x-rule")' in other and "strict: false" in other
    checks = []
    for name in sorted(p.name for p in VECTORS.glob("*.json")):
        doc = load_vectors(name)
        for strict in (False, True):
            r = run("schema", doc["kind"], "--bundle", *(["--strict"] if strict else []))
            bundle = tmp_path / f"{doc['kind']}{'-strict' if strict else ''}.json"
            bundle.write_text(r.stdout)
            validator = jsonschema.Draft202012Validator(
                json.loads(r.stdout), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
            )
            for case in doc["cases"]:
                want = case["valid"] and not (strict and case.get("unknown_keys"))
                assert validator.is_valid(case["instance"]) == want, (name, strict, case["id"])
                checks.append({"bundle": str(bundle), "instance": case["instance"], "valid": want, "id": case["id"]})
    modules = ROOT / "tests" / "typescript" / "node_modules"
    node = shutil.which("node")
    if node is None or not (modules / "ajv").is_dir() or not (modules / "ajv-formats").is_dir():
        pytest.skip("node or tests/typescript/node_modules (ajv) not installed: python-jsonschema checked only")
    (tmp_path / "checks.json").write_text(json.dumps(checks))
    script = f"""
const Ajv2020 = require({json.dumps(str(modules / "ajv" / "dist" / "2020"))}).default;
const addFormats = require({json.dumps(str(modules / "ajv-formats"))});
const fs = require("fs");
const compiled = {{}};
const wrong = [];
for (const c of JSON.parse(fs.readFileSync({json.dumps(str(tmp_path / "checks.json"))}))) {{
  if (!compiled[c.bundle]) {{
    const ajv = new Ajv2020({{ allErrors: true }});  // ajv's defaults: strict
    addFormats(ajv);
    for (const k of {json.dumps(sorted(keywords))}) ajv.addKeyword(k);
    compiled[c.bundle] = ajv.compile(JSON.parse(fs.readFileSync(c.bundle)));
  }}
  if (compiled[c.bundle](c.instance) !== c.valid) wrong.push(c.bundle + " " + c.id);
}}
console.log(JSON.stringify(wrong));
"""
    r = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


def test_json_lines_with_a_broken_first_line_are_read_record_by_record_at_any_size(tmp_path: Path) -> None:
    """JSON Lines whose first line is broken (a log cut at its start) were read whole as a document first: in
    memory up to the byte limit, and beyond it the whole file was one [max-bytes] problem, none of its records
    checked. Now they are read line by line like any JSON Lines, each record within the limit checked."""
    log = tmp_path / "log.jsonl"
    records = [GOOD] * 30 + [BAD] + [GOOD] * 30  # about 6 KB, each record about 100 bytes
    log.write_text('"id": "m0", "role": "USER"}\n' + "".join(json.dumps(m) + "\n" for m in records))
    r = run("validate", "--max-bytes", "1000", str(log))
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and len(lines) == 2, lines
    assert lines[0].startswith(f"{log}:/0: not valid JSON: ") and lines[0].endswith(" [json]")
    assert lines[1].startswith(f"{log}:/31/content/0/type: ") and lines[1].endswith("[role-content]")
    (row,) = [row for row in rows(run("validate", "--json", "--max-bytes", "1000", str(log))) if row["instance"]]
    assert row["line"] == 32
    # A record beyond the limit among them is one problem, the next ones still checked.
    log.write_text(
        '{"id": \n' + json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "x" * 2000}) + "\n" + json.dumps(BAD) + "\n"
    )
    got = [
        (row["instance"], row["line"], row["rule"])
        for row in rows(run("validate", "--json", "--max-bytes", "1000", str(log)))
    ]
    assert got == [(0, 1, "json"), (2, 3, "max-bytes"), (3, 4, "role-content")]


def test_a_file_name_that_is_not_utf8_is_reported_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file name with bytes that are not UTF-8 (Python holds them as surrogate escapes) crashed --json
    ('str is not valid UTF-8: surrogates not allowed', a traceback, exit 1) and, on a stdout without
    surrogateescape (PYTHONIOENCODING=utf-8, as CI runners often set), the text report too. Now the name is
    shown with \\xNN for those bytes, in every format, on stdout and stderr alike."""
    name = os.fsdecode(b"bad\xffname.json")
    try:
        (tmp_path / name).write_text(json.dumps(BAD))
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    bad, missing = str(tmp_path / name), str(tmp_path / os.fsdecode(b"missing\xfe.json"))
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8")  # (read as the interpreter starts: the runner starts one for it)
    shown, shown_missing = f"{tmp_path}/bad\\xffname.json", f"{tmp_path}/missing\\xfe.json"
    for fmt in ("text", "json", "github"):
        r = run("validate", "--output-format", fmt, bad, missing, errors="replace")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr == f"agentmsg: {shown_missing}: cannot read: No such file or directory\n"
        if fmt == "json":
            assert [row["file"] for row in rows(r)] == [shown, shown_missing]
        else:
            assert shown in r.stdout.splitlines()[0]


def test_a_file_of_the_other_kind_gets_a_hint_after_its_problems(tmp_path: Path) -> None:
    """Agent events checked as messages (--kind msg, the default before the kind was told from the file) gave
    only two problems per event ('"content" is a required property', a lowercase role), nothing pointing at
    --kind. Now, after the problems, one line on stderr says which option fits; the same for messages checked as
    events. Left to itself (--kind auto), validate checks each file as the kind it holds."""
    doc = json.loads((ROOT / "tests/conformance/reducer/java-case5-duplicate-type-jsonl.json").read_text())
    events = tmp_path / "events.jsonl"
    events.write_text(doc["jsonl"])  # as AgentScope Java writes them
    auto = run("validate", str(events))
    assert (auto.returncode, auto.stdout, auto.stderr) == (0, "", "")
    r = run("validate", "--kind", "msg", str(events))
    assert r.returncode == 1 and r.stdout.count("\n") > 10
    assert r.stderr == f"agentmsg: {events}: it looks like agent events, not messages: check them with --kind event\n"
    ok = run("validate", "--kind", "event", str(events))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([GOOD, GOOD]))
    r = run("validate", "--kind", "event", "--json", str(messages))
    assert r.returncode == 1 and {row["rule"] for row in rows(r)} >= {"required"}
    assert r.stderr.endswith("it looks like messages, not agent events: check them with --kind msg\n")
    assert run("validate", str(messages)).stderr == ""


def test_a_quoted_glob_pattern_gives_the_files_it_matches(tmp_path: Path) -> None:
    """A CI step run without a shell (pre-commit's args, a YAML exec form, Windows) passes 'data/**/*.json' as it
    is: it was 'cannot read: No such file or directory', and a directory 'Is a directory' with no way out said.
    Now a pattern naming no file as it is gives the files it matches, sorted, ** at any depth (as ajv-cli
    does); one matching none is unreadable (exit 2); a directory says how to give its files; a file whose
    name looks like a pattern is that file."""
    (tmp_path / "data" / "a" / "b").mkdir(parents=True)
    (tmp_path / "data" / "top.json").write_text(json.dumps(GOOD))
    (tmp_path / "data" / "a" / "b" / "deep.json").write_text(json.dumps(BAD))
    (tmp_path / "data" / "a" / "log.jsonl").write_text(json.dumps(BAD) + "\n" + json.dumps(GOOD) + "\n")
    odd = tmp_path / "data" / "[odd].json"
    odd.write_text(json.dumps(BAD))
    r = run("validate", "--json", f"{tmp_path}/data/**/*.json", f"{tmp_path}/data/**/*.jsonl")
    assert r.returncode == 1 and r.stderr == ""
    assert [Path(row["file"]).relative_to(tmp_path).as_posix() for row in rows(r)] == [
        "data/[odd].json",
        "data/a/b/deep.json",
        "data/a/log.jsonl",
    ]
    r = run("validate", str(odd))
    assert r.returncode == 1 and r.stdout.startswith(f"{odd}:/content/0/type: ")
    r = run("validate", "--json", f"{tmp_path}/nothing/*.json")
    assert r.returncode == 2 and r.stderr == f"agentmsg: {tmp_path}/nothing/*.json: no file matches this pattern\n"
    assert [row["rule"] for row in rows(r)] == ["unreadable"]
    r = run("validate", f"{tmp_path}/data/")
    assert r.returncode == 2
    assert r.stderr == (
        f"agentmsg: {tmp_path}/data/: cannot read: Is a directory "
        f"(give its files: '{tmp_path}/data/**/*.json', quoted, is every .json file under it)\n"
    )


def test_an_sse_stream_checked_as_messages_is_said_once(tmp_path: Path) -> None:
    """The SSE stream's own problem names --kind event: no second line on stderr saying it again."""
    sse = tmp_path / "events.sse"
    sse.write_text('data: {"type":"AGENT_START","id":"e1","createdAt":"2026-01-01T00:00:00Z","replyId":"r"}\n\n')
    r = run("validate", "--kind", "msg", str(sse))
    assert r.returncode == 1 and r.stderr == "" and "validate --kind event reads one" in r.stdout


def test_stdin_given_twice_is_a_usage_error(tmp_path: Path) -> None:
    """'-' given twice: stdin was read by the first, the second read as empty and was reported as 'no JSON
    value' (exit 1), a problem of an input that does not exist. Now a usage error naming the repeat (exit 2),
    before anything is read."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    for args in (["-", "-"], ["-", str(good), "-"], ["--json", "-", "-"]):
        r = run("validate", *args, stdin=json.dumps(GOOD))
        assert (r.returncode, r.stdout) == (2, ""), (args, r.stdout, r.stderr)
        assert "'-' (stdin) given 2 times" in r.stderr and "read only once" in r.stderr, r.stderr
    assert run("validate", "-", str(good), stdin=json.dumps(GOOD)).returncode == 0


def test_validate_object_array_jsonl_and_stdin(tmp_path: Path) -> None:
    good, arr, jsonl = tmp_path / "good.json", tmp_path / "arr.json", tmp_path / "msgs.jsonl"
    good.write_text(json.dumps(GOOD))
    arr.write_text(json.dumps([GOOD, BAD]))
    jsonl.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(BAD) + "\n")
    r = run("validate", str(good))
    assert (r.returncode, r.stdout) == (0, "")
    r = run("validate", str(arr))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{arr}:/1/content/0/type: SYSTEM messages may only contain text blocks, got 'thinking' [role-content]"
    ]
    r = run("validate", str(jsonl), str(good))
    assert r.returncode == 1 and r.stdout.startswith(f"{jsonl}:/1/content/0/type:")
    r = run("validate", "-", stdin=json.dumps(BAD))
    assert r.returncode == 1 and r.stdout.startswith("-:/content/0/type:")
    r = run("validate", "--kind", "content-block", "-", stdin='{"type":"text"}')
    assert r.returncode == 1 and r.stdout.strip() == '-: "text" is a required property [required]'


def test_validate_bad_json_and_usage_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": ')
    r = run("validate", str(broken))
    assert r.returncode == 1 and "not valid JSON" in r.stdout
    r = run("validate", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr
    assert run("validate").returncode == 2
    assert run("validate", "--kind", "nope", str(broken)).returncode == 2
    assert run("frobnicate").returncode == 2


def test_schema_listing_single_and_bundle() -> None:
    r = run("schema")
    assert r.returncode == 0 and "msg\thttps://agentmsg.dev/schemas/v1/msg.schema.json" in r.stdout
    doc = json.loads(run("schema", "content-block").stdout)
    assert doc["$id"].endswith("content-block.schema.json")
    bundle = json.loads(run("schema", "msg", "--bundle").stdout)
    assert bundle["$ref"] == "https://agentmsg.dev/schemas/v1/msg.schema.json"
    # The bundle is self-contained: python-jsonschema validates with it and no registry.
    import jsonschema

    validator = jsonschema.Draft202012Validator(bundle)
    assert validator.is_valid(GOOD) and not validator.is_valid(BAD)
    assert run("schema", "nope").returncode == 2
    # --bundle or --strict without NAME: the message's (--strict alone listed the schemas, itself ignored unsaid)
    assert json.loads(run("schema", "--bundle").stdout) == bundle
    closed = json.loads(run("schema", "--strict").stdout)
    assert closed == json.loads(run("schema", "msg", "--strict").stdout) and closed["additionalProperties"] is False


@pytest.mark.parametrize(
    ("name", "shown"),
    [("", "''"), (os.fsdecode(b"a\xff"), "'a\\xff'"), ("x\ny" * 100, "'x\\nyx\\ny")],
    ids=["empty", "not-utf-8", "long-lines"],
)
def test_schema_of_a_name_none_has_is_a_usage_error_naming_it_shown(name: str, shown: str) -> None:
    """`agentmsg schema ''` printed the msg schema (an empty NAME read as none given, with --bundle's default);
    a NAME of bytes that are not UTF-8 was said as '\\udcff' (repr of the surrogate), where a file name is said
    as '\\xff'. Now each is an unknown schema (exit 2), the name shown as a file name is, on one short line."""
    r = run("schema", name)
    assert (r.returncode, r.stdout) == (2, ""), r.stdout[:200]
    line = r.stderr.strip()
    assert line.startswith(f"agentmsg: unknown schema {shown}") and "udcff" not in line, line
    assert "\n" not in line and len(line) < 240, line


def test_schema_out_that_cannot_be_written_says_cannot_write(tmp_path: Path) -> None:
    """`agentmsg schema --out DIR` where DIR cannot be made (a file is in the way) said 'DIR/schemas/v1: cannot
    read: Not a directory', as if an input were missing: it is the output that cannot be written (exit 2,
    as trim -o says it)."""
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    r = run("schema", "--out", str(blocker))
    assert (r.returncode, r.stdout) == (2, ""), r
    assert r.stderr == f"agentmsg: {blocker / 'schemas' / 'v1'}: cannot write: Not a directory\n", r.stderr


def test_validate_exit_codes_are_as_documented(tmp_path: Path) -> None:
    """0 valid, 1 invalid (not JSON, too big, too deep included), 2 usage or unreadable (others still checked)."""
    good, broken = tmp_path / "good.json", tmp_path / "broken.json"
    good.write_text(json.dumps(GOOD))
    broken.write_text('{"id": ')
    assert run("validate", str(good)).returncode == 0
    r = run("validate", str(broken), str(good))
    assert r.returncode == 1 and r.stdout.startswith(f"{broken}: not valid JSON") and r.stdout.endswith("[json]\n")
    r = run("validate", str(tmp_path / "missing.json"), str(broken))
    assert r.returncode == 2 and "cannot read" in r.stderr and f"{broken}: not valid JSON" in r.stdout
    r = run("validate", "--help")
    assert r.returncode == 0 and "exit status:" in r.stdout and "2  usage error" in r.stdout
    assert "bounded memory" in r.stdout
    assert run("validate", "--max-depth", "300", str(good)).returncode == 2
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "exits 0 when all instances are valid, 1 when any is invalid (text that is not JSON" in readme
    assert "2 on usage errors or files that cannot be read" in readme


def test_a_value_nested_too_deep_is_said_at_its_pointer_in_every_output_format(tmp_path: Path) -> None:
    """A file nested past ``--max-depth`` was said of the whole instance (pointer ""), however deep in it the value
    was. It is said at the array or object that crosses the limit, a pointer of as many steps as the limit, shown as
    a long key's pointer is: cut to POINTER_LIMIT in a line (text, GitHub annotations), whole where it is data (JSON
    lines, SARIF's logical location, JUnit's failure)."""
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps({**GOOD, "metadata": {"m": json.loads("[" * 300 + "]" * 300)}}))
    pointer = "/metadata/m" + "/0" * 252
    words = "nested deeper than 254 levels (limits.max_depth)"
    text = run("validate", str(deep))
    assert (text.returncode, text.stdout) == (1, f"{deep}:{clip(pointer, POINTER_LIMIT)}: {words} [max-depth]\n")
    github = run("validate", "--output-format", "github", str(deep)).stdout
    assert github.endswith(f"[max-depth]::{clip(pointer, POINTER_LIMIT)}: {words}\n"), github
    (line,) = run("validate", "--json", str(deep)).stdout.splitlines()
    assert (json.loads(line)["pointer"], json.loads(line)["rule"]) == (pointer, "max-depth")
    sarif = json.loads(run("validate", "--output-format", "sarif", str(deep)).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == pointer
    junit = ET.fromstring(run("validate", "--output-format", "junit", str(deep)).stdout)
    (failure,) = junit.iter("failure")
    assert failure.get("message", "").startswith(f"{pointer}: {words}")


def test_validate_applies_the_api_limits_and_rules(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 300 + "]" * 300)
    r = run("validate", str(deep))
    at = clip("/0" * 254, POINTER_LIMIT)  # (the array that crosses the limit, its pointer cut as a long key's is)
    assert (r.returncode, r.stdout) == (
        1,
        f"{deep}:{at}: nested deeper than 254 levels (limits.max_depth) [max-depth]\n",
    )
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({**GOOD, "metadata": {"a": [[[1]]]}}))
    assert run("validate", str(nested)).returncode == 0
    r = run("validate", "--max-depth", "3", str(nested))
    assert r.returncode == 1 and "[max-depth]" in r.stdout
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**GOOD, "content": [{"type": "text", "text": "x" * 5000}]}))
    r = run("validate", "--max-bytes", "1000", str(big))
    assert r.returncode == 1 and r.stdout.endswith("[max-bytes]\n")
    huge_int = tmp_path / "int.json"
    huge_int.write_text(json.dumps({**GOOD, "usage": {"inputTokens": 18446744073709551617}}))
    r = run("validate", str(huge_int))
    assert (
        r.returncode == 1 and r.stdout.startswith(f"{huge_int}:/usage/inputTokens: ") and "[integer-range]" in r.stdout
    )
    surrogate = tmp_path / "surrogate.json"
    surrogate.write_text(json.dumps(GOOD).replace('"hi"', '"\\ud800"'))
    r = run("validate", str(surrogate))
    assert r.returncode == 1 and r.stdout.endswith("[lone-surrogate]\n")


def _twice(text: str, key: str, value: str) -> str:
    """``text`` (compact JSON) with ``"key": value`` added after the first ``"key":...`` member: that key twice."""
    at = text.index(f'"{key}":')
    end = text.index(",", at) if text.find(",", at) != -1 else len(text) - 1
    return text[:end] + f',"{key}":{value}' + text[end:]


def test_validate_refuses_a_key_given_twice_in_one_object(tmp_path: Path) -> None:
    """A message whose "role" (or a block's "text") was given twice passed: msgspec keeps the last value without a
    word, as JSON.parse, python-jsonschema's and check-jsonschema's json.load and Jackson's default mapper do, so
    each reader of the file may take either. validate is the CI check: such an instance is invalid (exit 1), rule
    duplicate-key at the key in its object, on its line, in every report format; two spellings of one key
    ("a" and "\\u0061") are one key."""
    good = json.dumps(GOOD, separators=(",", ":"))
    top = tmp_path / "top.json"
    top.write_text(_twice(good, "role", '"SYSTEM"'))
    r = run("validate", str(top))
    assert r.returncode == 1
    assert r.stdout == (
        f"{top}:/role: key 'role' given 2 times in one object, its values differ: readers keep one (most, the last) [duplicate-key]\n"
    )
    block = tmp_path / "block.json"
    block.write_text(good.replace('"text":"hi"', '"text":"rm -rf /","\\u0074ext":"hi"'))
    r = run("validate", "--json", str(block))
    assert r.returncode == 1
    assert [(row["instance"], row["line"], row["pointer"], row["rule"]) for row in rows(r)] == [
        (None, 1, "/content/0/text", "duplicate-key")
    ]
    array = tmp_path / "conversation.json"
    array.write_text(
        json.dumps([GOOD, json.loads(good)], indent=2).replace('"name": "Friday"', '"name": "a", "name": "b"', 1)
    )
    r = run("validate", "--json", str(array))
    assert r.returncode == 1
    assert [(row["instance"], row["pointer"], row["rule"]) for row in rows(r)] == [(0, "/name", "duplicate-key")]
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text("\n".join([good, good, "", _twice(good, "metadata", '{"k":1,"k":2}'), good]) + "\n")
    r = run("validate", "--output-format", "github", str(jsonl))
    assert r.returncode == 1
    assert r.stdout.startswith(f"::error file={jsonl},line=4,title=agentmsg validate [duplicate-key]::/2/metadata: ")
    assert r.stdout.endswith("(+1 more in this instance)\n")  # (the second metadata's "k" twice too)


def test_validate_finds_no_duplicate_key_in_a_large_file_without_one(tmp_path: Path) -> None:
    """Colons in strings (timestamps, URLs, keys), some written as \\u003a escapes, in a JSON array and in JSON
    Lines beyond the 64 KiB above which the reader walks a value: valid, nothing said; the same file with one key
    given twice in its last message is refused there."""
    msgs = [
        {
            **GOOD,
            "id": f"m{i}",
            "timestamp": "2026-12-04 22:52:41.655",
            "content": [{"type": "text", "text": f"see https://example.com:8080/{i} at 12:30"}],
            "metadata": {"a:b": "::", "n": [i, {"x": None}]},
        }
        for i in range(3000)
    ]
    text = json.dumps(msgs).replace('"::"', '"\\u003a:"')
    lines = "\n".join(json.dumps(m) for m in msgs) + "\n"
    assert len(text) > 500_000 and len(lines) > 500_000
    for name, body in (("array.json", text), ("log.jsonl", lines)):
        path = tmp_path / name
        path.write_text(body)
        r = run("validate", str(path))
        assert (r.returncode, r.stdout) == (0, ""), r.stdout[:500]
        path.write_text(body.replace('"id": "m2999"', '"id": "m2999", "id": "again"'))
        r = run("validate", "--json", str(path))
        assert r.returncode == 1
        assert [(row["instance"], row["pointer"], row["rule"]) for row in rows(r)] == [(2999, "/id", "duplicate-key")]


def test_validate_reads_jsonl_line_by_line_and_refuses_long_records(tmp_path: Path) -> None:
    jsonl = tmp_path / "msgs.jsonl"
    jsonl.write_text(
        json.dumps(GOOD)
        + "\n"
        + json.dumps({**GOOD, "content": [{"type": "text", "text": "x" * 5000}]})
        + "\n\n"
        + json.dumps(BAD)
        + "\n"
    )
    r = run("validate", "--max-bytes", "1000", str(jsonl))
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and len(lines) == 2
    assert lines[0].startswith(f"{jsonl}:/1: ") and lines[0].endswith("[max-bytes]")
    assert lines[1].startswith(f"{jsonl}:/2/content/0/type: ") and lines[1].endswith("[role-content]")


def test_validate_stops_at_once_on_endless_or_binary_input() -> None:
    """An input that never ends is refused after at most max_bytes (here 100 KB), not read without bound."""
    zero = run("validate", "/dev/zero")
    assert zero.returncode == 1 and zero.stdout == "/dev/zero: not valid JSON: it starts with b'\\x00' [json]\n"
    endless = subprocess.Popen(
        [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('[' * 65536)"], stdout=subprocess.PIPE
    )
    try:
        r = subprocess.run(
            [sys.executable, "-m", "agentmsg", "validate", "--max-bytes", "100000", "-"],
            stdin=endless.stdout,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        endless.kill()
        endless.wait()
    assert r.returncode == 1 and r.stdout.endswith("[max-bytes]\n")


def test_validate_notes_unknown_keys_and_strict_rejects_them(tmp_path: Path) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**GOOD, "usage": {"inputTokens": 1, "futureTokens": 5}}))
    r = run("validate", str(newer))
    assert r.returncode == 0
    assert r.stdout.startswith(f"{newer}:/usage/futureTokens: note: ") and r.stdout.endswith("[unknown-key]\n")
    r = run("validate", "--strict", str(newer))
    assert r.returncode == 1 and r.stdout.startswith(f"{newer}:/usage: ") and "[additionalProperties]" in r.stdout


def test_validate_help_names_the_default_kind_it_uses(tmp_path: Path) -> None:
    """The help says what a run without --kind does: each file's kind told from it (auto), an SSE stream of
    agent events read as such; it said "(default: msg)" and that SSE needed --kind event."""
    help_text = " ".join(run("validate", "--help").stdout.split())
    defaults = set(re.findall(r"\(default: ([a-z-]+)[,)]", help_text))
    assert defaults == {"auto"}, defaults
    assert "with --kind event, an SSE stream" not in help_text
    stream = tmp_path / "events.sse"
    events = (ROOT / "tests" / "browser" / "streams" / "java-react-tool-call-then-answer.jsonl").read_text()
    stream.write_text("".join(f"data: {line}\n\n" for line in events.splitlines() if line.strip()))
    r = run("validate", "--json", str(stream))  # no --kind: told an event stream from the file
    assert r.returncode == 0 and r.stdout == "", r.stdout


def test_validate_notes_the_unknown_keys_of_an_invalid_instance_too(tmp_path: Path) -> None:
    """A key the schema does not declare is said in an invalid instance as in a valid one (--strict says it
    either way): a misspelt key is often why a required one is missing, and the note says which."""
    misspelt = {k: v for k, v in GOOD.items() if k != "content"} | {"contents": GOOD["content"]}
    path = tmp_path / "misspelt.jsonl"
    path.write_text(json.dumps(misspelt) + "\n" + json.dumps({**GOOD, "futureKey": 1, "name": 5}) + "\n")
    r = run("validate", "--json", str(path))
    assert r.returncode == 1
    assert [(row["instance"], row["pointer"], row["rule"], row["kind"]) for row in rows(r)] == [
        (0, "", "required", "error"),
        (0, "/contents", "unknown-key", "note"),
        (1, "/name", "type", "error"),
        (1, "/futureKey", "unknown-key", "note"),
    ]
    strict = run("validate", "--json", "--strict", str(path))
    assert {row["instance"] for row in rows(strict) if row["rule"] == "additionalProperties"} == {0, 1}


def test_validate_report_is_on_stdout_and_json_lines_with_json(tmp_path: Path) -> None:
    """validate's problems are its result (stdout, as a linter's); only what stopped a file from being
    checked goes to stderr. --json gives CI one object per problem, a note or an unreadable file included."""
    mixed = tmp_path / "mixed.jsonl"
    newer = {**GOOD, "usage": {"inputTokens": 1, "futureTokens": 5}}
    mixed.write_text(json.dumps(GOOD) + "\n" + json.dumps(BAD) + "\n" + json.dumps(newer) + "\n")
    missing = tmp_path / "missing.json"
    r = run("validate", "--json", str(mixed), str(missing))
    assert r.returncode == 2  # an unreadable file wins over an invalid instance, as without --json
    assert r.stderr == f"agentmsg: {missing}: cannot read: No such file or directory\n"
    rows = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert all(list(row) == ["file", "instance", "line", "pointer", "rule", "kind", "message"] for row in rows)
    assert {(row["instance"], row["line"], row["pointer"], row["rule"], row["kind"]) for row in rows} == {
        (1, 2, "/content/0/type", "role-content", "error"),
        (2, 3, "/usage/futureTokens", "unknown-key", "note"),
        (None, None, "", "unreadable", "error"),
    }
    assert rows[-1] == {
        "file": str(missing),
        "instance": None,
        "line": None,
        "pointer": "",
        "rule": "unreadable",
        "kind": "error",
        "message": "cannot read: No such file or directory",
    }
    text = run("validate", str(mixed))
    assert text.returncode == 1 and text.stderr == ""
    assert text.stdout.splitlines()[0].startswith(f"{mixed}:/1/content/0/type: ")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    ok = run("validate", "--json", str(good))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    one = run("validate", "--json", "-", stdin="not json")
    assert (
        one.returncode == 1 and json.loads(one.stdout)["rule"] == "json" and json.loads(one.stdout)["instance"] is None
    )


def test_validate_reads_an_sse_event_stream_with_kind_event(tmp_path: Path) -> None:
    """`agentmsg events --sse` output (what serve reads) was 'not valid JSON: it starts with b'i'': with
    --kind event each SSE event's data is an instance (/N: the N-th event); other kinds say what it is."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps({**GOOD, "role": "ASSISTANT"}))
    sse = run("events", "--sse", str(reply)).stdout
    n = sse.count("\ndata: ")
    good = tmp_path / "events.sse"
    good.write_text(sse)
    r = run("validate", "--kind", "event", str(good))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    bad = tmp_path / "bad.sse"
    bad.write_bytes(
        sse.encode()
        + b'data: {"type":"BOGUS","id":"x","createdAt":"2025-01-01T00:00:00Z"}\n\ndata: not json\n\n'
        + b'data: {"type":"AGENT_END","id":"y","createdAt":"2025-01-01T00:00:00Z","replyId":"\xff"}\n\n'
    )
    r = run("validate", "--kind", "event", "--json", str(bad))
    rows = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert r.returncode == 1
    assert [(row["instance"], row["pointer"], row["rule"]) for row in rows] == [
        (n, "/type", "enum"),
        (n + 1, "", "json"),
        (n + 2, "", "utf-8"),
    ]
    r = run("validate", "--kind", "msg", str(good))
    assert r.returncode == 1 and "it is an SSE stream (validate --kind event reads one) [json]" in r.stdout
    auto = run("validate", str(good))  # told from the file: an event stream
    assert (auto.returncode, auto.stdout, auto.stderr) == (0, "", "")


def test_a_symlink_loop_under_a_double_star_is_walked_once(tmp_path: Path) -> None:
    """Two links back to the data folder under it: ``**`` followed them until the path was too long (ELOOP),
    every file checked again at each depth, 2**40 paths with two links (never ending). Now a folder that is
    already on the path being walked is not entered again: each file is checked once, under its own name."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "bad.json").write_text(json.dumps(BAD))
    (data / "sub" / "loop1").symlink_to(data, target_is_directory=True)
    (data / "sub" / "loop2").symlink_to("..", target_is_directory=True)
    (data / "linked").symlink_to(data / "sub", target_is_directory=True)  # a link to a folder, not a loop: walked
    (data / "sub" / "deep.json").write_text(json.dumps(BAD))
    r = run("validate", "--json", f"{data}/**/*.json")
    assert r.returncode == 1 and r.stderr == ""
    assert sorted({Path(row["file"]).relative_to(data).as_posix() for row in rows(r)}) == [
        "bad.json",
        "linked/deep.json",
        "sub/deep.json",
    ]


def test_a_file_named_twice_is_checked_once(tmp_path: Path) -> None:
    """A file given twice, or given and matched by a pattern, was checked twice: its problems said twice, and a
    JUnit report's one testcase with each failure twice. Now each file is checked once, where first named."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BAD))
    once = rows(run("validate", "--json", str(bad)))
    r = run("validate", "--json", str(bad), f"{tmp_path}/./bad.json", f"{tmp_path}/*.json")
    assert r.returncode == 1 and rows(r) == once
    junit = run("validate", "--output-format", "junit", str(bad), str(bad)).stdout
    assert junit.count("<failure ") == len(once)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pattern_gives_no_named_pipe(tmp_path: Path) -> None:
    """A named pipe that a pattern matched was opened as a file: the run waited for a writer, for ever (a CI
    job until its timeout). A pattern gives files (and names that do not resolve, said unreadable), not pipes,
    sockets or devices; a pipe named as it is (``<(cmd)``) is still read."""
    from agentmsg.cli.validate import _expand

    (tmp_path / "bad.json").write_text(json.dumps(BAD))
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "gone.json")
    assert list(_expand([f"{tmp_path}/*.json"])) == [
        (f"{tmp_path}/bad.json", True),
        (f"{tmp_path}/dangling.json", True),
    ]
    assert list(_expand([f"{tmp_path}/pipe.json"])) == [(f"{tmp_path}/pipe.json", False)]


def test_a_file_named_dash_that_a_pattern_matches_is_that_file(tmp_path: Path) -> None:
    """'*' (or '{-,x}') in a folder holding a file named '-' gave '-', which was read as stdin: the file went
    unchecked and stdin was checked in its place (with '-' given too, the file was dropped as stdin named twice).
    A matched '-' is the file, shown as './-' ('data/*' gave 'data/-' already); only '-' as given is stdin."""
    (tmp_path / "-").write_text(json.dumps(BAD))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "-").write_text(json.dumps(BAD))
    stdin = json.dumps(GOOD)
    for pattern in ("*", "-*", "{-,x}"):
        r = run("validate", "--json", "--", pattern, stdin=stdin, cwd=tmp_path)
        assert r.returncode == 1, pattern
        assert [(row["file"], row["rule"]) for row in rows(r)] == [("./-", "role-content")], pattern
    r = run("validate", "--json", "-", "*", "data/*", stdin=stdin, cwd=tmp_path)
    assert r.returncode == 1  # (stdin's message is valid; '*' gives files, not the folder)
    assert [(row["file"], row["rule"]) for row in rows(r)] == [("./-", "role-content"), ("data/-", "role-content")]
    r = run("validate", "--json", "-", stdin=json.dumps(BAD), cwd=tmp_path)
    assert [(row["file"], row["rule"]) for row in rows(r)] == [("-", "role-content")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_matched_file_that_changes_before_it_is_read_is_said_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file a pattern found, then replaced by a named pipe before it was read, was opened as a pipe: the run
    waited for a writer, for ever (here a writer stands by, so the old code read its JSON instead). Now a matched
    file is opened without waiting and read only while it is a file; one gone is said so (not "no file matches this
    pattern" for a name that looks like one), and the other files are checked."""
    from agentmsg.cli import main, validate

    for name in ("gone[1].json", "folder.json", "pipe.json", "z.json"):
        (tmp_path / name).write_text(json.dumps(GOOD))
    pipe = tmp_path / "pipe.json"
    standby = threading.Thread(target=_write_when_read, args=(pipe, json.dumps(GOOD).encode()), daemon=True)
    listed = validate._expand

    def expand(paths: list[str]) -> Iterator[tuple[str, bool]]:
        found = list(listed(paths))
        (tmp_path / "gone[1].json").unlink()
        (tmp_path / "folder.json").unlink()
        (tmp_path / "folder.json").mkdir()
        pipe.unlink()
        os.mkfifo(pipe)
        standby.start()
        yield from found

    monkeypatch.setattr(validate, "_expand", expand)
    try:
        code = main(["validate", "--json", f"{tmp_path}/*.json"])
    finally:
        if standby.ident is not None:  # (started)
            reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # (while it is open, the writer's open returns)
            standby.join()
            os.close(reader)
    out, err = capsys.readouterr()
    assert code == 2
    assert [(Path(row["file"]).name, row["rule"], row["message"]) for row in map(json.loads, out.splitlines())] == [
        ("folder.json", "unreadable", "cannot read: no longer a file (it changed after it was found)"),
        ("gone[1].json", "unreadable", "cannot read: No such file or directory"),
        ("pipe.json", "unreadable", "cannot read: no longer a file (it changed after it was found)"),
    ]
    assert err.count("\n") == 3 and "Traceback" not in err


def _write_when_read(pipe: Path, data: bytes) -> None:
    """Write ``data`` to the named pipe once a reader opens it (its ``open`` waits for one until then)."""
    try:
        fd = os.open(pipe, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:  # (the reader closed first)
        pass


def test_a_brace_pattern_stands_for_each_of_its_alternatives(tmp_path: Path) -> None:
    """A pattern per kind of file ('data/**/*.json' 'data/**/*.sse') exited 2 in a project with no SSE file (a
    pattern matching none is an unreadable file), so a CI job could not name every kind the pre-commit hook checks.
    {a,b} stands for either, as a shell's brace expansion: one pattern, matching none only when there is no file
    of any of them. A file whose name holds braces is still itself."""
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "sub" / "a.json").write_text(json.dumps(GOOD))
    (tmp_path / "data" / "b.jsonl").write_text(json.dumps(BAD) + "\n")
    (tmp_path / "data" / "notes.md").write_text("# not JSON")
    r = run("validate", "--output-format", "junit", "data/**/*.{json,jsonl,ndjson,sse}", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    cases = {c.get("name"): len(c.findall("failure")) for c in ET.fromstring(r.stdout).iter("testcase")}
    assert cases == {"data/b.jsonl": 1, "data/sub/a.json": 0}
    r = run("validate", "data/{sub/*.json,none.sse}", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = run("validate", "data/**/*.{ndjson,sse}", cwd=tmp_path)
    assert r.returncode == 2 and "no file matches this pattern" in r.stderr
    (tmp_path / "x{1,2}.json").write_text(json.dumps(BAD))
    r = run("validate", "x{1,2}.json", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("x{1,2}.json:/content/0/type: ")
    (tmp_path / "out{1,2}").mkdir()
    (tmp_path / "out{1,2}" / "m.json").write_text(json.dumps(BAD))
    r = run("validate", "out{1,2}/*.json", cwd=tmp_path)  # (matched none: out1/*.json, out2/*.json only)
    assert r.returncode == 1 and r.stdout.startswith("out{1,2}/m.json:/content/0/type: "), r.stderr


#: brace patterns and what bash makes of each (nested groups, escaped braces and commas, a lone { or }, a group
#: with no comma of its own); checked against bash itself where there is one
BASH_BRACES = {
    "{a,b}": ["a", "b"],
    "{{a,b}": ["{a", "{b"],
    "{{a,b}}": ["{a}", "{b}"],
    "{a,b}}": ["a}", "b}"],
    "}{a,b}": ["}a", "}b"],
    "{a{b,c}": ["{ab", "{ac"],
    "{a,b{c,d}": ["{a,bc", "{a,bd"],
    "\\{a,b\\}": ["{a,b}"],
    "a\\{b,c}": ["a{b,c}"],
    "{a,b\\}": ["{a,b}"],
    "{a\\,b,c}": ["a,b", "c"],
    "{a\\}b,c}": ["a}b", "c"],
    "{a,\\}}": ["a", "}"],
    "\\\\{a,b}": ["\\a", "\\b"],
    "{a\\\\,b}": ["a\\", "b"],
    "{a}": ["{a}"],
    "{}": ["{}"],
    "{": ["{"],
    "}": ["}"],
    "}{": ["}{"],
    "a{b": ["a{b"],
    "{a,b": ["{a,b"],
    "a,b}": ["a,b}"],
    "{a,{b}}": ["a", "{b}"],
    "{{a,b},c}": ["a", "b", "c"],
    "x{a,{b,c}}y": ["xay", "xby", "xcy"],
    "a{b{c,d}e,f}g": ["abceg", "abdeg", "afg"],
    "{a,b}{c,d}": ["ac", "ad", "bc", "bd"],
    "{a,b}}{c,d}": ["a}c", "a}d", "b}c", "b}d"],
    "{,a}x": ["x", "ax"],
    "*.{json,sse}": ["*.json", "*.sse"],
    "{x,y}/**/*.{a,b}": ["x/**/*.a", "x/**/*.b", "y/**/*.a", "y/**/*.b"],
    # a { at the start of the text (or of a group's alternative, or of what follows a group) right before a }
    # opens no group in bash (find's {}); elsewhere it does
    "{}a,b}": ["{}a,b}"],
    "{a,b}{},c}": ["a{},c}", "b{},c}"],
    "{},a}{b,c}": ["{},a}b", "{},a}c"],
    "{a,{},b}": ["a", "{}", "b"],
    "x{}a,b}": ["x}a", "xb"],
    # sequences: integers (an increment, its sign ignored; zero-padded when an end starts with 0 or -0), letters
    "x{1..3}y": ["x1y", "x2y", "x3y"],
    "{3..1}": ["3", "2", "1"],
    "{03..1}": ["03", "02", "01"],
    "{-3..02}": ["-3", "-2", "-1", "00", "01", "02"],
    "{-05..5..5}": ["-05", "000", "005"],
    "{1..10..-3}": ["1", "4", "7", "10"],
    "{+1..3}": ["1", "2", "3"],
    "{5..5}": ["5"],
    "{00..2}": ["00", "01", "02"],
    "{1..2..0}": ["1", "2"],
    "{a..e..2}": ["a", "c", "e"],
    "{C..A}": ["C", "B", "A"],
    "{1..2}{a..b}": ["1a", "1b", "2a", "2b"],
    "day{01..3}.{json,sse}": [f"day0{d}.{k}" for d in (1, 2, 3) for k in ("json", "sse")],
    # no sequence: the group is itself (a text after it still expanded), or its commas split it
    "{1..3.}": ["{1..3.}"],
    "{1..}": ["{1..}"],
    "{..3}": ["{..3}"],
    "{a..9}": ["{a..9}"],
    "{ab..c}": ["{ab..c}"],
    "{1..3..}": ["{1..3..}"],
    "{1..3..x}": ["{1..3..x}"],
    "{1..a}{b,c}": ["{1..a}b", "{1..a}c"],
    "{a..{b,c}}": ["a..b", "a..c"],
    "{1..3,x}": ["1..3", "x"],
    "{99999999999999999999..1}x": ["{99999999999999999999..1}x"],
    # the text after a group is expanded on its own: a { at its start before a } opens none
    "{a,b}{}c{d,e}": ["a{}cd", "a{}ce", "b{}cd", "b{}ce"],
    "{a..a}{}{b,c}": ["a{}b", "a{}c"],
    "{a}{b}{c,d}": ["{a}{b}c", "{a}{b}d"],
}


@pytest.mark.skipif(os.sep == "\\", reason="a backslash is a separator there, no escape")
@pytest.mark.parametrize(("pattern", "bash"), BASH_BRACES.items())
def test_a_brace_pattern_expands_as_bash_expands_it(pattern: str, bash: list[str]) -> None:
    """'{{a,b}' gave '{a,b}' (the first brace's group took the second's, and had no comma of its own), '\\{a,b\\}'
    gave '\\a' and 'b\\}' (a backslash escaped nothing): bash gives '{a' '{b' and '{a,b}'. The table is bash's
    word for word, asked where bash is (noglob: the patterns as brace expansion leaves them)."""
    from agentmsg.cli.validate import _braces

    assert _braces(pattern) == bash
    shell = shutil.which("bash")
    if shell is None:
        pytest.skip("no bash to ask")
    said = subprocess.run(
        [shell, "-c", f"set -f; printf '%s\\n' {pattern}"], capture_output=True, text=True, check=True
    )
    assert said.stdout.splitlines() == bash


def test_a_pattern_with_no_comma_and_close_after_a_brace_is_not_scanned_brace_by_brace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """'{' * 10,000 (or '{a,' * 5,000) scanned the rest of the pattern from every brace for a close that is not
    there: 8 s (bash: 0.5 s). With no comma and } after a brace no group opens there or later: no scan."""
    import agentmsg.cli.validate as validate

    scans = 0
    scan = validate._brace_scan

    def counted(text: str, at: int, wanted: str, escapes: bool, **options: Any) -> int:
        nonlocal scans
        scans += 1
        return scan(text, at, wanted, escapes, **options)

    monkeypatch.setattr(validate, "_brace_scan", counted)
    for pattern in ("{" * 10_000, "{a," * 5_000, "}," + "{" * 10_000):
        scans = 0
        assert validate._braces(pattern) == [pattern]
        assert scans <= 1, pattern


def test_a_pattern_is_scanned_about_once_whichever_braces_open_no_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each '{' that opens no group ('{}', '{a}', '{a..' many times before a group) was scanned from to the end of
    the pattern for its '}': 16,000 characters took 9 to 22 s. Which braces open a group is told in one pass once
    one does not: the characters scanned stay within a few times the pattern's length."""
    import agentmsg.cli.validate as validate

    scanned = 0
    scan = validate._brace_scan

    def counted(text: str, at: int, wanted: str, escapes: bool, **options: Any) -> int:
        nonlocal scanned
        found = scan(text, at, wanted, escapes, **options)
        scanned += found - at
        return found

    monkeypatch.setattr(validate, "_brace_scan", counted)
    for pattern, expanded in (
        ("{}" * 2_000 + "{,x}", ["{}" * 2_000, "{}" * 2_000 + "x"]),
        ("{a}" * 2_000 + "{b,c}", ["{a}" * 2_000 + "b", "{a}" * 2_000 + "c"]),
        ("{a.." * 2_000 + "}", ["{a.." * 2_000 + "}"]),
        ("{" * 2_000 + ",}", ["{" * 1_999, "{" * 1_999]),
    ):
        scanned = 0
        assert validate._braces(pattern) == expanded
        assert scanned <= 4 * len(pattern), (pattern[:20], scanned)


def test_groups_one_after_another_are_no_nesting() -> None:
    """Each group's following text was expanded one call deeper: '{1..1}' 1,500 times (or any 1,000 groups of one
    pattern) was 'nested too deeply to expand', a usage error; bash gives '1' * 1,500."""
    from agentmsg.cli.validate import _braces

    assert _braces("{1..1}" * 1_500) == ["1" * 1_500]
    assert _braces("x{a..a}y" * 1_000 + "{b,c}") == ["xay" * 1_000 + "b", "xay" * 1_000 + "c"]


def test_a_pattern_standing_for_too_many_characters_is_a_usage_error() -> None:
    """The cap counted patterns only: a long text before '{1..99999}' stood for 99,999 patterns of its length,
    built before any was globbed (a 100,000-character argument: 10 GB). More than 50,000,000 characters in all is
    a usage error too, before any is built."""
    from agentmsg.cli._io import UsageError
    from agentmsg.cli.validate import MAX_BRACE_CHARACTERS, _braces

    assert MAX_BRACE_CHARACTERS == 50_000_000
    assert len(_braces("x" * 400 + "{1..99999}")) == 99_999  # (about 40,000,000 characters)
    for pattern in ("x" * 600 + "{1..99999}", "{a,b}" * 16 + "x" * 800, "{" + "x" * 600 + "{1..9999},y}{1..9}"):
        with pytest.raises(UsageError, match=r"stand for more than 100,000 patterns \(or 50,000,000 characters\)$"):
            _braces(pattern)


def test_a_pattern_standing_for_too_many_patterns_is_a_usage_error() -> None:
    """'{1..100000000}' (or twenty '{a,b}' groups: 2**20 patterns) was globbed pattern by pattern, hundreds of MB
    of patterns first: more than 100,000 is a usage error naming the pattern, before any is built."""
    from agentmsg.cli.validate import MAX_BRACE_PATTERNS, _braces

    assert len(_braces("{1..100000}")) == MAX_BRACE_PATTERNS == 100_000
    for pattern in ("{1..100001}", "{0..99999999999999}x", "{a,b}" * 20, "{1..1000}{1..1000}"):
        r = run("validate", pattern)
        assert (r.returncode, r.stdout) == (2, ""), (pattern, r.stderr)
        assert r.stderr.endswith(": its brace groups stand for more than 100,000 patterns (or 50,000,000 characters)\n")


def test_a_pattern_of_braces_nested_too_deeply_is_a_usage_error_not_a_deep_input() -> None:
    """'{a,' * 1,000 + '}' * 1,000 ran out of Python's recursion and was said as 'the input is nested too deeply to
    read (limits.max_depth) [max-depth]', exit 1: no input was read, and no limit governs it. A usage error now
    (exit 2) naming the pattern, clipped."""
    r = run("validate", "{a," * 1_000 + "}" * 1_000)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr.startswith("agentmsg: {a,{a,") and "of 4,000 characters)" in r.stderr, r.stderr
    assert r.stderr.endswith(": its brace groups nest too deeply to expand\n") and "max-depth" not in r.stderr


def test_an_escaped_or_a_lone_brace_names_the_file_that_has_it(tmp_path: Path) -> None:
    """'\\{a,b\\}.json' is the file '{a,b}.json' (bash: ls \\{a,b\\}.json), '{{a,b}.json' the files '{a.json' and
    '{b.json'; the pattern as given is a file too (a name with a backslash)."""
    for name in ("{a,b}.json", "{a.json", "{b.json"):
        (tmp_path / name).write_text(json.dumps(BAD))
    r = run("validate", "--json", "\\{a,b\\}.json", "{{a,b}.json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert [row["file"] for row in rows(r)] == ["{a,b}.json", "{a.json", "{b.json"]
    (tmp_path / "\\{c,d\\}.json").write_text(json.dumps(BAD))
    r = run("validate", "--json", "\\{c,d\\}.json", cwd=tmp_path)
    assert [row["file"] for row in rows(r)] == ["\\{c,d\\}.json"], r.stderr


def test_validate_reads_an_array_an_item_at_a_time_as_it_read_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON array file was parsed whole before its items were checked (101 MB at the peak for 12 MB of 50,000
    messages, --kind msg); its items are now parsed one at a time. What validate says of it is what it said: each
    item's problems at its pointer and its first line, a key given twice refused (with --strict too), and a syntax
    error at the file's end one problem of the file, no item checked before it."""
    msgs: list[dict[str, Any]] = [{**GOOD, "id": f"m{i}"} for i in range(3000)]
    msgs[5] = {**BAD, "id": "m5"}
    msgs[2500] = {**GOOD, "id": "m2500", "role": 7, "extra": 1}
    text = json.dumps(msgs, indent=2).replace('"id": "m2999"', '"id": "m2999", "id": "again"')
    lines = text.splitlines()
    path = tmp_path / "conversation.json"
    path.write_text(text)
    expected = {
        (5, lines.index('    "id": "m5",')),  # (the line of its "{": the one before its id's)
        (2500, lines.index('    "id": "m2500",')),
        (2999, lines.index('    "id": "m2999", "id": "again",')),
    }
    r = run("validate", "--json", str(path))
    assert r.returncode == 1
    assert {(row["instance"], row["line"]) for row in rows(r)} == expected
    assert [row["rule"] for row in rows(r) if row["instance"] == 2999] == ["duplicate-key"]
    broken = tmp_path / "broken.json"
    broken.write_text(text[: text.rindex("]")])
    for source in (path, broken):
        for kind, strict in (("auto", False), ("msg", True)):
            report = agentmsg.check(source, kind=kind, strict=strict)
            with monkeypatch.context() as patch:
                patch.setattr(records, "_raw_items", lambda text: None)
                assert agentmsg.check(source, kind=kind, strict=strict) == report
    (problem,) = agentmsg.check(broken).findings
    assert (problem.instance, problem.rule, problem.line) == (None, "json", len(lines))


def test_an_event_stream_is_checked_holding_no_finished_reply() -> None:
    """``agentmsg validate`` (``agentmsg.check``) of an event stream kept every reply's message to the end, which
    only its problems are read from: 103 MB of events took 191 MB. Each finished reply's message is now let go:
    eight times the replies take about the memory of one time (Python's own allocations, counted: no clock)."""
    import tracemalloc

    def stream(replies: int) -> bytes:
        lines: list[bytes] = []
        for n in range(replies):
            r = f"r{n}"
            events = [
                {"type": "AGENT_START", "id": f"{r}a", "createdAt": "2026-01-01T00:00:00Z", "replyId": r},
                {"type": "TEXT_BLOCK_START", "id": f"{r}b", "createdAt": "2026-01-01T00:00:00Z", "replyId": r,
                 "blockId": "t"},
                {"type": "TEXT_BLOCK_DELTA", "id": f"{r}c", "createdAt": "2026-01-01T00:00:00Z", "replyId": r,
                 "blockId": "t", "delta": "x" * 20000},
                {"type": "TEXT_BLOCK_END", "id": f"{r}d", "createdAt": "2026-01-01T00:00:00Z", "replyId": r,
                 "blockId": "t"},
                {"type": "AGENT_END", "id": f"{r}e", "createdAt": "2026-01-01T00:00:00Z", "replyId": r},
            ]  # fmt: skip
            lines += [json.dumps(e).encode() for e in events]
        return b"\n".join(lines) + b"\n"

    def peak(replies: int) -> int:
        data = stream(replies)
        tracemalloc.start()
        try:
            assert agentmsg.check(data).valid
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(20)  # (the first check's own allocations: the schemas' validators, made once)
    small, large = peak(50), peak(400)
    assert large < small + (1 << 20), (small, large)  # (400 messages of 20 kB held: 8 MB more)
