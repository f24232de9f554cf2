"""Sub-agents (the ``task`` tool): the tree of runs, concurrency, depth, budgets, cancellation
and profiles, through the library with the scripted model (``"agent": CALL_ID`` routes a
response to the sub-agent that call started, so concurrent children stay deterministic)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.agent import Agent, AgentConfig
from tinyharness.anchors import Anchors
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.errors import ConfigError
from tinyharness.events import EventBus, ListSink
from tinyharness.models.base import ModelRequest, ModelResponse
from tinyharness.models.scripted import ScriptedModel
from tinyharness.session import SessionStore
from tinyharness.subagents import SubAgentConfig, SubAgentHost, SubAgents, load_profiles
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile


def call(call_id: str, name: str, args: dict[str, Any], *, agent: str | None = None) -> dict[str, Any]:
    return turn([(call_id, name, args)], agent=agent)


def turn(
    uses: list[tuple[str, str, dict[str, Any]]], *, agent: str | None = None, usage: int = 100
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses],
        "usage": {"input_tokens": usage, "output_tokens": 20},
    }
    if agent is not None:
        response["agent"] = agent
    return response


def answer(text: str, *, agent: str | None = None, usage: int = 200) -> dict[str, Any]:
    response: dict[str, Any] = {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": usage, "output_tokens": 10},
    }
    if agent is not None:
        response["agent"] = agent
    return response


def task(call_id: str, prompt: str, **extra: Any) -> tuple[str, str, dict[str, Any]]:
    return (call_id, "task", {"prompt": prompt, **extra})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(3):
        (ws / f"f{i}.py").write_text(f"def f{i}():\n    return {i}\n", encoding="utf-8")
    return ws


def make(
    workspace: Path,
    model: Any,
    config: SubAgentConfig | None = None,
    agent_config: AgentConfig | None = None,
    checkpoint: Any = None,
) -> tuple[Agent, ListSink, SubAgents]:
    sink = ListSink()

    def tools(notes: Path, events: EventBus) -> Any:
        return builtin_tools(workspace, notes=NotesFile(notes, root=workspace))

    runner = SubAgents(
        config or SubAgentConfig(),
        SubAgentHost(tools=tools, state_dir=workspace / ".tinyharness" / "subagents"),
    )
    registry = builtin_tools(workspace)
    registry.add(runner.tool())
    agent = Agent(
        model, registry, agent_config or AgentConfig(), events=EventBus([sink]), checkpoint=checkpoint
    )
    return agent, sink, runner


def run_starts(sink: ListSink) -> list[dict[str, Any]]:
    return sink.of_type("run_start")


# --- the tree of runs -------------------------------------------------------------------------


def test_two_task_calls_make_two_child_runs_with_their_own_windows(workspace: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "What does f0.py return?"), task("t2", "What does f1.py return?")]),
                call("r1", "read_file", {"path": "f0.py"}, agent="t1"),
                answer("f0 returns 0", agent="t1"),
                call("r2", "read_file", {"path": "f1.py"}, agent="t2"),
                answer("f1 returns 1", agent="t2"),
                answer("0 and 1"),
            ]
        }
    )
    agent, sink, _ = make(workspace, model)
    result = agent.run("Find what f0 and f1 return")
    assert result.ok and result.final == "0 and 1"
    parent, *children = run_starts(sink)
    assert "parent_run_id" not in parent and "depth" not in parent
    assert {c["call_id"] for c in children} == {"t1", "t2"}
    for child in children:
        assert child["parent_run_id"] == parent["run_id"] and child["depth"] == 1
        assert child["profile"] == "general"
        assert "task" not in child["tools"] and "write_file" not in child["tools"]  # read-only, depth 1
        assert "read_file" in child["tools"] and "note" in child["tools"]
    # every event of a child carries its parent and depth
    child_ids = {c["run_id"] for c in children}
    assert all(e["parent_run_id"] == parent["run_id"] for e in sink.events if e["run_id"] in child_ids)
    # the parent's window got the answers and run ids, not the files the children read
    results = {r.tool_use_id: r.content for m in result.messages for r in m.tool_results}
    by_call = {c["call_id"]: c["run_id"] for c in children}
    assert "f0 returns 0" in results["t1"] and by_call["t1"] in results["t1"]
    assert "f1 returns 1" in results["t2"] and by_call["t2"] in results["t2"]
    assert not any("return 0" in r for r in results.values())
    # a child's first request holds only its own task: a fresh window
    first_child_request = next(r for r in model.requests if r.messages[0].text.startswith("What does f0"))
    assert len(first_child_request.messages) == 1
    # the parent's billing includes its children's
    assert result.usage.total == sum(100 + 20 for _ in range(3)) + sum(200 + 10 for _ in range(3))


def test_a_childs_notes_go_to_its_own_file_under_the_state_folder(workspace: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "Note something")]),
                call("n1", "note", {"text": "child finding"}, agent="t1"),
                answer("noted", agent="t1"),
                answer("ok"),
            ]
        }
    )
    agent, _, _ = make(workspace, model)
    assert agent.run("go").ok
    assert not (workspace / "NOTES.md").exists()
    (notes,) = (workspace / ".tinyharness" / "subagents").rglob("NOTES.md")
    assert "child finding" in notes.read_text(encoding="utf-8")


def test_a_long_answer_is_capped_and_says_where_the_whole_one_is(workspace: Path) -> None:
    model = ScriptedModel(
        {"responses": [turn([task("t1", "Say a lot")]), answer("x" * 5000, agent="t1"), answer("ok")]}
    )
    agent, _, _ = make(workspace, model, SubAgentConfig(answer_chars=300))
    result = agent.run("go")
    (content,) = [r.content for m in result.messages for r in m.tool_results]
    assert content.count("x") == 300 and "tinyharness show" in content


def test_the_child_model_cannot_be_asked_for_a_tool_its_parent_lacks(workspace: Path) -> None:
    model = ScriptedModel({"responses": [turn([task("t1", "write", tools=["shell"])]), answer("ok")]})
    agent, _, _ = make(workspace, model)
    result = agent.run("go")
    (block,) = [r for m in result.messages for r in m.tool_results]
    assert block.is_error and "shell" in block.content


# --- concurrency --------------------------------------------------------------------------------


def test_concurrent_children_never_exceed_the_limit(workspace: Path) -> None:
    counts = {"now": 0, "most": 0}
    shared = ScriptedModel(
        {
            "responses": [
                turn([task(f"t{i}", f"job {i}") for i in range(5)]),
                *[answer(f"done {i}", agent=f"t{i}") for i in range(5)],
                answer("all done"),
            ]
        }
    )
    original = shared._take

    async def slow_complete(self: Any, request: ModelRequest) -> ModelResponse:
        counts["now"] += 1
        counts["most"] = max(counts["most"], counts["now"])
        await asyncio.sleep(0.05)
        counts["now"] -= 1
        return original(request, self.label)

    from tinyharness.models import scripted

    view = scripted._AgentView
    saved = view.complete
    view.complete = slow_complete  # type: ignore[method-assign]
    try:
        agent, sink, _ = make(workspace, shared, SubAgentConfig(concurrency=2))
        assert agent.run("go").ok
    finally:
        view.complete = saved  # type: ignore[method-assign]
    assert counts["most"] == 2
    assert len(run_starts(sink)) == 6


# --- depth ----------------------------------------------------------------------------------------


def test_depth_one_children_get_no_task_tool_and_depth_two_nests(workspace: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "delegate further", tools=["read_file", "task"])]),
                turn([task("g1", "read f2.py")], agent="t1"),
                call("r1", "read_file", {"path": "f2.py"}, agent="g1"),
                answer("f2 returns 2", agent="g1"),
                answer("grandchild says 2", agent="t1"),
                answer("2"),
            ]
        }
    )
    agent, sink, _ = make(workspace, model, SubAgentConfig(max_depth=2))
    assert agent.run("go").final == "2"
    root, child, grandchild = run_starts(sink)
    assert "task" in child["tools"] and "task" not in grandchild["tools"]
    assert (child["depth"], grandchild["depth"]) == (1, 2)
    assert grandchild["parent_run_id"] == child["run_id"] and child["parent_run_id"] == root["run_id"]

    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "delegate further", tools=["read_file", "task"])]),
                answer("I had no task tool", agent="t1"),
                answer("ok"),
            ]
        }
    )
    agent, sink, _ = make(workspace, model, SubAgentConfig(max_depth=1))
    assert agent.run("go").ok
    assert "task" not in run_starts(sink)[1]["tools"]


# --- budgets ----------------------------------------------------------------------------------------


def test_a_child_gets_a_share_of_what_the_parent_has_left(workspace: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "read everything")], usage=1000),  # parent: 1,020 billed
                *[call(f"r{i}", "read_file", {"path": f"f{i % 3}.py"}, agent="t1") for i in range(3)],
                answer("gave up", agent="t1"),  # the final answer after the child's budget stop
                answer("done", usage=100),
            ]
        }
    )
    agent, sink, _ = make(workspace, model, SubAgentConfig(token_share=0.1), AgentConfig(token_budget=3040))
    result = agent.run("go")
    child_end = [e for e in sink.of_type("run_end") if e.get("depth") == 1]
    # (3040 - 1020) * 0.1 = 202 tokens: the child stops after its first 120-token call and one more
    assert child_end[0]["stop"] == "token_budget"
    child_billed = sum(child_end[0]["usage"].values())
    assert result.usage.total == 1020 + child_billed + 110


def test_a_childs_turns_count_against_the_parents_iterations(workspace: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "read")]),
                *[
                    call(f"r{i}", "read_file", {"path": "f0.py", "start_line": i + 1}, agent="t1")
                    for i in range(2)
                ],
                answer("partial", agent="t1"),  # final answer after its iteration stop
                answer("final"),  # the parent's own final answer after its limit
            ]
        }
    )
    agent, sink, _ = make(workspace, model, SubAgentConfig(max_iterations=20), AgentConfig(max_iterations=4))
    result = agent.run("go")
    child_end = next(e for e in sink.of_type("run_end") if e.get("depth") == 1)
    assert child_end["stop"] == "max_iterations"  # 4 - 1 requests left for the child
    assert "3 iterations" in child_end["detail"]  # two turns, and its final answer the third
    assert result.stop == "max_iterations"  # the parent's turns were all spent by then
    assert len(model.requests) == 4 + 1  # only the parent's own final answer is past the limit


def child_stop(workspace: Path, config: SubAgentConfig, agent_config: AgentConfig, **args: Any) -> str:
    """The detail of the child's run_end when it runs out of turns or tokens (three reads)."""
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "read", **args)], usage=1000),
                *[call(f"r{i}", "read_file", {"path": f"f{i}.py"}, agent="t1") for i in range(3)],
                answer("partial", agent="t1"),
                answer("final"),
            ]
        }
    )
    agent, sink, _ = make(workspace, model, config, agent_config)
    agent.run("go")
    child_end = next(e for e in sink.of_type("run_end") if e.get("depth") == 1)
    assert child_end["stop"] in ("max_iterations", "token_budget")
    return str(child_end["detail"])


