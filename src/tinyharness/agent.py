"""The agent loop: ask the model, run the tools it asks for, repeat until it stops.

Everything else attaches around the loop: the context policy (token accounting and compaction)
after each round's tool results and before the next request, the event bus for logs and
progress, the tool registry for safe execution. Early exits are ``StopRun`` exceptions that
carry their reason; after one, a last request that offers only the final answer gives the user
an answer instead of nothing.

A ``Guide`` (``tinyharness.guide``) shapes the run for a model that cannot plan for itself:
handed the task once, it may force the next request's tool, narrow the tools' arguments, ask for
the final answer or keep it off the menu, show a request its own view, refuse a call with a
reason, and its state is saved with every checkpoint.

May import: ``messages``, ``history``, ``errors``, ``events``, ``guards``, ``session``, ``anchors``,
``models.base``, ``models.prices`` (what a run costs), ``tools``, ``guide`` and ``context``; never
memory (it reaches the loop through the small ``Memory`` protocol below), the run log or the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .anchors import Anchors
from .context.audit import anchor_blocks, pins_missing
from .context.base import ContextPolicy, ModelCaller, Unmanaged
from .context.validator import RequestValidator
from .errors import (
    BadOutput,
    ConfigError,
    ContextLengthExceeded,
    ContextOverflow,
    IterationLimit,
    ModelError,
    OutputLimit,
    PromptBlocked,
    StopReason,
    StopRun,
    Stuck,
    TimeLimit,
    TokenBudgetSpent,
)
from .events import EventBus
from .guards import RepetitionGuard
from .guide.base import Guide, NoGuide, Turn
from .history import harness_texts, strip_echo
from .messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    messages_to_dicts,
)
from .models.base import ChoiceMap, Model, ModelRequest, ModelResponse, ToolSpec, Usage, stream_reply
from .models.prices import Cost, PriceTable, model_cost
from .session import Checkpointer, TurnProgress, unknown_outcome
from .tools.base import Tool, ToolRegistry, function_tool

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "AgentConfig",
    "Checkpointer",
    "LongTermMemory",
    "RunHooks",
    "RunResult",
    "Steps",
    "ToolCallScope",
    "current_call",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful agent working in a workspace folder through tools. "
    "Use the tools to read and change files; paths are relative to the workspace. "
    "When you reach a key conclusion or learn something you must not forget, write it down "
    "with the note tool (append) or update_notes (rewrite the whole notes file): the notes "
    "survive when old conversation is summarized. When the task is done, answer directly."
)
MAX_TOKENS_RETRIES = 2  # consecutive cut-off replies asked to continue before giving up
# Calls a guide may make itself in a row, with no model request between (a plan's reads: a few;
# a set's files each come with a note request). More is a guide that does not stop.
MAX_GUIDE_CALLS_IN_A_ROW = 100
# A final answer that is no answer (``Agent._bare_answer``) is asked again once with these words.
NOT_AN_ANSWER = "{name} is the name of a tool, not an answer. Answer the task itself, in words."
NO_ANSWER = "The answer was empty. Answer the task itself, in words."
# A tool call written out as the answer: ``read_file(tox.ini)``, ``note(text="...")``.
_WRITTEN_CALL = re.compile(r"([A-Za-z_][\w.-]*)\s*\(.*\)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How the loop runs; every default here, checked once when made (the CLI's option parsers
    call the same ``check``).

    - ``system``: the system prompt (the same on every request, so the prompt prefix caches).
    - ``max_iterations``: agent turns before the run stops (``max_iterations``).
    - ``token_budget``: billed tokens, input + output of every call, before the run stops
      (``token_budget``); None for no budget.
    - ``max_output_tokens``: the output limit of each agent request.
    - ``trace``: add the exact request to every ``model_call`` event.
    - ``time_limit``: seconds of wall time before the run stops (``time_limit``), checked
      before each turn; None for none (sub-agents get a share of their parent's).
    - ``limit_hints``: what a person changes to raise a limit, by field (``max_iterations``,
      ``token_budget``, ``time_limit``), said when the run stops on it; empty for a run's own
      options. A sub-agent's limits come from its parent's and its profile, not from them.
    - ``prices``: the price table the run's cost is reckoned with (``run_end``'s ``cost``);
      None for the built-in one (``models/prices.json``).
    - ``final_in_limit``: the final-answer request after a stop is one of ``max_iterations``
      (a sub-agent's turns are carved from its parent's, so every request it makes counts).
    """

    system: str = DEFAULT_SYSTEM_PROMPT
    max_iterations: int = 50
    token_budget: int | None = None
    max_output_tokens: int = 1024
    trace: bool = False
    time_limit: float | None = None
    limit_hints: Mapping[str, str] = field(default_factory=dict)
    prices: PriceTable | None = field(default=None, compare=False)
    final_in_limit: bool = False

    def __post_init__(self) -> None:
        for name in _COUNTS:
            check(name, getattr(self, name))
        limit = self.time_limit
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0
        ):
            raise ConfigError(f"time_limit: must be a positive number of seconds, got {limit!r}")


