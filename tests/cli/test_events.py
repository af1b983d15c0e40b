"""``agentmsg reduce`` and ``agentmsg events``, as subprocesses and in process: round trips, problems said, limits, cut
streams and interrupted ones, input the reducer must survive."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._support.cli import run
from tests._support.events import ev, jsonl, jsonl_lines
from tests.conftest import ROOT

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
    msg: dict[str, Any] = {
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
    assert [json.loads(x) for x in jsonl_lines(back.stdout)] == [msg, msg]  # one reply per message
    sse = run("events", "--sse", str(src))
    assert sse.stdout.startswith("id: ")
    back = run("reduce", "-", stdin=sse.stdout)
    assert json.loads(back.stdout.splitlines()[0]) == msg


def test_reduce_says_each_error_of_a_message_on_one_line_of_its_own(tmp_path: Path) -> None:
    """A message's errors reach reduce's stderr one line each: an error of no message or type (a message's own
    metadata may hold one) was said as "None [None]", and an id or a message holding a line break wrote a line of
    the stream's making."""
    msg = {
        "id": "m\nforged: error",
        "role": "ASSISTANT",
        "content": [],
        "metadata": {"agentmsg_errors": [{}, {"message": "cut\nhere", "type": "provider_error"}]},
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(msg), "utf-8")
    events = run("events", str(path))
    r = run("reduce", "-", stdin=events.stdout)
    assert r.returncode == 1 and "None" not in r.stderr
    assert r.stderr.splitlines() == [
        '-: error: message "m\\nforged: error": {} [error]',
        '-: error: message "m\\nforged: error": "cut\\nhere" [provider_error]',
    ]


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


REPLY = {"id": "m1", "role": "ASSISTANT", "content": [{"type": "text", "text": "hi"}], "metadata": {}}


