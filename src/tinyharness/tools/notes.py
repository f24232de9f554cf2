"""The notes file (external memory): ``note`` appends a line, ``update_notes``
overwrites the whole file. Both write atomically, so a killed process leaves the old
notes or the new ones, never half a file, and under an OS-level lock, so two processes sharing
the file do not lose each other's lines. The file is opened through ``tinyharness.safefs``
beneath its root folder (the workspace): a NOTES.md that is a link leading out of it is refused,
never read or replaced. The loop reads the notes back at compaction. Secrets and personal data
are redacted before anything is written (``tinyharness.redact``), and the tool result says so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from ..redact import find_secrets, redact
from ..safefs import Folder, LockTimeout, NotRegularFile, PathEscape, Spot, beneath, make_folder
from .base import Tool, ToolError, function_tool

DEFAULT_NOTES_NAME = "NOTES.md"
DEFAULT_MAX_NOTES_CHARS = 100_000
NOTES_TOOL_NAMES = frozenset({"note", "update_notes"})

OnWrite = Callable[[str, int], object]  # any return value is ignored
_log = logging.getLogger(__name__)


class NotesFile:
    """One notes file beneath ``root`` (default: its own folder; the CLI passes the workspace).
    A relative ``path`` is relative to ``root``. ``on_write(op, chars)`` is called after each
    successful write with ``op`` "append" or "overwrite" and the number of characters written."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        on_write: OnWrite | None = None,
        *,
        max_chars: int = DEFAULT_MAX_NOTES_CHARS,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        given = Path(path)
        if root is not None and not given.is_absolute():
            given = Path(root) / given
        self.path = Path(os.path.abspath(given))
        self.root, self.inner = beneath(self.path, Path(root) if root is not None else None)
        self.on_write = on_write
        self.max_chars = max_chars

    def __repr__(self) -> str:
        return f"NotesFile({str(self.path)!r})"

    def _folder(self) -> Folder:
        try:
            make_folder(self.root)
            return Folder(self.root)
        except OSError as exc:
            raise ToolError(f"cannot open the folder of {self.path.name}: {exc.strerror or exc}") from None

    def read(self) -> str:
        """The notes (at most four times ``max_chars`` bytes of them), or "" if the file does not
        exist yet; a notes file that cannot be read safely (a link leading out, a FIFO) reads as
        a one-line remark."""
        try:
            data, _size = self._folder().read(self.inner, self._byte_limit())
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"({self.path.name} could not be read: {_why(exc)})"
        return data.decode("utf-8", errors="replace")

    def _byte_limit(self) -> int:
        return self.max_chars * 4 + 4  # UTF-8: at most 4 bytes a character

    def append(self, text: str) -> str:
        line, redacted = _redacted(text.strip("\n"))
        if not line.strip():
            raise ToolError("the note is empty; pass the text to remember")
        try:
            with self._folder().locked(self.inner, create_dirs=True) as spot:
                current = self._read_text_or_refuse(spot)
                separator = "" if not current or current.endswith("\n") else "\n"
                updated = f"{current}{separator}{line}\n"
                self._check_size(updated, "append")
                self._write(spot, updated)
        except OSError as exc:
            raise ToolError(f"cannot write {self.path.name}: {_why(exc)}") from None
        self._report("append", len(line) + 1)
        return f"Noted in {self.path.name} ({len(updated)} characters in total){redacted}"

    def overwrite(self, content: str, *, guard: bool = False) -> str:
        """Replace the notes with ``content``. With ``guard`` (the model's ``update_notes``), a
        rewrite that would erase most of the notes is refused (see ``_check_not_erasing``)."""
        content, redacted = _redacted(content)
        updated = content if not content or content.endswith("\n") else content + "\n"
        try:
            with self._folder().locked(self.inner, create_dirs=True) as spot:
                current = self._read_text_or_refuse(spot)
                if guard:
                    _check_not_erasing(current, updated)
                self._check_size(updated, "overwrite")
                self._write(spot, updated)
        except OSError as exc:
            raise ToolError(f"cannot write {self.path.name}: {_why(exc)}") from None
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
        # the notes file. A note a killed run left unfinished is not re-run on resume: the model
        # gets an "outcome unknown" result instead (sessions), so it is never appended twice.
        return [function_tool(note, risk="write"), function_tool(update_notes, risk="write")]

    def _read_text_or_refuse(self, spot: Spot) -> str:
        """The current notes for a write; a file that is not UTF-8 text (binary, another
        encoding, damaged) is refused rather than rewritten, so its bytes are never lost, and so
        is one too large to be notes (it is never loaded whole)."""
        if spot.lstat() is None:
            return ""
        try:
            data, size = spot.read(self._byte_limit())
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise ToolError(f"cannot read {self.path.name}: {_why(exc)}") from None
        if size > len(data):
            raise ToolError(
                f"{self.path.name} is {size} bytes, over the {self.max_chars}-character limit of the "
                "notes; it is left as it is. The user must shorten or move it"
            )
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

    def _write(self, spot: Spot, text: str) -> None:
        try:
            spot.write(text.encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"cannot write {self.path.name}: {_why(exc)}") from None

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


def _why(exc: OSError) -> str:
    if isinstance(exc, PathEscape):
        return "it is a symbolic link that leads outside its folder, so it is not used"
    if isinstance(exc, NotRegularFile):
        return "it is not a regular file (a FIFO, device or socket)"
    if isinstance(exc, LockTimeout):
        return "another process kept it locked; try again later"
    return str(exc.strerror or exc)
