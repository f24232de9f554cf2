"""The PostgreSQL store's vectors held in the searching process (``pg_vectors``): its vector half
equals the exact scan's (the same ids, the same floats, the same order) in every scope, after
writes by this store and by another one on the same tables, after a writer that committed after
a later one, after a rolled-back writer, and after the change log was pruned under it. Skipped
without TINYHARNESS_TEST_PG_URL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from memory_conftest import memory_pg_url
from tinyharness.memory import Scope
from tinyharness.memory.embed import HashingEmbedder

DIM = 32
USERS = ["ann", "bob", "cy"]


def _store(prefix: str, **options: Any) -> Any:
    from tinyharness.memory.pg_store import PostgresStore

    return PostgresStore(memory_pg_url(), embedder=HashingEmbedder(DIM), table_prefix=prefix, **options)


@pytest.fixture()
def stores() -> Iterator[tuple[Any, Any, Any]]:
    """Three stores on one set of tables: one answering from the vectors it holds (from the
    first vector on), the exact reference, and another writer (another process, as far as the
    held vectors can tell)."""
    prefix = f"v{uuid.uuid4().hex[:10]}_"
    held = _store(prefix, scan_vectors=(1, 10**9))
    exact = _store(prefix, exact=True)
    other = _store(prefix)
    yield held, exact, other
    held.drop_tables()
    for store in (held, exact, other):
        store.close()


def _vectors(rng: np.random.Generator, n: int, clustered: bool) -> np.ndarray:
    if clustered:  # near a few centres, as a sentence embedder's
        centres = rng.normal(size=(4, DIM))
        out = centres[rng.integers(0, 4, size=n)] + 0.15 * rng.normal(size=(n, DIM))
    else:
        out = rng.normal(size=(n, DIM))
    if n:  # some exact duplicates: equal distances, ordered by seq
        out[rng.integers(0, n, size=max(1, n // 10))] = out[0]
    return out.astype(np.float32)


def _vector_half(store: Any, query: np.ndarray, scope: Scope, limit: int) -> list[tuple[str, float]]:
    with store._read() as cur:
        result: list[tuple[str, float]] = store._vector_ranking(cur, query, scope, limit)
        return result


def _current_vectors(store: Any) -> int:
    with store._read() as cur:
        cur.execute(
            f"SELECT count(*) FROM {store._t}memories m JOIN {store._t}memory_vectors v "
            "ON v.memory_id = m.id WHERE m.status = 'current'"
        )
        return int(cur.fetchone()[0])


def _agree(held: Any, exact: Any, rng: np.random.Generator, clustered: bool) -> None:
    """Every scope, several limits: the held vectors' answer is the exact scan's; and they hold
    exactly the current vectors (so the answer did come from them)."""
    queries = _vectors(rng, 6, clustered)
    for query in queries:
        # Whole searches first: their text half reads a snapshot, which the vector half trusts
        # when it is the one its copy reflects.
        for scope in (Scope(), Scope("ann")):
            got_hits = held.search("memory new changed", scope, limit=10, vector=query.tolist())
            want_hits = exact.search("memory new changed", scope, limit=10, vector=query.tolist())
            assert [(h.item.id, h.score) for h in got_hits] == [(h.item.id, h.score) for h in want_hits]
        for scope in [Scope(), *(Scope(user) for user in USERS), Scope("ann", "a1"), Scope("nobody")]:
            for limit in (1, 5, 40):
                got = _vector_half(held, query, scope, limit)
                want = _vector_half(exact, query, scope, limit)
                note(f"{scope} {limit}")
                assert got == want
    assert len(held._caches[DIM]) == _current_vectors(held)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(60, 300),
    clustered=st.booleans(),
    writes=st.lists(st.sampled_from(["add", "update", "delete", "other-add", "other-delete"]), max_size=12),
)
def test_held_vectors_answer_what_the_exact_scan_answers(
    stores: tuple[Any, Any, Any], seed: int, n: int, clustered: bool, writes: list[str]
) -> None:
    held, exact, other = stores
    rng = np.random.default_rng(seed)
    with held._tx() as cur:  # each example starts from empty tables
        cur.execute(f"DELETE FROM {held._t}memories")
    vectors = _vectors(rng, n, clustered)
    ids = []
    for index, vector in enumerate(vectors):
        user = USERS[index % len(USERS)]
        agent = "a1" if index % 2 else None
        writer = held if index % 3 else other
        ids.append(writer.add(f"memory {index}", Scope(user, agent), vector=vector.tolist()).id)
    _agree(held, exact, rng, clustered)
    for write in writes:  # then writes between searches, by this store and by the other
        store = other if write.startswith("other") else held
        if write.endswith("add"):
            ids.append(
                store.add(
                    "new",
                    Scope(USERS[int(rng.integers(0, 3))]),
                    vector=vectors[int(rng.integers(0, n))].tolist(),
                ).id
            )
        elif ids:
            victim = ids.pop(int(rng.integers(0, len(ids))))
            if write == "update":
                ids.append(store.update(victim, "changed", vector=_vectors(rng, 1, clustered)[0].tolist()).id)
            else:
                store.delete(victim)
        _agree(held, exact, rng, clustered)


def test_a_writer_that_commits_after_a_later_one_is_seen(stores: tuple[Any, Any, Any]) -> None:
    """Transaction A starts writing first (lower transaction id, lower seq), B writes and commits,
    the held vectors catch up with B; then A commits: its memory is found too (a cache that
    read "rows after the newest seq it has" would skip it forever). A rolled-back writer leaves
    nothing behind."""
    held, exact, other = stores
    rng = np.random.default_rng(3)
    for index, vector in enumerate(_vectors(rng, 50, False)):
        held.add(f"m {index}", Scope("ann"), vector=vector.tolist())
    target = _vectors(rng, 1, False)[0]
    with other._pool.connection() as conn_a:
        conn_a.autocommit = False
        with conn_a.cursor() as cur_a:
            other._held.cursor = cur_a
            try:
                slow = other.add("slow writer", Scope("ann"), vector=target.tolist())
            finally:
                other._held.cursor = None
            quick = other.add("quick writer", Scope("ann"), vector=(-target).tolist())
            assert [key for key, _ in _vector_half(held, -target, Scope("ann"), 1)] == [quick.id]
            assert slow.id not in [key for key, _ in _vector_half(held, target, Scope("ann"), 5)]
            conn_a.commit()
        conn_a.autocommit = True
    assert [key for key, _ in _vector_half(held, target, Scope("ann"), 1)] == [slow.id]
    with pytest.raises(RuntimeError), held._tx():
        held.add("rolled back", Scope("ann"), vector=(target * 2).tolist())
        raise RuntimeError("the writer dies")
    assert _vector_half(held, target, Scope("ann"), 3) == _vector_half(exact, target, Scope("ann"), 3)
    assert held._caches[DIM].full_loads == 1  # all of it followed through the log


def test_a_pruned_log_makes_a_stale_cache_load_again(stores: tuple[Any, Any, Any]) -> None:
    """Changes deleted from the log before a cache read them cannot be followed: the cache sees
    that the log was pruned past its snapshot and loads every vector again (and still agrees).
    ``prune`` itself deletes only what every transaction running has seen (another database's
    long transaction on the same server can hold it back), so the deletion is made here as it
    would make it, and then ``prune`` runs too."""
    from tinyharness.memory.pg_vectors import prune

    held, exact, other = stores
    rng = np.random.default_rng(5)
    for index, vector in enumerate(_vectors(rng, 40, True)):
        held.add(f"m {index}", Scope("bob"), vector=vector.tolist())
    query = _vectors(rng, 1, True)[0]
    assert _vector_half(held, query, Scope("bob"), 5) == _vector_half(exact, query, Scope("bob"), 5)
    added = other.add("added while the cache looked away", Scope("bob"), vector=query.tolist())
    log = f"{other._t}vector_changes"
    with other._tx() as cur:
        cur.execute(
            f"WITH gone AS (DELETE FROM {log} RETURNING xid) INSERT INTO {log}_pruned (one, newest) "
            f"SELECT true, max(xid) FROM gone ON CONFLICT (one) DO UPDATE SET newest = excluded.newest"
        )
    assert [key for key, _ in _vector_half(held, query, Scope("bob"), 1)] == [added.id]
    assert held._caches[DIM].full_loads == 2
    other.delete(added.id)
    with other._pool.connection() as conn:
        prune(conn, other._t, 0.0)
    assert _vector_half(held, query, Scope("bob"), 5) == _vector_half(exact, query, Scope("bob"), 5)
    assert added.id not in [key for key, _ in _vector_half(held, query, Scope("bob"), 5)]


def test_searches_prune_old_changes_from_the_log(stores: tuple[Any, Any, Any]) -> None:
    """Any store that searches deletes the log's rows older than PRUNE_AGE (at most every
    PRUNE_EVERY seconds), so the log of a store whose vectors are never held (too few of them)
    does not grow without end; the newest pruned transaction is kept."""
    from tinyharness.memory.pg_store import PostgresStore

    other = stores[2]
    for index in range(5):
        other.add(f"m {index}", Scope("cy"), vector=[float(index + 1)] * DIM)
    log = f"{other._t}vector_changes"
    with other._tx() as cur:
        cur.execute(f"SELECT count(*) FROM {log}")
        logged = cur.fetchone()[0]
        cur.execute(f"UPDATE {log} SET at = now() - interval '2 hours'")
    assert logged == 5
    fresh = PostgresStore(memory_pg_url(), embedder=HashingEmbedder(DIM), table_prefix=other._t)
    try:
        fresh.search("m", Scope("cy"), vector=[1.0] * DIM)
    finally:
        fresh.close()
    with other._tx() as cur:
        cur.execute(f"SELECT count(*), (SELECT count(*) FROM {log}_pruned) FROM {log}")
        assert cur.fetchone() == (0, 1)


@pytest.mark.parametrize(("server", "during_build"), [("64MB", "1GB"), ("6GB", "6GB")])
def test_the_index_build_raises_maintenance_memory_but_never_lowers_it(
    server: str, during_build: str
) -> None:
    """A 1M store's HNSW graph is ~2 GB: a server given more than BUILD_MEMORY for builds keeps
    it (the build once set 1 GB whatever the server had, and a 1M build went to disk, 2x slower)."""
    import psycopg

    from tinyharness.memory.pg_store import BUILD_MEMORY, RAISE_BUILD_MEMORY

    assert BUILD_MEMORY == "1GB"
    with psycopg.connect(memory_pg_url()) as conn:
        conn.execute(f"SET maintenance_work_mem = '{server}'")
        with conn.transaction():
            conn.execute(RAISE_BUILD_MEMORY, (BUILD_MEMORY,))
            assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] == during_build
