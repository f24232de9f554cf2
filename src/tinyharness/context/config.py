"""``ContextConfig``: every setting of context management in one frozen object.

Each default is written here once and each value is checked here once: the library checks a
config when it is made, and the CLI's option parsers call the same ``check`` (so ``--keep-recent
0`` and ``ContextConfig(keep_recent=0)`` are refused with the same reason). The CLI builds the
config from its options; ``build_context(config, model=...)`` turns it into a ``ContextManager``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import ConfigError
from .accounting import ACCOUNTING_MODES, AccountingMode
from .pipeline import DEFAULT_PIPELINE, parse_pipeline

DEFAULT_WINDOW = 32_768  # tokens, when neither the user nor the model says
DEFAULT_RATIO = 0.7  # of the window, when neither a ratio nor a buffer is given

CounterKind = Literal["auto", "chars4", "exact"]
COUNTER_KINDS: tuple[str, ...] = get_args(CounterKind)
SummaryMode = Literal["update", "rewrite"]
SUMMARY_MODES: tuple[str, ...] = get_args(SummaryMode)

# The CLI option that sets each field, named in error messages so either reader can act on them.
OPTIONS = {
    "strategy": "--strategy",
    "window": "--context-window",
    "ratio": "--compact-ratio",
    "buffer": "--compact-buffer",
    "keep_recent": "--keep-recent",
    "accounting": "--accounting",
    "counter": "--counter",
    "instructions": "--compact-instructions",
    "notes_path": "--notes",
    "flush_notes": "--flush-notes",
    "summary_mode": "--summary-mode",
}


def _strategy(value: Any) -> str | None:
    try:
        parse_pipeline(value)
    except ConfigError as exc:
        return str(exc)
    return None


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}, got {v!r}"


# field -> what is wrong with a value (None when it is fine)
_RULES: dict[str, Callable[[Any], str | None]] = {
    "strategy": _strategy,
    "window": lambda v: None if v >= 1 else f"must be a positive number of tokens, got {v}",
    "ratio": lambda v: None if 0 < v <= 1 else f"must be in (0, 1], got {v}",
    "buffer": lambda v: None if v >= 0 else f"must not be negative, got {v}",
    "keep_recent": lambda v: None if v >= 1 else f"must be at least 1 round, got {v}",
    "accounting": _one_of(ACCOUNTING_MODES),
    "counter": _one_of(COUNTER_KINDS),
    "restore_files": lambda v: None if v >= 0 else f"must not be negative, got {v}",
    "summary_mode": _one_of(SUMMARY_MODES),
}


def problem(field: str, value: Any) -> str | None:
    """What is wrong with ``value`` for ``field``, or None. The CLI's option parsers use it."""
    rule = _RULES.get(field)
    return None if rule is None or value is None else rule(value)


def check(field: str, value: Any) -> None:
    """ConfigError when ``value`` is not valid for ``field``."""
    wrong = problem(field, value)
    if wrong is not None:
        option = f" ({OPTIONS[field]})" if field in OPTIONS else ""
        raise ConfigError(f"{field}{option}: {wrong}")


def check_trigger(window: int, ratio: float | None, buffer: int | None) -> None:
    """The trigger's values together: one of ratio and buffer, and a buffer below the window."""
    for field, value in (("window", window), ("ratio", ratio), ("buffer", buffer)):
        check(field, value)
    if ratio is not None and buffer is not None:
        raise ConfigError(
            "give a compaction ratio (--compact-ratio) or a buffer (--compact-buffer), not both"
        )
    if buffer is not None and buffer >= window:
        raise ConfigError(f"the compaction buffer ({buffer}) must be below the window ({window})")


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """How the context is counted and compacted.

    - ``strategy``: a step or a pipeline ``a,b,c`` of summarize, restart, clear-tool-results,
      sliding-window and offload; ``none`` counts and never compacts.
    - ``window``: the context window in tokens; None means the model's, else DEFAULT_WINDOW.
    - ``ratio`` or ``buffer``: compact at this share of the window, or this many tokens below
      it; with neither, at DEFAULT_RATIO of the window.
    - ``keep_recent``: API rounds kept verbatim at a compaction.
    - ``accounting``: ``context`` counts the tokens in the current window (the last request's
      input and output plus an estimate of what was appended since); ``cumulative`` adds up
      input + output of every call and resets at compaction.
    - ``counter``: ``auto`` is an estimate (honest for CJK) corrected by reported usage;
      ``chars4`` is characters/4, uncorrected; ``exact`` is the model's tokenizer, else an
      offline BPE encoding.
    - ``instructions``: extra instructions for the summarizer.
    - ``notes_path``: NOTES.md, read back after a lossy compaction.
    - ``run_notes_path``: the run's own notes (under ``.tinyharness/``: what a guide kept out of
      NOTES.md), read back with them.
    - ``workspace``: where files are re-read from after a compaction, and under which
      ``state_dir`` (offloaded outputs) defaults to ``.tinyharness/runs/RUN_ID``.
    - ``restore_files``: how many of the most recently used files are re-read.
    - ``flush_notes``: before each compaction, the model must call the note tool.
    - ``summary_mode``: ``update`` (a later summary updates the previous one: sections it
      does not change are kept word for word) or ``rewrite`` (written afresh each time).
    """

    strategy: str = DEFAULT_PIPELINE
    window: int | None = None
    ratio: float | None = None
    buffer: int | None = None
    keep_recent: int = 4
    accounting: AccountingMode = "context"
    counter: CounterKind = "auto"
    instructions: str | None = None
    notes_path: Path | None = None
    run_notes_path: Path | None = None
    workspace: Path | None = None
    state_dir: Path | None = None
    restore_files: int = 5
    flush_notes: bool = False
    summary_mode: SummaryMode = "update"

    def __post_init__(self) -> None:
        for field in _RULES:
            check(field, getattr(self, field))
        if self.window is not None:
            check_trigger(self.window, self.ratio, self.buffer)
        elif self.ratio is not None and self.buffer is not None:
            check_trigger(self.buffer + 1, self.ratio, self.buffer)
        for name in ("notes_path", "run_notes_path", "workspace", "state_dir"):  # str paths are welcome too
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
