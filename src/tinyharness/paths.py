"""Where tinyharness keeps its data: the run log and the default memory store.

May import nothing of the package."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TINYHARNESS_HOME"


def data_home() -> Path:
    """TINYHARNESS_HOME, else $XDG_DATA_HOME/tinyharness, else ~/.local/share/tinyharness."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tinyharness"
