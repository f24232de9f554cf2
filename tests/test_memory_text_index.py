"""The SQLite store's full-text postings in memory (``memory/text_index.py``) and the index builds
out of the search path.

The ranking from the postings must be FTS5's own, row for row: random adds, updates and deletes
(in scopes), then random queries (stemmed forms, phrases, hyphens, Chinese, words common to
most rows), compared with the FTS5 reference (``_fts5_text_ranking``, what ``exact=True``
uses). Writes by another process are seen; a stale or torn index is dropped and built again;
while an index is built in the background, searches answer exactly."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.memory import text_index
from tinyharness.memory.base import Scope
from tinyharness.memory.sqlite_store import SQLiteStore, marked_terms
from tinyharness.memory.text import fts5_term, index_text, query_phrases
from tinyharness.memory.text import query_terms as text_index_terms
from tinyharness.memory.text_index import TextIndex, Tokenizer
from tinyharness.memory.vector_index import VectorIndex

# Stems shared by several words, words FTS5 splits (hyphens, apostrophes), diacritics, CJK grams,
# and a word in every row (the common-terms rule and the newest-rows floor).
WORDS = [
    "run", "running", "runs", "ice", "cream", "ice-cream", "café", "cafe", "Caroline", "Caroline's",
    "melanie", "painting", "paints", "dance", "festival", "绿茶", "喜欢", "用户", "the", "memo",
    "May", "2023", "budget", "deadline",
]  # fmt: skip
SCOPES = [Scope("ana"), Scope("bo"), Scope("ana", "agent-1"), Scope("ana", "agent-1", "s1")]
QUERY_SCOPES = [Scope(), Scope("ana"), Scope("bo"), Scope("ana", "agent-1"), Scope("nobody")]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
add = st.tuples(st.just("add"), text, text, st.integers(0, len(SCOPES) - 1))
update = st.tuples(st.just("update"), text, text, st.integers(0, 10**6))
delete = st.tuples(st.just("delete"), st.just(""), st.just(""), st.integers(0, 10**6))
operations = st.lists(st.one_of(add, add, update, delete), min_size=1, max_size=30)
queries = st.lists(
    st.tuples(
        st.lists(st.sampled_from([*WORDS, "ice cream", "dance festival"]), min_size=1, max_size=4).map(
            " ".join
        ),
        st.integers(0, len(QUERY_SCOPES) - 1),
    ),
    min_size=1,
    max_size=8,
)


def apply(store: SQLiteStore, ops: list[tuple[str, str, str, int]], every: bool) -> None:
    """Run ``ops`` (``every``: one row in all of them, and one word in every row)."""
    for op, content, context, pick in ops:
        ids = [item.id for scope in SCOPES for item in store.list_items(scope)]
        ids = sorted(set(ids))
        if op == "add" or not ids:
            store.add(("memo " if every else "") + content, SCOPES[pick % len(SCOPES)], context=context)
        elif op == "update":
            store.update(ids[pick % len(ids)], ("memo " if every else "") + content, context=context)
        else:
            store.delete(ids[pick % len(ids)])


def assert_same_ranking(store: SQLiteStore, asked: list[tuple[str, int]], limit: int = 40) -> None:
    with store._read() as db:
        index = store._text_index(db)
        assert index is not None, store.text_index_refusals
        for query, scope_at in asked:
            scope = QUERY_SCOPES[scope_at]
            for depth in (limit, 3):
                fast = store._indexed_text_ranking(db, index, query, scope, depth)
                assert fast is not None  # every query word is one FTS5 term here
                assert fast == store._fts5_text_ranking(db, query, scope, depth), (query, scope, depth)


def open_store(path: Path) -> SQLiteStore:
    return SQLiteStore(path, text_index_from=0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=operations, then=operations, asked=queries, every=st.booleans())
def test_the_postings_rank_as_fts5_does(
    first: list[tuple[str, str, str, int]],
    then: list[tuple[str, str, str, int]],
    asked: list[tuple[str, int]],
    every: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "memory.db")
        apply(store, first, every)
        store.search("memo", Scope())  # starts the build
        assert store.wait_for_indexes(30)
        assert_same_ranking(store, asked)  # as built from FTS5
        apply(store, then, every)
        assert_same_ranking(store, asked)  # and as kept up to date row by row
        store.close()


def test_the_tokenizer_is_fts5s(tmp_path: Path) -> None:
    store = open_store(tmp_path / "memory.db")
    store.add("Running cafés: Caroline's ice-cream", Scope("ana"))
    with store._read() as db:
        db.execute("CREATE VIRTUAL TABLE temp.i USING fts5vocab(main, memory_fts, 'instance')")
        stored = [row[0] for row in db.execute("SELECT term FROM temp.i ORDER BY offset")]
    tokenizer = Tokenizer()
    assert list(tokenizer.tokens("Running cafés: Caroline's ice-cream")) == stored
    assert stored == ["run", "cafe", "carolin", "s", "ic", "cream"]
    store.close()


def test_a_second_process_writes_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    for n in range(20):
        store.add(f"budget note {n}", Scope("ana"))
    store.search("budget", Scope("ana"))
    assert store.wait_for_indexes(30)
    script = textwrap.dedent(
        f"""
        from tinyharness.memory.base import Scope
        from tinyharness.memory.sqlite_store import SQLiteStore
        store = SQLiteStore({str(path)!r})
        store.add("the zeppelin budget", Scope("ana"))
        first = store.list_items(Scope("ana"))[-1]
        store.delete(first.id)
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={"PYTHONPATH": ":".join(sys.path)})
    hits = store.search("zeppelin", Scope("ana"))
    assert [hit.item.content for hit in hits] == ["the zeppelin budget"]
    assert store._text is not None and store.text_index_builds == 1  # followed, not rebuilt
    assert_same_ranking(store, [("budget note", 1), ("zeppelin budget", 0)])
    store.close()


