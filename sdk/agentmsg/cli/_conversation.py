"""A conversation file and its tool definitions, as ``agentmsg format``, ``count`` and ``trim`` read them: the
messages (a JSON array, JSON Lines or one message), the ``--tools`` file, what an input that is no conversation
holds, and the run of such a command with its diagnostics in the ``--output-format`` asked for."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import orjson

from agentmsg import Msg, read_records
from agentmsg.cli._io import (
    BOM,
    UsageError,
    command_limits,
    empty_input,
    first_line_reads,
    hint_head,
    looks_like,
    read_bytes,
    reply_hint,
    shown_path,
    stdin_once,
)
from agentmsg.cli._machine import Diagnostics
from agentmsg.conversation import decode_messages
from agentmsg.errors import Problem, SizeLimitError, ValidationError


def problem_line(p: Any, kind: str | None) -> bytes:
    row: dict[str, Any] = {"pointer": p.pointer, "rule": p.rule, "kind": kind, "message": p.message}
    if p.other_pointers:  # said once for several places: every one
        row["pointers"] = p.pointers
    return orjson.dumps(row) + b"\n"


#: What makes a ``--tools`` file a usage error (exit 2), as the exit-status help of format, count and trim says it
#: (:func:`read_inputs`)
TOOLS_USAGE_ERRORS = "--tools: not JSON (or an integer past 64 bits), over --max-bytes, or it holds a message"

#: a run of digits as long as an integer past 64 bits may be (-2**63 - 1 has 19): only then is the tools file read
#: again
_LONG_DIGITS = re.compile(rb"[0-9]{19}")

#: the rules of a document that could not be read as one JSON value: JSON Lines, maybe (each line then read alone)
_UNREADABLE = ("json", "utf-8", "lone-surrogate")


def read_conversation(data: bytes, notes: list[Problem]) -> list[Any]:
    """The messages of MESSAGES.json: a JSON array (a conversation), or as ``agentmsg validate`` and
    ``agentmsg events`` read messages, JSON Lines (one message per line, problems at ``/N``) or one message. The
    notes of legacy keys read in their current form go to ``notes``."""
    try:
        return decode_messages(data, notes=notes)
    except ValidationError as exc:
        first = exc.problems[0]
        if first.pointer or first.rule not in ("type", *_UNREADABLE):
            raise
        if first.rule in _UNREADABLE and not first_line_reads(data):
            raise  # (its JSON Lines would be the one document, or a first line that is broken: read again for nothing)
        found = list(read_records(data))
        if first.rule in _UNREADABLE and (
            not found or not all(r.pointer for r in found) or found[0].problem is not None
        ):
            raise  # not JSON Lines either (or its first line is broken: a broken document): the document's problem
        problems = [r.problem.under(r.pointer) if r.pointer else r.problem for r in found if r.problem is not None]
        if problems:
            raise ValidationError(problems) from None
        items = [r.value for r in found]
        if first.rule == "type" and not isinstance(items[0] if items else None, dict):
            raise  # neither an array nor one message (a string, a number)
        return decode_messages(orjson.dumps(items), notes=notes)


def conversation_hint(data: bytes, path: str) -> str | None:
    """What an input that is no conversation holds, said with the command that reads it: agent events, a
    provider's reply or stream. ``data``: the whole input, of which the hint reads :func:`hint_head`."""
    head = hint_head(data)
    if looks_like(head) == "events":
        return f"these look like agent events, not messages: reduce them first ('agentmsg reduce {shown_path(path)}')"
    return reply_hint(head, whole=len(head) == len(data))


def say_reply_hint(diag: Diagnostics, data: bytes, path: str) -> None:
    """After a conversation was read: when the input also reads as a provider's reply (one may read as a message in
    AgentScope Python's shape, its other keys said as notes), the command that reads it, said as a hint
    (kind ``hint``; the exit status stands), as an input read as no conversation says it. Only an input that starts
    with an object is asked: a reply is one."""
    if data.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] != b"{":
        return
    hint = conversation_hint(data, path)
    if hint is not None:
        diag.say(Problem("", "hint", hint), "hint", False)


def run_command(
    args: argparse.Namespace,
    out: TextIO,
    command: str,
    path: str,
    body: Callable[[argparse.Namespace, TextIO, Diagnostics], int],
) -> int:
    """``body(args, out, diag)`` under the command's limits, its problems said as ``--output-format`` asks (one JSON
    line each by default) and the report closed however it ends."""
    diag = Diagnostics(
        args.output_format,
        command,
        shown_path(path),
        sys.stderr,
        own=lambda p, kind, fails: sys.stderr.write(problem_line(p, kind).decode()),
    )
    try:
        with command_limits(args):
            return body(args, out, diag)
    finally:
        diag.close()


def say_formatted(diag: Diagnostics, problems: Sequence[Problem]) -> None:
    """A formatter's diagnostics (``FormattedRequest.diagnostics``), each said with its kind (``RULES``: lossy,
    rewrite, info...); none fails the command, as none fails ``agentmsg format`` without ``--strict``."""
    from agentmsg.providers import RULES

    for p in problems:
        diag.say(p, RULES.get(p.rule, ("error",))[0], False)


