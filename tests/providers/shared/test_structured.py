"""Structured output (``format_request(..., structured_output=...)``, providers/_request/structured.py): the one
option mapped to what each provider's API takes, checked against the official SDKs' own request building; a
``response_format`` parameter sent where it is valid, mapped or said where it is not; and the reply's JSON in the
message's metadata ``_structured_output``, whole and streamed alike, checked against the SDKs' own parsing of
recorded or SDK-built replies."""

from __future__ import annotations

import json
import warnings
from typing import Any

import httpx
import orjson
import pytest

from agentmsg import AssistantMessage, Msg, ToolUseBlock, UserMessage, ValidationError, reduce_events
from agentmsg.providers import NAMES, StructuredOutput, get
from agentmsg.providers._request.context import Context, FormatOptions
from agentmsg.providers._request.run import Draft, run_format
from agentmsg.providers.base import Spec
from tests._support.providers import FIXTURES, rules
from tests.oracles import anthropic_output_config_errors, formatted, require

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
    "additionalProperties": False,
}
ASK = [UserMessage("Where were the 2012 Olympics? Answer in JSON.")]
CITY = {"city": "London", "country": "United Kingdom"}


def _body_part(provider: str, body: dict[str, Any]) -> Any:
    """Where each provider's structured output goes in the body."""
    if provider == "anthropic":
        return body.get("output_config")
    if provider == "gemini":
        return body.get("generationConfig")
    if provider == "dashscope":
        return body["parameters"].get("response_format")
    if provider == "openai-responses":
        return body.get("text", {}).get("format")
    return body.get("response_format")


# ---- requests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", NAMES)
def test_each_provider_gets_its_own_form(provider: str) -> None:
    r = formatted(provider, ASK, structured_output=StructuredOutput(SCHEMA, name="City", description="A city"))
    part = _body_part(provider, r.body)
    openai_form: dict[str, Any] = {
        "type": "json_schema",
        "json_schema": {"name": "City", "description": "A city", "schema": SCHEMA, "strict": True},
    }
    expected: dict[str, Any] = {
        "openai": openai_form,
        "dashscope-compatible": openai_form,
        "dashscope": openai_form,
        "deepseek": {"type": "json_object"},
        "anthropic": {"format": {"type": "json_schema", "schema": SCHEMA}},
        "gemini": {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA},
        "openai-responses": {"type": "json_schema", **openai_form["json_schema"]},
    }
    assert part == expected[provider]
    assert rules(r) == ([("/structured_output", "structured-output-approximated")] if provider == "deepseek" else [])
    assert r.parser_options == {"structured_output": {"from": "text"}}
    assert get(provider).parser_options(r)["structured_output"] == {"from": "text"}
    assert "response_format" not in json.dumps(r.body) or provider not in ("anthropic", "gemini")


def test_openai_form_is_the_sdks() -> None:
    """What openai's own ``parse(response_format=Model)`` sends, from the same (strict) schema."""
    require("openai")
    pytest.importorskip("pydantic")
    from openai.lib._parsing._completions import type_to_response_format_param
    from openai.lib._pydantic import to_strict_json_schema
    from pydantic import BaseModel

    class CityLocation(BaseModel):
        city: str
        country: str

    theirs = type_to_response_format_param(CityLocation)
    ours = formatted(
        "openai", ASK, structured_output=StructuredOutput(to_strict_json_schema(CityLocation), name="CityLocation")
    )
    assert ours.body["response_format"] == theirs
    # a pydantic class is taken as its schema, named after it (strictness is the caller's: the SDK rewrites it)
    from_class = get("openai").format_request(ASK, structured_output=CityLocation)
    assert from_class.body["response_format"]["json_schema"]["name"] == "CityLocation"
    assert from_class.body["response_format"]["json_schema"]["schema"] == CityLocation.model_json_schema()
    assert from_class.body["response_format"]["json_schema"]["strict"] is False  # (an open schema: not strict)

    class Closed(BaseModel, extra="forbid"):
        city: str

    closed = get("openai").format_request(ASK, structured_output=Closed)
    assert closed.body["response_format"]["json_schema"]["strict"] is True


