"""``agentmsg reduce`` (events -> messages) and ``agentmsg events`` (messages -> events)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
from collections.abc import Iterator
from typing import IO, Any, TextIO

import orjson

import agentmsg.ui as ui
from agentmsg import Peeked, read_records
from agentmsg.cli._io import (
    CHUNK,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Emptiness,
    HintHead,
    UsageError,
    binary,
    command_limits,
    exit_status,
    limit_options,
    looks_like,
    open_binary,
    print_problems,
    reading,
    reply_hint,
    said_empty,
    said_path,
    shown_path,
    whole_number,
    write_json_line,
)
from agentmsg.cli._machine import Diagnostics, output_format_option
from agentmsg.cli._numbering import Numbering
from agentmsg.errors import Problem, ValidationError
from agentmsg.events import CUT_RULE, Reducer, emit_events, encode_sse, read_events, reduce_stream
from agentmsg.message import AssistantMessage, Msg

#: The rule of a legacy key read in its current form (agentmsg.read_legacy_keys): a note, not a bad event.
LEGACY_KEY = "legacy-key"


def _peeked(source: IO[bytes], path: str) -> tuple[bytes, Iterator[bytes]]:
    """The first chunk, then every chunk again (a read error is a :class:`UsageError`). Chunks are what the
    input holds already (up to ``CHUNK``: ``read1``), so that a live pipe's events are reduced as they come,
    and Ctrl-C finds them reduced."""
    read = getattr(source, "read1", source.read)
    try:
        head: bytes = read(CHUNK) or b""
    except OSError as exc:
        raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
    return head, reading(path, itertools.chain([head], iter(lambda: read(CHUNK), b"")))


def _say_incomplete(
    where: str,
    messages: list[AssistantMessage],
    cut: AssistantMessage | None,
    err: TextIO,
    diag: Diagnostics | None = None,
) -> int:
    """One ``FILE: error: message [type]`` line (as ``agentmsg parse`` prints them) for each error the stream
    reported in a reply (CUSTOM ``agentmsg.error``: a provider error, a cut provider stream) and for a reply
    the stream itself cut short; returns how many. With ``diag`` (--output-format), said there instead."""
    n = 0
    for msg in messages:
        shown = msg.id if msg.id.isprintable() else orjson.dumps(msg.id).decode()  # (a line break forged a line)
        for error in msg.metadata.get("agentmsg_errors") or ():
            if isinstance(error, dict):
                # (an error of no message or type, as a message's own metadata may hold: its JSON, not "None")
                text, kind = error.get("message"), error.get("type")
                text = text if isinstance(text, str) else orjson.dumps(error).decode()[:400]
                text = text if text.isprintable() else orjson.dumps(text).decode()
                kind = kind if isinstance(kind, str) and kind.isprintable() else "error"
                if diag is not None:
                    diag.say(Problem("", kind, f"message {shown}: {text}"), "error", True)
                else:
                    err.write(f"{where}: error: message {shown}: {text} [{kind}]\n")
                n += 1
        if msg is cut:
            text = (
                f"message {shown}: the stream ended inside the reply (no AGENT_END, or a block or "
                "model call still open): kept with what arrived, marked INTERRUPTED"
            )
            if diag is not None:
                diag.say(Problem("", CUT_RULE, text), "error", True)
            else:
                err.write(f"{where}: error: {text} [{CUT_RULE}]\n")
            n += 1
    return n


def run_reduce(args: argparse.Namespace, out: TextIO) -> int:
    """Reduce an event stream (JSONL, SSE or a JSON array of events); print one message JSON per line."""
    import sys

    source = open_binary(args.file)
    reducer = Reducer(strict=args.strict, source=args.source)
    diag = Diagnostics(args.output_format, "reduce", shown_path(args.file), sys.stderr)
    try:
        return _reduce(args, out, source, reducer, diag)
    finally:
        diag.close()


def _reduce(args: argparse.Namespace, out: TextIO, source: IO[bytes], reducer: Reducer, diag: Diagnostics) -> int:
    import sys

    status = EXIT_OK
    head = b""
    held = HintHead()  # the start the hint is asked about, to the end of a line
    emptiness = Emptiness()
    protocol_bad = 0  # --protocol: the protocol's events that were bad or unreadable (said as they came)
    try:
        with source if args.file != "-" else contextlib.nullcontext(source):
            head, chunks = _peeked(source, args.file)
            chunks = emptiness.through(held.through(chunks))
            if not args.sse and looks_like(head) == "messages":
                if len(head) >= CHUNK:  # (more was there at once: read on to the end of its line, as hints read)
                    for _ in chunks:
                        if not held.holding:
                            break
                hint = reply_hint(held.bytes, whole=held.whole) if len(head) >= CHUNK else reply_hint(head)
                if hint is not None:  # (a provider's reply holds a role too)
                    print(f"agentmsg: {said_path(args.file)} holds no events: {hint}", file=sys.stderr)
                    return EXIT_USAGE
                print(
                    f"agentmsg: {said_path(args.file)} holds messages, not events: "
                    f"to turn messages into events use 'agentmsg events {said_path(args.file)}'",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            found = None if args.sse else binary(head)
            if found is not None:  # read no further (/dev/zero would never end)
                said = f"not an event stream (JSON lines, SSE or a JSON array): {found}"
                diag.say(Problem("", "json", said), "error", True)
                return EXIT_INVALID
            if args.protocol in (None, "agentscope"):
                messages = reduce_stream(chunks, strict=args.strict, sse=True if args.sse else None, reducer=reducer)
            else:
                messages, protocol_bad = _reduce_protocol(args, chunks, reducer, diag)
    except ValidationError as exc:
        for p in exc.problems:
            diag.say(p, "error", True)
        messages = reducer.finish()  # keep what was received before the error
        status = EXIT_INVALID
    except KeyboardInterrupt:  # Ctrl-C (a live pipe, say): what arrived is printed, a reply still open as cut
        messages = reducer.finish()
        status = EXIT_INTERRUPTED
    for msg in messages:
        write_json_line(out, msg.to_json_bytes())
    if reducer.count == 0 and not reducer.problems and status == EXIT_OK:
        # (an input of something, but no event: `[]`)
        diag.say(emptiness.problem or Problem("", "empty", "no events in the input"), "error", True)
        return EXIT_INVALID
    if not messages and not reducer.problems and status == EXIT_OK:  # events, but none of a reply reduced here
        why = (
            f"none of source {args.source!r}"
            if args.source
            else "no event opens one here (a subagent's events, their 'source' set, are reduced with --source PATH)"
        )
        diag.say(Problem("", "no-reply", f"no reply: {why}"), "note", False)
    bad = 0
    for p in reducer.problems + (reducer.check_results() if args.check_result else []):
        if p.rule == CUT_RULE:  # a reply the stream cut short: said with the message's id, below
            continue
        # a legacy key read in its current form (AgentScope's seed documents) is a note: the event was read whole
        note = p.rule == LEGACY_KEY
        diag.say(p, "note" if note else "error", not note)
        bad += not note
    if (bad or protocol_bad) and status == EXIT_OK:
        status = EXIT_INVALID
    hint = reply_hint(held.bytes, whole=held.whole) if bad and not messages and not args.sse else None
    if hint is not None:  # none of it was events: a provider's stream, which parse reads
        sys.stderr.write(f"agentmsg: {said_path(args.file)}: {hint}\n")
    machine = diag if args.output_format not in (None, "text") else None
    if _say_incomplete(shown_path(args.file), messages, reducer.cut, sys.stderr, machine) and status == EXIT_OK:
        status = EXIT_INVALID
    if status == EXIT_INTERRUPTED:
        sys.stderr.write("agentmsg: interrupted\n")
    return status


def run_events(args: argparse.Namespace, out: TextIO) -> int:
    """Print the event stream of each message in FILE (JSON object, array or JSONL), reading in bounded
    memory with the API's limits and rule names (as ``agentmsg validate`` does: JSON Lines line by line,
    a document up to ``limits.max_bytes``)."""
    import sys

    source = open_binary(args.file)
    status = EXIT_OK
    with source if args.file != "-" else contextlib.nullcontext(source), command_limits(args):
        held = HintHead()  # the start the hint is asked about, to the end of a line
        try:
            stream = Peeked(held.reading(source), CHUNK)
        except OSError as exc:
            raise UsageError(f"{shown_path(args.file)}: cannot read: {exc.strerror or exc}") from None
        if looks_like(stream.head) == "events":
            print(
                f"agentmsg: {said_path(args.file)} holds agent events, not messages: "
                f"to reduce events to messages use 'agentmsg reduce {said_path(args.file)}'",
                file=sys.stderr,
            )
            return EXIT_USAGE
        for prefix, instance, error, line in reading(args.file, read_records(stream)):
            if error is not None:  # not read (not JSON, beyond the limits): its value is None, not a null
                status = EXIT_INVALID
                print_problems(shown_path(args.file), prefix, [said_empty(stream.head, error, line)], sys.stderr)
            elif not _write_events(instance, prefix, args, out):
                status = EXIT_INVALID
        hint = reply_hint(held.bytes, whole=held.whole) if status != EXIT_OK else None
        if hint is not None:  # after its problems: the command that reads what the file holds
            print(f"agentmsg: {said_path(args.file)}: {hint}", file=sys.stderr)
    return status


def _write_events(instance: Any, prefix: str, args: argparse.Namespace, out: TextIO) -> bool:
    """Write one message's events; False (problems printed) when it is not a valid assistant message (a JSON null
    too: ``null is not of type "object"``, as ``agentmsg validate`` says)."""
    import sys

    notes: list[Problem] = []
    try:
        msg = Msg.from_dict(instance, notes=notes)
        events = emit_events(msg, chunk_size=args.chunk_size)  # not an assistant message: raises (rule role)
    except ValidationError as exc:
        print_problems(shown_path(args.file), prefix, exc.problems, sys.stderr)
        return False
    print_problems(shown_path(args.file), prefix, notes, sys.stderr, note=True)  # legacy keys read as they are now
    if args.sse:
        out.write(encode_sse(events))
    else:
        out.writelines(orjson.dumps(event).decode() + "\n" for event in events)
    return True


#: the rules of a UI protocol decoder's notes that say something left out or read another way, not a bad event
_UI_NOTES = frozenset({"ui-not-kept", "ui-wrapped", "ui-legacy"})


def _reduce_protocol(
    args: argparse.Namespace, chunks: Iterator[bytes], reducer: Reducer, diag: Diagnostics
) -> tuple[list[AssistantMessage], int]:
    """``--protocol NAME``: the stream's events are that UI protocol's (agentmsg.ui), decoded into AgentEvents as
    they are read and reduced. What the decoder says is reported as it comes (a pointer counts the protocol's
    events; the reducer's problems count the AgentEvents): what it left out as a note, a bad event as an error
    (``--strict``: the first one stops there). A line or SSE event that is not JSON counts as one event. Returns the
    messages and how many of the protocol's events were bad or unreadable (the exit status says them)."""
    protocol = ui.get(args.protocol)
    decoder = protocol.decoder(strict=args.strict)
    strip_end = getattr(protocol, "strip_end", None)  # a body's end marker that is no event (the AI SDK's [DONE])
    if strip_end is not None:
        chunks = strip_end(chunks)

    numbering = Numbering()  # (the decoder's pointers count the events it was fed, not the input's)

    def unreadable(problem: Problem) -> None:
        problem = numbering.skipped(problem)
        if args.strict:
            raise ValidationError([problem])
        diag.say(problem, "error", True)
        unread.append(problem)

    unread: list[Problem] = []
    for event in numbering.fed(read_events(chunks, strict=False, on_problem=unreadable)):
        for agent_event in decoder.feed(event):
            reducer.feed(agent_event)
        for note in decoder.notes:
            note = numbering.of(note)
            fails = note.rule not in _UI_NOTES
            diag.say(note, "error" if fails else "note", fails)
            if fails:
                unread.append(note)
        decoder.notes.clear()
    for agent_event in decoder.close():
        reducer.feed(agent_event)
    return reducer.finish(), len(unread)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reduce",
        **exit_status(
            "0  every reply was read whole, and no event was bad (a legacy key read in its current form is a",
            "   note: FILE:POINTER: note: ... [legacy-key])",
            "1  a reply was cut (the stream ended inside it) or the stream reported an error in it (CUSTOM",
            "   agentmsg.error), an event was bad (fixed by the tolerant rules; --strict stops there), or",
            "   --check-result found a difference: the messages are still printed (a cut one INTERRUPTED,",
            "   with what arrived), and why on stderr, one line each; an empty input, or binary data (read no",
            "   further). The tolerant rules check a plain delta of an open block or call (its id, key and",
            "   text) and no other field of it: --strict, or agentmsg validate, checks every field",
            "2  usage error, a file that cannot be read, or a file of messages or a provider's reply (not",
            "   events: said with the command that reads it)",
            "130  interrupted (Ctrl-C): what arrived is printed, a reply still open marked INTERRUPTED",
            interrupt=False,
        ),
    )
    p.add_argument(
        "file", metavar="FILE", help="events as JSON lines, a JSON array or text/event-stream; '-' for stdin"
    )
    p.add_argument("--sse", action="store_true", help="the input is SSE (default: detected)")
    p.add_argument(
        "--strict", action="store_true", help="stop at the first bad event instead of applying the tolerant rules"
    )
    p.add_argument("--source", default=None, help="reduce the events forwarded from this subagent source path")
    p.add_argument(
        "--protocol",
        choices=ui.names(),
        default=None,
        help="the events are this UI protocol's (e.g. ag-ui: docs/ag-ui.md), decoded into AgentEvents "
        "(default: agentscope, AgentEvents as they are)",
    )
    p.add_argument(
        "--check-result",
        action="store_true",
        help="also report where a message does not cover its AGENT_RESULT (exit 1 if so)",
    )
    output_format_option(p, "text, one line each")
    p.set_defaults(func=run_reduce)
    p = sub.add_parser(
        "events",
        **exit_status(
            "0  every message was turned into events",
            "1  a record is not a valid ASSISTANT message (not JSON, beyond the limits, another role): said on",
            "   stderr, the other records still turned into events",
            "2  usage error, a file that cannot be read, or a file of events (not messages)",
        ),
    )
    p.add_argument("file", metavar="FILE", help="a message JSON object, an array or JSONL; '-' for stdin")
    p.add_argument("--sse", action="store_true", help="write text/event-stream instead of JSON lines")
    p.add_argument(
        "--chunk-size",
        type=whole_number("--chunk-size"),
        default=None,
        metavar="N",
        help="split text deltas into pieces of N characters",
    )
    limit_options(p)
    p.set_defaults(func=run_events)
