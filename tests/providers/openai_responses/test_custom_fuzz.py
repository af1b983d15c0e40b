"""OpenAI custom tools in the Responses API, fuzzed (marker ``fuzz``; ``make fuzz`` runs them longer): replies and
streams of ``custom_tool_call`` items among function calls and messages, their events in the orders a proxy may send
them (deltas split anywhere, the input only in its ``.done`` event or only in the done item, no ``added`` event,
``.done`` or a delta before ``added``), read to the whole response's message; the same bodies mutated (wrong
types, missing call_id or name, huge or no-string input, events of unknown output indexes) read to a message that
round-trips or to the SDK's ValidationError at a pointer, never another exception; and random custom tool
definitions and tool choices formatted to a body the openai package's params take, or refused at a pointer."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg import Msg, UserMessage, ValidationError, reduce_events, validate
from agentmsg.providers import get
from tests._support.budget import SEED, examples, rounds
from tests._support.mutators import HUGE_VALUES, ODD_VALUES, mutate_json, random_cuts
from tests._support.providers import reduce_ok
from tests.oracles import check

pytestmark = pytest.mark.fuzz

P = get("openai-responses")
RESP: dict[str, Any] = {"id": "resp_1", "object": "response", "model": "gpt-5", "status": "in_progress", "output": []}
USAGE = {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
#: how a custom call's events arrive: as the API sends them, or as a proxy may
ARRIVALS = ["deltas", "done event", "done item", "no added", "done before added", "delta before added"]

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@st.composite
def outputs(draw: st.DrawFn) -> list[tuple[dict[str, Any], str, int]]:
    """Output items (custom calls, function calls, messages), each with how its events arrive and where its text
    is cut."""
    out = []
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["custom_tool_call", "custom_tool_call", "function_call", "message"]))
        item: dict[str, Any]
        if kind == "custom_tool_call":
            item = {"type": kind, "id": f"ctc_{k}", "call_id": f"call_{k}", "name": "math", "input": draw(text)}
        elif kind == "function_call":
            args = orjson.dumps(
                draw(st.dictionaries(st.text(max_size=3), st.integers(-(2**53), 2**53), max_size=2))
            ).decode()
            item = {"type": kind, "id": f"fc_{k}", "call_id": f"call_{k}", "name": "f", "arguments": args}
        else:
            part = {"type": "output_text", "text": draw(text.filter(bool)), "annotations": []}
            item = {"type": kind, "id": f"msg_{k}", "role": "assistant", "content": [part]}
        out.append(({**item, "status": "completed"}, draw(st.sampled_from(ARRIVALS)), draw(st.integers(0, 12))))
    return out


def _events(out: list[tuple[dict[str, Any], str, int]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "response.created", "response": RESP}]
    for i, (item, how, cut) in enumerate(out):
        at = {"output_index": i, "item_id": item["id"]}
        if item["type"] == "message":
            whole = item["content"][0]["text"]
            added = {**item, "content": [], "status": "in_progress"}
            deltas = [{"type": "response.output_text.delta", **at, "content_index": 0, "delta": whole}]
            done = [{"type": "response.output_text.done", **at, "content_index": 0, "text": whole}]
        else:
            field, kind = (
                ("input", "custom_tool_call_input") if "input" in item else ("arguments", "function_call_arguments")
            )
            whole = item[field]
            added = {**item, field: "", "status": "in_progress"}
            pieces = [whole[:cut], whole[cut:]]
            deltas = [{"type": f"response.{kind}.delta", **at, "delta": d} for d in pieces]
            done = [{"type": f"response.{kind}.done", **at, field: whole}]
        add = [{"type": "response.output_item.added", "output_index": i, "item": added}]
        events += {
            "deltas": add + deltas + done,
            "done event": add + done,
            "done item": add,
            "no added": deltas + done,
            "done before added": done + add,
            "delta before added": deltas[:1] + add + deltas[1:] + done,
        }[how]
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    output = [item for item, _, _ in out]
    events.append(
        {"type": "response.completed", "response": {**RESP, "status": "completed", "usage": USAGE, "output": output}}
    )
    return events


def _sse(events: list[Any]) -> bytes:
    """The events as SSE (json, not orjson: a mutated event may hold an integer past 64 bits)."""
    return b"".join(
        b"event: %s\ndata: %s\n\n"
        % (str(e.get("type") if isinstance(e, dict) else "x")[:40].encode(), json.dumps(e).encode())
        for e in events
    )


def _round_trips(msg: Msg) -> None:
    data = msg.to_json_bytes()
    back = Msg.from_json(data)
    assert back == msg and back.to_json_bytes() == data


def _contract(exc: BaseException, label: str) -> None:
    """The one exception a reader may raise: the SDK's own ValidationError, each problem at a pointer, of a rule."""
    if not isinstance(exc, ValidationError):
        raise AssertionError(f"{label}: {type(exc).__name__} escaped: {exc!r:.300}") from exc
    assert exc.problems, label
    for p in exc.problems:
        assert p.rule and (p.pointer == "" or p.pointer.startswith("/")), (label, p)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs(), st.randoms(use_true_random=False))
