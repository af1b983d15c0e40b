"""The openai-responses formatter: the request of a conversation (items in their order, instructions, tools, tool
choice, tool results with media, reasoning items), checked by the ``openai`` package's ``ResponseCreateParams`` made
strict (tests/oracles), and what it says where it cannot carry something."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
    DataBlock,
    ImageBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    UserMessage,
    ValidationError,
)
from agentmsg.providers import StructuredOutput, get
from tests._support.providers import PNG, TOOLS, rules, tool_loop
from tests.oracles import formatted, require

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

P = get("openai-responses")


def _signed(item_id: str, text: str, signature: str | None = "gAAAA-sig", **extra: object) -> ThinkingBlock:
    meta: dict[str, object] = {"provider": "openai-responses", "itemId": item_id, **extra}
    if signature is not None:
        meta["signature"] = signature
    return ThinkingBlock(thinking=text, metadata=meta)


def test_a_tool_loop_is_items_in_order() -> None:
    convo = [
        SystemMessage("Be brief."),
        UserMessage(
            [TextBlock(text="What is this?"), ImageBlock(source=Base64Source(media_type="image/png", data=PNG))]
        ),
        AssistantMessage(
            [
                _signed("rs_1", "Look first.", signature=None),
                _signed("rs_1", "Then call.", signature="enc-1"),
                TextBlock(text="Checking."),
                ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="call_1", name="get_weather", output="Sunny", state="success")),
    ]
    r = formatted("openai-responses", convo, model="gpt-5", tools=TOOLS, tool_choice="required", stream=True)
    assert r.path == "/responses" and rules(r) == []
    body = r.body
    assert body["instructions"] == "Be brief." and body["stream"] is True
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "Look first."},
                {"type": "summary_text", "text": "Then call."},
            ],
            "encrypted_content": "enc-1",
        },
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": TOOLS[0]["parameters"],
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]


def test_a_forced_tool_is_flat() -> None:
    r = formatted("openai-responses", [UserMessage("Hi")], tools=TOOLS, tool_choice={"name": "get_weather"})
    assert r.body["tool_choice"] == {"type": "function", "name": "get_weather"}


def test_encrypted_content_is_asked_for_only_where_reasoning_may_come() -> None:
    """The API refuses ``include: reasoning.encrypted_content`` for a model that does not reason: asked for with a
    reasoning model, a reasoning parameter, or reasoning items replayed; never with store (the server keeps them)."""
    hi = [UserMessage("Hi")]
    assert "include" not in formatted("openai-responses", hi, model="gpt-4o").body
    assert formatted("openai-responses", hi, model="o4-mini").body["include"] == ["reasoning.encrypted_content"]
    r = formatted("openai-responses", hi, model="gpt-4.1", reasoning_effort="low")
    assert r.body["reasoning"] == {"effort": "low"} and r.body["include"] == ["reasoning.encrypted_content"]
    stored = formatted("openai-responses", hi, model="gpt-5", store=True)
    assert stored.body["store"] is True and "include" not in stored.body
    mine = formatted("openai-responses", hi, model="gpt-5", include=["message.output_text.logprobs"])
    assert mine.body["include"] == ["message.output_text.logprobs", "reasoning.encrypted_content"]


def test_include_given_as_a_string_is_refused_naming_the_field() -> None:
    """``include`` is an array in the API: a string was sent as given (and, with a reasoning model, not even
    completed with the encrypted content). Refused before anything is sent, naming the field; a tuple is a list."""
    hi = [UserMessage("Hi")]
    for bad in ("reasoning.encrypted_content", "message.output_text.logprobs", {"a": 1}):
        with pytest.raises(ValidationError, match="include must be a list of strings") as err:
            formatted("openai-responses", hi, model="gpt-5", include=bad)
        assert [(p.pointer, p.rule) for p in err.value.problems] == [("/params/include", "type")]
    r = formatted("openai-responses", hi, model="gpt-4o", include=("message.output_text.logprobs",))
    assert r.body["include"] == ["message.output_text.logprobs"]


def test_reasoning_of_another_provider_or_of_no_item_is_said() -> None:
    convo = tool_loop()  # (Anthropic's signed thinking)
    r = formatted("openai-responses", convo, tools=TOOLS)
    assert ("/2/content/0", "thinking-dropped") in rules(r)
    assert not any(i.get("type") == "reasoning" for i in r.body["input"])
    plain = [UserMessage("q"), AssistantMessage([ThinkingBlock(thinking="hmm"), TextBlock(text="a")])]
    assert rules(formatted("openai-responses", plain)) == [("/1/content/0", "thinking-dropped")]
    demoted = formatted("openai-responses", plain, options={"reasoning": "text"})
    assert rules(demoted) == [("/1/content/0", "thinking-demoted")]
    assert demoted.body["input"][1] == {"role": "assistant", "content": "hmm\na"}
    with pytest.raises(ValidationError):
        P.format_request(convo, tools=TOOLS, strict=True)


def test_a_reasoning_item_without_its_encrypted_content_needs_store() -> None:
    """Replayed by id alone, the API looks the item up: only a stored conversation has it."""
    convo = [UserMessage("q"), AssistantMessage([_signed("rs_9", "why", signature=None), TextBlock(text="a")])]
    r = formatted("openai-responses", convo)
    assert rules(r) == [("/1/content/0", "thinking-dropped")]
    assert [i.get("type", "message") for i in r.body["input"]] == ["message", "message"]
    stored = formatted("openai-responses", convo, store=True)
    assert rules(stored) == [] and stored.body["input"][1]["id"] == "rs_9"


def test_reasoning_text_parts_go_back_as_content() -> None:
    convo = [UserMessage("q"), AssistantMessage([_signed("rs_2", "raw", signature=None, reasoningText=True)])]
    r = formatted("openai-responses", convo, store=True)
    assert r.body["input"][1] == {
        "type": "reasoning",
        "id": "rs_2",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "raw"}],
    }


def test_a_tool_result_with_media_keeps_it_in_its_output() -> None:
    convo = [
        UserMessage("Draw"),
        AssistantMessage([ToolUseBlock(id="c1", name="get_weather", input={"city": "x"})]),
        ToolResultMessage(
            ToolResultBlock(
                id="c1",
                name="get_weather",
                output=[
                    TextBlock(text="here"),
                    ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
                    DataBlock(source=Base64Source(media_type="application/pdf", data="JVBERi0="), name="r.pdf"),
                ],
                state="error",
            )
        ),
    ]
    r = formatted("openai-responses", convo, tools=TOOLS)
    assert r.body["input"][2]["output"] == [
        {"type": "input_text", "text": "here"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
        {"type": "input_file", "filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
    ]
    assert rules(r) == [("/2/content/0", "tool-result-state-dropped")]


def test_audio_is_a_placeholder() -> None:
    convo = [UserMessage([AudioBlock(source=Base64Source(media_type="audio/wav", data="UklGRg=="))])]
    r = formatted("openai-responses", convo)
    assert rules(r) == [("/0/content/0", "media-unsupported")]
    assert r.body["input"][0]["content"].startswith("[audio")  # (a lone text part: a string)


def test_params_it_does_not_take_are_said() -> None:
    r = formatted("openai-responses", [UserMessage("Hi")], max_tokens=50, stop=["x"], seed=1, temperature=0.2)
    assert r.body["max_output_tokens"] == 50 and r.body["temperature"] == 0.2
    assert sorted(rules(r)) == [("/params/seed", "param-dropped"), ("/params/stop", "param-dropped")]


def test_structured_output_is_the_sdks_text_format() -> None:
    require("openai")
    pytest.importorskip("pydantic")
    from openai.lib._parsing._responses import type_to_text_format_param
    from openai.lib._pydantic import to_strict_json_schema
    from pydantic import BaseModel

    class CityLocation(BaseModel):
        city: str
        country: str

    ours = formatted(
        "openai-responses",
        [UserMessage("Where?")],
        structured_output=StructuredOutput(to_strict_json_schema(CityLocation), name="CityLocation"),
    )
    assert ours.body["text"]["format"] == type_to_text_format_param(CityLocation)
    assert ours.parser_options == {"structured_output": {"from": "text"}}
    json_mode = formatted("openai-responses", [UserMessage("Answer in JSON")], response_format={"type": "json_object"})
    assert json_mode.body["text"] == {"format": {"type": "json_object"}}


def test_a_messages_phase_goes_back_on_its_text() -> None:
    """The reader keeps a message item's phase (and id) in a carrier after its text: sent back on that text, as the
    API gave it (with the id: the output message), else as the message's phase; with no text before it, said."""

    def carrier(**block: object) -> ThinkingBlock:
        return ThinkingBlock(
            thinking="", metadata={"provider": "openai-responses", "providerBlock": {"type": "message", **block}}
        )

    with_id = [UserMessage("q"), AssistantMessage([TextBlock(text="a"), carrier(id="msg_1", phase="commentary")])]
    assert formatted("openai-responses", with_id).body["input"][1] == {
        "role": "assistant",
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "a", "annotations": []}],
        "phase": "commentary",
    }
    no_id = [UserMessage("q"), AssistantMessage([TextBlock(text="a"), carrier(phase="final_answer")])]
    assert formatted("openai-responses", no_id).body["input"][1] == {
        "role": "assistant",
        "content": "a",
        "phase": "final_answer",
    }
    alone = [UserMessage("q"), AssistantMessage([carrier(id="msg_1", phase="commentary"), TextBlock(text="a")])]
    request = formatted("openai-responses", alone)
    assert rules(request) == [("/1/content/0", "field-dropped")]  # (no tool the provider ran: its id and phase)
    assert request.diagnostics[0].message == (
        "the message item's phase 'commentary' and id 'msg_1' from openai-responses not sent to openai-responses: no"
        " assistant text is sent right before it; its text is sent"
    )
    # another provider's formatter says the phase (it has no place for it); not the id (a message's, not sent
    # anywhere else: tests/providers/shared/test_request.py)
    assert rules(formatted("anthropic", with_id)) == [("/1/content/1", "field-dropped")]


