"""The run log: every run's events, model calls, tool calls, compactions, memory and notes
operations and errors, redacted, in SQLite (one machine, the default) or PostgreSQL (every
worker of a durable queue writes one log).

- ``base``: the ``RunLogStore`` Protocol callers use, its errors and query results.
- ``schema``: the tables, one list of migrations for both backends.
- ``rows``: which typed row each event type adds (pure).
- ``store``: the writer and the queries, written once over a backend's connection.
- ``sqlite`` / ``postgres``: the two backends. ``open_run_log(target)`` picks one from a path
  or a ``postgresql://`` URL.

The raw event is kept beside the typed tables, so ``export`` gives back the event stream exactly
as ``--events`` writes it, except that secrets are redacted before anything is stored. The
checkpoint tables hold sessions older versions saved (sessions have their own store now).

May import ``errors``, ``events``, ``redact``, ``paths``, ``safefs``, ``sqlitedb``, ``terminal``.
Nothing else of the package.
"""

from __future__ import annotations

from pathlib import Path

from ..events import redact_value as redact_value  # re-exported: the redaction the log applies
from .base import Checkpoint, RunLogError, RunLogStore, RunNotFound, RunSummary
from .postgres import PostgresRunLog, is_postgres_url
from .schema import APPLICATION_ID, MIGRATIONS
from .sqlite import DEFAULT_FILE, RunLog, default_path
from .store import SQLRunLog

SCHEMA_VERSION = len(MIGRATIONS)

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_FILE",
    "SCHEMA_VERSION",
    "Checkpoint",
    "PostgresRunLog",
    "RunLog",
    "RunLogError",
    "RunLogStore",
    "RunNotFound",
    "RunSummary",
    "SQLRunLog",
    "default_path",
    "is_postgres_url",
    "open_run_log",
    "redact_value",
]


def open_run_log(target: str | Path | None = None, *, session: str | None = None) -> SQLRunLog:
    """The run log at ``target``: a ``postgresql://`` URL, else a SQLite path (default: the
    user's data folder)."""
    if isinstance(target, str) and is_postgres_url(target):
        return PostgresRunLog(target, session=session)
    return RunLog(target, session=session)
