"""``agentmsg format``: body on stdout, diagnostics as JSON lines on stderr, exit 1 on a ValidationError."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentmsg import AssistantMessage, SystemMessage, ThinkingBlock, UserMessage, encode_messages
from agentmsg.cli import main
from tests._support.cli import run
from tests._support.cli import run as agentmsg
from tests._support.events import jsonl_lines
from tests._support.providers import agent_conversation
from tests.oracles import check


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "conv.json"
    msgs = [
        UserMessage("hi", name="alice"),
        AssistantMessage([ThinkingBlock(thinking="x", metadata={"provider": "openai"})]),
    ]
    path.write_bytes(encode_messages(msgs))
    return path


def test_body_on_stdout_diagnostics_on_stderr(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["format", "--provider", "anthropic", "--param", "temperature=0.5", str(conversation)]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert body["temperature"] == 0.5 and body["messages"][0]["role"] == "user"
    lines = [json.loads(line) for line in jsonl_lines(err)]
    said = [(line["pointer"], line["rule"], line["kind"]) for line in lines]
    assert ("/1/content/0", "thinking-dropped", "lossy") in said
    assert ("/0/name", "name-dropped", "lossy") in said  # Anthropic takes no message name
    from agentmsg.providers import get

    assert check("anthropic", get("anthropic").format_request([UserMessage("hi")])) == []


def test_strict_exits_1(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["format", "--provider", "openai", "--strict", str(conversation)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and json.loads(err.splitlines()[0])["rule"] == "thinking-dropped"


def test_invalid_input_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": []}]')
    assert main(["format", "--provider", "gemini", str(bad)]) == 1
    assert json.loads(capsys.readouterr().err.splitlines()[0])["pointer"].startswith("/0")


def _decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of what the generic JSON decoder is given from now on (the typed fast path does not use it)."""
    from agentmsg._codec import jsontext

    decoded: list[int] = []
    decode = jsontext._decode

    def counted(data: bytes) -> object:
        decoded.append(len(data))
        return decode(data)

    monkeypatch.setattr(jsontext, "_decode", counted)
    return decoded


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        (b'\xff"}]}]', "not valid JSON: invalid UTF-8 at byte 1000056 (invalid start byte)"),
        (b'"}]}', "not valid JSON: unexpected end of data"),
        (b'"}]}]]\n\r\n \n', "not valid JSON: unexpected content after document"),
    ],
)
def test_a_document_of_one_line_that_is_not_json_is_read_once_as_a_document(
    tail: bytes, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation that is no JSON was read as a document, then, to tell JSON Lines from a broken document,
    by ``read_records``, which read its one line as a document again, to the same problem: a 64 MB line with a
    bad byte at its end was decoded three times (the typed fast path, the document, read_records: 0.42 s of
    CPU), now twice (0.23 s). A document of one line (blanks after it or not) is not read again as JSON Lines;
    its problem is the same. (Counted: the generic decoder's bytes, which the fast path does not use.)"""
    decoded = _decodes(monkeypatch)
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"role": "USER", "content": [{"type": "text", "text": "' + b"a" * 1_000_000 + tail)
    assert main(["format", "--provider", "openai", str(path)]) == 1
    ((row),) = map(json.loads, jsonl_lines(capsys.readouterr().err))
    assert (row["pointer"], row["rule"]) == ("", "utf-8" if b"\xff" in tail else "json") and said in row["message"]
    assert sum(decoded) == path.stat().st_size, decoded


@pytest.mark.parametrize(
    ("tail", "rule", "said"),
    [
        (b'\xff"\n    }\n  ]\n}\n]\n', "utf-8", "not valid JSON: invalid UTF-8 at byte"),
        (b'"\n    }\n  ]\n', "json", "not valid JSON: unexpected end of data"),
        (b'"\n    }\n  ]\n}\n]\n]\n\n', "json", "not valid JSON: unexpected content after document"),
    ],
)
def test_a_document_over_many_lines_that_is_not_json_is_read_once_as_a_document(
    tail: bytes,
    rule: str,
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pretty-printed conversation that is no JSON was read as a document, then by ``read_records``, which took
    it for a document (its first line, ``[``, is no JSON value) and read all of it again, to the same problem: a
    64 MB document was decoded three times (the typed fast path, the document, read_records). A first line that
    is no JSON value on its own can give no JSON Lines that read: the document's problem is said, unread again."""
    decoded = _decodes(monkeypatch)
    path = tmp_path / "bad.json"
    start = b'[\n{\n  "role": "USER",\n  "content": [\n    {\n      "type": "text",\n      "text": "'
    path.write_bytes(start + b"a" * 1_000_000 + tail)
    assert main(["format", "--provider", "openai", str(path)]) == 1
    ((row),) = map(json.loads, jsonl_lines(capsys.readouterr().err))
    assert (row["pointer"], row["rule"]) == ("", rule) and said in row["message"], row
    assert sum(decoded) == path.stat().st_size, decoded


def test_envelope_tools_and_module_entry(conversation: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}])
    )
    run = agentmsg(  # (python -m agentmsg: the module entry)
        "format",
        "--provider",
        "gemini",
        "--model",
        "gemini-3-pro",
        "--tools",
        str(tools),
        "--tool-choice",
        "f",
        "--envelope",
        "--stream",
        "--agent",
        "Bob",
        str(conversation),
    )
    assert run.returncode == 0, run.stderr
    env = json.loads(run.stdout)
    assert env["path"] == "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse" and env["model"] == "gemini-3-pro"
    assert env["body"]["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"] == ["f"]
    assert env["body"]["contents"][0]["parts"][0]["text"].startswith("[alice]: hi")


def test_messages_as_json_lines_or_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """format reads messages as validate and events do: JSON Lines (one message per line) or one message, not
    only an array (a JSONL conversation was 'not valid JSON: unexpected content after document'); a bad line
    is said at /N; a broken document keeps its own problem."""
    msgs = [UserMessage("hi", name="alice"), AssistantMessage("hello")]
    array = tmp_path / "conv.json"
    array.write_bytes(encode_messages(msgs))
    assert main(["format", "--provider", "anthropic", str(array)]) == 0
    expected = capsys.readouterr().out
    lines = tmp_path / "conv.jsonl"
    lines.write_bytes(b"".join(m.to_json_bytes() + b"\n" for m in msgs))
    assert main(["format", "--provider", "anthropic", str(lines)]) == 0
    assert capsys.readouterr().out == expected
    one = tmp_path / "one.json"
    one.write_bytes(msgs[0].to_json_bytes())
    assert main(["format", "--provider", "anthropic", str(one)]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == json.loads(expected)["messages"][:1]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(msgs[0].to_json_bytes() + b'\n{"id":"a","role":"ASSISTANT","content":"yo"}\nnot json\n')
    assert main(["format", "--provider", "anthropic", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and [(r["pointer"], r["rule"]) for r in map(json.loads, jsonl_lines(err))] == [("/2", "json")]
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "u",\n "role": ')
    assert main(["format", "--provider", "anthropic", str(broken)]) == 1
    ((row),) = map(json.loads, jsonl_lines(capsys.readouterr().err))
    assert (row["pointer"], row["rule"]) == ("", "json") and "line 2" in row["message"]
    scalar = tmp_path / "scalar.json"
    scalar.write_text('"hi"')
    assert main(["format", "--provider", "anthropic", str(scalar)]) == 1
    assert "expected a JSON array of messages, got str" in capsys.readouterr().err


def test_stdin_given_for_messages_and_tools_is_a_usage_error() -> None:
    """`--tools - -`: the messages read stdin whole and the tools then read nothing, 'not valid JSON' of an
    input never given. Now a usage error naming both (exit 2), before anything is read."""
    r = run("format", "--provider", "openai", "--tools", "-", "-", stdin='[{"role": "USER", "content": "hi"}]')
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert "'-' (stdin) given 2 times (MESSAGES.json, --tools)" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("param", "said"),
    [
        ("messages=1", "--param messages: not a generation parameter: the conversation is MESSAGES.json"),
        ("model=1", "--param model: not a generation parameter: use --model"),
        ("tools=1", "--param tools: not a generation parameter: use --tools"),
        ("stream=1", "--param stream: not a generation parameter: use --stream"),
        ("strict=1", "--param strict: not a generation parameter: use --strict"),
        ("options=1", "--param options: not a generation parameter: use --repair, --reasoning, --layout"),
        ("temperature=null", "--param temperature=null: null is not sent (it means not given)"),
        ("temperature=0.2 --param temperature=0.9", "--param temperature: given twice: give each parameter once"),
    ],
)
def test_a_param_format_gives_itself_is_a_usage_error(
    conversation: Path, capsys: pytest.CaptureFixture[str], param: str, said: str
) -> None:
    """`--param model=1` (a keyword the command gives format_request itself) was a TypeError traceback, exit 1;
    `--param temperature=null` was dropped unsaid; a key given twice kept the last value unsaid (cli4). Now a usage
    error naming the key and what to use (exit 2)."""
    params = [a for one in param.split(" --param ") for a in ("--param", one)]
    assert main(["format", "--provider", "openai", *params, str(conversation)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(f"agentmsg: {said}"), err


@pytest.mark.parametrize(
    ("provider", "key"),
    [("anthropic", "system"), ("gemini", "contents"), ("openai-responses", "input"), ("openai", "stream_options")],
)
def test_a_param_replacing_what_the_conversation_built_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], provider: str, key: str
) -> None:
    """`--param system="EVIL"` replaced the conversation's system prompt (Gemini `contents`, Responses `input`)
    with no word, exit 0. Now a usage error naming the key (exit 2), no body."""
    path = tmp_path / "conv.json"
    path.write_bytes(encode_messages([SystemMessage("Be brief."), UserMessage("hi")]))
    argv = ["format", "--provider", provider, "--stream", "--param", f'{key}="EVIL"', str(path)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"agentmsg: --param {key}: the request already has {key!r}"), err


@pytest.mark.parametrize("output_format", [None, "json"])
def test_the_command_line_gives_every_place(output_format: str | None) -> None:
    """``agentmsg format`` writes a diagnostic said once for several places with its ``pointers``, every one (its
    own JSON lines, and ``--output-format json`` as ``agentmsg validate --json`` writes problems)."""
    conversation = encode_messages(agent_conversation(10)).decode()
    argv = ["format", "--provider", "openai", *(["--output-format", output_format] if output_format else []), "-"]
    done = run(*argv, stdin=conversation)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in jsonl_lines(done.stderr)]
    dropped = [d for d in lines if d["rule"] == "thinking-dropped"]
    assert len(dropped) == 1 and dropped[0]["pointers"] == [f"/{4 * t + 1}/content/0" for t in range(10)]
    assert all("pointers" not in d or len(d["pointers"]) > 1 for d in lines)


def test_a_tool_key_no_field_maps_is_said_on_stderr(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --tools definition's keys that no field maps were dropped in silence: now each is said on stderr
    (tool-key-dropped, lossy, at its pointer) as the other diagnostics are, the body without it, exit 0."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "f", "input_examples": [{"a": 1}], "parameters": {"type": "object"}}]))
    assert main(["format", "--provider", "anthropic", "--tools", str(tools), str(conversation)]) == 0
    out, err = capsys.readouterr()
    said = [json.loads(line) for line in err.splitlines()]
    assert [(d["pointer"], d["kind"]) for d in said if d["rule"] == "tool-key-dropped"] == [
        ("/tools/0/input_examples", "lossy")
    ]
    assert "input_examples" not in out


def test_a_tools_file_of_messages_is_a_usage_error(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --tools file of messages (the files given the wrong way round) made each named message a tool of its name,
    its other keys dropped (count and trim counted it so, without a word): now a definition holding role and content
    is a usage error (exit 2) of format, count and trim alike, saying which item is a message."""
    messages = tmp_path / "messages.json"
    messages.write_bytes(encode_messages([UserMessage("x", name="bob")]))
    for command in (["format"], ["count"], ["trim", "--budget", "1000"]):
        assert main([*command, "--provider", "openai", "--tools", str(messages), str(conversation)]) == 2
        err = capsys.readouterr().err
        assert "/tools/0 is a message (it has role and content), not a tool definition" in err, (command, err)


def test_a_tools_file_over_max_bytes_is_said_of_the_tools_file(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --tools file over --max-bytes was said of the messages file (``conv.json: larger than the limit ...``,
    exit 1), which is well under the limit: now it is a usage error (exit 2) naming the tools file, as a tools
    file nested too deeply is, in format, count and trim alike; their exit-status help says so (it did not)."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": f"t{i}", "parameters": {"type": "object"}} for i in range(100)]))
    limit = str(conversation.stat().st_size + 10)  # (the messages file is under it, the tools file over)
    for command in (["format"], ["count"], ["trim", "--budget", "1000"]):
        argv = [*command, "--provider", "openai", "--tools", str(tools), "--max-bytes", limit, str(conversation)]
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert "tools.json: larger than the limit of" in err and "[max-bytes]" in err, (command, err)
        assert "conv.json" not in err, (command, err)
        assert main([command[0], "--help"]) == 0
        assert "--tools: not JSON (or an integer past 64 bits), over --max-bytes, or it holds a message" in (
            capsys.readouterr().out
        ), command


def test_a_param_integer_past_64_bits_is_a_usage_error(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--param max_tokens=10**30`` was sent as ``1e+30`` (orjson reads such an integer as a float) and one of more
    than 4300 digits as a JSON string (it fell to the bare-string case), exit 0, without a word: a silent rewrite.
    Now an integer past the 64-bit range JSON is written in is a usage error (exit 2) naming the rule."""
    for value in ("1" + "0" * 30, "-1" + "0" * 20, "1" + "0" * 5000, '{"a": [1' + "0" * 30 + "]}"):
        assert main(["format", "--provider", "openai", "--param", f"max_tokens={value}", str(conversation)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "[integer-range]" in err and len(err) < 2000, err[:300]
    assert main(["format", "--provider", "openai", "--param", "max_tokens=100", str(conversation)]) == 0
    assert json.loads(capsys.readouterr().out)["max_completion_tokens"] == 100


def test_a_tools_file_integer_past_64_bits_is_a_usage_error(
    conversation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --tools file's integer past 64 bits (a schema's ``maximum``) was sent as the nearest float (orjson reads it
    so: ``"maximum":1e+29``), exit 0, without a word, where ``--param`` refuses such an integer. Now it is a usage
    error (exit 2) naming the tools file and rule integer-range, in format, count and trim alike; 20 digits within
    the range, and a long run of digits in a string, are sent as given."""
    tools = tmp_path / "tools.json"
    for value in ("1" + "0" * 29, "-9223372036854775809", "18446744073709551616"):
        tools.write_text('[{"name": "f", "parameters": {"type": "integer", "maximum": ' + value + "}}]")
        for command in (["format"], ["count"], ["trim", "--budget", "1000"]):
            argv = [*command, "--provider", "openai", "--tools", str(tools), str(conversation)]
            assert main(argv) == 2, (command, value)
            out, err = capsys.readouterr()
            assert out == "" and "tools.json: integer " in err and "[integer-range]" in err, (command, err[:300])
    tools.write_text(
        '[{"name": "f", "description": "' + "7" * 40 + '", "parameters": {"maximum": 18446744073709551615}}]'
    )
    assert main(["format", "--provider", "openai", "--tools", str(tools), str(conversation)]) == 0
    sent = capsys.readouterr().out
    assert '"maximum":18446744073709551615' in sent and "7" * 40 in sent


@pytest.mark.parametrize(
    "value",
    ["[1e999]", '{"a": NaN}', "[1,", "1e999", "-Infinity", " [1,", '"open', "[" + "1," * 3000],
    ids=["inf", "nan", "cut", "bare-inf", "minus", "blank", "open-string", "long"],
)
def test_a_param_that_begins_as_json_but_is_not_is_a_usage_error(
    conversation: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """``--param x=[1e999]`` (or ``x={"a": NaN}``, ``x=[1,``) was sent as the string ``"[1e999]"``, exit 0, without a
    word: the bare-string case (``--param user=alice``) took a mistyped JSON value. A value that begins as JSON does
    but is not JSON is now a usage error naming the key and the JSON error, the value quoted bounded."""
    assert main(["format", "--provider", "openai", "--param", f"x={value}", str(conversation)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--param: x: not JSON: " in err and "[json]" in err and len(err) < 2000, err[-600:]


@pytest.mark.parametrize("key", ["x", "max_completion_tokens"])
@pytest.mark.parametrize("value", ["[" * 5_000, "[1," + " " * 100_000, '"' + "a" * 5_000], ids=["deep", "cut", "open"])
def test_a_param_that_is_not_json_is_said_on_a_line_of_at_most_240(
    conversation: Path, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    """The error of ``--param x=<5,000 [>`` was a line of 257 characters (the value quoted in 80), past the 240 a line
    of the CLI's stderr holds (tests/cli/test_bad_inputs.py): the value is now quoted in what the line has left, its
    start and end kept, the key, the JSON error and the hint whole."""
    assert main(["format", "--provider", "openai", "--param", f"{key}={value}", str(conversation)]) == 2
    out, err = capsys.readouterr()
    line = err.splitlines()[-1]
    assert line.startswith(f"agentmsg format: error: argument --param: {key}: not JSON: {value[:3]!r}"[:-1]), line
    assert line.endswith(f"as JSON: {key}='\"...\"'") and "[json]" in line, line
    assert out == "" and all(len(one) <= 240 for one in err.splitlines()), [len(one) for one in err.splitlines()]


#: --param keys of every length (a real one of 21 characters; 30 and more made the line longer, however the value was
#: quoted), and values that make orjson's longest errors (an unexpected character 100,000 characters in)
_LONG_KEYS = ["max_completion_tokens", "k" * 30, "k" * 100, "k\x1b" * 6_000]
_WORST_VALUES = ["{1:2}", "{" + " " * 100_000 + "1:2}", "[1 " + " " * 100_000 + "2]", "[" * 5_000]


@pytest.mark.parametrize("key", _LONG_KEYS, ids=["21", "30", "100", "12000-escaped"])
@pytest.mark.parametrize("value", _WORST_VALUES, ids=["key", "far-key", "far-comma", "deep"])
def test_a_param_key_of_any_length_is_said_on_a_line_of_at_most_240(
    conversation: Path, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    """The value of a --param that is not JSON was quoted in what the line had left, but the key was said whole,
    twice (before the value and in the hint): ``max_completion_tokens={1:2}`` made a stderr line of 241 characters,
    one 100,000 characters in 260, a key of 100 characters 400 and more. Now the hint says ``KEY`` where naming the key
    would pass 240, and a key that still does not fit is cut in its middle (``...``), its control characters
    escaped."""
    assert main(["format", "--provider", "openai", "--param", f"{key}={value}", str(conversation)]) == 2
    out, err = capsys.readouterr()
    line = err.splitlines()[-1]
    assert out == "" and all(len(one) <= 240 for one in err.splitlines()), [len(one) for one in err.splitlines()]
    shown = key.replace("\x1b", "\\x1b")
    assert line.startswith(f"agentmsg format: error: argument --param: {shown[:6]}"), ascii(line)
    assert ": not JSON: " in line and "[json]" in line and "\x1b" not in line, ascii(line)
    assert line.endswith((f"as JSON: {key}='\"...\"'", "as JSON: KEY='\"...\"'")), ascii(line)


@pytest.mark.parametrize("key", _LONG_KEYS[1:], ids=["30", "100", "12000-escaped"])
def test_a_long_param_key_is_cut_in_every_error_of_the_param(
    conversation: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """A --param key was said whole in each error of the parameter: a key of 12,000 characters made lines of 12,000
    characters and more (an integer past 64 bits, a null). Now the key is cut as in the error of a value that is not
    JSON."""
    for given in (["--param", f"{key}=1" + "0" * 30], ["--param", f"{key}=null"]):
        assert main(["format", "--provider", "openai", *given, str(conversation)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err and all(len(one) <= 240 for one in err.splitlines()), err[-300:]
        assert "\x1b" not in err, err[-300:]


def test_a_param_key_of_bytes_that_are_not_utf8_is_said_with_xnn(conversation: Path) -> None:
    """A --param key of bytes that are not UTF-8 (Python holds them as surrogate escapes) was said as stderr's
    backslashreplace of the surrogate, '\\udcff', and whole; now as the CLI says a file name, '\\xff', cut."""
    for value in ("[1,", "1" + "0" * 30, "null"):
        r = run(
            "format", "--provider", "openai", "--param", os.fsdecode(b"k\xff") * 100 + f"={value}", str(conversation)
        )
        line = r.stderr.splitlines()[-1]
        assert r.returncode == 2 and "k\\xffk\\xff" in line and "udcff" not in line, (value, line)
        assert all(len(one) <= 240 for one in r.stderr.splitlines()), (value, line)


def test_a_param_without_a_key_of_bytes_that_are_not_utf8_is_said_with_xnn(conversation: Path) -> None:
    """A --param with no ``=`` (or no key) was quoted with repr: bytes that are not UTF-8 showed as the surrogate,
    '\\udcff', and a control character as repr writes it. Now as the CLI says what it was given: '\\xff', cut."""
    for given in (os.fsdecode(b"k\xff") * 100, "=" + os.fsdecode(b"\xff")):
        r = run("format", "--provider", "openai", "--param", given, str(conversation))
        line = r.stderr.splitlines()[-1]
        assert r.returncode == 2 and "expected KEY=JSON, got" in line, line
        assert "\\xff" in line and "udcff" not in line and len(line) <= 240, line


def test_a_param_bare_word_is_still_a_string(conversation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--param", "user=alice", "--param", "stop=NaN", "--param", 'metadata={"a": "[1,"}']
    assert main(["format", "--provider", "openai", *argv, str(conversation)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["user"], body["stop"], body["metadata"]) == ("alice", "NaN", {"a": "[1,"})


@pytest.mark.parametrize("given", ["k" * 100_000, "k" * 100_000 + "=[1,", "k" * 100_000 + "=" + "9" * 40])
def test_a_refused_param_is_quoted_bounded(conversation: Path, capsys: pytest.CaptureFixture[str], given: str) -> None:
    """A --param refused (no '=', JSON mistyped, an integer past 64 bits) echoed its whole text or key: a 100 KB
    key, 100 KB of stderr (200 KB when the key was said twice). Its message is cut as every other message is."""
    assert main(["format", "--provider", "openai", "--param", given, str(conversation)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--param" in err and len(err) < 2000, len(err)
