"""A task over every file of a folder ("read every .py file under src/ ... into the notes"): the
set is found once and kept as run state; read_file offers only the files not covered yet; right
after a file of the set is read, the next action is its note (path fixed); the run may not end
while files remain; once every file is noted the final answer is asked for; a note that is the
task echoed or a neighbour's docstring is refused. Measured with Qwen2.5-Coder-0.5B over 38
files: with the covered files forgotten at each compaction, 38 reads covered 13 files; with
several files in view at the flush, most wrong notes took a neighbour's docstring."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tinyharness.agent import Agent, AgentConfig
from tinyharness.events import EventBus, ListSink
from tinyharness.guide import StepsGuide, TaskPlan
from tinyharness.guide.coverage import (
    ALL_DONE,
    DONE_NOTES,
    FILES_LEFT,
    FIND_NOW,
    FROM_NOTES,
    MAX_NOTES_SHOWN,
    NOT_IN_FILE,
    NOTE_NOW,
    NOTHING_NOTED,
    FileSetPlan,
    review_note,
    set_for,
)
from tinyharness.guide.focus import ASK_QUESTION, answer_ask, is_question
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.json_mode import FINAL_TOOL, action_schema
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolResult
from tinyharness.tools.builtin import builtin_tools, notes_since
from tinyharness.tools.files import ReadState, head_text, text_files
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.workspace import Workspace

TASK = (
    "Read every .py file under src/ one by one and write a one-line summary of each into the notes "
    "with the note tool"
)
FILES = {
    "src/pkg/alpha.py": '"""Parse the configuration files of the shop."""\n\ndef parse_config():\n    pass\n',
    "src/pkg/beta.py": '"""Render invoices as portable documents."""\n\ndef render_invoice():\n    pass\n',
    "src/gamma.py": '"""Retry network calls with exponential backoff."""\n\ndef retry():\n    pass\n',
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for path, text in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    (tmp_path / "README.md").write_text("# shop\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_alpha.py").write_text("def test(): pass\n", encoding="utf-8")
    return tmp_path


NOTES_PLAN = TaskPlan("notes", ("src/**/*.py",))  # what the plan request (or --each) gives TASK
QUESTION_PLAN = TaskPlan("answer", ("src/**/*.py",))  # and a question over the same files
_GUIDES: dict[int, StepsGuide] = {}  # each plan's guide, for the agent and the note calls


def _plan(
    project: Path, events: EventBus | None = None, stated: TaskPlan = NOTES_PLAN
) -> tuple[FileSetPlan, ReadState, Any]:
    space = Workspace(project)
    state = ReadState()
    notes = NotesFile(project / "NOTES.md", root=project)
    plan = FileSetPlan(
        lambda: text_files(space),
        notes_since(notes),
        state.lines_read,
        lambda path: head_text(space, path, 20_000),
        events=events,
    )
    plan.plan = stated  # a plan started without ``start`` (see ``active``) takes this one
    registry = builtin_tools(project, read_state=state, notes=notes)
    known = [spec.description.split(". ", 1)[0] for spec in registry.specs]
    _GUIDES[id(plan)] = StepsGuide(file_set=plan, plan=stated, known=known, events=events)
    return plan, state, registry


def _agent(model: Any, registry: Any, config: AgentConfig, plan: FileSetPlan, **options: Any) -> Agent:
    return Agent(model, registry, config, guide=_GUIDES[id(plan)], **options)


def _note(plan: FileSetPlan, registry: Any, args: dict[str, Any]) -> ToolResult:
    """A note call as the agent runs it: the guide's review, then the tool."""
    checked = _GUIDES[id(plan)].review(ToolUseBlock("n", "note", args))
    if isinstance(checked, ToolResultBlock):
        return ToolResult(checked.content, ok=not checked.is_error)
    return asyncio.run(registry.execute("note", checked.input))


def _after_read(registry: Any, task: str, path: str) -> list[Message]:
    """The task, then a real read_file of ``path`` and its result."""
    call = ToolUseBlock("c1", "read_file", {"path": path})
    result = asyncio.run(registry.run_call(call, EventBus()))
    return [Message.user(task), Message("assistant", (call,)), Message("user", (result,))]


def _note_forced_after_read(project: Path, task: str, path: str) -> tuple[FileSetPlan, Any, list[Message]]:
    """After a read of ``path``, the plan's next step is ``note`` with its path fixed to it."""
    plan, _state, registry = _plan(project, stated=NOTES_PLAN if task == TASK else QUESTION_PLAN)
    messages = _after_read(registry, task, path)
    step = plan.next_step(messages)
    assert step is not None and step.tool == "note" and not step.final_allowed
    assert _offered(registry, "note", messages, plan) == [path]
    return plan, registry, messages


def _offered(registry: Any, tool: str, messages: list[Message], plan: FileSetPlan) -> list[str]:
    """The tool's path choices as the agent offers them: the guide's over the tool's own."""
    guided = _GUIDES[id(plan)].choices(tool, messages)
    spec = next(s for s in registry.specs if s.name == tool)
    own = spec.choices(messages) if spec.choices is not None else {}
    return list((guided or own).get("path", []))


