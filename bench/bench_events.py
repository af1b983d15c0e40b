"""Event reduction benchmark: JSONL bytes → reduced messages.

Rows:
* agentmsg ``reduce_stream`` (the tolerant JSONL fast path) on a 1,000,000-delta stream (text, thinking,
  four interleaved parallel tool calls), against plain per-line ``orjson.loads`` of the same bytes (a
  floor that reduces nothing); the same events as SSE (``data:`` lines), against ``orjson.loads`` of each
  event's data;
* matched against AgentScope Python 2.x, at 2,000, 20,000 and 200,000 deltas, every implementation
  timed the same way (best of the same number of repeats): agentmsg **strict** mode (every event
  validated against the event schema) against AgentScope's pydantic event parsing + ``Msg.append_event``
  (it validates every event too): the like-for-like row. Also shown: agentmsg's tolerant fast path
  (validates no plain delta) and ``append_event`` alone on events parsed beforehand. Before timing, the
  whole messages are compared (names; every block's kind and text; every tool call's id, name and raw
  arguments), not only their text. AgentScope's ``append_event`` concatenates ``block.text += delta``
  (a copy of the text per delta: quadratic), so its gap grows with the length;
* adversarial inputs, each at two sizes 10x apart, time per input byte (flat = linear): one long SSE
  line fed in 4 KB chunks, one long JSONL line, many distinct open blocks;
* peak traced memory (tracemalloc) while reducing a ~200 MB stream from a file, against the size of the
  resulting message (its JSON, and its in-memory strings).
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import agentscope_missing
from streams import make_stream

from agentmsg import reduce_stream

TARGET_RATE = 1_000_000
TARGET_VS_AGENTSCOPE = 10.0
TARGET_MEMORY = 2.0


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _to_agentscope_python(stream: bytes) -> list[bytes]:
    """The same events in AgentScope Python 2.x's format (snake_case, REPLY_START/END)."""
    out = []
    for line in stream.splitlines():
        e = orjson.loads(line)
        t = e["type"]
        if t in ("MODEL_CALL_START", "MODEL_CALL_END", "AGENT_END"):
            continue  # usage/end fields differ between the runtimes; not part of the measured work
        d: dict[str, Any] = {
            "type": {"AGENT_START": "REPLY_START", "AGENT_END": "REPLY_END"}.get(t, t),
            "id": e["id"],
            "created_at": e["createdAt"],
            "reply_id": "reply-1",
        }
        for src, dst in (
            ("blockId", "block_id"),
            ("toolCallId", "tool_call_id"),
            ("toolCallName", "tool_call_name"),
            ("delta", "delta"),
            ("name", "name"),
            ("sessionId", "session_id"),
        ):
            if src in e:
                d[dst] = e[src]
        if t == "TOOL_CALL_DELTA":
            d.pop("tool_call_name", None)
        if t == "TOOL_CALL_END":
            d.pop("tool_call_name", None)
        out.append(orjson.dumps(d))
    return out


_ADAPTER: Any = None


def _agentscope_parse(lines: list[bytes]) -> list[Any]:
    global _ADAPTER
    if _ADAPTER is None:  # built once, outside the timings (building it takes about a second)
        from agentscope.event import AgentEvent
        from pydantic import TypeAdapter

        _ADAPTER = TypeAdapter(AgentEvent)
    validate = _ADAPTER.validate_json
    return [validate(line) for line in lines]


def _agentscope_append(events: list[Any]) -> Any:
    from agentscope.message import Msg

    msg = Msg(name="Friday", content=[], role="assistant", id="reply-1")
    for event in events:
        msg.append_event(event)
    return msg


def _agentscope_reduce(lines: list[bytes]) -> Any:
    return _agentscope_append(_agentscope_parse(lines))