def test_reasoning_effort_and_a_reasoning_effort_are_refused_together() -> None:
    # reasoning_effort goes to reasoning.effort: given with a reasoning parameter that has its own effort, it replaced
    # that effort unsaid ({"effort": "low"} was sent "high"); two names of one field are refused, as max_tokens with
    # max_output_tokens is (rule conflict)
    msgs = [UserMessage("hi")]
    with pytest.raises(ValidationError) as caught:
        P.format_request(msgs, reasoning={"effort": "low", "summary": "auto"}, reasoning_effort="high")
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/params/reasoning_effort", "conflict")]
    body = P.format_request(msgs, reasoning={"summary": "auto"}, reasoning_effort="high").body
    assert body["reasoning"] == {"summary": "auto", "effort": "high"}
    assert P.format_request(msgs, reasoning={"effort": None}, reasoning_effort="low").body["reasoning"] == {
        "effort": "low"
    }


def test_a_text_format_and_a_structured_output_are_refused_together() -> None:
    # structured output (or a response_format parameter) is sent as text.format: with a text parameter that has its
    # own format it replaced that format unsaid (json_object was sent as the json_schema); refused (rule conflict),
    # as structured_output with response_format is. The text parameter's other fields (verbosity) are kept
    msgs = [UserMessage("hi")]
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    asked = (
        {"structured_output": StructuredOutput(schema)},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}},
    )
    for kwargs in asked:
        with pytest.raises(ValidationError) as caught:
            P.format_request(msgs, text={"format": {"type": "json_object"}, "verbosity": "low"}, **kwargs)
        assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/params/text", "conflict")]
        body = P.format_request(msgs, text={"verbosity": "low"}, **kwargs).body
        assert body["text"]["verbosity"] == "low" and body["text"]["format"]["type"] == "json_schema"


