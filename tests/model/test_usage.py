"""A message's usage: the counts AgentScope Java 2.0.0's ChatUsage lacks (cacheCreationInputTokens, reasoningTokens,
unknown keys) are copied into metadata ``_chat_usage``, which Java keeps whole, and restored from it by every
reader (docs/wire-format.md, "Usage beyond AgentScope Java"). tests/conformance/test_java.py runs the same through
AgentScope Java itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentmsg
from agentmsg import AssistantMessage, ChatUsage, Msg

FULL = {
    "inputTokens": 1200,
    "outputTokens": 300,
    "cachedTokens": 1000,
    "time": 2.5,
    "totalTokens": 1500,
    "cacheCreationInputTokens": 150,
    "reasoningTokens": 120,
}
JAVA = {"inputTokens": 1200, "outputTokens": 300, "cachedTokens": 1000, "time": 2.5, "totalTokens": 1500}


def _as_java_writes_it(msg: Msg) -> dict[str, Any]:
    """What AgentScope Java 2.0.0 writes back for ``msg``: usage with its ChatUsage's keys only (a count it was not
    given as 0), metadata maps whole."""
    d = msg.to_dict()
    usage = d["usage"]
    d["usage"] = {
        "inputTokens": usage.get("inputTokens", 0),
        "outputTokens": usage.get("outputTokens", 0),
        "cachedTokens": usage.get("cachedTokens", 0),
        "time": float(usage.get("time", 0)),
        "totalTokens": usage.get("inputTokens", 0) + usage.get("outputTokens", 0),
    }
    return d


def test_the_new_counts_are_declared_fields() -> None:
    usage = ChatUsage(input_tokens=10, output_tokens=4, cache_creation_input_tokens=3, reasoning_tokens=2)
    msg = AssistantMessage("x", usage=usage)
    assert msg.to_dict()["usage"] == {
        "inputTokens": 10,
        "outputTokens": 4,
        "cacheCreationInputTokens": 3,
        "reasoningTokens": 2,
    }
    assert msg.usage is not None and msg.usage.unknown_keys is None
    assert agentmsg.find_unknown_keys(msg) == []


def test_a_usage_beyond_java_is_copied_into_chat_usage() -> None:
    msg = AssistantMessage("x", usage=FULL)
    assert msg.metadata["_chat_usage"] == FULL
    newer = AssistantMessage("x", usage={"inputTokens": 1, "futureTokens": 2})
    assert newer.metadata["_chat_usage"] == {"inputTokens": 1, "futureTokens": 2}
    # Java's own counts need no copy: nothing is added
    assert AssistantMessage("x", usage=JAVA).metadata == {}
    # a changed usage refreshes the copy
    assert msg.copy(usage={**FULL, "reasoningTokens": 7}).metadata["_chat_usage"]["reasoningTokens"] == 7
    assert Msg.from_json(msg.to_json()) == msg


@pytest.mark.parametrize("reader", ["from_json", "from_dict", "decode_messages"])
def test_readers_restore_what_a_trip_through_java_dropped(reader: str) -> None:
    original = AssistantMessage("x", usage=FULL, id="m", timestamp="2026-01-01 00:00:00.000")
    java = _as_java_writes_it(original)
    assert java["usage"] == JAVA and java["metadata"]["_chat_usage"] == FULL
    if reader == "from_json":
        back = Msg.from_json(json.dumps(java))
    elif reader == "from_dict":
        back = Msg.from_dict(java)
    else:
        (back,) = agentmsg.decode_messages(json.dumps([java]))
    assert back == original
    assert back.usage is not None and (back.usage.cache_creation_input_tokens, back.usage.reasoning_tokens) == (
        150,
        120,
    )


def test_a_count_java_wrote_as_zero_stays_and_the_rest_is_restored() -> None:
    original = AssistantMessage("x", usage={"inputTokens": 5, "outputTokens": 1, "reasoningTokens": 1})
    back = Msg.from_dict(_as_java_writes_it(original))
    assert back.usage is not None
    assert back.usage.reasoning_tokens == 1 and back.usage.cached_tokens == 0 and back.usage.time == 0.0


def test_a_copy_of_another_usage_restores_nothing() -> None:
    java = _as_java_writes_it(AssistantMessage("x", usage=FULL))
    java["usage"]["inputTokens"] = 1  # the usage changed after the copy was made: the copy is not its copy
    back = Msg.from_dict(java)
    assert back.usage is not None and back.usage.reasoning_tokens is None
    assert back.metadata["_chat_usage"] == FULL  # kept as read
    assert Msg.from_json(back.to_json()) == back


def test_java_keys_are_never_restored() -> None:
    """Java writes all of its own keys, so a usage without one was written so: the copy does not add it (a message
    reads back equal to what was written)."""
    msg = Msg.from_dict(
        {
            "id": "m",
            "role": "ASSISTANT",
            "content": [],
            "metadata": {"_chat_usage": {"inputTokens": 3, "outputTokens": 1}},
            "usage": {"outputTokens": 1},
        }
    )
    assert msg.usage == ChatUsage(output_tokens=1)
    built = AssistantMessage("x", usage={"outputTokens": 1}, metadata={"_chat_usage": {"inputTokens": 3}})
    assert built.usage == ChatUsage(output_tokens=1) and Msg.from_json(built.to_json()) == built


def test_a_constructor_completes_the_usage_from_its_copy_too() -> None:
    """A message rebuilt from a Java-tripped one (its usage without the counts, its copy with them) is the message
    the readers give."""
    java = _as_java_writes_it(AssistantMessage("x", usage=FULL, id="m"))
    rebuilt = AssistantMessage("x", id="m", usage=java["usage"], metadata=java["metadata"], timestamp=java["timestamp"])
    assert rebuilt.usage is not None and rebuilt.usage.reasoning_tokens == 120
    assert Msg.from_json(rebuilt.to_json()) == rebuilt


@pytest.mark.parametrize("smaller", [JAVA, {"inputTokens": 1200, "outputTokens": 300}, None])
def test_a_copy_given_another_usage_holds_that_usage(smaller: dict[str, Any] | None) -> None:
    """``copy(usage=...)`` gives the message the usage it is told: the metadata copy of the old usage is that usage's,
    not a copy a trip through Java left, so it puts back none of the counts the new usage leaves out (it put back
    reasoningTokens 120 and cacheCreationInputTokens 150), and goes with the old usage."""
    for msg in (
        AssistantMessage("x", usage=FULL, id="m"),
        Msg.from_dict(_as_java_writes_it(AssistantMessage("x", usage=FULL, id="m"))),  # (restored from its copy)
    ):
        changed = msg.copy(usage=smaller)
        assert changed.to_dict()["usage"] == smaller
        assert "_chat_usage" not in changed.metadata
        assert Msg.from_json(changed.to_json()) == changed
        # a usage beyond Java gets its own copy, as a constructor gives it
        beyond = msg.copy(usage={"inputTokens": 1, "reasoningTokens": 2})
        assert beyond.metadata["_chat_usage"] == {"inputTokens": 1, "reasoningTokens": 2}


def test_a_copy_keeps_a_metadata_copy_of_another_usage() -> None:
    """A ``_chat_usage`` that is no copy of the message's usage (its counts differ) is the caller's data: a copy with
    another usage keeps it, and so does a copy given the metadata too."""
    other = {"inputTokens": 9, "outputTokens": 9, "reasoningTokens": 9}
    msg = AssistantMessage("x", usage=JAVA, metadata={"_chat_usage": other})
    assert msg.copy(usage={"inputTokens": 1}).metadata["_chat_usage"] == other
    kept = AssistantMessage("x", usage=FULL).copy(usage=JAVA, metadata={"_chat_usage": FULL})
    assert kept.metadata["_chat_usage"] == FULL  # (given with it: the constructor's rule, the usage completed)
    assert kept.usage is not None and kept.usage.reasoning_tokens == 120


@pytest.mark.parametrize("smaller", [JAVA, {"inputTokens": 1200, "outputTokens": 300}, None])
def test_a_usage_assigned_holds_that_usage(smaller: dict[str, Any] | None) -> None:
    """``msg.usage = ...`` follows ``copy(usage=...)``'s rule: the old usage's metadata copy goes with it (it was
    written beside the new usage, and a reader put back reasoningTokens 120 and cacheCreationInputTokens 150), and a
    usage beyond Java gets its own copy, which carries its counts (not the old ones) through Java."""
    value = AssistantMessage("x", usage=smaller).usage  # (a ChatUsage of Java's keys: no copy)
    for msg in (
        AssistantMessage("x", usage=FULL, id="m"),
        Msg.from_dict(_as_java_writes_it(AssistantMessage("x", usage=FULL, id="m"))),  # (restored from its copy)
    ):
        before = msg.metadata
        msg.usage = value
        assert msg.usage is value  # (kept as set)
        assert msg.to_dict()["usage"] == smaller
        assert "_chat_usage" not in msg.metadata and "_chat_usage" not in msg.to_dict()["metadata"]
        assert before["_chat_usage"] == FULL  # (the metadata is replaced, not changed in place)
        assert Msg.from_json(msg.to_json()) == msg
        msg.usage = ChatUsage(input_tokens=1, output_tokens=2, reasoning_tokens=7)
        assert msg.to_dict()["metadata"]["_chat_usage"] == {"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 7}
        back = Msg.from_dict(_as_java_writes_it(msg))
        assert back.usage is not None and back.usage.reasoning_tokens == 7


def test_a_usage_assigned_keeps_a_metadata_copy_of_another_usage() -> None:
    """A ``_chat_usage`` that is no copy of the old usage is the caller's data, kept as ``copy(usage=...)`` keeps it."""
    other = {"inputTokens": 9, "outputTokens": 9, "reasoningTokens": 9}
    msg = AssistantMessage("x", usage=JAVA, metadata={"_chat_usage": other})
    msg.usage = ChatUsage(input_tokens=1)
    assert msg.metadata["_chat_usage"] == other


@pytest.mark.parametrize(
    ("fields", "pointer", "rule"),
    [
        ({"input_tokens": "5"}, "/usage/inputTokens", "type"),
        ({"time": "soon"}, "/usage/time", "type"),
        ({"input_tokens": 1.5}, "/usage/inputTokens", "type"),
        ({"input_tokens": 3, "reasoning_tokens": "x"}, "/usage/reasoningTokens", "type"),
        ({"time": float("nan")}, "/usage/time", "json-value"),
    ],
    ids=["count-text", "time-text", "count-fraction", "beyond-java-text", "nan"],
)
def test_a_chat_usage_with_a_field_of_the_wrong_type_is_refused_at_its_pointer(
    fields: dict[str, Any], pointer: str, rule: str
) -> None:
    """``AssistantMessage("x", usage=ChatUsage(input_tokens="5"))`` raised the writer hook's bare ``WrongValue:
    input_tokens`` (a TypeError: no pointer, no rule, not the SDK's error) from the step that copies a usage beyond
    Java into metadata. Refused as a ValidationError at the field's JSON pointer, as a usage dict is."""
    with pytest.raises(agentmsg.ValidationError) as info:
        AssistantMessage("x", usage=ChatUsage(**fields))
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    assert info.value.kind == "msg"