def _anthropic_sent(**kwargs: Any) -> dict[str, Any]:
    """The body anthropic's own client sends for these arguments (a mock transport catches it; the SDK's HTTP
    client package is its own, httpx2 in the pinned version, httpx before)."""
    anthropic = require("anthropic")
    transport_lib: Any = pytest.importorskip("httpx2") if _sdk_uses_httpx2(anthropic) else httpx
    sent: list[dict[str, Any]] = []

    def handler(request: Any) -> Any:
        sent.append(json.loads(request.content))
        message = _anthropic_message([{"type": "text", "text": json.dumps(CITY)}])
        return transport_lib.Response(200, json=message)

    http = transport_lib.Client(transport=transport_lib.MockTransport(handler))
    client = anthropic.Anthropic(api_key="k", http_client=http)
    parse = kwargs.pop("parse")(client)
    with warnings.catch_warnings():  # (the SDK warns of the model's end of life: not this test's business)
        warnings.simplefilter("ignore", DeprecationWarning)
        parse(model="claude-sonnet-4-5", max_tokens=4096, messages=[{"role": "user", "content": "q"}], **kwargs)
    return sent[0]


def _sdk_uses_httpx2(anthropic: Any) -> bool:
    import importlib

    return "httpx2" in vars(importlib.import_module("anthropic._base_client"))


def test_anthropic_form_is_the_sdks() -> None:
    """anthropic's ``messages.parse(output_format=Model)`` sends ``output_config.format`` with its rewritten schema:
    agentmsg sends the same for that schema; ``output_config`` passes the SDK's own request type (the oracle)."""
    pytest.importorskip("pydantic")
    from pydantic import BaseModel

    require("anthropic")
    from anthropic.lib._parse._transform import transform_schema

    class CityLocation(BaseModel):
        city: str
        country: str

    theirs = _anthropic_sent(parse=lambda c: c.messages.parse, output_format=CityLocation)
    schema = transform_schema(CityLocation.model_json_schema())
    ours = formatted("anthropic", [UserMessage("q")], structured_output=schema)
    assert ours.body["output_config"] == theirs["output_config"]
    assert anthropic_output_config_errors(ours.body["output_config"]) == []  # (formatted: the whole body too)
    # an output_config given as a parameter keeps its other keys (effort)
    r = formatted("anthropic", ASK, structured_output=SCHEMA, output_config={"effort": "low"})
    assert r.body["output_config"] == {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}}
    assert anthropic_output_config_errors(r.body["output_config"]) == []


def test_gemini_form_is_the_sdks() -> None:
    """google-genai's own request building writes GenerateContentConfig(response_mime_type, response_json_schema)
    as agentmsg does."""
    if not require("google.genai"):
        return
    from google.genai import models, types

    class _Client:
        vertexai = False

    config = types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=SCHEMA)
    parent: dict[str, Any] = {}
    theirs = models._GenerateContentConfig_to_mldev(_Client(), config, parent)
    ours = formatted("gemini", ASK, structured_output=SCHEMA)
    assert ours.body["generationConfig"] == theirs
    # JSON mode: the MIME type alone
    json_mode = formatted("gemini", ASK, structured_output=StructuredOutput(None))
    assert json_mode.body["generationConfig"] == {"responseMimeType": "application/json"}


def test_deepseek_json_mode_is_an_approximation_and_asks_for_json_in_the_prompt() -> None:
    r = formatted("deepseek", [UserMessage("Where?")], structured_output=SCHEMA)
    assert r.body["response_format"] == {"type": "json_object"}
    assert rules(r) == [
        ("/structured_output", "structured-output-approximated"),
        ("/structured_output", "json-unprompted"),
    ]
    with pytest.raises(ValidationError) as exc:
        get("deepseek").format_request([UserMessage("Where?")], structured_output=SCHEMA, strict=True)
    assert {p.rule for p in exc.value.problems} == {"structured-output-approximated", "json-unprompted"}
    # JSON mode asked of OpenAI without saying JSON: its API refuses that request too
    assert rules(formatted("openai", [UserMessage("Where?")], response_format={"type": "json_object"})) == [
        ("/params/response_format", "json-unprompted")
    ]


