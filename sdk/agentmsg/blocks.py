"""Content blocks and sources: the generated attrs classes, plus decoding and typed accessors for the
extension keys agentmsg declares in block metadata (reasoning signature, provenance, ...)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from agentmsg_models.content_block import (
    AudioBlock,
    ContentBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    VideoBlock,
)
from agentmsg_models.source import Base64Source, Source, URLSource

from . import _converter
from ._json import JsonInput, dumps, loads
from ._schemas import validate

__all__ = [
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
    "block_from_dict",
    "block_from_json",
    "block_to_dict",
    "block_to_json",
    "is_redacted",
    "new_data_block_id",
    "thinking_provider",
    "thinking_signature",
    "tool_call_signature",
]

_union_hooks = _converter._LazyUnion(
    {
        _converter._tag_of(c): c
        for c in (
            TextBlock,
            ThinkingBlock,
            ImageBlock,
            AudioBlock,
            VideoBlock,
            DataBlock,
            ToolUseBlock,
            ToolResultBlock,
            HintBlock,
        )
    }
)


def block_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    """Validate (kind ``content-block``) and decode one content block."""
    validate(data, "content-block")
    return _union_hooks[data["type"]](data)  # type: ignore[no-any-return]


def block_from_json(data: JsonInput) -> ContentBlock:
    """Validate and decode one content block from JSON text."""
    return block_from_dict(loads(data, "content-block"))


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    """One block as parsed JSON (wire names, Java key order and null conventions)."""
    return _converter.unstructure_hooks[block.__class__](block)  # type: ignore[no-any-return]


def block_to_json(block: ContentBlock) -> str:
    return dumps(block_to_dict(block)).decode()


def new_data_block_id() -> str:
    """A data-block id as AgentScope Java mints it: 32 lowercase hex characters."""
    return uuid.uuid4().hex


def thinking_signature(block: ThinkingBlock) -> str | None:
    """The reasoning signature (metadata ``signature``), replayed only to the provider that issued it."""
    value = (block.metadata or {}).get("signature")
    return value if isinstance(value, str) else None


def thinking_provider(block: ThinkingBlock) -> str | None:
    value = (block.metadata or {}).get("provider")
    return value if isinstance(value, str) else None


def is_redacted(block: ThinkingBlock) -> bool:
    """True only when the block says so (metadata ``redacted``); never inferred from empty text."""
    return (block.metadata or {}).get("redacted") is True


def tool_call_signature(block: ToolUseBlock) -> str | None:
    value = block.metadata.get("thoughtSignature")
    return value if isinstance(value, str) else None
