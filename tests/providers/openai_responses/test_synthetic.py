"""The openai-responses reader on synthetic streams against the official ``openai`` package's accumulator
(``ResponseStreamState``, tests/providers/openai_responses/sdk.py); test_recorded.py does the same on recorded ones.

Hypothesis builds *valid* Responses streams as the API writes them: ``response.created`` and ``in_progress``, then
output items in order, each ``output_item.added`` .. ``output_item.done``: messages of one or more ``output_text``
parts (``content_part.added``, text deltas split anywhere, multi-byte characters and empty deltas included,
``output_text.done``, ``content_part.done``), function calls (arguments deltas split anywhere, ``.done``), reasoning
items with or without summary parts, raw ``reasoning_text`` parts and encrypted content; then ``response.completed``
with the whole output and usage. The body is cut into random byte chunks. agentmsg's message must hold what the
completed response's output says (texts, calls with their ids and arguments, reasoning items with their summaries,
raw text and encrypted content, compared as test_recorded.py compares them), the accumulator's own snapshot's texts
and calls, and the completed usage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import reduce_events
from agentmsg.providers import get
from tests._support.budget import examples
from tests._support.providers import cut_body
from tests.providers.openai_responses.sdk import accumulate, done_items
from tests.providers.openai_responses.test_recorded import _items, _ours

pytestmark = [pytest.mark.fuzz, pytest.mark.oracle]

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)
pieces = st.lists(text, min_size=1, max_size=4)
name = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
argument_pieces = st.dictionaries(
    st.text(max_size=5), st.integers(-(2**53), 2**53) | st.text(max_size=5), max_size=3
).flatmap(lambda value: _split(orjson.dumps(value).decode()))


def _split(s: str) -> Any:
    """``s`` cut into a list of pieces at random places (empty pieces included)."""
    return st.lists(st.integers(0, len(s)), max_size=4).map(
        lambda cuts: [s[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(s)], strict=True)]
    )


@st.composite
def items(draw: Any) -> list[dict[str, Any]]:
    """The output items, each with how its text arrives: ``deltas`` per part (or arguments)."""
    out = []
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["message", "message", "function_call", "reasoning"]))
        if kind == "message":
            out.append({"kind": kind, "id": f"msg_{k}", "parts": draw(st.lists(pieces, min_size=1, max_size=2))})
        elif kind == "function_call":
            out.append(
                {
                    "kind": kind,
                    "id": f"fc_{k}",
                    "call_id": f"call_{k}",
                    "name": draw(name),
                    "args": draw(argument_pieces),
                }
            )
        else:
            item = {"kind": kind, "id": f"rs_{k}", "summary": draw(st.lists(pieces, max_size=2))}
            if draw(st.booleans()):  # raw reasoning text (gpt-oss, OpenRouter): reasoning_text parts
                item["content"] = draw(st.lists(pieces, min_size=1, max_size=2))
            if draw(st.booleans()):
                item["encrypted"] = draw(st.from_regex(r"gAAAA[A-Za-z0-9_-]{4,20}", fullmatch=True))
            out.append(item)
    return out


def _whole(item: dict[str, Any]) -> dict[str, Any]:
    """The item as ``output_item.done`` and ``response.completed`` give it."""
    if item["kind"] == "message":
        content = [
            {"type": "output_text", "text": "".join(p), "annotations": [], "logprobs": []} for p in item["parts"]
        ]
        return {"id": item["id"], "type": "message", "status": "completed", "role": "assistant", "content": content}
    if item["kind"] == "function_call":
        return {
            "id": item["id"],
            "type": "function_call",
            "status": "completed",
            "arguments": "".join(item["args"]),
            "call_id": item["call_id"],
            "name": item["name"],
        }
    whole: dict[str, Any] = {
        "id": item["id"],
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "".join(p)} for p in item["summary"]],
    }
    if "content" in item:
        whole["content"] = [{"type": "reasoning_text", "text": "".join(p)} for p in item["content"]]
    if "encrypted" in item:
        whole["encrypted_content"] = item["encrypted"]
    return whole


def payloads(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream's payloads, in the API's order, sequence numbers counted."""
    events: list[dict[str, Any]] = []
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-test"}
    events.append({"type": "response.created", "response": {**response, "output": []}})
    events.append({"type": "response.in_progress", "response": {**response, "output": []}})
    for i, item in enumerate(output):
        whole = _whole(item)
        at = {"item_id": item["id"], "output_index": i}
        if item["kind"] == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**whole, "status": "in_progress", "content": []},
                }
            )
            for j, part in enumerate(item["parts"]):
                empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                events.append({"type": "response.content_part.added", **at, "content_index": j, "part": empty})
                for d in part:
                    events.append(
                        {"type": "response.output_text.delta", **at, "content_index": j, "delta": d, "logprobs": []}
                    )
                events.append(
                    {
                        "type": "response.output_text.done",
                        **at,
                        "content_index": j,
                        "text": "".join(part),
                        "logprobs": [],
                    }
                )
                events.append(
                    {"type": "response.content_part.done", **at, "content_index": j, "part": whole["content"][j]}
                )
        elif item["kind"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**whole, "status": "in_progress", "arguments": ""},
                }
            )
            for d in item["args"]:
                events.append({"type": "response.function_call_arguments.delta", **at, "delta": d})
            events.append({"type": "response.function_call_arguments.done", **at, "arguments": whole["arguments"]})
        else:
            events.append({"type": "response.output_item.added", "output_index": i, "item": {**whole, "summary": []}})
            for s, part in enumerate(item["summary"]):
                empty = {"type": "summary_text", "text": ""}
                events.append(
                    {"type": "response.reasoning_summary_part.added", **at, "summary_index": s, "part": empty}
                )
                for d in part:
                    events.append(
                        {"type": "response.reasoning_summary_text.delta", **at, "summary_index": s, "delta": d}
                    )
                done = {"type": "summary_text", "text": "".join(part)}
                events.append(
                    {"type": "response.reasoning_summary_text.done", **at, "summary_index": s, "text": done["text"]}
                )
                events.append({"type": "response.reasoning_summary_part.done", **at, "summary_index": s, "part": done})
            for c, part in enumerate(item.get("content", [])):
                empty = {"type": "reasoning_text", "text": ""}  # (as OpenRouter gives a reasoning_text part)
                events.append({"type": "response.content_part.added", **at, "content_index": c, "part": empty})
                for d in part:
                    events.append({"type": "response.reasoning_text.delta", **at, "content_index": c, "delta": d})
                events.append({"type": "response.reasoning_text.done", **at, "content_index": c, "text": "".join(part)})
        events.append({"type": "response.output_item.done", "output_index": i, "item": whole})
    usage = {
        "input_tokens": 11,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 18,
    }
    completed = {**response, "status": "completed", "output": [_whole(i) for i in output], "usage": usage}
    events.append({"type": "response.completed", "response": completed})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


