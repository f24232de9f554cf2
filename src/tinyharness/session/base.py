"""Sessions: one conversation's history and loop state, saved after every step, loaded to
continue it or to resume a killed run, and written by one run at a time.

The seam is ``Session`` (load, save, lock); ``session.sqlite.SQLiteSession`` is the default
implementation. The loop sees only its ``Checkpointer`` half.

What resume guarantees (the README's Safety section says the same):

- A tool call is recorded as *started* before it runs and *finished*, with its result, after.
- A call that finished is never run again: its recorded result is used.
- A call that never started runs on resume, with its exact arguments (the session keeps them
  unredacted, in a file only the user can read).
- A call that started and has no result (the run was killed while it ran) is **never run
  again**: its outcome is unknown, so the model gets ``UNKNOWN_OUTCOME`` as its result and
  decides what to check. Durable-execution engines treat a step that may or may not have
  happened the same way.
- Any other unanswered call in the history (a session left stuck by an older version, two
  writers, a crash anywhere) gets the same result when the session is loaded.
- The notes flush before a compaction records each ask the same way (``context.flush.
  FlushJournal``): a resumed run finishes a flush a kill cut off, without asking again a file
  whose ask finished or was cut off (the latter is reported: its outcome is unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConfigError
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

UNKNOWN_OUTCOME = (
    "Outcome unknown: the run was stopped (killed or crashed) while this call was running, so "
    "it may or may not have taken effect. It was not run again. Check its effect (for example, "
    "read the file or the notes) before you repeat it."
)
NO_REPLY = "(no reply was recorded here; the conversation continues)"


class SessionBusy(ConfigError):
    """Another run holds the session (CLI exit code 2)."""


class Checkpointer(Protocol):
    """What the loop needs: commit the history and loop state after every step, and record each
    tool call as started before it runs and as finished, with its result, after.

    ``starting``: the calls of the last message that the loop runs right after this save,
    recorded as started in the same commit (their ``call_started`` then writes nothing). A kill
    before the commit loses the reply and its calls together (the model is asked again); after
    it, they are started, as they would be a moment later."""

    def save(
        self, messages: Sequence[Message], state: dict[str, Any], *, starting: Sequence[ToolUseBlock] = ()
    ) -> None: ...

    def call_started(self, call: ToolUseBlock) -> None: ...

    def call_finished(self, result: ToolResultBlock) -> None: ...


@dataclass
class TurnProgress:
    """The calls of the last turn (the history's final assistant message) that finished, with
    their results, and those that started but never finished."""

    finished: dict[str, ToolResultBlock] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)


@dataclass
class SavedSession:
    """A session as last committed: the history, the loop state and the last turn's progress."""

    run_id: str
    messages: list[Message]
    state: dict[str, Any]
    turn: TurnProgress = field(default_factory=TurnProgress)

    @property
    def interrupted(self) -> bool:
        """The last run did not end with the model's answer (killed, crashed, or stopped before
        its final reply was committed)."""
        last = self.messages[-1] if self.messages else None
        return last is not None and not (last.role == "assistant" and not last.tool_uses)


class Session(Checkpointer, Protocol):
    """One named conversation: ``lock`` before anything else (``SessionBusy`` when another run
    holds it; the lock dies with the process), ``load`` the last commit, then save as the run
    goes; ``close`` releases the lock."""

    name: str

    def lock(self) -> None: ...

    def load(self) -> SavedSession | None: ...

    def close(self) -> None: ...


@dataclass
class StartPoint:
    """What a run on a session starts from."""

    history: list[Message]
    state: dict[str, Any]
    turn: TurnProgress
    closed: list[str]  # ids of calls answered with UNKNOWN_OUTCOME while loading


def start_point(saved: SavedSession | None, name: str, *, resume: bool) -> StartPoint:
    """The resume rules. ``resume``: continue the interrupted run (ConfigError if there is none);
    else start a new task on the session's history (ConfigError if a run is interrupted: it
    must be resumed first, so its calls are settled before a new task is added)."""
    if saved is None or not saved.messages:
        if resume:
            raise ConfigError(f"session {name!r} has no interrupted run; give a task to start it")
        return StartPoint([], {}, TurnProgress(), [])
    if resume and not saved.interrupted:
        raise ConfigError(f"session {name!r} has no interrupted run; give a task to continue it")
    if not resume and saved.interrupted:
        raise ConfigError(f"session {name!r} has an interrupted run; finish it first with --resume")
    history, closed = close_orphans(saved.messages)
    turn = saved.turn if history and history[-1].tool_uses else TurnProgress()
    return StartPoint(history, saved.state if resume else _carried_over(saved.state), turn, closed)


def _carried_over(state: dict[str, Any]) -> dict[str, Any]:
    """What a new task on a session keeps of the last run's state: its pins (a requirement
    pinned once holds for the whole conversation), not its counters or its plan (a new task
    plans afresh)."""
    anchors = state.get("anchors")
    pins = anchors.get("pins") if isinstance(anchors, dict) else None
    return {"anchors": {"pins": list(pins)}} if isinstance(pins, list) and pins else {}


def unknown_outcome(call_id: str) -> ToolResultBlock:
    return ToolResultBlock(call_id, UNKNOWN_OUTCOME, is_error=True)


def close_orphans(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """``messages`` made valid again, whatever left them broken: every tool call before the last
    message gets its result (``UNKNOWN_OUTCOME`` when none was recorded), results that answer
    no call are dropped, and roles alternate. The last message may still be an assistant turn
    with calls (the loop settles those). Returns the history and the ids given UNKNOWN_OUTCOME."""
    out: list[Message] = []
    closed: list[str] = []
    for message in messages:
        previous = out[-1] if out else None
        asked = [c.id for c in previous.tool_uses] if previous and previous.role == "assistant" else []
        if message.role == "user":
            blocks = [
                b for b in message.content if not isinstance(b, ToolResultBlock) or b.tool_use_id in asked
            ]
            answered = {b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock)}
            missing = [unknown_outcome(i) for i in asked if i not in answered]
            closed += [b.tool_use_id for b in missing]
            content = (*missing, *blocks)
            if previous is not None and previous.role == "user":  # two user messages: merge
                out[-1] = Message("user", (*previous.content, *content))
            elif content:
                out.append(Message("user", content))
            continue
        if previous is None:  # a history must open with the user
            out.append(Message.user(NO_REPLY))
        elif previous.role == "assistant":
            missing = [unknown_outcome(i) for i in asked]
            closed += asked
            out.append(Message("user", (*missing, TextBlock(NO_REPLY)) if not missing else tuple(missing)))
        out.append(message)
    return out, closed
