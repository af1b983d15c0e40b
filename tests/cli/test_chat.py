"""``agentmsg chat`` against the replay server (``agentmsg.testing``), in process: what it prints, says and exits
with; Ctrl-C keeps what arrived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentmsg import (
    reduce_events,
)
from agentmsg.cli import main as cli_main
from agentmsg.providers import NAMES, get, openai, providers
from agentmsg.testing import ReplayServer, Reply
from tests._support.procs import sigint_default
from tests._support.providers import FIX, run_cli


def _chat(monkeypatch: pytest.MonkeyPatch, provider: str, route: str, fixture: str, prompt: str) -> tuple[int, str]:
    """``agentmsg chat`` against the replay server playing a recorded stream."""
    monkeypatch.setenv({"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider], "sk-test")
    with ReplayServer() as server:
        server.add(route, Reply(body=(FIX / fixture).read_bytes(), sse=True))
        return run_cli("chat", "--provider", provider, "--base-url", server.url, prompt)


def test_cli_chat_over_replay_server(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _chat(monkeypatch, "openai", "/chat/completions", "openai/stream_parallel_tool_calls.sse", "weather?")
    assert code == 0
    assert "[tool call] GetWeatherArgs" in out and "[usage] input 149 · output 60 · total 209 · " in out
    # a reply whose provider gave no token counts says so, not "input None"
    code, out = _chat(
        monkeypatch, "anthropic", "/v1/messages", "anthropic/stream_docs_extended_thinking.sse", "27*453?"
    )
    assert code == 0 and "\n6. 10,800 + 1,350 + 81 = 12,231\n\n27 * 453 = 12,231\n" in out  # the answer apart
    assert out.startswith("[thinking] Let me solve this step by step:")
    usage = out.splitlines()[-1]
    assert usage.startswith("[usage] no token counts from the provider · ") and usage.endswith(" s")


def test_cli_chat_ctrl_c_keeps_what_arrived_and_exits_130() -> None:
    """Ctrl-C during `agentmsg chat` (a stalled stream): what arrived stays printed, with a line that says it
    was interrupted, exit 130, and no traceback; usage errors are one line, exit 2."""
    import os
    import select
    import signal
    import subprocess
    import sys

    body = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body, sse=True, stall_after=600, stall=30.0))
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "agentmsg", "chat", "--provider", "openai", "--base-url", server.url, "hi"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=sigint_default)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # the first text printed: the server now stalls
        first = os.read(proc.stdout.fileno(), 1) if ready else b""
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        out = first + out
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and err.decode().strip().endswith("agentmsg: interrupted")
    assert out.decode().startswith("I")  # the text that arrived
    for argv in (["--choice", "abc"], ["--timeout", "-1"]):
        cmd = [sys.executable, "-m", "agentmsg", "chat", "--provider", "openai", *argv, "hi"]
        done = subprocess.run(cmd, capture_output=True, env={**os.environ, "OPENAI_API_KEY": "k"}, timeout=60)
        assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_cli_chat_says_the_parsers_problems_and_exits_3_for_cut_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agentmsg chat`` ignored what the parser said: a reply whose tool call arguments the provider cut at
    max_tokens (Anthropic's recorded one) exited 0 with nothing on stderr, and so did a stream with a payload
    that could not be read. Now, as ``agentmsg parse``: the problem is said on stderr after the reply, exit 3
    for cut arguments, 1 for a payload not read (its text still printed)."""
    capsys.readouterr()
    code, out = _chat(monkeypatch, "anthropic", "/v1/messages", "anthropic/stream_sdk_incomplete_partial_json.sse", "x")
    err = capsys.readouterr().err
    assert code == 3, err
    assert "[tool call] " in out and "[usage] " in out
    assert "[incomplete]" in err and err.startswith("agentmsg: ")
    body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    cut = body.replace(b"data: ", b"data: {not json\n\ndata: ", 1)  # one payload no one can read, then the rest
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=cut, sse=True))
        code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "hi")
    err = capsys.readouterr().err
    assert code == 1, err
    text = reduce_events(openai.parse_stream(body))[0].text_content
    assert text and text in out
    assert err.count("\n") == 1 and err.startswith("agentmsg: ")


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_chat_without_an_api_key_names_the_variable_to_set(
    provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said 'pass api_key= or set ...' (a Python keyword a command line has not); --help said nothing of
    the key."""
    for entry in providers():
        for name in entry.spec.env:
            monkeypatch.delenv(name, raising=False)
    assert cli_main(["chat", "--provider", provider, "--base-url", "http://127.0.0.1:9", "hi"]) == 1
    err = capsys.readouterr().err
    assert err == f"agentmsg: {provider}: no API key: set {' or '.join(get(provider).spec.env)}\n"
    assert cli_main(["chat", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(f"{name}" in help_text for name in get(provider).spec.env)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="Linux devices")
def test_chat_to_a_full_disk_is_one_line_not_a_traceback() -> None:
    import os

    from agentmsg.testing import ReplayServer, Reply

    body = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
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


def test_chat_uses_the_clients_default_timeout_unless_told() -> None:
    """agentmsg chat timed out after 60 s by default, where the clients wait 600 s (a reasoning model's first
    byte often takes more than a minute): without --timeout the client's own default is used."""
    from agentmsg.cli import build_parser
    from agentmsg.clients import Client
    from agentmsg.clients._config import DEFAULT_TIMEOUT

    args = build_parser().parse_args(["chat", "--provider", "openai", "--model", "m", "hi"])
    assert args.timeout is None
    client = Client("openai", api_key="k", timeout=args.timeout)
    assert client.http.timeout == DEFAULT_TIMEOUT
    told = build_parser().parse_args(["chat", "--provider", "openai", "--timeout", "5", "hi"])
    assert Client("openai", api_key="k", timeout=told.timeout).timeout == httpx.Timeout(5.0)


def test_cli_chat_think_tags_marks_the_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--think-tags``: a compatible server's ``<think>`` text is printed as reasoning, not as the answer."""
    from tests._support.providers import chunk, sse

    cuts = ["<th", "ink>\nThe user greets me.\n</think", ">\n\nHello!"]
    body = sse(*(chunk({"content": c}) for c in cuts), chunk({}, "stop"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body, sse=True), Reply(body=body, sse=True))
        code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "--think-tags", "hi")
        assert code == 0 and out.startswith("[thinking] The user greets me.\n\nHello!\n")
        code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "hi")
        assert code == 0 and out.startswith("<think>\nThe user greets me.\n</think>\n\nHello!\n")


def test_chat_says_a_providers_error_in_one_line_its_controls_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provider's error message, from a server that may be anyone's, went to the terminal as it came: a line
    break split the line, and a NUL or an escape sequence (which moves the cursor or recolours the terminal) was
    written raw. Now it is one line, its control characters escaped as ``parse`` and ``reduce`` write them."""
    message = "bad\x00 key\nsecond line \x1b[2J\x1b[31mred"
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    capsys.readouterr()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(status=400, body=body, headers={"content-type": "application/json"}))
        code, _ = run_cli("chat", "--provider", "openai", "--base-url", server.url, "hi")
    err = capsys.readouterr().err
    assert code == 1, err
    assert err == "agentmsg: openai 400: bad\\x00 key\\nsecond line \\x1b[2J\\x1b[31mred\n"
