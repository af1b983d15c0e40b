"""The provider registry (``agentmsg.providers.get``): every entry reads its variant's replies, whole and streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import agentmsg
from agentmsg import reduce_events
from tests._support.providers import FIXTURES, module


@pytest.mark.parametrize(
    ("name", "response", "stream", "family"),
    [
        ("deepseek", "deepseek/chat_completion_reasoner.json", None, "deepseek"),
        (
            "dashscope-compatible",
            "dashscope/compat_chat_completion_reasoning.json",
            "dashscope/compat_stream_reasoning.sse",
            "dashscope",
        ),
    ],
)
def test_registry_parses_for_its_variant(name: str, response: str, stream: str | None, family: str) -> None:
    """get(name) passes its variant to the parse functions as to format_request: the reasoning's
    provenance names the variant's family (so it is replayed to that provider, not dropped as
    foreign); an explicit variant still wins."""
    from agentmsg.providers import get

    provider = get(name)

    def origins(msg: agentmsg.Msg) -> set[Any]:
        return {agentmsg.thinking_provider(t) for t in msg.blocks("thinking")}

    body = (FIXTURES / response).read_bytes()
    assert origins(module("openai").parse_response(body)) == {"openai"}  # the module's default variant
    assert origins(provider.parse_response(body)) == {family}
    with pytest.deprecated_call(match="variant= on a registry entry"):  # (the old way to another variant)
        assert origins(provider.parse_response(body, variant="openai")) == {"openai"}
    starts = [e for e in provider.response_events(body) if e["type"] == "THINKING_BLOCK_START"]
    assert starts and {e["provider"] for e in starts} == {family}
    # the request the reply is replayed in keeps the reasoning (no thinking-dropped)
    replay = provider.format_request([agentmsg.UserMessage("hi"), provider.parse_response(body)])
    assert "thinking-dropped" not in [p.rule for p in replay.diagnostics]
    if stream is not None:
        data = (FIXTURES / stream).read_bytes()
        assert origins(reduce_events(list(provider.parse_stream(data)))[0]) == {family}
        parser = provider.stream_parser()
        assert origins(reduce_events(parser.feed(data) + parser.close())[0]) == {family}
        with pytest.deprecated_call(match="use stream_parser"):  # (the old name)
            provider.StreamParser()


def test_the_fixture_helpers_read_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new provider's fixtures folder (named as its registry name) is read by its module with no edit of the test
    helpers: tests/_support/providers.py finds the module through the registry, here one defined in this test."""
    from agentmsg import providers
    from agentmsg.providers.base import Entry
    from tests._support.providers import parser_for

    base = providers.get("openai")
    assert isinstance(base, Entry)
    spec = attrs.evolve(base.spec, name="acme-fixtures", title="Acme")
    entry = Entry(spec, base.module.format_request, base.module.Reader, "agentmsg.providers.openai")
    monkeypatch.setitem(providers._load(), "acme-fixtures", entry)
    assert module("acme-fixtures") is base.module
    assert parser_for(FIXTURES / "acme-fixtures" / "reply.json") is base.module
    for name in providers.NAMES:
        provider = providers.get(name)
        assert isinstance(provider, Entry) and module(name) is provider.module


def test_the_recorded_payloads_helper_cuts_a_jsonl_stream_as_the_sdk_does(tmp_path: Path) -> None:
    """The oracle tests cut a recorded ``.jsonl`` with bytes.splitlines, which also ends a line at a CR alone: JSON
    space inside a record, which the SDK reads whole (JSON Lines end at LF), was a JSONDecodeError there."""
    from tests._support.providers import comparable, recorded_payloads, reduce_checked

    recorded = FIXTURES / "dashscope" / "native_stream_reasoning_tool_call_sdkprint.jsonl"
    spaced = tmp_path / recorded.name
    spaced.write_bytes(recorded.read_bytes().replace(b'{"', b'{\r"'))
    assert spaced.read_bytes().count(b"\r") > 2 and b"\r\n" not in spaced.read_bytes()
    reader = module("dashscope")
    assert comparable(reduce_checked(list(reader.parse_stream(spaced.read_bytes())))) == comparable(
        reduce_checked(list(reader.parse_stream(recorded.read_bytes())))
    )
    payloads = recorded_payloads(spaced)
    assert payloads == recorded_payloads(recorded) and len(payloads) == recorded.read_bytes().count(b"\n") == 20


