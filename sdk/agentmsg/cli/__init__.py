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
:data:`COMMANDS` names each command's module and its line of ``agentmsg --help``: a run imports the module of the
command it runs alone (``agentmsg --help`` none), as CI runs ``agentmsg validate FILE`` per file
(``tests/cli/test_startup.py`` checks it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TextIO

from agentmsg import __version__
from agentmsg.cli._io import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    clip,
    said_path,
    shown_path,
)
from agentmsg.errors import one_line

__all__ = ["build_parser", "main"]

#: Each command, in the order ``agentmsg --help`` lists them: the module (``agentmsg.cli.MODULE``) whose
#: ``add_parser`` builds its parser, and its line in ``agentmsg --help`` (the module gives no ``help=``).
COMMANDS: Final = {
    "validate": ("validate", "validate JSON files against a schema (exit 0 valid, 1 invalid, 2 usage or unreadable)"),
    "schema": ("schema", "print a schema, or list them"),
    "reduce": ("events", "reduce an event stream (JSONL, SSE or a JSON array) to messages, one JSON per line"),
    "events": ("events", "print the event stream of messages (JSONL, or SSE with --sse)"),
    "format": ("format", "format a conversation as a provider request (body on stdout, diagnostics on stderr)"),
    "count": ("count", "count a conversation's input tokens for a provider, offline (the count as JSON on stdout)"),
    "trim": (
        "trim",
        "cut a conversation to a token budget for a provider (trimmed conversation on stdout, removals on stderr)",
    ),
    "parse": ("parse", "a provider's response or stream -> the agentmsg message (or its events)"),
    "chat": ("chat", "stream a reply from a provider, live"),
    "serve": ("serve", "the event viewer: a page that renders an event file's reply live"),
}

if TYPE_CHECKING:
    from agentmsg.providers import Provider

    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction


#: The namespace attribute where a command's parser keeps the single-valued options given so far (dropped once parsed)
_GIVEN = "_agentmsg_given"


