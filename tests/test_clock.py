"""current_time: ISO 8601 with offset, plus weekday and zone name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tinyharness.tools import current_time
from tinyharness.tools.clock import format_moment


def test_format_has_iso_time_offset_weekday_and_zone() -> None:
    moment = datetime(2024, 5, 1, 14, 3, 22, 999, tzinfo=timezone(timedelta(hours=2), "CEST"))
    assert format_moment(moment) == "2024-05-01T14:03:22+02:00 (Wednesday, timezone CEST)"


def test_naive_times_get_the_local_offset() -> None:
    text = format_moment(datetime(2024, 1, 6, 9, 0, 0))
    stamp = datetime.fromisoformat(text.split(" ")[0])
    assert stamp.tzinfo is not None
    assert "(Saturday, timezone " in text


def test_current_time_is_now_and_timezone_aware() -> None:
    text = current_time()
    stamp = datetime.fromisoformat(text.split(" ")[0])
    assert stamp.tzinfo is not None
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 5
    assert f"({stamp.strftime('%A')}, timezone " in text
