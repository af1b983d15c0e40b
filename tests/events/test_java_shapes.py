"""Streams shaped by AgentScope Java 2.x's block lifecycle (ReActAgent.CallExecution.ModelCallBlockLifecycle,
read from agentscope-core 2.0.0's bytecode, reference section 3.3), reduced without problems and without
mixing tool calls.

Java's rules simulated here: a text chunk closes thinking and opens text; a thinking chunk opens
thinking; a chunk of a tool call that is not in the started set closes text, thinking and *every*
started call (END each, then clear the set), then emits TOOL_CALL_START unless the name is a ``__``
placeholder; a non-empty fragment is a TOOL_CALL_DELTA; at the end of the model call everything still
open is closed. So interleaved fragments end and restart calls, and placeholder-named fragments come
without a START.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import Reducer, reduce_stream
from agentmsg.events import stream as stream_mod
from tests._support.budget import examples

TS = "2026-11-22T10:34:38.563248392Z"


class JavaLifecycle:
    """Emits events for provider chunks the way one Java model call does."""

    def __init__(self, out: list[dict[str, Any]], reply_id: str) -> None:
        self.out = out
        self.reply_id = reply_id
        self.text_open = False
        self.thinking_open = False
        self.started: dict[str, str] = {}
        self.emit("MODEL_CALL_START")

    def emit(self, type_: str, **keys: Any) -> None:
        self.out.append({"type": type_, "id": f"e{len(self.out)}", "createdAt": TS, "replyId": self.reply_id, **keys})

    def flush_text(self) -> None:
        if self.text_open:
            self.text_open = False
            self.emit("TEXT_BLOCK_END", blockId="text")

    def flush_thinking(self) -> None:
        if self.thinking_open:
            self.thinking_open = False
            self.emit("THINKING_BLOCK_END", blockId="thinking")

    def flush_calls(self) -> None:
        for call_id, name in self.started.items():
            self.emit("TOOL_CALL_END", toolCallId=call_id, toolCallName=name)
        self.started.clear()

    def text(self, delta: str) -> None:
        self.flush_thinking()
        if not self.text_open:
            self.text_open = True
            self.emit("TEXT_BLOCK_START", blockId="text")
        if delta:
            self.emit("TEXT_BLOCK_DELTA", blockId="text", delta=delta)

    def thinking(self, delta: str) -> None:
        if not self.thinking_open:
            self.thinking_open = True
            self.emit("THINKING_BLOCK_START", blockId="thinking")
        if delta:
            self.emit("THINKING_BLOCK_DELTA", blockId="thinking", delta=delta)

    def tool(self, call_id: str, name: str, fragment: str) -> None:
        if call_id not in self.started:
            self.flush_text()
            self.flush_thinking()
            self.flush_calls()
            if not name.startswith("__"):
                self.started[call_id] = name
                self.emit("TOOL_CALL_START", toolCallId=call_id, toolCallName=name)
        if fragment:
            self.emit("TOOL_CALL_DELTA", toolCallId=call_id, toolCallName=name, delta=fragment)

    def end(self) -> None:
        self.flush_text()
        self.flush_thinking()
        self.flush_calls()
        self.emit("MODEL_CALL_END")


def reduce_clean(events: list[dict[str, Any]]) -> dict[str, Any]:
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert [str(p) for p in r.problems] == []
    # The same through bytes (the JSONL fast path), in small batches.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stream_mod, "CHUNK", 97)
        r2 = Reducer()
        (again,) = reduce_stream(b"".join(orjson.dumps(e) + b"\n" for e in events), reducer=r2)
    assert again.to_dict() == msg.to_dict() and r2.problems == []
    return msg.to_dict()


def java_stream(model_calls: list[list[tuple[str, ...]]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "AGENT_START", "id": "start", "createdAt": TS, "replyId": "agent"}]
    for n, chunks in enumerate(model_calls):
        life = JavaLifecycle(events, f"model{n}")
        for chunk in chunks:
            if chunk[0] == "text":
                life.text(chunk[1])
            elif chunk[0] == "thinking":
                life.thinking(chunk[1])
            else:
                life.tool(chunk[1], chunk[2], chunk[3])
        life.end()
    events.append({"type": "AGENT_END", "id": "end", "createdAt": TS, "replyId": "agent"})
    return events


def calls_of(msg: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return [(b["id"], b["name"], b["input"], b["content"]) for b in msg["content"] if b["type"] == "tool_use"]


def test_interleaved_fragments_with_placeholder_names() -> None:
    events = java_stream(
        [
            [
                ("tool", "A", "f", '{"x":'),
                ("tool", "B", "g", '{"y":'),
                ("tool", "A", "__fragment__", "1}"),
                ("tool", "B", "__fragment__", "2}"),
            ]
        ]
    )
    assert [e["type"] for e in events].count("TOOL_CALL_START") == 2  # no START for placeholder chunks
    assert calls_of(reduce_clean(events)) == [("A", "f", {"x": 1}, '{"x":1}'), ("B", "g", {"y": 2}, '{"y":2}')]


def test_interleaved_fragments_repeating_names_restart_calls() -> None:
    events = java_stream(
        [[("tool", "A", "f", '{"x":'), ("tool", "B", "g", '{"y":'), ("tool", "A", "f", "1}"), ("tool", "B", "g", "2}")]]
    )
    assert [e["type"] for e in events].count("TOOL_CALL_START") == 4  # Java starts A and B twice
    assert calls_of(reduce_clean(events)) == [("A", "f", {"x": 1}, '{"x":1}'), ("B", "g", {"y": 2}, '{"y":2}')]


def test_placeholder_first_chunk_then_start_with_the_real_name() -> None:
    events = java_stream([[("tool", "A", "__pending__", '{"x":'), ("tool", "A", "f", "1}")]])
    assert [e["type"] for e in events if "TOOL" in e["type"]] == [
        "TOOL_CALL_DELTA",
        "TOOL_CALL_START",
        "TOOL_CALL_DELTA",
        "TOOL_CALL_END",
    ]
    assert calls_of(reduce_clean(events)) == [("A", "f", {"x": 1}, '{"x":1}')]


def test_a_call_id_reused_by_a_later_model_call_is_a_new_call() -> None:
    events = java_stream([[("tool", "call_0", "f", "{}")], [("text", "ok"), ("tool", "call_0", "g", '{"a":1}')]])
    assert calls_of(reduce_clean(events)) == [("call_0", "f", {}, "{}"), ("call_0", "g", {"a": 1}, '{"a":1}')]


def test_end_for_a_closed_call_is_ignored_not_a_new_call() -> None:
    events = java_stream([[("tool", "A", "f", "{}")]])
    events.insert(-1, {**events[-3], "id": "again"})  # a second TOOL_CALL_END for A
    assert events[-2]["type"] == "TOOL_CALL_END"
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert calls_of(msg.to_dict()) == [("A", "f", {}, "{}")]
    assert [(p.pointer, p.rule) for p in r.problems] == [(f"/{len(events) - 2}/toolCallId", "order")]


fragment = st.text(alphabet="ab", max_size=2)
chunk = st.one_of(
    st.tuples(st.just("text"), fragment),
    st.tuples(st.just("thinking"), fragment),
    st.tuples(st.just("tool"), st.sampled_from(["A", "B", "C"]), st.booleans(), st.integers(0, 3)),
)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.lists(chunk, max_size=12), min_size=1, max_size=3))
def test_any_java_shaped_stream_reduces_cleanly(model_calls: list[list[Any]]) -> None:
    """Whatever order chunks come in, each model call's tool calls come out whole: the arguments are the
    concatenation of the call's fragments and valid JSON; text and thinking keep every delta."""
    plan: list[list[tuple[str, ...]]] = []
    expected_calls: list[tuple[str, str, Any, Any]] = []
    text, thinking = "", ""
    for n, chunks in enumerate(model_calls):
        fragments: dict[str, list[str]] = {}
        named: dict[str, bool] = {}
        concrete: list[tuple[str, ...]] = []
        for c in chunks:
            if c[0] != "tool":
                concrete.append(c)
                text += c[1] if c[0] == "text" else ""
                thinking += c[1] if c[0] == "thinking" else ""
                continue
            _, call_id, real, k = c
            if call_id not in fragments:
                fragments[call_id] = []
            # Arguments: {"k":"<n>,<k>,..."}, split into fragments along the way.
            piece = f'{{"v":"{n}' if not fragments[call_id] else f",{k}"
            fragments[call_id].append(piece)
            name = f"tool_{call_id}" if real else "__fragment__"
            named[call_id] = named.get(call_id, False) or real
            concrete.append(("tool", call_id, name, piece))
        for call_id, parts in fragments.items():
            # The closing fragment has the call's real name only if some chunk had it: a call whose
            # chunks all carry placeholders gets neither START nor END from Java.
            name = f"tool_{call_id}" if named[call_id] else "__fragment__"
            concrete.append(("tool", call_id, name, '"}'))
            raw = "".join(parts) + '"}'
            expected_calls.append((call_id, name, {"v": raw[6:-2]}, raw))
        plan.append(concrete)
    msg = reduce_clean(java_stream(plan))
    assert sorted(calls_of(msg), key=repr) == sorted(expected_calls, key=repr)
    assert "".join(b["text"] for b in msg["content"] if b["type"] == "text") == text
    assert "".join(b["thinking"] for b in msg["content"] if b["type"] == "thinking") == thinking
