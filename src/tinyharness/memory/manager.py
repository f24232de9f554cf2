"""``MemoryManager``: what the agent loop calls to remember and to recall.

- ``extract_and_store(messages, scope, call_model)``: one model request (purpose ``memory``,
  structured output) extracts the facts worth keeping; each is redacted and checked against exact
  duplicates by hash; if similar memories exist, a second request shows them to the model with
  small integer ids and the model decides add / update / delete / nothing for each. Updates and
  deletes keep the old version (see ``base``). Then the scope is held to ``max_items`` by
  evicting the least recently and least often used memories (kept in history as ``evicted``).
  Every memory written carries what makes it findable later, as an import does: its subject (who
  or what it is about: the model's, else the scope's user), its event time (the model's, else
  the conversation's date moved by "yesterday"-like words in the fact), and the conversation it
  came from as its context (the task and the final answer, clipped).
- ``recall_block(query, scope)``: the top-k relevant current memories as a quoted, delimited
  block of text to place after the stable prompt prefix (e.g. just before the user's turn).

Model calls go through the ``call_model`` the loop passes in, so they are counted and logged with
the run. Bad JSON from the model never loses a fact: unreadable consolidation output falls back
to adding the new facts. Store calls run in a worker thread (embedding can take milliseconds).
The prompts live in ``prompts``, the answer parsers in ``parsing``, the block in ``block``.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..events import EventBus
from ..messages import Message
from ..models.base import ModelRequest, ModelResponse
from ..redact import redact
from .base import SUBJECT_KEY, MemoryItem, MemoryNotFound, MemoryStore, Scope, SearchHit, content_hash
from .block import format_memory_block
from .parsing import Fact, parse_facts, parse_operations
from .prompts import (
    CONSOLIDATION_SCHEMA,
    CONSOLIDATION_SYSTEM,
    EXTRACTION_SCHEMA,
    EXTRACTION_SYSTEM,
    KINDS,
    extraction_prompt,
    extraction_transcript,
)
from .rerank import ModelReranker
from .timeparse import event_time, parse_time

CallModel = Callable[[ModelRequest], Awaitable[ModelResponse]]
OpName = Literal["add", "update", "delete", "none", "duplicate", "evict"]
CONTEXT_CHARS = 300  # of the task and of the final answer kept as an extracted memory's context


@dataclass(frozen=True, slots=True)
class Origin:
    """Where extracted facts come from: the conversation (as context) and when it took place."""

    context: str = ""
    said_at: float = 0.0


@dataclass(frozen=True, slots=True)
class MemoryOp:
    """One change the manager made (or decided not to make)."""

    op: OpName
    memory_id: str | None
    content: str
    previous_id: str | None = None


class MemoryManager:
    def __init__(
        self,
        store: MemoryStore,
        *,
        events: EventBus | None = None,
        max_items: int = 200,
        top_k: int = 5,
        similar_k: int = 5,
        min_similarity: float = 0.8,
        transcript_chars: int = 12_000,
        use_weight_seconds: float = 86_400.0,
        reranker: ModelReranker | None = None,
    ) -> None:
        """``min_similarity``: a recalled memory must match a query word, or have at least this
        cosine similarity (calibrated for e5; irrelevant memories only dilute the context).
        ``use_weight_seconds``: in eviction, each e-fold of uses counts as this much recency.
        ``reranker``: a ``rerank.ModelReranker`` that reorders the store's top results (one model
        call per recall)."""
        self.store = store
        self.events = events
        self.max_items = max_items
        self.top_k = top_k
        self.similar_k = similar_k
        self.min_similarity = min_similarity
        self.transcript_chars = transcript_chars
        self.use_weight_seconds = use_weight_seconds
        self.reranker = reranker  # reorders the store's top results before recall (off by default)

    def _emit(self, type: str, **fields: Any) -> None:
        if self.events is not None:
            self.events.emit(type, **fields)

    # --- recall -------------------------------------------------------------------------------

    async def recall(self, query: str, scope: Scope, *, limit: int | None = None) -> list[MemoryItem]:
        """The most relevant current memories for ``query`` (redacted again), recording their use."""
        k = limit or self.top_k
        depth = max(k, self.reranker.depth) if self.reranker is not None else k
        hits = await asyncio.to_thread(self.store.search, query, _long_term(scope), limit=depth)
        if self.reranker is not None:
            hits = await self.reranker.rerank(query, hits, k)
        chosen = [h for h in hits if self._relevant(h)]
        items = [_redacted(h.item) for h in chosen]
        if items:
            await asyncio.to_thread(self.store.touch, [i.id for i in items])
        self._emit("memory_recall", query_chars=len(query), hits=len(items), ids=[i.id for i in items])
        return items

    def _relevant(self, hit: SearchHit) -> bool:
        if hit.text_rank is not None:
            return True
        return hit.similarity is not None and hit.similarity >= self.min_similarity

    async def recall_block(self, query: str, scope: Scope, *, limit: int | None = None) -> str:
        """A block to inject before a turn, or "" when nothing relevant is remembered."""
        return format_memory_block(await self.recall(query, scope, limit=limit))

    # --- writing ------------------------------------------------------------------------------

    async def remember(
        self,
        text: str,
        scope: Scope,
        *,
        kind: str = "fact",
        subject: str = "",
        when: str = "",
        context: str = "",
    ) -> MemoryOp:
        """Store one fact directly (a tool or the CLI): redacted, de-duplicated, limit enforced.
        ``when`` (ISO or free text) is when it happened; by default, now."""
        origin = Origin(redact(context), time.time())
        op = await asyncio.to_thread(self._add_fact, Fact(text, kind, subject, when), scope, origin)
        await self._enforce_limit(scope)
        return op

    async def extract_and_store(
        self,
        messages: Sequence[Message],
        scope: Scope,
        call_model: CallModel,
        *,
        now: float | None = None,
    ) -> list[MemoryOp]:
        """Extract what is worth keeping from ``messages`` (a conversation held at ``now``,
        default: the current time) and merge it into the store."""
        said_at = time.time() if now is None else now
        origin = Origin(conversation_context(messages, said_at), said_at)
        facts = await self._extract(messages, call_model, said_at)
        ops: list[MemoryOp] = []
        fresh: list[Fact] = []
        for fact in facts:
            existing = await asyncio.to_thread(
                self.store.find_by_hash, content_hash(fact.text), _long_term(scope)
            )
            if existing is not None:
                ops.append(self._record(MemoryOp("duplicate", existing.id, fact.text)))
            elif fact.text not in {f.text for f in fresh}:
                fresh.append(fact)
        if fresh:
            similar = await self._similar(fresh, scope)
            if similar:
                ops += await self._consolidate(fresh, similar, scope, call_model, origin)
            else:
                for fact in fresh:
                    ops.append(await asyncio.to_thread(self._add_fact, fact, scope, origin))
        ops += await self._enforce_limit(scope)
        return ops

    async def _extract(
        self, messages: Sequence[Message], call_model: CallModel, said_at: float
    ) -> list[Fact]:
        transcript = extraction_transcript(messages, self.transcript_chars)
        if not transcript.strip():
            return []
        today = time.strftime("%Y-%m-%d", time.gmtime(said_at))
        reply = await _ask(
            call_model, extraction_prompt(transcript, today), EXTRACTION_SYSTEM, EXTRACTION_SCHEMA
        )
        facts = parse_facts(reply)
        self._emit("memory_write", op="extract", facts=len(facts))
        return [
            Fact(redact(f.text), f.kind, redact(f.subject), f.time) for f in facts if redact(f.text).strip()
        ]

    async def _similar(self, facts: Sequence[Fact], scope: Scope) -> list[MemoryItem]:
        seen: dict[str, MemoryItem] = {}
        for fact in facts:
            hits = await asyncio.to_thread(
                self.store.search, fact.text, _long_term(scope), limit=self.similar_k
            )
            for hit in hits:
                if self._relevant(hit):
                    seen.setdefault(hit.item.id, hit.item)
        # Oldest first: the numbering the model sees does not depend on the backend's ranking.
        chosen = list(seen.values())[: self.similar_k * 2]
        return sorted(chosen, key=lambda item: (item.valid_from, item.id))

    async def _consolidate(
        self,
        facts: Sequence[Fact],
        similar: Sequence[MemoryItem],
        scope: Scope,
        call_model: CallModel,
        origin: Origin,
    ) -> list[MemoryOp]:
        existing = "\n".join(
            f"[{i}] {json.dumps(m.content, ensure_ascii=False)}" for i, m in enumerate(similar, 1)
        )
        new = "\n".join(f"({i}) {json.dumps(f.text, ensure_ascii=False)}" for i, f in enumerate(facts, 1))
        reply = await _ask(
            call_model,
            f"Existing memories:\n{existing}\n\nNew facts:\n{new}",
            CONSOLIDATION_SYSTEM,
            CONSOLIDATION_SCHEMA,
        )
        decisions = parse_operations(reply)
        return await asyncio.to_thread(self._apply, decisions, facts, similar, scope, origin)

    def _apply(
        self,
        decisions: list[dict[str, Any]] | None,
        facts: Sequence[Fact],
        similar: Sequence[MemoryItem],
        scope: Scope,
        origin: Origin,
    ) -> list[MemoryOp]:
        """Carry out the model's decisions; facts it did not mention (or all of them, when its
        answer was unreadable) are added, so nothing is lost."""
        ops: list[MemoryOp] = []
        handled: set[int] = set()
        touched: set[int] = set()
        for decision in decisions or []:
            op = decision.get("op")
            fact_no = _int(decision.get("fact"))
            fact = facts[fact_no - 1] if fact_no is not None and 1 <= fact_no <= len(facts) else None
            mem_no = _int(decision.get("id"))
            target = similar[mem_no - 1] if mem_no is not None and 1 <= mem_no <= len(similar) else None
            text = redact(str(decision.get("text") or (fact.text if fact else ""))).strip()
            applied = True
            if op == "add" and text:
                base = fact or Fact(text)
                ops.append(self._add_fact(replace(base, text=text), scope, origin))
            elif op in ("update", "delete") and target is not None and mem_no not in touched:
                touched.add(mem_no or 0)
                try:
                    if op == "update" and text:
                        subject, when = self._about(fact or Fact(text), scope, origin)
                        new = self.store.update(
                            target.id,
                            text,
                            reason=f"consolidated: {text[:80]}",
                            metadata={**target.metadata, SUBJECT_KEY: subject} if subject else None,
                            context=origin.context or None,
                            event_time=when,
                        )
                        ops.append(self._record(MemoryOp("update", new.id, text, target.id)))
                    elif op == "delete":
                        self.store.delete(target.id, reason=f"contradicted by: {text[:80]}")
                        ops.append(self._record(MemoryOp("delete", target.id, target.content)))
                    else:
                        applied = False
                except MemoryNotFound:  # another writer closed it meanwhile
                    applied = False
            elif op == "none":
                ops.append(self._record(MemoryOp("none", target.id if target else None, text)))
            else:  # unknown op, or an id the model was not shown: the fact is added below
                applied = False
            if applied and fact_no is not None and fact is not None:
                handled.add(fact_no)
        if decisions is None:
            self._emit("memory_write", op="consolidate_unreadable", facts=len(facts))
        for number, fact in enumerate(facts, 1):
            if number not in handled:
                ops.append(self._add_fact(fact, scope, origin))
        return ops

    def _about(self, fact: Fact, scope: Scope, origin: Origin) -> tuple[str, float | None]:
        """A fact's subject (the model's, else the scope's user) and event time (the model's,
        else the conversation's time moved by words like "yesterday" in the fact)."""
        subject = redact(fact.subject).strip() or (scope.user or "")
        when = parse_time(fact.time) if fact.time else None
        return subject, when if when is not None else event_time(origin.said_at or time.time(), fact.text)

    def _add_fact(self, fact: Fact, scope: Scope, origin: Origin) -> MemoryOp:
        text = redact(fact.text).strip()
        kind = fact.kind if fact.kind in KINDS else "fact"
        subject, when = self._about(fact, scope, origin)
        # One transaction for the check and the insert: another process may store the same fact.
        item, added = self.store.add_unique(
            text,
            scope,
            within=_long_term(scope),
            kind=kind,
            metadata={SUBJECT_KEY: subject} if subject else None,
            context=origin.context,
            event_time=when,
        )
        return self._record(MemoryOp("add" if added else "duplicate", item.id, text))

    def _record(self, op: MemoryOp) -> MemoryOp:
        self._emit(
            "memory_write", op=op.op, id=op.memory_id, previous_id=op.previous_id, chars=len(op.content)
        )
        return op

    async def _enforce_limit(self, scope: Scope) -> list[MemoryOp]:
        return await asyncio.to_thread(self.enforce_limit, scope)

    def enforce_limit(self, scope: Scope) -> list[MemoryOp]:
        """Evict the least valuable current memories of the scope beyond ``max_items``."""
        where = _long_term(scope)
        excess = self.store.count(where) - self.max_items
        if excess <= 0:
            return []
        items = self.store.list_items(where)
        items.sort(key=self._keep_priority)
        ops = []
        for item in items[:excess]:
            try:
                self.store.delete(
                    item.id, reason=f"evicted: over max_items={self.max_items}", status="evicted"
                )
            except MemoryNotFound:
                continue
            ops.append(self._record(MemoryOp("evict", item.id, item.content)))
        return ops

    def _keep_priority(self, item: MemoryItem) -> float:
        return item.last_access_at + self.use_weight_seconds * math.log1p(item.access_count)


