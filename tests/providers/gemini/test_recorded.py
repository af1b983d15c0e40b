"""The gemini reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds from
the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import reduce_events
from tests import oracles
from tests._support.providers import FIXTURES, STREAMS, comparable, ids, module, reduce_checked, sse_payloads

GEMINI_STREAMS = [p for p in STREAMS if p.parent.name == "gemini"]


@pytest.mark.oracle
@pytest.mark.parametrize("path", GEMINI_STREAMS, ids=ids(GEMINI_STREAMS))
def test_gemini_chunks_valid_sdk_types_and_merge(path: Path) -> None:
    """google-genai has no stream accumulator: each chunk must validate as a GenerateContentResponse, and
    the stream must equal its parts merged into one response (texts of a kind joined, calls whole; an empty
    answer text part that carries a signature, a stream's last chunk, stays a part of its own, as google-genai's
    chat history replays it). Without google-genai (Python 3.10) the chunks go unchecked and the rest runs."""
    chunks = [p for _, p in sse_payloads(path.read_bytes())]
    if oracles.usable("google.genai"):
        types = oracles.require("google.genai.types")
        for c in chunks:
            types.GenerateContentResponse._from_response(response=c, kwargs={})
    if "partial" in path.name:
        return  # streamed arguments have no whole form to merge into: checked in test_gemini_partial_args
    parts: list[dict[str, Any]] = []
    for c in chunks:
        for cand in c.get("candidates", []):
            for p in cand.get("content", {}).get("parts", []):
                last = parts[-1] if parts else None
                if (
                    "text" in p
                    and last is not None
                    and "text" in last
                    and bool(p.get("thought")) == bool(last.get("thought"))
                    and "thoughtSignature" not in last
                    and not (p["text"] == "" and "thoughtSignature" in p and not p.get("thought"))
                ):
                    last["text"] += p["text"]
                    if "thoughtSignature" in p:
                        last["thoughtSignature"] = p["thoughtSignature"]
                else:
                    parts.append(dict(p))
    last_chunk = chunks[-1]
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": last_chunk.get("usageMetadata"),
        "modelVersion": last_chunk.get("modelVersion"),
        "responseId": last_chunk.get("responseId"),
    }
    mod = module("gemini")
    streamed = reduce_checked(list(mod.parse_stream(path.read_bytes())))
    assert comparable(streamed, minted_ids=True) == comparable(mod.parse_response(body), minted_ids=True)


@pytest.mark.oracle
def test_gemini_partial_args() -> None:
    mod = module("gemini")
    msg = reduce_checked(
        list(mod.parse_stream((FIXTURES / "gemini/stream_function_call_partial_args.sse").read_bytes()))
    )
    calls = msg.blocks("tool_use")
    assert [(c.name, c.input) for c in calls] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    assert agentmsg.tool_call_signature(calls[0]) and not agentmsg.tool_call_signature(calls[1])
    assert len({c.id for c in calls}) == 2
    msg = reduce_checked(
        list(mod.parse_stream((FIXTURES / "gemini/stream_function_call_no_args_partial.sse").read_bytes()))
    )
    assert [(c.name, c.input) for c in msg.blocks("tool_use")] == [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    assert msg.content[0].type == "thinking"


GEMINI_RESPONSES = sorted((FIXTURES / "gemini").glob("generate_content_*.json"))


GEMINI_SSE = sorted((FIXTURES / "gemini").glob("stream_*.sse"))


def _model_turn(msg: agentmsg.Msg) -> list[dict[str, Any]]:
    gemini = module("gemini")
    request = gemini.format_request([agentmsg.UserMessage("q"), msg])
    assert {p.rule for p in request.diagnostics} <= {"tool-use-orphan"}  # nothing moved or dropped
    turn = request.body["contents"][1]
    assert turn["role"] == "model"
    return turn["parts"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", GEMINI_RESPONSES, ids=ids(GEMINI_RESPONSES))
def test_gemini_response_replayed_as_returned(path: Path) -> None:
    """parse_response -> format_request gives back Gemini's parts: a thoughtSignature on an answer part
    (kept by the parser as a signature-only thinking block after it) goes back on that part, not into
    a thought part at the start of the turn. Calls Gemini sent without an id are replayed with the id
    the parser gave them."""
    original = orjson.loads(path.read_bytes())["candidates"][0]["content"]["parts"]
    parts = _model_turn(module("gemini").parse_response(path.read_bytes()))
    for sent, got in zip(parts, original, strict=True):
        if "functionCall" in sent and "id" not in got["functionCall"]:
            sent = {**sent, "functionCall": {k: v for k, v in sent["functionCall"].items() if k != "id"}}
        assert sent == got


@pytest.mark.parametrize("path", GEMINI_SSE, ids=ids(GEMINI_SSE))
def test_gemini_stream_replayed_signatures_in_place(path: Path) -> None:
    """A streamed reply (the signature of the answer comes alone on a last, empty text part): every
    signature Gemini sent is replayed once, the answer's on that empty text part, as it came (not a thought)."""
    data = path.read_bytes()
    sent_sigs = []
    for line in data.decode().splitlines():
        if line.startswith("data: "):
            for cand in orjson.loads(line[6:]).get("candidates", []):
                for part in cand.get("content", {}).get("parts", []):
                    if "thoughtSignature" in part:
                        sent_sigs.append((part["thoughtSignature"], "functionCall" in part))
    parts = _model_turn(reduce_events(list(module("gemini").parse_stream(data)))[0])
    replayed = [(p["thoughtSignature"], "functionCall" in p) for p in parts if "thoughtSignature" in p]
    assert sorted(replayed) == sorted(sent_sigs)
    for p in parts:
        if "thoughtSignature" in p and "functionCall" not in p:
            assert "text" in p and not p.get("thought")
