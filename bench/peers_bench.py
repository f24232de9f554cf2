"""Compaction side by side with the peers: one scripted workload, each harness's own code.

The 300-round workload of bench/context_bench.py (same files, same tool calls in the same order,
same faithful extractive summarizer, usage counted by the same tokenizer) runs through:

- tinyharness's strategies (its Agent loop and context strategies);
- LangChain v1 ``create_agent`` with ``SummarizationMiddleware`` and ``ContextEditingMiddleware``;
- Pydantic AI's agent loop with Pydantic AI Harness's compaction capabilities (core Pydantic AI
  ships the ``history_processors`` hook but no strategy);
- the OpenAI Agents SDK's ``Runner`` with a ``SQLiteSession`` and ``ToolOutputTrimmer``.

Each peer talks to a fake model written against that peer's own model interface (a LangChain
``BaseChatModel``, a Pydantic AI ``FunctionModel``, an Agents SDK ``Model``). Every fake turns the
peer's request into tinyharness's neutral messages and asks one shared ``Meter`` (context_bench's
``BenchModel``) for the reply, so the agent's script, the summaries, the reported usage and the
metrics are the same code for every row. Every tool call, in every harness, runs tinyharness's
built-in tool registry, so the outputs are byte for byte the same. A peer that is not installed
is skipped with a line saying why (``pip install -e '.[peers]'``).

    python -m bench.peers_bench            # 300 rounds, 32k window
    python -m bench.peers_bench --small    # 40 rounds, 8k window
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import inspect
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench import cache_sim
from bench.context_bench import (
    TASK_CONSTRAINTS,
    BenchModel,
    Workload,
    _fmt,
    long_task,
    make_workspace,
    retained,
    true_counter,
)
from tinyharness.agent import DEFAULT_SYSTEM_PROMPT, Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.prefix import identical_prefix
from tinyharness.context.tokens import message_parts
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, ToolSpec, Usage
from tinyharness.tools.base import ToolRegistry
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile

TASK = "Summarize every file under src/ into NOTES.md. " + "; ".join(TASK_CONSTRAINTS)
TINYHARNESS_STRATEGIES = ["none", "clear-tool-results", "sliding-window", "summarize", "restart", "default"]


T = TypeVar("T")


class PeerMissing(Exception):
    """A peer package is not installed (or too old): the row is skipped with this reason."""


@contextlib.contextmanager
def needs(package: str) -> Iterator[None]:
    """Around a driver's imports of a peer: a missing module becomes PeerMissing with its name."""
    try:
        yield
    except ImportError as exc:
        raise PeerMissing(f"{package} is not installed ({exc.name})") from exc


# --- the model side every harness shares ------------------------------------------------------


