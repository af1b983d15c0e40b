"""The openai-responses reader on the recorded streams and responses (tests/fixtures/providers/openai-responses/):
equal to what the official ``openai`` package's own Responses accumulator (``ResponseStreamState``) makes of the same
stream, and to what ``parse_response`` makes of its completed response; a reply parsed from this API and formatted
back carries its reasoning items unchanged (marker ``oracle``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentmsg import TextBlock, ToolResultBlock, ToolResultMessage, UserMessage, reduce_events
from agentmsg.providers import get
from tests._support.providers import FIXTURES, comparable, ids, recorded_payloads, reduce_checked
from tests.oracles import check
from tests.providers.openai_responses.sdk import accumulate, done_items

pytestmark = pytest.mark.oracle

DIR = FIXTURES / "openai-responses"
STREAMS = sorted(p for p in DIR.iterdir() if p.suffix in (".sse", ".jsonl"))
COMPLETED = [p for p in STREAMS if "error" not in p.name]
P = get("openai-responses")


def _items(output: list[Any]) -> dict[str, list[Any]]:
    """What a response's output says, by kind: texts (one per message item), calls, reasoning items."""
    out: dict[str, list[Any]] = {"text": [], "calls": [], "reasoning": []}
    for item in output:
        if item["type"] == "message":
            text = "".join(p.get("text") or "" for p in item["content"] if p["type"] == "output_text")
            if text:
                out["text"].append(text)
        elif item["type"] == "function_call":
            out["calls"].append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "reasoning":
            summary = [s["text"] for s in item.get("summary") or () if s["text"]]
            content = [c["text"] for c in item.get("content") or () if c["text"]]
            out["reasoning"].append((item["id"], item.get("encrypted_content"), summary, content))
    return out


def _ours(msg: Any) -> dict[str, list[Any]]:
    """The same from agentmsg's message: thinking blocks regrouped by their item id (metadata itemId)."""
    out: dict[str, list[Any]] = {"text": [b.text for b in msg.blocks("text")], "calls": [], "reasoning": []}
    out["calls"] = [(b.id, b.name, b.content) for b in msg.blocks("tool_use")]
    items: dict[str, list[Any]] = {}
    for b in msg.blocks("thinking"):
        meta = b.metadata or {}
        if "providerBlock" in meta:  # (a message item's id and phase: compared in the round trip)
            continue
        item = items.get(meta["itemId"])
        if item is None:
            item = items[meta["itemId"]] = [meta["itemId"], None, [], []]
            out["reasoning"].append(item)
        item[1] = meta.get("signature", item[1])
        if b.thinking:
            item[3 if meta.get("reasoningText") else 2].append(b.thinking)
    out["reasoning"] = [tuple(i) for i in out["reasoning"]]
    return out


@pytest.mark.parametrize("path", COMPLETED, ids=ids(COMPLETED))
def test_a_stream_is_what_the_sdks_accumulator_makes_of_it(path: Path) -> None:
    pytest.importorskip("openai.lib.streaming.responses")
    payloads = recorded_payloads(path)
    snapshot, final = accumulate(payloads)
    assert final is not None
    completed = final.model_dump(mode="json", warnings=False)
    accumulated = snapshot.model_dump(mode="json", warnings=False)
    msg = reduce_checked(list(P.parse_stream(path.read_bytes())))
    ours = _ours(msg)
    # the completed response's output, its reasoning items as the accumulator's output_item.done items give them
    # (the encrypted content to replay: response.completed's copy has other bytes, OpenRouter's another id), and the
    # accumulator's own snapshot (which does not gather reasoning summaries: texts and calls only)
    expected = _items(completed["output"])
    expected["reasoning"] = _items(done_items(payloads))["reasoning"]
    assert ours == expected
    theirs = _items(accumulated["output"])
    assert (ours["text"], ours["calls"]) == (theirs["text"], theirs["calls"])
    u = completed["usage"]
    assert msg.usage is not None
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (u["input_tokens"], u["output_tokens"])
    assert msg.usage.reasoning_tokens == u["output_tokens_details"]["reasoning_tokens"]
    assert msg.usage.cached_tokens == u["input_tokens_details"]["cached_tokens"]
    # and the stream is the message parse_response makes of its completed response
    whole = P.parse_response(completed)
    assert _ours(whole)["text"] == ours["text"] and _ours(whole)["calls"] == ours["calls"]
    if completed["output"] == done_items(payloads):  # (where the two copies agree: the whole message too)
        assert comparable(msg) == comparable(whole)


