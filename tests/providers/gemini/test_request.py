"""The gemini formatter (``agentmsg.providers.gemini.format_request``): Gemini (generateContent, the Gemini API and
Vertex AI). The body's layout, the provider's rules and the diagnostics; every body goes through its oracle
(``tests.oracles``)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    VideoBlock,
    encode_messages,
)
from agentmsg.context import count_tokens
from agentmsg.providers import gemini
from tests._support.budget import examples
from tests._support.cli import run
from tests._support.providers import (
    PNG,
    TOOLS,
    _answered,
    _gemini_replies,
    _merged,
    places,
    reduce_ok,
    rules,
    sse,
    tool_loop,
)
from tests.oracles import formatted


def test_gemini_parts_keep_their_order_and_their_signatures() -> None:
    """Text after a call, a thought or a signed part is a block of its own, each signed thought is a thinking
    block of its own (two whole signatures are never joined), and the formatter sends each signature back
    on its part."""

    def gem(*parts: dict[str, Any], finish: bool = False) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
        return {"candidates": [{**cand, **({"finishReason": "STOP"} if finish else {})}], "responseId": "r1"}

    def shape(body: bytes) -> list[tuple[str, Any, Any]]:
        msg = reduce_ok(list(gemini.parse_stream(body)))
        whole = gemini.parse_response(orjson.dumps(gem(*(p for c in chunks for p in c), finish=True)))
        assert whole.to_dict()["content"] == msg.to_dict()["content"]  # whole and streamed alike
        return [
            (b["type"], b.get("text") or b.get("thinking") or b.get("name"), (b.get("metadata") or {}).get("signature"))
            for b in msg.to_dict()["content"]
        ]

    call = {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "S1"}
    chunks: list[list[dict[str, Any]]] = [[{"text": "Before "}], [call], [{"text": "after"}]]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert shape(body) == [("text", "Before ", None), ("tool_use", "f", None), ("text", "after", None)]

    chunks = [
        [{"text": "t1", "thought": True}],
        [{"text": "a1"}],
        [{"text": "t2", "thought": True}],
        [{"text": "a2"}],
    ]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert [s[:2] for s in shape(body)] == [("thinking", "t1"), ("text", "a1"), ("thinking", "t2"), ("text", "a2")]

    chunks = [
        [{"text": "think A", "thought": True, "thoughtSignature": "SIGA"}],
        [{"text": " think B", "thought": True, "thoughtSignature": "SIGB"}],
        [{"text": "first", "thoughtSignature": "VFM="}],
        [{"text": " second"}],
    ]
    body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
    assert shape(body) == [
        ("thinking", "think A", "SIGA"),
        ("thinking", " think B", "SIGB"),
        ("text", "first", None),
        ("thinking", None, "VFM="),
        ("text", " second", None),
    ]
    msg = reduce_ok(list(gemini.parse_stream(body)))
    sent = gemini.format_request([msg], model="m").body["contents"][0]["parts"]
    assert sent == [*chunks[0], *chunks[1], *chunks[2], *chunks[3]]  # each signature back on its part


def test_gemini_a_thought_after_a_server_part_or_a_signature_part_is_a_block_of_its_own() -> None:
    """A thought after a part the provider ran itself (executableCode, toolCall, toolResponse: kept whole, its
    signature with it) or after a signed empty part is a block of its own, after that part: it was merged with the
    thought before, across the part, and the part's signature put after both, so the formatter sent the later
    thought's signature on the earlier thought's text and the part's own after it."""
    for between in (
        {"executableCode": {"code": "1", "language": "PYTHON"}, "thoughtSignature": "U0lHMQ=="},
        {"toolResponse": {"response": {"r": 1}}, "thoughtSignature": "U0lHMQ=="},
        {"text": "", "thoughtSignature": "U0lHMQ=="},
    ):
        parts = [
            {"text": "t1", "thought": True},
            between,
            {"text": "t2", "thought": True, "thoughtSignature": "U0lHMg=="},
        ]
        chunks: list[dict[str, Any]] = [
            {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "responseId": "r"} for p in parts
        ]
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        whole = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "responseId": "r",
        }
        server = "text" not in between  # a part Gemini ran itself: kept whole (a carrier), its signature in it
        for msg in (reduce_ok(list(gemini.parse_stream(sse(*chunks, done=False)))), gemini.parse_response(whole)):
            middle = msg.blocks("thinking")[1]
            assert [b.thinking for b in msg.blocks("thinking")] == ["t1", "", "t2"]
            assert middle.metadata is not None
            if server:
                assert middle.metadata["providerBlock"] == between and "signature" not in middle.metadata
            else:
                assert middle.metadata["signature"] == "U0lHMQ=="
            sent = gemini.format_request([msg], model="m").body["contents"][0]["parts"]
            assert sent == parts  # each part back as it came, in its place


