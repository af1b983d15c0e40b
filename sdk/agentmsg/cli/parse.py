"""``agentmsg parse``: a provider's reply as agentmsg's message (or its AgentEvents).

    agentmsg parse --provider NAME [--stream] [--events] [--choice N|all] [--think-tags|--think-tags-open] [STREAM_FLAG] FILE

FILE is a non-streaming response body (JSON, at most ``limits.max_bytes``), or with ``--stream`` the raw
streamed body (SSE as the provider sends it, JSON lines, a JSON array of chunks), read and reduced as it
arrives (bounded memory); a body that is SSE is read as a stream without the flag too. Prints the assistant message as one JSON line (``--choice all``:
one line per choice, in index order), or with ``--events`` the chosen choice's AgentEvents as JSON lines (``--choice
all``: every choice's, as they come). Exit 0 when
the reply was read whole, 1 when the stream was cut or carried an error or unreadable payloads (the
message, with everything received, is printed all the same), 2 when FILE cannot be read or is not a
response of that provider at all (an agentmsg message, agent events, another provider's reply or stream, JSON
lines without ``--stream``: the one line that says so names what reads it), 3 when the reply was read whole but a tool call's arguments, as the provider gave them, are
no JSON object the message can hold (cut at max_tokens, say: kept raw, with ``argumentsError``). What the parser said on the way is printed on stderr, one line each: a problem
(``FILE: message [rule]``), the provider's error or a cut stream (``FILE: error: message [type]``) and
data the message has no place for (``FILE: note: message [not-kept]``); ``choice/N: `` before the message
for a choice other than the first. ``--think-tags`` (``--think-tags-open``): ``<think>...</think>`` in the reply's
text read as reasoning, streamed or whole (docs/streams.md). STREAM_FLAG: the stream parser options a provider's spec offers as flags
(``Spec.stream_flags``); one the chosen provider does not offer is a usage error.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final, TextIO

import orjson

from agentmsg import MsgRole
from agentmsg.cli._io import (
    BOM,
    CHUNK,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Emptiness,
    HintHead,
    ProviderNames,
    UsageError,
    binary,
    chunks_of,
    clip,
    command_limits,
    empty_input,
    exit_status,
    foreign,
    hint_head,
    is_sse,
    limit_options,
    print_problems,
    read_bytes_or_chunks,
    reads_as,
    said_path,
    say,
    shown_path,
    think_tags_options,
    whole_number,
    write_json_line,
)
from agentmsg.errors import ValidationError, with_article
from agentmsg.events import Reducer
from agentmsg.providers import Provider, StreamFlag, decode_body, get, is_sse_body, providers, without_http_heads


def _events(args: argparse.Namespace) -> Iterator[list[dict[str, Any]]]:
    """The events of FILE as it is read. Without ``--stream``, a body that is
    SSE all the same (it starts with an SSE field: a stream saved without its flag) is read as a stream (read
    whole first, under ``limits.max_bytes``, as any body without the flag)."""
    if args.stream:
        chunks = chunks_of(args.file)
        first = next(chunks, b"")
        found = binary(first)
        if found is not None:  # read no further (/dev/zero would never end)
            raise UsageError(f"{shown_path(args.file)}: not {with_article(args.provider)} stream: {found}")
        return _stream_events(args, itertools.chain([first], chunks))
    read = read_bytes_or_chunks(args.file, is_sse_body)  # an SSE file's chunks as they are read: held whole, a
    if not isinstance(read, bytes):  # 32 MiB body cost its size again while it was parsed
        return _stream_events(args, read)
    data = read
    if (empty := empty_input(data)) is not None:
        raise ValidationError([empty])
    if is_sse_body(data):  # (saved with `curl -i` too: the stream's framer skips the head and says so)
        # fed a chunk at a time, as with --stream: fed whole, the parser made every event of the body at once
        # (a body of 99 MB held 774 MB)
        return _stream_events(args, (data[at : at + CHUNK] for at in range(0, len(data), CHUNK)))
    body, notes = without_http_heads(data)  # saved with `curl -i`: the response head before the body
    for note in notes:
        sys.stderr.write(f"{shown_path(args.file)}: note: {note} [not-kept]\n")
    return _response_events(args, body)


def _stream_events(args: argparse.Namespace, chunks: Iterable[bytes]) -> Iterator[list[dict[str, Any]]]:
    """The events of a streamed body as it is read (bounded memory)."""
    parser = get(args.provider).stream_parser(**_stream_options(args), **_reply_options(args))
    emptiness = Emptiness()  # (an empty input is said as every command says it, not as a cut stream)
    args.head = head = HintHead()  # what the hint is asked about, should none of it be the provider's
    for chunk in emptiness.through(head.through(chunks)):
        yield parser.feed(chunk)
    if emptiness.problem is not None:
        raise ValidationError([emptiness.problem])
    yield parser.close()


def _response_events(args: argparse.Namespace, data: bytes) -> Iterator[list[dict[str, Any]]]:
    """The events of a whole (non-streamed) response body, decoded once: the provider's reader and, when it is
    no such response, the hint (which asks every other provider's reader) read the one value (a body that is
    not JSON was decoded again by each: 7 times)."""
    body: Any = _NOT_JSON
    try:
        body = decode_body(data)
        body = body if isinstance(body, dict) else data  # (an array or a scalar as the bytes: a string is text)
        events = get(args.provider).response_events(body, **_reply_options(args))
    except (orjson.JSONDecodeError, TypeError, ValidationError) as exc:
        hint = _hint(data, args.provider, stream=False, body=body)
        why = f"{exc.problems[0].message} [{exc.problems[0].rule}]" if isinstance(exc, ValidationError) else str(exc)
        said = f"{shown_path(args.file)}: not {with_article(args.provider)} response: {clip(why)}"
        raise UsageError(said + (f" ({hint})" if hint else "")) from None
    yield events


#: what :func:`_hint` is given for a body that is not JSON (no provider reads it as a response)
_NOT_JSON: Final = object()
_EVENT_TYPE = re.compile(r"[A-Z][A-Z_]+")
_ROLES = frozenset(role.value for role in MsgRole)


def _first_payload(data: bytes) -> tuple[Any, bool]:
    """The first JSON value of ``data`` (the whole document, else its first line, or its first SSE ``data:``),
    None when there is none; and whether ``data`` holds JSON lines (two values or more, one per line). Lines end
    where the readers end them: JSON lines at LF alone (a CR alone ends none: ``agentmsg.read_records`` and the
    stream readers read such a body as one line, so it was taken for JSON lines here and fed whole to every
    stream reader the hint asked), SSE at CR, LF or CRLF."""
    text = data.removeprefix(BOM)
    try:
        return orjson.loads(text), False
    except orjson.JSONDecodeError:
        pass
    sse = is_sse(text)
    values = _line_values(text.splitlines() if sse else text.split(b"\n"))
    if not values and not sse:  # lines that a CR alone ends: no JSON lines, but their first value says what they
        values = _line_values(text.splitlines())[:1]  # hold (agentmsg messages, agent events), as it said before
    return (values[0] if values else None), len(values) > 1 and not is_sse(text.lstrip())


def _line_values(lines: list[bytes]) -> list[Any]:
    """The JSON values of the first 64 lines of ``lines`` that are not blank (an SSE line: its ``data:``)."""
    values: list[Any] = []
    for line in itertools.islice((ln for ln in lines if ln.strip()), 64):
        line = line.strip()
        if is_sse(line):
            line = line.removeprefix(b"data:").strip() if line.startswith(b"data:") else b""
        try:
            values.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return values


def _hint(data: bytes, provider: str, *, stream: bool, body: Any = _NOT_JSON) -> str | None:
    """What ``data`` (the input, or the first chunk of a stream) looks like when it is no reply of ``provider``:
    the command or option that reads it (agentmsg messages, agent events, another provider's reply, a stream
    given without --stream), or None. ``body``: a whole response as the provider's reader was given it (an object
    as ``decode_body`` gave it, decoded once; other JSON as the bytes), which the other providers' response readers
    are asked about; :data:`_NOT_JSON` when it is not JSON."""
    try:
        first, lines = _first_payload(data)
    except RecursionError:  # (deeper than orjson's own limit is refused by it: only a safeguard)
        return None
    item = first[0] if isinstance(first, list) and first else first
    if isinstance(item, dict):
        if item.get("role") in _ROLES and "content" in item:
            return "it looks like an agentmsg message, not a provider's reply: check it with 'agentmsg validate'"
        kind = item.get("type")
        if isinstance(kind, str) and _EVENT_TYPE.fullmatch(kind):
            return "it looks like agent events, not a provider's reply: reduce them with 'agentmsg reduce'"
    if lines and not stream:  # (the whole body: every reader asked read all of it, 7 times for a stream's 16 MB)
        data = hint_head(data)
    if lines and not stream and reads_as(provider, data, stream=True):
        return "it holds JSON lines, one payload per line: a streamed body? add --stream"
    if stream or lines:
        others = [name for name in ProviderNames() if name != provider and reads_as(name, data, stream=True)]
    elif body is not _NOT_JSON:  # (not JSON is no provider's response)
        others = [name for name in ProviderNames() if name != provider and reads_as(name, body, stream=False)]
    else:
        others = []
    if others:
        what = "stream" if stream or lines else "response"
        more = "" if stream or not lines else " with --stream"
        return f"it reads as {with_article(others[0])} {what}: try --provider {'/'.join(others)}{more}"
    return None


def _reply_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of every provider's reader, streamed or whole (``--think-tags``, ``--think-tags-open``)."""
    return {"think_tags": args.think_tags} if args.think_tags else {}


