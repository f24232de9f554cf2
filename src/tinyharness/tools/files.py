"""File tools bound to a Workspace: read_file, list_dir, grep, write_file, edit_file.

Each tool is a closure over the workspace, so its signature is exactly what the model sees
(``read_file(path, start_line?, end_line?)`` ...). Every path goes through
``Workspace.inner`` and is opened through ``Workspace.folder`` (no link leads out, no FIFO
blocks); outputs stay under a size cap and say how to get the rest; binary files and
undecodable text are reported plainly instead of flooding the context with garbage. Reads
stream: no tool holds more of a file in memory than its cap (edit_file refuses files over
MAX_EDIT_BYTES). grep runs patterns with RE2, whose time is linear in the input, so no pattern
can hang the process.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

import re2

from ..history import OFFLOADED_RESULT_MARK, file_reads, restored_in_full
from ..messages import Message
from ..safefs import Spot
from .base import DEFAULT_RESULT_CAP, Tool, ToolError, ToolResult, function_tool, raise_if_stopped
from .syntax import MAX_CHECK_CHARS, breaks
from .workspace import Workspace, fs_error, shown_under

BINARY_SNIFF_BYTES = 8192
MAX_LINE_CHARS = 2000  # one minified line must not eat the whole read budget
MAX_LINE_BYTES = MAX_LINE_CHARS * 4 + 4  # read of one line: enough for MAX_LINE_CHARS characters
MAX_LIST_ENTRIES = 500
MIN_READ_LINES = 40  # a line range shorter than this is widened: reads cannot crawl
# Ends a page that is not the whole file. "If you need them", not "continue": told to continue,
# Qwen2.5-Coder-0.5B read all six pages of a README to answer what the project is.
MORE_LINES = "if you need them:"
# write_file without overwrite (small local models): measured with Qwen2.5-Coder-0.5B, asked to
# change one constant or rename one function, it replaced the whole file with write_file in 2
# of 3 tasks (52 and 54 characters left of 339 and 383). edit_file cannot lose the rest.
NO_OVERWRITE = (
    "{path} already exists; write_file only creates new files. Change it with "
    "edit_file(path, old, new): old is the exact text to replace, new its replacement"
)
CREATE_ONLY_DESCRIPTION = (
    "Create a new text file in the workspace (parent folders are created); it never replaces an "
    "existing file: change one with edit_file."
)
MAX_PATH_CHOICES = 400  # read_file's path is narrowed to the workspace's files up to this many
MAX_GREP_MATCHES = 200
MAX_GREP_FILES = 5000
MAX_GREP_FILE_BYTES = 2_000_000
MAX_GREP_SECONDS = 10.0
MAX_GREP_LINE_CHARS = 300
MAX_WRITE_CHARS = 5_000_000
MAX_PATTERN_CHARS = 500
MAX_EDIT_BYTES = 10_000_000  # edit_file holds the file in memory (about 3x); larger files are refused
MAX_COUNT_BYTES = 64 << 20  # read_file counts the lines after what it shows in this much of the file
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20  # bounds the compiled program; the search itself stays linear
_RE2_OPTIONS.log_errors = False  # a bad pattern is the tool's error result, not a line on stderr
_RE2_OPTIONS.never_nl = True  # a match never crosses a line: one search over a file = line by line
# These anchor at the whole text, not at each line: such patterns are run line by line.
_WHOLE_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m")


@dataclass(frozen=True)
class GrepPattern:
    """A user's pattern compiled by RE2, searched the way grep means it: line by line."""

    pattern: str
    per_line: Any  # the RE2 program for one line at a time
    whole_text: Any | None  # the same in multi-line mode over a file's bytes, when equivalent

    def matching_lines(self, lines: Sequence[str]) -> Iterator[int]:
        """Indexes of the ``lines`` (each without its newline) the pattern matches. One RE2
        search over the joined text when that is equivalent: a call per match instead of a call
        per line, which the binding makes costly (measured in bench/grep_bench.py)."""
        if self.whole_text is None:
            yield from (n for n, line in enumerate(lines) if self.per_line.search(line))
            return
        if not lines:  # no line at all, not one empty line
            return
        data = "\n".join(lines).encode("utf-8")
        pos = line = 0
        while (found := self.whole_text.search(data, pos)) is not None:
            start = found.start()
            line += data.count(b"\n", pos, start)
            yield line
            end = data.find(b"\n", start)
            if end < 0:
                return
            pos, line = end + 1, line + 1


