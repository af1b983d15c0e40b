"""Event input nested deeper than ``limits.max_depth`` (issue 28, class 1): a 2 KB line nested 1,000 deep made
``reduce_stream``, ``Reducer.feed_jsonl`` and ``agentmsg reduce`` raise a bare ``RecursionError``. Every event reader
now refuses such input where it reads it: a problem with rule ``max-depth`` at the pointer, in the event, of the array
or object that crosses the limit (tolerant), a :class:`SizeLimitError` (strict); the other events are kept, and input
at the limit is read as before."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import pytest

from agentmsg import Reducer, SizeLimitError, limits, reduce_events, reduce_stream
from agentmsg.errors import pointer_of
from agentmsg.events import _jsonl, iter_jsonl, iter_sse_events, read_events
from tests._support.deep import allocated_peak, held_bytes, nested_results, tricky_nest

TS = "2026-11-22T10:34:38.563248392Z"
DEEP = "[" * 1000 + "]" * 1000  # the issue's 2 KB line: 1,000 levels


def ev(n: int, kind: str, **keys: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{n}", "createdAt": TS, "replyId": "r", **keys}


def with_raw(event: dict[str, Any], key: str, raw: str) -> bytes:
    """``event``'s JSON with ``key`` holding the JSON text ``raw`` (of any depth)."""
    return orjson.dumps(event)[:-1] + f',"{key}":{raw}}}'.encode()


def stream(bad: bytes) -> list[bytes]:
    return [
        orjson.dumps(ev(0, "AGENT_START")),
        orjson.dumps(ev(1, "TEXT_BLOCK_START", blockId="t")),
        orjson.dumps(ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="kept ")),
        bad,
        orjson.dumps(ev(4, "TEXT_BLOCK_DELTA", blockId="t", delta="too")),
        orjson.dumps(ev(5, "TEXT_BLOCK_END", blockId="t")),
        orjson.dumps(ev(6, "AGENT_END")),
    ]


# Where the deep value sits: an unknown key of a plain delta (the fast path appends those without a schema check),
# a known free-form value, an id the reducer quotes in a problem, the whole line, an object nesting.
BAD_LINES = {
    "delta-unknown-key": with_raw(ev(3, "TEXT_BLOCK_DELTA", blockId="t", delta="lost"), "x", DEEP),
    "delta-created-at": with_raw(
        {"type": "TEXT_BLOCK_DELTA", "id": "e3", "blockId": "t", "delta": "lost"}, "createdAt", DEEP
    ),
    "custom-value": with_raw(ev(3, "CUSTOM", name="n"), "value", DEEP),
    "event-id": with_raw({"type": "CUSTOM", "createdAt": TS, "name": "n"}, "id", DEEP),
    "whole-line": DEEP.encode(),
    "objects": ('{"a":' * 1000 + "1" + "}" * 1000).encode(),
}
# Where each is said: the array or object 254 levels into the event (the 4th: /3), the first past the limit.
DEEP_AT = {
    "delta-unknown-key": "/3/x" + "/0" * 253,
    "delta-created-at": "/3/createdAt" + "/0" * 253,
    "custom-value": "/3/value" + "/0" * 253,
    "event-id": "/3/id" + "/0" * 253,
    "whole-line": "/3" + "/0" * 254,
    "objects": "/3" + "/a" * 254,
}


def _deep_problems(r: Reducer) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in r.problems if p.rule == "max-depth"]


@pytest.mark.parametrize("where", sorted(BAD_LINES))
def test_a_line_nested_1000_deep_is_a_problem_not_a_recursion_error(where: str) -> None:
    body = b"\n".join(stream(BAD_LINES[where])) + b"\n"
    for read in ("reduce_stream", "feed_jsonl"):
        r = Reducer()
        if read == "reduce_stream":
            (msg,) = reduce_stream(body, reducer=r)
        else:
            r.feed_jsonl(body)
            (msg,) = r.finish()
        assert msg.text_content == "kept too", read  # the other events are kept
        assert _deep_problems(r) == [(DEEP_AT[where], "max-depth")], (read, r.problems)
        with pytest.raises(SizeLimitError) as info:
            reduce_stream(body, strict=True) if read == "reduce_stream" else Reducer(strict=True).feed_jsonl(body)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [(DEEP_AT[where], "max-depth")]


