"""A reduced message is read back: the reducer takes no content past ``limits.max_bytes`` (principle 3). Five text
deltas of 60 MB each (or five ``agentmsg.error`` events) reduced to a message of 300,000,149 bytes of JSON, which
``Msg.from_json`` refused (``max-bytes``); each event was within ``limits.max_event_bytes``. Here the limit is 1 MiB
and each event 240,000 bytes (the same shares of it), through the C delta loop and the pure Python one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import agentmsg
from agentmsg import Msg, Reducer, SizeLimitError, ToolUseBlock, reduce_events
from agentmsg.events._state import RESERVED_BYTES

CAP = 1 << 20
PIECE = 240_000  # (60 MB of 256 MiB, scaled: four fit, five do not)


@pytest.fixture(params=["c", "python"])
def loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The reducer with ``limits.max_bytes`` 1 MiB, its delta loop in C (where built) or in Python."""
    from agentmsg.events import _handlers, reducer

    if request.param == "python":
        monkeypatch.setattr(_handlers, "_fold_deltas", None)
        monkeypatch.setattr(reducer, "_fold_deltas", None)
    elif _handlers._fold_deltas is None:
        pytest.skip("the C speed-ups are not built (or AGENTMSG_PURE_PYTHON=1)")
    monkeypatch.setattr(agentmsg.limits, "max_bytes", CAP)
    yield request.param


def text_stream(pieces: list[str], kind: str = "TEXT_BLOCK") -> list[dict[str, Any]]:
    key = "toolCallId" if kind == "TOOL_CALL" else "blockId"
    start: dict[str, Any] = {"id": "b", "type": f"{kind}_START", key: "k"}
    if kind == "TOOL_CALL":
        start["toolCallName"] = "f"
    return [
        {"id": "s", "type": "AGENT_START", "replyId": "r"},
        start,
        *({"id": f"d{n}", "type": f"{kind}_DELTA", key: "k", "delta": p} for n, p in enumerate(pieces)),
        {"id": "be", "type": f"{kind}_END", key: "k"},
        {"id": "e", "type": "AGENT_END"},
    ]


def error_stream(count: int, size: int) -> list[dict[str, Any]]:
    return [
        {"id": "s", "type": "AGENT_START", "replyId": "r"},
        *(
            {"id": f"x{n}", "type": "CUSTOM", "name": "agentmsg.error", "value": {"type": "e", "message": "m" * size}}
            for n in range(count)
        ),
        {"id": "e", "type": "AGENT_END"},
    ]


def stamped(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"} for e in events]


def reduced(events: list[dict[str, Any]], how: str) -> tuple[Msg, list[tuple[str, str]]]:
    """The one message of ``events`` (read back from its JSON) and the problems (pointer, rule)."""
    r = Reducer()
    if how == "feed":
        for e in events:
            r.feed(e)
    elif how == "chunks":  # (a client's stream: its parser's events, a chunk at a time)
        fold = r._trusted_feed()
        for e in events:
            fold([e])
    else:
        r.feed_many(events, trusted=how == "trusted")
    (msg,) = r.finish()
    data = msg.to_json_bytes()
    assert len(data) <= CAP
    assert Msg.from_json(data).to_json_bytes() == data
    return msg, [(p.pointer, p.rule) for p in r.problems]


@pytest.mark.parametrize("how", ["feed", "many", "trusted", "chunks"])
def test_text_past_the_limit_is_refused_and_what_came_before_kept(loop: str, how: str) -> None:
    pieces = [chr(ord("a") + n) * PIECE for n in range(5)]
    msg, problems = reduced(text_stream(pieces), how)
    assert msg.text_content == "".join(pieces[:4])
    assert problems == [("/6", "max-bytes")]  # (the fifth delta: AGENT_START and the block's START come first)
    assert msg.generate_reason != "INTERRUPTED"


@pytest.mark.parametrize("how", ["feed", "many", "trusted"])
def test_errors_past_the_limit_are_refused_and_the_earlier_ones_kept(loop: str, how: str) -> None:
    msg, problems = reduced(error_stream(5, PIECE), how)
    assert [e["message"] for e in msg.metadata["agentmsg_errors"]] == ["m" * PIECE] * 4
    assert problems == [("/5", "max-bytes")]


def test_reduce_events_of_big_deltas_gives_a_readable_message(loop: str) -> None:
    (msg,) = reduce_events(text_stream(["x" * PIECE] * 5), trusted=True)
    assert len(msg.to_json_bytes()) <= CAP and len(msg.text_content) == 4 * PIECE


@pytest.mark.parametrize("how", ["many", "trusted", "chunks"])
def test_many_small_deltas_stop_at_the_limit_with_no_hole(loop: str, how: str) -> None:
    """Past the counted bound (6 bytes a character) each delta is measured: the text kept is a prefix of the
    deltas', up to the limit, and each delta after it is refused, said at its event."""
    pieces = [f"{n:07d}" + "y" * 93 for n in range(12_000)]  # 1.2 MB of text
    msg, problems = reduced(text_stream(pieces), how)
    kept = len(msg.text_content) // 100
    assert msg.text_content == "".join(pieces[:kept])
    assert CAP - RESERVED_BYTES - 1000 < len(msg.to_json_bytes()) <= CAP
    assert problems == [(f"/{2 + n}", "max-bytes") for n in range(kept, 12_000)]


def test_text_within_the_limit_is_kept_whole(loop: str) -> None:
    """The bound only decides when to measure: text that fits is all taken, escapes and all."""
    pieces = ["\u00e9\n" * 2000, '"' * 4000] * 64 + ["z" * 100]  # (1,024,100 bytes as JSON)
    msg, problems = reduced(text_stream(pieces), "trusted")
    assert problems == [] and msg.text_content == "".join(pieces)
    assert len(msg.to_json_bytes()) > CAP - RESERVED_BYTES - 8000


def test_a_tool_calls_arguments_count_twice(loop: str) -> None:
    """A tool call's arguments are in its message twice, as its content and parsed as its input."""
    pieces = ['{"a":"', *(["q" * 100_000] * 6), '"}']
    msg, problems = reduced(text_stream(pieces, "TOOL_CALL"), "trusted")
    (call,) = msg.content
    assert isinstance(call, ToolUseBlock) and call.metadata is not None
    assert problems == [("/8", "max-bytes"), ("/9", "max-bytes")]  # (the sixth piece of 100,000, then the last)
    assert call.content == '{"a":"' + "q" * 500_000 and call.metadata["argumentsError"]


def test_strict_mode_raises_at_the_event(loop: str) -> None:
    r = Reducer(strict=True)
    events = stamped(text_stream(["x" * PIECE] * 5))
    for e in events[:6]:
        r.feed(e)
    with pytest.raises(SizeLimitError) as info:
        r.feed(events[6])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/6", "max-bytes")]
    for e in events[7:]:
        r.feed(e)
    (msg,) = r.finish()
    assert len(msg.text_content) == 4 * PIECE


def test_an_error_after_the_content_filled_the_message_is_kept(loop: str) -> None:
    """An error says why a reply ended (a client's ``too_large``): it may take part of the reserve past the content."""
    events = text_stream(["x" * PIECE] * 5)
    events.insert(-1, {"id": "x", "type": "CUSTOM", "name": "agentmsg.error", "value": {"type": "t", "message": "m"}})
    msg, problems = reduced(events, "trusted")
    assert msg.metadata["agentmsg_errors"] == [{"type": "t", "message": "m"}]
    assert problems == [("/6", "max-bytes")]
