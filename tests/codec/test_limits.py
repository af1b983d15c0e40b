"""Issue 8, message side: every reproduction is a regression test, and each class is tested at its root.

* error reporting is linear in the input (checked by counting the work, never by timing);
* depth: one limit (``limits.max_depth``, default and maximum 254 = what orjson writes) on every decode path
  (the fast path included), the same on encode; no RecursionError anywhere;
* integers beyond the 64-bit range JSON is written in and lone surrogates are rejected from JSON text, from
  dicts and from constructors (rules ``integer-range``, ``lone-surrogate``), never accepted and then unwritable;
  never turned into floats;
* ``max_bytes`` counts UTF-8 bytes, a lowered ``max_depth`` holds on the fast path too.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    Msg,
    SizeLimitError,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    ValidationError,
    limits,
)
from agentmsg._codec import jsontext
from agentmsg._codec import schemas as schemas
from agentmsg.errors import pointer_of
from tests._support.deep import tricky_nest
from tests._support.procs import guarded


def _nested_results(levels: int, inner: dict[str, Any]) -> dict[str, Any]:
    """An ASSISTANT message whose only block nests ``levels`` tool results around ``inner``: JSON depth
    2 * levels + 3 (message, content, then a result and its output per level, then ``inner``)."""
    block = inner
    for _ in range(levels):
        block = {"type": "tool_result", "id": "c", "output": [block]}
    return {"id": "m", "role": "ASSISTANT", "content": [block]}


def _nodes(value: Any) -> int:
    stack, n = [value], 0
    while stack:
        node = stack.pop()
        n += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return n


@pytest.fixture
def validated_nodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of JSON nodes handed to the validator for error reporting, one entry per call."""
    sizes: list[int] = []
    original = schemas._level_errors

    def counting(validator: Any, instance: Any, prefix: Any, closed: bool) -> Any:
        sizes.append(_nodes(instance))
        return original(validator, instance, prefix, closed)

    monkeypatch.setattr(schemas, "_level_errors", counting)
    yield sizes


