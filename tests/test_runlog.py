"""The SQLite run log: migrations, logging a scripted run, export, redaction, bad files,
checkpoints, killed runs."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tinyharness import runlog
from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.base import Unmanaged
from tinyharness.events import EventBus, JsonlSink, ListSink
from tinyharness.messages import Message
from tinyharness.models.base import ModelRequest
from tinyharness.models.scripted import ScriptedModel
from tinyharness.runlog import RunLog, RunLogError, RunNotFound
from tinyharness.tools.base import ToolRegistry, function_tool

OPENAI_KEY = "sk-proj-" + "Q7x9Lm2Kp4Rt8Vw3Yz6Bn1Cd5Fg0Hj" * 2
GITHUB_TOKEN = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0hJ2kL5"


@function_tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up
    """
    if key == "missing":
        raise KeyError(key)
    if key == "secret":
        return f"the deploy key is {OPENAI_KEY}"
    return f"value of {key}"


def turn(call_id: str, key: str, tokens: int, purpose: str = "agent") -> dict[str, Any]:
    return {
        "purpose": purpose,
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": "lookup", "input": {"key": key}}],
        "usage": {"input_tokens": tokens - 10, "output_tokens": 10},
    }


def answer(text: str, tokens: int, purpose: str = "agent") -> dict[str, Any]:
    return {
        "purpose": purpose,
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": tokens - 5, "output_tokens": 5},
    }


class CompactAt(Unmanaged):
    """A minimal context policy for tests: summarises the whole history when the window reaches
    ``limit`` tokens, through a compact-purpose model call, and reports a compaction event."""

    def __init__(self, bus: EventBus, limit: int) -> None:
        super().__init__()
        self.bus, self.limit = bus, limit
        self._compactions = 0

    @property
    def compactions(self) -> int:
        return self._compactions

    async def prepare(self, system: str, messages: list[Message], call_model: Any) -> list[Message]:
        if self._tokens < self.limit:
            return messages
        before, count = self._tokens, len(messages)
        request = ModelRequest(
            (Message.user("Summarise the conversation."),), "summariser", purpose="compact"
        )
        summary = (await call_model(request)).message.text
        self._tokens, self._compactions = 40, self._compactions + 1
        self.bus.emit(
            "compaction",
            n=self._compactions,
            strategy="summarize",
            tokens_before=before,
            tokens_after=self._tokens,
            messages_before=count,
            messages_after=1,
        )
        return [Message.user(f"{messages[0].text}\n\nSummary so far: {summary}")]

    async def recover(self, system: str, messages: list[Message], call_model: Any) -> list[Message]:
        return await self.prepare(system, messages, call_model)


# Agent calls at 100, 200, 300 tokens; compaction (call 4) before the 4th turn; 150, 260;
# compaction (call 7); final answer (call 8). Turn 2 asks for a missing key (a tool error).
SCRIPT = [
    turn("t1", "alpha", 100),
    turn("t2", "missing", 200),
    turn("t3", "secret", 300),
    answer("summary one", 30, "compact"),
    turn("t4", "beta", 150),
    turn("t5", GITHUB_TOKEN, 260),
    answer("summary two", 30, "compact"),
    answer("all done", 120),
]


