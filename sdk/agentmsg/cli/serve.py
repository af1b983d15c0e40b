"""``agentmsg serve``: the event viewer. Serves the events of a JSONL, SSE or JSON-array file at ``/events``
(:class:`agentmsg.web.EventEndpoint`: ids, keep-alive, resume) and at ``/`` a page built on
``@agentmsg/client`` that renders the reply live. Needs the ``web`` extra (Starlette, uvicorn). Stopped (Ctrl-C,
SIGTERM), it closes the viewer (:meth:`agentmsg.web.ViewerApp.close`) before uvicorn waits for its connections:
every open page gets the end of its stream."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any, TextIO

import agentmsg.ui as ui
from agentmsg.cli._io import (
    CHUNK,
    EMPTY_INPUT,
    EXIT_OK,
    UsageError,
    binary,
    blank,
    exit_status,
    looks_like,
    open_binary,
    shown_path,
    whole_number,
)
from agentmsg.cli._numbering import Numbering
from agentmsg.errors import Problem
from agentmsg.events import read_events


def file_events(source: IO[bytes], name: str, warn: TextIO, head: bytes = b"") -> Iterator[Any]:
    """The events of a JSONL, SSE or JSON-array stream (sniffed), read as they are needed (after ``head``, its
    first bytes when they were read ahead); a line (SSE event) that cannot be read is reported on ``warn`` and
    skipped, as ``agentmsg reduce`` reports it."""

    def chunks() -> Iterator[bytes]:
        if head:
            yield head
        while chunk := source.read(CHUNK):
            yield chunk

    return _read(chunks(), name, warn)


def _read(chunks: Iterator[bytes], name: str, warn: TextIO) -> Iterator[Any]:
    """The events of ``chunks``; a line (SSE event) that cannot be read is reported on ``warn`` and skipped. A
    stream of AG-UI events (its first event of a type only AG-UI has) is read through the AG-UI decoder: the
    viewer renders the AgentEvents it stands for, and the decoder's notes are reported on ``warn``."""

    numbering = Numbering()  # (a decoder's pointers count the events it was fed, not the input's)

    def report(problem: Problem) -> None:
        numbering.skipped(problem)
        print(f"{name}: {problem.message} [{problem.rule}] (skipped)", file=warn, flush=True)

    events = numbering.fed(read_events(chunks, strict=False, on_problem=report))
    return _agentevents(events, name, warn, numbering)


def _agentevents(events: Iterator[Any], name: str, warn: TextIO, numbering: Numbering) -> Iterator[Any]:
    for first in events:
        protocol = ui.detect(first)
        if protocol is None:
            yield first
            yield from events
            return
        print(f"{name}: {protocol} events, read as AgentEvents (docs/{protocol}.md)", file=warn, flush=True)
        decoder = ui.get(protocol).decoder()
        for event in itertools.chain((first,), events):
            yield from decoder.feed(event)
            for note in decoder.notes:
                print(f"{name}: {protocol} event {numbering.of(note)}", file=warn, flush=True)
            decoder.notes.clear()
        yield from decoder.close()
        return


