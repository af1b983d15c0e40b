"""What a formatter does with each field of the conversation it is given: the field table, and the pass that says
the fields a request does not carry.

Every field the schemas declare for a message, a block, a block's metadata or a media source has one
:class:`Handling` per provider (the provider's :class:`~agentmsg.providers.base.Spec` ``fields``; :data:`COMMON`
unless it says otherwise):

* ``sent``: in the request as given;
* ``mapped``: in the request in another shape or place; whatever that loses is said by the walk that decides it,
  with one of the rules listed;
* ``reported``: not in the request, said with the rules listed (by :func:`scan` when the first is
  ``field-dropped``; else by the walks where they decide, ``media-option-dropped`` say);
* ``not sent``: never in any request, by design: what describes a message rather than what was said (ids,
  timestamps, usage, lifecycle states, reasoning provenance) and free-form metadata. AgentScope keeps structured
  output and framework state in metadata precisely because it is never prompt text: said once, in
  docs/formatters.md, not once per message (every AgentScope message carries such keys).

A key the schema does not declare (kept on the decoded object in ``unknown_keys``: a newer producer's, or one a
reader keeps for want of a home, as AgentScope Python 2.x's ``created_at`` and ``finished_at``) is never sent:
:func:`scan` says each (``unknown-key-dropped``), on a message, a block (in a tool result's output too) and a media
source, once per key and place (the key ``x`` of any message, ``content/*/x`` of any block, ...): pointed at its
first occurrence, its text counting the messages or blocks that hold it and listing them (the first :data:`SHOWN`,
:data:`SHOWN_BLOCKS`), as ``name-dropped`` is said once; an AgentScope conversation holds such keys in every
message. A block field that is not in the table at all (one new in the schema) is said as ``field-dropped`` whenever
it holds a value other than its default, so a field the formatters do not know is never dropped in silence;
``tests/providers/shared/test_fields.py`` fails until the table names it, and docs/formatters.md's tables are
written from the table (:func:`docs_tables`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from agentmsg.blocks import BLOCK_CLASSES, ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.message import Msg

__all__ = ["COMMON", "MAPPED", "NOT_SENT", "REPORTED", "SENT", "Handling", "Quick", "checks", "field_table", "scan"]

SENT: Final = "sent"
MAPPED: Final = "mapped"
REPORTED: Final = "reported"
NOT_SENT: Final = "not sent"


@attrs.frozen
class Handling:
    """How a provider's formatter treats one field: ``how`` (sent, mapped, reported, not sent), the diagnostic
    ``rules`` it may say of it, and a ``note`` for people (docs/formatters.md)."""

    how: str = attrs.field(validator=attrs.validators.in_((SENT, MAPPED, REPORTED, NOT_SENT)))
    rules: tuple[str, ...] = ()
    note: str = ""


def sent(note: str = "") -> Handling:
    return Handling(SENT, (), note)


def mapped(*rules: str, note: str = "") -> Handling:
    return Handling(MAPPED, rules, note)


def reported(*rules: str, note: str = "") -> Handling:
    return Handling(REPORTED, rules or ("field-dropped",), note)


def not_sent(note: str = "") -> Handling:
    return Handling(NOT_SENT, (), note)


#: The objects the table covers: ``message``, each block type (its tag), and ``source`` (a media block's).
#: Fields are the JSON keys; a declared key of a metadata map is ``metadata.<key>``.
_MEDIA = ("media-unsupported",)
_KIND = mapped(note="chooses the part or message the block becomes")
_SOURCE_NOTE = "a URL is sent as a URL, inline data inline; local files and downloads as the media policy allows"
_FREE_METADATA = "free-form metadata: never prompt text (AgentScope keeps structured output and framework state here)"
_IDENTITY = "identity and bookkeeping of the message, not what was said"

COMMON: Final[dict[str, dict[str, Handling]]] = {
    "message": {
        "id": not_sent(_IDENTITY),
        "name": mapped(
            "name-sanitized", "name-dropped", note="the speaker's name field, or its text in multi-agent mode"
        ),
        "role": mapped("system-as-user", "system-hoisted", "turns-merged", note="the provider's role or turn"),
        "content": mapped(note="its blocks, each as the rows below say"),
        "metadata": not_sent(_FREE_METADATA + "; its declared keys too, unless their row says otherwise"),
        "timestamp": not_sent(_IDENTITY),
        "usage": not_sent("the reply's token usage, not what was said"),
        "metadata.agentscope_generate_reason": not_sent(),
        "metadata.agentscope_confirm_results": not_sent(),
        "metadata.agentscope_confirm_request_reply_id": not_sent(),
        "metadata.agentscope_external_execution_request_reply_id": not_sent(),
        "metadata.agentscope_synthetic": not_sent(),
        "metadata.agentscope_reminder_kind": not_sent(),
        "metadata._bypass_multiagent_history_merge": mapped(
            note="multi-agent history layout: the message is not folded into a <history> turn (as AgentScope Java)"
        ),
        "metadata._structured_output": not_sent("a reply's structured output: its text is what the model said"),
        "metadata._chat_usage": not_sent("the reply's token usage (AgentScope Java's legacy copy)"),
        "metadata._cache_control": reported(
            "cache-automatic", note="a prompt-cache marker: the provider caches prefixes on its own (said once)"
        ),
        "metadata.agentmsg_hitl": not_sent(),
        "metadata.agentmsg_finish_reason": not_sent(),
        "metadata.agentmsg_model": not_sent(),
        "metadata.agentmsg_stop_reason": not_sent(),
        "metadata.agentmsg_refusal": not_sent("a refusal's text is sent as the message's text"),
        "metadata.agentmsg_errors": not_sent(),
        "metadata.agentmsg_notes": not_sent(),
        "metadata.agentmsg_grounding": reported(
            "citations-dropped", note="a reply's citations and grounding: no provider takes them back; the text is sent"
        ),
        "metadata.agentmsg_reduce_errors": not_sent(),
    },
    "text": {
        "type": _KIND,
        "text": sent(),
    },
    "thinking": {
        "type": _KIND,
        "thinking": mapped(
            "thinking-dropped",
            "thinking-demoted",
            "thinking-pruned",
            "thinking-moved",
            note="the reasoning replay policy: the provider's own reasoning, where it takes it back",
        ),
        "metadata": not_sent("the declared keys below decide the replay; other keys are provider extras"),
        "metadata.signature": mapped("signature-dropped", note="byte for byte, to the provider that issued it"),
        "metadata.redacted": mapped("thinking-dropped", note="redacted reasoning, to the provider that issued it"),
        "metadata.redactedData": mapped("thinking-dropped", note="redacted reasoning, to the provider that issued it"),
        "metadata.provider": not_sent("provenance: decides the replay"),
        "metadata.model": not_sent("provenance"),
        "metadata.reasoningDetails": reported(note="OpenRouter's reasoning_details: no provider here takes them"),
        "metadata.providerBlock": reported(
            "provider-tool-dropped",
            "field-dropped",
            note="a tool the provider ran itself: this provider takes none back; of a Responses message item, its"
            " phase (field-dropped; its id and text are a message's, the text sent)",
        ),
        "metadata.citations": reported(
            "citations-dropped", note="the citations of the text before it: this provider takes none back"
        ),
    },
    "image": {
        "type": _KIND,
        "source": mapped(*_MEDIA, note=_SOURCE_NOTE),
        "minPixels": reported("media-option-dropped"),
        "maxPixels": reported("media-option-dropped"),
    },
    "audio": {
        "type": _KIND,
        "source": mapped(*_MEDIA, note=_SOURCE_NOTE),
    },
    "video": {
        "type": _KIND,
        "source": mapped(*_MEDIA, note=_SOURCE_NOTE),
        "fps": reported("media-option-dropped"),
        "maxFrames": reported("media-option-dropped"),
        "minPixels": reported("media-option-dropped"),
        "maxPixels": reported("media-option-dropped"),
        "totalPixels": reported("media-option-dropped"),
    },
    "data": {
        "type": _KIND,
        "source": mapped(*_MEDIA, note="routed by its MIME type; " + _SOURCE_NOTE),
        "id": not_sent("the block's identity (AgentScope Java mints one)"),
        "name": mapped("field-dropped", note="in a placeholder's text; otherwise not sent (field-dropped)"),
    },
    "tool_use": {
        "type": _KIND,
        "id": mapped("tool-id-mapped", note="the same id in the call and its result"),
        "name": mapped("tool-name-mapped", note="the same name in the call and the tool definition"),
        "input": mapped("tool-arguments-invalid", note="the arguments, as the provider takes them"),
        "content": mapped(
            "tool-arguments-invalid",
            "field-dropped",
            note="raw arguments: replayed byte for byte where the provider takes text and it is the JSON of input",
        ),
        "metadata": not_sent(_FREE_METADATA),
        "metadata.thoughtSignature": mapped("signature-dropped", note="to the provider that issued it"),
        "metadata.provider": not_sent("provenance of the call's signature"),
        "metadata.argumentsError": not_sent("agentmsg's note that the raw text could not be held: it is said then"),
        "state": not_sent("the call's lifecycle in the agent loop"),
    },
    "tool_result": {
        "type": _KIND,
        "id": mapped("tool-id-mapped", "tool-result-orphan", note="the id of the call it answers"),
        "name": not_sent(
            "the tool's name is the call's (an orphaned result's own name where the provider names results)"
        ),
        "output": mapped(
            "media-unsupported",
            "tool-result-media-fallback",
            "tool-result-media-reordered",
            "block-dropped",
            "empty-text-dropped",
            note="text, and media where the provider takes it in a result",
        ),
        "metadata": not_sent(_FREE_METADATA),
        "metadata.agentscope_suspended": not_sent("the agent loop's state"),
        "state": mapped("tool-result-state-dropped", note="error, denied and interrupted: the provider's error flag"),
    },
    "hint": {
        "type": _KIND,
        "id": not_sent("the hint's identity"),
        "hint": mapped("hint-placed", note="its own turn after the message (and its tool results)"),
        "source": reported(note="who sent the hint: the provider has no field for it"),
    },
    "source": {
        "type": mapped(note="a URL or inline data"),
        "url": mapped(*_MEDIA, note=_SOURCE_NOTE),
        "mime_type": mapped(note="routes the block; the part's MIME type where the provider has one"),
        "media_type": mapped(note="routes the block; the part's MIME type"),
        "data": mapped(*_MEDIA, note="inline, or as a data URL"),
    },
}


def field_table(overrides: Mapping[str, Handling] | None = None) -> dict[str, dict[str, Handling]]:
    """:data:`COMMON` with a provider's own entries (``{"image.minPixels": mapped(...)}``: object, a dot, field)."""
    out = {kind: dict(fields) for kind, fields in COMMON.items()}
    for key, handling in (overrides or {}).items():
        kind, _, name = key.partition(".")
        if kind not in out or name not in out[kind]:
            raise KeyError(f"{key!r}: no such field in the table (COMMON names every field the schemas declare)")
        out[kind][name] = handling
    return out


