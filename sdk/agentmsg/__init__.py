"""agentmsg: schema-first messages and events for LLM agents, wire-compatible with AgentScope Java 2.x.

Everything public is importable from here::

    from agentmsg import Msg, UserMessage, AssistantMessage, TextBlock, validate, ValidationError
"""

from typing import TYPE_CHECKING, Any

from agentmsg._codec.legacy import read_legacy_keys
from agentmsg._codec.limits import Limits, limits
from agentmsg._codec.schemas import KINDS, closed_schema_documents, is_valid, schema_documents, schema_version, validate
from agentmsg._codec.timestamps import now_timestamp, parse_timestamp
from agentmsg._codec.unknown import find_unknown_keys
from agentmsg._version import __version__
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
from agentmsg.errors import AgentmsgError, LegacyKeyWarning, Problem, SizeLimitError, ValidationError
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

if TYPE_CHECKING:
    from agentmsg._wire.check import CheckReport, CheckStream, Finding, check, iter_check

#: names imported when first used: checking files (`agentmsg.check`) reads kinds and rules no other import needs
_LAZY = frozenset({"CheckReport", "CheckStream", "Finding", "check", "iter_check"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agentmsg._wire import check as checking

        value = getattr(checking, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentmsg' has no attribute {name!r}")