def scripted_run(sinks: list[Any], *, trace: bool = True, run_id: str | None = None) -> Agent:
    bus = EventBus(sinks, run_id=run_id)
    model = ScriptedModel({"responses": SCRIPT})
    agent = Agent(
        model, ToolRegistry([lookup]), AgentConfig(trace=trace), context=CompactAt(bus, 250), events=bus
    )
    result = agent.run("Find alpha and beta")
    assert result.stop == "end_turn" and result.compactions == 2
    asyncio.run(model.aclose())  # the script was used up exactly
    return agent


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def table(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


# --- schema -----------------------------------------------------------------------------------


def test_new_log_gets_every_migration_once(db: Path) -> None:
    with RunLog(db) as log:
        assert log.schema_version == runlog.SCHEMA_VERSION
    names = {r[0] for r in table(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    for expected in ("runs", "events", "model_calls", "tool_calls", "compactions", "memory_ops",
                     "notes_ops", "errors", "checkpoints", "checkpoint_messages"):  # fmt: skip
        assert expected in names
    assert table(db, "PRAGMA application_id")[0][0] == runlog.APPLICATION_ID
    assert table(db, "PRAGMA journal_mode")[0][0] == "wal"


def test_migrations_run_once_and_upgrade_keeps_data(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with RunLog(db) as log:
        log.emit({"type": "run_start", "seq": 1, "ts": 1.0, "run_id": "r1", "task": "t", "model": "m"})
    schema_before = table(db, "SELECT sql FROM sqlite_master ORDER BY name")
    with RunLog(db):  # reopening at the same version changes nothing
        pass
    assert table(db, "SELECT sql FROM sqlite_master ORDER BY name") == schema_before

    second = ["CREATE TABLE upgrade_marks (n INTEGER)", "INSERT INTO upgrade_marks VALUES (1)"]
    monkeypatch.setattr(runlog.schema, "MIGRATIONS", [*runlog.MIGRATIONS, second])
    monkeypatch.setattr(runlog, "SCHEMA_VERSION", len(runlog.MIGRATIONS))
    for _ in range(3):
        with RunLog(db) as log:
            assert log.schema_version == len(runlog.schema.MIGRATIONS)
    assert table(db, "SELECT count(*) FROM upgrade_marks") == [(1,)]  # applied exactly once
    assert table(db, "SELECT id, task FROM runs") == [("r1", "t")]


def test_default_path_follows_tinyharness_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    assert runlog.default_path() == tmp_path / "home" / "runs.db"
    monkeypatch.delenv("TINYHARNESS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert runlog.default_path() == tmp_path / "xdg" / "tinyharness" / "runs.db"
    with RunLog() as log:  # creates the folder
        assert log.path == tmp_path / "xdg" / "tinyharness" / "runs.db"
    assert log.path.is_file()


# --- bad files --------------------------------------------------------------------------------


def _newer_schema(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA application_id = {runlog.APPLICATION_ID}")
        conn.execute("CREATE TABLE runs (id TEXT)")
        conn.execute(f"PRAGMA user_version = {runlog.SCHEMA_VERSION + 1}")
        conn.commit()


def _other_program(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
        conn.commit()


def _damaged_log(path: Path) -> None:
    with RunLog(path) as log:
        log.emit({"type": "run_start", "seq": 1, "ts": 1.0, "run_id": "r1", "task": "t", "model": "m"})
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xde\xad\xbe\xef" * ((4096 - 100) // 4)  # page 1's b-tree: the schema
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b"this is not a database, just some text\n" * 20), "corrupt"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8), "corrupt"),
        (_damaged_log, "corrupt"),
        (_newer_schema, "newer"),
        (_other_program, "another program"),
    ],
    ids=["text", "bad-header", "damaged-schema-page", "newer-schema", "other-program"],
)
def test_unusable_file_is_refused_and_left_untouched(db: Path, make: Any, message: str) -> None:
    make(db)
    before = db.read_bytes()
    with pytest.raises(RunLogError, match=message):
        RunLog(db)
    assert db.read_bytes() == before
    assert not db.with_name(db.name + "-wal").exists()


def test_missing_file_with_create_false(db: Path) -> None:
    with pytest.raises(RunLogError, match="no run log"):
        RunLog(db, create=False)
    assert not db.exists()


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunLogError, match="folder"):
        RunLog(tmp_path)


# --- logging a run ----------------------------------------------------------------------------


def test_scripted_run_is_logged_in_every_table(db: Path) -> None:
    with RunLog(db, session="demo") as log:
        agent = scripted_run([log])
        run_id = agent.events.run_id
        run = log.get_run(run_id)
        assert (run.task, run.model, run.stop, run.final) == ("Find alpha and beta", "scripted", "end_turn",
                                                             "all done")  # fmt: skip
        assert (run.model_calls, run.compactions, run.tool_calls, run.session) == (8, 2, 5, "demo")
        assert run.ended is not None and run.started is not None and run.ended >= run.started
    calls = table(db, "SELECT call, purpose, tokens, input_tokens, request IS NOT NULL FROM model_calls")
    assert [c[:3] for c in calls] == [
        (1, "agent", 100), (2, "agent", 200), (3, "agent", 300), (4, "compact", 300),
        (5, "agent", 150), (6, "agent", 260), (7, "compact", 260), (8, "agent", 120),
    ]  # fmt: skip
    assert all(c[4] for c in calls)  # traced requests are stored
    tools = table(db, "SELECT call_id, name, ok, chars FROM tool_calls ORDER BY id")
    assert [(t[0], t[2]) for t in tools] == [("t1", 1), ("t2", 0), ("t3", 1), ("t4", 1), ("t5", 1)]
    assert all(t[3] > 0 for t in tools)
    compactions = table(db, "SELECT n, tokens_before, tokens_after, after_call FROM compactions")
    assert compactions == [(1, 300, 40, 4), (2, 260, 40, 7)]
    events = table(db, "SELECT seq, type FROM events ORDER BY id")
    assert [e[0] for e in events] == list(range(1, len(events) + 1))
    assert events[0][1] == "run_start" and events[-1][1] == "run_end"


def test_export_is_byte_identical_to_the_events_file(db: Path, tmp_path: Path) -> None:
    """Both persisting sinks redact the same way: the export equals the --events file, byte for
    byte, and neither holds the planted secrets."""
    jsonl_path = tmp_path / "events.jsonl"
    jsonl = JsonlSink(jsonl_path)
    with RunLog(db) as log:
        agent = scripted_run([jsonl, log])
        jsonl.close()
        exported = log.event_lines(agent.events.run_id[:6])
    original = jsonl_path.read_text(encoding="utf-8").splitlines()
    assert len(exported) == len(original) > 20
    assert exported == original
    text = "\n".join(original)
    assert OPENAI_KEY not in text and GITHUB_TOKEN not in text
    assert "[REDACTED:github_token]" in text


def _normalised(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**e, "run_id": "RUN", "ts": 0} for e in events]