def test_gemini_empty_text_part_with_a_signature_goes_back_as_it_came() -> None:
    """Gemini 3 streams the answer's signature on a last, empty text part of its own ({"text": "",
    "thoughtSignature": ...}, no thought). It went back with thought: true when no answer part came before it
    (after a call or a thought, or alone), and merged onto the text part before it otherwise: a part of another
    kind, signed parts merged. It goes back as it came, a part of its own, as google-genai's chat history
    replays it; an empty *thought* part with a signature still goes back as a thought."""
    from tests import oracles

    def gem(*parts: dict[str, Any], finish: bool = False) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
        return {"candidates": [{**cand, **({"finishReason": "STOP"} if finish else {})}], "responseId": "r1"}

    signed = {"text": "", "thoughtSignature": "c2ln"}
    call = {"functionCall": {"id": "c1", "name": "f", "args": {"a": 1}}, "thoughtSignature": "QUJD"}
    cases: list[list[list[dict[str, Any]]]] = [
        [[{"text": "Hello"}], [signed]],
        [[call], [signed]],
        [[{"text": "hm", "thought": True}], [signed]],
        [[signed]],
        [[{"text": "", "thought": True, "thoughtSignature": "c2ln"}]],  # a thought: stays one
    ]
    for chunks in cases:
        body = sse(*(gem(*c, finish=k == len(chunks) - 1) for k, c in enumerate(chunks)), done=False)
        whole = gem(*(p for c in chunks for p in c), finish=True)
        for msg in (reduce_ok(list(gemini.parse_stream(body))), gemini.parse_response(whole)):
            request = gemini.format_request([agentmsg.UserMessage("q"), msg], model="gemini-3-pro-preview")
            assert request.body["contents"][1]["parts"] == [p for c in chunks for p in c]
            assert {d.rule for d in request.diagnostics} <= {"tool-use-orphan"}  # (the call: no result follows)
            assert oracles.check("gemini", request) == []


def test_gemini_layout() -> None:
    msgs = tool_loop(signature="c2ln", provider="gemini")
    msgs[2].content[1].metadata["thoughtSignature"] = "Q2lR"
    r = formatted("gemini", msgs, tools=TOOLS, tool_choice={"name": "get_weather"}, model="gemini-3-pro", max_tokens=64)
    b = r.body
    assert "model" not in b and r.model == "gemini-3-pro"
    assert r.path == "/v1beta/models/gemini-3-pro:generateContent"
    assert b["systemInstruction"] == {"parts": [{"text": "You are helpful."}]}
    assert [c["role"] for c in b["contents"]] == ["user", "model", "user", "model"]
    model = b["contents"][1]["parts"]
    assert model[0] == {"text": "Two cities.", "thought": True, "thoughtSignature": "c2ln"}
    assert model[1] == {
        "functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": "Q2lR",
    }
    responses = b["contents"][2]["parts"]
    assert [p["functionResponse"]["response"] for p in responses] == [{"output": "Sunny"}, {"output": "Rain"}]
    assert b["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}
    assert b["generationConfig"] == {"maxOutputTokens": 64}
    assert rules(r) == [("/4", "turns-merged")]
    assert formatted("gemini", msgs, stream=True).path.endswith(":streamGenerateContent?alt=sse")


def test_gemini_signatures_policy() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                ToolUseBlock(
                    id="a", name="f", input={}, metadata={"thoughtSignature": "T1BFTkFJ", "provider": "openai"}
                ),
                ToolUseBlock(id="b", name="f", input={}),
            ]
        ),
        ToolResultMessage(
            [
                ToolResultBlock(id="a", name="f", output=[], state="success"),
                ToolResultBlock(id="b", name="f", output="x", state="denied"),
            ]
        ),
    ]
    r = formatted("gemini", msgs)
    parts = r.body["contents"][1]["parts"]
    assert all("thoughtSignature" not in p for p in parts)
    assert rules(r) == [("/1/content/0", "signature-dropped"), ("/2", "turns-merged")] or (
        "/1/content/0",
        "signature-dropped",
    ) in rules(r)
    assert r.body["contents"][2]["parts"][1]["functionResponse"]["response"] == {"error": "x"}
    r = formatted("gemini", msgs, options={"missing_thought_signature": "skip"})
    assert [p["thoughtSignature"] for p in r.body["contents"][1]["parts"]] == ["skip_thought_signature_validator"] * 2
    assert ("/1/content/1", "signature-added") in places(r)
    # "auto" (the default): the placeholder for Gemini 3, which refuses a current call without a signature
    r = formatted("gemini", msgs, model="gemini-3-pro-preview")
    assert [p["thoughtSignature"] for p in r.body["contents"][1]["parts"]] == ["skip_thought_signature_validator"] * 2
    assert ("/1/content/1", "signature-added") in places(r)


