"""Schema store and validation: the canonical JSON Schemas shipped with the generated models, compiled
with jsonschema-rs, with errors mapped to :class:`~agentmsg.errors.Problem` (JSON pointer + rule).

Two variants of every schema, both derived here from the canonical documents:

* **open** (the canonical schemas, the default): an object accepts keys the schema does not declare (a newer
  producer's), which readers keep and write back;
* **closed** (``strict=True``): every ``additionalProperties: true`` of an object that is not a free-form map
  (``x-agentmsg-map``) read as ``false``, so an unknown key is an ``additionalProperties`` error, as in
  schema version 1.0.

Error reporting is linear in the input: the instance is validated level by level, each level a shallow
copy in which the nested content blocks (the only recursive schema) are cut off and validated as levels of
their own, so no part of the input is converted or validated more than a constant number of times.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import orjson

from agentmsg._codec.jsontext import _STRICT, as_given, check_json_value
from agentmsg._codec.limits import MAX_WRITABLE_DEPTH, limits
from agentmsg.errors import (
    MAX_PROBLEMS,
    Problem,
    SizeLimitError,
    ValidationError,
    pointer_of,
    short_repr,
    unknown_choice,
)

#: source.schema.json's pattern of base64 data (``Base64Source.data``), for readers that check it where their input
#: holds it, so that a problem points there
BASE64_DATA: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}")

if TYPE_CHECKING:
    import jsonschema_rs

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
    """Every canonical schema document by file name (``msg.schema.json`` -> document)."""
    folder = resources.files("agentmsg_models") / "schemas"
    docs: dict[str, dict[str, Any]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".schema.json"):
            docs[entry.name] = json.loads(entry.read_text(encoding="utf-8"))
    for name in [k for k in KINDS.values() if k not in docs]:
        KINDS.pop(next(k for k, v in KINDS.items() if v == name))
    for name in docs:  # one kind per schema: a document already named (agent-event: "event") gets no second one
        if name not in KINDS.values():
            KINDS.setdefault(name.removesuffix(".schema.json"), name)
    return docs


def schema_version() -> str:
    """The version of the shipped schemas (``schemas/VERSION.json``)."""
    return _shipped_version()


@cache
def _shipped_version() -> str:
    """:func:`schema_version`, read once, as the documents are (:func:`schema_documents`): each unknown key's
    message names it (the file was read again for each instance with a problem or an unknown key: 30 us each)."""
    text = (resources.files("agentmsg_models") / "schemas" / "VERSION.json").read_text(encoding="utf-8")
    return str(json.loads(text)["version"])


@cache
def _by_id() -> dict[str, dict[str, Any]]:
    return {doc["$id"]: doc for doc in schema_documents().values()}


# ---- the closed variant ----------------------------------------------------------------------------------


def is_open_record(node: Any) -> bool:
    """True for an object schema that accepts unknown keys and is not a free-form map: the objects whose
    unknown keys readers keep and report, and that the closed variant closes."""
    return isinstance(node, dict) and node.get("additionalProperties") is True and not node.get("x-agentmsg-map")


def closed_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The closed variant of a canonical schema document: every open record gets
    ``additionalProperties: false``; nothing else changes (same ``$id``, same pointers)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if is_open_record(node):
            out["additionalProperties"] = False
        return out

    return walk(doc)  # type: ignore[no-any-return]


def closed_schema_documents() -> dict[str, dict[str, Any]]:
    """Every schema document in its closed variant (what ``strict=True`` validates against), by file name."""
    return {name: closed_document(doc) for name, doc in schema_documents().items()}


# ---- references, recursion and cut points ----------------------------------------------------------------


def _absolute(ref: str, doc_uri: str) -> str:
    if ref.startswith("#"):
        return doc_uri + ref
    if "://" in ref:
        return ref
    return BASE_URI + ref


def _resolve(uri: str) -> Any:
    """The canonical schema node at an absolute URI with a JSON-pointer fragment, or None."""
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


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _root_of(uri: str) -> str | None:
    """The document URI when ``uri`` points at a document's root, else None."""
    doc_uri, _, fragment = uri.partition("#")
    return doc_uri if fragment.strip("/") == "" else None


