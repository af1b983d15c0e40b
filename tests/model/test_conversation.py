"""Conversations: ``encode_messages`` and ``decode_messages``."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    UserMessage,
    ValidationError,
    decode_messages,
    encode_messages,
)


@pytest.mark.parametrize(
    ("value", "pointer", "says"),
    [
        ("hello", "", "got str"),  # was written as ["h","e","l","l","o"]
        (b"[]", "", "got bytes"),
        (UserMessage("hi"), "", "got UserMessage"),  # was a bare TypeError: not iterable
        ({"role": "USER", "content": []}, "", "got dict"),
        (3, "", "got int"),
        (
            [UserMessage("hi"), {"role": "USER", "content": []}],
            "/1",
            "got dict (Msg.from_dict reads one)",
        ),  # was written
        ((m for m in [UserMessage("hi"), "hello"]), "/1", "got str"),
    ],
)
def test_encode_messages_takes_only_messages(value: Any, pointer: str, says: str) -> None:
    with pytest.raises(ValidationError) as info:
        encode_messages(value)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == (pointer, "type") and says in problem.message


def test_encode_messages_takes_any_iterable_of_messages() -> None:
    msgs = [UserMessage("hi"), AssistantMessage("hello")]
    assert decode_messages(encode_messages(iter(msgs))) == decode_messages(encode_messages(tuple(msgs))) == msgs
