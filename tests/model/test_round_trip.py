"""Property tests: decode(encode(m)) == m for generated valid messages, and encoding is byte-stable."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from agentmsg import Msg
from tests._support.budget import examples
from tests._support.valid import messages

pytestmark = pytest.mark.fuzz


@settings(max_examples=examples(100), deadline=None)
@given(messages())
def test_decode_encode_round_trip(m: Msg) -> None:
    encoded = m.to_json_bytes()
    decoded = Msg.from_json(encoded)
    assert decoded == m
    assert type(decoded).__name__ != "Msg"  # role-pinned class
    assert decoded.to_json_bytes() == encoded  # byte-stable
    assert Msg.from_dict(m.to_dict()) == m
