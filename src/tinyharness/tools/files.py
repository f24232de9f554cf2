"""File tools bound to a Workspace: read_file, list_dir, grep, write_file, edit_file.

Each tool is a closure over the workspace, so its signature is exactly what the model sees
(``read_file(path, start_line?, end_line?)`` ...). Every path goes through
``Workspace.resolve``; outputs stay under a size cap and say how to get the rest; binary files
and undecodable text are reported plainly instead of flooding the context with garbage.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from ..history import OFFLOADED_RESULT_MARK, file_reads, restored_in_full
from ..messages import Message
from .base import DEFAULT_RESULT_CAP, Tool, ToolError, function_tool
from .workspace import Workspace, atomic_write_text

BINARY_SNIFF_BYTES = 8192
MAX_LINE_CHARS = 2000  # one minified line must not eat the whole read budget
MAX_LINE_BYTES = MAX_LINE_CHARS * 4 + 4  # read of one line: enough for MAX_LINE_CHARS characters
MAX_LIST_ENTRIES = 500
# Ends a page that is not the whole file. "If you need them", not "continue": told to continue,
# Qwen2.5-Coder-0.5B read all six pages of a README to answer what the project is.
MORE_LINES = "if you need them:"
MAX_PATH_CHOICES = 400  # read_file's path is narrowed to the workspace's files up to this many
MAX_GREP_MATCHES = 200
MAX_GREP_FILES = 5000
MAX_GREP_FILE_BYTES = 2_000_000
MAX_GREP_SECONDS = 10.0
MAX_GREP_LINE_CHARS = 300
MAX_WRITE_CHARS = 5_000_000
MAX_PATTERN_CHARS = 500
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})

_T = TypeVar("_T")

try:  # the private parser lets grep spot exponential patterns before running them
    _re_parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - a future Python without it just skips the check
    _re_parser = None


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
) -> list[Tool]:
    """The five file tools, confined to ``workspace``. ``output_cap`` bounds read_file and
    list_dir output so the registry's own cap never has to cut a listing in the middle.
    ``read_state`` records the files read (see ``path_choices``); ``notes_text`` gives the
    current notes, whose named files read_file no longer offers."""
    read_budget = max(200, output_cap - 500)  # room for the header and the continuation note
    state = read_state if read_state is not None else ReadState()

    def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file from the workspace, with line numbers.

        Long files are returned in parts; the note at the end says which start_line to use
        next. Binary files are refused.

        Args:
            path: File path relative to the workspace root, e.g. "src/app.py".
            start_line: First line to read (1-based, inclusive). Default: 1.
            end_line: Last line to read (1-based, inclusive). Default: as far as fits.
        """
        first = 1 if start_line is None else start_line
        if first < 1:
            raise ToolError("start_line must be 1 or more (lines are numbered from 1)")
        if end_line is not None and end_line < first:
            raise ToolError(f"end_line ({end_line}) must not be before start_line ({first})")
        target = _existing_file(workspace, path)
        shown = workspace.relative(target)
        return _read_lines(shown, target, first, end_line, read_budget, on_read=state.record)

    def list_dir(path: str) -> str:
        """List a folder of the workspace: sub-folders end with "/", files show their size.

        Args:
            path: Folder path relative to the workspace root; "." is the root itself.
        """
        target = workspace.resolve(path, must_exist=True)
        if not target.is_dir():
            # Answered, not refused: small models call list_dir on files, and an error taught
            # them nothing (measured: the same call five times until stopped as stuck).
            shown = workspace.relative(target)
            return (
                f"{shown} is a file ({_size(target)}), not a folder; read it with "
                f"read_file(path={shown!r}). Its folder holds:\n"
                + _list_entries(workspace, target.parent, read_budget)
            )
        return _list_entries(workspace, target, read_budget)

    def grep(pattern: str, path: str) -> str:
        """Search text files for a regular expression (Python syntax).

        Searches one file, or every text file under a folder (skipping hidden folders such as
        .git or .venv, binary files and very large files). Output lines look like
        "path:line: text".

        Args:
            pattern: Regular expression, e.g. "def \\w+\\(" or "TODO".
            path: File or folder relative to the workspace root; "." searches everything.
        """
        regex = _compile_pattern(pattern)
        target = workspace.resolve(path, must_exist=True)
        return _grep(workspace, regex, target)

    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace (parent folders are created).

        Args:
            path: File path relative to the workspace root.
            content: The complete new content of the file.
        """
        if len(content) > MAX_WRITE_CHARS:
            raise ToolError(f"content is {len(content)} characters; the limit is {MAX_WRITE_CHARS}")
        target = workspace.resolve(path)
        if target.is_dir():
            raise ToolError(f"{workspace.relative(target)!r} is a folder; give a file path")
        blocking = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise ToolError(f"{workspace.relative(blocking)!r} is a file, so it cannot hold other files")
        existed = target.exists()
        with workspace.write_lock:
            _os_call(lambda: atomic_write_text(target, content), workspace.relative(target))
        verb = "Overwrote" if existed else "Created"
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        return f"{verb} {workspace.relative(target)} ({len(content)} characters, {lines} lines)"

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
        target = _existing_file(workspace, path)
        shown = workspace.relative(target)
        with workspace.write_lock:
            text = _read_text_strict(target, shown)
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
            where = text.index(old)
            _os_call(lambda: atomic_write_text(target, text.replace(old, new, 1)), shown)
        first_line = text.count("\n", 0, where) + 1
        if not new:
            return f"Edited {shown}: removed the text at line {first_line}"
        last_line = first_line + new.count("\n") - (1 if new.endswith("\n") else 0)
        return f"Edited {shown}: replaced 1 occurrence (now lines {first_line}-{last_line})"

    def edit_applied(args: dict[str, Any]) -> str | None:
        """An interrupted edit_file whose old text is gone and new text is there was applied."""
        old, new, path = args.get("old"), args.get("new"), args.get("path")
        if not (isinstance(old, str) and isinstance(new, str) and isinstance(path, str)) or not old:
            return None
        try:
            target = _existing_file(workspace, path)
            text = _read_text_strict(target, path)
        except ToolError:
            return None
        old, new = _match_line_endings(text, old, new)
        if old in text or (new and new not in text):
            return None
        return f"Edited {workspace.relative(target)} (applied before the run was interrupted)"

    return [
        replace(
            function_tool(read_file),
            choices=functools.partial(path_choices, workspace, state=state, notes_text=notes_text),
        ),
        function_tool(list_dir),
        function_tool(grep),
        function_tool(write_file, risk="write"),
        replace(function_tool(edit_file, risk="write"), recover=edit_applied),
    ]


def path_choices(
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
    coverage from 13 files to all 38."""
    files: list[str] = []
    for path in _walk_text_files(workspace, workspace.root):
        if len(files) == MAX_PATH_CHOICES:
            return {}
        files.append(workspace.relative(path))
    seen = _read_in_full(messages, state) | {os.path.normpath(p) for p in restored_in_full(messages)}
    if state is not None:
        seen |= state.done
    if notes_text is not None:
        seen |= _named_in(notes_text(), files)
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
        elif result.content.endswith(")]") and MORE_LINES in result.content[-300:]:
            done.discard(path)
        else:
            done.add(path)
    return done


