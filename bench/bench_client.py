"""@agentmsg/client's reducer (TypeScript) in Node on the 200,000-event stream of the event bench,
side by side with its floor, ``JSON.parse`` of each line alone (bench/client_reducer.mjs does the
timing in Node; this writes the stream and reports). Target: within 2x of the floor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from streams import make_stream

HERE = Path(__file__).resolve().parent
TARGET_VS_PARSE = 2.0


def run(quick: bool = False) -> list[dict[str, Any]]:
    node = shutil.which("node")
    deltas = 20_000 if quick else 200_000
    if node is None:
        return [
            {
                "case": f"{deltas:,}-delta stream",
                "impl": "skipped: node not found",
                "events_per_s": float("nan"),
                "ratio": float("nan"),
            }
        ]
    with tempfile.NamedTemporaryFile(delete=False, suffix=".jsonl") as fh:
        fh.write(make_stream(deltas))
        path = fh.name
    try:
        done = subprocess.run(
            [node, str(HERE / "client_reducer.mjs"), path, "3" if quick else "7"],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    finally:
        os.unlink(path)
    r = json.loads(done.stdout)
    case = f"{r['events']:,}-event stream"
    return [
        {
            "case": case,
            "impl": f"@agentmsg/client Reducer in Node {r['node']} (JSON.parse + feed + finish)",
            "events_per_s": r["events"] / r["reduce_best"],
            "ratio": 1.0,
            "median_s": r["reduce_median"],
        },
        {
            "case": case,
            "impl": "JSON.parse per line alone (the floor)",
            "events_per_s": r["events"] / r["floor_best"],
            "ratio": r["floor_best"] / r["reduce_best"],
            "median_s": r["floor_median"],
            "vs_floor": r["reduce_best"] / r["floor_best"],
            "vs_floor_median": r["reduce_median"] / r["floor_median"],
        },
    ]


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== TypeScript reducer (@agentmsg/client) in Node: JSONL lines -> messages ==")
    print(f"{'case':<28} {'implementation':<72} {'events/s':>12} {'ratio':>8}")
    for r in rows:
        rate = "" if r["events_per_s"] != r["events_per_s"] else f"{r['events_per_s']:,.0f}"
        print(f"{r['case']:<28} {r['impl']:<72} {rate:>12} {r['ratio']:>8.2f}")
    floor = next((r for r in rows if "vs_floor" in r), None)
    if floor is not None:
        x = floor["vs_floor"]
        print(
            f"target <= {TARGET_VS_PARSE:.0f}x JSON.parse alone: {'met' if x <= TARGET_VS_PARSE else 'MISSED'} "
            f"({x:.2f}x best of runs, {floor['vs_floor_median']:.2f}x median)"
        )