def _regular_file(source: IO[bytes]) -> bool:
    try:
        return stat.S_ISREG(os.fstat(source.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


async def piped_events(source: IO[bytes], name: str, warn: TextIO, head: bytes = b"") -> AsyncIterator[Any]:
    """:func:`file_events` of a pipe, FIFO or terminal (a live producer, which may write nothing for a while):
    read in a thread, so that the server goes on serving meanwhile, and each event is passed on as soon as its
    bytes have arrived (what a read returned, not a full buffer). At most a few runs of events are read ahead."""
    import asyncio  # (here, as in run: only serve needs them, and every command's start-up would pay for them)
    import concurrent.futures
    import threading

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[list[Any] | BaseException | None] = asyncio.Queue(maxsize=4)
    batch: list[Any] = []
    read = getattr(source, "read1", source.read)

    def put(item: list[Any] | BaseException | None) -> None:
        asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

    def chunks() -> Iterator[bytes]:
        if head:
            yield head
        while True:
            if batch:  # the events of the bytes so far go out before waiting for more
                put(batch.copy())
                batch.clear()
            chunk: bytes = read(CHUNK)
            if not chunk:
                return
            yield chunk

    def work() -> None:
        end: BaseException | None = None
        try:
            for event in _read(chunks(), name, warn):
                batch.append(event)
        except Exception as exc:  # the stream's error event says it
            end = exc
        with contextlib.suppress(RuntimeError, concurrent.futures.CancelledError):  # the server has stopped
            if batch:
                put(batch.copy())
            put(end)

    threading.Thread(target=work, name=f"agentmsg serve: reading {name}", daemon=True).start()
    while (item := await queue.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        for event in item:
            yield event


def _past_blank(source: IO[bytes], name: str, head: bytes) -> bytes:
    """``head`` (blank: only whitespace) and what follows it up to its first other byte, read on until there is
    one (a file of only whitespace holds no events, as an empty one: it is refused). A regular file is read
    again from where ``head`` began, so that the whitespace is not held; a pipe's is held (linear in it)."""
    read = getattr(source, "read1", source.read)
    start: int | None = None
    if _regular_file(source):
        with contextlib.suppress(OSError, ValueError):
            start = source.tell() - len(head)
    held = bytearray(head)
    size = len(head)
    try:
        while True:
            chunk: bytes = read(CHUNK)
            if not chunk:
                raise UsageError(f"{name}: {EMPTY_INPUT.message} [{EMPTY_INPUT.rule}]")
            size += len(chunk)
            if start is None:
                held += chunk
            if not blank(chunk):
                break
        if start is not None:
            source.seek(start)
            return read(CHUNK) or b""
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return bytes(held)


def _head(source: IO[bytes], name: str) -> bytes:
    """The first bytes of the file, what a pipe holds already (a live producer is not waited for, unless all it
    has written is whitespace). An empty file or one of only whitespace, binary data (/dev/zero would be read
    forever) and a file of messages (served as events it would show nothing) are refused, saying what was
    meant."""
    try:
        head: bytes = getattr(source, "read1", source.read)(CHUNK) or b""
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if not head:
        raise UsageError(f"{name}: {EMPTY_INPUT.message} [{EMPTY_INPUT.rule}]")
    if blank(head):
        head = _past_blank(source, name, head)
    found = binary(head)
    if found is not None:
        raise UsageError(f"{name} is not an event stream (JSON lines, SSE or a JSON array): {found}")
    if looks_like(head) == "messages":
        fix = f"'agentmsg events {name} | agentmsg serve -'" if name != "-" else "'agentmsg events -' first"
        raise UsageError(f"{name} holds messages, not events: to serve their events, {fix}")
    return head


def run(args: argparse.Namespace, out: TextIO) -> int:
    # Imported here, not at the top: every command builds the parser, which imports this module, and would
    # otherwise pay at start-up for what only serve uses (asyncio alone is about 30 ms).
    import ipaddress
    import socket

    from agentmsg.cli._install import install_command

    try:
        import uvicorn

        from agentmsg.web import uvicorn_config, viewer_app
    except ImportError as exc:
        raise UsageError(f"serve needs the web extra ({exc.name} is missing): {install_command('web')}") from None
    source = open_binary(args.file)
    name = shown_path(args.file)  # (a name that is not UTF-8 shown as \xNN, as every command shows it)
    try:
        head = _head(source, name)
    except UsageError:
        if args.file != "-":
            source.close()
        raise
    # A regular file is read in the event loop (it does not block); a pipe is read in a thread.
    reader = file_events if _regular_file(source) else piped_events
    app = viewer_app(
        reader(source, name, sys.stderr, head), drop_every=args.drop_every, hosts=[args.host], protocol=args.protocol
    )
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    try:
        sock = socket.create_server((args.host, args.port), family=family)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    drops = f"; the event connection closes after every {args.drop_every} events" if args.drop_every else ""
    if args.protocol is not None:
        drops += f"; /events speaks {args.protocol} unless a request asks for another protocol"
    print(
        f"agentmsg serve: viewer at http://{shown}:{port}/ (events of {name} at /events{drops}); Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    if not ipaddress.ip_address(host).is_loopback:
        print(
            f"agentmsg serve: warning: {args.host or shown} is not a loopback address: anyone who can reach this machine "
            "on that port can read the events (no authentication)",
            file=sys.stderr,
            flush=True,
        )
    # (uvicorn_config: a deadline on each request's headers, a bound on the connections open at once)
    config = uvicorn_config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)

    class Server(uvicorn.Server):
        """uvicorn's server, closing the viewer as it begins to shut down (Ctrl-C, SIGTERM), before it waits for
        the open connections: each open page gets its stream's end, and the wait is short, where an open stream
        (a pipe's events never end on their own) was cut at the graceful timeout with no end, and the page's
        client reconnected to a server going away."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            app.close()
            await super().shutdown(sockets)

    server = Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if args.file != "-":
            source.close()
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        **exit_status(
            "0  stopped with Ctrl-C (each open page is sent the end of its stream first)",
            "2  usage error: the web extra is missing, the address cannot be listened on, EVENTS_FILE cannot",
            "   be read or holds messages, not events",
            interrupt=False,
        ),
    )
    p.add_argument(
        "file", metavar="EVENTS_FILE", help="events as JSON lines, a JSON array or text/event-stream; '-' for stdin"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port", type=whole_number("--port", 65535, 0), default=8000, help="port (default 8000; 0 picks a free one)"
    )
    p.add_argument(
        "--drop-every",
        type=whole_number("--drop-every"),
        default=None,
        metavar="N",
        help="close the event connection after every N events, so that resume (Last-Event-ID) can be seen working",
    )
    p.add_argument(
        "--protocol",
        choices=ui.names(),
        default=None,
        help="the UI protocol /events speaks to a request that names none (default: agentscope; a request picks "
        "another with ?protocol=NAME or its Accept header; the viewer page asks for agentscope)",
    )
    p.set_defaults(func=run)
