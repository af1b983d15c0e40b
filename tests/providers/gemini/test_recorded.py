"""The gemini reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds from
the same stream (marker ``oracle``)."""

from __future__ import annotations

import base64
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
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    for c in chunks:  # a candidate's grounding: each chunk carries {} but the one that carries it whole
        for cand in c.get("candidates", []):
            for key in ("groundingMetadata", "citationMetadata", "urlContextMetadata"):
                if cand.get(key):
                    candidate[key] = cand[key]
    body = {
        "candidates": [candidate],
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
    # nothing moved or dropped; a reply's grounding (agentmsg_grounding) has no request field: said
    grounding = (
        [("/1/metadata/agentmsg_grounding", "citations-dropped")] if "agentmsg_grounding" in msg.metadata else []
    )
    assert [(p.pointer, p.rule) for p in request.diagnostics if p.rule != "tool-use-orphan"] == grounding
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
    for _, chunk in sse_payloads(data):  # (str.splitlines cut a line at U+2028, raw in a JSON string, and more)
        for cand in chunk.get("candidates", []):
            for part in cand.get("content", {}).get("parts", []):
                if "thoughtSignature" in part:
                    sent_sigs.append((part["thoughtSignature"], "functionCall" in part))
    parts = _model_turn(reduce_events(list(module("gemini").parse_stream(data)))[0])
    replayed = [(p["thoughtSignature"], "functionCall" in p) for p in parts if "thoughtSignature" in p]
    assert sorted(replayed) == sorted(sent_sigs)
    for p in parts:
        if "thoughtSignature" in p and "functionCall" not in p and "executableCode" not in p and "toolCall" not in p:
            assert "text" in p and not p.get("thought")


GROUNDING_KEYS = ("groundingMetadata", "citationMetadata", "urlContextMetadata")
_SDK_FIELD = {
    "groundingMetadata": "grounding_metadata",
    "citationMetadata": "citation_metadata",
    "urlContextMetadata": "url_context_metadata",
}


def _signatures_as_bytes(value: Any) -> Any:
    """``value`` with every thoughtSignature as its bytes: google-genai holds a signature as bytes and writes it back
    in the URL-safe base64 alphabet, the API in the standard one; both read either (the same bytes)."""
    if isinstance(value, dict):
        return {
            k: base64.urlsafe_b64decode(v.replace("+", "-").replace("/", "_") + "=" * (-len(v) % 4))
            if k == "thoughtSignature" and isinstance(v, str)
            else _signatures_as_bytes(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_signatures_as_bytes(v) for v in value]
    return value


@pytest.mark.oracle
@pytest.mark.parametrize("path", GEMINI_RESPONSES + GEMINI_SSE, ids=ids(GEMINI_RESPONSES + GEMINI_SSE))
def test_gemini_grounding_and_server_parts_are_what_google_genai_reads(path: Path) -> None:
    """What the message keeps of a candidate's grounding (agentmsg_grounding) and of the parts Gemini ran itself
    (carriers) is what google-genai reads of the same response, dumped as the API writes it (camelCase, no
    nulls): its GroundingMetadata / CitationMetadata / UrlContextMetadata and its Parts. google-genai has no
    stream accumulator: a stream's grounding is its last chunk's that says something (each chunk before carries
    {}), and its parts are each chunk's."""
    types = oracles.require("google.genai.types")
    if path.suffix == ".json":
        responses = [orjson.loads(path.read_bytes())]
        msg = module("gemini").parse_response(path.read_bytes())
    else:
        responses = [p for _, p in sse_payloads(path.read_bytes())]
        msg = reduce_checked(list(module("gemini").parse_stream(path.read_bytes())))
    expected_grounding: dict[str, Any] = {}
    expected_parts: list[Any] = []
    for response in responses:
        sdk = types.GenerateContentResponse._from_response(response=response, kwargs={})
        for cand in sdk.candidates or []:
            for key in GROUNDING_KEYS:
                value = getattr(cand, _SDK_FIELD[key])
                dumped = value.model_dump(mode="json", by_alias=True, exclude_none=True) if value is not None else None
                if dumped:
                    expected_grounding[key] = dumped
            for part in (cand.content.parts if cand.content else None) or []:
                if part.executable_code or part.code_execution_result or part.tool_call or part.tool_response:
                    expected_parts.append(part.model_dump(mode="json", by_alias=True, exclude_none=True))
    kept = dict(msg.metadata.get("agentmsg_grounding") or {})
    assert kept.pop("provider", "gemini") == "gemini"
    assert kept == expected_grounding
    carried = [b.metadata["providerBlock"] for b in msg.blocks("thinking") if "providerBlock" in (b.metadata or {})]
    assert _signatures_as_bytes(carried) == _signatures_as_bytes(expected_parts)
    # (and the signatures the message keeps are Gemini's own text, not google-genai's re-encoding)
    sent = [
        p.get("thoughtSignature") for r in responses for c in r.get("candidates", []) for p in c["content"]["parts"]
    ]
    assert {p.get("thoughtSignature") for p in carried} <= {*sent, None}


@pytest.mark.oracle
def test_gemini_code_execution_goes_back_as_the_api_took_it() -> None:
    """The recorded code-execution reply, read and formatted for Gemini again, gives the model turn of the request
    that followed it (pydantic-ai's, which the API answered 200: executableCode and codeExecutionResult parts with
    their ids and thought signatures, in their place); the google-genai types accept the body."""
    msg = module("gemini").parse_response((FIXTURES / "gemini/generate_content_code_execution.json").read_bytes())
    followed = orjson.loads((FIXTURES / "gemini/request_replay_code_execution.json").read_bytes())
    question, turn, again = followed["contents"]
    request = oracles.formatted(
        "gemini",
        [agentmsg.UserMessage(question["parts"][0]["text"]), msg, agentmsg.UserMessage(again["parts"][0]["text"])],
    )
    assert request.diagnostics == ()
    # (pydantic-ai sent the signatures in the URL-safe alphabet, as google-genai writes bytes; agentmsg sends Gemini's)
    assert _signatures_as_bytes(request.body["contents"][1]) == _signatures_as_bytes(turn)
