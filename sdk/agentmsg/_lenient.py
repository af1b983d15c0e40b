"""Lenient reading: drop object keys the schema does not declare, keep every other rule."""

from __future__ import annotations

import copy
from typing import Any

from ._schemas import _validator, leaf_errors, schema_uri

_MAX_ROUNDS = 64


def drop_unknown_keys(data: Any, kind: str) -> Any:
    """Return ``data`` without the keys that ``additionalProperties: false`` rejects (a copy when
    anything is dropped). Other problems are left for validation to report."""
    validator = _validator(schema_uri(kind))
    copied = False
    for _ in range(_MAX_ROUNDS):
        try:
            if validator.is_valid(data):
                return data
            errors = list(leaf_errors(validator, data))
        except (ValueError, TypeError, OverflowError):
            return data
        extra = [
            (path, list(getattr(e.kind, "unexpected", []) or []))
            for path, e in errors
            if type(e.kind).__name__ == "AdditionalProperties"
        ]
        if not extra:
            return data
        if not copied:
            data, copied = copy.deepcopy(data), True
        for path, keys in extra:
            node = data
            for part in path:
                node = node[part]
            for key in keys:
                node.pop(key, None)
    return data
