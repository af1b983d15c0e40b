"""``agentmsg parse`` on provider replies, in process (``agentmsg.cli.main``): exit codes and what it says on
stderr, choices, cut streams, SSE bodies without ``--stream``, reading incrementally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import ThinkingBlock, reduce_events
from agentmsg.cli import main
from agentmsg.providers import gemini, openai
from tests._support.events import jsonl_lines
from tests._support.providers import (
    CITE,
    FIX,
    chunk,
    cited_response,
    ev,
    one,
    reader_groups,
    run_cli,
    said_texts,
    same_reader,
    sse,
    tc,
)
from tests.conftest import ROOT

#: what the hints name for an OpenAI Chat Completions reply or stream: every registry name that reads one (the
#: openai module's reader is its OpenAI-compatible variants' too), in registry order
_OPENAI = "/".join(same_reader("openai"))


def test_cli_parse_exits_0_when_only_data_not_kept_was_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Data the message has no place for is said in the events, but the reply was read whole: exit 0. (A text
    block's citations are kept, after it: nothing to say of them.)"""

    body = b"".join(
        [
            ev("message_start", message={"id": "msg_4", "model": "claude", "usage": {"input_tokens": 1}}),
            ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "blue"}),
            ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITE}),
            ev("content_block_stop", index=0),
            ev(
                "message_delta",
                delta={"stop_reason": "stop_sequence", "stop_sequence": "###"},
                usage={"output_tokens": 2},
            ),
            ev("message_stop"),
        ]
    )
    path = tmp_path / "cited.sse"
    path.write_bytes(body)
    assert main(["parse", "--provider", "anthropic", "--stream", str(path)]) == 0
    out, err = capsys.readouterr()
    msg = agentmsg.Msg.from_json(out)
    carrier = one(ThinkingBlock, msg.content[1])  # (the text's citations, on the carrier after it)
    assert msg.text_content == "blue" and carrier.metadata is not None and carrier.metadata["citations"] == [CITE]
    assert err == (
        f'{path}: note: the stop sequence that ended the reply (stop_sequence: "###") is not kept (the message has no'
        " place for it) [not-kept]\n"
    )
    whole = tmp_path / "cited.json"
    whole.write_bytes(orjson.dumps({**cited_response("msg_5"), "stop_reason": "stop_sequence", "stop_sequence": "###"}))
    assert main(["parse", "--provider", "anthropic", str(whole)]) == 0
    assert capsys.readouterr().err.endswith("[not-kept]\n")