def _events(capsys: Any, *args: str) -> tuple[int, list[str], list[str]]:
    from agentmsg.cli import main

    code = main(["events", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_events_reads_with_the_api_limits_and_rule_names(tmp_path: Path, capsys: Any) -> None:
    """As `agentmsg validate` reads: JSON Lines line by line (an oversize record refused with max-bytes,
    the others still turned into events), the same rule names, --max-bytes / --max-depth."""
    jsonl = tmp_path / "msgs.jsonl"
    big = {**REPLY, "id": "m2", "content": [{"type": "text", "text": "x" * 5000}]}
    huge_int = json.dumps({**REPLY, "id": "m3"})[:-1] + ', "usage": {"inputTokens": 18446744073709551617}}'
    jsonl.write_text("\n".join([json.dumps(REPLY), json.dumps(big), huge_int, "{not json", json.dumps(REPLY)]) + "\n")
    code, out, err = _events(capsys, "--max-bytes", "1000", str(jsonl))
    assert code == 1
    assert sum(json.loads(line)["type"] == "AGENT_START" for line in out) == 2  # records 0 and 4
    assert [line.rsplit(" ", 1)[-1] for line in err] == ["[max-bytes]", "[integer-range]", "[json]"]
    assert [line.split(": ", 1)[0] for line in err] == [f"{jsonl}:/1", f"{jsonl}:/2/usage/inputTokens", f"{jsonl}:/3"]
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps({**REPLY, "metadata": {"a": [[[1]]]}}))
    code, out, err = _events(capsys, "--max-depth", "3", str(deep))
    assert code == 1 and out == [] and err[0].endswith("[max-depth]")
    code, out, _ = _events(capsys, str(deep))
    assert code == 0 and out


def test_events_of_a_reply_whose_values_hold_an_uppercase_type(tmp_path: Path, capsys: Any) -> None:
    """A message is told from agent events by its own keys, not by a "type" in uppercase anywhere in its start: a
    reply calling a tool with {"type": "PDF"} (or a Gemini schema's "STRING") is a message, turned into events.
    It was refused as a file of agent events (exit 2, "use agentmsg reduce"); so was the conversation holding it
    said to be agent events by format, count and trim when it was invalid."""
    call = {"type": "tool_use", "id": "c1", "name": "convert", "input": {"type": "PDF", "path": "a.doc"}}
    reply = {**REPLY, "content": [call]}
    src = tmp_path / "reply.json"
    src.write_text(json.dumps(reply))
    code, out, err = _events(capsys, str(src))
    assert (code, err) == (0, [])
    assert [json.loads(line)["type"] for line in out][:3] == ["AGENT_START", "MODEL_CALL_START", "TOOL_CALL_START"]
    bad = tmp_path / "conversation.json"
    bad.write_text(json.dumps([{**REPLY, "role": "ASSISTANT", "content": [call, {"type": "image"}]}]))
    from agentmsg.cli import main

    assert main(["count", "--provider", "openai", str(bad)]) == 1
    said = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert said and all(p["rule"] != "hint" for p in said), said


def test_events_of_a_json_null_is_an_error_naming_the_record(tmp_path: Path, capsys: Any) -> None:
    """A JSON null (the whole file, an array item, a JSON Lines line) was skipped with no word, exit 0: now the
    record is named as `agentmsg validate` names it (exit 1), the other records still turned into events."""
    files = [
        ("null.json", "null", ""),
        ("nulls.json", "[null]", "/0"),
        ("mix.jsonl", f"{json.dumps(REPLY)}\nnull\n", "/1"),
    ]
    for name, text, pointer in files:
        path = tmp_path / name
        path.write_text(text)
        code, out, err = _events(capsys, str(path))
        assert code == 1, name
        assert err == [f'{path}{":" + pointer if pointer else ""}: null is not of type "object" [type]']
        assert (out != []) is (name == "mix.jsonl")
        assert run("validate", str(path)).stdout.splitlines() == err


def test_events_reads_a_document_across_the_peeked_head(tmp_path: Path, capsys: Any) -> None:
    """The first 128 KiB are read ahead to tell messages from events; a document or a line longer than
    that is still read whole (and once)."""
    long_text = "y" * 300_000
    doc = tmp_path / "doc.json"
    doc.write_text(
        json.dumps([REPLY, {**REPLY, "id": "m2", "content": [{"type": "text", "text": long_text}]}], indent=1)
    )
    code, out, err = _events(capsys, str(doc))
    assert (code, err) == (0, [])
    deltas = "".join(json.loads(line).get("delta", "") for line in out)
    assert deltas == "hi" + long_text
    jsonl = tmp_path / "long.jsonl"
    jsonl.write_text(json.dumps({**REPLY, "content": [{"type": "text", "text": long_text}]}) + "\n" + json.dumps(REPLY))
    code, out, err = _events(capsys, str(jsonl))
    assert (code, err) == (0, []) and "".join(json.loads(x).get("delta", "") for x in out) == long_text + "hi"


def test_events_stops_at_once_on_binary_input() -> None:
    zero = run("events", "/dev/zero")
    assert zero.returncode == 1 and zero.stderr == "/dev/zero: not valid JSON: it starts with b'\\x00' [json]\n"


def test_validate_lists_one_kind_per_schema(capsys: Any) -> None:
    import agentmsg
    from agentmsg.cli import main

    assert main(["validate", "--help"]) == 0
    usage = capsys.readouterr().out
    assert "event," in usage and "agent-event" not in usage
    assert len(set(agentmsg.KINDS.values())) == len(agentmsg.KINDS)
    agentmsg.validate({"type": "CUSTOM", "id": "a", "createdAt": "2025-01-01T00:00:00Z"}, "agent-event")  # still read


def _reduce(capsys: Any, *args: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    from agentmsg.cli import main

    code = main(["reduce", *args])
    captured = capsys.readouterr()
    return code, [json.loads(x) for x in jsonl_lines(captured.out)], captured.err.splitlines()


def test_reduce_of_a_cut_stream_exits_1_as_parse_does(tmp_path: Path, capsys: Any) -> None:
    """A stream that ends inside a reply (no AGENT_END, a block or model call still open) is said on stderr
    and exits 1, as `agentmsg parse` does for a cut provider stream; the message is printed all the same,
    INTERRUPTED with what arrived. A whole stream, and one of model-call events only (all closed), exit 0."""
    from agentmsg import AssistantMessage, emit_events

    events = emit_events(AssistantMessage("hello there", name="F"), chunk_size=4)
    types = [e["type"] for e in events]
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(json.dumps(e) + "\n" for e in events))
    code, msgs, err = _reduce(capsys, str(whole))
    assert (code, err) == (0, []) and msgs[0]["content"] == [{"type": "text", "text": "hello there"}]
    for end in ("AGENT_END", "TEXT_BLOCK_END", "MODEL_CALL_END"):  # cut before each end event
        cut = tmp_path / f"cut-{end}.jsonl"
        cut.write_text("".join(json.dumps(e) + "\n" for e in events[: types.index(end)]))
        code, msgs, err = _reduce(capsys, str(cut))
        assert code == 1, end
        assert msgs[0]["content"] == [{"type": "text", "text": "hello there"}]
        assert msgs[0]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
        (line,) = err
        assert line.startswith(f"{cut}: error: message ") and line.endswith("[incomplete_stream]")
    calls = tmp_path / "calls.jsonl"
    start, stop = types.index("MODEL_CALL_START"), types.index("MODEL_CALL_END")
    calls.write_text("".join(json.dumps(e) + "\n" for e in events[start : stop + 1]))
    code, msgs, err = _reduce(capsys, str(calls))
    assert (code, err) == (0, []) and "agentscope_generate_reason" not in msgs[0]["metadata"]


def test_reduce_says_a_cut_reply_that_agentscope_had_interrupted(tmp_path: Path, capsys: Any) -> None:
    """A reply AgentScope stopped (REQUEST_STOP generateReason INTERRUPTED: a user's stop) whose AGENT_END never came
    is cut all the same: said and exit 1 (it was taken for whole, exit 0, when the CLI told a cut by the reason a
    snapshot had). With its AGENT_END it is whole: exit 0, nothing said."""
    from agentmsg import AssistantMessage, emit_events
    from agentmsg.events.types import RequestStopEventDict

    events = emit_events(AssistantMessage("hello", name="F"))
    stop: RequestStopEventDict = {
        "type": "REQUEST_STOP",
        "id": "stop",
        "createdAt": events[0]["createdAt"],
        "generateReason": "INTERRUPTED",
    }
    events.insert(len(events) - 1, stop)  # before AGENT_END
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(json.dumps(e) + "\n" for e in events[:-1]))
    code, msgs, err = _reduce(capsys, str(cut))
    assert code == 1 and msgs[0]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
    assert err == [
        f"{cut}: error: message {msgs[0]['id']}: the stream ended inside the reply (no AGENT_END, or a block or model "
        "call still open): kept with what arrived, marked INTERRUPTED [incomplete_stream]"
    ]
    from agentmsg.cli import main

    assert main(["validate", str(cut)]) == 1  # validate says it as well
    assert (
        capsys.readouterr()
        .out.rstrip()
        .endswith(
            f"the stream ended inside reply {msgs[0]['id']} (no AGENT_END, or a block or model call still open) "
            "[incomplete_stream]"
        )
    )
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(json.dumps(e) + "\n" for e in events))
    code, msgs, err = _reduce(capsys, str(whole))
    assert (code, err) == (0, []) and msgs[0]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_reduce_says_the_errors_a_stream_reported_and_exits_1(tmp_path: Path, capsys: Any) -> None:
    """`agentmsg parse --events | agentmsg reduce -`: the parser closes a cut provider stream with an
    agentmsg.error event; reduce says it (as parse did) and exits 1 too."""
    from agentmsg.providers import openai

    body = (ROOT / "tests/fixtures/providers/openai/stream_text_include_usage.sse").read_bytes()
    cut = body[: body.index(b"\n\n", len(body) // 2) + 2]
    events = list(openai.parse_stream(cut))
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    code, msgs, err = _reduce(capsys, str(path))
    assert code == 1 and msgs[0]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
    (line,) = err
    assert "the stream ended before the provider finished the reply [incomplete_stream]" in line
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(json.dumps(e) + "\n" for e in openai.parse_stream(body)))
    assert _reduce(capsys, str(whole))[0] == 0


def test_reduce_interrupted_prints_what_arrived(tmp_path: Path) -> None:
    """Ctrl-C on `producer | agentmsg reduce -` printed nothing (every reply lost) but 'interrupted': now the
    replies that arrived are printed (one still open as cut, INTERRUPTED), exit 130. The events are reduced
    as they arrive (a pipe's first write is not held back until a whole chunk came)."""
    from agentmsg import AssistantMessage, emit_events
    from tests._support.procs import interrupted

    first = emit_events(AssistantMessage("one", name="F"))
    second = emit_events(AssistantMessage("two", name="F"))
    head = "".join(json.dumps(e) + "\n" for e in first + second[:4])  # the second reply still open
    code, out, err = interrupted(["reduce", "-"], head.encode())
    assert code == 130 and "Traceback" not in err and err.endswith("agentmsg: interrupted\n")
    msgs = [json.loads(line) for line in jsonl_lines(out)]
    assert [m["content"] for m in msgs] == [[{"type": "text", "text": "one"}], [{"type": "text", "text": "two"}]]
    assert msgs[1]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_reduce_says_when_no_reply_was_reduced(tmp_path: Path, capsys: Any) -> None:
    """A stream of a subagent's events (or --source naming none) printed nothing and exited 0, silently:
    a note says why (exit still 0: nothing was wrong with the stream)."""
    from agentmsg import AssistantMessage, emit_events

    events = emit_events(AssistantMessage("hi", name="F"))
    sub = tmp_path / "sub.jsonl"
    sub.write_text("".join(json.dumps({**e, "source": "parent/child"}) + "\n" for e in events))
    code, msgs, err = _reduce(capsys, str(sub))
    assert (code, msgs) == (0, []) and err == [
        f"{sub}: note: no reply: no event opens one here (a subagent's events, their 'source' set, are reduced"
        " with --source PATH) [no-reply]"
    ]
    code, msgs, err = _reduce(capsys, "--source", "parent/child", str(sub))
    assert (code, err) == (0, []) and msgs[0]["content"] == [{"type": "text", "text": "hi"}]
    code, msgs, err = _reduce(capsys, "--source", "other", str(sub))
    assert (code, msgs, err) == (0, [], [f"{sub}: note: no reply: none of source 'other' [no-reply]"])


def test_cli_reduce_of_invalid_utf8_prints_messages(tmp_path: Any) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        jsonl([ev(0, "AGENT_START")])
        + b'{"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"\xed\xa0\x80"}\n'
        + b"\xff\xfe\n"
    )
    out = run("reduce", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stdout.splitlines()) == 1 and "[utf-8]" in out.stderr
    # (the line of no JSON is said by its bytes, as a document's are; it was orjson's "surrogates not allowed" [json])
    assert ":/2: line 3: not valid JSON: invalid UTF-8 at byte 0 (invalid start byte) [utf-8]\n" in out.stderr