def test_a_childs_stop_says_which_limit_a_person_raises(workspace: Path) -> None:
    """A child has no --max-iterations of its own: its stop names the setting it hit."""
    own = child_stop(workspace, SubAgentConfig(max_iterations=2), AgentConfig(max_iterations=50))
    assert "2 iterations" in own and "--subagent-iterations" in own and "--max-iterations" not in own
    parents = child_stop(workspace, SubAgentConfig(max_iterations=20), AgentConfig(max_iterations=3))
    assert "2 iterations" in parents and "its parent run had left" in parents
    assert "the parent's limit (--max-iterations)" in parents
    profiles = load_profiles({"reader": {"description": "r", "max_iterations": 2, "token_budget": 90_000}})
    kind = child_stop(workspace, SubAgentConfig(profiles=profiles), AgentConfig(), agent="reader")
    assert "sub-agent kind 'reader'" in kind and "max_iterations in the config file" in kind
    tokens = child_stop(workspace, SubAgentConfig(token_share=0.1), AgentConfig(token_budget=3040))
    assert "its share of the tokens its parent run had left" in tokens and "--token-budget" in tokens
    profiles = load_profiles({"reader": {"description": "r", "token_budget": 100}})
    kind = child_stop(workspace, SubAgentConfig(profiles=profiles), AgentConfig(), agent="reader")
    assert "the token budget of sub-agent kind 'reader': token_budget in the config file" in kind