def test_chat_completions_parameters_this_api_names_otherwise_or_not_at_all() -> None:
    # Chat Completions' verbosity is this API's text.verbosity, and logit_bias, modalities, audio, prediction,
    # web_search_options, functions, function_call it has no field for: they were sent as they were, top-level, a
    # body the API refuses (openai's ResponseCreateParams made strict: "Extra inputs are not permitted")
    require("openai")
    msgs = [UserMessage("hi")]
    request = formatted("openai-responses", msgs, verbosity="low")
    assert request.body["text"] == {"verbosity": "low"} and "verbosity" not in request.body
    schema = StructuredOutput({"type": "object", "properties": {"a": {"type": "string"}}})
    request = formatted("openai-responses", msgs, verbosity="high", structured_output=schema)
    assert request.body["text"]["verbosity"] == "high" and request.body["text"]["format"]["type"] == "json_schema"
    # (a text parameter's other fields are kept beside it)
    assert P.format_request(msgs, verbosity="low", text={"x": 1}).body["text"] == {"x": 1, "verbosity": "low"}
    with pytest.raises(ValidationError) as caught:
        P.format_request(msgs, verbosity="low", text={"verbosity": "high"})
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/params/verbosity", "conflict")]
    dropped: dict[str, object] = {"logit_bias": {"1": 1}, "modalities": ["text"], "audio": {"format": "mp3"}}
    dropped |= {"prediction": {"type": "content", "content": "x"}, "web_search_options": {}}
    dropped |= {"functions": [{"name": "f"}], "function_call": "auto"}
    request = formatted("openai-responses", msgs, **dropped)
    assert rules(request) == [(f"/params/{key}", "param-dropped") for key in dropped]


