"""guide.prose: the lines of a change log or README that hold what a question writes verbatim,
with the heading each is under. The 0.5B, asked which release of a HISTORY.rst fixed a CVE,
answered an older release; the line naming the CVE sits under its release's heading."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.guide.focus import held_line
from tinyharness.guide.prose import headings, marks, prose_lines

HISTORY = """\
Release History
---------------

3.9 (2024-09-13)
++++++++++++++++

- Update to Unicode 16.0.0
- Drop Python 2.70 compatibility shims

3.7 (2024-04-11)
++++++++++++++++

- Fix issue where specially crafted inputs to encode() could
  take exceptionally long amount of time to process. [CVE-2024-3651]
- Python 12.7 is not a thing
"""
CHANGES_MD = """\
# Changes

## 0.7.0

- Drop support for Python 2.7.

## 0.6.1

- Fix a bug.
"""


@pytest.mark.parametrize(
    "task",
    [
        "According to HISTORY.rst, which release fixed CVE-2024-3651?",
        "Laut HISTORY.rst: Welche Version hat CVE-2024-3651 behoben?",
        "HISTORY.rst 里哪个版本修复了 CVE-2024-3651？",
    ],
)
def test_the_line_naming_what_the_question_writes_is_said_with_its_heading(task: str) -> None:
    said = held_line("HISTORY.rst", HISTORY, task, ["HISTORY.rst"])
    assert said == (
        " HISTORY.rst holds: line 14 `take exceptionally long amount of time to process. [CVE-2024-3651]`"
        " (under `3.7 (2024-04-11)`)."
    )


def test_a_mark_matches_whole_and_a_heading_is_no_held_line() -> None:
    assert prose_lines(HISTORY, "Which release dropped Python 2.7?") == []  # 2.70, 12.7: not 2.7
    assert prose_lines(CHANGES_MD, "Which release dropped Python 2.7?") == [
        (5, "- Drop support for Python 2.7.", "0.7.0")
    ]
    assert prose_lines(HISTORY, "Was changed in 3.9?") == []  # the heading itself is no line
    assert prose_lines(HISTORY, "Which release updated the Unicode data?") == []  # words: no marks
    assert held_line("HISTORY.rst", HISTORY, "What changed?", ["HISTORY.rst"]) == ""


def test_marks_are_tokens_with_a_digit_or_a_sign_not_the_files_named() -> None:
    assert marks("Laut HISTORY.rst: Unicode 16.0.0 in idna-data?", ["HISTORY.rst"]) == ["16.0.0", "idna-data"]
    assert marks("第 7 版是 1.2 吗？") == ["1.2"]  # "7" is too short to be a mark of its own


def test_headings_of_restructuredtext_and_markdown() -> None:
    under = headings(HISTORY.splitlines())
    assert (
        under[7] == "3.9 (2024-09-13)" and under[13] == "3.7 (2024-04-11)" and under[1] == "Release History"
    )
    under = headings(CHANGES_MD.splitlines())
    assert under[5] == "0.7.0" and under[9] == "0.6.1"


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(["- fix 1.2.3", "- add CVE-1-2", "1.0", "===", "text", "## 2.0.0", ""]), max_size=30
    ),
    mark=st.sampled_from(["1.2.3", "CVE-1-2", "2.0.0"]),
)
def test_every_held_line_holds_the_mark_whole_and_is_no_heading(lines: list[str], mark: str) -> None:
    text = "\n".join(lines)
    under = headings(text.splitlines())
    for number, line, heading in prose_lines(text, f"Which release: {mark}?"):
        assert re.search(rf"(?<![\w.-]){re.escape(mark)}(?![\w-]|\.\w)", line)
        assert under[number] != line and heading == under[number]