def test_the_set_is_the_files_of_the_plans_folder_or_glob_whatever_the_words() -> None:
    files = ["src/a/x.py", "src/b.py", "src/c.md", "tests/t.py", "README.md", "docs/a.md"]
    for task in (TASK, "逐个读 src/ 下所有 .py 文件", "Résume chaque fichier Python de src"):
        assert set_for(NOTES_PLAN, task, files) == ["src/a/x.py", "src/b.py"]
    assert set_for(TaskPlan("notes", ("docs/",)), "任何", files) == ["docs/a.md"]
    assert set_for(TaskPlan(), "look at src/**/*.py and note them", files) == ["src/a/x.py", "src/b.py"]
    assert set_for(TaskPlan("answer", ("README.md",)), "Read README.md", files) == []  # one file: no set
    assert set_for(TaskPlan("list", ("src/",)), "How many files are in src/?", files) == []
    assert set_for(TaskPlan("notes", ("lib/",)), "lib", files) == []  # no such folder


def test_a_notes_plan_on_named_files_is_a_set_of_those_files() -> None:
    """A note for each of the files the plan names gets the set's steps and checks, as a
    folder's does (before, named files went without: the 0.5B wrote another file's docstring
    as a note, in five lines); the words of the task play no part."""
    files = ["src/a/x.py", "src/b.py", "src/c.md", "tests/t.py", "README.md"]
    named = TaskPlan("notes", ("src/b.py", "README.md", "src/gone.py"))
    for task in (
        "Write a one-line note for each of src/b.py and README.md",
        "给 src/b.py 和 README.md 各写一行笔记",
    ):
        assert set_for(named, task, files) == ["README.md", "src/b.py"]  # a file not there is dropped
    assert set_for(TaskPlan("notes", ("src/a/", "src/b.py")), "any", files) == [
        "src/a/x.py"
    ]  # a folder first
    assert set_for(TaskPlan("answer", ("src/b.py", "README.md")), "any", files) == []  # a question: no


def test_a_note_on_a_named_file_is_checked_like_a_folders(project: Path) -> None:
    named = TaskPlan("notes", ("src/pkg/alpha.py", "src/pkg/beta.py"))
    plan, _state, registry = _plan(project, stated=named)
    task = "Write a one-line note for each of src/pkg/alpha.py and src/pkg/beta.py saying what it is for."
    assert plan.active([Message.user(task)])
    for path in ("src/pkg/alpha.py", "src/pkg/beta.py"):
        assert asyncio.run(registry.execute("read_file", {"path": path})).ok
    neighbour = _note(
        plan, registry, {"path": "src/pkg/beta.py", "text": "Parse the configuration files of the shop."}
    )
    assert not neighbour.ok and "describes src/pkg/alpha.py" in neighbour.content
    own = _note(
        plan, registry, {"path": "src/pkg/beta.py", "text": "renders invoices\n\nrender_invoice():\n- pdf"}
    )
    assert own.ok
    assert (project / "NOTES.md").read_text(encoding="utf-8") == "src/pkg/beta.py: renders invoices\n"
    # after beta's read, the next request is beta's note with only beta in view
    messages = _after_read(registry, task, "src/pkg/alpha.py")
    step = plan.next_step(messages)
    assert step is not None and step.tool == "note" and step.view is not None


def test_a_set_files_first_read_starts_at_its_first_line(project: Path) -> None:
    """A start_line on a file of the set not read yet is the last file's (the 0.5B asked for
    isoduration.py from line 153, past its end, five times): the read starts at line 1. A file
    read in part, or one outside the set, keeps its start_line."""
    plan, _state, registry = _plan(project)
    plan.active([Message.user(TASK)])
    guide = _GUIDES[id(plan)]
    carried = guide.review(
        ToolUseBlock("r1", "read_file", {"path": "src/gamma.py", "start_line": 153, "end_line": 140})
    )
    assert (
        isinstance(carried, ToolUseBlock) and carried.input == {"path": "src/gamma.py"} and carried.id == "r1"
    )
    assert asyncio.run(registry.execute("read_file", {"path": "src/gamma.py", "end_line": 1})).ok
    again = ToolUseBlock("r2", "read_file", {"path": "src/gamma.py", "start_line": 2})
    assert guide.review(again) is again
    outside = ToolUseBlock("r3", "read_file", {"path": "README.md", "start_line": 9})
    assert guide.review(outside) is outside


def test_a_question_over_files_too_large_together_is_a_set_but_a_chosen_folder_is_not() -> None:
    """A question whose files do not fit together is read as a set, one file at a time; a
    folder the plan request chose for it is not expanded into one (the 0.5B read and noted a
    requirements folder's 11 files for "Which Python versions does it support?")."""
    files = ["pyproject.toml", "requirements/a.txt", "requirements/b.txt", "requirements/c.txt"]
    size = {p: 300 for p in files}.__getitem__
    folder = TaskPlan("answer", ("pyproject.toml", "requirements/"))
    for task in ("Which Python versions does it support?", "这个项目支持哪些 Python 版本？"):
        assert set_for(folder, task, files, room_chars=400, size=size) == []
    both = TaskPlan("answer", ("requirements/a.txt", "requirements/b.txt"))
    assert set_for(both, "Compare them", files, room_chars=400, size=size) == [
        "requirements/a.txt",
        "requirements/b.txt",
    ]


def test_read_file_offers_the_files_not_noted_yet(project: Path) -> None:
    plan, _state, registry = _plan(project)
    head = [Message.user(TASK)]
    assert _offered(registry, "read_file", head, plan) == sorted(p for p in FILES)
    NotesFile(project / "NOTES.md", root=project).append("src/gamma.py: retries calls with backoff")
    assert _offered(registry, "read_file", head, plan) == ["src/pkg/alpha.py", "src/pkg/beta.py"]
    assert plan.covered == {"src/gamma.py"}