@cache
def _recursive_roots() -> frozenset[str]:
    """Documents whose root can be reached from inside themselves (content blocks hold blocks): the cut points
    of level-by-level error reporting are the references to these roots."""
    edges: dict[str, set[str]] = {}
    for doc_uri, doc in _by_id().items():
        edges[doc_uri] = {r for r in (_root_of(_absolute(ref, doc_uri)) for ref in _refs(doc)) if r is not None}
    recursive = set()
    for start in edges:
        seen, todo = set(), list(edges[start])
        while todo:
            node = todo.pop()
            if node == start:
                recursive.add(start)
                break
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
    return frozenset(recursive)


def _cut_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every reference to a recursive root replaced by an empty schema (its siblings, which are
    annotations, kept): validation of one level stops there."""
    doc_uri = doc["$id"]
    roots = _recursive_roots()

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and _root_of(_absolute(ref, doc_uri)) in roots:
            return {k: v for k, v in node.items() if k != "$ref"}
        return {k: walk(v) for k, v in node.items()}

    return walk(doc)  # type: ignore[no-any-return]


@cache
def _variant(closed: bool, cut: bool) -> tuple[tuple[str, dict[str, Any]], ...]:
    docs = []
    for uri, doc in _by_id().items():
        doc = closed_document(doc) if closed else copy.deepcopy(doc)
        docs.append((uri, _cut_document(doc) if cut else doc))
    return tuple(docs)


@cache
def _registry(closed: bool = False, cut: bool = False) -> jsonschema_rs.Registry:
    import jsonschema_rs  # (on the first validator built, not at import: jsonschema_rs loads email, tempfile...)

    return jsonschema_rs.Registry(list(_variant(closed, cut)))


@cache
def _validator(ref: str, closed: bool = False, cut: bool = False) -> Any:
    import jsonschema_rs  # (see _registry)

    return jsonschema_rs.validator_for({"$ref": ref}, registry=_registry(closed, cut), validate_formats=True)


@cache
def _event_branches() -> dict[str, str]:
    """Per event type, the URI of the event schema's branch for that type. The event schema is an object whose
    ``type`` is one of an enum, and any of a list of branches, each fixing ``type`` to its own constant; so for an
    event whose ``type`` is a string naming a branch, that branch accepts it exactly when the whole event schema
    does (every other branch needs another ``type``). Empty when the event schema has another shape (then one
    branch says nothing)."""
    doc = schema_documents().get(KINDS.get("event", ""))
    if doc is None:
        return {}
    plain = {"$schema", "$id", "title", "description", "type", "required", "properties", "anyOf", "$defs"}
    prop = doc.get("properties", {}).get("type")
    if (
        not set(doc) <= plain
        or doc.get("type") != "object"
        or doc.get("required") != ["type"]
        or set(doc.get("properties", {})) != {"type"}
        or not isinstance(prop, dict)
        or not set(prop) <= {"description", "enum"}
        or not isinstance(prop.get("enum"), list)
    ):
        return {}
    defs = doc.get("$defs", {})
    out: dict[str, str] = {}
    for branch in doc.get("anyOf", []):
        ref = branch.get("$ref") if isinstance(branch, dict) and set(branch) == {"$ref"} else None
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return {}
        node = defs.get(ref.removeprefix("#/$defs/"))
        props = node.get("properties") if isinstance(node, dict) else None
        tag = props.get("type", {}).get("const") if isinstance(props, dict) else None
        if not isinstance(tag, str) or tag not in prop["enum"] or tag in out:
            return {}
        out[tag] = schema_uri("event") + ref
    return out


@cache
def event_type_validators() -> dict[str, Any]:
    """Per event type, the ``is_valid`` of the (open) event schema's branch for that type: for an event of that
    type, the same answer as the whole event schema's, without trying the other branches first (see
    :func:`_event_branches`; empty when the schema's shape does not allow it)."""
    return {tag: _validator(ref).is_valid for tag, ref in _event_branches().items()}


@cache
def event_type_array_validators() -> dict[str, Any]:
    """Per event type, the ``is_valid`` of an array each of whose items that type's branch accepts (as
    :func:`event_type_validators`): one call checks many events, much cheaper per event than a call each."""
    import jsonschema_rs  # (see _registry)

    return {
        tag: jsonschema_rs.validator_for(
            {"type": "array", "items": {"$ref": ref}}, registry=_registry(), validate_formats=True
        ).is_valid
        for tag, ref in _event_branches().items()
    }


