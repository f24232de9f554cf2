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
# The words the plan request's enum offers for each kind: a small model picks a kind by its
# meaning, not by a one-word label (measured with the 0.5B: offered the bare labels, it chose
# "list" for four tasks of four kinds, and listed every candidate as a target).
KIND_MEANINGS = {
    "answer": "answer a question",
    "list": "list or count files",
    "edit": "change a file",
    "notes": "write a note about each file",
    "explore": "explore",
}
MAX_CANDIDATES = 80  # files and folders shown to the plan request (its enum)
MAX_TARGETS = 3
PLAN_TOKENS = 256
PLAN_SYSTEM = "You classify a task given to a coding agent. Reply with one JSON object only."
PLAN_ASK = (
    "Files and folders of the workspace (folders end with /):\n{listing}\n\nTask:\n{task}\n\n"
    "What does the task ask for, and which one to three of the files or folders above is it about?"
)

# A ranking of the workspace's files against a task: (workspace root, task, k) -> up to k items,
# best first, each a workspace-relative path or an object with a ``path`` (see ``candidates``).
Rank = Callable[[Path, str, int], Sequence[Any]]


@dataclass(frozen=True)
class TaskPlan:
    """``kind`` (one of KINDS, None when unknown) and ``targets`` (workspace-relative files,
    folders ending in "/", or a glob from ``--each``); ``source`` says who chose it: "model",
    "flag" or "paths" (exact path matches only)."""

    kind: str | None = None
    targets: tuple[str, ...] = ()
    source: str = ""

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "targets": list(self.targets), "source": self.source}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskPlan:
        kind = state.get("kind")
        targets = state.get("targets")
        return cls(
            kind if kind in KINDS else None,
            tuple(str(t) for t in targets) if isinstance(targets, list) else (),
            str(state.get("source", "")),
        )


def plan_schema(candidates: Sequence[str]) -> dict[str, Any]:
    """The JSON schema the plan request's reply must match (both lists are enums)."""
    items: dict[str, Any] = {"type": "string", "enum": list(candidates)} if candidates else {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(KIND_MEANINGS.values())},
            "targets": {"type": "array", "items": items, "maxItems": MAX_TARGETS},
        },
        "required": ["kind", "targets"],
        "additionalProperties": False,
    }


def plan_request(task: str, candidates: Sequence[str]) -> ModelRequest:
    """The one request that classifies ``task`` (purpose "plan", no tools)."""
    listing = "\n".join(candidates) or "(empty)"
    text = PLAN_ASK.format(task=task, listing=listing)
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
    return TaskPlan(kind, tuple(dict.fromkeys(targets))[:MAX_TARGETS], "model")


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
            *(f for f in folders if _names(task, f.rstrip("/"))),
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


def candidates(rank: Rank, root: Path, task: str, k: int = MAX_CANDIDATES) -> list[str]:
    """``rank``'s paths (strings, or items with a ``path``), without repeats."""
    out: list[str] = []
    for item in rank(root, task, k):
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


def _names(task: str, path: str) -> int | None:
    """Where ``task`` names ``path`` as a whole path (not inside a longer one), or None."""
    match = re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w-]|\.\w)", task)
    return match.start() if match is not None else None


GLOB = re.compile(r"(?<![\w/.-])(?P<glob>[\w./-]*\*[\w.*/-]*)")


def glob_match(path: str, pattern: str) -> bool:
    """fnmatch where ``**/`` also matches no folder at all, as in shells with globstar."""
    return fnmatch.fnmatchcase(path, pattern) or (
        "**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("**/", ""))
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