# ---- the pass: what a request does not carry ------------------------------------------------------


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


_BY_TAG: Final = dict(BLOCK_CLASSES)
_NOT_CHECKED: Final = ("type", "unknown_keys")


def _default(field: Any) -> Any:
    default = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return default.factory()
    return None if default is attrs.NOTHING else default


def _scanned(h: Handling) -> bool:
    """Whether :func:`scan` says a field of this handling whenever it is set: reported, ``field-dropped`` first (a
    row whose first rule is another's is said by the walk that decides, which may say ``field-dropped`` too)."""
    return h.how == REPORTED and h.rules[:1] == ("field-dropped",)


def _said_keys(fields: Mapping[str, Handling]) -> tuple[str, ...]:
    """The metadata keys a table's object says as ``field-dropped`` when set."""
    return tuple(
        name.removeprefix("metadata.") for name, h in fields.items() if name.startswith("metadata.") and _scanned(h)
    )


#: What :func:`scan` looks at on a block of one class: (attributes said when set: (name, JSON key, default); metadata
#: keys said when set; whether it has a media source; whether it holds blocks, a tool result's output)
_Check = tuple[tuple[tuple[str, str, Any], ...], frozenset[str], bool, bool]
_NOTHING: Final[_Check] = ((), frozenset(), False, False)  # (only its unknown keys: the common block)


