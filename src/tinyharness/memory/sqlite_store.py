"""The embedded memory store: one SQLite file in WAL mode, FTS5 full-text plus vectors.

Vectors are float32 blobs searched exactly with numpy (``VectorIndex``); the index is built once
per process and then follows the table incrementally: every write stamps its rows with a rising
``seq``, and before a search the store reads the rows whose ``seq`` is newer than what it has seen
(one indexed ``MAX(seq)`` when nothing changed), so writes by other processes show up too.
Full-text and vector rankings are fused by reciprocal rank fusion. Writes run in
``BEGIN IMMEDIATE`` transactions with a busy timeout, so several processes may share the file.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .base import COLUMNS, MemoryItem, MemoryNotFound, Scope, SearchHit, Status, content_hash, item_from_row
from .embed import Embedder, Vectors
from .text import (
    CONTEXT_WEIGHT,
    VECTOR_WEIGHT,
    common_term_cap,
    fts5_term,
    index_text,
    query_terms,
    reciprocal_rank_fusion,
)
from .vector_index import VectorIndex

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    root_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    content TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'fact',
    metadata TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'current',
    valid_from REAL NOT NULL,
    valid_to REAL,
    previous_id TEXT,
    superseded_by TEXT,
    reason TEXT NOT NULL DEFAULT '',
    last_access_at REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    context TEXT NOT NULL DEFAULT '',
    seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_root ON memories(root_id, version);
CREATE INDEX IF NOT EXISTS memories_hash ON memories(content_hash) WHERE status = 'current';
CREATE INDEX IF NOT EXISTS memories_scope ON memories(user_id, agent_id, session_id) WHERE status = 'current';
CREATE INDEX IF NOT EXISTS memories_seq ON memories(seq);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    body, context, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS memory_vectors (
    memory_rowid INTEGER NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (memory_rowid, model)
);
"""

EXTERNAL_MODEL = "external"


