"""When to compact: at a ratio of the window (0.7 by default) or a buffer below it (say 6000
below 30000). Compacting early leaves room for the next tool output and the reply."""

from __future__ import annotations

from dataclasses import dataclass

from .config import DEFAULT_RATIO, check_trigger


@dataclass(frozen=True, slots=True)
class Trigger:
    window: int
    ratio: float | None = None
    buffer: int | None = None

    def __post_init__(self) -> None:
        # The same checks as ContextConfig's; here the window is the resolved one (the model's
        # when the config left it open), so a buffer is checked against it again.
        check_trigger(self.window, self.ratio, self.buffer)

    @property
    def threshold(self) -> int:
        """Compact when the counter reaches this many tokens."""
        if self.buffer is not None:
            return self.window - self.buffer
        return int(self.window * (self.ratio if self.ratio is not None else DEFAULT_RATIO))

    def should_compact(self, tokens: int) -> bool:
        # At the threshold itself, too: "below LIMIT - BUFFER means no" is the same boundary.
        return tokens >= self.threshold

    def describe(self) -> str:
        how = f"buffer {self.buffer}" if self.buffer is not None else f"ratio {self.ratio or DEFAULT_RATIO}"
        return f"window {self.window}, {how}, compact at {self.threshold}"
