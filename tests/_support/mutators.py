"""The mutators of every fuzz test: edits of parsed JSON, of event lists, of stream bodies and of bytes.

Two drivers of the same edits: a seeded ``random.Random`` (the loops that ``make fuzz`` time-boxes and
``AGENTMSG_FUZZ_SEED`` replays, tests/_support/budget.py) and Hypothesis (whose draws shrink to a small
failing case). Every function returns a new value; what it is given is never changed.

* JSON values: ``mutate_json`` (seeded) and ``mutated`` (Hypothesis) replace a value by one of another
  JSON type or range, remove a key, add one (unknown, or a near miss of a declared one) or wrap a value in
  hundreds of levels; ``edit`` is the one edit both make. ``json_paths`` lists where an edit can go.
* Python values: ``python_valued`` (Hypothesis) puts values that are no JSON (a tuple, a UUID, a datetime, bytes,
  a NaN, a set, a subclass of str, int or dict, a mapping that is no dict, a key that is no string) at random
  places of parsed JSON, or values the readers take as JSON (an enum member).
* Legacy keys: ``legacy_keyed`` (Hypothesis) writes a message's or block's tool results and tool calls in the
  legacy forms the readers map (``result``, ``toolUseId``, ``arguments``, a ``tool_call``, text ``output``, an
  AgentScope Python message), some holding what the readers refuse once they read it in its current form.
* JSON text: ``edited_json_text`` (Hypothesis) cuts it short, changes a byte, adds a lone surrogate escape,
  an integer beyond 64 bits or a duplicate key.
* Provider bodies: ``mutate_payloads`` mutates the JSON payloads of an SSE or JSON-lines body in place;
  ``random_cuts`` cuts a body into chunks.
* Agent event lists: ``garble_events`` drops, duplicates, replays, reorders and retypes events and removes
  keys or gives them junk values; ``reordered`` only drops, repeats and swaps the items of a stream (a UI
  protocol's events or chunks, each left whole).
* Bytes: ``garble_bytes`` flips bytes, cuts them out, cuts the end, inserts line breaks, invalid UTF-8,
  byte order marks or a copy of what came before; ``insert_bytes`` inserts given pieces, cuts and truncates.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import http
import json
import random
import types
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

import agentmsg
from tests._support.strategies import json_value, odd_timestamps, short

# ---- JSON values ------------------------------------------------------------------------------------

# Values of every JSON type, empty and nested ones, strings a parser might take for a keyword, numbers beyond
# a double's exactness and beyond 64 bits.
ODD_VALUES: list[Any] = [
    None, 0, -1, 5, 1.5, 1e308, 2**70, -(2**70), True, False, "", "x", "null", "[DONE]", "é" * 3,
    [], [None], [1, "a"], {}, {"type": None}, {"a": {"b": []}},
]  # fmt: skip

# Keys an edit may add: unknown ones and near misses of declared ones.
NEW_KEYS = ["future", "Type", "mimeType", "min_pixels", "input_tokens"]

# Values (and keys) of tens of kilobytes, of every JSON type that can be that large: what is said of them must not be
# (an image's base64 in the wrong field, a runaway id); errors.MESSAGE_MAX bounds every problem's message.
HUGE = 20_000
HUGE_VALUES: list[Any] = [
    "A" * HUGE, "é" * HUGE, "9" * HUGE, ["B" * HUGE], {"k": "C" * HUGE}, {"K" * HUGE: 1}, [0] * (HUGE // 2),
]  # fmt: skip
HUGE_KEYS = ["K" * HUGE, "future"]


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in parsed JSON (the root's is ``()``), parents before children."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += json_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += json_paths(v, (*prefix, i))
    return out


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def edit(value: Any, path: tuple[Any, ...], action: str, new: Any = None, *, key: Any = None, depth: int = 1) -> Any:
    """``value`` (parsed JSON, changed in place) with one edit at ``path``: ``replace`` (by ``new``),
    ``delete`` (the key or item), ``add`` (``key``: ``new`` beside the value, in a dict) or ``deepen`` (the
    value wrapped in ``depth`` arrays). An edit at the root replaces the root; a path an earlier edit removed,
    or an edit that does not apply there, changes nothing. Returns the (new) root."""
    if not path:
        return new if action == "replace" else value
    parent = value
    try:
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if action == "replace":
            parent[last] = new
        elif action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[key] = new
        elif action == "deepen":
            inner = parent[last]
            for _ in range(depth):
                inner = [inner]
            parent[last] = inner
    except (KeyError, IndexError, TypeError):
        pass  # an earlier edit removed or replaced this path
    return value


def mutate_json(
    value: Any,
    rng: random.Random,
    *,
    values: Sequence[Any] = ODD_VALUES,
    edits: Sequence[int] = (1, 1, 2, 3),
    delete: float = 0.15,
    add: float = 0.0,
    keys: Sequence[str] = NEW_KEYS,
) -> Any:
    """A copy of ``value`` (parsed JSON) after ``rng.choice(edits)`` seeded edits, each at a random path below
    the root: in a dict, the key removed with probability ``delete``, or with probability ``add`` one of ``keys``
    set beside it (added, or replaced where it is already) to one of ``values``; otherwise the value replaced by
    one of ``values``."""
    value = _copy(value)
    paths = [p for p in json_paths(value) if p]
    for _ in range(rng.choice(edits)):
        if not paths:
            break
        path = rng.choice(paths)
        node = value
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]]  # still there: not a key an earlier edit removed, nor an index into a dict
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
        roll = rng.random() if isinstance(node, dict) else 1.0
        if roll < delete:
            edit(value, path, "delete")
        elif roll < delete + add:
            edit(value, path, "add", _copy(rng.choice(values)), key=rng.choice(keys))
        else:
            edit(value, path, "replace", _copy(rng.choice(values)))
    return value


REPLACEMENTS = st.one_of(
    json_value,
    st.sampled_from(
        [None, "", "USER", "user", "text", "tool_result", "pending", "FINISHED", -1, 1.5, 2**64, -(2**63) - 1, [], {}]
    ),
    odd_timestamps,
    st.just(2**70),
)


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (parsed JSON) after a few random edits: a value replaced, a key removed or added (an unknown
    key, or a near miss of a declared one), a container wrapped in hundreds of levels."""
    value = _copy(value)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(value)))
        action = draw(st.sampled_from(["replace", "delete", "add", "deepen", "replace"]))
        if not path:
            if action == "replace":
                value = draw(REPLACEMENTS)
            continue
        parent = value
        for part in path[:-1]:
            parent = parent[part]
        if action == "replace":
            edit(value, path, "replace", draw(REPLACEMENTS))
        elif action == "delete":
            edit(value, path, "delete")
        elif action == "add" and isinstance(parent, dict):
            key = draw(st.sampled_from(NEW_KEYS) | short)
            edit(value, path, "add", draw(REPLACEMENTS), key=key)
        elif action == "deepen":
            edit(value, path, "deepen", depth=draw(st.sampled_from([1, 100, 251, 252, 253, 260])))
    return value