class ReadState:
    """Which files this run has read to the end, kept by read_file itself: state of the run, not
    of the window, so a compaction that clears or summarizes the reads does not forget them
    (measured with Qwen2.5-Coder-0.5B: with the reads forgotten at each compaction, 38 reads
    covered only 13 files). ``covered`` maps a path to the last line read without a gap from
    line 1."""

    def __init__(self) -> None:
        self.covered: dict[str, int] = {}
        self.done: set[str] = set()

    def record(self, path: str, first: int, last: int, total: int) -> None:
        path = os.path.normpath(path)
        reached = self.covered.get(path, 0)
        if first <= reached + 1:
            self.covered[path] = max(reached, last)
        if self.covered.get(path, 0) >= total:
            self.done.add(path)

    def resume_line(self, path: str) -> int | None:
        """Where a read of ``path`` without a start_line goes on: after the lines read so far
        when the file was read in part, else None (from line 1)."""
        path = os.path.normpath(path)
        reached = self.covered.get(path, 0)
        return reached + 1 if reached and path not in self.done else None

    def lines_read(self, path: str) -> int:
        """How far ``path`` was read from line 1 (an empty file read counts as 1)."""
        path = os.path.normpath(path)
        return self.covered.get(path, 0) or (1 if path in self.done else 0)

    def partial(self) -> set[str]:
        """Files read from line 1 but not to the end."""
        return {path for path in self.covered if path not in self.done}

    def forget(self, path: str) -> None:
        """The read's text did not reach the model whole (cut to a preview later)."""
        path = os.path.normpath(path)
        self.done.discard(path)
        self.covered.pop(path, None)


