"""The SDK's exceptions, all under one root, :class:`AgentmsgError`. Every malformed or forbidden input ends in
a :class:`ValidationError` (an argument of the wrong type too: a :class:`WrongTypeError`, rule ``type``, its
pointer naming the argument); a name no registry holds, in an :class:`UnknownNameError` (a ``KeyError`` too); a
provider call that fails, in a :class:`~agentmsg.clients.ProviderError`."""

from __future__ import annotations

import functools
import math
import numbers
import reprlib
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

import attrs


def pointer_of(path: Iterable[str | int]) -> str:
    """RFC 6901 JSON pointer of a path of keys and indexes (``""`` for the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


#: A problem's message longer than this many characters keeps its start and its end and says how many characters
#: it leaves out between them (:func:`bounded`): a message quotes the value it is about, and a value may be
#: megabytes (an image's base64 in the wrong field), which a log or an exception's text should not repeat
MESSAGE_MAX = 400
#: Problems one reading lists at most (a validation's, a reducer's by default, a reply's, a UI codec's): those
#: beyond are counted and said in one last problem (rule ``max-problems``), so a document of a million bad parts
#: costs memory for these, not for a million problems
MAX_PROBLEMS = 10_000
_HEAD = 280  # characters kept at a cut message's start (the value's start, as most messages begin with it) ...
_TAIL = 80  # ... and at its end (the rule's words, as most messages end with them)

#: The problems a :class:`ValidationError`'s text lists at most (its ``problems`` holds every one)
SHOWN_PROBLEMS = 20


def bounded(text: str) -> str:
    """``text`` when it has at most :data:`MESSAGE_MAX` characters; else its start and end around a note of how
    many characters are left out (linear in ``text``: one slice each side)."""
    if len(text) <= MESSAGE_MAX:
        return text
    return f"{text[:_HEAD]}...({len(text) - _HEAD - _TAIL:,} characters left out)...{text[-_TAIL:]}"


def one_line(text: str) -> str:
    """``text`` as one line of a terminal's output or a log: line breaks, NUL, escape sequences and the other control
    characters written as Python escapes (``\\n``, ``\\x1b``), so that text from elsewhere (a server's error
    message) cannot split the line, nor move the cursor or recolour the terminal."""
    if text.isprintable():
        return text
    return "".join(escaped(c) for c in text)


def escaped(c: str) -> str:
    """One character as :func:`one_line` writes it: itself, or its Python escape when it is not printable."""
    return c if c.isprintable() or c == " " else repr(c)[1:-1]


#: integers of more bits are said by their size, not their digits (2**14000 has 4215: Python refuses a decimal
#: form past 4300, and makes one in time quadratic in the digits)
_DECIMAL_BITS = 14000


class _Quoter(reprlib.Repr):
    """reprlib's cut repr, each step bounded: dispatched on a value's type (not its class's name), a dict's items and
    a set's members taken in their order (never all sorted), bytes cut as a string is, an integer past
    :data:`_DECIMAL_BITS` said by its size and a longer one by its first digits, an exception by its type and its
    cut arguments, and a value whose own ``__repr__`` raises named by its type."""

    _PLAIN: tuple[type, ...] = (str, bytes, bytearray, int, list, tuple, dict, set, frozenset)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = limit

    def repr1(self, x: Any, level: int) -> str:
        kind: Any = type(x)
        for plain in self._PLAIN:  # (a subclass with its base's repr too: a str subclass's repr copies it whole)
            if isinstance(x, plain) and kind.__repr__ is plain.__repr__:
                return str(getattr(self, f"repr_{plain.__name__}")(x, level))
        if isinstance(x, BaseException) and kind.__repr__ is BaseException.__repr__:
            args = [self.repr1(a, level - 1) for a in islice(x.args, self.maxtuple)]
            return f"{kind.__name__}({', '.join(args)}{', ...' if len(x.args) > self.maxtuple else ''})"
        return self.repr_instance(x, level)

    repr_bytes = repr_bytearray = reprlib.Repr.repr_str  # (slices and a repr of the slice: bytes as a str)

    def _joined(self, pieces: Iterator[str], more: bool) -> str:
        """``pieces`` joined by ``, ``, made only until they are longer than the quote (what follows is cut from it):
        a value that shares its members (a list of the same list, six levels down) was quoted whole to its depth
        and width, 6**6 reprs and 1.2 MB for 80 characters."""
        said: list[str] = []
        size = 0
        for piece in pieces:
            said.append(piece)
            size += len(piece) + 2
            if size > self.maxother:
                more = True
                break
        return ", ".join(said) + (", ..." if more else "")

    def _repr_iterable(self, x: Any, level: int, left: str, right: str, maxiter: int, trail: str = "") -> str:
        n = len(x)
        if level <= 0 and n:
            return f"{left}...{right}"
        said = self._joined((self.repr1(e, level - 1) for e in islice(x, maxiter)), n > maxiter)
        return f"{left}{said}{trail if n == 1 and trail else ''}{right}"

    def repr_int(self, x: int, level: int) -> str:
        bits = x.bit_length()
        if bits > _DECIMAL_BITS:
            return f"{'-' if x < 0 else ''}2**{bits - 1} or more in size ({bits} bits)"
        text = int.__repr__(x)
        return text if len(text) <= self.maxlong else f"{text[:20]}...({len(text)} digits)"

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = islice(x.items(), self.maxdict)
        said = self._joined(
            (f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}" for k, v in items), len(x) > self.maxdict
        )
        return "{" + said + "}"

    def repr_set(self, x: set[Any], level: int) -> str:
        return self._members(x, level, "{", "}") if x else "set()"

    def repr_frozenset(self, x: frozenset[Any], level: int) -> str:
        return self._members(x, level, "frozenset({", "})") if x else "frozenset()"

    def _members(self, x: set[Any] | frozenset[Any], level: int, left: str, right: str) -> str:
        if level <= 0:
            return f"{left}...{right}"
        said = self._joined((self.repr1(m, level - 1) for m in islice(x, self.maxset)), len(x) > self.maxset)
        return left + said + right

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            text = repr(x)  # (one of the caller's own objects: its repr is its own to bound)
        except Exception:  # a broken __repr__, or one recursing past the stack
            return f"<{type(x).__name__}>"
        return text if len(text) <= self.maxother else text[: self.maxother - 3] + "..."


@functools.lru_cache(maxsize=8)
def _quoter(limit: int) -> _Quoter:
    return _Quoter(limit)


def short_repr(value: object, limit: int = 80) -> str:
    """A value given, quoted in a message (every message that quotes one uses this): its repr cut in depth (6
    levels), items and length (``...`` for what is left out), at most ``limit`` characters, in time and memory
    bounded whatever the value (``repr(value)`` copies a 100 MB string whole, sorts a dict's keys, raises on a
    value nested past the stack or an int past 4300 digits) and never raising (a value whose ``__repr__`` raises
    is named by its type: ``<Bad>``)."""
    try:
        text = _quoter(limit).repr(value)
    except Exception:  # (a container whose iteration raises, or lies about its length)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def with_article(word: str) -> str:
    """``word`` after the article a message says before it, by its first letter: ``an openai``, ``an Anthropic``, ``a
    Gemini``, ``a dashscope`` (a provider's registry name or its spec's title)."""
    return f"{'an' if word and word[0].lower() in 'aeiou' else 'a'} {word}"


def listed(problems: Sequence[Problem], sep: str, what: str) -> str:
    """At most :data:`SHOWN_PROBLEMS` of ``problems`` joined by ``sep``, then how many more the ``what``'s
    ``problems`` hold: an error's or a warning's text stays bounded however many problems it carries."""
    said = [str(p) for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) > len(said):
        said.append(f"... and {len(problems) - len(said):,} more (the {what}'s problems list them all)")
    return sep.join(said)


@attrs.frozen
class Problem:
    """One problem found in an instance.

    ``pointer`` is the RFC 6901 JSON pointer of the offending value (``""`` is the whole instance),
    ``rule`` is a short stable name of the rule broken (a JSON Schema keyword such as ``required``, or a
    named rule such as ``role-content`` or ``max-depth``: fit for ``if problem.rule == ...``), ``message``
    says in a sentence what is wrong, and ``schema_location`` is the absolute URI of the schema keyword when
    a schema rule was broken. ``other_pointers``: the other places a diagnostic said once for several covers (a
    formatter says the same change at many places once, at the first: ``pointer``); :attr:`pointers` lists them all.
    """

    pointer: str
    rule: str
    #: at most :data:`MESSAGE_MAX` characters (a longer one is cut in the middle, saying so: :func:`bounded`)
    message: str = attrs.field(converter=bounded)
    schema_location: str | None = None
    #: the places besides ``pointer`` this problem is said of, in order (every one, however many the message lists)
    other_pointers: tuple[str, ...] = ()

    @property
    def pointers(self) -> tuple[str, ...]:
        """Every place this problem is said of: ``pointer``, then ``other_pointers``."""
        return (self.pointer, *self.other_pointers)

    @property
    def count(self) -> int:
        """How many places this problem is said of (1 unless it was said once for several)."""
        return 1 + len(self.other_pointers)

    def __str__(self) -> str:
        # (the pointer stays whole in ``pointer``; shown cut, as the message is, when a key is that long)
        where = f"{bounded(self.pointer)}: " if self.pointer else ""
        return f"{where}{self.message} [{self.rule}]"

    def under(self, prefix: str) -> Problem:
        """The same problem, its pointer prefixed (``/3`` + ``/content/0`` -> ``/3/content/0``)."""
        return Problem(
            prefix + self.pointer,
            self.rule,
            self.message,
            self.schema_location,
            tuple(prefix + p for p in self.other_pointers),
        )


class AgentmsgError(Exception):
    """The root of every exception the SDK defines: ``except agentmsg.AgentmsgError`` catches a bad input
    (:class:`ValidationError`, :class:`SizeLimitError`) and a failed provider call
    (:class:`~agentmsg.clients.ProviderError` and its subclasses) alike."""


class ValidationError(AgentmsgError, ValueError):
    """Raised for any malformed or forbidden input: not JSON, truncated, wrong types, rule violations,
    too large or too deeply nested. ``problems`` lists each problem with its JSON pointer and rule."""

    def __init__(self, problems: Sequence[Problem], kind: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.kind = kind
        head = f"invalid {kind}" if kind else "invalid input"
        if len(self.problems) == 1:
            text = f"{head}: {self.problems[0]}"
        else:
            text = f"{head}: {len(self.problems)} problems\n  " + listed(self.problems, "\n  ", "error")
        super().__init__(text)

    def __reduce__(self) -> tuple[type[ValidationError], tuple[tuple[Problem, ...], str | None], dict[str, object]]:
        # Exception's own reduce calls cls(*args) with the message text, which this class would take for its
        # problems (one per character): pickling (a process pool, a task queue) and copy.copy garbled it.
        return type(self), (self.problems, self.kind), dict(self.__dict__)

    @classmethod
    def single(cls, pointer: str, rule: str, message: str, kind: str | None = None) -> ValidationError:
        return cls([Problem(pointer, rule, message)], kind)

    def under(self, prefix: str, kind: str | None = None) -> ValidationError:
        """The same error (same class) with every pointer prefixed: for errors of a part of a larger
        instance (an item of an array, a block of a message)."""
        return type(self)([p.under(prefix) for p in self.problems], kind if kind is not None else self.kind)


class WrongTypeError(ValidationError, TypeError):
    """A :class:`ValidationError` for an argument of the wrong type (:func:`wrong_type`) or a keyword a call does
    not take: a ``TypeError`` too, as Python raises for both, so an ``except TypeError`` written when these calls
    raised a bare one still catches it."""


def wrong_type(pointer: str, expected: str, value: object, kind: str | None = None) -> WrongTypeError:
    """The error of an argument (or a value) of the wrong type: a :class:`WrongTypeError` (a ValidationError and
    a TypeError) at ``pointer`` (the argument's name: ``/query``), rule ``type``, saying ``"<expected>, not <its
    type>"``. Raise it from the check that found it (``raise wrong_type(...)``), so the traceback ends there."""
    return WrongTypeError([Problem(pointer, "type", f"{expected}, not {type(value).__name__}")], kind)


def require_bytes(value: object, name: str) -> None:
    """Refuse (:func:`wrong_type`, pointer ``/<name>``) what is not bytes, a bytearray or a memoryview: what the
    functions that read raw bytes (a body, a stream's head) take."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise wrong_type(f"/{name}", f"{name} is bytes", value)


def require_count(value: object, name: str, least: int, said: str, kind: str | None = None) -> int:
    """Refuse what is not a whole number (an int; a bool is none) of at least ``least``: a count argument (a budget,
    a bound, a size). ``said`` says what it is (``"keep_last is the number of latest units kept (an int >= 1)"``);
    the error is a :class:`ValidationError` (of ``kind``) at ``/<name>``: rule ``type`` (a :class:`WrongTypeError`)
    or ``minimum`` (a ValueError, as these checks raised before). ``None``, where a call takes it, is the caller's to
    let through. Returns the count as an int."""
    if type(value) is int and value >= least:  # the common count, at once: the Integral check is an ABC's, slow
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise wrong_type(f"/{name}", said, value, kind)
    if value < least:
        raise ValidationError.single(f"/{name}", "minimum", f"{said}, not {short_repr(value)}", kind)
    return int(value)


def require_seconds(
    value: object, name: str, said: str, *, infinite: bool, zero: bool = False, kind: str | None = None
) -> float:
    """Refuse what is not a number of seconds above 0 (0 or more when ``zero``; a bool, NaN or a text is none;
    ``inf`` only when ``infinite``): a timeout, an interval or a backoff argument. ``said`` says what it is; the
    error is a :class:`ValidationError` (of ``kind``) at ``/<name>``: rule
    ``type`` (a :class:`WrongTypeError`), ``exclusiveMinimum`` (0 or less) or ``minimum`` (less than 0, when
    ``zero``) or ``maximum`` (``inf`` where it is not taken), each a ValueError, as these checks raised before.
    Returns the seconds as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise wrong_type(f"/{name}", said, value, kind)
    # (compared before it is converted: an int past a float's range, below 0, would be -inf's OverflowError)
    if value < 0 if zero else value <= 0:
        rule = "minimum" if zero else "exclusiveMinimum"
        raise ValidationError.single(f"/{name}", rule, f"{said}, not {short_repr(value)}", kind)
    try:
        seconds = float(value)
    except OverflowError:  # (an int past a float's range: more seconds than a float holds)
        seconds = math.inf
    # (the float returned is what is checked: NaN of any real type ("not float" would not say what was wrong with
    # it), whatever its own __ne__ says; a real's __float__ may give what its comparisons did not say, and a positive
    # Fraction too small for a float gives 0.0)
    if math.isnan(seconds):
        raise WrongTypeError([Problem(f"/{name}", "type", f"{said}, not nan")], kind)
    if seconds < 0 if zero else seconds <= 0:
        rule = "minimum" if zero else "exclusiveMinimum"
        raise ValidationError.single(f"/{name}", rule, f"{said}, not {short_repr(value)} ({seconds!r})", kind)
    if not infinite and seconds == math.inf:
        raise ValidationError.single(f"/{name}", "maximum", f"{said}, not {short_repr(value)}", kind)
    return seconds


def unknown_choice(
    value: object, name: str, known: Iterable[str], what: str, kind: str | None = None
) -> ValidationError:
    """The error of an argument that names none of the ``known`` choices (a variant, a provider, a mode): a
    :class:`ValidationError` (a ``ValueError``, as these checks raised) at ``/<name>``, rule ``enum``, listing them;
    rule ``type`` (a :class:`WrongTypeError`) for one that is no string. ``what`` names it in the message
    (``"OpenAI variant"``). Raise it from the check that found it."""
    names = ", ".join(known)
    if not isinstance(value, str):
        return wrong_type(f"/{name}", f"{name} is a string, one of {names}", value, kind)
    return ValidationError.single(f"/{name}", "enum", f"unknown {what} {value!r}; known {what}s: {names}", kind)


class UnknownNameError(AgentmsgError, KeyError):
    """A name no registry holds (``agentmsg.providers.get("nope")``, ``agentmsg.ui.get("nope")``); the message
    lists the known names. A ``KeyError`` too, as these lookups raised before, so ``except KeyError`` still
    catches it."""


class SizeLimitError(ValidationError):
    """The input is larger or deeper than the configured limits (see :data:`agentmsg.limits`).
    It is a :class:`ValidationError` whose rule is ``max-bytes`` or ``max-depth``."""


class LegacyKeyWarning(UserWarning):
    """A reader met keys in a legacy shape (AgentScope's seed documents: a tool_use ``arguments``, a tool_result
    ``result``, ...) and read them in their current form. ``problems`` says which and as what (rule ``legacy-key``,
    the key's pointer). Issued when the reader was given no ``notes`` list to put them in; ``strict=True`` refuses
    such input instead (docs/wire-format.md, "Legacy keys")."""

    def __init__(self, problems: Sequence[Problem], kind: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.kind = kind
        super().__init__(self.problems, kind)  # (args rebuild it: warning machinery calls cls(*args))

    def __str__(self) -> str:
        head = f"{self.kind}: " if self.kind else ""
        return f"{head}legacy keys read in their current form: " + listed(self.problems, "; ", "warning")