def test_reduce_protocol_ag_ui_decodes_the_stream_and_says_what_it_left_out() -> None:
    """``agentmsg reduce --protocol ag-ui``: an AG-UI stream (SSE as a server sends it, or JSON lines) is decoded
    into AgentEvents and reduced; what the decoder left out is a note, a bad AG-UI event an error (exit 1),
    ``--strict`` stops at it (exit 1, the message so far printed)."""
    from tests.ui.test_agui import REFERENCE

    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in REFERENCE)
    r = run("reduce", "-", "--protocol", "ag-ui", stdin=sse)
    assert r.returncode == 0, r.stderr
    (msg,) = [json.loads(line) for line in jsonl_lines(r.stdout)]
    assert msg["id"] == "r1" and [b["type"] for b in msg["content"]] == ["text", "tool_use", "tool_result"]
    assert r.stderr == "-:/4: note: TOOL_CALL_START parentMessageId: no AgentEvent keeps it (left out) [ui-not-kept]\n"
    bad = [*REFERENCE[:3], {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"}, *REFERENCE[3:]]
    lines = "".join(json.dumps(e) + "\n" for e in bad)
    r = run("reduce", "-", "--protocol", "ag-ui", stdin=lines)
    assert r.returncode == 1 and "-:/3/delta: TEXT_MESSAGE_CONTENT needs delta [required]" in r.stderr
    assert json.loads(r.stdout)["content"][0] == {"type": "text", "text": "Let me check."}
    r = run("reduce", "-", "--protocol", "ag-ui", "--strict", stdin=lines)
    assert r.returncode == 1 and "/3/delta" in r.stderr
    assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "Let me check."}]
    assert run("reduce", "-", "--protocol", "nope", stdin=lines).returncode == 2


