"""The task suite: checkable tasks on a workspace the suite builds, run through the CLI on the
local models, with harness features switched off one at a time.

Each task (``bench/tasks.py``) runs in a fresh copy of a small shop project as
``python -m tinyharness run TASK --model M --workspace WS --context-window 4096 --no-log
--quiet --events FILE`` in a subprocess (``--allow-write`` for the edit tasks), and its checker
reads the final answer and the workspace. The third half, ``unseen`` (``bench/tasks_unseen.py``),
runs on Python-Markdown 3.7, a pinned sdist the bench fetches, instead of the shop; the fourth,
``fourth`` (``bench/tasks_fourth.py``), held out the same way, on ItsDangerous 2.2.0; the fifth,
``fifth`` (``bench/tasks_fifth.py``), held out too, on pathspec 0.12.1; the sixth, ``sixth``
(``bench/tasks_sixth.py``), held out too, on cachetools 8.0.2; the seventh, ``seventh``
(``bench/tasks_seventh.py``), held out too, on tabulate 0.9.0; the eighth, ``eighth``
(``bench/tasks_eighth.py``), held out too, on isodate 0.7.2; the ninth, ``ninth``
(``bench/tasks_ninth.py``), held out too, on colorama 0.4.6; the tenth, ``tenth``
(``bench/tasks_tenth.py``), held out too, on idna 3.10; the eleventh, ``eleventh``
(``bench/tasks_eleventh.py``), held out too, on jmespath 1.0.1. Reported per model and variant:
tasks passed (tune, check, unseen, fourth, fifth, sixth, seventh, eighth, ninth, tenth and
eleventh halves; a right answer given after a limit stopped the run counts), wrong lines written
into the user's NOTES.md (``bench/notes_check.py``), the median seconds per task, runs that ended
by the model's own final answer, model calls, tokens billed (input + output), wall time. Runs are slow (the
0.5B model takes about a minute a task on 2 free cores), so results are cached in
``bench/.task_cache.json`` by model, variant and task; ``--fresh`` ignores the cache.

    python -m bench.task_suite --models smollm2,qwen2.5-coder-0.5b
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half check --variants base,no-flush
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half unseen
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half fourth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half fifth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half sixth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half seventh
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half eighth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half ninth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half tenth
    python -m bench.task_suite --models qwen2.5-coder-0.5b --half eleventh
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import (
    HERE,
    markdown_table,
    median,
    progress,
    tasks_eighth,
    tasks_eleventh,
    tasks_fifth,
    tasks_fourth,
    tasks_ninth,
    tasks_seventh,
    tasks_sixth,
    tasks_tenth,
    tasks_unseen,
)
from bench.notes_check import count_wrong
from bench.tasks import TASKS as FIRST_HALVES
from bench.tasks import Task, build_workspace

TASKS: tuple[Task, ...] = (
    FIRST_HALVES
    + tasks_unseen.TASKS
    + tasks_fourth.TASKS
    + tasks_fifth.TASKS
    + tasks_sixth.TASKS
    + tasks_seventh.TASKS
    + tasks_eighth.TASKS
    + tasks_ninth.TASKS
    + tasks_tenth.TASKS
    + tasks_eleventh.TASKS
)
HALVES = (
    "tune",
    "check",
    tasks_unseen.HALF,
    tasks_fourth.HALF,
    tasks_fifth.HALF,
    tasks_sixth.HALF,
    tasks_seventh.HALF,
    tasks_eighth.HALF,
    tasks_ninth.HALF,
    tasks_tenth.HALF,
    tasks_eleventh.HALF,
)

WINDOW = 4096
CACHE = HERE / ".task_cache.json"
TASK_TIMEOUT = 1800.0
MODELS = ("smollm2", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
# Features switched off one at a time, by CLI options that exist for users too.
VARIANTS: dict[str, list[str]] = {
    "base": [],
    "no-flush": ["--no-flush-notes"],
    "no-compaction": ["--strategy", "none"],
    "no-restore": ["--restore-files", "0"],
    "no-path-choices": ["--no-path-choices"],
    "no-focus": ["--no-task-focus"],
}


@dataclass
class TaskRun:
    model: str
    variant: str
    task: str
    half: str
    kind: str
    passed: bool
    exit_code: int
    stop: str
    model_calls: int
    tokens: int
    wall_s: float
    answer: str
    compactions: int = 0  # (rows cached before this was counted have 0)
    wrong_notes: int = -1  # lines wrongly written into NOTES.md (-1: not counted, an older row)


def model_string(name: str) -> str:
    return f"local:{name}"


NO_ANSWER = "(no final answer)"  # what a run that ended with none prints


def answered(task: Task, answer: str) -> bool:
    """Whether a task whose answer is checked got one: the harness's "(no final answer)" holds
    the word "no", which a yes/no checker read as the answer (jm-compliance passed so). A
    change's or a note's task is checked on the files, whatever the answer."""
    return task.kind in ("edit", "notes", "long") or answer.strip() != NO_ANSWER


def run_task(task: Task, model: str, variant: str, keep: Path | None = None) -> TaskRun:
    with tempfile.TemporaryDirectory(prefix="tinyharness-task-") as folder:
        workspace = Path(folder) / "ws"
        build_task_workspace(task, workspace)
        events = Path(folder) / "events.jsonl"
        argv = [
            sys.executable, "-m", "tinyharness", "run", task.prompt,
            "--model", model_string(model),
            "--workspace", str(workspace),
            "--context-window", str(WINDOW),
            "--max-iterations", str(task.max_iterations),
            "--events", str(events),
            "--no-log", "--quiet", "--no-memory",
            *VARIANTS[variant],
        ]  # fmt: skip
        if task.allow_write:
            argv.append("--allow-write")
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TASK_TIMEOUT, check=False)
            code, answer = done.returncode, done.stdout.strip()
        except subprocess.TimeoutExpired:
            code, answer = -9, ""
        wall = time.perf_counter() - start
        calls, tokens, stop, compactions = _from_events(events)
        passed = code in (0, 1) and answered(task, answer) and task.check(answer, workspace)
        wrong_notes = count_wrong(workspace, task.asks_for_notes)
        if keep is not None:  # to see what the model did: its events and the workspace after
            shutil.copytree(Path(folder), keep / f"{model}-{variant}-{task.name}", dirs_exist_ok=True)
    return TaskRun(
        model, variant, task.name, task.half, task.kind, passed, code, stop, calls, tokens, wall, answer,
        compactions, wrong_notes,
    )  # fmt: skip


def build_task_workspace(task: Task, workspace: Path) -> None:
    """The task's project in ``workspace``: the shop (with the task's extra files),
    Python-Markdown, ItsDangerous, pathspec, cachetools, tabulate, isodate, colorama, idna or jmespath
    (a pinned sdist, fetched once and verified)."""
    if task.project == tasks_unseen.PROJECT:
        tasks_unseen.build_workspace(workspace)
    elif task.project == tasks_fourth.PROJECT:
        tasks_fourth.build_workspace(workspace)
    elif task.project == tasks_fifth.PROJECT:
        tasks_fifth.build_workspace(workspace)
    elif task.project == tasks_sixth.PROJECT:
        tasks_sixth.build_workspace(workspace)
    elif task.project == tasks_seventh.PROJECT:
        tasks_seventh.build_workspace(workspace)
    elif task.project == tasks_eighth.PROJECT:
        tasks_eighth.build_workspace(workspace)
    elif task.project == tasks_ninth.PROJECT:
        tasks_ninth.build_workspace(workspace)
    elif task.project == tasks_tenth.PROJECT:
        tasks_tenth.build_workspace(workspace)
    elif task.project == tasks_eleventh.PROJECT:
        tasks_eleventh.build_workspace(workspace)
    else:
        build_workspace(workspace, task.extra)


def _from_events(path: Path) -> tuple[int, int, str, int]:
    """Model calls, tokens billed, how the run stopped, and its compactions."""
    calls = tokens = compactions = 0
    stop = ""
    if not path.exists():
        return calls, tokens, "no events", compactions
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("type") == "model_call":
            calls += 1
            usage = event.get("usage") or {}
            tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        elif event.get("type") == "compaction":
            compactions += 1
        elif event.get("type") == "run_end":
            stop = str(event.get("stop"))
    return calls, tokens, stop, compactions


def load_cache() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_runs() -> list[TaskRun]:
    """Every cached run, in the suite's task order."""
    order = {t.name: i for i, t in enumerate(TASKS)}
    runs = [_rechecked(TaskRun(**row)) for row in load_cache().values()]
    return sorted(
        runs,
        key=lambda r: (MODELS.index(r.model) if r.model in MODELS else 9, r.variant, order.get(r.task, 99)),
    )


