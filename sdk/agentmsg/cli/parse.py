"""``agentmsg parse``: a provider's reply as agentmsg's message (or its AgentEvents).

    agentmsg parse --provider NAME [--stream] [--events] [--choice N|all] [--cumulative|--incremental] FILE

FILE is a non-streaming response body (JSON), or with ``--stream`` the raw streamed body (SSE as the
provider sends it, or JSON lines). Prints the assistant message as one JSON line (``--choice all``:
one line per choice, in index order), or with ``--events`` the AgentEvents as JSON lines. Exit 0 when
the reply was read whole, 1 when the stream was cut or carried an error or unreadable payloads (the
message, with everything received, is printed all the same), 2 when FILE cannot be read or is not a
response at all.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import orjson

from ..events import Reducer
from ..providers import NAMES, get
from ._io import EXIT_INVALID, EXIT_OK, UsageError, read_bytes


def events_of(args: argparse.Namespace, data: bytes) -> tuple[list[dict[str, Any]], bool]:
    """(events, clean): the reply's events and whether it was read whole without a problem."""
    provider = get(args.provider)  # the parsers for the provider's variant
    options: dict[str, Any] = {}
    if args.stream:
        if args.provider == "dashscope" and args.incremental is not None:
            options["incremental"] = args.incremental
        parser = provider.StreamParser(**options)
        events = parser.feed(data) + parser.close()
        return events, not parser.builder.errors and not parser.builder.problems
    try:
        events = provider.response_events(data, **options)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise UsageError(f"{args.file}: not a {args.provider} response: {exc}") from None
    clean = not any(e["type"] == "CUSTOM" for e in events)
    return events, clean


def run(args: argparse.Namespace, out: TextIO) -> int:
    data = read_bytes(args.file)
    events, clean = events_of(args, data)
    if args.events:
        for e in events:
            out.write(orjson.dumps(e).decode() + "\n")
        return EXIT_OK if clean else EXIT_INVALID
    sources = sorted({e.get("source") for e in events}, key=lambda s: -1 if s is None else int(s.rsplit("/", 1)[1]))
    if args.choice != "all":
        index = int(args.choice)
        wanted = None if index == 0 else f"choice/{index}"
        if wanted not in sources:
            raise UsageError(f"{args.file}: the reply has no choice {index}")
        sources = [wanted]
    for source in sources:
        r = Reducer(source=source)
        r.feed_many(events, trusted=True)  # the provider parser's events: valid by construction
        for msg in r.finish():
            out.write(msg.to_json() + "\n")
    return EXIT_OK if clean else EXIT_INVALID


def add_parser(sub: Any) -> None:
    p = sub.add_parser("parse", help="a provider's response or stream -> the agentmsg message (or its events)")
    p.add_argument("--provider", required=True, choices=NAMES, help="the provider (registry name)")
    p.add_argument("--stream", action="store_true", help="FILE is a streamed body (SSE or JSON lines)")
    p.add_argument("--events", action="store_true", help="print the AgentEvents as JSON lines instead")
    p.add_argument("--choice", default="0", help="which choice / candidate to print (default 0), or 'all'")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--cumulative",
        dest="incremental",
        action="store_false",
        default=None,
        help="DashScope native: each chunk repeats the text so far (incremental_output=false)",
    )
    mode.add_argument(
        "--incremental", dest="incremental", action="store_true", help="DashScope native: each chunk is new text"
    )
    p.add_argument("file", metavar="FILE", help="the response body or the streamed body; '-' for stdin")
    p.set_defaults(func=run)
