"""The SQLite store's vector index snapshot (``memory/index_file.py``): reused when it holds up
against the database, refused and rebuilt from the rows when it is torn, damaged, or belongs to
another state of the database, and a process killed while writing it leaves answers unchanged.
Every search here is checked against an exact brute-force ranking of the rows themselves."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.memory import index_file
from tinyharness.memory.base import Scope
from tinyharness.memory.sqlite_store import SQLiteStore
from tinyharness.safefs import Folder

DIM = 16
SCOPES = (Scope(user="ana"), Scope(user="bo"))


def unit_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def open_store(path: Path, *, snapshot_every: int = 1024) -> SQLiteStore:
    return SQLiteStore(path, vector_model="test-vectors", snapshot_min_rows=0, snapshot_every=snapshot_every)


def fill(store: SQLiteStore, vectors: np.ndarray, *, start: int = 0) -> None:
    for offset, vector in enumerate(vectors):
        number = start + offset
        store.add(f"memory {number}", SCOPES[number % 2], vector=vector.tolist())


def exact_top(path: Path, query: np.ndarray, scope: Scope, limit: int) -> list[str]:
    """The ids of the ``limit`` current memories in ``scope`` nearest ``query``, from the rows."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT m.id, v.data FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid "
            "WHERE m.status = 'current' AND m.user_id = ?",
            (scope.user,),
        ).fetchall()
    scored = sorted(
        ((float(np.frombuffer(data, dtype=np.float32) @ query), memory_id) for memory_id, data in rows),
        reverse=True,
    )
    return [memory_id for _, memory_id in scored[:limit]]


def searched(store: SQLiteStore, query: np.ndarray, scope: Scope, limit: int) -> list[str]:
    return [hit.item.id for hit in store.search("", scope, limit=limit, vector=query.tolist())]


def assert_exact(store: SQLiteStore, path: Path, queries: np.ndarray, limit: int = 5) -> None:
    for query in queries:
        for scope in SCOPES:
            assert searched(store, query, scope, limit) == exact_top(path, query, scope, limit)


def snapshot_file(path: Path) -> Path:
    return path.parent / index_file.snapshot_name(path, "test-vectors")


def test_a_snapshot_is_written_reused_and_brought_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, unit_rows(60, 1))
    queries = unit_rows(6, 2)
    assert_exact(store, path, queries)  # the first search builds the index and writes the snapshot
    store.close()  # (waits for the snapshot's writer)
    assert snapshot_file(path).exists()

    # Another process writes after the snapshot: adds, an update and a delete.
    writer = open_store(path)
    fill(writer, unit_rows(10, 3), start=60)
    first, second = writer.list_items(SCOPES[0])[:2]
    writer.update(first.id, "changed", vector=unit_rows(1, 4)[0].tolist())
    writer.delete(second.id)
    writer.close()

    reader = open_store(path)
    reader._load_index = _must_not_build  # type: ignore[method-assign]
    assert_exact(reader, path, queries)  # from the snapshot plus the rows written since
    assert reader.snapshot_refusals == []
    reader.close()


def _must_not_build(latest: int) -> None:
    raise AssertionError("the index was built from the rows although its snapshot was good")


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) - 7], "torn"),  # cut short, as a writer killed mid-write
        (lambda data: data[:-40] + bytes([data[-40] ^ 0x10]) + data[-39:], "checksum"),  # a flipped bit
        (lambda data: b"\x00" * len(data), "not a vector index snapshot"),
        (lambda data: data[:30], "header cut short"),
    ],
)
def test_a_damaged_snapshot_is_refused_and_rebuilt(
    tmp_path: Path, damage: Callable[[bytes], bytes], why: str
) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, unit_rows(50, 5))
    queries = unit_rows(5, 6)
    before = [searched(store, q, SCOPES[0], 5) for q in queries]
    store.close()
    snapshot = snapshot_file(path)
    snapshot.write_bytes(damage(snapshot.read_bytes()))

    again = open_store(path)
    assert [searched(again, q, SCOPES[0], 5) for q in queries] == before
    assert len(again.snapshot_refusals) == 1 and why in again.snapshot_refusals[0]
    assert_exact(again, path, queries)
    again.close()
    # the rebuilt index was written anew, and the next process takes it as it is
    assert index_file.decode(snapshot.read_bytes(), "test-vectors", exact_below=4096).seq > 0
    last = open_store(path)
    assert [searched(last, q, SCOPES[0], 5) for q in queries] == before
    assert last.snapshot_refusals == []
    last.close()


