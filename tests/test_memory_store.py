"""MemoryStore contract, run on SQLite and on PostgreSQL + pgvector (see memory_conftest)."""

from __future__ import annotations

import itertools
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_conftest import *  # noqa: F403 - fixtures memory_store, memory_backend
from memory_conftest import memory_open, memory_pg_url
from tinyharness.memory import MemoryNotFound, Scope, SQLiteStore, content_hash, open_store
from tinyharness.memory.base import MemoryStore
from tinyharness.memory.sqlite_store import marked_terms
from tinyharness.memory.text import (
    content_coordination,
    index_text,
    names_subject,
    query_phrases,
    query_terms,
    reciprocal_rank_fusion,
    without_subjects,
)
from tinyharness.memory.vector_index import VectorIndex

ALICE = Scope(user="alice")


def test_add_get_search_returns_the_relevant_memory(memory_store: MemoryStore) -> None:
    tea = memory_store.add("用户喜欢喝绿茶，不喜欢咖啡", Scope("alice", "bot", "s1"), kind="preference")
    memory_store.add("The deploy target is Kubernetes on GCP", ALICE)
    memory_store.add("Bob likes espresso", Scope("bob"))
    got = memory_store.get(tea.id)
    assert got is not None and got.content == tea.content and got.kind == "preference"
    assert got.scope == Scope("alice", "bot", "s1") and got.version == 1 and got.is_current
    hits = memory_store.search("喝什么茶", ALICE, limit=3)
    assert hits[0].item.id == tea.id
    assert all(h.item.scope.user == "alice" for h in hits)
    english = memory_store.search("where do we deploy?", ALICE, limit=1)
    assert english[0].item.content.startswith("The deploy target")


def test_scope_filters_users_agents_and_sessions(memory_store: MemoryStore) -> None:
    memory_store.add("alpha fact", Scope("u1", "a1", "s1"))
    memory_store.add("alpha fact two", Scope("u1", "a2", "s2"))
    memory_store.add("alpha fact three", Scope("u2", "a1", "s1"))
    assert memory_store.count(Scope("u1")) == 2
    assert memory_store.count(Scope(agent="a1")) == 2
    assert memory_store.count(Scope("u1", session="s2")) == 1
    assert {h.item.scope.user for h in memory_store.search("alpha", Scope("u2"))} == {"u2"}
    assert memory_store.search("alpha", Scope("nobody")) == []


def test_update_keeps_the_old_version_linked(memory_store: MemoryStore) -> None:
    first = memory_store.add("The user's editor is vim", ALICE)
    second = memory_store.update(first.id, "The user's editor is helix", reason="switched editors")
    old = memory_store.get(first.id)
    assert old is not None and old.status == "superseded" and old.superseded_by == second.id
    assert old.valid_to is not None and old.valid_to >= old.valid_from
    assert second.previous_id == first.id and second.root_id == first.root_id and second.version == 2
    assert [i.content for i in memory_store.history(second.id)] == [first.content, second.content]
    assert [h.item.id for h in memory_store.search("editor", ALICE)] == [second.id]
    with pytest.raises(MemoryNotFound):
        memory_store.update(first.id, "again")


def test_delete_closes_but_keeps_history(memory_store: MemoryStore) -> None:
    item = memory_store.add("temporary constraint: no deploys on Friday", ALICE)
    closed = memory_store.delete(item.id, reason="policy lifted")
    assert closed.status == "deleted" and closed.reason == "policy lifted" and closed.valid_to is not None
    assert memory_store.search("deploys Friday", ALICE) == []
    assert memory_store.count(ALICE) == 0
    assert [i.status for i in memory_store.list_items(ALICE, include_closed=True)] == ["deleted"]
    assert memory_store.history(item.id)[0].id == item.id
    with pytest.raises(MemoryNotFound):
        memory_store.delete(item.id)


def test_hash_catches_exact_duplicates_only_among_current(memory_store: MemoryStore) -> None:
    item = memory_store.add("Prefers  dark mode", ALICE)
    assert memory_store.find_by_hash(content_hash("prefers dark MODE"), ALICE) is not None
    assert memory_store.find_by_hash(content_hash("prefers dark mode"), Scope("bob")) is None
    memory_store.delete(item.id)
    assert memory_store.find_by_hash(content_hash("prefers dark mode"), ALICE) is None


