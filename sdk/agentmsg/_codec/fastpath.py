"""The decode fast path: msgspec types derived from the closed schema, converted straight into the models.

``Msg.from_json`` and ``decode_messages`` first try a msgspec typed decode against types derived here from
the **closed** variant of the schema, then convert the msgspec structs into the SDK's attrs classes. msgspec
parses, checks types, required keys, enums, lengths, minimums and patterns in one C pass, which is what
makes validated decoding fast. The derived types are a *filter that accepts no more than the schema*:

* every keyword the schema uses is translated exactly, or more strictly (an integer must fit in a signed
  64-bit int, ``1.0`` is not an integer, a ``format`` or ``patternProperties`` alternative is not taken,
  a string union keeps its first branch), or the fast path is off for that kind;
* what msgspec cannot say is checked while converting: role rules (the schema's ``if role then content``),
  free-form maps (no null values where the schema says so; declared keys through jsonschema-rs when one is
  present) and free-form values (integers in [-2**63, 2**64 - 1], nesting within ``limits.max_depth``).

Anything the filter rejects, for whatever reason, goes to the detailed path (jsonschema-rs against the open
or closed schema, exact errors), so the fast path can only be faster, never decide differently. The
property tests check that whatever the fast path accepts, the detailed path accepts and decodes equally.
"""

from __future__ import annotations

import enum
import math
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import attrs
import msgspec
import orjson

from agentmsg._codec.converter import _hints, _strip_optional, _wire_fields, slot_name
from agentmsg._codec.limits import MAX_WRITABLE_DEPTH, limits
from agentmsg._codec.schemas import _absolute, _by_id, _union_tags, _validator, closed_document, schema_uri

__all__ = ["FastPath", "Unsupported"]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_ANNOTATIONS = {
    "description",
    "title",
    "default",
    "$comment",
    "examples",
    "$schema",
    "$id",
    "$defs",
    "deprecated",
    "x-rule",
    "x-message",
}


class Unsupported(Exception):
    """A schema keyword the fast path cannot translate exactly or more strictly: the kind has no fast path."""


class _Reject(Exception):
    """Raised while converting: the input needs the detailed path."""


#: ``raise _REJECT`` raises a new _Reject each time: one instance raised again and again would keep every raise's
#: traceback (each raise prepends its frames to the instance's ``__traceback__``), and with them the frames and the
#: decoded structs they hold, so each rejected decode would leak
_REJECT = _Reject

# ---- patterns -----------------------------------------------------------------------------------------

_SAFE_PATTERN = re.compile(r"(?:[^\\.$^]|\\[.\-/+*?()\[\]{}|^$\\])*")


def _python_pattern(pattern: str) -> str:
    """An ECMA-262 pattern as a Python ``re`` pattern for ``re.search`` with the same matches, for the safe
    subset the schemas use (literal characters, classes, groups, quantifiers, alternation; ``^`` first,
    ``$`` last). Anything else (``\\d``, ``.``, lookarounds, ``$`` elsewhere) is :class:`Unsupported`."""
    body = pattern
    head = body.startswith("^")
    if head:
        body = body[1:]
    tail = body.endswith("$") and not body.endswith("\\$")
    if tail:
        body = body[:-1]
    if not _SAFE_PATTERN.fullmatch(body) or "(?" in body:  # no classes like \d, no ., no groups with flags
        raise Unsupported(f"pattern {pattern!r}")
    return ("^" if head else "") + body + (r"\Z" if tail else "")


# ---- the derived types (as Python source, exec'd in a module of their own) ----------------------------


