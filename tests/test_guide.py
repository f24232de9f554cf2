"""The Guide seam (``tinyharness.guide``): a plan chosen under a grammar, not read from the
task's words; a set-of-files plan driven through ``Agent(guide=...)`` without the CLI; notes the
task did not ask for kept out of the user's NOTES.md; tool results that carry their metadata;
profiles that give run, chat and sub-agents the same guide."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tinyharness.agent import Agent, AgentConfig
from tinyharness.cli import _chat_args, _guide, _profile, _subagents, build_parser
from tinyharness.errors import ConfigError
from tinyharness.events import EventBus, ListSink
from tinyharness.guide import PlanGuide, PlanOptions, Ranked, TaskPlan
from tinyharness.guide import plan as plan_module
from tinyharness.guide.plan import KIND_MEANINGS, TERMS_KEY
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock, block_from_dict, block_to_dict
from tinyharness.models.anthropic_messages import block_to_wire
from tinyharness.models.scripted import ScriptedModel
from tinyharness.profiles import DEFAULT, LOCAL, defined_profiles, profile_for
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.files import MIN_READ_LINES, ReadState
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.permissions import Permissions

FILES = {
    "src/shop/cart.py": '"""The cart."""\nclass Cart:\n    pass\n',
    "src/shop/pricing.py": '"""Prices."""\nTAX_RATE = 0.2\n',
    "docs/guide.md": "# Guide\nThe shop sells fruit.\n",
    "README.md": "# Shop\nA small shop.\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for relative, text in FILES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    return tmp_path


def _answer(text: str, purpose: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 50, "output_tokens": 9},
    }
    if purpose is not None:
        response["purpose"] = purpose
    return response


def _use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return {"stop_reason": "tool_use", "content": [use], "usage": {"input_tokens": 50, "output_tokens": 9}}


def _guide_for(root: Path, **options: Any) -> tuple[PlanGuide, ReadState]:
    state = ReadState()
    notes = NotesFile(root / "NOTES.md", root=root)
    run_notes = NotesFile(root / ".tinyharness" / "notes" / "run.md", root=root)
    classify = options.pop("classify", True)
    guide = PlanGuide(
        root,
        read_state=state,
        notes=notes,
        run_notes=run_notes,
        classify=classify,
        options=PlanOptions(**options),
    )
    return guide, state


# --- the plan under a grammar -------------------------------------------------------------------

SAME_TASK = {
    "zh": "逐个读 src/ 下所有 .py 文件，总结每个的职责，写进 notes",
    "fr": "Lis un par un tous les fichiers .py sous src/ et note en une ligne le rôle de chacun",
    "en": "Go through the Python sources in src/ one at a time; jot down what each is for",
}


@pytest.mark.parametrize("language", sorted(SAME_TASK))
def test_the_same_task_in_any_language_gets_the_same_plan(project: Path, language: str) -> None:
    """The plan is the model's answer under a schema whose enums do not depend on the wording:
    the same classification gives the same plan and the same set of files in Chinese, French
    and paraphrased English (no regex over the task's words decides it)."""
    guide, _state = _guide_for(project)
    plan = json.dumps({"kind": "notes", "targets": ["src/**/*.py"]})
    model = ScriptedModel({"responses": [_answer(plan, "plan")]})
    asyncio.run(guide.start(SAME_TASK[language], model.complete))
    # Every wording asks the model the same request (no word of the task decides it).
    assert [r.purpose for r in model.requests] == ["plan"]
    for request in model.requests:
        assert request.purpose == "plan"
        schema = request.response_schema
        assert schema is not None and schema["properties"]["kind"]["enum"] == list(KIND_MEANINGS.values())
        offered = set(schema["properties"]["targets"]["items"]["enum"])
        assert {"src/", "src/shop/", "src/**/*.py", "src/shop/pricing.py"} <= offered
    assert guide.plan.kind == "notes" and guide.plan.targets == ("src/**/*.py",)
    assert guide.file_set.set == ["src/shop/cart.py", "src/shop/pricing.py"]
    assert guide.file_set.notes and not guide.file_set.question


def test_the_candidates_do_not_depend_on_the_wording(project: Path) -> None:
    offered = []
    french = "Parcours un par un les fichiers .py sous src/ et résume le rôle de chacun"  # no tool name
    for task in (SAME_TASK["zh"], SAME_TASK["en"], french):
        guide, _ = _guide_for(project)
        model = ScriptedModel({"responses": [_answer('{"kind": "explore", "targets": []}')]})
        asyncio.run(guide.start(task, model.complete))
        schema = model.requests[0].response_schema
        assert schema is not None
        offered.append(sorted(schema["properties"]["targets"]["items"]["enum"]))
    assert offered[0] == offered[1] == offered[2]


def test_a_reply_outside_the_enums_gives_no_plan_and_flags_state_it_without_a_request(project: Path) -> None:
    guide, _ = _guide_for(project)
    model = ScriptedModel({"responses": [_answer('{"kind": "dance", "targets": ["/etc/passwd"]}')]})
    asyncio.run(guide.start("anything", model.complete))
    assert guide.plan == TaskPlan(None, (), "model") and guide.file_set.set == []
    flagged, _ = _guide_for(project, each="src/**/*.py")
    silent = ScriptedModel({"responses": []})
    asyncio.run(flagged.start("任何任务", silent.complete))
    assert silent.requests == [] and flagged.plan.kind == "notes"
    assert flagged.file_set.set == ["src/shop/cart.py", "src/shop/pricing.py"]


# --- a set-of-files plan through Agent(guide=...), no CLI ---------------------------------------


def test_a_set_of_files_plan_runs_through_the_agent_guide(project: Path) -> None:
    guide, state = _guide_for(project)
    registry = builtin_tools(
        project,
        notes=NotesFile(project / "NOTES.md", root=project),
        permissions=Permissions(allow_write=True),
        read_state=state,
    )
    plan = json.dumps({"kind": "notes", "targets": ["src/**/*.py"]})
    script = [
        _answer(plan),  # no purposes in this script: every request takes the next response
        _use("n1", "note", {"path": "src/shop/cart.py", "text": "defines the Cart class"}),
        _use("n2", "note", {"path": "src/shop/pricing.py", "text": "sets the tax rate"}),
        _answer("Both files are noted."),
    ]
    model = ScriptedModel({"responses": script})
    result = Agent(model, registry, AgentConfig(max_iterations=8), guide=guide).run(SAME_TASK["zh"])
    assert result.ok, result.detail
    notes = (project / "NOTES.md").read_text(encoding="utf-8")
    assert "src/shop/cart.py: defines the Cart class" in notes
    assert "src/shop/pricing.py: sets the tax rate" in notes
    # the guide read each file of the set itself (no request), and each note request forced the note tool
    assert [r.tool_choice for r in model.requests[1:3]] == ["note", "note"] and len(model.requests) == 4
    reads = [c.input for m in result.messages for c in m.tool_uses if c.name == "read_file"]
    assert reads == [{"path": "src/shop/cart.py"}, {"path": "src/shop/pricing.py"}]
    state_saved = guide.to_state()
    assert state_saved["set"]["covered"] == ["src/shop/cart.py", "src/shop/pricing.py"]


def test_the_models_words_in_code_reach_the_plan_its_state_and_the_fallback_ranking(project: Path) -> None:
    """A question in Chinese that names nothing: the plan reply's ``english_words_in_code`` are
    kept with the plan (lower case, only identifier-like words), saved with the run, given in
    the ``plan`` event, and the ranking a question falls back on (the model chose no file) is
    asked with them: the version file is read, not the file the Chinese words matched."""
    ranked: list[str] = []

    def rank(root: Path, task: str, k: int) -> list[Ranked]:
        ranked.append(task)
        best = "src/shop/pricing.py" if "version" in task.split() else "README.md"
        return [Ranked(best, 2.0), Ranked("src/shop/cart.py", 1.0)]

    sink = ListSink()
    guide, _ = _guide_for(project)
    guide.rank = rank
    guide.events = EventBus([sink])
    reply = {"kind": "answer in words", "targets": [], TERMS_KEY: ["Version", "library", "no space", "x"]}
    model = ScriptedModel({"responses": [_answer(json.dumps(reply), "plan")]})
    asyncio.run(guide.start("这个库现在是什么版本？", model.complete))
    assert guide.plan.terms == ("version", "library")
    assert ranked == ["这个库现在是什么版本？", "这个库现在是什么版本？\nversion library"]
    assert guide.plan.targets[0] == "src/shop/pricing.py"
    assert [e["terms"] for e in sink.of_type("plan")] == [["version", "library"]]
    again, _ = _guide_for(project)
    again.load_state(json.loads(json.dumps(guide.to_state())))
    assert again.plan == guide.plan
    no_words, _ = _guide_for(project)  # a reply without them (a script, another model): none
    model = ScriptedModel({"responses": [_answer('{"kind": "answer in words", "targets": []}', "plan")]})
    asyncio.run(no_words.start("这个库现在是什么版本？", model.complete))
    assert no_words.plan.terms == ()


def test_the_longest_reply_each_plan_schema_admits_fits_its_token_budget() -> None:
    """A reply cut by max_tokens is no JSON and loses its kind: the words in code after the kind
    must fit the request's budget even at one token per two characters."""
    word = "W" * 24
    assert plan_module._TERM.match(word) and not plan_module._TERM.match(word + "W")
    longest_kind = max(KIND_MEANINGS.values(), key=len)
    words = [word] * plan_module.MAX_TERMS
    kind_reply = json.dumps({"kind": longest_kind, TERMS_KEY: words})
    assert len(kind_reply) // 2 <= plan_module.KIND_TOKENS
    path = "src/" + "p" * 60 + ".py"
    plan_reply = json.dumps(
        {"kind": longest_kind, "targets": [path] * plan_module.MAX_TARGETS, TERMS_KEY: words}
    )
    assert len(plan_reply) // 2 <= plan_module.PLAN_TOKENS


def test_the_guide_state_survives_a_resume(project: Path) -> None:
    guide, _ = _guide_for(project, each="src/**/*.py")
    asyncio.run(guide.start("task", ScriptedModel({"responses": []}).complete))
    saved = json.loads(json.dumps(guide.to_state()))
    again, _ = _guide_for(project)
    again.load_state(saved)
    assert again.plan == guide.plan and again.file_set.set == guide.file_set.set


# --- no wrong notes in the user's folder --------------------------------------------------------


def test_a_note_the_task_did_not_ask_for_goes_to_the_runs_own_notes(project: Path) -> None:
    guide, state = _guide_for(project, kind="answer")
    asyncio.run(guide.start("What version is this?", ScriptedModel({"responses": []}).complete))
    state.record("README.md", 1, 2, 2)
    wrong = ToolUseBlock(
        "c1", "note", {"path": "README.md", "text": "a configuration file for a Django application"}
    )
    header = ToolUseBlock("c2", "note", {"path": "LICENSE", "text": "LICENSE (lines 1-27 of 27)"})
    for call in (wrong, header):
        answered = guide.review(call)
        assert isinstance(answered, ToolResultBlock) and not answered.is_error
    assert not (project / "NOTES.md").exists()
    kept = (project / ".tinyharness" / "notes" / "run.md").read_text(encoding="utf-8")
    assert "Django" in kept and "LICENSE" in kept
    copied = ToolUseBlock("c3", "note", {"path": "README.md", "text": "small shop"})
    answered = guide.review(copied)  # true to its file, but the task asked for no notes
    assert isinstance(answered, ToolResultBlock) and not (project / "NOTES.md").exists()


def test_a_notes_task_writes_to_the_users_notes(project: Path) -> None:
    guide, _ = _guide_for(project, kind="notes")
    asyncio.run(guide.start("写笔记", ScriptedModel({"responses": []}).complete))
    call = ToolUseBlock("c1", "note", {"text": "the shop sells fruit"})
    assert guide.review(call) is call


def test_a_note_for_the_users_notes_that_copies_a_read_or_a_result_is_refused(project: Path) -> None:
    """tb-notes-three: asked for a one-line note on each of three named files, the 0.5B noted
    each read whole, header and line numbers, and the three reads landed in NOTES.md. A note
    bound for the user's notes that copies a read is refused (in any language: the rule reads
    the tool's own format, not the task); a note in its own words is written."""
    guide, _ = _guide_for(project, kind="notes")
    asyncio.run(guide.start("给 README.md 写一行笔记", ScriptedModel({"responses": []}).complete))
    registry = builtin_tools(project)
    read = asyncio.run(registry.run_call(ToolUseBlock("r1", "read_file", {"path": "README.md"}), EventBus()))
    copied = ToolUseBlock("c1", "note", {"path": "README.md", "text": str(read.content)})
    answered = guide.review(copied)
    assert isinstance(answered, ToolResultBlock) and answered.refused and "copies" in answered.content
    for echoed in (
        str(answered.content),
        "Noted in NOTES.md (119 characters in total)",
        "已记入 NOTES.md（共 119 个字符）",  # a tool's result in any words: compared with the results seen
    ):  # what the 0.5B noted next, for the same file and the next two
        seen = Message("user", (ToolResultBlock("c0", echoed),))
        guide.next_turn([Message.user("task"), seen])
        answered_echo = guide.review(
            ToolUseBlock("c3", "note", {"path": "README.md", "text": f" {echoed}\n"})
        )
        assert isinstance(answered_echo, ToolResultBlock) and answered_echo.refused
        assert "repeats" in answered_echo.content
    own = ToolUseBlock("c2", "note", {"path": "README.md", "text": "the shop's readme"})
    assert guide.review(own) is own
    logged = ToolUseBlock("c4", "note", {"path": "README.md", "text": "Errors are logged here"})
    assert guide.review(logged) is logged


# --- tool results carry their metadata ---------------------------------------------------------


def test_a_partial_read_says_its_next_line_and_the_metadata_survives_a_save(project: Path) -> None:
    (project / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 200)), encoding="utf-8")
    registry = builtin_tools(project)
    call = ToolUseBlock("c1", "read_file", {"path": "long.txt", "start_line": 1, "end_line": 5})
    from tinyharness.events import EventBus

    block = asyncio.run(registry.run_call(call, EventBus()))
    assert block.next_line == MIN_READ_LINES + 1 and not block.refused  # a short range reads a page
    saved = block_to_dict(block)
    assert block_from_dict(json.loads(json.dumps(saved))) == block
    assert "meta" not in block_to_wire(block)  # never sent to the API
    whole = asyncio.run(registry.run_call(ToolUseBlock("c2", "read_file", {"path": "README.md"}), EventBus()))
    assert whole.next_line is None and "meta" not in block_to_dict(whole)


