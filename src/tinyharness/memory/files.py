"""File memory: the command set of Anthropic's memory tool over one memory folder.

One tool named ``memory`` with a ``command`` argument, as in Anthropic's ``memory_20250818`` tool,
so models trained on that tool use it as they know it: ``view`` (a folder listing, or a file with
line numbers and an optional ``view_range``), ``create``, ``str_replace``, ``insert``, ``delete``,
``rename``. Paths are spelled ``/memories/...`` (a relative path means the same). Every path goes
through ``Workspace.resolve`` rooted at the memory folder: canonicalised, contained, no ``..`` or
``..\\``, no percent-encoded traversal, no symlink that leads out. Files are capped in size, reads
are paginated, writes are atomic and redacted (secrets never land in a memory file in clear).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Literal

from ..redact import redact
from ..tools.base import Tool, ToolError, function_tool
from ..tools.workspace import Workspace, atomic_write_text

MEMORY_ROOT = "/memories"
MAX_FILE_CHARS = 100_000
MAX_VIEW_LINES = 400
MAX_VIEW_CHARS = 16_000
MAX_LISTING = 300

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


class MemoryFolder:
    """The memory folder and the six commands on it (each returns text or raises ToolError)."""

    def __init__(self, folder: str | os.PathLike[str], *, max_file_chars: int = MAX_FILE_CHARS) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(folder)
        self.max_file_chars = max_file_chars

    # --- paths --------------------------------------------------------------------------------

    def resolve(self, path: str | None, *, must_exist: bool = False) -> Path:
        if not path or not isinstance(path, str):
            raise ToolError(f"a path is required, e.g. '{MEMORY_ROOT}/notes.md'")
        inner = path.replace("\\", "/")
        if inner == MEMORY_ROOT or inner == MEMORY_ROOT + "/":
            inner = ""
        elif inner.startswith(MEMORY_ROOT + "/"):
            inner = inner[len(MEMORY_ROOT) + 1 :]
        elif inner.startswith("/"):
            raise ToolError(f"refused path {path!r}: memory paths must be under {MEMORY_ROOT}/")
        real = self.workspace.resolve(inner)
        if must_exist and not real.exists():
            raise ToolError(f"{self.shown(real)} does not exist; view {MEMORY_ROOT} to see what is there")
        return real

    def shown(self, real: Path) -> str:
        relative = self.workspace.relative(real)
        return MEMORY_ROOT if relative == "." else f"{MEMORY_ROOT}/{relative}"

    def _file(self, path: str | None) -> Path:
        real = self.resolve(path, must_exist=True)
        if not real.is_file():
            raise ToolError(f"{self.shown(real)} is a folder, not a file")
        return real

    def _read(self, real: Path) -> str:
        try:
            return real.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{self.shown(real)} is not UTF-8 text") from None

    def _write(self, real: Path, text: str) -> str:
        if len(text) > self.max_file_chars:
            raise ToolError(
                f"{self.shown(real)} would hold {len(text)} characters; a memory file may hold at most "
                f"{self.max_file_chars}. Keep memories short, or split them into several files"
            )
        clean = redact(text)
        atomic_write_text(real, clean)
        return " (secrets and personal data were redacted)" if clean != text else ""

    # --- commands -----------------------------------------------------------------------------

    def view(self, path: str | None, view_range: list[int] | None = None) -> str:
        real = self.resolve(path or MEMORY_ROOT, must_exist=True)
        if real.is_dir():
            return self._listing(real)
        lines = self._read(real).splitlines()
        first, last = 1, len(lines)
        if view_range:
            if len(view_range) != 2:
                raise ToolError("view_range must be [start_line, end_line] (end_line -1: to the end)")
            first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if first < 1 or last < first:
                raise ToolError(f"bad view_range {view_range}: lines are numbered from 1 and end >= start")
        out: list[str] = []
        used = 0
        shown_last = first - 1
        for number in range(first, min(last, len(lines)) + 1):
            line = f"{number:6d}\t{lines[number - 1]}"
            if len(out) >= MAX_VIEW_LINES or used + len(line) > MAX_VIEW_CHARS:
                break
            out.append(line)
            used += len(line) + 1
            shown_last = number
        header = f"Here's the content of {self.shown(real)} with line numbers:"
        if shown_last < min(last, len(lines)):
            out.append(f"[... more lines: view with view_range [{shown_last + 1}, {last}] ...]")
        return "\n".join([header, *out])

    def _listing(self, folder: Path) -> str:
        entries: list[str] = []
        for current, dirs, files in os.walk(folder):
            depth = len(Path(current).relative_to(folder).parts)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < 1)
            for name in sorted(f for f in files if not f.startswith(".")):
                target = Path(current) / name
                entries.append(f"{_size(target)}\t{self.shown(target)}")
            for name in dirs:
                entries.append(f"-\t{self.shown(Path(current) / name)}/")
            if len(entries) >= MAX_LISTING:
                entries = [*entries[:MAX_LISTING], "[... more entries not shown ...]"]
                break
        header = f"Here are the files and directories up to 2 levels deep in {self.shown(folder)}:"
        return "\n".join([header, *entries]) if entries else f"{header}\n(empty)"

    def create(self, path: str | None, file_text: str) -> str:
        real = self.resolve(path)
        with self.workspace.write_lock:
            if real.exists():
                raise ToolError(f"{self.shown(real)} already exists; use str_replace or insert to change it")
            note = self._write(real, file_text)
        return f"File created successfully at: {self.shown(real)}{note}"

    def str_replace(self, path: str | None, old_str: str, new_str: str) -> str:
        if not old_str:
            raise ToolError("old_str must not be empty")
        with self.workspace.write_lock:
            real = self._file(path)
            text = self._read(real)
            found = text.count(old_str)
            if found == 0:
                raise ToolError(
                    f"old_str was not found in {self.shown(real)}; view the file and copy it exactly"
                )
            if found > 1:
                raise ToolError(f"old_str occurs {found} times in {self.shown(real)}; include more context")
            note = self._write(real, text.replace(old_str, new_str, 1))
        return f"The memory file {self.shown(real)} has been edited{note}."

    def insert(self, path: str | None, insert_line: int, insert_text: str) -> str:
        with self.workspace.write_lock:
            real = self._file(path)
            lines = self._read(real).splitlines(keepends=True)
            if not 0 <= insert_line <= len(lines):
                raise ToolError(f"insert_line must be between 0 and {len(lines)} (0 inserts at the top)")
            if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
                lines[-1] += "\n"
            block = insert_text if insert_text.endswith("\n") else insert_text + "\n"
            note = self._write(real, "".join(lines[:insert_line]) + block + "".join(lines[insert_line:]))
        return f"Text inserted at line {insert_line} of {self.shown(real)}{note}."

    def delete(self, path: str | None) -> str:
        with self.workspace.write_lock:
            real = self.resolve(path, must_exist=True)
            if real == self.workspace.root:
                raise ToolError(f"refusing to delete {MEMORY_ROOT} itself")
            if real.is_dir():
                shutil.rmtree(real)
            else:
                real.unlink()
        return f"Deleted {self.shown(real)}"

    def rename(self, old_path: str | None, new_path: str | None) -> str:
        with self.workspace.write_lock:
            source = self.resolve(old_path, must_exist=True)
            target = self.resolve(new_path)
            if source == self.workspace.root:
                raise ToolError(f"refusing to rename {MEMORY_ROOT} itself")
            if target.exists():
                raise ToolError(f"{self.shown(target)} already exists; delete it first or pick another name")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
        return f"Renamed {self.shown(source)} to {self.shown(target)}"


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size}B" if size < 1024 else f"{size / 1024:.1f}K"


def memory_tools(folder: str | os.PathLike[str], *, max_file_chars: int = MAX_FILE_CHARS) -> list[Tool]:
    """The ``memory`` tool (Anthropic's memory-tool commands) over ``folder``."""
    memories = MemoryFolder(folder, max_file_chars=max_file_chars)

    def memory(
        command: Command,
        path: str | None = None,
        view_range: list[int] | None = None,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        insert_text: str | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> str:
        """Your memory folder /memories, kept across sessions. Check it at the start of a task;
        record progress, decisions and what you learned as you go.

        Args:
            command: view | create | str_replace | insert | delete | rename.
            path: A path under /memories, e.g. "/memories/project.md" (all but rename).
            view_range: For view of a file: [start_line, end_line], end_line -1 for the end.
            file_text: For create: the content of the new file.
            old_str: For str_replace: the exact text to replace (must occur once).
            new_str: For str_replace: the replacement text.
            insert_line: For insert: the line after which to insert (0: at the top).
            insert_text: For insert: the text to insert.
            old_path: For rename: the current path.
            new_path: For rename: the new path.
        """
        if command == "view":
            return memories.view(path, view_range)
        if command == "create":
            return memories.create(path, _required(file_text, "file_text", command))
        if command == "str_replace":
            return memories.str_replace(path, _required(old_str, "old_str", command), new_str or "")
        if command == "insert":
            if insert_line is None:
                raise ToolError("insert needs insert_line")
            return memories.insert(path, insert_line, _required(insert_text, "insert_text", command))
        if command == "delete":
            return memories.delete(path)
        if command == "rename":
            return memories.rename(old_path, new_path)
        raise ToolError(
            f"unknown command {command!r}; use view, create, str_replace, insert, delete or rename"
        )

    return [function_tool(memory, risk="write")]


def _required(value: str | None, name: str, command: str) -> str:
    if value is None:
        raise ToolError(f"{command} needs {name}")
    return value
