"""Importing conversations (chat logs, transcripts) as memories, the way they are best found later.

Input: JSON Lines, one message per line, ``{"speaker": str, "text": str, "time": ISO-8601 or free
text (optional), "conversation": str (optional), "id": str (optional), "attachments": str or
list of str (optional)}``; the lines of one conversation in order. ``attachments`` describes what
the message showed besides its words (a photo's caption or alt text, a file's name).
``read_messages`` reads and checks them; ``import_messages`` writes one memory per message, and is
what ``tinyharness memory import`` runs:

- **content**: ``Speaker: text``, then ``[shares: ...]`` for each attachment (a message that only
  says "look at this" is found by what it showed); a reply to the other speaker's question also
  quotes that question ("Luna and Oliver!" alone holds none of the words of "What are your pets'
  names?").
- **subject** (``metadata["subject"]``): the speaker, so a question that names them prefers
  what they said over what others said about them.
- **event time**: the message's time (a line without one takes the previous line's), moved by
  what the text says ("yesterday", "last week"); its date is also written into the context as
  words, so "in May 2023" finds it through full-text search as well.
- **context** (searched at a lower weight): the date and the neighbouring messages.
- **vector**: the message's own embedding mixed with its neighbours' (``NEIGHBOUR_WEIGHT``): a
  short reply means little alone.
- **source ids** (``metadata["source_ids"]``): the line's ``id`` (or ``line-N``), reported by
  search, so a caller can tell which lines a memory came from.

Secrets are redacted before anything is written. Importing the same lines again adds nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..redact import redact
from .base import POSITION_KEY, SAID_AT_KEY, SOURCE_IDS_KEY, SUBJECT_KEY, MemoryStore, Scope, content_hash
from .embed import Embedder, Vectors, normalize_rows
from .timeparse import day_words, event_time, parse_time

NEIGHBOURS = 2  # messages on each side that make a message's context
# Weight of each adjacent message's vector in a message's vector. EmbeddingGemma reads a short
# reply better on its own: on the LoCoMo tuning half 0.0 / 0.2 / 0.3 / 0.5 gave 0.795 / 0.805 /
# 0.818 / 0.807 (vector weight 1.3); multilingual-e5-small was best at 0.5 (0.783, 0.779 at 0.3).
NEIGHBOUR_WEIGHT = 0.3
QUESTION_CHARS = 300  # of a question quoted in the answer's content
BATCH = 256  # messages embedded and written per transaction (progress is reported per batch)


class ImportFormatError(ValueError):
    """A line that is not a message; the text names the line."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    speaker: str
    text: str
    time: str | None = None
    conversation: str = ""
    id: str = ""
    attachments: tuple[str, ...] = ()

    @property
    def said(self) -> str:
        """The text with what it showed: ``text [shares: ATTACHMENT]`` per attachment."""
        shown = " ".join(f"[shares: {a}]" for a in self.attachments)
        return f"{self.text} {shown}".strip() if shown else self.text


@dataclass
class ImportReport:
    messages: int = 0
    added: int = 0
    skipped: int = 0  # already imported
    conversations: int = 0
    timed: int = 0  # messages with a readable time
    ids: list[str] = field(default_factory=list)  # ids of the memories written


class BulkStore(MemoryStore, Protocol):
    """A store that writes many memories in one transaction (both SQL stores do)."""

    embedder: Embedder | None

    def add_many(
        self,
        contents: Sequence[str],
        scope: Scope,
        *,
        vectors: Vectors | None = None,
        kind: str = "fact",
        contexts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any]] | None = None,
        event_times: Sequence[float | None] | None = None,
    ) -> list[str]: ...