#: Event types tried first when an event is checked against the union of the branches (the bulk of streams).
_HOT_EVENT_TYPES = ("TEXT_BLOCK_DELTA", "TOOL_CALL_DELTA", "THINKING_BLOCK_DELTA", "DATA_BLOCK_DELTA")


@cache
def event_array_validator() -> Any:
    """The ``is_valid`` of an array of events each valid against the (open) event schema, or None (see
    :func:`_event_branches`): the event schema's ``anyOf`` of branches in another order, the usual deltas first
    (``anyOf`` accepts what any branch does, in whatever order they are tried), and its own keywords unless every
    branch implies them; so one call checks a run of events of any types, most of them at their first branch."""
    import jsonschema_rs  # (see _registry)

    branches = _event_branches()
    if not branches:
        return None
    doc = schema_documents()[KINDS["event"]]
    order = [t for t in _HOT_EVENT_TYPES if t in branches] + [t for t in branches if t not in _HOT_EVENT_TYPES]
    items: dict[str, Any] = {"anyOf": [{"$ref": branches[t]} for t in order]}
    defs = doc["$defs"]
    if not all(
        defs[ref.rsplit("/", 1)[1]].get("type") == "object"
        and "type" in defs[ref.rsplit("/", 1)[1]].get("required", ())
        for ref in branches.values()
    ):
        # (when every branch asks for an object with a type, its constant among the enum, they say it all)
        items.update(
            type=doc["type"], required=doc["required"], properties={"type": {"enum": doc["properties"]["type"]["enum"]}}
        )
    return jsonschema_rs.validator_for(
        {"type": "array", "items": items}, registry=_registry(), validate_formats=True
    ).is_valid


@cache
def array_validator_for_kind(kind: str, strict: bool = False) -> Any:
    """A compiled validator for a JSON array whose items are of ``kind`` (e.g. a conversation)."""
    import jsonschema_rs  # (see _registry)

    return jsonschema_rs.validator_for(
        {"type": "array", "items": {"$ref": schema_uri(kind)}}, registry=_registry(strict), validate_formats=True
    )


def validator_for_kind(kind: str, strict: bool = False) -> Any:
    """The compiled jsonschema-rs validator of a kind (``is_valid``/``iter_errors``): the open variant, or
    the closed one when ``strict``."""
    return _validator(schema_uri(kind), strict)


def schema_uri(kind: str) -> str:
    """The URI of the schema of ``kind``; an unknown kind: :func:`~agentmsg.errors.unknown_choice`."""
    docs = schema_documents()
    if not isinstance(kind, str):
        raise unknown_choice(kind, "kind", sorted(KINDS), "kind")
    file = KINDS.get(kind)
    if file is None and f"{kind}.schema.json" in docs:
        file = f"{kind}.schema.json"  # a schema's file name works too (agent-event for event), unlisted
    if file is None:
        raise unknown_choice(kind, "kind", sorted(KINDS), "kind")
    return BASE_URI + file


# ---- cut plans: where, in an instance, the nested levels start ----------------------------------------------

# A plan is a small tree of tuples, derived from the schema: (_CUT, target) | (_PROPS, {name: plan}) |
# (_ITEMS, plan) | (_UNION, {type tag: plan}) | (_NULLABLE, plan) | (_ALL, [plans]).
_CUT, _PROPS, _ITEMS, _UNION, _NULLABLE, _ALL = range(6)
_PLANS: dict[str, Any] = {}
_BUSY = object()


def _plan(uri: str) -> Any:
    """The plan of the schema at ``uri`` (None when no cut point is reachable from it)."""
    if uri in _PLANS:
        plan = _PLANS[uri]
        if plan is _BUSY:
            raise RuntimeError(f"schema cycle through {uri} without a recursive root: cannot cut it")
        return plan
    _PLANS[uri] = _BUSY
    plan = _plan_node(_resolve(uri), uri.partition("#")[0])
    _PLANS[uri] = plan
    return plan


def _union_tags(branches: Any, doc_uri: str) -> dict[str, str] | None:
    """For a discriminated union (``$ref`` branches fixing ``type`` with ``const``): tag -> branch URI."""
    if not isinstance(branches, list) or not branches:
        return None
    tags = {}
    for branch in branches:
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if not isinstance(ref, str):
            return None
        target = _absolute(ref, doc_uri)
        node = _resolve(target)
        const = node.get("properties", {}).get("type", {}).get("const") if isinstance(node, dict) else None
        if not isinstance(const, str):
            return None
        tags[const] = target
    return tags


