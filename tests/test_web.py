"""agentmsg.web.EventEndpoint over real HTTP: mounted in Starlette and FastAPI, served by uvicorn on
loopback, read with a plain HTTP client and the SDK's SSE decoder. And the viewer app's routes."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from agentmsg import reduce_events
from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.web import CSP, EventEndpoint, viewer_app
from agentmsg.web._server import uvicorn_config
from tests._support.procs import stop

AT = "2026-01-01T00:00:00Z"


def events(n: int = 12) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "AGENT_START", "id": "e0", "createdAt": AT, "replyId": "r", "name": "Friday"}]
    out.append({"type": "TEXT_BLOCK_START", "id": "e1", "createdAt": AT, "replyId": "r", "blockId": "text"})
    for i in range(n):
        out.append(
            {
                "type": "TEXT_BLOCK_DELTA",
                "id": f"d{i}",
                "createdAt": AT,
                "replyId": "r",
                "blockId": "text",
                "delta": f"w{i} ",
            }
        )
    out.append({"type": "TEXT_BLOCK_END", "id": "e2", "createdAt": AT, "replyId": "r", "blockId": "text"})
    out.append({"type": "AGENT_END", "id": "e3", "createdAt": AT, "replyId": "r"})
    return out


@contextlib.contextmanager
def serving(app: Any, config: Any = uvicorn.Config) -> Iterator[int]:
    """uvicorn serving ``app`` on 127.0.0.1 (a free port) in a thread; yields the port. ``config`` makes the
    uvicorn.Config (agentmsg serve's: agentmsg.web._server.uvicorn_config)."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


class Response:
    def __init__(self, status: int, headers: dict[str, str], raw: bytes) -> None:
        self.status, self.headers, self.raw = status, headers, raw

    @property
    def sse(self) -> list[SSEEvent]:
        return SSEDecoder().feed(self.raw)

    @property
    def events(self) -> list[Any]:
        return [e.json() for e in self.sse if e.event not in ("end", "error")]


def get(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET", limit: float = 10
) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=limit)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, raw)
    finally:
        conn.close()


def starlette_app(stream: EventEndpoint) -> Starlette:
    return Starlette(routes=[Route("/events", stream)])


def fastapi_app(stream: EventEndpoint) -> FastAPI:
    app = FastAPI()
    app.add_route("/agent/events", stream)
    return app


def fastapi_mounted(stream: EventEndpoint) -> FastAPI:
    app = FastAPI()
    app.mount("/runs/1", stream)  # a mounted app answers at the mount point's "/"
    return app


def starlette_mounted(stream: EventEndpoint) -> Starlette:
    return Starlette(routes=[Mount("/runs/1", app=stream)])


@pytest.mark.parametrize(
    ("make_app", "path"),
    [
        (starlette_app, "/events"),
        (starlette_mounted, "/runs/1/"),
        (fastapi_app, "/agent/events"),
        (fastapi_mounted, "/runs/1/"),
    ],
)
def test_serves_every_event_with_ids_then_end(make_app: Any, path: str) -> None:
    source = events()
    with serving(make_app(EventEndpoint(source))) as port:
        r = get(port, path)
    assert r.status == 200
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert r.headers["cache-control"] == "no-store"
    sse = r.sse
    assert [e.id for e in sse[:-1]] == [str(i) for i in range(1, len(source) + 1)]
    assert [e.event for e in sse] == [e["type"] for e in source] + ["end"]
    assert r.events == source


def test_resume_from_last_event_id_and_drop_every_lose_and_repeat_nothing() -> None:
    source = events(40)
    stream = EventEndpoint(iter(source), drop_every=7)  # a one-shot iterator: read once, shared
    got: list[Any] = []
    sent_ids: list[str | None] = []
    with serving(starlette_app(stream)) as port:
        last: str | None = None
        for _ in range(20):
            sent_ids.append(last)
            r = get(port, "/events", {"Last-Event-ID": last} if last else None)
            assert r.status == 200
            sse = r.sse
            got += [e.json() for e in sse if e.event != "end"]
            if sse and sse[-1].event == "end":
                break
            assert len(sse) == 7
            last = sse[-1].id
    assert got == source
    assert sent_ids == [None, *[str(7 * k) for k in range(1, len(sent_ids))]]
    assert [m.to_dict() for m in reduce_events(got)] == [m.to_dict() for m in reduce_events(source)]


