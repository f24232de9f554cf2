"""Times in memories: free-text times from imports, event times moved by what a message says, and
the time a question names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.memory.timeparse import (
    DAY,
    asked_window,
    asks_when,
    day_words,
    event_time,
    iso,
    parse_time,
    relative_days,
    states_time,
)


def utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-05-08T13:56:00Z", utc(2023, 5, 8, 13, 56)),
        ("2023-05-08", utc(2023, 5, 8)),
        ("2023-05-08T15:56:00+02:00", utc(2023, 5, 8, 13, 56)),
        ("1:56 pm on 8 May, 2023", utc(2023, 5, 8, 13, 56)),
        ("10:37 am on 27 June, 2023", utc(2023, 6, 27, 10, 37)),
        ("12:09 am on 13 September, 2023", utc(2023, 9, 13, 0, 9)),
        ("May 8th 2023", utc(2023, 5, 8)),
        ("Sept 3, 2022, 18:05", utc(2022, 9, 3, 18, 5)),
        ("2023/5/8", utc(2023, 5, 8)),
        ("8.5.2023", utc(2023, 5, 8)),
        ("1683554160", 1683554160.0),
        ("in 2021", utc(2021, 1, 1)),
    ],
)
def test_parse_time_reads_iso_and_free_text(text: str, expected: float) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize("text", [None, "", "yesterday", "soon", "31 February 2023", "13:56", "no date"])
def test_parse_time_gives_none_without_a_date(text: str | None) -> None:
    assert parse_time(text) is None


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 12, 31)))
def test_iso_round_trips(moment: datetime) -> None:
    seconds = moment.replace(tzinfo=UTC, microsecond=0).timestamp()
    assert parse_time(iso(seconds)) == seconds


@given(st.text(max_size=80))
def test_parse_time_never_raises(text: str) -> None:
    result = parse_time(text)
    assert result is None or isinstance(result, float)


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("I went to a support group yesterday", -1.0),
        ("We ran a charity race last weekend!", -7.0),
        ("Two weeks ago I painted a sunrise", -14.0),
        ("I started 3 days ago", -3.0),
        ("a few years ago", -3 * 365.0),
        ("We fly out tomorrow", 1.0),
        ("我昨天去了医院", -1.0),
        ("I love painting", None),
    ],
)
def test_relative_days(text: str, days: float | None) -> None:
    assert relative_days(text) == days


def test_event_time_moves_the_telling_by_what_the_text_says() -> None:
    said = utc(2023, 5, 8, 13, 56)
    assert event_time(said, "I went to a LGBTQ support group yesterday") == said - DAY
    assert event_time(said, "I love it") == said
    assert event_time(None, "yesterday") is None
    assert day_words(said - DAY) == "7 May 2023, Sunday"
    # 8 May 2023 is a Monday: "last Friday" is the 5th, "last Monday" a week back
    assert event_time(said, "I passed the interview last Friday!") == said - 3 * DAY
    assert event_time(said, "we met last Mon.") == said - 7 * DAY
    assert event_time(said, "last Wednesday and two weeks ago") == said - 5 * DAY  # the first phrase
    assert relative_days("the last sunset") is None and relative_days("last Fri") == -4.0  # day unknown


def test_asked_window() -> None:
    now = utc(2026, 12, 1)
    may = asked_window("What did Caroline do in May 2023?", now)
    assert may is not None and may.contains(utc(2023, 5, 20)) and not may.contains(utc(2023, 6, 1))
    year = asked_window("Which books did she read in 2022?", now)
    assert year is not None and year.contains(utc(2022, 12, 31)) and not year.contains(utc(2023, 1, 1))
    day = asked_window("What happened on 8 May 2023?", now)
    assert day is not None and day.contains(utc(2023, 5, 8, 12)) and not day.contains(utc(2023, 5, 20))
    any_may = asked_window("What did we decide in May?", now)
    assert any_may is not None and any_may.contains(utc(2019, 5, 3)) and not any_may.contains(utc(2019, 4, 3))
    week = asked_window("what did I ask you last week", now)
    assert week is not None and week.contains(now - 7 * DAY) and not week.contains(now - 30 * DAY)
    assert asked_window("May I ask what my tea preference is?", now) is None  # "may" the verb
    assert asked_window("what is my favourite tea", now) is None


def test_asks_when_and_states_time() -> None:
    assert asks_when("When did Melanie paint a sunrise?")
    assert asks_when("What year did they move?") and asks_when("我们什么时候开会？")
    assert not asks_when("What does Melanie paint?")
    assert states_time("I painted it last year") and states_time("Back in May 2022 we moved")
    assert states_time("I passed the interview last Friday") and states_time("Tonight we celebrate")
    assert not states_time("I painted a sunrise") and not states_time("I've been painting lately")