def test_a_refused_call_is_marked_and_read_by_the_model(project: Path) -> None:
    guide, _ = _guide_for(project, each="src/**/*.py")
    asyncio.run(guide.start("task", ScriptedModel({"responses": []}).complete))
    refused = guide.review(
        ToolUseBlock("c1", "note", {"path": "src/shop/cart.py", "text": "the cart module"})
    )
    assert isinstance(refused, ToolResultBlock) and refused.refused and refused.is_error
    assert "has not been read" in refused.content
    assert block_from_dict(block_to_dict(refused)).refused


# --- profiles: one place, the same guide everywhere ---------------------------------------------


def test_profiles_are_chosen_by_model_or_by_name_and_defined_in_config() -> None:
    assert profile_for("local") is LOCAL and profile_for("local:qwen2.5-coder-1.5b") is LOCAL
    assert profile_for("openai:local-model") is DEFAULT
    assert profile_for("local", "default") is DEFAULT
    defined = defined_profiles({"mine": {"base": "local", "memory": True}})
    assert defined["mine"].guide == "plan" and defined["mine"].memory
    with pytest.raises(ConfigError):
        profile_for("local", "nope")
    with pytest.raises(ConfigError):
        defined_profiles({"bad": {"colour": "red"}})


def test_run_chat_and_subagents_on_a_local_model_get_the_same_guide(project: Path) -> None:
    from tinyharness.events import EventBus
    from tinyharness.tools.base import ToolRegistry

    run_args = build_parser().parse_args(["run", "task", "--model", "local", "--workspace", str(project)])
    chat_args = _chat_args(["--model", "local", "--workspace", str(project)])
    assert _profile(_chat_args(["--model", "local", "--profile", "default"])) is DEFAULT
    for args in (run_args, chat_args):
        assert _profile(args) is LOCAL
        guide = _guide(args, project, EventBus(), ReadState(), builtin_tools(project), "s")
        assert isinstance(guide, PlanGuide) and guide.classify
    runner = _subagents(run_args, project)
    assert runner.host.guide is not None
    child = runner.host.guide(ToolRegistry(), project / "n.md", EventBus(), "child")
    assert isinstance(child, PlanGuide) and child.classify
    capable = build_parser().parse_args(["run", "task", "--model", "openai:gpt-4o-mini"])
    assert _guide(capable, project, EventBus(), ReadState(), builtin_tools(project), "s") is None