def _plan_node(node: Any, doc_uri: str) -> Any:
    if not isinstance(node, dict):
        return None
    parts: list[Any] = []
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _absolute(ref, doc_uri)
        if _root_of(target) in _recursive_roots():
            return (_CUT, target)
        sub = _plan(target)
        if sub is not None:
            parts.append(sub)
    props = node.get("properties")
    if isinstance(props, dict):
        subs = {name: p for name, s in props.items() if (p := _plan_node(s, doc_uri)) is not None}
        if subs:
            parts.append((_PROPS, subs))
    items = node.get("items")
    if isinstance(items, dict):
        sub = _plan_node(items, doc_uri)
        if sub is not None:
            parts.append((_ITEMS, sub))
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if not isinstance(branches, list):
            continue
        tags = _union_tags(branches, doc_uri)
        if tags is not None:
            subs = {tag: p for tag, target in tags.items() if (p := _plan(target)) is not None}
            if subs:
                parts.append((_UNION, subs))
            continue
        rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        plans = [_plan_node(b, doc_uri) for b in rest]
        if len(rest) == 1 and len(branches) == 2:
            if plans[0] is not None:
                parts.append((_NULLABLE, plans[0]))
        elif any(p is not None for p in plans):
            raise RuntimeError(f"a nested content block under a plain {key} in {doc_uri}: cannot cut it")
    for key in ("allOf", "not", "if", "then", "else", "additionalProperties", "patternProperties", "prefixItems"):
        value = node.get(key)
        subs_any = value.values() if key == "patternProperties" and isinstance(value, dict) else value
        for sub in subs_any if isinstance(subs_any, list) else [subs_any]:
            if _plan_node(sub, doc_uri) is not None:
                raise RuntimeError(f"a nested content block under {key} in {doc_uri}: cannot cut it")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else (_ALL, parts)


def _placeholder(value: Any) -> Any:
    """What stays of a cut value in its level: an object keeps only its ``type`` (role rules read it)."""
    if type(value) is dict:
        return {"type": value["type"]} if "type" in value else {}
    return value


def _shallow(plan: Any, value: Any, path: tuple[str | int, ...], cuts: list[Any]) -> Any:
    """``value`` with the cut points of ``plan`` replaced by placeholders; each cut value goes to ``cuts``
    as (relative path, value, schema URI)."""
    kind = plan[0]
    if kind == _CUT:
        cuts.append((path, value, plan[1]))
        return _placeholder(value)
    if kind == _PROPS:
        if type(value) is not dict:
            return value
        out = dict(value)
        for name, sub in plan[1].items():
            if name in out:
                out[name] = _shallow(sub, out[name], (*path, name), cuts)
        return out
    if kind == _ITEMS:
        if type(value) is not list:
            return value
        return [_shallow(plan[1], item, (*path, i), cuts) for i, item in enumerate(value)]
    if kind == _UNION:
        if type(value) is not dict:
            return value
        tag = value.get("type")
        sub = plan[1].get(tag) if type(tag) is str else None
        return value if sub is None else _shallow(sub, value, path, cuts)
    if kind == _NULLABLE:
        return value if value is None else _shallow(plan[1], value, path, cuts)
    for sub in plan[1]:  # _ALL
        value = _shallow(sub, value, path, cuts)
    return value


# ---- problems --------------------------------------------------------------------------------------------


@cache
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


@cache
def _union_at(location: str) -> tuple[dict[str, str] | None, str | None]:
    """The union (``anyOf``/``oneOf``) at the absolute keyword ``location``, read once per schema location:
    its tags when it is discriminated (:func:`_union_tags`), and its ``$ref`` branch when it is a nullable
    ``anyOf [{$ref}, {type: null}]`` (else None)."""
    branches = _resolve(location)
    base = location.partition("#")[0]
    nullable = None
    if isinstance(branches, list):
        rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(rest) == 1 and len(branches) == 2 and isinstance(rest[0], dict) and isinstance(rest[0].get("$ref"), str):
            nullable = _absolute(str(rest[0]["$ref"]), base)
    return _union_tags(branches, base), nullable


