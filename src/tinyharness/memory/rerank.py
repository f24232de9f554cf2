"""An optional second pass over search results: a chat model reorders the top candidates.

``ModelReranker`` sends one request (purpose ``memory``) with the question and the top
``depth`` memories, numbered, and asks for the numbers of the ones that help answer it, best first
(JSON, constrained by a schema where the server supports one). The memories it names come first in
its order, the rest keep the store's order, so an unreadable answer costs nothing but the call.
One request per search, not one per candidate: the cost is one prompt of ``depth`` short memories.

Off by default: it costs a model call per search (see bench/RESULTS.md for what it buys and
costs). ``tinyharness memory search --rerank MODEL`` (or ``memory_rerank`` in the config file)
turns it on. No cross-encoder ships its weights inside a registry package (the ones found
download them from a model hub at run time), so a chat model is what can score here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..messages import Message
from ..models.base import ModelRequest, ModelResponse
from .base import SearchHit
from .jsonloose import parse_json_loose

CallModel = Callable[[ModelRequest], Awaitable[ModelResponse]]
DEFAULT_DEPTH = 20  # candidates the model reads

RERANK_SYSTEM = (
    "You rank memories for a question. You get a question and numbered memories. Reply with JSON "
    'only: {"best": [numbers of the memories that help answer the question, most useful first]}.'
)
RERANK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"best": {"type": "array", "items": {"type": "integer"}, "maxItems": 10}},
    "required": ["best"],
}
MEMORY_CHARS = 300  # of each memory shown


class ModelSearchHelper:
    """A chat model that helps a search (reranking it, expanding its query): ``call_model``
    asks it, ``depth`` is how many hits it works on, ``close`` releases it."""

    def __init__(
        self,
        call_model: CallModel,
        *,
        depth: int = DEFAULT_DEPTH,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.call_model = call_model
        self.depth = depth
        self._close = close

    async def aclose(self) -> None:
        """Release the model (``close``, if one was given: e.g. stop a local server)."""
        if self._close is not None:
            close, self._close = self._close, None
            await close()


class ModelReranker(ModelSearchHelper):
    """Reorders search hits by what ``call_model`` answers (see the module docstring)."""

    async def rerank(self, query: str, hits: Sequence[SearchHit], limit: int) -> list[SearchHit]:
        head, tail = list(hits[: self.depth]), list(hits[self.depth :])
        if len(head) < 2:
            return (head + tail)[:limit]
        listed = "\n".join(
            f"[{i}] {json.dumps(h.item.content[:MEMORY_CHARS], ensure_ascii=False)}"
            for i, h in enumerate(head, 1)
        )
        request = ModelRequest(
            messages=(Message.user(f"Question: {query}\n\nMemories:\n{listed}"),),
            system=RERANK_SYSTEM,
            purpose="memory",
            max_tokens=60,
            response_schema=RERANK_SCHEMA,
        )
        response = await self.call_model(request)
        order = chosen_numbers(response.message.text, len(head))
        first = [head[n - 1] for n in order]
        rest = [h for i, h in enumerate(head, 1) if i not in set(order)]
        return (first + rest + tail)[:limit]


def chosen_numbers(text: str, count: int) -> list[int]:
    """The distinct numbers in 1..count the answer names, in its order (none when unreadable)."""
    data = parse_json_loose(text)
    if isinstance(data, dict):
        data = data.get("best", data.get("ranking", []))
    if not isinstance(data, list):
        return []
    seen: list[int] = []
    for value in data:
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and 1 <= value <= count
            and value not in seen
        ):
            seen.append(value)
    return seen
