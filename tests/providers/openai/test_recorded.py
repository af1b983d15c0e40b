"""The openai reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds from
the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.providers import STREAMS, comparable, ids, module, parser_for, reduce_checked, sse_payloads

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
        assert (got.input_tokens, got.output_tokens) == (u["prompt_tokens"], u["completion_tokens"])
