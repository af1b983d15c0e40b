"""UI protocol benchmark: the cost of speaking agentmsg's events as AG-UI, per event.

Rows, on the events of one agent reply (bench/streams.py: text, thinking and four interleaved parallel tool
calls, each event given its own ``createdAt``, microseconds apart; parsed beforehand, so no row reads JSON it does
not time):

* ``ag-ui encode``: :class:`agentmsg.ui.agui.AGUIEncoder` turning every AgentEvent into its AG-UI events,
  against the floor of serializing those AG-UI events alone (``orjson.dumps`` of each dict, made beforehand):
  the translation's own cost as a multiple of the least any server pays to send the event;
* ``ag-ui encode + frame``: the same, each AG-UI event then written as the endpoint sends it (the protocol's SSE
  frame), against the same floor;
* ``ag-ui decode``: :class:`agentmsg.ui.agui.AGUIDecoder` turning the AG-UI events back into AgentEvents, against
  the floor of ``orjson.loads`` of each AG-UI event's JSON (the least a client pays to read one).

Times are per event (microseconds: per AgentEvent for encoding, per AG-UI event for decoding) and the ratio is
translation / floor. It measures and reports; nothing fails on a number.
"""

from __future__ import annotations

import gc
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streams import make_stream

from agentmsg.ui import agui


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def run(quick: bool = False) -> list[dict[str, Any]]:
    deltas = 5_000 if quick else 50_000
    repeat = 3 if quick else 7
    events = [orjson.loads(line) for line in make_stream(deltas).splitlines()]
    start = datetime(2026, 11, 22, 10, 34, 38, tzinfo=timezone.utc)
    for n, event in enumerate(events):  # a time per event, as producers stamp them (microseconds apart)
        event["createdAt"] = (start + timedelta(microseconds=37 * n)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def encode() -> list[dict[str, Any]]:
        enc = agui.AGUIEncoder()
        out: list[dict[str, Any]] = []
        for e in events:
            out += enc.feed(e)
        return out + enc.close()

    written = encode()
    texts = [orjson.dumps(e) for e in written]
    protocol = agui.PROTOCOL

    def encode_and_frame() -> None:
        enc = agui.AGUIEncoder()
        position = 0
        for e in events:
            for out in enc.feed(e):
                position += 1
                protocol.frame(out, position)

    def dumps() -> None:
        for e in written:
            orjson.dumps(e)

    def loads() -> None:
        for t in texts:
            orjson.loads(t)

    def decode() -> None:
        dec = agui.AGUIDecoder()
        for e in written:
            dec.feed(e)
        dec.close()

    floor_out = _best(dumps, repeat)
    floor_in = _best(loads, repeat)
    rows = []
    for name, fn, floor, per in (
        ("ag-ui encode", encode, floor_out, len(events)),
        ("ag-ui encode + frame", encode_and_frame, floor_out, len(events)),
        ("ag-ui decode", decode, floor_in, len(written)),
    ):
        seconds = _best(fn, repeat)
        rows.append(
            {
                "row": name,
                "agentmsg_events": len(events),
                "ag_ui_events": len(written),
                "us_per_event": seconds / per * 1e6,
                "floor_us_per_event": floor / per * 1e6,
                "ratio": seconds / floor,
                "ag_ui_bytes_per_event": sum(map(len, texts)) / len(written),
            }
        )
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    r0 = rows[0]
    print(
        f"\n== UI protocols: AG-UI translation per event ({r0['agentmsg_events']:,} AgentEvents -> "
        f"{r0['ag_ui_events']:,} AG-UI events, {r0['ag_ui_bytes_per_event']:.0f} bytes each) =="
    )
    print(f"  {'row':<22} {'us/event':>9} {'floor us/event':>15} {'ratio':>7}")
    for r in rows:
        floor = "orjson.loads" if "decode" in r["row"] else "orjson.dumps"
        print(f"  {r['row']:<22} {r['us_per_event']:9.3f} {r['floor_us_per_event']:9.3f} ({floor}) {r['ratio']:6.2f}x")


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ratios, reported: the issue asks for the cost against the floor, and sets no bound on it yet."""
    return [
        {"row": f"{r['row']} / floor", "value": r["ratio"], "target": "-", "met": None, "verdict": "reported"}
        for r in rows
    ]