def sqlite_path(url: str) -> Path:
    """The file for ``sqlite:///abs/path``, ``sqlite://rel/path`` or a plain path."""
    for prefix in ("sqlite:///", "sqlite://"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            return Path("/" + rest) if prefix == "sqlite:///" else Path(rest)
    return Path(url)


class SQLiteStore:
    """``MemoryStore`` on one SQLite file. ``embedder=None``: full-text search only, unless
    vectors are passed to ``add``/``search`` (benchmarks do that, under ``vector_model``)."""

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        vector_model: str | None = None,
        candidates: int = 40,
        vector_weight: float = VECTOR_WEIGHT,
    ) -> None:
        self.path = sqlite_path(str(path))
        self.url = f"sqlite:///{self.path.resolve()}"
        self.embedder = embedder
        self.vector_model = vector_model or (embedder.name if embedder else EXTERNAL_MODEL)
        self.candidates = candidates
        self.vector_weight = vector_weight
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        with self._write() as db:
            for statement in _split(_SCHEMA):
                db.execute(statement)
        self._index: VectorIndex | None = None
        self._seen_seq = -1

    # --- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _next_seq(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM memories").fetchone()[0])

    def _vector_for(self, content: str, vector: Sequence[float] | None) -> Vectors | None:
        if vector is not None:
            return np.asarray(vector, dtype=np.float32)
        if self.embedder is not None:
            return self.embedder.embed_documents([content])[0]
        return None

    def _insert(
        self,
        db: sqlite3.Connection,
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
        seq: int,
        now: float,
        access: tuple[float, int] | None = None,
        context: str = "",
    ) -> MemoryItem:
        memory_id = uuid.uuid4().hex
        last_access, uses = access or (now, 0)
        cursor = db.execute(
            "INSERT INTO memories (id, root_id, version, content, user_id, agent_id, session_id, "
            "kind, "
            "metadata, content_hash, status, valid_from, previous_id, reason, last_access_at, access_count, "
            "context, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'current', ?, ?, ?, ?, ?, ?, ?)",
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
                context,
                seq,
            ),
        )
        rowid = cursor.lastrowid
        db.execute(
            "INSERT INTO memory_fts (rowid, body, context) VALUES (?, ?, ?)",
            (rowid, index_text(content), index_text(context)),
        )
        if vector is not None:
            db.execute(
                "INSERT INTO memory_vectors (memory_rowid, model, dim, data) VALUES (?, ?, ?, ?)",
                (rowid, self.vector_model, int(vector.shape[0]), vector.astype(np.float32).tobytes()),
            )
        item = self._get_in(db, memory_id)
        assert item is not None
        return item

    def _get_in(self, db: sqlite3.Connection, memory_id: str) -> MemoryItem | None:
        row = db.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return item_from_row(row) if row else None

    def _close_version(
        self,
        db: sqlite3.Connection,
        memory_id: str,
        status: Status,
        successor: str | None,
        reason: str,
        seq: int,
    ) -> None:
        rowid = db.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        db.execute(
            "UPDATE memories SET status = ?, valid_to = ?, superseded_by = ?, "
            "reason = CASE WHEN ? = '' THEN reason ELSE ? END, seq = ? WHERE id = ?",
            (status, time.time(), successor, reason, reason, seq, memory_id),
        )
        db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))

    def _current_in(self, db: sqlite3.Connection, memory_id: str) -> MemoryItem:
        item = self._get_in(db, memory_id)
        if item is None:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        if not item.is_current:
            raise MemoryNotFound(
                f"memory {memory_id!r} is {item.status}"
                + (f"; its successor is {item.superseded_by}" if item.superseded_by else "")
            )
        return item

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
        with self._write() as db:
            return self._insert(
                db,
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
                seq=self._next_seq(db),
                now=time.time(),
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
        """Bulk insert in one transaction (ingest benchmarks, imports); returns the ids."""
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed_documents(list(contents))
        ids: builtins.list[str] = []
        now = time.time()
        with self._write() as db:
            seq = self._next_seq(db)
            for index, content in enumerate(contents):
                memory_id = uuid.uuid4().hex
                context = contexts[index] if contexts is not None else ""
                cursor = db.execute(
                    "INSERT INTO memories (id, root_id, version, content, user_id, agent_id, session_id, "
                    "kind, "
                    "content_hash, valid_from, last_access_at, context, seq) "
                    "VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        memory_id,
                        memory_id,
                        content,
                        scope.user or "",
                        scope.agent or "",
                        scope.session or "",
                        kind,
                        content_hash(content),
                        now,
                        now,
                        context,
                        seq,
                    ),
                )
                rowid = cursor.lastrowid
                db.execute(
                    "INSERT INTO memory_fts (rowid, body, context) VALUES (?, ?, ?)",
                    (rowid, index_text(content), index_text(context)),
                )
                if vectors is not None:
                    db.execute(
                        "INSERT INTO memory_vectors (memory_rowid, model, dim, data) VALUES (?, ?, ?, ?)",
                        (
                            rowid,
                            self.vector_model,
                            vectors.shape[1],
                            vectors[index].astype(np.float32).tobytes(),
                        ),
                    )
                ids.append(memory_id)
        return ids

    def get(self, memory_id: str) -> MemoryItem | None:
        with self._lock:
            return self._get_in(self._db, memory_id)

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
        with self._write() as db:
            old = self._current_in(db, memory_id)
            seq = self._next_seq(db)
            new = self._insert(
                db,
                content=content,
                scope=old.scope,
                kind=old.kind,
                metadata=dict(old.metadata if metadata is None else metadata),
                root_id=old.root_id,
                version=old.version + 1,
                previous_id=old.id,
                reason=reason,
                vector=vec,
                seq=seq,
                now=time.time(),
                access=(old.last_access_at, old.access_count),
                context=old.context if context is None else context,
            )
            self._close_version(db, old.id, "superseded", new.id, "", seq)
            return new

    def delete(self, memory_id: str, *, reason: str = "", status: Status = "deleted") -> MemoryItem:
        if status not in ("deleted", "evicted"):
            raise ValueError(f"delete closes a memory as 'deleted' or 'evicted', not {status!r}")
        with self._write() as db:
            self._current_in(db, memory_id)
            self._close_version(db, memory_id, status, None, reason, self._next_seq(db))
            closed = self._get_in(db, memory_id)
            assert closed is not None
            return closed

    def history(self, memory_id: str) -> builtins.list[MemoryItem]:
        with self._lock:
            row = self._db.execute("SELECT root_id FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                return []
            rows = self._db.execute(
                f"SELECT {COLUMNS} FROM memories WHERE root_id = ? ORDER BY version", (row[0],)
            ).fetchall()
        return [item_from_row(r) for r in rows]

    def list(
        self, scope: Scope, *, include_closed: bool = False, limit: int | None = None
    ) -> builtins.list[MemoryItem]:
        where, params = _scope_sql(scope)
        if not include_closed:
            where.append("status = 'current'")
        condition = " AND ".join(where) or "1"
        sql = f"SELECT {COLUMNS} FROM memories WHERE {condition} ORDER BY valid_from DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [item_from_row(r) for r in rows]

    def find_by_hash(self, digest: str, scope: Scope) -> MemoryItem | None:
        where, params = _scope_sql(scope)
        condition = " AND ".join(where) or "1"
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE content_hash = ? AND status = 'current' "
            f"AND {condition} LIMIT 1"
        )
        with self._lock:
            row = self._db.execute(sql, [digest, *params]).fetchone()
        return item_from_row(row) if row else None

    def count(self, scope: Scope) -> int:
        where, params = _scope_sql(scope)
        where.append("status = 'current'")
        with self._lock:
            return int(
                self._db.execute(
                    f"SELECT COUNT(*) FROM memories WHERE {' AND '.join(where)}", params
                ).fetchone()[0]
            )

    def touch(self, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._write() as db:
            db.executemany(
                "UPDATE memories SET last_access_at = ?, access_count = access_count + 1 WHERE id = ?",
                [(time.time(), i) for i in memory_ids],
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- search -----------------------------------------------------------------------------

    def _refresh_index(self) -> VectorIndex | None:
        """Bring the vector index up to date with rows written since it last looked."""
        db = self._db
        latest = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        if self._index is not None and latest == self._seen_seq:
            return self._index
        if self._index is None:
            self._load_index(latest)
        else:
            rows = db.execute(
                "SELECT m.rowid, m.status, m.user_id, m.agent_id, m.session_id, v.data FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid AND v.model = ? WHERE m.seq > ?",
                (self.vector_model, self._seen_seq),
            ).fetchall()
            for rowid, status, user, agent, session, data in rows:
                if status == "current" and data is not None and len(data) == 4 * self._index.dim:
                    vector = np.frombuffer(data, dtype=np.float32)
                    self._index.upsert(rowid, vector, Scope(user or None, agent or None, session or None))
                else:
                    self._index.remove(rowid)
        self._seen_seq = latest
        return self._index

    def _load_index(self, latest: int) -> None:
        rows = self._db.execute(
            "SELECT m.rowid, m.user_id, m.agent_id, m.session_id, v.dim, v.data FROM memories m "
            "JOIN memory_vectors v ON v.memory_rowid = m.rowid AND v.model = ? "
            "WHERE m.status = 'current' AND m.seq <= ?",
            (self.vector_model, latest),
        ).fetchall()
        if not rows:
            return
        dim = int(rows[0][4])
        rows = [r for r in rows if r[4] == dim]
        index = VectorIndex(dim, capacity=max(1024, len(rows) * 5 // 4))
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        index.add_many(keys, matrix, [Scope(r[1] or None, r[2] or None, r[3] or None) for r in rows])
        self._index = index

    def _text_ranking(self, query: str, scope: Scope, limit: int) -> builtins.list[int]:
        terms = self._useful_terms(query_terms(query))
        if not terms:
            return []
        where, params = _scope_sql(scope, prefix="m.")
        where.append("m.status = 'current'")
        sql = (
            "SELECT m.rowid FROM memory_fts JOIN memories m ON m.rowid = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {' AND '.join(where)} ORDER BY bm25(memory_fts, 1.0, ?) LIMIT ?"
        )
        match = " OR ".join(fts5_term(t) for t in terms)
        return [r[0] for r in self._db.execute(sql, [match, *params, CONTEXT_WEIGHT, limit]).fetchall()]

    def _useful_terms(self, terms: builtins.list[str]) -> builtins.list[str]:
        """``terms`` without those in more than COMMON_SHARE of the memories (counted up to that
        cap, which is cheap: FTS5 walks a doclist without ranking it), unless all are."""
        if len(terms) < 2:
            return terms
        total = int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM memory_fts").fetchone()[0])
        cap = common_term_cap(total)
        kept = [
            term
            for term in terms
            if self._db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
                (fts5_term(term), cap + 1),
            ).fetchone()[0]
            <= cap
        ]
        return kept or terms

    def search(
        self, query: str, scope: Scope, *, limit: int = 5, vector: Sequence[float] | None = None
    ) -> builtins.list[SearchHit]:
        depth = max(self.candidates, limit * 4)
        qvec: Vectors | None = None
        if vector is not None:
            qvec = np.asarray(vector, dtype=np.float32)
        elif self.embedder is not None and query.strip():
            qvec = self.embedder.embed_query(query)
        with self._lock:
            text_rank = self._text_ranking(query, scope, depth)
            vector_hits: builtins.list[tuple[int, float]] = []
            if qvec is not None:
                index = self._refresh_index()
                if index is not None and index.dim == qvec.shape[0]:
                    vector_hits = index.search(qvec, scope, depth)
            vector_rank = [key for key, _ in vector_hits]
            fused = reciprocal_rank_fusion(
                [[str(r) for r in text_rank], [str(r) for r in vector_rank]],
                weights=[1.0, self.vector_weight],
            )[:limit]
            if not fused:
                return []
            rowids = [int(key) for key, _ in fused]
            marks = ",".join("?" * len(rowids))
            rows = {
                r[-1]: r
                for r in self._db.execute(
                    f"SELECT {COLUMNS}, rowid FROM memories WHERE rowid IN ({marks})", rowids
                )
            }
        text_pos = {r: i + 1 for i, r in enumerate(text_rank)}
        vec_pos = {r: i + 1 for i, r in enumerate(vector_rank)}
        similarity = dict(vector_hits)
        return [
            SearchHit(item_from_row(rows[r]), score, text_pos.get(r), vec_pos.get(r), similarity.get(r))
            for r, (_, score) in zip(rowids, fused, strict=True)
            if r in rows
        ]


def _split(script: str) -> builtins.list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _scope_sql(
    scope: Scope, *, exact: bool = False, prefix: str = ""
) -> tuple[builtins.list[str], builtins.list[str]]:
    """WHERE clauses for a scope; ``exact`` also pins fields left ``None`` to "not tied"."""
    where: builtins.list[str] = []
    params: builtins.list[str] = []
    for column, value in (("user_id", scope.user), ("agent_id", scope.agent), ("session_id", scope.session)):
        if value is not None or exact:
            where.append(f"{prefix}{column} = ?")
            params.append(value or "")
    return where, params
