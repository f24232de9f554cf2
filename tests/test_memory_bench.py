"""The memory benchmark runs in its small size and prints its tables."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "memory_bench.py"


def test_small_memory_bench_runs() -> None:
    spec = importlib.util.spec_from_file_location("memory_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_bench"] = module
    spec.loader.exec_module(module)
    report = module.main(["--small", "--parts", "scale,chinese,locomo,code"])
    assert "\nsqlite          2000 " in report
    section = report.split("## chinese set", 1)[1]  # the last part printed
    chinese = [line for line in section.splitlines() if line.startswith("sqlite     fts-only")]
    assert chinese and float(chinese[-1].split()[3]) >= 0.7  # recall@5 of full-text alone on the Chinese set
    if module.LOCOMO.exists():
        assert "through the public import" in report and "check" in report
    else:
        assert "locomo: skipped" in report
    code = report.split("## code history", 1)[1].split("##", 1)[0]
    assert "no git history" in code or "sqlite     fts-only" in code
