"""The SQLite store's approximate vector index (``memory/coarse_index.py``, used by
``VectorIndex`` from ``approx_from`` rows on): its answers are the exact ones, on vectors with
neighbourhoods (where it answers) and without (where it must refuse and scan); it follows every
write; it is kept in the checked snapshot, and a torn, damaged or mismatched one is refused and
rebuilt; a writer killed with SIGKILL while saving it leaves the same answers. Every search is
compared with a brute-force ranking of the rows."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.memory import index_file
from tinyharness.memory.base import Scope
from tinyharness.memory.sqlite_store import SQLiteStore
from tinyharness.memory.vector_index import VectorIndex

DIM = 32
TOPICS = 20
SCOPES = (Scope(user="ana"), Scope(user="bo"))
MODEL = "test-vectors"


def topical(count: int, seed: int) -> np.ndarray:
    """Unit vectors near one of TOPICS fixed directions (as an embedder's are near a topic)."""
    topics = np.random.default_rng(99).standard_normal((TOPICS, DIM))
    rng = np.random.default_rng(seed)
    rows = topics[rng.integers(0, TOPICS, count)] + 0.35 * rng.standard_normal((count, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def random_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def open_store(path: Path, **options: int) -> SQLiteStore:
    return SQLiteStore(path, vector_model=MODEL, snapshot_min_rows=0, approx_from=500, **options)


def fill(store: SQLiteStore, vectors: np.ndarray, start: int = 0) -> None:
    store.add_many([f"memory {start + i}" for i in range(len(vectors))], SCOPES[0], vectors=vectors)


def exact_top(path: Path, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT m.id, v.data FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid "
            "WHERE m.status = 'current' AND m.user_id = ?",
            (SCOPES[0].user,),
        ).fetchall()
    scored = sorted(
        ((float(np.frombuffer(data, dtype=np.float32) @ query), memory_id) for memory_id, data in rows),
        reverse=True,
    )
    return [(memory_id, score) for score, memory_id in scored[:limit]]


def searched(store: SQLiteStore, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
    hits = store.search("", SCOPES[0], limit=limit, vector=query.tolist())
    return [(hit.item.id, hit.similarity or 0.0) for hit in hits]


def assert_exact(store: SQLiteStore, path: Path, queries: np.ndarray, limit: int = 5) -> None:
    """Each search equals the brute-force ranking. The first query is asked twice: the first
    time starts the approximate index's build in the background, which is waited for, so
    every query is then asked with the index there."""
    for at, query in enumerate([queries[0], *queries]):
        found, exact = searched(store, query, limit), exact_top(path, query, limit)
        if at == 0:
            assert store.wait_for_indexes(120)
        assert [memory_id for memory_id, _ in found] == [memory_id for memory_id, _ in exact]
        assert np.allclose([s for _, s in found], [s for _, s in exact], atol=1e-5)


def approximate_answers(store: SQLiteStore) -> int:
    assert store._index is not None
    return store._index.approximate_answers


def test_topical_vectors_are_answered_by_the_approximate_index_exactly(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, topical(5000, 1))
    for limit in (1, 5, 40):
        assert_exact(store, path, topical(10, 2), limit)
    assert approximate_answers(store) >= 15  # not the exact scan in disguise (limit 40 asks 160)
    # writes after the index was built: new rows, an update, deletes
    fill(store, topical(200, 3), start=5000)
    items = store.list_items(SCOPES[0], limit=30)
    store.update(items[0].id, "changed", vector=topical(1, 4)[0].tolist())
    for item in items[1:]:
        store.delete(item.id)
    before = approximate_answers(store)
    assert_exact(store, path, topical(10, 5), 10)
    assert approximate_answers(store) > before
    store.close()


def test_vectors_without_neighbourhoods_are_scanned_exactly(tmp_path: Path) -> None:
    """Random vectors: the approximate candidates do not stand out, so every search (of the
    first REFUSALS_BEFORE_PAUSE, and the ones asked after) falls back to the exact scan."""
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, random_rows(5000, 6))
    assert_exact(store, path, random_rows(30, 7), 5)
    assert approximate_answers(store) == 0
    store.close()


def test_a_narrow_scope_is_searched_exactly(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, topical(5000, 8))
    store.add_many([f"bo {i}" for i in range(40)], SCOPES[1], vectors=topical(40, 9))
    query = topical(1, 10)[0]
    hits = store.search("", SCOPES[1], limit=5, vector=query.tolist())
    assert [hit.item.content for hit in hits] and all(hit.item.scope.user == "bo" for hit in hits)
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT m.content, v.data FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid "
            "WHERE m.user_id = 'bo'"
        ).fetchall()
    best = sorted(rows, key=lambda r: -float(np.frombuffer(r[1], dtype=np.float32) @ query))[:5]
    assert [hit.item.content for hit in hits] == [content for content, _ in best]
    store.close()


def test_the_snapshot_keeps_the_approximate_index(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, topical(5000, 11))
    queries = topical(8, 12)
    assert_exact(store, path, queries)
    store.close()
    reader = open_store(path)
    reader._load_index = _must_not_build  # type: ignore[method-assign]
    assert_exact(reader, path, queries)
    assert reader._index is not None and reader._index.coarse_state() is not None
    assert approximate_answers(reader) > 0 and reader.snapshot_refusals == []
    reader.close()


def _must_not_build(latest: int) -> None:
    raise AssertionError("the index was built from the rows although its snapshot was good")


def _resealed(data: bytes, change: dict[str, object], coarse: bytes | None = None) -> bytes:
    """``data`` (a snapshot) with header fields changed and, given ``coarse``, its approximate
    index replaced, under a checksum made anew: damage the checksum cannot see."""
    prefix = struct.Struct("<8sII")
    magic, version, header_bytes = prefix.unpack_from(data)
    header = json.loads(data[prefix.size : prefix.size + header_bytes])
    body = data[prefix.size + header_bytes :]
    if coarse is not None:
        body = body[: len(body) - header["coarse_bytes"]] + coarse
        header["coarse_bytes"], header["body_bytes"] = len(coarse), len(body)
    header |= change
    core = {key: value for key, value in header.items() if key != "crc32"}
    header["crc32"] = zlib.crc32(body, zlib.crc32(json.dumps(core, ensure_ascii=False).encode()))
    text = json.dumps(header, ensure_ascii=False).encode()
    text += b" " * (-(prefix.size + len(text)) % 64)
    return prefix.pack(magic, version, len(text)) + text + body


def _other_coarse(rows: int) -> bytes:
    index = VectorIndex(DIM, approx_from=1, exact_below=1)
    index.add_many(np.arange(1, rows + 1, dtype=np.int64), topical(rows, 13), [SCOPES[0]] * rows)
    return index.coarse_index().to_bytes()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) - 1000], "torn"),
        (lambda data: data[:-500] + bytes([data[-500] ^ 0x04]) + data[-499:], "checksum"),
        (lambda data: _resealed(data, {}, coarse=b"\x00" * 4000), "approximate index unreadable"),
        (lambda data: _resealed(data, {}, coarse=_other_coarse(4500)), "approximate index of 4500 rows"),
    ],
)
def test_a_damaged_approximate_index_is_refused_and_rebuilt(
    tmp_path: Path, damage: Callable[[bytes], bytes], why: str
) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, topical(5000, 14))
    queries = topical(6, 15)
    assert_exact(store, path, queries)
    store.close()
    snapshot = path.parent / index_file.snapshot_name(path, MODEL)
    snapshot.write_bytes(damage(snapshot.read_bytes()))
    again = open_store(path)
    assert_exact(again, path, queries)
    assert len(again.snapshot_refusals) == 1 and why in again.snapshot_refusals[0]
    assert approximate_answers(again) > 0  # rebuilt, and answering
    again.close()
    last = open_store(path)
    assert_exact(last, path, queries)
    assert last.snapshot_refusals == []
    last.close()


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from tinyharness.memory.base import Scope
    from tinyharness.memory.sqlite_store import SQLiteStore

    store = SQLiteStore(sys.argv[1], vector_model="test-vectors", snapshot_min_rows=0, approx_from=500)
    topics = np.random.default_rng(99).standard_normal((20, 32))
    rng = np.random.default_rng(int(sys.argv[2]))
    number = 0
    while True:
        rows = topics[rng.integers(0, 20, 50)] + 0.35 * rng.standard_normal((50, 32))
        rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        store.add_many([f"more {number + i}" for i in range(50)], Scope(user="ana"), vectors=rows)
        victims = store.list_items(Scope(user="ana"), limit=5)
        for item in victims[::2]:
            store.delete(item.id)
        number += 50
        store.search("", Scope(user="ana"), vector=rows[0].tolist())  # the index follows the rows
        print("written", flush=True)
        store._save_snapshot()  # what close does, over and over: killed somewhere in here
    """
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_writer_killed_mid_update_leaves_the_same_answers(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    fill(store, topical(5000, seed))
    assert_exact(store, path, topical(2, 16))
    store.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path), str(seed + 2000)], stdout=subprocess.PIPE, env=env
    )
    assert writer.stdout is not None
    for _ in range(seed):  # killed in a different place each time: mid-save or mid-write
        assert writer.stdout.readline() == b"written\n"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    reader = open_store(path)
    assert_exact(reader, path, topical(8, 100 + seed), 10)
    assert reader._index is not None and reader._index.coarse_state() is not None
    reader.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "remove", "replace"]), st.integers(0, 400), st.integers(1, 60)),
        max_size=25,
    ),
    seed=st.integers(0, 2**16),
)
def test_any_writes_keep_the_approximate_index_equal_to_the_rows(
    steps: list[tuple[str, int, int]], seed: int
) -> None:
    """Whatever rows are added, removed or replaced after the approximate index is built, it
    holds exactly the live keys (each once), and a search that probes every list and asks for
    every row ranks them as the exact scan does."""
    index = VectorIndex(DIM, approx_from=1, exact_below=1)
    index.add_many(np.arange(1, 301, dtype=np.int64), topical(300, seed), [SCOPES[0]] * 300)
    coarse = index.coarse_index()
    rng = np.random.default_rng(seed)
    next_key = 301
    for action, key, count in steps:
        if action == "add":
            index.add_many(
                np.arange(next_key, next_key + count, dtype=np.int64),
                topical(count, int(rng.integers(1 << 30))),
                [SCOPES[count % 2]] * count,
            )
            next_key += count
        elif action == "remove":
            for victim in range(key, key + count):
                index.remove(victim)
        else:
            index.upsert(key + 1, topical(1, int(rng.integers(1 << 30)))[0], SCOPES[0])
            next_key = max(next_key, key + 2)
    if index.coarse_index() is not coarse:  # retrained after the rows doubled or halved
        coarse = index.coarse_index()
    live = sorted(index._position)
    assert len(coarse) == len(live)
    coarse.probe = coarse.lists
    query = topical(1, seed + 1)[0]
    everything = coarse.candidates(query, len(live) + 5)
    assert sorted(everything.tolist()) == live
    for scope in (SCOPES[0], Scope()):
        approximate = index.search(query, scope, 10)
        assert approximate == index.search(query, scope, 10, approximate=False)


def test_search_on_a_small_store_equals_exact_search(tmp_path: Path) -> None:
    """Below ``approx_from`` (the default), the index is never asked: exact, as before."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        store = SQLiteStore(path, vector_model=MODEL)
        fill(store, topical(400, 17))
        assert_exact(store, path, topical(10, 18), 10)
        assert store._index is not None and store._index.coarse_state() is None
        store.close()


def test_close_keeps_an_approximate_index_built_since_the_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path, vector_model=MODEL, snapshot_min_rows=0, approx_from=10**9)
    fill(store, topical(5000, 19))
    assert_exact(store, path, topical(2, 20))
    store.close()  # a snapshot without an approximate index
    snapshot = path.parent / index_file.snapshot_name(path, MODEL)
    assert index_file.decode(snapshot.read_bytes(), MODEL, exact_below=4096).index.coarse_state() is None
    reader = open_store(path)  # no row changes, but it builds the approximate index
    assert_exact(reader, path, topical(4, 21))
    assert approximate_answers(reader) > 0
    reader.close()
    kept = index_file.decode(snapshot.read_bytes(), MODEL, exact_below=4096).index.coarse_state()
    assert kept is not None and len(kept) == 5000
