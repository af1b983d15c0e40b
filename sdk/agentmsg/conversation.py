"""Conversations: a JSON array of messages (as AgentScope Java stores an agent's context), in one call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

from agentmsg._codec import legacy
from agentmsg._codec.converter import dumps_json
from agentmsg._codec.jsontext import JsonInput, deeper_than, loads
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import array_validator_for_kind
from agentmsg.errors import Problem, SizeLimitError, ValidationError
from agentmsg.message import Msg, _decoding, _fast_path, restore_usage

__all__ = ["decode_messages", "encode_messages"]


def decode_messages(data: JsonInput, *, strict: bool = False, notes: list[Problem] | None = None) -> list[Msg]:
    """Decode a conversation: a JSON array of messages into a list of role-pinned messages, validated as a
    whole. Problems are reported with pointers into the array (``/3/content/0/type``). Keys the schema does not
    declare are kept (``strict=True`` rejects them), and legacy keys read in their current form with a note
    (into ``notes``, else a :class:`~agentmsg.LegacyKeyWarning`; ``strict=True`` refuses them), as
    :meth:`Msg.from_json` does."""
    if notes is not None:
        legacy.check_notes(notes, "msg")
    fast = _fast_path()
    if fast is not None:
        msgs = fast.decode_list(data)
        if msgs is not None:
            _restore_usages(msgs)
            return msgs
    parsed = loads(data, "msg")
    if type(parsed) is not list:
        raise ValidationError.single(
            "", "type", f"expected a JSON array of messages, got {type(parsed).__name__}", "msg"
        )
    out: list[Msg] | None = None
    found: list[Problem] = []
    decoding = _decoding()
    try:
        # (the array validators are compiled on the first conversation that takes this path, then cached)
        if array_validator_for_kind("msg", strict=True).is_valid(parsed):
            out = [decoding.structure(m) for m in parsed]
        else:
            mapped = [legacy.message(m, found, f"/{i}") for i, m in enumerate(parsed)]
            if found and strict:
                legacy.refuse(found, "msg")
            if not strict and array_validator_for_kind("msg").is_valid(mapped):
                out = [decoding.structure_open(m) for m in mapped]
                parsed = mapped
    except SizeLimitError:
        raise  # (the conversation too deep as read: said at its part past the limit, not each message's)
    except (ValueError, TypeError, OverflowError):
        pass
    if out is None:
        out = []
        for index, item in enumerate(parsed):
            try:
                out.append(Msg.from_dict(item, strict=strict, notes=[]))
            except ValidationError as exc:
                raise exc.under(f"/{index}") from None
    _check_writable(parsed, out)
    _restore_usages(out)
    if found:
        legacy.tell(found, notes, "msg", 3)
    return out


def _restore_usages(msgs: list[Msg]) -> None:
    """What a trip through AgentScope Java dropped from each usage, back from its ``_chat_usage`` copy."""
    for index, m in enumerate(msgs):
        if m.usage is not None:
            try:
                restore_usage(m)
            except ValidationError as exc:
                raise exc.under(f"/{index}") from None


def _check_writable(parsed: list[Any], msgs: list[Msg]) -> None:
    """In a conversation blocks sit one level deeper than in a message: at the depth limit, a block read
    without its list or map keys (tool results' ``output``, ``metadata``) would be written with them one level
    too deep. Such input is refused (``max-depth``, at the list or map that crosses the limit as it would be
    written, as the readers name the part of their input that does); anything shallower is always writable."""
    # ([parsed] too deep for orjson, or for a lowered limit, which the writers hold too: a walk, where writing it
    # held a few copies of every long text)
    if deeper_than(parsed, limits.max_depth - 1):
        dumps_json(msgs, "msg")  # (raises SizeLimitError, at that list or map, when the written form is too deep)


def _in_array(problem: Problem, index: int) -> Problem:
    """A problem of ``[message]`` (pointer ``""`` or ``/0...``) said of the message at ``index`` of a conversation."""
    inner = problem.pointer[2:] if problem.pointer == "/0" or problem.pointer.startswith("/0/") else problem.pointer
    return Problem(inner, problem.rule, problem.message, problem.schema_location, problem.other_pointers).under(
        f"/{index}"
    )


def encode_messages(messages: Iterable[Msg]) -> bytes:
    """A conversation as a compact JSON array (each message exactly as :meth:`Msg.to_json_bytes`).

    Raises :class:`ValidationError` (rule ``type``) for anything but an iterable of :class:`Msg`: a string
    or a single message (pointer ``""``), a dict or other value in place of a message (``/<index>``;
    :meth:`Msg.from_dict` reads a dict), rather than writing what would not read back as a conversation."""
    if isinstance(messages, (str, bytes, bytearray, Mapping, Msg)) or not isinstance(messages, Iterable):
        raise ValidationError.single(
            "", "type", f"expected a list of Msg (a conversation), got {type(messages).__name__}", "msg"
        )
    msgs = messages if type(messages) is list else list(messages)
    if not all(map(isinstance, msgs, repeat(Msg))):  # the loop in C; the one below finds the culprit
        for index, m in enumerate(msgs):
            if not isinstance(m, Msg):
                hint = " (Msg.from_dict reads one)" if isinstance(m, Mapping) else ""
                raise ValidationError.single(
                    f"/{index}", "type", f"expected a Msg, got {type(m).__name__}{hint}", "msg"
                )
    try:
        return dumps_json(msgs, "msg")
    except ValidationError as exc:
        if exc.problems and exc.problems[0].pointer[1:2].isdigit():  # (already under its message's index)
            raise
        # a message changed after construction: said as its to_json says it, under its index (the schema of a
        # message would judge the whole array otherwise)
        for index, m in enumerate(msgs):
            try:
                dumps_json(m, "msg")
            except ValidationError as found:
                raise found.under(f"/{index}") from None
        # one that writes alone but is too deep one level down, in the array: said at its index (max-depth)
        for index, m in enumerate(msgs):
            try:
                dumps_json([m], "msg")
            except ValidationError as found:
                problems = [_in_array(p, index) for p in found.problems]
                raise type(found)(problems, found.kind) from None
        raise