def test_a_custom_call_streamed_in_any_arrival_is_the_whole_responses(
    out: list[tuple[dict[str, Any], str, int]], rng: random.Random
) -> None:
    """Custom calls among function calls and messages, each item's events arriving as the API sends them or as a
    proxy may (its text only in the .done event or the done item, no added event, .done or a delta before added),
    the body cut anywhere: the message is the whole response's, said nothing of, and it round-trips."""
    whole = P.parse_response(
        orjson.dumps({**RESP, "status": "completed", "usage": USAGE, "output": [item for item, _, _ in out]})
    )
    body = _sse(_events(out))
    events = list(P.parse_stream(random_cuts(body, rng)))
    assert [e["value"] for e in events if e["type"] == "CUSTOM"] == []
    msg = reduce_ok(events)
    assert msg.content == whole.content
    _round_trips(msg)


ROUNDS = 40


def test_mutated_custom_call_replies_and_streams_are_read_or_refused_at_a_pointer() -> None:
    """The same replies and streams with one to three values replaced (wrong types, huge values, a call_id or name
    removed, an input of no string, an output_index no item has) and events swapped: each is read to a message that
    validates and round-trips, the stream the same however it is cut, or refused with the SDK's ValidationError at a
    pointer; no other exception. A failure names its seed (AGENTMSG_FUZZ_SEED=<seed> replays it)."""
    rng = random.Random(f"{SEED}/responses-custom")
    for round_ in rounds(ROUNDS):
        label = f"AGENTMSG_FUZZ_SEED={SEED}, round {round_ + 1}"
        out = _seeded_outputs(rng)
        values = HUGE_VALUES if rng.random() < 0.2 else ODD_VALUES
        reply = {**RESP, "status": "completed", "usage": USAGE, "output": [item for item, _, _ in out]}
        # Only the readers may refuse: what they read is checked outside the try, so that an invalid message or
        # event, or one that does not round-trip, fails the test instead of counting as a refusal.
        try:
            msg = P.parse_response(json.dumps(mutate_json(reply, rng, values=values, add=0.1)).encode())
        except Exception as exc:
            _contract(exc, label + " whole")
        else:
            validate(orjson.loads(msg.to_json_bytes()), "msg")
            _round_trips(msg)
        events = _events(out)
        for _ in range(rng.choice((1, 1, 2))):
            k = rng.randrange(1, len(events))
            events[k] = mutate_json(events[k], rng, values=values, add=0.1)
        if rng.random() < 0.3:
            a, b = rng.randrange(len(events)), rng.randrange(len(events))
            events[a], events[b] = events[b], events[a]
        body = _sse(events)
        try:
            read = list(P.parse_stream(body, reply_id="r"))
            cut = list(P.parse_stream(random_cuts(body, rng), reply_id="r"))
        except Exception as exc:
            _contract(exc, label + " stream")
            continue
        for e in read:
            validate(e, "event")
        assert _plain(cut) == _plain(read), label
        for m in reduce_events(read):
            _round_trips(m)


def _plain(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in ("id", "createdAt", "replyId")} for e in events]


