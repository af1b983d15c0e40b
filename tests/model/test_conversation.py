"""Conversations: ``encode_messages`` and ``decode_messages``."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    SizeLimitError,
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


def _text_as_int(m: Any) -> None:
    m.content[0].text = 5


def _role_unknown(m: Any) -> None:
    m.role = "BOSS"


def _name_as_list(m: Any) -> None:
    m.name = ["n"]


@pytest.mark.parametrize(
    ("change", "pointer", "rules"),
    [
        (_text_as_int, "/1/content/0/text", {"type", "json-value"}),
        (_role_unknown, "/1/role", {"enum"}),
        (_name_as_list, "/1/name", {"type", "anyOf", "oneOf"}),
    ],
)
def test_encode_messages_names_the_field_of_a_message_changed_after_construction(
    change: Any, pointer: str, rules: set[str]
) -> None:
    """As Msg.to_json names it, under the message's index: encode_messages validated the whole array against the
    message schema, and said at pointer "" that the conversation (its JSON, quoted) "is not of type object"."""
    msgs = [UserMessage("q"), AssistantMessage("a")]
    change(msgs[1])
    with pytest.raises(ValidationError) as info:
        encode_messages(msgs)
    found = {p.rule for p in info.value.problems if p.pointer == pointer}
    assert found and found <= rules and info.value.kind == "msg", info.value.problems


@pytest.mark.parametrize("depth", [252, 253, 400])
def test_encode_messages_says_which_message_is_nested_too_deep(depth: int) -> None:
    """A message made too deep after construction raised ``max-depth`` at pointer ``""`` from encode_messages when
    it wrote alone but not one level down, in the array (the other errors of encode_messages name their message's
    index): every depth is said under ``/<index>``, as the message's own errors are (at the list that crosses the
    limit, 254 steps in)."""
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    deep = UserMessage("x")
    deep.metadata = {"v": value}
    with pytest.raises(SizeLimitError) as info:
        encode_messages([UserMessage("a"), AssistantMessage("b"), deep, UserMessage("c")])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/2/metadata/v" + "/0" * 251, "max-depth")]


def test_a_conversation_the_fast_path_does_not_take_holds_its_text_about_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation the decode fast path does not take (a str past a quarter of ``limits.max_bytes``, an unknown
    key) was written whole with orjson to learn whether ``[conversation]`` was too deep to write, holding a UTF-8
    copy of every long string: a message of escaped emoji peaked (tracemalloc) at 5 times its text. That depth is
    now found by a walk, which copies nothing (the same depth refused: the depth tests above), and the peak is
    about twice the text."""
    import tracemalloc

    import agentmsg

    text = '"' + "\\ud83d\\ude00\\n\\u0000" * 50_000 + '"'
    data = '[{"id":"m1","role":"USER","content":[{"type":"text","text":' + text + '}],"metadata":{},"later":1}]'
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 2 * len(data))  # (within it, but not a quarter of it)
    decode_messages(data)  # (the first call builds the validators)
    tracemalloc.start()
    try:
        (got,) = decode_messages(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.text_content == "😀\n\x00" * 50_000 and got.unknown_keys == {"later": 1}
    assert peak < 3 * len(data), f"{peak / len(data):.2f} bytes held per byte of JSON"
