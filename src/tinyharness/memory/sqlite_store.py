"""The embedded memory store: one SQLite file in WAL mode, FTS5 full-text plus vectors.

Vectors are float32 blobs searched exactly in memory (``VectorIndex``: an int8 pass with an error
bound, then float32 for the few rows that can make the top k; from ``approx_from`` vectors an
approximate first look, kept only when its answer stands out); the index is built once
per process and then follows the table incrementally: every write stamps its rows with a rising
``seq``, and before a search the store reads the rows whose ``seq`` is newer than what it has seen
(one indexed ``MAX(seq)`` when nothing changed), so writes by other processes show up too.
Full-text search is FTS5's (porter stemming, BM25 with the context column weighted): from
TEXT_INDEX_FROM rows the process keeps FTS5's postings in memory (``text_index``, built in a
background thread, followed by ``seq`` like the vector index, checked against FTS5's own counts
before each use) and scores every match at once, with the same result as FTS5's ``bm25()`` row
by row (``exact=True`` keeps that reference path). Full-text and vector rankings are fused by
reciprocal rank fusion. Writes run in
``sqlitedb.write_transaction`` (``BEGIN IMMEDIATE``) with a busy timeout, so several processes
may share the file.

The file carries the run log's guards (``sqlitedb.open_database``): it is marked as a memory store
(``application_id``) with a schema version (``user_version``) and migrated up; a file this store
wrote before it was marked is recognised by its tables and columns. Anything else (another
program's database, a corrupt or truncated file, a renamed column, a newer version) is refused
with ``MemoryStoreError`` before anything is written to it.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..safefs import connect_sqlite
from ..sqlitedb import Schema, open_database, read_transaction, write_transaction
from . import index_file, text_file
from .background import Build
from .base import COLUMNS, MemoryItem, Scope, Status
from .embed import Embedder, Vectors
from .sqlbase import EXTERNAL_MODEL as EXTERNAL_MODEL  # re-exported
from .sqlbase import SQLStoreBase
from .text import (
    CONTEXT_WEIGHT,
    MAX_TERM_ROWS,
    VECTOR_WEIGHT,
    common_term_cap,
    content_coordination,
    fts5_term,
    index_text,
    query_phrases,
    query_terms,
)
from .text_index import FTS_TOKENIZE, IndexRefused, TextIndex, Tokenizer, averages
from .vector_index import APPROX_FROM, EXACT_BELOW, VectorIndex

SNAPSHOT_MIN_ROWS = EXACT_BELOW  # an index of fewer vectors is built from the rows (it is quick)
# Rows changed since the snapshot (and at least a tenth of the index) before close writes it
# again; until then a process reads the snapshot and those rows.
SNAPSHOT_EVERY = 1024
# Full-text rows from which a search ranks from postings held in memory (``text_index``) instead
# of FTS5's bm25() row by row: below it FTS5 is as fast (the index is built once there are more).
TEXT_INDEX_FROM = 4096

_SCHEMA = f"""
CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    root_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    content TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    agent_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'fact',
    metadata TEXT NOT NULL DEFAULT '{{}}',
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
    seq INTEGER NOT NULL,
    event_time REAL
);
CREATE INDEX memories_root ON memories(root_id, version);
CREATE INDEX memories_hash ON memories(content_hash) WHERE status = 'current';
CREATE INDEX memories_scope ON memories(user_id, agent_id, session_id) WHERE status = 'current';
CREATE INDEX memories_seq ON memories(seq);
CREATE VIRTUAL TABLE memory_fts USING fts5(
    body, context, tokenize = '{FTS_TOKENIZE}'
);
CREATE TABLE memory_vectors (
    memory_rowid INTEGER NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (memory_rowid, model)
);
"""

APPLICATION_ID = 0x74696E6D  # "tinm": marks a SQLite file as a tinyharness memory store
_MEMORY_COLUMNS = {
    "rowid", "id", "root_id", "version", "content", "user_id", "agent_id", "session_id", "kind",
    "metadata", "content_hash", "status", "valid_from", "valid_to", "previous_id", "superseded_by",
    "reason", "last_access_at", "access_count", "context", "seq",
}  # fmt: skip
_VECTOR_COLUMNS = {"memory_rowid", "model", "dim", "data"}
_FTS_COLUMNS = {"body", "context"}
_ADDED_IN = {2: "event_time"}  # columns of ``memories`` added by a migration, by schema version


class MemoryStoreError(ConfigError):
    """The memory store's file cannot be used: not a database, someone else's, corrupt, newer,
    or not writable (CLI exit code 2)."""


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def _recognise(db: sqlite3.Connection) -> int | None:
    """The schema version of a memory store with no mark (written before stores were marked),
    or None when its tables are not exactly ours. Its ``memories`` table decides; a store that
    lacks the search tables (they were made on first use) gets them from migration 1."""
    tables = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "memories" not in tables:
        return None
    if "memory_vectors" in tables and _columns(db, "memory_vectors") != _VECTOR_COLUMNS:
        return None
    if "memory_fts" in tables and _columns(db, "memory_fts") != _FTS_COLUMNS:
        return None
    complete = {"memory_fts", "memory_vectors"} <= tables
    columns = _columns(db, "memories")
    for version in range(len(MIGRATIONS), 0, -1):
        added = {name for at, name in _ADDED_IN.items() if at <= version}
        if columns == _MEMORY_COLUMNS | added:
            if complete:
                return version
            return 0 if version == 1 else None  # migration 1 adds the missing tables
    return None


def sqlite_path(url: str) -> Path:
    """The file for ``sqlite:///abs/path``, ``sqlite://rel/path`` or a plain path."""
    for prefix in ("sqlite:///", "sqlite://"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            return Path("/" + rest) if prefix == "sqlite:///" else Path(rest)
    return Path(url)


class SQLiteStore(SQLStoreBase):
    """``MemoryStore`` on one SQLite file. ``embedder=None``: full-text search only, unless
    vectors are passed to ``add``/``search`` (benchmarks do that, under ``vector_model``)."""

    _mark = "?"
    _order_tiebreak = "rowid"
    _table = "memories"
    # Backwards along the primary key (memory_rowid, model): rowids grow with every write.
    _newest_vector_sql = "SELECT model FROM memory_vectors ORDER BY memory_rowid DESC LIMIT 1"
    _global_text_statistics = True  # FTS5's bm25() counts terms over every scope

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        vector_model: str | None = None,
        candidates: int = 40,
        vector_weight: float = VECTOR_WEIGHT,
        snapshot_min_rows: int = SNAPSHOT_MIN_ROWS,
        snapshot_every: int = SNAPSHOT_EVERY,
        approx_from: int = APPROX_FROM,
        exact: bool = False,
        text_index_from: int = TEXT_INDEX_FROM,
    ) -> None:
        """``exact``: rank every full-text match with FTS5's bm25() and compare the query with
        every vector (the reference the faster ways are measured against); ``text_index_from``:
        see TEXT_INDEX_FROM."""
        self.path = sqlite_path(str(path))
        self.url = f"sqlite:///{self.path.resolve()}"
        self._init_common(embedder, vector_model, candidates, vector_weight)
        self._db = open_database(self.path, MEMORY_STORE, MemoryStoreError, timeout=30.0)
        self._seq: int | None = None
        self._index: VectorIndex | None = None
        self._seen_seq = -1
        self.approx_from = approx_from  # vectors from which the index asks its approximate one first
        # The index's snapshot file beside the database (``index_file``): written on close when
        # there is none (or it was refused), or once many rows changed since it was written.
        self.snapshot_min_rows = snapshot_min_rows
        self.snapshot_every = snapshot_every
        self.snapshot_refusals: list[str] = []  # why a snapshot was not used, oldest first
        self._snapshot_seq: int | None = None  # the seq of the snapshot on disk, if any
        self._changes = 0  # rows upserted or removed since that snapshot
        self._snapshot_coarse = False  # whether that snapshot holds the approximate index
        self._term_counts: dict[str, int] = {}  # see ``_useful_terms``
        self._counted_at = -1
        self._count_cap = 0
        self.exact = exact
        self.text_index_from = text_index_from
        self._text: TextIndex | None = None  # see ``_text_index``
        self._text_build: Build[TextIndex] | None = None
        self._text_refused_at: int | None = None  # the seq at which a build was refused
        self._tokenizer: Tokenizer | None = None
        self.text_index_builds = 0  # builds started (for tests)
        self.text_index_refusals: list[str] = []  # why a text index was dropped, oldest first
        # The postings' file beside the database (``text_file``): read by the first search that
        # wants the postings, written by ``close`` when there is none or many rows changed since.
        self._text_file_tried = False
        self._text_file_seq: int | None = None  # the seq of the file on disk, if any is trusted
        self._text_from_file: TextIndex | None = None  # the index read from it, until verified
        self._text_changes = 0  # rows applied to the postings since that file

    # --- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # The write lock comes first, so a read-then-write (``add_unique``) cannot race another process.
        with self._lock, self._errors(), write_transaction(self._db) as db:
            self._seq = None
            yield db

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            yield self._db

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """A database error found while working (a file damaged after it was opened) as one
        clear error, not a traceback."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"memory store {self.path} cannot be used: {exc}") from None

    def _write_seq(self, db: sqlite3.Connection) -> int:
        """The ``seq`` this write transaction stamps on every row it touches (one per transaction)."""
        if self._seq is None:
            self._seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM memories").fetchone()[0])
        return self._seq

    def _insert_row(self, db: sqlite3.Connection, row: dict[str, Any], vector: Vectors | None) -> None:
        """One version with its full-text entry and, given one, its vector."""
        row["seq"] = self._write_seq(db)
        rowid = db.execute(self._insert_sql(row), list(row.values())).lastrowid
        db.execute(
            "INSERT INTO memory_fts (rowid, body, context) VALUES (?, ?, ?)",
            (rowid, index_text(row["content"]), index_text(row["context"])),
        )
        if vector is not None:
            db.execute(
                "INSERT INTO memory_vectors (memory_rowid, model, dim, data) VALUES (?, ?, ?, ?)",
                (rowid, self.vector_model, int(vector.shape[0]), vector.astype(np.float32).tobytes()),
            )

    def _insert_version(
        self, db: sqlite3.Connection, row: dict[str, Any], vector: Vectors | None
    ) -> MemoryItem:
        self._insert_row(db, row, vector)
        item = self._get_in(db, row["id"])
        assert item is not None
        return item

    def _close_version(
        self,
        db: sqlite3.Connection,
        memory_id: str,
        status: Status,
        successor: str | None,
        reason: str,
    ) -> None:
        rowid = db.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        db.execute(
            "UPDATE memories SET status = ?, valid_to = ?, superseded_by = ?, "
            "reason = CASE WHEN ? = '' THEN reason ELSE ? END, seq = ? WHERE id = ?",
            (status, time.time(), successor, reason, reason, self._write_seq(db), memory_id),
        )
        db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))

    def _insert_many(
        self, db: sqlite3.Connection, rows: list[dict[str, Any]], vectors: Vectors | None
    ) -> None:
        for index, row in enumerate(rows):
            self._insert_row(db, row, vectors[index] if vectors is not None else None)

    # --- MemoryStore (the rest is SQLStoreBase's) ---------------------------------------------

    def close(self) -> None:
        with self._lock:
            index = self._index
            due = self._snapshot_seq is None or self._changes >= max(
                self.snapshot_every, len(index or ()) // 10
            )
            # An approximate index built since the snapshot (seconds at 100k rows) is worth keeping.
            built = index is not None and index.coarse_state() is not None and not self._snapshot_coarse
            if (
                index is not None
                and len(index) >= self.snapshot_min_rows
                and ((self._changes and due) or built)
            ):
                self._save_snapshot()
            self._save_text_file()
            self._db.close()
            if self._tokenizer is not None:
                self._tokenizer.close()
                self._tokenizer = None

    # --- search -----------------------------------------------------------------------------

    def _refresh_index(self) -> VectorIndex | None:
        """Bring the vector index up to date with rows written since it last looked."""
        latest = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        if self._index is not None and latest == self._seen_seq:
            return self._index
        if self._index is None:
            self._open_index(latest)
        else:
            self._apply_since(self._index, self._seen_seq)
        self._seen_seq = latest
        return self._index

    def _apply_since(self, index: VectorIndex, seq: int) -> None:
        """Apply to ``index`` the rows stamped after ``seq``: their vectors if current, else out."""
        rows = self._db.execute(
            "SELECT m.rowid, m.status, m.user_id, m.agent_id, m.session_id, v.data FROM memories m "
            "LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid AND v.model = ? WHERE m.seq > ?",
            (self.vector_model, seq),
        ).fetchall()
        for rowid, status, user, agent, session, data in rows:
            if status == "current" and data is not None and len(data) == 4 * index.dim:
                vector = np.frombuffer(data, dtype=np.float32)
                index.upsert(rowid, vector, Scope(user or None, agent or None, session or None))
            else:
                index.remove(rowid)
        self._changes += len(rows)

    def _open_index(self, latest: int) -> None:
        """The index from its snapshot plus the rows written since, when the snapshot holds up
        against the database; else built from the rows (and the snapshot written anew)."""
        snapshot = self._read_snapshot()
        if snapshot is not None:
            index, seq = snapshot.index, snapshot.seq
            self._changes = 0
            if seq > latest:
                self._refuse(f"it reflects seq {seq}, the database is at {latest}")
            elif snapshot.last_rowid and self._memory_id(snapshot.last_rowid) != snapshot.last_id:
                self._refuse(f"row {snapshot.last_rowid} holds another memory in the database")
            else:
                self._apply_since(index, seq)
                count = self._current_vectors(index.dim)
                if len(index) == count:
                    self._index, self._snapshot_seq = index, seq
                    self._snapshot_coarse = index.coarse_state() is not None
                    return
                self._refuse(f"{len(index)} vectors once brought up to date, the database has {count}")
        self._load_index(latest)
        # Every row is new to the snapshot on disk (none, or refused): ``close`` writes one. Not
        # here: the search that built the index would wait for the disk (measured: a fifth to
        # twice the build again on the loaded machine, bench/notes/memory-speed.md).
        self._changes = len(self._index) if self._index is not None else 0

    def _snapshot_name(self) -> str:
        return index_file.snapshot_name(self.path, self.vector_model)

    def _memory_id(self, rowid: int) -> str | None:
        row = self._db.execute("SELECT id FROM memories WHERE rowid = ?", (rowid,)).fetchone()
        return None if row is None else str(row[0])

    def _read_snapshot(self) -> index_file.Snapshot | None:
        try:
            return index_file.read(
                self.path.parent,
                self._snapshot_name(),
                self.vector_model,
                exact_below=EXACT_BELOW,
                approx_from=self.approx_from,
            )
        except index_file.SnapshotRefused as exc:
            self._refuse(str(exc))
            return None

    def _refuse(self, why: str) -> None:
        """Note why the snapshot was not used and delete it (the index is built from the rows)."""
        self.snapshot_refusals.append(why)
        self._snapshot_seq = None
        # (if it cannot be removed, it is written anew after the build, or refused again)
        with contextlib.suppress(OSError):
            index_file.remove(self.path.parent, self._snapshot_name())

    def _save_snapshot(self) -> None:
        """Write the index as it stands at ``_seen_seq``; a failure to write costs only the next
        process's build from the rows, so it never fails a search or a close."""
        if self._index is None or self._seen_seq < 0:
            return
        index = self._index
        last = index.last_key()
        last_id = (self._memory_id(last) or "") if last else ""
        data = index_file.encode(index, self._seen_seq, self.vector_model, (last, last_id))
        with contextlib.suppress(OSError):
            index_file.save(self.path.parent, self._snapshot_name(), data)
            self._snapshot_seq, self._changes = self._seen_seq, 0
            self._snapshot_coarse = index.coarse_state() is not None

    def _current_vectors(self, dim: int) -> int:
        """How many current memories have a vector of this store's model and ``dim``."""
        return int(
            self._db.execute(
                "SELECT count(*) FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid "
                "AND v.model = ? WHERE m.status = 'current' AND v.dim = ?",
                (self.vector_model, dim),
            ).fetchone()[0]
        )

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
        index = VectorIndex(dim, capacity=max(1024, len(rows) * 5 // 4), approx_from=self.approx_from)
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        index.add_many(keys, matrix, [Scope(r[1] or None, r[2] or None, r[3] or None) for r in rows])
        self._index = index

    def _text_ranking(self, db: sqlite3.Connection, query: str, scope: Scope, limit: int) -> list[int]:
        """BM25's best ``limit`` rows, reordered by BM25 times ``content_coordination``: from the
        postings in memory once the store is large and they are built (``_text_index``), else
        (and with ``exact``) from FTS5 row by row. Both give the same rows in the same order."""
        index = None if self.exact else self._text_index(db)
        if index is not None:
            ranked = self._indexed_text_ranking(db, index, query, scope, limit)
            if ranked is not None:
                return ranked
        return self._fts5_text_ranking(db, query, scope, limit)

    # --- the full-text postings in memory (``text_index``) -----------------------------------

    def _text_index(self, db: sqlite3.Connection) -> TextIndex | None:
        """The postings, up to date with the table, or None while there are none to trust.

        Built in a background thread from FTS5 (the first search of a large store starts it;
        FTS5 ranks meanwhile), then brought up to date before each search with the rows stamped
        since (every write, by any process, stamps its rows with a new ``seq``). Before each use
        its row count and token totals are compared with FTS5's own (its averages record, one
        row): derived data that disagrees with the table (a torn update, a database put back
        from a copy, a write that did not stamp its rows) is dropped and built again."""
        rows, body, context = averages(db)
        latest = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        fresh = self._take_text_build(latest)
        index = self._text
        wanted = rows >= self.text_index_from
        if index is None and wanted and not self._text_file_tried and self._text_build is None:
            self._text_file_tried = True
            index = self._text = self._read_text_file(latest)
        if index is None:
            if self._text_build is None and wanted and self._text_refused_at != latest:
                self._start_text_build()
            return None
        why = ""
        if latest < index.seq:
            why = f"it reflects seq {index.seq}, the database is at {latest}"
        elif latest > index.seq:
            try:
                self._apply_text_since(db, index, latest)
            except IndexRefused as exc:
                why = str(exc)
        if not why and (index.rows, *index.tokens) != (rows, body, context):
            why = f"{index.rows} rows and {index.tokens} tokens, FTS5 counts {rows} and {(body, context)}"
        if why:
            self.text_index_refusals.append(why)
            self._text = None
            if self._text_from_file is index:
                self._refuse_text_file(f"once brought up to date: {why}")
            if fresh is index:
                self._text_refused_at = latest  # built just now and wrong: not again until a write
            elif self._text_build is None:
                self._start_text_build()
            return None
        self._text_from_file = None  # (verified)
        if index.worn() and self._text_build is None:
            self._start_text_build()  # a fresh copy without the removed rows; this one serves meanwhile
        return index

    def _take_text_build(self, latest: int) -> TextIndex | None:
        """The background build's index once it is done (installed), else None."""
        build = self._text_build
        if build is None or not build.done():
            return None
        self._text_build = None
        index = build.result()
        if index is None:
            self.text_index_refusals.append(f"the build failed: {build.error}")
            self._text_refused_at = latest  # not again until something is written
            return None
        self._text = index
        self._text_file_seq = None  # (the file on disk, if any, is older: ``close`` writes it)
        return index

    def _start_text_build(self) -> None:
        self.text_index_builds += 1
        self._text_build = Build(self._build_text_index, "tinyharness-text-index")

    def _build_text_index(self) -> TextIndex:
        """The postings as one consistent state of the table (a read transaction on a connection
        of the build's own: it runs in the background thread)."""
        db, _ = connect_sqlite(self.path, create=False, timeout=30.0, isolation_level=None)
        try:
            with read_transaction(db):
                seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
                return TextIndex.build(db, seq, CONTEXT_WEIGHT)
        finally:
            db.close()

    def _apply_text_since(self, db: sqlite3.Connection, index: TextIndex, latest: int) -> None:
        """Apply to ``index`` the rows stamped after its seq: a current row it lacks is added
        (its text split by FTS5's tokenizer), a closed one it holds is removed."""
        changed = db.execute(
            "SELECT rowid, status, user_id, agent_id, session_id FROM memories "
            "WHERE seq > ? AND seq <= ? ORDER BY rowid",
            (index.seq, latest),
        ).fetchall()
        self._text_changes += len(changed)
        added: dict[int, Scope] = {}
        for rowid, status, user, agent, session in changed:
            if status != "current":
                index.remove(rowid)
            elif not index.has(rowid):
                added[rowid] = Scope(user or None, agent or None, session or None)
        rowids = list(added)
        new_rows: list[tuple[int, Scope, list[tuple[str, int]]]] = []
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            texts = db.execute(
                f"SELECT rowid, body, context FROM memory_fts WHERE rowid IN ({marks}) ORDER BY rowid", chunk
            ).fetchall()
            by_row: dict[int, list[tuple[str, int]]] = {rowid: [] for rowid, _, _ in texts}
            for term, key in self._fts_tokenizer().instances(texts):
                by_row[key >> 21].append((term, key))
            new_rows += [(rowid, added[rowid], found) for rowid, found in by_row.items()]
        index.add(new_rows)
        index.seq = latest

    def _text_file_name(self) -> str:
        return text_file.snapshot_name(self.path)

    def _read_text_file(self, latest: int) -> TextIndex | None:
        """The postings from their file beside the database, when it is intact and describes
        this database (not newer, the same memory at its highest row); else None (and the file
        deleted). ``_text_index`` then applies the rows written since and compares the result
        with FTS5's counters before using it."""
        try:
            found = text_file.read(self.path.parent, self._text_file_name(), CONTEXT_WEIGHT)
        except index_file.SnapshotRefused as exc:
            self._refuse_text_file(str(exc))
            return None
        if found is None:
            return None
        index, last_rowid, last_id = found
        if index.seq > latest:
            self._refuse_text_file(f"it reflects seq {index.seq}, the database is at {latest}")
            return None
        if last_rowid and self._memory_id(last_rowid) != last_id:
            self._refuse_text_file(f"row {last_rowid} holds another memory in the database")
            return None
        self._text_file_seq, self._text_changes = index.seq, 0
        self._text_from_file = index
        return index

    def _refuse_text_file(self, why: str) -> None:
        """Note why the postings' file was not used and delete it (the postings are built from FTS5)."""
        self.text_index_refusals.append(f"the postings file: {why}")
        self._text_file_seq = None
        self._text_from_file = None
        with contextlib.suppress(OSError):
            index_file.remove(self.path.parent, self._text_file_name())

    def _save_text_file(self) -> None:
        """Write the postings (as verified by the last search) when there is no trusted file or
        many rows changed since it; a failure to write costs only the next process's build."""
        index = self._text
        if index is None or self._text_from_file is index:
            return
        due = self._text_file_seq is None or self._text_changes >= max(self.snapshot_every, index.rows // 10)
        if not due:
            return
        last = index.last_rowid()
        with contextlib.suppress(OSError, sqlite3.Error):
            data = text_file.encode(index, (last, (self._memory_id(last) or "") if last else ""))
            text_file.save(self.path.parent, self._text_file_name(), data)
            self._text_file_seq, self._text_changes = index.seq, 0

    def _fts_tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = Tokenizer()
        return self._tokenizer

    def wait_for_indexes(self, timeout: float | None = None) -> bool:
        """Wait for the background builds under way (benchmarks and tests: a search never waits);
        whether they are done."""
        build = self._text_build
        done = build.wait(timeout) if build is not None else True
        if build is not None and done:
            with self._read() as db:
                self._text_index(db)  # installs it
        index = self._index
        return (index.wait_for_coarse(timeout) if index is not None else True) and done

    def _indexed_text_ranking(
        self, db: sqlite3.Connection, index: TextIndex, query: str, scope: Scope, limit: int
    ) -> list[int] | None:
        """``_fts5_text_ranking`` over the postings in memory: the same terms kept, phrases,
        matches, newest floor and scores; the coordination factor of the best ``limit`` rows
        from FTS5's ``highlight`` (on those rows only). None for a query whose words FTS5 splits
        otherwise than ``query_terms`` (FTS5 ranks it)."""
        tokenizer = self._fts_tokenizer()
        raw = query_terms(query)
        tokens = {term: tokenizer.tokens(term) for term in raw}
        if any(len(found) != 1 for found in tokens.values()):
            return None
        cap = common_term_cap(index.last_rowid())
        kept = [term for term in raw if index.matches(tokens[term][0]) <= cap]
        all_common = not kept
        terms = kept or raw
        if not terms:
            return []
        pairs = [p for p in query_phrases(query) if all(word in terms for word in p.split())]
        pair_tokens = [tokenizer.tokens(pair) for pair in pairs]
        if any(
            found != tokens[a] + tokens[b]
            for found, (a, b) in zip(pair_tokens, (p.split() for p in pairs), strict=True)
        ):
            return None
        words = [tokens[term] for term in terms]
        passes = [(True, words, terms), (False, words + pair_tokens, terms + pairs)]
        for every, phrases, spelled in passes if all_common else passes[1:]:
            scored = index.rank(
                phrases, every=every, scope=scope, newest=MAX_TERM_ROWS if all_common else None, limit=limit
            )
            if scored:
                # highlight() marks the instances of the query's phrases in the content column,
                # the same under AND as under OR; a row whose content holds none gets no marks
                # either way. So the content alone, under OR: the context is not split again.
                # How many query words each row's content holds: from the postings where they
                # prove it (``TextIndex.content_terms``), else from highlight() on those rows.
                known = index.content_terms(
                    [token for (token,) in words], pair_tokens, [rowid for rowid, _ in scored], len(terms)
                )
                unknown = [rowid for (rowid, _), count in zip(scored, known, strict=True) if count is None]
                marked: dict[int, str] = {}
                if unknown:
                    match = " OR ".join(map(fts5_term, spelled))
                    marks = ",".join(str(rowid) for rowid in unknown)
                    # The full-text table's text of a row is ``index_text`` of the row's (``_insert_row``).
                    texts = [
                        (rowid, index_text(content), "")
                        for rowid, content in db.execute(
                            f"SELECT rowid, content FROM memories WHERE rowid IN ({marks})"
                        )
                    ]
                    marked = tokenizer.highlighted(texts, match)
                coordination = [
                    content_coordination(
                        count if count is not None else marked_terms(marked.get(rowid, ""), len(terms)),
                        len(terms),
                    )
                    for (rowid, _), count in zip(scored, known, strict=True)
                ]
                ranked = sorted(zip(scored, coordination, strict=True), key=lambda rc: rc[0][1] * rc[1])
                return [row[0] for row, _ in ranked]
        return []

    def _fts5_text_ranking(self, db: sqlite3.Connection, query: str, scope: Scope, limit: int) -> list[int]:
        """BM25's best ``limit`` rows, reordered by BM25 times ``content_coordination``, by FTS5
        (``bm25()`` and ``highlight()`` on every match: the reference ranking)."""
        terms, all_common = self._useful_terms(query_terms(query))
        if not terms:
            return []
        where, params = self._scope_where(db, scope)
        # highlight() marks the query terms found in the content column: counting them costs no
        # extra query (a MATCH per term on the content column was 1.7x slower at 100k memories).
        sql = (
            "SELECT memory_fts.rowid, bm25(memory_fts, 1.0, ?), highlight(memory_fts, 0, char(1), char(2)) "
            f"FROM memory_fts{self._JOIN if where else ''} WHERE memory_fts MATCH ? AND memory_fts.rowid >= ?"
            f"{''.join(' AND ' + w for w in where)} ORDER BY bm25(memory_fts, 1.0, ?) LIMIT ?"
        )
        # Only common terms: memories holding all of them (else any), newest MAX_TERM_ROWS only.
        # Pairs of kept terms side by side in the question are searched as phrases too: BM25 scores
        # each as one more (rare) term, so the words in the question's order rank first.
        pairs = [p for p in query_phrases(query) if all(word in terms for word in p.split())]
        matches = [" AND ".join(map(fts5_term, terms)), " OR ".join(map(fts5_term, terms + pairs))]
        for match in matches if all_common else matches[1:]:
            floor = self._newest_floor(db, match, where, params) if all_common else 0
            scored = db.execute(
                sql, [CONTEXT_WEIGHT, match, floor, *params, CONTEXT_WEIGHT, limit]
            ).fetchall()
            if scored:
                # bm25() is negative, lower is better: a larger factor makes it more negative.
                coordination = [
                    content_coordination(marked_terms(r[2], len(terms)), len(terms)) for r in scored
                ]
                ranked = sorted(zip(scored, coordination, strict=True), key=lambda rc: rc[0][1] * rc[1])
                return [row[0] for row, _ in ranked]
        return []

    _JOIN = " JOIN memories m ON m.rowid = memory_fts.rowid"

    def _scope_where(self, db: sqlite3.Connection, scope: Scope) -> tuple[list[str], list[str]]:
        """The conditions (on ``memories m``) that keep a full-text match in ``scope``; none when
        every current memory is in it. Why: the full-text table holds exactly the current
        memories, so then no match needs its row looked up (one lookup per match was most of the
        cost of a search of common words at 100k memories). Whether any current memory lies
        outside the scope is a few probes of the scope index, when the scope's fields are a
        prefix of the index's (user, then agent, then session); otherwise the conditions stay."""
        where, params = self._scope_sql(scope, prefix="m.")
        values = [scope.user, scope.agent, scope.session]
        given = [value is not None for value in values]
        if not where or given != sorted(given, reverse=True):
            return ([*where, "m.status = 'current'"] if where else []), params
        probes: list[str] = []
        probe_params: list[str] = []
        for depth, column in enumerate(("user_id", "agent_id", "session_id")[: len(params)]):
            prefix = [f"{c} = ?" for c in ("user_id", "agent_id", "session_id")[:depth]]
            for op in ("<", ">"):
                condition = " AND ".join([*prefix, f"{column} {op} ?", "status = 'current'"])
                probes.append(f"EXISTS (SELECT 1 FROM memories WHERE {condition})")
                probe_params += [*params[:depth], params[depth]]
        outside = db.execute(f"SELECT {' OR '.join(probes)}", probe_params).fetchone()[0]
        return ([*where, "m.status = 'current'"], params) if outside else ([], [])

    def _newest_floor(self, db: sqlite3.Connection, match: str, where: list[str], params: list[str]) -> int:
        """The smallest rowid among the newest MAX_TERM_ROWS memories in scope that ``match``
        (``where``, ``params``: from ``_scope_where``)."""
        row = db.execute(
            f"SELECT memory_fts.rowid FROM memory_fts{self._JOIN if where else ''} "
            # ORDER BY memory_fts.rowid (the same as m.rowid): FTS5 walks its doclist in that order
            # and stops at the offset; ordered by m.rowid, every match was sorted first (2.2x slower
            # at 100k memories).
            f"WHERE memory_fts MATCH ?{''.join(' AND ' + w for w in where)} "
            "ORDER BY memory_fts.rowid DESC LIMIT 1 OFFSET ?",
            [match, *params, MAX_TERM_ROWS - 1],
        ).fetchone()
        return int(row[0]) if row else 0

    def _useful_terms(self, terms: list[str]) -> tuple[list[str], bool]:
        """``terms`` without those in more than COMMON_SHARE of the memories (counted up to that
        cap, which is cheap: FTS5 walks a doclist without ranking it), and whether all were.

        The counts are kept between searches while the store's latest ``seq`` is unchanged:
        every write, by any process, stamps the rows it touches with a new one, so an equal
        ``seq`` means the full-text table is as it was counted (a common word was counted up to
        5,001 matches per search, about a tenth of a search at 100k memories)."""
        latest = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        if latest != self._counted_at or len(self._term_counts) > 10_000:
            self._term_counts.clear()
            self._counted_at = latest
            total = int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM memory_fts").fetchone()[0])
            self._count_cap = common_term_cap(total)
        cap = self._count_cap
        for term in terms:
            if term not in self._term_counts:
                self._term_counts[term] = self._db.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
                    (fts5_term(term), cap + 1),
                ).fetchone()[0]
        kept = [term for term in terms if self._term_counts[term] <= cap]
        return (kept, False) if kept else (terms, True)

    def _vector_ranking(
        self, db: sqlite3.Connection, qvec: Vectors, scope: Scope, limit: int
    ) -> list[tuple[int, float]]:
        index = self._refresh_index()
        if index is None or index.dim != qvec.shape[0]:
            return []
        return index.search(qvec, scope, limit, approximate=not self.exact)

    def _rows_by_key(self, db: sqlite3.Connection, keys: list[str]) -> dict[str, Sequence[Any]]:
        rowids = [int(key) for key in keys]
        marks = ",".join("?" * len(rowids))
        rows = db.execute(f"SELECT {COLUMNS}, rowid FROM memories WHERE rowid IN ({marks})", rowids)
        return {str(r[-1]): r for r in rows}


_MARKED = re.compile("\x01(.*?)\x02", re.S)


def marked_terms(highlighted: str, cap: int) -> int:
    """How many distinct query terms FTS5's ``highlight`` marked (an inflection of a term counted
    again is capped by the number of terms). A marked phrase counts its words."""
    return min(len({word.casefold() for span in _MARKED.findall(highlighted) for word in span.split()}), cap)


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


HASH_SCOPE_COLUMNS = "content_hash, user_id, agent_id, session_id"

MIGRATIONS: list[list[str]] = [
    # 1: the first schema (the columns added later are left out here, and added by their step;
    # IF NOT EXISTS: an unmarked store may hold some of these tables already)
    [
        statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")
        .replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS")
        .replace("CREATE VIRTUAL TABLE", "CREATE VIRTUAL TABLE IF NOT EXISTS")
        for statement in _split(_SCHEMA.replace(",\n    event_time REAL", ""))
    ],
    # 2: when what a memory says happened
    ["ALTER TABLE memories ADD COLUMN event_time REAL"],
    # 3: the de-duplication lookup (``find_by_hash``, ``add_unique``) by hash and scope in one
    # index: with the hash alone beside the scope index, SQLite's planner chose the scope index
    # and read every current memory of the user (120 ms a lookup at 67,000 of them).
    [
        f"CREATE INDEX IF NOT EXISTS memories_hash_scope ON memories({HASH_SCOPE_COLUMNS}) "
        "WHERE status = 'current'",
        "DROP INDEX IF EXISTS memories_hash",
    ],
]
MEMORY_STORE = Schema("memory store", APPLICATION_ID, MIGRATIONS, adopt=_recognise)
