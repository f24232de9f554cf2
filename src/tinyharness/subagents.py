"""Sub-agents: the ``task`` tool hands a self-contained piece of work to a child agent.

The child starts with a fresh window (its own context policy, compaction and notes file under
the workspace's ``.tinyharness/subagents/``), the tools the parent chose (read-only by default),
and a budget carved from what the parent has left: iterations, billed tokens and time. Only its
condensed answer (capped) and its run id come back into the parent's window, so the parent's
window holds the conclusions, not every file the child read. Several ``task`` calls in one turn
run at the same time, up to ``concurrency`` per parent; depth is bounded by ``max_depth``.

Children are runs of their own in the event stream and the run log: their events carry
``parent_run_id`` and ``depth``, and their ``run_start`` names the ``call_id`` of the ``task``
call that started them. When the parent stops (Ctrl-C, an error, a kill), its running children
are cancelled with it (a ``run_end`` with stop ``cancelled``). A parent run with a session gives
each child a session of its own, named after the parent's session and the call
(``SESSION/task:CALL_ID#N``). On ``--resume``, the ``task`` call a kill cut off is run again
(its tool ``resumes``): a child that had finished is not run again (its recorded answer is
used), and one that had not is continued from its last committed step, where the usual rule
holds for its own calls (a call cut off by the kill is never repeated: "outcome unknown").

A child keeps to its parent's pins (the texts of ``--pin`` and the ``pin`` tool: the
constraints every part of the task must keep): they follow its task and are put back after
each of its compactions and audited, as the parent's are (a profile with ``"pins": false``
gets none). The parent's plan stays the parent's.

Profiles (``agents`` in the config file) name a system prompt, a tool set, a model and limits:

    {"agents": {"reader": {"description": "reads files and reports what they do",
                           "model": "local:qwen2.5-coder-0.5b",
                           "tools": ["read_file", "list_dir", "grep"],
                           "max_iterations": 12}}}

May import: ``agent``, ``anchors``, ``context``, ``errors``, ``events``, ``guide``, ``messages``,
``models``, ``session``, ``tools``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agent import Agent, AgentConfig, RunResult, ToolCallScope, billed_from_state, current_call
from .anchors import Anchors
from .context.base import ContextPolicy
from .errors import ConfigError
from .events import EventBus
from .guide.base import Guide
from .messages import Message
from .models.base import Model, SharedBySubAgents
from .models.factory import VALID_FORMS
from .session import SQLiteSession, start_point, subagent_prefix
from .tools.base import Tool, ToolError, ToolRegistry, function_tool

__all__ = [
    "GENERAL",
    "TASK_TOOL",
    "Profile",
    "SubAgentConfig",
    "SubAgentHost",
    "SubAgents",
    "load_profiles",
]

TASK_TOOL = "task"
GENERAL = "general"
NOTES_TOOLS = ("note", "update_notes")  # the child's own notes file: harmless to write
SUBAGENT_PROMPT = (
    "You are a sub-agent. Another agent handed you the task below; you see nothing of its "
    "conversation, only this task. Use the tools to do it, in a workspace folder (paths are "
    "relative to it). Write what you must not forget with the note tool. When you are done, "
    "answer with what the other agent needs: your findings, with file paths and line numbers, "
    "short and complete. Your answer is all it will see."
)
_PROFILE_KEYS = (
    "description",
    "system",
    "tools",
    "model",
    "max_iterations",
    "token_budget",
    "time_limit",
    "pins",
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
_CARVE_GRACE = 30.0  # seconds past a child's time limit before it is cancelled outright


@dataclass(frozen=True)
class Profile:
    """A named kind of sub-agent. None fields take the run's defaults: the sub-agent prompt, the
    parent's read-only tools (and the child's own notes tools), the parent's model, the limits
    of ``SubAgentConfig``. ``pins``: whether the child keeps to its parent's pins."""

    name: str
    description: str
    system: str | None = None
    tools: tuple[str, ...] | None = None
    model: str | None = None
    max_iterations: int | None = None
    token_budget: int | None = None
    time_limit: float | None = None
    pins: bool = True


GENERAL_PROFILE = Profile(
    GENERAL, "a general-purpose helper with your read-only tools, for reading and searching"
)


