"""The message API: :class:`Msg` and its role-pinned subclasses.

The fields come from the generated model (``agentmsg_models.msg.Msg``); this layer adds what the
schema cannot say: constructors that fill in id and timestamp and normalise what they are given (see
:mod:`agentmsg.blocks`), role rules at construction, JSON/dict codecs that validate, and accessors.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import re
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, cast, overload

import attrs
import cattrs
import orjson

from agentmsg import blocks as _b
from agentmsg._codec import legacy
from agentmsg._codec.converter import (
    Codec,
    IntegerBeyond,
    StructureFn,
    WrongValue,
    _tag_of,
    beyond_error,
    check_shared_size,
    dict_of,
    dumps_json,
    guard_field,
    prepare_json,
    reachable_models,
    surely_writes,
    unstructure_hooks,
    validate_object,
)
from agentmsg._codec.jsontext import JsonInput, as_given, check_json_value, json_value_copy, loads
from agentmsg._codec.lazy import Once
from agentmsg._codec.limits import limits
from agentmsg._codec.schemas import has_unknown_keys, validate, validator_for_kind
from agentmsg._codec.timestamps import now_timestamp, parse_timestamp
from agentmsg._codec.unknown import normalise_unknown_keys
from agentmsg.blocks import (
    BLOCK_CLASSES,
    SDK_CLASS_OF,
    ContentBlock,
    TextBlock,
    as_blocks,
    as_mapping,
    holds_a_block_twice,
    lenient_warning,
)
from agentmsg.errors import Problem, ValidationError, short_repr, wrong_type
from agentmsg_models import msg as _msg_mod
from agentmsg_models.chat_usage import ChatUsage
from agentmsg_models.generate_reason import GenerateReason

if TYPE_CHECKING:
    from agentmsg._codec.fastpath import FastPath

__all__ = [
    "MESSAGE_CLASSES",
    "AssistantMessage",
    "Msg",
    "MsgRole",
    "SystemMessage",
    "ToolResultMessage",
    "UserMessage",
    "new_id",
]

MsgRole = _msg_mod.MsgRole

B = TypeVar("B")
M = TypeVar("M", bound="Msg")
T = TypeVar("T")

METADATA_GENERATE_REASON = "agentscope_generate_reason"
METADATA_STRUCTURED_OUTPUT = "_structured_output"
METADATA_CHAT_USAGE = "_chat_usage"
#: The keys AgentScope Java 2.0.0's ChatUsage writes (it drops any other usage key when it writes a message).
JAVA_USAGE_KEYS = frozenset({"inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens"})
#: The counts a usage and its metadata copy must agree on for the copy to restore the usage (what Java keeps as it
#: read it; it recomputes totalTokens and writes a count it was not given as 0).
_USAGE_AGREEMENT = ("inputTokens", "outputTokens", "cachedTokens", "time")

_BLOCK_BY_NAME: dict[str, type] = {c.__name__: c for c in BLOCK_CLASSES.values()}
_ROLES = ", ".join(repr(r.value) for r in MsgRole)


def new_id() -> str:
    """A new message id: a random UUID, 36 characters with dashes (as AgentScope Java)."""
    return str(uuid.uuid4())


def _block_type(kind: type[B] | str) -> type[B]:
    """The block class ``blocks`` and ``first_block`` look for (or what ``isinstance`` takes as one: a tuple or a
    union of classes): a ValidationError (a ValueError) at ``/kind`` for a type tag nothing has (rule ``enum``) and
    for what is none of those nor a string (rule ``type``)."""
    if isinstance(kind, str):
        found = BLOCK_CLASSES.get(kind) or _BLOCK_BY_NAME.get(kind)
        if found is None:
            raise ValidationError.single(
                "/kind", "enum", f"unknown block type {kind!r}; known: {', '.join(BLOCK_CLASSES)}"
            )
        return cast("type[B]", found)
    try:  # (a class, or what isinstance takes as well: a tuple of classes, a union ``TextBlock | ImageBlock``)
        isinstance(None, kind)
    except TypeError:
        raise wrong_type(
            "/kind", "kind is a block class (or a tuple or union of them) or a block type tag", kind
        ) from None
    return kind


def _role(role: Any) -> MsgRole:
    """The role given to a constructor: a :class:`MsgRole` or its exact (uppercase) wire value."""
    if isinstance(role, MsgRole):
        return role
    if isinstance(role, str):
        try:
            return MsgRole(role)
        except ValueError:
            hint = f"; roles are uppercase: use {role.upper()!r}" if role.upper() in MsgRole.__members__ else ""
            raise ValidationError.single(
                "/role", "enum", f"unknown role {role!r}{hint} (one of {_ROLES})", "msg"
            ) from None
    raise ValidationError.single(
        "/role", "type", f"a role is a string (one of {_ROLES}), got {type(role).__name__}", "msg"
    )


def member_roles(messages: Sequence[Msg]) -> Sequence[Msg]:
    """``messages`` with every role a :class:`MsgRole` member, for code that tells roles apart by identity (``role is
    MsgRole.USER``: the formatters' walks, counting, trimming), which a role set to a plain string after construction
    (``msg.role = "USER"``) would match none of (the formatters sent such a user message as a system message). Such
    a message is given as a shallow copy holding the member (the caller's message is left as it is); the others are
    the same objects, and ``messages`` itself when every role is a member. A role that is no role's value raises
    :class:`~agentmsg.ValidationError` (pointer ``/<index>/role``, rule ``enum`` or ``type``), and so does what is no
    sequence of messages (rule ``type``)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValidationError.single("", "type", f"expected a sequence of Msg, got {type(messages).__name__}")
    if all(isinstance(m, Msg) and type(m.role) is MsgRole for m in messages):
        return messages
    out = list(messages)
    for i, m in enumerate(out):
        if not isinstance(m, Msg):
            raise ValidationError.single(f"/{i}", "type", f"expected a Msg, got {type(m).__name__}")
        if type(m.role) is not MsgRole:
            try:
                role = _role(m.role)
            except ValidationError as error:
                raise ValidationError.single(f"/{i}/role", error.problems[0].rule, error.problems[0].message) from None
            same = copy.copy(m)
            same.role = role
            out[i] = same
    return out


_OWN_BLOCKS = _b._SDK_CLASSES  # (the block classes constructors make)


def _own_block(b: Any) -> bool:
    """Whether ``b`` is a block of one of agentmsg's own classes, and so is every block of a tool result's output."""
    t = type(b)
    return t in _OWN_BLOCKS and (t is not _b.ToolResultBlock or all(type(o) in _OWN_BLOCKS for o in b.output))


def member_blocks(messages: Sequence[Msg]) -> Sequence[Msg]:
    """``messages`` with every block of one of agentmsg's own classes, for code that tells blocks apart by class
    (``type(b) is TextBlock``: the formatters' walks), which a block of a caller's subclass appended after
    construction (``msg.content.append(MyText(text=...))``; constructors convert such blocks) would match none of
    (the formatters dropped it, or failed with an AttributeError). Such a message is given as a shallow copy whose
    blocks are converted as a constructor converts them, a tool result's output too (the caller's message is left
    as it is); the others are the same objects, and ``messages`` itself when no block needs it. What is no block
    is left as it is (the caller says so)."""
    out: list[Msg] | None = None
    for i, m in enumerate(messages):
        content = m.content
        if all(map(_own_block, content)):
            continue
        converted = [
            b if _own_block(b) or not isinstance(b, _b._GENERATED_BLOCKS) else _b.block_from_dict(_b.block_to_dict(b))
            for b in content
        ]
        if out is None:
            out = list(messages)
        same = copy.copy(m)
        same.content = converted
        out[i] = same
    return messages if out is None else out


def members(messages: Sequence[Msg]) -> Sequence[Msg]:
    """:func:`member_roles`, then :func:`member_blocks`: what code that tells roles and blocks apart by identity reads
    (counting, trimming, cache markers; the formatters check their messages themselves). A list of Msg (the class
    itself) that the C writer's check (``surely_writes``) passes needs neither, and is given as it is at once: that
    check passes only roles that are MsgRole members and blocks of agentmsg's own classes (and no Msg subclass), so
    member_roles' own pass over the roles is not made before it."""
    if type(messages) is list and set(map(type, messages)) <= {Msg} and surely_writes(messages):
        return messages
    out = member_roles(messages)
    # What to_json would refuse is refused as the formatters refuse it (check_messages): a text set to None raised a
    # bare TypeError out of count_tokens, and a NaN was counted. The C writer's check tells it of the whole list
    # (UserMessage and the other subclasses too) without writing it.
    if not surely_writes(out if type(out) is list else list(out)):
        refuse_unwritable(out)
    return member_blocks(out)


def refuse_unwritable(messages: Sequence[Msg]) -> None:
    """Raise what ``to_json`` would refuse of any of ``messages`` (a field changed after construction to what its
    schema does not allow, NaN in a tool's input), under the message's index, for a list the C writer's check gave
    no verdict on as a whole (often its size: strings counted 6 bytes a character): that check of each message, and
    each it gives none on written until the first refusal (20 messages of 4 MiB images were written whole)."""
    for i, m in enumerate(messages):
        if surely_writes(m):
            continue
        try:
            dumps_json(m, "msg")
        except ValidationError as error:
            raise type(error)([attrs.evolve(p, pointer=f"/{i}{p.pointer}") for p in error.problems], None) from None


#: ChatUsage's attribute names that are not its JSON keys (``input_tokens`` / ``inputTokens``, ...)
_USAGE_ATTRIBUTES: dict[str, str] = {
    f.name: f.metadata["wire"] for f in attrs.fields(ChatUsage) if f.metadata.get("wire", f.name) != f.name
}


def _usage(value: Any, given: bool = False) -> ChatUsage | None:
    """A usage as a constructor takes it (``given``) or as read from metadata. A dict holds JSON keys; one
    given to a constructor with an attribute's name in place of its key (``input_tokens``) would be kept as
    an unknown key, the count lost in silence: refused, naming the key (rule ``wire-name``)."""
    if value is None:
        return None
    if isinstance(value, ChatUsage):
        try:
            extra = normalise_unknown_keys(value.unknown_keys, ChatUsage, "msg")
        except ValidationError as exc:
            raise exc.under("/usage", "msg") from None
        same = extra == value.unknown_keys and (extra is None or type(value.unknown_keys) is dict)
        return value if same else attrs.evolve(value, unknown_keys=extra)
    if isinstance(value, Mapping):
        if type(value) is not dict:  # (a mappingproxy, a UserDict: read as its dict)
            value = dict(value)
        for key in value if given else ():
            wire = _USAGE_ATTRIBUTES.get(key) if isinstance(key, str) else None
            if wire is not None:
                raise ValidationError.single(
                    f"/usage/{key}",
                    "wire-name",
                    f"{key!r} is ChatUsage's attribute; a usage dict has the JSON keys: {wire!r} "
                    f"(or pass ChatUsage({key}=...))",
                    "msg",
                )
        try:
            validate(value, "chat-usage")
            return cast(ChatUsage, _decoding().structure_usage(value))
        except IntegerBeyond as exc:
            again = functools.partial(_decoding().structure_usage, value)
            raise beyond_error(value, exc, "chat-usage", again).under("/usage", "msg") from None
        except ValidationError as exc:
            raise exc.under("/usage", "msg") from None
    raise ValidationError.single(
        "/usage", "type", f"expected a ChatUsage or a dict of usage, got {type(value).__name__}", "msg"
    )


def _with_usage_copy(metadata: dict[str, Any], usage: ChatUsage) -> tuple[dict[str, Any], ChatUsage]:
    """A constructor's ``(metadata, usage)``: the usage completed from its metadata copy ``_chat_usage``
    (:func:`_restored`), and that copy set to the whole usage when the usage holds a key AgentScope Java 2.0.0's
    ChatUsage lacks (``cacheCreationInputTokens``, ``reasoningTokens``, an unknown key). Java drops such a key from
    ``usage`` when it writes the message but keeps metadata maps whole, so the copy carries it through Java and the
    readers put it back (docs/wire-format.md)."""
    try:  # (a ChatUsage given with a count of the wrong type: said where, not the writer hook's bare WrongValue)
        wire: dict[str, Any] = dict_of(usage, "chat-usage", copy=False)
    except ValidationError as exc:
        raise exc.under("/usage", "msg") from None
    copy = metadata.get(METADATA_CHAT_USAGE)
    restored = _restored(wire, copy) if type(copy) is dict else None
    if restored is not None:
        wire = restored
        usage = cast(ChatUsage, _decoding().structure_usage(wire))
    if JAVA_USAGE_KEYS.issuperset(wire) or copy == wire:
        return metadata, usage
    return {**metadata, METADATA_CHAT_USAGE: wire}, usage


def _restored(wire: dict[str, Any], copy: dict[str, Any]) -> dict[str, Any] | None:
    """The usage ``wire`` (JSON) with the keys of its copy ``copy`` that a trip through AgentScope Java 2.0.0 drops
    (any but Java's ChatUsage keys) and ``wire`` lacks, or None when there are none or ``copy`` is no copy of this
    usage (a count both hold, ``inputTokens``, ``outputTokens``, ``cachedTokens`` or ``time``, differs)."""
    missing = {k: v for k, v in copy.items() if k not in wire and k not in JAVA_USAGE_KEYS}
    if not missing:
        return None
    for key in _USAGE_AGREEMENT:
        if key in wire and key in copy and wire[key] != copy[key]:
            return None
    return {**wire, **missing}


def _without_usage_copy(metadata: Any, usage: ChatUsage) -> Any:
    """``metadata`` without its ``_chat_usage`` when that is a copy of ``usage`` (as the constructors or a trip
    through Java left it: each key it holds beyond Java's is in ``usage`` with its value, and the counts both hold,
    ``inputTokens``, ``outputTokens``, ``cachedTokens`` and ``time``, agree); otherwise ``metadata`` as it is."""
    copy = metadata.get(METADATA_CHAT_USAGE) if isinstance(metadata, Mapping) else None
    if type(copy) is not dict:
        return metadata
    wire = unstructure_hooks[ChatUsage](usage)
    for key, value in copy.items():
        if (key not in JAVA_USAGE_KEYS or key in _USAGE_AGREEMENT) and key in wire and wire[key] != value:
            return metadata
        if key not in JAVA_USAGE_KEYS and key not in wire:
            return metadata
    return {k: v for k, v in metadata.items() if k != METADATA_CHAT_USAGE}


def restore_usage(msg: _msg_mod.Msg) -> None:
    """Put back into ``msg.usage`` what a trip through AgentScope Java 2.0.0 dropped from it: the keys of its
    metadata copy ``_chat_usage`` that Java's ChatUsage lacks (Java writes only its own keys, and keeps metadata
    maps whole), when the copy is a copy of this usage (the counts both hold agree). Otherwise nothing changes."""
    usage = msg.usage
    copy = msg.metadata.get(METADATA_CHAT_USAGE) if usage is not None else None
    if type(copy) is not dict:
        return
    restored = _restored(unstructure_hooks[ChatUsage](usage), copy)
    if restored is not None:
        structure = functools.partial(_decoding().structure_usage, restored)
        try:  # (through the slot: what was read is kept as read, its copy too)
            _USAGE_SLOT.__set__(msg, cast(ChatUsage, structure()))
        except IntegerBeyond as exc:  # a count of the copy (which the schema does not bound): said where it is
            raise beyond_error({"metadata": msg.metadata}, exc, "msg", structure) from None


#: The usage's slot, under the property that keeps its metadata copy (:func:`_keep_usage_copy`).
_USAGE_SLOT: Any = _msg_mod.Msg.__dict__["usage"]

_REASONS = ", ".join(repr(g.value) for g in GenerateReason)


def _with_reason(metadata: dict[str, Any], reason: Any, replace: bool) -> dict[str, Any]:
    """``metadata`` with the generate reason a constructor (or :meth:`Msg.copy`) was given, where AgentScope Java
    keeps it (its builders' ``generateReason(...)``): metadata ``agentscope_generate_reason``, the enum's name.
    A reason that is none of :class:`GenerateReason` is refused at that pointer (``enum``, ``type``); one that
    differs from the metadata's own is refused too (``conflict``), unless ``replace`` (a copy changes it)."""
    pointer = f"/metadata/{METADATA_GENERATE_REASON}"
    if isinstance(reason, GenerateReason):
        value = reason.value
    elif isinstance(reason, str):
        try:
            value = GenerateReason(reason).value
        except ValueError:
            hint = (
                f"; the names are uppercase: use {reason.upper()!r}"
                if reason.upper() in GenerateReason.__members__
                else ""
            )
            raise ValidationError.single(
                pointer, "enum", f"generate_reason {reason!r} is not a GenerateReason{hint} (one of {_REASONS})", "msg"
            ) from None
    else:
        raise ValidationError.single(
            pointer, "type", f"generate_reason is a GenerateReason (or its name), got {type(reason).__name__}", "msg"
        )
    given = metadata.get(METADATA_GENERATE_REASON)
    if given is not None and given != value and not replace:
        raise ValidationError.single(
            pointer,
            "conflict",
            f"generate_reason={value} and the metadata's {METADATA_GENERATE_REASON} {given!r} differ: give one",
            "msg",
        )
    metadata[METADATA_GENERATE_REASON] = value
    return metadata


_FIELD_NAMES = tuple(a.name for a in attrs.fields(_msg_mod.Msg))
_WIRE_FIELD_NAMES = tuple(a.name for a in attrs.fields(_msg_mod.Msg) if not a.metadata.get("unknown_keys"))


@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False)
class Msg(_msg_mod.Msg):
    """One conversation turn. Fields (from the schema): ``id``, ``name``, ``role``, ``content``,
    ``metadata``, ``timestamp``, ``usage``, and ``unknown_keys`` (keys the schema does not declare, from a
    newer producer: kept as read and written back after the others; None when there are none).

    ``Msg("USER", "hello", name="alice")`` builds a message: a plain string becomes a text block, the
    id (random UUID) and timestamp (now, UTC, Java form) are filled in, and the whole message is
    validated against the schema, role rules included (:class:`~agentmsg.ValidationError`).
    ``generate_reason=GenerateReason.MAX_ITERATIONS`` (or its name) sets why the reply ended where AgentScope
    Java's builders put it: metadata ``agentscope_generate_reason`` (read back by :attr:`generate_reason`).
    Decoding (:meth:`from_json`, :meth:`from_dict`) validates, then returns the role-pinned subclass
    (:class:`UserMessage`, :class:`AssistantMessage`, ...), as AgentScope Java does.

    Roles are uppercase, on the wire and here: ``"USER"`` or ``MsgRole.USER`` (``"user"`` is rejected with a
    hint, as Java rejects it). Messages are mutable slotted attrs classes (mutation is fast but bypasses
    validation: ``agentmsg.validate(msg.to_dict())`` checks again; setting ``usage`` keeps its metadata copy
    ``_chat_usage`` in step, as :meth:`copy` does, docs/wire-format.md); :meth:`copy` returns a changed, validated
    copy.

    Reading (:meth:`from_json`, :meth:`from_dict`) accepts keys the schema does not declare, at every level,
    keeps them in each object's ``unknown_keys`` and writes them back; :func:`agentmsg.find_unknown_keys`
    lists them; ``strict=True`` rejects them instead (docs/wire-format.md).
    """

    _pinned_role: ClassVar[MsgRole | None] = None

    def __init__(
        self,
        role: MsgRole | str | None = None,
        content: str
        | ContentBlock
        | Mapping[str, Any]
        | Sequence[ContentBlock | str | Mapping[str, Any]]
        | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
        usage: ChatUsage | Mapping[str, Any] | None = None,
        unknown_keys: Mapping[str, Any] | None = None,
        generate_reason: GenerateReason | str | None = None,
    ) -> None:
        pinned = type(self)._pinned_role
        if role is None:
            if pinned is None:
                raise ValidationError.single("/role", "required", f"a role is required (one of {_ROLES})", "msg")
            role = pinned
        role_value = _role(role)
        if pinned is not None and role_value is not pinned:
            raise ValidationError.single(
                "/role", "const", f"{type(self).__name__} has role {pinned.value}, got {role_value.value}", "msg"
            )
        usage_value = _usage(usage, given=True)
        meta = as_mapping(metadata, "/metadata", False, "msg")
        if generate_reason is not None:
            meta = _with_reason(meta, generate_reason, replace=False)
        if usage_value is not None:
            meta, usage_value = _with_usage_copy(meta, usage_value)
        self.__attrs_init__(
            id=new_id() if id is None else id,
            name=name,
            role=role_value,
            content=as_blocks(content, "/content", "msg"),
            metadata=meta,
            timestamp=now_timestamp() if timestamp is None else timestamp,
            usage=usage_value,
            unknown_keys=normalise_unknown_keys(unknown_keys, _msg_mod.Msg, "msg"),
        )
        validate_object(self, "msg", holds_a_block_twice(self.content))

    def __eq__(self, other: object) -> bool:
        """Field-wise equality: ``Msg("USER", ...)`` equals the ``UserMessage`` decoded from its JSON."""
        if not isinstance(other, _msg_mod.Msg):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELD_NAMES)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None

    # ---- codecs -------------------------------------------------------------------------------

    @classmethod
    def from_json(
        cls: type[M],
        data: JsonInput,
        *,
        strict: bool = False,
        lenient: bool | None = None,
        notes: list[Problem] | None = None,
    ) -> M:
        """Decode and validate one message from JSON text (str or bytes).

        Raises :class:`~agentmsg.ValidationError` for malformed JSON, schema or role violations, or
        input beyond :data:`agentmsg.limits` (UTF-8 bytes, nesting depth), or values that could not be
        written back (integers beyond 64 bits, lone surrogates). Keys the schema does not declare (a newer
        producer's) are kept in ``unknown_keys`` and written back; ``strict=True`` rejects them instead.
        Legacy keys (AgentScope's seed documents: a tool_use ``arguments``, a tool_result ``result`` or
        ``toolUseId``) are read in their current form, each with a note (:class:`~agentmsg.Problem`, rule
        ``legacy-key``): appended to ``notes`` when given, else issued as one :class:`~agentmsg.LegacyKeyWarning`;
        ``strict=True`` refuses them (docs/wire-format.md). ``lenient`` is deprecated: unknown keys are no
        longer an error, so it changes nothing."""
        if lenient is not None:
            lenient_warning()
        if notes is not None:
            legacy.check_notes(notes, "msg")
        # Fast path: a msgspec typed decode against types derived from the closed schema, converted
        # straight into the models (agentmsg._codec.fastpath). Anything it does not accept, for whatever reason,
        # takes the detailed path below, which decides and reports exactly.
        fast = _fast_path.value if _fast_path.done else _fast_path()  # (built: no call on the hot path)
        if fast is not None:
            msg = cls._fast_result(fast.decode(data))
            if msg is not None:
                return msg
        return cls._from_parsed(loads(data, "msg"), strict, checked=True, notes=notes, stacklevel=3)

    @classmethod
    def _from_json_value(cls: type[M], data: Any, restore: bool = True) -> M | None:
        """The message of ``data``, parsed JSON that can be written back (the caller has made sure: no lone
        surrogate, no integer beyond 64 bits, nothing but JSON values), through the decode fast path's typed
        checks without writing it as text (its strings are the message's own: a long reply's text is held
        once); None when the fast path does not take it (then :meth:`_from_parsed` decides and says why).
        ``restore=False``: the caller knows :func:`restore_usage` has nothing to do (a reducer's message)."""
        fast = _fast_path.value if _fast_path.done else _fast_path()
        return None if fast is None else cls._fast_result(fast.convert(data), restore)

    @classmethod
    def _fast_result(cls: type[M], msg: Any, restore: bool = True) -> M | None:
        """What the fast path built (None: it did not take the input), if it is a ``cls``, its usage restored
        (unless not ``restore``)."""
        if msg is None or not (cls is Msg or isinstance(msg, cls)):
            return None
        if restore and msg.usage is not None:
            restore_usage(msg)
        return msg  # type: ignore[no-any-return]

    @classmethod
    def from_dict(
        cls: type[M],
        data: Mapping[str, Any],
        *,
        strict: bool = False,
        lenient: bool | None = None,
        notes: list[Problem] | None = None,
    ) -> M:
        """Validate and decode one message from parsed JSON (a dict, or any mapping: read as the dict of its items;
        values inside are JSON's dicts and lists). See :meth:`from_json`. The message shares no
        mutable container with ``data`` (its metadata, tool inputs and unknown keys are copies): changing one never
        changes the other."""
        if lenient is not None:
            lenient_warning()
        if notes is not None:
            legacy.check_notes(notes, "msg")
        data = as_given(data)  # (a mappingproxy, a UserDict: read as its dict)
        return cls._from_parsed(json_value_copy(data, "msg"), strict, checked=True, notes=notes, stacklevel=3)

    @classmethod
    def _from_parsed(
        cls: type[M],
        data: Any,
        strict: bool,
        *,
        checked: bool = False,
        notes: list[Problem] | None = None,
        stacklevel: int = 2,
    ) -> M:
        """``checked``: the caller has made sure ``data`` is JSON that can be written back. ``notes``: where the
        notes of legacy keys go (else a warning, ``stacklevel`` frames above this one's caller)."""
        if not checked:
            check_json_value(data, "msg")
        found: list[Problem] = []
        decoding = _decoding()
        try:
            if type(data) is dict and decoding.closed.is_valid(data):
                msg = decoding.structure(data)
            else:
                data = legacy.message(data, found)
                if found and strict:
                    legacy.refuse(found, "msg")
                # (checked above, unless a legacy key's arguments text was read into a new value)
                unknown = has_unknown_keys(data, "msg", strict, checked=not found)
                msg = (decoding.structure_open if unknown else decoding.structure)(data)
        except IntegerBeyond as exc:  # (structured again with unknown keys kept: the same fields, in the same order)
            raise beyond_error(data, exc, "msg", functools.partial(decoding.structure_open, data)) from None
        if not isinstance(msg, cls):
            raise ValidationError.single(
                "/role", "const", f"{cls.__name__} cannot hold a {data['role']} message", "msg"
            )
        if msg.usage is not None:
            restore_usage(msg)
        if found:
            legacy.tell(found, notes, "msg", stacklevel + 1)
        return msg

    def to_dict(self) -> dict[str, Any]:
        """The message as parsed JSON: wire names, Java's key order and null conventions, then unknown keys.
        A new value every call, sharing no mutable container with the message: metadata, tool inputs and unknown
        keys are copied (their strings and numbers are immutable), so changing one never changes the other."""
        if holds_a_block_twice(self.content):  # (its blocks changed after construction: checked as its constructor)
            check_shared_size(self, "msg")
        return dict_of(self, "msg")  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """The message as compact JSON text (what :meth:`to_json_bytes` writes, decoded)."""
        return self.to_json_bytes().decode()

    def to_json_bytes(self) -> bytes:
        """The message as compact UTF-8 JSON. Byte-stable: ``Msg.from_json(b).to_json_bytes() == b``
        for anything agentmsg or AgentScope Java wrote. A message changed after construction into something
        JSON cannot hold raises :class:`~agentmsg.ValidationError` (e.g. ``max-depth``, ``integer-range``)."""
        return dumps_json(self, "msg")

    # ---- accessors ----------------------------------------------------------------------------

    @property
    def text_content(self) -> str:
        """The text of all text blocks, joined by ``"\\n"`` (``""`` when there is none)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @overload
    def blocks(self, kind: type[B]) -> list[B]: ...
    @overload
    def blocks(self, kind: Literal["text", "TextBlock"]) -> list[_b.TextBlock]: ...
    @overload
    def blocks(self, kind: Literal["thinking", "ThinkingBlock"]) -> list[_b.ThinkingBlock]: ...
    @overload
    def blocks(self, kind: Literal["image", "ImageBlock"]) -> list[_b.ImageBlock]: ...
    @overload
    def blocks(self, kind: Literal["audio", "AudioBlock"]) -> list[_b.AudioBlock]: ...
    @overload
    def blocks(self, kind: Literal["video", "VideoBlock"]) -> list[_b.VideoBlock]: ...
    @overload
    def blocks(self, kind: Literal["data", "DataBlock"]) -> list[_b.DataBlock]: ...
    @overload
    def blocks(self, kind: Literal["tool_use", "ToolUseBlock"]) -> list[_b.ToolUseBlock]: ...
    @overload
    def blocks(self, kind: Literal["tool_result", "ToolResultBlock"]) -> list[_b.ToolResultBlock]: ...
    @overload
    def blocks(self, kind: Literal["hint", "HintBlock"]) -> list[_b.HintBlock]: ...
    @overload
    def blocks(self, kind: str) -> list[ContentBlock]: ...
    def blocks(self, kind: type[B] | str) -> list[Any]:
        """The blocks of one type, in order: ``msg.blocks(ToolUseBlock)`` or ``msg.blocks("tool_use")`` (a wire
        ``type`` tag, or the class's name). A type tag nothing has, or a ``kind`` that is neither a class nor a
        string, raises a ValidationError (a ValueError too) at ``/kind``."""
        cls = _block_type(kind)
        return [b for b in self.content if isinstance(b, cls)]

    @overload
    def first_block(self, kind: type[B]) -> B | None: ...
    @overload
    def first_block(self, kind: Literal["text", "TextBlock"]) -> _b.TextBlock | None: ...
    @overload
    def first_block(self, kind: Literal["thinking", "ThinkingBlock"]) -> _b.ThinkingBlock | None: ...
    @overload
    def first_block(self, kind: Literal["image", "ImageBlock"]) -> _b.ImageBlock | None: ...
    @overload
    def first_block(self, kind: Literal["audio", "AudioBlock"]) -> _b.AudioBlock | None: ...
    @overload
    def first_block(self, kind: Literal["video", "VideoBlock"]) -> _b.VideoBlock | None: ...
    @overload
    def first_block(self, kind: Literal["data", "DataBlock"]) -> _b.DataBlock | None: ...
    @overload
    def first_block(self, kind: Literal["tool_use", "ToolUseBlock"]) -> _b.ToolUseBlock | None: ...
    @overload
    def first_block(self, kind: Literal["tool_result", "ToolResultBlock"]) -> _b.ToolResultBlock | None: ...
    @overload
    def first_block(self, kind: Literal["hint", "HintBlock"]) -> _b.HintBlock | None: ...
    @overload
    def first_block(self, kind: str) -> ContentBlock | None: ...
    def first_block(self, kind: type[B] | str) -> Any | None:
        """The first block of one type (a class, a wire ``type`` tag or the class's name), or None."""
        cls = _block_type(kind)
        return next((b for b in self.content if isinstance(b, cls)), None)

    def has_blocks(self, kind: type[Any] | str) -> bool:
        """True when the message holds a block of that type."""
        return self.first_block(kind) is not None

    @property
    def generate_reason(self) -> GenerateReason:
        """Why the reply ended (metadata ``agentscope_generate_reason``); ``MODEL_STOP`` when absent."""
        value = self.metadata.get(METADATA_GENERATE_REASON)
        try:
            return GenerateReason(value) if value is not None else GenerateReason.MODEL_STOP
        except ValueError:
            return GenerateReason.MODEL_STOP

    @property
    def chat_usage(self) -> ChatUsage | None:
        """``usage``, or else the legacy metadata copy ``_chat_usage`` that AgentScope Java writes."""
        if self.usage is not None:
            return self.usage
        legacy = self.metadata.get(METADATA_CHAT_USAGE)
        if isinstance(legacy, Mapping):
            try:
                return _usage(legacy)
            except ValidationError:
                return None
        return None

    @property
    def created_at(self) -> datetime | None:
        """``timestamp`` as an aware datetime (Java's zone-less form is read as UTC), or None. A leap second
        reads as the next minute's first instant; a timestamp that is not a real date and time raises
        :class:`~agentmsg.ValidationError` (rule ``timestamp``)."""
        return parse_timestamp(self.timestamp) if self.timestamp is not None else None

    def has_structured_output(self) -> bool:
        """True when the message holds a structured output (metadata ``_structured_output``, a JSON object)."""
        return isinstance(self.metadata.get(METADATA_STRUCTURED_OUTPUT), Mapping)

    @overload
    def structured_output(self) -> dict[str, Any]: ...

    @overload
    def structured_output(self, cls: type[T]) -> T: ...

    @overload
    def structured_output(self, cls: Callable[[dict[str, Any]], T]) -> T: ...

    def structured_output(self, cls: Any = dict) -> Any:
        """The structured output (metadata ``_structured_output``, a JSON object: a provider's parser puts the
        reply's JSON there when the request asked for structured output, as AgentScope does) read as ``cls``:

        * ``dict`` (the default): a copy of the object;
        * a pydantic model (a class with ``model_validate``);
        * an attrs class or a dataclass (through cattrs: nested classes, lists, optional fields);
        * another class: called with the keys as keyword arguments (a TypedDict, a plain class);
        * any other callable: called with the object (a function, a schema library's loader).

        Raises :class:`~agentmsg.ValidationError` (kind ``msg``) when the message has none (rule ``required``, pointer
        ``/metadata/_structured_output``) or when it does not fit ``cls`` (rule ``structured-output``, one problem
        per value that does not fit, with its pointer: ``/metadata/_structured_output/steps/0``)."""
        data = self.metadata.get(METADATA_STRUCTURED_OUTPUT)
        pointer = f"/metadata/{METADATA_STRUCTURED_OUTPUT}"
        if not isinstance(data, Mapping):
            raise ValidationError.single(pointer, "required", "the message has no structured output", "msg")
        value = orjson.loads(orjson.dumps(data))  # a copy: the caller's object never shares the message's
        name = getattr(cls, "__name__", type(cls).__name__)
        try:
            if cls is dict:
                return value
            validate = getattr(cls, "model_validate", None)
            if isinstance(cls, type) and callable(validate):
                return validate(value)
            if isinstance(cls, type) and (attrs.has(cls) or dataclasses.is_dataclass(cls)):
                return _user_converter().structure(value, cls)
            if isinstance(cls, type):
                return cls(**value)
            if callable(cls):
                return cls(value)
        except cattrs.BaseValidationError as exc:
            raise ValidationError(_cattrs_problems(exc, pointer, name), "msg") from None
        except (TypeError, ValueError, KeyError) as exc:
            errors = getattr(exc, "errors", None)  # a pydantic ValidationError: one problem per value
            if callable(errors):
                raise ValidationError(_pydantic_problems(errors(), pointer, name), "msg") from None
            raise ValidationError.single(pointer, "structured-output", f"does not fit {name}: {exc}", "msg") from None
        raise TypeError(f"structured_output(cls): cls is a class or a callable, not {type(cls).__name__}")

    def copy(self: M, **changes: Any) -> M:
        """A copy with some fields changed (``msg.copy(name="Bob")``), validated like a new message.
        The role-pinned class follows the (possibly changed) role. ``generate_reason=`` changes the generate
        reason (metadata ``agentscope_generate_reason``), as the constructors take it. ``usage=`` replaces the usage
        and, unless ``metadata=`` is given too, the old usage's metadata copy ``_chat_usage`` (the new usage gets its
        own where it needs one). The timestamp is kept as it is or given, null too (a constructor fills in now for
        None; a copy adds no time it was not given)."""
        values = {a.name: getattr(self, a.name) for a in attrs.fields(_msg_mod.Msg)}
        reason = changes.pop("generate_reason", None)
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"unknown Msg fields: {', '.join(sorted(unknown))}")
        if "usage" in changes and "metadata" not in changes and self.usage is not None:
            # The old usage's metadata copy goes with it: left in place, it would put back into the new usage the
            # counts that one leaves out (the constructor completes a usage from its copy: _with_usage_copy).
            values["metadata"] = _without_usage_copy(values["metadata"], self.usage)
        values.update(changes)
        if reason is not None:  # (it replaces the metadata's: a copy changes what it is told to)
            values["metadata"] = _with_reason(as_mapping(values["metadata"], "/metadata", False, "msg"), reason, True)
        role = _role(values.pop("role"))
        cls = MESSAGE_CLASSES.get(role, Msg) if type(self)._pinned_role is not None else type(self)
        null_timestamp = values["timestamp"] is None  # (null is a timestamp the schema allows: kept, not now)
        out = cls(role=role, **values) if cls._pinned_role is not None else cls(role, **values)
        if null_timestamp:
            out.timestamp = None
        return out  # type: ignore[return-value]

    def __repr__(self) -> str:
        # Never raises, whatever was set after construction (a role that is no MsgRole, content that is no list).
        role = self.role
        shown_role = role.value if isinstance(role, MsgRole) else short_repr(role)
        content = self.content
        if type(content) is list:
            kinds = ", ".join(_tag_of(type(b)) if attrs.has(type(b)) else type(b).__name__ for b in content)
            shown = f"[{kinds}]"
        else:
            shown = short_repr(content)
        return (
            f"{type(self).__name__}(id={short_repr(self.id, 200)}, name={short_repr(self.name, 200)}, role={shown_role},"
            f" content={shown})"
        )


def _keep_usage_copy(msg: Msg, value: Any) -> None:
    """What ``msg.usage = value`` does once the message is built, before the value is set (:func:`guard_field`): the
    old usage's metadata copy ``_chat_usage`` goes with it when it is one (:func:`_without_usage_copy`), and a usage
    holding a key AgentScope Java 2.0.0's ChatUsage lacks gets its own, as a constructor and ``copy(usage=...)`` give
    it (the value set is kept as it is: not completed from a copy). Left in place, the old copy was written beside
    the new usage, and a reader (or a trip through Java) put its counts back into the new one. The metadata is
    replaced, not changed in place. While the message is built (no usage set yet) nothing is done; a value that is
    no usage (refused when the message is written) gets no copy."""
    try:
        old = _USAGE_SLOT.__get__(msg, type(msg))
    except AttributeError:  # (being built: the constructor made its copy)
        return
    metadata = before = msg.metadata
    try:
        if isinstance(old, ChatUsage) and old is not value:
            metadata = _without_usage_copy(metadata, old)
        wire = unstructure_hooks[ChatUsage](value) if isinstance(value, ChatUsage) else None
    except WrongValue:  # (a count of the wrong type: refused when the message is written, at its pointer)
        wire = None
    beyond_java = wire is not None and not JAVA_USAGE_KEYS.issuperset(wire)
    if beyond_java and isinstance(metadata, Mapping) and metadata.get(METADATA_CHAT_USAGE) != wire:
        metadata = {**metadata, METADATA_CHAT_USAGE: wire}
    if metadata is not before:
        msg.metadata = metadata


# ``Msg.usage``: a property over the usage's slot, which is also ``_usage_slot`` (the decoders set it and the C
# writer reads it through that), as blocks' ``type`` is guarded
guard_field(Msg, "usage", _keep_usage_copy)


def _pinned(role: MsgRole, doc: str) -> Any:
    def decorate(cls: type[Msg]) -> type[Msg]:
        cls._pinned_role = role
        cls.__doc__ = doc
        return cls

    return decorate


@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False, repr=False)
class _RolePinnedMsg(Msg):
    """Base of the role-pinned classes: content comes first, the role is fixed."""

    def __init__(
        self,
        content: str
        | ContentBlock
        | Mapping[str, Any]
        | Sequence[ContentBlock | str | Mapping[str, Any]]
        | None = None,
        *,
        role: MsgRole | str | None = None,
        name: str | None = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
        usage: ChatUsage | Mapping[str, Any] | None = None,
        unknown_keys: Mapping[str, Any] | None = None,
        generate_reason: GenerateReason | str | None = None,
    ) -> None:
        super().__init__(
            role,
            content,
            name=name,
            id=id,
            metadata=metadata,
            timestamp=timestamp,
            usage=usage,
            unknown_keys=unknown_keys,
            generate_reason=generate_reason,
        )


