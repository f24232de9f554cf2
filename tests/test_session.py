"""Sessions: one writer at a time (an OS lock that dies with its process), stuck sessions
repaired on load, the resume rules, and the store's own guards."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardening_support import answer, tool_turn, write_script
from tinyharness.cli import main
from tinyharness.context.validator import validate_messages
from tinyharness.errors import ConfigError
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.runlog import RunLog
from tinyharness.session import (
    UNKNOWN_OUTCOME,
    SavedSession,
    SessionBusy,
    SessionStore,
    SessionStoreError,
    close_orphans,
    start_point,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def run_argv(tmp_path: Path, workspace: Path, responses: list[dict[str, Any]], *args: str) -> list[str]:
    script = write_script(tmp_path / f"s{len(list(tmp_path.glob('s*.json')))}.json", responses)
    return [
        "run",
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(workspace),
        "--log",
        str(tmp_path / "runs.db"),
        "--quiet",
        "--no-memory",
        *args,
    ]


# --- one writer at a time -----------------------------------------------------------------------


def test_a_second_run_on_a_busy_session_gets_one_line_and_exit_2(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SessionStore(tmp_path / "runs.sessions.db") as store:
        holder = store.open("shared")
        holder.lock()
        code = main(run_argv(tmp_path, workspace, [answer("hi", None)], "--session", "shared", "task"))
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "'shared'" in err and "in use" in err
        assert f"process {os.getpid()}" in err
        holder.close()
        assert main(run_argv(tmp_path, workspace, [answer("hi", None)], "--session", "shared", "task")) == 0


def test_the_lock_is_released_when_its_process_is_killed(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.sessions.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from tinyharness.session import SessionStore\n"
            f"session = SessionStore(Path({str(store_path)!r})).open('s')\n"
            "session.lock()\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with SessionStore(store_path) as store:
            with pytest.raises(SessionBusy, match=f"process {holder.pid}"):
                store.open("s").lock()
            other = store.open("other")
            other.lock()  # other sessions are free
            other.close()
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
            session = store.open("s")
            session.lock()  # the kernel released the dead process's lock
            session.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_two_processes_racing_for_one_session_never_both_write(tmp_path: Path, workspace: Path) -> None:
    """Both start a run on the same session at once: at most one runs; the other exits 2 with
    the one-line error, and the session stays valid (continuing it works)."""
    script = write_script(
        tmp_path / "s.json", [tool_turn(("n1", "note", {"text": "x"}), purpose=None), answer("ok", None)]
    )
    argv = [sys.executable, "-m", "tinyharness", "run", "--model", f"scripted:{script}", "--quiet"]
    argv += ["--workspace", str(workspace), "--log", str(tmp_path / "runs.db"), "--session", "race"]
    argv += ["--allow-write", "--no-memory", "go"]
    env = {**os.environ, "TINYHARNESS_HOME": str(tmp_path / "home")}
    procs = [subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outcomes = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes in ([0, 0], [0, 2]), outcomes
    for code, err in outcomes:
        if code == 2:
            assert err.count("\n") == 1 and "'race'" in err
    with SessionStore(tmp_path / "runs.sessions.db") as store:
        saved = store.open("race").load()
    assert saved is not None and not saved.interrupted
    validate_messages(saved.messages)


# --- stuck sessions ------------------------------------------------------------------------------


def use(call_id: str) -> Message:
    return Message("assistant", (ToolUseBlock(call_id, "note", {"text": call_id}),))


def results(*call_ids: str) -> Message:
    return Message("user", tuple(ToolResultBlock(c, "ok") for c in call_ids))


def test_interleaved_histories_are_repaired_with_unknown_outcomes() -> None:
    """What two writers on one session left behind: calls without results, results without
    calls, two user messages in a row."""
    broken = [
        Message.user("task A"),
        use("a1"),
        Message.user("task B"),  # the other writer's task: a1 never got its result
        use("b1"),
        results("a1"),  # a1's result, answering the wrong call
        Message.user("more"),
        Message.assistant("done"),
    ]
    repaired, closed = close_orphans(broken)
    validate_messages(repaired)
    assert closed == ["a1", "b1"]
    unknown = [r.tool_use_id for m in repaired for r in m.tool_results if r.content == UNKNOWN_OUTCOME]
    assert unknown == ["a1", "b1"]
    assert [m.text for m in repaired if m.role == "assistant"] == ["", "", "done"]


ids = st.sampled_from(["a", "b", "c", "z"])
assistant_messages = st.lists(
    st.one_of(st.just(TextBlock("t")), ids.map(lambda i: ToolUseBlock(i, "note", {}))),
    min_size=1,
    max_size=3,
    unique_by=lambda b: getattr(b, "id", "text"),
).map(lambda content: Message("assistant", tuple(content)))
user_messages = st.lists(
    st.one_of(st.just(TextBlock("t")), ids.map(lambda i: ToolResultBlock(i, "r"))),
    min_size=1,
    max_size=3,
    unique_by=lambda b: getattr(b, "tool_use_id", "text"),
).map(lambda content: Message("user", tuple(content)))


@given(st.lists(st.one_of(assistant_messages, user_messages), max_size=12))
@settings(max_examples=300, deadline=None)
def test_any_broken_history_is_made_valid(history: list[Message]) -> None:
    """Whatever order messages were left in: the repaired history passes the request validator
    (once the loop answers the last turn's calls), keeps every assistant message as it was, and
    invents no result: each added one says the outcome is unknown."""
    repaired, closed = close_orphans(history)
    if not repaired:
        return
    if repaired[-1].tool_uses:
        last = repaired[-1].tool_uses
        repaired = [*repaired, Message("user", tuple(ToolResultBlock(c.id, "r") for c in last))]
    validate_messages(repaired)
    assert [m for m in repaired if m.role == "assistant"] == [m for m in history if m.role == "assistant"]
    added = [r for m in repaired for r in m.tool_results if r.content == UNKNOWN_OUTCOME]
    assert len(added) == len(closed)


def test_a_stuck_session_continues_with_resume(tmp_path: Path, workspace: Path) -> None:
    """A session whose history ends with a call nobody answered, and no record of it starting
    (e.g. written by an older version): --resume runs it, since it never started."""
    with SessionStore(tmp_path / "runs.sessions.db") as store:
        session = store.open("stuck")
        session.save([Message.user("task"), use("a1")], {"model_calls": 1})
        session.call_started(ToolUseBlock("a1", "note", {}))
    argv = run_argv(tmp_path, workspace, [answer("repaired", None)], "--session", "stuck", "--allow-write")
    assert main([*argv, "--resume"]) == 0
    with SessionStore(tmp_path / "runs.sessions.db") as store:
        saved = store.open("stuck").load()
    assert saved is not None and saved.messages[2].tool_results[0].content == UNKNOWN_OUTCOME
    assert not (workspace / "NOTES.md").exists()  # started, outcome unknown: not run again


def test_a_session_saved_in_an_old_run_log_still_resumes(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with RunLog(tmp_path / "runs.db") as log:
        messages = [{"role": "user", "content": "task"}, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a1", "name": "note", "input": {"text": "x"}}]}]  # fmt: skip
        log.save_checkpoint("old", "legacy", 3, messages, {"model_calls": 1, "started": ["a1"]})
    argv = run_argv(tmp_path, workspace, [answer("on", None)], "--session", "legacy", "--resume")
    assert main(argv) == 0
    assert "older version" in capsys.readouterr().err
    assert not (workspace / "NOTES.md").exists()


# --- the resume rules ----------------------------------------------------------------------------


def test_the_resume_rules() -> None:
    done = SavedSession("r", [Message.user("q"), Message.assistant("a")], {"model_calls": 1})
    cut = SavedSession("r", [Message.user("q"), use("a1")], {"model_calls": 1})
    with pytest.raises(ConfigError, match="no interrupted run"):
        start_point(done, "s", resume=True)
    with pytest.raises(ConfigError, match="--resume"):
        start_point(cut, "s", resume=False)
    with pytest.raises(ConfigError, match="no interrupted run"):
        start_point(None, "s", resume=True)
    assert start_point(done, "s", resume=False).state == {}  # a new task starts a new count
    assert start_point(cut, "s", resume=True).state == {"model_calls": 1}


def test_resume_without_a_session_name_continues_the_latest(tmp_path: Path, workspace: Path) -> None:
    broken = [tool_turn(("n1", "note", {"text": "one"}), purpose=None)]  # then the script runs out
    assert main(run_argv(tmp_path, workspace, broken, "--allow-write", "task")) == 1
    assert main(run_argv(tmp_path, workspace, [answer("resumed", None)], "--resume")) == 0
    assert (workspace / "NOTES.md").read_text(encoding="utf-8") == "one\n"


# --- the store's guards --------------------------------------------------------------------------


def test_the_store_refuses_another_programs_database_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "runs.sessions.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE sessions (x)")
        db.commit()
    before = path.read_bytes()
    with pytest.raises(SessionStoreError, match="another program"):
        SessionStore(path)
    assert path.read_bytes() == before and not Path(f"{path}-wal").exists()


def test_messages_round_trip_exactly_lone_surrogates_included(tmp_path: Path) -> None:
    history = [Message.user("caf\u00e9 \ud800 \u4e2d\u6587"), Message.assistant(json.dumps({"k": 1}))]
    with SessionStore(tmp_path / "s.db") as store:
        store.open("s").save(history, {"n": 1})
        loaded = store.open("s").load()
    assert loaded is not None and loaded.messages == history and loaded.state == {"n": 1}