class Meter(BenchModel):
    """context_bench's model (agent script, faithful summarizer, usage by a real tokenizer), plus
    what a side-by-side needs: a harness-neutral count of history rewrites, what the model was
    first shown of each tool result, and the CPU time spent inside the model.

    A rewrite is an agent request whose messages are not the previous request's messages plus
    appended ones: a compaction, a cleared tool result, a dropped turn. The first request after
    each rewrite is where retention of the constraints and the notes' facts is measured."""

    def __init__(
        self, files: list[str], workload: Workload, notes_path: Path, policies: tuple[str, ...] = ("none",)
    ) -> None:
        _name, count = true_counter()
        self.bill = cache_sim.Bill(policies)  # what the requests cost with the provider's prompt cache
        self._rewrites = ListSink()  # the parent reads "compaction" events from it
        super().__init__(files, workload.rounds, count, workload.window, self._rewrites, notes_path)
        self._last: tuple[Message, ...] = ()
        self.seen_results: dict[str, str] = {}  # tool call id -> first content the model saw
        self.model_cpu = 0.0
        self._depth = 0
        self._interned: dict[tuple[object, ...], Message] = {}

    @property
    def rewrites(self) -> int:
        return len(self._rewrites.events)

    def intern(self, message: Message) -> Message:
        """One object per distinct message, so a peer that rebuilds its request every turn still
        hits the token cache and the prefix tracker's identity path (fair CPU, same numbers)."""
        key = (message.role, *(_block_key(b) for b in message.content))
        return self._interned.setdefault(key, message)

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Count the CPU time inside as the model's. Each fake model wraps its whole body, so
        translating a peer's request into the meter's messages is not billed to the peer."""
        self._depth += 1
        started = time.process_time()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.model_cpu += time.process_time() - started

    def timing(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` (sync or async) with its CPU time counted as the model's."""
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                with self.timed():
                    return await function(*args, **kwargs)

            return timed_async

        @functools.wraps(function)
        def timed_sync(*args: Any, **kwargs: Any) -> Any:
            with self.timed():
                return function(*args, **kwargs)

        return timed_sync

    def answer(self, request: ModelRequest) -> ModelResponse:
        """One model call, synchronously (BenchModel.complete never awaits)."""
        with self.timed():
            if request.purpose == "agent":
                messages = tuple(self.intern(m) for m in request.messages)
                request = _replace_messages(request, messages)
                keep = identical_prefix(self._last, messages)
                if self._last and keep < len(self._last):
                    self._rewrites.emit({"type": "compaction"})
                for message in messages[keep:]:
                    for result in message.tool_results:
                        self.seen_results.setdefault(result.tool_use_id, result.content)
                self._last = messages
            response = _sync(self.complete(request))
            self.bill.record(request, response.usage)
            return response


def _block_key(block: object) -> tuple[object, ...]:
    if isinstance(block, ToolUseBlock):
        return ("use", block.id, block.name, json.dumps(block.input, sort_keys=True, ensure_ascii=False))
    if isinstance(block, ToolResultBlock):
        return ("result", block.tool_use_id, block.content, block.is_error)
    if isinstance(block, TextBlock):
        return ("text", block.text)
    return ("other", repr(block))


def _replace_messages(request: ModelRequest, messages: tuple[Message, ...]) -> ModelRequest:
    return ModelRequest(
        messages=messages, system=request.system, tools=request.tools, purpose=request.purpose
    )


def _sync(coroutine: Awaitable[ModelResponse]) -> ModelResponse:
    """Run a coroutine that never suspends (BenchModel.complete) from sync or async code."""
    step = coroutine.__await__()
    try:
        step.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    raise RuntimeError("the bench model suspended; it must answer without awaiting")


def summary_request(text: str, system: str = "") -> ModelRequest:
    """A summary call as the meter sees it: the whole prompt the peer sent, as one message."""
    return ModelRequest(messages=(Message.user(text),), system=system, purpose="compact")


