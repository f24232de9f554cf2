"""Typed errors. Loop exits are exceptions that carry their reason.

May import nothing of the package: every layer raises these."""

from __future__ import annotations

from typing import ClassVar, Literal


class HarnessError(Exception):
    """Base class for every error tinyharness raises on purpose."""


class ConfigError(HarnessError):
    """Bad usage or configuration (CLI exit code 2)."""


class ModelError(HarnessError):
    """A model request failed after the adapter's retries."""


class ModelTimeout(ModelError):
    """The model server did not answer in time."""


class ContextLengthExceeded(ModelError):
    """The provider refused the request because it does not fit the context window.
    Compaction catches this, shrinks the history and retries once."""


class ScriptError(ModelError):
    """The scripted model's file is malformed, ran out of responses or has leftovers."""


# How a run ended, as ``RunResult.stop`` and the ``stop`` field of ``run_end`` say it:
# ``end_turn`` is the model's own answer, ``error`` a model request that failed after its
# retries; every other reason is a ``StopRun`` below. (A model *response's* stop reason is
# ``models.base.StopReason``.)
StopReason = Literal[
    "end_turn",
    "max_iterations",
    "token_budget",
    "time_limit",
    "stuck",
    "max_tokens",
    "context_overflow",
    "bad_output",
    "error",
    "cancelled",  # a sub-agent whose parent stopped (Ctrl-C, its own limit, an error)
    "blocked",  # a UserPromptSubmit hook refused the task (exit code 2); the model never saw it
]


class StopRun(HarnessError):
    """Raised inside the loop to end a run early. Each subclass carries its ``reason``; the
    message (``detail``) says what happened, for the user."""

    reason: ClassVar[StopReason]

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class LimitReached(StopRun):
    """A limit the user set was reached."""


class IterationLimit(LimitReached):
    """The agent took ``max_iterations`` turns (--max-iterations)."""

    reason = "max_iterations"


class TokenBudgetSpent(LimitReached):
    """The billed tokens reached ``token_budget`` (--token-budget)."""

    reason = "token_budget"


class TimeLimit(LimitReached):
    """The run reached its ``time_limit`` (a sub-agent's share of its parent's time)."""

    reason = "time_limit"


class Stuck(StopRun):
    """The model repeated the same calls until the repetition guard stopped it."""

    reason = "stuck"


class OutputLimit(StopRun):
    """The model's replies kept hitting the output token limit."""

    reason = "max_tokens"


class ContextOverflow(StopRun):
    """A request stayed too long for the provider even after compaction."""

    reason = "context_overflow"


class PromptBlocked(StopRun):
    """A hook refused the task before it reached the model (see ``hooks``)."""

    reason = "blocked"


class BadOutput(StopRun):
    """The final answer did not match the agent's ``output_type``, even when asked again."""

    reason = "bad_output"


class InvalidScript(ScriptError, ConfigError):
    """The scripted model's file is missing or malformed (bad configuration, exit code 2)."""