def test_custom_tools_their_choice_calls_and_results_go_as_the_api_has_them() -> None:
    """OpenAI's custom tools (free-text input) were refused ("openai-responses has no custom tools"), though the
    Responses API takes them; and a custom tool's call read from Chat Completions went back as a function_call of
    arguments '{}' (its input lost, said tool-arguments-invalid), its result as a function_call_output. Now: the
    tools flat (a grammar as this API spells it), a custom tool_choice, a custom_tool_call item with the call's
    input as it came, and its result a custom_tool_call_output; the openai package's params check the body."""
    # the block Chat Completions' reader makes of a custom tool's call (tests/providers/openai_responses/test_reader.py
    # reads the same one from this API's reply)
    call = ToolUseBlock(id="call_Qpg", name="math_exp", input={}, content="4 + 4", metadata={"toolType": "custom"})
    msg = AssistantMessage([call])
    lark = {"syntax": "lark", "definition": "start: /[0-9+ ]+/"}
    tools: list[dict[str, Any]] = [
        {
            "type": "custom",
            "custom": {"name": "math_exp", "description": "Arithmetic", "format": {"type": "grammar", "grammar": lark}},
        },
        {"type": "custom", "name": "notes", "format": {"type": "text"}},  # (its keys beside the type)
        {"type": "custom", "name": "regex", "format": {"type": "grammar", "syntax": "regex", "definition": "a+"}},
        *TOOLS,
    ]
    convo = [
        UserMessage("Add four plus four."),
        msg,
        ToolResultMessage(ToolResultBlock(id=call.id, name="math_exp", output="8", state="success")),
        AssistantMessage([ToolUseBlock(id="call_2", name="notes", input={}, metadata={"toolType": "custom"})]),
        ToolResultMessage(ToolResultBlock(id="call_2", name="notes", output="ok", state="success")),
    ]
    choice = {"type": "custom", "custom": {"name": "math_exp"}}
    r = formatted("openai-responses", convo, model="gpt-5", tools=tools, tool_choice=choice)
    assert rules(r) == []
    assert r.body["tools"][:3] == [
        {"type": "custom", "name": "math_exp", "description": "Arithmetic", "format": {"type": "grammar", **lark}},
        {"type": "custom", "name": "notes", "format": {"type": "text"}},
        {"type": "custom", "name": "regex", "format": {"type": "grammar", "syntax": "regex", "definition": "a+"}},
    ]
    assert r.body["tools"][3]["type"] == "function"
    assert r.body["tool_choice"] == {"type": "custom", "name": "math_exp"}
    assert r.body["input"][1:] == [
        {"type": "custom_tool_call", "call_id": call.id, "name": "math_exp", "input": "4 + 4"},
        {"type": "custom_tool_call_output", "call_id": call.id, "output": "8"},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "notes", "input": ""},  # (a call of no text)
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": "ok"},
    ]
    # {"type": "custom", "name": X} forces it too; a function tool is still forced as one
    r = formatted("openai-responses", convo[:1], tools=tools, tool_choice={"type": "custom", "name": "notes"})
    assert r.body["tool_choice"] == {"type": "custom", "name": "notes"}


def test_an_unanswered_custom_call_is_repaired_with_a_custom_output() -> None:
    """With repair, a custom tool's call that no result answers gets one of its kind (a function_call_output for a
    custom_tool_call is an item the API cannot match to its call)."""
    call = ToolUseBlock(id="call_9", name="notes", input={}, content="jot", metadata={"toolType": "custom"})
    convo = [UserMessage("q"), AssistantMessage([call]), UserMessage("next")]
    r = formatted("openai-responses", convo, options={"repair": True})
    assert [item.get("type") for item in r.body["input"]] == [None, "custom_tool_call", "custom_tool_call_output", None]


