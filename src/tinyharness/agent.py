"""The agent loop: ask the model, run the tools it asks for, repeat until it stops.

Everything else attaches around the loop: the context policy (token accounting and compaction)
at the points lesson 6 names, the event bus for logs and progress, the tool registry for safe
execution. Early exits are ``StopRun`` exceptions that carry their reason; after one, a last
request that offers only the final answer gives the user an answer instead of nothing.

May import: ``messages``, ``history``, ``errors``, ``events``, ``guards``, ``models.base``,
``tools`` and ``context``; never memory (it reaches the loop through the small ``Memory``
protocol below), the run log or the CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .context.base import ContextPolicy, ModelCaller, Unmanaged
from .context.validator import RequestValidator
from .errors import ContextLengthExceeded, ModelError, StopRun
from .events import EventBus
from .guards import RepetitionGuard
from .messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_dict,
    block_to_dict,
    messages_to_dicts,
)
from .models.base import Model, ModelRequest, ModelResponse, Usage
from .tools.base import ToolRegistry

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful agent working in a workspace folder through tools. "
    "Use the tools to read and change files; paths are relative to the workspace. "
    "When you reach a key conclusion or learn something you must not forget, write it down "
    "with the note tool (append) or update_notes (rewrite the whole notes file): the notes "
    "survive when old conversation is summarized. When the task is done, answer directly."
)
MAX_TOKENS_RETRIES = 2  # consecutive cut-off replies asked to continue before giving up


@dataclass
class Limits:
    max_iterations: int = 50
    token_budget: int | None = None  # total billed tokens (input + output) across all calls
    max_output_tokens: int = 1024


class Checkpointer(Protocol):
    """Commits the history and loop state after every step, so a killed run can resume."""

    def save(self, messages: Sequence[Message], state: dict[str, Any]) -> None: ...


class LongTermMemory(Protocol):
    """Memories recalled into a new task, and facts extracted at the end of a run."""

    async def recall(self, task: str) -> str:
        """A quoted block of relevant memories, or "" when none is relevant."""
        ...

    async def remember(self, messages: Sequence[Message], call_model: ModelCaller) -> None: ...


@dataclass
class RunResult:
    stop: str  # end_turn | max_iterations | token_budget | stuck | max_tokens | context_overflow | error
    final: str
    model_calls: int
    compactions: int
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.stop == "end_turn"


class Agent:
    def __init__(
        self,
        model: Model,
        tools: ToolRegistry,
        *,
        system: str = DEFAULT_SYSTEM_PROMPT,
        context: ContextPolicy | None = None,
        events: EventBus | None = None,
        limits: Limits | None = None,
        trace: bool = False,
        checkpoint: Checkpointer | None = None,
        memory: LongTermMemory | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.system = system
        self.context: ContextPolicy = context or Unmanaged()
        self.events = events or EventBus()
        self.limits = limits or Limits()
        self.trace = trace
        self.checkpoint = checkpoint
        self.memory = memory
        self.validator = RequestValidator()
        self.messages: list[Message] = []
        self.model_calls = 0
        self.iterations = 0
        self.billed = Usage()
        self.repetition = RepetitionGuard()
        self._finished_results: dict[str, ToolResultBlock] = {}  # of the turn being executed
        self._started: set[str] = set()  # calls of this turn that began running
        self._interrupted: set[str] = set()  # started by a killed run, never finished

    def run(self, task: str | None, **kwargs: Any) -> RunResult:
        """Synchronous facade over ``arun``."""
        return asyncio.run(self.arun(task, **kwargs))

    async def arun(
        self,
        task: str | None,
        *,
        history: Sequence[Message] = (),
        state: dict[str, Any] | None = None,
        **run_info: Any,
    ) -> RunResult:
        """Run ``task``. ``history`` and ``state`` (from a checkpoint) continue an earlier
        conversation or a killed run; with no new task the run resumes where it stopped,
        running only the tool calls of the interrupted turn that had not finished."""
        self.events.emit("run_start", task=task, model=self.model.name, tools=self.tools.names, **run_info)
        self._restore(history, state or {})
        stop, detail, final = "end_turn", "", ""
        try:
            if task is not None:
                self._append(await self._task_message(task))
            final = await self._loop()
        except StopRun as exc:
            stop, detail = exc.reason, exc.detail
            self.events.emit("error", stop=stop, message=detail)
            final = await self._final_answer()
        except ModelError as exc:
            stop, detail = "error", str(exc)
            self.events.emit("error", stop=stop, message=detail, kind=type(exc).__name__)
        if self.memory is not None and stop != "error":
            await self._remember()
        result = RunResult(
            stop, final, self.model_calls, self.context.compactions, self.messages, self.billed, detail
        )
        self.events.emit(
            "run_end",
            stop=stop,
            final=final,
            detail=detail,
            model_calls=self.model_calls,
            compactions=self.context.compactions,
            usage={"input_tokens": self.billed.input_tokens, "output_tokens": self.billed.output_tokens},
        )
        return result

    async def _task_message(self, task: str) -> Message:
        """The task, after the block of recalled memories (the system prompt stays stable)."""
        block = await self.memory.recall(task) if self.memory is not None else ""
        return Message("user", (TextBlock(block), TextBlock(task))) if block else Message.user(task)

    async def _remember(self) -> None:
        """Extraction failures are reported, never fatal: the task's answer is already there."""
        assert self.memory is not None
        try:
            await self.memory.remember(self.messages, self.call_model)
        except (ModelError, StopRun) as exc:
            self.events.emit("error", stop="memory", message=f"memory extraction failed: {exc}")

    # --- the loop -----------------------------------------------------------------------------

    async def _loop(self) -> str:
        cut_offs = 0
        if self.messages and self.messages[-1].role == "assistant" and self.messages[-1].tool_uses:
            await self._run_tools(self.messages[-1].tool_uses)  # a turn interrupted by a kill
        while True:
            if self.iterations >= self.limits.max_iterations:
                raise StopRun(
                    "max_iterations", f"stopped after {self.iterations} iterations (--max-iterations)"
                )
            self.iterations += 1
            response = await self._agent_turn()
            self._append(response.message)
            calls = response.message.tool_uses
            if response.stop_reason == "max_tokens":
                cut_offs += 1
                if cut_offs > MAX_TOKENS_RETRIES:
                    if calls:  # answer the cut-off calls, or the final request would be invalid
                        self._append(self._cut_off_reply(calls, ask_to_continue=False))
                    raise StopRun("max_tokens", "the model's replies keep hitting the output limit")
                self._append(self._cut_off_reply(calls))
                continue
            cut_offs = 0
            if not calls:
                return response.message.text
            await self._run_tools(calls)

    async def _run_tools(self, calls: list[ToolUseBlock]) -> None:
        """Run one turn's calls in parallel, committing each result as it finishes, so a
        resumed run never repeats a finished call."""

        async def run_once(call: ToolUseBlock) -> ToolResultBlock:
            if call.id not in self._finished_results:
                recovered = await self._recover_tool(call) if call.id in self._interrupted else None
                if recovered is None:
                    self._started.add(call.id)
                    self._commit()  # a kill from here on leaves the call "interrupted"
                    recovered = await self.tools.run_call(call, self.events)
                self._finished_results[call.id] = recovered
                self._commit()
            return self._finished_results[call.id]

        results = await asyncio.gather(*(run_once(call) for call in calls))
        self._finished_results = {}
        self._started = set()
        self._interrupted = set()
        nudge, stuck = self.repetition.observe(calls)
        self._append(Message("user", (*results, *nudge)))
        if stuck:
            raise StopRun("stuck", stuck)

    async def _agent_turn(self, *, final_only: bool = False) -> ModelResponse:
        """One request of the loop (or the final answer), after the context policy's step."""
        self.messages = await self.context.prepare(self.system, self.messages, self.call_model)
        self._commit()
        try:
            return await self.call_model(self._request(final_only=final_only))
        except ContextLengthExceeded:
            self.messages = await self.context.recover(self.system, self.messages, self.call_model)
            self._commit()
            try:
                return await self.call_model(self._request(final_only=final_only))
            except ContextLengthExceeded as exc:
                raise StopRun("context_overflow", f"still too long after compaction: {exc}") from None

    def _request(self, *, final_only: bool = False) -> ModelRequest:
        return ModelRequest(
            messages=tuple(self.messages),
            system=self.system,
            tools=() if final_only else self.tools.specs,
            purpose="agent",
            max_tokens=self.limits.max_output_tokens,
            final_only=final_only,
        )

    async def call_model(self, request: ModelRequest) -> ModelResponse:
        """Every model request goes through here: validated, counted, budgeted, reported."""
        self.validator.check(request.messages, purpose=request.purpose)
        budget = self.limits.token_budget
        if budget is not None and self.billed.total >= budget and not request.final_only:
            raise StopRun("token_budget", f"used {self.billed.total} of the {budget}-token budget")
        self.model_calls += 1
        response = await self.model.complete(request)
        self.billed = Usage(
            self.billed.input_tokens + response.usage.input_tokens,
            self.billed.output_tokens + response.usage.output_tokens,
        )
        self.context.record_response(request, response)
        event: dict[str, Any] = {
            "call": self.model_calls,
            "purpose": request.purpose,
            "stop_reason": response.stop_reason,
            "usage": {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
            },
            "tokens": self.context.tokens,
            "messages": len(request.messages),
        }
        prefix_share = getattr(self.context, "prefix_share", None)
        if prefix_share is not None:
            event["prefix_share"] = prefix_share
        if self.trace:
            event["request"] = {"system": request.system, "messages": messages_to_dicts(request.messages)}
        self.events.emit("model_call", **event)
        return response

    async def _recover_tool(self, call: ToolUseBlock) -> ToolResultBlock | None:
        """A call a killed run started but did not finish: its result when the tool reports
        its effect already in place (a note must not be appended twice), else None."""
        result = await self.tools.recover(call.name, call.input)
        if result is None:
            return None
        ids = {"call_id": call.id, "name": call.name}
        self.events.emit("tool_call", **ids, args=call.input, recovered=True)
        self.events.emit("tool_result", **ids, ok=True, chars=len(result.content), truncated=False)
        return ToolResultBlock(call.id, result.content)

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self.context.record_appended([message])
        self._commit()

    # --- checkpoints --------------------------------------------------------------------------

    def _commit(self) -> None:
        if self.checkpoint is None:
            return
        state = {
            "model_calls": self.model_calls,
            "iterations": self.iterations,
            "billed": [self.billed.input_tokens, self.billed.output_tokens],
            "recent_calls": list(self.repetition.recent),
            "finished_results": [block_to_dict(b) for b in self._finished_results.values()],
            "started": sorted(self._started | self._interrupted),
        }
        self.checkpoint.save(self.messages, state)

    def _restore(self, history: Sequence[Message], state: dict[str, Any]) -> None:
        self.messages = list(history)
        if history:
            self.context.record_appended(history)
        self.model_calls = int(state.get("model_calls", 0))
        self.iterations = int(state.get("iterations", 0))
        billed = state.get("billed", [0, 0])
        self.billed = Usage(int(billed[0]), int(billed[1]))
        self.repetition = RepetitionGuard(state.get("recent_calls", []))
        for data in state.get("finished_results", []):
            block = block_from_dict(data)
            if isinstance(block, ToolResultBlock):
                self._finished_results[block.tool_use_id] = block
        self._interrupted = {str(c) for c in state.get("started", [])} - set(self._finished_results)

    # --- guards -------------------------------------------------------------------------------

    def _cut_off_reply(self, calls: list[ToolUseBlock], *, ask_to_continue: bool = True) -> Message:
        """Answer a reply cut by the output limit: its tool calls are not run (their arguments
        may be incomplete) and the model is asked to go on more briefly."""
        note = (
            "Your last reply was cut off at the output token limit. "
            "Continue, more briefly; tool calls in a cut-off reply were not run."
        )
        results = tuple(
            ToolResultBlock(c.id, "Error: not run, the reply was cut off", is_error=True) for c in calls
        )
        return Message("user", (*results, TextBlock(note)) if ask_to_continue else results)

    async def _final_answer(self) -> str:
        """One last request with no tools, so a stopped run still answers the user."""
        prompt = TextBlock("Stop here: no more tool calls. Give your final answer from what you know.")
        if self.messages and self.messages[-1].role == "user":
            self.messages[-1] = Message("user", (*self.messages[-1].content, prompt))
        else:
            self._append(Message("user", (prompt,)))
        try:
            response = await self._agent_turn(final_only=True)  # compacted first, like any turn
        except (ModelError, StopRun) as exc:
            self.events.emit("error", stop="final_answer", message=str(exc))
            return ""
        # No tools were offered, so tool calls in this reply are never run: drop them, or the
        # history would end with calls that have no results (invalid for the next request, and
        # a session resume would run them).
        kept = tuple(b for b in response.message.content if not isinstance(b, ToolUseBlock))
        if not any(isinstance(b, TextBlock) for b in kept):
            kept = (*kept, TextBlock("(no final answer)"))
        self._append(Message("assistant", kept))
        return response.message.text
