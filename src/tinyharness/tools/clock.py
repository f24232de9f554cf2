"""The current_time tool: local date and time in ISO 8601 with the timezone and weekday."""

from __future__ import annotations

from datetime import datetime


def current_time() -> str:
    """Get the current local date and time (ISO 8601, with timezone offset and weekday)."""
    return format_moment(datetime.now().astimezone())


def format_moment(moment: datetime) -> str:
    """E.g. ``2024-05-01T14:03:22+02:00 (Wednesday, timezone CEST)``; naive times are read as
    local time, so the offset is never missing."""
    aware = moment if moment.tzinfo is not None else moment.astimezone()
    zone = aware.tzname() or aware.strftime("%z")
    return f"{aware.isoformat(timespec='seconds')} ({aware.strftime('%A')}, timezone {zone})"
