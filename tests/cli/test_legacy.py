"""The CLI reads the shapes of AgentScope's seed documents (legacy keys) as the readers do: in their current form, each
with a note (rule ``legacy-key``), never silently emptied; ``--strict`` refuses them (docs/wire-format.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests._support.cli import run
from tests._support.events import jsonl_lines

# message.md's "Tool Call Message" and "Tool Result Message", written as JSON
SEED_MESSAGES: list[dict[str, Any]] = [
    {"id": "u", "role": "USER", "content": [{"type": "text", "text": "Weather in Beijing?"}]},
    {
        "id": "a",
        "name": "Assistant",
        "role": "ASSISTANT",
        "content": [
            {"type": "tool_use", "id": "call_123", "name": "get_weather", "arguments": {"location": "Beijing"}}
        ],
    },
    {
        "id": "t",
        "name": "system",
        "role": "TOOL",
        "content": [
            {
                "type": "tool_result",
                "id": "call_123",
                "name": "get_weather",
                "result": {"type": "text", "text": "Sunny, 25°C"},
            }
        ],
    },
]
T = "2026-03-01T10:00:00Z"
SEED_EVENTS = [
    {"type": "AGENT_START", "id": "e1", "createdAt": T, "replyId": "r"},
    {"type": "MODEL_CALL_START", "id": "e2", "createdAt": T, "replyId": "m"},
    {"type": "TEXT_BLOCK_START", "id": "e3", "createdAt": T, "replyId": "m", "blockId": "text"},
    {"type": "TEXT_BLOCK_DELTA", "id": "e4", "createdAt": T, "replyId": "m", "blockId": "text", "delta": "hi"},
    {"type": "TEXT_BLOCK_END", "id": "e5", "createdAt": T, "replyId": "m", "blockId": "text"},
    {"type": "MODEL_CALL_END", "id": "e6", "createdAt": T, "replyId": "m", "inputTokens": 12, "outputTokens": 7},
    {"type": "AGENT_END", "id": "e7", "createdAt": T, "replyId": "r"},
]


def test_validate_notes_legacy_keys_and_strict_refuses_them(tmp_path: Path) -> None:
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(SEED_MESSAGES))
    r = run("validate", "--json", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert [(row["instance"], row["pointer"], row["rule"], row["kind"]) for row in rows] == [
        (1, "/content/0/arguments", "legacy-key", "note"),
        (2, "/content/0/result", "legacy-key", "note"),
    ]
    assert "read as 'input'" in rows[0]["message"] and "read as 'output'" in rows[1]["message"]
    r = run("validate", "--strict", str(path))
    assert r.returncode == 1
    assert f"{path}:/1/content/0/arguments: strict reading refuses it" in r.stdout
    assert r.stdout.count("[legacy-key]") == 2


def test_validate_says_what_readers_read_a_legacy_event_the_schema_rejects(tmp_path: Path) -> None:
    """A TOOL_RESULT_DATA_DELTA whose data is base64 text (the seed's) breaks the schema as it is, and validate's
    verdict is the schema's; its notes say what the readers (the reducer) read it as: a data block."""
    path = tmp_path / "events.jsonl"
    event = {
        "type": "TOOL_RESULT_DATA_DELTA",
        "id": "e1",
        "createdAt": T,
        "replyId": "r",
        "toolCallId": "call_1",
        "mediaType": "image/png",
        "data": "iVBORw0KGgo=",
    }
    path.write_text(json.dumps(event) + "\n")
    r = run("validate", "--kind", "event", str(path))
    assert r.returncode == 1, r.stdout
    lines = r.stdout.splitlines()
    # a lone delta is also a stream out of order (no start) and cut inside its reply: the reducer's rules
    across = [line for line in lines if line.endswith(("[order]", "[incomplete_stream]"))]
    assert len(across) == 2 and lines[-1].endswith("[incomplete_stream]")
    lines = [line for line in lines if line not in across]
    schema = [line for line in lines if "[legacy-key]" not in line]  # the schema's problems (anyOf, type)
    assert schema and all(line.startswith(f"{path}:/data: ") and ": note: " not in line for line in schema)
    assert lines[len(schema) :] == [
        f"{path}:/data: note: legacy key 'data' (AgentScope's seed documents: base64 text): read as 'data', a data"
        " block with a base64 source [legacy-key]",
        f"{path}:/mediaType: note: legacy key 'mediaType' (AgentScope's seed documents): read as its source's"
        " media_type [legacy-key]",
    ]
    strict = run("validate", "--kind", "event", "--strict", str(path))
    assert strict.returncode == 1 and strict.stdout.count("strict reading refuses it") == 2


def test_reduce_reads_the_seeds_flat_usage_with_notes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in SEED_EVENTS))
    r = run("reduce", str(path))
    assert r.returncode == 0, r.stderr  # a note, not a bad event
    (msg,) = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert msg["usage"] == {"inputTokens": 12, "outputTokens": 7}
    assert r.stderr.splitlines() == [
        f"{path}:/5/inputTokens: note: legacy key 'inputTokens' on the event (AgentScope's seed documents:"
        " MODEL_CALL_END carries the counts): read as usage.inputTokens [legacy-key]",
        f"{path}:/5/outputTokens: note: legacy key 'outputTokens' on the event (AgentScope's seed documents:"
        " MODEL_CALL_END carries the counts): read as usage.outputTokens [legacy-key]",
    ]
    strict = run("reduce", "--strict", str(path))
    assert strict.returncode == 1 and "/5/inputTokens" in strict.stderr and "[legacy-key]" in strict.stderr


