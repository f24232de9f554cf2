"""The scale path: memories in PostgreSQL, full-text by ``tsvector`` and vectors by pgvector.

Chosen by a ``postgresql://`` URL. Many processes and machines can share one store: every write
is one transaction, and an update or delete first locks the version it closes (``FOR UPDATE``), so
two writers cannot both supersede the same version. Full-text ranking weights each query term by
its inverse document frequency (``ts_rank`` alone has no IDF, which makes OR-queries rank common
words as high as rare ones), read from term postings kept by triggers (``_terms_schema``) rather
than from every matching ``tsvector``; the vector ranking is answered from the vectors held in
the searching process (``pg_vectors``: an int8 pass, then the database's exact distance of the
few candidates left; exact) for stores of SCAN_FROM to SCAN_UP_TO vectors, and otherwise walks an
HNSW index (pgvector's iterative scan, so the scope filter still leaves enough rows), exact where
the index gives too few. Both are fused by reciprocal rank fusion as in the SQLite store. A
store holds a pool of connections, so searches from several threads (``mcp serve``) run at the
same time. Needs ``psycopg`` (3) and ``psycopg-pool``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import COLUMNS, MemoryItem, Scope, SearchHit, Status, item_from_row
from .embed import Embedder, Vectors
from .pg_vectors import LOG_TRIGGERS, PRUNE_AGE, PRUNE_EVERY, VectorCache, log_schema, prune
from .sqlbase import EXTERNAL_MODEL as EXTERNAL_MODEL  # re-exported
from .sqlbase import SQLStoreBase
from .text import (
    CONTEXT_WEIGHT,
    MAX_TERM_ROWS,
    VECTOR_WEIGHT,
    common_term_cap,
    index_text,
    query_phrases,
    query_terms,
)

TS_CONFIG = "english"
HNSW_MIN_ROWS = 5000  # vectors of one model before they get an HNSW index
BUILD_MEMORY = "1GB"  # maintenance_work_mem of the HNSW build, unless the server gives it more
RAISE_BUILD_MEMORY = (  # for the transaction: the larger of the setting in force and the parameter
    "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
    "'maintenance_work_mem')), pg_size_bytes(%s)) / 1024 || 'kB', true)"
)
# Candidates the HNSW scan keeps (pgvector's default is 40). Measured (bench/notes/memory-speed.md,
# session 12) on 1M clustered 384-d vectors, recall of the exact hybrid top 5: 0.75 / 0.88 / 0.96
# at 40 / 100 / 200, the vector half's time within the noise of a loaded machine; at 100k all
# three found the exact top 40.
HNSW_EF_SEARCH = 200
# From SCAN_FROM to SCAN_UP_TO vectors of one model, the vector half is answered from the vectors
# held in the searching process (``pg_vectors``): exact, and faster than the HNSW walk
# (bench/notes/memory-speed-pg.md, session 14). Below, the database's exact scan is as fast; above,
# the int8 pass reads too many bytes per query and the HNSW walk answers.
SCAN_FROM = HNSW_MIN_ROWS
SCAN_UP_TO = 400_000
LARGEST_CAP = common_term_cap(2**62)  # the cap of any store (it grows with the store, up to this)
RANK_WEIGHTS = [CONTEXT_WEIGHT, 0.2, 0.4, 1.0]  # ts_rank's weights of labels D (context), C, B, A (content)
# The highest ts_rank (normalization 0) of a one-term tsquery in any row: for one lexeme
# ts_rank sums weight / i**2 over its positions i = 1, 2, ... in position order, plus the
# largest weight's lost share, over pi**2 / 6; when the first position carries the largest
# weight (A, 1.0) that is at most 1.0 * (pi**2 / 6) / (pi**2 / 6). The ``tsv`` column puts the
# content's positions (A) before the context's (D), so the first position of a lexeme always
# has its largest weight. (Positions stop at 16,383: in a memory of more words than that the
# two could share one, and the bound could be passed by up to 0.6 in such a row.) A phrase
# (``a <-> b``) is ranked by ts_rank's AND formula, which stays below 1.
RANK_BOUND = 1.0


def _schema(prefix: str) -> list[str]:
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""CREATE TABLE IF NOT EXISTS {prefix}memories (
            id TEXT PRIMARY KEY,
            root_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            content TEXT NOT NULL,
            user_id TEXT NOT NULL DEFAULT '',
            agent_id TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL DEFAULT 'fact',
            metadata JSONB NOT NULL DEFAULT '{{}}',
            content_hash TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'current',
            valid_from DOUBLE PRECISION NOT NULL,
            valid_to DOUBLE PRECISION,
            previous_id TEXT,
            superseded_by TEXT,
            reason TEXT NOT NULL DEFAULT '',
            last_access_at DOUBLE PRECISION NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            context TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL DEFAULT '',
            context_body TEXT NOT NULL DEFAULT '',
            tsv TSVECTOR GENERATED ALWAYS AS (
                setweight(to_tsvector('{TS_CONFIG}', body), 'A')
                || setweight(to_tsvector('{TS_CONFIG}', context_body), 'D')
            ) STORED,
            seq BIGSERIAL,
            event_time DOUBLE PRECISION
        )""",
        # Columns added after the first release, for tables created before them.
        f"ALTER TABLE {prefix}memories ADD COLUMN IF NOT EXISTS event_time DOUBLE PRECISION",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_root ON {prefix}memories (root_id, version)",
        # De-duplication (``find_by_hash``, ``add_unique``) looks up a hash within a scope: one
        # index for both, so no planner can prefer reading all of a user's memories instead.
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_hash_scope ON {prefix}memories (content_hash, "
        "user_id, agent_id, session_id) WHERE status = 'current'",
        f"DROP INDEX IF EXISTS {prefix}memories_hash",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_scope ON {prefix}memories (user_id, agent_id, "
        "session_id) "
        "WHERE status = 'current'",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_tsv ON {prefix}memories USING GIN (tsv) WHERE "
        "status = 'current'",
        # The newest matches first (the MAX_TERM_ROWS floor of a search of common words): walked
        # backwards along this index and stopped at the floor, not every match sorted (19 against
        # 290 ms for a two-word query at 100k memories).
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_seq ON {prefix}memories (seq) WHERE status = 'current'",
        f"""CREATE TABLE IF NOT EXISTS {prefix}memory_vectors (
            memory_id TEXT NOT NULL REFERENCES {prefix}memories (id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            embedding VECTOR NOT NULL,
            PRIMARY KEY (memory_id, model)
        )""",
    ]


# What the term postings were computed with: when this differs from the comment on a store's
# postings table (an older release, other rank weights) they are rebuilt from the memories.
TERMS_MARK = f"tinyharness postings 1, ts_rank weights {','.join(repr(w) for w in RANK_WEIGHTS)}"


def _terms_schema(prefix: str) -> list[str]:
    """The term postings: one row per (lexeme, current memory) with the lexeme's ``ts_rank`` in
    that memory (the same call as the exact ranking makes, so the same float) and whether it
    stands in the content (label A); indexed by (lexeme, user, seq), the row's scope included, so
    a search reads the postings of its words only and never the memories' ``tsvector``.

    Kept by statement triggers on the memories table, in the writer's own transaction (a writer
    killed mid-way leaves neither its memories nor their postings, and any client writing the
    table, of any release, keeps them): a row inserted as current gets its postings, a version
    closed (status no longer current) or a row deleted loses them."""
    t = f"{prefix}memory_terms"
    weights = "ARRAY[" + ",".join(repr(float(w)) for w in RANK_WEIGHTS) + "]::float8[]::float4[]"
    postings = (
        f"INSERT INTO {t} (term, seq, user_id, agent_id, session_id, rank, in_content) "
        "SELECT u.lexeme, n.seq, n.user_id, n.agent_id, n.session_id, "
        f"ts_rank({weights}, n.tsv, {prefix}term_query(u.lexeme), 0), 'A' = ANY(u.weights) "
        "FROM {rows}, unnest(n.tsv) u WHERE {where};"
    )
    drop = (
        "FOR gone IN SELECT o.seq, o.user_id, tsvector_to_array(o.tsv) AS terms FROM {rows} WHERE {where} "
        f"LOOP DELETE FROM {t} WHERE term = ANY(gone.terms) AND user_id = gone.user_id AND seq = gone.seq; "
        "END LOOP;"
    )
    changed = "old_rows o JOIN new_rows n ON n.id = o.id"
    triggers = [  # (name, event, transition tables, body)
        (
            "add",
            "INSERT",
            "NEW TABLE AS new_rows",
            postings.format(rows="new_rows n", where="n.status = 'current'"),
        ),
        (
            "update",
            "UPDATE",
            "OLD TABLE AS old_rows NEW TABLE AS new_rows",
            drop.format(rows=changed, where="o.status = 'current' AND n.status <> 'current'")
            + postings.format(rows=changed, where="n.status = 'current' AND o.status <> 'current'"),
        ),
        (
            "remove",
            "DELETE",
            "OLD TABLE AS old_rows",
            drop.format(rows="old_rows o", where="o.status = 'current'"),
        ),
    ]
    statements = [
        f"""CREATE TABLE IF NOT EXISTS {t} (
            term TEXT NOT NULL,
            seq BIGINT NOT NULL,
            user_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            rank REAL NOT NULL,
            in_content BOOLEAN NOT NULL
        )""",
        f"CREATE INDEX IF NOT EXISTS {t}_term ON {t} (term, user_id, seq DESC) "
        "INCLUDE (rank, in_content, agent_id, session_id)",
        # A lexeme as a one-lexeme tsquery, verbatim (quoted: no parsing, no stemming again).
        f"CREATE OR REPLACE FUNCTION {prefix}term_query(lexeme TEXT) RETURNS tsquery LANGUAGE sql "
        "IMMUTABLE STRICT AS $$ SELECT ('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') "
        "|| '''')::tsquery $$",
    ]
    for name, event, tables, sql in triggers:
        statements += [
            f"CREATE OR REPLACE FUNCTION {prefix}memory_terms_{name}() RETURNS trigger LANGUAGE plpgsql "
            f"AS $$ DECLARE gone RECORD; BEGIN {sql} RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {prefix}memory_terms_{name} ON {prefix}memories",
            f"CREATE TRIGGER {prefix}memory_terms_{name} AFTER {event} ON {prefix}memories "
            f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION {prefix}memory_terms_{name}()",
        ]
    statements += [
        f"TRUNCATE {t}",
        postings.format(rows=f"{prefix}memories n", where="n.status = 'current'").rstrip(";"),
        f"COMMENT ON TABLE {t} IS '{TERMS_MARK}'",
        f"ANALYZE {t}",
    ]
    return statements


@dataclass(frozen=True)
class _TextPlan:
    """What a full-text search ranks: the scope's WHERE clause and its parameters, the terms
    with their IDF weights, the phrases (``a <-> b``) with theirs, each term's count of matches in
    scope (up to LARGEST_CAP + 1), and whether every term is common."""

    scope_sql: str
    params: list[str]
    weights: list[tuple[str, float]]
    pairs: list[tuple[str, float]]
    counts: dict[str, int]
    all_common: bool


def _with_text(row: dict[str, Any]) -> dict[str, Any]:
    """A ``version_row`` plus the normalized text the ``tsv`` column is generated from."""
    return row | {"body": index_text(row["content"]), "context_body": index_text(row["context"])}


def _vector_text(vector: Vectors) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


class PostgresStore(SQLStoreBase):
    """``MemoryStore`` on PostgreSQL + pgvector. ``table_prefix`` lets tests and several
    deployments share one database."""

    _mark = "%s"
    _order_tiebreak = "seq"
    _lock_suffix = " FOR UPDATE"

    def __init__(
        self,
        url: str,
        *,
        embedder: Embedder | None = None,
        vector_model: str | None = None,
        table_prefix: str = "tinyharness_",
        candidates: int = 40,
        vector_weight: float = VECTOR_WEIGHT,
        exact: bool = False,
        pool_size: int = 8,
        scan_vectors: tuple[int, int] = (SCAN_FROM, SCAN_UP_TO),
    ) -> None:
        """``exact``: rank every full-text match and compare the query with every vector in
        scope, never the HNSW index, the term postings nor the rare-terms-first bound: the
        reference the tests and the benchmark compare the fast paths with (slow on a large
        store). ``pool_size``: at most this many connections, one per search or write running
        at the same time (threads); more wait for a free one. ``scan_vectors``: (from, up to) how
        many vectors of the store's model its vector half is answered from the vectors held in
        this process (``pg_vectors``), exact and faster than the HNSW walk."""
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "a postgresql:// memory store needs psycopg and its pool: "
                "pip install 'psycopg[binary]' psycopg-pool"
            ) from None
        if not table_prefix.replace("_", "").isalnum():
            raise ConfigError(f"table prefix must be letters, digits and '_', got {table_prefix!r}")
        self.url = url
        self._init_common(embedder, vector_model, candidates, vector_weight)
        self._t = table_prefix
        self._table = f"{table_prefix}memories"
        # Memory ids are random, so the newest is found by ``seq``, backwards along its index.
        self._newest_vector_sql = (
            f"SELECT v.model FROM {table_prefix}memories m JOIN {table_prefix}memory_vectors v "
            "ON v.memory_id = m.id WHERE m.status = 'current' ORDER BY m.seq DESC LIMIT 1"
        )
        self._indexed_dims: set[int] = set()  # vector sizes this store knows have an HNSW index
        self.exact = exact
        self._index_deferred = False  # inside ``bulk_load``: the vector index waits for its end
        # _document_counts: (scope, term or None for all) -> (tsquery nodes, count), and the
        # database snapshot they were counted in.
        self._counts: dict[tuple[tuple[str | None, ...], str | None], tuple[int, int]] = {}
        self._counts_snapshot: str | None = None
        self._cache_lock = threading.Lock()  # the caches above, shared by the pool's threads
        self._lexemes: dict[str, tuple[str, ...]] = {}  # query term -> its lexemes (english config)
        self._held = threading.local()  # the cursor of this thread's open transaction, if any
        self.scan_vectors = scan_vectors
        self._caches: dict[int, VectorCache] = {}  # vector size -> its vectors held here
        self._scan_checked: dict[int, float] = {}  # vector size -> when its count was last checked
        self._pruned_at = -math.inf  # when this store last pruned the vector change log
        self._vector_threads: ThreadPoolExecutor | None = None  # see ``search``
        try:
            # One connection first: a wrong URL or password is one clear error, now.
            with psycopg.connect(url, autocommit=True) as conn:
                self._migrate(conn)
        except psycopg.OperationalError as exc:
            raise ConfigError(f"cannot connect to the memory store {_safe_url(url)}: {exc}".strip()) from None
        # A connection per concurrent search (``mcp serve`` answers requests on threads), opened
        # when needed, up to ``pool_size``; the caches above are the store's, not a connection's.
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=_configure,
            open=True,
        )

    def _migrate(self, conn: Any) -> None:
        """Create or upgrade the tables (one process at a time), build the postings where they
        are missing or were computed otherwise, and the vector index where it is due."""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._t + "schema",))
            for statement in _schema(self._t):
                cur.execute(statement)
            # Rebuilt when computed otherwise, or when the memories table lost its triggers (it was
            # dropped and created again, the postings table left behind).
            cur.execute(
                "SELECT obj_description(to_regclass(%s), 'pg_class'), (SELECT count(*) FROM pg_trigger "
                "WHERE tgrelid = to_regclass(%s) AND tgname = ANY(%s))",
                (
                    f"{self._t}memory_terms",
                    f"{self._t}memories",
                    [f"{self._t}memory_terms_{name}" for name in ("add", "update", "remove")],
                ),
            )
            mark, triggers = cur.fetchone()
            built = mark != TERMS_MARK or triggers != 3
            if built:
                for statement in _terms_schema(self._t):
                    cur.execute(statement)
            cur.execute(
                "SELECT count(*) FROM pg_trigger WHERE tgname = ANY(%s)",
                ([f"{self._t}vector_changes_{name}" for name in LOG_TRIGGERS],),
            )
            if cur.fetchone()[0] != len(LOG_TRIGGERS):
                for statement in log_schema(self._t):
                    cur.execute(statement)
            # A store grown by single inserts gets its vector index at the next open.
            cur.execute(
                f"SELECT vector_dims(embedding) FROM {self._t}memory_vectors WHERE model = %s LIMIT 1",
                (self.vector_model,),
            )
            if (row := cur.fetchone()) is not None:
                self._index_vectors_when_many(cur, int(row[0]))
        if built:  # the new postings' pages all-visible: searches read them from the index alone
            conn.execute(f"VACUUM (ANALYZE) {self._t}memory_terms")

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Bulk inserts (``add_many``) made inside leave the vector index to the end, where it is
        built once over every row: growing the graph batch by batch is several times slower
        than building it after the load (pgvector's own advice). Search works inside too (by the
        exact scan until the index exists)."""
        self._index_deferred = True
        try:
            yield
        finally:
            self._index_deferred = False
        with self._tx() as cur:
            cur.execute(
                f"SELECT vector_dims(embedding) FROM {self._t}memory_vectors WHERE model = %s LIMIT 1",
                (self.vector_model,),
            )
            if (row := cur.fetchone()) is not None:
                self._index_vectors_when_many(cur, int(row[0]))
        # VACUUM marks the new postings' pages all-visible, so searches read them from the index
        # alone (an index-only scan); it cannot run inside a transaction.
        with self._pool.connection() as conn:
            conn.execute(f"VACUUM (ANALYZE) {self._t}memory_terms")

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """A transaction on a connection of the pool; nested calls on the same thread share it."""
        held = getattr(self._held, "cursor", None)
        if held is not None:
            yield held
            return
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            self._held.cursor = cur
            try:
                yield cur
            finally:
                self._held.cursor = None

    _write = _tx  # every statement runs in a transaction

    def _serialize(self, cur: Any, key: str) -> None:
        # READ COMMITTED lets two check-then-insert transactions both miss the other's row.
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._t + "unique:" + key,))

    @contextmanager
    def _read(self) -> Iterator[Any]:
        """A connection of the pool without a transaction block: each statement sees the latest
        committed data, as it would inside a READ COMMITTED transaction, without the BEGIN and
        COMMIT round trips (two of a search's eight). The statements that change a setting for
        themselves (a deeper HNSW walk, the exact scan) open their own transaction."""
        held = getattr(self._held, "cursor", None)
        if held is not None:
            yield held
            return
        with self._pool.connection() as conn, conn.cursor() as cur:
            self._held.cursor = cur
            self._held.snapshot = None
            try:
                yield cur
            finally:
                self._held.cursor = None
                self._held.snapshot = None

    def _insert_version(self, cur: Any, row: dict[str, Any], vector: Vectors | None) -> MemoryItem:
        row = _with_text(row)
        cur.execute(self._insert_sql(row, f" RETURNING {COLUMNS}"), list(row.values()))
        item = item_from_row(cur.fetchone())
        if vector is not None:
            cur.execute(
                f"INSERT INTO {self._t}memory_vectors (memory_id, model, embedding) VALUES (%s, %s, "
                "%s::vector)",
                (row["id"], self.vector_model, _vector_text(vector)),
            )
        return item

    def _close_version(
        self, cur: Any, memory_id: str, status: Status, successor: str | None, reason: str
    ) -> None:
        cur.execute(
            f"UPDATE {self._t}memories SET status = %s, valid_to = %s, superseded_by = %s, "
            "reason = CASE WHEN %s = '' THEN reason ELSE %s END WHERE id = %s",
            (status, time.time(), successor, reason, reason, memory_id),
        )

    def _insert_many(self, cur: Any, rows: list[dict[str, Any]], vectors: Vectors | None) -> None:
        """With COPY (vectors in pgvector's binary format), then fresh statistics."""
        rows = [_with_text(row) for row in rows]
        if rows:
            with cur.copy(f"COPY {self._t}memories ({', '.join(rows[0])}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(tuple(row.values()))
        if vectors is not None:
            with cur.copy(
                f"COPY {self._t}memory_vectors (memory_id, model, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.write(_binary_copy([row["id"] for row in rows], self.vector_model, vectors))
        # Fresh statistics: without them the planner scans where an index would do.
        cur.execute(f"ANALYZE {self._t}memories")
        cur.execute(f"ANALYZE {self._t}memory_vectors")
        if vectors is not None and not self._index_deferred:
            self._index_vectors_when_many(cur, int(vectors.shape[1]))

    # --- MemoryStore (the rest is SQLStoreBase's) ---------------------------------------------

    def drop_tables(self) -> None:
        """Remove this prefix's tables (tests)."""
        with self._tx() as cur:
            cur.execute(
                f"DROP TABLE IF EXISTS {self._t}memory_vectors, {self._t}memory_terms, {self._t}memories, "
                f"{self._t}vector_changes, {self._t}vector_changes_pruned"
            )
            for name in LOG_TRIGGERS:
                cur.execute(f"DROP FUNCTION IF EXISTS {self._t}vector_changes_{name}()")
            for name in ("memory_terms_add", "memory_terms_update", "memory_terms_remove"):
                cur.execute(f"DROP FUNCTION IF EXISTS {self._t}{name}()")
            cur.execute(f"DROP FUNCTION IF EXISTS {self._t}term_query(TEXT)")

    def close(self) -> None:
        if self._vector_threads is not None:
            self._vector_threads.shutdown(wait=True)
        self._pool.close()

    # --- search -----------------------------------------------------------------------------

    def search(
        self, query: str, scope: Scope, *, limit: int = 5, vector: Sequence[float] | None = None
    ) -> list[SearchHit]:
        """``SQLStoreBase.search``; when the caller gives the query vector and this store holds
        its vectors, their int8 pass runs in a thread while the full-text statements wait on the
        server, on the vectors as held. The vector half uses that only if the text half's
        statement saw the snapshot they reflect (no write since); else it syncs and scans again."""
        cache = None
        if vector is not None and not self.exact and getattr(self._held, "cursor", None) is None:
            qvec = np.asarray(vector, dtype=np.float32)
            cache = self._caches.get(int(qvec.shape[0])) if qvec.ndim == 1 else None
        if cache is None:
            return super().search(query, scope, limit=limit, vector=vector)
        depth = max(self.candidates, limit * 4)  # (a question naming a time looks deeper: not used)
        if self._vector_threads is None:
            with self._cache_lock:
                if self._vector_threads is None:
                    self._vector_threads = ThreadPoolExecutor(
                        max_workers=max(1, self._pool.max_size), thread_name_prefix="tinyharness-vectors"
                    )
        future = self._vector_threads.submit(cache.candidates_as_held, qvec, scope, depth)
        self._held.prefetch = (qvec, scope, depth, future)
        try:
            return super().search(query, scope, limit=limit, vector=vector)
        finally:
            self._held.prefetch = None
            future.cancel()

    def _prefetched(self, qvec: Vectors, scope: Scope, limit: int) -> list[int] | None:
        """The candidates ``search`` started in a thread for this very vector half, if they
        reflect the snapshot the text half's statement saw on this connection."""
        held: tuple[Vectors, Scope, int, Future[tuple[str | None, list[int] | None]]] | None = getattr(
            self._held, "prefetch", None
        )
        if held is None or held[1] != scope or held[2] != limit or not np.array_equal(held[0], qvec):
            return None
        snapshot, keys = held[3].result()
        seen = getattr(self._held, "snapshot", None)
        return keys if snapshot is not None and snapshot == seen else None

    def _text_ranking(self, cur: Any, query: str, scope: Scope, limit: int) -> list[str]:
        """The ``limit`` best full-text matches in ``scope``, best first (score, then ``seq``).

        The score of a memory is the IDF-weighted sum of each kept term's ``ts_rank`` (and of each
        phrase's), times its content coordination. Ranking every match from its ``tsvector`` was
        most of a search at 100k memories, so the store ranks from the term postings
        (``_postings_ranking``): the postings of the query's words hold each memory's ``ts_rank``
        of each word, so one statement sums them without reading a memory; only memories that
        hold both words of a phrase of the question and could still reach the top are ranked from
        their ``tsvector`` (the phrase needs positions). A query of common terms only ranks its
        newest MAX_TERM_ROWS matches, found by walking the postings backwards
        (``_newest_postings``). Both return what ranking every match returns (tests compare them);
        a term that is not one lexeme (rare: to_tsquery splits it) takes the statements over the
        ``tsvector`` column (``_bounded_ranking``, ``_newest_ranking``)."""
        plan = self._text_plan(cur, query, scope)
        if plan is None:
            return []
        lexemes = None if self.exact else self._term_lexemes(cur, [term for term, _ in plan.weights])
        if plan.all_common:
            if lexemes is not None:
                found = self._newest_postings(cur, plan, scope, lexemes, limit)
                if found:
                    return found
                terms = [term for term, _ in plan.weights]
                return self._newest_ranking(cur, plan, limit, [" | ".join(terms)])
            return self._newest_ranking(cur, plan, limit)
        if self.exact:
            everything = " | ".join(term for term, _ in plan.weights)
            return [key for key, _ in self._ranked(cur, plan, everything, limit)]
        if lexemes is not None:
            return self._postings_ranking(cur, plan, scope, lexemes, limit)
        return self._bounded_ranking(cur, plan, limit)

    def _term_lexemes(self, cur: Any, terms: list[str]) -> dict[str, str] | None:
        """Each query term's lexeme in the store's text configuration (kept between searches);
        None when a term is not exactly one lexeme."""
        with self._cache_lock:
            missing = [term for term in dict.fromkeys(terms) if term not in self._lexemes]
        if missing:
            cur.execute(
                f"SELECT w, ARRAY(SELECT lexeme FROM unnest(to_tsvector('{TS_CONFIG}', w))) "
                "FROM unnest(%s::text[]) w",
                (missing,),
            )
            found = {row[0]: tuple(row[1]) for row in cur.fetchall()}
            with self._cache_lock:
                if len(self._lexemes) > 100_000:
                    self._lexemes.clear()
                self._lexemes.update(found)
                known = {term: self._lexemes.get(term, found.get(term, ())) for term in terms}
        else:
            with self._cache_lock:
                known = {term: self._lexemes[term] for term in terms}
        if any(len(lexemes) != 1 for lexemes in known.values()):
            return None
        return {term: lexemes[0] for term, lexemes in known.items()}

    def _postings_ranking(
        self, cur: Any, plan: _TextPlan, scope: Scope, lexemes: dict[str, str], limit: int
    ) -> list[str]:
        """The exact ranking, from the postings of the kept terms (each in at most
        MAX_TERM_ROWS memories in scope, else it would be common), in one statement:

        - ``p``: per memory holding a term, each lexeme's ``ts_rank`` and content flag;
        - ``s``: its score without phrases (``low``), computed as the exact ranking computes it,
          term by term in the same order with the same floats, so equal to the bit; and
          ``extra``: what the phrases could add at most (each phrase whose two words it holds:
          its IDF x RANK_BOUND, times the coordination);
        - memories without such a phrase have their exact score: the best ``limit`` of them by
          (score, seq); the others are ranked from their ``tsvector`` (the exact score SQL)
          unless even ``low + extra`` stays below the ``limit``-th best ``low`` (a margin of
          1e-9 covers the rounding of that sum);
        - the best ``limit`` of both, with their ids."""
        t = self._t
        distinct = list(dict.fromkeys(lexemes[term] for term, _ in plan.weights))
        column = {lexeme: index for index, lexeme in enumerate(distinct)}
        of = {term: column[lexemes[term]] for term, _ in plan.weights}
        per_lexeme = ", ".join(
            f"max(t.rank) FILTER (WHERE t.term = %s) AS r{i}, "
            f"bool_or(t.in_content) FILTER (WHERE t.term = %s) AS a{i}"
            for i in range(len(distinct))
        )
        where, scope_params = self._scope_sql(scope, prefix="t.")
        base = " + ".join(f"%s * coalesce(r{of[term]}, 0)" for term, _ in plan.weights)
        flags = " + ".join(f"coalesce(a{of[term]}::int, 0)" for term, _ in plan.weights)
        coordination = f"(1 + {flags}) / {1 + len(plan.weights)}.0"
        phrases = []
        for pair, _ in plan.pairs:
            first, second = (column[lexemes[word]] for word in pair.split(" <-> "))
            phrases.append(f"CASE WHEN r{first} IS NOT NULL AND r{second} IS NOT NULL THEN %s ELSE 0 END")
        extra = " + ".join(phrases) or "0"
        source = (
            f"FROM {t}memory_terms t WHERE {' AND '.join(['t.term = ANY(%s)', *where])}"
            if len(distinct) > 1
            else f"FROM {t}memory_terms t WHERE {' AND '.join(['t.term = %s', *where])}"
        )
        if len(distinct) > 1:  # a row per memory: each lexeme's rank and flag side by side
            rows = f"(SELECT t.seq, {per_lexeme} {source} GROUP BY t.seq)"
            row_params: list[Any] = [
                *[lexeme for lexeme in distinct for _ in range(2)],
                distinct,
                *scope_params,
            ]
        else:  # one lexeme: its postings are already a row per memory
            rows = f"(SELECT t.seq, t.rank AS r0, t.in_content AS a0 {source})"
            row_params = [distinct[0], *scope_params]
        idfs = [idf for _, idf in plan.weights]
        final = f"SELECT m.id FROM best b JOIN {t}memories m ON m.seq = b.seq AND m.status = 'current' "
        final += "ORDER BY b.score DESC, b.seq LIMIT %s"
        if not phrases:  # every score is known from the postings
            cur.execute(
                f"WITH best AS (SELECT seq, ({base}) * {coordination} AS score FROM {rows} p "
                f"ORDER BY 2 DESC, seq LIMIT %s) {final}",
                [*idfs, *row_params, limit, limit],
            )
            return [row[0] for row in cur.fetchall()]
        score, score_params = self._score_sql(plan)
        cur.execute(
            f"WITH s AS MATERIALIZED (SELECT seq, ({base}) * {coordination} AS low, "
            f"({extra})::float8 * {coordination} AS extra FROM {rows} p), "
            "bar AS (SELECT low FROM s ORDER BY low DESC LIMIT 1 OFFSET %s), "
            "best AS ((SELECT seq, low AS score FROM s WHERE extra = 0 ORDER BY low DESC, seq LIMIT %s) "
            f"UNION ALL SELECT m.seq, {score} FROM s JOIN {t}memories m ON m.seq = s.seq "
            "AND m.status = 'current' WHERE s.extra > 0 "
            "AND (s.low + s.extra) * 1.000000001 >= coalesce((SELECT low FROM bar), 0)) "
            f"{final}",
            [
                *idfs,
                *[idf * RANK_BOUND for _, idf in plan.pairs],
                *row_params,
                limit - 1,
                limit,
                *score_params,
                limit,
            ],
        )
        return [row[0] for row in cur.fetchall()]

    def _newest_postings(
        self, cur: Any, plan: _TextPlan, scope: Scope, lexemes: dict[str, str], limit: int
    ) -> list[str]:
        """Every term common: of the memories holding all of them, the newest MAX_TERM_ROWS,
        ranked (what ``_newest_ranking`` ranks), found by walking the first term's postings
        backwards along ``seq`` and looking each up in the other terms' postings; their
        ``ts_rank`` and content flags come with them. Empty when no memory holds all terms."""
        t = self._t
        distinct = list(dict.fromkeys(lexemes[term] for term, _ in plan.weights))
        of = {term: distinct.index(lexemes[term]) for term, _ in plan.weights}
        where, scope_params = self._scope_sql(scope, prefix="t0.")
        joins = "".join(
            f" JOIN {t}memory_terms t{i} ON t{i}.term = %s AND t{i}.user_id = t0.user_id "
            f"AND t{i}.seq = t0.seq"
            for i in range(1, len(distinct))
        )
        columns = ", ".join(f"t{i}.rank AS r{i}, t{i}.in_content AS a{i}" for i in range(len(distinct)))
        base = " + ".join(f"%s * r{of[term]}" for term, _ in plan.weights)
        coordination = (
            f"(1 + {' + '.join(f'a{of[term]}::int' for term, _ in plan.weights)}) / {1 + len(plan.weights)}.0"
        )
        cur.execute(
            f"WITH newest AS MATERIALIZED (SELECT t0.seq, {columns} FROM {t}memory_terms t0{joins} "
            f"WHERE {' AND '.join(['t0.term = %s', *where])} ORDER BY t0.seq DESC LIMIT %s), "
            f"best AS (SELECT seq, ({base}) * {coordination} AS score FROM newest "
            "ORDER BY 2 DESC, seq LIMIT %s) "
            f"SELECT m.id FROM best b JOIN {t}memories m ON m.seq = b.seq AND m.status = 'current' "
            "ORDER BY b.score DESC, b.seq",
            [
                *distinct[1:],
                distinct[0],
                *scope_params,
                MAX_TERM_ROWS,
                *[idf for _, idf in plan.weights],
                limit,
            ],
        )
        return [row[0] for row in cur.fetchall()]

    def _text_plan(self, cur: Any, query: str, scope: Scope) -> _TextPlan | None:
        """Which terms a query searches for, their IDF weights and counts, and its phrases."""
        terms = [t for t in (_tsquery_term(t) for t in query_terms(query)) if t]
        if not terms:
            return None
        where, params = self._scope_sql(scope)
        where.append("status = 'current'")
        scope_sql = " AND ".join(where)
        total, term_counts = self._document_counts(cur, scope, terms, scope_sql, params)
        # Document frequencies, counted only up to a cap; common terms are left out (COMMON_SHARE).
        cap = common_term_cap(total)
        weights: list[tuple[str, float]] = []
        common: list[tuple[str, float]] = []
        counts: dict[str, int] = {}
        for term in terms:
            nodes, counted = term_counts[term]
            frequency = min(counted, cap + 1)  # what a count up to the cap gives
            if nodes and frequency:
                idf = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
                (common if frequency > cap else weights).append((term, idf))
                counts[term] = counted
        all_common = not weights
        weights = weights or common
        if not weights:
            return None
        pairs = _phrase_weights(query, weights) if not all_common else []
        return _TextPlan(scope_sql, params, weights, pairs, counts, all_common)

    def _score_sql(self, plan: _TextPlan) -> tuple[str, list[Any]]:
        """The full-text score of a row as SQL, and its parameters."""
        weights, pairs = plan.weights, plan.pairs
        score = " + ".join(
            [f"%s * ts_rank(%s::float4[], tsv, to_tsquery('{TS_CONFIG}', %s), 0)" for _ in weights]
            + [PHRASE_SCORE.format(config=TS_CONFIG) for _ in pairs]
        )
        # content_coordination in SQL: ``term:A`` matches the term only in the content (label A).
        in_content = " + ".join(f"(tsv @@ to_tsquery('{TS_CONFIG}', %s))::int" for _ in weights)
        score = f"({score}) * (1 + {in_content}) / {1 + len(weights)}.0"
        score_params: list[Any] = [v for term, idf in weights for v in (idf, RANK_WEIGHTS, term)]
        score_params += [v for pair, idf in pairs for v in (pair, idf, RANK_WEIGHTS, pair)]
        score_params += [f"{term}:A" for term, _ in weights]
        return score, score_params

    def _ranked(self, cur: Any, plan: _TextPlan, match: str, limit: int) -> list[tuple[str, float]]:
        """(id, score) of the ``limit`` best memories in scope matching the tsquery ``match``."""
        score, score_params = self._score_sql(plan)
        cur.execute(
            f"SELECT id, {score} AS score FROM {self._t}memories WHERE {plan.scope_sql} "
            f"AND tsv @@ to_tsquery('{TS_CONFIG}', %s) ORDER BY 2 DESC, seq LIMIT %s",
            [*score_params, *plan.params, match, limit],
        )
        return [(r[0], float(r[1])) for r in cur.fetchall()]

    def _bounded_ranking(self, cur: Any, plan: _TextPlan, limit: int) -> list[str]:
        """MaxScore over the terms, rarest first: rank the memories that hold one of the rarest
        terms (few rows, found by the GIN index); a memory holding none of them holds only the
        commoner terms, so its score is at most the sum of their IDFs (and of their phrases')
        times RANK_BOUND, times the coordination of that many terms. When the ``limit``-th
        ranked score is above that, no other memory can enter the top ``limit``: the answer is
        the full ranking's. Otherwise the next term joins the rare ones, and at the end every
        match is ranked (today's statement)."""
        by_count = sorted(plan.weights, key=lambda tw: (plan.counts[tw[0]], tw[0]))
        matched = 0
        for split in range(1, len(by_count)):
            rare = [term for term, _ in by_count[:split]]
            matched += plan.counts[rare[-1]]
            if matched < limit:
                continue  # too few rows to fill the top ``limit`` from the rare terms alone
            rest = {term for term, _ in by_count[split:]}
            bound = sum(idf for term, idf in by_count[split:])
            bound += sum(idf for pair, idf in plan.pairs if set(pair.split(" <-> ")) <= rest)
            bound *= RANK_BOUND * (1 + len(rest)) / (1 + len(by_count))
            found = self._ranked(cur, plan, " | ".join(rare), limit)
            if len(found) >= limit and found[limit - 1][1] > bound:
                return [key for key, _ in found]
            if matched > MAX_TERM_ROWS:
                break  # past this many rows the full ranking costs little more
        everything = " | ".join(term for term, _ in plan.weights)
        return [key for key, _ in self._ranked(cur, plan, everything, limit)]

    def _newest_ranking(
        self, cur: Any, plan: _TextPlan, limit: int, matches: list[str] | None = None
    ) -> list[str]:
        """Only common terms: the memories holding all of them (else any), of those the newest
        MAX_TERM_ROWS only, ranked. One statement walks the ``seq`` index backwards, keeps the
        first MAX_TERM_ROWS rows that match and ranks them."""
        score, score_params = self._score_sql(plan)
        terms = [t for t, _ in plan.weights]
        for match in matches or [" & ".join(terms), " | ".join(terms)]:
            cur.execute(
                f"WITH newest AS MATERIALIZED (SELECT id, seq, tsv FROM {self._t}memories WHERE "
                f"{plan.scope_sql} AND tsv @@ to_tsquery('{TS_CONFIG}', %s) ORDER BY seq DESC LIMIT %s) "
                f"SELECT id FROM newest ORDER BY {score} DESC, seq LIMIT %s",
                [*plan.params, match, MAX_TERM_ROWS, *score_params, limit],
            )
            found = [r[0] for r in cur.fetchall()]
            if found:
                return found
        return []

    def _document_counts(
        self, cur: Any, scope: Scope, terms: list[str], scope_sql: str, params: list[str]
    ) -> tuple[int, dict[str, tuple[int, int]]]:
        """The current memories in ``scope``, and per term its tsquery node count and the memories
        in scope that match it, counted up to the largest cap + 1 (read against the scope's cap by
        the caller). One round trip. Counts are kept between searches while the database's
        snapshot (``pg_current_snapshot()``) is the same: equal snapshots mean no write
        transaction ended in between, anywhere in the database, so the counts are still exact.
        Why: counting every memory in scope and up to 5,001 matches of each common term was most
        of a full-text search at 100k memories, and the same store is searched again and again
        between writes."""
        key = (scope.user, scope.agent, scope.session)
        for retry in (False, True):
            with self._cache_lock:
                known = set(self._counts) if not retry else set()
                snapshot = self._counts_snapshot
            need_total = (key, None) not in known
            missing = [t for t in dict.fromkeys(terms) if (key, t) not in known]
            columns = ["pg_current_snapshot()::text"]
            values: list[Any] = []
            if need_total:
                columns.append(f"(SELECT count(*) FROM {self._t}memories WHERE {scope_sql})")
                values += params
            for term in missing:
                columns.append(
                    f"numnode(to_tsquery('{TS_CONFIG}', %s)), (SELECT count(*) FROM (SELECT 1 FROM "
                    f"{self._t}memories WHERE {scope_sql} AND tsv @@ to_tsquery('{TS_CONFIG}', %s) "
                    "LIMIT %s) s)"
                )
                values += [term, *params, term, LARGEST_CAP + 1]
            cur.execute(f"SELECT {', '.join(columns)}", values)
            row = cur.fetchone()
            self._held.snapshot = row[0]  # the vector half's held copy is current if it saw this one
            counted: dict[tuple[tuple[str | None, ...], str | None], tuple[int, int]] = {}
            position = 1
            if need_total:
                counted[(key, None)] = (0, int(row[1]))
                position = 2
            for index, term in enumerate(missing):
                counted[(key, term)] = (int(row[position + 2 * index]), int(row[position + 2 * index + 1]))
            with self._cache_lock:
                if row[0] != self._counts_snapshot or row[0] != snapshot:
                    if (not need_total or len(missing) < len(set(terms))) and not retry:
                        continue  # some counts would come from before the change: count them all again
                    self._counts.clear()
                    self._counts_snapshot = row[0]
                if len(self._counts) > 10_000:
                    self._counts.clear()
                self._counts.update(counted)
                wanted = [(key, None), *((key, term) for term in terms)]
                mine = {k: self._counts[k] for k in wanted if k in self._counts}
            if len(mine) == len(set(wanted)):
                break
            # Another thread emptied the cache between our look and our count: count them all.
        return mine[(key, None)][1], {term: mine[(key, term)] for term in terms}

    def _vector_ranking(self, cur: Any, qvec: Vectors, scope: Scope, limit: int) -> list[tuple[str, float]]:
        """Nearest vectors in scope by the HNSW index (an iterative scan: pgvector keeps walking the
        graph until ``limit`` rows pass the scope filter, up to ``hnsw.max_scan_tuples``); the
        exact scan when there is no index (a store of few vectors, or one another process
        indexed since this one opened it), when it gives too few (a scope that is a small part
        of a large store), or for an ``exact`` store."""
        dim = int(qvec.shape[0])
        text = _vector_text(qvec)
        if (keys := self._prefetched(qvec, scope, limit)) is not None:
            return self._exact_nearest(cur, text, dim, scope, limit, keys)
        cache = self._vector_cache(cur, dim)
        if cache is not None:
            keys = cache.candidates(qvec, scope, limit)
            if keys is not None:
                return self._exact_nearest(cur, text, dim, scope, limit, keys)
        if dim in self._indexed_dims and not self.exact:
            nearest, params = self._nearest_sql(dim, scope)
            # Every connection has these settings from the pool (``_configure``); a deeper
            # search sets its own (set_config(..., true) is SET LOCAL), and so does a store of
            # other settings (a subclass, a benchmark).
            own = limit > HNSW_EF_SEARCH or HNSW_EF_SEARCH != _CONFIGURED_EF_SEARCH
            with cur.connection.transaction() if own else contextlib.nullcontext():
                if own:
                    cur.execute(
                        "SELECT set_config('hnsw.ef_search', %s, true), "
                        "set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                        (str(max(HNSW_EF_SEARCH, limit)),),
                    )
                # relaxed_order may return near-ties out of order: sorted again over the few found.
                cur.execute(
                    f"WITH hits AS MATERIALIZED ({nearest} LIMIT %s) SELECT id, 1 - distance FROM hits "
                    "ORDER BY distance, id",
                    [text, *params, text, limit],
                )
                found = [(r[0], float(r[1])) for r in cur.fetchall()]
            if len(found) >= limit:
                return found
        return self._exact_nearest(cur, text, dim, scope, limit)

    def _vector_cache(self, cur: Any, dim: int) -> VectorCache | None:
        """The store's ``dim``-sized vectors held here, brought up to date, when the store holds
        as many as ``scan_vectors`` says (counted again at most once a minute while it does
        not); None for an ``exact`` store and inside a transaction (whose own writes the held
        vectors cannot see)."""
        if cur.connection.info.transaction_status != 0:  # 0: idle; in a transaction
            return None
        if time.monotonic() - self._pruned_at > PRUNE_EVERY:  # any store's searches keep the log short
            self._pruned_at = time.monotonic()
            prune(cur.connection, self._t, PRUNE_AGE)
        low, high = self.scan_vectors
        if self.exact or high < low:
            return None
        cache = self._caches.get(dim)
        if cache is None:
            now = time.monotonic()
            if now - self._scan_checked.get(dim, -math.inf) < 60:
                return None
            self._scan_checked[dim] = now
            # The planner's estimate of the table's rows first: counting up to ``high`` rows of a
            # store of millions would cost a search 100 ms or more, once a minute.
            cur.execute(
                "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (f"{self._t}memory_vectors",)
            )
            if (cur.fetchone() or (0,))[0] > 2 * high:
                return None
            cur.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {self._t}memory_vectors v WHERE "
                f"{' AND '.join(self._vector_filter(dim))} LIMIT %s) s",
                (high + 1,),
            )
            if not low <= cur.fetchone()[0] <= high:
                return None
            with self._cache_lock:
                cache = self._caches.setdefault(dim, VectorCache(self._t, self.vector_model, dim))
        cache.sync(cur.connection, getattr(self._held, "snapshot", None))
        if len(cache) > high:  # grown past what a scan answers fast: the HNSW walk again
            with self._cache_lock:
                self._caches.pop(dim, None)
                self._scan_checked[dim] = time.monotonic()
            return None
        return cache

    def _nearest_sql(self, dim: int, scope: Scope) -> tuple[str, list[str]]:
        """SELECT id, distance of the vectors in scope, nearest first by the HNSW index's order
        (the query vector is the first and last parameter, ``params`` go between), and its scope
        parameters."""
        typed = f"v.embedding::vector({dim})"
        where, params = self._scope_sql(scope, prefix="m.")
        where += ["m.status = 'current'", *self._vector_filter(dim)]
        sql = (
            f"SELECT m.id, {typed} <=> %s::vector({dim}) AS distance FROM {self._t}memory_vectors v "
            f"JOIN {self._t}memories m ON m.id = v.memory_id WHERE {' AND '.join(where)} "
            f"ORDER BY {typed} <=> %s::vector({dim})"
        )
        return sql, params

    def _exact_nearest(
        self, cur: Any, text: str, dim: int, scope: Scope, limit: int, seqs: list[int] | None = None
    ) -> list[tuple[str, float]]:
        """The ``limit`` nearest vectors in scope by comparing the query with every one (ties by
        ``seq``). Only the id and the distance reach the sort: sorting the rows with their
        vectors spilled 50 MB to disk at 100k memories. The size check is in the distance, not
        the WHERE: there the planner took ``vector_dims(embedding) = N`` for 0.5% of the rows and
        probed the memories once per vector (932 ms at 100k memories; 319 ms with the memories
        hashed instead, bench/notes/memory-speed-pg.md). ``seqs``: only among these memories (the
        candidates of the vectors held here), by their indexes."""
        where, params = self._scope_sql(scope, prefix="m.")
        where += ["m.status = 'current'", self._vector_filter(dim)[0]]
        if seqs is not None:
            cur.execute(
                f"SELECT id, 1 - distance FROM (SELECT m.id, m.seq, CASE WHEN vector_dims(v.embedding) "
                f"= {dim} THEN v.embedding::vector({dim}) <=> %s::vector({dim}) END AS distance "
                f"FROM {self._t}memories m JOIN {self._t}memory_vectors v ON v.memory_id = m.id "
                f"WHERE m.seq = ANY(%s) AND {' AND '.join(where)} OFFSET 0) d WHERE distance IS NOT NULL "
                "ORDER BY distance, seq LIMIT %s",
                [text, seqs, *params, limit],
            )
            return [(r[0], float(r[1])) for r in cur.fetchall()]
        with cur.connection.transaction():  # SET LOCAL needs one
            cur.execute("SET LOCAL enable_indexscan = off")  # not the HNSW index: every vector
            cur.execute(
                f"SELECT id, 1 - distance FROM (SELECT m.id, m.seq, CASE WHEN vector_dims(v.embedding) "
                f"= {dim} THEN v.embedding::vector({dim}) <=> %s::vector({dim}) END AS distance "
                f"FROM {self._t}memory_vectors v JOIN {self._t}memories m ON m.id = v.memory_id "
                f"WHERE {' AND '.join(where)} OFFSET 0) d WHERE distance IS NOT NULL "
                "ORDER BY distance, seq LIMIT %s",
                [text, *params, limit],
            )
            found = [(r[0], float(r[1])) for r in cur.fetchall()]
            cur.execute("RESET enable_indexscan")  # an enclosing transaction uses indexes again
            return found

    def _vector_filter(self, dim: int) -> list[str]:
        """The partial index's predicate, spelled with literals so the planner can match it."""
        model = "'" + self.vector_model.replace("'", "''") + "'"
        return [f"v.model = {model}", f"vector_dims(v.embedding) = {dim}"]

    def _index_vectors_when_many(self, cur: Any, dim: int) -> None:
        """Build the HNSW index (cosine) over this model's ``dim``-sized vectors once there are
        HNSW_MIN_ROWS of them; single inserts keep it up to date from then on. Below that an
        exact scan is as fast, and building after a bulk load is ~6x faster than inserting
        into the graph row by row. The column takes vectors of any size, so the index is on a
        cast, one per model and size."""
        name = f"{self._t}vectors_hnsw_{hashlib.sha1(f'{self.vector_model}/{dim}'.encode()).hexdigest()[:12]}"
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (name,))
        if cur.fetchone()[0]:
            self._indexed_dims.add(dim)
            return
        predicate = " AND ".join(self._vector_filter(dim)).replace("v.", "")
        cur.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self._t}memory_vectors WHERE {predicate} LIMIT %s) s",
            (HNSW_MIN_ROWS,),
        )
        if cur.fetchone()[0] < HNSW_MIN_ROWS:
            return
        # The graph is built in memory: at least BUILD_MEMORY for it, never less than the server
        # or the database was given (a 1M store's graph is ~2 GB; past the setting pgvector
        # builds on disk, several times slower).
        cur.execute(RAISE_BUILD_MEMORY, (BUILD_MEMORY,))
        cur.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {self._t}memory_vectors USING hnsw "
            f"((embedding::vector({dim})) vector_cosine_ops) WHERE {predicate}"
        )
        self._indexed_dims.add(dim)

    def _rows_by_key(self, cur: Any, keys: list[str]) -> dict[str, Sequence[Any]]:
        cur.execute(f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = ANY(%s)", (keys,))
        return {r[0]: r for r in cur.fetchall()}


_CONFIGURED_EF_SEARCH = HNSW_EF_SEARCH


def _configure(conn: Any) -> None:
    """A new pool connection's session settings: the HNSW walk's (a search then needs no
    statement of its own to set them). Before pgvector is loaded in the session these are
    placeholders that pgvector takes over when it loads."""
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, false), "
        "set_config('hnsw.iterative_scan', 'relaxed_order', false)",
        (str(_CONFIGURED_EF_SEARCH),),
    )


