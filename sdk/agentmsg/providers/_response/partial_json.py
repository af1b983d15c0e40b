"""JSON text from Gemini's partial function-call arguments (``partialArgs``: path, value, willContinue)."""

from __future__ import annotations

from typing import Any

import orjson

from agentmsg._codec.limits import limits
from agentmsg.providers._response.numbers import HugeNumber

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
            elif inner.isascii() and inner.isdigit():  # (not "²": int() reads only ASCII digits here)
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


def _dumps(value: Any) -> str:
    return orjson.dumps(value, default=_joined).decode()


class _Pieces:
    """A string value of the held object (:attr:`json_fragment_writer._tree`) that arrives in pieces, joined
    when written: appending to a ``str`` in a dict copies it each time (quadratic in a long streamed value)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts


def _joined(value: Any) -> Any:
    if isinstance(value, _Pieces):
        return "".join(value.parts)
    if type(value) is HugeNumber:  # a number beyond a double's range (1e400): written as it came
        return orjson.Fragment(value.text)
    raise TypeError(f"not JSON: {type(value).__name__}")  # (not reached: the tree holds JSON values)


class json_fragment_writer:
    """Writes a JSON object as text, incrementally, from (path, value, more) updates: Gemini's streamed
    function-call arguments (``partialArgs``). ``add`` returns the text to append; ``close`` the rest.

    The object is the one every update builds, each path's last value winning (as a JSON parser reads a
    repeated key): an update that cannot be appended to the text written so far (a path given again without
    ``willContinue`` on the one before, an array index out of order, a container already closed, a path through
    a value of another kind) is said in :attr:`notes`, and from then on the updates are held and written at
    :meth:`close` as the whole values of the top-level keys they touched, after the text already streamed. Streamed
    text is never taken back, and a key is never written twice (the text is one JSON object, each key once): a
    top-level key the text already holds keeps its streamed value there, and :meth:`changed` is then the object
    of every update, for the call's ``input``."""

    __slots__ = (
        "_changed",
        "_open_string",
        "_padded",
        "_received",
        "_redo",
        "_root_items",
        "_stack",
        "_started",
        "_tree",
        "notes",
    )

    def __init__(self) -> None:
        # the open containers, root first: (path, "{"/"[", the keys written (object) or items written (array))
        self._stack: list[tuple[tuple[str | int, ...], str, Any]] = []
        self._open_string: tuple[str | int, ...] | None = None
        self._started = False
        self._tree: dict[str | int, Any] = {}  # every update applied, the last value of a path winning
        self._redo: dict[str | int, None] | None = None  # held: the top-level keys to write at close (None: none)
        self._root_items = False  # the text has an item at the top level
        self._received = 0  # the size of the updates received (paths and values)
        self._padded = 0  # the nulls arrays were padded with (at most _received: see add)
        self._changed = False  # a held update touched a top-level key the text holds (see changed)
        #: (rule, message) of updates that could not be appended (said by the caller, then cleared)
        self.notes: list[tuple[str, str]] = []

    def add(self, path: str, value: Any, *, is_string: bool, more: bool) -> str:
        parts = tuple(_path_parts(path)) or (path,)
        if isinstance(parts[0], int):  # the arguments are an object: a top-level index is a key
            parts = (str(parts[0]), *parts[1:])
        self._received += len(path) + (len(value) if isinstance(value, str) else 1)
        if len(parts) >= limits.max_depth - 1:  # (deeper than a message holds: the state per level stays bounded)
            self.notes.append(
                ("max-depth", f"argument path {_show(parts)} is {len(parts)} levels deep (limits.max_depth): skipped")
            )
            return ""
        if not (self._open_string == parts and is_string):
            gap, where = self._gap(parts)
            if gap:
                # An index beyond its array's end: the array is padded with nulls, as long as the padding stays
                # within the size of the updates received (an index of 10**9 would take memory the input never
                # paid for): beyond that, the update is skipped, and said.
                if self._padded + gap > self._received:
                    self.notes.append(("order", f"argument path {_show(parts)} skips array items ({where}): skipped"))
                    return ""
                self._padded += gap
        out: list[str] = []
        if not self._started:
            self._started = True
            self._stack.append(((), "{", set()))
            out.append("{")
        if self._open_string is not None:
            if self._open_string == parts and is_string:  # the next piece of the open string
                self._append_string(parts, value)
                if self._redo is None:
                    out.append(_dumps(value)[1:-1] if value else "")
                    if not more:
                        out.append('"')
                if not more:
                    self._open_string = None
                return "".join(out)
            if self._redo is None:
                out.append('"')
            self._open_string = None
        if self._redo is None:
            why = self._not_appendable(parts)
            if why is not None:
                self.notes.append(why)
                # close the text down to the top-level object; from here on, updates are held (see close)
                while len(self._stack) > 1:
                    out.append("}" if self._stack.pop()[1] == "{" else "]")
                self._redo = {}
            else:
                out.append(self._write(parts, value, is_string, more))
        self._set(parts, value)
        if self._redo is not None:
            self._redo[parts[0]] = None
        if is_string and more:
            self._open_string = parts
        return "".join(out)

    def _write(self, parts: tuple[str | int, ...], value: Any, is_string: bool, more: bool) -> str:
        """The text of an update that can be appended (see :meth:`_not_appendable`)."""
        out: list[str] = []
        parent, last = parts[:-1], parts[-1]
        while len(self._stack[-1][0]) > len(parent) or self._stack[-1][0] != parent[: len(self._stack[-1][0])]:
            out.append("}" if self._stack.pop()[1] == "{" else "]")  # containers this value is not inside
        for level in range(len(self._stack[-1][0]), len(parent)):  # open the containers down to its parent
            out.append(self._item(parent[level]))
            kind = "[" if isinstance(parts[level + 1], int) else "{"
            out.append(kind)
            self._stack.append((parent[: level + 1], kind, set() if kind == "{" else [0]))
        out.append(self._item(last))
        if is_string:
            out.append('"' + (_dumps(value)[1:-1] if value else ""))
            if not more:
                out.append('"')
        else:
            out.append(_dumps(value))
        return "".join(out)

    def _item(self, key: str | int) -> str:
        path, kind, seen = self._stack[-1]
        if kind == "[":
            sep = "," if seen[0] else ""
            seen[0] += 1
            return sep
        sep = "," if seen else ""
        seen.add(key)
        if not path:
            self._root_items = True
        return sep + _dumps(str(key)) + ":"

    def _not_appendable(self, parts: tuple[str | int, ...]) -> tuple[str, str] | None:
        """Why the value at ``parts`` cannot be appended to the text written so far (rule, message), or None."""
        shown = _show(parts)
        node: Any = self._tree
        for level, key in enumerate(parts):
            open_here = level < len(self._stack) and self._stack[level][0] == parts[:level]
            if isinstance(node, dict) != isinstance(key, str):
                kind = "an object" if isinstance(node, dict) else "an array"
                return "order", f"argument path {shown} goes through {_show(parts[:level])}, which is {kind}"
            present = key in node if isinstance(key, str) else key < len(node)
            if not present:
                if not open_here:
                    return "order", f"argument path {shown} comes after {_show(parts[:level])} was complete"
                if isinstance(node, list) and key != len(node):
                    return "order", f"argument path {shown} comes with {len(node)} item(s) in its array"
                if any(isinstance(k, int) and k != 0 for k in parts[level + 1 :]):
                    return "order", f"argument path {shown} starts an array at an index other than 0"
                return None
            if level == len(parts) - 1:
                return "duplicate", f"argument path {shown} is given again (without willContinue before)"
            node = node[key]
            if not isinstance(node, (dict, list)):
                return "order", f"argument path {shown} goes through {_show(parts[: level + 1])}, a value"
        return "duplicate", f"argument path {shown} is given again"  # (not reached: a path has a last key)

    def _gap(self, parts: tuple[str | int, ...]) -> tuple[int, str]:
        """The nulls the update at ``parts`` would pad arrays with (an index beyond an array's end), and where."""
        node: Any = self._tree
        gap, where = 0, ""
        for level, key in enumerate(parts):
            if isinstance(key, int):
                size = len(node) if isinstance(node, list) else 0  # (a value of another kind is replaced)
                if key > size:
                    gap += key - size
                    where = where or f"index {key} of {_show(parts[:level])}, which holds {size} item(s)"
            if isinstance(node, dict) and isinstance(key, str):
                node = node.get(key)
            elif isinstance(node, list) and isinstance(key, int):
                node = node[key] if key < len(node) else None
            else:
                node = None  # (replaced by a container of the path's kind: empty)
        return gap, where

    def _set(self, parts: tuple[str | int, ...], value: Any) -> None:
        """Apply an update to :attr:`_tree`: the last value of a path wins, as a JSON parser reads a repeated key
        (a value on the way that is not a container of the path's kind is replaced by one; an array is padded
        with nulls up to the index, within the bound :meth:`add` keeps)."""
        node: Any = self._tree
        for level, key in enumerate(parts):
            if isinstance(node, dict) != isinstance(key, str):  # (not at the top: its keys are text)
                node = self._replace(parts[:level], [] if isinstance(key, int) else {})
            if isinstance(node, list):
                assert isinstance(key, int)
                node.extend([None] * (key + 1 - len(node)))
            if level == len(parts) - 1:
                node[key] = value
                return
            child = node.get(key) if isinstance(node, dict) else node[key]
            if not isinstance(child, (dict, list)):
                child = [] if isinstance(parts[level + 1], int) else {}
                node[key] = child
            node = child

    def _replace(self, parts: tuple[str | int, ...], new: Any) -> Any:
        node: Any = self._tree
        for key in parts[:-1]:
            node = node[key]
        node[parts[-1]] = new
        return new

    def _append_string(self, parts: tuple[str | int, ...], value: Any) -> None:
        node: Any = self._tree
        for key in parts[:-1]:
            node = node[key]
        last = node[parts[-1]]
        if isinstance(last, _Pieces):
            last.parts.append(value or "")
        else:
            node[parts[-1]] = _Pieces([last if isinstance(last, str) else "", value or ""])

    def pending(self, *, again: bool = True) -> str:
        """What is held (see :meth:`close`), without closing the object: for a call left unfinished, whose
        arguments are kept as they came (``again``: a top-level key the text holds is written again, its later
        value kept in the only place an unfinished call has; else it is left to :meth:`changed`)."""
        if not self._redo:
            return ""
        out = []
        written = self._stack[0][2] if self._stack else set()  # the top-level keys the text holds
        for key in self._redo:
            if key in written:
                self._changed = True
                if not again:
                    continue
            out.append(("," if self._root_items else "") + _dumps(str(key)) + ":" + _dumps(self._tree[key]))
            self._root_items = True
            written.add(key)
        self._redo = {}
        return "".join(out)

    def changed(self) -> dict[str, Any] | None:
        """The object of every update when the text (closed) is not it: a held update touched a top-level key
        the text already holds, which keeps its streamed value there (a key is written once); else None."""
        if not self._changed:
            return None
        try:
            value: dict[str, Any] = orjson.loads(_dumps(self._tree))
        except orjson.JSONDecodeError:  # a number beyond a double's range in it (1e400): no input a message holds,
            return None  # the text is the call's arguments (kept raw, with argumentsError, where it holds one)
        return value

    def close(self) -> str:
        if not self._started:
            return ""
        if self._redo is not None:
            self._open_string = None
            return self.pending(again=False) + "}"
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            out.append("}" if self._stack.pop()[1] == "{" else "]")
        return "".join(out)


def _show(parts: tuple[str | int, ...]) -> str:
    """A path as JSONPath, for a message."""
    text = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in parts)
    return text if len(text) <= 80 else text[:80] + "..."
