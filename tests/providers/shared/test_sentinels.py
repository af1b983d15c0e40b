"""Issue 28, silent rewrites: no value of the wire stands for "none" inside the readers. A tool call id that
starts with U+0000 (or is ``"\\x00"``) was replaced by a minted id, because the stream builder used ``"\\x00"``
as its own "no id" mark. Ids, names and texts are kept as the provider gave them, streamed and whole, for
every provider; an empty id is no id (the rule the SDKs' accumulators read too), and the id minted for it is
marked as such (``metadata.mintedId``), never silent."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg.providers._request.common import MINTED_ID
from tests._support.providers import chunk, ev, gem, reduce_ok, sse

VALUES = ["\x00", "\x00abc", "a\x00"]


def _reply(provider: str, call_id: str, name: str, text: str, whole: bool) -> Any:
    """A reply of one text block ``text`` then one tool call (arguments {"a": 1}) with ``call_id`` and ``name``."""
    args = '{"a": 1}'
    if provider in ("openai", "dashscope"):
        call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        if provider == "openai":
            if whole:
                del call["index"]
                message = {"role": "assistant", "content": text, "tool_calls": [call]}
                return {
                    "id": "c1",
                    "model": "m",
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                }
            return sse(chunk({"content": text}), chunk({"tool_calls": [call]}), chunk({}, "tool_calls"))
        message = {"role": "assistant", "content": text, "tool_calls": [call]}
        body = {"output": {"choices": [{"message": message, "finish_reason": "tool_calls"}]}, "request_id": "q"}
        return body if whole else b"data:" + orjson.dumps(body) + b"\n\n"
    if provider == "anthropic":
        if whole:
            return {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [
                    {"type": "text", "text": text},
                    {"type": "tool_use", "id": call_id, "name": name, "input": {"a": 1}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        return (
            ev("message_start", message={"id": "m1", "model": "c", "role": "assistant", "content": []})
            + ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
            + ev("content_block_delta", index=0, delta={"type": "text_delta", "text": text})
            + ev("content_block_stop", index=0)
            + ev(
                "content_block_start",
                index=1,
                content_block={"type": "tool_use", "id": call_id, "name": name, "input": {}},
            )
            + ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": args})
            + ev("content_block_stop", index=1)
            + ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1})
            + ev("message_stop")
        )
    body = gem({"text": text}, {"functionCall": {"id": call_id, "name": name, "args": {"a": 1}}}, finish="STOP")
    return body if whole else sse(body, done=False)


def _read(provider: str, body: Any, whole: bool) -> tuple[agentmsg.AssistantMessage, list[dict[str, Any]]]:
    module = agentmsg.providers.get(provider)
    events = module.response_events(body) if whole else list(module.parse_stream(body))
    return reduce_ok(events), events


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", ["anthropic", "dashscope", "gemini", "openai"])
def test_ids_names_and_texts_with_nul_are_kept_as_given(provider: str, whole: bool) -> None:
    for value in VALUES:
        msg, events = _read(provider, _reply(provider, value, value, value, whole), whole)
        (call,) = msg.blocks("tool_use")
        assert (call.id, call.name, call.input) == (value, value, {"a": 1}), (value, events)
        assert MINTED_ID not in (call.metadata or {})
        assert msg.text_content == value
        starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
        assert [(e["toolCallId"], e["toolCallName"]) for e in starts] == [(value, value)]


@pytest.mark.parametrize("whole", [False, True], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", ["anthropic", "dashscope", "gemini", "openai"])
def test_an_empty_id_is_no_id_and_the_minted_one_is_marked(provider: str, whole: bool) -> None:
    msg, _ = _read(provider, _reply(provider, "", "f", "hi", whole), whole)
    (call,) = msg.blocks("tool_use")
    assert call.name == "f" and call.id.startswith("call_") and call.id != ""
    assert (call.metadata or {}).get(MINTED_ID) == call.id


def test_a_late_id_that_starts_with_nul_is_the_calls() -> None:
    """(OpenAI's family) an id that comes on a later fragment of a call that had none: the call's, even when it
    starts with U+0000 (the old mark of a call without an id: then taken for none, and minted over)."""
    first = {"index": 0, "type": "function", "function": {"name": "f", "arguments": ""}}
    later = {"index": 0, "id": "\x00late", "function": {"arguments": '{"a": 1}'}}
    body = sse(chunk({"tool_calls": [first]}), chunk({"tool_calls": [later]}), chunk({}, "tool_calls"))
    msg, _ = _read("openai", body, whole=False)
    (call,) = msg.blocks("tool_use")
    assert (call.id, call.input) == ("\x00late", {"a": 1}) and MINTED_ID not in (call.metadata or {})
