"""The SQLite memory store has the run log's guards: it recognises its own files (marked, or
written before stores were marked), migrates them, and refuses anything else with one clear
error before writing a byte; and two processes storing the same fact store it once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path

import pytest

from memory_conftest import memory_open, memory_pg_url
from tinyharness.memory import Scope
from tinyharness.memory.sqlite_store import (
    _SCHEMA,
    APPLICATION_ID,
    MIGRATIONS,
    MemoryStoreError,
    SQLiteStore,
    _split,
)

SCOPE = Scope(user="u", agent="a")


def store_with_data(path: Path) -> None:
    store = SQLiteStore(path, embedder=None)
    store.add_many([f"fact number {i} about the deploy target " * 3 for i in range(300)], SCOPE)
    store.close()


def legacy_store(path: Path, *, rename: bool = False) -> None:
    """A store as the code before marks wrote it: our tables, user_version 0, no application_id."""
    with closing(sqlite3.connect(path)) as db:
        for statement in _split(_SCHEMA):
            if rename:
                statement = statement.replace("content_hash TEXT", "digest TEXT")
                statement = statement.replace("ON memories(content_hash)", "ON memories(digest)")
            db.execute(statement)
        db.commit()


def other_program(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO customers (name) VALUES ('Ada')")
        db.commit()


def truncated(path: Path) -> None:
    store_with_data(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def newer(path: Path) -> None:
    SQLiteStore(path, embedder=None).close()
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 99")
        db.commit()


def marked_then_renamed(path: Path) -> None:
    SQLiteStore(path, embedder=None).close()
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode = DELETE")
        db.execute("ALTER TABLE memories RENAME COLUMN context TO note")
        db.commit()


def checkpointed(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """``make``, then the file alone (WAL folded in), so its bytes can be compared."""

    def build(path: Path) -> None:
        make(path)
        with closing(sqlite3.connect(path)) as db, suppress(sqlite3.DatabaseError):
            db.execute("PRAGMA journal_mode = DELETE")

    return build


BAD = {
    "text-file": (lambda p: p.write_text("not a database\n" * 50), "corrupt"),
    "other-program": (other_program, "another program"),
    "truncated": (truncated, "truncated"),
    "renamed-column": (lambda p: legacy_store(p, rename=True), "another program"),
    "renamed-column-marked": (marked_then_renamed, "changed outside tinyharness"),
    "user-version-99": (newer, "newer"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_an_unusable_file_is_refused_and_left_untouched(tmp_path: Path, case: str) -> None:
    make, message = BAD[case]
    path = tmp_path / "memory.db"
    checkpointed(make)(path)
    before = path.read_bytes()
    with pytest.raises(MemoryStoreError, match=message):
        SQLiteStore(path, embedder=None)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists()


@pytest.mark.parametrize("case", ["other-program", "truncated", "user-version-99"])
def test_the_commands_say_it_in_one_line(tmp_path: Path, case: str) -> None:
    make = BAD[case][0]
    path = tmp_path / "memory.db"
    checkpointed(make)(path)
    env = {**os.environ, "TINYHARNESS_HOME": str(tmp_path / "home")}
    for argv in (["memory", "list", "--memory", str(path)], ["run", "--memory", str(path), "--no-log", "x"]):
        run = subprocess.run(
            [sys.executable, "-m", "tinyharness", *argv, "--model", "scripted:/nonexistent"]
            if argv[0] == "run"
            else [sys.executable, "-m", "tinyharness", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr


def test_a_store_written_before_marks_is_recognised_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    legacy_store(path)
    with closing(sqlite3.connect(path)) as db:
        db.execute(
            "INSERT INTO memories (id, root_id, version, content, content_hash, valid_from, "
            "last_access_at, seq) VALUES ('m1', 'm1', 1, 'old fact', 'h', 1.0, 1.0, 1)"
        )
        db.commit()
    store = SQLiteStore(path, embedder=None)
    assert store.get("m1") is not None and store.get("m1").content == "old fact"  # type: ignore[union-attr]
    store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(
            MIGRATIONS
        )  # recognised, then migrated to the latest


def test_add_unique_stores_a_fact_once_per_scope(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db", embedder=None)
    first, added = store.add_unique("Tabs, not spaces", Scope("u", "a", "s1"), within=SCOPE)
    again, added_again = store.add_unique("tabs,  NOT spaces", Scope("u", "a", "s2"), within=SCOPE)
    assert added and not added_again and again.id == first.id
    _, other_user = store.add_unique("Tabs, not spaces", Scope("v", "a", "s1"), within=Scope("v", "a"))
    assert other_user
    store.close()


WRITER = """
import sys
from tinyharness.memory import Scope
from tinyharness.memory.sqlite_store import SQLiteStore
store = SQLiteStore(sys.argv[1], embedder=None)
for i in range(12):
    store.add_unique(f"shared fact {i}", Scope("u", "a", sys.argv[2]), within=Scope("u", "a"))
store.close()
"""


def test_processes_remembering_the_same_facts_store_each_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteStore(path, embedder=None).close()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"session{n}"]) for n in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    store = SQLiteStore(path, embedder=None)
    contents = [item.content for item in store.list_items(SCOPE)]
    store.close()
    assert sorted(contents) == sorted(f"shared fact {i}" for i in range(12))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_racing_writers_store_a_fact_once_on_both_backends(tmp_path: Path, backend: str) -> None:
    """Four writers, each with its own connection, store the same 8 facts at the same time."""
    if backend == "postgres":
        memory_pg_url()
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    stores = [memory_open(backend, tmp_path, prefix=prefix) for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def write(index: int) -> None:
        barrier.wait()
        for i in range(8):
            stores[index].add_unique(f"raced fact {i}", Scope("u", "a", f"s{index}"), within=SCOPE)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    contents = sorted(item.content for item in stores[0].list_items(SCOPE))
    drop = getattr(stores[0], "drop_tables", None)
    if drop is not None:
        drop()
    for store in stores:
        store.close()
    assert contents == sorted(f"raced fact {i}" for i in range(8))