@attrs.frozen
class Quick:
    """What a walk's usual paths look at, in the loop that sends the blocks, so that :func:`scan` need not look at
    their message again (``Walk.run`` hands it the others): a usual message is checked there, each of its blocks by
    the kind the walk already knows it is. Each look is the one :func:`scan` makes, or more (a hit is only a reason
    to look again in full: the diagnostics are :func:`scan`'s either way). ``message_keys``: the message metadata
    keys to look for; ``text`` / ``call``: a text or tool_use block has nothing to say but its unknown keys;
    ``image``: an image, its unknown keys and its source's; ``thinking``: the metadata keys to look for on a thinking
    block beside its unknown keys (None: always looked at again); ``result``: a tool result whose output is one text
    block, their unknown keys."""

    message_keys: frozenset[str] = frozenset()
    text: bool = False
    call: bool = False
    image: bool = False
    thinking: frozenset[str] | None = None
    result: bool = False


def _quick(blocks: Mapping[type, _Check], message_keys: frozenset[str]) -> Quick:
    def only_unknown(cls: type) -> bool:
        return blocks.get(cls, _NOTHING) is _NOTHING or blocks.get(cls) == _NOTHING

    thinking = blocks.get(ThinkingBlock, _NOTHING)
    return Quick(
        message_keys=message_keys,
        text=only_unknown(TextBlock),
        call=only_unknown(ToolUseBlock),
        image=only_unknown(ImageBlock) or blocks.get(ImageBlock) == ((), frozenset(), True, False),
        thinking=thinking[1] if not thinking[0] and not thinking[2] and not thinking[3] else None,
        result=only_unknown(TextBlock) and blocks.get(ToolResultBlock) == ((), frozenset(), False, True),
    )


