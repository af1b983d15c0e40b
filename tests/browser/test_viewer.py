"""The event viewer in a real browser: Debian's headless Chromium (never a downloaded browser) driven
by playwright-core (driver.mjs), the page served with a strict Content-Security-Policy.

* ``agentmsg serve`` (the real command) on the recorded AgentScope Java ReActAgent streams
  (streams/, JSONL, and one as SSE), with and without ``--drop-every``;
* every reducer vector (tests/conformance/reducer), served by ``viewer_app`` under uvicorn, with its
  connection dropped every 2 events, and one in three without dropped connections too.

Each page must end with ``data-state="done"`` and a ``messages-json`` equal to Python's
``reduce_events`` of the same events; every event must arrive exactly once (the page counts them;
resumes send ``Last-Event-ID`` N, 2N, ...); no script error, no CSP violation. Screenshots go to
tests/browser/out/ (``make viewer-screenshot`` refreshes docs/images/viewer.png from one).
Skipped, saying so, where Chromium or Node is missing (``.ci/run`` installs Debian's chromium).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import encode_sse, reduce_events, reduce_stream
from agentmsg.ui import agui, ai_sdk
from tests._support import budget
from tests._support.events import TEXT_CASES, events_of, read_jsonl
from tests._support.jsclient import same_json
from tests._support.procs import stop
from tests.browser._env import CHROMIUM, HERE, MISSING, NODE, install_driver
from tests.conftest import ROOT
from tests.web._http import serving

STREAMS = HERE / "streams"
OUT = HERE / "out"
if MISSING:
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)
# One Chromium (the module's fixture) for every test: all on one pytest-xdist worker with --dist loadgroup (as make
# test runs them); under another --dist mode, one per worker that runs any, started at its first test.
pytestmark = pytest.mark.xdist_group("browser")


class Visit:
    """Pages in one headless Chromium (driver.mjs says what a job and a result hold): ``visit(url, screenshot=None,
    **job) -> result`` loads one; ``visit.many(jobs) -> results`` sends them all at once and the driver loads them
    side by side (a few at a time): most of a page's time is waiting (its reconnects' delays), which then overlaps."""

    def __init__(self, driver: subprocess.Popen[str]) -> None:
        assert driver.stdin is not None and driver.stdout is not None
        self._in, self._out = driver.stdin, driver.stdout

    def _job(self, url: str, screenshot: Path | None = None, **more: Any) -> dict[str, Any]:
        return {"url": url, "timeout": 60000, **({"screenshot": str(screenshot)} if screenshot else {}), **more}

    def _read(self) -> dict[str, Any]:
        line = self._out.readline()
        assert line, "the browser driver exited"
        return json.loads(line)  # type: ignore[no-any-return]

    def __call__(self, url: str, screenshot: Path | None = None, **more: Any) -> dict[str, Any]:
        self._in.write(json.dumps(self._job(url, screenshot, **more)) + "\n")
        self._in.flush()
        return self._read()

    def many(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, job in enumerate(jobs):
            self._in.write(json.dumps({**self._job(**job), "id": i}) + "\n")
        self._in.flush()
        got = [self._read() for _ in jobs]
        return sorted(got, key=lambda r: r.pop("id"))


@contextlib.contextmanager
def _browser(*chromium_args: str) -> Iterator[Visit]:
    """Opens pages in one headless Chromium (``chromium_args`` added to its command line): a :class:`Visit`."""
    install_driver()
    OUT.mkdir(exist_ok=True)
    env = {**os.environ, "CHROMIUM": str(CHROMIUM)}
    driver = subprocess.Popen(
        [str(NODE), str(HERE / "driver.mjs"), *chromium_args],
        cwd=HERE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert driver.stdin is not None
    try:
        yield Visit(driver)
    finally:
        driver.stdin.close()
        try:
            driver.wait(30)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()


@pytest.fixture(scope="module")
def visit() -> Iterator[Visit]:
    """One headless Chromium for the module's pages."""
    with _browser() as go:
        yield go


def _expected(events: list[Any]) -> list[Any]:
    return orjson.loads(orjson.dumps([m.to_dict() for m in reduce_events(events)]))  # type: ignore[no-any-return]


def _check(result: dict[str, Any], events: list[Any], drop_every: int | None) -> None:
    assert result["state"] == "done", result
    assert result["pageErrors"] == [] and result["cspViolations"] == [] and result["console"] == [], result
    assert result["cspHeader"] and "script-src 'self'" in result["cspHeader"] and "unsafe" not in result["cspHeader"]
    n = len(events)
    assert result["events"] == n, "every event arrives exactly once"
    reconnects = n // drop_every if drop_every else 0
    assert result["reconnects"] == reconnects
    assert result["restarts"] == 0
    last_ids: list[str | None] = [None]  # the first request's, then each reconnect's
    if drop_every:
        last_ids += [str(drop_every * k) for k in range(1, reconnects + 1)]
    assert [r["lastEventId"] for r in result["eventRequests"]] == last_ids
    expected = _expected(events)
    assert same_json(result["messages"], expected), (result["messages"], expected)  # whole messages, ids included
    assert result["cards"] == len(expected)


