"""Loop guards that need no model: the repeated-call detector.

May import: ``messages``. Nothing else of the package."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable

from .messages import TextBlock, ToolUseBlock

NUDGE_AFTER = 3  # identical calls before the model is told it is repeating itself
STOP_AFTER = 5  # identical calls before the run stops as stuck


class RepetitionGuard:
    """Remembers the signatures of recent calls (kept in checkpoints, so a resumed run goes on
    counting) and says when to nudge the model and when it is stuck."""

    def __init__(self, recent: Iterable[str] = ()) -> None:
        self.recent: deque[str] = deque(recent, maxlen=STOP_AFTER * 2)

    def observe(self, calls: list[ToolUseBlock]) -> tuple[tuple[TextBlock, ...], str]:
        """A nudge for the model at NUDGE_AFTER repeats, and the reason to stop as stuck at
        STOP_AFTER (empty while not stuck)."""
        worst, worst_call = 0, calls[0]
        for call in calls:
            signature = _signature(call)
            self.recent.append(signature)
            repeats = self.recent.count(signature)
            if repeats > worst:
                worst, worst_call = repeats, call
        name = worst_call.name
        if worst >= STOP_AFTER:
            return (), f"the model called {name} with the same arguments {worst} times"
        if worst >= NUDGE_AFTER:
            nudge = TextBlock(
                f"Note: you have called {name} with these exact arguments {worst} times; the "
                "result will not change. Use what you already have, try something different, "
                "or give your final answer."
            )
            return (nudge,), ""
        return (), ""


def _signature(call: ToolUseBlock) -> str:
    # A digest, not the arguments: the signatures are checkpointed, and arguments may hold
    # secrets in a JSON-escaped form that redaction cannot see.
    text = call.name + json.dumps(call.input, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
