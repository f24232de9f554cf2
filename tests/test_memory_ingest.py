"""Importing conversation logs (``ingest``) and ``tinyharness memory import`` / ``search
--queries``: the path the agent's users and the LoCoMo benchmark share. Each memory must carry
its subject, event time, context and source ids, on SQLite and on PostgreSQL."""

from __future__ import annotations

import argparse
import json
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from memory_conftest import *  # noqa: F403 - fixtures memory_store, memory_backend
from memory_conftest import memory_pg_url
from tinyharness.memory import Scope, SQLiteStore
from tinyharness.memory.base import MemoryStore
from tinyharness.memory.cli import register
from tinyharness.memory.ingest import BulkStore, ImportFormatError, import_file, read_messages

KEY = "sk-ant-api03-" + "Q" * 40
LINES = [
    {
        "speaker": "Caroline",
        "text": "Hey Mel! How are the kids?",
        "time": "1:56 pm on 8 May, 2023",
        "id": "D1:1",
    },
    {"speaker": "Melanie", "text": "Great! What did you do this weekend?", "id": "D1:2"},
    {"speaker": "Caroline", "text": "I went to a LGBTQ support group yesterday.", "id": "D1:3"},
    {"speaker": "Melanie", "text": "Do you have pets?", "id": "D1:4"},
    {"speaker": "Caroline", "text": "Luna and Oliver! My key is " + KEY, "id": "D1:5"},
    {"speaker": "Melanie", "text": "I painted a sunrise.", "time": "2023-06-01T10:00:00Z", "id": "D2:1"},
]


def utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[misc]


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def by_source(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    return {item.source_ids[0]: item for item in store.list_items(scope)}


def test_import_writes_subject_time_context_and_sources(memory_store: MemoryStore, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "chat.jsonl", [line | {"conversation": "c1"} for line in LINES])
    report = import_file(cast(BulkStore, memory_store), file, user="u1")
    assert (report.messages, report.added, report.conversations, report.timed) == (6, 6, 1, 2)
    items = by_source(memory_store, Scope("u1"))
    assert set(items) == {"D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1"}
    group = items["D1:3"]
    assert group.subject == "Caroline"
    assert group.content.startswith("Caroline: I went to a LGBTQ support group yesterday.")
    assert "(answering Melanie: Great! What did you do this weekend?)" in group.content
    # said on 8 May (the time carried over from D1:1), about the day before
    assert group.event_time == utc(2023, 5, 7, 13, 56)
    assert group.said_at == utc(2023, 5, 8, 13, 56)
    assert group.context.startswith("7 May 2023, Sunday | said 8 May 2023, Monday | ")
    assert "Melanie: Do you have pets?" in group.context and "Hey Mel!" in group.context
    assert group.metadata["conversation"] == "c1" and group.kind == "message"
    assert items["D2:1"].event_time == utc(2023, 6, 1, 10)
    assert "(answering Melanie: Do you have pets?)" in items["D1:5"].content
    assert all(KEY not in i.content and KEY not in i.context for i in items.values())
    hits = memory_store.search("Caroline support group", Scope("u1"), limit=3)
    assert hits and hits[0].item.source_ids == ["D1:3"]


def test_importing_the_same_lines_again_adds_nothing(memory_store: MemoryStore, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "chat.jsonl", LINES)
    import_file(cast(BulkStore, memory_store), file, user="u1")
    again = import_file(cast(BulkStore, memory_store), file, user="u1")
    assert (again.added, again.skipped) == (0, 6)
    assert memory_store.count(Scope("u1")) == 6


def test_without_a_user_each_conversation_is_its_own_scope(memory_store: MemoryStore, tmp_path: Path) -> None:
    lines = [
        LINES[0] | {"conversation": "a"},
        LINES[5] | {"conversation": "b"},
        LINES[1] | {"conversation": "a"},
    ]
    import_file(cast(BulkStore, memory_store), write_jsonl(tmp_path / "two.jsonl", lines))
    assert set(by_source(memory_store, Scope("a"))) == {"D1:1", "D1:2"}
    assert set(by_source(memory_store, Scope("b"))) == {"D2:1"}


def test_what_a_message_showed_is_part_of_it(memory_store: MemoryStore, tmp_path: Path) -> None:
    """A message that only says "look at this" is found by what it showed: its attachments go into
    its content, its vector and its neighbours' context (redacted like the text), while the
    question it answers and its time still come from its words."""
    lines = [
        {"speaker": "Mel", "text": "What did you make?", "id": "a"},
        {"speaker": "Ann", "text": "Take a look at this!", "id": "b", "attachments": "a red sunset"},
        {"speaker": "Mel", "text": "Lovely. Mine:", "id": "c", "attachments": ["a clay bowl", KEY]},
        {"speaker": "Ann", "text": "Nice!", "id": "d"},
    ]
    file = write_jsonl(tmp_path / "shown.jsonl", lines)
    shown = [m.attachments for m in read_messages(file)]
    assert shown == [(), ("a red sunset",), ("a clay bowl", KEY), ()]
    import_file(cast(BulkStore, memory_store), file, user="u1")
    items = by_source(memory_store, Scope("u1"))
    assert items["b"].content == (
        "Ann: Take a look at this! [shares: a red sunset] (answering Mel: What did you make?)"
    )
    assert items["c"].content.startswith("Mel: Lovely. Mine: [shares: a clay bowl] [shares: ")
    assert "Ann: Take a look at this! [shares: a red sunset]" in items["d"].context
    assert all(KEY not in i.content and KEY not in i.context for i in items.values())
    hits = memory_store.search("the red sunset", Scope("u1"), limit=1)
    assert hits[0].item.source_ids == ["b"]


def test_lines_without_ids_get_line_numbers(tmp_path: Path) -> None:
    file = tmp_path / "plain.jsonl"
    file.write_text('{"speaker": "a", "text": "x"}\n\n{"speaker": "b", "text": "y", "time": 5}\n')
    assert [(m.id, m.time) for m in read_messages(file)] == [("line-1", None), ("line-3", "5")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected an object"),
        ('{"speaker": "a"}', 'line 2: "speaker" and "text" must be strings'),
        ('{"speaker": "a", "text": "b", "time": {"d": 1}}', 'line 2: "time" must be a string'),
        ('{"speaker": "a", "text": "b", "attachments": [1]}', 'line 2: "attachments" must be a string or'),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    file = tmp_path / "bad.jsonl"
    file.write_text('{"speaker": "a", "text": "fine"}\n' + line + "\n")
    with pytest.raises(ImportFormatError, match=message):
        read_messages(file)


# --- the command line ------------------------------------------------------------------------------


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tinyharness")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.handler(args))


def test_cli_import_then_search_with_a_queries_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    common = ["--memory", db, "--embedder", "hashing"]
    file = write_jsonl(tmp_path / "chat.jsonl", LINES)
    assert cli(["memory", "import", str(file), "--user", "u1", *common]) == 0
    out, err = capsys.readouterr()
    assert "imported 6 of 6 messages from 1 conversation(s)" in out and "2 with a readable time" in out
    assert "importing: 6/6 messages" in err
    assert cli(["memory", "search", "support group", "--user", "u1", "--limit", "2", "--json", *common]) == 0
    single = json.loads(capsys.readouterr().out)
    assert len(single) == 2 and single[0]["source_ids"] == ["D1:3"]
    assert {"id", "content", "source_ids", "subject", "time"} <= set(single[0])
    assert single[0]["time"] == "2023-05-07T13:56:00Z" and single[0]["subject"] == "Caroline"
    queries = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"query": "pets Luna", "user": "u1"},
            {"query": "painted a sunrise", "user": "u1"},
            {"query": "x", "user": "nobody"},
        ],
    )
    assert cli(["memory", "search", "--queries", str(queries), "--limit", "1", "--json", *common]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [[hit["source_ids"] for hit in json.loads(line)] for line in lines] == [[["D1:5"]], [["D2:1"]], []]
    assert KEY not in "".join(lines)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["memory", "import", "missing.jsonl"], "cannot read missing.jsonl"),
        (["memory", "search"], "takes a QUERY or --queries FILE"),
        (["memory", "search", "x", "--queries", "q.jsonl"], "takes a QUERY or --queries FILE"),
        (["memory", "search", "--queries", "missing.jsonl"], "missing.jsonl"),
        (["memory", "search", "x", "--limit", "0"], "--limit must be at least 1"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli([*argv, "--memory", str(tmp_path / "m.db"), "--embedder", "none"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_import_of_a_bad_file_imports_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "bad.jsonl"
    file.write_text(json.dumps(LINES[0]) + "\n{oops\n")
    db = str(tmp_path / "m.db")
    assert cli(["memory", "import", str(file), "--memory", db, "--embedder", "none"]) == 2
    assert "line 2: not JSON" in capsys.readouterr().err
    store = SQLiteStore(db)
    assert store.count(Scope()) == 0
    store.close()


# --- stores written before the event_time column ---------------------------------------------------


def test_an_sqlite_store_from_before_event_time_gets_the_column(tmp_path: Path) -> None:
    """A file written by the first schema (no marks, no event_time) is recognised and migrated."""
    from tinyharness.memory.sqlite_store import MIGRATIONS

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        for statement in MIGRATIONS[0]:
            db.execute(statement)
        db.execute(
            "INSERT INTO memories (id, root_id, version, content, user_id, content_hash, valid_from, "
            "last_access_at, seq) VALUES ('old1', 'old1', 1, 'user prefers tabs', 'alice', 'h', 1.0, 1.0, 1)"
        )
    store = SQLiteStore(path)
    old = store.get("old1")
    assert old is not None and old.content == "user prefers tabs" and old.event_time is None
    new = store.add("user prefers spaces", Scope("alice"), event_time=utc(2024, 1, 2))
    assert store.get(new.id).event_time == utc(2024, 1, 2)  # type: ignore[union-attr]
    store.close()


def test_a_postgres_store_from_before_event_time_gets_the_column() -> None:
    import psycopg

    from tinyharness.memory.pg_store import PostgresStore

    url, prefix = memory_pg_url(), f"old{uuid.uuid4().hex[:8]}_"
    first = PostgresStore(url, table_prefix=prefix)
    first.add("user prefers tabs", Scope("alice"))
    first.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {prefix}memories DROP COLUMN event_time")
    store = PostgresStore(url, table_prefix=prefix)
    try:
        assert [i.event_time for i in store.list_items(Scope("alice"))] == [None]
        new = store.add("user prefers spaces", Scope("alice"), event_time=utc(2024, 1, 2))
        assert store.get(new.id).event_time == utc(2024, 1, 2)  # type: ignore[union-attr]
    finally:
        store.drop_tables()
        store.close()
