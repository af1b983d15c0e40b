"""parse_timestamp (and Msg.created_at, and the AgentScope Python ``created_at`` it reads) on the edges of the
forms it accepts: every string it refuses raises the SDK's ValidationError (rule ``timestamp``), never another
exception."""

from __future__ import annotations

from datetime import date

import pytest

from agentmsg import Msg, Problem, ValidationError, is_valid, parse_timestamp
from agentmsg._codec.timestamps import java_form_of_instant


@pytest.mark.parametrize("stamp", ["9999-12-31 23:59:60", "9999-12-31T23:59:60.5Z", "9999-12-31T23:59:60+00:00"])
def test_a_leap_second_past_year_9999_is_refused_as_a_timestamp(stamp: str) -> None:
    """Its next instant (how a leap second is read) is in year 10000, which no datetime holds: this raised
    OverflowError."""
    with pytest.raises(ValidationError) as info:
        parse_timestamp(stamp)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/timestamp", "timestamp")]
    assert "9999" in info.value.problems[0].message


def test_a_python_created_at_leap_second_past_year_9999_is_kept_as_an_unknown_key() -> None:
    """AgentScope Python 2.x's ``created_at`` is read as the timestamp only when it is one: Msg.from_json
    raised OverflowError on this one."""
    notes: list[Problem] = []
    data = {"id": "m", "role": "user", "content": [], "metadata": {}, "created_at": "9999-12-31T23:59:60"}
    msg = Msg.from_dict(data, notes=notes)
    assert msg.timestamp is None and msg.unknown_keys == {"created_at": "9999-12-31T23:59:60"}
    assert any(p.pointer == "/created_at" and "no timestamp agentmsg reads" in p.message for p in notes)


def test_the_last_leap_second_before_year_9999_ends_is_read() -> None:
    assert parse_timestamp("9998-12-31 23:59:60").isoformat() == "9999-01-01T00:00:00+00:00"


