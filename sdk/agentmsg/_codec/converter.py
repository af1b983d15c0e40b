"""The cattrs converter for agentmsg's generated attrs models.

cattrs drives (un)structuring; the hooks for generated classes come from one factory that compiles a
specialised function per class from the field metadata written by the codegen template:

* exact wire names (``metadata["wire"]``), field order = schema order = Java's key order;
* tagged unions (``ContentBlock``, ``Source``, ...) dispatched on ``type`` through a plain dict;
* null/omit policy: a field the schema declares nullable is written as ``null`` when ``None`` (as
  AgentScope Java does), any other optional field is omitted when ``None``;
* accepted alternative spellings from the schema's ``patternProperties`` (image/video
  ``min_pixels`` -> ``minPixels``; the camelCase key wins when both are present);
* unknown keys (forward compatibility): every generated class has an ``unknown_keys`` field
  (``metadata["unknown_keys"]``). A :class:`Codec` made with ``keep_unknown=True`` collects the keys a class
  does not declare into it; the plain codec (used once the closed schema has shown there are none) only sets
  it to None. Writers append them after the declared keys, in their order.

Structuring trusts its input: the SDK validates against the JSON Schema first (``Msg.from_json``,
``Msg.from_dict``), so the hooks do no type checks. Structure unvalidated data only through the SDK.

Unstructuring depends only on the class, so its hooks are shared tables: :data:`unstructure_hooks` (whole
dicts, for ``to_dict``) and :func:`json_default` (one object at a time, for orjson's ``default``: orjson
walks the lists and dicts itself, so encoding builds no nested Python lists). Structuring depends on which
classes to build (the SDK's subclasses of the generated ones): a :class:`Codec` is made with that mapping
passed in, so nothing depends on import order.

Writing JSON goes through :func:`dumps_json`. Where the optional C writer (``_speedups.c``) is built, it
writes model objects from a plan per class made from the same field list as the JSON hooks
(:func:`_json_fields`: wire keys, order, omit policy), reading slots directly and building no dicts; it
writes exactly orjson's bytes and leaves whatever it cannot write exactly to the pure-Python path.
"""

from __future__ import annotations

import enum
import functools
import io
import re
import threading
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import cattrs
import msgspec
import orjson

from agentmsg._codec.jsontext import (
    INT_MAX,
    INT_MIN,
    MAX_WRITABLE_DEPTH,
    REMEMBER_AFTER,
    SHARED_STRING,
    check_json_value,
    check_written_size,
    deeper_than,
    depth_error,
    depth_message,
    encode_error,
    json_value_copy,
    shares_members,
    written_copy,
    written_too_deep,
)
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import KINDS, schema_documents, validate, validate_levels
from agentmsg._native import speedups as _speedups  # the optional C writer (None: pure Python)
from agentmsg.errors import Problem, ValidationError, pointer_of

_NativeEncode = Callable[
    [object, dict[type, object], Callable[[Any], Any], Callable[[Any], bytes], "int | None"],
    "bytes | Literal[False] | None",
]
_native_encode: _NativeEncode | None = _speedups.encode if _speedups is not None else None
_NativeWrites = Callable[[object, dict[type, object], Callable[[Any], Any], Callable[[Any], bytes], "int | None"], bool]
_native_writes: _NativeWrites | None = _speedups.writes if _speedups is not None else None
_orjson_dumps = orjson.dumps
_orjson_loads = orjson.loads
_decode = msgspec.json.Decoder().decode
#: orjson refusing what is no exact JSON type (subclasses, dataclasses, dates), as the JSON check does

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


@functools.cache
def _accepted_spellings() -> dict[str, dict[str, str]]:
    """Schema title -> {camelCase wire key: accepted alternative key}, read from patternProperties (on first use:
    compiling the hooks or :func:`known_keys`, not at import)."""
    out: dict[str, dict[str, str]] = {}
    for node in _titled_objects():
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            for prop in node["properties"]:
                alt = _snake(prop)
                if alt != prop and any(re.search(p, alt) for p in patterns):
                    out.setdefault(node["title"], {})[prop] = alt
    return out


def _property_orders() -> dict[str, list[str]]:
    """Schema title -> property names in schema order (= AgentScope Java's key order)."""
    out: dict[str, list[str]] = {}
    for node in _titled_objects():
        out.setdefault(node["title"], list(node["properties"]))
    return out


_ORDERS = _property_orders()


def _generated_base(cls: type) -> type | None:
    return next((k for k in cls.__mro__ if k.__name__ in _ORDERS and k.__module__.startswith("agentmsg_models")), None)


def _is_unknown_keys(field: Any) -> bool:
    return bool(field.metadata.get("unknown_keys"))


def _wire_fields(cls: type) -> list[Any]:
    """attrs fields of a generated class that are wire keys, in wire order (the schema's property order)."""
    fields = [a for a in attrs.fields(cls) if not _is_unknown_keys(a)]
    base = _generated_base(cls)
    order = _ORDERS.get(base.__name__, []) if base is not None else []
    rank = {name: i for i, name in enumerate(order)}
    return sorted(fields, key=lambda a: rank.get(a.metadata.get("wire", a.name), len(rank)))


def known_keys(cls: type) -> frozenset[str]:
    """The keys a generated class (or its SDK subclass) declares: wire names and accepted alternative
    spellings. Any other key of its JSON object is an unknown key."""
    base = _generated_base(cls)
    alternatives = _accepted_spellings().get(base.__name__, {}) if base is not None else {}
    wires = {a.metadata.get("wire", a.name) for a in _wire_fields(cls)}
    return frozenset(wires | set(alternatives.values()))


def _has_unknown_keys_field(cls: type) -> bool:
    return any(_is_unknown_keys(a) for a in attrs.fields(cls))


#: class -> its resolved field types (a class's are read by each hook compiled for it: 163 times for 27 classes at
#: ``import agentmsg``, each resolving every string annotation again). Weak: a caller's subclass is not kept.
_HINTS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def _hints(cls: type) -> dict[str, Any]:
    """Resolved field types. Generated unions hold string forward references to classes of their own
    module (``"ToolResultBlock"``), so names are looked up in every generated module too (their class names
    are unique: a name resolves to the same class whichever of them are imported)."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = _resolve_hints(cls)
    return dict(found)


def _resolve_hints(cls: type) -> dict[str, Any]:
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


_SCALARS = (str, int, float, bool, type(None))


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


class IntegerBeyond(ValueError):
    """Raised by a structure hook for an integer field holding a whole number beyond the 64-bit range written
    with an exponent (``1e300``: JSON Schema reads it as an integer, and a field without a maximum allows it),
    which JSON is not written with: the reader says where (:func:`beyond_error`)."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


