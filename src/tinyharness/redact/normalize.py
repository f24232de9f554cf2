"""Secrets in adversarial spellings: a reading of the text in which they take their usual form.

A secret can be written so that no rule sees it, though any program that reads it gets it back:
a JWT whose dots are JSON escapes (``\\u002e``), a key split by a zero-width space or joiner, a
token in full-width letters (``ｇｈｐ＿...``). ``normalize(text)`` gives the text with

- invisible and format characters left out (zero-width space, joiners, word joiner, soft
  hyphen, direction marks and overrides, variation selectors, the byte-order mark, Hangul
  fillers);
- ``\\uXXXX`` and ``\\xXX`` escapes of printable ASCII decoded, ``\\/`` read as ``/`` (JSON);
  an escape of an invisible character is left out like the character;
- full-width ASCII (U+FF01-U+FF5E) and the ideographic space read as ASCII, as NFKC does;

and, for every character of that reading, the span of the original it came from, so a finding
in the reading redacts exactly the original characters. ``None`` when nothing changes (the
common case costs one regex search).

Imports nothing of the package.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
_TRIGGER = re.compile(f"[{_INVISIBLE}]|[\uff01-\uff5e\u3000]|\\\\(?:u[0-9a-fA-F]{{4}}|x[0-9a-fA-F]{{2}}|/)")
_INVISIBLE_CHAR = re.compile(f"[{_INVISIBLE}]")


@dataclass(frozen=True, slots=True)
class Normalized:
    """The reading, and where each of its characters came from, as segments: characters
    ``marks[k]`` up to ``marks[k + 1]`` of ``text`` are the original's from ``origins[k]`` on,
    one for one, each ``widths[k]`` characters wide (1, or the whole of an escape or a decoded
    character that became one character). Memory grows with the number of changes, not with
    the length of the text."""

    text: str
    marks: list[int]
    origins: list[int]
    widths: list[int]

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` was read from."""
        first = bisect_right(self.marks, start) - 1
        last = bisect_right(self.marks, end - 1) - 1
        begin = self.origins[first] + (start - self.marks[first])
        finish = self.origins[last] + (end - 1 - self.marks[last]) + self.widths[last]
        return begin, finish


def _reading(found: str) -> str:
    """What one trigger match reads as: one character, or "" for an invisible one."""
    if len(found) == 1:
        if _INVISIBLE_CHAR.match(found):
            return ""
        return " " if found == "\u3000" else chr(ord(found) - 0xFEE0)
    if found == "\\/":
        return "/"
    char = chr(int(found[2:], 16))
    if _INVISIBLE_CHAR.match(char):
        return ""
    return char if " " <= char <= "~" else found  # only printable ASCII is decoded


def normalize(text: str) -> Normalized | None:
    """The reading of ``text`` described in the module docstring, or None when it is ``text``."""
    if _TRIGGER.search(text) is None:
        return None
    pieces: list[str] = []
    marks: list[int] = []
    origins: list[int] = []
    widths: list[int] = []
    length = 0  # of the reading so far

    def copy(start: int, end: int) -> None:
        nonlocal length
        if end > start:
            pieces.append(text[start:end])
            marks.append(length)
            origins.append(start)
            widths.append(1)
            length += end - start

    position = 0
    for match in _TRIGGER.finditer(text):
        start, end = match.span()
        copy(position, start)
        reading = _reading(match.group())
        if len(reading) == 1:
            pieces.append(reading)
            marks.append(length)
            origins.append(start)
            widths.append(end - start)
            length += 1
        elif reading:  # an escape left as it is
            copy(start, end)
        position = end
    copy(position, len(text))
    reading_text = "".join(pieces)
    return None if reading_text == text else Normalized(reading_text, marks, origins, widths)
