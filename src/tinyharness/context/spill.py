"""Where offloaded tool output goes: the one place context management writes files.

The ``offload`` step is a pure function of the history; what it cuts must still be readable by
the agent, so it hands the full text to a ``SpillWriter`` the manager gives it and puts the
path that comes back into the preview. ``SpillFolder`` is the manager's writer: one file per
tool call in the run's state folder, written atomically, named after the call id (so offloading
the same result again writes nothing new).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class SpillWriter(Protocol):
    def __call__(self, call_id: str, text: str) -> str | None:
        """Keep ``text`` (the whole output of tool call ``call_id``); the path to read it back
        with, or None when it could not be kept."""
        ...


@dataclass(frozen=True)
class SpillFolder:
    """Files under ``folder``; paths inside ``workspace`` are given relative to it, so the
    agent's read_file can open them."""

    folder: Path
    workspace: Path | None = None

    def __call__(self, call_id: str, text: str) -> str | None:
        digest = hashlib.sha1(call_id.encode("utf-8")).hexdigest()[:16]
        path = self.folder / f"tool-result-{digest}.txt"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                tmp = path.with_suffix(".tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)  # atomic: a reader never sees half a file
        except OSError:
            return None
        if self.workspace is not None and path.resolve().is_relative_to(self.workspace.resolve()):
            return path.resolve().relative_to(self.workspace.resolve()).as_posix()
        return str(path)
