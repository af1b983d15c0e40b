"""Differential tests of the provider stream parsers against the official SDKs' accumulators, on synthetic
streams (tests/test_providers_stream.py does the same on recorded ones).

Hypothesis builds *valid* streams the way real providers vary them, and each one is read three ways:

* the official accumulator (openai ``ChatCompletionStreamState``, anthropic ``accumulate_event``) fed the
  payloads as dicts: the reference snapshot;
* ``reduce_events(parse_stream(body))``: compared with the snapshot field by field, and with
  ``parse_response(snapshot)`` through the recorded tests' ``comparable``;
* the same body cut into random byte chunks, and ``agentmsg parse --provider P --stream FILE --choice all``
  (in process): the same messages.

What is varied. OpenAI-compatible (read as openai, deepseek and dashscope-compatible): text, refusal and
reasoning (``reasoning_content`` or ``reasoning``) split anywhere (multi-byte characters, empty fragments),
``n > 1`` choices interleaved chunk by chunk or batched in one chunk, a role-only first delta (or none),
``content: null`` and ``reasoning_content: null`` deltas, parallel tool calls whose fragments interleave by
index (id, type and name in a call's first fragment, or the name on its second; arguments split anywhere;
continuation fragments bare or with ``"id": ""``/``null``, ``"name": null``; several fragments in one
delta), the legacy ``function_call``, finish reasons on their own chunk or on the last delta, usage on a
usage-only last chunk with empty ``choices``, on the finish chunk or cumulative on every chunk,
``"usage": null`` on every chunk. Anthropic: thinking (text deltas, then a ``signature_delta``, rarely
two: the last wins), redacted thinking, text (possibly empty), tool_use with ``input_json_delta`` split
anywhere or with empty input (no delta, one empty delta, ``{}``), ``ping`` events anywhere,
``message_delta`` with usage (input counts repeated or not) and every stop reason. Both: SSE written as
servers write it (``data: `` or ``data:``, LF or CRLF, keep-alive comments, compact UTF-8 or ASCII-escaped
JSON, with or without ``[DONE]`` and the last blank line).

Where agentmsg deliberately differs from the SDKs, the comparison says so where it is made: no empty
text blocks; a call that received no argument text has ``content`` None (the SDK: ``""``); a legacy
``function_call`` has no id from the provider, so agentmsg derives one.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import tempfile
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import reduce_events
from agentmsg.providers import get
from tests._support.budget import examples
from tests.test_providers_stream import comparable, module, reduce_checked

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- building blocks ---------------------------------------------------------------------------------

# Any character (surrogates aside): ASCII, accents, CJK, emoji (4 UTF-8 bytes), combining marks, controls,
# quotes and backslashes, U+2028: the text is what JSON and SSE framing must carry whole.
CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])
TEXT = st.one_of(
    st.text(CHARS, max_size=40),
    st.text(st.sampled_from('ab é中😀\n"\\\u0301\u2028'), max_size=30),
)
IDENT = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), min_size=1, max_size=12
)
TOOL_NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_-0123456789"), min_size=1, max_size=20)
JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(CHARS, max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(CHARS, max_size=6), inner, max_size=3),
    max_leaves=8,
)
ARGS_OBJECT = st.dictionaries(st.text(CHARS, max_size=8), JSON_VALUE, max_size=4)
COUNT = st.integers(0, 100_000)


@st.composite
def split(draw: st.DrawFn, s: str) -> list[str]:
    """``s`` cut at arbitrary code-point boundaries; repeated cuts give empty fragments."""
    cuts = sorted(draw(st.lists(st.integers(0, len(s)), max_size=min(len(s) + 2, 8))))
    bounds = [0, *cuts, len(s)]
    return [s[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def interleave(draw: st.DrawFn, seqs: list[list[Any]]) -> list[tuple[int, Any]]:
    """The items of every sequence, each kept in order, interleaved at random; sequence i starts only after
    sequence i - 1 has started (as providers introduce choices and tool calls: in index order)."""
    pos = [0] * len(seqs)
    out: list[tuple[int, Any]] = []
    while True:
        ready = [i for i, s in enumerate(seqs) if pos[i] < len(s) and (i == 0 or pos[i - 1] > 0 or not seqs[i - 1])]
        if not ready:
            return out
        i = ready[draw(st.integers(0, len(ready) - 1))]
        out.append((i, seqs[i][pos[i]]))
        pos[i] += 1


@st.composite
def json_text(draw: st.DrawFn, value: Any) -> str:
    """A JSON value as a provider might write it: compact UTF-8, or Python's spaced, ASCII-escaped form."""
    if draw(st.booleans()):
        return orjson.dumps(value).decode()
    return json.dumps(value)


