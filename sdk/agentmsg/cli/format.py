"""``agentmsg format``: a conversation as a provider request body.

    agentmsg format --provider NAME [--model M] [--multi-agent] [--agent NAME] [--tools FILE]
                    [--tool-choice auto|none|required|TOOL] [--stream] [--strict] [--repair]
                    [--reasoning drop|text] [--layout prefix|history] [--allow-root DIR]... [--allow-hard-links]
                    [--allow-download] [--allow-private] [--param KEY=JSON]... [--envelope] MESSAGES.json

MESSAGES.json is a JSON array of messages, JSON Lines (one message per line) or one message. Prints the body
on stdout (compact JSON; with ``--envelope`` an object holding ``model``, ``path``, ``headers``, ``stream`` and
``body``) and every diagnostic as one JSON line on stderr (``pointer``, ``rule``, ``kind``, ``message``), a legacy
key read in its current form too (rule ``legacy-key``, kind ``note``); when the input is no conversation but
agent events or a provider's reply, a last line says so, with the command that reads it (rule and kind ``hint``).
Exit 1 when the input is invalid, media is refused, or
``--strict`` meets a lossy or error diagnostic (the problems go to stderr as JSON lines too).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import orjson

from agentmsg.cli._conversation import (
    TOOLS_USAGE_ERRORS,
    conversation_hint,
    integer_past_64_bits,
    read_conversation,
    read_inputs,
    run_command,
    say_formatted,
    say_reply_hint,
)
from agentmsg.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    ProviderNames,
    UsageError,
    exit_status,
    limit_options,
    said_path,
)
from agentmsg.cli._machine import Diagnostics, output_format_option
from agentmsg.errors import Problem, ValidationError, short_repr
from agentmsg.providers import RULES, FormatOptions, MediaPolicy, get


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        # (said as the CLI says what it was given, :func:`_said_key`: ``\xff``, not repr's surrogate ``\udcff``)
        raise argparse.ArgumentTypeError(f"expected KEY=JSON, got '{_said_key(text, 80)}'")
    # (an integer past 64 bits: orjson reads it as a float, or fails and it would be a bare string)
    if (why := integer_past_64_bits(value)) is not None:
        raise argparse.ArgumentTypeError(f"{_said_key(key)}: {why}")
    try:
        return key, orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        if value.lstrip(" \t\n\r")[:1] in _JSON_START:  # JSON, mistyped, would be sent as a string: say so
            raise argparse.ArgumentTypeError(_not_json(key, value, exc)) from None
        return key, value  # a bare string (--param user=alice)


def _not_json(key: str, value: str, exc: orjson.JSONDecodeError) -> str:
    """The error of a --param value that begins as JSON but is not, on a line of at most 240 characters whatever the
    key, the value and orjson's error (one 100,000 characters in: 80 characters): the value quoted in what the line
    has left of :data:`_PARAM_LINE` (at least :data:`_QUOTED_MIN` characters, its start and end kept); the hint
    names the key where the line stays within :data:`_PARAM_MOST`, else says ``KEY``; and where the line still does
    not, the value is quoted in its least and the key cut in its middle to what is left (at least
    :data:`_KEY_LEAST` characters shown). (Quoted in 80 characters, the value made a line of 257 with a key of one
    letter; the key said whole twice, ``max_completion_tokens={1:2}`` made one of 241.)"""
    said = f": {exc} [json]; a string that begins so is given quoted, as JSON: "

    def line(shown: str, named: str, room: int = 0) -> str:
        tail = f"{said}{named}='\"...\"'"
        room = room or max(_QUOTED_MIN, _PARAM_LINE - len(f"{shown}: not JSON: {tail}"))
        return f"{shown}: not JSON: {short_repr(value, room)}{tail}"

    shown = _said_key(key, _PARAM_MOST)
    whole = len(key) <= _PARAM_MOST and shown == said_path(key)  # (a key cut is no name to give)
    text = line(shown, shown if whole else "KEY")
    if whole and len(text) > _PARAM_MOST:
        text = line(shown, "KEY")
    if len(text) > _PARAM_MOST:  # (the value in its least, the key in what is left)
        shown = _said_key(key, max(_KEY_LEAST, _PARAM_MOST - len(line("", "KEY", _QUOTED_MIN))))
        text = line(shown, "KEY", _QUOTED_MIN)
    return text


def _said_key(key: str, most: int = 40) -> str:
    """A --param key as its errors say it: as the CLI says a file name (:func:`said_path`: bytes that are not UTF-8
    as ``\\xNN``, control characters escaped), and one longer than ``most`` characters so written cut in its middle,
    its start and end kept around ``...`` (an escape never cut), in ``most`` characters."""
    if len(key) <= most and len(said := said_path(key)) <= most:
        return said
    head: list[str] = []
    tail: list[str] = []
    room = most - 3
    for i in range(len(key)):  # (from both ends in turn: a key of megabytes costs what is shown)
        one = said_path(key[i // 2] if i % 2 == 0 else key[-1 - i // 2])
        if len(one) > room:
            break
        (head if i % 2 == 0 else tail).append(one)
        room -= len(one)
    else:
        return said_path(key)
    return "".join(head) + "..." + "".join(reversed(tail))


#: What the error of a --param value that is not JSON takes of its line after argparse's "agentmsg format: error:
#: argument --param: " (42 characters): the value is quoted in what is left of :data:`_PARAM_LINE` (a line of 230),
#: at least :data:`_QUOTED_MIN` characters of it; the whole is at most :data:`_PARAM_MOST` (a line of 240, what a line of
#: the CLI's stderr holds: tests/cli/test_bad_inputs.py, BOUND), the key cut to at least :data:`_KEY_LEAST` characters
_PARAM_LINE, _PARAM_MOST, _QUOTED_MIN, _KEY_LEAST = 230 - 42, 240 - 42, 16, 8

#: What a --param value that is JSON begins with but a bare string most likely does not: such a value that is not
#: JSON (``[1,``, ``{"a": NaN}``, ``1e999``) is a typo, not a string to send
_JSON_START = frozenset('[{"-0123456789')


#: format_request's own arguments, which the command gives from its options: not taken as a --param
_RESERVED = {
    "messages": "the conversation is MESSAGES.json",
    "model": "use --model",
    "tools": "use --tools",
    "tool_choice": "use --tool-choice",
    "multi_agent": "use --multi-agent",
    "agent_name": "use --agent",
    "stream": "use --stream",
    "strict": "use --strict",
    "options": "use --repair, --reasoning, --layout and the --allow-* options",
}


def _params(given: list[tuple[str, Any]] | None) -> dict[str, Any]:
    """The --param options as format_request's keywords: a reserved name, null (the library reads None as a
    parameter not given, so it would not be sent), or a key given twice (the last one was kept, silently) is a
    usage error."""
    params: dict[str, Any] = {}
    for key, value in given or ():
        if key in _RESERVED:
            raise UsageError(f"--param {key}: not a generation parameter: {_RESERVED[key]}")
        if value is None:
            said = _said_key(key)
            raise UsageError(f"--param {said}=null: null is not sent (it means not given): leave --param {said} out")
        if key in params:
            raise UsageError(f"--param {_said_key(key)}: given twice: give each parameter once")
        params[key] = value
    return params


def run(args: argparse.Namespace, out: TextIO) -> int:
    return run_command(args, out, "format", args.messages, _run)


def _run(args: argparse.Namespace, out: TextIO, diag: Diagnostics) -> int:
    params = _params(args.param)
    inputs = read_inputs(args.messages, "MESSAGES.json", args.tools, diag)
    if inputs is None:
        return EXIT_INVALID
    data, tools = inputs
    choice: Any = args.tool_choice
    if choice is not None and choice not in ("auto", "none", "required", "any"):
        choice = {"name": choice}
    try:
        media = MediaPolicy(
            allowed_roots=tuple(args.allow_root or ()),
            allow_hard_links=args.allow_hard_links,
            allow_download=args.allow_download,
            allow_private=args.allow_private,
        )
    except ValidationError as exc:  # --allow-root ""
        raise UsageError(f"--allow-root: {exc.problems[0].message}") from None
    options = FormatOptions(
        media=media,
        reasoning=args.reasoning,
        repair=args.repair,
        multi_agent_layout=args.layout,
    )
    notes: list[Problem] = []
    try:
        messages = read_conversation(data, notes)
        for p in notes:  # legacy keys (AgentScope's seed documents), read in their current form
            diag.say(p, "note", False)
        request = get(args.provider).format_request(
            messages,
            model=args.model,
            tools=tools,
            tool_choice=choice,
            multi_agent=args.multi_agent or args.agent is not None,
            agent_name=args.agent,
            stream=args.stream,
            strict=args.strict,
            options=options,
            **params,
        )
    except ValidationError as exc:
        for p in exc.problems:  # a --param that would replace what the request already has
            if p.rule == "conflict" and p.pointer.startswith("/params/"):
                raise UsageError(f"--param {p.pointer.split('/')[2]}: {p.message}") from None
        for p in exc.problems:
            diag.say(p, RULES.get(p.rule, ("error",))[0], True)
        hint = conversation_hint(data, args.messages) if any(p.rule not in RULES for p in exc.problems) else None
        if hint is not None:  # what the input holds, when it is no conversation: a JSON line too (kind "hint")
            diag.say(Problem("", "hint", hint), "hint", False)
        return EXIT_INVALID
    say_formatted(diag, request.diagnostics)
    say_reply_hint(diag, data, args.messages)
    if args.envelope:
        doc: Any = {
            "model": request.model,
            "path": request.path,
            "headers": dict(request.headers),
            "stream": request.stream,
            "body": request.body,
        }
        out.write(orjson.dumps(doc).decode() + "\n")
    else:
        out.write(request.body_bytes().decode() + "\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "format",
        description="Format a conversation (a JSON array of messages) as a provider request body.",
        **exit_status(
            "0  the body is printed (diagnostics and legacy-key notes on stderr, one JSON line each, do not count)",
            "1  the input is invalid or beyond the limits, media is refused, or --strict met a lossy or",
            "   error diagnostic: the problems on stderr as JSON lines, no body",
            f"2  usage error, or a file that cannot be read ({TOOLS_USAGE_ERRORS})",
        ),
    )
    p.add_argument("--provider", required=True, choices=ProviderNames(), help="target provider")
    p.add_argument("--model", help="model name (default: the provider's default)")
    p.add_argument("--multi-agent", action="store_true", help="multi-agent layout (other speakers' turns named)")
    p.add_argument(
        "--agent", metavar="NAME", help="the current agent (its turns stay assistant turns); implies --multi-agent"
    )
    p.add_argument("--layout", choices=("prefix", "history"), default="prefix", help="multi-agent layout")
    p.add_argument("--tools", metavar="FILE", help="JSON array of tool definitions (JSON Schema parameters)")
    p.add_argument("--tool-choice", metavar="CHOICE", help="auto, none, required, or a tool name")
    p.add_argument("--stream", action="store_true", help="a streaming request")
    p.add_argument("--strict", action="store_true", help="fail (exit 1) on any lossy or error diagnostic")
    p.add_argument("--repair", action="store_true", help="repair orphaned tool calls and results")
    p.add_argument("--reasoning", choices=("drop", "text"), default="drop", help="reasoning from another provider")
    p.add_argument("--allow-root", metavar="DIR", action="append", help="a directory local media may be read from")
    p.add_argument(
        "--allow-hard-links", action="store_true", help="read local media files that have other names (hard links)"
    )
    p.add_argument("--allow-download", action="store_true", help="download media URLs a provider needs as bytes")
    p.add_argument("--allow-private", action="store_true", help="let downloads reach private/loopback addresses")
    p.add_argument(
        "--param",
        metavar="KEY=JSON",
        action="append",
        type=_param,
        help="a generation parameter, its value JSON; a value that is not JSON is sent as a string (user=alice), "
        'unless it begins as JSON does ([, {, ", a digit or -): then it is a usage error',
    )
    p.add_argument("--envelope", action="store_true", help="print model, path, headers and body")
    p.add_argument(
        "messages",
        metavar="MESSAGES.json",
        help="a JSON array of messages (or JSON Lines, one message per line, or one message); '-' for stdin",
    )
    limit_options(p)
    output_format_option(
        p, "one JSON object per line (pointer, rule, kind: lossy, rewrite, info, error or note, message)"
    )
    p.set_defaults(func=run)
