"""What a provider's reader does with each field of its replies: the reply-field tables.

Each provider module has ``REPLY_FIELDS``, a tuple of :class:`ReplyField`: a field of a whole reply (a stream's
chunks carry the same fields, a message's under ``delta``), what becomes of it, and where it goes:

* ``kept``: in the message as given (a text block's text, say);
* ``mapped``: in the message in another shape (usage counts, the finish reason in metadata, a call as a tool_use
  block);
* ``not kept``: the message has no place for it: said (a CUSTOM ``agentmsg.not-kept`` event, once per reply and
  kind), never dropped silently;
* ``not read``: describes the serving, not the reply (a timestamp, a fingerprint), or a count the usage has no
  field for: not said, by design (docs/streams.md says which).

docs/streams.md's tables are written from them (:func:`docs_tables`; tests/project/test_docs.py compares), and
tests/providers/shared/test_reply_fields.py gives each field to its reader and checks that it is where its row
says.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = ["KEPT", "MAPPED", "NOT_KEPT", "NOT_READ", "THINK_TAGS", "ReplyField", "docs_tables"]

KEPT: Final = "kept"
MAPPED: Final = "mapped"
NOT_KEPT: Final = "not kept"
NOT_READ: Final = "not read"
#: What becomes of a reply's text with the parser option ``think_tags`` on (every provider's: the builder's, .think)
THINK_TAGS: Final = (
    "with the parser option `think_tags`: text between `<think>` and `</think>` as thinking blocks, the rest as text"
    " blocks (`<think>` tags, above)"
)


@attrs.frozen
class ReplyField:
    """One field of a provider's replies (``path``: dotted, ``[]`` for each item of a list; ``a|b`` for two
    spellings read alike), what becomes of it (``how``) and where it goes (``where``)."""

    path: str
    how: str = attrs.field(validator=attrs.validators.in_((KEPT, MAPPED, NOT_KEPT, NOT_READ)))
    where: str = ""


def _path(path: str) -> str:
    """A row's field for a table: ``a|b`` as `` `a` or `b` `` (a ``|`` in a cell would split it)."""
    return " or ".join(f"`{p}`" for p in path.split("|"))


def markdown(module: str, title: str, fields: Sequence[ReplyField]) -> str:
    out = [f"### {title} (`providers/{module}.py`)\n", "| field | | in the message |", "|---|---|---|"]
    out += [f"| {_path(f.path)} | {f.how} | {f.where} |" for f in fields]
    return "\n".join(out) + "\n"


def docs_tables() -> str:
    """The reply-field tables of docs/streams.md, one per provider module (``REPLY_FIELDS``), in the registry's
    order: ``python -c 'from agentmsg.providers._response.fields import docs_tables; print(docs_tables(), end="")'``."""
    from agentmsg.providers import MODULES

    parts = []
    for name in MODULES:
        module = importlib.import_module(f"agentmsg.providers.{name}")
        title = ", ".join(entry.spec.title for entry in module.PROVIDERS)
        parts.append(markdown(name, title, module.REPLY_FIELDS))
    return "\n".join(parts)
