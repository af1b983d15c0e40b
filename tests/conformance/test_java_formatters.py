"""AgentScope's own formatters judge the values of agentmsg's formatter (issue 27): an independent oracle for the
formatter vectors, which agentmsg's own formatter writes.

Which oracle judges which provider:

- ``openai``, ``deepseek``, ``dashscope-compatible``, ``anthropic``: AgentScope Java 2.0.0, its
  ``OpenAIChatFormatter`` / ``OpenAIMultiAgentFormatter`` (DashScope's compatible mode is OpenAIChatModel's in
  Java), ``DeepSeekFormatter`` / ``DeepSeekMultiAgentFormatter`` and ``AnthropicChatFormatter`` /
  ``AnthropicMultiAgentFormatter`` (io.agentscope:agentscope-extensions-model-openai and -anthropic 2.0.0 from Maven
  Central), run by the harness (tests/java, mode ``formatters``: one JVM for every vector) and built into the request
  body as AgentScope's ChatModels build it;
- ``gemini``, ``dashscope``: AgentScope Python 2.0.10's ``GeminiChatFormatter`` / ``GeminiMultiAgentFormatter`` and
  ``DashScopeChatFormatter`` / ``DashScopeMultiAgentFormatter`` (the ``agentscope`` package), because the Gemini and
  DashScope Java extension artifacts (2.0.0, 2.0.1) do not resolve from Maven Central. They give the message list
  only: that is what is compared.

Every formatter vector's conversation (tests/conformance/formatters/PROVIDER/CASE.json) is formatted twice by each
side: ``chat`` (the chat formatter; agentmsg with ``multi_agent=False``) and ``multi`` (the multi-agent formatter;
agentmsg with ``multi_agent=True``, no ``agent_name``, the ``history`` layout: AgentScope's). The vector's other
options are kept (``strict`` aside: a refusal is a vector's business, the values are compared here). Each
difference is a documented rule (docs/java-compatibility.md, "Formatter values": one normalizer per rule in
tests/_support/formatter_oracle.py, most of them only where agentmsg says the diagnostic the table gives) or a bug."""

from __future__ import annotations

import copy
import difflib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentmsg import decode_messages
from agentmsg.providers import FormatOptions, get
from tests import oracles
from tests._support import formatter_oracle as fo
from tests.conftest import ROOT

FOLDER = ROOT / "tests" / "conformance" / "formatters"
DOC = ROOT / "docs" / "java-compatibility.md"
JAVA_READY = all(shutil.which(t) for t in ("java", "javac", "mvn"))

pytestmark = [pytest.mark.oracle]


def _ours(vector: dict[str, Any], mode: str) -> Any:
    inputs = dict(vector["input"])
    messages = decode_messages(json.dumps(inputs.pop("messages")))
    params = inputs.pop("params", {})
    inputs.pop("strict", None)
    inputs.pop("agent_name", None)
    options = dict(inputs.pop("options", {}))
    options.pop("multi_agent_layout", None)
    if mode == "multi":
        options["multi_agent_layout"] = "history"
    inputs["multi_agent"] = mode == "multi"
    return get(vector["provider"]).format_request(messages, options=FormatOptions(**options), **inputs, **params)


def comparison(provider: str, case: str, mode: str, theirs: dict[str, Any]) -> fo.Comparison:
    vector = json.loads((FOLDER / provider / f"{case}.json").read_text(encoding="utf-8"))
    request = _ours(vector, mode)
    return fo.Comparison(
        provider=provider,
        case=case,
        mode=mode,
        messages=vector["input"]["messages"],
        diagnostics=[(q, p.rule) for p in request.diagnostics for q in p.pointers],
        ours=json.loads(request.body_bytes()),
        theirs=copy.deepcopy(theirs),
        path=request.path,
        params=dict(vector["input"].get("params", {})),
    )


def _projection(c: fo.Comparison) -> tuple[Any, Any]:
    """What is compared: the whole body (Java), the message list and system instruction (AgentScope Python)."""
    if c.provider == "gemini":
        keep = ("contents", "systemInstruction")
        return {k: c.ours[k] for k in keep if k in c.ours}, {k: c.theirs[k] for k in keep if k in c.theirs}
    if c.provider == "dashscope":
        return c.ours["input"]["messages"], c.theirs["input"]["messages"]
    return c.ours, c.theirs


