"""Names that moved keep working, with a DeprecationWarning: the clients pinned to one provider (``OpenAIClient``,
``AsyncAnthropicClient``, ...: now ``Client("openai")``), ``SPECS`` and ``ProviderSpec`` (now
``agentmsg.providers.get(name).spec``), the streams' old names (``EventStream``: now ``ReplyStream``, and
``agentmsg.web.EventEndpoint`` on the server side)."""

from __future__ import annotations

import pytest

import agentmsg
import agentmsg.clients
from agentmsg import UserMessage, providers
from agentmsg.clients import AsyncClient, AsyncReplyStream, Client, ReplyStream

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

CONVO = [UserMessage("What's the weather in San Francisco?")]


def test_clients_made_for_one_provider() -> None:
    with pytest.deprecated_call():
        from agentmsg.clients import AnthropicClient, AsyncAnthropicClient, OpenAIClient

    assert OpenAIClient(api_key="k").provider == "openai" and AsyncAnthropicClient(api_key="k").provider == "anthropic"
    assert OpenAIClient("openai", api_key="k").provider == "openai"
    with pytest.raises(ValueError, match="AnthropicClient is for anthropic, got provider 'openai'"):
        AnthropicClient("openai", api_key="k")  # was a bare TypeError (the provider given twice)
    with pytest.raises(ValueError, match="a provider is required: one of openai, "):
        Client(api_key="k")


PINNED = [
    ("OpenAIClient", "openai"),
    ("DeepSeekClient", "deepseek"),
    ("DashScopeCompatibleClient", "dashscope-compatible"),
    ("AnthropicClient", "anthropic"),
    ("GeminiClient", "gemini"),
    ("DashScopeClient", "dashscope"),
]


@pytest.mark.parametrize(("name", "provider"), PINNED, ids=[p[0] for p in PINNED])
def test_the_classes_pinned_to_a_provider_are_made_from_the_registry_and_deprecated(name: str, provider: str) -> None:
    """OpenAIClient and the others were twelve hand-written classes: now made from each spec's client_class, on
    first use. Importing one warns (use Client("openai")); it still fills the provider in, refuses another one,
    and isinstance holds for it and for the Client(provider) the warning asks for, not for another provider's."""
    import agentmsg.clients as clients

    assert name not in clients.__all__ and f"Async{name}" not in clients.__all__
    assert providers.get(provider).spec.client_class == name
    with pytest.deprecated_call(match=rf'agentmsg\.clients\.{name} is deprecated: use Client\("{provider}"\)'):
        pinned = getattr(clients, name)
    with pytest.deprecated_call(match=rf'use AsyncClient\("{provider}"\)'):
        apinned = getattr(clients, f"Async{name}")
    with pytest.deprecated_call():
        assert getattr(clients, name) is pinned  # (made once)
    assert issubclass(pinned, Client) and issubclass(apinned, AsyncClient) and not issubclass(apinned, Client)
    assert (pinned.__name__, pinned.__module__, apinned.__name__) == (name, "agentmsg.clients", f"Async{name}")
    made = pinned(api_key="k")
    assert made.provider == provider and isinstance(made, (pinned, Client)) and not isinstance(made, apinned)
    assert apinned(api_key="k").provider == provider
    assert isinstance(Client(provider, api_key="k"), pinned) and isinstance(AsyncClient(provider, api_key="k"), apinned)
    assert not isinstance(AsyncClient(provider, api_key="k"), pinned)
    other = "gemini" if provider != "gemini" else "openai"
    assert not isinstance(Client(other, api_key="k"), pinned)
    with pytest.raises(ValueError, match=rf"{name} is for {provider}, got provider '{other}'"):
        pinned(other, api_key="k")

    class Mine(pinned):  # type: ignore[valid-type,misc]  # (a caller's own subclass: isinstance as usual)
        pass

    assert isinstance(Mine(api_key="k"), pinned) and not isinstance(pinned(api_key="k"), Mine)
    assert not isinstance(Client(provider, api_key="k"), Mine)


def test_from_import_of_a_pinned_class_specs_and_provider_spec_keeps_working() -> None:
    with pytest.deprecated_call(match=r'OpenAIClient is deprecated: use Client\("openai"\)'):
        from agentmsg.clients import OpenAIClient
    with pytest.deprecated_call(match=r"SPECS is deprecated: use agentmsg\.providers\.get\(name\)\.spec"):
        from agentmsg.clients import SPECS
    with pytest.deprecated_call(match=r"ProviderSpec is deprecated: use agentmsg\.providers\.get\(name\)\.spec"):
        from agentmsg.clients import ProviderSpec

    assert OpenAIClient(api_key="k").provider == "openai"
    assert ProviderSpec is providers.Spec and {p.name: p.spec for p in providers.providers()} == SPECS
    assert not {"ProviderSpec", "SPECS"} & set(agentmsg.clients.__all__)


def test_the_old_names_of_the_streams_keep_working_with_a_deprecation_warning() -> None:
    """The client's stream and the ASGI endpoint were both EventStream: now ReplyStream / AsyncReplyStream and
    agentmsg.web.EventEndpoint. The old names are the same classes, and warn."""
    import agentmsg.clients as clients
    from agentmsg import web

    with pytest.deprecated_call(
        match=r"agentmsg\.clients\.EventStream is deprecated: it is now agentmsg\.clients\.ReplyStream"
    ):
        from agentmsg.clients import EventStream
    with pytest.deprecated_call(match=r"AsyncEventStream is deprecated: it is now agentmsg\.clients\.AsyncReplyStream"):
        assert clients.AsyncEventStream is AsyncReplyStream
    with pytest.deprecated_call(
        match=r"agentmsg\.web\.EventStream is deprecated: it is now agentmsg\.web\.EventEndpoint"
    ):
        from agentmsg.web import EventStream as WebEventStream
    assert EventStream is ReplyStream and WebEventStream is web.EventEndpoint
    stream = Client("openai", api_key="k").stream(CONVO)
    assert isinstance(stream, EventStream) and type(stream).__name__ == "ReplyStream"
    assert not {"EventStream", "AsyncEventStream"} & set(clients.__all__) and {
        "ReplyStream",
        "AsyncReplyStream",
    } <= set(clients.__all__)
    assert "EventStream" not in web.__all__ and "EventEndpoint" in web.__all__
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchStream'"):
        clients.NoSuchStream  # noqa: B018


def test_the_pinned_classes_type_checkers_see_are_the_registrys() -> None:
    """The deprecated pinned classes are written out for type checkers (``if TYPE_CHECKING:`` in
    agentmsg.clients, so that ``from agentmsg.clients import OpenAIClient`` is flagged as deprecated): exactly the
    classes the runtime makes from the registry's ``client_class``, each saying the call its warning says."""
    import ast
    from pathlib import Path

    import agentmsg.clients as clients

    tree = ast.parse(Path(clients.__file__).read_text(encoding="utf-8"))
    declared: dict[str, str] = {}
    for block in tree.body:
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING":
            for node in block.body:
                if isinstance(node, ast.ClassDef):
                    (decorator,) = node.decorator_list
                    assert isinstance(decorator, ast.Call) and isinstance(decorator.args[0], ast.Constant)
                    declared[node.name] = str(decorator.args[0].value)
    made = {}
    for entry in providers.providers():
        name = entry.spec.client_class
        if name:
            made[name] = f'use Client("{entry.name}")'
            made[f"Async{name}"] = f'use AsyncClient("{entry.name}")'
    assert declared == made
