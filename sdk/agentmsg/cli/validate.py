"""``agentmsg validate``: check JSON files against a schema, with the API's limits and rule names."""

from __future__ import annotations

import argparse
import contextvars
import fnmatch
import glob
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final, TextIO

import orjson

from agentmsg import KINDS, iter_check
from agentmsg.cli._io import (
    EMPTY_INPUT,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    POINTER_LIMIT,
    HintHead,
    ProviderNames,
    UsageError,
    clip,
    command_limits,
    is_sse,
    limit_options,
    looks_like,
    open_binary,
    print_problems,
    reading,
    reply_hint,
    said_empty,
    said_path,
    shown_path,
    stdin_once,
)
from agentmsg.cli._report import Collector
from agentmsg.errors import Problem

#: the kinds ``--kind`` takes besides the schemas' (agentmsg.KINDS), as agentmsg.check takes them
AUTO: Final = "auto"
CONVERSATION: Final = "conversation"

DESCRIPTION = """\
Validate JSON files against the agentmsg schemas (each file's kind told from it by default: --kind), with the same
limits and rule names as the Python API (agentmsg.validate); agentmsg.check(FILE) gives what this prints, as data.
A FILE that does not exist but is a glob pattern (quoted, so that no shell expanded it) stands for the files it
matches, ** at any depth, {a,b} either ('data/**/*.{json,jsonl,ndjson,sse}': the files of every kind), {1..9}
each (a sequence, as in bash); one matching none is an unreadable file. A file holds one JSON value, an array of
instances (each checked on its own, pointer prefix /N) or JSON Lines (one instance per non-blank line, prefix /N
for the N-th, 0-based); for agent events, an SSE stream too (each event's data an instance, /N for the N-th
event). Files are read in bounded memory: JSON Lines line by line, any record or document larger than the byte
limit is refused without reading it all.

The problems are the command's result, so they go to stdout (as a linter's do); stderr has only what stopped
a file from being checked (agentmsg: FILE: cannot read: ...), usage errors, and after an invalid file's
problems a hint when it looks like the other kind (agent events checked as messages: --kind event). Every problem
prints as FILE:POINTER: message [rule]; with --json (--output-format json), as one JSON object per line instead:
{"file", "instance" (the 0-based index in an array, JSON Lines or SSE file, or null), "line" (the file's line,
1-based, where the instance starts, for every problem inside it: a JSON Lines record's, an array item's first
line, an SSE event's first field line; a JSON syntax error's own line; null for what is the file's: a stream cut
short), "pointer" (within the instance), "rule", "kind" ("error" or "note"), "message"}, and a file that cannot
be read as rule "unreadable". With --output-format github, as GitHub Actions workflow commands (::error
file=FILE,line=LINE,title=...::POINTER: message, ::notice for notes), which a workflow step shows as annotations
on the files' lines (SARIF: each result's region.startLine; JUnit: "(line N)" in each failure). Stdin ('-') is
'-' in every report (its annotations name no file): --stdin-filename NAME names it (a file piped in).
Keys the schema does not declare (a newer producer's) are accepted, as the readers keep them, and printed as notes
(FILE:POINTER: note: ... [unknown-key]); --strict rejects them instead ([additionalProperties]). Legacy keys
(AgentScope's seed documents: a tool_use's arguments, a tool_result's result or toolUseId, a MODEL_CALL_END's own
inputTokens, ...) are printed as notes saying what the readers read them as (FILE:POINTER: note: ... [legacy-key]),
the verdict staying the schema's; --strict refuses them ([legacy-key]). What the readers refuse in the form they
read (a result of ["x"], read as an output whose item is no block) is an error too, at the pointer and with the
rule Msg.from_json says it (/content/0/output/0 ... [anyOf]), its message naming where the file writes it
("as the readers read the legacy keys: written at /content/0/result/0").

Each file's kind is told from its start (--kind auto, the default; --kind forces one): agent events (JSON
lines, a JSON array or SSE) are an event stream, a JSON array of messages a conversation, an object with a role
a message (JSON lines of messages: each its own; --kind conversation reads them as one conversation, as agentmsg
format does), an object with a lowercase type a content block. Beyond each
instance's schema, an event stream is checked as agentmsg reduce reads it (the reducer's order and pairing rules:
[order], ..., and a stream cut inside a reply: [incomplete_stream]), a conversation as the formatters read it (a
tool call with no result: [tool-use-orphan], a result answering no call: [tool-result-orphan]); --provider P
adds what P's formatter would not send as it is (the diagnostics format --strict refuses; its rewrites are
notes). --output-format sarif writes a SARIF 2.1.0 log, junit a JUnit XML report (a testcase per file, a failure
per problem), once every file is checked; their rules link to docs/rules.md (AGENTMSG_RULES_URL: another copy)."""