# --- the library's front door ------------------------------------------------------------------


def test_agent_from_a_model_string_builds_what_run_builds(project: Path, tmp_path_factory: Any) -> None:
    """``tinyharness.Agent(MODEL, workspace=...)``: the run's profile, tools and guide; the same
    scripted task as ``tinyharness run --profile local`` (the plan request first)."""
    import tinyharness

    script = tmp_path_factory.mktemp("script") / "s.json"
    plan = json.dumps({"kind": "answer", "targets": ["src/shop/pricing.py"]})
    responses = [
        _answer(plan),
        _answer("0.2"),
    ]
    script.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    with tinyharness.Agent(f"scripted:{script}", workspace=project, profile="local") as agent:
        assert isinstance(agent.guide, PlanGuide)
        assert "todo" not in agent.tools.names and "task" not in agent.tools.names  # the local profile's
        result = agent.run("Quel est le taux de TVA ?")
    assert result.ok and result.final == "0.2"
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert [r.purpose for r in model.requests] == ["plan", "agent"]  # the read is the guide's own
    assert model.requests[1].final_only and "src/shop/pricing.py" in str(model.requests[1].messages[-1])


def test_agent_from_a_model_object_is_the_loop_as_before() -> None:
    import tinyharness

    model = ScriptedModel({"responses": [_answer("hi")]})
    agent = tinyharness.Agent(model, [], tinyharness.AgentConfig(max_iterations=2))
    assert agent.run("hello").final == "hi" and not hasattr(agent.guide, "plan")


