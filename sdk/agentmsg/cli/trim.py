"""``agentmsg trim``: a conversation cut to a token budget for a provider (``agentmsg.context.trim``).

    agentmsg trim --budget N --provider P [--model M] [--tools FILE] [--strategy oldest] [--keep-last N]
                  [-o OUT] [--output-format text|json|github|sarif|junit] CONVERSATION.json

CONVERSATION.json is a JSON array of messages, JSON Lines (one message per line) or one message, as ``agentmsg
format`` reads it. The trimmed conversation is written in the same form (an array, or JSON Lines) to stdout or
``-o OUT``; each removal is a diagnostic on stderr (by default one JSON line each: ``pointer``, ``rule``, ``kind``,
``message``; ``--output-format`` as ``agentmsg validate`` writes its reports). Exit 1, with nothing written, when
the input is invalid or the budget cannot be met (the system prompt and the latest turn alone exceed it: rule
``trim-over-budget``, the count said). After the removals, what the formatter says of the trimmed conversation's
request (``thinking-dropped``, ``tool-key-dropped``...; pointers into the conversation written) is said as ``agentmsg
format`` says it, and does not change the exit status.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from agentmsg.cli._conversation import (
    TOOLS_USAGE_ERRORS,
    conversation_hint,
    read_conversation,
    read_inputs,
    run_command,
    say_reply_hint,
    say_request,
)
from agentmsg.cli._io import (
    BOM,
    EXIT_INVALID,
    EXIT_OK,
    ProviderNames,
    exit_status,
    limit_options,
    whole_number,
    write_output,
)
from agentmsg.cli._machine import Diagnostics, output_format_option
from agentmsg.context import TRIM_RULES, TrimBudgetError, trim
from agentmsg.conversation import encode_messages
from agentmsg.errors import Problem, ValidationError
from agentmsg.providers import RULES


def run(args: argparse.Namespace, out: TextIO) -> int:
    return run_command(args, out, "trim", args.conversation, _run)


def _kind(rule: str) -> str:
    return (TRIM_RULES.get(rule) or RULES.get(rule) or ("error",))[0]


def _run(args: argparse.Namespace, out: TextIO, diag: Diagnostics) -> int:
    inputs = read_inputs(args.conversation, "CONVERSATION.json", args.tools, diag)
    if inputs is None:
        return EXIT_INVALID
    data, tools = inputs
    notes: list[Problem] = []
    try:
        messages = read_conversation(data, notes)
        for p in notes:
            diag.say(p, "note", False)
        if not messages:
            raise ValidationError.single("", "empty-conversation", "no messages to trim", "conversation")
        trimmed = trim(
            messages,
            args.budget,
            provider=args.provider,
            model=args.model,
            tools=tools,
            strategy=args.strategy,
            keep_last=args.keep_last,
        )
    except TrimBudgetError as exc:
        for p in exc.problems:
            diag.say(p, "error", True)
        return EXIT_INVALID
    except ValidationError as exc:
        for p in exc.problems:
            diag.say(p, _kind(p.rule), True)
        hint = conversation_hint(data, args.conversation) if any(p.rule not in RULES for p in exc.problems) else None
        if hint is not None:
            diag.say(Problem("", "hint", hint), "hint", False)
        return EXIT_INVALID
    for p in trimmed.diagnostics:
        diag.say(p, _kind(p.rule), False)
    say_request(diag, args.provider, trimmed.messages, args.model, tools)  # (of the trimmed conversation, as sent)
    say_reply_hint(diag, data, args.conversation)
    if data.removeprefix(BOM).lstrip()[:1] == b"[":
        text = encode_messages(trimmed.messages) + b"\n"
    else:  # JSON Lines (or one message): one message per line
        text = b"".join(m.to_json_bytes() + b"\n" for m in trimmed.messages)
    if args.output and args.output != "-":  # ('-' is stdout, as for every file argument)
        write_output(args.output, text)
    else:
        out.write(text.decode())
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "trim",
        description="Cut a conversation to a token budget: the system prompt and the latest turn kept, whole units"
        " (a tool call with its results) removed oldest first, each removal reported.",
        **exit_status(
            "0  the trimmed conversation is written (each removal and the formatter's diagnostics on stderr do not count)",
            "1  the input is invalid, or the budget cannot be met (the system prompt and the latest turn alone",
            "   exceed it): the problem on stderr, nothing written",
            f"2  usage error, or a file that cannot be read or written ({TOOLS_USAGE_ERRORS})",
        ),
    )
    p.add_argument("--budget", required=True, type=whole_number("--budget", minimum=0), metavar="N", help="tokens")
    p.add_argument("--provider", required=True, choices=ProviderNames(), help="the provider counted for")
    p.add_argument("--model", help="model name (default: the provider's default)")
    p.add_argument("--tools", metavar="FILE", help="JSON array of tool definitions (counted in the budget)")
    p.add_argument(
        "--strategy",
        choices=("oldest",),
        default="oldest",
        help="oldest first (summarizing needs a function: agentmsg.context.trim(..., summarize=...))",
    )
    p.add_argument(
        "--keep-last",
        type=whole_number("--keep-last"),
        default=1,
        metavar="N",
        help="the latest units always kept (default 1: the last message, or the last call with its results)",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="write the trimmed conversation here (default, or '-': stdout)"
    )
    p.add_argument(
        "conversation",
        metavar="CONVERSATION.json",
        help="a JSON array of messages (or JSON Lines, one message per line, or one message); '-' for stdin",
    )
    limit_options(p)
    output_format_option(p, "one JSON object per line (pointer, rule, kind: lossy, rewrite, error or note, message)")
    p.set_defaults(func=run)
