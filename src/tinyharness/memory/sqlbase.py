"""What the two SQL memory stores share, whatever the database underneath.

``SQLStoreBase`` holds the backend-independent half of ``SQLiteStore`` and ``PostgresStore``: the
versioning flow (``add``, ``update``, ``delete``: insert a version, close the one it supersedes),
the reads that are plain SQL in both dialects (``get``, ``history``, ``list``, ``find_by_hash``,
``count``, ``touch``), scope filters, the row a new version is written as, and the hybrid search
(vector for the query, reciprocal rank fusion, hits). A subclass supplies the driver: its
placeholder (``_mark``), table name, transactions (``_write``, ``_read``), and what it does
differently on insert, close and ranking. Both drivers' handles answer ``execute(sql,
params)`` with an object that has ``fetchone`` and ``fetchall``, and ``executemany``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from .base import (
    COLUMNS,
    MemoryItem,
    MemoryNotFound,
    Scope,
    SearchHit,
    Status,
    content_hash,
    item_from_row,
)
from .embed import Embedder, Vectors
from .text import (
    RERANK_DEPTH,
    RRF_K,
    SUBJECT_BOOST,
    SUBJECT_KEY,
    TIME_BOOST,
    TIME_POOL,
    WHEN_BOOST,
    names_subject,
    query_terms,
    reciprocal_rank_fusion,
    without_subjects,
)
from .timeparse import asked_window, asks_when, states_time

EXTERNAL_MODEL = "external"


def scope_sql(
    scope: Scope, mark: str, *, exact: bool = False, prefix: str = ""
) -> tuple[list[str], list[str]]:
    """WHERE clauses for a scope with ``mark`` as the placeholder; ``exact`` also pins fields left
    ``None`` to "not tied"."""
    where: list[str] = []
    params: list[str] = []
    for column, value in (("user_id", scope.user), ("agent_id", scope.agent), ("session_id", scope.session)):
        if value is not None or exact:
            where.append(f"{prefix}{column} = {mark}")
            params.append(value or "")
    return where, params


def version_row(
    *,
    memory_id: str,
    content: str,
    scope: Scope,
    kind: str,
    now: float,
    metadata: dict[str, Any] | None = None,
    root_id: str | None = None,
    version: int = 1,
    previous_id: str | None = None,
    reason: str = "",
    access: tuple[float, int] | None = None,
    context: str = "",
    event_time: float | None = None,
) -> dict[str, Any]:
    """The columns of a new current version, by name (a store adds its own, e.g. ``seq``)."""
    last_access, uses = access or (now, 0)
    return {
        "id": memory_id,
        "root_id": root_id or memory_id,
        "version": version,
        "content": content,
        "user_id": scope.user or "",
        "agent_id": scope.agent or "",
        "session_id": scope.session or "",
        "kind": kind,
        "metadata": json.dumps(metadata or {}, ensure_ascii=False),
        "content_hash": content_hash(content),
        "valid_from": now,
        "previous_id": previous_id,
        "reason": reason,
        "last_access_at": last_access,
        "access_count": uses,
        "context": context,
        "event_time": event_time,
    }


def check_current(item: MemoryItem | None, memory_id: str) -> MemoryItem:
    """``item`` if it is a current version; MemoryNotFound (saying why) if not."""
    if item is None:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")
    if not item.is_current:
        successor = f"; its successor is {item.superseded_by}" if item.superseded_by else ""
        raise MemoryNotFound(f"memory {memory_id!r} is {item.status}{successor}")
    return item


class SQLStoreBase:
    """The shared half of the SQL ``MemoryStore`` implementations (see the module docstring)."""

    url: str
    _table: str  # the memories table
    _newest_vector_sql: str  # the model of the newest vector (see ``newest_vector_model``)
    _mark: str  # the driver's placeholder
    _order_tiebreak: str  # the column that orders rows written at the same ``valid_from``
    _lock_suffix: str = ""  # appended to the SELECT that reads a version before closing it
    # Whether full-text term statistics span the whole store (SQLite FTS5) rather than the
    # searched scope (PostgreSQL counts them in the scope): see ``search``.
    _global_text_statistics: bool = False

    def _init_common(
        self, embedder: Embedder | None, vector_model: str | None, candidates: int, vector_weight: float
    ) -> None:
        self.embedder = embedder
        self.vector_model = vector_model or (embedder.name if embedder else EXTERNAL_MODEL)
        self.candidates = candidates
        self.vector_weight = vector_weight
        self._lock = threading.RLock()

    # --- what a subclass supplies ---------------------------------------------------------

    def close(self) -> None:
        """Release the connection."""
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Any]:
        """A write transaction; yields the handle to execute on."""
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[Any]:
        """A consistent read; yields the handle to execute on."""
        raise NotImplementedError

    def _insert_version(self, handle: Any, row: dict[str, Any], vector: Vectors | None) -> MemoryItem:
        """Write the version ``row`` (from ``version_row``) with its vector; returns it as stored."""
        raise NotImplementedError

    def _insert_many(self, handle: Any, rows: list[dict[str, Any]], vectors: Vectors | None) -> None:
        """Write new versions (from ``version_row``) with their vectors (one row each, if given)."""
        raise NotImplementedError

    def _close_version(
        self, handle: Any, memory_id: str, status: Status, successor: str | None, reason: str
    ) -> None:
        raise NotImplementedError

    def _text_ranking(self, handle: Any, query: str, scope: Scope, limit: int) -> list[Any]:
        raise NotImplementedError

    def _vector_ranking(
        self, handle: Any, qvec: Vectors, scope: Scope, limit: int
    ) -> list[tuple[Any, float]]:
        raise NotImplementedError

    def _rows_by_key(self, handle: Any, keys: list[str]) -> dict[str, Sequence[Any]]:
        """The ``COLUMNS`` rows of these ranking keys (as strings), keyed the same way."""
        raise NotImplementedError

    # --- shared plumbing ------------------------------------------------------------------

    def _scope_sql(
        self, scope: Scope, *, exact: bool = False, prefix: str = ""
    ) -> tuple[list[str], list[str]]:
        return scope_sql(scope, self._mark, exact=exact, prefix=prefix)

    def _vector_for(self, content: str, vector: Sequence[float] | None) -> Vectors | None:
        if vector is not None:
            return np.asarray(vector, dtype=np.float32)
        if self.embedder is not None:
            return self.embedder.embed_documents([content])[0]
        return None

    def _query_vector(self, query: str, vector: Sequence[float] | None) -> Vectors | None:
        if vector is not None:
            return np.asarray(vector, dtype=np.float32)
        if self.embedder is not None and query.strip():
            return self.embedder.embed_query(query)
        return None

    def _subjects_left_out(self, query: str, top: dict[str, MemoryItem]) -> str:
        """``query`` without the names of the subjects (``SUBJECT_KEY``) of the ``top`` full-text
        candidates that it names."""
        subjects = {item.metadata.get(SUBJECT_KEY) for item in top.values()}
        return without_subjects(query, [s for s in subjects if isinstance(s, str)])

    def _dense_query(
        self,
        query: str,
        top: dict[str, MemoryItem],
        vector: Sequence[float] | None,
    ) -> str:
        """The query as the store embeds it: without the names of the subjects (``SUBJECT_KEY``) of
        the ``top`` full-text candidates that it names. Why: a memory's subject is metadata,
        not part of its vector, so a name in the query vector only pulls towards memories that
        address or mention that person (on LoCoMo "What pets does Nate have?" found "Hey Nate!"
        turns; without the name, dense recall@5 rose from 0.39 to 0.58). The subject rerank still
        prefers the named subject."""
        if vector is not None or self.embedder is None or not top:
            return query
        return self._subjects_left_out(query, top)

    def _get_in(self, handle: Any, memory_id: str, suffix: str = "") -> MemoryItem | None:
        row = handle.execute(
            f"SELECT {COLUMNS} FROM {self._table} WHERE id = {self._mark}{suffix}", (memory_id,)
        ).fetchone()
        return item_from_row(row) if row else None

    def _lock_current(self, handle: Any, memory_id: str) -> MemoryItem:
        """The current version ``memory_id`` (locked where the backend locks rows)."""
        return check_current(self._get_in(handle, memory_id, self._lock_suffix), memory_id)

    def _insert_sql(self, row: dict[str, Any], returning: str = "") -> str:
        marks = ", ".join([self._mark] * len(row))
        return f"INSERT INTO {self._table} ({', '.join(row)}) VALUES ({marks}){returning}"

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
        event_time: float | None = None,
    ) -> MemoryItem:
        vec = self._vector_for(content, vector)
        with self._write() as handle:
            row = _first_version(content, scope, kind, metadata, context, event_time)
            return self._insert_version(handle, row, vec)

    def add_unique(
        self,
        content: str,
        scope: Scope,
        *,
        within: Scope,
        kind: str = "fact",
        metadata: dict[str, Any] | None = None,
        context: str = "",
        event_time: float | None = None,
    ) -> tuple[MemoryItem, bool]:
        """``add``, unless a current memory with the same content hash is visible in ``within``:
        then that one, and False. The check and the insert are one transaction that excludes
        other writers (``_serialize``), so two processes remembering the same fact store it once."""
        vec = self._vector_for(content, None)
        digest = content_hash(content)
        where, params = self._scope_sql(within)
        where[:0] = [f"content_hash = {self._mark}", "status = 'current'"]
        with self._write() as handle:
            self._serialize(handle, digest)
            row = handle.execute(
                f"SELECT {COLUMNS} FROM {self._table} WHERE {' AND '.join(where)} LIMIT 1", [digest, *params]
            ).fetchone()
            if row is not None:
                return item_from_row(row), False
            new = _first_version(content, scope, kind, metadata, context, event_time)
            return self._insert_version(handle, new, vec), True

    def _serialize(self, handle: Any, key: str) -> None:
        """Make writers that use ``key`` wait for this transaction (SQLite's write transactions
        already exclude each other; PostgreSQL takes an advisory lock)."""

    def add_many(
        self,
        contents: Sequence[str],
        scope: Scope,
        *,
        vectors: Vectors | None = None,
        kind: str = "fact",
        contexts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any]] | None = None,
        event_times: Sequence[float | None] | None = None,
    ) -> list[str]:
        """Bulk insert in one transaction (ingest benchmarks, imports); returns the ids. ``contexts``,
        ``metadatas`` and ``event_times``, if given, hold one entry per content."""
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed_documents(list(contents))
        now = time.time()
        rows = [
            version_row(
                memory_id=uuid.uuid4().hex,
                content=content,
                scope=scope,
                kind=kind,
                now=now,
                context=contexts[index] if contexts is not None else "",
                metadata=metadatas[index] if metadatas is not None else None,
                event_time=event_times[index] if event_times is not None else None,
            )
            for index, content in enumerate(contents)
        ]
        with self._write() as handle:
            self._insert_many(handle, rows, vectors)
        return [row["id"] for row in rows]

    def get(self, memory_id: str) -> MemoryItem | None:
        with self._read() as handle:
            return self._get_in(handle, memory_id)

    def update(
        self,
        memory_id: str,
        content: str,
        *,
        reason: str = "",
        metadata: dict[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        context: str | None = None,
        event_time: float | None = None,
    ) -> MemoryItem:
        vec = self._vector_for(content, vector)
        with self._write() as handle:
            old = self._lock_current(handle, memory_id)
            row = version_row(
                memory_id=uuid.uuid4().hex,
                content=content,
                scope=old.scope,
                kind=old.kind,
                now=time.time(),
                metadata=old.metadata if metadata is None else metadata,
                root_id=old.root_id,
                version=old.version + 1,
                previous_id=old.id,
                reason=reason,
                access=(old.last_access_at, old.access_count),
                context=old.context if context is None else context,
                event_time=old.event_time if event_time is None else event_time,
            )
            new = self._insert_version(handle, row, vec)
            self._close_version(handle, old.id, "superseded", new.id, "")
            return new

    def delete(self, memory_id: str, *, reason: str = "", status: Status = "deleted") -> MemoryItem:
        if status not in ("deleted", "evicted"):
            raise ValueError(f"delete closes a memory as 'deleted' or 'evicted', not {status!r}")
        with self._write() as handle:
            self._lock_current(handle, memory_id)
            self._close_version(handle, memory_id, status, None, reason)
            closed = self._get_in(handle, memory_id)
            assert closed is not None
            return closed

    def history(self, memory_id: str) -> list[MemoryItem]:
        t, m = self._table, self._mark
        with self._read() as handle:
            rows = handle.execute(
                f"SELECT {COLUMNS} FROM {t} WHERE root_id = (SELECT root_id FROM {t} WHERE id = {m}) "
                "ORDER BY version",
                (memory_id,),
            ).fetchall()
        return [item_from_row(r) for r in rows]

    def list_items(
        self, scope: Scope, *, include_closed: bool = False, limit: int | None = None
    ) -> list[MemoryItem]:
        where, params = self._scope_sql(scope)
        if not include_closed:
            where.append("status = 'current'")
        condition = " AND ".join(where) or "1 = 1"
        sql = (
            f"SELECT {COLUMNS} FROM {self._table} WHERE {condition} "
            f"ORDER BY valid_from DESC, {self._order_tiebreak} DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as handle:
            rows = handle.execute(sql, params).fetchall()
        return [item_from_row(r) for r in rows]

    def find_by_hash(self, digest: str, scope: Scope) -> MemoryItem | None:
        where, params = self._scope_sql(scope)
        where[:0] = [f"content_hash = {self._mark}", "status = 'current'"]
        with self._read() as handle:
            row = handle.execute(
                f"SELECT {COLUMNS} FROM {self._table} WHERE {' AND '.join(where)} LIMIT 1", [digest, *params]
            ).fetchone()
        return item_from_row(row) if row else None

    def count(self, scope: Scope) -> int:
        where, params = self._scope_sql(scope)
        where.append("status = 'current'")
        with self._read() as handle:
            return int(
                handle.execute(
                    f"SELECT count(*) FROM {self._table} WHERE {' AND '.join(where)}", params
                ).fetchone()[0]
            )

    def newest_vector_model(self) -> str | None:
        """The embedding model of the newest memory that has a vector, or None when none has. One
        index probe (``_newest_vector_sql``), not a count over every vector: it runs each time a
        store is opened with the ``auto`` embedder."""
        with self._read() as handle:
            row = handle.execute(self._newest_vector_sql).fetchone()
        return None if row is None else str(row[0])

    def touch(self, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        now = time.time()
        m = self._mark
        with self._write() as handle:
            handle.executemany(
                f"UPDATE {self._table} SET last_access_at = {m}, access_count = access_count + 1 "
                f"WHERE id = {m}",
                [(now, memory_id) for memory_id in memory_ids],
            )

    def search(
        self, query: str, scope: Scope, *, limit: int = 5, vector: Sequence[float] | None = None
    ) -> list[SearchHit]:
        """Full-text and vector rankings (keys the backend picks), fused by reciprocal rank fusion
        on the keys as strings; the fused top ``RERANK_DEPTH`` reordered by ``rerank``. A query
        that names a time looks TIME_POOL times deeper and reranks all it found: the memories of
        that day or month may rank low on words alone."""
        now = time.time()
        window = asked_window(query, now)
        depth = max(self.candidates, limit * 4) * (TIME_POOL if window is not None else 1)
        with self._read() as handle:
            text_rank = [str(key) for key in self._text_ranking(handle, query, scope, depth)]
            # The top full-text rows are read once: for the query's subjects, then for the hits.
            rows = self._rows_by_key(handle, text_rank[:RERANK_DEPTH]) if text_rank else {}
            items = {key: item_from_row(row) for key, row in rows.items()}
            if self._global_text_statistics:
                # A name is rare across the whole store but common in its owner's scope: searched
                # for, it outweighs the topic. Rank again without it (the subject rerank below
                # still prefers the named subject's memories).
                bare = self._subjects_left_out(query, items)
                if bare != query:
                    text_rank = [str(key) for key in self._text_ranking(handle, bare, scope, depth)]
                    fresh = [key for key in text_rank[:RERANK_DEPTH] if key not in items]
                    if fresh:
                        items |= {k: item_from_row(r) for k, r in self._rows_by_key(handle, fresh).items()}
            qvec = self._query_vector(self._dense_query(query, items, vector), vector)
            vector_hits = [
                (str(key), similarity)
                for key, similarity in (
                    self._vector_ranking(handle, qvec, scope, depth) if qvec is not None else []
                )
            ]
            vector_rank = [key for key, _ in vector_hits]
            fused = reciprocal_rank_fusion(
                [text_rank, vector_rank], k=RRF_K, weights=[1.0, self.vector_weight]
            )
            fused = fused[: max(limit, RERANK_DEPTH if window is None else depth)]
            if not fused:
                return []
            missing = [key for key, _ in fused if key not in items]
            if missing:
                items |= {key: item_from_row(row) for key, row in self._rows_by_key(handle, missing).items()}
        found = [(key, score) for key, score in fused if key in items]
        fused = rerank(query, found, items, now)[:limit]
        text_pos = {key: i + 1 for i, key in enumerate(text_rank)}
        vec_pos = {key: i + 1 for i, key in enumerate(vector_rank)}
        similarity = dict(vector_hits)
        return [
            SearchHit(items[key], score, text_pos.get(key), vec_pos.get(key), similarity.get(key))
            for key, score in fused
        ]


def rerank(
    query: str, fused: Sequence[tuple[str, float]], items: dict[str, MemoryItem], now: float
) -> list[tuple[str, float]]:
    """``fused`` (key, score), best first, with each score multiplied by

    - SUBJECT_BOOST if the query names the memory's subject (``metadata["subject"]``). Why: what a
      person said is about that person, while another memory that merely mentions their name
      matches the name just as well;
    - TIME_BOOST if the query names a time (``timeparse.asked_window``: "in May 2023", "last week")
      and the memory's ``event_time``, or the time it was said (``said_at``), falls in it;
    - WHEN_BOOST if the query asks when (``timeparse.asks_when``) and the memory says when
      (``timeparse.states_time``: a date, "yesterday", "last week"): the answer to "when" is a
      memory that tells a time, not one that only shares the topic.
    """
    terms = frozenset(query_terms(query))
    window = asked_window(query, now)
    when = asks_when(query)

    def factor(item: MemoryItem) -> float:
        value = SUBJECT_BOOST if names_subject(terms, item.metadata.get(SUBJECT_KEY)) else 1.0
        if window is not None and (window.contains(item.event_time) or window.contains(item.said_at)):
            value *= TIME_BOOST
        if when and states_time(item.content):
            value *= WHEN_BOOST
        return value

    boosted = [(key, score * factor(items[key])) for key, score in fused]
    return sorted(boosted, key=lambda kv: (-kv[1], kv[0]))


def _first_version(
    content: str,
    scope: Scope,
    kind: str,
    metadata: dict[str, Any] | None,
    context: str,
    event_time: float | None,
) -> dict[str, Any]:
    """The row of a new memory's version 1 (a new id, written now)."""
    return version_row(
        memory_id=uuid.uuid4().hex,
        content=content,
        scope=scope,
        kind=kind,
        now=time.time(),
        metadata=metadata,
        context=context,
        event_time=event_time,
    )