def cut_body(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def same_message(msg: agentmsg.Msg) -> dict[str, Any]:
    """A message for comparing two parses of one body: everything but the time it was read."""
    d = msg.to_dict()
    d.pop("timestamp", None)
    if d.get("usage"):
        d["usage"] = {k: v for k, v in d["usage"].items() if k != "time"}
    return d


def every_choice(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message of every choice, in index order (choice i > 0 under ``source: choice/i``)."""
    sources = sorted({e.get("source") or "" for e in events}, key=lambda s: int(s.rsplit("/", 1)[1]) if s else -1)
    return [same_message(m) for s in sources for m in reduce_events(events, source=s or None)]


def cli_messages(provider: str, data: bytes) -> list[dict[str, Any]]:
    """``agentmsg parse --provider P --stream FILE --choice all``, in process: one message per choice."""
    from agentmsg.cli import main

    fd, path = tempfile.mkstemp(suffix=".sse")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["parse", "--provider", provider, "--stream", "--choice", "all", path])
    finally:
        os.unlink(path)
    assert code == 0, out.getvalue()
    return [same_message(agentmsg.Msg.from_json(line)) for line in out.getvalue().split("\n") if line]


def no_custom_events(events: list[dict[str, Any]]) -> None:
    assert [e for e in events if e["type"] == "CUSTOM"] == [], "a valid stream reports no error or problem"


# ---- OpenAI Chat Completions (and the compatible family) -----------------------------------------------

FINISH = ["stop", "length", "content_filter", "tool_calls"]


@st.composite
def openai_call(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One tool call's fragments: id, type and name in the first only (its ``arguments`` key may be left
    out), or the name (or the id) on the second; the arguments split anywhere; later fragments may carry
    ``"id": ""`` / ``null`` and ``"name": null`` as some compatible servers do."""
    args = draw(st.one_of(json_text(draw(ARGS_OBJECT)), st.sampled_from(["{}", ""])))
    pieces = draw(split(args))
    first: dict[str, Any] = {"index": index, "id": f"call_{index}_{draw(IDENT)}", "type": "function"}
    first["function"] = {"name": draw(TOOL_NAME)}  # the id is unique in a choice
    if pieces[0] or draw(st.booleans()):
        first["function"]["arguments"] = pieces[0]
    rest = []
    style = draw(st.sampled_from(["bare", "empty id", "null fields", "name later", "id later"]))
    for p in pieces[1:]:
        fragment: dict[str, Any] = {"index": index, "function": {"arguments": p}}
        if style == "empty id":
            fragment["id"] = ""
        elif style == "null fields":
            fragment["id"] = None  # ("type": null would break the SDK, which takes a type as is)
            fragment["function"]["name"] = None
        rest.append(fragment)
    if style == "name later":  # the id first, the name on the next fragment (the SDK merges them)
        if not rest:
            rest.append({"index": index, "function": {}})
        rest[0]["function"]["name"] = first["function"].pop("name")
    if style == "id later":  # the name first, the id on the next fragment (the SDK merges them)
        if not rest:
            rest.append({"index": index, "function": {}})
        rest[0]["id"] = first.pop("id")
    return [first, *rest]


@st.composite
def openai_choice(draw: st.DrawFn, reasoning_key: str) -> list[tuple[dict[str, Any], str | None]]:
    """One choice's (delta, finish_reason) items, in order."""
    reasoning = draw(st.one_of(st.just(""), TEXT))
    content = draw(TEXT)
    refusal = draw(st.one_of(st.just(""), st.just(""), TEXT))
    calls = [draw(openai_call(j)) for j in range(draw(st.integers(0, 3)))]
    items: list[tuple[dict[str, Any], str | None]] = []
    first = draw(
        st.sampled_from(
            [
                None,
                {"role": "assistant"},
                {"role": "assistant", "content": ""},
                {"role": "assistant", "content": None, "refusal": None},
            ]
        )
    )
    if first is not None:
        items.append((first, None))
    for piece in draw(split(reasoning)) if reasoning else ():
        delta: dict[str, Any] = {reasoning_key: piece}
        if draw(st.booleans()):
            delta["content"] = None  # DeepSeek: content null while it reasons
        items.append((delta, None))
    # A refusal comes after any content (a model answers or refuses; a whole reply lists content, then
    # refusal, and agentmsg keeps text blocks in the order they started).
    for key, value in (("content", content), ("refusal", refusal)):
        for piece in draw(split(value)) if value else ():
            delta = {key: piece}
            if draw(st.integers(0, 3)) == 0:
                delta[reasoning_key] = None  # DeepSeek: reasoning_content null once the answer starts
            items.append((delta, None))
    fragments = draw(interleave(calls))
    while fragments:
        take = draw(st.integers(1, min(3, len(fragments))))  # several fragments may share one delta
        delta = {"tool_calls": [f for _, f in fragments[:take]]}
        if draw(st.booleans()):
            delta["content"] = None
        items.append((delta, None))
        fragments = fragments[take:]
    reason = "tool_calls" if calls and draw(st.booleans()) else draw(st.sampled_from(FINISH[:3]))
    if not calls and draw(st.integers(0, 5)) == 0:
        # the legacy functions API: one ``function_call`` (no id, no index), finish reason function_call
        (first, *rest) = draw(openai_call(0))
        items.append(({"function_call": dict(first["function"])}, None))
        items += [({"function_call": dict(f["function"])}, None) for f in rest]
        reason = draw(st.sampled_from(["function_call", "stop"]))
    if items and draw(st.booleans()):
        items[-1] = (items[-1][0], reason)  # the finish reason on the last delta
    else:
        items.append(({}, reason))
    return items


def openai_usage(draw: st.DrawFn) -> dict[str, Any]:
    prompt, completion = draw(COUNT), draw(COUNT)
    u: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if draw(st.booleans()):
        u["prompt_tokens_details"] = {"cached_tokens": draw(st.integers(0, prompt)), "audio_tokens": 0}
        u["completion_tokens_details"] = {"reasoning_tokens": draw(st.integers(0, completion))}
    return u


@st.composite
def openai_stream(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bytes]:
    """A Chat Completions stream: its chunks (for the SDK) and its SSE body (for agentmsg)."""
    reasoning_key = draw(st.sampled_from(["reasoning_content", "reasoning"]))
    n = draw(st.integers(1, 3))
    choices = [draw(openai_choice(reasoning_key)) for _ in range(n)]
    head = {
        "id": "chatcmpl-" + draw(IDENT),
        "object": "chat.completion.chunk",
        "created": 1727346170,
        "model": draw(st.sampled_from(["gpt-4o-2024-08-06", "deepseek-reasoner", "qwen-plus"])),
    }
    if draw(st.booleans()):
        head["system_fingerprint"] = "fp_b40fb1c6fb"
    null_usage = draw(st.booleans())  # stream_options.include_usage: "usage": null until the last chunk
    usage_where = draw(st.sampled_from(["none", "usage-only chunk", "finish chunk", "every chunk"]))
    chunks: list[dict[str, Any]] = []
    for i, (delta, reason) in draw(interleave(choices)):
        choice = {"index": i, "delta": delta, "logprobs": None, "finish_reason": reason}
        last = chunks[-1]["choices"] if chunks else None
        if last and all(c["index"] != i for c in last) and draw(st.integers(0, 3)) == 0:
            last.append(choice)  # choices of one chunk (a server batching its choices)
        else:
            chunks.append({**head, "choices": [choice], **({"usage": None} if null_usage else {})})
    usage = openai_usage(draw)
    if usage_where == "usage-only chunk":
        chunks.append({**head, "choices": [], "usage": usage})
    elif usage_where == "finish chunk":
        chunks[-1] = {**chunks[-1], "usage": usage}
    elif usage_where == "every chunk":  # cumulative counts on every chunk (some compatible servers)
        for k, c in enumerate(chunks):
            n_out = usage["completion_tokens"] * (k + 1) // len(chunks)
            c["usage"] = {**usage, "completion_tokens": n_out, "total_tokens": usage["prompt_tokens"] + n_out}
    payloads = [(None, c) for c in chunks]
    if draw(st.booleans()):
        payloads.append((None, "[DONE]"))  # most servers end with it; a body may well not
    return chunks, draw(sse_body(payloads))


@st.composite
def sse_body(draw: st.DrawFn, payloads: list[tuple[str | None, Any]]) -> bytes:
    """SSE as servers write it: ``data: `` or ``data:``, LF or CRLF lines, keep-alive comments, JSON compact
    UTF-8 or ASCII-escaped (``[DONE]`` as is), the last blank line there or not (a saved body)."""
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = draw(st.sampled_from([b"data: ", b"data:"]))
    ascii_json = draw(st.booleans())
    out = []
    for event, payload in payloads:
        if draw(st.integers(0, 7)) == 0:
            out.append(b": keep-alive" + eol + eol)
        text = (
            payload.encode()
            if isinstance(payload, str)
            else json.dumps(payload).encode()
            if ascii_json
            else orjson.dumps(payload)
        )
        head = b"event: " + event.encode() + eol if event else b""
        out.append(head + data + text + eol + eol)
    body = b"".join(out)
    if draw(st.booleans()):
        body = body[: -len(eol)]  # a saved body often lacks the last blank line (not the last line end)
    return body


def openai_snapshot(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    return state.current_completion_snapshot.model_dump(mode="json")  # type: ignore[no-any-return]


def check_openai(chunks: list[dict[str, Any]], body: bytes) -> None:
    pytest.importorskip("openai.lib.streaming.chat", reason="the official openai package is not installed")
    mod = module("openai")
    snapshot = openai_snapshot(chunks)
    events = list(mod.parse_stream(body))
    no_custom_events(events)
    assert sorted({e.get("source") or "" for e in events}) == sorted(
        "" if c["index"] == 0 else f"choice/{c['index']}" for c in snapshot["choices"]
    )
    for choice in snapshot["choices"]:
        i = choice["index"]
        streamed = reduce_checked(events, source=None if i == 0 else f"choice/{i}")
        # the SDK's snapshot read as a whole reply: same blocks, usage, reasons
        assert comparable(streamed) == comparable(mod.parse_response(snapshot, choice=i))
        # and the snapshot field by field
        m = choice["message"]
        # empty text is no block (agentmsg creates no empty text blocks); content first, then the refusal
        texts = [b.text for b in streamed.blocks("text")]
        assert texts == [t for t in (m.get("content"), m.get("refusal")) if t]
        reasoning = m.get("reasoning_content") or m.get("reasoning")
        assert [b.thinking for b in streamed.blocks("thinking")] == ([reasoning] if reasoning else [])
        # A call whose argument fragments were all empty has no raw arguments text (content None, input {}):
        # agentmsg keeps the text the provider sent, and it sent none.
        calls = [(b.id, b.name, b.content or "") for b in streamed.blocks("tool_use")]
        want = [(c["id"], c["function"]["name"], c["function"]["arguments"] or "") for c in m.get("tool_calls") or ()]
        legacy = m.get("function_call")
        if legacy:  # no id from the provider: agentmsg derives one (stable, as for Gemini's calls)
            assert calls[-1][0].startswith("call_")
            want.append((calls[-1][0], legacy["name"], legacy["arguments"] or ""))
        assert calls == want
        fns = [c["function"] for c in m.get("tool_calls") or ()] + ([legacy] if legacy else [])
        for b, fn in zip(streamed.blocks("tool_use"), fns, strict=True):
            args = fn["arguments"] or ""
            assert b.input == (orjson.loads(args) if args else {})
        meta = streamed.to_dict()["metadata"]
        assert meta["agentmsg_finish_reason"] == choice["finish_reason"]
        tool_reason = choice["finish_reason"] in ("tool_calls", "function_call") or (
            choice["finish_reason"] == "stop" and calls
        )
        assert streamed.generate_reason == ("TOOL_CALLS" if tool_reason else "MODEL_STOP")
    u = snapshot.get("usage")
    got = reduce_checked(events).usage
    if u:
        assert got is not None
        assert (got.input_tokens, got.output_tokens) == (u["prompt_tokens"], u["completion_tokens"])
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens")
        assert got.cached_tokens == cached
    else:
        assert got is None


@SETTINGS
@given(
    openai_stream(),
    st.lists(st.integers(0, 1 << 20), max_size=12),
    st.sampled_from(["openai", "deepseek", "dashscope-compatible"]),
)
def test_openai_synthetic_equals_chat_completion_stream_state(stream: Any, cuts: list[int], name: str) -> None:
    chunks, body = stream
    check_openai(chunks, body)
    provider = get(name)  # the compatible variants read the same stream (their reasoning's provenance differs)
    whole = every_choice(list(provider.parse_stream(body)))
    assert every_choice(list(provider.parse_stream(cut_body(body, cuts)))) == whole
    assert cli_messages(name, body) == whole


# ---- Anthropic Messages ----------------------------------------------------------------------------------

STOP = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]
SIGNATURE = st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), min_size=1)


