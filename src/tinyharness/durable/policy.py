"""What a worker lets a queued run do: queued work never widens the worker's rights.

Anyone who can write to the queue chooses a run's options, so a worker checks them against what
it was started with (``WorkerPolicy``) before it runs anything:

- the workspace must lie beneath one of the worker's ``--workspace-root`` folders (links
  resolved), and must neither be the worker's data folder (``TINYHARNESS_HOME``: its config,
  keys, run log) nor hold it nor lie inside it;
- every other path the run names (``--events``, ``--notes``, ``--memory-dir``, a SQLite
  ``--memory``) must lie inside that workspace;
- ``--shell`` runs only on a worker started with ``--allow-shell``, ``--mcp`` only on one
  started with ``--allow-mcp`` (an MCP config names a command to start).

May import ``errors``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class WorkerPolicy:
    roots: tuple[Path, ...]  # real paths
    data_home: Path  # real path
    allow_shell: bool = False
    allow_mcp: bool = False

    @classmethod
    def build(
        cls, roots: Sequence[str], data_home: Path, *, allow_shell: bool, allow_mcp: bool
    ) -> WorkerPolicy:
        """ConfigError for a root that is not a folder, or one that holds the data folder."""
        if not roots:
            raise ConfigError(
                "a worker needs --workspace-root DIR (repeatable): queued runs may use workspaces "
                "beneath those folders only"
            )
        home = _real(data_home)
        real = []
        for root in roots:
            path = _real(root)
            if not path.is_dir():
                raise ConfigError(f"--workspace-root {root} is not a folder")
            if home.is_relative_to(path) or path.is_relative_to(home):
                raise ConfigError(
                    f"--workspace-root {root} holds (or is inside) this worker's data folder {home}; "
                    "pick a folder apart from it"
                )
            real.append(path)
        return cls(tuple(real), home, allow_shell, allow_mcp)

    def refusal(self, workspace: str, args: argparse.Namespace) -> str | None:
        """Why the run cannot run on this worker, or None when it may."""
        place = _real(workspace)
        if not any(place.is_relative_to(root) for root in self.roots):
            shown = ", ".join(str(r) for r in self.roots)
            return f"workspace {workspace} is not beneath this worker's --workspace-root ({shown})"
        if place.is_relative_to(self.data_home) or self.data_home.is_relative_to(place):
            return f"workspace {workspace} is, holds or lies inside the worker's data folder"
        if getattr(args, "shell", False) and not self.allow_shell:
            return "the run asks for --shell; this worker was not started with --allow-shell"
        if getattr(args, "mcp", None) and not self.allow_mcp:
            return "the run asks for --mcp; this worker was not started with --allow-mcp"
        for option, value in _paths(args):
            where = _real(place / value)
            if not where.is_relative_to(place):
                return f"{option} {value} lies outside the run's workspace"
        return None


def _paths(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The paths a run's options name (relative ones are taken from the workspace)."""
    found = []
    for option, dest in (("--events", "events"), ("--notes", "notes"), ("--memory-dir", "memory_dir")):
        value = getattr(args, dest, None)
        if value:
            found.append((option, str(value)))
    memory = str(getattr(args, "memory", None) or "")
    if memory.startswith("sqlite://"):
        memory = memory.removeprefix("sqlite://")
    if memory and "://" not in memory and memory.lower() not in ("off", "none"):
        found.append(("--memory", memory))
    return found
