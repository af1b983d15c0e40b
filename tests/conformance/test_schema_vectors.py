"""Every conformance vector through two independent validators that must agree:
python `jsonschema` (with format checking) and the SDK (jsonschema-rs validation + decoder), on the open
(canonical) schemas and on their closed variant (strict reading), with the unknown keys each case lists."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

import agentmsg
from tests.conftest import VECTORS, load_vectors

pytestmark = pytest.mark.oracle

FILES = sorted(p.name for p in VECTORS.glob("*.json"))
#: the readers of a kind of instance by name (with a list for the notes of legacy keys, or none: warnings)
DECODERS: dict[str, Callable[..., agentmsg.Msg | agentmsg.ContentBlock]] = {
    "msg": lambda inst, notes=None: agentmsg.Msg.from_dict(inst, notes=notes),
    "content-block": lambda inst, notes=None: agentmsg.block_from_dict(inst, notes=notes),
}
STRICT_DECODERS: dict[str, Callable[[Any], agentmsg.Msg | agentmsg.ContentBlock]] = {
    "msg": lambda inst: agentmsg.Msg.from_dict(inst, strict=True),
    "content-block": lambda inst: agentmsg.block_from_dict(inst, strict=True),
}
# Events are checked for validity here; reducing them is tested with tests/conformance/reducer/.


def cases() -> list[Any]:
    out = []
    for name in FILES:
        doc = load_vectors(name)
        for case in doc["cases"]:
            out.append(pytest.param(doc["kind"], doc["schema"], case, id=f"{doc['kind']}:{case['id']}"))
    return out


def _closed_registry(schema_registry: Any) -> Any:
    from referencing import Registry, Resource

    docs = agentmsg.closed_schema_documents().values()
    return Registry().with_resources([(d["$id"], Resource.from_contents(d)) for d in docs])


def _drop(instance: Any, pointers: list[str]) -> Any:
    """``instance`` without the keys at ``pointers`` (a copy)."""
    out = copy.deepcopy(instance)
    for pointer in pointers:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        node = out
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[parts[-1]]
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
                assert "unknown_keys" not in c, c["id"]
            else:
                assert isinstance(c.get("unknown_keys", []), list), c["id"]
            # legacy keys: listed (sorted) with the current form readers read them as, written by hand
            assert ("legacy_keys" in c) == ("current" in c), c["id"]
            assert c.get("legacy_keys", []) == sorted(c.get("legacy_keys", [])), c["id"]


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
    # The closed variant (strict reading): valid exactly when valid and without unknown keys.
    unknown = case.get("unknown_keys", []) if case["valid"] else []
    closed = jsonschema.Draft202012Validator(
        {"$ref": schema_id},
        registry=_closed_registry(schema_registry),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    strict_valid = agentmsg.is_valid(instance, kind, strict=True)
    assert closed.is_valid(instance) == strict_valid
    assert strict_valid is (case["valid"] and not unknown)
    legacy = case.get("legacy_keys", [])
    if legacy:
        _check_legacy(kind, case)
    if case["valid"]:
        found = agentmsg.find_unknown_keys(instance, kind)
        assert [p.pointer for p in found] == unknown
        assert all(p.rule == ("legacy-key" if p.pointer in legacy else "unknown-key") for p in found)
        if unknown:
            with pytest.raises(agentmsg.ValidationError) as info:
                agentmsg.validate(instance, kind, strict=True)
            parents = {p.rsplit("/", 1)[0] for p in unknown}
            assert {(p.pointer, p.rule) for p in info.value.problems} == {(q, "additionalProperties") for q in parents}
            assert agentmsg.is_valid(_drop(instance, unknown), kind, strict=True)
        if kind in DECODERS:
            decoded = DECODERS[kind](instance, [])
            # Decoding keeps everything: re-encoding validates and decodes to an equal object, with the same
            # unknown keys in the same places (a legacy key read in its current form is no longer one).
            encoded = decoded.to_dict() if isinstance(decoded, agentmsg.Msg) else agentmsg.block_to_dict(decoded)
            assert agentmsg.is_valid(encoded, kind)
            assert DECODERS[kind](encoded, []) == decoded
            kept = [p.pointer for p in agentmsg.find_unknown_keys(case["current"], kind)] if legacy else unknown
            assert [p.pointer for p in agentmsg.find_unknown_keys(decoded)] == kept
            if unknown:
                with pytest.raises(agentmsg.ValidationError):
                    STRICT_DECODERS[kind](instance)
        return
    with pytest.raises(agentmsg.ValidationError) as info:
        agentmsg.validate(instance, kind)
    problems = info.value.problems
    assert any(p.pointer == case["pointer"] and p.rule == case["rule"] for p in problems), (
        f"no problem at {case['pointer']!r} breaking {case['rule']!r}; got: {[str(p) for p in problems]}"
    )
    if kind in DECODERS and not legacy:
        with pytest.raises(agentmsg.ValidationError):
            DECODERS[kind](instance)


def _check_legacy(kind: str, case: dict[str, Any]) -> None:
    """A case with legacy keys (AgentScope's seed documents): each is said (rule legacy-key, its pointer), and the
    value read is the case's current form, written by hand, which is valid (whatever the schema says of the legacy
    form); readers decode it as that form, strict readers refuse it (rule legacy-key)."""
    instance, current = case["instance"], case["current"]
    read, notes = agentmsg.read_legacy_keys(instance, kind)
    assert sorted(p.pointer for p in notes) == case["legacy_keys"]
    assert {p.rule for p in notes} == {"legacy-key"}
    assert read == current
    assert agentmsg.is_valid(current, kind)
    assert agentmsg.read_legacy_keys(current, kind)[0] == current  # (a key kept beside its current one is said again)
    assert instance == case["instance"]  # (not changed)
    if kind not in DECODERS:
        return
    said: list[agentmsg.Problem] = []
    assert DECODERS[kind](instance, said) == DECODERS[kind](current, [])
    assert said == notes
    with pytest.warns(agentmsg.LegacyKeyWarning) as warned:
        DECODERS[kind](instance)
    assert [w.message.problems for w in warned] == [tuple(notes)]  # type: ignore[union-attr]
    with pytest.raises(agentmsg.ValidationError) as info:
        STRICT_DECODERS[kind](instance)
    assert {(p.pointer, p.rule) for p in info.value.problems} == {(p.pointer, "legacy-key") for p in notes}
