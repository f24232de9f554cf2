"""The Guide seam: what a guide may do to a run, and the guide that does nothing.

A guide is handed the task and the workspace once (``start``), then, after each turn's tool
results, may shape the next request (``next_turn``: a forced tool, the final answer now or not
yet, a request with its own view, the words that ask for it), narrows the string arguments of
the tools offered (``choices``: an overlay the grammar turns into an ``enum`` or a
``maxLength``), may refuse or answer a call before it runs (``review``: the model reads the
reason), says why a final answer comes too early (``unfinished``), and saves its state with the
session (``to_state`` / ``load_state``), so a resumed or replayed run keeps its plan.

Its shape follows two seams of other agent libraries: pydantic-ai's ``prepare_tools`` (the
tools offered, narrowed before each step) and the OpenAI Agents SDK's ``call_model_input_filter``
(what one request shows) and ``tool_use_behavior`` (what a tool call's result does to the run).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..models.base import ChoiceMap, ModelRequest, ModelResponse

# How a guide asks the model something of its own (the agent's ``call_model``: validated,
# counted, budgeted, recorded as a durable step like every request).
Ask = Callable[[ModelRequest], Awaitable[ModelResponse]]
# What a review gives back: the call to run (maybe rewritten), or the result that answers it
# without running it (a refusal, ``refused=True``, or a reply of the guide's own).
Reviewed = ToolUseBlock | ToolResultBlock


@dataclass(frozen=True)
class Turn:
    """The shape of the next request: ``prompt`` goes after the last tool results; ``tool`` is
    the one tool the reply must call; ``final_only`` asks for the final answer now;
    ``final_allowed`` False keeps the final answer off the menu; ``view``, when given, is what
    the request shows instead of the window (its reply still joins the history); ``done`` is
    the answer when the model's own is only harness text copied back. ``call``, when given, is
    a call the guide has chosen whole (the next file of its plan to read, the folder to list):
    the agent runs it as the model's own, with no request and no iteration spent, so a plan's
    reads cost no model turn (the other fields are then unused)."""

    prompt: str | None = None
    tool: str | None = None
    final_only: bool = False
    final_allowed: bool = True
    view: tuple[Message, ...] | None = None
    done: str | None = None
    call: ToolUseBlock | None = None


class Guide(Protocol):
    """What the agent asks of a guide (see the module docstring). Every method may be a no-op:
    ``NoGuide`` is the guide of a run nobody guides."""

    async def start(self, task: str, ask: Ask) -> None:
        """A new task (not called when a run resumes: ``load_state`` brings the plan back)."""
        ...

    def next_turn(self, messages: Sequence[Message]) -> Turn | None:
        """Asked right after each turn's tool results; None leaves the request as it is."""
        ...

    def choices(self, tool: str, messages: Sequence[Message]) -> ChoiceMap:
        """Values ``tool``'s string arguments may take in the next request, or (an int) the
        longest each may be (empty: the tool's own)."""
        ...

    def review(self, call: ToolUseBlock) -> Reviewed:
        """Before a call runs: the call to run, or the result that answers it instead."""
        ...

    def unfinished(self, messages: Sequence[Message]) -> str | None:
        """Why the run may not end yet (said to the model), or None."""
        ...

    def to_state(self) -> dict[str, Any]: ...

    def load_state(self, state: dict[str, Any]) -> None: ...


class NoGuide:
    """The guide that leaves every request, choice and call as it is."""

    async def start(self, task: str, ask: Ask) -> None:
        return None

    def next_turn(self, messages: Sequence[Message]) -> Turn | None:
        return None

    def choices(self, tool: str, messages: Sequence[Message]) -> ChoiceMap:
        return {}

    def review(self, call: ToolUseBlock) -> Reviewed:
        return call

    def unfinished(self, messages: Sequence[Message]) -> str | None:
        return None

    def to_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None


def refusal(call: ToolUseBlock, reason: str) -> ToolResultBlock:
    """The result of a call the guide refused: the reason the model reads, marked ``refused``."""
    return ToolResultBlock(call.id, f"Error: the call was refused: {reason}", is_error=True, refused=True)


RunCall = Callable[[ToolUseBlock], Awaitable[ToolResultBlock]]


def reviewed_run(guide: Guide, run: RunCall) -> RunCall:
    """``run`` with ``guide``'s review first: what runs a call outside the agent's loop (the notes
    flush before a compaction) checks it as the loop does."""

    async def run_reviewed(call: ToolUseBlock) -> ToolResultBlock:
        checked = guide.review(call)
        if isinstance(checked, ToolResultBlock):
            return checked
        return await run(checked)  # a rewritten call keeps the id of the call it stands for

    return run_reviewed