def test_cli_parse_says_why_it_exits_1_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1 (a payload skipped, a cut stream, the provider's error) comes with one stderr line each saying
    why; the message on stdout keeps everything received."""
    head = [
        ev("message_start", message={"id": "msg_6", "model": "claude", "usage": {"input_tokens": 1}}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
    ]
    path = tmp_path / "odd.sse"
    path.write_bytes(b"".join([*head, b"data: {not json\n\n"]))
    assert main(["parse", "--provider", "anthropic", "--stream", str(path)]) == 1
    out, err = capsys.readouterr()
    assert agentmsg.Msg.from_json(out).text_content == "Hi"
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{path}: a payload is not JSON") and lines[0].endswith("[json]")
    assert lines[1] == f"{path}: error: the stream ended before the provider finished the reply [incomplete_stream]"
    # the same lines beside --events; a choice other than the first is named
    assert main(["parse", "--provider", "anthropic", "--stream", "--events", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == lines
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    n2 = [
        {**chunk, "choices": [{"index": 1, "delta": {"content": "x"}, "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "delta": {"content": "y"}, "finish_reason": "stop"}]},
    ]
    path.write_bytes(b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in n2))  # cut before [DONE]
    assert main(["parse", "--provider", "openai", "--stream", "--choice", "all", str(path)]) == 1
    out, err = capsys.readouterr()
    assert [agentmsg.Msg.from_json(line).text_content for line in out.splitlines()] == ["y", "x"]
    assert err.startswith(f"{path}: choice/1: error: ") and err.endswith("[incomplete_stream]\n")


def test_cli_parse_exits_3_for_tool_arguments_the_provider_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid stream whose tool call arguments the provider cut at max_tokens (Anthropic's recorded one) exited 1,
    as a broken input does, though every payload was read: the message keeps the raw text (argumentsError) and
    the problem is said. Now exit 3 (documented), for every provider, streamed (with --events too) and whole;
    the problem's value names the call (toolCallId). A broken input beside it still exits 1, and so does a cut
    stream."""
    fixture = FIX / "anthropic" / "stream_sdk_incomplete_partial_json.sse"
    assert main(["parse", "--provider", "anthropic", "--stream", str(fixture)]) == 3
    out, err = capsys.readouterr()
    (call,) = agentmsg.Msg.from_json(out).blocks("tool_use")
    assert call.metadata["argumentsError"] and call.content and call.content.startswith('{"filename"')
    assert err.startswith(f"{fixture}: the reply ended (max_tokens) with tool call 'make_file'")
    assert err.endswith("[incomplete]\n") and len(err.splitlines()) == 1
    assert main(["parse", "--provider", "anthropic", "--stream", "--events", str(fixture)]) == 3
    (said,) = [orjson.loads(x) for x in jsonl_lines(capsys.readouterr().out) if b"agentmsg.problem" in x.encode()]
    assert said["value"]["toolCallId"] == call.id
    cut_args = '{"city": "Par'
    whole_openai = {
        "id": "c",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [tc(0, "c1", "f", cut_args)]},
                "finish_reason": "length",
            }
        ],
    }
    gem_cut = {"functionCall": {"name": "f", "willContinue": True}}
    gem_more: dict[str, dict[str, Any]] = {
        "functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": True}]}
    }
    gem_more["functionCall"]["willContinue"] = True
    dashscope_msg = {"role": "assistant", "content": "", "tool_calls": [tc(0, "c1", "f", cut_args)]}
    cases = {
        ("openai", "--stream"): sse(
            chunk({"tool_calls": [tc(0, "c1", "f", cut_args[:5])]}),
            chunk({"tool_calls": [tc(0, None, None, cut_args[5:])]}),
            chunk({}, "length"),
        ),
        ("openai", None): orjson.dumps(whole_openai),
        ("openai", "not an object"): sse(chunk({"tool_calls": [tc(0, "c1", "f", "[1]")]}), chunk({}, "tool_calls")),
        ("gemini", "--stream"): b"".join(
            b"data: " + orjson.dumps({"candidates": [cand], "responseId": "g1"}) + b"\n\n"
            for cand in (
                {"content": {"role": "model", "parts": [gem_cut]}, "index": 0},
                {"content": {"role": "model", "parts": [gem_more]}, "index": 0, "finishReason": "MAX_TOKENS"},
            )
        ),
        ("dashscope", "--stream"): b"data:"
        + orjson.dumps(
            {"output": {"choices": [{"message": dashscope_msg, "finish_reason": "length"}]}, "request_id": "r1"}
        )
        + b"\n\n",
    }
    for (provider, flag), body in cases.items():
        path = tmp_path / "reply"
        path.write_bytes(body)
        args = ["parse", "--provider", provider, *([flag] if flag == "--stream" else []), str(path)]
        assert main(args) == 3, (provider, flag)
        out, err = capsys.readouterr()
        (call,) = agentmsg.Msg.from_json(out).blocks("tool_use")
        assert call.metadata["argumentsError"], (provider, flag)
        assert err.endswith("[type]\n" if flag == "not an object" else "[incomplete]\n"), (provider, flag, err)
    # a broken input beside it: 1 (the input was not read whole); a stream cut inside the arguments: 1
    path.write_bytes(cases[("openai", "--stream")].replace(b"data: {", b"data: {not json\n\ndata: {", 1))
    assert main(["parse", "--provider", "openai", "--stream", str(path)]) == 1
    assert "[json]" in capsys.readouterr().err
    path.write_bytes(cases[("openai", "--stream")].rsplit(b"data: {", 1)[0])
    assert main(["parse", "--provider", "openai", "--stream", str(path)]) == 1
    assert capsys.readouterr().err.endswith("[incomplete_stream]\n")


@pytest.mark.parametrize(
    ("provider", "path", "stream"),
    [
        ("openai", "openai/stream_parallel_tool_calls.sse", True),
        ("dashscope-compatible", "dashscope/compat_stream_tool_call.sse", True),
        ("anthropic", "anthropic/stream_thinking_signature.sse", True),
        ("gemini", "gemini/generate_content_function_call.json", False),
        ("dashscope", "dashscope/native_stream_reasoning_tool_call_sdkprint.jsonl", True),
        ("deepseek", "deepseek/chat_completion_reasoner.json", False),
    ],
)
def test_cli_parse(provider: str, path: str, stream: bool) -> None:
    args = ["parse", "--provider", provider, *(["--stream"] if stream else []), str(FIX / path)]
    code, out = run_cli(*args)
    assert code == 0
    (line,) = out.splitlines()
    msg = agentmsg.Msg.from_json(line)
    assert msg.content
    code, out = run_cli(*args, "--events")
    assert code == 0
    events = [orjson.loads(x) for x in jsonl_lines(out)]
    assert reduce_events(events)[0].to_dict()["content"] == msg.to_dict()["content"]