class _Builder:
    """Translates closed-schema nodes into msgspec type expressions (source text of Struct classes)."""

    def __init__(self, docs: dict[str, dict[str, Any]]) -> None:
        self.docs = docs
        self.classes: dict[str, str] = {}  # absolute URI of a record -> struct class name
        self.sources: list[str] = []
        self.structs: dict[str, dict[str, Any]] = {}  # struct class name -> what its converter needs
        self.maps: dict[str, tuple[bool, frozenset[str], str]] = {}  # map URI -> (no null, declared keys, URI)

    def node(self, uri: str) -> Any:
        doc_uri, _, fragment = uri.partition("#")
        node: Any = self.docs[doc_uri]
        for part in [p for p in fragment.split("/") if p]:
            node = node[int(part)] if isinstance(node, list) else node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def type_of(self, uri: str, tag: str | None = None) -> str:
        """The msgspec type expression for the schema at ``uri``."""
        uri = uri if "#" in uri else uri + "#"
        node = self.node(uri)
        if not isinstance(node, dict):
            raise Unsupported(f"boolean schema at {uri}")
        doc_uri = uri.partition("#")[0]
        if "$ref" in node:
            if set(node) - _ANNOTATIONS - {"$ref"}:
                raise Unsupported(f"$ref with other keywords at {uri}")
            return self.type_of(_absolute(node["$ref"], doc_uri), tag)
        if node.get("x-agentmsg-map"):
            return self.map_type(uri, node)
        if "anyOf" in node or "oneOf" in node:
            return self.union_type(uri, node)
        if "properties" in node:
            return self.struct_type(uri, node, tag)
        return self.scalar_type(uri, node)

    def map_of(self, uri: str) -> tuple[bool, frozenset[str], str] | None:
        """The map rules of a field's schema (through $ref and nullable unions), or None."""
        uri = uri if "#" in uri else uri + "#"
        node = self.node(uri)
        if isinstance(node, dict) and "$ref" in node:
            return self.map_of(_absolute(node["$ref"], uri.partition("#")[0]))
        if uri in self.maps:
            return self.maps[uri]
        for key in ("anyOf", "oneOf"):
            for i, _ in enumerate(node.get(key, []) if isinstance(node, dict) else []):
                found = self.map_of(f"{uri}/{key}/{i}")
                if found is not None:
                    return found
        return None

    # -- unions
    def union_type(self, uri: str, node: dict[str, Any]) -> str:
        key = "anyOf" if "anyOf" in node else "oneOf"
        doc_uri = uri.partition("#")[0]
        branches = node[key]
        tags = _union_tags(branches, doc_uri)
        rest = set(node) - _ANNOTATIONS - {key}
        if tags is not None:
            # A discriminated union root may repeat `type: object`, `required: [type]` and the tag enum.
            if rest - {"type", "required", "properties"}:
                raise Unsupported(f"keywords {sorted(rest)} beside a union at {uri}")
            return "Union[" + ", ".join(self.type_of(target, tag) for tag, target in tags.items()) + "]"
        if rest:
            raise Unsupported(f"keywords {sorted(rest)} beside {key} at {uri}")
        kinds: dict[str, str] = {}
        for i, _ in enumerate(branches):
            try:
                expr = self.type_of(f"{uri}/{key}/{i}")
            except Unsupported:
                continue  # one branch fewer: stricter
            kinds.setdefault(_kind(expr), expr)  # msgspec unions hold one type per kind: keep the first
        if not kinds:
            raise Unsupported(f"no branch of {uri} can be expressed")
        return "Union[" + ", ".join(kinds.values()) + "]" if len(kinds) > 1 else next(iter(kinds.values()))

    # -- records
    def struct_type(self, uri: str, node: dict[str, Any], tag: str | None) -> str:
        if uri in self.classes:
            return self.classes[uri]
        rest = (
            set(node)
            - _ANNOTATIONS
            - {"type", "required", "properties", "additionalProperties", "patternProperties", "allOf"}
        )
        if rest:
            raise Unsupported(f"keywords {sorted(rest)} on an object at {uri}")
        if node.get("type", "object") != "object" or node.get("additionalProperties") is not False:
            raise Unsupported(f"an object that is not a closed record at {uri}")
        name = f"S{len(self.classes)}_{re.sub(r'[^A-Za-z0-9_]', '_', str(node.get('title', 'Object')))}"
        self.classes[uri] = name
        required = set(node.get("required", []))
        fields: list[dict[str, Any]] = []
        for i, (wire, _sub) in enumerate(node["properties"].items()):
            location = f"{uri}/properties/{_escape(wire)}"
            if wire == "type" and tag is not None:
                if self.node(location).get("const") != tag:
                    raise Unsupported(f"the tag of {uri} is not a const")
                continue
            expr = self.type_of(location)
            fields.append({"attr": f"f{i}", "wire": wire, "expr": expr, "map": self.map_of(location)})
        lines = []
        for f in fields:
            if f["wire"] in required:
                lines.append(f"    {f['attr']}: {f['expr']}")
            else:
                lines.append(f"    {f['attr']}: Union[{f['expr']}, msgspec.UnsetType] = msgspec.UNSET")
        rename = {f["attr"]: f["wire"] for f in fields}
        options = f"kw_only=True, forbid_unknown_fields=True, rename={rename!r}"
        if tag is not None:
            options += f', tag_field="type", tag={tag!r}'
        self.sources.append(f"class {name}(msgspec.Struct, {options}):\n" + ("\n".join(lines) or "    pass"))
        rules = _role_rules(node["allOf"], uri) if "allOf" in node else []
        self.structs[name] = {"uri": uri, "title": node.get("title"), "tag": tag, "fields": fields, "rules": rules}
        return name

    # -- maps and scalars
    def map_type(self, uri: str, node: dict[str, Any]) -> str:
        extra = node.get("additionalProperties", True)
        no_null = (
            isinstance(extra, dict) and extra.get("not") == {"type": "null"} and not set(extra) - _ANNOTATIONS - {"not"}
        )
        if extra is not True and not no_null:
            raise Unsupported(f"map values {extra!r} at {uri}")
        if set(node) - _ANNOTATIONS - {"type", "properties", "additionalProperties", "x-agentmsg-map"}:
            raise Unsupported(f"map keywords at {uri}")
        self.maps[uri] = (no_null, frozenset(node.get("properties", {})), uri)
        return "dict[str, Any]"

    def scalar_type(self, uri: str, node: dict[str, Any]) -> str:
        rest = set(node) - _ANNOTATIONS
        if "const" in node:
            if not isinstance(node["const"], str) or rest - {"const", "type"}:
                raise Unsupported(f"const at {uri}")
            return f"Literal[{node['const']!r}]"
        if "enum" in node:
            if not all(isinstance(v, str) for v in node["enum"]) or rest - {"enum", "type"}:
                raise Unsupported(f"enum at {uri}")
            return "Literal[" + ", ".join(repr(v) for v in node["enum"]) + "]"
        kinds = node.get("type")
        if kinds is None:
            if rest:
                raise Unsupported(f"keywords {sorted(rest)} without a type at {uri}")
            return "Any"
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        out = [self.one_kind(uri, node, kind, rest - {"type"}) for kind in kinds]
        return out[0] if len(out) == 1 else "Union[" + ", ".join(out) + "]"

    def one_kind(self, uri: str, node: dict[str, Any], kind: str, rest: set[str]) -> str:
        def meta(**kw: Any) -> str:
            return ", ".join(f"{k}={v!r}" for k, v in kw.items() if v is not None)

        if kind == "string":
            if rest - {"minLength", "maxLength", "pattern"}:
                raise Unsupported(f"string keywords {sorted(rest)} at {uri}")
            pattern = _python_pattern(node["pattern"]) if "pattern" in node else None
            args = meta(min_length=node.get("minLength"), max_length=node.get("maxLength"), pattern=pattern)
            return f"Annotated[str, msgspec.Meta({args})]" if args else "str"
        if kind in ("integer", "number"):
            if rest - {"minimum", "maximum"}:
                raise Unsupported(f"number keywords {sorted(rest)} at {uri}")
            lo, hi = node.get("minimum"), node.get("maximum")
            if any(b is not None and type(b) not in (int, float) for b in (lo, hi)):
                raise Unsupported(f"a bound that is no number at {uri}")
            # an integer's bounds are whole: a fractional bound (fps' float range) is rounded inwards
            ge = _I64_MIN if lo is None else max(_I64_MIN, math.ceil(lo))
            le = _I64_MAX if hi is None else min(_I64_MAX, math.floor(hi))
            whole = f"Annotated[int, msgspec.Meta({meta(ge=ge, le=le)})]"
            if kind == "integer":
                return whole
            fraction = (
                f"Annotated[float, msgspec.Meta({meta(ge=lo, le=hi)})]" if lo is not None or hi is not None else "float"
            )
            return f"Union[{whole}, {fraction}]"
        if kind == "boolean" and not rest:
            return "bool"
        if kind == "null" and not rest:
            return "None"
        if kind == "array":
            if rest - {"items"}:
                raise Unsupported(f"array keywords {sorted(rest)} at {uri}")
            return f"list[{self.type_of(uri + '/items')}]" if "items" in node else "list[Any]"
        if kind == "object" and not rest:
            return "dict[str, Any]"
        raise Unsupported(f"type {kind!r} with {sorted(rest)} at {uri}")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _kind(expr: str) -> str:
    """The msgspec union kind of a type expression (one per kind is allowed in a union)."""
    if expr == "None":
        return "null"
    for prefix, kind in (
        ("Annotated[str", "str"),
        ("str", "str"),
        ("Literal[", "str"),
        ("Annotated[int", "int"),
        ("Union[Annotated[int", "int"),
        ("bool", "bool"),
        ("list[", "array"),
        ("dict[", "object"),
        ("S_", "object"),
    ):
        if expr.startswith(prefix):
            return kind
    return expr


