"""What a run leaves in the user's folder: NOTES.md and .tinyharness/ stay in the workspace (the
agent reads both back with its confined tools) and are added once to .git/info/exclude, so they
never show up in ``git status`` or a commit; ``--notes`` is relative to the workspace."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tinyharness.cli import main
from tinyharness.gitexclude import exclude_run_state


def note_script(path: Path) -> str:
    turns = [
        {
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "n1", "name": "note", "input": {"text": "remember"}}],
            "usage": {},
        },
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}], "usage": {}},
    ]
    path.write_text(json.dumps({"responses": turns}), encoding="utf-8")
    return f"scripted:{path}"


def run(workspace: Path, script: str, *extra: str) -> int:
    return main(["run", "t", "--model", script, "--workspace", str(workspace), "--quiet", "--no-log", *extra])


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_run_state_is_excluded_once_and_git_status_stays_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    workspace = repo / "pkg"
    workspace.mkdir()
    assert run(workspace, note_script(tmp_path / "s.json")) == 0
    err = capsys.readouterr().err
    assert "/pkg/NOTES.md and /pkg/.tinyharness/ to .git/info/exclude" in err
    assert (workspace / "NOTES.md").read_text().strip() == "remember"
    (workspace / ".tinyharness").mkdir()
    (workspace / ".tinyharness" / "x.txt").write_text("offloaded")
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""
    assert run(workspace, note_script(tmp_path / "s.json")) == 0
    assert "exclude" not in capsys.readouterr().err  # said once
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/pkg/NOTES.md") == 1


def test_a_refused_run_leaves_the_repository_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert main(["run", "--workspace", str(repo), "--no-log", "--model", "martian:x", "task"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1  # the one line of the refusal, nothing else
    exclude = repo / ".git" / "info" / "exclude"
    assert not exclude.exists() or "NOTES.md" not in exclude.read_text()


def test_a_folder_outside_git_is_left_alone(tmp_path: Path) -> None:
    assert exclude_run_state(tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_a_linked_worktree_uses_the_main_repository_exclude_file(tmp_path: Path) -> None:
    main_git = tmp_path / "main" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    tree = tmp_path / "wt"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    assert exclude_run_state(tree) == ["/NOTES.md", "/.tinyharness/"]
    assert "/NOTES.md" in (main_git / "info" / "exclude").read_text()


def test_notes_option_is_relative_to_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    elsewhere = tmp_path / "cwd"
    workspace.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert run(workspace, note_script(tmp_path / "s.json"), "--notes", "docs/N.md") == 0
    assert (workspace / "docs" / "N.md").read_text().strip() == "remember"
    assert not (elsewhere / "docs").exists()
    assert main(["notes", "--workspace", str(workspace), "--notes", "docs/N.md"]) == 0
    assert "remember" in capsys.readouterr().out
