"""JSON text <-> parsed values, with the SDK's limits and errors (never a bare decode error).

The one JSON entry point of the codec. What it accepts can always be written back:

* text is parsed with msgspec, which keeps integers exact (orjson would turn an integer beyond 64 bits into
  a float), rejects invalid UTF-8 and lone surrogate escapes;
* :func:`check_json_value` holds every parsed value (and every dict handed to the SDK) to what orjson
  writes: dicts with string keys, lists, strings without lone surrogates, integers in
  [-2**63, 2**64 - 1], finite floats, booleans and null, nested at most ``limits.max_depth`` deep;
* :func:`dumps` turns any failure to write into a :class:`ValidationError` naming the rule.

Rules: ``json`` (not JSON text), ``max-bytes``, ``max-depth`` (:class:`SizeLimitError`), ``integer-range``,
``lone-surrogate``, ``json-value`` (a Python value that is not JSON), ``duplicate-key`` (a key twice in one object,
which the parsers resolve by keeping the last value: found by :func:`duplicate_keys`, refused where asked).
"""

from __future__ import annotations

import codecs
import dataclasses
import enum
import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec
import orjson

from agentmsg._codec.limits import MAX_WRITABLE_DEPTH, limits
from agentmsg._native import speedups
from agentmsg.errors import Problem, SizeLimitError, ValidationError, pointer_of, short_repr

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_WRITABLE_DEPTH",
    "JsonInput",
    "TooDeep",
    "check_json_value",
    "check_value_size",
    "check_written_size",
    "container",
    "deep_json_text",
    "deep_pointer",
    "deep_value_pointer",
    "deeper_than",
    "depth_error",
    "depth_message",
    "dumps",
    "duplicate_keys",
    "encode_error",
    "exact_key",
    "has_lone_surrogate",
    "json_type",
    "json_value_copy",
    "loads",
    "loads_bounded",
    "oversized_at",
    "parse_fast",
    "plainly_written",
    "shares_members",
    "surrogate_words",
    "undigited",
    "unreadable",
    "unwritten_at",
    "utf8_size",
    "writable",
    "written_copy",
    "written_too_deep",
    "written_twice",
]

JsonInput = str | bytes | bytearray | memoryview

#: The integer range orjson writes (signed 64-bit minimum, unsigned 64-bit maximum).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