def test_a_functions_call_of_an_id_a_custom_call_had_before_gets_a_function_output() -> None:
    """Call ids are reused turn by turn (a provider that numbers each turn's calls from call_0): a custom tool's call,
    then a later function call of the same id. Its result went out as a custom_tool_call_output, which the API
    matches to no custom call of the turn; the kind of each result is that of the call it answers."""
    custom = ToolUseBlock(id="call_0", name="math_exp", input={}, content="4 + 4", metadata={"toolType": "custom"})
    function = ToolUseBlock(id="call_0", name="get_weather", input={"city": "Paris"})
    convo = [
        UserMessage("Add four plus four."),
        AssistantMessage([custom]),
        ToolResultMessage(ToolResultBlock(id="call_0", name="math_exp", output="8", state="success")),
        UserMessage("And the weather?"),
        AssistantMessage([function]),
        ToolResultMessage(ToolResultBlock(id="call_0", name="get_weather", output="sunny", state="success")),
    ]
    tools = [{"type": "custom", "name": "math_exp"}, *TOOLS]
    r = formatted("openai-responses", convo, model="gpt-5", tools=tools)
    assert [item.get("type") for item in r.body["input"]] == [
        None,
        "custom_tool_call",
        "custom_tool_call_output",
        None,
        "function_call",
        "function_call_output",
    ]


_LARK = {"syntax": "lark", "definition": "start: /[0-9+ ]+/"}


@pytest.mark.parametrize(
    ("fmt", "pointer", "rule"),
    [
        ({"type": "grammar", "grammar": "start: x"}, "/tools/0/format/grammar", "type"),
        ({"type": "grammar"}, "/tools/0/format/syntax", "required"),
        ({"type": "grammar", "syntax": "ebnf", "definition": "x"}, "/tools/0/format/syntax", "enum"),
        ({"type": "grammar", "syntax": "regex", "definition": None}, "/tools/0/format/definition", "required"),
        (
            {"type": "grammar", "grammar": {"syntax": "lark", "definition": 5}},
            "/tools/0/format/grammar/definition",
            "type",
        ),
        ({"type": "grammar", "grammar": _LARK, "syntax": "lark"}, "/tools/0/format/syntax", "conflict"),
        ({"type": "json"}, "/tools/0/format/type", "enum"),
        ({"syntax": "lark", "definition": "x"}, "/tools/0/format/type", "enum"),
    ],
)
@pytest.mark.parametrize("provider", ["openai-responses", "openai"])
def test_a_custom_tools_format_neither_api_takes_is_refused_at_its_pointer(
    provider: str, fmt: dict[str, Any], pointer: str, rule: str
) -> None:
    """Found by the custom-tool request fuzzer: a custom tool's format went as given, whatever it was, and a grammar
    that is no object, of no syntax or definition, or a format of another type made a body the openai package's
    params refuse (the API with it). Now the format is checked where the tool is read, each problem at its pointer."""
    with pytest.raises(ValidationError) as info:
        get(provider).format_request([UserMessage("q")], tools=[{"type": "custom", "name": "math", "format": fmt}])
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]


def test_a_custom_tools_grammar_goes_as_each_api_spells_it() -> None:
    """A grammar given flat (as the Responses API has it) went to Chat Completions flat, and a text format's unknown
    key to both: bodies the openai package's params refuse. Now each API has the grammar as it spells it (Chat's
    nested in ``grammar``, the Responses API's flat), from either spelling, and a key of neither is said dropped."""
    flat = {"type": "grammar", **_LARK}
    nested = {"type": "grammar", "grammar": _LARK}
    for given in (flat, nested):
        tools = [{"type": "custom", "name": "math", "format": given}]
        assert formatted("openai-responses", [UserMessage("q")], tools=tools).body["tools"][0]["format"] == flat
        assert formatted("openai", [UserMessage("q")], tools=tools).body["tools"][0]["custom"]["format"] == nested
    text = [{"type": "custom", "custom": {"name": "notes", "format": {"type": "text", "note": 1}}}]
    for provider in ("openai-responses", "openai"):
        r = formatted(provider, [UserMessage("q")], tools=text)
        assert rules(r) == [("/tools/0/custom/format/note", "tool-key-dropped")], provider
