"""uvicorn, bounded for ``agentmsg serve``: uvicorn has no deadline for a request's headers (its keep-alive
timeout starts only after a response, and any byte cancels it), so a client that sends a request line in part
and then nothing, or a byte now and then (slowloris), kept its connection, a file descriptor and a little memory,
forever; enough of them and the server could accept no more. :func:`uvicorn_config` gives uvicorn an HTTP
protocol that closes a connection whose request has not reached the app within ``header_timeout`` seconds of
the connection being opened or of its previous response, closes at once the connections beyond
``max_connections``, and drops a connection whose client has read nothing of what was sent for
``write_timeout`` seconds (uvicorn stops writing to it when its buffer is full, and the event stream waits: a
client that never reads held its connection, and up to about 128 KiB of memory, for as long as it liked; a
client that resumes, as ``@agentmsg/client`` does, loses nothing). A request that has reached the app (an
event stream that lasts hours) is not timed otherwise. A connection upgraded to a WebSocket (uvicorn hands it to
its WebSocket protocol, which has timeouts of its own) is no longer counted or timed here.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["bounded_protocol", "uvicorn_config"]

HEADER_TIMEOUT = 10.0  # seconds for a request's line and headers (nginx allows 60, Apache 20 to 40)
MAX_CONNECTIONS = 1000  # open at once; more are closed as they come
WRITE_TIMEOUT = 60.0  # seconds a client may leave a full send buffer unread


def bounded_protocol(
    header_timeout: float, max_connections: int, write_timeout: float = WRITE_TIMEOUT
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (the one ``http="auto"`` picks) with a deadline on each request's headers, a
    bound on the connections open at once and on how long a client may leave what it is sent unread (see the
    module docstring)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    state: dict[str, int] = {"open": 0}  # connections open now (of this server)

    class Bounded(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._deadline: asyncio.TimerHandle | None = None
            self._stall: asyncio.TimerHandle | None = None
            self._lost = False
            self._refused = state["open"] >= max_connections
            if self._refused:
                transport.close()
                return
            state["open"] += 1
            super().connection_made(transport)
            inner = getattr(self, "app", None)
            if inner is None:  # a protocol that calls its app otherwise: no deadline rather than a wrong one
                return

            async def app(scope: Any, receive: Any, send: Any) -> None:
                self._disarm()  # the request has reached the app: its response may take as long as it takes
                try:
                    await inner(scope, receive, send)
                finally:
                    self._arm()  # the next request on this connection has header_timeout too

            self.app = app
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._release()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, *args: Any) -> None:
            # The connection becomes a WebSocket's: uvicorn gives its transport to its WebSocket protocol, and this
            # one hears no more of it (neither its end nor its reads). Released now: kept counted, each upgrade
            # request (even one refused 403) held its place until 1,000 of them made the server accept no
            # connection again; kept armed, a working WebSocket was cut at the header deadline.
            self._release()
            super().handle_websocket_upgrade(*args)

        def _release(self) -> None:
            if self._lost:
                return
            self._lost = True
            self._disarm()
            self._unstall()
            state["open"] -= 1

        def _arm(self) -> None:
            self._disarm()
            if not self._lost:
                self._deadline = asyncio.get_running_loop().call_later(header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def pause_writing(self) -> None:  # the send buffer is full: the client has that long to read
            super().pause_writing()
            if not self._lost and self._stall is None:
                self._stall = asyncio.get_running_loop().call_later(write_timeout, self._stalled)

        def shutdown(self) -> None:
            # The server is shutting down (Ctrl-C, SIGTERM): a client that leaves what it is sent unread cannot take
            # its stream's end, and the app's send waiting for the socket to drain was cancelled at the graceful
            # timeout, its traceback printed ("Exception in ASGI application"). Dropped now, as at the write timeout.
            if self._stall is not None:
                self._unstall()
                self._stalled()
                return
            super().shutdown()

        def resume_writing(self) -> None:
            self._unstall()
            super().resume_writing()

        def _unstall(self) -> None:
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None

        def _stalled(self) -> None:
            self._stall = None
            transport = getattr(self, "transport", None)
            if transport is not None:
                transport.abort()  # (close() would wait for the buffer to be sent)

        def _expire(self) -> None:
            self._deadline = None
            transport = getattr(self, "transport", None)
            if transport is not None and not transport.is_closing():
                transport.close()

    return Bounded


def uvicorn_config(
    app: Any,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    write_timeout: float = WRITE_TIMEOUT,
    **options: Any,
) -> Any:
    """A ``uvicorn.Config`` for ``app`` (an :class:`~agentmsg.web.EventEndpoint` or an app that mounts one), bounded
    as ``agentmsg serve`` runs its viewer (:func:`bounded_protocol`, the module docstring says why): a
    connection whose request has not arrived within ``header_timeout`` seconds is closed, connections beyond
    ``max_connections`` are closed as they come, and a client that reads nothing of what it is sent for
    ``write_timeout`` seconds is dropped. ``options`` are uvicorn's (``host``, ``port``, ``log_level``, ...)::

        uvicorn.Server(uvicorn_config(app, port=8000)).run()
    """
    import uvicorn

    return uvicorn.Config(app, http=bounded_protocol(header_timeout, max_connections, write_timeout), **options)
