"""The pins-and-summaries benchmark in a small size: what it measures holds (every pin kept
with put-back, fewer summary tokens written by updates), and its cached real-model report."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the bench package lives beside the tests, not in the install
    sys.path.insert(0, str(ROOT))

from bench import anchors_bench, summary_drift  # noqa: E402
from bench.context_bench import Workload  # noqa: E402


def test_pins_are_kept_by_every_strategy_with_put_back() -> None:
    workload = Workload(40, 8_000, files=12)
    for strategy in ("summarize", "sliding-window"):
        ours = anchors_bench.retention(strategy, workload, put_back=True)
        assert ours["compactions"] > 0 and ours["pin_checks"] > 0
        assert ours["pins"] == 1.0 and ours["plan"] == 1.0 and ours["audits_failed"] == 0
    bare = anchors_bench.retention("summarize", workload, put_back=False)
    assert bare["pins"] is not None and bare["pins"] < 1.0  # what the comparison is about


def test_updated_summaries_write_less_and_keep_every_fact() -> None:
    update = anchors_bench.summary_cycles("update", 4, 8_000)
    rewrite = anchors_bench.summary_cycles("rewrite", 4, 8_000)
    assert update.kept == update.facts == rewrite.facts
    assert update.written < rewrite.written


def test_the_drift_report_renders_a_measurement() -> None:
    data = {
        "model": "local",
        "load": "load 1.0",
        "results": [
            {
                "mode": m,
                "facts": 11,
                "kept": k,
                "lost": ["6543"] * (11 - k),
                "read": 900,
                "written": 300,
                "seconds": 60.0,
            }
            for m, k in (("update", 11), ("rewrite", 10))
        ],
    }
    table = summary_drift.to_markdown(data)
    assert "| update | 11 of 11 | none |" in table and "| rewrite | 10 of 11 | 6543 |" in table
