"""``agentmsg.providers.system_prompt``: the system prompt a formatter context builds (formatter-internals.md, "System
Prompt Building": the base prompt, the tools available, the long-term memory section), against the seed's layout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import SystemMessage, TextBlock, UserMessage, ValidationError
from agentmsg.providers import get, providers, system_prompt
from tests._support.budget import examples

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object"}},
    {"type": "function", "function": {"name": "search", "description": "Search the web", "parameters": {}}},
]


def seed_layout(base: str, tools: list[tuple[str, str]], memories: str | None) -> str:
    """formatter-internals.md's ``buildSystemPrompt``, step by step (the reference the helper is checked against)."""
    sb = base
    if tools:
        sb += "\n\nYou have the following tools available:\n"
        for name, description in tools:
            sb += "- " + name + ": " + description + "\n"
    if memories is not None:
        sb += "\n\n<long_term_memory>\n" + memories + "\n</long_term_memory>"
    return sb


def test_the_seeds_layout() -> None:
    msg = system_prompt("You are Friday.", tools=TOOLS, long_term_memory="Alice lives in Paris.")
    assert isinstance(msg, SystemMessage)
    assert msg.content == [TextBlock(text=msg.text_content)]
    assert msg.text_content == (
        "You are Friday.\n"
        "\n"
        "You have the following tools available:\n"
        "- get_weather: Current weather for a city\n"
        "- search: Search the web\n"
        "\n"
        "\n"
        "<long_term_memory>\n"
        "Alice lives in Paris.\n"
        "</long_term_memory>"
    )


_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
_name = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@pytest.mark.fuzz
@given(
    base=_text.filter(bool),
    tools=st.lists(st.tuples(_name, _text.filter(bool)), max_size=4),
    memories=st.none() | _text.filter(bool),
)
@settings(max_examples=examples(200), deadline=None)
def test_every_prompt_is_the_seeds(base: str, tools: list[tuple[str, str]], memories: str | None) -> None:
    definitions = [{"name": n, "description": d} for n, d in tools]
    got = system_prompt(base, tools=definitions, long_term_memory=memories).text_content
    assert got == seed_layout(base, tools, memories)


def test_only_the_sections_given() -> None:
    assert system_prompt("Be brief.").text_content == "Be brief."
    assert system_prompt("Be brief.", tools=[], long_term_memory="").text_content == "Be brief."
    tools_only = system_prompt("Be brief.", tools=TOOLS[:1]).text_content
    assert (
        tools_only
        == "Be brief.\n\nYou have the following tools available:\n- get_weather: Current weather for a city\n"
    )
    memory_only = system_prompt("Be brief.", long_term_memory=["likes tea", "lives in Paris"]).text_content
    assert memory_only == "Be brief.\n\n<long_term_memory>\nlikes tea\nlives in Paris\n</long_term_memory>"


def test_edges_the_seed_writes_badly_are_written_plainly() -> None:
    """The seed appends Java's "null" for a missing description, and a leading blank line when the base is empty."""
    assert system_prompt(tools=[{"name": "ping"}]).text_content == "You have the following tools available:\n- ping\n"
    assert system_prompt(long_term_memory="x").text_content == "<long_term_memory>\nx\n</long_term_memory>"
    assert system_prompt().text_content == ""
    assert system_prompt("hi", name="system").name == "system"


@pytest.mark.parametrize(
    ("kwargs", "pointer", "rule"),
    [
        ({"base": 3}, "/base", "type"),
        ({"tools": [{"description": "no name"}]}, "/tools/0/name", "required"),
        ({"tools": [{"name": "f", "description": 5}]}, "/tools/0/description", "type"),
        ({"tools": {"name": "f"}}, "/tools", "type"),
        ({"long_term_memory": ["a", 2]}, "/long_term_memory/1", "type"),
        ({"long_term_memory": b"x"}, "/long_term_memory", "type"),
    ],
)
def test_bad_input_is_refused_at_its_pointer(kwargs: dict[str, Any], pointer: str, rule: str) -> None:
    with pytest.raises(ValidationError) as info:
        system_prompt(**kwargs)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == (pointer, rule)


@pytest.mark.parametrize("provider", [p.name for p in providers()])
def test_every_provider_sends_it_as_its_system_prompt(provider: str) -> None:
    prompt = system_prompt("You are Friday.", tools=TOOLS, long_term_memory="Alice lives in Paris.")
    request = get(provider).format_request([prompt, UserMessage("Weather?")], tools=TOOLS)
    assert prompt.text_content in _strings(request.body)  # the provider's system field, whole
    assert not [d for d in request.diagnostics if d.pointer.startswith("/0")]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []
