"""FTS5's BM25 over postings held in memory, so a full-text search does not rank every match row by row.

SQLite's FTS5 ranks a query with ``bm25()`` one matching row at a time (the ~3,000 matches of a
query at 100k memories cost tens of milliseconds). ``TextIndex`` holds the same postings as numpy
arrays and computes the same score for every match at once:

- the postings come from FTS5 itself (its ``fts5vocab`` instance table: term, row, column,
  position), and the text of a row written later is split by FTS5's own tokenizer in an
  in-memory table (``Tokenizer``), so the terms are FTS5's, not a second implementation's;
- the score is FTS5's ``bm25()`` step by step (k1 = 1.2, b = 0.75, the IDF floor, a phrase's
  frequency summed over its instances column weight by column weight in FTS5's order), with the
  row count and token total FTS5 itself keeps (its "averages" record), so the scores are the same
  numbers and ties fall the same way (by rowid);
- a phrase of two words counts the places where the second word's position follows the first's
  in the same column, as FTS5 does.

The index is derived data: the store checks it against FTS5's own statistics before every use
and builds it again from FTS5 when they differ (see ``SQLiteStore``).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import Scope

FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"  # the memory store's FTS5 tokenizer
K1, B = 1.2, 0.75  # FTS5's bm25() constants
# An instance is one int64: rowid << 21 | column << 20 | position (a memory of over a million
# tokens is not indexed: ``build`` and ``add`` refuse it and the store ranks with FTS5).
_DOC_SHIFT, _COL_BIT, _MAX_POSITION = 21, 1 << 20, (1 << 20) - 1
_INSTANCE_SQL = "(doc << 21) | (iif(col = 'body', 0, 1) << 20) | offset"
_FREQ_TABLE = 64  # frequencies of up to this many instances per column are looked up
# Terms whose words case-fold as FTS5 folds them (lower-case ASCII letters and digits, from
# words with or without diacritics, and CJK and Hangul, which have no case): distinct terms of
# these come from words distinct once case-folded (see ``content_terms``).
_PLAIN = re.compile("[0-9a-z\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
WORN_AFTER = 1024  # removed rows kept in the postings before they are built again (see ``worn``)


class IndexRefused(ValueError):
    """The postings cannot be built or kept (a huge row, rowids out of order): rank with FTS5."""


def averages(db: sqlite3.Connection, table: str = "memory_fts") -> tuple[int, int, int]:
    """FTS5's own statistics of ``table``: rows, and tokens in its first and second column
    (its "averages" record, row 1 of the ``_data`` table: SQLite varints)."""
    row = db.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0, 0
    values = _varints(bytes(row[0]))
    values += [0] * (3 - len(values))
    return values[0], values[1], values[2]


def _varints(data: bytes) -> list[int]:
    values, at = [], 0
    while at < len(data):
        value = 0
        for index in range(9):
            byte = data[at]
            at += 1
            if index == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


def _frequency_table(weight: float) -> npt.NDArray[np.float64]:
    """FTS5's frequency of a phrase with ``i`` instances in the content and ``j`` in the context:
    ``i`` ones, then ``j`` times ``weight``, added one by one (floating point is not associative:
    this is the same sum, so the same score)."""
    table = np.zeros((_FREQ_TABLE, _FREQ_TABLE), dtype=np.float64)
    for body in range(_FREQ_TABLE):
        value = float(body)
        for context in range(_FREQ_TABLE):
            table[body, context] = value
            value += weight
    return table


def _frequencies(
    body: npt.NDArray[np.int64], context: npt.NDArray[np.int64], weight: float, table: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    small = (body < _FREQ_TABLE) & (context < _FREQ_TABLE)
    if small.all():
        return table[body, context]
    freq = np.empty(len(body), dtype=np.float64)
    freq[small] = table[body[small], context[small]]
    for at in np.flatnonzero(~small).tolist():
        value = float(body[at])
        for _ in range(int(context[at])):
            value += weight
        freq[at] = value
    return freq


class Tokenizer:
    """FTS5's tokenizer (``FTS_TOKENIZE``), run in an in-memory table: the terms of a text exactly
    as the store's full-text table sees them. One thread at a time."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        # Its text in a plain table (external content): emptying it is then one 'delete-all',
        # not a delete that splits every row again (0.3 against 0.5 ms for 40 rows).
        self._db.execute("CREATE TABLE c (rowid INTEGER PRIMARY KEY, body TEXT, context TEXT)")
        self._db.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(body, context, content = 'c', tokenize = '{FTS_TOKENIZE}')"
        )
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, text: str) -> tuple[str, ...]:
        """The terms of ``text``, in order (cached: query words repeat)."""
        cached = self._cache.get(text)
        if cached is None:
            found = self.instances([(1, text, "")])
            cached = tuple(term for term, _ in sorted(found, key=lambda tk: tk[1]))
            if len(self._cache) > 50_000:
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def instances(self, rows: Sequence[tuple[int, str, str]]) -> list[tuple[str, int]]:
        """(term, instance) of every token of ``rows`` (rowid, body, context): an instance as in
        ``TextIndex`` (rowid, column, position in one int)."""
        with self._db:
            self._fill(rows)
            found = self._db.execute(f"SELECT term, {_INSTANCE_SQL}, offset FROM v").fetchall()
            self._empty()
        if any(offset >= _MAX_POSITION for _, _, offset in found):
            raise IndexRefused("a memory of over a million tokens")
        return [(term, int(key)) for term, key, _ in found]

    def highlighted(self, rows: Sequence[tuple[int, str, str]], match: str) -> dict[int, str]:
        """FTS5's ``highlight(t, 0, char(1), char(2))`` of ``rows`` (rowid, body, context) for the
        query ``match``, on those rows alone: the same function over the same text and tokens,
        so the same marks as on the store's table, where it cost 0.6 ms a row (each looked up
        through the whole query's doclists) against a few microseconds here."""
        with self._db:
            self._fill(rows)
            found = self._db.execute(
                "SELECT rowid, highlight(t, 0, char(1), char(2)) FROM t WHERE t MATCH ?", (match,)
            ).fetchall()
            self._empty()
        return {int(rowid): str(text) for rowid, text in found}

    def _fill(self, rows: Sequence[tuple[int, str, str]]) -> None:
        self._db.executemany("INSERT INTO c (rowid, body, context) VALUES (?, ?, ?)", rows)
        self._db.executemany("INSERT INTO t (rowid, body, context) VALUES (?, ?, ?)", rows)

    def _empty(self) -> None:
        self._db.execute("INSERT INTO t (t) VALUES ('delete-all')")
        self._db.execute("DELETE FROM c")

    def close(self) -> None:
        self._db.close()


class TextIndex:
    """The postings of the memory store's full-text table, kept up to date row by row, and FTS5's
    BM25 over them (see the module docstring). Rows are added in rising rowid order (the store's
    rowids only grow); a removed row's postings stay until the next build, filtered out."""

    def __init__(
        self,
        terms: list[str],
        counts: npt.NDArray[np.int64],
        instances: npt.NDArray[np.int64],
        scopes: dict[int, Scope],
        seq: int,
        context_weight: float,
    ) -> None:
        # Every current memory has a full-text row, some with no tokens at all.
        known = np.fromiter(scopes, dtype=np.int64, count=len(scopes))
        docs = np.union1d(np.unique(instances >> _DOC_SHIFT), known)
        in_body = (instances & _COL_BIT) == 0
        body = np.bincount(np.searchsorted(docs, instances[in_body] >> _DOC_SHIFT), minlength=len(docs))
        context = np.bincount(np.searchsorted(docs, instances[~in_body] >> _DOC_SHIFT), minlength=len(docs))
        self._codes: list[dict[str, int]] = [{}, {}, {}]
        scope = np.array(
            [self._scope_codes(scopes.get(int(rowid), Scope())) for rowid in docs.tolist()], dtype=np.int32
        ).reshape(len(docs), 3)
        self._adopt(terms, counts, instances, docs, body, context, scope, seq, context_weight)

    def _adopt(
        self,
        terms: list[str],
        counts: npt.NDArray[np.int64],
        instances: npt.NDArray[np.int64],
        rowids: npt.NDArray[np.int64],
        body: npt.NDArray[np.int64],
        context: npt.NDArray[np.int64],
        scope: npt.NDArray[np.int32],
        seq: int,
        context_weight: float,
    ) -> None:
        """Hold these postings (instances sorted by term, ``counts`` per term in ``terms``' order)
        of the live rows ``rowids`` (ascending; their tokens per column and scope codes)."""
        self.seq = seq  # the store's seq this index reflects
        self.context_weight = context_weight
        self._table = _frequency_table(context_weight)
        self._term_id = {term: index for index, term in enumerate(terms)}
        ends = np.cumsum(counts)
        self._start = np.concatenate([[0], ends[:-1]]).astype(np.int64)
        self._stop = ends.astype(np.int64)
        self._instances = instances
        self._extra: dict[int, npt.NDArray[np.int64]] = {}  # term id -> all its instances, when added to
        self._derived: dict[int, tuple[int, npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        # one-word phrase -> (the table's state, its bm25() term in each of its rows): see ``_phrase_terms``
        self._phrase_cache: dict[str, tuple[tuple[Any, ...], npt.NDArray[np.float64]]] = {}
        self._rowids = rowids
        self._body = body
        self._context = context
        self._alive = np.ones(len(rowids), dtype=bool)
        self._scope = scope
        self._size = len(rowids)
        self.rows = len(rowids)  # live rows
        self.tokens = (int(body.sum()), int(context.sum()))  # live tokens per column
        self.dead = 0

    # --- saving and loading (``text_file``) ---------------------------------------------------

    # The arrays of a saved index, in file order: name, dtype, columns (0: one value per entry).
    LAYOUT: tuple[tuple[str, str, int], ...] = (
        ("counts", "<i8", 0),
        ("instances", "<i8", 0),
        ("rowids", "<i8", 0),
        ("body", "<i8", 0),
        ("context", "<i8", 0),
        ("scope", "<i4", 3),
    )

    def arrays(self) -> tuple[dict[str, npt.NDArray[Any]], list[str], list[list[str]]]:
        """The live rows' postings as named arrays (``LAYOUT``), the terms in the order of
        ``counts`` and the scope code tables: what ``from_arrays`` needs to rank the same."""
        terms = sorted(self._term_id, key=self._term_id.__getitem__)
        parts = [self._term_instances(term_id) for term_id in range(len(terms))]
        counts = np.array([len(part) for part in parts], dtype=np.int64)
        instances = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        size = self._size
        if self.dead:
            at = np.searchsorted(self._rowids[:size], instances >> _DOC_SHIFT)
            keep = self._alive[:size][at]
            term_of = np.repeat(np.arange(len(terms)), counts)
            counts = np.bincount(term_of[keep], minlength=len(terms)).astype(np.int64)
            instances = instances[keep]
        live = np.flatnonzero(self._alive[:size])
        named: dict[str, npt.NDArray[Any]] = {
            "counts": counts,
            "instances": instances,
            "rowids": self._rowids[live],
            "body": self._body[live],
            "context": self._context[live],
            "scope": self._scope[live],
        }
        tables = [sorted(table, key=table.__getitem__) for table in self._codes]
        return named, terms, tables

    @classmethod
    def from_arrays(
        cls,
        named: dict[str, npt.NDArray[Any]],
        terms: list[str],
        tables: list[list[str]],
        seq: int,
        context_weight: float,
    ) -> TextIndex:
        """The index ``arrays`` described (checked by the caller: ``text_file``)."""
        index = cls.__new__(cls)
        index._codes = [{text: code for code, text in enumerate(table)} for table in tables]
        index._adopt(
            terms,
            named["counts"],
            named["instances"],
            named["rowids"],
            named["body"],
            named["context"],
            named["scope"],
            seq,
            context_weight,
        )
        return index

    # --- building and following the table ------------------------------------------------

    @classmethod
    def build(cls, db: sqlite3.Connection, seq: int, context_weight: float) -> TextIndex:
        """The index of the full-text table as ``db`` sees it (call inside a read transaction that
        also read ``seq``): FTS5's instance table read in one string, not row by row (1.2 million
        rows cost 9 s as Python tuples, 2 s this way, at load 6)."""
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_fts_rows USING fts5vocab(main, memory_fts, 'row')"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_fts_instances "
            "USING fts5vocab(main, memory_fts, 'instance')"
        )
        if (
            db.execute("SELECT max(offset) FROM temp.memory_fts_instances").fetchone()[0] or 0
        ) >= _MAX_POSITION:
            raise IndexRefused("a memory of over a million tokens")
        vocabulary = db.execute("SELECT term, cnt FROM temp.memory_fts_rows").fetchall()
        text = db.execute(
            f"SELECT group_concat({_INSTANCE_SQL}, ' ') FROM temp.memory_fts_instances"
        ).fetchone()[0]
        instances = np.array(text.split(), dtype=np.int64) if text else np.zeros(0, dtype=np.int64)
        counts = np.array([count for _, count in vocabulary], dtype=np.int64)
        if int(counts.sum()) != len(instances):
            raise IndexRefused("FTS5's vocabulary and instances disagree")
        scopes = {
            int(rowid): Scope(user or None, agent or None, session or None)
            for rowid, user, agent, session in db.execute(
                "SELECT rowid, user_id, agent_id, session_id FROM memories WHERE status = 'current'"
            )
        }
        return cls([term for term, _ in vocabulary], counts, instances, scopes, seq, context_weight)

    def _scope_codes(self, scope: Scope) -> list[int]:
        codes = []
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            table = self._codes[field]
            codes.append(table.setdefault(value or "", len(table)))
        return codes

    def add(self, rows: Sequence[tuple[int, Scope, list[tuple[str, int]]]]) -> None:
        """New rows (rowid, scope, its (term, instance) pairs), in rising rowid order and above
        every row so far. Each term's list is extended once for all of them (once per row, a
        word in most rows made an import of n rows copy its list n times)."""
        by_term: dict[str, list[int]] = {}
        for rowid, scope, found in rows:
            if self._size and rowid <= int(self._rowids[self._size - 1]):
                raise IndexRefused(f"row {rowid} is not newer than the rows indexed")
            self._grow(self._size + 1)
            at = self._size
            self._rowids[at] = rowid
            for term, key in found:
                by_term.setdefault(term, []).append(key)
            body = sum(1 for _, key in found if not key & _COL_BIT)
            self._body[at], self._context[at] = body, len(found) - body
            self._scope[at] = self._scope_codes(scope)
            self._alive[at] = True
            self._size += 1
            self.rows += 1
            self.tokens = (self.tokens[0] + body, self.tokens[1] + len(found) - body)
        for term, keys in by_term.items():
            term_id = self._term_id.setdefault(term, len(self._term_id))
            added = np.array(sorted(keys), dtype=np.int64)
            self._extra[term_id] = np.concatenate([self._term_instances(term_id), added])
            self._derived.pop(term_id, None)

    def remove(self, rowid: int) -> bool:
        """Leave a row out (its postings stay, filtered); whether it was indexed."""
        at = int(np.searchsorted(self._rowids[: self._size], rowid))
        if at >= self._size or self._rowids[at] != rowid or not self._alive[at]:
            return False
        self._alive[at] = False
        self.rows -= 1
        self.dead += 1
        self.tokens = (self.tokens[0] - int(self._body[at]), self.tokens[1] - int(self._context[at]))
        return True

    def has(self, rowid: int) -> bool:
        at = int(np.searchsorted(self._rowids[: self._size], rowid))
        return at < self._size and self._rowids[at] == rowid and bool(self._alive[at])

    def _grow(self, needed: int) -> None:
        if needed <= len(self._rowids):
            return
        capacity = max(needed, 2 * len(self._rowids), 1024)
        self._rowids = np.resize(self._rowids, capacity)
        self._body = np.resize(self._body, capacity)
        self._context = np.resize(self._context, capacity)
        self._scope = np.resize(self._scope, (capacity, 3))
        alive = np.zeros(capacity, dtype=bool)
        alive[: self._size] = self._alive[: self._size]
        self._alive = alive

    def worn(self) -> bool:
        """Whether enough rows were removed that a fresh build pays (half of them)."""
        return self.dead > max(WORN_AFTER, self.rows)

    # --- ranking ---------------------------------------------------------------------------

    def _term_instances(self, term_id: int) -> npt.NDArray[np.int64]:
        extra = self._extra.get(term_id)
        if extra is not None:
            return extra
        if term_id >= len(self._stop):
            return np.zeros(0, dtype=np.int64)
        return self._instances[self._start[term_id] : self._stop[term_id]]

    def _phrase(self, tokens: Sequence[str]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """The live rows (positions in the row arrays) holding the phrase ``tokens`` and its
        frequency in each (as FTS5's bm25() sums it)."""
        ids = [self._term_id.get(token) for token in tokens]
        if any(term_id is None for term_id in ids):
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
        if len(ids) == 1:
            assert ids[0] is not None
            cached = self._derived.get(ids[0])
            if cached is None or cached[0] != self.dead:
                rows, freq = self._count(self._term_instances(ids[0]))
                keep = self._alive[rows]
                cached = self._derived[ids[0]] = (self.dead, rows[keep], freq[keep])
            return cached[1], cached[2]
        else:
            known = [term_id for term_id in ids if term_id is not None]
            starts = self._term_instances(known[0])
            for offset, term_id in enumerate(known[1:], start=1):
                following = self._term_instances(term_id)
                at = np.searchsorted(following, starts + offset)
                at[at >= len(following)] = 0
                starts = starts[following[at] == starts + offset] if len(following) else starts[:0]
            rows, freq = self._count(starts)
        keep = self._alive[rows]
        return rows[keep], freq[keep]

    def _count(
        self, instances: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        docs = instances >> _DOC_SHIFT
        if not len(docs):
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
        edges = np.flatnonzero(np.diff(docs)) + 1
        firsts = np.concatenate([[0], edges])
        unique = docs[firsts]
        in_context = ((instances & _COL_BIT) != 0).astype(np.int64)
        total = np.diff(np.concatenate([firsts, [len(docs)]]))
        context = np.add.reduceat(in_context, firsts)
        rows = np.searchsorted(self._rowids[: self._size], unique).astype(np.intp)
        return rows, _frequencies(total - context, context, self.context_weight, self._table)

    def matches(self, token: str) -> int:
        """How many live rows hold ``token`` (FTS5's count of a one-term query)."""
        return len(self._phrase((token,))[0])

    def last_rowid(self) -> int:
        live = np.flatnonzero(self._alive[: self._size])
        return int(self._rowids[live[-1]]) if len(live) else 0

    def _matching(self, lists: list[npt.NDArray[np.intp]], every: bool) -> npt.NDArray[np.intp]:
        """The rows (ascending) in every one of ``lists`` (``every``) or in any of them."""
        if every:
            lists = sorted(lists, key=len)
            matched = lists[0]
            for rows in lists[1:]:
                if not len(rows):
                    return rows
                at = np.searchsorted(rows, matched)
                at[at >= len(rows)] = 0
                matched = matched[rows[at] == matched]
            return matched
        if sum(len(rows) for rows in lists) * 8 < self._size:
            return np.unique(np.concatenate(lists)) if lists else np.zeros(0, dtype=np.intp)
        marked = np.zeros(self._size, dtype=bool)
        for rows in lists:
            marked[rows] = True
        return np.flatnonzero(marked)

    def _in_scope(self, rows: npt.NDArray[np.intp], scope: Scope) -> npt.NDArray[np.intp]:
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            if value is not None:
                rows = rows[self._scope[rows, field] == self._codes[field].get(value, -1)]
        return rows

    def _newest_matching(
        self, lists: list[npt.NDArray[np.intp]], every: bool, scope: Scope, newest: int
    ) -> npt.NDArray[np.intp]:
        """The newest ``newest`` rows in scope of ``_matching``, from the lists' tails: a row at
        or above the highest row where a cut list's tail begins is in the tails' match exactly
        when it is in the whole lists' one, so once the tails hold ``newest`` such rows, those
        are the answer (the lists of common words hold tens of thousands of rows at 100k)."""
        take = 2 * newest
        while True:
            cut = [rows for rows in lists if len(rows) > take]
            matched = self._in_scope(self._matching([rows[-take:] for rows in lists], every), scope)
            if not cut:
                return matched[-newest:]
            complete = matched[matched >= max(int(rows[-take]) for rows in cut)]
            if len(complete) >= newest:
                return complete[-newest:]
            take *= 4

    def rank(
        self,
        phrases: Sequence[Sequence[str]],
        *,
        every: bool,
        scope: Scope,
        newest: int | None,
        limit: int,
    ) -> list[tuple[int, float]]:
        """(rowid, FTS5's bm25) of the best ``limit`` live rows in ``scope`` that hold any of
        ``phrases`` (``every``: all of them), best first (bm25 is negative: lower is better; ties
        by rowid). ``newest``: only the newest that many matches in scope count (by rowid)."""
        if not phrases or not self.rows:
            return []
        found = [self._phrase(tokens) for tokens in phrases]
        lists = [rows for rows, _ in found]
        if newest is None:
            candidates = self._in_scope(self._matching(lists, every), scope)
        else:
            candidates = self._newest_matching(lists, every, scope, newest)
        total_rows = self.rows
        average = (self.tokens[0] + self.tokens[1]) / total_rows
        # Summed phrase by phrase in the query's order from 0.0, with bm25()'s own order of
        # operations (fts5_aux.c): the same number as FTS5's. The phrases' terms are worked out
        # for all their rows at once and added into one array over every row (a search per
        # phrase of the candidates in its rows cost most of the ranking), or, when the candidates
        # are far fewer than the rows (the newest floor), looked up for the candidates alone.
        score = np.zeros(len(candidates), dtype=np.float64)
        sparse = 4 * len(candidates) < sum(len(rows) for rows in lists)
        dense = None if sparse else np.zeros(self._size, dtype=np.float64)
        for phrase, (rows, freq) in zip(phrases, found, strict=True):
            if not len(rows):
                continue
            idf = math.log((total_rows - len(rows) + 0.5) / (len(rows) + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            if dense is not None:
                dense[rows] += self._phrase_terms(phrase, idf, rows, freq, average)
                continue
            at = np.searchsorted(rows, candidates)
            at[at >= len(rows)] = 0
            present = rows[at] == candidates
            at, there = at[present], candidates[present]
            score[present] += self._terms(idf, freq[at], there, average)
        if dense is not None:
            score += dense[candidates]  # (0.0 plus the sum: the same sum)
        if not len(candidates):
            return []
        values = -1.0 * score
        if len(candidates) > limit:
            # Every row tied with the limit-th best is kept, so ties fall by rowid as in FTS5.
            kth = np.partition(values, limit - 1)[limit - 1]
            keep = values <= kth
            candidates, values = candidates[keep], values[keep]
        order = np.lexsort((candidates, values))[:limit]
        rowids = self._rowids[candidates[order]].tolist()
        return [(int(r), float(v)) for r, v in zip(rowids, values[order].tolist(), strict=True)]

    def _terms(
        self, idf: float, f: npt.NDArray[np.float64], rows: npt.NDArray[np.intp], average: float
    ) -> npt.NDArray[np.float64]:
        """A phrase's term of bm25() in ``rows``, where its frequency is ``f`` (fts5_aux.c's order)."""
        length = (self._body[rows] + self._context[rows]).astype(np.float64)
        terms: npt.NDArray[np.float64] = idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / average)))
        return terms

    def _phrase_terms(
        self,
        phrase: Sequence[str],
        idf: float,
        rows: npt.NDArray[np.intp],
        freq: npt.NDArray[np.float64],
        average: float,
    ) -> npt.NDArray[np.float64]:
        """``_terms`` of a phrase over all its rows, kept for a one-word phrase until the table
        changes (the IDF and the average length change with every write)."""
        if len(phrase) != 1:
            return self._terms(idf, freq, rows, average)
        key = (phrase[0], self.rows, self.tokens, self.dead)
        cached = self._phrase_cache.get(phrase[0])
        if cached is None or cached[0] != key:
            if len(self._phrase_cache) > 4096:
                self._phrase_cache.clear()
            cached = self._phrase_cache[phrase[0]] = (key, self._terms(idf, freq, rows, average))
        return cached[1]

    def content_terms(
        self, tokens: Sequence[str], pairs: Sequence[Sequence[str]], rowids: Sequence[int], cap: int
    ) -> list[int | None]:
        """For each row of ``rowids`` (live), how many distinct words (at most ``cap``) FTS5's
        ``highlight()`` of the content column marks for a query of the one-word phrases
        ``tokens`` and the two-word phrases ``pairs``, where the postings prove it; None where
        they do not (the caller asks ``highlight()`` for those rows).

        highlight() marks each phrase instance, merging only instances that overlap: an instance
        of a query term that is not part of an instance of a pair is a span of its own, one word
        (the text of one token). So the count is at least the number of distinct terms with such
        an instance (distinct terms of ``_PLAIN`` characters come from words that differ once
        case-folded), and at most the number of instances; where the two meet, that is it."""
        unique = list(dict.fromkeys(tokens))
        if not rowids:
            return []
        if not all(_PLAIN.fullmatch(token) for token in unique):
            return [None] * len(rowids)
        low = np.array(rowids, dtype=np.int64) << _DOC_SHIFT
        high = low | _COL_BIT
        places: list[npt.NDArray[np.int64]] = []  # per token: row index << 21 | position, ascending
        for token in unique:
            term_id = self._term_id.get(token)
            instances = self._term_instances(term_id) if term_id is not None else np.zeros(0, dtype=np.int64)
            start, stop = np.searchsorted(instances, low), np.searchsorted(instances, high)
            lengths = stop - start
            row_of = np.repeat(np.arange(len(rowids), dtype=np.int64), lengths)
            first = np.repeat(start - np.cumsum(lengths) + lengths, lengths)
            at = first + np.arange(int(lengths.sum()), dtype=np.int64)
            places.append((row_of << _DOC_SHIFT) | (instances[at] & _MAX_POSITION))
        position = {token: at for at, token in enumerate(unique)}
        paired = [np.zeros(len(found), dtype=bool) for found in places]
        for pair in pairs:
            if len(pair) != 2 or pair[0] not in position or pair[1] not in position:
                return [None] * len(rowids)
            first_at, second_at = position[pair[0]], position[pair[1]]
            starts = np.isin(places[first_at], places[second_at] - 1)
            paired[first_at] |= starts
            paired[second_at] |= np.isin(places[second_at], places[first_at][starts] + 1)
        total = np.zeros(len(rowids), dtype=np.int64)
        alone = np.zeros(len(rowids), dtype=np.int64)
        for found, in_pair in zip(places, paired, strict=True):
            rows = found >> _DOC_SHIFT
            total += np.bincount(rows, minlength=len(rowids))
            alone += np.bincount(np.unique(rows[~in_pair]), minlength=len(rowids)) > 0
        most = np.minimum(total, cap)
        least = np.minimum(alone, cap)
        return [int(m) if m == n else None for m, n in zip(most.tolist(), least.tolist(), strict=True)]

    def nbytes(self) -> int:
        """Bytes held by the arrays (for the benchmark's memory column)."""
        arrays: list[npt.NDArray[Any]] = [
            self._instances, self._rowids, self._body, self._context, self._scope, self._alive
        ]  # fmt: skip
        arrays += list(self._extra.values())
        arrays += [a for _, rows, freq in self._derived.values() for a in (rows, freq)]
        arrays += [terms for _, terms in self._phrase_cache.values()]
        return sum(int(a.nbytes) for a in arrays)
