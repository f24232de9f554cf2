"""A run's model and tool calls as recorded DBOS steps, and the event filter of a replay.

A recovered workflow runs its code again from the start. Each step whose result DBOS recorded
returns that result without running: the model is not asked again, the tool does not act
again. The first step with no record runs for real. Everything between steps is plain code
and runs again; it is deterministic given the steps' results, so the events it emits are the
same, with the same numbers, and ``OnlyNew`` passes on only those past the last one stored.

A tool call is two steps: a marker (``tool_started``, recorded before the tool runs) and the
call itself. The marker records which execution of the workflow started the call. When the
call has no record but its marker names an earlier execution, that execution was cut off while
the tool ran: its effect is unknown, so the tool is not run again and the model is told so
(``session.UNKNOWN_OUTCOME``, the rule ``--resume`` follows). A model call cut off mid-way has
no effect to fear and is simply asked again.

Events a step emits (``tool_call``, ``tool_result``, ``notes_write``) are held while it runs
and recorded with its result, then emitted after it: a replayed step emits them in the same
place, so the numbering stays the same.

May import ``agent``, ``events``, ``messages``, ``models``, ``session``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..events import Event, EventBus, EventSink
from ..messages import ToolResultBlock, ToolUseBlock, block_from_dict, block_to_dict
from ..models.base import Model, ModelRequest, ModelResponse
from ..models.scripted import ScriptedModel
from ..session import unknown_outcome


def _dbos() -> Any:
    from dbos import DBOS  # only durable runs need it

    return DBOS


class DurableSteps:
    """The ``Steps`` of one execution of a run's workflow (see the module docstring)."""

    def __init__(self, model: Model, events: EventBus) -> None:
        self.model = model
        self.events = events
        # Fresh for every execution: a marker recorded by another one means a cut-off call.
        self.execution = uuid.uuid4().hex

    async def model_call(
        self, request: ModelRequest, ask: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        asked = False

        async def call() -> ModelResponse:
            nonlocal asked
            asked = True
            return await ask(request)

        response: ModelResponse = await _dbos().run_step_async({"name": f"model:{request.purpose}"}, call)
        if not asked and isinstance(self.model, ScriptedModel):
            self.model.replayed(request)  # its next answer is the one after the recorded one
        return response

    async def tool_call(
        self, call: ToolUseBlock, run: Callable[[], Awaitable[ToolResultBlock]]
    ) -> ToolResultBlock:
        execution = self.execution

        async def mark() -> str:
            return execution

        started_by: str = await _dbos().run_step_async({"name": "tool_started"}, mark)

        async def act() -> dict[str, Any]:
            if started_by != execution:  # cut off in an earlier execution: never run twice
                result = unknown_outcome(call.id)
                # The cut-off execution held its tool_call event with the step: log it now.
                held: list[tuple[str, dict[str, Any]]] = [
                    ("tool_call", {"call_id": call.id, "name": call.name, "args": call.input}),
                    (
                        "tool_result",
                        {
                            "call_id": call.id,
                            "name": call.name,
                            "ok": False,
                            "chars": len(result.content),
                            "truncated": False,
                            "outcome": "unknown",
                        },
                    ),
                ]
                return {"result": block_to_dict(result), "events": held}
            with self.events.hold() as held:
                result = await run()
            return {"result": block_to_dict(result), "events": held}

        done: dict[str, Any] = await _dbos().run_step_async({"name": f"tool:{call.name}"}, act)
        for kind, fields in done["events"]:
            self.events.emit(kind, **fields)
        block = block_from_dict(done["result"])
        assert isinstance(block, ToolResultBlock)
        return block


class OnlyNew:
    """Passes on the events of run ``run_id`` numbered past ``floor`` (the last one stored
    before this execution: a replay's events up to there are in the log already), and every
    event of other runs (a sub-agent's bus shares these sinks; its run is new each time)."""

    def __init__(self, run_id: str, floor: int, sinks: Sequence[EventSink]) -> None:
        self.run_id = run_id
        self.floor = floor
        self.sinks = list(sinks)

    def emit(self, event: Event) -> None:
        seq = event.get("seq")
        if event.get("run_id") == self.run_id and isinstance(seq, int) and seq <= self.floor:
            return
        for sink in self.sinks:
            sink.emit(event)

    def flush(self) -> None:
        for sink in self.sinks:
            flush = getattr(sink, "flush", None)
            if callable(flush):
                flush()