class ToolRunner:
    """Runs every harness's tool calls on tinyharness's built-in registry and logs them, so the
    workload (calls and outputs) is provably the same for every row."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.log: list[tuple[str, str, str]] = []  # (name, arguments as JSON, output)
        self.cpu = 0.0

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return self.registry.specs

    async def run(self, name: str, args: dict[str, Any]) -> str:
        started = time.process_time()
        try:
            result = await self.registry.execute(name, args)
        finally:
            self.cpu += time.process_time() - started
        self.log.append((name, json.dumps(args, sort_keys=True), result.content))
        return result.content

    def function(self, spec: ToolSpec) -> Callable[..., Awaitable[str]]:
        """``spec``'s tool as an async function of its arguments by keyword, named after it (how
        LangChain's and Pydantic AI's tools call theirs)."""

        async def call(**kwargs: Any) -> str:
            return await self.run(spec.name, kwargs)

        call.__name__ = spec.name
        return call


@dataclass
class Bench:
    """One row's world: a fresh workspace, its notes file, the meter and the tool runner."""

    root: Path
    workload: Workload
    meter: Meter
    tools: ToolRunner
    notes_path: Path
    started: float = field(default_factory=time.process_time)

    @classmethod
    @contextlib.contextmanager
    def fresh(cls, workload: Workload, policies: tuple[str, ...] = ("none",)) -> Iterator[Bench]:
        """A row's world in a temporary folder, removed when the row is done. ``policies``: where
        the harness puts Anthropic cache breakpoints (see ``cache_sim.Bill``), each priced."""
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            files = make_workspace(root, workload)
            notes_path = root / "NOTES.md"
            meter = Meter(files, workload, notes_path, policies)
            registry = builtin_tools(root, notes=NotesFile(notes_path))
            yield cls(root, workload, meter, ToolRunner(registry), notes_path)

    def run(self, loop: Coroutine[Any, Any, T]) -> T:
        """Run a peer's agent loop to its end; the row's harness CPU is counted from here."""
        self.started = time.process_time()
        return asyncio.run(loop)

    def row(self, harness: str, setup: str, stop: str, note: str = "") -> dict[str, object]:
        total = time.process_time() - self.started
        meter = self.meter
        turns = len(meter.agent_inputs)
        harness_cpu = max(0.0, total - meter.model_cpu - self.tools.cpu)
        kept_constraints, kept_notes = retained(meter.after_compaction)
        return {
            "harness": harness,
            "setup": setup,
            "stop": stop,
            "billed": meter.billed,
            "peak": max(meter.agent_inputs) if meter.agent_inputs else 0,
            "over": sum(t > self.workload.window for t in meter.agent_inputs),
            "calls": meter.calls,
            "rewrites": meter.rewrites,
            "constraints": kept_constraints,
            "notes": kept_notes,
            "prefix": meter.prefix.mean_share,
            "cpu_us": harness_cpu / turns * 1e6 if turns else None,
            "tool_log": self.tools.log,
            "seen_results": dict(meter.seen_results),
            "note": note,
            "anthropic": dict(meter.bill.anthropic),
            "openai": meter.bill.openai,
        }


# --- tinyharness ------------------------------------------------------------------------------


def run_tinyharness(strategy: str, workload: Workload) -> dict[str, object]:
    with Bench.fresh(workload, ("tinyharness",)) as bench:
        tools = bench.tools

        class MeteredModel:
            name = "bench"
            context_window = workload.window

            @bench.meter.timing
            async def complete(self, request: ModelRequest) -> ModelResponse:
                return bench.meter.answer(request)

            async def aclose(self) -> None:
                return None

        registry = tools.registry
        execute = registry.execute

        async def logged(name: str, raw_args: Any) -> Any:  # the loop's own path, timed and logged
            started = time.process_time()
            result = await execute(name, raw_args)
            tools.cpu += time.process_time() - started
            tools.log.append((name, json.dumps(raw_args, sort_keys=True), result.content))
            return result

        registry.execute = logged  # type: ignore[method-assign]
        events = EventBus([ListSink()])
        context = build_context(
            ContextConfig(
                strategy, window=workload.window, ratio=0.7, notes_path=bench.notes_path, workspace=bench.root
            ),
            events=events,
        )
        agent = Agent(
            MeteredModel(),
            registry,
            context=context,
            events=events,
            config=AgentConfig(max_iterations=workload.rounds + 5),
        )
        bench.started = time.process_time()
        result = agent.run(TASK)
        return bench.row("tinyharness", strategy, str(result.stop))


# --- LangChain v1 -----------------------------------------------------------------------------


