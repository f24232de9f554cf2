"""The scale path: memories in PostgreSQL, full-text by ``tsvector`` and vectors by pgvector.

Chosen by a ``postgresql://`` URL. Many processes and machines can share one store: every write
is one transaction, and an update or delete first locks the version it closes (``FOR UPDATE``), so
two writers cannot both supersede the same version. Full-text ranking weights each query term by
its inverse document frequency (``ts_rank`` alone has no IDF, which makes OR-queries rank common
words as high as rare ones); the vector ranking is an exact cosine scan with pgvector's ``<=>``.
Both are fused by reciprocal rank fusion as in the SQLite store. Needs ``psycopg`` (3).
"""

from __future__ import annotations

import builtins
import math
import struct
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
from .base import COLUMNS, MemoryItem, Scope, Status, item_from_row
from .embed import Embedder, Vectors
from .sqlbase import EXTERNAL_MODEL as EXTERNAL_MODEL  # re-exported
from .sqlbase import SQLStoreBase
from .text import (
    CONTEXT_WEIGHT,
    VECTOR_WEIGHT,
    common_term_cap,
    index_text,
    query_terms,
)

TS_CONFIG = "english"


def _schema(prefix: str) -> builtins.list[str]:
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
            seq BIGSERIAL
        )""",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_root ON {prefix}memories (root_id, version)",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_hash ON {prefix}memories (content_hash) WHERE "
        "status = 'current'",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_scope ON {prefix}memories (user_id, agent_id, "
        "session_id) "
        "WHERE status = 'current'",
        f"CREATE INDEX IF NOT EXISTS {prefix}memories_tsv ON {prefix}memories USING GIN (tsv) WHERE "
        "status = 'current'",
        f"""CREATE TABLE IF NOT EXISTS {prefix}memory_vectors (
            memory_id TEXT NOT NULL REFERENCES {prefix}memories (id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            embedding VECTOR NOT NULL,
            PRIMARY KEY (memory_id, model)
        )""",
    ]


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
    ) -> None:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "a postgresql:// memory store needs psycopg: pip install 'psycopg[binary]'"
            ) from None
        if not table_prefix.replace("_", "").isalnum():
            raise ConfigError(f"table prefix must be letters, digits and '_', got {table_prefix!r}")
        self.url = url
        self._init_common(embedder, vector_model, candidates, vector_weight)
        self._t = table_prefix
        self._table = f"{table_prefix}memories"
        try:
            self._conn: Any = psycopg.connect(url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise ConfigError(f"cannot connect to the memory store {_safe_url(url)}: {exc}".strip()) from None
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._t + "schema",))
            for statement in _schema(self._t):
                cur.execute(statement)

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            yield cur

    _write = _tx  # every statement runs in a transaction
    _read = _tx

    def _insert_version(self, cur: Any, row: dict[str, Any], vector: Vectors | None) -> MemoryItem:
        row = _with_text(row)
        cur.execute(self._insert_sql(row, f" RETURNING {COLUMNS}"), builtins.list(row.values()))
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

    def _insert_many(self, cur: Any, rows: builtins.list[dict[str, Any]], vectors: Vectors | None) -> None:
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

    # --- MemoryStore (the rest is SQLStoreBase's) ---------------------------------------------

    def drop_tables(self) -> None:
        """Remove this prefix's tables (tests)."""
        with self._tx() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self._t}memory_vectors, {self._t}memories")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- search -----------------------------------------------------------------------------

    def _text_ranking(self, cur: Any, query: str, scope: Scope, limit: int) -> builtins.list[str]:
        terms = [t for t in (_tsquery_term(t) for t in query_terms(query)) if t]
        if not terms:
            return []
        where, params = self._scope_sql(scope)
        where.append("status = 'current'")
        scope_sql = " AND ".join(where)
        cur.execute(f"SELECT count(*) FROM {self._t}memories WHERE {scope_sql}", params)
        total = int(cur.fetchone()[0])
        # Document frequencies, counted only up to a cap; common terms are left out (COMMON_SHARE).
        cap = common_term_cap(total)
        weights: builtins.list[tuple[str, float]] = []
        common: builtins.list[tuple[str, float]] = []
        for term in terms:
            cur.execute(
                f"SELECT numnode(to_tsquery('{TS_CONFIG}', %s)), (SELECT count(*) FROM (SELECT 1 FROM "
                f"{self._t}memories WHERE {scope_sql} AND tsv @@ to_tsquery('{TS_CONFIG}', %s) LIMIT %s) s)",
                [term, *params, term, cap + 1],
            )
            nodes, frequency = cur.fetchone()
            if nodes and frequency:
                idf = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
                (common if frequency > cap else weights).append((term, idf))
        weights = weights or common
        if not weights:
            return []
        score = " + ".join(
            f"%s * ts_rank(%s::float4[], tsv, to_tsquery('{TS_CONFIG}', %s), 1)" for _ in weights
        )
        # content_coordination in SQL: ``term:A`` matches the term only in the content (label A).
        in_content = " + ".join(f"(tsv @@ to_tsquery('{TS_CONFIG}', %s))::int" for _ in weights)
        score = f"({score}) * (1 + {in_content}) / {1 + len(weights)}.0"
        rank_weights = [CONTEXT_WEIGHT, 0.2, 0.4, 1.0]  # labels D (context), C, B, A (content)
        score_params: builtins.list[Any] = [v for term, idf in weights for v in (idf, rank_weights, term)]
        score_params += [f"{term}:A" for term, _ in weights]
        cur.execute(
            f"SELECT id FROM {self._t}memories WHERE {scope_sql} AND tsv @@ to_tsquery('{TS_CONFIG}', %s) "
            f"ORDER BY {score} DESC, seq LIMIT %s",
            [*params, " | ".join(t for t, _ in weights), *score_params, limit],
        )
        return [r[0] for r in cur.fetchall()]

    def _vector_ranking(
        self, cur: Any, qvec: Vectors, scope: Scope, limit: int
    ) -> builtins.list[tuple[str, float]]:
        """Exact cosine ranking. First over the vectors table alone (a plain scan, no join), then
        the scope and status filter on the few found; when the filter leaves too few (a scope
        that holds a small part of the store), the filtered scan with a join."""
        text = _vector_text(qvec)
        dim = int(qvec.shape[0])
        cur.execute(
            f"SELECT memory_id, 1 - (embedding <=> %s::vector) AS similarity FROM {self._t}memory_vectors "
            "WHERE model = %s AND vector_dims(embedding) = %s ORDER BY embedding <=> %s::vector LIMIT %s",
            [text, self.vector_model, dim, text, limit * 8],
        )
        found = [(r[0], float(r[1])) for r in cur.fetchall()]
        where, params = self._scope_sql(scope)
        where.append("status = 'current'")
        cur.execute(
            f"SELECT id FROM {self._t}memories WHERE id = ANY(%s) AND {' AND '.join(where)}",
            [[key for key, _ in found], *params],
        )
        allowed = {r[0] for r in cur.fetchall()}
        kept = [hit for hit in found if hit[0] in allowed]
        if len(kept) >= limit or len(found) < limit * 8:
            return kept[:limit]
        where, params = self._scope_sql(scope, prefix="m.")
        where.append("m.status = 'current'")
        cur.execute(
            f"SELECT m.id, 1 - (v.embedding <=> %s::vector) FROM {self._t}memory_vectors v "
            f"JOIN {self._t}memories m ON m.id = v.memory_id "
            "WHERE v.model = %s AND vector_dims(v.embedding) = %s "
            f"AND {' AND '.join(where)} ORDER BY v.embedding <=> %s::vector, m.seq LIMIT %s",
            [text, self.vector_model, dim, *params, text, limit],
        )
        return [(r[0], float(r[1])) for r in cur.fetchall()]

    def _rows_by_key(self, cur: Any, keys: builtins.list[str]) -> dict[str, Sequence[Any]]:
        cur.execute(f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = ANY(%s)", (keys,))
        return {r[0]: r for r in cur.fetchall()}


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