def test_a_child_cannot_outlive_its_parents_time_limit(workspace: Path) -> None:
    model = ScriptedModel({"responses": [turn([task("t1", "x")]), answer("ok")]})
    agent, _, runner = make(workspace, model, agent_config=AgentConfig(time_limit=5))
    agent.deadline = None
    import time

    agent.deadline = time.monotonic() + 3
    carve = runner._carve(agent, runner.config.profiles["general"], runner._ledger(agent))
    assert 2 < carve.seconds <= 3
    assert carve.hints["time_limit"] == "the time its parent run had left: raise the parent's --time-limit"


# --- pins ------------------------------------------------------------------------------------------

PIN = "Never edit anything under tests/"


def pinned_run(workspace: Path, profiles: dict[str, Any] | None = None) -> tuple[ScriptedModel, ListSink]:
    """A parent holding one pin hands reading to a child whose window is summarized after three
    big reads (by a summary that knows nothing of the pin); returns the model and the events."""
    child: list[dict[str, Any]] = []
    for i in range(3):
        (workspace / f"big{i}.txt").write_text("".join(f"line {n}: filler\n" for n in range(280)))
        child.append({**call(f"r{i}", "read_file", {"path": f"big{i}.txt"}, agent="t1"), "purpose": "agent"})
    child += [
        {**answer("1. Intent: read the files", agent="t1"), "purpose": "compact"},
        {**answer("all filler", agent="t1"), "purpose": "agent"},
    ]
    agent_task = {"agent": "reader"} if profiles else {}
    parent = [{**turn([task("t1", "read big0.txt to big2.txt", **agent_task)]), "purpose": "agent"}]
    model = ScriptedModel({"responses": [*parent, *child, {**answer("done"), "purpose": "agent"}]})
    sink = ListSink()

    def context(model_: Any, events: EventBus, tools: Any, notes: Path, session: Any, pins: Any) -> Any:
        config = ContextConfig(
            "summarize", window=4000, ratio=0.7, keep_recent=1, counter="chars4", restore_files=0
        )
        return build_context(config, events=events, anchors=pins)

    runner = SubAgents(
        SubAgentConfig(profiles=load_profiles(profiles or {})),
        SubAgentHost(
            tools=lambda notes, events: builtin_tools(workspace, notes=NotesFile(notes, root=workspace)),
            state_dir=workspace / ".tinyharness" / "subagents",
            context=context,
        ),
    )
    registry = builtin_tools(workspace)
    registry.add(runner.tool())
    anchors = Anchors(pins=[PIN])
    parent_agent = Agent(model, registry, events=EventBus([sink]), anchors=anchors)
    assert parent_agent.run("Read the big files; " + PIN).ok
    assert model.unused() == 0
    return model, sink