def test_get_returns_a_provider_given_as_it_is() -> None:
    """The functions that take a registry name or a Provider (count_tokens, trim, place_cache_markers) resolve it
    with get(), which returns a Provider as it is: one not in the registry too."""
    import attrs

    from agentmsg.providers import get
    from agentmsg.providers.base import Entry

    entry = get("anthropic")
    assert isinstance(entry, Entry)
    own = attrs.evolve(entry, spec=attrs.evolve(entry.spec, name="not-registered"))
    assert get(entry) is entry and get(own) is own


@pytest.mark.parametrize("bad", [5, None, object(), b"openai", ["openai"]])
def test_get_refuses_what_is_neither_a_name_nor_a_provider(bad: object) -> None:
    """get() returned anything that was not a str as it was, so a wrong argument went on to fail far away (a bare
    AttributeError) or not at all: ``agentmsg.check(..., provider=5)`` took it. Now it is a ValidationError
    naming the argument, for every function that resolves a provider with get()."""
    import agentmsg
    from agentmsg.providers import get

    calls: list[Callable[[], object]] = [lambda: get(bad)]  # type: ignore[arg-type]
    if bad is not None:  # (check's provider=None: none given)
        calls.append(lambda: agentmsg.check(b"{}", provider=bad))  # type: ignore[arg-type]
    for call in calls:
        with pytest.raises(agentmsg.ValidationError) as info:
            call()
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/provider", "type")]


def test_the_registry_table_names_what_each_module_serves() -> None:
    """The registry's names (``NAMES``, the CLI's ``--provider`` choices) come from a table, so that listing them
    imports no provider module (``agentmsg format --help`` imported all five, ~110 ms): the table is what the
    modules' ``PROVIDERS`` declare, module by module and in order."""
    import importlib

    from agentmsg import providers

    for name, names in providers._SERVES.items():
        served = importlib.import_module(f"agentmsg.providers.{name}").PROVIDERS
        assert tuple(entry.spec.name for entry in served) == names, name
    assert tuple(provider.spec.name for provider in providers.providers()) == providers._NAMES == providers.NAMES
    assert tuple(providers._SERVES) == providers.MODULES


def test_the_registry_refuses_a_module_its_table_misnames(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that serves other names than the table says (one renamed or added in the module alone) is refused
    when the registry loads, not taken with names the CLI does not offer."""
    from agentmsg import providers

    table = dict(providers._SERVES, anthropic=("claude",))
    monkeypatch.setattr(providers, "_SERVES", table)
    monkeypatch.setattr(providers, "_registry", {})
    monkeypatch.setattr(providers, "_served", {})
    refused = r"agentmsg\.providers\.anthropic serves \('anthropic',\)"
    with pytest.raises(RuntimeError, match=refused):  # get() imports the module serving the name, and checks it
        providers.get("claude")
    assert providers.get("openai").spec.name == "openai"  # (a module of its own, which serves what the table says)
    with pytest.raises(RuntimeError, match=refused):  # listing the registry imports and checks every module
        providers.providers()


_ONE_MODULE = """
import json, sys
from agentmsg import providers
served = providers._SERVES["openai"]  # (every name the module serves: its OpenAI-compatible variants too)
entries = {name: providers.get(name) for name in served}
imported = sorted(m for m in sys.modules if m.startswith("agentmsg.providers."))
names = list(providers.NAMES)
listed = {p.spec.name: p for p in providers.providers()}
print(json.dumps({
    "imported": imported,
    "names": names,
    "listed": list(listed),
    "same": {name: entry is listed[name] for name, entry in entries.items()},
}))
"""


def test_get_imports_the_one_module_that_serves_the_name() -> None:
    """``get("openai")`` imported every provider module (the registry's first use loaded it whole), so
    ``agentmsg format --provider openai`` paid for every vendor's (392 -> 354 ms, best of 10). It imports the module
    the table names for it alone (its other names too: one module); the registry's names and list are still the
    whole table's, in its order, with the entries get() returned."""
    import json
    import subprocess
    import sys

    from agentmsg import providers

    done = subprocess.run([sys.executable, "-c", _ONE_MODULE], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    modules = {f"agentmsg.providers.{module}" for module in providers.MODULES}
    assert set(report["imported"]) & modules == {"agentmsg.providers.openai"}
    assert tuple(report["names"]) == tuple(report["listed"]) == providers._NAMES
    assert report["same"] == dict.fromkeys(providers._SERVES["openai"], True) and len(report["same"]) > 1
