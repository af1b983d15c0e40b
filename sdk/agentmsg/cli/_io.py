"""What the commands share: reading inputs, splitting them into instances, printing problems, exit codes."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, TextIO

import orjson

from ..errors import Problem

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A usage problem (bad arguments, unreadable file): printed as ``agentmsg: ...``, exit 2."""


def read_bytes(path: str) -> bytes:
    """The whole content of a file, or of stdin for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def open_binary(path: str) -> IO[bytes]:
    """A binary stream for a file, or stdin for ``-`` (the caller closes files, not stdin)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def instances(data: bytes) -> Iterator[tuple[tuple[int, ...], Any, str | None]]:
    """(path prefix, instance, error) for each instance in a JSON value or JSONL text."""
    text = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as whole_error:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            yield (), None, f"not valid JSON: {whole_error}"
            return
        for index, line in enumerate(lines):  # JSONL: one instance per non-empty line
            try:
                yield (index,), orjson.loads(line), None
            except orjson.JSONDecodeError as exc:
                yield (index,), None, f"not valid JSON (record {index + 1}): {exc}"
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield (index,), item, None
    else:
        yield (), value, None


def print_problems(where: str, prefix: str, problems: Iterable[Problem], out: TextIO) -> int:
    """One ``FILE:POINTER: message [rule]`` line per problem (``FILE: message [rule]`` for the whole
    instance); returns how many were printed."""
    n = 0
    for p in problems:
        pointer = prefix + p.pointer
        out.write(f"{where}:{pointer}: {p.message} [{p.rule}]\n" if pointer else f"{where}: {p.message} [{p.rule}]\n")
        n += 1
    return n