def test_a_child_keeps_to_its_parents_pins_through_its_compaction(workspace: Path) -> None:
    model, sink = pinned_run(workspace)
    child = [r for r in model.requests if r.purpose == "agent" and r.messages[0].text.startswith("read big")]
    assert len(child) == 4 and all(PIN in r.messages[0].text for r in child)  # first, and after compacting
    child_id = run_starts(sink)[1]["run_id"]
    compactions = [e for e in sink.of_type("compaction") if e["run_id"] == child_id]
    assert "summarize" in [c["strategy"] for c in compactions]
    audits = [e for e in sink.of_type("audit") if e["run_id"] == child_id]
    assert len(audits) == len(compactions)
    assert all(a["ok"] and a["pins"] == 1 and a["plan_items"] == 0 for a in audits)
    assert run_starts(sink)[1]["pins"] == [PIN]


def test_a_profile_can_leave_its_children_without_the_pins(workspace: Path) -> None:
    model, sink = pinned_run(workspace, {"reader": {"description": "reads", "pins": False}})
    child = [r for r in model.requests if r.purpose == "agent" and r.messages[0].text.startswith("read big")]
    assert child and not any(PIN in r.messages[0].text for r in child)
    assert not sink.of_type("audit") and "pins" not in run_starts(sink)[1]
    with pytest.raises(ConfigError, match=r"agents\.reader\.pins must be true or false"):
        load_profiles({"reader": {"description": "reads", "pins": "no"}})


