"""``agentmsg._speedups.SSEScanner``, the idle scan's scanner (:meth:`agentmsg._wire.sse.SSEDecoder.idle_scanner`):
``sse_scan`` from a chunk's start with its bounds, its event class and ``raw`` given once. It is held to ``sse_scan``,
which tests/wire/test_sse.py holds to the line parser: the same events and the same ``(pos, stop, last_id)`` for any
body, limits and flags. Arguments of another type raise TypeError; a result the caller holds is never changed by the
next scan (the scanner uses its result tuple again only when nothing else holds it)."""

from __future__ import annotations

import gc
import json
import random
from typing import Any

import attrs
import pytest

from agentmsg._native import PURE_PYTHON
from agentmsg._native import speedups as native
from agentmsg._wire.sse import JSONDataDecoder, SSEEvent
from tests._support.budget import SEED, rounds
from tests.conftest import c_compiler_available
from tests.wire.test_sse import _provider_body, _sse_body

if native is None:
    if PURE_PYTHON:
        pytestmark = pytest.mark.skip("AGENTMSG_PURE_PYTHON is set: the C kernels are turned off")
    elif not c_compiler_available():
        pytestmark = pytest.mark.skip("no C compiler or Python headers here: agentmsg was built without its C kernels")


@pytest.mark.fuzz
@pytest.mark.differential
def test_the_scanner_scans_as_sse_scan_from_the_chunks_start() -> None:
    """Any body (the simple shapes, everything else the spec allows, a provider's stray lines, a chunk cut anywhere),
    any limits, raw or not, any ``dataless`` flags: ``scanner(chunk, last_id, out, dataless)`` appends the events
    ``sse_scan(chunk, 0, b"\\r" in chunk, limit, max_line, last_id, out, SSEEvent, raw, dataless)`` appends and
    returns what it returns, one scanner over many chunks as a stream parser calls it."""
    assert native is not None
    rng = random.Random(SEED + 20261206)
    scanners: dict[tuple[int, int, bool], Any] = {}
    taken = stopped = n = 0
    for _ in rounds(3000):
        n += 1
        body = (_sse_body if rng.random() < 0.5 else _provider_body)(rng)
        if body and rng.random() < 0.3:
            body = body[rng.randrange(len(body)) :]  # (a chunk that starts anywhere in a stream)
        limit = rng.choice([1, 6, 12, 30, 1000])
        max_line = rng.choice([limit, 12, 40, 1000])
        raw = rng.random() < 0.5
        key = (limit, max_line, raw)
        scanner = scanners.get(key) or scanners.setdefault(key, native.SSEScanner(limit, max_line, SSEEvent, raw))
        dataless, last_id = rng.randrange(8), rng.choice(["", "7", "é"])
        got: list[SSEEvent] = []
        want: list[SSEEvent] = []
        result = scanner(body, last_id, got, dataless)
        expected = native.sse_scan(body, 0, b"\r" in body, limit, max_line, last_id, want, SSEEvent, raw, dataless)
        assert result == expected, (body, key, dataless)
        assert [attrs.astuple(e) for e in got] == [attrs.astuple(e) for e in want], (body, key, dataless)
        taken += result[0] > 0
        stopped += result[1] >= 0
    assert taken > n // 30 and stopped > n // 5  # (events were taken, and pieces left to the line parser)


def test_a_result_the_caller_holds_is_not_changed_by_the_next_scan() -> None:
    assert native is not None
    scanner = native.SSEScanner(100, 100, SSEEvent, True)
    out: list[Any] = []
    first = scanner(b"id: 1\ndata: a\n\n", "", out, 1)
    second = scanner(b"data: bb\r\n\r\nretry: 5\r\ndata: c\r\n\r\nx", "0", out, 0)
    assert (first, second) == ((15, -1, "1"), (12, 33, "0"))
    assert [(e.data, e.id) for e in out] == [(b"a", "1"), (b"bb", "0")]
    del first, second  # (each result a tuple of its own: the next ones hold their own values)
    assert scanner(b"", "z", out, 0) == (0, -1, "z")
    assert scanner(b"data: d\n\n", "y", out, 0) == (9, -1, "y")


