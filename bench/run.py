"""`make bench`: every benchmark side by side in one process; prints the tables and the targets.

    python bench/run.py [--quick] [--json FILE] [--pace-us N] [--only SECTION ...] [--instructions]

``--quick`` times less (smaller loops, fewer repeats); ``--json FILE`` also writes every row; ``--pace-us``
the live rows' paced case (microseconds between two events); ``--only`` runs those sections only;
``--instructions`` also counts instructions under valgrind in the sections that can (formatters, live: their
``instructions()``; minutes each), their targets judged on instructions beside the CPU ones.
It measures and reports: it exits 0 even when a target is missed (a timed assertion would be a flaky
test). Message rows come from bench_msg.py (and bench_codec_adversarial.py), event rows from bench_events.py,
formatter rows from bench_formatters.py, the in-memory stream rows from bench_streams.py, the live-path rows
(loopback HTTP) from bench_live.py, the TypeScript reducer's rows (in Node) from bench_client.py, the hostile-input
rows (lines that carry no data, malformed events) from bench_hostile.py, the token-counting rows (offline counts vs
official ones, linear time) from bench_context.py, the trimming rows (vs LangChain's trim_messages) from
bench_context_trim.py, the UI protocol rows (AG-UI translation per event) from bench_ui.py.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import msgspec
import pydantic

import agentmsg


def _print_generic(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n== {title} ==")
    for row in rows:
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()))


#: The sections, in the order they run: name -> module (bench/<module>.py, with run(quick) and print_rows(rows)).
SECTIONS = {
    "messages": "bench_msg",
    "message_adversarial": "bench_codec_adversarial",
    "events": "bench_events",
    "formatters": "bench_formatters",
    "provider_streams": "bench_streams",
    "live": "bench_live",
    "client": "bench_client",  # the TypeScript reducer in Node
    "hostile_input": "bench_hostile",  # input that carries nothing vs events: SSE lines, schema errors
    "context": "bench_context",  # token counts vs the providers' official counts; counting 10,000 messages
    "ui": "bench_ui",  # AgentEvents <-> AG-UI, per event, against serializing / parsing the AG-UI event alone
}


def print_targets(summary: list[tuple[str, dict[str, Any]]]) -> None:
    """One table of the targets the sections report (bench_msg, bench_events and bench_client print theirs under
    their own tables)."""
    print("\n== targets: every ratio against its target ==")
    width = max(len(t["row"]) for _, t in summary)
    tw = max(len(t["target"]) for _, t in summary)
    print(f"  {'section':<17} {'row':<{width}} {'ratio':>7} {'target':>{tw}}  verdict")
    for section, t in summary:
        value = "-" if t["value"] != t["value"] else f"{t['value']:.2f}"
        verdict = t.get("verdict") or ("not judged" if t["met"] is None else "met" if t["met"] else "MISSED")
        print(f"  {section:<17} {t['row']:<{width}} {value:>7} {t['target']:>{tw}}  {verdict}")
    judged = [t for _, t in summary if t["met"] is not None]
    reach = sum(1 for _, t in summary if str(t.get("verdict", "")).startswith("out of reach"))
    print(
        f"  {sum(1 for t in judged if t['met'])} of {len(judged)} targets met"
        + (f"; {reach} out of reach" if reach else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing loops and fewer repeats")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write every row to FILE as JSON")
    parser.add_argument(
        "--pace-us", type=float, default=200.0, help="the live rows' paced case: microseconds between two events"
    )
    parser.add_argument("--only", action="append", choices=list(SECTIONS), help="run this section only (repeatable)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions under valgrind where a section can (formatters, live; minutes each)",
    )
    args = parser.parse_args(argv)

    print(
        f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} CPUs), "
        f"agentmsg {agentmsg.__version__}, pydantic {pydantic.VERSION}, msgspec {msgspec.__version__}; "
        f"{'quick' if args.quick else 'full'} run"
    )
    results: dict[str, Any] = {"quick": args.quick, "python": platform.python_version()}
    for section, module_name in SECTIONS.items():
        if args.only and section not in args.only:
            continue
        module = importlib.import_module(module_name)
        kwargs = {"pace_us": args.pace_us} if section == "live" else {}
        rows = module.run(quick=args.quick, **kwargs)
        printer = getattr(module, "print_rows", None)
        if callable(printer):
            printer(rows)
        else:
            _print_generic(section, rows)
        if section == "context":  # the trimming rows (bench_context_trim.py), beside the counting rows
            trimming = importlib.import_module("bench_context_trim")
            extra = trimming.trim_rows(quick=args.quick)
            trimming.print_rows(extra)
            rows = [*rows, *extra]
        results[section] = rows
        if args.instructions and hasattr(module, "instructions"):
            counted = module.instructions()
            module.print_instructions(counted)
            results[f"{section}_instructions"] = counted

    summary = [
        (section, t)
        for section, module_name in SECTIONS.items()
        if section in results and hasattr(module := importlib.import_module(module_name), "targets")
        for t in module.targets(results[section])
    ]
    summary += [
        (section, t)
        for section, module_name in SECTIONS.items()
        if f"{section}_instructions" in results
        and hasattr(module := importlib.import_module(module_name), "instruction_targets")
        for t in module.instruction_targets(results[f"{section}_instructions"])
    ]
    if summary:
        print_targets(summary)
        results["targets"] = [dict(t, section=section) for section, t in summary]

    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n")
        print(f"\nrows written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