@pytest.mark.parametrize("levels", [300, 2000], ids=["past-the-limit", "past-the-parsers-limit"])
def test_every_event_reader_says_a_deep_event_at_the_array_or_object_that_crosses_the_limit(levels: int) -> None:
    """Said at the event (``/3``, or ``""`` by the event iterators), however deep in it the value sat: now at the
    array or object 254 levels into the event, the first past the limit, found by one scan of the line's text on
    that error path (a key with the characters a pointer escapes, strings of brackets and commas passed over), and
    in an event fed as a dict alike."""
    value, text, steps = tricky_nest(levels)
    bad = with_raw(ev(3, "CUSTOM", name="n"), "value", text)
    inside = pointer_of(["value", *steps[:253]])  # (the event, its value, then level 2, 3, ... 254)
    lines = stream(bad)
    bodies = _bodies(lines)
    for kind, body in bodies.items():
        r = Reducer()
        (msg,) = reduce_stream(body, reducer=r)
        assert msg.text_content == "kept too", kind
        assert _deep_problems(r) == [("/3" + inside, "max-depth")], kind
        with pytest.raises(SizeLimitError) as info:
            reduce_stream(body, strict=True)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/3" + inside, "max-depth")], kind
        seen: list[Any] = []
        assert len(list(read_events(body, strict=False, on_problem=seen.append))) == 6
        assert [(p.pointer, p.rule) for p in seen] == [(inside, "max-depth")], kind
    r = Reducer()
    r.feed_jsonl(bodies["jsonl"])
    r.finish()
    assert _deep_problems(r) == [("/3" + inside, "max-depth")]
    seen = []
    assert len(list(iter_jsonl(bodies["jsonl"], strict=False, on_problem=seen.append))) == 6
    assert len(list(iter_sse_events(bodies["sse"], strict=False, on_problem=seen.append))) == 6
    assert [(p.pointer, p.rule) for p in seen] == [(inside, "max-depth")] * 2
    fed = Reducer()
    for event in [orjson.loads(line) for line in lines[:3]] + [{**ev(3, "CUSTOM", name="n"), "value": value}]:
        fed.feed(event)
    assert _deep_problems(fed) == [("/3" + inside, "max-depth")]


def test_the_fast_path_and_the_reference_agree_on_a_deep_line() -> None:
    """The tolerant fast path (one msgspec pass over a run) must not take a deep delta the reference refuses."""
    lines = stream(BAD_LINES["delta-created-at"])
    fast = Reducer()
    fast.feed_jsonl(b"\n".join(lines))
    reference = Reducer()
    _jsonl.feed_lines(reference._st, reference._feed_parsed, lines, 1)
    assert [m.to_dict() for m in fast.finish()] == [m.to_dict() for m in reference.finish()]
    assert fast.problems == reference.problems


def test_many_brackets_in_text_keep_the_fast_path_exact() -> None:
    """Brackets inside strings (code in a delta) are counted by the cheap pre-check, never refused."""
    code = "{[" * 600
    lines = stream(orjson.dumps(ev(3, "TEXT_BLOCK_DELTA", blockId="t", delta=code)))
    r = Reducer()
    r.feed_jsonl(b"\n".join(lines))
    (msg,) = r.finish()
    assert msg.text_content == "kept " + code + "too" and r.problems == []


@pytest.mark.parametrize("depth", [254, 255])
def test_the_limit_itself_is_read_and_one_level_more_is_not(depth: int) -> None:
    value = '{"a":' + "[" * (depth - 2) + "]" * (depth - 2) + "}"  # the event and the value are two levels
    body = b"\n".join(stream(with_raw(ev(3, "CUSTOM", name="n"), "value", value)))
    r = Reducer()
    reduce_stream(body, reducer=r)
    assert _deep_problems(r) == ([] if depth == 254 else [("/3/value/a" + "/0" * 252, "max-depth")])
    if depth == 254:
        reduce_stream(body, strict=True)  # accepted as it is


