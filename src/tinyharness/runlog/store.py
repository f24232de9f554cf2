"""The run log's writer and queries, written once for every backend.

``SQLRunLog`` is an ``EventSink``: each event is stored with its raw JSON beside its typed row.
Most events are committed as they arrive. The two that report what has already happened and
are followed at once by a commit (``deferred``: a model reply that asks for tools, whose
``tool_call`` comes next; a ``tool_result``) wait for the next event or ``flush``, which the
loop calls before it waits on anything outside the process (a model request, a hook), and
go in that transaction: a turn commits two transactions, not three. So a run killed at any
point keeps every event up to the last one before its last wait, and every ``tool_call``
before its tool runs; a kill can only lose the deferred events of the harness's own last few
milliseconds of work, whose effects the session records apart. A backend
(``sqlite.RunLog``, ``postgres.PostgresRunLog``) supplies a ``Connection``: how to run a
statement, how to open a transaction, which errors its driver raises. Statements here use ``?``
for parameters; a backend that spells them otherwise rewrites them.

May import ``events``, ``redact``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..events import Event, redacted_event, redacted_json
from .base import Checkpoint, RunLogError, RunNotFound, RunSummary
from .rows import as_int, as_num, as_text, run_start_fields, tool_result_values, typed_row


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """One backend's database connection, as the writer and the queries use it."""

    errors: tuple[type[Exception], ...]  # what its driver raises
    same: str  # "{column} IS ?": equal, or both NULL
    newest_first: str  # ORDER BY of the run list (newest first, ties in insertion order)
    oldest_first: str  # the other way round (sub-agents' runs in the order they started)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...


_SUMMARY_SQL = """
SELECT r.id, r.task, r.model, r.session, r.started, r.ended, r.stop, r.final,
    (SELECT count(*) FROM model_calls m WHERE m.run_id = r.id),
    (SELECT count(*) FROM compactions c WHERE c.run_id = r.id),
    (SELECT count(*) FROM tool_calls t WHERE t.run_id = r.id),
    (SELECT count(*) FROM errors e WHERE e.run_id = r.id),
    r.parent_run_id, coalesce(r.depth, 0), r.call_id, r.usage, r.cost
FROM runs r
"""


def _summary(row: tuple[Any, ...]) -> RunSummary:
    usage = json.loads(row[-2]) if row[-2] else None
    cost = json.loads(row[-1]) if row[-1] else None
    return dataclasses.replace(
        RunSummary(*row[:-2]),
        usage=usage if isinstance(usage, dict) else None,
        cost=cost if isinstance(cost, dict) else None,
    )


LAST = "last"  # the run id that means the newest top-level run


def deferred(event: Event) -> bool:
    """Whether the log may keep ``event`` back until the next event or ``flush`` (see the
    module's docstring)."""
    kind = event.get("type")
    return kind == "tool_result" or (kind == "model_call" and event.get("stop_reason") == "tool_use")


