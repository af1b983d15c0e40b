"""Event reduction benchmark: JSONL bytes → reduced messages.

Rows:
* agentmsg ``reduce_stream`` on a 1,000,000-delta stream (text, thinking, four interleaved parallel
  tool calls), against plain per-line ``orjson.loads`` of the same bytes (a floor that reduces nothing);
* agentmsg against AgentScope Python 2.x ``Msg.append_event`` on the same stream, converted to AgentScope
  Python's own event format beforehand: once with its event parsing (pydantic event union, the same
  bytes-to-message work agentmsg does) and once ``append_event`` alone on pre-parsed events. Its
  ``append_event`` concatenates ``block.text += delta`` (a copy of the text per delta: quadratic) and
  its pydantic parsing runs at ~17,000 events/s, so the 1,000,000-delta stream would take minutes; this
  row uses a 200,000-delta stream (20,000 quick). The gap grows with the length: append_event alone
  was 5.5x slower than agentmsg's whole bytes-to-message path at 20,000 deltas, 9.4x at 100,000, 21x at
  300,000;
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

    small = make_stream(20_000 if quick else 200_000)
    small_events = small.count(b"\n")
    try:
        converted = _to_agentscope_python(small)
        _agentscope_parse(converted[:1])  # import and build the event adapter before timing
        t_as = _best(lambda: _agentscope_reduce(converted), 1)
        parsed = _agentscope_parse(converted)
        t_as_append = _best(lambda: _agentscope_append(parsed), 1)
        t_small = _best(lambda: reduce_stream(small), 3)
        reference = _agentscope_reduce(converted)
        ours_msg = reduce_stream(small)[0]
        same_text = ours_msg.text_content == "".join(b.text for b in reference.content if b.type == "text")
        rows.append(
            {
                "case": f"{small_events:,}-event stream",
                "impl": "agentmsg reduce_stream",
                "events_per_s": small_events / t_small,
                "ratio": 1.0,
            }
        )
        rows.append(
            {
                "case": f"{small_events:,}-event stream",
                "impl": f"agentscope {_version()} Msg.append_event (+ event parsing){'' if same_text else ' [TEXT DIFFERS]'}",
                "events_per_s": small_events / t_as,
                "ratio": t_as / t_small,
            }
        )
        rows.append(
            {
                "case": f"{small_events:,}-event stream",
                "impl": "agentscope Msg.append_event only (events parsed beforehand)",
                "events_per_s": small_events / t_as_append,
                "ratio": t_as_append / t_small,
            }
        )
    except ImportError as exc:
        rows.append(
            {
                "case": "agentscope comparison",
                "impl": f"skipped: agentscope not installed ({exc.name}); pip install agentscope",
                "events_per_s": float("nan"),
                "ratio": float("nan"),
            }
        )

    rows.append(_memory(quick, latin1=True))
    rows.append(_memory(quick))
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
    print(f"{'case':<28} {'implementation':<72} {'events/s':>12} {'ratio':>8}")
    for r in rows:
        rate = "" if r["events_per_s"] != r["events_per_s"] else f"{r['events_per_s']:,.0f}"
        print(f"{r['case']:<28} {r['impl']:<72} {rate:>12} {r['ratio']:>8.2f}")
    big = rows[0]["events_per_s"]
    print(
        f"target >= {TARGET_RATE:,} events/s: {'met' if big >= TARGET_RATE else f'MISSED ({big / TARGET_RATE:.2f}x of target)'}"
    )
    vs = [r for r in rows if r["impl"].startswith("agentscope")]
    if vs:
        worst = min(r["ratio"] for r in vs)
        print(
            f"target >= {TARGET_VS_AGENTSCOPE:.0f}x AgentScope Python append_event: "
            f"{'met' if worst >= TARGET_VS_AGENTSCOPE else 'MISSED'} "
            f"({vs[0]['ratio']:.1f}x with its event parsing, {worst:.1f}x append_event alone)"
        )
    for mem in (r for r in rows if "peak_vs_in_memory" in r):
        verdict = "met" if mem["ratio"] <= TARGET_MEMORY else "MISSED"
        print(
            f"target peak memory <= {TARGET_MEMORY:.0f}x message, {mem['case']}: {verdict} against its JSON size "
            f"({mem['ratio']:.2f}x); {mem['peak_vs_in_memory']:.2f}x the message's strings in memory"
        )


if __name__ == "__main__":
    print_rows(run(quick="--quick" in sys.argv))
