"""Every conformance vector through two independent validators that must agree:
python `jsonschema` (with format checking) and the SDK (jsonschema-rs validation + decoder)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

import agentmsg
from tests.conftest import VECTORS, load_vectors

FILES = sorted(p.name for p in VECTORS.glob("*.json"))
DECODERS = {
    "msg": lambda inst: agentmsg.Msg.from_dict(inst),
    "content-block": lambda inst: agentmsg.block_from_dict(inst),
}
# Events are checked for validity here; reducing them is tested with tests/conformance/reducer/.


def cases() -> list[Any]:
    out = []
    for name in FILES:
        doc = load_vectors(name)
        for case in doc["cases"]:
            out.append(pytest.param(doc["kind"], doc["schema"], case, id=f"{doc['kind']}:{case['id']}"))
    return out


def test_vector_files_are_well_formed() -> None:
    assert {"msg.json", "content-block.json", "event.json"} <= set(FILES)
    for name in FILES:
        doc = load_vectors(name)
        ids = [c["id"] for c in doc["cases"]]
        assert len(ids) == len(set(ids)), f"duplicate case ids in {name}"
        assert any(c["valid"] for c in doc["cases"]) and any(not c["valid"] for c in doc["cases"])
        for c in doc["cases"]:
            assert c["description"]
            if not c["valid"]:
                assert isinstance(c["rule"], str) and isinstance(c["pointer"], str), c["id"]


@pytest.mark.parametrize(("kind", "schema_id", "case"), cases())
def test_vector(kind: str, schema_id: str, case: dict[str, Any], schema_registry: Any) -> None:
    instance = case["instance"]
    oracle = jsonschema.Draft202012Validator(
        {"$ref": schema_id}, registry=schema_registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    oracle_errors = list(oracle.iter_errors(instance))
    sdk_valid = agentmsg.is_valid(instance, kind)
    assert (not oracle_errors) == sdk_valid, f"python-jsonschema and agentmsg disagree: {oracle_errors[:1]}"
    assert sdk_valid is case["valid"], f"expected valid={case['valid']}"
    if case["valid"]:
        if kind in DECODERS:
            decoded = DECODERS[kind](instance)
            # Decoding keeps everything: re-encoding validates and decodes to an equal object.
            encoded = decoded.to_dict() if kind == "msg" else agentmsg.block_to_dict(decoded)
            assert agentmsg.is_valid(encoded, kind)
            assert DECODERS[kind](encoded) == decoded
        return
    with pytest.raises(agentmsg.ValidationError) as info:
        agentmsg.validate(instance, kind)
    problems = info.value.problems
    assert any(p.pointer == case["pointer"] and p.rule == case["rule"] for p in problems), (
        f"no problem at {case['pointer']!r} breaking {case['rule']!r}; got: {[str(p) for p in problems]}"
    )
    if kind in DECODERS:
        with pytest.raises(agentmsg.ValidationError):
            DECODERS[kind](instance)
