"""The lines of a prose file (a change log, a README) that hold what a question writes verbatim,
each with the heading it is under: "HISTORY.rst holds: line 37 `... [CVE-2024-3651]` (under
`3.7 (2024-04-11)`)."

A change log answers "which release fixed X?" with the heading above the line that names X, and
a small model reads neither a long file nor a heading 30 lines up: the 0.5B, asked "According to
HISTORY.rst, which release fixed CVE-2024-3651?", answered an older release it had read
elsewhere on the page. What is matched is the task's marks, tokens holding a digit or a sign
(``CVE-2024-3651``, ``16.0.0``, ``2.7``), written alike in every language; words are not read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from .sites import written_tokens

MAX_PROSE_LINES = 3
MAX_PROSE_LINE_CHARS = 200
MIN_MARK_CHARS = 3
# reStructuredText's section underline: one punctuation character repeated, 3 or more times.
_UNDERLINE = re.compile(r"^([=\-~+^*#\"'`:._])\1{2,}\s*$")
_MARKDOWN_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_MARK = re.compile(r"[0-9]|[^\w\s]")


def marks(task: str, skip: Iterable[str] = ()) -> list[str]:
    """The task's tokens holding a digit or a sign, of at least ``MIN_MARK_CHARS`` characters,
    that are not in ``skip`` (the file names the task writes)."""
    skipped = {os.path.basename(s) for s in skip} | set(skip)
    found = [
        token
        for token in written_tokens(task)
        if len(token) >= MIN_MARK_CHARS and _MARK.search(token) and token not in skipped
    ]
    return sorted(found)


def headings(lines: Sequence[str]) -> dict[int, str]:
    """The 1-based number of each line -> the heading it is under ("" before the first): a
    Markdown ``#`` line, or a reStructuredText title over its underline."""
    under: dict[int, str] = {}
    current = ""
    for number, line in enumerate(lines, 1):
        following = lines[number] if number < len(lines) else ""
        markdown = _MARKDOWN_HEADING.match(line)
        if markdown:
            current = markdown.group(1)
        elif line.strip() and not _UNDERLINE.match(line) and _UNDERLINE.match(following):
            current = line.strip()
        under[number] = current
    return under


def _bounded(mark: str) -> re.Pattern[str]:
    """``mark`` whole: not a part of a longer token (2.7 is not in 2.70 nor in 12.7)."""
    return re.compile(rf"(?<![\w.-]){re.escape(mark)}(?![\w-]|\.\w)")


def prose_lines(text: str, task: str, skip: Iterable[str] = ()) -> list[tuple[int, str, str]]:
    """The lines of ``text`` holding one of the task's ``marks`` whole, with their numbers and
    headings, at most ``MAX_PROSE_LINES`` in file order (a heading line itself is not one)."""
    wanted = [_bounded(m) for m in marks(task, skip)]
    if not wanted:
        return []
    lines = text.splitlines()
    under = headings(lines)
    found: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines, 1):
        if under[number] == line.strip() or not any(p.search(line) for p in wanted):
            continue
        found.append((number, line.strip()[:MAX_PROSE_LINE_CHARS], under[number]))
        if len(found) == MAX_PROSE_LINES:
            break
    return found


def prose_sentence(path: str, held: Sequence[tuple[int, str, str]]) -> str:
    """``prose_lines``'s lines as the answer request says them ("" for none)."""
    if not held:
        return ""
    said = ", ".join(
        f"line {number} `{line}`" + (f" (under `{heading}`)" if heading else "")
        for number, line, heading in held
    )
    return f" {os.path.basename(path)} holds: {said}."
