"""The PostgreSQL store's vectors held in the searching process, as 8-bit codes, and kept in step
with the database through a change log.

Why: pgvector's HNSW walk finds 24% of the exact top 40 on random 384-d vectors at 100k memories
(ef_search 200, 34 ms; 51% at ef_search 800, 100 ms), and its exact scan takes 300-900 ms there
(bench/notes/memory-speed-pg.md). The SQLite store's int8 pass (``VectorIndex._candidates``: one
SIMD scan of int8 codes with a proven bound on each row's error) reads a quarter of the float32
bytes and leaves a few hundred candidates that can still reach the top; the database then
computes their exact distances with the same ``<=>`` as its exact scan, so the answer is the
exact scan's, float for float and in the same order (distance, then ``seq``).

Kept in step without trusting anything but the database:

- triggers on the memories and vectors tables write the id of every memory whose vector or
  status changed to ``<prefix>vector_changes`` with the writing transaction's id (``xid8``), in
  the writer's own transaction (a writer killed mid-way leaves neither its rows nor their log);
- the cache remembers the database snapshot (``pg_current_snapshot()``) it reflects. A search
  reads, in the same statement as the snapshot it now sees, the ids logged by transactions not
  visible in the remembered one: exactly the changes committed since, whatever order writers
  committed in. Those memories are read again as they now are (added, replaced or removed);
- log rows are deleted once old (``PRUNE_AGE``), and the newest pruned transaction id is kept:
  a cache whose snapshot is older than that (a process idle for long) loads every vector again
  instead of trusting the log.
"""

from __future__ import annotations

import contextlib
import struct
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import Scope
from .vector_index import VectorIndex


# How far pgvector's cosine (float32 sums of products and of squares, then a float64 division; the
# query a float32 parsed from 7 significant digits) may lie from the cosine of the same vectors
# in exact arithmetic: each float32 sum of n terms is off by at most n units of rounding (2**-24)
# of the sum of |terms|, which for the dot product is at most |a| |b|; three such sums. The held
# vectors are rounded to float32 once more after normalizing (1e-6 covers it and the query's
# digits). The candidates keep every row within twice this of the top.
def score_tolerance(dim: int) -> float:
    return 3 * dim * 2.0**-24 + 1e-6


PRUNE_AGE = 3600.0  # seconds a change stays in the log
PRUNE_EVERY = 600.0  # seconds between one process's prunes


