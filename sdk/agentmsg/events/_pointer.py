"""JSON pointers into events and blocks: leaving out the values a schema rejected (copy-on-write)."""

from __future__ import annotations

from typing import Any


def tokens(pointer: str) -> list[str | int]:
    out: list[str | int] = []
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        # An array index is a plain decimal number; anything else (including "01") is an object key.
        is_index = token.isascii() and token.isdigit() and len(token) < 19 and str(int(token)) == token
        out.append(int(token) if is_index else token)
    return out


def without(node: Any, path: list[str | int]) -> Any:
    """A copy of ``node`` without the value at ``path`` (only the containers on the path are copied)."""
    head, rest = path[0], path[1:]
    if isinstance(node, dict) and not isinstance(head, str) and head not in node:
        head = str(head)  # an object key that looks like an index ("0")
    if isinstance(node, dict) and head in node:
        copy = dict(node)
        if rest:
            copy[head] = without(node[head], rest)
        else:
            del copy[head]
        return copy
    if isinstance(node, list) and isinstance(head, int) and head < len(node):
        items = list(node)
        if rest:
            items[head] = without(node[head], rest)
        else:
            del items[head]
        return items
    return node  # already removed with its parent


def deepest_last_first(paths: list[list[str | int]]) -> list[list[str | int]]:
    """Paths in the order to remove them: later list items before earlier ones (so that removing one
    does not shift the others), children before parents."""
    return sorted(paths, key=lambda t: [(0, x, "") if isinstance(x, int) else (1, 0, x) for x in t], reverse=True)


def replaced(node: Any, path: list[str | int], value: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``path`` (only the containers on the path are copied)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict) and head in node:
        copy = dict(node)
        copy[head] = replaced(node[head], rest, value)
        return copy
    if isinstance(node, list) and isinstance(head, int) and head < len(node):
        items = list(node)
        items[head] = replaced(node[head], rest, value)
        return items
    return node
