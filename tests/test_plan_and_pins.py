"""The plan (``todo``), pins (``pin``, ``--pin``), the audit after each compaction, the
searchable history of what compaction drops, and incremental summaries, on the scripted model
through the real loop, context manager, tools and command line."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.agent import Agent
from tinyharness.anchors import Anchors, PlanItem
from tinyharness.chat.render import TurnView
from tinyharness.cli import _Structure, _tools, apply_settings, build_parser, main
from tinyharness.context.audit import PLAN_HEADER, with_anchors
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import ContextManager, build_context
from tinyharness.context.pipeline import parse_pipeline
from tinyharness.context.prefix import identical_prefix
from tinyharness.context.rewrite import flatten, rounds_after_head, task_blocks
from tinyharness.context.strategies import StepContext
from tinyharness.context.summarize import UPDATE_PROMPT, merge_update
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.models.scripted import ScriptedModel
from tinyharness.progress import ProgressPrinter
from tinyharness.tools.base import ToolError
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.history_search import DroppedHistory
from tinyharness.tools.plan import plan_tools

PLAN = [
    {"content": "Read a.txt", "status": "done"},
    {"content": "Read b.txt", "status": "in_progress"},
    {"content": "Answer", "status": "pending"},
]
PLAN_TEXT = "[x] Read a.txt\n[>] Read b.txt\n[ ] Answer"
PIN = "Never edit anything under tests/"


def call(call_id: str, name: str, args: dict[str, Any], input_tokens: int = 100) -> dict[str, Any]:
    """A tool call; ``input_tokens`` is what the provider reports the request took (the
    window's count starts from it)."""
    return {
        "purpose": "agent",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 10},
    }


def say(text: str, purpose: str = "agent") -> dict[str, Any]:
    return {
        "purpose": purpose,
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }


