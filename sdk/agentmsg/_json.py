"""JSON text <-> parsed values, with the SDK's limits and errors (never a bare decode error)."""

from __future__ import annotations

from typing import Any

import orjson

from ._limits import limits
from .errors import Problem, SizeLimitError, ValidationError

JsonInput = str | bytes | bytearray | memoryview


def loads(data: JsonInput, kind: str | None = None) -> Any:
    """Parse JSON text. Raises :class:`ValidationError` (rule ``json``) for malformed or truncated
    text and :class:`SizeLimitError` beyond ``limits['max_bytes']`` or 1024 levels of nesting."""
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise ValidationError(
            [Problem("", "json", f"expected JSON text (str or bytes), got {type(data).__name__}")], kind
        )
    size = len(data)
    if size > limits["max_bytes"]:
        raise SizeLimitError(
            [Problem("", "max-bytes", f"{size} bytes exceeds the limit of {limits['max_bytes']}")], kind
        )
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "recursion" in str(exc).lower() or "depth" in str(exc).lower():
            raise SizeLimitError([Problem("", "max-depth", "JSON nested deeper than 1024 levels")], kind) from None
        raise ValidationError([Problem("", "json", f"not valid JSON: {exc}")], kind) from None


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)