def run_langchain(setup: str, workload: Workload) -> dict[str, object]:
    with needs("langchain v1"):
        from langchain.agents import create_agent
        from langchain.agents.middleware import (
            ClearToolUsesEdit,
            ContextEditingMiddleware,
            SummarizationMiddleware,
        )
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import (
            AIMessage,
            BaseMessage,
            HumanMessage,
            SystemMessage,
            ToolMessage,
        )
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import StructuredTool
        from langchain_core.utils.function_calling import convert_to_openai_tool
        from pydantic import ConfigDict

    with Bench.fresh(workload, ("none", "auto")) as bench:
        meter = bench.meter

        def to_neutral(messages: list[BaseMessage]) -> tuple[str, list[Message]]:
            system, out = "", []
            for m in messages:
                if isinstance(m, SystemMessage):
                    system += m.text
                elif isinstance(m, HumanMessage):
                    out.append(Message.user(m.text))
                elif isinstance(m, AIMessage):
                    blocks: list[Any] = [TextBlock(m.text)] if m.text else []
                    blocks += [ToolUseBlock(c["id"] or "", c["name"], c["args"]) for c in m.tool_calls]
                    out.append(Message("assistant", tuple(blocks)))
                elif isinstance(m, ToolMessage):
                    out.append(Message("user", (ToolResultBlock(m.tool_call_id, m.text),)))
            return system, out

        @meter.timing
        def respond(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> ChatResult:
            system, neutral = to_neutral(messages)
            specs = tuple(
                ToolSpec(t["function"]["name"], t["function"].get("description", ""), {}) for t in tools
            )
            if specs:
                request = ModelRequest(messages=tuple(neutral), system=system, tools=specs)
            else:  # the summarization middleware calls the bare model with its prompt
                request = summary_request("\n".join(p for m in neutral for p in message_parts(m)), system)
            response = meter.answer(request)
            usage = {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
                "total_tokens": response.usage.input_tokens + response.usage.output_tokens,
            }
            calls = [
                {"name": u.name, "args": u.input, "id": u.id, "type": "tool_call"}
                for u in response.message.tool_uses
            ]
            message = AIMessage(
                content=response.message.text,
                tool_calls=calls,
                usage_metadata=usage,
                response_metadata={"model_provider": "bench"},
            )
            return ChatResult(generations=[ChatGeneration(message=message)])

        class ChatBench(BaseChatModel):
            """The bench model behind LangChain's chat-model interface (tool binding, usage
            metadata, a provider name LangChain's reported-usage trigger recognises)."""

            model_config = ConfigDict(arbitrary_types_allowed=True)

            @property
            def _llm_type(self) -> str:
                return "bench-chat"

            def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
                return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

            def _generate(
                self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
            ) -> ChatResult:
                return respond(messages, kw.get("tools") or [])

            async def _agenerate(
                self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
            ) -> ChatResult:
                return respond(messages, kw.get("tools") or [])

        model = ChatBench(profile={"max_input_tokens": workload.window})
        tools = [
            StructuredTool(
                name=spec.name,
                description=spec.description,
                args_schema=spec.input_schema,
                coroutine=bench.tools.function(spec),
            )
            for spec in bench.tools.specs
        ]
        window = workload.window
        summarize = ("fraction", 0.7)
        setups: dict[str, Callable[[], list[Any]]] = {
            "none": lambda: [],
            "SummarizationMiddleware": lambda: [SummarizationMiddleware(model, trigger=summarize)],
            "SummarizationMiddleware, untrimmed prompt": lambda: [
                SummarizationMiddleware(model, trigger=summarize, trim_tokens_to_summarize=None)
            ],
            "ContextEditingMiddleware": lambda: [
                ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=int(0.7 * window))])
            ],
            "ContextEditing 0.5 + Summarization 0.7": lambda: [
                ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=int(0.5 * window))]),
                SummarizationMiddleware(model, trigger=summarize),
            ],
        }
        middleware = setups[setup]()
        agent = create_agent(model, tools, system_prompt=DEFAULT_SYSTEM_PROMPT, middleware=middleware)
        state = bench.run(
            agent.ainvoke(
                {"messages": [HumanMessage(TASK)]}, config={"recursion_limit": 100 * workload.rounds}
            )
        )
        last = state["messages"][-1]
        stop = "end_turn" if isinstance(last, AIMessage) and not last.tool_calls else "stopped"
        return bench.row("LangChain 1 create_agent", setup, stop)


# --- Pydantic AI (+ Pydantic AI Harness) ------------------------------------------------------


