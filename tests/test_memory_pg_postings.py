"""The PostgreSQL store's term postings and connection pool.

The postings (``<prefix>memory_terms``) are what the full-text ranking reads: they must hold
exactly one row per (lexeme, current memory) with that memory's ``ts_rank`` of the lexeme, through
inserts, updates, deletes, a writer killed mid-transaction and a store opened by an older release
(no postings yet). The ranking read from them must be the exact one (every match ranked from its
``tsvector``: ``PostgresStore(exact=True)``) for any scope, with phrases, after updates and
deletes. The pool must let searches run at the same time and give each the answer it gives alone.
Skipped without TINYHARNESS_TEST_PG_URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_conftest import memory_pg_url
from tinyharness.memory import Scope
from tinyharness.memory.embed import HashingEmbedder

WORDS = [f"w{i:03d}" for i in range(40)]


def _store(prefix: str, *, exact: bool = False, pool_size: int = 8) -> Any:
    from tinyharness.memory.pg_store import PostgresStore

    return PostgresStore(
        memory_pg_url(), embedder=HashingEmbedder(32), table_prefix=prefix, exact=exact, pool_size=pool_size
    )


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[Any, Any]]:
    """One set of tables opened twice: the store as it searches, and the exact reference."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    fast = _store(prefix)
    exact = _store(prefix, exact=True)
    yield fast, exact
    fast.drop_tables()
    fast.close()
    exact.close()


def _postings(store: Any) -> list[tuple[Any, ...]]:
    with store._read() as cur:
        cur.execute(
            f"SELECT term, seq, user_id, agent_id, session_id, rank, in_content FROM {store._t}memory_terms "
            "ORDER BY seq, term"
        )
        return [tuple(row) for row in cur.fetchall()]


def _postings_from_memories(store: Any) -> list[tuple[Any, ...]]:
    """What the postings must hold, computed from the current memories as the exact ranking
    computes each term's rank (``to_tsquery`` of the lexeme, the store's rank weights)."""
    from tinyharness.memory.pg_store import RANK_WEIGHTS

    with store._read() as cur:
        cur.execute(
            f"SELECT u.lexeme, m.seq, m.user_id, m.agent_id, m.session_id, "
            f"ts_rank(%s::float4[], m.tsv, {store._t}term_query(u.lexeme), 0), "
            f"m.tsv @@ ({store._t}term_query(u.lexeme)::text || ':A')::tsquery "
            f"FROM {store._t}memories m, unnest(m.tsv) u WHERE m.status = 'current' ORDER BY m.seq, u.lexeme",
            (RANK_WEIGHTS,),
        )
        return [tuple(row) for row in cur.fetchall()]


def _corpus(rng: np.random.Generator, n: int) -> list[str]:
    """Memories of 3-10 words drawn Zipf-like (common and rare words, some repeated)."""
    ranks = np.minimum(rng.zipf(1.4, size=(n, 10)) - 1, len(WORDS) - 1)
    lengths = rng.integers(3, 11, size=n)
    return [" ".join(WORDS[r] for r in row[:length]) for row, length in zip(ranks, lengths, strict=True)]


def _queries(rng: np.random.Generator, count: int) -> list[str]:
    picks = [
        np.minimum(rng.zipf(1.2, size=int(rng.integers(1, 5))) - 1, len(WORDS) - 1) for _ in range(count)
    ]
    return [" ".join(WORDS[p] for p in row) for row in picks]