def test_a_lowered_limit_holds_for_every_event_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "max_depth", 8)
    bad = with_raw(ev(3, "CUSTOM", name="n"), "value", "[" * 8 + "]" * 8)
    body = b"\n".join(stream(bad)) + b"\n"
    r = Reducer()
    reduce_stream(body, reducer=r)
    assert _deep_problems(r) == [("/3/value" + "/0" * 7, "max-depth")]
    sse = b"".join(b"data: " + line + b"\n\n" for line in stream(bad))
    r = Reducer()
    reduce_stream(sse, reducer=r)
    assert _deep_problems(r) == [("/3/value" + "/0" * 7, "max-depth")]


def _bodies(lines: list[bytes], *kinds: str) -> dict[str, bytes]:
    """The event lines as a stream body of each kind (all three, or those named): JSON Lines, SSE, a JSON array."""
    bodies = {
        "jsonl": b"\n".join(lines) + b"\n",
        "sse": b"".join(b"data: " + line + b"\n\n" for line in lines),
        "values": b"[" + b",".join(lines) + b"]",
    }
    return {k: v for k, v in bodies.items() if not kinds or k in kinds}


def test_sse_and_json_array_streams_are_held_to_the_limit_too() -> None:
    for kind, body in _bodies(stream(BAD_LINES["custom-value"]), "sse", "values").items():
        r = Reducer()
        (msg,) = reduce_stream(body, reducer=r)
        assert msg.text_content == "kept too", kind
        assert _deep_problems(r) == [(DEEP_AT["custom-value"], "max-depth")], (kind, r.problems)
        with pytest.raises(SizeLimitError):
            reduce_stream(body, strict=True)


def test_the_event_iterators_refuse_a_deep_event_with_the_rule() -> None:
    lines = stream(BAD_LINES["whole-line"])
    jsonl = b"\n".join(lines) + b"\n"
    sse = b"".join(b"data: " + line + b"\n\n" for line in lines)
    readers: tuple[Callable[..., Iterable[Any]], ...] = (
        lambda **k: iter_jsonl(jsonl, **k),
        lambda **k: iter_sse_events(sse, **k),
        lambda **k: read_events(jsonl, **k),
    )
    for events in readers:
        seen: list[Any] = []
        assert len(list(events(strict=False, on_problem=seen.append))) == 6
        assert [p.rule for p in seen] == ["max-depth"]
        with pytest.raises(SizeLimitError):
            list(events(strict=True))


def test_events_given_as_python_values_that_deep_are_problems_too() -> None:
    deep: Any = []
    for _ in range(1000):
        deep = [deep]
    r = Reducer()
    r.feed(ev(0, "AGENT_START"))
    r.feed({"type": "CUSTOM", "id": deep, "createdAt": TS, "name": "n"})  # quoted in its problem: never repr'd whole
    r.feed({"type": deep, "id": "e2", "createdAt": TS})
    r.finish()
    assert {(p.pointer, p.rule) for p in r.problems} >= {("/1/id", "type"), ("/1/id" + "/0" * 253, "max-depth")}
    assert all(len(p.message) < 400 for p in r.problems)
    with pytest.raises(SizeLimitError):
        reduce_events([{**ev(0, "AGENT_START"), "replyId": deep}], strict=True)


def _shared(depth: int, *, as_list: bool, twice: bool = True) -> Any:
    """A dict (a list) of the same dict (list) twice, ``depth`` levels down: ``depth`` containers, ``2**depth``
    paths; not ``twice``: the chain of one each, the same depth (its first path is the shared value's)."""
    value: Any = [] if as_list else {}
    for _ in range(depth):
        if as_list:
            value = [value, value] if twice else [value]
        else:
            value = {"a": value, "b": value} if twice else {"a": value}
    return value


