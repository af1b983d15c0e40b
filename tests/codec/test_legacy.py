"""Legacy keys in messages and blocks (AgentScope's seed documents): read in their current form with a note, or kept
with a note when they cannot be, never silently emptied; strict readers refuse them. The shapes of the seeds are in
the conformance vectors (tests/conformance/vectors/, ``legacy_keys``); these are the edges."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import agentmsg
from agentmsg import LegacyKeyWarning, Msg, Problem, ToolResultBlock, ToolUseBlock, ValidationError
from agentmsg.errors import WrongTypeError
from tests._support.deep import allocated_peak, held_bytes, nested_results


def _read(block: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    notes: list[Problem] = []
    decoded = agentmsg.block_from_dict(block, notes=notes)
    assert {p.rule for p in notes} <= {"legacy-key"}
    return decoded, [(p.pointer, p.message) for p in notes]


def test_arguments_text_that_is_no_object_is_kept_raw_and_said() -> None:
    call, notes = _read({"type": "tool_use", "id": "c", "name": "f", "arguments": "[1, 2]"})
    assert isinstance(call, ToolUseBlock)
    assert (call.input, call.content) == ({}, "[1, 2]")
    assert call.metadata == {"argumentsError": "arguments are JSON but not an object: array"}
    assert notes[0][0] == "/arguments" and "argumentsError" in notes[0][1]
    call, _ = _read({"type": "tool_use", "id": "c", "name": "f", "arguments": "{oops"})
    assert (call.input, call.content, call.metadata["argumentsError"]) == ({}, "{oops", "arguments are not valid JSON")


@pytest.mark.parametrize(
    ("block", "kept"),
    [
        ({"type": "tool_use", "id": "c", "name": "f", "arguments": [1]}, {"arguments": [1]}),
        (
            {"type": "tool_use", "id": "c", "name": "f", "input": {"a": 1}, "arguments": {"a": 2}},
            {"arguments": {"a": 2}},
        ),
        ({"type": "tool_result", "id": "c", "result": 5}, {"result": 5}),
        ({"type": "tool_result", "id": "c", "toolUseId": "d"}, {"toolUseId": "d"}),
        ({"type": "tool_result", "id": "c", "toolUseId": 7}, {"toolUseId": 7}),
    ],
)
def test_a_legacy_key_that_cannot_be_read_is_kept_and_said(block: dict[str, Any], kept: dict[str, Any]) -> None:
    decoded, notes = _read(block)
    assert decoded.unknown_keys == kept
    ((pointer, message),) = notes
    assert pointer == "/" + next(iter(kept)) and "unknown key" in message
    assert agentmsg.block_to_dict(decoded).items() >= kept.items()  # written back


def test_null_legacy_values_are_dropped_with_a_note() -> None:
    result, notes = _read({"type": "tool_result", "id": "c", "result": None, "output": [{"type": "text", "text": "x"}]})
    assert isinstance(result, ToolResultBlock) and result.unknown_keys is None and len(result.output) == 1
    assert notes == [("/result", "legacy key 'result' (AgentScope's seed documents) is null: dropped, nothing to read")]


def test_legacy_keys_nested_in_a_result_are_read_where_they_are() -> None:
    nested = {"type": "tool_result", "id": "inner", "toolUseId": "inner", "output": []}
    outer, notes = _read({"type": "tool_result", "id": "outer", "result": [nested]})
    assert [p for p, _ in notes] == ["/result", "/result/0/toolUseId"]
    assert outer.output[0].unknown_keys is None


def test_readers_do_not_change_their_input() -> None:
    data = {"id": "m", "role": "ASSISTANT", "content": [{"type": "tool_use", "id": "c", "name": "f", "arguments": {}}]}
    before = copy.deepcopy(data)
    Msg.from_dict(data, notes=[])
    agentmsg.read_legacy_keys(data)
    assert data == before


def test_without_a_notes_list_the_notes_are_one_warning() -> None:
    text = json.dumps(
        {
            "id": "m",
            "role": "ASSISTANT",
            "content": [{"type": "tool_use", "id": "c", "name": "f", "arguments": {"a": 1}}],
        }
    )
    with pytest.warns(LegacyKeyWarning) as warned:
        msg = Msg.from_json(text)
    (w,) = warned
    assert isinstance(w.message, LegacyKeyWarning) and w.message.kind == "msg"
    assert [(p.pointer, p.rule) for p in w.message.problems] == [("/content/0/arguments", "legacy-key")]
    assert w.filename == __file__  # it points at the caller
    assert "read as 'input'" in str(w.message)
    assert msg.blocks(ToolUseBlock)[0].input == {"a": 1}
    # the warning survives what warning machinery does to it (pickled, or rebuilt from its args)
    again = pickle.loads(pickle.dumps(w.message))
    assert again.problems == w.message.problems and type(w.message)(*w.message.args).problems == w.message.problems
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Msg.from_json(text, notes=[])  # a notes list: no warning


def test_strict_readers_refuse_legacy_keys_by_name() -> None:
    data: dict[str, Any] = {
        "id": "m",
        "role": "TOOL",
        "content": [{"type": "tool_result", "toolUseId": "c", "output": []}],
    }
    for read in (
        lambda: Msg.from_dict(data, strict=True),
        lambda: Msg.from_json(json.dumps(data), strict=True),
        lambda: agentmsg.decode_messages(json.dumps([data]), strict=True),
        lambda: agentmsg.block_from_dict(data["content"][0], strict=True),
    ):
        with pytest.raises(ValidationError) as info:
            read()
        ((pointer, rule),) = {(p.pointer, p.rule) for p in info.value.problems}
        assert rule == "legacy-key" and pointer.endswith("/toolUseId")
        assert "strict reading refuses it" in info.value.problems[0].message


def test_a_conversation_says_each_note_under_its_message() -> None:
    call = {"type": "tool_use", "id": "c", "name": "f", "arguments": {"q": 1}}
    result = {"type": "tool_result", "id": "c", "name": "f", "result": "ok"}
    conversation = [
        {"id": "1", "role": "ASSISTANT", "content": [call]},
        {"id": "2", "role": "TOOL", "content": [result]},
    ]
    notes: list[Problem] = []
    msgs = agentmsg.decode_messages(json.dumps(conversation), notes=notes)
    assert [p.pointer for p in notes] == ["/0/content/0/arguments", "/1/content/0/result"]
    assert msgs[1].blocks(ToolResultBlock)[0].output[0].text == "ok"  # type: ignore[union-attr]
    # what is read is written back in the current form
    assert agentmsg.decode_messages(agentmsg.encode_messages(msgs)) == msgs
    assert "arguments" not in agentmsg.encode_messages(msgs).decode()


def test_constructors_given_block_dicts_read_them_too() -> None:
    with pytest.warns(LegacyKeyWarning):
        msg = agentmsg.AssistantMessage([{"type": "tool_use", "id": "c", "name": "f", "arguments": {"q": 1}}])
    assert msg.blocks(ToolUseBlock)[0].input == {"q": 1}


def test_find_unknown_keys_names_legacy_keys_as_the_readers_read_them() -> None:
    data = {"id": "m", "role": "ASSISTANT", "content": [{"type": "tool_use", "id": "c", "name": "f", "arguments": {}}]}
    (p,) = agentmsg.find_unknown_keys(data)
    assert (p.pointer, p.rule) == ("/content/0/arguments", "legacy-key")
    event = {"type": "MODEL_CALL_END", "id": "e", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", "inputTokens": 3}
    (p,) = agentmsg.find_unknown_keys(event, "event")
    assert (p.pointer, p.rule) == ("/inputTokens", "legacy-key")
    assert agentmsg.read_legacy_keys(event, "event")[0]["usage"] == {"inputTokens": 3}
    assert agentmsg.read_legacy_keys(event, "chat-usage") == (event, [])  # a kind without legacy keys


def test_every_reader_points_its_warning_at_its_caller() -> None:
    block = {"type": "tool_use", "id": "c", "name": "f", "arguments": {}}
    data = {"id": "m", "role": "ASSISTANT", "content": [block]}
    for read in (
        lambda: Msg.from_dict(data),
        lambda: agentmsg.decode_messages(json.dumps([data])),
        lambda: agentmsg.block_from_dict(block),
        lambda: agentmsg.block_from_json(json.dumps(block)),
    ):
        with pytest.warns(LegacyKeyWarning) as warned:
            read()
        assert [w.filename for w in warned] == [__file__]


@pytest.mark.parametrize("strict", [False, True])
def test_tool_results_nested_too_deep_are_refused_before_their_notes_grow(strict: bool) -> None:
    """``block_from_dict`` read every level's ``toolUseId`` into a note whose pointer has a step per level before the
    depth refused the block: 5,000 deep allocated 240 MB (900 MB at 10,000), quadratic in the depth. The reader now
    stops at the limit: less memory than the block itself holds (its dicts and lists), and max-depth, strict or not,
    as before (strict said legacy-key first), at the result 254 levels in (the one that crosses the limit)."""
    depth = 5000
    deep = nested_results(depth, uses=True)
    size = held_bytes(deep)
    agentmsg.block_from_dict(nested_results(2, uses=True), notes=[])  # (what the first read sets up)
    with allocated_peak() as peaks, pytest.raises(agentmsg.SizeLimitError) as info:
        agentmsg.block_from_dict(deep, strict=strict, notes=[])
    (peak,) = peaks
    assert peak < size, f"{peak} bytes allocated refusing a block of {size} bytes, {depth} deep"
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/output/0" * 127, "max-depth")]


@pytest.mark.parametrize("max_depth", [254, 253])
def test_tool_results_read_from_result_objects_past_the_limit_are_said_where_they_cross_it(
    max_depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy ``result`` object is one level where the ``output`` it is read as is two: tool results nested in each
    other's ``result`` pass the readers' depth check, and the legacy reader refused them at ``""`` (kind
    content-block, in a message too), where every other max-depth names the part that crosses the limit. Now at the
    tool result read past it (255 levels down as read), or its output (the level below it, at an odd limit), named
    where it was read, in the reader's kind."""
    monkeypatch.setattr(agentmsg.limits, "max_depth", max_depth)
    block: Any = {"type": "text", "text": "x"}
    for _ in range(200):
        block = {"type": "tool_result", "id": "c", "result": block}
    msg = {"id": "m", "role": "ASSISTANT", "content": [block]}
    steps = (max_depth + 1) // 2  # (a tool result two levels below the one holding it: the first at 1, or 3 in a msg)
    in_block, in_msg = "/result" * steps, "/content/0" + "/result" * (steps - 1)
    reads: list[tuple[Callable[[], Any], str, str]] = [
        (lambda: agentmsg.block_from_dict(block), "content-block", in_block),
        (lambda: agentmsg.block_from_json(json.dumps(block)), "content-block", in_block),
        (lambda: agentmsg.read_legacy_keys(block, "content-block"), "content-block", in_block),
        (lambda: Msg.from_dict(msg), "msg", in_msg),
        (lambda: Msg.from_json(json.dumps(msg)), "msg", in_msg),
        (lambda: agentmsg.read_legacy_keys(msg), "msg", in_msg),
        # (a conversation is one level deeper: at an odd limit it crosses it a tool result earlier, not at the output
        # of that one, named where it was read, its next result's place; the same place at an even limit)
        (lambda: agentmsg.decode_messages(json.dumps([msg])), "msg", "/0/content/0" + "/result" * (max_depth // 2 - 1)),
    ]
    for read, kind, pointer in reads:
        with pytest.raises(agentmsg.SizeLimitError) as info:
            read()
        assert info.value.kind == kind
        assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "max-depth")]


