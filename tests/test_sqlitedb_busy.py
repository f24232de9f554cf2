"""``sqlitedb.open_database`` when another process holds the file: it waits, tries again, and a
file that stays held is reported as busy, never as corrupt (the race two runs starting on one new
session showed: the loser said "run log ... is corrupt or unreadable: database is locked")."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tinyharness.errors import HarnessError
from tinyharness.session.sqlite import SESSION_STORE
from tinyharness.sqlitedb import _busy, open_database


def _hold(path: Path) -> sqlite3.Connection:
    """A connection holding the file's exclusive lock (rollback journal: no reader gets in)."""
    db = sqlite3.connect(path, isolation_level=None, timeout=0.0, check_same_thread=False)
    db.execute("CREATE TABLE IF NOT EXISTS t (x)")
    db.execute("BEGIN EXCLUSIVE")
    return db


def test_a_file_held_past_the_timeout_is_busy_not_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = _hold(path)
    with pytest.raises(HarnessError) as caught:
        open_database(path, SESSION_STORE, HarnessError, timeout=0.2)
    message = str(caught.value)
    assert "is busy" in message and "corrupt" not in message and "\n" not in message
    holder.execute("ROLLBACK")
    # Nothing was changed while it was held: still unmarked, and it opens once free.
    assert holder.execute("PRAGMA application_id").fetchone() == (0,)
    holder.execute("DROP TABLE t")
    open_database(path, SESSION_STORE, HarnessError, timeout=0.2).close()


def test_a_file_released_within_the_timeout_opens(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = _hold(path)
    holder.execute("DROP TABLE t")  # an empty database once the lock goes
    timer = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    timer.start()
    try:
        db = open_database(path, SESSION_STORE, HarnessError, timeout=10.0)
    finally:
        timer.join()
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def _open_together(path: Path, openers: int) -> list[str]:
    """``openers`` threads open ``path`` at the same moment; the errors they got."""
    failures: list[str] = []
    start = threading.Barrier(openers)

    def open_one() -> None:
        start.wait()
        try:
            open_database(path, SESSION_STORE, HarnessError, timeout=10.0).close()
        except HarnessError as exc:
            failures.append(str(exc))

    threads = [threading.Thread(target=open_one) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_many_openers_of_one_new_file_all_open_it(tmp_path: Path) -> None:
    """Every opener of a new file switches it to WAL; SQLite answers the losers "locked" at once
    (no busy handler, as waiting could deadlock), and one opener may migrate the file between
    another's first look and its second. Each opener tries again, reads one snapshot, opens it."""
    for round_ in range(15):
        assert _open_together(tmp_path / f"s{round_}.db", 6) == []


def test_busy_reads_sqlites_codes() -> None:
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    assert _busy(locked)
    recovery = sqlite3.OperationalError("database is locked")
    recovery.sqlite_errorcode = sqlite3.SQLITE_BUSY | (1 << 8)  # type: ignore[attr-defined]  # BUSY_RECOVERY
    assert _busy(recovery)
    corrupt = sqlite3.DatabaseError("database disk image is malformed")
    corrupt.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
    assert not _busy(corrupt)
