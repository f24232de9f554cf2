"""Where offloaded tool output goes: the one place context management writes files.

The ``offload`` step is a pure function of the history; what it cuts must still be readable by
the agent, so it hands the full text to a ``SpillWriter`` the manager gives it and puts the
path that comes back into the preview. ``SpillFolder`` is the manager's writer: one file per
tool call in the run's state folder, written atomically, named after the call id (so offloading
the same result again writes nothing new). Inside the workspace it writes through
``tinyharness.safefs``: a ``.tinyharness`` that is a link leading out of the workspace is
refused, never followed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..safefs import Folder, make_folder


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
        path = Path(os.path.abspath(self.folder / f"tool-result-{digest}.txt"))
        base, inner, relative = path.parent, path.name, False
        for root in _spellings(self.workspace):
            if path.is_relative_to(root):
                base, inner, relative = root, path.relative_to(root).as_posix(), True
                break
        try:
            make_folder(base)
            folder = Folder(base)
            if folder.stat(inner) is None:
                folder.write(inner, text.encode("utf-8"))  # atomic: a reader never sees half a file
        except (OSError, ValueError):
            return None
        return inner if relative else str(path)


def _spellings(workspace: Path | None) -> list[Path]:
    """The workspace as given and as its real path (the state folder may be spelled either way)."""
    if workspace is None:
        return []
    return [Path(os.path.abspath(workspace)), Path(os.path.realpath(workspace))]