def _role_rules(all_of: Any, uri: str) -> list[tuple[str, str, str, frozenset[str]]]:
    """``(key, value, items key, allowed item types)`` for rules "if object[key] == value then the ``type`` of
    every item of object[items key] is allowed": the only ``allOf`` shape the fast path checks itself (the
    schema's role rules). Any other ``allOf`` is :class:`Unsupported`."""
    rules = []
    for i, rule in enumerate(all_of if isinstance(all_of, list) else [None]):
        try:
            cond, then = rule["if"], rule["then"]
            ((key, test),) = cond["properties"].items()
            ((items_key, arr),) = then["properties"].items()
            item = arr["items"]
            ((item_key, check),) = item["properties"].items()
            allowed = check["enum"] if "enum" in check else [check["const"]]
            shapes_ok = (
                not set(rule) - _ANNOTATIONS - {"if", "then"}
                and cond.get("required") == [key]
                and set(test) == {"const"}
                and isinstance(test["const"], str)
                and item_key == "type"
                and not set(check) - _ANNOTATIONS - {"enum", "const", "x-rule", "x-message"}
                and not set(item) - _ANNOTATIONS - {"type", "properties"}
                and not set(arr) - _ANNOTATIONS - {"type", "items"}
            )
            if not shapes_ok:
                raise KeyError
        except (KeyError, TypeError, ValueError):
            raise Unsupported(f"allOf/{i} at {uri} is not a role rule") from None
        rules.append((key, test["const"], items_key, frozenset(allowed)))
    return rules


