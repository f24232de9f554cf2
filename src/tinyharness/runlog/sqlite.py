"""The run log in one SQLite file (the default): ``RunLog(path)``.

The file is checked before anything is written (``sqlitedb``): one that is not a SQLite
database, belongs to another program, or has a schema newer than this code knows raises
``RunLogError`` and is left untouched: never overwritten, never migrated down.

May import ``sqlitedb``, ``paths``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..paths import data_home
from ..sqlitedb import Schema, open_database, write_transaction
from . import schema
from .base import RunLogError
from .store import SQLRunLog

DEFAULT_FILE = "runs.db"


def default_path() -> Path:
    """$TINYHARNESS_HOME/runs.db, else $XDG_DATA_HOME/tinyharness/runs.db, else
    ~/.local/share/tinyharness/runs.db."""
    return data_home() / DEFAULT_FILE


class _SQLite:
    """The ``Connection`` of a SQLite file (autocommit; ``transaction`` takes the write lock first)."""

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    same = "{column} IS ?"
    newest_first = "r.started DESC, r.rowid DESC"
    oldest_first = "r.started, r.rowid"

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self._lock = threading.RLock()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, write_transaction(self.db):
            yield

    def close(self) -> None:
        self.db.close()

    def set_trace_callback(self, callback: Callable[[str], object] | None) -> None:
        """SQLite's statement trace (the parallel-calls benchmark counts the SQL written)."""
        self.db.set_trace_callback(callback)


class RunLog(SQLRunLog):
    """One SQLite run log. ``RunLog(path)`` opens or creates the file and brings its schema up
    to date; ``create=False`` refuses a missing file instead of creating it. Close it (or use
    ``with``) when done."""

    def __init__(
        self, path: str | Path | None = None, *, create: bool = True, session: str | None = None
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        kind = Schema("run log", schema.APPLICATION_ID, schema.MIGRATIONS)  # read now: tests add migrations
        self._sqlite = _SQLite(open_database(self.path, kind, RunLogError, create=create))
        super().__init__(self._sqlite, str(self.path), session=session)

    def __enter__(self) -> RunLog:
        return self

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._sqlite.db.execute("PRAGMA user_version").fetchone()[0])