def test_a_snapshot_of_another_database_is_refused(tmp_path: Path) -> None:
    """A whole, intact snapshot that does not describe this database (another database was put
    in its place, or restored from a backup) is refused by comparing it with the rows."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    big, small = tmp_path / "a" / "memory.db", tmp_path / "b" / "memory.db"
    store = open_store(big)
    fill(store, unit_rows(40, 7))
    searched(store, unit_rows(1, 8)[0], SCOPES[0], 5)
    store.close()
    other = open_store(small)
    fill(other, unit_rows(10, 9))  # fewer writes: its seq is behind the snapshot's
    other.close()
    snapshot_file(small).write_bytes(snapshot_file(big).read_bytes())
    reader = open_store(small)
    assert_exact(reader, small, unit_rows(4, 10))
    assert "the database is at" in reader.snapshot_refusals[0]
    reader.close()

    more = open_store(small)
    fill(more, unit_rows(80, 11), start=10)  # now further on than the snapshot, with other rows
    more.close()
    snapshot_file(small).write_bytes(snapshot_file(big).read_bytes())
    reader = open_store(small)
    assert_exact(reader, small, unit_rows(4, 12))
    assert "holds another memory" in reader.snapshot_refusals[0]
    reader.close()


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from tinyharness.memory.base import Scope
    from tinyharness.memory.sqlite_store import SQLiteStore

    store = SQLiteStore(sys.argv[1], vector_model="test-vectors", snapshot_min_rows=0)
    rng = np.random.default_rng(int(sys.argv[2]))
    scopes = (Scope(user="ana"), Scope(user="bo"))
    number = 0
    while True:
        for _ in range(20):
            vector = rng.standard_normal(16).astype(np.float32)
            vector /= np.linalg.norm(vector)
            store.add(f"memory {number}", scopes[number % 2], vector=vector.tolist())
            number += 1
        store.search("", scopes[0], vector=vector.tolist())  # brings the index up to date
        store._save_snapshot()  # what close does after many changes, over and over
        print("saved", flush=True)
    """
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_process_killed_while_updating_the_index_leaves_the_same_answers(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, unit_rows(2000, seed))  # a snapshot big enough that a write takes a while
    searched(store, unit_rows(1, 0)[0], SCOPES[0], 5)
    store.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path), str(seed + 1000)],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert writer.stdout is not None
    for _ in range(seed):  # killed after a different number of saves, wherever it then is
        assert writer.stdout.readline() == b"saved\n"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()

    reader = open_store(path)
    assert_exact(reader, path, unit_rows(6, 100 + seed))
    assert reader.snapshot_refusals == []  # the file is always a whole snapshot (atomic rename)
    reader.close()
    # A temp file the killed writer may have left is swept by the next write once it is old.
    name = index_file.snapshot_name(path, "test-vectors")
    leftover = tmp_path / f".{name}.0123456789ab.tmp"
    leftover.write_bytes(b"half a snapshot")
    index_file.sweep(Folder(tmp_path), name)
    assert leftover.exists()  # maybe a writer at work
    index_file.sweep(Folder(tmp_path), name, older_than=-1)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(1, 80),
    seed=st.integers(0, 2**16),
    closed=st.sets(st.integers(0, 79), max_size=20),
    limit=st.integers(1, 12),
)
def test_search_equals_exact_search_before_and_after_a_snapshot(
    count: int, seed: int, closed: set[int], limit: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        store = open_store(path, snapshot_every=1)
        fill(store, unit_rows(count, seed))
        queries = unit_rows(3, seed + 1)
        assert_exact(store, path, queries, limit)
        items = store.list_items(Scope())
        for number in sorted(closed):
            if number < len(items):
                store.delete(items[number].id)
        assert_exact(store, path, queries, limit)
        store.close()  # writes the snapshot again (snapshot_every=1)
        reader = open_store(path)
        reader._load_index = _must_not_build  # type: ignore[method-assign]
        assert_exact(reader, path, queries, limit)
        reader.close()


def _small_index_snapshot() -> tuple[bytes, list[list[list[tuple[int, float]]]]]:
    from tinyharness.memory.vector_index import VectorIndex

    index = VectorIndex(DIM)
    vectors = unit_rows(12, 21)
    for key, vector in enumerate(vectors, start=1):
        index.upsert(key, vector, SCOPES[key % 2])
    queries = unit_rows(3, 22)
    answers = [[index.search(q, scope, 5) for q in queries] for scope in SCOPES]
    return index_file.encode(index, 7, "test-vectors", (12, "last")), answers


_SNAPSHOT, _ANSWERS = _small_index_snapshot()


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, len(_SNAPSHOT) - 1), bit=st.integers(0, 7))
def test_any_flipped_bit_is_refused_or_changes_nothing(position: int, bit: int) -> None:
    """A flipped bit anywhere in a snapshot (header, padding or body) is refused, or it leaves
    the index answering exactly as before (a flip in the header's padding that JSON still reads
    as whitespace)."""
    data = bytearray(_SNAPSHOT)
    data[position] ^= 1 << bit
    try:
        snapshot = index_file.decode(bytes(data), "test-vectors", exact_below=4096)
    except index_file.SnapshotRefused:
        return
    queries = unit_rows(3, 22)
    assert [[snapshot.index.search(q, scope, 5) for q in queries] for scope in SCOPES] == _ANSWERS
    assert (snapshot.seq, snapshot.last_rowid, snapshot.last_id) == (7, 12, "last")
