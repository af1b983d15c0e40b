"""The public names the command line is built on, where no other test reaches them directly: the CUSTOM
event names and the format sniffer (``agentmsg.events``)."""

from __future__ import annotations

from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT, sniff_format
from agentmsg.providers import get


def test_the_custom_event_names_are_the_wire_names() -> None:
    """The names the provider parsers send their errors, problems and notes under (docs/streams.md)."""
    assert (ERROR_EVENT, PROBLEM_EVENT, NOT_KEPT_EVENT) == ("agentmsg.error", "agentmsg.problem", "agentmsg.not-kept")
    body = b'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: {nope\n\n'
    names = [e.get("name") for e in get("openai").parse_stream(body) if e["type"] == "CUSTOM"]
    assert PROBLEM_EVENT in names and ERROR_EVENT in names  # a payload not read; the stream cut (no finish)


def test_sniff_format_tells_the_formats_read_events_reads() -> None:
    assert sniff_format(b"data: {}\n\n") == "sse"
    assert sniff_format(b"\xef\xbb\xbf\n  : a comment\n") == "sse"
    assert sniff_format(b'{"type": "AGENT_START"}\n') == "jsonl"
    assert sniff_format(b'[{"type": "AGENT_START"}]') == "values"
    assert sniff_format(b'{\n  "type": "AGENT_START"\n}\n') == "values"  # pretty-printed, one after another
    assert sniff_format(b"a log line\n") == "jsonl"
    for undecided in (b"", b"  \n", b"da", b"{"):
        assert sniff_format(undecided) is None, undecided
    assert sniff_format(b" " * 70_000 + b"data: {}\n\n") == "jsonl"  # (blanks beyond 64 KiB: no SSE)
