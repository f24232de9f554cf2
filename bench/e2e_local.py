"""The real model, end to end: seed 000's task on the embedded local model, through the CLI.

A snapshot of this project's own ``src/tinyharness/**/*.py`` is copied into a temporary
workspace, and ``python -m tinyharness run TASK --model local --context-window 4096 --events FILE
--no-log --max-iterations N`` runs in a subprocess (the default local model, Qwen2.5-Coder-0.5B
when installed, else SmolLM2-135M, on the embedded llama.cpp server, loopback only). The window is
small so compaction happens.

Reported: wall time of the process; its start-up (imports and model load, until ``run_start``);
model time, the sum over model calls of the time from the event before each ``model_call`` to
that event (it includes the harness's request preparation, so the harness share is a lower
bound); the harness share of the loop and of the wall time; model calls, compactions, tool calls;
how many of the .py files, and of the files read, are named in NOTES.md (by path or file name),
and its first lines; the peak RSS of the process (its ``VmHWM``, read while it runs; it includes
the in-process model server).

    python -m bench.e2e_local            # the 10 smallest files, up to 2 iterations per file
    python -m bench.e2e_local --files 0  # every file (over 100 today: hours on the 0.5B)
    python -m bench.e2e_local --small    # 5 files, 6 iterations (what the test runs)
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import ROOT, markdown_table, progress

TASK = (
    "Read every .py file under src/ one by one and write a one-line summary of each into NOTES.md "
    "with the note tool"
)
WINDOW = 4096
FILES = 10  # the full run's files: about 25 calls, 10-20 minutes on the 0.5B on 2 cores
NOTE_SAMPLE_LINES, NOTE_SAMPLE_CHARS = 5, 100
SOURCE = ROOT / "src" / "tinyharness"


@dataclass
class E2EResult:
    files: int
    window: int
    max_iterations: int
    command: str
    model: str = "the local model"
    exit_code: int = -1
    stop: str = ""
    wall_s: float = 0.0
    startup_s: float = 0.0
    loop_s: float = 0.0
    model_s: float = 0.0
    model_calls: int = 0
    compactions: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    tool_errors: int = 0
    covered: int = 0
    files_read: int = 0  # distinct workspace files read_file returned without an error
    read_noted: int = 0  # of those, how many NOTES.md names
    notes_lines: int = 0
    notes_sample: list[str] = field(default_factory=list)  # its first lines, cut
    peak_rss_mib: float = 0.0
    skipped: str = ""

    @property
    def harness_loop_share(self) -> float | None:
        return (self.loop_s - self.model_s) / self.loop_s if self.loop_s > 0 else None

    @property
    def harness_wall_share(self) -> float | None:
        return (self.wall_s - self.model_s) / self.wall_s if self.wall_s > 0 else None


def local_model_missing() -> str:
    """Why the local model cannot run here, or "" when it can."""
    try:
        from tinyharness.models.local import default_gguf_path

        default_gguf_path()
    except Exception as exc:  # ConfigError, or the server wheel missing
        return str(exc)
    if shutil.which("true") is None:  # pragma: no cover - a sanity check for odd platforms
        return "no POSIX tools"
    return ""


def snapshot(workspace: Path, limit: int | None) -> list[str]:
    """Copy the project's .py files under ``workspace/src``; with ``limit``, only that many of
    the smallest files that hold real code (over 500 bytes), to keep the run cheap."""
    files = sorted(SOURCE.rglob("*.py"))
    files = [f for f in files if "__pycache__" not in f.parts]
    if limit is not None:
        files = sorted((f for f in files if f.stat().st_size > 500), key=lambda f: f.stat().st_size)[:limit]
    names = []
    for source in files:
        relative = source.relative_to(SOURCE)
        target = workspace / "src" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        names.append(f"src/{relative.as_posix()}")
    return sorted(names)


def covered(names: list[str], notes: str) -> int:
    """Files named in the notes, by their path or their file name."""
    return sum(1 for name in names if name in notes or Path(name).name in notes)


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a killed process
    return events


def model_seconds(events: list[dict[str, Any]]) -> float:
    """Sum over model calls of the time since the event before each ``model_call``."""
    total = 0.0
    for before, event in itertools.pairwise(events):
        if event.get("type") == "model_call":
            total += max(0.0, float(event["ts"]) - float(before["ts"]))
    return total


class PeakWatcher(threading.Thread):
    """The peak resident memory of one process (its ``VmHWM``, read every half second while it
    runs; the model server runs inside it). ``getrusage(RUSAGE_CHILDREN)`` was used before: it
    is the largest of every child the bench ever waited for, so an earlier part's child (the
    memory import, 1.6 GB) was reported as this run's."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak_kib = max(self.peak_kib, vm_hwm_kib(self.pid))
            self._done.wait(0.5)

    def stop(self) -> None:
        self._done.set()
        self.join()