def _problems(call: Callable[[], Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        call()
    return [(p.pointer, p.rule) for p in info.value.problems]


# ---- issue 8 item 1: error reporting in linear time -------------------------------------------------


def test_nested_tool_results_with_a_bad_leaf_report_in_linear_work(validated_nodes: list[int]) -> None:
    """The issue's 127 nested results (innermost text 5) took 44 s, error reporting being about cubic in depth.
    Now each level is validated once, shallow: the work is linear in the input."""
    for levels in (20, 60, 125):
        validated_nodes.clear()
        value = _nested_results(levels, {"type": "text", "text": 5})
        problems = _problems(partial(Msg.from_json, json.dumps(value)))
        assert problems == [("/content/0" + "/output/0" * levels + "/text", "type")]
        assert sum(validated_nodes) <= 5 * _nodes(value), (levels, sum(validated_nodes), _nodes(value))
    # The issue's exact message is deeper than the limit: rejected at once by depth (at the block 254 deep).
    assert _problems(lambda: Msg.from_json(json.dumps(_nested_results(127, {"type": "text", "text": 5})))) == [
        ("/content/0" + "/output/0" * 126, "max-depth")
    ]


def test_a_problem_at_every_level_is_reported_in_linear_work(validated_nodes: list[int]) -> None:
    value = _nested_results(100, {"type": "text", "text": "ok"})
    block = value["content"][0]
    while block["type"] == "tool_result":
        block["state"] = "bogus"
        block = block["output"][0]
    problems = _problems(lambda: Msg.from_dict(value))
    assert len(problems) == 100 and {rule for _, rule in problems} == {"enum"}
    assert {pointer for pointer, _ in problems} == {"/content/0" + "/output/0" * n + "/state" for n in range(100)}
    assert sum(validated_nodes) <= 5 * _nodes(value)


def test_unknown_keys_and_strict_reading_at_depth_are_linear(validated_nodes: list[int]) -> None:
    value = _nested_results(100, {"type": "text", "text": "ok", "newer": 1})
    block = value["content"][0]
    while block["type"] == "tool_result":
        block["future"] = True
        block = block["output"][0]
    msg = Msg.from_dict(value)
    assert len(agentmsg.find_unknown_keys(msg)) == 101
    assert sum(validated_nodes) <= 5 * _nodes(value)
    validated_nodes.clear()
    assert len(_problems(lambda: Msg.from_dict(value, strict=True))) == 101
    assert sum(validated_nodes) <= 5 * _nodes(value)


def _bad_events() -> list[dict[str, Any]]:
    """Every sample event with each of its keys dropped, each value of the wrong type, and events of an unknown
    ``type``, of no ``type`` and of a ``type`` that is no string: those the schema rejects."""
    from tests._support.events import EVENTS

    out: list[dict[str, Any]] = []
    for event in EVENTS:
        for key in event:
            out.append({k: v for k, v in event.items() if k != key})
            out.append({**event, key: [1] if key != "type" else 7})
    out += [{"type": "NO_SUCH_EVENT", "id": "e"}, {"id": "e"}, {"type": None}]
    return [e for e in out if not agentmsg.is_valid(e, "event")]  # (some keys are optional)


def test_a_rejected_event_gets_the_problems_the_whole_union_gives() -> None:
    """Issue 28: an event is checked against the branch its ``type`` picks, not the union of all (each walked
    per event); what is reported is what walking the union reported, every problem with its pointer and rule."""
    uri = schemas.schema_uri("event")
    events = _bad_events()
    assert len(events) > 40
    for event in events:
        for closed in (False, True):
            picked = schemas._problems(event, uri, closed)
            with pytest.MonkeyPatch.context() as m:
                m.setattr(schemas, "_dispatch", lambda uri: None)
                walked = schemas._problems(event, uri, closed)
            assert picked == walked and picked, event


def test_rejecting_an_event_reads_no_schema_and_walks_no_other_branch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: rejecting an event cost ~600 times accepting one (10,000 TEXT_BLOCK_START lines without
    ``createdAt``/``replyId``: 2.7 s): each rejection recomputed its union's tags from the schema and walked every
    branch. Now the tags and annotations are read once per schema location (no schema node is looked up again)
    and only the branch the event's ``type`` picks is walked (counted, not timed)."""
    uri = schemas.schema_uri("event")
    events = _bad_events()
    for event in events:  # (what is read once per schema location is read here)
        schemas._problems(event, uri, False)
    looked_up: list[str] = []
    validators: list[str] = []
    resolve, validator = schemas._resolve, schemas._validator

    def counting_resolve(at: str) -> Any:
        looked_up.append(at)
        return resolve(at)

    def counting_validator(ref: str, closed: bool = False, cut: bool = False) -> Any:
        validators.append(ref)
        return validator(ref, closed, cut)

    monkeypatch.setattr(schemas, "_resolve", counting_resolve)
    monkeypatch.setattr(schemas, "_validator", counting_validator)
    for _ in range(3):
        for event in events:
            with pytest.raises(ValidationError):
                agentmsg.validate(event, "event")
    assert looked_up == []
    typed = [e for e in events if e.get("type") in schemas._event_branches()]
    validators.clear()
    for event in typed:
        with pytest.raises(ValidationError):
            agentmsg.validate(event, "event")
    # one validator for is_valid (the union's, which stops at the branch), then the branch's for the problems
    assert validators.count(uri) == len(typed), validators
    assert len(validators) == 2 * len(typed)


# ---- issue 8 item 2: one depth limit, on decode and encode, no RecursionError --------------------------


def _deepest_ok() -> dict[str, Any]:
    return _nested_results(125, {"type": "text", "text": "x", "empty": {}})  # depth 254 exactly


DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "from_json bytes": lambda v: Msg.from_json(json.dumps(v).encode()),
    "from_json str": lambda v: Msg.from_json(json.dumps(v)),
    "from_dict": lambda v: Msg.from_dict(v),
    "strict from_json": lambda v: Msg.from_json(json.dumps(v), strict=True),
    "validate": lambda v: agentmsg.validate(v),
}


@pytest.mark.parametrize("path", sorted(DECODERS))
def test_depth_254_is_accepted_and_255_rejected_on_every_path(path: str) -> None:
    deepest = _deepest_ok()
    if path != "strict from_json":
        DECODERS[path](deepest)
    # (said at the array or object that crosses the limit: 254 steps in)
    too_deep = _problems(lambda: DECODERS[path](_nested_results(126, {"type": "text", "text": "x"})))
    assert too_deep == [("/content/0" + "/output/0" * 126, "max-depth")]
    metadata_255 = {"id": "m", "role": "USER", "content": [], "metadata": {"a": json.loads("[" * 253 + "]" * 253)}}
    assert _problems(lambda: DECODERS[path](metadata_255)) == [("/metadata/a" + "/0" * 252, "max-depth")]
    metadata_254 = {"id": "m", "role": "USER", "content": [], "metadata": {"a": json.loads("[" * 252 + "]" * 252)}}
    DECODERS[path](metadata_254)


@pytest.mark.parametrize("levels", [300, 2000], ids=["past-the-limit", "past-the-parsers-limit"])
def test_a_value_nested_too_deep_is_said_at_the_array_or_object_that_crosses_the_limit(levels: int) -> None:
    """Said at pointer "" (the whole input) by every reader, however deep in it the value sat: now at the array or
    object 254 levels in, the first past ``limits.max_depth``, in text (str, bytes: the parser's refusal too, past
    its own limit of about 1,000 levels, by one scan of the text on that error path) and in a dict alike."""
    value, text, steps = tricky_nest(levels)
    head = '{"id":"m","role":"USER","content":[],"metadata":{"m":'
    data = head + text + "}}"
    pointer = pointer_of(["metadata", "m", *steps[:252]])  # (the message, its metadata, then level 2, 3, ... 254)
    said = [(pointer, "max-depth")]
    assert _problems(partial(Msg.from_json, data)) == said
    assert _problems(partial(Msg.from_json, data.encode())) == said
    assert _problems(partial(Msg.from_json, bytearray(data.encode()))) == said
    message = {"id": "m", "role": "USER", "content": [], "metadata": {"m": value}}
    assert _problems(partial(Msg.from_dict, message)) == said
    assert _problems(partial(agentmsg.validate, message)) == said
    in_a_list = [("/0" + pointer_of(["metadata", "m", *steps[:251]]), "max-depth")]  # (one level deeper)
    assert _problems(partial(agentmsg.decode_messages, f"[{data}]")) == in_a_list
    assert _problems(partial(agentmsg.decode_messages, f"[{data}]".encode())) == in_a_list
    assert _problems(partial(jsontext.loads, text)) == [(pointer_of(steps[:254]), "max-depth")]


def test_a_254_deep_message_structures_unstructures_and_round_trips() -> None:
    deepest = _deepest_ok()
    for msg in (Msg.from_json(json.dumps(deepest)), Msg.from_dict(deepest)):
        text = msg.to_json_bytes()
        assert json.loads(text) == Msg.from_dict(deepest).to_dict()
        assert Msg.from_json(text) == msg and Msg.from_dict(msg.to_dict()) == msg
        with pytest.raises(SizeLimitError):  # in a conversation it would be 255 deep
            agentmsg.encode_messages([msg])
        assert msg.copy(name="again").name == "again"
    # Built with constructors, bottom up: the same limit.
    block: Any = TextBlock(text="x", unknown_keys={"empty": {}})
    for _ in range(125):
        block = ToolResultBlock(id="c", output=[block])
    built = AssistantMessage([block], id="m")
    assert built.to_dict()["content"] == Msg.from_dict(deepest).to_dict()["content"]
    assert Msg.from_json(built.to_json()) == built
    with pytest.raises(SizeLimitError):
        AssistantMessage([ToolResultBlock(id="c", output=[block])])


def test_a_conversation_is_one_level_deeper() -> None:
    deepest = _deepest_ok()
    deepest_in_a_list = [("/0/content/0" + "/output/0" * 125 + "/empty", "max-depth")]
    assert _problems(lambda: agentmsg.decode_messages(json.dumps([deepest]))) == deepest_in_a_list
    agentmsg.decode_messages(json.dumps([_nested_results(124, {"type": "text", "text": "x"})]))


def test_messages_made_too_deep_after_construction_raise_on_encode_not_recursion_error() -> None:
    msg = AssistantMessage("x")
    block = ToolResultBlock(id="c")
    msg.content.append(block)
    for _ in range(2000):  # mutation bypasses validation: writing must still fail cleanly
        inner = ToolResultBlock(id="c")
        block.output.append(inner)
        block = inner
    for write in (
        msg.to_json,
        msg.to_json_bytes,
        msg.to_dict,
        lambda: agentmsg.encode_messages([msg]),
        lambda: agentmsg.block_to_json(msg.content[1]),
        lambda: agentmsg.block_to_dict(msg.content[1]),
        lambda: agentmsg.find_unknown_keys(msg),
    ):
        with pytest.raises(SizeLimitError) as info:
            write()
        assert info.value.problems[0].rule == "max-depth"


def test_deep_metadata_given_to_a_constructor_is_refused() -> None:
    value: Any = 1
    for _ in range(300):
        value = [value]
    with pytest.raises(SizeLimitError):
        UserMessage("x", metadata={"a": value})
    with pytest.raises(SizeLimitError):
        ToolUseBlock(id="c", name="f", input={"a": value})


def _assert_max_bytes_at(said: dict[str, Any], name: str, pointer: str) -> None:
    """A child process's refusal of ``name`` (``[error class, [[pointer, rule], ...]]``, None when it was taken) is
    one SizeLimitError ``max-bytes`` problem at ``pointer``."""
    refusal = said[name]
    assert refusal is not None, name
    ((at, rule),) = refusal[1]
    assert (refusal[0], rule, at) == ("SizeLimitError", "max-bytes", pointer), (name, refusal)


def _shared(depth: int, *, as_list: bool = False, leaf: Any = None) -> Any:
    """A dict (a list) of the same dict (list) twice, ``depth`` levels down: ``depth`` containers, ``2**depth``
    paths."""
    value: Any = {} if leaf is None else {"leaf": leaf}
    for _ in range(depth):
        value = [value, value] if as_list else {"a": value, "b": value}
    return value


@pytest.mark.timeout(60)
@pytest.mark.parametrize("as_list", [False, True], ids=["dicts", "lists"])
def test_a_value_sharing_its_members_past_the_depth_is_refused_in_linear_time(as_list: bool) -> None:
    """A value that shares its members (a dict of the same dict twice, 300 levels down: 300 containers, 2**300
    paths) was walked path by path on its way to the refusal: the JSON writer's error path (its copy without
    the objects it has no type for), the JSON-value check, the request's walks. Each container is walked once
    per depth it is met at first now (no depth is walked twice for a container met again no deeper): refused
    as the same value unshared is, at once (the guard: 2**300 paths would take for ever)."""
    deep = _shared(300, as_list=as_list)
    step = "/0" if as_list else "/a"  # (said at the first container 254 steps in)
    for at, call in (
        ("", lambda: jsontext.dumps(deep)),
        ("", lambda: jsontext.check_json_value(deep, walk=True)),
        ("", lambda: jsontext.json_value_copy(deep)),
        ("/metadata/a", lambda: UserMessage("x", metadata={"a": deep})),
        ("/input/a", lambda: ToolUseBlock(id="c", name="f", input={"a": deep})),
    ):
        with pytest.raises(SizeLimitError) as info:
            call()
        pointer = at + step * (254 - at.count("/"))
        assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "max-depth")]
    msg = AssistantMessage(content=[TextBlock(text="x")])
    msg.metadata["a"] = deep
    for write in (msg.to_json, msg.to_dict, lambda: agentmsg.encode_messages([msg])):
        with pytest.raises(SizeLimitError) as info:
            write()
        assert info.value.problems[0].rule == "max-depth"
    assert jsontext.deeper_than(deep, 254) and jsontext.deeper_than(deep, 254, finite=True)
    assert not jsontext.deeper_than(deep, 301) and not jsontext.deeper_than(deep, 301, finite=True)
    assert not jsontext.plainly_written(deep, 200)
    assert jsontext.unwritten_at(deep, 254) is None
    found = jsontext.unwritten_at(deep, 254, check_keys=True, refuse_deep=True)
    assert found is not None and found[1] == "json-value" and "nested deeper than 254" in found[2]
    assert found[0] == ("/0" if as_list else "/a") * 255


