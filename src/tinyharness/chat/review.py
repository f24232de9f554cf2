"""Writes the user sees before they happen, and can take back.

``WriteReview.attach(registry)`` puts itself in front of the registry's permission policy. For
a write tool (``write_file``, ``edit_file``) it first snapshots the file (its bytes, or that it
did not exist), then lets the policy decide; when the policy would ask the user, the question
shows the unified diff of the change and takes yes, no, or always (an allow rule for the file's
folder, kept for the rest of the chat). ``undo()`` puts back every file the last turn wrote,
byte for byte. Deny rules still win: "always" only adds allow rules.

An answer means what the user saw: the "always" rule matches the folder's name literally (a
folder named ``*`` or ``[a]`` allows that folder, nothing else), and when the file changes
while the question is open (the user edited it), the question is asked again with the new diff.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tools.base import PermissionPolicy, Tool, ToolError, ToolRegistry
from ..tools.permissions import Permissions, Rule
from ..tools.workspace import Workspace, atomic_write_bytes

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
        """Put back the files the last turn that wrote any wrote, byte for byte; the paths
        restored. A file that cannot be put back keeps its snapshot for the next ``undo``."""
        restored, kept = [], {}
        for key, snap in self._last.items():
            try:
                if snap.before is None:
                    snap.path.unlink(missing_ok=True)
                else:
                    atomic_write_bytes(snap.path, snap.before)
            except OSError:
                kept[key] = snap
                continue
            restored.append(snap.shown)
        self._last = kept
        return sorted(restored)

    def snapshot(self, args: dict[str, Any], *, again: bool = False) -> bool:
        """Remember the file ``args`` names as it is, unless this turn already did (the state
        before the turn's first write is the one to go back to); ``again`` replaces a snapshot.
        True when one was taken."""
        raw = args.get("path")
        if not isinstance(raw, str):
            return False
        try:
            target = self.workspace.resolve(raw)
        except ToolError:
            return False  # the tool refuses this path itself
        if target in self._turn and not again:
            return False
        try:
            before: bytes | None = target.read_bytes() if target.is_file() else None
        except OSError:
            return False
        self._turn[target] = Snapshot(target, self.workspace.relative(target), before)
        return True

    # --- the question -------------------------------------------------------------------------

    def decide(self, tool: Tool, args: dict[str, Any]) -> bool:
        shown = args.get("path") if isinstance(args.get("path"), str) else ""
        pattern = always_pattern(str(shown))
        question = f"{tool.name} {shown}"
        while True:
            seen = self._current(args)
            answer = self.ask(proposed_change(self.workspace, tool.name, args), question, pattern)
            if answer not in ("y", "a"):
                return False
            if self._current(args) == seen:
                break
            # The file changed while the question was open: the diff answered is not the change
            # that would be made. Ask again with the diff as it is now.
            question = f"{tool.name} {shown} (the file changed while you were deciding)"
        if answer == "a":
            self.always.extend(Rule(name, always_rule(str(shown))) for name in WRITE_TOOLS)
        return True

    def _current(self, args: dict[str, Any]) -> bytes | str | None:
        """The bytes of the file ``args`` names (None: there is none), or why it cannot be read."""
        try:
            target = self.workspace.resolve(str(args.get("path")))
            return target.read_bytes() if target.is_file() else None
        except (ToolError, OSError) as exc:
            return f"unreadable: {exc}"


class _Reviewing:
    """The registry's permission policy, with snapshots before writes and the diff question."""

    def __init__(self, inner: PermissionPolicy, review: WriteReview) -> None:
        self.inner = inner
        self.review = review
        self.base_allow = inner.allow if isinstance(inner, Permissions) else ()

    def check(self, tool: Tool, args: dict[str, Any]) -> None:
        fresh = tool.name in WRITE_TOOLS and self.review.snapshot(args)
        if isinstance(self.inner, Permissions):
            self.inner.allow = (*self.base_allow, *self.review.always)
            self.inner.confirm = lambda _question: self.review.decide(tool, args)
        self.inner.check(tool, args)
        if fresh:  # allowed: what /undo puts back is the file as it is now (edits made meanwhile)
            self.review.snapshot(args, again=True)


def always_pattern(path: str) -> str:
    """The rule pattern "always" allows: the file's folder, or the file itself at the top."""
    cleaned = posixpath.normpath(path.replace("\\", "/")).removeprefix("./")
    folder = posixpath.dirname(cleaned)
    return f"{folder}/*" if folder else cleaned


def always_rule(path: str) -> str:
    """The allow-rule pattern for ``always_pattern(path)``: the folder (or file) name matched
    literally, ``*``, ``?`` and ``[`` in it escaped for fnmatch."""
    cleaned = posixpath.normpath(path.replace("\\", "/")).removeprefix("./")
    folder = posixpath.dirname(cleaned)
    return f"{_literal(folder)}/*" if folder else _literal(cleaned)


def _literal(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


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