@settings(max_examples=examples(150), deadline=None)
@given(output=items(), cuts=st.lists(st.integers(1, 8000), max_size=6), data=st.data())
def test_synthetic_responses_stream_is_what_the_sdks_accumulator_makes_of_it(
    output: list[dict[str, Any]], cuts: list[int], data: st.DataObject
) -> None:
    """A quarter of the streams give their items in another order than their output_index (a proxy's): the message
    is in output_index order all the same, as the completed response (and the SDK's final response) is."""
    pytest.importorskip("openai.lib.streaming.responses")
    stream = payloads(output)
    in_order = list(range(len(output)))
    order = data.draw(st.permutations(in_order)) if data.draw(st.integers(0, 3)) == 0 else in_order
    if order != in_order:
        from tests.providers.openai_responses.test_reader import _arriving

        stream = _arriving(stream, order)
    snapshot, final = accumulate(stream)
    assert final is not None
    completed = final.model_dump(mode="json", warnings=False)
    body = b"".join(b"event: " + p["type"].encode() + b"\ndata: " + orjson.dumps(p) + b"\n\n" for p in stream)
    events = list(get("openai-responses").parse_stream(cut_body(body, cuts)))
    problems = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert not problems, problems
    (msg,) = reduce_events(events)
    ours = _ours(msg)
    expected = _items(completed["output"])
    expected["reasoning"] = _items(done_items(stream))["reasoning"]
    assert ours == expected
    theirs = _items(snapshot.model_dump(mode="json", warnings=False)["output"])  # (items in the order they came)
    if order == in_order:
        assert (ours["text"], ours["calls"]) == (theirs["text"], theirs["calls"])
    whole = get("openai-responses").parse_response(stream[-1]["response"])
    assert msg.to_dict()["content"] == whole.to_dict()["content"]
    assert msg.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cached_tokens, msg.usage.reasoning_tokens) == (
        11,
        7,
        2,
        3,
    )