@_pinned(
    MsgRole.USER, "A USER message: text, data, image, audio and video blocks only. ``UserMessage('hi', name='alice')``."
)
@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False, repr=False)
class UserMessage(_RolePinnedMsg):
    pass


@_pinned(MsgRole.ASSISTANT, "An ASSISTANT message: every block type. ``AssistantMessage('hello', name='agent')``.")
@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False, repr=False)
class AssistantMessage(_RolePinnedMsg):
    pass


@_pinned(MsgRole.SYSTEM, "A SYSTEM message: text blocks only. ``SystemMessage('You are helpful.')``.")
@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False, repr=False)
class SystemMessage(_RolePinnedMsg):
    pass


@_pinned(
    MsgRole.TOOL,
    "A TOOL message carrying tool results (unrestricted, as in Java). "
    "``ToolResultMessage(ToolResultBlock(id='call_1', name='f', output=[TextBlock(text='ok')], state='success'))``.",
)
@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False, repr=False)
class ToolResultMessage(_RolePinnedMsg):
    pass


MESSAGE_CLASSES: dict[MsgRole, type[Msg]] = {
    MsgRole.USER: UserMessage,
    MsgRole.ASSISTANT: AssistantMessage,
    MsgRole.SYSTEM: SystemMessage,
    MsgRole.TOOL: ToolResultMessage,
}

