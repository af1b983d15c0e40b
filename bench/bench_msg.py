"""Message decode/encode benchmark: agentmsg vs pydantic v2 vs msgspec vs plain orjson, one process.

* validated decode: bytes -> typed object (agentmsg validates against the full JSON Schema, role rules
  included; the peers check what their models express, see peers.py);
* encode: typed object -> bytes.

Cases: a realistic 5-block assistant message (~1.5 KB) and a 1,000-message conversation (a JSON array
of varied messages, decoded and encoded as a whole: ``agentmsg.decode_messages`` /
``encode_messages``, a pydantic ``TypeAdapter(list[...])``, a msgspec ``Decoder(list[...])``).
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path
from typing import Any

import msgspec
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers

import agentmsg
from agentmsg import Msg

FIVE_BLOCKS = {
    "id": "chatcmpl-1",
    "name": "Friday",
    "role": "ASSISTANT",
    "content": [
        {
            "type": "thinking",
            "thinking": "The user wants the weather in Paris; I should call the weather tool and then summarise.",
            "metadata": {"signature": "EqQBCkYIBxgCKkC1y2mXo", "provider": "anthropic", "model": "claude-sonnet-4-5"},
        },
        {"type": "text", "text": "Let me check the current weather in Paris for you, one moment please."},
        {
            "type": "tool_use",
            "id": "call_a1",
            "name": "get_weather",
            "input": {"city": "Paris", "unit": "celsius"},
            "content": '{"city":"Paris","unit":"celsius"}',
            "metadata": {},
            "state": "pending",
        },
        {
            "type": "tool_result",
            "id": "call_a1",
            "name": "get_weather",
            "output": [{"type": "text", "text": "Sunny, 25°C, light wind from the south-west."}],
            "metadata": {},
            "state": "success",
        },
        {
            "type": "image",
            "source": {"type": "url", "url": "https://example.com/weather/paris.png", "mime_type": "image/png"},
            "minPixels": 3136,
            "maxPixels": 1003520,
        },
    ],
    "metadata": {"agentscope_generate_reason": "MODEL_STOP"},
    "timestamp": "2025-01-01 12:00:00.000",
    "usage": {"inputTokens": 812, "outputTokens": 96, "cachedTokens": 0, "time": 1.25, "totalTokens": 908},
}


def conversation(n: int = 1000) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(
                {
                    "id": f"u{i}",
                    "name": "alice",
                    "role": "USER",
                    "content": [
                        {"type": "text", "text": f"Question number {i}: what is the weather like in city {i}?"}
                    ],
                    "metadata": {},
                    "timestamp": "2025-01-01 12:00:00.000",
                    "usage": None,
                }
            )
        elif kind == 1:
            out.append({**FIVE_BLOCKS, "id": f"a{i}"})
        elif kind == 2:
            out.append(
                {
                    "id": f"t{i}",
                    "name": "Friday",
                    "role": "TOOL",
                    "content": [
                        {
                            "type": "tool_result",
                            "id": f"c{i}",
                            "name": "get_weather",
                            "output": [{"type": "text", "text": "Cloudy, 18°C"}],
                            "metadata": {},
                            "state": "success",
                        }
                    ],
                    "metadata": {},
                    "timestamp": "2025-01-01 12:00:01.000",
                    "usage": None,
                }
            )
        else:
            out.append(
                {
                    "id": f"s{i}",
                    "name": "system",
                    "role": "SYSTEM",
                    "content": [{"type": "text", "text": "You are a helpful assistant. Answer briefly."}],
                    "metadata": {},
                    "timestamp": None,
                    "usage": None,
                }
            )
    return out


def _time(fn: Any, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def run(quick: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    pyd_list = __import__("pydantic").TypeAdapter(list[peers.PMsg])
    ms_one = msgspec.json.Decoder(peers.MMsg)
    ms_list = msgspec.json.Decoder(list[peers.MMsg])
    enc = msgspec.json.Encoder()
    for case, value, number in (
        ("5-block message", FIVE_BLOCKS, 2000 if quick else 20000),
        ("1,000-message conversation", conversation(), 3 if quick else 20),
    ):
        data = orjson.dumps(value)
        single = isinstance(value, dict)
        if single:
            ours_dec = lambda: Msg.from_json(data)
            pyd_dec = lambda: peers.PMsg.model_validate_json(data)
            ms_dec = lambda: ms_one.decode(data)
        else:
            ours_dec = lambda: agentmsg.decode_messages(data)
            pyd_dec = lambda: pyd_list.validate_json(data)
            ms_dec = lambda: ms_list.decode(data)
        ours_obj, pyd_obj, ms_obj, plain = ours_dec(), pyd_dec(), ms_dec(), orjson.loads(data)
        # Equal work: every implementation reads the same data back.
        if single:
            assert orjson.loads(ours_obj.to_json_bytes()) == value  # type: ignore[union-attr]
            ours_enc = lambda: ours_obj.to_json_bytes()  # type: ignore[union-attr]
            pyd_enc = lambda: pyd_obj.model_dump_json(exclude_none=False)  # type: ignore[union-attr]
        else:
            assert [orjson.loads(m.to_json_bytes()) for m in ours_obj] == value  # type: ignore[union-attr]
            ours_enc = lambda: agentmsg.encode_messages(ours_obj)  # type: ignore[arg-type]
            pyd_enc = lambda: pyd_list.dump_json(pyd_obj)
        ms_enc = lambda: enc.encode(ms_obj)
        assert msgspec.json.decode(ms_enc()) is not None and orjson.loads(pyd_enc()) is not None
        for op, impls in (
            (
                "decode (validated)",
                [
                    ("agentmsg", ours_dec),
                    ("pydantic v2", pyd_dec),
                    ("msgspec", ms_dec),
                    ("orjson.loads (no validation)", lambda: orjson.loads(data)),
                ],
            ),
            (
                "encode",
                [
                    ("agentmsg", ours_enc),
                    ("pydantic v2", pyd_enc),
                    ("msgspec", ms_enc),
                    ("orjson.dumps (dict)", lambda: orjson.dumps(plain)),
                ],
            ),
        ):
            base = None
            for impl, fn in impls:
                us = _time(fn, number)
                base = us if base is None else base
                rows.append({"case": case, "op": op, "impl": impl, "us": us, "ratio": base / us})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== messages: decode and encode (µs per op; ratio = agentmsg time / this time) ==")
    print(f"{'case':<28} {'op':<20} {'implementation':<30} {'µs/op':>10} {'agentmsg/x':>11}")
    for r in rows:
        print(f"{r['case']:<28} {r['op']:<20} {r['impl']:<30} {r['us']:>10.2f} {r['ratio']:>11.2f}")
    for case in dict.fromkeys(r["case"] for r in rows):
        for op in ("decode (validated)", "encode"):
            sel = {r["impl"]: r for r in rows if r["case"] == case and r["op"] == op}
            vs_pyd = sel["pydantic v2"]["ratio"]
            vs_ms = sel["msgspec"]["ratio"]
            print(
                f"{case}, {op}: agentmsg/pydantic = {vs_pyd:.2f} (target <= 1.0: {'met' if vs_pyd <= 1.0 else 'MISSED'}), "
                f"agentmsg/msgspec = {vs_ms:.2f} (target <= 2.5: {'met' if vs_ms <= 2.5 else 'MISSED'})"
            )


if __name__ == "__main__":
    print(f"agentmsg {agentmsg.__version__}")
    print_rows(run(quick="--quick" in sys.argv))
