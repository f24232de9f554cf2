"""What compaction took out of the window, kept searchable: ``DroppedHistory`` and the
``search_history`` tool.

Every message a compaction removes or rewrites (a summarized round, a dropped round, a tool
result cleared to a placeholder) is appended, redacted, to a SQLite file of the run, in
passages of about PASSAGE_CHARS characters; ``search_history`` finds passages in it, so a
detail a summary lost can be read again instead of worked out again.

The index is SQLite's FTS5 with the trigram tokenizer, chosen over the RE2 ``grep`` the project
already has because the model asks in words, not patterns: FTS5 ranks passages by how many of
the query's terms they hold (BM25), so "which port does the database use" finds the passage
with "database" and "port" without a regular expression a small model would get wrong, and
the index answers without reading the whole transcript again. Trigrams (rather than words)
match any substring of three or more characters, so identifiers (``ERR_4312``,
``src/db.py``) and Chinese or Japanese text, which has no spaces between words, are found too.
A query with no term of three characters falls back to a substring scan.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..redact import redact
from ..sqlitedb import Schema, open_database, write_transaction
from .base import Tool

PASSAGE_CHARS = 1200
MAX_HITS = 10
_TERM = re.compile(r"[\w][\w./:@#-]*")
_MIGRATIONS = [
    [
        "CREATE VIRTUAL TABLE passages USING fts5("
        "text, compaction UNINDEXED, source UNINDEXED, tokenize='trigram')",
    ],
]
SCHEMA = Schema("searchable history", 0x74684831, _MIGRATIONS)  # "thH1"


@dataclass(frozen=True)
class Passage:
    compaction: int
    source: str  # who said it: user, assistant, or the tool call a result answers
    text: str


class DroppedHistory:
    """The run's dropped messages, in a full-text index at ``path`` (created on the first
    record, readable by the user only). Implements the context manager's ``DroppedLog``."""

    def __init__(self, path: Path, owner: Path | None = None) -> None:
        self.path = Path(path)
        self.owner = owner  # the workspace: a link on the way out of it is refused
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _open(self, *, create: bool) -> sqlite3.Connection | None:
        if self._db is None and (create or self.path.exists()):
            self._db = open_database(self.path, SCHEMA, ConfigError, private=True, owner=self.owner)
        return self._db

    def record(
        self, messages: Sequence[Message], compaction: int, calls: Mapping[str, ToolUseBlock] | None = None
    ) -> None:
        """Append ``messages`` (taken out by compaction number ``compaction``); ``calls`` names
        the call each tool result answers when the call itself stayed in the window."""
        rows = [(text, compaction, source) for source, text in _passages(messages, calls or {})]
        if not rows:
            return
        with self._lock:
            db = self._open(create=True)
            assert db is not None
            try:
                with write_transaction(db):
                    db.executemany("INSERT INTO passages(text, compaction, source) VALUES (?, ?, ?)", rows)
            except sqlite3.Error as exc:  # a full disk: the caller reports it, the run goes on
                raise ConfigError(f"cannot write {SCHEMA.kind} {self.path}: {exc}") from None

    def search(self, query: str, limit: int = 5) -> list[Passage]:
        """The passages that best match ``query`` (most matching terms first)."""
        limit = max(1, min(limit, MAX_HITS))
        with self._lock:
            db = self._open(create=False)
            if db is None:
                return []
            terms = [t for t in _TERM.findall(query) if len(t) >= 3]
            if terms:
                match = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))
                rows = db.execute(
                    "SELECT compaction, source, text FROM passages WHERE passages MATCH ? "
                    "ORDER BY rank LIMIT ?",
                    (match, limit),
                ).fetchall()
            else:
                needle = query.strip()
                if not needle:
                    return []
                rows = db.execute(
                    "SELECT compaction, source, text FROM passages WHERE instr(lower(text), lower(?)) > 0 "
                    "ORDER BY rowid DESC LIMIT ?",
                    (needle, limit),
                ).fetchall()
        return [Passage(int(c), str(s), str(t)) for c, s, t in rows]

    def __len__(self) -> int:
        with self._lock:
            db = self._open(create=False)
            return 0 if db is None else int(db.execute("SELECT count(*) FROM passages").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def tool(self) -> Tool:
        """The ``search_history`` tool over this index."""

        def search_history(query: str, limit: int = 5) -> str:
            hits = self.search(query, limit)
            if not hits:
                if self._open(create=False) is None:
                    return "Nothing was taken out of the conversation yet: all of it is in your context."
                return f"No passage of the earlier conversation matches {query!r}; try other words."
            shown = [f"[from before compaction #{h.compaction}, {h.source}]\n{h.text}" for h in hits]
            return "\n\n".join(shown)

        schema = {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words or exact strings (3 characters or more) to look for.",
                    "maxLength": 200,
                },
                "limit": {
                    "type": "integer",
                    "description": "Passages to return (1-10).",
                    "minimum": 1,
                    "maximum": 10,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        return Tool("search_history", SEARCH_DESCRIPTION, schema, search_history)


SEARCH_DESCRIPTION = (
    "Search the earlier part of this conversation that was summarized or dropped to fit the "
    "context window (your tool calls, their full results, messages). Use it to get back an exact "
    "detail (a value, a name, an error message) instead of redoing the work."
)


def _passages(messages: Sequence[Message], calls: Mapping[str, ToolUseBlock]) -> list[tuple[str, str]]:
    """(source, text) passages of ``messages``, redacted."""
    out: list[tuple[str, str]] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                out += _chunks(message.role, block.text)
            elif isinstance(block, ToolUseBlock):
                out += _chunks("assistant", f"called {_call_text(block)}")
            elif isinstance(block, ToolResultBlock):
                call = calls.get(block.tool_use_id)
                out += _chunks(f"result of {_call_text(call) if call else 'a tool call'}", block.content)
    return [(redact(source), redact(text)) for source, text in out]


def _call_text(call: ToolUseBlock) -> str:
    arguments = (
        call.input if isinstance(call.input, str) else json.dumps(call.input, ensure_ascii=False, default=str)
    )
    if len(arguments) > 300:
        arguments = arguments[:300] + "…"
    return f"{call.name}({arguments})"


def _chunks(source: str, text: str) -> list[tuple[str, str]]:
    """``text`` in passages of about PASSAGE_CHARS, cut at line ends where there are some."""
    out: list[tuple[str, str]] = []
    while len(text) > PASSAGE_CHARS:
        cut = text.rfind("\n", PASSAGE_CHARS // 2, PASSAGE_CHARS)
        cut = cut + 1 if cut > 0 else PASSAGE_CHARS
        out.append((source, text[:cut]))
        text = text[cut:]
    if text.strip():
        out.append((source, text))
    return out
