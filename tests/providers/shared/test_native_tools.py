"""A provider's own tools (server and built-in tools: Anthropic's ``web_search_20250305``, the Responses API's
``{"type": "web_search"}``, Gemini's ``{"google_search": {}}``) go to that provider as given, in their place, and are
refused by every other one; before, each was read as a function tool of its name with empty parameters (its type and
the rest said ``tool-key-dropped``), a tool the application never defined, and the provider's own tool was gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import UserMessage
from agentmsg.context import count_tokens
from agentmsg.errors import ValidationError
from agentmsg.providers import NAMES, get
from tests._support.cli import run
from tests.oracles import formatted

MSGS = [UserMessage("What is new in Oslo?")]
FN: dict[str, Any] = {
    "name": "weather",
    "description": "The weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
#: each API's own tools, as its official SDK types have them
NATIVE: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    ],
    "openai-responses": [
        {"type": "web_search"},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "mcp", "server_label": "docs", "server_url": "https://example.com/mcp"},
        {"type": "image_generation"},
    ],
    "gemini": [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}],
}
#: more of them, newer than the oracles' specs (Anthropic's), or in the spelling they refuse (Gemini's snake case,
#: which the API's JSON reads as well): sent as given too
NEWER: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768},
        {"type": "tool_search_tool_regex", "name": "tool_search_tool_regex"},
    ],
    "openai-responses": [{"type": "local_shell"}, {"type": "apply_patch"}],
    "gemini": [{"google_search": {}}, {"url_context": {}}, {"code_execution": {}}],
}


@pytest.mark.parametrize("own", sorted(NATIVE))
def test_a_provider_sends_its_own_tools_as_given_in_their_place(own: str) -> None:
    first, *rest = NATIVE[own]
    tools = [first, FN, *rest]
    r = formatted(own, MSGS, model="m", tools=tools)  # (its oracle: the official types take the body)
    assert r.diagnostics == ()
    sent = r.body["tools"]
    if own == "gemini":  # (its own entry each; the declarations' entry where the first function tool is)
        assert sent[0] == first and sent[2:] == rest and list(sent[1]) == ["functionDeclarations"]
        assert sent[1]["functionDeclarations"][0]["name"] == "weather"
    else:
        assert sent[0] == first and sent[2:] == rest
        assert sent[1]["name"] == "weather"
    r = get(own).format_request(MSGS, model="m", tools=[*NEWER[own], FN])
    assert r.body["tools"][:-1] == NEWER[own] and r.diagnostics == ()


@pytest.mark.parametrize("name", NAMES)
def test_every_other_provider_refuses_another_apis_tool_naming_it(name: str) -> None:
    for own, tools in NATIVE.items():
        if own == name:
            continue
        for tool in tools + NEWER[own]:
            with pytest.raises(ValidationError) as info:
                get(name).format_request(MSGS, model="m", tools=[FN, tool])
            (p,) = info.value.problems
            assert (p.pointer, p.rule) == ("/tools/1", "enum"), p
            label = tool.get("name") or tool.get("type") or next(iter(tool))
            assert repr(label) in p.message and name in p.message, p.message


def test_a_tool_choice_naming_a_providers_own_tool_is_sent_as_its_wire_has_it() -> None:
    r = formatted("anthropic", MSGS, model="m", tools=NATIVE["anthropic"], tool_choice={"name": "bash"})
    assert r.body["tool_choice"] == {"type": "tool", "name": "bash"}
    tools = NATIVE["openai-responses"]
    for choice in ({"type": "file_search"}, {"name": "file_search"}):
        r = formatted("openai-responses", MSGS, model="m", tools=tools, tool_choice=choice)
        assert r.body["tool_choice"] == {"type": "file_search"}
    # (tool_choice_types_param: web_search and mcp are not forced by type; Gemini forces function declarations only)
    for name, defs, choice in (
        ("openai-responses", NATIVE["openai-responses"], {"type": "web_search"}),
        ("gemini", NATIVE["gemini"], {"name": "googleSearch"}),
    ):
        with pytest.raises(ValidationError) as info:
            get(name).format_request(MSGS, model="m", tools=defs, tool_choice=choice)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/tool_choice", "enum")]


@pytest.mark.parametrize("name", NAMES)
def test_an_mcp_tool_choice_forces_its_server_on_the_responses_api_and_is_refused_elsewhere(name: str) -> None:
    """The Responses API forces an MCP server's tool with ``{"type": "mcp", "server_label": L, "name"?: N}``
    (tool_choice_mcp_param.py): it was refused on every provider ("tool_choice not understood", or read as a
    function named N). Now the Responses API sends it as given where tools hold an mcp tool of that server_label;
    it is refused (rule enum) where none does and by every other provider."""
    docs = NATIVE["openai-responses"][3]
    other = {"type": "mcp", "server_label": "other", "server_url": "https://example.com/other"}
    for choice in ({"type": "mcp", "server_label": "docs"}, {"type": "mcp", "server_label": "docs", "name": "ask"}):
        for tools in ([FN, other, docs], [FN, other], [FN]):
            if name == "openai-responses" and docs in tools:
                r = formatted(name, MSGS, model="m", tools=tools, tool_choice=choice)
                assert r.body["tool_choice"] == choice and r.diagnostics == ()
                continue
            tools = [FN] if name != "openai-responses" else tools  # (another API refuses the mcp tool first)
            with pytest.raises(ValidationError) as info:
                get(name).format_request(MSGS, model="m", tools=tools, tool_choice=choice)
            assert [(p.pointer, p.rule) for p in info.value.problems] == [("/tool_choice", "enum")], name
            assert "'docs'" in info.value.problems[0].message


@pytest.mark.parametrize("name", NAMES)
def test_count_tokens_counts_a_providers_own_tool_as_its_definition(name: str) -> None:
    """Gemini's ({"google_search": {}}, no name) was refused as a tool without a name; Anthropic's was counted as a
    function of its name with no parameters, its max_uses and type unseen. Another provider's own tool is refused,
    as the formatter refuses it (the count is of the request it would send)."""
    for own, tools in NEWER.items():
        if own != name:
            with pytest.raises(ValidationError) as refused:
                count_tokens(MSGS, provider=name, tools=tools)
            assert (refused.value.problems[0].pointer, refused.value.problems[0].rule) == ("/tools/0", "enum")
            continue
        n = count_tokens(MSGS, provider=name, tools=[*tools, *NATIVE[own]])
        assert n.tools > 0 and n.error is not None
    if name == "anthropic":
        bare = count_tokens(MSGS, provider=name, tools=[{"name": "web_search"}]).tools
        assert count_tokens(MSGS, provider=name, tools=[NATIVE["anthropic"][0]]).tools > bare


def test_the_cli_sends_or_refuses_a_providers_own_tool(tmp_path: Path) -> None:
    convo = tmp_path / "c.json"
    convo.write_bytes(orjson.dumps([m.to_dict() for m in MSGS]))
    tools = tmp_path / "t.json"
    tools.write_bytes(orjson.dumps([NATIVE["anthropic"][0]]))
    r = run("format", "--provider", "anthropic", "--model", "m", "--tools", str(tools), str(convo))
    assert r.returncode == 0 and r.stderr == ""
    assert orjson.loads(r.stdout)["tools"] == [NATIVE["anthropic"][0]]
    r = run("format", "--provider", "openai", "--model", "m", "--tools", str(tools), str(convo))
    assert r.returncode == 1 and r.stdout == ""
    (said,) = [orjson.loads(line) for line in r.stderr.splitlines()]
    assert (said["pointer"], said["rule"], said["kind"]) == ("/tools/0", "enum", "error")


#: a tool as Anthropic's docs write one: a client tool typed "custom", its schema as input_schema, cache_control
ANTHROPIC_CLIENT_TOOL = {
    "type": "custom",
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "cache_control": {"type": "ephemeral", "ttl": "1h"},
}


@pytest.mark.parametrize("name", ["anthropic", "openai", "gemini", "dashscope", "openai-responses"])
def test_an_anthropic_client_tool_typed_custom_is_a_function_tool_with_its_cache_marker(name: str) -> None:
    """'type: custom' beside input_schema is how Anthropic spells a client tool; it was read as an OpenAI custom
    tool (free-text input): refused by every provider but OpenAI, which sent a text tool without its schema. Its
    cache_control was dropped (tool-key-dropped): it is read as the tool's cache marker now, so Anthropic sends it
    and the others say what they do with a marker, at its pointer."""
    r = get(name).format_request([UserMessage("hi")], model="m", tools=[ANTHROPIC_CLIENT_TOOL])
    said = {(d.pointer, d.rule) for d in r.diagnostics}
    assert not {rule for _, rule in said} & {"tool-key-dropped"}, said
    text = orjson.dumps(r.body).decode()
    assert '"city"' in text and "get_weather" in text  # (the schema is sent: a function tool)
    if name == "anthropic":
        assert r.body["tools"] == [{k: v for k, v in ANTHROPIC_CLIENT_TOOL.items() if k != "type"}]
        assert said == set()
    else:
        assert '"custom"' not in text and "cache_control" not in text
        assert said and {pointer for pointer, _ in said} == {"/tools/0/cache_control"}, said


def test_an_openai_custom_tool_is_still_one_and_a_foreign_cache_control_is_dropped() -> None:
    """Only a definition with input_schema and no format is Anthropic's client tool; a cache_control that is not
    Anthropic's form (or beside a _cache_control marker) stays a dropped key."""
    custom = {"type": "custom", "name": "sql", "description": "a query", "format": {"type": "text"}}
    r = get("openai").format_request([UserMessage("hi")], model="m", tools=[custom])
    assert r.body["tools"] == [
        {"type": "custom", "custom": {"name": "sql", "description": "a query", "format": {"type": "text"}}}
    ]
    for value in ({"type": "persistent"}, True, {"type": "ephemeral", "ttl": "2h"}):
        tool = {"name": "f", "parameters": {"type": "object"}, "cache_control": value}
        r = get("anthropic").format_request([UserMessage("hi")], model="m", tools=[tool])
        assert [(d.pointer, d.rule) for d in r.diagnostics] == [("/tools/0/cache_control", "tool-key-dropped")]
        assert "cache_control" not in r.body["tools"][0]
    tool = {
        "name": "f",
        "parameters": {"type": "object"},
        "cache_control": {"type": "ephemeral"},
        "_cache_control": {"ttl": "1h"},
    }
    r = get("anthropic").format_request([UserMessage("hi")], model="m", tools=[tool])
    assert [(d.pointer, d.rule) for d in r.diagnostics] == [("/tools/0/cache_control", "tool-key-dropped")]
    assert r.body["tools"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_cache_automatic_points_at_a_wrapped_tools_marker_where_it_is() -> None:
    """A marker beside 'type: function' (not in the function object) was pointed at as /tools/0/function/..."""
    tool = {"type": "function", "_cache_control": True, "function": {"name": "f"}}
    r = get("openai").format_request([UserMessage("hi")], model="m", tools=[tool])
    assert [(d.pointer, d.rule) for d in r.diagnostics] == [("/tools/0/_cache_control", "cache-automatic")]


def test_a_gemini_tool_entry_with_declarations_beside_its_own_tool_is_refused_as_the_wrapper() -> None:
    """{googleSearch: {}, functionDeclarations: [...]} (google-genai's Tool with both) was read as a Gemini tool and
    sent as given: its declarations unchecked (no name, a name a function tool has too: two functions 'weather'
    sent). It is the tools wrapper, refused as one with what to give instead, on every provider."""
    entry = {"googleSearch": {}, "functionDeclarations": [FN]}
    for name in ("gemini", "openai", "anthropic"):
        with pytest.raises(ValidationError) as info:
            get(name).format_request(MSGS, model="m", tools=[entry, FN])
        (problem,) = info.value.problems
        assert problem.pointer == "/tools/0" and "Gemini's tools wrapper" in problem.message, name


@pytest.mark.parametrize(
    ("name", "own", "by_name", "by_type"),
    [
        ("openai-responses", {"type": "web_search"}, {"type": "function", "name": "web_search"}, None),
        (
            "openai-responses",
            {"type": "file_search", "vector_store_ids": ["vs_1"]},
            {"type": "function", "name": "file_search"},
            {"type": "file_search"},
        ),
        ("gemini", {"google_search": {}}, {"type": "function", "function": {"name": "google_search"}}, None),
    ],
)
def test_a_tool_choice_naming_a_function_forces_it_beside_an_own_tool_of_that_name(
    name: str, own: dict[str, Any], by_name: dict[str, Any], by_type: dict[str, Any] | None
) -> None:
    """A function tool named as a provider's own tool is by its type (the Responses API's ``web_search``, Gemini's
    ``google_search``) is taken beside it, yet a tool_choice naming the function was read as naming the built-in
    tool: refused ("a built-in tool the Responses API cannot force", "a Gemini tool of its own"). A name forces the
    function; the type ({"type": "file_search"}) still forces the built-in tool."""
    fn = {**FN, "name": by_name.get("name") or by_name["function"]["name"]}
    request = get(name).format_request(MSGS, tools=[own, fn], tool_choice=by_name)
    body = orjson.loads(request.body_bytes())
    if name == "gemini":
        assert body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY", "allowedFunctionNames": [fn["name"]]}
    else:
        assert body["tool_choice"] == {"type": "function", "name": fn["name"]}
    if by_type is not None:
        request = get(name).format_request(MSGS, tools=[own, fn], tool_choice=by_type)
        assert orjson.loads(request.body_bytes())["tool_choice"] == by_type


@pytest.mark.parametrize("name", NAMES)
def test_a_tool_type_no_provider_has_is_refused_naming_the_types_it_takes(name: str) -> None:
    """A definition whose ``type`` is neither a function tool's nor any provider's own (a newer tool's version,
    mistyped; not a string at all) was sent as a function of its name, its type said ``tool-key-dropped``: a tool
    the application never defined, the one meant gone. Every provider, and the token count, now refuses it at its
    type (rule ``enum``), naming the types the provider takes; a function tool whose type is null is sent so."""
    expected = {"anthropic": "web_search_20250305", "openai-responses": "web_search", "gemini": "google_search"}
    for tool in (
        {"type": "computer_use_9999", "name": "x"},
        {"type": 7, "name": "x", "parameters": {"type": "object"}},
        {"type": ["function"], "name": "x"},
    ):
        for call in (
            lambda t: get(name).format_request(MSGS, model="m", tools=t),
            lambda t: count_tokens(MSGS, provider=name, tools=t),
        ):
            with pytest.raises(ValidationError) as info:
                call([FN, tool])
            assert [(p.pointer, p.rule) for p in info.value.problems] == [("/tools/1/type", "enum")]
            message = info.value.problems[0].message
            assert repr(tool["type"]) in message and "'function'" in message
            assert expected.get(name, "'function'") in message
            assert ("'custom'" in message) == get(name).spec.custom_tools
    sent = get(name).format_request(MSGS, model="m", tools=[{**FN, "type": None}])
    assert [(d.pointer, d.rule) for d in sent.diagnostics] == [("/tools/0/type", "tool-key-dropped")]


@pytest.mark.parametrize("name", NAMES)
def test_a_tool_definition_that_cannot_be_read_is_refused_at_its_pointer(name: str) -> None:
    """A Mapping whose ``[]`` raises or whose keys lie (one it has not) escaped normalize_tools and the own-tool
    recognizers as that raw exception (a RuntimeError, a KeyError), and one whose ``get`` raised did too. Now a
    definition that is no dict is read once, as its dict: one that cannot be read is refused (ValidationError,
    rule json-value, naming the tool's pointer and the error) by every provider and the token count, and a
    ``get`` that raises is never called."""
    import collections.abc

    class Lying(collections.abc.Mapping[str, Any]):
        def __init__(self, data: dict[str, Any], how: str) -> None:
            self.data, self.how = data, how

        def __getitem__(self, key: str) -> Any:
            if self.how == "getitem":
                raise RuntimeError("no reading today")
            return self.data[key]

        def __iter__(self) -> Any:
            return iter([*self.data, "ghost"] if self.how == "keys" else self.data)

        def __len__(self) -> int:
            return len(self.data)

        def get(self, key: str, default: Any = None) -> Any:
            if self.how == "get":
                raise RuntimeError("no get today")
            return self.data.get(key, default)

    own = {"type": "web_search_20250305", "name": "web_search"}
    for how, words in (("getitem", "no reading today"), ("keys", "ghost")):
        for tool in (Lying(FN, how), Lying(own, how), {**FN, "parameters": Lying(FN["parameters"], how)}):
            for call in (
                lambda t: get(name).format_request(MSGS, model="m", tools=t),
                lambda t: count_tokens(MSGS, provider=name, tools=t),
            ):
                with pytest.raises(ValidationError) as info:
                    call([FN | {"name": "g"}, tool])
                assert [(p.pointer, p.rule) for p in info.value.problems] == [("/tools/1", "json-value")]
                assert words in info.value.problems[0].message
    sent = get(name).format_request(MSGS, model="m", tools=[Lying(FN, "get")]).body_bytes()
    assert b'"weather"' in sent and b'"city"' in sent
