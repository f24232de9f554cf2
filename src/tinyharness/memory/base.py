"""The long-term memory seam: the records, the scope they live in, and the ``MemoryStore`` protocol.

A memory is a short text (a preference, a constraint, a conclusion) with a scope (user, agent,
session). Memories are versioned: an update writes a new version and closes the old one
(``valid_to``, ``superseded_by``); a delete or an eviction closes the version without a
successor. Nothing is removed: ``history`` returns every version of a memory, while ``search``,
``list`` and ``get_current`` see only current versions. All versions of one memory share a
``root_id``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Status = Literal["current", "superseded", "deleted", "evicted"]

SUBJECT_KEY = "subject"  # metadata: who or what a memory is about
SOURCE_IDS_KEY = "source_ids"  # metadata: ids of the imported lines a memory came from
POSITION_KEY = "position"  # metadata: an imported message's place in its conversation (0-based)
SAID_AT_KEY = "said_at"  # metadata: when an imported message was written (Unix seconds)


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a memory belongs to. A field left ``None`` in a query matches any value; in a
    stored memory it means "not tied to one"."""

    user: str | None = None
    agent: str | None = None
    session: str | None = None

    def matches(self, other: Scope) -> bool:
        """Whether a memory stored under ``other`` is visible to a query with this scope."""
        return all(
            mine is None or mine == theirs
            for mine, theirs in (
                (self.user, other.user),
                (self.agent, other.agent),
                (self.session, other.session),
            )
        )

    def describe(self) -> str:
        parts = [
            f"{k}={v}"
            for k, v in (("user", self.user), ("agent", self.agent), ("session", self.session))
            if v
        ]
        return ", ".join(parts) or "any"


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One version of one memory. Times are Unix seconds."""

    id: str
    root_id: str
    version: int
    content: str
    scope: Scope
    kind: str = "fact"
    metadata: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""
    status: Status = "current"
    valid_from: float = 0.0
    valid_to: float | None = None
    previous_id: str | None = None
    superseded_by: str | None = None
    reason: str = ""
    last_access_at: float = 0.0
    access_count: int = 0
    context: str = ""  # searchable at a lower weight, not part of the memory (e.g. its source)
    event_time: float | None = None  # when what it says happened (Unix seconds), if known

    @property
    def is_current(self) -> bool:
        return self.status == "current"

    @property
    def subject(self) -> str:
        """Who or what the memory is about (``metadata["subject"]``), or ""."""
        value = self.metadata.get(SUBJECT_KEY)
        return value if isinstance(value, str) else ""

    @property
    def said_at(self) -> float | None:
        """When an imported message was written (its event time may be earlier: "yesterday")."""
        value = self.metadata.get(SAID_AT_KEY)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def source_ids(self) -> list[str]:
        """The ids of the imported lines (messages, commits...) this memory came from."""
        value = self.metadata.get(SOURCE_IDS_KEY)
        return [str(v) for v in value] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class SearchHit:
    item: MemoryItem
    score: float
    text_rank: int | None = None  # 1-based rank in the full-text list, if it was there
    vector_rank: int | None = None  # 1-based rank in the vector list, if it was there
    similarity: float | None = None  # cosine similarity to the query vector, if one was used


def normalize_for_hash(content: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", content)).strip().casefold()


def content_hash(content: str) -> str:
    """The hash that catches exact duplicates (case, width and spacing do not count)."""
    return hashlib.sha256(normalize_for_hash(content).encode("utf-8")).hexdigest()


class MemoryNotFound(KeyError):
    """No memory with that id, or it is not current where a current one is needed."""


@runtime_checkable
class MemoryStore(Protocol):
    """Where memories live. Implementations: ``SQLiteStore`` (embedded), ``PostgresStore``."""

    url: str

    def add(
        self,
        content: str,
        scope: Scope,
        *,
        kind: str = "fact",
        metadata: dict[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        context: str = "",
        event_time: float | None = None,
    ) -> MemoryItem:
        """Store a new memory (version 1); ``vector`` overrides the store's embedder; ``context``
        is searchable at a lower weight (``text.CONTEXT_WEIGHT``) but not part of the content;
        ``event_time`` is when what it says happened (Unix seconds)."""
        ...

    def add_unique(
        self,
        content: str,
        scope: Scope,
        *,
        within: Scope,
        kind: str = "fact",
        metadata: dict[str, Any] | None = None,
        context: str = "",
        event_time: float | None = None,
    ) -> tuple[MemoryItem, bool]:
        """``add`` unless a current memory with the same ``content_hash`` is visible in ``within``
        (then it, and False), atomically across processes."""
        ...

    def search(
        self, query: str, scope: Scope, *, limit: int = 5, vector: Sequence[float] | None = None
    ) -> list[SearchHit]:
        """Current memories in ``scope`` most relevant to ``query``, best first (hybrid ranking)."""
        ...

    def get(self, memory_id: str) -> MemoryItem | None:
        """Any version by id (current or not)."""
        ...

    def update(
        self,
        memory_id: str,
        content: str,
        *,
        reason: str = "",
        metadata: dict[str, Any] | None = None,
        vector: Sequence[float] | None = None,
        context: str | None = None,
        event_time: float | None = None,
    ) -> MemoryItem:
        """Write a new version of a current memory; returns it. MemoryNotFound if not current.
        ``metadata``, ``context`` and ``event_time`` left ``None`` keep the old version's."""
        ...

    def delete(self, memory_id: str, *, reason: str = "", status: Status = "deleted") -> MemoryItem:
        """Close a current memory without a successor (kept in history); returns the closed version."""
        ...

    def history(self, memory_id: str) -> list[MemoryItem]:
        """Every version of the memory that ``memory_id`` belongs to, oldest first."""
        ...

    def list_items(
        self, scope: Scope, *, include_closed: bool = False, limit: int | None = None
    ) -> list[MemoryItem]:
        """Memories in ``scope``, newest first; closed versions too with ``include_closed``."""
        ...

    def find_by_hash(self, digest: str, scope: Scope) -> MemoryItem | None:
        """A current memory in ``scope`` with this content hash."""
        ...

    def count(self, scope: Scope) -> int:
        """How many current memories ``scope`` holds."""
        ...

    def touch(self, memory_ids: Sequence[str]) -> None:
        """Record that these memories were recalled (recency and use drive eviction)."""
        ...

    def close(self) -> None: ...


# Column order shared by the SQL stores.
COLUMNS = (
    "id, root_id, version, content, user_id, agent_id, session_id, kind, metadata, content_hash, status, "
    "valid_from, valid_to, previous_id, superseded_by, reason, last_access_at, access_count, context, "
    "event_time"
)


def item_from_row(row: Sequence[Any]) -> MemoryItem:
    """A MemoryItem from a row selected with ``COLUMNS``."""
    metadata = row[8]
    if isinstance(metadata, str):
        metadata = json.loads(metadata) if metadata else {}
    return MemoryItem(
        id=row[0],
        root_id=row[1],
        version=int(row[2]),
        content=row[3],
        scope=Scope(row[4] or None, row[5] or None, row[6] or None),
        kind=row[7],
        metadata=dict(metadata or {}),
        content_hash=row[9],
        status=row[10],
        valid_from=float(row[11]),
        valid_to=None if row[12] is None else float(row[12]),
        previous_id=row[13],
        superseded_by=row[14],
        reason=row[15] or "",
        last_access_at=float(row[16]),
        access_count=int(row[17]),
        context=row[18] or "",
        event_time=None if row[19] is None else float(row[19]),
    )