def test_replay_buffer_is_bounded_and_a_gap_is_refused() -> None:
    source = events(20)  # 24 events
    stream = EventEndpoint(source, replay=5)
    with serving(starlette_app(stream)) as port:
        assert len(get(port, "/events").events) == 24
        assert [e["id"] for e in get(port, "/events", {"Last-Event-ID": "21"}).events] == ["d19", "e2", "e3"]
        assert get(port, "/events", {"Last-Event-ID": "19"}).status == 200  # events 20..24 are buffered
        gone = get(port, "/events", {"Last-Event-ID": "18"})
        assert gone.status == 409 and b"replay buffer" in gone.raw
        assert get(port, "/events", {"Last-Event-ID": "25"}).status == 409
        assert get(port, "/events", {"Last-Event-ID": "abc"}).status == 400
        late = get(port, "/events")  # a new client after the buffer moved on starts at the oldest kept event
        assert [e.id for e in late.sse[:-1]] == ["20", "21", "22", "23", "24"]


def test_a_bounded_replay_buffer_drops_old_frames_in_runs_and_resumes_exactly() -> None:
    """The buffer drops the frames before the last ``replay`` in runs (a list read by index, not a deque): what
    it holds stays bounded, and which resumes it serves is exactly the last ``replay`` events."""
    source = [{"type": "TEXT_BLOCK_DELTA", "id": f"d{i}", "delta": str(i)} for i in range(1000)]
    stream = EventEndpoint(source, replay=100)
    with serving(starlette_app(stream)) as port:
        assert get(port, "/events").events == source
        assert len(stream._frames) <= 100 + 64
        assert get(port, "/events", {"Last-Event-ID": "900"}).events == source[900:]
        assert get(port, "/events", {"Last-Event-ID": "899"}).status == 409
        assert get(port, "/events", {"Last-Event-ID": "999"}).events == source[999:]
        assert get(port, "/events").events == source[900:]


