"""Strategy names, pipelines (``a,b,c``) and the circuit breaker that retires failing steps.

A pipeline runs left to right at each compaction and stops as soon as the history is under the
target, so cheap steps go first and the model is called only when they were not enough.

The default, ``offload,clear-tool-results,summarize,sliding-window``:

- ``offload`` caps any single huge tool output the turn it arrives (no model call, nothing lost:
  the full text is a file the agent can read back);
- ``clear-tool-results`` is free and targets what fills an agent's window in practice, old tool
  output, while the placeholder keeps the call so the agent can repeat it;
- ``summarize`` runs only when clearing is not enough; it keeps the task and recent rounds
  verbatim and is the one lossy step that preserves intent, constraints and decisions;
- ``sliding-window`` is the last resort when the summarizer fails or is not enough.
"""

from __future__ import annotations

from collections import Counter

from ..errors import ConfigError
from .strategies import ClearToolResults, Offload, SlidingWindow, Strategy
from .summarize import Restart, Summarize

STRATEGIES: dict[str, type] = {
    "summarize": Summarize,
    "restart": Restart,
    "clear-tool-results": ClearToolResults,
    "sliding-window": SlidingWindow,
    "offload": Offload,
}
DEFAULT_PIPELINE = "offload,clear-tool-results,summarize,sliding-window"
NO_COMPACTION = ("none", "off")


def parse_pipeline(spec: str | None) -> list[Strategy]:
    """``"summarize"``, ``"clear-tool-results,summarize"``; ``None`` or ``"default"`` gives the
    default pipeline, ``"none"`` an empty one (count, never compact)."""
    if spec is None or spec.strip() in ("", "default", "auto"):
        spec = DEFAULT_PIPELINE
    if spec.strip() in NO_COMPACTION:
        return []
    names = [part.strip() for part in spec.split(",") if part.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ConfigError(
            f"unknown compaction strategy {', '.join(unknown)}; choose from "
            f"{', '.join(STRATEGIES)} (or a pipeline a,b,c, or none)"
        )
    if len(set(names)) != len(names):
        raise ConfigError(f"strategy pipeline {spec!r} names a step twice")
    return [STRATEGIES[name]() for name in names]


class CircuitBreaker:
    """Counts consecutive failures per step (an error, an invalid result or no progress). A
    step that fails ``limit`` times in a row is skipped for the next ``cooldown`` compactions,
    then tried once more (half-open): a success closes the breaker, a failure opens it again.
    What fails now (a summarizer that is down, recent rounds too big to clear) may work later,
    so nothing is retired for good."""

    def __init__(self, limit: int = 2, cooldown: int = 5) -> None:
        self.limit = limit
        self.cooldown = cooldown
        self._failures: Counter[str] = Counter()
        self._skip: Counter[str] = Counter()  # compactions left before a tripped step is retried

    @property
    def tripped(self) -> set[str]:
        return {name for name, left in self._skip.items() if left > 0}

    def allows(self, name: str) -> bool:
        return self._skip[name] <= 0

    def tick(self) -> None:
        """One compaction went by."""
        for name in list(self._skip):
            self._skip[name] -= 1

    def failure(self, name: str) -> bool:
        """Record a failure; True when this one trips the breaker."""
        self._failures[name] += 1
        if self._failures[name] >= self.limit:
            self._failures[name] = self.limit - 1  # half-open: one more failure re-trips it
            self._skip[name] = self.cooldown
            return True
        return False

    def success(self, name: str) -> None:
        self._failures[name] = 0