_decode = msgspec.json.Decoder().decode
_orjson_dumps = orjson.dumps
_orjson_loads = orjson.loads
_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_SURROGATE = re.compile("[\ud800-\udfff]")
_CHUNK = 1 << 20
#: the C writer's dry run (``_speedups.writes``; None: pure Python), and the depth below which it nests every
#: container it says it writes (``DEPTH_LIMIT`` in ``_speedups.c``)
_native_writes = speedups.writes if speedups is not None else None
_native_encode = speedups.encode if speedups is not None else None
_NATIVE_DEPTH = 240
_NO_PLANS: dict[type, object] = {}


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone UTF-16 surrogate (it cannot be written as UTF-8), without a copy."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def as_given(value: Any) -> Any:
    """A value given to a reader of parsed JSON as the readers take it (``Msg.from_dict``, ``block_from_dict``, the
    reducer, ``validate``): a mapping that is no dict (a ``MappingProxyType``, an ``OrderedDict``, a dict subclass)
    as the dict of its items; anything else as it is. Only the value given: a mapping nested in it stays what it is
    (no JSON value: :func:`check_json_value` refuses it at its pointer)."""
    if type(value) is not dict and isinstance(value, Mapping):
        return dict(value)
    return value


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value (``object``, ``array``, ``string``, ``number``, ``boolean``,
    ``null``; the Python type's name for anything else): runtime-neutral wording for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def utf8_size(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes (a lone surrogate counts 3), without a full copy."""
    if text.isascii():
        return len(text)
    return sum(len(text[i : i + _CHUNK].encode("utf-8", "surrogatepass")) for i in range(0, len(text), _CHUNK))


def _size_error(size: int, kind: str | None) -> SizeLimitError:
    return SizeLimitError(
        [Problem("", "max-bytes", f"{size} bytes of JSON exceeds the limit of {limits.max_bytes} (limits.max_bytes)")],
        kind,
    )


def depth_message() -> str:
    """What every reader and writer says of a value nested deeper than ``limits.max_depth`` (rule ``max-depth``)."""
    return f"nested deeper than {limits.max_depth} levels (limits.max_depth)"


def depth_error(kind: str | None, pointer: str = "") -> SizeLimitError:
    return SizeLimitError([Problem(pointer, "max-depth", depth_message())], kind)


class TooDeep(orjson.JSONDecodeError):
    """Raised by :func:`loads_bounded` for JSON text nested deeper than ``limits.max_depth`` (rule ``max-depth``):
    a ``JSONDecodeError``, so a reader that treats it as unreadable text stays bounded, and one that tells the
    rules apart checks for this class. ``pointer``: where in the text the array or object that crosses the limit is
    (:func:`deep_pointer`: one scan of the text, made here, on this error path only)."""

    def __init__(self, data: str | bytes) -> None:
        super().__init__(depth_message(), data if isinstance(data, str) else "", 0)
        self.pointer = deep_pointer(data, limits.max_depth)

    def __str__(self) -> str:
        return depth_message()


#: the containers a walk of a Python value (which may share them: a dict of the same dict twice) meets before it
#: remembers those it walked, and walks none twice at a depth it saw it at: a small value pays nothing for it
REMEMBER_AFTER: Final = 1 << 12


def deeper_than(value: Any, max_depth: int, *, finite: bool = False) -> bool:
    """Whether ``value`` nests lists and dicts more than ``max_depth`` deep (iterative: any depth, any cycle): parsed
    JSON, whose walk looks at nothing else (the readers' and the conversation's, at the cost it had before mappings
    and tuples were walked). With ``finite``, ``value`` as the request writer writes it (a tool definition): a
    mapping that is no dict (a ``MappingProxyType``, an ``OrderedDict``) counts as an object and a sequence that is
    no list (a tuple) as an array, and the walk also says whether it holds a float that is NaN or infinite (orjson
    writes it as ``null``) or bytes (which the writer refuses): :func:`unwritten_at` then tells which it is; a
    ``value`` that is itself such a mapping or sequence is walked as its dict or list, and one that is neither is
    looked at as a member is (an enum member or a dataclass holding a NaN: True)."""
    if type(value) is not dict and type(value) is not list:
        if not finite:
            return False
        inner = container(value)
        if inner is None:
            return _not_written(value)
        if not inner:
            return max_depth <= 0
        value = inner
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    # (past REMEMBER_AFTER containers, each container's id and the greatest depth it was walked at: met again no
    # deeper, it holds nothing deeper than it did, so that a value sharing its members, a dict of the same dict twice
    # a hundred levels down, costs its containers, not its 2**100 paths; ``held`` keeps alive what ``container`` made)
    walked: dict[int, int] | None = None
    left = REMEMBER_AFTER
    held: list[Any] = []
    while stack:
        node, depth = pop()
        if depth >= max_depth:
            return True
        if walked is not None:
            key = id(node)
            seen = walked.get(key)
            if seen is not None and seen >= depth:
                continue
            walked[key] = depth
        else:
            left -= 1
            if left < 0:
                walked = {}
        for child in node.values() if type(node) is dict else node:
            t = type(child)
            if t is dict or t is list:
                if child:
                    push((child, depth + 1))
                elif depth + 1 >= max_depth:
                    return True
            elif not finite or t is str:
                pass  # (parsed JSON holds no other container: its scalars cost one test)
            elif t is float:
                if child - child != 0.0:  # (NaN and the infinities: x - x is NaN)
                    return True
            elif t is int or t is bool or child is None:
                pass
            elif (inner := container(child)) is not None:
                if inner:
                    if inner is not child:  # (a mapping's dict, a sequence's list: made anew at each meeting)
                        held.append(inner)
                    push((inner, depth + 1))
                elif depth + 1 >= max_depth:
                    return True
            elif _not_written(child):
                return True  # (a float subclass, numpy's; bytes, a set, which the writer refuses: unwritten_at says)
    return False


def _not_written(value: Any) -> bool:
    """Whether the request writer refuses ``value``, a leaf of a tool definition that is no mapping nor sequence:
    bytes, a set, a Decimal, a complex, numpy.float32 (orjson has no type for it, nor its default); a float (a
    subclass too) when it is NaN or infinite, which orjson writes as ``null``. What orjson writes as it is (a str
    or int subclass, a datetime, a UUID, an enum member) is written."""
    if isinstance(value, float):
        return value - value != 0.0
    if isinstance(value, (str, int)):
        return False
    try:
        text = _orjson_dumps(value)
    except orjson.JSONEncodeError:
        return True
    # (orjson writes a NaN or an infinity inside an enum member's value or a dataclass as null, without a word:
    # looked for only when the text holds a null)
    return (
        b"null" in text
        and (parts := _written_parts(value)) is not None
        and unwritten_at(parts, MAX_WRITABLE_DEPTH) is not None
    )


def _written_parts(value: Any) -> Any:
    """What orjson writes of ``value`` as a JSON value of its own: an enum member's value, a dataclass's attributes
    (those of its ``__dict__``, else its fields; none named with a leading ``_``, which orjson leaves out); None for
    anything else."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "__dict__"):  # (read as orjson reads it: no property of the class is called)
            return {name: v for name, v in vars(value).items() if not name.startswith("_")}
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if not f.name.startswith("_")}
    return None


def container(value: Any) -> dict[Any, Any] | list[Any] | tuple[Any, ...] | None:
    """A mapping as a dict, a sequence that is no string as a list (a tuple as it is), as the request writer
    writes them; None for anything else."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return list(value)
    return None


def _no_fallback(value: Any) -> Any:
    """The C writer's fallback, never called by its dry run (it gives up on a type it has no plan of)."""
    raise TypeError(f"{type(value).__name__} is no JSON value")


def plainly_written(value: Any, max_depth: int) -> bool:
    """Whether the request writer surely writes ``value`` (a tool definition, a structured output's schema) as it is:
    :func:`unwritten_at` finds nothing in it, and :func:`deeper_than` (``finite``) says it is no deeper than
    ``max_depth``. False is no verdict: the caller then walks it with those two. Where the C kernels are built, one C
    pass without output, the writer's dry run (``_speedups.writes``: it says no to a lone surrogate, an integer past
    64 bits, NaN, a container past its depth, and to every type but the JSON ones and tuples): about 5k instructions
    for a tool definition of 25 values, where the :func:`deeper_than` walk took 33k. Else orjson writes it (it refuses
    a lone surrogate, bytes, a set, a float subclass; 7k) inside as many arrays as ``max_depth`` is below its own depth
    limit, so that it refuses what nests deeper than ``max_depth`` as soon as one path does (written bare, a value
    sharing its members, a dict of the same dict twice 250 levels down, was written whole, all its 2**250 paths, before
    its depth was looked at), and the walk runs only where its text may hold a NaN (orjson writes ``null``) or nest too
    deep (more brackets than ``max_depth``: orjson's limit counts no tuple). The dry run stops past
    ``limits.max_bytes``, and a value sharing its members (:func:`shares_members`) is no verdict, never written here
    (the same 1 MiB string a thousand times is 1 GB): the caller counts its size (:func:`check_value_size`)."""
    native = _native_writes
    if (
        native is not None
        and max_depth > _NATIVE_DEPTH
        and native(value, _NO_PLANS, _no_fallback, _orjson_dumps, limits.max_bytes)
    ):
        return True
    if shares_members(value):  # (orjson would write it whole: the same 1 MiB string a thousand times is 1 GB)
        return False
    wraps = max(0, MAX_WRITABLE_DEPTH - max_depth)
    wrapped = value
    for _ in range(wraps):
        wrapped = [wrapped]
    try:
        text = _orjson_dumps(wrapped)
    except orjson.JSONEncodeError:
        return False
    # (orjson counts no tuple's level toward its limit: it writes a tuple nested past it, 1,000 levels, and only the
    # brackets, more than ``max_depth``, say that the value may be too deep)
    if b"null" in text or text.count(b"[") + text.count(b"{") - wraps > max_depth:
        return not deeper_than(value, max_depth, finite=True)
    return True


class _Held:
    """The value :func:`exact_key` writes, as the one free-form field of an object (the C writer's plans take the exact
    JSON types only in a free-form field: ``EX_FREE``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


#: the C writer's plan of :class:`_Held` (None: pure Python): its field of any type (0), free-form (32), never omitted
_HELD_PLANS: Final = (
    {_Held: speedups.make_plan(_Held, [("value", "v", False, 32)], None, True)} if speedups is not None else None
)


def exact_key(value: Any) -> bytes | None:
    """A key for ``value`` that cannot go stale: its JSON text (wrapped as ``{"v":...}``) when it and everything in it
    is of the exact JSON types (str, int, float, bool, None, a dict of str keys, a list: no tuple, no subclass, no
    NaN or infinity, no lone surrogate, no integer past 64 bits), None for any other value and where the C kernels
    are not built (the caller then works as it would without one). Two values of one key are equal and of the same
    types throughout, so that what a pure function made of one is what it makes of the other, whatever the caller does
    to the first since: a cache of such a function's results keyed so holds no value of the caller's (a caller's
    ``tools`` are theirs, and mutable). One C pass, as :func:`plainly_written`'s."""
    encode = _native_encode
    if encode is None or _HELD_PLANS is None:
        return None
    written = encode(_Held(value), _HELD_PLANS, _no_fallback, _orjson_dumps, limits.max_bytes)
    return written or None  # (False: past limits.max_bytes, or a part met twice: no key, worked as without one)


def unwritten_at(
    value: Any, max_depth: int, *, check_keys: bool = False, refuse_deep: bool = False, stdlib: bool = False
) -> tuple[str, str, str] | None:
    """The pointer, rule and words of the first part of ``value`` (depth first, in order) that its writer cannot send as
    it is given; None if there is none. Mappings are walked as objects, sequences that are no string as arrays. Whatever
    the writer: a string or object key holding a lone UTF-16 surrogate, which UTF-8 cannot encode (a key at its object's
    pointer, as :func:`check_json_value` says it): ``lone-surrogate``, in the words of the body writer's refusal
    (``body_bytes``); an integer or int key of more digits than Python writes (an integer past 64 bits is written as its
    digits): ``integer-range`` (a key at its object's pointer). By default the writer is orjson (a tool definition, a
    structured output's schema): a float that is NaN or infinite (orjson writes ``null``, another value), bytes, a set,
    a Decimal (:func:`_not_written`) is rule ``json-value``; an enum member's value and a dataclass's attributes are
    walked as orjson writes them; keys are not looked at but for surrogates; mappings and sequences deeper than
    ``max_depth`` levels are not walked (the caller asks :func:`deeper_than`). The differences, asked for:

    * ``check_keys``: an object key must be a string or an int (written as its digits, ``logit_bias``'s token ids;
      1.5, True or None the standard library would write as "1.5", "true", "null"): another is ``json-value`` at the
      key's pointer; an int key whose digits are another key of its object (``1`` and ``"1"``) is ``duplicate-key``
      at its pointer;
    * ``refuse_deep``: a part below ``max_depth`` levels that is no string, int or None is ``json-value`` (a value
      that holds itself, too), where it is not walked otherwise;
    * ``stdlib``: the writer is the standard library (``json.dumps``): a leaf that is no string, int, float, bool or
      None is ``json-value``, in its words, and so is a NaN or an infinity. (``json_text`` fell back on it; it now
      writes what orjson writes, int keys and integers past 64 bits as their digits, and asks for orjson's leaves.)"""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    pop, push, push_one = stack.pop, stack.extend, stack.append
    # (a container walked whole and clean, by id: the depth it was walked at, the least without ``refuse_deep``, where
    # what a walk sees shrinks with depth, the most with it, where what it refuses grows: met again where it would
    # see nothing new, it is not walked again, so that a value sharing its members (a dict of the same dict twice,
    # a hundred levels down) costs its containers, not its 2**100 paths. ``held`` keeps every such id taken.)
    walked: dict[int, int] = {}
    held: list[Any] = []
    while stack:
        node, path = pop()
        if type(node) is _Walked:
            depth, key = len(path), node.key
            if walked.get(key, depth) >= depth:
                walked[key] = depth
            continue
        if isinstance(node, str):
            if not node.isascii() and _SURROGATE.search(node):  # (has_lone_surrogate, without its call)
                return pointer_of(path), "lone-surrogate", surrogate_words(node) + _NO_BODY
            continue
        if isinstance(node, int):
            if not INT_MIN <= node <= INT_MAX and (why := undigited(node)) is not None:
                return pointer_of(path), "integer-range", why
            continue
        if node is None:
            continue
        deep = len(path) > max_depth
        if deep and refuse_deep:
            return pointer_of(path), "json-value", f"nested deeper than {max_depth} levels (limits.max_depth){_NO_BODY}"
        t = type(node)
        inner = node if t is dict or t is list else container(node)
        if inner is None:
            if stdlib:
                if not isinstance(node, float):
                    return pointer_of(path), "json-value", f"a value of type {t.__name__} is no JSON value{_NO_BODY}"
                if not math.isfinite(node):
                    return pointer_of(path), "json-value", f"{node!r} is not a JSON number{_NO_BODY}"
            elif _not_written(node):
                # (inside an enum member's value or a dataclass, what is not written, at its own pointer)
                parts = _written_parts(node)
                inside = (
                    None
                    if parts is None
                    else unwritten_at(parts, max_depth, check_keys=check_keys, refuse_deep=refuse_deep)
                )
                if inside is not None:
                    return pointer_of(path) + inside[0], inside[1], inside[2]
                if isinstance(node, (bytes, bytearray)):
                    what = f"{t.__name__} is no JSON value (give its text as a string)"
                elif isinstance(node, float):
                    what = "NaN or an infinity is not a JSON number"
                else:
                    what = f"a {t.__name__} is no JSON value"
                return pointer_of(path), "json-value", what + _NO_BODY
            continue
        if deep:
            continue
        key = id(node)
        seen = walked.get(key)
        if seen is not None and (seen >= len(path) if refuse_deep else seen <= len(path)):
            continue
        if refuse_deep:  # (a part deeper than the limit is refused: one met again at no greater depth is clean)
            if seen is None:
                held.append(node)
            walked[key] = len(path)
        else:  # (once walked whole: met again inside itself, a cycle, it is walked to the depth as before)
            held.append(node)
            push_one((_Walked(key), path))
        if type(inner) is dict:
            digits = strs = False
            for key in inner:
                if isinstance(key, str):
                    strs = True
                    if not key.isascii() and _SURROGATE.search(key):
                        return pointer_of(path), "lone-surrogate", "object key: " + surrogate_words(key) + _NO_BODY
                elif isinstance(key, int) and not INT_MIN <= key <= INT_MAX and (why := undigited(key)) is not None:
                    return pointer_of(path), "integer-range", "object key: " + why  # (str(key) would raise)
                elif check_keys and (not isinstance(key, int) or isinstance(key, bool)):
                    where = pointer_of((*path, str(key)))
                    return where, "json-value", f"object key {short_repr(key)} is neither a string nor an int{_NO_BODY}"
                else:
                    digits = True
            if digits and strs and check_keys and (twice := written_twice(inner)) is not None:
                return pointer_of((*path, twice[0])), "duplicate-key", twice[1]
            push((child, (*path, str(key))) for key, child in reversed(inner.items()))
        else:
            push((child, (*path, i)) for i, child in zip(range(len(inner) - 1, -1, -1), reversed(inner), strict=True))
    return None


class _Walked:
    """On a walk's stack, below a container's members: the container's id, walked whole once it is popped."""

    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key


def written_twice(obj: dict[Any, Any]) -> tuple[str, str] | None:
    """An object with an int key, written as its digits: (the text of a key written as one before it was, the words)
    when there is one (``1`` and ``"1"``: the body would hold the key twice, its reader keep one value); None
    else."""
    written: dict[str, Any] = {}
    for key in obj:
        text = key if isinstance(key, str) else int.__repr__(key)
        if text in written:
            words = (
                f"object keys {short_repr(written[text])} and {short_repr(key)} are both written as {short_repr(text)}:"
                " the body would hold the key twice, its reader keep one value (most, the last)"
            )
            return text, words
        written[text] = key
    return None


def undigited(value: int) -> str | None:
    """Why the body writer cannot write ``value``, an integer past 64 bits (it writes one as its digits): it has more
    digits than Python writes (``sys.get_int_max_str_digits()``, 4,300 by default); None when it can."""
    try:
        int.__repr__(value)
    except ValueError:
        return (
            f"integer {short_repr(value, 60)} has more digits than Python writes (sys.get_int_max_str_digits():"
            f" {sys.get_int_max_str_digits()}): no JSON body carries it"
        )
    return None


def surrogate_words(text: str) -> str:
    """How a refusal says that ``text``, a string or an object key, holds a lone UTF-16 surrogate (the one wording of
    the readers, the request checks and the body writer)."""
    return f"string {short_repr(text, 60)} holds a lone UTF-16 surrogate (not encodable as UTF-8)"


_NO_BODY = ": no JSON body carries it"


def loads_bounded(data: str | bytes) -> Any:
    """``orjson.loads`` held to ``limits.max_depth``: the one JSON reader of events and provider payloads (where
    speed matters and :func:`loads`'s full check is not needed: orjson reads only what it can write back, but
    for the depth). Raises ``orjson.JSONDecodeError`` for text that is not JSON, :class:`TooDeep` (a subclass)
    for text nested too deep. The depth is looked at only when the text holds more opening brackets than the
    limit (two C scans of a long text; none of a short one), so the common payload costs what orjson costs."""
    try:
        value = _orjson_loads(data)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith(("depth limit", "recursion limit")):
            raise TooDeep(data) from None
        raise
    max_depth = limits.max_depth
    if (
        len(data) > 2 * max_depth
        and (type(value) is dict or type(value) is list)
        and (data.count(b"[") + data.count(b"{") if type(data) is bytes else data.count("[") + data.count("{"))  # type: ignore[arg-type]
        > max_depth
        and _too_deep(value, max_depth)
    ):
        raise TooDeep(data)
    return value


def deep_value_pointer(value: Any, max_depth: int) -> str:
    """The pointer of the first list or dict of ``value`` (document order) nested ``max_depth`` levels deep, the one
    that crosses the limit (as :func:`check_json_value` names it); ``""`` when it has none. Iterative: for the error
    path of a reader that found the value too deep with :func:`deeper_than`; a container met again no deeper than
    a whole walk of it was at (which found nothing) is not walked again, so a value sharing its members costs its
    containers, not its paths (one met again inside itself, a cycle, is walked on to the limit)."""
    stack: list[tuple[Any, tuple[str | int, ...], bool]] = [(value, (), False)]
    walked: dict[int, int] = {}  # (the containers walked whole, by id: the least depth they were walked at)
    while stack:
        node, path, done = stack.pop()
        if done:
            walked[id(node)] = min(len(path), walked.get(id(node), max_depth))
            continue
        kind = type(node)
        if kind is not dict and kind is not list:
            continue
        if len(path) >= max_depth:
            return pointer_of(path)
        if walked.get(id(node), max_depth) <= len(path):
            continue
        stack.append((node, path, True))
        items = node.items() if kind is dict else enumerate(node)
        stack.extend((child, (*path, key), False) for key, child in reversed(list(items)))
    return ""


def _too_deep(value: Any, max_depth: int) -> bool:
    """:func:`deeper_than` of a value orjson read: at the default limit one C pass (orjson writes back what it
    read, but for a depth beyond the limit, which is exactly orjson's own)."""
    if max_depth != MAX_WRITABLE_DEPTH:
        return deeper_than(value, max_depth)
    try:
        _orjson_dumps(value)
    except orjson.JSONEncodeError:
        return True
    return False


def check_size(data: JsonInput, kind: str | None = None) -> None:
    """Raise :class:`SizeLimitError` (rule ``max-bytes``) when ``data`` is longer than ``limits.max_bytes``
    UTF-8 bytes."""
    max_bytes = limits.max_bytes
    if isinstance(data, str):
        if len(data) * 4 <= max_bytes:
            return
        size = len(data) if len(data) > max_bytes else utf8_size(data)
    else:
        size = memoryview(data).nbytes
    if size > max_bytes:
        raise _size_error(size, kind)


def parse_fast(data: str | bytes) -> Any:
    """Parse JSON text; None when it is not plain JSON text within the limits (the caller then takes the
    detailed path through :func:`loads`). The result still needs :func:`writable` (depth, integer range)."""
    try:
        return _decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeError):
        return None