@pytest.mark.timeout(60)
@pytest.mark.parametrize("as_list", [False, True], ids=["dicts", "lists"])
def test_a_value_sharing_its_members_written_past_max_bytes_is_refused_unwritten(as_list: bool) -> None:
    """A value within the depth limit that shares its members (a dict of the same dict twice, 40 levels down: 40
    containers, 2**40 values as JSON, terabytes) could not be written back within ``limits.max_bytes``, and every
    check wrote it (orjson's round trip, the C writer's dry run) path by path first: ``Msg.from_dict`` and the
    constructors took seconds at 20 levels and for ever at 40. It is refused now before anything writes it (rule
    ``max-bytes``, at the deepest container whose text is over the limit), as soon as for a chain (the guard:
    2**40 values would take for ever)."""
    shared = _shared(40, as_list=as_list)
    step = "/0" if as_list else "/a"
    block = {"type": "tool_use", "id": "c", "name": "f", "input": {"v": shared}}
    data = {"id": "m", "role": "ASSISTANT", "content": [block]}
    for at, call in (
        ("", lambda: jsontext.check_json_value(shared)),
        ("", lambda: jsontext.json_value_copy(shared)),
        ("/content/0/input/v", lambda: Msg.from_dict(data)),
        ("/input/v", lambda: ToolUseBlock(id="c", name="f", input={"v": shared})),
        ("/metadata/a", lambda: UserMessage("x", metadata={"a": shared})),
    ):
        with pytest.raises(SizeLimitError) as info:
            call()
        ((pointer, rule, message),) = [(p.pointer, p.rule, p.message) for p in info.value.problems]
        assert rule == "max-bytes" and pointer.startswith(at + step), (at, pointer)
        assert "exceeds the limit of 268435456 (limits.max_bytes)" in message
    # (the deepest container past the limit: twice its member's length and a few brackets)
    found = jsontext.oversized_at(shared, limits.max_bytes)
    assert found is not None and found[1] > limits.max_bytes
    assert found[0] == tuple([0 if as_list else "a"] * len(found[0])) and 10 < len(found[0]) < 20


@pytest.mark.timeout(60)
def test_a_value_sharing_its_members_within_max_bytes_is_taken_as_it_is_written() -> None:
    """Under the limit a shared value is JSON like any other: taken, copied sharing nothing, and its counted length
    is the length of its text (each container and string counted once, reused where met again)."""
    leaf = {"s": 'caf\u00e9 "q"\n', "n": [1, -2.5, True, None, False, 2**64 - 1]}
    shared = _shared(8, leaf=leaf)
    text = orjson.dumps(shared)
    assert jsontext.shares_members(shared) and not jsontext.shares_members(orjson.loads(text))
    assert jsontext.oversized_at(shared, len(text) - 1) == ((), len(text))
    assert jsontext.oversized_at(shared, len(text)) is None
    msg = Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [], "metadata": {"v": shared}})
    assert msg.to_json_bytes() == orjson.dumps(Msg.from_json(msg.to_json_bytes()).to_dict())
    assert msg.metadata["v"]["a"] is not msg.metadata["v"]["b"]
    x: list[Any] = []
    assert jsontext.shares_members([x, x]) and jsontext.shares_members(([x], {"k": x}))
    x.append(x)
    assert jsontext.shares_members(x) and jsontext.oversized_at(x, 100) is None  # (a cycle: refused as one)
    limits.max_bytes = len(text) - 1
    try:
        with pytest.raises(SizeLimitError) as info:
            Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [], "metadata": {"v": shared}})
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata/v", "max-bytes")]
    finally:
        limits.max_bytes = 256 * 1024 * 1024


def test_a_long_string_met_twice_shares_its_value() -> None:
    """A string of ``SHARED_STRING`` (64) characters or more held twice by a value (the same object: two places of
    one list, two containers) shares it as a container would: the same 1 MiB string a thousand times in a list is 1
    GB written, and check_json_value refuses it past the limit (``max-bytes``, at the list) before orjson writes it.
    A shorter one, or equal strings that are two objects (what the readers make), do not (a shorter one's text is at
    most 6 * 63 + 2 bytes for each place of the value's own that holds it). The same holds for a key: the same 1 MiB
    key in a thousand dicts was no sharing, and was written whole."""
    long = "x" * jsontext.SHARED_STRING
    short = long[1:]
    assert jsontext.shares_members([long, long]) and jsontext.shares_members([[long], {"k": long}])
    assert not jsontext.shares_members([short, short]) and not jsontext.shares_members([long, "x" + short])
    # (a key of SHARED_KEY (65) characters or more, in two dicts or as a key and a value, is written at each place
    # too; a shorter one, which orjson's reader makes one object, or equal keys that are two objects, are not)
    longer = long + "x"
    assert jsontext.shares_members([{longer: 1}, {longer: 2}]) and jsontext.shares_members({longer: 1, "k": longer})
    assert not jsontext.shares_members([{long: 1}, {long: 2}])
    assert not jsontext.shares_members(orjson.loads(orjson.dumps([{long: 1}, {long: 2}])))
    assert not jsontext.shares_members(orjson.loads(orjson.dumps([{longer: 1}, {longer: 2}])))
    keys = [{longer: i} for i in range(1000)]
    assert jsontext.oversized_at(keys, 1000) == ((), len(orjson.dumps(keys)))
    text = orjson.dumps([long] * 1000)
    assert jsontext.oversized_at([long] * 1000, len(text) - 1) == ((), len(text))
    big = ["\u00e9" * (1 << 20)] * 1000
    with pytest.raises(SizeLimitError) as info:
        jsontext.check_json_value({"a": [1, big]})
    ((pointer, rule, message),) = [(p.pointer, p.rule, p.message) for p in info.value.problems]
    assert (pointer, rule) == ("/a/1", "max-bytes") and message.startswith(
        f"{1000 * (2 * 2**20 + 2) + 1001} bytes of JSON"
    )


