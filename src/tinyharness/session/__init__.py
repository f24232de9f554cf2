"""Sessions: one conversation's history and loop state, saved after every step.

- ``base``: the ``Session`` seam (load, save, lock), its ``Checkpointer`` half the loop sees,
  and what resume guarantees.
- ``sqlite``: ``SQLiteSession``, the default, beside the run log, unredacted and private.

May import ``errors``, ``messages``, ``sqlitedb``, ``safefs``, ``paths``, ``context.prefix``.
"""

from __future__ import annotations

from .base import (
    UNKNOWN_OUTCOME,
    Checkpointer,
    SavedSession,
    Session,
    SessionBusy,
    StartPoint,
    TurnProgress,
    close_orphans,
    start_point,
    unknown_outcome,
)
from .sqlite import (
    SessionInfo,
    SessionStore,
    SessionStoreError,
    SQLiteSession,
    store_path_for,
    subagent_prefix,
)

__all__ = [
    "UNKNOWN_OUTCOME",
    "Checkpointer",
    "SQLiteSession",
    "SavedSession",
    "Session",
    "SessionBusy",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
    "StartPoint",
    "TurnProgress",
    "close_orphans",
    "start_point",
    "store_path_for",
    "subagent_prefix",
    "unknown_outcome",
]
