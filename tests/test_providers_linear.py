"""Provider parsers on crafted streams whose cost the parser could make super-linear: the work is counted (the
characters a step writes, the calls a step makes), never timed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg.providers import _builder, openai


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
