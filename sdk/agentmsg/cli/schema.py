"""``agentmsg schema``: list the schemas, print one, or bundle one with everything it uses."""

from __future__ import annotations

import argparse
from typing import Any, TextIO
from urllib.parse import urljoin

import orjson

from agentmsg import KINDS, closed_schema_documents, schema_documents
from agentmsg.cli._io import EXIT_OK, UsageError, exit_status


def bundle(name: str, *, strict: bool = False) -> dict[str, Any]:
    """One self-contained schema document for ``name``: every schema embedded under ``$defs`` with
    its own ``$id`` (a JSON Schema 2020-12 compound document), the root referring to ``name``; with
    ``strict``, of the closed variants."""
    docs = closed_schema_documents() if strict else schema_documents()
    root = docs[KINDS[name]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": urljoin(root["$id"], f"bundle/{KINDS[name]}"),  # beside the schemas: .../v1/bundle/msg.schema.json
        "title": f"{root.get('title', name)} (bundle)",
        "description": f"Self-contained bundle of {root['$id']} and every schema it uses.",
        "$ref": root["$id"],
        "$defs": {file.removesuffix(".schema.json"): doc for file, doc in sorted(docs.items())},
    }


def run(args: argparse.Namespace, out: TextIO) -> int:
    docs = schema_documents()
    if args.name is None and not args.bundle:
        for kind, file in sorted(KINDS.items()):
            out.write(f"{kind}\t{docs[file]['$id']}\n")
        return EXIT_OK
    name = args.name or "msg"
    if name not in KINDS:
        raise UsageError(f"unknown schema {name!r}; known: {', '.join(sorted(KINDS))}")
    if args.bundle:
        value = bundle(name, strict=args.strict)
    else:
        value = (closed_schema_documents() if args.strict else docs)[KINDS[name]]
    out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help="print a schema, or list them",
        description="Without NAME, list the schemas (kind and $id). With NAME, print that canonical JSON Schema "
        "(draft 2020-12); --bundle prints one self-contained document with every schema it uses, for other "
        "languages and tools; --strict prints the closed variant strict readers use (unknown keys rejected).",
        **exit_status("0  printed", "2  usage error (an unknown schema name)"),
    )
    p.add_argument("name", nargs="?", help=f"one of: {', '.join(sorted(KINDS))}")
    p.add_argument("--bundle", action="store_true", help="one self-contained document (for other languages)")
    p.add_argument("--strict", action="store_true", help="the closed variant (objects reject unknown keys)")
    p.set_defaults(func=run)
