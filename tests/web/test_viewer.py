"""The viewer app (``agentmsg.web.viewer_app``) over real HTTP under uvicorn: its page and assets with a strict CSP,
shipped built in the package (``agentmsg serve`` needs no Node), answered only at loopback names and the hosts
given (DNS rebinding); its ``close()`` at shutdown."""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.web import CSP, EventEndpoint, ViewerApp, viewer_app
from tests._support.procs import stop
from tests.web._http import (
    events,
    get,
    serving,
)


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


def test_the_viewer_answers_only_at_localhost_or_an_ip_address_not_a_rebound_name() -> None:
    """DNS rebinding: a page at http://evil.example:PORT/ whose name then resolves to 127.0.0.1 reads the
    viewer same-origin, with ``Host: evil.example:PORT``; such a request is refused (403), the others served. A
    ``Host`` that is not a host and port (``[::1].evil.example``) is refused, not read as the loopback address it
    starts with."""
    with serving(viewer_app(events(), hosts=["MyBox.lan"])) as port:
        refused = {
            (host, path): get(port, path, {"Host": host})
            for host in (
                f"evil.example:{port}",
                "evil.example",
                "127.0.0.1.evil.example",
                "localhost.evil.example",
                # no host a URL can name, read leniently as [::1] and localhost: refused
                "[::1].evil.example",
                "localhost:80@evil.example",
            )
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


@pytest.mark.parametrize("how", ["close", "aclose"])
def test_viewer_app_close_ends_each_open_stream_with_its_end(how: str) -> None:
    """The viewer's EventEndpoint was built inside ``viewer_app`` and out of reach: a server shutting down could not
    close it, and uvicorn cut its open streams at the graceful timeout with no end. ``viewer_app`` returns a
    ``ViewerApp`` whose ``close()`` (here from the test's thread) and ``aclose()`` (awaited in the server's loop) are
    its endpoint's: the open stream gets the events read so far, then ``end``; a request for ``/events`` after it
    gets 503, the page is still served, both with the CSP. No sleep: each step waits on what was read."""
    released = threading.Event()

    async def agent() -> AsyncIterator[dict[str, Any]]:
        try:
            for e in events()[:2]:
                yield e
            await asyncio.Event().wait()  # thinking, until cancelled
        finally:
            released.set()

    app = viewer_app(agent())
    assert isinstance(app, ViewerApp) and isinstance(app.events, EventEndpoint) and not app.closed
    loops: list[asyncio.AbstractEventLoop] = []

    async def outer(scope: Any, receive: Any, send: Any) -> None:
        loops.append(asyncio.get_running_loop())
        await app(scope, receive, send)

    with serving(outer) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        decoder, got = SSEDecoder(), list[SSEEvent]()
        while len(got) < 2:  # the two events are sent; the stream waits for the agent's next one
            got += decoder.feed(resp.read1(65536))
        if how == "close":
            app.close()
        else:
            asyncio.run_coroutine_threadsafe(app.aclose(), loops[0]).result(60)  # (returns once the stream ended)
        got += decoder.feed(resp.read())  # (IncompleteRead if the stream were cut)
        conn.close()
        refused = get(port, "/events")
        page = get(port, "/")
    assert resp.headers["content-security-policy"] == CSP
    assert [e.json() for e in got[:-1]] == events()[:2] and (got[-1].event, got[-1].data) == ("end", "{}")
    assert released.wait(60) and app.closed and app.events.closed
    assert refused.status == 503 and refused.raw == b"the event stream is closed: the server is shutting down\n"
    assert refused.headers["content-security-policy"] == page.headers["content-security-policy"] == CSP
    assert page.status == 200
    app.close()  # again: nothing more
