"""Writes the user sees before they happen, and can take back.

``WriteReview.attach(registry)`` puts itself in front of the registry's permission policy. For
a write tool (``write_file``, ``edit_file``) it first snapshots the file (its bytes, or that it
did not exist), then lets the policy decide; when the policy would ask the user, the question
shows the unified diff of the change and takes yes, no, or always (an allow rule for the file's
folder, kept for the rest of the chat). ``undo()`` puts back every file the last turn wrote.
Deny rules still win: "always" only adds allow rules.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tools.base import PermissionPolicy, Tool, ToolError, ToolRegistry
from ..tools.permissions import Permissions, Rule
from ..tools.workspace import Workspace, atomic_write_text

WRITE_TOOLS = ("write_file", "edit_file")
MAX_DIFF_LINES = 400

# (the diff or description to show, the question, the "always" pattern) -> "y", "n" or "a"
Ask = Callable[[str, str, str], str]


@dataclass(frozen=True)
class Snapshot:
    path: Path
    shown: str  # relative to the workspace
    before: bytes | None  # None: the file did not exist


class WriteReview:
    def __init__(self, workspace: Path, ask: Ask) -> None:
        self.workspace = Workspace(workspace)
        self.ask = ask
        self.always: list[Rule] = []
        self._turn: dict[Path, Snapshot] = {}
        self._last: dict[Path, Snapshot] = {}

    def attach(self, registry: ToolRegistry) -> None:
        registry.permissions = _Reviewing(registry.permissions, self)

    # --- turns and undo -----------------------------------------------------------------------

    def begin_turn(self) -> None:
        self._turn = {}

    def end_turn(self) -> None:
        if self._turn:
            self._last = self._turn
        self._turn = {}

    def undoable(self) -> list[str]:
        return sorted(s.shown for s in self._last.values())

    def undo(self) -> list[str]:
        """Put back the files the last turn that wrote any wrote; the paths restored."""
        restored = []
        for snap in self._last.values():
            try:
                if snap.before is None:
                    snap.path.unlink(missing_ok=True)
                else:
                    atomic_write_text(snap.path, snap.before.decode("utf-8", errors="surrogateescape"))
            except OSError:
                continue
            restored.append(snap.shown)
        self._last = {}
        return sorted(restored)

    def snapshot(self, args: dict[str, Any]) -> None:
        raw = args.get("path")
        if not isinstance(raw, str):
            return
        try:
            target = self.workspace.resolve(raw)
        except ToolError:
            return  # the tool refuses this path itself
        if target in self._turn:
            return  # the state before the turn's first write is the one to go back to
        try:
            before: bytes | None = target.read_bytes() if target.is_file() else None
        except OSError:
            return
        self._turn[target] = Snapshot(target, self.workspace.relative(target), before)

    # --- the question -------------------------------------------------------------------------

    def decide(self, tool: Tool, args: dict[str, Any]) -> bool:
        shown = args.get("path") if isinstance(args.get("path"), str) else ""
        pattern = always_pattern(str(shown))
        answer = self.ask(proposed_change(self.workspace, tool.name, args), f"{tool.name} {shown}", pattern)
        if answer == "a":
            self.always.extend(Rule(name, pattern) for name in WRITE_TOOLS)
        return answer in ("y", "a")


class _Reviewing:
    """The registry's permission policy, with snapshots before writes and the diff question."""

    def __init__(self, inner: PermissionPolicy, review: WriteReview) -> None:
        self.inner = inner
        self.review = review
        self.base_allow = inner.allow if isinstance(inner, Permissions) else ()

    def check(self, tool: Tool, args: dict[str, Any]) -> None:
        if tool.name in WRITE_TOOLS:
            self.review.snapshot(args)
        if isinstance(self.inner, Permissions):
            self.inner.allow = (*self.base_allow, *self.review.always)
            self.inner.confirm = lambda _question: self.review.decide(tool, args)
        self.inner.check(tool, args)


def always_pattern(path: str) -> str:
    """The rule pattern "always" allows: the file's folder, or the file itself at the top."""
    cleaned = posixpath.normpath(path.replace("\\", "/")).removeprefix("./")
    folder = posixpath.dirname(cleaned)
    return f"{folder}/*" if folder else cleaned


def proposed_change(workspace: Workspace, tool_name: str, args: dict[str, Any]) -> str:
    """The unified diff a write would make, or a line saying why there is none."""
    raw = args.get("path")
    if not isinstance(raw, str):
        return f"{tool_name}: no path given"
    try:
        target = workspace.resolve(raw)
        old = target.read_text(encoding="utf-8") if target.is_file() else ""
    except (ToolError, OSError, UnicodeDecodeError) as exc:
        return f"{tool_name} {raw}: {exc}"
    if tool_name == "write_file":
        new = str(args.get("content", ""))
    else:
        find, replace = str(args.get("old", "")), str(args.get("new", ""))
        count = old.count(find) if find else 0
        if count != 1:
            return f"edit_file {raw}: the text to replace is found {count} times (the edit will fail)"
        new = old.replace(find, replace, 1)
    shown = workspace.relative(target)
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            "/dev/null" if not target.exists() else f"a/{shown}",
            f"b/{shown}",
        )
    )
    if not lines:
        return f"{tool_name} {shown}: no change"
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
