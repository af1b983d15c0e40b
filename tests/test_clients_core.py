"""The clients' core without HTTP: the retry policy (which statuses and failures are retried, Retry-After read in
each of its forms, the backoff and its cap, max_retry_after), the classification of a failure (status to class,
the provider's message and request id from each provider's error body), and the request built from a spec (URL,
headers, auth). Plain values in, decisions out: no server, no clock, no randomness (a fixed jitter and clock)."""

from __future__ import annotations

import datetime
import email.utils
import time

import attrs
import httpx
import pytest

from agentmsg import providers
from agentmsg.clients import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agentmsg.clients._config import request_headers, request_url
from agentmsg.clients._errors import (
    error_for_status,
    no_response,
    provider_message,
    reason,
    redirected,
    request_id,
    status_class,
)
from agentmsg.clients._retry import MAX_BACKOFF, RetryPolicy, retry_after, seconds
from agentmsg.providers import FormattedRequest

#: A Retry-After date's reference time: a whole second (an HTTP date has no fraction), fixed
NOW = 1_900_000_000.0


def policy(**kw: object) -> RetryPolicy:
    """A policy whose jitter is 1 and whose clock is NOW: its decisions are exact."""
    return RetryPolicy(**{"jitter": lambda: 1.0, "clock": lambda: NOW, **kw})  # type: ignore[arg-type]


# ---- Retry-After -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": " 2.5 "}, 2.5),  # (any case, spaces around)
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # ms first
        ({"retry-after-ms": "nan", "retry-after": "9"}, 9.0),  # an unreadable ms does not hide a good Retry-After
        ({"retry-after": "0"}, 0.0),
        ({}, None),
    ],
)
def test_retry_after_reads_seconds_and_milliseconds(headers: dict[str, str], wait: float | None) -> None:
    assert retry_after(headers, NOW) == wait
    assert retry_after(httpx.Headers(headers), NOW) == wait


@pytest.mark.parametrize("value", ["nan", "-5", "-inf", "inf", "1_0", "0x10", "1e3", "garbage", "", " "])
def test_a_retry_after_that_is_no_delay_is_ignored(value: str) -> None:
    """Retry-After nan or negative read as 0 (retry at once, no backoff), 1_0 as 10 (float() reads them);
    retry-after-ms nan overrode a good Retry-After. Now neither is read: the backoff (or the other header)."""
    assert seconds(value) is None
    assert retry_after({"retry-after": value}, NOW) is None
    assert retry_after({"retry-after-ms": value, "retry-after": "2"}, NOW) == 2.0