#: where :func:`whole` puts the numbers beyond 64 bits it meets while :func:`beyond_error` structures a value again
#: (None: it raises :class:`IntegerBeyond` at the first, as every reader's hook does)
_beyond_seen: threading.local = threading.local()


def whole(value: Any) -> int:
    """An integer field's number written with a fraction or an exponent (``1.0``, ``-0.0``, ``7e2``), which JSON
    Schema counts as an integer (its validation has passed, so it has no fractional part): the int it is, so that
    it is written back (as ``1``, ``0``, ``700``) and typed as the field says; AgentScope Java reads it so too."""
    if INT_MIN <= value <= INT_MAX:
        return int(value)
    seen: list[Any] | None = getattr(_beyond_seen, "found", None)
    if seen is None:
        raise IntegerBeyond(value)
    seen.append(value)  # (beyond_error's second structuring: every such number, then it goes on)
    return 0


def beyond_error(
    data: Any, exc: IntegerBeyond, kind: str, again: Callable[[], object] | None = None
) -> ValidationError:
    """The refusal of what :class:`IntegerBeyond` found in ``data`` (the value the hook was given), at its pointer.
    The hooks structure fields in the class's order, so the number they stopped at may not be the first in ``data``:
    ``again`` structures ``data`` once more (as the hook did) with :func:`whole` noting every such number and going
    on, and the first of them in document order is said, as every reader says the first bad value."""
    bad = {id(exc.value)}
    if again is not None:
        found: list[Any] = []
        _beyond_seen.found = found
        try:
            again()
        except Exception:  # (what stops it later is none of this refusal's business: the first one is said)
            pass
        finally:
            _beyond_seen.found = None
        bad.update(id(v) for v in found)
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    path: tuple[str | int, ...] = ()
    value: Any = exc.value
    while stack:  # the float objects themselves (the hook read them from ``data``), in document order
        node, at = stack.pop()
        if id(node) in bad:
            path, value = at, node
            break
        if type(node) is dict:
            stack.extend((node[k], (*at, k)) for k in reversed(node))
        elif type(node) is list:
            stack.extend((node[i], (*at, i)) for i in range(len(node) - 1, -1, -1))
    message = f"integer {value!r:.40} is outside the 64-bit range [-2**63, 2**64 - 1] JSON is written in"
    return ValidationError([Problem(pointer_of(path), "integer-range", message)], kind)


def guard_field(cls: type, name: str, check: Callable[[Any, Any], None]) -> None:
    """Hold field ``name`` of ``cls`` (a slotted subclass of a generated class) to ``check``, called with the object
    and the value before the value is set: it raises for a value the field may not be set to, or keeps what mirrors
    the field in step (``Msg.usage``'s metadata copy). A property over the field's slot, whose reads are the slot's
    own C getter. The slot is also the class's attribute ``_<name>_slot`` (:func:`slot_name`), through which the
    structure hooks set it and the C writer reads it, at a slot's cost: their values are the schema's already."""
    slot = getattr(cls, name)
    put = slot.__set__

    def set_checked(obj: Any, value: Any) -> None:
        check(obj, value)
        put(obj, value)

    setattr(cls, f"_{name}_slot", slot)
    setattr(cls, name, property(slot.__get__, set_checked, doc=slot.__doc__))


def slot_name(cls: type, name: str) -> str:
    """The attribute that reads and sets field ``name``'s slot as it is: ``name``, or the slot :func:`guard_field`
    keeps under another name."""
    alias = f"_{name}_slot"
    return alias if type(getattr(cls, alias, None)) is types.MemberDescriptorType else name


def _tag_of(cls: type) -> str:
    field = attrs.fields_dict(cls)["type"]
    return str(field.default)


def _referenced_models(tp: Any) -> Iterator[type]:
    """The attrs classes a field type refers to (through unions, lists and dicts)."""
    if attrs.has(tp):
        yield tp
        return
    for arg in get_args(tp):
        yield from _referenced_models(arg)


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

    def late(self, cls: type) -> str:
        """A global name bound to the structure hook of ``cls`` once every hook of the closure is compiled."""
        assert self.codec is not None
        key = self.name(None, "sh")
        self.codec._late.append((self.ns, key, cls))
        return key

    def structure_expr(self, tp: Any, src: str) -> str:
        if tp is int:  # 1.0 is an integer to JSON Schema: held as the int it is (see whole)
            return f"({src} if {src}.__class__ is int else {self.name(whole, 'whole')}({src}))"
        if _is_plain(tp):
            return src
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            table = self.name({m.value: m for m in tp}, "enum")
            return f"{table}[{src}]"
        assert self.codec is not None
        members = _union_members(tp)
        if members is not None:
            table = self.name(self.codec.union({_tag_of(m): m for m in members}), "union")
            return f"{table}[{src}['type']]({src})"
        if attrs.has(tp):
            return f"{self.late(tp)}({src})"
        container = self._container_expr(tp, src, self.structure_expr)
        if container is not None:
            return container
        return f"{self.name(self.codec.converter.get_structure_hook(tp))}({src}, {self.name(tp)})"

    @staticmethod
    def _container_expr(tp: Any, src: str, item_expr: Callable[[Any, str], str]) -> str | None:
        """A comprehension converting each item of a ``list[...]`` or value of a ``dict[str, ...]``."""
        if get_origin(tp) is list:
            (item,) = get_args(tp)
            return f"[{item_expr(item, '_x')} for _x in {src}]"
        if get_origin(tp) is dict:
            _, val = get_args(tp)
            return f"{{_k: {item_expr(val, '_v')} for _k, _v in {src}.items()}}"
        return None

    def unstructure_expr(self, tp: Any, src: str, copy: bool = False) -> str:
        """``src`` (a field's value, of type ``tp``) as JSON: nested models through their hooks (:data:`copy_hooks`
        when ``copy``, else :data:`unstructure_hooks`); with ``copy``, a free-form value (``Any``) is copied
        (:func:`json_copy`), so that the result shares no mutable container with the object."""
        if _is_plain(tp):
            if copy and tp not in _SCALARS and get_origin(tp) is not Literal:  # (may hold a dict or a list)
                return f"{self.name(json_copy, 'jcopy')}({src})"
            return src
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            # str-valued enums are JSON strings already (and a plain string passed by a caller works too).
            return src
        members = _union_members(tp)
        if members is not None or attrs.has(tp):
            # Dispatch on the runtime class (subclasses included), hooks cached per class.
            table = copy_hooks if copy else unstructure_hooks
            return f"{self.name(table, 'uh')}[{src}.__class__]({src})"
        container = self._container_expr(tp, src, functools.partial(self.unstructure_expr, copy=copy))
        if container is not None:
            return container
        return f"{self.name(_plain.unstructure)}({src})"


