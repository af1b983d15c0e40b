"""``agentmsg reduce`` and ``agentmsg events``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

import orjson

from ..errors import ValidationError
from ..message import Msg
from .emitter import iter_events
from .reducer import Reducer
from .sse import encode_sse_event
from .stream import reduce_stream


def _open(path: str) -> Any:
    if path == "-":
        return sys.stdin.buffer
    return open(path, "rb")


def cmd_reduce(args: argparse.Namespace) -> int:
    """Reduce a JSONL or SSE event stream; print one message JSON per line."""
    try:
        source = _open(args.file)
    except OSError as exc:
        print(f"agentmsg: {args.file}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    reducer = Reducer(strict=args.strict, source=args.source)
    status = 0
    try:
        with source if args.file != "-" else contextlib.nullcontext(source):
            messages = reduce_stream(source, strict=args.strict, sse=True if args.sse else None, reducer=reducer)
    except ValidationError as exc:
        for p in exc.problems:
            print(f"{args.file}:{p.pointer}: {p.message} [{p.rule}]", file=sys.stderr)
        messages = reducer.finish()  # keep what was received before the error
        status = 1
    out = sys.stdout.buffer
    for msg in messages:
        out.write(msg.to_json_bytes() + b"\n")
    for p in reducer.problems + (reducer.check_results() if args.check_result else []):
        print(f"{args.file}:{p.pointer}: {p.message} [{p.rule}]", file=sys.stderr)
        status = 1
    return status


def cmd_events(args: argparse.Namespace) -> int:
    """Print the event stream of each message in FILE (JSON object, array or JSONL)."""
    from ..cli import _instances, _read, _UsageError

    try:
        data = _read(args.file)
    except _UsageError as exc:
        print(f"agentmsg: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    status = 0
    for prefix, instance, error in _instances(data):
        where = "".join(f"/{p}" for p in prefix)
        if error is not None:
            print(f"{args.file}:{where}: {error} [json]", file=sys.stderr)
            status = 1
            continue
        try:
            msg = Msg.from_dict(instance)
        except ValidationError as exc:
            for p in exc.problems:
                print(f"{args.file}:{where}{p.pointer}: {p.message} [{p.rule}]", file=sys.stderr)
            status = 1
            continue
        for event in iter_events(msg, chunk_size=args.chunk_size):
            out.write(encode_sse_event(event) if args.sse else orjson.dumps(event).decode() + "\n")
    return status


def add_commands(sub: Any) -> None:
    p = sub.add_parser("reduce", help="reduce an event stream (JSONL or SSE) to messages, one JSON per line")
    p.add_argument("file", metavar="FILE", help="events as JSON lines or text/event-stream; '-' for stdin")
    p.add_argument("--sse", action="store_true", help="the input is SSE (default: detected)")
    p.add_argument(
        "--strict", action="store_true", help="stop at the first bad event instead of applying the tolerant rules"
    )
    p.add_argument("--source", default=None, help="reduce the events forwarded from this subagent source path")
    p.add_argument(
        "--check-result",
        action="store_true",
        help="also report where a message does not cover its AGENT_RESULT (exit 1 if so)",
    )
    p.set_defaults(func=lambda a, out: cmd_reduce(a))
    p = sub.add_parser("events", help="print the event stream of messages (JSONL, or SSE with --sse)")
    p.add_argument("file", metavar="FILE", help="a message JSON object, an array or JSONL; '-' for stdin")
    p.add_argument("--sse", action="store_true", help="write text/event-stream instead of JSON lines")
    p.add_argument("--chunk-size", type=int, default=None, help="split text deltas into pieces of N characters")
    p.set_defaults(func=lambda a, out: cmd_events(a))
