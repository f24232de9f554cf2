"""Wrong lines in the user's NOTES.md after a task: the suite's count of notes the harness left
in the user's folder that it should not have.

A line the run wrote (the notes file did not hold it before) is wrong when the task asked for no
notes (every line then is a fact the user did not ask to keep), or when it names a file of the
workspace and says something that file does not: a number the file does not hold, a read's
header ("lines 1-27 of 27") copied as a fact, or words of which fewer than half are the file's
(identifier parts count: ``BlockParser`` gives "block" and "parser"). Words of a script the
file's text has none of (a Chinese note on an English file) are not judged; lines that name no
file, on a task that asked for notes, are headings and are not counted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

NOTES_NAMES = ("NOTES.md", "notes.md")
GROUNDED_SHARE = 0.5
# Words any description of a file uses, whatever the file says (the checker's own allowance,
# not something the harness relies on).
_DESCRIBING = frozenset(
    [
        "file",
        "files",
        "module",
        "modules",
        "class",
        "classes",
        "function",
        "functions",
        "method",
        "methods",
        "defines",
        "define",
        "contains",
        "contain",
        "code",
        "script",
        "scripts",
        "test",
        "tests",
        "provides",
        "provide",
        "implements",
        "implement",
        "handles",
        "handle",
        "used",
        "uses",
        "using",
        "helper",
        "helpers",
        "summary",
        "line",
        "lines",
        "each",
    ]
)
_READ_HEADER = re.compile(r"\blines?\s+\d+\s*[-–]\s*\d+\s+of\s+\d+", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w])")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def notes_text(workspace: Path) -> str:
    """What the notes files of ``workspace`` hold (NOTES.md, and notes.md where the file system
    tells them apart)."""
    seen: set[tuple[int, int]] = set()
    parts: list[str] = []
    for name in NOTES_NAMES:
        path = workspace / name
        try:
            info = path.stat()
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def new_lines(before: str, after: str) -> list[str]:
    """Non-blank lines of ``after`` that ``before`` did not hold (as many times)."""
    held: dict[str, int] = {}
    for line in before.splitlines():
        held[line.strip()] = held.get(line.strip(), 0) + 1
    out = []
    for line in after.splitlines():
        text = line.strip()
        if not text:
            continue
        if held.get(text, 0) > 0:
            held[text] -= 1
            continue
        out.append(text)
    return out


def wrong_lines(lines: Iterable[str], workspace: Path, asks_for_notes: bool) -> list[str]:
    """The lines (written by a run in ``workspace``) that are wrong, by the rules above."""
    lines = list(lines)
    if not asks_for_notes:
        return lines
    files = _workspace_files(workspace)
    return [line for line in lines if not _grounded(line, workspace, files)]


def count_wrong(workspace: Path, asks_for_notes: bool, before: str = "") -> int:
    return len(wrong_lines(new_lines(before, notes_text(workspace)), workspace, asks_for_notes))


def _workspace_files(workspace: Path) -> list[str]:
    out = []
    for folder, dirs, names in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name not in NOTES_NAMES:
                out.append(Path(folder, name).relative_to(workspace).as_posix())
    return out


def named_files(line: str, files: list[str]) -> list[str]:
    """The files ``line`` names: by path, or by a file name no other file has."""
    by_name: dict[str, list[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    found = []
    for path in files:
        base = os.path.basename(path)
        names = [path] if len(by_name[base]) > 1 else [path, base]
        if any(re.search(rf"(?<![A-Za-z0-9_./-]){re.escape(n)}(?![A-Za-z0-9_-])", line) for n in names):
            found.append(path)
    return found


def _grounded(line: str, workspace: Path, files: list[str]) -> bool:
    named = named_files(line, files)
    if not named:
        return True  # a heading or a line of the task's own
    if _READ_HEADER.search(line):
        return False
    claim = line
    for path in sorted(named, key=len, reverse=True):
        claim = claim.replace(path, " ").replace(os.path.basename(path), " ")
    texts = [(workspace / p).read_text(encoding="utf-8", errors="replace") for p in named]
    source = "\n".join(texts)
    for number in _NUMBER.findall(claim):
        if not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)", source):
            return False
    words = _words(claim) - _DESCRIBING
    if not words:
        return True
    own = _words(source)
    return len(words & own) >= GROUNDED_SHARE * len(words)


def _words(text: str) -> set[str]:
    out: set[str] = set()
    for token in _LATIN.findall(text):
        out.add(token.lower())
        out.update(p.lower() for p in _CAMEL.findall(token))
    return {w for w in out if len(w) >= 4}


def notes_cover(files: dict[str, tuple[str, ...]]) -> Callable[[str, Path], bool]:
    """The notes (NOTES.md, or notes.md as the seed's task says) have, for each file, a line
    naming it (``names_file``) with one of its facts besides its name and folders (facts may
    be in any language)."""

    def check(_answer: str, ws: Path) -> bool:
        lines = notes_text(ws).lower().splitlines()
        for path, facts in files.items():
            if not any(
                names_file(line, path) and any(f.lower() in _without_name(line, path) for f in facts)
                for line in lines
            ):
                return False
        return True

    return check


# A file name, after the folders written before it (group 1), with the characters a path may
# have at its edges (ASCII, so a name right beside a word of Chinese is still found whole).
_file_name = re.compile(
    r"(?<![A-Za-z0-9_./\\-])((?:[A-Za-z0-9_.-]+[/\\])*)([A-Za-z0-9_.-]+\.[A-Za-z0-9]+)(?![A-Za-z0-9_-])"
)


def names_file(line: str, path: str) -> bool:
    """``line`` names the file ``path``: its name whole (``keys.py`` is not named by
    ``test_keys.py`` nor by ``keys.pyi``), alone or after folders that end ``path``'s own
    (``tests/__init__.py`` does not name ``src/p/__init__.py``; ``p/__init__.py`` does)."""
    path = path.lower().replace("\\", "/")
    for found in _file_name.finditer(line.lower()):
        written = (found.group(1).replace("\\", "/") + found.group(2)).removeprefix("./")
        if f"/{path}".endswith(f"/{written}"):
            return True
    return False


def _without_name(line: str, path: str) -> str:
    """``line`` with the name of ``path`` (and the folders written before it) taken out."""
    name = path.lower().rsplit("/", 1)[-1]
    return _file_name.sub(lambda m: " " if m.group(2) == name else m.group(0), line.lower())
