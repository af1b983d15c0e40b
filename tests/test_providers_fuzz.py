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

Budget (tests/_support/budget.py): ``ROUNDS`` rounds over every recording of a provider in ``make test``, seeded
from ``AGENTMSG_FUZZ_SEED`` (default 0, so the run is reproducible); ``make fuzz`` gives each provider a quarter of
``AGENTMSG_FUZZ_SECONDS`` with a fresh seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from agentmsg import Msg, ValidationError, reduce_events, validate
from agentmsg.providers import anthropic, dashscope, gemini, openai
from tests._support.budget import SEED, rounds
from tests._support.mutators import mutate_json, mutate_payloads, random_cuts
from tests.conftest import ROOT

pytestmark = pytest.mark.fuzz

FIX = ROOT / "tests" / "fixtures" / "providers"
ROUNDS = 20
MODULES: dict[str, Any] = {"openai": openai, "anthropic": anthropic, "gemini": gemini, "dashscope": dashscope}


def _files(provider: str) -> list[Path]:
    pick = {
        "openai": [("openai", ""), ("dashscope", "compat_"), ("deepseek", "")],
        "dashscope": [("dashscope", "native_")],
        "anthropic": [("anthropic", "")],
        "gemini": [("gemini", "")],
    }[provider]
    out = [f for d, prefix in pick for f in sorted((FIX / d).iterdir()) if f.name.startswith(prefix)]
    return [f for f in out if f.suffix in (".sse", ".json", ".jsonl")]


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
    cut = list(mod.parse_stream(random_cuts(body, rng), reply_id="r"))
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
    for round_ in rounds(ROUNDS, share=1 / len(MODULES)):
        for f in files:
            raw = f.read_bytes()
            label = f"{f.name} (seed {SEED}, round {round_ + 1})"
            if f.suffix == ".json":
                _check_response(mod, json.dumps(mutate_json(json.loads(raw), rng)).encode(), label)
            else:
                _check_stream(mod, mutate_payloads(raw, f.suffix == ".sse", rng), rng, label)