def file_tools(
    workspace: Workspace,
    *,
    output_cap: int = DEFAULT_RESULT_CAP,
    read_state: ReadState | None = None,
    notes_text: Callable[[], str] | None = None,
    path_choices: bool = True,
    overwrite: bool = True,
) -> list[Tool]:
    """The five file tools, confined to ``workspace``. ``output_cap`` bounds read_file and
    list_dir output so the registry's own cap never has to cut a listing in the middle.
    ``read_state`` records the files read (see ``narrowed_paths``); ``notes_text`` gives the
    current notes, whose named files read_file no longer offers. ``path_choices`` False leaves
    read_file's path free (no choices at all). ``overwrite`` False makes write_file create new
    files only: an existing file is changed with edit_file (see ``NO_OVERWRITE``). The tools know
    nothing of the task: a guide (``tinyharness.guide``) narrows their choices further."""
    read_budget = max(200, output_cap - 500)  # room for the header and the continuation note
    state = read_state if read_state is not None else ReadState()

    def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> ToolResult:
        """Read a text file from the workspace, with line numbers.

        Long files are returned in parts; the note at the end says which start_line to use
        next. Binary files are refused.

        Args:
            path: File path relative to the workspace root, e.g. "src/app.py".
            start_line: First line to read (1-based, inclusive). Default: 1.
            end_line: Last line to read (1-based, inclusive). Default: as far as fits. A range
                shorter than a page is widened to a page.
        """
        first = 1 if start_line is None else start_line
        if first < 1:
            raise ToolError("start_line must be 1 or more (lines are numbered from 1)")
        if end_line is not None and end_line < first:
            raise ToolError(f"end_line ({end_line}) must not be before start_line ({first})")
        if end_line is not None:
            # A read returns at least a page (or the rest of the file): the 0.5B model read a
            # file one line at a time (start_line 11, end_line 11, then 12, ...) for 15 turns.
            end_line = max(end_line, first + MIN_READ_LINES - 1)
        space, inner_path, prefix = workspace.for_reading(path)
        handle, shown = _open_text(space, inner_path)
        shown = shown_under(prefix, shown)
        resume = state.resume_line(shown) if start_line is None and end_line is None else None
        with handle:
            text, next_line = _read_lines(
                shown, handle, resume or first, end_line, read_budget, on_read=state.record
            )
        if resume:
            # Small models call read_file(path) again instead of giving start_line: measured
            # with the 0.5B model, the same first page three times in a row. Go on instead.
            text = f"[lines 1-{resume - 1} were read before; here is what follows]\n{text}"
        return ToolResult(text, next_line=next_line)

    def list_dir(path: str) -> str:
        """List a folder of the workspace: sub-folders end with "/", files show their size.

        Args:
            path: Folder path relative to the workspace root; "." is the root itself.
        """
        space, inner_path, prefix = workspace.for_reading(path)
        inner = space.inner(inner_path)
        info = _stat(space, inner, path)
        if not stat.S_ISDIR(info.st_mode):
            # Answered, not refused: small models call list_dir on files, and an error taught
            # them nothing (measured: the same call five times until stopped as stuck).
            real = "/".join(space.folder.real_parts(inner))
            parent = real.rpartition("/")[0] or "."
            shown = shown_under(prefix, real)
            return (
                f"{shown} is a file ({_size(info.st_size)}), not a folder; read it with "
                f"read_file(path={shown!r}). Its folder holds:\n"
                + _list_entries(space, parent, parent, read_budget, prefix)
            )
        return _list_entries(space, inner, path, read_budget, prefix)

    def grep(pattern: str, path: str) -> str:
        """Search text files for a regular expression (RE2 syntax, like Python's without
        backreferences or lookaround).

        Searches one file, or every text file under a folder (skipping hidden folders such as
        .git or .venv, binary files and very large files). Output lines look like
        "path:line: text".

        Args:
            pattern: Regular expression, e.g. "def \\w+\\(" or "TODO".
            path: File or folder relative to the workspace root; "." searches everything.
        """
        regex = _compile_pattern(pattern)
        space, inner_path, prefix = workspace.for_reading(path)
        inner = space.inner(inner_path)
        info = _stat(space, inner, path)
        return _grep(space, regex, inner, path, single_file=not stat.S_ISDIR(info.st_mode), prefix=prefix)

    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace (parent folders are created).

        Args:
            path: File path relative to the workspace root.
            content: The complete new content of the file.
        """
        if len(content) > MAX_WRITE_CHARS:
            raise ToolError(f"content is {len(content)} characters; the limit is {MAX_WRITE_CHARS}")
        inner = workspace.inner(path)
        try:
            with workspace.folder.locked(inner, create_dirs=True) as spot:
                existed = spot.lstat() is not None
                if existed and not overwrite:
                    raise ToolError(NO_OVERWRITE.format(path=spot.relative))
                refused = breaks(spot.relative, _current_text(spot) if existed else None, content)
                if refused is not None:
                    raise ToolError(refused)
                spot.write(content.encode("utf-8"))
        except IsADirectoryError:
            raise ToolError(f"{path!r} is a folder; give a file path") from None
        except NotADirectoryError as exc:
            raise ToolError(f"{exc.filename!r} is a file, so it cannot hold other files") from None
        except OSError as exc:
            raise fs_error(exc, path) from None
        verb = "Overwrote" if existed else "Created"
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        return f"{verb} {spot.relative} ({len(content)} characters, {lines} lines)"

    def edit_file(path: str, old: str, new: str) -> str:
        """Replace one exact piece of text in a file with new text.

        The old text must occur exactly once in the file, including whitespace and indentation;
        include a few surrounding lines if it is not unique. Read the file first.

        Args:
            path: File path relative to the workspace root.
            old: The exact text to replace (must occur exactly once).
            new: The text to put in its place.
        """
        if not old:
            raise ToolError("old must not be empty; use write_file to create a file")
        if old == new:
            raise ToolError("old and new are the same; nothing would change")
        inner = workspace.inner(path)
        try:
            with workspace.folder.locked(inner) as spot:
                shown = spot.relative
                text = _read_text_strict(spot, shown)
                old, new, where = _edit_place(text, old, new, shown)
                edited = text.replace(old, new, 1)
                refused = breaks(shown, text, edited)
                if refused is not None:
                    raise ToolError(refused)
                spot.write(edited.encode("utf-8"))
        except OSError as exc:
            raise fs_error(exc, path) from None
        first_line = text.count("\n", 0, where) + 1
        if not new:
            return f"Edited {shown}: removed the text at line {first_line}"
        last_line = first_line + new.count("\n") - (1 if new.endswith("\n") else 0)
        return f"Edited {shown}: replaced 1 occurrence (now lines {first_line}-{last_line})"

    writer = function_tool(
        write_file, risk="write", description=None if overwrite else CREATE_ONLY_DESCRIPTION
    )
    return [
        replace(
            function_tool(read_file),
            choices=functools.partial(narrowed_paths, workspace, state=state, notes_text=notes_text)
            if path_choices
            else None,
        ),
        function_tool(list_dir),
        function_tool(grep),
        writer,
        function_tool(edit_file, risk="write"),
    ]


def narrowed_paths(
    workspace: Workspace,
    messages: Sequence[Message],
    state: ReadState | None = None,
    notes_text: Callable[[], str] | None = None,
) -> dict[str, list[str]]:
    """read_file's ``path`` choices: the workspace's files (none when there are more than
    MAX_PATH_CHOICES), less those already read to the end in this run (``state``, and the reads
    in ``messages``, see _read_in_full), put back whole by the restore step after a compaction,
    or named in the notes. A file read in part, or whose read was cut to a preview, stays on
    offer. When nothing is left, every file is offered again.

    Measured with SmolLM2-135M on a folder of 62 files: unconstrained, it read paths made from
    the task's words and never a real file; constrained to all files, it read one file 5 times
    and was stopped as stuck; with files already read left out, it read a new file at every
    step. With Qwen2.5-Coder-0.5B over 38 files, leaving out the files NOTES.md names too took
    coverage from 13 files to all 38. A guide's choices (``tinyharness.guide``) replace these
    while its plan has files to read."""
    files: list[str] = []
    for path in _walk_text_files(workspace, "."):
        if len(files) == MAX_PATH_CHOICES:
            return {}
        files.append(path)
    seen = _read_in_full(messages, state) | {os.path.normpath(p) for p in restored_in_full(messages)}
    if state is not None:
        seen |= state.done
    if notes_text is not None:
        # A file read in part stays on offer even when the notes name it: its note is about
        # the lines read so far (measured: with README.md named in a note after its first
        # pages, the 0.5B model went on at start_line=213 in another file).
        partial = state.partial() if state is not None else set()
        seen |= _named_in(notes_text(), files) - partial
    left = [name for name in files if name not in seen]
    return {"path": left or files}


def _named_in(notes: str, files: Sequence[str]) -> set[str]:
    """The files ``notes`` names by path, or by a file name no other file has."""
    if not notes:
        return set()
    names: dict[str, list[str]] = {}
    for name in files:
        names.setdefault(os.path.basename(name), []).append(name)
    named = {name for name in files if name in notes}
    for base, paths in names.items():
        if len(paths) == 1 and re.search(rf"(?<![\w./-]){re.escape(base)}(?![\w-])", notes):
            named.add(paths[0])
    return named


def _read_in_full(messages: Sequence[Message], state: ReadState | None = None) -> set[str]:
    """Paths read in ``messages`` with nothing left to page through: a successful read_file
    whose result was not cut (a cut or partial result ends with a note naming the next
    start_line) nor offloaded to a preview. A read cut to a preview is also forgotten by
    ``state``: the model never saw the whole text."""
    done: set[str] = set()
    for path, _call, result in file_reads(messages):
        path = os.path.normpath(path)
        if OFFLOADED_RESULT_MARK in result.content[-600:]:
            done.discard(path)
            if state is not None:
                state.forget(path)
        elif result.next_line is not None or result.truncated:
            done.discard(path)
        else:
            done.add(path)
    return done


# --- helpers ----------------------------------------------------------------------------------


def _stat(workspace: Workspace, inner: str, path: str) -> os.stat_result:
    try:
        info = workspace.folder.stat(inner)
    except OSError as exc:
        raise fs_error(exc, path) from None
    if info is None:
        raise ToolError(f"{path!r} does not exist in the workspace; use list_dir to see what is there")
    return info


def _open_text(workspace: Workspace, path: str) -> tuple[BinaryIO, str]:
    """A regular file of the workspace opened for reading (ToolError for a folder, FIFO,
    device, link leading out...) and its real path for display."""
    try:
        return workspace.folder.open_read(workspace.inner(path))
    except OSError as exc:
        raise fs_error(exc, path) from None


def _compile_pattern(pattern: str) -> GrepPattern:
    """``pattern`` compiled by RE2: matching time is linear in the text, so a model's pattern
    cannot hang the process the way a backtracking engine can (``(a|a)*$``...)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        per_line = re2.compile(pattern, _RE2_OPTIONS)
        whole = None
        if not _WHOLE_TEXT_ANCHORS.search(pattern):
            whole = re2.compile(b"(?m)" + pattern.encode("utf-8"), _RE2_OPTIONS)
        return GrepPattern(pattern, per_line, whole)
    except UnicodeEncodeError:
        raise ToolError(f"invalid regular expression {pattern!r}: it is not valid Unicode") from None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "not valid"
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    try:  # compiling (not matching) with Python's re is safe, and its messages are familiar
        re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ToolError(f"invalid regular expression {pattern!r}: {exc.msg}{where}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    raise ToolError(
        f"grep cannot run {pattern!r} ({reason}): grep uses RE2, which has no backreferences "
        "(\\1) or lookaround ((?=...), (?!...), (?<=...)) so that no pattern can take "
        "exponential time; rewrite the pattern without them"
    )