EPILOG = """\
exit status:
  0  every instance is valid (notes about unknown and legacy keys do not count)
  1  some instance is invalid: a schema or role rule, text that is not JSON, or beyond the limits
     ([max-bytes], [max-depth]), or a value that could not be written back ([integer-range], [lone-surrogate])
  2  usage error, or a file that cannot be read (the other files are still checked)
  130  interrupted (Ctrl-C)"""


def run(args: argparse.Namespace, out: TextIO) -> int:
    collector = Collector(args.output_format) if args.output_format in COLLECTED else None
    token = _collector.set(collector)
    try:
        with command_limits(args):
            code = _run(args, out)
    finally:
        _collector.reset(token)
    if collector is not None:  # the whole report, once every file is checked
        collector.write(out)
    return code


#: the reports written once every file is checked (agentmsg.cli._report), not a line per problem
COLLECTED = ("sarif", "junit")
_collector: contextvars.ContextVar[Collector | None] = contextvars.ContextVar("agentmsg_validate_collector")


def _reporter(output_format: str) -> Any:
    """The report of this run for ``output_format``: a line report (``REPORTS``), or the run's collector."""
    return _collector.get(None) or REPORTS[output_format]


def _run(args: argparse.Namespace, out: TextIO) -> int:
    """Each file checked by ``agentmsg.iter_check`` (the API gives the findings; this prints them and the hints)."""
    invalid = unreadable = False
    report = _reporter(args.output_format)
    if args.stdin_filename == "":  # (code scanning refuses a SARIF artifact URI that is empty; file= names none)
        raise UsageError("--stdin-filename: the name is empty: give the file's path, or leave the option out")
    stdin_once(*((f"FILE {i}", path) for i, path in enumerate(args.files, 1)))
    for path, matched in _expand(args.files):
        name = args.stdin_filename if path == "-" and args.stdin_filename is not None else path  # (as shown)
        try:
            source = open_binary(path, file_only=matched)
        except UsageError as exc:
            _unreadable(path, exc, args.output_format, out, matched=matched, name=name)
            unreadable = True
            continue
        shown = shown_path(name)
        file_invalid = False
        if isinstance(report, Collector):
            report.file(shown, name)
        try:
            try:
                held = HintHead()  # the start the hint is asked about, to the end of a line
                findings = iter_check(held.reading(source), kind=args.kind, provider=args.provider, strict=args.strict)
            except OSError as exc:  # reading the file's start, to tell its kind
                raise UsageError(f"{shown_path(path)}: cannot read: {exc.strerror or exc}") from None
            empty = False  # (nothing but blanks: said as every command says it, with no hint)
            for f in reading(path, findings):
                prefix = "" if f.instance is None else f"/{f.instance}"
                within = said_empty(findings.head, Problem(f.pointer, f.rule, f.message), f.line)
                empty = empty or within is EMPTY_INPUT
                if report(shown, prefix, [within], out, line=f.line, note=f.note) and not f.note:
                    file_invalid = invalid = True
            hint = _hint(held, findings.kind) if file_invalid and not empty else None
            if hint is not None:  # after its problems, on stderr: a hint about the command, not a problem
                print(f"agentmsg: {said_path(name)}: {hint}", file=sys.stderr)
        except UsageError as exc:  # reading the file failed (an error writing the output is not this file's)
            _unreadable(path, exc, args.output_format, out, matched=matched, name=name)
            unreadable = True
        finally:
            if path != "-":
                source.close()
    return EXIT_USAGE if unreadable else EXIT_INVALID if invalid else EXIT_OK