def test_the_encrypted_content_kept_is_the_completed_items_not_the_added_ones() -> None:
    """The API's documentation: the encrypted content of output_item.added may be incomplete; the done item's is the
    one to replay. The recording's two differ (932 and 1080 characters)."""
    path = DIR / "stream_reasoning_commentary_function_call.sse"
    payloads = recorded_payloads(path)
    added = next(p["item"] for p in payloads if p["type"] == "response.output_item.added")
    done = next(p["item"] for p in payloads if p["type"] == "response.output_item.done")
    assert added["encrypted_content"] != done["encrypted_content"]
    msg = reduce_checked(list(P.parse_stream(path.read_bytes())))
    (thinking,) = [b for b in msg.blocks("thinking") if "providerBlock" not in (b.metadata or {})]  # (not the phase's)
    assert thinking.metadata is not None and thinking.metadata["signature"] == done["encrypted_content"]
    assert thinking.thinking == "" and thinking.metadata["itemId"] == done["id"]


@pytest.mark.parametrize("name", ["response_reasoning_summary_encrypted.json", "response_text.json"])
def test_a_whole_response_is_what_the_sdk_parses(name: str) -> None:
    pytest.importorskip("openai")
    from openai._models import construct_type
    from openai.types.responses import Response

    body = json.loads((DIR / name).read_text())
    theirs = construct_type(type_=Response, value=body).model_dump(mode="json", warnings=False)
    msg = P.parse_response(body)
    assert _ours(msg) == _items(theirs["output"])
    assert msg.text_content == "".join(_items(theirs["output"])["text"])


def test_the_error_stream_ends_interrupted_with_the_providers_error() -> None:
    """error (nested fields, as recorded), then response.failed: one error, the SDK's message, the reply INTERRUPTED;
    the SDK's helper raises on the same stream (get_final_response: no response.completed)."""
    path = DIR / "stream_error_insufficient_quota.jsonl"
    events = list(P.parse_stream(path.read_bytes()))
    (msg,) = reduce_events(events)
    meta = msg.to_dict()["metadata"]
    assert meta["agentscope_generate_reason"] == "INTERRUPTED"
    (err,) = meta["agentmsg_errors"]
    assert (err["type"], err["code"]) == ("insufficient_quota", "insufficient_quota")
    assert err["message"].startswith("You exceeded your current quota")
    assert accumulate(recorded_payloads(path))[1] is None


def test_a_reply_formatted_back_carries_its_reasoning_items_unchanged() -> None:
    """The recorded second turn (pydantic-ai's, which the API answered 200): the first turn's reply parsed, then
    formatted back with the tool's result, replays the reasoning item byte for byte (id, summary, encrypted content
    of output_item.done) before the text and the call, as that accepted request does; the request passes the SDK's
    strict ResponseCreateParams."""
    want = json.loads((DIR / "request_replay_reasoning_tool_output.json").read_text())
    reply = reduce_checked(list(P.parse_stream((DIR / "stream_reasoning_commentary_function_call.sse").read_bytes())))
    (call,) = reply.blocks("tool_use")
    result = ToolResultMessage(
        content=[ToolResultBlock(id=call.id, name=call.name, output=[TextBlock(text="Potato City")])]
    )
    tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in want["tools"]]
    request = P.format_request(
        [UserMessage(want["input"][0]["content"]), reply, result], model=want["model"], tools=tools, stream=True
    )
    assert request.diagnostics == ()
    assert not check("openai-responses", request)
    got = request.body["input"]
    assert [i.get("type", "message") for i in got] == [i.get("type", "message") for i in want["input"]]
    assert got[1] == want["input"][1]  # the reasoning item, unchanged
    # the message with its id and phase (its text: the recording's own, whose curly quotes the cassette's serializer
    # made ASCII)
    assert {**got[2], "content": None} == {**want["input"][2], "content": None}
    assert got[2]["content"][0]["text"] == reply.blocks("text")[0].text
    assert got[3] == {k: v for k, v in want["input"][3].items() if k not in ("id", "status")}  # (no fc_ id)
    assert got[4] == want["input"][4]
    assert request.body["include"] == want["include"] and request.body["store"] is False


@pytest.mark.parametrize("path", COMPLETED, ids=ids(COMPLETED))
def test_every_recorded_reasoning_item_round_trips(path: Path) -> None:
    """Each reasoning item of each recorded reply, formatted back: equal to the completed response's item (id,
    summary parts, reasoning_text parts, encrypted content), in its place before the items it preceded."""
    reply = reduce_checked(list(P.parse_stream(path.read_bytes())))
    request = P.format_request([UserMessage("q"), reply], store=True)
    assert not check("openai-responses", request)
    sent = [i for i in request.body["input"] if i.get("type") == "reasoning"]
    expected = []
    for item in done_items(recorded_payloads(path)):
        if item["type"] == "reasoning":
            want = {"type": "reasoning", "id": item["id"], "summary": [s for s in item["summary"] if s["text"]]}
            content = [c for c in item.get("content") or () if c["text"]]
            if content:
                want["content"] = content
            if item.get("encrypted_content"):
                want["encrypted_content"] = item["encrypted_content"]
            expected.append(want)
    assert sent == expected
