"""The task suite's window-filling tasks (bench/tasks.py, kind "long"): a question whose answer is
a fact of the first file read, asked after six or seven files of about 1,500 tokens each. At
window 4096 (compaction at 2867 tokens) the reads cannot all stay in the window, so a run of
these tasks compacts, and the notes flush, compaction and restore ablations change something
(no other task of the suite reached a compaction)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tinyharness.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the bench/ folder is no package
from bench.task_suite import WINDOW, _from_events
from bench.tasks import TASKS, Task, build_workspace

LONG = [task for task in TASKS if task.kind == "long"]


def _task(name: str) -> Task:
    return next(task for task in TASKS if task.name == name)


def test_each_half_has_a_window_filling_task() -> None:
    assert {task.half for task in LONG} == {"tune", "check"}


@pytest.mark.parametrize(
    ("name", "fact", "first", "wrong"),
    [
        ("long-handbook", "7311", "docs/handbook/01-backups.md", "The backup service listens on port 9102."),
        ("long-guide", "19 days", "docs/guide/setup.md", "Job logs are kept for 30 days."),
    ],
)
def test_the_answer_is_a_fact_of_the_first_file_only_and_the_checker_knows_it(
    name: str, fact: str, first: str, wrong: str
) -> None:
    task = _task(name)
    holding = [path for path, text in task.extra.items() if fact in text]
    assert holding == [first]
    assert task.extra[first].index(fact) < 1_000  # on the first page of a read, whatever the window
    assert min(len(text) for text in task.extra.values()) > 5_500  # ~1,500 tokens each
    assert 6 <= len(task.extra) <= 8
    assert task.check(f"It is {fact}.", Path(".")) and not task.check(wrong, Path("."))


def _use(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": f"c{n}", "name": name, "input": args}],
        "usage": {"input_tokens": 900, "output_tokens": 20},
        "purpose": "agent",
    }


@pytest.mark.parametrize("name", [task.name for task in LONG])
def test_a_run_that_reads_every_file_compacts_at_window_4096(tmp_path: Path, name: str) -> None:
    """Scripted: the guide reads each file (the first one first), the model notes a finding
    after each and answers; the run's events show a compaction after the first read and
    before the answer. The window is counted from its text (``--counter chars4``): the
    script's reported token counts are made up."""
    task = _task(name)
    workspace = tmp_path / "ws"
    build_workspace(workspace, task.extra)
    reads: list[dict[str, Any]] = []  # the guide makes the reads itself: no response for them
    if task.kind == "long":  # a question over a set of files: after each read, its finding
        reads = [
            {**_use(100 + n, "note", {"path": path, "text": "nothing"}), "purpose": "flush"}  # a side request
            for n, path in enumerate(task.extra)
        ]
    answer = {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "7311, 19 days"}],
        "usage": {"input_tokens": 900, "output_tokens": 5},
        "purpose": "agent",
    }
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [*reads, answer]}), encoding="utf-8")
    events = tmp_path / "events.jsonl"
    # The plan stated by flags, as a user would: the scripted model answers no plan request.
    folder = os.path.commonpath(list(task.extra))
    each = f"{folder}/*{os.path.splitext(next(iter(task.extra)))[1]}"
    code = main(
        [
            "run", task.prompt, "--model", f"scripted:{script}", "--workspace", str(workspace),
            "--context-window", str(WINDOW), "--counter", "chars4", "--task-focus",
            "--each", each, "--kind", "answer",
            "--max-iterations", str(task.max_iterations), "--events", str(events),
            "--no-log", "--no-memory", "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    kinds = [e["type"] for e in lines]
    first_read = next(i for i, e in enumerate(lines) if e["type"] == "tool_call")
    assert lines[first_read]["args"]["path"] == next(iter(task.extra))
    assert "compaction" in kinds[first_read:]
    calls, _tokens, stop, compactions = _from_events(events)  # what the suite reports
    assert stop == "end_turn" and compactions >= 1 and calls >= len(task.extra) + 1
    read = [e["args"]["path"] for e in lines if e["type"] == "tool_call" and e["name"] == "read_file"]
    assert read == list(task.extra)  # every file, in order, by the guide