def test_a_stale_or_torn_index_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    for n in range(30):
        store.add(f"deadline item {n} painting", Scope("ana"))
    store.search("deadline", Scope("ana"))
    assert store.wait_for_indexes(30) and store._text is not None
    # A torn update of the postings (here: a row's tokens lost): FTS5's totals disagree.
    store._text.tokens = (store._text.tokens[0] - 1, store._text.tokens[1])
    with store._read() as db:
        assert store._text_index(db) is None  # not trusted: FTS5 ranks meanwhile
    assert "tokens" in store.text_index_refusals[-1]
    assert store.wait_for_indexes(30)
    assert_same_ranking(store, [("deadline painting", 1)])
    # A database put back from an older copy: its seq is behind the index's.
    backup = tmp_path / "backup.db"
    with store._read() as db:
        db.execute("VACUUM INTO ?", (str(backup),))
    for n in range(5):
        store.add(f"painting extra {n}", Scope("ana"))
    store.search("painting", Scope("ana"))
    store.close()
    shutil.copy(backup, path)
    # A write that did not stamp its rows (seq unchanged, FTS5's count moved).
    reopened = open_store(path)
    reopened.search("painting", Scope("ana"))
    assert reopened.wait_for_indexes(30)
    with reopened._write() as db:
        db.execute("INSERT INTO memory_fts (rowid, body, context) VALUES (999999, 'painting', '')")
    with reopened._read() as db:
        assert reopened._text_index(db) is None
    assert "FTS5 counts" in reopened.text_index_refusals[-1]
    reopened.close()


def test_postings_with_many_removed_rows_are_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_index, "WORN_AFTER", 4)
    store = open_store(tmp_path / "memory.db")
    ids = [store.add(f"painting {n} festival", Scope("ana")).id for n in range(12)]
    store.search("painting", Scope("ana"))
    assert store.wait_for_indexes(30) and store.text_index_builds == 1
    for memory_id in ids[:8]:
        store.delete(memory_id)
    old = store._text
    store.search("painting", Scope("ana"))  # more removed rows than live ones: a build starts
    assert store.text_index_builds == 2 and store._text is old  # the old one serves meanwhile
    assert store.wait_for_indexes(30)
    assert store._text is not old and store._text is not None and store._text.dead == 0
    assert_same_ranking(store, [("painting festival", 1), ("festival", 0)])
    store.close()


def test_searches_during_the_text_build_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "memory.db"
    store = open_store(path)
    for n in range(40):
        store.add(f"festival {n % 7} dance painting", Scope("ana"), context=f"May {n}")
    release = threading.Event()
    build = store._build_text_index

    def slow_build() -> TextIndex:
        release.wait(30)
        return build()

    monkeypatch.setattr(store, "_build_text_index", slow_build)
    reference = SQLiteStore(path, exact=True)
    for query in ("dance festival", "painting May", "festival 3"):
        got = [hit.item.id for hit in store.search(query, Scope("ana"))]
        assert got == [hit.item.id for hit in reference.search(query, Scope("ana"))]
        assert store._text is None and store._text_build is not None
    store.add("a festival written during the build", Scope("ana"))
    release.set()
    assert store.wait_for_indexes(30)
    assert store.text_index_builds == 1
    assert_same_ranking(store, [("festival", 1), ("dance festival", 0)])
    assert store._text is not None
    reference.close()
    store.close()