def _stream_flags(offering: Iterable[Provider]) -> dict[str, tuple[StreamFlag, list[str]]]:
    """Every flag the providers ``offering`` offer for their stream parser options (``Spec.stream_flags``), with
    the providers that offer it, in their order."""
    found: dict[str, tuple[StreamFlag, list[str]]] = {}
    for provider in offering:
        for flag in provider.spec.stream_flags:
            found.setdefault(flag.flag, (flag, []))[1].append(provider.spec.name)
    return found


_FLAG_DEST = "stream_flag_"  # (a parser option's name cannot collide with the command's own options)


def _flag_dest(option: str) -> str:
    return f"{_FLAG_DEST}{option}"


def _stream_options(args: argparse.Namespace) -> dict[str, Any]:
    """The stream parser options the flags given ask for, from the chosen provider's spec; a flag it does not
    offer (given to the parser of every provider) is a :class:`UsageError` that names the providers that do."""
    options: dict[str, Any] = {}
    offered = {flag.flag: flag for flag in get(args.provider).spec.stream_flags}
    for dest, name in vars(args).items():
        if not dest.startswith(_FLAG_DEST) or name is None:
            continue
        own = offered.get(name)
        if own is None:
            names = _stream_flags(providers())[name][1]
            raise UsageError(f"{name} is for --provider {' or '.join(names)}, not {args.provider}")
        options[own.option] = own.value
    return options


