"""An optional query expansion: a chat model writes the message that would answer the question.

A question and the memory that answers it often share few words: "What activities does Melanie
partake in?" against "Went camping with the kids last weekend!". ``QueryExpander`` asks a model
for a hypothetical answer (one or two sentences, as the person would say it: the HyDE idea), then
searches the store with the question and with that answer, and fuses the two rankings by
reciprocal rank fusion. The answer is a guess; it only has to share words and meaning with the
real one. An empty or failed answer leaves the question's own ranking.

Off by default: one model call per search (see bench/RESULTS.md for what it buys and costs).
``tinyharness memory search --expand MODEL`` turns it on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from ..messages import Message
from ..models.base import ModelRequest, ModelResponse
from .base import MemoryStore, Scope, SearchHit
from .rerank import ModelSearchHelper
from .text import RRF_K, reciprocal_rank_fusion

CallModel = Callable[[ModelRequest], Awaitable[ModelResponse]]

EXPAND_SYSTEM = (
    "You help search a chat history. Given a question about the people in it, write the chat "
    "message that would answer it, one or two sentences, as that person would say it. Guess "
    "concrete details (names of activities, places, things). Reply with the message only."
)
ANSWER_TOKENS = 48  # one or two sentences
ANSWER_CHARS = 400  # of the answer used as a query


class QueryExpander(ModelSearchHelper):
    """Searches with the question and a model's hypothetical answer (see the module docstring).
    ``depth``: how many results of each search are fused."""

    async def hypothesis(self, query: str) -> str:
        """The model's guess at the message that answers ``query`` ("" when it gives none)."""
        request = ModelRequest(
            messages=(Message.user(f"Question: {query}"),),
            system=EXPAND_SYSTEM,
            purpose="memory",
            max_tokens=ANSWER_TOKENS,
        )
        response = await self.call_model(request)
        return " ".join(response.message.text.split())[:ANSWER_CHARS]

    async def search(self, store: MemoryStore, query: str, scope: Scope, limit: int = 5) -> list[SearchHit]:
        """The best ``limit`` memories for ``query``: the store's ranking of the question fused
        with its ranking of the hypothetical answer, each weighted alike."""
        depth = max(limit, self.depth)
        own = store.search(query, scope, limit=depth)
        guess = await self.hypothesis(query)
        if not guess.strip():
            return own[:limit]
        other = store.search(guess, scope, limit=depth)
        return fuse_hits([own, other])[:limit]


def fuse_hits(rankings: list[list[SearchHit]]) -> list[SearchHit]:
    """Hit lists fused by reciprocal rank fusion on the memory ids, each hit scored by the fusion
    (the first list's hit is kept for a memory in several)."""
    by_id: dict[str, SearchHit] = {}
    for hits in rankings:
        for hit in hits:
            by_id.setdefault(hit.item.id, hit)
    fused = reciprocal_rank_fusion([[h.item.id for h in hits] for hits in rankings], k=RRF_K)
    return [dataclasses.replace(by_id[key], score=score) for key, score in fused]
