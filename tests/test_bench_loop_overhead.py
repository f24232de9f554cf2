"""The loop-overhead benchmark runs in its small size; its numbers have the right shape."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(name: str) -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load("bench.loop_overhead")


def test_history_has_the_asked_size_and_is_valid(bench: ModuleType) -> None:
    from tinyharness.context.validator import validate_messages

    for size in (100, 1_000):
        history = bench.make_history(size)
        assert len(history) == size
        validate_messages(history)


def test_seed_estimate_matches_seed_000(bench: ModuleType) -> None:
    messages = [{"role": "user", "content": "x" * 41}, {"role": "assistant", "content": [{"a": 1}]}]
    assert bench.seed_estimate_tokens(messages) == 10 + len('[{"a": 1}]') // 4


def test_small_run_rows_and_growth(bench: ModuleType) -> None:
    result = bench.run(small=True)
    sizes = result.sizes
    assert sizes == (100, 1_000, 10_000)
    expected = [
        "context",
        "prefix",
        "calibration",
        "ledger",
        "context_list",
        "validator",
        "validate",
        "agent",
        "naive",
    ]
    if bench.langchain_available():
        expected.append("langchain")
    else:
        assert any("langchain-core is not installed" in note for note in result.notes)
    for row in expected:
        for size in sizes:
            value = result.get(row, size)
            assert value is not None and value > 0, (row, size)
    for row in ("agent_cli", "checkpoint", "redact"):  # measured on the smallest history only
        assert result.get(row, 100) and result.get(row, 100) > 0
    # A CLI turn commits 2 run-log transactions (the reply with the call, then the result) and 3
    # session ones (the reply, the call's start, the results with its finish); the run's start
    # and end spread over its 6 turns here. One more of either a turn would cross these.
    log_commits, session_commits = result.commits[100]
    assert log_commits < 3 and session_commits < 4, result.commits
    # The naive way re-reads the whole history every turn: it grows with it...
    assert result.growth("naive") > 10
    # ...while the incremental ledger (the context path without its two O(history) parts) stays
    # roughly flat (~4x from 100 to 10,000 messages here, against ~100x for the O(n) rows).
    assert result.growth("ledger") < 20
    # The incremental validator never walks the history; the full check does, every request.
    assert result.growth("validate") > 10
    assert result.growth("validator") < 20
    # The parts sum to the whole, per turn.
    for size in sizes:
        parts = sum(result.get(row, size) for row in ("prefix", "calibration", "ledger"))
        assert parts == pytest.approx(result.get("context", size), rel=0.5)
    report = bench.to_markdown(result)
    for label in (bench.ROWS[row] for row in expected):
        assert label in report
    assert "10,000 msgs" in report
