"""The small model's failure classes, fixed by structure (``guide.planner``, ``guide.focus``,
``retrieval.rank``, the agent loop), each the same in English, Chinese and French:

- a task that names its files gets a kind (one tiny request whose grammar admits only a kind):
  an edit is forced onto the named file once read, and notes on named files are notes;
- an edit that names no file changes the ranking's best file, and nothing else: a change to an
  existing file the plan did not choose is refused;
- a count reads a number a tool or the plan wrote (the listing's counts, a file's outline);
- a question naming nothing ranks the file defining a name whose words it writes first;
- a final answer that is only a tool's name is asked again under the answer grammar.

The model is scripted: its replies are the plan the real 0.5B gave or might give, and each test
asserts what the harness does with it (what would break if the structure went)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.agent import Agent, AgentConfig
from tinyharness.guide import PlanGuide, Ranked, TaskPlan
from tinyharness.guide import plan as plan_module
from tinyharness.guide.focus import NEW_LINE_SLACK, defined_names, outline_line
from tinyharness.guide.plan import TERMS_KEY
from tinyharness.guide.planner import glob_counted
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.files import ReadState
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.permissions import Permissions

FILES = {
    "src/shop/__init__.py": '__version__ = "1.4.2"\n',
    "src/shop/cart.py": '"""The cart."""\nclass Cart:\n    pass\n\n\ndef total(cart):\n    return 0\n',
    "src/shop/pricing.py": '"""Prices."""\nTAX_RATE = 0.2\n\n\ndef price(x):\n    return x\n',
    "src/shop/settings.py": "PAGE_SIZE = 25\nDEBUG = False\n",
    "docs/guide.md": "# Guide\nThe shop sells fruit.\n",
    "README.md": "# Shop\nA small shop.\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for relative, text in FILES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    return tmp_path


def _reply(text: str) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 50, "output_tokens": 9},
    }


def _use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return {"stop_reason": "tool_use", "content": [use], "usage": {"input_tokens": 50, "output_tokens": 9}}


def _kind(meaning: str) -> dict[str, Any]:
    return _reply(json.dumps({"kind": meaning}))


def _guide(root: Path, *, may_write: bool = False, rank: Any = None) -> tuple[PlanGuide, ReadState]:
    state = ReadState()
    guide = PlanGuide(
        root,
        read_state=state,
        notes=NotesFile(root / "NOTES.md", root=root),
        run_notes=NotesFile(root / ".tinyharness" / "notes" / "run.md", root=root),
        may_write=may_write,
        rank=rank,
    )
    return guide, state


def _agent(
    root: Path, guide: PlanGuide, state: ReadState, model: ScriptedModel, write: bool = False
) -> Agent:
    registry = builtin_tools(
        root,
        notes=NotesFile(root / "NOTES.md", root=root),
        permissions=Permissions(allow_write=write),
        read_state=state,
    )
    return Agent(model, registry, AgentConfig(max_iterations=8), guide=guide)


# --- 1 and 5: a task that names its files gets a kind ---------------------------------------------

EDIT = {
    "en": "In src/shop/pricing.py, change TAX_RATE from 0.2 to 0.25.",
    "zh": "在 src/shop/pricing.py 里，把 TAX_RATE 从 0.2 改成 0.25。",
    "fr": "Dans src/shop/pricing.py, change TAX_RATE de 0.2 à 0.25.",
}
NOTES_TWO = {
    "en": "Read src/shop/cart.py and src/shop/pricing.py and write a one-line summary of each into the notes "
    "with the note tool",
    "zh": "读 src/shop/cart.py 和 src/shop/pricing.py，用 note 工具给每个文件写一行总结到笔记里",
    "fr": "Lis src/shop/cart.py et src/shop/pricing.py et écris dans les notes un résumé d'une ligne de "
    "chacun avec l'outil note",
}


@pytest.mark.parametrize("language", sorted(EDIT))
def test_a_task_naming_its_file_asks_the_kind_alone_and_keeps_its_files(project: Path, language: str) -> None:
    """Exact evidence gives the targets; the kind is asked in one small request whose grammar
    has the kind and the words in code, nothing else (before: no request, no kind, and the 0.5B
    wrote free text to max_tokens for minutes on an edit of a named file)."""
    guide, _ = _guide(project, may_write=True)
    model = ScriptedModel({"responses": [_kind("change a file")]})
    asyncio.run(guide.start(EDIT[language], model.complete))
    assert guide.plan == TaskPlan("edit", ("src/shop/pricing.py",), "model")
    (request,) = model.requests
    schema = request.response_schema
    assert schema is not None and list(schema["properties"]) == ["kind", TERMS_KEY]
    assert "change a file" in schema["properties"]["kind"]["enum"]
    assert request.max_tokens is not None and request.max_tokens <= 128


def test_a_run_that_may_not_write_is_not_offered_a_change(project: Path) -> None:
    guide, _ = _guide(project, may_write=False)
    model = ScriptedModel({"responses": [_kind("answer in words")]})
    asyncio.run(guide.start(EDIT["zh"], model.complete))
    schema = model.requests[0].response_schema
    assert schema is not None and "change a file" not in schema["properties"]["kind"]["enum"]
    assert guide.plan.kind == "answer"


@pytest.mark.parametrize("language", sorted(EDIT))
def test_an_edit_of_a_named_file_is_forced_onto_it_once_read(project: Path, language: str) -> None:
    guide, state = _guide(project, may_write=True)
    script = [
        _kind("change a file"),
        _use(
            "e1",
            "edit_file",
            {"path": "src/shop/pricing.py", "old": "TAX_RATE = 0.2", "new": "TAX_RATE = 0.25"},
        ),
        _reply("Changed TAX_RATE to 0.25."),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model, write=True).run(EDIT[language])
    assert result.ok
    # the guide reads the named file itself (no request for it), then the edit is forced
    assert model.requests[1].messages[-2].tool_uses[0].input == {"path": "src/shop/pricing.py"}
    assert model.requests[1].tool_choice == "edit_file"  # not left free to write prose
    assert model.requests[2].final_only
    assert "TAX_RATE = 0.25" in (project / "src/shop/pricing.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("language", sorted(NOTES_TWO))
def test_notes_on_named_files_are_notes_in_three_languages(project: Path, language: str) -> None:
    """notes-two: its files are named and the notes file is not; the kind the model gives makes it
    a notes plan over those files, the same in every language (before: no kind, answered)."""
    guide, _ = _guide(project)
    model = ScriptedModel({"responses": [_kind("note each file")]})
    asyncio.run(guide.start(NOTES_TWO[language], model.complete))
    assert guide.plan == TaskPlan("notes", ("src/shop/cart.py", "src/shop/pricing.py"), "model")
    assert guide.focus.notes


# --- 1: an edit naming no file ------------------------------------------------------------------

EDIT_UNNAMED = {  # (no name of settings.py has only words these write: PAGE_SIZE's "size" is not)
    "en": "Set the number of items per page in the shop's settings to 40.",
    "zh": "把商店设置里的每页条数改成 40。",
    "fr": "Mets le nombre d'articles par page des réglages de la boutique à 40.",
}


def _settings_rank(root: Path, task: str, k: int) -> list[Ranked | str]:
    return [Ranked("src/shop/", 2.2), Ranked("src/shop/settings.py", 2.0), "README.md", "docs/guide.md"]


@pytest.mark.parametrize("language", sorted(EDIT_UNNAMED))
def test_an_edit_naming_no_file_changes_the_rankings_best_file(project: Path, language: str) -> None:
    """The model chose the kind and a wrong file (as the 0.5B chose test files for a version
    change); the ranking's best scored file is the target, and only it may change (and only
    on a line tied to the task)."""
    guide, state = _guide(project, may_write=True, rank=_settings_rank)
    plan = {"kind": "change a file", "targets": ["README.md"]}
    script = [
        _reply(json.dumps(plan)),
        _use("e1", "edit_file", {"path": "README.md", "old": "A small shop.", "new": "A big shop."}),
        _use(
            "e2",
            "edit_file",
            {"path": "src/shop/settings.py", "old": "PAGE_SIZE = 25", "new": "PAGE_SIZE = 40"},
        ),
        _reply("Done."),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model, write=True).run(EDIT_UNNAMED[language])
    assert guide.plan == TaskPlan("edit", ("src/shop/settings.py",), "model")
    assert result.ok
    assert (project / "README.md").read_text(encoding="utf-8") == FILES["README.md"]  # refused
    # No line of settings.py holds a value or a name the task writes: the edit would be a guess
    # (the real 0.5B changed DEFAULT_CURRENCY), so it is refused too, in every language
    # (tests/test_guide_sites.py); the file stays as it was.
    assert (project / "src/shop/settings.py").read_text(encoding="utf-8") == FILES["src/shop/settings.py"]
    assert "not known" in str(model.requests[3].messages[-1].content)
    assert model.requests[1].tool_choice == "edit_file" and model.requests[2].tool_choice == "edit_file"


BUMP = {  # (the Chinese task writes no word of ``__version__``: the words in code do)
    "en": ("Bump the version to 0.12.2.", []),
    "zh": ("把版本号改成 0.12.2。", ["version", "number"]),
}
ATTR_CONFIGS = {
    "setup.cfg": "[metadata]\nname = pkg\nversion = attr: pkg._meta.__version__\n",
    "pyproject.toml": '[project]\nname = "pkg"\ndynamic = ["version"]\n\n'
    '[tool.setuptools.dynamic]\nversion = {attr = "pkg._meta.__version__"}\n',
}


@pytest.mark.parametrize("config", sorted(ATTR_CONFIGS))
@pytest.mark.parametrize("language", sorted(BUMP))
def test_an_edit_of_a_value_a_config_file_refers_to_changes_the_module_holding_it(
    tmp_path: Path, config: str, language: str
) -> None:
    """ps-edit-version: the ranking's best file for "Bump the version" was setup.cfg, whose
    ``version = attr: pathspec._meta.__version__`` holds no version, and the 0.5B rewrote it.
    A setuptools ``attr:`` reference on the config line tied to the task names the module: the
    plan changes that file, offered its ``__version__`` line; the config file is not planned."""
    (tmp_path / config).write_text(ATTR_CONFIGS[config], encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from ._meta import __version__\n", encoding="utf-8")
    meta = '"""Metadata."""\n\n__author__ = "someone"\n__version__ = "0.12.1"\n'
    (tmp_path / "pkg" / "_meta.py").write_text(meta, encoding="utf-8")
    task, terms = BUMP[language]

    def rank(root: Path, task: str, k: int) -> list[Ranked | str]:
        return [Ranked(config, 3.0), Ranked("pkg/_meta.py", 1.0), "pkg/__init__.py"]

    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    reply = {"kind": "change a file", "targets": [config], TERMS_KEY: terms}
    asyncio.run(guide.start(task, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    assert guide.plan.targets == ("pkg/_meta.py",)
    assert list(guide.choices("edit_file", [])["old"]) == ['__version__ = "0.12.1"']
    plain, _ = _guide(tmp_path, may_write=True, rank=lambda root, task, k: [Ranked("pkg/__init__.py", 2.0)])
    asyncio.run(plain.start(task, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    # no config file chosen: the file binding the release is found by its value all the same
    assert plain.plan.targets == ("pkg/_meta.py",)


def test_a_question_changes_no_existing_file_but_may_write_a_new_one(project: Path) -> None:
    guide, state = _guide(project, may_write=True)
    script = [
        _kind("answer in words"),
        _use("e1", "edit_file", {"path": "src/shop/cart.py", "old": '"""The cart."""', "new": '"""X."""'}),
        _use("w1", "write_file", {"path": "out/new.txt", "content": "hello"}),
        _reply("0.2"),
    ]
    model = ScriptedModel({"responses": script})
    _agent(project, guide, state, model, write=True).run("src/shop/pricing.py 里的 TAX_RATE 是多少？")
    assert (project / "src/shop/cart.py").read_text(encoding="utf-8") == FILES["src/shop/cart.py"]
    assert (project / "out/new.txt").read_text(encoding="utf-8") == "hello"


# --- 2: counts ---------------------------------------------------------------------------------

COUNT_FOLDER = {
    "en": "How many .py files does the folder src/shop hold, __init__.py included?",
    "zh": "src/shop 文件夹里有多少个 .py 文件（包括 __init__.py）？",
    "fr": "Combien de fichiers .py le dossier src/shop contient-il, __init__.py compris ?",
}


@pytest.mark.parametrize("language", sorted(COUNT_FOLDER))
def test_a_count_over_a_folder_lists_it_and_the_listing_holds_the_number(
    project: Path, language: str
) -> None:
    """The task names a file (__init__.py) and writes a folder and an extension: a count lists
    the folder (before: it read __init__.py and answered "1"), and the listing counts."""
    guide, state = _guide(project)
    script = [_kind("count or list files"), _reply("4")]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model).run(COUNT_FOLDER[language])
    assert guide.plan == TaskPlan("list", ("src/shop/",), "model")
    listed = model.requests[1].messages[-2].tool_uses[0]  # the guide lists the folder itself
    assert (listed.name, listed.input) == ("list_dir", {"path": "src/shop"})
    assert model.requests[1].final_only
    assert result.final == "4"
    listing = str(model.requests[1].messages[-1].content)
    assert "[4 .py files]" in listing


COUNT_FILE = {
    "en": "How many top-level functions does src/shop/cart.py define?",
    "zh": "src/shop/cart.py 在顶层定义了多少个函数？",
    "fr": "Combien de fonctions de premier niveau src/shop/cart.py définit-il ?",
}


@pytest.mark.parametrize("language", sorted(COUNT_FILE))
def test_a_count_over_a_named_file_gets_its_outline_in_the_answer_prompt(
    project: Path, language: str
) -> None:
    guide, state = _guide(project)
    script = [
        _kind("count or list files"),
        _reply("1"),
    ]
    model = ScriptedModel({"responses": script})
    _agent(project, guide, state, model).run(COUNT_FILE[language])
    assert guide.plan == TaskPlan("list", ("src/shop/cart.py",), "model")
    ask = str(model.requests[1].messages[-1].content)  # the read is the guide's own
    assert model.requests[1].final_only
    assert "src/shop/cart.py defines at top level 1 function (total), 1 class (Cart)" in ask


def test_a_count_over_a_named_file_answered_with_nothing_gets_its_outline(project: Path) -> None:
    """tb-zh-count-api: given the outline, the 0.5B answered nothing twice and the run ended
    "(no final answer)"; what the harness found is the answer then."""
    guide, state = _guide(project)
    script = [
        _kind("count or list files"),
        _reply(""),
        _reply(""),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model).run(COUNT_FILE["zh"])
    assert result.final.startswith("src/shop/cart.py defines at top level 1 function (total), 1 class (Cart)")


# --- 3: a question naming nothing ---------------------------------------------------------------


@pytest.mark.parametrize(
    "task", ["Which version is this shop library?", "Quelle version est cette bibliothèque ?"]
)
def test_the_file_defining_a_name_whose_words_the_task_writes_ranks_first(project: Path, task: str) -> None:
    """``__version__``'s word is "version": the file defining it is the best file (before, the
    words of change logs and test files outranked it on Python-Markdown)."""
    from tinyharness.cli import _workspace_rank
    from tinyharness.guide.plan import top_files

    history = "Each version of the shop, the version of its library, version by version.\n"
    (project / "docs/version-history.md").write_text(history, encoding="utf-8")
    assert top_files(_workspace_rank(project, task, 40), 1) == ["src/shop/__init__.py"]


# --- 4: a final answer that is a tool's name -----------------------------------------------------


@pytest.mark.parametrize(
    "task",
    [
        "Quel est TAX_RATE dans src/shop/pricing.py ?",
        "src/shop/pricing.py 里的 TAX_RATE 是多少？",
        "What value does src/shop/pricing.py give TAX_RATE?",
    ],
)
@pytest.mark.parametrize(
    "bare", ["read_file", "`read_file`", "", "read_file(src/shop/pricing.py)", 'read_file(path="x.py")\n']
)
def test_a_final_answer_that_is_a_tool_name_or_empty_is_asked_again(
    project: Path, bare: str, task: str
) -> None:
    """The answer is read, never the task: the same in French, Chinese and English."""
    guide, state = _guide(project)
    script = [
        _kind("answer in words"),
        _reply(bare),
        _reply("0.2"),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model).run(task)
    assert result.final == "0.2"
    assert model.requests[2].final_only  # asked again under the answer grammar
    assert len(model.requests) == 3  # once


@pytest.mark.parametrize(
    "answer", ["round(0.2)", "0.2 (see read_file(src/shop/pricing.py))", "TAX_RATE(0.2)", "it is read_file"]
)
def test_an_answer_that_is_not_only_a_tool_call_is_taken(project: Path, answer: str) -> None:
    """A call of something that is not a tool, or a tool's call inside a longer answer, is an
    answer: only a bare tool call written as text is asked again."""
    guide, state = _guide(project)
    script = [
        _kind("answer in words"),
        _reply(answer),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model).run("What is TAX_RATE in src/shop/pricing.py?")
    assert result.final == answer
    assert len(model.requests) == 2


@pytest.mark.parametrize("again", ["read_file", "read_file is the name of a tool, not an answer."])
def test_no_answer_twice_gives_what_the_plan_found(project: Path, again: str) -> None:
    """md-def-xhtml: the 0.5B answered "read_file", then, asked again, copied the words that
    asked. The symbol's file the harness found is the answer then, not the tool's name."""
    guide, state = _guide(project)
    script = [
        _kind("answer in words"),
        _reply("read_file"),
        _reply(again),
    ]
    model = ScriptedModel({"responses": script})
    result = _agent(project, guide, state, model).run("哪个文件定义了类 Cart？")
    assert "[Read: src/shop/cart.py] Cart is defined in src/shop/cart.py." in str(
        model.requests[1].messages[-1].content
    )
    assert result.final == "Cart is defined in src/shop/cart.py."


@pytest.mark.parametrize(
    "task",
    [
        "How many .txt files does tests/basic contain?",
        "tests/basic 里有多少个 .txt 文件？",
        "Combien de fichiers .txt tests/basic contient-il ?",
    ],
)
def test_a_count_of_one_extension_is_said_before_the_ask(tmp_path: Path, task: str) -> None:
    """md-count-basic: 18 .txt and 18 .html files; the 0.5B answered 36, the header's count of
    all entries. The count of the extension the task writes comes right before the ask."""
    for n in range(3):
        (tmp_path / "tests/basic").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"tests/basic/t{n}.txt").write_text("x", encoding="utf-8")
        (tmp_path / f"tests/basic/t{n}.html").write_text("x", encoding="utf-8")
    guide, state = _guide(tmp_path)
    script = [_kind("count or list files"), _reply("3")]
    model = ScriptedModel({"responses": script})
    _agent(tmp_path, guide, state, model).run(task)
    asked = model.requests[1].messages[-1].content[-1]
    assert model.requests[1].final_only and str(getattr(asked, "text", "")).startswith("[3 .txt files] ")


@pytest.mark.parametrize(
    "task",
    [
        "How many *_test.py files are in pkg/tests?",
        "pkg/tests 里有几个 *_test.py 文件？",
        "Combien de fichiers *_test.py y a-t-il dans pkg/tests ?",
    ],
)
def test_a_count_of_a_written_glob_is_said_before_the_ask(tmp_path: Path, task: str) -> None:
    """co-fr-count: five *_test.py files beside utils.py and __init__.py; the 0.5B answered 7,
    the folder's count of .py files. The glob is the task's string; its matches are counted."""
    for name in ("a_test.py", "b_test.py", "utils.py", "__init__.py", "b_test.pyc"):
        (tmp_path / "pkg/tests").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"pkg/tests/{name}").write_text("x = 1\n", encoding="utf-8")
    guide, state = _guide(tmp_path)
    script = [_kind("count or list files"), _reply("2")]
    model = ScriptedModel({"responses": script})
    _agent(tmp_path, guide, state, model).run(task)
    asked = str(getattr(model.requests[1].messages[-1].content[-1], "text", ""))
    assert model.requests[1].final_only
    assert asked.startswith("[2 files matching *_test.py: a_test.py, b_test.py] ")


@pytest.mark.parametrize(
    "task",
    [
        "Combien de fichiers test_*.py y a-t-il dans le dossier tests ?",
        "tests 文件夹里有几个 test_*.py 文件？",
    ],
)
def test_a_glob_without_a_folder_matches_file_names(task: str) -> None:
    """in-fr-count: "test_*.py" on the whole path "tests/test_core.py" fails at "tests/"; as a
    name pattern (``find -name``) it matches, so its files are counted."""
    files = ["tests/test_core.py", "tests/test_codec.py", "tests/__init__.py", "idna/core.py"]
    found = plan_module.evidence(task, files)
    assert found.globs[0] == "test_*.py"
    assert plan_module.expand(["test_*.py"], files) == ["tests/test_core.py", "tests/test_codec.py"]
    listing = "tests/ (3 entries)\n__init__.py  1 B\ntest_codec.py  1 B\ntest_core.py  1 B\n[3 .py files]"
    assert glob_counted(listing, found.globs) == "2 files matching test_*.py: test_codec.py, test_core.py"


def test_glob_counted_leaves_extension_globs_to_the_extension_count() -> None:
    listing = "pkg/ (3 entries)\na_test.py  1 B\nsub/\nutils.py  1 B\n[2 .py files, 1 folder]"
    assert glob_counted(listing, ["pkg/*_test.py"]) == "1 file matching *_test.py: a_test.py"
    assert glob_counted(listing, ["pkg/**/*.py", "*.py"]) == ""  # counted_kinds says "2 .py files"
    assert glob_counted(listing, ["*_spec.py"]) == ""  # no match: nothing said
    assert glob_counted(listing, ["su*"]) == ""  # folders are not files


def test_an_edit_of_a_named_symbol_is_offered_its_definition_line(project: Path) -> None:
    """md-edit-pipe: offered every line naming PIPE_RIGHT, the 0.5B edited a use of it."""
    (project / "src/shop/pricing.py").write_text(
        "TAX_RATE = 0.2\n\n\ndef price(x):\n    return x * (1 + TAX_RATE)\n", encoding="utf-8"
    )
    guide, state = _guide(project, may_write=True)
    script = [
        _kind("change a file"),
        _use(
            "e1",
            "edit_file",
            {"path": "src/shop/pricing.py", "old": "TAX_RATE = 0.2", "new": "TAX_RATE = 0.25"},
        ),
        _reply("Done."),
    ]
    model = ScriptedModel({"responses": script})
    _agent(project, guide, state, model, write=True).run(EDIT["fr"])
    assert model.requests[1].tool_choice == "edit_file"
    choices = guide.choices("edit_file", model.requests[1].messages)
    # (asked after the run: the file holds the new line by now; the use is never offered)
    assert list(choices["old"]) == ["TAX_RATE = 0.25"] and list(choices["path"]) == ["src/shop/pricing.py"]


@pytest.mark.parametrize("language", sorted(EDIT_UNNAMED))
def test_an_edit_naming_no_name_is_offered_the_same_lines_in_every_language(
    project: Path, language: str
) -> None:
    """An edit that names no name of the workspace is offered every line of the ranking's best
    file, in every language: no word of the task is read."""
    guide, _ = _guide(project, may_write=True, rank=_settings_rank)
    model = ScriptedModel({"responses": [_reply(json.dumps({"kind": "change a file", "targets": []}))]})
    asyncio.run(guide.start(EDIT_UNNAMED[language], model.complete))
    choices = guide.choices("edit_file", [])
    assert list(choices["old"]) == ["PAGE_SIZE = 25", "DEBUG = False"]
    # the new line is bounded by the longest line offered, not free (the grammar ends a runaway)
    assert choices["new"] == len("PAGE_SIZE = 25") + NEW_LINE_SLACK


RELEASE_TASKS = {
    "en": "Set the release number of this package to 0.12.2.",
    "zh": "把这个包的发布号改成 0.12.2。",
    "de": "Setze die Release-Nummer dieses Pakets auf 0.12.2.",
}


@pytest.mark.parametrize("language", sorted(RELEASE_TASKS))
def test_a_change_writing_a_release_number_goes_to_the_file_binding_the_nearest(
    tmp_path: Path, language: str
) -> None:
    """The ranking with the task's words put another file first ("release number" names no
    file's words: the 0.5B's change went to isodates.py and none was made); the file binding
    the release nearest the one the task writes is changed, in any language. A test's release
    that shares no leading number with it, or a file with none, is not."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "dates.py").write_text('"""Dates."""\n\nFORMAT = "%Y"\n', encoding="utf-8")
    (tmp_path / "pkg" / "_meta.py").write_text('__version__ = "0.12.1"\n', encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_v.py").write_text('SAMPLE = "1.2.3"\n', encoding="utf-8")

    def rank(root: Path, task: str, k: int) -> list[Ranked | str]:
        return [Ranked("tests/test_v.py", 3.0), Ranked("pkg/dates.py", 2.0), "pkg/_meta.py"]

    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    reply = {"kind": "change a file", "targets": ["pkg/dates.py"]}
    asyncio.run(
        guide.start(
            RELEASE_TASKS[language], ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete
        )
    )
    assert guide.plan.targets == ("pkg/_meta.py",)
    assert list(guide.choices("edit_file", [])["old"]) == ['__version__ = "0.12.1"']
    major = RELEASE_TASKS[language].replace("0.12.2", "4.0.0")  # shares no leading number: the ranking
    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    asyncio.run(guide.start(major, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    assert guide.plan.targets == ("tests/test_v.py",)


SHORT_RELEASE_TASKS = {
    "en": "Bump the version to 3.11.",
    "zh": "把版本号升到 3.11。",
    "fr": "Passe la version à 3.11.",
}


@pytest.mark.parametrize("language", sorted(SHORT_RELEASE_TASKS))
def test_a_two_part_release_goes_to_the_file_binding_a_two_part_version_string(
    tmp_path: Path, language: str
) -> None:
    """in-edit-version: "Bump the version to 3.11." was not read as a release (two parts), and
    the ranking's best file, a data table binding "15.1.0", was edited (every edit refused).
    Two parts match a version written as a two-part string ("3.10"), not a float written as
    a number (``RATIO = 3.5``) nor a three-part release."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "table.py").write_text('__version__ = "15.1.0"\nRATIO = 3.5\n', encoding="utf-8")
    (tmp_path / "pkg" / "package_data.py").write_text("__version__ = '3.10'\n", encoding="utf-8")

    def rank(root: Path, task: str, k: int) -> list[Ranked | str]:
        return [Ranked("pkg/table.py", 3.0), "pkg/package_data.py"]

    reply = {"kind": "change a file", "targets": ["pkg/table.py"]}
    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    task = SHORT_RELEASE_TASKS[language]
    asyncio.run(guide.start(task, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    assert guide.plan.targets == ("pkg/package_data.py",)
    (tmp_path / "pkg" / "package_data.py").write_text("__version__ = 3.10\n", encoding="utf-8")  # a float
    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    asyncio.run(guide.start(task, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    assert guide.plan.targets == ("pkg/table.py",)  # the ranking's, as before


@settings(max_examples=60, deadline=None)
@given(
    classes=st.lists(
        st.lists(st.sampled_from(["setUp", "helper", "test_a", "test_b", "test_c"]), unique=True), max_size=4
    ),
    functions=st.lists(st.sampled_from(["test_x", "test_y", "make", "run"]), unique=True),
    test_file=st.booleans(),
)
def test_the_outline_counts_methods_and_a_test_files_tests_first(
    classes: list[list[str]], functions: list[str], test_file: bool
) -> None:
    """The outline's counts are the file's: the methods of its classes, and a test file's
    tests (functions and methods named test*), said first. The 0.5B copies the first count it
    is shown: asked for the test methods of a unittest file, it answered "1", its classes."""
    source = "".join(f"def {name}():\n    pass\n" for name in functions)
    for n, methods in enumerate(classes):
        body = "".join(f"    def {m}(self):\n        pass\n" for m in methods) or "    pass\n"
        source += f"class Case{n}:\n{body}"
    path = "tests/test_thing.py" if test_file else "pkg/thing.py"
    line = outline_line(path, source)
    methods = sum(map(len, classes))
    tests = sum(name.startswith("test") for name in functions) + sum(
        m.startswith("test") for ms in classes for m in ms
    )
    assert (f"Methods of its classes: {methods} (" in line) is (methods > 0)
    if test_file and tests:
        assert line.startswith(f"{path} holds {tests} test")
    else:
        assert line.startswith(f"{path} defines at top level")
    assert ast_count_ok(line, len(functions), len(classes))


def ast_count_ok(line: str, functions: int, classes: int) -> bool:
    """The top-level counts said are the numbers given (a kind with none is not said)."""
    said = line[line.index("defines at top level") :]
    return (f"{functions} function" in said or functions == 0) and (
        f"{classes} class" in said or classes == 0
    )


def test_a_note_request_names_a_test_files_tests_and_another_files_definitions() -> None:
    """A test file's class names said nothing of what it tests (the 0.5B's notes: "tests the
    IDNATests class"); its tests' names do. Another file's top-level names are said as before."""
    source = "import unittest\n\nclass IDNATests(unittest.TestCase):\n    def setUp(self): pass\n"
    source += "    def test_encode(self): pass\n    def test_alabel(self): pass\n\ndef test_codec(): pass\n"
    assert defined_names("tests/test_idna.py", source) == (
        "tests/test_idna.py has the tests test_codec, test_encode, test_alabel."
    )
    assert defined_names("idna/core.py", source) == "idna/core.py defines IDNATests, test_codec."
    assert defined_names("tests/helpers.py", "class A: pass\n") == "tests/helpers.py defines A."


VALUE_TASKS = {
    "en": "Make the compiled-expression cache keep up to 256 expressions instead of 128.",
    "zh": "把编译后表达式的缓存上限从 128 改成 256。",
    "de": "Der Cache soll 256 statt 128 Ausdrücke halten.",
}


@pytest.mark.parametrize("language", sorted(VALUE_TASKS))
def test_a_change_writing_values_goes_to_the_file_binding_them(tmp_path: Path, language: str) -> None:
    """jm-edit-cache: the ranking's best file (visitor.py) binds neither 128 nor 256, and every
    edit of it was refused. The file whose binding line holds a value the task writes is
    changed, in any language; one digit alone points nowhere (the ranking decides)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "visitor.py").write_text("class Visitor:\n    depth = 2\n", encoding="utf-8")
    (tmp_path / "pkg" / "parser.py").write_text("class Parser:\n    _MAX_SIZE = 128\n", encoding="utf-8")

    def rank(root: Path, task: str, k: int) -> list[Ranked | str]:
        return [Ranked("pkg/visitor.py", 3.0), "pkg/parser.py"]

    reply = {"kind": "change a file", "targets": ["pkg/visitor.py"]}
    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    asyncio.run(
        guide.start(VALUE_TASKS[language], ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete)
    )
    assert guide.plan.targets == ("pkg/parser.py",)
    guide, _ = _guide(tmp_path, may_write=True, rank=rank)
    one_digit = "Make the visitor's depth 3 instead of 2."
    asyncio.run(guide.start(one_digit, ScriptedModel({"responses": [_reply(json.dumps(reply))]}).complete))
    assert guide.plan.targets == ("pkg/visitor.py",)