def _compile(source: str, name: str, ns: dict[str, Any]) -> Callable[..., Any]:
    code = compile(source, f"<agentmsg converter {name}>", "exec")
    exec(code, ns)
    fn: Callable[..., Any] = ns[name]
    return fn


def make_structure_fn(cls: type, codec: Codec) -> StructureFn:
    """Compile ``dict -> cls`` for a generated attrs class (input already validated), building the class
    the codec maps it to. With ``codec.keep_unknown`` the keys the class does not declare go to
    ``unknown_keys``; otherwise it is None."""
    target = codec.build_as.get(cls, cls)
    hints = _hints(cls)
    alternatives = _accepted_spellings().get(cls.__name__, {})
    gen = _Codegen(codec)
    gen.ns.update(_new=object.__new__, _target=target)
    lines = ["def structure(d, _type=None):"]
    if cls.__name__ == "Msg" and codec.msg_roles:
        gen.ns["_by_role"] = codec.msg_roles
        lines.append("    o = _new(_by_role[d['role']])")
    else:
        lines.append("    o = _new(_target)")
    for a in attrs.fields(cls):
        slot = slot_name(target, a.name)  # (a guarded field through its slot: guard_field)
        if _is_unknown_keys(a):
            if codec.keep_unknown:
                known = gen.name(known_keys(cls), "known")
                lines.append(f"    x = {{k: v for k, v in d.items() if k not in {known}}}")
                lines.append(f"    o.{slot} = x or None")
            else:
                lines.append(f"    o.{slot} = None")
            continue
        wire = a.metadata.get("wire", a.name)
        tp, optional = _strip_optional(hints[a.name])
        if a.default is attrs.NOTHING:
            lines.append(f"    o.{slot} = {gen.structure_expr(tp, f'd[{wire!r}]')}")
            continue
        alt = alternatives.get(wire)
        get = f"d.get({wire!r})" if alt is None else f"d.get({wire!r}, d.get({alt!r}))"
        if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            factory = gen.name(a.default.factory)
            lines.append(f"    v = {get}")
            lines.append(f"    o.{slot} = {factory}() if v is None else {gen.structure_expr(tp, 'v')}")
        elif optional or a.default is None:
            expr = gen.structure_expr(tp, "v")
            if expr == "v":
                lines.append(f"    o.{slot} = {get}")
            else:
                lines.append(f"    v = {get}")
                lines.append(f"    o.{slot} = v if v is None else {expr}")
        elif get_origin(tp) is Literal:  # the union's tag: the schema fixes it with const
            lines.append(f"    o.{slot} = {a.default!r}")
        else:
            default = gen.name(a.default, "default")
            lines.append(f"    v = {get}")
            lines.append(f"    o.{slot} = {default} if v is None else {gen.structure_expr(tp, 'v')}")
    lines.append("    return o")
    return _compile("\n".join(lines), "structure", gen.ns)


def _json_fields(cls: type) -> list[tuple[Any, str, Any, bool, bool]]:
    """The keys of ``cls`` as written, in schema order: (attrs field, wire key, its type without None,
    optional, omitted when None: optional and not nullable, the null/omit policy)."""
    hints = _hints(cls)
    out = []
    for a in _wire_fields(cls):
        tp, is_opt = _strip_optional(hints[a.name])
        omit_when_none = (is_opt or a.default is None) and not a.metadata.get("nullable", False)
        out.append((a, a.metadata.get("wire", a.name), tp, is_opt, omit_when_none))
    return out


# What a field holds (the C writer's EX_* codes, _speedups.c): a value of another type is refused. EX_FREE (the C
# writer's plans only): a free-form value, of exact JSON types only (else the Python hooks say why).
EX_ANY, EX_STR, EX_INT, EX_NUM, EX_BOOL, EX_DICT, EX_LIST, EX_MODEL, EX_MODELS, EX_NULL = (*range(9), 16)
EX_FREE = 32


def _enum_of(tp: Any) -> type[enum.Enum] | None:
    """The enum class a field of type ``tp`` holds (its members, or plain strings of their values), or None."""
    return tp if isinstance(tp, type) and issubclass(tp, enum.Enum) else None


def _has_any(tp: Any) -> bool:
    return tp is Any or any(_has_any(a) for a in get_args(tp))


def expect_of(a: Any, tp: Any, is_opt: bool) -> int:
    """The EX_* code of a field of type ``tp`` (| EX_NULL when None is written for it: optional or nullable)."""
    null = EX_NULL if (is_opt or a.default is None or a.metadata.get("nullable", False)) else 0
    origin = get_origin(tp)
    if tp is str or origin is Literal or (isinstance(tp, type) and issubclass(tp, str)):
        code = EX_STR
    elif tp is bool:
        code = EX_BOOL
    elif tp is int:
        code = EX_INT
    elif tp is float:
        code = EX_NUM
    elif origin is dict:
        code = EX_DICT
    elif origin is list:
        (item,) = get_args(tp)
        code = EX_MODELS if (_union_members(item) is not None or attrs.has(item)) else EX_LIST
    elif _union_members(tp) is not None or attrs.has(tp):
        code = EX_MODEL
    else:
        code = EX_ANY
    return code | null


