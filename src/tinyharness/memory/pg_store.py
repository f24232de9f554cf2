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
import json
import math
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import COLUMNS, MemoryItem, MemoryNotFound, Scope, SearchHit, Status, content_hash, item_from_row
from .embed import Embedder, Vectors
from .text import (
    CONTEXT_WEIGHT,
    VECTOR_WEIGHT,
    common_term_cap,
    index_text,
    query_terms,
    reciprocal_rank_fusion,
)

EXTERNAL_MODEL = "external"
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


def _vector_text(vector: Vectors) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


class PostgresStore:
    """``MemoryStore`` on PostgreSQL + pgvector. ``table_prefix`` lets tests and several
    deployments share one database."""

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
        self.embedder = embedder
        self.vector_model = vector_model or (embedder.name if embedder else EXTERNAL_MODEL)
        self.candidates = candidates
        self.vector_weight = vector_weight
        self._t = table_prefix
        self._lock = threading.RLock()
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

    def _vector_for(self, content: str, vector: Sequence[float] | None) -> Vectors | None:
        if vector is not None:
            return np.asarray(vector, dtype=np.float32)
        if self.embedder is not None:
            return self.embedder.embed_documents([content])[0]
        return None

    def _insert(
        self,
        cur: Any,
        *,
        content: str,
        scope: Scope,
        kind: str,
        metadata: dict[str, Any],
        root_id: str | None,
        version: int,
        previous_id: str | None,
        reason: str,
        vector: Vectors | None,
        access: tuple[float, int] | None = None,
        context: str = "",
    ) -> MemoryItem:
        memory_id = uuid.uuid4().hex
        now = time.time()
        last_access, uses = access or (now, 0)
        cur.execute(
            f"INSERT INTO {self._t}memories (id, root_id, version, content, user_id, agent_id, session_id, "
            "kind, "
            "metadata, content_hash, valid_from, previous_id, reason, last_access_at, access_count, body, "
            "context, context_body) "
            f"VALUES ({', '.join(['%s'] * 18)}) RETURNING {COLUMNS}",
            (
                memory_id,
                root_id or memory_id,
                version,
                content,
                scope.user or "",
                scope.agent or "",
                scope.session or "",
                kind,
                json.dumps(metadata, ensure_ascii=False),
                content_hash(content),
                now,
                previous_id,
                reason,
                last_access,
                uses,
                index_text(content),
                context,
                index_text(context),
            ),
        )
        item = item_from_row(cur.fetchone())
        if vector is not None:
            cur.execute(
                f"INSERT INTO {self._t}memory_vectors (memory_id, model, embedding) VALUES (%s, %s, "
                "%s::vector)",
                (memory_id, self.vector_model, _vector_text(vector)),
            )
        return item

    def _lock_current(self, cur: Any, memory_id: str) -> MemoryItem:
        cur.execute(f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = %s FOR UPDATE", (memory_id,))
        row = cur.fetchone()
        if row is None:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        item = item_from_row(row)
        if not item.is_current:
            successor = f"; its successor is {item.superseded_by}" if item.superseded_by else ""
            raise MemoryNotFound(f"memory {memory_id!r} is {item.status}{successor}")
        return item

    def _close(self, cur: Any, memory_id: str, status: Status, successor: str | None, reason: str) -> None:
        cur.execute(
            f"UPDATE {self._t}memories SET status = %s, valid_to = %s, superseded_by = %s, "
            "reason = CASE WHEN %s = '' THEN reason ELSE %s END WHERE id = %s",
            (status, time.time(), successor, reason, reason, memory_id),
        )

    # --- MemoryStore ------------------------------------------------------------------------

    def add(
        self,
        content: str,
        scope: Scope,
        *,
        kind: str = "fact",
        metadata: dict[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        context: str = "",
    ) -> MemoryItem:
        vec = self._vector_for(content, vector)
        with self._tx() as cur:
            return self._insert(
                cur,
                context=context,
                content=content,
                scope=scope,
                kind=kind,
                metadata=dict(metadata or {}),
                root_id=None,
                version=1,
                previous_id=None,
                reason="",
                vector=vec,
            )

    def add_many(
        self,
        contents: Sequence[str],
        scope: Scope,
        *,
        vectors: Vectors | None = None,
        kind: str = "fact",
        contexts: Sequence[str] | None = None,
    ) -> builtins.list[str]:
        """Bulk insert with COPY (vectors in pgvector's binary format); returns the ids."""
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed_documents(list(contents))
        ids = [uuid.uuid4().hex for _ in contents]
        now = time.time()
        with self._tx() as cur:
            columns = "id, root_id, version, content, user_id, agent_id, session_id, kind, content_hash, "
            columns += "valid_from, last_access_at, body, context, context_body"
            with cur.copy(f"COPY {self._t}memories ({columns}) FROM STDIN") as copy:
                for index, (memory_id, content) in enumerate(zip(ids, contents, strict=True)):
                    context = contexts[index] if contexts is not None else ""
                    copy.write_row(
                        (
                            memory_id,
                            memory_id,
                            1,
                            content,
                            scope.user or "",
                            scope.agent or "",
                            scope.session or "",
                            kind,
                            content_hash(content),
                            now,
                            now,
                            index_text(content),
                            context,
                            index_text(context),
                        )
                    )
            if vectors is not None:
                with cur.copy(
                    f"COPY {self._t}memory_vectors (memory_id, model, embedding) FROM STDIN WITH (FORMAT "
                    "BINARY)"
                ) as copy:
                    copy.write(_binary_copy(ids, self.vector_model, vectors))
            # Fresh statistics: without them the planner scans where an index would do.
            cur.execute(f"ANALYZE {self._t}memories")
            cur.execute(f"ANALYZE {self._t}memory_vectors")
        return ids

    def get(self, memory_id: str) -> MemoryItem | None:
        with self._tx() as cur:
            cur.execute(f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = %s", (memory_id,))
            row = cur.fetchone()
        return item_from_row(row) if row else None

    def update(
        self,
        memory_id: str,
        content: str,
        *,
        reason: str = "",
        metadata: dict[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        context: str | None = None,
    ) -> MemoryItem:
        vec = self._vector_for(content, vector)
        with self._tx() as cur:
            old = self._lock_current(cur, memory_id)
            new = self._insert(
                cur,
                content=content,
                scope=old.scope,
                kind=old.kind,
                metadata=dict(old.metadata if metadata is None else metadata),
                root_id=old.root_id,
                version=old.version + 1,
                previous_id=old.id,
                reason=reason,
                vector=vec,
                access=(old.last_access_at, old.access_count),
                context=old.context if context is None else context,
            )
            self._close(cur, old.id, "superseded", new.id, "")
            return new

    def delete(self, memory_id: str, *, reason: str = "", status: Status = "deleted") -> MemoryItem:
        if status not in ("deleted", "evicted"):
            raise ValueError(f"delete closes a memory as 'deleted' or 'evicted', not {status!r}")
        with self._tx() as cur:
            self._lock_current(cur, memory_id)
            self._close(cur, memory_id, status, None, reason)
            cur.execute(f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = %s", (memory_id,))
            return item_from_row(cur.fetchone())

    def history(self, memory_id: str) -> builtins.list[MemoryItem]:
        with self._tx() as cur:
            cur.execute(
                f"SELECT {COLUMNS} FROM {self._t}memories WHERE root_id = "
                f"(SELECT root_id FROM {self._t}memories WHERE id = %s) ORDER BY version",
                (memory_id,),
            )
            rows = cur.fetchall()
        return [item_from_row(r) for r in rows]

    def list(
        self, scope: Scope, *, include_closed: bool = False, limit: int | None = None
    ) -> builtins.list[MemoryItem]:
        where, params = _scope_sql(scope)
        if not include_closed:
            where.append("status = 'current'")
        condition = " AND ".join(where) or "TRUE"
        sql = f"SELECT {COLUMNS} FROM {self._t}memories WHERE {condition} ORDER BY valid_from DESC, seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._tx() as cur:
            cur.execute(sql, params)
            rows = cur.fetchall()
        return [item_from_row(r) for r in rows]

    def find_by_hash(self, digest: str, scope: Scope) -> MemoryItem | None:
        where, params = _scope_sql(scope)
        with self._tx() as cur:
            cur.execute(
                f"SELECT {COLUMNS} FROM {self._t}memories WHERE content_hash = %s AND status = 'current' AND "
                f"{' AND '.join(where) or 'TRUE'} LIMIT 1",
                [digest, *params],
            )
            row = cur.fetchone()
        return item_from_row(row) if row else None

    def count(self, scope: Scope) -> int:
        where, params = _scope_sql(scope)
        where.append("status = 'current'")
        with self._tx() as cur:
            cur.execute(f"SELECT count(*) FROM {self._t}memories WHERE {' AND '.join(where)}", params)
            return int(cur.fetchone()[0])

    def touch(self, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        now = time.time()
        with self._tx() as cur:
            cur.executemany(
                f"UPDATE {self._t}memories SET last_access_at = %s, "
                "access_count = access_count + 1 WHERE id = "
                "%s",
                [(now, memory_id) for memory_id in memory_ids],
            )

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
        where, params = _scope_sql(scope)
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
        rank_weights = [CONTEXT_WEIGHT, 0.2, 0.4, 1.0]  # labels D (context), C, B, A (content)
        score_params: builtins.list[Any] = [v for term, idf in weights for v in (idf, rank_weights, term)]
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
        where, params = _scope_sql(scope)
        where.append("status = 'current'")
        cur.execute(
            f"SELECT id FROM {self._t}memories WHERE id = ANY(%s) AND {' AND '.join(where)}",
            [[key for key, _ in found], *params],
        )
        allowed = {r[0] for r in cur.fetchall()}
        kept = [hit for hit in found if hit[0] in allowed]
        if len(kept) >= limit or len(found) < limit * 8:
            return kept[:limit]
        where, params = _scope_sql(scope, prefix="m.")
        where.append("m.status = 'current'")
        cur.execute(
            f"SELECT m.id, 1 - (v.embedding <=> %s::vector) FROM {self._t}memory_vectors v "
            f"JOIN {self._t}memories m ON m.id = v.memory_id "
            "WHERE v.model = %s AND vector_dims(v.embedding) = %s "
            f"AND {' AND '.join(where)} ORDER BY v.embedding <=> %s::vector, m.seq LIMIT %s",
            [text, self.vector_model, dim, *params, text, limit],
        )
        return [(r[0], float(r[1])) for r in cur.fetchall()]

    def search(
        self, query: str, scope: Scope, *, limit: int = 5, vector: Sequence[float] | None = None
    ) -> builtins.list[SearchHit]:
        depth = max(self.candidates, limit * 4)
        qvec: Vectors | None = None
        if vector is not None:
            qvec = np.asarray(vector, dtype=np.float32)
        elif self.embedder is not None and query.strip():
            qvec = self.embedder.embed_query(query)
        with self._tx() as cur:
            text_rank = self._text_ranking(cur, query, scope, depth)
            vector_hits = self._vector_ranking(cur, qvec, scope, depth) if qvec is not None else []
            vector_rank = [key for key, _ in vector_hits]
            fused = reciprocal_rank_fusion([text_rank, vector_rank], weights=[1.0, self.vector_weight])[
                :limit
            ]
            if not fused:
                return []
            cur.execute(
                f"SELECT {COLUMNS} FROM {self._t}memories WHERE id = ANY(%s)", ([key for key, _ in fused],)
            )
            rows = {r[0]: r for r in cur.fetchall()}
        text_pos = {r: i + 1 for i, r in enumerate(text_rank)}
        vec_pos = {r: i + 1 for i, r in enumerate(vector_rank)}
        similarity = dict(vector_hits)
        return [
            SearchHit(
                item_from_row(rows[key]), score, text_pos.get(key), vec_pos.get(key), similarity.get(key)
            )
            for key, score in fused
            if key in rows
        ]


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


def _scope_sql(
    scope: Scope, *, exact: bool = False, prefix: str = ""
) -> tuple[builtins.list[str], builtins.list[str]]:
    where: builtins.list[str] = []
    params: builtins.list[str] = []
    for column, value in (("user_id", scope.user), ("agent_id", scope.agent), ("session_id", scope.session)):
        if value is not None or exact:
            where.append(f"{prefix}{column} = %s")
            params.append(value or "")
    return where, params
