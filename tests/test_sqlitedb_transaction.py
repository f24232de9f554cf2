"""``sqlitedb.write_transaction``: the one place tinyharness opens a SQLite write transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tinyharness
from tinyharness.sqlitedb import write_transaction


def _db(path: Path, timeout: float = 0.0) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
    db.execute("PRAGMA journal_mode = WAL")
    return db


def test_commits_when_the_block_ends(tmp_path: Path) -> None:
    db = _db(tmp_path / "a.db")
    db.execute("CREATE TABLE t (x)")
    with write_transaction(db) as same:
        assert same is db
        db.execute("INSERT INTO t VALUES (1)")
        assert db.in_transaction
    assert not db.in_transaction
    other = _db(tmp_path / "a.db")
    assert other.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_rolls_back_when_the_block_raises(tmp_path: Path) -> None:
    db = _db(tmp_path / "a.db")
    db.execute("CREATE TABLE t (x)")
    with pytest.raises(KeyError), write_transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
        raise KeyError("boom")
    assert not db.in_transaction
    assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_takes_the_write_lock_before_the_first_write(tmp_path: Path) -> None:
    """Another process cannot start writing while the block runs, even before the block has
    written anything: a read-then-write inside it cannot race (a deferred BEGIN would let it)."""
    db = _db(tmp_path / "a.db")
    db.execute("CREATE TABLE t (x)")
    other = _db(tmp_path / "a.db", timeout=0.0)
    with write_transaction(db):
        db.execute("SELECT count(*) FROM t").fetchone()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")


def test_no_other_module_opens_its_own_write_transaction() -> None:
    package = Path(tinyharness.__file__).parent
    openers = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if 'execute("BEGIN' in path.read_text(encoding="utf-8")
    ]
    assert openers == ["sqlitedb.py"]
