"""The repository map: each text file of the workspace with its top-level definitions and the
start of its text, and the folders that hold them; built once, ranked against tasks.

The walk is the file tools' confinement: ``Workspace.folder`` opens every file beneath the root
with ``O_NOFOLLOW`` (a link that leads out is never read), hidden folders (``.git``,
``.tinyharness``, ``.venv``), vendored ones and any folder holding a ``pyvenv.cfg`` (a virtual
environment, whatever its name) are not entered, and a file with a NUL byte in its first
block is binary and left out. ``MapLimits`` bounds the work: files, bytes read per file and
in all.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..memory.embed import Embedder
from ..tools.workspace import Workspace
from .rank import Document, Index, RankConfig, rank
from .symbols import definitions

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "bower_components"})
# Packaging metadata (a build's file lists name every path, so they matched every path query).
SKIPPED_SUFFIXES = (".egg-info", ".dist-info")
VENV_MARKER = "pyvenv.cfg"


def _skipped(name: str) -> bool:
    """Folders the map never walks: hidden, vendored, caches, virtualenvs, packaging metadata."""
    return name.startswith(".") or name in SKIPPED_DIRS or name.endswith(SKIPPED_SUFFIXES)


BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class MapLimits:
    """How much the map reads: at most ``max_files`` text files, ``max_file_bytes`` of each (for
    its definitions), ``max_total_bytes`` in all; ``head_chars`` of a file's text are ranked;
    ``max_symbols`` names are kept per file."""

    max_files: int = 5000
    max_file_bytes: int = 256_000
    max_total_bytes: int = 64_000_000
    head_chars: int = 1500
    max_symbols: int = 60


@dataclass(frozen=True)
class FileEntry:
    """A file of the map: its path (relative, with ``/``), its size in bytes, its top-level
    definitions and the start of its text."""

    path: str
    size: int
    symbols: tuple[str, ...]
    head: str


@dataclass(frozen=True)
class Candidate:
    """A file or folder a task may be about. ``score``: an exact mention's tier (3 the path, 2 a
    path's tail or file name, 1 a defined name) plus the ranking's score in [0, 1)."""

    path: str
    kind: Literal["file", "dir"]
    score: float
    symbols: tuple[str, ...] = ()


class RepoMap:
    """Files and folders of a workspace, ranked against a task by ``rank``."""

    def __init__(
        self,
        files: Sequence[FileEntry],
        *,
        truncated: bool = False,
        embedder: Embedder | None = None,
        config: RankConfig | None = None,
    ) -> None:
        self.files = tuple(sorted(files, key=lambda f: f.path))
        self.truncated = truncated  # the limits stopped the walk: some files are not in the map
        self.embedder = embedder
        self.config = config or RankConfig()
        self.dirs = _folders(f.path for f in self.files)
        self._index: Index | None = None

    @classmethod
    def build(
        cls,
        root: str | os.PathLike[str] | Workspace,
        limits: MapLimits | None = None,
        *,
        embedder: Embedder | None = None,
        config: RankConfig | None = None,
    ) -> RepoMap:
        """The map of the workspace at ``root`` (a path or a ``Workspace``)."""
        workspace = root if isinstance(root, Workspace) else Workspace(root)
        entries, truncated = _walk(workspace, limits or MapLimits())
        return cls(entries, truncated=truncated, embedder=embedder, config=config)

    # --- ranking ---------------------------------------------------------------------------

    def rank(self, task: str, k: int = 10) -> list[Candidate]:
        """The ``k`` files and folders that best match ``task``, best first (deterministic:
        ties go by path)."""
        index = self._built_index()
        out = []
        for number, score in rank(index, task, k, self.embedder):
            doc = index.docs[number]
            kind: Literal["file", "dir"] = "dir" if doc.kind == "dir" else "file"
            out.append(Candidate(doc.path, kind, round(score, 6), doc.symbols if kind == "file" else ()))
        return out

    def _built_index(self) -> Index:
        if self._index is None:
            docs = [Document(f.path, "file", f.path, f.symbols, f.head) for f in self.files]
            children = _children(self.files, self.dirs)
            docs += [Document(d, "dir", d, (), " ".join(children[d])) for d in self.dirs]
            self._index = Index.build(docs, self.config)
        return self._index

    # --- as prompt text --------------------------------------------------------------------

    def repo_map_text(self, budget_tokens: int, task: str | None = None, *, max_names: int = 12) -> str:
        """The map as lines ``path: name, name, ...`` within about ``budget_tokens`` tokens
        (characters / 4, honest for code and paths); with ``task``, its best files first, then
        the rest by path. A last line says how many files did not fit."""
        order = list(self.files)
        if task:
            ranked = [c.path for c in self.rank(task, len(self.files)) if c.kind == "file"]
            position = {path: i for i, path in enumerate(ranked)}
            order.sort(key=lambda f: (position.get(f.path, len(position)), f.path))
        budget = max(0, budget_tokens) * 4
        lines: list[str] = []
        used = 0
        for number, entry in enumerate(order):
            names = ", ".join(entry.symbols[:max_names]) + (", ..." if len(entry.symbols) > max_names else "")
            line = f"{entry.path}: {names}" if names else entry.path
            if used + len(line) + 1 > budget - 40:  # room for the last line
                lines.append(f"... and {len(order) - number} more files")
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)


def _walk(workspace: Workspace, limits: MapLimits) -> tuple[list[FileEntry], bool]:
    folder = workspace.folder
    venvs: list[str] = []
    entries: list[FileEntry] = []
    total = 0
    for path in folder.files(".", _skipped):
        if any(path.startswith(v + "/") for v in venvs):
            continue
        if posixpath.basename(path) == VENV_MARKER:
            venvs.append(posixpath.dirname(path))
            entries = [e for e in entries if not e.path.startswith(venvs[-1] + "/")]
            continue
        if len(entries) >= limits.max_files or total >= limits.max_total_bytes:
            return entries, True
        try:
            handle, _shown = folder.open_read(path)
            with handle:
                data = handle.read(min(limits.max_file_bytes, limits.max_total_bytes - total))
                size = os.fstat(handle.fileno()).st_size
        except OSError:
            continue
        total += len(data)
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            continue
        text = data.decode("utf-8", errors="replace")
        symbols = definitions(path, text, limits.max_symbols)
        entries.append(FileEntry(path, size, symbols, text[: limits.head_chars]))
    return entries, False


def _folders(paths: Iterable[str]) -> tuple[str, ...]:
    found: set[str] = set()
    for path in paths:
        parent = posixpath.dirname(path)
        while parent and parent not in found:
            found.add(parent)
            parent = posixpath.dirname(parent)
    return tuple(sorted(found))


def _children(files: Sequence[FileEntry], dirs: Sequence[str]) -> dict[str, list[str]]:
    """What each folder holds directly (its files' and sub-folders' names)."""
    held: dict[str, list[str]] = {d: [] for d in dirs}
    for path in [f.path for f in files] + list(dirs):
        parent = posixpath.dirname(path)
        if parent in held:
            held[parent].append(posixpath.basename(path))
    return held
