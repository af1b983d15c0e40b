"""agentmsg on the web: serve agent events to browsers (``@agentmsg/client`` reduces them there).

* :class:`EventEndpoint`: an ASGI endpoint serving any iterable or async iterable of AgentEvents as
  ``text/event-stream``, with event ids, keep-alive comments and resume from ``Last-Event-ID`` out of
  a bounded replay buffer. Plain ASGI: mount it in Starlette or FastAPI. (Formerly ``EventStream``, a name that
  remains, deprecated: it is also the name a client's stream had, now ``agentmsg.clients.ReplyStream``.)
* :func:`viewer_app`: the event viewer (``agentmsg serve``), a Starlette app (the ``web``
  extra: README.md, "Install it in your project") serving a page that renders the reply live, and the events at ``/events``;
  it returns a :class:`ViewerApp`, whose ``close()`` ends every open event stream with its end at shutdown.
* :func:`uvicorn_config`: a ``uvicorn.Config`` bounded for long-lived event streams (a deadline on each
  request's headers, a cap on open connections, a client that reads nothing dropped), as ``agentmsg serve`` runs.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from agentmsg.web._asgi import EventEndpoint
from agentmsg.web._server import uvicorn_config  # (uvicorn is imported when it is called)

if TYPE_CHECKING:
    from agentmsg.web._viewer import CSP, ViewerApp, viewer_app

    EventStream = EventEndpoint  # deprecated

__all__ = ["CSP", "EventEndpoint", "ViewerApp", "uvicorn_config", "viewer_app"]


def __getattr__(name: str) -> Any:
    # The viewer needs Starlette (the `web` extra); EventEndpoint needs nothing.
    if name in ("viewer_app", "ViewerApp", "CSP"):
        from agentmsg.web import _viewer

        return getattr(_viewer, name)
    if name == "EventStream":
        warnings.warn(
            "agentmsg.web.EventStream is deprecated: it is now agentmsg.web.EventEndpoint"
            " (agentmsg.clients.ReplyStream is a client's stream of a reply)",
            DeprecationWarning,
            stacklevel=2,
        )
        return EventEndpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
