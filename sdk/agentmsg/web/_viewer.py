"""The event viewer behind ``agentmsg serve``: a Starlette app (the ``web`` extra) serving

* ``/events``: the events through :class:`~agentmsg.web.EventEndpoint` (ids, keep-alive, resume);
* ``/``: a page built on ``@agentmsg/client`` (``static/``: index.html and viewer.css, and viewer.js,
  which ``make client`` bundles from ``sdk/typescript/viewer``; all shipped in the package) that
  renders the reply live and, when the stream has ended, sets ``data-state="done"`` on ``<body>`` and
  shows the reduced messages (a JSON array, wire format) in ``<pre id="messages-json">``.

Every response carries a strict Content-Security-Policy (:data:`CSP`): the page loads only its own
script and style, connects only to its own origin, and shows images only from ``data:`` URLs.

Only requests addressed to ``localhost`` (or a ``*.localhost`` name), to an IP address, or to a name in
``hosts`` are answered (others get 403): a web page from elsewhere could otherwise read the events through
DNS rebinding (its own name resolved to 127.0.0.1, its requests then same-origin to it, ``Host`` its name).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import AsyncIterable, Iterable, Mapping
from importlib.resources import files
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentmsg import ui
from agentmsg.web._asgi import ASGIApp, EventEndpoint, Message, Receive, Scope, Send

__all__ = ["CSP", "ViewerApp", "viewer_app"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}


def _asset(name: str) -> bytes:
    path = files("agentmsg.web") / "static" / name
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RuntimeError(
            f"the viewer's built assets are missing (agentmsg/web/static/{name}): run `make client` in the repository"
        ) from None


#: A ``Host`` header as RFC 9110 writes it: a name or IPv4 address, or an IPv6 address in brackets, then perhaps a
#: port. Anything else (``[::1].evil.example``, ``localhost:80@evil.example``) names no host this viewer knows.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^\[\]:@/\\\s]+))(?::[0-9]*)?")


def _known_host(host: str, hosts: frozenset[str]) -> bool:
    """Whether ``host`` (a ``Host`` header) is localhost, a ``*.localhost`` name, an IP address or one of ``hosts``
    (lower case, no final dot)."""
    found = _HOST.fullmatch(host.strip())
    if found is None:
        return False
    name = (found["v6"] or found["name"]).lower().removesuffix(".")
    if name == "localhost" or name.endswith(".localhost") or name in hosts:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class ViewerApp:
    """The viewer (made by :func:`viewer_app`), an ASGI app: its page, and its events at ``/events`` through
    :attr:`events`, the :class:`~agentmsg.web.EventEndpoint` serving them. Every HTTP response carries the CSP and
    related headers, and a request whose ``Host`` is a name other than localhost or one of ``hosts`` is refused
    (DNS rebinding).

    :meth:`close` (or :meth:`aclose`) is the endpoint's: call it when the server begins to shut down, before it
    waits for its connections, so that every open page gets the end of its stream instead of a cut
    (``agentmsg serve`` does, on Ctrl-C)."""

    def __init__(self, app: ASGIApp, events: EventEndpoint, hosts: Iterable[str] = ()) -> None:
        self.app = app
        #: the endpoint serving the events at ``/events``
        self.events = events
        self.hosts = frozenset(h.lower().removesuffix(".") for h in hosts)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or :meth:`aclose`) was called."""
        return self.events.closed

    def close(self) -> None:
        """:meth:`EventEndpoint.close <agentmsg.web.EventEndpoint.close>`: end the event stream where it is, for a
        server shutting down: every open page gets the events read so far that it has not been sent, then the end
        (as if the source had ended there); a request for ``/events`` after it gets HTTP 503 (the page and its
        assets are still served). Returns at once; may be called from any thread; again, it does nothing."""
        self.events.close()

    async def aclose(self) -> None:
        """:meth:`close`, then wait until every stream open at that point has sent its end (or its client has left).
        Await it in the event loop that serves the app."""
        await self.events.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = next((bytes(v).decode("latin-1") for k, v in scope.get("headers") or () if k.lower() == b"host"), None)
        if host is not None and not _known_host(host, self.hosts):
            text = (
                f"this viewer answers at localhost or an IP address, not at {host!r} (a page elsewhere could read "
                "the events through DNS rebinding); to use a name, listen on it (agentmsg serve --host NAME)\n"
            ).encode()
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": headers + _SECURITY_HEADERS})
            await send({"type": "http.response.body", "body": text})
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def viewer_app(
    events: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
    *,
    drop_every: int | None = None,
    retry: int = 250,
    replay: int | None = None,
    hosts: Iterable[str] = (),
    protocol: str | None = None,
) -> ViewerApp:
    """The viewer as an ASGI app: the page at ``/``, ``events`` at ``/events``. ``drop_every`` closes
    the event connection after every N events (the page resumes with Last-Event-ID); ``retry`` is the
    reconnect delay (ms) sent to the page; ``replay`` the events kept for resuming and for pages opened
    later (default: all of them, so a reloaded page shows the whole stream; give a bound for endless
    sources). Requests are answered only when addressed to localhost, an IP address or a name in
    ``hosts`` (DNS rebinding). ``protocol``: the UI protocol ``/events`` speaks to a request that asks for none
    (default ``agentscope``; every protocol of :mod:`agentmsg.ui` is served to a request that asks for it; the page
    asks for ``agentscope``). Its :meth:`~ViewerApp.close` ends every open event stream with its end, for a server
    shutting down (call it before the server waits for its connections)."""
    assets = {name: (_asset(name), media_type) for name, media_type in _ASSETS.items()}
    protocols = ui.names() if protocol is None else (protocol, *(n for n in ui.names() if n != protocol))
    stream = EventEndpoint(events, drop_every=drop_every, retry=retry, replay=replay, protocols=protocols)

    def asset(name: str) -> Any:
        body, media_type = assets[name]

        async def endpoint(request: Request) -> Response:
            return Response(body, media_type=media_type, headers={"cache-control": "no-cache"})

        return endpoint

    routes = [
        Route("/", asset("index.html")),
        Route("/index.html", asset("index.html")),
        Route("/viewer.js", asset("viewer.js")),
        Route("/viewer.css", asset("viewer.css")),
        Route("/events", stream, methods=["GET", "HEAD"]),
    ]
    app = Starlette(routes=routes)
    app.state.events = stream
    return ViewerApp(app, stream, hosts)
