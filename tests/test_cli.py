"""The agentmsg command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

GOOD = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
    "timestamp": None,
    "usage": None,
}
BAD = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentmsg", *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def test_validate_object_array_jsonl_and_stdin(tmp_path: Path) -> None:
    good, arr, jsonl = tmp_path / "good.json", tmp_path / "arr.json", tmp_path / "msgs.jsonl"
    good.write_text(json.dumps(GOOD))
    arr.write_text(json.dumps([GOOD, BAD]))
    jsonl.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(BAD) + "\n")
    r = run("validate", str(good))
    assert (r.returncode, r.stdout) == (0, "")
    r = run("validate", str(arr))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{arr}:/1/content/0/type: SYSTEM messages may only contain text blocks, got 'thinking' [role-content]"
    ]
    r = run("validate", str(jsonl), str(good))
    assert r.returncode == 1 and r.stdout.startswith(f"{jsonl}:/1/content/0/type:")
    r = run("validate", "-", stdin=json.dumps(BAD))
    assert r.returncode == 1 and r.stdout.startswith("-:/content/0/type:")
    r = run("validate", "--kind", "content-block", "-", stdin='{"type":"text"}')
    assert r.returncode == 1 and r.stdout.strip() == '-: "text" is a required property [required]'


def test_validate_bad_json_and_usage_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": ')
    r = run("validate", str(broken))
    assert r.returncode == 1 and "not valid JSON" in r.stdout
    r = run("validate", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr
    assert run("validate").returncode == 2
    assert run("validate", "--kind", "nope", str(broken)).returncode == 2
    assert run("frobnicate").returncode == 2


def test_schema_listing_single_and_bundle() -> None:
    r = run("schema")
    assert r.returncode == 0 and "msg\thttps://agentmsg.dev/schemas/v1/msg.schema.json" in r.stdout
    doc = json.loads(run("schema", "content-block").stdout)
    assert doc["$id"].endswith("content-block.schema.json")
    bundle = json.loads(run("schema", "msg", "--bundle").stdout)
    assert bundle["$ref"] == "https://agentmsg.dev/schemas/v1/msg.schema.json"
    # The bundle is self-contained: python-jsonschema validates with it and no registry.
    import jsonschema

    validator = jsonschema.Draft202012Validator(bundle)
    assert validator.is_valid(GOOD) and not validator.is_valid(BAD)
    assert run("schema", "nope").returncode == 2


def test_validate_exit_codes_are_as_documented(tmp_path: Path) -> None:
    """0 valid, 1 invalid (not JSON, too big, too deep included), 2 usage or unreadable (others still checked)."""
    good, broken = tmp_path / "good.json", tmp_path / "broken.json"
    good.write_text(json.dumps(GOOD))
    broken.write_text('{"id": ')
    assert run("validate", str(good)).returncode == 0
    r = run("validate", str(broken), str(good))
    assert r.returncode == 1 and r.stdout.startswith(f"{broken}: not valid JSON") and r.stdout.endswith("[json]\n")
    r = run("validate", str(tmp_path / "missing.json"), str(broken))
    assert r.returncode == 2 and "cannot read" in r.stderr and f"{broken}: not valid JSON" in r.stdout
    r = run("validate", "--help")
    assert r.returncode == 0 and "exit status:" in r.stdout and "2  usage error" in r.stdout
    assert "bounded memory" in r.stdout
    assert run("validate", "--max-depth", "300", str(good)).returncode == 2
    readme = " ".join((Path(__file__).resolve().parent.parent / "README.md").read_text().split())
    assert "exits 0 when all instances are valid, 1 when any is invalid (text that is not JSON" in readme
    assert "2 on usage errors or files that cannot be read" in readme


def test_validate_applies_the_api_limits_and_rules(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 300 + "]" * 300)
    r = run("validate", str(deep))
    assert (r.returncode, r.stdout) == (1, f"{deep}: nested deeper than 254 levels (limits.max_depth) [max-depth]\n")
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({**GOOD, "metadata": {"a": [[[1]]]}}))
    assert run("validate", str(nested)).returncode == 0
    r = run("validate", "--max-depth", "3", str(nested))
    assert r.returncode == 1 and "[max-depth]" in r.stdout
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**GOOD, "content": [{"type": "text", "text": "x" * 5000}]}))
    r = run("validate", "--max-bytes", "1000", str(big))
    assert r.returncode == 1 and r.stdout.endswith("[max-bytes]\n")
    huge_int = tmp_path / "int.json"
    huge_int.write_text(json.dumps(GOOD).replace('"usage": null', '"usage": {"inputTokens": 18446744073709551617}'))
    r = run("validate", str(huge_int))
    assert (
        r.returncode == 1 and r.stdout.startswith(f"{huge_int}:/usage/inputTokens: ") and "[integer-range]" in r.stdout
    )
    surrogate = tmp_path / "surrogate.json"
    surrogate.write_text(json.dumps(GOOD).replace('"hi"', '"\\ud800"'))
    r = run("validate", str(surrogate))
    assert r.returncode == 1 and r.stdout.endswith("[lone-surrogate]\n")


def test_validate_reads_jsonl_line_by_line_and_refuses_long_records(tmp_path: Path) -> None:
    jsonl = tmp_path / "msgs.jsonl"
    jsonl.write_text(
        json.dumps(GOOD)
        + "\n"
        + json.dumps({**GOOD, "content": [{"type": "text", "text": "x" * 5000}]})
        + "\n\n"
        + json.dumps(BAD)
        + "\n"
    )
    r = run("validate", "--max-bytes", "1000", str(jsonl))
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and len(lines) == 2
    assert lines[0].startswith(f"{jsonl}:/1: ") and lines[0].endswith("[max-bytes]")
    assert lines[1].startswith(f"{jsonl}:/2/content/0/type: ") and lines[1].endswith("[role-content]")


def test_validate_stops_at_once_on_endless_or_binary_input() -> None:
    """An input that never ends is refused after at most max_bytes (here 100 KB), not read without bound."""
    zero = subprocess.run(
        [sys.executable, "-m", "agentmsg", "validate", "/dev/zero"], capture_output=True, text=True, timeout=60
    )
    assert zero.returncode == 1 and zero.stdout == "/dev/zero: not valid JSON: it starts with b'\\x00' [json]\n"
    endless = subprocess.Popen(
        [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('[' * 65536)"], stdout=subprocess.PIPE
    )
    try:
        r = subprocess.run(
            [sys.executable, "-m", "agentmsg", "validate", "--max-bytes", "100000", "-"],
            stdin=endless.stdout,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        endless.kill()
        endless.wait()
    assert r.returncode == 1 and r.stdout.endswith("[max-bytes]\n")


def test_validate_notes_unknown_keys_and_strict_rejects_them(tmp_path: Path) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**GOOD, "usage": {"inputTokens": 1, "futureTokens": 5}}))
    r = run("validate", str(newer))
    assert r.returncode == 0
    assert r.stdout.startswith(f"{newer}:/usage/futureTokens: note: ") and r.stdout.endswith("[unknown-key]\n")
    r = run("validate", "--strict", str(newer))
    assert r.returncode == 1 and r.stdout.startswith(f"{newer}:/usage: ") and "[additionalProperties]" in r.stdout


def test_subcommand_help_pages_have_descriptions() -> None:
    for command in ("validate", "schema", "reduce", "events", "format", "parse", "chat", "serve"):
        r = run(command, "--help")
        _, _, rest = r.stdout.partition("\n\n")
        assert r.returncode == 0 and rest.strip() and not rest.startswith(("positional", "options")), command


def test_every_help_page_ends_with_its_exit_codes() -> None:
    for command in ("validate", "schema", "reduce", "events", "format", "parse", "chat", "serve"):
        r = run(command, "--help")
        _, _, status = r.stdout.partition("\nexit status:\n")
        codes = [line.split()[0] for line in status.splitlines() if line[:3].strip().isdigit()]
        assert codes == sorted(codes, key=int) and {"0", "2"} <= set(codes), command
        assert "130" in codes or command == "serve", command  # serve: Ctrl-C is how it stops (0)
    reduce_help = run("reduce", "--help").stdout.partition("exit status:")[2]
    assert "a reply was cut" in reduce_help


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
            assert str(caught.value) == f"events.jsonl holds no events: it is only whitespace ({len(blank)} bytes)"
    events = emit_events(AssistantMessage("hello"))
    data = b"\n" * (2 * CHUNK + 3) + b"".join(json.dumps(e).encode() + b"\n" for e in events) + b"{nope\n"
    for make in (opened, pipe):
        with make(data) as source:
            head = _head(source, "events.jsonl")
            err = io.StringIO()
            assert list(file_events(source, "events.jsonl", err, head)) == events
            assert err.getvalue().startswith(f"events.jsonl: line {2 * CHUNK + 4 + len(events)}: not valid JSON")


def test_validate_report_is_on_stdout_and_json_lines_with_json(tmp_path: Path) -> None:
    """validate's problems are its result (stdout, as a linter's); only what stopped a file from being
    checked goes to stderr. --json gives CI one object per problem, a note or an unreadable file included."""
    mixed = tmp_path / "mixed.jsonl"
    newer = {**GOOD, "usage": {"inputTokens": 1, "futureTokens": 5}}
    mixed.write_text(json.dumps(GOOD) + "\n" + json.dumps(BAD) + "\n" + json.dumps(newer) + "\n")
    missing = tmp_path / "missing.json"
    r = run("validate", "--json", str(mixed), str(missing))
    assert r.returncode == 2  # an unreadable file wins over an invalid instance, as without --json
    assert r.stderr == f"agentmsg: {missing}: cannot read: No such file or directory\n"
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert all(list(row) == ["file", "instance", "line", "pointer", "rule", "kind", "message"] for row in rows)
    assert {(row["instance"], row["line"], row["pointer"], row["rule"], row["kind"]) for row in rows} == {
        (1, 2, "/content/0/type", "role-content", "error"),
        (2, 3, "/usage/futureTokens", "unknown-key", "note"),
        (None, None, "", "unreadable", "error"),
    }
    assert rows[-1] == {
        "file": str(missing),
        "instance": None,
        "line": None,
        "pointer": "",
        "rule": "unreadable",
        "kind": "error",
        "message": "cannot read: No such file or directory",
    }
    text = run("validate", str(mixed))
    assert text.returncode == 1 and text.stderr == ""
    assert text.stdout.splitlines()[0].startswith(f"{mixed}:/1/content/0/type: ")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    ok = run("validate", "--json", str(good))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    one = run("validate", "--json", "-", stdin="not json")
    assert (
        one.returncode == 1 and json.loads(one.stdout)["rule"] == "json" and json.loads(one.stdout)["instance"] is None
    )


def _cut_short(*args: str, stdin: bytes = b"") -> tuple[int, str]:
    """Run agentmsg with its stdout read for a few bytes then closed, as `| head -c 16` does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    proc.stdout.read(16)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(60), err