def _positive(value: Any, where: str, *, number: bool = False) -> Any:
    if value is None:
        return None
    fits = isinstance(value, int | float) if number else isinstance(value, int)
    if isinstance(value, bool) or not fits or value <= 0:
        what = "number of seconds" if number else "integer"
        raise ConfigError(f"config: {where} must be a positive {what}, got {value!r}")
    return value


def load_profiles(raw: Mapping[str, Any]) -> dict[str, Profile]:
    """The ``agents`` object of the config file as profiles, with ``general`` always there
    (a profile of that name replaces it). ConfigError naming the key on anything malformed."""
    profiles = {GENERAL: GENERAL_PROFILE}
    for name, body in raw.items():
        where = f"agents.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"config: {where}: a profile name is letters, digits, '-', '_' or '.' (at most 40)"
            )
        if not isinstance(body, dict):
            raise ConfigError(f"config: {where} must be an object with at least a description")
        unknown = sorted(set(body) - set(_PROFILE_KEYS))
        if unknown:
            raise ConfigError(
                f"config: {where}: unknown key {unknown[0]!r}; known: {', '.join(_PROFILE_KEYS)}"
            )
        description = body.get("description")
        if not isinstance(description, str) or not description.strip():
            raise ConfigError(f"config: {where}.description must say in words what this sub-agent is for")
        for key in ("system", "model"):
            value = body.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"config: {where}.{key} must be a non-empty string")
        model = body.get("model")
        if isinstance(model, str) and model.strip().partition(":")[0] not in (
            "local",
            "openai",
            "anthropic",
            "scripted",
        ):
            raise ConfigError(
                f"config: {where}.model {model!r} is not a model string; use {', '.join(VALID_FORMS)}"
            )
        pins = body.get("pins", True)
        if not isinstance(pins, bool):
            raise ConfigError(f"config: {where}.pins must be true or false (whether it keeps to your pins)")
        tools = body.get("tools")
        if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)):
            raise ConfigError(f"config: {where}.tools must be a list of tool names")
        profiles[name] = Profile(
            name,
            description.strip(),
            system=body.get("system"),
            tools=tuple(tools) if tools is not None else None,
            model=model.strip() if isinstance(model, str) else None,
            max_iterations=_positive(body.get("max_iterations"), f"{where}.max_iterations"),
            token_budget=_positive(body.get("token_budget"), f"{where}.token_budget"),
            time_limit=_positive(body.get("time_limit"), f"{where}.time_limit", number=True),
            pins=pins,
        )
    return profiles


@dataclass(frozen=True)
class SubAgentConfig:
    """How sub-agents run; every default here, checked once when made.

    - ``max_depth``: how deep sub-agents nest (1: children cannot start their own).
    - ``concurrency``: children of one parent that run at the same time; more wait.
    - ``max_iterations``: turns a child may take at most (also bounded by what the parent has
      left; a child's turns count against the parent's ``max_iterations``).
    - ``token_share``: share of the parent's remaining token budget one child may bill (when
      the parent has a budget; a child's billed tokens count against it).
    - ``time_limit``: seconds a child may run at most (never past its parent's own limit).
    - ``answer_chars``: characters of a child's answer that reach the parent's window.
    - ``profiles``: the named profiles (``load_profiles``); ``general`` is always there.
    """

    max_depth: int = 1
    concurrency: int = 3
    max_iterations: int = 20
    token_share: float = 0.5
    time_limit: float = 900.0
    answer_chars: int = 4000
    profiles: Mapping[str, Profile] = field(default_factory=lambda: {GENERAL: GENERAL_PROFILE})

    def __post_init__(self) -> None:
        for name in ("max_depth", "concurrency", "max_iterations", "answer_chars"):
            _positive(getattr(self, name), f"sub-agents {name}")
        _positive(self.time_limit, "sub-agents time_limit", number=True)
        if not 0 < self.token_share <= 1:
            raise ConfigError(f"sub-agents token_share must be in (0, 1], got {self.token_share!r}")
        if GENERAL not in self.profiles:
            object.__setattr__(self, "profiles", {GENERAL: GENERAL_PROFILE, **self.profiles})


