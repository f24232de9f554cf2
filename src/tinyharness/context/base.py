"""The seam between the agent loop and context management.

The loop calls a ``ContextPolicy`` at fixed points: after every model response
(``record_response``), after messages are appended to the history (``record_appended``), right
before each agent request (``prepare``: the compaction check of lesson 6, after tool results are
appended and before the next call) and when the provider refuses a request as too long
(``recover``: reactive compaction). Compaction requests go through ``call_model`` so they are
counted, validated and reported like every other model call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from ..messages import Message
from ..models.base import ModelRequest, ModelResponse

ModelCaller = Callable[[ModelRequest], Awaitable[ModelResponse]]


class ContextPolicy(Protocol):
    @property
    def tokens(self) -> int:
        """The accounting counter (tokens in the window, or the cumulative lesson-6 counter)."""
        ...

    @property
    def compactions(self) -> int: ...

    def record_response(self, request: ModelRequest, response: ModelResponse) -> None: ...

    def record_appended(self, messages: Sequence[Message]) -> None: ...

    async def prepare(
        self, system: str, messages: list[Message], call_model: ModelCaller
    ) -> list[Message]: ...

    async def recover(
        self, system: str, messages: list[Message], call_model: ModelCaller
    ) -> list[Message]: ...


class Unmanaged:
    """Counts tokens in the window from usage and never compacts: the agent's policy when it
    is given none (the CLI's ``--strategy none`` uses a ContextManager with no steps)."""

    def __init__(self) -> None:
        self._tokens = 0

    @property
    def tokens(self) -> int:
        return self._tokens

    @property
    def compactions(self) -> int:
        return 0

    def record_response(self, request: ModelRequest, response: ModelResponse) -> None:
        if request.purpose == "agent":
            self._tokens = response.usage.total

    def record_appended(self, messages: Sequence[Message]) -> None:
        return None

    async def prepare(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        return messages

    async def recover(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        return messages