# Python values that are no JSON value, as a caller's parsed JSON may hold them: what ``Msg.from_dict`` and every
# reader of parsed JSON refuse (json-value, at the value's pointer; the key of a dict at the dict's), and what orjson
# would write without a word (a tuple as an array, a UUID or a datetime as a string, a NaN as null, a str or dict
# subclass as its value)


class _Str(str):
    pass


class _Int(int):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _Plain(enum.Enum):
    A = 1


class _Text(str, enum.Enum):  # (a str enum member is written as its value: the readers take it)
    USER = "USER"


NOT_JSON: list[Callable[[Any], Any]] = [  # each makes one from the value it replaces
    lambda v: tuple(v) if isinstance(v, list) else (v,),
    lambda v: uuid.UUID(int=7),
    lambda v: datetime.datetime(2026, 12, 7, 3, 4, 5, tzinfo=datetime.timezone.utc),
    lambda v: datetime.date(2026, 12, 7),
    lambda v: v.encode() if isinstance(v, str) else b"x",
    lambda v: float("nan"),
    lambda v: float("-inf"),
    lambda v: set(v) if isinstance(v, list) and all(isinstance(i, (str, int)) for i in v) else {1},
    lambda v: frozenset(),
    lambda v: _Str(v) if isinstance(v, str) else _Str("x"),
    lambda v: _Int(v) if isinstance(v, int) and not isinstance(v, bool) else _Int(1),
    lambda v: _Dict(v) if isinstance(v, dict) else _Dict(),
    lambda v: collections.OrderedDict(v) if isinstance(v, dict) else collections.OrderedDict(),
    lambda v: types.MappingProxyType(v) if isinstance(v, dict) else types.MappingProxyType({}),
    lambda v: collections.UserDict(v) if isinstance(v, dict) else collections.UserList([v]),
    lambda v: decimal.Decimal("1.5"),
    lambda v: _Plain.A,
    lambda v: 1 + 2j,
]
#: Python values the readers take as the JSON they write (a str or int enum member is its value)
AS_JSON: list[Callable[[Any], Any]] = [lambda v: _Text.USER, lambda v: http.HTTPStatus.OK]
#: keys no JSON object has (a dict's key is refused at the dict's pointer)
NOT_JSON_KEYS: list[Any] = [1, None, 1.5, ("a",), b"k", _Str("k"), uuid.UUID(int=1)]


