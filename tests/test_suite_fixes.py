"""Harness fixes the task suite (bench/task_suite.py, tune half) showed were needed for small
local models, each measured on Qwen2.5-Coder-0.5B:

- asked to change one constant, it replaced the whole file with ``write_file`` (54 characters
  left of 339): for local models write_file only creates files, an existing one is changed
  with edit_file;
- a task naming a symbol but no file ("Which file defines the class Inventory?") wandered to the
  iteration limit: the harness finds the files that define the symbol and plans from them;
- answers ended with the harness's own prompt ("... Now give your final answer to the task with
  final_answer, from what you read."): the prompt no longer carries an instruction to copy, and
  an echo of harness text at an answer's start or end is removed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from focus_support import guided, started, task_focus, write_files
from tinyharness.agent import Agent, AgentConfig
from tinyharness.cli import _overwrite, build_parser
from tinyharness.guide.focus import answer_prompt, named_symbols, symbol_files
from tinyharness.history import strip_echo
from tinyharness.messages import Message
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.files import ReadState, head_text, text_files
from tinyharness.tools.permissions import Permissions
from tinyharness.tools.workspace import Workspace

PRICING = (
    '"""Prices."""\n\nTAX_RATE = 0.2\n\n\ndef apply_discount(price: float) -> float:\n    return price\n'
)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    files = {
        "README.md": "# Tiny Shop\n\nA cart library in Python, with an Inventory of items.\n",
        "src/shop/pricing.py": PRICING,
        "src/shop/inventory.py": "MAX_STOCK = 500\n\n\nclass Inventory:\n    pass\n",
        "src/shop/cart.py": "from .inventory import Inventory\n\nstock = Inventory()\n",
        "config.toml": "[server]\nport = 8042\n",
    }
    return write_files(tmp_path, files)


def _response(*content: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "stop_reason": stop,
        "content": list(content),
        "usage": {"input_tokens": 900, "output_tokens": 20},
    }


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return _response({"type": "tool_use", "id": call_id, "name": name, "input": arguments})


def _answer(text: str) -> dict[str, Any]:
    return _response({"type": "text", "text": text}, stop="end_turn")


# --- write_file does not overwrite for small models ------------------------------------------------


def test_write_file_without_overwrite_refuses_an_existing_file_and_names_edit_file(shop: Path) -> None:
    tools = builtin_tools(shop, permissions=Permissions(allow_write=True), overwrite=False)
    refused = asyncio.run(
        tools.execute("write_file", {"path": "src/shop/pricing.py", "content": "TAX_RATE = 0.25"})
    )
    assert not refused.ok and "edit_file" in refused.content
    assert (shop / "src/shop/pricing.py").read_text(encoding="utf-8") == PRICING  # nothing lost
    created = asyncio.run(tools.execute("write_file", {"path": "src/shop/new.py", "content": "X = 1\n"}))
    assert created.ok and (shop / "src/shop/new.py").read_text(encoding="utf-8") == "X = 1\n"
    spec = next(s for s in tools.specs if s.name == "write_file")
    assert "edit_file" in spec.description  # the model is told before it tries
    edited = asyncio.run(
        tools.execute(
            "edit_file", {"path": "src/shop/pricing.py", "old": "TAX_RATE = 0.2", "new": "TAX_RATE = 0.25"}
        )
    )
    assert edited.ok and "TAX_RATE = 0.25\n" in (shop / "src/shop/pricing.py").read_text(encoding="utf-8")


def test_overwriting_is_off_by_default_for_local_models_only() -> None:
    parser = build_parser()
    assert _overwrite(parser.parse_args(["run", "x", "--model", "local"])) is False
    assert _overwrite(parser.parse_args(["run", "x", "--model", "local:qwen2.5-coder-1.5b"])) is False
    assert _overwrite(parser.parse_args(["run", "x", "--model", "scripted:s.json"])) is True
    assert _overwrite(parser.parse_args(["run", "x", "--model", "local", "--overwrite-files"])) is True


def test_the_cli_keeps_an_existing_file_when_writes_may_not_overwrite(shop: Path) -> None:
    script = shop.parent / "script.json"
    responses = [
        _call("c1", "write_file", path="src/shop/pricing.py", content="TAX_RATE = 0.25"),
        _answer("Done."),
    ]
    script.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    argv = [sys.executable, "-m", "tinyharness", "run", "In src/shop/pricing.py, change TAX_RATE to 0.25"]
    argv += [
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(shop),
        "--no-log",
        "--quiet",
        "--allow-write",
    ]
    done = subprocess.run([*argv, "--no-overwrite-files"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (shop / "src/shop/pricing.py").read_text(encoding="utf-8") == PRICING


# --- a task that names a symbol, no file -----------------------------------------------------------


def test_named_symbols_are_identifiers_not_plain_words() -> None:
    assert named_symbols("Which file defines the class Inventory?") == ["Inventory"]
    assert named_symbols("In which file is DEFAULT_CURRENCY defined?") == ["DEFAULT_CURRENCY"]
    assert named_symbols("Which file has the function apply_discount?") == ["apply_discount"]
    assert named_symbols("Where is `total` computed, and what calls getTotal?") == ["total", "getTotal"]
    assert named_symbols("Which function checks a user's password?") == []
    assert named_symbols("Read README.md and tell me what this project is") == []


def test_symbol_files_are_the_files_that_define_it_not_those_that_use_it(shop: Path) -> None:
    space = Workspace(shop)
    files = text_files(space)
    read = lambda p: head_text(space, p, 10_000)  # noqa: E731
    assert symbol_files(["Inventory"], files, read) == ("Inventory", ["src/shop/inventory.py"])
    assert symbol_files(["apply_discount"], files, read) == ("apply_discount", ["src/shop/pricing.py"])
    assert symbol_files(["port"], files, read) == ("port", ["config.toml"])  # a TOML key
    assert symbol_files(["Python", "Nowhere"], files, read) == ("", [])


def test_a_task_naming_a_symbol_reads_its_file_then_answers(shop: Path) -> None:
    """read_file offers only the defining file; once read, the next request allows only the
    answer, and says where the symbol is defined (what grep would have shown)."""
    task = "Which file defines the class Inventory?"
    state = ReadState()
    focus = task_focus(shop, state)
    tools = builtin_tools(shop, read_state=state)
    model = ScriptedModel(
        {
            "responses": [
                _answer("src/shop/inventory.py"),
            ]
        }
    )
    assert started(focus, task).unread([Message.user(task)]) == ["src/shop/inventory.py"]
    result = Agent(model, tools, AgentConfig(max_iterations=5), guide=guided(focus)).run(task)
    assert result.stop == "end_turn" and result.final == "src/shop/inventory.py"
    (only,) = model.requests  # the guide read the file itself: one request, the answer
    assert only.final_only and only.messages[-2].tool_uses[0].input == {"path": "src/shop/inventory.py"}
    assert "Inventory is defined in src/shop/inventory.py" in only.messages[-1].text


def test_a_task_naming_a_file_is_not_planned_from_its_symbols(shop: Path) -> None:
    focus = task_focus(shop, ReadState())
    assert focus.named([Message.user("What is MAX_STOCK in src/shop/pricing.py?")]) == ["src/shop/pricing.py"]


# --- harness text is never the answer ----------------------------------------------------------------

OLD_NUDGE = (
    "You have read README.md, the file the task names. Now give your final answer to the task "
    "with final_answer, from what you read."
)


def test_the_answer_prompt_gives_no_instruction_to_copy(shop: Path) -> None:
    state = ReadState()
    state.record("README.md", 1, 3, 3)
    task = "Read README.md and tell me in one sentence what this project is"
    prompt = task_focus(shop, state)([Message.user(task)])
    assert prompt is not None and prompt.startswith("[Read: README.md]")
    assert "final_answer" not in prompt and "final answer" not in prompt.lower()


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        (  # measured: the 0.5B's README answer
            "Tiny Shop is a cart library. You have read README.md, the file the task names. Now give your "
            "final answer to the task with final_answer, from what you read.",
            "Tiny Shop is a cart library.",
        ),
        (  # measured: the 0.5B paraphrased the start of the prompt, then copied the rest
            "Mara Quist, the author, has read the README.md file, the file the task names. Now give your "
            "final answer to the task with final_answer, from what you read.",
            "Mara Quist, the author, has read the README.md file",
        ),
        ("Now give your final answer to the task with final_answer: 8042", "8042"),
        ("The file the task names is README.md", "The file the task names is README.md"),  # too short
        (OLD_NUDGE, ""),  # nothing but the echo: no answer
        ("8042", "8042"),
    ],
)
def test_strip_echo_removes_copied_harness_text_at_the_start_or_end(answer: str, kept: str) -> None:
    assert strip_echo(answer, [OLD_NUDGE]) == kept


@given(st.text(max_size=300))
def test_strip_echo_returns_an_answer_with_no_harness_text_as_it_came(answer: str) -> None:
    """Nothing to strip, nothing changed: the edges' spaces too (a library user's final answer
    "  spaced  out  " came back trimmed)."""
    assert strip_echo(answer, []) == answer


@given(st.text(max_size=300), st.lists(st.text(max_size=200), max_size=3))
def test_strip_echo_keeps_a_nonempty_piece_of_the_answer(answer: str, texts: list[str]) -> None:
    kept = strip_echo(answer, texts)
    assert kept in answer
    if kept == "" and answer.strip():  # only an answer of copied words is dropped whole
        edges = "\"'`()[]{}<>.,;:!?*"
        said = " ".join(texts).lower()
        assert all(word.strip(edges).lower() in said for word in answer.split())


def test_the_agent_returns_the_answer_without_the_echoed_prompt(shop: Path) -> None:
    """Scripted: the answer after the focus's prompt copies that prompt; the run's final answer
    is the model's own part (the history keeps the reply as it came)."""
    task = "Which port does config.toml set for the server?"
    state = ReadState()
    focus = task_focus(shop, state)
    tools = builtin_tools(shop, read_state=state)
    prompt = answer_prompt(task, ["config.toml"])
    model = ScriptedModel(
        {"responses": [_call("c1", "read_file", path="config.toml"), _answer(f"8042. {prompt}")]}
    )
    result = Agent(model, tools, AgentConfig(max_iterations=5), guide=guided(focus)).run(task)
    assert result.final == "8042."
    assert result.messages[-1].text == f"8042. {prompt}"


