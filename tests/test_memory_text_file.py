"""The full-text postings kept in a file beside the database (``memory/text_file.py``).

A new process ranks from the file's postings from its first search, with FTS5's answers; a
torn, damaged or stale file (newer than the database, or one that does not agree with FTS5's
counters once the rows written since are applied) is refused, deleted and the postings built
from FTS5 again, with the same answers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_memory_text_index import apply, assert_same_ranking, operations, queries
from tinyharness.memory import text_file
from tinyharness.memory.base import Scope
from tinyharness.memory.sqlite_store import SQLiteStore

ASKED = [("deadline painting", 1), ("painting", 0), ("zeppelin budget", 1), ("ice cream", 0)]


def open_store(path: Path) -> SQLiteStore:
    return SQLiteStore(path, text_index_from=0)


def file_of(path: Path) -> Path:
    return path.parent / text_file.snapshot_name(path)


def saved_store(path: Path, rows: int = 30) -> None:
    """A store of ``rows`` memories whose postings were built and saved by ``close``."""
    store = open_store(path)
    for n in range(rows):
        store.add(f"deadline item {n} painting ice-cream", Scope("ana" if n % 3 else "bo"), context=f"c{n}")
    store.search("deadline", Scope("ana"))
    assert store.wait_for_indexes(30) and store._text is not None
    store.close()
    assert file_of(path).exists()


def first_search_uses_the_file(path: Path) -> SQLiteStore:
    store = open_store(path)
    store.search("painting", Scope("ana"))
    assert store._text is not None and store.text_index_builds == 0, store.text_index_refusals
    return store


def refused_then_rebuilt(path: Path, why: str) -> None:
    store = open_store(path)
    store.search("painting", Scope("ana"))
    assert store._text is None  # FTS5 answers meanwhile
    assert any(why in refusal for refusal in store.text_index_refusals), store.text_index_refusals
    assert not file_of(path).exists()  # deleted: the next process does not try it again
    assert store.text_index_builds == 1 and store.wait_for_indexes(30)
    assert_same_ranking(store, ASKED)
    store.close()  # writes a good one
    reopened = first_search_uses_the_file(path)
    assert_same_ranking(reopened, ASKED)
    reopened.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=operations, then=operations, asked=queries, every=st.booleans())
def test_a_new_process_ranks_from_the_file_as_fts5_does(
    first: list[tuple[str, str, str, int]],
    then: list[tuple[str, str, str, int]],
    asked: list[tuple[str, int]],
    every: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        store = open_store(path)
        apply(store, first, every)
        store.search("memo", Scope())
        assert store.wait_for_indexes(30)
        store.close()
        reopened = first_search_uses_the_file(path)
        assert_same_ranking(reopened, asked)  # as read from the file
        writer = open_store(path)  # another connection writes (it stamps its rows)
        apply(writer, then, every)
        writer._db.close()
        assert_same_ranking(reopened, asked)  # and brought up to date from the file's seq
        assert reopened.text_index_builds == 0
        reopened.close()


def test_a_torn_file_is_refused_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    saved_store(path)
    data = file_of(path).read_bytes()
    file_of(path).write_bytes(data[: len(data) // 2])
    refused_then_rebuilt(path, "torn")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.floats(0.0, 1.0, exclude_max=True), bit=st.integers(0, 7))
def test_a_damaged_file_is_refused_and_rebuilt(where: float, bit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        saved_store(path, rows=12)
        data = bytearray(file_of(path).read_bytes())
        data[int(where * len(data))] ^= 1 << bit
        file_of(path).write_bytes(bytes(data))
        refused_then_rebuilt(path, "postings file")


def test_a_stale_file_after_another_process_wrote_is_brought_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    saved_store(path)
    script = textwrap.dedent(
        f"""
        from tinyharness.memory.base import Scope
        from tinyharness.memory.sqlite_store import SQLiteStore
        store = SQLiteStore({str(path)!r})
        store.add("the zeppelin budget painting", Scope("ana"))
        first = store.list_items(Scope("ana"))[-1]
        store.delete(first.id)
        store.update(store.list_items(Scope("bo"))[0].id, "a zeppelin deadline")
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={"PYTHONPATH": ":".join(sys.path)})
    store = first_search_uses_the_file(path)
    assert_same_ranking(store, ASKED)
    store.close()


def test_a_stale_file_that_fts5s_counters_contradict_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    saved_store(path)
    # Another program writes to the full-text table without stamping a row: the seq says
    # nothing changed, FTS5's own counters moved.
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT INTO memory_fts (rowid, body, context) VALUES (999999, 'painting deadline', '')")
    db.close()
    store = open_store(path)
    store.search("painting", Scope("ana"))
    assert any("once brought up to date" in why for why in store.text_index_refusals)
    assert not file_of(path).exists() and store.wait_for_indexes(30)
    # (in a user's scope: the stray row has no memory, so FTS5 and the postings leave it out alike)
    assert_same_ranking(store, [("deadline painting", 1), ("painting ice cream", 1)])
    store.close()


def test_a_file_newer_than_the_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    saved_store(path)
    backup = tmp_path / "backup.db"
    db = sqlite3.connect(path)
    db.execute("VACUUM INTO ?", (str(backup),))
    db.close()
    store = first_search_uses_the_file(path)
    store.add("painting later", Scope("ana"))
    store.search("painting", Scope("ana"))
    store._text_changes = 10**6  # (many rows changed: close writes the file again)
    store.close()
    backup.replace(path)  # the database put back from the older copy
    refused_then_rebuilt(path, "the database is at")


def test_a_file_of_another_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    saved_store(path)
    kept = file_of(path).read_bytes()
    path.unlink()
    saved_store(path)  # the same shape, other memories
    file_of(path).write_bytes(kept)
    refused_then_rebuilt(path, "holds another memory")