#: the look of a walk that has no field table (a Context not made by run_format): every message goes to :func:`scan`
NEVER: Final = Quick()


class _Checks:
    """What :func:`scan` looks at for one provider's table: per block class, its :data:`_Check` (the block
    types the table does not know are left out: the walks say such a block whole); the message's metadata keys
    to say when set; and what the walks look at inline (:class:`Quick`)."""

    __slots__ = ("blocks", "message_keys", "message_set", "quick")

    def __init__(self, table: Mapping[str, Mapping[str, Handling]]) -> None:
        self.blocks: dict[type, _Check] = {}
        for tag, cls in _BY_TAG.items():
            fields = table.get(tag)
            if fields is None:  # a block type the formatters have no rule for: the walks say the whole block
                continue
            said: list[tuple[str, str, Any]] = []
            names = set()
            for f in attrs.fields(cls):
                names.add(f.name)
                if f.name in _NOT_CHECKED:
                    continue
                wire = f.metadata.get("wire", f.name)
                handling = fields.get(wire)
                if handling is None or _scanned(handling):
                    said.append((f.name, wire, _default(f)))
            keys = frozenset(_said_keys(fields))
            check = (tuple(said), keys, "source" in names and tag != "hint", cls is ToolResultBlock)
            self.blocks[cls] = _NOTHING if check == _NOTHING else check
        self.message_keys = _said_keys(table.get("message", {}))
        self.message_set = frozenset(self.message_keys)
        self.quick = _quick(self.blocks, self.message_set)


_CHECKS: dict[int, tuple[Mapping[str, Any], _Checks]] = {}


def checks(table: Mapping[str, Mapping[str, Handling]]) -> _Checks:
    found = _CHECKS.get(id(table))
    if found is None or found[0] is not table:
        found = _CHECKS[id(table)] = (table, _Checks(table))
    return found[1]


def scan(
    ctx: Any,
    messages: Sequence[Msg],
    table: Mapping[str, Mapping[str, Handling]],
    only: Iterable[int] | None = None,
) -> None:
    """Say (on ``ctx``) every field of ``messages`` the request does not carry that no walk says: keys the schema
    does not declare (``unknown-key-dropped``, once per key and place after the others: :class:`_Unknown`), and
    fields the table marks ``field-dropped`` or does not know (``field-dropped``), each with its pointer into the
    conversation. One look at each block: the common block,
    whose only check is its unknown keys, costs an attribute read; a message with anything to say is looked at
    again, in full (:func:`_message`). ``only``: the indexes of the messages to look at, in order (the walk looked
    at the others inline and found nothing to say: :class:`Quick`); default all."""
    found = checks(table)
    blocks = found.blocks
    message_keys = found.message_set
    nothing = _NOTHING
    unknown: _Unknown | None = None  # (made for the first message with something to say: the usual request has none)
    text_plain = blocks.get(TextBlock) is nothing  # a text block has nothing but its unknown keys to say
    for i in range(len(messages)) if only is None else only:
        msg = messages[i]
        if msg.unknown_keys or (message_keys and msg.metadata and not message_keys.isdisjoint(msg.metadata)):
            if unknown is None:
                unknown = _Unknown()
            _message(ctx, i, msg, found, unknown)
            continue
        content: list[Any] = msg.content
        for b in content:
            check = blocks.get(type(b))
            if check is nothing:  # the common block: only its unknown keys to look at
                if b.unknown_keys:
                    break
            elif check is not None:
                said, meta_keys, source, holds = check
                if (
                    b.unknown_keys
                    or said
                    or (source and b.source.unknown_keys)
                    or (meta_keys and b.metadata and not meta_keys.isdisjoint(b.metadata))
                ):
                    break
                if holds:  # a tool result: the usual output (one text block with nothing to say) is looked at inline
                    output = b.output
                    usual = text_plain and len(output) == 1 and type(output[0]) is TextBlock
                    if output[0].unknown_keys if usual else _output_news(output, blocks):
                        break
        else:
            continue
        if unknown is None:
            unknown = _Unknown()
        _message(ctx, i, msg, found, unknown)
    if unknown is not None:
        unknown.say(ctx)