def writable(value: Any) -> bool:
    """True when orjson can write ``value`` as it is and it is no deeper than ``limits.max_depth`` (at the
    default depth limit this is one C pass; a lowered limit adds a walk)."""
    try:
        _orjson_dumps(value)
    except orjson.JSONEncodeError:
        return False
    if limits.max_depth < MAX_WRITABLE_DEPTH:
        try:
            check_json_value(value)
        except ValidationError:
            return False
    return True


def _syntax_problem(data: JsonInput, exc: Exception) -> Problem:
    """The problem of text msgspec could not parse, worded with orjson's position when it has one. Bytes that
    are not UTF-8 are rule ``utf-8`` with the byte where they stop being so (orjson words that as "surrogates
    not allowed"), unless what is there is a UTF-16 surrogate encoded as UTF-8 (``lone-surrogate``)."""
    if not isinstance(data, str):
        undecodable = not_utf8(bytes(data))
        if undecodable is not None:
            rule, words = undecodable
            at = _surrogate_pointer(bytes(data)) if rule == "lone-surrogate" else ""
            return Problem(at, rule, f"not valid JSON: {words}")
    other = _orjson_refusal(data, exc)
    if other is not None:
        if "surrogates not allowed" in str(other):  # a str holding one (bytes that are not UTF-8 were told above)
            syntax, value = _read_loosely(data)
            if syntax is not None:  # a syntax error too: that is said
                return Problem("", "json", f"not valid JSON: {syntax}")
            words = "not valid JSON: the text holds a lone UTF-16 surrogate"
            return Problem(_surrogate_path_of(value), "lone-surrogate", words)
        if "surrogate in string" in str(other):
            syntax, value = _read_loosely(data)  # (unreadable's reading, the value kept for its pointer)
            if syntax is None:
                words = f"not valid JSON: a lone UTF-16 surrogate escape ({other})"
                return Problem(_surrogate_path_of(value), "lone-surrogate", words)
            return Problem("", "json", f"not valid JSON: {syntax}")
        rule, words = unreadable(other, data)
        return Problem("", rule, f"not valid JSON: {words}")
    if isinstance(exc, UnicodeError):
        return Problem("", "lone-surrogate", "not valid JSON: the text holds a lone UTF-16 surrogate")
    return Problem("", "json", f"not valid JSON: {exc}")


def _surrogate_pointer(raw: bytes) -> str:
    """The pointer of the string that holds a UTF-16 surrogate encoded as UTF-8 in JSON text ``raw``
    (:func:`_surrogate_path_of`), read with the surrogates decoded; ``""`` when it is not JSON otherwise."""
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # (other bytes that are no UTF-8 besides)
        return ""
    syntax, value = _read_loosely(text)
    return _surrogate_path_of(value) if syntax is None else ""


def _surrogate_path_of(value: Any) -> str:
    """The JSON pointer of the first string in ``value`` (document order) holding a lone UTF-16 surrogate, as
    :func:`check_json_value` names it (an object key: its object's pointer); ``""`` when there is none (``value``
    is :data:`_UNREAD`: JSON text that could not be read as json reads it, nested too deep)."""
    # (what is left to walk, the next one last; a key holding one is an entry of its own, at its object's path)
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if type(node) is str:
            if has_lone_surrogate(node):
                return pointer_of(path)
        elif type(node) is dict:
            for key in reversed(node):  # (a key where it is, before its value)
                stack.append((node[key], (*path, key)))
                if has_lone_surrogate(key):
                    stack.append((key, path))
        elif type(node) is list:
            stack.extend((node[i], (*path, i)) for i in range(len(node) - 1, -1, -1))
    return ""


#: the shortest prefix :func:`_orjson_refusal` has orjson read (it then doubles); how far (in characters) before the
#: prefix's end orjson's error, and the number or literal it points at, must end to be the whole text's error too
_FIRST_PREFIX, _CUT_MARGIN = 1 << 16, 64
#: orjson's errors that a prefix's end may cause (or, for the memory it gives its parser, the prefix's length)
_CUT_KINDS = (
    "unexpected end of data",
    "input data is empty",
    "Input is a zero-length",
    "failed to allocate memory",
    "depth limit",
    "recursion limit",
)
_MSGSPEC_BYTE = re.compile(r"\(byte (\d+)\)")
#: the characters a number or a literal is made of (orjson points at its start: "number is infinity ...")
_TOKEN = re.compile(r"[0-9A-Za-z+\-.]*")


