"""The seed documents' API that agentmsg adds to the schema's fields: ``ToolResultBlock.error()`` / ``.text()``
(message-system-architecture.md) and the generate reason given at construction (message-and-event.md: "For more
optional fields (metadata, timestamp, usage, generateReason), use each subclass's builder()")."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    GenerateReason,
    ImageBlock,
    Msg,
    SystemMessage,
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
    assert (ok.id, ok.name, ok.state, ok.output) == (
        "call_1",
        "get_weather",
        ToolResultState.SUCCESS,
        [TextBlock(text="Sunny, 25°C")],
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
        (lambda: ToolResultBlock.error(5, "x"), "/id", "type"),  # type: ignore[call-overload]
        (lambda: ToolResultBlock.error("c", 7, "x"), "/name", "type"),  # type: ignore[call-overload]
        (lambda: ToolResultBlock.error("c", [3]), "/output/0", "type"),  # type: ignore[list-item]
        (lambda: ToolResultBlock.text("c", {"type": "nope"}), "/output/0", None),
        (lambda: ToolResultBlock.text("c", "x", metadata=[1]), "/metadata", "type"),  # type: ignore[call-overload]
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


# ---- the generate reason at construction --------------------------------------------------------------------


@pytest.mark.parametrize("reason", list(GenerateReason))
def test_generate_reason_is_kept_where_java_keeps_it(reason: GenerateReason) -> None:
    """AgentScope Java's ``Msg.Builder.generateReason(g)`` puts ``g.name()`` in metadata
    ``agentscope_generate_reason`` (agentscope-java-wire.md 1.7); MODEL_STOP given is written too, as Java does."""
    for given in (reason, reason.value):
        msg = AssistantMessage("x", name="Friday", generate_reason=given)
        assert msg.metadata == {"agentscope_generate_reason": reason.value}
        assert msg.generate_reason is reason
        assert Msg.from_json(msg.to_json()) == msg


def test_every_constructor_takes_it_beside_other_metadata() -> None:
    msg = Msg("ASSISTANT", "x", metadata={"task": "t-1"}, generate_reason=GenerateReason.TOOL_CALLS)
    assert msg.metadata == {"task": "t-1", "agentscope_generate_reason": "TOOL_CALLS"}
    for cls in (UserMessage, SystemMessage, ToolResultMessage):  # Java's builders take it for every role
        assert cls("x", generate_reason="INTERRUPTED").generate_reason is GenerateReason.INTERRUPTED
    same = AssistantMessage("x", metadata={"agentscope_generate_reason": "TOOL_CALLS"}, generate_reason="TOOL_CALLS")
    assert same.generate_reason is GenerateReason.TOOL_CALLS
    assert AssistantMessage("x").metadata == {}  # not given: nothing written (read as MODEL_STOP)


@pytest.mark.parametrize(
    ("given", "metadata", "rule", "says"),
    [
        ("max_iterations", None, "enum", "use 'MAX_ITERATIONS'"),
        ("DONE", None, "enum", "one of 'MODEL_STOP'"),
        (3, None, "type", "got int"),
        ("MAX_ITERATIONS", {"agentscope_generate_reason": "TOOL_CALLS"}, "conflict", "differ"),
    ],
)
def test_a_bad_generate_reason_is_refused_at_the_metadata_key(
    given: Any, metadata: dict[str, Any] | None, rule: str, says: str
) -> None:
    with pytest.raises(ValidationError) as info:
        AssistantMessage("x", metadata=metadata, generate_reason=given)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == ("/metadata/agentscope_generate_reason", rule)
    assert says in problem.message


def test_copy_changes_the_generate_reason() -> None:
    msg = AssistantMessage("x", generate_reason=GenerateReason.TOOL_CALLS)
    copied = msg.copy(generate_reason=GenerateReason.MAX_ITERATIONS)
    assert copied.generate_reason is GenerateReason.MAX_ITERATIONS
    assert msg.generate_reason is GenerateReason.TOOL_CALLS  # the original is unchanged
    assert copied.copy(name="b").generate_reason is GenerateReason.MAX_ITERATIONS
    with pytest.raises(ValidationError):
        msg.copy(generate_reason="later")