def test_touch_records_use(memory_store: MemoryStore) -> None:
    item = memory_store.add("likes tests", ALICE)
    memory_store.touch([item.id, item.id])
    got = memory_store.get(item.id)
    assert got is not None and got.access_count == 2 and got.last_access_at >= item.last_access_at


def test_list_is_newest_first_and_limited(memory_store: MemoryStore) -> None:
    ids = [memory_store.add(f"fact number {i}", ALICE).id for i in range(5)]
    listed = memory_store.list_items(ALICE, limit=3)
    assert [i.id for i in listed] == ids[::-1][:3]


def test_external_vectors_drive_vector_ranking(memory_backend: str, tmp_path: Path) -> None:
    store = memory_open(memory_backend, tmp_path)
    try:
        rng = np.random.default_rng(1)
        vectors = rng.normal(size=(20, 128)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for i, vec in enumerate(vectors):
            store.add(f"zzz item {i}", ALICE, vector=vec.tolist())
        hits = store.search("", ALICE, limit=3, vector=vectors[7].tolist())
        assert hits[0].item.content == "zzz item 7"
        assert hits[0].similarity == pytest.approx(1.0, abs=1e-4)
    finally:
        if hasattr(store, "drop_tables"):
            store.drop_tables()
        store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add", "update", "delete"]), st.integers(0, 5), st.text(min_size=1, max_size=12)
        ),
        max_size=15,
    )
)
def test_versioning_never_loses_a_version(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, str]]
) -> None:
    store = SQLiteStore(tmp_path_factory.mktemp("v") / "m.db")
    written: list[str] = []  # every id ever created
    current: list[str] = []
    for op, pick, text in ops:
        if op == "add" or not current:
            item = store.add(text, ALICE)
            written.append(item.id)
            current.append(item.id)
        elif op == "update":
            old = current.pop(pick % len(current))
            new = store.update(old, text)
            written.append(new.id)
            current.append(new.id)
        else:
            store.delete(current.pop(pick % len(current)))
    everything = store.list_items(ALICE, include_closed=True)
    assert sorted(i.id for i in everything) == sorted(written)
    assert sorted(i.id for i in store.list_items(ALICE)) == sorted(current)
    for item in everything:
        chain = store.history(item.id)
        assert [v.version for v in chain] == list(range(1, len(chain) + 1))
        assert sum(v.is_current for v in chain) <= 1
        for older, newer in itertools.pairwise(chain):
            assert older.superseded_by == newer.id and newer.previous_id == older.id
    store.close()


def test_another_process_sees_writes_and_search_follows(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = SQLiteStore(path, vector_model="hashing")
    from tinyharness.memory.embed import HashingEmbedder

    store.embedder = HashingEmbedder(64)
    store.add("first memory about rust", ALICE)
    assert len(store.search("rust", ALICE)) == 1  # builds the vector index
    code = (
        "from tinyharness.memory import SQLiteStore, Scope, HashingEmbedder\n"
        f"s = SQLiteStore({str(path)!r}, embedder=HashingEmbedder(64), vector_model='hashing')\n"
        "s.add('second memory about rust', Scope('alice'))\n"
        "old = s.list_items(Scope('alice'))[-1]\n"
        "s.delete(old.id)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    hits = store.search("rust", ALICE)
    assert [h.item.content for h in hits] == ["second memory about rust"]
    assert hits[0].vector_rank == 1  # the index picked up the other process's row
    store.close()


def test_open_store_picks_backend_by_url(tmp_path: Path) -> None:
    store = open_store(tmp_path / "a.db", embedder="none")
    assert isinstance(store, SQLiteStore) and store.embedder is None
    store.add("full text only works", ALICE)
    assert store.search("works", ALICE)[0].vector_rank is None
    store.close()
    other = open_store(f"sqlite:///{tmp_path}/b.db", embedder="none")
    assert other.url.endswith("b.db")
    other.close()


def test_package_exports() -> None:
    import tinyharness.memory as memory

    assert all(hasattr(memory, name) for name in memory.__all__)
    assert {"MemoryManager", "MemoryStore", "open_store", "memory_tools", "Scope"} <= set(memory.__all__)


def test_text_helpers() -> None:
    assert "绿 茶 绿茶" in index_text("绿茶")
    assert query_terms("What did I ask before?") == ["ask"]
    assert "问题" in query_terms("我问过什么问题")
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "c"]])
    assert fused[0][0] == "b"