@st.composite
def python_valued(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (parsed JSON) after one to three edits at random places that make it a Python value which may
    be no JSON (:data:`NOT_JSON`): a value replaced by (or turned into) a tuple, a UUID, a datetime, bytes, a
    NaN, a set, a str, int or dict subclass, a mapping that is no dict; a key that is no string added; or a value
    replaced by one the readers take (:data:`AS_JSON`), or the whole value given as a mapping that is no dict (what
    ``Msg.from_dict`` reads as its dict). Nothing is changed where an edit goes twice the same way."""
    value = _copy(value)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(value)))
        action = draw(st.sampled_from(["not-json", "not-json", "not-json", "key", "as-json"]))
        if not path:
            if isinstance(value, dict) and action != "key":
                value = draw(st.sampled_from([types.MappingProxyType, collections.OrderedDict, _Dict]))(value)
            continue
        parent = value
        try:
            for part in path[:-1]:
                parent = parent[part]
            old = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit made this path no container
        if action == "key":
            if isinstance(old, dict):
                old[draw(st.sampled_from(NOT_JSON_KEYS))] = draw(json_value)
            continue
        make = draw(st.sampled_from(NOT_JSON if action == "not-json" else AS_JSON))
        try:
            parent[path[-1]] = make(old)
        except TypeError:  # (an edit made ``parent`` immutable: a tuple, a frozenset, a mapping proxy)
            continue
    return value


#: values of a legacy ``result`` the readers refuse once they read them as ``output`` (an output item that is no
#: block, a block missing a key, a type no block has)
REFUSED_RESULTS: list[Any] = [["x"], [1, {"type": "text", "text": "a"}], {"type": "text"}, [{"type": "bogus"}], {}]


def _tool_blocks(value: Any) -> list[dict[str, Any]]:
    """The tool_use and tool_result dicts of parsed JSON (nested in outputs too), in document order."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("tool_use", "tool_result"):
                found.append(node)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def has_tool_blocks(value: Any) -> bool:
    return bool(_tool_blocks(value))


@st.composite
def legacy_keyed(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (a message or a block, parsed JSON) with one to three of its tool blocks written in a legacy form
    the readers map (docs/wire-format.md, "Legacy keys"): a tool result's ``output`` as ``result`` (the list, its
    one block, its one text as text; or a value the readers refuse once read as ``output``), its ``id`` as
    ``toolUseId``, its output as text; a tool call's ``input`` as ``arguments`` (the object, or its JSON text), or
    the call as AgentScope Python 2.x's ``tool_call`` with ``input`` text; and, for a message, now and then its role
    in lowercase (AgentScope Python's: the schema refuses it as it is, the readers read it)."""
    value = _copy(value)
    blocks = _tool_blocks(value)
    if not blocks:
        return value
    for _ in range(draw(st.integers(1, 3))):
        b = draw(st.sampled_from(blocks))
        if b.get("type") == "tool_result":
            how = draw(st.sampled_from(["result", "result", "refused", "toolUseId", "text"]))
            output = b.get("output")
            if how == "toolUseId" and "id" in b:
                b["toolUseId"] = b.pop("id")
            elif how == "text" and isinstance(output, list) and len(output) == 1 and output[0].get("type") == "text":
                b["output"] = output[0].get("text")
            elif how == "refused":
                b.pop("output", None)
                b["result"] = draw(st.sampled_from(REFUSED_RESULTS))
            elif how == "result" and isinstance(output, list):
                del b["output"]
                one = output[0] if len(output) == 1 and isinstance(output[0], dict) else None
                text = one.get("text") if one is not None and set(one) == {"type", "text"} else None
                b["result"] = draw(st.sampled_from([output, one, text])) if one is not None else output
                if b["result"] is None:
                    b["result"] = output
        elif b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
            how = draw(st.sampled_from(["object", "text", "tool_call"]))
            args = b.pop("input")
            if how == "object":
                b["arguments"] = args
            else:
                b.pop("content", None)
                b["arguments" if how == "text" else "input"] = json.dumps(args)
                if how == "tool_call":
                    b["type"] = "tool_call"
    if (
        isinstance(value, dict)
        and value.get("role") in ("USER", "ASSISTANT", "SYSTEM")
        and draw(st.integers(0, 7)) == 0
    ):
        value["role"] = value["role"].lower()
    return value


# ---- JSON text -----------------------------------------------------------------------------------------

TEXT_EDITS = st.sampled_from(["truncate", "byte", "surrogate", "bigint", "duplicate", "none", "none"])


@st.composite
def edited_json_text(draw: st.DrawFn, text: str) -> str | bytes:
    """JSON text after one edit (or none): cut short, a lone surrogate escape (or a pair) in its first string,
    an integer beyond 64 bits for its first 0, a duplicate ``id`` key, or one byte changed (then bytes, which
    may be no UTF-8)."""
    how = draw(TEXT_EDITS)
    if how == "truncate" and text:
        return text[: draw(st.integers(0, len(text) - 1))]
    if how == "surrogate":
        at = text.find('"', 1)
        if at > 0:
            escape = draw(st.sampled_from(["\\ud800", "\\udfff", "\\ud83d", "\\ud83d\\ude00"]))
            return text[: at + 1] + escape + text[at + 1 :]
    elif how == "bigint":
        return text.replace("0", "18446744073709551617", 1) if "0" in text else text
    elif how == "duplicate" and text.startswith("{") and len(text) > 2:
        return '{"id":"dup",' + text[1:]
    elif how == "byte":
        raw = bytearray(text.encode())
        raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        return bytes(raw)
    return text


# ---- provider bodies -------------------------------------------------------------------------------------


def mutate_payloads(raw: bytes, sse: bool, rng: random.Random, *, values: Sequence[Any] = ODD_VALUES) -> bytes:
    """A stream body (SSE, or JSON lines) with one or two of its JSON payloads mutated (``mutate_json``)."""
    return _edit_payloads(
        raw, sse, rng, lambda payload: json.dumps(mutate_json(payload, rng, values=values)).encode(), tolerant=False
    )


def _edit_payloads(raw: bytes, sse: bool, rng: random.Random, edit: Callable[[Any], bytes], *, tolerant: bool) -> bytes:
    """``raw`` (SSE, or JSON lines) with one or two of its JSON payloads, picked by ``rng``, replaced by
    ``edit(payload)``. ``tolerant``: a body of no payload is given back as it is, and a payload that no longer
    reads as JSON (an earlier edit made it too deep) is passed over; otherwise both raise."""
    lines = raw.split(b"\n")
    if sse:
        candidates = [
            i for i, ln in enumerate(lines) if ln.startswith(b"data:") and ln[5:].strip() not in (b"", b"[DONE]")
        ]
    else:
        candidates = [i for i, ln in enumerate(lines) if ln.strip()]
    for _ in range(rng.choice((1, 2))):
        if tolerant and not candidates:
            break
        i = rng.choice(candidates)
        try:
            payload = json.loads(lines[i][5:] if sse else lines[i])
        except (ValueError, RecursionError):
            if not tolerant:
                raise
            continue
        lines[i] = (b"data: " if sse else b"") + edit(payload)
    return b"\n".join(lines)


def random_cuts(body: bytes, rng: random.Random, most: int = 8) -> list[bytes]:
    """``body`` cut at 1 to ``most`` random points."""
    points = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, most))))
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