_COUNTS = {  # fields that must be positive integers, and the CLI option that sets each
    "max_iterations": "--max-iterations",
    "token_budget": "--token-budget",
    "max_output_tokens": "--max-output-tokens",
}


def _hint(config: AgentConfig, limit: str) -> str:
    """`` (what to change)`` for a stop on ``limit`` when the config says, else nothing."""
    hint = config.limit_hints.get(limit)
    return f" ({hint})" if hint else ""


def problem(field: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the AgentConfig ``field``, or None. The CLI's option
    parsers use it, so both refuse the same values for the same reason."""
    if field not in _COUNTS or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return f"must be a positive integer, got {value!r}"
    return None


def check(field: str, value: Any) -> None:
    """ConfigError when ``value`` is not valid for ``field``."""
    wrong = problem(field, value)
    if wrong is not None:
        raise ConfigError(f"{field} ({_COUNTS[field]}): {wrong}")


class Steps(Protocol):
    """Where the run's model and tool calls happen. Without one they run directly; a durable
    run (``durable``) records each as a step, so a run recovered after a crash is answered from
    the record instead of asking or acting again."""

    async def model_call(
        self, request: ModelRequest, ask: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse: ...

    async def tool_call(
        self, call: ToolUseBlock, run: Callable[[], Awaitable[ToolResultBlock]]
    ) -> ToolResultBlock: ...


class LongTermMemory(Protocol):
    """Memories recalled into a new task, and facts extracted at the end of a run."""

    async def recall(self, task: str) -> str:
        """A quoted block of relevant memories, or "" when none is relevant."""
        ...

    async def remember(self, messages: Sequence[Message], call_model: ModelCaller) -> None: ...


@dataclass(frozen=True)
class ToolCallScope:
    """The call a tool is running for, seen from inside the tool (``current_call``): the agent
    that asked, the call, and whether a killed run had started it (a resumed call)."""

    agent: Agent
    call: ToolUseBlock
    resumed: bool = False


# Set while a tool runs, in the task that runs it (each parallel call has its own): tools that
# act on behalf of the run, like ``task``, read the agent and the call from here.
current_call: ContextVar[ToolCallScope | None] = ContextVar("tinyharness_current_call", default=None)


def _registry(tools: Iterable[Tool | Callable[..., Any]]) -> ToolRegistry:
    """A registry of plain functions (made tools by ``function_tool``) and Tools."""
    return ToolRegistry(t if isinstance(t, Tool) else function_tool(t) for t in tools)


class OutputCheck:
    """A typed final answer: the model is told the JSON schema of ``output_type`` (a Pydantic
    model, a dataclass, or any type Pydantic can validate); a final answer that does not
    validate is sent back once with the error, and a second miss stops the run."""

    def __init__(self, output_type: Any) -> None:
        from pydantic import TypeAdapter  # only for agents with an output_type

        self.adapter: Any = TypeAdapter(output_type)
        self.schema = json.dumps(self.adapter.json_schema(), ensure_ascii=False)
        self.instructions = (
            "Your final answer (the reply with no tool call) must be only a JSON value matching "
            f"this JSON schema, with no other text: {self.schema}"
        )
        self.value: Any = None
        self.error = ""
        self.retried = False

    def accepts(self, text: str) -> bool:
        candidate = text.strip()
        if candidate.startswith("```"):  # a fenced block: its inside
            candidate = candidate.strip("`").removeprefix("json").strip()
        try:
            self.value = self.adapter.validate_json(candidate)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            self.error = str(exc)
            return False
        return True

    def retry_message(self) -> Message:
        if self.retried:
            raise BadOutput(f"the final answer does not match the output type: {self.error}")
        self.retried = True
        return Message.user(
            f"Your final answer does not match the required schema ({self.error}). Reply again "
            f"with only a JSON value matching: {self.schema}"
        )


@dataclass(frozen=True)
class _Turn:
    """The shape of one agent request: see ``ModelRequest``."""

    final_only: bool = False
    tool_choice: str | None = None
    final_allowed: bool = True
    view: tuple[Message, ...] | None = None  # sent instead of the window (no compaction first)
    done: str | None = None  # the answer when the model's is only copied harness text
    call: ToolUseBlock | None = None  # the guide's own call: run with no request (``Turn.call``)


class RunHooks(Protocol):
    """The user's hooks around the loop (``hooks.Hooks`` runs their commands): when a run
    starts a conversation, when a task arrives, and when the model answers without a tool
    call. Tool calls have their own (``tools.base.CallHook``), compactions theirs."""

    async def run_started(self, agent: Agent, source: str) -> str:
        """SessionStart (``source``: startup or resume): text to add to the task, or ""."""
        ...

    async def prompt(self, agent: Agent, text: str) -> str:
        """UserPromptSubmit: text to add to the task, or ""; ``PromptBlocked`` to refuse it."""
        ...

    async def stopping(self, agent: Agent, answer: str, again: bool) -> str | None:
        """Stop: why the run must go on (said to the model), or None to let it end.
        ``again``: a former answer of this run was already sent back by this hook."""
        ...


class _QueueSink:
    """Hands every event of a run to ``run_stream``'s queue."""

    def __init__(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.queue = queue

    def emit(self, event: dict[str, Any]) -> None:
        self.queue.put_nowait(dict(event))


@dataclass
class RunResult:
    stop: StopReason
    final: str
    model_calls: int
    compactions: int
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    detail: str = ""
    output: Any = None  # the final answer as the agent's output_type, validated

    @property
    def ok(self) -> bool:
        return self.stop == "end_turn"


class Agent:
    def __init__(
        self,
        model: Model,
        tools: ToolRegistry | Iterable[Tool | Callable[..., Any]] = (),
        config: AgentConfig | None = None,
        *,
        context: ContextPolicy | None = None,
        events: EventBus | None = None,
        checkpoint: Checkpointer | None = None,
        memory: LongTermMemory | None = None,
        output_type: Any = None,
        anchors: Anchors | None = None,
        steps: Steps | None = None,
        guide: Guide | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        self.model = model
        self.guide: Guide = guide if guide is not None else NoGuide()
        self.hooks = hooks
        # Fields every run_start of this agent carries (what is attached to it: hooks, skills).
        self.run_info: dict[str, Any] = {}
        self.tools = tools if isinstance(tools, ToolRegistry) else _registry(tools)
        self.config = config or AgentConfig()
        self.output = OutputCheck(output_type) if output_type is not None else None
        if self.output is not None:  # the schema goes in the (stable) system prompt
            system = f"{self.config.system}\n\n{self.output.instructions}"
            self.config = dataclasses.replace(self.config, system=system)
        self.context: ContextPolicy = context or Unmanaged()
        self.events = events or EventBus()
        self.checkpoint = checkpoint
        self.memory = memory
        # The plan and the pins (the todo and pin tools write them, the context manager puts
        # them back after a compaction): saved with every checkpoint, pins in the task message.
        self.anchors = anchors
        self.steps = steps
        self.validator = RequestValidator()
        self._offered: tuple[tuple[ToolSpec, ...], Guide, tuple[ToolSpec, ...]] | None = None
        self._messages = Transcript()
        self._saved_as: tuple[int, int, int] | None = None  # ``_history_mark`` at the last save
        self.model_calls = 0
        self.iterations = 0
        self.final_requests = 0  # the no-tools "final answer" requests after a limit stopped the loop
        self.billed = Usage()
        self.repetition = RepetitionGuard()
        self._finished_results: dict[str, ToolResultBlock] = {}  # of the turn being executed
        self._interrupted: set[str] = set()  # started by a killed run, never finished
        self.deadline: float | None = None  # time.monotonic() at which the time limit is reached
        # Called with each text delta of the agent's replies; set, the model is asked to stream.
        self.on_text: Callable[[str], None] | None = None

    @property
    def messages(self) -> list[Message]:
        """The history, as a ``Transcript``: a list that knows when it only grew, so the checks
        of every request cost what was appended, not the whole history. Assign any list."""
        return self._messages

    @messages.setter
    def messages(self, messages: list[Message]) -> None:
        self._messages = messages if isinstance(messages, Transcript) else Transcript(messages)

    def run(self, task: str | None, **kwargs: Any) -> RunResult:
        """Synchronous facade over ``arun``."""
        return asyncio.run(self.arun(task, **kwargs))

    async def arun(
        self,
        task: str | None,
        *,
        history: Sequence[Message] = (),
        state: dict[str, Any] | None = None,
        turn: TurnProgress | None = None,
        **run_info: Any,
    ) -> RunResult:
        """Run ``task``. ``history`` and ``state`` (from a checkpoint) continue an earlier
        conversation or a killed run; with no new task the run resumes where it stopped.
        ``turn`` says which calls of the history's last turn finished (their results are used)
        and which started without finishing (never run again: their outcome is unknown); the
        turn's other calls run now."""
        self._restore(history, state or {}, turn or TurnProgress())  # first: it may bring pins
        self.events.emit(
            "run_start",
            task=task,
            model=self.model.name,
            tools=self.tools.names,
            max_iterations=self.config.max_iterations,
            **self._context_info(),
            **({"pins": list(self.anchors.pins)} if self.anchors is not None and self.anchors.pins else {}),
            **self.run_info,
            **run_info,
        )
        limit = self.config.time_limit
        self.deadline = time.monotonic() + limit if limit is not None else None
        if self.output is not None:
            self.output.retried = False
        stop: StopReason = "end_turn"
        detail = final = ""
        opening = ""
        try:
            if self.hooks is not None and (not history or task is None):
                opening = await self.hooks.run_started(self, "startup" if task is not None else "resume")
            if task is not None:
                self._append(await self._task_message(task, opening))
                await self.guide.start(task, self.call_model)  # the plan, once per task
            final = await self._loop()
        except StopRun as exc:
            stop, detail = exc.reason, exc.detail
            self.events.emit("error", stop=stop, message=detail)
            final = "" if isinstance(exc, PromptBlocked) else await self._final_answer()
        except ModelError as exc:
            stop, detail = "error", str(exc)
            self.events.emit("error", stop=stop, message=detail, kind=type(exc).__name__)
        if self.memory is not None and stop not in ("error", "blocked"):
            await self._remember()
        result = RunResult(
            stop, final, self.model_calls, self.context.compactions, self.messages, self.billed, detail
        )
        if self.output is not None and stop == "end_turn":
            result.output = self.output.value
        self.events.emit(
            "run_end",
            stop=stop,
            final=final,
            detail=detail,
            model_calls=self.model_calls,
            compactions=self.context.compactions,
            usage=self.billed.to_event(),
            cost=self.cost().to_event(),
        )
        return result

    def cost(self) -> Cost:
        """What the run has cost so far (its sub-agents' calls at this agent's model's price)."""
        return model_cost(self.config.prices or _builtin_prices(), self.model, self.billed)

    def _context_info(self) -> dict[str, Any]:
        """The window, trigger line and strategy, for the report to draw (when known)."""
        info = {
            "context_window": self.context.context_window,
            "compact_at": self.context.compact_at,
            "strategy": self.context.strategy,
        }
        return {name: value for name, value in info.items() if value is not None}

    async def _task_message(self, task: str, opening: str = "") -> Message:
        """The task, after the block of recalled memories (the system prompt stays stable),
        with what the hooks add after it, then the project instructions, pinned texts and plan
        when the conversation does not hold them yet."""
        added = await self.hooks.prompt(self, task) if self.hooks is not None else ""
        block = await self.memory.recall(task) if self.memory is not None else ""
        blocks: tuple[TextBlock, ...] = (TextBlock(block), TextBlock(task)) if block else (TextBlock(task),)
        blocks += tuple(TextBlock(text) for text in (opening, added) if text.strip())
        pinned: list[TextBlock] = []
        if self.anchors is not None and (not self.messages or pins_missing(self.messages, self.anchors)):
            pinned = anchor_blocks(self.anchors)
        return Message("user", (*blocks, *pinned))

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
        guide_calls = 0  # the guide's own calls since the last model request
        hook_objected = False
        asked_again = False  # a bare tool name or an empty reply is asked again once
        again: _Turn | None = None
        if self.messages and self.messages[-1].role == "assistant" and self.messages[-1].tool_uses:
            await self._run_tools(self.messages[-1].tool_uses)  # a turn interrupted by a kill
        while True:
            limit = self.config.max_iterations
            if self.config.final_in_limit and self.iterations >= limit - 1:
                hint = self.config.limit_hints.get("max_iterations", "--max-iterations")
                raise IterationLimit(f"stopped at {limit} iterations, the last one its final answer ({hint})")
            if self.iterations >= limit:
                hint = self.config.limit_hints.get("max_iterations", "--max-iterations")
                raise IterationLimit(f"stopped after {self.iterations} iterations ({hint})")
            if self.deadline is not None and time.monotonic() >= self.deadline:
                spent = f"stopped after its time limit of {self.config.time_limit:g} s"
                raise TimeLimit(spent + _hint(self.config, "time_limit"))
            step, again = again or self._next_step(), None
            if step.call is not None:  # the guide's own call: no request, no iteration spent
                guide_calls += 1
                if guide_calls > MAX_GUIDE_CALLS_IN_A_ROW:
                    raise Stuck(f"the guide made {MAX_GUIDE_CALLS_IN_A_ROW} calls in a row without the model")
                self._append(Message("assistant", (step.call,)), starting=(step.call,))
                await self._run_tools([step.call])
                continue
            guide_calls = 0
            self.iterations += 1
            response = await self._agent_turn(step)
            calls = response.message.tool_uses
            # Calls the loop runs next (a cut-off reply's are answered, not run) are recorded as
            # started in the reply's own commit, one transaction fewer a turn.
            self._append(response.message, starting=calls if response.stop_reason != "max_tokens" else ())
            if response.stop_reason == "max_tokens":
                cut_offs += 1
                if cut_offs > MAX_TOKENS_RETRIES:
                    if calls:  # answer the cut-off calls, or the final request would be invalid
                        self._append(self._cut_off_reply(calls, ask_to_continue=False))
                    raise OutputLimit("the model's replies keep hitting the output limit")
                self._append(self._cut_off_reply(calls))
                continue
            cut_offs = 0
            if not calls and not step.final_only and (left := self._unfinished()) is not None:
                self._append(Message("user", (TextBlock(left),)))  # a plan not done: go on
                continue
            if not calls and not step.final_only and self.hooks is not None:
                objection = await self.hooks.stopping(self, response.message.text, hook_objected)
                if objection is not None:  # a Stop hook says the work is not done: go on
                    hook_objected = True
                    self._append(Message("user", (TextBlock(objection),)))
                    continue
            if not calls:
                text = response.message.text
                bare = None if self.output is not None or asked_again else self._bare_answer(text)
                if bare is not None:
                    asked_again = True  # not an answer: asked once more, under the answer grammar
                    self._append(Message("user", (TextBlock(bare),)))
                    again = _Turn(final_only=True, done=step.done)
                    continue
                if self.output is None and asked_again and self._bare_answer(text) is not None:
                    return step.done or "(no final answer)"  # no answer twice: what the plan found
                if self.output is None:
                    return self._without_echo(text, *self._asked_again(), done=step.done)
                if self.output.accepts(response.message.text):
                    return response.message.text
                self._append(self.output.retry_message())  # raises BadOutput on the second miss
                continue
            await self._run_tools(calls)

    def _next_step(self) -> _Turn:
        """What the next request is, by the guide; a prompt it gives goes at the end of the last
        message (the task, or the last tool results)."""
        step: Turn | None = self.guide.next_turn(self.messages)
        if step is None:
            return _Turn()
        if step.call is not None and step.call.name in self.tools.names:
            return _Turn(call=step.call)
        tool = step.tool if step.tool in self.tools.names and not step.final_only else None
        view = tuple(step.view) if step.view is not None else None
        turn = _Turn(step.final_only, tool, step.final_allowed, view, step.done)
        if step.prompt is not None and self.messages and self.messages[-1].role == "user":
            self.messages[-1] = Message("user", (*self.messages[-1].content, TextBlock(step.prompt)))
            if turn.final_only:
                self.events.emit("answer_now", message=step.prompt)
        return turn

    def _bare_answer(self, text: str) -> str | None:
        """What to say when a final answer is no answer: empty, only a tool's name, or only a
        call of a tool written out as text (measured with the 0.5B: asked for the answer after
        reading the right file, it answered "read_file"; asked what command tox.ini runs, it
        answered "read_file(tox.ini)"); None for any other answer."""
        said = text.strip().strip("`'\".").strip()
        if not said:
            return NO_ANSWER
        written = _WRITTEN_CALL.fullmatch(said)
        name = written.group(1) if written is not None else said
        if name in self.tools.names:
            return NOT_AN_ANSWER.format(name=name)
        return None

    def _asked_again(self) -> tuple[str, ...]:
        """The words ``_bare_answer`` asked again with, in the last messages (so an answer that
        copies them is stripped of them: the 0.5B answered with them once)."""
        texts = (NOT_AN_ANSWER.partition("{name}")[2], NO_ANSWER)
        return tuple(
            b.text
            for m in self.messages[-3:]
            if m.role == "user"
            for b in m.content
            if isinstance(b, TextBlock) and any(b.text.endswith(t) for t in texts)
        )

    def _unfinished(self) -> str | None:
        """The guide's word when the model answered too early (None: the run may end)."""
        left = self.guide.unfinished(self.messages)
        if left is not None:
            self.events.emit("answer_refused", message=left)
        return left

    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools offered, each with the guide's choices over its own (the grammar of a JSON
        tool mode turns them into enums)."""
        specs, guide = self.tools.specs, self.guide
        cached = self._offered
        if cached is not None and cached[0] is specs and cached[1] is guide:
            return cached[2]  # the same tools and guide: the same specs, not new ones every request
        offered = tuple(dataclasses.replace(spec, choices=self._choices(spec)) for spec in specs)
        self._offered = (specs, guide, offered)
        return offered

    def _choices(self, spec: ToolSpec) -> Callable[[Sequence[Message]], ChoiceMap]:
        own = spec.choices
        guide = self.guide

        def choices(messages: Sequence[Message]) -> ChoiceMap:
            return guide.choices(spec.name, messages) or (own(messages) if own is not None else {})

        return choices

    async def _run_call(self, call: ToolUseBlock) -> ToolResultBlock:
        """One call, after the guide's review: run (maybe as the guide rewrote it), or answered
        by the guide (a refusal, ``refused``, that the model reads)."""
        checked = self.guide.review(call)
        if isinstance(checked, ToolResultBlock):
            self.events.emit("tool_call", call_id=call.id, name=call.name, args=call.input)
            self.events.emit(
                "tool_result",
                call_id=call.id,
                name=call.name,
                ok=not checked.is_error,
                chars=len(checked.content),
                truncated=False,
                refused=checked.refused,
                by="guide",
            )
            return checked
        return await self.tools.run_call(checked, self.events)

    async def _run_tools(self, calls: list[ToolUseBlock]) -> None:
        """Run one turn's calls in parallel. Each is recorded as started before it runs and as
        finished, with its result, after; so a resumed run never repeats a finished call, and
        never repeats one a kill cut off either (it gets ``unknown_outcome`` instead), unless
        its tool ``resumes`` (it continues its own recorded work, like ``task``).

        The last call to finish is not recorded apart: the save of the results message right
        after (no await between) records it, one transaction fewer a turn. A kill between its
        finish and that save finds it started and not finished, as a kill between its finish
        and its own record did; if the turn stops there instead (another call raised, or the
        run was cancelled), its finish is recorded then."""
        running = [call.id for call in calls if call.id not in self._finished_results]
        unrecorded: list[ToolResultBlock] = []

        async def run_once(call: ToolUseBlock) -> ToolResultBlock:
            if call.id not in self._finished_results:
                resumed = call.id in self._interrupted
                tool = self.tools.get(call.name)
                if resumed and not (tool is not None and tool.resumes):
                    result = self._unknown_outcome(call)
                else:
                    if self.checkpoint is not None:
                        self.checkpoint.call_started(call)  # a kill from here on: outcome unknown
                    scope = current_call.set(ToolCallScope(self, call, resumed))
                    try:
                        if self.steps is not None:
                            run = functools.partial(self._run_call, call)
                            result = await self.steps.tool_call(call, run)
                        else:
                            result = await self._run_call(call)
                    finally:
                        current_call.reset(scope)
                self._finished_results[call.id] = result
                running.remove(call.id)
                if self.checkpoint is not None:
                    if running:
                        self.checkpoint.call_finished(result)
                    else:  # the last one: recorded by the save of the results
                        unrecorded.append(result)
            return self._finished_results[call.id]

        try:
            # each call in a task of its own, even alone: the chat's Ctrl-C at an approval
            # question cancels the task running that call (tested in the chat's terminal)
            results = await asyncio.gather(*(run_once(call) for call in calls))
        except BaseException:
            if self.checkpoint is not None:
                for result in unrecorded:  # the save will not come: recorded now
                    self.checkpoint.call_finished(result)
            raise
        self._finished_results = {}
        self._interrupted = set()
        nudge, stuck = self.repetition.observe(calls)
        self._append(Message("user", (*results, *nudge)))
        if stuck:
            raise Stuck(stuck)

    async def _agent_turn(self, shape: _Turn = _Turn()) -> ModelResponse:
        """One request of the loop (or the final answer), after the context policy's step. A
        request with its own ``view`` needs no room in the window: it is sent as it is."""
        self.events.flush()  # the last turn's events, before the context step's hooks and the request
        if shape.view is not None:
            return await self.call_model(self._request(shape))
        self.messages = await self.context.prepare(self.config.system, self.messages, self.call_model)
        if self._saved_as != self._history_mark():
            # A compaction, or a prompt added to the last results, changed the history since the
            # last save: saved before the request. Unchanged, nothing new needs saving: the state
            # differs only by this turn's iteration, which a run resumed before the reply is
            # saved does again and counts again (one transaction a turn).
            self._commit()
        try:
            return await self.call_model(self._request(shape))
        except ContextLengthExceeded:
            self.messages = await self.context.recover(self.config.system, self.messages, self.call_model)
            self._commit()
            try:
                return await self.call_model(self._request(shape))
            except ContextLengthExceeded as exc:
                raise ContextOverflow(f"still too long after compaction: {exc}") from None

    def _request(self, shape: _Turn = _Turn()) -> ModelRequest:
        return ModelRequest(
            messages=shape.view if shape.view is not None else self._messages.snapshot(),
            system=self.config.system,
            tools=self.offered_tools(),  # also when final_only: the adapters forbid calls, the prefix stays
            # A request with its own view is not the window: like the notes flush, it must not
            # calibrate the window's token count (measured: the count fell from 2218 to 1244).
            purpose="agent" if shape.view is None else "flush",
            max_tokens=self.config.max_output_tokens,
            final_only=shape.final_only,
            tool_choice=shape.tool_choice,
            final_allowed=shape.final_allowed,
        )

    async def call_model(self, request: ModelRequest) -> ModelResponse:
        """Every model request goes through here: validated, counted, budgeted, reported."""
        self.validator.check(request.messages, purpose=request.purpose)
        self.events.flush()  # nothing the run log kept back waits on the model
        budget = self.config.token_budget
        if budget is not None and self.billed.total >= budget and not request.final_only:
            spent = f"used {self.billed.total} of the {budget}-token budget"
            raise TokenBudgetSpent(spent + _hint(self.config, "token_budget"))
        self.model_calls += 1
        if self.steps is not None:
            response = await self.steps.model_call(request, self._ask_model)
        else:
            response = await self._ask_model(request)
        self.billed = self.billed + response.usage
        self.context.record_response(request, response)
        event: dict[str, Any] = {
            "call": self.model_calls,
            "purpose": request.purpose,
            "stop_reason": response.stop_reason,
            "usage": response.usage.to_event(),
            "tokens": self.context.tokens,
            "messages": len(request.messages),
        }
        if self.context.prefix_share is not None:
            event["prefix_share"] = self.context.prefix_share
        if self.config.trace:
            event["request"] = {"system": request.system, "messages": messages_to_dicts(request.messages)}
        self.events.emit("model_call", **event)
        return response

    async def _ask_model(self, request: ModelRequest) -> ModelResponse:
        """``complete``, or, when someone listens (``on_text``), the streamed reply: the agent's
        own requests stream their text deltas; summaries and extraction do not."""
        if self.on_text is None or request.purpose != "agent":
            return await self.model.complete(request)
        response: ModelResponse | None = None
        async for item in stream_reply(self.model, request):
            if isinstance(item, str):
                self.on_text(item)
            else:
                response = item
        if response is None:
            raise ModelError(f"{self.model.name}: the stream ended without a response")
        return response

    async def run_stream(self, task: str | None, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        """``arun`` for a UI: yields ``{"type": "text_delta", "text": ...}`` as the model writes,
        every event of the run as it is emitted (``tool_call``, ``tool_result``, ``compaction``,
        ``model_call``, ``run_end``...), and last ``{"type": "result", "result": RunResult}``.
        Closing the generator early cancels the run."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        sink = _QueueSink(queue)
        listening = self.on_text
        self.on_text = lambda text: queue.put_nowait({"type": "text_delta", "text": text})
        self.events.sinks.append(sink)
        running = asyncio.ensure_future(self.arun(task, **kwargs))
        running.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            yield {"type": "result", "result": running.result()}
        finally:
            if not running.done():
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            self.events.sinks.remove(sink)
            self.on_text = listening

    def _unknown_outcome(self, call: ToolUseBlock) -> ToolResultBlock:
        """The result of a call a killed run started and never finished: not run again, since
        its effect may or may not be in place; the model is told to check."""
        result = unknown_outcome(call.id)
        self.events.emit(
            "tool_result",
            call_id=call.id,
            name=call.name,
            ok=False,
            chars=len(result.content),
            truncated=False,
            outcome="unknown",
        )
        return result

    def _append(self, message: Message, starting: Sequence[ToolUseBlock] = ()) -> None:
        self.messages.append(message)
        self.context.record_appended([message])
        self._commit(starting)

    # --- checkpoints --------------------------------------------------------------------------

    def _commit(self, starting: Sequence[ToolUseBlock] = ()) -> None:
        if self.checkpoint is None:
            return
        state = {
            "model_calls": self.model_calls,
            "iterations": self.iterations,
            "billed": billed_state(self.billed),
            "recent_calls": list(self.repetition.recent),
        }
        if self.anchors is not None:
            state["anchors"] = self.anchors.to_state()
        if guided := self.guide.to_state():
            state["guide"] = guided
        self.checkpoint.save(self.messages, state, starting=starting)
        self._saved_as = self._history_mark()

    def _history_mark(self) -> tuple[int, int, int]:
        """Which list the history is, its epoch and length: unchanged while it only was read."""
        return id(self._messages), self._messages.epoch, len(self._messages)

    def _restore(self, history: Sequence[Message], state: dict[str, Any], turn: TurnProgress) -> None:
        self.messages = list(history)
        if history:
            self.context.record_appended(history)
        self.model_calls = int(state.get("model_calls", 0))
        self.iterations = int(state.get("iterations", 0))
        self.billed = billed_from_state(state.get("billed"))
        self.repetition = RepetitionGuard(state.get("recent_calls", []))
        if self.anchors is not None and isinstance(state.get("anchors"), dict):
            self.anchors.load_state(state["anchors"])  # a resumed run keeps its plan and pins
        if isinstance(state.get("guide"), dict):
            self.guide.load_state(state["guide"])  # and its guide's plan
        self._finished_results = dict(turn.finished)
        self._interrupted = set(turn.started) - set(self._finished_results)

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
        self.final_requests += 1
        try:
            response = await self._agent_turn(_Turn(final_only=True))  # compacted first, like any turn
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
        text = response.message.text
        return text if self.output is not None else self._without_echo(text, prompt.text)

    def _without_echo(self, answer: str, *extra: str, done: str | None = None) -> str:
        """The answer without the harness's own words copied at its start or end (the history
        keeps the reply as it came; see ``history.strip_echo``). Nothing left: ``done`` (what
        the plan knows was done), else "(no final answer)"."""
        kept = strip_echo(answer, [*harness_texts(self.messages[-4:]), *extra])
        if kept or not answer.strip():
            return kept or answer
        return done or "(no final answer)"


def billed_state(usage: Usage) -> list[int]:
    """A run's billed usage as its checkpoint keeps it (input, output, then the cache fields)."""
    return [
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
    ]


def billed_from_state(billed: Any) -> Usage:
    """The inverse of :func:`billed_state`; an older checkpoint's two numbers still read."""
    values = [int(v) for v in billed] if isinstance(billed, list) else []
    return Usage(*(values + [0] * 5)[:5])


@functools.cache
def _builtin_prices() -> PriceTable:
    return PriceTable.builtin()