@given(
    n=st.integers(1, 60),
    k=st.integers(1, 10),
    seed=st.integers(0, 10_000),
    removed=st.sets(st.integers(0, 59), max_size=20),
)
def test_vector_index_matches_brute_force(n: int, k: int, seed: int, removed: set[int]) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 8)).astype(np.float32)
    scopes = [Scope(f"u{i % 3}") for i in range(n)]
    index = VectorIndex(8, capacity=4)
    for i in range(n):
        index.upsert(i, vectors[i], scopes[i])
    for i in removed:
        index.remove(i)
    query = rng.normal(size=8).astype(np.float32)
    got = index.search(query, Scope("u1"), k)
    alive = [i for i in range(n) if i not in removed and scopes[i].user == "u1"]
    expected = sorted(alive, key=lambda i: -float(vectors[i] @ query))[:k]
    assert [key for key, _ in got] == expected or np.allclose(
        [s for _, s in got], [float(vectors[i] @ query) for i in expected], atol=1e-5
    )


def test_context_is_searchable_below_content_and_kept_by_update(memory_store: MemoryStore) -> None:
    in_context = memory_store.add("we talked about the weekend", ALICE, context="kayak trip on the lake")
    in_content = memory_store.add("kayak trip booked for June", ALICE)
    hits = memory_store.search("kayak trip", ALICE, limit=2)
    assert [h.item.id for h in hits] == [in_content.id, in_context.id]
    assert hits[1].item.context == "kayak trip on the lake" and hits[1].text_rank == 2
    newer = memory_store.update(in_context.id, "we talked about the long weekend")
    assert newer.context == "kayak trip on the lake"
    assert in_context.id not in {h.item.id for h in memory_store.search("kayak", ALICE)}


def test_vector_search_in_a_small_scope_of_a_big_store(memory_backend: str, tmp_path: Path) -> None:
    store = memory_open(memory_backend, tmp_path)
    try:
        rng = np.random.default_rng(5)
        target = rng.normal(size=128).astype(np.float32)
        target /= np.linalg.norm(target)
        crowd = target + 0.05 * rng.normal(size=(200, 128)).astype(np.float32)  # all close to the query
        bulk = getattr(store, "add_many")  # noqa: B009 - both stores have it; the protocol does not
        bulk(
            [f"bob {i}" for i in range(200)],
            Scope("bob"),
            vectors=crowd / np.linalg.norm(crowd, axis=1)[:, None],
        )
        far = rng.normal(size=(3, 128)).astype(np.float32)
        for i, vec in enumerate(far / np.linalg.norm(far, axis=1)[:, None]):
            store.add(f"alice {i}", ALICE, vector=vec.tolist())
        hits = store.search("", ALICE, limit=3, vector=target.tolist())
        assert sorted(h.item.content for h in hits) == ["alice 0", "alice 1", "alice 2"]
    finally:
        if hasattr(store, "drop_tables"):
            store.drop_tables()
        store.close()