def _use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return {"stop_reason": "tool_use", "content": [use], "usage": {"input_tokens": 900, "output_tokens": 20}}


def _read_and_note(n: int, path: str, text: str) -> list[dict[str, Any]]:
    """The model's turn for one file of a set: its note (the guide reads the file itself)."""
    return [_use(f"n{n}", "note", {"path": path, "text": text})]


def _text(text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"stop_reason": "end_turn", "content": content, "usage": {"input_tokens": 900, "output_tokens": 9}}


def test_each_read_is_followed_by_its_note_and_the_run_ends_when_all_are_noted(project: Path) -> None:
    sink = ListSink()
    events = EventBus([sink])
    plan, _state, registry = _plan(project, events)
    script: list[dict[str, Any]] = []
    notes = {
        "src/gamma.py": "retries network calls with backoff",
        "src/pkg/alpha.py": "parses the shop configuration",
        "src/pkg/beta.py": "renders invoices as documents",
    }
    for n, (path, text) in enumerate(notes.items()):
        script += _read_and_note(n, path, text)  # the guide reads each file itself
    model = ScriptedModel({"responses": [*script, _text("All three files are noted.")]})
    # three notes and the answer: four turns (the reads spend none)
    agent = _agent(model, registry, AgentConfig(max_iterations=5), plan, events=events)
    result = agent.run(TASK)
    assert result.stop == "end_turn" and result.final == "All three files are noted.", result
    requests = model.requests
    assert len(requests) == 4
    for n, path in enumerate(notes):
        after_read = requests[n]
        assert after_read.tool_choice == "note" and not after_read.final_allowed
        assert after_read.messages[-1].text.endswith(NOTE_NOW.format(path=path))
        # what the file defines, said first (names of its own a note can give)
        assert (
            f"{path} defines " in after_read.messages[-1].text and " 1 " not in after_read.messages[-1].text
        )
        note_spec = next(s for s in after_read.tools if s.name == "note")
        assert note_spec.choices is not None
        # Only the task and this file's read in view: no earlier note or file to copy from.
        task, read, page = after_read.messages
        assert task.text == TASK and read.tool_uses[0].input == {"path": path}
        assert FILES[path].splitlines()[0] in page.tool_results[0].content
    reads = [c for m in agent.messages for c in m.tool_uses if c.name == "read_file"]
    assert [(c.id, c.input["path"]) for c in reads] == [(f"guide_{n + 1}", p) for n, p in enumerate(notes)]
    last = requests[-1]
    assert last.final_only
    done = ALL_DONE.format(total=3, what="each one is noted", ask=answer_ask(TASK))
    assert last.messages[-1].text.endswith(done)
    lines = (project / "NOTES.md").read_text(encoding="utf-8").splitlines()
    assert lines == [f"{path}: {text}" for path, text in notes.items()]
    covered = [e["covered"] for e in sink.events if e["type"] == "coverage"]
    assert covered == [1, 2, 3]


def test_an_answer_that_only_copies_the_last_prompt_says_what_was_done(project: Path) -> None:
    """The 0.5B, once all 37 files of a run were noted, answered with the harness's last prompt
    copied back; stripped of it, nothing was left and the user read "(no final answer)" after a
    run that did its job. The plan knows what was done: that is the answer then."""
    plan, _state, registry = _plan(project)
    notes = {
        "src/gamma.py": "retries network calls with backoff",
        "src/pkg/alpha.py": "parses the shop configuration",
        "src/pkg/beta.py": "renders invoices as documents",
    }
    script = [step for n, (path, text) in enumerate(notes.items()) for step in _read_and_note(n, path, text)]
    copied = ALL_DONE.format(total=3, what="each one is noted", ask=answer_ask(TASK))
    model = ScriptedModel({"responses": [*script, _text(copied)]})
    result = _agent(model, registry, AgentConfig(max_iterations=10), plan).run(TASK)
    assert result.stop == "end_turn"
    assert result.final == DONE_NOTES.format(total=3)
    assert "no final answer" not in result.final


def test_the_forced_note_has_its_path_fixed_and_no_final_answer_while_files_remain(project: Path) -> None:
    plan, registry, messages = _note_forced_after_read(project, TASK, "src/gamma.py")
    agent = _agent(ScriptedModel({"responses": []}), registry, AgentConfig(), plan)
    forced = action_schema(agent.offered_tools(), messages=messages, tool_choice="note")
    assert forced["properties"]["arguments"]["properties"]["path"]["enum"] == ["src/gamma.py"]
    free = action_schema(agent.offered_tools(), messages=messages, final_allowed=False)
    assert FINAL_TOOL not in {b["properties"]["tool"]["const"] for b in free["anyOf"]}


def test_an_answer_while_files_remain_is_sent_back(project: Path) -> None:
    """Native tool calling cannot take the answer off the menu: the loop says what is left."""
    plan, _state, registry = _plan(project)
    script = [
        _text("Done."),
        _use("r1", "read_file", {"path": "src/gamma.py"}),
        _use("n1", "note", {"path": "src/gamma.py", "text": "retries calls with backoff"}),
        _text("Done now."),
    ]
    agent = _agent(ScriptedModel({"responses": script}), registry, AgentConfig(max_iterations=4), plan)
    result = agent.run(TASK)
    assert result.stop == "max_iterations"
    sent_back = [m.text for m in result.messages if m.role == "user" and m.text.startswith("Not done yet")]
    assert sent_back[0] == FILES_LEFT.format(left=3, total=3, next="src/gamma.py")
    assert sent_back[1].startswith(FILES_LEFT.format(left=2, total=3, next="src/pkg/alpha.py"))


