"""The answer step asks for the answer without words to copy. Measured with
Qwen2.5-Coder-0.5B (``python -m bench.answer_probe``) on the README's first command ("Read
README.md and tell me in one sentence what this project is", run in this project): after the
prompt "[Read: README.md] The task: <the task>" the answer began with the task's first words,
"Read README.md is a Python library and a command-line agent."; two other wordings that held
the task did the same. Asked "[Read: README.md] Answer the task now, from what you read." it
answered "This project is a Python library and a command-line agent that keeps an LLM agent
stable on tasks longer than one context window ...". Questions ("Which port does config.toml
set for the server?") were answered best with the question repeated last ("8042"; without it,
the file's numbered lines). So:

- the focus's answer prompt and the file-set plan's last prompt name no tool ("final_answer")
  and say no "final answer"; a request's prompt has none of the task's words, a question's
  ends with the question;
- ``strip_echo`` also removes a harness text's opening copied at the start of an answer (two
  or more of its first words, when more follows), and still returns an answer with nothing
  copied exactly as it came.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from focus_support import task_focus, write_files
from tinyharness.agent import Agent, AgentConfig
from tinyharness.guide import StepsGuide, TaskPlan
from tinyharness.guide.coverage import FileSetPlan
from tinyharness.guide.focus import answer_prompt
from tinyharness.history import strip_echo
from tinyharness.messages import Message
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools, notes_since
from tinyharness.tools.files import ReadState, head_text, text_files
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.workspace import Workspace

README_TASK = "Read README.md and tell me in one sentence what this project is"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {
        "README.md": "# Tiny Shop\n\nA small shopping cart library for Python.\n",
        "src/shop/inventory.py": '"""Stock keeping."""\n\n\nclass Inventory:\n    pass\n',
        "src/shop/cart.py": '"""The shopping cart."""\n\n\nclass Cart:\n    pass\n',
    }
    return write_files(tmp_path, files)


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
        "usage": {"input_tokens": 900, "output_tokens": 20},
    }


def _answer(text: str) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 900, "output_tokens": 20},
    }


def _words(text: str) -> list[str]:
    return re.findall(r"[\w./]+", text.lower())  # a path is one word


def _shares_a_run(prompt: str, task: str, run: int = 3) -> bool:
    """Whether ``prompt`` has ``run`` consecutive words of ``task``."""
    said = " ".join(_words(prompt))
    words = _words(task)
    return any(" ".join(words[i : i + run]) in said for i in range(len(words) - run + 1))


@pytest.mark.parametrize(
    ("task", "read"),
    [
        (README_TASK, "README.md"),
        ("Summarize src/shop/cart.py in one line", "src/shop/cart.py"),
        ("Tell me what the class `Inventory` keeps", "src/shop/inventory.py"),
    ],
)
def test_a_requests_answer_prompt_has_no_task_words_and_no_tool_to_copy(
    project: Path, task: str, read: str
) -> None:
    state = ReadState()
    state.record(read, 1, 4, 4)
    prompt = task_focus(project, state)([Message.user(task)])
    assert prompt is not None and prompt.startswith(f"[Read: {read}]")
    assert not _shares_a_run(prompt, task)
    assert "final_answer" not in prompt and "final answer" not in prompt.lower()


@pytest.mark.parametrize(
    ("task", "read"),
    [
        ("Which file defines the class Inventory?", "src/shop/inventory.py"),
        ("What does the class Cart in src/shop/cart.py hold?", "src/shop/cart.py"),
        # A question followed by an order is a question: asked without its words, the 0.5B
        # answered slugify's question "Hello World" where it had answered "hello-world".
        (
            "What does the class Cart in src/shop/cart.py hold? Read the code.",
            "src/shop/cart.py",
        ),
    ],
)
def test_a_questions_answer_prompt_ends_with_the_question(project: Path, task: str, read: str) -> None:
    """Measured: repeated last, the question got the value itself ("8042"); without it the
    0.5B answered with the file's numbered lines."""
    state = ReadState()
    state.record(read, 1, 4, 4)
    prompt = task_focus(project, state)([Message.user(task)])
    assert prompt is not None and prompt.startswith(f"[Read: {read}]") and prompt.endswith(task)
    assert "final_answer" not in prompt and "final answer" not in prompt.lower()