def test_a_query_of_common_terms_ranks_memories_holding_all_of_them(
    memory_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terms found in many memories say little alone, and ranking every row they match is what
    made full-text search slow at 100k memories: only memories holding all of them are ranked,
    and only the newest MAX_TERM_ROWS of those."""
    store = memory_open(memory_backend, tmp_path)
    try:
        bulk = getattr(store, "add_many")  # noqa: B009 - both stores have it; the protocol does not
        bulk([f"project alpha{i}" for i in range(60)], ALICE)
        bulk([f"deadline beta{i}" for i in range(60)], ALICE)
        both = store.add("project deadline gamma", ALICE)
        by_text = [h.item.id for h in store.search("project deadline", ALICE, limit=5) if h.text_rank]
        assert by_text == [both.id]

        module = sys.modules[type(store).__module__]
        monkeypatch.setattr(module, "MAX_TERM_ROWS", 10)
        newest = {f"deadline beta{i}" for i in range(51, 60)} | {"project deadline gamma"}
        hits = store.search("deadline", ALICE, limit=20)
        assert {h.item.content for h in hits if h.text_rank} <= newest
        assert len([h for h in hits if h.text_rank]) == 10
    finally:
        if hasattr(store, "drop_tables"):
            store.drop_tables()
        store.close()


def test_postgres_vector_search_walks_an_hnsw_index_and_agrees_with_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below HNSW_MIN_ROWS vectors there is no index (exact scan); a store that has more gets it
    at the next bulk insert or open, the planner uses it, and its top 10 match the exact ones."""
    from tinyharness.memory import pg_store

    prefix = f"t{uuid.uuid4().hex[:10]}_"
    first: Any = memory_open("postgres", tmp_path, prefix=prefix)
    store: Any = None
    try:
        rng = np.random.default_rng(9)
        vectors = rng.normal(size=(3000, 128)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        first.add_many([f"m{i}" for i in range(3000)], ALICE, vectors=vectors)

        def hnsw_indexes(pg: Any) -> list[str]:
            with pg._read() as cur:
                cur.execute(
                    "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (f"{prefix}memory_vectors",)
                )
                return [r[0] for r in cur.fetchall() if "USING hnsw" in r[0]]

        assert hnsw_indexes(first) == []  # 3000 < HNSW_MIN_ROWS
        monkeypatch.setattr(pg_store, "HNSW_MIN_ROWS", 2000)
        store = memory_open("postgres", tmp_path, prefix=prefix)
        assert len(hnsw_indexes(store)) == 1 and "vector(128)" in hnsw_indexes(store)[0]
        assert store._indexed_dims == {128} and first._indexed_dims == set()  # who walks the graph

        query = vectors[42] + 0.3 * rng.normal(size=128).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = {f"m{i}" for i in np.argsort(-(vectors @ query))[:10]}
        nearest, params = store._nearest_sql(128, ALICE)
        text = "[" + ",".join(map(str, query.tolist())) + "]"
        with store._read() as cur:
            cur.execute(f"EXPLAIN {nearest} LIMIT 10", [text, *params, text])
            assert "vectors_hnsw_" in "\n".join(r[0] for r in cur.fetchall())
        hits = {h.item.content for h in store.search("", ALICE, limit=10, vector=query.tolist())}
        assert len(hits & exact) >= 9
    finally:
        first.drop_tables()
        first.close()
        if store is not None:
            store.close()


def test_full_text_prefers_the_memory_holding_all_query_terms_in_its_content(
    memory_store: MemoryStore,
) -> None:
    # "nate" is common (low BM25 weight), "turtles" rare: BM25 alone ranks the short memory that is
    # "turtles" with "nate" only in its context first; content coordination ranks Nate's own first.
    for i in range(6):
        memory_store.add(f"nate talked about the weather on day {i}", ALICE)
    context_only = memory_store.add("turtles", ALICE, context="nate")
    both = memory_store.add("nate got two turtles from a shop", ALICE)
    hits = {h.item.id: h for h in memory_store.search("nate turtles", ALICE, limit=8)}
    assert hits[both.id].text_rank == 1 and hits[context_only.id].text_rank == 2


def test_content_coordination_and_marked_terms() -> None:
    assert content_coordination(0, 3) == 0.25 and content_coordination(3, 3) == 1.0
    assert marked_terms("\x01Nate\x02 has \x01turtles\x02, \x01nate\x02 says", cap=5) == 2
    assert marked_terms("\x01book\x02 \x01books\x02", cap=1) == 1
    # FTS5 marks a matched phrase (and terms inside it) as one span: each of its words counts.
    assert marked_terms("I love \x01coconut milk ice cream\x02 and \x01milk\x02", cap=5) == 4


def test_query_phrases_are_content_terms_side_by_side() -> None:
    question = "What did Nate think of the coconut milk ice-cream he made? Jon's dance festival"
    assert query_phrases(question) == [
        "nate think",
        "coconut milk",
        "milk ice",
        "ice cream",
        "dance festival",
    ]
    assert query_phrases("用户喜欢绿茶吗") == []  # CJK bigrams are terms already


def test_postgres_weighs_a_phrase_by_its_rarer_word_without_counting_it() -> None:
    from tinyharness.memory.pg_store import _phrase_weights

    weights = [("coconut", 3.0), ("milk", 1.0), ("ice", 2.0), ("cream", 2.5)]
    assert _phrase_weights("the coconut milk ice-cream, and the tea", weights) == [
        ("coconut <-> milk", 3.0),
        ("milk <-> ice", 2.0),
        ("ice <-> cream", 2.5),
    ]
    assert _phrase_weights("coconut water", weights) == []  # "water" was left out (common)


@pytest.mark.parametrize(
    ("apart", "together"),
    [
        # Both hold "ice" and "cream"; only the longer one (which BM25 alone ranks second) says
        # "ice cream".
        ("cream cake, ice drink", "we had vanilla ice cream with the cake at the party"),
        # "ice" twice and "cream" a few words on: more of the words, but not the phrase
        # (PostgreSQL's ts_rank alone scores the phrase query almost as high where they are apart).
        ("ice tea, then cream soda, then ice tea again", "ice cream at the fair"),
    ],
)
def test_full_text_prefers_the_query_words_side_by_side(
    memory_store: MemoryStore, apart: str, together: str
) -> None:
    for i in range(6):  # the others give the words and the phrase their rarity
        memory_store.add(f"a walk in the park on day {i}", ALICE)
    apart_id = memory_store.add(apart, ALICE).id
    together_id = memory_store.add(together, ALICE).id
    assert full_text_order(memory_store, "which ice cream?")[:2] == [together_id, apart_id]


def full_text_order(store: MemoryStore, query: str) -> list[str]:
    """Memory ids by their rank in the full-text list alone (the fused order also weighs the
    test embedder's hashed vectors, which know nothing of phrases)."""
    hits = [h for h in store.search(query, ALICE, limit=20) if h.text_rank is not None]
    return [h.item.id for h in sorted(hits, key=lambda h: h.text_rank or 0)]


def test_a_query_naming_a_subject_prefers_the_memories_about_it(memory_store: MemoryStore) -> None:
    # Bob's memory mentions Carol and holds "carol" and "garden" in its content, as Carol's own does:
    # without the subject, one order would serve both questions.
    carol = memory_store.add(
        "carol spent the weekend in her garden planting roses", ALICE, metadata={"subject": "Carol"}
    )
    bob = memory_store.add("carol garden", ALICE, metadata={"subject": "Bob"})
    about_carol = [h.item.id for h in memory_store.search("what did Carol do in the garden?", ALICE, limit=2)]
    about_bob = [h.item.id for h in memory_store.search("what did Bob say about the garden?", ALICE, limit=2)]
    assert about_carol == [carol.id, bob.id] and about_bob == [bob.id, carol.id]


def test_names_subject() -> None:
    terms = frozenset(query_terms("When did Caroline go hiking?"))
    assert names_subject(terms, "Caroline Smith") and not names_subject(terms, "Melanie")
    assert not names_subject(terms, None) and not names_subject(terms, "")


def test_the_store_embeds_the_query_without_the_subjects_it_names(memory_store: MemoryStore) -> None:
    # A subject is metadata, not part of a memory's vector: "Nate" in the query vector would only
    # pull towards memories that address him. The full-text query keeps the name.
    from tinyharness.memory.embed import HashingEmbedder

    asked: list[str] = []

    class Recording(HashingEmbedder):
        def embed_query(self, text: str) -> Any:
            asked.append(text)
            return super().embed_query(text)

    memory_store.add("my pets, two turtles, love strawberries", ALICE, metadata={"subject": "Nate"})
    memory_store.add("Hey Nate! how are the pets?", ALICE, metadata={"subject": "Joanna"})
    memory_store.embedder = Recording(64)  # type: ignore[attr-defined]
    hits = memory_store.search("What pets does Nate have?", ALICE, limit=2)
    assert asked == ["What pets does have?"] and len(hits) == 2


def test_without_subjects() -> None:
    assert without_subjects("What is Caroline's job?", ["Caroline Smith", "Mel"]) == "What is job?"
    assert without_subjects("What is Mel's job?", ["Caroline"]) == "What is Mel's job?"
    assert without_subjects("Caroline?", ["Caroline"]) == "Caroline?"  # nothing else to search for


@given(
    n=st.integers(1, 80),
    k=st.integers(1, 12),
    seed=st.integers(0, 10_000),
    removed=st.sets(st.integers(0, 79), max_size=30),
    spread=st.sampled_from([1e-3, 1.0, 1e3]),
    near=st.booleans(),
)
def test_int8_pass_returns_the_float32_top_k(
    n: int, k: int, seed: int, removed: set[int], spread: float, near: bool
) -> None:
    """The int8 first pass (forced on by ``exact_below=0``) keeps every row of the float32 top k:
    same ids in the same order as a plain float32 scan, on near-duplicates, zero rows and rows of
    very different lengths. Fails if the error bound is too tight (a row of the top k dropped)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=16).astype(np.float32)
    noise = rng.normal(size=(n, 16)).astype(np.float32)
    vectors = (base + 0.01 * noise if near else noise) * rng.uniform(0.1, 1.0, size=(n, 1)).astype(np.float32)
    vectors = (vectors * spread).astype(np.float32)
    vectors[rng.random(n) < 0.1] = 0.0
    scopes = [Scope(f"u{i % 2}") for i in range(n)]
    fast, plain = VectorIndex(16, capacity=4, exact_below=0), VectorIndex(16, capacity=4, exact_below=10**9)
    for index in (fast, plain):
        index.add_many(np.arange(n // 2, dtype=np.int64), vectors[: n // 2], scopes[: n // 2])
        for i in range(n // 2, n):
            index.upsert(i, vectors[i], scopes[i])
        for i in removed:
            index.remove(i)
    query = (base + rng.normal(size=16).astype(np.float32) * (0.01 if near else 1.0)).astype(np.float32)
    got, expected = fast.search(query, Scope("u1"), k), plain.search(query, Scope("u1"), k)
    # Scores may differ in their last float32 bits (another BLAS path), relative to |x| |q|.
    close = 1e-5 * spread * float(np.linalg.norm(query)) * 2
    same_scores = np.allclose([s for _, s in got], [s for _, s in expected], rtol=1e-5, atol=close)
    assert same_scores and (
        [key for key, _ in got] == [key for key, _ in expected] or len(got) == len(expected)
    )


def test_full_text_scope_filter_when_one_scope_holds_every_memory(memory_store: MemoryStore) -> None:
    """SQLite drops the scope filter of a full-text search while every current memory is in the
    scope: it must come back as soon as one memory lies outside it (another user, another agent
    of the same user), and a closed memory must stay unfound either way."""
    own = memory_store.add("quokka sighting near the lake", Scope("u1", "a1"))
    gone = memory_store.add("quokka sighting old note", Scope("u1", "a1"))
    memory_store.delete(gone.id)
    assert [h.item.id for h in memory_store.search("quokka", Scope("u1"))] == [own.id]
    assert [h.item.id for h in memory_store.search("quokka", Scope("u1", "a1"))] == [own.id]
    other_agent = memory_store.add("quokka sighting by the other agent", Scope("u1", "a2"))
    assert [h.item.id for h in memory_store.search("quokka", Scope("u1", "a1"))] == [own.id]
    assert {h.item.id for h in memory_store.search("quokka", Scope("u1"))} == {own.id, other_agent.id}
    memory_store.add("quokka sighting of another user", Scope("u0"))
    assert {h.item.id for h in memory_store.search("quokka", Scope("u1"))} == {own.id, other_agent.id}
    assert [h.item.id for h in memory_store.search("quokka", Scope(agent="a2"))] == [other_agent.id]
    assert memory_store.search("quokka", Scope("u2")) == []


def test_term_statistics_follow_writes_by_another_process(memory_backend: str, tmp_path: Path) -> None:
    """A store keeps no stale full-text statistics: after another connection (another process)
    makes a word common, a search leaves that word out. PostgreSQL keeps its document counts
    between searches while nothing was written; a count kept past the other writer's commit
    would still search for the word and find the 120 memories that hold it."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"

    def open_text_only() -> MemoryStore:
        if memory_backend == "sqlite":
            return SQLiteStore(tmp_path / "shared.db")
        from tinyharness.memory.pg_store import PostgresStore

        return PostgresStore(memory_pg_url(), table_prefix=prefix)

    reader, writer = open_text_only(), open_text_only()
    try:
        both = reader.add("alpha beta together", ALICE)
        beta = reader.add("beta alone", ALICE)
        assert {h.item.id for h in reader.search("alpha beta", ALICE)} == {both.id, beta.id}
        bulk = getattr(writer, "add_many")  # noqa: B009 - both stores have it; the protocol does not
        bulk([f"alpha filler {i}" for i in range(120)], ALICE)
        assert {h.item.id for h in reader.search("alpha beta", ALICE, limit=10)} == {both.id, beta.id}
    finally:
        drop = getattr(writer, "drop_tables", None)
        if drop is not None:
            drop()
        reader.close()
        writer.close()


def _candidates_from_every_bound(
    index: VectorIndex, query: np.ndarray, mask: np.ndarray, top: int
) -> set[int]:
    """The int8 pass's candidate rows as its first version found them: every row's bound in
    float64, the top-th best lower bound over all rows (the reference for the pruned pass)."""
    import simsimd

    size = index._size
    query64 = query.astype(np.float64)
    query_norm = float(np.linalg.norm(query64))
    step = float(np.abs(query64).max(initial=0.0)) / 127.0 or 1.0
    digits = np.clip(np.rint(query64 / step), -127, 127)
    query_error = float(np.linalg.norm(query64 - step * digits))
    dots = np.asarray(simsimd.cdist(digits.astype(np.int8)[None], index._int8[:size], metric="dot"))[0]
    approx = dots * index._scale[:size] * step
    norms, errors = index._int8_norm[:size], index._error[:size]
    bound = norms * query_error + errors * query_norm
    bound += 2 * index.dim * 2.0**-24 * (norms + errors) * query_norm
    low = np.where(mask, approx - bound, -np.inf)
    threshold = np.partition(low, size - top)[size - top]
    return {int(i) for i in np.flatnonzero(mask & (approx + bound >= threshold))}


@given(
    n=st.integers(1, 400),
    k=st.integers(1, 40),
    seed=st.integers(0, 10_000),
    spread=st.sampled_from([1e-3, 1.0, 1e3]),
    near=st.booleans(),
    scoped=st.booleans(),
)
def test_int8_pass_prunes_to_exactly_the_rows_every_bound_keeps(
    n: int, k: int, seed: int, spread: float, near: bool, scoped: bool
) -> None:
    """The int8 pass works out bounds only near the top: it must keep exactly the rows that the
    bounds of all rows keep (fails if the pruning margin is too small, or the threshold moves)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=24).astype(np.float32)
    noise = rng.normal(size=(n, 24)).astype(np.float32)
    vectors = ((base + 0.01 * noise if near else noise) * spread).astype(np.float32)
    vectors[rng.random(n) < 0.05] = 0.0
    scopes = [Scope(f"u{i % 3}") for i in range(n)]
    index = VectorIndex(24, capacity=8, exact_below=0)
    index.add_many(np.arange(n, dtype=np.int64), vectors, scopes)
    query = (base * spread + rng.normal(size=24).astype(np.float32) * spread).astype(np.float32)
    mask = index._live[:n].copy()
    if scoped:
        mask &= index._scope[:n, 0] == index._code(0, "u1", create=False)
    live = int(mask.sum())
    if live == 0:
        return
    top = min(k, live)
    assert set(index._candidates(query, mask, top).tolist()) == _candidates_from_every_bound(
        index, query, mask, top
    )


def test_the_newest_vector_names_the_model_a_store_goes_on_with(memory_store: MemoryStore) -> None:
    # What ``open_store(..., embedder="auto")`` asks: the model of the newest memory with a vector.
    from tinyharness.memory.embed import HashingEmbedder
    from tinyharness.memory.pg_store import PostgresStore

    assert memory_store.newest_vector_model() is None  # type: ignore[attr-defined]
    memory_store.add("first, hashed at 128 dimensions", Scope("u"))
    assert memory_store.newest_vector_model() == "hashing:128"  # type: ignore[attr-defined]
    if isinstance(memory_store, PostgresStore):
        other: Any = PostgresStore(
            memory_store.url, embedder=HashingEmbedder(64), table_prefix=memory_store._t
        )
    else:
        other = SQLiteStore(memory_store.path, embedder=HashingEmbedder(64))  # type: ignore[attr-defined]
    try:
        other.add("second, written with another model", Scope("u"))
        assert memory_store.newest_vector_model() == "hashing:64"  # type: ignore[attr-defined]
        memory_store.add("third, the first model again", Scope("u"))
        assert other.newest_vector_model() == "hashing:128"
    finally:
        other.close()