def test_gemini_no_empty_parts_and_media() -> None:
    msgs = [
        UserMessage([TextBlock(text=""), ImageBlock(source=URLSource(url="https://e.com/x.jpg"))]),
        AssistantMessage([TextBlock(text="")]),
        UserMessage([VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA"), fps=1.5)]),
        AssistantMessage([ToolUseBlock(id="t", name="shot", input={})]),
        ToolResultMessage(
            ToolResultBlock(
                id="t",
                name="shot",
                output=[ImageBlock(source=Base64Source(media_type="image/png", data=PNG))],
                state="success",
            )
        ),
    ]
    r = formatted("gemini", msgs)
    contents = r.body["contents"]
    # the empty assistant turn is left out, so the two user turns are one
    assert contents[0]["parts"] == [
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://e.com/x.jpg"}},
        {"inlineData": {"mimeType": "video/mp4", "data": "AAAA"}, "videoMetadata": {"fps": 1.5}},
    ]
    assert ("/2", "turns-merged") in rules(r)
    fr = contents[-1]["parts"][0]["functionResponse"]
    assert fr["parts"] == [{"inlineData": {"mimeType": "image/png", "data": PNG}}]
    assert ("/1", "empty-message-dropped") in rules(r)
    for content in contents:
        assert content["parts"]


def test_gemini_schema_subset() -> None:
    tools = [
        {
            "name": "search",
            "parameters": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "q": {"type": "string", "minLength": 1},
                    "mode": {"const": "fast"},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                    "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                    "choice": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                },
                "required": ["q"],
                "additionalProperties": False,
                "$defs": {"tag": {"type": "string", "enum": ["a", "b"]}},
            },
        }
    ]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    params = r.body["tools"][0]["functionDeclarations"][0]["parameters"]
    assert params["properties"]["tags"]["items"] == {"type": "STRING", "enum": ["a", "b"]}
    assert params["properties"]["mode"] == {"enum": ["fast"]}
    assert params["properties"]["limit"] == {"type": "INTEGER", "nullable": True}
    assert "additionalProperties" not in params and "$defs" not in params
    got = rules(r)
    for pointer, rule in [
        ("/tools/0/parameters/$schema", "schema-keyword-dropped"),
        ("/tools/0/parameters/additionalProperties", "schema-keyword-dropped"),
        ("/tools/0/parameters/properties/limit/exclusiveMinimum", "schema-keyword-dropped"),
        ("/tools/0/parameters/properties/mode/const", "schema-keyword-converted"),
        ("/tools/0/parameters/properties/choice/oneOf", "schema-keyword-converted"),
        ("/tools/0/parameters/properties/tags/items/$ref", "schema-keyword-converted"),
    ]:
        assert (pointer, rule) in got


def test_gemini_plain_schema_keeps_its_order_and_each_said_step() -> None:
    """A parameter schema of plain keywords is sent as every other is: its type (mapped) first, the rest in the given
    order; a type that is None, unknown or a list, and a property name to escape, are said as ever; the body's schema
    is the request's own (changing it changes no tool, and a tool changed is sent changed)."""
    props: dict[str, Any] = {
        "when": {"description": "d", "format": "date", "type": "string"},
        "free": {"description": "anything"},
        "none": {"type": None, "title": "t"},
        "odd": {"title": "t", "type": "weird"},
        "opt": {"type": ["string", "null"], "description": "o"},
        "a/b~c": {"type": "integer", "exclusiveMaximum": 3},
    }
    tools = [{"name": "f", "parameters": {"type": "object", "properties": props}}]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    got = r.body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]
    assert orjson.dumps(got) == orjson.dumps(
        {
            "when": {"type": "STRING", "description": "d", "format": "date"},
            "free": {"description": "anything"},
            "none": {"title": "t"},
            "odd": {"title": "t"},
            "opt": {"type": "STRING", "description": "o", "nullable": True},
            "a/b~c": {"type": "INTEGER"},
        }
    )
    at = "/tools/0/parameters/properties"
    assert sorted(p for p in rules(r) if p[0].startswith(at)) == [
        (f"{at}/a~1b~0c/exclusiveMaximum", "schema-keyword-dropped"),
        (f"{at}/odd/type", "schema-keyword-dropped"),
        (f"{at}/opt/type", "schema-keyword-converted"),
    ]
    got["when"]["format"] = "changed"
    assert props["when"] == {"description": "d", "format": "date", "type": "string"}
    props["when"]["type"] = "number"
    again = formatted("gemini", [UserMessage("hi")], tools=tools)
    assert again.body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["when"]["type"] == "NUMBER"


