"""A provider defined here, in no registry, with cache markers and a vocabulary rule of its own: ``agentmsg.context``
places its markers and counts its tokens from its spec alone (``Spec.cache_markers``, ``TokenProfile.vocabs``), so
a new provider needs no edit in context/ (docs/adding-a-provider.md)."""

from __future__ import annotations

from typing import Any

import attrs

from agentmsg import AssistantMessage, SystemMessage, UserMessage
from agentmsg.context import count_tokens, place_cache_markers, trim
from agentmsg.context._tokenizers import counter
from agentmsg.providers import get
from agentmsg.providers.base import CacheMarkers, Entry, TokenProfile
from tests._support.providers import TOOLS, module


def _acme(**markers: Any) -> Entry:
    base = get("openai")
    spec = attrs.evolve(
        base.spec,
        name="acme-context",
        title="Acme",
        families=("acme",),
        cache_markers=CacheMarkers(models=lambda model: model.startswith("acme-2"), **markers),
        tokens=TokenProfile(vocab="o200k_base", own=True, vocabs=((("acme-1", "acme-1-*"), "cl100k_base"),)),
    )
    openai = module("openai")
    return Entry(spec, openai.format_request, openai.Reader, "agentmsg.providers.openai")


def _conversation() -> list[Any]:
    return [SystemMessage("You are helpful."), UserMessage("q1"), AssistantMessage("a1"), UserMessage("q2")]


def test_a_provider_outside_the_registry_takes_the_markers_its_spec_says() -> None:
    acme = _acme(tools=True)
    got = place_cache_markers(_conversation(), provider=acme, tools=TOOLS, model="acme-2", ttl="1h")
    assert [(p.where, p.pointer, p.value) for p in got.placed] == [
        ("tools", f"/tools/{len(TOOLS) - 1}", True),
        ("system", "/0", True),
        ("turn", "/2", True),
    ]
    assert got.notes == ("acme-context's cache has one lifetime: ttl 1h not set",)
    # its model rule: another model, or none named, takes no marker
    assert place_cache_markers(_conversation(), provider=acme, tools=TOOLS, model="acme-1").placed == ()
    assert place_cache_markers(_conversation(), provider=acme, tools=TOOLS).placed == ()
    # lifetimes, in order: a marker placed after a 5m one given takes 5m
    tools = [*TOOLS[:-1], {**TOOLS[-1], "_cache_control": {"ttl": "5m"}}]
    ordered = _acme(lifetimes=True, lifetimes_in_order=True)
    got = place_cache_markers(_conversation(), provider=ordered, tools=tools, model="acme-2", ttl="1h")
    assert [p.value for p in got.placed] == [{"ttl": "5m"}, {"ttl": "5m"}]
    # no tool marker where the spec says it takes none there
    got = place_cache_markers(_conversation(), provider=_acme(), tools=TOOLS, model="acme-2")
    assert [p.where for p in got.placed] == ["system", "turn"]


def test_a_provider_outside_the_registry_counts_with_its_vocabulary_rule() -> None:
    acme = _acme()
    msgs = _conversation()
    assert count_tokens(msgs, provider=acme, model="ACME-1-mini").method == "tokenizer:cl100k_base"
    assert count_tokens(msgs, provider=acme, model="acme-1").method == "tokenizer:cl100k_base"
    assert count_tokens(msgs, provider=acme, model="acme-10").method == "tokenizer:o200k_base"
    assert count_tokens(msgs, provider=acme, model="acme-2").method == "tokenizer:o200k_base"
    assert counter("cl100k_base").exact and counter("o200k_base").exact  # (bpe-openai, agentmsg[count], installed)
    # trim counts it by the same spec (not by a registry name the registry does not hold)
    kept = trim(msgs, 10**6, provider=acme, model="acme-1")
    assert kept.tokens == count_tokens(msgs, provider=acme, model="acme-1").total


def test_openai_picks_cl100k_for_gpt_4_and_gpt_3_5_only() -> None:
    """The spec's rule is the one count.py held: cl100k for gpt-4, gpt-4-* and gpt-3.5*, o200k for the others."""
    tokens = get("openai").spec.tokens
    assert tokens is not None
    for model in ("gpt-4", "GPT-4", "gpt-4-0613", "gpt-4-turbo", "gpt-3.5-turbo", "gpt-3.5"):
        assert tokens.for_model(model).vocab_for(model) == "cl100k_base", model
    for other in ("gpt-4o", "gpt-4.1", "gpt-40", "gpt-5", "o3", "ft:gpt-4-0613", None):
        assert tokens.for_model(other).vocab_for(other) == "o200k_base", other