class FastPath:
    """The compiled fast path of one kind (``msg``): a msgspec decoder and the converters into the models.

    ``decode(data)`` returns the decoded object, or None when the input needs the detailed path;
    ``decode_list(data)`` the same for a JSON array of that kind. Raises :class:`Unsupported` at construction
    when the schema uses something the fast path cannot check."""

    def __init__(self, kind: str, build_as: dict[type, type], msg_roles: dict[str, type] | None = None) -> None:
        builder = _Builder({uri: closed_document(doc) for uri, doc in _by_id().items()})
        root = builder.type_of(schema_uri(kind))
        if not root.startswith("S"):
            raise Unsupported(f"the root of {kind} is not a record")
        self.source = "\n\n".join(
            [
                "from __future__ import annotations\nimport msgspec\nfrom typing import Annotated, Any, Literal, Union",
                *builder.sources,
            ]
        )
        module = types.ModuleType(f"agentmsg._fastpath_types_{kind.replace('-', '_')}")
        sys.modules[module.__name__] = module  # msgspec resolves the annotations in the module's namespace
        exec(compile(self.source, f"<{module.__name__}>", "exec"), module.__dict__)
        self.root: type = getattr(module, root)
        self.decoder = msgspec.json.Decoder(self.root)
        self.list_decoder = msgspec.json.Decoder(list[self.root])  # type: ignore[name-defined]
        models = _models()
        self._converters: dict[type, Callable[[Any, int], Any]] = {}
        tags = {getattr(module, n): info["tag"] for n, info in builder.structs.items()}
        for name, info in builder.structs.items():
            cls = models.get(info["title"])
            if cls is None:
                raise Unsupported(f"no generated class for {info['title']}")
            self._converters[getattr(module, name)] = _converter(
                cls, (msg_roles or {}) if info["title"] == "Msg" else {}, build_as, info, self._converters, tags
            )
        self._convert = self._converters[self.root]

    @staticmethod
    def takes(data: object) -> bool:
        """Whether input may go this way at all: JSON text (bytes, or a str counted at 4 bytes a character,
        its UTF-8 bound) within ``limits.max_bytes``, while ``limits.max_depth`` is the default the compiled
        types check."""
        return (
            (type(data) is bytes and len(data) <= limits.max_bytes)
            or (type(data) is str and len(data) * 4 <= limits.max_bytes)
        ) and limits.max_depth == MAX_WRITABLE_DEPTH

    def decode(self, data: object) -> Any:
        if not self.takes(data):
            return None
        try:
            return self._convert(self.decoder.decode(data), 1)  # type: ignore[arg-type]
        except _DECODE_ERRORS:
            return None

    def convert(self, data: object) -> Any:
        """The model of ``data``, JSON values already parsed (dicts, lists, str, int, float, bool, None),
        through the same typed checks as :meth:`decode` but without writing it as JSON text first: its
        strings are the model's own, not copies (a reply's text is held once). None when it does not
        take that way (the caller decides, as for :meth:`decode`). ``data`` must be writable JSON (no
        lone surrogate, no integer beyond 64 bits): msgspec checks neither here."""
        if limits.max_depth != MAX_WRITABLE_DEPTH:
            return None
        try:
            return self._convert(msgspec.convert(data, self.root), 1)
        except _DECODE_ERRORS:
            return None

    def decode_list(self, data: object) -> list[Any] | None:
        if not self.takes(data):
            return None
        try:
            items = self.list_decoder.decode(data)  # type: ignore[arg-type]
            convert = self._convert
            return [convert(s, 2) for s in items]
        except _DECODE_ERRORS:
            return None


