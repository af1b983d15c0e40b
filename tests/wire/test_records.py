"""``read_records`` (``agentmsg validate``) and the event reducer (``agentmsg reduce``) read the same lines of the
same JSON Lines bytes: a line ends at LF (a CRLF is one end), a CR anywhere else ends nothing, and a line that is
not JSON is one problem with the same rule on the same line in both."""

from __future__ import annotations

import io
import re

import orjson
import pytest

from agentmsg import Problem, Reducer, read_records
from agentmsg.events import reduce_stream
from tests._support.events import ev


def _e(n: int) -> bytes:
    event = ev(n, "CUSTOM", name="app.note", value={})
    del event["replyId"]  # (CUSTOM has none: a line of an unknown key sends the run off the fast path)
    return orjson.dumps(event)


LONE = b'{"type":"CUSTOM","id":"e9","name":"\\ud800","value":{}}'

#: bytes -> the (line, rule) of each line that cannot be read, as both readers must say it
CASES: dict[str, tuple[bytes, list[tuple[int, str]]]] = {
    "cr-between-values": (_e(1) + b"\r" + _e(2) + b"\n", [(1, "json")]),
    "cr-between-values-then-a-line": (_e(1) + b"\r" + _e(2) + b"\n" + _e(3) + b"\n", [(1, "json")]),
    "cr-line-ends-only": (_e(1) + b"\r" + _e(2) + b"\r", [(1, "json")]),
    "cr-no-final-end": (_e(1) + b"\r" + _e(2), [(1, "json")]),
    "cr-on-the-second-line": (_e(1) + b"\n" + _e(2) + b"\r" + _e(3) + b"\n", [(2, "json")]),
    "two-values-on-a-line": (_e(1) + b" " + _e(2) + b"\n" + _e(3) + b"\n", [(1, "json")]),
    "no-final-lf": (_e(1) + b"\n" + _e(2), []),
    "lone-trailing-cr": (_e(1) + b"\n" + _e(2) + b"\r", []),
    "crlf": (_e(1) + b"\r\n" + _e(2) + b"\r\n", []),
    "lone-surrogate-escape": (_e(1) + b"\n" + LONE + b"\n" + _e(3) + b"\n", [(2, "lone-surrogate")]),
}


def _said(problems: list[Problem]) -> list[tuple[int, str]]:
    out = []
    for p in problems:
        found = re.match(r"line (\d+): ", p.message)
        assert found is not None, p
        out.append((int(found[1]), p.rule))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_and_reduce_read_the_same_lines(name: str) -> None:
    data, bad = CASES[name]
    records = list(read_records(data))
    assert [(r.line, r.problem.rule) for r in records if r.problem is not None] == bad
    whole = Reducer()
    whole.feed_jsonl(data)
    whole.finish()
    assert _said(whole.problems) == bad
    streamed = Reducer()
    reduce_stream(io.BytesIO(data), reducer=streamed)
    assert _said(streamed.problems) == bad
    # The reducer counts each line as one event (read or not), as read_records counts its records.
    assert [p.pointer for p in whole.problems] == [f"/{line - 1}" for line, _ in bad]
    assert len(records) == data.replace(b"\r\n", b"\n").rstrip(b"\r\n").count(b"\n") + 1
