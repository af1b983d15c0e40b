"""Message decode/encode benchmark: agentmsg vs pydantic v2 vs msgspec vs plain orjson, in one process.

Operations
* validated decode, bytes -> typed objects: ``Msg.from_json`` (the full closed JSON Schema, role rules
  included: a msgspec typed decode against types derived from it, maps and role rules checked while
  converting into the models; anything it does not take goes through jsonschema-rs) vs ``PMsg.model_validate_json`` vs
  ``msgspec.json.Decoder(MMsg).decode`` vs ``orjson.loads`` (the floor: parses, validates nothing);
* encode, typed objects -> bytes: ``msg.to_json_bytes()`` vs ``model_dump_json(by_alias=True)`` vs
  ``msgspec.json.Encoder().encode`` vs ``orjson.dumps`` of the parsed dict (the floor).
The peer models are in peers.py (what they check, and what they leave out).

Cases
* a realistic 5-block assistant message (~2 KB): thinking with signature/provider/model metadata, text,
  tool_use with input and raw argument string, tool_result with text output, image with a URL source;
  usage, metadata, timestamp;
* a 1,000-message conversation: one JSON array of varied messages, every role and every block type.
  Each implementation decodes/encodes the array as a whole through its own list codec:
  ``agentmsg.decode_messages`` / ``encode_messages`` (one parse, one schema validation of the array, one
  structuring pass), ``TypeAdapter(list[PMsg]).validate_json`` / ``dump_json``, a msgspec
  ``Decoder(list[MMsg])`` / ``Encoder``, ``orjson.loads`` / ``dumps``. That is the fair equivalent: every
  row parses the same bytes once and builds the same list. Two extra agentmsg rows show the
  per-message API on the same data: ``[Msg.from_dict(d) for d in orjson.loads(data)]`` and
  ``b"[" + b",".join(m.to_json_bytes() ...) + b"]"``.
* agentmsg writes JSON with its C writer (agentmsg._speedups) where it was built: the rows "agentmsg, pure
  Python" time the same work without it (``orjson.dumps(value, default=json_default)``, the path of
  installs without a C compiler; the same bytes).

Equal work is asserted before timing: for every implementation, decoding the sample and encoding the
result gives back JSON equal to the sample, and every validating implementation rejects the same
invalid variants (role rule, wrong enum, bad type, ...) and an unknown key: the peers reject it (closed
models), agentmsg rejects it with ``strict=True`` and by default keeps it (schema 1.1 forward compatibility:
it is written back and listed by ``find_unknown_keys``), which is more work, never less. On the timed
(valid) samples the default and strict readers do exactly the same work.

Timing: ``timeit`` (garbage collector off while timing, its default), the loop count calibrated to
~0.2 s (0.05 s with ``--quick``), 7 repeats (3 quick) interleaved across implementations so that machine
drift hits all of them alike; the table reports the minimum and the median µs per op, ratios use the
minimum.
"""

from __future__ import annotations

import random
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers

import agentmsg
from agentmsg import Msg
from agentmsg._codec import converter as _converter

AGENTMSG, PYDANTIC, MSGSPEC, FLOOR = "agentmsg", "pydantic v2", "msgspec", "orjson (no validation)"
PURE = "agentmsg, pure Python"
DECODE, ENCODE = "decode (validated)", "encode"
TARGET_VS_PYDANTIC = 1.0
TARGET_VS_MSGSPEC = 2.5