@st.composite
def anthropic_block(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One content block's events: content_block_start, its deltas, content_block_stop."""
    kind = draw(st.sampled_from(["thinking", "redacted_thinking", "text", "text", "tool_use", "tool_use"]))
    deltas: list[dict[str, Any]] = []
    if kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        thinking = draw(TEXT)
        deltas = [{"type": "thinking_delta", "thinking": p} for p in (draw(split(thinking)) if thinking else ())]
        # one signature_delta, as the API sends it; more than one: the last is the signature (as the SDK)
        deltas += [
            {"type": "signature_delta", "signature": s} for s in draw(st.lists(SIGNATURE, min_size=1, max_size=2))
        ]
    elif kind == "redacted_thinking":
        start = {"type": "redacted_thinking", "data": draw(SIGNATURE)}
    elif kind == "text":
        start = {"type": "text", "text": ""}
        text = draw(TEXT)  # may be empty: a text block with no delta
        deltas = [{"type": "text_delta", "text": p} for p in (draw(split(text)) if text else ())]
    else:
        start = {"type": "tool_use", "id": f"toolu_{index}_{draw(IDENT)}", "name": draw(TOOL_NAME), "input": {}}
        args = draw(ARGS_OBJECT)
        # empty input, as the API varies it: no delta, one empty delta, "{}" whole or split
        empty = st.sampled_from([[], [""], ["{}"], ["{", "}"]])
        pieces = draw(split(draw(json_text(args)))) if args else draw(empty)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


@st.composite
def anthropic_stream(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bytes]:
    """A Messages stream: its events (for the SDK) and its SSE body (for agentmsg)."""
    usage: dict[str, Any] = {"input_tokens": draw(COUNT), "output_tokens": draw(st.integers(0, 5))}
    if draw(st.booleans()):
        usage["cache_creation_input_tokens"] = draw(COUNT)
        usage["cache_read_input_tokens"] = draw(COUNT)
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_" + draw(IDENT),
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    events: list[dict[str, Any]] = [start]
    blocks = [draw(anthropic_block(i)) for i in range(draw(st.integers(0, 5)))]
    for block in blocks:  # blocks come one after another, pings anywhere between events
        for e in block:
            if draw(st.integers(0, 5)) == 0:
                events.append({"type": "ping"})
            events.append(e)
    reason = draw(st.sampled_from(STOP))
    final_usage: dict[str, Any] = {"output_tokens": draw(COUNT)}
    if draw(st.booleans()):  # newer API versions repeat the (cumulative) input counts
        final_usage["input_tokens"] = usage["input_tokens"]
        for k in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            if k in usage:
                final_usage[k] = usage[k]
    stop_sequence = "###" if reason == "stop_sequence" else None
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": stop_sequence},
            "usage": final_usage,
        }
    )
    events.append({"type": "message_stop"})
    return events, draw(sse_body([(e["type"], e) for e in events]))


