"""Checkers the suite's halves on public projects share: an answer that gives a number or names
a file, and an edit compared with the pinned original (the asked change made, nothing else).

An edit checker parses the edited file (Python as a syntax tree without docstrings or other
bare strings, TOML as data), compares it with the original with each asked text change made,
and wants every other file of the project byte for byte as it was, but those the task allows
to change (a version bump may also touch a changelog). New files (NOTES.md) are no change.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.notes_check import notes_cover
from bench.tasks import Checker, Task, says

Originals = Callable[[], dict[str, bytes]]
Changes = tuple[tuple[str, str], ...]


def number(n: int, *words: str) -> Checker:
    """The answer gives ``n``, as digits or as one of ``words`` (a word in any language)."""
    spelled = "".join(f"|{re.escape(w)}" for w in words)
    return says(rf"(?<![\d.]){n}(?![\d]|\.\d){spelled}")


# A name's edges: the characters a file name or path may have (ASCII, so a name right beside
# a word of Chinese, "在keys.py里", is still found whole).
_BEFORE = r"(?<![A-Za-z0-9_.-])"
_AFTER = r"(?![A-Za-z0-9_-])"


def file_named(name: str, *wrong: str) -> Checker:
    """The answer names the file ``name`` (a path ending in it counts; ``test_name`` and
    ``name`` + ``i`` do not) and none of the paths ``wrong`` (another file of the same name)."""
    right = says(rf"{_BEFORE}{re.escape(name)}{_AFTER}")
    others = [re.compile(rf"{_BEFORE}{re.escape(w)}{_AFTER}", re.I) for w in wrong]
    return lambda answer, ws: right(answer, ws) and not any(o.search(answer) for o in others)


def none_of(check: Checker, *patterns: str) -> Checker:
    """``check`` passes and the answer matches none of ``patterns`` (case-insensitive)."""
    refuse = says("|".join(f"(?:{p})" for p in patterns))
    return lambda answer, ws: check(answer, ws) and not refuse(answer, ws)


def any_of(*checks: Checker) -> Checker:
    """At least one of ``checks`` passes (the same fact said one way or another)."""
    return lambda answer, ws: any(check(answer, ws) for check in checks)


def python_edit(
    path: str, changes: Changes, originals: Originals, may_change: tuple[str, ...] = ()
) -> Checker:
    """``path`` parses as Python and is the original with each ``(old, new)`` text change made
    everywhere (compared as syntax trees without docstrings: layout, comments and docstrings may
    differ); no other file of the project changed, but those of ``may_change``."""

    def check(_answer: str, ws: Path) -> bool:
        files = originals()
        expected = changed(files[path].decode("utf-8"), changes)
        edited = read_text(ws / path)
        return (
            edited is not None
            and tree(edited) is not None
            and tree(edited) == tree(expected)
            and others_unchanged(ws, files, {path, *may_change})
        )

    return check


def toml_edit(path: str, changes: Changes, originals: Originals, may_change: tuple[str, ...] = ()) -> Checker:
    """``path`` parses as TOML and holds the same data as the original with each text change
    made; no other file of the project changed, but those of ``may_change``."""

    def check(_answer: str, ws: Path) -> bool:
        files = originals()
        expected = tomllib.loads(changed(files[path].decode("utf-8"), changes))
        edited = read_text(ws / path)
        if edited is None:
            return False
        try:
            data = tomllib.loads(edited)
        except tomllib.TOMLDecodeError:
            return False
        return data == expected and others_unchanged(ws, files, {path, *may_change})

    return check


@dataclass(frozen=True)
class Edits:
    """The edit checkers of one half's project: ``python_edit`` and ``toml_edit`` compared with
    its pinned ``originals``."""

    originals: Originals

    def python_edit(self, path: str, changes: Changes, may_change: tuple[str, ...] = ()) -> Checker:
        return python_edit(path, changes, self.originals, may_change)

    def toml_edit(self, path: str, changes: Changes, may_change: tuple[str, ...] = ()) -> Checker:
        return toml_edit(path, changes, self.originals, may_change)

    def requires_python(self, line: str, version: str, may_change: tuple[str, ...] = ()) -> Checker:
        """pyproject.toml's ``line`` (``requires-python = ">=3.7"``) raised to ``version``,
        written ``>=3.9`` or ``>= 3.9``."""
        return any_of(
            *(
                self.toml_edit("pyproject.toml", ((line, f'requires-python = "{v}"'),), may_change)
                for v in (f">={version}", f">= {version}")
            )
        )

    def version_bump(self, path: str, versions: Changes, may_change: tuple[str, ...] = ()) -> Checker:
        """``path``'s version string changed (``versions[0]``), alone or with the version tuple
        beside it (``versions[1]``), as setuptools_scm writes them."""
        return any_of(
            self.python_edit(path, versions[:1], may_change), self.python_edit(path, versions, may_change)
        )


def changed(text: str, changes: Changes) -> str:
    """``text`` with each ``(old, new)`` change made everywhere (ValueError for an ``old`` it lacks)."""
    for old, new in changes:
        if old not in text:
            raise ValueError(f"{old!r} is not in the original")
        text = text.replace(old, new)
    return text


def tree(source: str) -> str | None:
    """The syntax tree of ``source`` without docstrings and other bare string statements (an
    attribute's docstring), as text; None when it does not parse."""
    try:
        parsed = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(parsed):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                body[:] = [ast.Pass() if _bare_string(s) else s for s in body]
    return ast.dump(parsed)


def _bare_string(node: object) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def others_unchanged(ws: Path, files: dict[str, bytes], allowed: set[str]) -> bool:
    """Every file of ``files`` but the ``allowed`` ones is in ``ws`` with the same bytes."""
    for name, data in files.items():
        if name in allowed:
            continue
        try:
            if (ws / name).read_bytes() != data:
                return False
        except OSError:
            return False
    return True


def read_text(path: Path) -> str | None:
    """The file's UTF-8 text, or None when it is missing or not text."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class TaskMaker:
    """Makes the tasks of one half on a public project: ``t`` any kind, ``edit`` one that may
    write, ``notes`` one whose checker wants ``facts(*files)`` covered in NOTES.md."""

    half: str
    project: str
    facts: Callable[..., dict[str, tuple[str, ...]]]

    def t(
        self, name: str, kind: str, prompt: str, check: Checker, targets: tuple[str, ...], **kw: Any
    ) -> Task:
        return Task(name, self.half, kind, prompt, check, project=self.project, targets=targets, **kw)

    def edit(self, name: str, prompt: str, check: Checker, targets: tuple[str, ...]) -> Task:
        return self.t(name, "edit", prompt, check, targets, allow_write=True)

    def notes(self, name: str, prompt: str, files: tuple[str, ...], targets: tuple[str, ...]) -> Task:
        return self.t(name, "notes", prompt, notes_cover(self.facts(*files)), targets, max_iterations=12)