def _orjson_refusal(data: JsonInput, exc: Exception) -> orjson.JSONDecodeError | None:
    """orjson's error for JSON text ``data`` (None when orjson reads it), read from the shortest prefix that
    shows it: orjson reserves about 13 bytes of memory per byte of its input wherever the error is, so a 128 MB
    text with an error at its start cost 1.4 GB to word it. The first prefix is 64 KiB or twice the byte where
    msgspec stopped (``exc``), then twice as long each time, the last the whole text. A prefix's error is taken
    when the prefix's end cannot have made it: not an error of running out of text (nor of memory, nor of depth,
    which orjson checks once the text is read), and at least ``_CUT_MARGIN`` characters before that end with the
    number or literal it points at; then orjson reads the whole text the same way up to it and stops there with
    the same words and position (the error's doc is the prefix, but its words are those of the text before the
    position). Bytes are cut at a UTF-8 character's start, a str at a character. A str holding a lone surrogate
    (orjson refuses it before reading: "surrogates not allowed") is read whole."""
    found = _MSGSPEC_BYTE.search(str(exc))
    size = max(_FIRST_PREFIX, 2 * int(found.group(1))) if found else _FIRST_PREFIX
    whole = len(data) if isinstance(data, str) else memoryview(data).nbytes
    if isinstance(data, str) and has_lone_surrogate(data):
        size = whole
    view = data if isinstance(data, str) else memoryview(data).cast("B")
    while True:
        cut = min(size, whole)
        if cut < whole and not isinstance(view, str):
            while cut > 0 and 0x80 <= view[cut] < 0xC0:  # (inside a UTF-8 sequence: cut before it)
                cut -= 1
        try:
            _orjson_loads(view[:cut] if cut < whole else data)
        except orjson.JSONDecodeError as error:
            if cut == whole:
                return error
            doc, pos = error.doc, error.pos
            if (
                not str(error).startswith(_CUT_KINDS)
                and (match := _TOKEN.match(doc, pos)) is not None
                and max(pos, match.end()) + _CUT_MARGIN <= len(doc)
            ):
                return error
        except Exception:
            if cut == whole:
                return None
        else:
            if cut == whole:
                return None
        size *= 2


#: how many bytes :func:`not_utf8` decodes at a time
_UTF8_CHUNK = 1 << 16


def not_utf8(raw: bytes) -> tuple[str, str] | None:
    """The rule and words for JSON text ``raw`` that is not UTF-8, with the byte (0-based, from the start of
    ``raw``) where it stops being so: ``utf-8``, or ``lone-surrogate`` when what is there is a UTF-16 surrogate
    encoded as UTF-8 (``ED A0 80``); None when it is UTF-8. Every reader that refuses such text says it so (a
    document, a JSON Lines record, an event's line), never in orjson's words ("surrogates not allowed").

    Read in chunks of ``_UTF8_CHUNK`` bytes up to the first bad one: ``raw.decode`` made a str as long as all of
    ``raw`` and a UnicodeDecodeError holding a copy of it, whether the bad byte was the first or the last. A
    sequence cut by a chunk's end is left for the next (``final`` is false but for the last chunk), so the
    byte and the reason are those of decoding ``raw`` whole."""
    if raw.isascii():
        return None
    view, start, end = memoryview(raw), 0, len(raw)
    try:
        while start < end:
            stop = min(start + _UTF8_CHUNK, end)
            start += codecs.utf_8_decode(view[start:stop], "strict", stop == end)[1]
    except UnicodeDecodeError as bad:
        at = start + bad.start
        if not (raw[at] == 0xED and at + 1 < len(raw) and 0xA0 <= raw[at + 1] <= 0xBF):
            return "utf-8", f"invalid UTF-8 at byte {at} ({bad.reason})"
        return "lone-surrogate", f"a UTF-16 surrogate encoded as UTF-8 at byte {at}"
    return None


def unreadable(error: Exception, data: JsonInput) -> tuple[str, str]:
    """The rule of JSON text ``data`` orjson could not read (``error``), and the words for it: ``lone-surrogate``
    for a lone UTF-16 surrogate escape (``"\\ud800"``) in text that is JSON otherwise, else ``json``: a syntax
    error is said whether or not orjson met a surrogate first (:func:`syntax_error`), as @agentmsg/client says it.
    The one reading of orjson's refusal: :func:`loads`, ``agentmsg.read_records``, the event streams and
    ``agentmsg validate`` say it so."""
    if "surrogate in string" not in str(error):
        return "json", str(error)
    syntax = syntax_error(data)
    return ("lone-surrogate", str(error)) if syntax is None else ("json", syntax)


def syntax_error(data: JsonInput) -> str | None:
    """json's words for the syntax error in text orjson refused for a lone UTF-16 surrogate (``"\\ud800"``),
    read as JSON.parse reads it (lone surrogates allowed; no NaN nor Infinity); None when it is JSON otherwise.
    None: its rule is ``lone-surrogate``; else ``json``, whichever of the two orjson met first, as
    @agentmsg/client says it. Called only on text that is already refused: one more linear read of it."""
    return _read_loosely(data)[0]


#: what :func:`_read_loosely` gives for a value it did not read
_UNREAD: Final = object()


def _read_loosely(data: JsonInput) -> tuple[str | None, Any]:
    """:func:`syntax_error`'s reading of ``data``: json's words for its syntax error (None when there is none) and
    the value read (:data:`_UNREAD` when none was: a syntax error, or nesting deeper than json reads)."""
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    try:
        return None, json.loads(text, parse_constant=_no_constant)
    except RecursionError:  # (nested deeper than json reads: no syntax error was met)
        return None, _UNREAD
    except ValueError as exc:
        return str(exc), _UNREAD


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: the UTF-8 byte-order mark, as bytes and as the character it decodes to
BOM, BOM_CHAR = b"\xef\xbb\xbf", "\ufeff"


def without_bom(data: JsonInput) -> JsonInput:
    """``data`` without a UTF-8 byte-order mark at its start (the bytes EF BB BF, or U+FEFF in a str), which
    Windows editors and PowerShell write before a file's text: the one BOM policy of the SDK and its command
    line (docs/wire-format.md) is that every reader of JSON text skips it there, as RFC 8259 8.1 lets a parser
    do, and the stream readers always have. Anywhere else it is what it is (a character in a string, else a
    syntax error). No copy of the text is made."""
    if isinstance(data, str):
        return data[1:] if data.startswith(BOM_CHAR) else data
    if bytes(data[:3]) == BOM:
        return memoryview(data)[3:]
    return data


def loads(data: JsonInput, kind: str | None = None, *, unique_keys: bool = False) -> Any:
    """Parse JSON text under the limits (a UTF-8 byte-order mark at its start is skipped: :func:`without_bom`). Raises :class:`ValidationError` (rules ``json``, ``lone-surrogate``,
    ``integer-range``) for text that is not JSON or could not be written back, :class:`SizeLimitError`
    beyond ``limits.max_bytes`` (UTF-8 bytes) or ``limits.max_depth``. A key twice in one object keeps its last
    value, as every JSON parser of the SDK's peers does; ``unique_keys`` refuses it instead (rule ``duplicate-key``,
    every such key said: :func:`duplicate_keys`)."""
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise ValidationError(
            [Problem("", "json", f"expected JSON text (str or bytes), got {type(data).__name__}")], kind
        )
    check_size(data, kind)
    data = without_bom(data)
    try:
        value = _decode(data)
    except RecursionError:  # (nested past the parser's own limit, about 1,000 levels: far past limits.max_depth)
        raise depth_error(kind, deep_pointer(data, limits.max_depth)) from None
    except (msgspec.DecodeError, UnicodeError) as exc:
        beyond = _long_integer_problem(data) if str(exc).startswith("Integer value out of range") else None
        raise ValidationError([beyond or _syntax_problem(data, exc)], kind) from None
    # Large text: the walk, which writes nothing (the round trip would keep a UTF-8 copy inside every
    # non-ASCII string it writes, and its buffers are a few times the text).
    check_json_value(value, kind, walk=len(data) > _WALK_ABOVE, remember_after=len(data), shared=False)
    if unique_keys:
        duplicates = duplicate_keys(data, value)
        if duplicates:
            raise ValidationError(duplicates, kind)
    return value


#: a JSON string, a bracket or a comma: the tokens :func:`deep_pointer` follows (colons, numbers and literals, which
#: hold none of them, are passed over)
_PATH_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')
_PATH_TOKENS_BYTES = re.compile(_PATH_TOKENS.pattern.encode())


def deep_pointer(data: JsonInput, max_depth: int) -> str:
    """The pointer of the first array or object of JSON text ``data`` (document order) nested ``max_depth`` levels
    deep, the one that crosses the limit, as :func:`check_json_value` names it in a parsed value; ``""`` when the
    text has none. For text a reader refused for its depth (msgspec past its own limit, about 1,000 levels; orjson
    past its limit or ``limits.max_depth``: :class:`TooDeep`): one scan of its strings and brackets up to that array
    or object, only on that error path. (A key that is no JSON string, invalid UTF-8 in bytes: ``""``.)"""
    text: Any = data if isinstance(data, (str, bytes)) else bytes(data)
    pattern: Any = _PATH_TOKENS if isinstance(text, str) else _PATH_TOKENS_BYTES
    opening, closing, comma = ("[{", "]}", ",") if isinstance(text, str) else (b"[{", b"]}", b",")
    path: list[str | int] = []  # the member each open array or object is at (a key: None until it is read)
    objects: list[bool] = []  # whether each open one is an object
    want_key = False
    for match in pattern.finditer(text):
        token = match.group()
        head = token[:1]
        if head in opening:
            if len(objects) >= max_depth:
                return pointer_of(path)
            objects.append(head == opening[1:])
            path.append(0)
            want_key = objects[-1]
        elif head in closing:
            if not objects:
                return ""
            objects.pop()
            path.pop()
            want_key = False
        elif head == comma:
            if objects and objects[-1]:
                want_key = True
            elif objects:
                path[-1] = int(path[-1]) + 1
        elif want_key:  # (a string where an object's key is)
            try:
                path[-1] = json.loads(token)
            except ValueError:
                return ""
            want_key = False
    return ""