def run_pydantic_ai(setup: str, workload: Workload) -> dict[str, object]:
    with needs("pydantic-ai-slim"):
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai import Tool
        from pydantic_ai.messages import (
            ModelMessage,
            TextPart,
            ToolCallPart,
        )
        from pydantic_ai.messages import ModelRequest as PAIRequest
        from pydantic_ai.messages import ModelResponse as PAIResponse
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage, UsageLimits
    with needs("pydantic-ai-harness"):
        from pydantic_ai_harness import (
            ClearToolResults,
            SlidingWindowCompaction,
            SummarizingCompaction,
            TieredCompaction,
        )

    with Bench.fresh(workload, ("auto",)) as bench:
        meter = bench.meter

        def to_neutral(messages: list[ModelMessage], instructions: str | None) -> tuple[str, list[Message]]:
            system, out = instructions or "", []
            for m in messages:
                if isinstance(m, PAIRequest):
                    for part in m.parts:
                        kind = part.part_kind
                        if kind == "system-prompt":
                            system = f"{part.content}\n{system}" if system else str(part.content)
                        elif kind == "tool-return":
                            content = part.model_response_str()
                            out.append(Message("user", (ToolResultBlock(part.tool_call_id, content),)))
                        elif kind == "retry-prompt":
                            out.append(Message.user(part.model_response()))
                        elif kind == "user-prompt":
                            text = part.content if isinstance(part.content, str) else str(part.content)
                            out.append(Message.user(text))
                        else:
                            out.append(Message.user(str(getattr(part, "content", ""))))
                else:
                    blocks: list[Any] = []
                    for part in m.parts:
                        if isinstance(part, TextPart):
                            blocks.append(TextBlock(part.content))
                        elif isinstance(part, ToolCallPart):
                            blocks.append(
                                ToolUseBlock(part.tool_call_id, part.tool_name, part.args_as_dict())
                            )
                        elif hasattr(part, "content"):
                            blocks.append(TextBlock(str(part.content)))
                    out.append(Message("assistant", tuple(blocks)))
            return system, out

        def reply(response: ModelResponse) -> PAIResponse:
            parts: list[Any] = [TextPart(response.message.text)] if response.message.text else []
            parts += [ToolCallPart(u.name, u.input, tool_call_id=u.id) for u in response.message.tool_uses]
            usage = RequestUsage(
                input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens
            )
            return PAIResponse(parts=parts, usage=usage)

        @meter.timing
        async def agent_turn(messages: list[ModelMessage], info: AgentInfo) -> PAIResponse:
            system, neutral = to_neutral(messages, info.instructions)
            specs = tuple(ToolSpec(t.name, t.description or "", {}) for t in info.function_tools)
            return reply(meter.answer(ModelRequest(messages=tuple(neutral), system=system, tools=specs)))

        @meter.timing
        async def summarize(messages: list[ModelMessage], info: AgentInfo) -> PAIResponse:
            system, neutral = to_neutral(messages, info.instructions)
            text = "\n".join(p for m in neutral for p in message_parts(m))
            return reply(meter.answer(summary_request(text, system)))

        window = {"max_fraction": 0.7, "context_window": workload.window}
        summarizer = FunctionModel(summarize, model_name="bench-summarizer")
        setups: dict[str, Callable[[], list[Any]]] = {
            "none": lambda: [],
            "SummarizingCompaction": lambda: [SummarizingCompaction(model=summarizer, **window)],
            "ClearToolResults": lambda: [ClearToolResults(**window)],
            "SlidingWindowCompaction": lambda: [SlidingWindowCompaction(**window)],
            "TieredCompaction(clear, then summarize)": lambda: [
                TieredCompaction(
                    tiers=[
                        ClearToolResults(max_tokens=1),
                        SummarizingCompaction(model=summarizer, max_messages=1),
                    ],
                    target_fraction=0.7,
                    context_window=workload.window,
                )
            ],
        }
        capabilities = setups[setup]()
        tools = [
            Tool.from_schema(bench.tools.function(spec), spec.name, spec.description, spec.input_schema)
            for spec in bench.tools.specs
        ]
        agent = PydanticAgent(
            FunctionModel(agent_turn, model_name="bench"),
            instructions=DEFAULT_SYSTEM_PROMPT,
            tools=tools,
            capabilities=capabilities,
        )
        limits = UsageLimits(request_limit=None, tool_calls_limit=None)
        result = bench.run(agent.run(TASK, usage_limits=limits))
        stop = "end_turn" if isinstance(result.output, str) else "stopped"
        return bench.row("Pydantic AI + Harness", setup, stop)