class _Once(argparse.Action):
    """A single-valued option (``store``, ``store_const``, ``store_true``, ``store_false``) given twice is a usage
    error, ``--model given twice (a, b)``, where argparse takes the last silently, and so are two options of one
    setting (``--json`` and ``--output-format``, ``--cumulative`` and ``--incremental``); options meant to
    repeat (``append``, ``count``) and positional arguments are as argparse has them."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if option_string is not None:
            given: dict[str, tuple[argparse.Action, str, str]] = namespace.__dict__.setdefault(_GIVEN, {})
            value = "" if self.nargs == 0 else str(values)
            if self.dest in given:
                before, said_as, was = given[self.dest]
                if before is not self:  # (two options of one setting: --json and --output-format, say)
                    parser.error(f"{said_as} and {option_string} set the same thing: give one")
                said = f" ({was}, {value})" if value else ""
                parser.error(f"{option_string} given twice{said}")
            given[self.dest] = (self, option_string, value)
        super().__call__(parser, namespace, values, option_string)


class _Untaken(Exception):
    """A parser on trial did not take its command line as it is (a help page, a usage error, an argument left)."""


class _Parser(argparse.ArgumentParser):
    """A parser of agentmsg (the top-level one, and each command's: :class:`_CommandParser`): an argument that is no
    choice of its option is said as the CLI says what it was given, as an unknown schema name is (``schema``):
    bytes that are not UTF-8 as ``\\xNN`` (argparse's repr wrote the surrogate, ``'\\udcff'``), control characters
    escaped, and one longer than :data:`_CHOICE_SHOWN` characters cut, its length said (argparse quoted it whole)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            listed = ", ".join(map(repr, choices))
            shown = clip(shown_path(value), _CHOICE_SHOWN)
            raise argparse.ArgumentError(action, f"invalid choice: '{shown}' (choose from {listed})")
        super()._check_value(action, value)

    def _print_message(self, message: str, file: Any = None) -> None:
        if file is sys.stdout and message:  # (--help, --version: the output, whose failure main says; argparse
            file.write(message)  # swallowed it, and exited 0 having printed nothing)
            return
        super()._print_message(message, file)


#: the most characters of an argument that is no choice its error quotes (as ``schema`` quotes an unknown name)
_CHOICE_SHOWN: Final = 60


class _CommandParser(_Parser):
    """A command's parser: its single-valued options once each (:class:`_Once`), whatever module adds them.
    On trial (``trying``), it prints nothing and exits not: what it would print raises :class:`_Untaken`."""

    trying = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, action in (
            (None, argparse._StoreAction),
            ("store", argparse._StoreAction),
            ("store_const", argparse._StoreConstAction),
            ("store_true", argparse._StoreTrueAction),
            ("store_false", argparse._StoreFalseAction),
        ):  # (the registry is shared with the parser's groups; an action given as a class is left as it is)
            self.register("action", name, type(f"Once{action.__name__}", (_Once, action), {}))

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        vars(parsed).pop(_GIVEN, None)  # (before argparse copies the command's namespace into agentmsg's)
        return parsed, extra

    def _print_message(self, message: str, file: Any = None) -> None:
        if self.trying:
            raise _Untaken
        super()._print_message(message, file)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if self.trying:
            raise _Untaken
        super().exit(status, message)


class _Commands(_SubParsers):
    """The subcommands, each parser built by its module's ``add_parser`` when the command is named (argparse
    calls this action with it), so that a run imports that module alone: until then a command is a placeholder
    parser that holds its line of ``agentmsg --help``.

    A command whose parser is made of its providers' specs (``parse``'s stream flags, ``chat``'s key variables:
    the module asks :meth:`providers`) is built in two phases, so that a run imports the one provider module it
    uses: its command line's ``--provider`` is read alone, then its parser is built from that provider's spec and
    tried on the command line. The parser of every provider is built, as ever, where that one does not take the
    command line as it is: a help page, a usage error (another provider's flag, said naming it), an argument
    left over."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unbuilt: set[str] = set()
        #: the command line the parsers are built for (the command's arguments), else None: every provider's
        self._argv: Sequence[str] | None = None
        #: the provider a module's parser was built for (the one that command line names), else None: every one
        self._provider: str | None = None
        for name, (_module, text) in COMMANDS.items():
            super().add_parser(name, help=text)
            self._unbuilt.add(name)

    def providers(self) -> tuple[Provider, ...]:
        """The registry's providers a command's parser offers what their specs say for (flags, help): the one
        its command line names, in the first phase of a two-phase build, else every one (in registry order)."""
        from agentmsg.providers import get, providers

        if self._argv is not None:
            self._provider = _provider_named(self._argv)
        return (get(self._provider),) if self._provider is not None else providers()

    def build(self, name: str, argv: Sequence[str] | None = None) -> None:
        """The parser of command ``name`` (and of the other commands of its module), if not built yet; for the
        command line ``argv`` (the command's arguments), the parser of the provider it names when it takes them."""
        if name not in self._unbuilt:
            return
        from agentmsg import schema_documents  # (not at the start: `agentmsg --help` imports no schemas)

        schema_documents()  # registers every shipped schema in KINDS (validate's and schema's choices)
        if argv is not None:
            one = type(self)(option_strings=[], prog=self._prog_prefix, parser_class=self._parser_class, dest=self.dest)
            one._argv = argv
            one._add_parsers(name)
            parser = one._name_parser_map[name]
            if one._provider is None or _takes(parser, argv, one._provider):
                self._name_parser_map[name] = parser  # (agentmsg --help is printed before: its listing is kept)
                self._unbuilt.discard(name)
                return
        self._add_parsers(name)

    def _add_parsers(self, name: str) -> None:
        importlib.import_module(f"{__name__}.{COMMANDS[name][0]}").add_parser(self)
        if name in self._unbuilt:
            raise RuntimeError(f"agentmsg.cli.{COMMANDS[name][0]} built no parser for {name!r}")

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A command module's parser, in place of the placeholder, with the help line of :data:`COMMANDS`;
        its ``--help`` page says what the command does when the module gives no description."""
        if name not in self._unbuilt:
            raise RuntimeError(f"{name!r} is no command of agentmsg.cli.COMMANDS, or is built twice")
        self._unbuilt.discard(name)
        place = next(i for i, action in enumerate(self._choices_actions) if action.dest == name)
        del self._choices_actions[place], self._name_parser_map[name]
        text = COMMANDS[name][1]
        parser = super().add_parser(name, help=text, **kwargs)
        self._choices_actions.insert(place, self._choices_actions.pop())  # where the placeholder was listed
        if not parser.description:
            parser.description = text[:1].upper() + text[1:] + "."
        return parser

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, Sequence) and values and isinstance(values[0], str):
            self.build(values[0], values[1:])  # (an unknown name: argparse says so, from the placeholders' names)
        super().__call__(parser, namespace, values, option_string)


def _provider_named(argv: Sequence[str]) -> str | None:
    """The first phase of a two-phase build: the registry name a command line gives ``--provider``, read alone
    (``--provider NAME``, ``--provider=NAME``, abbreviated as argparse takes it); None where it gives none, or
    not once, or no name of the registry (the parser of every provider says so)."""
    alone = _CommandParser(add_help=False)
    alone.add_argument("--provider")
    alone.trying = True
    try:
        said, _ = alone.parse_known_args(argv)
    except _Untaken:
        return None
    from agentmsg.providers import NAMES  # (the registry's table: no provider module imported)

    return said.provider if said.provider in NAMES else None


def _takes(parser: argparse.ArgumentParser, argv: Sequence[str], provider: str) -> bool:
    """The second phase: whether ``parser``, built for ``provider``, takes the command line ``argv`` as it is
    (no help page, no usage error, nothing left over) and reads that provider in it; tried in silence, each option
    spelled whole: an abbreviation is left to the parser of every provider, to which it may be ambiguous (``--c``:
    ``--choice``, or another provider's stream flag ``--cumulative``) where it is not to this one's."""
    assert isinstance(parser, _CommandParser)
    abbrev = parser.allow_abbrev
    parser.trying, parser.allow_abbrev = True, False
    try:
        said, extra = parser.parse_known_args(argv)
    except _Untaken:
        return False
    finally:
        parser.trying, parser.allow_abbrev = False, abbrev
    return not extra and getattr(said, "provider", None) == provider


def _parser() -> tuple[argparse.ArgumentParser, _Commands]:
    """The parser of ``agentmsg``, each command's built when it is named."""
    parser = _Parser(prog="agentmsg", description="Schema-first messages and events for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentmsg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, action=_Commands, parser_class=_CommandParser)
    assert isinstance(sub, _Commands)
    return parser, sub


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``agentmsg`` with every command's parser built (``main`` builds the one it runs alone)."""
    parser, sub = _parser()
    for name in COMMANDS:
        sub.build(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None or sys.stderr is None:  # started with `>&-` or `2>&-`
        return _closed_at_start()
    parser, _ = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # said with the command's own usage line (argparse gives the top-level one), every provider's
            _, every = _parser()  # (the command's may be built for the provider named: two-phase, in _Commands)
            every.build(args.command)
            every.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version (printed: flushed below)
        code = int(exc.code or 0)
        try:
            sys.stdout.flush()  # (a full disk or a closed pipe is said, as for any command's output)
        except OSError as error:
            return _unwritten(error)
        return code
    except OSError as error:  # --help or --version could not be written
        return _unwritten(error)
    out = _whole_writes(sys.stdout)
    try:
        code = int(args.func(args, out))
        out.flush()  # here, not at the interpreter's exit: a full disk or a closed pipe is said below
        return code
    except UsageError as exc:
        print(f"agentmsg: {one_line(str(exc))}", file=sys.stderr)  # (a file's name in it: escaped)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as a tool killed by SIGPIPE does
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # what reads inputs says which file; anything else is the output (a full disk)
        name = said_path(exc.filename) if isinstance(exc.filename, str) else exc.filename
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
    finally:
        if out is not sys.stdout:
            with contextlib.suppress(OSError, ValueError):  # (said above; after a broken pipe, stdout is /dev/null)
                out.flush()


def _unwritten(error: OSError) -> int:
    """The exit status of a run whose output could not be written (--help, --version): a closed pipe quietly, as a
    tool killed by SIGPIPE; else said (a full disk), exit 2, as any command's."""
    _quiet_stdout()
    if isinstance(error, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    print(f"agentmsg: cannot write the output: {error.strerror or error}", file=sys.stderr)
    return EXIT_USAGE


def _whole_writes(stdout: TextIO) -> TextIO:
    """The stream the command writes its output to: ``stdout``, except under PYTHONUNBUFFERED=1 (``python -u``),
    where stdout's text layer writes to the file itself and CPython's TextIOWrapper takes a short write (a pipe
    closed by ``| head``, a full disk) for a whole one, dropping the rest without an error: then the same file
    through a buffer that writes all or raises, flushed at every line as ``-u`` asks (no less live than the
    default). Its file object does not own the descriptor: stdout stays open however it ends."""
    if not isinstance(stdout, io.TextIOWrapper) or not isinstance(stdout.buffer, io.RawIOBase):
        return stdout
    try:
        raw = io.FileIO(stdout.fileno(), "w", closefd=False)
    except (OSError, ValueError):
        return stdout
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stdout.encoding, errors=stdout.errors, line_buffering=True)


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
