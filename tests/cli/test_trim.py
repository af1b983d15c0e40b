"""``agentmsg trim``: the trimmed conversation on stdout (or ``-o``) in the input's form, each removal a diagnostic
on stderr in every ``--output-format``, exit 1 with nothing written when the budget cannot be met."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmsg import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, decode_messages, encode_messages
from agentmsg.cli import main
from agentmsg.context import count_tokens
from tests._support.cli import run
from tests._support.events import jsonl_lines
from tests._support.providers import one


def _conversation() -> list[Msg]:
    msgs = [Msg("SYSTEM", "be brief")]
    for i in range(5):
        msgs += [
            Msg("USER", f"question {i} " * 20),
            Msg("ASSISTANT", [ToolUseBlock(id=f"c{i}", name="f", input={"i": i})]),
            Msg("TOOL", [ToolResultBlock(id=f"c{i}", name="f", output=[TextBlock(text="r " * 30)])]),
            Msg("ASSISTANT", "answer " * 10),
        ]
    return msgs


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "conv.json"
    path.write_bytes(encode_messages(_conversation()))
    return path


def test_the_trimmed_conversation_on_stdout_each_removal_on_stderr(
    conversation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = count_tokens(_conversation(), provider="anthropic").total
    assert main(["trim", "--budget", str(whole // 2), "--provider", "anthropic", str(conversation)]) == 0
    out, err = capsys.readouterr()
    kept = decode_messages(out)
    assert 1 < len(kept) < len(_conversation()) and kept[0].role.value == "SYSTEM"
    assert count_tokens(kept, provider="anthropic").total <= whole // 2
    lines = [json.loads(line) for line in jsonl_lines(err)]
    removals = [d for d in lines if d["rule"] == "trim-removed"]
    assert removals and {d["kind"] for d in removals} == {"lossy"}
    assert lines[0]["pointer"] == "/2"  # the first call and its result, oldest first
    # (then what Anthropic's formatter says of the request: the last assistant text's trailing space is not sent)
    assert [(d["rule"], d["kind"]) for d in lines[len(removals) :]] == [("trailing-whitespace-stripped", "rewrite")]


def test_json_lines_in_json_lines_out_and_the_output_file(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "conv.jsonl"
    lines.write_bytes(b"".join(m.to_json_bytes() + b"\n" for m in _conversation()))
    target = tmp_path / "out.jsonl"
    assert main(["trim", "--budget", "400", "--provider", "openai", str(lines), "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    written = jsonl_lines(target.read_bytes())
    assert written and all(Msg.from_json(line) for line in written)
    assert main(["trim", "--budget", "400", "--provider", "openai", str(conversation), "-o", str(tmp_path)]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_output_dash_is_stdout(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o -`` wrote a file named ``-`` in the current directory: it is stdout, as ``-`` is for every file."""
    monkeypatch.chdir(tmp_path)
    assert main(["trim", "--budget", "400", "--provider", "openai", str(conversation), "-o", "-"]) == 0
    assert decode_messages(capsys.readouterr().out)
    assert not (tmp_path / "-").exists()


