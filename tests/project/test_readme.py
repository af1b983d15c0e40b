"""The README's Python examples run as written (a new user copies them first), every one of them. The names
they take from the surrounding text (an events file, a conversation and tools, a provider's reply, an agent)
are given here, and the client example talks to the local replay server instead of the provider."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import ToolResultBlock, ToolResultMessage, emit_events
from agentmsg.testing import ReplayServer, Reply

ROOT = Path(__file__).resolve().parents[2]
BLOCKS: list[str] = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
FIX = ROOT / "tests" / "fixtures" / "providers" / "anthropic"


# The words that find each block the tests below run: every README block is one of them.
RUN = [
    ("UserMessage(", "reply.to_json()"),
    ("reduce_stream(open(",),
    ("format_request(",),
    ("Client(", "parse_stream("),
    ("read_records(open(",),
    ("EventEndpoint(agent_events()",),
]


def block(*words: str) -> str:
    """The one README block holding every word."""
    assert words in RUN, words
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
    # the diagnostics its comment shows are the ones it gives (it showed a thinking-dropped that Anthropic, sent
    # its own signed thinking, never says)
    shown = re.findall(r'Problem\(pointer="([^"]*)", rule="([^"]*)"', block("format_request("))
    assert shown == [(p.pointer, p.rule) for p in ns["request"].diagnostics]

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


def test_the_records_example_reads_past_a_broken_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Conversations: read_records on JSON Lines whose third line is broken: the others are messages, the
    broken one is said at its place (pointer /2, line 3), as the text before the example says."""
    from agentmsg import UserMessage

    monkeypatch.chdir(tmp_path)
    lines = [UserMessage(f"question {i}").to_json() for i in range(4)]
    lines[2] = '{"role": "USER", '
    (tmp_path / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ns: dict[str, Any] = {}
    exec(block("read_records(open("), ns)
    assert ns["msg"].text_content == "question 3"
    out = capsys.readouterr().out
    assert out.startswith("line 3 (/2): ") and out.endswith(" [json]\n") and out.count("\n") == 1


def test_the_starlette_example_serves_the_agents_events() -> None:
    """Web front ends: the Starlette app serves an agent's events at /events as text/event-stream; the agent is
    one that streams a reply's events. The example imports only what the ``web`` extra installs (it imported
    FastAPI, which no extra installs: ModuleNotFoundError for whoever installed ``agentmsg[web]``)."""
    import asyncio

    import httpx

    from agentmsg import AssistantMessage, reduce_stream

    source = block("EventEndpoint(agent_events()")
    imported = {m.split(".")[0] for m in re.findall(r"^(?:from|import) ([\w.]+)", source, re.M)}
    assert imported <= {"agentmsg", "starlette"}, imported  # (agentmsg and the web extra's own)

    reply = AssistantMessage("Sunny in Paris.")

    class Agent:
        async def stream(self, question: str) -> Any:
            for event in emit_events(reply):
                yield event

    ns: dict[str, Any] = {"my_agent": Agent()}
    exec(source, ns)

    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ns["app"]), base_url="http://a") as client:
            return await client.get("/events")

    response = asyncio.run(get())
    assert response.headers["content-type"].startswith("text/event-stream")
    assert [m.to_dict() for m in reduce_stream(response.text)] == [reply.to_dict()]


def test_every_readme_example_is_run() -> None:
    """Each Python block of the README is one the tests above run (the read_records and web examples were
    not run at all)."""
    run = {block(*words) for words in RUN}
    assert [b.splitlines()[0] for b in BLOCKS if b not in run] == []


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


def test_the_install_section_names_every_extra() -> None:
    """The install section ("Install it in your project") names each extra of pyproject.toml with what it is
    for: `count` (OpenAI's vocabularies for count_tokens, a user's extra) was missing, the sentence calling every
    extra but `web` a development tool."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    extras = re.findall(r"^([\w-]+) = \[", section, re.M)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = readme.split("## Install it in your project", 1)[1].split("Extras: ", 1)[1].split("\n\n", 1)[0]
    assert "count" in extras and sorted(e for e in extras if f"`{e}`" not in said) == []