def _written_at(depth: int) -> str:
    """The pointer, in a message, of the list or dict ``depth`` levels deep on the path of tool results nested in each
    other's output, as written: the message 1, content 2, the first result 3, its output 4, the next result 5, ..."""
    return "/content/0" + "/output/0" * ((depth - 3) // 2) + ("/output" if depth % 2 == 0 else "")


def _agent_result_problems(message: dict[str, Any]) -> list[tuple[str, str]]:
    """The problems (but the notes of legacy keys) of a reducer fed a run whose AGENT_RESULT holds ``message``."""
    ts = "2026-11-22T10:34:38.563248392Z"
    events = [
        {"type": kind, "id": f"e{n}", "createdAt": ts, "replyId": "r", **keys}
        for n, (kind, keys) in enumerate(
            (("AGENT_START", {}), ("AGENT_RESULT", {"result": message}), ("AGENT_END", {}))
        )
    ]
    r = agentmsg.Reducer()
    for e in events:
        r.feed(e)
    r.finish()
    return [(p.pointer, p.rule) for p in r.problems if p.rule != "legacy-key"]


@pytest.mark.parametrize("over", [-1, 0, 1], ids=["limit-1", "limit", "limit+1"])
def test_tool_results_read_from_result_objects_are_held_to_the_limit_by_every_reader(
    over: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight tool results nested in each other's legacy ``result`` objects are 11 levels as read and 19 as written
    (each ``result`` read as an output list of one block). Under ``limits.max_depth`` 18 or 19, Msg.from_json refused
    such a message (its current form too deep) while decode_messages, whose own check of the current form held it to
    the deepest orjson writes (254), read it, one level deeper still in its array. Every reader now holds the form
    read to the limit: a message alone (Msg.from_json, from_dict, a JSON Lines record) at 19 levels, one in a
    conversation or an AGENT_RESULT event (one level deeper: docs/wire-format.md) at 20, each refused at the list or
    dict that crosses the limit (its pointer as written) and read below it."""
    written = 19  # (the message as written: its text block, the deepest part, 3 + 2 * 8 levels down)
    limit = written - over  # (over: how far the message alone is past the limit)
    block: Any = {"type": "text", "text": "x"}
    for _ in range(8):
        block = {"type": "tool_result", "id": "c", "result": block}
    msg = {"id": "m", "role": "ASSISTANT", "content": [block]}
    text = json.dumps(msg)

    def record() -> Msg:
        (got,) = agentmsg.read_records(text.encode() + b"\n")
        assert got.problem is None
        return Msg.from_dict(got.value, notes=[])

    monkeypatch.setattr(agentmsg.limits, "max_depth", limit)
    alone = [] if limit >= written else [(_written_at(limit + 1), "max-depth")]
    reads: list[tuple[Callable[[], Any], str, list[tuple[str, str]]]] = [
        (lambda: Msg.from_json(text, notes=[]), "from_json", alone),
        (lambda: Msg.from_dict(msg, notes=[]), "from_dict", alone),
        (record, "a JSON Lines record", alone),
    ]
    for read, name, refused in reads:
        if not refused:
            assert read().to_dict()["content"][0]["type"] == "tool_result", name
            continue
        with pytest.raises(agentmsg.SizeLimitError) as info:
            read()
        assert [(p.pointer, p.rule) for p in info.value.problems] == refused, name
    deeper = [] if limit > written else [(_written_at(limit), "max-depth")]  # (one level deeper: at one level less)
    if deeper:
        with pytest.raises(agentmsg.SizeLimitError) as info:
            agentmsg.decode_messages(f"[{text}]", notes=[])
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/0" + at, rule) for at, rule in deeper]
    else:
        assert len(agentmsg.decode_messages(f"[{text}]", notes=[])) == 1
    assert _agent_result_problems(msg) == [("/1/result" + at, rule) for at, rule in deeper]


def test_tool_results_at_the_depth_limit_are_read_with_their_notes() -> None:
    notes: list[Problem] = []
    block = agentmsg.block_from_dict(nested_results(125, uses=True), notes=notes)  # 253 levels, the text output read
    assert isinstance(block, ToolResultBlock) and len(notes) == 126
    with pytest.raises(agentmsg.SizeLimitError):
        agentmsg.block_from_dict(nested_results(127, uses=True), notes=[])


def test_a_warning_of_many_legacy_keys_lists_a_bounded_few() -> None:
    """A conversation of 5,000 AgentScope Python messages (content as text) warned in one text listing every one
    of its 5,000 keys (about 500 kB; 200,000 messages made 20 MB of warning). It lists as many as a
    ValidationError does, then how many more ``problems`` holds."""
    text = json.dumps([{"id": f"m{i}", "role": "USER", "content": "hi"} for i in range(5000)])
    with pytest.warns(LegacyKeyWarning) as warned:
        agentmsg.decode_messages(text)
    (w,) = warned
    assert isinstance(w.message, LegacyKeyWarning) and len(w.message.problems) == 5000
    said = str(w.message)
    assert said.count("[legacy-key]") == agentmsg.errors.SHOWN_PROBLEMS and len(said) < 5000
    assert said.startswith("msg: legacy keys read in their current form: /0/content: ")
    assert said.endswith("; ... and 4,980 more (the warning's problems list them all)")


@pytest.mark.parametrize("kind", [[], ["TOOL_RESULT_DATA_DELTA"], {}, {"a": 1}])
def test_an_event_whose_type_is_no_string_has_no_legacy_keys_and_is_said_by_its_schema(kind: Any) -> None:
    """An event's ``type`` that is a list or an object was looked up in the set of the legacy events' types: a bare
    TypeError (unhashable) out of ``read_legacy_keys``, and out of ``agentmsg.check`` and ``agentmsg validate`` on an
    event stream holding one. It is no legacy event: returned as it is, no note; the check says its type is none of the events'."""
    event = {"type": kind, "replyId": "r", "blockId": "b", "data": "AAAA", "createdAt": "2026-01-01T00:00:00Z"}
    value, notes = agentmsg.read_legacy_keys(copy.deepcopy(event), "event")
    assert (value, notes) == (event, [])
    first = {"type": "AGENT_START", "id": "e0", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", "name": "a"}
    report = agentmsg.check(json.dumps(first).encode() + b"\n" + json.dumps(event).encode() + b"\n")
    assert report.kind == "event"
    assert ("/type", "enum") in {(f.pointer, f.rule) for f in report.problems if f.instance == 1}


@pytest.mark.parametrize("kind", [[], {}, None, 1, b"msg"])
def test_a_kind_that_is_no_string_is_a_wrong_type(kind: Any) -> None:
    """``read_legacy_keys``' kind was looked up among its readers as given: a list or a dict raised a bare TypeError
    (unhashable), and None or 1 read the value as a kind with no legacy keys (a message's ``arguments`` left as
    they were, no note), as if it were one. A kind that is no string is a WrongTypeError at /kind."""
    call = {"type": "tool_use", "id": "c", "name": "f", "arguments": "{}"}
    with pytest.raises(WrongTypeError) as caught:
        agentmsg.read_legacy_keys(call, kind)
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/kind", "type")]
    assert [p.pointer for p in agentmsg.read_legacy_keys(call, "content-block")[1]] == ["/arguments"]


_LEGACY_BLOCK = {"type": "tool_use", "id": "c", "name": "f", "arguments": {"a": 1}}
_LEGACY_MSG = {"id": "m", "role": "ASSISTANT", "content": [_LEGACY_BLOCK]}
_CURRENT_MSG = {"id": "m", "role": "USER", "content": [{"type": "text", "text": "x"}]}
_NOTE_TAKERS: dict[str, Callable[[dict[str, Any], Any], object]] = {
    "Msg.from_dict": lambda data, notes: Msg.from_dict(data, notes=notes),
    "Msg.from_json": lambda data, notes: Msg.from_json(json.dumps(data), notes=notes),
    "block_from_dict": lambda data, notes: agentmsg.block_from_dict(data["content"][0], notes=notes),
    "block_from_json": lambda data, notes: agentmsg.block_from_json(json.dumps(data["content"][0]), notes=notes),
    "decode_messages": lambda data, notes: agentmsg.decode_messages(json.dumps([data]), notes=notes),
}


@pytest.mark.parametrize("notes", [(), [].__iter__(), "", {}], ids=["tuple", "iterator", "str", "dict"])
@pytest.mark.parametrize("data", [_LEGACY_MSG, _CURRENT_MSG], ids=["legacy", "current"])
@pytest.mark.parametrize("reader", list(_NOTE_TAKERS), ids=list(_NOTE_TAKERS))
def test_notes_that_are_no_list_are_refused_at_once_by_name(reader: str, data: dict[str, Any], notes: Any) -> None:
    # (the notes are appended to the caller's list: a tuple or a copy could not give them back, so anything but
    # a list is refused at once, notes or none: not an AttributeError only when there are notes to add)
    with pytest.raises(ValidationError) as caught:
        _NOTE_TAKERS[reader](data, notes)
    (problem,) = caught.value.problems
    assert (problem.pointer, problem.rule) == ("", "type")
    assert "notes must be a list" in problem.message and type(notes).__name__ in problem.message


def test_a_subclass_of_list_takes_the_notes() -> None:
    class Notes(list[Problem]):
        pass

    notes = Notes()
    Msg.from_dict(_LEGACY_MSG, notes=notes)
    assert [(p.pointer, p.rule) for p in notes] == [("/content/0/arguments", "legacy-key")]


_SEED_RESULT = {"type": "tool_result", "toolUseId": "c", "name": "t", "result": [{"type": "text", "text": "a"}]}
_URL_SOURCE = {"type": "url", "url": "https://example.com/a.png", "media_type": "image/png"}
_THINKING = {"type": "thinking", "thinking": "t", "signature": "s", "redacted_thinking_data": "r"}


@pytest.mark.parametrize(
    ("kind", "value", "read", "written"),
    [
        ("content-block", _SEED_RESULT, "/output/0/text", "/result/0/text"),
        ("content-block", _SEED_RESULT, "/id", "/toolUseId"),
        ("content-block", {**_SEED_RESULT, "result": {"type": "text", "text": "a"}}, "/output/0/text", "/result/text"),
        ("content-block", {**_SEED_RESULT, "result": "a"}, "/output/0/text", "/result"),
        ("content-block", {"type": "tool_result", "id": "c", "name": "t", "output": "a"}, "/output/0/text", "/output"),
        ("content-block", {"type": "tool_use", "id": "c", "name": "t", "arguments": {"a": [1]}}, "/input/a/0", "/arguments/a/0"),
        ("content-block", {"type": "tool_use", "id": "c", "name": "t", "arguments": "{"}, "/metadata/argumentsError", "/arguments"),
        ("content-block", {"type": "tool_call", "id": "c", "name": "t", "input": "{}"}, "/content", "/input"),
        ("msg", {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "t", "input": {}, "raw_input": "{}"}]}, "/content/0/content", "/content/0/raw_input"),
        ("msg", {"role": "assistant", "content": [_THINKING]}, "/content/0/metadata/signature", "/content/0/signature"),
        ("msg", {"role": "assistant", "content": [_THINKING]}, "/content/0/metadata/redactedData", "/content/0/redacted_thinking_data"),
        ("msg", {"role": "user", "content": [{"type": "image", "source": _URL_SOURCE}]}, "/content/0/source/mime_type", "/content/0/source/media_type"),
        ("msg", {"role": "user", "content": "hi", "metadata": None}, "/content/0/text", "/content"),
        ("msg", {"role": "user", "content": "hi", "created_at": "2026-01-02T03:04:05"}, "/timestamp", "/created_at"),
        ("msg", {"role": "assistant", "content": [], "usage": {"input_tokens": 1}}, "/usage/inputTokens", "/usage/input_tokens"),
        ("msg", {"role": "assistant", "content": [], "structured_output": {"a": 1}}, "/metadata/_structured_output/a", "/structured_output/a"),
        ("msg", {"role": "assistant", "content": [], "metadata": None, "finished_reason": "completed"}, "/metadata/agentscope_generate_reason", "/finished_reason"),
        ("msg", {"role": "TOOL", "content": [{**_SEED_RESULT, "result": [{**_SEED_RESULT, "result": ["x"]}]}]}, "/content/0/output/0/output/0", "/content/0/result/0/result/0"),
        ("event", {"type": "MODEL_CALL_END", "inputTokens": 1}, "/usage/inputTokens", "/inputTokens"),
        ("event", {"type": "DATA_BLOCK_DELTA", "data": "QQ=="}, "/delta", "/data"),
        ("event", {"type": "TOOL_RESULT_DATA_DELTA", "data": "QQ==", "mediaType": "image/png"}, "/data/source/media_type", "/mediaType"),
        ("event", {"type": "TOOL_RESULT_DATA_DELTA", "url": "https://example.com/a.png"}, "/data/source/url", "/url"),
        ("event", {"type": "EXTERNAL_EXECUTION_RESULT", "toolResults": [_SEED_RESULT]}, "/toolResults/0/output/0/type", "/toolResults/0/result/0/type"),
        ("event", {"type": "AGENT_RESULT", "result": {"role": "user", "content": "hi"}}, "/result/content/0", "/result/content"),
    ],
)  # fmt: skip
def test_written_at_names_where_the_document_writes_a_part_read_from_a_legacy_key(
    kind: str, value: dict[str, Any], read: str, written: str
) -> None:
    """Where a value writes what its form read holds at a pointer (what check names for a problem of the form read:
    a tool result's output/0 is its result/0): for every mapping of the legacy keys, the pointer of the part read
    is one the form read has, and the pointer given one the value has."""
    from agentmsg._codec.legacy import written_at

    current, notes = agentmsg.read_legacy_keys(value, kind)
    assert notes and _resolves(current, read), (current, read)
    assert written_at(value, read) == written and _resolves(value, written)
    assert written_at(current, read) == read  # (a value with no legacy key: the pointer itself)


def _resolves(value: Any, pointer: str) -> bool:
    for step in pointer.split("/")[1:]:
        if type(value) is list and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        elif type(value) is dict and step in value:
            value = value[step]
        else:
            return False
    return True
