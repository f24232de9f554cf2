"""The sub-agent benchmark runs in its small size: both runs finish, every file gets its line,
and handing the reading to sub-agents keeps the parent's window and the bill smaller (what the
benchmark is for; if the task tool leaked the children's reads into the parent, this fails)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the bench folder is not an installed package
    sys.path.insert(0, str(ROOT))
subagent_bench = importlib.import_module("bench.subagent_bench")


def test_small_bench_runs_and_sub_agents_keep_the_parents_window_small() -> None:
    workload, (without, with_) = subagent_bench.run(small=True)
    for row in (without, with_):
        assert row.stop == "end_turn" and row.noted == row.files == workload.files
    assert without.child_peak is None and with_.child_peak is not None
    assert with_.parent_peak < without.parent_peak / 2
    assert with_.billed < without.billed
    report = subagent_bench.to_markdown(workload, [without, with_])
    assert "| with sub-agents | end_turn |" in report
