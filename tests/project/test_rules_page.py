"""docs/rules.md lists every rule name a Problem can carry, written from agentmsg/cli/_rules.py (the help text
and links of validate's SARIF and JUnit reports): the page is what the table says, and the table holds every rule
name the SDK's source raises (read from the source, so that a new rule cannot go unlisted)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agentmsg.cli._rules import BEGIN, END, RULES, anchor, docs_table
from agentmsg.providers import RULES as PROVIDER_RULES

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk" / "agentmsg"
_RULE = re.compile(r"[a-z][A-Za-z0-9]*(?:[-_][a-z0-9]+)*")

#: the calls that make a Problem, and where their rule is: Problem(pointer, rule, ...),
#: ValidationError.single(pointer, rule, ...), a formatter context's report(pointer, rule, ...), the reducer
#: state's problem(index, pointer, rule, ...), a reply builder's problem(rule, ...) / _problem_at(at, rule, ...);
#: ``rule=`` wherever it is given by keyword (Reducer.report, feed_unreadable, ...)
_CALLS = {"Problem": 1, "single": 1, "report": 1, "_problem_at": 1}

#: the JSON Schema keywords a schema problem is named after (its failing keyword), where the schemas use them
_KEYWORDS = {"type", "required", "enum", "const", "pattern", "minLength", "minimum", "maximum", "format"}
_KEYWORDS |= {"additionalProperties", "anyOf", "allOf", "not", "if"}


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _RULE.fullmatch(node.value):
        return node.value
    return None


def raised_rules() -> dict[str, str]:
    """rule -> where it is first raised (file:line), from the SDK's source."""
    found: dict[str, str] = {}
    for path in sorted(SDK.rglob("*.py")):
        source = path.read_text("utf-8")
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            rules = [_literal(k.value) for k in node.keywords if k.arg == "rule"]
            if name in _CALLS and len(node.args) > _CALLS[name]:
                rules.append(_literal(node.args[_CALLS[name]]))
            elif name == "problem":  # the first argument that is a rule name (pointers start with /, messages differ)
                rules.append(next((r for r in map(_literal, node.args) if r), None))
            for rule in rules:
                if rule:
                    found.setdefault(rule, f"{where}:{node.lineno}")
        if "/cli/" in str(path):  # the commands' own lines end with their rule: "... [incomplete_stream]\n"
            for match in re.finditer(r"\[([a-z][a-z0-9_-]+)\]\\n", source):
                found.setdefault(match.group(1), str(where))
    for schema in (ROOT / "schemas").glob("*.schema.json"):
        text = schema.read_text("utf-8")
        for rule in re.findall(r'"x-rule"\s*:\s*"([^"]+)"', text):
            found.setdefault(rule, str(schema.relative_to(ROOT)))
        for keyword in _KEYWORDS:
            if f'"{keyword}"' in text:
                found.setdefault(keyword, str(schema.relative_to(ROOT)))
    return found


def test_the_page_is_the_tables() -> None:
    doc = (ROOT / "docs" / "rules.md").read_text("utf-8")
    shown = doc.split(BEGIN, 1)[1].split(END, 1)[0]
    assert shown == docs_table(), (
        "docs/rules.md differs from agentmsg/cli/_rules.py: write it again with make docs-rules"
    )


def test_every_rule_the_sdk_raises_is_listed() -> None:
    raised = raised_rules()
    assert len(raised) > 80, sorted(raised)  # the scan sees the SDK's rules (a broken scan would pass any table)
    missing = {rule: where for rule, where in raised.items() if rule not in RULES}
    assert missing == {}, "rules raised in the SDK but not in agentmsg/cli/_rules.py (then make docs-rules)"
    assert set(PROVIDER_RULES) <= set(RULES)


def test_every_entry_says_meaning_example_and_fix_and_has_its_anchor() -> None:
    doc = (ROOT / "docs" / "rules.md").read_text("utf-8")
    headings = re.findall(r"^## (.+)$", doc, flags=re.M)
    assert sorted(headings, key=str.lower) == headings and set(headings) == set(RULES)
    for rule, (meaning, example, fix) in RULES.items():
        assert meaning and example and fix, rule
        # GitHub's heading ids: the anchor the reports' helpUri ends with
        assert anchor(rule) == re.sub(r"[^a-z0-9 _-]", "", rule.lower()).replace(" ", "-"), rule
