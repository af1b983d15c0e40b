"""The seed documents' API that agentmsg adds to the schema's fields: ``ToolResultBlock.error()`` / ``.text()``
(message-system-architecture.md)."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    ImageBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolResultState,
    URLSource,
    UserMessage,
    ValidationError,
    block_from_json,
    block_to_dict,
    block_to_json,
)
from agentmsg.providers import get

# ---- ToolResultBlock.error() / .text() ----------------------------------------------------------------------


def test_error_takes_the_seeds_form_id_and_message() -> None:
    """message-system-architecture.md: ``ToolResultBlock.error("call_abc123", "API call failed: ...")``."""
    block = ToolResultBlock.error("call_abc123", "API call failed: Connection timeout")
    assert block_to_dict(block) == {
        "type": "tool_result",
        "id": "call_abc123",
        "name": None,
        "output": [{"type": "text", "text": "API call failed: Connection timeout"}],
        "metadata": {},
        "state": "error",
    }
    assert block.state is ToolResultState.ERROR
    assert block_from_json(block_to_json(block)) == block


def test_error_and_text_take_id_name_output_in_javas_order() -> None:
    """Java's ``ToolResultBlock.of(id, name, output)`` and ``ToolResultMessage.result(id, name, text)`` order."""
    error = ToolResultBlock.error("call_1", "divide", "division by zero")
    assert (error.id, error.name, error.state, error.output) == (
        "call_1",
        "divide",
        ToolResultState.ERROR,
        [TextBlock(text="division by zero")],
    )
    ok = ToolResultBlock.text("call_1", "get_weather", "Sunny, 25°C")
    assert (ok.id, ok.name, ok.state, [b.text for b in ok.output]) == (
        "call_1",
        "get_weather",
        ToolResultState.SUCCESS,
        ["Sunny, 25°C"],
    )
    assert ToolResultBlock.error("call_1", "boom", name="f") == ToolResultBlock.error("call_1", "f", "boom")


def test_the_factories_take_output_as_every_constructor_does() -> None:
    image = ImageBlock(source=URLSource(url="https://example.com/chart.png"))
    block = ToolResultBlock.text("c", ["a chart:", image, {"type": "text", "text": "done"}], metadata={"ms": 12})
    assert [type(b).__name__ for b in block.output] == ["TextBlock", "ImageBlock", "TextBlock"]
    assert block.metadata == {"ms": 12}
    assert ToolResultBlock.error("c", None).output == []


@pytest.mark.parametrize(
    ("call", "pointer", "rule"),
    [
        (lambda: ToolResultBlock.error(5, "x"), "/id", "type"),
        (lambda: ToolResultBlock.error("c", 7, "x"), "/name", "type"),
        (lambda: ToolResultBlock.error("c", [3]), "/output/0", "type"),
        (lambda: ToolResultBlock.text("c", {"type": "nope"}), "/output/0", None),
        (lambda: ToolResultBlock.text("c", "x", metadata=[1]), "/metadata", "type"),
    ],
)
def test_bad_values_are_refused_at_their_pointer(call: Any, pointer: str, rule: str | None) -> None:
    with pytest.raises(ValidationError) as info:
        call()
    problem = info.value.problems[0]
    assert problem.pointer.startswith(pointer)
    if rule is not None:
        assert problem.rule == rule


def test_a_wrong_number_of_arguments_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ToolResultBlock.error("c")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        ToolResultBlock.error("c", "f", "x", "y")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="twice"):
        ToolResultBlock.error("c", "f", "x", name="g")  # type: ignore[call-overload]


def test_an_error_result_is_sent_as_an_error() -> None:
    """The state is what says it failed: the formatters that have a field for it send it."""
    conversation = [
        UserMessage("12 / 0?"),
        AssistantMessage([{"type": "tool_use", "id": "call_1", "name": "divide", "input": {"a": 12, "b": 0}}]),
        ToolResultMessage(ToolResultBlock.error("call_1", "divide", "division by zero")),
    ]
    anthropic = get("anthropic").format_request(conversation, model="claude").body
    result = anthropic["messages"][-1]["content"][0]
    assert (result["type"], result["is_error"]) == ("tool_result", True)
    gemini = get("gemini").format_request(conversation).body
    response = gemini["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert response == {"error": "division by zero"}