def _looks_binary(sample: bytes) -> bool:
    return b"\x00" in sample


def _binary_error(shown: str, size: int) -> ToolError:
    return ToolError(f"{shown} is a binary file ({size} bytes); only text files can be read")


def _current_text(spot: Spot) -> str | None:
    """The file a write is about to replace, as text, for the parse check; None when it is too
    large, binary or not UTF-8 (then no check: nothing here could parse it anyway)."""
    data, size = spot.read(MAX_CHECK_CHARS + 1)
    if size > MAX_CHECK_CHARS or _looks_binary(data[:BINARY_SNIFF_BYTES]):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_text_strict(spot: Spot, shown: str) -> str:
    """The whole file for an edit, refused above MAX_EDIT_BYTES instead of loaded."""
    data, size = spot.read(MAX_EDIT_BYTES + 1)
    if size > MAX_EDIT_BYTES or len(data) > MAX_EDIT_BYTES:
        raise ToolError(
            f"{shown} is {size} bytes; edit_file edits files up to {MAX_EDIT_BYTES} bytes. "
            "Read the part you need with read_file and rewrite smaller files instead"
        )
    if _looks_binary(data[:BINARY_SNIFF_BYTES]):
        raise _binary_error(shown, size)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{shown} is not valid UTF-8; edit_file only edits UTF-8 text (use write_file "
            "to replace it entirely)"
        ) from None


