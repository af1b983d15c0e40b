"""The reducer vectors (tests/conformance/reducer/) as the event tests read them."""

from __future__ import annotations

import json
from typing import Any

import orjson

from agentmsg import Reducer
from tests.conftest import ROOT

REDUCER = ROOT / "tests" / "conformance" / "reducer"
PROPOSED = REDUCER / "proposed"
# The shared vectors and the proposed ones (rules the TypeScript reducer does not follow yet), all run here.
CASES = sorted(p.stem for p in REDUCER.glob("*.json")) + sorted(f"proposed/{p.stem}" for p in PROPOSED.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    return json.loads((REDUCER / f"{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def events_of(case: dict[str, Any]) -> list[Any]:
    if "jsonl" in case:
        return [orjson.loads(line) for line in case["jsonl"].splitlines() if line.strip()]
    return case["events"]  # type: ignore[no-any-return]


def writable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


#: The vectors JSON text can carry (not those whose events, given as objects, hold lone surrogates).
TEXT_CASES = [name for name in CASES if "jsonl" in load(name) or writable(load(name)["events"])]


def feed_text(r: Reducer, data: bytes, where: str) -> None:
    """One event's JSON text fed on its own: text that is not JSON is unreadable, invalid UTF-8 is reported
    (and replaced) before the event it is in."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            event = orjson.loads(data.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            r.feed_unreadable(where)
            return
        if data.decode("utf-8", "replace").encode() != data:
            r.report("utf-8", rule="utf-8")
    r.feed(event)
