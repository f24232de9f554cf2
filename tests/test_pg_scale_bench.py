"""bench/pg_scale.py runs in its small size: a line saying why without a server, and with one a
row whose recall is exactly 1 (2,000 memories: below the HNSW index, every search is exact)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memory_conftest import memory_pg_url

ROOT = Path(__file__).resolve().parent.parent


def _module() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("bench.pg_scale")


def test_without_a_server_it_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module()
    for name in module.PG_ENVS:
        monkeypatch.delenv(name, raising=False)
    assert "skipped: set TINYHARNESS_BENCH_PG_URL or TINYHARNESS_TEST_PG_URL" in module.main(["--small"])


def test_small_run_compares_new_naive_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYHARNESS_TEST_PG_URL", memory_pg_url())
    monkeypatch.delenv("TINYHARNESS_BENCH_PG_URL", raising=False)
    report = _module().main(["--small", "--vectors", "clustered", "--clients", "0"])
    row = next(line.split() for line in report.splitlines() if line.split()[:2] == ["2000", "clustered"])
    assert float(row[10]) == 1.0 and float(row[11]) == 1.0  # recall of new and naive
