"""Unknown keys: forward compatibility with newer producers, in one place.

Policy (schema version 1.1, docs/wire-format.md): an object key that the schema does not declare (say
``futureTokens`` in a ChatUsage from a newer producer) is

* **accepted** by every reader by default (the canonical schemas are open),
* **kept** on the decoded object, in its ``unknown_keys`` field (a dict in the order read; None when there are
  none), and **written back** unchanged after the declared keys,
* **reported** by :func:`find_unknown_keys` (one :class:`~agentmsg.Problem` with rule ``unknown-key`` and the
  key's own pointer per key; ``agentmsg validate`` prints them as notes),
* **rejected** by strict reading (``strict=True``, ``agentmsg validate --strict``), which validates against
  the closed variant of the schemas (rule ``additionalProperties``, as in schema version 1.0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from agentmsg._codec.converter import _generated_base, dict_of, known_keys
from agentmsg._codec.jsontext import as_given
from agentmsg._codec.legacy import read_legacy_keys
from agentmsg._codec.schemas import KINDS, schema_documents
from agentmsg._codec.schemas import find_unknown_keys as _find_in_json
from agentmsg.errors import Problem, ValidationError, wrong_type

__all__ = ["find_unknown_keys", "normalise_unknown_keys"]


def normalise_unknown_keys(value: Any, cls: type, kind: str) -> dict[str, Any] | None:
    """An ``unknown_keys`` argument given to a constructor, checked: None (or an empty mapping) means none;
    otherwise a mapping whose keys are strings that ``cls`` does not declare. Returns a dict copy or None."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError.single(
            "", "type", f"unknown_keys must be a mapping of keys to JSON values, got {type(value).__name__}", kind
        )
    known = known_keys(cls)
    for key in value:
        if not isinstance(key, str):
            raise ValidationError.single("", "json-value", f"unknown key {key!r} is not a string", kind)
        if key in known:
            raise ValidationError.single(
                "/" + key.replace("~", "~0").replace("/", "~1"),
                "unknown-key",
                f"{key!r} is a declared key of {cls.__name__}: set the field, not unknown_keys",
                kind,
            )
    return dict(value) or None


def _kind_of(cls: type) -> str | None:
    base = _generated_base(cls)
    if base is None:
        return None
    stem = base.__module__.rpartition(".")[2].replace("_", "-")
    schema_documents()
    for kind, file in KINDS.items():
        if file.removesuffix(".schema.json") == stem:
            return kind
    return None


def find_unknown_keys(value: Any, kind: str | None = None) -> list[Problem]:
    """The keys the schema does not declare, anywhere in ``value``: a message, block, source, usage or event
    object, or parsed JSON (then ``kind`` says what it is; default ``msg``; a mapping given that is no dict is read
    as its dict, as the readers read it). One :class:`~agentmsg.Problem`
    per key, rule ``unknown-key``, pointer of the key itself (``/usage/futureTokens``), sorted by
    pointer; ``[]`` when there are none.

    Readers keep these keys and write them back; strict reading (``strict=True``) rejects them. A legacy key of
    parsed JSON (AgentScope's seed documents: a tool_use ``arguments``, ...), which readers read in its current
    form, is reported as the readers' note says it (rule ``legacy-key``; :func:`agentmsg.read_legacy_keys`).

    A ``kind`` that is no string, or an attrs instance that is no agentmsg model: a
    :class:`~agentmsg.errors.WrongTypeError` at ``/kind`` or ``/value`` (rule ``type``); an unknown kind (``""``
    too): a ValidationError at ``/kind`` (rule ``enum``)."""
    # (a falsy kind, "" or [] or 0, was read as no kind, msg, and another model's instance raised a bare ValueError)
    if kind is not None and not isinstance(kind, str):
        raise wrong_type("/kind", f"kind is a string, one of {', '.join(sorted(KINDS))}, or None", kind)
    if attrs.has(type(value)):
        found = _kind_of(type(value))
        if found is None:
            raise wrong_type("/value", "value is an agentmsg model (a message, block, source, usage) or JSON", value)
        kind = found if kind is None else kind
        value = dict_of(value, kind, copy=False)  # (read only; a field JSON cannot hold: refused)
        return _find_in_json(value, kind)
    kind = "msg" if kind is None else kind
    value = as_given(value)  # (a mapping given that is no dict: read as its dict, as the readers read it)
    unknown = _find_in_json(value, kind)
    if not unknown:
        return unknown
    notes = {p.pointer: p for p in read_legacy_keys(value, kind)[1]}
    return [notes.get(p.pointer, p) for p in unknown]
