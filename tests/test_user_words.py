"""What users read speaks their words: no course or lesson numbers in the package's source (its
docstrings, messages and help) or in the README. Say what a thing does instead, e.g.
"cumulative: input + output of every call, reset at compaction"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tinyharness
from tinyharness.cli import build_parser

COURSE_WORDS = re.compile(r"lesson[ -]?\d|seed[ -]?00\d|milestone \d", re.IGNORECASE)
PACKAGE = Path(tinyharness.__file__).parent
README = PACKAGE.parents[1] / "README.md"


def test_no_course_words_in_the_source_or_the_readme() -> None:
    files = [*sorted(PACKAGE.rglob("*.py")), README]
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COURSE_WORDS.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "command", [[], ["run"], ["runs"], ["show"], ["export"], ["report"], ["notes"], ["memory"]]
)
def test_no_course_words_in_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    text = capsys.readouterr().out
    assert text and not COURSE_WORDS.search(text)


def test_the_check_finds_a_course_word() -> None:
    assert COURSE_WORDS.search("cumulative: the lesson-6 counter")
    assert COURSE_WORDS.search("chars4 (Seed 000)")
    assert not COURSE_WORDS.search("cumulative: input + output of every call, reset at compaction")