def test_a_response_format_parameter_is_sent_where_valid_and_mapped_elsewhere() -> None:
    raw = {"type": "json_schema", "json_schema": {"name": "City", "schema": SCHEMA, "strict": True}}
    for provider in ("openai", "dashscope-compatible", "dashscope"):
        r = formatted(provider, ASK, response_format=raw)
        assert _body_part(provider, r.body) == raw and rules(r) == [], provider
        assert r.parser_options == {"structured_output": {"from": "text"}}
    r = formatted("deepseek", ASK, response_format=raw)
    assert r.body["response_format"] == {"type": "json_object"}
    assert rules(r) == [("/params/response_format", "structured-output-approximated")]
    r = formatted("anthropic", ASK, response_format=raw)
    assert "response_format" not in r.body
    assert r.body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert rules(r) == [("/params/response_format", "response-format-mapped")]
    r = formatted("gemini", ASK, response_format=raw)
    assert "response_format" not in r.body
    assert r.body["generationConfig"] == {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA}
    assert rules(r) == [("/params/response_format", "response-format-mapped")]
    # JSON mode: Gemini's MIME type; Anthropic has none: a forced tool whose input is any object
    r = formatted("gemini", ASK, response_format={"type": "json_object"})
    assert r.body["generationConfig"] == {"responseMimeType": "application/json"}
    r = formatted("anthropic", ASK, response_format={"type": "json_object"})
    assert r.body["tool_choice"] == {"type": "tool", "name": "response"}
    assert r.body["tools"] == [{"name": "response", "input_schema": {"type": "object"}}]
    assert rules(r) == [("/params/response_format", "structured-output-as-tool")]
    assert r.parser_options == {"structured_output": {"from": "tool", "name": "response"}}
    # text: the default, not sent; an unknown type: not sent where it is not the provider's own
    for provider in ("anthropic", "gemini"):
        r = formatted(provider, ASK, response_format={"type": "text"})
        assert rules(r) == [("/params/response_format", "response-format-mapped")] and r.parser_options == {}
        r = formatted(provider, ASK, response_format={"type": "grammar"})
        assert rules(r) == [("/params/response_format", "param-dropped")]
        assert "grammar" not in json.dumps(r.body)
    assert formatted("openai", ASK, response_format={"type": "text"}).body["response_format"] == {"type": "text"}


def test_refused_arguments() -> None:
    cases: list[tuple[dict[str, Any], str, str]] = [
        (
            {"structured_output": SCHEMA, "response_format": {"type": "json_object"}},
            "/params/response_format",
            "conflict",
        ),
        ({"structured_output": {"type": "array"}}, "/structured_output/schema/type", "type"),
        ({"structured_output": 3}, "/structured_output", "type"),
        ({"response_format": "json"}, "/params/response_format", "type"),
        ({"response_format": {"type": "json_schema"}}, "/params/response_format/json_schema", "required"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": SCHEMA}}},
            "/params/response_format/json_schema/name",
            "type",
        ),
    ]
    for kwargs, pointer, rule in cases:
        with pytest.raises(ValidationError) as exc:
            get("anthropic").format_request(ASK, **kwargs)
        assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == (pointer, rule), kwargs
    with pytest.raises(ValidationError):
        StructuredOutput(SCHEMA, name="a name")
    with pytest.raises(ValidationError) as exc:
        get("gemini").format_request(ASK, structured_output=SCHEMA, response_mime_type="application/json")
    assert exc.value.problems[0].rule == "conflict"
    with pytest.raises(ValidationError) as exc:
        get("anthropic").format_request(
            ASK, structured_output=SCHEMA, output_config={"format": {"type": "json_schema"}}
        )
    assert exc.value.problems[0].pointer == "/params/output_config/format"


def test_mode_tool_is_a_forced_call_everywhere() -> None:
    output = StructuredOutput(SCHEMA, name="City", mode="tool")
    for provider in NAMES:
        r = formatted(
            provider,
            ASK,
            structured_output=output,
            tools=[{"name": "lookup", "parameters": {"type": "object"}}],
            tool_choice="auto",
        )
        assert ("/structured_output", "structured-output-as-tool") in rules(r), provider
        assert ("/tool_choice", "tool-choice-changed") in rules(r), provider
        assert r.parser_options == {"structured_output": {"from": "tool", "name": "City"}}
        body = json.dumps(r.body)
        assert '"City"' in body and "lookup" in body
    r = formatted("anthropic", ASK, structured_output=output)
    assert r.body["tool_choice"] == {"type": "tool", "name": "City"}
    assert r.body["tools"] == [{"name": "City", "input_schema": SCHEMA}]
    with pytest.raises(ValidationError) as exc:
        get("anthropic").format_request(ASK, structured_output=output, tools=[{"name": "City"}])
    assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/structured_output/name", "conflict")
    # Anthropic refuses a forced tool with extended thinking: the diagnostic says so
    r = formatted("anthropic", ASK, structured_output=output, thinking_budget=2048)
    assert "extended thinking" in next(d.message for d in r.diagnostics if d.rule == "structured-output-as-tool")