# --- cancellation -----------------------------------------------------------------------------------


def test_stopping_the_parent_cancels_its_children(workspace: Path, tmp_path: Path) -> None:
    started = asyncio.Event()

    class Hangs(ScriptedModel):
        """The children's model never answers: only cancelling the parent ends them."""

        async def complete(self, request: ModelRequest) -> ModelResponse:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    parent_model = ScriptedModel({"responses": [turn([task("t1", "a"), task("t2", "b")])]})
    hanging = Hangs({"responses": []})
    parent_model.for_agent = lambda label: hanging  # type: ignore[method-assign]
    store = SessionStore(tmp_path / "sessions.db")
    session = store.open("job")
    session.lock()
    agent, sink, _ = make(workspace, parent_model, checkpoint=session)

    async def main() -> None:
        running = asyncio.ensure_future(agent.arun("go"))
        await started.wait()
        await asyncio.sleep(0.05)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(main())
    ends = [e for e in sink.of_type("run_end") if e.get("depth") == 1]
    assert sorted(e["stop"] for e in ends) == ["cancelled", "cancelled"]
    # their sessions are released (a resumed parent can take them again)
    for name in store.names_under("job/"):
        other = store.open(name)
        other.lock()
        other.close()
    session.close()
    store.close()


# --- profiles ---------------------------------------------------------------------------------------


def test_profiles_are_checked_with_one_clear_message() -> None:
    assert set(load_profiles({"reader": {"description": "reads"}})) == {"general", "reader"}
    bad = [
        ({"reader": {}}, "agents.reader.description"),
        ({"reader": {"description": "r", "toolz": []}}, "unknown key 'toolz'"),
        ({"reader": {"description": "r", "tools": "read_file"}}, "agents.reader.tools"),
        ({"reader": {"description": "r", "model": "gpt4"}}, "agents.reader.model"),
        ({"reader": {"description": "r", "max_iterations": 0}}, "agents.reader.max_iterations"),
        ({"bad name!": {"description": "r"}}, "profile name"),
    ]
    for raw, expected in bad:
        with pytest.raises(ConfigError, match=expected.replace(".", r"\.").replace("(", r"\(")):
            load_profiles(raw)


def test_a_profile_runs_its_child_on_its_own_model(workspace: Path, tmp_path: Path) -> None:
    child_script = tmp_path / "child.json"
    child_script.write_text(
        json.dumps({"responses": [call("r1", "read_file", {"path": "f0.py"}), answer("f0 returns 0")]})
    )
    parent = ScriptedModel({"responses": [turn([task("t1", "read f0.py", agent="reader")]), answer("0")]})
    loaded: list[ScriptedModel] = []

    def load(spec: str) -> ScriptedModel:
        loaded.append(ScriptedModel(spec.partition(":")[2]))
        return loaded[-1]

    profiles = load_profiles(
        {"reader": {"description": "reads", "model": f"scripted:{child_script}", "tools": ["read_file"]}}
    )
    sink = ListSink()
    runner = SubAgents(
        SubAgentConfig(profiles=profiles),
        SubAgentHost(
            tools=lambda notes, events: builtin_tools(workspace, notes=NotesFile(notes, root=workspace)),
            state_dir=workspace / ".tinyharness",
            load_model=load,
        ),
    )
    registry = builtin_tools(workspace)
    registry.add(runner.tool())
    agent = Agent(parent, registry, events=EventBus([sink]))
    assert agent.run("go").final == "0"
    asyncio.run(runner.aclose())  # the child's script was used up exactly (else ScriptError)
    child = run_starts(sink)[1]
    assert child["profile"] == "reader" and child["tools"] == ["read_file"]
    assert len(loaded) == 1 and len(loaded[0].requests) == 2 and len(parent.requests) == 2


