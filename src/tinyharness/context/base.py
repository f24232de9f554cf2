"""The seam between the agent loop and context management.

The loop calls a ``ContextPolicy`` at fixed points: after every model response
(``record_response``), after messages are appended to the history (``record_appended``), right
before each agent request (``prepare``: the compaction check, after tool results are appended
and before the next call) and when the provider refuses a request as too long
(``recover``: reactive compaction). Compaction requests go through ``call_model`` so they are
counted, validated and reported like every other model call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from ..messages import Message, ToolUseBlock
from ..models.base import ModelRequest, ModelResponse

ModelCaller = Callable[[ModelRequest], Awaitable[ModelResponse]]


class DroppedLog(Protocol):
    """Where the messages a compaction takes out of the window go, so they can still be
    searched (``tools.history_search`` keeps them in a full-text index)."""

    def record(
        self, messages: Sequence[Message], compaction: int, calls: Mapping[str, ToolUseBlock] | None = None
    ) -> None:
        """``calls``: the tool calls of the window by id, so a result whose call stayed in the
        window still says which call it answers."""
        ...


class ContextPolicy(Protocol):
    """Everything the loop asks of context management. The read-only properties are reported:
    ``tokens`` in every ``model_call`` event, ``prefix_share`` there too when known, and the
    window, trigger and strategy in ``run_start`` (the run report draws them)."""

    @property
    def tokens(self) -> int:
        """The accounting counter (tokens in the window, or the cumulative counter)."""
        ...

    @property
    def compactions(self) -> int: ...

    @property
    def prefix_share(self) -> float | None:
        """Share of the last agent request that repeated the previous one's prefix (how well
        the prompt cache can work); None when not tracked."""
        ...

    @property
    def context_window(self) -> int | None:
        """The window in tokens the policy works with; None when it does not know one."""
        ...

    @property
    def compact_at(self) -> int | None:
        """The counter value at which it compacts; None when it never does."""
        ...

    @property
    def strategy(self) -> str | None:
        """The compaction step or pipeline, as ``--strategy`` names it; None for none."""
        ...

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

    @property
    def prefix_share(self) -> float | None:
        return None

    @property
    def context_window(self) -> int | None:
        return None

    @property
    def compact_at(self) -> int | None:
        return None

    @property
    def strategy(self) -> str | None:
        return None

    def record_response(self, request: ModelRequest, response: ModelResponse) -> None:
        if request.purpose == "agent":
            self._tokens = response.usage.total

    def record_appended(self, messages: Sequence[Message]) -> None:
        return None

    async def prepare(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        return messages

    async def recover(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        return messages
