"""Machinery every request formatter shares: the result type, options, the diagnostics table and
collector, tool-call pairing (orphans and their repair), id/name mapping, the reasoning replay policy,
tool-result rendering and the multi-agent speaker rules.

Each provider module walks the conversation once and calls into this module for the decisions
that must be the same everywhere, so that a rule has one definition and one name.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, Final
from urllib.parse import unquote

import attrs
import orjson

from agentmsg._codec.converter import surely_writes
from agentmsg._codec.jsontext import (
    INT_MAX,
    INT_MIN,
    container,
    has_lone_surrogate,
    plainly_written,
    surrogate_words,
    undigited,
    unwritten_at,
    written_twice,
)
from agentmsg._codec.limits import limits
from agentmsg.blocks import (
    BLOCK_CLASSES,
    AudioBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from agentmsg.errors import (
    Problem,
    SizeLimitError,
    ValidationError,
    WrongTypeError,
    pointer_of,
    short_repr,
    wrong_type,
)
from agentmsg.message import Msg, MsgRole, member_blocks, member_roles, refuse_unwritable
from agentmsg.providers._request.media import MediaPolicy, MediaSession, data_url_mime, scheme_of

__all__ = [
    "ERROR",
    "INFO",
    "LOSSY",
    "REWRITE",
    "RULES",
    "FormatOptions",
    "FormattedRequest",
]

# ---- result ---------------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class FormattedRequest:
    """A provider request, ready to send.

    ``body``: the exact JSON body (a dict; :meth:`body_bytes` serializes it deterministically).
    ``diagnostics``: every rewriting or lossy step, as :class:`~agentmsg.Problem` (pointer into the
    input conversation such as ``/3/content/1``, rule name from :data:`RULES`, message); a step made at
    several places with one rule and text is one Problem, its ``pointers`` every place (:func:`grouped`).
    ``model``: the model (Gemini puts it in the URL, not in the body).
    ``path``: endpoint path relative to the provider's base URL.
    ``headers``: non-auth headers this request needs. ``stream``: whether a stream was asked for.
    """

    body: dict[str, Any]
    # Problems, or the diagnostics a formatter recorded (see Context.report): made Problems when read
    _diagnostics: tuple[Any, ...] = attrs.field(default=(), alias="diagnostics")
    model: str | None = None
    path: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    stream: bool = False
    #: the parser options the reply to this request needs (``structured_output``: where its JSON is); the clients
    #: give them to the provider's reader (``Provider.parser_options``)
    parser_options: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def diagnostics(self) -> tuple[Problem, ...]:
        found = self._diagnostics
        if found and type(found[0]) is tuple:
            found = tuple(map(as_problem, found))
            object.__setattr__(self, "_diagnostics", found)
        return found

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FormattedRequest):
            return NotImplemented
        return (
            self.body,
            self.diagnostics,
            self.model,
            self.path,
            dict(self.headers),
            self.stream,
            dict(self.parser_options),
        ) == (
            other.body,
            other.diagnostics,
            other.model,
            other.path,
            dict(other.headers),
            other.stream,
            dict(other.parser_options),
        )

    __hash__ = None  # type: ignore[assignment]

    def body_bytes(self) -> bytes:
        """The body as compact JSON (key order as built: same input, same bytes). A mapping that is no dict (a
        ``MappingProxyType`` in a tool's schema or a parameter) is written as an object, a sequence as an array;
        a value no JSON carries raises :class:`~agentmsg.ValidationError` (rule ``json-value``) naming where it
        is in the body."""
        body = self.body
        try:
            written = orjson.dumps(body, default=_plain)
        except TypeError:  # an int key (logit_bias's token ids), an integer beyond 64 bits: written as their digits
            return _written_with_digits(body)
        if _NULL(written) is not None:  # (orjson writes a NaN or an infinity as null: only then may the body hold one)
            return _written_with_digits(body)
        return written

    def diagnostics_dicts(self) -> list[dict[str, Any]]:
        """The diagnostics as plain dicts (``pointer``, ``rule``, ``kind``, ``message``; a diagnostic said once for
        several places also ``pointers``: every one, ``pointer`` first)."""
        dicts: list[dict[str, Any]] = []
        for p in self.diagnostics:
            d: dict[str, Any] = {"pointer": p.pointer, "rule": p.rule, "kind": RULES[p.rule][0], "message": p.message}
            if p.other_pointers:
                d["pointers"] = list(p.pointers)
            dicts.append(d)
        return dicts


# ---- diagnostics table ----------------------------------------------------------------------------

LOSSY: Final = "lossy"  # something the caller gave is not sent, or sent changed
REWRITE: Final = "rewrite"  # sent in another shape or place, nothing lost
ERROR: Final = "error"  # the conversation breaks a provider rule and is sent as it is
INFO: Final = "info"  # said for the caller's information: nothing given is lost or changed

#: rule -> (kind, what it means). ``strict=True`` raises on every ``lossy`` and ``error`` diagnostic.
RULES: Final[dict[str, tuple[str, str]]] = {
    "thinking-dropped": (LOSSY, "reasoning not sent (the provider takes none, or it came from another provider)"),
    "thinking-demoted": (LOSSY, "reasoning from another provider sent as plain text (option reasoning='text')"),
    "thinking-pruned": (
        REWRITE,
        "reasoning of an earlier turn (that called no tools) not sent, as the provider's protocol asks",
    ),
    "thinking-moved": (REWRITE, "thinking blocks moved to the start of the assistant turn"),
    "signature-dropped": (LOSSY, "a reasoning signature from another provider was not sent"),
    "signature-added": (REWRITE, "a placeholder thought signature was added (option missing_thought_signature)"),
    "tool-result-media-fallback": (
        LOSSY,
        "media in a tool result moved to a user turn after the tool results (the provider takes text only there)",
    ),
    "tool-result-media-reordered": (
        REWRITE,
        "media in a tool result sent after its text (the provider holds them apart); the text names them in place",
    ),
    "media-unsupported": (LOSSY, "a media block the provider cannot take was replaced by a text placeholder"),
    "block-dropped": (LOSSY, "a block that cannot appear there was not sent"),
    "media-option-dropped": (
        LOSSY,
        "a media sizing option (minPixels, fps, ...) the provider does not take was not sent",
    ),
    "name-sanitized": (LOSSY, "a speaker name was changed to match the provider's name pattern"),
    "name-dropped": (LOSSY, "a speaker name was not sent (the provider has no name field)"),
    "history-tag-in-text": (
        INFO,
        "another speaker's text folded into a `<history>` turn holds `<history>` or `</history>` (any case, whitespace"
        " inside the brackets): sent as it is (as AgentScope Java sends it), the model may read the history as ending"
        " there and what follows as outside it",
    ),
    "history-name-forges-line": (
        INFO,
        "a speaker name on `<history>` lines holds a line break, `: ` or a history tag: sent as it is (as AgentScope"
        " Java sends it), its lines may read as another speaker's or end the history",
    ),
    "prefix-name-forges-line": (
        INFO,
        "a speaker name in a `[Name]: ` prefix (multi-agent prefix layout) holds a line break or `]:`: sent as it is,"
        " its text may read as another speaker's",
    ),
    "speaker-line-in-text": (
        INFO,
        "another speaker's text holds a line that starts as a line of a speaker of the conversation does in the"
        " multi-agent layout (`Name: ` in `<history>` lines, `[Name]: ` in the prefix layout): sent as it is, the"
        " model may read that line as the other speaker's",
    ),
    "tool-id-mapped": (REWRITE, "a tool-call id was mapped to one the provider accepts, alike in call and result"),
    "tool-name-mapped": (REWRITE, "a tool name was mapped to one the provider accepts, alike in call and definition"),
    "tool-arguments-invalid": (LOSSY, "the raw argument text is not a JSON object; the parsed input was sent"),
    "turns-merged": (REWRITE, "consecutive messages were merged into one turn of the same role"),
    "system-hoisted": (REWRITE, "a system message after the first turn was moved to the top-level system prompt"),
    "system-as-user": (REWRITE, "a system message was sent as a user turn"),
    "hint-placed": (REWRITE, "a hint was sent as its own turn after the message (and its tool results)"),
    "empty-text-dropped": (REWRITE, "an empty text block was not sent"),
    "empty-message-dropped": (REWRITE, "a message with nothing to send was left out"),
    "trailing-whitespace-stripped": (REWRITE, "trailing whitespace of a final assistant (prefill) turn was removed"),
    "tool-use-orphan": (ERROR, "a tool call has no result before the next turn"),
    "tool-result-orphan": (ERROR, "a tool result answers no open tool call"),
    "tool-use-repaired": (REWRITE, "a synthetic error result was added for an unanswered tool call (repair)"),
    "tool-result-dropped": (LOSSY, "an orphaned tool result was left out (repair)"),
    "tool-result-state-dropped": (
        LOSSY,
        "a tool result's error state (error, denied, interrupted) was not sent: the provider has no field for it",
    ),
    "schema-keyword-dropped": (LOSSY, "a JSON Schema keyword the provider does not take was removed"),
    "schema-keyword-converted": (REWRITE, "a JSON Schema keyword was rewritten into the provider's subset"),
    "param-dropped": (LOSSY, "a generation parameter the provider does not take was not sent"),
    "tool-key-dropped": (
        LOSSY,
        "a key of a tool definition (or of its function object) that no provider field maps was not sent",
    ),
    "tool-choice-changed": (LOSSY, "the tool choice was mapped to the nearest one the provider supports"),
    "field-dropped": (LOSSY, "a field of a message or block that the provider has no place for was not sent"),
    "unknown-key-dropped": (
        LOSSY,
        "a key the schema does not declare was not sent (said once per key and place, counting those that hold it)",
    ),
    "structured-output-approximated": (
        LOSSY,
        "structured output was sent as the provider's JSON mode: the schema is not sent, so not enforced",
    ),
    "structured-output-as-tool": (
        REWRITE,
        "structured output was asked for as a forced tool call (mode='tool', or no native form): the reply's JSON is"
        " the call's input",
    ),
    "response-format-mapped": (REWRITE, "a response_format parameter was sent in the provider's own form"),
    "json-unprompted": (ERROR, "JSON mode, but no message mentions JSON, which the provider requires"),
    "citations-dropped": (
        LOSSY,
        "citations or grounding a provider gave with its reply were not sent (another provider's, or no request"
        " field takes them back); the text was",
    ),
    "provider-tool-dropped": (
        LOSSY,
        "a tool the provider ran itself (its call or result: web search, code execution, ...) was not sent: only"
        " the provider that ran it takes it back",
    ),
    "cache-breakpoint-dropped": (
        LOSSY,
        "a prompt-cache marker was not sent: beyond the provider's limit of breakpoints (Anthropic, DashScope: 4), on"
        " nothing that takes one (a thinking block, a tool definition on DashScope), or not a marker",
    ),
    "cache-ttl-dropped": (LOSSY, "a prompt-cache marker's ttl was not sent: the provider's cache has one lifetime"),
    "cache-ttl-order": (ERROR, "a 1h cache breakpoint after a 5m one: Anthropic refuses it (longer lifetimes first)"),
    "cache-automatic": (
        INFO,
        "the provider caches prompt prefixes on its own (OpenAI, DeepSeek, Gemini's implicit cache): markers are not"
        " sent",
    ),
    "cached-content-used": (
        REWRITE,
        "the request names a cache the provider holds (Gemini cachedContent): what it holds (system prompt, tools,"
        " the messages up to the marker) is not sent again",
    ),
}

_STRICT_KINDS = frozenset({LOSSY, ERROR})


# ---- options --------------------------------------------------------------------------------------

DEFAULT_HISTORY_PROMPT: Final = (
    "# Conversation History\nThe content between <history></history> tags contains your conversation history\n"
)


def _media_policy(value: MediaPolicy | Mapping[str, Any] | None) -> MediaPolicy:
    if value is None:
        return MediaPolicy()
    if isinstance(value, MediaPolicy):
        return value
    if not isinstance(value, Mapping):
        raise wrong_type("/media", "media is a MediaPolicy, a mapping of its fields or None", value)
    fields = attrs.fields_dict(MediaPolicy)
    for key in value:
        if key not in fields:  # (MediaPolicy(**value) said it as a bare TypeError: an unexpected keyword argument)
            raise WrongTypeError(
                [
                    Problem(
                        pointer_of(("media", str(key))),
                        "additionalProperties",
                        f"{str(key)!r} is no field of MediaPolicy (one of {', '.join(fields)})",
                    )
                ]
            )
    try:
        return MediaPolicy(**dict(value))
    except ValidationError as exc:  # (a root that is no root: said at /media/allowed_roots/N)
        raise exc.under("/media") from None


def _one_of(*choices: str) -> Callable[[Any, attrs.Attribute[str], Any], None]:
    """An attrs validator: the value is one of ``choices``, else a ValidationError (a ValueError, as attrs' ``in_``
    raised) at ``/<field>``, rule ``enum``, listing them."""

    def check(instance: Any, attribute: attrs.Attribute[str], value: Any) -> None:
        if value not in choices or not isinstance(value, str):
            raise ValidationError.single(
                f"/{attribute.name}",
                "enum",
                f"{attribute.name} is one of {', '.join(choices)}, not {short_repr(value)}",
            )

    return check


@attrs.frozen(kw_only=True)
class FormatOptions:
    """How a formatter treats what a provider cannot take as it is (every choice is reported).

    ``media``: the :class:`MediaPolicy` (local files, downloads, size limits), or a mapping of its fields; off by
    default (anything else: a ValidationError, rule ``type``, pointer ``/media``; a key that names no field: rule
    ``additionalProperties`` at ``/media/KEY``, a TypeError too).
    ``reasoning``: reasoning that came from another provider (thinking metadata ``provider``) is
    ``"drop"``-ped (default) or demoted to ``"text"``. ``replay_from``: provider names whose signed
    reasoning this request may replay verbatim (default: the target provider's own names).
    ``repair``: add a synthetic error result for an unanswered tool call and leave out a tool result
    that answers no call (off by default: orphans are only reported).
    ``missing_thought_signature``: Gemini function calls without a signature (another provider's) are
    sent without one (``"omit"``) or with Google's documented placeholder (``"skip"``:
    ``skip_thought_signature_validator``, said as ``signature-added``); ``"auto"`` (default) is ``"skip"``
    for Gemini 3 models, which refuse a current turn's call without a signature, ``"omit"`` for others.
    ``multi_agent_layout``: ``"prefix"`` (each other speaker's turn as a user turn ``[Name]: text``)
    or ``"history"`` (runs of other speakers folded into one user turn wrapped in ``<history>``).
    ``history_prompt``: the text before the first ``<history>`` in the ``"history"`` layout.
    """

    media: MediaPolicy = attrs.field(factory=MediaPolicy, converter=_media_policy)
    reasoning: str = attrs.field(default="drop", validator=_one_of("drop", "text"))
    replay_from: tuple[str, ...] | None = attrs.field(
        default=None,
        converter=attrs.converters.optional(tuple),
    )
    repair: bool = False
    missing_thought_signature: str = attrs.field(default="auto", validator=_one_of("auto", "omit", "skip"))
    multi_agent_layout: str = attrs.field(default="prefix", validator=_one_of("prefix", "history"))
    history_prompt: str = DEFAULT_HISTORY_PROMPT


def as_options(options: FormatOptions | Mapping[str, Any] | None) -> FormatOptions:
    if options is None:
        return _DEFAULT_OPTIONS
    if isinstance(options, FormatOptions):
        return options
    if not isinstance(options, Mapping):
        raise ValidationError.single(
            "/options", "type", f"options must be FormatOptions or a mapping, got {type(options).__name__}"
        )
    try:
        return FormatOptions(**dict(options))
    except ValidationError as exc:  # (a field's own check: said at /options/<field>)
        raise exc.under("/options") from None
    except (TypeError, ValueError) as exc:
        raise ValidationError.single("/options", "options", str(exc)) from None


_DEFAULT_OPTIONS = FormatOptions()


# ---- the per-call context -------------------------------------------------------------------------

_ID_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
#: The names (speakers, tools) of recent calls and what they map to (or whether a provider's pattern takes them):
#: pure functions of the name, kept across calls (an agent's names repeat from one turn to the next), at most this
#: many, cleared when full
_MEMO_MAX = 4096
_SPEAKERS: dict[str, str] = {}


class Context:
    """State of one format call: diagnostics, options, id/name maps, open tool calls."""

    __slots__ = (
        "_media",
        "_speakers",
        "before_piece",
        "cache_marks",
        "diagnostics",
        "families",
        "id_bad",
        "id_cache",
        "id_free",
        "id_max",
        "id_taken",
        "messages",
        "name_cache",
        "name_owed",
        "names_dropped",
        "open_calls",
        "options",
        "provider",
        "quick",
        "structured",
        "tool_name_cache",
        "tool_name_ok",
        "tool_name_used",
        "unscanned",
    )

    def __init__(
        self,
        provider: str,
        families: Iterable[str],
        options: FormatOptions,
        messages: Sequence[Msg] = (),
        *,
        id_max: int = 0,
        id_bad: Callable[[str], Any] | None = None,
        tool_name_ok: Callable[[str], Any] | None = None,
    ) -> None:
        self.provider = provider
        self.options = options
        self.messages = messages
        self.families = frozenset(options.replay_from if options.replay_from is not None else families)
        self.diagnostics: list[tuple[Any, ...]] = []  # (pointer, rule, message[, other pointers]): see report()
        self._media: MediaSession | None = None  # (made on first use: most conversations hold no media to resolve)
        self._speakers: frozenset[str] | None = None  # (made on first use: see speakers)
        # tool-call ids the provider takes as they are: any (``id_free``), or non-empty ones of at most
        # ``id_max`` characters (0: any length) in which ``id_bad`` (a regex search) finds no character
        # it refuses; the others are mapped, alike in call and result
        self.id_max = id_max
        self.id_bad = id_bad
        self.id_free = not id_max and id_bad is None
        self.id_cache: dict[str, str] = {}  # original -> mapped, for the ids that do not fit only
        self.id_taken: set[str] | None = None  # made on the first mapping (see sent_id)
        self.tool_name_ok = tool_name_ok
        self.tool_name_cache: dict[str, str] = {}
        self.tool_name_used: set[str] = set()
        self.name_cache: dict[str, str] = {}
        self.names_dropped: list[int] = []  # indexes of the messages whose name was not sent (said once, at finish)
        #: the message whose name a later piece is to send (its piece of tool results alone sent none; -1: none): a
        #: later piece that sends nothing says it dropped
        self.name_owed = -1
        # open tool calls: original id -> (id sent, tool name sent, tool name, message index, block index)
        self.open_calls: dict[str, tuple[str, str, str, int, int]] = {}
        #: the index of the block before the piece of an assistant message the walk sends (-1: its first piece, the
        #: usual case; set by Walk.next_piece): read here, not passed to Walk.assistant_message, the usual message
        #: pays no default argument nor test of it (a slot: a walk of 30 attributes or more loses its fast layout)
        self.before_piece = -1
        #: the structured output asked for (a StructuredOutput: providers/_request/structured.py), or None
        self.structured: Any = None
        #: what the walk looks at inline of the fields no request carries (a fields.Quick, from the provider's field
        #: table), or None: the walk looks at none and fields.scan at every message
        self.quick: Any = None
        #: the indexes of the messages fields.scan looks at (the walk's usual paths looked at the others), or None: all
        self.unscanned: list[int] | None = None
        #: the prompt-cache markers of the messages (message index -> cache.Mark), None: none (run_format reads them)
        self.cache_marks: Any = None

    @property
    def media(self) -> MediaSession:
        """The call's media session (local files and downloads under the options' policy), made on first use."""
        media = self._media
        if media is None:
            media = self._media = self.options.media.session()
        return media

    @property
    def speakers(self) -> frozenset[str]:
        """The labels (:func:`speaker_label`) of the conversation's user and assistant messages, made on first use:
        the speakers whose lines another speaker's text can forge in a multi-agent layout."""
        speakers = self._speakers
        if speakers is None:
            speakers = self._speakers = frozenset(
                speaker_label(m) for m in self.messages if m.role.value in ("USER", "ASSISTANT")
            )
        return speakers

    def close_media(self) -> None:
        """Close the media session, if one was made (its download client); once."""
        media, self._media = self._media, None
        if media is not None:
            media.close()

    def report(self, pointer: str | tuple[int, int], rule: str, message: str | tuple[Any, ...]) -> None:
        """Record a diagnostic. The walks record the frequent ones cheaply (appending to
        ``diagnostics`` themselves): ``pointer`` may be (message index, block index) for
        ``/i/content/j`` and ``message`` a tuple (format string, arguments...); both become strings
        when the diagnostics are read (:func:`as_problem`)."""
        self.diagnostics.append((pointer, rule, message))

    def finish(self, strict: bool) -> tuple[tuple[Any, ...], ...]:
        """The diagnostics recorded, as (pointer, rule, message[, other pointers]) for :class:`FormattedRequest`, those
        of one rule and text said once (:func:`grouped`); with ``strict`` raise the lossy and error ones as a
        ValidationError."""
        self.close_media()
        if self.names_dropped:
            self._say_names_dropped()
        diagnostics = grouped(self.diagnostics)
        if strict:
            bad = [as_problem(d) for d in diagnostics if RULES[d[1]][0] in _STRICT_KINDS]
            if bad:
                raise ValidationError(bad, f"{self.provider} request (strict)")
        return diagnostics

    def _say_names_dropped(self) -> None:
        """One ``name-dropped`` for the request, at the first message whose name was not sent: a conversation
        of named messages (AgentScope names every one) would otherwise say the same thing once per message."""
        dropped = list(dict.fromkeys(self.names_dropped))  # (in message order; one message may say it twice)
        first = dropped[0]
        if len(dropped) == 1:
            self.diagnostics.append(
                (
                    f"/{first}/name",
                    "name-dropped",
                    f"{self.provider} sends no name on this message: its name was not sent",
                )
            )
            return
        shown = ", ".join(map(str, dropped[:SHOWN])) + (", ..." if len(dropped) > SHOWN else "")
        message = (
            f"{self.provider} sends no name on these messages: the names of {len(dropped)} messages were not"
            f" sent (messages {shown}; the first is pointed at)"
        )
        # (the other pointers as message indexes, made /i/name when the diagnostics are read: as_problem)
        self.diagnostics.append((f"/{first}/name", "name-dropped", message, dropped[1:]))

    # ---- ids and names ----

    def id_fits(self, original: str) -> bool:
        """Whether the provider takes this tool-call id as it is."""
        if self.id_free:
            return True
        bad = self.id_bad
        return (
            bool(original)
            and (not self.id_max or len(original) <= self.id_max)
            and (bad is None or bad(original) is None)
        )

    def sent_id(self, original: str, pointer: str | tuple[int, int]) -> str:
        """The id sent for a tool call / result id: the id itself when the provider takes it, else a
        mapping that is the same for call and result and collides with no id of the conversation
        (reported once). ``pointer`` may be (message index, block index), made a pointer only when
        reported. The walks test the common case inline and call this for the other ids."""
        if self.id_fits(original):
            return original
        mapped = self.id_cache.get(original)
        if mapped is not None:
            return mapped
        taken = self.id_taken
        if taken is None:
            taken = self.id_taken = _tool_ids(self.messages)
        limit = self.id_max or 64
        mapped = _safe_id(original, limit)
        if mapped in taken:
            mapped = _unique(mapped, original, taken, limit)
        self.report(pointer, "tool-id-mapped", f"tool-call id {original!r} sent as {mapped!r}")
        self.id_cache[original] = mapped
        taken.add(mapped)
        return mapped

    def tool_name(self, original: str, pointer: str) -> str:
        mapped = self.tool_name_cache.get(original)
        if mapped is not None:
            return mapped
        ok = self.tool_name_ok
        if ok is None or ok(original):
            mapped = original
        else:
            mapped = _safe_id(original, 64, prefix="tool")
            if mapped in self.tool_name_used:
                mapped = _unique(mapped, original, self.tool_name_used, 64)
            self.report(pointer, "tool-name-mapped", f"tool name {original!r} sent as {mapped!r}")
        self.tool_name_cache[original] = mapped
        self.tool_name_used.add(mapped)
        return mapped

    def speaker_name(self, name: str, pointer: str) -> str:
        """A name for an OpenAI-style ``name`` field: ``[A-Za-z0-9_-]{1,64}``."""
        mapped = self.name_cache.get(name)
        if mapped is None:
            mapped = _SPEAKERS.get(name)
            if mapped is None:
                mapped = _ID_BAD_CHARS.sub("_", name)[:64] or "_"
                if len(_SPEAKERS) >= _MEMO_MAX:
                    _SPEAKERS.clear()
                _SPEAKERS[name] = mapped
            self.name_cache[name] = mapped
        if mapped != name:
            self.report(pointer, "name-sanitized", f"name {name!r} sent as {mapped!r}")
        return mapped


def _tool_ids(messages: Sequence[Msg]) -> set[str]:
    """Every tool call and result id of a conversation, as given (mapped ids avoid them all)."""
    ids: set[str] = set()
    for msg in messages:
        blocks = msg.content if isinstance(msg, Msg) and isinstance(msg.content, list) else ()
        for b in blocks:
            if type(b) is ToolUseBlock or type(b) is ToolResultBlock:
                ids.add(b.id)
    return ids


def as_problem(diagnostic: tuple[Any, ...]) -> Problem:
    """A recorded diagnostic (see :meth:`Context.report`; a grouped one has its other pointers fourth: :func:`grouped`,
    where a message index ``i`` stands for ``/i/name``: :meth:`Context._say_names_dropped`) as a Problem."""
    pointer, rule, message = diagnostic[:3]
    if type(pointer) is tuple:
        pointer = f"/{pointer[0]}/content/{pointer[1]}"
    if type(message) is tuple:
        message = message[0].format(*message[1:])
    if len(diagnostic) == 3:
        return Problem(pointer, rule, message)
    others = tuple(
        p if type(p) is str else f"/{p}/name" if type(p) is int else f"/{p[0]}/content/{p[1]}" for p in diagnostic[3]
    )
    return Problem(pointer, rule, message, None, others)


#: how many places a diagnostic said once for several lists in its text: messages (``name-dropped``), and other
#: places (their pointers are longer: a diagnostic's text is cut past ``errors.MESSAGE_MAX`` characters); its
#: ``other_pointers`` holds every one
SHOWN: Final = 20
SHOWN_PLACES: Final = 10


def grouped(diagnostics: Sequence[tuple[Any, ...]]) -> tuple[tuple[Any, ...], ...]:
    """``diagnostics`` with those of one rule and one text said once, where the first was (pointer, rule, message,
    the other pointers), the text counting and listing the places (:func:`places_text`): a change said of every
    message of a long conversation (an agent's reasoning to a provider that takes none, its merged turns) is one
    diagnostic, however long the conversation, and the other kinds of change are not lost among its repeats (a strict
    error lists its first problems). One pass, a dict of the (rule, text) seen; the texts are compared as recorded
    (a format and its arguments)."""
    if len(diagnostics) < 2:
        return tuple(diagnostics)
    seen: dict[tuple[str, Any], int] = {}
    others: dict[int, list[Any]] = {}
    kept: list[tuple[Any, ...]] = []
    # the diagnostic before: its rule and text, its group's index in kept and other pointers (None: none yet)
    rule: Any = None
    message: Any = None
    at = -1
    more: list[Any] | None = None
    for d in diagnostics:
        if d[1] == rule and d[2] == message:  # said again of the next place (the usual repeat): no key made
            if more is None:
                more = others[at] = []
            more.append(d[0])
            continue
        rule = d[1]
        message = d[2]
        key = (rule, message)
        found = seen.get(key)
        if found is None:
            at = seen[key] = len(kept)
            kept.append(d)
            more = None
        else:
            at = found
            more = others.get(at)
            if more is None:
                more = others[at] = []
            more.append(d[0])
    if not others:
        return tuple(kept)
    for at, more in others.items():
        pointer, rule, message = kept[at][:3]
        kept[at] = (pointer, rule, (_PLACES, message, pointer, more), more)  # (the text made when read: _Places)
    return tuple(kept)


class _Places:
    """The format of a grouped diagnostic's text (:func:`grouped`), a recorded message ``(format, arguments...)`` as
    :func:`as_problem` reads one: the text counting and listing the places is made when the diagnostics are read, not
    on every call that formats a request."""

    @staticmethod
    def format(message: str | tuple[Any, ...], first: Any, more: Sequence[Any]) -> str:
        if isinstance(message, tuple):
            message = message[0].format(*message[1:])
        return places_text(str(message), first, more)


_PLACES: Final = _Places()


def places_text(message: str, first: Any, more: Sequence[Any]) -> str:
    """``message`` of a diagnostic said at ``first`` and ``more`` (pointers or (message, block) indexes): counting
    them and listing the first :data:`SHOWN` messages or :data:`SHOWN_PLACES` other places."""
    pointers = [p if type(p) is str else f"/{p[0]}/content/{p[1]}" for p in (first, *more[: SHOWN - 1])]
    if all(p.count("/") == 1 and p[1:].isdigit() for p in pointers):  # messages: their indexes
        listed = "messages " + ", ".join(p[1:] for p in pointers)
    else:
        pointers = pointers[:SHOWN_PLACES]
        listed = ", ".join(pointers)
    cut = len(more) + 1 > len(pointers)
    return (
        f"{message} (said once for {len(more) + 1} places: {listed}{', ...' if cut else ''}; the first is pointed at)"
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _safe_id(original: str, limit: int, prefix: str = "call") -> str:
    cleaned = _ID_BAD_CHARS.sub("_", original)
    if cleaned and cleaned == original and len(cleaned) <= limit:
        return cleaned
    if not cleaned:
        return f"{prefix}_{_digest(original)}"
    if len(cleaned) > limit or cleaned != original:
        # keep a readable head, make it unique with a digest of the original
        suffix = "_" + _digest(original)
        return cleaned[: limit - len(suffix)] + suffix
    return cleaned


def _unique(mapped: str, original: str, used: set[str], limit: int) -> str:
    suffix = "_" + _digest(original)
    candidate = mapped[: limit - len(suffix)] + suffix
    n = 2
    while candidate in used:
        tail = f"_{_digest(original)}{n}"
        candidate = mapped[: limit - len(tail)] + tail
        n += 1
    return candidate


def id_matcher(pattern: str) -> Callable[[str], Any]:
    """Whether a provider's pattern takes an id or a name as it is (truthy: it does); the answers of recent calls
    kept (:data:`_MEMO_MAX`: an agent's tool names repeat from one turn to the next)."""
    match = re.compile(pattern).fullmatch
    seen: dict[str, bool] = {}

    def matches(name: str) -> bool:
        ok = seen.get(name)
        if ok is None:
            ok = match(name) is not None
            if len(seen) >= _MEMO_MAX:
                seen.clear()
            seen[name] = ok
        return ok

    return matches


# ---- tool calls -----------------------------------------------------------------------------------


def tool_arguments(block: ToolUseBlock, ctx: Context, pointer: str) -> tuple[dict[str, Any], str]:
    """(input object, argument JSON text) for a tool call. The raw text (``content``) is replayed
    as it is when it is the JSON of ``input``; otherwise ``input`` is the truth."""
    args = block.input
    raw = block.content
    if raw is not None:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if type(parsed) is dict:
            if parsed == args:
                return args, raw
            if (block.metadata or {}).get("argumentsError"):
                # JSON the message could not hold (an integer beyond 64 bits, nesting beyond the limits: orjson
                # reads it, rounded or deeper than a message goes): the model's text is not what is sent
                ctx.report(
                    pointer,
                    "tool-arguments-invalid",
                    "raw arguments are JSON the message could not hold (argumentsError); sent the parsed input instead",
                )
            else:  # another object than input (input changed since, say): input is the truth, the text not sent
                ctx.report(
                    f"{pointer}/content",
                    "field-dropped",
                    "raw arguments (content) are not the JSON of input (changed since?): input was sent",
                )
        else:
            ctx.report(
                pointer,
                "tool-arguments-invalid",
                "raw arguments are not a JSON object; sent the parsed input instead",
            )
    return args, json_text(args)


def json_text(value: Any) -> str:
    """Compact JSON text, as orjson writes it (a float, an enum member, a datetime, a UUID, a dataclass alike); what
    orjson refuses and JSON carries, an int key (``logit_bias``'s token ids) and an integer past 64 bits, written as
    its digits (as the standard library writes them), whatever else the value holds: the same text of a part of it
    whether or not another part holds one. A mapping that is no dict is an object, a sequence that is no list an
    array; a value no JSON carries (an object key that is no string or int, a set) raises
    :class:`~agentmsg.ValidationError` (rule ``json-value``) at its pointer in ``value``; a string or key holding a
    lone UTF-16 surrogate, which UTF-8 cannot encode, rule ``lone-surrogate``; an integer of more digits than Python
    writes, rule ``integer-range``; an int key whose digits are another key of its object, rule ``duplicate-key``
    (the walk is the tool definitions' own, :func:`~agentmsg._codec.jsontext.unwritten_at`, with keys and depth
    looked at).

    A NaN or an infinity is not looked for: where orjson writes the value, it writes one as ``null``; only where
    orjson refused the value (an int key, an integer past 64 bits) does the walk refuse it, rule ``json-value``. The
    callers give it a message's tool input, and format_request refuses a NaN there before (the check of its input,
    rule ``json-value`` at the input's pointer); looking for one here too (orjson's text searched for ``null``, as
    :meth:`FormattedRequest.body_bytes` does) cost 70-100 ns a call, 2-4% of formatting 1,000 messages for the
    Responses API (500 tool calls)."""
    try:
        return orjson.dumps(value, default=_plain).decode()
    except TypeError:
        pass
    return _written_with_digits(value).decode()


def _written_with_digits(value: Any) -> bytes:
    """``value`` written as orjson writes it, but for its int keys and integers past 64 bits, written as their
    digits (``json_text``, ``body_bytes``, where orjson refused ``value``). Where the quick build
    (:func:`_with_digits`) cannot tell every part written as it is, the walk says what is not (and, finding
    nothing, the value is built without the quick tests)."""
    max_depth = limits.max_depth
    ready = _with_digits(value, max_depth, checked=False)
    if ready is _DOUBT:
        found = unwritten_at(value, max_depth, check_keys=True, refuse_deep=True)
        if found is not None:
            raise ValidationError.single(*found)
        ready = _with_digits(value, max_depth, checked=True)
    try:
        return orjson.dumps(ready, default=_plain)
    except TypeError:  # pragma: no cover (the walk finds what orjson refuses)
        raise ValidationError.single("", "json-value", "the value is not JSON: no JSON body carries it") from None


#: finds a ``null`` in orjson's text of a body: where there is none, the body holds no NaN nor infinity (orjson writes
#: them as ``null``, without a word); where there is one, :func:`_written_with_digits` tells (a body of 1,000 OpenAI
#: messages, 185 kB: 50 us, where orjson writes it in 75 us; ``b"null" in`` took 87 us)
_NULL: Final = re.compile(b"null").search

#: what :func:`_with_digits` gives for a value whose every part it cannot tell written as it is
_DOUBT: Final = object()


def _with_digits(value: Any, max_depth: int, *, checked: bool) -> Any:
    """A copy of ``value`` that orjson writes as :func:`json_text` writes ``value``: every object holding an int key
    copied with the key as its digits (``int.__repr__``, as ``json.dumps`` writes one), every integer past 64 bits
    an ``orjson.Fragment`` of its digits, every mapping and sequence on their way a dict and a list; a part orjson
    writes as it is is kept, the same object, so that orjson writes it as it writes it anywhere (an enum member as
    its value, a datetime or a UUID as its text, a float as its shortest digits). Iterative; a part is written as it
    is when :func:`~agentmsg._codec.jsontext.plainly_written` says so (one C pass, usually), else copied.
    ``checked``: ``unwritten_at`` found nothing in ``value``, and a part orjson writes (``orjson.dumps`` does not
    raise) is kept; else a part that may be refused (a NaN, a set, a lone surrogate, an int key's digits that are
    another key of its object, a part past ``max_depth``) gives :data:`_DOUBT` (the walk then tells)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, parent, slot, depth = pop()
        t = type(node)
        if t is str or t is bool or node is None:
            if t is str and not checked and has_lone_surrogate(node):
                return _DOUBT
            continue
        if isinstance(node, int):  # (an int subclass, an IntEnum member, in range: orjson writes it as its value)
            if not INT_MIN <= node <= INT_MAX:
                if not checked and undigited(node) is not None:
                    return _DOUBT
                parent[slot] = orjson.Fragment(int.__repr__(node))
            continue
        if t is float:
            if not checked and node - node != 0.0:  # (NaN and the infinities)
                return _DOUBT
            continue
        if depth and _as_written(node, max_depth - depth, checked):
            continue
        inner: Any = node if t is dict or t is list else container(node)
        if inner is None:  # (a leaf orjson refuses, or writes as null: only the walk has a verdict)
            if checked:
                continue
            return _DOUBT
        if not checked and depth >= max_depth:
            return _DOUBT
        if type(inner) is dict:
            copied: dict[str, Any] = {}
            for key, child in inner.items():
                if type(key) is not str:
                    if not isinstance(key, int) or isinstance(key, bool):
                        if checked:  # pragma: no cover (the walk refuses such a key)
                            raise TypeError(f"a key of type {type(key).__name__} is not JSON")
                        return _DOUBT
                    if not checked and not INT_MIN <= key <= INT_MAX and undigited(key) is not None:
                        return _DOUBT
                    key = int.__repr__(key)
                elif not checked and has_lone_surrogate(key):
                    return _DOUBT
                if key in copied:  # (an int key whose digits are another key: the walk says duplicate-key)
                    if checked:  # pragma: no cover
                        raise TypeError(f"key {key!r} twice in one object")
                    return _DOUBT
                copied[key] = child
                push((child, copied, key, depth + 1))
            parent[slot] = copied
        else:
            listed = list(inner)
            for i, child in enumerate(listed):
                push((child, listed, i, depth + 1))
            parent[slot] = listed
    return root[0]


def _as_written(node: Any, room: int, checked: bool) -> bool:
    """Whether orjson writes ``node``, a container or a leaf of a value ``room`` levels from the depth limit, as it
    is (unless ``checked``: and the walk would find nothing in it)."""
    if not checked:
        return plainly_written(node, room)
    try:
        orjson.dumps(node, default=_plain)
    except TypeError:
        return False
    return True


def _plain(value: Any) -> Any:
    """What a JSON writer writes for a value it has no type for: a mapping's dict, a sequence's list."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def orphan_calls(ctx: Context) -> list[tuple[str, str]]:
    """Report the open calls as orphans (and repaired, with the option) and return (id sent, tool
    name sent) for each, in call order."""
    out = []
    repair = ctx.options.repair
    for call_id, (sent, tool, name, i, j) in ctx.open_calls.items():
        pointer = f"/{i}/content/{j}"
        ctx.report(pointer, "tool-use-orphan", f"tool call {call_id!r} ({name}) has no result before the next turn")
        if repair:
            ctx.report(pointer, "tool-use-repaired", f"added an error result for tool call {call_id!r}")
        out.append((sent, tool))
    ctx.open_calls.clear()
    return out


REPAIR_TEXT: Final = "Error: the tool call was not answered (interrupted)."


#: tool result states sent with the provider's error flag where it has one (str-valued enum members
#: hash and compare as their value: ``block.state in ERROR_STATES``)
ERROR_STATES: Final = frozenset({"error", "denied", "interrupted"})


def result_is_error(block: ToolResultBlock) -> bool:
    """An error, denied or interrupted result (sent with the provider's error flag where it has one)."""
    return block.state in ERROR_STATES


# ---- reasoning replay policy ----------------------------------------------------------------------

REPLAY, DROP, DEMOTE = 0, 1, 2


def reasoning_origin(block: ThinkingBlock) -> str | None:
    meta = block.metadata
    if not meta:
        return None
    value = meta.get("provider")
    return value if isinstance(value, str) else None


def foreign_reasoning(
    ctx: Context, block: ThinkingBlock, pointer: str | tuple[int, int], origin: str, demote: bool
) -> int:
    """Reasoning from another provider: drop (default) or, with ``demote`` (option
    reasoning='text'), demote to text; reported either way."""
    if demote and block.thinking:
        ctx.report(pointer, "thinking-demoted", f"reasoning from {origin} sent to {ctx.provider} as text")
        return DEMOTE
    ctx.report(pointer, "thinking-dropped", (FOREIGN_DROPPED, origin, ctx.provider))
    return DROP


FOREIGN_DROPPED: Final = "reasoning from {} not sent to {}"

#: thinking metadata: the id (``rs_...``) of the reasoning item the block is a part of (the Responses API)
ITEM_ID: Final = "itemId"
#: thinking metadata: True when the block is a ``reasoning_text`` part (raw reasoning), not a summary part
REASONING_TEXT: Final = "reasoningText"
#: thinking metadata: True when the block is an empty ``summary_text`` part (sent back as one), not the one empty block
#: that an item of no part keeps (its carrier); a summary part with text needs no mark
SUMMARY_TEXT: Final = "summaryText"


def reasoning_item(block: ThinkingBlock, families: Container[str]) -> tuple[str, str | None, str | None] | None:
    """What a provider that takes reasoning items back (the Responses API, of reasoning ``families``) makes of a
    thinking block that is no carrier: (item id, its encrypted content or None, part kind) when the block goes back
    as a part of a reasoning item: its own reasoning (provider in ``families``, or none said), not redacted, of an
    item (metadata ``itemId``); the kind is ``content`` (a ``reasoning_text`` part), ``summary``, or None (the empty
    block of an item of no part). None: the block is not sent so (the formatter says why). The formatter and the
    token count read it here."""
    meta = block.metadata
    if not meta:
        return None
    origin = meta.get("provider")
    if isinstance(origin, str) and origin not in families:
        return None
    item_id = meta.get(ITEM_ID)
    if meta.get("redacted") is True or not isinstance(item_id, str) or not item_id:
        return None
    encrypted = meta.get("signature")
    if meta.get(REASONING_TEXT) is True:
        kind: str | None = "content"
    elif block.thinking or meta.get(SUMMARY_TEXT) is True:
        kind = "summary"
    else:
        kind = None
    return item_id, encrypted if isinstance(encrypted, str) and encrypted else None, kind


# ---- provider data kept for the provider that made it -----------------------------------------------------
# A thinking block whose metadata holds ``providerBlock`` or ``citations`` is a carrier (docs/streams.md): a tool the
# provider ran itself (an Anthropic block, a Gemini part) or the citations of the text block before it, as that
# provider gave them. Its provider's formatter sends it back unchanged, in its place (the walks' ``provider_part``
# hook); every other provider says it. The reply's grounding (message metadata ``agentmsg_grounding``) no provider
# takes back: every formatter says it.

#: thinking metadata: a block of the provider's reply no agentmsg block type holds, as it gave it
PROVIDER_BLOCK: Final = "providerBlock"
#: thinking metadata: the citations of the text block just before the carrier, as the provider gave them
CITATIONS: Final = "citations"
#: message metadata: the citation and grounding data of the whole reply (the provider's field names, and provider)
GROUNDING: Final = "agentmsg_grounding"


def is_carrier(meta: Mapping[str, Any] | None) -> bool:
    """Whether thinking metadata ``meta`` makes its block a carrier of provider data."""
    if not meta:
        return False
    return PROVIDER_BLOCK in meta or CITATIONS in meta


def carried_kind(value: Any) -> str:
    """What a carried provider block is, for a diagnostic: an Anthropic block's ``type``, a Gemini part's kind."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str):
            return kind[:60]
        keys = [k for k in value if k != "thoughtSignature"]
        if keys:
            return str(keys[0])[:60]
    return "a provider block"


def message_item(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``{type: "message", id, phase}`` a carrier's ``providerBlock`` holds when it keeps a Responses message
    item's id and phase (the openai-responses reader's, after the item's text), else None: no tool the provider ran."""
    block = meta.get(PROVIDER_BLOCK)
    return block if isinstance(block, Mapping) and block.get("type") == "message" else None


def stand_in_said(ctx: Context, block: Any, pointer: str | tuple[int, int], what: str) -> None:
    """Say that a thinking block's own text and signature are not sent where ``what`` (its provider data: a carried
    block, redacted data) stands in for the block: the readers make such blocks of no text and no signature, so only
    a block a caller gave them has any to lose (``thinking-dropped``); one of neither is said nothing."""
    signature = block.metadata.get("signature") if block.metadata else None
    lost = [f"text ({len(block.thinking)} characters)"] if block.thinking else []
    if isinstance(signature, str) and signature:
        lost.append("signature")
    if lost:
        ctx.report(pointer, "thinking-dropped", f"the thinking block's {' and '.join(lost)} not sent: {what} stands in")


def carrier_dropped(ctx: Context, meta: Mapping[str, Any], pointer: str | tuple[int, int], why: str) -> None:
    """Say that a carrier (see :func:`is_carrier`) is not sent, and ``why``: ``provider-tool-dropped`` for a tool the
    provider ran itself, ``citations-dropped`` for citations (their text is sent). A message item's id and phase
    (:func:`message_item`) are no tool: its text is sent (a refusal's too, as the provider takes a refusal), so what
    is lost is its ``phase`` (``field-dropped``), and its id only where its own provider would have sent it back
    (another provider has no use for it: said of nothing else, as a message's id is not)."""
    origin = meta.get("provider")
    whose = f" from {origin}" if isinstance(origin, str) else ""
    item = message_item(meta)
    if item is not None:
        phase, item_id = item.get("phase"), item.get("id")
        lost = [f"phase {phase[:40]!r}"] if isinstance(phase, str) and phase else []
        if isinstance(item_id, str) and item_id and isinstance(origin, str) and origin in ctx.families:
            lost.append(f"id {item_id[:80]!r}")
        if lost:
            ctx.report(
                pointer,
                "field-dropped",
                f"the message item's {' and '.join(lost)}{whose} not sent to {ctx.provider}: {why}; its text is sent",
            )
        return
    if PROVIDER_BLOCK in meta:
        what = carried_kind(meta[PROVIDER_BLOCK])
        ctx.report(pointer, "provider-tool-dropped", f"{what}{whose} not sent to {ctx.provider}: {why}")
    else:
        ctx.report(
            pointer, "citations-dropped", f"citations{whose} not sent to {ctx.provider}: {why}; the text is sent"
        )


def grounding_dropped(ctx: Context, msg: Msg, i: int) -> None:
    """Say that a message's grounding (metadata ``agentmsg_grounding``) is not sent: no provider's request takes a
    reply's citation or grounding data back (OpenAI's assistant message has no ``annotations``, Gemini's contents no
    ``groundingMetadata``, DashScope's messages no ``search_info``); the text that cites it is sent."""
    value = msg.metadata.get(GROUNDING)
    origin = value.get("provider") if isinstance(value, Mapping) else None
    fields = ", ".join(str(k)[:40] for k in value if k != "provider") if isinstance(value, Mapping) else ""
    whose = f"{origin}'s " if isinstance(origin, str) else ""
    ctx.report(
        f"/{i}/metadata/{GROUNDING}",
        "citations-dropped",
        f"{whose}citations and grounding of the reply ({fields or 'agentmsg_grounding'}) not sent: {ctx.provider} takes"
        " none back in a request; the text is sent",
    )


# ---- tool results rendered as text ----------------------------------------------------------------

MEDIA_TYPES: Final = (ImageBlock, AudioBlock, VideoBlock, DataBlock)
MEDIA: Final = frozenset(MEDIA_TYPES)  # for ``type(block) in MEDIA``
#: the text before a tool result's media where they are resent in a user message (chat family): its call's id
#: formatted in (the request and the token count say it alike)
TOOL_MEDIA_HEAD: Final = "Media returned by tool call {}:"


def block_label(block: Any) -> str:
    """A short text naming a media block, for placeholders: ``[image: https://...]``. It is sent to the provider, so
    it names inline data by its type (``data:image/png``, never its bytes) and a local file by its name (never the
    caller's directories); a web URL is shown up to :data:`LABEL_URL_MAX` characters."""
    kind = block.type
    source = block.source
    what = _where(source.url) if source.type == "url" else source.media_type.lower()
    name = getattr(block, "name", None)
    if name:
        what = f"{name} ({what})"
    return f"[{kind}: {what}]"


LABEL_URL_MAX = 200


def _where(url: str) -> str:
    """A URL as a placeholder shows it (:func:`block_label`)."""
    scheme = scheme_of(url)
    if scheme == "data":
        return f"data:{data_url_mime(url) or 'text/plain'}"
    if scheme is None or scheme == "file":  # a local file: its name alone
        path = unquote(url.split("?", 1)[0]) if scheme == "file" else url
        name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return name or "a local file"
    return url if len(url) <= LABEL_URL_MAX else url[:LABEL_URL_MAX] + "..."


def hint_in_result(ctx: Context, pointer: str) -> None:
    """Say that a hint inside a tool result is sent as the result's text (``hint-placed``): a tool's output, which no
    provider reads with a system's authority, as a hint elsewhere is sent (its own turn after the results)."""
    ctx.report(pointer, "hint-placed", "hint inside a tool result sent as the result's text (no system authority)")


def text_of_blocks(blocks: Sequence[Any], ctx: Context, pointer: str, media: list[tuple[Any, str]] | None) -> str:
    """The text of a tool result's output: text (and hint) blocks joined by ``\\n``.

    Media blocks are appended to ``media`` (with their pointers) when a list is given, else replaced by
    a placeholder (reported). Other blocks are dropped (reported)."""
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:
        return blocks[0].text
    parts: list[str] = []
    for j, b in enumerate(blocks):
        t = type(b)
        if t is TextBlock:
            parts.append(b.text)
        elif t is HintBlock:
            parts.append(b.hint)
            hint_in_result(ctx, f"{pointer}/{j}")
        elif t in MEDIA:
            if media is not None:
                media.append((b, f"{pointer}/{j}"))
            else:
                label = block_label(b)
                ctx.report(
                    f"{pointer}/{j}", "media-unsupported", f"{b.type} in a tool result sent as a text placeholder"
                )
                parts.append(label)
        elif t is ThinkingBlock:
            ctx.report(f"{pointer}/{j}", "block-dropped", "thinking inside a tool result is not sent")
        else:
            ctx.report(f"{pointer}/{j}", "block-dropped", f"{b.type} block inside a tool result is not sent")
    return "\n".join(parts)


def text_before(blocks: Sequence[Any], media: Container[int]) -> bool:
    """Whether a text or hint of a tool result's output comes after one of its ``media`` (``id()`` of the blocks)."""
    seen = False
    for b in blocks:
        t = type(b)
        if t is TextBlock or t is HintBlock:
            if seen:
                return True
        elif id(b) in media:
            seen = True
    return False


def name_media(blocks: Sequence[Any], text: str, names: Mapping[int, str]) -> str:
    """The text of a tool result's output (``text``: :func:`text_of_blocks`'s) naming its media where the text
    holds them (``names``: ``id()`` of a block -> the text naming it): after the text, each on a line of its own,
    when none comes before a text or hint; else each in its place among them (joined by ``\\n`` alike), so the
    text keeps the result's order (a placeholder of a medium before the text was appended after it: the order
    lost, unsaid)."""
    if not names:
        return text
    if not text:
        return "\n".join(names[id(b)] for b in blocks if id(b) in names)
    if not text_before(blocks, names):
        return "\n".join([text, *(names[id(b)] for b in blocks if id(b) in names)])
    pieces: list[str] = []
    for b in blocks:
        t = type(b)
        if t is TextBlock:
            pieces.append(b.text)
        elif t is HintBlock:
            pieces.append(b.hint)
        else:
            name = names.get(id(b))
            if name is not None:
                pieces.append(name)
    return "\n".join(pieces)


# ---- multi-agent ----------------------------------------------------------------------------------


def has_result(msg: Msg) -> bool:
    return any(type(b) is ToolResultBlock for b in msg.content)


def has_tool_use(msg: Msg) -> bool:
    return any(type(b) is ToolUseBlock for b in msg.content)


def tool_turns(msgs: Sequence[Msg]) -> frozenset[int]:
    """The messages of the turns (from a user message to the next) that called a tool: where a provider that sends
    back only the current turn's reasoning sends a tool-calling turn's too (the request and the token count)."""
    out: set[int] = set()
    turn: list[int] = []
    calls = False
    for i, msg in enumerate(msgs):
        if msg.role is MsgRole.USER:
            if calls:
                out.update(turn)
            turn, calls = [], False
        else:
            turn.append(i)
            calls = calls or has_tool_use(msg)
    return frozenset(out)


def current_turn(msgs: Sequence[Msg]) -> int:
    """Where the current turn starts for a provider that sends back only its reasoning and tool turns' (DeepSeek):
    the index of the last user message, whatever it holds (tool results alone too), -1 for none; the request and the
    token count read it here, with :func:`tool_turns`."""
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role is MsgRole.USER:
            return i
    return -1


def speaker_label(msg: Msg) -> str:
    """Who speaks, for ``[Name]: text``: the name, or the role in title case when there is none."""
    return msg.name if msg.name else msg.role.value.title()


def is_current_agent(msg: Msg, agent_name: str | None) -> bool:
    return agent_name is not None and msg.name == agent_name


# ---- argument checks ------------------------------------------------------------------------------


def check_messages(messages: Any) -> Sequence[Msg]:
    # (`type(...) is list` first: an ABC's isinstance is a Python frame, about 1,500 instructions)
    if type(messages) is not list and (isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence)):
        raise ValidationError.single("", "type", f"expected a sequence of Msg, got {type(messages).__name__}")
    if not all(map(isinstance, messages, repeat(Msg))):  # the loop in C; the one below finds the culprit
        for i, m in enumerate(messages):
            if not isinstance(m, Msg):
                raise ValidationError.single(f"/{i}", "type", f"expected a Msg, got {type(m).__name__}")
    # What to_json would refuse (a field changed after construction to what its schema does not allow, NaN in a
    # tool's input) is refused here too, under the message's index, before anything is formatted. The C writer
    # tells that of the whole list without writing it; where it cannot (pure Python, a value it leaves to orjson,
    # a message to refuse), each message is written until the first refusal.
    # The C writer's check passes only messages whose roles are MsgRole members and whose blocks are of agentmsg's
    # own classes (the walks tell roles apart by identity, blocks by class); a role set to a plain string after
    # construction is taken as its member (member_roles), a block of a caller's subclass appended after it as its
    # class's (member_blocks), as constructors take them.
    if type(messages) is list and surely_writes(messages):
        return messages
    refuse_unwritable(messages)
    return member_blocks(member_roles(messages))


#: The block classes the formatters have rules for. A block type added to the schema (its class is derived from
#: it) has none: formatting a message that holds one raises ``unsupported-block`` (tests/project/test_schema_drift.py
#: fails, naming providers/, until this and the walks know it).
FORMATTED_BLOCKS: Final = frozenset(
    {TextBlock, ThinkingBlock, ImageBlock, AudioBlock, VideoBlock, DataBlock, ToolUseBlock, ToolResultBlock, HintBlock}
)

_UNFORMATTED: Final = frozenset(BLOCK_CLASSES.values()) - FORMATTED_BLOCKS  # block types of the schema without rules


def broken_message(index: int, exc: Exception, msg: Msg | None = None) -> ValidationError:
    """A message that does not hold what its schema says (mutated after validation), or holds a block type the
    formatters have no rule for."""
    for j, block in enumerate(msg.content if msg is not None else ()):
        if type(block) in _UNFORMATTED:
            return ValidationError.single(
                f"/{index}/content/{j}/type",
                "unsupported-block",
                f"the provider formatters have no rule for {block.type!r} blocks"
                " (a block type new in the schema needs one in agentmsg/providers: README, 'Changing a schema')",
            )
    return ValidationError.single(f"/{index}", "invalid-message", f"cannot format this message: {exc!r}")


# ---- generation parameters ------------------------------------------------------------------------


#: The levels a request body puts around a generation parameter's value at most (Gemini's ``thinking_budget``: body,
#: generationConfig, thinkingConfig; a parameter of the body's top level has 1, Gemini's generationConfig and DashScope's
#: parameters 2): a value nested deeper than ``limits.max_depth`` less these could not be written, on every provider
#: alike, as ``tools.TOOL_ROOM`` says of a tool definition
PARAM_ROOM: Final = 3


def check_call(model: Any, params: Mapping[str, Any]) -> None:
    """The ``model`` and generation ``params`` of a ``format_request`` call, checked before anything is built, the
    same for every provider (``run_format``): ``model`` is a string (or None: the spec's default) that UTF-8 can
    write (it goes in the body, or in Gemini's URL path); a parameter's value holds nothing its JSON body cannot
    carry as given: no NaN or infinite number (JSON has none, and orjson would send it as null), no string or key
    with a lone UTF-16 surrogate, no key that is neither a string nor an int (an int key, as ``logit_bias``'s token
    ids, is written as its digits, ``body_bytes`` does so; not one whose digits are another key of its object, rule
    ``duplicate-key``), no nesting deeper than ``limits.max_depth`` less :data:`PARAM_ROOM` (the levels the body puts
    around a parameter: checked to the whole depth, one 252 to 254 levels deep was taken and only ``body_bytes``
    refused it); a ``json_schema`` response_format's schema to the whole depth, as :class:`StructuredOutput` refuses
    it deeper than its own room (``SCHEMA_ROOM``), at its own pointer.
    :class:`~agentmsg.ValidationError` (:class:`~agentmsg.SizeLimitError` for depth) names the value. Values of other
    kinds (tuples, the large integers ``body_bytes`` writes, a schema class in ``response_format``) are the
    formatters' to take or refuse. Iterative and linear: a deep or large value cannot exhaust the stack."""
    if model is not None and not isinstance(model, str):
        raise wrong_type("/model", "model must be a model name (a string)", model)
    if model is not None and has_lone_surrogate(model):
        raise ValidationError.single(
            "/model",
            "lone-surrogate",
            f"model {short_repr(model, 60)} holds a lone UTF-16 surrogate (not encodable as UTF-8)",
        )
    if not params:
        return
    max_depth = limits.max_depth
    room = max_depth - PARAM_ROOM
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(v, ("params", k)) for k, v in params.items()]
    # (a container's id and the greatest depth it was walked at: met again no deeper, it holds nothing that walk did
    # not refuse, so that a value sharing its members, a dict of the same dict twice a hundred levels down, costs its
    # containers, not its 2**100 paths; ``held`` keeps every such id taken)
    walked: dict[int, int] = {}
    held: list[Any] = []
    while stack:
        node, path = stack.pop()
        if isinstance(node, (Mapping, list, tuple)) or (
            isinstance(node, Sequence) and not isinstance(node, (str, bytes, bytearray))
        ):  # (a mapping or sequence that is no dict or list is written as one: body_bytes)
            if len(path) - 1 > room and (len(path) - 1 > max_depth or not _schema_of_format(params, path)):
                raise SizeLimitError.single(
                    pointer_of(path),
                    "max-depth",
                    f"nested deeper than {room} levels (limits.max_depth, {max_depth}, less the {PARAM_ROOM} the request"
                    " body may put around a parameter)",
                )
            seen = walked.get(id(node))
            if seen is not None and seen >= len(path):
                continue
            if seen is None:
                held.append(node)
            walked[id(node)] = len(path)
            if isinstance(node, Mapping):
                ints = strs = False
                for key, child in node.items():
                    if isinstance(key, int) and not isinstance(key, bool):  # (logit_bias's token ids: written "50256")
                        ints = True
                        if not INT_MIN <= key <= INT_MAX and (why := undigited(key)) is not None:  # (str(key) raises)
                            raise ValidationError.single(pointer_of(path), "integer-range", "object key: " + why)
                        stack.append((child, (*path, str(key))))
                        continue
                    if not isinstance(key, str):
                        raise ValidationError.single(
                            pointer_of(path),
                            "json-value",
                            f"object key {short_repr(key)} is neither an int nor a string that UTF-8 can write: no"
                            " JSON body carries it",
                        )
                    if has_lone_surrogate(key):  # (as every other check says it: a key at its object's pointer)
                        raise ValidationError.single(
                            pointer_of(path), "lone-surrogate", "object key: " + surrogate_words(key)
                        )
                    strs = True
                    stack.append((child, (*path, key)))
                if ints and strs and (twice := written_twice(dict(node))) is not None:  # ({7: 1, "7": 2}: one key)
                    raise ValidationError.single(pointer_of((*path, twice[0])), "duplicate-key", twice[1])
            else:
                stack.extend((child, (*path, i)) for i, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise ValidationError.single(
                pointer_of(path), "json-value", f"{node!r} is not a JSON number: no JSON body carries it"
            )
        elif isinstance(node, str) and has_lone_surrogate(node):
            raise ValidationError.single(
                pointer_of(path),
                "lone-surrogate",
                surrogate_words(node),
            )


def _schema_of_format(params: Mapping[str, Any], path: tuple[str | int, ...]) -> bool:
    """Whether ``path`` is in the schema of a ``json_schema`` response_format (``structured.py`` checks its depth, with
    its own room, and refuses it at ``/params/response_format/json_schema/schema``)."""
    if path[1:4] != ("response_format", "json_schema", "schema"):
        return False
    raw = params.get("response_format")
    return isinstance(raw, Mapping) and raw.get("type") == "json_schema" and isinstance(raw.get("json_schema"), Mapping)


def apply_params(
    ctx: Context,
    params: Mapping[str, Any],
    mapping: Mapping[str, str | None],
    target: dict[str, Any],
) -> None:
    """Copy generation parameters into ``target``: names in ``mapping`` are renamed (``None``: the
    provider takes no such parameter, reported and left out); other names pass through as they are. A value of
    ``None`` is not sent (as if not given). A parameter whose name is a key the formatter has already put in
    ``target`` (the conversation: ``messages``, ``system``, ``input``; ``tools``, ``stream``, ...) is refused
    (``ValidationError``, rule ``conflict``): a parameter never replaces what was built from the arguments, nor
    another parameter's value (two names of one field, ``max_tokens`` and ``max_output_tokens`` say)."""
    for key, value in params.items():
        if value is None:
            continue
        dest = mapping.get(key, key)
        if dest is None:
            ctx.report(f"/params/{key}", "param-dropped", f"{ctx.provider} takes no {key!r}; not sent")
            continue
        refuse_built(key, dest, target)
        target[dest] = value


def refuse_built(key: str, dest: str, target: Mapping[str, Any]) -> None:
    """A parameter ``key`` (sent as ``dest``) that would replace a key of the request already built: refused."""
    if dest in target:
        what = repr(dest) if dest == key else f"{dest!r} (where {key!r} goes)"
        raise ValidationError.single(
            f"/params/{key}",
            "conflict",
            f"the request already has {what}, from the conversation, another argument or parameter: not replaced",
        )


_MEDIA_OPTIONS: Final = {
    "image": ("min_pixels", "max_pixels"),
    "video": ("fps", "max_frames", "min_pixels", "max_pixels", "total_pixels"),
}
_WIRE_OPTION: Final = {
    "min_pixels": "minPixels",
    "max_pixels": "maxPixels",
    "max_frames": "maxFrames",
    "total_pixels": "totalPixels",
    "fps": "fps",
}


def media_options(block: Any, kept: tuple[str, ...], ctx: Context, pointer: str) -> None:
    """Report every sizing option of an image or video block that the provider does not take."""
    for name in _MEDIA_OPTIONS.get(block.type, ()):
        if name not in kept and getattr(block, name, None) is not None:
            wire = _WIRE_OPTION[name]
            ctx.report(
                f"{pointer}/{wire}", "media-option-dropped", f"{ctx.provider} takes no {wire} on {block.type} blocks"
            )


def name_not_sent(block: Any, ctx: Context, pointer: str) -> None:
    """A data block's ``name`` (a file name or label) that the part it becomes has no place for: said
    (``field-dropped``). A placeholder's text holds it, a document's title or file name too: not called there."""
    if type(block) is DataBlock and block.name:
        ctx.report(
            f"{pointer}/name",
            "field-dropped",
            f"{ctx.provider} has no place for the {block.type} block's name: not sent",
        )


# ---- multi-agent "history" layout -----------------------------------------------------------------


def is_history_message(msg: Msg, agent_name: str | None) -> bool:
    """In the ``history`` layout: a turn of another speaker (USER, or ASSISTANT not from the current
    agent) that holds no tool call or result, and is not marked ``_bypass_multiagent_history_merge``. Runs of these
    fold into one user turn."""
    if msg.metadata.get("_bypass_multiagent_history_merge") is True:
        return False  # kept out of the merge, as AgentScope Java's multi-agent formatter keeps it: a turn of its own
    role = msg.role.value
    if role == "USER":
        return True
    if role != "ASSISTANT" or (agent_name is not None and msg.name == agent_name):
        return False
    return not any(type(b) is ToolUseBlock or type(b) is ToolResultBlock for b in msg.content)


def history_parts(
    group: Sequence[tuple[int, Msg]],
    ctx: Context,
    first: bool,
    text_part: Callable[[str], Any],
    media_part: Callable[[Any, str], Any],
    hint: Callable[[Any, int, int], None],
) -> list[Any]:
    """The parts of one folded run of other speakers' turns: ``[prompt]<history>``, one line
    ``Name: text`` per text block, media in place (the text so far becomes a part before each),
    ``</history>``. The prompt is only in the first run. A message that adds no line and no media (reasoning or
    hints alone) is said left out (``empty-message-dropped``, as the prefix layout says it); a run where no message
    adds any gives no parts: no empty ``<history></history>`` turn is sent (AgentScope sends none either)."""
    lines: list[str] = [(ctx.options.history_prompt if first else "") + "<history>"]
    parts: list[Any] = []
    any_sent = False
    for i, msg in group:
        label = speaker_label(msg)
        blocks: list[Any] = msg.content
        sent = False
        for j, b in enumerate(blocks):
            t = type(b)
            if t is TextBlock:
                text = b.text
                lines.append(f"{label}: {text}")
                if "<" in text:  # (a scan for one character, fast; the tags only then)
                    _tag_in_text(ctx, text, label, i, j)
                if ": " in text:  # (the lines only then)
                    _speaker_lines(ctx, text, label, i, j, _HISTORY_NAMES, False)
                sent = True
            elif t in MEDIA:
                lines.append(f"{label}:")
                parts.append(text_part("\n".join(lines)))
                lines = []
                parts.append(media_part(b, f"/{i}/content/{j}"))
                sent = True
            elif t is HintBlock:
                hint(b, i, j)
            elif t is ThinkingBlock:
                if is_carrier(b.metadata):
                    carrier_dropped(ctx, b.metadata, (i, j), "it is another speaker's")
                else:
                    ctx.report(f"/{i}/content/{j}", "thinking-dropped", "reasoning of another speaker is not sent")
            else:
                ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in another speaker's turn")
        if sent:
            any_sent = True
            name = msg.name
            if name and name not in _HISTORY_NAMES.plain:
                _check_name(ctx, name, i, _HISTORY_NAMES)
        else:
            ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
    if not any_sent:
        return []
    lines.append("</history>")
    parts.append(text_part("\n".join(lines)))
    return parts


#: a history tag as a model reads it: ``<history>`` or ``</history>`` in any case, with whitespace (line breaks too)
#: anywhere inside its brackets (``</HISTORY>``, ``< /history >``, ``</history\n>``) and attributes as markup writes
#: them, ``name=value`` (the value quoted or not: ``<history id=1>``, ``</history id="x">``); not a longer word or a
#: tag with a bare word in it, which no markup reads as an attribute of the tag (``</historyx>``, ``<histories>``,
#: ``<history tags>``), nor the word alone
_HISTORY_TAG: Final = re.compile(
    r"<\s*(?:/\s*)?history(?:\s+[^\s\"'<>/=]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'<>=`]+))*\s*>", re.IGNORECASE
)
#: the line breaks of str.splitlines: in a speaker name, they start a line of the name's choosing
_LINE_BREAKS: Final = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


@attrs.frozen
class _NameRule:
    """What in a speaker name forges a line in one multi-agent layout: its diagnostic, the pattern of what forges
    (a line break, the end of a label, a tag), the end of the label (said), whether its tags count, and the plain
    names of recent calls (no ``forgers``: a name repeats on every message of its agent, and a set lookup costs less
    than the search; at most _MEMO_MAX, cleared when full)."""

    rule: str
    forgers: re.Pattern[str]
    label_end: str
    line: str
    tags: bool
    #: what a line of a speaker starts with before its name, and what follows the name (the text after it)
    opener: str
    closer: str
    plain: set[str] = attrs.field(factory=set, eq=False)


#: ``Name: text`` lines between ``<history>`` and ``</history>`` (history layout)
_HISTORY_NAMES: Final = _NameRule(
    "history-name-forges-line",
    re.compile(f"[{re.escape(_LINE_BREAKS)}]|: |{_HISTORY_TAG.pattern}", re.IGNORECASE),
    ": ",
    "<history> lines",
    True,
    "",
    ": ",
)
#: ``[Name]: text``, the first text of each other speaker's turn (prefix layout)
_PREFIX_NAMES: Final = _NameRule(
    "prefix-name-forges-line",
    re.compile(f"[{re.escape(_LINE_BREAKS)}]|\\]:"),
    "]:",
    "'[Name]: ' prefix",
    False,
    "[",
    "]: ",
)


def _tag_in_text(ctx: Context, text: str, label: str, i: int, j: int) -> None:
    """Another speaker's text holding a history tag (``history_parts``, where it holds a ``<``): sent as it is, as
    AgentScope Java sends it (the conformance vectors stay alike); said, ``history-tag-in-text``, so that a caller can
    tell a forged end of the history (prompt injection from another agent) from the real one."""
    found = dict.fromkeys(_HISTORY_TAG.findall(text))
    if found:
        ctx.report(
            (i, j),
            "history-tag-in-text",
            f"text of {label!r} holds {' and '.join(map(repr, found))}: sent as it is inside the <history> turn, where"
            " the model may read the history as ending there and the rest as outside it",
        )


def prefix_name(ctx: Context, msg: Msg, i: int) -> None:
    """The speaker name of a ``[Name]: `` prefix a walk sent (prefix layout, once per message): one holding a line
    break or ``]:`` is said, ``prefix-name-forges-line``; a text of the message holding a line that starts as
    another speaker's (``[moderator]: ``), ``speaker-line-in-text``."""
    name = msg.name
    if name and name not in _PREFIX_NAMES.plain:
        _check_name(ctx, name, i, _PREFIX_NAMES)
    first = True  # (the first text follows the prefix: its first line is the message's own)
    for j, b in enumerate(msg.content):
        if type(b) is TextBlock:
            if "]: " in b.text:  # (the lines only then)
                _speaker_lines(ctx, b.text, speaker_label(msg), i, j, _PREFIX_NAMES, not first)
            first = False


def _speaker_lines(ctx: Context, text: str, label: str, i: int, j: int, layout: _NameRule, first_line: bool) -> None:
    """Another speaker's text (``label``'s) holding a line that starts as a speaker of the conversation's line
    starts in ``layout`` (``moderator: `` on ``<history>`` lines, ``[moderator]: `` in the prefix layout; whitespace
    before it too): sent as it is (the history layout as AgentScope Java sends it), said, ``speaker-line-in-text``
    (info), naming the speakers it can be read as. Only the labels of the conversation's speakers count (a line
    ``Note: ...`` is ordinary text), not the text's own speaker; the first line only when ``first_line`` (a text
    that does not follow its speaker's label)."""
    opener, closer = layout.opener, layout.closer
    forged: dict[str, str] = {}  # speaker -> the start of its line the text holds
    for n, line in enumerate(text.splitlines()):
        if n == 0 and not first_line:
            continue
        line = line.lstrip(" \t")
        if not line.startswith(opener):
            continue
        head, sep, _ = line[len(opener) :].partition(closer)
        if sep and head != label and head not in forged and head in ctx.speakers:
            forged[head] = f"{opener}{head}{closer}"
    if forged:
        one = len(forged) == 1
        ctx.report(
            (i, j),
            "speaker-line-in-text",
            f"text of {label!r} holds {'a line' if one else 'lines'} starting {' and '.join(map(repr, forged.values()))},"
            f" as {'a line' if one else 'lines'} of {' and '.join(map(repr, forged))} {'starts' if one else 'start'}:"
            f" sent as it is, the model may read {'it' if one else 'them'} as that speaker's",
        )


def _check_name(ctx: Context, name: str, i: int, layout: _NameRule) -> None:
    """A speaker name whose lines in ``layout`` may read as another speaker's (or end the history): sent as it is
    (the history layout as AgentScope Java sends it), said (``layout.rule``, info); a plain one is remembered
    (``layout.plain``)."""
    if layout.forgers.search(name) is None:
        plain = layout.plain
        if len(plain) >= _MEMO_MAX:
            plain.clear()
        plain.add(name)
        return
    what = []
    if any(c in name for c in _LINE_BREAKS):
        what.append("a line break")
    if layout.label_end in name:
        what.append(repr(layout.label_end))
    if layout.tags:
        what += map(repr, dict.fromkeys(_HISTORY_TAG.findall(name)))
    ctx.report(
        f"/{i}/name",
        layout.rule,
        f"speaker name {name!r} holds {' and '.join(what)}: sent as it is in its {layout.line}, which may read as"
        " another speaker's" + (" (or end the history)" if layout.tags else ""),
    )


def require_turns(turns: list[Any], provider: str, *, system_beside: bool = False) -> None:
    """A request needs at least one message the provider takes in ``turns``: where the system prompt goes beside
    the messages (Anthropic, Gemini, the Responses API), a system prompt alone is no conversation; Chat Completions
    and DashScope hold it in their messages, and take a system message alone."""
    if not turns:
        raise ValidationError.single(
            "",
            "empty-conversation",
            f"nothing to send to {provider}: no message it can take"
            + (" (a system prompt alone is none: it goes beside the messages)" if system_beside else ""),
        )