def log_schema(prefix: str) -> list[str]:
    """The change log and the triggers that fill it, on the memories and vectors tables."""
    log = f"{prefix}vector_changes"
    ids = {
        "vectors_add": "SELECT memory_id FROM new_rows",
        "vectors_remove": "SELECT memory_id FROM old_rows",
        "vectors_update": "SELECT memory_id FROM new_rows UNION SELECT memory_id FROM old_rows",
        # A version closed, or any change of status or scope (``touch`` changes neither: no row).
        "memories_update": (
            "SELECT n.id FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.status <> n.status "
            "OR o.user_id <> n.user_id OR o.agent_id <> n.agent_id OR o.session_id <> n.session_id"
        ),
    }
    events = {
        "vectors_add": ("memory_vectors", "INSERT", "NEW TABLE AS new_rows"),
        "vectors_remove": ("memory_vectors", "DELETE", "OLD TABLE AS old_rows"),
        "vectors_update": ("memory_vectors", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        "memories_update": ("memories", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
    }
    statements = [
        f"""CREATE TABLE IF NOT EXISTS {log} (
            xid XID8 NOT NULL DEFAULT pg_current_xact_id(),
            at TIMESTAMPTZ NOT NULL DEFAULT now(),
            memory_id TEXT NOT NULL
        )""",
        f"CREATE INDEX IF NOT EXISTS {log}_xid ON {log} (xid)",
        f"CREATE TABLE IF NOT EXISTS {log}_pruned (one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one), "
        "newest XID8 NOT NULL)",
    ]
    for name, select in ids.items():
        table, event, tables = events[name]
        function = f"{prefix}vector_changes_{name}"
        statements += [
            f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"INSERT INTO {log} (memory_id) {select}; RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {function} ON {prefix}{table}",
            f"CREATE TRIGGER {function} AFTER {event} ON {prefix}{table} REFERENCING {tables} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        ]
    return statements


LOG_TRIGGERS = ("vectors_add", "vectors_remove", "vectors_update", "memories_update")


class VectorCache:
    """The current ``dim``-sized vectors of one model in a store (``table_prefix``), as a
    ``VectorIndex`` keyed by the memories' ``seq``; ``candidates`` holds every row of the store's
    exact scan's answer. Shared by the store's threads (one lock)."""

    def __init__(self, table_prefix: str, model: str, dim: int) -> None:
        self._t = table_prefix
        self.model = model
        self.dim = dim
        self._index: VectorIndex | None = None
        self._snapshot: str | None = None  # the database snapshot the index reflects
        self._seq: dict[str, int] = {}  # memory id -> seq, of the rows in the index
        self._lock = threading.Lock()
        self.full_loads = 0  # (for tests)

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def _vector_filter(self) -> tuple[str, list[Any]]:
        return f"v.model = %s AND vector_dims(v.embedding) = {self.dim}", [self.model]

    def sync(self, conn: Any, seen: str | None = None) -> None:
        """Bring the index to the database's current state (``conn``: autocommit, no transaction
        open). ``seen``: a snapshot the caller's connection read a moment ago (the text half's
        statement reads one): when it is the one the index reflects, no transaction has ended
        since, and the index is current without a statement of its own."""
        with self._lock:
            if self._index is None or self._snapshot is None:
                self._load(conn)
                return
            if seen is not None and seen == self._snapshot:
                return
            log = f"{self._t}vector_changes"
            row = conn.execute(
                f"SELECT pg_current_snapshot()::text, (SELECT newest FROM {log}_pruned) "
                f">= pg_snapshot_xmin(%s::pg_snapshot), ARRAY(SELECT DISTINCT memory_id FROM {log} "
                "WHERE xid >= pg_snapshot_xmin(%s::pg_snapshot) AND NOT pg_visible_in_snapshot(xid, "
                "%s::pg_snapshot))",
                (self._snapshot, self._snapshot, self._snapshot),
            ).fetchone()
            snapshot, stale, changed = row
            if stale:  # changes it has not seen were pruned from the log
                self._load(conn)
                return
            if changed:
                self._apply(conn, list(changed))
            self._snapshot = snapshot

    def _load(self, conn: Any) -> None:
        """Every current vector, read in one snapshot that the index then reflects."""
        where, params = self._vector_filter()
        keys: list[int] = []
        ids: list[str] = []
        scopes: list[Scope] = []
        matrix = np.zeros((1024, self.dim), dtype=np.float32)  # grown by doubling
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            snapshot = conn.execute("SELECT pg_current_snapshot()::text").fetchone()[0]
            with (
                conn.cursor() as cur,
                cur.copy(
                    f"COPY (SELECT m.seq, m.id, m.user_id, m.agent_id, m.session_id, v.embedding FROM "
                    f"{self._t}memory_vectors v JOIN {self._t}memories m ON m.id = v.memory_id "
                    f"WHERE m.status = 'current' AND {where}) TO STDOUT (FORMAT BINARY)",
                    params,
                ) as copy,
            ):
                copy.set_types(["int8", "text", "text", "text", "text", "bytea"])
                for seq, memory_id, user, agent, session, embedding in copy.rows():
                    if len(keys) == len(matrix):
                        matrix = np.resize(matrix, (2 * len(matrix), self.dim))
                    matrix[len(keys)] = _vector(embedding, self.dim)
                    keys.append(seq)
                    ids.append(memory_id)
                    scopes.append(Scope(user, agent, session))
        matrix = matrix[: len(keys)]
        usable = np.zeros(len(keys), dtype=bool)
        for begin in range(0, len(keys), 4096):  # in blocks: a float64 copy of it all is 8 bytes a value
            usable[begin : begin + 4096] = _normalize(matrix[begin : begin + 4096])
        index = VectorIndex(self.dim, capacity=max(1024, len(keys) * 5 // 4), approx_from=2**62)
        index.add_many(
            np.array(keys, dtype=np.int64)[usable],
            matrix if usable.all() else matrix[usable],
            [scope for scope, ok in zip(scopes, usable.tolist(), strict=True) if ok],
        )
        self._index = index
        self._seq = {memory_id: seq for memory_id, seq in zip(ids, keys, strict=True)}
        self._snapshot = snapshot
        self.full_loads += 1

    def _apply(self, conn: Any, changed: list[str]) -> None:
        """Read the changed memories as they are now: current with a vector, else gone."""
        assert self._index is not None
        where, params = self._vector_filter()
        found = conn.execute(
            f"SELECT m.id, m.seq, m.user_id, m.agent_id, m.session_id, v.embedding::text FROM "
            f"{self._t}memories m JOIN {self._t}memory_vectors v ON v.memory_id = m.id AND {where} "
            "WHERE m.id = ANY(%s) AND m.status = 'current'",
            [*params, changed],
        ).fetchall()
        for memory_id in changed:
            seq = self._seq.pop(memory_id, None)
            if seq is not None:
                self._index.remove(seq)
        for memory_id, seq, user, agent, session, text in found:
            vector = np.array(text.strip("[]").split(","), dtype=np.float32)[None]
            if _normalize(vector)[0]:
                self._index.upsert(seq, vector[0], Scope(user, agent, session))
                self._seq[memory_id] = seq

    def candidates_as_held(
        self, query: npt.NDArray[np.float32], scope: Scope, limit: int
    ) -> tuple[str | None, list[int] | None]:
        """``candidates`` from the vectors as they are held now, without reading the database
        first, and the snapshot they reflect: the caller uses them only if the database's
        snapshot turns out to be that one (nothing was written since)."""
        with self._lock:
            snapshot = self._snapshot
            return snapshot, self.candidates(query, scope, limit, locked=True)

    def candidates(
        self, query: npt.NDArray[np.float32], scope: Scope, limit: int, *, locked: bool = False
    ) -> list[int] | None:
        """The ``seq`` of every vector in ``scope`` that may be among the ``limit`` nearest by the
        database's cosine distance (its exact scan), or None when the scope holds ``limit`` or
        fewer vectors here (the exact scan is then as cheap, and sees any it cannot score)."""
        q = np.asarray(query, dtype=np.float64)
        norm = float(np.linalg.norm(q))
        if norm == 0 or not np.isfinite(norm):
            return None
        q32 = (q / norm).astype(np.float32)
        with contextlib.nullcontext() if locked else self._lock:
            index = self._index
            if index is None:
                return None
            keys = index.candidate_keys(q32, scope, limit, 2 * score_tolerance(self.dim))
            return None if keys is None else keys.tolist()


def prune(conn: Any, prefix: str, age: float) -> None:
    """Delete the log's rows older than ``age`` seconds whose transactions have ended, and keep
    the newest transaction id deleted (caches older than it load everything again)."""
    log = f"{prefix}vector_changes"
    conn.execute(
        f"WITH gone AS (DELETE FROM {log} WHERE at < now() - make_interval(secs => %s) AND xid < "
        "pg_snapshot_xmin(pg_current_snapshot()) RETURNING xid), newest AS (SELECT max(xid) AS xid "
        f"FROM gone) INSERT INTO {log}_pruned (one, newest) SELECT true, xid FROM newest "
        "WHERE xid IS NOT NULL "
        f"ON CONFLICT (one) DO UPDATE SET newest = greatest({log}_pruned.newest, excluded.newest)",
        (age,),
    )


def _vector(data: bytes, dim: int) -> npt.NDArray[np.float32]:
    """pgvector's binary form: int16 dimension, int16 unused, then big-endian float4s."""
    (size,) = struct.unpack_from("!h", data)
    if size != dim:
        raise ValueError(f"a vector of {size} dimensions where {dim} were selected")
    return np.frombuffer(data, dtype=">f4", count=dim, offset=4)


def _normalize(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Scale the rows to unit length in place (in float64); which rows could be (a zero or
    non-finite row has no cosine: the database's distance is NaN there)."""
    as64 = matrix.astype(np.float64)
    norms = np.linalg.norm(as64, axis=1)
    usable: npt.NDArray[np.bool_] = np.isfinite(norms) & (norms > 0)
    matrix[usable] = (as64[usable] / norms[usable, None]).astype(np.float32)
    return usable