def test_cli_parse_reads_an_sse_body_as_a_stream_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """A stream saved to a file and given without ``--stream`` is SSE all the same: read as a stream (it
    failed as "not valid JSON" at its first byte); a JSON body without the flag is still a response."""
    fixtures = ROOT / "tests" / "fixtures" / "providers"
    for provider, name in (("openai", "openai/stream_parallel_tool_calls.sse"), ("gemini", "gemini/stream_text.sse")):
        path = str(fixtures / name)
        assert main(["parse", "--provider", provider, "--stream", path]) == 0
        streamed = capsys.readouterr().out
        assert main(["parse", "--provider", provider, path]) == 0
        assert strip_time(capsys.readouterr().out) == strip_time(streamed)
    assert main(["parse", "--provider", "openai", str(fixtures / "openai/chat_completion_text.json")]) == 0
    assert agentmsg.Msg.from_json(capsys.readouterr().out).text_content


def strip_time(line: str) -> dict[str, Any]:
    d: dict[str, Any] = orjson.loads(line)
    d.pop("timestamp")
    if d.get("usage"):
        d["usage"].pop("time", None)
    return d


def test_cli_parse_choices_and_cut_stream(tmp_path: Path) -> None:
    code, out = run_cli(
        "parse",
        "--provider",
        "openai",
        "--stream",
        "--choice",
        "all",
        str(FIX / "openai/stream_n3_multiple_choices.sse"),
    )
    assert code == 0 and len(out.splitlines()) == 3
    cut = tmp_path / "cut.sse"
    data = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    code, out = run_cli("parse", "--provider", "openai", "--stream", str(cut))
    assert code == 1 and agentmsg.Msg.from_json(out).generate_reason.value == "INTERRUPTED"
    code, _ = run_cli("parse", "--provider", "openai", "--choice", "5", str(FIX / "openai/chat_completion_text.json"))
    assert code == 2


