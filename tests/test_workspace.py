"""Workspace confinement: every way a path could leave the root is refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.errors import ConfigError
from tinyharness.tools import ToolError, Workspace, atomic_write_text
from tinyharness.tools.workspace import MAX_PATH_CHARS


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "root"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return workspace


ESCAPES = {
    "absolute": "/etc/passwd",
    "absolute backslash": "\\etc\\passwd",
    "unc path": "\\\\server\\share\\x",
    "windows drive": "C:\\Windows\\win.ini",
    "drive relative": "c:secret.txt",
    "home": "~/.ssh/id_rsa",
    "home alone": "~",
    "parent": "../outside/secret.txt",
    "bare parent": "..",
    "parent in the middle": "src/../../outside/secret.txt",
    "parent that stays inside": "src/../src/app.py",
    "trailing parent": "src/..",
    "backslash traversal": "..\\outside\\secret.txt",
    "mixed separators": "src\\..\\..\\outside",
    "percent encoded": "%2e%2e%2foutside%2fsecret.txt",
    "percent encoded upper": "%2E%2E%2Foutside",
    "percent encoded dots only": "%2e%2e/outside",
    "percent encoded slash": "..%2foutside",
    "percent encoded backslash": "..%5coutside",
    "percent encoded absolute": "%2fetc%2fpasswd",
    "double encoded": "%252e%252e%252foutside",
    "triple encoded": "%25252e%25252e%25252foutside",
    "nul byte": "src/app.py\x00.txt",
    "encoded nul byte": "src/app.py%00.txt",
    "fullwidth dots and slash": "．．／outside",
    "fullwidth dots": "．．/outside",
    "fullwidth backslash": "..＼outside",
    "fullwidth percent escapes": "％２ｅ％２ｅ／outside",
    "two dot leader": "‥/outside",
    "one dot leaders": "․․/outside",
    "small full stops": "﹒﹒/outside",
    "fullwidth solidus absolute": "／etc／passwd",
    "three dots": ".../outside",
    "dots and trailing space": ".. /outside",
    "too long": "a/" * (MAX_PATH_CHARS // 2 + 1),
    "lone surrogate": "src/\ud800.txt",
}


@pytest.mark.parametrize("path", list(ESCAPES.values()), ids=list(ESCAPES))
def test_escape_attempts_are_refused_with_a_clear_message(root: Path, path: str) -> None:
    with pytest.raises(ToolError, match="must be relative to the workspace"):
        Workspace(root).resolve(path)


def test_symlink_pointing_outside_is_refused(root: Path) -> None:
    (root / "escape").symlink_to(root.parent / "outside")
    workspace = Workspace(root)
    with pytest.raises(ToolError, match="outside the workspace"):
        workspace.resolve("escape/secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        workspace.resolve("escape")


def test_symlinked_file_pointing_outside_is_refused(root: Path) -> None:
    (root / "notes.txt").symlink_to(root.parent / "outside" / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        Workspace(root).resolve("notes.txt", must_exist=True)


def test_symlink_chain_that_ends_outside_is_refused(root: Path) -> None:
    (root / "hop2").symlink_to(root.parent / "outside")
    (root / "hop1").symlink_to(root / "hop2")
    with pytest.raises(ToolError, match="outside the workspace"):
        Workspace(root).resolve("hop1/secret.txt")


def test_symlink_inside_the_workspace_is_followed(root: Path) -> None:
    (root / "code").symlink_to(root / "src")
    resolved = Workspace(root).resolve("code/app.py", must_exist=True)
    assert resolved == (root / "src" / "app.py").resolve()


def test_workspace_root_reached_through_a_symlink_still_works(root: Path) -> None:
    alias = root.parent / "alias"
    alias.symlink_to(root)
    workspace = Workspace(alias)
    assert workspace.root == root.resolve()
    assert workspace.resolve("src/app.py") == root.resolve() / "src" / "app.py"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.py", "src/app.py"),
        ("./src/app.py", "src/app.py"),
        ("src//app.py", "src/app.py"),
        ("src/./app.py", "src/app.py"),
        ("new/dir/file.txt", "new/dir/file.txt"),
        (".hidden", ".hidden"),
        ("..foo", "..foo"),
        ("a%20b.txt", "a%20b.txt"),  # percent signs are literal characters in file names
        ("数据/文件.txt", "数据/文件.txt"),
        (".", "."),
        ("", "."),
    ],
)
def test_ordinary_relative_paths_resolve_inside(root: Path, path: str, expected: str) -> None:
    workspace = Workspace(root)
    resolved = workspace.resolve(path)
    assert resolved.is_relative_to(workspace.root)
    assert workspace.relative(resolved) == expected


def test_backslash_is_treated_as_a_separator(root: Path) -> None:
    workspace = Workspace(root)
    assert workspace.resolve("src\\app.py", must_exist=True) == workspace.root / "src" / "app.py"


def test_must_exist_reports_a_missing_path(root: Path) -> None:
    workspace = Workspace(root)
    with pytest.raises(ToolError, match=r"does not exist.*list_dir"):
        workspace.resolve("src/missing.py", must_exist=True)
    assert workspace.resolve("src/missing.py") == workspace.root / "src" / "missing.py"


def test_non_string_path_is_refused(root: Path) -> None:
    not_a_string: Any = 42
    with pytest.raises(ToolError, match="must be a string"):
        Workspace(root).resolve(not_a_string)


def test_error_message_does_not_echo_a_huge_path(root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        Workspace(root).resolve("x" * 100_000)
    assert len(str(caught.value)) < 400


def test_relative_display(root: Path) -> None:
    workspace = Workspace(root)
    assert workspace.relative(workspace.root) == "."
    assert workspace.relative(workspace.root / "src" / "app.py") == "src/app.py"
    assert workspace.relative("src/app.py") == "src/app.py"


def test_workspace_must_be_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError):
        Workspace(tmp_path / "file")


# --- atomic writes ------------------------------------------------------------------------------


def test_atomic_write_replaces_content_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.txt"
    atomic_write_text(target, "one\n")
    atomic_write_text(target, "two ✓\r\n")
    assert target.read_bytes() == "two ✓\r\n".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]


def test_atomic_write_keeps_the_mode_of_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("echo 1\n")
    target.chmod(0o750)
    atomic_write_text(target, "echo 2\n")
    assert target.stat().st_mode & 0o777 == 0o750


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "file.txt"
    target.write_text("old\n")

    def broken_replace(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


# --- property: nothing generated can land outside ------------------------------------------------

_TRICKY = st.sampled_from(
    [".", "..", "/", "\\", "%", "%2e", "%2f", "%25", "．", "／", "＼", "‥", "~", ":", "C:", "\x00",
     "out", "in", "src", "a", " ", "\ud800"]
)  # fmt: skip
_PATHS = st.one_of(st.text(max_size=60), st.lists(_TRICKY, max_size=12).map("".join))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=_PATHS)
def test_resolve_either_refuses_or_stays_inside(tmp_path_factory: pytest.TempPathFactory, path: str) -> None:
    base = tmp_path_factory.getbasetemp() / "property"
    root = base / "root"
    if not root.exists():
        (root / "src").mkdir(parents=True)
        (base / "outside").mkdir()
        (root / "out").symlink_to(base / "outside")
        (root / "in").symlink_to(root / "src")
    workspace = Workspace(root)
    try:
        resolved = workspace.resolve(path)
    except ToolError:
        return
    assert Path(os.path.realpath(resolved)).is_relative_to(workspace.root)
