"""The task suite's third half: its sdist is fetched only when it verifies, unpacked without
escaping the workspace; its checkers and the wrong-NOTES.md-lines count say what they should.
No network here: the download is a fake that writes an archive into the folder, as pip does."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
from pathlib import Path

import pytest
from bench import notes_check, sdist, task_suite, tasks_unseen
from bench.tasks import build_workspace


def _tar(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return path


def _fake_download(members: dict[str, bytes]):
    calls: list[Path] = []

    def download(folder: Path) -> None:
        calls.append(folder)
        _tar(folder / tasks_unseen.PIN.filename, members)

    return download, calls


def test_a_download_that_does_not_verify_is_refused_and_removed(tmp_path: Path) -> None:
    download, _calls = _fake_download({"markdown-3.7/README.md": b"not the real one"})
    with pytest.raises(sdist.SdistError, match="is not the pinned"):
        tasks_unseen.PIN.fetch(tmp_path, download)
    assert not (tmp_path / tasks_unseen.PIN.filename).exists()


def test_a_verified_download_is_kept_and_used_again(tmp_path: Path) -> None:
    download, calls = _fake_download({"markdown-3.7/README.md": b"# fake\n"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    download(scratch)
    digest = hashlib.sha256((scratch / tasks_unseen.PIN.filename).read_bytes()).hexdigest()
    pin = dataclasses.replace(tasks_unseen.PIN, sha256=digest)
    calls.clear()
    cache = tmp_path / "cache"
    first = pin.fetch(cache, download)
    second = pin.fetch(cache, download)
    assert first == second == cache / tasks_unseen.PIN.filename and len(calls) == 1


def test_a_cached_archive_that_no_longer_verifies_is_fetched_again(tmp_path: Path) -> None:
    (tmp_path / tasks_unseen.PIN.filename).write_bytes(b"damaged")
    download, calls = _fake_download({"markdown-3.7/x": b"x"})
    with pytest.raises(sdist.SdistError):
        tasks_unseen.PIN.fetch(tmp_path, download)
    assert len(calls) == 1


def test_a_download_that_leaves_no_archive_says_so(tmp_path: Path) -> None:
    with pytest.raises(sdist.SdistError, match="left no"):
        tasks_unseen.PIN.fetch(tmp_path, lambda folder: None)


def test_unpack_keeps_regular_files_inside_the_workspace(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "a.tar.gz",
        {
            "markdown-3.7/markdown/core.py": b"x = 1\n",
            "markdown-3.7/../../escape.txt": b"out",
            "/abs/evil.txt": b"out",
        },
        links={"markdown-3.7/link": "/etc/passwd"},
    )
    workspace = tmp_path / "ws"
    assert sdist.unpack(archive, workspace) == ["markdown/core.py"]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.tar.gz", "core.py"]


META = """__version_info__ = (3, 7, 0, 'final', 0)


def _get_version(version_info):
    return '.'.join(map(str, version_info[:2]))


