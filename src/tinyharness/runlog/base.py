"""What callers of the run log use, whatever stores it: the ``RunLogStore`` Protocol, its
errors and the shapes its queries return.

May import ``errors``, ``events``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..errors import HarnessError
from ..events import Event


class RunLogError(HarnessError):
    """The run log cannot be used: not a database, corrupt, someone else's, or a newer schema."""


class RunNotFound(HarnessError):
    """No run (or more than one) matches the id or prefix asked for."""


@dataclass(frozen=True)
class RunSummary:
    id: str
    task: str | None
    model: str | None
    session: str | None
    started: float | None
    ended: float | None
    stop: str | None  # None while running, or when the run was killed
    final: str | None
    model_calls: int  # counted from the logged model_call events
    compactions: int
    tool_calls: int
    errors: int
    parent_run_id: str | None = None  # the run whose task call started this one (a sub-agent)
    depth: int = 0  # 0 for a top-level run, 1 for its sub-agents, ...
    call_id: str | None = None  # the parent's task call that started it
    usage: dict[str, int] | None = None  # billed tokens (a parent's include its sub-agents')
    cost: dict[str, Any] | None = None  # run_end's cost: usd, its split, status, priced_as


class Checkpoint(NamedTuple):
    run_id: str
    step: int
    messages: list[dict[str, Any]]
    state: dict[str, Any]


class RunLogStore(Protocol):
    """A run log: an ``EventSink`` that commits every event as it arrives, except those it may
    keep back until the next event or ``flush`` (see ``store.deferred``), and the queries the
    commands run. ``where`` names it in messages (a path, or a URL without its password)."""

    where: str

    def emit(self, event: Event) -> None: ...

    def flush(self) -> None:
        """Commit the events kept back."""
        ...

    def last_seq(self, run_id: str) -> int:
        """The highest event number stored for the run (0 for none)."""
        ...

    def list_runs(self, limit: int = 20) -> list[RunSummary]: ...

    def children(self, run_id: str) -> list[RunSummary]: ...

    def tree(self, run: RunSummary) -> list[RunSummary]: ...

    def resolve(self, run_id: str) -> str: ...

    def get_run(self, run_id: str) -> RunSummary: ...

    def event_lines(self, run_id: str) -> list[str]: ...

    def events(self, run_id: str) -> list[Event]: ...

    def load_checkpoint(self, session: str) -> Checkpoint | None: ...

    def close(self) -> None: ...
