"""The input's numbers of the events a UI protocol decoder is fed from :func:`agentmsg.events.read_events`.

A decoder counts the events it was fed; a line or SSE event that could not be read was not fed (it was said by
``read_events``' ``on_problem``), so every pointer a decoder gives after one would be an event short. The commands
that feed a decoder (``reduce --protocol``, ``serve``) number its problems as the input does through one
:class:`Numbering`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

from agentmsg.errors import Problem

#: the number of the event a decoder's pointer starts with
_EVENT_NUMBER: Final = re.compile(r"/(\d+)")


class Numbering:
    """Counts what ``read_events`` reads: :meth:`skipped` for each problem it says, :meth:`fed` around the events
    it gives, and :meth:`of` a decoder's problem numbered as in the input. Keeps one int per skipped event only."""

    def __init__(self) -> None:
        self._fed = 0  # the events fed so far
        self._gaps: list[int] = []  # for each event skipped: how many had been fed before it (non-decreasing)

    def skipped(self, problem: Problem) -> Problem:
        """``problem`` (said by ``read_events``, pointer ``""``) at its event's number in the input. Invalid UTF-8
        replaced by U+FFFD is said of the event that follows, which is read (and fed): it counts nothing."""
        at = self._fed + len(self._gaps)
        if problem.rule != "utf-8":
            self._gaps.append(self._fed)
        return problem.under(f"/{at}")

    def fed(self, events: Iterable[Any]) -> Iterator[Any]:
        """``events``, each counted as it is fed."""
        for event in events:
            yield event
            self._fed += 1

    def of(self, problem: Problem) -> Problem:
        """A decoder's problem with the event it names numbered as in the input (its other pointers too)."""

        def pointer(text: str) -> str:
            found = _EVENT_NUMBER.match(text)
            if found is None:
                return text
            k = int(found[1])
            return f"/{k + bisect.bisect_right(self._gaps, k)}{text[found.end() :]}"

        if not self._gaps:
            return problem
        return Problem(
            pointer(problem.pointer),
            problem.rule,
            problem.message,
            problem.schema_location,
            tuple(pointer(p) for p in problem.other_pointers),
        )