class WrongValue(TypeError):
    """Raised by a writer hook for a field whose value its schema does not allow (a wrong type, NaN in a
    free-form field): :func:`refusal` then says where and why, as a ValidationError."""


def _is_model_obj(value: Any) -> bool:
    return value.__class__ in json_hooks or _is_model(value.__class__)


def _holds(value: Any, code: int) -> bool:
    """Whether ``value`` has the type of EX_* ``code`` (the Python form of the C writer's ``expected``)."""
    if value is None:
        return bool(code & EX_NULL)
    code &= ~EX_NULL
    if code == EX_STR:
        return isinstance(value, str)
    if code == EX_INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if code == EX_NUM:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if code == EX_BOOL:
        return isinstance(value, bool)
    if code == EX_DICT:
        return isinstance(value, dict)
    if code == EX_LIST:
        return isinstance(value, list)
    if code == EX_MODEL:
        return _is_model_obj(value)
    if code == EX_MODELS:
        return isinstance(value, list) and all(map(_is_model_obj, value))
    return True


def free_copy(value: Any, name: str) -> Any:
    """A free-form value (metadata, a tool's input, unknown keys) copied as :func:`json_copy` copies it, once it is
    found to be JSON as the constructors take it (:func:`~agentmsg._codec.jsontext.check_json_value`: no tuple, no
    model object, no NaN, no integer beyond 64 bits, ...); else :class:`WrongValue` naming the field ``name``
    (:func:`refusal` then says what and where, as the constructors do): :func:`~agentmsg._codec.jsontext.json_value_copy`,
    whose common case is two C passes, the check's own."""
    cls = value.__class__
    if (cls is dict or cls is list) and not value:
        return cls()
    if value is None:
        return None
    try:
        return json_value_copy(value)
    except ValidationError:
        raise WrongValue(name) from None


def _free_json(value: Any) -> bool:
    """Whether a free-form value is JSON as the constructors take it (what :func:`free_copy` checks, no copy): what the JSON
    writer's hooks ask of it (orjson would write a tuple as an array, a model object through its hook)."""
    try:
        check_json_value(value)
    except ValidationError:
        return False
    return True


_FAST_CLASS = {EX_STR: "str", EX_INT: "int", EX_BOOL: "bool", EX_DICT: "dict", EX_LIST: "list"}


def _check_lines(gen: _Codegen, a: Any, tp: Any, is_opt: bool, src: str, indent: str, copy: bool = False) -> list[str]:
    """Lines raising :class:`WrongValue` when ``src`` (the field's value) is not what the field holds. ``copy``: a
    free-form value is replaced by its copy (:func:`free_copy`, which checks it)."""
    code = expect_of(a, tp, is_opt)
    bare = code & ~EX_NULL
    holds, wrong = gen.name(_holds, "holds"), gen.name(WrongValue, "wrong")
    fast = _FAST_CLASS.get(bare)
    enum_type = _enum_of(tp)
    if enum_type is not None:
        # a member, or a plain string that is one of its values (a value changed after construction to another
        # string is no member: the schema's enum refuses it, and so does the writer)
        values = gen.name(frozenset(m.value for m in enum_type), "values")
        fast = f"{gen.name(enum_type, 'enum')} and ({src}.__class__ is not str or {src} not in {values})"
    elif bare == EX_NUM:
        fast = f"float and {src}.__class__ is not int"
    elif bare == EX_MODEL:
        fast = None
        test = f"{src}.__class__ not in {gen.name(json_hooks, 'models')}"
    if bare == EX_MODEL:
        pass
    elif bare == EX_MODELS:
        models = gen.name(json_hooks, "models")
        test = f"not ({src}.__class__ is list and {models}.keys() >= set(map(type, {src})))"
    elif fast is not None:
        test = f"{src}.__class__ is not {fast}"
    else:
        test = "True"
    if code & EX_NULL and test != "True":
        test += f" and {src} is not None"
    if enum_type is not None:  # (a plain string of a value holds: not asked of _holds, which takes any string)
        lines = [f"{indent}if {test}: raise {wrong}({a.name!r})"]
    else:
        lines = [f"{indent}if {test} and not {holds}({src}, {code}): raise {wrong}({a.name!r})"]
    if _has_any(tp):  # a free-form value: JSON as constructors take it (no tuple, model object, NaN, ...)
        if copy:
            lines.append(f"{indent}{src} = {gen.name(free_copy, 'fcopy')}({src}, {a.name!r})")
        else:
            lines.append(f"{indent}if {src} and not {gen.name(_free_json, 'free')}({src}): raise {wrong}({a.name!r})")
    return lines


