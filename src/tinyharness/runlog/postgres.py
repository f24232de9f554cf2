"""The run log in PostgreSQL, shared by every worker: ``PostgresRunLog(url)``.

Chosen by a ``postgresql://`` URL (``--log``). The tables are those of the SQLite run log (the
same migrations, ``schema.for_postgres``), in a schema of their own (``tinyharness_log``), so
they share a database with the memory store and the durable queue without meeting their
tables. Migrations run under an advisory lock: workers that start together apply each once.
A database whose run log is newer than this code is refused, never migrated down. Needs
``psycopg`` (3).

May import ``redact``, ``errors``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
from ..redact import redact
from . import schema
from .base import RunLogError
from .store import SQLRunLog

SCHEMA = "tinyharness_log"


def is_postgres_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


class _Postgres:
    """The ``Connection`` of a PostgreSQL database (autocommit outside ``transaction``)."""

    same = "{column} IS NOT DISTINCT FROM ?"
    newest_first = "r.started DESC NULLS LAST, r.id DESC"
    oldest_first = "r.started NULLS FIRST, r.id"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "a postgresql:// run log needs psycopg: pip install 'tinyharness[durable]'"
            ) from None
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)
        try:
            self.db: Any = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise RunLogError(f"cannot connect to the run log {redact(url)}: {exc}".strip()) from None
        self._lock = threading.RLock()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.db.execute(sql.replace("?", "%s"), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.db.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, self.db.transaction():
            yield

    def close(self) -> None:
        self.db.close()


class PostgresRunLog(SQLRunLog):
    """The run log in the PostgreSQL database at ``url``, created and migrated on first use."""

    def __init__(self, url: str, *, session: str | None = None) -> None:
        self.url = url
        db = _Postgres(url)
        where = redact(url)
        try:
            _migrate(db, where)
        except db.errors as exc:
            db.close()
            raise RunLogError(f"cannot prepare the run log {where}: {exc}") from None
        except BaseException:
            db.close()
            raise
        super().__init__(db, where, session=session)

    def __enter__(self) -> PostgresRunLog:
        return self

    @property
    def schema_version(self) -> int:
        rows = self._query("SELECT version FROM schema_version")
        return int(rows[0][0])


def _migrate(db: _Postgres, where: str) -> None:
    known = schema.schema_version()
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(hashtext('tinyharness run log schema'))")
        db.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        db.execute(f"SET search_path TO {SCHEMA}")  # this session's statements name our tables
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        rows = db.execute("SELECT version FROM schema_version").fetchall()
        version = int(rows[0][0]) if rows else 0
        if not rows:
            db.execute("INSERT INTO schema_version VALUES (0)")
        if version > known:
            raise RunLogError(
                f"run log {where} has schema version {version}, newer than this tinyharness knows "
                f"({known}); upgrade tinyharness or pick another database"
            )
        for statement_list in schema.MIGRATIONS[version:]:
            for statement in statement_list:
                db.execute(schema.for_postgres(statement))
        db.execute("UPDATE schema_version SET version = ?", (known,))
    db.execute(f"SET search_path TO {SCHEMA}")