def test_the_decoders_idle_scanner_keeps_its_limits() -> None:
    assert native is not None
    scanner: Any = JSONDataDecoder(max_line_bytes=40, max_event_bytes=30).idle_scanner()
    assert type(scanner) is native.SSEScanner
    assert (scanner.limit, scanner.max_line, scanner.cls, scanner.raw) == (29, 40, SSEEvent, True)
    assert scanner.cls in gc.get_referents(scanner)  # (the collector sees what it holds)


_CHUNK = b"data: x\n\n"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("data: x\n\n", "", [], 0), id="str chunk"),
        pytest.param((bytearray(_CHUNK), "", [], 0), id="bytearray chunk"),
        pytest.param((memoryview(_CHUNK), "", [], 0), id="memoryview chunk"),
        pytest.param((type("B", (bytes,), {})(_CHUNK), "", [], 0), id="bytes subclass chunk"),
        pytest.param((None, "", [], 0), id="None chunk"),
        pytest.param((_CHUNK, b"", [], 0), id="bytes last_id"),
        pytest.param((_CHUNK, None, [], 0), id="None last_id"),
        pytest.param((_CHUNK, "", (), 0), id="tuple out"),
        pytest.param((_CHUNK, "", None, 0), id="None out"),
        pytest.param((_CHUNK, "", [], "1"), id="str dataless"),
        pytest.param((_CHUNK, "", [], 1.0), id="float dataless"),
        pytest.param((_CHUNK, "", [], None), id="None dataless"),
        pytest.param((_CHUNK, "", []), id="three arguments"),
        pytest.param((_CHUNK, "", [], 0, 0), id="int route"),
        pytest.param((_CHUNK, "", [], 0, (b"{", b"}", None, "message")), id="route of four"),
        pytest.param((_CHUNK, "", [], 0, (b"{", "}", None, "message", ())), id="str tail"),
        pytest.param((_CHUNK, "", [], 0, (b"{", b"}", None, b"message", ())), id="bytes event"),
        pytest.param((_CHUNK, "", [], 0, (b"{", b"}", None, "message", ("x",))), id="str after"),
        pytest.param((_CHUNK, "", [], 0, [b"{", b"}", None, "message", ()]), id="list route"),
        pytest.param((_CHUNK, "", [], 0, None, None), id="six arguments"),
        pytest.param((), id="none"),
    ],
)
def test_the_scanner_refuses_arguments_of_another_type(args: tuple[Any, ...]) -> None:
    assert native is not None
    scanner: Any = native.SSEScanner(100, 100, SSEEvent, True)
    with pytest.raises(TypeError, match="SSEScanner"):
        scanner(*args)


#: A route as a PayloadReader gives it (head, tail, slot, event, after, then, kind): Anthropic's text deltas of block 0
_ROUTE = (
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":',
    b"}}",
    "0",
    "delta",
    (),
    None,
    "text",
)


def _routed(text: str) -> bytes:
    return _ROUTE[0] + json.dumps(text).encode() + b"}}"


def test_the_scanner_gives_the_routed_payloads_of_its_leading_run_as_value_and_data() -> None:
    """With a route (``scanner(chunk, last_id, out, dataless, route)``), each event named as the route's whose data is
    its head, a JSON string and its tail is given as ``(the string's value, the data)``, up to the first event that
    is not (whose reading may change the caller's route): that one and those after it are events, as without it.
    The result is the same."""
    assert native is not None
    scanner: Any = native.SSEScanner(1000, 1000, SSEEvent, True)
    a, b, c = _routed("Hi"), _routed(' "there"\n'), _routed("\ud800")  # (a lone surrogate: not read here)
    chunk = (
        b"event: delta\ndata: %s\n\nid: 4\nevent: delta\ndata: %s\n\nevent: ping\ndata: {}\n\nevent: delta\ndata: %s\n\n"
        % (a, b, a)
    )
    out: list[Any] = []
    plain: list[Any] = []
    assert scanner(chunk, "", out, 0, _ROUTE) == scanner(chunk, "", plain, 0) == scanner(chunk, "", [], 0, None)
    assert out[:2] == [("Hi", a), (' "there"\n', b)]
    assert [attrs.astuple(e) for e in out[2:]] == [attrs.astuple(e) for e in plain[2:]]
    assert [e.data for e in out[2:]] == [b"{}", a]  # (after the ping, no more routed)
    for first in (b"event: delta\ndata: %s\n\n" % c, b"data: %s\n\n" % a, b"event: delta\ndata: %sx\n\n" % a):
        out = []
        scanner(first + chunk, "", out, 0, _ROUTE)
        assert all(type(e) is SSEEvent for e in out)  # (the first event not routed: none is)
    out = []
    assert scanner(chunk, "", out, 0, (*_ROUTE[:4], (b"}",))) == scanner(chunk, "", [], 0)  # (a hole after the tail)
    assert all(type(e) is SSEEvent for e in out)


