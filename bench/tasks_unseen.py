"""The suite's third half, ``unseen``: tasks written after the Guide, profile and retrieval
changes and never tuned on, on a public project nobody here wrote, Python-Markdown 3.7 (its
registry sdist: about 385 files, 70 of them .py), plus a few paraphrases of the first halves'
tasks on the shop project.

The sdist is a ``bench/sdist.py`` pin: downloaded at bench time with ``pip download --no-deps
--no-binary :all:`` and checked against its pinned sha256 (never committed); its files are
unpacked into each task's fresh workspace. Tasks of every kind: questions that name a file or a
symbol, questions that name none ("what version is this"), folder questions, edits (the checker
also parses the file), a note per file of a set, tasks in Chinese, and paraphrases of the first
halves' tasks. Each task lists its ``targets``: the files or folders that answer it (for
retrieval's recall).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bench.notes_check import notes_cover
from bench.sdist import Pinned
from bench.task_checks import read_text
from bench.tasks import Checker, Task, says

HALF = "unseen"
PROJECT = "markdown"
PIN = Pinned("markdown", "3.7", "2ae2471477cfd02dbbf038d5d9bc226d40def84b4fe2986e49b59b6b472bbed2")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """Python-Markdown 3.7 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


# --- checkers --------------------------------------------------------------------------------


def python_file(path: str, *patterns: str, absent: tuple[str, ...] = ()) -> Checker:
    """``path`` still parses as Python and has every pattern and none of ``absent`` (multi-line
    regular expressions)."""

    def check(_answer: str, ws: Path) -> bool:
        text = read_text(ws / path)
        if text is None or not _parses(text):
            return False
        return all(re.search(p, text, re.M) for p in patterns) and not any(
            re.search(p, text, re.M) for p in absent
        )

    return check


def version_is(path: str, expected: str) -> Checker:
    """``path`` parses, and the ``__version__`` it ends with is ``expected``: a string written
    as such, or ``_get_version(__version_info__)`` of its tuple (Python-Markdown's own rule)."""

    def check(_answer: str, ws: Path) -> bool:
        text = read_text(ws / path)
        return text is not None and _parses(text) and meta_version(text) == expected

    return check


def meta_version(source: str) -> str | None:
    """The version a ``__meta__.py`` sets, read without running it."""
    info: tuple[object, ...] | None = None
    version: str | None = None
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if target.id == "__version_info__":
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            info = tuple(value) if isinstance(value, tuple) else None
        elif target.id == "__version__":
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                version = node.value.value
            elif isinstance(node.value, ast.Call) and info is not None:
                version = _pep440(info)
    return version


def _pep440(info: tuple[object, ...]) -> str | None:
    if len(info) != 5:
        return None
    parts = 2 if info[2] == 0 else 3
    text = ".".join(map(str, info[:parts]))
    if info[3] == "dev":
        return f"{text}.dev{info[4]}"
    if info[3] != "final":
        return f"{text}{ {'alpha': 'a', 'beta': 'b', 'rc': 'rc'}.get(str(info[3]), '?') }{info[4]}"
    return text


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# --- the tasks -------------------------------------------------------------------------------

_V37 = r"(?<![\d.])3\.7(?:\.0)?(?![\d]|\.\d)"
_META = ("markdown/__meta__.py", "PKG-INFO", "Markdown.egg-info/PKG-INFO")
_SCRIPTS_FACTS: dict[str, tuple[str, ...]] = {
    "scripts/gen_ref_nav.py": ("reference", "nav", "mkdocs", "page", "导航", "参考", "文档"),
    "scripts/griffe_extensions.py": ("griffe", "deprecat", "docstring", "priority", "扩展", "弃用", "文档"),
}


def _md(name: str, kind: str, prompt: str, check: Checker, targets: tuple[str, ...], **kw: object) -> Task:
    return Task(name, HALF, kind, prompt, check, project=PROJECT, targets=targets, **kw)  # type: ignore[arg-type]


def _shop(name: str, kind: str, prompt: str, check: Checker, targets: tuple[str, ...], **kw: object) -> Task:
    return Task(name, HALF, kind, prompt, check, targets=targets, **kw)  # type: ignore[arg-type]


