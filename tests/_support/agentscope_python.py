"""AgentScope Python 2.x's formatters (the ``agentscope`` package) on an agentmsg conversation: the oracle of the
formatter values for the providers whose AgentScope Java formatters cannot be had (Gemini, DashScope:
tests/conformance/test_java_formatters.py).

An agentmsg / AgentScope Java message is rebuilt as AgentScope Python 2.x has it: roles ``user``, ``assistant``,
``system`` (a TOOL message, which 2.x does not have, is an assistant message holding the results, AgentScope's own
layout), media blocks as ``DataBlock`` (a URL's MIME type from its ``mime_type`` or its extension), a tool call's
``input`` as its JSON text (the raw ``content`` when there is one), a hint as a ``HintBlock``. Every 2.x message has
a name: an unnamed one gets agentmsg's label for it, its role in title case. AgentScope's Gemini formatter
downloads every media URL to send it inline: here the download is answered from memory by :func:`url_bytes` (no
network), so the comparison can tell which URL an inline part came from."""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
from collections.abc import Iterator
from typing import Any, Literal

#: agentmsg provider name -> AgentScope Python's (chat, multi-agent) formatter classes
FORMATTERS = {
    "gemini": ("GeminiChatFormatter", "GeminiMultiAgentFormatter"),
    "dashscope": ("DashScopeChatFormatter", "DashScopeMultiAgentFormatter"),
}


def url_bytes(url: str) -> bytes:
    """What a media URL serves in these runs (each URL its own bytes)."""
    return b"agentmsg-oracle:" + url.encode()


class _Response:
    def __init__(self, url: str) -> None:
        self.content = url_bytes(url)

    def raise_for_status(self) -> None:
        return None


class _Requests:
    @staticmethod
    def get(url: str, timeout: float | None = None) -> _Response:
        return _Response(url)


@contextlib.contextmanager
def _no_downloads() -> Iterator[None]:
    import agentscope.formatter._gemini_formatter as gemini_module

    saved = getattr(gemini_module, "requests")  # noqa: B009 (the module's own import, not an exported name)
    setattr(gemini_module, "requests", _Requests)  # noqa: B010
    try:
        yield
    finally:
        setattr(gemini_module, "requests", saved)  # noqa: B010


def _media_type(source: dict[str, Any], kind: str) -> str:
    if source.get("type") == "base64":
        return str(source["media_type"])
    given = source.get("mime_type")
    if given:
        return str(given)
    guessed = mimetypes.guess_type(source["url"])[0]
    return guessed or f"{kind}/*"


def _source(source: dict[str, Any], kind: str) -> Any:
    from agentscope.message import Base64Source, URLSource

    if source.get("type") == "base64":
        return Base64Source(data=source["data"], media_type=source["media_type"])
    return URLSource(url=source["url"], media_type=_media_type(source, kind))


def _block(block: dict[str, Any]) -> Any:
    from agentscope.message import (
        DataBlock,
        HintBlock,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
        ToolResultBlock,
    )

    kind = block["type"]
    if kind == "text":
        return TextBlock(text=block["text"])
    if kind == "thinking":
        return ThinkingBlock(thinking=block["thinking"])
    if kind == "hint":
        return HintBlock(hint=block["hint"], source=block.get("source"))
    if kind in ("image", "audio", "video", "data"):
        return DataBlock(source=_source(block["source"], kind), name=block.get("name"))
    if kind == "tool_use":
        raw = block.get("content")
        text = raw if isinstance(raw, str) else json.dumps(block.get("input") or {}, separators=(",", ":"))
        return ToolCallBlock(id=block["id"], name=block["name"], input=text)
    if kind == "tool_result":
        output = [_block(b) for b in block.get("output", [])]
        return ToolResultBlock(id=block["id"], name=block["name"], output=output, state=block.get("state", "running"))
    raise ValueError(f"no AgentScope Python block for {kind!r}")


#: AgentScope Java / agentmsg role -> AgentScope Python 2.x role (2.x has no TOOL role: the results go in an
#: assistant message, its own layout)
ROLES: dict[str, Literal["user", "assistant", "system"]] = {
    "USER": "user",
    "ASSISTANT": "assistant",
    "SYSTEM": "system",
    "TOOL": "assistant",
}


def messages(msgs: list[dict[str, Any]]) -> list[Any]:
    """The agentmsg messages (JSON) as AgentScope Python 2.x messages."""
    from agentscope.message import Msg

    out = []
    for m in msgs:
        role = ROLES[m["role"]]
        name = m.get("name") or m["role"].title()
        out.append(Msg(name=name, role=role, content=[_block(b) for b in m["content"]]))
    return out


def format_messages(provider: str, mode: str, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """AgentScope Python's formatter (``mode``: ``chat`` or ``multi``) of ``provider`` on the conversation."""
    import agentscope.formatter as formatters

    chat, multi = FORMATTERS[provider]
    cls = getattr(formatters, chat if mode == "chat" else multi)
    # DashScope: a reasoning model's configuration, reasoning_content goes back (application/x-thinking), as agentmsg
    # sends it
    formatter = cls(input_types=[*cls().input_types, "application/x-thinking"]) if provider == "dashscope" else cls()
    with _no_downloads():
        formatted: list[dict[str, Any]] = asyncio.run(formatter.format(messages(msgs)))
        return formatted
