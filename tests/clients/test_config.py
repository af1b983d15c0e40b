"""The request the clients build from a provider's spec, without HTTP (``clients/_config.py``): the URL, the
headers and how the API key is sent."""

from __future__ import annotations

import httpx
import pytest

from agentmsg import providers
from agentmsg.clients import (
    AuthenticationError,
    BadRequestError,
)
from agentmsg.clients._config import request_headers, request_url
from agentmsg.providers import FormattedRequest

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

# ---- the request built from the spec ------------------------------------------------------------------------


def test_the_url_joins_the_base_url_and_the_path() -> None:
    request = FormattedRequest(body={}, path="/v1beta/models/{model}:streamGenerateContent?alt=sse", model="g-1")
    assert request_url("https://h", request, None) == "https://h/v1beta/models/g-1:streamGenerateContent?alt=sse"
    assert (
        request_url("https://h/?v=2", request, None) == "https://h/v1beta/models/g-1:streamGenerateContent?v=2&alt=sse"
    )
    plain = FormattedRequest(body={}, path="/chat/completions")
    assert (
        request_url("https://h/openai/d?api-version=1", plain, None)
        == "https://h/openai/d/chat/completions?api-version=1"
    )
    assert request_url("https://h", FormattedRequest(body={}, path="/m/{model}"), "m-2") == "https://h/m/m-2"
    # a model filled in is one path segment: '/' and '..' in its name cannot lead out of the path (the key goes along)
    counting = FormattedRequest(body={}, path="/v1beta/models/{model}:countTokens", model="../../admin/x")
    url = request_url("https://h/api", counting, None)
    assert url == "https://h/api/v1beta/models/..%2F..%2Fadmin%2Fx:countTokens"
    assert httpx.URL(url).path.startswith("/api/v1beta/models/")


@pytest.mark.parametrize("name", providers.NAMES)
def test_the_headers_send_the_key_as_the_spec_says(name: str) -> None:
    spec = providers.get(name).spec
    headers = request_headers(spec, "sk-1", FormattedRequest(body={}, stream=True), {})
    key = {"bearer": ("authorization", "Bearer sk-1")}.get(spec.auth, (spec.auth, "sk-1"))
    assert headers[key[0]] == key[1]
    assert headers["accept"] == "text/event-stream" and headers["content-type"] == "application/json"
    for k, v in spec.headers.items():
        assert headers[k.lower()] == v
    assert request_headers(spec, "k", FormattedRequest(body={}, stream=False), {})["accept"] == "application/json"


def test_each_layer_of_headers_replaces_the_one_before_whatever_its_case() -> None:
    spec = providers.Spec(
        name="p", title="P", base_url="https://h", env=("P_KEY",), auth="x-api-key", default_model="m",
        families=("p",), headers={"P-Version": "1"},
    )  # fmt: skip
    request = FormattedRequest(body={}, headers={"p-version": "2", "X-Extra": "r"})
    headers = request_headers(spec, "k", request, {"X-API-KEY": "other", "Content-Type": "application/json; x=1"})
    assert headers == {
        "content-type": "application/json; x=1",
        "accept": "application/json",
        "accept-encoding": "gzip, deflate",
        "p-version": "2",
        "x-extra": "r",
        "x-api-key": "other",
    }


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (None, "no API key: pass api_key= or set P_KEY or P_OTHER"),
        ("", "no API key"),
        ("sk-secret\xa0", "cannot carry"),
        ("sk-secret\nX: 1", "cannot carry"),
        (" sk-secret", "leading or trailing whitespace"),
    ],
)
def test_a_key_no_header_can_carry_is_refused_without_it(key: str | None, says: str) -> None:
    spec = providers.Spec(
        name="p", title="P", base_url="https://h", env=("P_KEY", "P_OTHER"), auth="bearer", default_model="m",
        families=("p",),
    )  # fmt: skip
    with pytest.raises(AuthenticationError, match=says) as info:
        request_headers(spec, key, FormattedRequest(body={}), {})
    assert "secret" not in str(info.value) and info.value.provider == "p"
    with pytest.raises(BadRequestError, match="'X-Token'") as binfo:
        request_headers(spec, "k", FormattedRequest(body={}), {"X-Token": "tok-secret "})
    assert "secret" not in str(binfo.value)


@pytest.mark.parametrize(
    ("provider", "headers", "refused"),
    [
        ("openai", {}, True),  # the key goes in Authorization: Bearer
        ("anthropic", {}, False),  # in x-api-key: Basic for the gateway beside it
        ("anthropic", {"Authorization": "Token t-1"}, True),  # the caller's own Authorization
    ],
)
def test_a_base_url_user_password_never_replaces_the_authorization_sent(
    provider: str, headers: dict[str, str], refused: bool
) -> None:
    """httpx sends a URL's ``user:password@`` as ``Authorization: Basic``, replacing the header the client set: an
    OpenAI key was never sent (the server saw only Basic), silently. Now a request whose Authorization would be
    replaced is refused before anything is sent; one whose key goes in another header is sent with both."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(401, json={"error": {"message": "no"}})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    url = "http://alice:pw@gateway.test/v1"
    client = Client(provider, base_url=url, api_key="sk-key-1", model="m", headers=headers, http_client=http)
    if refused:
        with pytest.raises(BadRequestError, match="base_url has a user:password@") as info:
            client.call([UserMessage("hi")])
        assert not seen and "pw" not in str(info.value)
    else:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage("hi")])
        assert seen[0]["authorization"] == "Basic YWxpY2U6cHc=" and seen[0]["x-api-key"] == "sk-key-1"


def test_an_at_sign_in_the_base_urls_query_is_no_user_password() -> None:
    """Only the URL's own ``user:password@`` is refused: an ``@`` in its query (no path before it) was taken for one."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(401, json={"error": {"message": "no"}})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = Client("openai", base_url="http://gateway.test?owner=a@b", api_key="sk-key-1", model="m", http_client=http)
    with pytest.raises(AuthenticationError):
        client.call([UserMessage("hi")])
    assert seen[0]["authorization"] == "Bearer sk-key-1"