# ---- agent event lists -----------------------------------------------------------------------------------

# Values an event's field may be garbled into: every JSON type, integers beyond 64 bits, the reducer's own
# internal marker, non-ASCII text.
JUNK: list[Any] = [
    None,
    5,
    -1,
    2**63,
    2**64 + 1,
    1.5,
    True,
    "",
    "x",
    "__fragment__",
    [],
    [1],
    {},
    {"a": 1},
    "\u00e9\u2600",
]
_EVENT_SCHEMA = agentmsg.schema_documents()["agent-event.schema.json"]
# Every event type of the schema, one AG-UI spelling and one unknown type.
EVENT_TYPES = [t for t in _EVENT_SCHEMA["properties"]["type"]["enum"]] + ["RUN_STARTED", "bogus"]


def garble_events(rng: random.Random, events: list[dict[str, Any]]) -> list[Any]:
    """Up to six seeded edits of an event list: an event dropped, duplicated, a run replayed, two swapped, a
    type changed (to another type, junk or unknown), a key removed, a key set to junk, an event replaced by
    junk."""
    out: list[Any] = [dict(e) for e in events]
    for _ in range(rng.randint(0, 6)):
        if not out:
            break
        at = rng.randrange(len(out))
        op = rng.randrange(8)
        if op == 0:
            del out[at]
        elif op == 1:
            out.insert(at, out[rng.randrange(len(out))])
        elif op == 2:
            out[at:at] = out[max(0, at - rng.randint(1, 20)) : at]
        elif op == 3 and at + 1 < len(out):
            out[at], out[at + 1] = out[at + 1], out[at]
        elif op == 4 and isinstance(out[at], dict):
            out[at] = {**out[at], "type": rng.choice(EVENT_TYPES + JUNK[:6])}
        elif op == 5 and isinstance(out[at], dict) and out[at]:
            e = dict(out[at])
            del e[rng.choice(list(e))]
            out[at] = e
        elif op == 6 and isinstance(out[at], dict) and out[at]:
            e = dict(out[at])
            e[rng.choice([*list(e), "source", "signature", "usage", "metadata", "state", "input"])] = rng.choice(JUNK)
            out[at] = e
        else:
            out[at] = rng.choice(JUNK)
    return out