def _unstructure_source(cls: type, shallow: bool, check: bool = True, copy: bool = False) -> tuple[str, dict[str, Any]]:
    """Source of ``cls -> dict`` with wire names, schema key order and the null/omit policy, then the
    unknown keys. ``shallow`` leaves nested models and lists of them as they are (orjson's ``default``
    handles them one at a time); otherwise they are unstructured too (a whole dict, for ``to_dict``).
    ``check``: raise :class:`WrongValue` for a field whose value the schema does not allow (a wrong type,
    NaN or infinity in a free-form field), as the C writer gives up on it. ``copy`` (not ``shallow``): free-form
    values (metadata, a tool's input, unknown keys) are copied (:func:`json_copy`), nested models through
    :data:`copy_hooks`: the dict shares no mutable container with the object (``to_dict``)."""
    gen = _Codegen()
    # Keys are emitted in schema order; a field omitted when None breaks the single dict literal.
    body = ["def unstructure(o):"]
    fields = _json_fields(cls)
    # each field read once: into a local when it is checked first
    # (a guarded field through its slot: guard_field)
    read = {a.name: (f"_v{i}" if check else f"o.{slot_name(cls, a.name)}") for i, (a, *_rest) in enumerate(fields)}
    if check:
        for a, _wire, tp, is_opt, _omit in fields:
            body.append(f"    {read[a.name]} = o.{slot_name(cls, a.name)}")
            body.extend(_check_lines(gen, a, tp, is_opt, read[a.name], "    ", copy and not shallow))
        if _has_unknown_keys_field(cls):
            name = next(a.name for a in attrs.fields(cls) if _is_unknown_keys(a))
            free, wrong = gen.name(_free_json, "free"), gen.name(WrongValue, "wrong")
            body.append(f"    x = o.{name}")
            # (copied, and so checked, as the dict is made: free_copy)
            json_test = "" if copy and not shallow else f" or not {free}(x)"
            body.append(f"    if x and (x.__class__ is not dict{json_test}): raise {wrong}({name!r})")
            # a declared key set in them after construction (the constructors refuse one) would replace the field
            known = gen.name(known_keys(cls), "known")
            body.append(f"    if x and not {known}.isdisjoint(x): raise {wrong}({name!r})")
    body.append("    d = {")
    in_literal = True
    for a, wire, tp, is_opt, omit_when_none in fields:
        src = read[a.name]
        field_copy = copy and not (check and _has_any(tp))  # (else copied by its check: free_copy)
        if omit_when_none:
            if in_literal:
                body.append("    }")
                in_literal = False
            body.append(f"    v = {src}")
            value = "v" if shallow else gen.unstructure_expr(tp, "v", field_copy)
            body.append(f"    if v is not None: d[{wire!r}] = {value}")
            continue
        expr = src if shallow else gen.unstructure_expr(tp, src, field_copy)
        if is_opt and expr != src:
            expr = f"(None if {src} is None else {gen.unstructure_expr(tp, src, field_copy)})"
        if in_literal:
            body.append(f"        {wire!r}: {expr},")
        else:
            body.append(f"    d[{wire!r}] = {expr}")
    if in_literal:
        body.append("    }")
    if _has_unknown_keys_field(cls):
        name = next(a.name for a in attrs.fields(cls) if _is_unknown_keys(a))
        body.append(f"    x = o.{name}")
        update = f"d.update({gen.name(free_copy, 'fcopy')}(x, {name!r}))" if copy else "d.update(x)"
        body.append(f"    if x: {update}")
    body.append("    return d")
    return "\n".join(body), gen.ns


def make_unstructure_fn(cls: type, copy: bool = False) -> UnstructureFn:
    """Compile ``cls -> dict`` (nested models unstructured too); ``copy``: sharing no mutable container with the
    object (see :func:`_unstructure_source`)."""
    source, ns = _unstructure_source(cls, shallow=False, copy=copy)
    return _compile(source, "unstructure", ns)


def json_copy(value: Any) -> Any:
    """A free-form JSON value (metadata, a tool's input, unknown keys) with its dicts and lists copied, at every
    depth (strings, numbers, booleans and null are immutable: shared): what ``to_dict`` returns, so that changing
    the dict never changes the object, nor the object the dict. One C round trip (orjson writes it, msgspec reads
    it back); an empty container is copied as such. What orjson cannot write raises ``orjson.JSONEncodeError``
    (:func:`dict_of` then says why); a model object in it is written by its hook."""
    cls = value.__class__
    if cls is dict or cls is list:
        return _decode(_orjson_dumps(value, default=json_default)) if value else cls()
    if cls is str or cls is int or cls is float or cls is bool or value is None:
        return value
    return _decode(_orjson_dumps(value, default=json_default))


def make_json_fn(cls: type, check: bool = True) -> UnstructureFn:
    """Compile ``cls -> dict`` for orjson's ``default``: nested models are left for orjson to hand back.
    ``check=False``: no type checks (what :func:`refusal` reads to say what is wrong)."""
    source, ns = _unstructure_source(cls, shallow=True, check=check)
    return _compile(source, "unstructure", ns)


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


# Unstructuring: one cattrs converter and one hook table for every codec (it depends only on the class).
_plain = cattrs.Converter()
_plain.register_unstructure_hook_factory(_is_model, make_unstructure_fn)

#: class -> compiled unstructure hook (wire names, key order, null/omit policy), filled on first use.
unstructure_hooks: dict[type, UnstructureFn] = _HookCache(_plain.get_unstructure_hook)

#: class -> compiled unstructure hook whose dict shares no mutable container with the object (``to_dict``,
#: ``block_to_dict``: free-form values copied, :func:`json_copy`), filled on first use.
copy_hooks: dict[type, UnstructureFn] = _HookCache(functools.partial(make_unstructure_fn, copy=True))

#: class -> compiled one-level hook for orjson's ``default`` (a plain dict: it is read for every object).
json_hooks: dict[type, UnstructureFn] = {}


#: class -> plan of the C writer (agentmsg._speedups), for the classes of json_hooks (a plain dict: the
#: writer looks every object's class up in it).
native_plans: dict[type, object] = {}


def _native_plan(cls: type) -> object:
    """The C writer's plan of ``cls``: the same keys, order and omit policy as its JSON hook."""
    assert _speedups is not None
    fields = [
        (slot_name(cls, a.name), wire, omit, expect_of(a, tp, opt) | (EX_FREE if _has_any(tp) else 0), _enum_of(tp))
        for a, wire, tp, opt, omit in _json_fields(cls)
    ]
    unknown = next((a.name for a in attrs.fields(cls) if _is_unknown_keys(a)), None)
    return _speedups.make_plan(cls, fields, unknown, _own_class(cls))


def _own_class(cls: type) -> bool:
    """Whether ``cls`` is agentmsg's own (the SDK's or a generated model class), or a caller's subclass of a
    message class (code reads messages by their role, not their class), not a caller's subclass of another model
    class (a block, a source: the formatters tell them apart by class): the C writer's check
    (:func:`surely_writes`) gives up on instances of the others."""
    if cls.__module__.partition(".")[0] in ("agentmsg", "agentmsg_models"):
        return True
    base = _generated_base(cls)
    return base is not None and base.__module__ == "agentmsg_models.msg"


def _add_json_hook(cls: type) -> UnstructureFn:
    hook = json_hooks[cls] = make_json_fn(cls)
    if _speedups is not None:
        native_plans[cls] = _native_plan(cls)
    return hook


def json_default(obj: Any) -> Any:
    """orjson's ``default``: one model object as a dict of its wire keys (nested models left as objects)."""
    try:
        return json_hooks[obj.__class__](obj)
    except KeyError:
        if not _is_model(obj.__class__):
            raise TypeError(f"{type(obj).__name__} is not a JSON value") from None
        return _add_json_hook(obj.__class__)(obj)


