"""Exact nearest-neighbour search over an in-memory float32 matrix, kept up to date row by row.

This Python's ``sqlite3`` cannot load extensions (no sqlite-vec), so the SQLite store keeps the
vectors as float32 blobs and searches them here. Rows are appended in amortised O(1) (capacity
doubles), removed by clearing a live flag, and the matrix is compacted when half of it is dead.
Scope fields are stored as small integer codes so filtering is a vectorised comparison.

A search of a large index is exact but does not read the float32 matrix: a scan of float32 rows
is bound by memory bandwidth (154 MB per query at 100k x 384). Each row is also kept as 8-bit
integers (a quarter of the bytes) with its scale and the norm of its rounding error; one SIMD
int8 scan (simsimd) gives every row an approximate score and a proven bound on its error, and
only the rows whose upper bound reaches the k-th best lower bound (a few hundred at 100k) are
scored again from the float32 rows. The result is the top k of the float32 scan.

From ``approx_from`` rows on, even that scan is too slow (it cannot go under ~8 ms at 100k x
384 on a machine that reads a few GB/s), and a search first asks an approximate index
(``CoarseIndex``: an inverted file over 8-bit codes, kept in step with every upsert and
removal) for a few hundred candidates, scores them exactly from the float32 rows, and keeps
them only if they stand out: the ``limit``-th best score must lie at least ``TRUST_MARGIN``
standard deviations beyond where the ``limit``-th best of a normal sample of this size would
(estimated from the query's scores on an evenly spaced sample of the rows in scope). Vectors
with neighbourhoods (what embedders give: a query near a topic) pass, and the search reads a
few percent of the rows; a query with no neighbourhood (random vectors, an off-topic question),
where an approximate index misses, fails the test and gets the exact scan. So does a narrow
scope (under a quarter of the rows), whose rows the candidates would rarely hold.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt
import simsimd

from .background import Build
from .base import Scope
from .coarse_index import CoarseIndex

_FIELDS = ("user", "agent", "session")
EXACT_BELOW = 4096  # rows below which a search scans the float32 matrix (it is as fast)
APPROX_FROM = 20_000  # rows from which a search asks the approximate index first (measured)
TRUST_MARGIN = 1.0  # standard deviations (see the module docstring)
SAMPLE = 1024  # rows whose scores estimate a query's score distribution
FETCH = 4  # candidates asked of the approximate index per result wanted (in a full scope)
REFUSALS_BEFORE_PAUSE, PAUSE = 8, 16  # see ``_approximate``
NARROWEST = 4  # a scope of under 1/NARROWEST of the rows is searched exactly
# float32 rounding moves a dot product of n terms by at most about n * 2**-24 of |x| |q|: each
# bound is widened by twice that, so the int8 pass never drops a row whose float32 score (what
# the plain scan returns) makes the top k.
_UNIT_ROUNDOFF = 2.0**-24


class VectorIndex:
    def __init__(
        self,
        dim: int,
        capacity: int = 1024,
        *,
        exact_below: int = EXACT_BELOW,
        approx_from: int = APPROX_FROM,
    ) -> None:
        self.dim = dim
        self.exact_below = exact_below
        self.approx_from = approx_from
        self._coarse: CoarseIndex | None = None
        self._coarse_build: Build[CoarseIndex] | None = None  # see ``_coarse_ready``
        self._coarse_log: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32] | None]] = []
        self.coarse_builds = 0  # builds started (for tests)
        self._sample: tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]] | None = None
        self._refusals = 0  # approximate answers refused in a row (see ``_approximate``)
        self.approximate_answers = 0  # searches answered from the approximate index (for tests)
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
        # The int8 copy: row ~ scale * int8 row, |row - scale * int8 row| <= error (see the docstring).
        self._int8 = np.zeros((capacity, dim), dtype=np.int8)
        self._scale = np.zeros(capacity, dtype=np.float64)
        self._scale32 = np.zeros(capacity, dtype=np.float32)  # the same, for the float32 first look
        self._maxima: tuple[float, float] | None = None  # see ``_bound_maxima``
        self._int8_norm = np.zeros(capacity, dtype=np.float64)  # |scale * int8 row|
        self._error = np.zeros(capacity, dtype=np.float64)
        self._keys = np.zeros(capacity, dtype=np.int64)  # the store's row ids
        self._scope = np.zeros((capacity, 3), dtype=np.int32)
        self._live = np.zeros(capacity, dtype=bool)
        self._size = 0
        self._position: dict[int, int] = {}  # key -> row
        self._codes: list[dict[str, int]] = [{}, {}, {}]

    def __len__(self) -> int:
        return len(self._position)

    def _code(self, field: int, value: str | None, *, create: bool) -> int:
        table = self._codes[field]
        text = value or ""
        if text not in table and create:
            table[text] = len(table)
        return table.get(text, -1)

    def _grow(self, needed: int) -> None:
        capacity = len(self._live)
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2)
        self._matrix = np.resize(self._matrix, (new_capacity, self.dim))
        self._int8 = np.resize(self._int8, (new_capacity, self.dim))
        self._scale = np.resize(self._scale, new_capacity)
        self._scale32 = np.resize(self._scale32, new_capacity)
        self._int8_norm = np.resize(self._int8_norm, new_capacity)
        self._error = np.resize(self._error, new_capacity)
        self._keys = np.resize(self._keys, new_capacity)
        self._scope = np.resize(self._scope, (new_capacity, 3))
        live = np.zeros(new_capacity, dtype=bool)
        live[: self._size] = self._live[: self._size]
        self._live = live

    def upsert(self, key: int, vector: npt.NDArray[np.float32], scope: Scope) -> None:
        if vector.shape != (self.dim,):
            raise ValueError(f"vector of shape {vector.shape} in an index of dimension {self.dim}")
        self.remove(key)
        self._grow(self._size + 1)
        row = self._size
        self._matrix[row] = vector
        self._quantize(row, row + 1)
        self._keys[row] = key
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            self._scope[row, field] = self._code(field, value, create=True)
        self._live[row] = True
        self._position[key] = row
        self._size += 1
        self._follow(np.array([key], dtype=np.int64), vector[None])

    def add_many(
        self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32], scopes: list[Scope]
    ) -> None:
        """Bulk load (keys must be new to the index)."""
        count = len(keys)
        self._grow(self._size + count)
        rows = slice(self._size, self._size + count)
        self._matrix[rows] = vectors
        self._quantize(rows.start, rows.stop)
        self._keys[rows] = keys
        self._scope[rows] = (
            [
                [self._code(f, v, create=True) for f, v in enumerate((s.user, s.agent, s.session))]
                for s in scopes
            ]
            if count
            else np.zeros((0, 3), dtype=np.int32)
        )
        self._live[rows] = True
        for offset, key in enumerate(keys.tolist()):
            self._position[key] = self._size + offset
        self._size += count
        self._follow(keys, vectors)

    def _quantize(self, start: int, stop: int) -> None:
        """Fill the int8 copy of the float32 rows ``start:stop``: per row, scale = max |x| / 127.
        In float32 and in blocks (a float64 copy of 100k rows took 4.5 s and 600 MB); the error
        norm is then raised by 1e-6 |x|, more than float32 can have lost computing it."""
        for begin in range(start, stop, 4096):
            values = self._matrix[begin : min(begin + 4096, stop)]
            scale = np.abs(values).max(axis=1, initial=0.0)
            scale[scale == 0] = 127.0  # a zero row: int8 zeros, no error
            scale /= 127.0
            codes = np.rint(values / scale[:, None])
            np.clip(codes, -127, 127, out=codes)
            rows = slice(begin, begin + len(values))
            self._int8[rows] = codes
            self._scale[rows] = scale
            self._scale32[rows] = scale
            norms = scale.astype(np.float64) * np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
            self._int8_norm[rows] = norms
            codes *= scale[:, None]
            codes -= values  # -(rounding error)
            error = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
            self._error[rows] = error + 1e-6 * (norms + error)
        self._maxima = None

    def remove(self, key: int) -> None:
        row = self._position.pop(key, None)
        if row is None:
            return
        self._live[row] = False
        self._follow(np.array([key], dtype=np.int64), None)
        if self._size > 1024 and len(self._position) < self._size // 2:
            self._compact()

    def _compact(self) -> None:
        self._sample = None
        keep = np.flatnonzero(self._live[: self._size])
        count = len(keep)
        self._matrix[:count] = self._matrix[keep]
        self._int8[:count] = self._int8[keep]
        self._scale[:count] = self._scale[keep]
        self._scale32[:count] = self._scale32[keep]
        self._int8_norm[:count] = self._int8_norm[keep]
        self._error[:count] = self._error[keep]
        self._keys[:count] = self._keys[keep]
        self._scope[:count] = self._scope[keep]
        self._live[:] = False
        self._live[:count] = True
        self._size = count
        self._position = {int(k): i for i, k in enumerate(self._keys[:count].tolist())}

    def search(
        self, query: npt.NDArray[np.float32], scope: Scope, limit: int, *, approximate: bool = True
    ) -> list[tuple[int, float]]:
        """The ``limit`` live rows in ``scope`` with the highest cosine similarity, best first
        (``approximate=False``: never from the approximate index, see the module docstring)."""
        if limit <= 0 or not self._position:
            return []
        mask = self.scope_mask(scope)
        if mask is None:
            return []
        live = int(mask.sum())
        if live == 0:
            return []
        top = min(limit, live)
        if self._size < self.exact_below:
            scores = self._matrix[: self._size] @ query
            scores[~mask] = -np.inf
            best = np.argpartition(-scores, top - 1)[:top] if top < len(scores) else np.arange(len(scores))
        else:
            near = None
            if approximate and self._size >= self.approx_from and live * NARROWEST >= self._size:
                near = self._approximate(query, mask, live, top)
            if near is not None:
                rows, found_scores = near
                order = np.argsort(-found_scores, kind="stable")[:top]
                keys = self._keys[rows[order]].tolist()
                return [(int(k), float(v)) for k, v in zip(keys, found_scores[order].tolist(), strict=True)]
            rows = self._candidates(query, mask, top)
            scores = np.full(self._size, -np.inf, dtype=np.float32)
            scores[rows] = self._row_scores(rows, query)
            found = np.argpartition(-scores[rows], top - 1)[:top] if top < len(rows) else np.arange(len(rows))
            best = rows[found]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self._keys[i]), float(scores[i])) for i in best if mask[i]]

    def scope_mask(self, scope: Scope) -> npt.NDArray[np.bool_] | None:
        """Which rows are live and in ``scope`` (None: a scope value no row has)."""
        mask = self._live[: self._size].copy()
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            if value is not None:
                code = self._code(field, value, create=False)
                if code < 0:
                    return None
                mask &= self._scope[: self._size, field] == code
        return mask

    def candidate_keys(
        self, query: npt.NDArray[np.float32], scope: Scope, top: int, margin: float
    ) -> npt.NDArray[np.int64] | None:
        """The keys of the rows in ``scope`` that may be among the ``top`` best by exact cosine
        similarity to the unit vector ``query``, for a caller whose own scores may differ from
        them by up to ``margin / 2`` and who scores them again itself; None when the scope holds
        ``top`` rows or fewer. The rows the int8 pass leaves (``_candidates``, with ``margin``) are
        scored in float64 and only those within ``margin`` of the ``top``-th best are kept: every
        row of the caller's top ``top`` is among them (its score there is at least the ``top``-th
        best's minus ``margin / 2``, that one's at least ours minus ``margin / 2``)."""
        mask = self.scope_mask(scope)
        if mask is None or int(mask.sum()) <= top:
            return None
        rows = self._candidates(query, mask, top, margin)
        scores = self._matrix[rows].astype(np.float64) @ query.astype(np.float64)
        kth = float(np.partition(scores, len(rows) - top)[len(rows) - top])
        keys: npt.NDArray[np.int64] = self._keys[rows[scores >= kth - margin]]
        return keys

    def _candidates(
        self, query: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], top: int, margin: float = 0.0
    ) -> npt.NDArray[np.intp]:
        """The rows in ``mask`` that may be among the ``top`` best by the float32 score (``margin``:
        also those within it of the ``top``-th best lower bound, for a caller whose own scores may
        differ from the exact ones by up to half of it): each row's
        score x.q = s c.(t d + e) + r.q, with x ~ s c (int8 c, error r) and q ~ t d (int8 d, error
        e), is s t (c.d) give or take |s c| |e| + |r| |q| (Cauchy-Schwarz), plus float32 rounding.

        The bounds are worked out in float64 only for the rows near the top: every row's
        approximate score in float32 and the largest bound of any row, B, leave out every row
        more than 2 B (plus float32's rounding) below the ``top``-th best approximate score: its
        upper bound is below the ``top``-th best lower bound, and so is its lower bound. What is
        left is exactly the set the bounds of every row give (a test compares them), for a few
        passes over 100k float32 values instead of a dozen over float64 ones."""
        size = self._size
        query64 = query.astype(np.float64)
        query_norm = float(np.linalg.norm(query64))
        step = float(np.abs(query64).max(initial=0.0)) / 127.0 or 1.0
        digits = np.clip(np.rint(query64 / step), -127, 127)
        query_error = float(np.linalg.norm(query64 - step * digits))
        roundoff = 2 * self.dim * _UNIT_ROUNDOFF * query_norm
        # a row's bound below is at most |s c| per_norm + |r| per_error (rounding aside)
        per_norm, per_error = query_error + roundoff, query_norm + roundoff
        # int8 dot products are integers, exact in float32 below 2**24 (dimensions up to 1,040)
        codes = digits.astype(np.int8)[None]
        if self.dim * 127 * 127 < 2**24:
            dots = np.asarray(simsimd.cdist(codes, self._int8[:size], metric="dot", out_dtype="float32"))[0]
        else:
            dots = np.asarray(simsimd.cdist(codes, self._int8[:size], metric="dot", out_dtype="float64"))[0]
        approx = dots * self._scale32[:size]
        approx *= np.float32(step)
        if not mask.all():
            approx[~mask] = -np.inf
        kth = float(np.partition(approx, size - top)[size - top])
        norm_max, error_max = self._bound_maxima()
        widest = (norm_max * per_norm + error_max * per_error) * (1 + 1e-9)
        # float32's rounding of approx: under 3 units in the last place of the largest |value|,
        # and |s c . t d| <= |s c| |t d| <= |s c| (|q| + |e|)
        slack = 4 * _UNIT_ROUNDOFF * norm_max * (query_norm + query_error) + 1e-30
        near = np.flatnonzero(approx >= kth - 2 * widest - 2 * slack - margin)
        # From here on, the float64 arithmetic of every row's bound, on the rows near the top.
        scores = dots[near].astype(np.float64) * self._scale[near] * step
        norms, errors = self._int8_norm[near], self._error[near]
        bound = norms * query_error + errors * query_norm
        bound += 2 * self.dim * _UNIT_ROUNDOFF * (norms + errors) * query_norm
        low = scores - bound
        threshold = np.partition(low, len(near) - top)[len(near) - top]  # the top-th best lower bound
        return near[scores + bound >= threshold - margin]

    def _approximate(
        self, query: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], live: int, top: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]] | None:
        """The rows in ``mask`` the approximate index proposes and their exact scores, when the
        best ``top`` of them stand out from the query's score distribution (see the module
        docstring); else None. After REFUSALS_BEFORE_PAUSE refusals in a row (vectors with no
        neighbourhoods) it is asked only every PAUSE-th search until it is trusted again: a
        refused look costs a few ms on top of the exact scan, and changes no answer."""
        if self._refusals >= REFUSALS_BEFORE_PAUSE:
            self._refusals += 1
            if self._refusals % PAUSE:
                return None
        sample, sample_rows = self._score_sample()
        in_scope = mask[sample_rows]
        if int(in_scope.sum()) < 64 or top >= live:
            return None
        coarse = self._coarse_ready()
        if coarse is None:
            return None  # (its first build is under way: the exact scan answers)
        # Over-fetch by the share of the rows in scope (the candidates ignore the scope).
        fetch = min(len(self._position), -(-FETCH * top * self._size // live))
        keys = coarse.candidates(query, fetch)
        position = self._position
        rows = np.fromiter((position.get(k, -1) for k in keys.tolist()), dtype=np.intp, count=len(keys))
        rows = rows[rows >= 0]
        rows = rows[mask[rows]]
        if len(rows) >= top:
            scores = self._row_scores(rows, query)
            kth = float(np.partition(scores, len(rows) - top)[len(rows) - top])
            spread = np.einsum("ij,j->i", sample, query)[in_scope]  # (BLAS: see ``_row_scores``)
            mean, deviation = float(spread.mean()), float(spread.std())
            expected = NormalDist().inv_cdf(1 - top / live)  # the top-th best of ``live`` normal draws
            if kth >= mean + (expected + TRUST_MARGIN) * deviation:
                self._refusals = 0
                self.approximate_answers += 1
                return rows, scores
        self._refusals = max(self._refusals, 0) + 1
        return None

    def _row_scores(
        self, rows: npt.NDArray[np.intp], query: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The float32 scores of ``rows``, the same bits whichever other rows are scored with
        them: numpy's own einsum loop sums each row alike, where BLAS's float32 sums depend on how
        many rows it is given (the approximate and exact paths score different sets). It was also
        11x faster than BLAS here on 5,000 rows at load 10 (2.5 against 28 ms: BLAS's threads
        waiting for a busy core)."""
        scores: npt.NDArray[np.float32] = np.einsum("ij,j->i", self._matrix[rows], query)
        return scores

    def _score_sample(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]:
        """SAMPLE evenly spaced rows (a contiguous copy, and their positions), kept until the
        rows move (compaction) or grow by a quarter."""
        cached = self._sample
        if cached is None or self._size > cached[1][-1] * 5 // 4 + 1:
            rows = np.linspace(0, self._size - 1, min(SAMPLE, self._size)).astype(np.intp)
            self._sample = cached = (self._matrix[rows].copy(), rows)
        return cached

    def coarse_index(self) -> CoarseIndex:
        """The approximate index over the live rows, waiting for its build if one is under way
        (tests and tools; a search never waits: ``_coarse_ready``)."""
        build = self._coarse_build
        self._coarse_ready()  # starts a build when one is due
        self.wait_for_coarse()
        if self._coarse_build is None and build is None and self._coarse is None:
            raise RuntimeError("the approximate index could not be built")
        if self._coarse is None:
            return self.coarse_index()  # (the build that was under way failed: once more)
        return self._coarse

    def _coarse_ready(self) -> CoarseIndex | None:
        """The approximate index as it stands, or None while the first one is built. A build
        runs in a background thread (9-38 s at 100k rows on a busy machine: inside a search it
        made that search wait) over a copy of the live rows; it starts when none exists and
        again (trained anew) once the rows have doubled or halved since the last was trained,
        the old one answering meanwhile. The upserts and removals made during the build are
        replayed on the new index when it is installed, so it holds exactly the live rows."""
        self._install_coarse()
        coarse, count = self._coarse, len(self._position)
        due = coarse is None or count >= 2 * coarse.trained_rows or 2 * count < coarse.trained_rows
        if due and self._coarse_build is None:
            keys, vectors = self._live_rows()
            self._coarse_log = []
            self.coarse_builds += 1
            self._coarse_build = Build(lambda: self._build_coarse(keys, vectors), "tinyharness-vector-index")
        return coarse

    def _live_rows(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        rows = np.flatnonzero(self._live[: self._size])
        return self._keys[rows], self._matrix[rows]  # copies (fancy indexing): rows move meanwhile

    @staticmethod
    def _build_coarse(keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> CoarseIndex:
        return CoarseIndex.build(keys, vectors)

    def _install_coarse(self) -> None:
        build = self._coarse_build
        if build is None or not build.done():
            return
        self._coarse_build = None
        built = build.result()
        log, self._coarse_log = self._coarse_log, []
        if built is None:
            return  # (the exact scan answers; the next search that asks starts another build)
        for keys, vectors in log:
            if vectors is None:
                built.remove(keys)
            else:
                built.add(keys, vectors)
        self._coarse = built

    def wait_for_coarse(self, timeout: float | None = None) -> bool:
        """Wait for a build of the approximate index under way and install it; whether done."""
        build = self._coarse_build
        if build is not None and not build.wait(timeout):
            return False
        self._install_coarse()
        return True

    def _follow(self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32] | None) -> None:
        """Keep the approximate index (and one being built) in step: add ``vectors`` under
        ``keys``, or remove ``keys`` when ``vectors`` is None."""
        if self._coarse is not None:
            if vectors is None:
                self._coarse.remove(keys)
            else:
                self._coarse.add(keys, vectors)
        if self._coarse_build is not None:
            self._coarse_log.append((keys.copy(), None if vectors is None else vectors.copy()))

    def _bound_maxima(self) -> tuple[float, float]:
        """The largest |s c| and |r| of any row (dead rows too: still an upper bound), kept
        until the rows change."""
        if self._maxima is None:
            size = self._size
            self._maxima = (
                float(self._int8_norm[:size].max(initial=0.0)),
                float(self._error[:size].max(initial=0.0)),
            )
        return self._maxima

    # --- snapshots (see ``index_file``) ---------------------------------------------------------

    def last_key(self) -> int:
        """The highest key of a live row (0 when there is none)."""
        return max(self._position, default=0)

    def arrays(self) -> tuple[dict[str, npt.NDArray[Any]], list[list[str]]]:
        """The live rows as named arrays (compacted, in row order) and the scope code tables:
        everything a search reads, so ``from_arrays`` gives an index that answers the same."""
        self._compact()
        rows = slice(0, self._size)
        named: dict[str, npt.NDArray[Any]] = {
            "keys": self._keys[rows],
            "matrix": self._matrix[rows],
            "int8": self._int8[rows],
            "scale": self._scale[rows],
            "int8_norm": self._int8_norm[rows],
            "error": self._error[rows],
            "scope": self._scope[rows],
        }
        tables = [sorted(table, key=table.__getitem__) for table in self._codes]
        return named, tables

    def coarse_state(self) -> CoarseIndex | None:
        """The approximate index as it stands (None until a search built it), for a snapshot."""
        return self._coarse

    @classmethod
    def from_arrays(
        cls,
        dim: int,
        named: dict[str, npt.NDArray[Any]],
        tables: list[list[str]],
        *,
        exact_below: int,
        approx_from: int = APPROX_FROM,
        coarse: CoarseIndex | None = None,
    ) -> VectorIndex:
        """An index over ``named`` (from ``arrays``), which it adopts as they are: writable arrays
        of one row each per key, no copy (a snapshot read into one buffer stays in it until the
        index grows); ``coarse``: its approximate index, holding exactly these keys."""
        count = len(named["keys"])
        index = cls(dim, capacity=1, exact_below=exact_below, approx_from=approx_from)
        index._coarse = coarse
        index._keys = named["keys"]
        index._matrix = named["matrix"]
        index._int8 = named["int8"]
        index._scale = named["scale"]
        index._scale32 = named["scale"].astype(np.float32)
        index._int8_norm = named["int8_norm"]
        index._error = named["error"]
        index._scope = named["scope"]
        index._live = np.ones(count, dtype=bool)
        index._size = count
        index._position = {int(k): i for i, k in enumerate(named["keys"].tolist())}
        index._codes = [{text: code for code, text in enumerate(table)} for table in tables]
        return index

    # The arrays of a snapshot, in file order: name, dtype, columns (0: one value per row, -1: dim).
    LAYOUT: tuple[tuple[str, str, int], ...] = (
        ("keys", "<i8", 0),
        ("matrix", "<f4", -1),
        ("int8", "i1", -1),
        ("scale", "<f8", 0),
        ("int8_norm", "<f8", 0),
        ("error", "<f8", 0),
        ("scope", "<i4", 3),
    )
