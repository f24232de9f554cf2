"""Concurrency: two processes writing runs into one SQLite run log, and 50 agent sessions at once
in one process (asyncio.gather), each with its own workspace and notes, sharing one run log.
No corruption, no lost write, every result correct. (The memory store's own two-process test
lives with the memory suite.) Sizes grow with ``TINYHARNESS_SUITE_SCALE``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from hardening_support import answer, scaled, tool_turn, write_script
from tinyharness.agent import Agent
from tinyharness.events import EventBus
from tinyharness.models.scripted import ScriptedModel
from tinyharness.runlog import RunLog
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.permissions import Permissions

SESSIONS = scaled(50)
RUNS_PER_PROCESS = scaled(6)

WRITER = """
import sys
from tinyharness.cli import main
script, workspace, log, who, runs = sys.argv[1:6]
for i in range(int(runs)):
    code = main(["run", "--model", f"scripted:{script}", "--workspace", workspace, "--log", log,
                 "--session", f"{who}-{i}", "--allow-write", "--quiet", f"task {who} {i}"])
    assert code == 0, code
"""


def session_script(index: int) -> list[dict[str, object]]:
    return [
        tool_turn(
            ("a", "note", {"text": f"session {index} first"}),
            ("b", "write_file", {"path": f"out/{index}.txt", "content": f"value {index}\n"}),
            purpose=None,
        ),
        tool_turn(
            ("c", "calculator", {"expression": f"{index} * 3"}),
            ("d", "read_file", {"path": f"out/{index}.txt"}),
            purpose=None,
        ),
        tool_turn(("e", "note", {"text": f"session {index} second"}), purpose=None),
        answer(f"session {index} is {index * 3}", None),
    ]


def test_two_processes_write_runs_into_one_log(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = write_script(tmp_path / "s.json", session_script(7))
    log = tmp_path / "runs.db"
    RunLog(log).close()  # created up front, so both processes open an existing log
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, script, str(workspace), str(log), who, str(RUNS_PER_PROCESS)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("p1", "p2")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    with closing(sqlite3.connect(log)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = db.execute("SELECT id, stop, final, session FROM runs").fetchall()
        assert len(runs) == 2 * RUNS_PER_PROCESS
        assert {r[1] for r in runs} == {"end_turn"} and {r[2] for r in runs} == {"session 7 is 21"}
        assert len({r[3] for r in runs}) == 2 * RUNS_PER_PROCESS
        per_run = db.execute("SELECT run_id, count(*) FROM events GROUP BY run_id").fetchall()
        assert len({count for _, count in per_run}) == 1  # every run logged every event
    with closing(sqlite3.connect(tmp_path / "runs.sessions.db")) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2 * RUNS_PER_PROCESS
    notes = (workspace / "NOTES.md").read_text(encoding="utf-8").splitlines()
    assert sorted(set(notes)) == ["session 7 first", "session 7 second"]
    assert len(notes) == 2 * 2 * RUNS_PER_PROCESS  # no append lost between the processes


def test_fifty_sessions_at_once_in_one_process(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs.db")

    async def session(index: int) -> tuple[int, str, str]:
        workspace = tmp_path / f"ws{index}"
        workspace.mkdir()
        bus = EventBus([log])
        tools = builtin_tools(workspace, permissions=Permissions(allow_write=True))
        agent = Agent(ScriptedModel({"responses": session_script(index)}), tools, events=bus)
        result = await agent.arun(f"task {index}")
        return index, result.stop, result.final

    async def everything() -> list[tuple[int, str, str]]:
        return await asyncio.gather(*(session(i) for i in range(SESSIONS)))

    try:
        outcomes = asyncio.run(everything())
    finally:
        log.close()
    assert outcomes == [(i, "end_turn", f"session {i} is {i * 3}") for i in range(SESSIONS)]
    for i in range(SESSIONS):
        workspace = tmp_path / f"ws{i}"
        assert (workspace / "NOTES.md").read_text(
            encoding="utf-8"
        ) == f"session {i} first\nsession {i} second\n"
        assert (workspace / "out" / f"{i}.txt").read_text(encoding="utf-8") == f"value {i}\n"
    with closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT stop, count(*) FROM runs GROUP BY stop").fetchall()
        assert rows == [("end_turn", SESSIONS)]
        tool_rows = db.execute("SELECT count(*) FROM tool_calls WHERE ok = 1").fetchone()[0]
        assert tool_rows == 5 * SESSIONS
