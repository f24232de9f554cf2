"""Times in memories: when a message was written, when what it says happened, and which time a
question asks about.

- ``parse_time(text)``: an ISO-8601 time, Unix seconds, or free text such as "1:56 pm on 8 May,
  2023" or "May 8 2023" (UTC when no zone is given); ``None`` when it holds no date.
- ``event_time(said_at, text)``: the time a message was written, moved by what it says happened
  "yesterday", "last week", "3 days ago"... (the first such phrase): "I went to the museum
  yesterday", written on 8 May, is about 7 May.
- ``asked_window(query, now)``: the time a question names ("in May", "in 2023", "last week") as a
  ``TimeWindow``; ``asks_when(query)``: whether it asks for a time ("When did...").
- ``day_words(t)``: a time as searchable words ("8 May 2023, Monday"), for the full-text index.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

DAY = 86_400.0

MONTHS = {
    name.casefold(): number
    for number in range(1, 13)
    for name in (calendar.month_name[number], calendar.month_abbr[number])
}
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.0, "year": 365.0}
_COUNT = r"(\d+|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"

# Phrases that move an event away from the time it was told, in days (first match wins).
_RELATIVE: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), days)
    for pattern, days in (
        (r"\bday before yesterday\b", -2.0),
        (r"\byesterday\b|\blast night\b", -1.0),
        (r"\blast weekend\b", -7.0),
        (r"\blast week\b", -7.0),
        (r"\blast month\b", -30.0),
        (r"\blast year\b", -365.0),
        (r"\btomorrow\b", 1.0),
        (r"\bnext week\b", 7.0),
        (r"\bnext month\b", 30.0),
        (r"\bnext year\b", 365.0),
        (r"昨天|昨晚", -1.0),
        (r"前天", -2.0),
        (r"上周|上个星期|上星期", -7.0),
        (r"上个月", -30.0),
        (r"去年", -365.0),
        (r"明天", 1.0),
        (r"下周|下个星期", 7.0),
    )
)
_AGO = re.compile(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# "last Friday", "last Sat": the most recent such day before the telling (a week back on that day).
_LAST_WEEKDAY = re.compile(
    r"\blast (mon|tue|wed|thu|fri|sat|sun)(?:s|n|nes|rs|ur)?(?:day|\.)?(?![a-z])", re.IGNORECASE
)


def _utc(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def parse_time(text: str | float | int | None) -> float | None:
    """Unix seconds of an ISO-8601 time, a number of Unix seconds, or a free-text date; ``None``
    when ``text`` holds no date (a time of day alone is not one)."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return float(text)
    value = text.strip()
    if not value or not re.search(r"\d", value):
        return None
    if re.fullmatch(r"\d{9,11}(\.\d+)?", value):
        return float(value)
    try:
        return _utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        pass
    return _free_text_date(value)


def _free_text_date(value: str) -> float | None:
    """Day, month name and year in any order ("8 May, 2023", "May 8th 2023", "2023 May 8"), or a
    numeric ``Y/M/D``, ``D.M.Y``; a clock time ("1:56 pm", "13:56") if one is there."""
    text = value.casefold()
    year_match = re.search(r"\b(19\d\d|20\d\d|21\d\d)\b", text)
    month_match = re.search(rf"\b({_MONTH})\b\.?", text)
    if year_match and month_match:
        year = int(year_match.group(1))
        month = MONTHS.get(month_match.group(1)[:3], 0) or MONTHS.get(month_match.group(1), 0)
        rest = (text[: year_match.start()] + " " + text[year_match.end() :]).replace(
            month_match.group(0), " "
        )
        rest = re.sub(r"\d{1,2}:\d{2}(:\d{2})?", " ", rest)
        day_match = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", rest)
        day = int(day_match.group(1)) if day_match else 1
    else:
        numeric = re.search(r"\b(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})\b", text)
        european = re.search(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b", text)
        if numeric:
            year, month, day = (int(g) for g in numeric.groups())
        elif european:  # day first: the order most of the world writes (ambiguous ones stay so)
            day, month, year = (int(g) for g in european.groups())
        elif year_match:
            year, month, day = int(year_match.group(1)), 1, 1
        else:
            return None
    if not (1 <= month <= 12) or not (1 <= day <= calendar.monthrange(year, month)[1]):
        return None
    hour = minute = 0
    clock = re.search(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap]\.?m\.?)?", text)
    if clock:
        hour, minute = int(clock.group(1)) % 24, int(clock.group(2)) % 60
        meridiem = (clock.group(3) or "").replace(".", "")
        if meridiem == "pm" and hour < 12:
            hour += 12
        elif meridiem == "am" and hour == 12:
            hour = 0
    return _utc(datetime(year, month, day, hour, minute))