ANSWER_KINDS = ("question", "find", "count")  # checked from the answer alone


def _rechecked(run: TaskRun) -> TaskRun:
    """A cached answer checked again by today's checker (a checker fixed after the run)."""
    task = next((t for t in TASKS if t.name == run.task), None)
    if task is None or task.kind not in ANSWER_KINDS:
        return run
    run.passed = run.exit_code in (0, 1) and task.check(run.answer, Path("."))
    return run


def save_cache(cache: dict[str, dict[str, Any]]) -> None:
    CACHE.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def run(
    models: list[str],
    variants: list[str],
    half: str = "all",
    fresh: bool = False,
    only: list[str] | None = None,
    keep: Path | None = None,
) -> list[TaskRun]:
    cache = {} if fresh else load_cache()
    runs: list[TaskRun] = []
    tasks = [t for t in TASKS if half in ("all", t.half) and (not only or t.name in only)]
    for model in models:
        for variant in variants:
            for index, task in enumerate(tasks, start=1):
                key = f"{model}|{variant}|{task.name}"
                if key in cache and not fresh:  # (the cache is reloaded after each run)
                    runs.append(TaskRun(**cache[key]))
                    continue
                progress(f"tasks: {model} {variant} {index}/{len(tasks)} {task.name}")
                result = run_task(task, model, variant, keep)
                progress(
                    f"tasks: {task.name}: {'pass' if result.passed else 'FAIL'} ({result.stop}, "
                    f"{result.model_calls} calls, {result.wall_s:.0f} s) answer: {result.answer[:100]!r}"
                )
                runs.append(result)
                cache = {**load_cache(), key: asdict(result)}  # another run may have added rows
                save_cache(cache)
    return runs


