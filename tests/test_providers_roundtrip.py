"""Replies parsed from a provider, sent back through the formatters: what the provider gave goes back in its own
fields (a minted call id is not sent to Gemini, which gave none; an OpenAI refusal goes back as ``refusal``), and
what another provider needs it still gets. Every body goes through its oracle (``tests.oracles.formatted``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import ToolResultMessage, UserMessage
from agentmsg.blocks import ToolResultBlock, ToolUseBlock
from agentmsg.providers import anthropic, gemini, openai
from tests.oracles import formatted
from tests.test_providers_odd import reduce_ok

TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


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


# ---- OpenAI refusals ----------------------------------------------------------------------------------------------

FIX = Path(__file__).parent / "fixtures" / "providers"
REFUSED = "I'm very sorry, but I can't assist with that."


def _openai_refusals() -> list[agentmsg.AssistantMessage]:
    """OpenAI's refusal (message.refusal, content null), whole and streamed."""
    whole = openai.parse_response((FIX / "openai" / "chat_completion_refusal.json").read_bytes())
    streamed = reduce_ok(list(openai.parse_stream((FIX / "openai" / "stream_refusal.sse").read_bytes())))
    return [whole, streamed]


def _assistant(provider: str, reply: agentmsg.AssistantMessage) -> tuple[dict[str, Any], Any]:
    request = formatted(provider, [UserMessage("Do it."), reply, UserMessage("Please?")])
    body = request.body
    messages = body.get("messages") or body.get("contents") or body["input"]["messages"]
    return messages[1], request


def test_an_openai_refusal_goes_back_to_openai_as_a_refusal() -> None:
    """OpenAI gave the refusal in message.refusal: the parser keeps it as a text block of its own, the message marked
    agentmsg_refusal. Sent back to OpenAI it is the assistant's refusal, no content (as OpenAI's own Agents SDK sends
    a refusal back): it went as the assistant's content, an answer the model never gave. Nothing is said: it is
    sent where OpenAI gave it."""
    for reply in _openai_refusals():
        assert reply.metadata["agentmsg_refusal"] is True and reply.text_content.startswith("I'm ")
        entry, request = _assistant("openai", reply)
        assert entry == {"role": "assistant", "refusal": reply.text_content}
        assert list(request.diagnostics) == []


def test_an_openai_refusal_after_an_answer_keeps_the_answer_as_content() -> None:
    """A reply with content and a refusal (two text blocks, content first): the content goes back as content, the
    refusal as the refusal (they went joined as one content)."""
    body = orjson.loads((FIX / "openai" / "chat_completion_refusal.json").read_bytes())
    body["choices"][0]["message"]["content"] = "Partly:"
    reply = openai.parse_response(body)
    assert [b.text for b in reply.blocks("text")] == ["Partly:", REFUSED]
    entry, _ = _assistant("openai", reply)
    assert entry == {"role": "assistant", "content": "Partly:", "refusal": REFUSED}


@pytest.mark.parametrize("provider", ["deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"])
def test_a_refusal_stays_text_for_other_providers(provider: str) -> None:
    """The other providers (DeepSeek and DashScope's compatible mode too: their APIs document no refusal field, and
    a server that ignores it would hide the text from the model) get the refusal as the assistant's text, as
    before."""
    for reply in _openai_refusals():
        entry, _ = _assistant(provider, reply)
        assert "refusal" not in entry
        assert reply.text_content in orjson.dumps(entry).decode()


def test_an_anthropic_refusal_is_no_openai_refusal() -> None:
    """Anthropic's refusal is its stop reason (agentmsg_finish_reason "refusal"): the text is what the model said
    before it was stopped, its answer, not a refusal message: it goes to OpenAI as content."""
    body = orjson.loads((FIX / "anthropic" / "message_refusal.json").read_bytes())
    body["content"] = [{"type": "text", "text": "Here is how to"}]
    reply = anthropic.parse_response(body)
    assert reply.metadata["agentmsg_refusal"] is True and reply.metadata["agentmsg_finish_reason"] == "refusal"
    entry, _ = _assistant("openai", reply)
    assert entry == {"role": "assistant", "content": "Here is how to"}


def test_a_message_of_text_only_marked_refused_by_hand_is_taken_for_one() -> None:
    """The mark and the message's last text block make a refusal, however the message was made (read from JSON, a
    message the caller built): the text before it stays content."""
    msg = agentmsg.AssistantMessage(["Here is half.", "No more."], metadata={"agentmsg_refusal": True})
    entry, _ = _assistant("openai", msg)
    assert entry == {"role": "assistant", "content": "Here is half.", "refusal": "No more."}
    unmarked = agentmsg.AssistantMessage(["No more."])
    assert _assistant("openai", unmarked)[0] == {"role": "assistant", "content": "No more."}
