"""The suite's fifth half, ``fifth``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on a fifth public project nobody here wrote: pathspec 0.12.1 (the
gitignore-style path matching library; its registry sdist: 33 files, 17 of them .py, in a
``pathspec`` package with a ``patterns`` subpackage, ``tests/`` and ``doc/``).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, its entry point and whether it has a command line), folder questions, counts in a
file, edits (``bench/task_checks.py``: the edited file parsed and compared with the pinned
original with only the asked change made, every other file untouched), a note per file of a set
(named files, a glob, a folder in words); in English, Chinese and French, and English
paraphrases of this half's own tasks. Each task lists its ``targets``: the files or folders that
answer it.
"""

from __future__ import annotations

from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import file_named, none_of, number
from bench.tasks import Task, says

HALF = "fifth"
PROJECT = "pathspec"
PIN = Pinned("pathspec", "0.12.1", "a482d51503a1ab33b1c67a6c3813a26953dbdc71c31dacaef9a838c4e29f5712")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """pathspec 0.12.1 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


# --- the tasks -------------------------------------------------------------------------------

_PKG = "pathspec"
_PAT = "pathspec/patterns/gitwildmatch.py"
_V = r"(?<![\d.])0\.12\.1(?![\d]|\.\d)"
_PY38 = r"(?<![\d.])3\.8(?![\d])"
_META = ("pathspec/_meta.py", "PKG-INFO")
_LICENSE = ("LICENSE", "pyproject.toml", "setup.cfg", "PKG-INFO")
_PYTHON = ("pyproject.toml", "setup.cfg", "PKG-INFO")
_MPL = says(r"\bMPL\b|Mozilla")
# What the project does: matching file paths against gitignore-style patterns, in any words.
_WHAT = says(
    r"gitignore|\bgit\b|wildmatch|pattern|glob|wildcard|匹配|模式|通配|motif|correspond",
    r"path|file|路径|文件|chemin|fichier",
)
_UTIL = file_named("util.py", "tests/util.py")
_INIT = file_named("__init__.py", "tests/__init__.py", "patterns/__init__.py")

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (another spelling, or the words a Chinese or French note would use).
_FACTS: dict[str, tuple[str, ...]] = {
    f"{_PKG}/__init__.py": ("import", "gitignorespec", "deprecated", "version", "public"),
    f"{_PKG}/_meta.py": ("meta-data", "author", "copyright", "credits", "license", "version"),
    f"{_PKG}/gitignore.py": ("gitignore", "git", "replicate", "behavior"),
    f"{_PKG}/pathspec.py": ("wrapper", "patterns", "match", "object oriented", "compiled", "check"),
    f"{_PKG}/pattern.py": ("regex", "regular expression", "base", "abstract"),
    f"{_PKG}/util.py": ("utility", "normalize", "iter_tree", "walk", "register", "separator", "match_file"),
    _PAT: ("wildmatch", "git", "rsync", "regular expression", "regex"),
    "tests/test_01_util.py": ("util", "iter_tree", "normalize", "match_file"),
    "tests/test_02_gitwildmatch.py": ("gitwildmatch", "wildmatch", "regex"),
    "tests/test_03_pathspec.py": ("pathspec", "match", "check"),
    "tests/test_04_gitignore.py": ("gitignore", "gitignorespec", "git"),
}
_TRANSLATED: dict[str, tuple[str, ...]] = {
    f"{_PKG}/__init__.py": ("导入", "导出", "入口", "版本", "弃用"),
    f"{_PKG}/_meta.py": ("metadata", "元数据", "作者", "版本", "许可"),
    f"{_PKG}/gitignore.py": ("忽略",),
    f"{_PKG}/pathspec.py": ("匹配", "模式", "封装"),
    f"{_PKG}/pattern.py": ("正则", "基类", "抽象"),
    f"{_PKG}/util.py": ("工具", "辅助", "路径", "遍历", "注册", "utilitaire", "chemin", "normalis"),
    _PAT: ("通配", "正则", "expression régulière", "joker"),
    "tests/test_01_util.py": ("工具", "路径", "遍历", "规范化"),
    "tests/test_02_gitwildmatch.py": ("通配", "正则"),
    "tests/test_03_pathspec.py": ("匹配", "模式"),
    "tests/test_04_gitignore.py": ("忽略",),
}


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_MODULES = tuple(p for p in _FACTS if p.count("/") == 1 and p.startswith(f"{_PKG}/"))
_TEST_MODULES = tuple(p for p in _FACTS if p.startswith("tests/"))


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("ps-bytes-encoding", "question",
       "What is _BYTES_ENCODING set to in pathspec/patterns/gitwildmatch.py?",
       says(r"latin[-_ ]?1|iso[-_ ]?8859[-_ ]?1"), (_PAT,)),
    _t("ps-tox-command", "question", "What command does tox.ini use to run the tests?",
       says(r"unittest"), ("tox.ini",)),
    _t("ps-sphinx", "question", "Which Sphinx version is pinned in doc/requirements.txt?",
       says(r"(?<![\d.])7\.2\.6(?![\d]|\.\d)"), ("doc/requirements.txt",)),
    _t("ps-follow-links", "question", "In pathspec/util.py, if I call iter_tree_entries without "
       "follow_links, does it follow symlinks to directories?",
       none_of(says(r"\byes\b|\btrue\b|follows|does follow"),
               r"^\W*no\b|not follow|n't follow|\bno,"),
       (f"{_PKG}/util.py",)),
    # questions that name a symbol
    _t("ps-def-gitignorespec", "find", "Which file defines the class GitIgnoreSpec?",
       file_named("gitignore.py"), (f"{_PKG}/gitignore.py",)),
    _t("ps-def-checkresult", "find", "Where is CheckResult defined?", _UTIL, (f"{_PKG}/util.py",)),
    _t("ps-lookup-error", "question", "What does lookup_pattern raise when no pattern factory is "
       "registered under the name?", says(r"KeyError"), (f"{_PKG}/util.py",)),
    _t("ps-register-name", "question", "Under what name is GitWildMatchPattern registered?",
       says(r"(?<!\w)gitwildmatch(?![\w.])"), (_PAT,)),
    # questions that name neither
    _t("ps-version", "question", "What version is this?", says(_V), _META),
    _t("ps-license", "question", "What license is this project under?", _MPL, _LICENSE),
    _t("ps-python", "question", "Which Python versions does it support?", says(_PY38), _PYTHON),
    _t("ps-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.rst",)),
    _t("ps-entry", "find", "When I `import pathspec`, which file runs and gives me PathSpec and the "
       "other public names?", _INIT, (f"{_PKG}/__init__.py",)),
    _t("ps-cli", "question", "Does installing this give me a command-line tool, or is it only a library?",
       none_of(says(r"\bno\b|\bnot\b|n't|only a library|just a library|library only|没有|不|\bpas\b|aucun"),
               r"\byes\b"),
       ("pyproject.toml", "setup.cfg")),
    _t("ps-build-backend", "question", "Which build backend does the project build with?", says(r"flit"),
       ("pyproject.toml",)),
    _t("ps-author", "question", "Who is the author of this library?", says(r"Caleb|Burns"), _META),
    # folder questions
    _t("ps-count-package", "count", "How many .py files are directly in the pathspec folder, "
       "not counting its patterns subfolder?", number(6, "six"), (_PKG,)),
    _t("ps-count-all", "count", "How many .py files does the pathspec package have in all, its "
       "subpackage included?", number(8, "eight"), (_PKG, f"{_PKG}/patterns")),
    _t("ps-list-tests", "count", "List the test files in tests/.",
       says(r"test_01_util", r"test_02_gitwildmatch", r"test_03_pathspec", r"test_04_gitignore"),
       ("tests",)),
    _t("ps-doc-folder", "find", "Which folder holds the Sphinx documentation sources (conf.py and "
       "the .rst pages)?", says(r"doc[/\\]source"), ("doc/source",)),
    # counts in a file
    _t("ps-count-functions", "count", "How many top-level functions (not methods) does pathspec/util.py "
       "define?", number(15, "fifteen"), (f"{_PKG}/util.py",)),
    _t("ps-count-util-classes", "count", "How many classes are defined in util.py of the pathspec package?",
       number(5, "five"), (f"{_PKG}/util.py",)),
    # edits
    _edit("ps-edit-version", "Bump the version to 0.12.2.",
          python_edit(f"{_PKG}/_meta.py", (('__version__ = "0.12.1"', '__version__ = "0.12.2"'),),
                      may_change=("PKG-INFO", "CHANGES.rst", "README-dist.rst")),
          (f"{_PKG}/_meta.py",)),
    _edit("ps-edit-encoding", "In pathspec/patterns/gitwildmatch.py, change _BYTES_ENCODING from "
          "'latin1' to 'utf-8'.",
          python_edit(_PAT, (("_BYTES_ENCODING = 'latin1'", "_BYTES_ENCODING = 'utf-8'"),)), (_PAT,)),
    _edit("ps-edit-rename", "Rename the constant NORMALIZE_PATH_SEPS to PATH_SEPARATORS_TO_NORMALIZE "
          "everywhere it is used.",
          python_edit(f"{_PKG}/util.py", (("NORMALIZE_PATH_SEPS", "PATH_SEPARATORS_TO_NORMALIZE"),)),
          (f"{_PKG}/util.py",)),
    _edit("ps-edit-python", 'In pyproject.toml, raise requires-python to ">=3.9".',
          toml_edit("pyproject.toml", (('requires-python = ">=3.8"', 'requires-python = ">=3.9"'),),
                    may_change=("setup.cfg", "PKG-INFO", "CHANGES.rst")),
          ("pyproject.toml",)),
    # a note per file of a set
    _notes("ps-notes-three", "Write a one-line note for each of pathspec/gitignore.py, pathspec/pattern.py "
           "and pathspec/_meta.py saying what it is for.",
           (f"{_PKG}/gitignore.py", f"{_PKG}/pattern.py", f"{_PKG}/_meta.py"),
           (f"{_PKG}/gitignore.py", f"{_PKG}/pattern.py", f"{_PKG}/_meta.py")),
    _notes("ps-notes-package", "Go through the Python files sitting directly in the pathspec package "
           "folder (skip the patterns subfolder) and note what each one does, one line per file.",
           _MODULES, (_PKG,)),
    # in Chinese
    _t("ps-zh-version", "question", "这个包现在的版本号是多少？", says(_V), _META),
    _t("ps-zh-def", "find", "GitWildMatchPatternError 这个异常类是在哪个文件里定义的？",
       file_named("gitwildmatch.py"), (_PAT,)),
    _t("ps-zh-count", "count", "tests 目录下有几个 test_ 开头的测试文件？", number(4, "四"), ("tests",)),
    _t("ps-zh-classes", "count", "pathspec/pattern.py 里一共定义了几个类？", number(3, "三"),
       (f"{_PKG}/pattern.py",)),
    _t("ps-zh-license", "question", "这个项目用的什么开源协议？", _MPL, _LICENSE),
    _t("ps-zh-what", "question", "这个库是干嘛用的？一句话说下。", _WHAT, ("README.rst",)),
    _t("ps-zh-python", "question", "这个库最低支持到 Python 几？", says(_PY38), _PYTHON),
    _edit("ps-zh-edit", "把 gitwildmatch.py 里的 _DIR_MARK 从 'ps_d' 改成 'ps_dir'，别的不要动。",
          python_edit(_PAT, (("_DIR_MARK = 'ps_d'", "_DIR_MARK = 'ps_dir'"),)), (_PAT,)),
    _notes("ps-zh-notes", "帮我过一遍 tests/test_*.py，每个测试文件测的是什么，各用一行记到笔记里。",
           _TEST_MODULES, ("tests",)),
    # in French
    _t("ps-fr-def", "find", "Dans quel fichier la classe RegexPattern est-elle définie ?",
       file_named("pattern.py"), (f"{_PKG}/pattern.py",)),
    _t("ps-fr-count", "count", "Combien de fichiers y a-t-il dans doc/source ?", number(5, "cinq"),
       ("doc/source",)),
    _t("ps-fr-what", "question", "À quoi sert cette bibliothèque, en une phrase ?", _WHAT, ("README.rst",)),
    _notes("ps-fr-notes", "Note en une ligne le rôle de pathspec/util.py et celui de "
           "pathspec/patterns/gitwildmatch.py.", (f"{_PKG}/util.py", _PAT), (f"{_PKG}/util.py", _PAT)),
    # English paraphrases of this half's tasks
    _t("ps-para-release", "question", "Which release of pathspec is checked out here?", says(_V), _META),
    _t("ps-para-find", "find", "I need the code that turns Windows backslashes in a path into forward "
       "slashes. Which file is it in?", _UTIL, (f"{_PKG}/util.py",)),
    _t("ps-para-count", "count", "How many test_*.py modules does the tests folder hold?",
       number(4, "four"), ("tests",)),
    _t("ps-para-license", "question", "Under what terms may I redistribute pathspec?", _MPL, _LICENSE),
)  # fmt: skip
