"""agentmsg reduce / agentmsg events, as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT
from tests.test_cli import run

CASE5 = ROOT / "tests" / "conformance" / "reducer" / "java-case5-duplicate-type-jsonl.json"


def test_reduce_java_jsonl_with_duplicate_type_keys(tmp_path: Path) -> None:
    case = json.loads(CASE5.read_text())
    stream = tmp_path / "events.jsonl"
    stream.write_text(case["jsonl"])
    r = run("reduce", str(stream))
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    assert json.loads(line) == case["expected"][0]


def test_events_then_reduce_round_trip_jsonl_and_sse(tmp_path: Path) -> None:
    msg = {
        "id": "m1",
        "name": "F",
        "role": "ASSISTANT",
        "content": [{"type": "thinking", "thinking": "hmm", "metadata": None}, {"type": "text", "text": "hello there"}],
        "metadata": {},
        "timestamp": None,
        "usage": None,
    }
    src = tmp_path / "m.json"
    src.write_text(json.dumps([msg, msg]))
    jsonl = run("events", "--chunk-size", "3", str(src))
    assert jsonl.returncode == 0 and len(jsonl.stdout.splitlines()) > 10
    back = run("reduce", "-", stdin=jsonl.stdout)
    assert [json.loads(x) for x in back.stdout.splitlines()] == [msg, msg]  # one reply per message
    sse = run("events", "--sse", str(src))
    assert sse.stdout.startswith("id: ")
    back = run("reduce", "-", stdin=sse.stdout)
    assert json.loads(back.stdout.splitlines()[0]) == msg


def test_reduce_reports_problems_and_keeps_data(tmp_path: Path) -> None:
    stream = tmp_path / "bad.jsonl"
    stream.write_text(
        '{"type":"AGENT_START","id":"1","createdAt":"2025-01-01T00:00:00Z","replyId":"r"}\n{"type":"BOGUS","id":"2","createdAt":"2025-01-01T00:00:00Z"}\n'
        '{"type":"TEXT_BLOCK_DELTA","id":"3","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"text","delta":"kept"}\n'
    )
    r = run("reduce", str(stream))
    assert r.returncode == 1
    assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "kept"}]
    assert "/1/type" in r.stderr and "[enum]" in r.stderr
    strict = run("reduce", "--strict", str(stream))
    assert strict.returncode == 1 and "/1/type" in strict.stderr
    assert json.loads(strict.stdout)["content"] == []  # what came before the error is still printed
    assert run("reduce", str(tmp_path / "missing")).returncode == 2


def test_the_other_command_is_named_in_one_line(tmp_path: Path) -> None:
    msg = {"id": "m1", "role": "ASSISTANT", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
    pretty = tmp_path / "msg.json"
    pretty.write_text(json.dumps(msg, indent=2))
    r = run("reduce", str(pretty))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "agentmsg events" in r.stderr
    events = run("events", str(pretty))
    stream = tmp_path / "events.jsonl"
    stream.write_text(events.stdout)
    r = run("events", str(stream))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "agentmsg reduce" in r.stderr
    sse = tmp_path / "events.sse"
    sse.write_text(run("events", "--sse", str(pretty)).stdout)
    r = run("events", str(sse))
    assert r.returncode == 2 and "agentmsg reduce" in r.stderr


def test_events_of_a_user_message_is_an_error_not_an_assistant_reply(tmp_path: Path) -> None:
    user = {"id": "u1", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
    src = tmp_path / "user.json"
    src.write_text(json.dumps(user))
    r = run("events", str(src))
    assert r.returncode == 1 and r.stdout == "" and "[role]" in r.stderr and "ASSISTANT" in r.stderr
