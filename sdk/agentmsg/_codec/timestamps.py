"""Timestamps, in the forms agentmsg reads and writes (one place for all of them).

* Message ``timestamp``: written as AgentScope Java's ``yyyy-MM-dd HH:mm:ss.SSS``, in UTC; read in that form
  (fraction of 0-9 digits, read as UTC) or as RFC 3339 with a zone (a fraction of any length, as RFC 3339 and
  the message schema allow; read to the microsecond).
* Event ``createdAt``: RFC 3339 in UTC with microseconds (``2025-01-01T12:00:00.000000Z``), as Java writes
  its ``Instant``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from agentmsg.errors import ValidationError

__all__ = ["event_now", "java_form_of_instant", "now_timestamp", "parse_timestamp"]

_JAVA = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?", re.ASCII)
_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))", re.ASCII
)
#: the instant every producer writes (microseconds, UTC, upper-case T and Z) of a real date and time: no groups,
#: so it matches for less than _RFC3339. Month and day go together (Feb 29 and a leap second are left to
#: parse_timestamp, the rule for every other form). Year 0000 is none (no datetime has it, nor parse_timestamp).
_INSTANT_MICROS = re.compile(
    r"(?!0000)\d{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
    r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{6}Z",
    re.ASCII,
)
_ACCEPTED = (
    "AgentScope Java's 'yyyy-MM-dd HH:mm:ss.SSS' (read as UTC) or an RFC 3339 date-time with a zone "
    "('2025-01-01T12:00:00Z')"
)


def now_timestamp() -> str:
    """Now, in the form agentmsg writes: AgentScope Java's ``yyyy-MM-dd HH:mm:ss.SSS``, in UTC."""
    now = datetime.now(timezone.utc)
    return f"{now:%Y-%m-%d %H:%M:%S}.{now.microsecond // 1000:03d}"


def event_now() -> str:
    """Now as an event ``createdAt``: RFC 3339, UTC, microseconds."""
    now = datetime.now(timezone.utc)
    return f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond:06d}Z"


def parse_timestamp(value: str) -> datetime:
    """An aware datetime for either accepted form (Java's zone-less form is read as UTC).

    A leap second is second 60 of 23:59 UTC (``23:59:60`` in Java's form, read as UTC; in RFC 3339 the minute
    that is 23:59 UTC at its offset), as the schemas take it; it is read as the first instant of the next
    minute. Anything else that is not a real date and time (February 30, hour 24, second 60 of another
    minute) raises :class:`~agentmsg.ValidationError` (rule ``timestamp``)."""
    text = value.strip() if isinstance(value, str) else None
    match = _JAVA.fullmatch(text) if text is not None else None
    zone: timezone = timezone.utc
    if match is None and text is not None:
        match = _RFC3339.fullmatch(text)
        if match is not None and match.group(9) is not None:
            sign = 1 if match.group(9) == "+" else -1
            hours, minutes = int(match.group(10)), int(match.group(11))
            if hours > 23 or minutes > 59:
                match = None
            else:
                zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
    if match is None:
        raise ValidationError.single("/timestamp", "timestamp", f"{value!r} is not a timestamp: expected {_ACCEPTED}")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    micro = int((match.group(7) or "").ljust(6, "0")[:6])
    leap = second == 60
    try:
        moment = datetime(year, month, day, hour, minute, 59 if leap else second, micro, tzinfo=zone)
    except ValueError as exc:
        raise ValidationError.single(
            "/timestamp", "timestamp", f"{value!r} is not a real date and time ({exc}): expected {_ACCEPTED}"
        ) from None
    if not leap:
        return moment
    offset = zone.utcoffset(None) // timedelta(minutes=1)
    if (hour * 60 + minute - offset) % 1440 != 23 * 60 + 59:
        raise ValidationError.single(
            "/timestamp",
            "timestamp",
            f"{value!r} has second 60 in a minute that is not 23:59 UTC, where leap seconds fall: expected {_ACCEPTED}",
        )
    try:
        return moment + timedelta(seconds=1)
    except OverflowError:  # 9999-12-31 23:59:60: the next minute is in year 10000, past what a datetime holds
        raise ValidationError.single(
            "/timestamp",
            "timestamp",
            f"{value!r} is a leap second whose next instant is past year 9999, which no datetime holds: "
            f"expected {_ACCEPTED}",
        ) from None


def java_form_of_instant(created_at: object) -> str | None:
    """An event ``createdAt`` in UTC (``2026-11-22T10:34:38.563248392Z``) in the message form
    (``2026-11-22 10:34:38.563``); None when it is not an RFC 3339 instant in UTC of a real date and time
    (February 30, hour 24 or second 60 of a minute but 23:59 are none, as the event schema's ``date-time``
    has it; the leap second ``23:59:60`` is one, kept as the message form takes it)."""
    if type(created_at) is str and len(created_at) == 27 and _INSTANT_MICROS.fullmatch(created_at) is not None:
        return created_at[:23].replace("T", " ")  # every reply's form, 40% cheaper than the groups below
    if not isinstance(created_at, str) or not created_at.endswith(("Z", "z")):
        return None
    match = _RFC3339.fullmatch(created_at)
    if match is None or len(match.group(7) or "") > 9:  # as Java's Instant writes it (the reducers agree on it)
        return None
    try:
        parse_timestamp(created_at)  # a real date and time (the one rule of it)
    except ValidationError:
        return None
    date, clock = created_at[:10], created_at[11:19]
    return f"{date} {clock}.{(match.group(7) or '').ljust(3, '0')[:3]}"