@dataclass(frozen=True)
class SubAgentHost:
    """What the program that runs the agent provides for its children.

    - ``tools(notes, events)``: a fresh tool registry (the run's permissions) whose notes
      tools write ``notes``; the child gets the part of it the parent chose.
    - ``context(model, events, tools, notes, session, anchors)``: the child's context policy
      (None: no compaction, the library's default); ``session`` is the child's own (None
      without one), where a notes flush records its progress so a resumed child does not ask
      twice; ``anchors`` holds the pins it keeps to (None for none), for the policy to put back
      after each compaction and audit.
    - ``load_model(spec)``: the model of a profile's model string (each string is loaded once
      per run tree and closed by ``SubAgents.aclose``).
    - ``state_dir``: where children's notes files go (``.tinyharness/subagents`` in the
      workspace).
    - ``guide(tools, notes, events, name)``: the child's guide (None: none), made before its
      context, so a child on a small model is guided as its parent is.
    """

    tools: Callable[[Path, EventBus], ToolRegistry]
    state_dir: Path
    context: (
        Callable[[Model, EventBus, ToolRegistry, Path, SQLiteSession | None, Anchors | None], ContextPolicy]
        | None
    ) = None
    load_model: Callable[[str], Model] | None = None
    guide: Callable[[ToolRegistry, Path, EventBus, str], Guide | None] | None = None


@dataclass
class _Carve:
    """What one child may spend, taken from its parent's budget while it runs."""

    iterations: int
    tokens: int | None
    seconds: float
    hints: dict[str, str] = field(default_factory=dict)  # what to change for each (AgentConfig)


@dataclass
class _Ledger:
    """A parent's children at work: the slots they run in and what they hold of its budget."""

    slots: asyncio.Semaphore
    iterations: int = 0
    tokens: int = 0