def reordered(stream: list[Any], rng: random.Random) -> list[Any]:
    """One to four seeded edits of a stream's order, its items untouched: one dropped, one repeated in its place,
    or two swapped (what a lossy or replaying transport does to an AG-UI or AI SDK stream)."""
    out = list(stream)
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        i = rng.randrange(len(out))
        how = rng.random()
        if how < 0.4:
            del out[i]
        elif how < 0.7:
            out.insert(i, out[i])
        else:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
    return out


# ---- bytes ------------------------------------------------------------------------------------------------


def garble_bytes(rng: random.Random, data: bytes) -> bytes:
    """Up to four seeded edits of bytes: one changed, a line break, invalid UTF-8, a CR, blank lines or a BOM
    inserted, up to 20 cut out, the end cut off, up to 200 before a point repeated there."""
    buf = bytearray(data)
    for _ in range(rng.randint(0, 4)):
        if not buf:
            break
        at = rng.randrange(len(buf))
        op = rng.randrange(6)
        if op == 0:
            buf[at] = rng.randrange(256)
        elif op == 1:
            buf[at:at] = b"\n"
        elif op == 2:
            buf[at:at] = rng.choice([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\r", b"\n\n", b"   \n", b"\xef\xbb\xbf"])
        elif op == 3:
            del buf[at : at + rng.randint(1, 20)]
        elif op == 4:
            del buf[at:]
        else:
            buf[at:at] = buf[max(0, at - 200) : at]
    return bytes(buf)


def insert_bytes(rng: random.Random, data: bytes, inserts: Sequence[bytes]) -> bytes:
    """One to four seeded edits of bytes: one of ``inserts`` put anywhere (80%), up to 20 bytes cut out (10%),
    the end cut off (10%)."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at, r = rng.randrange(len(buf) + 1), rng.random()
        if r < 0.8:
            buf[at:at] = rng.choice(inserts)
        elif r < 0.9:
            del buf[at : at + rng.randint(1, 20)]
        else:
            del buf[at:]
    return bytes(buf)


# ---- hostile JSON text (issue 28: the provider-body fuzzer) ---------------------------------------------------

# Raw JSON text put in place of a value: numbers beyond a double and beyond 64 bits, an exponent that overflows
# or underflows, negative zero, deep arrays and objects (around and past limits.max_depth), text with NUL and
# lone surrogates, a long string.
_PLACEHOLDER = "\u2063agentmsg-fuzz\u2063"
HOSTILE_TEXT: list[str] = [
    "1e400", "-1e400", "1e-400", "-0", "-0.0", "9" * 400, "-" + "9" * 40, "18446744073709551616", "0.1e99999",
    "[" * 300 + "]" * 300, "[" * 1100 + "]" * 1100, '{"a":' * 300 + "1" + "}" * 300, '{"a":' * 1100 + "1" + "}" * 1100,
    '"\\u0000"', '"\\u0000call_1"', '"a\\u0000b"', '"\\ud800"', '"\\udc00x"', '"' + "x" * 70_000 + '"', "true", "null",
    '""', "{}", "[]", '{"type":"text"}', '[{"type":"tool_use"}]',
]  # fmt: skip
# Keys whose string values are ids or names: a NUL at their start is the value a sentinel may take for its own.
ID_KEYS = frozenset({"id", "tool_call_id", "call_id", "tool_use_id", "name", "responseId", "request_id", "model"})


def hostile_json_text(value: Any, rng: random.Random) -> bytes:
    """``value`` (parsed JSON) written as JSON text with one or two hostile edits: a value (below the root)
    replaced by raw text of :data:`HOSTILE_TEXT` (a huge number, deep nesting, NUL or a lone surrogate in a
    string...), or an id's or name's string value given a leading NUL."""
    value = _copy(value)
    paths = [p for p in json_paths(value) if p]
    raw: list[str] = []
    for _ in range(rng.choice((1, 1, 2))):
        if not paths:
            break
        path = rng.choice(paths)
        node = value
        try:
            for key in path[:-1]:
                node = node[key]
            old = node[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
        if path[-1] in ID_KEYS and isinstance(old, str) and rng.random() < 0.5:
            edit(value, path, "replace", "\x00" + old)
        else:
            raw.append(rng.choice(HOSTILE_TEXT))
            edit(value, path, "replace", f"{_PLACEHOLDER}{len(raw) - 1}")
    text = json.dumps(value, ensure_ascii=False)
    for i, piece in enumerate(raw):
        text = text.replace(json.dumps(f"{_PLACEHOLDER}{i}", ensure_ascii=False), piece, 1)
    return text.encode("utf-8", "surrogatepass")


def hostile_payloads(raw: bytes, sse: bool, rng: random.Random) -> bytes:
    """A stream body (SSE, or JSON lines) with one or two of its JSON payloads given hostile edits
    (:func:`hostile_json_text`)."""
    return _edit_payloads(raw, sse, rng, lambda payload: hostile_json_text(payload, rng), tolerant=True)