def say_request(diag: Diagnostics, provider: str, messages: Sequence[Msg], model: str | None, tools: Any) -> None:
    """What the formatter says of the request for ``messages`` (``agentmsg count`` counts it, ``agentmsg trim`` writes
    it): its diagnostics (``thinking-dropped``, ``tool-key-dropped``, ``empty-message-dropped``...), said as
    ``agentmsg format`` says them, or, when it would refuse the request (media no ``--allow-root`` lets it read; the
    tools it refuses the count refuses, and the command exits 1 before this), the problems it would refuse it for,
    each a note saying so; neither changes the exit status: the count and the trimmed conversation do not depend on
    them."""
    from agentmsg.providers import get

    try:
        request = get(provider).format_request(messages, model=model, tools=tools)
    except ValidationError as exc:
        # (each said as a note, its words naming the refusal: a problem said as an error exits 1, and neither the
        # count nor the trimmed conversation is wrong; 'agentmsg format' fails on them)
        for p in exc.problems:
            refused = Problem(p.pointer, p.rule, f"agentmsg format would refuse the request: {p.message}")
            diag.say(refused, "note", False)
        return
    say_formatted(diag, request.diagnostics)


def read_inputs(path: str, name: str, tools_path: str | None, diag: Diagnostics) -> tuple[bytes, Any] | None:
    """The conversation file's bytes and the ``--tools`` file's JSON (None without one); None when the conversation file is
    over ``limits.max_bytes``, empty (:func:`~agentmsg.cli._io.empty_input`) or the tools file's JSON is not an array (``null`` included: said to ``diag``, rule
    ``type`` at ``/tools``, as the formatters say it). A tools file that is not JSON, is over ``limits.max_bytes``, or
    holds a message, is a usage error naming it."""
    stdin_once((name, path), ("--tools", tools_path))
    tools = None
    try:
        data = read_bytes(path)
        if (empty := empty_input(data)) is not None:
            raise ValidationError([empty])
        if tools_path:
            try:
                raw = read_bytes(tools_path).removeprefix(BOM)
            except SizeLimitError as exc:  # (of the tools file, not said by diag: diag names the conversation file)
                p = exc.problems[0]
                raise UsageError(f"{shown_path(tools_path)}: {p.message} [{p.rule}]") from None
            try:
                # a leading BOM skipped, as by every reader of JSON text (the one BOM policy: docs/wire-format.md)
                tools = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                # in the SDK's words and with its rule, as the messages file's are (orjson's for invalid UTF-8 are
                # "surrogates not allowed")
                problem = next((r.problem for r in read_records(raw) if r.problem), None)
                said = f"{problem.message} [{problem.rule}]" if problem else f"not valid JSON: {exc} [json]"
                raise UsageError(f"{shown_path(tools_path)}: {said}") from None
            _refuse_long_integers(raw, tools_path)
            if not isinstance(tools, list):  # (null was taken as no tools, silently; trim said {} otherwise)
                held = " (the file holds null)" if tools is None else ""
                raise ValidationError([Problem("/tools", "type", f"tools must be a list of tool definitions{held}")])
            _refuse_messages(tools, tools_path)
    except ValidationError as exc:  # an input over limits.max_bytes or empty, or tools that are not a list
        for p in exc.problems:
            diag.say(p, "error", True)
        return None
    return data, tools


class _Beyond(ValueError):
    """An integer of a JSON text past the 64-bit range JSON is written in (its digits)."""


def _int64(digits: str) -> int:
    """An integer of a JSON text, read by json (which reads any number of digits): one past 64 bits raises."""
    if len(digits.lstrip("-")) > 20 or not -(2**63) <= (number := int(digits)) <= 2**64 - 1:
        raise _Beyond(digits)
    return number


def integer_past_64_bits(text: str | bytes) -> str | None:
    """Why ``text`` cannot be sent as it is written, when it is JSON holding an integer past the 64-bit range (rule
    ``integer-range``): orjson reads one as the nearest float (``1e+29`` for the digits given), or not at all. None
    when it holds none, or is not JSON as the standard library reads it (then orjson says why, or it is no JSON).
    Shared by ``format --param`` and the ``--tools`` file of format, count and trim."""
    try:
        json.loads(text, parse_int=_int64)
    except _Beyond as exc:
        digits = str(exc)
        shown = digits if len(digits) <= 24 else f"{digits[:20]}...({len(digits.lstrip('-'))} digits)"
        return f"integer {shown} is outside the 64-bit range [-2**63, 2**64 - 1] JSON is written in [integer-range]"
    except (ValueError, RecursionError):  # (not JSON as json reads it, or nested deeper than it reads)
        pass
    return None


def _refuse_long_integers(raw: bytes, tools_path: str) -> None:
    """A tools file holding an integer past the 64-bit range is a usage error (rule ``integer-range``), as such a
    ``--param`` is: orjson read it as the nearest float, and the request carried ``1e+29`` for the digits given,
    without a word. (Only a file with a run of 19 digits, in a string or not, is read again, with json.)"""
    if _LONG_DIGITS.search(raw) is not None and (why := integer_past_64_bits(raw)) is not None:
        raise UsageError(f"{shown_path(tools_path)}: {why}")


def _refuse_messages(tools: list[Any], tools_path: str) -> None:
    """A ``--tools`` file of messages (a definition with ``role`` and ``content``) is a usage error: the files were
    given the wrong way round, and each message would be a tool of its name, its other keys not sent."""
    at = next((i for i, t in enumerate(tools) if isinstance(t, dict) and "role" in t and "content" in t), None)
    if at is not None:
        raise UsageError(
            f"{shown_path(tools_path)}: /tools/{at} is a message (it has role and content), not a tool definition:"
            " give the conversation as the messages file and tool definitions ({name, description, parameters})"
            " in --tools"
        )
