"""The task's plan, chosen under a grammar: its kind and the files or folders it is about.

A small model cannot say in its own words what a task asks for, and the harness must not read
the task's English to guess it (a task in Chinese or French must get the same plan). So, for a
profile that plans, one small request (``purpose "plan"``) shows the task and the workspace's
candidate files and folders and asks, under a JSON schema, for

- ``kind``: one of ``KINDS`` (answer a question, list or count, change files, a note for each
  file of a set, open exploration), an ``enum`` the grammar enforces;
- ``targets``: the files and folders the task is about, each one of the candidates (an
  ``enum`` too), so a target is always a real path of the workspace.

The candidates come from a ranking (``Rank``): by default ``simple_rank``, the files and folders
whose path or file name the task names first (an exact match, not English), then the rest in
listing order; a better ranking (a repository map, BM25, an embedder) plugs in as ``rank``.

Flags can state the plan instead (``--each GLOB``, ``--kind KIND``): no request is made then.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..messages import Message, TextBlock
from ..models.base import ModelRequest

KINDS = ("answer", "list", "edit", "notes", "explore")
# A question mark, in any script's form (Latin, CJK full-width, Arabic, Greek question mark).
QUESTION_MARKS = ("?", "\uff1f", "\u061f", "\u037e")
# The words the plan request's enum offers for each kind: a small model picks a kind by its
# meaning, not by a one-word label (measured with the 0.5B: offered the bare labels, it chose
# "list" for four tasks of four kinds, and listed every candidate as a target).
# "explore" is not offered (flags may still state it): measured with the 0.5B on 14 tasks of
# four kinds in three languages (the kind asked alone), offered it chose it for "Which function
# checks a user's password, and in which file is it?" in English and Chinese (8 of 14 right);
# without it, 9 of 14.
# Measured again with the 0.5B on 24 tasks of the tune and unseen halves in three languages,
# the kind asked alone (bench/notes/tasks.md, session 13): these words 23 of 24 right; the
# earlier ("answer a question", "list or count files", "write a note about each file") 14 of
# 24: every count was called a question and a README question naming its file a notes task.
# "add a line per file to the notes" gave 20 of 24 (a note per named file called a question).
KIND_MEANINGS = {
    "answer": "answer in words",
    "list": "count or list files",
    "edit": "change a file",
    "notes": "note each file",
}
MAX_CANDIDATES = 80  # files and folders shown to the plan request (its enum)
MAX_TARGETS = 3
PLAN_TOKENS = 256
PLAN_SYSTEM = "You classify a task given to a coding agent. Reply with one JSON object only."
# The kinds are named in the question: under the grammar alone the model picks a kind it has
# not been shown. Measured with the 0.5B on the suite's 41 edits and 40 other tasks of eight
# halves: edits planned as edits 34 -> 40 of 41 (6 named-file edits had been "answer in words",
# and answered), other tasks planned as edits 0 -> 0 of 40, no other task's kind changed.
PLAN_ASK = (
    "Files and folders of the workspace (folders end with /):\n{listing}\n\nTask:\n{task}\n\n"
    "What does the task ask for ({kinds}), and which one to three of the files or folders above is "
    "it about?"
)

# The task's words as the project's code writes them, for a task whose own words are in no file:
# "这个库现在是什么版本？" holds no word of ``__version__ = "8.0.2"``, "tox 运行测试时用什么命令？"
# none of tox.ini's ``commands``. The plan request's (and the kind request's) reply ends with
# them, under a grammar that admits identifier-like words only; the prompt is unchanged, so the
# kind and targets before them are what they were (the key is the only ask: the 0.5B, asked on
# cachetools' files, gave "version" and "library" for "这个库现在是什么版本？", "license" for
# "这个项目用的是什么许可证？", "tox", "run", "tests" for the tox question; a request of its own
# gave "python", "programming", "code" for "What version is this?" and guessed "mit", "gnu" for
# the license). They count after the task's own words (``sites.held_lines``) and join them in
# the ranking a question or a change falls back on.
TERMS_KEY = "english_words_in_code"
MAX_TERMS = 5
_TERM = re.compile(r"^[A-Za-z][A-Za-z0-9_]{1,23}$")
TERMS_SCHEMA = {"type": "array", "items": {"type": "string", "pattern": _TERM.pattern}, "maxItems": MAX_TERMS}


def parse_terms(data: dict[str, Any]) -> tuple[str, ...]:
    """The reply's words (lower case, without repeats, at most ``MAX_TERMS``); () when it has
    none (a scripted reply, a model without a grammar)."""
    words = data.get(TERMS_KEY)
    if not isinstance(words, list):
        return ()
    kept = [w.lower() for w in words if isinstance(w, str) and _TERM.match(w)]
    return tuple(dict.fromkeys(kept))[:MAX_TERMS]


def with_terms(task: str, terms: Sequence[str]) -> str:
    """The task with the terms after it, as a ranking reads it."""
    return f"{task}\n{' '.join(terms)}" if terms else task


# The kind alone, for a task whose files the task names (exact evidence gives the targets):
# one tiny request under a grammar whose only field is the kind. Without it the plan had no
# kind, and the 0.5B, asked to change a named file, wrote free text to max_tokens for minutes.
# 24 was the kind alone; the words in code after it need room: a reply cut by max_tokens is no
# JSON, and the kind is lost with it. A reply the schema admits is at most ~200 characters.
KIND_TOKENS = 128
KIND_ASK = "Files the task names: {named}\n\nTask:\n{task}\n\nWhat does the task ask for ({kinds})?"


def kind_schema(kinds: Sequence[str]) -> dict[str, Any]:
    """The schema of the kind-only reply: ``kind`` one of the meanings of ``kinds``."""
    meanings = [KIND_MEANINGS[k] for k in kinds if k in KIND_MEANINGS]
    return {
        "type": "object",
        "properties": {"kind": {"type": "string", "enum": meanings}, TERMS_KEY: TERMS_SCHEMA},
        "required": ["kind", TERMS_KEY],
        "additionalProperties": False,
    }


def kind_request(task: str, named: Sequence[str], kinds: Sequence[str]) -> ModelRequest:
    """The request that asks only the kind of a task naming ``named`` (purpose "plan")."""
    meanings = " / ".join(KIND_MEANINGS[k] for k in kinds if k in KIND_MEANINGS)
    text = KIND_ASK.format(task=task, named=", ".join(named) or "(none)", kinds=meanings)
    return ModelRequest(
        messages=(Message("user", (TextBlock(text),)),),
        system=PLAN_SYSTEM,
        purpose="plan",
        max_tokens=KIND_TOKENS,
        response_schema=kind_schema(kinds),
    )


# A ranking of the workspace's files against a task: (workspace root, task, k) -> up to k items,
# best first, each a workspace-relative path or an object with a ``path`` (see ``candidates``).
Rank = Callable[[Path, str, int], Sequence[Any]]


@dataclass(frozen=True)
class TaskPlan:
    """``kind`` (one of KINDS, None when unknown) and ``targets`` (workspace-relative files,
    folders ending in "/", or a glob from ``--each``); ``source`` says who chose it: "model",
    "flag" or "paths" (exact path matches only); ``terms``: the task's words as the code writes
    them, from the model's reply (``TERMS_KEY``)."""

    kind: str | None = None
    targets: tuple[str, ...] = ()
    source: str = ""
    terms: tuple[str, ...] = ()  # the task's words as the code writes them (``TERMS_KEY``)

    def to_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"kind": self.kind, "targets": list(self.targets), "source": self.source}
        if self.terms:
            state["terms"] = list(self.terms)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskPlan:
        kind = state.get("kind")
        targets = state.get("targets")
        return cls(
            kind if kind in KINDS else None,
            tuple(str(t) for t in targets) if isinstance(targets, list) else (),
            str(state.get("source", "")),
            parse_terms({TERMS_KEY: state.get("terms")}),
        )


