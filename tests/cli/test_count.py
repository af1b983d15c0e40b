"""``agentmsg count``: a conversation file's input tokens for a provider, as JSON on stdout (what
agentmsg.context.count_tokens gives); the input's problems on stderr in every ``--output-format``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentmsg import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.cli import main
from agentmsg.cli._install import install_command
from agentmsg.context import count_tokens
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests._support.tokenizers import without_tokenizer_packages
from tests.cli.test_validate_ci import sarif_schema

CONVO = [
    Msg(id="m0", role="SYSTEM", content=[TextBlock(text="You are helpful.")]),
    Msg(id="m1", role="USER", content=[TextBlock(text="Weather in Oslo?")]),
    Msg(id="m2", role="ASSISTANT", content=[ToolUseBlock(id="c1", name="weather", input={"city": "Oslo"})]),
    Msg(id="m3", role="TOOL", content=[ToolResultBlock(id="c1", name="weather", output=[TextBlock(text="-3 C")])]),
]
TOOLS = [{"name": "weather", "description": "The weather of a city", "parameters": {"type": "object"}}]


def _file(tmp_path: Path, name: str, value: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), "utf-8")
    return path


def test_count_prints_the_count_of_the_library(tmp_path: Path) -> None:
    path = _file(tmp_path, "convo.json", [m.to_dict() for m in CONVO])
    tools = _file(tmp_path, "tools.json", TOOLS)
    for provider, model in (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")):
        r = run("count", "--provider", provider, "--model", model, "--tools", str(tools), str(path))
        assert r.returncode == 0 and r.stderr == ""
        doc = json.loads(r.stdout)
        expected = count_tokens(CONVO, provider=provider, model=model, tools=TOOLS)
        assert doc == {"provider": provider, "model": model, **expected.to_dict()}
    # without --model: the provider's default, named
    r = run("count", "--provider", "gemini", str(path))
    assert json.loads(r.stdout)["model"] and json.loads(r.stdout)["method"] == "estimate"


def test_an_estimate_for_want_of_a_package_hints_how_to_count_exactly(tmp_path: Path, capsys: Any) -> None:
    """Without bpe-openai (the extra ``count``) or dashscope, the count of a provider whose tokenizer runs offline is
    an estimate that names the package, and stderr has one hint with the command that installs it (this agentmsg
    with the extra, as every extra hint; dashscope itself); with them, and for Anthropic, no hint."""
    path = _file(tmp_path, "convo.json", [m.to_dict() for m in CONVO])
    with without_tokenizer_packages():
        for provider, package, command in (
            ("openai", "bpe-openai", install_command("count")),
            ("dashscope", "dashscope", "pip install dashscope"),
        ):
            assert main(["count", "--provider", provider, str(path)]) == 0
            out, err = capsys.readouterr()
            assert json.loads(out)["missing"] == package
            hints = [json.loads(line) for line in err.splitlines()]
            assert len(hints) == 1 and hints[0]["kind"] == "hint", err
            assert package in hints[0]["message"] and hints[0]["message"].endswith(": " + command)
        assert main(["count", "--provider", "anthropic", str(path)]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["missing"] is None and err == ""
    for provider in ("openai", "dashscope"):
        assert main(["count", "--provider", provider, str(path)]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["missing"] is None and err == ""


def test_json_lines_and_one_message_are_read_as_format_reads_them(tmp_path: Path) -> None:
    lines = tmp_path / "convo.jsonl"
    lines.write_text("".join(json.dumps(m.to_dict()) + "\n" for m in CONVO), "utf-8")
    r = run("count", "--provider", "dashscope", str(lines))
    assert r.returncode == 0 and len(json.loads(r.stdout)["messages"]) == len(CONVO)
    one = _file(tmp_path, "one.json", CONVO[1].to_dict())
    assert json.loads(run("count", "--provider", "dashscope", str(one)).stdout)["messages"][0] > 0


def test_an_invalid_conversation_is_said_in_each_format(tmp_path: Path) -> None:
    bad = [CONVO[0].to_dict(), {**CONVO[1].to_dict(), "role": "ROBOT"}]
    path = _file(tmp_path, "bad.json", bad)
    plain = run("count", "--provider", "openai", str(path))
    assert plain.returncode == 1 and plain.stdout == ""
    rows = [json.loads(line) for line in jsonl_lines(plain.stderr)]
    assert rows and rows[0]["pointer"].startswith("/1") and rows[0]["kind"] == "error"
    sarif = run("count", "--provider", "openai", "--output-format", "sarif", str(path))
    log = json.loads(sarif.stderr)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert log["runs"][0]["invocations"][0]["commandLine"] == "agentmsg count"
    assert [r["level"] for r in log["runs"][0]["results"]] == ["error"] * len(rows)
    junit = ET.fromstring(run("count", "--provider", "openai", "--output-format", "junit", str(path)).stderr)
    assert len(list(junit.iter("failure"))) == len(rows)
    gh = run("count", "--provider", "openai", "--output-format", "github", str(path)).stderr.splitlines()
    assert gh and all(line.startswith("::error file=") and "agentmsg count [" in line for line in gh)
    text = run("count", "--provider", "openai", "--output-format", "text", str(path)).stderr
    assert str(path) in text


def test_agent_events_get_the_hint_to_reduce_them(tmp_path: Path) -> None:
    event = {
        "type": "TEXT_BLOCK_DELTA",
        "replyId": "r",
        "blockId": "b",
        "delta": "x",
        "createdAt": "2025-01-01T00:00:00Z",
    }
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(event) + "\n", "utf-8")
    r = run("count", "--provider", "openai", str(path))
    assert r.returncode == 1 and "these look like agent events" in r.stderr


def test_bad_tools_are_a_usage_error_or_an_invalid_input(tmp_path: Path) -> None:
    path = _file(tmp_path, "convo.json", [m.to_dict() for m in CONVO])
    not_json = tmp_path / "tools.json"
    not_json.write_text("{", "utf-8")
    assert run("count", "--provider", "openai", "--tools", str(not_json), str(path)).returncode == 2
    nameless = _file(tmp_path, "nameless.json", [{"description": "no name"}])
    r = run("count", "--provider", "openai", "--tools", str(nameless), str(path))
    assert r.returncode == 1 and "/tools/0/name" in r.stderr


def test_a_text_of_a_million_characters_is_counted(tmp_path: Path) -> None:
    """One text block of 1,000,000 characters (1 MB, far below limits.max_bytes) was a traceback, exit 1: the
    tokenizer refuses such a text at once ('Input too long to encode safely'). Now counted, as the library counts."""
    convo = [Msg(id="u", role="USER", content=[TextBlock(text="word " * 200_000)])]
    path = _file(tmp_path, "long.json", [m.to_dict() for m in convo])
    r = run("count", "--provider", "openai", "--model", "gpt-4o", str(path))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["total"] == count_tokens(convo, provider="openai", model="gpt-4o").total > 200_000


LOSSY = [
    Msg(id="u1", role="USER", content=[TextBlock(text="Weather in Oslo?")]),
    Msg(id="a1", role="ASSISTANT", content=[ThinkingBlock(thinking="they want the weather")]),
    Msg(id="u2", role="USER", content=[TextBlock(text="Well?")]),
]
#: a tool definition with a message's key, which no provider sends
ODD_TOOLS = [{**TOOLS[0], "role": "tool"}]


@pytest.mark.parametrize("fmt", [None, "text", "github", "sarif", "junit"])
def test_the_formatters_diagnostics_are_said_as_format_says_them(tmp_path: Path, fmt: str | None) -> None:
    """count said only legacy-key notes: what the request counted loses (OpenAI drops the reasoning, the tool's role
    key is not sent) was said by format alone. Now said alike, in every output format, the count on stdout as it was
    and the exit status 0 (a lossy diagnostic is no error)."""
    path = _file(tmp_path, "convo.json", [m.to_dict() for m in LOSSY])
    tools = _file(tmp_path, "tools.json", ODD_TOOLS)
    said = run("format", "--provider", "openai", "--model", "gpt-5", "--tools", str(tools), str(path))
    expected = {(d["pointer"], d["rule"], d["kind"]) for d in map(json.loads, jsonl_lines(said.stderr))}
    assert {(rule, kind) for _, rule, kind in expected} == {
        ("thinking-dropped", "lossy"),
        ("tool-key-dropped", "lossy"),
    }
    chosen = ("--output-format", fmt) if fmt else ()  # (None: the default, a JSON line each, with its kind)
    r = run("count", "--provider", "openai", "--model", "gpt-5", "--tools", str(tools), *chosen, str(path))
    assert r.returncode == 0
    counted = count_tokens(LOSSY, provider="openai", model="gpt-5", tools=ODD_TOOLS)
    assert json.loads(r.stdout) == {"provider": "openai", "model": "gpt-5", **counted.to_dict()}
    if fmt is None:
        assert {(d["pointer"], d["rule"], d["kind"]) for d in map(json.loads, jsonl_lines(r.stderr))} == expected
    elif fmt == "sarif":
        results = json.loads(r.stderr)["runs"][0]["results"]
        assert {res["ruleId"] for res in results} == {"thinking-dropped", "tool-key-dropped"}
        assert "error" not in {res["level"] for res in results}
    else:
        assert "thinking-dropped" in r.stderr and "tool-key-dropped" in r.stderr
        assert "<failure" not in r.stderr and "::error" not in r.stderr


#: a conversation whose request the formatter refuses for its media (no --allow-root lets it read the file): the
#: count and the trim do not depend on it
LOCAL_MEDIA = [
    {
        "id": "u1",
        "role": "USER",
        "content": [
            {"type": "text", "text": "What is in it?"},
            {"type": "image", "source": {"type": "url", "url": "file:///etc/hostname"}},
        ],
    }
]


@pytest.mark.parametrize("command", ["count", "trim"])
def test_a_request_the_formatter_would_refuse_is_said_as_a_note_not_an_error(tmp_path: Path, command: str) -> None:
    """Media no --allow-root lets the formatter read was said with kind 'error' while the command exited 0, the
    count printed: an error that fails nothing. It is a note naming the refusal ('agentmsg format' fails on it); no
    error level in SARIF, no ::error annotation."""
    path = _file(tmp_path, "convo.json", LOCAL_MEDIA)
    budget = ("--budget", "100000") if command == "trim" else ()
    base = (command, "--provider", "openai", "--model", "gpt-5", *budget)
    r = run(*base, str(path))
    assert r.returncode == 0, r.stderr
    said = [d for d in map(json.loads, jsonl_lines(r.stderr)) if d["rule"] == "media-local-refused"]
    assert [(d["pointer"], d["kind"]) for d in said] == [("/0/content/1", "note")], r.stderr
    assert said[0]["message"].startswith("agentmsg format would refuse the request: local file 'file:///etc/hostname'")
    assert run("format", "--provider", "openai", "--model", "gpt-5", str(path)).returncode == 1
    r = run(*base, "--output-format", "sarif", str(path))
    assert r.returncode == 0 and "error" not in {res["level"] for res in json.loads(r.stderr)["runs"][0]["results"]}
    r = run(*base, "--output-format", "github", str(path))
    assert r.returncode == 0 and "::error" not in r.stderr
    assert "[media-local-refused]::/0/content/1: agentmsg format would" in r.stderr


#: (provider, tools its formatter refuses): an OpenAI custom tool, another provider's own tool, two of one name
REFUSED_TOOLS = [
    ("anthropic", [{"type": "custom", "name": "sql", "format": {"type": "text"}}]),
    ("gemini", [{"type": "custom", "name": "sql", "format": {"type": "text"}}]),
    ("dashscope", [{"type": "custom", "name": "sql", "format": {"type": "text"}}]),
    ("openai", [{"type": "web_search_20250305", "name": "web_search"}]),
    ("openai", [TOOLS[0], TOOLS[0]]),
]


@pytest.mark.parametrize("command", ["count", "trim"])
@pytest.mark.parametrize(("provider", "tools"), REFUSED_TOOLS)
def test_tools_the_formatter_refuses_exit_1_with_its_problem(
    tmp_path: Path, command: str, provider: str, tools: list[dict[str, Any]]
) -> None:
    """Tools the provider's formatter refuses were counted (exit 0, the count printed, the refusal a note): the count
    is of the request the formatter would send. The command exits 1, nothing on stdout, and says the problem
    'agentmsg format' says, as an error."""
    path = _file(tmp_path, "convo.json", [m.to_dict() for m in CONVO])
    tools_file = _file(tmp_path, "tools.json", tools)
    budget = ("--budget", "100000") if command == "trim" else ()
    r = run(command, "--provider", provider, "--tools", str(tools_file), *budget, str(path))
    formatted = run("format", "--provider", provider, "--tools", str(tools_file), str(path))
    assert formatted.returncode == 1
    assert (r.returncode, r.stdout) == (1, ""), r.stderr
    said = [d for d in map(json.loads, jsonl_lines(r.stderr)) if d["kind"] != "hint"]
    assert said == list(map(json.loads, jsonl_lines(formatted.stderr))) and said[0]["kind"] == "error"
