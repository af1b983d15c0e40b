"""agentmsg: schema-first messages and events for LLM agents, wire-compatible with AgentScope Java 2.x.

Everything public is importable from here::

    from agentmsg import Msg, UserMessage, AssistantMessage, TextBlock, validate, ValidationError
"""

import importlib
from typing import TYPE_CHECKING, Any, Final

from agentmsg._version import __version__

if TYPE_CHECKING:  # (at run time each name is imported on its first use: _HOMES)
    from agentmsg._codec.legacy import read_legacy_keys
    from agentmsg._codec.limits import Limits, limits
    from agentmsg._codec.schemas import (
        KINDS,
        closed_schema_documents,
        is_valid,
        schema_documents,
        schema_version,
        validate,
    )
    from agentmsg._codec.timestamps import now_timestamp, parse_timestamp
    from agentmsg._codec.unknown import find_unknown_keys
    from agentmsg._wire.check import CheckReport, CheckStream, Finding, check, iter_check
    from agentmsg._wire.peek import Peeked
    from agentmsg._wire.records import read_records
    from agentmsg.blocks import (
        AudioBlock,
        Base64Source,
        ContentBlock,
        DataBlock,
        HintBlock,
        ImageBlock,
        Source,
        TextBlock,
        ThinkingBlock,
        ToolCallState,
        ToolResultBlock,
        ToolResultState,
        ToolUseBlock,
        URLSource,
        VideoBlock,
        block_from_dict,
        block_from_json,
        block_to_dict,
        block_to_json,
        is_redacted,
        new_data_block_id,
        thinking_provider,
        thinking_signature,
        tool_call_signature,
    )
    from agentmsg.conversation import decode_messages, encode_messages
    from agentmsg.errors import (
        AgentmsgError,
        LegacyKeyWarning,
        Problem,
        SizeLimitError,
        UnknownNameError,
        ValidationError,
    )
    from agentmsg.events import Reducer, SSEDecoder, emit_events, encode_sse, reduce_events, reduce_stream
    from agentmsg.message import AssistantMessage, Msg, MsgRole, SystemMessage, ToolResultMessage, UserMessage, new_id
    from agentmsg_models.chat_usage import ChatUsage
    from agentmsg_models.generate_reason import GenerateReason

__all__ = [
    "KINDS",
    "AgentmsgError",
    "AssistantMessage",
    "AudioBlock",
    "Base64Source",
    "ChatUsage",
    "CheckReport",
    "CheckStream",
    "ContentBlock",
    "DataBlock",
    "Finding",
    "GenerateReason",
    "HintBlock",
    "ImageBlock",
    "LegacyKeyWarning",
    "Limits",
    "Msg",
    "MsgRole",
    "Peeked",
    "Problem",
    "Reducer",
    "SSEDecoder",
    "SizeLimitError",
    "Source",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallState",
    "ToolResultBlock",
    "ToolResultMessage",
    "ToolResultState",
    "ToolUseBlock",
    "URLSource",
    "UnknownNameError",
    "UserMessage",
    "ValidationError",
    "VideoBlock",
    "__version__",
    "block_from_dict",
    "block_from_json",
    "block_to_dict",
    "block_to_json",
    "check",
    "closed_schema_documents",
    "decode_messages",
    "emit_events",
    "encode_messages",
    "encode_sse",
    "find_unknown_keys",
    "is_redacted",
    "is_valid",
    "iter_check",
    "limits",
    "new_data_block_id",
    "new_id",
    "now_timestamp",
    "parse_timestamp",
    "read_legacy_keys",
    "read_records",
    "reduce_events",
    "reduce_stream",
    "schema_documents",
    "schema_version",
    "thinking_provider",
    "thinking_signature",
    "tool_call_signature",
    "validate",
]

#: The module each public name comes from. ``import agentmsg`` imports none of them (every process pays the import:
#: each CLI run, ``agentmsg --help`` included, a serverless cold start): a name's module is imported when the name
#: is first used, ``from agentmsg import Msg`` included (tests/project/test_import.py).
_HOMES: Final = {
    "agentmsg._codec.legacy": ("read_legacy_keys",),
    "agentmsg._codec.limits": (
        "Limits",
        "limits",
    ),
    "agentmsg._codec.schemas": (
        "KINDS",
        "closed_schema_documents",
        "is_valid",
        "schema_documents",
        "schema_version",
        "validate",
    ),
    "agentmsg._codec.timestamps": (
        "now_timestamp",
        "parse_timestamp",
    ),
    "agentmsg._codec.unknown": ("find_unknown_keys",),
    "agentmsg._wire.peek": ("Peeked",),
    "agentmsg._wire.records": ("read_records",),
    "agentmsg.blocks": (
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
    ),
    "agentmsg.conversation": (
        "decode_messages",
        "encode_messages",
    ),
    "agentmsg.errors": (
        "AgentmsgError",
        "LegacyKeyWarning",
        "Problem",
        "SizeLimitError",
        "UnknownNameError",
        "ValidationError",
    ),
    "agentmsg.events": (
        "Reducer",
        "SSEDecoder",
        "emit_events",
        "encode_sse",
        "reduce_events",
        "reduce_stream",
    ),
    "agentmsg.message": (
        "AssistantMessage",
        "Msg",
        "MsgRole",
        "SystemMessage",
        "ToolResultMessage",
        "UserMessage",
        "new_id",
    ),
    "agentmsg_models.chat_usage": ("ChatUsage",),
    "agentmsg_models.generate_reason": ("GenerateReason",),
    "agentmsg._wire.check": (
        "CheckReport",
        "CheckStream",
        "Finding",
        "check",
        "iter_check",
    ),
}
_HOME: Final = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
    elif name.startswith("_"):
        raise AttributeError(f"module 'agentmsg' has no attribute {name!r}")
    else:  # a submodule (`agentmsg.events.Reducer` after `import agentmsg`, as when the package imported them all)
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'agentmsg' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