def test_output_closed_early_stops_quietly_with_141(tmp_path: Path) -> None:
    """`agentmsg ... | head`: no traceback, no 'Exception ignored', not 'cannot read: Broken pipe' (validate
    and events said so, exit 2, as if the input could not be read), and not exit 0 (validate's problems were
    not all printed): 141, as a tool killed by SIGPIPE."""
    reply = {**GOOD, "role": "ASSISTANT", "content": [{"type": "text", "text": "hello " * 50}]}
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{**reply, "id": f"m{i}"} for i in range(3000)]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text((json.dumps(BAD) + "\n") * 5000)
    events = run("events", str(many)).stdout.encode()
    for args, stdin in (
        (("validate", str(bad)), b""),
        (("validate", "--json", str(bad), str(bad)), b""),
        (("events", "--chunk-size", "2", str(many)), b""),
        (("events", "--sse", str(many)), b""),
        (("reduce", "-"), events),
    ):
        code, err = _cut_short(*args, stdin=stdin)
        assert (code, err) == (141, ""), args


def test_reduce_and_serve_refuse_binary_and_empty_input_at_once(tmp_path: Path) -> None:
    """Binary data (/dev/zero never ends: reduce read it forever) is refused after one chunk; an empty input
    is said (reduce printed nothing and exited 0). A text file whose first line is not an event (a log line)
    is still reduced, that line said."""
    pytest.importorskip("uvicorn")
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    for path in ("/dev/zero", str(png)):
        r = run("reduce", path)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.startswith(f"{path}: not an event stream (JSON lines, SSE or a JSON array): binary data (")
        s = run("serve", path, "--port", "0")
        assert s.returncode == 2 and s.stderr.startswith(f"agentmsg: {path} is not an event stream")
        p = run("parse", "--provider", "openai", "--stream", path)
        assert p.returncode == 2 and p.stderr.startswith(f"agentmsg: {path}: not an openai stream: binary data")
    r = run("reduce", str(empty))
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{empty}: no events in the input [empty]\n")
    s = run("serve", "-", "--port", "0", stdin="")
    assert s.returncode == 2 and s.stderr == "agentmsg: - holds no events: it is empty\n"
    reply = {**GOOD, "role": "ASSISTANT"}
    events = run("events", "-", stdin=json.dumps(reply)).stdout
    r = run("reduce", "-", stdin="starting the agent...\n" + events)
    assert r.returncode == 1 and json.loads(r.stdout)["content"] == reply["content"]
    assert r.stderr.startswith("-:/0: line 1: not valid JSON")


