"""A strict pydantic validator of an SDK's request TypedDicts (``strict_adapter``): the technique of the shared
oracle notes (shared/reference/provider-oracles.md, section 1), written here for the project.

A plain ``TypeAdapter(SomeParams)`` misses most bad payloads: ``Iterable[X]`` is validated lazily, TypedDicts take
unknown keys, unions carry response BaseModels with ``extra="allow"`` (and ``IO`` members), lax mode coerces. The
copy made here turns every ``Iterable`` / ``Sequence`` into a ``list``, closes every TypedDict (``extra="forbid"``),
keeps ``Required`` / ``NotRequired`` as the SDK declares them (read with ``get_type_hints``, so ``from __future__
import annotations`` does not hide them), and leaves out the BaseModel and file members of unions. Validate JSON text
with ``strict=True``. No per-provider code: the types are the vendor's."""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any

import typing_extensions
from pydantic import BaseModel, ConfigDict, TypeAdapter

__all__ = ["strict_adapter"]

_CLOSED = ConfigDict(extra="forbid", strict=True)
_SEQUENCES = (
    collections.abc.Iterable,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    list,
    tuple,
)
_MAPPINGS = (collections.abc.Mapping, collections.abc.MutableMapping, dict)
_DROP = object()


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


class _Builder:
    def __init__(self) -> None:
        self.done: dict[Any, Any] = {}

    def typeddict(self, td: Any) -> Any:
        got = self.done.get(td)
        if got is not None:
            return got
        self.done[td] = dict[str, Any]  # (a recursive reference while it is built: an object)
        hints = typing.get_type_hints(td, include_extras=True)
        fields = {}
        required = td.__required_keys__  # (right for the keys of total classes; Required[...] read from the hints)
        for key, tp in hints.items():
            origin = typing_extensions.get_origin(tp)
            wrapped = origin in (typing_extensions.Required, typing_extensions.NotRequired)
            new = self.convert(typing_extensions.get_args(tp)[0] if wrapped else tp)
            new = Any if new is _DROP else new
            if origin is typing_extensions.Required or (
                key in required and origin is not typing_extensions.NotRequired
            ):
                fields[key] = typing_extensions.Required[new]
            else:
                fields[key] = typing_extensions.NotRequired[new]
        made = typing_extensions.TypedDict(td.__name__, fields)  # type: ignore[misc]  # (built at run time)
        made.__pydantic_config__ = _CLOSED  # type: ignore[attr-defined]
        self.done[td] = made
        return made

    def convert(self, tp: Any) -> Any:
        origin = typing_extensions.get_origin(tp)
        args = typing_extensions.get_args(tp)
        if origin in (typing_extensions.Required, typing_extensions.NotRequired):
            inner = self.convert(args[0])
            return origin[Any if inner is _DROP else inner]
        if origin is typing_extensions.Annotated:
            return self.convert(args[0])
        if origin in (typing.Union, getattr(types, "UnionType", typing.Union)):
            kept = [c for c in (self.convert(a) for a in args) if c is not _DROP]
            if not kept:
                return _DROP
            return kept[0] if len(kept) == 1 else typing.Union[tuple(kept)]  # noqa: UP007
        if origin is typing.Literal:
            return tp
        if origin in _SEQUENCES:
            inner = self.convert(args[0]) if args else Any
            return types.GenericAlias(list, (Any if inner is _DROP else inner,))  # list[inner], of a run-time type
        if origin in _MAPPINGS:
            value = self.convert(args[1]) if len(args) == 2 else Any
            return types.GenericAlias(dict, (str, Any if value is _DROP else value))
        if _is_typeddict(tp):
            return self.typeddict(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return _DROP
        if origin is not None and origin in (typing.IO, collections.abc.Callable):
            return _DROP
        if tp in (typing.IO, bytes) or getattr(tp, "__name__", "") in ("PathLike", "IO", "BinaryIO"):
            return _DROP
        if isinstance(tp, typing.TypeVar):
            return Any
        return tp


@functools.cache
def strict_adapter(tp: Any) -> TypeAdapter[Any]:
    """A TypeAdapter of a strict copy of ``tp`` (a TypedDict, or a union or list of them)."""
    built = _Builder().convert(tp)
    return TypeAdapter(built)