def test_gemini_recursive_ref_is_reported_not_looped() -> None:
    tools = [
        {
            "name": "tree",
            "parameters": {
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/node"}},
                "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
            },
        }
    ]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    assert ("/tools/0/parameters/properties/node/properties/child/$ref", "schema-keyword-dropped") in rules(r)


@pytest.mark.parametrize("target", ["x", True, False, 3, ["a"]])
def test_gemini_ref_to_a_non_object_schema_is_reported_not_a_type_error(target: Any) -> None:
    """A ``$ref`` to a ``$defs`` entry that is no object (a boolean schema, or no schema at all) raised a bare
    TypeError ('str' object is not a mapping) from inlining it: it is dropped and said, as an unresolvable one is,
    and the rest of the property goes."""
    tools = [
        {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}},
                "$defs": {"A": target},
            },
        }
    ]
    r = formatted("gemini", [UserMessage("hi")], tools=tools)
    assert r.body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["a"] == {"description": "d"}
    assert ("/tools/0/parameters/properties/a/$ref", "schema-keyword-dropped") in rules(r)


def test_gemini_nested_snake_case_args_go_as_they_came() -> None:
    """A call's arguments are the caller's own JSON: snake_case keys at any depth (in an object inside a
    list, say, as Gemini itself returned them in recorded replies) go back as they came, and the oracle
    takes them (it took them only at the top level of args and rejected those replies' bodies)."""
    args = {"steps": [{"step_number": 1, "depends_on": []}], "level": {"level_type": "ground"}}
    msgs = [
        UserMessage("plan"),
        AssistantMessage([ToolUseBlock(id="call_1", name="plan", input=args)]),
        ToolResultMessage(ToolResultBlock(id="call_1", name="plan", output="done", state="success")),
    ]
    r = formatted("gemini", msgs)
    assert r.body["contents"][1]["parts"][0]["functionCall"]["args"] == args


def test_gemini_model_path_tuned_models_and_quoting() -> None:
    """A tuned model is its own resource (tunedModels/..., as google-genai names it; it became
    models/tunedModels/...), and a name's URL characters are quoted (a ? or # cut the path there)."""
    msgs = [UserMessage("hi")]
    tuned = formatted("gemini", msgs, model="tunedModels/my-model-7")
    assert tuned.path == "/v1beta/tunedModels/my-model-7:generateContent"
    assert formatted("gemini", msgs, model="models/gemini-2.5-flash").path == (
        "/v1beta/models/gemini-2.5-flash:generateContent"
    )
    odd = formatted("gemini", msgs, model="a?b#c d", stream=True)
    assert odd.path == "/v1beta/models/a%3Fb%23c%20d:streamGenerateContent?alt=sse"


def test_gemini_a_model_name_never_leaves_the_models_path() -> None:
    """A model named '../../../admin/x' made the path /v1beta/models/../../../admin/x:..., which a URL resolves to
    /admin/x (the API key sent along). The name is quoted as one path segment now, a tuned model's after its
    tunedModels/; no other provider puts its model in a path. Through `agentmsg format --envelope` too."""
    msgs = [UserMessage("hi")]
    for model, segment in [("../../../admin/x", "..%2F..%2F..%2Fadmin%2Fx"), ("..", ".."), ("a/b", "a%2Fb")]:
        path = formatted("gemini", msgs, model=model).path
        assert path == f"/v1beta/models/{segment}:generateContent", model
        assert httpx.URL("https://h/api" + path).path.startswith("/api/v1beta/models/"), model
    tuned = formatted("gemini", msgs, model="tunedModels/../../admin", stream=True).path
    assert tuned == "/v1beta/tunedModels/..%2F..%2Fadmin:streamGenerateContent?alt=sse"
    r = run(
        "format", "--provider", "gemini", "--model", "../x", "--envelope", "-", stdin=encode_messages(msgs).decode()
    )
    assert r.returncode == 0 and json.loads(r.stdout)["path"] == "/v1beta/models/..%2Fx:generateContent", r.stderr


