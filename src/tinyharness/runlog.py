"""The run log: every run's events, model calls, tool calls, compactions, memory and notes
operations and errors in one SQLite file, redacted. (Sessions resume from their own private
store, ``sqlite_session``; the checkpoint tables here hold what older versions saved, which a
session with no newer copy continues from.)

``RunLog`` is an ``EventSink``: add it to the ``EventBus`` and each event is committed as it
arrives, so a run killed at any point (SIGKILL included) keeps everything up to its last event.
The raw event is kept beside the typed tables, so ``export`` gives back the event stream exactly
as ``--events`` writes it, except that secrets are redacted before anything is stored.

The schema grows through ``MIGRATIONS``, an ordered list applied once each and recorded in the
``user_version`` pragma. A file that is not a SQLite database, belongs to another program, or has a
schema newer than this code knows raises ``RunLogError`` and is left untouched: never overwritten,
never migrated down.

May import: ``errors``, ``events``, ``redact``, ``paths``, ``sqlitedb``. Nothing else of the package.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from .errors import HarnessError
from .events import Event, redacted_json
from .events import redact_value as redact_value  # re-exported: the redaction the log applies
from .paths import data_home
from .redact import redact as _redact_text
from .sqlitedb import Schema, open_database

APPLICATION_ID = 0x74696E68  # "tinh": marks a SQLite file as a tinyharness run log
DEFAULT_FILE = "runs.db"


class RunLogError(HarnessError):
    """The run log cannot be used: not a database, corrupt, someone else's, or a newer schema."""


class RunNotFound(HarnessError):
    """No run (or more than one) matches the id or prefix asked for."""


# --- secret redaction -------------------------------------------------------------------------

# One redaction for every persisting sink: the run log stores exactly what ``JsonlSink`` writes.
_to_json = redacted_json


# --- schema -----------------------------------------------------------------------------------

MIGRATIONS: list[list[str]] = [
    # 1: the first schema
    [
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            task TEXT, model TEXT, session TEXT,
            started REAL, ended REAL, stop TEXT, final TEXT, detail TEXT,
            model_calls INTEGER, compactions INTEGER, usage TEXT, start_fields TEXT
        )""",
        "CREATE INDEX runs_started ON runs(started)",
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, type TEXT NOT NULL,
            ts REAL, body TEXT NOT NULL
        )""",
        "CREATE INDEX events_run ON events(run_id, id)",
        """CREATE TABLE model_calls (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            call INTEGER, purpose TEXT, stop_reason TEXT,
            input_tokens INTEGER, output_tokens INTEGER, usage TEXT, tokens INTEGER,
            messages INTEGER, duration REAL, prefix_share REAL, request TEXT, response TEXT
        )""",
        "CREATE INDEX model_calls_run ON model_calls(run_id, id)",
        """CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            call_id TEXT, name TEXT, args TEXT,
            ok INTEGER, chars INTEGER, truncated INTEGER, result_seq INTEGER, result_ts REAL
        )""",
        "CREATE INDEX tool_calls_run ON tool_calls(run_id, call_id)",
        """CREATE TABLE compactions (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            n INTEGER, strategy TEXT, tokens_before INTEGER, tokens_after INTEGER,
            messages_before INTEGER, messages_after INTEGER, after_call INTEGER
        )""",
        "CREATE INDEX compactions_run ON compactions(run_id, id)",
        """CREATE TABLE memory_ops (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            kind TEXT NOT NULL, op TEXT, body TEXT
        )""",
        "CREATE INDEX memory_ops_run ON memory_ops(run_id, id)",
        """CREATE TABLE notes_ops (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            op TEXT, chars INTEGER, body TEXT
        )""",
        "CREATE INDEX notes_ops_run ON notes_ops(run_id, id)",
        """CREATE TABLE errors (
            id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER, ts REAL,
            stop TEXT, kind TEXT, message TEXT
        )""",
        "CREATE INDEX errors_run ON errors(run_id, id)",
        """CREATE TABLE checkpoints (
            session TEXT PRIMARY KEY, run_id TEXT NOT NULL, step INTEGER NOT NULL,
            messages TEXT NOT NULL, state TEXT NOT NULL, saved REAL NOT NULL
        )""",
    ],
    # 2: checkpoint messages one row each, so a step writes (and redacts) only what changed.
    [
        """CREATE TABLE checkpoint_messages (
            session TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL,
            PRIMARY KEY (session, position)
        )""",
    ],
    # 3: the tree of runs: a sub-agent's run names the run and the task call that started it.
    [
        "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
        "ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN call_id TEXT",
        "CREATE INDEX runs_parent ON runs(parent_run_id, started)",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)


