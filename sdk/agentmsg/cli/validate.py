"""``agentmsg validate``: check JSON files against a schema."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from .._schemas import KINDS, validate
from ..errors import Problem, ValidationError, pointer_of
from ._io import EXIT_INVALID, EXIT_OK, instances, print_problems, read_bytes


def _problems(instance: Any, kind: str) -> list[Problem]:
    try:
        validate(instance, kind)
    except ValidationError as exc:
        return list(exc.problems)
    return []


def run(args: argparse.Namespace, out: TextIO) -> int:
    status = EXIT_OK
    for path in args.files:
        data = read_bytes(path)
        for prefix, instance, error in instances(data):
            problems = [Problem("", "json", error)] if error else _problems(instance, args.kind)
            if print_problems(path, pointer_of(prefix), problems, out):
                status = EXIT_INVALID
    return status


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="validate JSON files against a schema")
    p.add_argument("--kind", default="msg", choices=sorted(KINDS), help="what the files hold (default: msg)")
    p.add_argument("files", nargs="+", metavar="FILE", help="JSON object, array or JSONL; '-' for stdin")
    p.set_defaults(func=run)