_BUILD_AS = {**SDK_CLASS_OF, _msg_mod.Msg: Msg}
_BY_ROLE = {role.value: cls for role, cls in MESSAGE_CLASSES.items()}
#: The codecs that decode messages into the role-pinned message classes and the SDK block classes: CODEC for
#: input without unknown keys (the closed schema accepted it), OPEN_CODEC keeps unknown keys.
CODEC = Codec(_BUILD_AS, _BY_ROLE)
OPEN_CODEC = Codec(_BUILD_AS, _BY_ROLE, keep_unknown=True)
_orjson_dumps = orjson.dumps
JSONEncodeError = orjson.JSONEncodeError
_limits = limits


class _Decoding:
    """The general path of decoding a message: the structure hooks of every class a message reaches and the closed
    schema's validator. Built when first needed (:func:`_decoding`), not at import: compiling them is most of what
    ``import agentmsg`` would otherwise spend in this module (a message the fast path decodes needs none of it)."""

    __slots__ = ("closed", "structure", "structure_open", "structure_usage")

    def __init__(self) -> None:
        self.structure: StructureFn = CODEC.hook(_msg_mod.Msg)
        self.structure_open: StructureFn = OPEN_CODEC.hook(_msg_mod.Msg)
        self.structure_usage: StructureFn = OPEN_CODEC.hook(ChatUsage)
        self.closed: Any = validator_for_kind("msg", strict=True)