@pytest.mark.fuzz
@pytest.mark.differential
def test_a_routed_scan_gives_the_events_of_a_plain_one() -> None:
    """Any body, any limits and flags, a route its events may or may not match: the scan with the route returns what
    the scan without it returns, and appends the same events, those of its leading run that the route reads given as
    ``(json_string_between(data, head, tail, after), data)``."""
    assert native is not None
    rng = random.Random(SEED + 20261207)
    routed = n = 0
    for _ in rounds(3000):
        n += 1
        texts = [rng.choice(["", "a", "é", '\\"', "\\ud83d", "\\u00e9x", "\t"]) for _ in range(rng.randint(0, 4))]
        pieces = [b"event: delta\ndata: " + _ROUTE[0] + b'"' + t.encode() + b'"}}\n\n' for t in texts]
        body = (_sse_body if rng.random() < 0.5 else _provider_body)(rng)
        at = rng.randint(0, len(pieces))
        body = b"".join(pieces[:at]) + body + b"".join(pieces[at:])
        limit = rng.choice([12, 100, 1000])
        scanner = native.SSEScanner(limit, rng.choice([limit, 40, 1000]), SSEEvent, True)
        dataless, last_id = rng.randrange(8), rng.choice(["", "7"])
        got: list[Any] = []
        want: list[SSEEvent] = []
        assert scanner(body, last_id, got, dataless, _ROUTE) == scanner(body, last_id, want, dataless), body
        assert len(got) == len(want), body
        on = True
        for g, w in zip(got, want, strict=True):
            text = native.json_string_between(w.data, _ROUTE[0], _ROUTE[1]) if w.event == "delta" else None
            on = on and text is not None
            assert g == ((text, w.data) if on else w), body
            routed += on
    assert routed > n // 20  # (payloads were routed)


def test_a_route_is_for_a_raw_scanner() -> None:
    assert native is not None
    scanner: Any = native.SSEScanner(100, 100, SSEEvent, False)
    with pytest.raises(TypeError, match="raw"):
        scanner(_CHUNK, "", [], 0, _ROUTE)


def test_the_scanner_takes_no_keyword_and_no_dataless_beyond_a_c_long() -> None:
    assert native is not None
    scanner: Any = native.SSEScanner(100, 100, SSEEvent, True)
    with pytest.raises(TypeError, match="SSEScanner"):
        scanner(_CHUNK, "", [], dataless=0)
    with pytest.raises(OverflowError):
        scanner(_CHUNK, "", [], 1 << 80)
    out: list[SSEEvent] = []
    assert scanner(_CHUNK, "", out, True) == (9, -1, "") and len(out) == 1  # (a bool is an int: flag 1)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(("100", 100, SSEEvent, True), {}, id="str limit"),
        pytest.param((100, None, SSEEvent, True), {}, id="None max_line"),
        pytest.param((100, 1.5, SSEEvent, True), {}, id="float max_line"),
        pytest.param((100, 100, 3, True), {}, id="cls not callable"),
        pytest.param((100, 100, SSEEvent), {}, id="three arguments"),
        pytest.param((100, 100, SSEEvent, True, 0), {}, id="five arguments"),
        pytest.param((100, 100, SSEEvent), {"raw": True}, id="a keyword"),
    ],
)
def test_the_scanners_constructor_refuses_arguments_of_another_type(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert native is not None
    make: Any = native.SSEScanner
    with pytest.raises(TypeError):
        make(*args, **kwargs)