def test_events_round_trip_against_a_separate_jsonl_run(db: Path, tmp_path: Path) -> None:
    jsonl_path = tmp_path / "events.jsonl"
    jsonl = JsonlSink(jsonl_path)
    scripted_run([jsonl], trace=False)
    jsonl.close()
    with RunLog(db) as log:
        agent = scripted_run([log], trace=False)
        logged = log.events(agent.events.run_id)
    from_file = [json.loads(line) for line in jsonl_path.read_text(encoding="utf-8").splitlines()]
    assert GITHUB_TOKEN not in json.dumps(from_file)  # the events file is redacted too
    assert runlog.redact_value(from_file) == from_file
    assert len(logged) == len(from_file) > 20
    assert _normalised(logged) == _normalised(from_file)


def test_planted_secrets_never_reach_the_database_file(db: Path) -> None:
    with RunLog(db) as log:
        agent = scripted_run([log])
        log.save_checkpoint(
            agent.events.run_id,
            "s1",
            3,
            [{"role": "user", "content": [{"type": "text", "text": f"use {GITHUB_TOKEN}"}]}],
            {"env": {"OPENAI_API_KEY": OPENAI_KEY}},
        )
        shown = json.dumps(log.events(agent.events.run_id))
        checkpoint = log.load_checkpoint("s1")
    assert checkpoint is not None and "REDACTED" in json.dumps(checkpoint.messages)
    assert "REDACTED" in json.dumps(checkpoint.state)
    assert "REDACTED" in shown and OPENAI_KEY not in shown and GITHUB_TOKEN not in shown
    for path in db.parent.iterdir():  # the database, and any WAL or shared-memory file
        data = path.read_bytes()
        assert OPENAI_KEY.encode() not in data and GITHUB_TOKEN.encode() not in data, path.name
        assert b"Q7x9Lm2Kp4Rt8Vw3" not in data  # not even a piece of it