#: A child process's work (its arguments: the value, then ``limits.max_bytes``): a tool call's input changed after
#: construction to hold a shared value (a list of the same list twice, 40 levels down: 2**40 values as JSON; or the
#: same 1 MiB string 1,000 times, 2 GB), then every public path that writes or checks the message, and a
#: constructor and ``Msg.from_dict`` given the same value, each one's
#: refusal (or None: written) and the peak of memory traced while it ran printed as soon as it returns, so that a
#: path that hangs is named by the last line its parent reads.
_MUTATED_AFTER_CONSTRUCTION = """
import json, sys, tracemalloc
import agentmsg
from agentmsg import AssistantMessage, ToolUseBlock, ValidationError, limits
from agentmsg.providers import get
limits.max_bytes = int(sys.argv[2])
block = ToolUseBlock(id="c1", name="f", input={"a": 1})
msg = AssistantMessage([block])
shared = [1]
for _ in range(40):
    shared = [shared, shared]
block.input["a"] = shared if sys.argv[1] == "lists" else ["\u00e9" * (1 << 20)] * 1000
calls = {
    "to_json": msg.to_json,
    "to_json_bytes": msg.to_json_bytes,
    "to_dict": msg.to_dict,
    "block_to_json": lambda: agentmsg.block_to_json(block),
    "encode_messages": lambda: agentmsg.encode_messages([msg]),
    "format_request": lambda: get("openai").format_request([msg], model="m"),
    "ToolUseBlock": lambda: ToolUseBlock(id="c", name="f", input={"a": block.input["a"]}),
    "from_dict": lambda: agentmsg.Msg.from_dict(
        {"id": "m", "role": "ASSISTANT", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": block.input}]}
    ),
}
tracemalloc.start()
for name, call in calls.items():
    print(name, flush=True)
    tracemalloc.reset_peak()
    try:
        call()
        said = None
    except ValidationError as error:
        said = [type(error).__name__, [[p.pointer, p.rule] for p in error.problems]]
    print(json.dumps([name, said, tracemalloc.get_traced_memory()[1]]), flush=True)
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
@pytest.mark.parametrize("what", ["lists", "strings"])
def test_a_message_changed_to_hold_a_shared_value_is_refused_where_it_is_written(what: str, pure: bool) -> None:
    """A message whose tool call's input was changed after construction to hold a value sharing its members (the
    constructors refuse it) ran for ever on its way out: the C writer wrote it path by path (to_json, the formatters'
    check of their messages, encode_messages), and the same 1 MiB string 1,000 times in a list was written whole (2
    GB, and as much again where it was checked: to_dict's copy) before anything looked at its size. Every path now
    refuses it as the constructors do (SizeLimitError, rule ``max-bytes``, at the deepest part over the limit, under
    the message's index where a list of messages is written), at once, in memory bounded by ``limits.max_bytes``,
    with the C kernels and without. (In a child process, under a time limit: pytest's own cannot stop a C loop.)"""
    cap = 16 << 20
    out = guarded(_MUTATED_AFTER_CONSTRUCTION, what, str(cap), pure=pure)
    said = {name: (refusal, peak) for name, refusal, peak in map(json.loads, out.splitlines()[1::2])}
    step = "/0" if what == "lists" else ""
    for name, at in (
        ("to_json", "/content/0/input/a"),
        ("to_json_bytes", "/content/0/input/a"),
        ("to_dict", "/content/0/input/a"),
        ("block_to_json", "/input/a"),
        ("encode_messages", "/0/content/0/input/a"),
        ("format_request", "/0/content/0/input/a"),
        ("ToolUseBlock", "/input/a"),
        ("from_dict", "/content/0/input/a"),
    ):
        refusal, peak = said[name]
        assert refusal is not None, name
        ((pointer, rule),) = refusal[1]
        assert (refusal[0], rule) == ("SizeLimitError", "max-bytes"), (name, refusal)
        assert pointer.startswith(at + step) and set(pointer[len(at) :].split("/")) <= {"", "0"}, (name, pointer)
        assert peak < 4 * cap, (name, peak)


@pytest.mark.timeout(60)
def test_a_problem_in_a_shared_member_is_found_where_the_unshared_value_has_it() -> None:
    """The walks that skip a member met again find the first problem where they found it in the same value
    unshared (a tree of copies): a NaN, a lone surrogate, a deep part, at the shallowest depth, the deepest, both."""
    nan, lone = float("nan"), "\ud800"
    for depth, leaf in [(6, nan), (6, lone), (250, nan), (250, lone)]:
        for shared in (_shared(depth, leaf=leaf), {"x": [1, 2], "y": _shared(depth, leaf=leaf), "z": nan}):
            tree = json.loads(json.dumps(shared)) if depth < 20 else None
            for max_depth in (4, 254):
                got = jsontext.unwritten_at(shared, max_depth, check_keys=True)
                deep = jsontext.unwritten_at(shared, max_depth, check_keys=True, refuse_deep=True)
                if tree is not None:
                    assert got == jsontext.unwritten_at(tree, max_depth, check_keys=True)
                    assert deep == jsontext.unwritten_at(tree, max_depth, check_keys=True, refuse_deep=True)
            with pytest.raises(ValidationError) as info:
                jsontext.check_json_value(shared, walk=True)
            if tree is not None:
                with pytest.raises(ValidationError) as unshared:
                    jsontext.check_json_value(tree, walk=True)
                assert info.value.problems == unshared.value.problems
    # met again shallower, a member is walked again where the walk sees more of it; deeper, where it refuses more
    member: dict[str, Any] = {"k": {"m": {"n": nan}}}
    assert jsontext.unwritten_at({"a": [member], "b": member}, 3) == (
        "/b/k/m/n",
        "json-value",
        "NaN or an infinity is not a JSON number: no JSON body carries it",
    )
    member = {"k": {"m": 1}}
    value = {"a": member, "b": [[member]]}
    found = jsontext.unwritten_at(value, 3, refuse_deep=True)
    assert found is not None and found[:2] == ("/b/0/0/k", "json-value")
    assert jsontext.deeper_than(value, 3) and jsontext.deeper_than(value, 3, finite=True)
    assert not jsontext.deeper_than(value, 5) and not jsontext.deeper_than(value, 5, finite=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "max_depth", 4)
        with pytest.raises(SizeLimitError):
            jsontext.check_json_value(value)
        jsontext.check_json_value({"a": member, "b": [member]})


# ---- issue 8 items 2 and 3: integers and surrogates --------------------------------------------------

BIG = 18446744073709551617  # the issue's inputTokens


def test_the_issues_input_tokens_is_rejected_never_a_float() -> None:
    text = '{"id":"m","role":"ASSISTANT","content":[],"usage":{"inputTokens":18446744073709551617}}'
    decoders: tuple[Callable[[str], Msg], ...] = (
        Msg.from_json,
        lambda t: Msg.from_json(t.encode()),
        lambda t: Msg.from_dict(json.loads(t)),
    )
    for decode in decoders:
        assert _problems(partial(decode, text)) == [("/usage/inputTokens", "integer-range")]
    assert _problems(lambda: agentmsg.decode_messages("[" + text + "]")) == [("/0/usage/inputTokens", "integer-range")]


@pytest.mark.parametrize("number", [2**64, BIG, -(2**63) - 1, 10**30, -(10**30)])
def test_integers_outside_64_bits_are_rejected_everywhere(number: int) -> None:
    text = '{"id":"m","role":"USER","content":[],"metadata":{"n":' + str(number) + "}}"
    assert _problems(lambda: Msg.from_json(text)) == [("/metadata/n", "integer-range")]
    assert _problems(lambda: Msg.from_dict(json.loads(text))) == [("/metadata/n", "integer-range")]
    assert _problems(lambda: UserMessage("x", metadata={"deep": [{"n": number}]})) == [
        ("/metadata/deep/0/n", "integer-range")
    ]
    assert _problems(lambda: AssistantMessage("x", usage={"outputTokens": number})) != []
    assert _problems(lambda: ToolUseBlock(id="c", name="f", input={"n": number})) == [("/input/n", "integer-range")]
    assert _problems(lambda: agentmsg.validate(json.loads(text))) == [("/metadata/n", "integer-range")]


def test_the_64_bit_bounds_themselves_round_trip() -> None:
    text = '{"id":"m","name":null,"role":"USER","content":[],"metadata":{"max":18446744073709551615,"min":-9223372036854775808},"timestamp":null,"usage":null}'
    msg = Msg.from_json(text)
    assert msg.metadata == {"max": 2**64 - 1, "min": -(2**63)} and msg.to_json() == text
    assert Msg.from_dict(json.loads(text)).to_json() == text


SURROGATE_TEXTS = [
    '{"id":"m","role":"USER","content":[{"type":"text","text":"\\ud800"}]}',
    '{"id":"m","role":"USER","content":[{"type":"text","text":"a\\udc00b"}]}',
    '{"id":"m","role":"USER","content":[],"metadata":{"\\ud83d":1}}',
]


#: the pointer of the string holding the surrogate in each of SURROGATE_TEXTS (a key: its object's, as from a dict)
SURROGATE_POINTERS = ["/content/0/text", "/content/0/text", "/metadata"]


@pytest.mark.parametrize(("text", "at"), list(zip(SURROGATE_TEXTS, SURROGATE_POINTERS, strict=True)))
def test_lone_surrogates_in_json_text_are_rejected(text: str, at: str) -> None:
    """A lone surrogate escape is refused at the pointer of the string that holds it (it was said at ``""``, the
    whole text), as the same value given as a dict says it."""
    assert _problems(lambda: Msg.from_json(text)) == [(at, "lone-surrogate")]
    assert _problems(lambda: Msg.from_json(text.encode())) == [(at, "lone-surrogate")]
    assert _problems(lambda: agentmsg.decode_messages(f"[{text}]")) == [(f"/0{at}", "lone-surrogate")]
    block = json.dumps({"type": "tool_use", "id": "c", "name": "f", "input": {"a": [1, {"k": "\ud800"}]}})
    assert _problems(lambda: agentmsg.block_from_json(block)) == [("/input/a/1/k", "lone-surrogate")]
    raw = text.encode().decode("unicode-escape")  # the surrogate itself in a str, and encoded as UTF-8 in bytes
    assert _problems(lambda: Msg.from_json(raw)) == [(at, "lone-surrogate")]
    assert _problems(lambda: Msg.from_json(raw.encode("utf-8", "surrogatepass"))) == [(at, "lone-surrogate")]
    parsed_by_python = json.loads(text)  # Python's json keeps them: a dict with a lone surrogate
    assert [rule for _, rule in _problems(lambda: Msg.from_dict(parsed_by_python))] == ["lone-surrogate"]


@pytest.mark.parametrize("text", SURROGATE_TEXTS)
def test_a_syntax_error_after_a_lone_surrogate_is_said_as_json(text: str) -> None:
    """Found by make fuzz (seed 1796385219, the SSE reducer against @agentmsg/client's): orjson stops at the
    first lone surrogate escape, so text that was no JSON at all (a syntax error after the escape) was said
    ``lone-surrogate``, where JSON.parse (which reads the escape) says ``json``; now the syntax error is said,
    with json's words, wherever the escape is, and text that is JSON but for the escape keeps its rule."""
    broken = text[:-1] + " x}"
    for data in (broken, broken.encode()):
        with pytest.raises(ValidationError) as info:
            Msg.from_json(data)
        (p,) = info.value.problems
        assert (p.pointer, p.rule) == ("", "json") and "Expecting ',' delimiter" in p.message, p
    nan = text[:-1] + ', "n": NaN}'  # JSON.parse reads no NaN either
    assert _problems(lambda: Msg.from_json(nan)) == [("", "json")]


def test_json_bytes_that_are_not_utf8_say_so_with_the_byte() -> None:
    """Bytes that are not UTF-8 are rule ``utf-8`` with the byte where they stop being so (they were reported
    as "a lone UTF-16 surrogate escape", orjson's wording for any bad UTF-8); a surrogate encoded as UTF-8
    (what ``surrogatepass`` writes) is still ``lone-surrogate``; a ``str`` holding one says so."""
    good = '{"id":"m","role":"USER","content":[{"type":"text","text":"caf\u00e9"}]}'.encode()
    for bad, at, why in (
        (good.replace(b"\xc3", b"\xff"), good.index(b"\xc3"), "invalid start byte"),
        (good.replace(b"\xa9", b"A"), good.index(b"\xc3"), "invalid continuation byte"),
        (good[: good.index(b"\xc3") + 1], good.index(b"\xc3"), "unexpected end of data"),
    ):
        with pytest.raises(ValidationError) as info:
            Msg.from_json(bad)
        p = info.value.problems[0]
        assert (p.rule, p.message) == ("utf-8", f"not valid JSON: invalid UTF-8 at byte {at} ({why})")
    encoded = '{"id":"m","role":"USER","content":[{"type":"text","text":"\ud800"}]}'.encode("utf-8", "surrogatepass")
    assert _problems(lambda: Msg.from_json(encoded)) == [("/content/0/text", "lone-surrogate")]
    with pytest.raises(ValidationError, match="the text holds a lone UTF-16 surrogate"):
        Msg.from_json('{"id":"m","role":"USER","content":[{"type":"text","text":"\ud800"}]}')


def test_bytes_that_are_not_utf8_are_read_only_up_to_the_bad_byte() -> None:
    """``not_utf8`` stops at the first bad byte: it decoded the whole text, a str as long as the input and a
    UnicodeDecodeError holding a copy of it (two 8 MiB allocations for a bad first byte), and made that str
    for text that was UTF-8 too."""
    size = 8 << 20
    for raw in (b'"\xff' + b"x" * size + b'"', b'"' + b"x" * size + b'"', b'"' + "\u00e9".encode() * size + b"\xff"):
        tracemalloc.start()
        try:
            jsontext.not_utf8(raw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, (raw[:4], peak)


def test_bytes_that_are_not_utf8_say_what_decoding_them_whole_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read in chunks, a sequence cut by a chunk's end (or a bad one there) gives the byte and the reason that
    decoding the whole text gives."""

    def whole(raw: bytes) -> tuple[str, str] | None:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            at = bad.start
            if raw[at] == 0xED and at + 1 < len(raw) and 0xA0 <= raw[at + 1] <= 0xBF:
                return "lone-surrogate", f"a UTF-16 surrogate encoded as UTF-8 at byte {at}"
            return "utf-8", f"invalid UTF-8 at byte {at} ({bad.reason})"
        return None

    pieces = [
        b"a",
        "\u00e9".encode(),
        "\u20ac".encode(),
        "\U0001f600".encode(),
        b"\xff",
        b"\xed\xa0\x80",
        b"\xe2\x82",
        b"\xc3",
        b"\x80",
    ]
    texts = [b"a" * pad + b"".join(seq) for pad in range(4) for seq in itertools.product(pieces, repeat=3)]
    for chunk in (4, 5, 7):
        monkeypatch.setattr(jsontext, "_UTF8_CHUNK", chunk)
        for raw in texts:
            assert jsontext.not_utf8(raw) == whole(raw), (chunk, raw)


def test_lone_surrogates_from_constructors_and_python_strings_are_rejected() -> None:
    assert _problems(lambda: UserMessage("\ud800")) == [("/content/0/text", "lone-surrogate")]
    assert _problems(lambda: UserMessage("ok", name="\udfff")) == [("/name", "lone-surrogate")]
    assert _problems(lambda: UserMessage("ok", metadata={"k": ["\ud800"]})) == [("/metadata/k/0", "lone-surrogate")]
    assert _problems(lambda: UserMessage("ok", metadata={"\ud800": 1})) == [("/metadata", "lone-surrogate")]
    assert _problems(lambda: ToolResultBlock(id="c", output=["fine", "\ud800"])) == [
        ("/output/1/text", "lone-surrogate")
    ]
    raw = '{"id":"m","role":"USER","content":[{"type":"text","text":"\ud800"}]}'  # a Python str holding one
    assert _problems(lambda: Msg.from_json(raw)) == [("/content/0/text", "lone-surrogate")]
    assert UserMessage("\U0001f600").to_json_bytes().count("😀".encode()) == 1
    # In a Python str a UTF-16 pair is two lone surrogates (not the character): rejected, it has no UTF-8.
    assert _problems(lambda: UserMessage("\ud83d\ude00")) == [("/content/0/text", "lone-surrogate")]
    # In JSON text the escaped pair is the character.
    assert (
        Msg.from_json('{"id":"m","role":"USER","content":[{"type":"text","text":"\\ud83d\\ude00"}]}').text_content
        == "\U0001f600"
    )


# ---- issue 8 item 5: limits ----------------------------------------------------------------------------


def test_max_bytes_counts_utf8_bytes_of_a_str(monkeypatch: pytest.MonkeyPatch) -> None:
    text = '{"id":"m","role":"USER","content":[{"type":"text","text":"' + "é" * 40 + '"}]}'
    assert len(text) <= 110 < len(text.encode())
    monkeypatch.setattr(limits, "max_bytes", 110)
    for data in (text, text.encode()):
        assert _problems(partial(Msg.from_json, data)) == [("", "max-bytes")]
        listed = f"[{data}]" if isinstance(data, str) else b"[" + data + b"]"
        assert _problems(partial(agentmsg.decode_messages, listed)) == [("", "max-bytes")]
    monkeypatch.setattr(limits, "max_bytes", len(text.encode()))
    assert Msg.from_json(text).text_content == "é" * 40


def test_a_lowered_max_depth_holds_on_every_path_the_fast_one_included(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = '{"id":"m","role":"USER","content":[],"metadata":{"a":[[1]]}}'  # depth 4
    deep = '{"id":"m","role":"USER","content":[],"metadata":{"a":[[[1]]]}}'  # depth 5
    monkeypatch.setattr(limits, "max_depth", 4)
    assert Msg.from_json(ok).metadata == {"a": [[1]]}
    for at, decode in (
        ("/metadata/a/0/0", lambda: Msg.from_json(deep)),
        ("/metadata/a/0/0", lambda: Msg.from_json(deep.encode())),
        ("/metadata/a/0/0", lambda: Msg.from_dict(json.loads(deep))),
        ("/0/metadata/a/0", lambda: agentmsg.decode_messages(f"[{ok}]")),
        ("/metadata/a/0/0", lambda: UserMessage("x", metadata={"a": [[[1]]]})),
    ):
        assert _problems(decode) == [(at, "max-depth")]
    with pytest.raises(ValueError):
        limits.max_depth = 255  # deeper could not be written


def _lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [19, 20, 21], ids=["limit-1", "limit", "limit+1"])
def test_the_writers_hold_a_lowered_max_depth_as_the_readers_do(monkeypatch: pytest.MonkeyPatch, depth: int) -> None:
    """Under ``limits.max_depth = 20`` the writers held only orjson's own 254 levels: a message made 21 levels
    deep after construction (or before the limit was lowered) was written by to_json, to_dict, encode_messages,
    block_to_json and encode_sse_event, and then refused when read back under the same limit. Every writer holds
    the limit now, said as a reader says it (``max-depth``, at the part past it); what it writes reads back."""
    from agentmsg._codec.converter import dumps_json
    from agentmsg.events.sse import encode_sse_event

    monkeypatch.setattr(limits, "max_depth", 20)
    msg = UserMessage("x", metadata={})
    msg.metadata["a"] = _lists(depth - 2)  # (the message, its metadata, then the lists: ``depth`` levels)
    block = ToolUseBlock(id="c", name="f", input={})
    block.input["a"] = _lists(depth - 2)  # (the block, its input, the lists)
    event = {"type": "CUSTOM", "name": "n", "value": _lists(depth - 1)}  # (the event, the lists)
    writes: dict[str, tuple[Callable[[], Any], Callable[[Any], Any] | None, str]] = {
        "to_json": (msg.to_json, Msg.from_json, "/metadata/a"),
        "to_json_bytes": (msg.to_json_bytes, Msg.from_json, "/metadata/a"),
        "to_dict": (msg.to_dict, Msg.from_dict, "/metadata/a"),
        "dumps_json": (partial(dumps_json, msg, "msg"), Msg.from_json, "/metadata/a"),
        "encode_messages": (partial(agentmsg.encode_messages, [msg]), agentmsg.decode_messages, "/0/metadata/a"),
        "block_to_json": (partial(agentmsg.block_to_json, block), agentmsg.block_from_json, "/input/a"),
        "block_to_dict": (partial(agentmsg.block_to_dict, block), agentmsg.block_from_dict, "/input/a"),
        "encode_sse_event": (partial(encode_sse_event, event), None, "/value"),
    }
    for name, (write, read, at) in writes.items():
        # (a conversation is one level deeper: its messages are held to one level less)
        deepest = depth + (name == "encode_messages")
        if deepest <= 20:
            written = write()
            if read is not None:
                read(written)
            else:
                jsontext.loads(written.split("data: ", 1)[1].split("\n", 1)[0])
        else:
            crossing = at + "/0" * (20 - len(at.split("/")) + 1)  # (the list 20 levels in: the first past it)
            assert _problems(write) == [(crossing, "max-depth")], name


def test_a_conversation_read_under_a_lowered_limit_is_one_its_writer_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``limits.max_depth = 20`` a conversation whose innermost tool result, read without ``output``, would be
    written with it one level past the limit was accepted, and encode_messages then refused what decode_messages
    gave (the check of its written form held only orjson's 254). Refused as it is read now, as at the default
    limit; one level shallower reads and writes back."""
    monkeypatch.setattr(limits, "max_depth", 20)
    bare = [_nested_results(8, {"type": "tool_result", "id": "c"})]  # (its output, if written, 21 levels in)
    assert _problems(partial(agentmsg.decode_messages, json.dumps(bare))) == [
        ("/0/content/0" + "/output/0" * 8 + "/output", "max-depth")
    ]
    shallower = [_nested_results(7, {"type": "tool_result", "id": "c"})]
    assert agentmsg.decode_messages(agentmsg.encode_messages(agentmsg.decode_messages(json.dumps(shallower))))


def test_a_conversation_at_the_limit_is_refused_when_its_written_form_would_be_deeper() -> None:
    """Blocks sit one level deeper in a conversation: a tool result read without ``output``/``metadata`` at
    level 254 would be written with them at 255. Refused, on the fast and the detailed path alike, at the list that
    crosses the limit as it would be written (it was said at ``""``, the only max-depth said of no part)."""
    bare = [_nested_results(125, {"type": "tool_result", "id": "c"})]
    full = [_nested_results(125, {"type": "tool_result", "id": "c", "output": [], "metadata": {}})]
    for data in (json.dumps(bare), json.dumps(bare).encode()):
        with pytest.raises(SizeLimitError) as info:
            agentmsg.decode_messages(data)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [
            ("/0/content/0" + "/output/0" * 125 + "/output", "max-depth")
        ]
        assert info.value.problems[0].message == "nested deeper than 254 levels (limits.max_depth)"
    with pytest.raises(SizeLimitError):
        agentmsg.decode_messages(json.dumps(full))  # already 255 deep as read
    text = [_nested_results(125, {"type": "text", "text": "x"})]  # 254 deep, nothing added on write
    assert (
        agentmsg.encode_messages(agentmsg.decode_messages(json.dumps(text)))
        == json.dumps([Msg.from_dict(text[0]).to_dict()], separators=(",", ":")).encode()
    )


@pytest.mark.parametrize("text", ["[" * 255 + "]" * 255, '{"a":' * 255 + "1" + "}" * 255, "[" * 1100 + "]" * 1100])
def test_the_bounded_reader_refuses_one_level_past_the_limit_and_orjsons_own(text: str) -> None:
    """The event readers' JSON reader (issue 28): deeper than limits.max_depth is TooDeep (rule max-depth), beyond
    orjson's own 1,024 levels too (not a plain "not JSON"); at the limit it reads."""
    from agentmsg._codec.jsontext import TooDeep, loads_bounded

    with pytest.raises(TooDeep, match="max_depth"):
        loads_bounded(text.encode())
    with pytest.raises(TooDeep):
        loads_bounded(text)
    assert loads_bounded("[" * 254 + "]" * 254) and loads_bounded('{"a":' * 254 + "1" + "}" * 254)


def test_legacy_keys_and_sse_data_are_held_to_the_depth_limit() -> None:
    from agentmsg._wire.sse import SSEEvent

    deep: Any = 0
    for _ in range(1000):
        deep = [deep]
    with pytest.raises(SizeLimitError):
        agentmsg.read_legacy_keys({"role": "user", "content": "hi", "metadata": {"d": deep}})
    with pytest.raises(orjson.JSONDecodeError, match="max_depth"):
        SSEEvent(data="[" * 300 + "]" * 300).json()


@pytest.mark.parametrize("name", ["max_byte", "bogus", 1])
def test_a_name_that_is_no_limit_is_an_unknown_name_error_still_a_key_error(name: Any) -> None:
    """``limits["max_byte"]`` (a typo) raised a bare KeyError naming only the key: now the SDK's UnknownNameError
    (a KeyError still), listing the limits, on read and on write; nothing is set."""
    from agentmsg import UnknownNameError

    before = (limits.max_bytes, limits.max_depth, limits.max_event_bytes, limits.max_open_blocks)
    lookups: tuple[Callable[[], object], ...] = (lambda: limits[name], lambda: limits.__setitem__(name, 5))
    for lookup in lookups:
        with pytest.raises(UnknownNameError, match="max_bytes, max_depth, max_event_bytes, max_open_blocks") as info:
            lookup()
        assert isinstance(info.value, KeyError)
    assert (limits.max_bytes, limits.max_depth, limits.max_event_bytes, limits.max_open_blocks) == before


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("max_bytes", 0, "minimum"),
        ("max_event_bytes", "1", "type"),
        ("max_depth", 255, "maximum"),
        ("max_event_bytes", 2**70, "maximum"),
        ("max_bytes", 2**63, "maximum"),
        ("max_open_blocks", (1 << 62) + 1, "maximum"),
    ],
)
def test_a_limit_set_out_of_range_is_a_validation_error(name: str, value: Any, rule: str) -> None:
    """A limit set to what it cannot be raised a bare ValueError: now a ValidationError (a ValueError still) at
    the limit's name; the limit keeps its value."""
    before = limits[name]
    assigns: tuple[Callable[[], object], ...] = (
        lambda: limits.__setitem__(name, value),
        lambda: setattr(limits, name, value),
    )
    for assign in assigns:
        with pytest.raises(ValidationError) as info:
            assign()
        assert [(p.pointer, p.rule) for p in info.value.problems] == [(f"/{name}", rule)]
    assert limits[name] == before


def test_the_largest_limits_read_a_stream() -> None:
    """Every limit at its largest (2**62) reads a stream as the default ones do: a limit past 2**63 was accepted
    and then raised a bare OverflowError where an SSE stream was read (the C scanner's bounds)."""
    from agentmsg.providers import get

    body = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
    before = {name: limits[name] for name in ("max_bytes", "max_event_bytes", "max_open_blocks")}
    want = [(e["type"], e.get("delta")) for e in get("openai").parse_stream(body)]
    try:
        for name in before:
            limits[name] = 1 << 62
        assert [(e["type"], e.get("delta")) for e in get("openai").parse_stream(body)] == want
    finally:
        for name, value in before.items():
            limits[name] = value


def test_the_dry_run_answers_for_a_small_value_only_and_in_few_steps() -> None:
    """``jsontext.written_within`` (what the size check asks before its walk of a value's members): True only where
    the C writer's dry run writes the value within ``QUICK_BYTES`` (and ``limits.max_bytes``), so that nothing it
    passes is a value the check would refuse; False (no verdict: the walk decides) past that count, for a type JSON
    has not, a cycle, and without the C kernels. A list of the same list twice, 60 levels down (2**60 paths), is no
    verdict at once: the dry run stops at the count, and the check refuses it as before."""
    from agentmsg._native import speedups

    tool_input = {"city": "Paris", "days": [1, 2, 3], "opts": {"units": "metric"}, "t": (1, 2)}
    if speedups is None:
        assert not jsontext.written_within(tool_input)
        return
    assert jsontext.written_within(tool_input) and jsontext.written_within([]) and jsontext.written_within("x")
    x: list[Any] = [1]
    assert jsontext.written_within([x, x])  # (shared within the count: written as any value)
    cycle: list[Any] = []
    cycle.append(cycle)
    deep: list[Any] = [1]
    for _ in range(60):
        deep = [deep, deep]
    quick = jsontext.QUICK_BYTES
    for no in (cycle, [1.5, object()], [float("nan")], ["\u00e9" * (quick // 6 + 1)], deep):
        assert not jsontext.written_within(no)
    assert jsontext.written_within(["\u00e9" * ((quick - 4) // 6)])  # (6 a character, 2 quotes, 2 brackets)
    limits.max_bytes = 1000
    try:
        assert jsontext.written_within(["a" * 160]) and not jsontext.written_within(["a" * 170])
        with pytest.raises(SizeLimitError):
            jsontext.check_json_value({"a": deep})
    finally:
        limits.max_bytes = 256 * 1024 * 1024


def test_an_exact_key_is_one_value_of_one_type_throughout() -> None:
    """``jsontext.exact_key`` (what the formatters keep a tool's checks under): a value's JSON text where it and
    everything in it is of the exact JSON types, so that values of one key are equal and alike in type; None for
    what JSON writes alike though it is not (a tuple for a list, a subclass for its base, a NaN for null), for what
    JSON cannot write, and without the C kernels (the caller keeps nothing)."""
    from agentmsg._native import speedups

    class Text(str):
        pass

    key = jsontext.exact_key
    plain: dict[str, Any] = {"a": [1, 1.0, True, None, "x", {"b": []}]}
    if speedups is None:
        assert key(plain) is None
        return
    assert key(plain) == key({"a": [1, 1.0, True, None, "x", {"b": []}]}) == b'{"v":' + orjson.dumps(plain) + b"}"
    assert len({key(1), key(1.0), key(True), key("1"), key([1])}) == 5
    assert key({"a": 1, "b": 2}) != key({"b": 2, "a": 1})  # (the order is sent: another request)
    for other in ((1,), {"a": (1,)}, [Text("x")], {"a": float("nan")}, {1: 2}, [2**64], ["\ud800"], {"a": {1}}):
        assert key(other) is None, other


#: A child process's work (its argument: ``limits.max_bytes``): tool results each holding the previous one twice
#: (the same object: 41 blocks, 2**40 written, under a limit of 1 MiB), built level by level, then a message of the
#: deepest one accepted, its writers, the same built past the limit, and one changed after construction past it:
#: each step's refusal (or None) and the blocks that deep printed as soon as it returns, so that a step that hangs is
#: named by the last line its parent reads.
_SHARED_BLOCKS = """
import json, sys
import agentmsg
from agentmsg import AssistantMessage, Msg, TextBlock, ToolResultBlock, ValidationError, limits
from agentmsg.providers import get
limits.max_bytes = int(sys.argv[1])

def step(name, call):
    print(name, flush=True)
    try:
        call()
        said = None
    except ValidationError as error:
        said = [type(error).__name__, [[p.pointer, p.rule] for p in error.problems]]
    print(json.dumps([name, said]), flush=True)

text = TextBlock(text="x")
blocks = [text, text]
levels = 0
try:
    while levels < 40:
        blocks = [ToolResultBlock(id="c", name="f", output=blocks)] * 2
        levels += 1
except ValidationError as error:
    print(json.dumps(["levels", levels, [[p.pointer, p.rule] for p in error.problems]]), flush=True)
within = blocks[0]  # (written within the limit, at most)
step("Msg", lambda: AssistantMessage(within.output))
msg = AssistantMessage([within])
step("to_json", msg.to_json)
step("to_dict", msg.to_dict)
step("from_dict", lambda: Msg.from_dict(msg.to_dict()))
step("block_to_dict", lambda: agentmsg.block_to_dict(within))
past = ToolResultBlock(id="c", name="f", output=[])
past.output = [within] * 64  # (changed after construction: 64 times the limit's half)
msg.content = [past]
step("changed to_json", msg.to_json)
step("changed to_dict", msg.to_dict)
step("changed encode_messages", lambda: agentmsg.encode_messages([msg]))
step("changed format_request", lambda: get("openai").format_request([msg], model="m"))
step("changed block_to_dict", lambda: agentmsg.block_to_dict(past))
step("ToolResultBlock", lambda: ToolResultBlock(id="c", name="f", output=past.output))
step("Msg past", lambda: AssistantMessage([past]))
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_blocks_holding_the_same_block_twice_are_checked_once_each(pure: bool) -> None:
    """A tool result holding the same block twice, each holding the same block twice (a caller reuses a block: 41
    blocks, 2**40 written), was checked as written out, every path (its dict, the JSON check, the validator): each
    level took twice the one before (the 18th 22.8 s). A constructor now checks each block once (its dict sharing
    what the block shares, validated level by level): accepted within ``limits.max_bytes``, refused past it at the
    level that passes it (SizeLimitError, ``max-bytes``, at the deepest part over the limit, as the writers say it).
    A message changed after construction to pass it is refused by every writer (``to_dict`` and pure Python's
    ``to_json`` wrote it path by path). In a child process, under a time limit (pytest's own cannot stop a C loop)."""
    cap = 1 << 20
    out = guarded(_SHARED_BLOCKS, str(cap), pure=pure, started="building the blocks")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("[")]
    (_, levels, problems), said = lines[0], {name: refusal for name, refusal in lines[1:]}
    # (a level's text is twice the one before and some: 13 levels, 2**13 tool results, are within 1 MiB)
    assert levels == 13
    ((pointer, rule),) = problems
    assert rule == "max-bytes" and pointer == "/output"
    for name in ("Msg", "to_json", "to_dict", "from_dict", "block_to_dict"):
        assert said[name] is None, (name, said[name])
    for name, at in (
        ("changed to_json", "/content/0"),
        ("changed to_dict", "/content/0"),
        ("changed encode_messages", "/0/content/0"),
        ("changed format_request", "/0/content/0"),
        ("changed block_to_dict", ""),
        ("ToolResultBlock", ""),
        ("Msg past", "/content/0"),
    ):
        _assert_max_bytes_at(said, name, at + "/output")


def test_a_block_held_twice_is_refused_as_the_same_blocks_unshared() -> None:
    """The check of each distinct block once says what the check of the blocks written out says, at the first place
    the block is met (written out, at each): a block changed after construction to hold a wrong value, a NaN, a tool
    result that holds itself; a tool call in a user's message at each place (the message's own rule reads each
    block's ``type``)."""
    wrong = TextBlock(text="x")
    wrong.text = 5  # type: ignore[assignment]
    nan = TextBlock(text="x")
    nan.unknown_keys = {"zz": float("nan")}
    loop = ToolResultBlock(id="c", name="f", output=["x"])
    loop.output.append(loop)
    call = ToolUseBlock(id="c", name="f", input={})
    for block, said in ((wrong, [("/output/0/text", "type")]), (nan, [("/output/0/zz", "json-value")])):
        assert _problems(partial(ToolResultBlock, id="r", name="f", output=[block])) == said
        assert _problems(partial(ToolResultBlock, id="r", name="f", output=[block, block])) == said
    assert _problems(lambda: ToolResultBlock(id="r", name="f", output=[loop])) == [("/output/0/output/1", "cycle")]
    assert _problems(lambda: UserMessage([call, call])) == [
        ("/content/0/type", "role-content"),
        ("/content/1/type", "role-content"),
    ]
    shared = ToolResultBlock(id="r", name="f", output=[call, call])
    assert AssistantMessage([shared, shared]).to_dict()["content"][1] == agentmsg.block_to_dict(shared)


#: A child process's work (its arguments: the shape, ``limits.max_bytes``, 1 MiB): a message whose tool calls'
#: inputs were changed after construction to share a value (``inputs``: the same list of a 64 KiB string in 20
#: inputs, each 128 KiB written, 2.5 MiB together; ``keys``: the same 64 KiB key in 100 dicts of one input), then a
#: constructor given the same, and the writers: each one's refusal (or None) printed as soon as it returns.
_SHARED_ACROSS = """
import json, sys
import agentmsg
from agentmsg import AssistantMessage, ToolUseBlock, ValidationError, limits
from agentmsg.providers import get
limits.max_bytes = int(sys.argv[2])
long = "\\u00e9" * (1 << 16)
values = [[long]] * 20 if sys.argv[1] == "inputs" else [[{long: i} for i in range(100)]]
blocks = [ToolUseBlock(id=f"c{i}", name="f", input={}) for i in range(len(values))]
msg = AssistantMessage(blocks)
for block, value in zip(blocks, values):
    block.input["a"] = value
calls = {
    "constructor": lambda: AssistantMessage(
        [ToolUseBlock(id=f"c{i}", name="f", input={"a": value}) for i, value in enumerate(values)]
    ),
    "to_json": msg.to_json,
    "encode_messages": lambda: agentmsg.encode_messages([msg]),
    "format_request": lambda: get("openai").format_request([msg], model="m"),
}
for name, call in calls.items():
    print(name, flush=True)
    try:
        call()
        said = None
    except ValidationError as error:
        said = [type(error).__name__, [[p.pointer, p.rule] for p in error.problems]]
    print(json.dumps([name, said]), flush=True)
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
@pytest.mark.parametrize("shape", ["inputs", "keys"])
def test_a_value_shared_across_tool_inputs_or_as_a_key_is_refused_as_in_c(shape: str, pure: bool) -> None:
    """Pure Python's writer checked each tool call's input alone (its JSON hook): the same value in twenty inputs,
    each within ``limits.max_bytes``, together past it, was written where the C writer, stopped at the limit, refused
    it (``max-bytes``, at ``/content``, as the constructor does). And a long key met in many dicts was no sharing:
    the same 64 KiB key in a hundred dicts (13 MB written) was taken by the constructor and written by both. Both
    are refused now, C and pure Python alike, by the constructor and every writer."""
    env = dict(os.environ)
    env.pop("AGENTMSG_PURE_PYTHON", None)
    if pure:
        env["AGENTMSG_PURE_PYTHON"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", _SHARED_ACROSS, shape, str(1 << 20)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = {name: refusal for name, refusal in map(json.loads, proc.stdout.splitlines()[1::2])}
    for name, at in (
        ("constructor", "/content"),
        ("to_json", "/content"),
        ("encode_messages", "/0/content"),
        ("format_request", "/0/content"),
    ):
        _assert_max_bytes_at(
            said, name, at if shape == "inputs" else "/input/a" if name == "constructor" else at + "/0/input/a"
        )


def test_a_message_of_many_bad_blocks_lists_at_most_max_problems() -> None:
    """30,000 blocks of an unknown type: each is two problems (its ``type``, and the USER role rule), 60,000 held
    whole before. A reading lists MAX_PROBLEMS of them (in pointer order), then one that counts the rest (rule
    ``max-problems``), as a reducer and a stream parser do. (Python reports the problems @agentmsg/client's
    validators do: tests/jsclient/test_validators.py.)"""
    from agentmsg.errors import MAX_PROBLEMS

    n = 30_000
    text = '{"id":"m1","role":"USER","content":[' + ",".join(['{"type":"nope"}'] * n) + '],"metadata":{}}'
    with pytest.raises(ValidationError) as info:
        Msg.from_json(text)
    problems = info.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert {p.rule for p in problems[:-1]} <= {"enum", "role-content"}
    assert [p.pointer for p in problems[:-1]] == sorted(p.pointer for p in problems[:-1])
    assert (problems[-1].rule, problems[-1].message) == (
        "max-problems",
        f"{2 * n - MAX_PROBLEMS:,} more problems not listed (a reading lists {MAX_PROBLEMS:,})",
    )


def test_the_problems_cap_counts_each_problem_once() -> None:
    """The cap counted the validator's repeats (a role rule and a block's own level name the same spot): 4,000
    blocks that are numbers, 8,000 distinct problems, were listed as 7,000 and "2,000 more". Each distinct problem
    is counted once, kept or not."""
    text = '{"id":"m1","role":"USER","content":[' + ",".join(["5"] * 4000) + '],"metadata":{}}'
    with pytest.raises(ValidationError) as info:
        Msg.from_json(text)
    problems = info.value.problems
    assert len(problems) == 8000 and "max-problems" not in {p.rule for p in problems}
    assert len({(p.pointer, p.rule, p.message) for p in problems}) == 8000


def _blocks_across_slices(n: int) -> list[Any]:
    """``n`` blocks of a USER message, a fault of another kind every few: an unknown type, a tool call the role
    does not allow, a text that is no string, a number, a valid text."""
    kinds: list[Callable[[int], Any]] = [
        lambda i: {"type": "mystery", "x": i},
        lambda i: {"type": "tool_use", "id": f"c{i}", "name": "f", "input": {}},
        lambda i: {"type": "text", "text": i},
        lambda i: i,
        lambda i: {"type": "text", "text": "fine"},
    ]
    return [kinds[(i * 7) % len(kinds)](i) for i in range(n)]


def test_a_long_messages_blocks_are_checked_a_slice_at_a_time_with_the_same_problems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The validator is handed a message's blocks a slice at a time (jsonschema_rs makes every error of a call at
    once, some 3 kB each: 100,000 blocks a USER message may not hold took 456 MB, now 149): the problems are those
    of the whole message, each at its block's place, the message's own (a missing key, an unknown one) once, and
    the validator never sees more than a slice of blocks in one call."""
    from agentmsg._codec import schemas

    n = 3 * schemas._SLICE + 17
    msg = {"role": "USER", "content": _blocks_across_slices(n), "metadata": {}, "extra": 1, "timestamp": 5}
    event = {"type": "AGENT_RESULT", "id": "e", "createdAt": "2026-01-01T00:00:00Z", "result": msg}
    with pytest.raises(ValidationError) as sliced:
        agentmsg.validate(msg)
    with pytest.raises(ValidationError) as sliced_event:
        agentmsg.validate(event, "event")
    unknown = schemas.find_unknown_keys(
        {**msg, "content": [{"type": "text", "text": "t", "more": i} for i in range(n)]}
    )
    seen: list[int] = []
    level_errors = schemas._level_errors

    def counted(validator: Any, instance: Any, prefix: Any, closed: bool) -> Any:
        for held in (instance, instance.get("result") if type(instance) is dict else None):
            if type(held) is dict and type(held.get("content")) is list:
                seen.append(len(held["content"]))
        return level_errors(validator, instance, prefix, closed)

    monkeypatch.setattr(schemas, "_level_errors", counted)
    assert not agentmsg.is_valid(msg) and not agentmsg.is_valid(event, "event")
    assert seen and max(seen) <= schemas._SLICE
    monkeypatch.setattr(schemas, "_SLICE", 10 * n)  # one call for the whole message: what the slices must give
    with pytest.raises(ValidationError) as whole:
        agentmsg.validate(msg)
    assert sliced.value.problems == whole.value.problems
    with pytest.raises(ValidationError) as whole_event:
        agentmsg.validate(event, "event")
    assert sliced_event.value.problems == whole_event.value.problems
    assert {p.pointer for p in whole_event.value.problems} >= {"/result/timestamp", f"/result/content/{n - 1}"}
    assert {p.pointer for p in whole.value.problems} >= {"", "/timestamp", f"/content/{n - 1}"}
    assert unknown == schemas.find_unknown_keys(
        {**msg, "content": [{"type": "text", "text": "t", "more": i} for i in range(n)]}
    )
    assert len(unknown) == n + 1  # (each block's key, and the message's own once)


def test_the_message_blocks_the_validator_slices_are_checked_one_by_one() -> None:
    """A message's ``content`` may be validated a slice at a time only while its schema checks each block alone: no
    keyword there reads the array as a whole (``minItems``, ``contains``, ``uniqueItems``...), in any branch."""
    from agentmsg._codec import schemas

    whole_array = {"minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "prefixItems"}
    whole_array |= {"unevaluatedItems"}
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            content = node.get("properties", {}).get("content") if isinstance(node.get("properties"), dict) else None
            if isinstance(content, dict):
                found.extend(f"{path}/properties/content/{k}" for k in whole_array & set(content))
            for key, child in node.items():
                walk(child, f"{path}/{key}")
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{path}/{i}")

    walk(schemas.schema_documents()["msg.schema.json"], "")
    assert set(schemas._ITEMWISE.values()) == {("content",), ("result", "content")}  # (a message's, held or not)
    assert schemas._resolve(schemas.schema_uri("event") + "#/$defs/AgentResultEvent/properties/result") == {
        "$ref": "msg.schema.json",
        "description": "The agent's final Msg.",
    }
    assert not found, found