def _edit_place(text: str, old: str, new: str, shown: str) -> tuple[str, str, int]:
    """The old and new text with the file's line endings, and where the one old text is."""
    old, new = _match_line_endings(text, old, new)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old text not found in {shown}; it must match exactly, including "
            "whitespace and indentation. Read the file again with read_file"
        )
    if count > 1:
        raise ToolError(
            f"old text occurs {count} times in {shown}; include more surrounding "
            "lines so that it occurs exactly once"
        )
    return old, new, text.index(old)


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Models write '\\n'; a file with Windows line endings needs '\\r\\n' to match."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def _clip_line(line: str, limit: int = MAX_LINE_CHARS, *, total: int | None = None) -> str:
    """``line`` cut to ``limit`` characters; ``total`` is the byte length of a line that was
    only partly read."""
    if len(line) <= limit and total is None:
        return line
    size = f"{total} bytes" if total is not None else f"{len(line)} characters"
    return f"{line[:limit]} [... line cut, {size} in total]"


def _bounded_lines(handle: BinaryIO, limit: int) -> Iterator[tuple[bytes, int | None]]:
    """Each line's first ``limit`` bytes, and for a line cut there its whole length in bytes
    without the newline (None for a line read whole): the rest of an over-long line (a 100 MB
    minified file) is skipped in chunks, never held in memory."""
    while raw := handle.readline(limit):
        if raw.endswith(b"\n") or len(raw) < limit:
            yield raw, None
            continue
        length = len(raw)
        while rest := handle.readline(1 << 20):
            raise_if_stopped()  # a 100 MB line: the caller may give up meanwhile
            length += len(rest)
            if rest.endswith(b"\n"):
                length -= 1
                break
        yield raw, length