def test_format_sends_the_seeds_arguments_and_result(tmp_path: Path) -> None:
    """message.md's tool call went out as "arguments":"{}" and its result empty: now the arguments and the result are
    sent, and each legacy key is said on stderr (kind note)."""
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(SEED_MESSAGES))
    r = run("format", "--provider", "openai", "--model", "gpt-4o", str(path))
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    call = body["messages"][1]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"location": "Beijing"}
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_123", "content": "Sunny, 25°C"}
    notes = [json.loads(line) for line in jsonl_lines(r.stderr) if '"legacy-key"' in line]
    assert [(n["pointer"], n["kind"]) for n in notes] == [
        ("/1/content/0/arguments", "note"),
        ("/2/content/0/result", "note"),
    ]


def test_events_reads_a_legacy_message_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "msg.json"
    path.write_text(json.dumps(SEED_MESSAGES[1]))
    r = run("events", str(path))
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert [e["input"] for e in events if e["type"] == "TOOL_CALL_END"] == [{"location": "Beijing"}]
    assert r.stderr.endswith("read as 'input' [legacy-key]\n") and ": note: " in r.stderr


def test_validate_and_reduce_read_the_seeds_arguments_in_hitl_events_and_agent_result(tmp_path: Path) -> None:
    """The tool calls a REQUIRE_USER_CONFIRM and a USER_CONFIRM_RESULT carry whole, and AGENT_RESULT's message, in
    message.md's shape (``arguments``): each said as the reducer reads it; the HITL record holds the current form."""
    call = {"type": "tool_use", "id": "c1", "name": "get_weather", "arguments": {"location": "Beijing"}}
    events = [
        SEED_EVENTS[0],
        {"type": "REQUIRE_USER_CONFIRM", "id": "h1", "createdAt": T, "replyId": "a", "toolCalls": [call]},
        {
            "type": "USER_CONFIRM_RESULT",
            "id": "h2",
            "createdAt": T,
            "replyId": "a",
            "confirmResults": [{"confirmed": True, "toolCall": call}],
        },
        {
            "type": "AGENT_RESULT",
            "id": "h3",
            "createdAt": T,
            "result": {"id": "m", "role": "ASSISTANT", "content": [call]},
        },
        SEED_EVENTS[-1],
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    said = [
        "/1/toolCalls/0/arguments",
        "/2/confirmResults/0/toolCall/arguments",
        "/3/result/content/0/arguments",
    ]
    r = run("validate", "--kind", "event", "--json", str(path))
    assert r.returncode == 0, r.stdout + r.stderr  # (an unknown key to the schema; the readers' note)
    rows = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert [f"/{row['line'] - 1}{row['pointer']}" for row in rows] == said  # (JSON Lines: rows name the line)
    assert all(row["kind"] == "note" and "read as 'input'" in row["message"] for row in rows)
    r = run("reduce", str(path))
    assert r.returncode == 0, r.stderr
    (msg,) = [json.loads(line) for line in jsonl_lines(r.stdout)]
    current = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"location": "Beijing"}}
    assert [e.get("toolCalls") or e["confirmResults"][0]["toolCall"] for e in msg["metadata"]["agentmsg_hitl"]] == [
        [current],
        current,
    ]
    assert [line.split(": note: ")[0] for line in r.stderr.splitlines()] == [f"{path}:{p}" for p in said]
    strict = run("reduce", "--strict", str(path))
    assert strict.returncode == 1 and f"{said[0]}" in strict.stderr and "[legacy-key]" in strict.stderr


PYTHON_1X = Path(__file__).resolve().parent.parent / "fixtures" / "agentscope_python" / "v1"