# --- OpenAI Agents SDK ------------------------------------------------------------------------


def run_openai_agents(setup: str, workload: Workload) -> dict[str, object]:
    with needs("openai-agents"):
        from agents import Agent as SDKAgent
        from agents import FunctionTool, RunConfig, Runner, SQLiteSession
        from agents.extensions import ToolOutputTrimmer
        from agents.items import ModelResponse as SDKResponse
        from agents.models.interface import Model
        from agents.usage import Usage as SDKUsage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

    with Bench.fresh(workload, ("none",)) as bench:
        meter = bench.meter

        def to_neutral(items: list[Any]) -> list[Message]:
            out: list[Message] = []
            pending: list[Any] = []  # one assistant turn: its text and its function calls

            def flush() -> None:
                if pending:
                    out.append(Message("assistant", tuple(pending)))
                    pending.clear()

            for raw in items:
                item = raw if isinstance(raw, dict) else raw.model_dump(exclude_unset=True)
                kind = item.get("type", "message")
                if kind == "function_call":
                    pending.append(ToolUseBlock(item["call_id"], item["name"], json.loads(item["arguments"])))
                elif kind == "function_call_output":
                    flush()
                    out.append(Message("user", (ToolResultBlock(item["call_id"], str(item["output"])),)))
                elif item.get("role") == "assistant":
                    flush()
                    pending.append(TextBlock(_item_text(item)))
                else:
                    flush()
                    out.append(Message.user(_item_text(item)))
            flush()
            return out

        class BenchSDKModel(Model):
            """The bench model behind the Agents SDK's Model interface (Responses items)."""

            @meter.timing
            async def get_response(
                self,
                system_instructions: str | None,
                input: str | list[Any],
                model_settings: Any,
                tools: list[Any],
                output_schema: Any,
                handoffs: list[Any],
                tracing: Any,
                **_: Any,
            ) -> SDKResponse:
                items = [{"role": "user", "content": input}] if isinstance(input, str) else input
                specs = tuple(ToolSpec(t.name, t.description, {}) for t in tools)
                request = ModelRequest(
                    messages=tuple(to_neutral(items)), system=system_instructions or "", tools=specs
                )
                response = meter.answer(request)
                output: list[Any] = []
                if response.message.text:
                    text = ResponseOutputText(type="output_text", text=response.message.text, annotations=[])
                    output.append(
                        ResponseOutputMessage(
                            id=f"msg_{meter.calls}",
                            type="message",
                            role="assistant",
                            status="completed",
                            content=[text],
                        )
                    )
                for use in response.message.tool_uses:
                    output.append(
                        ResponseFunctionToolCall(
                            type="function_call",
                            call_id=use.id,
                            name=use.name,
                            arguments=json.dumps(use.input),
                        )
                    )
                usage = SDKUsage(
                    requests=1,
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    total_tokens=response.usage.input_tokens + response.usage.output_tokens,
                )
                return SDKResponse(output=output, usage=usage, response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the bench runs the SDK without streaming")

        tools = [
            FunctionTool(
                name=spec.name,
                description=spec.description,
                params_json_schema=spec.input_schema,
                on_invoke_tool=_sdk_tool(spec, bench.tools),
                strict_json_schema=False,
            )
            for spec in bench.tools.specs
        ]
        agent = SDKAgent(name="bench", instructions=DEFAULT_SYSTEM_PROMPT, model=BenchSDKModel(), tools=tools)
        session = SQLiteSession("bench", str(bench.root / "session.sqlite"))
        trimmer = {"none": None, "SQLiteSession + ToolOutputTrimmer": ToolOutputTrimmer()}[setup]
        config = RunConfig(tracing_disabled=True, call_model_input_filter=trimmer)
        result = bench.run(
            Runner.run(agent, TASK, session=session, run_config=config, max_turns=workload.rounds + 5)
        )
        stop = "end_turn" if isinstance(result.final_output, str) else "stopped"
        return bench.row("OpenAI Agents SDK", setup, stop)


def _item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content or ())