def parse_message(raw: str, number: int) -> ChatMessage:
    """One JSON line as a message (``number`` is 1-based, for the error). Whatever the line
    holds, a line that is not a message raises ImportFormatError naming it: JSON nested deeper
    than Python can read, a number too long to convert, a lone surrogate escape (``\\ud800``,
    which no database can store)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"line {number}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise ImportFormatError(f"line {number}: JSON nested too deeply to be a message") from None
    except ValueError as exc:  # e.g. an integer longer than int() converts
        raise ImportFormatError(f"line {number}: not a message ({str(exc)[:120]})") from None
    if isinstance(data, dict):
        _check_encodable(data, number)
    if not isinstance(data, dict):
        raise ImportFormatError(f"line {number}: expected an object with speaker and text")
    speaker, text = data.get("speaker"), data.get("text")
    if not isinstance(speaker, str) or not isinstance(text, str):
        raise ImportFormatError(f'line {number}: "speaker" and "text" must be strings')
    when = data.get("time")
    if when is not None and not isinstance(when, str | int | float):
        raise ImportFormatError(f'line {number}: "time" must be a string (ISO-8601 or free text)')
    conversation, ident = data.get("conversation"), data.get("id")
    for name, value in (("conversation", conversation), ("id", ident)):
        if value is not None and not isinstance(value, str | int):
            raise ImportFormatError(f'line {number}: "{name}" must be a string')
    attached = data.get("attachments")
    if isinstance(attached, str):
        attached = [attached]
    if attached is not None and (
        not isinstance(attached, list) or not all(isinstance(a, str) for a in attached)
    ):
        raise ImportFormatError(f'line {number}: "attachments" must be a string or a list of strings')
    return ChatMessage(
        speaker=speaker.strip(),
        text=text,
        time=None if when is None else str(when),
        conversation="" if conversation is None else str(conversation),
        id=f"line-{number}" if ident is None or ident == "" else str(ident),
        attachments=tuple(a.strip() for a in attached or () if a.strip()),
    )


def _check_encodable(data: dict[str, Any], number: int) -> None:
    """ImportFormatError when a field the import keeps holds a lone surrogate."""
    for name in ("speaker", "text", "time", "conversation", "id", "attachments"):
        value = data.get(name)
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, str) and _SURROGATE.search(part):
                raise ImportFormatError(
                    f'line {number}: "{name}" holds a lone surrogate escape (such as \\ud800), '
                    "which is not text"
                )


_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_LINE_BYTES = 1 << 20  # a message longer than 1 MiB is not a chat message


def read_messages(path: str | Path) -> list[ChatMessage]:
    """The messages of a JSON Lines file (blank lines skipped); ImportFormatError names a bad
    line: not UTF-8, longer than ``MAX_LINE_BYTES``, or not a message. Lines are read with that
    bound, so a huge line costs no more memory than the bound."""
    messages = []
    with open(path, "rb") as handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise ImportFormatError(
                    f"line {number}: longer than {MAX_LINE_BYTES // (1 << 20)} MiB; one message per line, "
                    "split longer texts"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFormatError(
                    f"line {number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}); "
                    "save the file as UTF-8"
                ) from None
            if line.strip():
                messages.append(parse_message(line, number))
    return messages


def conversations(messages: Iterable[ChatMessage]) -> dict[str, list[ChatMessage]]:
    """Messages grouped by conversation, each in the order given, conversations in first-seen order."""
    grouped: dict[str, list[ChatMessage]] = {}
    for message in messages:
        grouped.setdefault(message.conversation, []).append(message)
    return grouped


def answered_question(messages: Sequence[ChatMessage], index: int) -> str:
    """The other speaker's question a message answers (the line before, ending with "?"), or ""."""
    before = messages[index - 1] if index else None
    if before is None or before.speaker == messages[index].speaker or not before.text.rstrip().endswith("?"):
        return ""
    return before.text.strip()[:QUESTION_CHARS]


def memory_content(messages: Sequence[ChatMessage], index: int) -> str:
    """``Speaker: text``, quoting the question it answers when the line before is the other
    speaker's question. (The date goes into the context: in the content it cost recall on the
    LoCoMo tuning half, 0.777 -> 0.772.)"""
    message = messages[index]
    content = f"{message.speaker}: {message.said}" if message.speaker else message.said
    question = answered_question(messages, index)
    if question:
        asker = messages[index - 1].speaker
        content += f" (answering {asker}: {question})" if asker else f" (answering: {question})"
    return content