def anthropic_snapshot(events: list[dict[str, Any]]) -> dict[str, Any]:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    bufs: dict[int, bytes] = {}
    for e in events:
        if e["type"] == "ping":
            continue  # the SDK's stream drops pings before accumulating
        snapshot = accumulate_event(event=e, current_snapshot=snapshot, json_bufs=bufs)  # type: ignore[arg-type]
    assert snapshot is not None
    return snapshot.to_dict()  # type: ignore[no-any-return]


def check_anthropic(events: list[dict[str, Any]], body: bytes) -> None:
    pytest.importorskip("anthropic.lib.streaming._messages", reason="the official anthropic package is not installed")
    mod = module("anthropic")
    whole = anthropic_snapshot(events)
    parsed = list(mod.parse_stream(body))
    # a valid stream reports no error or problem; the stop sequence that ended it is said as not kept
    said = [e["value"]["message"] for e in parsed if e["type"] == "CUSTOM"]
    stop_sequence = whole.get("stop_sequence")
    assert said == (
        [
            f"the stop sequence that ended the reply (stop_sequence: {orjson.dumps(stop_sequence).decode()}) is not kept (the message has no place for it)"
        ]
        if stop_sequence
        else []
    )
    streamed = reduce_checked(parsed)
    assert comparable(streamed) == comparable(mod.parse_response(whole))
    # the snapshot's blocks, field by field; agentmsg creates no empty text block (the SDK keeps one)
    theirs = [b for b in whole["content"] if not (b["type"] == "text" and not b["text"])]
    assert [b.type for b in streamed.content] == [
        {"redacted_thinking": "thinking"}.get(b["type"], b["type"]) for b in theirs
    ]
    for ours_b, b in zip(streamed.content, theirs, strict=True):
        if b["type"] == "thinking":
            assert ours_b.thinking == b["thinking"]
            assert agentmsg.thinking_signature(ours_b) == b["signature"]
        elif b["type"] == "redacted_thinking":
            assert ours_b.thinking == ""
            assert ours_b.metadata.get("redacted") is True
            assert ours_b.metadata.get("redactedData") == b["data"]
        elif b["type"] == "text":
            assert ours_b.text == b["text"]
        else:
            assert (ours_b.id, ours_b.name, ours_b.input) == (b["id"], b["name"], b["input"])
            assert "argumentsError" not in ours_b.metadata
    meta = streamed.to_dict()["metadata"]
    assert meta["agentmsg_finish_reason"] == whole["stop_reason"]
    tool_reason = whole["stop_reason"] == "tool_use" or (
        whole["stop_reason"] in ("end_turn", "stop_sequence") and streamed.blocks("tool_use")
    )
    assert streamed.generate_reason == ("TOOL_CALLS" if tool_reason else "MODEL_STOP")
    u = whole["usage"]
    cached = u.get("cache_read_input_tokens")
    total_in = u["input_tokens"] + (u.get("cache_creation_input_tokens") or 0) + (cached or 0)
    got = streamed.usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens) == (total_in, u["output_tokens"])
    assert got.cached_tokens == cached