def _converter(
    cls: type,
    msg_roles: dict[str, type],
    build_as: dict[type, type],
    info: dict[str, Any],
    converters: dict[type, Callable[[Any, int], Any]],
    tags: dict[type, str | None],
) -> Callable[[Any, int], Any]:
    """Compile ``(struct, level) -> model`` for one generated class: the same objects the structure hooks
    build from a dict, plus the checks msgspec cannot make (role rules, maps, free-form values, depth)."""
    hints = _hints(cls)
    fields = {f["wire"]: f for f in info["fields"]}
    models = {a.metadata.get("wire", a.name): a for a in _wire_fields(cls)}
    if set(models) - set(fields) - {"type"} or set(fields) - set(models):
        raise Unsupported(f"{cls.__name__}: the model's fields and the schema's properties differ")
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "_target": build_as.get(cls, cls),
        "UNSET": msgspec.UNSET,
        "_conv": converters,
        "_reject": _REJECT,
        "_tags": tags,
    }
    containers = any(f["expr"].startswith(("list[", "dict[", "Union[dict[")) for f in info["fields"])
    limit = MAX_WRITABLE_DEPTH - (1 if containers else 0)
    lines = ["def convert(s, lvl):", f"    if lvl > {limit}: raise _reject"]
    if msg_roles:
        ns["_by_role"] = msg_roles
        lines.append(f"    o = _new(_by_role[s.{fields['role']['attr']}])")
    else:
        lines.append("    o = _new(_target)")
    for n, (wire, a) in enumerate(models.items()):
        slot = slot_name(ns["_target"], a.name)  # (set through its slot: the class may guard the field)
        if wire not in fields:  # the union tag
            lines.append(f"    o.{slot} = {info['tag']!r}")
            continue
        f = fields[wire]
        tp, _ = _strip_optional(hints[a.name])
        value = _value_expr(tp, f, "v", ns, n)
        lines.append(f"    v = s.{f['attr']}")
        if a.default is attrs.NOTHING:
            lines.append(f"    o.{slot} = {value}")
            continue
        if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            ns[f"_d{n}"] = a.default.factory
            default = f"_d{n}()"
        else:
            ns[f"_d{n}"] = a.default
            default = f"_d{n}"
        lines.append(f"    o.{slot} = {default} if v is UNSET else {value}")
    for n, (key, const, items_key, allowed) in enumerate(info["rules"]):
        ns[f"_allowed{n}"] = allowed
        lines.append(
            f"    if s.{fields[key]['attr']} == {const!r} and not all("
            f"_tags[_b.__class__] in _allowed{n} for _b in s.{fields[items_key]['attr']}): raise _reject"
        )
    lines.append("    o.unknown_keys = None")
    lines.append("    return o")
    code = compile("\n".join(lines), f"<agentmsg fast path {cls.__name__}>", "exec")
    exec(code, ns)
    fn: Callable[[Any, int], Any] = ns["convert"]
    return fn