def _diff(ours: Any, theirs: Any) -> str:
    a = json.dumps(ours, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    b = json.dumps(theirs, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(b, a, "oracle (after the rules)", "agentmsg", lineterm="", n=2))


def _java_oracle(java_out: Path) -> dict[str, Any]:
    return json.loads((java_out / "formatters.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _python_oracle(provider: str, case: str, mode: str) -> dict[str, Any]:
    from tests._support import agentscope_python

    vector = json.loads((FOLDER / provider / f"{case}.json").read_text(encoding="utf-8"))
    listed = agentscope_python.format_messages(provider, mode, vector["input"]["messages"])
    return {"contents": listed} if provider == "gemini" else {"input": {"messages": listed}}


CASES = sorted(p.stem for p in (FOLDER / "openai").glob("*.json"))


def compared(provider: str, java_out: Path | None, cases: list[str] = CASES) -> list[fo.Comparison]:
    """Each vector's conversation in both modes for ``provider``, the rules applied."""
    out = []
    results = _java_oracle(java_out) if java_out is not None else {}
    for case in cases:
        for mode in ("chat", "multi"):
            if provider in fo.JAVA:
                got = results[f"{provider}/{case}"][mode]
                assert "body" in got, f"{provider}/{case} ({mode}): {got['formatter']} failed: {got.get('error')}"
                theirs = got["body"]
            else:
                theirs = _python_oracle(provider, case, mode)
            c = comparison(provider, case, mode, theirs)
            fo.apply(c)
            out.append(c)
    return out


def _assert_agree(c: fo.Comparison) -> None:
    ours, theirs = _projection(c)
    assert ours == theirs, (
        f"{c.provider}/{c.case} ({c.mode}): agentmsg's request differs from the oracle's beyond the documented rules"
        f" (applied: {c.applied}); a bug, or a new rule for docs/java-compatibility.md and"
        f" tests/_support/formatter_oracle.py:\n{_diff(ours, theirs)}"
    )


def java(test: Any) -> Any:
    """A test that reads the harness's output: skipped without a JDK and Maven; the harness runs once
    (tests/conformance/conftest.py) for every Java test, all on one pytest-xdist worker, and its first build
    downloads for minutes, so these tests get more than pytest's default 300 s."""
    for mark in (
        pytest.mark.timeout(1320),
        pytest.mark.xdist_group("java"),
        pytest.mark.skipif(not JAVA_READY, reason="the AgentScope Java harness needs a JDK (java, javac) and Maven"),
    ):
        test = mark(test)
    return test


@java
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("provider", fo.JAVA)
def test_agentscope_java_formatters_agree_but_for_the_documented_rules(
    java_out: Path, provider: str, case: str
) -> None:
    for c in compared(provider, java_out, [case]):
        _assert_agree(c)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("provider", fo.PYTHON)
def test_agentscope_python_formatters_agree_but_for_the_documented_rules(provider: str, case: str) -> None:
    oracles.require("agentscope")
    for c in compared(provider, None, [case]):
        _assert_agree(c)


def test_the_rule_table_in_the_docs_is_the_one_the_test_reads() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert fo.table_markdown() in text, (
        "docs/java-compatibility.md, 'Formatter values': the rule table must be the one tests/_support/formatter_oracle.py"
        " holds (python -m tests._support.formatter_oracle prints it)"
    )


def _everything(java_out: Path) -> list[fo.Comparison]:
    oracles.require("agentscope")
    return [c for provider in (*fo.JAVA, *fo.PYTHON) for c in compared(provider, java_out)]


@java
def test_every_rule_applies_exactly_where_the_table_says(java_out: Path) -> None:
    """A rule applies to every provider and mode the table names and to no other: a difference that went away (fixed
    in agentmsg, or the oracle changed) leaves a stale rule, or a stale provider in it, which fails here."""
    applied: dict[str, set[tuple[str, str]]] = {}
    for c in _everything(java_out):
        for rule_id in c.applied:
            applied.setdefault(rule_id, set()).add((c.provider, c.mode))
    for r in fo.RULES.values():
        got = applied.get(r.id, set())
        assert {p for p, _ in got} == set(r.providers), (r.id, sorted(got))
        assert {m for _, m in got} == set(r.modes), (r.id, sorted(got))


def _changes(value: Any, path: tuple[Any, ...] = ()) -> Any:
    """One change at a time: ("del", path) for every key and element, ("set", path, new) for every scalar."""
    if isinstance(value, dict | list):
        for k, v in value.items() if isinstance(value, dict) else enumerate(value):
            yield "del", (*path, k), None
            yield from _changes(v, (*path, k))
    elif isinstance(value, bool):
        yield "set", path, not value
    elif isinstance(value, int | float):
        yield "set", path, value + 1
    elif isinstance(value, str):
        yield "set", path, value + "~"
    elif value is None:
        yield "set", path, "~"


@java
def test_the_rules_hide_no_value_of_agentmsgs_requests(java_out: Path) -> None:
    """The rules rewrite the oracle's request, never agentmsg's, and predict what agentmsg sends from the input and
    the diagnostics, not from agentmsg's request: so any one value of agentmsg's compared request changed (a string,
    a number, a flag, a null) and any one key or element removed makes the comparison fail."""
    missed = []
    count = 0
    for base in _everything(java_out):
        compared_part, _ = _projection(base)
        prefix = ("input", "messages") if base.provider == "dashscope" else ()
        for how, path, new in _changes(compared_part):
            c = copy.deepcopy(base)
            c.applied, c.media_counts = {}, None
            full = (*prefix, *path)
            node: Any = c.ours
            for step in full[:-1]:
                node = node[step]
            if how == "del":
                del node[full[-1]]
            else:
                node[full[-1]] = new
            count += 1
            try:
                fo.apply(c)
            except (KeyError, IndexError, TypeError, AttributeError):
                continue  # a rule could not read the changed request: the comparison fails too
            ours, theirs = _projection(c)
            if ours == theirs:
                missed.append(f"{base.provider}/{base.case} ({base.mode}) {how} {'/'.join(map(str, full))}")
    assert count > 5000 and missed == [], missed