@SETTINGS
@given(anthropic_stream(), st.lists(st.integers(0, 1 << 20), max_size=12))
def test_anthropic_synthetic_equals_accumulate_event(stream: Any, cuts: list[int]) -> None:
    events, body = stream
    check_anthropic(events, body)
    mod = module("anthropic")
    whole = every_choice(list(mod.parse_stream(body)))
    assert every_choice(list(mod.parse_stream(cut_body(body, cuts)))) == whole
    assert cli_messages("anthropic", body) == whole


@SETTINGS
@given(anthropic_stream(), st.lists(st.integers(0, 1 << 20), max_size=12))
def test_anthropic_text_deltas_read_in_c_as_in_python(stream: Any, cuts: list[int]) -> None:
    """The text deltas in the API's bytes are read in C (``_speedups.json_string_between``, see
    ``BaseStreamParser.route_text``) where it was built: the events are those of the Python path (orjson and
    the parser's ``payload``), whole and cut into chunks anywhere."""
    from agentmsg.providers._response import parser as _stream

    if _stream._string_between is None:
        pytest.skip("agentmsg._speedups is not built (or AGENTMSG_PURE_PYTHON is set): only the Python path runs")
    _, body = stream
    mod = module("anthropic")

    def parse(chunks: bytes | list[bytes]) -> list[dict[str, Any]]:
        n = itertools.count()
        return list(mod.parse_stream(chunks, id_factory=lambda: str(next(n)), clock=lambda: "T"))

    read_in_c = [parse(body), parse(cut_body(body, cuts))]
    saved, _stream._string_between = _stream._string_between, None
    try:
        assert [parse(body), parse(cut_body(body, cuts))] == read_in_c
    finally:
        _stream._string_between = saved