def test_a_provider_that_does_not_map_it_says_so() -> None:
    spec = Spec(
        name="acme", title="Acme", base_url="https://x", env=(), auth="bearer", default_model="m", families=("acme",)
    )

    def build(ctx: Context, msgs: Any, tools: Any, choice: Any) -> Draft:
        return Draft(body={"messages": [m.text_content for m in msgs]}, path="/chat", model="m")

    r = run_format(
        spec,
        ASK,
        build,
        tools=None,
        tool_choice=None,
        stream=False,
        strict=False,
        options=FormatOptions(),
        structured_output=SCHEMA,
    )
    assert rules(r) == [("/structured_output", "param-dropped")] and r.parser_options == {}


# ---- replies ----------------------------------------------------------------------------------------


def _metadata(provider: str, body: bytes | str, options: dict[str, Any], stream: bool) -> dict[str, Any]:
    p = get(provider)
    msg: Msg
    if stream:
        events = list(p.parse_stream(body, **options))
        msg = reduce_events(events)[0]
    else:
        msg = p.parse_response(body, **options)
    metadata: dict[str, Any] = msg.to_dict()["metadata"]
    return metadata


TEXT = {"structured_output": {"from": "text"}}


def _oai_stream(content_pieces: list[str], finish: str = "stop") -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    chunks += [
        {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in content_pieces
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_openai_recorded_reply_whole_and_streamed_as_the_sdk_parses_it() -> None:
    """The recorded json_schema reply (pydantic-ai's cassette) gives the JSON openai's parse() gives; the same reply
    streamed (in pieces that split the JSON anywhere) gives the same metadata, as the SDK's stream state does."""
    require("openai")
    from openai.lib._parsing._completions import parse_chat_completion
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    body = (FIXTURES / "openai" / "chat_completion_json_schema_structured_output.json").read_bytes()
    schema = {
        "type": "json_schema",
        "json_schema": {"name": "CityLocation", "schema": {"type": "object"}, "strict": True},
    }
    parsed = parse_chat_completion(
        response_format=schema,
        input_tools=[],
        chat_completion=ChatCompletion.model_validate_json(body),
    )
    content = parsed.choices[0].message.content
    assert content is not None
    expected = json.loads(content)
    whole = _metadata("openai", body, TEXT, stream=False)
    assert whole["_structured_output"] == expected == {"city": "Mexico City", "country": "Mexico"}
    assert "_structured_output" not in _metadata("openai", body, {}, stream=False)  # not asked for: not read
    for cut in (1, 5, 13):
        pieces = [content[i : i + cut] for i in range(0, len(content), cut)]
        sse = _oai_stream(pieces)
        state = ChatCompletionStreamState(response_format=schema)
        for line in sse.split(b"\n\n"):
            if line.startswith(b"data: {"):
                state.handle_chunk(ChatCompletionChunk.model_validate_json(line[6:]))
        final = state.get_final_completion().choices[0].message
        assert json.loads(final.content or "") == expected
        streamed = _metadata("openai", sse, TEXT, stream=True)
        assert streamed["_structured_output"] == whole["_structured_output"]


def _anthropic_message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _anthropic_stream(message: dict[str, Any], cut: int) -> bytes:
    """The SSE stream of a message, built from the SDK's event types (text in pieces of ``cut`` characters, a
    tool input as input_json_delta pieces)."""
    from anthropic.types import (
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
    )

    events: list[Any] = [
        RawMessageStartEvent.model_validate(
            {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}
        )
    ]
    start: dict[str, Any]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, text, kind, key = {"type": "text", "text": ""}, block["text"], "text_delta", "text"
        else:
            start, text, kind, key = (
                {**block, "input": {}},
                json.dumps(block["input"]),
                "input_json_delta",
                "partial_json",
            )
        events.append(
            RawContentBlockStartEvent.model_validate(
                {"type": "content_block_start", "index": i, "content_block": start}
            )
        )
        for k in range(0, len(text), cut):
            delta = {"type": kind, key: text[k : k + cut]}
            events.append(
                RawContentBlockDeltaEvent.model_validate({"type": "content_block_delta", "index": i, "delta": delta})
            )
        events.append(RawContentBlockStopEvent.model_validate({"type": "content_block_stop", "index": i}))
    events.append(
        RawMessageDeltaEvent.model_validate(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            }
        )
    )
    events.append(RawMessageStopEvent.model_validate({"type": "message_stop"}))
    return b"".join(f"event: {e.type}\ndata: {e.model_dump_json()}\n\n".encode() for e in events)


def test_anthropic_reply_whole_and_streamed_as_the_sdk_parses_it() -> None:
    require("anthropic")
    from anthropic.lib._parse._response import parse_response
    from anthropic.types import Message

    message = _anthropic_message([{"type": "text", "text": json.dumps(CITY, indent=1)}])
    parsed = parse_response(output_format=dict, response=Message.model_validate(message))
    expected = parsed.content[0].parsed_output
    assert expected == CITY
    whole = _metadata("anthropic", json.dumps(message), TEXT, stream=False)
    assert whole["_structured_output"] == expected
    for cut in (1, 7):
        assert (
            _metadata("anthropic", _anthropic_stream(message, cut), TEXT, stream=True)["_structured_output"] == expected
        )


def test_anthropic_forced_tool_reply_whole_and_streamed() -> None:
    """The forced tool's call (mode='tool', JSON mode): its input is the structured output; the call stays a call
    of the message (the agent loop answers it or not: its generate reason is TOOL_CALLS, as the reply says)."""
    require("anthropic")
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent

    request = get("anthropic").format_request(ASK, structured_output=StructuredOutput(SCHEMA, name="City", mode="tool"))
    options = get("anthropic").parser_options(request)
    call = {"type": "tool_use", "id": "toolu_1", "name": "City", "input": CITY}
    message = _anthropic_message([call], stop="tool_use")
    whole = _metadata("anthropic", json.dumps(message), options, stream=False)
    assert whole["_structured_output"] == CITY
    sse = _anthropic_stream(message, 4)
    snapshot = None
    bufs: dict[int, bytes] = {}
    for chunk in sse.split(b"\n\n"):
        if b"data: " in chunk:
            data = chunk.split(b"data: ", 1)[1]
            event = pydantic_adapter(RawMessageStreamEvent).validate_json(data)
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None and snapshot.content[0].input == CITY
    assert _metadata("anthropic", sse, options, stream=True)["_structured_output"] == CITY
    # no call of that tool: said, and no structured output
    events = get("anthropic").response_events(
        json.dumps(_anthropic_message([{"type": "text", "text": "no"}])), **options
    )
    said = [
        e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["value"].get("rule") == "structured-output"
    ]
    assert said and "made no call of tool 'City'" in said[0]


def pydantic_adapter(tp: Any) -> Any:
    pytest.importorskip("pydantic")
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


def _gemini_response(parts: list[dict[str, Any]], finish: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
    }


def test_gemini_reply_whole_and_streamed_as_the_sdk_parses_it() -> None:
    """A thought part first (not the answer), the JSON in two text parts: google-genai's ``parsed`` (with a
    response_json_schema) is the JSON of the answer's text, and so is ``_structured_output``, whole and streamed."""
    if not require("google.genai"):
        return
    from google.genai import types

    text = json.dumps(CITY)
    parts: list[dict[str, Any]] = [
        {"text": "Thinking about it.", "thought": True},
        {"text": text[:9]},
        {"text": text[9:]},
    ]
    response = _gemini_response(parts)
    sdk = types.GenerateContentResponse._from_response(
        response=response, kwargs={"config": {"response_json_schema": SCHEMA}}
    )
    assert sdk.parsed == CITY
    whole = _metadata("gemini", json.dumps(response), TEXT, stream=False)
    assert whole["_structured_output"] == sdk.parsed
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "responseId": "r1"} for p in parts
    ]
    chunks[-1] = _gemini_response([parts[-1]])
    sse = b"".join(b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks)
    assert _metadata("gemini", sse, TEXT, stream=True)["_structured_output"] == sdk.parsed
    # what the request asks for is what the reader gets: google-genai's own parameters too
    r = get("gemini").format_request(ASK, response_mime_type="application/json")
    assert get("gemini").parser_options(r) == TEXT