class SQLRunLog:
    """The run log over one connection. Thread-safe (tools may emit events from worker threads).
    ``session`` is recorded on runs whose ``run_start`` event names none."""

    def __init__(self, db: Connection, where: str, *, session: str | None = None) -> None:
        self._db = db
        self.where = where
        self.session = session
        self._lock = threading.RLock()
        self._last_call: dict[str, int] = {}
        self._runs: set[str] = set()  # runs whose row this log has written or seen
        # Deferred events not committed yet, in order: (run id, event, its redacted body and value).
        self._pending: list[tuple[str, Event, str, dict[str, Any]]] = []

    def close(self) -> None:
        with self._lock:
            try:
                self.flush()
            finally:
                self._db.close()

    def __enter__(self) -> SQLRunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    def _transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    def emit(self, event: Event) -> None:
        """Store one event and its typed row: committed before returning, with the deferred
        ones before it, unless it is deferred itself (``deferred``)."""
        body, stored = redacted_event(event)
        with self._lock:
            self._pending.append((str(event.get("run_id", "")), event, body, stored))
            if not deferred(event):
                self.flush()

    def flush(self) -> None:
        """Commit the deferred events, in one transaction."""
        with self._lock:
            if not self._pending:
                return
            pending, self._pending = self._pending, []
            try:
                with self._transaction():
                    for run_id, event, body, stored in pending:
                        self._db.execute(
                            "INSERT INTO events (run_id, seq, type, ts, body) VALUES (?, ?, ?, ?, ?)",
                            (
                                run_id,
                                as_int(event.get("seq")),
                                str(event.get("type", "")),
                                as_num(event.get("ts")),
                                body,
                            ),
                        )
                        self._write_typed(run_id, stored)
            except self._db.errors as exc:
                raise RunLogError(f"cannot write to run log {self.where}: {exc}") from None
            self._runs.update(run_id for run_id, *_ in pending)  # their rows are committed

    def _write_typed(self, run_id: str, e: dict[str, Any]) -> None:
        kind = e.get("type")
        # The run's row, made by its first event (rows of runs are never deleted). A run_start
        # and a log opened mid-run ask the table; later events of a run this log wrote do not.
        if run_id not in self._runs or kind == "run_start":
            self._db.execute(
                """INSERT INTO runs (id, started, session, parent_run_id, depth) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT DO NOTHING""",
                (
                    run_id,
                    as_num(e.get("ts")),
                    self.session,
                    as_text(e.get("parent_run_id")),
                    as_int(e.get("depth")) or 0,
                ),
            )
        if kind == "run_start":
            # A resumed run may start again under its id: it is running again until its next run_end.
            self._db.execute(
                """UPDATE runs SET task = coalesce(task, ?), model = coalesce(model, ?),
                       session = coalesce(?, session), ended = NULL, stop = NULL, start_fields = ?,
                       call_id = coalesce(?, call_id)
                   WHERE id = ?""",
                (
                    as_text(e.get("task")),
                    as_text(e.get("model")),
                    as_text(e.get("session")),
                    run_start_fields(e),
                    as_text(e.get("call_id")),
                    run_id,
                ),
            )
        elif kind == "run_end":
            cost = e.get("cost")
            self._db.execute(
                """UPDATE runs SET ended = ?, stop = ?, final = ?, detail = ?, model_calls = ?,
                       compactions = ?, usage = ?, cost_usd = ?, cost = ? WHERE id = ?""",
                (
                    as_num(e.get("ts")),
                    as_text(e.get("stop")),
                    as_text(e.get("final")),
                    as_text(e.get("detail")),
                    as_int(e.get("model_calls")),
                    as_int(e.get("compactions")),
                    json.dumps(e["usage"]) if "usage" in e else None,
                    as_num(cost.get("usd")) if isinstance(cost, dict) else None,
                    json.dumps(cost) if isinstance(cost, dict) else None,
                    run_id,
                ),
            )
        elif kind == "tool_result":
            self._tool_result(run_id, e)
        row = typed_row(run_id, e)
        if row is None:
            return
        table, values = row
        if kind == "model_call" and values["call"] is not None:
            self._last_call[run_id] = values["call"]
        if kind == "compaction":
            values["after_call"] = self._last_call_of(run_id)
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self._db.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(values.values()))

    def _tool_result(self, run_id: str, e: dict[str, Any]) -> None:
        values = tool_result_values(e)
        # the latest call with this id that has no result yet (ids may repeat within a run)
        updated = self._db.execute(
            f"""UPDATE tool_calls SET ok = ?, chars = ?, truncated = ?, result_seq = ?, result_ts = ?
               WHERE id = (SELECT max(id) FROM tool_calls
                           WHERE run_id = ? AND {self._db.same.format(column="call_id")} AND ok IS NULL)""",
            (*values, run_id, as_text(e.get("call_id"))),
        ).rowcount
        if not updated:  # a result without its call (a log started mid-run): keep it anyway
            self._db.execute(
                """INSERT INTO tool_calls (run_id, call_id, name, ok, chars, truncated, result_seq,
                       result_ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (run_id, as_text(e.get("call_id")), as_text(e.get("name")), *values),
            )

    def _last_call_of(self, run_id: str) -> int | None:
        if run_id not in self._last_call:  # a log opened mid-run: ask the table
            rows = self._db.execute(
                "SELECT call FROM model_calls WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run_id,)
            ).fetchall()
            return as_int(rows[0][0]) if rows else None
        return self._last_call[run_id]

    # --- checkpoints an older tinyharness saved in the run log ------------------------------

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
        follow them, so a step costs what it added, not the length of the history. (Sessions
        are kept in their own store now; this writes what older versions wrote.)"""
        try:
            rows = [(session, keep + i, redacted_json(m)) for i, m in enumerate(messages)]
            state_json = redacted_json(state)
        except (TypeError, ValueError) as exc:
            raise RunLogError(f"checkpoint of session {session!r} is not JSON-serialisable: {exc}") from None
        try:
            with self._lock, self._transaction():
                self._db.execute(
                    "DELETE FROM checkpoint_messages WHERE session = ? AND position >= ?", (session, keep)
                )
                self._db.executemany(
                    "INSERT INTO checkpoint_messages (session, position, message) VALUES (?, ?, ?)", rows
                )
                self._db.execute(
                    """INSERT INTO checkpoints (session, run_id, step, messages, state, saved)
                       VALUES (?, ?, ?, '[]', ?, ?) ON CONFLICT (session) DO UPDATE SET
                       run_id = excluded.run_id, step = excluded.step, messages = excluded.messages,
                       state = excluded.state, saved = excluded.saved""",
                    (session, run_id, step, state_json, time.time()),
                )
        except self._db.errors as exc:
            raise RunLogError(f"cannot save checkpoint to {self.where}: {exc}") from None

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
                self.flush()  # this process reads what it wrote
                return [tuple(r) for r in self._db.execute(sql, params).fetchall()]
        except self._db.errors as exc:
            raise RunLogError(f"cannot read run log {self.where}: {exc}") from None

    def _query_one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        rows = self._query(sql, params)
        return rows[0] if rows else None

    def last_seq(self, run_id: str) -> int:
        row = self._query_one("SELECT max(seq) FROM events WHERE run_id = ?", (run_id,))
        return int(row[0]) if row is not None and row[0] is not None else 0

    def list_runs(self, limit: int = 20) -> list[RunSummary]:
        """The newest top-level runs first, each followed by its sub-agents' runs (depth first,
        in the order they started)."""
        rows = self._query(
            _SUMMARY_SQL + f" WHERE r.parent_run_id IS NULL ORDER BY {self._db.newest_first} LIMIT ?",
            (limit,),
        )
        return [run for row in rows for run in self.tree(_summary(row))]

    def children(self, run_id: str) -> list[RunSummary]:
        """The runs ``run_id``'s task calls started, in the order they started."""
        rows = self._query(
            _SUMMARY_SQL + f" WHERE r.parent_run_id = ? ORDER BY {self._db.oldest_first}", (run_id,)
        )
        return [_summary(row) for row in rows]

    def tree(self, run: RunSummary) -> list[RunSummary]:
        """``run`` and every run below it, depth first."""
        found = [run]
        for child in self.children(run.id):
            found += self.tree(child)
        return found

    def resolve(self, run_id: str) -> str:
        """The full id of the one run whose id is ``run_id`` or starts with it; ``last``: the
        newest top-level run (what ``runs`` lists first)."""
        if self._query_one("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            return run_id
        if run_id == LAST:
            newest = self.list_runs(1)
            if not newest:
                raise RunNotFound(f"no runs yet in {self.where}")
            return newest[0].id
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (escaped + "%",))
        if not rows or not run_id:
            raise RunNotFound(f"no run {run_id!r} in {self.where}")
        if len(rows) > 1:
            raise RunNotFound(f"run id prefix {run_id!r} is ambiguous in {self.where}; give more characters")
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
