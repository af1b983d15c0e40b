"""The SSE vectors (tests/conformance/sse/*.json), which @agentmsg/client runs too (tests/typescript/sse.test.mjs):
the same chunks give the same events (data, event, id, retry and the rule of the problem) in both runtimes'
decoders (bytes are also fed split at every byte), and their encoders write the same text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmsg import ValidationError
from agentmsg._wire.sse import SSEDecoder, encode_event

DIR = Path(__file__).parent / "sse"
DOCS = [(path.name, json.loads(path.read_text("utf-8"))) for path in sorted(DIR.glob("*.json"))]
CASES = [(name, case) for name, doc in DOCS for case in doc.get("cases", [])]
ENCODE = [(name, case) for name, doc in DOCS for case in doc.get("encode", [])]


def decode(
    chunks: list[str | bytes], limits: dict[str, int] | None, retry: list[int | None] | None = None
) -> list[dict[str, Any]]:
    """The events of ``chunks``, as the vectors write them; the decoder's ``retry`` after close() appended to
    ``retry`` when given."""
    d = SSEDecoder(max_line_bytes=limits["line"], max_event_bytes=limits["event"]) if limits else SSEDecoder()
    events = [e for chunk in chunks for e in d.feed(chunk)] + d.close()
    if retry is not None:
        retry.append(d.retry)
    return [
        {
            "data": e.data if isinstance(e.data, str) else e.data.decode(),
            "event": e.event,
            "id": e.id,
            "retry": e.retry,
            "problem": e.problem and e.problem.rule,
        }
        for e in events
    ]


def test_there_are_sse_vectors() -> None:
    assert len(CASES) >= 10
    assert ENCODE


@pytest.mark.parametrize(("name", "case"), ENCODE, ids=[f"{name}:{case['id']}" for name, case in ENCODE])
def test_sse_encoder_vector(name: str, case: dict[str, Any]) -> None:
    assert encode_event(case["data"], **case["options"]) == case["text"]
    (event,) = SSEDecoder().feed(case["text"])
    assert event.data == case["data"].replace("\r\n", "\n").replace("\r", "\n")


REFUSE = [(name, case) for name, doc in DOCS for case in doc.get("refuse", [])]


@pytest.mark.parametrize(("name", "case"), REFUSE, ids=[f"{name}:{case['id']}" for name, case in REFUSE])
def test_sse_encoder_refuses(name: str, case: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="line break"):
        encode_event(case["data"], **case["options"])


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{name}:{case['id']}" for name, case in CASES])
def test_sse_vector(name: str, case: dict[str, Any]) -> None:
    chunks = [c if isinstance(c, str) else bytes.fromhex(c["hex"]) for c in case["chunks"]]
    limits = case.get("limits")
    retry: list[int | None] = []
    assert decode(chunks, limits, retry) == case["events"]
    raw = [c for c in chunks if isinstance(c, bytes)]
    if len(raw) == len(chunks):
        whole = b"".join(raw)
        assert decode([whole[i : i + 1] for i in range(len(whole))], limits, retry) == case["events"], "byte by byte"
        for cut in range(len(whole) + 1):
            assert decode([whole[:cut], whole[cut:]], limits, retry) == case["events"], f"split at {cut}"
    if "lastRetry" in case:
        assert retry == [case["lastRetry"]] * len(retry), "the decoder's retry after close()"
