"""Loop exits are types: every ``StopRun`` subclass carries one reason of ``StopReason``, the
strings users see in ``run_end.stop`` and ``RunResult.stop``."""

from __future__ import annotations

from typing import get_args

from tinyharness import errors
from tinyharness.errors import StopReason, StopRun


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_each_concrete_stop_carries_a_distinct_reason_users_know() -> None:
    concrete = [c for c in _subclasses(StopRun) if "reason" in vars(c)]
    reasons = [c.reason for c in concrete]  # type: ignore[attr-defined]
    assert len(set(reasons)) == len(reasons)
    # The strings are a contract (run_end.stop, the exit line of the CLI): they stay as they were.
    assert set(reasons) == {
        "max_iterations",
        "token_budget",
        "time_limit",
        "stuck",
        "max_tokens",
        "context_overflow",
        "bad_output",
        "blocked",  # a UserPromptSubmit hook refused the task (see docs/hooks.md)
    }
    # "cancelled": a sub-agent stopped with its parent (not raised: the parent's task ends)
    assert set(get_args(StopReason)) == {*reasons, "end_turn", "error", "cancelled"}


def test_a_stop_keeps_its_message_for_the_user() -> None:
    stop = errors.IterationLimit("stopped after 3 iterations (--max-iterations)")
    assert isinstance(stop, errors.LimitReached) and stop.reason == "max_iterations"
    assert str(stop) == stop.detail == "stopped after 3 iterations (--max-iterations)"
