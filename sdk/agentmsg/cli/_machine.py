"""``--output-format`` for ``agentmsg reduce`` and ``agentmsg format``: their problems and diagnostics in the
formats ``agentmsg validate`` writes (text, JSON lines, GitHub annotations, SARIF, JUnit), on stderr, since
stdout holds what the command makes (messages, a request body). Without the option each command writes them
as it always has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from agentmsg.cli._io import print_problems
from agentmsg.cli._report import Collector
from agentmsg.errors import Problem

#: the formats, as ``agentmsg validate --output-format`` names them
FORMATS = ("github", "json", "junit", "sarif", "text")


def output_format_option(p: Any, default_text: str) -> None:
    """``--output-format``: the formats of ``agentmsg validate``; ``default_text`` says what the command writes
    without it."""
    p.add_argument(
        "--output-format",
        choices=FORMATS,
        default=None,
        help=f"problems and diagnostics on stderr as agentmsg validate writes them: text (FILE:POINTER: message "
        f"[rule]), json (one JSON object per line), github (annotations), sarif (a SARIF 2.1.0 log), junit (JUnit "
        f"XML); default: {default_text}",
    )


class Diagnostics:
    """Where a command's problems go: ``own(problem, kind)`` (the command's own lines) when no format is asked
    for, else the format ``agentmsg validate`` writes, to ``err``; :meth:`close` writes SARIF and JUnit, which
    are whole documents. ``fails``: whether the problem makes the command's exit status 1 (else a note)."""

    def __init__(
        self,
        output_format: str | None,
        command: str,
        path: str,
        err: TextIO,
        own: Callable[[Problem, str, bool], object] | None = None,
    ) -> None:
        self.format = output_format
        self.command = command
        self.path = path
        self.err = err
        self.own = own
        self.collector = Collector(output_format, command) if output_format in ("sarif", "junit") else None
        if self.collector is not None:
            self.collector.file(path)

    def say(self, problem: Problem, kind: str, fails: bool) -> None:
        if self.format is None and self.own is not None:
            self.own(problem, kind, fails)
        elif self.collector is not None:
            self.collector(self.path, "", [problem], self.err, note=not fails)
        elif self.format in (None, "text"):
            print_problems(self.path, "", [problem], self.err, note=not fails)
        elif self.format == "github":  # validate's annotation, titled with this command
            from agentmsg.cli.validate import gh_command

            text = f"{problem.pointer}: {problem.message}" if problem.pointer else problem.message
            title = f"agentmsg {self.command} [{problem.rule}]"
            self.err.write(gh_command("error" if fails else "notice", self.path, None, title, text))
        else:
            from agentmsg.cli.validate import REPORTS

            REPORTS[self.format](self.path, "", [problem], self.err, note=not fails)

    def close(self) -> None:
        if self.collector is not None:
            self.collector.write(self.err)