def _message(ctx: Any, i: int, msg: Msg, checks: _Checks, unknown: _Unknown) -> None:
    """Say what :func:`scan` says of message ``i`` (its unknown keys to ``unknown``, said at the end)."""
    blocks = checks.blocks
    if msg.unknown_keys:
        unknown.add(f"/{i}", "", msg.unknown_keys, "")
    if checks.message_keys:
        meta = msg.metadata
        if meta:
            for key in checks.message_keys:
                if _set(meta.get(key)):
                    _dropped(ctx, f"/{i}/metadata/{_esc(key)}", key, "message metadata")
    content: list[Any] = msg.content
    for j, b in enumerate(content):
        check = blocks.get(type(b))
        if check is _NOTHING:
            if b.unknown_keys:
                _block(ctx, b, f"/{i}/content/{j}", "/content/*", check, blocks, unknown)
        elif check is not None:
            said, meta_keys, source, holds = check
            if (
                b.unknown_keys
                or said
                or (source and b.source.unknown_keys)
                or (meta_keys and b.metadata and not meta_keys.isdisjoint(b.metadata))
                or (holds and _output_news(b.output, blocks))
            ):
                _block(ctx, b, f"/{i}/content/{j}", "/content/*", check, blocks, unknown)


def _output_news(output: list[Any], blocks: Mapping[type, _Check]) -> bool:
    """Whether a tool result's output holds a block :func:`_block` has something to say of."""
    for inner in output:
        inner_check = blocks.get(type(inner))
        if inner_check is not None and (inner_check is not _NOTHING or inner.unknown_keys):
            return True
    return False


def _block(
    ctx: Any,
    b: Any,
    pointer: str,
    place: str,
    check: _Check,
    blocks: Mapping[type, _Check],
    unknown: _Unknown,
) -> None:
    """Say what :func:`scan` says of block ``b`` at ``pointer``; ``place``: its pointer's pattern, the message's index
    left out (``/content/*``, ``/content/*/output/*``)."""
    said, meta_keys, source, holds = check
    if b.unknown_keys:
        unknown.add(pointer, place, b.unknown_keys, b.type)
    if source and b.source.unknown_keys:
        unknown.add(f"{pointer}/source", f"{place}/source", b.source.unknown_keys, b.type)
    for name, wire, default in said:
        value = getattr(b, name)
        if value is not None and value != default:
            _dropped(ctx, f"{pointer}/{_esc(wire)}", wire, f"{b.type} block")
    if meta_keys:
        meta = b.metadata
        if meta:
            for key in sorted(meta_keys):
                if _set(meta.get(key)):
                    _dropped(ctx, f"{pointer}/metadata/{_esc(key)}", key, f"{b.type} block's metadata")
    if holds:
        for k, inner in enumerate(b.output):
            inner_check = blocks.get(type(inner))
            if inner_check is not None and (inner_check is not _NOTHING or inner.unknown_keys):
                _block(ctx, inner, f"{pointer}/output/{k}", f"{place}/output/*", inner_check, blocks, unknown)


def _set(value: Any) -> bool:
    return value is not None and value is not False and value != [] and value != {}


#: how many of the messages holding an unknown key its diagnostic lists (as ``name-dropped``'s), and of the blocks
#: or sources (their pointers are longer: a diagnostic's text is cut past ``errors.MESSAGE_MAX`` characters)
SHOWN: Final = 20
SHOWN_BLOCKS: Final = 10