#: class -> one-level hook without checks: what a model object holds, as it is (the error path's reading).
raw_json_hooks: dict[type, UnstructureFn] = _HookCache(lambda cls: make_json_fn(cls, check=False))


def raw_json_default(obj: Any) -> Any:
    """:func:`json_default` without the checks: a model object's fields as they are (for :func:`refusal`)."""
    if not _is_model(obj.__class__):
        raise TypeError(f"{type(obj).__name__} is not a JSON value")
    return raw_json_hooks[obj.__class__](obj)


def _schema_kind(value: Any) -> str | None:
    """The schema kind (agentmsg.KINDS) of a model object: its generated module's name (``content_block`` is
    ``content-block``), or None."""
    base = _generated_base(value.__class__) if _is_model(value.__class__) else None
    name = base.__module__.rsplit(".", 1)[-1].replace("_", "-") if base is not None else None
    return name if name in KINDS else None


def refusal(value: Any, exc: Exception, kind: str | None = None) -> ValidationError:
    """Why ``value`` (model objects, JSON values holding them) cannot be written: the first value JSON cannot
    hold (NaN, a cycle, an object, ...; rules of :func:`encode_error`), else what its schema says of its
    fields as they are (a number for an id is rule ``type`` at ``/id``). Bounded as encode_error is."""
    error = encode_error(value, raw_json_default, exc, kind)
    if error.problems[0].rule != "json-value" or not error.problems[0].message.startswith("cannot be written"):
        return error
    wrong = _wrong_field(value)
    if wrong is not None and wrong[1] == "unknown-key":  # (which the schema would take for the field's own value)
        return ValidationError([Problem(*wrong)], kind)
    schema_kind = kind if kind in KINDS else _schema_kind(value)
    if schema_kind is not None:
        try:
            validate(_plain_of(value), schema_kind)
        except ValidationError as found:
            return type(found)(found.problems, kind)
    return error if wrong is None else ValidationError([Problem(*wrong)], kind)