def _value_expr(tp: Any, field: dict[str, Any], src: str, ns: dict[str, Any], n: int) -> str:
    """The conversion of one struct field's value ``src`` to the model's field type ``tp``."""
    expr: str = field["expr"]
    if expr.startswith("S"):
        return f"_conv[{src}.__class__]({src}, lvl + 1)"
    if expr.startswith("Union[S"):
        if expr.endswith(", None]"):
            return f"(None if {src} is None else _conv[{src}.__class__]({src}, lvl + 1))"
        return f"_conv[{src}.__class__]({src}, lvl + 1)"
    if expr.startswith(("list[S", "list[Union[S")):
        return f"[_conv[_x.__class__](_x, lvl + 2) for _x in {src}]"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        ns[f"_enum{n}"] = {m.value: m for m in tp}
        return f"_enum{n}[{src}]"
    if "Any" in expr:
        ns[f"_map{n}"] = _map_checker(field["map"])
        return f"({src} if not {src} else _map{n}({src}, lvl))"
    return src


def _map_checker(found: tuple[bool, frozenset[str], str] | None) -> Callable[[Any, int], Any]:
    """The check of a non-empty free-form value (a map, or a list of any JSON) held by an object at level
    ``lvl``: the map's own schema rules through jsonschema-rs (no null values, the types of its declared
    keys), then that orjson can write it where it stands (integers within the 64-bit range, nesting within
    the depth limit; msgspec has already guaranteed valid strings and finite numbers). Raises ``_Reject``;
    returns the value."""
    no_null, declared, uri = found if found is not None else (False, frozenset(), "")
    valid = _validator(uri, True).is_valid if (no_null or declared) else None
    limit = 2 * MAX_WRITABLE_DEPTH

    def check(m: Any, lvl: int) -> Any:
        if valid is not None and not valid(m):
            raise _REJECT
        try:
            if len(_dumps(m)) > limit - 2 * lvl:  # long enough to be too deep where it stands: check exactly
                wrapped = m
                for _ in range(lvl):
                    wrapped = [wrapped]
                _dumps(wrapped)
        except JSONEncodeError:
            raise _REJECT from None
        return m

    return check


_dumps = orjson.dumps
JSONEncodeError = orjson.JSONEncodeError
_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeError, _Reject)


def _models() -> dict[str, type]:
    """Generated attrs classes by name (= schema title)."""
    out = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("agentmsg_models.") and module is not None:
            for value in vars(module).values():
                if isinstance(value, type) and attrs.has(value) and value.__module__ == name:
                    out[value.__name__] = value
    return out