def read_until(port: int, path: str, keepalives: int, seen: threading.Event) -> Response:
    """GET ``path``, read line by line: ``seen`` is set once ``keepalives`` keep-alive comments came; then on to
    the end."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        raw = b""
        while line := resp.readline():
            raw += line
            if line == b": keep-alive\n" and raw.count(b": keep-alive\n\n") + 1 >= keepalives:
                seen.set()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, raw)
    finally:
        conn.close()


def test_async_source_keepalive_backpressure_and_shared_between_clients() -> None:
    """An async source is read only when a client asks for an event (none before any client connects: an absent
    client pauses it), once for every client; while it thinks, the clients get keep-alive comments. (This test
    slept 0.4 s and counted on the clients having connected and read by then: under load they had not.)"""
    produced: list[int] = []
    release = threading.Event()

    async def agent() -> AsyncIterator[dict[str, Any]]:
        for i, e in enumerate(events(3)):
            while i == 2 and not release.is_set():
                await asyncio.sleep(0.01)  # the agent thinks for a while: clients get keep-alive comments
            produced.append(i)
            yield e

    stream = EventEndpoint(agent(), keepalive=0.05)
    app = starlette_app(stream)
    results: list[Response] = []
    seen = [threading.Event(), threading.Event()]
    with serving(app) as port:
        assert produced == [] and stream.count == 0  # no client: the source is not read
        threads = [threading.Thread(target=lambda s=s: results.append(read_until(port, "/events", 3, s))) for s in seen]
        for t in threads:
            t.start()
        assert all(s.wait(60) for s in seen)  # both connected and waiting, three keep-alives each
        assert produced == [0, 1]  # read as far as the clients asked; the agent thinks on the third event
        release.set()
        for t in threads:
            t.join(60)
    assert len(results) == 2
    for r in results:
        assert r.events == events(3)
        assert r.raw.count(b": keep-alive\n\n") >= 3
    assert produced == list(range(len(events(3))))  # the source was read once for both clients


def test_a_failing_source_sends_an_error_event() -> None:
    def broken() -> Iterator[dict[str, Any]]:
        yield events()[0]
        raise RuntimeError("agent crashed")

    with serving(starlette_app(EventEndpoint(broken()))) as port:
        r = get(port, "/events")
        again = get(port, "/events", {"Last-Event-ID": "1"})
    assert r.events == [events()[0]]
    assert r.sse[-1].event == "error" and orjson.loads(r.sse[-1].data) == {"message": "RuntimeError: agent crashed"}
    assert again.sse[-1].event == "error"


def test_an_event_with_half_a_character_is_sent_as_a_json_escape() -> None:
    """Events given as Python objects may hold a lone UTF-16 surrogate (a pair split across two deltas), which
    has no UTF-8 form: the stream sends it as a ``\\ud83d`` escape in the JSON text (the page's JSON.parse and
    every runtime's reader decide what to do with it) instead of ending the stream with an encoding error."""
    odd = [{"type": "TEXT_BLOCK_DELTA", "id": "e1", "delta": "\ud83d"}, {"type": "TEXT_BLOCK_DELTA", "id": "e2"}]
    with serving(starlette_app(EventEndpoint(odd))) as port:
        r = get(port, "/events")
    assert [e.data for e in r.sse[:-1]] == [
        '{"type":"TEXT_BLOCK_DELTA","id":"e1","delta":"\\ud83d"}',
        '{"type":"TEXT_BLOCK_DELTA","id":"e2"}',
    ]
    assert r.sse[-1].event == "end"


def test_head_method_and_event_types_that_clash() -> None:
    odd = [{"type": "end", "id": "x"}, {"type": "error", "id": "y"}, {"type": "A\nB", "id": "z"}, {"id": "w"}]
    with serving(starlette_app(EventEndpoint(odd))) as port:
        head = get(port, "/events", method="HEAD")
        put = get(port, "/events", method="PUT")
        r = get(port, "/events")
    assert head.status == 200 and head.raw == b"" and head.headers["content-type"].startswith("text/event-stream")
    assert put.status == 405
    assert [e.event for e in r.sse] == ["message"] * 4 + ["end"]  # never mistaken for the stream's own events
    assert r.events == odd


def test_a_client_that_disconnects_does_not_disturb_the_others() -> None:
    async def slow() -> AsyncIterator[dict[str, Any]]:
        for e in events(10):
            await asyncio.sleep(0.01)
            yield e

    with serving(starlette_app(EventEndpoint(slow()))) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        assert resp.read1(10)  # something arrived
        conn.close()  # gone mid-stream
        r = get(port, "/events")
    assert r.events == events(10)


def test_unbounded_replay_serves_every_client_from_the_start() -> None:
    stream = EventEndpoint(iter(events(300)), replay=None)  # read once; kept whole
    with serving(starlette_app(stream)) as port:
        first = get(port, "/events")
        later = get(port, "/events")
        resumed = get(port, "/events", {"Last-Event-ID": "1"})
    assert first.events == later.events == events(300)
    assert resumed.events == events(300)[1:]


def test_viewer_app_serves_the_page_assets_with_a_strict_csp() -> None:
    with serving(viewer_app(events(), drop_every=5)) as port:
        page = get(port, "/")
        script = get(port, "/viewer.js")
        style = get(port, "/viewer.css")
        first = get(port, "/events")
    assert page.status == script.status == style.status == 200
    assert b'<pre id="messages-json">' in page.raw and b'src="viewer.js"' in page.raw
    assert script.headers["content-type"].startswith("text/javascript") and b"new Function" not in script.raw
    assert style.headers["content-type"].startswith("text/css")
    for r in (page, script, style, first):
        assert r.headers["content-security-policy"] == CSP
        assert r.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CSP and "unsafe" not in CSP and "connect-src 'self'" in CSP
    assert first.raw.startswith(b"retry: 250\n\n") and len(first.events) == 5


def test_serve_command_usage_errors() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentmsg", "serve", *args], capture_output=True, text=True, timeout=60
        )

    missing = run("/nonexistent/events.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    zero = run("x.jsonl", "--drop-every", "0")
    assert zero.returncode == 2 and "at least 1" in zero.stderr


def test_the_viewer_ships_built_and_agentmsg_serve_needs_no_node(tmp_path: Path) -> None:
    """The viewer's script is built from sdk/typescript/viewer by `make client` and committed (`make
    client-check` fails when it drifts from its sources), so the package carries it: `agentmsg serve` runs
    with no Node on PATH. Under `make test` this runs against the installed wheel."""
    static = files("agentmsg.web") / "static"
    assets = {name: (static / name).read_bytes() for name in ("index.html", "viewer.css", "viewer.js")}
    assert b"messages-json" in assets["index.html"] and len(assets["viewer.js"]) > 10_000
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in events(3)) + b"\n")
    bare = str(Path(sys.executable).parent)
    assert shutil.which("node", path=bare) is None
    env = {**os.environ, "PATH": bare}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", "serve", str(path), "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, f"agentmsg serve printed {line!r}"
        port = int(found.group(1))
        for name, body in assets.items():
            got = get(port, "/" + name)
            assert got.status == 200 and got.raw == body
        assert get(port, "/").raw == assets["index.html"]
        assert get(port, "/events").events == events(3)
    finally:
        stop(proc)