# --- helpers --------------------------------------------------------------------------------------


def conversation_context(messages: Sequence[Message], said_at: float) -> str:
    """The context an extracted memory keeps: the date, the first user request and the last
    assistant answer of the conversation, clipped and redacted."""
    day = time.strftime("%Y-%m-%d", time.gmtime(said_at))
    asked = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
    answered = next((m.text for m in reversed(messages) if m.role == "assistant" and m.text.strip()), "")
    parts = [f"conversation of {day}"]
    if asked:
        parts.append(f"user asked: {_clip(asked)}")
    if answered:
        parts.append(f"assistant answered: {_clip(answered)}")
    return redact(" | ".join(parts))


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CONTEXT_CHARS else flat[: CONTEXT_CHARS - 1] + "…"


async def _ask(call_model: CallModel, prompt: str, system: str, schema: dict[str, Any]) -> str:
    """The text of the model's reply to one memory request (``prompt`` as the user's message)."""
    request = ModelRequest(
        messages=(Message.user(prompt),),
        system=system,
        purpose="memory",
        max_tokens=800,
        response_schema=schema,
    )
    response = await call_model(request)
    return response.message.text


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _long_term(scope: Scope) -> Scope:
    """Long-term memories are shared across sessions: recall and de-duplication ignore the session."""
    return Scope(scope.user, scope.agent, None)


def _redacted(item: MemoryItem) -> MemoryItem:
    clean = redact(item.content)
    return item if clean == item.content else replace(item, content=clean)


__all__ = [
    "CallModel",
    "Fact",
    "MemoryManager",
    "MemoryOp",
    "Origin",
    "conversation_context",
    "format_memory_block",
    "parse_facts",
    "parse_operations",
]
