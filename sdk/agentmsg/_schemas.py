"""Schema store and validation: the canonical JSON Schemas shipped with the generated models, compiled
with jsonschema-rs, with errors mapped to :class:`~agentmsg.errors.Problem` (JSON pointer + rule)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from ._limits import limits
from .errors import Problem, SizeLimitError, ValidationError, pointer_of

BASE_URI = "https://agentmsg.dev/schemas/v1/"

#: ``kind`` name accepted by :func:`validate` and the CLI -> schema file.
KINDS: dict[str, str] = {
    "msg": "msg.schema.json",
    "content-block": "content-block.schema.json",
    "source": "source.schema.json",
    "chat-usage": "chat-usage.schema.json",
    "event": "agent-event.schema.json",
}


@cache
def schema_documents() -> dict[str, dict[str, Any]]:
    """Every schema document by file name (``msg.schema.json`` -> document)."""
    folder = resources.files("agentmsg_models") / "schemas"
    docs: dict[str, dict[str, Any]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".schema.json"):
            docs[entry.name] = json.loads(entry.read_text(encoding="utf-8"))
    for name in [k for k in KINDS.values() if k not in docs]:
        KINDS.pop(next(k for k, v in KINDS.items() if v == name))
    for name in docs:
        KINDS.setdefault(name.removesuffix(".schema.json"), name)
    return docs


@cache
def _by_id() -> dict[str, dict[str, Any]]:
    return {doc["$id"]: doc for doc in schema_documents().values()}


@cache
def _registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry(list(_by_id().items()))


@cache
def _validator(ref: str) -> Any:
    return jsonschema_rs.validator_for({"$ref": ref}, registry=_registry(), validate_formats=True)


@cache
def array_validator_for_kind(kind: str) -> Any:
    """A compiled validator for a JSON array whose items are of ``kind`` (e.g. a conversation)."""
    return jsonschema_rs.validator_for(
        {"type": "array", "items": {"$ref": schema_uri(kind)}}, registry=_registry(), validate_formats=True
    )


def validator_for_kind(kind: str) -> Any:
    """The compiled jsonschema-rs validator of a kind (``is_valid``/``iter_errors``)."""
    return _validator(schema_uri(kind))


def schema_uri(kind: str) -> str:
    schema_documents()
    try:
        return BASE_URI + KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}") from None


def _resolve(uri: str) -> Any:
    """The schema node at an absolute URI with a JSON-pointer fragment, or None."""
    doc_uri, _, fragment = uri.partition("#")
    node: Any = _by_id().get(doc_uri)
    for part in [p for p in fragment.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def _annotations_for(location: str, keyword: str) -> tuple[str, str | None]:
    """``(rule, message)`` for a failing keyword: the nearest schema node at or above it that carries an
    ``x-rule`` (a short stable name) or an ``x-message`` (the sentence errors show) decides; without one
    the rule is the keyword itself and the validator's message is used."""
    doc_uri, _, fragment = location.partition("#")
    parts = [p for p in fragment.split("/") if p]
    while parts:
        node = _resolve(doc_uri + "#/" + "/".join(parts))
        if isinstance(node, dict) and ("x-rule" in node or "x-message" in node):
            message = node.get("x-message")
            return str(node.get("x-rule", keyword)), str(message) if message is not None else None
        parts.pop()
    return keyword, None


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _discriminated_branch(one_of: Any, instance: Any, base: str) -> str | None:
    """For a ``oneOf`` of ``$ref``s whose targets fix ``type`` with ``const``, the absolute ref of the
    branch matching the instance's ``type``."""
    if not isinstance(one_of, list) or not isinstance(instance, dict):
        return None
    for branch in one_of:
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if not isinstance(ref, str):
            continue
        absolute = (base + ref) if ref.startswith("#") else BASE_URI + ref
        target = _resolve(absolute)
        if isinstance(target, dict) and target.get("properties", {}).get("type", {}).get("const") == instance.get(
            "type"
        ):
            return absolute
    return None


