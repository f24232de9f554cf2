"""The default ``Session``: SQLite, beside the run log, unredacted and private.

Resuming needs the exact history: a tool result read back redacted (``[REDACTED:email]``)
would be written into the user's files by the model, and a call re-run with redacted
arguments would write the placeholder itself. So sessions are kept in clear, in their own file
(``runs.sessions.db`` beside ``runs.db``) created with mode 0600, that no command shows or
exports; the run log stays redacted and shareable.

A step writes what it changed, not the history: messages are one row each, and the leading
messages that are the very objects already stored are not written again. A tool call writes
one row when it starts and updates it when it finishes, so N parallel calls cost N rows, not
N snapshots of a growing list. The rows of a turn are deleted in the transaction that commits
the turn's results.

One run writes a session at a time: ``lock`` takes an OS lock (``flock``) on a lock file of its
own (``runs.sessions.db-lock-<hash of the name>``, removed when the run ends), which the kernel
releases when the process dies, however it dies.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..context.prefix import identical_prefix
from ..errors import HarnessError
from ..messages import (
    Message,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    block_from_dict,
    block_to_dict,
    message_from_dict,
    message_to_dict,
)
from ..safefs import open_append
from ..sqlitedb import Schema, open_database, write_transaction
from .base import SavedSession, SessionBusy, TurnProgress

APPLICATION_ID = 0x74696E73  # "tins": marks a SQLite file as a tinyharness session store
# A notes-flush ask is kept in session_calls like a tool call, under this prefix (no model's call
# id starts with a control character): result NULL while it runs, "{}" once its notes are written.
FLUSH_PREFIX = "\x01flush:"

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE sessions (
            name TEXT PRIMARY KEY, run_id TEXT NOT NULL, step INTEGER NOT NULL,
            state TEXT NOT NULL, saved REAL NOT NULL
        )""",
        "CREATE INDEX sessions_saved ON sessions(saved)",
        """CREATE TABLE session_messages (
            session TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL,
            PRIMARY KEY (session, position)
        )""",
        # result NULL: the call started and has not finished
        """CREATE TABLE session_calls (
            session TEXT NOT NULL, call_id TEXT NOT NULL, seq INTEGER NOT NULL, result TEXT,
            PRIMARY KEY (session, call_id)
        )""",
    ],
]
SESSION_STORE = Schema("session store", APPLICATION_ID, MIGRATIONS)
SUBAGENT_MARK = "/task:"  # in a session's name: a sub-agent's own session, never resumed alone


def subagent_prefix(parent: str, call_id: str) -> str:
    """The name of the sessions of the sub-agents the task call ``call_id`` of session
    ``parent`` started, up to their number: ``PARENT/task:CALL_ID#``."""
    return f"{parent}{SUBAGENT_MARK}{call_id}#"


@dataclass(frozen=True)
class SessionInfo:
    """A saved session as a list shows it."""

    name: str
    saved: float  # Unix time of its last commit
    messages: int
    opening: str  # the text of its first message (the task), spaces collapsed


class SessionStoreError(HarnessError):
    """The session store cannot be used (not a database, someone else's, newer, unwritable)."""


def store_path_for(log_path: Path) -> Path:
    """The session store beside a run log: ``runs.db`` -> ``runs.sessions.db``."""
    return log_path.with_name(f"{log_path.stem}.sessions{log_path.suffix or '.db'}")


def _json(value: Any) -> str:
    # ASCII escapes: a lone surrogate (some models send them) cannot be stored as UTF-8 text.
    return _ENCODER.encode(value)


# ``json.dumps(value, default=str)``, without building an encoder per call (several per turn).
_ENCODER = json.JSONEncoder(ensure_ascii=True, default=str)


