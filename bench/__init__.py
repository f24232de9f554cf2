"""tinyharness benchmarks: speed, token economy, memory and a real end-to-end run.

``python -m bench`` runs them all and writes ``bench/RESULTS.md`` (``--small`` for a quick
pass). Each module also runs alone (``python -m bench.loop_overhead``...). Every comparison runs
both sides in the same process run, so ratios hold on a shared, noisy machine.

This module holds what they share: a description of the machine (no host names, no paths),
the machine's load, medians, and a Markdown table renderer.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (Linux), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def ram_gib() -> float | None:
    """Total RAM in GiB from /proc/meminfo, or None when it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def machine_line() -> str:
    """One line: CPU model, usable cores, RAM, Python and OS kernel family (no host names)."""
    ram = ram_gib()
    ram_text = f"{ram:.0f} GiB RAM" if ram is not None else "RAM unknown"
    python = f"Python {platform.python_version()} ({platform.python_implementation()})"
    return f"{cpu_model()}, {cores()} cores, {ram_text}, {python}, {platform.system()} {platform.machine()}"


def load_line() -> str:
    """The 1/5/15-minute load averages against the core count, flagged when the machine is busy."""
    load = load_average()
    if load is None:
        return "load: unknown"
    busy = " (busy: other work shared the CPUs, absolute times are inflated; ratios hold)"
    flag = busy if load[0] > 0.5 * cores() else ""
    return f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on {cores()} cores{flag}"


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    """A GitHub Markdown table; ``align`` holds one of l/r per column (default: first column
    left, the rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def progress(message: str) -> None:
    """A progress line on stderr, so stdout stays the report."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)
