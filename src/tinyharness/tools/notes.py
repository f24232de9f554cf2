"""The notes file (external memory): ``note`` appends a line (seed 000), ``update_notes``
overwrites the whole file (seed 001). Both write atomically, so a killed process leaves the old
notes or the new ones, never half a file. The loop reads the notes back at compaction.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from .base import Tool, ToolError, function_tool
from .workspace import atomic_write_text

DEFAULT_NOTES_NAME = "NOTES.md"
DEFAULT_MAX_NOTES_CHARS = 100_000
NOTES_TOOL_NAMES = frozenset({"note", "update_notes"})

OnWrite = Callable[[str, int], object]  # any return value is ignored
_log = logging.getLogger(__name__)


class NotesFile:
    """One notes file. ``on_write(op, chars)`` is called after each successful write with
    ``op`` "append" or "overwrite" and the number of characters the call wrote."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        on_write: OnWrite | None = None,
        *,
        max_chars: int = DEFAULT_MAX_NOTES_CHARS,
    ) -> None:
        self.path = Path(path)
        self.on_write = on_write
        self.max_chars = max_chars
        # Parallel tool calls run in threads; an append is read-modify-write and must not race.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NotesFile({str(self.path)!r})"

    def read(self) -> str:
        """The notes, or "" if the file does not exist yet."""
        try:
            return self.path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def append(self, text: str) -> str:
        line = text.strip("\n")
        if not line.strip():
            raise ToolError("the note is empty; pass the text to remember")
        with self._lock:
            current = self.read()
            separator = "" if not current or current.endswith("\n") else "\n"
            updated = f"{current}{separator}{line}\n"
            self._check_size(updated, "append")
            self._write(updated)
        self._report("append", len(line) + 1)
        return f"Noted in {self.path.name} ({len(updated)} characters in total)"

    def overwrite(self, content: str) -> str:
        updated = content if not content or content.endswith("\n") else content + "\n"
        with self._lock:
            self._check_size(updated, "overwrite")
            self._write(updated)
        self._report("overwrite", len(updated))
        return f"{self.path.name} updated ({len(updated)} characters)"

    def tools(self) -> list[Tool]:
        """The ``note`` and ``update_notes`` tools, bound to this file."""

        def note(text: str) -> str:
            """Append a line to the notes file (external memory that survives context
            compaction). Use it for key findings, decisions and what is left to do.

            Args:
                text: What to remember, one line or a short paragraph.
            """
            return self.append(text)

        def update_notes(content: str) -> str:
            """Replace the whole notes file with new content (keep what still matters: decisions,
            open problems, next steps). The notes are read back after context compaction.

            Args:
                content: The complete new notes; everything not included is dropped.
            """
            return self.overwrite(content)

        # risk "write" is honest; Permissions exempts these names because they only touch
        # the notes file.
        return [function_tool(note, risk="write"), function_tool(update_notes, risk="write")]

    def _check_size(self, updated: str, op: str) -> None:
        if len(updated) <= self.max_chars:
            return
        hint = "rewrite them shorter with update_notes" if op == "append" else "shorten them"
        raise ToolError(
            f"the notes would be {len(updated)} characters, over the {self.max_chars} limit; {hint}"
        )

    def _write(self, text: str) -> None:
        try:
            atomic_write_text(self.path, text)
        except OSError as exc:
            raise ToolError(f"cannot write {self.path.name}: {exc.strerror or exc}") from None

    def _report(self, op: str, chars: int) -> None:
        if self.on_write is None:
            return
        try:
            self.on_write(op, chars)
        except Exception:  # the write succeeded; a failing listener must not make it look failed
            _log.exception("notes on_write callback failed")