def _new_fast_path() -> FastPath | None:
    from agentmsg._codec.fastpath import FastPath, Unsupported  # (only decoding needs it)

    try:
        return FastPath("msg", _BUILD_AS, _BY_ROLE)
    except Unsupported as exc:  # pragma: no cover (the shipped schemas are supported: tests/codec/test_fastpath.py)
        warnings.warn(f"agentmsg: no decode fast path ({exc}); decoding is slower", RuntimeWarning, stacklevel=1)
        return None


#: The general decoding path and the decode fast path, each built by the first decode that needs it (not at import)
_decoding: Once[_Decoding] = Once(_Decoding)
_fast_path: Once[FastPath | None] = Once(_new_fast_path)


# The JSON hooks of every class a message reaches are compiled before the first write (encoding never compiles).
def _reached_from_msg() -> Iterator[type]:
    yield from sorted(reachable_models(_msg_mod.Msg), key=lambda k: (k.__module__, k.__qualname__))


prepare_json(
    itertools.chain([*_BUILD_AS, *_BUILD_AS.values(), *MESSAGE_CLASSES.values(), ChatUsage], _reached_from_msg())
)

_hooks = unstructure_hooks


def _unstructure_msg(msg: Any) -> Any:
    return _hooks[msg.__class__](msg)