FIVE_BLOCKS: dict[str, Any] = {
    "id": "7f9c1e52-3a4b-4c8d-9e0f-1a2b3c4d5e6f",
    "name": "Friday",
    "role": "ASSISTANT",
    "content": [
        {
            "type": "thinking",
            "thinking": (
                "The user asks for the weather in Paris this afternoon and whether to take an umbrella. "
                "I do not know the current conditions, so I should call get_weather with the city and the "
                "unit they used before (celsius), then summarise the result in one or two sentences."
            ),
            "metadata": {
                "signature": "EqQBCkYIBxgCKkC1y2mXoZ3vT8wq9Lr4bN6cVfH0sJ2uK7yP1aD5eG8iM3oQ6tW9xR4zB7nE2jL0pS5vY8hU"
                "1fC6kA3dI9gT2mN5qX8wZ0rV4bJ7eH1yO6sL3cF9uP2iK5aD8gM0tQ3nW6zR9xB2vE5jY8hS1oU4fC7kI0lA3dT6g",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
            },
        },
        {
            "type": "text",
            "text": (
                "Let me check the current weather in Paris for you. One moment while I look it up; I will "
                "also tell you whether the afternoon looks dry enough to leave the umbrella at home, and "
                "what the temperature will be around five o'clock when you plan to walk back."
            ),
        },
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"city": "Paris", "country": "FR", "unit": "celsius", "hours": [14, 15, 16, 17]},
            "content": '{"city":"Paris","country":"FR","unit":"celsius","hours":[14,15,16,17]}',
            "metadata": {},
            "state": "finished",
        },
        {
            "type": "tool_result",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "output": [
                {
                    "type": "text",
                    "text": "Paris, FR: 14:00 sunny 25°C; 15:00 sunny 26°C; 16:00 cloudy 24°C; 17:00 light rain "
                    "19°C, precipitation 60%, wind 12 km/h from the south-west.",
                }
            ],
            "metadata": {},
            "state": "success",
        },
        {
            "type": "image",
            "source": {
                "type": "url",
                "url": "https://example.com/weather/paris/2025-06-01/forecast-afternoon.png",
                "mime_type": "image/png",
            },
            "minPixels": 3136,
            "maxPixels": 1003520,
        },
    ],
    "metadata": {"agentscope_generate_reason": "MODEL_STOP", "_bypass_multiagent_history_merge": False},
    "timestamp": "2025-06-01 13:58:07.412",
    "usage": {"inputTokens": 1812, "outputTokens": 196, "cachedTokens": 1024, "time": 2.375, "totalTokens": 2008},
}


def _source(rng: random.Random, mime: str) -> dict[str, Any]:
    if rng.random() < 0.5:
        url = {"type": "url", "url": f"https://cdn.example.com/{rng.randrange(10**6)}.bin"}
        return url | {"mime_type": mime} if rng.random() < 0.7 else url
    return {
        "type": "base64",
        "media_type": mime,
        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    }


def _sentence(rng: random.Random, i: int) -> str:
    words = ("weather", "forecast", "city", "rain", "temperature", "wind", "tomorrow", "please", "summary", "data")
    return f"#{i} " + " ".join(rng.choice(words) for _ in range(rng.randrange(5, 40))) + "."