def _thought(n: str) -> ThinkingBlock:
    return ThinkingBlock(thinking=f"step {n}", metadata={"signature": "c2lnbmF0dXJl", "provider": "gemini"})


def test_gemini_thought_parts_keep_their_order() -> None:
    """Gemini asks for a response's parts back as they came, in their order (thought signatures docs): a thought
    part stays where it was, in a message and in a merged turn; nothing is moved, so nothing is said but the merge.
    (Every thought part was moved to the start of its turn.)"""
    turn, said = _merged("gemini", [TextBlock(text="a"), _thought("1"), TextBlock(text="b")])
    assert turn == [("text", "a"), ("thought", "step 1"), ("text", "b")] and said == []
    turn, said = _merged("gemini", [_thought("1"), TextBlock(text="a")], [_thought("2"), TextBlock(text="b")])
    assert turn == [("thought", "step 1"), ("text", "a"), ("thought", "step 2"), ("text", "b")]
    assert said == [("/2", "turns-merged")]
    r = gemini.format_request([UserMessage("q"), AssistantMessage([TextBlock(text="a"), _thought("1")])])
    assert r.body["contents"][1]["parts"] == [
        {"text": "a"},
        {"text": "step 1", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"},
    ]


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


@pytest.mark.parametrize(("state", "key"), [("error", "error"), ("denied", "error"), ("success", "output")])
def test_gemini_a_multi_part_error_result_is_an_error_response(state: str, key: str) -> None:
    """A failed result of several blocks (text and an image: not the one-text fast path) is Gemini's error response,
    its media in functionResponse.parts; a successful one is an output response."""
    output: list[agentmsg.ContentBlock] = [
        TextBlock(text="boom"),
        ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
    ]
    msgs = [
        UserMessage("x"),
        AssistantMessage([ToolUseBlock(id="c1", name="get_weather", input={"city": "Oslo"})]),
        ToolResultMessage(ToolResultBlock(id="c1", name="get_weather", output=output, state=state)),
    ]
    r = formatted("gemini", msgs, tools=TOOLS)
    assert r.body["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "c1",
                    "name": "get_weather",
                    "response": {key: "boom"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
                }
            }
        ],
    }
    assert rules(r) == []


def test_a_function_responses_text_names_media_that_came_before_a_text() -> None:
    """A function response holds its text in ``response`` and its media in ``parts``, after it: ``[audio, text]`` and
    ``[text, image, text]`` went as the text alone then the media, the order lost, unsaid. Now the text names every
    part in its place (as a chat provider's tool message names its media), and each medium a text followed is said,
    tool-result-media-reordered, at its place in the output. Media after all the text keep their order: as before,
    nothing said. The count is the request's: the one of the text holding the names, then the media."""
    image = ImageBlock(source=Base64Source(media_type="image/png", data=PNG))
    audio = AudioBlock(source=Base64Source(media_type="audio/wav", data="AAAA"))
    outputs: list[list[Any]] = [
        [audio, TextBlock(text="caption")],
        [TextBlock(text="A"), image, TextBlock(text="B"), image],
        [TextBlock(text="last"), image],
    ]

    def conversation(outputs: list[list[Any]]) -> list[Any]:
        return [
            UserMessage("q"),
            AssistantMessage([ToolUseBlock(id=f"c{k}", name="f", input={}) for k in range(len(outputs))]),
            ToolResultMessage([ToolResultBlock(id=f"c{k}", name="f", output=o) for k, o in enumerate(outputs)]),
        ]

    msgs = conversation(outputs)
    r = formatted("gemini", msgs)
    responses = [p["functionResponse"] for p in r.body["contents"][2]["parts"]]
    wav = {"inlineData": {"mimeType": "audio/wav", "data": "AAAA"}}
    png = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    assert [(f["response"]["output"], f["parts"]) for f in responses] == [
        ("[audio: audio/wav]\ncaption", [wav]),
        ("A\n[image: image/png]\nB\n[image: image/png]", [png, png]),
        ("last", [png]),
    ]
    assert places(r) == [
        ("/2/content/0/output/0", "tool-result-media-reordered"),
        ("/2/content/1/output/1", "tool-result-media-reordered"),
    ]
    named = conversation(
        [
            [TextBlock(text="[audio: audio/wav]"), TextBlock(text="caption"), audio],
            [*(TextBlock(text=t) for t in ("A", "[image: image/png]", "B", "[image: image/png]")), image, image],
            outputs[2],
        ]
    )
    assert formatted("gemini", named).body == r.body
    assert count_tokens(msgs, provider="gemini") == count_tokens(named, provider="gemini")


