"""``agentmsg serve``'s server (``agentmsg.web._server``: uvicorn with bounds) and the command serving a pipe: a
warning beyond loopback, a quiet producer, requests whose headers never finish, connections beyond the bound,
clients that read nothing."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import http.client
import importlib.util
import re
import signal
import socket
import subprocess
import sys
import termios
import time
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any

import orjson
import pytest

from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.web import viewer_app
from agentmsg.web._server import uvicorn_config
from tests._support.procs import stop
from tests.web._http import (
    events,
    get,
    serving,
)


def test_serve_warns_when_listening_beyond_loopback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", "serve", "-", "--host", "0.0.0.0", "--port", "0"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(orjson.dumps(events()[0]).decode() + "\n")
        proc.stdin.close()
        found = re.search(r"viewer at http://0\.0\.0\.0:(\d+)/", proc.stderr.readline())
        assert found
        assert get(int(found.group(1)), "/viewer.css").status == 200  # started: what it had to say is said
        proc.terminate()
        assert "warning: 0.0.0.0 is not a loopback address" in proc.stderr.read()
    finally:
        stop(proc)


@contextlib.contextmanager
def _serving_a_pipe(head: bytes) -> Iterator[tuple[subprocess.Popen[bytes], IO[bytes], int]]:
    """``agentmsg serve -`` on a free port, fed ``head`` through a pipe left open; the process, its stdin and the
    port it said it listens on. Stopped at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", "serve", "-", "--port", "0"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(head)
        proc.stdin.flush()
        found = re.search(rb"http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
        assert found
        yield proc, proc.stdin, int(found.group(1))
    finally:
        stop(proc)


def test_serve_from_a_live_pipe_keeps_serving_while_the_producer_is_quiet() -> None:
    """stdin (a pipe) was read in the event loop, 128 kB at a time: while a live producer wrote nothing more the
    whole server hung (the page did not load) and even the events already written were not sent."""
    lines = [orjson.dumps(e) + b"\n" for e in events(3)]
    with _serving_a_pipe(b"".join(lines[:3])) as (_, stdin, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        decoder, got = SSEDecoder(), list[SSEEvent]()
        while len(got) < 3:  # the events written so far arrive while the producer is still open
            got += decoder.feed(resp.read1(65536))
        assert get(port, "/", limit=5).status == 200  # and the page is served meanwhile
        stdin.write(b"".join(lines[3:]))
        stdin.close()
        got += decoder.feed(resp.read())
        conn.close()
        assert [e.json() for e in got if e.event != "end"] == events(3) and got[-1].event == "end"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stopped_ends_each_open_stream_with_its_end(sig: signal.Signals) -> None:
    """On Ctrl-C (or SIGTERM) the events of a pipe that never ends were still streaming when uvicorn began its
    graceful shutdown: it waited for them (they never end on their own), then after its timeout cut them without
    an end, and the page's client took that for a drop and reconnected to a server going away. agentmsg serve
    closes the viewer first: the open stream gets its end, the process exits (0 on Ctrl-C) without uvicorn
    cancelling anything. Each step waits on the output (60 s bounds), no sleep."""
    lines = [orjson.dumps(e) + b"\n" for e in events(3)]
    cut: Exception | None = None
    # the first three events and no more: the producer stays open, quiet
    with _serving_a_pipe(b"".join(lines[:3])) as (proc, _, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        decoder, got = SSEDecoder(), list[SSEEvent]()
        while len(got) < 3:  # the stream is open, and waits for the producer's next event
            got += decoder.feed(resp.read1(65536))
        proc.send_signal(sig)
        try:
            rest = resp.read()
        except http.client.IncompleteRead as exc:  # (a chunked body cut before its last chunk)
            rest, cut = exc.partial, exc
        got += decoder.feed(rest)
        conn.close()
        _, err = proc.communicate(timeout=60)
    assert cut is None, f"the stream was cut: {cut!r}"
    assert [e.json() for e in got if e.event != "end"] == events(3)[:3] and got[-1].event == "end"
    assert b"timeout graceful shutdown exceeded" not in err and b"Traceback" not in err, err.decode()
    if sig == signal.SIGINT:
        assert proc.returncode == 0


def test_serve_stopped_with_a_client_that_reads_nothing_says_no_traceback(tmp_path: Any) -> None:
    """A client that asks for a long stream and reads none of it: on Ctrl-C the app's send waited for the socket to
    drain, uvicorn cancelled it at its graceful timeout and printed "Exception in ASGI application" and a
    traceback. The connection is dropped at the shutdown, as at the write timeout: exit 0, one line on stderr."""
    start = [{"type": "AGENT_START", "id": "s", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"}]
    delta = {"type": "TEXT_BLOCK_DELTA", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", "blockId": "t"}
    deltas = (orjson.dumps({**delta, "id": f"e{i}", "delta": "x" * 300}) + b"\n" for i in range(50_000))
    path = tmp_path / "long.jsonl"
    path.write_bytes(orjson.dumps(start[0]) + b"\n" + b"".join(deltas))  # (about 20 MB: more than loopback holds)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", "serve", str(path), "--port", "0"], stderr=subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        found = re.search(rb"viewer at http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
        assert found
        sock = socket.create_connection(("127.0.0.1", int(found.group(1))))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.settimeout(30)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")  # streaming; nothing more is read
        held, still = -1, 0
        while still < 5:  # until the server has sent what the sockets hold: its writes pause
            time.sleep(0.1)
            queued = int.from_bytes(fcntl.ioctl(sock, termios.FIONREAD, b"\0\0\0\0"), "little")
            held, still = queued, still + 1 if queued == held else 0
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        sock.close()
    finally:
        stop(proc)
    assert proc.returncode == 0 and b"Traceback" not in err and b"Exception in ASGI" not in err, err.decode()


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (reading what it sends), while ``trickle`` is sent a
    byte every 0.2 s (a slowloris keeping its request alive)."""
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline:
        if sent < len(trickle):
            try:
                sock.sendall(trickle[sent : sent + 1])
            except OSError:
                return True
            sent += 1
        sock.settimeout(0.2 if trickle else max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:  # reset
            return True
    return False


def test_a_request_whose_headers_never_finish_is_closed_in_bounded_time() -> None:
    """uvicorn has no deadline on a request's headers (its keep-alive timeout starts after a response, and any
    byte cancels it): a client that sent part of a request line, or a byte now and then, or began a second
    request on a kept-alive connection and stopped, kept the connection forever (slowloris). agentmsg serve's
    config closes each within its header timeout (1 s here); a stream that lasts longer than it is not cut."""

    async def thinking() -> AsyncIterator[dict[str, Any]]:
        for i, e in enumerate(events(2)):
            if i == 2:
                await asyncio.sleep(1.5)  # longer than the header timeout
            yield e

    app = viewer_app(thinking())
    with serving(app, lambda a, **o: uvicorn_config(a, header_timeout=1.0, **o)) as port:
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /eve")
        trickle = socket.create_connection(("127.0.0.1", port))
        kept = socket.create_connection(("127.0.0.1", port))
        kept.sendall(b"GET /viewer.css HTTP/1.1\r\nHost: localhost\r\n\r\n")
        kept.settimeout(5)
        first = b""
        while b"}" not in first:  # the whole stylesheet (it ends with a rule)
            first += kept.recv(65536)
        kept.sendall(b"GET / HT")
        try:
            assert closed_within(partial, 8)
            assert closed_within(trickle, 8, b"GET /events HTTP/1.1\r\nX-Pad: " + b"a" * 100)
            assert closed_within(kept, 8)
        finally:
            for sock in (partial, trickle, kept):
                sock.close()
        streamed = get(port, "/events")  # served whole, though it takes longer than the header timeout
    assert first.startswith(b"HTTP/1.1 200")
    assert streamed.status == 200 and streamed.events == events(2)


def _served_again(port: int, why: str) -> None:
    """Polls until the server serves the stream whole again (it sees the closed connections go), or fails."""
    for _ in range(100):
        with contextlib.suppress(OSError, http.client.HTTPException):
            if get(port, "/events", limit=5).events == events():
                return
        time.sleep(0.05)
    raise AssertionError(why)


def test_connections_beyond_the_bound_are_closed_at_once() -> None:
    """Each connection holds a file descriptor: past max_connections (3 here) a new one is closed as it comes,
    and served again once others have gone."""
    with serving(viewer_app(events()), lambda a, **o: uvicorn_config(a, max_connections=3, **o)) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        extra = socket.create_connection(("127.0.0.1", port))
        try:
            assert closed_within(extra, 8)
            assert not closed_within(held[0], 0.3)
        finally:
            for sock in (*held, extra):
                sock.close()
        _served_again(port, "not served after the held connections closed")


_UPGRADE = (
    b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
)


def test_websocket_upgrade_requests_leave_no_connection_counted() -> None:
    """uvicorn hands an upgraded connection to its WebSocket protocol (when websockets or wsproto is installed), and
    the bounded protocol never heard it end: each upgrade request, even one the app refuses (403), stayed counted,
    and max_connections of them (1,000 for agentmsg serve) made the server close every connection after. The
    connection is released at the upgrade."""
    if importlib.util.find_spec("websockets") is None and importlib.util.find_spec("wsproto") is None:
        pytest.skip("neither websockets nor wsproto is installed: uvicorn upgrades no connection")
    with serving(viewer_app(events()), lambda a, **o: uvicorn_config(a, max_connections=3, **o)) as port:
        for _ in range(6):  # twice the bound, each answered and closed
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(_UPGRADE)
                sock.settimeout(5)
                assert sock.recv(65536).startswith(b"HTTP/1.1 403")
        _served_again(port, "not served after upgrade requests")


def test_a_client_that_reads_nothing_is_dropped_after_the_write_timeout() -> None:
    """uvicorn stops writing to a client whose send buffer is full and the stream waits: one that never read held
    its connection (and its buffers) forever. It is dropped after write_timeout (1 s here): with room for one
    connection, another client is served again once it is gone."""
    big = [{"type": "TEXT_BLOCK_DELTA", "id": f"d{i}", "delta": "x" * 1000} for i in range(20_000)]
    config = lambda a, **o: uvicorn_config(a, max_connections=1, write_timeout=1.0, **o)  # noqa: E731
    with serving(viewer_app(big), config) as port:
        idle = socket.socket()
        idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        idle.connect(("127.0.0.1", port))
        idle.sendall(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try:
            for _ in range(80):  # until the server lets the idle client go (it is never read)
                time.sleep(0.1)
                with contextlib.suppress(OSError, http.client.HTTPException):
                    if get(port, "/viewer.css", limit=2).status == 200:
                        break
            else:
                raise AssertionError("the client that reads nothing still holds its connection")
        finally:
            idle.close()