#: Deltas of a type that does not belong to the block: the SDK's accumulator applies a delta only to a block of
#: its kind (it ignores the others), and so does agentmsg, saying so.
MISPLACED = {
    "text": ["input_json_delta", "thinking_delta", "signature_delta"],
    "thinking": ["text_delta", "input_json_delta"],
    "redacted_thinking": ["text_delta", "thinking_delta", "signature_delta", "input_json_delta"],
    "tool_use": ["text_delta", "thinking_delta", "signature_delta"],
}
MISPLACED_DELTA = {
    "text_delta": {"type": "text_delta", "text": "misplaced"},
    "thinking_delta": {"type": "thinking_delta", "thinking": "misplaced"},
    "signature_delta": {"type": "signature_delta", "signature": "MISPLACED"},
    "input_json_delta": {"type": "input_json_delta", "partial_json": '{"misplaced": 1}'},
}


@st.composite
def with_misplaced_deltas(draw: st.DrawFn, events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[Any]]:
    """``events`` with deltas of the wrong type sent to blocks while they are open (between their
    content_block_start and content_block_stop), and the (block index, delta type) pairs sent."""
    out: list[dict[str, Any]] = []
    sent: set[Any] = set()
    open_kinds: dict[int, str] = {}
    for e in events:
        if e["type"] == "content_block_stop":
            open_kinds.pop(e["index"], None)
        out.append(e)
        if e["type"] == "content_block_start":
            open_kinds[e["index"]] = e["content_block"]["type"]
        for index, kind in open_kinds.items():
            if draw(st.integers(0, 3)) == 0:
                dkind = draw(st.sampled_from(MISPLACED[kind]))
                out.append({"type": "content_block_delta", "index": index, "delta": MISPLACED_DELTA[dkind]})
                sent.add((index, dkind))
    return out, sent


