"""``Hooks``: the configured commands attached to one run.

One object plays three parts: a registry hook (``tools.base.CallHook``: PreToolUse before a
call, PostToolUse after a successful one), the agent's ``RunHooks`` (SessionStart,
UserPromptSubmit, Stop) and the context manager's ``before_compact`` (PreCompact). Every
command that matches an event runs, at the same time as the others; each run is an event
(``hook``) in the stream and the run log. Exit code 0 goes on (for SessionStart and
UserPromptSubmit its stdout is added to the task, as Claude Code does); 2 blocks what can be
blocked (a tool call: its stderr is the result the model reads; a task: it never reaches the
model; a final answer: its stderr is said to the model, which goes on); any other code, a
timeout or a command that cannot start is reported and ignored.

Every payload carries Claude Code's common fields: ``session_id``, ``transcript_path`` (a JSON
Lines file of the conversation as the model sees it, redacted, rewritten before a hook runs when
it changed), ``cwd`` and ``hook_event_name``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..agent import Agent, current_call
from ..errors import PromptBlocked
from ..events import EventBus, redact_value
from ..messages import Message, ToolResultBlock, ToolUseBlock, messages_to_dicts
from ..safefs import write_file
from .config import HookCommand
from .runner import HookOutcome, run_hook

SHOWN_STDERR = 500  # characters of a hook's stderr kept in its event


class Hooks:
    """The run's hook commands. ``state_dir``: the run's folder (the transcript goes there);
    ``report``: where a hook that failed (exit code other than 0 and 2) is said to the user."""

    def __init__(
        self,
        commands: Sequence[HookCommand],
        workspace: Path,
        *,
        events: EventBus,
        session: str,
        state_dir: Path,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.commands = list(commands)
        self.workspace = workspace
        self.events = events
        self.session = session
        self.transcript_path = state_dir / "transcript.jsonl"
        self.report = report
        self._written: tuple[int, int, int] | None = None

    def listed(self) -> list[dict[str, Any]]:
        return [hook.describe() for hook in self.commands]

    def __bool__(self) -> bool:
        return bool(self.commands)

    # --- tool calls (CallHook) ------------------------------------------------------------------

    async def before(self, call: ToolUseBlock) -> str | None:
        outcomes = await self._fire(
            "PreToolUse",
            {"tool_name": call.name, "tool_input": call.input, "tool_use_id": call.id},
            _current_messages(),
            tool=call.name,
        )
        blocking = [o for o in outcomes if o.blocks]
        if not blocking:
            return None
        why = "\n".join(o.stderr.strip() for o in blocking if o.stderr.strip()) or "no reason given"
        return f"a PreToolUse hook blocked this call: {why}"

    async def after(self, call: ToolUseBlock, result: ToolResultBlock) -> ToolResultBlock:
        if result.is_error:
            return result
        outcomes = await self._fire(
            "PostToolUse",
            {
                "tool_name": call.name,
                "tool_input": call.input,
                "tool_use_id": call.id,
                "tool_response": {"content": result.content},
            },
            _current_messages(),
            tool=call.name,
        )
        said = "\n".join(o.stderr.strip() for o in outcomes if o.blocks and o.stderr.strip())
        if not said:
            return result
        return ToolResultBlock(result.tool_use_id, f"{result.content}\n\n[PostToolUse hook: {said}]")

    # --- the loop (agent.RunHooks) ---------------------------------------------------------------

    async def run_started(self, agent: Agent, source: str) -> str:
        outcomes = await self._fire("SessionStart", {"source": source}, agent.messages)
        return _context(outcomes)

    async def prompt(self, agent: Agent, text: str) -> str:
        outcomes = await self._fire("UserPromptSubmit", {"prompt": text}, agent.messages)
        blocking = [o for o in outcomes if o.blocks]
        if blocking:
            why = "; ".join(o.stderr.strip() for o in blocking if o.stderr.strip()) or "no reason given"
            raise PromptBlocked(f"a UserPromptSubmit hook blocked the task: {why}")
        return _context(outcomes)

    async def stopping(self, agent: Agent, answer: str, again: bool) -> str | None:
        outcomes = await self._fire(
            "Stop", {"stop_hook_active": again, "last_assistant_message": answer}, agent.messages
        )
        said = "\n".join(o.stderr.strip() for o in outcomes if o.blocks)
        if not any(o.blocks for o in outcomes):
            return None
        return f"A Stop hook says the work is not finished: {said or 'no reason given'}"

    # --- compaction ------------------------------------------------------------------------------

    async def before_compact(self, messages: list[Message], reason: str) -> None:
        trigger = "manual" if reason == "user" else "auto"
        await self._fire("PreCompact", {"trigger": trigger, "custom_instructions": ""}, messages)

    # --- running -------------------------------------------------------------------------------

    async def _fire(
        self, event: str, fields: dict[str, Any], messages: Sequence[Message], *, tool: str | None = None
    ) -> list[HookOutcome]:
        chosen = [hook for hook in self.commands if hook.event == event and hook.matches(tool)]
        if not chosen:
            return []
        self._write_transcript(messages)
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.workspace),
            "hook_event_name": event,
            **fields,
        }
        outcomes = await asyncio.gather(*(run_hook(hook, payload, self.workspace) for hook in chosen))
        for hook, outcome in zip(chosen, outcomes, strict=True):
            self._record(hook, outcome, tool)
        return list(outcomes)

    def _record(self, hook: HookCommand, outcome: HookOutcome, tool: str | None) -> None:
        fields: dict[str, Any] = {"event": hook.event, "command": hook.shown, "code": outcome.code}
        if tool is not None:
            fields["tool"] = tool
        fields["blocked"] = outcome.blocks
        if outcome.timed_out:
            fields["timed_out"] = True
        if outcome.stderr.strip():
            fields["stderr"] = outcome.stderr.strip()[:SHOWN_STDERR]
        if outcome.error:
            fields["message"] = outcome.error
        self.events.emit("hook", **fields)
        if outcome.code in (0, 2) or self.report is None:
            return
        if outcome.timed_out:
            what = f"timed out after {hook.timeout:g} s and was killed"
        elif outcome.error:
            what = outcome.error
        else:
            what = f"exited {outcome.code}"
        first = outcome.stderr.strip().splitlines()[:1]
        line = f"{hook.event} hook `{hook.shown}` {what} (ignored)" + (f": {first[0]}" if first else "")
        self.report(str(redact_value(line)))

    def _write_transcript(self, messages: Sequence[Message]) -> None:
        mark = (id(messages), len(messages), id(messages[-1]) if messages else 0)
        if mark == self._written:
            return
        lines = [
            json.dumps(redact_value(entry), ensure_ascii=False) + "\n"
            for entry in messages_to_dicts(messages)
        ]
        # Atomic, beneath the workspace: a planted link in .tinyharness/ cannot send it elsewhere.
        write_file(self.transcript_path, "".join(lines).encode("utf-8"), self.workspace)
        self._written = mark


def _current_messages() -> Sequence[Message]:
    scope = current_call.get()
    return scope.agent.messages if scope is not None else ()


def _context(outcomes: Sequence[HookOutcome]) -> str:
    """What exit-0 hooks printed, to add to the task."""
    return "\n".join(o.stdout.strip() for o in outcomes if o.code == 0 and o.stdout.strip())
