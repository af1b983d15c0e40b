"""The clients pinned to one provider (``OpenAIClient``, ``AnthropicClient``, ...)."""

from __future__ import annotations

import pytest

from agentmsg.clients import AnthropicClient, AsyncAnthropicClient, Client, OpenAIClient


def test_clients_made_for_one_provider() -> None:
    assert OpenAIClient(api_key="k").provider == "openai" and AsyncAnthropicClient(api_key="k").provider == "anthropic"
    assert OpenAIClient("openai", api_key="k").provider == "openai"
    with pytest.raises(ValueError, match="AnthropicClient is for anthropic, got provider 'openai'"):
        AnthropicClient("openai", api_key="k")  # was a bare TypeError (the provider given twice)
    with pytest.raises(ValueError, match="a provider is required: one of openai, "):
        Client(api_key="k")
