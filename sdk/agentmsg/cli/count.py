"""``agentmsg count``: a conversation's input tokens for a provider, offline.

    agentmsg count --provider NAME [--model M] [--tools FILE] [--output-format FORMAT] MESSAGES.json

MESSAGES.json is what ``agentmsg format`` reads (a JSON array of messages, JSON Lines, or one message). Prints one
JSON object on stdout: ``provider``, ``model``, ``total``, ``messages`` (each message's tokens, in order),
``tools``, ``overhead``, ``method`` (``tokenizer:<vocabulary>`` or ``estimate``), ``error`` (the count's stated
relative error; null when exact) and ``missing`` (the package that would count exactly, not installed; null when
none would): ``agentmsg.context.count_tokens`` (docs/context.md). Problems of the input go to stderr, one JSON line
each (``pointer``, ``rule``, ``kind``, ``message``) or in the ``--output-format`` asked for; exit 1 when the input is
invalid (tools the provider's formatter refuses too). What the formatter says of the request counted
(``thinking-dropped``, ``tool-key-dropped``...; or what it would refuse it for, each a note saying so) is said on
stderr as ``agentmsg format`` says it, and does not change the exit status. A count
that ``missing`` makes an estimate says so on stderr too (kind ``hint``), with the command that
installs the package.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import orjson

from agentmsg.cli._conversation import (
    TOOLS_USAGE_ERRORS,
    conversation_hint,
    read_conversation,
    read_inputs,
    run_command,
    say_reply_hint,
    say_request,
)
from agentmsg.cli._install import package_command
from agentmsg.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    ProviderNames,
    exit_status,
    limit_options,
)
from agentmsg.cli._machine import Diagnostics, output_format_option
from agentmsg.context import count_tokens
from agentmsg.errors import Problem, ValidationError
from agentmsg.providers import get


def run(args: argparse.Namespace, out: TextIO) -> int:
    return run_command(args, out, "count", args.messages, _run)


def _run(args: argparse.Namespace, out: TextIO, diag: Diagnostics) -> int:
    inputs = read_inputs(args.messages, "MESSAGES.json", args.tools, diag)
    if inputs is None:
        return EXIT_INVALID
    data, tools = inputs
    notes: list[Problem] = []
    try:
        messages = read_conversation(data, notes)
        for p in notes:  # legacy keys, read in their current form
            diag.say(p, "note", False)
        counted = count_tokens(messages, provider=args.provider, model=args.model, tools=tools)
    except ValidationError as exc:
        for p in exc.problems:
            diag.say(p, "error", True)
        hint = conversation_hint(data, args.messages)
        if hint is not None:  # what the input holds, when it is no conversation (kind "hint")
            diag.say(Problem("", "hint", hint), "hint", False)
        return EXIT_INVALID
    model = args.model or get(args.provider).spec.default_model
    doc: dict[str, Any] = {"provider": args.provider, "model": model, **counted.to_dict()}
    out.write(orjson.dumps(doc).decode() + "\n")
    say_request(diag, args.provider, messages, args.model, tools)  # (what the request counted loses, as format says)
    say_reply_hint(diag, data, args.messages)
    if counted.missing is not None:  # (the provider's tokenizer runs offline, but its package is not installed)
        hint = (
            f"the count is an estimate: {counted.missing}, which counts {args.provider}'s tokens exactly, is not "
            f"installed: {package_command(counted.missing)}"
        )
        diag.say(Problem("", "hint", hint), "hint", False)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "count",
        description="Count a conversation's input tokens for a provider, offline: per message, tools, framing.",
        **exit_status(
            "0  the count is printed (the formatter's diagnostics and legacy-key notes on stderr do not count)",
            "1  the input is invalid or beyond the limits: the problems on stderr, no count",
            f"2  usage error, or a file that cannot be read ({TOOLS_USAGE_ERRORS})",
        ),
    )
    p.add_argument("--provider", required=True, choices=ProviderNames(), help="the provider counted for")
    p.add_argument("--model", help="model name (default: the provider's default); picks the vocabulary and rates")
    p.add_argument("--tools", metavar="FILE", help="JSON array of tool definitions (JSON Schema parameters)")
    p.add_argument(
        "messages",
        metavar="MESSAGES.json",
        help="a JSON array of messages (or JSON Lines, one message per line, or one message); '-' for stdin",
    )
    limit_options(p)
    output_format_option(p, "one JSON object per line (pointer, rule, kind, message)")
    p.set_defaults(func=run)
