"""grep: RE2 (what the grep tool runs) against Python's ``re`` on ordinary patterns, and on one
pattern that makes a backtracking engine take exponential time.

    python -m bench.grep_bench [--small]

The corpus is this project's own source (every ``.py`` under ``src/`` and ``tests/``, read
once), searched for the lines each pattern matches. Three ways, side by side: the grep tool's
(one RE2 search over the joined lines, a call per match), RE2 called once per line (the
binding's per-call cost dominates), and Python's ``re`` once per line (what grep did before).
Each cell is the best of a few full passes. The last table times ``(a|a)*$`` on a line of n
``a``'s and a ``!``: ``re`` doubles with each extra character, RE2 stays flat even at 2,000
characters (a grep line's limit).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import re2

from tinyharness.tools.files import _compile_pattern

ROOT = Path(__file__).resolve().parents[1]
PATTERNS = [
    "TODO",
    r"def \w+\(",
    r"import (os|sys|re)\b",
    r"self\.\w+ = ",
    r"[0-9]{4,}",
    r"class [A-Z]\w*\(",
    r"(?i)error",
    r"^\s*#",
]
CATASTROPHIC = "(a|a)*$"


@dataclass
class GrepResult:
    lines: int
    chars: int
    # pattern, ms of: the tool's way, RE2 per line, re per line; matching lines
    rows: list[tuple[str, float, float, float, int]] = field(default_factory=list)
    blowup: list[tuple[int, float | None, float]] = field(default_factory=list)  # n, re ms, re2 ms


def _corpus() -> list[str]:
    lines: list[str] = []
    for folder in ("src", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines += [line[:2000] for line in path.read_text(encoding="utf-8").splitlines()]
    return lines


def _best(call: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, hits = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        hits = call()
        best = min(best, time.perf_counter() - started)
    return best * 1000, hits


def _scan(search: Callable[[str], object], lines: list[str]) -> Callable[[], int]:
    return lambda: sum(1 for line in lines if search(line))


def run(small: bool = False) -> GrepResult:
    lines = _corpus()
    repeat = 2 if small else 5
    result = GrepResult(len(lines), sum(len(line) for line in lines))
    options = re2.Options()
    options.log_errors = False
    for pattern in PATTERNS:
        grep = _compile_pattern(pattern)
        tool, hits = _best(lambda grep=grep: sum(1 for _ in grep.matching_lines(lines)), repeat)
        per_line, hits_re2 = _best(_scan(re2.compile(pattern, options).search, lines), repeat)
        backtracking, hits_re = _best(_scan(re.compile(pattern).search, lines), repeat)
        assert hits == hits_re2 == hits_re, f"the engines disagree on {pattern!r}"
        result.rows.append((pattern, tool, per_line, backtracking, hits))
    sizes = (14, 16, 18) if small else (16, 18, 20, 22)
    for n in sizes:
        line = "a" * n + "!"
        backtracking, _ = _best(lambda line=line: int(bool(re.search(CATASTROPHIC, line))), 1)
        linear, _ = _best(lambda line=line: int(bool(re2.search(CATASTROPHIC, line))), 3)
        result.blowup.append((n, backtracking, linear))
    line = "a" * 2000 + "!"
    linear, _ = _best(lambda: int(bool(re2.search(CATASTROPHIC, line))), 3)
    result.blowup.append((2000, None, linear))
    return result


def to_markdown(result: GrepResult) -> str:
    out = [
        f"Corpus: {result.lines:,} lines ({result.chars:,} characters) of this project's Python "
        "source, searched line by line; best of several passes.",
        "",
        "| pattern | grep tool: RE2, one search (ms) | RE2 per line (ms) | Python re per line (ms) "
        "| tool / re | matching lines |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for pattern, tool, per_line, backtracking, hits in result.rows:
        shown = pattern.replace("|", "\\|")
        out.append(
            f"| `{shown}` | {tool:.1f} | {per_line:.1f} | {backtracking:.1f} | "
            f"{tool / backtracking:.2f}x | {hits:,} |"
        )
    escaped = CATASTROPHIC.replace("|", "\\|")
    out += [
        "",
        f"`{escaped}` on a line of n `a`'s and a `!`:",
        "",
        "| n | Python re (ms) | RE2 (ms) |",
        "|---:|---:|---:|",
    ]
    for n, backtracking, linear in result.blowup:
        shown = "not run (2^2000 steps)" if backtracking is None else f"{backtracking:,.1f}"
        out.append(f"| {n:,} | {shown} | {linear:.3f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m bench.grep_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="fewer passes, smaller blow-up sizes")
    args = parser.parse_args(argv)
    report = to_markdown(run(small=args.small))
    print(report)
    return report


if __name__ == "__main__":
    main()
