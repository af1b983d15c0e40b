"""The message API: :class:`Msg` and its role-pinned subclasses.

The fields come from the generated model (``agentmsg_models.msg.Msg``); this layer adds what the
schema cannot say: constructors that fill in id and timestamp and wrap plain strings, role rules at
construction, JSON/dict codecs that validate, and accessors.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar, TypeVar, cast, overload

import attrs
import cattrs
import orjson

from agentmsg_models import chat_usage as _usage_mod
from agentmsg_models import content_block as _blocks
from agentmsg_models import msg as _msg_mod
from agentmsg_models.generate_reason import GenerateReason

from . import _converter
from ._json import JsonInput, dumps, loads
from ._schemas import array_validator_for_kind, check_depth, limits, validate, validator_for_kind
from .errors import Problem, ValidationError

MsgRole = _msg_mod.MsgRole
ChatUsage = _usage_mod.ChatUsage
ContentBlock = _blocks.ContentBlock
TextBlock = _blocks.TextBlock

B = TypeVar("B")
M = TypeVar("M", bound="Msg")
T = TypeVar("T")

METADATA_GENERATE_REASON = "agentscope_generate_reason"
METADATA_STRUCTURED_OUTPUT = "_structured_output"
METADATA_CHAT_USAGE = "_chat_usage"

_BLOCK_CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (
        _blocks.TextBlock,
        _blocks.ThinkingBlock,
        _blocks.ImageBlock,
        _blocks.AudioBlock,
        _blocks.VideoBlock,
        _blocks.DataBlock,
        _blocks.ToolUseBlock,
        _blocks.ToolResultBlock,
        _blocks.HintBlock,
    )
}
_BLOCK_BY_TAG: dict[str, type] = {_converter._tag_of(c): c for c in _BLOCK_CLASSES.values()}


def new_id() -> str:
    """A new message id: a random UUID, 36 characters with dashes (as AgentScope Java)."""
    return str(uuid.uuid4())


def now_timestamp() -> str:
    """Now, in the form agentmsg writes: AgentScope Java's ``yyyy-MM-dd HH:mm:ss.SSS``, in UTC."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"


def parse_timestamp(value: str) -> datetime:
    """Parse either accepted timestamp form. Java's zone-less form is read as UTC (what agentmsg writes)."""
    text = value.strip()
    if "T" in text or "t" in text:
        iso = text.replace("t", "T").replace("z", "Z").replace("Z", "+00:00")
        return datetime.fromisoformat(_trim_fraction(iso))
    return datetime.fromisoformat(_trim_fraction(text)).replace(tzinfo=timezone.utc)


def _trim_fraction(text: str) -> str:
    # datetime.fromisoformat (3.10) accepts 3 or 6 fractional digits only: pad or cut to 6.
    return _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)


_FRACTION = re.compile(r"\.([0-9]+)")


def _block_type(kind: type[B] | str) -> type[B]:
    if isinstance(kind, str):
        found = _BLOCK_BY_TAG.get(kind) or _BLOCK_CLASSES.get(kind)
        if found is None:
            raise ValueError(f"unknown block type {kind!r}; known: {', '.join(sorted(_BLOCK_BY_TAG))}")
        return found
    return kind


