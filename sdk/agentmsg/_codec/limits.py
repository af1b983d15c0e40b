"""The limits every input is held to, in one place (``agentmsg.limits``).

Input beyond a limit raises :class:`~agentmsg.SizeLimitError` (a ``ValidationError`` whose rule names the
limit) or, where the reader is tolerant (the event reducer), is recorded as a problem with that rule.
Limits are process-wide and may be changed at run time (``agentmsg.limits.max_bytes = 1 << 20``, or
dict-style ``agentmsg.limits["max_bytes"]``); values are checked when set: an int from 1 to 2**62 (else a
ValidationError at ``/<name>``; a name that is no limit: an :class:`~agentmsg.UnknownNameError`, a KeyError too).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agentmsg.errors import UnknownNameError, ValidationError, require_count

__all__ = ["MAX_LIMIT", "MAX_WRITABLE_DEPTH", "Limits", "limits", "require_limit"]

#: The deepest nesting orjson writes (arrays and objects): no accepted value may be deeper, so that
#: whatever is accepted can be written back.
MAX_WRITABLE_DEPTH = 254


#: The largest a limit may be (4 EiB): no input is longer, and the C kernels hold limits in 64-bit signed
#: integers, with room to add to them (a limit past 2**63 raised a bare OverflowError where a stream was read).
MAX_LIMIT = 1 << 62


def require_limit(value: object, name: str, said: str, least: int = 1) -> int:
    """A limit (bytes, a count) given at ``/<name>``: an int from ``least`` to :data:`MAX_LIMIT`, else a
    ValidationError (a ValueError, as it was) saying ``said`` (rule ``type``, ``minimum`` or ``maximum``). Returns
    it as an int. (``agentmsg.limits`` and the SSE decoder's own limits.)"""
    count = require_count(value, name, least, said)
    if count > MAX_LIMIT:
        raise ValidationError.single(f"/{name}", "maximum", f"{said}, not {count}")
    return count


def _positive(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    """A limit is an int from 1 to :data:`MAX_LIMIT` (:func:`require_limit`)."""
    require_limit(value, attribute.name, f"limits.{attribute.name} is an int from 1 to 2**62")


def _depth(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    _positive(instance, attribute, value)
    if value > MAX_WRITABLE_DEPTH:
        raise ValidationError.single(
            "/max_depth",
            "maximum",
            f"limits.max_depth may not exceed {MAX_WRITABLE_DEPTH}: deeper values could not be written back",
        )


@attrs.define(slots=True, on_setattr=attrs.setters.validate)
class Limits:
    """``max_bytes``: the largest JSON text read, in UTF-8 bytes (rule ``max-bytes``; default 256 MiB).
    ``max_depth``: the deepest nesting of arrays and objects, on read and on write (rule ``max-depth``;
    default and maximum 254, the depth orjson writes).
    ``max_event_bytes``: one event in a stream: a JSONL line, an SSE line, an SSE event's data (rules
    ``max-event-bytes`` / ``max-line-bytes``; default 64 MiB).
    ``max_open_blocks``: blocks, tool calls and tool results one reply may have open at once in the
    event reducer (rule ``max-open-blocks``; default 1024).
    :attr:`MOST` and :attr:`MOST_DEPTH`: the largest value a limit and ``max_depth`` take (for a front end, such as
    the CLI's options, that checks a value before setting it)."""

    #: the largest value any limit takes (:data:`MAX_LIMIT`, 2**62)
    MOST: ClassVar[int] = MAX_LIMIT
    #: the largest ``max_depth`` (:data:`MAX_WRITABLE_DEPTH`, 254: the depth orjson writes)
    MOST_DEPTH: ClassVar[int] = MAX_WRITABLE_DEPTH

    max_bytes: int = attrs.field(default=256 * 1024 * 1024, validator=_positive)
    max_depth: int = attrs.field(default=MAX_WRITABLE_DEPTH, validator=_depth)
    max_event_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=_positive)
    max_open_blocks: int = attrs.field(default=1024, validator=_positive)

    def __getitem__(self, name: str) -> int:
        return getattr(self, _known(name))  # type: ignore[no-any-return]

    def __setitem__(self, name: str, value: int) -> None:
        setattr(self, _known(name), value)


def _known(name: str) -> str:
    """``name`` when it names a limit; else an :class:`~agentmsg.UnknownNameError` (a KeyError, as it was) listing
    the limits."""
    names = attrs.fields_dict(Limits)
    if not isinstance(name, str) or name not in names:
        raise UnknownNameError(f"no limit {name!r}: one of {', '.join(names)}")
    return name


#: The process-wide limits.
limits = Limits()