def _seeded_outputs(rng: random.Random) -> list[tuple[dict[str, Any], str, int]]:
    """outputs(), drawn from a seeded random (the seeded loop ``make fuzz`` time-boxes)."""
    out = []
    for k in range(rng.randint(1, 4)):
        kind = rng.choice(["custom_tool_call", "custom_tool_call", "function_call", "message"])
        item: dict[str, Any]
        words = rng.choice(["4 + 4", "", "é" * 3, '{"a": 1}', "a\nb", "x" * rng.randint(0, 3000)])
        if kind == "custom_tool_call":
            item = {"type": kind, "id": f"ctc_{k}", "call_id": f"call_{k}", "name": "math", "input": words}
        elif kind == "function_call":
            item = {"type": kind, "id": f"fc_{k}", "call_id": f"call_{k}", "name": "f", "arguments": '{"x": 1}'}
        else:
            part = {"type": "output_text", "text": words or "hi", "annotations": []}
            item = {"type": kind, "id": f"msg_{k}", "role": "assistant", "content": [part]}
        out.append(({**item, "status": "completed"}, rng.choice(ARRIVALS), rng.randint(0, 12)))
    return out


# ---- requests ---------------------------------------------------------------------------------------------

_SYNTAX = st.sampled_from(["lark", "regex", "lark", "regex", "LARK", "", None])
_DEFINITION = st.sampled_from(["start: /[0-9+ ]+/", "a+", "", None, 5])
formats = st.one_of(
    st.none(),
    st.just({"type": "text"}),
    st.builds(lambda s, d: {"type": "grammar", "grammar": {"syntax": s, "definition": d}}, _SYNTAX, _DEFINITION),
    st.builds(lambda s, d: {"type": "grammar", "syntax": s, "definition": d}, _SYNTAX, _DEFINITION),
    st.sampled_from(
        [{}, {"type": "text", "note": 1}, {"type": "grammar"}, {"type": "grammar", "grammar": "x"}, {"type": "json"},
         {"type": "grammar", "grammar": {"syntax": "lark", "definition": "x"}, "syntax": "lark"}, 5, "text", []]
    ),
)  # fmt: skip
names = st.sampled_from(["math", "notes", "f", "é", "", "a b", "x" * 80]) | st.sampled_from([None, 5])


@st.composite
def custom_tools(draw: st.DrawFn) -> list[Any]:
    """Custom tool definitions (nested in ``custom`` or flat; random names, descriptions and formats), and
    sometimes a function tool."""
    tools: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        spec: dict[str, Any] = {"name": draw(names)}
        if draw(st.booleans()):
            spec["description"] = draw(st.sampled_from(["Arithmetic", "", None, 5]))
        fmt = draw(formats)
        if fmt is not None or draw(st.booleans()):
            spec["format"] = fmt
        tools.append({"type": "custom", "custom": spec} if draw(st.booleans()) else {"type": "custom", **spec})
    if draw(st.booleans()):
        tools.append(
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
        )
    return tools


def choices(tools: list[Any]) -> st.SearchStrategy[Any]:
    named = st.sampled_from(
        [(t.get("custom") if isinstance(t.get("custom"), dict) else t).get("name") for t in tools] + ["nope"]
    )
    return st.one_of(
        st.sampled_from([None, "auto", "required", "none"]),
        named.map(lambda n: {"type": "custom", "custom": {"name": n}}),
        named.map(lambda n: {"type": "custom", "name": n}),
        named.map(lambda n: {"type": "function", "name": n}),
        st.sampled_from([{"type": "custom"}, {"type": "custom", "custom": None}]),
    )


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_custom_tool_requests_format_to_a_body_the_params_take_or_are_refused(data: st.DataObject) -> None:
    """Random custom tool definitions (nested or flat, formats of every shape, odd names) and tool choices (custom,
    function, by name or none): formatted for the Responses API and for Chat Completions, the body is one the
    openai package's params take, or the formatter refuses it with the SDK's ValidationError at a pointer."""
    tools = data.draw(custom_tools())
    choice = data.draw(choices(tools))
    kwargs: dict[str, Any] = {"tools": tools} if choice is None else {"tools": tools, "tool_choice": choice}
    for provider in ("openai-responses", "openai"):
        try:
            request = get(provider).format_request([UserMessage("q")], model="gpt-5", **kwargs)
        except Exception as exc:
            _contract(exc, provider)
            continue
        assert check(provider, request) == [], (provider, request.body)