class SubAgents:
    """The ``task`` tool and the children it starts. One per run tree: the models of profiles
    are loaded once and shared, and ``aclose`` closes them."""

    def __init__(self, config: SubAgentConfig, host: SubAgentHost) -> None:
        self.config = config
        self.host = host
        self._models: dict[str, Model] = {}
        self._ledgers: weakref.WeakKeyDictionary[Agent, _Ledger] = weakref.WeakKeyDictionary()

    def check_profiles(self, tool_names: Iterable[str]) -> None:
        """ConfigError when a profile names a tool this run does not offer."""
        known = set(tool_names) | {TASK_TOOL}
        for profile in self.config.profiles.values():
            for name in profile.tools or ():
                if name not in known:
                    raise ConfigError(
                        f"config: agents.{profile.name}.tools: this run offers no tool {name!r} "
                        f"(it offers: {', '.join(sorted(known))})"
                    )

    # --- the tool ---------------------------------------------------------------------------

    def tool(self) -> Tool:
        """The ``task`` tool, for a registry of an agent at ``depth`` < ``max_depth``."""
        profiles = self.config.profiles

        async def task(
            prompt: str, description: str = "", agent: str = GENERAL, tools: list[str] | None = None
        ) -> str:
            """Hand a self-contained piece of work to a sub-agent with a fresh window; it returns a
            short answer. Use it for work that would fill your window (reading many files,
            searching): you get its conclusions, not everything it read. Several task calls in one
            turn run at the same time.

            Args:
                prompt: the whole task: the sub-agent sees nothing of your conversation, so say
                    which files or folders, what to find out and what to answer
                description: a few words naming the work, shown to the user
                agent: which kind of sub-agent (default general)
                tools: tool names it may use (default: the read-only ones)
            """
            return await self.run(prompt, description=description, profile=agent, tools=tools)

        listing = "; ".join(f"{p.name}: {p.description}" for p in profiles.values())
        made: Tool = function_tool(task)
        schema = dict(made.input_schema)
        properties = dict(schema["properties"])
        properties["agent"] = {**properties["agent"], "enum": list(profiles)}
        properties["prompt"] = {**properties["prompt"], "maxLength": 4000}
        properties["description"] = {**properties["description"], "maxLength": 80}
        schema["properties"] = properties
        limit = max(p.time_limit or self.config.time_limit for p in profiles.values())
        return dataclasses.replace(
            made,
            description=f"{made.description} Kinds of sub-agent: {listing}.",
            input_schema=schema,
            resumes=True,  # a cut-off call continues its child's session, never starts it twice
            timeout=limit + 2 * _CARVE_GRACE,
        )

    # --- running a child --------------------------------------------------------------------

    async def run(
        self, prompt: str, *, description: str = "", profile: str = GENERAL, tools: list[str] | None = None
    ) -> str:
        scope = current_call.get()
        if scope is None:
            raise ToolError("task runs only inside an agent's turn")
        parent = scope.agent
        depth = parent.events.depth + 1
        if depth > self.config.max_depth:
            raise ToolError(
                f"sub-agents may nest {self.config.max_depth} level(s) deep; do this work yourself"
            )
        chosen = self.config.profiles.get(profile)
        if chosen is None:
            raise ToolError(f"no sub-agent kind {profile!r}; use one of: {', '.join(self.config.profiles)}")
        if not prompt.strip():
            raise ToolError("prompt is empty: say what the sub-agent should do")
        names = self._tool_names(parent, chosen, tools, depth)
        ledger = self._ledger(parent)
        async with ledger.slots:
            carve = self._carve(parent, chosen, ledger)
            ledger.iterations += carve.iterations
            ledger.tokens += carve.tokens or 0
            try:
                result, run_id = await self._child(scope, chosen, prompt, description, names, carve, depth)
            finally:
                ledger.iterations -= carve.iterations
                ledger.tokens -= carve.tokens or 0
        return self._answer(result, run_id, chosen)

    def _tool_names(
        self, parent: Agent, profile: Profile, asked: list[str] | None, depth: int
    ) -> list[str] | None:
        """The child's tools: those asked for, else the profile's; never a tool the parent does
        not have. None for the default set (see ``_registry``)."""
        if asked is None and profile.tools is None:
            return None
        offered = parent.tools.names
        wanted = list(asked if asked is not None else profile.tools or ())
        missing = [n for n in wanted if n not in offered and n not in NOTES_TOOLS]
        if missing:
            yours = ", ".join(offered)
            raise ToolError(
                f"you cannot give a sub-agent {', '.join(missing)}: not among your tools ({yours})"
            )
        if depth >= self.config.max_depth:
            wanted = [n for n in wanted if n != TASK_TOOL]
        return list(dict.fromkeys(wanted))

    def _ledger(self, parent: Agent) -> _Ledger:
        ledger = self._ledgers.get(parent)
        if ledger is None:
            ledger = self._ledgers[parent] = _Ledger(asyncio.Semaphore(self.config.concurrency))
        return ledger

    def _carve(self, parent: Agent, profile: Profile, ledger: _Ledger) -> _Carve:
        """The child's budget: at most the profile's (else the config's) limits, and never more
        than the parent has left once its other running children hold theirs."""
        # Each limit names, for the stop message, what a person changes to raise it: the
        # profile's setting, the sub-agents' default, or the parent's own limit when what the
        # parent had left was less.
        kind = f"sub-agent kind {profile.name!r}"
        hints: dict[str, str] = {}
        iterations_left = parent.config.max_iterations - parent.iterations - ledger.iterations
        if profile.max_iterations is not None:
            iterations = profile.max_iterations
            hints["max_iterations"] = f"the turn limit of {kind}: max_iterations in the config file"
        else:
            iterations = self.config.max_iterations
            hints["max_iterations"] = "the turn limit of one sub-agent: --subagent-iterations"
        if iterations_left < iterations:
            iterations = iterations_left
            hints["max_iterations"] = (
                "the turns its parent run had left: raise the parent's limit (--max-iterations)"
            )
        if iterations < 1:
            raise ToolError("no turns left in this run's budget for a sub-agent; finish the work yourself")
        tokens = profile.token_budget
        if tokens is not None:
            hints["token_budget"] = f"the token budget of {kind}: token_budget in the config file"
        budget = parent.config.token_budget
        if budget is not None:
            left = budget - parent.billed.total - ledger.tokens
            share = int(left * self.config.token_share)
            if share < 1:
                raise ToolError(
                    "no tokens left in this run's budget for a sub-agent; finish the work yourself"
                )
            if tokens is None or share < tokens:
                tokens = share
                hints["token_budget"] = (
                    "its share of the tokens its parent run had left: raise the parent's budget "
                    "(--token-budget)"
                )
        if profile.time_limit is not None:
            seconds = profile.time_limit
            hints["time_limit"] = f"the time limit of {kind}: time_limit in the config file"
        else:
            seconds = self.config.time_limit
            hints["time_limit"] = "the time limit of one sub-agent; a kind's time_limit in the config file"
        if parent.deadline is not None:
            left_seconds = parent.deadline - time.monotonic()
            if left_seconds <= 0:
                raise ToolError("no time left in this run's budget for a sub-agent")
            if left_seconds < seconds:
                seconds = left_seconds
                hints["time_limit"] = "the time its parent run had left: raise the parent's --time-limit"
        return _Carve(iterations, tokens, seconds, hints)

    def _model(self, parent: Agent, profile: Profile, label: str) -> Model:
        model = parent.model
        if profile.model is not None:
            if self.host.load_model is None:
                raise ToolError(f"sub-agent kind {profile.name!r} names a model, and this program loads none")
            model = self._models.get(profile.model) or self._models.setdefault(
                profile.model, self.host.load_model(profile.model)
            )
        return model.for_agent(label) if isinstance(model, SharedBySubAgents) else model

    async def _child(
        self,
        scope: ToolCallScope,
        profile: Profile,
        prompt: str,
        description: str,
        names: list[str] | None,
        carve: _Carve,
        depth: int,
    ) -> tuple[RunResult, str]:
        parent, call = scope.agent, scope.call
        session = self._session(parent, call.id, resumed=scope.resumed)
        try:
            saved = session.load() if session is not None else None
            if saved is not None and saved.messages and not saved.interrupted:
                # It finished before the kill: its recorded answer, not a second run.
                result = _recorded(saved.messages, saved.state)
                self._settle(parent, result, int(saved.state.get("iterations", 0)))
                return result, saved.run_id
            events = parent.events.child()
            if session is not None:
                session.run_id = events.run_id
            folder = _folder_name(session.name if session is not None else events.run_id)
            notes = self.host.state_dir / folder / "NOTES.md"
            registry = self._registry(parent, names, notes, events)
            model = self._model(parent, profile, call.id)
            pins = _inherited_pins(parent, profile)
            name = session.name if session is not None else events.run_id
            guide = self.host.guide(registry, notes, events, name) if self.host.guide else None
            context = (
                self.host.context(model, events, registry, notes, session, pins)
                if self.host.context
                else None
            )
            child = Agent(
                model,
                registry,
                AgentConfig(
                    system=profile.system or SUBAGENT_PROMPT,
                    max_iterations=carve.iterations,
                    final_in_limit=True,  # its final answer after a limit is carved out too
                    token_budget=carve.tokens,
                    max_output_tokens=parent.config.max_output_tokens,
                    trace=parent.config.trace,
                    time_limit=carve.seconds,
                    limit_hints=carve.hints,
                ),
                context=context,
                events=events,
                checkpoint=session,
                anchors=pins,
                guide=guide,
            )
            resume = saved is not None and bool(saved.messages)
            start = start_point(saved, session.name if session is not None else "", resume=resume)
            info = {
                "call_id": call.id,
                "profile": profile.name,
                "description": description,
                **({"session": session.name} if session is not None else {}),
            }
            try:
                result = await asyncio.wait_for(
                    self._run_child(child, None if resume else prompt, start, info),
                    timeout=carve.seconds + _CARVE_GRACE,
                )
            except TimeoutError:
                stopped = f"the sub-agent (run {events.run_id}) did not stop within its time limit"
                raise ToolError(f"{stopped} and was cancelled") from None
            self._settle(parent, result, child.iterations + child.final_requests)
            return result, events.run_id
        finally:
            if session is not None:
                session.close()

    async def _run_child(self, child: Agent, task: str | None, start: Any, info: dict[str, Any]) -> RunResult:
        """The child's run; cancelled with its parent, it says so in its own ``run_end``."""
        try:
            return await child.arun(task, history=start.history, state=start.state, turn=start.turn, **info)
        except asyncio.CancelledError:
            child.events.emit(
                "run_end",
                stop="cancelled",
                final="",
                detail="its parent run stopped",
                model_calls=child.model_calls,
                compactions=child.context.compactions,
                usage=child.billed.to_event(),
                cost=child.cost().to_event(),
            )
            raise

    def _registry(
        self, parent: Agent, names: list[str] | None, notes: Path, events: EventBus
    ) -> ToolRegistry:
        """The child's tools: fresh ones from the host (its notes tools write its own notes),
        the parent's own objects for the others (MCP tools, the memory tool), and ``task``.
        By default (``names`` None): the host's read-only tools that the parent has too, the
        parent's read-only MCP tools, and the notes tools; never a tool that acts on the
        parent's own run (its plan, its pins), which only the parent's explicit choice gives."""
        fresh = self.host.tools(notes, events)
        if names is None:
            names = [
                n
                for n in parent.tools.names
                if n != TASK_TOOL
                and _is_read_only(parent.tools.get(n))
                and (n in fresh.names or _server_of(parent.tools.get(n)) is not None)
            ]
            names += [n for n in NOTES_TOOLS if n not in names]
        registry = ToolRegistry(
            permissions=fresh.permissions, result_cap=fresh.result_cap, timeout=fresh.timeout
        )
        for name in names:
            tool = self.tool() if name == TASK_TOOL else fresh.get(name) or parent.tools.get(name)
            if tool is not None:
                registry.add(tool)
        return registry

    def _session(self, parent: Agent, call_id: str, *, resumed: bool) -> SQLiteSession | None:
        """The child's session, locked: the one a killed run left for this call when the call is
        being resumed, else a new one. None when the parent keeps no session."""
        if not isinstance(parent.checkpoint, SQLiteSession):
            return None
        store = parent.checkpoint.store
        prefix = subagent_prefix(parent.checkpoint.name, call_id)
        numbers = [
            int(name[len(prefix) :])
            for name in store.names_under(prefix)
            if name.startswith(prefix) and name[len(prefix) :].isdigit()
        ]
        latest = max(numbers, default=0)
        number = latest if resumed and latest else latest + 1
        session = store.open(f"{prefix}{number}")
        session.lock()
        return session

    def _settle(self, parent: Agent, result: RunResult, iterations: int) -> None:
        """The child's spending counts against its parent's budget."""
        parent.billed = parent.billed + result.usage
        parent.iterations += iterations

    def _answer(self, result: RunResult, run_id: str, profile: Profile) -> str:
        if result.stop == "error":
            raise ToolError(f"the sub-agent (run {run_id}) failed: {result.detail}")
        answer = result.final.strip() or "(the sub-agent gave no answer)"
        cap = self.config.answer_chars
        if len(answer) > cap:
            answer = (
                f"{answer[:cap]}\n[... {len(answer) - cap} more characters; the whole answer is in "
                f"the run log: tinyharness show {run_id}]"
            )
        ended = "done" if result.stop == "end_turn" else f"stopped early ({result.stop}: {result.detail})"
        head = (
            f"Sub-agent run {run_id} ({profile.name}) {ended}; {result.model_calls} model calls, "
            f"{result.usage.total} tokens."
        )
        return f"{head}\n{answer}"

    async def aclose(self) -> None:
        """Close the models loaded for profiles (the parent's model is its owner's to close)."""
        models, self._models = list(self._models.values()), {}
        errors: list[BaseException] = []
        for model in models:
            try:
                await model.aclose()
            except Exception as exc:  # close them all, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]


def _inherited_pins(parent: Agent, profile: Profile) -> Anchors | None:
    """The child's own copy of its parent's pins (the pins the parent holds when the child
    starts; the child has no pin tool of its own unless given one) and of the project
    instructions (AGENTS.md: the child works in the same workspace, whatever its profile);
    None for none."""
    if parent.anchors is None:
        return None
    pins = parent.anchors.pins if profile.pins else []
    if not pins and not parent.anchors.instructions:
        return None
    return Anchors(pins=pins, instructions=parent.anchors.instructions)


def _is_read_only(tool: Tool | None) -> bool:
    return tool is not None and tool.risk == "read"


def _server_of(tool: Tool | None) -> str | None:
    return tool.server if tool is not None else None


def _folder_name(name: str) -> str:
    """A folder name for a child's state: readable, safe, unique per session or run."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[-40:].strip("-.") or "run"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def _recorded(messages: list[Message], state: dict[str, Any]) -> RunResult:
    """A finished child's result, from its session."""
    return RunResult(
        "end_turn",
        messages[-1].text,
        int(state.get("model_calls", 0)),
        0,
        messages,
        billed_from_state(state.get("billed")),
        "recorded before the run was interrupted; not run again",
    )