class _Repeated(dict[str, Any]):
    """An object of JSON text that holds a key more than once with values that differ (:func:`duplicate_keys`' slow
    path): its keys with their last values, as the parsers keep them, and those keys, with how many times each
    is given."""

    __slots__ = ("repeated",)
    repeated: dict[str, int]


def _repeated(pairs: list[tuple[str, Any]], obj: dict[str, Any]) -> dict[str, Any]:
    """The object of ``pairs`` (``obj``: their dict, shorter than them): a :class:`_Repeated` when a key comes more
    than once with values that differ, else ``obj``."""
    counts: dict[str, int] = {}
    for key, _ in pairs:
        counts[key] = counts.get(key, 0) + 1
    differ = {key for key, child in pairs if counts[key] > 1 and not _same(child, obj[key])}
    if not differ:
        return obj
    repeated = _Repeated(obj)
    repeated.repeated = {key: n for key, n in counts.items() if key in differ}
    return repeated


def _same(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are the same, type for type (``1``, ``1.0`` and ``true`` are three values: a
    reader may keep each as its own), objects whatever their keys' order; iterative, linear in the values."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys() or isinstance(x, _Repeated) or isinstance(y, _Repeated):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def _colons(data: str | bytes) -> int:
    """The colons of JSON text, with every ``\\u003a`` escape counted as one too (an upper bound of those that
    stand for a colon in a string: a ``\\\\u003a`` counts, an escaped backslash then text)."""
    if isinstance(data, str):
        return data.count(":") + data.count("\\u003a") + data.count("\\u003A")
    return data.count(b":") + data.count(b"\\u003a") + data.count(b"\\u003A")


_WHITESPACE = b" \t\r\n"
#: every byte but the four brackets (deleted from a stretch of text to leave its nesting)
_NOT_BRACKETS = bytes(range(256)).translate(None, b"{}[]")
#: a member ``,"k":v`` of compact JSON text, from its comma: ``k`` without quote or backslash and not starting with a
#: byte that may follow a closing quote (so that its quote opens a key, wherever it is met), ``v`` a string without
#: quote or backslash or a literal up to what ends a value
_MEMBER = re.compile(rb',("(?:[^"\\,:\]} \t\r\n][^"\\]*)?":(?:"[^"\\]*"|[-+.0-9a-zE]+(?=[,}\] \t\r\n])))')
_AFTER_VALUE = frozenset(b",}] \t\r\n")
_MAX_TAKEN_OUT = 16
#: beyond :data:`_MAX_TAKEN_OUT`, one more member taken out per this many bytes of text (denser: read again)
_BYTES_PER_TAKEN_OUT = 64
#: the most bytes compared at once; beyond, the comparison goes in stretches (:func:`_common_prefix`) from
_AT_ONCE, _STRETCH = 4096, 256
_MAX_NESTING = 32


def _equal_repeats_only(data: str | bytes, written: bytes) -> bool:
    """Whether JSON text ``data`` is ``written`` (its value written back by orjson) with members taken out that each
    repeat, byte for byte, an earlier member of their object: then every key given more than once in one object
    is given with one value, and :func:`duplicate_keys` has nothing to say. False when that is not shown (the
    caller then reads the text again). The second filter of :func:`duplicate_keys`, for the text of a compact
    writer that gives a member twice (AgentScope Java writes each event's ``"type"`` first and last), in a line
    or in an array of many: a few C calls (comparisons, searches, a regular expression matched at one place) per
    member taken out, no parse.

    Why it is exact: each piece taken out is ``,"k":v`` (:data:`_MEMBER`), a whole member of one object. What is
    left is byte for byte the text of a value without a repeated key, so in each object every repeated key was
    taken out but once; the first of them cannot have been (nothing earlier in its object repeats it), so each
    other one repeats, byte for byte, an earlier member of the same object (``"k":v`` found earlier, not after a
    backslash, a literal ended there as here, the brackets in between balanced outside strings): all of them are
    the first. Linear: the comparisons go on from where the last one stopped, in stretches that double (each
    looks at about twice the bytes it passes), at most :data:`_MAX_TAKEN_OUT` members and one per
    :data:`_BYTES_PER_TAKEN_OUT` bytes are taken out, the searches back and the stretches between twins are held
    to a budget of a few times the text, their nesting to :data:`_MAX_NESTING`."""
    text = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if text.startswith(BOM):
        text = text[3:]
    text = text.strip(_WHITESPACE)
    size, end = len(text), len(written)
    budget = 4 * size + (1 << 16)
    at = to = 0  # the next byte of text to compare, and of written
    for _ in range(_MAX_TAKEN_OUT + size // _BYTES_PER_TAKEN_OUT + 1):
        n = min(size - at, end - to)  # (the bytes alike from there, ``same``: all n, or fewer)
        if n > _AT_ONCE:
            same = _common_prefix(text, at, written, to, n)
        else:
            mine, theirs = text[at : at + n], written[to : to + n]
            if mine == theirs:
                same = n
            elif mine[:-1] == theirs[:-1]:  # (a member given again last in the object: AgentScope Java's "type")
                same = n - 1
            else:  # (the first byte that differs: the highest bit of the exclusive or)
                same = n - 1 - ((int.from_bytes(mine, "big") ^ int.from_bytes(theirs, "big")).bit_length() - 1) // 8
        if same == size - at == end - to:
            return True
        cut = text.rfind(b",", at, at + same + 1)
        member = _MEMBER.match(text, cut) if cut >= 0 else None
        if member is None or size - at - same <= end - to - same:
            return False
        after, repeated = member.end(), member.group(1)
        # (the first member of an object text and its last, a string each, are in one object: Java's two "type")
        if after != size - 1 or text[after - 1] != 0x22 or text[0] != 0x7B or not text.startswith(repeated, 1):
            budget -= _twin_cost(text, cut, repeated, budget)
            if budget < 0:
                return False
        to += cut - at  # (the text before the comma matched written; after the member the comparison goes on)
        at = after
    return False


def _common_prefix(text: bytes, at: int, written: bytes, to: int, n: int) -> int:
    """How many of the ``n`` bytes of ``text`` from ``at`` and of ``written`` from ``to`` are alike: compared in
    stretches that double from :data:`_STRETCH` bytes, the first byte that differs in a stretch told by the highest
    bit of their exclusive or (the bytes looked at: at most about twice those alike, plus a stretch)."""
    same, step = 0, _STRETCH
    while same < n:
        k = min(step, n - same)
        mine, theirs = text[at + same : at + same + k], written[to + same : to + same + k]
        if mine != theirs:
            return same + k - 1 - ((int.from_bytes(mine, "big") ^ int.from_bytes(theirs, "big")).bit_length() - 1) // 8
        same, step = same + k, 2 * step
    return n


def _twin_cost(text: bytes, cut: int, member: bytes, budget: int) -> int:
    """The bytes looked at to find ``member`` (``"k":v``, whose comma is at ``cut``) earlier in the same object of
    ``text``; more than ``budget`` when it is not found there."""
    literal = member[-1] != 0x22
    spent, before = 0, cut
    for _ in range(4):
        twin = text.rfind(member, 0, before)
        spent += before - max(twin, 0)
        if twin <= 0 or spent > budget:
            break
        before = twin
        if text[twin - 1] == 0x5C or (literal and text[twin + len(member)] not in _AFTER_VALUE):
            continue  # (inside a string, or a longer literal)
        between = text[twin:cut]
        spent += len(between)
        if _balanced(between):
            return spent
    return budget + 1


def _balanced(between: bytes) -> bool:
    """Whether the brackets of JSON text ``between`` (from a quote that opens a string), outside its strings, close
    every one they open and nothing more: its two ends are in one object."""
    if between.translate(None, _NOT_BRACKETS) == b"":
        return True
    if b"\\" in between:
        between = between.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    brackets = b"".join(between.split(b'"')[0::2]).translate(None, _NOT_BRACKETS)
    for _ in range(_MAX_NESTING + 1):  # (deeper: read again; the cost stays linear)
        if not brackets:
            return True
        fewer = brackets.replace(b"{}", b"").replace(b"[]", b"")
        if len(fewer) == len(brackets):
            return False
        brackets = fewer
    return False


def duplicate_keys(data: JsonInput, value: Any) -> list[Problem]:
    """The keys that come more than once with values that differ in one object of JSON text ``data``, which parsed
    to ``value`` (the parsers keep each one's last value, without a word; a key given again with the same value,
    as AgentScope Java writes each event's ``type``, loses nothing): one ``duplicate-key`` problem per such key, its
    pointer the key's in the object (the object's pointer and the key), an object's before those of the objects
    inside it, siblings in document order (the values a duplicate drops are not looked into); ``[]`` when there is
    none. Two spellings of one key (``"a"`` and ``"\\u0061"``) are the same key; ``1``, ``1.0`` and ``true`` are
    three values.

    Linear in the text. The common case is two C passes and no second parse: ``value`` written back (orjson)
    holds one colon per key it kept, plus the colons of its strings; the text holds one per key it has, plus the
    same colons of its strings, written as ``:`` or as ``\\u003a``. So when the text holds no more colons and
    ``\\u003a`` escapes than the value written back holds colons, no key was dropped. Else (a duplicate, or a
    colon written as an escape) a second filter, a few C passes more (:func:`_equal_repeats_only`), settles the
    text of a writer that gives a member again byte for byte (AgentScope Java's ``type``); what it cannot settle
    is read again with :mod:`json`, which tells each object's keys."""
    text: str | bytes = data if isinstance(data, (str, bytes)) else bytes(data)
    try:
        written = _orjson_dumps(value)
    except orjson.JSONEncodeError:  # (a value loads refuses: nothing to compare with, so read it again)
        pass
    else:
        if _colons(text) <= written.count(b":") or _equal_repeats_only(text, written):
            return []
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    met: list[_Repeated] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        out = _repeated(pairs, obj)
        if type(out) is _Repeated:
            met.append(out)
        return out

    parsed = json.loads(without_bom(text), object_pairs_hook=hook)  # type: ignore[arg-type]
    found: list[Problem] = []
    if not met:  # (only keys given again with the same value, as AgentScope Java writes each event's "type")
        return found
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(parsed, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            if type(node) is _Repeated:
                found.extend(
                    Problem(
                        pointer_of((*path, key)),
                        "duplicate-key",
                        f"key {short_repr(key, 60)} given {n} times in one object, its values differ: readers keep one"
                        " (most, the last)",
                    )
                    for key, n in node.repeated.items()
                )
            stack.extend(((child, (*path, key)) for key, child in reversed(node.items())))
        elif isinstance(node, list):
            stack.extend((node[i], (*path, i)) for i in range(len(node) - 1, -1, -1))
    return found


_WALK_ABOVE = 1 << 16  # bytes (or characters) of JSON text

# A run of more than 20 digits that is no number's fraction or exponent: an integer beyond 64 bits (2**64 has 20
# digits; JSON writes no leading zero), the whole part of a float, or digits inside a string.
_LONG_DIGITS = re.compile(r"(?<![.eE+0-9])(?<![eE]-)[0-9]{21,}")
_LONG_DIGITS_BYTES = re.compile(_LONG_DIGITS.pattern.encode())
#: the first 10 digits of the stand-ins of long integers (20 digits, beyond 2**64): one the text does not hold
_STAND_IN_PREFIXES = ("7315926480", "8426037591", "9537148602", "6284951730")


def _long_integer_problem(data: JsonInput) -> Problem | None:
    """The ``integer-range`` problem, with its pointer, of text msgspec refused for an integer of more digits than
    it (and Python's ``int``) reads: 4300, or ``sys.set_int_max_str_digits``. Linear in the text, whatever the
    digits: each run of more than 20 digits outside a fraction or an exponent is replaced by a 20-digit stand-in
    beyond 64 bits (numbered, its first 10 digits none the text holds), the text is read again, and the value's
    first problem is said of the digits it stands for. None when that reading fails too (the text has another
    error, said as before) or finds none."""
    text: Any = data if isinstance(data, str) else bytes(data)
    prefix = next((p for p in _STAND_IN_PREFIXES if (p if isinstance(text, str) else p.encode()) not in text), None)
    if prefix is None:
        return None
    runs: list[tuple[int, int]] = []

    def stand_in(match: re.Match[Any]) -> Any:
        runs.append(match.span())
        out = f"{prefix}{len(runs) - 1:010d}"
        return out if isinstance(match.string, str) else out.encode()

    pattern: Any = _LONG_DIGITS if isinstance(text, str) else _LONG_DIGITS_BYTES
    try:  # (at most limits.max_bytes / 21 runs: their numbers take 10 digits)
        value = _decode(pattern.sub(stand_in, text))
    except (msgspec.DecodeError, RecursionError, UnicodeError):
        return None
    found = _first_problem(value, limits.max_depth)
    if found is None or found[1] != "integer-range":
        return None
    path = found[0]
    node = value
    for step in path:
        node = node[step]
    digits = str(abs(node))
    if not digits.startswith(prefix):  # (an integer of 20 digits, said as such)
        return Problem(pointer_of(path), "integer-range", found[2])
    start, end = runs[int(digits[len(prefix) :])]
    shown = ("-" if node < 0 else "") + (text[start:end] if isinstance(text, str) else text[start:end].decode())
    message = f"integer {shown[:20]}...({len(shown)} digits) is outside the 64-bit range [-2**63, 2**64 - 1] JSON is written in"
    return Problem(pointer_of(path), "integer-range", message)


# ---- JSON values ---------------------------------------------------------------------------------------


def _scalar_problem(value: Any) -> tuple[str, str] | None:
    """(rule, message) when a non-container value cannot be written as JSON, else None."""
    kind = type(value)
    if kind is str:
        if has_lone_surrogate(value):
            return "lone-surrogate", surrogate_words(value)
        return None
    if kind is int:
        if INT_MIN <= value <= INT_MAX:
            return None
        return (
            "integer-range",
            f"integer {short_repr(value, 60)} is outside the 64-bit range [-2**63, 2**64 - 1] JSON is written in",
        )
    if kind is float:
        if math.isfinite(value):
            return None
        return "json-value", f"{value!r} is not a JSON number"
    if kind is bool or value is None:
        return None
    # Enum members of str, int and float (str enums, IntEnum) are written as their value. Other subclasses
    # are not JSON values: the schema validator refuses them, and orjson cannot write a float's (numpy.float64).
    if isinstance(value, enum.Enum):
        if isinstance(value, str):
            return _scalar_problem(str.__str__(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return _scalar_problem(int(value))
        if isinstance(value, float):
            return _scalar_problem(float(value))
    return "json-value", f"a {kind.__name__} is not a JSON value{_model_hint(value)}"


def _model_hint(value: Any) -> str:
    """What gives the JSON value of one of agentmsg's own objects, said where one is given for JSON (a message
    passed to ``validate``, a block in metadata)."""
    if not type(value).__module__.startswith(("agentmsg.", "agentmsg_models.")):
        return ""
    if callable(getattr(value, "to_dict", None)):
        return " (its to_dict() is)"
    if type(value).__name__.endswith("Block"):
        return " (agentmsg.block_to_dict(block) is)"
    return ""


def _first_problem(instance: Any, max_depth: int) -> tuple[tuple[str | int, ...], str, str] | None:
    """(path, rule, message) of the first problem in document order (a dict's keys and values and a list's items in
    their order, depth first; a key where it is, before its value); None when ``instance`` is JSON."""
    # (what is left to walk, the next one last; a key that is no ASCII string is an entry of its own, depth None)
    stack: list[tuple[Any, int | None, tuple[str | int, ...]]] = [(instance, 0, ())]
    walked: dict[int, int] = {}  # (as check_json_value's walk: a container met again no deeper is not walked again)
    while stack:
        node, depth, path = stack.pop()
        if depth is None:  # a dict's key (``path``: the dict's)
            if type(node) is not str:
                return path, "json-value", f"object key {short_repr(node, 60)} is not a string"
            bad = _scalar_problem(node)
            if bad is not None:
                return path, bad[0], "object key: " + bad[1]
            continue
        kind = type(node)
        if kind is dict or kind is list:
            if depth >= max_depth:
                return path, "max-depth", f"nested deeper than {max_depth} levels (limits.max_depth)"
            seen = walked.get(id(node))
            if seen is not None and seen >= depth:
                continue
            walked[id(node)] = depth
            if kind is dict:
                for key, child in reversed(node.items()):
                    stack.append((child, depth + 1, (*path, key)))
                    if type(key) is not str or not key.isascii():
                        stack.append((key, None, path))
            else:
                stack.extend((node[i], depth + 1, (*path, i)) for i in range(len(node) - 1, -1, -1))
        elif isinstance(node, (dict, list)):
            return path, "json-value", f"a {kind.__name__} is not a JSON value (only dict and list are)"
        else:
            bad = _scalar_problem(node)
            if bad is not None:
                return path, bad[0], bad[1]
    return None


#: the containers whose sharing can make a value's JSON text larger than its object graph
_SHAREABLE: Final = frozenset({dict, list, tuple})

#: the characters from which a string met twice as a value's member shares it too (:func:`shares_members`: the same
#: 1 MiB string a thousand times in a list is 1 GB written). A shorter one is written at most 6 * 63 + 2 bytes at
#: each place that holds it, a member of one of the value's own lists or dicts: what such sharing writes stays
#: linear in the value's object graph; and the readers share shorter strings (orjson keeps one object per key of up
#: to 64 bytes), which are no sharing of the caller's
SHARED_STRING: Final = 64

#: the characters from which a key met in two dicts shares it (:func:`shares_members`: the same 1 MiB key in a thousand
#: dicts is 1 GB written): one more than :data:`SHARED_STRING`, as orjson's reader gives every key of up to 64 bytes
#: one object (a 64-character ASCII key read twice is no sharing of the caller's)
SHARED_KEY: Final = SHARED_STRING + 1


def shares_members(value: Any, seen: set[int] | None = None) -> bool:
    """Whether a dict, list or tuple is met twice in ``value`` (shared by two parents, or held by itself), or a string
    of :data:`SHARED_STRING` characters or more as a member of two of its containers or twice of one, or one of
    :data:`SHARED_KEY` or more as a key of two of its dicts (the same 1 MiB key in a thousand dicts is 1 GB written:
    orjson's reader makes a key longer than 64 bytes anew each time): such a value is small as objects but may be
    vast as JSON text (a list of the same list twice, 40 levels down, is 2**40 values written). One walk of its
    containers, which looks at the type of every member, and at the length of a string and of a key. ``seen``: the
    ids met in the values walked before (``value``'s own too), added to; the caller holds those values."""
    if type(value) not in _SHAREABLE:
        return False
    if seen is None:
        seen = set()
    elif id(value) in seen:
        return True
    else:
        seen.add(id(value))
    add = seen.add
    stack = [value]
    pop, push = stack.pop, stack.append
    shareable = _SHAREABLE
    long, long_key = SHARED_STRING, SHARED_KEY
    while stack:
        node = pop()
        if type(node) is dict:
            for key in node:
                if type(key) is str and len(key) >= long_key:
                    if id(key) in seen:
                        return True
                    add(id(key))
            members: Any = node.values()
        else:
            members = node
        for child in members:
            t = type(child)
            if t in shareable:
                if id(child) in seen:
                    return True
                add(id(child))
                push(child)
            elif t is str and len(child) >= long:
                if id(child) in seen:
                    return True
                add(id(child))
    return False


def _scalar_size(value: Any) -> int:
    """The length of what orjson writes of a value that is no dict, list nor tuple (0 for what it cannot write: the
    checks refuse it)."""
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    try:
        return len(_orjson_dumps(value))
    except (orjson.JSONEncodeError, TypeError):
        return 0


def oversized_at(value: Any, max_bytes: int, max_depth: int | None = None) -> tuple[tuple[str | int, ...], int] | None:
    """Where ``value`` (which :func:`shares_members`) is written longer than ``max_bytes`` bytes of JSON, and how long:
    the path of its deepest dict, list or tuple whose text is over the limit (from the root, the first member so, as
    long as there is one), with that text's length; None when it is within. Linear in its object graph, whatever it
    writes: each container's and each string's written length is counted once (by id) and reused where it is met
    again; a container met inside itself (a cycle, which the checks refuse) counts nothing there. ``max_depth``: a
    value nesting more levels is None too (the depth checks refuse it, ``max-depth``, as the same value unshared)."""
    sizes: dict[int, int] = {}
    levels: dict[int, int] = {}
    held: list[Any] = [value]  # (every container counted, alive: no id is reused meanwhile)
    shareable = _SHAREABLE
    # (a container, and whether its members were pushed: its size is summed when it is met the second time)
    stack: list[tuple[Any, bool]] = [(value, False)]
    open_ids: set[int] = set()
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if not ready:
            if key in sizes or key in open_ids:
                continue
            open_ids.add(key)
            stack.append((node, True))
            held.append(node)
            members = node.values() if type(node) is dict else node
            stack.extend((child, False) for child in members if type(child) in shareable)
            continue
        open_ids.discard(key)
        total = 1 + max(len(node), 1)  # (brackets and commas)
        level = 0
        if type(node) is dict:
            for k, child in node.items():
                total += _member_size(k, sizes) + 1 + _member_size(child, sizes)
                if type(child) in shareable:
                    level = max(level, levels.get(id(child), 0))
        else:
            for child in node:
                total += _member_size(child, sizes)
                if type(child) in shareable:
                    level = max(level, levels.get(id(child), 0))
        sizes[key] = total
        levels[key] = level + 1
    size = sizes.get(id(value), 0)
    if size <= max_bytes or (max_depth is not None and levels.get(id(value), 0) > max_depth):
        return None
    path: list[str | int] = []
    node = value
    while True:
        pairs = node.items() if type(node) is dict else enumerate(node)
        deeper = next(
            ((k, c) for k, c in pairs if type(c) in shareable and sizes.get(id(c), 0) > max_bytes and c is not node),
            None,
        )
        if deeper is None or len(path) > limits.max_depth:
            return tuple(path), sizes[id(node)]
        path.append(deeper[0] if type(deeper[0]) in (str, int) else short_repr(deeper[0], 60))
        node = deeper[1]


def _member_size(value: Any, sizes: dict[int, int]) -> int:
    if type(value) in _SHAREABLE:
        return sizes.get(id(value), 0)
    if type(value) is str:
        key = id(value)
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = len(_orjson_dumps(value)) if not has_lone_surrogate(value) else 3 * len(value) + 2
        return size
    return _scalar_size(value)


def written_within(value: Any) -> bool:
    """Whether the C writer's dry run (``_speedups.writes``, no model plans) writes ``value`` within
    :data:`QUICK_BYTES` (or ``limits.max_bytes``, if lower): it holds JSON types and tuples only, and its count of the
    bytes (6 a character) is within that. True is a verdict that nothing in it is to be refused for its size (about a
    third of :func:`shares_members`' cost for a tool call's input); False is none (pure Python too): the caller walks
    it. The dry run walks a value sharing its members path by path, so it stops at that count: a list of the same
    list twice, 40 levels down, costs it at most that many steps before the walk, linear in its containers, decides."""
    native = _native_writes
    return native is not None and native(
        value, _NO_PLANS, _no_fallback, _orjson_dumps, min(QUICK_BYTES, limits.max_bytes)
    )


#: The count of bytes up to which :func:`written_within` asks the C writer's dry run (a bound on its steps: it walks a
#: shared value path by path): a tool call's input or a usual message is far within it, and a larger value, whose walk
#: costs more than this, goes to the walk as before
QUICK_BYTES: Final = 64 * 1024


def _check_written_size(instance: Any, kind: str | None, max_depth: int | None = None) -> None:
    """Refuse ``instance`` (rule ``max-bytes``, :class:`SizeLimitError`) when it shares its members
    (:func:`shares_members`) and its JSON text would be longer than ``limits.max_bytes``: whatever is accepted can be
    written back, and nothing writes or walks it path by path first. Nested past ``limits.max_depth`` too, it is left
    to the depth checks (``max-depth``, as for the same value unshared, which bound their walks already). Where the C
    kernels are built, their dry run answers first (:func:`written_within`): a value it writes within the limit has
    nothing to refuse; else (pure Python, a value it gives up on) one walk of its containers' members' types."""
    if type(instance) in _SHAREABLE and not written_within(instance) and shares_members(instance):
        found = oversized_at(instance, limits.max_bytes, limits.max_depth if max_depth is None else max_depth)
        if found is not None:
            path, size = found
            raise SizeLimitError(
                [
                    Problem(
                        pointer_of(path),
                        "max-bytes",
                        f"{size} bytes of JSON (a value sharing its members) exceeds the limit of {limits.max_bytes}"
                        " (limits.max_bytes)",
                    )
                ],
                kind,
            )


def check_value_size(instance: Any, kind: str | None = None, max_depth: int | None = None) -> None:
    """The size check :func:`check_json_value` runs first, alone: a dict, list or tuple sharing its members
    (:func:`shares_members`) written longer than ``limits.max_bytes`` is refused (:class:`SizeLimitError`, rule
    ``max-bytes``, at the deepest part over the limit), in time linear in its containers; any other value passes, and
    one nesting more than ``max_depth`` levels (``limits.max_depth`` by default), left to the depth checks."""
    _check_written_size(instance, kind, max_depth)


def check_written_size(value: Any, default: Callable[[Any], Any], kind: str | None = None) -> None:
    """What :func:`check_json_value` first asks of a value it is given (a value sharing its members written past
    ``limits.max_bytes`` is refused, rule ``max-bytes``, at the deepest part over the limit), asked of ``value`` as a
    writer writes it: model objects as ``default`` gives their dicts (their own free-form values in them, shared
    where the object shares them), copied as :func:`encode_error` copies them (a container met again shares its
    copy). For the writer whose C kernel stopped at ``limits.max_bytes`` or at a part of a free-form value met
    twice (a message changed after construction: the constructors refuse such a value): linear in its object graph,
    where writing it would cost its every path."""
    _check_written_size(_plain(value, default), kind)


def written_copy(value: Any, default: Callable[[Any], Any]) -> Any:
    """``value`` as a writer writes it, as plain dicts and lists: model objects as ``default`` gives their dicts,
    each object and container met again sharing its copy (:func:`check_written_size`'s copy: a tool result holding the
    same block twice, 40 levels down, is 81 dicts and lists, not 2**40), in time linear in its distinct objects. A
    cycle raises :class:`ValidationError` (rule ``cycle``) at the pointer where it comes back."""
    return _plain(value, default)


def check_json_value(
    instance: Any,
    kind: str | None = None,
    *,
    walk: bool = False,
    remember_after: int = REMEMBER_AFTER,
    shared: bool = True,
) -> None:
    """Check that a parsed value is JSON that can be written back: dicts with string keys, lists, strings
    without lone surrogates, integers in [-2**63, 2**64 - 1], finite floats, booleans and null, nested at most
    ``limits.max_depth`` deep. Raises :class:`ValidationError` with the pointer of the first bad value
    (:class:`SizeLimitError` for depth). Linear, and deep input cannot exhaust the Python stack.

    At the default depth limit the common case is two C passes: orjson writes the value (which checks keys,
    strings, integer range and depth, and refuses subclasses, dataclasses and dates) and reads it back equal
    (which catches what orjson writes but JSON does not hold: NaN, tuples, enums, UUIDs). It reads back with
    msgspec: orjson's reader peaks at about 13 bytes of memory per byte of input, msgspec's at 1-3. Anything
    else takes the iterative walk, which finds the first problem. ``walk``: take the walk at once (it writes
    nothing). ``remember_after``: the dicts and lists the walk meets before it remembers those it walked (a value
    sharing its members costs its containers, not its paths); a value parsed from a text of N bytes, which shares
    none and holds fewer than N, gives N and the walk remembers none. A value that shares its members (a list of the
    same list twice, 40 levels down) and would be written longer than ``limits.max_bytes`` is refused first (rule
    ``max-bytes``, :func:`_check_written_size`), before anything writes it; ``shared=False``: the caller knows it
    shares none (parsed from text) or has asked."""
    if shared:
        _check_written_size(instance, kind)
    max_depth = limits.max_depth
    if max_depth == MAX_WRITABLE_DEPTH and not walk:
        try:
            if _decode(_orjson_dumps(instance, option=_STRICT)) == instance:
                return
        except (orjson.JSONEncodeError, orjson.JSONDecodeError, RecursionError, TypeError, ValueError):
            pass
    stack: list[tuple[Any, int]] = [(instance, 0)]
    pop, push = stack.pop, stack.append
    ok_scalars = _OK_SCALARS
    # (past ``remember_after`` dicts and lists, each one's id and the greatest depth it was walked at: one met again
    # no deeper holds nothing its walk did not see, so a value sharing its members, a dict of the same dict twice a
    # hundred levels down, costs its containers, not its 2**100 paths; deeper, it is walked again, at most once per
    # level. The value holds every one of them alive.)
    walked: dict[int, int] | None = None
    left = remember_after
    while stack:
        node, depth = pop()
        kind_of = type(node)
        if kind_of is dict or kind_of is list:
            if walked is not None:
                seen = walked.get(id(node))
                if seen is not None and seen >= depth:
                    continue
                walked[id(node)] = depth
            else:
                left -= 1
                if left < 0:
                    walked = {}
        if kind_of is dict:
            children: Any = node.values()
            if depth >= max_depth or any(
                type(key) is not str or (not key.isascii() and _SURROGATE.search(key)) for key in node
            ):
                _raise_first(instance, kind)
        elif kind_of is list:
            children = node
            if depth >= max_depth:
                _raise_first(instance, kind)
        else:
            if _scalar_problem(node) is not None:
                _raise_first(instance, kind)
            continue
        for child in children:
            t = type(child)
            if t is str:
                if not child.isascii() and _SURROGATE.search(child):
                    _raise_first(instance, kind)
            elif t is dict or t is list:
                push((child, depth + 1))
            elif t is int:
                if not INT_MIN <= child <= INT_MAX:
                    _raise_first(instance, kind)
            elif t is float:
                if child - child != 0.0:  # nan or infinite
                    _raise_first(instance, kind)
            elif t not in ok_scalars:
                push((child, depth + 1))


_OK_SCALARS = frozenset({bool, type(None)})


def json_value_copy(instance: Any, kind: str | None = None) -> Any:
    """:func:`check_json_value`, then a copy of ``instance`` that shares no dict or list with it (strings and
    numbers, immutable, are the same objects): what a reader of a caller's parsed JSON keeps (``Msg.from_dict``),
    so that the caller changing its dict never changes the message. At the default depth limit the common case is
    the check's own two C passes, whose second is the copy; otherwise the walk, then one C round trip. A value
    sharing its members written past ``limits.max_bytes`` is refused (``max-bytes``) before either."""
    _check_written_size(instance, kind)
    if limits.max_depth == MAX_WRITABLE_DEPTH:
        try:
            copied = _decode(_orjson_dumps(instance, option=_STRICT))
            if copied == instance:
                return copied
        except (orjson.JSONEncodeError, orjson.JSONDecodeError, RecursionError, TypeError, ValueError):
            pass
    check_json_value(instance, kind, walk=True, shared=False)
    # (what the walk lets through and the strict writer does not: enum members and str/int subclasses, as values)
    return _decode(_orjson_dumps(instance))


def _raise_first(instance: Any, kind: str | None) -> None:
    found = _first_problem(instance, limits.max_depth)
    if found is None:  # pragma: no cover (the fast walk and this one agree)
        return
    path, rule, message = found
    if rule == "max-depth":  # (at the array or object that crosses the limit, as the parser's refusal names it)
        raise SizeLimitError([Problem(pointer_of(path), rule, message)], kind)
    raise ValidationError([Problem(pointer_of(path), rule, message)], kind)


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """Compact JSON (orjson). A value that cannot be written raises :class:`ValidationError` naming the
    rule (``max-depth``, ``integer-range``, ``lone-surrogate``, ``json-value``), never a bare TypeError; so does one
    nested deeper than a lowered ``limits.max_depth`` (:func:`written_too_deep`: what the readers would refuse)."""
    try:
        out = _orjson_dumps(value, default=default)
    except orjson.JSONEncodeError as exc:
        raise encode_error(value, default, exc) from None
    if limits.max_depth < MAX_WRITABLE_DEPTH and written_too_deep(out):
        raise encode_error(value, default, ValueError(depth_message()))
    return out


def written_too_deep(out: bytes) -> bool:
    """Whether JSON text a writer wrote nests deeper than ``limits.max_depth``, which every reader holds it to:
    what is written is read back under the same limits. At the default limit never (orjson's writer refuses
    deeper, and the writers call this only below it); below it, a count of the brackets, then (when there are
    more than the limit) the text read and walked: a lowered limit's cost, not the default path's."""
    max_depth = limits.max_depth
    if max_depth >= MAX_WRITABLE_DEPTH or out.count(b"[") + out.count(b"{") <= max_depth:
        return False
    return deeper_than(_orjson_loads(out), max_depth)


def encode_error(
    value: Any, default: Callable[[Any], Any] | None, exc: Exception, kind: str | None = None
) -> ValidationError:
    """Why orjson could not write ``value``: the first problem of its JSON form, as a ValidationError. Bounded
    time and memory whatever ``value`` is: a list or dict that holds itself is rule ``cycle`` (the pointer where
    it comes back), and nothing deeper than ``limits.max_depth`` is copied."""
    try:
        plain = _plain(value, default)
        check_json_value(plain, kind)
    except ValidationError as error:
        return error if error.kind == kind else type(error)(error.problems, kind)
    except RecursionError:
        return depth_error(kind)
    return ValidationError([Problem("", "json-value", f"cannot be written as JSON: {exc}")], kind)


def _plain(value: Any, default: Callable[[Any], Any] | None) -> Any:
    """``value`` with every object ``default`` handles replaced by what it returns (iteratively), copied no deeper
    than ``limits.max_depth`` + 1 (the check then says ``max-depth``). A dict or list met again inside itself raises
    :class:`ValidationError` (rule ``cycle``) with the pointer where it comes back. A dict or list met again elsewhere
    (shared, no cycle) is copied once for every depth it is met at first at (shallower, more of it is copied): a
    value sharing its members, a dict of the same dict twice a hundred levels down, costs its containers, not its
    2**100 paths. (The copy deeper than needed holds a container past ``max_depth`` where the cut one did, and the
    check's first problem is that one.)"""
    max_depth = limits.max_depth
    alive: list[Any] = []  # every object whose id is remembered, held so that no id is reused meanwhile
    # (a dict's or list's id, as given: its copy and the depth it was copied at)
    copies: dict[int, tuple[Any, int]] = {}
    root: list[Any] = [value]
    # (parent, key, depth, the ids of the containers above, path)
    stack: list[tuple[Any, Any, int, frozenset[int], tuple[str | int, ...]]] = [(root, 0, 0, frozenset(), ())]
    while stack:
        parent, key, depth, above, path = stack.pop()
        node = given = parent[key]
        seen = 0
        while default is not None and not isinstance(node, (dict, list, str, int, float, type(None))) and seen < 4:
            if id(node) in above:
                raise _cycle(path)
            try:
                node = default(node)
            except Exception:
                break
            seen += 1
        if isinstance(node, (dict, list)):
            if id(node) in above:
                raise _cycle(path)
            if depth > max_depth:  # (deep enough for the check to say so)
                parent[key] = []
                continue
            copied = copies.get(id(given))
            if copied is not None and copied[1] <= depth:
                parent[key] = copied[0]
                continue
            alive.append((given, node))
            inner = above | {id(given), id(node)}
            if isinstance(node, dict):
                node = dict(node)
                # (a key that is no string is refused at the dict's own pointer: its text is only a placeholder)
                stack.extend(
                    (node, k, depth + 1, inner, (*path, k if type(k) is str else short_repr(k, 60))) for k in node
                )
            else:
                node = list(node)
                stack.extend((node, i, depth + 1, inner, (*path, i)) for i in range(len(node)))
            copies[id(given)] = (node, depth)
        parent[key] = node
    return root[0]


def _cycle(path: tuple[str | int, ...]) -> ValidationError:
    return ValidationError(
        [Problem(pointer_of(path), "cycle", "holds itself (a cycle): it cannot be written as JSON")], None
    )


class _Written(str):
    """JSON text :func:`deep_json_text` has written already, met again on its stack (a bracket, a comma, a key and
    its colon)."""


_CLOSE_OBJECT, _CLOSE_ARRAY, _COMMA = _Written("}"), _Written("]"), _Written(",")


def deep_json_text(value: Any, scalar: Callable[[Any], str]) -> str:
    """The compact JSON text of ``value`` at any depth, with a stack (no recursion), in linear time: the one
    writer for values nested deeper than orjson writes (255 levels) or holding what it refuses. Dicts, lists
    and tuples are walked; ``scalar`` writes every key and every other value (raising ``TypeError`` or
    ``ValueError`` for what is no JSON, as ``json.dumps`` does). A key that is not a string raises
    ``TypeError``."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if type(node) is _Written:
            out.append(node)
        elif isinstance(node, dict):
            out.append("{")
            stack.append(_CLOSE_OBJECT)
            items = list(node.items())
            for k in range(len(items) - 1, -1, -1):
                key, child = items[k]
                if not isinstance(key, str):
                    raise TypeError(f"a key of type {type(key).__name__} is not JSON")
                stack.append(child)
                stack.append(_Written(("," if k else "") + scalar(key) + ":"))
        elif isinstance(node, (list, tuple)):
            out.append("[")
            stack.append(_CLOSE_ARRAY)
            for k in range(len(node) - 1, -1, -1):
                stack.append(node[k])
                if k:
                    stack.append(_COMMA)
        else:
            out.append(scalar(node))
    return "".join(out)


def join_surrogates(text: str) -> str:
    """``text`` with each high surrogate followed by a low one joined into the character they encode (a pair
    split across two deltas); surrogates that are alone stay as they are."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def parse_arguments(raw: str, why: list[Problem] | None = None) -> tuple[str, Any, str | None]:
    """A tool call's arguments text (not empty) as its message has it: ``(content, input, error)``: the text
    (a surrogate pair split across deltas joined), its JSON object (``{}`` when it is none) and why it is none
    (None when it is one). ``error`` is the runtime-neutral text of the conformance vectors ("arguments are not
    valid JSON" whatever the reader found); the reader's own problems (pointer into the arguments, the rule
    broken: ``json``, ``integer-range``, ``lone-surrogate``, ``max-depth``, ...) go to ``why`` when it is given."""
    if has_lone_surrogate(raw):
        raw = join_surrogates(raw)  # a pair split across deltas is one character, as in UTF-16
    try:
        # The codec's reader: what it accepts can be written back (integers within 64 bits, finite
        # numbers, no lone surrogates, within the limits), so no runtime's parser shows through.
        args = loads(raw.encode("utf-8", "surrogatepass"))
    except ValidationError as exc:
        if why is not None:
            why.extend(exc.problems)
        return raw, {}, "arguments are not valid JSON"
    if isinstance(args, dict):
        return raw, args, None
    return raw, {}, f"arguments are JSON but not an object: {json_type(args)}"
