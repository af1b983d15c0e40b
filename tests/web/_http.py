"""What the web tests share: a stream of events, uvicorn serving an app on loopback in a thread, a plain
HTTP GET, and the Starlette and FastAPI apps that mount an endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.web import EventEndpoint

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


class _Server(uvicorn.Server):
    """uvicorn's server, whose loop looks for ``should_exit`` every 5 ms, not every 100 ms: a test's server stops in
    about 0.1 s, not 0.2 (uvicorn's shutdown waits the other 0.1 s), and a run starts and stops over a hundred of
    them. What is served, and how (the app, the config: agentmsg serve's own), is uvicorn's as it is."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):  # (on_tick refreshes the Date header every 10 ticks)
            counter += 1
            await asyncio.sleep(0.005)


@contextlib.contextmanager
def serving(app: Any, config: Any = uvicorn.Config) -> Iterator[int]:
    """uvicorn serving ``app`` on 127.0.0.1 (a free port) in a thread; yields the port. ``config`` makes the
    uvicorn.Config (agentmsg serve's: agentmsg.web._server.uvicorn_config)."""
    sock = socket.create_server(("127.0.0.1", 0))
    server = _Server(config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
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
    # README's line. FastAPI types add_route for request functions only; at run time it routes any ASGI app
    # (docs/web.md gives the typed spelling, which would not test this one).
    app.add_route("/agent/events", stream)  # type: ignore[arg-type]
    return app


def fastapi_mounted(stream: EventEndpoint) -> FastAPI:
    app = FastAPI()
    app.mount("/runs/1", stream)  # a mounted app answers at the mount point's "/"
    return app


def starlette_mounted(stream: EventEndpoint) -> Starlette:
    return Starlette(routes=[Mount("/runs/1", app=stream)])
