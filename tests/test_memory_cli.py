"""``tinyharness memory ...`` through ``register``/``handle`` on a real SQLite store."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tinyharness.memory import Scope, SQLiteStore
from tinyharness.memory.cli import handle, register
from tinyharness.memory.factory import default_store_url


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tinyharness")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.handler(args))


def test_list_search_show_history_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    store = SQLiteStore(db)
    item = store.add("user prefers tabs over spaces", Scope("alice"))
    newer = store.update(item.id, "user prefers spaces now")
    store.add("secret is ghp_16C7e42F292c6912E7710c838347Ae178B4a", Scope("bob"))
    store.close()
    common = ["--memory", db, "--embedder", "none"]
    assert cli(["memory", "list", *common, "--user", "alice"]) == 0
    out = capsys.readouterr().out
    assert "spaces now" in out and "tabs" not in out
    assert cli(["memory", "list", *common, "--all", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == 3 and all("ghp_" not in e["content"] for e in listed)
    assert cli(["memory", "search", "spaces", *common]) == 0
    assert newer.id in capsys.readouterr().out
    assert cli(["memory", "history", newer.id, *common]) == 0
    out = capsys.readouterr().out
    assert "superseded" in out and "tabs over spaces" in out
    assert cli(["memory", "forget", newer.id, *common]) == 0
    assert cli(["memory", "forget", newer.id, *common]) == 1
    assert cli(["memory", "show", "nope", *common]) == 1
    assert "no memory" in capsys.readouterr().err


def test_bad_store_is_exit_2(tmp_path: Path) -> None:
    assert cli(["memory", "list", "--memory", str(tmp_path), "--embedder", "bogus"]) == 2


def test_default_store_follows_tinyharness_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path))
    assert default_store_url() == str(tmp_path / "memory.db")
    assert (
        handle(
            argparse.Namespace(
                memory=None,
                embedder="none",
                memory_command="list",
                user=None,
                agent=None,
                session=None,
                all=False,
                limit=5,
                json=True,
            )
        )
        == 0
    )
    assert (tmp_path / "memory.db").exists()
