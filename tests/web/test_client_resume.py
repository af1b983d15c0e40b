"""@agentmsg/client's reconnect against agentmsg's own endpoint, over real HTTP: ``reduceSSE`` (Node, the
built client) reading ``agentmsg.web.EventEndpoint`` under uvicorn on loopback.

A resume the server's replay buffer can no longer serve gets HTTP 409: the client starts the stream
over from its beginning with a fresh Reducer and says so (``onRestart``), rather than failing or
building messages from a stream with a hole in it. With a bounded buffer that has moved on, "the
beginning" is the oldest event the server still holds; with the whole stream kept (or an id the server
never sent, as after a restart of the server) it is the whole stream again.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Reducer
from agentmsg.web import EventEndpoint
from tests._support.jsclient import NODE, built_client, same_json
from tests.web._http import get, serving, starlette_app

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js not found: the client cannot run")

AT = "2026-01-01T00:00:00Z"

# Reads the events at argv[2] with reduceSSE. Before its second request it prints "waiting" and waits for
# a line on stdin (the test moves the server on meanwhile); at the end it prints one JSON result.
SCRIPT = """
import readline from "node:readline";
import { reduceSSE } from %s;
const [url, lastEventId] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const requests = [];
const restarts = [];
let reducer = null;
const messages = await reduceSSE(url, {
  lastEventId: lastEventId || undefined,
  retry: { initialDelay: 10, maxDelay: 50 },
  fetch: async (input, init) => {
    requests.push(init.headers["last-event-id"] ?? null);
    if (requests.length === 2 && !lastEventId) {
      console.log("waiting");
      await lines.next();
    }
    return fetch(input, init);
  },
  onEvent: (_event, r) => (reducer = r),
  onRestart: ({ lastEventId, status, message, reducer: fresh, previous }) =>
    restarts.push({ lastEventId, status, message, fresh: fresh !== previous, previousCount: previous.count }),
});
console.log(JSON.stringify({ messages, problems: reducer.problems.map((p) => [p.pointer, p.rule]), requests, restarts }));
process.exit(0);
"""


def events(n: int) -> list[dict[str, Any]]:
    """One reply: AGENT_START, a text block of ``n`` deltas, AGENT_END (n + 4 events)."""
    out: list[dict[str, Any]] = [{"type": "AGENT_START", "id": "e0", "createdAt": AT, "replyId": "r", "name": "Friday"}]
    out.append({"type": "TEXT_BLOCK_START", "id": "e1", "createdAt": AT, "replyId": "r", "blockId": "text"})
    for i in range(n):
        delta = {"type": "TEXT_BLOCK_DELTA", "id": f"d{i}", "createdAt": AT, "replyId": "r", "blockId": "text"}
        out.append({**delta, "delta": f"w{i} "})
    out.append({"type": "TEXT_BLOCK_END", "id": "e2", "createdAt": AT, "replyId": "r", "blockId": "text"})
    out.append({"type": "AGENT_END", "id": "e3", "createdAt": AT, "replyId": "r"})
    return out


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("client") / "resume.mjs"
    path.write_text(SCRIPT % json.dumps(built_client().as_uri()), encoding="utf-8")
    yield path


def python_reduction(source: list[dict[str, Any]]) -> dict[str, Any]:
    r = Reducer()
    for e in source:
        r.feed(e)
    messages = orjson.loads(orjson.dumps([m.to_dict() for m in r.finish()]))
    return {"messages": messages, "problems": [[p.pointer, p.rule] for p in r.problems]}


def test_a_resume_past_the_replay_buffer_starts_over_from_the_oldest_event_kept(script: Path) -> None:
    source = events(8)  # 12 events
    stream = EventEndpoint(source, replay=5, drop_every=3)
    with serving(starlette_app(stream)) as port:
        url = f"http://127.0.0.1:{port}/events"
        node = subprocess.Popen(
            [str(NODE), str(script), url, ""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert node.stdout is not None and node.stdin is not None
            assert node.stdout.readline().strip() == "waiting"  # it read events 1-3; the connection was cut
            # Meanwhile another client reads the whole stream (resuming after every 3 events, as the server
            # cuts each connection): the buffer now holds events 8-12 only.
            read, last = 0, None
            while True:
                sse = get(port, "/events", {"Last-Event-ID": last} if last else {}).sse
                read += sum(1 for e in sse if e.event != "end")
                if sse[-1].event == "end":
                    break
                last = sse[-1].id
            assert stream.done and read == len(source)
            assert get(port, "/events", {"Last-Event-ID": "3"}).status == 409
            node.stdin.write("go\n")
            node.stdin.flush()
            result = json.loads(node.stdout.readline())
        finally:
            node.kill()
            node.wait()
    # Cut after 3 events, refused at 3 (409), restarted without an id at 8, cut again and resumed after 10.
    assert result["requests"] == [None, "3", None, "10"]
    [restart] = result["restarts"]
    assert restart["lastEventId"] == "3" and restart["status"] == 409 and "replay buffer" in restart["message"]
    assert restart["fresh"] and restart["previousCount"] == 3
    # The fresh reducer saw the stream from the oldest event kept: what Python makes of that tail (the
    # text block's start is gone: reported, rule order), never a message with a hole in the middle.
    tail = python_reduction(source[7:])
    assert same_json({"messages": result["messages"], "problems": result["problems"]}, tail)
    assert ["/0/blockId", "order"] in tail["problems"]
    assert result["messages"][0]["content"][0]["text"] == "w5 w6 w7 "


def test_an_id_the_server_never_sent_starts_over_from_the_beginning(script: Path) -> None:
    """E.g. a page that resumes after the server restarted: with every event kept, the client gets the
    whole stream again and its messages are Python's for the whole stream."""
    source = events(5)
    with serving(starlette_app(EventEndpoint(source, replay=None))) as port:
        done = subprocess.run(
            [str(NODE), str(script), f"http://127.0.0.1:{port}/events", "999"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    result = json.loads(done.stdout)
    assert result["requests"] == ["999", None]
    [restart] = result["restarts"]
    assert restart["lastEventId"] == "999" and restart["status"] == 409 and restart["previousCount"] == 0
    assert same_json({"messages": result["messages"], "problems": result["problems"]}, python_reduction(source))
    assert result["problems"] == []
