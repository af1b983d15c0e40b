"""The text routes: a stream's text payloads that repeat the bytes around their text (and around the values that
change and that the reader does not read from them: OpenAI's ``obfuscation``, Gemini's usage counts) are read in C
(``agentmsg._speedups.json_string_between``) with no orjson and no ``chunk()`` call
(``PayloadReader.route_text`` / ``route_value``). The Python path defines the results: every recorded stream,
and recorded streams whose payloads are edited in place (a value of another type or range, a key removed or
added, compact as the providers write), give the same events with the routes as without them, whole and cut
into chunks anywhere."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg.providers._response import parser as _stream
from tests._support.budget import SEED, rounds
from tests._support.mutators import mutate_json, random_cuts
from tests._support.providers import FIXTURES, STREAMS, ids, parser_for, route_events, same_with_and_without_routes

pytestmark = [
    pytest.mark.differential,
    pytest.mark.kernel_only,
    pytest.mark.skipif(
        _stream._string_between is None,
        reason="agentmsg._speedups is not built (or AGENTMSG_PURE_PYTHON is set): only the Python path runs",
    ),
]

SSE_STREAMS = [p for p in STREAMS if p.suffix == ".sse"]

#: Streams whose text, reasoning or tool-call argument chunks take a route: the provider whose values change from
#: one chunk to the next in them (see _varied), and the delta a routed chunk of theirs gives
ROUTED = {
    "openai/stream_text_include_usage.sse": ("openai", "TEXT_BLOCK_DELTA"),
    "openai/stream_parallel_tool_calls.sse": ("openai", "TOOL_CALL_DELTA"),
    "dashscope/compat_stream_reasoning.sse": ("openai", "THINKING_BLOCK_DELTA"),  # (the compatible API)
    "gemini/stream_text.sse": ("gemini", "TEXT_BLOCK_DELTA"),
    "anthropic/stream_sdk_basic.sse": ("anthropic", "TEXT_BLOCK_DELTA"),
    "anthropic/stream_sdk_tool_use.sse": ("anthropic", "TOOL_CALL_DELTA"),
    "anthropic/stream_thinking_signature.sse": ("anthropic", "THINKING_BLOCK_DELTA"),
    "dashscope/native_stream_text_docs.sse": ("dashscope", "TEXT_BLOCK_DELTA"),
    "dashscope/native_stream_thinking_docs.sse": ("dashscope", "THINKING_BLOCK_DELTA"),
    "openai-responses/stream_text_after_tool_output.sse": ("openai-responses", "TEXT_BLOCK_DELTA"),
    "openai-responses/stream_reasoning_commentary_function_call.sse": ("openai-responses", "TOOL_CALL_DELTA"),
    "openai-responses/stream_reasoning_text_openrouter.sse": ("openai-responses", "THINKING_BLOCK_DELTA"),
}

#: The events a routed payload gives
DELTAS = ("TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA")


def same_read(mod: Any, body: bytes, rng: random.Random, label: str) -> None:
    """The routes read ``body``, whole and cut at random, as the Python path reads it whole."""
    cuts = random_cuts(body, rng, most=12) if len(body) > 1 else [body]
    same_with_and_without_routes(mod, body, cuts, label=label)


@pytest.mark.parametrize("path", SSE_STREAMS, ids=ids(SSE_STREAMS))
def test_recorded_streams_read_the_same_with_and_without_routes(path: Path) -> None:
    same_read(parser_for(path), path.read_bytes(), random.Random(f"{SEED}/{path.name}"), path.name)


def _obfuscated(body: bytes, rng: random.Random) -> bytes:
    """An OpenAI stream as OpenAI writes it since 2026: each chunk ends with an ``obfuscation`` string that changes."""
    out = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: {"):
            obj = orjson.loads(line[6:])
            obj["obfuscation"] = "".join(rng.choice('aZ09\\"é') for _ in range(rng.randint(0, 12)))
            line = b"data: " + orjson.dumps(obj)
        out.append(line)
    return b"\n".join(out)


#: The usage counts that grow from one chunk to the next in a provider's streams (the prompt's stays)
COUNTS = {
    "gemini": re.compile(rb'"((?!prompt)\w+TokenCount)":\d+'),
    "dashscope": re.compile(rb'"(output_tokens|total_tokens)":\d+'),
    "openai-responses": re.compile(rb'"(sequence_number)":\d+'),  # (not a count: the events' order)
}


def _recounted(provider: str, body: bytes, rng: random.Random) -> bytes:
    """A stream whose usage counts (but the prompt's) change from one chunk to the next, as they do."""
    return COUNTS[provider].sub(lambda m: b'"%s":%d' % (m.group(1), rng.randint(0, 10**6)), body)


def _repeated(body: bytes, k: int, times: int) -> bytes:
    """``body`` with its ``k``-th event (SSE: up to a blank line) repeated ``times`` times in place."""
    sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
    events = body.split(sep)
    return sep.join(events[:k] + [events[k]] * times + events[k + 1 :])


def _read(mod: Any, body: bytes) -> tuple[int, Counter[str]]:
    """How many payloads of a stream its reader's ``chunk()`` read (the others took a route, or came after the
    end), and how many text, reasoning and argument deltas the stream gave, by type."""
    parser = mod.StreamParser()
    read = 0
    chunk = parser.reader.chunk

    def counting(event: str, obj: dict[str, Any]) -> None:
        nonlocal read
        read += 1
        chunk(event, obj)

    parser.reader.chunk = counting
    events = parser.feed(body) + parser.close()
    return read, Counter(e["type"] for e in events if e["type"] in DELTAS)


def _varied(name: str, body: bytes, rng: random.Random) -> bytes:
    """The values that change from one text chunk to the next in the provider's streams, changed."""
    provider = ROUTED[name][0]
    if provider in ("openai", "openai-responses"):
        body = _obfuscated(body, rng)
    return _recounted(provider, body, rng) if provider in COUNTS else body


@pytest.mark.parametrize("name", list(ROUTED))
def test_a_delta_chunk_repeated_takes_the_route(name: str) -> None:
    """The routes are taken: some text, reasoning or arguments chunk of each stream (the kind ROUTED names), repeated
    20 times with the values that change changed (OpenAI's obfuscation, Gemini's and DashScope's usage counts), is
    read by ``chunk()`` once, its copies in C (a reader that routes nothing of that kind fails here); the events are
    the Python path's."""
    path = next(p for p in SSE_STREAMS if f"{p.parent.name}/{p.name}" == name)
    routed = _routed(name, parser_for(path), path.read_bytes(), ROUTED[name][1])
    assert routed, f"no {ROUTED[name][1]} chunk of {name} took a route"


def _routed(name: str, mod: Any, raw: bytes, kind: str) -> list[int]:
    """The payloads of ``raw`` that, repeated 20 times, take a route giving ``kind`` deltas (and read the same)."""
    rng = random.Random(f"{SEED}/{name}")
    base_read, base = _read(mod, raw)
    sep = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
    routed = []
    for k, event in enumerate(raw.split(sep)):
        if b"data: {" not in event and b"data:{" not in event:
            continue  # (no payload: repeating it reads nothing more either way)
        body = _varied(name, _repeated(raw, k, 20), rng)
        read, deltas = _read(mod, body)
        if read == base_read and deltas[kind] == base[kind] + 19:  # 19 more deltas, and no more chunk() calls
            routed.append(k)
            same_read(mod, body, rng, f"{name}, event {k} repeated")
    return routed


def test_routed_deltas_are_dicts_of_their_own() -> None:
    """A routed delta is written as a copy of its route's event given its own id, time and delta: a caller that
    changes the events it was given (a key set, one added, one removed) changes none of those that come after."""
    from agentmsg.providers import anthropic

    path = FIXTURES / "anthropic/stream_sdk_basic.sse"
    raw = path.read_bytes()
    k = next(i for i, event in enumerate(raw.split(b"\n\n")) if b'"text_delta"' in event)
    body = _repeated(raw, k, 6)
    want = [dict(e) for e in route_events(anthropic, body, routes=False)]
    saved = _stream._string_between
    got: list[dict[str, Any]] = []
    parser = anthropic.StreamParser(id_factory=iter(map(str, range(10**6))).__next__, clock=lambda: "T")
    for piece in body.split(b"\n\n"):
        for e in parser.feed(piece + b"\n\n"):
            got.append(dict(e))
            e["delta"], e["mine"] = "changed", True  # (what a caller may do with an event it was given)
            e.pop("replyId", None)
    got += parser.close()
    assert _stream._string_between is saved
    assert got == want
    assert sum(e["type"] == "TEXT_BLOCK_DELTA" for e in got) >= 6


def test_gemini_thought_chunks_take_the_route() -> None:
    """Gemini's thought summaries (a part ``{"text": ..., "thought": true}``, no signature) take a route as its text
    does: a text stream whose parts are thoughts."""
    name = "gemini/stream_text.sse"
    path = FIXTURES / name
    lines = []
    for line in path.read_bytes().split(b"\n"):
        if line.startswith(b"data: {"):
            obj = orjson.loads(line[6:])
            for part in obj["candidates"][0]["content"]["parts"]:
                if set(part) == {"text"}:
                    part["thought"] = True
            line = b"data: " + orjson.dumps(obj) + b"\r" * line.endswith(b"\r")
        lines.append(line)
    assert _routed(name, parser_for(path), b"\n".join(lines), "THINKING_BLOCK_DELTA")


def _edited(body: bytes, rng: random.Random) -> bytes:
    """``body`` with one or two of its payloads edited (``mutate_json``) and written compact again, so that the
    payloads around them keep their bytes (and their routes); text chunks repeated first, so a route is running
    when the edited payload comes."""
    lines = body.split(b"\n")
    data = [i for i, ln in enumerate(lines) if ln.startswith(b"data:") and ln[5:].strip()[:1] == b"{"]
    for _ in range(rng.choice((1, 2))):
        i = rng.choice(data)
        head = lines[i][: len(lines[i]) - len(lines[i][5:].lstrip())]
        obj = json.loads(lines[i][len(head) :])
        lines[i] = head + json.dumps(mutate_json(obj, rng, add=0.1), ensure_ascii=False, separators=(",", ":")).encode()
    return b"\n".join(lines)


@pytest.mark.fuzz
@pytest.mark.parametrize("name", list(ROUTED))
def test_edited_text_streams_read_the_same_with_and_without_routes(name: str) -> None:
    """A route running when a payload of another shape, or of the route's shape with other values (a count of
    another type, an id changed, a key more or less) comes: that payload and those after it are read as the Python
    path reads them."""
    path = next(p for p in SSE_STREAMS if f"{p.parent.name}/{p.name}" == name)
    mod = parser_for(path)
    rng = random.Random(f"{SEED}/{name}")
    raw = path.read_bytes()
    for round_ in rounds(60, share=1 / len(ROUTED)):
        sep = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
        body = _repeated(raw, rng.randrange(len(raw.split(sep))), rng.randint(1, 8))
        body = _edited(_varied(name, body, rng) if rng.random() < 0.7 else body, rng)
        same_read(mod, body, rng, f"{name} (seed {SEED}, round {round_ + 1})")


@pytest.mark.parametrize("name", list(ROUTED))
def test_the_routes_read_alike_in_the_scan_and_after_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live stream's routed payloads are read in the C scan of its chunks (``SSEScanner``'s ``route``), with no
    event made of them; a scanner that reads no route (a module built before it did) is not taken, and each payload
    is then read after the scan. The same events either way, and as the Python path reads them, a chunk per event
    (as a live stream comes) or cut anywhere."""
    assert _stream._SCAN_ROUTES  # (this module's scanner reads routes)
    path = next(p for p in SSE_STREAMS if f"{p.parent.name}/{p.name}" == name)
    mod, raw = parser_for(path), path.read_bytes()
    sep = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
    body = _varied(name, _repeated(raw, len(raw.split(sep)) // 2, 5), random.Random(f"{SEED}/{name}"))
    events = [e + sep for e in body.split(sep) if e]
    cuts = random_cuts(body, random.Random(f"{SEED}/{name}/cuts"), most=12)
    same_with_and_without_routes(mod, body, events, cuts, label=name)
    monkeypatch.setattr(_stream, "_SCAN_ROUTES", False)
    same_with_and_without_routes(mod, body, events, cuts, label=f"{name}, routes read after the scan")


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
def test_a_routed_usage_is_walked_only_when_not_written_compact(spaced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text route's usage holes (``PayloadReader.usage_holes``): a usage written as Gemini and DashScope write it
    (compact, its keys in order) ends where its bytes written back by orjson end, found by one comparison (walking
    its brackets in Python cost more than the payload's orjson.loads); one written otherwise (a space after each
    colon) is walked. Either way the stream reads as the Python path reads it."""
    from agentmsg.providers._response import reader

    walked: list[int] = []
    value_end = reader.value_end

    def counting(data: bytes, i: int) -> int:
        walked.append(i)
        return value_end(data, i)

    monkeypatch.setattr(reader, "value_end", counting)
    path = FIXTURES / "gemini/stream_text.sse"
    body = _repeated(path.read_bytes(), 0, 4)  # (its first text chunk four times: the route runs)
    if spaced:
        body = re.sub(rb'("\w+TokenCount":)', rb"\1 ", body)  # (a space after each count's colon)
    mod = parser_for(path)
    read, deltas = _read(mod, body)
    assert deltas["TEXT_BLOCK_DELTA"] == 5
    if spaced:
        assert walked  # (its end found by walking its brackets)
    else:
        assert read == 2 and walked == []  # (the first chunk and the last read by chunk(), the three copies routed)
    same_read(mod, body, random.Random(f"{SEED}/spaced{spaced}"), f"usage spaced: {spaced}")


def test_a_strings_end_is_where_the_string_pattern_ends() -> None:
    """``_string_end`` (a route's text, a hole's string) takes the first quote after the opening one when no backslash
    is just before it, with no regular expression; every other string is matched as before (``_STRING``). Both
    give the same end, or -1, for every text of up to seven quotes, backslashes, letters and line ends, at each
    position (an escaped quote, an escaped backslash before a quote, a string that never closes, no string)."""
    import itertools

    from agentmsg.providers._response import reader

    def matched(data: bytes, i: int) -> int:
        m = reader._STRING.match(data, i)
        return m.end() - 1 if m is not None else -1

    for n in range(8):
        for pieces in itertools.product((b'"', b"\\", b"a", b"\n"), repeat=n):
            data = b'"' + b"".join(pieces)
            for i in range(len(data)):
                assert reader._string_end(data, i) == matched(data, i), (data, i)
