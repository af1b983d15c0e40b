"""agentmsg on the web: serve agent events to browsers (``@agentmsg/client`` reduces them there).

* :class:`EventStream`: an ASGI endpoint serving any iterable or async iterable of AgentEvents as
  ``text/event-stream``, with event ids, keep-alive comments and resume from ``Last-Event-ID`` out of
  a bounded replay buffer. Plain ASGI: mount it in Starlette or FastAPI.
* :func:`viewer_app`: the event viewer (``agentmsg serve``), a Starlette app (``pip install
  'agentmsg[web]'``) serving a page that renders the reply live, and the events at ``/events``.
* :func:`uvicorn_config`: a ``uvicorn.Config`` bounded for long-lived event streams (a deadline on each
  request's headers, a cap on open connections, a client that reads nothing dropped), as ``agentmsg serve`` runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentmsg.web._asgi import EventStream
from agentmsg.web._server import uvicorn_config  # (uvicorn is imported when it is called)

if TYPE_CHECKING:
    from agentmsg.web._viewer import CSP, viewer_app

__all__ = ["CSP", "EventStream", "uvicorn_config", "viewer_app"]


def __getattr__(name: str) -> Any:
    # The viewer needs Starlette (the `web` extra); EventStream needs nothing.
    if name in ("viewer_app", "CSP"):
        from agentmsg.web import _viewer

        return getattr(_viewer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
