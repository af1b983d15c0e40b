"""Replies parsed from a provider, sent back through the formatters: what the provider gave goes back in its own
fields (a minted call id is not sent to Gemini, which gave none; an OpenAI refusal goes back as ``refusal``), and
what another provider needs it still gets. Every body goes through its oracle (``tests.oracles.formatted``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import Reducer, ToolResultMessage, UserMessage
from agentmsg.blocks import ToolResultBlock, ToolUseBlock
from agentmsg.providers import gemini
from tests.oracles import formatted

TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def reduce_ok(events: list[dict[str, Any]]) -> agentmsg.AssistantMessage:
    for e in events:
        agentmsg.validate(e, "event")
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert r.problems == []
    return msg


# ---- Gemini calls without an id -------------------------------------------------------------------------------


def _gemini_calls(ids: tuple[str | None, ...]) -> dict[str, Any]:
    parts = []
    for n, call_id in enumerate(ids):
        call: dict[str, Any] = {"name": "get_weather", "args": {"city": f"c{n}"}}
        if call_id is not None:
            call["id"] = call_id
        parts.append({"functionCall": call})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "responseId": "resp-1",
        "modelVersion": "gemini-2.5-flash",
    }


def _gemini_replies(ids: tuple[str | None, ...]) -> list[agentmsg.AssistantMessage]:
    """The reply whole and streamed (one chunk per part)."""
    body = _gemini_calls(ids)
    whole = gemini.parse_response(body)
    cand = body["candidates"][0]
    chunks = [
        {**body, "candidates": [{**cand, "content": {"role": "model", "parts": [part]}, "finishReason": None}]}
        for part in cand["content"]["parts"]
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    sse = b"".join(
        b"data: " + orjson.dumps({k: v for k, v in c.items() if v is not None}) + b"\r\n\r\n" for c in chunks
    )
    streamed = reduce_ok(list(gemini.parse_stream(sse)))
    return [whole, streamed]


def _answered(reply: agentmsg.AssistantMessage) -> list[Any]:
    calls = reply.blocks("tool_use")
    results = [ToolResultBlock(id=c.id, name=c.name, output=f"sunny {k}", state="success") for k, c in enumerate(calls)]
    return [UserMessage("Weather?"), reply, ToolResultMessage(results)]


def test_a_gemini_call_without_an_id_goes_back_to_gemini_without_one() -> None:
    """Gemini gave the calls no id: agentmsg minted one (call_<hash>), marked in the call's metadata
    (agentmsg_minted_id: the id), so that the Gemini formatter sends neither the call nor its response an id Gemini
    never gave (matched by name and order, as Gemini matches id-less calls). It sent the minted id as
    functionCall.id and functionResponse.id."""
    for reply in _gemini_replies((None, None)):
        calls = reply.blocks("tool_use")
        assert [c.id.startswith("call_") for c in calls] == [True, True]
        assert [c.metadata for c in calls] == [{"agentmsg_minted_id": c.id} for c in calls]
        # the mark survives agentmsg's JSON (and Java's: block metadata maps are kept whole)
        assert agentmsg.Msg.from_json(reply.to_json()).blocks("tool_use")[0].metadata == calls[0].metadata
        request = formatted("gemini", _answered(reply), tools=TOOLS)
        model, user = request.body["contents"][1:]
        assert [p["functionCall"] for p in model["parts"]] == [
            {"name": "get_weather", "args": {"city": "c0"}},
            {"name": "get_weather", "args": {"city": "c1"}},
        ]
        assert [p["functionResponse"] for p in user["parts"]] == [
            {"name": "get_weather", "response": {"output": "sunny 0"}},
            {"name": "get_weather", "response": {"output": "sunny 1"}},
        ]
        assert list(request.diagnostics) == []


def test_a_gemini_call_with_its_own_id_goes_back_with_it() -> None:
    """A call Gemini gave an id keeps it, and no mark; in a reply whose other call has none, only that one goes
    without an id."""
    for reply in _gemini_replies(("fc-1", None)):
        first, second = reply.blocks("tool_use")
        assert first.id == "fc-1" and first.metadata == {} and second.metadata == {"agentmsg_minted_id": second.id}
        model, user = formatted("gemini", _answered(reply), tools=TOOLS).body["contents"][1:]
        assert [p["functionCall"].get("id") for p in model["parts"]] == ["fc-1", None]
        assert [p["functionResponse"].get("id") for p in user["parts"]] == ["fc-1", None]


@pytest.mark.parametrize("provider", ["openai", "deepseek", "dashscope-compatible", "anthropic", "dashscope"])
def test_other_providers_still_get_the_minted_id(provider: str) -> None:
    """Every other provider needs a call id to pair call and result: the minted one is sent, alike in both."""
    (reply, _) = _gemini_replies((None,))
    (call,) = reply.blocks("tool_use")
    body = formatted(provider, _answered(reply), tools=TOOLS).body
    text = orjson.dumps(body).decode()
    assert text.count(call.id) == 2, text


def test_a_minted_id_changed_since_is_sent() -> None:
    """The mark names the minted id: a call whose id was changed since (a framework that renumbers calls) is
    not taken for a minted one, and goes to Gemini with its id, as any call does."""
    (reply, _) = _gemini_replies((None,))
    (call,) = reply.blocks("tool_use")
    renamed = ToolUseBlock(id="mine-1", name=call.name, input=call.input, metadata=dict(call.metadata))
    msgs = [
        UserMessage("Weather?"),
        agentmsg.AssistantMessage([renamed]),
        ToolResultMessage(ToolResultBlock(id="mine-1", name=call.name, output="sunny", state="success")),
    ]
    model, user = formatted("gemini", msgs, tools=TOOLS).body["contents"][1:]
    assert model["parts"][0]["functionCall"]["id"] == "mine-1"
    assert user["parts"][0]["functionResponse"]["id"] == "mine-1"


def test_an_unanswered_minted_call_is_repaired_without_an_id() -> None:
    """repair=True answers an open call with an error response: for a call sent without an id, without one too
    (it was sent with "id": "")."""
    (reply, _) = _gemini_replies((None,))
    request = formatted(
        "gemini", [UserMessage("Weather?"), reply, UserMessage("Go on")], tools=TOOLS, options={"repair": True}
    )
    response = request.body["contents"][2]["parts"][0]["functionResponse"]
    assert "id" not in response and response["name"] == "get_weather"