def test_an_impossible_budget_exits_1_and_writes_nothing(
    conversation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trim", "--budget", "10", "--provider", "gemini", str(conversation)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    [line] = [json.loads(line) for line in jsonl_lines(err)]
    assert line["rule"] == "trim-over-budget" and line["kind"] == "error" and "budget of 10" in line["message"]


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif", "junit"])
def test_every_output_format(conversation: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trim", "--budget", "400", "--provider", "openai", "--output-format", fmt, str(conversation)]) == 0
    out, err = capsys.readouterr()
    assert decode_messages(out)
    assert "trim-removed" in err
    if fmt == "sarif":
        log = json.loads(err)
        assert {r["level"] for r in log["runs"][0]["results"]} == {"note"}
        assert log["runs"][0]["invocations"][0]["commandLine"] == "agentmsg trim"
    elif fmt == "junit":
        assert 'testsuite name="agentmsg trim"' in err and "<failure" not in err
    elif fmt == "github":
        assert err.startswith("::notice ")


def test_tools_count_in_the_budget(conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = tmp_path / "tools.json"
    definition = {"name": "f", "description": "a tool " * 40, "parameters": {"type": "object", "properties": {}}}
    tools.write_text(json.dumps([definition]))
    argv = ["trim", "--budget", "500", "--provider", "openai", str(conversation)]
    assert main(argv) == 0
    without = len(decode_messages(capsys.readouterr().out))
    assert main([*argv, "--tools", str(tools)]) == 0
    assert len(decode_messages(capsys.readouterr().out)) < without
    tools.write_text("{")
    assert main([*argv, "--tools", str(tools)]) == 2


def test_a_text_of_a_million_characters_is_trimmed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A text block of 1,000,000 characters made trim crash in the tokenizer (a traceback): now it is counted and
    cut to the budget like any other."""
    path = tmp_path / "long.json"
    path.write_bytes(encode_messages([Msg("SYSTEM", "be brief"), Msg("USER", "word " * 200_000), Msg("USER", "hi")]))
    assert main(["trim", "--budget", "100", "--provider", "openai", str(path)]) == 0
    kept = decode_messages(capsys.readouterr().out)
    assert [one(TextBlock, m.content[0]).text for m in kept] == ["be brief", "hi"]


def test_the_output_file_is_replaced_whole_or_left_as_it_was(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o FILE`` truncated FILE, then wrote it: an error on the way (a full disk, Ctrl-C) left a part of the
    new conversation, or none, in place of the old. It is now written to a temporary file beside it, then
    put in its place (os.replace): an error leaves the old FILE as it was and no temporary file; the new
    FILE keeps the old one's permissions."""
    import os

    out = tmp_path / "out" / "trimmed.json"
    out.parent.mkdir()
    out.write_bytes(b"the old file\n")
    out.chmod(0o640)
    argv = ["trim", "--budget", "400", "--provider", "openai", str(conversation), "-o", str(out)]

    def full(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", full)
        assert main(argv) == 2
    assert capsys.readouterr().err.endswith(f"\nagentmsg: {out}: cannot write: No space left on device\n")
    assert out.read_bytes() == b"the old file\n" and os.listdir(out.parent) == ["trimmed.json"]
    assert main(argv) == 0
    assert decode_messages(out.read_bytes()) and os.listdir(out.parent) == ["trimmed.json"]
    assert out.stat().st_mode & 0o777 == 0o640


def test_an_output_file_behind_a_link_is_written_through_it(conversation: Path, tmp_path: Path) -> None:
    """``-o LINK`` wrote, before writing became atomic, into the file LINK names (as ``open`` does); replacing
    LINK itself made it a regular file and left the file it named as it was. The named file is replaced now,
    and the link stays a link, a dangling one too."""
    target = tmp_path / "real" / "trimmed.json"
    target.parent.mkdir()
    target.write_bytes(b"the old file\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert main(["trim", "--budget", "400", "--provider", "openai", str(conversation), "-o", str(link)]) == 0
    assert link.is_symlink() and decode_messages(target.read_bytes())
    dangling = tmp_path / "next.json"
    dangling.symlink_to(tmp_path / "real" / "new.json")
    assert main(["trim", "--budget", "400", "--provider", "openai", str(conversation), "-o", str(dangling)]) == 0
    assert dangling.is_symlink() and decode_messages((tmp_path / "real" / "new.json").read_bytes())


@pytest.mark.parametrize("fmt", [None, "text", "github", "sarif", "junit"])
def test_the_formatters_diagnostics_of_the_trimmed_conversation_are_said(tmp_path: Path, fmt: str | None) -> None:
    """trim said its removals only: what the trimmed conversation's request loses (OpenAI drops the reasoning, the
    tool's role key is not sent) was said by format alone. Now said after the removals, as format says them, in every
    output format, the conversation written as it was and the exit status 0 (a lossy diagnostic is no error)."""
    msgs = [*_conversation(), Msg("ASSISTANT", [ThinkingBlock(thinking="hm")]), Msg("USER", "well?")]
    path = tmp_path / "conv.json"
    path.write_bytes(encode_messages(msgs))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "f", "parameters": {"type": "object"}, "role": "tool"}]), "utf-8")
    chosen = ("--output-format", fmt) if fmt else ()  # (None: the default, a JSON line each, with its kind)
    r = run("trim", "--budget", "400", "--provider", "openai", "--tools", str(tools), *chosen, str(path))
    assert r.returncode == 0
    kept = decode_messages(r.stdout)
    assert len(kept) < len(msgs) and kept[-2].content[0].type == "thinking"
    pointer = f"/{len(kept) - 2}/content/0"  # (into the conversation written)
    if fmt is None:
        said = [json.loads(line) for line in jsonl_lines(r.stderr)]
        assert {(d["pointer"], d["rule"], d["kind"]) for d in said if d["rule"] != "trim-removed"} == {
            (pointer, "thinking-dropped", "lossy"),
            ("/tools/0/role", "tool-key-dropped", "lossy"),
        }
    elif fmt == "sarif":
        results = json.loads(r.stderr)["runs"][0]["results"]
        assert {"thinking-dropped", "tool-key-dropped"} <= {res["ruleId"] for res in results}
        assert "error" not in {res["level"] for res in results}
    else:
        assert "thinking-dropped" in r.stderr and "tool-key-dropped" in r.stderr
        assert "<failure" not in r.stderr and "::error" not in r.stderr


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--budget", "1" * 5000, "--budget is out of range: must be at least 0, got '11111"),
        ("--keep-last", "-" + "9" * 5000, "--keep-last is out of range: must be at least 1, got '-9999"),
        ("--keep-last", "-" + "9" * 4000, "--keep-last is out of range: must be at least 1, got -9999"),
        ("--budget", "x" * 5000, "--budget must be a whole number, got 'xxxx"),
    ],
    ids=["5000-digits", "minus-5000-digits", "minus-4000-digits", "5000-letters"],
)
def test_a_count_past_the_digit_limit_is_out_of_range_quoted_bounded(
    conversation: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, said: str
) -> None:
    """``--budget`` of 5000 digits said "must be a whole number" (it is one: int() refuses more than 4300 digits)
    and echoed all 5000 characters, as did a number of 4000 digits out of range. Now it is out of range, the value
    quoted bounded (``short_repr``)."""
    argv = ["trim", "--budget", "400", "--provider", "openai", str(conversation)]
    argv[argv.index("--budget") : argv.index("--budget") + 2] = [option, value]
    if option != "--budget":
        argv += ["--budget", "400"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and len(err) < 2000, err[-600:]
