"""``ScopedMemory``: the agent loop's view of long-term memory (its ``LongTermMemory`` protocol)."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message
from .base import Scope
from .manager import CallModel, MemoryManager


class ScopedMemory:
    """Recall for a new task and extraction at the end of a run, both within one scope."""

    def __init__(self, manager: MemoryManager, scope: Scope) -> None:
        self.manager = manager
        self.scope = scope

    async def recall(self, task: str) -> str:
        return await self.manager.recall_block(task, self.scope)

    async def remember(self, messages: Sequence[Message], call_model: CallModel) -> None:
        await self.manager.extract_and_store(messages, self.scope, call_model)