def plan_schema(candidates: Sequence[str]) -> dict[str, Any]:
    """The JSON schema the plan request's reply must match (both lists are enums; the terms
    last)."""
    items: dict[str, Any] = {"type": "string", "enum": list(candidates)} if candidates else {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(KIND_MEANINGS.values())},
            "targets": {"type": "array", "items": items, "maxItems": MAX_TARGETS},
            TERMS_KEY: TERMS_SCHEMA,
        },
        "required": ["kind", "targets", TERMS_KEY],
        "additionalProperties": False,
    }


def plan_request(task: str, candidates: Sequence[str]) -> ModelRequest:
    """The one request that classifies ``task`` (purpose "plan", no tools)."""
    listing = "\n".join(candidates) or "(empty)"
    text = PLAN_ASK.format(task=task, listing=listing, kinds=" / ".join(KIND_MEANINGS.values()))
    return ModelRequest(
        messages=(Message("user", (TextBlock(text),)),),
        system=PLAN_SYSTEM,
        purpose="plan",
        max_tokens=PLAN_TOKENS,
        response_schema=plan_schema(candidates),
    )


def parse_plan(text: str, candidates: Sequence[str]) -> TaskPlan:
    """The reply as a plan: an unknown kind is None, targets not among ``candidates`` are left out
    (a model without a grammar may still write anything)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return TaskPlan(source="model")
    if not isinstance(data, dict):
        return TaskPlan(source="model")
    said = data.get("kind")
    kind = next((k for k, meaning in KIND_MEANINGS.items() if said in (k, meaning)), None)
    offered = set(candidates)
    raw = data.get("targets")
    targets = [t for t in raw if isinstance(t, str) and t in offered] if isinstance(raw, list) else []
    return TaskPlan(kind, tuple(dict.fromkeys(targets))[:MAX_TARGETS], "model", parse_terms(data))


def folders_of(files: Iterable[str]) -> list[str]:
    """Every folder that holds one of ``files``, as "folder/", sorted."""
    found: set[str] = set()
    for path in files:
        parts = path.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            found.add("/".join(parts[:end]) + "/")
    return sorted(found)


def simple_rank(files: Callable[[], Sequence[str]]) -> Rank:
    """The in-tree ranking: folders and files the task names by path or by a file name no other
    file has (exact matches, in any language), then the other folders, then the other files."""

    def rank(root: Path, task: str, k: int) -> list[str]:
        listed = list(files())
        folders = folders_of(listed)
        named = [
            *evidence(task, listed).globs,
            *(f for f in folders if _names(task, f.rstrip("/")) is not None),
            *named_paths(task, listed),
        ]
        rest = [p for p in (*folders, *kind_globs(listed), *listed) if p not in named]
        return [*dict.fromkeys(named), *rest][:k]

    return rank


def kind_globs(files: Sequence[str]) -> list[str]:
    """For each folder, a glob of each file extension two or more of its files have
    ("src/**/*.py"): a set of one kind of file, for the plan to choose."""
    counts: dict[str, int] = {}
    for path in files:
        ext = os.path.splitext(path)[1]
        if not ext:
            continue
        parts = path.split("/")[:-1]
        for end in range(len(parts) + 1):
            folder = "/".join(parts[:end])
            key = f"{folder}/**/*{ext}" if folder else f"**/*{ext}"
            counts[key] = counts.get(key, 0) + 1
    return sorted(key for key, count in counts.items() if count >= 2)


@dataclass(frozen=True)
class Ranked:
    """A candidate a ranking scored against the task (``score`` > 0: the task's words or names
    matched it), as opposed to one offered only because the workspace has it."""

    path: str
    score: float


# The files where a project states its own facts (name, version, license, authors, the
# language versions it supports, dependencies, entry points, build backend), in the order a
# reader looks: one per ecosystem, at the workspace's root. Aider's repository map gives such
# files ("special" files) a place of their own for the same reason. None is read for its name:
# the list is file names, not words of any language.
PROJECT_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "pom.xml",
    "build.gradle.kts",
    "build.gradle",
    "composer.json",
    "Gemfile",
    "mix.exs",
    "Project.toml",
    "DESCRIPTION",
)


def project_file(files: Iterable[str]) -> str | None:
    """The workspace's project file (``PROJECT_FILES``, first found at the root), if any."""
    present = set(files)
    return next((name for name in PROJECT_FILES if name in present), None)