@SETTINGS
@given(st.data())
def test_anthropic_deltas_of_another_blocks_type_are_skipped_as_the_sdk_skips_them(data: st.DataObject) -> None:
    """Hand-made streams may send a delta to a block of another type (a ``thinking_delta`` to a text block,
    an ``input_json_delta`` to a thinking block). The SDK's accumulator ignores it. agentmsg made a block of
    the delta's kind at that index: a text block inside a tool call's place, or a call with no name. Now the
    message equals the one without those deltas (itself checked against the SDK above), and the SDK's snapshot
    does too; each (block, delta type) is one problem, rule ``order``."""
    pytest.importorskip("anthropic.lib.streaming._messages", reason="the official anthropic package is not installed")
    clean, _ = data.draw(anthropic_stream())
    events, sent = data.draw(with_misplaced_deltas(clean))
    mod = module("anthropic")
    assert anthropic_snapshot(events) == anthropic_snapshot(clean)
    body = data.draw(sse_body([(e["type"], e) for e in events]))
    parsed = list(mod.parse_stream(body))
    clean_parsed = list(mod.parse_stream(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in clean)))
    assert every_choice(parsed) == every_choice(clean_parsed)
    problems = [e["value"] for e in parsed if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert all(p["rule"] == "order" and p["message"].endswith("skipped (and any more like it)") for p in problems)
    assert sorted(p["message"].split(",")[0] for p in problems) == sorted(
        f"{dkind} for block {index}" for index, dkind in sent
    )


def test_anthropic_deltas_before_start_or_after_stop_are_kept_or_skipped_and_said() -> None:
    """A text or reasoning fragment for a block that did not start, or that has stopped, is kept in a block of
    its own; arguments and signatures there have no call or block to go to and are skipped; all said
    (rule ``order``), once per block, delta type and case. (The SDK raises for a block that did not start,
    and appends to a stopped one.)"""

    def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": d}

    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}}
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        delta(0, {"type": "text_delta", "text": "A"}),
        {"type": "content_block_stop", "index": 0},
        delta(0, {"type": "text_delta", "text": "B"}),
        delta(0, {"type": "text_delta", "text": "C"}),
        delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
        delta(3, {"type": "thinking_delta", "thinking": "T"}),
        delta(4, {"type": "signature_delta", "signature": "S"}),
        delta(5, {"type": "input_json_delta", "partial_json": "{}"}),
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    parsed = list(module("anthropic").parse_stream(body))
    msg = reduce_checked(parsed)
    assert [(b.type, getattr(b, "text", None) or getattr(b, "thinking", None)) for b in msg.content] == [
        ("text", "A"),
        ("text", "BC"),
        ("thinking", "T"),
    ]
    assert msg.generate_reason == "MODEL_STOP"
    assert [(e["value"]["rule"], e["value"]["message"]) for e in parsed if e["type"] == "CUSTOM"] == [
        ("order", "text_delta for block 0 after its content_block_stop: kept in a block of its own"),
        ("order", "input_json_delta for block 0 after its content_block_stop: skipped (and any more like it)"),
        (
            "order",
            "thinking_delta for block 3, which did not start (no content_block_start before it): kept in a block"
            " of its own",
        ),
        (
            "order",
            "signature_delta for block 4, which did not start (no content_block_start before it): skipped (and"
            " any more like it)",
        ),
        (
            "order",
            "input_json_delta for block 5, which did not start (no content_block_start before it): skipped (and"
            " any more like it)",
        ),
    ]


