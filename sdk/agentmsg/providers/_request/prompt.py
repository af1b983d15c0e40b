"""The system prompt a formatter context builds (formatter-internals.md, "System Prompt Building"): the base prompt,
the list of the tools available, and a long-term memory section, as AgentScope's ``buildSystemPrompt`` lays them
out. Public as :func:`agentmsg.providers.system_prompt`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmsg.errors import ValidationError
from agentmsg.message import SystemMessage
from agentmsg.providers._request.tools import normalize_tools

__all__ = ["TOOLS_HEADING", "system_prompt"]

#: The line that opens the list of tools (the seed's words)
TOOLS_HEADING = "You have the following tools available:"


def system_prompt(
    base: str = "",
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    long_term_memory: str | Sequence[str] | None = None,
    name: str | None = None,
) -> SystemMessage:
    """The system message a formatter context builds, one text block laid out as the seed's
    ``buildSystemPrompt``::

        {base}

        You have the following tools available:
        - {tool name}: {tool description}
        ...

        <long_term_memory>
        {long_term_memory}
        </long_term_memory>

    ``base``: the agent's own prompt. ``tools``: the tool definitions, as ``format_request(tools=...)`` takes them
    (``{name, description, parameters}`` or OpenAI's ``{type: function, function: {...}}``): one line each, in
    order, ``- name`` alone for a tool without a description; no tools, no list. ``long_term_memory``: what the
    agent remembers of the user, text or a list of entries (one per line); none (None, empty), no section.

    Each section follows what comes before it after a blank line, as the seed writes it (each tool's line ends
    with a line break, so a memory section after the list follows two blank lines); with no ``base`` the first
    section starts the text. ``name``: the message's name (the speaker). The names listed are the ones given: a
    provider whose name rules differ gets the tools under mapped names (``tool-name-mapped``), the prompt as it is.
    Bad input raises :class:`~agentmsg.ValidationError` at its pointer (``/tools/0/name``, ``/base``,
    ``/long_term_memory/1``)."""
    if not isinstance(base, str):
        raise ValidationError.single("/base", "type", f"the base prompt is a string, got {type(base).__name__}")
    text = base
    listed = normalize_tools(tools)
    if listed:
        lines = "".join(f"- {t.name}: {t.description}\n" if t.description else f"- {t.name}\n" for t in listed)
        text += f"{_gap(text)}{TOOLS_HEADING}\n{lines}"
    memory = _memory(long_term_memory)
    if memory:
        text += f"{_gap(text)}<long_term_memory>\n{memory}\n</long_term_memory>"
    return SystemMessage(text, name=name)


def _gap(text: str) -> str:
    return "\n\n" if text else ""


def _memory(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Sequence):
        raise ValidationError.single(
            "/long_term_memory", "type", f"long-term memory is text or a list of texts, got {type(value).__name__}"
        )
    for i, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ValidationError.single(
                f"/long_term_memory/{i}", "type", f"a long-term memory entry is text, got {type(entry).__name__}"
            )
    return "\n".join(value)
