"""Keep tinyharness's files in a workspace out of the user's commits.

A run may leave two things in its workspace: ``NOTES.md`` (the notes file the agent writes and
reads back, which the user is meant to read too) and ``.tinyharness/`` (full tool outputs that
were too big for the context, which the agent reads back with read_file, so they must stay inside
the workspace it is confined to). When the workspace is in a git repository, both are added to
the repository's ``.git/info/exclude``: the local ignore list, never committed and never shared,
so ``git status`` stays clean and nothing is added to a tracked ``.gitignore``. A file already
tracked stays tracked (git applies ignore rules to untracked files only). The lines are added
once; the caller says so when they were.

May import ``safefs`` (the file is appended beneath the git folder).
"""

from __future__ import annotations

from pathlib import Path

from .safefs import open_append

_HEADER = "# tinyharness run state (notes and offloaded tool outputs)"


def git_dirs(start: Path) -> tuple[Path, Path] | None:
    """(the work tree's top folder, the git directory holding ``info/exclude``) for the
    repository ``start`` is in, or None. A linked worktree's ``.git`` file points to its own git
    directory; the exclude file is the main repository's (``commondir``)."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git
        if dot_git.is_file():
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = (folder / line.removeprefix("gitdir:").strip()).resolve()
            common = git_dir / "commondir"
            if common.is_file():
                try:
                    git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
                except (OSError, UnicodeDecodeError):
                    return None
            return folder, git_dir
    return None


def exclude_run_state(workspace: Path, notes_path: Path | None = None) -> list[str]:
    """Add the run-state paths of ``workspace`` (and ``notes_path`` when it is inside the
    repository) to ``.git/info/exclude``; the patterns added now ([] when there was nothing to
    add, no repository, or the file cannot be written)."""
    root = workspace.resolve()
    found = git_dirs(root)
    if found is None:
        return []
    top, git_dir = found
    targets = [root / ".tinyharness"]
    notes = (notes_path if notes_path is not None else root / "NOTES.md").resolve()
    targets.insert(0, notes)
    patterns = []
    for target in targets:
        try:
            relative = target.relative_to(top).as_posix()
        except ValueError:
            continue  # outside the repository: nothing to ignore there
        patterns.append(f"/{relative}/" if target.name == ".tinyharness" else f"/{relative}")
    exclude = git_dir / "info" / "exclude"
    try:
        current = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        present = {line.strip() for line in current.splitlines()}
        missing = [p for p in patterns if p not in present]
        if not missing:
            return []
        lines = ([] if _HEADER in present else [_HEADER]) + missing
        prefix = "" if not current or current.endswith("\n") else "\n"
        # Beneath the work tree when the git folder is spelled inside it (a ``.git`` or
        # ``.git/info`` link that leads out writes nothing), else beneath the git folder a
        # ``.git`` file names (a linked worktree's).
        owner = top if git_dir.is_relative_to(top) else git_dir
        with open_append(exclude, owner) as handle:
            handle.write((prefix + "\n".join(lines) + "\n").encode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
    return missing