def test_reduce_protocol_says_a_null_event_in_every_framing() -> None:
    """A ``null`` where an event belongs is a bad event, said with its pointer (exit 1) whatever the framing: JSON
    lines and a JSON array dropped it without a word before the decoder saw it (exit 0), where SSE said it."""
    run_, end = (
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    )
    framings = {
        "jsonl": f"{json.dumps(run_)}\nnull\n{json.dumps(end)}\n",
        "array": json.dumps([run_, None, end]),
        "sse": f"data: {json.dumps(run_)}\n\ndata: null\n\ndata: {json.dumps(end)}\n\n",
    }
    for name, text in framings.items():
        r = run("reduce", "-", "--protocol", "ag-ui", stdin=text)
        assert r.returncode == 1, (name, r.stderr)
        assert r.stderr == "-:/1: an AG-UI event is a JSON object [type]\n", name
        r = run("reduce", "-", "--protocol", "ai-sdk", stdin=text)
        assert "-:/1: a UI message chunk is an object, not NoneType [type]" in r.stderr, (name, r.stderr)


def test_reduce_protocol_numbers_events_as_the_input_does() -> None:
    """``reduce --protocol``: a line that is not JSON counts as one event, as without --protocol, and is said at its
    pointer: the decoder's pointers after it were one event short (``/2`` named the fourth line) and it had none."""
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    lines = f'{json.dumps(start)}\n{{"type": \n[1]\n"x"\n'
    r = run("reduce", "-", "--protocol", "ag-ui", stdin=lines)
    said = [line.split(" ", 1)[0] for line in r.stderr.splitlines() if line.startswith("-:/")]
    assert said == ["-:/1:", "-:/2:", "-:/3:"], r.stderr
    assert "-:/1: line 2: not valid JSON" in r.stderr
    plain = run("reduce", "-", stdin=lines)  # the same numbers without --protocol (which says RUN_STARTED too: /0)
    assert [line.split(" ", 1)[0] for line in plain.stderr.splitlines() if line.startswith("-:/")] == [
        "-:/0/type:",
        *said,
    ]
    sse = f"data: {json.dumps(start)}\n\ndata: {{\n\ndata: [1]\n\n"
    r = run("reduce", "-", "--protocol", "ai-sdk", stdin=sse)
    assert "-:/1: SSE event" in r.stderr and "-:/2: a UI message chunk is an object, not list [type]" in r.stderr