@contextlib.contextmanager
def _serve_cli(path: Path, drop_every: int | None) -> Iterator[str]:
    """``agentmsg serve PATH --port 0 [--drop-every N]`` (the real command); yields the page URL."""
    args = [sys.executable, "-m", "agentmsg", "serve", str(path), "--port", "0"]
    if drop_every:
        args += ["--drop-every", str(drop_every)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, f"agentmsg serve printed {line!r}"
        yield found.group(0)
    finally:
        stop(proc)


def _events_of(path: Path) -> list[Any]:
    return read_jsonl(path.read_bytes())


JAVA = sorted(STREAMS.glob("java-react-*.jsonl"))


def test_the_recorded_java_streams_are_here() -> None:
    assert {p.stem for p in JAVA} == {
        "java-react-tool-call-then-answer",
        "java-react-parallel-tool-calls-interleaved",
        "java-react-max-iters",
    }


@pytest.mark.parametrize("drop_every", [None, 4], ids=["whole", "drop-every-4"])
@pytest.mark.parametrize("path", JAVA, ids=lambda p: p.stem)
def test_agentmsg_serve_on_recorded_java_streams(visit: Visit, path: Path, drop_every: int | None) -> None:
    events = _events_of(path)
    shot = OUT / f"viewer-{path.stem}{'-drop' if drop_every else ''}.png"
    with _serve_cli(path, drop_every) as url:
        result = visit(url, screenshot=shot)
    _check(result, events, drop_every)
    assert [m.to_dict() for m in reduce_stream(path.read_bytes())] == [m.to_dict() for m in reduce_events(events)]
    assert shot.stat().st_size > 10_000


def _agui_of(events: list[Any]) -> list[Any]:
    """The AG-UI events the endpoint sends for ``events`` (``?protocol=ag-ui``)."""
    encoder = agui.PROTOCOL.encoder()
    out = [x for e in events for x in encoder.feed(e)]
    return out + encoder.close()


@pytest.mark.parametrize("path", JAVA, ids=lambda p: p.stem)
def test_the_viewer_renders_an_ag_ui_stream(visit: Visit, path: Path) -> None:
    """``/?protocol=ag-ui``: the page reads the endpoint's AG-UI stream and decodes it with @agentmsg/client's
    AGUIDecoder (tests/jsclient/test_agui.py: Python's, rule for rule): the messages are the ones the AgentEvents
    reduce to, and the ones Python's AG-UI decoder gives."""
    events = _events_of(path)
    with _serve_cli(path, None) as url:
        result = visit(url + "?protocol=ag-ui", screenshot=OUT / f"viewer-ag-ui-{path.stem}.png")
    assert result["state"] == "done", result
    assert result["pageErrors"] == [] and result["cspViolations"] == [] and result["console"] == [], result
    sent = _agui_of(events)
    assert result["events"] == len(sent), "every AG-UI event arrives once"
    assert [r["lastEventId"] for r in result["eventRequests"]] == [None]
    decoder = agui.PROTOCOL.decoder()
    python = _expected([x for e in sent for x in decoder.feed(e)] + decoder.close())
    assert same_json(result["messages"], python), (result["messages"], python)
    assert same_json(result["messages"], _expected(events))
    assert result["cards"] == len(python)


@pytest.mark.parametrize("path", JAVA, ids=lambda p: p.stem)
def test_the_viewer_renders_an_ai_sdk_stream(visit: Visit, path: Path) -> None:
    """``/?protocol=ai-sdk``: the page reads the endpoint's UI message stream (what useChat reads) and decodes it
    with @agentmsg/client's AiSdkDecoder (tests/jsclient/test_aisdk.py: Python's, rule for rule): the messages are
    the ones the AgentEvents reduce to, and the ones Python's decoder gives."""
    events = _events_of(path)
    with _serve_cli(path, None) as url:
        result = visit(url + "?protocol=ai-sdk", screenshot=OUT / f"viewer-ai-sdk-{path.stem}.png")
    assert result["state"] == "done", result
    assert result["pageErrors"] == [] and result["cspViolations"] == [] and result["console"] == [], result
    sent = ai_sdk.encode(events)
    assert result["events"] == len(sent), "every chunk arrives once ([DONE] not counted)"
    assert [r["lastEventId"] for r in result["eventRequests"]] == [None]
    python = _expected(ai_sdk.decode(sent))
    assert same_json(result["messages"], python), (result["messages"], python)
    assert same_json(result["messages"], _expected(events))
    assert result["cards"] == len(python)


def test_agentmsg_serve_on_an_sse_file(visit: Visit, tmp_path: Path) -> None:
    events = _events_of(STREAMS / "java-react-tool-call-then-answer.jsonl")
    sse = tmp_path / "stream.sse"
    sse.write_text(encode_sse(events).replace("\n", "\r\n"), encoding="utf-8")
    with _serve_cli(sse, 3) as url:
        result = visit(url)
    _check(result, events, 3)


def test_agentmsg_serve_on_an_ag_ui_file(visit: Visit, tmp_path: Path) -> None:
    """The viewer renders AG-UI input (issue 30): ``agentmsg serve`` reads a file of AG-UI events through the AG-UI
    decoder, and the page shows the message Python reduces from the decoded events, resuming on the way."""
    from agentmsg.ui.agui import AGUIDecoder
    from tests.ui.test_agui import REFERENCE

    stream: list[dict[str, Any]] = [{**REFERENCE[0], "timestamp": 1767225600000}, *REFERENCE[1:]]
    path = tmp_path / "ag-ui.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in stream))
    decoder = AGUIDecoder()
    events = [e for ag in stream for e in decoder.feed(ag)] + decoder.close()
    with _serve_cli(path, 3) as url:
        result = visit(url)
    _check(result, events, 3)
    assert [b["type"] for b in result["messages"][0]["content"]] == ["text", "tool_use", "tool_result"]


def test_a_stream_of_more_messages_than_a_call_takes_arguments(tmp_path: Path) -> None:
    """The page put its cards in with one call, every card an argument (replaceChildren(...cards)): past about
    125,000 messages (V8's limit on a call's arguments, set by its stack size) that threw 'Maximum call stack size
    exceeded', and the page ended in error, showing none of them. In a Chromium whose JS stack is a tenth of the
    default (about 11,500 arguments), where the page checks that replaceChildren with 15,000 nodes throws, a stream
    of 15,000 one-event replies now ends with every message (it was 130,000 in a default Chromium: 75-180 s), the
    last 500 as cards."""
    n = 15_000
    path = _many_replies(tmp_path / "many.jsonl", n)
    with _browser("--js-flags=--stack-size=100") as visit, _serve_cli(path, None) as url:
        result = visit(url, argsProbe=n)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert result["argsProbe"] == "RangeError: Maximum call stack size exceeded"  # n is more than a call takes here
    assert result["events"] == n and result["cards"] == 500 and len(result["messages"]) == n
    assert result["messages"][-1]["id"] == f"r{n - 1}"


def _many_replies(path: Path, n: int) -> Path:
    """``n`` one-event replies (AGENT_START only: ids ``r0``...) in the JSONL file ``path``."""
    at = b"2026-01-01T00:00:00Z"
    path.write_bytes(
        b"".join(
            b'{"type":"AGENT_START","id":"s%d","createdAt":"%s","replyId":"r%d","name":"F"}\n' % (i, at, i)
            for i in range(n)
        )
    )
    return path


EARLIER_PROBE = """(() => {
  const ids = () => [...document.querySelectorAll("article.card > header > code")].map((c) => c.textContent);
  const note = () => document.querySelector("#cards > .earlier")?.textContent ?? null;
  const before = { ids: ids(), note: note(), top: document.getElementById("cards").firstElementChild.className };
  document.querySelector("#cards > .earlier button").click();
  return { before, after: { ids: ids(), note: note() } };
})()"""


def test_the_page_lays_out_the_last_500_cards_the_rest_when_asked(visit: Visit, tmp_path: Path) -> None:
    """The page laid out a card for every message: 20,000 one-event replies made 160,000 nodes, done 4-8 s after
    the page opened (1.8-2.8 s now, 4,020 nodes), and the JSON box held all 4.5 MB of their JSON. The page now lays
    out the cards of the last 500 messages, after a note saying how many earlier ones it leaves out, whose button lays
    out 500 more; the JSON box shows its first and last 100,000 characters, and the rest when asked."""
    n = 20_000
    with _serve_cli(_many_replies(tmp_path / "many.jsonl", n), None) as url:
        result = visit(url, probe=EARLIER_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert result["events"] == n and len(result["messages"]) == n and result["cards"] == 500
    assert result["messages"][-1]["id"] == f"r{n - 1}"  # every message, once the JSON box's button is clicked
    before, after = result["probe"]["before"], result["probe"]["after"]
    assert before["ids"] == [f"r{i}" for i in range(n - 500, n)] and before["top"] == "cut muted earlier"
    assert before["note"] == "19,500 earlier messages not shown show 500 more"
    assert after["ids"] == [f"r{i}" for i in range(n - 1_000, n)]
    assert after["note"] == "19,000 earlier messages not shown show 500 more"
    whole = len(json.dumps(result["messages"], indent=2, ensure_ascii=False))
    assert result["jsonNote"] == f"… {whole - 200_000:,} characters not shown ({whole:,} in all) show all"
    assert result["jsonShown"] == 200_000 + len(result["jsonNote"]) and result["jsonEnds"] == "the whole's"


REDUCER = ROOT / "tests" / "conformance" / "reducer"


def _vector_events(path: Path) -> list[Any]:
    return events_of(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def vectors_server() -> Iterator[str]:
    """Every reducer vector under /v/<name>/ (whole) and /v/<name>-drop/ (--drop-every 2), one uvicorn."""

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from agentmsg.web import viewer_app

    mounts = []
    for path in sorted(REDUCER.glob("*.json")):
        events = _vector_events(path)
        mounts.append(Mount(f"/v/{path.stem}", app=viewer_app(events)))
        mounts.append(Mount(f"/v/{path.stem}-drop", app=viewer_app(events, drop_every=2, retry=20)))
    with serving(Starlette(routes=mounts)) as port:
        yield f"http://127.0.0.1:{port}/v/"


#: The vectors whose events JSON text can carry (the page reads them over SSE): not those whose events, given
#: as objects, hold lone surrogates (the server sends those as \\u escapes, which every runtime's reader refuses).
TEXT_VECTORS = [p for p in sorted(REDUCER.glob("*.json")) if p.stem in TEXT_CASES]


def _vector_page(path: Path, drop: bool) -> str:
    return f"{path.stem}{'-drop' if drop else ''}/"


def _item_page(item: pytest.Function) -> str:
    """The page of a collected test_reducer_vectors_in_the_browser, from its parameters."""
    path, drop = item.callspec.params["path"], item.callspec.params["drop"]
    assert isinstance(path, Path) and isinstance(drop, bool), item.callspec.params
    return _vector_page(path, drop)


@pytest.fixture(scope="module")
def vector_pages(request: pytest.FixtureRequest, visit: Visit, vectors_server: str) -> dict[str, dict[str, Any]]:
    """The pages of the reducer vectors the run selected, loaded at once (a few side by side: a page with dropped
    connections spends most of its time in its reconnects' delays, 100 ms each at least), by page."""
    pages = sorted(
        {
            _item_page(item)
            for item in request.session.items
            if isinstance(item, pytest.Function) and item.originalname == "test_reducer_vectors_in_the_browser"
        }
    )
    return dict(zip(pages, visit.many([{"url": vectors_server + page} for page in pages]), strict=True))


#: The reducer vectors' pages. In ``make fuzz`` (``AGENTMSG_FUZZ_SCALE`` above 1) every vector twice: with its
#: connection cut every 2 events (the page resumes, and ends with Python's messages: the stronger check), and read
#: whole. In ``make test`` one vector in two cut, and one in six of the others whole (two vectors in three, a page
#: each): the page's reducer is ``@agentmsg/client``'s, bundled (``viewer.js``, checked built from its source), whose
#: reducer tests/jsclient holds to Python's on every vector in Node; what only the browser can get wrong (the page's
#: EventSource, its resumes, the layout) is the same code for every vector. 92 pages took about 22 s of the browser's
#: worker, a third of its share of make test; 63 about 23 s on a slower host; 42 now.
VECTOR_PAGES = [
    pytest.param(path, drop, id=f"{path.stem}-{'drop-every-2' if drop else 'whole'}")
    for i, path in enumerate(TEXT_VECTORS)
    for drop in ((True, False) if budget.SCALE > 1 else (True,) if i % 2 == 0 else (False,) if i % 6 == 3 else ())
]


@pytest.mark.differential  # (make fuzz: every vector, both ways)
@pytest.mark.parametrize(("path", "drop"), VECTOR_PAGES)
def test_reducer_vectors_in_the_browser(vector_pages: dict[str, dict[str, Any]], path: Path, drop: bool) -> None:
    _check(vector_pages[_vector_page(path, drop)], _vector_events(path), 2 if drop else None)


def test_the_viewer_starts_over_when_the_server_cannot_resume(visit: Visit) -> None:
    """The page's first connection is cut after 3 events; its resume reaches a restarted server (a new
    EventEndpoint: it never sent event 3) and gets HTTP 409. The page starts over with a fresh reducer, says
    so (data-restarts) and ends with Python's messages for the whole stream, nothing doubled."""

    from agentmsg.web import EventEndpoint, viewer_app

    events = _events_of(STREAMS / "java-react-tool-call-then-answer.jsonl")
    page = viewer_app(events)
    streams = [EventEndpoint(events, drop_every=3, retry=20), EventEndpoint(events, retry=20, replay=None)]
    asked: list[str | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/events":
            last = dict(scope["headers"]).get(b"last-event-id")
            asked.append(last.decode() if last else None)
            await streams[0 if len(asked) == 1 else 1](scope, receive, send)  # the server "restarted" after one
            return
        await page(scope, receive, send)

    with serving(app) as port:
        result = visit(f"http://127.0.0.1:{port}/")
    assert result["state"] == "done", result
    assert result["pageErrors"] == [] and result["cspViolations"] == [], result
    assert asked == [None, "3", None]
    assert result["restarts"] == 1 and result["reconnects"] == 1
    assert result["events"] == 3 + len(events)  # 3 before the restart, then the whole stream once
    assert same_json(result["messages"], _expected(events))
    assert result["cards"] == len(result["messages"])
    # The 409 shows in the console as a failed request; nothing else does.
    assert all("409" in line for line in result["console"]), result["console"]


def _reply(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """One reply (AGENT_START ... AGENT_END, replyId ``r``) around ``blocks``' events (each given without id, time or
    replyId)."""
    body = [{"type": "AGENT_START", "name": "A"}, *blocks, {"type": "AGENT_END"}]
    return [{"id": f"e{i}", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", **e} for i, e in enumerate(body)]


def _serve_events(tmp_path: Path, events: list[Any]) -> contextlib.AbstractContextManager[str]:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return _serve_cli(path, None)


#: What a hostile stream puts where the page shows text.
HTML = '<img src=x onerror="window.pwned=1;alert(1)"><script>alert(2)</script>"\'><b id=injected>'

HOSTILE_PROBE = """(() => ({
  pwned: window.pwned ?? null,
  injected: document.querySelectorAll("#cards script, #cards b, #cards img:not([src^='data:'])").length,
  links: [...document.querySelectorAll("#cards a")].map((a) => [a.textContent, a.getAttribute("href")]),
  images: [...document.querySelectorAll("#cards img")].map((i) => i.getAttribute("src")),
  text: document.getElementById("cards").textContent,
}))()"""


def test_hostile_text_and_media_types_stay_text(visit: Visit, tmp_path: Path) -> None:
    """HTML in every field the page shows is shown as text, and runs nothing. A base64 block's media type is attacker
    text too: it was put in the block's ``data:`` URL as it came, so ``text/html,<script>...</script>#`` made the link
    (labelled 3 bytes) download that script, not the block's bytes. A media type that is not type/subtype (RFC 9110
    tokens, parameters allowed) is now carried as application/octet-stream, and the label says so."""
    svg = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMykiLz4="  # <svg onload=alert(3)/>
    spoof = "text/html,<script>alert(6)</script>#"
    bad_image = 'image/png" onerror="alert(8)'
    call = {"toolCallId": "c" + HTML, "toolCallName": "tool" + HTML}
    events = _reply(
        {"type": "TEXT_BLOCK_START", "blockId": "t"},
        {"type": "TEXT_BLOCK_DELTA", "blockId": "t", "delta": HTML},
        {"type": "TEXT_BLOCK_END", "blockId": "t"},
        {"type": "TOOL_CALL_START", **call},
        {"type": "TOOL_CALL_DELTA", **call, "delta": json.dumps({HTML: HTML})},
        {"type": "TOOL_CALL_END", **call},
        {"type": "DATA_BLOCK_START", "blockId": "d1", "mediaType": spoof, "name": HTML},
        {"type": "DATA_BLOCK_DELTA", "blockId": "d1", "delta": "AAAA"},
        {"type": "DATA_BLOCK_END", "blockId": "d1"},
        {"type": "DATA_BLOCK_START", "blockId": "d2", "mediaType": "image/svg+xml; charset=utf-8"},
        {"type": "DATA_BLOCK_DELTA", "blockId": "d2", "delta": svg},
        {"type": "DATA_BLOCK_END", "blockId": "d2"},
        {
            "type": "DATA_BLOCK_START",
            "blockId": "d3",
            "block": {"type": "image", "source": {"type": "base64", "media_type": bad_image, "data": "AAAA"}},
        },
        {
            "type": "DATA_BLOCK_START",
            "blockId": "d4",
            "block": {"type": "image", "source": {"type": "url", "url": "javascript:alert(7)"}},
        },
        {"type": "HINT_BLOCK", "hint": HTML, "hintSource": HTML},
        {"type": "TOOL_RESULT_START", **call},
        {"type": "TOOL_RESULT_TEXT_DELTA", **call, "delta": HTML},
        {"type": "TOOL_RESULT_END", **call},
    )
    events[0]["name"] = HTML
    with _serve_events(tmp_path, events) as url:
        result = visit(url, probe=HOSTILE_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [] and result["dialogs"] == [], result
    assert same_json(result["messages"], _expected(events))
    probe = result["probe"]
    assert probe["pwned"] is None and probe["injected"] == 0
    assert probe["text"].count(HTML) >= 8  # name, id, text, tool name and id, arguments, hint, its source, output
    carried = "(downloaded as application/octet-stream: not a media type a URL can carry)"
    octets = "data:application/octet-stream;base64,AAAA"
    svg_url = f"data:image/svg+xml; charset=utf-8;base64,{svg}"
    assert probe["links"] == [
        [f"{spoof}, 3 bytes {carried}", octets],
        [f"image/svg+xml; charset=utf-8, {len(base64.b64decode(svg))} bytes", svg_url],
        [f"{bad_image}, 3 bytes {carried}", octets],
    ]
    assert probe["images"] == [svg_url, octets]  # (an <img> runs no SVG script)
    assert "javascript:alert(7)" in probe["text"]  # a URL source is text, not a link


BIG_PROBE = """(async () => {
  const card = document.querySelector("article.card");
  const texts = () => [...card.querySelectorAll(".block.text")].map((b) => b.textContent.length);
  const notes = () => [...card.querySelectorAll(".cut")].map((n) => n.textContent);
  const before = { texts: texts(), args: card.querySelector("pre.args").textContent.length, notes: notes(),
    blocks: card.querySelector(".blocks").children.length };
  card.querySelector(".block.text").parentElement.querySelector(".cut button").click();
  card.querySelector("pre.args").parentElement.querySelector(".cut button").click();
  const args = card.querySelector("pre.args").textContent;
  card.querySelector(".blocks > .cut button").click();
  return { before, after: { texts: texts(), args, argsLines: args.split("\\n").length, notes: notes(),
    blocks: card.querySelector(".blocks").children.length } };
})()"""


def test_a_message_too_large_to_lay_out_shows_its_start_and_the_rest_when_asked(visit: Visit, tmp_path: Path) -> None:
    """The page laid out every character of every block: a 50 MB text froze its tab for 24 s at a time (66 s of long
    tasks; 3 s now), 100,000 hints in one message for 6.5 s, and a tool call's 2.2 MB of arguments, a million numbers
    240 arrays deep, crashed it (indented, they are 530 MB of JSON). A block now shows its first 100,000 characters, a
    card 1,000,000 and 1,000 blocks; a note says what is left out, with a button that shows it (JSON that indentation
    would make over 16 times longer is shown unindented), and ``messages-json`` holds every message whole."""
    depth, width = 240, 20_000
    arguments: dict[str, Any] = {"a": [1] * width}
    for _ in range(depth - 1):
        arguments = {"a": [arguments["a"]]}
    hundred = ("lorem ipsum " * 10_000)[:100_000]
    blocks: list[dict[str, Any]] = []
    for i, text in enumerate([hundred * 3] + [hundred] * 12):
        blocks += [
            {"type": "TEXT_BLOCK_START", "blockId": f"t{i}"},
            *({"type": "TEXT_BLOCK_DELTA", "blockId": f"t{i}", "delta": hundred} for _ in range(len(text) // 100_000)),
            {"type": "TEXT_BLOCK_END", "blockId": f"t{i}"},
        ]
        if i == 0:
            call = {"toolCallId": "c", "toolCallName": "f"}
            delta = orjson.dumps(arguments).decode()
            blocks += [
                {"type": "TOOL_CALL_START", **call},
                {"type": "TOOL_CALL_DELTA", **call, "delta": delta},
                {"type": "TOOL_CALL_END", **call},
            ]
    blocks += [{"type": "HINT_BLOCK", "hint": f"h{i}"} for i in range(1_500)]
    events = _reply(*blocks)
    with _serve_events(tmp_path, events) as url:
        result = visit(url, probe=BIG_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [] and result["console"] == [], {
        k: result.get(k) for k in ("status", "error", "pageErrors", "console")
    }
    assert same_json(result["messages"], _expected(events))  # every message whole
    before, after = result["probe"]["before"], result["probe"]["after"]
    # 1,000,000 characters: 100,000 of the first text, 100,000 of the arguments, then 8 texts whole
    assert before["texts"] == [100_000] * 9 and before["args"] == 100_000
    assert before["notes"] == [
        "shown: the first 100,000 characters of 300,000 show all",
        f"shown: the first 100,000 characters (the whole is {len(delta):,} without indentation) show all",
        "1,504 more blocks (1,514 in all) show them",
    ]
    assert before["blocks"] == 11  # 9 texts, the tool call, the note
    # Asked for, the whole of each: the first text, the arguments (unindented), the other blocks (each still cut)
    assert after["texts"] == [300_000] + [100_000] * 12
    assert orjson.loads(after["args"]) == arguments and after["argsLines"] == 1
    assert after["blocks"] == 1_514


NESTED_PROBE = """(() => {
  const card = document.querySelector("article.card");
  const count = () => card.querySelectorAll(".block").length;
  const before = { blocks: count(), notes: [...card.querySelectorAll(".cut")].map((n) => n.textContent) };
  card.querySelector(".cut button")?.click();
  return { before, after: count() };
})()"""


def test_blocks_nested_in_tool_results_count_against_the_card(visit: Visit, tmp_path: Path) -> None:
    """A tool result's output is content blocks, tool results among them, and each list of blocks was cut at its own
    1,000: one event of 4 MB (a tool result holding 400 results of 400 empty hints each) laid out 160,402 blocks in
    one card (empty blocks take nothing from the card's 1,000,000 characters). The card now lays out 1,000 blocks in
    all, nested ones included; a note where it stopped shows the rest of that list when asked."""
    inner = [{"type": "tool_result", "id": f"i{i}", "output": [{"type": "hint", "hint": ""}] * 400} for i in range(400)]
    call = {"toolCallId": "c", "toolCallName": "f"}
    events = _reply(
        {"type": "TOOL_RESULT_START", **call},
        {"type": "TOOL_RESULT_DATA_DELTA", **call, "data": {"type": "tool_result", "id": "o", "output": inner}},
        {"type": "TOOL_RESULT_END", **call, "state": "success"},
    )
    with _serve_events(tmp_path, events) as url:
        result = visit(url, probe=NESTED_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert same_json(result["messages"], _expected(events))
    before = result["probe"]["before"]
    # the call's result, the result it holds, 2 results of 400 hints, the third and its first 195 hints: 1,000
    assert before["blocks"] == 1_000
    assert before["notes"] == ["205 more blocks (400 in all) show them", "397 more blocks (400 in all) show them"]
    assert result["probe"]["after"] == 1_205  # the third result's other hints, asked for


PAGE_PROBE = """(() => {
  const cards = [...document.querySelectorAll("article.card")];
  const texts = (card) => [...card.querySelectorAll(".block.text")].reduce((n, b) => n + b.textContent.length, 0);
  const before = { texts: cards.map(texts), notes: cards.map((c) => c.querySelector(".cut")?.textContent ?? null) };
  cards.at(-1).querySelector(".cut button")?.click();
  return { before, last: texts(cards.at(-1)) };
})()"""


def test_the_page_lays_out_a_bounded_whole_however_many_large_messages(visit: Visit, tmp_path: Path) -> None:
    """Each card lays out at most 1,000,000 characters and 1,000 blocks, but the page laid out every card: 12 replies
    of 1,000,000 characters each put 12,000,000 in the page (Chromium took 24 s for 50 MB), a hundred would freeze it.
    The page's cards now share 2,000,000 characters and 5,000 blocks, in order; a card past them shows its header and
    a note with the button that shows its blocks."""
    hundred = ("lorem ipsum " * 10_000)[:100_000]
    events: list[dict[str, Any]] = []
    for r in range(12):
        reply = _reply(
            *(
                e
                for i in range(10)
                for e in (
                    {"type": "TEXT_BLOCK_START", "blockId": f"t{i}"},
                    {"type": "TEXT_BLOCK_DELTA", "blockId": f"t{i}", "delta": hundred},
                    {"type": "TEXT_BLOCK_END", "blockId": f"t{i}"},
                )
            )
        )
        events += [{**e, "id": f"{r}-{e['id']}", "replyId": f"r{r}"} for e in reply]
    with _serve_events(tmp_path, events) as url:
        result = visit(url, probe=PAGE_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert result["cards"] == 12 and same_json(result["messages"], _expected(events))
    before = result["probe"]["before"]
    assert before["texts"] == [1_000_000, 1_000_000] + [0] * 10
    assert before["notes"] == [None, None] + ["10 more blocks (10 in all) show them"] * 10
    assert result["probe"]["last"] == 1_000_000  # asked for


LABELS_PROBE = """(() => {
  const cards = [...document.querySelectorAll("article.card")];
  const name = (card) => card.querySelector("header strong").textContent;
  return { text: document.getElementById("cards").textContent.length, first: name(cards[0]), last: name(cards.at(-1)),
    source: cards.at(-1).querySelector(".hint > .muted").textContent };
})()"""


def test_names_ids_and_labels_count_against_the_page(visit: Visit, tmp_path: Path) -> None:
    """A name, id or other label showed its first 1,000 characters, counted nowhere: 2,000 replies, each named with
    2,000 characters and holding a hint whose source is 2,000 more, put 4,100,000 characters in the page (a stream of
    as many as a page takes, 125,000, would put 250,000,000), while their text shared 2,000,000. A card's labels now
    share 100,000 characters and the page's 1,000,000; past them a label shows its first 40 characters (the page
    lays out the last 500 cards: 2,000,000 characters of labels here)."""
    n, long = 2_000, "n" * 2_000
    events: list[dict[str, Any]] = []
    for r in range(n):
        reply = _reply({"type": "HINT_BLOCK", "hint": "h", "hintSource": "s" * 2_000})
        reply[0]["name"] = long
        events += [{**e, "id": f"{r}-{e['id']}", "replyId": f"r{r}"} for e in reply]
    with _serve_events(tmp_path, events) as url:
        result = visit(url, probe=LABELS_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert result["cards"] == 500 and same_json(result["messages"], _expected(events))
    probe = result["probe"]
    assert probe["first"] == "n" * 1_000 + "… (1,000 more characters)"
    assert probe["last"] == "n" * 40 + "… (1,960 more characters)"
    assert probe["source"] == " (" + "s" * 38 + "… (1,963 more characters)"
    assert probe["text"] < 1_300_000  # 1,000,000 of labels, then 40 characters (and what is cut) a label


STREAMING_PROBE = """(() => {
  const cards = [...document.querySelectorAll("article.card")];
  return {
    ids: cards.map((c) => c.querySelector("header > code").textContent),
    live: cards.filter((c) => c.classList.contains("live")).map((c) => c.querySelector("header > code").textContent),
    texts: cards.map((c) => c.querySelector(".block.text")?.textContent.length ?? 0),
    cut: document.querySelectorAll("#cards article .cut").length,
    note: document.querySelector("#cards > .earlier")?.textContent ?? null,
    top: document.getElementById("cards").firstElementChild.className,
  };
})()"""
CLICK = "document.querySelector('#cards > .earlier button').click()"


def _streamed_in_parts(parts: list[int], total: int, size: int) -> tuple[list[list[Any]], list[Any]]:
    """``total`` replies (ids ``r0``...) of one text block of ``size`` characters, in parts: the stream's first part
    ends with ``parts[0]`` replies finished and the next one's text arrived (its card is live), and so on; the last
    part holds the rest. Returns the parts' events and all of them."""
    events: list[Any] = []
    for r in range(total):
        text = (f"{r:06d} " * (size // 7 + 1))[:size]
        reply = _reply(
            {"type": "TEXT_BLOCK_START", "blockId": "t"},
            {"type": "TEXT_BLOCK_DELTA", "blockId": "t", "delta": text},
            {"type": "TEXT_BLOCK_END", "blockId": "t"},
        )
        events += [{**e, "id": f"{r}-{e['id']}", "replyId": f"r{r}"} for e in reply]
    ends = [5 * n + 4 for n in parts] + [len(events)]  # 5 events a reply: its AGENT_END is the fifth
    return [events[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)], events


@contextlib.contextmanager
def _serve_in_parts(parts: list[list[Any]]) -> Iterator[str]:
    """The viewer on ``parts``' events: the first part at once, each next one when the page fetches ``next``."""
    import asyncio

    from agentmsg.web import viewer_app

    asked = [threading.Event() for _ in parts[1:]]

    async def stream() -> Any:
        for i, part in enumerate(parts):
            if i:
                while not asked[i - 1].is_set():
                    await asyncio.sleep(0.01)
            for e in part:
                yield e

    page = viewer_app(stream())

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/next":
            next(e for e in asked if not e.is_set()).set()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await page(scope, receive, send)

    with serving(app) as port:
        yield f"http://127.0.0.1:{port}/"


@contextlib.contextmanager
def _serve_dropping_after_parts(parts: list[list[Any]]) -> Iterator[str]:
    """The viewer on ``parts``' events, each part on a connection of its own that closes after it (the last one ends
    the stream): the page reads a part to its end, then reconnects (after a timer) for the next."""
    from agentmsg.web import EventEndpoint, viewer_app

    page = viewer_app([])
    served = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal served
        if scope["type"] == "http" and scope["path"] == "/events":
            part, served = served, served + 1
            # an endpoint holding the part only, asked from its start (the page asks to resume after the last part)
            endpoint = EventEndpoint(parts[part], replay=None, end_event="end" if part == len(parts) - 1 else None)
            headers = [(k, v) for k, v in scope["headers"] if k != b"last-event-id"]
            await endpoint({**scope, "headers": headers}, receive, send)
            return
        await page(scope, receive, send)

    with serving(app) as port:
        yield f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize("held", [False, True], ids=["as-it-comes", "each-part-in-one-render"])
def test_the_last_500_cards_while_the_stream_runs_past_them(visit: Visit, held: bool) -> None:
    """The page laid out the last 500 cards while streaming too, untested: a stream of 1,301 replies of 3,000
    characters each (3.9 million in all, twice the page's 2,000,000) is read in parts, the page looked at after each:
    499 replies and the 500th live, 501 and the 502nd live (the first card has left, a note counts it), 1,200 and the
    1,201st live (the 500 cards before it, each showing its text: the cards that left gave back what they took, and the
    199 replies of the part whose card would have left at once took nothing). "show 500 more" while streaming lays
    out r200-r699 before them, each with its text, and keeps the live card; 100 more replies then push r200-r299 out.
    Past the page's 500 last cards the page's budgets went to all 1,000 it kept: in the end (and once 667 of its own
    had come while streaming) the newest cards showed their headers only. The page's 500 last cards now have the
    page's budgets, the 500 before them a batch's.

    ``held``: the same, each part rendered at once (the page's clock stands still while it reads a part to the end of
    its connection, then runs for one render), as a slow browser batches them: the 200 replies after "show 500 more"
    were laid out from what the page's budgets had left while the 500 cards they pushed out of its last 500 still
    counted against them (500,000 characters: r1200-r1365 showed their text, r1366 2,000 of its 3,000 characters,
    the rest none), settle() moving those out only afterwards. Each card is now laid out once the cards it pushes
    out have left the page's budgets, as if the events had come one render at a time."""
    size = 3_000
    parts, events = _streamed_in_parts([499, 501, 1_200, 1_400], 1_401, size)
    go_on = {"after": 1_000} if held else {"next": "next"}  # the page's reconnect (held) or the server's next part
    seen = 0
    steps = []
    for i, part in enumerate(parts[:-1]):
        seen += len(part)
        # held: the page has read the whole part (its connection closed) before one render (40 ms on its clock)
        read = {"reconnects": i + 1, "run": 100} if held else {}
        steps.append({**read, "events": seen, "probe": STREAMING_PROBE, **({} if i == 2 else go_on)})
        if i == 2:  # "show 500 more" while the 1,201st reply streams
            steps.append({"probe": f"({CLICK}, {STREAMING_PROBE})", **go_on})
    if held:
        with _browser() as own, _serve_dropping_after_parts(parts) as url:  # (a clock is its whole browser's)
            result = own(url, steps=steps, probe=STREAMING_PROBE, clock="paused")
    else:
        with _serve_in_parts(parts) as url:
            result = visit(url, steps=steps, probe=STREAMING_PROBE)
    assert result["state"] == "done" and result["pageErrors"] == [], {k: result.get(k) for k in ("status", "error")}
    assert result["events"] == len(events) and same_json(result["messages"], _expected(events))
    assert result["reconnects"] == (len(parts) - 1 if held else 0)

    def ids(a: int, b: int) -> list[str]:
        return [f"r{i}" for i in range(a, b)]

    at499, at501, at1200, asked, at1400 = result["steps"]
    assert at499["ids"] == ids(0, 500) and at499["live"] == ["r499"] and at499["note"] is None
    assert at501["ids"] == ids(1, 502) and at501["live"] == ["r501"]
    assert at501["note"] == "1 earlier messages not shown show them" and at501["top"] == "cut muted earlier"
    assert at1200["ids"] == ids(700, 1_201) and at1200["live"] == ["r1200"]
    assert at1200["note"] == "700 earlier messages not shown show 500 more"
    assert asked["ids"] == ids(200, 1_201) and asked["live"] == ["r1200"]
    assert asked["note"] == "200 earlier messages not shown show them"
    assert at1400["ids"] == ids(400, 1_401) and at1400["live"] == ["r1400"]
    assert at1400["note"] == "400 earlier messages not shown show them"
    for step in (at499, at501, at1200, asked, at1400):
        assert step["texts"] == [size] * len(step["ids"]) and step["cut"] == 0  # every card shows its text
    end = result["probe"]
    assert (
        end["ids"] == ids(401, 1_401)
        and end["live"] == []
        and end["note"] == "401 earlier messages not shown show them"
    )
    assert end["texts"] == [size] * 1_000 and end["cut"] == 0
    assert result["jsonEnds"] == "the whole's"  # the JSON box's ends, built without the whole
