"""Adversarial inputs for the message codec: time per input byte as the input grows 10x (issue 8, Deliver 3).

Each case is measured at a small and a 10x larger size; the row shows µs per KiB at both and their ratio
(about 1.0: linear; 10: quadratic). Decoding valid input and reporting the errors of invalid input are
both measured; every call's outcome is checked before it is timed (valid cases decode, invalid ones raise
ValidationError with the expected number of problems).

Cases:
* nested tool results (12 -> 120 levels; the depth limit is 254), valid, and with an error at the leaf
  (the issue's 127-level message took 44 s to reject);
* nested tool results with an error at every level;
* a wide message (100 -> 1,000 blocks), valid, and with an error in every block;
* deep free-form metadata (24 -> 240 nested arrays);
* a long text (1 -> 10 MiB);
* unknown keys (100 -> 1,000 blocks each with one), decoded and listed with find_unknown_keys.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import agentmsg
from agentmsg import Msg, ValidationError


def _nested(levels: int, leaf: dict[str, Any], every_level: dict[str, Any] | None = None) -> bytes:
    block: dict[str, Any] = leaf
    for _ in range(levels):
        block = {"type": "tool_result", "id": "call", "output": [block], **(every_level or {})}
    return json.dumps({"id": "m", "role": "ASSISTANT", "content": [block]}).encode()


def _wide(blocks: int, bad: bool = False, unknown: bool = False) -> bytes:
    content = []
    for i in range(blocks):
        block: dict[str, Any] = {"type": "text", "text": f"block {i} " + "words " * 8}
        if bad:
            block["text"] = i
        if unknown:
            block["annotations"] = [{"i": i}]
        content.append(block)
    return json.dumps({"id": "m", "role": "ASSISTANT", "content": content}).encode()


def _deep_metadata(levels: int) -> bytes:
    value = "[" * levels + "1" + "]" * levels
    return b'{"id":"m","role":"USER","content":[],"metadata":{"a":' + value.encode() + b"}}"


def _long_text(mib: int) -> bytes:
    return json.dumps({"id": "m", "role": "USER", "content": [{"type": "text", "text": "x" * (mib << 20)}]}).encode()


def _reject(data: bytes) -> int:
    try:
        Msg.from_json(data)
    except ValidationError as exc:
        return len(exc.problems)
    raise AssertionError("expected a ValidationError")


def _unknown(data: bytes) -> int:
    return len(agentmsg.find_unknown_keys(Msg.from_json(data)))


Case = tuple[Callable[[int], bytes], Callable[[bytes], Any], tuple[int, int], Callable[[int], Any] | None]
CASES: dict[str, Case] = {
    # name: (make(n), operation, (small n, large n), expected outcome for n)
    "nested tool results, valid": (
        lambda n: _nested(n, {"type": "text", "text": "ok"}),
        Msg.from_json,
        (12, 120),
        None,
    ),
    "nested tool results, error at the leaf": (
        lambda n: _nested(n, {"type": "text", "text": 5}),
        _reject,
        (12, 120),
        lambda n: 1,
    ),
    "nested tool results, error at every level": (
        lambda n: _nested(n, {"type": "text", "text": "ok"}, {"state": "bogus"}),
        _reject,
        (12, 120),
        lambda n: n,
    ),
    "wide message, valid": (_wide, Msg.from_json, (100, 1000), None),
    "wide message, error in every block": (lambda n: _wide(n, bad=True), _reject, (100, 1000), lambda n: n),
    "deep metadata, valid": (_deep_metadata, Msg.from_json, (24, 240), None),
    "long text, valid": (_long_text, Msg.from_json, (1, 10), None),
    "unknown keys, kept and listed": (lambda n: _wide(n, unknown=True), _unknown, (100, 1000), lambda n: n),
}


def _time(operation: Callable[[bytes], Any], data: bytes, quick: bool) -> float:
    """Best seconds per call over a few rounds (each round about 0.1 s, at least one call)."""
    budget, rounds = (0.03, 3) if quick else (0.1, 5)
    start = time.perf_counter()
    operation(data)
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(budget / once))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            operation(data)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def run(quick: bool = False) -> list[dict[str, Any]]:
    """One row per case: bytes and µs per KiB at the small and the 10x size, and their ratio."""
    rows = []
    for name, (make, operation, (small, large), expect) in CASES.items():
        row: dict[str, Any] = {"case": name}
        per_kib = []
        for n in (small, large):
            data = make(n)
            outcome = operation(data)
            if expect is not None:
                assert outcome == expect(n), (name, n, outcome)
            seconds = _time(operation, data, quick)
            per_kib.append(seconds * 1e6 / (len(data) / 1024))
            row[f"bytes {n}"] = len(data)
        row["us_per_kib_small"] = round(per_kib[0], 2)
        row["us_per_kib_large"] = round(per_kib[1], 2)
        row["ratio"] = round(per_kib[1] / per_kib[0], 2)
        rows.append(row)
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== message codec, adversarial inputs: µs per KiB of input as the input grows 10x (flat = linear) ==")
    print(f"{'case':<44} {'bytes':>21} {'µs/KiB':>19} {'10x/1x':>7}")
    for r in rows:
        sizes = [v for k, v in r.items() if k.startswith("bytes ")]
        print(
            f"{r['case']:<44} {sizes[0]:>10,}->{sizes[1]:>10,} {r['us_per_kib_small']:>9.2f}->{r['us_per_kib_large']:>8.2f}"
            f" {r['ratio']:>7.2f}"
        )
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"worst ratio: {worst['ratio']:.2f} ({worst['case']}); 1.0 is linear, 10 would be quadratic")


if __name__ == "__main__":
    import sys

    print_rows(run(quick="--quick" in sys.argv))