def _wrong_field(value: Any) -> tuple[str, str, str] | None:
    """(pointer, rule, message) of the first field of a model object in ``value`` that its checked hook refuses
    (:class:`WrongValue`) though its JSON form is one the schema allows (a block set as a dict, usage as a dict,
    unknown keys as pairs); None when there is none. Visits each value once (``value`` holds no cycle: the
    caller's :func:`encode_error` found none)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if _is_model_obj(node):
            cls = node.__class__
            hook = json_hooks[cls] if cls in json_hooks else _add_json_hook(cls)
            try:
                hook(node)
            except WrongValue as exc:
                name = str(exc.args[0]) if exc.args else ""
                fields = {a.name: wire for a, wire, *_rest in _json_fields(cls)}
                at = path if name not in fields else (*path, fields[name])
                held, label = getattr(node, name, None), f"{cls.__name__}.{name}"
                declared = known_keys(cls).intersection(held) if isinstance(held, dict) else None
                if isinstance(held, dict) and declared:  # unknown keys holding a declared key, said as constructors do
                    key = next(k for k in held if k in declared)
                    return (
                        pointer_of((*path, key)),
                        "unknown-key",
                        f"{key!r} is a declared key of {cls.__name__}: set the field, not unknown_keys",
                    )
                free = name not in fields or any(
                    a.name == name and _has_any(tp) for a, _w, tp, *_r in _json_fields(cls)
                )
                if free and isinstance(held, dict):  # a free-form value (unknown keys too): said as constructors say it
                    try:
                        check_json_value(held)
                    except ValidationError as found:
                        problem = found.problems[0]
                        base = pointer_of(at if name in fields else path)
                        return base + problem.pointer, problem.rule, problem.message
                if type(held) is list and name in fields:  # a list of models: the first item that is none
                    i = next((i for i, item in enumerate(held) if not _is_model_obj(item)), None)
                    if i is not None:
                        held, label, at = held[i], f"{label}[{i}]", (*at, i)
                return (
                    pointer_of(at),
                    "type",
                    (
                        f"{label} holds a {type(held).__name__}, which is not what the field holds "
                        "(a value set after construction? Build it with the SDK's classes)"
                    ),
                )
            except Exception:  # (what the JSON-value check says: not this walk's)
                pass
            node = raw_json_hooks[cls](node)
        if isinstance(node, dict):
            stack.extend((child, (*path, str(key))) for key, child in reversed(list(node.items())))
        elif isinstance(node, (list, tuple)):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(node))))
    return None


def _plain_of(value: Any) -> Any:
    """``value`` with its model objects as dicts (unchecked; the value writes: encode_error found nothing)."""
    return _orjson_loads(_orjson_dumps(value, default=raw_json_default))


#: the classes of :func:`prepare_json` whose JSON hooks are not compiled yet (an iterable per call, in order).
_pending: list[Iterable[type]] = []
_preparing = threading.Lock()


def prepare_json(classes: Iterable[type]) -> None:
    """Have the JSON hooks (and the C writer's plans) of ``classes``, the hot classes, compiled before the first
    write (:func:`dumps_json`, :func:`surely_writes`), so that writing never compiles one class at a time: at the
    first write, not at import (compiling them is a good part of ``import agentmsg``). ``classes`` is read then."""
    _pending.append(classes)


def _prepare_pending() -> None:
    """Compile the pending JSON hooks (once: a second caller waits for the first, then finds none)."""
    with _preparing:
        while _pending:
            for cls in _pending[0]:
                if cls not in json_hooks and _is_model(cls):
                    _add_json_hook(cls)
            del _pending[0]  # (after compiling: a thread that still sees it pending waits above)


def dumps_json(value: Any, kind: str | None = None) -> bytes:
    """``value`` (model objects, and JSON values holding them) as compact JSON: what
    ``orjson.dumps(value, default=json_default)`` writes. The C writer (agentmsg._speedups, when built and
    not turned off by ``AGENTMSG_PURE_PYTHON=1``) writes the same bytes faster, and leaves anything it does
    not write exactly (other types, values JSON cannot hold) to orjson. A value JSON cannot hold raises
    :class:`~agentmsg.ValidationError` naming the rule (``max-depth``, ``integer-range``, ...); one sharing its members
    (a message changed after construction) written past ``limits.max_bytes``, :class:`~agentmsg.SizeLimitError`
    (``max-bytes``) as the constructors say it, the C writer stopped at that limit (in pure Python, the JSON hooks'
    check of each free-form value)."""
    if _pending:
        _prepare_pending()
    if _native_encode is not None:
        out = _native_encode(value, native_plans, json_default, _orjson_dumps, limits.max_bytes)
        if out is False:
            # (it stopped past limits.max_bytes, or at a part of a free-form value met twice: a message changed after
            # construction to share its members, a list of the same list twice 40 levels down, is 2**40 values
            # written; refused as the constructors refuse it, else written below, its text no longer than its objects)
            check_written_size(value, raw_json_default, kind)
        elif out is not None:
            if limits.max_depth < MAX_WRITABLE_DEPTH and written_too_deep(out):  # (the readers' limit, lowered)
                raise refusal(value, ValueError(depth_message()), kind)
            return out
    try:
        out = _dumps_long_apart(value)
    except orjson.JSONEncodeError as exc:
        if not isinstance(exc.__cause__, _MetAgain):
            raise refusal(value, exc, kind) from None
        # (a model object or a part of a field met again: a message changed after construction to hold the same
        # block twice, 40 levels down, is 2**40 blocks written, the same value in twenty tool inputs twenty times
        # its text; refused as the C writer's caller refuses it, else written, its text within limits.max_bytes)
        check_shared_size(value, kind)
        out = _dumps_long_apart(value, watch=False)
    if limits.max_depth < MAX_WRITABLE_DEPTH and written_too_deep(out):
        raise refusal(value, ValueError(depth_message()), kind)
    return out


class _MetAgain(Exception):
    """Raised by :func:`_dumps_long_apart`'s ``default`` for a model object, or a part of a field, met again: the
    caller counts the value's size without writing it (:func:`check_shared_size`)."""


#: A model object's string field longer than this (in characters) is written by :func:`_dumps_long_apart`
#: :data:`_SLICE` characters at a time.
_LONG = 1 << 16
_SLICE = 1 << 16


def _dumps_long_apart(value: Any, watch: bool = True) -> bytes:
    """``orjson.dumps(value, default=json_default)``, the same bytes, without orjson's reserve for a long string:
    orjson sets aside about 12 bytes per character of a string before it escapes it, so a message holding 16 MiB of
    text peaked at 16 times its JSON (tracemalloc). Each long string field of a model object is left out of what
    orjson writes (a marker, ``\\0<n>\\0``, where it goes: orjson writes no raw NUL) and written into the output
    a slice at a time, each slice escaped by orjson; the output grows in place (``BytesIO``, whose ``getvalue``
    hands its buffer over): it peaks at about 1.1 times the JSON. (The C writer, where built, writes strings
    without such a reserve.) ``watch``: a model object given again past the first REMEMBER_AFTER, or a container or
    a string of SHARED_STRING characters or more of a field met again (in another tool call's input too: each
    field's own check looks at it alone), stops it (:class:`_MetAgain`, orjson's JSONEncodeError's cause), as the C
    writer stops at its byte cap."""
    longs: list[str] = []
    seen: set[int] = set()  # (the ids of the model objects past the first REMEMBER_AFTER: held by ``value``)
    left = [REMEMBER_AFTER if watch else -1]
    # (the ids of the containers and long strings of the fields written: one met again, in another tool call's input
    # or the same one, stops it too; each field's own check looks at that field alone)
    met: set[int] = set()
    long = SHARED_STRING

    def default(obj: Any) -> Any:
        if left[0] <= 0 and watch:
            if id(obj) in seen:
                raise _MetAgain
            seen.add(id(obj))
        else:
            left[0] -= 1
        d = json_default(obj)
        if watch:
            for v in d.values():
                t = v.__class__
                if (t is dict or t is list) and v and shares_members(v, met):
                    raise _MetAgain
                if t is str and len(v) >= long:
                    if id(v) in met:
                        raise _MetAgain
                    met.add(id(v))
        for v in d.values():  # (a hook's dict: read once for each object, so the common case is a plain loop)
            if v.__class__ is str and len(v) > _LONG:
                break
        else:
            return d
        for key, v in d.items():
            if v.__class__ is str and len(v) > _LONG:
                d[key] = orjson.Fragment(b"\0%d\0" % len(longs))  # (a value replaced: the dict keeps its size)
                longs.append(v)
        return d

    skeleton = _orjson_dumps(value, default=default)
    if not longs:
        return skeleton
    parts = skeleton.split(b"\0")
    if len(parts) != 2 * len(longs) + 1 or any(parts[2 * i + 1] != b"%d" % i for i in range(len(longs))):
        return _orjson_dumps(value, default=json_default)  # (a NUL of a caller's orjson.Fragment: written whole)
    out = io.BytesIO()
    for i, text in enumerate(longs):
        out.write(parts[2 * i])
        out.write(b'"')
        for at in range(0, len(text), _SLICE):
            out.write(memoryview(_orjson_dumps(text[at : at + _SLICE]))[1:-1])
        out.write(b'"')
    out.write(parts[-1])
    return out.getvalue()


def surely_writes(value: Any) -> bool:
    """True when :func:`dumps_json` writes ``value`` without a refusal and every model object in it is of one of
    agentmsg's own classes (no caller's subclass): the C writer's check, which walks it as it writes it and writes
    nothing (about half the time of writing it). False is no verdict (no C writer, a value it leaves to orjson, a
    subclass, a class not written yet, one that may be written past ``limits.max_bytes``, its strings counted 6 bytes a
    character): call :func:`dumps_json`, which writes it or says why not."""
    if _pending:
        _prepare_pending()
    return _native_writes is not None and _native_writes(
        value, native_plans, json_default, _orjson_dumps, limits.max_bytes
    )


def dict_of(value: Any, kind: str, copy: bool = True) -> Any:
    """``unstructure_hooks`` of a model object (``to_dict``), refusing what :func:`dumps_json` refuses: a field
    set to a value its schema does not allow (:class:`WrongValue`), a free-form value orjson cannot write (an
    integer beyond 64 bits in metadata), a value nested too deep. ``copy`` (the default, what callers are given):
    the dict shares no mutable container with ``value`` (:data:`copy_hooks`); without it (the SDK's own reading,
    e.g. a constructor validating what it built) free-form values are the object's own."""
    try:
        out = (copy_hooks if copy else unstructure_hooks)[value.__class__](value)
    except (WrongValue, orjson.JSONEncodeError) as exc:
        raise refusal(value, exc, kind) from None
    except RecursionError:  # only an object changed after construction can be this deep
        raise depth_error(kind) from None
    max_depth = limits.max_depth
    if max_depth < MAX_WRITABLE_DEPTH and deeper_than(out, max_depth):  # (the readers' limit, when lowered)
        raise refusal(value, ValueError(depth_message()), kind)
    return out


def validate_object(value: Any, kind: str, shared: bool = False) -> None:
    """A constructor's check of the object it built: :func:`validate` of its dict (``dict_of(value, kind,
    copy=False)``). ``shared``: the object holds another model object twice (a tool result whose output holds the
    same block twice, each holding the same block twice, 40 levels down: 2**40 blocks written), whose dict written
    out would cost every path. Its dict is then made sharing what the object shares (:func:`written_copy`),
    refused when written longer than ``limits.max_bytes`` (:class:`~agentmsg.SizeLimitError`, ``max-bytes``, at the
    deepest part over the limit, as the writers refuse it), else validated level by level, each distinct level once
    (:func:`validate_levels`): in time linear in the objects it holds, not in its text."""
    if not shared:
        validate(dict_of(value, kind, copy=False), kind)
        return
    if _pending:
        _prepare_pending()
    try:
        plain = written_copy(value, _checked_or_as_is)
    except ValidationError as exc:  # (a cycle: a tool result changed after construction to hold itself)
        raise exc.under("", kind) from None
    validate_levels(plain, kind)


def check_shared_size(value: Any, kind: str | None) -> None:
    """For a writer of a model object changed after construction to hold another one twice (a message whose tool
    result's output was set to the same block twice, each holding the same block twice, 40 levels down): refused,
    :class:`~agentmsg.SizeLimitError` (``max-bytes``) at the deepest part over the limit, when written longer than
    ``limits.max_bytes``, as the constructors refuse it (:func:`check_written_size`, linear in its distinct objects),
    before anything writes it path by path. A cycle: :class:`~agentmsg.ValidationError`, rule ``cycle``."""
    if _pending:
        _prepare_pending()
    try:
        check_written_size(value, raw_json_default, kind)
    except ValidationError as exc:
        raise exc.under("", kind) from None


def _checked_or_as_is(obj: Any) -> Any:
    """:func:`json_default`, else (a field set to a value its schema does not allow) the object's fields as they are,
    of which the schema then says what is wrong, as of the same object unshared (:func:`refusal`)."""
    try:
        return json_default(obj)
    except WrongValue:
        return raw_json_default(obj)


def reachable_models(cls: type, known: Mapping[type, Any] | None = None) -> set[type]:
    """``cls`` and every model class its fields reach, through fields' types, except those in ``known`` (and
    what is reached only through them)."""
    todo, seen = [cls], set()
    while todo:
        klass = todo.pop()
        if klass in seen or (known is not None and klass in known):
            continue
        seen.add(klass)
        hints = _hints(klass)
        for a in attrs.fields(klass):
            todo.extend(_referenced_models(hints[a.name]))
    return seen


class Codec:
    """Structure hooks that build ``build_as[generated class]`` (an SDK subclass adding behaviour, no
    fields) instead of the generated class, and, for ``Msg``, the class ``msg_roles[role]``.
    ``keep_unknown``: collect the keys a class does not declare into its ``unknown_keys`` field (else None).

    Hooks are compiled per class together with every class they can reach, and call each other directly
    (plain dicts and globals, no lookups through dict subclasses on the hot path)."""

    def __init__(
        self, build_as: Mapping[type, type], msg_roles: Mapping[str, type] | None = None, *, keep_unknown: bool = False
    ) -> None:
        self.build_as = dict(build_as)
        self.msg_roles = dict(msg_roles or {})
        self.keep_unknown = keep_unknown
        #: generated class -> compiled structure hook.
        self.structure_hooks: dict[type, StructureFn] = {}
        self._late: list[tuple[dict[str, Any], str, type]] = []
        self._unions: list[tuple[dict[str, StructureFn], dict[str, type]]] = []
        self._compiling = 0

    @functools.cached_property
    def converter(self) -> cattrs.Converter:
        """The cattrs converter of the types the compiled hooks leave to cattrs (made when a hook first needs it)."""
        converter = cattrs.Converter()
        converter.register_structure_hook_factory(_is_model, self.hook)
        return converter

    def hook(self, cls: type) -> StructureFn:
        """The structure hook of a generated class (compiled with every class it reaches on first use)."""
        found = self.structure_hooks.get(cls)
        if found is not None:
            if not self._compiling and (self._late or self._unions):  # (a first build that failed: bind the rest)
                self._bind()
            return found
        seen = reachable_models(cls, self.structure_hooks)
        self._compiling += 1
        try:
            for klass in sorted(seen, key=lambda k: (k.__module__, k.__qualname__)):
                self.structure_hooks[klass] = make_structure_fn(klass, self)
        finally:
            self._compiling -= 1
        if not self._compiling:
            self._bind()
        return self.structure_hooks[cls]

    def _bind(self) -> None:
        """Fill the late names and union tables (compiling their classes where needed)."""
        # An entry is taken off its list only once it is filled, or put back when filling it raised (a first decode
        # deep in the stack: RecursionError): a hook kept with its names or table empty raised KeyError for ever.
        while self._late or self._unions:
            if self._late:
                late = self._late.pop()
                ns, key, klass = late
                try:
                    ns[key] = self.hook(klass)
                except BaseException:
                    self._late.append(late)
                    raise
            else:
                union = self._unions.pop()
                table, classes = union
                try:
                    table.update({tag: self.hook(klass) for tag, klass in classes.items()})
                except BaseException:
                    self._unions.append(union)
                    raise

    def union(self, classes: dict[str, type]) -> dict[str, StructureFn]:
        """``type`` tag -> structure hook of that member, for a tagged union of generated classes (a plain
        dict, filled once the members are compiled)."""
        table: dict[str, StructureFn] = {}
        self._unions.append((table, dict(classes)))
        if not self._compiling:
            self._bind()
        return table
