"""Formatter golden vectors (tests/conformance/formatters/<provider>/*.json): each input formatted
for its provider must give exactly the expected request (body, model, path, headers) and the expected
diagnostics (pointer and rule, in order), or the expected error; every expected body also passes the
provider's oracle. Rebuild with tests/conformance/formatters/build_vectors.py (review the diff)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmsg import Problem, ValidationError, decode_messages
from agentmsg.providers import NAMES, RULES, get
from tests.oracles import check

FOLDER = Path(__file__).resolve().parent / "formatters"
FILES = sorted(FOLDER.glob("*/*.json"))


def diagnostic(p: Problem) -> dict[str, Any]:
    """A diagnostic as a vector pins it: its pointer and rule, and every place when it is said once for several."""
    d: dict[str, Any] = {"pointer": p.pointer, "rule": p.rule}
    if p.other_pointers:
        d["pointers"] = list(p.pointers)
    return d


def _run(vector: dict[str, Any]) -> dict[str, Any]:
    inputs = dict(vector["input"])
    messages = decode_messages(json.dumps(inputs.pop("messages")))
    params = inputs.pop("params", {})
    try:
        request = get(vector["provider"]).format_request(messages, **inputs, **params)
    except ValidationError as exc:
        return {"error": [diagnostic(p) for p in exc.problems]}
    return {
        "request": request,
        "model": request.model,
        "path": request.path,
        "headers": dict(request.headers),
        "body": json.loads(request.body_bytes()),
        "diagnostics": [diagnostic(p) for p in request.diagnostics],
    }


def test_every_provider_has_vectors() -> None:
    for provider in NAMES:
        assert len(list((FOLDER / provider).glob("*.json"))) >= 10, provider


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_vector(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    assert vector["provider"] == path.parent.name
    expected = vector["expected"]
    got = _run(vector)
    if "error" in expected:
        assert got.get("error") == expected["error"]
        return
    request = got.pop("request")
    assert got == expected
    for d in expected["diagnostics"]:
        assert d["rule"] in RULES
    problems = check(vector["provider"], request)
    assert not problems, problems