def test_cli_parse_events_are_the_chosen_choices(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/streams.md shows ``[--events] [--choice N|all]`` together: --events printed every choice's events
    whatever --choice said (choice 2 of a three-choice stream gave all three, a choice the reply has none of
    exited 0). The events of the choice asked for, which reduce to the message --choice prints without --events;
    ``all`` every choice's; a choice there is none of exits 2, as without --events."""
    stream = str(FIX / "openai/stream_n3_multiple_choices.sse")
    for choice, source in (("0", None), ("2", "choice/2")):
        assert main(["parse", "--provider", "openai", "--stream", "--events", "--choice", choice, stream]) == 0
        events = [orjson.loads(line) for line in jsonl_lines(capsys.readouterr().out)]
        assert {e.get("source") for e in events} == {source}
        assert main(["parse", "--provider", "openai", "--stream", "--choice", choice, stream]) == 0
        shown = agentmsg.Msg.from_json(capsys.readouterr().out)
        assert reduce_events(events, source=source)[0].content == shown.content
    assert main(["parse", "--provider", "openai", "--stream", "--events", "--choice", "all", stream]) == 0
    events = [orjson.loads(line) for line in jsonl_lines(capsys.readouterr().out)]
    assert {e.get("source") for e in events} == {None, "choice/1", "choice/2"}
    assert main(["parse", "--provider", "openai", "--stream", "--events", "--choice", "5", stream]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "the reply has no choice 5" in err


def test_parse_cli_reads_streams_incrementally_and_bounds_whole_bodies(tmp_path: Path) -> None:
    """--stream feeds the parser chunk by chunk (a body far larger than one read is reduced whole); a
    non-streamed body over --max-bytes is refused with rule max-bytes instead of being read on."""
    import json as _json

    from tests._support.cli import run as agentmsg

    text = "x" * 50
    chunks = [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    ]
    chunks += [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"'
        + text
        + '"},"finish_reason":null}]}\n\n'
    ] * 4000
    chunks.append(
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    body = tmp_path / "stream.sse"
    body.write_text("".join(chunks))
    assert body.stat().st_size > 4 * 65536  # several reads
    run = agentmsg("parse", "--provider", "openai", "--stream", str(body))
    assert run.returncode == 0, run.stderr
    (msg,) = [_json.loads(line) for line in jsonl_lines(run.stdout)]
    assert msg["content"] == [{"type": "text", "text": text * 4000}]
    assert msg["metadata"]["agentmsg_finish_reason"] == "stop"
    response = tmp_path / "response.json"
    response.write_text(_json.dumps({"id": "x", "padding": "y" * 5000}))
    run = agentmsg("parse", "--provider", "openai", "--max-bytes", "1000", str(response))
    assert run.returncode == 1 and "[max-bytes]" in run.stderr


def test_cli_parse_another_providers_reply_is_said() -> None:
    """A reply of another provider is not read as an empty one that ended well: a whole body is not this
    provider's response (exit 2), nor a stream with no payload of the provider's (exit 2, as --help says of a
    FILE that is no response of that provider at all: it was 1, as for a cut stream)."""
    code, _ = run_cli("parse", "--provider", "anthropic", str(FIX / "openai" / "chat_completion_text.json"))
    assert code == 2
    code, _ = run_cli("parse", "--provider", "openai", str(FIX / "anthropic" / "message_text.json"))
    assert code == 2
    code, _ = run_cli("parse", "--provider", "anthropic", "--stream", str(FIX / "openai" / "stream_finish_length.sse"))
    assert code == 2
    with pytest.raises(agentmsg.ValidationError) as info:
        gemini.parse_response(b'{"a": 1}')
    assert info.value.problems[0].rule == "shape"


def test_cli_parse_a_whole_response_saved_with_its_http_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A response saved with `curl -i` (its HTTP head before the body) is read without --stream too, whole
    or SSE, the head said as left out (exit 0)."""
    body = (FIX / "openai" / "chat_completion_text.json").read_bytes()
    path = tmp_path / "curl_i.json"
    path.write_bytes(b"HTTP/2 200\r\ncontent-type: application/json\r\n\r\n" + body)
    assert main(["parse", "--provider", "openai", str(path)]) == 0
    out, err = capsys.readouterr()
    assert agentmsg.Msg.from_json(out).text_content == openai.parse_response(body).text_content
    assert err == f"{path}: note: the body starts with an HTTP response head ('HTTP/2 200'): left out [not-kept]\n"
    sse_path = tmp_path / "curl_i.sse"
    stream = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    sse_path.write_bytes(b"HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n" + stream)
    assert main(["parse", "--provider", "openai", str(sse_path)]) == 0
    assert agentmsg.Msg.from_json(capsys.readouterr().out).text_content


@pytest.mark.parametrize(("flag", "saved"), [(["--stream"], b""), ([], b""), ([], b"HTTP/1.1 200 OK\r\n\r\n")])
def test_parse_stream_interrupted_prints_what_arrived(flag: list[str], saved: bytes) -> None:
    """Ctrl-C on `producer | agentmsg parse --provider openai --stream -` printed nothing but 'interrupted':
    now the message so far is printed, INTERRUPTED, exit 130 (the stream is read as it arrives). Without
    ``--stream`` a pipe was read whole before anything was parsed, so a Ctrl-C lost all that came: now its first
    line tells a stream (past an HTTP head, ``curl -i``: ``saved``), which is read as it arrives too."""
    from tests._support.procs import interrupted

    body = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    head = body[: body.index(b"\n\n", len(body) // 2) + 2]
    code, out, err = interrupted(["parse", "--provider", "openai", *flag, "-"], saved + head)
    assert code == 130 and err.endswith("agentmsg: interrupted\n") and "Traceback" not in err
    (msg,) = map(json.loads, jsonl_lines(out))
    assert msg["content"][0]["text"] and msg["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


# ---- --think-tags ----------------------------------------------------------------------------------------------

THINK_REPLY = "<think>\nThe user greets me.\n</think>\n\nHello!"


def _kinds(out: str) -> list[tuple[str, str]]:
    return said_texts(agentmsg.Msg.from_json(out).content)


def test_cli_parse_think_tags_whole_and_streamed(tmp_path: Path) -> None:
    """``--think-tags`` reads ``<think>`` text as reasoning in a whole reply and in a stream whose tags are cut."""
    whole = tmp_path / "reply.json"
    whole.write_bytes(orjson.dumps(orjson.loads((FIX / "openai" / "chat_completion_text.json").read_bytes())))
    reply = orjson.loads(whole.read_bytes())
    reply["choices"][0]["message"]["content"] = THINK_REPLY
    whole.write_bytes(orjson.dumps(reply))
    stream = tmp_path / "body.sse"
    cuts = ["<thi", "nk>\nThe user ", "greets me.\n</", "think>\n", "\nHello!"]
    stream.write_bytes(sse(*(chunk({"content": c}) for c in cuts), chunk({}, "stop")))
    want = [("thinking", "The user greets me."), ("text", "Hello!")]
    for path in (whole, stream):
        code, out = run_cli("parse", "--provider", "openai", "--think-tags", str(path))
        assert (code, _kinds(out)) == (0, want), path.name
        code, out = run_cli("parse", "--provider", "openai", str(path))  # not asked: the text as it came
        assert (code, _kinds(out)) == (0, [("text", THINK_REPLY)]), path.name
    code, out = run_cli("parse", "--provider", "openai", "--stream", "--think-tags", str(stream))
    assert (code, _kinds(out)) == (0, want)


def test_cli_parse_think_tags_open_and_exclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "openai" / "compat_think_open_qwq.json"
    code, out = run_cli("parse", "--provider", "openai", "--think-tags-open", str(path))
    assert code == 0 and [kind for kind, _ in _kinds(out)] == ["thinking", "text"]
    capsys.readouterr()
    assert main(["parse", "--provider", "openai", "--think-tags", "--think-tags-open", str(path)]) == 2
    assert "--think-tags-open: not allowed with argument --think-tags" in capsys.readouterr().err


_USER = {"id": "m1", "role": "USER", "content": [{"type": "text", "text": "hi"}], "metadata": {}}
_EVENT = {"type": "TEXT_BLOCK_DELTA", "replyId": "r", "blockId": "b", "delta": "x", "createdAt": "2025-01-01T00:00:00Z"}


def _whole_reply(name: str) -> Path:
    """A whole reply of ``name``'s reader: the smallest recorded in the fixtures folder of that registry name (the
    plainest; not a request, nor an OpenAI-compatible server's ``compat_`` reply kept there)."""
    replies = [path for path in (FIX / name).glob("*.json") if not path.name.startswith(("request_", "compat_"))]
    assert replies, f"no whole reply of {name!r} in {FIX / name}: record one (docs/adding-a-provider.md)"
    return min(replies, key=lambda path: (path.stat().st_size, path.name))


@pytest.mark.parametrize("provider", agentmsg.providers.NAMES)
def test_cli_parse_refuses_what_is_no_reply_of_the_provider_with_the_hint_that_reads_it(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: ``parse --provider anthropic`` read an agentmsg USER message as an Anthropic reply and printed an
    ASSISTANT message, exit 0 (gemini and dashscope read an OpenAI Responses reply so: ``"error": null``, an
    ``output`` list). Every provider refuses an agentmsg message, an agent event and another provider's reply (an
    OpenAI Responses reply too, openai-responses' own): exit 2 (--help: not a response of that provider at all), nothing on stdout, one line on
    stderr with the command or option that reads it."""
    inputs: dict[str, tuple[bytes, str | None]] = {
        "message": (orjson.dumps(_USER), "check it with 'agentmsg validate'"),
        "assistant": (orjson.dumps({**_USER, "role": "ASSISTANT"}), "check it with 'agentmsg validate'"),
        "event": (orjson.dumps(_EVENT), "reduce them with 'agentmsg reduce'"),
        "events": (orjson.dumps([_EVENT, _EVENT]), "reduce them with 'agentmsg reduce'"),
    }
    for names in reader_groups():  # a whole reply of each other reader, with the names that read it
        if provider not in names:
            inputs[names[0]] = (_whole_reply(names[0]).read_bytes(), f"try --provider {'/'.join(names)}")
    for name, (data, hint) in inputs.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        capsys.readouterr()
        code, out = run_cli("parse", "--provider", provider, str(path))
        err = capsys.readouterr().err
        assert (code, out) == (2, ""), (provider, name, code, out)
        assert err.count("\n") == 1 and err.startswith(f"agentmsg: {path}: not "), (provider, name, err)
        if hint is not None:
            assert err.endswith(f"{hint})\n"), (provider, name, err)  # (the names that read it, and no other)
        else:
            assert "try --provider" not in err


def test_cli_parse_of_json_lines_without_stream_says_to_add_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A streamed body saved as JSON lines, given without --stream, is no JSON document: the error says to add
    --stream (the provider's own stream), or which provider's stream it reads as."""
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b'{"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n{"choices": []}\n')
    assert run_cli("parse", "--provider", "openai", str(path)) == (2, "")
    assert "a streamed body? add --stream" in capsys.readouterr().err
    assert run_cli("parse", "--provider", "anthropic", str(path)) == (2, "")
    assert f"try --provider {_OPENAI} with --stream" in capsys.readouterr().err
    assert run_cli("parse", "--provider", "openai", "--stream", str(path))[0] == 1  # (no finish reason: cut)


def test_cli_parse_of_long_json_lines_without_stream_asks_the_readers_about_its_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON lines given without --stream were fed whole to each provider's stream reader that the hint asked: 7
    times the body when none was the provider's (a 16 MB body: 117 MB fed, 3.8 s of CPU against 0.08 s now). The
    readers are asked about its first chunk's whole lines, as about a stream's first chunk; the hints are the
    same."""
    from agentmsg.cli._io import CHUNK, reads_as

    asked: list[bytes] = []

    def counted(provider: str, data: Any, *, stream: bool) -> bool:
        asked.append(data)
        return reads_as(provider, data, stream=stream)

    monkeypatch.setattr("agentmsg.cli.parse.reads_as", counted)
    line = b'{"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n'
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(line * (8 * CHUNK // len(line)))
    for provider, said in [
        ("openai", "a streamed body? add --stream)\n"),
        ("anthropic", f"try --provider {_OPENAI} with --stream)\n"),
    ]:
        asked.clear()
        capsys.readouterr()
        assert run_cli("parse", "--provider", provider, str(path)) == (2, "")
        assert capsys.readouterr().err.endswith(said)
        assert asked and all(len(data) < CHUNK + len(line) and data.endswith(b"\n") for data in asked), [
            len(d) for d in asked
        ]
        assert len(asked) == (1 if provider == "openai" else len(agentmsg.providers.NAMES))  # (its own, each other)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_cli_parse_json_lines_end_at_lf_as_every_reader_ends_them(
    end: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CR alone ends no line of JSON lines for ``agentmsg.read_records`` nor the stream readers (validate and
    reduce read such a body as one document, refused at its second value), but the hint of ``parse`` without
    --stream split it at every CR: it took the body for JSON lines and fed it whole to each stream reader it
    asked (a 16 MB body: 112 MB fed, 7 times all of it) for a hint that none could give. Its lines end at LF, as
    every reader's: such a body is one document to every command, and the hint asks no reader about it; LF and
    CRLF are JSON lines, their hints as before."""
    from agentmsg.cli._io import CHUNK, reads_as

    asked: list[int] = []

    def counted(provider: str, data: Any, *, stream: bool) -> bool:
        asked.append(len(data))
        return reads_as(provider, data, stream=stream)

    monkeypatch.setattr("agentmsg.cli.parse.reads_as", counted)
    line = b'{"choices": [{"index": 0, "delta": {"content": "hi"}}]}'
    path = tmp_path / "chunks.jsonl"
    path.write_bytes((line + end) * (4 * CHUNK // len(line)))
    capsys.readouterr()
    assert run_cli("parse", "--provider", "anthropic", str(path)) == (2, "")
    said = capsys.readouterr().err
    if end == b"\r":
        assert asked == [] and said.endswith("unexpected content after document: line 1 column 57 (char 56) [json]\n")
        for command in ("validate", "reduce"):
            code, out = run_cli(command, str(path))
            assert code == 1 and "unexpected content after document: line 1 column 57" in out + capsys.readouterr().err
    else:
        assert said.endswith(f"try --provider {_OPENAI} with --stream)\n")
        assert len(asked) == len(agentmsg.providers.NAMES) and max(asked) < CHUNK + len(line) + len(end), asked


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b'{"role": "USER", "content": "hi"}', "it looks like an agentmsg message"),
        (b'{"type": "TEXT_BLOCK_DELTA", "delta": "hi"}', "it looks like agent events"),
    ],
)
def test_cli_parse_hint_tells_messages_and_events_whatever_ends_their_lines(
    end: bytes, line: bytes, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lines that a CR alone ends are one document to every reader (no JSON lines: no stream reader is asked
    about them), but their first value still says what the body holds: agentmsg messages or agent events given
    to ``parse`` are told so, as with LF or CRLF. Splitting JSON lines at LF alone lost that hint for them."""
    path = tmp_path / "body.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + end + (line + end) * 3)
    capsys.readouterr()
    assert run_cli("parse", "--provider", "anthropic", str(path)) == (2, "")
    assert f"({said}, not a provider's reply" in capsys.readouterr().err


def test_cli_parse_hint_decodes_a_whole_body_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint after a body that is no reply of the provider asked every other provider's reader, each of which
    decoded the whole body again: 7 decodes of it in all (a 64 MB body with a bad byte at its end: 0.9 s of CPU
    against 0.23 s now). The body is decoded once, and that value is what every reader is asked about; the
    hints say what they said (another provider's reply, saved with `curl -i` too)."""
    from agentmsg._codec.jsontext import loads as decode  # (what every provider's response reader decodes with)

    decoded: list[int] = []

    def counted(data: Any, *args: Any, **kwargs: Any) -> Any:
        decoded.append(len(data))
        return decode(data, *args, **kwargs)

    monkeypatch.setattr("agentmsg.providers._response.parser.json_loads", counted)
    bad = b'{"choices": [{"message": {"content": "' + b"a" * 100_000 + b'\xff"}}]}'
    anthropic = (FIX / "anthropic" / "message_text.json").read_bytes()
    cases = [
        (bad, bad, "not valid JSON: invalid UTF-8 at byte 100038 (invalid start byte) [utf-8]\n"),
        (anthropic, anthropic, "(it reads as an anthropic response: try --provider anthropic)\n"),
        (b"HTTP/2 200\r\ncontent-type: application/json\r\n\r\n" + anthropic, anthropic, "try --provider anthropic)\n"),
    ]
    for data, body, said in cases:
        path = tmp_path / "body.json"
        path.write_bytes(data)
        decoded.clear()
        capsys.readouterr()
        assert main(["parse", "--provider", "openai", str(path)]) == 2
        assert capsys.readouterr().err.endswith(said)
        assert sum(decoded) == len(body), decoded


@pytest.mark.parametrize(
    ("provider", "stream", "hint"),
    [
        ("anthropic", "openai/stream_finish_length.sse", f"try --provider {_OPENAI}"),
        ("openai", "anthropic/stream_docs_basic.sse", "try --provider anthropic"),
        ("gemini", "anthropic/stream_docs_basic.sse", "try --provider anthropic"),
        ("dashscope", "gemini/stream_text.sse", "try --provider gemini"),
        ("openai", "openai-responses/stream_text_after_tool_output.sse", "try --provider openai-responses"),
    ],
)
def test_cli_parse_stream_of_another_provider_exits_2_with_a_hint(
    provider: str, stream: str, hint: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``parse --stream`` of another provider's stream exited 1 (a cut stream), where --help says 2 for a FILE
    that is no response of that provider at all. The problem is said as before, then one line with the provider
    whose stream it reads as; no message is printed (none of it was the provider's)."""
    path = FIX / stream
    for args in (["--stream"], ["--stream", "--events"]):
        capsys.readouterr()
        code, out = run_cli("parse", "--provider", provider, *args, str(path))
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        if "--events" not in args:
            assert out == ""
        last = err.splitlines()[-1]
        assert last.startswith(f"agentmsg: {path}: not ") and " stream" in last
        assert (hint in last) if hint else ("try --provider" not in last), last


def _crossing_the_first_chunk(kind: str) -> bytes:
    """A stream of ``kind`` whose first read (64 KiB with --stream, :data:`CHUNK` without) ends inside a payload:
    many small ones, or a first one longer than a chunk."""
    from agentmsg.cli._io import CHUNK

    if kind == "openai":  # openai's events, a chunk ending inside one
        events = (FIX / "openai" / "stream_finish_length.sse").read_bytes().split(b"\n\n")
        return events[0] + b"\n\n" + (events[1] + b"\n\n") * (3 * CHUNK // len(events[1])) + b"\n\n".join(events[2:])
    if kind == "anthropic":  # its first text delta longer than a chunk
        start, rest = (FIX / "anthropic" / "stream_docs_basic.sse").read_bytes().split(b"event: ping", 1)
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "y" * 2 * CHUNK}}
        return start + b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\nevent: ping" + rest
    line = orjson.dumps(
        {**_EVENT, "delta": "z" * 2 * CHUNK}
        if kind == "events"
        else {"role": "USER", "content": [{"type": "text", "text": "m" * 2 * CHUNK}]}
    )
    return (line + b"\n") * 3


@pytest.mark.parametrize(
    ("kind", "provider", "hint"),
    [
        ("openai", "anthropic", f"(it reads as an openai stream: try --provider {_OPENAI})"),
        ("anthropic", "openai", "(it reads as an anthropic stream: try --provider anthropic)"),
        (
            "events",
            "openai",
            "(it looks like agent events, not a provider's reply: reduce them with 'agentmsg reduce')",
        ),
        (
            "messages",
            "gemini",
            "(it looks like an agentmsg message, not a provider's reply: check it with 'agentmsg validate')",
        ),
    ],
)
def test_cli_parse_stream_hint_reads_the_start_to_a_line_end(
    kind: str, provider: str, hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hint after a stream that is no stream of the provider was asked about the stream's first read as it
    was, which ends where the read ends: inside a payload of a stream longer than a chunk (another provider's
    stream of 780 KB; a first payload longer than a chunk, of another provider, of agent events, of messages),
    read as no stream of anyone's: no hint. It is asked about the start to the end of a line: the hint is the
    one a short stream of the same payloads gets."""
    path = tmp_path / "body.sse"
    path.write_bytes(_crossing_the_first_chunk(kind))
    flags = [["--stream"]] if kind in ("events", "messages") else [["--stream"], []]  # (SSE: told without it)
    for flag in flags:
        capsys.readouterr()
        assert run_cli("parse", "--provider", provider, *flag, str(path)) == (2, ""), flag
        assert capsys.readouterr().err.splitlines()[-1].endswith(hint), flag


def test_cli_parse_reads_an_sse_body_without_the_flag_in_bounded_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An SSE body given without --stream is read whole (under limits.max_bytes), then parsed: it was fed to the
    stream parser in one piece, which made every event of the body at once (a body of 99 MB held 774 MB, where
    --stream holds 44 MB). Now it is fed a chunk at a time: beyond the body itself, little more is held, and the
    message is the one --stream gives."""
    from tests._support.deep import allocated_peak

    piece = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    end = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    body = piece * 20_000 + end + b"\n\ndata: [DONE]\n\n"
    path = tmp_path / "reply.sse"
    path.write_bytes(body)
    capsys.readouterr()
    with allocated_peak() as peak:
        assert main(["parse", "--provider", "openai", str(path)]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["content"] == [{"type": "text", "text": "x" * 20_000}]
    assert peak[0] < 3 * len(body), (peak[0], len(body))  # (fed whole: 7.4 times the body)
    assert main(["parse", "--provider", "openai", "--stream", str(path)]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert {**streamed, "id": None, "timestamp": None} == {**whole, "id": None, "timestamp": None}


def _recorded_stream(path: Path, size: int) -> None:
    """A reply of ``size`` bytes or so in a recorded stream's shape: its first event, its text deltas repeated,
    then its last events (finish, usage, [DONE])."""
    events = [e + b"\n\n" for e in (FIX / "openai" / "stream_text_include_usage.sse").read_bytes().split(b"\n\n")]
    deltas = [e for e in events if b'"content":"' in e and b'"finish_reason":null' in e][1:]
    block = b"".join(deltas)
    path.write_bytes(events[0] + block * (size // len(block)) + b"".join(e for e in events[1:] if e not in deltas))


def _parse_peak(path: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """The peak of memory traced while ``agentmsg parse`` reads ``path`` (saved without --stream)."""
    import tracemalloc

    tracemalloc.start()
    try:
        assert main(["parse", "--provider", "openai", str(path)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert '"role":"ASSISTANT"' in capsys.readouterr().out
    return peak


def test_parse_reads_an_sse_body_saved_without_stream_a_chunk_at_a_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An SSE body given without --stream was read whole, and copied whole again to tell it was not empty
    (``bytes.strip``): parse of a 32 MiB recorded-shape stream peaked at 76 MB traced (99 MB resident), twice the
    file, where --stream held 20. It is now read a chunk at a time as --stream reads it (the same output): the
    peak grows with what the reply keeps, a fraction of the bytes read (~0.25 here), not with the bytes."""
    small, large = tmp_path / "small.sse", tmp_path / "large.sse"
    n = 1 << 20
    _recorded_stream(small, n)
    _recorded_stream(large, 4 * n)
    _parse_peak(small, capsys)  # (imports done before anything is measured)
    grown = _parse_peak(large, capsys) - _parse_peak(small, capsys)
    assert grown < 0.75 * 3 * n, f"{grown / (3 * n):.2f} bytes held per byte read"