def default_path() -> Path:
    """$TINYHARNESS_HOME/runs.db, else $XDG_DATA_HOME/tinyharness/runs.db, else
    ~/.local/share/tinyharness/runs.db."""
    return data_home() / DEFAULT_FILE


# --- query results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    id: str
    task: str | None
    model: str | None
    session: str | None
    started: float | None
    ended: float | None
    stop: str | None  # None while running, or when the run was killed
    final: str | None
    model_calls: int  # counted from the logged model_call events
    compactions: int
    tool_calls: int
    errors: int
    parent_run_id: str | None = None  # the run whose task call started this one (a sub-agent)
    depth: int = 0  # 0 for a top-level run, 1 for its sub-agents, ...
    call_id: str | None = None  # the parent's task call that started it
    usage: dict[str, int] | None = None  # billed tokens (a parent's include its sub-agents')


class Checkpoint(NamedTuple):
    run_id: str
    step: int
    messages: list[dict[str, Any]]
    state: dict[str, Any]


_SUMMARY_SQL = """
SELECT r.id, r.task, r.model, r.session, r.started, r.ended, r.stop, r.final,
    (SELECT count(*) FROM model_calls m WHERE m.run_id = r.id),
    (SELECT count(*) FROM compactions c WHERE c.run_id = r.id),
    (SELECT count(*) FROM tool_calls t WHERE t.run_id = r.id),
    (SELECT count(*) FROM errors e WHERE e.run_id = r.id),
    r.parent_run_id, coalesce(r.depth, 0), r.call_id, r.usage
FROM runs r
"""


def _summary(row: tuple[Any, ...]) -> RunSummary:
    usage = json.loads(row[-1]) if row[-1] else None
    summary = RunSummary(*row[:-1])
    return dataclasses.replace(summary, usage=usage) if isinstance(usage, dict) else summary


# --- the log ----------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return None if value is None else _redact_text(value if isinstance(value, str) else str(value))


