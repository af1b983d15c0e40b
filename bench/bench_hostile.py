"""Hostile input: what input that carries nothing costs against input that carries events (issue 28, class 5).

* SSE: 4 MiB of lines that carry no data (blank lines with each line end, comments, fields the spec does not
  know, lines of blanks) against 4 MiB of events, through the agent event decoder (``SSEDecoder``) and a provider
  stream parser (``openai.StreamParser``, what a streaming client runs), whole and in 4 KiB chunks. Target: each
  within 3x the events' time (they were 100-200x: 4 MiB of blank lines took 1.5-6 s).
* Event schema errors: rejecting a malformed event (a ``TEXT_BLOCK_START`` without ``createdAt`` and
  ``replyId``) against accepting a valid one, one ``validate`` each and 10,000 JSON lines through
  ``reduce_stream``. Target: within 30x (they were ~600x).

A measurement, never a test: the tests hold the structure (a run of such lines is skipped at once, a rejected
event walks one branch), these rows show the times.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import orjson

import agentmsg
from agentmsg._native import speedups
from agentmsg.providers import openai

MIB4 = 4 << 20
_EVENT = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hello"}}]}\n\n'
BODIES = {
    "events": _EVENT,
    "blank lines (LF)": b"\n",
    "blank lines (CRLF)": b"\r\n",
    "blank lines (CR)": b"\r",
    "comments": b": keep-alive\n",
    "empty comments": b":\n\n",
    "unknown fields": b"x\n",
    "blanks": b" \n",
}
TARGET_SSE = 3.0
TARGET_REJECT = 30.0


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _feed(make: Callable[[], Any], body: bytes, size: int) -> Callable[[], Any]:
    chunks = [body[i : i + size] for i in range(0, len(body), size)]

    def run() -> None:
        reader = make()
        for c in chunks:
            reader.feed(c)
        reader.close()

    return run


def run(quick: bool = False) -> list[dict[str, Any]]:
    repeat = 1 if quick else 3
    rows: list[dict[str, Any]] = []
    readers = {"SSEDecoder": agentmsg.SSEDecoder, "openai.StreamParser": openai.StreamParser}
    for reader, make in readers.items():
        for size, label in ((MIB4 + 1024, "whole"), (4096, "4 KiB chunks")):
            base = None
            for name, unit in BODIES.items():
                # (one event first: the provider parser opens its reply, and knows the body is SSE)
                body = _EVENT + unit * (MIB4 // len(unit))
                seconds = _best(_feed(make, body, size), repeat)
                if name == "events":
                    base = seconds
                assert base is not None
                rows.append(
                    {
                        "group": "sse",
                        "reader": reader,
                        "chunks": label,
                        "input": name,
                        "s": seconds,
                        "ratio": seconds / base,
                    }
                )
    good = {"type": "TEXT_BLOCK_DELTA", "id": "e", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "t"}
    good["delta"] = "hello"
    bad = {"type": "TEXT_BLOCK_START", "id": "e", "blockId": "t"}

    def reject() -> None:
        with contextlib.suppress(agentmsg.ValidationError):
            agentmsg.validate(bad, "event")

    n = 2_000 if quick else 10_000
    accept_s = _best(lambda: [agentmsg.validate(good, "event") for _ in range(n)], repeat) / n
    reject_s = _best(lambda: [reject() for _ in range(n)], repeat) / n
    rows.append(
        {"group": "schema", "input": "validate, one event", "accept_us": accept_s * 1e6, "reject_us": reject_s * 1e6}
    )
    start = {"type": "AGENT_START", "id": "a", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"}
    opened = {**good, "type": "TEXT_BLOCK_START", "id": "s"}
    del opened["delta"]
    valid = b"".join(orjson.dumps(e) + b"\n" for e in [start, opened] + [{**good, "id": f"d{i}"} for i in range(n)])
    broken = b"".join(orjson.dumps({**bad, "id": f"b{i}", "blockId": f"b{i}"}) + b"\n" for i in range(n))
    accept_s = _best(lambda: agentmsg.reduce_stream(valid), repeat) / n
    reject_s = _best(lambda: agentmsg.reduce_stream(broken), repeat) / n
    rows.append(
        {
            "group": "schema",
            "input": f"reduce_stream, {n:,} lines",
            "accept_us": accept_s * 1e6,
            "reject_us": reject_s * 1e6,
        }
    )
    for r in rows:
        if r["group"] == "schema":
            r["ratio"] = r["reject_us"] / r["accept_us"]
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    kernels = "C" if speedups is not None else "pure Python"
    print(f"\n== hostile input: 4 MiB that carries nothing vs 4 MiB of events ({kernels} kernels) ==")
    for r in rows:
        if r["group"] == "sse":
            print(f"  {r['reader']:<20} {r['chunks']:<13} {r['input']:<20} {r['s'] * 1000:9.1f} ms  {r['ratio']:6.2f}x")
    print("\n== hostile input: rejecting a malformed event vs accepting a valid one ==")
    for r in rows:
        if r["group"] == "schema":
            print(
                f"  {r['input']:<28} accept {r['accept_us']:8.2f} us  reject {r['reject_us']:8.2f} us  {r['ratio']:6.1f}x"
            )


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r["group"] == "sse" and r["input"] != "events":
            out.append(
                {
                    "row": f"{r['reader']} {r['chunks']}: {r['input']} / events",
                    "value": r["ratio"],
                    "target": f"<= {TARGET_SSE:g}",
                    "met": r["ratio"] <= TARGET_SSE,
                }
            )
        elif r["group"] == "schema":
            out.append(
                {
                    "row": f"{r['input']}: reject / accept",
                    "value": r["ratio"],
                    "target": f"<= {TARGET_REJECT:g}",
                    "met": r["ratio"] <= TARGET_REJECT,
                }
            )
    return out


if __name__ == "__main__":
    print_rows(run())
