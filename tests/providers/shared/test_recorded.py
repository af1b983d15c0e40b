"""Every recorded reply (tests/fixtures/providers/) through its reader: every emitted event validates against the
event schema, the reducer reports no problem and ``reduce_events(parse_stream(body))`` is a valid message; any
chunking gives the same events; a cut stream says why; trusted and checked reduction agree; recorded pairs of a
streamed and a whole reply have the same shape; the stream reader reads a whole response."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import Reducer, reduce_events
from tests._support.providers import FIXTURES, STREAMS, comparable, ids, parser_for, reduce_checked

RESPONSES = sorted(p for p in FIXTURES.glob("*/*.json") if not p.name.startswith("request_"))  # (a request: not read)


@pytest.mark.parametrize("path", STREAMS, ids=ids(STREAMS))
def test_stream_events_valid_and_reduce(path: Path) -> None:
    events = list(parser_for(path).parse_stream(path.read_bytes()))
    msg = reduce_checked(events)
    assert msg.generate_reason is not None
    if path.name.startswith("stream_error_"):  # a recorded provider error: said in the message, the reply interrupted
        meta = msg.to_dict()["metadata"]
        assert meta["agentscope_generate_reason"] == "INTERRUPTED"
        assert meta["agentmsg_errors"] and [e["name"] for e in events if e["type"] == "CUSTOM"] == ["agentmsg.error"]
        return
    assert msg.content or "refusal" in path.name, "every recorded stream carries content"
    assert msg.to_dict()["metadata"].get("agentscope_generate_reason") != "INTERRUPTED"
    # no error or problem in a recorded stream; data the message has no place for is said (logprobs, the
    # stop_details of a refusal)
    said = [e["name"] for e in events if e["type"] == "CUSTOM"]
    # (and the container of Anthropic's code execution)
    container = path.parent.name == "anthropic" and "code_execution" in path.name
    expected = (
        ["agentmsg.not-kept"] if "logprobs" in path.name or path.name == "stream_sdk_refusal.sse" or container else []
    )
    if path.name == "stream_sdk_incomplete_partial_json.sse":  # a call's arguments cut at max_tokens: said
        expected = ["agentmsg.problem"]
    assert said == expected
    meta = msg.to_dict()["metadata"]
    assert isinstance(meta["agentmsg_finish_reason"], str)
    assert isinstance(meta.get("agentmsg_model", ""), str)  # DashScope native replies name no model
    assert "agentmsg_errors" not in meta


@pytest.mark.parametrize("path", STREAMS + RESPONSES, ids=ids(STREAMS + RESPONSES))
def test_trusted_reduction_gives_the_same_message(path: Path) -> None:
    """The parsers' events are valid by construction (validated above), so their consumers reduce them with
    ``trusted=True`` (no per-event schema check, the message built through the codec's fast path): the
    messages are those of the general path, byte for byte, whole and cut."""
    mod = parser_for(path)
    data = path.read_bytes()
    if path.suffix == ".json":
        bodies = [list(mod.response_events(data))]
    else:
        bodies = [list(mod.parse_stream(data)), list(mod.parse_stream(data[: len(data) // 2]))]
    for events in bodies:
        sources = sorted({e.get("source") or "" for e in events})
        for source in sources:
            general, trusted = Reducer(source=source or None), Reducer(source=source or None)
            general.feed_many(events)
            trusted.feed_many(events, trusted=True)
            assert [m.to_json_bytes() for m in trusted.finish()] == [m.to_json_bytes() for m in general.finish()]
            assert trusted.problems == general.problems == []


@pytest.mark.parametrize("path", STREAMS, ids=ids(STREAMS))
def test_a_cut_stream_says_why_in_the_message(path: Path) -> None:
    """Round-2 rule 3: the error event of a stream cut short reaches the message (agentmsg_errors), with
    everything received before the cut."""
    data = path.read_bytes()
    mod = parser_for(path)
    cut = data[: len(data) * 2 // 3]
    cut = cut[: cut.rfind(b"\n")]
    (msg,) = reduce_events(list(mod.parse_stream(cut)))
    meta = msg.to_dict()["metadata"]
    assert meta["agentscope_generate_reason"] == "INTERRUPTED"
    if path.name.startswith("stream_error_"):  # (the provider's error came before the cut: said first)
        assert [e["type"] for e in meta["agentmsg_errors"]][-1:] == ["insufficient_quota"]
        return
    assert [e["type"] for e in meta["agentmsg_errors"]] == ["incomplete_stream"]
    assert meta["agentmsg_stop_reason"] == meta["agentmsg_errors"][0]["type"]  # (its message is the error's alone)


@pytest.mark.parametrize("path", STREAMS, ids=ids(STREAMS))
@pytest.mark.parametrize("size", [1, 7, 64])
def test_stream_any_chunking_same_events(path: Path, size: int) -> None:
    """Chunks may split anything (a UTF-8 sequence, a CRLF, a JSON value): the same message, of every choice, and
    the same things said."""
    data = path.read_bytes()
    mod = parser_for(path)
    whole_events = list(mod.parse_stream(data))
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    events = list(mod.parse_stream(pieces))
    sources = sorted({e.get("source") for e in whole_events}, key=str)
    assert sources == sorted({e.get("source") for e in events}, key=str)
    for source in sources:
        whole = comparable(reduce_events(whole_events, source=source)[0], minted_ids=True)
        assert comparable(reduce_events(events, source=source)[0], minted_ids=True) == whole
    said = [(e.get("source"), e["name"], e["value"]) for e in events if e["type"] == "CUSTOM"]
    assert said == [(e.get("source"), e["name"], e["value"]) for e in whole_events if e["type"] == "CUSTOM"]


@pytest.mark.parametrize("path", RESPONSES, ids=ids(RESPONSES))
def test_response_parses(path: Path) -> None:
    msg = parser_for(path).parse_response(path.read_bytes())
    agentmsg.validate(msg.to_dict())
    assert msg.role == agentmsg.MsgRole.ASSISTANT
    events = parser_for(path).response_events(path.read_bytes())
    assert comparable(reduce_checked(events)) == comparable(msg)


PAIRS = [
    ("openai/chat_completion_text.json", "openai/stream_text_include_usage.sse"),
    ("openai/chat_completion_parallel_tool_calls.json", "openai/stream_parallel_tool_calls.sse"),
    ("openai/chat_completion_single_tool_call.json", "openai/stream_single_tool_call.sse"),
    ("openai/chat_completion_finish_length.json", "openai/stream_finish_length.sse"),
    ("openai/chat_completion_refusal.json", "openai/stream_refusal.sse"),
    ("anthropic/message_thinking_signature.json", "anthropic/stream_thinking_signature.sse"),
    ("anthropic/message_tool_use_no_args.json", "anthropic/stream_tool_use_no_args.sse"),
    ("anthropic/message_refusal.json", "anthropic/stream_sdk_refusal.sse"),
    ("gemini/generate_content_function_call.json", "gemini/stream_function_call.sse"),
    ("gemini/generate_content_thinking_gemini3.json", "gemini/stream_thinking_gemini3.sse"),
    ("dashscope/compat_chat_completion_tool_call.json", "dashscope/compat_stream_tool_call.sse"),
    ("dashscope/compat_chat_completion_reasoning.json", "dashscope/compat_stream_reasoning.sse"),
]


@pytest.mark.parametrize(("whole", "stream"), PAIRS, ids=[p[1] for p in PAIRS])
def test_recorded_pairs_same_shape(whole: str, stream: str) -> None:
    """Two recordings of the same kind of reply (not the same reply: texts differ): same block kinds,
    tool names and argument keys, thinking signed alike, same generate reason."""
    w, s = FIXTURES / whole, FIXTURES / stream
    a = parser_for(w).parse_response(w.read_bytes())
    b = reduce_events(list(parser_for(s).parse_stream(s.read_bytes())))[0]

    def shape(m: agentmsg.Msg) -> Any:
        return (
            [blk.type for blk in m.content],
            [(c.name, sorted(c.input)) for c in m.blocks("tool_use")],
            [bool(agentmsg.thinking_signature(t)) for t in m.blocks("thinking")],
            m.to_dict()["metadata"].get("agentscope_generate_reason"),
        )

    if "refusal" in whole and "anthropic" in whole:
        assert a.content == b.content == []
    assert shape(a) == shape(b)


@pytest.mark.parametrize(
    ("provider", "usages", "expected"),
    [
        # each chunk's cumulative usage, converted once at the end: each count's last value wins (a usage
        # without the input count keeps the one before: it was lost)
        (
            "gemini",
            [{"promptTokenCount": 5, "candidatesTokenCount": 2}, {"promptTokenCount": 5, "candidatesTokenCount": 9}],
            (5, 9),
        ),
        ("gemini", [{"promptTokenCount": 5, "candidatesTokenCount": 2}, {}], (5, 2)),
        ("gemini", [{"promptTokenCount": 5, "candidatesTokenCount": 2}, {"promptTokenCount": "x"}], (5, 2)),
        ("gemini", [{"promptTokenCount": 5, "candidatesTokenCount": 2}, {"candidatesTokenCount": 7}], (5, 7)),
        ("gemini", [{"candidatesTokenCount": 7}, {"promptTokenCount": -1}], (None, 7)),
        ("dashscope", [{"input_tokens": 4, "output_tokens": 1}, {"input_tokens": 4, "output_tokens": 6}], (4, 6)),
        ("dashscope", [{"input_tokens": 4, "output_tokens": 1}, {"total_tokens": None}], (4, 1)),
        ("dashscope", [{"input_tokens": 4, "output_tokens": 1}, {"prompt_tokens": 3, "completion_tokens": 2}], (3, 2)),
        ("dashscope", [{"input_tokens": 4, "output_tokens": 1}, {"output_tokens": 8}], (4, 8)),
    ],
)
def test_cumulative_usage_the_last_that_says_something_wins(
    provider: str, usages: list[dict[str, Any]], expected: tuple[int | None, int | None]
) -> None:
    chunks = []
    for n, usage in enumerate(usages):
        last = n == len(usages) - 1
        if provider == "gemini":
            cand: dict[str, Any] = {"content": {"parts": [{"text": f"t{n}"}], "role": "model"}, "index": 0}
            if last:
                cand["finishReason"] = "STOP"
            chunk: dict[str, Any] = {"candidates": [cand], "usageMetadata": usage}
        else:
            choice = {"message": {"role": "assistant", "content": f"t{n}"}, "finish_reason": "stop" if last else "null"}
            chunk = {"output": {"choices": [choice]}, "usage": usage, "request_id": "q"}
        chunks.append(b"data: " + orjson.dumps(chunk) + b"\n\n")
    module = importlib.import_module(f"agentmsg.providers.{provider}")
    (msg,) = reduce_events(module.parse_stream(b"".join(chunks)))
    assert msg.text_content == "".join(f"t{n}" for n in range(len(usages)))
    assert msg.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == expected


@pytest.mark.parametrize("path", RESPONSES, ids=ids(RESPONSES))
def test_stream_parser_reads_a_whole_response(path: Path) -> None:
    """A whole (non-streaming) response given to the stream parser (a server or proxy that ignores
    ``stream: true``, a saved response read with ``--stream``) is the message ``parse_response`` makes of it,
    whole or fed one byte at a time, for every provider (Anthropic's stream parser took a whole Messages
    response for another provider's payload: no message, exit 1)."""
    mod = parser_for(path)
    body = path.read_bytes()
    whole = mod.parse_response(body)
    streamed = reduce_checked(list(mod.parse_stream(body)))
    assert comparable(streamed, minted_ids=True) == comparable(whole, minted_ids=True)
    bytewise = reduce_checked(list(mod.parse_stream([body[k : k + 1] for k in range(len(body))])))
    assert comparable(bytewise, minted_ids=True) == comparable(whole, minted_ids=True)


_FINISH_KEYS = ("finish_reason", "stop_reason", "finishReason")


def _pieces(body: bytes, size: int) -> list[bytes]:
    return [body[k : k + size] for k in range(0, len(body), size)]


def _without_finish(value: Any, how: str) -> Any:
    """``value`` with every finish reason of its choices or candidates null (``how``: "null") or gone."""
    if isinstance(value, dict):
        out = {k: _without_finish(v, how) for k, v in value.items() if not (how == "gone" and k in _FINISH_KEYS)}
        if how == "null":
            out.update((k, None) for k in _FINISH_KEYS if k in value)
        return out
    if isinstance(value, list):
        return [_without_finish(v, how) for v in value]
    return value


@pytest.mark.parametrize("how", ["null", "gone"])
@pytest.mark.parametrize("path", RESPONSES, ids=ids(RESPONSES))
def test_a_whole_response_without_a_finish_reason_is_whole_streamed_too(path: Path, how: str) -> None:
    """A whole response whose choices give no finish reason (some compatible servers send none) is whole for
    ``parse_response``, no reason invented; given to the stream parser (compact, JSON lines to the framer, whole and
    byte by byte; pretty-printed, JSON values, whole and in 7-byte pieces) it is the same message, not a stream cut
    before its end (it was INTERRUPTED for OpenAI's family, Gemini and DashScope)."""
    mod = parser_for(path)
    obj = _without_finish(orjson.loads(path.read_bytes()), how)
    whole = mod.parse_response(orjson.dumps(obj))
    assert "agentmsg_stop_reason" not in whole.metadata
    compact, pretty = orjson.dumps(obj), orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"
    for body in (compact, pretty, [compact[k : k + 1] for k in range(len(compact))], _pieces(pretty, 7)):
        streamed = reduce_checked(list(mod.parse_stream(body)))
        if path.parent.name == "gemini":
            # (a Gemini response and a stream's chunk have one shape: one alone without its finishReason may be a
            # stream cut after it, so the stream parser reads it so: cut, said; never a cut taken for whole)
            assert streamed.metadata["agentmsg_stop_reason"] == "incomplete_stream"
            continue
        assert comparable(streamed, minted_ids=True) == comparable(whole, minted_ids=True)


_CUT_ALONE = {
    # a stream's one chunk, alone on its line (a stream cut after it, saved as JSON lines): still a cut stream
    "openai": b'{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n',
    "openai-untyped": b'{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}',
    "anthropic": b'{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"m",'
    b'"content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n',
    # Gemini's stream without alt=sse is a JSON array of responses: one without its finishReason is cut
    "gemini": b'[{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}]}]',
    # a Gemini chunk alone on its line: a whole response has its shape too, but may be a cut stream's first chunk
    "gemini-line": b'{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}]}\n',
    # a DashScope stream's chunk says "null" (a string) where its reply goes on
    "dashscope-null": b'{"output":{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"null"}]}}',
    # two responses one after another: a stream, not a whole response
    "dashscope": b'{"output":{"choices":[{"message":{"role":"assistant","content":"h"}}]}}\n'
    b'{"output":{"choices":[{"message":{"role":"assistant","content":"hi"}}]}}\n',
}


@pytest.mark.parametrize("case", sorted(_CUT_ALONE))
def test_a_streams_payloads_without_their_end_are_still_cut(case: str) -> None:
    """What only a whole response is read as whole: a stream's one chunk alone, a JSON array of one response, two
    responses one after another still end INTERRUPTED without their finish reason (incomplete_stream); so does a
    lone Gemini payload, whose shape a whole response shares, and a DashScope chunk whose finish reason is "null"
    (the recorded JSON lines stream, cut after its first line, ended MODEL_STOP, unsaid)."""
    provider = case.partition("-")[0]
    mod = importlib.import_module(f"agentmsg.providers.{provider}")
    (msg,) = reduce_events(mod.parse_stream(_CUT_ALONE[case]))
    assert msg.metadata.get("agentmsg_stop_reason") == "incomplete_stream", msg.metadata
