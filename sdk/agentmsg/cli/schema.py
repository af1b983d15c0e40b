"""``agentmsg schema``: list the schemas, print one, or bundle one with everything it uses."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urljoin, urlsplit

import orjson

from agentmsg import KINDS, closed_schema_documents, schema_documents
from agentmsg.cli._io import EXIT_OK, UsageError, clip, exit_status, shown_path, write_output


def bundle(name: str, *, strict: bool = False) -> dict[str, Any]:
    """One self-contained schema document for ``name``: every schema embedded under ``$defs`` with
    its own ``$id`` (a JSON Schema 2020-12 compound document), the root referring to ``name``; with
    ``strict``, of the closed variants."""
    docs = closed_schema_documents() if strict else schema_documents()
    root = docs[KINDS[name]]
    dialect = "https://json-schema.org/draft/2020-12/schema"
    # (an embedded schema leaves out its $schema, the bundle's: python-jsonschema, meeting one, checks that schema
    # with its own validator class for the dialect, not the caller's, so check-jsonschema's ECMA-262 patterns gave
    # way to Python's re there, whose $ matches before a final line break: "AAAA\n" passed as base64)
    return {
        "$schema": dialect,
        "$id": urljoin(root["$id"], f"bundle/{KINDS[name]}"),  # beside the schemas: .../v1/bundle/msg.schema.json
        "title": f"{root.get('title', name)} (bundle)",
        "description": f"Self-contained bundle of {root['$id']} and every schema it uses.",
        "$ref": root["$id"],
        "$defs": {
            file.removesuffix(".schema.json"): {k: v for k, v in doc.items() if k != "$schema" or v != dialect}
            for file, doc in sorted(docs.items())
        },
    }


def write_tree(folder: Path) -> list[Path]:
    """Every schema, and the bundle of each, written under ``folder`` at the path of its ``$id``
    (``https://agentmsg.dev/schemas/v1/msg.schema.json`` -> ``folder/schemas/v1/msg.schema.json``), so a
    static server rooted at ``folder`` and reached at the ``$id``s' host answers every ``$ref``."""
    docs = schema_documents()
    values = [*docs.values(), *(bundle(kind) for kind in sorted(KINDS))]
    written = []
    for value in values:
        path = folder / urlsplit(value["$id"]).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(str(path), orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
        written.append(path)
    return written


def run(args: argparse.Namespace, out: TextIO) -> int:
    docs = schema_documents()
    if args.out is not None:
        if args.name is not None or args.bundle or args.strict:
            raise UsageError(
                "--out writes every schema and bundle (open, as their $ids name them): no NAME, --bundle or --strict"
            )
        try:
            written = write_tree(Path(args.out))
        except OSError as exc:  # the output, not an input: said as trim -o says it
            where = shown_path(exc.filename) if isinstance(exc.filename, str) else shown_path(args.out)
            raise UsageError(f"{where}: cannot write: {exc.strerror or exc}") from None
        for path in written:
            out.write(f"{path}\n")
        return EXIT_OK
    if args.name is None and not args.bundle and not args.strict:
        for kind, file in sorted(KINDS.items()):
            out.write(f"{kind}\t{docs[file]['$id']}\n")
        return EXIT_OK
    # (--bundle or --strict alone: the message's, as the help says; --strict alone listed and was ignored, unsaid.
    # An empty NAME is a name none has)
    name = "msg" if args.name is None else args.name
    if name not in KINDS:
        # (a name of bytes that are not UTF-8 as \xNN, as a file name is shown: repr wrote the surrogate, '\udcff')
        raise UsageError(f"unknown schema '{clip(shown_path(name), 60)}'; known: {', '.join(sorted(KINDS))}")
    if args.bundle:
        value = bundle(name, strict=args.strict)
    else:
        value = (closed_schema_documents() if args.strict else docs)[KINDS[name]]
    out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        description="Without NAME, list the schemas (kind and $id). With NAME, print that canonical JSON Schema "
        "(draft 2020-12); --bundle prints one self-contained document with every schema it uses, for other "
        "languages and tools; --strict prints the closed variant strict readers use (unknown keys rejected). "
        "--bundle or --strict without NAME: the message's (msg). "
        "--out DIR writes every schema and bundle at the path of its $id, for a static server rooted at DIR.",
        **exit_status("0  printed", "2  usage error (an unknown schema name), or --out DIR cannot be written"),
    )
    p.add_argument("name", nargs="?", help=f"one of: {', '.join(sorted(KINDS))}")
    p.add_argument("--bundle", action="store_true", help="one self-contained document (for other languages)")
    p.add_argument("--strict", action="store_true", help="the closed variant (objects reject unknown keys)")
    p.add_argument("--out", metavar="DIR", help="write every schema and bundle under DIR at the path of its $id")
    p.set_defaults(func=run)
