"""The official ``openai`` package as the oracle of the Responses reader: its own stream accumulator
(``ResponseStreamState``) over recorded payloads, fed as the SDK feeds them (``construct_type``, its lenient path:
real recordings lack fields its strict models require)."""

from __future__ import annotations

from typing import Any


def accumulate(payloads: list[dict[str, Any]]) -> tuple[Any, Any]:
    """(the accumulator's snapshot, its completed response or None) after every payload."""
    state = _state(payloads)
    return state._ResponseStreamState__current_snapshot, state._completed_response


def done_items(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the accumulator's ``response.output_item.done`` events (its completed output map), in order: the
    reasoning items there carry the encrypted content the API's documentation says to replay (the copy in
    ``response.completed`` has other bytes; OpenRouter's even another item id)."""
    state = _state(payloads)
    return [state._completed_output[k].model_dump(mode="json", warnings=False) for k in sorted(state._completed_output)]


def _state(payloads: list[dict[str, Any]]) -> Any:
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    for payload in payloads:
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=payload))
    return state


def final_response(payloads: list[dict[str, Any]]) -> Any:
    """The response the SDK's stream helper returns (``get_final_response``), or None when none completed."""
    return accumulate(payloads)[1]