def _hint(held: HintHead, kind: str) -> str | None:
    """What to say after an invalid file's problems: when its start shows agent events but it was checked as
    messages, or messages checked as events, the option that fits (an SSE stream not checked as events: its
    problem says it); else, for a message or events file that reads as a provider's reply or stream, the command
    that reads it."""
    checked = "msg" if kind == CONVERSATION else kind
    head = held.bytes
    seen = looks_like(head)
    if not (is_sse(head) and checked != "event"):
        if seen == "events" and checked == "msg":
            return "it looks like agent events, not messages: check them with --kind event"
        if seen == "messages" and checked == "event":
            return "it looks like messages, not agent events: check them with --kind msg"
    if checked in ("msg", "event"):  # a provider's reply, or stream
        return reply_hint(head, whole=held.whole)
    return None


def _text(
    path: str, prefix: str, problems: Iterable[Problem], out: TextIO, *, line: int | None = None, note: bool = False
) -> int:
    """The default report: ``FILE:POINTER: message [rule]`` (the line is not part of it)."""
    return print_problems(path, prefix, problems, out, note=note)


def _json_lines(
    path: str, prefix: str, problems: Iterable[Problem], out: TextIO, *, line: int | None = None, note: bool = False
) -> int:
    """``--json``: one JSON object per problem (file, instance, line, pointer, rule, kind, message; a diagnostic said
    once for several places also pointers, every one); how many."""
    n = 0
    instance = int(prefix[1:]) if prefix else None
    for p in problems:
        row: dict[str, Any] = {
            "file": path,
            "instance": instance,
            "line": line,
            "pointer": p.pointer,
            "rule": p.rule,
            "kind": "note" if note else "error",
            "message": p.message,
        }
        if p.other_pointers:
            row["pointers"] = list(p.pointers)
        out.write(orjson.dumps(row).decode() + "\n")
        n += 1
    return n


def _github(
    path: str, prefix: str, problems: Iterable[Problem], out: TextIO, *, line: int | None = None, note: bool = False
) -> int:
    """``--output-format github``: one GitHub Actions workflow command per problem (``::error`` or, for a note,
    ``::notice``), which the runner shows as an annotation on the file (on the line, when known); how many."""
    n = 0
    for p in problems:
        pointer = prefix + p.pointer
        text = f"{clip(pointer, POINTER_LIMIT)}: {clip(p.message)}" if pointer else clip(p.message)
        out.write(gh_command("notice" if note else "error", path, line, f"agentmsg validate [{p.rule}]", text))
        n += 1
    return n


def gh_command(level: str, path: str, line: int | None, title: str, text: str) -> str:
    """A GitHub Actions workflow command (``::error`` or ``::notice``) on file ``path`` (and ``line``, when known),
    escaped; stdin with no name (``-``, no --stdin-filename) is no file of the repository: no ``file=`` (the
    annotation is the run's), as ``file=-`` would point at nothing."""
    props = [f"file={_gh_property(path)}"] if path != "-" else []
    if line is not None:
        props.append(f"line={line}")
    props.append(f"title={_gh_property(title)}")
    return f"::{level} {','.join(props)}::{_gh_data(text)}\n"