# --- helpers ----------------------------------------------------------------------------------


def _os_call(action: Callable[[], _T], shown: str) -> _T:
    """Run a filesystem action; an OSError becomes a one-line ToolError without a traceback."""
    try:
        return action()
    except OSError as exc:
        raise ToolError(f"cannot access {shown}: {exc.strerror or exc}") from None


def _existing_file(workspace: Workspace, path: str) -> Path:
    target = workspace.resolve(path, must_exist=True)
    if target.is_dir():
        raise ToolError(f"{workspace.relative(target)!r} is a folder; use list_dir")
    if not target.is_file():  # a FIFO or device would block the reading thread forever
        raise ToolError(f"{workspace.relative(target)!r} is not a regular file")
    return target


def _compile_pattern(pattern: str) -> re.Pattern[str]:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ToolError(f"invalid regular expression {pattern!r}: {exc.msg}{where}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    if _has_nested_repeat(pattern):
        raise ToolError(
            f"pattern {pattern!r} repeats a repetition (like (a+)+ or (\\w+\\s?)*), which can "
            "take exponential time; simplify it, e.g. drop the outer repetition"
        )
    return regex


def _has_nested_repeat(pattern: str) -> bool:
    """True if an unbounded repeat sits inside another repeat: the shape of catastrophic
    backtracking. Python's re has no timeout, so such a pattern is refused up front."""
    if _re_parser is None:  # pragma: no cover
        return False
    try:
        parsed = _re_parser.parse(pattern)
        return _repeat_inside_repeat(parsed, inside_repeat=False)
    except Exception:  # pragma: no cover - private API changed; the time cap still applies
        return False


def _repeat_inside_repeat(node: Any, *, inside_repeat: bool) -> bool:
    repeats = (_re_parser.MAX_REPEAT, _re_parser.MIN_REPEAT)
    for op, argument in node:
        if op in repeats:
            _low, high, body = argument
            unbounded = high == _re_parser.MAXREPEAT
            if inside_repeat and unbounded:
                return True
            if _repeat_inside_repeat(body, inside_repeat=inside_repeat or high > 1):
                return True
            continue
        for child in _subpatterns(argument):
            if _repeat_inside_repeat(child, inside_repeat=inside_repeat):
                return True
    return False


def _subpatterns(argument: Any) -> Iterator[Any]:
    """Nested sub-patterns inside a parsed node's argument (groups, branches, lookarounds)."""
    if isinstance(argument, _re_parser.SubPattern):
        yield argument
    elif isinstance(argument, (tuple, list)):
        for item in argument:
            yield from _subpatterns(item)


def _looks_binary(sample: bytes) -> bool:
    return b"\x00" in sample


def _binary_error(shown: str, target: Path) -> ToolError:
    size = _os_call(lambda: target.stat().st_size, shown)
    return ToolError(f"{shown} is a binary file ({size} bytes); only text files can be read")


def _read_text_strict(target: Path, shown: str) -> str:
    data = _os_call(target.read_bytes, shown)
    if _looks_binary(data[:BINARY_SNIFF_BYTES]):
        raise _binary_error(shown, target)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{shown} is not valid UTF-8; edit_file only edits UTF-8 text (use write_file "
            "to replace it entirely)"
        ) from None


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
            length += len(rest)
            if rest.endswith(b"\n"):
                length -= 1
                break
        yield raw, length


def _read_lines(
    shown: str,
    target: Path,
    first: int,
    last: int | None,
    budget: int,
    on_read: Callable[[str, int, int, int], object] | None = None,
) -> str:
    numbered: list[str] = []
    used = 0
    lossy = cut = stopped = False
    line_number = 0
    with _os_call(lambda: target.open("rb"), shown) as handle:
        if _looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            raise _binary_error(shown, target)
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
        total = line_number + (_count_remaining_lines(handle) if stopped else 0)
    if total == 0:
        if on_read is not None:
            on_read(shown, 1, 0, 0)
        return f"{shown} is empty."
    if first > total:
        raise ToolError(f"start_line {first} is past the end of {shown}, which has {total} lines")
    shown_last = first + len(numbered) - 1
    parts = [f"{shown} (lines {first}-{shown_last} of {total})", *numbered]
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
    return "\n".join(parts)


def _count_remaining_lines(handle: BinaryIO) -> int:
    """Lines left after the current position (a last line without a newline counts too)."""
    count = 0
    last_byte = b"\n"
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last_byte = chunk[-1:]
    return count + (0 if last_byte == b"\n" else 1)


def _list_entries(workspace: Workspace, folder: Path, budget: int) -> str:
    shown = workspace.relative(folder)
    names = sorted(_os_call(lambda: os.listdir(folder), shown))
    lines: list[str] = []
    used = 0
    for name in names[:MAX_LIST_ENTRIES]:
        line = _describe_entry(workspace, folder / name, name)
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    header = f"{shown}/ ({len(names)} entries)" if shown != "." else f"./ ({len(names)} entries)"
    if not names:
        return f"{header}\n(empty folder)"
    if len(lines) < len(names):
        lines.append(f"[... {len(names) - len(lines)} more entries not shown]")
    return "\n".join([header, *lines])


def _describe_entry(workspace: Workspace, entry: Path, name: str) -> str:
    if entry.is_symlink():
        real = Path(os.path.realpath(entry))
        if not real.is_relative_to(workspace.root):
            return f"{name}@ (link to outside the workspace; not accessible)"
        if not real.exists():
            return f"{name}@ (broken link)"
        if real.is_dir():
            return f"{name}/ (link to {workspace.relative(real)})"
        return f"{name}  {_size(real)} (link to {workspace.relative(real)})"
    if entry.is_dir():
        return f"{name}/"
    return f"{name}  {_size(entry)}"


def _size(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return "(size unknown)"
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KB", "MB", "GB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GB":
            break
    return f"{scaled:.1f} {unit}"


def _walk_text_files(workspace: Workspace, folder: Path) -> Iterator[Path]:
    """Files under ``folder`` in a stable order, skipping hidden and vendored folders and links
    that lead outside the workspace."""
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            candidate = Path(current) / name
            if candidate.is_symlink() and not Path(os.path.realpath(candidate)).is_relative_to(
                workspace.root
            ):
                continue
            yield candidate


def _grep(workspace: Workspace, regex: re.Pattern[str], target: Path) -> str:
    single_file = not target.is_dir()
    files = iter([target]) if single_file else _walk_text_files(workspace, target)
    deadline = time.monotonic() + MAX_GREP_SECONDS
    matches: list[str] = []
    searched = skipped = 0
    stop_reason = ""
    for file in files:
        if searched >= MAX_GREP_FILES:
            stop_reason = f"stopped after {MAX_GREP_FILES} files"
            break
        shown = workspace.relative(file)
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode):  # reading a FIFO would block forever
                if single_file:
                    raise ToolError(f"{shown} is not a regular file")
                skipped += 1
                continue
            if info.st_size > MAX_GREP_FILE_BYTES:
                if single_file:
                    raise ToolError(f"{shown} is larger than {MAX_GREP_FILE_BYTES} bytes")
                skipped += 1
                continue
            data = file.read_bytes()
        except OSError:
            skipped += 1
            continue
        if _looks_binary(data[:BINARY_SNIFF_BYTES]):
            if single_file:
                raise _binary_error(shown, file)
            skipped += 1
            continue
        searched += 1
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            # Only the head of a huge line is searched: it bounds the regex's work per line.
            if regex.search(line[:MAX_LINE_CHARS]):
                matches.append(f"{shown}:{number}: {_clip_line(line.strip(), MAX_GREP_LINE_CHARS)}")
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
        return f"No matches for {regex.pattern!r} in {workspace.relative(target)} ({summary})."
    return "\n".join([*matches, f"[{summary}]"])
