"""The cattrs converter for agentmsg's generated attrs models.

cattrs drives (un)structuring; the hooks for generated classes come from one factory that compiles a
specialised function per class from the field metadata written by the codegen template:

* exact wire names (``metadata["wire"]``), field order = schema order = Java's key order;
* tagged unions (``ContentBlock``, ``Source``, ...) dispatched on ``type`` through a dict;
* null/omit policy: a field the schema declares nullable is written as ``null`` when ``None`` (as
  AgentScope Java does), any other optional field is omitted when ``None``;
* accepted alternative spellings from the schema's ``patternProperties`` (image/video
  ``min_pixels`` -> ``minPixels``; the camelCase key wins when both are present).

Structuring trusts its input: the SDK validates against the JSON Schema first (``Msg.from_json``,
``Msg.from_dict``), so the hooks do no type checks. Structure unvalidated data only through the SDK.

Unstructuring depends only on the class, so its hooks are one shared table (:data:`unstructure_hooks`).
Structuring depends on which classes to build (the SDK's subclasses of the generated ones): a :class:`Codec`
is made with that mapping passed in, so nothing depends on import order.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import cattrs

from ._schemas import schema_documents

StructureFn = Callable[..., Any]  # (value[, type]) -> object: cattrs passes the type too
UnstructureFn = Callable[[Any], Any]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _titled_objects() -> Iterator[dict[str, Any]]:
    """Every schema object with a ``title`` and ``properties``, in every shipped document."""
    stack: list[Any] = list(schema_documents().values())
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and isinstance(node.get("title"), str):
                yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _accepted_spellings() -> dict[str, dict[str, str]]:
    """Schema title -> {camelCase wire key: accepted alternative key}, read from patternProperties."""
    out: dict[str, dict[str, str]] = {}
    for node in _titled_objects():
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            for prop in node["properties"]:
                alt = _snake(prop)
                if alt != prop and any(re.search(p, alt) for p in patterns):
                    out.setdefault(node["title"], {})[prop] = alt
    return out


_ALTERNATIVES = _accepted_spellings()


def _property_orders() -> dict[str, list[str]]:
    """Schema title -> property names in schema order (= AgentScope Java's key order)."""
    out: dict[str, list[str]] = {}
    for node in _titled_objects():
        out.setdefault(node["title"], list(node["properties"]))
    return out


_ORDERS = _property_orders()


def _wire_fields(cls: type) -> list[Any]:
    """attrs fields of a generated class in wire order (the schema's property order)."""
    fields = list(attrs.fields(cls))
    base = next((k for k in cls.__mro__ if k.__name__ in _ORDERS and k.__module__.startswith("agentmsg_models")), None)
    order = _ORDERS.get(base.__name__, []) if base is not None else []
    rank = {name: i for i, name in enumerate(order)}
    return sorted(fields, key=lambda a: rank.get(a.metadata.get("wire", a.name), len(rank)))


def _hints(cls: type) -> dict[str, Any]:
    """Resolved field types. Generated unions hold string forward references to classes of their own
    module (``"ToolResultBlock"``), so names are looked up in every generated module too."""
    import sys

    namespace: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("agentmsg_models.") and module is not None:
            namespace.update({k: v for k, v in vars(module).items() if isinstance(v, type)})
    for klass in reversed(cls.__mro__):
        namespace.update(vars(sys.modules[klass.__module__]))
    return typing.get_type_hints(cls, globalns=namespace)


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != len(get_args(tp)):
            return (args[0] if len(args) == 1 else Union[tuple(args)]), True  # noqa: UP007
    return tp, False


def _is_plain(tp: Any) -> bool:
    """JSON-native values that need no conversion either way."""
    if tp in (str, int, float, bool, Any, type(None)):
        return True
    origin = get_origin(tp)
    if origin is Literal:
        return True
    if origin in (dict, list):
        return all(_is_plain(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return all(_is_plain(a) for a in get_args(tp))
    return False


def _union_members(tp: Any) -> list[type] | None:
    if get_origin(tp) in (Union, types.UnionType):
        members = list(get_args(tp))
        if all(attrs.has(m) for m in members):
            return members
    return None


def _tag_of(cls: type) -> str:
    field = attrs.fields_dict(cls)["type"]
    return str(field.default)


class _Codegen:
    """Compiles value expressions for a type into a namespace shared by one generated function."""

    def __init__(self, codec: Codec | None = None) -> None:
        self.ns: dict[str, Any] = {}
        self._n = 0
        self.codec = codec

    def name(self, value: Any, prefix: str = "h") -> str:
        self._n += 1
        key = f"_{prefix}{self._n}"
        self.ns[key] = value
        return key

    def structure_expr(self, tp: Any, src: str) -> str:
        if _is_plain(tp):
            return src
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            table = self.name({m.value: m for m in tp}, "enum")
            return f"{table}[{src}]"
        assert self.codec is not None
        members = _union_members(tp)
        if members is not None:
            # Hooks are looked up lazily: unions are recursive (tool_result.output holds blocks).
            table = self.name(self.codec.union({_tag_of(m): m for m in members}), "union")
            return f"{table}[{src}['type']]({src})"
        if attrs.has(tp):
            return f"{self.name(self.codec.structure_hooks, 'sh')}[{self.name(tp, 'cls')}]({src})"
        if get_origin(tp) is list:
            (item,) = get_args(tp)
            return f"[{self.structure_expr(item, '_x')} for _x in {src}]"
        if get_origin(tp) is dict:
            _, val = get_args(tp)
            return f"{{_k: {self.structure_expr(val, '_v')} for _k, _v in {src}.items()}}"
        return f"{self.name(self.codec.converter.get_structure_hook(tp))}({src}, {self.name(tp)})"

    def unstructure_expr(self, tp: Any, src: str) -> str:
        if _is_plain(tp):
            return src
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            # str-valued enums are JSON strings already (and a plain string passed by a caller works too).
            return src
        members = _union_members(tp)
        if members is not None or attrs.has(tp):
            # Dispatch on the runtime class (subclasses included), hooks cached per class.
            return f"{self.name(unstructure_hooks, 'uh')}[{src}.__class__]({src})"
        if get_origin(tp) is list:
            (item,) = get_args(tp)
            return f"[{self.unstructure_expr(item, '_x')} for _x in {src}]"
        if get_origin(tp) is dict:
            _, val = get_args(tp)
            return f"{{_k: {self.unstructure_expr(val, '_v')} for _k, _v in {src}.items()}}"
        return f"{self.name(_plain.unstructure)}({src})"


def _compile(source: str, name: str, ns: dict[str, Any]) -> Callable[..., Any]:
    code = compile(source, f"<agentmsg converter {name}>", "exec")
    exec(code, ns)
    fn: Callable[..., Any] = ns[name]
    return fn


def make_structure_fn(cls: type, codec: Codec) -> StructureFn:
    """Compile ``dict -> cls`` for a generated attrs class (input already validated), building the class
    the codec maps it to."""
    target = codec.build_as.get(cls, cls)
    hints = _hints(cls)
    alternatives = _ALTERNATIVES.get(cls.__name__, {})
    gen = _Codegen(codec)
    gen.ns.update(_new=object.__new__, _target=target)
    lines = ["def structure(d, _type=None):"]
    if cls.__name__ == "Msg" and codec.msg_roles:
        gen.ns["_by_role"] = codec.msg_roles
        lines.append("    o = _new(_by_role.get(d['role'], _target))")
    else:
        lines.append("    o = _new(_target)")
    for a in attrs.fields(cls):
        wire = a.metadata.get("wire", a.name)
        tp, optional = _strip_optional(hints[a.name])
        if a.default is attrs.NOTHING:
            lines.append(f"    o.{a.name} = {gen.structure_expr(tp, f'd[{wire!r}]')}")
            continue
        alt = alternatives.get(wire)
        get = f"d.get({wire!r})" if alt is None else f"d.get({wire!r}, d.get({alt!r}))"
        if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            factory = gen.name(a.default.factory)
            lines.append(f"    v = {get}")
            lines.append(f"    o.{a.name} = {factory}() if v is None else {gen.structure_expr(tp, 'v')}")
        elif optional or a.default is None:
            expr = gen.structure_expr(tp, "v")
            if expr == "v":
                lines.append(f"    o.{a.name} = {get}")
            else:
                lines.append(f"    v = {get}")
                lines.append(f"    o.{a.name} = v if v is None else {expr}")
        elif get_origin(tp) is Literal:  # the union's tag: always present when dispatched on it
            lines.append(f"    o.{a.name} = d.get({wire!r}, {gen.name(a.default, 'default')})")
        else:
            default = gen.name(a.default, "default")
            lines.append(f"    v = {get}")
            lines.append(f"    o.{a.name} = {default} if v is None else {gen.structure_expr(tp, 'v')}")
    lines.append("    return o")
    return _compile("\n".join(lines), "structure", gen.ns)


def make_unstructure_fn(cls: type) -> UnstructureFn:
    """Compile ``cls -> dict`` with wire names, schema key order and the null/omit policy."""
    hints = _hints(cls)
    gen = _Codegen()
    required: list[str] = []
    optional: list[str] = []
    fields = _wire_fields(cls)
    # Keys are emitted in schema order; a field omitted when None breaks the single dict literal.
    body = ["def unstructure(o):", "    d = {"]
    in_literal = True
    for a in fields:
        wire = a.metadata.get("wire", a.name)
        nullable = a.metadata.get("nullable", False)
        tp, is_opt = _strip_optional(hints[a.name])
        omit_when_none = (is_opt or a.default is None) and not nullable
        if omit_when_none:
            if in_literal:
                body.append("    }")
                in_literal = False
            body.append(f"    v = o.{a.name}")
            body.append(f"    if v is not None: d[{wire!r}] = {gen.unstructure_expr(tp, 'v')}")
            optional.append(wire)
            continue
        expr = gen.unstructure_expr(tp, f"o.{a.name}")
        if is_opt and expr != f"o.{a.name}":
            expr = f"(None if o.{a.name} is None else {gen.unstructure_expr(tp, f'o.{a.name}')})"
        if in_literal:
            body.append(f"        {wire!r}: {expr},")
        else:
            body.append(f"    d[{wire!r}] = {expr}")
        required.append(wire)
    if in_literal:
        body.append("    }")
    body.append("    return d")
    return _compile("\n".join(body), "unstructure", gen.ns)


def _is_model(cls: Any) -> bool:
    return isinstance(cls, type) and attrs.has(cls) and any("wire" in a.metadata for a in attrs.fields(cls))


class _HookCache(dict[type, Any]):
    """class -> compiled hook, compiled on first use by ``make``."""

    def __init__(self, make: Callable[[type], Any]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, cls: type) -> Any:
        hook = self._make(cls)
        self[cls] = hook
        return hook


class _LazyUnion(dict[str, StructureFn]):
    """``type`` tag -> structure hook of the member class, resolved on first use."""

    def __init__(self, classes: dict[str, type], hooks: _HookCache) -> None:
        super().__init__()
        self.classes = classes
        self._hooks = hooks

    def __missing__(self, tag: str) -> StructureFn:
        hook: StructureFn = self._hooks[self.classes[tag]]
        self[tag] = hook
        return hook


# Unstructuring: one cattrs converter and one hook table for every codec (it depends only on the class).
_plain = cattrs.Converter()
_plain.register_unstructure_hook_factory(_is_model, make_unstructure_fn)

#: class -> compiled unstructure hook (wire names, key order, null/omit policy), filled on first use.
unstructure_hooks: dict[type, UnstructureFn] = _HookCache(_plain.get_unstructure_hook)


class Codec:
    """Structure hooks that build ``build_as[generated class]`` (an SDK subclass adding behaviour, no
    fields) instead of the generated class, and, for ``Msg``, the class ``msg_roles[role]``."""

    def __init__(self, build_as: Mapping[type, type], msg_roles: Mapping[str, type] | None = None) -> None:
        self.build_as = dict(build_as)
        self.msg_roles = dict(msg_roles or {})
        self.converter = cattrs.Converter()
        self.converter.register_structure_hook_factory(_is_model, lambda cls: make_structure_fn(cls, self))
        #: class -> compiled structure hook, filled on first use.
        self.structure_hooks: dict[type, StructureFn] = _HookCache(self.converter.get_structure_hook)

    def union(self, classes: dict[str, type]) -> dict[str, StructureFn]:
        """``type`` tag -> structure hook of that member, for a tagged union of generated classes."""
        return _LazyUnion(classes, self.structure_hooks)  # type: ignore[arg-type]
