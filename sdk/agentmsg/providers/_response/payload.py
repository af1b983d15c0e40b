"""Provider payload values read into event values: token counts and usage, base64 sources, fields of unexpected
types. Every provider parser reads its payloads through these (and :class:`~agentmsg.providers._response.builder.StreamBuilder`
says what they cannot read)."""

from __future__ import annotations

from typing import Any, Protocol

from agentmsg._codec.jsontext import json_type
from agentmsg._codec.schemas import BASE64_DATA, schema_documents
from agentmsg.providers._response.numbers import OVERFLOW, HugeNumber

__all__ = [
    "JAVA_INT_MAX",
    "LONG_MAX",
    "as_list",
    "as_object",
    "base64_source",
    "safe_int",
    "shown",
    "text_or_none",
    "usage_dict",
]


class CountSayer(Protocol):
    """What :func:`safe_int` tells of a value that is no count (a :class:`StreamBuilder`)."""

    def no_count(self, field: str, value: Any) -> None: ...

    def not_kept(self, key: str, message: str, choice: int = 0) -> None: ...


def text_or_none(value: Any) -> bool:
    """A string field of a payload that may be absent (None, or empty)."""
    return not value or type(value) is str


def base64_source(media_type: Any, data: Any) -> dict[str, Any] | None:
    """A base64 source (``schemas/source.schema.json``) for media a reply carries inline, or None when
    ``data`` is not standard base64 text (a MIME type missing is ``application/octet-stream``)."""
    if not isinstance(data, str) or not BASE64_DATA.fullmatch(data):
        return None
    mime = media_type if isinstance(media_type, str) and media_type else "application/octet-stream"
    return {"type": "base64", "media_type": mime, "data": data}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one (payload fields of unexpected types)."""
    return value if isinstance(value, list) else []


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (payload fields of unexpected types)."""
    return value if isinstance(value, dict) else {}


def safe_int(value: Any, b: CountSayer | None = None, field: str = "") -> int | None:
    """A token count as the usage schema wants it (a non-negative int), or None; counts saturate at 2^63-1 (an
    integer beyond 64 bits is such a count), and :func:`usage_dict` stops the counts AgentScope Java holds in an int
    at 2^31-1, as the reducer's sums do. Any other value but null
    (``"12"``, ``-3``, ``1.5``, ``true``, ``1e400``) is said by ``b``, when given, as ``field``'s
    (:meth:`~agentmsg.providers._response.builder.StreamBuilder.no_count`): a plain count costs nothing more."""
    if type(value) is int and value >= 0:
        return value if value <= LONG_MAX else LONG_MAX
    if type(value) is float and value >= 0 and value.is_integer():
        return min(int(value), LONG_MAX)
    if b is not None and value is not None:
        b.no_count(field, value)
    return None


LONG_MAX = 2**63 - 1
#: The most a count AgentScope Java 2.0.0's ChatUsage holds in an int may be: the usage schema's ``maximum`` of
#: ``inputTokens`` (``outputTokens`` and ``cachedTokens`` have the same), 2^31-1
JAVA_INT_MAX: int = schema_documents()["chat-usage.schema.json"]["properties"]["inputTokens"]["maximum"]


def shown(value: Any) -> str:
    """A value that is no token count, as a problem shows it (a string quoted, a number's text)."""
    kind = type(value)
    if kind is str:
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    if kind is bool:
        return "true" if value else "false"
    if kind is HugeNumber:
        return f"{value.text[:40]}..." if len(value.text) > 40 else value.text
    if (kind is int and value < -OVERFLOW) or (kind is float and value <= -OVERFLOW):
        return "a negative number beyond 64 bits"  # (orjson reads a stream's so as the nearest float: no digits)
    if kind is int or kind is float:
        text = repr(value)
        return f"{text[:40]}..." if len(text) > 40 else text
    return f"a JSON {json_type(value)}"


def usage_dict(
    input_tokens: int | None,
    output_tokens: int | None,
    cached: int | None = None,
    total: int | None = None,
    *,
    cache_write: int | None = None,
    reasoning: int | None = None,
    say: CountSayer | None = None,
    total_field: str = "",
) -> dict[str, Any] | None:
    """A ChatUsage dict from provider counts read by :func:`safe_int`, or their sums (only the counts given; the
    input, output and cached counts saturating at 2^31-1, which AgentScope Java holds in an int, the others at 2^63-1;
    totalTokens = input + output). ``cached``: input tokens read from the
    prompt cache (cachedTokens), ``cache_write``: written to it (cacheCreationInputTokens), both parts of the input
    count; ``reasoning``: output tokens spent on reasoning (reasoningTokens), a part of the output count
    (schemas/chat-usage.schema.json says which provider field is which). ``say``: the reply's builder, told when
    the provider's ``total`` (its field ``total_field``) is not input + output, which totalTokens is (as AgentScope
    Java derives it): the provider's total is not kept, said with both (rule not-kept)."""
    out: dict[str, Any] = {}
    i, o = input_tokens, output_tokens
    if say is not None and total is not None and i is not None and o is not None and total != i + o:
        say.not_kept(
            f"total/{total_field}",
            f"{total_field} ({total}) is not the input and output counts' sum ({i + o}): not kept (usage"
            " totalTokens is that sum, as AgentScope Java derives it)",
        )
    if i is not None:
        out["inputTokens"] = i = i if i <= JAVA_INT_MAX else JAVA_INT_MAX
    if o is not None:
        out["outputTokens"] = o = o if o <= JAVA_INT_MAX else JAVA_INT_MAX
    if cached is not None:
        out["cachedTokens"] = cached if cached <= JAVA_INT_MAX else JAVA_INT_MAX
    if i is not None and o is not None:
        out["totalTokens"] = min(i + o, LONG_MAX)
    elif total is not None:
        out["totalTokens"] = total if total <= LONG_MAX else LONG_MAX
    if cache_write is not None:
        out["cacheCreationInputTokens"] = cache_write if cache_write <= LONG_MAX else LONG_MAX
    if reasoning is not None:
        out["reasoningTokens"] = reasoning if reasoning <= LONG_MAX else LONG_MAX
    return out or None
