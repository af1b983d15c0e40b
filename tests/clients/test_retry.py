"""The clients' retry policy without HTTP (``clients/_retry.py``): which statuses and failures are retried,
Retry-After read in each of its forms, the backoff and its cap, max_retry_after. Plain values in, decisions out: no
server, no clock, no randomness (a fixed jitter and clock)."""

from __future__ import annotations

import datetime
import email.utils
import time

import attrs
import httpx
import pytest

from agentmsg import UserMessage
from agentmsg.clients import Client, RateLimitError
from agentmsg.clients._retry import MAX_BACKOFF, RetryPolicy, retry_after, seconds
from agentmsg.testing import ReplayServer, Reply

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

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
    c.backoff = 0.2
    assert attrs.astuple(c._retry_policy())[:4] == (1, 0.2, MAX_BACKOFF, 3.0)
    c.max_retry_after = 4.0
    assert attrs.astuple(c._retry_policy())[:4] == (1, 0.2, MAX_BACKOFF, 4.0)


# ---- each unit and the caps at their edge (issue 28, class 9) --------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "1500"}, 1.5),  # milliseconds: 1.5 s, not 1500 s (nor 15)
        ({"retry-after-ms": "2"}, 0.002),
        ({"retry-after": "2"}, 2.0),  # seconds: 2 s, not 2 ms
        ({"retry-after": "1500"}, 1500.0),
        ({"retry-after": email.utils.formatdate(NOW + 2, usegmt=True)}, 2.0),  # a date: 2 s from now
        ({"retry-after": email.utils.formatdate(NOW - 2, usegmt=True)}, 0.0),  # passed: at once
    ],
)
def test_each_form_of_retry_after_is_read_in_its_own_unit(headers: dict[str, str], wait: float) -> None:
    assert retry_after(headers, NOW) == wait
    assert policy(max_retry_after=2000.0).after_response(0, 429, headers) == wait


@pytest.mark.parametrize(
    ("headers", "waited"),
    [
        ({"retry-after-ms": "60000"}, True),  # exactly the cap, in each form: waited as asked
        ({"retry-after-ms": "60001"}, False),  # a millisecond over it: the backoff
        ({"retry-after": "60"}, True),
        ({"retry-after": "60.001"}, False),
        ({"retry-after": email.utils.formatdate(NOW + 60, usegmt=True)}, True),
        ({"retry-after": email.utils.formatdate(NOW + 61, usegmt=True)}, False),
    ],
)
def test_max_retry_after_holds_in_seconds_for_every_form(headers: dict[str, str], waited: bool) -> None:
    asked = retry_after(headers, NOW)
    p = policy(backoff=0.25, max_retry_after=60.0)
    assert p.after_response(1, 503, headers) == (asked if waited else 0.5)


def test_the_backoff_cap_is_reached_exactly_and_never_passed() -> None:
    """backoff * 2**attempt grows to max_backoff and stays there: exactly at the cap when the doubling lands
    on it, the cap itself when it would pass it (each attempt up to 200 and beyond), the jitter after the cap."""
    p = policy(backoff=1.0, max_backoff=4.0)
    assert [p.backoff_delay(a) for a in range(5)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(policy(backoff=0.3, max_backoff=5.0).backoff_delay(a) <= 5.0 for a in range(200))
    assert policy(backoff=0.3, max_backoff=5.0).backoff_delay(199) == 5.0
    assert policy(backoff=1.0, max_backoff=4.0, jitter=lambda: 0.75).backoff_delay(50) == 3.0
    assert RetryPolicy().max_backoff == MAX_BACKOFF == 8.0
    assert policy(backoff=7.0).backoff_delay(1) == 8.0  # the default cap: 14 s asked, 8 s waited


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "1" + "0" * 25},  # 1e25 s
        {"retry-after-ms": "9" * 400},  # inf, read from digits
        {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"},  # 250 million s from NOW
    ],
)
def test_a_wait_no_sleep_can_take_is_the_backoff_even_with_no_cap(headers: dict[str, str]) -> None:
    """max_retry_after=inf (honour whatever the server asks): a Retry-After longer than any sleep can wait was
    waited as asked, and the sync client's sleep raised a bare OverflowError ('timestamp out of range for
    platform time_t'; the async one slept for ever). Such an ask is unreadable as a wait: the backoff then."""
    p = policy(backoff=0.25, max_retry_after=float("inf"))
    assert p.after_response(1, 429, headers) == 0.5
    assert p.after_response(1, 429, {"retry-after": "86400"}) == 86400.0  # (a day: asked, waited)
    with ReplayServer() as server:
        server.add("/chat/completions", Reply.json({"error": {"message": "busy"}}, 429, headers=headers))
        server.add("/chat/completions", Reply.json({"error": {"message": "busy"}}, 429, headers=headers))
        c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=1, backoff=0.001)
        c.max_retry_after = float("inf")
        with pytest.raises(RateLimitError, match="busy"):
            c.call([UserMessage("hi")])


# ---- a Retry-After sent more than once -------------------------------------------------------------------------

DATE_5 = email.utils.formatdate(NOW + 5, usegmt=True)
DATE_9 = email.utils.formatdate(NOW + 9, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ([("Retry-After", "5"), ("retry-after", "5")], 5.0),  # (httpx joins them: "5, 5")
        ([("retry-after", "2"), ("retry-after", "7")], 7.0),  # disagreeing: the largest
        ([("retry-after-ms", "250"), ("retry-after-ms", "250"), ("retry-after", "9")], 0.25),
        ([("retry-after", DATE_5), ("retry-after", DATE_5)], 5.0),  # (each date's own comma kept)
        ([("retry-after", DATE_9), ("retry-after", "3")], 9.0),
        ([("retry-after", "5"), ("retry-after", "garbage")], None),  # one unreadable: the header is
        ([("retry-after", "5"), ("retry-after", "")], None),
        ([("retry-after-ms", "250"), ("retry-after-ms", "nan"), ("retry-after", "4")], 4.0),
    ],
)
def test_a_repeated_retry_after_asks_the_largest_of_its_values(headers: list[tuple[str, str]], wait: float) -> None:
    """A Retry-After a proxy repeated reaches the policy joined by httpx ("5, 5"): it was unreadable, and the
    backoff was waited in place of what the server asked. Each value is read; the largest is waited."""
    assert retry_after(httpx.Headers(headers), NOW) == wait


def test_the_sync_client_waits_a_repeated_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(Client, "_sleep", lambda self, delay, stream: waits.append(delay))
    busy = Reply.json({"error": {"message": "busy"}}, 429, headers={"Retry-After": "3", "retry-after": "3"})
    with ReplayServer() as server:
        server.add("/chat/completions", busy, busy)
        c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=1, backoff=0.001)
        with pytest.raises(RateLimitError, match="busy"):
            c.call([UserMessage("hi")])
        assert len(server.requests) == 2
    assert waits == [3.0]  # (the backoff: 0.001 s)
