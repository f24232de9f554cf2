"""The end-to-end benchmark: its bookkeeping on a made-up event stream, and (marked local_model)
one small real run of the CLI on the local model."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("bench.e2e_local")


def test_model_time_is_the_gap_before_each_model_call(bench: ModuleType) -> None:
    events = [
        {"type": "run_start", "ts": 10.0},
        {"type": "model_call", "ts": 12.5},
        {"type": "tool_call", "ts": 12.6},
        {"type": "tool_result", "ts": 12.7},
        {"type": "model_call", "ts": 14.7},
        {"type": "run_end", "ts": 14.8, "stop": "end_turn"},
    ]
    assert bench.model_seconds(events) == pytest.approx(4.5)
    result = bench.E2EResult(files=2, window=4096, max_iterations=4, command="x", wall_s=6.0)
    bench._fill_from_events(result, events, spawned=9.0)
    assert result.startup_s == pytest.approx(1.0)
    assert result.loop_s == pytest.approx(4.8)
    assert result.model_calls == 2 and result.stop == "end_turn"
    assert result.harness_loop_share == pytest.approx(0.3 / 4.8)
    assert result.harness_wall_share == pytest.approx(1.5 / 6.0)


def test_coverage_counts_paths_or_file_names(bench: ModuleType) -> None:
    names = ["src/agent.py", "src/context/tokens.py", "src/cli.py"]
    assert bench.covered(names, "- agent.py runs the loop\n- src/context/tokens.py counts") == 2


def test_the_report_quotes_the_first_lines_of_the_notes(bench: ModuleType) -> None:
    result = bench.E2EResult(files=2, window=4096, max_iterations=4, command="x", stop="end_turn")
    assert "NOTES.md, as the model wrote" not in bench.to_markdown(result)
    result.notes_sample = ["src/a.py: parses the input"]
    assert bench.to_markdown(result).endswith("\n    src/a.py: parses the input")


def test_files_read_counts_successful_reads_once(bench: ModuleType) -> None:
    events = [
        {"type": "tool_call", "call_id": "a", "name": "read_file", "args": {"path": "x.py"}},
        {"type": "tool_result", "call_id": "a", "ok": True},
        {"type": "tool_call", "call_id": "b", "name": "read_file", "args": {"path": "x.py"}},
        {"type": "tool_result", "call_id": "b", "ok": True},
        {"type": "tool_call", "call_id": "c", "name": "read_file", "args": {"path": "nope.py"}},
        {"type": "tool_result", "call_id": "c", "ok": False},
        {"type": "tool_call", "call_id": "d", "name": "list_dir", "args": {"path": "."}},
        {"type": "tool_result", "call_id": "d", "ok": True},
    ]
    assert bench.files_read(events) == {"x.py"}


def test_snapshot_copies_the_smallest_real_files(bench: ModuleType, tmp_path: Path) -> None:
    names = bench.snapshot(tmp_path, 5)
    assert len(names) == 5
    assert all((tmp_path / name).stat().st_size > 500 for name in names)


@pytest.mark.local_model
def test_small_real_run(bench: ModuleType) -> None:
    result = bench.run(small=True, timeout=400)  # generous: a loaded 2-core machine is slow
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.files == 5
    assert result.exit_code in (0, 1), result.stop  # 1: a limit stopped it; a 135M model may loop
    assert result.model_calls >= 1
    assert 0 < result.model_s <= result.loop_s <= result.wall_s
    assert 0 <= result.covered <= result.files and 0 <= result.read_noted <= result.files_read
    assert 1 <= result.files_read <= result.files  # read_file's path is narrowed to real files
    assert result.peak_rss_mib > 50
    report = bench.to_markdown(result)
    assert "files named in NOTES.md" in report and "harness share" in report


def test_the_full_run_takes_the_smallest_files_and_names_its_model(bench: ModuleType, tmp_path: Path) -> None:
    """On the 0.5B every file (over 100) would take hours; the full run takes FILES of them."""
    names = bench.snapshot(tmp_path, bench.FILES)
    assert len(names) == bench.FILES
    sizes = [(tmp_path / name).stat().st_size for name in names]
    assert min(sizes) > 500
    every = [p for p in bench.SOURCE.rglob("*.py") if "__pycache__" not in p.parts and p.stat().st_size > 500]
    assert max(sizes) <= sorted(p.stat().st_size for p in every)[bench.FILES - 1]
    result = bench.E2EResult(files=10, window=4096, max_iterations=24, command="x", model="Qwen2.5 test")
    assert bench.to_markdown(result).startswith("| Qwen2.5 test, note every file |")


ALLOCATE = "import sys, time; block = bytearray(int(sys.argv[1]) << 20); time.sleep(float(sys.argv[2]))"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from /proc")
def test_the_peak_memory_is_the_runs_own_not_an_earlier_childs(bench: ModuleType) -> None:
    """getrusage(RUSAGE_CHILDREN) reported the largest child the bench had ever waited for: an
    earlier part's 1.6 GB child became the model run's peak."""
    import subprocess

    subprocess.run([sys.executable, "-c", ALLOCATE, "400", "0"], check=True)  # an earlier, bigger child
    child = subprocess.Popen([sys.executable, "-c", ALLOCATE, "60", "2"])
    watcher = bench.PeakWatcher(child.pid)
    watcher.start()
    child.wait()
    watcher.stop()
    assert 60 * 1024 < watcher.peak_kib < 300 * 1024