@functools.cache
def _user_converter() -> cattrs.Converter:
    """The cattrs converter of callers' attrs classes and dataclasses (structured output), made on first use."""
    return cattrs.Converter()


_CATTRS_PATH = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def _esc(part: Any) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _cattrs_problems(exc: Exception, pointer: str, name: str) -> list[Problem]:
    """One problem per value cattrs could not read, its pointer from cattrs' path (``$.steps[0].n``)."""
    out = []
    for line in cattrs.transform_error(exc, path="$"):
        message, _, path = line.rpartition(" @ ")
        parts = [m.group(1) or m.group(2) or m.group(3) or "" for m in _CATTRS_PATH.finditer(path.removeprefix("$"))]
        where = pointer + "".join(f"/{_esc(p)}" for p in parts)
        out.append(Problem(where, "structured-output", f"does not fit {name}: {message or line}"))
    return out or [Problem(pointer, "structured-output", f"does not fit {name}: {exc}")]


def _pydantic_problems(errors: Sequence[Mapping[str, Any]], pointer: str, name: str) -> list[Problem]:
    """One problem per value pydantic could not read, its pointer from the error's ``loc``."""
    out = [
        Problem(
            pointer + "".join(f"/{_esc(p)}" for p in e.get("loc", ())),
            "structured-output",
            f"does not fit {name}: {e.get('msg', e)}",
        )
        for e in errors
    ]
    return out or [Problem(pointer, "structured-output", f"does not fit {name}")]