def _gh_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does (``%``, CR and LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    """A workflow command's property value: its message escapes, and ``:`` and ``,`` too."""
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


REPORTS = {"text": _text, "json": _json_lines, "github": _github}


def _expand(paths: list[str]) -> Iterator[tuple[str, bool]]:
    """The files to check, each with whether a pattern matched it: each argument as given, except a glob pattern
    that names no file as it is (quoted, so no shell expanded it: a CI step run without a shell, pre-commit's args,
    Windows), which gives the files it matches, sorted (``**`` any depth, as ajv-cli does), files only (no pipe:
    :func:`_glob`); one that matches none is said as unreadable. A file named again (twice, or given and matched)
    is checked once, where first named. A matched file named ``-`` is that file, given back as ``./-``: only a
    ``-`` given as an argument is stdin (``'*'`` in a folder holding ``-`` read stdin instead)."""
    seen: set[str] = set()
    for path in paths:
        if path == "-" or not _is_pattern(path) or os.path.lexists(path):
            found, matched = [path], False
        else:
            # (the pattern as given too: a folder or file whose name holds braces, which glob reads as such)
            found = sorted({p for each in {path, *_braces(path)} for p in _glob(each)})
            found, matched = ([_a_file_path(p) for p in found], True) if found else ([path], False)
        for p in found:
            key = p if p == "-" else os.path.normcase(os.path.abspath(p))
            if key not in seen:
                seen.add(key)
                yield p, matched


def _a_file_path(path: str) -> str:
    """A path a pattern matched, as it can be opened and shown: a file named ``-`` in the current folder as
    ``./-`` (``-`` alone is stdin to every command)."""
    return os.path.join(os.curdir, path) if path == "-" else path


def _braces(pattern: str) -> list[str]:
    """The patterns a pattern's ``{a,b,...}`` stand for, as bash's brace expansion gives them (``*.{json,sse}``:
    ``*.json`` and ``*.sse``; several and nested groups too): one pattern for files of several kinds, which matches
    none only when there is no file of any of them (a pattern per kind, one matching none, was an unreadable file).
    As in bash, a group is a ``{`` with its own ``}`` and a comma of its own (``{a}`` and a lone ``{`` or ``}`` are
    themselves, ``{{a,b}`` is ``{a`` and ``{b``), and a backslash makes the ``{``, ``}``, ``,`` or backslash after
    it a plain character (``\\{a,b\\}`` is ``{a,b}``), taken off in the patterns given back; other backslashes stay
    (a Windows path's separators: there none escapes). A group of no comma may be a sequence, as in bash:
    ``{1..3}``, ``{a..e}``, ``{01..10..3}`` (an increment; zero-padded when an end is), else it is itself. A
    pattern standing for more than :data:`MAX_BRACE_PATTERNS` patterns, or :data:`MAX_BRACE_CHARACTERS`
    characters, is a usage error."""
    escapes = os.sep != "\\"
    try:
        expanded = _expand_braces(pattern, escapes)
    except RecursionError:  # (groups in groups hundreds deep: bash expands them; a CLI argument of no one's)
        raise UsageError(f"{clip(shown_path(pattern), 80)}: its brace groups nest too deeply to expand") from None
    except _TooMany:
        raise UsageError(
            f"{clip(shown_path(pattern), 80)}: its brace groups stand for more than {MAX_BRACE_PATTERNS:,} patterns"
            f" (or {MAX_BRACE_CHARACTERS:,} characters)"
        ) from None
    return [_unescape(p) if escapes else p for p in expanded]


#: the characters a backslash makes plain in a brace pattern (bash's quoting, as far as braces go)
_BRACE_ESCAPED: Final = frozenset("{},\\")
#: bash opens no group at a ``{`` after these (the text's start: "") followed by them or ``}`` (``find``'s ``{}``)
_BRACE_BLANK: Final = frozenset(("", " ", "\t", "\n"))
_BRACE_BLANK_OR_CLOSE: Final = _BRACE_BLANK | {"}"}
#: the most patterns one pattern's brace groups may stand for (``{1..100000000}``: a mistake, not a file list)
MAX_BRACE_PATTERNS: Final = 100_000
#: the most characters they may come to, all told (``'x' * 100_000 + '{1..99999}'``: 10 GB of patterns)
MAX_BRACE_CHARACTERS: Final = 50_000_000
#: what :func:`_group_opens` looks at: an escape (passed over), a brace, a comma, a ``..`` not right before a ``}``
_BRACE_TOKENS: Final = re.compile(r"\\[{},\\]|[{},}]|\.(?=\.(?!\}))")
_BRACE_TOKENS_PLAIN: Final = re.compile(r"[{},}]|\.(?=\.(?!\}))")
#: a sequence's end as bash's ``strtoimax`` reads one (the left end may have blanks around it: ``legal_number``)
_SEQ_INT: Final = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_INTMAX: Final = 2**63


class _TooMany(Exception):
    """A brace pattern stands for more than :data:`MAX_BRACE_PATTERNS` patterns or :data:`MAX_BRACE_CHARACTERS`
    characters."""


def _expand_braces(text: str, escapes: bool) -> list[str]:
    """bash's ``brace_expand``: the first ``{`` that opens a group (its ``}`` found with a comma of its own), its
    alternatives each expanded, after the text before it and before every expansion of the text after it. The
    text after a group is expanded in the same loop (``{1..1}`` a thousand times is no nesting), and which
    ``{`` opens a group is told, once one does not, by one pass (:func:`_group_opens`), not by a scan from each
    ``{`` to the end."""
    comma = _separator(text, text.find("{") + 1) if "{" in text else -1
    if comma < 0 or text.find("}", comma + 1) < 0:  # no comma (or ..) with a } after it: no group
        return [text]
    opens: bytearray | None = None  # (made when a { opens no group: the first { usually does)
    done, start, at = [""], 0, 0  # done: the expansions of text[:start]; at: where to look for the next group
    while True:
        at = _brace_scan(text, at, "{", escapes, start=start)
        if at == len(text):
            break
        close = len(text) if opens is not None and not opens[at] else _brace_scan(text, at + 1, "}", escapes)
        if close == len(text):
            if opens is None:
                opens = _group_opens(text, escapes)
            at += 1  # (no group opens here: the next {)
            continue
        inner, begin = text[at + 1 : close], 0
        if _brace_scan(inner, 0, ",", escapes, nested=True) == len(inner):  # (no comma at any depth: a sequence?)
            sequence = _sequence(inner)
            if sequence is None and close + 1 == len(text):
                break  # (the rest is itself)
            alternatives = sequence if sequence is not None else [text[at : close + 1]]
        else:
            alternatives, size = [], 0
            while True:
                comma = _brace_scan(inner, begin, ",", escapes)
                each = _expand_braces(inner[begin:comma], escapes)
                alternatives += each
                size += sum(map(len, each))
                if len(alternatives) > MAX_BRACE_PATTERNS or size > MAX_BRACE_CHARACTERS:
                    raise _TooMany
                if comma == len(inner):
                    break
                begin = comma + 1
        done = _joined(done, text[start:at], alternatives)
        start = at = close + 1
    return _joined(done, text[start:], [""])


def _joined(done: list[str], head: str, alternatives: list[str]) -> list[str]:
    """Each of ``done`` followed by ``head`` and each alternative in turn; :class:`_TooMany` before any is made
    when they would be more than :data:`MAX_BRACE_PATTERNS` patterns or :data:`MAX_BRACE_CHARACTERS` characters."""
    count = len(done) * len(alternatives)
    size = len(alternatives) * (sum(map(len, done)) + len(done) * len(head)) + len(done) * sum(map(len, alternatives))
    if count > MAX_BRACE_PATTERNS or size > MAX_BRACE_CHARACTERS:
        raise _TooMany
    return [each + head + alternative for each in done for alternative in alternatives]


def _separator(text: str, at: int) -> int:
    """Where the first ``,`` or ``..`` is from ``at`` on (-1 if none): a group needs one before its ``}``."""
    found = [i for i in (text.find(",", at), text.find("..", at)) if i >= 0]
    return min(found) if found else -1


def _group_opens(text: str, escapes: bool) -> bytearray:
    """Whether a ``{`` at each place of ``text`` opens a group (1, else 0): whether the scan after it
    (:func:`_brace_scan` for ``}``) finds a ``}`` of its own after a separator of its own, told for every ``{`` in
    one pass each way. The scan's depth at ``k`` from ``s`` is ``B(k) - min(B[s..k])`` (``B``: the braces opened
    less those closed before ``k``; a ``}`` at depth 0 closes nothing), so ``k`` is at depth 0 for every ``s``
    after ``P(k)``, the last place before ``k`` where ``B`` was lower (one lower: it moves by one). A separator
    ``c`` and a ``}`` after it, ``k``, make a group for every ``s`` from ``max(P(c), P(k)) + 1`` to ``c``."""
    last: dict[int, int] = {}  # the last place where B was each value
    marks: list[tuple[int, str, int]] = []  # (place, its character, P(place) for a separator or a })
    balance = 0
    for found in (_BRACE_TOKENS if escapes else _BRACE_TOKENS_PLAIN).finditer(text):
        at, char = found.start(), found.group()
        last[balance] = at
        if char == "{":
            marks.append((at, char, -1))
            balance += 1
        elif char in "},.":
            marks.append((at, char, last.get(balance - 1, -1)))
            balance -= char == "}"
    opens = bytearray(len(text))
    closer = lowest = len(text)  # the least P(k) of a } after here; the least group start bound from here on
    for at, char, below in reversed(marks):
        if char == "}":
            closer = min(closer, below)
        elif char == "{":
            opens[at] = lowest < at + 1
        else:
            lowest = min(lowest, max(below, closer))
    return opens


def _sequence(inner: str) -> list[str] | None:
    """A group's text of no comma as bash's ``expand_seqterm`` reads it: ``x..y[..incr]``, both ends integers
    (zero-padded to the longer end's width when an end starts with ``0`` or ``-0``) or both one ASCII letter,
    every step from x to y (``incr``'s sign is ignored: the ends give the direction); None when it is no
    sequence (the group is then itself, as in bash)."""
    dots = inner.find("..")
    if dots <= 0 or dots + 2 == len(inner):
        return None
    lhs, rhs = inner[:dots], inner[dots + 2 :]
    left = _SEQ_INT.match(lhs)
    if left is not None and lhs[left.end() :].strip(" \t") == "" and -_INTMAX <= int(left.group(1)) < _INTMAX:
        lhs_kind, start = "int", int(left.group(1))
    elif len(lhs) == 1 and lhs.isascii() and lhs.isalpha():
        lhs_kind, start = "char", ord(lhs)
    else:
        return None
    if rhs[0] in "0123456789" or (rhs[0] in "+-" and rhs[1:2] in tuple("0123456789")):
        right = _SEQ_INT.match(rhs)
        assert right is not None
        rhs_kind, end, rest = "int", int(right.group(1)), rhs[right.end() :]
        if not -_INTMAX <= end < _INTMAX:
            return None
    elif rhs[0].isascii() and rhs[0].isalpha() and rhs[1:2] in ("", "."):
        rhs_kind, end, rest = "char", ord(rhs[0]), rhs[1:]
    else:
        return None
    incr = 1
    if rest:
        given = _SEQ_INT.fullmatch(rest[2:]) if rest.startswith("..") else None
        if given is None or not -_INTMAX <= int(given.group(1)) < _INTMAX:
            return None
        incr = int(given.group(1))
    if lhs_kind != rhs_kind:
        return None
    width = 0
    if lhs_kind == "int":
        right_text = rhs[: len(rhs) - len(rest)]
        if any((t[:1] == "0" and len(t) > 1) or (t[:2] == "-0" and len(t) > 2) for t in (lhs, right_text)):
            width = max(len(lhs), len(right_text))
    step = abs(incr) or 1
    if start < end and incr == -_INTMAX:
        return None
    if abs(end - start) // step + 1 > MAX_BRACE_PATTERNS:
        raise _TooMany
    values = range(start, end + 1, step) if start <= end else range(start, end - 1, -step)
    if lhs_kind == "char":
        return [chr(n) for n in values]
    return [f"{n:0{width}d}" for n in values] if width else [str(n) for n in values]


def _brace_scan(text: str, at: int, wanted: str, escapes: bool, *, nested: bool = False, start: int = 0) -> int:
    """Where ``wanted`` is from ``at`` on, outside nested groups (inside them too with ``nested``) and not
    escaped (bash's ``brace_gobbler``); a ``}`` only after a comma (or a ``..`` not right before a ``}``) of its
    own group; ``len(text)`` when nowhere. A ``{`` at ``start`` is at the start of the text (the text after a
    group, expanded as bash expands it: on its own)."""
    depth, commas, i = 0, wanted != "}", at
    while i < len(text):
        char = text[i]
        if char == "\\" and escapes and text[i + 1 : i + 2] in _BRACE_ESCAPED:
            i += 2
            continue
        if char == wanted and (depth == 0 or nested) and commas:
            if wanted != "{" or not (
                (text[i - 1 : i] if i > start else "") in _BRACE_BLANK and text[i + 1 : i + 2] in _BRACE_BLANK_OR_CLOSE
            ):
                return i
            i += 1  # (a { at the start or after a blank, before a } or blank: bash opens none there)
            continue
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif depth == 0 and (
            char == "," or (char == "." and text[i + 1 : i + 2] == "." and text[i + 2 : i + 3] != "}")
        ):
            commas = True  # (a ``..`` is a sequence's, as a comma is a list's)
        i += 1
    return i


def _unescape(pattern: str) -> str:
    """A brace pattern's escaped characters (``\\{``, ``\\}``, ``\\,``, ``\\\\``) as themselves."""
    if "\\" not in pattern:
        return pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and pattern[i + 1 : i + 2] in _BRACE_ESCAPED:
            i += 1
        out.append(pattern[i])
        i += 1
    return "".join(out)


def _glob(pattern: str) -> Iterator[str]:
    """The files to check that ``glob.glob(pattern, recursive=True)`` gives: regular files, and names that do not
    resolve (said unreadable); not a folder, nor a named pipe, socket or device (opening a pipe waits for a writer).
    ``**`` enters no folder already on the path it walks (a link back to a parent): glob followed such a loop until
    the path was too long, each file again at every depth (two such links: 2**40 paths). Each folder is listed
    once, and an entry's type comes from the listing: a folder is looked at (``stat``) once, for its identity; a
    file not at all, but through a link."""
    drive, rest = os.path.splitdrive(pattern)
    parts = (rest.replace(os.sep, "/") if os.altsep else rest).split("/")
    if parts[0] == "" and len(parts) > 1:  # an absolute pattern: from the root
        yield from _match(drive + os.sep, parts[1:], frozenset(), None)
    else:
        yield from _match(drive, parts, frozenset(), None)


def _match(
    base: str, parts: list[str], above: frozenset[tuple[int, int]], listed: list[os.DirEntry[str]] | None
) -> Iterator[str]:
    """The files under folder ``base`` (``""``: the current folder) that ``parts`` match; ``above``: the folders
    (device, inode) on the way down a ``**``, ``base`` among them, which it does not enter again; ``listed``:
    ``base``'s entries when a ``**`` listed them already."""
    if not parts:  # (a pattern ending in ``**``: base is a folder, no file)
        return
    part, rest = parts[0], parts[1:]
    if part == "**":
        listed = _entries(base) if listed is None else listed
        here = above or _identity(base or os.curdir)
        yield from _match(base, rest, here, listed)  # ** as no folder
        for entry in _named(listed, "*"):
            if _is_dir(entry):
                inside = _identity(entry)
                if not inside & here:
                    yield from _match(os.path.join(base, entry.name), parts, here | inside, None)
            elif not rest and _a_file(entry):
                yield os.path.join(base, entry.name)
        return
    if not glob.has_magic(part):
        path = os.path.join(base, part) if part else base + "/"
        if rest:
            if os.path.isdir(path):
                yield from _match(path, rest, frozenset(), None)
        elif _a_file(path):
            yield path
        return
    for entry in _named(_entries(base) if listed is None else listed, part):
        if rest:
            if _is_dir(entry):
                yield from _match(os.path.join(base, entry.name), rest, frozenset(), None)
        elif _a_file(entry):
            yield os.path.join(base, entry.name)


def _a_file(entry: os.DirEntry[str] | str) -> bool:
    """Whether a name a pattern matched is to be checked: a regular file, or a name that does not resolve (said
    unreadable). An entry of a folder's listing has its type from the listing (a link is followed)."""
    if isinstance(entry, str):
        try:
            return stat.S_ISREG(os.stat(entry).st_mode)
        except OSError:
            return os.path.lexists(entry)
    try:
        if not entry.is_symlink():
            return entry.is_file()
        return stat.S_ISREG(entry.stat().st_mode)
    except OSError:
        return True


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a folder, a link followed (as ``os.path.isdir``: False when it cannot be told)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _identity(folder: os.DirEntry[str] | str) -> frozenset[tuple[int, int]]:
    """A folder's (device, inode), the links to it followed; none when it cannot be read."""
    try:
        st = folder.stat() if isinstance(folder, os.DirEntry) else os.stat(folder)
    except OSError:
        return frozenset()
    return frozenset({(st.st_dev, st.st_ino)})


def _entries(base: str) -> list[os.DirEntry[str]]:
    """The entries of folder ``base``; none when it cannot be read."""
    try:
        with os.scandir(base or os.curdir) as it:
            return list(it)
    except OSError:
        return []


def _named(entries: list[os.DirEntry[str]], part: str) -> list[os.DirEntry[str]]:
    """The entries whose names ``part`` matches, as glob matches them (a hidden name only when ``part`` starts
    with a dot)."""
    hidden = part.startswith(".")
    return [e for e in entries if (hidden or not e.name.startswith(".")) and fnmatch.fnmatch(e.name, part)]


def _is_pattern(path: str) -> bool:
    return any(c in path for c in "*?[") or _braces(path) != [path]


def _unreadable(
    path: str, exc: UsageError, output_format: str, out: TextIO, *, matched: bool = False, name: str | None = None
) -> None:
    """A file that cannot be read: said on stderr; with ``--json`` or ``--output-format github`` in the report
    too (rule ``unreadable``). ``matched``: a file a pattern found (gone or changed since: the reason as it is);
    ``name``: the name it is shown by (stdin's, --stdin-filename), when not ``path``."""
    message = str(exc).removeprefix(f"{shown_path(path)}: ")
    name = path if name is None else name
    if not matched and path != "-" and os.path.isdir(path):  # validate takes files, several: how to give a folder's
        where = shown_path(path).rstrip("/")
        message += f" (give its files: '{where}/**/*.json', quoted, is every .json file under it)"
    elif not matched and _is_pattern(path):  # a pattern (see _expand) that matched nothing
        message = "no file matches this pattern"
    print(f"agentmsg: {said_path(name)}: {message}", file=sys.stderr)
    if output_format != "text":
        report = _reporter(output_format)
        if isinstance(report, Collector):
            report.file(shown_path(name), name)
        report(shown_path(name), "", [Problem("", "unreadable", message)], out)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--kind",
        default=AUTO,
        choices=[AUTO, CONVERSATION, *sorted(KINDS)],
        help="what the files hold (default: auto, told from each file's start: msg, conversation (a JSON array of "
        "messages), event (JSON lines, SSE or a JSON array of agent events), content-block)",
    )
    provider = p.add_argument(
        "--provider",
        help="conversations: also what this provider's formatter would not send as it is (its lossy and error "
        "diagnostics are problems, as format --strict refuses them; its rewrites notes)",
    )
    provider.choices = ProviderNames()  # (after add_argument, which lists the choices to check the metavar)
    p.add_argument(
        "--strict", action="store_true", help="reject keys the schema does not declare (default: accept them, as notes)"
    )
    p.add_argument(
        "--output-format",
        choices=sorted([*REPORTS, *COLLECTED]),
        default="text",
        help="text: FILE:POINTER: message [rule] (default); json: one JSON object per problem and note (for CI "
        "and other tools); github: GitHub Actions annotations; sarif: a SARIF 2.1.0 log (code scanning), junit: "
        "JUnit XML (one testcase per file, a failure per problem), each written once every file is checked",
    )
    p.add_argument(
        "--json", dest="output_format", action="store_const", const="json", help="the same as --output-format json"
    )
    p.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="the name stdin ('-') is shown by in every report (as ruff's and eslint's): a GitHub annotation's "
        "file, the SARIF artifact's URI, the JUnit testcase; without it stdin is '-' in each, and a GitHub "
        "annotation names no file",
    )
    limit_options(p)
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="JSON value, array, JSON Lines or SSE; '-' for stdin; a quoted glob pattern "
        "('data/**/*.{json,jsonl}') is expanded",
    )
    p.set_defaults(func=run)