def _sdk_tool(spec: ToolSpec, runner: ToolRunner) -> Callable[[Any, str], Awaitable[str]]:
    async def call(context: Any, arguments: str) -> str:
        return await runner.run(spec.name, json.loads(arguments) if arguments else {})

    return call


# --- the table --------------------------------------------------------------------------------

Driver = Callable[[str, Workload], dict[str, object]]

# (harness label, setup, driver, what the setup leaves out). Settings: each peer's defaults, with
# its trigger put where tinyharness's is (0.7 of the 32k window) so every row fires at one point.
PEER_ROWS: list[tuple[str, str, Driver, str]] = [
    (
        "LangChain 1 create_agent",
        "SummarizationMiddleware",
        run_langchain,
        "trigger ('fraction', 0.7); defaults: keep the last 20 messages, summarize everything before "
        "them (the task message too), the summary prompt gets only the last 4,000 tokens of that",
    ),
    (
        "LangChain 1 create_agent",
        "SummarizationMiddleware, untrimmed prompt",
        run_langchain,
        "as above with trim_tokens_to_summarize=None: the summarizer reads everything it replaces",
    ),
    (
        "LangChain 1 create_agent",
        "ContextEditingMiddleware",
        run_langchain,
        "ClearToolUsesEdit(trigger 0.7 x window), keeps the last 3 results (default); it edits each "
        "request, not the state, so once over the trigger it re-clears on every request",
    ),
    (
        "LangChain 1 create_agent",
        "ContextEditing 0.5 + Summarization 0.7",
        run_langchain,
        "ClearToolUsesEdit at 0.5 of the window, SummarizationMiddleware (defaults) at 0.7",
    ),
    (
        "Pydantic AI + Harness",
        "SummarizingCompaction",
        run_pydantic_ai,
        "max_fraction 0.7 of context_window; defaults: keep 20 messages, first user message kept, "
        "incremental summary, tool returns cut to 500 characters in the summary prompt",
    ),
    (
        "Pydantic AI + Harness",
        "ClearToolResults",
        run_pydantic_ai,
        "max_fraction 0.7, keep_pairs 3 (default); no summary",
    ),
    (
        "Pydantic AI + Harness",
        "SlidingWindowCompaction",
        run_pydantic_ai,
        "max_fraction 0.7, keep_messages 40 (default), first user message kept; no summary",
    ),
    (
        "Pydantic AI + Harness",
        "TieredCompaction(clear, then summarize)",
        run_pydantic_ai,
        "target_fraction 0.7: ClearToolResults (keep_pairs 3) first, SummarizingCompaction if still over",
    ),
    (
        "OpenAI Agents SDK",
        "SQLiteSession + ToolOutputTrimmer",
        run_openai_agents,
        "the SDK has no model-agnostic compaction; ToolOutputTrimmer (defaults) spares everything "
        "after the 2nd-to-last user message, and one long task is one user message, so it never "
        "trims; its server-side compaction (OpenAIResponsesCompactionSession) needs OpenAI's "
        "Responses API",
    ),
]


# What a peer does not offer for this workload, as rows of the table (found in its code and docs).
LACKS: list[tuple[str, str, str]] = [
    (
        "Pydantic AI (core)",
        "compaction strategy",
        "not offered: core has the history_processors hook and no strategy; the rows above use "
        "Pydantic AI Harness",
    ),
    (
        "OpenAI Agents SDK",
        "summarizing compaction",
        "not offered for a model of your choice: only OpenAI's server-side compaction (Responses API)",
    ),
    (
        "OpenAI Agents SDK",
        "clearing old tool results within one task",
        "not offered: ToolOutputTrimmer works on user turns (row above)",
    ),
]


