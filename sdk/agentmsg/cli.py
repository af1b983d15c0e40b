"""The ``agentmsg`` command line.

    agentmsg validate [--kind KIND] FILE...   check JSON (object, array or JSONL; '-' = stdin)
    agentmsg schema [NAME] [--bundle]         print a schema (bundle: one self-contained document)

``validate`` prints one ``FILE:POINTER: problem [rule]`` line per problem and exits 0 when every
instance is valid, 1 when any is invalid, 2 on usage errors or unreadable files. In an array or a
JSONL file, instance N (0-based) is addressed by the pointer prefix ``/N``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import orjson

from . import __version__
from ._schemas import BASE_URI, KINDS, schema_documents, validate
from .errors import Problem, ValidationError, pointer_of

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class _UsageError(Exception):
    pass


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise _UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _instances(data: bytes) -> Iterator[tuple[tuple[int, ...], Any, str | None]]:
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


def _problems(instance: Any, kind: str) -> list[Problem]:
    try:
        validate(instance, kind)
    except ValidationError as exc:
        return list(exc.problems)
    return []


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    status = EXIT_OK
    for path in args.files:
        data = _read(path)
        for prefix, instance, error in _instances(data):
            problems = [Problem("", "json", error)] if error else _problems(instance, args.kind)
            for p in problems:
                status = EXIT_INVALID
                out.write(f"{path}:{pointer_of(prefix)}{p.pointer}: {p.message} [{p.rule}]\n")
    return status


def bundle(name: str) -> dict[str, Any]:
    """One self-contained schema document for ``name``: every schema embedded under ``$defs`` with
    its own ``$id`` (a JSON Schema 2020-12 compound document), the root referring to ``name``."""
    docs = schema_documents()
    root = docs[KINDS[name]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": BASE_URI + f"bundle/{KINDS[name]}",
        "title": f"{root.get('title', name)} (bundle)",
        "description": f"Self-contained bundle of {root['$id']} and every schema it uses.",
        "$ref": root["$id"],
        "$defs": {file.removesuffix(".schema.json"): doc for file, doc in sorted(docs.items())},
    }


def cmd_schema(args: argparse.Namespace, out: TextIO) -> int:
    docs = schema_documents()
    if args.name is None and not args.bundle:
        for kind, file in sorted(KINDS.items()):
            out.write(f"{kind}\t{docs[file]['$id']}\n")
        return EXIT_OK
    name = args.name or "msg"
    if name not in KINDS:
        raise _UsageError(f"unknown schema {name!r}; known: {', '.join(sorted(KINDS))}")
    value = bundle(name) if args.bundle else docs[KINDS[name]]
    out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    schema_documents()  # registers every shipped schema in KINDS
    parser = argparse.ArgumentParser(prog="agentmsg", description="Schema-first messages and events for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentmsg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="validate JSON files against a schema")
    p.add_argument("--kind", default="msg", choices=sorted(KINDS), help="what the files hold (default: msg)")
    p.add_argument("files", nargs="+", metavar="FILE", help="JSON object, array or JSONL; '-' for stdin")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("schema", help="print a schema, or list them")
    p.add_argument("name", nargs="?", help=f"one of: {', '.join(sorted(KINDS))}")
    p.add_argument("--bundle", action="store_true", help="one self-contained document (for other languages)")
    p.set_defaults(func=cmd_schema)
    try:  # event commands (reduce, events) live with the event code
        events_cli = importlib.import_module("agentmsg.events.cli")
    except ImportError:
        pass
    else:
        events_cli.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
        return int(exc.code or 0)
    try:
        return int(args.func(args, sys.stdout))
    except _UsageError as exc:
        print(f"agentmsg: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