def _content_list(content: Any) -> list[Any]:
    """Normalise constructor content: a string becomes one TextBlock; dicts are decoded as blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [_blocks.TextBlock(text=content)]
    if attrs.has(type(content)) or isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, Iterable):
        raise ValidationError.single(
            "/content", "type", f"content must be a string or a list of blocks, got {type(content).__name__}", "msg"
        )
    out: list[Any] = []
    for i, block in enumerate(content):
        if isinstance(block, str):
            out.append(_blocks.TextBlock(text=block))
        elif type(block) in _converter_block_types():
            out.append(block)
        elif isinstance(block, Mapping):
            from .blocks import block_from_dict

            try:
                out.append(block_from_dict(dict(block)))
            except ValidationError as exc:
                raise ValidationError(
                    [Problem(f"/content/{i}{p.pointer}", p.rule, p.message, p.schema_location) for p in exc.problems],
                    "msg",
                ) from None
        else:
            raise ValidationError.single(f"/content/{i}", "type", f"not a content block: {type(block).__name__}", "msg")
    return out


def _converter_block_types() -> frozenset[type]:
    return _BLOCK_TYPES


_BLOCK_TYPES = frozenset(_BLOCK_CLASSES.values())
_FIELD_NAMES = tuple(a.name for a in attrs.fields(_msg_mod.Msg))


@attrs.define(kw_only=True, slots=True, weakref_slot=False, init=False, eq=False)
class Msg(_msg_mod.Msg):
    """One conversation turn. Fields (from the schema): ``id``, ``name``, ``role``, ``content``,
    ``metadata``, ``timestamp``, ``usage``.

    ``Msg("USER", "hello", name="alice")`` builds a message: a plain string becomes a text block, the
    id (random UUID) and timestamp (now, UTC, Java form) are filled in, and the whole message is
    validated against the schema, role rules included (:class:`~agentmsg.ValidationError`).
    Decoding (:meth:`from_json`, :meth:`from_dict`) validates, then returns the role-pinned subclass
    (:class:`UserMessage`, :class:`AssistantMessage`, ...), as AgentScope Java does.
    Messages are immutable: :meth:`copy` returns a changed copy.
    """

    _pinned_role: ClassVar[MsgRole | None] = None

    def __init__(
        self,
        role: MsgRole | str | None = None,
        content: str | ContentBlock | Sequence[ContentBlock | str | Mapping[str, Any]] | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
        usage: ChatUsage | None = None,
    ) -> None:
        pinned = type(self)._pinned_role
        if role is None:
            if pinned is None:
                raise ValidationError.single(
                    "/role", "required", "a role is required (USER, ASSISTANT, SYSTEM or TOOL)", "msg"
                )
            role = pinned
        try:
            role_value = MsgRole(role.upper() if isinstance(role, str) and not isinstance(role, MsgRole) else role)
        except ValueError:
            raise ValidationError.single(
                "/role", "enum", f"unknown role {role!r}; expected USER, ASSISTANT, SYSTEM or TOOL", "msg"
            ) from None
        if pinned is not None and role_value is not pinned:
            raise ValidationError.single(
                "/role", "const", f"{type(self).__name__} has role {pinned.value}, got {role_value.value}", "msg"
            )
        self.__attrs_init__(
            id=new_id() if id is None else id,
            name=name,
            role=role_value,
            content=_content_list(content),
            metadata=dict(metadata) if metadata is not None else {},
            timestamp=now_timestamp() if timestamp is None else timestamp,
            usage=usage,
        )
        validate(self.to_dict(), "msg")

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
    def from_json(cls: type[M], data: JsonInput, *, lenient: bool = False) -> M:
        """Decode and validate one message from JSON text (str or bytes).

        Raises :class:`~agentmsg.ValidationError` for malformed JSON, schema or role violations, or
        input beyond :data:`agentmsg.limits`. ``lenient=True`` drops object keys the schema does not
        know (forward compatibility with newer writers) instead of rejecting them; every other rule
        still applies."""
        # Fast path: parse, validate (jsonschema-rs), structure. Anything unusual takes the slow path
        # below, which produces the detailed errors.
        if not lenient and (type(data) is bytes or type(data) is str) and len(data) <= _limits["max_bytes"]:
            try:
                parsed = _orjson_loads(data)
            except ValueError:
                parsed = _INVALID
            if parsed is not _INVALID and _msg_is_valid(parsed):
                msg = _structure_msg(parsed)
                if cls is Msg or isinstance(msg, cls):
                    return msg  # type: ignore[no-any-return]
        return cls._from_parsed(loads(data, "msg"), lenient)

    @classmethod
    def from_dict(cls: type[M], data: Mapping[str, Any], *, lenient: bool = False) -> M:
        """Validate and decode one message from parsed JSON (a dict). See :meth:`from_json`."""
        return cls._from_parsed(data, lenient)

    @classmethod
    def _from_parsed(cls: type[M], data: Any, lenient: bool) -> M:
        if lenient:
            check_depth(data, "msg")
            from ._lenient import drop_unknown_keys

            data = drop_unknown_keys(data, "msg")
        validate(data, "msg")
        msg = _structure_msg(data)
        if not isinstance(msg, cls):
            raise ValidationError.single(
                "/role", "const", f"{cls.__name__} cannot hold a {data['role']} message", "msg"
            )
        return msg

    def to_dict(self) -> dict[str, Any]:
        """The message as parsed JSON: wire names, Java's key order and null conventions."""
        return _unstructure_msg(self)  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """The message as compact JSON text (what :meth:`to_json_bytes` writes, decoded)."""
        return dumps(_unstructure_msg(self)).decode()

    def to_json_bytes(self) -> bytes:
        """The message as compact UTF-8 JSON. Byte-stable: ``Msg.from_json(b).to_json_bytes() == b``
        for anything agentmsg or AgentScope Java wrote."""
        return dumps(_unstructure_msg(self))

    # ---- accessors ----------------------------------------------------------------------------

    @property
    def text_content(self) -> str:
        """The text of all text blocks, joined by ``"\\n"`` (``""`` when there is none)."""
        return "\n".join(b.text for b in self.content if type(b) is _blocks.TextBlock)

    @overload
    def blocks(self, kind: type[B]) -> list[B]: ...
    @overload
    def blocks(self, kind: str) -> list[Any]: ...
    def blocks(self, kind: type[B] | str) -> list[Any]:
        """The blocks of one type, in order: ``msg.blocks(ToolUseBlock)`` or ``msg.blocks("tool_use")``."""
        cls = _block_type(kind)
        return [b for b in self.content if isinstance(b, cls)]

    @overload
    def first_block(self, kind: type[B]) -> B | None: ...
    @overload
    def first_block(self, kind: str) -> Any | None: ...
    def first_block(self, kind: type[B] | str) -> Any | None:
        """The first block of one type, or None."""
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
            return _converter.converter.structure(dict(legacy), ChatUsage)
        return None

    @property
    def created_at(self) -> datetime | None:
        """``timestamp`` as an aware datetime (Java's zone-less form is read as UTC), or None."""
        return parse_timestamp(self.timestamp) if self.timestamp else None

    def has_structured_output(self) -> bool:
        return isinstance(self.metadata.get(METADATA_STRUCTURED_OUTPUT), Mapping)

    def structured_output(self, cls: type[T]) -> T:
        """The structured output (metadata ``_structured_output``) as an instance of ``cls``: an attrs
        class or dataclass (via cattrs), a pydantic model (``model_validate``), or any class taking
        the keys as keyword arguments. Raises ValidationError when absent or not matching ``cls``."""
        data = self.metadata.get(METADATA_STRUCTURED_OUTPUT)
        pointer = f"/metadata/{METADATA_STRUCTURED_OUTPUT}"
        if not isinstance(data, Mapping):
            raise ValidationError.single(pointer, "required", "the message has no structured output", "msg")
        try:
            if hasattr(cls, "model_validate"):
                return cls.model_validate(data)  # type: ignore[attr-defined, no-any-return]
            if attrs.has(cls) or dataclasses.is_dataclass(cls):
                return cast(T, _user_converter.structure(dict(data), cls))
            return cls(**data)
        except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
            raise ValidationError.single(
                pointer, "structured-output", f"does not match {cls.__name__}: {exc}", "msg"
            ) from None

    def copy(self: M, **changes: Any) -> M:
        """A copy with some fields changed (``msg.copy(name="Bob")``), validated like a new message.
        The role-pinned class follows the (possibly changed) role."""
        values = {a.name: getattr(self, a.name) for a in attrs.fields(_msg_mod.Msg)}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"unknown Msg fields: {', '.join(sorted(unknown))}")
        values.update(changes)
        role = MsgRole(values.pop("role"))
        cls = MESSAGE_CLASSES.get(role, Msg) if type(self)._pinned_role is not None else type(self)
        if cls._pinned_role is not None:
            return cls(role=role, **values)  # type: ignore[return-value]
        return cls(role, **values)  # type: ignore[return-value]

    def __repr__(self) -> str:
        kinds = ", ".join(_converter._tag_of(type(b)) for b in self.content)
        return f"{type(self).__name__}(id={self.id!r}, name={self.name!r}, role={self.role.value}, content=[{kinds}])"


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
        content: str | ContentBlock | Sequence[ContentBlock | str | Mapping[str, Any]] | None = None,
        *,
        role: MsgRole | str | None = None,
        name: str | None = None,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
        usage: ChatUsage | None = None,
    ) -> None:
        super().__init__(role, content, name=name, id=id, metadata=metadata, timestamp=timestamp, usage=usage)


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