def run_all(workload: Workload, progress: Callable[[str], None] | None = None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for strategy in TINYHARNESS_STRATEGIES:
        if progress:
            progress(f"tinyharness {strategy}")
        rows.append(run_tinyharness(strategy, workload))
    for harness, setup, driver, note in PEER_ROWS:
        if progress:
            progress(f"{harness} {setup}")
        try:
            row = driver(setup, workload)
        except PeerMissing as missing:
            row = {"harness": harness, "setup": setup, "skipped": f"skipped: {missing}"}
        row["note"] = note
        rows.append(row)
    rows += [{"harness": harness, "setup": feature, "lacks": why} for harness, feature, why in LACKS]
    return rows


HEADER = [
    "harness",
    "setup",
    "stop",
    "billed",
    "peak",
    ">window",
    "calls",
    "rewrites",
    "constr.",
    "notes",
    "prefix",
    "harness CPU µs/turn",
    "cache reads",
    "cache writes",
    "$ Sonnet",
    "$ GPT-4.1",
]
SONNET = "claude-sonnet-4-6"  # the price rows the dollar columns use (models/prices.json)
GPT = "gpt-4.1"
# How each harness's row is labelled when priced with a breakpoint policy other than none.
CACHING_SETUP = {
    "tinyharness": "",
    "LangChain 1 create_agent": " + AnthropicPromptCachingMiddleware",
    "Pydantic AI + Harness": " (anthropic_cache, _instructions, _tool_definitions)",
}


def dollars(row: dict[str, object]) -> list[tuple[str, list[str]]]:
    """The row's setup label and its four cache and cost cells, once per breakpoint policy it
    was priced with (LangChain: without and with its caching middleware)."""
    from tinyharness.models.prices import PriceTable, cost_at

    table = PriceTable.builtin()
    sonnet, gpt = table.lookup(SONNET), table.lookup(GPT)
    assert sonnet is not None and gpt is not None
    openai_usage = row.get("openai")
    gpt_cost = cost_at(gpt, openai_usage).usd if isinstance(openai_usage, Usage) else None
    out = []
    for policy, usage in dict(row.get("anthropic") or {}).items():
        label = str(row["setup"]) + ("" if policy == "none" else CACHING_SETUP.get(str(row["harness"]), ""))
        cells = [
            _fmt(usage.cached_tokens),
            _fmt(usage.cache_write_tokens),
            f"{cost_at(sonnet, usage).usd:,.2f}",
            "-" if gpt_cost is None else f"{gpt_cost:,.2f}",
        ]
        out.append((label, cells))
    return out or [(str(row["setup"]), ["-"] * 4)]


def to_markdown(rows: list[dict[str, object]]) -> str:
    from bench import markdown_table

    table = []
    for row in rows:
        if "skipped" in row or "lacks" in row:
            reason = row.get("skipped") or row["lacks"]
            table.append([row["harness"], row["setup"], reason, *["-"] * (len(HEADER) - 3)])
            continue
        cpu = row["cpu_us"]
        for setup, money_cells in dollars(row):
            table.append(
                [
                    row["harness"],
                    setup,
                    row["stop"],
                    _fmt(row["billed"]),
                    _fmt(row["peak"]),
                    _fmt(row["over"]),
                    _fmt(row["calls"]),
                    _fmt(row["rewrites"]),
                    _fmt(row["constraints"]),
                    _fmt(row["notes"]),
                    _fmt(row["prefix"]),
                    f"{cpu:,.0f}" if isinstance(cpu, float) else "-",
                    *money_cells,
                ]
            )
    notes = [f"- {r['harness']}, {r['setup']}: {r['note']}" for r in rows if r.get("note")]
    return markdown_table(HEADER, table, "ll" + "r" * (len(HEADER) - 2)) + "\n\n" + "\n".join(notes)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m bench.peers_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 rounds and an 8k window")
    args = parser.parse_args(argv)
    workload = long_task(args.small)
    from bench import progress

    rows = run_all(workload, progress)
    name, _ = true_counter()
    report = (
        f"workload: {workload.rounds} rounds, window {workload.window:,}, trigger 0.7, tokens by {name}\n\n"
        + to_markdown(rows)
    )
    print(report)
    return report


if __name__ == "__main__":
    main()