class _Unknown:
    """The unknown keys :func:`scan` found, grouped by key and place (``x`` of a message, ``content/*/x`` of a
    block, ``content/*/source/x`` of a block's media source, ``content/*/output/*/x`` in a tool result): each group
    is said once (:meth:`say`), pointed at its first occurrence, with how many hold the key and the first
    :data:`SHOWN` of them in its text, every one in its ``other_pointers``. Memory: a pointer per occurrence."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        #: (place, key) -> [the pointers of the objects that hold it, the block types (in the order met)]
        self.groups: dict[tuple[str, str], tuple[list[str], dict[str, None]]] = {}

    def add(self, pointer: str, place: str, keys: Mapping[str, Any], block_type: str) -> None:
        """The ``keys`` of the object at ``pointer`` (``place``: its pattern; ``block_type``: "" for a message)."""
        groups = self.groups
        for key in keys:
            group = groups.get((place, key))
            if group is None:
                groups[(place, key)] = ([pointer], {block_type: None})
                continue
            group[0].append(pointer)
            group[1][block_type] = None

    def say(self, ctx: Any) -> None:
        for (place, key), (pointers, types) in self.groups.items():
            k = _esc(key)
            shown = pointers[: SHOWN if not place else SHOWN_BLOCKS]
            text = _unknown_text(ctx.provider, place, key, len(pointers), shown, types)
            if len(pointers) == 1:
                ctx.report(f"{pointers[0]}/{k}", "unknown-key-dropped", text)
            else:
                others = [f"{p}/{k}" for p in pointers[1:]]
                ctx.diagnostics.append((f"{pointers[0]}/{k}", "unknown-key-dropped", text, others))


def _unknown_text(provider: str, place: str, key: str, count: int, shown: list[str], types: Mapping[str, None]) -> str:
    names = list(types)
    kinds = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    if not place:
        what, many = "a message key", "messages"
        listed = ["messages " + ", ".join(p.lstrip("/") for p in shown)]
    elif place.endswith("/source"):
        what, many = f"a key of the media source of {kinds} blocks", "media sources"
        listed = shown
    else:
        what, many = f"a key of {kinds} blocks", "blocks"
        listed = shown
    pattern = f"{place}/{_esc(key)}".lstrip("/")
    text = f"{key!r}, {what} (`{pattern}`), is not in the schema: not sent to {provider}"
    if count == 1:
        return text
    more = ", ..." if count > len(shown) else ""
    return f"{text}, on {count} {many} ({', '.join(listed)}{more}; the first is pointed at)"


def _dropped(ctx: Any, pointer: str, field: str, what: str) -> None:
    ctx.report(pointer, "field-dropped", f"{ctx.provider} has no place for the {what}'s {field!r}: not sent")


# ---- docs/formatters.md's tables ----------------------------------------------------------------------

#: The objects in the order docs/formatters.md lists them, with their headings
_TITLES: Final = {
    "message": "Message (`Msg`)",
    "text": "`text` block",
    "thinking": "`thinking` block",
    "image": "`image` block",
    "audio": "`audio` block",
    "video": "`video` block",
    "data": "`data` block",
    "tool_use": "`tool_use` block",
    "tool_result": "`tool_result` block",
    "hint": "`hint` block",
    "source": "media source (`source` of a media block)",
}


def _cell(h: Handling) -> str:
    rules = ", ".join(f"`{r}`" for r in h.rules)
    return f"{h.how} ({rules})" if rules else h.how


def markdown(tables: Mapping[str, Mapping[str, Mapping[str, Handling]]]) -> str:
    """The field tables of docs/formatters.md ("Fields: what each provider sends"), one per object, a column per
    provider (``tables``: registry name -> field table), each with the notes of its rows."""
    names = list(tables)
    out: list[str] = []
    for kind, title in _TITLES.items():
        out.append(f"### {title}\n")
        out.append("| field | " + " | ".join(f"`{n}`" for n in names) + " |")
        out.append("|---" * (len(names) + 1) + "|")
        notes: list[str] = []
        for field in sorted(COMMON[kind], key=lambda f: (f.startswith("metadata."), f != "type", f)):
            row = [tables[n][kind][field] for n in names]
            out.append(f"| `{field}` | " + " | ".join(_cell(h) for h in row) + " |")
            by_note: dict[str, list[str]] = {}
            for n, h in zip(names, row, strict=True):
                if h.note:
                    by_note.setdefault(h.note, []).append(n)
            for note, who in by_note.items():
                whom = "" if len(who) == len(names) else " (" + ", ".join(who) + ")"
                notes.append(f"- `{field}`{whom}: {note}")
        out.append("")
        out.extend(notes)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def docs_tables() -> str:
    """The field tables of every registered provider, as docs/formatters.md shows them (its test compares):
    ``python -c 'from agentmsg.providers._request.fields import docs_tables; print(docs_tables(), end="")'``."""
    from agentmsg.providers import NAMES, get

    return markdown({n: get(n).spec.fields or COMMON for n in NAMES})