def _union_branch(location: str, instance: Any) -> str | None:
    """The branch of the union at ``location`` that decides for ``instance``: a discriminated union's branch
    for its ``type``, or a nullable union's ``$ref`` branch for a value that is not null."""
    tags, nullable = _union_at(location)
    if tags is not None:
        tag = instance.get("type") if isinstance(instance, dict) else None
        return tags.get(tag) if isinstance(tag, str) else None
    return nullable if instance is not None else None


@cache
def _dispatch(uri: str) -> dict[str, str] | None:
    """When the schema at ``uri`` is a discriminated union and nothing else (an object whose ``type`` is required
    and one of an enum, and any of ``$ref`` branches each fixing ``type`` to its own constant, as the event
    schema is): per tag, its branch, which accepts a value of that ``type`` exactly when the whole schema does
    (so the value's problems are the branch's, found without walking the others). Else None."""
    node = _resolve(uri)
    if not isinstance(node, dict):
        return None
    plain = {"$schema", "$id", "title", "description", "type", "required", "properties", "anyOf", "$defs"}
    prop = node.get("properties", {}).get("type") if isinstance(node.get("properties"), dict) else None
    if (
        not set(node) <= plain
        or node.get("type") != "object"
        or node.get("required") != ["type"]
        or set(node.get("properties", {})) != {"type"}
        or not isinstance(prop, dict)
        or not set(prop) <= {"description", "enum"}
        or not isinstance(prop.get("enum"), list)
    ):
        return None
    tags = _union_tags(node.get("anyOf"), uri.partition("#")[0])
    if tags is None or not set(tags) <= set(prop["enum"]):
        return None
    return tags


@cache
def _refused_validator(uri: str) -> Any:
    """For a value every branch refuses (not an object, or an object whose ``type`` is no tag of the union), a
    validator of the discriminated union at document root ``uri`` (:func:`_dispatch`) whose ``anyOf`` is one
    ``false`` branch, or None when ``uri`` is no such union or a branch is no object schema requiring ``type``.
    It says what the union's own validator says of such a value, at the same keyword locations (the ``type``,
    ``required``, ``enum`` and ``anyOf`` problems of the union's root: every branch requires ``type`` and fixes
    it, so the ``anyOf`` fails either way). The union's validator also gives a refusal per branch (nine for a
    content block, 31 for an event) that nothing reads, each with a copy of the value and a message quoting it
    whole: a 64 MiB string took 3.6 s, against 0.6 s for the one problem of ``Msg.from_json``; an event line of
    an unknown ``type`` with a 16 MiB delta, 0.9 GB and 4.9 s (:func:`leaf_errors` hands over its ``type``
    alone)."""
    node = _resolve(uri)
    tags = _dispatch(uri)
    if tags is None or not isinstance(node, dict) or node.get("$id") != uri:
        return None
    if not all(
        isinstance(b := _resolve(target), dict) and b.get("type") == "object" and "type" in b.get("required", ())
        for target in tags.values()
    ):
        return None
    import jsonschema_rs  # (see _registry)

    bare = {key: value for key, value in node.items() if key != "$defs"} | {"anyOf": [False]}
    return jsonschema_rs.validator_for(bare, validate_formats=True)


def _at(value: Any, path: Any) -> Any:
    for part in path:
        value = value[part]
    return value