@pytest.mark.parametrize("zone", ["UTC", "Asia/Tokyo", "America/Los_Angeles"])
def test_retry_after_as_an_http_date_is_gmt(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP date is GMT: one without a zone (or -0000) was read as local time (nine hours off in Tokyo)."""
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        when = datetime.datetime.fromtimestamp(NOW + 30, datetime.timezone.utc)
        for value in (
            email.utils.formatdate(NOW + 30, usegmt=True),  # ... GMT
            when.strftime("%a, %d %b %Y %H:%M:%S"),  # no zone
            when.strftime("%a, %d %b %Y %H:%M:%S -0000"),
            when.astimezone(datetime.timezone(datetime.timedelta(hours=2))).strftime("%a, %d %b %Y %H:%M:%S +0200"),
        ):
            assert retry_after({"retry-after": value}, NOW) == 30.0, value
        assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, NOW) == 0.0  # passed: at once
    finally:
        monkeypatch.undo()
        time.tzset()


def test_an_http_date_is_counted_from_the_clock_now() -> None:
    soon = email.utils.formatdate(time.time() + 3600, usegmt=True)
    wait = retry_after({"retry-after": soon})  # (no now: the clock's)
    assert wait is not None and 3500 < wait <= 3600


# ---- the retry policy ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_statuses_worth_retrying(status: int) -> None:
    assert policy().retryable(status, {})
    assert policy().after_response(0, status, {}) == 0.5


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_statuses_not_worth_retrying(status: int) -> None:
    assert not policy().retryable(status, {})
    assert policy().after_response(0, status, {"retry-after": "1"}) is None


def test_x_should_retry_overrides_the_status() -> None:
    """A provider's x-should-retry (its SDK obeys it): false stops a 429's retries, true retries a 400; any other
    value is not read."""
    assert policy().after_response(0, 429, {"x-should-retry": "false"}) is None
    assert policy().after_response(0, 400, {"X-Should-Retry": "True"}) == 0.5
    assert policy().after_response(0, 503, {"x-should-retry": "maybe"}) == 0.5
    assert policy().after_response(0, 400, {"x-should-retry": "maybe"}) is None


def test_retries_stop_at_max_retries() -> None:
    p = policy(max_retries=2)
    assert [p.after_response(a, 500, {}) for a in range(4)] == [0.5, 1.0, None, None]
    assert [p.after_failure(a) for a in range(4)] == [0.5, 1.0, None, None]
    assert policy(max_retries=0).after_response(0, 429, {"retry-after": "1"}) is None
    assert policy(max_retries=0).after_failure(0) is None


def test_the_wait_is_the_servers_retry_after_up_to_max_retry_after() -> None:
    """The server's delay is waited as asked, up to max_retry_after (included); a longer one (or one no number
    can hold: it would be waited for ever) gives the backoff instead."""
    p = policy(backoff=0.25, max_retry_after=60.0, max_retries=3)
    assert p.after_response(0, 429, {"retry-after": "7"}) == 7.0
    assert p.after_response(1, 429, {"retry-after-ms": "1500"}) == 1.5
    assert p.after_response(0, 429, {"retry-after": "60"}) == 60.0
    assert p.after_response(0, 429, {"retry-after": email.utils.formatdate(NOW + 45, usegmt=True)}) == 45.0
    for value in ("61", "99999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "1e400", "soon"):
        assert p.after_response(0, 429, {"retry-after": value}) == 0.25, value
        assert p.after_response(2, 429, {"retry-after": value}) == 1.0, value


def test_the_backoff_doubles_up_to_its_cap() -> None:
    assert MAX_BACKOFF == 8.0
    p = policy(backoff=0.5, max_retries=10)
    assert [p.after_failure(a) for a in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert [policy(backoff=3.0).backoff_delay(a) for a in range(3)] == [3.0, 6.0, 8.0]
    assert policy(backoff=0.5, max_backoff=1.5).backoff_delay(5) == 1.5
    assert policy(backoff=0.5).backoff_delay(100_000) == 8.0  # (no OverflowError)
    assert policy(backoff=0.0).backoff_delay(3) == 0.0


def test_the_backoff_is_jittered_within_a_quarter() -> None:
    """The random factor is in [0.75, 1]: the default jitter's waits fall there, never above the cap."""
    assert policy(backoff=2.0, jitter=lambda: 0.75).backoff_delay(0) == 1.5
    assert policy(backoff=2.0, jitter=lambda: 0.75).backoff_delay(9) == 6.0
    p = RetryPolicy(backoff=2.0)
    waits = [p.backoff_delay(a) for a in (0, 1, 2, 3) for _ in range(200)]
    assert all(1.5 <= w <= 2.0 for w in waits[:200]) and all(6.0 <= w <= 8.0 for w in waits[400:])
    assert len(set(waits[:200])) > 1  # (random)


def test_a_client_hands_its_settings_to_the_policy() -> None:
    from agentmsg.clients import Client

    c = Client("openai", api_key="k", max_retries=5, backoff=0.1, max_retry_after=3.0)
    assert attrs.astuple(c._retry_policy())[:4] == (5, 0.1, MAX_BACKOFF, 3.0)
    c.max_retries = 1  # (an attribute changed after the client was made)
    assert c._retry_policy().max_retries == 1


# ---- classification of a failure -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, BadRequestError),
        (409, BadRequestError),
        (413, BadRequestError),
        (422, BadRequestError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (529, ServerError),
    ],
)
def test_an_error_status_is_its_class(status: int, cls: type[ProviderError]) -> None:
    assert status_class(status) is cls
    err = error_for_status("openai", status, b'{"error": {"message": "no"}}', {})
    assert type(err) is cls and (err.status_code, err.message, err.provider) == (status, "no", "openai")