class SessionStore:
    """The sessions file: one connection shared by the sessions opened from it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = open_database(path, SESSION_STORE, SessionStoreError, private=True)
        with suppress(OSError):  # a file made before it was private, or by a wide umask
            os.chmod(path, 0o600)
        self._lock = threading.RLock()

    def open(self, name: str) -> SQLiteSession:
        return SQLiteSession(self, name)

    def latest(self) -> str | None:
        """The session saved most recently (what ``--resume`` without ``--session`` continues),
        a sub-agent's aside: it is resumed by its parent's run."""
        row = self._query(
            "SELECT name FROM sessions WHERE instr(name, ?) = 0 ORDER BY saved DESC LIMIT 1", (SUBAGENT_MARK,)
        )
        return str(row[0][0]) if row else None

    def recent(self, limit: int = 20) -> list[SessionInfo]:
        """The sessions saved most recently, newest first, with what each began with (not the
        sub-agents' asides, which their parent's run resumes)."""
        rows = self._query(
            """SELECT s.name, s.saved,
                      (SELECT COUNT(*) FROM session_messages m WHERE m.session = s.name),
                      (SELECT m.message FROM session_messages m WHERE m.session = s.name
                       ORDER BY m.position LIMIT 1)
               FROM sessions s WHERE instr(s.name, ?) = 0 ORDER BY s.saved DESC LIMIT ?""",
            (SUBAGENT_MARK, limit),
        )
        found = []
        for name, saved, count, first in rows:
            try:
                opening = message_from_dict(json.loads(first)).text if first else ""
            except (ValueError, KeyError, TypeError):
                opening = ""
            found.append(SessionInfo(str(name), float(saved), int(count), " ".join(opening.split())))
        return found

    def names_under(self, prefix: str) -> list[str]:
        """The sessions whose name starts with ``prefix``, oldest first (a run's sub-agents)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query(
            "SELECT name FROM sessions WHERE name LIKE ? ESCAPE '\\' ORDER BY saved, rowid", (escaped + "%",)
        )
        return [str(name) for (name,) in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                with write_transaction(self._db) as db:
                    yield db
            except sqlite3.Error as exc:
                raise SessionStoreError(f"cannot write session store {self.path}: {exc}") from None

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise SessionStoreError(f"cannot read session store {self.path}: {exc}") from None

    def lock_path(self, name: str) -> Path:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.path.with_name(f"{self.path.name}-lock-{digest}")


class SQLiteSession:
    """``Session`` on a ``SessionStore``. ``run_id`` is recorded with each commit."""

    def __init__(self, store: SessionStore, name: str) -> None:
        self.store = store
        self.name = name
        self.run_id = ""
        # What the store holds, kept in step with it row by row (O(new) per save, not a copy of
        # the history); with the epoch of the Transcript it came from, while that only grew.
        self._stored: list[Message] = []
        self._stored_epoch: int | None = None
        self._in_sync = False  # the store's rows are exactly ``_stored`` (after a load or a save)
        self._saved_state = ""
        self._step = 0
        self._pending_calls = False  # rows of the turn in progress may exist
        self._calls = 0
        self._started_by_save: set[str] = set()  # calls the last save recorded as started
        self._lock_file: IO[bytes] | None = None
        self._flush: dict[str, bool] = {}  # the notes flush in progress: ask -> finished

    # --- lock -------------------------------------------------------------------------------

    def lock(self) -> None:
        """Take the session for this run, or ``SessionBusy`` naming the run that holds it."""
        if self._lock_file is not None:
            return
        path = self.store.lock_path(self.name)
        for _ in range(20):  # retried only when a holder removed the file as we opened it
            try:
                file = open_append(path, self.store.path.parent, read=True)
            except OSError as exc:
                raise SessionStoreError(f"cannot create the session lock {path}: {exc.strerror}") from None
            if not _try_lock(file):
                file.seek(0)
                holder = file.read(32).decode("ascii", "replace").strip()
                file.close()
                who = f" (process {holder})" if holder.isdigit() else ""
                raise SessionBusy(
                    f"session {self.name!r} is in use by another tinyharness run{who}; wait for it "
                    "to end, or use another --session"
                )
            if _same_file(file, path):
                break
            file.close()  # we locked a file its holder had just removed: take the new one
        else:
            raise SessionStoreError(f"cannot take the session lock {path}")
        file.seek(0)
        file.truncate()
        file.write(str(os.getpid()).encode())
        file.flush()
        self._lock_file = file
        self._in_sync = False  # another holder may have written since this object last did

    def close(self) -> None:
        """Release the lock (the store stays open). The lock file is removed while still held,
        so no other run can lock a file that is about to disappear."""
        if self._lock_file is not None:
            with suppress(OSError):
                os.unlink(self.store.lock_path(self.name))
            self._lock_file.close()  # closing the file releases the lock
            self._lock_file = None
        self._in_sync = False

    # --- load -------------------------------------------------------------------------------

    def load(self) -> SavedSession | None:
        rows = self.store._query("SELECT run_id, step, state FROM sessions WHERE name = ?", (self.name,))
        if not rows:
            return None
        run_id, step, state = rows[0]
        stored = self.store._query(
            "SELECT message FROM session_messages WHERE session = ? ORDER BY position", (self.name,)
        )
        messages = [message_from_dict(json.loads(m)) for (m,) in stored]
        turn = TurnProgress()
        self._flush = {}
        for call_id, result in self.store._query(
            "SELECT call_id, result FROM session_calls WHERE session = ? ORDER BY seq", (self.name,)
        ):
            if str(call_id).startswith(FLUSH_PREFIX):
                self._flush[str(call_id)[len(FLUSH_PREFIX) :]] = result is not None
                continue
            if result is None:
                turn.started.add(str(call_id))
                continue
            block = block_from_dict(json.loads(result))
            if isinstance(block, ToolResultBlock):
                turn.finished[block.tool_use_id] = block
        self._stored, self._step = list(messages), int(step)
        self._in_sync = True
        self._stored_epoch, self._saved_state = None, ""
        self._pending_calls = bool(turn.started or turn.finished or self._flush)
        self._calls = len(turn.started) + len(turn.finished) + len(self._flush)
        self._started_by_save = set()
        return SavedSession(str(run_id), messages, json.loads(state), turn)

    # --- Checkpointer -------------------------------------------------------------------------

    def save(
        self, messages: Sequence[Message], state: dict[str, Any], *, starting: Sequence[ToolUseBlock] = ()
    ) -> None:
        """Commit the history and state in one transaction, with ``starting`` recorded as
        started (``Checkpointer``). Only messages after the leading ones that are the very
        objects already stored are written (messages are immutable). A ``Transcript`` that
        only grew since the last save is known to start with what is stored, without
        comparing; a save that would change nothing writes nothing."""
        if isinstance(messages, Transcript) and messages.epoch == self._stored_epoch:
            keep = len(self._stored)  # the same list, only appended to since
        else:
            keep = identical_prefix(self._stored, messages)
        rows = [(self.name, keep + i, _json(message_to_dict(m))) for i, m in enumerate(messages[keep:])]
        state_json = _json(state)
        turn_done = not (messages and messages[-1].role == "assistant" and messages[-1].tool_uses)
        clear_calls = turn_done and self._pending_calls
        saved_state = f"{self.run_id}\n{state_json}"
        unchanged = not rows and keep == len(self._stored) and saved_state == self._saved_state
        if not (unchanged and not clear_calls and not starting):
            with self.store.transaction() as db:
                # Rows past ``keep`` exist only when the stored list was longer, or unknown (no
                # load or save yet): a save that only appends needs no DELETE.
                if not self._in_sync or keep < len(self._stored):
                    db.execute(
                        "DELETE FROM session_messages WHERE session = ? AND position >= ?", (self.name, keep)
                    )
                db.executemany(
                    "INSERT INTO session_messages (session, position, message) VALUES (?, ?, ?)", rows
                )
                db.execute(
                    "INSERT OR REPLACE INTO sessions (name, run_id, step, state, saved) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self.name, self.run_id, self._step + 1, state_json, time.time()),
                )
                if clear_calls:  # the turn's results are in the history now
                    db.execute("DELETE FROM session_calls WHERE session = ?", (self.name,))
                for call in starting:
                    self._calls += 1
                    self._record_started(db, call)
            self._step += 1
            self._saved_state = saved_state
            self._in_sync = True
        del self._stored[keep:]
        self._stored.extend(messages[keep:])
        self._stored_epoch = messages.epoch if isinstance(messages, Transcript) else None
        if turn_done:
            self._pending_calls, self._calls, self._flush = False, 0, {}
        if starting:
            self._pending_calls = True
            self._started_by_save = {call.id for call in starting}

    def call_started(self, call: ToolUseBlock) -> None:
        if call.id in self._started_by_save:
            self._started_by_save.discard(call.id)  # recorded by the save of its reply
            return
        self._calls += 1
        with self.store.transaction() as db:
            self._record_started(db, call)
        self._pending_calls = True

    def _record_started(self, db: sqlite3.Connection, call: ToolUseBlock) -> None:
        db.execute(
            "INSERT OR REPLACE INTO session_calls (session, call_id, seq, result) VALUES (?, ?, ?, NULL)",
            (self.name, call.id, self._calls),
        )

    def call_finished(self, result: ToolResultBlock) -> None:
        self._calls += 1
        with self.store.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO session_calls (session, call_id, seq, result) VALUES (?, ?, ?, ?)",
                (self.name, result.tool_use_id, self._calls, _json(block_to_dict(result))),
            )
        self._pending_calls = True

    # --- the notes flush's journal (context.flush.FlushJournal) ----------------------------------

    def flush_progress(self) -> dict[str, bool]:
        return dict(self._flush)

    def flush_started(self, ask: str) -> None:
        self._flush_row(ask, None)
        self._flush[ask] = False

    def flush_finished(self, ask: str) -> None:
        self._flush_row(ask, "{}")
        self._flush[ask] = True

    def _flush_row(self, ask: str, result: str | None) -> None:
        self._calls += 1
        with self.store.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO session_calls (session, call_id, seq, result) VALUES (?, ?, ?, ?)",
                (self.name, FLUSH_PREFIX + ask, self._calls, result),
            )
        self._pending_calls = True


def _same_file(file: IO[bytes], path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(file.fileno()), os.stat(path))
    except OSError:
        return False


def _try_lock(file: IO[bytes]) -> bool:
    """A non-blocking exclusive lock on the whole file, held by this open file (not the process:
    two opens in one process exclude each other too); False if another holds it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