def test_a_stopped_runs_answer_drops_the_copied_stop_prompt(shop: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                _call("c1", "list_dir", path="."),
                _answer("8042. Stop here: no more tool calls. Give your final answer from what you know."),
            ]
        }
    )
    result = Agent(model, builtin_tools(shop), AgentConfig(max_iterations=1)).run("Which port?")
    assert result.stop == "max_iterations" and result.final == "8042."


def test_in_json_mode_the_answer_prompt_is_the_last_thing_before_the_answer() -> None:
    """The next-action hint follows the results, and the harness's words after the results (the
    answer prompt ending with the task) come last, so the answer answers the task's words."""
    from tinyharness.messages import TextBlock, ToolResultBlock, ToolUseBlock
    from tinyharness.models.json_mode import NEXT_ACTION_HINT, history_as_text

    prompt = "[Read: config.toml] The task: Which port does config.toml set?"
    messages = [
        Message.user("Which port does config.toml set?"),
        Message("assistant", (ToolUseBlock("call_1", "read_file", {"path": "config.toml"}),)),
        Message("user", (ToolResultBlock("call_1", "port = 8042"), TextBlock(prompt))),
    ]
    last = history_as_text(messages)[-1].text
    assert last.endswith(prompt) and last.index(NEXT_ACTION_HINT) < last.index(prompt)


