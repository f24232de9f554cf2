"""PostgreSQL search paths against the exact reference (``PostgresStore(exact=True)``): the
rare-terms-first full-text ranking returns what ranking every match returns, the newest-matches
path of common words too, a user never sees another user's memories through either statement
nor through the HNSW walk, and phrases still count. Skipped without TINYHARNESS_TEST_PG_URL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from memory_conftest import memory_pg_url
from tinyharness.memory import Scope
from tinyharness.memory.embed import HashingEmbedder

WORDS = [f"w{i:03d}" for i in range(60)]


def _store(prefix: str, *, exact: bool = False) -> Any:
    from tinyharness.memory.pg_store import PostgresStore

    return PostgresStore(memory_pg_url(), embedder=HashingEmbedder(64), table_prefix=prefix, exact=exact)


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[Any, Any]]:
    """One set of tables, opened twice: the store as it searches, and the exact reference. No
    HNSW index here (the tests below add up to ~6,000 rows): the vector halves are both exact,
    so whole searches can be compared."""
    from tinyharness.memory import pg_store

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pg_store, "HNSW_MIN_ROWS", 10**9)
        prefix = f"t{uuid.uuid4().hex[:10]}_"
        fast = _store(prefix)
        exact = _store(prefix, exact=True)
        yield fast, exact
        fast.drop_tables()
        fast.close()
        exact.close()


def _corpus(rng: np.random.Generator, n: int) -> list[str]:
    """Memories of 4-12 words drawn Zipf-like from WORDS: a few words in most memories, many in
    few, some repeated within a memory (so ``ts_rank`` differs between rows), with a context now
    and then (label D, ranked below the content)."""
    ranks = np.minimum(rng.zipf(1.4, size=(n, 12)) - 1, len(WORDS) - 1)
    lengths = rng.integers(4, 13, size=n)
    return [" ".join(WORDS[r] for r in row[:length]) for row, length in zip(ranks, lengths, strict=True)]


def _queries(rng: np.random.Generator, count: int) -> list[str]:
    """Two to four words, adjacent in the query (so phrases are searched too), common and rare."""
    queries = []
    for _ in range(count):
        size = int(rng.integers(1, 5))
        picks = np.minimum(rng.zipf(1.2, size=size) - 1, len(WORDS) - 1)
        queries.append(" ".join(WORDS[p] for p in picks))
    return queries


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(120, 400), limit=st.sampled_from([3, 5, 10, 40]))
def test_full_text_ranking_equals_ranking_every_match(
    stores: tuple[Any, Any], seed: int, n: int, limit: int
) -> None:
    """The bound may only skip rows that cannot enter the top ``limit``: on random corpora (a new
    user each, so the term statistics are that user's) every query's ranking, ids and order, is
    the exact one's."""
    fast, exact = stores
    rng = np.random.default_rng(seed)
    scope = Scope(user=f"u{seed}-{n}-{limit}")
    contexts = [WORDS[int(r)] if rng.random() < 0.2 else "" for r in rng.integers(0, len(WORDS), size=n)]
    fast.add_many(_corpus(rng, n), scope, contexts=contexts)
    boundable = 0
    for query in _queries(rng, 25):
        with fast._read() as cur:
            got = fast._text_ranking(cur, query, scope, limit)
            plan = fast._text_plan(cur, query, scope)
        with exact._read() as cur:
            want = exact._text_ranking(cur, query, scope, limit)
        assert got == want, query
        if plan is not None and not plan.all_common and len(plan.weights) > 1:
            boundable += 1
    # Most corpora give queries of several terms to bound; a few small ones give none (seed
    # 70291240, 120 memories), which is no failure: the next test proves the bound prunes.
    note(f"{boundable} of 25 queries had several terms to bound")


def test_the_bound_skips_the_common_terms_rows(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the path over the ``tsvector`` column (taken when a term is not one lexeme; the term
    postings answer every other query): a query of a rare and a common word, where the memories
    holding the rare word fill the top ``limit`` with scores the common word alone cannot reach,
    never ranks the common word's rows, and the answer is still the exact one."""
    fast, exact = stores
    monkeypatch.setattr(type(fast), "_term_lexemes", lambda self, cur, terms: None)
    scope = Scope(user="bound")
    contents = [f"common filler{i}" for i in range(150)] + [f"rare common note{i}" for i in range(12)]
    contents += [f"rare item{i}" for i in range(12)]
    fast.add_many(contents, scope)
    matched: list[str] = []
    ranked = type(fast)._ranked

    def spy(self: Any, cur: Any, plan: Any, match: str, limit: int) -> Any:
        matched.append(match)
        return ranked(self, cur, plan, match, limit)

    monkeypatch.setattr(type(fast), "_ranked", spy)
    with fast._read() as cur:
        got = fast._text_ranking(cur, "rare common", scope, 10)
    assert matched == ["rare"]
    with exact._read() as cur:
        assert got == exact._text_ranking(cur, "rare common", scope, 10)
    assert all("rare" in fast.get(key).content for key in got)


def test_common_words_rank_the_newest_matches_as_before(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every term common (in more than MAX_TERM_ROWS memories): only the newest MAX_TERM_ROWS
    holding all of them are ranked, in one statement; older ones never appear."""
    from tinyharness.memory import pg_store

    fast, _ = stores
    monkeypatch.setattr(pg_store, "MAX_TERM_ROWS", 30)
    scope = Scope(user="newest")
    old = fast.add_many(["alpha beta beta beta"] * 40, scope)  # the best score, but old
    new = fast.add_many(["alpha beta"] * 40 + ["alpha gamma"] * 40, scope)
    with fast._read() as cur:
        plan = fast._text_plan(cur, "alpha beta", scope)
        found = fast._text_ranking(cur, "alpha beta", scope, 10)
    assert plan is not None and plan.all_common
    assert not set(found) & set(old)
    assert set(found) <= set(new[:40])


@pytest.mark.parametrize("indexed", [False, True])
def test_a_user_never_sees_another_users_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indexed: bool
) -> None:
    """Bob's memories share every word and lie nearest to every query vector, yet Alice's
    searches (text half, vector half by the exact scan or the HNSW walk, fused search) return
    only hers; the walk keeps going past Bob's rows (iterative scan) until it has enough."""
    from tinyharness.memory import pg_store

    if indexed:
        monkeypatch.setattr(pg_store, "HNSW_MIN_ROWS", 500)
    store = _store(f"t{uuid.uuid4().hex[:10]}_")
    try:
        rng = np.random.default_rng(5)
        alice, bob = Scope(user="alice"), Scope(user="bob")
        target = rng.normal(size=64).astype(np.float32)
        near = target + 0.05 * rng.normal(size=(900, 64)).astype(np.float32)
        far = rng.normal(size=(100, 64)).astype(np.float32)
        bob_ids = set(store.add_many([f"shared secret word{i}" for i in range(900)], bob, vectors=near))
        alice_ids = set(store.add_many([f"shared word{i}" for i in range(100)], alice, vectors=far))
        with store._tx() as cur:
            store._index_vectors_when_many(cur, 64)
        assert (64 in store._indexed_dims) is indexed
        with store._read() as cur:
            text = store._text_ranking(cur, "shared secret", alice, 40)
            vector = store._vector_ranking(cur, target, alice, 40)
        assert text and set(text) <= alice_ids
        assert len(vector) == 40 and {key for key, _ in vector} <= alice_ids
        hits = store.search("shared secret", alice, limit=20, vector=target.tolist())
        assert hits and {hit.item.id for hit in hits} <= alice_ids
        assert not {hit.item.id for hit in hits} & bob_ids
    finally:
        store.drop_tables()
        store.close()


def test_search_equals_exact_search_on_a_small_store(stores: tuple[Any, Any]) -> None:
    """Below the index's size, the whole fused search (ids, scores, both ranks) is the exact
    reference's."""
    fast, exact = stores
    rng = np.random.default_rng(17)
    scope = Scope(user="small")
    fast.add_many(_corpus(rng, 300), scope)
    for query in _queries(rng, 30):
        got = [(h.item.id, h.score, h.text_rank, h.vector_rank) for h in fast.search(query, scope, limit=5)]
        want = [(h.item.id, h.score, h.text_rank, h.vector_rank) for h in exact.search(query, scope, limit=5)]
        assert got == want, query


def test_a_phrase_ranks_the_words_side_by_side_first(stores: tuple[Any, Any]) -> None:
    """The phrase score still applies on the bounded path: of the memories holding both rare
    words, the one where they stand side by side ranks first."""
    fast, exact = stores
    scope = Scope(user="phrase")
    fast.add_many([f"filler common{i % 7} text" for i in range(200)], scope)
    apart, together = fast.add_many(["cream of the day, then ice", "ice cream of the day"], scope)
    fast.add_many([f"ice alone {i}" for i in range(30)] + [f"cream alone {i}" for i in range(30)], scope)
    with fast._read() as cur:
        found = fast._text_ranking(cur, "ice cream", scope, 5)
    assert found[0] == together and apart in found
    with exact._read() as cur:
        assert found == exact._text_ranking(cur, "ice cream", scope, 5)