@pytest.mark.parametrize(
    "task",
    [
        "Read README.md and tell me in one sentence what this project is",
        "读一下 README.md，用一句话告诉我这个项目是做什么的",
        "Quelle est la valeur de TAX_RATE ?",
    ],
)
def test_a_task_naming_a_file_or_a_symbol_asks_only_its_kind(project: Path, task: str) -> None:
    """Exact evidence (a file or a defined symbol, in any language) gives the targets; only
    the kind is asked, under a grammar with nothing else in it."""
    guide, _ = _guide_for(project)
    asked: list[Any] = []

    async def ask(request: Any) -> Any:
        asked.append(request)
        return await ScriptedModel({"responses": [_answer('{"kind": "answer in words"}')]}).complete(request)

    asyncio.run(guide.start(task, ask))
    assert [list(r.response_schema["properties"]) for r in asked] == [["kind", TERMS_KEY]]
    assert guide.plan.kind == "answer" and guide.focus.named([]) != []
    assert guide.plan.targets == tuple(guide.focus.named([]))


def test_a_task_naming_neither_asks_the_plan(project: Path) -> None:
    guide, _ = _guide_for(project)
    asked: list[Any] = []

    async def ask(request: Any) -> Any:
        asked.append(request)
        return await ScriptedModel({"responses": [_answer('{"kind": "answer", "targets": []}')]}).complete(
            request
        )

    asyncio.run(guide.start("这个项目是什么版本？", ask))
    assert len(asked) == 1 and asked[0].purpose == "plan"


# --- calls the guide makes itself ----------------------------------------------------------------


class _Reads:
    """A guide that reads ``paths`` itself, one a turn, then leaves the run to the model."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = list(paths)

    async def start(self, task: str, ask: Any) -> None:
        return None

    def next_turn(self, messages: Any) -> Any:
        from tinyharness.guide.base import Turn

        if not self.paths:
            return None
        path = self.paths.pop(0)
        return Turn(call=ToolUseBlock(f"guide_{path}", "read_file", {"path": path}))

    def choices(self, tool: str, messages: Any) -> dict[str, Any]:
        return {}

    def review(self, call: ToolUseBlock) -> ToolUseBlock:
        return call

    def unfinished(self, messages: Any) -> None:
        return None

    def to_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None


def test_a_call_the_guide_makes_runs_with_no_request_and_no_iteration(project: Path) -> None:
    """``Turn.call``: the tool runs as if the model had called it (events, history, read state),
    no model request is made for it and no iteration is spent: two reads and an answer fit in
    a limit of one iteration."""
    sink = ListSink()
    state = ReadState()
    model = ScriptedModel({"responses": [_answer("0.2")]})
    agent = Agent(
        model,
        builtin_tools(project, read_state=state),
        AgentConfig(max_iterations=1),
        events=EventBus([sink]),
        guide=_Reads(["src/shop/pricing.py", "src/shop/cart.py"]),
    )
    result = agent.run("What is TAX_RATE?")
    assert result.ok and result.final == "0.2" and result.model_calls == 1
    calls = [(e["call_id"], e["args"]["path"]) for e in sink.events if e["type"] == "tool_call"]
    assert calls == [
        ("guide_src/shop/pricing.py", "src/shop/pricing.py"),
        ("guide_src/shop/cart.py", "src/shop/cart.py"),
    ]
    assert state.lines_read("src/shop/pricing.py") > 0  # read as read_file reads
    (request,) = model.requests
    assert "TAX_RATE = 0.2" in str(request.messages)  # the results are in the window the model sees


def test_the_guide_reads_a_file_once_and_a_read_that_failed_is_the_models_choice_again(project: Path) -> None:
    """A plan's file that cannot be read (binary) is not read by the guide again and again: the
    next turn is the model's, with read_file forced as before."""
    (project / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    guide, state = _guide_for(project)
    registry = builtin_tools(project, notes=NotesFile(project / "NOTES.md", root=project), read_state=state)
    script = [_answer(json.dumps({"kind": "answer in words"})), _answer("a picture")]
    model = ScriptedModel({"responses": script})
    agent = Agent(model, registry, AgentConfig(max_iterations=4), guide=guide)
    result = agent.run("What is in logo.png?")
    assert result.final == "a picture"
    reads = [c for m in result.messages for c in m.tool_uses if c.name == "read_file"]
    assert [c.id for c in reads] == ["guide_1"]  # once
    assert guide.to_state()["own_calls"] == 1
    again = PlanGuide(project, read_state=ReadState(), notes=NotesFile(project / "NOTES.md", root=project))
    again.load_state(json.loads(json.dumps(guide.to_state())))
    assert again.own_calls == 1  # a resumed run goes on with new ids


def test_a_guide_that_never_stops_calling_stops_the_run_stuck(project: Path) -> None:
    """The guide's own calls spend no iteration, so the limit cannot stop a guide that calls
    forever: a run of them with no model request between is cut at MAX_GUIDE_CALLS_IN_A_ROW."""
    from tinyharness.agent import MAX_GUIDE_CALLS_IN_A_ROW

    model = ScriptedModel({"responses": []})
    endless = _Reads([f"missing_{n}.py" for n in range(MAX_GUIDE_CALLS_IN_A_ROW + 5)])  # never the same
    agent = Agent(
        model, builtin_tools(project, read_state=ReadState()), AgentConfig(max_iterations=3), guide=endless
    )
    result = agent.run("What is TAX_RATE?")
    assert result.stop == "stuck" and f"{MAX_GUIDE_CALLS_IN_A_ROW} calls in a row" in result.detail
    assert not [r for r in model.requests if r.purpose == "agent" and not r.final_only]