def test_redact_value_reaches_nested_strings_and_keys() -> None:
    value = {"a": [OPENAI_KEY, {"b": f"x {GITHUB_TOKEN} y"}], GITHUB_TOKEN: 1, "n": 2.5, "ok": True}
    out = json.dumps(runlog.redact_value(value))
    assert OPENAI_KEY not in out and GITHUB_TOKEN not in out
    assert runlog.redact_value(value)["n"] == 2.5 and runlog.redact_value(value)["ok"] is True


def test_memory_notes_and_errors_are_kept(db: Path) -> None:
    base = {"ts": 5.0, "run_id": "m1"}
    with RunLog(db) as log:
        log.emit({"type": "run_start", "seq": 1, **base, "task": "t", "model": "m"})
        log.emit({"type": "memory_recall", "seq": 2, **base, "query": "user name", "hits": 2})
        log.emit({"type": "memory_write", "seq": 3, **base, "op": "add", "text": "likes tea"})
        log.emit({"type": "notes_write", "seq": 4, **base, "op": "append", "chars": 12})
        log.emit({"type": "error", "seq": 5, **base, "stop": "max_iterations", "message": "too many"})
        assert log.get_run("m1").errors == 1
    assert table(db, "SELECT kind, op FROM memory_ops ORDER BY id") == [("recall", None), ("write", "add")]
    assert json.loads(table(db, "SELECT body FROM memory_ops WHERE kind = 'recall'")[0][0])["hits"] == 2
    assert table(db, "SELECT op, chars FROM notes_ops") == [("append", 12)]
    assert table(db, "SELECT stop, message FROM errors") == [("max_iterations", "too many")]


def test_unfinished_run_and_lookup_by_prefix(db: Path) -> None:
    with RunLog(db) as log:
        for run_id, ts in (("abc111", 1.0), ("abc222", 2.0), ("xyz333", 3.0)):
            log.emit(
                {"type": "run_start", "seq": 1, "ts": ts, "run_id": run_id, "task": run_id, "model": "m"}
            )
        log.emit(
            {"type": "run_end", "seq": 2, "ts": 4.0, "run_id": "xyz333", "stop": "end_turn", "final": "ok"}
        )
        assert [r.id for r in log.list_runs(10)] == ["xyz333", "abc222", "abc111"]
        assert [r.id for r in log.list_runs(1)] == ["xyz333"]
        assert log.get_run("xyz").stop == "end_turn"
        assert log.get_run("abc2").stop is None  # never ended: running or killed
        with pytest.raises(RunNotFound, match="ambiguous"):
            log.get_run("abc")
        with pytest.raises(RunNotFound, match="no run"):
            log.get_run("nope")
        with pytest.raises(RunNotFound):
            log.get_run("a%")  # LIKE wildcards are taken literally
        with pytest.raises(RunNotFound):
            log.events("")


def test_resumed_run_under_the_same_id_appends(db: Path) -> None:
    with RunLog(db) as log:
        for attempt in range(2):  # seq starts again at 1 in the resumed process
            log.emit(
                {"type": "run_start", "seq": 1, "ts": 1.0 + attempt, "run_id": "r", "task": "t", "model": "m"}
            )
            log.emit(
                {
                    "type": "tool_call",
                    "seq": 2,
                    "ts": 1.5,
                    "run_id": "r",
                    "call_id": "c",
                    "name": "x",
                    "args": {},
                }
            )
            log.emit({"type": "tool_result", "seq": 3, "ts": 1.6, "run_id": "r", "call_id": "c", "name": "x",
                      "ok": attempt == 1, "chars": 1, "truncated": False})  # fmt: skip
        log.emit({"type": "run_end", "seq": 4, "ts": 9.0, "run_id": "r", "stop": "end_turn", "final": "f"})
        assert len(log.events("r")) == 7
        run = log.get_run("r")
        assert (run.started, run.stop, run.tool_calls) == (1.0, "end_turn", 2)
    assert table(db, "SELECT ok FROM tool_calls ORDER BY id") == [(0,), (1,)]