def summary_rows(runs: list[TaskRun]) -> list[list[object]]:
    groups: dict[tuple[str, str], list[TaskRun]] = {}
    for r in runs:
        groups.setdefault((r.model, r.variant), []).append(r)
    rows: list[list[object]] = []
    for (model, variant), group in groups.items():
        halves = [[r for r in group if r.half == half] for half in HALVES]
        counted = [r.wrong_notes for r in group if r.wrong_notes >= 0]
        rows.append(
            [
                model,
                variant,
                f"{sum(r.passed for r in group)}/{len(group)}",
                *(f"{sum(r.passed for r in half)}/{len(half)}" for half in halves),
                f"{sum(counted) / len(counted):.2f} ({len(counted)})" if counted else "-",
                f"{median([r.wall_s for r in group]):.0f}",
                f"{sum(r.stop == 'end_turn' for r in group)}/{len(group)}",
                f"{sum(r.model_calls for r in group) / len(group):.1f}",
                f"{sum(r.tokens for r in group) / len(group):,.0f}",
                f"{sum(r.wall_s for r in group) / len(group):.0f}",
                str(sum(r.compactions for r in group)),
            ]
        )
    return rows


def to_markdown(runs: list[TaskRun]) -> str:
    header = [
        "model",
        "variant",
        "passed",
        *HALVES,
        "wrong NOTES.md lines/task (tasks counted)",
        "median s/task",
        "ended by itself",
        "calls/task",
        "tokens/task",
        "wall s/task",
        "compactions",
    ]
    table = markdown_table(header, summary_rows(runs))
    kinds = sorted({r.kind for r in runs})
    per_kind = [
        [m, v, *(_kind_score(runs, m, v, k) for k in kinds)]
        for m, v in dict.fromkeys((r.model, r.variant) for r in runs)
    ]
    detail = markdown_table(["model", "variant", *kinds], per_kind)
    each = markdown_table(
        ["model", "variant", "task", "half", "passed", "stop", "calls", "compactions", "wall s",
         "wrong notes", "answer (start)"],
        [
            [r.model, r.variant, r.task, r.half, "yes" if r.passed else "no", r.stop, r.model_calls,
             r.compactions, f"{r.wall_s:.0f}", r.wrong_notes if r.wrong_notes >= 0 else "-", _cell(r.answer)]
            for r in runs
        ],
    )  # fmt: skip
    return f"{table}\n\nPassed by kind of task:\n\n{detail}\n\nEvery run:\n\n{each}"


def _cell(answer: str, limit: int = 70) -> str:
    """The start of an answer, on one line, as a table cell."""
    text = " ".join(answer.split()).replace("|", "/")
    return (text[:limit] or "(none)") if len(text) <= limit else text[:limit] + "…"


def _kind_score(runs: list[TaskRun], model: str, variant: str, kind: str) -> str:
    group = [r for r in runs if (r.model, r.variant, r.kind) == (model, variant, kind)]
    return f"{sum(r.passed for r in group)}/{len(group)}" if group else "-"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", default="smollm2,qwen2.5-coder-0.5b", help=f"comma list of {MODELS}")
    parser.add_argument("--variants", default="base", help=f"comma list of {tuple(VARIANTS)}")
    parser.add_argument("--half", choices=["all", *HALVES], default="all")
    parser.add_argument("--only", help="comma list of task names")
    parser.add_argument("--fresh", action="store_true", help="ignore cached results")
    parser.add_argument("--keep", type=Path, help="copy each run's events and workspace into this folder")
    args = parser.parse_args(argv)
    runs = run(
        args.models.split(","),
        args.variants.split(","),
        args.half,
        args.fresh,
        args.only.split(",") if args.only else None,
        args.keep,
    )
    report = to_markdown(runs)
    print(report)
    return report


if __name__ == "__main__":
    main()
