"""The decode fast path (agentmsg._codec.fastpath): msgspec types derived from the closed schema. It must exist for
messages, accept no more than the schema, and decode exactly as the detailed path does."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentmsg
from agentmsg import Msg
from agentmsg import message as message_module
from agentmsg._codec.fastpath import FastPath, Unsupported, _python_pattern
from tests.conftest import load_vectors

pytestmark = pytest.mark.differential

FAST = message_module._fast_path()


def test_the_fast_path_is_built_for_messages() -> None:
    assert FAST is not None
    assert "forbid_unknown_fields=True" in FAST.source  # derived from the closed variant


@pytest.mark.parametrize(
    ("pattern", "python"),
    [(r"^[0-9]{4}$", r"^[0-9]{4}\Z"), (r"^[A-Za-z0-9+/]*={0,2}$", r"^[A-Za-z0-9+/]*={0,2}\Z"), (r"a\.b", r"a\.b")],
)
def test_patterns_are_translated_to_the_same_matches(pattern: str, python: str) -> None:
    assert _python_pattern(pattern) == python


@pytest.mark.parametrize("pattern", [r"^\d+$", r"^a.b$", r"^(?=x)y$", r"^a$b$", r"^[^a]$", r"^\w$"])
def test_patterns_outside_the_safe_subset_are_unsupported(pattern: str) -> None:
    with pytest.raises(Unsupported):
        _python_pattern(pattern)


def _cases() -> list[Any]:
    return [pytest.param(c, id=c["id"]) for c in load_vectors("msg.json")["cases"]]


@pytest.mark.parametrize("case", _cases())
def test_every_msg_vector_the_fast_path_takes_it_decodes_as_the_detailed_path(case: dict[str, Any]) -> None:
    assert FAST is not None
    text = json.dumps(case["instance"]).encode()
    fast = FAST.decode(text)
    if fast is None:  # not taken: fine (invalid, unknown keys, or a form it leaves to the detailed path)
        return
    assert case["valid"] and not case.get("unknown_keys"), "the fast path accepted what the closed schema rejects"
    slow = Msg._from_parsed(json.loads(text), strict=True)
    assert fast == slow and type(fast) is type(slow)
    assert fast.to_json_bytes() == slow.to_json_bytes()


def test_the_fast_path_takes_the_common_forms() -> None:
    assert FAST is not None
    for case in load_vectors("msg.json")["cases"]:
        if case["id"].startswith("java-") and case["valid"] and not case.get("unknown_keys"):
            assert FAST.decode(json.dumps(case["instance"])) is not None, case["id"]


def test_a_schema_it_cannot_check_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentmsg._codec.fastpath as fastpath

    def unsupported(*args: Any) -> Any:
        raise Unsupported("a keyword")

    monkeypatch.setattr(fastpath._Builder, "scalar_type", unsupported)
    with pytest.raises(Unsupported):
        FastPath("msg", message_module._BUILD_AS, message_module._BY_ROLE)
    assert agentmsg.Msg.from_json('{"id":"m","role":"USER","content":[]}').id == "m"


def test_rejected_decodes_leave_nothing_behind() -> None:
    """A message msgspec decodes but the converters reject (here a thinking block's metadata ``signature`` that is
    not a string, which only the map check finds) takes the detailed path: again and again, nothing stays behind
    (one shared exception instance kept every raise's traceback and the frames it holds: ~27 blocks a decode)."""
    import gc
    import sys

    data = json.dumps(
        {
            "id": "r",
            "role": "ASSISTANT",
            "content": [{"type": "thinking", "thinking": "x", "metadata": {"signature": 0}}],
            "metadata": {},
        }
    ).encode()
    assert FAST is not None and FAST.decode(data) is None
    for _ in range(10):
        FAST.decode(data)
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(2000):
        FAST.decode(data)
    gc.collect()
    assert sys.getallocatedblocks() - before < 100
