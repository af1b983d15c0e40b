"""The retry policy, without IO: whether a request is tried again, and after how long.

The clients ask it after each attempt that got no reply and wait what it says; None means give up:

* an error status is retried when the server's ``x-should-retry`` header says ``true`` (``false``: never,
  whatever the status), else for 408, 409, 429 and 5xx (a status of 600 to 999 too: no HTTP status, which RFC
  9110 15 has a client take as a 5xx, as the openai and anthropic SDKs retry it);
* a request that got no response at all (the connection failed or timed out) is retried (the clients raise at
  once for a response that is no valid HTTP: a 101 Switching Protocols, a head too long, a bad status line);
* at most ``max_retries`` times; a stream is never retried once its reply has begun (the clients ask only
  before it);
* the wait is the delay the server asks (``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP
  date; a header sent more than once, the largest of its values) when it is readable and at most
  ``max_retry_after`` seconds; otherwise the exponential backoff,
  ``backoff * 2**attempt`` seconds capped at ``max_backoff``, times a random factor in [0.75, 1] (jitter, so
  that clients refused together do not come back together).

Headers are any mapping of names to values; names are compared without case.
"""

from __future__ import annotations

import datetime
import email.utils
import random
import re
import threading
import time
from collections.abc import Callable, Mapping

import attrs

__all__ = ["LONGEST_WAIT", "MAX_BACKOFF", "RETRY_STATUSES", "RetryPolicy", "header", "retry_after", "seconds"]

#: Statuses below 500 that are worth retrying: timeout, conflict, too many requests
RETRY_STATUSES = frozenset({408, 409, 429})
#: Seconds the exponential backoff grows to, at most
MAX_BACKOFF = 8.0
#: Seconds a wait the server asks may last, whatever ``max_retry_after`` allows (``inf``: no cap): the longest a
#: sleep can wait (a longer one raised OverflowError from the sync client's sleep; the async one slept for ever)
LONGEST_WAIT = threading.TIMEOUT_MAX

_SECONDS = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*")


def seconds(value: str | None) -> float | None:
    """A header's non-negative decimal number of seconds, None when it is none (``float()`` also reads nan, inf,
    -5, 1_0, 0x10: not here)."""
    match = _SECONDS.fullmatch(value) if value is not None else None
    return float(match[1]) if match else None


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of the header ``name`` (lower case), whatever the case of the name in ``headers``."""
    value = headers.get(name)  # (an httpx.Headers finds it in any case; so does a mapping of lower-case names)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``Retry-After`` as seconds or as an HTTP date
    (GMT; a date passed is 0). None when it asks nothing readable (a negative number, nan, garbage): the
    backoff then. A header sent more than once (httpx joins its values: ``5, 5``) asks the largest of its
    values, each read as one (they agree, the common case, or the longest wait honours them all); one
    unreadable value makes the whole header unreadable. ``now``: the time an HTTP date is counted from
    (default ``time.time()``)."""
    ms = _largest(header(headers, "retry-after-ms"), seconds)
    if ms is not None:
        return ms / 1000
    return _largest(header(headers, "retry-after"), lambda value: _wait(value, now))


#: A day's name alone: the part of an HTTP date before its own comma (``Fri, 31 Dec 9999 ...``)
_DAY = re.compile(r"\s*[A-Za-z]+\s*")


def _largest(value: str | None, read: Callable[[str], float | None]) -> float | None:
    """The largest of the values of a header (repeated: joined by commas, an HTTP date's own comma kept), each
    ``read``; None when there is none or any is unreadable."""
    if value is None:
        return None
    values: list[str] = []
    for piece in value.split(","):
        if values and _DAY.fullmatch(values[-1]):  # (the day's name and the rest of its date)
            values[-1] += "," + piece
        else:
            values.append(piece)
    waits = [read(v) for v in values]
    return max(w for w in waits if w is not None) if None not in waits else None


def _wait(value: str, now: float | None) -> float | None:
    """A ``Retry-After`` value: seconds or an HTTP date (from ``now``); None when it is neither."""
    wait = seconds(value)
    if wait is not None:
        return wait
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT (parsedate_to_datetime leaves "-0000" and no zone naive)
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _jitter() -> float:
    return random.uniform(0.75, 1.0)


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """When to retry and how long to wait first (see the module docstring). ``attempt`` counts from 0: the
    attempt that just failed. ``jitter`` gives the backoff's random factor and ``clock`` the time an HTTP date
    is counted from (fixed ones make the decisions repeatable)."""

    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = MAX_BACKOFF
    max_retry_after: float = 60.0
    jitter: Callable[[], float] = _jitter
    clock: Callable[[], float] = time.time

    def retryable(self, status: int, headers: Mapping[str, str] | None = None) -> bool:
        """Whether an error status is worth retrying: the server's ``x-should-retry: true|false`` first (a
        provider may send it, and its own SDK obeys it), else 408, 409, 429 and 5xx."""
        should = (header(headers, "x-should-retry") or "").strip().lower() if headers is not None else ""
        if should in ("true", "false"):
            return should == "true"
        return status in RETRY_STATUSES or status >= 500

    def after_response(self, attempt: int, status: int, headers: Mapping[str, str]) -> float | None:
        """Seconds to wait before trying again a request answered with an error ``status``; None: do not."""
        if attempt >= self.max_retries or not self.retryable(status, headers):
            return None
        return self.delay(attempt, headers)

    def after_failure(self, attempt: int) -> float | None:
        """Seconds to wait before trying again a request that got no response; None: do not."""
        return self.delay(attempt) if attempt < self.max_retries else None

    def delay(self, attempt: int, headers: Mapping[str, str] | None = None) -> float:
        """The wait before the next attempt: the server's Retry-After when readable and at most
        ``max_retry_after`` (and :data:`LONGEST_WAIT`), else :meth:`backoff_delay`."""
        if headers is not None:
            wait = retry_after(headers, self.clock())
            if wait is not None and wait <= self.max_retry_after and wait <= LONGEST_WAIT:
                return wait
        return self.backoff_delay(attempt)

    def backoff_delay(self, attempt: int) -> float:
        """``backoff * 2**attempt`` seconds, at most ``max_backoff``, times the jitter."""
        grown = self.backoff * 2.0 ** min(attempt, 64)  # (2.0 ** a larger attempt: an OverflowError)
        return float(min(self.max_backoff, grown) * self.jitter())
