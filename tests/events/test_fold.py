"""The tolerant reducer's loop (``agentmsg.events._handlers.fold``, what ``Reducer.feed_many`` and
``reduce_events`` run: the duplicate check and the plain delta written out in it) against the general path,
``Reducer.feed`` one event at a time: the same messages, problems, event count and duplicate window for random
event streams (plain deltas for open and closed blocks, duplicates, ids that are not strings, forwarded events,
signature deltas, non-dict items, window rotation, the fragment compaction every ``JOIN_EVERY`` deltas), fed
whole or a few events at a time (as the client feeds a chunk's events), and for an iterator that fails midway or
uses the reducer itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg import Reducer
from agentmsg.events._state import JOIN_EVERY
from tests._support.budget import examples

pytestmark = pytest.mark.differential

KINDS = ["TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA"]


def _event(draw: Any, n: int) -> Any:
    shape = draw(st.integers(0, 19))
    ident: Any = draw(st.sampled_from([f"e{n}", f"e{n}", f"e{n}", "dup", f"e{n // 3}", 7, None]))
    if shape == 0:
        return {"type": "AGENT_START", "id": ident, "replyId": draw(st.sampled_from(["r1", "r2"]))}
    if shape == 1:
        return {"type": "AGENT_END", "id": ident, "replyId": "r1"}
    if shape == 2:
        kind = draw(st.sampled_from(["TEXT_BLOCK_START", "THINKING_BLOCK_START"]))
        return {"type": kind, "id": ident, "replyId": "r1", "blockId": draw(st.sampled_from(["b1", "b2", "b3"]))}
    if shape == 3:
        kind = draw(st.sampled_from(["TEXT_BLOCK_END", "THINKING_BLOCK_END"]))
        return {"type": kind, "id": ident, "replyId": "r1", "blockId": draw(st.sampled_from(["b1", "b2", "b3"]))}
    if shape == 4:
        return {"type": "TOOL_CALL_START", "id": ident, "replyId": "r1", "toolCallId": "c1", "toolCallName": "f"}
    if shape == 5:
        return {"type": "TOOL_CALL_END", "id": ident, "replyId": "r1", "toolCallId": "c1", "toolCallName": "f"}
    if shape == 6:  # a signature delta: never the plain path
        return {"type": "THINKING_BLOCK_DELTA", "id": ident, "blockId": "b2", "delta": "", "signature": "sig"}
    if shape == 7:
        return {"type": "TEXT_BLOCK_DELTA", "id": ident, "blockId": "b1", "delta": "x", "source": "sub"}
    if shape == 8:
        return draw(st.sampled_from(["not an event", 3, ["a"], None]))
    if shape == 9:  # odd values in the fields the plain path reads
        return {
            "type": draw(st.sampled_from([*KINDS, 5, None])),
            "id": ident,
            "blockId": draw(st.sampled_from(["b1", 1, None])),
            "toolCallId": draw(st.sampled_from(["c1", 2])),
            "delta": draw(st.sampled_from(["y", 3, None])),
        }
    kind = draw(st.sampled_from(KINDS))
    key = "toolCallId" if kind == "TOOL_CALL_DELTA" else "blockId"
    value = draw(st.sampled_from(["c1", "c2"] if key == "toolCallId" else ["b1", "b2", "b3"]))
    return {"type": kind, "id": ident, "replyId": "r1", key: value, "delta": draw(st.sampled_from(["a", "é", "", "{"]))}


@st.composite
def streams(draw: Any) -> list[Any]:
    return [_event(draw, n) for n in range(draw(st.integers(0, 60)))]


def _copies(events: list[Any]) -> list[Any]:
    return [dict(e) if isinstance(e, dict) else e for e in events]


def _result(r: Reducer) -> Any:
    mid = (r.count, sorted(r._st.window.current), sorted(r._st.window.previous))
    msgs = [m.to_dict() for m in r.finish()]
    return msgs, [(p.pointer, p.rule, p.message) for p in r.problems], mid


def _run(events: list[Any], window: int | None, *, how: str, batch: int = 3) -> Any:
    """``how``: "feed" (one event at a time, the general path), "many" (one feed_many of an iterator), "batches"
    (feed_many of lists of ``batch`` events)."""
    r = Reducer(dedupe_window=window)
    copies = _copies(events)
    if how == "feed":
        for e in copies:
            r.feed(e)
    elif how == "many":
        r.feed_many(iter(copies))
    else:
        for k in range(0, len(copies), batch):
            r.feed_many(copies[k : k + batch])
    return _result(r)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=streams(), window=st.sampled_from([1, 2, 3, 5, None, 4096]), batch=st.integers(1, 4))
def test_the_loop_reduces_as_feed_does(events: list[Any], window: int | None, batch: int) -> None:
    expected = _run(events, window, how="feed")
    assert _run(events, window, how="many") == expected
    assert _run(events, window, how="batches", batch=batch) == expected


def test_fragments_are_compacted_and_joined_in_order() -> None:
    n = JOIN_EVERY * 2 + 7
    events = [
        {"type": "AGENT_START", "id": "s", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "t", "replyId": "r", "blockId": "b"},
        *(
            {"type": "TEXT_BLOCK_DELTA", "id": f"d{i}", "replyId": "r", "blockId": "b", "delta": f"{i},"}
            for i in range(n)
        ),
        {"type": "TEXT_BLOCK_END", "id": "u", "replyId": "r", "blockId": "b"},
        {"type": "AGENT_END", "id": "v", "replyId": "r"},
    ]
    results = [_run(events, 100, how=how) for how in ("feed", "many", "batches")]
    assert results[0] == results[1] == results[2]
    assert results[0][0][0]["content"][0]["text"] == "".join(f"{i}," for i in range(n))
    r = Reducer()  # memory: fragments are joined every JOIN_EVERY, as Text.add joins them
    r.feed_many(events[:-2])
    text = r._st.reply.texts["b"]  # type: ignore[union-attr]
    assert (len(text.chunks), len(text.parts)) == (2, 7)


def test_an_iterator_that_fails_midway_keeps_what_it_gave() -> None:
    def events() -> Iterator[dict[str, Any]]:
        yield {"type": "AGENT_START", "id": "s", "replyId": "r"}
        yield {"type": "TEXT_BLOCK_START", "id": "t", "replyId": "r", "blockId": "b"}
        yield {"type": "TEXT_BLOCK_DELTA", "id": "d", "replyId": "r", "blockId": "b", "delta": "kept"}
        raise OSError("the connection broke")

    r = Reducer()
    with pytest.raises(OSError, match="broke"):
        r.feed_many(events())
    assert r.count == 3
    assert r.snapshot() is not None and r.snapshot().text_content == "kept"  # type: ignore[union-attr]
    assert r.finish()[0].text_content == "kept"


def test_an_iterator_that_uses_the_reducer_sees_it_as_feed_leaves_it() -> None:
    """The iterator is Python code: it may report a problem about the event it is about to give (pointing at
    the reducer's count), feed the reducer itself, or finish it. The loop gives feed's result."""
    base = [
        {"type": "AGENT_START", "id": "s", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "t", "replyId": "r", "blockId": "b"},
        *(
            {"type": "TEXT_BLOCK_DELTA", "id": f"d{i}", "replyId": "r", "blockId": "b", "delta": f"{i}"}
            for i in range(6)
        ),
        {"type": "TEXT_BLOCK_END", "id": "u", "replyId": "r", "blockId": "b"},
        {"type": "AGENT_END", "id": "v", "replyId": "r"},
    ]

    def run(many: bool, action: str) -> Any:
        r = Reducer()

        def events() -> Iterator[dict[str, Any]]:
            for n, e in enumerate(base):
                if n == 4:
                    if action == "report":
                        r.report("the transport replaced a bad byte", rule="utf-8")
                    elif action == "feed":
                        r.feed({"type": "TEXT_BLOCK_DELTA", "id": "x", "replyId": "r", "blockId": "b", "delta": "X"})
                    elif action == "finish":
                        r.finish()
                yield dict(e)
            if action == "unreadable at the end":  # the transport's last word, after the last event
                r.feed_unreadable("the stream ended inside an event")

        if many:
            r.feed_many(events())
        else:
            for e in events():
                r.feed(e)
        return [m.to_dict() for m in r.finish()], [(p.pointer, p.rule) for p in r.problems], r.count

    for action in ("report", "feed", "finish", "unreadable at the end"):
        assert run(True, action) == run(False, action), action
    assert run(True, "report")[1] == [("/4", "utf-8")]
    assert run(True, "feed")[0][0]["content"][0]["text"] == "01X2345"
    assert run(True, "unreadable at the end")[1:] == ([("/10", "json")], 11)


def _run_trusted(events: list[Any], window: int | None, source: str | None, batch: int, made_once: bool) -> Any:
    """A client's feed of a stream's chunks: the function ``_trusted_feed`` makes once for the stream
    (``made_once``), or ``feed_many(trusted=True)`` of each chunk."""
    r = Reducer(dedupe_window=window, source=source)
    copies = _copies(events)
    fold = r._trusted_feed()
    for k in range(0, len(copies), batch):
        if made_once:
            fold(copies[k : k + batch])
        else:
            r.feed_many(copies[k : k + batch], trusted=True)
    return _result(r)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(
    events=streams(),
    window=st.sampled_from([1, 2, 3, None]),
    batch=st.integers(1, 4),
    source=st.sampled_from([None, "sub"]),
    c_loop=st.booleans(),
)
def test_a_streams_trusted_feed_reduces_as_feed_many_does(
    events: list[Any], window: int | None, batch: int, source: str | None, c_loop: bool
) -> None:
    """What the function made once for a stream looks up once (the reducer's source, its window and bound, the C
    delta loop or none) gives what feed_many(trusted=True) gives chunk by chunk, the window turning meanwhile."""
    from agentmsg.events import _handlers, reducer

    with pytest.MonkeyPatch.context() as m:
        if not c_loop:
            m.setattr(_handlers, "_fold_deltas", None)
            m.setattr(reducer, "_fold_deltas", None)
        expected = _run_trusted(events, window, source, batch, made_once=False)
        assert _run_trusted(events, window, source, batch, made_once=True) == expected