def run(args: argparse.Namespace, out: TextIO) -> int:
    with command_limits(args):
        return _run(args, out)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    _stream_options(args)  # a flag the provider does not offer: said before FILE is read
    wanted: str | None = None
    if args.choice != "all":
        index = int(args.choice)
        wanted = None if index == 0 else f"choice/{index}"
    reducers: dict[str | None, Reducer] = {}
    status = EXIT_OK  # EXIT_INVALID (the input was not read whole) wins over EXIT_ARGUMENTS
    interrupted = alien = printed = False
    try:
        for events in _events(args):
            for e in events:
                if e["type"] == "CUSTOM":
                    said = say(shown_path(args.file), e, sys.stderr)
                    if said != EXIT_OK and status != EXIT_INVALID:
                        status = said
                    alien = alien or foreign(e)
            if args.events:  # the chosen choice's events (choice N > 0: source "choice/N"), or all of them
                shown = events if args.choice == "all" else [e for e in events if e.get("source") == wanted]
                out.writelines(orjson.dumps(e).decode() + "\n" for e in shown)
                printed = printed or bool(shown)
                continue
            for e in events:  # one reducer per choice (events of choice N > 0 carry source "choice/N")
                source = e.get("source")
                r = reducers.get(source)
                if r is None:
                    r = reducers[source] = Reducer(source=source)
                r.feed_many((e,), trusted=True)  # the provider parser's events: valid by construction
    except ValidationError as exc:
        print_problems(shown_path(args.file), "", exc.problems, sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:  # Ctrl-C (a live pipe, say): what arrived is printed, the reply marked INTERRUPTED
        interrupted = True
    if interrupted:
        if not args.events:
            chosen = sorted(reducers, key=_choice_order) if args.choice == "all" else [wanted]
            for source in (s for s in chosen if s in reducers):
                for msg in reducers[source].finish():
                    write_json_line(out, msg.to_json_bytes())
        sys.stderr.write("agentmsg: interrupted\n")
        return EXIT_INTERRUPTED
    if alien:  # no payload of the provider's at all: not its stream (exit 2, as for a body that is no response)
        hint = _hint(args.head.bytes, args.provider, stream=True)
        sys.stderr.write(
            f"agentmsg: {said_path(args.file)}: not {with_article(args.provider)} stream{f' ({hint})' if hint else ''}\n"
        )
        return EXIT_USAGE
    if args.events:
        if not printed and args.choice != "all":
            raise UsageError(f"{shown_path(args.file)}: the reply has no choice {args.choice}")
        return status
    if args.choice != "all" and wanted not in reducers:
        raise UsageError(f"{shown_path(args.file)}: the reply has no choice {args.choice}")
    order = sorted(reducers, key=_choice_order)
    for source in order if args.choice == "all" else [wanted]:
        for msg in reducers[source].finish():
            write_json_line(out, msg.to_json_bytes())
    return status


def _choice_order(source: str | None) -> int:
    return -1 if source is None else int(source.rsplit("/", 1)[1])


def _choice(text: str) -> str:
    if text != "all":
        whole_number("--choice", minimum=0)(text)
    return text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "parse",
        **exit_status(
            "0  the reply was read whole (notes of data the message has no place for do not count)",
            "1  it was not: a cut stream, an error from the provider, payloads that could not be read; the",
            "   message (or --events) is still printed with everything received, and why on stderr",
            "2  usage error, FILE cannot be read, or is not a response of that provider at all (nor its",
            "   stream: no payload of its shape), said in one line with what reads it (a hint)",
            "3  the reply was read whole, but a tool call's arguments, as the provider gave them, are no",
            "   JSON object the message can hold (cut at max_tokens, say): kept raw, with argumentsError, and",
            "   why on stderr (1 when the input was not read whole either)",
            "130  interrupted (Ctrl-C): the message so far is printed, INTERRUPTED",
            interrupt=False,
        ),
    )
    p.add_argument("--provider", required=True, choices=ProviderNames(), help="the provider (registry name)")
    p.add_argument(
        "--stream",
        action="store_true",
        help="FILE is a streamed body (SSE, JSON lines or a JSON array of chunks; SSE is told without it)",
    )
    p.add_argument("--events", action="store_true", help="print the chosen choice's AgentEvents as JSON lines instead")
    p.add_argument(
        "--choice", type=_choice, default="0", help="which choice / candidate to print (default 0), or 'all'"
    )
    think_tags_options(p)
    groups: dict[str, Any] = {}  # flags that set the same parser option exclude each other
    for name, (flag, _) in _stream_flags(sub.providers()).items():  # (the command line's provider's, or all)
        if flag.option not in groups:
            groups[flag.option] = p.add_mutually_exclusive_group()
        groups[flag.option].add_argument(
            name, dest=_flag_dest(flag.option), action="store_const", const=name, default=None, help=flag.help
        )
    p.add_argument("file", metavar="FILE", help="the response body or the streamed body; '-' for stdin")
    limit_options(p)
    p.set_defaults(func=run)