def relative_days(text: str, said_at: float | None = None) -> float | None:
    """How many days before (negative) or after the telling the first time phrase in ``text``
    puts what it says ("yesterday" -1, "two weeks ago" -14), or ``None``. "last Friday" counts
    back to the Friday before ``said_at`` (four days when the day of the telling is unknown)."""
    found: list[tuple[int, float]] = []
    weekday = _LAST_WEEKDAY.search(text)
    if weekday:
        target = _WEEKDAYS.index(weekday.group(1).casefold())
        told = datetime.fromtimestamp(said_at, UTC).weekday() if said_at is not None else None
        found.append((weekday.start(), -float((told - target) % 7 or 7) if told is not None else -4.0))
    for pattern, days in _RELATIVE:
        match = pattern.search(text)
        if match:
            found.append((match.start(), days))
    ago = _AGO.search(text)
    if ago:
        count = ago.group(1).casefold()
        number = int(count) if count.isdigit() else _NUMBER_WORDS.get(count, 1)
        found.append((ago.start(), -number * _UNIT_DAYS[ago.group(2).casefold()]))
    return min(found)[1] if found else None


def event_time(said_at: float | None, text: str) -> float | None:
    """When what ``text`` tells happened, given when it was said (``None`` stays ``None``)."""
    if said_at is None:
        return None
    days = relative_days(text, said_at)
    return said_at + days * DAY if days is not None else said_at


def states_time(text: str) -> bool:
    """Whether ``text`` says when something happened (a date, a month, a relative phrase)."""
    return (
        relative_days(text) is not None
        or bool(re.search(rf"\b{_MONTH}\b|\b(19|20)\d\d\b", text, re.IGNORECASE))
        or bool(
            re.search(
                r"\b(this|last|next) (morning|afternoon|evening|weekend|week|month|year|summer|winter|fall"
                r"|spring|autumn)\b|\b(today|tonight|earlier today)\b",
                text,
                re.I,
            )
        )
    )


def day_words(moment: float | None) -> str:
    """``moment`` as words a full-text search finds: "8 May 2023, Monday"."""
    if moment is None:
        return ""
    day = datetime.fromtimestamp(moment, UTC)
    return f"{day.day} {calendar.month_name[day.month]} {day.year}, {calendar.day_name[day.weekday()]}"


def iso(moment: float | None) -> str | None:
    """``moment`` as an ISO-8601 UTC time (seconds), or ``None``."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


_WHEN = re.compile(
    r"\bwhen\b|\bwhat (time|date|day|year|month)\b|\bwhich (year|month|day|date)\b|\bhow long ago\b"
    r"|\bsince when\b|什么时候|哪天|哪一天|哪年|几月|何时",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether ``query`` asks for a time ("When did...", "What year...", "什么时候")."""
    return bool(_WHEN.search(query))


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A time a question names: a span ``[start, end)`` in Unix seconds, or a month of any year
    (``month``, when the question names no year)."""

    start: float | None = None
    end: float | None = None
    month: int | None = None

    def contains(self, moment: float | None) -> bool:
        if moment is None:
            return False
        if self.month is not None:
            return datetime.fromtimestamp(moment, UTC).month == self.month
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


_MAY_MONTH = re.compile(
    r"\b(in|of|during|early|late|mid|since|until)\s+may\b|\bmay\s+\d{1,2}\b|\b\d{1,2}(st|nd|rd|th)?\s+may\b"
)


def asked_window(query: str, now: float) -> TimeWindow | None:
    """The time ``query`` names, if any: "in 2023", "in May 2023", "on 8 May 2023", "in May",
    "yesterday", "last week", "last month", "last year", "N days ago" (relative ones around ``now``)."""
    text = query.casefold()
    year_match = re.search(r"\b(19\d\d|20\d\d|21\d\d)\b", text)
    month_match = re.search(rf"\b({_MONTH})\b", text)
    month = MONTHS.get(month_match.group(1)[:3]) if month_match else None
    # "may" is also a verb: only "in/of/during May" or a day beside it count.
    if month == 5 and not year_match and not _MAY_MONTH.search(text):
        month = None
    if year_match:
        year = int(year_match.group(1))
        if month is None:
            return TimeWindow(_utc(datetime(year, 1, 1)), _utc(datetime(year + 1, 1, 1)))
        day_match = re.search(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH}\s+(\d{{1,2}})\b", text
        )
        start = datetime(year, month, 1)
        end = datetime(year + (month == 12), month % 12 + 1, 1)
        if day_match:
            day = int(day_match.group(1) or day_match.group(2))
            if 1 <= day <= calendar.monthrange(year, month)[1]:
                start = datetime(year, month, day) - timedelta(days=1)
                end = datetime(year, month, day) + timedelta(days=2)
        return TimeWindow(_utc(start), _utc(end))
    if month is not None:
        return TimeWindow(month=month)
    days = relative_days(query, now)
    if days is not None:
        span = max(abs(days) * 0.5, 1.0)
        return TimeWindow(now + (days - span) * DAY, now + (days + span) * DAY)
    return None