def test_events_from_worker_threads(db: Path) -> None:
    with RunLog(db) as log:
        bus = EventBus([log], run_id="threads")

        def write(k: int) -> None:
            for i in range(20):
                bus.emit("notes_write", op="append", chars=k * 100 + i)

        threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(log.events("threads")) == 80
    assert table(db, "SELECT count(DISTINCT chars) FROM notes_ops") == [(80,)]


KILLED_RUN = """
import os, signal, sys
from tinyharness.runlog import RunLog
log = RunLog(sys.argv[1])
log.emit({"type": "run_start", "seq": 1, "ts": 1.0, "run_id": "killed", "task": "t", "model": "m"})
for i in range(2, 6):
    log.emit({"type": "tool_call", "seq": i, "ts": 1.0, "run_id": "killed", "call_id": f"c{i}",
              "name": "x", "args": {}})
log.save_checkpoint("killed", "sess", 4, [{"role": "user", "content": "hi"}], {"done": ["c2"]})
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_process_keeps_every_committed_event(db: Path) -> None:
    process = subprocess.run([sys.executable, "-c", KILLED_RUN, str(db)], capture_output=True, timeout=60)
    assert process.returncode == -9, process.stderr.decode()
    with RunLog(db) as log:
        assert [e["seq"] for e in log.events("killed")] == [1, 2, 3, 4, 5]
        assert log.get_run("killed").stop is None
        assert log.load_checkpoint("sess") == (
            "killed",
            4,
            [{"role": "user", "content": "hi"}],
            {"done": ["c2"]},
        )


# --- checkpoints ------------------------------------------------------------------------------


def test_checkpoint_save_load_and_replace(db: Path) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    with RunLog(db) as log:
        assert log.load_checkpoint("s") is None
        log.save_checkpoint("run1", "s", 1, messages, {"finished_tools": ["t1"], "notes": 2})
        log.save_checkpoint("run1", "other", 9, [], {})
        log.save_checkpoint("run2", "s", 2, [*messages, {"role": "assistant", "content": "hi"}], {"n": 3})
    with RunLog(db) as log:  # committed: visible to a new connection
        run_id, step, loaded, state = log.load_checkpoint("s") or ("", 0, [], {})
        assert (run_id, step, state) == ("run2", 2, {"n": 3})
        assert loaded == [*messages, {"role": "assistant", "content": "hi"}]
        checkpoint = log.load_checkpoint("other")
        assert checkpoint is not None and checkpoint.step == 9


def test_failed_checkpoint_leaves_the_previous_one(db: Path) -> None:
    with RunLog(db) as log:
        log.save_checkpoint("run1", "s", 1, [], {"v": 1})
        circular: dict[str, Any] = {"v": 2}
        circular["self"] = circular
        with pytest.raises(RunLogError, match="JSON"):
            log.save_checkpoint("run1", "s", 2, [], circular)
        assert log.load_checkpoint("s") == ("run1", 1, [], {"v": 1})


def test_list_sink_and_run_log_see_the_same_events(db: Path) -> None:
    sink = ListSink()
    with RunLog(db) as log:
        agent = scripted_run([sink, log], trace=False)
        assert [e["type"] for e in log.events(agent.events.run_id)] == [e["type"] for e in sink.events]


def test_a_checkpoint_step_rewrites_only_the_messages_after_keep(db: Path) -> None:
    one, two, three = ({"role": r, "content": [{"type": "text", "text": t}]} for r, t in
                       (("user", "a"), ("assistant", "b"), ("user", "c")))  # fmt: skip
    with RunLog(db) as log:
        log.save_checkpoint("r1", "s", 1, [one, two], {"n": 1})
        log.save_checkpoint("r1", "s", 2, [three], {"n": 2}, keep=2)
        assert log.load_checkpoint("s") == ("r1", 2, [one, two, three], {"n": 2})
        log.save_checkpoint("r1", "s", 3, [three], {"n": 3}, keep=0)  # a compaction rewrote it all
        assert log.load_checkpoint("s") == ("r1", 3, [three], {"n": 3})


# --- a turn's events in fewer transactions ------------------------------------------------------

BATCHED_RUN = """
import os, signal, sys
from tinyharness.events import EventBus
from tinyharness.runlog import RunLog
log = RunLog(sys.argv[1])
bus = EventBus([log], run_id="turns")
usage = {"input_tokens": 5, "output_tokens": 1}
bus.emit("run_start", task="t", model="m")
bus.emit("model_call", call=1, purpose="agent", stop_reason="tool_use", usage=usage, tokens=6, messages=1)
bus.emit("tool_call", call_id="c1", name="write_file", args={"path": "a"})
if sys.argv[2] == "tool_call":
    os.kill(os.getpid(), signal.SIGKILL)  # as the tool starts: the reply and the call are committed