class _Saved:
    def __init__(self) -> None:
        self.state: dict[str, Any] = {}

    def save(self, messages: Any, state: dict[str, Any], *, starting: Any = ()) -> None:
        self.state = json.loads(json.dumps(state))  # what a session stores: JSON

    def call_started(self, call: Any) -> None: ...

    def call_finished(self, result: Any) -> None: ...


def test_a_resumed_run_keeps_the_set_and_the_covered_files(project: Path) -> None:
    plan, _state, registry = _plan(project)
    saved = _Saved()
    script = [
        _use("r1", "read_file", {"path": "src/gamma.py"}),
        _use("n1", "note", {"path": "src/gamma.py", "text": "retries calls with backoff"}),
        _text("(stopped)"),
    ]
    model = ScriptedModel({"responses": script})
    first = _agent(model, registry, AgentConfig(max_iterations=2), plan, checkpoint=saved)
    first.run(TASK)
    assert saved.state["guide"]["set"]["covered"] == ["src/gamma.py"]
    # The workspace changes and the notes are cleared: the resumed run keeps its set and progress.
    (project / "src" / "delta.py").write_text('"""New."""\n', encoding="utf-8")
    (project / "NOTES.md").write_text("", encoding="utf-8")
    resumed, _state2, registry2 = _plan(project)
    script2 = [_use("r2", "read_file", {"path": "src/pkg/alpha.py"}), _text("(stopped)")]
    model2 = ScriptedModel({"responses": script2})
    second = _agent(model2, registry2, AgentConfig(max_iterations=1), resumed)
    second.run(None, history=first.messages[:-1], state=saved.state)
    offered = next(s for s in model2.requests[0].tools if s.name == "read_file")
    assert offered.choices is not None
    assert offered.choices(model2.requests[0].messages)["path"] == ["src/pkg/alpha.py", "src/pkg/beta.py"]
    assert resumed.unfinished(first.messages) == FILES_LEFT.format(left=2, total=3, next="src/pkg/alpha.py")


def test_a_note_that_echoes_the_task_or_describes_a_neighbour_is_refused(project: Path) -> None:
    import asyncio

    plan, _state, registry = _plan(project)
    head = [Message.user(TASK)]
    plan.active(head)
    for path in ("src/pkg/alpha.py", "src/pkg/beta.py"):
        assert asyncio.run(registry.execute("read_file", {"path": path})).ok
    echo = _note(plan, registry, {"path": "src/pkg/beta.py", "text": TASK})
    assert not echo.ok and "repeats the task" in echo.content
    copied = {"path": "src/pkg/beta.py", "text": "Parse the configuration files of the shop."}
    neighbour = _note(plan, registry, copied)
    assert not neighbour.ok and "describes src/pkg/alpha.py" in neighbour.content
    tool_text = {
        "path": "src/pkg/beta.py",
        "text": "Reads a text file from the workspace, with line numbers.",
    }
    described = _note(plan, registry, tool_text)
    assert not described.ok and "repeats" in described.content
    lines = {
        "path": "src/pkg/beta.py",
        "text": "src/pkg/beta.py (lines 1-4 of 4)\n 1 import os\n 2 def x(): pass",
    }
    copied_lines = _note(plan, registry, lines)
    assert not copied_lines.ok and "copies the file's lines" in copied_lines.content
    unread = _note(plan, registry, {"path": "src/gamma.py", "text": "retries with backoff"})
    assert not unread.ok and "has not been read" in unread.content
    own_text = {"path": "src/pkg/beta.py", "text": "renders the invoices\n\nThere are three modes:\n- pdf"}
    own = _note(plan, registry, own_text)  # one line a file: the first
    assert own.ok
    assert (project / "NOTES.md").read_text(encoding="utf-8") == "src/pkg/beta.py: renders the invoices\n"


