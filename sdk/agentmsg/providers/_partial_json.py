"""JSON text from Gemini's partial function-call arguments (``partialArgs``: path, value, willContinue)."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["json_fragment_writer"]


def _path_parts(path: str) -> list[str | int]:
    """``$.a.b[0]['c d']`` -> ["a", "b", 0, "c d"] (JSONPath as Gemini's partialArgs use it)."""
    out: list[str | int] = []
    i = 1 if path.startswith("$") else 0
    n = len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            j = i + 1
            while j < n and path[j] not in ".[":
                j += 1
            out.append(path[i + 1 : j])
            i = j
        elif ch == "[":
            j = path.find("]", i)
            if j < 0:
                out.append(path[i + 1 :])
                break
            inner = path[i + 1 : j]
            if inner[:1] in ("'", '"') and inner[-1:] == inner[:1] and len(inner) >= 2:
                out.append(inner[1:-1])
            elif inner.isdigit():
                out.append(int(inner))
            else:
                out.append(inner)
            i = j + 1
        else:
            j = i
            while j < n and path[j] not in ".[":
                j += 1
            out.append(path[i:j])
            i = j
    return out


class json_fragment_writer:
    """Writes a JSON object as text, incrementally, from (path, value, more) updates: Gemini's streamed
    function-call arguments (``partialArgs``). ``add`` returns the text to append; ``close`` the rest."""

    __slots__ = ("_open_string", "_stack", "_started")

    def __init__(self) -> None:
        self._stack: list[tuple[list[str | int], str, bool]] = []  # (path, "{"/"[", has items)
        self._open_string: list[str | int] | None = None
        self._started = False

    def add(self, path: str, value: Any, *, is_string: bool, more: bool) -> str:
        parts = _path_parts(path) or [path]
        out: list[str] = []
        if not self._started:
            self._started = True
            self._stack.append(([], "{", False))
            out.append("{")
        if self._open_string is not None:
            if self._open_string == parts and is_string:
                out.append(orjson.dumps(value).decode()[1:-1] if value else "")
                if not more:
                    out.append('"')
                    self._open_string = None
                return "".join(out)
            out.append('"')
            self._open_string = None
        parent, last = parts[:-1], parts[-1]
        # close containers that are not ancestors of this value
        while len(self._stack) > 1 and self._stack[-1][0] != parent[: len(self._stack[-1][0])]:
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        while len(self._stack) > 1 and len(self._stack[-1][0]) > len(parent):
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        # open the containers down to the parent
        depth = len(self._stack[-1][0])
        for level in range(depth, len(parent)):
            key = parent[level]
            out.append(self._item(key))
            child_kind = "[" if isinstance(parent[level + 1] if level + 1 < len(parent) else last, int) else "{"
            out.append(child_kind)
            self._stack.append((parent[: level + 1], child_kind, False))
        out.append(self._item(last))
        if is_string:
            out.append('"' + (orjson.dumps(value).decode()[1:-1] if value else ""))
            if more:
                self._open_string = parts
            else:
                out.append('"')
        else:
            out.append(orjson.dumps(value).decode())
        return "".join(out)

    def _item(self, key: str | int) -> str:
        path, kind, has = self._stack[-1]
        self._stack[-1] = (path, kind, True)
        sep = "," if has else ""
        if kind == "[":
            return sep
        return sep + orjson.dumps(str(key)).decode() + ":"

    def close(self) -> str:
        if not self._started:
            return ""
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            _, kind, _ = self._stack.pop()
            out.append("}" if kind == "{" else "]")
        return "".join(out)