class RunLog:
    """One SQLite run log. Thread-safe (tools may emit events from worker threads).

    ``RunLog(path)`` opens or creates the file and brings its schema up to date;
    ``create=False`` refuses a missing file instead of creating it. ``session`` is recorded on
    runs whose ``run_start`` event names none. Close it (or use ``with``) when done.
    """

    def __init__(
        self, path: str | Path | None = None, *, create: bool = True, session: str | None = None
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.session = session
        self._lock = threading.RLock()
        self._last_call: dict[str, int] = {}
        schema = Schema("run log", APPLICATION_ID, MIGRATIONS)  # read now: tests add migrations
        self._db = open_database(self.path, schema, RunLogError, create=create)

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def emit(self, event: Event) -> None:
        """Store one event and its typed row, committed before returning."""
        run_id = str(event.get("run_id", ""))
        kind = str(event.get("type", ""))
        try:
            body = _to_json(event)
            stored: dict[str, Any] = json.loads(body)
            with self._transaction():
                self._db.execute(
                    "INSERT INTO events (run_id, seq, type, ts, body) VALUES (?, ?, ?, ?, ?)",
                    (run_id, _int(event.get("seq")), kind, _num(event.get("ts")), body),
                )
                self._ensure_run(run_id, stored)
                handler = self._HANDLERS.get(kind)
                if handler is not None:
                    handler(self, run_id, stored)
        except sqlite3.Error as exc:
            raise RunLogError(f"cannot write to run log {self.path}: {exc}") from None

    def _ensure_run(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO runs (id, started, session, parent_run_id, depth) VALUES (?, ?, ?, ?, ?)",
            (
                run_id,
                _num(e.get("ts")),
                self.session,
                _text(e.get("parent_run_id")),
                _int(e.get("depth")) or 0,
            ),
        )

    def _on_run_start(self, run_id: str, e: dict[str, Any]) -> None:
        skip = {"type", "seq", "ts", "run_id", "task", "model", "session"}
        extra = {k: v for k, v in e.items() if k not in skip}
        # A resumed run may start again under its id: it is running again until its next run_end.
        self._db.execute(
            """UPDATE runs SET task = coalesce(task, ?), model = coalesce(model, ?),
                   session = coalesce(?, session), ended = NULL, stop = NULL, start_fields = ?,
                   call_id = coalesce(?, call_id)
               WHERE id = ?""",
            (
                _text(e.get("task")),
                _text(e.get("model")),
                _text(e.get("session")),
                json.dumps(extra, ensure_ascii=False),
                _text(e.get("call_id")),
                run_id,
            ),
        )

    def _on_run_end(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            """UPDATE runs SET ended = ?, stop = ?, final = ?, detail = ?, model_calls = ?,
                   compactions = ?, usage = ? WHERE id = ?""",
            (
                _num(e.get("ts")),
                _text(e.get("stop")),
                _text(e.get("final")),
                _text(e.get("detail")),
                _int(e.get("model_calls")),
                _int(e.get("compactions")),
                json.dumps(e["usage"]) if "usage" in e else None,
                run_id,
            ),
        )

    def _on_model_call(self, run_id: str, e: dict[str, Any]) -> None:
        usage = e.get("usage") if isinstance(e.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        call = _int(e.get("call"))
        if call is not None:
            self._last_call[run_id] = call
        self._db.execute(
            """INSERT INTO model_calls (run_id, seq, ts, call, purpose, stop_reason, input_tokens,
                   output_tokens, usage, tokens, messages, duration, prefix_share, request, response)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run_id,
                _int(e.get("seq")),
                _num(e.get("ts")),
                call,
                _text(e.get("purpose")),
                _text(e.get("stop_reason")),
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
                json.dumps(usage) if usage else None,
                _int(e.get("tokens")),
                _int(e.get("messages")),
                _num(e.get("duration")),
                _num(e.get("prefix_share")),
                json.dumps(e["request"], ensure_ascii=False) if "request" in e else None,
                json.dumps(e["response"], ensure_ascii=False) if "response" in e else None,
            ),
        )

    def _on_tool_call(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO tool_calls (run_id, seq, ts, call_id, name, args) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run_id,
                _int(e.get("seq")),
                _num(e.get("ts")),
                _text(e.get("call_id")),
                _text(e.get("name")),
                json.dumps(e.get("args"), ensure_ascii=False),
            ),
        )

    def _on_tool_result(self, run_id: str, e: dict[str, Any]) -> None:
        values = (
            int(bool(e.get("ok"))),
            _int(e.get("chars")),
            int(bool(e.get("truncated"))),
            _int(e.get("seq")),
            _num(e.get("ts")),
        )
        # the latest call with this id that has no result yet (ids may repeat within a run)
        updated = self._db.execute(
            """UPDATE tool_calls SET ok = ?, chars = ?, truncated = ?, result_seq = ?, result_ts = ?
               WHERE id = (SELECT max(id) FROM tool_calls
                           WHERE run_id = ? AND call_id IS ? AND ok IS NULL)""",
            (*values, run_id, _text(e.get("call_id"))),
        ).rowcount
        if not updated:  # a result without its call (a log started mid-run): keep it anyway
            self._db.execute(
                """INSERT INTO tool_calls (run_id, call_id, name, ok, chars, truncated, result_seq,
                       result_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (run_id, _text(e.get("call_id")), _text(e.get("name")), *values),
            )

    def _on_compaction(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            """INSERT INTO compactions (run_id, seq, ts, n, strategy, tokens_before, tokens_after,
                   messages_before, messages_after, after_call) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run_id,
                _int(e.get("seq")),
                _num(e.get("ts")),
                _int(e.get("n")),
                _text(e.get("strategy")),
                _int(e.get("tokens_before")),
                _int(e.get("tokens_after")),
                _int(e.get("messages_before")),
                _int(e.get("messages_after")),
                self._last_call_of(run_id),
            ),
        )

    def _last_call_of(self, run_id: str) -> int | None:
        if run_id not in self._last_call:  # a log opened mid-run: ask the table
            row = self._db.execute(
                "SELECT call FROM model_calls WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run_id,)
            ).fetchone()
            return None if row is None else _int(row[0])
        return self._last_call[run_id]

    def _fields(self, e: dict[str, Any]) -> str:
        return json.dumps(
            {k: v for k, v in e.items() if k not in ("type", "seq", "ts", "run_id")}, ensure_ascii=False
        )

    def _on_memory(self, run_id: str, e: dict[str, Any]) -> None:
        kind = "write" if e.get("type") == "memory_write" else "recall"
        self._db.execute(
            "INSERT INTO memory_ops (run_id, seq, ts, kind, op, body) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, _int(e.get("seq")), _num(e.get("ts")), kind, _text(e.get("op")), self._fields(e)),
        )

    def _on_notes_write(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO notes_ops (run_id, seq, ts, op, chars, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run_id,
                _int(e.get("seq")),
                _num(e.get("ts")),
                _text(e.get("op")),
                _int(e.get("chars")),
                self._fields(e),
            ),
        )

    def _on_error(self, run_id: str, e: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO errors (run_id, seq, ts, stop, kind, message) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run_id,
                _int(e.get("seq")),
                _num(e.get("ts")),
                _text(e.get("stop")),
                _text(e.get("kind")),
                _text(e.get("message")),
            ),
        )

    _HANDLERS: ClassVar[dict[str, Callable[[RunLog, str, dict[str, Any]], None]]] = {
        "run_start": _on_run_start,
        "run_end": _on_run_end,
        "model_call": _on_model_call,
        "tool_call": _on_tool_call,
        "tool_result": _on_tool_result,
        "compaction": _on_compaction,
        "memory_write": _on_memory,
        "memory_recall": _on_memory,
        "notes_write": _on_notes_write,
        "error": _on_error,
    }

    # --- checkpoints ----------------------------------------------------------------------

    def save_checkpoint(
        self,
        run_id: str,
        session: str,
        step: int,
        messages: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        keep: int = 0,
    ) -> None:
        """Replace the session's checkpoint in one transaction (all of it, or none of it).
        ``keep`` leading messages of the stored checkpoint stay as they are and ``messages``
        follow them, so a step costs what it added, not the length of the history."""
        try:
            rows = [(session, keep + i, _to_json(m)) for i, m in enumerate(messages)]
            state_json = _to_json(state)
        except (TypeError, ValueError) as exc:
            raise RunLogError(f"checkpoint of session {session!r} is not JSON-serialisable: {exc}") from None
        try:
            with self._transaction():
                self._db.execute(
                    "DELETE FROM checkpoint_messages WHERE session = ? AND position >= ?", (session, keep)
                )
                self._db.executemany(
                    "INSERT INTO checkpoint_messages (session, position, message) VALUES (?, ?, ?)", rows
                )
                self._db.execute(
                    """INSERT OR REPLACE INTO checkpoints (session, run_id, step, messages, state, saved)
                       VALUES (?, ?, ?, '[]', ?, ?)""",
                    (session, run_id, step, state_json, time.time()),
                )
        except sqlite3.Error as exc:
            raise RunLogError(f"cannot save checkpoint to {self.path}: {exc}") from None

    def load_checkpoint(self, session: str) -> Checkpoint | None:
        """The session's last committed checkpoint; unpacks as (run_id, step, messages, state)."""
        row = self._query_one("SELECT run_id, step, state FROM checkpoints WHERE session = ?", (session,))
        if row is None:
            return None
        stored = self._query(
            "SELECT message FROM checkpoint_messages WHERE session = ? ORDER BY position", (session,)
        )
        messages = [json.loads(m) for (m,) in stored]
        return Checkpoint(row[0], int(row[1]), messages, json.loads(row[2]))

    # --- reading --------------------------------------------------------------------------

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise RunLogError(f"cannot read run log {self.path}: {exc}") from None

    def _query_one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        rows = self._query(sql, params)
        return rows[0] if rows else None

    def list_runs(self, limit: int = 20) -> list[RunSummary]:
        """The newest top-level runs first, each followed by its sub-agents' runs (depth first,
        in the order they started)."""
        rows = self._query(
            _SUMMARY_SQL + " WHERE r.parent_run_id IS NULL ORDER BY r.started DESC, r.rowid DESC LIMIT ?",
            (limit,),
        )
        return [run for row in rows for run in self.tree(_summary(row))]

    def children(self, run_id: str) -> list[RunSummary]:
        """The runs ``run_id``'s task calls started, in the order they started."""
        rows = self._query(_SUMMARY_SQL + " WHERE r.parent_run_id = ? ORDER BY r.started, r.rowid", (run_id,))
        return [_summary(row) for row in rows]

    def tree(self, run: RunSummary) -> list[RunSummary]:
        """``run`` and every run below it, depth first."""
        found = [run]
        for child in self.children(run.id):
            found += self.tree(child)
        return found

    def resolve(self, run_id: str) -> str:
        """The full id of the one run whose id is ``run_id`` or starts with it."""
        if self._query_one("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            return run_id
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (escaped + "%",))
        if not rows or not run_id:
            raise RunNotFound(f"no run {run_id!r} in {self.path}")
        if len(rows) > 1:
            raise RunNotFound(f"run id prefix {run_id!r} is ambiguous in {self.path}; give more characters")
        return str(rows[0][0])

    def get_run(self, run_id: str) -> RunSummary:
        """The run with this id or unique id prefix; ``RunNotFound`` otherwise."""
        full = self.resolve(run_id)
        row = self._query_one(_SUMMARY_SQL + " WHERE r.id = ?", (full,))
        assert row is not None
        return _summary(row)

    def event_lines(self, run_id: str) -> list[str]:
        """The run's events as stored: JSON text as ``JsonlSink`` writes it (redacted)."""
        full = self.resolve(run_id)
        return [r[0] for r in self._query("SELECT body FROM events WHERE run_id = ? ORDER BY id", (full,))]

    def events(self, run_id: str) -> list[Event]:
        """The run's events in the order they arrived (id or unique prefix)."""
        return [json.loads(line) for line in self.event_lines(run_id)]