def padded(fact: str, chars: int = 6000) -> str:
    filler = "".join(f"line {i}: nothing to see here\n" for i in range(chars // 28))
    half = len(filler) // 2
    return f"{filler[:half]}{fact}\n{filler[half:]}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text(padded("The deploy port is 6543."), encoding="utf-8")
    (root / "b.txt").write_text(padded("Nothing else."), encoding="utf-8")
    (root / "c.txt").write_text(padded("Still nothing."), encoding="utf-8")
    return root


def agent_for(workspace: Path, script: list[dict[str, Any]], anchors: Anchors, sink: ListSink) -> Agent:
    events = EventBus([sink])
    history = DroppedHistory(workspace / ".tinyharness" / "history" / "test.db")
    tools = builtin_tools(workspace)
    for tool in [*plan_tools(anchors, events), history.tool()]:
        tools.add(tool)
    config = ContextConfig(
        "summarize", window=4000, ratio=0.7, keep_recent=1, counter="chars4", restore_files=0
    )
    context = build_context(config, events=events, anchors=anchors, dropped=history)
    return Agent(ScriptedModel({"responses": script}), tools, context=context, events=events, anchors=anchors)


def agent_requests(agent: Agent) -> list[ModelRequest]:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    return [r for r in model.requests if r.purpose == "agent"]


def head_text(request: ModelRequest) -> str:
    return request.messages[0].text


# --- the plan -----------------------------------------------------------------------------------


def test_the_plan_and_the_pins_are_back_in_the_first_request_after_a_compaction(
    workspace: Path,
) -> None:
    script = [
        call("t1", "todo", {"items": PLAN}),
        call("r1", "read_file", {"path": "a.txt"}),
        call("r2", "read_file", {"path": "b.txt"}),
        say("1. Intent: read files\n7. Next step: answer", "compact"),
        say("All read."),
    ]
    sink = ListSink()
    anchors = Anchors(pins=[PIN])
    agent = agent_for(workspace, script, anchors, sink)
    result = agent.run("Read a.txt and b.txt, then answer.")
    assert result.ok and result.compactions >= 1
    assert agent.model.unused() == 0  # type: ignore[attr-defined]  # the summary was asked for
    first, *_, last = agent_requests(agent)
    assert PIN in head_text(first)  # pinned from the start, after the task
    assert f"{PLAN_HEADER}\n{PLAN_TEXT}" in head_text(last)  # put back after the compaction
    assert PIN in head_text(last)
    assert not any(b.name == "todo" for m in last.messages for b in m.tool_uses)  # summarized away
    audits = sink.of_type("audit")
    assert len(audits) == result.compactions
    assert all(a["ok"] and a["missing"] == [] and a["pins"] == 1 and a["plan_items"] == 3 for a in audits)
    (plan,) = sink.of_type("plan")
    assert plan["done"] == 1 and plan["total"] == 3 and plan["current"] == "Read b.txt"


def test_plan_updates_between_compactions_keep_the_cached_prefix(workspace: Path) -> None:
    """The plan changes through calls appended to the history: each request repeats the whole
    previous request (same system prompt, previous messages unchanged at the front)."""
    later = [dict(item, status="done") for item in PLAN]
    script = [call("t1", "todo", {"items": PLAN}), call("t2", "todo", {"items": later}), say("Done.")]
    sink = ListSink()
    agent = agent_for(workspace, script, Anchors(pins=[PIN]), sink)
    assert agent.run("Plan, then finish.").ok
    requests = agent_requests(agent)
    assert len(requests) == 3 and not sink.of_type("compaction")
    for before, after in itertools.pairwise(requests):
        assert after.system == before.system
        assert identical_prefix(before.messages, after.messages) == len(before.messages)
    assert agent.anchors is not None and agent.anchors.plan_summary() == "3/3 done · all done"


def test_the_plan_and_pins_survive_a_killed_run_and_resume(tmp_path: Path, workspace: Path) -> None:
    log = str(tmp_path / "runs.db")
    base = [
        "run",
        "--workspace",
        str(workspace),
        "--log",
        log,
        "--session",
        "job",
        "--quiet",
        "--context-window",
        "4000",
        "--strategy",
        "summarize",
        "--counter",
        "chars4",
        "--keep-recent",
        "1",
    ]
    dies = tmp_path / "one.json"
    dies.write_text(json.dumps({"responses": [call("t1", "todo", {"items": PLAN})]}), encoding="utf-8")
    assert main([*base, "--pin", PIN, "--model", f"scripted:{dies}", "Read a.txt and b.txt."]) == 1

    rest = [
        call("r1", "read_file", {"path": "a.txt"}),
        call("r2", "read_file", {"path": "b.txt"}, input_tokens=3000),  # over the trigger (2800)
        say("1. Intent: read files", "compact"),
        say("All read."),
    ]
    again = tmp_path / "two.json"
    again.write_text(json.dumps({"responses": rest}), encoding="utf-8")
    events = tmp_path / "e.jsonl"
    code = main([*base, "--resume", "--trace", "--events", str(events), "--model", f"scripted:{again}"])
    assert code == 0
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert [e["ok"] for e in lines if e["type"] == "audit"] == [True]
    calls = [e for e in lines if e["type"] == "model_call" and e["purpose"] == "agent"]
    head = "".join(b.get("text", "") for b in calls[-1]["request"]["messages"][0]["content"])
    assert PLAN_TEXT in head and PIN in head  # the plan and the pin of the killed run


def test_a_new_task_on_a_session_keeps_its_pins_but_not_its_plan(tmp_path: Path, workspace: Path) -> None:
    base = ["run", "--workspace", str(workspace), "--log", str(tmp_path / "runs.db"), "--session", "s"]
    first = tmp_path / "one.json"
    first.write_text(
        json.dumps({"responses": [call("t1", "todo", {"items": PLAN}), say("ok")]}), encoding="utf-8"
    )
    assert main([*base, "--quiet", "--pin", PIN, "--model", f"scripted:{first}", "Plan it."]) == 0
    second = tmp_path / "two.json"
    second.write_text(json.dumps({"responses": [say("still ok")]}), encoding="utf-8")
    events = tmp_path / "e.jsonl"
    code = main(
        [*base, "--quiet", "--trace", "--events", str(events), "--model", f"scripted:{second}", "Next."]
    )
    assert code == 0
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "run_start" and lines[0]["pins"] == [PIN]
    request = next(e for e in lines if e["type"] == "model_call")["request"]
    texts = [b.get("text", "") for m in request["messages"] for b in m["content"]]
    assert sum(PIN in t for t in texts) == 1  # the session's head holds it; not repeated


def test_plan_tools_are_off_for_local_models_unless_asked(tmp_path: Path) -> None:
    def tools_of(*options: str) -> list[str]:
        args = build_parser().parse_args(["run", *options, "task"])
        apply_settings(args)
        return _tools(args, tmp_path, EventBus(), 20_000, _Structure(args, tmp_path, "s")).names

    assert "todo" not in tools_of() and "search_history" in tools_of()  # --model local is the default
    assert {"todo", "pin"} <= set(tools_of("--plan"))
    assert {"todo", "pin", "search_history"} <= set(tools_of("--model", "openai:gpt-4o-mini"))
    bare = tools_of("--model", "openai:gpt-4o-mini", "--no-plan", "--no-search-history")
    assert not {"todo", "pin", "search_history"} & set(bare)


def test_progress_line_shows_the_guides_plan_not_an_empty_todo_list() -> None:
    """The guide's ``plan`` event (kind and targets) shared the todo list's event type and was
    printed "[plan] (empty)" for every guided run."""
    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=False)
    printer.emit({"type": "plan", "kind": "edit", "targets": ["src/isodate/version.py"], "source": "model"})
    printer.emit({"type": "plan", "kind": None, "targets": [], "source": "paths"})
    assert stream.getvalue() == "[plan] edit: src/isodate/version.py\n[plan] open: no files named\n"


def test_a_plan_over_more_files_than_the_turn_limit_allows_says_so_before_the_first_read() -> None:
    """The seed's task on 37 files takes about 75 turns (a read and a note a file): with the
    default limit of 50 it stopped two thirds of the way, and said so only then."""
    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=False)
    printer.emit({"type": "run_start", "task": "t", "max_iterations": 50})
    printer.emit({"type": "plan", "kind": "notes", "targets": ["src/"], "files": 37, "turns": 75})
    printer.emit({"type": "plan", "kind": "notes", "targets": ["src/"], "files": 20, "turns": 41})
    first, second = stream.getvalue().splitlines()
    assert first.startswith("[plan] notes: src/ (37 files); it takes about 75 turns, more than the limit")
    assert "limit of 50" in first
    assert "--max-iterations to 80" in first
    assert second == "[plan] notes: src/ (20 files)"