def _read_lines(
    shown: str,
    handle: BinaryIO,
    first: int,
    last: int | None,
    budget: int,
    on_read: Callable[[str, int, int, int], object] | None = None,
) -> tuple[str, int | None]:
    numbered: list[str] = []
    used = 0
    lossy = cut = stopped = False
    line_number = 0
    if _looks_binary(handle.read(BINARY_SNIFF_BYTES)):
        raise _binary_error(shown, os.fstat(handle.fileno()).st_size)
    handle.seek(0)
    for raw, length in _bounded_lines(handle, MAX_LINE_BYTES):
        line_number += 1
        if line_number < first:
            continue
        if last is not None and line_number > last:
            stopped = True
            break
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            lossy = lossy or length is None  # a cut line may end inside a character
        if line_number == 1:
            text = text.removeprefix("\ufeff")
        text = text.rstrip(chr(13) + chr(10))
        entry = f"{line_number:>6}\t{_clip_line(text, total=length)}"
        if numbered and used + len(entry) + 1 > budget:
            stopped = cut = True
            break
        numbered.append(entry)
        used += len(entry) + 1
    # The line that ended the loop was consumed, so it is already in line_number.
    more, counted = _count_remaining_lines(handle) if stopped else (0, True)
    total = line_number + more
    if total == 0:
        if on_read is not None:
            on_read(shown, 1, 0, 0)
        return f"{shown} is empty.", None
    if first > total:
        raise ToolError(f"start_line {first} is past the end of {shown}, which has {total} lines")
    shown_last = first + len(numbered) - 1
    of = f"{total}" if counted else f"more than {total}"
    parts = [f"{shown} (lines {first}-{shown_last} of {of})", *numbered]
    if lossy:
        parts.append("[note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if cut:
        parts.append(
            f"[output cut at line {shown_last} to fit the size limit; {MORE_LINES} "
            f"read_file(path={shown!r}, start_line={shown_last + 1})]"
        )
    elif shown_last < total:
        # A range read: say that more follows, or the model takes the part for the whole.
        parts.append(
            f"[{total - shown_last} more lines not shown; {MORE_LINES} "
            f"read_file(path={shown!r}, start_line={shown_last + 1})]"
        )
    if on_read is not None and numbered:
        on_read(shown, first, shown_last, total)
    return "\n".join(parts), (shown_last + 1 if cut or shown_last < total else None)


def _count_remaining_lines(handle: BinaryIO) -> tuple[int, bool]:
    """Lines left after the current position (a last line without a newline counts too), and
    whether they were all counted: the count stops after MAX_COUNT_BYTES, so a huge file does
    not cost a read of all of it."""
    count = scanned = 0
    last_byte = b"\n"
    while chunk := handle.read(1 << 20):
        raise_if_stopped()
        count += chunk.count(b"\n")
        last_byte = chunk[-1:]
        scanned += len(chunk)
        if scanned >= MAX_COUNT_BYTES:
            return count, False
    return count + (0 if last_byte == b"\n" else 1), True


def _list_entries(workspace: Workspace, inner: str, path: str, budget: int, prefix: str = "") -> str:
    try:
        with workspace.folder.open_dir(inner) as (fd, parts):
            names = sorted(os.listdir(fd))
            shown = shown_under(prefix, "/".join(parts) or ".")
            lines: list[str] = []
            used = 0
            kinds = [_entry_kind(fd, name) for name in names]
            for name in names[:MAX_LIST_ENTRIES]:
                line = _describe_entry(workspace, fd, "/".join([*parts, name]), name)
                if used + len(line) + 1 > budget:
                    break
                lines.append(line)
                used += len(line) + 1
    except OSError as exc:
        raise fs_error(exc, path) from None
    header = f"{shown}/ ({len(names)} entries)" if shown != "." else f"./ ({len(names)} entries)"
    if not names:
        return f"{header}\n(empty folder)"
    if len(lines) < len(names):
        lines.append(f"[... {len(names) - len(lines)} more entries not shown]")
    return "\n".join([header, *lines, entry_counts(kinds)])


def _entry_kind(dir_fd: int, name: str) -> str:
    """What ``entry_counts`` counts an entry as: "folder", "link", or a file's extension."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return "unreadable"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    return os.path.splitext(name)[1].lower()


def entry_counts(kinds: Sequence[str]) -> str:
    """The last line of a listing: how many entries of each kind it holds ("[19 .py files,
    1 .md file, 2 folders]"), every entry counted, shown or not (``kinds`` as
    ``_entry_kind`` gives them). A small model asked how many files a folder holds answered
    without counting (measured with the 0.5B: "1" for a folder of 7); a number in the listing
    is one it can copy."""
    counts: dict[str, int] = {}
    for kind in kinds:
        key = kind if kind in ("folder", "link", "unreadable") else f"{kind} file" if kind else "other file"
        counts[key] = counts.get(key, 0) + 1
    order = sorted(counts, key=lambda k: (k in ("folder", "link", "unreadable"), -counts[k], k))
    return "[" + ", ".join(f"{counts[k]} {k if counts[k] == 1 else _plural(k)}" for k in order) + "]"


def _plural(kind: str) -> str:
    return kind + "s" if kind in ("folder", "link") else kind.replace("file", "files", 1)


def _describe_entry(workspace: Workspace, dir_fd: int, relative: str, name: str) -> str:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return f"{name}  (unreadable)"
    if stat.S_ISLNK(info.st_mode):
        try:
            real = "/".join(workspace.folder.real_parts(relative)) or "."
            target = workspace.folder.stat(relative)
        except OSError:
            return f"{name}@ (link to outside the workspace; not accessible)"
        if target is None:
            return f"{name}@ (broken link)"
        if stat.S_ISDIR(target.st_mode):
            return f"{name}/ (link to {real})"
        return f"{name}  {_size(target.st_size)} (link to {real})"
    if stat.S_ISDIR(info.st_mode):
        return f"{name}/"
    if not stat.S_ISREG(info.st_mode):
        return f"{name}  (not a regular file)"
    return f"{name}  {_size(info.st_size)}"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KB", "MB", "GB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GB":
            break
    return f"{scaled:.1f} {unit}"


def head_text(workspace: Workspace, path: str, limit: int) -> str:
    """The first ``limit`` bytes of a workspace file as text; "" for a binary or unreadable
    file (what grep skips too)."""
    try:
        handle, _shown = workspace.folder.open_read(workspace.inner(path))
        with handle:
            data = handle.read(limit)
    except (OSError, ToolError):
        return ""
    return "" if _looks_binary(data[:BINARY_SNIFF_BYTES]) else data.decode("utf-8", errors="replace")


def text_files(workspace: Workspace, limit: int = MAX_GREP_FILES) -> list[str]:
    """The workspace's files as read_file's choices name them, at most ``limit``."""
    return list(itertools.islice(_walk_text_files(workspace, "."), limit))


def _walk_text_files(workspace: Workspace, inner: str) -> Iterator[str]:
    """Real paths of the files under ``inner`` in a stable order, skipping hidden and vendored
    folders, links that lead outside the workspace, FIFOs and devices."""
    return workspace.folder.files(inner, lambda d: d.startswith(".") or d in SKIPPED_DIRS)


def _grep(
    workspace: Workspace, regex: GrepPattern, inner: str, path: str, *, single_file: bool, prefix: str = ""
) -> str:
    files = iter([inner]) if single_file else _walk_text_files(workspace, inner)
    deadline = time.monotonic() + MAX_GREP_SECONDS
    matches: list[str] = []
    searched = skipped = 0
    stop_reason = ""
    for file in files:
        raise_if_stopped()  # Ctrl-C in the chat, or the tool's timeout: end the walk now
        if searched >= MAX_GREP_FILES:
            stop_reason = f"stopped after {MAX_GREP_FILES} files"
            break
        try:
            handle, shown = workspace.folder.open_read(file)
            with handle:
                size = os.fstat(handle.fileno()).st_size
                data = handle.read(MAX_GREP_FILE_BYTES + 1) if size <= MAX_GREP_FILE_BYTES else b""
        except OSError as exc:
            if single_file:
                raise fs_error(exc, path) from None
            skipped += 1
            continue
        if size > MAX_GREP_FILE_BYTES or len(data) > MAX_GREP_FILE_BYTES:
            if single_file:
                raise ToolError(f"{shown} is larger than {MAX_GREP_FILE_BYTES} bytes")
            skipped += 1
            continue
        if _looks_binary(data[:BINARY_SNIFF_BYTES]):
            if single_file:
                raise _binary_error(shown, size)
            skipped += 1
            continue
        searched += 1
        lines = data.decode("utf-8", errors="replace").splitlines()
        # Only the head of a huge line is searched, as a line of read_file shows only its head.
        for index in regex.matching_lines([line[:MAX_LINE_CHARS] for line in lines]):
            line = lines[index]
            matches.append(
                f"{shown_under(prefix, shown)}:{index + 1}: {_clip_line(line.strip(), MAX_GREP_LINE_CHARS)}"
            )
            if len(matches) >= MAX_GREP_MATCHES:
                stop_reason = f"stopped at {MAX_GREP_MATCHES} matches; narrow the pattern"
                break
        if stop_reason:
            break
        if time.monotonic() > deadline:
            stop_reason = f"stopped after {MAX_GREP_SECONDS:g} s; search a smaller folder"
            break
    summary = f"{len(matches)} matches in {searched} files searched"
    if skipped:
        summary += f", {skipped} binary, unreadable or very large files skipped"
    if stop_reason:
        summary += f" ({stop_reason})"
    if not matches:
        where = shown_under(prefix, "/".join(workspace.folder.real_parts(inner)) or ".")
        return f"No matches for {regex.pattern!r} in {where} ({summary})."
    return "\n".join([*matches, f"[{summary}]"])