def _level_errors(
    validator: Any, instance: Any, prefix: tuple[str | int, ...], closed: bool
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """``(instance path, error)`` for the problems of one level, descending into the branch a discriminated
    union's ``type`` selects (and a nullable union's non-null branch) instead of reporting the union."""
    for err in validator.iter_errors(instance):
        rel = tuple(err.instance_path)
        path = prefix + rel
        keyword = err.schema_path[-1] if len(err.schema_path) else None
        if keyword in ("oneOf", "anyOf"):
            location = str(err.absolute_keyword_location or "")
            sub = _at(instance, rel)
            branch = _union_branch(location, sub)
            if branch is not None:
                yield from _level_errors(_validator(branch, closed, True), sub, path, closed)
                continue
            if isinstance(sub, dict) and "type" in sub and _union_at(location)[0] is not None:
                continue  # the unknown `type` is reported by the enum beside the union
        yield path, err


def leaf_errors(
    instance: Any, uri: str, closed: bool = False, once: bool = False
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """``(instance path, jsonschema_rs error)`` for every problem of ``instance`` against the schema at
    ``uri``, level by level (linear in the input). The instance must be JSON (:func:`check_json_value`). ``once``: a
    nested level met again (the same dict at two places, for the same schema: a value sharing its members, such as
    a tool result's dict holding the same block's twice, 40 levels down) is walked once, where it is met first (its
    problems are the same wherever it is): a value of 2**40 paths costs its distinct levels."""
    work: list[tuple[str, Any, tuple[str | int, ...]]] = [(uri, instance, ())]
    walked: set[tuple[int, str]] = set()  # (the instance holds every value whose id is in it)
    while work:
        ref, value, prefix = work.pop()
        if once and prefix and type(value) in (dict, list):
            key = (id(value), ref)
            if key in walked:
                continue
            walked.add(key)
        tags = _dispatch(ref)
        if tags is not None:
            tag = value.get("type") if type(value) is dict else None
            if type(tag) is str and tag in tags:
                ref = tags[tag]  # its branch's problems are the union's: the others are not walked
            elif (bare := _refused_validator(ref)) is not None:  # every branch refuses it: no branch to walk
                if type(value) is dict and "type" in value:
                    # The root reads the ``type`` alone (its enum; the anyOf's refusal is not reported beside
                    # it: _level_errors), so the rest of the value, however large, is not handed over.
                    value = {"type": value["type"]}
                yield from _level_errors(bare, value, prefix, closed)
                continue
        plan = _plan(ref)
        if plan is not None:
            cuts: list[Any] = []
            value = _shallow(plan, value, (), cuts)
            work.extend((target, original, prefix + rel) for rel, original, target in reversed(cuts))
        validator = _validator(ref, closed, True)
        where = _ITEMWISE.get(ref)
        items = _member(value, where) if where is not None else None
        if type(items) is list and len(items) > _SLICE:
            assert where is not None  # (for the type checker)
            yield from _sliced_errors(validator, value, where, items, prefix, closed)
        else:
            yield from _level_errors(validator, value, prefix, closed)


#: A level's array whose items its schema checks one by one (no ``minItems``, ``contains``, ``uniqueItems``...: a
#: test reads the schemas), by the level's schema and the array's keys in it: a long one is validated a slice of
#: :data:`_SLICE` items at a time (:func:`_sliced_errors`). A message's blocks, whose types the role rules check at
#: the message's level (and at an AGENT_RESULT event's, which holds the message in its level).
_ITEMWISE: Final = {
    schema_uri("msg"): ("content",),
    schema_uri("event") + "#/$defs/AgentResultEvent": ("result", "content"),
}
_SLICE: Final = 256


def _member(value: Any, keys: tuple[str, ...]) -> Any:
    """``value``'s member at ``keys`` (:func:`_at`), or None where there is none (a key missing, no object)."""
    try:
        return _at(value, keys)
    except (KeyError, TypeError, IndexError):
        return None


def _with_member(value: dict[str, Any], keys: tuple[str, ...], member: Any) -> dict[str, Any]:
    """A copy of ``value`` with ``member`` at ``keys`` (each object on the way copied, nothing else)."""
    out = dict(value)
    out[keys[0]] = member if len(keys) == 1 else _with_member(value[keys[0]], keys[1:], member)
    return out


def _sliced_errors(
    validator: Any,
    value: dict[str, Any],
    keys: tuple[str, ...],
    items: list[Any],
    prefix: tuple[str | int, ...],
    closed: bool,
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """The errors of a level whose array at ``keys`` is long and checked item by item, as :func:`_level_errors` gives
    them for the whole value, the array handed to the validator a slice at a time: jsonschema_rs makes every error
    of a call at once (some 3 kB each), so 100,000 blocks a USER message may not hold took 456 MB; a slice's take
    at most its items' errors. The level's other errors come with the first slice; the later ones give their
    items' errors only, each at its item's place in the whole array."""
    at = len(prefix) + len(keys)  # (where an item's index is in an error's path)
    for start in range(0, len(items), _SLICE):
        part = _with_member(value, keys, items[start : start + _SLICE])
        for path, err in _level_errors(validator, part, prefix, closed):
            index = path[at] if len(path) > at and path[len(prefix) : at] == keys else None
            if type(index) is int:
                yield (*path[:at], index + start, *path[at + 1 :]), err
            elif not start:
                yield path, err


def _problem(path: tuple[str | int, ...], err: Any) -> Problem:
    location = str(err.absolute_keyword_location or "")
    keyword = str(err.schema_path[-1]) if len(err.schema_path) else "schema"
    rule, sentence = _annotations_for(location, keyword)
    message = str(err.message) if sentence is None else f"{sentence}, got {short_repr(err.instance)}"
    return Problem(pointer_of(path), rule, message, location or None)


def _problems(instance: Any, uri: str, closed: bool, once: bool = False) -> list[Problem]:
    """Every problem of ``instance``, in pointer order, up to :data:`~agentmsg.errors.MAX_PROBLEMS` distinct ones;
    those beyond are counted (by their pointer, rule and message only) and said in one last problem (rule
    ``max-problems``), as the reducer and the stream parsers say theirs."""
    # No duplicates (role rules and unions may report the same spot twice): counted once, kept or not
    unique: dict[tuple[str, str, str], Problem] = {}
    beyond: set[int] = set()  # (the hashes of those beyond the cap: their texts are not held)
    for path, err in leaf_errors(instance, uri, closed, once):
        p = _problem(path, err)
        key = (p.pointer, p.rule, p.message)
        if key in unique:
            continue
        if len(unique) < MAX_PROBLEMS:
            unique[key] = p
        else:
            beyond.add(hash(key))
    out = [unique[key] for key in sorted(unique)]  # (a deterministic order)
    more = len(beyond)
    if more:
        out.append(Problem("", "max-problems", f"{more:,} more problems not listed (a reading lists {MAX_PROBLEMS:,})"))
    return out


def find_unknown_keys(instance: Any, kind: str = "msg", *, checked: bool = False) -> list[Problem]:
    """The keys of a parsed JSON value that its schema does not declare (written by a newer producer): one
    :class:`Problem` with rule ``unknown-key`` per key, its pointer the key's own. ``[]`` when there are
    none. Readers keep such keys and write them back; ``strict=True`` rejects them. Other problems of the
    value are not reported here (see :func:`validate`). ``checked``: the caller has made sure ``instance`` is
    JSON that can be written back (:func:`check_json_value`: ``loads`` read it)."""
    uri = schema_uri(kind)
    if not checked:
        check_json_value(instance, kind)
    try:
        if _validator(uri, True).is_valid(instance):
            return []
    except (ValueError, TypeError, OverflowError):
        return []
    version = _shipped_version()
    out = []
    for path, err in leaf_errors(instance, uri, closed=True):
        if type(err.kind).__name__ != "AdditionalProperties":
            continue
        location = str(err.absolute_keyword_location or "")
        owner = _resolve(location.rpartition("/")[0]) if location.endswith("/additionalProperties") else None
        title = owner.get("title", "this object") if isinstance(owner, dict) else "this object"
        for key in list(getattr(err.kind, "unexpected", []) or []):
            out.append(
                Problem(
                    pointer_of((*path, key)),
                    "unknown-key",
                    f"{key!r} is not a key of {title} in agentmsg's schemas {version}: kept and written back "
                    "(a newer producer's?); strict reading rejects it",
                    location or None,
                )
            )
    return sorted(out, key=lambda p: p.pointer)


def check_depth(instance: Any, kind: str | None = None) -> None:
    """Deprecated name of :func:`agentmsg._codec.jsontext.check_json_value` (kept for callers inside the package)."""
    check_json_value(instance, kind)


def has_unknown_keys(instance: Any, kind: str, strict: bool = False, *, checked: bool = False) -> bool:
    """Validate parsed JSON for a reader: False when it is valid and has no unknown keys, True when it is valid
    with unknown keys (to be kept); raises :class:`ValidationError` when it is invalid (``strict``: when it
    has unknown keys too). ``checked``: the caller has made sure ``instance`` is JSON that can be written back
    (:func:`check_json_value`, whose second pass over a long text held several copies of it)."""
    uri = schema_uri(kind)
    if not checked:
        check_json_value(instance, kind)
    try:
        if _validator(uri, True).is_valid(instance):
            return False
        if not strict and _validator(uri).is_valid(instance):
            return True
        problems = _problems(instance, uri, strict)
    except (ValueError, TypeError, OverflowError) as exc:
        problems = [Problem("", "json-value", f"not a JSON value: {exc}")]
    raise ValidationError(problems or [Problem("", "schema", "invalid")], kind)


def validate(instance: Any, kind: str = "msg", *, strict: bool = False) -> None:
    """Validate a parsed JSON value against the canonical schema of ``kind``.

    Raises :class:`ValidationError` listing every problem with its JSON pointer and rule (first the value
    must be JSON that can be written back: see :func:`agentmsg._codec.jsontext.check_json_value`). Keys a schema does
    not declare are accepted (they are kept and written back; :func:`find_unknown_keys` lists them) unless
    ``strict``, which rejects them (rule ``additionalProperties``). ``kind`` is one of ``msg``,
    ``content-block``, ``source``, ``chat-usage``, ``event``, ``generate-reason`` (another: a ValidationError at
    ``/kind``, rule ``enum``, listing them; a conversation is checked with :func:`agentmsg.check`). As the readers
    take it (``Msg.from_dict``, ``block_from_dict``, the reducer), an ``instance`` that is a mapping but no dict (a
    ``MappingProxyType``, an ``OrderedDict``) is read as the dict of its items; nested, one is no JSON value, refused
    as they refuse it (``json-value``, at its pointer)."""
    uri = schema_uri(kind)
    instance = as_given(instance)
    # JSON-ness, integer range and depth first: the validator must never see input it cannot handle.
    check_json_value(instance, kind)
    _validate(instance, uri, kind, strict)


def validate_checked(instance: Any, kind: str = "msg", *, strict: bool = False) -> None:
    """:func:`validate` for a value the caller has made sure is JSON that can be written back
    (:func:`check_json_value`: ``loads`` read it, as ``agentmsg.read_records`` does): the same verdict and
    problems, without checking the value a second time."""
    _validate(instance, schema_uri(kind), kind, strict)


def _validate(instance: Any, uri: str, kind: str, strict: bool) -> None:
    """:func:`validate` of a value that is JSON that can be written back, against the schema at ``uri``."""
    try:
        if _validator(uri, strict).is_valid(instance):
            return
        problems = _problems(instance, uri, strict)
    except (ValueError, TypeError, OverflowError) as exc:
        if "recursion" in str(exc).lower():
            raise SizeLimitError([Problem("", "max-depth", f"too deeply nested for validation: {exc}")], kind) from None
        problems = [Problem("", "json-value", f"not a JSON value: {exc}")]
    raise ValidationError(problems or [Problem("", "schema", "invalid")], kind)


def validate_levels(instance: Any, kind: str) -> None:
    """:func:`validate` (not strict) for a value that shares its members (:func:`~agentmsg._codec.jsontext.
    shares_members`: the dict of a block held twice, 40 levels down), level by level (:func:`leaf_errors`), each
    level met again walked once: the same verdict and problems (a problem in a shared part said at the first place
    it is met), in time linear in its distinct dicts and lists where the validator walks every path. The size and JSON
    checks first (:func:`~agentmsg._codec.jsontext.check_json_value`, its walk, which is linear too)."""
    uri = schema_uri(kind)
    check_json_value(instance, kind, walk=True)
    try:
        problems = _problems(instance, uri, False, once=True)
    except (ValueError, TypeError, OverflowError) as exc:
        problems = [Problem("", "json-value", f"not a JSON value: {exc}")]
    if problems:
        raise ValidationError(problems, kind)


def validate_parsed(instance: Any, kind: str) -> None:
    """:func:`validate` for a value ``orjson.loads`` read from JSON text (an event line of a JSONL stream): the
    same result, faster. Such a value is JSON that can be written back by construction (string keys, strings
    without lone surrogates, integers within 64 bits, finite numbers) except for its depth, which orjson's
    writer checks at the default limit; so the JSON-value check is one C pass instead of two."""
    if limits.max_depth == MAX_WRITABLE_DEPTH:
        try:
            orjson.dumps(instance, option=_STRICT)
        except orjson.JSONEncodeError:
            pass  # (validate says what is wrong)
        else:
            if _validator(schema_uri(kind), False).is_valid(instance):
                return
    validate(instance, kind)


def is_valid(instance: Any, kind: str = "msg", *, strict: bool = False) -> bool:
    """True when :func:`validate` accepts ``instance``. An unknown ``kind`` raises (:func:`~agentmsg.errors.unknown_choice`): it is
    the call that is wrong, not the instance."""
    schema_uri(kind)
    try:
        validate(instance, kind, strict=strict)
    except ValidationError:
        return False
    return True
