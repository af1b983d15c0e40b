"""Provider parsers on crafted streams whose cost the parser could make super-linear: the work is counted (the
characters a step writes, the calls a step makes), never timed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg.providers import _builder, anthropic, openai


def sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _call(**fn: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function", "function": fn}]})


class _CountedCall(_builder._Call):
    """A call that counts the characters of every name given to it."""

    written = 0

    def __setattr__(self, key: str, value: Any) -> None:
        if key == "name" and isinstance(value, str):
            _CountedCall.written += len(value)
        super().__setattr__(key, value)


@pytest.mark.parametrize("shape", ["growing", "letters"])
def test_a_name_in_many_pieces_is_joined_once(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name split across the fragments before the arguments is every piece joined (as the SDK's accumulator joins
    them); it was joined again at each piece (the pieces so far, or the name so far plus the piece): quadratic in
    the pieces, cubic for a server that sends the name so far growing (a name of 45,150 characters from 300 pieces
    wrote 4.5 million). Now the pieces are joined when the name is read: the characters written stay a small
    multiple of the body."""
    monkeypatch.setattr(_builder, "_Call", _CountedCall)
    if shape == "growing":
        pieces = ["f" * (i + 1) for i in range(300)]
        name = "f" * (300 * 301 // 2)
    else:
        pieces = ["f", *("x" * 5000)]
        name = "f" + "x" * 5000
    body = sse(*(_call(name=p) for p in pieces), _call(arguments="{}"), chunk({}, "tool_calls"))
    _CountedCall.written = 0
    (msg,) = agentmsg.reduce_events(list(openai.parse_stream(body)))
    (call,) = msg.content
    assert call.name == name and call.input == {}
    assert _CountedCall.written <= 2 * len(body), (_CountedCall.written, len(body))


def _anthropic(kind: str, **data: Any) -> bytes:
    return f"event: {kind}\ndata: ".encode() + orjson.dumps({"type": kind, **data}) + b"\n\n"


def test_anthropic_usage_of_many_keys_then_many_events_is_copied_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each message_delta's usage is merged into the counts so far and a copy handed on (converted at the end): the
    copy held every key any event gave, so one usage of 5,000 keys (no count among them) and 5,000 events after it
    copied 25 million keys. Only the counts read are kept now."""
    handed = []
    usage_later = _builder.StreamBuilder.usage_later

    def counted(self: _builder.StreamBuilder, convert: Any, raw: Any, input_key: str) -> None:
        handed.append(len(raw))
        usage_later(self, convert, raw, input_key)

    monkeypatch.setattr(_builder.StreamBuilder, "usage_later", counted)
    n = 5000
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": []}
    body = _anthropic("message_start", message={**message, "usage": {"input_tokens": 7, "output_tokens": 1}})
    body += _anthropic("message_delta", delta={}, usage={f"k{i}": {"n": i} for i in range(n)})
    body += b"".join(_anthropic("message_delta", delta={}, usage={"output_tokens": i}) for i in range(n))
    body += _anthropic("message_delta", delta={"stop_reason": "end_turn"}) + _anthropic("message_stop")
    (msg,) = agentmsg.reduce_events(list(anthropic.parse_stream(body)))
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (7, n - 1)
    assert len(handed) == n + 2 and sum(handed) <= 4 * len(handed), sum(handed)