__version__ = _get_version(__version_info__)
"""


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        (META, False),
        (META.replace("(3, 7, 0,", "(3, 7, 1,"), True),
        (META.replace("_get_version(__version_info__)", "'3.7.1'"), True),
        (META.replace("(3, 7, 0,", "(3, 7, 1,").replace("return", "return ("), False),  # no longer parses
        (META.replace("__version_info__ = (3, 7, 0, 'final', 0)", "__version_info__ = '3.7.1'"), False),
    ],
)
def test_the_version_edit_checker(tmp_path: Path, text: str, passes: bool) -> None:
    (tmp_path / "markdown").mkdir()
    (tmp_path / "markdown/__meta__.py").write_text(text, encoding="utf-8")
    assert tasks_unseen.version_is("markdown/__meta__.py", "3.7.1")("", tmp_path) is passes


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        ("PIPE_NONE = 0\nPIPE_RIGHT = 4\n", True),
        ("PIPE_NONE = 0\nPIPE_RIGHT = 2\n", False),
        ("PIPE_NONE = 0\nPIPE_RIGHT = 4\nPIPE_RIGHT = 2\n", False),
        ("PIPE_NONE = 0\nPIPE_RIGHT = 4\ndef broken(:\n", False),
        ('PIPE_RIGHT = "4"\n', False),
    ],
)
def test_the_edit_checker_parses_the_file(tmp_path: Path, text: str, passes: bool) -> None:
    (tmp_path / "t.py").write_text(text, encoding="utf-8")
    check = tasks_unseen.python_file("t.py", r"^PIPE_RIGHT = 4\b", absent=(r"^PIPE_RIGHT = 2\b",))
    assert check("", tmp_path) is passes


def test_the_notes_checker_reads_either_notes_file_and_wants_a_fact_per_file(tmp_path: Path) -> None:
    check = tasks_unseen.notes_cover(tasks_unseen._SCRIPTS_FACTS)
    assert not check("", tmp_path)
    (tmp_path / "notes.md").write_text(
        "- scripts/gen_ref_nav.py: 生成 mkdocs 的参考页面和导航\n- griffe_extensions.py: griffe 扩展\n",
        encoding="utf-8",
    )
    assert check("", tmp_path)
    (tmp_path / "notes.md").write_text(
        "- gen_ref_nav.py\n- griffe_extensions.py: griffe 扩展\n", encoding="utf-8"
    )
    assert not check("", tmp_path)  # the first line names its file and says nothing of it


README = "# Python-Markdown\n\nThis is a Python implementation of John Gruber's Markdown.\n"
LICENSE = "BSD 3-Clause License\n\nCopyright 2007, 2008 The Python Markdown Project\n"
CORE = '"""Core Markdown functionality."""\n\n\nclass Markdown:\n    """Convert Markdown to HTML."""\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in {"README.md": README, "LICENSE.md": LICENSE, "markdown/core.py": CORE}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_every_line_is_wrong_when_the_task_asked_for_no_notes(project: Path) -> None:
    (project / "NOTES.md").write_text("# Notes\n\n- core.py: Markdown class converts Markdown to HTML\n")
    assert notes_check.count_wrong(project, asks_for_notes=False) == 2


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("README.md: README.md is a configuration file for a Django application.", True),
        ("LICENSE.md: LICENSE.md (lines 1-27 of 27)", True),
        ("LICENSE.md: a BSD 3-Clause license from 2009", True),  # 2009 is not in the file
        ("LICENSE.md: the BSD 3-Clause license, copyright 2007", False),
        ("markdown/core.py: the Markdown class, which converts Markdown to HTML", False),
        ("core.py: 定义 Markdown 类，把文本转换成 HTML", False),
        ("## Summaries", False),  # a heading names no file
    ],
)
def test_a_line_naming_a_file_must_be_grounded_in_it(project: Path, line: str, wrong: bool) -> None:
    assert notes_check.wrong_lines([line], project, asks_for_notes=True) == ([line] if wrong else [])


def test_only_lines_the_run_wrote_count(project: Path) -> None:
    before = "- README.md: README.md is a configuration file for a Django application.\n"
    (project / "NOTES.md").write_text(before + "- core.py: Markdown to HTML\n", encoding="utf-8")
    assert notes_check.new_lines(before, notes_check.notes_text(project)) == ["- core.py: Markdown to HTML"]
    assert notes_check.count_wrong(project, asks_for_notes=True, before=before) == 0


def test_the_third_half_is_wired_into_the_suite() -> None:
    unseen = [t for t in task_suite.TASKS if t.half == tasks_unseen.HALF]
    assert len(unseen) >= 20 and unseen == list(tasks_unseen.TASKS)
    assert len({t.name for t in task_suite.TASKS}) == len(task_suite.TASKS)
    assert {"question", "find", "count", "edit", "notes"} <= {t.kind for t in unseen}
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in t.prompt) for t in unseen) >= 5
    assert all(t.targets for t in unseen)
    assert tasks_unseen.HALF in task_suite.HALVES


def test_no_shop_task_of_the_third_half_passes_by_doing_nothing(tmp_path: Path) -> None:
    build_workspace(tmp_path)
    for task in [t for t in tasks_unseen.TASKS if t.project == "shop"]:
        assert not task.check("", tmp_path), task.name
        assert notes_check.count_wrong(tmp_path, task.asks_for_notes) == 0


def test_no_markdown_task_passes_by_doing_nothing(tmp_path: Path) -> None:
    archive = tasks_unseen.PIN.folder / tasks_unseen.PIN.filename
    if not archive.is_file():
        pytest.skip("the pinned sdist has not been fetched (python -m bench.retrieval_bench fetches it)")
    tasks_unseen.build_workspace(tmp_path, tasks_unseen.PIN.verified(archive))
    for task in [t for t in tasks_unseen.TASKS if t.project == tasks_unseen.PROJECT]:
        assert not task.check("", tmp_path), task.name
        assert all((tmp_path / target).exists() for target in task.targets), task.name


def test_the_report_shows_each_half_the_wrong_lines_and_the_median() -> None:
    def row(task: str, half: str, wall: float, wrong: int) -> task_suite.TaskRun:
        return task_suite.TaskRun(
            "m", "base", task, half, "question", True, 0, "end_turn", 2, 10, wall, "a", 0, wrong
        )

    runs = [row("a", "tune", 10.0, -1), row("b", "check", 30.0, 0), row("c", tasks_unseen.HALF, 50.0, 3)]
    summary = task_suite.summary_rows(runs)[0]
    halves = len(task_suite.HALVES)
    assert summary[2 : 3 + halves] == ["3/3", "1/1", "1/1", "1/1", *["0/0"] * (halves - 3)]
    assert summary[3 + halves] == "1.50 (2)"  # the older row (-1) was not counted
    assert summary[4 + halves] == "30"
