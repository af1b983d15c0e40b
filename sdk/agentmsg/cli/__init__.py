"""The ``agentmsg`` command line: one module per command group, sharing their I/O helpers (``_io``). It is
built on the public API only (``agentmsg``, ``agentmsg.events``, ``agentmsg.providers``, ...), and names no
provider: the providers, their key variables and stream flags come from the registry
(``tests/cli/test_public.py`` checks both).

    agentmsg validate [--kind KIND] FILE...   check messages, conversations, event streams (kind told from each file)
    agentmsg schema [NAME] [--bundle]         print a schema (bundle: one self-contained document)
    agentmsg reduce FILE                      events (JSONL, SSE or a JSON array) -> one message JSON per line
    agentmsg events FILE [--sse]              messages -> their event stream
    agentmsg format --provider P MESSAGES     conversation -> provider request body (diagnostics on stderr)
    agentmsg count --provider P MESSAGES      conversation -> its input tokens for the provider (JSON), offline
    agentmsg trim --budget N --provider P F   conversation -> the same cut to a token budget (removals on stderr)
    agentmsg parse --provider P [--stream] F  provider response / stream -> message JSON (or --events)
    agentmsg chat --provider P PROMPT         stream a reply live from a provider
    agentmsg serve EVENTS_FILE [--port N]     the event viewer (a page rendering the reply live)

Each command module has ``add_parser(subparsers)``; the parsed arguments carry ``func(args, out) -> exit code``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from agentmsg import __version__, schema_documents
from agentmsg.cli import chat, count, events, format, parse, schema, serve, trim, validate
from agentmsg.cli._io import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    shown_path,
)

__all__ = ["build_parser", "main"]

COMMANDS = (validate, schema, events, format, count, trim, parse, chat, serve)


def build_parser() -> argparse.ArgumentParser:
    schema_documents()  # registers every shipped schema in KINDS
    parser = argparse.ArgumentParser(prog="agentmsg", description="Schema-first messages and events for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentmsg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    helps = {action.dest: action.help for action in sub._choices_actions}
    for name, subparser in sub.choices.items():  # every --help page says what the command does
        if not subparser.description and helps.get(name):
            subparser.description = str(helps[name])[:1].upper() + str(helps[name])[1:] + "."
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None or sys.stderr is None:  # started with `>&-` or `2>&-`
        return _closed_at_start()
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # said with the command's own usage line (argparse gives the top-level one)
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
        return int(exc.code or 0)
    try:
        code = int(args.func(args, sys.stdout))
        sys.stdout.flush()  # here, not at the interpreter's exit: a full disk or a closed pipe is said below
        return code
    except UsageError as exc:
        print(f"agentmsg: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as a tool killed by SIGPIPE does
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # what reads inputs says which file; anything else is the output (a full disk)
        name = shown_path(exc.filename) if isinstance(exc.filename, str) else exc.filename
        where = f"{name}: cannot read" if exc.filename else "cannot write the output"
        print(f"agentmsg: {where}: {exc.strerror or exc}", file=sys.stderr)
        if not exc.filename:
            _quiet_stdout()
        return EXIT_USAGE
    except RecursionError:  # a reader without its own depth limit: still one line, never a traceback
        print(
            f"agentmsg: {args.command}: the input is nested too deeply to read (limits.max_depth) [max-depth]",
            file=sys.stderr,
        )
        return EXIT_INVALID
    except KeyboardInterrupt:  # Ctrl-C: serve stops (its banner says so); any other command was cut short
        if args.command == "serve":
            return EXIT_OK
        print("agentmsg: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _closed_at_start() -> int:
    """stdout or stderr closed when the command started: Python sets it to None, and a print to a None stderr
    writes to stdout (a diagnostic among the output). Nothing is run, exit 2: with stdout closed, stderr says so;
    with stderr closed, nothing is said (stdout is for the output alone)."""
    if sys.stderr is not None:
        print(
            "agentmsg: the standard output is closed: nothing can be written (to discard it: >/dev/null)",
            file=sys.stderr,
        )
    return EXIT_USAGE


def _quiet_stdout() -> None:
    """After a broken pipe: what is still buffered for stdout goes nowhere, so that the interpreter's last
    flush does not print 'Exception ignored ... BrokenPipeError' (Python's documented remedy)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is no file (captured in-process): nothing will be flushed to a pipe
        pass
