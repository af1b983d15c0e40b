"""Content blocks and sources.

The fields of each block come from the schema (the generated classes in ``agentmsg_models``); the classes
here add what the schema cannot say, the same way in every constructor:

* wherever blocks are expected (``Msg`` content, ``ToolResultBlock.output``), a plain string becomes a
  :class:`TextBlock`, a dict is decoded as a validated block, anything else is a
  :class:`~agentmsg.ValidationError`;
* a source given as a dict is decoded as a validated :data:`Source`; metadata and tool input must be
  mappings (``None`` means empty);
* the finished block is validated against the schema, so what is constructed can be written.

Decoding (:func:`block_from_dict`, ``Msg.from_json``) returns these classes too. Blocks are mutable slotted
attrs classes; a block changed after construction is checked again when a message holding it is built, but for a
block's or a source's ``type``, refused as it is set to another tag (rule ``const``).
A constructor keeps the containers nested in what it is given (a caller changing them later changes the block),
while the readers (:func:`block_from_dict`, :func:`source_from_dict`, ``Msg.from_dict``) copy them.
Every block and source has ``unknown_keys``: keys of its JSON object the schema does not declare, kept as read
(or given to the constructor) and written back after the declared keys.
"""

from __future__ import annotations

import functools
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

import attrs

from agentmsg._codec import legacy
from agentmsg._codec.converter import (
    Codec,
    IntegerBeyond,
    _tag_of,
    beyond_error,
    check_shared_size,
    dict_of,
    dumps_json,
    guard_field,
    prepare_json,
    validate_object,
)
from agentmsg._codec.jsontext import JsonInput, as_given, json_value_copy, loads
from agentmsg._codec.lazy import Once
from agentmsg._codec.schemas import has_unknown_keys, schema_documents
from agentmsg._codec.unknown import normalise_unknown_keys
from agentmsg.errors import Problem, ValidationError, WrongTypeError, short_repr, wrong_type
from agentmsg_models import content_block as _gen
from agentmsg_models.content_block import ToolCallState, ToolResultState
from agentmsg_models.source import Base64Source, URLSource

__all__ = [
    "BLOCK_CLASSES",
    "AudioBlock",
    "Base64Source",
    "ContentBlock",
    "DataBlock",
    "HintBlock",
    "ImageBlock",
    "Source",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallState",
    "ToolResultBlock",
    "ToolResultState",
    "ToolUseBlock",
    "URLSource",
    "VideoBlock",
    "as_blocks",
    "block_from_dict",
    "block_from_json",
    "block_to_dict",
    "block_to_json",
    "is_redacted",
    "new_data_block_id",
    "source_from_dict",
    "thinking_provider",
    "thinking_signature",
    "tool_call_signature",
]

Source: TypeAlias = URLSource | Base64Source


class _Checked:
    """Construction of an SDK block: normalise the values given (see the module docstring), then validate."""

    __slots__ = ()

    def __attrs_post_init__(self) -> None:
        _normalise(self)


#: What a tool result's ``output`` may be given as (see the module docstring)
Output: TypeAlias = (
    "str | _gen.ContentBlock | Mapping[str, Any] | Sequence[_gen.ContentBlock | str | Mapping[str, Any]] | None"
)