def test_the_cli_plans_a_folder_task_for_local_models(project: Path) -> None:
    """Through the CLI (scripted model on the local profile: the plan request first, answered
    under its schema): read, note, answer."""
    script = project / ".script.json"  # hidden: not one of the workspace's files
    responses: list[dict[str, Any]] = [_text(json.dumps(NOTES_PLAN.to_state()))]
    for n, path in enumerate(sorted(FILES)):
        text = f"what {Path(path).stem} does: {FILES[path].splitlines()[0].strip(chr(34))}"
        responses += _read_and_note(n, path, text)
    responses.append(_text("Noted all three."))
    script.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    events = project / ".events.jsonl"
    argv = [sys.executable, "-m", "tinyharness", "run", TASK, "--workspace", str(project), "--no-log"]
    argv += ["--model", f"scripted:{script}", "--profile", "local", "--events", str(events), "--no-memory"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[files] 3/3 covered" in done.stderr
    seen = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    kinds = [event["type"] for event in seen]
    assert kinds.count("coverage") == 3 and "answer_now" in kinds
    assert len((project / "NOTES.md").read_text(encoding="utf-8").splitlines()) == 3
    # the plan says what the set takes (a read and a note a file, then the answer), within the limit
    plan = next(event for event in seen if event["type"] == "plan")
    assert (plan["files"], plan["turns"]) == (3, 4) and seen[0]["max_iterations"] == 50
    assert "[plan] notes: src/**/*.py (3 files)\n" in done.stderr


QUESTION = "Read every .py file under src/, then tell me which module renders invoices."
ASKED = "Which module renders invoices?"


def _all_read(plan: FileSetPlan, state: ReadState, task: str) -> list[Message]:
    messages = [Message.user(task)]
    assert plan.active(messages)
    for path in FILES:
        state.record(path, 1, 4, 4)
    return messages


def test_a_question_mark_in_any_script_marks_a_question() -> None:
    assert is_question("Which port does config.toml set?  Read it.")
    assert is_question("config.toml 设置了哪个端口？")
    assert not is_question(TASK) and not is_question(QUESTION)  # its kind comes from the plan


def test_each_file_read_for_a_question_is_asked_once_what_it_says_with_only_it_in_view(project: Path) -> None:
    """long-handbook on the 0.5B: the port was in the first of seven chapters; by the last read
    it was compacted away, and the line the notes flush wrote about the chapter had lost it
    ("does not take backups of the shop database"), so the answer was another chapter's port.
    Asked right after each read, with that file alone in view, the answer's sentence is noted
    while it can be seen."""
    plan, _state, registry = _plan(project, stated=QUESTION_PLAN)
    findings = {
        "src/gamma.py": "nothing",
        "src/pkg/alpha.py": "nothing",
        "src/pkg/beta.py": "Render invoices as portable documents.",
    }
    script = [
        _use(f"n{n}", "note", {"path": path, "text": text}) for n, (path, text) in enumerate(findings.items())
    ]
    model = ScriptedModel({"responses": [*script, _text("src/pkg/beta.py")]})
    result = _agent(model, registry, AgentConfig(max_iterations=10), plan).run(QUESTION)
    assert result.stop == "end_turn" and result.final == "src/pkg/beta.py"
    requests = model.requests
    assert len(requests) == 4  # the guide reads each file itself: a finding each, then the answer
    for n, path in enumerate(findings):
        asked = requests[n]
        assert asked.tool_choice == "note" and not asked.final_allowed
        assert asked.messages[-1].text.startswith(FIND_NOW.format(path=path))
        assert ASKED not in asked.messages[-1].text  # no question to copy as the finding
        task, read, _page = asked.messages  # this file's read alone
        assert task.text == QUESTION and read.tool_uses[0].input == {"path": path}
    notes = (project / "NOTES.md").read_text(encoding="utf-8")
    assert notes == "src/pkg/beta.py: Render invoices as portable documents.\n"  # "nothing" is not written
    last = requests[-1]
    assert last.final_only
    asked = FROM_NOTES.format(notes=notes.strip()) + ALL_DONE.format(
        total=3, what="each one was read", ask=ASK_QUESTION.format(task=QUESTION)
    )
    # The task and the notes alone: no made-up finding of the window in view.
    assert [m.text for m in last.messages] == [f"{QUESTION}\n\n{asked}"]
    assert result.messages[-2].text.endswith(asked)  # the history has the prompt too


def test_the_finding_is_asked_about_the_file_just_read_and_its_path_is_fixed(project: Path) -> None:
    plan, registry, messages = _note_forced_after_read(project, QUESTION, "src/pkg/alpha.py")
    again = plan.next_step(messages)  # asked once: then the next file
    assert again is not None and again.tool == "read_file"
    assert _offered(registry, "note", messages, plan) == []


def test_a_finding_may_share_the_questions_words_but_not_copy_numbered_lines(project: Path) -> None:
    plan, state, _registry = _plan(project, stated=QUESTION_PLAN)
    _all_read(plan, state, "Read every .py file under src/, then tell me what parses the shop configuration.")
    assert plan.note_problem("Parse the configuration files of the shop.", "src/pkg/alpha.py") is None
    copied = '1\t"""Parse the configuration files.\n2\t\n3\tdef parse_config():'
    assert plan.note_problem(copied, "src/pkg/alpha.py") is not None
    receipt = "Noted in NOTES.md (119 characters in total)"  # the tool result just seen
    call = ToolUseBlock("n1", "note", {"path": "src/pkg/alpha.py", "text": receipt})
    refused = review_note(plan, call, results=[receipt])
    assert isinstance(refused, ToolResultBlock) and refused.refused and "repeats" in refused.content
    unseen = review_note(plan, call, results=["Noted in NOTES.md (7 characters)"])  # not a result seen
    assert not (isinstance(unseen, ToolResultBlock) and "repeats" in unseen.content)
    described = "Reads a text file from the workspace, with line numbers."  # the flush wrote it
    assert plan.note_problem(described, "src/pkg/alpha.py", known=[described])
    summary_plan, summary_state, _ = _plan(project)  # a notes task still refuses an echo
    _all_read(summary_plan, summary_state, TASK)
    assert summary_plan.note_problem("write a one-line summary of each into the notes", "src/gamma.py")


def test_a_question_over_files_is_asked_with_the_notes_the_run_wrote(project: Path) -> None:
    """The notes this run wrote come before the question; older notes and a notes task's own
    notes do not."""
    (project / "NOTES.md").write_text("older run: the shop uses EUR\n", encoding="utf-8")
    plan, state, _registry = _plan(project, stated=QUESTION_PLAN)
    messages = _all_read(plan, state, QUESTION)
    with (project / "NOTES.md").open("a", encoding="utf-8") as notes:
        notes.write("src/pkg/beta.py: renders invoices as portable documents\n")
    step = plan.next_step(messages)
    assert step is not None and step.final_only
    written = "src/pkg/beta.py: renders invoices as portable documents"
    assert step.prompt.startswith(FROM_NOTES.format(notes=written))
    assert step.prompt.endswith(ASK_QUESTION.format(task=QUESTION))
    assert "EUR" not in step.prompt


def test_the_notes_shown_with_the_question_are_bounded_to_whole_lines(project: Path) -> None:
    plan, state, _registry = _plan(project, stated=QUESTION_PLAN)
    messages = _all_read(plan, state, QUESTION)
    lines = [f"src/gamma.py: fact number {n} " + "x" * 40 for n in range(200)]
    (project / "NOTES.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    step = plan.next_step(messages)
    assert step is not None
    shown = step.prompt.split("\n\n")[0].splitlines()[1:]
    assert shown[-1] == "(more in NOTES.md)"
    assert shown[:-1] == lines[: len(shown) - 1] and len(shown) > 10
    assert len("\n".join(shown[:-1])) <= MAX_NOTES_SHOWN


@pytest.mark.parametrize("task", ["What version is this?", "这个库现在是什么版本？"])
def test_a_finding_copying_the_read_is_kept_to_the_lines_shown_with_the_ask(project: Path, task: str) -> None:
    """tb-version: asked for the finding of version.py, the 0.5B noted the whole read with its
    header and line numbers; refused as a copy, the version never reached the notes, and the
    answer was "1.0". The lines shown with the ask that the copy holds are the note; a copy
    holding none of them is refused as before."""
    gamma = project / "src" / "gamma.py"
    gamma.write_text("# coding: utf-8\n# generated\n__version__ = version = '0.9.0'\n", encoding="utf-8")
    stated = TaskPlan("answer", ("src/**/*.py",), "model", ("version",))
    plan, _state, registry = _plan(project, stated=stated)
    plan.start(task, stated)
    messages = _after_read(registry, task, "src/gamma.py")
    assert plan.next_step(messages) is not None and plan.finding == "src/gamma.py"
    copied = str(messages[-1].tool_results[0].content)
    assert "(lines 1-3 of 3)" in copied
    assert str(_note(plan, registry, {"path": "src/gamma.py", "text": copied}).content).startswith("Noted")
    written = (project / "NOTES.md").read_text(encoding="utf-8")
    assert "src/gamma.py: __version__ = version = '0.9.0'" in written and "(lines" not in written
    assert plan.quoted_finding(copied, "src/gamma.py") == "__version__ = version = '0.9.0'"
    assert plan.quoted_finding("(lines 1-2 of 3)\n 1 # coding\n 2 # generated", "src/gamma.py") is None
    assert plan.quoted_finding("The version is 0.9.0.", "src/gamma.py") is None  # no copy: as it is


def test_a_question_over_a_set_has_no_done_text_for_an_answer(project: Path) -> None:
    """With nothing noted, the last request of a question has no ``done`` to fall back on: an
    empty answer ended as "Done: all 3 files were read.", which read as a success. A notes
    task's set keeps its own (the notes are what it asked for)."""
    question, state, _registry = _plan(project, stated=QUESTION_PLAN)
    step = question.next_step(_all_read(question, state, QUESTION))
    assert step is not None and step.final_only and step.done is None
    noting, state, _registry = _plan(project)
    messages = _all_read(noting, state, TASK)
    (project / "NOTES.md").write_text("".join(f"{p}: does a thing\n" for p in FILES), encoding="utf-8")
    step = noting.next_step(messages)
    assert step is not None and step.done == "Done: each of the 3 files has its line in the notes (NOTES.md)."


def test_a_question_over_a_set_holding_the_project_file_is_shown_the_project_card(project: Path) -> None:
    """tb-cli: "Does it install a command-line program? Which Python function does it run?"
    was planned over pyproject.toml and the package, read as a set; the 0.5B answered "Yes
    ... `tabulate`" without the card the focus shows a question that read the metadata."""
    (project / "pyproject.toml").write_text(
        '[project]\nname = "shop"\nversion = "1.0"\n[project.scripts]\nshop = "shop.cli:main"\n',
        encoding="utf-8",
    )
    stated = TaskPlan("answer", ("pyproject.toml", "src/alpha.py"))
    plan, state, _registry = _plan(project, stated=stated)
    messages = [Message.user("它会装一个命令行程序吗？运行的是哪个函数？")]
    plan.start(messages[0].text, stated)
    plan.set = ["pyproject.toml", "src/alpha.py"]  # as when the two do not fit the window together
    assert plan.active(messages)
    for path in plan.set:
        state.record(path, 1, 4, 4)
    plan.found = set(plan.set)  # each file's finding was asked
    step = plan.next_step(messages)
    assert step is not None and step.final_only
    assert "It installs the command-line programs: shop (runs shop.cli:main)." in step.prompt
    assert step.prompt.rstrip().endswith("运行的是哪个函数？")


@pytest.mark.parametrize(
    ("task", "carded"),
    [
        ("Which release of shop is this?", True),  # the plan chose the files: the card is shown
        ("这个库是哪个版本？", True),
        ("Which of src/pkg/alpha.py and src/gamma.py retries calls?", False),  # the task names them
    ],
)
def test_a_question_over_files_the_plan_chose_is_shown_the_project_card(
    project: Path, task: str, carded: bool
) -> None:
    """A question whose set the plan chose (the task names none of its files) is answered with
    the card beside the notes, as ``TaskFocus`` answers one; a set the task names is not."""
    (project / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "3.1.4"\n', encoding="utf-8")
    stated = TaskPlan("answer", ("src/pkg/alpha.py", "src/gamma.py"))
    plan, state, _registry = _plan(project, stated=stated)
    messages = [Message.user(task)]
    plan.start(task, stated)
    plan.set = ["src/gamma.py", "src/pkg/alpha.py"]  # as when the two do not fit the window together
    assert plan.active(messages)
    for path in plan.set:
        state.record(path, 1, 4, 4)
    plan.found = set(plan.set)
    step = plan.next_step(messages)
    assert step is not None and step.final_only
    assert ("shop version 3.1.4" in step.prompt) is carded
    assert step.prompt.rstrip().endswith(task)


def test_a_note_giving_back_the_files_outline_is_written(project: Path) -> None:
    """The outline said with the ask is the file's own names: a note copying it is grounded in
    the file, not an echo of the ask (which is refused)."""
    plan, registry, messages = _note_forced_after_read(project, TASK, "src/pkg/beta.py")
    step = plan.next_step(messages)
    assert step is not None and step.prompt is not None
    outline = step.prompt.removesuffix(NOTE_NOW.format(path="src/pkg/beta.py")).strip()
    assert outline == "src/pkg/beta.py defines render_invoice."  # names, no counts (not the file's numbers)
    result = _note(plan, registry, {"path": "src/pkg/beta.py", "text": outline})
    assert result.ok, result.content
    echo = _note(plan, registry, {"path": "src/pkg/beta.py", "text": NOTE_NOW.format(path="src/pkg/beta.py")})
    assert not echo.ok


@pytest.mark.parametrize(
    "copied",
    [
        " Now call note with one line about what src/pkg/beta.py does, from the file you just read.",
        " That note was refused: it repeats the task. Call note again with one line about what x does.",
    ],
)
def test_a_note_that_copies_the_words_asking_for_it_keeps_only_what_it_said_before(
    project: Path, copied: str
) -> None:
    """in-zh-notes: the 0.5B wrote the outline and then the request itself ("Now call note ...",
    "That note was refused: ...") as its notes: 13 lines of harness words in the user's
    NOTES.md. Cut there; a note that is only those words says nothing and is refused."""
    plan, registry, _messages = _note_forced_after_read(project, TASK, "src/pkg/beta.py")
    said = "src/pkg/beta.py renders invoices as portable documents (render_invoice)."
    result = _note(plan, registry, {"path": "src/pkg/beta.py", "text": said + copied})
    assert result.ok, result.content
    line = (project / "NOTES.md").read_text(encoding="utf-8").strip()
    assert line == f"src/pkg/beta.py: {said}" and "call note" not in line.lower()
    only = _note(plan, registry, {"path": "src/pkg/beta.py", "text": copied.strip()})
    assert not only.ok


def test_a_notes_task_is_not_shown_its_own_notes_at_the_end(project: Path) -> None:
    plan, _state, _registry = _plan(project)
    messages = [Message.user(TASK)]
    assert plan.active(messages)
    (project / "NOTES.md").write_text("".join(f"{p}: does a thing\n" for p in FILES), encoding="utf-8")
    step = plan.next_step(messages)
    assert step is not None and step.final_only
    assert step.prompt.startswith("All 3 files")


def test_a_finding_not_said_with_its_files_words_and_numbers_is_not_written(project: Path) -> None:
    """The 0.5B noted "The backup service listens on port 8080." for chapters that hold no port
    (8080 in no file), and "... port 8443." for the one whose "The login service listens on port
    8443.": a finding's numbers must be in its file, and the question's words in each of its
    sentences must be in one sentence of the file. A note of the notes flush (not a finding) is
    checked for its numbers only: it says what a file is about in its own words."""
    gamma = project / "src" / "gamma.py"
    gamma.write_text(
        '"""Retry 3 times, then wait 2.5 s; port 7311. The login uses 8443."""\n', encoding="utf-8"
    )
    plan, state, registry = _plan(project, stated=QUESTION_PLAN)
    _all_read(plan, state, "Read every .py file under src/, then tell me which port the retry uses.")
    notes = project / "NOTES.md"

    def note(text: str) -> str:
        result = _note(plan, registry, {"path": "src/gamma.py", "text": text})
        assert result.ok
        return str(result.content)

    assert note("It listens on port 8080.") == NOT_IN_FILE.format(path="src/gamma.py", values="8080")
    assert plan.not_in_file("Retries 3 times, waits 2.5 s, port 7311 (src/gamma.py).", "src/gamma.py") == []
    assert plan.not_in_file("It waits 2 s on port 731.", "src/gamma.py") == ["2", "731"]
    assert plan.not_in_file("The retry service waits.", "src/gamma.py") == []  # a flush note's words are free
    plan.finding = "src/gamma.py"  # the finding the plan asked for
    # Only the question's words are claims: "service" and "waits" are the model's own.
    assert plan.not_in_file("The retry service waits.", "src/gamma.py") == []
    assert plan.not_in_file("The retry uses 8443.", "src/gamma.py") == ["'uses'"]  # another sentence's number
    assert plan.not_in_file("Retry 3 times. Then wait 2.5 s; port 7311.", "src/gamma.py") == []
    assert note("The login uses 8443 to retry.") == NOT_IN_FILE.format(path="src/gamma.py", values="'uses'")
    assert not notes.exists()
    assert note("Then wait 2.5 s; port 7311.").startswith("Noted")
    assert "src/gamma.py: Then wait 2.5 s; port 7311." in notes.read_text(encoding="utf-8")


def test_a_finding_in_the_models_own_words_is_written_when_the_file_holds_its_value(project: Path) -> None:
    """cachetools, "What version is this?": the 0.5B noted "The version of this package is
    8.0.2." for ``__version__ = "8.0.2"``; refused for "package" (a word of its own, not the
    question's), the answer was then made up from the other files' notes ("cachetools==2.12.0").
    The same finding with a number the file does not hold is still refused."""
    gamma = project / "src" / "gamma.py"
    gamma.write_text('"""Caching collections."""\n\n__version__ = "8.0.2"\n', encoding="utf-8")
    plan, state, registry = _plan(project, stated=QUESTION_PLAN)
    _all_read(plan, state, "What version is this?")
    plan.finding = "src/gamma.py"
    assert plan.not_in_file("The version of this package is 8.0.2.", "src/gamma.py") == []
    assert plan.not_in_file("The version of this package is 8.0.3.", "src/gamma.py") == ["8.0.3"]
    result = _note(plan, registry, {"path": "src/gamma.py", "text": "The version of this package is 8.0.2."})
    assert result.ok and str(result.content).startswith("Noted")


@pytest.mark.parametrize("task", ["What version is this?", "这个库现在是什么版本？"])
def test_the_finding_request_shows_the_lines_binding_what_the_question_asks(project: Path, task: str) -> None:
    """The 0.5B, asked for the finding of a 160-line __init__.py for "What version is this?",
    noted "The library now supports caching": the lines that bind the question's words (in
    Chinese, the plan's words in code) go with the ask."""
    gamma = project / "src" / "gamma.py"
    gamma.write_text('"""Caching collections."""\n\n__version__ = "8.0.2"\n', encoding="utf-8")
    stated = TaskPlan("answer", ("src/**/*.py",), "model", ("version",))
    plan, _state, registry = _plan(project, stated=stated)
    plan.start(task, plan.plan)
    step = plan.next_step(_after_read(registry, task, "src/gamma.py"))
    assert step is not None and step.prompt is not None and step.tool == "note"
    held = ' gamma.py holds: line 3 `__version__ = "8.0.2"`.'
    assert step.prompt == FIND_NOW.format(path="src/gamma.py") + held
    plan.start(task, TaskPlan("answer", ("src/**/*.py",), "model"))  # no words in code
    step = plan.next_step(_after_read(registry, task, "src/gamma.py"))
    assert step is not None and step.prompt is not None
    assert ("__version__" in step.prompt) == task.isascii()


def test_a_question_over_named_files_too_large_to_read_together_is_a_set(project: Path) -> None:
    """long-guide names six chapters and asks about the first: read together they do not fit in
    a small window, so each is read and its finding noted, as for a folder's files. Named files
    that fit together stay with the task focus (no count of files decides it)."""
    files = "src/gamma.py, src/pkg/alpha.py and src/pkg/beta.py"
    task = f"Read {files}, then tell me which one renders invoices."
    plan, _state, _registry = _plan(project, stated=TaskPlan("answer"))
    plan.room_chars, plan.size = 20, len  # each path's length stands for its file's size here
    assert plan.active([Message.user(task)])
    assert plan.set == ["src/gamma.py", "src/pkg/alpha.py", "src/pkg/beta.py"]
    assert plan.question == task
    roomy, _, _ = _plan(project, stated=TaskPlan("answer"))
    roomy.room_chars, roomy.size = 10_000, len
    assert not roomy.active([Message.user(task)])
    notes, _, _ = _plan(project, stated=TaskPlan("notes"))  # a notes task over named files: the focus
    notes.room_chars, notes.size = 20, len
    assert not notes.active([Message.user(f"Read {files} and summarize each into the notes")])


@pytest.mark.parametrize("nothing", ["nothing", "没有", "rien", "nichts davon"])
def test_a_finding_of_nothing_is_read_the_same_in_any_language(project: Path, nothing: str) -> None:
    """The finding prompt asks for "nothing" when the file has no answer; a model that says it
    in the task's language must get the same: no line written, the same answer to the call."""
    plan, _state, registry = _plan(project, stated=QUESTION_PLAN)
    findings = {
        "src/gamma.py": nothing,
        "src/pkg/alpha.py": nothing,
        "src/pkg/beta.py": "Render invoices as portable documents.",
    }
    script = [
        step for n, (path, text) in enumerate(findings.items()) for step in _read_and_note(n, path, text)
    ]
    model = ScriptedModel({"responses": [*script, _text("src/pkg/beta.py")]})
    agent = _agent(model, registry, AgentConfig(max_iterations=10), plan)
    assert agent.run(QUESTION).stop == "end_turn"
    notes = (project / "NOTES.md").read_text(encoding="utf-8")
    assert notes == "src/pkg/beta.py: Render invoices as portable documents.\n"
    noted = {r.tool_use_id: str(r.content) for m in agent.messages for r in m.tool_results}
    for n, path in enumerate(["src/gamma.py", "src/pkg/alpha.py"]):  # the same receipt as "nothing"
        assert noted[f"n{n}"] == NOTHING_NOTED.format(path=path)
