"""The PostgreSQL run log keeps what the SQLite one keeps: the same events give the same
exports, run summaries and typed rows, from the same migrations. Skipped without PostgreSQL
(``scripts/pg-test-server.sh`` exports TINYHARNESS_TEST_PG_URL)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tinyharness import runlog
from tinyharness.runlog import PostgresRunLog, RunLog, RunLogError, RunNotFound, SQLRunLog, open_run_log

SECRET = "sk-proj-" + "Q7x9Lm2Kp4Rt8Vw3Yz6Bn1Cd5Fg0Hj" * 2


def events(run_id: str) -> list[dict[str, Any]]:
    stamp = {"run_id": run_id}
    return [
        {"type": "run_start", "seq": 1, "ts": 1.5, "task": f"use {SECRET}", "model": "m", **stamp},
        {
            "type": "model_call",
            "seq": 2,
            "ts": 2.25,
            "call": 1,
            "purpose": "agent",
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "tokens": 15,
            **stamp,
        },
        {
            "type": "tool_call",
            "seq": 3,
            "ts": 3.0,
            "call_id": "t1",
            "name": "note",
            "args": {"text": "x"},
            **stamp,
        },
        {"type": "notes_write", "seq": 4, "ts": 3.1, "op": "append", "chars": 2, **stamp},
        {
            "type": "tool_result",
            "seq": 5,
            "ts": 3.2,
            "call_id": "t1",
            "name": "note",
            "ok": True,
            "chars": 2,
            "truncated": False,
            **stamp,
        },
        {"type": "tool_result", "seq": 6, "ts": 3.3, "call_id": None, "name": "x", "ok": False, **stamp},
        {
            "type": "compaction",
            "seq": 7,
            "ts": 4.0,
            "n": 1,
            "strategy": "summarize",
            "tokens_before": 900,
            "tokens_after": 100,
            "messages_before": 9,
            "messages_after": 3,
            **stamp,
        },
        {"type": "memory_write", "seq": 8, "ts": 4.5, "op": "add", "id": "m1", **stamp},
        {"type": "error", "seq": 9, "ts": 5.0, "stop": "tool", "message": f"key {SECRET}", **stamp},
        {
            "type": "run_end",
            "seq": 10,
            "ts": 6.0,
            "stop": "end_turn",
            "final": "done",
            "model_calls": 1,
            "compactions": 1,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            **stamp,
        },
    ]


def fill(log: SQLRunLog) -> None:
    for run_id in ("abc123", "abd456"):
        for event in events(run_id):
            log.emit(event)


def test_the_same_events_read_back_the_same_from_both_backends(database: str, tmp_path: Path) -> None:
    with RunLog(tmp_path / "runs.db") as sqlite, PostgresRunLog(database) as postgres:
        fill(sqlite)
        fill(postgres)
        assert postgres.schema_version == sqlite.schema_version == runlog.SCHEMA_VERSION
        for run_id in ("abc123", "abd456"):
            assert postgres.event_lines(run_id) == sqlite.event_lines(run_id)
            assert postgres.get_run(run_id) == sqlite.get_run(run_id)
            assert postgres.last_seq(run_id) == sqlite.last_seq(run_id) == 10
        assert postgres.list_runs() == sqlite.list_runs()
        assert SECRET not in "".join(postgres.event_lines("abc123"))
        summary = postgres.get_run("abc1")  # a unique prefix
        assert (summary.model_calls, summary.tool_calls, summary.compactions, summary.errors) == (1, 2, 1, 1)
        with pytest.raises(RunNotFound, match="ambiguous"):
            postgres.resolve("ab")
        with pytest.raises(RunNotFound):
            postgres.resolve("zz")
        typed = "SELECT after_call FROM compactions ORDER BY id"
        assert [r[0] for r in postgres._query(typed)] == [r[0] for r in sqlite._query(typed)] == [1, 1]
        result = "SELECT call_id, ok, result_seq FROM tool_calls WHERE run_id = 'abc123' ORDER BY id"
        assert postgres._query(result) == sqlite._query(result) == [("t1", 1, 5), (None, 0, 6)]


def test_legacy_checkpoints_round_trip_on_postgres(database: str) -> None:
    with PostgresRunLog(database) as log:
        log.save_checkpoint("r1", "s", 1, [{"role": "user", "content": "a"}], {"n": 1})
        log.save_checkpoint("r1", "s", 2, [{"role": "assistant", "content": "b"}], {"n": 2}, keep=1)
        saved = log.load_checkpoint("s")
    assert saved is not None
    assert saved.step == 2 and saved.state == {"n": 2}
    assert [m["content"] for m in saved.messages] == ["a", "b"]


def test_workers_opening_a_new_database_together_migrate_it_once(database: str) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            with open_run_log(database) as log:
                assert isinstance(log, PostgresRunLog)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with PostgresRunLog(database) as log:
        assert log._query("SELECT count(*) FROM schema_version") == [(1,)]


def test_a_database_with_a_newer_run_log_is_refused(database: str) -> None:
    with PostgresRunLog(database) as log:
        log._query("UPDATE schema_version SET version = 99 RETURNING version")
    with pytest.raises(RunLogError, match="newer than this tinyharness"):
        PostgresRunLog(database)


def test_an_unreachable_database_is_one_clear_error() -> None:
    with pytest.raises(RunLogError, match="cannot connect to the run log"):
        PostgresRunLog("postgresql://nobody@127.0.0.1:1/none")