def test_anthropic_signature_is_a_whole_value_the_last_one_wins() -> None:
    """Regression: ``signature_delta`` carries the block's whole signature (the SDK's accumulator sets it,
    a later one replacing an earlier one or the start's). agentmsg appended every signature it saw
    (``"S0" + "AB" + "CD"``); the builder now holds a block's whole signature and sends it once when the
    block ends, also when the stream is cut before ``content_block_stop``."""
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []},
    }
    start["message"].update(stop_reason=None, stop_sequence=None, usage={"input_tokens": 1, "output_tokens": 1})
    thinking = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "a", "signature": "S0"},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "b"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "AB"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "CD"}},
    ]
    end = [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    events = [start, *thinking, *end]
    body = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)
    check_anthropic(events, body)
    (block,) = reduce_checked(list(module("anthropic").parse_stream(body))).content
    assert (block.thinking, agentmsg.thinking_signature(block)) == ("ab", "CD")
    cut = body[: body.index(b"event: content_block_stop")]
    (msg,) = reduce_events(list(module("anthropic").parse_stream(cut)))
    assert [(b.thinking, agentmsg.thinking_signature(b)) for b in msg.content] == [("ab", "CD")]
    assert msg.to_dict()["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_openai_legacy_function_call_is_a_tool_call() -> None:
    """Regression: the deprecated ``functions`` API streams one ``function_call`` (name, then argument
    fragments; no id, no index) and finishes with ``function_call``. agentmsg said TOOL_CALLS but dropped
    the call itself, streamed or whole; it is now a tool call with an id derived from the response id
    (the same for the stream and the whole reply), compared with the SDK's snapshot."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    deltas = [
        ({"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": ""}}, None),
        ({"function_call": {"arguments": '{"city": "Par'}}, None),
        ({"function_call": {"arguments": 'is"}'}}, None),
        ({}, "function_call"),
    ]
    chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": r}]} for d, r in deltas]
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    check_openai(chunks, body)
    mod = module("openai")
    msg = reduce_checked(list(mod.parse_stream(body)))
    (call,) = msg.blocks("tool_use")
    assert (call.name, call.input, msg.generate_reason) == ("get_weather", {"city": "Paris"}, "TOOL_CALLS")
    whole = mod.parse_response(openai_snapshot(chunks))
    assert [(c.id, c.name, c.input) for c in whole.blocks("tool_use")] == [(call.id, call.name, call.input)]


def test_openai_tool_name_after_its_id_keeps_name_and_place() -> None:
    """Regression: a call whose first fragment has its id but not its name (the name comes on a later
    fragment, which the SDK merges by index) started at once with an empty name, and the name was lost.
    A call now starts once it has its name, and calls start in the order they appeared: here call 0 stays
    first although call 1's whole first fragment arrives before call 0's name."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    fragments = [
        {"index": 0, "id": "call_a", "type": "function", "function": {"arguments": ""}},
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "second", "arguments": '{"n": 2}'}},
        {"index": 0, "function": {"name": "first", "arguments": '{"n": 1}'}},
    ]
    deltas: list[tuple[dict[str, Any], str | None]] = [({"tool_calls": [f]}, None) for f in fragments]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": r}]} for d, r in [*deltas, ({}, "tool_calls")]
    ]
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    check_openai(chunks, body)
    msg = reduce_checked(list(module("openai").parse_stream(body)))
    assert [(c.id, c.name, c.input) for c in msg.blocks("tool_use")] == [
        ("call_a", "first", {"n": 1}),
        ("call_b", "second", {"n": 2}),
    ]


def test_anthropic_subclass_reads_every_text_delta_through_payload() -> None:
    """A subclass of the Anthropic parser may read payloads its own way: its text deltas are never read past its
    payload() (the C route of BaseStreamParser.route_text is the plain parser's alone)."""
    from agentmsg.providers import anthropic

    seen: list[str] = []

    class Counting(anthropic.StreamParser):
        def payload(self, event: str, obj: dict[str, Any]) -> None:
            seen.append(obj.get("type", event))
            super().payload(event, obj)

    body = b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n"
        for e in [
            {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in "abc"),
            {"type": "content_block_stop", "index": 0},
            {"type": "message_stop"},
        ]
    )
    parser = Counting()
    events = parser.feed(body) + parser.close()
    assert seen.count("content_block_delta") == 3
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_BLOCK_DELTA") == "abc"