def test_a_last_event_id_of_thousands_of_digits_is_refused_not_a_server_error() -> None:
    """int() of over 4,300 digits raises ValueError: such an id was an HTTP 500 (and a traceback), not a 409."""
    with serving(starlette_app(EventEndpoint(events(), replay=None))) as port:
        assert get(port, "/events").events == events()
        huge = get(port, "/events", {"Last-Event-ID": "9" * 5000})
        zeros = get(port, "/events", {"Last-Event-ID": "0" * 5000 + "1"})
        late = get(port, "/events", {"Last-Event-ID": "9" * 30})
    assert huge.status == 409 and b"(5000 digits)" in huge.raw
    assert late.status == 409 and b"after event " + b"9" * 30 in late.raw
    assert zeros.status == 200 and zeros.events == events()[1:]


def test_a_client_reading_a_long_unbounded_buffer_from_its_start_takes_linear_time() -> None:
    """The replay buffer was a deque, read by index: linear in the distance from its ends, so a page opened (or
    reloaded) after a long stream had been read took time quadratic in it (200,000 events: 1.7 s, 100,000:
    0.45 s). The same stream read by a second client, 8 times longer: well under 8 * 4 times the time."""

    async def read(stream: EventEndpoint) -> int:
        got = 0
        gone = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            nonlocal got
            got += len(message.get("body", b""))

        await stream({"type": "http", "method": "GET", "headers": []}, receive, send)
        return got

    def late_reader(n: int) -> float:
        stream = EventEndpoint(
            [{"type": "AGENT_START", "id": f"s{i}", "replyId": f"r{i}"} for i in range(n)], replay=None
        )
        first = asyncio.run(read(stream))  # reads the source into the buffer
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            assert asyncio.run(read(stream)) == first
            best = min(best, time.perf_counter() - started)
        return best

    small, large = late_reader(25_000), late_reader(200_000)
    assert large < 32 * small, (small, large)


def test_the_viewer_answers_only_at_localhost_or_an_ip_address_not_a_rebound_name() -> None:
    """DNS rebinding: a page at http://evil.example:PORT/ whose name then resolves to 127.0.0.1 reads the
    viewer same-origin, with ``Host: evil.example:PORT``; such a request is refused (403), the others served."""
    with serving(viewer_app(events(), hosts=["MyBox.lan"])) as port:
        refused = {
            (host, path): get(port, path, {"Host": host})
            for host in (f"evil.example:{port}", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example")
            for path in ("/", "/events", "/viewer.js", "/nothing")
        }
        served = [
            get(port, "/events", {"Host": host})
            for host in (
                f"127.0.0.1:{port}",
                f"localhost:{port}",
                "LOCALHOST.",
                "[::1]:80",
                "app.localhost",
                "mybox.lan:8",
            )
        ]
    for r in refused.values():
        assert r.status == 403 and b"DNS rebinding" in r.raw and r.headers["content-security-policy"] == CSP
    assert [r.status for r in served] == [200] * len(served)
    assert all(r.events == events() for r in served)


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


def test_serve_from_a_live_pipe_keeps_serving_while_the_producer_is_quiet() -> None:
    """stdin (a pipe) was read in the event loop, 128 kB at a time: while a live producer wrote nothing more the
    whole server hung (the page did not load) and even the events already written were not sent."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", "serve", "-", "--port", "0"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    lines = [orjson.dumps(e) + b"\n" for e in events(3)]
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"".join(lines[:3]))
        proc.stdin.flush()
        found = re.search(rb"http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())
        assert found
        port = int(found.group(1))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        decoder, got = SSEDecoder(), []
        while len(got) < 3:  # the events written so far arrive while the producer is still open
            got += decoder.feed(resp.read1(65536))
        assert get(port, "/", limit=5).status == 200  # and the page is served meanwhile
        proc.stdin.write(b"".join(lines[3:]))
        proc.stdin.close()
        got += decoder.feed(resp.read())
        conn.close()
        assert [e.json() for e in got if e.event != "end"] == events(3) and got[-1].event == "end"
    finally:
        stop(proc)


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
        for _ in range(100):  # the server sees them go
            with contextlib.suppress(OSError, http.client.HTTPException):
                if get(port, "/events", limit=5).events == events():
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("not served after the held connections closed")


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
