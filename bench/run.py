"""`make bench`: every benchmark side by side in one process; prints the tables and the targets.

    python bench/run.py [--quick] [--json FILE]

It measures and reports; it never fails on a missed target (a timed assertion would be a flaky test).
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_events
import bench_msg


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    print(f"python {platform.python_version()} on {platform.machine()}, {'quick' if quick else 'full'} run")
    msg_rows = bench_msg.run(quick)
    bench_msg.print_rows(msg_rows)
    event_rows = bench_events.run(quick)
    bench_events.print_rows(event_rows)
    if "--json" in argv:
        path = Path(argv[argv.index("--json") + 1])
        path.write_text(json.dumps({"messages": msg_rows, "events": event_rows}, indent=1, default=str))
        print(f"\nrows written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