def test_progress_line_and_chat_status_show_the_current_step() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=False)
    event = {"type": "plan", "items": PLAN, "done": 1, "total": 3, "current": "Read b.txt"}
    printer.emit(event)
    assert stream.getvalue() == "[plan] 1/3 done · now: Read b.txt\n"
    view = TurnView(console=None)  # type: ignore[arg-type]  # only the status is rendered
    view.event(event)
    drawn = view._renderable()
    drawn = getattr(drawn, "inner", drawn)  # the live area is drawn defused (control characters shown)
    assert "plan: 1/3 Read b.txt" in str(drawn.renderables[-1].__rich__())  # type: ignore[attr-defined]


def test_todo_refuses_a_plan_it_cannot_keep() -> None:
    anchors = Anchors()
    (todo, _pin) = plan_tools(anchors)
    with pytest.raises(ToolError, match="description"):
        todo.function(items=[{"content": " ", "status": "pending"}])
    with pytest.raises(ToolError, match="at least one step"):
        todo.function(items=[])
    assert todo.input_schema["properties"]["items"]["minItems"] == 1  # the JSON-mode grammar too
    assert anchors.plan == []
    assert "one step in_progress" in todo.function(
        items=[{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    )


def test_a_damaged_saved_plan_loses_only_its_bad_entries() -> None:
    anchors = Anchors(pins=[PIN])
    anchors.load_state(
        {
            "pins": [PIN, "Keep Python 3.11", 5, "x" * 3000],
            "plan": [
                {"content": "Read", "status": "done"},
                {"content": "y" * 400, "status": "pending"},
                "junk",
            ],
        }
    )
    assert anchors.pins == [PIN, "Keep Python 3.11"]
    assert anchors.plan == [PlanItem("Read", "done")]


# --- pins and the audit -------------------------------------------------------------------------


class DropsPinsQuietly:
    """A broken step: it declares itself lossless (so the manager puts nothing back) but
    rebuilds the head from the task alone, losing the pinned block, and drops old rounds."""

    name = "broken"
    calls_model = False
    lossy = False

    async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]:
        rounds = rounds_after_head(messages)
        return [Message("user", task_blocks(messages[0])), *flatten(rounds[-1:])]


def reads(rounds: int, size: int = 2000, start: int = 0) -> list[Message]:
    out = []
    for i in range(start, start + rounds):
        out.append(Message("assistant", (ToolUseBlock(f"c{i}", "read_file", {"path": f"m{i}.py"}),)))
        out.append(Message("user", (ToolResultBlock(f"c{i}", f"code {i} " * (size // 7)),)))
    return out


class Summarizer:
    """A call_model stand-in that answers summary requests from a list and records them."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        text = self.answers.pop(0) if self.answers else "1. Intent: go on\n7. Next step: go on"
        return ModelResponse(Message.assistant(text), "end_turn", Usage(10, 5))


def managed(strategy: str, anchors: Anchors, sink: ListSink, **options: Any) -> ContextManager:
    values: dict[str, Any] = {"window": 4000, "ratio": 0.7, "keep_recent": 2, "counter": "chars4"}
    values.update(options)
    return build_context(ContextConfig(strategy, **values), events=EventBus([sink]), anchors=anchors)


def test_the_audit_catches_a_step_that_drops_a_pin_and_puts_it_back() -> None:
    anchors = Anchors(pins=[PIN])
    anchors.set_plan([PlanItem("Read every module", "in_progress")])
    sink = ListSink()
    context = managed("clear-tool-results", anchors, sink)
    context.pipeline = [DropsPinsQuietly()]
    task = Message.user("Read every module.")
    history = [*with_anchors([task], anchors), *reads(12)]
    after = asyncio.run(context.prepare("sys", history, Summarizer()))
    (audit,) = sink.of_type("audit")
    assert audit["ok"] is False and audit["repaired"] is True
    kinds = {m["kind"]: m["text"] for m in audit["missing"]}
    assert kinds == {"pin": PIN, "plan": "Read every module"}
    assert PIN in after[0].text and "[>] Read every module" in after[0].text
    assert after[0].content[0] == task.content[0]


def test_a_step_that_rewrites_the_task_is_refused_before_the_audit() -> None:
    """The request validator's compaction check already refuses a result that does not open
    with the task, so the next step runs instead and the audit finds the task in place."""

    class RewritesTheTask(DropsPinsQuietly):
        async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]:
            return [Message.user("something else"), *flatten(rounds_after_head(messages)[-1:])]

    sink = ListSink()
    context = managed("clear-tool-results", Anchors(pins=[PIN]), sink)
    context.pipeline = [RewritesTheTask()]
    task = Message.user("The real task.")
    history = [*with_anchors([task], Anchors(pins=[PIN])), *reads(12)]
    after = asyncio.run(context.prepare("sys", history, Summarizer()))
    assert [e["strategy"] for e in sink.of_type("compaction_fallback")] == ["broken"]
    (audit,) = sink.of_type("audit")
    assert audit["ok"] and after[0].content[0] == task.content[0] and PIN in after[0].text


_PIN_TEXT = st.text(
    string.ascii_letters + string.digits + " .,:;'\"-_/\\<>[]{}()中文é\n", min_size=1, max_size=80
)
_STEPS = st.sampled_from(
    [
        "summarize",
        "restart",
        "clear-tool-results",
        "sliding-window",
        "offload",
        "default",
        "summarize,sliding-window",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    user_pins=st.lists(_PIN_TEXT.filter(str.strip), max_size=3),
    plan=st.lists(
        st.tuples(_PIN_TEXT.filter(str.strip), st.sampled_from(["pending", "in_progress", "done"])),
        max_size=4,
    ),
    steps=st.lists(
        st.tuples(_STEPS, st.integers(1, 6), st.one_of(st.none(), _PIN_TEXT.filter(str.strip))),
        min_size=1,
        max_size=6,
    ),
)
def test_pins_survive_any_sequence_of_compactions(
    user_pins: list[str], plan: list[tuple[str, str]], steps: list[tuple[str, int, str | None]]
) -> None:
    """Whatever the strategies, the rounds between them and the pins the model adds on the
    way, every pin is word for word in the window after each compaction, the task opens it,
    and no audit finds anything missing (built-in steps keep their contract)."""
    anchors = Anchors(pins=user_pins)
    if plan:
        anchors.set_plan([PlanItem(c.strip()[:300] or "x", s) for c, s in plan])  # type: ignore[arg-type]
    sink = ListSink()
    context = managed("summarize", anchors, sink)
    task = Message.user("The task.")
    messages = [*with_anchors([task], anchors), *reads(2, 300)]
    added = 0
    for number, (strategy, rounds, new_pin) in enumerate(steps):
        context.pipeline = parse_pipeline(strategy)
        if new_pin is not None and anchors.add_pin(new_pin):  # the model pins through the tool
            use = ToolUseBlock(f"p{number}", "pin", {"text": new_pin})
            messages += [Message("assistant", (use,)), Message("user", (ToolResultBlock(use.id, "Pinned."),))]
        messages += reads(rounds, 1500, start=added)
        added += rounds
        context._calls_since_compaction = 5  # the agent worked in between (no storm guard)
        messages = asyncio.run(context.compact_now("sys", messages, Summarizer()))
        text = "\n".join(
            [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]
            + [json.dumps(b.input, ensure_ascii=False) for m in messages for b in m.tool_uses]
        )
        for pin in anchors.pins:
            assert pin in text or json.dumps(pin, ensure_ascii=False)[1:-1] in text
        assert messages[0].content[0] == task.content[0]
    audits = sink.of_type("audit")
    assert len(audits) == len(sink.of_type("compaction")) and all(a["ok"] for a in audits)


# --- searchable history -------------------------------------------------------------------------


def test_search_history_finds_a_detail_the_summary_dropped(workspace: Path) -> None:
    secret = "ghp_" + "x1Y2z3W4" * 4 + "abcd"
    (workspace / "a.txt").write_text(padded(f"The deploy port is 6543. token={secret}"), encoding="utf-8")
    script = [
        call("r1", "read_file", {"path": "a.txt"}),
        call("r2", "read_file", {"path": "b.txt"}),
        call("r3", "read_file", {"path": "c.txt"}),
        say("1. Intent: read the files\n6. Pending work: answer", "compact"),
        call("s1", "search_history", {"query": "which deploy port"}),
        say("The deploy port is 6543."),
    ]
    sink = ListSink()
    agent = agent_for(workspace, script, Anchors(), sink)
    result = agent.run("Find the deploy port.")
    assert result.ok and result.compactions >= 1
    assert not any("6543" in m.text for m in agent_requests(agent)[-2].messages)  # out of the window
    found = next(b.content for m in result.messages for b in m.tool_results if b.tool_use_id == "s1")
    assert "The deploy port is 6543." in found
    assert "result of read_file" in found and '"a.txt"' in found  # which call it came from
    database = workspace / ".tinyharness" / "history" / "test.db"
    raw = b"".join(p.read_bytes() for p in database.parent.iterdir())
    assert b"6543" in raw and secret.encode() not in raw  # redacted before it is written
    assert oct(database.stat().st_mode & 0o777) == "0o600"


def test_search_history_before_any_compaction_and_for_short_words(tmp_path: Path) -> None:
    history = DroppedHistory(tmp_path / "h.db")
    tool = history.tool()
    assert "Nothing was taken out" in tool.function(query="port")
    assert not (tmp_path / "h.db").exists()
    history.record([Message.user("数据库端口是 5432，别改。"), Message.assistant("ok")], 1)
    assert "5432" in tool.function(query="数据库端口")  # trigrams find CJK without spaces
    assert "5432" in tool.function(query="端口")  # under three characters: a substring scan
    assert "No passage" in tool.function(query="nowhere to be found")
    history.close()
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("SELECT count(*) FROM passages").fetchone()[0] == 2


def test_a_history_file_that_cannot_be_written_does_not_stop_the_compaction(tmp_path: Path) -> None:
    (tmp_path / "h.db").write_bytes(b"not a database at all" * 10)
    sink = ListSink()
    context = build_context(
        ContextConfig("summarize", window=4000, ratio=0.7, keep_recent=2, counter="chars4"),
        events=EventBus([sink]),
        dropped=DroppedHistory(tmp_path / "h.db"),
    )
    after = asyncio.run(context.prepare("sys", [Message.user("task"), *reads(12)], Summarizer()))
    assert len(sink.of_type("compaction")) == 1 and len(after) < 25
    (warning,) = [e for e in sink.of_type("context_warning") if "not searchable" in e["message"]]
    assert "not a SQLite database" in warning["message"]
    assert (tmp_path / "h.db").read_bytes() == b"not a database at all" * 10  # left as it was


# --- incremental summaries ----------------------------------------------------------------------

FIRST = (
    "1. Intent: read every module\n2. User instructions and constraints: keep Python 3.11\n"
    "3. Decisions: none yet\n6. Pending work: modules m4 and on\n7. Next step: read m4.py"
)
UPDATE = (
    "1. Intent: (unchanged)\n2. User instructions and constraints: (unchanged)\n"
    "3. Decisions: use sqlite\n7. Next step: read m9.py"
)


def test_a_second_summary_updates_the_first_with_the_new_messages_only() -> None:
    sink = ListSink()
    context = managed("summarize", Anchors(), sink, keep_recent=1)
    summarizer = Summarizer(FIRST, UPDATE)
    task = Message.user("Read every module.")
    messages = asyncio.run(context.compact_now("sys", [task, *reads(4)], summarizer))
    context._calls_since_compaction = 5
    messages = asyncio.run(context.compact_now("sys", [*messages, *reads(4, start=4)], summarizer))
    first, second = (r.messages[0].text for r in summarizer.requests)
    assert UPDATE_PROMPT in second and "## Current summary\n" + FIRST in second
    assert all(f"m{i}.py" in second for i in (3, 4, 5, 6))  # the kept round and the new ones
    assert not any(f"m{i}.py" in second for i in (0, 1, 2))  # summarized before: not sent again
    summary = messages[0].text
    assert "1. Intent: read every module" in summary and "keep Python 3.11" in summary  # word for word
    assert "3. Decisions: use sqlite" in summary and "read m9.py" in summary and "read m4.py" not in summary
    assert "6. Pending work: modules m4 and on" in summary  # left out of the update: kept
    assert "## Current summary" not in first


def test_rewrite_mode_summarizes_the_summary_again() -> None:
    context = managed("summarize", Anchors(), ListSink(), keep_recent=1, summary_mode="rewrite")
    summarizer = Summarizer(FIRST, "1. Intent: rewritten")
    task = Message.user("Read every module.")
    messages = asyncio.run(context.compact_now("sys", [task, *reads(4)], summarizer))
    context._calls_since_compaction = 5
    messages = asyncio.run(context.compact_now("sys", [*messages, *reads(4, start=4)], summarizer))
    assert "## Summary of even earlier work\n" + FIRST in summarizer.requests[1].messages[0].text
    assert "1. Intent: rewritten" in messages[0].text and "keep Python 3.11" not in messages[0].text


def test_merge_update_takes_a_free_form_reply_whole() -> None:
    assert merge_update(FIRST, "Everything is done.") == "Everything is done."
    assert merge_update("free text", UPDATE) == UPDATE
