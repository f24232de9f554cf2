"""File memory: the command set of Anthropic's memory tool over one memory folder.

One tool named ``memory`` with a ``command`` argument, as in Anthropic's ``memory_20250818`` tool,
so models trained on that tool use it as they know it: ``view`` (a folder listing, or a file with
line numbers and an optional ``view_range``), ``create``, ``str_replace``, ``insert``, ``delete``,
``rename``. Paths are spelled ``/memories/...`` (a relative path means the same). Every path goes
through ``Workspace.inner`` rooted at the memory folder (no ``..`` or ``..\\``, no
percent-encoded traversal) and is opened through ``tinyharness.safefs``: no symlink leads out,
even one swapped in by another process, and a FIFO or device is refused instead of blocking.
Files are capped in size, views stream and are paginated, edits hold an OS-level lock on the
folder, writes are atomic and redacted (secrets never land in a memory file in clear).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from ..redact import redact
from ..safefs import LOCK_TIMEOUT, Spot, lock_fd, make_folder
from ..tools.base import Tool, ToolError, function_tool
from ..tools.workspace import Workspace, fs_error

MEMORY_ROOT = "/memories"
MAX_FILE_CHARS = 100_000
MAX_VIEW_LINES = 400
MAX_VIEW_CHARS = 16_000
MAX_VIEW_LINE_BYTES = 8_000  # one line of a view; the rest of a longer line is skipped, not loaded
MAX_VIEW_SCAN_BYTES = 64 << 20  # lines after the view are counted in this much of the file
MAX_LISTING = 300

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


class MemoryFolder:
    """The memory folder and the six commands on it (each returns text or raises ToolError).

    Files are opened through ``tinyharness.safefs`` (no link leads out, no FIFO blocks a view);
    every command that changes the folder holds an OS-level lock on the folder, so several
    processes sharing it do not lose each other's edits."""

    def __init__(self, folder: str | os.PathLike[str], *, max_file_chars: int = MAX_FILE_CHARS) -> None:
        make_folder(folder)
        self.workspace = Workspace(folder)
        self.folder = self.workspace.folder
        self.max_file_chars = max_file_chars

    # --- paths --------------------------------------------------------------------------------

    def inner(self, path: str | None) -> str:
        """``/memories/a/b.md`` (or ``a/b.md``) as the path relative to the folder."""
        if not path or not isinstance(path, str):
            raise ToolError(f"a path is required, e.g. '{MEMORY_ROOT}/notes.md'")
        inner = path.replace("\\", "/")
        if inner == MEMORY_ROOT or inner == MEMORY_ROOT + "/":
            inner = ""
        elif inner.startswith(MEMORY_ROOT + "/"):
            inner = inner[len(MEMORY_ROOT) + 1 :]
        elif inner.startswith("/"):
            raise ToolError(f"refused path {path!r}: memory paths must be under {MEMORY_ROOT}/")
        return self.workspace.inner(inner)

    def shown(self, real: Path | str) -> str:
        relative = self.workspace.relative(real) if isinstance(real, Path) else real
        return MEMORY_ROOT if relative in (".", "") else f"{MEMORY_ROOT}/{relative}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The whole folder locked against other processes and threads (``flock``)."""
        try:
            fd = os.open(self.folder.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"cannot open {MEMORY_ROOT}: {exc.strerror or exc}") from None
        try:
            try:
                lock_fd(fd, LOCK_TIMEOUT, MEMORY_ROOT)
            except OSError as exc:
                raise fs_error(exc, MEMORY_ROOT) from None
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _file(self, path: str | None) -> Iterator[Spot]:
        """An existing regular file, its folder open, for reading and writing through the Spot."""
        inner = self.inner(path)
        try:
            with self.folder.at(inner) as spot:
                info = spot.lstat()
                if info is None:
                    raise ToolError(
                        f"{self.shown(spot.relative)} does not exist; view {MEMORY_ROOT} to see what is there"
                    )
                if stat.S_ISDIR(info.st_mode):
                    raise ToolError(f"{self.shown(spot.relative)} is a folder, not a file")
                yield spot
        except OSError as exc:
            raise fs_error(exc, path or "") from None

    def _read(self, spot: Spot) -> str:
        """The whole file for an edit; a file larger than a memory file may be is refused, not
        loaded."""
        limit = self.max_file_chars * 4 + 4
        data, size = spot.read(limit)
        if size > len(data):
            raise ToolError(
                f"{self.shown(spot.relative)} is {size} bytes, more than a memory file may hold; "
                "delete it or view parts of it with view_range"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{self.shown(spot.relative)} is not UTF-8 text") from None

    def _write(self, spot: Spot, text: str) -> str:
        if len(text) > self.max_file_chars:
            raise ToolError(
                f"{self.shown(spot.relative)} would hold {len(text)} characters; a memory file may hold "
                f"at most {self.max_file_chars}. Keep memories short, or split them into several files"
            )
        clean = redact(text)
        spot.write(clean.encode("utf-8"))
        return " (secrets and personal data were redacted)" if clean != text else ""

    # --- commands -----------------------------------------------------------------------------

    def view(self, path: str | None, view_range: list[int] | None = None) -> str:
        inner = self.inner(path or MEMORY_ROOT)
        try:
            info = self.folder.stat(inner)
        except OSError as exc:
            raise fs_error(exc, path or MEMORY_ROOT) from None
        if info is None:
            raise ToolError(f"{self.shown(inner)} does not exist; view {MEMORY_ROOT} to see what is there")
        if stat.S_ISDIR(info.st_mode):
            return self._listing(inner)
        first, last = 1, -1
        if view_range:
            if len(view_range) != 2:
                raise ToolError("view_range must be [start_line, end_line] (end_line -1: to the end)")
            first, last = view_range
            if first < 1 or (last != -1 and last < first):
                raise ToolError(f"bad view_range {view_range}: lines are numbered from 1 and end >= start")
        try:
            handle, real = self.folder.open_read(inner)
        except OSError as exc:
            raise fs_error(exc, path or "") from None
        with handle:
            out, shown_last, total, counted = _view_lines(handle, first, last)
        header = f"Here's the content of {self.shown(real)} with line numbers:"
        end = total if last == -1 else min(last, total)
        if shown_last < end or not counted:
            until = last if last != -1 or not counted else total
            out.append(f"[... more lines: view with view_range [{shown_last + 1}, {until}] ...]")
        return "\n".join([header, *out])

    def _listing(self, inner: str) -> str:
        entries: list[str] = []
        try:
            with self.folder.open_dir(inner) as (fd, parts):
                shown_top = "/".join(parts)
                for name, info, sub in _entries(fd, depth=2):
                    relative = "/".join(p for p in (shown_top, name) if p)
                    if sub:
                        entries.append(f"-\t{self.shown(relative)}/")
                    else:
                        entries.append(f"{_size(info.st_size)}\t{self.shown(relative)}")
                    if len(entries) >= MAX_LISTING:
                        entries.append("[... more entries not shown ...]")
                        break
        except OSError as exc:
            raise fs_error(exc, inner) from None
        header = f"Here are the files and directories up to 2 levels deep in {self.shown(shown_top)}:"
        return "\n".join([header, *entries]) if entries else f"{header}\n(empty)"

    def create(self, path: str | None, file_text: str) -> str:
        inner = self.inner(path)
        with self._locked():
            try:
                with self.folder.at(inner, create_dirs=True) as spot:
                    if spot.lstat() is not None:
                        shown = self.shown(spot.relative)
                        raise ToolError(f"{shown} already exists; use str_replace or insert to change it")
                    note = self._write(spot, file_text)
            except OSError as exc:
                raise fs_error(exc, path or "") from None
        return f"File created successfully at: {self.shown(spot.relative)}{note}"

    def str_replace(self, path: str | None, old_str: str, new_str: str) -> str:
        if not old_str:
            raise ToolError("old_str must not be empty")
        with self._locked(), self._file(path) as spot:
            text = self._read(spot)
            shown = self.shown(spot.relative)
            found = text.count(old_str)
            if found == 0:
                raise ToolError(f"old_str was not found in {shown}; view the file and copy it exactly")
            if found > 1:
                raise ToolError(f"old_str occurs {found} times in {shown}; include more context")
            note = self._write(spot, text.replace(old_str, new_str, 1))
        return f"The memory file {shown} has been edited{note}."

    def insert(self, path: str | None, insert_line: int, insert_text: str) -> str:
        with self._locked(), self._file(path) as spot:
            lines = self._read(spot).splitlines(keepends=True)
            if not 0 <= insert_line <= len(lines):
                raise ToolError(f"insert_line must be between 0 and {len(lines)} (0 inserts at the top)")
            if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
                lines[-1] += "\n"
            block = insert_text if insert_text.endswith("\n") else insert_text + "\n"
            note = self._write(spot, "".join(lines[:insert_line]) + block + "".join(lines[insert_line:]))
            shown = self.shown(spot.relative)
        return f"Text inserted at line {insert_line} of {shown}{note}."

    def delete(self, path: str | None) -> str:
        inner = self.inner(path)
        with self._locked():
            shown = self.shown("/".join(self.folder.real_parts(inner)) if inner != "." else ".")
            if shown == MEMORY_ROOT:
                raise ToolError(f"refusing to delete {MEMORY_ROOT} itself")
            try:
                self.folder.remove(inner)
            except FileNotFoundError:
                raise ToolError(f"{shown} does not exist; view {MEMORY_ROOT} to see what is there") from None
            except OSError as exc:
                raise fs_error(exc, path or "") from None
        return f"Deleted {shown}"

    def rename(self, old_path: str | None, new_path: str | None) -> str:
        source, target = self.inner(old_path), self.inner(new_path)
        with self._locked():
            if not self.folder.real_parts(source):
                raise ToolError(f"refusing to rename {MEMORY_ROOT} itself")
            try:
                self.folder.rename(source, target)
            except FileNotFoundError:
                raise ToolError(
                    f"{self.shown(source)} does not exist; view {MEMORY_ROOT} to see what is there"
                ) from None
            except FileExistsError:
                raise ToolError(
                    f"{self.shown(target)} already exists; delete it first or pick another name"
                ) from None
            except OSError as exc:
                raise fs_error(exc, new_path or "") from None
        return f"Renamed {self.shown(source)} to {self.shown(target)}"


def _view_lines(handle: BinaryIO, first: int, last: int) -> tuple[list[str], int, int, bool]:
    """Numbered lines ``first``..``last`` (-1: to the end) within the view's caps, read line by
    line (a long line is cut, never loaded whole); then the number of the last line shown, the
    number of lines counted and whether the count reached the end of the file."""
    out: list[str] = []
    used = 0
    shown_last = first - 1
    number = 0
    scanned = 0
    full = False
    while raw := handle.readline(MAX_VIEW_LINE_BYTES):
        scanned += len(raw)
        if not raw.endswith(b"\n") and len(raw) == MAX_VIEW_LINE_BYTES:
            while rest := handle.readline(1 << 20):  # skip the rest of an over-long line
                scanned += len(rest)
                if rest.endswith(b"\n"):
                    break
        number += 1
        if number < first or full or (last != -1 and number > last):
            if full and scanned > MAX_VIEW_SCAN_BYTES:
                return out, shown_last, number, False
            continue
        line = f"{number:6d}\t{raw.decode('utf-8', errors='replace').rstrip(chr(13) + chr(10))}"
        if len(out) >= MAX_VIEW_LINES or used + len(line) > MAX_VIEW_CHARS:
            full = True
            continue
        out.append(line)
        used += len(line) + 1
        shown_last = number
    return out, shown_last, number, True


def _entries(fd: int, depth: int) -> Iterator[tuple[str, os.stat_result, bool]]:
    """(relative name, status, is a folder) for the entries under the folder ``fd``, files
    first then folders at each level, down to ``depth`` levels; hidden names and links to
    folders are left out, and links are never followed out of the folder."""
    names = sorted(n for n in os.listdir(fd) if not n.startswith("."))
    folders: list[str] = []
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            folders.append(name)
        elif not stat.S_ISLNK(info.st_mode):
            yield name, info, False
    for name in folders:
        if depth > 1:
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                continue
            try:
                for inner, info, is_dir in _entries(sub, depth - 1):
                    yield f"{name}/{inner}", info, is_dir
            finally:
                os.close(sub)
        yield name, os.stat(name, dir_fd=fd, follow_symlinks=False), True


def _size(size: int) -> str:
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
