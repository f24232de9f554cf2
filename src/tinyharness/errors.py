"""Typed errors. Loop exits are exceptions that carry their reason.

May import nothing of the package: every layer raises these."""

from __future__ import annotations


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


class StopRun(HarnessError):
    """Raised inside the loop to end a run early; ``reason`` is the stop code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class InvalidScript(ScriptError, ConfigError):
    """The scripted model's file is missing or malformed (bad configuration, exit code 2)."""