class _Discard(io.RawIOBase):
    """A standard output that keeps nothing of what is written to it."""

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return len(b)


def test_reduce_writes_a_message_without_copies_of_its_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``out.write(msg.to_json() + "\\n")`` held a message's JSON as bytes, as text, as text with its newline and as
    the bytes written back: reduce (and parse) of a reply keeping 29 MB of text peaked 122 MB (RSS), 93 now. The
    JSON bytes go to stdout's buffer as they are. What writing the reduced message adds to memory (traced from
    the end of ``Reducer.finish``) grows about 1 byte per byte of text (its JSON), not 3."""
    import tracemalloc

    from agentmsg.cli import main
    from agentmsg.events import Reducer

    finish = Reducer.finish
    held: list[int] = []

    def finished(self: Reducer) -> Any:
        messages = finish(self)
        held.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.reset_peak()
        return messages

    monkeypatch.setattr(Reducer, "finish", finished)

    def written(size: int) -> int:
        path = tmp_path / f"{size}.jsonl"
        count = size // 500
        events = [ev(0, "AGENT_START", role="assistant"), ev(1, "TEXT_BLOCK_START", blockId="t")]
        events += [ev(2 + i, "TEXT_BLOCK_DELTA", blockId="t", delta=f"word{i} " * 80) for i in range(count)]
        events += [ev(count + 2, "TEXT_BLOCK_END", blockId="t"), ev(count + 3, "AGENT_END")]
        path.write_bytes(jsonl(events))
        stdout = io.TextIOWrapper(io.BufferedWriter(_Discard()), encoding="utf-8")
        monkeypatch.setattr(sys, "stdout", stdout)
        tracemalloc.start()
        try:
            assert main(["reduce", str(path)]) == 0
            return tracemalloc.get_traced_memory()[1] - held.pop()
        finally:
            tracemalloc.stop()

    n = 1 << 20
    written(n)  # (imports done before anything is measured)
    grown = written(4 * n) - written(n)
    assert grown < 2 * 3 * n, f"{grown / (3 * n):.2f} bytes held per byte of text"
