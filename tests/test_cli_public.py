"""The public names the command line is built on, where no other test reaches them directly: the CUSTOM
event names (``agentmsg.events``)."""

from __future__ import annotations

from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT
from agentmsg.providers import get


def test_the_custom_event_names_are_the_wire_names() -> None:
    """The names the provider parsers send their errors, problems and notes under (docs/streams.md)."""
    assert (ERROR_EVENT, PROBLEM_EVENT, NOT_KEPT_EVENT) == ("agentmsg.error", "agentmsg.problem", "agentmsg.not-kept")
    body = b'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: {nope\n\n'
    names = [e.get("name") for e in get("openai").parse_stream(body) if e["type"] == "CUSTOM"]
    assert PROBLEM_EVENT in names and ERROR_EVENT in names  # a payload not read; the stream cut (no finish)
