"""The SSE decoder vectors (tests/conformance/sse/*.json), which @agentmsg/client's decoder runs too
(tests/typescript/sse.test.mjs): the same chunks give the same events (data, event, id, retry and the rule of
the problem) in both runtimes. Bytes are also fed split at every byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmsg._sse import SSEDecoder

DIR = Path(__file__).parent / "sse"
CASES = [
    (path.name, case) for path in sorted(DIR.glob("*.json")) for case in json.loads(path.read_text("utf-8"))["cases"]
]


def decode(chunks: list[str | bytes], limits: dict[str, int] | None) -> list[dict[str, Any]]:
    d = SSEDecoder(max_line_bytes=limits["line"], max_event_bytes=limits["event"]) if limits else SSEDecoder()
    events = [e for chunk in chunks for e in d.feed(chunk)] + d.close()
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


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{name}:{case['id']}" for name, case in CASES])
def test_sse_vector(name: str, case: dict[str, Any]) -> None:
    chunks = [c if isinstance(c, str) else bytes.fromhex(c["hex"]) for c in case["chunks"]]
    limits = case.get("limits")
    assert decode(chunks, limits) == case["events"]
    raw = [c for c in chunks if isinstance(c, bytes)]
    if len(raw) == len(chunks):
        whole = b"".join(raw)
        assert decode([whole[i : i + 1] for i in range(len(whole))], limits) == case["events"], "byte by byte"
        for cut in range(len(whole) + 1):
            assert decode([whole[:cut], whole[cut:]], limits) == case["events"], f"split at {cut}"
