"""The reports for CI that are written once all files are checked: SARIF 2.1.0 (code scanning) and JUnit XML
(test reports: one testcase per file, one failure per problem). A :class:`Collector` is called as the line
reports are (``report(path, prefix, problems, out, line=, note=)``), told of each file checked (:meth:`file`),
and writes the whole report at the end (:meth:`write`). Rule ids are the problems' rules; each links to its
entry in docs/rules.md (``agentmsg.cli._rules``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

import attrs
import orjson

from agentmsg import __version__
from agentmsg.errors import Problem

SARIF_SCHEMA: Final = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@attrs.frozen
class Finding:
    """One problem (or note) of a file: where (instance prefix + pointer, the line when known) and what."""

    pointer: str
    rule: str
    message: str
    line: int | None
    note: bool


class Collector:
    """The problems of every file, in the order checked, for a report written at the end."""

    def __init__(self, form: str, command: str = "validate") -> None:
        # (here: `validate FILE`'s line report needs no events; a report lists the providers' rules, which need them)
        from agentmsg.events import DEFAULT_MAX_PROBLEMS

        self.form = form
        self.command = command
        #: The findings the report lists per file, as many as a reducer keeps problems; the rest are counted in one
        #: last finding (rule max-problems). A file of 300 KB of bad records was a 202 MB SARIF log built in 1 GB of
        #: memory (GitHub code scanning takes at most 25,000 results a run)
        self.max_findings: Final = DEFAULT_MAX_PROBLEMS
        self.files: dict[str, list[Finding]] = {}
        self.left_out: dict[str, tuple[int, bool]] = {}  # per file: the findings past max_findings (count, any error)
        self.names: dict[str, str] = {}  # a file as shown (its name not UTF-8: \xNN) -> its name as given, for its URI

    def file(self, path: str, name: str | None = None) -> None:
        """A file is checked (a JUnit testcase even when it has no problem); ``name``: the path as given, when
        ``path`` shows it otherwise (a name that is not UTF-8)."""
        self.files.setdefault(path, [])
        if name is not None:
            self.names[path] = name

    def __call__(
        self,
        path: str,
        prefix: str,
        problems: Iterable[Problem],
        out: TextIO,
        *,
        line: int | None = None,
        note: bool = False,
    ) -> int:
        found = self.files.setdefault(path, [])
        n = 0
        for p in problems:
            n += 1
            if len(found) < self.max_findings:
                found.append(Finding(prefix + p.pointer, p.rule, p.message, line, note))
            else:  # the report lists as many as a reducer keeps problems; the rest are counted in one last finding
                count, errors = self.left_out.get(path, (0, False))
                self.left_out[path] = (count + 1, errors or not note)
        return n

    def _closed(self) -> dict[str, list[Finding]]:
        """Every file's findings, those past :attr:`max_findings` said in one last finding (rule max-problems)."""
        files = dict(self.files)
        for path, (count, errors) in self.left_out.items():  # (an error when any of them is one)
            said = f"{count:,} more problems and notes were not listed (a report lists {self.max_findings:,} a file)"
            files[path] = [*files[path], Finding("", "max-problems", said, None, not errors)]
        return files

    def write(self, out: TextIO) -> None:
        files = self._closed()
        out.write(sarif(files, self.command, self.names) if self.form == "sarif" else junit(files, self.command))