#: Error bodies as each provider sends them: (body, message, parsed body's key to check, request id)
ERROR_BODIES = {
    "openai": (
        b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": null}}',
        "Incorrect API key provided",
        None,
    ),
    "anthropic": (
        b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_01"}',
        "Overloaded",
        "req_01",
    ),
    "gemini (a list)": (
        b'[{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}]',
        "API key not valid.",
        None,
    ),
    "gemini (status only)": (b'{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}', "RESOURCE_EXHAUSTED", None),
    "dashscope": (
        b'{"code": "InvalidApiKey", "message": "Invalid API-key provided.", "request_id": "6f3c"}',
        "Invalid API-key provided.",
        "6f3c",
    ),
    "dashscope (SSE)": (
        b'id:1\nevent:error\n:HTTP_STATUS/400\ndata:{"request_id":"req-1","code":"Arrearage","message":"Access'
        b' denied."}\n\n',
        "Access denied.",
        "req-1",
    ),
    "SSE without its blank line": (b'event:error\r\ndata:{"message":"no blank line"}', "no blank line", None),
    "a string error": (b'{"error": "model not found"}', "model not found", None),
    "msg": (b'{"msg": "busy", "requestId": "r9"}', "busy", "r9"),
}


@pytest.mark.parametrize("name", list(ERROR_BODIES))
def test_the_providers_message_and_request_id_from_its_error_body(name: str) -> None:
    body, message, rid = ERROR_BODIES[name]
    got, parsed, body_id = provider_message(body)
    assert (got, body_id) == (message, rid)
    assert isinstance(parsed, dict)
    err = error_for_status("p", 400, body, httpx.Headers({"x-request-id": "from-header"}))
    assert err.message == message and err.request_id == (rid or "from-header") and err.body == parsed


@pytest.mark.parametrize(
    ("body", "message", "parsed"),
    [
        (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
        (b"", "(empty body)", ""),
        (b"data: not json\n\n", "data: not json", "data: not json"),
        (b"x" * 5000, "x" * 500, "x" * 5000),
        (b'{"unexpected": 1}', '{"unexpected": 1}', {"unexpected": 1}),
    ],
)
def test_a_body_of_no_known_shape_is_said_as_its_text(body: bytes, message: str, parsed: object) -> None:
    assert provider_message(body) == (message, parsed, None)


@pytest.mark.parametrize(
    ("headers", "rid"),
    [
        ({"x-request-id": "a", "request-id": "b"}, "a"),
        ({"Request-Id": "b"}, "b"),
        ({"x-vendor-request-id": "c", "content-type": "x"}, "c"),
        ({"request-id": "b", "x-vendor-request-id": "c"}, "b"),
        ({"x-request-id": "", "x-vendor-request-id": "c"}, "c"),
        ({"content-type": "application/json"}, None),
    ],
)
def test_the_request_id_from_the_response_headers(headers: dict[str, str], rid: str | None) -> None:
    assert request_id(headers) == rid == request_id(httpx.Headers(headers))


def test_a_redirect_no_response_and_their_texts() -> None:
    err = redirected("p", 307, b"", httpx.Headers({"Location": "https://elsewhere/v1"}))
    assert isinstance(err, BadRequestError) and err.status_code == 307
    assert "redirects to https://elsewhere/v1: not followed (the API key would go along)" in err.message
    assert redirected("p", 301, b"Moved", {}).body == "Moved"
    request = httpx.Request("POST", "http://x", extensions={"timeout": {"read": 0.3, "connect": 2.0}})
    timeout = no_response("p", httpx.ReadTimeout("", request=request))
    assert type(timeout) is APITimeoutError
    assert timeout.message == "no response: no data within the read timeout (0.3 s)"
    assert reason(httpx.ConnectTimeout("timed out", request=request)) == (
        "no connection within the connect timeout (2 s)"
    )
    assert reason(httpx.PoolTimeout("")) == "no connection free in the pool within the pool timeout"
    refused = no_response("p", httpx.ConnectError("[Errno 111] Connection refused"))
    assert (
        type(refused) is APIConnectionError and refused.message == "connection failed: [Errno 111] Connection refused"
    )
    assert reason(httpx.RemoteProtocolError("")) == "RemoteProtocolError"


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
