"""The README's Python examples run as written (a new user copies them first). The names they take from
the surrounding text (an events file, a conversation and tools, a provider's reply) are given here, and
the client example talks to the local replay server instead of the provider."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import ToolResultBlock, ToolResultMessage, emit_events
from agentmsg.testing import ReplayServer, Reply

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
FIX = ROOT / "tests" / "fixtures" / "providers" / "anthropic"


def block(*words: str) -> str:
    """The one README block holding every word."""
    found = [b for b in BLOCKS if all(w in b for w in words)]
    assert len(found) == 1, words
    return found[0]


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    ns: dict[str, Any] = {}
    exec(block("UserMessage(", "reply.to_json()"), ns)  # the quickstart, its asserts included
    assert "role-content" in capsys.readouterr().out  # the problem it prints names the rule

    monkeypatch.chdir(tmp_path)
    (tmp_path / "events.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in emit_events(ns["reply"])))
    exec(block("reduce_stream(open("), ns)
    assert ns["messages"] == [ns["reply"]]

    ns["messages"] = [
        ns["user"],
        ns["reply"],
        ToolResultMessage([ToolResultBlock(id="call_1", name="get_weather", output="sunny")]),
    ]
    ns["tools"] = [
        {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ]
    exec(block("format_request("), ns)
    assert ns["request"].body["messages"][1]["content"][0]["type"] == "thinking"

    # A provider's reply, whole and streamed: the same reply recorded both ways is rebuilt from the stream.
    sse_body = (FIX / "stream_thinking_signature.sse").read_bytes()
    ns["sse_body"] = sse_body
    ns["body"] = _whole_reply(sse_body)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ReplayServer() as server:
        server.add("/v1/messages", Reply(body=sse_body, sse=True), Reply(body=ns["body"]))
        source = block("Client(", "parse_stream(")
        source = source.replace('model="claude-sonnet-4-5")', f'model="claude-sonnet-4-5", base_url="{server.url}")')
        exec(source, ns)
    assert ns["stream"].message.content == ns["msg"].content == ns["reply"].content


def _whole_reply(sse_body: bytes) -> bytes:
    """The non-streaming body of a recorded stream, as Anthropic's own accumulator rebuilds it."""
    streaming = pytest.importorskip("anthropic.lib.streaming._messages", reason="the anthropic package")
    from agentmsg import SSEDecoder

    decoder = SSEDecoder()
    snapshot = None
    bufs: dict[int, bytes] = {}
    for event in [*decoder.feed(sse_body), *decoder.feed(b"\n\n")]:
        payload = orjson.loads(event.data)
        if payload.get("type") not in ("ping", "error"):
            snapshot = streaming.accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None
    return orjson.dumps(snapshot.to_dict())