def test_the_file_set_plans_last_prompt_names_no_tool_and_no_final_answer(project: Path) -> None:
    """Scripted: a task over every .py file; once both are read (and what each says about the
    question noted) the answer is asked for with the task and the notes alone in view."""
    task = "Read every .py file under src/shop and tell me which one keeps the stock"
    space = Workspace(project)
    state = ReadState()
    notes = NotesFile(project / "NOTES.md", root=project)
    plan = FileSetPlan(
        lambda: text_files(space), notes_since(notes), state.lines_read, lambda p: head_text(space, p, 9_000)
    )
    tools = builtin_tools(project, read_state=state, notes=notes)
    # the plan request's answer (or --each 'src/shop/**/*.py' --kind answer): a question over a set
    guide = StepsGuide(file_set=plan, plan=TaskPlan("answer", ("src/shop/**/*.py",)))
    model = ScriptedModel(
        {
            "responses": [
                _call("c1", "read_file", path="src/shop/cart.py"),
                _call("n1", "note", path="src/shop/cart.py", text="nothing"),
                _call("c2", "read_file", path="src/shop/inventory.py"),
                _call("n2", "note", path="src/shop/inventory.py", text="Stock keeping. class Inventory:"),
                _answer("src/shop/inventory.py keeps the stock."),
            ]
        }
    )
    result = Agent(model, tools, AgentConfig(max_iterations=6), guide=guide).run(task)
    assert result.final == "src/shop/inventory.py keeps the stock."
    last = model.requests[-1]
    assert last.final_only
    shown = last.messages[-1].text  # the task, then the prompt: the notes and the question
    assert shown.startswith(f"{task}\n\n")
    prompt = shown.removeprefix(f"{task}\n\n")
    assert prompt.startswith("Your notes from these files:\nsrc/shop/inventory.py: Stock keeping.")
    assert "All 2 files of the task are covered" in prompt
    assert "final_answer" not in prompt and "final answer" not in prompt.lower()
    assert prompt.endswith(f"The task: {task}")  # the task as it came, in whatever language


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        # measured: the 0.5B's answer to the README command after "[Read: README.md] The task: ..."
        (
            "Read README.md is a Python library and a command-line agent.",
            "is a Python library and a command-line agent.",
        ),
        ("[Read: README.md] Tiny Shop is a cart library.", "Tiny Shop is a cart library."),
        ("Tiny Shop is a cart library.", "Tiny Shop is a cart library."),  # nothing copied
        ("Read the docs: it is a cart library.", "Read the docs: it is a cart library."),  # one word only
        ("[Read: README.md]", "[Read: README.md]"),  # a bare label stays (it says what was done)
    ],
)
def test_strip_echo_removes_a_copied_prompt_opening(answer: str, kept: str) -> None:
    prompt = answer_prompt(README_TASK, ["README.md"])
    assert strip_echo(answer, [prompt]) == kept


def test_the_agent_answers_without_the_prompts_copied_opening(project: Path) -> None:
    """Scripted: the model opens its answer with the answer prompt's first words."""
    state = ReadState()
    focus = task_focus(project, state)
    model = ScriptedModel(
        {
            "responses": [
                _call("c1", "read_file", path="README.md"),
                _answer("[Read: README.md] Tiny Shop is a small shopping cart library for Python."),
            ]
        }
    )
    tools = builtin_tools(project, read_state=state)
    result = Agent(model, tools, AgentConfig(max_iterations=4), guide=StepsGuide(focus)).run(README_TASK)
    assert result.final == "Tiny Shop is a small shopping cart library for Python."
    assert result.messages[-1].text.startswith("[Read: README.md]")  # the history keeps the reply


_WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@given(
    st.lists(_WORD, max_size=30), st.lists(st.lists(_WORD, max_size=20), max_size=3), st.sampled_from(" \n  ")
)
def test_an_answer_that_shares_no_word_with_the_texts_comes_back_as_it_came(
    words: list[str], texts: list[list[str]], space: str
) -> None:
    said = {w for text in texts for w in text}
    answer = space + " ".join(w for w in words if w not in said) + space
    assert strip_echo(answer, [" ".join(text) for text in texts]) == answer