def _round_trips(value: str) -> bool:
    """Base64 as google-genai reads it, told the long way: one alphabet or the other (not mixed), padding optional
    (but never more than the last group lacks), and decoding then encoding again gives the same text (the
    trailing bits are canonical)."""
    if not re.fullmatch(r"[A-Za-z0-9+/]*|[A-Za-z0-9_-]*", value.rstrip("=")):
        return False
    text = value.rstrip("=").replace("-", "+").replace("_", "/")
    if len(text) % 4 == 1:
        return False
    if len(value) - len(text) > -len(text) % 4:  # padding beyond the last group's ("=", "QUJD=", "QUI==")
        return False
    raw = base64.b64decode(text + "=" * (-len(text) % 4))
    return base64.b64encode(raw).decode("ascii").rstrip("=") == text


@settings(max_examples=examples(300), deadline=None)
@given(
    value=st.text(alphabet="AQgwBCDRSh0+/-_=!é", max_size=9)
    | st.binary(max_size=7)
    .map(lambda b: base64.b64encode(b).decode())
    .flatmap(
        lambda s: st.integers(0, len(s)).map(lambda k: s[:k])  # cut anywhere: every trailing-bits case
    )
)
def test_a_signature_is_base64_exactly_when_it_round_trips(value: str) -> None:
    """signature_ok tells the trailing bits from the last character (no decoding): the same answer as a round trip, and
    as google-genai's own reading of a part's thoughtSignature (the independent oracle) where it is installed."""
    assert gemini.signature_ok(value) is _round_trips(value)
    try:
        from google.genai import types
    except ImportError:
        return
    try:
        types.Part(thought_signature=value)
        genai_ok = True
    except ValueError:  # (pydantic's ValidationError)
        genai_ok = False
    assert gemini.signature_ok(value) is genai_ok, value


@pytest.mark.parametrize(
    ("value", "ok"), [("=", False), ("QUJD=", False), ("QUI==", False), ("QQ=", True), ("QUI=", True)]
)
def test_a_signature_padded_beyond_its_last_group_is_not_sent(value: str, ok: bool) -> None:
    """A thinking signature with more padding than its last group lacks is no base64 google-genai reads: dropped
    and said, not sent (a signature "=" was sent, and google-genai refused the request's contents)."""
    msgs = [AssistantMessage([ThinkingBlock(thinking="hm", metadata={"signature": value})])]
    r = gemini.format_request([UserMessage("q"), *msgs], model="gemini-2.5-pro")
    sent = [p.get("thoughtSignature") for c in r.body["contents"] for p in c["parts"]]
    assert (value in sent) is ok
    assert (("/1/content/0", "signature-dropped") in rules(r)) is not ok


def test_a_placeholder_in_a_tool_result_keeps_the_results_text_as_it_is() -> None:
    """Media a function response cannot carry (an image by URL of no known MIME type, downloads off) goes as a
    placeholder after the result's text, and the text stays as the tool gave it: the placeholder was appended, then
    the whole stripped of leading line breaks, the text's own too. With no text, the placeholder alone."""
    image = ImageBlock(source=URLSource(url="https://e.com/chart"))
    msgs = [
        UserMessage("q"),
        AssistantMessage([ToolUseBlock(id="c1", name="f", input={}), ToolUseBlock(id="c2", name="f", input={})]),
        ToolResultMessage(
            [
                ToolResultBlock(id="c1", name="f", output=[TextBlock(text="\n\n  table:"), image]),
                ToolResultBlock(id="c2", name="f", output=[image]),
            ]
        ),
    ]
    r = formatted("gemini", msgs)
    responses = [p["functionResponse"]["response"] for p in r.body["contents"][2]["parts"]]
    assert responses == [
        {"output": "\n\n  table:\n[image: https://e.com/chart]"},
        {"output": "[image: https://e.com/chart]"},
    ]
    assert [q for p in r.diagnostics for q in p.pointers] == ["/2/content/0/output/1", "/2/content/1/output/0"]
