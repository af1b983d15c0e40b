"""The DashScope native reader on synthetic streams against the official ``dashscope`` package (2.x): each chunk read
by its native protocol's ``parse_chunk``, the reply by its aggregate (``_aggregate``, what its stream's final message
is); test_recorded.py reads the recorded streams.

Hypothesis builds *valid* native streams (``incremental_output=true``, as agentmsg's formatter asks, the SDK too):
reasoning (``reasoning_content``) then answer text, each split anywhere (multi-byte characters, empty pieces,
``""`` beside the other field as the API writes it), the finish reason on the last chunk (``"null"`` before, as the
API writes it), cumulative usage on every chunk; SSE as the API writes it (``id:``, ``event:result``,
``:HTTP_STATUS/200``). The body is cut into random byte chunks; agentmsg's message must hold the aggregate's content
and reasoning and the last usage. Tool calls are left out: the SDK's aggregate reads a native call's fragments as
whole snapshots (``_merge_tool_calls``: no ``index``, the last fragment wins), which the recorded stream
``native_stream_reasoning_tool_call_sdkprint.jsonl`` shows the API does not send (its fragments are pieces)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import TextBlock, ThinkingBlock, reduce_events
from agentmsg.providers import get
from tests._support.budget import examples
from tests._support.providers import cut_body

pytestmark = [pytest.mark.fuzz, pytest.mark.oracle]

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)


@st.composite
def streams(draw: Any) -> list[dict[str, Any]]:
    thinking = draw(st.lists(text, max_size=4))
    answer = draw(st.lists(text, min_size=1, max_size=5))
    chunks = [("", t) for t in thinking] + [(a, "") for a in answer]
    out = []
    for n, (content, reasoning) in enumerate(chunks):
        last = n == len(chunks) - 1
        message = {"content": content, "reasoning_content": reasoning, "role": "assistant"}
        choice = {"message": message, "finish_reason": "stop" if last else "null"}
        usage = {"input_tokens": 11, "output_tokens": 1 + n, "total_tokens": 12 + n}
        out.append({"output": {"choices": [choice]}, "usage": usage, "request_id": "req-1"})
    return out


def _sse(payloads: list[dict[str, Any]]) -> bytes:
    return b"".join(
        b"id:%d\nevent:result\n:HTTP_STATUS/200\ndata:" % (n + 1) + orjson.dumps(p) + b"\n\n"
        for n, p in enumerate(payloads)
    )


@settings(max_examples=examples(150), deadline=None)
@given(payloads=streams(), cuts=st.lists(st.integers(1, 4000), max_size=6))
def test_dashscope_synthetic_keeps_what_the_sdks_aggregate_keeps(
    payloads: list[dict[str, Any]], cuts: list[int]
) -> None:
    completions = pytest.importorskip("dashscope.v2.resources.chat.completions")
    from dashscope.v2.types.completions import parse_chunk

    final = completions._aggregate([parse_chunk(p) for p in payloads])
    message = final.choices[0].message
    body = _sse(payloads)
    events = list(get("dashscope").parse_stream(cut_body(body, cuts), incremental=True))
    problems = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert not problems, problems
    (msg,) = reduce_events(events)
    assert "".join(b.text for b in msg.content if type(b) is TextBlock) == (message.content or "")
    assert "".join(b.thinking for b in msg.content if type(b) is ThinkingBlock) == (message.reasoning_content or "")
    assert final.choices[0].finish_reason == "stop" and msg.metadata.get("agentmsg_finish_reason") == "stop"
    assert msg.usage is not None and final.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (final.usage.input_tokens, final.usage.output_tokens)
