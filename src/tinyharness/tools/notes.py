"""The notes file (external memory): ``note`` appends a line, ``update_notes`` overwrites the
whole file. Both write atomically, so a killed process leaves the old
notes or the new ones, never half a file. The loop reads the notes back at compaction. Secrets
and personal data are redacted before anything is written (``tinyharness.redact``), and the tool
result says so.
"""

from __future__ import annotations

import logging
import os
import threading

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..redact import find_secrets, redact
from .base import Tool, ToolError, function_tool
from .workspace import atomic_write_text

DEFAULT_NOTES_NAME = "NOTES.md"
DEFAULT_MAX_NOTES_CHARS = 100_000
NOTES_TOOL_NAMES = frozenset({"note", "update_notes"})
_RECOVER_TAIL = 4000  # characters at the end of the notes searched for an interrupted note

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
        line, redacted = _redacted(text.strip("\n"))
        if not line.strip():
            raise ToolError("the note is empty; pass the text to remember")
        with self._lock, _interprocess_lock(self.path):
            current = self._read_text_or_refuse()
            separator = "" if not current or current.endswith("\n") else "\n"
            updated = f"{current}{separator}{line}\n"
            self._check_size(updated, "append")
            self._write(updated)
        self._report("append", len(line) + 1)
        return f"Noted in {self.path.name} ({len(updated)} characters in total){redacted}"

    def overwrite(self, content: str, *, guard: bool = False) -> str:
        """Replace the notes with ``content``. With ``guard`` (the model's ``update_notes``), a
        rewrite that would erase most of the notes is refused (see ``_check_not_erasing``)."""
        content, redacted = _redacted(content)
        updated = content if not content or content.endswith("\n") else content + "\n"
        with self._lock, _interprocess_lock(self.path):
            current = self._read_text_or_refuse()
            if guard:
                _check_not_erasing(current, updated)
            self._check_size(updated, "overwrite")
            self._write(updated)
        self._report("overwrite", len(updated))
        return f"{self.path.name} updated ({len(updated)} characters){redacted}"

    def tools(self) -> list[Tool]:
        """The ``note`` and ``update_notes`` tools, bound to this file."""

        def note(text: str, path: str | None = None) -> str:
            """Append a line to the notes file (external memory that survives context
            compaction). Use it for key findings, decisions and what is left to do.

            Args:
                text: What to remember, one line or a short paragraph.
                path: The file the note is about, if any; the line starts with it.
            """
            return self.append(_note_line(text, path))

        def update_notes(content: str) -> str:
            """Replace the whole notes file with new content (keep what still matters: decisions,
            open problems, next steps). The notes are read back after context compaction.

            Args:
                content: The complete new notes; everything not included is dropped.
            """
            return self.overwrite(content, guard=True)

        # risk "write" is honest; Permissions exempts these names because they only touch
        # the notes file. update_notes is idempotent; a note must not be appended twice when a
        # killed run is resumed.
        note_tool = replace(function_tool(note, risk="write"), recover=self._already_noted)
        return [note_tool, function_tool(update_notes, risk="write")]

    def _already_noted(self, args: dict[str, Any]) -> str | None:
        """For a ``note`` call a killed run left unfinished: its result if the line is already
        near the end of the file (the append happened before the kill), else None."""
        text, path = args.get("text"), args.get("path")
        if not isinstance(text, str) or not isinstance(path, str | None):
            return None
        line, _ = _redacted(_note_line(text, path).strip("\n"))
        tail = self.read()[-(len(line) + _RECOVER_TAIL) :]
        if line.strip() and f"{line}\n" in tail:
            return f"Noted in {self.path.name} (written before the run was interrupted)"
        return None

    def _read_text_or_refuse(self) -> str:
        """The current notes for a write; a file that is not UTF-8 text (binary, another
        encoding, damaged) is refused rather than rewritten, so its bytes are never lost."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise ToolError(f"cannot read {self.path.name}: {exc.strerror or exc}") from None
        try:
            if b"\x00" in data:
                raise UnicodeDecodeError("utf-8", data, data.index(b"\x00"), len(data), "NUL byte")
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"{self.path.name} is not UTF-8 text (binary or damaged); it is left as it is. "
                "The user must fix or move it before notes can be written"
            ) from None

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


ERASE_MIN_LINES = 4  # notes shorter than this may be rewritten freely
ERASE_SHARE = 0.5  # a rewrite may drop at most this share of the lines unless it stays this long


def _check_not_erasing(current: str, updated: str) -> None:
    """Refuse a rewrite that drops more than half of the existing lines and is less than half
    as long: that is an append mistaken for a rewrite, not a consolidation. Measured with
    Qwen2.5-Coder-1.5B, the one model that noted on its own: it called update_notes after each
    note with just that note, and 21 of 22 notes were lost. Refusing (rather than merging
    silently) keeps update_notes what it says it is, and the error tells the model what to do."""
    old = [line.strip() for line in current.splitlines() if line.strip()]
    if len(old) < ERASE_MIN_LINES:
        return
    kept = {line.strip() for line in updated.splitlines()}
    dropped = sum(1 for line in old if line not in kept)
    if dropped > ERASE_SHARE * len(old) and len(updated) < ERASE_SHARE * len(current):
        raise ToolError(
            f"update_notes would erase {dropped} of the {len(old)} lines in the notes; to add a "
            "line use note, to rewrite keep the lines that still matter in content"
        )


def _note_line(text: str, path: str | None) -> str:
    return f"{path}: {text}" if path else text


def _redacted(text: str) -> tuple[str, str]:
    """``text`` with secrets and personal data replaced by placeholders, and a short remark for
    the model when something was replaced ("" otherwise)."""
    clean = redact(text)
    if clean == text:
        return text, ""
    kinds = sorted({finding.kind for finding in find_secrets(text)}) or ["secret"]
    return clean, (
        f". Redacted before writing ({', '.join(kinds)}): notes never keep secrets or personal "
        "data; refer to them by description instead"
    )


@contextmanager
def _interprocess_lock(path: Path) -> Iterator[None]:
    """An exclusive lock so that two processes sharing a notes file do not lose each other's
    appends (read-modify-write). It is taken on the notes' folder, not on the file, which
    ``os.replace`` swaps for a new one at each write, and it leaves no lock file behind.
    Advisory; where ``fcntl`` does not exist (Windows) only the in-process lock applies."""
    if fcntl is None:
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError as exc:
        raise ToolError(f"cannot lock the folder of {path.name}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