# --- the plan's reads are required, and an edit task ends once its file is changed ---------------


def test_the_named_files_must_be_read_first_then_the_choice_is_free(shop: Path) -> None:
    """Measured with the 0.5B: offered only the named file, it still called write_file before
    reading the file it was to edit, and list_dir on a named file."""
    task = "Which port does config.toml set for the server?"
    state = ReadState()
    focus = task_focus(shop, state)
    model = ScriptedModel({"responses": [_answer("8042")]})
    agent = Agent(
        model,
        builtin_tools(shop, read_state=state),
        AgentConfig(max_iterations=5),
        guide=guided(focus),
    )
    result = agent.run(task)
    assert result.final == "8042"
    (only,) = model.requests  # the named file is read by the guide before any request
    assert only.tool_choice is None and only.final_only
    assert [c.input for m in result.messages for c in m.tool_uses] == [{"path": "config.toml"}]


def test_a_read_that_failed_is_not_required_again(shop: Path) -> None:
    (shop / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    focus = started(task_focus(shop, ReadState()), "What is in logo.png?")
    tools = builtin_tools(shop, read_state=ReadState())
    head = [Message.user("What is in logo.png?")]
    assert focus.next_tool(head) == "read_file"
    failed = asyncio.run(tools.execute("read_file", {"path": "logo.png"}))
    assert not failed.ok
    from tinyharness.messages import ToolResultBlock, ToolUseBlock

    history = [
        *head,
        Message("assistant", (ToolUseBlock("c1", "read_file", {"path": "logo.png"}),)),
        Message("user", (ToolResultBlock("c1", failed.content, is_error=True),)),
    ]
    assert focus.next_tool(history) is None


def test_an_edit_task_is_answered_once_its_named_file_is_changed(shop: Path) -> None:
    task = "In src/shop/pricing.py, change TAX_RATE from 0.2 to 0.25."
    state = ReadState()
    focus = task_focus(shop, state)
    tools = builtin_tools(shop, read_state=state, permissions=Permissions(allow_write=True), overwrite=False)
    focus.answer = False  # a run that may write: no answer right after the reads
    model = ScriptedModel(
        {
            "responses": [
                _call(
                    "c2", "edit_file", path="src/shop/pricing.py", old="TAX_RATE = 0.2", new="TAX_RATE = 0.25"
                ),
                _answer("Changed TAX_RATE to 0.25."),
            ]
        }
    )
    agent = Agent(model, tools, AgentConfig(max_iterations=6), guide=guided(focus, shop, kind="edit"))
    result = agent.run(task)
    assert result.stop == "end_turn" and result.model_calls == 2  # the read was the guide's
    second, third = model.requests
    assert not second.final_only and second.tool_choice == "edit_file"
    assert third.final_only and third.messages[-1].text.endswith("[Changed: src/shop/pricing.py]")
    assert "TAX_RATE = 0.25\n" in (shop / "src/shop/pricing.py").read_text(encoding="utf-8")


def test_a_failed_edit_does_not_end_the_task(shop: Path) -> None:
    from tinyharness.messages import ToolResultBlock, ToolUseBlock

    state = ReadState()
    state.record("src/shop/pricing.py", 1, 7, 7)
    focus = started(task_focus(shop, state), "In src/shop/pricing.py, change TAX_RATE to 0.25.", "edit")
    focus.answer = False
    task = [Message.user("In src/shop/pricing.py, change TAX_RATE to 0.25.")]
    call = ToolUseBlock("c1", "edit_file", {"path": "src/shop/pricing.py", "old": "X", "new": "Y"})
    failed = [
        *task,
        Message("assistant", (call,)),
        Message("user", (ToolResultBlock("c1", "no", is_error=True),)),
    ]
    assert focus(failed) is None
    done = [*task, Message("assistant", (call,)), Message("user", (ToolResultBlock("c1", "Edited"),))]
    assert focus(done) is not None


def test_edit_file_offers_the_named_files_lines_as_old_text(shop: Path) -> None:
    """Measured with the 0.5B: free, its old text was a line not in the file, then the whole
    read_file result with line numbers. Narrowed, old is one of the file's own unique lines."""
    state = ReadState()
    focus = task_focus(shop, state)
    focus.answer = False  # a run that may write
    guide = guided(focus, shop, kind="edit")

    def offered(task: str) -> Any:
        started(focus, task, "edit")
        return guide.choices("edit_file", [Message.user(task)])

    choices = offered("In src/shop/pricing.py, change TAX_RATE from 0.2 to 0.25.")
    assert choices["path"] == ["src/shop/pricing.py"]
    assert choices["old"] == ["TAX_RATE = 0.2"]  # the one line naming what the task names
    every = offered("In src/shop/pricing.py, make the discount round to 3 places.")
    assert "    return price" in every["old"] and "TAX_RATE = 0.2" in every["old"]
    assert "" not in every["old"]  # blank lines are not unique, and change nothing
    for line in every["old"]:
        assert PRICING.count(line) == 1
    assert offered("Rename every helper in this project") == {}  # no named file


def test_an_edit_is_required_only_when_the_task_asks_for_a_change(shop: Path) -> None:
    """After the reads, "change X" must edit (the 0.5B called write_file on the file instead); a
    question in a run that may write is never made to edit."""
    state = ReadState()
    state.record("src/shop/pricing.py", 1, 7, 7)
    focus = task_focus(shop, state)
    focus.answer = False
    change = "In src/shop/pricing.py, change TAX_RATE to 0.25."
    question = "What does src/shop/pricing.py set TAX_RATE to?"
    # the plan's kind decides (the plan request's answer, or --kind), not the task's words
    assert started(focus, change, "edit").next_tool([Message.user(change)]) == "edit_file"
    assert started(focus, question, "answer").next_tool([Message.user(question)]) is None
    focus.answer = True  # a run that cannot write
    assert started(focus, change, "edit").next_tool([Message.user(change)]) is None


def test_an_answer_that_only_repeats_the_prompt_is_no_answer(shop: Path) -> None:
    task = "Which port does config.toml set for the server?"
    state = ReadState()
    focus = task_focus(shop, state)
    echo = answer_prompt(task, ["config.toml"])
    model = ScriptedModel({"responses": [_call("c1", "read_file", path="config.toml"), _answer(echo)]})
    tools = builtin_tools(shop, read_state=state)
    result = Agent(model, tools, AgentConfig(max_iterations=5), guide=guided(focus)).run(task)
    assert result.final == "(no final answer)"