class _ToolResultFactories:
    """The seed's factories of a finished tool result (AgentScope's ``ToolResultBlock.text()`` / ``.error()``),
    mixed into the SDK's ToolResultBlock. Unlike Java's, which leave the id and name to be filled in later and the
    state ``running``, they take the call's id (the schema requires it) and set the final state."""

    __slots__ = ()

    @overload
    @classmethod
    def error(
        cls, id: str, output: Output, /, *, name: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> ToolResultBlock: ...
    @overload
    @classmethod
    def error(
        cls, id: str, name: str | None, output: Output, /, *, metadata: Mapping[str, Any] | None = None
    ) -> ToolResultBlock: ...
    @classmethod
    def error(cls, id: str, *args: Any, name: str | None = None, metadata: Mapping[str, Any] | None = None) -> Any:
        """A failed tool call's result: ``state="error"``, the output (a message, or blocks) as given.
        ``ToolResultBlock.error("call_1", "Connection timeout")`` (the seed's form: the call's id and the
        message) or ``ToolResultBlock.error("call_1", "get_weather", "Connection timeout")`` (id, tool name,
        output: the order of Java's ``ToolResultBlock.of`` and ``ToolResultMessage.result``). The text is kept as
        given (Java's ``error(text)`` writes ``"Error: " + text`` and leaves the state ``running``; here the
        state says it, and the formatters send it: Anthropic's ``is_error``, Gemini's ``error`` response).
        Bad values raise :class:`~agentmsg.ValidationError` naming the field (``/id``, ``/output/0``)."""
        return cls._finished(ToolResultState.ERROR, id, args, name, metadata)

    @overload
    @classmethod
    def text(
        cls, id: str, output: Output, /, *, name: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> ToolResultBlock: ...
    @overload
    @classmethod
    def text(
        cls, id: str, name: str | None, output: Output, /, *, metadata: Mapping[str, Any] | None = None
    ) -> ToolResultBlock: ...
    @classmethod
    def text(cls, id: str, *args: Any, name: str | None = None, metadata: Mapping[str, Any] | None = None) -> Any:
        """A successful tool call's result: ``state="success"``, the output as given (a string becomes one text
        block). The arguments as :meth:`error`'s: ``ToolResultBlock.text("call_1", "sunny")`` or
        ``ToolResultBlock.text("call_1", "get_weather", "sunny")``."""
        return cls._finished(ToolResultState.SUCCESS, id, args, name, metadata)

    @classmethod
    def _finished(cls, state: ToolResultState, id: str, args: tuple[Any, ...], name: str | None, metadata: Any) -> Any:
        if len(args) == 2:
            if name is not None:
                raise TypeError("the tool's name is given twice (positional and name=)")
            name, output = args
        elif len(args) == 1:
            (output,) = args
        else:
            raise TypeError(f"expected (id, output) or (id, name, output), got {1 + len(args)} positional arguments")
        return cls(id=id, name=name, output=output, metadata=metadata, state=state)  # type: ignore[call-arg]


_SHARES = (
    "\n\nThe constructor keeps the containers nested in its arguments (metadata, a tool's input, unknown keys): a"
    " caller changing them later changes the block; :func:`~agentmsg.block_from_dict` copies them."
)


def _sdk_class(generated: type) -> type:
    """The SDK class of a generated block: a slotted attrs subclass, same fields, checked construction, its ``type``
    held to its tag (:func:`_tag_check`)."""
    namespace = {"__doc__": f"{generated.__doc__}{_SHARES}", "__module__": __name__, "__qualname__": generated.__name__}
    bases: tuple[type, ...] = (_Checked, generated)
    if generated is _gen.ToolResultBlock:
        bases = (_ToolResultFactories, *bases)
    cls = attrs.define(kw_only=True, slots=True, weakref_slot=False)(type(generated.__name__, bases, namespace))
    guard_field(cls, "type", _tag_check(_tag_of(cls)))
    return cls


def _tag_check(tag: str, kind: str = "content-block") -> Callable[[Any, Any], None]:
    """What a block's (or a source's: ``kind`` ``source``) ``type`` may be set to
    (:func:`~agentmsg._codec.converter.guard_field`): its class's tag, else refused as its constructor refuses it
    (``const`` at ``/type``). Set after construction to another block's tag, a block was written as that block and
    read back as its class (a TextBlock as an ImageBlock), unchecked: only a message's constructor checks its blocks
    again; a source set to the other source's tag was written as neither (a ``base64`` source with a ``url``), which
    no reader takes."""

    def check(obj: Any, value: Any) -> None:
        if value != tag:
            raise _tag_error(obj, tag, value, "/type", kind)

    return check


def _generated_blocks() -> tuple[type[Any], ...]:
    """The generated class of every branch of the content-block schema's union, in the schema's order (the
    generator names each class after its definition's ``title``). Derived, not listed: a block type added to
    the schema is decoded, constructed and written by the SDK after ``make codegen`` (tests/project/test_schema_drift.py
    says what else to update)."""
    doc = schema_documents()["content-block.schema.json"]
    titles = [doc["$defs"][branch["$ref"].rpartition("/")[2]]["title"] for branch in doc["anyOf"]]
    return tuple(getattr(_gen, title) for title in titles)


_GENERATED_BLOCKS = _generated_blocks()
_SDK_BLOCKS: tuple[type, ...] = tuple(_sdk_class(c) for c in _GENERATED_BLOCKS)
if TYPE_CHECKING:  # statically the fields and constructor signatures of the generated classes
    from agentmsg_models.content_block import (
        AudioBlock,
        DataBlock,
        HintBlock,
        ImageBlock,
        TextBlock,
        ThinkingBlock,
        ToolUseBlock,
        VideoBlock,
    )

    class ToolResultBlock(_ToolResultFactories, _gen.ToolResultBlock):
        """Statically, the constructor takes ``output`` as every constructor takes blocks (see the module
        docstring): a string, a block, a dict or a sequence of those; the field is a list of blocks."""

        def __init__(
            self,
            *,
            type: Literal["tool_result"] = "tool_result",
            id: str,
            name: str | None = None,
            output: str
            | _gen.ContentBlock
            | Mapping[str, Any]
            | Sequence[_gen.ContentBlock | str | Mapping[str, Any]]
            | None = None,
            metadata: Mapping[str, Any] | None = None,
            state: ToolResultState | str = ToolResultState.RUNNING,
            unknown_keys: Mapping[str, Any] | None = None,
        ) -> None: ...

else:
    globals().update((c.__name__, c) for c in _SDK_BLOCKS)


#: Any content block (the schema's union; the SDK classes above are its members' subclasses).
ContentBlock: TypeAlias = _gen.ContentBlock

#: The one table of block classes: wire ``type`` tag -> SDK class, in the schema's order.
BLOCK_CLASSES: dict[str, type[Any]] = {_tag_of(c): c for c in _SDK_BLOCKS}
#: generated class -> the SDK class decoding builds.
SDK_CLASS_OF: dict[type, type] = dict(zip(_GENERATED_BLOCKS, _SDK_BLOCKS, strict=True))
_SDK_CLASSES = frozenset(BLOCK_CLASSES.values())

_MEDIA = (_gen.ImageBlock, _gen.AudioBlock, _gen.VideoBlock, _gen.DataBlock)

CODEC = Codec(SDK_CLASS_OF)
OPEN_CODEC = Codec(SDK_CLASS_OF, keep_unknown=True)
_BLOCK_TAGS: dict[str, type] = {_tag_of(c): c for c in _GENERATED_BLOCKS}
_SOURCE_TAGS: dict[str, type] = {_tag_of(c): c for c in (URLSource, Base64Source)}
#: each source class's tag (:func:`_own_tag`)
_SOURCE_TAG_OF: dict[type, str] = {c: tag for tag, c in _SOURCE_TAGS.items()}
for _source_class, _source_tag in _SOURCE_TAG_OF.items():  # (a source's type held to its tag, as a block's is)
    guard_field(_source_class, "type", _tag_check(_source_tag, "source"))
_Table: TypeAlias = dict[str, Any]  # ``type`` tag -> structure hook
#: The decoding tables (blocks, sources; closed, open): ``type`` tag -> structure hook, compiled by the first decode,
#: not at import
_tables: Once[tuple[_Table, _Table, _Table, _Table]] = Once(
    lambda: (
        CODEC.union(_BLOCK_TAGS),
        OPEN_CODEC.union(_BLOCK_TAGS),
        CODEC.union(_SOURCE_TAGS),
        OPEN_CODEC.union(_SOURCE_TAGS),
    )
)


prepare_json([*SDK_CLASS_OF, *SDK_CLASS_OF.values(), URLSource, Base64Source])


def lenient_warning() -> None:
    warnings.warn(
        "lenient=True is deprecated and changes nothing: readers keep keys the schema does not declare "
        "(agentmsg.find_unknown_keys lists them); use strict=True to reject them",
        DeprecationWarning,
        stacklevel=3,
    )


def block_from_dict(
    data: Mapping[str, Any], *, strict: bool = False, notes: list[Problem] | None = None
) -> ContentBlock:
    """Validate (kind ``content-block``) and decode one content block. Keys the schema does not declare are
    kept in ``unknown_keys``; ``strict=True`` rejects them. Legacy keys (a tool_use ``arguments``, a tool_result
    ``result`` or ``toolUseId``) are read in their current form with a note, into ``notes`` or else a
    :class:`~agentmsg.LegacyKeyWarning`; ``strict=True`` refuses them (docs/wire-format.md). The block shares no
    mutable container with ``data`` (its metadata, tool input, output and unknown keys are copies), as with
    ``Msg.from_dict``."""
    if notes is not None:
        legacy.check_notes(notes, "content-block")
    data = as_given(data)  # (a mappingproxy, a UserDict: read as its dict)
    return _block_from_dict(json_value_copy(data, "content-block"), strict, notes, 3, checked=True)


def _block_from_dict(
    data: Any, strict: bool, notes: list[Problem] | None, stacklevel: int, *, checked: bool = False
) -> ContentBlock:
    """``checked``: the caller has made sure ``data`` is JSON that can be written back."""
    found: list[Problem] = []
    mapped = legacy.block(data, found)
    if found:
        if strict:
            legacy.refuse(found, "content-block")
        data = mapped
    by_tag, by_tag_open, _, _ = _tables()
    table = by_tag_open if has_unknown_keys(data, "content-block", strict, checked=checked and not found) else by_tag
    try:
        block = table[data["type"]](data)
    except IntegerBeyond as exc:
        raise beyond_error(data, exc, "content-block", functools.partial(table[data["type"]], data)) from None
    if found:
        legacy.tell(found, notes, "content-block", stacklevel + 1)
    return block  # type: ignore[no-any-return]


def block_from_json(data: JsonInput, *, strict: bool = False, notes: list[Problem] | None = None) -> ContentBlock:
    """Validate and decode one content block from JSON text (see :func:`block_from_dict`)."""
    if notes is not None:
        legacy.check_notes(notes, "content-block")
    return _block_from_dict(loads(data, "content-block"), strict, notes, 3, checked=True)


def source_from_dict(data: Mapping[str, Any], *, strict: bool = False) -> Source:
    """Validate (kind ``source``) and decode one source, sharing no mutable container with ``data`` (a dict, or
    any mapping: read as the dict of its items)."""
    data = as_given(data)
    return _source_from_dict(json_value_copy(data, "source"), strict)


def _source_from_dict(data: Any, strict: bool) -> Source:
    """:func:`source_from_dict` on the caller's own containers (a constructor keeps them)."""
    _, _, source, source_open = _tables()
    table = source_open if has_unknown_keys(data, "source", strict) else source
    return table[data["type"]](data)  # type: ignore[no-any-return]


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    """One block as parsed JSON (wire names, Java key order and null conventions, then unknown keys)."""
    _check_block(block)
    if isinstance(block, _gen.ToolResultBlock) and holds_a_block_twice(block.output):  # (changed after construction)
        check_shared_size(block, "content-block")
    return dict_of(block, "content-block")  # type: ignore[no-any-return]


def block_to_json(block: ContentBlock) -> str:
    """One block as compact JSON text (:func:`block_to_dict`'s value, written as :meth:`Msg.to_json` writes)."""
    _check_block(block)
    return dumps_json(block).decode()


def _check_block(block: Any) -> None:
    """What is not a content block, given to :func:`block_to_dict` or :func:`block_to_json`: refused
    (:class:`~agentmsg.ValidationError`, rule ``type``). ``None`` was written as ``null``, a dict or a message as
    itself, and block_to_dict raised attrs' NotAnAttrsClassError for anything not an attrs class."""
    if not isinstance(block, _GENERATED_BLOCKS):
        hint = " (a block's JSON: block_from_dict reads it)" if isinstance(block, Mapping) else ""
        raise WrongTypeError.single(
            "", "type", f"expected a content block, got {type(block).__name__}{hint}", "content-block"
        )


def as_blocks(value: Any, pointer: str = "", kind: str = "content-block") -> list[ContentBlock]:
    """Blocks from what a caller gives where blocks are expected: ``None`` (no blocks), a string (one
    TextBlock), a block, a dict (decoded and validated) or an iterable of those (not a set: blocks have an
    order, a set's is its hashes'). Anything else raises
    :class:`~agentmsg.ValidationError` at ``pointer`` (``/content``, ``/output``)."""
    if value is None:
        return []
    if isinstance(value, (str, Mapping)) or type(value) in _SDK_CLASSES or isinstance(value, _GENERATED_BLOCKS):
        value = (value,)
    elif not isinstance(value, Iterable) or isinstance(value, (bytes, bytearray)):
        raise ValidationError.single(
            pointer, "type", f"expected a string, a block or a list of blocks, got {type(value).__name__}", kind
        )
    elif isinstance(value, (set, frozenset)):  # (its order is the hash's: another run, another message)
        raise ValidationError.single(
            pointer, "type", f"expected a list of blocks, got a {type(value).__name__}, which has no order", kind
        )
    out: list[ContentBlock] = []
    for index, item in enumerate(value):
        if type(item) in _SDK_CLASSES:
            out.append(item)
        elif isinstance(item, str):
            try:
                out.append(TextBlock(text=item))
            except ValidationError as exc:
                raise exc.under(f"{pointer}/{index}", kind) from None
        elif isinstance(item, Mapping):
            try:  # (a constructor keeps the caller's containers: no copy)
                out.append(_block_from_dict(item if type(item) is dict else dict(item), False, None, 2))
            except ValidationError as exc:
                raise exc.under(f"{pointer}/{index}", kind) from None
        elif isinstance(item, _GENERATED_BLOCKS):  # a generated (plain) block: checked and rebuilt as the SDK class
            try:
                out.append(_block_from_dict(block_to_dict(item), False, None, 2))
            except ValidationError as exc:
                raise exc.under(f"{pointer}/{index}", kind) from None
        else:
            raise ValidationError.single(
                f"{pointer}/{index}",
                "type",
                f"not a content block: {type(item).__name__} (expected a block, a string or a dict)",
                kind,
            )
    return out


@overload
def as_mapping(value: Any, pointer: str, nullable: Literal[False], kind: str) -> dict[str, Any]: ...
@overload
def as_mapping(value: Any, pointer: str, nullable: bool, kind: str) -> dict[str, Any] | None: ...
def as_mapping(value: Any, pointer: str, nullable: bool, kind: str) -> dict[str, Any] | None:
    """A copy of a metadata / input mapping; ``None`` stays None where allowed, else means empty."""
    if value is None:
        return None if nullable else {}
    if isinstance(value, Mapping):
        return dict(value)
    raise ValidationError.single(
        pointer, "type", f"expected an object (a mapping with string keys), got {type(value).__name__}", kind
    )


def _own_tag(obj: Any, pointer: str) -> None:
    """A source's ``type`` given to its block's constructor: its class's tag, else refused (``const``), as a block's
    ``type`` is refused when set (:func:`_tag_check`). Another source's tag was written as that source and read back
    as its class."""
    cls = type(obj)
    tag = _SOURCE_TAG_OF.get(cls) or _tag_of(cls)
    if obj.type != tag:
        raise _tag_error(obj, tag, obj.type, pointer)


def _tag_error(obj: Any, tag: str, value: Any, pointer: str, kind: str = "content-block") -> ValidationError:
    """The refusal of ``value`` as the ``type`` of ``obj``, a block or a source whose tag is ``tag``."""
    return ValidationError.single(
        pointer,
        "const",
        f"a {type(obj).__name__}'s type is {tag!r}, got {short_repr(value, 60)} (build the class of that type instead)",
        kind,
    )


def _normalise(block: Any) -> None:
    # (its type was checked as it was set: _tag_check)
    block.unknown_keys = normalise_unknown_keys(block.unknown_keys, type(block), "content-block")
    if isinstance(block, _gen.ToolResultBlock):
        block.output = as_blocks(block.output, "/output")
        block.metadata = as_mapping(block.metadata, "/metadata", False, "content-block")
        if isinstance(block.state, str) and not isinstance(block.state, ToolResultState):
            block.state = _enum(ToolResultState, block.state, "/state")
    elif isinstance(block, _gen.ToolUseBlock):
        block.input = as_mapping(block.input, "/input", False, "content-block")
        block.metadata = as_mapping(block.metadata, "/metadata", False, "content-block")
        if isinstance(block.state, str) and not isinstance(block.state, ToolCallState):
            block.state = _enum(ToolCallState, block.state, "/state")
    elif isinstance(block, _gen.ThinkingBlock):
        block.metadata = as_mapping(block.metadata, "/metadata", True, "content-block")
    elif isinstance(block, _MEDIA):
        source: Any = block.source  # (typed a Source; given a dict, or any mapping)
        if isinstance(source, Mapping):
            try:
                block.source = _source_from_dict(source if type(source) is dict else dict(source), False)
            except ValidationError as exc:
                raise exc.under("/source", "content-block") from None
        elif isinstance(source, (URLSource, Base64Source)):
            _own_tag(source, "/source/type")
            try:
                extra = normalise_unknown_keys(source.unknown_keys, type(source), "content-block")
            except ValidationError as exc:
                raise exc.under("/source", "content-block") from None
            if extra != source.unknown_keys or (extra is not None and type(source.unknown_keys) is not dict):
                block.source = attrs.evolve(source, unknown_keys=extra)
        else:
            raise ValidationError.single(
                "/source",
                "type",
                f"expected a URLSource, a Base64Source or a dict, got {type(source).__name__}",
                "content-block",
            )
    shared = isinstance(block, _gen.ToolResultBlock) and holds_a_block_twice(block.output)
    validate_object(block, "content-block", shared)


def holds_a_block_twice(blocks: list[Any]) -> bool:
    """Whether a block object is met twice in ``blocks`` or in the outputs of the tool results there, all the way
    down (a tool result holding the same block twice, each holding the same block twice, 40 levels down: 41 blocks,
    2**40 written). Such a block is legitimate (a caller reuses a TextBlock), and its constructor checks it as
    it is written, each block once (:func:`~agentmsg._codec.converter.validate_object`). One walk of the blocks."""
    seen: set[int] = set()
    stack = [blocks] if type(blocks) is list else []
    while stack:
        for block in stack.pop():
            if id(block) in seen:
                return True
            seen.add(id(block))  # (held by ``blocks``: no id is reused meanwhile)
            if isinstance(block, _gen.ToolResultBlock) and type(block.output) is list and block.output:
                stack.append(block.output)
    return False


def _enum(cls: Any, value: str, pointer: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValidationError.single(pointer, "enum", f"{value!r} is not one of {allowed}", "content-block") from None


def new_data_block_id() -> str:
    """A data-block id as AgentScope Java mints it: 32 lowercase hex characters."""
    return uuid.uuid4().hex


def _thinking(block: object) -> _gen.ThinkingBlock:
    """``block`` when it is a ThinkingBlock (what the thinking accessors read), else their error."""
    if not isinstance(block, _gen.ThinkingBlock):
        raise wrong_type("/block", "block is a ThinkingBlock", block)
    return block


def thinking_signature(block: _gen.ThinkingBlock) -> str | None:
    """The reasoning signature (metadata ``signature``), replayed only to the provider that issued it. Not a
    ThinkingBlock: a ValidationError (rule ``type``, pointer ``/block``)."""
    value = (_thinking(block).metadata or {}).get("signature")
    return value if isinstance(value, str) else None


def thinking_provider(block: _gen.ThinkingBlock) -> str | None:
    """The provider the reasoning came from (metadata ``provider``): formatters send it back only there. Not a
    ThinkingBlock: a ValidationError (rule ``type``, pointer ``/block``)."""
    value = (_thinking(block).metadata or {}).get("provider")
    return value if isinstance(value, str) else None


def is_redacted(block: _gen.ThinkingBlock) -> bool:
    """True only when the block says so (metadata ``redacted``); never inferred from empty text. Not a
    ThinkingBlock: a ValidationError (rule ``type``, pointer ``/block``)."""
    return (_thinking(block).metadata or {}).get("redacted") is True


def tool_call_signature(block: _gen.ToolUseBlock) -> str | None:
    """A tool call's thought signature (metadata ``thoughtSignature``, Gemini's), sent back with the call. Not a
    ToolUseBlock: a ValidationError (rule ``type``, pointer ``/block``)."""
    if not isinstance(block, _gen.ToolUseBlock):
        raise wrong_type("/block", "block is a ToolUseBlock", block)
    value = block.metadata.get("thoughtSignature")
    return value if isinstance(value, str) else None