def embedded_text(messages: Sequence[ChatMessage], index: int) -> str:
    """What a message's vector is computed from: its own text, without the speaker's name (a name
    in a vector pulls towards every message that names them) or the question it answers (on the
    LoCoMo tuning half, adding it took recall@5 from 0.777 to 0.766)."""
    message = messages[index]
    return message.said or message.speaker


def memory_context(
    messages: Sequence[ChatMessage], index: int, when: float | None, said: float | None = None
) -> str:
    """The date as words (the day it happened, and the day it was said when that differs), then
    the neighbouring messages."""
    around = range(max(0, index - NEIGHBOURS), min(len(messages), index + NEIGHBOURS + 1))
    lines = [f"{messages[j].speaker}: {messages[j].said}" for j in around if j != index]
    days = [day_words(when)] if when is not None else []
    if said is not None and day_words(said) not in days:
        days.append(f"said {day_words(said)}")
    return " | ".join(days + lines)


def smoothed(vectors: Vectors, weight: float | None = None) -> Vectors:
    """Each row plus ``weight`` (default NEIGHBOUR_WEIGHT) times the rows before and after it,
    renormalised."""
    weight = NEIGHBOUR_WEIGHT if weight is None else weight
    if len(vectors) < 2 or weight == 0:
        return vectors
    mixed = vectors.copy()
    mixed[1:] += weight * vectors[:-1]
    mixed[:-1] += weight * vectors[1:]
    return normalize_rows(mixed)


def import_messages(
    store: BulkStore,
    messages: Sequence[ChatMessage],
    *,
    user: str | None = None,
    agent: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Write one memory per message (see the module docstring). Scope: ``user`` if given, else
    each conversation is its own user (so ``search --user CONVERSATION`` searches one of them).
    ``progress(done, total)`` is called after each batch."""
    report = ImportReport(messages=len(messages))
    groups = conversations(messages)
    report.conversations = len(groups)
    done = 0
    for name, lines in groups.items():
        scope = Scope(user if user is not None else (name or None), agent, None)
        clean = [
            ChatMessage(
                redact(m.speaker),
                redact(m.text),
                m.time,
                m.conversation,
                m.id,
                tuple(redact(a) for a in m.attachments),
            )
            for m in lines
        ]
        said: list[float | None] = []
        last: float | None = None
        for message in clean:
            parsed = parse_time(message.time)
            if parsed is not None:
                report.timed += 1
            last = parsed if parsed is not None else last
            said.append(last)
        vectors = None
        if store.embedder is not None:
            own = _embed_in_batches(store.embedder, [embedded_text(clean, i) for i in range(len(clean))])
            vectors = smoothed(own)
        rows: list[tuple[int, str, str, dict[str, Any], float | None]] = []
        for index, message in enumerate(clean):
            content = memory_content(clean, index)
            existing = store.find_by_hash(content_hash(content), scope)
            if existing is not None and message.id in existing.source_ids:
                report.skipped += 1
                continue
            when = event_time(said[index], message.text)
            metadata: dict[str, Any] = {SUBJECT_KEY: message.speaker, SOURCE_IDS_KEY: [message.id]}
            if said[index] is not None:
                metadata[SAID_AT_KEY] = said[index]
            metadata[POSITION_KEY] = index
            if message.conversation:
                metadata["conversation"] = message.conversation
            rows.append((index, content, memory_context(clean, index, when, said[index]), metadata, when))
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            ids = store.add_many(
                [r[1] for r in batch],
                scope,
                vectors=None if vectors is None else np.stack([vectors[r[0]] for r in batch]),
                kind="message",
                contexts=[r[2] for r in batch],
                metadatas=[r[3] for r in batch],
                event_times=[r[4] for r in batch],
            )
            report.ids += ids
            report.added += len(ids)
            if progress is not None:
                progress(done + start + len(batch), len(messages))
        done += len(lines)
    return report


def _embed_in_batches(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    parts = [embedder.embed_documents(list(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def import_file(
    store: BulkStore,
    path: str | Path,
    *,
    user: str | None = None,
    agent: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """``read_messages`` then ``import_messages``: the library call behind ``tinyharness memory import``."""
    return import_messages(store, read_messages(path), user=user, agent=agent, progress=progress)