_converter.build_as(_msg_mod.Msg, Msg)
_converter.dispatch_msg_role({role.value: cls for role, cls in MESSAGE_CLASSES.items()})
_structure_msg = _converter.structure_hooks[_msg_mod.Msg]
_INVALID = object()
_orjson_loads = orjson.loads
_limits = limits


def _msg_is_valid(value: Any) -> bool:
    try:
        return bool(_MSG_VALIDATOR.is_valid(value))
    except (ValueError, TypeError, OverflowError):
        return False


_MSG_VALIDATOR = validator_for_kind("msg")


_MSG_LIST_VALIDATOR = array_validator_for_kind("msg")


def decode_messages(data: JsonInput) -> list[Msg]:
    """Decode a conversation: a JSON array of messages (as AgentScope Java stores a context) into a
    list of role-pinned messages, validated as a whole. Problems are reported with pointers into the
    array (``/3/content/0/type``)."""
    parsed = loads(data, "msg")
    if type(parsed) is list:
        try:
            ok = bool(_MSG_LIST_VALIDATOR.is_valid(parsed))
        except (ValueError, TypeError, OverflowError):
            ok = False
        if ok:
            return [_structure_msg(m) for m in parsed]
    if type(parsed) is not list:
        raise ValidationError.single(
            "", "type", f"expected a JSON array of messages, got {type(parsed).__name__}", "msg"
        )
    out = []
    for index, item in enumerate(parsed):
        try:
            out.append(Msg.from_dict(item))
        except ValidationError as exc:
            raise ValidationError(
                [Problem(f"/{index}{p.pointer}", p.rule, p.message, p.schema_location) for p in exc.problems], "msg"
            ) from None
    return out


def encode_messages(messages: Iterable[Msg]) -> bytes:
    """A conversation as a compact JSON array (each message exactly as :meth:`Msg.to_json_bytes`)."""
    hooks = _hooks
    return dumps([hooks[m.__class__](m) for m in messages])


_hooks = _converter.unstructure_hooks


def _unstructure_msg(msg: Any) -> Any:
    return _hooks[msg.__class__](msg)


_user_converter = cattrs.Converter()
