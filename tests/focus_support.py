"""Shared by the tests of the task focus (tools.focus): a small project written from a dict, and
the focus over it as the CLI builds it."""

from __future__ import annotations

from pathlib import Path

from tinyharness.guide import StepsGuide, TaskPlan
from tinyharness.guide.focus import TaskFocus
from tinyharness.tools.files import ReadState, head_text, text_files
from tinyharness.tools.workspace import Workspace


def write_files(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def task_focus(root: Path, state: ReadState) -> TaskFocus:
    space = Workspace(root)
    return TaskFocus(
        lambda: text_files(space), state.lines_read, read_text=lambda p: head_text(space, p, 10_000)
    )


def started(focus: TaskFocus, task: str, kind: str | None = None) -> TaskFocus:
    """``focus`` handed ``task`` and a plan of ``kind`` (what the plan request or --kind says)."""
    focus.start(task, TaskPlan(kind))
    return focus


def guided(focus: TaskFocus, root: Path | None = None, kind: str | None = None) -> StepsGuide:
    """The guide over ``focus`` an Agent takes (``root``: the workspace, for edit choices)."""
    return StepsGuide(focus, plan=TaskPlan(kind), workspace=root)
