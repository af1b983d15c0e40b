"""The C kernels (agentmsg._speedups) given objects that fight back: Python code run in the middle of a kernel (a
property, a key's ``__eq__``) that frees or changes what the kernel read before it, descriptors of another class's
layout, a table holding something else than what the kernel expects. Each case here was a use after free, an
out-of-bounds read or write, or a NULL dereference, found under AddressSanitizer and UBSan; each asserts what the
kernel now does instead (it keeps what it read alive, or gives up, or calls the class), with no sanitizer needed:
the memory an object freed too early held is reused by the next objects of its size, so the kernel would read
those.
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson
import pytest

from agentmsg._codec.converter import json_default
from agentmsg._native import PURE_PYTHON
from agentmsg._native import speedups as native
from tests.conftest import c_compiler_available

if native is None:
    if PURE_PYTHON:
        pytestmark = pytest.mark.skip("AGENTMSG_PURE_PYTHON is set: the C kernels are turned off")
    elif not c_compiler_available():
        pytestmark = pytest.mark.skip("no C compiler or Python headers here: agentmsg was built without its C kernels")


def fresh(char: str, n: int) -> str:
    """A str made at run time (not a constant a code object keeps alive): its only reference is where it is put."""
    return "".join([char] * n)


class _FreeingText:
    """An open text whose ``parts`` is a property that empties the event being taken and fills the memory its
    values held with other strings of the same sizes."""

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        self.kept: list[str] = []
        self._parts: list[str] = []

    @property
    def parts(self) -> list[str]:
        self.event.clear()
        self.kept += [fresh("z", 40) for _ in range(64)] + [fresh("y", 100) for _ in range(64)]
        return self._parts


def test_fold_deltas_keeps_what_it_read_while_python_code_runs() -> None:
    assert native is not None
    event_id, delta = fresh("e", 40), fresh("d", 100)
    event = {"type": "T", "id": event_id, "blockId": "b", "delta": delta}
    text = _FreeingText(event)
    current: set[str] = set()
    del event_id, delta  # the event holds them alone
    assert native.fold_deltas([event], 0, current, set(), 0, {"T": {"b": text}}, {}, 512) == 1
    assert current == {"e" * 40}
    assert text._parts == ["d" * 100]


class _CollidingKey(str):
    """A key whose lookup runs Python code: the same hash as "blockId", and an ``__eq__`` that frees the table
    being read (``routes`` drops it) and the event's values."""

    routes: ClassVar[dict[str, Any]] = {}
    event: ClassVar[dict[Any, Any]] = {}
    kept: ClassVar[list[Any]] = []

    def __hash__(self) -> int:
        return hash("blockId")

    def __eq__(self, other: object) -> bool:
        type(self).routes.clear()
        type(self).event.pop("id", None)
        type(self).kept += [fresh("z", 40) for _ in range(64)] + [{} for _ in range(64)]
        return False


def test_fold_deltas_keeps_the_table_and_the_id_while_a_key_compares() -> None:
    assert native is not None
    text = _FreeingText({})
    event: dict[Any, Any] = {"type": "T", "id": fresh("e", 40), "delta": "x", _CollidingKey("k"): 1, "blockId": "b"}
    routes = {"T": {"b": text}}
    _CollidingKey.routes, _CollidingKey.event = routes, event
    current: set[str] = set()
    try:
        taken = native.fold_deltas([event], 0, current, set(), 0, routes, {}, 512)
    finally:
        _CollidingKey.routes, _CollidingKey.event, _CollidingKey.kept = {}, {}, []
    assert (taken, current, text._parts) == (1, {"e" * 40}, ["x"])


class _TwoSlots:
    __slots__ = ("first", "second")
    first: str
    second: str


class _OtherTwoSlots:
    __slots__ = ("one", "two")


class _ForeignSlot(_TwoSlots):
    """A class whose attribute ``two`` is another class's slot descriptor, at the offset of its own ``second``:
    Python refuses to read it from an instance of this class (TypeError)."""

    __slots__ = ()
    two = _OtherTwoSlots.__dict__["two"]