def test_dashscope_reply_whole_and_streamed() -> None:
    """DashScope native (its docs' shape): the same JSON whole, streamed incrementally and cumulatively."""
    text = json.dumps(CITY)
    whole = {
        "output": {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": text}}]},
        "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
        "request_id": "r1",
    }
    assert _metadata("dashscope", json.dumps(whole), TEXT, stream=False)["_structured_output"] == CITY
    for incremental in (True, False):
        pieces = [text[:10], text[10:]] if incremental else [text[:10], text]
        sse = b""
        for k, piece in enumerate(pieces):
            finish = "stop" if k == len(pieces) - 1 else "null"
            payload = {
                "output": {"choices": [{"finish_reason": finish, "message": {"role": "assistant", "content": piece}}]},
                "request_id": "r1",
            }
            sse += (
                b"id:" + str(k).encode() + b"\nevent:result\n:HTTP_STATUS/200\ndata:" + orjson.dumps(payload) + b"\n\n"
            )
        meta = _metadata("dashscope", sse, {**TEXT, "incremental": incremental}, stream=True)
        assert meta["_structured_output"] == CITY, incremental


def test_a_reply_that_is_not_json_is_said_never_raised() -> None:
    """Text that is no JSON object (cut at the token limit, an array, prose) is said (problem structured-output),
    the text kept, no _structured_output; a stream never raises for it, and a cut stream says only its cut."""
    cases = [
        (_oai_stream(['{"city": "Lon'], finish="length"), "is not JSON"),
        (_oai_stream(['["London"]']), "not an object (array)"),
        (_oai_stream(["London, UK"]), "is not JSON"),
        (_oai_stream([]), "has no text"),
    ]
    for sse, why in cases:
        events = list(get("openai").parse_stream(sse, **TEXT))
        msg = reduce_events(events)[0]
        said = [
            e["value"]["message"]
            for e in events
            if e["type"] == "CUSTOM" and e["value"].get("rule") == "structured-output"
        ]
        assert len(said) == 1 and why in said[0], (sse, said)
        assert "_structured_output" not in msg.metadata
    assert "(the reply ended: length)" in next(
        e["value"]["message"] for e in get("openai").parse_stream(cases[0][0], **TEXT) if e["type"] == "CUSTOM"
    )
    cut = _oai_stream(['{"city": "Lon'])[: -len(b"data: [DONE]\n\n") - 60]
    events = list(get("openai").parse_stream(cut, **TEXT))
    assert not [e for e in events if e["type"] == "CUSTOM" and e["value"].get("rule") == "structured-output"]
    # a refusal is no structured output, and says so itself (agentmsg_refusal)
    refusal = (FIXTURES / "openai" / "stream_refusal.sse").read_bytes()
    events = list(get("openai").parse_stream(refusal, **TEXT))
    assert reduce_events(events)[0].metadata.get("agentmsg_refusal") is True
    assert not [e for e in events if e["type"] == "CUSTOM" and e["value"].get("rule") == "structured-output"]


def test_the_clients_read_it_whole_and_streamed() -> None:
    """The clients give the reader the options the request asks for (Provider.parser_options), for a whole reply
    and a stream: ``client.call(messages, structured_output=...)`` holds the JSON."""
    from agentmsg.clients import Client

    body = (FIXTURES / "openai" / "chat_completion_json_schema_structured_output.json").read_bytes()
    content = json.loads(body)["choices"][0]["message"]["content"]

    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("stream"):
            return httpx.Response(
                200, content=_oai_stream([content[:7], content[7:]]), headers={"content-type": "text/event-stream"}
            )
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    client = Client("openai", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    msg = client.call(ASK, structured_output=SCHEMA)
    assert msg.structured_output() == {"city": "Mexico City", "country": "Mexico"}
    with client.stream(ASK, structured_output=SCHEMA) as stream:
        list(stream)
    assert stream.message is not None and stream.message.structured_output() == msg.structured_output()


def test_a_forced_tool_message_replays() -> None:
    """The forced tool's call is a tool call of the message: replayed like any other (the caller answers it, or
    the repair option does)."""
    msg = AssistantMessage([ToolUseBlock(id="toolu_1", name="City", input=CITY)], metadata={"_structured_output": CITY})
    r = formatted("anthropic", [*ASK, msg], options={"repair": True})
    assert r.body["messages"][1]["content"][0]["input"] == CITY
    assert "_structured_output" not in json.dumps(r.body)


@pytest.mark.parametrize("provider", sorted(NAMES))
@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (float("nan"), "NaN or an infinity is not a JSON number"),
        (float("-inf"), "NaN or an infinity is not a JSON number"),
        ((1, float("inf")), "NaN or an infinity is not a JSON number"),
        (b"x", "bytes is no JSON value"),
        ({1, 2}, "a set is no JSON value"),
    ],
    ids=["nan", "-inf", "inf-in-tuple", "bytes", "set"],
)
def test_a_schema_value_no_json_carries_is_refused_at_its_pointer(provider: str, bad: Any, said: str) -> None:
    """A NaN or an infinity in a structured output's schema went out as null (orjson writes it so) on every provider
    that sends the schema, without a word; a set or bytes failed later, in body_bytes. Refused now when the
    StructuredOutput is made, rule json-value at its pointer under /structured_output/schema, as a tool
    definition's is."""
    schema = {"type": "object", "properties": {"x": {"type": "number", "maximum": bad}}}
    where = "/structured_output/schema/properties/x/maximum" + ("/1" if isinstance(bad, tuple) else "")
    with pytest.raises(ValidationError) as info:
        get(provider).format_request([UserMessage("hi")], structured_output=schema)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(where, "json-value")]
    assert said in info.value.problems[0].message, info.value.problems
    with pytest.raises(ValidationError) as direct:
        StructuredOutput(schema)
    assert direct.value.problems == info.value.problems