SCOPES = [
    Scope(user="u1", agent="a1", session="s1"),
    Scope(user="u1", agent="a2"),
    Scope(user="u2", agent="a1"),
]
SEARCHED = [Scope(user="u1"), Scope(user="u1", agent="a1"), Scope(agent="a1"), Scope(user="u2"), Scope()]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(60, 200), limit=st.sampled_from([1, 3, 5, 20]))
def test_postings_ranking_equals_the_exact_ranking(
    stores: tuple[Any, Any], seed: int, n: int, limit: int
) -> None:
    """Memories in several scopes (users, agents, sessions), some updated and some deleted: for
    every searched scope (a user, a user's agent, an agent of any user, no scope) every query's
    ranking, ids and order, is the exact one's, and the postings equal what the current
    memories give."""
    fast, exact = stores
    rng = np.random.default_rng(seed)
    tag = f"{seed}-{n}-{limit}"
    scopes = [Scope(user=f"{s.user}-{tag}", agent=s.agent, session=s.session) for s in SCOPES]
    ids: list[str] = []
    for scope in scopes:
        contexts = [
            WORDS[int(r)] if rng.random() < 0.2 else "" for r in rng.integers(0, len(WORDS), size=n // 3)
        ]
        ids += fast.add_many(_corpus(rng, n // 3), scope, contexts=contexts)
    changed = rng.choice(len(ids), size=len(ids) // 5, replace=False)
    for index in changed[: len(changed) // 2]:
        fast.update(ids[int(index)], _corpus(rng, 1)[0])
    for index in changed[len(changed) // 2 :]:
        fast.delete(ids[int(index)])
    searched = [
        Scope(user=f"{s.user}-{tag}" if s.user else None, agent=s.agent, session=s.session) for s in SEARCHED
    ]
    for scope in searched:
        for query in _queries(rng, 8):
            with fast._read() as cur:
                got = fast._text_ranking(cur, query, scope, limit)
            with exact._read() as cur:
                want = exact._text_ranking(cur, query, scope, limit)
            assert got == want, (query, scope)
    assert _postings(fast) == _postings_from_memories(fast)


def test_the_ranking_reads_the_postings_not_the_tsvectors(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query of a rare and a common word, and one of common words only, are ranked from the
    postings: neither the statements over the ``tsvector`` column run, and the answers are the
    exact ones."""
    from tinyharness.memory import pg_store

    fast, exact = stores
    monkeypatch.setattr(pg_store, "MAX_TERM_ROWS", 30)
    scope = Scope(user="reads")
    fast.add_many(
        [f"common filler{i}" for i in range(150)] + [f"rare common note{i}" for i in range(12)], scope
    )
    fast.add_many(["alpha beta"] * 40 + ["alpha gamma beta beta"] * 40, scope)
    store_type = type(fast)
    for name in ("_ranked", "_newest_ranking", "_bounded_ranking"):
        monkeypatch.setattr(store_type, name, _refuse(name))
    for query in ("rare common", "alpha beta"):
        with fast._read() as cur:
            got = fast._text_ranking(cur, query, scope, 10)
        monkeypatch.undo()
        monkeypatch.setattr(pg_store, "MAX_TERM_ROWS", 30)
        with exact._read() as cur:
            assert got == exact._text_ranking(cur, query, scope, 10), query
        for name in ("_ranked", "_newest_ranking", "_bounded_ranking"):
            monkeypatch.setattr(store_type, name, _refuse(name))


def _refuse(name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{name} ran: the ranking read the tsvectors")

    return refused


def test_a_killed_writer_leaves_no_postings() -> None:
    """A writer killed inside its transaction (memories inserted, a version closed, its
    postings written by the triggers) leaves the postings as they were: the server rolls the
    whole transaction back."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    store = _store(prefix)
    try:
        kept = store.add_many(["apple banana", "banana cherry"], Scope(user="k"))
        before = _postings(store)
        insert = (
            f"INSERT INTO {prefix}memories (id, root_id, version, content, body, content_hash, "
            "valid_from, last_access_at, user_id) VALUES ('x', 'x', 1, 'durian', 'durian', 'h', 0, 0, 'k')"
        )
        close = f"UPDATE {prefix}memories SET status = 'deleted' WHERE id = '{kept[0]}'"
        count = f"SELECT count(*) FROM {prefix}memory_terms"
        script = (
            "import sys, psycopg\n"
            "conn = psycopg.connect(sys.argv[1])\n"
            "conn.execute(sys.argv[2])\n"
            "conn.execute(sys.argv[3])\n"
            "print(conn.execute(sys.argv[4]).fetchone()[0], flush=True)\n"
            "sys.stdin.readline()\n"
        )
        with subprocess.Popen(
            [sys.executable, "-c", script, memory_pg_url(), insert, close, count],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdout is not None
            inside = int(child.stdout.readline())
            assert inside == len(before) - 2 + 1  # inside its transaction the triggers did run
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        assert _postings(store) == before == _postings_from_memories(store)
    finally:
        store.drop_tables()
        store.close()


def test_an_older_store_gets_its_postings_when_opened() -> None:
    """Tables written before the postings existed (no postings table, no triggers) get them
    built from the current memories on open, and searches rank as the exact reference does."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    store = _store(prefix)
    try:
        scope = Scope(user="old")
        ids = store.add_many(["ice cream day", "cream of ice", "ice alone", "cream alone"] * 5, scope)
        store.delete(ids[0])
        with store._tx() as cur:  # as an older release left them
            cur.execute(f"DROP TABLE {prefix}memory_terms")
            for name in ("add", "update", "remove"):
                cur.execute(f"DROP TRIGGER {prefix}memory_terms_{name} ON {prefix}memories")
        store.close()
        store = _store(prefix)
        exact = _store(prefix, exact=True)
        assert _postings(store) == _postings_from_memories(store)
        assert len(_postings(store)) > 0
        with store._read() as cur:
            got = store._text_ranking(cur, "ice cream", scope, 5)
        with exact._read() as cur:
            assert got == exact._text_ranking(cur, "ice cream", scope, 5)
        exact.close()
    finally:
        store.drop_tables()
        store.close()


def test_a_memories_table_created_again_gets_its_triggers_back() -> None:
    """The memories table dropped and created again (by a tool that knows nothing of the
    postings) while the postings table stays: the next open puts the triggers back and rebuilds
    the postings, so new memories are found."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    store = _store(prefix)
    try:
        store.add_many(["old words here"], Scope(user="again"))
        with store._tx() as cur:
            cur.execute(f"DROP TABLE {prefix}memory_vectors, {prefix}memories")
        store.close()
        store = _store(prefix)
        new = store.add("fresh words", Scope(user="again"))
        assert _postings(store) == _postings_from_memories(store)
        with store._read() as cur:
            assert store._text_ranking(cur, "fresh", Scope(user="again"), 5) == [new.id]
    finally:
        store.drop_tables()
        store.close()


def test_the_pool_serves_searches_at_the_same_time() -> None:
    """While one thread holds a transaction open, another thread's search completes (a store
    is no longer one connection behind a lock); 8 threads searching at once each get the answer
    the same search gives alone."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    store = _store(prefix, pool_size=4)
    try:
        rng = np.random.default_rng(3)
        scope = Scope(user="pool")
        store.add_many(_corpus(rng, 300), scope)
        queries = _queries(rng, 24)
        alone = {q: [h.item.id for h in store.search(q, scope, limit=5)] for q in queries}
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store._read():
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(30)
        try:
            assert [h.item.id for h in store.search(queries[0], scope, limit=5)] == alone[queries[0]]
        finally:
            release.set()
            holder.join()
        results: dict[str, list[str]] = {}
        errors: list[BaseException] = []

        def search(part: list[str]) -> None:
            try:
                for query in part:
                    results[query] = [h.item.id for h in store.search(query, scope, limit=5)]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=search, args=(queries[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert results == alone
    finally:
        store.drop_tables()
        store.close()


def test_every_posting_matches_its_memory_whatever_the_lexeme() -> None:
    """Lexemes with quotes, backslashes, colons, slashes or dashes (file paths, URLs, e-mail
    addresses, words with apostrophes) become one-lexeme tsqueries verbatim: each posting's query
    matches its own memory with a rank above 0, and a search for such a word ranks as the exact
    reference does."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    store = _store(prefix)
    exact = _store(prefix, exact=True)
    try:
        scope = Scope(user="odd")
        store.add_many(
            [
                r"it's in C:\Users\o'neil\notes.txt, see 'quoted' words",
                "mail bob@example.com about http://example.com/a?b=1&c=2 and foo-bar:baz",
                r"back\\slash and a*b|c!d (e) <f> o'neil",
            ],
            scope,
        )
        with store._read() as cur:
            cur.execute(
                f"SELECT t.term, m.tsv @@ {prefix}term_query(t.term), t.rank FROM {prefix}memory_terms t "
                f"JOIN {prefix}memories m ON m.seq = t.seq"
            )
            rows = cur.fetchall()
        assert len(rows) > 20
        assert all(matched and rank > 0 for _, matched, rank in rows), [r for r in rows if not r[1]]
        for query in ("neil notes", "example com", "foo bar baz", "slash"):
            with store._read() as cur:
                got = store._text_ranking(cur, query, scope, 3)
            with exact._read() as cur:
                assert got == exact._text_ranking(cur, query, scope, 3), query
    finally:
        exact.close()
        store.drop_tables()
        store.close()
