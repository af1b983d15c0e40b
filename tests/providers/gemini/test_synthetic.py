"""The Gemini reader on synthetic streams against google-genai (the official SDK); test_recorded.py does the same on
recorded ones.

google-genai has no stream accumulator: a caller of ``models.generate_content_stream`` reads each chunk as a
``GenerateContentResponse`` and keeps the first candidate's parts, as bench/replies.py's ``GeminiAccumulator`` does
(the texts, the thoughts, the function calls with their arguments). Hypothesis builds *valid* streams the way Gemini
varies them: answer text and thought text split anywhere (multi-byte characters, empty parts), a thought signature
on a thought part, on the last answer part or on a function call, function calls whole in one part (with or without
an ``id``), images the model made (``inlineData``), ``thought: false`` said outright, several parts in one chunk,
parts after a call, a chunk with no parts, usage on every chunk or the last, the finish reason on the last chunk;
SSE written as the API writes it. Each chunk must validate as google-genai's ``GenerateContentResponse``;
``reduce_events(parse_stream(body))``, with the body cut into random byte chunks, must keep what google-genai's
caller keeps: the same text, the same thinking, the same calls in order (name and arguments), the same images, and
the signatures Gemini gave. Where agentmsg deliberately differs from the SDK, the comparison says so where it is
made: no empty text blocks; the signatures stay Gemini's base64 text (google-genai holds bytes)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import Base64Source, DataBlock, TextBlock, ThinkingBlock, ToolUseBlock, reduce_events
from agentmsg.providers import get
from tests import oracles
from tests._support.budget import examples
from tests._support.providers import cut_body, one

pytestmark = [pytest.mark.fuzz, pytest.mark.oracle]

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
signature = st.binary(min_size=1, max_size=12).map(lambda b: base64.b64encode(b).decode())
name = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
scalar = st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=6)
args = st.dictionaries(
    st.text(max_size=6), st.recursive(scalar, lambda v: st.lists(v, max_size=3), max_leaves=4), max_size=3
)


@st.composite
def parts(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "thought", "call", "image"]))
    if kind == "image":  # an image the model made (inlineData, base64 in JSON)
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=24))).decode()
        return {"inlineData": {"mimeType": draw(st.sampled_from(["image/png", "image/jpeg"])), "data": data}}
    if kind == "call":
        call: dict[str, Any] = {"name": draw(name), "args": draw(args)}
        if draw(st.booleans()):
            call["id"] = ""  # (made unique per stream below: Gemini's ids are)
        part: dict[str, Any] = {"functionCall": call}
        if draw(st.booleans()):
            part["thoughtSignature"] = draw(signature)
        return part
    part = {"text": draw(text)}
    if kind == "thought":
        part["thought"] = True
    elif draw(st.booleans()):
        part["thought"] = False  # (said outright, as some responses do)
        if draw(st.booleans()):
            part["thoughtSignature"] = draw(signature)
    return part


@st.composite
def streams(draw: Any) -> list[dict[str, Any]]:
    chunks = draw(st.lists(st.lists(parts(), max_size=3), min_size=1, max_size=6))
    if draw(st.booleans()):  # a signature on the last answer part, as Gemini 3 sends one (often an empty text part)
        chunks[-1].append({"text": draw(st.just("") | text), "thoughtSignature": draw(signature)})
    ids = iter(range(10**6))
    for chunk_parts in chunks:
        for part in chunk_parts:
            if part.get("functionCall", {}).get("id") == "":
                part["functionCall"]["id"] = f"fc-{next(ids)}"
    usage_each = draw(st.booleans())
    out = []
    for i, chunk_parts in enumerate(chunks):
        last = i == len(chunks) - 1
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": chunk_parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        payload: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "resp-1"}
        if usage_each or last:
            payload["usageMetadata"] = {"promptTokenCount": 7, "candidatesTokenCount": 3 + i, "totalTokenCount": 10 + i}
        out.append(payload)
    return out


def _kept_by_the_sdks_caller(
    chunks: list[dict[str, Any]],
) -> tuple[str, str, list[tuple[str, Any, Any]], list[str], list[tuple[str, str]]]:
    """What a caller of google-genai's stream keeps: the answer text, the thinking, the calls (name, arguments) and
    the signatures of the first candidate's parts, each chunk read by google-genai (a call: its name, arguments and
    id)."""
    types = oracles.require("google.genai.types")
    answer, thinking, calls, signatures, images = "", "", [], [], []
    for c in chunks:
        response = types.GenerateContentResponse._from_response(response=c, kwargs={})
        content = response.candidates[0].content if response.candidates else None
        for part in (content.parts if content is not None else None) or ():
            if part.thought_signature is not None:
                signatures.append(base64.b64encode(part.thought_signature).decode())
            if part.inline_data is not None:
                images.append((part.inline_data.mime_type, base64.b64encode(part.inline_data.data).decode()))
            if part.function_call is not None:
                call = part.function_call
                calls.append((call.name, dict(call.args or {}), call.id))
            elif part.text is not None:
                if part.thought:
                    thinking += part.text
                else:
                    answer += part.text
    return answer, thinking, calls, signatures, images


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks)


@settings(max_examples=examples(150), deadline=None)
@given(chunks=streams(), cuts=st.lists(st.integers(1, 4000), max_size=6))
def test_gemini_synthetic_keeps_what_google_genai_keeps(chunks: list[dict[str, Any]], cuts: list[int]) -> None:
    if not oracles.usable("google.genai"):
        pytest.skip("google-genai (the oracle) is not installed: it needs Python 3.11+")
    answer, thinking, calls, signatures, images = _kept_by_the_sdks_caller(chunks)
    body = _sse(chunks)
    events = list(get("gemini").parse_stream(cut_body(body, cuts)))
    (msg,) = reduce_events(events)
    problems = [e for e in events if e.get("name") == "agentmsg.problem"]
    assert not problems, problems
    assert "".join(b.text for b in msg.content if type(b) is TextBlock) == answer  # (no empty text blocks)
    assert "".join(b.thinking for b in msg.content if type(b) is ThinkingBlock) == thinking
    # the calls in order, each with Gemini's id, or one minted for it (said in its metadata) where Gemini gave none
    made = [b for b in msg.content if type(b) is ToolUseBlock]
    assert [(b.name, b.input) for b in made] == [(n, a) for n, a, _ in calls]
    for b, (_, _, gemini_id) in zip(made, calls, strict=True):
        minted = (b.metadata or {}).get("agentmsg_minted_id")
        assert (b.id, minted) == ((gemini_id, None) if gemini_id else (b.id, b.id)), (b, gemini_id)
    # the images the model made, in order, as base64 data blocks of their MIME type
    sources = [one(Base64Source, b.source) for b in msg.content if type(b) is DataBlock]
    made_images = [(s.media_type, s.data) for s in sources]
    assert made_images == images
    # Each signature where Gemini put it, in order: a thought part's on its thinking block, a call's beside the call,
    # an answer text part's on an empty thinking block after that text (as Gemini's chat history replays it); kept
    # as Gemini's base64 text (google-genai holds the bytes)
    kept = [
        (b.metadata or {}).get("signature" if type(b) is ThinkingBlock else "thoughtSignature")
        for b in msg.content
        if isinstance(b, (ThinkingBlock, ToolUseBlock))
    ]
    assert [k for k in kept if k is not None] == signatures, (msg, signatures)