@pytest.mark.parametrize("provider", sorted(NAMES))
@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "description": "a\ud800"}, "/description"),
        ({"type": "object", "properties": {"\udc00": {"type": "string"}}}, "/properties"),
        ({"type": "object", "properties": {"u": {"enum": ["c", "\udfff"]}}}, "/properties/u/enum/1"),
    ],
    ids=["value", "key", "enum"],
)
def test_a_lone_surrogate_in_a_schema_is_refused_at_its_pointer(provider: str, schema: Any, where: str) -> None:
    """A lone UTF-16 surrogate in a structured output's schema passed format_request, and only body_bytes refused it,
    at its pointer in the body (DeepSeek, which sends no schema, sent the request). Refused now when the
    StructuredOutput is made, rule lone-surrogate at its pointer under /structured_output/schema (a key at its
    object's), as a tool definition's is; given as a response_format, at its pointer under /params/response_format."""
    with pytest.raises(ValidationError) as info:
        get(provider).format_request([UserMessage("hi")], structured_output=schema)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [
        ("/structured_output/schema" + where, "lone-surrogate")
    ]
    assert "holds a lone UTF-16 surrogate (not encodable as UTF-8)" in info.value.problems[0].message
    raw = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    with pytest.raises(ValidationError) as given:
        get(provider).format_request([UserMessage("hi")], response_format=raw)
    pointer = "/params/response_format/json_schema/schema" + where
    # (a key there is refused first by the parameters' check, check_call: it said json-value, now lone-surrogate in
    # the same words)
    assert [(p.pointer, p.rule) for p in given.value.problems] == [(pointer, "lone-surrogate")]
    assert "holds a lone UTF-16 surrogate (not encodable as UTF-8)" in given.value.problems[0].message


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_a_lone_surrogate_in_the_description_is_refused_at_its_pointer(provider: str) -> None:
    """A structured output's description holding a lone UTF-16 surrogate passed format_request: only body_bytes
    refused it (at /response_format/json_schema/description on OpenAI), and providers that send no description
    sent the request. Refused now when the StructuredOutput is made, rule lone-surrogate at
    /structured_output/description; given as a response_format, at its pointer there."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(ValidationError) as info:
        get(provider).format_request(
            [UserMessage("hi")], structured_output=StructuredOutput(schema, description="x\ud800")
        )
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/structured_output/description", "lone-surrogate")]
    raw = {"type": "json_schema", "json_schema": {"name": "r", "description": "\udfff", "schema": schema}}
    with pytest.raises(ValidationError) as given:
        get(provider).format_request([UserMessage("hi")], response_format=raw)
    assert [p.pointer for p in given.value.problems] == ["/params/response_format/json_schema/description"]
