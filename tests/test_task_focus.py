"""The task's named files as a plan for small models (``--task-focus``): read_file offers them
alone until they are read, then a question is answered in a request that allows only the
answer. Measured with Qwen2.5-Coder-0.5B: it never ends a run by itself (p(final_answer)
0.03-0.08 with the answer in view) and, offered every file, read tests/secrets_corpus.py for
"Read README.md and tell me in one sentence what this project is"."""

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
from tinyharness.guide.focus import TaskFocus, answer_prompt, named_files
from tinyharness.messages import Message
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.files import ReadState, text_files
from tinyharness.tools.workspace import Workspace

TASK = "Read README.md and tell me in one sentence what this project is"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# Tiny Shop\n\nA shopping cart library.\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# docs\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "secrets_corpus.py").write_text("KEYS = []\n" * 300, encoding="utf-8")
    (tmp_path / "config.toml").write_text("port = 8042\n", encoding="utf-8")
    return tmp_path


def test_named_files_are_paths_or_unique_file_names_in_the_tasks_order() -> None:
    files = ["README.md", "docs/README.md", "config.toml", "src/shop/pricing.py", "src/shop/__init__.py"]
    assert named_files(TASK, files) == ["README.md"]  # the path, not docs/README.md
    assert named_files("Which port does config.toml set?", files) == ["config.toml"]
    assert named_files("In pricing.py and then config.toml", files) == ["src/shop/pricing.py", "config.toml"]
    assert named_files("What does src/shop/__init__.py set?", files) == ["src/shop/__init__.py"]
    assert named_files("Read config.tomlx or README.mdown", files) == []
    assert named_files("Which file defines the class Inventory?", files) == []


def _offered(registry: Any, messages: list[Message], guide: StepsGuide) -> list[str]:
    """read_file's path choices as the agent offers them: the guide's over the tool's own."""
    spec = next(s for s in registry.specs if s.name == "read_file")
    return list(guide.choices("read_file", messages).get("path") or spec.choices(messages)["path"])


def _started(guide: StepsGuide, task: str) -> StepsGuide:
    asyncio.run(guide.start(task, ScriptedModel({"responses": []}).complete))
    return guide


def test_read_file_offers_only_the_named_files_until_they_are_read(project: Path) -> None:
    state = ReadState()
    focus = TaskFocus(lambda: text_files(Workspace(project)), state.lines_read)
    registry = builtin_tools(project, read_state=state)
    guide = _started(StepsGuide(focus), TASK)
    head = [Message.user(TASK)]
    assert _offered(registry, head, guide) == ["README.md"]
    assert focus(head) is None  # nothing read yet
    result = asyncio.run(registry.execute("read_file", {"path": "README.md"}))
    assert result.ok
    assert "README.md" not in _offered(registry, head, guide) and "config.toml" in _offered(
        registry, head, guide
    )
    assert focus(head) == answer_prompt(TASK, ["README.md"])


def test_a_task_that_asks_for_notes_or_a_run_that_may_write_is_not_answered_early(project: Path) -> None:
    state = ReadState()
    state.record("README.md", 1, 3, 3)
    focus = TaskFocus(lambda: text_files(Workspace(project)), state.lines_read)
    notes_task = "Read README.md and write a one-line summary into the notes"
    focus.start(notes_task, TaskPlan("notes"))  # the plan's kind says notes, not the task's words
    assert focus([Message.user(notes_task)]) is None
    focus.start(TASK, TaskPlan())
    focus.answer = False
    assert focus([Message.user(TASK)]) is None


def _script(path: Path, responses: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return path


def _read(call_id: str, path: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": path}}
    return {"stop_reason": "tool_use", "content": [use], "usage": {"input_tokens": 900, "output_tokens": 20}}


ANSWER = {
    "stop_reason": "end_turn",
    "content": [{"type": "text", "text": "Tiny Shop is a shopping cart library."}],
    "usage": {"input_tokens": 950, "output_tokens": 12},
}


def test_after_the_named_file_is_read_the_next_request_allows_only_the_answer(project: Path) -> None:
    state = ReadState()
    focus = TaskFocus(lambda: text_files(Workspace(project)), state.lines_read)
    model = ScriptedModel({"responses": [ANSWER]})
    sink = ListSink()
    agent = Agent(
        model,
        builtin_tools(project, read_state=state),
        AgentConfig(max_iterations=5),
        events=EventBus([sink]),
        guide=StepsGuide(focus),
    )
    result = agent.run(TASK)
    assert result.stop == "end_turn" and result.final == "Tiny Shop is a shopping cart library."
    (answer,) = model.requests  # the guide read README.md itself: no request for the read
    assert answer.final_only and result.model_calls == 1
    read = [e for e in sink.events if e["type"] == "tool_call"]
    assert [(e["call_id"], e["args"]) for e in read] == [("guide_1", {"path": "README.md"})]
    assert answer.messages[-1].text.endswith(answer_prompt(TASK, ["README.md"]))
    assert [e["type"] for e in sink.events if e["type"] == "answer_now"] == ["answer_now"]


def test_the_cli_turns_the_focus_on_for_local_models_only(project: Path) -> None:
    """Through the CLI with a scripted model: off unless --task-focus (a capable model decides
    itself), on with it; the run ends by the model's answer, exit 0."""
    base = [sys.executable, "-m", "tinyharness", "run", TASK, "--workspace", str(project), "--no-log"]
    script = _script(project.parent / "focus.json", [_read("c1", "README.md"), ANSWER])
    on = subprocess.run(
        [*base, "--model", f"scripted:{script}", "--task-focus", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip() == "Tiny Shop is a shopping cart library."
    events = project.parent / "events.jsonl"
    off = subprocess.run(
        [*base, "--model", f"scripted:{script}", "--quiet", "--events", str(events)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert off.returncode == 0, off.stderr
    kinds = [json.loads(line)["type"] for line in events.read_text(encoding="utf-8").splitlines()]
    assert "answer_now" not in kinds
