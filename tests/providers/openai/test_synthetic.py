"""The OpenAI reader on synthetic streams against the official SDK's accumulator (openai
``ChatCompletionStreamState``); tests/providers/openai/test_recorded.py does the same on recorded ones.

Hypothesis builds *valid* streams the way OpenAI-compatible providers vary them (read as openai, deepseek and
dashscope-compatible), and each one is read three ways: the accumulator fed the payloads as dicts (the reference
snapshot); ``reduce_events(parse_stream(body))`` compared with it field by field and with
``parse_response(snapshot)``; the same body cut into random byte chunks and ``agentmsg parse --provider P
--stream FILE --choice all`` (in process): the same messages.

What is varied: text, refusal and reasoning (``reasoning_content`` or ``reasoning``) split anywhere
(multi-byte characters, empty fragments), ``n > 1`` choices interleaved chunk by chunk or batched in one chunk,
a role-only first delta (or none), ``content: null`` and ``reasoning_content: null`` deltas, parallel tool calls
whose fragments interleave by index (id, type and name in a call's first fragment, or the name on its second;
arguments split anywhere; continuation fragments bare or with ``"id": ""``/``null``, ``"name": null``; several
fragments in one delta), the legacy ``function_call``, finish reasons on their own chunk or on the last delta,
usage on a usage-only last chunk with empty ``choices``, on the finish chunk or cumulative on every chunk,
``"usage": null`` on every chunk; SSE written as servers write it (``data: `` or ``data:``, LF or CRLF,
keep-alive comments, compact UTF-8 or ASCII-escaped JSON, with or without ``[DONE]`` and the last blank line).

Where agentmsg deliberately differs from the SDK, the comparison says so where it is made: no empty text blocks;
a call that received no argument text has ``content`` None (the SDK: ``""``); a legacy ``function_call`` has no
id from the provider, so agentmsg derives one."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmsg.providers import get
from tests._support.providers import (
    ARGS_OBJECT,
    COUNT,
    IDENT,
    SETTINGS,
    TEXT,
    TOOL_NAME,
    cli_messages,
    comparable,
    cut_body,
    every_choice,
    json_text,
    module,
    reduce_checked,
    same_with_and_without_routes,
    split,
    sse,
    sse_body,
)

pytestmark = pytest.mark.oracle


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


def no_custom_events(events: list[dict[str, Any]]) -> None:
    assert [e for e in events if e["type"] == "CUSTOM"] == [], "a valid stream reports no error or problem"


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
    reason = "tool_calls" if bool(calls) and draw(st.booleans()) else draw(st.sampled_from(FINISH[:3]))
    if not calls and draw(st.integers(0, 5)) == 0:
        # the legacy functions API: one ``function_call`` (no id, no index), finish reason function_call
        (legacy, *rest) = draw(openai_call(0))
        items.append(({"function_call": dict(legacy["function"])}, None))
        items += [({"function_call": dict(f["function"])}, None) for f in rest]
        reason = draw(st.sampled_from(["function_call", "stop"]))
    if bool(items) and draw(st.booleans()):
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
    # OpenAI's padding on every chunk since 2026 (stream_options.include_obfuscation): a string that changes
    obfuscated = draw(st.booleans())
    usage_where = draw(st.sampled_from(["none", "usage-only chunk", "finish chunk", "every chunk"]))
    chunks: list[dict[str, Any]] = []
    for i, (delta, reason) in draw(interleave(choices)):
        choice = {"index": i, "delta": delta, "logprobs": None, "finish_reason": reason}
        last = chunks[-1]["choices"] if chunks else None
        if last and all(c["index"] != i for c in last) and draw(st.integers(0, 3)) == 0:
            last.append(choice)  # choices of one chunk (a server batching its choices)
        else:
            chunks.append({**head, "choices": [choice], **({"usage": None} if null_usage else {})})
            if obfuscated:
                chunks[-1]["obfuscation"] = draw(st.sampled_from(["", "q", "9aZ"]) | TEXT)
    usage = openai_usage(draw)
    if usage_where == "usage-only chunk":
        chunks.append({**head, "choices": [], "usage": usage})
    elif usage_where == "finish chunk":
        chunks[-1] = {**chunks[-1], "usage": usage}
    elif usage_where == "every chunk":  # cumulative counts on every chunk (some compatible servers)
        for k, c in enumerate(chunks):
            n_out = usage["completion_tokens"] * (k + 1) // len(chunks)
            c["usage"] = {**usage, "completion_tokens": n_out, "total_tokens": usage["prompt_tokens"] + n_out}
    payloads: list[tuple[str | None, Any]] = [(None, c) for c in chunks]
    if draw(st.booleans()):
        payloads.append((None, "[DONE]"))  # most servers end with it; a body may well not
    return chunks, draw(sse_body(payloads))


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


@pytest.mark.fuzz
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


@pytest.mark.differential
@pytest.mark.kernel_only
@pytest.mark.fuzz
@SETTINGS
@given(openai_stream(), st.lists(st.integers(0, 1 << 20), max_size=12))
def test_openai_text_chunks_read_in_c_as_in_python(stream: Any, cuts: list[int]) -> None:
    """The text chunks that repeat the bytes around their text (their ``obfuscation`` aside) are read in C
    (``_speedups.json_string_between``, see ``PayloadReader.route_value``) where it was built: the events are
    those of the Python path (orjson and the reader's ``chunk``), whole and cut into chunks anywhere."""
    from agentmsg.providers._response import parser as _stream

    if _stream._string_between is None:
        pytest.skip("agentmsg._speedups is not built (or AGENTMSG_PURE_PYTHON is set): only the Python path runs")
    _, body = stream
    same_with_and_without_routes(get("openai"), body, cut_body(body, cuts))


def _text_chunk(text: str, obfuscation: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-5",
        "choices": [{"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}],
    }
    if obfuscation is not None:
        chunk["obfuscation"] = obfuscation
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


@pytest.mark.kernel_only
@pytest.mark.parametrize("obfuscation", [None, "", "x7Qe", "\u00e9\\"])
def test_openai_text_chunks_after_the_first_take_the_c_route(obfuscation: str | None) -> None:
    """Each text chunk whose bytes around its text (and its obfuscation) are the last one's is read without
    ``chunk()``; one with another shape (a finish reason) is read by it, and the text is whole either way."""
    from agentmsg.providers._response import parser as _stream

    if _stream._string_between is None:
        pytest.skip("agentmsg._speedups is not built (or AGENTMSG_PURE_PYTHON is set): only the Python path runs")
    texts = ["Hel", "lo", ' "w\u00f6rld"', "\n", "!"]
    pads = [None if obfuscation is None else obfuscation * (k + 1) for k in range(len(texts))]
    body = b"".join(_text_chunk(t, o) for t, o in zip(texts, pads, strict=True))
    body += _text_chunk("", obfuscation).replace(b'"finish_reason":null', b'"finish_reason":"stop"')
    parser = get("openai").stream_parser()
    calls: list[Any] = []
    chunk = parser.reader.chunk

    def counted(event: str, obj: dict[str, Any]) -> None:
        calls.append(obj)
        chunk(event, obj)

    parser.reader.chunk = counted  # type: ignore[method-assign]
    events = [e for piece in body.split(b"\n\n") for e in parser.feed(piece + b"\n\n")] + parser.close()
    assert len(calls) == 2  # the first text chunk (which sets the route) and the last (a finish reason)
    assert calls[0]["choices"][0]["delta"]["content"] == "Hel"
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_BLOCK_DELTA") == "".join(texts)


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
    body = sse(*chunks)
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
    body = sse(*chunks)
    check_openai(chunks, body)
    msg = reduce_checked(list(module("openai").parse_stream(body)))
    assert [(c.id, c.name, c.input) for c in msg.blocks("tool_use")] == [
        ("call_a", "first", {"n": 1}),
        ("call_b", "second", {"n": 2}),
    ]
