"""What ``agentmsg validate`` checks beyond each instance's schema: the kind of a file told from its first
bytes (``--kind auto``, the default), and the rules that hold across the instances of a file, with the
library's own checks and rule names: an event stream's order and pairing (:class:`agentmsg.Reducer`), a
conversation's tool-call/result pairing and, with ``--provider``, what that provider's formatter would not
send as it is (its diagnostics: the ones ``format --strict`` refuses are problems, the others notes)."""

from __future__ import annotations

import re
from array import array
from typing import Any, Final

import orjson

from agentmsg.conversation import decode_messages
from agentmsg.errors import Problem, ValidationError
from agentmsg.events import CUT_RULE, DEFAULT_MAX_PROBLEMS, Reducer, sniff_format

#: the kinds ``--kind`` takes besides the schemas' (agentmsg.KINDS): told from the file, or a conversation
AUTO: Final = "auto"
CONVERSATION: Final = "conversation"

_BOM = b"\xef\xbb\xbf"
_EVENT_TYPE = re.compile(rb'"type"\s*:\s*"[A-Z][A-Z_]+"')
_ROLE = re.compile(rb'"role"\s*:\s*"')
_BLOCK_TYPE = re.compile(rb'"type"\s*:\s*"[a-z][a-z_]*"')

#: the pairing rules a conversation breaks whatever the provider (the formatters' shared rules)
PAIRING: Final = ("tool-use-orphan", "tool-result-orphan")


def detect(head: bytes) -> str:
    """The kind of a file that starts with ``head``: ``event`` for agent events (SSE, JSON Lines or a JSON array
    of them), ``conversation`` for a JSON array of messages, ``content-block`` for blocks, else ``msg`` (one
    message, JSON Lines of messages, and what is no JSON at all: its problem is said as a message's). Told from
    the first instance's own keys (an uppercase type: an event; a role: a message; a lowercase type: a block)
    when the head holds it whole, else from the first of those keys in the text."""
    text = head.removeprefix(_BOM).lstrip()
    if sniff_format(text) == "sse" and not text.startswith((b"{", b"[")):
        return "event"
    first = _first_instance(text)
    if isinstance(first, dict):
        kind = first.get("type")
        if isinstance(kind, str) and kind[:1].isupper():  # (an event may have a role too: AGENT_START's)
            found = "event"
        elif "role" in first:
            found = "msg"
        elif isinstance(kind, str):
            found = "content-block"
        else:
            found = "msg"
    else:
        event, role = _EVENT_TYPE.search(text), _ROLE.search(text)
        if event is not None and (role is None or event.start() < role.start()):
            found = "event"
        elif role is not None:
            found = "msg"
        elif _BLOCK_TYPE.search(text):
            found = "content-block"
        else:
            found = "msg"
    return CONVERSATION if found == "msg" and text.startswith(b"[") else found


def _first_instance(text: bytes) -> Any:
    """The first instance of a file starting with ``text`` when it is whole there: the whole text (one document,
    an array: its first item), or its first line (JSON Lines); else None."""
    for candidate in (text, text.split(b"\n", 1)[0]):
        try:
            value = orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, list):
            return value[0] if value else None
        return value
    return None


def schema_kind(kind: str) -> str:
    """The schema each instance of a file of ``kind`` is checked against."""
    return "msg" if kind == CONVERSATION else kind


