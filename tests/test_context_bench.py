"""The benchmark runs in its small size and prints every strategy's row."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "context_bench.py"


def test_small_bench_runs(capsys: object) -> None:
    spec = importlib.util.spec_from_file_location("context_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["context_bench"] = module
    spec.loader.exec_module(module)
    report = module.main(["--small"])
    for strategy in module.STRATEGIES:
        assert f"\n{strategy} " in report
    rows = [
        line.split()
        for line in report.splitlines()
        if line.split()[:1] and line.split()[0] in module.STRATEGIES
    ]
    by_name = {row[0]: row for row in rows}
    assert int(by_name["none"][4].replace(",", "")) > 0  # without compaction requests overflow
    for name in module.STRATEGIES[1:]:
        assert by_name[name][1] == "end_turn" and by_name[name][4] == "0"
