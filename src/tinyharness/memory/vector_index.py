"""Exact nearest-neighbour search over an in-memory float32 matrix, kept up to date row by row.

This Python's ``sqlite3`` cannot load extensions (no sqlite-vec), so the SQLite store keeps the
vectors as float32 blobs and searches them here: one matrix-vector product over the rows in scope,
then ``argpartition`` for the top k. Rows are appended in amortised O(1) (capacity doubles),
removed by clearing a live flag, and the matrix is compacted when half of it is dead. Scope
fields are stored as small integer codes so filtering is a vectorised comparison.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .base import Scope

_FIELDS = ("user", "agent", "session")


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
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
        self._keys[row] = key
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            self._scope[row, field] = self._code(field, value, create=True)
        self._live[row] = True
        self._position[key] = row
        self._size += 1

    def add_many(
        self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32], scopes: list[Scope]
    ) -> None:
        """Bulk load (keys must be new to the index)."""
        count = len(keys)
        self._grow(self._size + count)
        rows = slice(self._size, self._size + count)
        self._matrix[rows] = vectors
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

    def remove(self, key: int) -> None:
        row = self._position.pop(key, None)
        if row is None:
            return
        self._live[row] = False
        if self._size > 1024 and len(self._position) < self._size // 2:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self._live[: self._size])
        count = len(keep)
        self._matrix[:count] = self._matrix[keep]
        self._keys[:count] = self._keys[keep]
        self._scope[:count] = self._scope[keep]
        self._live[:] = False
        self._live[:count] = True
        self._size = count
        self._position = {int(k): i for i, k in enumerate(self._keys[:count].tolist())}

    def search(self, query: npt.NDArray[np.float32], scope: Scope, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` live rows in ``scope`` with the highest cosine similarity, best first."""
        if limit <= 0 or not self._position:
            return []
        mask = self._live[: self._size].copy()
        for field, value in enumerate((scope.user, scope.agent, scope.session)):
            if value is not None:
                code = self._code(field, value, create=False)
                if code < 0:
                    return []
                mask &= self._scope[: self._size, field] == code
        live = int(mask.sum())
        if live == 0:
            return []
        scores = self._matrix[: self._size] @ query
        scores[~mask] = -np.inf
        top = min(limit, live)
        best = np.argpartition(-scores, top - 1)[:top] if top < len(scores) else np.arange(len(scores))
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self._keys[i]), float(scores[i])) for i in best if mask[i]]