def _carrying(value: Any) -> dict[str, list[dict[str, Any]]]:
    """Replies whose events, fed as objects, carry ``value`` where it reaches the message."""
    result = {"id": "m", "role": "ASSISTANT", "content": [], "metadata": {"k": value}}
    return {
        "grounding": [ev(1, "MODEL_CALL_END", usage={"inputTokens": 3}, metadata={"grounding": {"v": value}})],
        "agent-result": [ev(1, "AGENT_RESULT", result=result)],
        "error": [ev(1, "CUSTOM", name="agentmsg.error", value={"message": "m", "detail": value})],
        "tool-input": [
            ev(1, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
            ev(2, "TOOL_CALL_END", toolCallId="c", input={"v": value}),
        ],
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trusted", [False, True], ids=["checked", "trusted"])
@pytest.mark.parametrize("as_list", [False, True], ids=["dicts", "lists"])
def test_a_value_sharing_its_members_past_the_limit_is_reduced_as_the_same_depth_unshared(
    as_list: bool, trusted: bool
) -> None:
    """A value in events fed as objects that shares its members (a dict of the same dict twice, 300 levels down:
    300 containers, 2**300 paths) as a grounding, AGENT_RESULT metadata, an error's value or a tool call's input:
    the message's walk for what JSON cannot carry went path by path (fed trusted, where the schema check does not
    skip the event first, for ever; a snapshot too). It walks each container once per depth now: the reply's message,
    snapshot and problems are those of a chain of one container per level, as deep (the guard: 2**300 paths would
    take for ever). A tool call's input so, fed trusted, is no such chain: its block is left out (a chain's deepest
    value is, and the block kept), as the same value unshared, whose every path is too deep, would be."""

    def reduced(events: list[dict[str, Any]]) -> tuple[Any, ...]:
        r = Reducer()
        r.feed_many([ev(0, "AGENT_START"), *events], trusted=trusted)
        snapshot = r.snapshot()
        r.feed_many([ev(9, "AGENT_END")], trusted=trusted)
        messages = [m.to_json_bytes() for m in r.finish()]
        return snapshot and snapshot.to_json_bytes(), messages, [(p.pointer, p.rule, p.message) for p in r.problems]

    shared = _carrying(_shared(300, as_list=as_list))
    chain = _carrying(_shared(300, as_list=as_list, twice=False))
    for where, events in shared.items():
        got = reduced(events)
        assert any(rule == "max-depth" for _, rule, _ in got[2]), where
        if trusted and where == "tool-input":
            snapshot, (message,), problems = got
            assert snapshot is not None and orjson.loads(snapshot)["content"] == orjson.loads(message)["content"] == []
            assert [(pointer, rule) for pointer, rule, _ in problems] == [("/1", "max-depth")]
            assert problems[0][2].endswith("block left out")
            continue
        assert got == reduced(chain[where]), where


def test_a_legacy_key_holding_the_same_deep_value_is_refused_unread() -> None:
    """A tool result's legacy ``result`` beside its ``output`` (a tool call's ``arguments`` beside its ``input``) 100,000
    deep: the comparison recursed (a bare RecursionError; a RangeError in @agentmsg/client), and the event is now refused
    for its depth before its legacy keys are read, strict or not (sdk/typescript/test/hostile.test.mjs holds the
    client alike)."""
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    results = [{"type": "tool_result", "id": "c", "name": "f", "output": deep, "result": deep}]
    calls = [{"type": "tool_use", "id": "c", "name": "f", "input": deep, "arguments": deep}]
    for at, event in (
        ("/1/toolResults/0/output", ev(1, "EXTERNAL_EXECUTION_RESULT", toolResults=results)),
        ("/1/toolCalls/0/input", ev(1, "REQUIRE_USER_CONFIRM", toolCalls=calls)),
    ):
        r = Reducer()
        r.feed(ev(0, "AGENT_START"))
        r.feed(event)
        r.finish()
        deep_at = (at + "/0" * 251, "max-depth")  # (the first list past the limit, in the key met first)
        assert [(p.pointer, p.rule) for p in r.problems] == [deep_at, ("/0", "incomplete_stream")]
        with pytest.raises(SizeLimitError) as info:
            reduce_events([ev(0, "AGENT_START"), event], strict=True)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [deep_at]


def test_tool_results_nested_in_tool_results_are_refused_unread() -> None:
    """The blocks an event carries whole (EXTERNAL_EXECUTION_RESULT's tool results, the message of an AGENT_RESULT,
    AgentScope Python's with its 2.x block keys) were read for legacy keys before the depth limit refused the event:
    by recursion (tool results nested 3,000 deep raised a bare RecursionError, a RangeError in @agentmsg/client), then
    with a stack but a pointer per level (100,000 deep: Python killed for its memory). The event is now refused for
    its depth unread: no note (the innermost's text output, the message's lowercase role), as
    sdk/typescript/test/hostile.test.mjs holds the client."""
    deep = nested_results(3000)
    message = {"id": "m", "role": "assistant", "content": [deep]}
    for at, event in (
        ("/1/toolResults/0" + "/output/0" * 126, ev(1, "EXTERNAL_EXECUTION_RESULT", toolResults=[deep])),
        ("/1/result/content/0" + "/output/0" * 125 + "/output", ev(1, "AGENT_RESULT", result=message)),
    ):
        r = Reducer()
        r.feed(ev(0, "AGENT_START"))
        r.feed(event)
        r.finish()
        assert [(p.pointer, p.rule) for p in r.problems] == [(at, "max-depth"), ("/0", "incomplete_stream")]


@pytest.mark.parametrize("extra", [0, 1])
def test_an_event_at_the_limit_has_its_legacy_keys_read_and_one_level_more_has_none(extra: int) -> None:
    """The depth the legacy reader checks is the one the schema check refuses: 254 levels (the event, toolResults,
    and a tool result with its output list, 125 deep, then metadata) are read, 255 are only refused."""
    deep: Any = {"type": "tool_result", "id": "c", "name": "f", "output": [], "toolUseId": "c", "metadata": {}}
    if extra:
        deep["metadata"] = {"a": {}}
    for _ in range(125):
        deep = {"type": "tool_result", "id": "c", "name": "f", "output": [deep]}
    r = Reducer()
    r.feed(ev(0, "AGENT_START"))
    r.feed(ev(1, "EXTERNAL_EXECUTION_RESULT", toolResults=[deep]))
    got = [(p.pointer, p.rule) for p in r.problems]
    note = ("/1/toolResults/0" + "/output/0" * 125 + "/toolUseId", "legacy-key")
    too_deep = ("/1/toolResults/0" + "/output/0" * 125 + "/metadata/a", "max-depth")
    assert got == ([too_deep] if extra else [note])


def test_a_deep_event_is_refused_in_memory_linear_in_its_size() -> None:
    """Memory, not time: tool results 5,000 deep, each with a legacy ``toolUseId``, were read into 5,000 notes of
    pointers up to 5,000 steps (45,000 characters) long: 110 MB for an event of 1.2 MB (and 0.9 GB at 10,000 deep).
    Refused unread, feeding it allocates less than the event itself holds (its dicts and lists): about 0.4 MB at any
    depth, the schema check's walk to the limit."""
    depth = 5000
    deep = nested_results(depth, uses=True)
    size = held_bytes(deep)
    r = Reducer()
    r.feed(ev(0, "AGENT_START"))
    r.feed(ev(1, "EXTERNAL_EXECUTION_RESULT", toolResults=[nested_results(1, uses=True)]))  # (compiles the schema)
    assert [p.rule for p in r.problems] == ["legacy-key"] * 2
    with allocated_peak() as peaks:
        r.feed(ev(2, "EXTERNAL_EXECUTION_RESULT", toolResults=[deep]))
    (peak,) = peaks
    assert peak < size, f"{peak} bytes allocated refusing an event of {size} bytes, {depth} deep"
    assert [(p.pointer, p.rule) for p in r.problems][2:] == [("/2/toolResults/0" + "/output/0" * 126, "max-depth")]


def test_the_issues_line_through_the_cli_is_one_problem_line(tmp_path: Any) -> None:
    from tests._support.cli import run

    src = tmp_path / "deep.jsonl"
    src.write_bytes(b"\n".join(stream(BAD_LINES["delta-unknown-key"])) + b"\n")
    r = run("reduce", str(src))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert json.loads(r.stdout)["content"] == [{"type": "text", "text": "kept too"}]
    (said,) = [line for line in r.stderr.splitlines() if "max-depth" in line]
    assert "/3/x/0/0" in said and len(said) < 300  # (the pointer of 254 steps cut, as a long key's is)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("strict", [False, True])
def test_a_depth_limit_no_message_fits_in_raises_after_saying_the_problems(
    depth: int, strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``limits.max_depth`` 1 or 2 no message can be built (its blocks are 3 levels deep, and so is the
    tolerant rule's last resort): the reply's AGENT_END raises SizeLimitError (rule max-depth, at the part of the
    message that crosses the limit: its content list under 1, the last resort's list of errors under 2) in either
    mode, as the Reducer's docstring says, after the problems found are recorded. Those said "the reduced message's
    is invalid" with two spaces (an empty pointer: the message itself) under a depth of 1; now "the reduced
    message is invalid"."""
    monkeypatch.setattr(limits, "max_depth", depth)
    reducer = Reducer(strict=strict)
    for event in (ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t")):
        reducer.feed(event)
    reducer.feed(ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="hi"))
    reducer.feed(ev(3, "TEXT_BLOCK_END", blockId="t"))
    with pytest.raises(SizeLimitError) as info:
        reducer.feed(ev(4, "AGENT_END"))
    at = "/content" if depth == 1 else "/metadata/agentmsg_reduce_errors"
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(at, "max-depth")]
    said = reducer.problems
    assert said and {(p.pointer, p.rule) for p in said} == {("/0", "max-depth")}
    assert all("  " not in p.message and p.message.startswith("the reduced message") for p in said), said


@pytest.mark.parametrize("strict", [False, True])
def test_a_depth_limit_of_1_says_the_whole_message_is_too_deep_not_its_parts(
    strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``limits.max_depth`` 1 the salvage checks each part of the reduced message (a metadata key, the usage, the
    timestamp, the name) in an empty message, itself too deep there (its content list is 2 levels deep): it said
    "the reduced message is invalid (nested deeper than 1 levels ...): usage left out", and so for the timestamp and
    the name, each absent, none of them at fault. Now the message as a whole is said too deep, as under a depth of 2,
    and no part is said left out."""
    monkeypatch.setattr(limits, "max_depth", 1)
    reducer = Reducer(strict=strict)
    for n, kind in enumerate(("AGENT_START", "TEXT_BLOCK_START", "TEXT_BLOCK_DELTA", "TEXT_BLOCK_END")):
        reducer.feed(ev(n, kind, **({"blockId": "t"} if n else {}), **({"delta": "hi"} if n == 2 else {})))
    with pytest.raises(SizeLimitError):
        reducer.feed(ev(4, "AGENT_END"))
    said = [(p.pointer, p.rule, p.message) for p in reducer.problems]
    assert said == [("/0", "max-depth", "the reduced message: nested deeper than 1 levels (limits.max_depth)")], said


@pytest.mark.parametrize("branches", [1, 2])
def test_a_tool_input_too_deep_fed_trusted_keeps_the_rest_of_the_message(branches: int) -> None:
    """A tool call's input nested 300 deep, fed trusted (no event check cuts it first): the salvage prunes the block
    until it is valid alone, yet in the message it sits two levels deeper and is still too deep. The last resort then
    kept an empty message of the id only: its timestamp, name, usage, metadata and text were lost, unsaid. The
    message's check now prunes the block again where it says (the input kept to the limit); where it names only one
    of several values too deep (``branches`` 2: a second one, under another key), the message keeps all but its
    blocks other than text and thinking, and says so."""
    chain = _shared(300, as_list=False, twice=False)
    tool_input = {"x": chain} if branches == 1 else {"x": chain, "y": _shared(251, as_list=False, twice=False)}
    r = Reducer(name="bot")
    r.feed_many(
        [
            ev(0, "AGENT_START"),
            ev(1, "TEXT_BLOCK_START", blockId="t"),
            ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="hi"),
            ev(3, "TEXT_BLOCK_END", blockId="t"),
            ev(4, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
            ev(5, "TOOL_CALL_END", toolCallId="c", input=tool_input),
            ev(6, "MODEL_CALL_END", usage={"inputTokens": 3}, metadata={"model": "m"}),
            ev(7, "AGENT_END"),
        ],
        trusted=True,
    )
    (message,) = r.finish()
    got = message.to_dict()
    assert (got["id"], got["name"], got["timestamp"], got["usage"]) == (
        "r",
        "bot",
        "2026-11-22 10:34:38.563",
        {"inputTokens": 3},
    )
    assert got["metadata"]["agentmsg_model"] == "m"
    said = [(p.pointer, p.rule, p.message.rsplit(": ", 1)[-1]) for p in r.problems]
    if branches == 1:
        text, call = got["content"]
        assert text == {"type": "text", "text": "hi"} and call["type"] == "tool_use" and call["id"] == "c"
        depth, node = 0, call["input"]["x"]
        while node:
            depth, node = depth + 1, node["a"]
        assert depth == 249  # (the message 254 levels deep: content, the block, input, x, then the chain)
        assert said == [("/4", "max-depth", "value left out")] * 2
    else:
        assert got["content"] == [{"type": "text", "text": "hi"}]
        assert said == [("/4", "max-depth", "value left out")] * 2 + [
            ("/0", "max-depth", "its blocks but text and thinking left out")
        ]
    assert len(got["metadata"]["agentmsg_reduce_errors"]) == 2 + branches - 1


@pytest.mark.parametrize("trusted", [False, True], ids=["checked", "trusted"])
def test_the_last_resort_keeps_what_is_valid_alone_and_says_so(trusted: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``limits.max_depth`` 3 a thinking block with a signature is valid alone (2 levels) and too deep in the
    message (4), kept by the salvage as the text it keeps at least: the message still fails, and the last resort was
    an empty message of the id only, its name, timestamp and usage lost and that unsaid. Now it keeps every part
    that was valid alone but the blocks, and a problem says so."""
    monkeypatch.setattr(limits, "max_depth", 3)
    r = Reducer(name="bot")
    r.feed_many(
        [
            ev(0, "AGENT_START"),
            ev(1, "THINKING_BLOCK_START", blockId="t"),
            ev(2, "THINKING_BLOCK_DELTA", blockId="t", delta="hm", signature="sig"),
            ev(3, "THINKING_BLOCK_END", blockId="t"),
            ev(4, "MODEL_CALL_END", usage={"inputTokens": 3}, metadata={"model": "m"}),
            ev(5, "AGENT_END"),
        ],
        trusted=trusted,
    )
    (message,) = r.finish()
    got = message.to_dict()
    assert (got["id"], got["name"], got["timestamp"], got["usage"], got["content"]) == (
        "r",
        "bot",
        "2026-11-22 10:34:38.563",
        {"inputTokens": 3},
        [],
    )
    assert got["metadata"] == {"agentmsg_model": "m", "agentmsg_reduce_errors": ["/content/0/metadata [max-depth]"]}
    assert [(p.pointer, p.rule, p.message) for p in r.problems][-1] == (
        "/0",
        "max-depth",
        "the reduced message: nested deeper than 3 levels (limits.max_depth): its blocks left out",
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["checked", "trusted", "strict"])
@pytest.mark.parametrize("as_list", [False, True], ids=["dicts", "lists"])
def test_a_value_sharing_its_members_written_past_max_bytes_is_left_out(as_list: bool, how: str) -> None:
    """A tool call's input fed as objects that shares its members within the depth limit (a dict of the same dict
    twice, 40 levels down: 2**40 values as JSON, terabytes) cannot be written back within ``limits.max_bytes``: the
    event check (its C round trip) and, fed trusted, the C writer's check of the message wrote it path by path, for
    ever. Checked, the event is skipped with rule ``max-bytes``; trusted, the message's check refuses it unwritten
    and its block is left out, said with that rule; strict, the event is refused (the guard: 2**40 values would take
    for ever)."""
    shared = _shared(40, as_list=as_list)
    events = [
        ev(0, "AGENT_START"),
        *_carrying(shared)["tool-input"],
        ev(3, "TEXT_BLOCK_START", blockId="t"),
        ev(4, "TEXT_BLOCK_DELTA", blockId="t", delta="kept"),
        ev(5, "TEXT_BLOCK_END", blockId="t"),
        ev(9, "AGENT_END"),
    ]
    r = Reducer(strict=how == "strict")
    if how == "strict":
        with pytest.raises(SizeLimitError) as info:
            r.feed_many(events)
        assert [(p.pointer[:8], p.rule) for p in info.value.problems] == [("/2/input", "max-bytes")]
        return
    r.feed_many(events, trusted=how == "trusted")
    (message,) = r.finish()
    problems = [(p.pointer, p.rule, p.message) for p in r.problems if p.rule == "max-bytes"]
    assert len(problems) == 1, r.problems
    ((pointer, _, words),) = problems
    if how == "trusted":
        assert pointer == "/1" and words.endswith("block left out")
        assert [b["type"] for b in message.to_dict()["content"]] == ["text"]
    else:
        assert pointer.startswith("/2/input/v/") and words.endswith("event skipped")
        assert [(b["type"], b.get("input")) for b in message.to_dict()["content"]] == [("tool_use", {}), ("text", None)]
    assert message.to_dict()["content"][-1]["text"] == "kept"