bus.emit("tool_result", call_id="c1", name="write_file", ok=True, chars=2, truncated=False)
bus.flush()  # the loop flushes before its next request
bus.emit("model_call", call=2, purpose="agent", stop_reason="tool_use", usage=usage, tokens=9, messages=3)
os.kill(os.getpid(), signal.SIGKILL)  # during the harness's own work: only the last reply is lost
"""


@pytest.mark.parametrize("point", ["tool_call", "next_reply"])
def test_a_killed_run_keeps_every_event_up_to_its_last_wait(db: Path, point: str) -> None:
    """Events are committed in batches, never across a wait: a tool_call is committed (with the
    reply that asked for it) before its tool runs, and what a turn logged after it is committed
    before the next model request, so a kill loses at most the events of the harness's own
    last moments, never a call that may have had an effect."""
    argv = [sys.executable, "-c", BATCHED_RUN, str(db), point]
    process = subprocess.run(argv, capture_output=True, timeout=60)
    assert process.returncode == -9, process.stderr.decode()
    with RunLog(db) as log:
        stored = [(e["type"], e.get("call_id")) for e in log.events("turns")]
        calls = table(db, "SELECT call_id, ok FROM tool_calls")
    started = [("run_start", None), ("model_call", None), ("tool_call", "c1")]
    if point == "tool_call":
        assert stored == started and calls == [("c1", None)]
    else:
        assert stored == [*started, ("tool_result", "c1")] and calls == [("c1", 1)]


def test_kept_back_events_are_committed_by_the_next_event_a_query_or_close(db: Path) -> None:
    usage = {"input_tokens": 5, "output_tokens": 1}
    with RunLog(db) as log:
        bus = EventBus([log], run_id="r")
        bus.emit("run_start", task="t", model="m")
        bus.emit("tool_call", call_id="c1", name="x", args={})
        bus.emit("tool_result", call_id="c1", name="x", ok=True, chars=1, truncated=False)
        assert table(db, "SELECT count(*) FROM events") == [(2,)]  # kept back: not committed yet
        assert [e["type"] for e in log.events("r")][-1] == "tool_result"  # this process reads it
        bus.emit(
            "model_call", call=1, purpose="agent", stop_reason="tool_use", usage=usage, tokens=6, messages=1
        )
        assert table(db, "SELECT count(*) FROM events") == [(3,)]
        bus.emit(
            "model_call", call=2, purpose="agent", stop_reason="end_turn", usage=usage, tokens=7, messages=3
        )
        assert table(db, "SELECT count(*) FROM events") == [(5,)]  # a final answer: at once
        bus.emit(
            "model_call", call=3, purpose="agent", stop_reason="tool_use", usage=usage, tokens=8, messages=5
        )
    assert table(db, "SELECT count(*) FROM events") == [(6,)]  # closing commits it
    with RunLog(db) as log:
        assert [e["seq"] for e in log.events("r")] == [1, 2, 3, 4, 5, 6]
