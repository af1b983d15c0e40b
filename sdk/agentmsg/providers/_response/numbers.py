"""JSON numbers a double cannot hold, in provider payloads: ``1e400``, an integer of hundreds of digits, an integer
beyond 64 bits that orjson reads as a float. A payload holding one is still read (:func:`loads_beyond_double`), such a
number keeps its text (:class:`HugeNumber`), and a value holding one is written back as JSON text as it came
(:func:`json_text_of`): a tool call's arguments are never rounded, nulled or lost for a number in them."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from agentmsg._codec.jsontext import INT_MAX, INT_MIN, deep_json_text

__all__ = [
    "OVERFLOW",
    "HugeNumber",
    "as_event_value",
    "first_beyond_double",
    "json_text_of",
    "loads_beyond_double",
    "overflowed",
]

OVERFLOW = float(2**63)


def overflowed(value: Any) -> bool:
    """Whether ``value`` holds a float that orjson may have read from an integer beyond 64 bits (an integral
    float of magnitude 2**63 or more)."""
    stack = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is dict:
            stack.extend(v.values())
        elif kind is list:
            stack.extend(v)
        elif kind is float and abs(v) >= OVERFLOW and v.is_integer():
            return True
    return False


def json_text_of(value: Any) -> str:
    """Compact JSON text of a value read from JSON (dicts, lists, strings, numbers, booleans, None), at any depth
    (no recursion) and with integers of any size, for what orjson cannot write (:meth:`~agentmsg.providers._response.builder.StreamBuilder.json_text`):
    :func:`~agentmsg._codec.jsontext.deep_json_text`, an integer in digits and a :class:`HugeNumber` as its text."""
    return deep_json_text(value, _scalar_text)


def _scalar_text(node: Any) -> str:
    kind = type(node)
    if kind is int:
        return str(node)
    if kind is HugeNumber:
        return str(node.text)
    return orjson.dumps(node).decode()


class HugeNumber(float):
    """A number a payload holds that a double cannot (``1e400``): infinite as a float, its JSON text kept in
    ``text`` (:func:`loads_beyond_double`). No JSON writer takes it (orjson and msgspec refuse a float subclass), so
    it never becomes a rounded number or a null: a call's arguments keep its text (:meth:`~agentmsg.providers._response.builder.StreamBuilder.json_text`),
    a count or a text field that holds it is no count or text (:func:`safe_int`, :meth:`StreamBuilder.string`)."""

    __slots__ = ("text",)

    def __new__(cls, text: str) -> HugeNumber:
        number = float.__new__(cls, float(text))
        number.text = text
        return number

    text: str


def loads_beyond_double(text: str | bytes) -> Any:
    """A payload orjson refuses for a number beyond a double's range (``1e400``, or an integer of hundreds of
    digits), read by the standard library with each such number a :class:`HugeNumber` (an integer beyond 64 bits an
    int, as the codec's fallback reads it); None when it is no JSON so either (NaN, Infinity, cut short, ...). A tool
    input holding such a number then keeps the model's text, as arguments sent as text do, and the payload is not
    lost for it."""

    def number(digits: str) -> float:
        value = float(digits)
        return HugeNumber(digits) if value in (math.inf, -math.inf) else value

    def integer(digits: str) -> Any:
        return int(digits) if len(digits) <= 4000 else HugeNumber(digits)  # (int() of more digits is refused)

    def constant(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_float=number, parse_int=integer, parse_constant=constant)
    except (ValueError, RecursionError):
        return None


def first_beyond_double(text: str) -> str | None:
    """The first number of ``text`` beyond a double's range (``1e400``) when ``text`` is otherwise whole JSON (what
    :func:`loads_beyond_double` reads), else None: JSON the codec refuses for its number, not JSON cut short."""
    stack = [loads_beyond_double(text)]
    while stack:  # (in the text's order, with no recursion)
        node = stack.pop()
        if type(node) is HugeNumber:
            return node.text
        if type(node) is dict:
            stack.extend(reversed(node.values()))
        elif type(node) is list:
            stack.extend(reversed(node))
    return None


def as_event_value(value: Any) -> tuple[Any, str | None]:
    """``value`` (provider JSON an event carries as it came: grounding, a provider block; a copy) with each number no
    event can hold (beyond a double's range, ``1e400``, or an integer outside [-2**63, 2**64 - 1]) replaced by its
    JSON text, a string, so that the event validates and nothing is rounded or lost; and the path (``a/0/b``) of the
    first one replaced, None when there was none. No recursion."""
    first: str | None = None
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, str]] = [(root, 0, "")]
    while stack:
        parent, key, path = stack.pop()
        node = parent[key]
        kind = type(node)
        if kind is dict:
            parent[key] = node = dict(node)
            stack.extend((node, k, f"{path}/{k}" if path else str(k)) for k in reversed(list(node)))
            continue
        if kind is list:
            parent[key] = node = list(node)
            stack.extend((node, i, f"{path}/{i}" if path else str(i)) for i in range(len(node) - 1, -1, -1))
            continue
        if kind is HugeNumber:
            text = node.text
        elif kind is int and not INT_MIN <= node <= INT_MAX:
            text = str(node)
        elif kind is float and not math.isfinite(node):
            text = repr(node)
        else:
            continue
        parent[key] = text
        first = path if first is None else first
    return root[0], first
