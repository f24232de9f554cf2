"""The task suite's fourth half: its sdist is used only when it is the pinned file; every task's
checker passes a right reference answer (or edit, or notes) and fails a wrong one; the edit
checkers want the asked change and nothing else; the targets exist in the unpacked project.
No network here: the download is a fake that writes an archive into the folder, as pip does;
the tests that need the real project skip when its pinned sdist has not been fetched."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, sdist, task_suite, tasks_fourth

PKG = "src/itsdangerous"
TESTS = "tests/test_itsdangerous"


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
        _tar(folder / tasks_fourth.PIN.filename, members)

    return download, calls


# --- the pin ---------------------------------------------------------------------------------


def test_a_download_that_is_not_the_pinned_file_is_refused_and_removed(tmp_path: Path) -> None:
    download, calls = _fake_download({"itsdangerous-2.2.0/README.md": b"not the real one"})
    with pytest.raises(sdist.SdistError, match="is not the pinned"):
        tasks_fourth.PIN.fetch(tmp_path, download)
    assert not (tmp_path / tasks_fourth.PIN.filename).exists() and len(calls) == 1


def test_a_cached_file_that_is_not_the_pinned_one_is_fetched_again(tmp_path: Path) -> None:
    (tmp_path / tasks_fourth.PIN.filename).write_bytes(b"damaged")
    download, calls = _fake_download({"itsdangerous-2.2.0/x": b"x"})
    with pytest.raises(sdist.SdistError):
        tasks_fourth.PIN.fetch(tmp_path, download)
    assert len(calls) == 1


def test_a_verified_download_is_kept_and_used_again(tmp_path: Path) -> None:
    download, calls = _fake_download({"itsdangerous-2.2.0/README.md": b"# fake\n"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    download(scratch)
    digest = hashlib.sha256((scratch / tasks_fourth.PIN.filename).read_bytes()).hexdigest()
    pin = dataclasses.replace(tasks_fourth.PIN, sha256=digest)
    calls.clear()
    first = pin.fetch(tmp_path / "cache", download)
    second = pin.fetch(tmp_path / "cache", download)
    assert first == second == tmp_path / "cache" / tasks_fourth.PIN.filename and len(calls) == 1


def test_the_pin_is_a_sha256_of_the_named_version() -> None:
    pin = tasks_fourth.PIN
    assert len(pin.sha256) == 64 and int(pin.sha256, 16) >= 0
    assert (pin.package, pin.version, pin.filename) == ("itsdangerous", "2.2.0", "itsdangerous-2.2.0.tar.gz")


def test_contents_are_the_files_unpack_writes(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "a.tar.gz",
        {"p-1/src/p/a.py": b"x = 1\n", "p-1/../escape.txt": b"out", "/abs.txt": b"out", "p-1/README": b"r"},
    )
    written = sdist.unpack(archive, tmp_path / "ws")
    assert written == ["README", "src/p/a.py"]
    assert sdist.contents(archive) == {"README": b"r", "src/p/a.py": b"x = 1\n"}


# --- the edit checkers, on a small project -----------------------------------------------------

ENCODING = '''"""Encodings."""

_int64_struct = struct.Struct(">Q")
_int_to_bytes = _int64_struct.pack


def want_bytes(s, encoding: str = "utf-8", errors: str = "strict"):
    """Bytes of ``s``."""
    return s
'''
PYPROJECT = '[project]\nname = "p"\nversion = "2.2.0"\n\n[tool.x]\nv = "2.2.0"\n'
SMALL = {f"{PKG}/encoding.py": ENCODING.encode(), "pyproject.toml": PYPROJECT.encode(), "README.md": b"r\n"}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    for name, data in SMALL.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


def _rename(ws: Path) -> bool:
    check = tasks_fourth.python_edit(
        f"{PKG}/encoding.py", (("_int64_struct", "_UINT64_STRUCT"),), originals=lambda: SMALL
    )
    return check("", ws)


@pytest.mark.parametrize(
    ("edited", "passes"),
    [
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT"), True),
        # layout, quotes, comments and docstrings may differ
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace('">Q"', "'>Q'") + "# renamed\n", True),
        (
            ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace("Encodings.", "Encodings, renamed."),
            True,
        ),
        (ENCODING, False),  # nothing done
        (ENCODING.replace("_int64_struct =", "_UINT64_STRUCT ="), False),  # a use left behind
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace('"strict"', '"ignore"'), False),
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT") + "def broken(:\n", False),  # no longer parses
    ],
)
def test_the_python_edit_checker_wants_the_change_and_nothing_else(
    small: Path, edited: str, passes: bool
) -> None:
    (small / PKG / "encoding.py").write_text(edited, encoding="utf-8")
    assert _rename(small) is passes


def test_the_python_edit_checker_wants_every_other_file_untouched(small: Path) -> None:
    (small / PKG / "encoding.py").write_text(ENCODING.replace("_int64_struct", "_UINT64_STRUCT"))
    assert _rename(small)
    (small / "NOTES.md").write_text("- a new file is not a change to the project\n")
    assert _rename(small)
    (small / "README.md").write_text("changed\n")
    assert not _rename(small)
    (small / "README.md").unlink()
    assert not _rename(small)


@pytest.mark.parametrize(
    ("edited", "passes"),
    [
        (PYPROJECT.replace('version = "2.2.0"', 'version = "2.2.1"'), True),
        (PYPROJECT.replace('version = "2.2.0"', "version = '2.2.1'  # bumped"), True),
        (PYPROJECT, False),
        (PYPROJECT.replace("2.2.0", "2.2.1"), False),  # another value changed too
        (PYPROJECT.replace('version = "2.2.0"', 'version = "2.2.1'), False),  # no longer parses
    ],
)
def test_the_toml_edit_checker(small: Path, edited: str, passes: bool) -> None:
    (small / "pyproject.toml").write_text(edited, encoding="utf-8")
    check = tasks_fourth.toml_edit(
        "pyproject.toml",
        (('version = "2.2.0"', 'version = "2.2.1"'),),
        ("README.md",),
        originals=lambda: SMALL,
    )
    assert check("", small) is passes
    (small / "README.md").write_text("2.2.1\n")  # a file the task allows to change
    assert check("", small) is passes


# --- every task: a right reference passes, a wrong one fails -----------------------------------

# question, find and count tasks: (a right answer, a wrong answer)
ANSWERS: dict[str, tuple[str, str]] = {
    "id-signer-salt": ('The default salt is b"itsdangerous.Signer".', 'The default salt is b"itsdangerous".'),
    "id-key-derivation": ("It uses django-concat by default.", "It uses hmac by default."),
    "id-tox-command": ("tox runs `pytest -v --tb=short`.", "tox runs `python -m unittest`."),
    "id-def-timestamp-signer": ("src/itsdangerous/timed.py", "tests/test_itsdangerous/test_timed.py"),
    "id-def-want-bytes": ("It is defined in src/itsdangerous/encoding.py.", "It is in test_encoding.py."),
    "id-get-timestamp": (
        "The current time as an int: int(time.time()).",
        "A timezone-aware datetime in UTC.",
    ),
    "id-default-digest": ("hashlib.sha1 (SHA-1).", "SHA-256 (hashlib.sha256)."),
    "id-version": ("This is itsdangerous 2.2.0.", "This is itsdangerous 2.1.2."),
    "id-license": ("The BSD 3-Clause license.", "The MIT license."),
    "id-python": ("Python 3.8 and newer (requires-python >=3.8).", "Python 3.7 and newer."),
    "id-what": (
        "It signs data so that it can be passed to untrusted environments and checked when it comes back.",
        "It is a web framework designed for data pipelines.",
    ),
    "id-entry": ("src/itsdangerous/__init__.py imports and re-exports them.", "src/itsdangerous/signer.py"),
    "id-count-package": ("There are 8 .py files.", "There are 7 .py files."),
    "id-list-tests": (
        "__init__.py, test_encoding.py, test_serializer.py, test_signer.py, test_timed.py, test_url_safe.py",
        "test_encoding.py, test_serializer.py, test_signer.py",
    ),
    "id-tests-folder": ("tests/test_itsdangerous (test_timed.py)", "The tests folder itself."),
    "id-count-requirements": ("It holds 10 files (5 .in and 5 .txt).", "It holds 5 files."),
    "id-count-functions": (
        "Five: want_bytes, base64_encode, base64_decode, int_to_bytes, bytes_to_int.",
        "3",
    ),
    "id-count-exceptions": ("exc.py defines 6 classes.", "exc.py defines 5 classes."),
    "id-zh-version": ("版本是 2.2.0。", "版本是 2.1.0。"),
    "id-zh-def": ("在 src/itsdangerous/exc.py 里定义。", "在 timed.py 里定义。"),
    "id-zh-count": ("一共有 8 个 .py 文件。", "一共有 6 个 .py 文件。"),
    "id-zh-classes": ("signer.py 定义了四个类。", "signer.py 定义了两个类。"),
    "id-zh-license": ("BSD 许可证（3-Clause）。", "Apache 2.0 许可证。"),
    "id-zh-what": ("它给数据签名，保证数据在不可信的环境里传递时没有被篡改。", "它是一个网页框架。"),
    "id-fr-python": ("Python 3.8 au minimum.", "Python 3.9 au minimum."),
    "id-fr-def": ("Dans src/itsdangerous/url_safe.py.", "Dans tests/test_itsdangerous/test_url_safe.py."),
    "id-fr-count": ("Il y en a six, __init__.py compris.", "Il y en a cinq."),
    "id-para-release": ("itsdangerous 2.2.0", "itsdangerous 2.0.1"),
    "id-para-find": ("int_to_bytes is in src/itsdangerous/encoding.py.", "src/itsdangerous/serializer.py"),
    "id-para-count": ("5 test modules.", "6 test modules."),
}

# edit tasks: the right edit and a wrong one, each from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, Edit]] = {
    "id-edit-version": (
        "pyproject.toml",
        lambda t: t.replace('version = "2.2.0"', 'version = "2.2.1"'),
        lambda t: t.replace('version = "2.2.0"', 'version = "2.2.1"').replace(">=3.8", ">=3.9"),
    ),
    "id-edit-errors": (
        f"{PKG}/encoding.py",
        lambda t: t.replace('errors: str = "strict"', "errors: str = 'replace'"),
        lambda t: t.replace('errors: str = "strict"', 'errors: str = "replace"').replace(
            '"utf-8"', '"ascii"', 1
        ),
    ),
    "id-edit-rename": (
        f"{PKG}/encoding.py",
        lambda t: t.replace("_int64_struct", "_UINT64_STRUCT"),
        lambda t: t.replace("_int64_struct =", "_UINT64_STRUCT ="),
    ),
    "id-zh-edit": (
        f"{PKG}/signer.py",
        lambda t: t.replace(
            'default_key_derivation: str = "django-concat"', 'default_key_derivation: str = "hmac"'
        ),
        lambda t: t.replace('"django-concat"', '"hmac"'),  # the branch in derive_key changed too
    ),
}

# notes tasks: right notes and wrong ones
NOTES: dict[str, tuple[str, str]] = {
    "id-notes-three": (
        "- src/itsdangerous/exc.py: the exceptions raised for bad data, such as BadSignature\n"
        "- src/itsdangerous/_json.py: a compact json wrapper that strips whitespace\n"
        "- src/itsdangerous/url_safe.py: serializers that zlib compress and base64 encode for URLs\n",
        "- src/itsdangerous/exc.py: the exceptions raised for bad data\n- _json.py: json\n",
    ),
    "id-notes-package": (
        "- __init__.py: imports the signer and serializer classes\n"
        "- _json.py: compact json dumps without whitespace\n"
        "- encoding.py: base64 encode and decode of bytes\n"
        "- exc.py: exceptions raised for bad data\n"
        "- serializer.py: dumps and loads a signed payload\n"
        "- signer.py: signs values with an hmac of the key and salt\n"
        "- timed.py: a timestamp signer that can expire with max_age\n"
        "- url_safe.py: zlib compress and base64 for url-safe tokens\n",
        "- signer.py: signs values with an hmac\n- timed.py: timestamp signer\n",
    ),
    "id-zh-notes": (
        "- test_encoding.py: 测试 base64 编码和 want_bytes\n"
        "- test_serializer.py: 测试序列化器的 dumps 和 loads\n"
        "- test_signer.py: 测试签名、密钥派生和分隔符\n"
        "- test_timed.py: 测试时间戳和 max_age 过期\n"
        "- test_url_safe.py: 测试 URL 安全的序列化器\n",
        "- test_encoding.py: 测试\n- test_serializer.py: 测试\n- test_signer.py: 测试\n"
        "- test_timed.py: 测试\n- test_url_safe.py: 测试\n",
    ),
    "id-fr-notes": (
        "- src/itsdangerous/signer.py : Signer et HMACAlgorithm, signature HMAC avec secret_key et salt\n"
        "- src/itsdangerous/timed.py : TimestampSigner ajoute un timestamp, SignatureExpired passé max_age\n",
        "- src/itsdangerous/signer.py : signe les valeurs avec une clé\n",
    ),
}


def test_every_task_has_a_reference() -> None:
    names = [t.name for t in tasks_fourth.TASKS]
    assert sorted(names) == sorted([*ANSWERS, *EDITS, *NOTES])
    for task in tasks_fourth.TASKS:
        expected = {"edit": EDITS, "notes": NOTES}.get(task.kind, ANSWERS)
        assert task.name in expected, task.name


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_answer_checkers(name: str, tmp_path: Path) -> None:
    task = next(t for t in tasks_fourth.TASKS if t.name == name)
    right, wrong = ANSWERS[name]
    assert task.check(right, tmp_path), right
    assert not task.check(wrong, tmp_path), wrong
    assert not task.check("", tmp_path)


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_fourth.PIN.folder / tasks_fourth.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half fourth fetches it)"
        )
    return tasks_fourth.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_fourth.build_workspace(tmp_path, archive)
    return tmp_path


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_edit_checkers_on_the_real_project(name: str, project: Path) -> None:
    task = next(t for t in tasks_fourth.TASKS if t.name == name)
    path, right, wrong = EDITS[name]
    original = (project / path).read_text(encoding="utf-8")
    assert not task.check("Done.", project)
    (project / path).write_text(right(original), encoding="utf-8")
    assert task.check("Done.", project)
    (project / "NOTES.md").write_text("- an unrelated new file\n", encoding="utf-8")
    assert task.check("Done.", project)
    (project / path).write_text(wrong(original), encoding="utf-8")
    assert not task.check("Done.", project)
    (project / path).write_text(right(original), encoding="utf-8")
    (project / "README.md").write_text("changed too\n", encoding="utf-8")
    assert not task.check("Done.", project)  # another file changed


@pytest.mark.parametrize("name", sorted(NOTES))
def test_the_notes_checkers_on_the_real_project(name: str, project: Path) -> None:
    task = next(t for t in tasks_fourth.TASKS if t.name == name)
    right, wrong = NOTES[name]
    assert not task.check("", project)
    (project / "NOTES.md").write_text(right, encoding="utf-8")
    assert task.check("", project)
    assert notes_check.count_wrong(project, task.asks_for_notes) == 0  # the reference is grounded
    (project / "NOTES.md").write_text(wrong, encoding="utf-8")
    assert not task.check("", project)


def test_the_targets_exist_and_no_task_passes_by_doing_nothing(project: Path) -> None:
    for task in tasks_fourth.TASKS:
        assert task.targets and all((project / t).exists() for t in task.targets), task.name
        assert not task.check("", project), task.name
        assert notes_check.count_wrong(project, task.asks_for_notes) == 0


def test_the_project_is_of_the_size_asked_for(project: Path) -> None:
    files = [p for p in project.rglob("*") if p.is_file()]
    assert 20 <= len(files) <= 120 and 10 <= sum(p.suffix == ".py" for p in files) <= 60


def test_the_facts_of_a_note_are_words_of_the_file(archive: Path) -> None:
    files = sdist.contents(archive)
    for path, facts in tasks_fourth._FACTS.items():
        text = files[path].decode("utf-8").lower()
        assert all(f in text for f in facts), path


# --- the half in the suite -------------------------------------------------------------------


def _chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_the_fourth_half_is_wired_into_the_suite() -> None:
    fourth = [t for t in task_suite.TASKS if t.half == tasks_fourth.HALF]
    assert fourth == list(tasks_fourth.TASKS) and len(fourth) >= 24
    assert tasks_fourth.HALF in task_suite.HALVES and task_suite.HALVES[:3] == ("tune", "check", "unseen")
    assert len({t.name for t in task_suite.TASKS}) == len(task_suite.TASKS)
    assert {"question", "find", "count", "edit", "notes"} <= {t.kind for t in fourth}
    assert all(t.project == tasks_fourth.PROJECT and t.targets for t in fourth)
    assert sum(_chinese(t.prompt) for t in fourth) >= 7
    assert sum(t.name.startswith("id-fr-") for t in fourth) >= 3
    assert all(t.allow_write == (t.kind == "edit") for t in fourth)


def test_the_suite_builds_the_fourth_half_from_its_sdist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []
    monkeypatch.setattr(tasks_fourth, "build_workspace", lambda ws: built.append(ws) or [])
    task_suite.build_task_workspace(tasks_fourth.TASKS[0], tmp_path / "ws")
    assert built == [tmp_path / "ws"]


def test_the_report_has_a_column_for_the_fourth_half() -> None:
    def row(task: str, half: str) -> task_suite.TaskRun:
        return task_suite.TaskRun(
            "m", "base", task, half, "question", half == "fourth", 0, "end_turn", 2, 10, 5.0, "a"
        )

    summary = task_suite.summary_rows([row("a", "unseen"), row("b", "fourth"), row("c", "fourth")])[0]
    assert summary[2:7] == ["2/3", "0/0", "0/0", "0/1", "2/2"]
    assert "| unseen | fourth |" in task_suite.to_markdown([row("b", "fourth")]).splitlines()[0]