# A phrase scores only where its words stand side by side: ts_rank alone ranks ``a <-> b`` almost
# as high where the two words are apart (it scores their distance, not the phrase). CASE, so rows
# without the phrase skip ts_rank.
PHRASE_SCORE = (
    "CASE WHEN tsv @@ to_tsquery('{config}', %s)"
    " THEN %s * ts_rank(%s::float4[], tsv, to_tsquery('{config}', %s), 0) ELSE 0 END"
)


def _phrase_weights(query: str, weights: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of kept terms side by side in the question (``query_phrases``) as ``a <-> b``
    tsqueries, each weighted by the IDF of its rarer word. Why that weight: a phrase is in no more
    memories than its rarer word, so that IDF is a lower bound of the phrase's own, and it is
    known without another count query (one per pair was a round trip each)."""
    idf = dict(weights)
    pairs: list[tuple[str, float]] = []
    for phrase in query_phrases(query):
        words = [_tsquery_term(word) for word in phrase.split()]
        if all(word in idf for word in words):
            pairs.append((" <-> ".join(words), max(idf[word] for word in words)))
    return pairs


def _tsquery_term(term: str) -> str:
    return "".join(ch for ch in term if ch.isalnum())


def _binary_copy(ids: Sequence[str], model: str, vectors: Vectors) -> bytes:
    """COPY BINARY rows (memory_id text, model text, embedding vector) in pgvector's wire format."""
    parts = [b"PGCOPY\n\xff\r\n\x00", struct.pack("!ii", 0, 0)]
    model_bytes = model.encode("utf-8")
    dim = vectors.shape[1]
    big_endian = vectors.astype(">f4")
    for memory_id, row in zip(ids, big_endian, strict=True):
        id_bytes = memory_id.encode("utf-8")
        vector_bytes = struct.pack("!hh", dim, 0) + row.tobytes()
        parts.append(struct.pack("!h", 3))
        parts.append(struct.pack("!i", len(id_bytes)) + id_bytes)
        parts.append(struct.pack("!i", len(model_bytes)) + model_bytes)
        parts.append(struct.pack("!i", len(vector_bytes)) + vector_bytes)
    parts.append(struct.pack("!h", -1))
    return b"".join(parts)


def _safe_url(url: str) -> str:
    from ..redact import redact

    return redact(url)
