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


def _scripted_file(path: Path, *texts: str) -> Path:
    responses = [
        {
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": t}],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        for t in texts
    ]
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return path


def _tea_store(tmp_path: Path) -> tuple[str, list[str]]:
    db = str(tmp_path / "m.db")
    store = SQLiteStore(db)
    for text in ("tea note one", "tea note two", "tea note three"):
        store.add(text, Scope("alice"))
    order = [h.item.id for h in store.search("tea note", Scope("alice"), limit=3)]
    store.close()
    return db, order


def test_search_rerank_puts_the_models_choice_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--rerank MODEL``: the model reads the top --rerank-depth hits and its choice comes first."""
    from tinyharness.cli import main

    db, order = _tea_store(tmp_path)
    model = _scripted_file(tmp_path / "rerank.json", json.dumps({"best": [3]}))
    argv = ["memory", "search", "tea note", "--memory", db, "--embedder", "none", "--limit", "2", "--json"]
    assert main([*argv, "--rerank", f"scripted:{model}", "--rerank-depth", "3"]) == 0
    assert [hit["id"] for hit in json.loads(capsys.readouterr().out)] == [order[2], order[0]]


def test_search_rerank_comes_from_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``memory_rerank`` in the config file turns reranking on; ``--rerank none`` turns it off."""
    from tinyharness.cli import main

    db, order = _tea_store(tmp_path)
    model = _scripted_file(tmp_path / "rerank.json", json.dumps({"best": [2]}))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"memory_rerank": f"scripted:{model}"}), encoding="utf-8")
    monkeypatch.setenv("TINYHARNESS_HOME", str(home))
    argv = ["memory", "search", "tea note", "--memory", db, "--embedder", "none", "--limit", "1", "--json"]
    assert main(argv) == 0
    assert [hit["id"] for hit in json.loads(capsys.readouterr().out)] == [order[1]]
    assert main([*argv, "--rerank", "none"]) == 0
    assert [hit["id"] for hit in json.loads(capsys.readouterr().out)] == [order[0]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--rerank", "nonsense:x"], "--rerank: unknown model"),
        (["--rerank", "scripted:x.json", "--rerank-depth", "1"], "--rerank-depth must be at least 2"),
    ],
)
def test_search_rerank_bad_option_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    from tinyharness.cli import main

    db, _ = _tea_store(tmp_path)
    assert main(["memory", "search", "tea", "--memory", db, "--embedder", "none", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