def sarif(files: dict[str, list[Finding]], command: str = "validate", names: dict[str, str] | None = None) -> str:
    """A SARIF 2.1.0 log: one run of agentmsg, its rules (those found, with help text and a link to docs/rules.md:
    their helpUri when absolute, AGENTMSG_RULES_URL's, for a helpUri is an absolute URI),
    one result per problem (level error, or note), located at the file (and line, when known), the JSON pointer
    in the message and as a logical location. ``names``: a file's name as given, by its path as shown."""
    from agentmsg.cli._rules import describe, help_uri  # (here: the rules list the providers', a line report none)

    rules: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for path, found in files.items():
        for f in found:
            index = rules.setdefault(f.rule, len(rules))
            region = {"region": {"startLine": f.line}} if f.line is not None else {}
            location: dict[str, Any] = {
                "physicalLocation": {"artifactLocation": {"uri": _uri((names or {}).get(path, path))}, **region}
            }
            if f.pointer:
                location["logicalLocations"] = [{"fullyQualifiedName": f.pointer, "kind": "element"}]
            results.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": index,
                    "level": "note" if f.note else "error",
                    "message": {"text": f"{f.pointer}: {f.message}" if f.pointer else f.message},
                    "locations": [location],
                }
            )
    descriptors = []
    for rule in rules:
        meaning, fix = describe(rule)
        link = help_uri(rule)
        descriptor = {
            "id": rule,
            "name": rule,
            "shortDescription": {"text": meaning},
            "fullDescription": {"text": f"{meaning}. Fix: {fix}"},
            "help": {
                "text": f"{meaning}. Fix: {fix}\nSee {link}",
                "markdown": f"**{rule}**: {meaning}.\n\nFix: {fix}\n\nSee [{link}]({link})",
            },
        }
        if urlsplit(link).scheme:  # a helpUri is an absolute URI (the schema's format uri): a published copy's
            descriptor["helpUri"] = link
        descriptors.append(descriptor)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "agentmsg",
                        "version": __version__,
                        "rules": descriptors,
                    }
                },
                "invocations": [
                    {
                        # a file that could not be read was not checked: the run did not do all it was asked
                        "executionSuccessful": all(f.rule != "unreadable" for found in files.values() for f in found),
                        "commandLine": f"agentmsg {command}",
                    }
                ],
                "results": results,
            }
        ],
    }
    return orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n"


def junit(files: dict[str, list[Finding]], command: str = "validate") -> str:
    """JUnit XML: a testsuite ``agentmsg <command>``, one testcase per file (its name the file), one ``failure``
    element per problem (its type the rule; notes go to system-out). A file that could not be read is an
    ``error``."""
    import xml.etree.ElementTree as ET

    from agentmsg.cli._rules import describe, help_uri

    suite = ET.Element("testsuite", name=f"agentmsg {command}")
    failures = errors = 0
    for path, found in files.items():
        case = ET.SubElement(suite, "testcase", classname=f"agentmsg.{command}", name=_xml(path))
        notes = []
        for f in found:
            if f.note:
                notes.append(f"{f.pointer}: note: {f.message} [{f.rule}]")
                continue
            where = f"{path}:{f.pointer}" if f.pointer else path
            tag = "error" if f.rule == "unreadable" else "failure"
            failures += tag == "failure"
            errors += tag == "error"
            meaning, fix = describe(f.rule)
            element = ET.SubElement(case, tag, message=_xml(f"{f.pointer}: {f.message}" if f.pointer else f.message))
            element.set("type", _xml(f.rule))
            line = f" (line {f.line})" if f.line is not None else ""
            element.text = _xml(f"{where}{line}: {f.message} [{f.rule}]\n{meaning}. Fix: {fix}\nSee {help_uri(f.rule)}")
        if notes:
            ET.SubElement(case, "system-out").text = _xml("\n".join(notes))
    suite.set("tests", str(len(files)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suites = ET.Element("testsuites", name="agentmsg", tests=str(len(files)))
    suites.set("failures", str(failures))
    suites.set("errors", str(errors))
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


#: what XML 1.0 cannot hold (control characters but tab, LF, CR; lone surrogates; U+FFFE, U+FFFF)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """Text an XML document can hold: a character XML 1.0 cannot (a NUL in a quoted value) as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _uri(path: str) -> str:
    """A file's artifact URI: its path as given, relative (``/`` separators, its bytes %-escaped: a name that
    is not UTF-8 too), as SARIF viewers resolve it against the repository's root; an absolute path as a file:
    URI; stdin is ``-``, as every other report names it (validate --stdin-filename names it). A backslash is a
    separator on Windows only (a POSIX name may hold one)."""
    from urllib.parse import quote

    if os.path.isabs(path):
        return Path(path).as_uri()
    raw = os.fsencode(path)
    return quote(raw.replace(b"\\", b"/") if os.sep == "\\" else raw)
