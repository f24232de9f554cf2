"""The task suite's fifth half (pathspec 0.12.1, held out): its pin is used only when the archive
is the pinned file; every task's checker passes a right reference answer (or edit, or notes) and
fails a wrong one; the edit checkers want the asked change and nothing else; the targets exist in
the unpacked project. No network here: the download is a fake that writes an archive into the
folder, as pip does; the tests that need the real project skip when its pinned sdist has not
been fetched (``python -m bench.task_suite --half fifth`` fetches it)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, sdist, task_checks, task_suite, tasks_fifth
from hypothesis import given
from hypothesis import strategies as st

PIN = tasks_fifth.PIN
PAT = "pathspec/patterns/gitwildmatch.py"


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _fake_download(members: dict[str, bytes]) -> tuple[Callable[[Path], None], list[Path]]:
    calls: list[Path] = []

    def download(folder: Path) -> None:
        calls.append(folder)
        _tar(folder / PIN.filename, members)

    return download, calls


# --- the pin ---------------------------------------------------------------------------------


def test_a_download_that_is_not_the_pinned_file_is_refused_and_removed(tmp_path: Path) -> None:
    download, calls = _fake_download({"pathspec-0.12.1/README.rst": b"not the real one"})
    with pytest.raises(sdist.SdistError, match="is not the pinned"):
        PIN.fetch(tmp_path, download)
    assert not (tmp_path / PIN.filename).exists() and len(calls) == 1


def test_a_cached_file_that_is_not_the_pinned_one_is_fetched_again(tmp_path: Path) -> None:
    (tmp_path / PIN.filename).write_bytes(b"damaged")
    download, calls = _fake_download({"pathspec-0.12.1/x": b"x"})
    with pytest.raises(sdist.SdistError):
        PIN.fetch(tmp_path, download)
    assert len(calls) == 1


def test_a_verified_download_is_kept_used_again_and_unpacked(tmp_path: Path) -> None:
    download, calls = _fake_download({"pathspec-0.12.1/pathspec/util.py": b"x = 1\n"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    download(scratch)
    pin = dataclasses.replace(
        PIN, sha256=hashlib.sha256((scratch / PIN.filename).read_bytes()).hexdigest(), folder=tmp_path / "c"
    )
    calls.clear()
    first = pin.fetch(download=download)
    second = pin.fetch(download=download)
    assert first == second == tmp_path / "c" / PIN.filename and len(calls) == 1
    assert pin.build(tmp_path / "ws", first) == ["pathspec/util.py"]
    assert (tmp_path / "ws" / "pathspec" / "util.py").read_text() == "x = 1\n"


def test_a_download_that_leaves_nothing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(sdist.SdistError, match="left no"):
        PIN.fetch(tmp_path, lambda folder: None)


def test_the_pin_is_a_sha256_of_the_named_version() -> None:
    assert len(PIN.sha256) == 64 and int(PIN.sha256, 16) >= 0
    assert PIN.filename == "pathspec-0.12.1.tar.gz" and PIN.folder == sdist.CACHE_DIR


# --- the shared checkers ---------------------------------------------------------------------

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


def test_a_file_named_elsewhere_is_not_the_file() -> None:
    check = task_checks.file_named("util.py", "tests/util.py")
    assert check("pathspec/util.py", Path("."))
    assert check("It is in util.py.", Path("."))
    assert not check("tests/util.py", Path("."))
    assert not check("test_01_util.py", Path("."))


# --- every task: a right reference passes, a wrong one fails -----------------------------------

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


def test_every_task_has_a_reference() -> None:
    names = [t.name for t in tasks_fifth.TASKS]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted([*ANSWERS, *EDITS, *NOTES])
    for task in tasks_fifth.TASKS:
        expected = {"edit": set(EDITS), "notes": set(NOTES)}.get(task.kind, set(ANSWERS))
        assert task.name in expected, task.name


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_answer_checkers(name: str, tmp_path: Path) -> None:
    task = next(t for t in tasks_fifth.TASKS if t.name == name)
    rights, wrongs = ANSWERS[name]
    for right in rights:
        assert task.check(right, tmp_path), right
    for wrong in wrongs:
        assert not task.check(wrong, tmp_path), wrong
    assert not task.check("", tmp_path)


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


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_edit_checkers_on_the_real_project(name: str, project: Path) -> None:
    task = next(t for t in tasks_fifth.TASKS if t.name == name)
    path, right, wrongs = EDITS[name]
    original = (project / path).read_text(encoding="utf-8")
    assert right(original) != original
    assert not task.check("Done.", project)
    (project / path).write_text(right(original), encoding="utf-8")
    assert task.check("Done.", project)
    (project / "NOTES.md").write_text("- an unrelated new file\n", encoding="utf-8")
    assert task.check("Done.", project)
    for wrong in wrongs:
        (project / path).write_text(wrong(original), encoding="utf-8")
        assert not task.check("Done.", project)
    (project / path).write_text(right(original)[:-40] + "(\n", encoding="utf-8")
    assert not task.check("Done.", project)  # no longer parses
    (project / path).write_text(right(original), encoding="utf-8")
    (project / "README.rst").write_text("changed too\n", encoding="utf-8")
    assert not task.check("Done.", project)  # another file changed


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


@pytest.mark.parametrize("name", sorted(NOTES))
def test_the_notes_checkers_on_the_real_project(name: str, project: Path) -> None:
    task = next(t for t in tasks_fifth.TASKS if t.name == name)
    right, wrong = NOTES[name]
    assert not task.check("", project)
    (project / "NOTES.md").write_text(right, encoding="utf-8")
    assert task.check("", project)
    assert notes_check.count_wrong(project, task.asks_for_notes) == 0  # the reference is grounded
    (project / "NOTES.md").write_text(wrong, encoding="utf-8")
    assert not task.check("", project)


def test_the_targets_exist_and_no_task_passes_by_doing_nothing(project: Path) -> None:
    for task in tasks_fifth.TASKS:
        assert task.targets and all((project / t).exists() for t in task.targets), task.name
        assert not task.check("", project), task.name
        assert notes_check.count_wrong(project, task.asks_for_notes) == 0


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    pkg = project / "pathspec"
    assert len(list(pkg.glob("*.py"))) == 6 and len(list(pkg.rglob("*.py"))) == 8
    assert len(list((project / "tests").glob("test_*.py"))) == 4
    assert len([p for p in (project / "doc" / "source").iterdir() if p.is_file()]) == 5


def test_the_project_is_of_the_size_asked_for_and_pure_python(project: Path) -> None:
    files = [p for p in project.rglob("*") if p.is_file()]
    assert 20 <= len(files) <= 80 and 10 <= sum(p.suffix == ".py" for p in files) <= 60
    assert not [p for p in files if p.suffix in {".c", ".pyx", ".so", ".pyd", ".cpp"}]
    for name in ("pyproject.toml", "setup.cfg", "README.rst", "LICENSE", "tests", "doc"):
        assert (project / name).exists(), name


def test_the_facts_of_a_note_are_words_of_the_file(archive: Path) -> None:
    files = sdist.contents(archive)
    for path, facts in tasks_fifth._FACTS.items():
        text = files[path].decode("utf-8").lower()
        assert all(f in text for f in facts), (path, [f for f in facts if f not in text])


# --- the half in the suite -------------------------------------------------------------------


def _chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_the_fifth_half_is_wired_into_the_suite() -> None:
    fifth = [t for t in task_suite.TASKS if t.half == tasks_fifth.HALF]
    assert fifth == list(tasks_fifth.TASKS) and len(fifth) >= 36
    assert task_suite.HALVES == ("tune", "check", "unseen", "fourth", "fifth")
    assert len({t.name for t in task_suite.TASKS}) == len(task_suite.TASKS)
    assert {"question", "find", "count", "edit", "notes"} <= {t.kind for t in fifth}
    assert all(t.project == tasks_fifth.PROJECT and t.targets for t in fifth)
    assert sum(_chinese(t.prompt) for t in fifth) >= 8
    assert sum(t.name.startswith("ps-fr-") for t in fifth) >= 4
    assert sum(t.name.startswith("ps-para-") for t in fifth) >= 4
    assert all(t.allow_write == (t.kind == "edit") for t in fifth)
    assert task_suite.main.__module__ and "--half fifth" in (task_suite.__doc__ or "")


def test_the_suite_builds_the_fifth_half_from_its_sdist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []

    def build(workspace: Path) -> list[str]:
        built.append(workspace)
        return []

    monkeypatch.setattr(tasks_fifth, "build_workspace", build)
    task_suite.build_task_workspace(tasks_fifth.TASKS[0], tmp_path / "ws")
    assert built == [tmp_path / "ws"]


def test_the_cli_takes_the_fifth_half(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[object, ...]] = []

    def run(*args: object) -> list[task_suite.TaskRun]:
        seen.append(args)
        return []

    monkeypatch.setattr(task_suite, "run", run)
    task_suite.main(["--models", "m", "--half", "fifth", "--only", "ps-version"])
    assert seen == [(["m"], ["base"], "fifth", False, ["ps-version"], None)]


def test_the_report_has_a_column_for_the_fifth_half() -> None:
    def row(task: str, half: str) -> task_suite.TaskRun:
        return task_suite.TaskRun(
            "m", "base", task, half, "question", half == "fifth", 0, "end_turn", 2, 10, 5.0, "a"
        )

    summary = task_suite.summary_rows([row("a", "fourth"), row("b", "fifth"), row("c", "fifth")])[0]
    assert summary[2:8] == ["2/3", "0/0", "0/0", "0/0", "0/1", "2/2"]
    assert "| unseen | fourth | fifth |" in task_suite.to_markdown([row("b", "fifth")]).splitlines()[0]


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.text(alphabet="abc ,:()", max_size=12))
def test_a_number_is_read_whole(n: int, m: int, around: str) -> None:
    check = task_checks.number(n)
    assert check(f"{around}{n}{around}", Path("."))
    assert check(f"{around} {n}.", Path("."))  # the end of a sentence
    assert not check(f"{n}.5", Path(".")) and not check(f"1{n}", Path(".")) and not check(f"{n}0", Path("."))
    if m != n:
        assert not check(f"{around}{m}{around}", Path("."))
