"""An approximate first look at a large vector index: faiss's inverted file (IVF) over 8-bit codes.

An exact scan of 100k x 384 int8 codes reads 38 MB per query (77 MB at 768 dimensions), which
this kind of machine cannot do in under ~8 ms. An inverted file clusters the vectors around
``lists`` centroids (k-means on a sample) and scans only the lists whose centroids are nearest
the query: a few percent of the rows. Why IVF and not a graph (HNSW): measured on the bench's
100k vectors (bench/notes/memory-speed.md), it builds in seconds where an HNSW graph took
minutes, so rebuilding it from the rows after a refused snapshot stays cheap; and faiss can
remove a key from it in O(1) (a hash table from key to list), so it follows writes row by row.

It only proposes candidates (the store's keys); ``VectorIndex`` scores them again exactly
from its float32 rows, and decides whether to trust them at all (see its ``search``).

faiss is imported on first use: a store below ``VectorIndex``'s threshold never loads it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

TRAIN_PER_LIST = 40  # sample rows per centroid for k-means (faiss warns below 39)
LISTS_PER_ROOT = 2  # lists = 2 sqrt(rows): 632 at 100k (see the notes for 1 and 4)
TRAIN_ROUNDS = 10  # k-means iterations (faiss: 25; the lists move little after 10)
PROBE = 12  # lists scanned per query (of 632 at 100k)


def _faiss() -> Any:
    import faiss

    # One thread: the machines this runs on are shared, and a query of one vector gains nothing
    # from OpenMP (its idle threads spin on a busy core; k-means is the only part that would).
    faiss.omp_set_num_threads(1)
    return faiss


def list_count(rows: int) -> int:
    """How many lists for ``rows`` rows: LISTS_PER_ROOT sqrt(rows), and at most one per
    TRAIN_PER_LIST rows (so that k-means has a sample of that many per list)."""
    return max(1, min(round(LISTS_PER_ROOT * math.sqrt(rows)), rows // TRAIN_PER_LIST))


class CoarseIndex:
    """The IVF index of ``dim``-d vectors under integer keys; ``trained_rows``: how many rows
    it was trained on (the owner retrains when the index has doubled or halved since)."""

    def __init__(self, index: Any, trained_rows: int) -> None:
        self._index = index
        self.trained_rows = trained_rows
        self.probe = PROBE

    @classmethod
    def build(cls, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> CoarseIndex:
        """Train on an evenly spaced sample of ``vectors`` and add them all under ``keys``."""
        faiss = _faiss()
        rows, dim = vectors.shape
        lists = list_count(rows)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dim, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.seed = 1234  # the same rows give the same index
        index.cp.niter = TRAIN_ROUNDS
        sample = min(rows, TRAIN_PER_LIST * lists)
        picked = np.linspace(0, rows - 1, sample).astype(np.int64) if sample < rows else slice(None)
        index.train(np.ascontiguousarray(vectors[picked], dtype=np.float32))
        index.set_direct_map_type(faiss.DirectMap.Hashtable)  # O(1) removal by key
        coarse = cls(index, rows)
        coarse.add(keys, vectors)
        return coarse

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def lists(self) -> int:
        return int(self._index.nlist)

    def add(self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        if len(keys):
            self._index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), np.ascontiguousarray(keys, dtype=np.int64)
            )

    def remove(self, keys: npt.NDArray[np.int64]) -> None:
        if len(keys):
            self._index.remove_ids(np.ascontiguousarray(keys, dtype=np.int64))

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The keys of up to ``count`` rows nearest ``query`` by the 8-bit codes of the ``probe``
        nearest lists (approximate: ``VectorIndex`` scores them again)."""
        self._index.nprobe = self.probe
        _, found = self._index.search(np.ascontiguousarray(query, dtype=np.float32)[None], count)
        keys: npt.NDArray[np.int64] = found[0]
        return keys[keys >= 0]

    def to_bytes(self) -> bytes:
        return bytes(_faiss().serialize_index(self._index))

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, trained_rows: int, dim: int) -> CoarseIndex:
        """The index ``to_bytes`` wrote; ValueError when the bytes are not one of ``dim``-d."""
        faiss = _faiss()
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError as exc:  # faiss reports a malformed stream as RuntimeError
            raise ValueError(f"not a faiss index ({str(exc).splitlines()[0][:120]})") from None
        if not isinstance(index, faiss.IndexIVFScalarQuantizer) or index.d != dim:
            raise ValueError("not an inverted file of this dimension")
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        return cls(index, trained_rows)
