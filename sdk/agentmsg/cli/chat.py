"""``agentmsg chat``: stream a reply from a provider, live in the terminal.

    agentmsg chat --provider NAME [--model M] [--base-url URL] [--system TEXT] [--max-tokens N] [--think-tags] PROMPT

Text is printed as it arrives; reasoning is marked ``[thinking]`` and tool calls ``[tool call]`` (``--think-tags``,
``--think-tags-open``: ``<think>...</think>`` in the text is reasoning, docs/streams.md); the last
line gives the usage. What the parser said on the way (a payload it could not read, a tool call's arguments cut
at max_tokens, data the message has no place for) is printed on stderr after the reply, one line each, as
``agentmsg parse`` prints it. The API key comes from the provider's usual environment variable. Exit 1 when
the call fails, the stream breaks or a payload could not be read (what arrived is still printed), 2 for a
usage error, 3 when a tool call's arguments, as the provider gave them, are no JSON object (cut at
max_tokens, say), 130 on Ctrl-C (what arrived stays printed, with the usage so far). The API key (any
credential the client sends) is never printed: a server that echoes it, in an error or in the reply's text,
is shown with it redacted (a key shorter than 8 characters, ``EMPTY`` for a local server, where the text names it
as a credential, ``x-api-key: EMPTY``: its letters elsewhere are left as they are; see
:class:`~agentmsg.clients._errors.Redactor`).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from agentmsg.cli._io import (
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    ProviderNames,
    UsageError,
    exit_status,
    say,
    seconds,
    think_tags_options,
    whole_number,
)
from agentmsg.errors import one_line
from agentmsg.events import ERROR_EVENT
from agentmsg.providers import Provider


def run(args: argparse.Namespace, out: TextIO) -> int:
    from agentmsg.clients import Client, ProviderError
    from agentmsg.message import SystemMessage, UserMessage

    messages: list[Any] = []
    if args.system:
        messages.append(SystemMessage(args.system))
    messages.append(UserMessage(args.prompt))
    params: dict[str, Any] = {}
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    try:
        client = Client(
            args.provider, model=args.model, base_url=args.base_url, timeout=args.timeout, think_tags=args.think_tags
        )
    except ValueError as exc:  # a base_url that is no http(s) URL
        raise UsageError(str(exc)) from None
    if client.api_key is None:  # (the client's own message says api_key=, which a command line has not)
        client.close()
        sys.stderr.write(f"agentmsg: {args.provider}: no API key: set {' or '.join(client.spec.env)}\n")
        return EXIT_INVALID
    term = _Redacting(out, client._redactor())  # (a server may echo the key in the reply's text too)
    kind = None
    stream = None
    said = io.StringIO()  # what the parser said, printed after the reply (not inside its text)
    status = EXIT_OK  # EXIT_INVALID (a payload not read) wins over EXIT_ARGUMENTS
    try:
        stream = client.stream(messages, **params)
        for p in stream.diagnostics:
            sys.stderr.write(f"agentmsg: {p}\n")
        for e in stream:
            t = e["type"]
            if t == "CUSTOM" and e.get("name") != ERROR_EVENT:  # (an error raises: said below)
                code = say("agentmsg", e, said)
                if code != EXIT_OK and status != EXIT_INVALID:
                    status = code
            if e.get("source"):
                continue
            if t == "THINKING_BLOCK_DELTA" and e["delta"]:
                if kind != "thinking":
                    term.write("\n[thinking] " if kind else "[thinking] ")
                    kind = "thinking"
                term.write(e["delta"])
            elif t == "TEXT_BLOCK_DELTA":
                if kind not in (None, "text"):
                    term.write("\n\n" if kind == "thinking" else "\n")  # the answer apart from the reasoning
                kind = "text"
                term.write(e["delta"])
            elif t == "TOOL_CALL_START":
                term.write(f"\n[tool call] {e.get('toolCallName', '')} ")
                kind = "tool"
            elif t == "TOOL_CALL_DELTA":
                term.write(e["delta"])
            term.flush()
    except ProviderError as exc:
        term.release()
        if kind is not None:
            term.write("\n")
        # (the provider's message, from a server that may be anyone's: one line, its control characters escaped)
        sys.stderr.write(said.getvalue() + f"agentmsg: {one_line(str(exc))}\n")
        return EXIT_INVALID
    except KeyboardInterrupt:  # Ctrl-C: what arrived stays printed, with the usage so far
        if stream is not None:
            stream.close()
        term.release()
        term.write("\n")
        msg = stream.message if stream is not None else None
        if msg is not None and msg.usage is not None:
            term.write(f"[usage] {_usage_line(msg.usage)}\n")
        sys.stderr.write(said.getvalue() + "agentmsg: interrupted\n")
        return EXIT_INTERRUPTED
    finally:
        client.close()
    msg = stream.message
    usage = msg.usage if msg is not None else None
    term.release()
    term.write("\n")
    if usage is not None:
        term.write(f"[usage] {_usage_line(usage)}\n")
    term.flush()
    sys.stderr.write(said.getvalue())
    return status


class _Redacting:
    """The terminal's output with the client's credentials redacted (:class:`~agentmsg.clients._errors.Redactor`),
    as it streams: the end of a piece that may begin a credential (or the name before a short one) waits for
    the next piece (or :meth:`release`)."""

    def __init__(self, out: TextIO, redactor: Any) -> None:
        self.out = out
        self.redactor = redactor
        self.held = ""

    def write(self, text: str) -> None:
        shown, self.held = self.redactor.split(self.held + text)
        if shown:
            self.out.write(shown)

    def flush(self) -> None:
        self.out.flush()

    def release(self) -> None:
        """Show what is held (redacted): the text has ended."""
        if self.held:
            self.out.write(self.redactor(self.held))
            self.held = ""


def _usage_line(usage: Any) -> str:
    """The counts the provider gave (a count it did not give is left out, not printed as None), and the time."""
    counts = [
        f"{label} {value}"
        for label, value in (
            ("input", usage.input_tokens),
            ("cached", usage.cached_tokens),
            ("output", usage.output_tokens),
            ("total", usage.total_tokens),
        )
        if value is not None
    ]
    parts = counts or ["no token counts from the provider"]
    if usage.time is not None:
        parts.append(f"{usage.time:.2f} s")
    return " · ".join(parts)


def _key_variables(reading: Iterable[Provider]) -> str:
    """The API-key variables of the providers ``reading``, each with the providers that read it, in their
    order: ``A_API_KEY (a), B_API_KEY or C_API_KEY (b, b-variant)``."""
    readers: dict[tuple[str, ...], list[str]] = {}
    for provider in reading:
        readers.setdefault(provider.spec.env, []).append(provider.spec.name)
    return ", ".join(f"{' or '.join(env)} ({', '.join(sorted(names))})" for env, names in readers.items())


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "chat",
        description="Stream a reply from a provider, live. The API key is read from the provider's environment "
        f"variable: {_key_variables(sub.providers())}.",  # (the command line's provider's, or every one's)
        **exit_status(
            "0  the reply arrived whole",
            "1  no API key, the call failed, the stream broke or a payload could not be read (what arrived is",
            "   still printed), said on stderr",
            "2  usage error (a base URL that is no http(s) URL, say)",
            "3  the reply arrived whole, but a tool call's arguments, as the provider gave them, are no JSON",
            "   object (cut at max_tokens, say), said on stderr",
            "130  interrupted (Ctrl-C): what arrived stays printed, with the usage so far",
            interrupt=False,
        ),
    )
    p.add_argument("--provider", required=True, choices=ProviderNames())
    p.add_argument("--model", default=None, help="the model (default: the formatter's default for the provider)")
    p.add_argument("--base-url", default=None, help="the API's base URL (a proxy, a local server)")
    p.add_argument("--system", default=None, help="a system prompt")
    p.add_argument("--max-tokens", type=whole_number("--max-tokens"), default=None, metavar="N")
    p.add_argument(
        "--timeout",
        type=seconds("--timeout"),
        default=None,
        help="seconds without data before the call fails (default: the client's, 600, and 10 to connect)",
    )
    think_tags_options(p)
    p.add_argument("prompt", metavar="PROMPT")
    p.set_defaults(func=run)