def run(quick: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    n_big = 100_000 if quick else 1_000_000
    stream = make_stream(n_big)
    events = stream.count(b"\n")

    def ours() -> None:
        reduce_stream(stream)

    def floor() -> None:
        loads = orjson.loads
        for line in stream.splitlines():
            loads(line)

    t_ours = _best(ours, 3)
    t_floor = _best(floor, 3)
    rows.append(
        {
            "case": f"{n_big:,}-delta stream",
            "impl": "agentmsg reduce_stream",
            "events_per_s": events / t_ours,
            "ratio": 1.0,
        }
    )
    rows.append(
        {
            "case": f"{n_big:,}-delta stream",
            "impl": "orjson.loads per line (parse only)",
            "events_per_s": events / t_floor,
            "ratio": t_floor / t_ours,
        }
    )

    # The same events as SSE (one ``data:`` line each, as AgentScope's servers send them to front ends),
    # read from 128 KB chunks as from a socket or a file, against orjson parsing each event's data alone.
    sse = b"".join(b"data: " + line + b"\n\n" for line in stream.splitlines())
    if reduce_stream(sse)[0].to_json_bytes() != reduce_stream(stream)[0].to_json_bytes():
        raise AssertionError("the SSE and JSONL forms of the stream reduce to different messages")

    def ours_sse() -> None:
        reduce_stream(sse)

    def floor_sse() -> None:
        loads = orjson.loads
        for line in sse.splitlines():
            if line:
                loads(line[6:])

    t_sse = _best(ours_sse, 3)
    t_sse_floor = _best(floor_sse, 3)
    case = f"{n_big:,}-delta stream, SSE"
    rows.append({"case": case, "impl": "agentmsg reduce_stream", "events_per_s": events / t_sse, "ratio": 1.0})
    rows.append(
        {
            "case": case,
            "impl": "orjson.loads per data line (parse only)",
            "events_per_s": events / t_sse_floor,
            "ratio": t_sse_floor / t_sse,
        }
    )

    rows += _matched(quick)
    rows += _adversarial(quick)
    rows.append(_memory(quick, latin1=True))
    rows.append(_memory(quick))
    return rows


def _comparable(msg: Any, tool_type: str = "tool_use", tool_args: str = "content") -> list[tuple[Any, ...]]:
    """A message's name and blocks as plain tuples; AgentScope Python names a tool call's block type and
    its raw arguments differently (``tool_call``, ``input``)."""
    out: list[tuple[Any, ...]] = [("name", msg.name)]
    for b in msg.content:
        if b.type == "text":
            out.append(("text", b.text))
        elif b.type == "thinking":
            out.append(("thinking", b.thinking))
        elif b.type == tool_type:
            out.append(("tool_call", b.id, b.name, getattr(b, tool_args)))
        else:
            out.append((b.type,))
    return out


def _comparable_agentscope(msg: Any) -> list[tuple[Any, ...]]:
    return _comparable(msg, "tool_call", "input")


def _matched(quick: bool) -> list[dict[str, Any]]:
    """agentmsg and AgentScope Python at several lengths, timed alike, results compared whole first."""
    rows: list[dict[str, Any]] = []
    try:
        _agentscope_parse(_to_agentscope_python(make_stream(1))[:1])  # import + build the adapter untimed
    except ImportError as exc:
        return [
            {
                "case": "agentscope comparison",
                "impl": f"skipped: AgentScope Python {agentscope_missing(exc.name)}",
                "events_per_s": float("nan"),
                "ratio": float("nan"),
            }
        ]
    sizes = (2_000, 20_000) if quick else (2_000, 20_000, 200_000)
    for n in sizes:
        repeat = 3 if n <= 20_000 else 1
        stream = make_stream(n)
        events = stream.count(b"\n")
        converted = _to_agentscope_python(stream)
        parsed = _agentscope_parse(converted)
        same = _comparable(reduce_stream(stream, strict=True)[0]) == _comparable_agentscope(
            _agentscope_reduce(converted)
        ) and _comparable(reduce_stream(stream)[0]) == _comparable(reduce_stream(stream, strict=True)[0])
        mark = "" if same else " [MESSAGES DIFFER]"
        timings = [
            ("agentmsg reduce_stream strict=True (validates every event)", lambda: reduce_stream(stream, strict=True)),
            (
                f"agentscope {_version()} pydantic parsing + Msg.append_event{mark}",
                lambda: _agentscope_reduce(converted),
            ),
            ("agentmsg reduce_stream (tolerant fast path)", lambda: reduce_stream(stream)),
            ("agentscope Msg.append_event only (events parsed beforehand)", lambda: _agentscope_append(parsed)),
        ]
        times = [(impl, _best(fn, repeat)) for impl, fn in timings]
        strict_time = times[0][1]
        for impl, t in times:
            rows.append(
                {
                    "case": f"{n:,} deltas, best of {repeat}",
                    "impl": impl,
                    "events_per_s": events / t,
                    "ratio": t / strict_time,
                    "matched": True,
                }
            )
    return rows


def _adversarial(quick: bool) -> list[dict[str, Any]]:
    """Time per input byte at two sizes 10x apart: equal means linear."""
    from agentmsg import Reducer, SSEDecoder

    def long_sse(size: int) -> Any:
        chunk = b"x" * 4096
        body = b"data: " + b"".join([chunk] * (size // 4096)) + b"\n\n"

        def run() -> None:
            decoder = SSEDecoder()
            for i in range(0, len(body), 4096):
                decoder.feed(body[i : i + 4096])

        return len(body), run

    def long_jsonl(size: int) -> Any:
        line = b'{"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"'
        body = line + b"y" * size + b'"}\n'
        chunks = [body[i : i + 4096] for i in range(0, len(body), 4096)]
        return len(body), lambda: reduce_stream(iter(chunks), reducer=Reducer())

    def open_blocks(count: int) -> Any:
        lines = [b'{"type":"AGENT_START","id":"e0","createdAt":"2025-01-01T00:00:00Z","replyId":"r"}']
        lines += [
            b'{"type":"TEXT_BLOCK_START","id":"e%d","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"b%d"}'
            % (i, i)
            for i in range(1, count + 1)
        ]
        lines += [
            b'{"type":"TEXT_BLOCK_DELTA","id":"d%d","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"b%d","delta":"x"}'
            % (i, i)
            for i in range(count)
        ]
        body = b"\n".join(lines) + b"\n"
        return len(body), lambda: reduce_stream(body, reducer=Reducer())

    base = 2_000_000 if quick else 5_000_000
    cases = [
        ("one long SSE line (4 KB chunks)", long_sse, base),
        ("one long JSONL line (4 KB chunks)", long_jsonl, base),
        ("distinct open blocks (START + delta each)", open_blocks, 2_000 if quick else 5_000),
    ]
    rows = []
    for name, make, size in cases:
        per_byte = []
        for scale in (1, 10):
            nbytes, fn = make(size * scale)
            t = _best(fn, 3 if scale == 1 else 1)
            per_byte.append(t / nbytes * 1e9)
            rows.append(
                {
                    "case": f"adversarial x{scale}",
                    "impl": f"{name}: {nbytes / 1e6:.1f} MB, {per_byte[-1]:.2f} ns/byte",
                    "events_per_s": float("nan"),
                    "ratio": per_byte[-1] / per_byte[0],
                    "adversarial": name,
                }
            )
    return rows


def _version() -> str:
    import agentscope

    return str(getattr(agentscope, "__version__", "?"))


def _memory(quick: bool, latin1: bool = False) -> dict[str, Any]:
    """Peak traced memory while reducing a stream from a file. The bench stream's text has an em dash:
    Python then stores the whole text at 2 bytes per character, so the message alone is ~2.3x its JSON
    and "2x the JSON size" cannot hold for any Python result; ``latin1`` replaces the dash with "-" so
    the strings are 1 byte per character and the JSON size is the message's size."""
    deltas = 100_000 if quick else 1_000_000  # ~200 MB of JSONL at full size
    data = make_stream(deltas, seed=3)
    if latin1:
        data = data.replace("—".encode(), b"-")
    with tempfile.NamedTemporaryFile(delete=False, suffix=".jsonl") as fh:
        fh.write(data)
        path = fh.name
    size = len(data)
    del data
    try:
        gc.collect()
        tracemalloc.start()
        with open(path, "rb") as src:
            (msg,) = reduce_stream(src)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        os.unlink(path)
    # Strings first: serializing with orjson caches a UTF-8 copy inside non-ASCII strs.
    in_memory = sum(
        sys.getsizeof(getattr(b, k))
        for b in msg.content
        for k in ("text", "thinking", "content")
        if isinstance(getattr(b, k, None), str)
    )
    json_size = len(msg.to_json_bytes())
    return {
        "case": f"{size / 1e6:.0f} MB stream from a file{' (Latin-1 text)' if latin1 else ''}",
        "impl": f"peak traced memory {peak / 1e6:.1f} MB; message {json_size / 1e6:.1f} MB as JSON, {in_memory / 1e6:.1f} MB of str in memory",
        "events_per_s": float("nan"),
        "ratio": peak / max(json_size, 1),
        "peak_vs_in_memory": peak / max(in_memory, 1),
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== event reduction: JSONL bytes -> messages ==")
    print("(matched rows: ratio = time / agentmsg strict's time; adversarial rows: ratio = ns/byte / ns/byte at x1)")
    print(f"{'case':<28} {'implementation':<72} {'events/s':>12} {'ratio':>8}")
    for r in rows:
        rate = "" if r["events_per_s"] != r["events_per_s"] else f"{r['events_per_s']:,.0f}"
        print(f"{r['case']:<28} {r['impl']:<72} {rate:>12} {r['ratio']:>8.2f}")
    big = rows[0]["events_per_s"]
    print(
        f"target >= {TARGET_RATE:,} events/s: {'met' if big >= TARGET_RATE else f'MISSED ({big / TARGET_RATE:.2f}x of target)'}"
    )
    matched = [r for r in rows if r.get("matched") and "pydantic parsing" in r["impl"]]
    if matched:
        worst = min(r["ratio"] for r in matched)
        figures = ", ".join(f"{r['ratio']:.1f}x at {r['case'].split(' deltas')[0]}" for r in matched)
        print(
            f"target >= {TARGET_VS_AGENTSCOPE:.0f}x AgentScope Python, matched (agentmsg strict vs pydantic + "
            f"append_event): {'met' if worst >= TARGET_VS_AGENTSCOPE else 'MISSED'} ({figures})"
        )
    for name in dict.fromkeys(r["adversarial"] for r in rows if "adversarial" in r):
        ratio = [r for r in rows if r.get("adversarial") == name][-1]["ratio"]
        # Linear: the same time per byte (memory effects of 10x larger buffers allow some drift);
        # quadratic would be about 10x.
        print(f"linear time, {name}: {'met' if ratio < 3 else 'MISSED'} (time per byte x{ratio:.2f} at 10x the input)")
    for mem in (r for r in rows if "peak_vs_in_memory" in r):
        verdict = "met" if mem["ratio"] <= TARGET_MEMORY else "MISSED"
        print(
            f"target peak memory <= {TARGET_MEMORY:.0f}x message, {mem['case']}: {verdict} against its JSON size "
            f"({mem['ratio']:.2f}x); {mem['peak_vs_in_memory']:.2f}x the message's strings in memory"
        )


if __name__ == "__main__":
    print_rows(run(quick="--quick" in sys.argv))