def conversation(n: int = 1000, seed: int = 7) -> list[dict[str, Any]]:
    """n varied messages, every role and block type, in the form agentmsg (and Java) writes them."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    base = {"metadata": {}, "timestamp": "2025-06-01 13:58:07.412", "usage": None}
    system = [{"type": "text", "text": "You are a helpful assistant. Answer briefly."}]
    out.append({"id": "m0", "name": "system", "role": "SYSTEM", "content": system, **base, "timestamp": None})
    for i in range(1, n):
        kind = i % 5
        msg: dict[str, Any] = {"id": f"m{i}", "name": None, "role": "USER", "content": [], **base}
        if kind == 0:  # user: text plus one media block
            media = rng.choice(("image", "audio", "video", "data"))
            block: dict[str, Any] = {"type": media, "source": _source(rng, f"{media}/x-test")}
            if media == "video":
                block |= {"fps": 2.0, "maxFrames": 64, "totalPixels": 4816896}
            elif media == "data":
                block |= {"id": f"file{i}", "name": "report.csv"}
            msg |= {"name": "alice", "content": [{"type": "text", "text": _sentence(rng, i)}, block]}
        elif kind == 1:  # assistant: thinking + text + tool call
            msg |= {
                "name": "Friday",
                "role": "ASSISTANT",
                "content": [
                    {"type": "thinking", "thinking": _sentence(rng, i), "metadata": {"signature": f"sig{i}"}},
                    {"type": "text", "text": _sentence(rng, i)},
                    {
                        "type": "tool_use",
                        "id": f"call{i}",
                        "name": "search",
                        "input": {"q": _sentence(rng, i), "k": 5},
                        "content": None,
                        "metadata": {},
                        "state": "pending",
                    },
                ],
                "metadata": {"agentscope_generate_reason": "TOOL_CALLS"},
                "usage": {"inputTokens": 100 + i, "outputTokens": 20, "time": 0.5},
            }
        elif kind == 2:  # tool: a result with text (and sometimes an image) output
            output: list[dict[str, Any]] = [{"type": "text", "text": _sentence(rng, i)}]
            if rng.random() < 0.3:
                output.append({"type": "image", "source": _source(rng, "image/png")})
            msg |= {
                "role": "TOOL",
                "content": [
                    {
                        "type": "tool_result",
                        "id": f"call{i - 1}",
                        "name": "search",
                        "output": output,
                        "metadata": {},
                        "state": rng.choice(("success", "success", "error")),
                    }
                ],
            }
        elif kind == 3:  # assistant: the 5-block reply, or a hint
            msg = {**FIVE_BLOCKS, "id": f"m{i}"}
            if rng.random() < 0.3:
                msg["content"] = [{"type": "hint", "id": None, "hint": _sentence(rng, i), "source": "reminder"}]
        else:  # user: plain text
            msg |= {"name": "alice", "content": [{"type": "text", "text": _sentence(rng, i)}]}
        out.append(msg)
    return out


INVALID_VARIANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "role rule (USER with tool_use)": lambda m: m.update(role="USER"),
    "unknown key": lambda m: m["content"][1].update(extra=1),
    "bad enum (tool state)": lambda m: m["content"][2].update(state="FINISHED"),
    "bad type (text is int)": lambda m: m["content"][1].update(text=5),
    "unknown block type": lambda m: m["content"][1].update(type="html"),
    "bad timestamp": lambda m: m.update(timestamp="yesterday"),
    "negative tokens": lambda m: m["usage"].update(inputTokens=-1),
}


def _rejects(decode: Callable[[bytes], Any], data: bytes) -> bool:
    try:
        decode(data)
    except (ValueError, msgspec.ValidationError):  # agentmsg/pydantic ValidationError are ValueErrors
        return True
    return False


def _check_rejections(codecs: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bytes]]], data: bytes) -> None:
    """Every validating implementation rejects every invalid variant (agentmsg in strict mode for the unknown
    key, which its default reader keeps and reports instead)."""
    strict = {AGENTMSG: lambda d: Msg.from_json(d, strict=True)}
    for what, spoil in INVALID_VARIANTS.items():
        bad = orjson.loads(data)
        spoil(bad)
        bad_bytes = orjson.dumps(bad)
        for name in (AGENTMSG, PYDANTIC, MSGSPEC):
            decode = strict.get(name, codecs[name][0]) if what == "unknown key" else codecs[name][0]
            assert _rejects(decode, bad_bytes), f"{name} accepts {what}"
        if what == "unknown key":
            kept = Msg.from_json(bad_bytes)
            assert kept.to_json_bytes() == bad_bytes and agentmsg.find_unknown_keys(kept), "unknown key not kept"


def _check_equal_work(impls: dict[str, tuple[Callable[[], Any], Callable[[Any], bytes]]], sample: Any) -> None:
    for name, (decode, encode) in impls.items():
        got = orjson.loads(encode(decode()))
        assert got == sample, f"{name}: decode+encode does not give the sample back"


def _timings(impls: list[tuple[str, Callable[[], Any]]], quick: bool) -> dict[str, list[float]]:
    budget, repeat = (0.05, 3) if quick else (0.2, 7)
    timers = {}
    for name, fn in impls:
        t = timeit.Timer(fn)
        once = t.timeit(1)  # warm-up and calibration
        timers[name] = (t, max(1, int(budget / max(once, 1e-7))))
    runs: dict[str, list[float]] = {name: [] for name, _ in impls}
    for _ in range(repeat):  # interleaved: drift affects every implementation alike
        for name, (t, number) in timers.items():
            runs[name].append(t.timeit(number) / number * 1e6)
    return runs


def _case(case: str, sample: Any, single: bool, quick: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = orjson.dumps(sample)
    if single:
        pyd_dec, pyd_enc = peers.PMsg.model_validate_json, lambda o: o.model_dump_json(by_alias=True).encode()
        ms_dec = msgspec.json.Decoder(peers.MMsg).decode
        ours_dec, ours_enc = Msg.from_json, lambda m: m.to_json_bytes()
        extra: list[tuple[str, Callable[[bytes], Any], Callable[[Any], bytes]]] = []
    else:
        adapter = pydantic.TypeAdapter(list[peers.PMsg])
        pyd_dec, pyd_enc = adapter.validate_json, lambda o: adapter.dump_json(o, by_alias=True)
        ms_dec = msgspec.json.Decoder(list[peers.MMsg]).decode
        ours_dec, ours_enc = agentmsg.decode_messages, agentmsg.encode_messages
        extra = [
            (
                "agentmsg, per message",
                lambda d: [Msg.from_dict(m) for m in orjson.loads(d)],
                lambda ms: b"[" + b",".join([m.to_json_bytes() for m in ms]) + b"]",
            )
        ]
    if _converter._speedups is not None:  # the writer without its C part, as where it is not built
        extra.append((PURE, ours_dec, lambda o: orjson.dumps(o, default=_converter.json_default)))
    ms_enc = msgspec.json.Encoder().encode
    codecs: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bytes]]] = {
        AGENTMSG: (ours_dec, ours_enc),
        PYDANTIC: (pyd_dec, pyd_enc),
        MSGSPEC: (ms_dec, ms_enc),
        FLOOR: (orjson.loads, orjson.dumps),
    }
    codecs |= {name: (dec, enc) for name, dec, enc in extra}
    _check_equal_work({n: (lambda d=d: d(data), e) for n, (d, e) in codecs.items()}, sample)
    if single:
        _check_rejections(codecs, data)
    objects = {name: dec(data) for name, (dec, _) in codecs.items()}
    rows: list[dict[str, Any]] = []
    for op in (DECODE, ENCODE):
        if op == DECODE:
            impls = [(name, lambda dec=dec: dec(data)) for name, (dec, _) in codecs.items()]
        else:
            impls = [(name, lambda enc=enc, o=objects[name]: enc(o)) for name, (_, enc) in codecs.items()]
        runs = _timings(impls, quick)
        base = min(runs[AGENTMSG])
        for name, _ in impls:
            best = min(runs[name])
            rows.append(
                {
                    "case": case,
                    "op": op,
                    "impl": name,
                    "us_min": round(best, 3),
                    "us_median": round(statistics.median(runs[name]), 3),
                    "agentmsg_ratio": round(base / best, 3),
                    "bytes": len(data),
                }
            )
    info = {"case": case, "bytes": len(data), "messages": 1 if single else len(sample)}
    return rows, info


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Every row: case, op, impl, us_min, us_median, agentmsg_ratio (= agentmsg µs / this µs), bytes."""
    rows: list[dict[str, Any]] = []
    for case, sample, single in (
        ("5-block message", FIVE_BLOCKS, True),
        ("1,000-message conversation", conversation(1000), False),
    ):
        rows += _case(case, sample, single, quick)[0]
    return rows


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    missed = 0
    for case in dict.fromkeys(r["case"] for r in rows):
        for op in (DECODE, ENCODE):
            sel = {r["impl"]: r for r in rows if r["case"] == case and r["op"] == op}
            vs_pyd, vs_ms = sel[PYDANTIC]["agentmsg_ratio"], sel[MSGSPEC]["agentmsg_ratio"]
            ok_pyd, ok_ms = vs_pyd <= TARGET_VS_PYDANTIC, vs_ms <= TARGET_VS_MSGSPEC
            missed += (not ok_pyd) + (not ok_ms)
            lines.append(
                f"{case}, {op}: agentmsg/pydantic = {vs_pyd:.2f} (target <= {TARGET_VS_PYDANTIC}: "
                f"{'met' if ok_pyd else 'MISSED'}); agentmsg/msgspec = {vs_ms:.2f} (target <= "
                f"{TARGET_VS_MSGSPEC}: {'met' if ok_ms else 'MISSED'})"
            )
    lines.append(f"verdict: {'all targets met' if not missed else f'{missed} of {len(lines) * 2} targets missed'}")
    return lines