@pytest.mark.parametrize("digits", [10, 20, 100_000])
def test_an_rfc3339_fraction_of_any_length_is_read_as_the_message_schema_accepts_it(digits: int) -> None:
    """RFC 3339 (and the message schema, so Msg.from_json) takes a fraction of any length: created_at
    refused one of more than 9 digits as "not a timestamp" on a message just decoded."""
    stamp = "2025-01-01T12:00:00." + "1234567890" * (digits // 10) + "+01:00"
    msg = Msg.from_json(f'{{"id":"m","role":"USER","content":[],"timestamp":"{stamp}"}}')
    moment = msg.created_at
    assert moment is not None and moment.isoformat() == "2025-01-01T12:00:00.123456+01:00"


def _msg(stamp: str) -> dict[str, object]:
    return {"id": "m", "name": None, "role": "USER", "content": [], "metadata": {}, "timestamp": stamp, "usage": None}


def _is_date(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def test_a_timestamp_is_valid_exactly_on_the_days_of_the_calendar() -> None:
    """Every month 00-13 and day 00-32 of common, leap and century years, in both forms: the schema (so every
    reader) and parse_timestamp take exactly the real dates. Java's form was checked by its pattern only:
    2026-02-30, 2100-02-29 and 2026-04-31 were valid messages (and parse_timestamp refused them)."""
    wrong = []
    for year in (1900, 2000, 2023, 2024, 2100):
        for month in range(14):
            for day in range(33):
                real = _is_date(year, month, day)
                for stamp in (
                    f"{year:04}-{month:02}-{day:02} 12:00:00.000",
                    f"{year:04}-{month:02}-{day:02}T12:00:00Z",
                ):
                    try:
                        parsed = parse_timestamp(stamp) is not None
                    except ValidationError:
                        parsed = False
                    if (is_valid(_msg(stamp)), parsed) != (real, real):
                        wrong.append(stamp)
    assert wrong == []


@pytest.mark.parametrize(
    ("stamp", "real"),
    [
        ("2016-12-31 23:59:60.000", True),  # Java's form is read as UTC
        ("2016-12-31T23:59:60Z", True),
        ("2016-12-31T15:59:60-08:00", True),  # 23:59 UTC
        ("2026-06-30 12:30:60.000", False),
        ("2026-06-30 23:58:60", False),
        ("2016-12-31T23:59:60+01:00", False),  # 22:59 UTC
        ("2026-06-30 23:59:61", False),
        ("2026-06-30 24:00:00", False),
        ("2026-06-30 23:60:00", False),
    ],
)
def test_a_leap_second_is_second_60_of_23_59_utc_for_the_schema_and_parse_timestamp(stamp: str, real: bool) -> None:
    """parse_timestamp read second 60 of any minute (12:30:60 as 12:31:00); the schemas take it only at 23:59 UTC
    (Java's form by its pattern, RFC 3339 by the date-time format): both now agree."""
    assert is_valid(_msg(stamp)) is real
    if real:
        assert parse_timestamp(stamp).second == 0
        return
    with pytest.raises(ValidationError) as info:
        parse_timestamp(stamp)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/timestamp", "timestamp")]


def test_the_msg_reader_names_the_path_and_rule_of_a_date_that_is_none() -> None:
    with pytest.raises(ValidationError) as info:
        Msg.from_json('{"id":"m","role":"USER","content":[],"timestamp":"2026-02-30 12:00:00.000"}')
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/timestamp", "timestamp")]


@pytest.mark.parametrize(
    ("created_at", "form"),
    [
        ("2026-11-22T10:34:38.563248Z", "2026-11-22 10:34:38.563"),
        ("2026-11-22t10:34:38.563248z", "2026-11-22 10:34:38.563"),
        ("2026-11-22T10:34:38.563248392Z", "2026-11-22 10:34:38.563"),
        ("2026-11-22T10:34:38Z", "2026-11-22 10:34:38.000"),
        ("2026-11-22T10:34:38.5Z", "2026-11-22 10:34:38.500"),
        ("2026-11-22T10:34:38.5632483921Z", None),  # finer than Java's Instant
        ("2026-11-22T10:34:38.56324\u0661Z", None),  # 27 characters, a digit that is not ASCII
        ("2026-11-22T10:34:38.563248+00:00", None),
        ("2026-11-22 10:34:38.563248Z", None),
        (1764000000, None),
        # no real date and time: refused as the event schema's date-time and Java's Instant.parse refuse them
        ("2026-02-30T10:00:00.123456Z", None),
        ("2026-04-31T10:00:00.123456Z", None),
        ("2025-02-29T10:00:00.123456Z", None),
        ("2026-00-10T10:00:00.123456Z", None),
        ("2026-13-10T10:00:00.123456Z", None),
        ("2026-01-00T10:00:00.123456Z", None),
        ("2026-01-10T24:00:00.123456Z", None),  # (Java reads 24:00:00 as the next midnight; RFC 3339 has no hour 24)
        ("2026-01-10T10:60:00.123456Z", None),
        ("2026-01-10T10:00:60.123456Z", None),
        ("2026-02-30T10:00:00Z", None),
        ("2026-02-30t10:00:00.123456z", None),
        ("2026-12-31T23:00:60.5Z", None),
        # real ones the usual form's quick check leaves to the rule of every other form
        ("2024-02-29T10:00:00.123456Z", "2024-02-29 10:00:00.123"),
        ("2026-12-31T23:59:60.123456Z", "2026-12-31 23:59:60.123"),  # the leap second, as the schemas take it
        ("2026-01-31T23:59:59.999999Z", "2026-01-31 23:59:59.999"),
        ("2026-04-30T00:00:00.000000Z", "2026-04-30 00:00:00.000"),
    ],
)
def test_an_event_instant_has_the_message_form_java_gives_it(created_at: object, form: str | None) -> None:
    """A createdAt of no real date and time gave a message timestamp the Msg schema refuses (the reducer then
    blamed the message it made); it is none, as a createdAt that is not an instant at all."""
    assert java_form_of_instant(created_at) == form
    if form is not None:
        assert is_valid(_msg(form))


def test_the_instant_every_producer_writes_takes_no_group_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply's createdAt (microseconds, UTC) is read by a pattern without groups: the one with groups, which
    every reply paid for (about 1% of a short reply's reduce), is left to the other forms."""
    import agentmsg._codec.timestamps as timestamps

    class Refused:
        def fullmatch(self, text: str) -> None:
            raise AssertionError(f"group match of {text}")

    monkeypatch.setattr(timestamps, "_RFC3339", Refused())
    assert java_form_of_instant("2026-11-22T10:34:38.563248Z") == "2026-11-22 10:34:38.563"


def test_the_usual_instant_form_reads_as_every_other_form_on_every_day_and_clock() -> None:
    """The usual createdAt (microseconds, T and Z) is read by its own pattern; the same instant with a lower-case
    z goes to parse_timestamp, the one rule of a real date and time. Both gave the message form of year 0000
    differently: the pattern took it ('0000-01-01 10:00:00.123'), parse_timestamp (and the TypeScript reducer,
    as datetime) has no year 0, so a reply's timestamp depended on the case of its Z."""
    wrong = []
    for year in (0, 1, 1999, 2000, 2001, 2024, 2100, 9999):
        for month in range(14):
            for day in range(33):
                for clock in ("00:00:00", "23:59:59", "23:59:60", "24:00:00", "10:60:00", "10:00:60", "23:00:60"):
                    usual = f"{year:04}-{month:02}-{day:02}T{clock}.123456Z"
                    if java_form_of_instant(usual) != java_form_of_instant(usual.replace("Z", "z")):
                        wrong.append(usual)
    assert wrong == []
    assert java_form_of_instant("0000-01-01T10:00:00.123456Z") is None
    assert java_form_of_instant("0001-01-01T00:00:00.000000Z") == "0001-01-01 00:00:00.000"
