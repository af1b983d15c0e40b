"""Conversations: a JSON array of messages (as AgentScope Java stores an agent's context), in one call."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from ._json import JsonInput, dumps, loads
from ._schemas import array_validator_for_kind
from .errors import ValidationError
from .message import Msg, _structure_msg, _unstructure_msg

__all__ = ["decode_messages", "encode_messages"]


@cache
def _list_validator() -> Any:
    return array_validator_for_kind("msg")


def decode_messages(data: JsonInput) -> list[Msg]:
    """Decode a conversation: a JSON array of messages into a list of role-pinned messages, validated as a
    whole. Problems are reported with pointers into the array (``/3/content/0/type``)."""
    parsed = loads(data, "msg")
    if type(parsed) is not list:
        raise ValidationError.single(
            "", "type", f"expected a JSON array of messages, got {type(parsed).__name__}", "msg"
        )
    try:
        ok = bool(_list_validator().is_valid(parsed))
    except (ValueError, TypeError, OverflowError):
        ok = False
    if ok:
        return [_structure_msg(m) for m in parsed]
    out = []
    for index, item in enumerate(parsed):
        try:
            out.append(Msg.from_dict(item))
        except ValidationError as exc:
            raise exc.under(f"/{index}") from None
    return out


def encode_messages(messages: Iterable[Msg]) -> bytes:
    """A conversation as a compact JSON array (each message exactly as :meth:`Msg.to_json_bytes`)."""
    return dumps([_unstructure_msg(m) for m in messages])