def test_validate_and_format_read_agentscope_python_messages(tmp_path: Path) -> None:
    """A conversation AgentScope Python 1.x wrote (Msg.to_dict(): lowercase roles, text content, a tool result as
    text in a "system" message): validate gives the schema's verdict on it as it is and says what readers read each
    key as; format sends it, the tool result as a tool message, each key said on stderr."""
    names = ("user_text", "assistant_tool_use", "system_tool_result_text")
    conversation = [json.loads((PYTHON_1X / f"{n}.json").read_text(encoding="utf-8")) for n in names]
    path = tmp_path / "as1.json"
    path.write_text(json.dumps(conversation))
    r = run("validate", "--json", str(path))
    assert r.returncode == 1, r.stdout  # the schema: roles are uppercase, content an array
    rows = [json.loads(line) for line in jsonl_lines(r.stdout)]
    notes = [(row["instance"], row["pointer"]) for row in rows if row["rule"] == "legacy-key"]
    assert {row["kind"] for row in rows if row["rule"] == "legacy-key"} == {"note"}
    assert notes == [
        (0, "/role"),
        (0, "/content"),
        (1, "/role"),
        (1, "/content/1/raw_input"),
        (2, "/role"),
        (2, "/content/0/output"),
    ]
    assert {(row["instance"], row["pointer"], row["rule"]) for row in rows if row["kind"] != "note"} >= {
        (0, "/role", "enum"),
        (0, "/content", "type"),
    }
    r = run("format", "--provider", "openai", "--model", "gpt-4o", str(path))
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    assert json.loads(body["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}
    said = [json.loads(line)["pointer"] for line in r.stderr.splitlines() if '"legacy-key"' in line]
    assert said == ["/0/role", "/0/content", "/1/role", "/1/content/1/raw_input", "/2/role", "/2/content/0/output"]


def test_an_agentscope_python_assistant_message_points_at_no_provider_but_an_anthropic_reply_does(
    tmp_path: Path,
) -> None:
    """Every assistant message AgentScope Python 1.x and 2.x wrote had ``validate`` (after its problems) and ``reduce``
    say "it reads as a provider's reply: read it with 'agentmsg parse --provider anthropic'" (a 2.x message with an
    ``error``: every provider), the lenient Anthropic reader taking it for a reply and dropping its name and times.
    The readers read it as AgentScope Python's: no provider is named, and ``reduce`` says it holds messages. A reply
    Anthropic sent still gets the hint."""
    fixtures = PYTHON_1X.parent
    for path in [*sorted(fixtures.glob("v1/assistant_*.json")), *sorted(fixtures.glob("v2/assistant_*.json"))]:
        r = run("validate", str(path))
        assert r.returncode == 1 and "[legacy-key]" in r.stdout, path
        assert "agentmsg parse" not in r.stdout + r.stderr, (path, r.stderr)
        r = run("reduce", str(path))
        assert r.returncode == 2 and "holds messages, not events" in r.stderr, (path, r.stderr)
    reply = fixtures.parent / "providers" / "anthropic" / "message_text.json"
    r = run("validate", str(reply))
    assert r.returncode == 1 and "read it with 'agentmsg parse --provider anthropic'" in r.stderr, r.stderr
    # format, count and trim read the reply as a message too, its keys said, and name the command that reads it;
    # not for AgentScope Python's messages (one of each version, three commands)
    message = [sorted(fixtures.glob(f"{v}/assistant_*.json"))[0] for v in ("v1", "v2")]
    for command, path in zip(
        (["format"], ["count"], ["trim", "--budget", "100000"]), [*message, message[0]], strict=True
    ):
        r = run(*command, "--provider", "anthropic", str(path))
        assert r.returncode == 0 and "agentmsg parse" not in r.stderr, (command, path, r.stderr)
    for command in (["format"], ["count"], ["trim", "--budget", "100000"]):
        r = run(*command, "--provider", "anthropic", str(reply))
        hint = json.loads(r.stderr.splitlines()[-1])
        assert r.returncode == 0 and hint["kind"] == "hint", (command, r.stderr)
        assert hint["message"] == "it reads as a provider's reply: read it with 'agentmsg parse --provider anthropic'"


def test_validate_of_a_lowercase_role_message_points_at_no_provider(tmp_path: Path) -> None:
    """An AgentScope Python message (role ``user``) that does not validate: ``validate`` said why, then told to read
    the file with ``agentmsg parse --provider anthropic --stream``, Anthropic's stream reader having taken the user
    turn for a reply. Now the problems are said and no provider is named."""
    path = tmp_path / "python.json"
    path.write_text(json.dumps({"name": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}))
    r = run("validate", str(path))
    assert r.returncode == 1
    assert "[enum]" in r.stdout and "[legacy-key]" in r.stdout
    assert "agentmsg parse" not in r.stdout + r.stderr
