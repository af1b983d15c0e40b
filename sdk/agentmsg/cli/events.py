"""``agentmsg reduce`` (events -> messages) and ``agentmsg events`` (messages -> events)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, TextIO

import orjson

from ..errors import ValidationError
from ..events.emitter import iter_events
from ..events.reducer import Reducer
from ..events.sse import encode_sse_event
from ..events.stream import reduce_stream
from ..message import Msg
from ._io import EXIT_INVALID, EXIT_OK, instances, open_binary, print_problems, read_bytes


def run_reduce(args: argparse.Namespace, out: TextIO) -> int:
    """Reduce a JSONL or SSE event stream; print one message JSON per line."""
    import sys

    source = open_binary(args.file)
    reducer = Reducer(strict=args.strict, source=args.source)
    status = EXIT_OK
    try:
        with source if args.file != "-" else contextlib.nullcontext(source):
            messages = reduce_stream(source, strict=args.strict, sse=True if args.sse else None, reducer=reducer)
    except ValidationError as exc:
        print_problems(args.file, "", exc.problems, sys.stderr)
        messages = reducer.finish()  # keep what was received before the error
        status = EXIT_INVALID
    for msg in messages:
        out.write(msg.to_json() + "\n")
    if print_problems(
        args.file, "", reducer.problems + (reducer.check_results() if args.check_result else []), sys.stderr
    ):
        status = EXIT_INVALID
    return status


def run_events(args: argparse.Namespace, out: TextIO) -> int:
    """Print the event stream of each message in FILE (JSON object, array or JSONL)."""
    import sys

    data = read_bytes(args.file)
    status = EXIT_OK
    for prefix, instance, error in instances(data):
        where = "".join(f"/{p}" for p in prefix)
        if error is not None:
            print(f"{args.file}:{where}: {error} [json]", file=sys.stderr)
            status = EXIT_INVALID
            continue
        try:
            msg = Msg.from_dict(instance)
        except ValidationError as exc:
            print_problems(args.file, where, exc.problems, sys.stderr)
            status = EXIT_INVALID
            continue
        for event in iter_events(msg, chunk_size=args.chunk_size):
            out.write(encode_sse_event(event) if args.sse else orjson.dumps(event).decode() + "\n")
    return status


def add_parser(sub: Any) -> None:
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
    p.set_defaults(func=run_reduce)
    p = sub.add_parser("events", help="print the event stream of messages (JSONL, or SSE with --sse)")
    p.add_argument("file", metavar="FILE", help="a message JSON object, an array or JSONL; '-' for stdin")
    p.add_argument("--sse", action="store_true", help="write text/event-stream instead of JSON lines")
    p.add_argument("--chunk-size", type=int, default=None, help="split text deltas into pieces of N characters")
    p.set_defaults(func=run_events)
