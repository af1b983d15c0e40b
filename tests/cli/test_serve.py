"""``agentmsg serve`` before it listens: what it refuses (messages, whitespace only) and the events it reads after
the bytes it looked at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._support.cli import run

GOOD: dict[str, object] = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
    "timestamp": None,
    "usage": None,
}


def test_serve_refuses_a_file_of_messages_naming_the_command_meant(tmp_path: Path) -> None:
    """Served as events, messages would show an empty viewer: serve says what was meant, in one line, exit 2,
    before it listens (a file, a pretty-printed one, an array, stdin)."""
    pytest.importorskip("uvicorn")
    reply = {**GOOD, "role": "ASSISTANT"}
    for name, text in (
        ("msg.json", json.dumps(reply)),
        ("pretty.json", json.dumps(reply, indent=2)),
        ("conversation.json", json.dumps([GOOD, reply])),
        ("msgs.jsonl", json.dumps(GOOD) + "\n" + json.dumps(reply) + "\n"),
    ):
        path = tmp_path / name
        path.write_text(text)
        r = run("serve", str(path), "--port", "0")
        assert r.returncode == 2 and r.stdout == "", name
        assert r.stderr == (
            f"agentmsg: {path} holds messages, not events: to serve their events, "
            f"'agentmsg events {path} | agentmsg serve -'\n"
        )
    r = run("serve", "-", "--port", "0", stdin=json.dumps(reply))
    assert r.returncode == 2 and "'agentmsg events -' first" in r.stderr


def test_serve_reads_events_after_the_bytes_it_looked_at() -> None:
    """serve looks at the first bytes of its input (what a pipe holds already) and serves them too."""
    import io

    from agentmsg import AssistantMessage, emit_events
    from agentmsg.cli.serve import _head, file_events

    events = emit_events(AssistantMessage("hello " * 30000))  # more than one chunk of JSON lines
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    source = io.BufferedReader(io.BytesIO(data), buffer_size=4096)
    head = _head(source, "events.jsonl")
    assert 0 < len(head) < len(data)
    err = io.StringIO()
    assert list(file_events(source, "events.jsonl", err, head)) == events and err.getvalue() == ""


def test_serve_refuses_a_file_of_only_whitespace_as_an_empty_one(tmp_path: Path) -> None:
    """An empty input was refused ("holds no events") but one of only whitespace (blank lines, a BOM) was served
    as zero events: both hold no events (reduce says both the same way). A file, a pipe, longer than a chunk; and
    whitespace before the events is still served, from the start (the file is read again, the pipe's kept)."""
    import io
    import os
    import threading

    from agentmsg import AssistantMessage, emit_events
    from agentmsg.cli._io import UsageError
    from agentmsg.cli.serve import _head, file_events
    from agentmsg.events.stream import CHUNK

    def pipe(data: bytes) -> io.BufferedReader:
        r, w = os.pipe()

        def write() -> None:
            with open(w, "wb") as f:
                f.write(data)

        threading.Thread(target=write, daemon=True).start()
        return open(r, "rb")

    def opened(data: bytes) -> io.BufferedReader:
        path = tmp_path / "events.jsonl"
        path.write_bytes(data)
        return open(path, "rb")

    for blank in (b"\n  \n", b"\xef\xbb\xbf\r\n\t\n", b" \n" * CHUNK):
        for make in (opened, pipe):
            with make(blank) as source, pytest.raises(UsageError) as caught:
                _head(source, "events.jsonl")
            said = "the input is empty (no bytes, or only blanks): nothing to read [empty]"
            assert str(caught.value) == f"events.jsonl: {said}"  # (as every command says it)
    events = emit_events(AssistantMessage("hello"))
    data = b"\n" * (2 * CHUNK + 3) + b"".join(json.dumps(e).encode() + b"\n" for e in events) + b"{nope\n"
    for make in (opened, pipe):
        with make(data) as source:
            head = _head(source, "events.jsonl")
            err = io.StringIO()
            assert list(file_events(source, "events.jsonl", err, head)) == events
            assert err.getvalue().startswith(f"events.jsonl: line {2 * CHUNK + 4 + len(events)}: not valid JSON")


def test_serve_command_usage_errors() -> None:
    missing = run("serve", "/nonexistent/events.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    zero = run("serve", "x.jsonl", "--drop-every", "0")
    assert zero.returncode == 2 and "at least 1" in zero.stderr


def test_serve_protocol_is_one_of_the_registered_ones() -> None:
    bad = run("serve", "x.jsonl", "--protocol", "nope")
    assert bad.returncode == 2 and "invalid choice: 'nope'" in bad.stderr and "ag-ui" in bad.stderr


def test_serve_protocol_makes_it_the_default_of_events_and_the_page_asks_for_agentscope() -> None:
    pytest.importorskip("starlette")
    from agentmsg.web import viewer_app

    app = viewer_app([], protocol="ag-ui")
    endpoint = app.events  # (the endpoint at /events)
    assert endpoint.protocols[0] == "ag-ui" and "agentscope" in endpoint.protocols
    from agentmsg.web._viewer import _asset

    assert b"events?protocol=agentscope" in _asset("viewer.js")


def test_serve_reads_an_ag_ui_file_as_the_agentevents_it_stands_for() -> None:
    """A file of AG-UI events (its first event of a type only AG-UI has) is read through the AG-UI decoder, saying
    so and what it could not keep; a file of AgentEvents is read as it is."""
    import io

    from agentmsg import emit_events, reduce_events
    from agentmsg.cli.serve import file_events
    from tests.ui.test_agui import REFERENCE

    data = b"".join(json.dumps(e).encode() + b"\n" for e in REFERENCE)
    err = io.StringIO()
    events = list(file_events(io.BytesIO(data), "run.jsonl", err))
    (msg,) = reduce_events(events)
    assert (
        msg.id == "r1"
        and msg.text_content == "Let me check."
        and [b.type for b in msg.content][1:]
        == [
            "tool_use",
            "tool_result",
        ]
    )
    assert err.getvalue().splitlines() == [
        "run.jsonl: ag-ui events, read as AgentEvents (docs/ag-ui.md)",
        "run.jsonl: ag-ui event /4: TOOL_CALL_START parentMessageId: no AgentEvent keeps it (left out) [ui-not-kept]",
    ]
    from agentmsg import AssistantMessage

    ours = emit_events(AssistantMessage(["hi"]))
    data = b"".join(json.dumps(e).encode() + b"\n" for e in ours)
    err = io.StringIO()
    assert list(file_events(io.BytesIO(data), "events.jsonl", err)) == ours and err.getvalue() == ""


def test_serve_numbers_an_ag_ui_decoders_notes_as_the_input_does() -> None:
    """``reduce --protocol`` numbers a decoder's notes as the input does (2bdad59); ``serve`` feeds read_events to
    the same decoders and said every note after an unreadable line one event short (``/1`` for the third line).
    Both count through agentmsg.cli._numbering now."""
    import io

    from agentmsg.cli.serve import file_events

    lines = [
        '{"type":"RUN_STARTED","threadId":"t","runId":"r"}',
        '{"type": ',
        '{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant","extra":1}',
        "[1]",
    ]
    err = io.StringIO()
    list(file_events(io.BytesIO("\n".join(lines).encode() + b"\n"), "f", err))
    said = err.getvalue()
    assert "f: ag-ui event /2: TEXT_MESSAGE_START extra" in said, said
    assert "f: ag-ui event /3: an AG-UI event is a JSON object [type]" in said, said
    r = run("reduce", "-", "--protocol", "ag-ui", stdin="\n".join(lines) + "\n")
    assert "-:/2: note: TEXT_MESSAGE_START extra" in r.stderr and "-:/3: an AG-UI event" in r.stderr, r.stderr