def test_searches_during_the_vector_build_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    dim, rows = 16, 600
    vectors = rng.normal(size=(rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(dim, exact_below=0, approx_from=100)
    index.add_many(np.arange(1, rows + 1, dtype=np.int64), vectors, [Scope("ana")] * rows)
    release = threading.Event()
    build = VectorIndex._build_coarse

    def slow_build(keys: np.ndarray, matrix: np.ndarray) -> object:
        release.wait(30)
        return build(keys, matrix)

    monkeypatch.setattr(VectorIndex, "_build_coarse", staticmethod(slow_build))
    queries = vectors[:5] + 0.01
    for query in queries:
        got = index.search(query, Scope("ana"), 5)
        assert got == index.search(query, Scope("ana"), 5, approximate=False)
    assert index.approximate_answers == 0 and index.coarse_builds == 1
    # Writes during the build reach the new index when it is installed.
    index.upsert(rows + 1, vectors[0], Scope("ana"))
    index.remove(3)
    release.set()
    assert index.wait_for_coarse(30)
    coarse = index.coarse_state()
    assert coarse is not None and len(coarse) == len(index) == rows
    assert index.search(vectors[0], Scope("ana"), 2)[0][0] in (1, rows + 1)
    assert index.approximate_answers == 1


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    every=st.booleans(),
    scope_at=st.integers(0, len(QUERY_SCOPES) - 1),
    newest=st.integers(1, 12),
)
def test_the_newest_matches_from_the_tails_are_the_newest_of_all(
    picks: list[int], every: bool, scope_at: int, newest: int
) -> None:
    """The floor of all-common queries (the newest MAX_TERM_ROWS matches) read from the lists'
    tails, against the whole lists, with a floor small enough that the tails are cut."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "memory.db")
        rng = np.random.default_rng(len(picks) * 100 + newest)
        words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
        for n in range(80):
            chosen = [w for w in words if rng.random() < 0.6] or ["alpha"]
            store.add(" ".join(chosen), SCOPES[n % len(SCOPES)])
        store.search("alpha", Scope())
        assert store.wait_for_indexes(30) and store._text is not None
        index = store._text
        lists = [index._phrase((words[p],))[0] for p in picks]
        scope = QUERY_SCOPES[scope_at]
        whole = index._in_scope(index._matching(lists, every), scope)[-newest:]
        assert index._newest_matching(lists, every, scope, newest).tolist() == whole.tolist()
        store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=st.lists(text, min_size=1, max_size=6), asked=queries)
def test_content_counts_from_the_postings_are_highlights(
    contents: list[str], asked: list[tuple[str, int]]
) -> None:
    """Where the postings give a row's count of query words in its content, it is the count
    of the words FTS5's highlight() marks (``marked_terms``), the reference."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "memory.db")
        for content in contents:
            store.add(content, Scope("ana"))
        store.search("memo", Scope())
        assert store.wait_for_indexes(30)
        tokenizer = store._fts_tokenizer()
        with store._read() as db:
            index = store._text_index(db)
            assert index is not None
            rows = db.execute("SELECT rowid, content FROM memories").fetchall()
            for query, _ in asked:
                terms = sorted(set(text_index_terms(query)))
                tokens = [tokenizer.tokens(term) for term in terms]
                if not terms or any(len(found) != 1 for found in tokens):
                    continue
                pairs = [p for p in query_phrases(query) if all(word in terms for word in p.split())]
                pair_tokens = [tokenizer.tokens(pair) for pair in pairs]
                if any(len(found) != 2 for found in pair_tokens):
                    continue
                known = index.content_terms(
                    [found[0] for found in tokens], pair_tokens, [rowid for rowid, _ in rows], len(terms)
                )
                match = " OR ".join(fts5_term(term) for term in terms + pairs)
                marked = tokenizer.highlighted(
                    [(rowid, index_text(content), "") for rowid, content in rows], match
                )
                for (rowid, _), count in zip(rows, known, strict=True):
                    if count is not None:
                        assert count == marked_terms(marked.get(rowid, ""), len(terms)), (query, rowid)
        store.close()


def test_content_counts_from_the_postings_where_they_prove_it(tmp_path: Path) -> None:
    store = open_store(tmp_path / "memory.db")
    for content in ["ice cream festival", "ice-cream festival", "running run festival", "dance dance"]:
        store.add(content, Scope("ana"))
    store.search("memo", Scope())
    assert store.wait_for_indexes(30)
    with store._read() as db:
        index = store._text_index(db)
        assert index is not None
        # "ice cream" as a phrase: its span is "ice cream" (two words) or "ice-cream" (one): unknown
        assert index.content_terms(["ic", "cream"], [("ic", "cream")], [1, 2], 2) == [None, None]
        # without the phrase each is a span of its own
        assert index.content_terms(["ic", "cream"], [], [1, 2], 2) == [2, 2]
        # "running run": two words of one term (capped by the one term asked: 1), or unknown for two
        assert index.content_terms(["run"], [], [3], 1) == [1]
        assert index.content_terms(["run", "festiv"], [], [3], 2) == [2]
        # "dance dance": the same word twice or two words of one term? unknown (highlight() asked)
        assert index.content_terms(["danc", "festiv"], [], [4, 1], 2) == [None, 1]
    store.close()