def test_a_profile_naming_a_tool_the_run_lacks_is_refused_before_the_run(workspace: Path) -> None:
    profiles = load_profiles({"writer": {"description": "writes", "tools": ["shel"]}})
    runner = SubAgents(
        SubAgentConfig(profiles=profiles),
        SubAgentHost(tools=lambda notes, events: builtin_tools(workspace), state_dir=workspace),
    )
    with pytest.raises(ConfigError, match=r"agents\.writer\.tools: this run offers no tool 'shel'"):
        runner.check_profiles(builtin_tools(workspace).names)


# --- what a person sees, and the budget invariant ------------------------------------------------


def test_progress_lines_of_a_sub_agent_are_indented_under_its_parent(workspace: Path) -> None:
    import io

    from tinyharness.progress import ProgressPrinter

    stream = io.StringIO()
    model = ScriptedModel(
        {
            "responses": [
                turn([task("t1", "read f0", description="read f0")]),
                answer("0", agent="t1"),
                answer("ok"),
            ]
        }
    )
    agent, _, _ = make(workspace, model)
    agent.events.sinks.append(ProgressPrinter(stream, live=False))
    assert agent.run("go").ok
    lines = stream.getvalue().splitlines()
    assert "[task] general: read f0" in lines
    child = [line for line in lines if line.startswith("  [sub ")]
    assert child and child[-1].endswith("[done] stop=end_turn model_calls=1 compactions=0")


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(1, 100_000),
    spent=st.integers(0, 100_000),
    share=st.floats(0.01, 1.0),
    children=st.integers(1, 8),
)
def test_running_children_never_hold_more_tokens_than_the_parent_has_left(
    budget: int, spent: int, share: float, children: int
) -> None:
    import tempfile

    from tinyharness.models.base import Usage
    from tinyharness.tools.base import ToolError

    with tempfile.TemporaryDirectory() as folder:
        agent, _, runner = make(
            Path(folder),
            ScriptedModel({"responses": []}),
            SubAgentConfig(token_share=share, concurrency=children),
            AgentConfig(token_budget=budget),
        )
        agent.billed = Usage(spent, 0)
        ledger = runner._ledger(agent)
        held = 0
        for _ in range(children):  # each starts while the others still run
            try:
                carve = runner._carve(agent, runner.config.profiles["general"], ledger)
            except ToolError:
                break
            assert carve.tokens is not None and carve.tokens >= 1
            ledger.tokens += carve.tokens
            held += carve.tokens
        assert held <= max(budget - spent, 0)


def test_by_default_a_child_gets_no_tool_that_acts_on_its_parents_own_run(workspace: Path) -> None:
    """Tools the host does not make for a child (like a plan tool bound to the parent's plan)
    stay the parent's unless it gives them; read-only MCP tools (a server's) are shared."""
    import dataclasses

    from tinyharness.tools.base import function_tool

    def plan(step: str) -> str:
        """Rewrite the run's plan."""
        return step

    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    model = ScriptedModel(
        {"responses": [turn([task("t1", "look")]), answer("ok", agent="t1"), answer("done")]}
    )
    agent, sink, _ = make(workspace, model)
    agent.tools.add(function_tool(plan))
    agent.tools.add(dataclasses.replace(function_tool(lookup), name="mcp__docs__lookup", server="docs"))
    assert agent.run("go").ok
    child_tools = run_starts(sink)[1]["tools"]
    assert "plan" not in child_tools and "mcp__docs__lookup" in child_tools and "read_file" in child_tools


def test_a_sub_agents_spans_nest_under_its_parents_task_call(workspace: Path) -> None:
    """OpenTelemetry: one trace for the run tree; the child's invoke_agent span is a child of the
    parent's execute_tool task span (not a trace of its own)."""
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tinyharness.otel import OTelSink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OTelSink(provider)
    model = ScriptedModel(
        {"responses": [turn([task("t1", "look")]), answer("seen", agent="t1"), answer("ok")]}
    )
    agent, _, _ = make(workspace, model)
    agent.events.sinks.append(sink)
    assert agent.run("go").ok
    sink.close()
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    (task_span,) = [s for s in spans if s.name == "execute_tool task"]
    (root,) = [s for s in runs if s.parent is None]
    (child,) = [s for s in runs if s.parent is not None]
    assert child.parent is not None and child.parent.span_id == task_span.context.span_id
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
