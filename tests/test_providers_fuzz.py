"""Seeded mutation fuzzing of the provider parsers over the recorded responses and streams.

Every recorded payload is mutated (a value swapped for one of another JSON type, a number beyond 64 bits,
a key removed) and the body is fed whole and cut at random points. The oracles:

* ``parse_stream`` never raises, and every event it emits is valid against the AgentEvent schema (the
  promise ``reduce_events(..., trusted=True)`` relies on); a payload it cannot follow is recorded as a
  problem event, and the events before it are kept;
* the trusted and the checked reduction give the same messages, and every message is written back and read
  again unchanged;
* the body cut at any points gives the same events as the body whole (ids and times aside);
* ``parse_response`` returns such a message or raises :class:`agentmsg.ValidationError`, nothing else.

Budget: ``AGENTMSG_FUZZ_SECONDS`` (default 15) for the whole test, seeds from ``AGENTMSG_FUZZ_SEED``
(default 0, so ``make test`` is reproducible; ``make fuzz`` runs longer with a fresh seed).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from agentmsg import Msg, ValidationError, reduce_events, validate
from agentmsg.providers import anthropic, dashscope, gemini, openai
from tests.fuzz.msg_strategies import json_paths

FIX = Path(__file__).parent / "fixtures" / "providers"
BUDGET = float(os.environ.get("AGENTMSG_FUZZ_SECONDS", "15"))
SEED = int(os.environ.get("AGENTMSG_FUZZ_SEED", "0"))
MODULES: dict[str, Any] = {"openai": openai, "anthropic": anthropic, "gemini": gemini, "dashscope": dashscope}
VALUES: list[Any] = [
    None, 0, -1, 5, 1.5, 1e308, 2**70, -(2**70), True, False, "", "x", "null", "[DONE]", "é" * 3,
    [], [None], [1, "a"], {}, {"type": None}, {"a": {"b": []}},
]  # fmt: skip


def _files(provider: str) -> list[Path]:
    pick = {
        "openai": [("openai", ""), ("dashscope", "compat_"), ("deepseek", "")],
        "dashscope": [("dashscope", "native_")],
        "anthropic": [("anthropic", "")],
        "gemini": [("gemini", "")],
    }[provider]
    out = [f for d, prefix in pick for f in sorted((FIX / d).iterdir()) if f.name.startswith(prefix)]
    return [f for f in out if f.suffix in (".sse", ".json", ".jsonl")]


def _mutate(value: Any, rng: random.Random) -> Any:
    value = json.loads(json.dumps(value))
    paths = [p for p in json_paths(value) if p]
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not paths:
            break
        path = rng.choice(paths)
        node = value
        try:
            for key in path[:-1]:
                node = node[key]
            if isinstance(node, dict) and rng.random() < 0.15:
                del node[path[-1]]
            else:
                node[path[-1]] = json.loads(json.dumps(rng.choice(VALUES)))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced this path
    return value


def _mutated_stream(raw: bytes, sse: bool, rng: random.Random) -> bytes:
    lines = raw.split(b"\n")
    if sse:
        candidates = [
            i for i, ln in enumerate(lines) if ln.startswith(b"data:") and ln[5:].strip() not in (b"", b"[DONE]")
        ]
    else:
        candidates = [i for i, ln in enumerate(lines) if ln.strip()]
    for _ in range(rng.choice((1, 2))):
        i = rng.choice(candidates)
        payload = json.loads(lines[i][5:] if sse else lines[i])
        lines[i] = (b"data: " if sse else b"") + json.dumps(_mutate(payload, rng)).encode()
    return b"\n".join(lines)


def _cut(body: bytes, rng: random.Random) -> list[bytes]:
    points = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 8))))
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def _comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in ("id", "createdAt", "replyId")} for e in events]


def _round_trips(messages: list[Any]) -> None:
    for m in messages:
        data = m.to_json_bytes()
        assert Msg.from_json(data).to_json_bytes() == data


def _check_stream(mod: Any, body: bytes, rng: random.Random, label: str) -> None:
    events = list(mod.parse_stream(body, reply_id="r"))
    for e in events:
        validate(e, "event")  # raises: the parser emitted an event its promise does not cover
    trusted = reduce_events(events, trusted=True)
    checked = reduce_events(events)
    assert [m.to_json_bytes() for m in trusted] == [m.to_json_bytes() for m in checked], label
    _round_trips(trusted)
    cut = list(mod.parse_stream(_cut(body, rng), reply_id="r"))
    assert _comparable(cut) == _comparable(events), label


def _check_response(mod: Any, body: bytes, label: str) -> None:
    try:
        msg = mod.parse_response(body)
    except ValidationError:
        return
    _round_trips([msg])


@pytest.mark.parametrize("provider", list(MODULES))
def test_provider_parsers_survive_mutated_payloads(provider: str) -> None:
    mod = MODULES[provider]
    rng = random.Random(f"{SEED}/{provider}")
    files = _files(provider)
    deadline = time.monotonic() + BUDGET / len(MODULES)
    rounds = 0
    while time.monotonic() < deadline or rounds < 2:
        rounds += 1
        for f in files:
            raw = f.read_bytes()
            label = f"{f.name} (seed {SEED}, round {rounds})"
            if f.suffix == ".json":
                _check_response(mod, json.dumps(_mutate(json.loads(raw), rng)).encode(), label)
            else:
                _check_stream(mod, _mutated_stream(raw, f.suffix == ".sse", rng), rng, label)
