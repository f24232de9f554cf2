"""The task suite's fifth half (pathspec 0.12.1, held out): the right and wrong reference answers,
edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a
public project shares: the pin, the targets, the project's size, the wiring), and what is this
half's own: the edit checker on a small project (docstrings and layout may differ, only the
named files may change), the version bump that may touch the changelog, and the counts it asks
being the project's. No network: the tests that need the real project skip when its pinned
sdist has not been fetched (``python -m bench.task_suite --half fifth`` fetches it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bench import task_checks, tasks_fifth

PIN = tasks_fifth.PIN
PAT = "pathspec/patterns/gitwildmatch.py"


# --- the edit checker, on a small project -----------------------------------------------------------------

UTIL = '''"""Utilities."""

NORMALIZE_PATH_SEPS = ["\\\\"]
"""
*NORMALIZE_PATH_SEPS* lists the separators to normalize.
"""


def normalize_file(file, separators=None):
\t"""Default is ``None`` for ``NORMALIZE_PATH_SEPS``."""
\tif separators is None:
\t\tseparators = NORMALIZE_PATH_SEPS
\treturn file
'''
SMALL = {"pathspec/util.py": UTIL.encode(), "README.rst": b"r\n", "CHANGES.rst": b"c\n"}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    for name, data in SMALL.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


def _rename(ws: Path) -> bool:
    check = task_checks.python_edit(
        "pathspec/util.py", (("NORMALIZE_PATH_SEPS", "SEPS"),), lambda: SMALL, may_change=("CHANGES.rst",)
    )
    return check("", ws)


@pytest.mark.parametrize(
    ("edited", "passes"),
    [
        (UTIL.replace("NORMALIZE_PATH_SEPS", "SEPS"), True),
        # the attribute's docstring and the function's may keep the old name; layout may differ
        (UTIL.replace("NORMALIZE_PATH_SEPS =", "SEPS =").replace("= NORMALIZE_PATH_SEPS", "= SEPS"), True),
        (UTIL.replace("NORMALIZE_PATH_SEPS", "SEPS").replace("\t", "    ") + "# renamed\n", True),
        (UTIL, False),  # nothing done
        (UTIL.replace("NORMALIZE_PATH_SEPS =", "SEPS ="), False),  # a use left behind
        (UTIL.replace("NORMALIZE_PATH_SEPS", "SEPS").replace("return file", "return None"), False),
        (UTIL.replace("NORMALIZE_PATH_SEPS", "SEPS") + "def broken(:\n", False),  # no longer parses
    ],
)
def test_the_python_edit_checker_wants_the_change_and_nothing_else(
    small: Path, edited: str, passes: bool
) -> None:
    (small / "pathspec" / "util.py").write_text(edited, encoding="utf-8")
    assert _rename(small) is passes


def test_the_python_edit_checker_allows_only_the_files_it_names(small: Path) -> None:
    (small / "pathspec" / "util.py").write_text(UTIL.replace("NORMALIZE_PATH_SEPS", "SEPS"))
    (small / "CHANGES.rst").write_text("renamed\n")  # allowed
    (small / "NOTES.md").write_text("- a new file is no change\n")
    assert _rename(small)
    (small / "README.rst").write_text("changed\n")
    assert not _rename(small)
    (small / "README.rst").unlink()
    assert not _rename(small)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ps-bytes-encoding": (("It is 'latin1'.", "Latin-1 (ISO-8859-1)."), ("'utf-8'", "ascii")),
    "ps-tox-command": (("python -m unittest {posargs}",), ("pytest -v", "nosetests")),
    "ps-sphinx": (("Sphinx==7.2.6",), ("Sphinx 7.2", "7.2.61")),
    "ps-follow-links": (
        (
            "Yes: follow_links defaults to None, which it turns into True.",
            "It follows them unless you pass follow_links=False.",
        ),
        ("No, it does not follow symlinks by default.", "No, follow_links is None so links aren't followed."),
    ),
    "ps-def-gitignorespec": (("pathspec/gitignore.py", "gitignore.py"), ("tests/test_04_gitignore.py",)),
    "ps-def-checkresult": (("pathspec/util.py", "In util.py."), ("tests/util.py", "pathspec/pathspec.py")),
    "ps-lookup-error": (("A KeyError.",), ("It returns None.", "LookupError")),
    "ps-register-name": (
        ("It is registered as 'gitwildmatch'.", "GitWildMatchPattern is registered under gitwildmatch"),
        ("As 'gitignore'.", "Under GitWildMatchPattern."),
    ),
    "ps-version": (("pathspec 0.12.1",), ("0.12.0", "0.12.10")),
    "ps-license": (("The Mozilla Public License 2.0.", "MPL 2.0"), ("MIT", "Apache 2.0")),
    "ps-python": (
        ("Python 3.8 and newer (>=3.8).", "3.8+", "Python 3.8 through 3.12"),
        ("3.7+", "3.9 or newer"),
    ),
    "ps-what": (
        (
            "It matches file paths against gitignore-style patterns.",
            "A utility library for gitignore style pattern matching of file paths.",
            "It tells which files a set of wildcard rules like a .gitignore selects.",
        ),
        ("It is a web framework.", "It parses command-line arguments."),
    ),
    "ps-entry": (("pathspec/__init__.py",), ("pathspec/patterns/__init__.py", "pathspec/pathspec.py")),
    "ps-cli": (
        (
            "No, it's only a library; there is no console script.",
            "It's just a library, no command-line tool.",
        ),
        (
            "Yes, it installs a `pathspec` command.",
            "Yes.",
            "It installs the `pathspec` command, which passes paths to the matcher.",
        ),
    ),
    "ps-build-backend": (("flit_core (flit_core.buildapi)",), ("setuptools", "hatchling")),
    "ps-author": (("Caleb P. Burns",), ("Guido van Rossum",)),
    "ps-count-package": (("6 .py files.", "Six."), ("8", "7 files")),
    "ps-count-all": (("8 in all.", "eight"), ("6", "7")),
    "ps-list-tests": (
        ("test_01_util.py, test_02_gitwildmatch.py, test_03_pathspec.py, test_04_gitignore.py",),
        ("test_01_util.py, test_03_pathspec.py",),
    ),
    "ps-doc-folder": (("doc/source",), ("doc", "docs/")),
    "ps-count-functions": (("15 top-level functions.", "fifteen"), ("13", "5")),
    "ps-count-util-classes": (("5 classes.", "five"), ("4", "6 classes")),
    "ps-zh-version": (("版本号是 0.12.1。",), ("版本号是 0.11.2。",)),
    "ps-zh-def": (("在 pathspec/patterns/gitwildmatch.py 里。",), ("在 tests/test_02_gitwildmatch.py 里。",)),
    "ps-zh-count": (("有 4 个。", "四个"), ("有 5 个。",)),
    "ps-zh-classes": (("定义了 3 个类。", "三个类"), ("两个类。", "4")),
    "ps-zh-license": (("Mozilla 公共许可证 2.0（MPL 2.0）",), ("MIT 协议",)),
    "ps-zh-what": (
        ("用 gitignore 风格的模式匹配文件路径。", "判断哪些文件被 .gitignore 规则选中。"),
        ("这是一个网页框架。", "这个项目用来生成和管理 Sphinx 文档文件。"),
    ),
    "ps-zh-python": (("最低 Python 3.8。", ">=3.8"), ("Python 3.6",)),
    "ps-fr-def": (("Dans pathspec/pattern.py.",), ("Dans pathspec/patterns/gitwildmatch.py.",)),
    "ps-fr-count": (("Il y a cinq fichiers.", "5"), ("quatre", "4")),
    "ps-fr-what": (
        ("Elle teste si des chemins de fichiers correspondent à des motifs de style gitignore.",),
        ("C'est un framework web.",),
    ),
    "ps-para-release": (("0.12.1",), ("0.1.2",)),
    "ps-para-find": (("normalize_file in pathspec/util.py",), ("tests/util.py", "pathspec/pathspec.py")),
    "ps-para-count": (("4 test modules.",), ("6 modules",)),
    "ps-para-license": (("Under the Mozilla Public License, version 2.0.",), ("Under the BSD license.",)),
}

# edit tasks: the right edit and wrong ones, each from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "ps-edit-version": (
        "pathspec/_meta.py",
        lambda t: t.replace('__version__ = "0.12.1"', "__version__ = '0.12.2'"),
        (
            lambda t: t.replace('__version__ = "0.12.1"', '__version__ = "0.13.0"'),
            lambda t: t.replace('__version__ = "0.12.1"', '__version__ = "0.12.2"').replace("MPL 2.0", "MIT"),
        ),
    ),
    "ps-edit-encoding": (
        PAT,
        lambda t: t.replace("_BYTES_ENCODING = 'latin1'", '_BYTES_ENCODING = "utf-8"'),
        (
            lambda t: t.replace("'latin1'", "'utf8'"),
            lambda t: t.replace("_BYTES_ENCODING = 'latin1'", "_BYTES_ENCODING = 'utf-8'").replace(
                "'ps_d'", "'ps_x'"
            ),
        ),
    ),
    "ps-edit-rename": (
        "pathspec/util.py",
        lambda t: t.replace("NORMALIZE_PATH_SEPS", "PATH_SEPARATORS_TO_NORMALIZE"),
        (
            lambda t: t.replace("NORMALIZE_PATH_SEPS = [", "PATH_SEPARATORS_TO_NORMALIZE = ["),  # a use left
            lambda t: t.replace("NORMALIZE_PATH_SEPS", "PATH_SEPS"),
        ),
    ),
    "ps-edit-python": (
        "pyproject.toml",
        lambda t: t.replace('requires-python = ">=3.8"', "requires-python = '>= 3.9'".replace(" 3", "3")),
        (
            lambda t: t.replace('requires-python = ">=3.8"', 'requires-python = ">=3.10"'),
            lambda t: t.replace('requires-python = ">=3.8"', 'requires-python = ">=3.9"').replace(
                '\t"Programming Language :: Python :: 3.8",\n', ""
            ),
        ),
    ),
    "ps-zh-edit": (
        PAT,
        lambda t: t.replace("_DIR_MARK = 'ps_d'", "_DIR_MARK = 'ps_dir'"),
        (
            lambda t: t.replace("_DIR_MARK", "_DIR_MARKER"),
            lambda t: t.replace("_DIR_MARK = 'ps_d'", "_DIR_MARK = 'ps_dir'").replace("'latin1'", "'utf-8'"),
        ),
    ),
}

# notes tasks: right notes and wrong ones
NOTES: dict[str, tuple[str, str]] = {
    "ps-notes-three": (
        "- pathspec/gitignore.py: GitIgnoreSpec, which replicates .gitignore behavior\n"
        "- pathspec/pattern.py: the abstract Pattern base and RegexPattern (regular expressions)\n"
        "- pathspec/_meta.py: project meta-data: author, credits, license and version\n",
        "- pathspec/gitignore.py: GitIgnoreSpec replicates .gitignore behavior\n"
        "- pattern.py: the Pattern class\n- _meta.py: the _meta module\n",
    ),
    "ps-notes-package": (
        "- __init__.py: imports the public classes (PathSpec, GitIgnoreSpec) and the version\n"
        "- _meta.py: meta-data: author, copyright, credits, license, version\n"
        "- gitignore.py: GitIgnoreSpec to replicate .gitignore behavior\n"
        "- pathspec.py: PathSpec, a wrapper around a list of compiled patterns to match files\n"
        "- pattern.py: the abstract Pattern base class and RegexPattern\n"
        "- util.py: utility functions to normalize paths, walk trees (iter_tree) and register patterns\n",
        "- gitignore.py: GitIgnoreSpec\n- pathspec.py: PathSpec\n- util.py: utility functions\n",
    ),
    "ps-zh-notes": (
        "- test_01_util.py: 测试工具函数，如 iter_tree 和 normalize_file\n"
        "- test_02_gitwildmatch.py: 测试 GitWildMatchPattern 的通配模式转正则\n"
        "- test_03_pathspec.py: 测试 PathSpec 的匹配\n"
        "- test_04_gitignore.py: 测试 GitIgnoreSpec 的 gitignore 行为\n",
        "- test_01_util.py: 测试\n- test_02_gitwildmatch.py: 测试\n- test_03_pathspec.py: 测试\n"
        "- test_04_gitignore.py: 测试\n",
    ),
    "ps-fr-notes": (
        "- pathspec/util.py : fonctions utilitaires : normalize_file, iter_tree, register_pattern\n"
        "- pathspec/patterns/gitwildmatch.py : GitWildMatchPattern, le motif wildmatch de Git en regex\n",
        "- pathspec/util.py : fonctions utilitaires pour normaliser les chemins\n",
    ),
}


# --- what is this half's own, on the real project ----------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = PIN.folder / PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half fifth fetches it)"
        )
    return PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_fifth.build_workspace(tmp_path, archive)
    return tmp_path


def test_the_version_bump_may_also_touch_the_changelog_and_metadata(project: Path) -> None:
    task = next(t for t in tasks_fifth.TASKS if t.name == "ps-edit-version")
    meta = project / "pathspec" / "_meta.py"
    meta.write_text(meta.read_text(encoding="utf-8").replace("0.12.1", "0.12.2"), encoding="utf-8")
    for name in ("PKG-INFO", "CHANGES.rst"):
        text = (project / name).read_text(encoding="utf-8")
        (project / name).write_text(text.replace("0.12.1", "0.12.2", 1), encoding="utf-8")
    assert task.check("Done.", project)
    (project / "setup.cfg").write_text("changed\n", encoding="utf-8")
    assert not task.check("Done.", project)


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    pkg = project / "pathspec"
    assert len(list(pkg.glob("*.py"))) == 6 and len(list(pkg.rglob("*.py"))) == 8
    assert len(list((project / "tests").glob("test_*.py"))) == 4
    assert len([p for p in (project / "doc" / "source").iterdir() if p.is_file()]) == 5