def top_files(items: Sequence[Any], k: int) -> list[str]:
    """The first ``k`` files (not folders or globs) a ranking scored above zero."""
    scored = [i.path for i in items if isinstance(i, Ranked) and i.score > 0]
    return [p for p in scored if not p.endswith("/") and "*" not in p][:k]


def candidates(rank: Rank, root: Path, task: str, k: int = MAX_CANDIDATES) -> list[str]:
    """``rank``'s paths (strings, or items with a ``path``), without repeats."""
    return paths_of(rank(root, task, k), k)


def paths_of(items: Sequence[Any], k: int = MAX_CANDIDATES) -> list[str]:
    """The paths of a ranking's items (strings, or items with a ``path``), without repeats."""
    out: list[str] = []
    for item in items:
        path = item if isinstance(item, str) else getattr(item, "path", None)
        if isinstance(path, str | os.PathLike):
            out.append(str(path))
    return list(dict.fromkeys(out))[:k]


def named_paths(task: str, files: Iterable[str]) -> list[str]:
    """The ``files`` (workspace-relative paths) that ``task`` names: by path, or by a file name
    no other file has; in the order the task names them."""
    files = list(files)
    by_name: dict[str, list[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    found: dict[str, int] = {}
    for path in files:
        base = os.path.basename(path)
        for candidate in {path, base} if len(by_name[base]) == 1 else {path}:
            where = _names(task, candidate)
            if where is not None:
                found[path] = min(found.get(path, where), where)
    return sorted(found, key=found.__getitem__)


def _names(task: str, path: str, flags: int = 0) -> int | None:
    """Where ``task`` names ``path`` as a whole path (not inside a longer one), or None. The
    bounds are ASCII: a path is ASCII-bounded in any language's sentence ("在src/shop里" names
    src/shop; with Unicode word bounds a Chinese character beside it hid the path)."""
    bounded = rf"(?<![A-Za-z0-9_./-]){re.escape(path)}(?![A-Za-z0-9_-]|\.[A-Za-z0-9_])"
    match = re.search(bounded, task, flags)
    return match.start() if match is not None else None


# A file extension written on its own (".py", "*.md"), not the end of a name ("README.md") or
# of a number ("0.25"): a string of the workspace's files, not a word of a language.
_EXTENSION = re.compile(r"(?<![A-Za-z0-9_./-])\*?\.([A-Za-z][A-Za-z0-9]{0,9})(?![A-Za-z0-9_.])")


@dataclass(frozen=True)
class Evidence:
    """What the task writes of the workspace, exactly (in any language): the folders it names
    (the deepest of each path, "src/shop/" for "src/shop/x.py" too), the file extensions it
    writes on their own that some file has (".py"), and the globs they make together
    ("src/shop/**/*.py"; "**/*.py" with no folder)."""

    folders: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    notes: bool = False  # the task names the notes file (see ``names_notes``)
    question: bool = False  # the task holds a question mark, in any script's form


def names_notes(task: str, notes_file: str = "NOTES.md") -> bool:
    """Whether the task names the notes file (its file name, in any case: the seed's Chinese
    task says "写进 notes.md"), a file name written alike in every language. The note tool's
    name is not read: "note" is also an English and French word ("note what it says")."""
    return _names(task, notes_file, re.IGNORECASE) is not None


def evidence(task: str, files: Sequence[str], notes_file: str = "NOTES.md") -> Evidence:
    """The task's ``Evidence`` over the workspace's ``files``."""
    listed = list(files)
    named = [f for f in folders_of(listed) if _names(task, f.rstrip("/")) is not None]
    deepest = [f for f in named if not any(g != f and g.startswith(f) for g in named)]
    have = {os.path.splitext(p)[1].lower() for p in listed}
    extensions = [
        f".{m.group(1).lower()}" for m in _EXTENSION.finditer(task) if f".{m.group(1).lower()}" in have
    ]
    extensions = list(dict.fromkeys(extensions))
    # A glob the task writes is the set as it says it ("For each test/test_*.py file": the 0.5B
    # noted test/common.py too, from the folder's glob, and ran out of turns before the last
    # test file); else a folder it names with an extension it writes.
    written = [g for g in task_globs(task) if any(glob_match(p, g) for p in listed)]
    globs = written + [
        glob
        for ext in extensions
        for glob in ([f"{f}**/*{ext}" for f in deepest] or [f"**/*{ext}"])
        if any(glob_match(p, glob) for p in listed) and glob not in written
    ]
    question = any(mark in task for mark in QUESTION_MARKS)
    return Evidence(tuple(deepest), tuple(extensions), tuple(globs), names_notes(task, notes_file), question)


def reconcile(plan: TaskPlan, found: Evidence) -> TaskPlan:
    """The model's plan where the task's exact ``Evidence`` disagrees with it: a task that names
    the notes file is a notes task (unless the model said edit or list); one
    that names neither and asks a question (a question mark) is not (measured with the 0.5B:
    "Which function checks a user's password, and in which file is it?" was called a notes
    task, in English and in Chinese); a notes task is
    over the glob the task writes (a folder and an extension), whatever folder the model chose;
    a question over a set keeps its set but the task's glob replaces the model's; a list or count
    is over the folders the task names, and with nothing to list is a question. Measured with
    the 0.5B: asked for the same task in Chinese and English, it chose the kind alike but
    different folders and files."""
    if found.notes and plan.kind in (None, "answer", "explore"):
        plan = TaskPlan("notes", plan.targets, plan.source)
    elif plan.kind == "notes" and not found.notes and found.question:
        plan = TaskPlan("answer", plan.targets, plan.source)
    targets = list(plan.targets)
    wide = [t for t in targets if "*" in t or t.endswith("/")]
    if plan.kind == "list" and targets and not wide and not found.folders and not found.globs:
        # Nothing to list (no folder or glob, chosen or written): a question over the files
        # chosen. The 0.5B called "这个项目用的是什么许可证？" a list of LICENSE, README.rst
        # and CHANGES.txt, and answered MIT for a BSD project.
        plan = TaskPlan("answer", plan.targets, plan.source)
    if plan.kind == "notes" and found.globs:
        targets = [found.globs[0], *(t for t in targets if t not in wide)]
    elif plan.kind == "notes" and found.folders and not wide:
        targets = [found.folders[0], *targets]
    elif plan.kind == "answer" and found.globs and wide:
        targets = [found.globs[0], *(t for t in targets if t not in wide)]
    elif plan.kind == "list" and found.folders:
        targets = list(found.folders)  # listed, then answered: no file of it read first
    targets = list(dict.fromkeys(targets))[:MAX_TARGETS]
    if tuple(targets) == plan.targets:
        return plan
    return TaskPlan(plan.kind, tuple(targets), plan.source)


# ASCII: "读src/**/*.py里" writes the glob src/**/*.py (Unicode word characters took the
# Chinese ones around it into the glob).
GLOB = re.compile(r"(?<![A-Za-z0-9_/.-])(?P<glob>[A-Za-z0-9_./-]*\*[A-Za-z0-9_.*/-]*)")


def glob_match(path: str, pattern: str) -> bool:
    """fnmatch where ``**/`` also matches no folder at all, as in shells with globstar, and a
    pattern with no folder matches a file's name, as ``find -name`` does ("test_*.py" matches
    tests/test_core.py; on the whole path it failed at "tests/": the 0.5B was then shown the
    folder's count of .py files, 7, for "Combien de fichiers test_*.py ...")."""
    return (
        fnmatch.fnmatchcase(path, pattern)
        or ("**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("**/", "")))
        or ("/" not in pattern and fnmatch.fnmatchcase(os.path.basename(path), pattern))
    )


def task_globs(task: str) -> list[str]:
    """Globs the task writes ("src/**/*.py"): a path pattern, not a word of any language."""
    return [m.group("glob").removeprefix("./") for m in GLOB.finditer(task)]


def expand(targets: Sequence[str], files: Sequence[str]) -> list[str]:
    """The files ``targets`` stand for: a file itself, a folder's files, a glob's matches."""
    out: list[str] = []
    for target in targets:
        if "*" in target:
            out += [p for p in files if glob_match(p, target)]
        elif target.endswith("/"):
            out += [p for p in files if p.startswith(target)]
        elif target in files:
            out.append(target)
    return list(dict.fromkeys(os.path.normpath(p) for p in out))


@dataclass
class PlanOptions:
    """What flags say of the plan: ``each`` (a glob: the task is over each file it matches),
    ``kind`` (one of KINDS). Either set, no plan request is made for what it states."""

    each: str | None = None
    kind: str | None = None
