"""Fixtures for the memory tests (import with ``from memory_conftest import *``).

``memory_store`` runs a test on SQLite and on PostgreSQL + pgvector; the PostgreSQL case needs
TINYHARNESS_TEST_PG_URL (``eval "$(scripts/pg-test-server.sh)"`` sets it) and is skipped with
that reason otherwise. Each PostgreSQL test gets its own table prefix, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tinyharness.memory.base import MemoryStore
from tinyharness.memory.embed import HashingEmbedder
from tinyharness.memory.sqlite_store import SQLiteStore

__all__ = ["PG_ENV", "memory_backend", "memory_open", "memory_pg_url", "memory_store"]

PG_ENV = "TINYHARNESS_TEST_PG_URL"
PG_SKIP = f'{PG_ENV} is not set; run: eval "$(scripts/pg-test-server.sh)" to test on PostgreSQL'


def memory_pg_url() -> str:
    url = os.environ.get(PG_ENV, "")
    if not url:
        pytest.skip(PG_SKIP)
    return url


def memory_open(backend: str, tmp_path: Path, *, prefix: str | None = None) -> MemoryStore:
    embedder = HashingEmbedder(128)
    if backend == "sqlite":
        return SQLiteStore(tmp_path / "memory.db", embedder=embedder)
    from tinyharness.memory.pg_store import PostgresStore

    return PostgresStore(
        memory_pg_url(), embedder=embedder, table_prefix=prefix or f"t{uuid.uuid4().hex[:10]}_"
    )


@pytest.fixture(params=["sqlite", "postgres"])
def memory_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        memory_pg_url()
    return str(request.param)


@pytest.fixture
def memory_store(memory_backend: str, tmp_path: Path) -> Iterator[MemoryStore]:
    store = memory_open(memory_backend, tmp_path)
    yield store
    drop = getattr(store, "drop_tables", None)
    if drop is not None:
        drop()
    store.close()