def leaf_errors(
    validator: Any, instance: Any, prefix: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Yield ``(instance path, jsonschema_rs error)`` for every problem, descending into the branch
    that a discriminated union's ``type`` selects instead of reporting the bare ``oneOf`` failure."""
    for err in validator.iter_errors(instance):
        path = prefix + tuple(err.instance_path)
        location = str(err.absolute_keyword_location or "")
        keyword = err.schema_path[-1] if len(err.schema_path) else None
        if keyword in ("oneOf", "anyOf"):
            base = location.partition("#")[0]
            branches = _resolve(location)
            branch = _discriminated_branch(branches, err.instance, base) or _non_null_branch(
                branches, err.instance, base
            )
            if branch is not None:
                yield from leaf_errors(_validator(branch), err.instance, path)
                continue
            if isinstance(err.instance, dict) and "type" in err.instance and _is_discriminated(branches, base):
                continue  # the unknown `type` is reported by the enum beside the union
        yield path, err


def _is_discriminated(branches: Any, base: str) -> bool:
    """True for a union whose branches are all ``$ref``s to objects fixing ``type`` with ``const``."""
    if not isinstance(branches, list) or not branches:
        return False
    for branch in branches:
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if not isinstance(ref, str):
            return False
        target = _resolve((base + ref) if ref.startswith("#") else BASE_URI + ref)
        if not (isinstance(target, dict) and "const" in target.get("properties", {}).get("type", {})):
            return False
    return True


def _non_null_branch(branches: Any, instance: Any, base: str) -> str | None:
    """For a nullable ``anyOf [{$ref}, {type: null}]`` and a non-null instance, the ref branch."""
    if instance is None or not isinstance(branches, list):
        return None
    rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
    if len(rest) == 1 and len(branches) == 2 and isinstance(rest[0], dict) and isinstance(rest[0].get("$ref"), str):
        ref = str(rest[0]["$ref"])
        return (base + ref) if ref.startswith("#") else BASE_URI + ref
    return None


def _problems(validator: Any, instance: Any) -> list[Problem]:
    out: list[Problem] = []
    for path, err in leaf_errors(validator, instance):
        location = str(err.absolute_keyword_location or "")
        keyword = str(err.schema_path[-1]) if len(err.schema_path) else "schema"
        rule, sentence = _annotations_for(location, keyword)
        message = str(err.message) if sentence is None else f"{sentence}, got {_short_repr(err.instance)}"
        out.append(Problem(pointer_of(path), rule, message, location or None))
    # Deterministic order, no duplicates (role rules and unions may report the same spot twice).
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for p in sorted(out, key=lambda p: (p.pointer, p.rule, p.message)):
        if (p.pointer, p.rule, p.message) not in seen:
            seen.add((p.pointer, p.rule, p.message))
            unique.append(p)
    return unique


def check_depth(instance: Any, kind: str | None = None) -> None:
    """Check that a parsed value is JSON: dicts with string keys, lists, strings, finite numbers,
    booleans and null, nested at most ``limits['max_depth']`` deep. Raises :class:`ValidationError`
    (:class:`SizeLimitError` for depth). Iterative, so deep input cannot exhaust the Python stack."""
    max_depth = limits["max_depth"]
    stack: list[tuple[Any, int]] = [(instance, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        kind_of = type(node)
        if kind_of is dict:
            if depth >= max_depth:
                raise SizeLimitError([Problem("", "max-depth", f"nesting deeper than {max_depth} levels")], kind)
            for key, child in node.items():
                if type(key) is not str:
                    raise ValidationError([Problem("", "json-value", f"object key {key!r} is not a string")], kind)
                if type(child) in _CONTAINERS or type(child) not in _SCALARS:
                    push((child, depth + 1))
        elif kind_of is list:
            if depth >= max_depth:
                raise SizeLimitError([Problem("", "max-depth", f"nesting deeper than {max_depth} levels")], kind)
            for child in node:
                if type(child) in _CONTAINERS or type(child) not in _SCALARS:
                    push((child, depth + 1))
        elif kind_of is float:
            if node != node or node in (_INF, -_INF):
                raise ValidationError([Problem("", "json-value", f"{node!r} is not a JSON number")], kind)
        elif kind_of not in _SCALARS and not isinstance(node, (str, int, float)):
            raise ValidationError([Problem("", "json-value", f"a {kind_of.__name__} is not a JSON value")], kind)


_INF = float("inf")
_CONTAINERS = frozenset({dict, list})
_SCALARS = frozenset({str, int, bool, type(None)})


def validate(instance: Any, kind: str = "msg") -> None:
    """Validate a parsed JSON value against the canonical schema of ``kind``.

    Raises :class:`ValidationError` listing every problem with its JSON pointer and rule.
    ``kind`` is one of ``msg``, ``content-block``, ``source``, ``chat-usage`` (and ``event`` once
    events are defined)."""
    validator = _validator(schema_uri(kind))
    # Check JSON-ness and depth first: the validator must never see input deep enough to exhaust a stack.
    check_depth(instance, kind)
    try:
        if validator.is_valid(instance):
            return
        problems = _problems(validator, instance)
    except (ValueError, TypeError, OverflowError) as exc:
        if "recursion" in str(exc).lower():
            raise SizeLimitError([Problem("", "max-depth", f"too deeply nested for validation: {exc}")], kind) from None
        problems = [Problem("", "json-value", f"not a JSON value: {exc}")]
    raise ValidationError(problems or [Problem("", "schema", "invalid")], kind)


def is_valid(instance: Any, kind: str = "msg") -> bool:
    try:
        validate(instance, kind)
    except ValidationError:
        return False
    return True