TASKS: tuple[Task, ...] = (
    # questions that name a file or a symbol
    _md("md-tab-length", "question", "What is the default tab_length in markdown/core.py?",
        says(r"(?<![\d.])4(?![\d.]\d)|four"), ("markdown/core.py",)),
    _md("md-pipe-right", "question", "What is the value of PIPE_RIGHT in markdown/extensions/tables.py?",
        says(r"(?<![\d.])2(?![\d.]\d)|two"), ("markdown/extensions/tables.py",)),
    _md("md-lang-prefix", "question", "What does fenced_code.py use as the default lang_prefix?",
        says(r"language-"), ("markdown/extensions/fenced_code.py",)),
    _md("md-def-slugify", "find", "Which file defines the function slugify?",
        says(r"toc\.py"), ("markdown/extensions/toc.py",)),
    _md("md-def-hr", "find", "In which file is the class HRProcessor defined?",
        says(r"blockprocessors\.py"), ("markdown/blockprocessors.py",)),
    _md("md-def-xhtml", "find", "Which module has the function to_xhtml_string?",
        says(r"serializers"), ("markdown/serializers.py",)),
    # questions that name no file
    _md("md-version", "question", "What version of this project is this?", says(_V37), _META),
    _md("md-license", "question", "Under which license is this project distributed?",
        says(r"\bBSD\b"), ("LICENSE.md", "pyproject.toml", "PKG-INFO")),
    _md("md-python", "question", "What is the oldest Python version this project supports?",
        says(r"(?<![\d.])3\.8(?![\d])"), ("pyproject.toml", "PKG-INFO", "Markdown.egg-info/PKG-INFO")),
    _md("md-main-class", "find",
        "Which file holds the class that users call convert() on to turn Markdown text into HTML?",
        says(r"core\.py"), ("markdown/core.py",)),
    # folder questions
    _md("md-count-extensions", "count", "How many .py files are in the folder markdown/extensions?",
        says(r"(?<![\d.])19(?![\d])|nineteen"), ("markdown/extensions",)),
    _md("md-list-tests", "count",
        "List the .py files directly inside the tests folder (not in its subfolders).",
        says(r"test_apis", r"test_extensions", r"test_legacy", r"test_meta"), ("tests",)),
    _md("md-count-basic", "count", "How many .txt files does tests/basic contain?",
        says(r"(?<![\d.])18(?![\d])|eighteen"), ("tests/basic",)),
    # edits
    _md("md-edit-pipe", "edit", "In markdown/extensions/tables.py, change PIPE_RIGHT from 2 to 4.",
        python_file("markdown/extensions/tables.py", r"^PIPE_RIGHT = 4\b", absent=(r"^PIPE_RIGHT = 2\b",)),
        ("markdown/extensions/tables.py",), allow_write=True),
    _md("md-edit-version", "edit", "Change this project's version to 3.7.1.",
        version_is("markdown/__meta__.py", "3.7.1"), ("markdown/__meta__.py",), allow_write=True),
    _md("md-edit-rename", "edit",
        "In markdown/extensions/admonition.py, rename the class AdmonitionProcessor to CalloutProcessor.",
        python_file("markdown/extensions/admonition.py", r"^class CalloutProcessor\b",
                    absent=(r"^class AdmonitionProcessor\b",)),
        ("markdown/extensions/admonition.py",), allow_write=True),
    # a note per file of a set
    _md("md-notes-two", "notes",
        "Summarise markdown/extensions/meta.py and markdown/extensions/nl2br.py in one line each, "
        "written into the notes with the note tool.",
        notes_cover({
            "markdown/extensions/meta.py": ("metadata", "meta-data", "meta data", "yaml", "key", "document"),
            "markdown/extensions/nl2br.py": ("newline", "new line", "line break", "<br", "break", "hard"),
        }),
        ("markdown/extensions/meta.py", "markdown/extensions/nl2br.py"), max_iterations=10),
    _md("md-notes-scripts", "notes",
        "Write a one-line note for each .py file in the scripts folder, using the note tool.",
        notes_cover(_SCRIPTS_FACTS), ("scripts",), max_iterations=10),
    # in Chinese
    _md("md-zh-version", "question", "这个项目是什么版本？", says(_V37), _META),
    _md("md-zh-def", "find", "哪个文件定义了函数 build_url？", says(r"wikilinks\.py"),
        ("markdown/extensions/wikilinks.py",)),
    _md("md-zh-count", "count", "markdown/extensions 文件夹里有多少个 .py 文件？",
        says(r"(?<![\d.])19(?![\d])|十九"), ("markdown/extensions",)),
    _md("md-zh-edit", "edit", "把 markdown/extensions/tables.py 里的 PIPE_LEFT 从 1 改成 3。",
        python_file("markdown/extensions/tables.py", r"^PIPE_LEFT = 3\b", absent=(r"^PIPE_LEFT = 1\b",)),
        ("markdown/extensions/tables.py",), allow_write=True),
    _md("md-zh-tab", "question", "markdown/core.py 中 tab_length 的默认值是多少？",
        says(r"(?<![\d.])4(?![\d.]\d)|四"), ("markdown/core.py",)),
    _md("md-zh-license", "question", "这个项目用的是什么许可证？", says(r"\bBSD\b"),
        ("LICENSE.md", "pyproject.toml", "PKG-INFO")),
    _md("md-zh-notes", "notes", "逐个读 scripts/ 下所有 .py 文件，总结每个的职责，写进 notes.md",
        notes_cover(_SCRIPTS_FACTS), ("scripts",), max_iterations=10),
    # paraphrases of the first halves' tasks
    _md("md-readme", "question", "In one sentence, what is this project?",
        says(r"markdown", r"html|convert|pars|implementation|render"), ("README.md",)),
    _md("md-def-parser", "find", "Where is the class BlockParser defined?", says(r"blockparser\.py"),
        ("markdown/blockparser.py",)),
    _md("md-count-functions", "count", "How many top-level functions does markdown/serializers.py define?",
        says(r"(?<![\d.])8(?![\d])|eight"), ("markdown/serializers.py",)),
    _shop("shop-tax-words", "question", "Tell me the tax rate the shop's pricing code uses.",
          says(r"0\.2\b|20\s*%"), ("src/shop/pricing.py",)),
    _shop("shop-version-words", "question", "Which version is this shop library?", says(r"1\.4\.2"),
          ("src/shop/__init__.py",)),
    _shop("shop-count-words", "count",
          "How many .py files does the folder src/shop hold, __init__.py included?",
          says(r"(?<![\d.])7(?![\d])|seven"), ("src/shop",)),
    _shop("shop-edit-words", "edit", "Set the page size in the shop's settings to 40.",
          python_file("src/shop/settings.py", r"^PAGE_SIZE = 40\b", absent=(r"^PAGE_SIZE = 25\b",)),
          ("src/shop/settings.py",), allow_write=True),
    _shop("shop-zh-find", "find", "哪个文件里有 check_password 函数？", says(r"users\.py"),
          ("src/shop/users.py",)),
)  # fmt: skip
