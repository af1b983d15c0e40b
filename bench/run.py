"""`make bench`: every benchmark side by side in one process; prints the tables and the targets.

    python bench/run.py [--quick] [--json FILE]

``--quick`` times less (smaller loops, fewer repeats); ``--json FILE`` also writes every row.
It measures and reports: it exits 0 even when a target is missed (a timed assertion would be a flaky
test). Message rows come from bench_msg.py; event rows from bench_events.py and formatter rows from
bench_formatters.py when those modules exist; the TypeScript reducer's rows (in Node) from bench_client.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_msg
import msgspec
import pydantic

import agentmsg


def _print_generic(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n== {title} ==")
    for row in rows:
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing loops and fewer repeats")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write every row to FILE as JSON")
    args = parser.parse_args(argv)

    print(
        f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} CPUs), "
        f"agentmsg {agentmsg.__version__}, pydantic {pydantic.VERSION}, msgspec {msgspec.__version__}; "
        f"{'quick' if args.quick else 'full'} run"
    )
    results: dict[str, Any] = {"quick": args.quick, "python": platform.python_version()}
    msg_rows = bench_msg.run(args.quick)
    bench_msg.print_rows(msg_rows)
    results["messages"] = msg_rows

    if importlib.util.find_spec("bench_events") is not None:
        import bench_events

        event_rows = bench_events.run(quick=args.quick)
        printer = getattr(bench_events, "print_rows", None)
        if callable(printer):
            printer(event_rows)
        else:
            _print_generic("events", event_rows)
        results["events"] = event_rows
    else:
        print("\n(bench_events.py not present: no event rows)")

    if importlib.util.find_spec("bench_formatters") is not None:
        import bench_formatters

        formatter_rows = bench_formatters.run(quick=args.quick)
        bench_formatters.print_rows(formatter_rows)
        results["formatters"] = formatter_rows

    if importlib.util.find_spec("bench_streams") is not None:
        import bench_streams

        stream_rows = bench_streams.run(quick=args.quick)
        bench_streams.print_rows(stream_rows)
        results["provider_streams"] = stream_rows

    if importlib.util.find_spec("bench_client") is not None:
        import bench_client  # the TypeScript reducer in Node (bench_client.py)

        client_rows = bench_client.run(quick=args.quick)
        bench_client.print_rows(client_rows)
        results["client"] = client_rows

    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n")
        print(f"\nrows written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
