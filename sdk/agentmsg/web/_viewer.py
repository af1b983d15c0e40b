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

__all__ = ["CSP", "viewer_app"]

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


class _SecurityHeaders:
    """Adds the CSP and related headers to every HTTP response of the wrapped app, and refuses a request
    whose ``Host`` is a name other than localhost or one of ``hosts`` (DNS rebinding)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(h.lower().removesuffix(".") for h in hosts)

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
) -> ASGIApp:
    """The viewer as an ASGI app: the page at ``/``, ``events`` at ``/events``. ``drop_every`` closes
    the event connection after every N events (the page resumes with Last-Event-ID); ``retry`` is the
    reconnect delay (ms) sent to the page; ``replay`` the events kept for resuming and for pages opened
    later (default: all of them, so a reloaded page shows the whole stream; give a bound for endless
    sources). Requests are answered only when addressed to localhost, an IP address or a name in
    ``hosts`` (DNS rebinding). ``protocol``: the UI protocol ``/events`` speaks to a request that asks for none
    (default ``agentscope``; every protocol of :mod:`agentmsg.ui` is served to a request that asks for it; the page
    asks for ``agentscope``)."""
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
    return _SecurityHeaders(app, hosts)
