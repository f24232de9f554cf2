"""Durable runs on a real PostgreSQL with real worker processes (``tinyharness worker``).

The runs use the scripted model with a fixed latency and a request log (one line per request,
with the process id), and the shell tool appending one line per execution to a side file in
the run's workspace. A worker is SIGKILLed while it runs; the other worker takes its runs up.
What must hold: every run finishes exactly once; no tool call ran twice (a call the kill cut
off is answered "outcome unknown"); no model request was sent again except the one the kill
cut off in flight (its answer was never recorded); the run log has every event once.

Skipped without PostgreSQL (``scripts/pg-test-server.sh`` exports TINYHARNESS_TEST_PG_URL; CI
starts it).
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, tool_turn
from tinyharness.cli import main

RUNS = 50
SHELL = ["--shell", "--yes", "--allow", "shell:*", "--no-memory", "--max-output-tokens", "256"]


class Worker:
    """A ``tinyharness worker`` process."""

    def __init__(
        self,
        url: str,
        tmp: Path,
        name: str,
        concurrency: int = 4,
        rights: tuple[str, ...] = ("--allow-shell",),
    ) -> None:
        self.log = tmp / f"{name}.err"
        with self.log.open("w") as err:
            command = ["worker", "--log", url, "--concurrency", str(concurrency)]
            command += ["--workspace-root", str(tmp), *rights]
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tinyharness", *command],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.executor_id = self._announced()

    def _announced(self) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = self.log.read_text(encoding="utf-8")
            if "takes runs from" in text:
                return text.split("worker ", 1)[1].split(" ", 1)[0]
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited: {text}")
            time.sleep(0.2)
        raise AssertionError("worker did not start")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def write_run(root: Path, index: int, responses: list[dict[str, Any]], latency: float) -> tuple[Path, Path]:
    """A workspace and a script for one run."""
    workspace = root / f"run{index}"
    workspace.mkdir(parents=True)
    script = root / f"script{index}.json"
    data = {"latency": latency, "request_log": f"requests{index}.jsonl", "responses": responses}
    script.write_text(json.dumps(data), encoding="utf-8")
    return workspace, script


def submit(url: str, workspace: Path, script: Path, task: str, *extra: str) -> str:
    """``tinyharness submit``; the run id it prints."""
    argv = ["submit", "--log", url, "--model", f"scripted:{script}", "--workspace", str(workspace)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, *extra, task])
    assert code == 0
    return out.getvalue().strip()


def queue_states(url: str) -> dict[str, Any]:
    from tinyharness.durable.queue import Client

    client = Client(url)
    try:
        return {run.id: run for run in client.list_runs(1000)}
    finally:
        client.close()


def wait_until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def requests(root: Path, index: int) -> list[dict[str, Any]]:
    path = root / f"requests{index}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_no_recorded_request_resent(lines: list[dict[str, Any]], killed_pid: int) -> bool:
    """Each request number once, except the one the kill cut off in flight: sent first by the
    killed worker as its last request of the run, then again by the survivor. True when the
    run moved from the killed worker to the other one."""
    counts = Counter((line["purpose"], line["n"]) for line in lines)
    pids = {line["pid"] for line in lines}
    again = [key for key, count in counts.items() if count > 1]
    assert all(counts[key] == 2 for key in again), counts
    assert len(again) <= 1, f"more than the request in flight was sent again: {again}"
    if again:
        by_killed = [line for line in lines if line["pid"] == killed_pid]
        last = by_killed[-1]
        assert (last["purpose"], last["n"]) == again[0], "a recorded request was sent again"
    return killed_pid in pids and len(pids) == 2


def log_events(url: str, run_id: str) -> list[dict[str, Any]]:
    from tinyharness.runlog import PostgresRunLog

    with PostgresRunLog(url) as log:
        return log.events(run_id)


def assert_log_complete(events: list[dict[str, Any]], *, model_calls: int, tool_calls: int) -> None:
    kinds = Counter(e["type"] for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), "an event is missing or twice"
    assert kinds["run_start"] == 1 and kinds["run_end"] == 1
    assert kinds["model_call"] == model_calls
    assert kinds["tool_call"] == tool_calls and kinds["tool_result"] == tool_calls
    assert events[-1]["type"] == "run_end" and events[-1]["stop"] == "end_turn"


# --- 2 workers, 50 runs, one worker SIGKILLed -------------------------------------------------


def test_a_killed_workers_runs_finish_on_the_other_exactly_once(database: str, tmp_path: Path) -> None:
    root = tmp_path / "shared"
    run_of: dict[str, int] = {}
    for index in range(RUNS):
        responses = [
            tool_turn(("c1", "shell", {"command": "sh tick.sh c1"})),
            tool_turn(("c2", "shell", {"command": "sh tick.sh c2"})),
            answer(f"run {index} done"),
        ]
        workspace, script = write_run(root, index, responses, latency=0.3)
        # The tool's side effect: one line per execution, then a while to be killed in.
        (workspace / "tick.sh").write_text('echo "$1" >> calls.log\nsleep 0.4\n', encoding="utf-8")
        run_of[submit(database, workspace, script, f"task {index}", *SHELL)] = index
    first = Worker(database, tmp_path, "a")
    second = Worker(database, tmp_path, "b")
    try:

        def first_is_busy() -> bool:
            states = queue_states(database)
            done = sum(run.state == "finished" for run in states.values())
            busy = [r for r in states.values() if r.state == "running" and r.worker == first.executor_id]
            # A run the worker has claimed but not yet asked the model for would move without a
            # trace in the requests: on a loaded machine all its runs can be in that state, so
            # wait until one of them has sent a request the kill can cut off.
            started = [
                r for r in busy if any(line["pid"] == first.proc.pid for line in requests(root, run_of[r.id]))
            ]
            return done >= 6 and bool(started)

        wait_until(first_is_busy, 300, "the first worker to be running runs")
        first.kill()
        wait_until(
            lambda: all(r.state in ("finished", "failed") for r in queue_states(database).values()),
            600,
            "every run to end",
        )
        states = queue_states(database)
    finally:
        first.stop()
        second.stop()

    assert len(states) == RUNS
    assert {run.state for run in states.values()} == {"finished"}, {r.id: r.state for r in states.values()}
    moved = 0
    for run_id, index in run_of.items():
        workspace = root / f"run{index}"
        calls = (workspace / "calls.log").read_text(encoding="utf-8").split()
        counts = Counter(calls)
        assert all(count == 1 for count in counts.values()), f"a tool call ran twice in run {index}"
        events = log_events(database, run_id)
        assert_log_complete(events, model_calls=3, tool_calls=2)
        results = [e for e in events if e["type"] == "tool_result"]
        unknown = {e["call_id"] for e in results if e.get("outcome") == "unknown"}
        assert set(calls) | unknown == {"c1", "c2"}, "a call neither ran nor was answered"
        assert events[-1]["final"] == f"run {index} done"
        moved += assert_no_recorded_request_resent(requests(root, index), first.proc.pid)
    assert moved >= 1  # the kill did cut runs off, and the other worker finished them


# --- kills at chosen points -------------------------------------------------------------------


def run_until_killed(
    database: str, tmp_path: Path, responses: list[dict[str, Any]], extra: list[str], purpose: str
) -> tuple[Path, str, Worker]:
    """Submit one run, run it on a worker, SIGKILL that worker while it waits for the model's
    answer to the first request of ``purpose``; a second worker then finishes it."""
    root = tmp_path / "shared"
    workspace, script = write_run(root, 0, responses, latency=0.05)
    data = json.loads(script.read_text(encoding="utf-8"))
    data["latency"] = 3.0  # every answer takes long enough to be killed while awaited
    script.write_text(json.dumps(data), encoding="utf-8")
    run_id = submit(database, workspace, script, "the task", *extra)
    first = Worker(database, tmp_path, "a", concurrency=1)
    try:

        def asked() -> bool:
            state = queue_states(database)[run_id].state
            if first.proc.poll() is not None or state not in ("queued", "running"):
                raise AssertionError(f"the run ended before its first {purpose} request")
            return any(line["purpose"] == purpose for line in requests(root, 0))

        wait_until(asked, 300, f"the first {purpose} request")
        first.kill()
    finally:
        first.stop()
    second = Worker(database, tmp_path, "b", concurrency=1)
    try:
        wait_until(lambda: queue_states(database)[run_id].state == "finished", 300, "the run to finish")
    finally:
        second.stop()
    return root, run_id, first


def test_a_worker_killed_during_a_compaction(database: str, tmp_path: Path) -> None:
    responses = [
        {**tool_turn(("n1", "note", {"text": "one"})), "usage": {"input_tokens": 100, "output_tokens": 5}},
        {**tool_turn(("n2", "note", {"text": "two"})), "usage": {"input_tokens": 7000, "output_tokens": 5}},
        {**answer("Summary: two notes written."), "purpose": "compact"},
        answer("done"),
    ]
    extra = ["--no-memory", "--context-window", "8000", "--max-output-tokens", "256"]
    extra += ["--strategy", "summarize", "--keep-recent", "1"]
    root, run_id, first = run_until_killed(database, tmp_path, responses, extra, "compact")
    assert (root / "run0" / "NOTES.md").read_text(encoding="utf-8") == "one\ntwo\n"  # no note twice
    lines = requests(root, 0)
    assert assert_no_recorded_request_resent(lines, first.proc.pid)
    by_killed = [(line["purpose"], line["n"]) for line in lines if line["pid"] == first.proc.pid]
    assert by_killed[-1] == ("compact", 3)
    events = log_events(database, run_id)
    assert_log_complete(events, model_calls=4, tool_calls=2)
    assert [e["type"] for e in events].count("compaction") == 1
    assert events[-1]["final"] == "done"


def test_a_worker_killed_during_memory_extraction(database: str, tmp_path: Path) -> None:
    fact = {"facts": [{"text": "The deploy target is the staging cluster", "kind": "fact"}]}
    responses = [
        tool_turn(("n1", "note", {"text": "staging"})),
        answer("Staging."),
        {**answer(json.dumps(fact)), "purpose": "memory"},
    ]
    # inside the run's workspace: a worker refuses a queued run's SQLite store anywhere else
    store = tmp_path / "shared" / "run0" / "memory.db"
    extra = ["--memory", str(store), "--memory-user", "durable", "--max-output-tokens", "256"]
    root, run_id, first = run_until_killed(database, tmp_path, responses, extra, "memory")
    assert (root / "run0" / "NOTES.md").read_text(encoding="utf-8") == "staging\n"
    assert assert_no_recorded_request_resent(requests(root, 0), first.proc.pid)
    events = log_events(database, run_id)
    assert_log_complete(events, model_calls=3, tool_calls=1)
    from tinyharness.memory import Scope, open_store

    memories = open_store(str(store))
    try:
        kept = memories.list_items(Scope(user="durable"), include_closed=True)
    finally:
        memories.close()
    assert [item.content for item in kept] == ["The deploy target is the staging cluster"]  # once


# --- cancelling and refusing ------------------------------------------------------------------


def test_a_queued_run_is_cancelled_and_never_runs(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, script = write_run(tmp_path / "shared", 0, [answer("never")], latency=0)
    run_id = submit(database, workspace, script, "the task", "--no-memory")
    assert main(["cancel", run_id[:6], "--log", database]) == 0
    assert f"cancelled run {run_id} (was queued)" in capsys.readouterr().out
    worker = Worker(database, tmp_path, "a")
    try:
        time.sleep(3)
    finally:
        worker.stop()
    assert queue_states(database)[run_id].state == "cancelled"
    assert requests(tmp_path / "shared", 0) == []
    assert main(["runs", "--log", database]) == 0
    assert "cancelled" in capsys.readouterr().out
    assert main(["cancel", run_id, "--log", database]) == 1  # nothing left to cancel


def test_a_running_run_is_cancelled_at_its_next_step(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [tool_turn((f"n{i}", "note", {"text": f"note {i}"})) for i in range(4)]
    workspace, script = write_run(tmp_path / "shared", 0, [*turns, answer("never")], latency=1.5)
    run_id = submit(database, workspace, script, "the task", "--no-memory")
    worker = Worker(database, tmp_path, "a")
    try:
        wait_until(lambda: bool(requests(tmp_path / "shared", 0)), 120, "the first request")
        assert main(["cancel", run_id, "--log", database]) == 0
        assert "(was running)" in capsys.readouterr().out
        wait_until(lambda: log_events(database, run_id)[-1]["type"] == "run_end", 120, "the run to end")
        assert worker.proc.poll() is None  # the worker goes on with other runs
    finally:
        worker.stop()
    assert queue_states(database)[run_id].state == "cancelled"
    end = log_events(database, run_id)[-1]
    assert end["stop"] == "cancelled"
    assert len(requests(tmp_path / "shared", 0)) < 5  # it stopped before the script's end


def test_a_run_whose_workspace_a_worker_cannot_reach_fails_with_the_reason(
    database: str, tmp_path: Path
) -> None:
    workspace, script = write_run(tmp_path / "shared", 0, [answer("never")], latency=0)
    run_id = submit(database, workspace, script, "the task", "--no-memory")
    workspace.rmdir()  # as if the worker's machine did not mount it
    worker = Worker(database, tmp_path, "a")
    try:
        wait_until(lambda: queue_states(database)[run_id].state == "failed", 120, "the run to fail")
    finally:
        worker.stop()
    end = log_events(database, run_id)[-1]
    assert end["type"] == "run_end" and "is not reachable from this worker" in end["detail"]
    assert "same path" in end["detail"]


def test_submit_refuses_what_a_queue_cannot_do(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    base = ["submit", "--model", "scripted:x.json", "--workspace", str(workspace)]
    assert main([*base, "task"]) == 2  # no shared database
    assert "postgresql://" in capsys.readouterr().err
    assert main([*base, "--log", database, "--session", "s", "task"]) == 2
    assert "--session" in capsys.readouterr().err
    assert main(["submit", "--log", database, "--workspace", str(tmp_path / "missing"), "task"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "same path" in err