def test_encode_reads_no_slot_of_another_classs_layout() -> None:
    """A plan's field whose descriptor is a slot of another class is read with getattr (which refuses it), not at
    that class's offset in an object of this one (a read of whatever lies there: another slot, or past the
    object's end when the other class is larger)."""
    assert native is not None
    plan = native.make_plan(_ForeignSlot, [("two", "two", False, 0)], None)
    obj = _ForeignSlot()
    obj.first, obj.second = "first", "second"
    with pytest.raises(TypeError):
        obj.two  # noqa: B018
    assert native.encode(obj, {_ForeignSlot: plan}, json_default, orjson.dumps) is None
    assert native.writes(obj, {_ForeignSlot: plan}, json_default, orjson.dumps) is False


class _EventSlots:
    __slots__ = ("data", "event", "id", "problem", "retry")


class _ForeignEvent:
    """An attrs-looking event class whose five attributes are another class's slots, at the offsets of its own:
    sse_scan calls it rather than writing into those offsets."""

    __attrs_attrs__ = ()
    __slots__ = ("a", "b", "c", "called", "d", "e")

    def __init__(self, data: str, event: str, id: str) -> None:
        self.a, self.b, self.c = data, event, id
        self.called = True


for _name in _EventSlots.__slots__:
    setattr(_ForeignEvent, _name, _EventSlots.__dict__[_name])


def test_sse_scan_writes_no_slot_of_another_classs_layout() -> None:
    assert native is not None
    out: list[Any] = []
    assert native.sse_scan(b"id: 7\ndata: hi\n\n", 0, False, 1000, 1000, "", out, _ForeignEvent) == (16, -1, "7")
    (event,) = out
    assert (event.called, event.a, event.b, event.c) == (True, "hi", "message", "7")


def test_a_scanner_its_event_class_runs_again_gives_each_call_its_own_result() -> None:
    """An SSEScanner's event class (no attrs class: called) that runs the same scanner while it scans, and keeps
    the inner result: the outer call's result is its own (the scanner uses its result tuple again only when
    nothing else holds it), and the inner one is not changed by the outer one's end."""
    assert native is not None
    inner: list[Any] = []

    class Reentrant:
        def __init__(self, data: bytes, event: str, id: str) -> None:
            self.data = data
            if data == b"outer":
                inner.append(scanner(b"id: 9\ndata: in\n\n", "", [], 0))

    scanner = native.SSEScanner(100, 100, Reentrant, True)
    out: list[Any] = []
    assert scanner(b"data: outer\n\nid: 2\ndata: two\n\n", "1", out, 0) == (30, -1, "2")
    assert inner == [(16, -1, "9")]
    assert [e.data for e in out] == [b"outer", b"two"]


def test_encode_and_writes_give_up_on_a_plan_table_holding_no_plan() -> None:
    assert native is not None

    class Model:
        pass

    table = {Model: "no plan"}
    assert native.encode(Model(), table, json_default, orjson.dumps) is None
    assert native.writes([Model()], table, json_default, orjson.dumps) is False


class _Plain:
    """A class of no plan of its own, written by the plan a test makes."""

    def __init__(self) -> None:
        self.a, self.b, self.c = 1, 2, 3


def test_make_plan_keeps_its_fields_while_a_flag_runs_python_code() -> None:
    """A field's flags are read with ``bool()``: a ``__bool__`` that empties the list of fields (freeing the field
    being read, and the list's storage) leaves the plan made from the fields as they were given."""
    assert native is not None
    fields: list[tuple[Any, ...]] = []

    class Emptying:
        def __bool__(self) -> bool:
            fields.clear()
            kept.extend((fresh("j", 40),) for _ in range(64))
            return False

    kept: list[tuple[str]] = []
    fields += [(fresh("a", 1), fresh("a", 40), Emptying(), 0), ("b", "b", False, 0), ("c", "c", False, 0)]
    plan = native.make_plan(_Plain, fields, None)
    written = native.encode(_Plain(), {_Plain: plan}, json_default, orjson.dumps)
    assert written == b'{"' + b"a" * 40 + b'":1,"b":2,"c":3}'


def test_encode_gives_up_when_dumps_returns_no_bytes() -> None:
    """A float in exponent form is written with ``dumps``'s bytes: a ``dumps`` that returns anything else (a str,
    whose header was read as a bytes object's) makes the writer give up."""
    assert native is not None
    for result in ("x" * 5, 12345, None):
        assert native.encode([1e300], {}, json_default, lambda value, result=result: result) is None
    assert native.encode([1e300], {}, json_default, orjson.dumps) == orjson.dumps([1e300])