class Across:
    """The rules across the instances of one file, fed each instance as it is read (``None`` for one that
    could not be read), said at the end by :meth:`problems` as (errors, notes)."""

    def __init__(self, kind: str, provider: str | None) -> None:
        self.kind = kind
        self.provider = provider
        self._reducer = Reducer() if kind == "event" else None
        self._messages: list[Any] | None = [] if kind == CONVERSATION else None
        # What the rules across the file need, kept only for them (events, a conversation): a file of messages is
        # checked record by record in bounded memory. The instances' problems, that the reducer's word on the same
        # spot is not said twice: as many as the reducer keeps (beyond, a repeat is said, nothing lost).
        self._said: set[tuple[str, str]] = set()
        self._lines: array[int] | None = array("q") if self._reducer is not None or self._messages is not None else None
        self._count = 0
        self._single = False

    def add(self, instance: Any, problems: list[Problem], line: int | None = None, prefix: str = "/") -> None:
        """One instance of the file (None: it could not be read), the problems said of it already (their
        pointers the file's): the reducer's own word on the same spot and rule is not said again; its line in
        the file, when known, and its pointer prefix (``""``: the file is this one instance)."""
        if self._reducer is not None and len(self._said) < DEFAULT_MAX_PROBLEMS:
            self._said.update((p.pointer, p.rule) for p in problems)
        self._single = self._single or prefix == ""  # the file is one instance (its pointers the instance's)
        if self._lines is not None:
            self._lines.append(-1 if line is None else line)
        self._count += 1
        valid = not problems
        if self._reducer is not None:
            if instance is None:  # keeps the reducer's indexes the file's (its problem is said already)
                self._reducer.feed_unreadable("unreadable", rule="json")
            else:
                self._reducer.feed(instance)
        elif self._messages is not None:
            self._messages.append(instance if valid else None)

    def split(self, problem: Problem) -> tuple[str, Problem]:
        """(the instance's prefix ``/N``, the problem within it) of a problem found across the file (its pointer
        the file's): said as the instance's, as a problem of its schema is; ``""`` and the problem as it is when
        it is the file's (a cut stream) or the file is one instance."""
        head = problem.pointer[1:].partition("/")[0]
        if not problem.pointer.startswith("/") or not head.isdigit():
            return "", problem
        within = Problem(problem.pointer[len(head) + 1 :], problem.rule, problem.message, problem.schema_location)
        return ("" if self._single else f"/{head}"), within

    def line_of(self, pointer: str) -> int | None:
        """The file's line of the instance a pointer is in (``/N/...``: the N-th), when known."""
        first = pointer.split("/", 2)[1] if pointer.startswith("/") else ""
        lines = self._lines
        if lines is None or not first.isdigit() or int(first) >= len(lines):
            return None
        return lines[int(first)] if lines[int(first)] >= 0 else None

    def problems(self) -> tuple[list[Problem], list[Problem]]:
        if self._reducer is not None:
            return self._event_problems(self._reducer, self._said), []
        if self._messages is not None and self._messages and None not in self._messages:
            return conversation_problems(self._messages, self.provider)
        return [], []

    @staticmethod
    def _event_problems(reducer: Reducer, said: set[tuple[str, str]]) -> list[Problem]:
        """The reducer's problems (order, pairing, ... as ``agentmsg reduce`` says them), those of an
        instance that could not be read left out (said already), and a reply the stream cut short."""
        found = [
            p
            for p in reducer.problems
            if p.message != "unreadable" and p.rule != "legacy-key" and (p.pointer, p.rule) not in said
        ]  # (a legacy key is said as a note of its instance)
        reducer.finish()  # (its problem for a cut reply is not in found, taken before: said here with the reply's id)
        cut = reducer.cut
        if cut is not None:
            found.append(
                Problem(
                    "",
                    CUT_RULE,
                    f"the stream ended inside reply {cut.id} (no AGENT_END, or a block or model call still open)",
                )
            )
        return found


def conversation_problems(messages: list[Any], provider: str | None) -> tuple[list[Problem], list[Problem]]:
    """(problems, notes) of a conversation whose messages are each valid: formatted for ``provider`` (or, with
    none, for the registry's first, keeping only the pairing rules every provider shares), the diagnostics
    ``strict=True`` refuses (lossy and error) are problems, the rewrites notes."""
    from agentmsg.providers import ERROR, LOSSY, NAMES, RULES, get  # (here: a message or events file needs none)

    try:
        msgs = decode_messages(orjson.dumps(messages))
        request = get(provider or NAMES[0]).format_request(msgs)
    except ValidationError as exc:  # (with no provider named, what only a provider refuses is not said: media)
        return [p for p in exc.problems if provider is not None or not p.rule.startswith("media-")], []
    if provider is None:
        return [p for p in request.diagnostics if p.rule in PAIRING], []
    problems = [p for p in request.diagnostics if RULES[p.rule][0] in (LOSSY, ERROR)]
    notes = [p for p in request.diagnostics if RULES[p.rule][0] not in (LOSSY, ERROR)]
    return problems, notes
