"""The openai reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds from
the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests._support.providers import (
    FIXTURES,
    STREAMS,
    comparable,
    ids,
    module,
    parser_for,
    reduce_checked,
    sse_payloads,
)

pytestmark = pytest.mark.oracle

OPENAI_STREAMS = [p for p in STREAMS if parser_for(p) is module("openai")]


@pytest.mark.parametrize("path", OPENAI_STREAMS, ids=ids(OPENAI_STREAMS))
def test_openai_equals_chat_completion_stream_state(path: Path) -> None:
    openai_chat = pytest.importorskip("openai.lib.streaming.chat")
    from openai.types.chat import ChatCompletionChunk

    state = openai_chat.ChatCompletionStreamState()
    for _, chunk in sse_payloads(path.read_bytes()):
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    snapshot = state.current_completion_snapshot.model_dump(mode="json")
    mod = module("openai")
    events = list(mod.parse_stream(path.read_bytes()))
    for choice in snapshot["choices"]:
        i = choice["index"]
        source = None if i == 0 else f"choice/{i}"
        streamed = reduce_checked(events, source=source)
        whole = mod.parse_response(snapshot, choice=i)
        assert comparable(streamed) == comparable(whole)
        # and against the snapshot itself, field by field
        m = choice["message"]
        texts = [b.text for b in streamed.blocks("text")]
        assert texts == [t for t in (m["content"], m.get("refusal")) if t]
        thinking = [b.thinking for b in streamed.blocks("thinking")]
        extra = m.get("reasoning_content")
        assert thinking == ([extra] if extra else [])
        calls = [(b.id, b.name, b.content) for b in streamed.blocks("tool_use")]
        assert calls == [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"] or ()]
    if snapshot.get("usage"):
        u = snapshot["usage"]
        got = reduce_checked(events).usage
        assert got is not None
        assert (got.input_tokens, got.output_tokens) == (u["prompt_tokens"], u["completion_tokens"])


def _annotated_stream(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded search reply as a stream would bring it (its content in pieces, then a delta carrying the
    message's annotations, then the finish reason and the usage): chunks made of the recording's own values."""
    message = body["choices"][0]["message"]
    text = message["content"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    pieces = [text[k : k + 97] for k in range(0, len(text), 97)]
    return [
        chunk({"role": "assistant", "content": ""}),
        *[chunk({"content": p}) for p in pieces],
        chunk({"annotations": message["annotations"]}),
        chunk({}, body["choices"][0]["finish_reason"]),
        {**base, "choices": [], "usage": body["usage"]},  # (stream_options.include_usage)
    ]


def test_openai_annotations_are_kept_as_the_sdk_reads_them() -> None:
    """A search model's URL citations (message.annotations) are the message's (agentmsg_grounding), as the SDK reads
    them: whole (ChatCompletion), and streamed (a delta's annotations, as ChatCompletionStreamState accumulates
    them into its snapshot's message). The text that cites them is the content, unchanged."""
    openai_chat = pytest.importorskip("openai.lib.streaming.chat")
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    path = FIXTURES / "openai" / "chat_completion_web_search_url_citations.json"
    body = orjson.loads(path.read_bytes())
    mod = module("openai")
    whole = mod.parse_response(path.read_bytes())
    sdk = ChatCompletion.model_validate(body).choices[0].message
    expected = [a.model_dump(mode="json", exclude_unset=True) for a in sdk.annotations or ()]
    assert len(expected) == 7
    assert whole.metadata["agentmsg_grounding"] == {"provider": "openai", "annotations": expected}
    assert whole.text_content == sdk.content
    chunks = _annotated_stream(body)
    state = openai_chat.ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    snapshot = state.current_completion_snapshot.choices[0].message
    streamed = reduce_checked(list(mod.parse_stream(b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks))))
    assert streamed.metadata["agentmsg_grounding"]["annotations"] == [
        a.model_dump(mode="json", exclude_unset=True) for a in snapshot.annotations or ()
    ]
    assert comparable(streamed) == comparable(whole)