def vm_hwm_kib(pid: int) -> int:
    """A process's peak resident memory so far, KiB (0 once it has ended, or without /proc)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def model_title() -> str:
    """What plain ``local`` runs here (the default model, or SmolLM2 when it is missing)."""
    try:
        from tinyharness.models.local import resolve_local

        entry = resolve_local(None).entry
    except Exception:  # ConfigError: the run below is skipped and says why
        return "the local model"
    return entry.title if entry is not None else "the local model"


def run(*, small: bool = False, files: int | None = FILES, timeout: float = 1800.0) -> E2EResult:
    """``files``: that many of the smallest files (None or 0: every file); ``small``: 5 files."""
    limit = 5 if small else (files or None)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        names = snapshot(workspace, limit)
        max_iterations = 6 if small else 2 * len(names) + 4
        events_path = Path(folder) / "events.jsonl"
        argv = [
            "run",
            TASK,
            "--model",
            "local",
            "--workspace",
            str(workspace),
            "--context-window",
            str(WINDOW),
            "--events",
            str(events_path),
            "--no-log",
            "--quiet",
            "--max-iterations",
            str(max_iterations),
        ]
        shown = " ".join(a if " " not in a else json.dumps(a) for a in argv)
        shown = shown.replace(str(workspace), "WORKSPACE").replace(str(events_path), "events.jsonl")
        result = E2EResult(
            len(names), WINDOW, max_iterations, f"python -m tinyharness {shown}", model_title()
        )
        missing = local_model_missing()
        if missing:
            result.skipped = f"local model not available: {missing}"
            progress(result.skipped)
            return result
        progress(f"e2e: {len(names)} files, window {WINDOW}, up to {max_iterations} iterations")
        spawned = time.time()
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "tinyharness", *argv],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        watcher = PeakWatcher(child.pid)
        watcher.start()
        try:
            result.exit_code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            result.exit_code = -9
            result.stop = "bench timeout"
        watcher.stop()
        result.wall_s = time.perf_counter() - start
        result.peak_rss_mib = watcher.peak_kib / 1024
        events = read_events(events_path)
        _fill_from_events(result, events, spawned)
        notes_path = workspace / "NOTES.md"
        notes = notes_path.read_text(encoding="utf-8") if notes_path.exists() else ""
        lines = [line for line in notes.splitlines() if line.strip()]
        result.notes_lines = len(lines)
        result.notes_sample = [line[:NOTE_SAMPLE_CHARS] for line in lines[:NOTE_SAMPLE_LINES]]
        result.covered = covered(names, notes)
        result.read_noted = covered(sorted(files_read(events)), notes)
    return result


def _fill_from_events(result: E2EResult, events: list[dict[str, Any]], spawned: float) -> None:
    by_type = Counter(e.get("type") for e in events)
    starts = [e for e in events if e.get("type") == "run_start"]
    ends = [e for e in events if e.get("type") == "run_end"]
    if starts:
        result.startup_s = float(starts[0]["ts"]) - spawned
    if starts and ends:
        result.loop_s = float(ends[-1]["ts"]) - float(starts[0]["ts"])
    result.model_s = model_seconds(events)
    result.model_calls = by_type["model_call"]
    result.compactions = by_type["compaction"]
    result.tool_calls = dict(Counter(str(e.get("name")) for e in events if e.get("type") == "tool_call"))
    result.tool_errors = sum(1 for e in events if e.get("type") == "tool_result" and not e.get("ok"))
    result.files_read = len(files_read(events))
    if ends:
        result.stop = result.stop or str(ends[-1].get("stop"))


def files_read(events: list[dict[str, Any]]) -> set[str]:
    """Paths of the read_file calls whose result was not an error."""
    paths = {
        e.get("call_id"): str(e["args"].get("path"))
        for e in events
        if e.get("type") == "tool_call" and e.get("name") == "read_file" and isinstance(e.get("args"), dict)
    }
    return {
        paths[e.get("call_id")]
        for e in events
        if e.get("type") == "tool_result" and e.get("ok") and e.get("call_id") in paths
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def to_markdown(result: E2EResult) -> str:
    if result.skipped:
        return f"Skipped: {result.skipped}."
    tools = ", ".join(f"{name} {count}" for name, count in sorted(result.tool_calls.items())) or "none"
    rows: list[list[object]] = [
        ["files in the workspace", result.files],
        ["stop reason (exit code)", f"{result.stop} ({result.exit_code})"],
        ["wall time, s", f"{result.wall_s:.1f}"],
        ["- start-up (imports, model load), s", f"{result.startup_s:.1f}"],
        ["- agent loop, s", f"{result.loop_s:.1f}"],
        ["- of which model time, s", f"{result.model_s:.1f}"],
        ["harness share of the loop (loop - model) / loop", _pct(result.harness_loop_share)],
        ["harness share of wall time (wall - model) / wall", _pct(result.harness_wall_share)],
        ["model calls (incl. compaction)", result.model_calls],
        ["compactions", result.compactions],
        ["tool calls", tools],
        ["tool calls that returned an error", result.tool_errors],
        ["distinct files read (read_file without an error)", f"{result.files_read} of {result.files}"],
        ["files named in NOTES.md", f"{result.covered} of {result.files}"],
        ["files read that NOTES.md names", f"{result.read_noted} of {result.files_read}"],
        ["non-empty lines in NOTES.md", result.notes_lines],
        ["peak RSS of the process (model server included), MiB", f"{result.peak_rss_mib:.0f}"],
    ]
    table = markdown_table([f"{result.model}, note every file", "value"], rows)
    if not result.notes_sample:
        return table
    sample = "\n".join(f"    {line}" for line in result.notes_sample)
    return f"{table}\n\nThe first lines of NOTES.md, as the model wrote them:\n\n{sample}"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", action="store_true", help="5 files, 6 iterations")
    parser.add_argument(
        "--files", type=int, default=FILES, help=f"the N smallest files (default {FILES}; 0: all)"
    )
    args = parser.parse_args(argv)
    result = run(small=args.small, files=args.files)
    report = f"Command: `{result.command}`\n\n{to_markdown(result)}"
    print(report)
    return report


if __name__ == "__main__":
    main()