WRITER = (
    "agentmsg's JSON writer: C (agentmsg._speedups; the 'pure Python' rows: without it)"
    if _converter._speedups is not None
    else "agentmsg's JSON writer: pure Python (agentmsg._speedups not built, or AGENTMSG_PURE_PYTHON turning it off)"
)


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== messages: validated decode and encode (µs per op; agentmsg/x = agentmsg time / this time) ==")
    print(WRITER)
    for case in dict.fromkeys(r["case"] for r in rows):
        size = next(r["bytes"] for r in rows if r["case"] == case)
        print(f"{case}: {size:,} bytes of JSON")
    print(f"{'case':<28} {'op':<19} {'implementation':<24} {'min µs/op':>11} {'median':>11} {'agentmsg/x':>11}")
    for r in rows:
        print(
            f"{r['case']:<28} {r['op']:<19} {r['impl']:<24} {r['us_min']:>11.2f} {r['us_median']:>11.2f} "
            f"{r['agentmsg_ratio']:>11.2f}"
        )
    print()
    for line in verdicts(rows):
        print(line)


if __name__ == "__main__":
    print(f"agentmsg {agentmsg.__version__}, pydantic {pydantic.VERSION}, msgspec {msgspec.__version__}")
    print(WRITER)
    print_rows(run(quick="--quick" in sys.argv))