def test_parse_stream_interrupted_prints_what_arrived() -> None:
    """Ctrl-C on `producer | agentmsg parse --provider openai --stream -` printed nothing but 'interrupted':
    now the message so far is printed, INTERRUPTED, exit 130 (the stream is read as it arrives)."""
    from tests._procs import interrupted

    body = (Path(__file__).parent / "fixtures/providers/openai/stream_text_include_usage.sse").read_bytes()
    head = body[: body.index(b"\n\n", len(body) // 2) + 2]
    code, out, err = interrupted(["parse", "--provider", "openai", "--stream", "-"], head)
    assert code == 130 and err.endswith("agentmsg: interrupted\n") and "Traceback" not in err
    (msg,) = map(json.loads, out.splitlines())
    assert msg["content"][0]["text"] and msg["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


@pytest.mark.skipif(not Path("/dev/full").exists() or not Path("/proc/self/mem").exists(), reason="Linux devices")
def test_write_and_read_errors_are_one_line_each_naming_the_right_side(tmp_path: Path) -> None:
    """Output to a full disk printed a traceback (chat, reduce, schema...) or blamed the input ('msg.json:
    cannot read: No space left on device': validate, events); an input that fails mid-read (EIO) is named."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps({**GOOD, "role": "ASSISTANT"}))
    events = tmp_path / "events.jsonl"
    events.write_text(run("events", str(reply)).stdout)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BAD))
    for args in (
        ("events", str(reply)),
        ("validate", str(bad)),
        ("validate", "--json", str(bad)),
        ("reduce", str(events)),
        ("schema", "msg"),
        ("format", "--provider", "openai", str(reply)),
    ):
        with open("/dev/full", "w") as full:
            r = subprocess.run(
                [sys.executable, "-m", "agentmsg", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
            )
        assert (r.returncode, r.stderr) == (2, "agentmsg: cannot write the output: No space left on device\n"), args
    for command in ("reduce", "events", "validate"):
        r = run(command, "/proc/self/mem")
        assert r.returncode == 2 and r.stderr == "agentmsg: /proc/self/mem: cannot read: Input/output error\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="Linux devices")
def test_chat_to_a_full_disk_is_one_line_not_a_traceback() -> None:
    import os

    from agentmsg.testing import ReplayServer, Reply

    body = (Path(__file__).parent / "fixtures/providers/openai/stream_text_include_usage.sse").read_bytes()
    with ReplayServer() as server, open("/dev/full", "w") as full:
        server.add("/chat/completions", Reply(body=body, sse=True))
        r = subprocess.run(
            [sys.executable, "-m", "agentmsg", "chat", "--provider", "openai", "--base-url", server.url, "hi"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, "OPENAI_API_KEY": "k"},
        )
    assert (r.returncode, r.stderr) == (2, "agentmsg: cannot write the output: No space left on device\n")


def test_validate_reads_an_sse_event_stream_with_kind_event(tmp_path: Path) -> None:
    """`agentmsg events --sse` output (what serve reads) was 'not valid JSON: it starts with b'i'': with
    --kind event each SSE event's data is an instance (/N: the N-th event); other kinds say what it is."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps({**GOOD, "role": "ASSISTANT"}))
    sse = run("events", "--sse", str(reply)).stdout
    n = sse.count("\ndata: ")
    good = tmp_path / "events.sse"
    good.write_text(sse)
    r = run("validate", "--kind", "event", str(good))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    bad = tmp_path / "bad.sse"
    bad.write_bytes(
        sse.encode()
        + b'data: {"type":"BOGUS","id":"x","createdAt":"2025-01-01T00:00:00Z"}\n\ndata: not json\n\n'
        + b'data: {"type":"AGENT_END","id":"y","createdAt":"2025-01-01T00:00:00Z","replyId":"\xff"}\n\n'
    )
    r = run("validate", "--kind", "event", "--json", str(bad))
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.returncode == 1
    assert [(row["instance"], row["pointer"], row["rule"]) for row in rows] == [
        (n, "/type", "enum"),
        (n + 1, "", "json"),
        (n + 2, "", "utf-8"),
    ]
    r = run("validate", str(good))
    assert r.returncode == 1 and "it is an SSE stream (validate --kind event reads one) [json]" in r.stdout


def test_an_unknown_option_is_said_with_the_commands_usage() -> None:
    """argparse said 'agentmsg: error: unrecognized arguments: --bogus' under the top-level usage, as if the
    command were unknown: the command's own usage and name now."""
    r = run("reduce", "--bogus", "events.jsonl")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: agentmsg reduce ")
    assert r.stderr.endswith("agentmsg reduce: error: unrecognized arguments: --bogus\n")
    r = run("validate", "x.json", "--jsn")
    assert r.returncode == 2 and r.stderr.endswith("agentmsg validate: error: unrecognized arguments: --jsn\n")


def test_chat_uses_the_clients_default_timeout_unless_told() -> None:
    """agentmsg chat timed out after 60 s by default, where the clients wait 600 s (a reasoning model's first
    byte often takes more than a minute): without --timeout the client's own default is used."""
    from agentmsg.cli import build_parser
    from agentmsg.clients import Client
    from agentmsg.clients._client import DEFAULT_TIMEOUT

    args = build_parser().parse_args(["chat", "--provider", "openai", "--model", "m", "hi"])
    assert args.timeout is None
    client = Client("openai", api_key="k", timeout=args.timeout)
    assert client.http.timeout == DEFAULT_TIMEOUT
    told = build_parser().parse_args(["chat", "--provider", "openai", "--timeout", "5", "hi"])
    assert Client("openai", api_key="k", timeout=told.timeout).timeout == httpx.Timeout(5.0)


def test_a_file_name_that_is_not_utf8_is_shown_with_xnn_by_every_command(tmp_path: Path) -> None:
    """A file name with bytes that are not UTF-8 (Python holds them as surrogate escapes) was shown by events,
    reduce, parse and format as '\\udcff' (stderr's backslashreplace of the surrogate): not the name's bytes,
    and not as validate shows it. Now '\\xff', as validate does, in problem lines and usage errors alike, with
    PYTHONIOENCODING=utf-8 too."""
    names = {key: os.fsdecode(b"%s\xff.json" % key.encode()) for key in ("bad", "tools", "missing")}
    try:
        for key in ("bad", "tools"):
            (tmp_path / names[key]).write_bytes(b"{not json")
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([{"role": "USER", "content": "hi"}]))
    bad, tools, missing = (str(tmp_path / names[key]) for key in ("bad", "tools", "missing"))
    cases = [
        (["events", bad], "bad"),
        (["reduce", bad], "bad"),
        (["parse", "--provider", "openai", bad], "bad"),
        (["parse", "--provider", "openai", "--stream", bad], "bad"),
        (["format", "--provider", "openai", "--tools", tools, str(ok)], "tools"),
        (["format", "--provider", "openai", "--tools", missing, str(ok)], "missing"),
    ] + [([*command, missing], "missing") for command in (["events"], ["reduce"], ["parse", "--provider", "openai"])]
    cases.append((["format", "--provider", "openai", missing], "missing"))
    empty = tmp_path / names["bad"].replace("bad", "empty")
    empty.write_bytes(b"")
    cases += [(["serve", str(empty)], "empty"), (["serve", missing], "missing")]  # (refused before it listens)
    for env in ({}, {"PYTHONIOENCODING": "utf-8"}):
        for args, key in cases:
            r = subprocess.run(
                [sys.executable, "-m", "agentmsg", *args],
                capture_output=True,
                text=True,
                errors="replace",
                env={**os.environ, **env},
                timeout=120,
            )
            assert r.returncode in (1, 2) and "Traceback" not in r.stderr, (args, r.stderr)
            assert f"{tmp_path}/{key}\\xff.json" in r.stderr and "\\udcff" not in r.stderr, (args, r.stderr)
