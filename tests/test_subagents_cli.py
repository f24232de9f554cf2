"""Sub-agents through the command: the tree of runs in ``runs``/``show``/``report``, profiles
from the config file, and resume after a real SIGKILL of the parent's process with one child
finished and one not (the way tests/test_resume_safety.py kills runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_subagents import answer, call, task, turn
from tinyharness.cli import main
from tinyharness.runlog import RunLog
from tinyharness.session import UNKNOWN_OUTCOME, SessionStore

SESSION = "job"

# SIGKILL this process at CRASH_AT: "TYPE:call_id" (the event of that call) or "TYPE@DEPTH"
# (the first event of that type a run at that depth emits).
RUNNER = """
import os, signal, sys
from tinyharness import events
where = os.environ.get("CRASH_AT", "")
original_emit = events.EventBus.emit
def emit(self, type, **fields):
    event = original_emit(self, type, **fields)
    kind, _, call_id = where.partition(":")
    at_type, _, depth = where.partition("@")
    if (call_id and type == kind and fields.get("call_id") == call_id) or (
        depth and type == at_type and self.depth == int(depth)
    ):
        os.kill(os.getpid(), signal.SIGKILL)
    return event
events.EventBus.emit = emit
from tinyharness.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f0.py").write_text("def f0():\n    return 0\n", encoding="utf-8")
    (ws / "f1.py").write_text("def f1():\n    return 1\n", encoding="utf-8")
    return tmp_path


def script(tmp: Path, responses: list[dict[str, Any]]) -> str:
    path = tmp / f"script{len(list(tmp.glob('script*')))}.json"
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return str(path)


def run(
    tmp: Path, responses: list[dict[str, Any]], *args: str, crash_at: str = ""
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", RUNNER, "run", "--model", f"scripted:{script(tmp, responses)}", "--quiet"]
    argv += ["--workspace", str(tmp / "ws"), "--log", str(tmp / "runs.db"), "--session", SESSION]
    argv += ["--no-memory", "--subagent-concurrency", "1", *args]
    env = {"CRASH_AT": crash_at, "TINYHARNESS_HOME": str(tmp / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


FIRST_TURN = turn([task("t1", "What does f0.py return?"), task("t2", "What does f1.py return?")])


def saved_results(tmp: Path, name: str) -> dict[str, str]:
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(name).load()
    assert saved is not None and not saved.interrupted
    return {r.tool_use_id: r.content for m in saved.messages for r in m.tool_results}


def test_resume_uses_a_finished_childs_answer_and_runs_a_child_that_never_started(tmp: Path) -> None:
    """Killed right after child t1 ended (the parent had not recorded its result) while t2
    waited for its turn: on resume t1 is not run again (its script holds nothing for t1 now:
    a second run would fail) and t2 runs once."""
    first = run(
        tmp,
        [FIRST_TURN, answer("f0 returns 0", agent="t1"), answer("unused", agent="t2"), answer("unused")],
        "Find what f0 and f1 return",
        crash_at="run_end@1",
    )
    assert first.returncode == -9, first.stderr
    second = run(
        tmp,
        [
            call("r2", "read_file", {"path": "f1.py"}, agent="t2"),
            answer("f1 returns 1", agent="t2"),
            answer("0 and 1"),
        ],
        "--resume",
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "0 and 1"
    results = saved_results(tmp, SESSION)
    assert "f0 returns 0" in results["t1"] and "f1 returns 1" in results["t2"]
    with SessionStore(tmp / "runs.sessions.db") as store:
        assert sorted(store.names_under(f"{SESSION}/")) == [f"{SESSION}/task:t1#1", f"{SESSION}/task:t2#1"]


def test_resume_continues_a_child_cut_off_mid_run_and_never_repeats_its_cut_off_call(tmp: Path) -> None:
    """Killed while child t2's read ran (t1 had finished and its result was recorded): on
    resume t2 continues from its own history, its cut-off read answered "outcome unknown"."""
    first = run(
        tmp,
        [
            FIRST_TURN,
            answer("f0 returns 0", agent="t1"),
            call("r2", "read_file", {"path": "f1.py"}, agent="t2"),
            answer("unused", agent="t2"),
            answer("unused"),
        ],
        "Find what f0 and f1 return",
        crash_at="tool_result:r2",
    )
    assert first.returncode == -9, first.stderr
    with SessionStore(tmp / "runs.sessions.db") as store:
        assert store.latest() == SESSION  # the child saved last; --resume alone takes the parent
    second = run(tmp, [answer("f1 returns 1", agent="t2"), answer("0 and 1")], "--resume")
    assert second.returncode == 0, second.stderr
    child = saved_results(tmp, f"{SESSION}/task:t2#1")
    assert child["r2"] == UNKNOWN_OUTCOME  # not read again: the rule for calls cut off by a kill
    assert "f1 returns 1" in saved_results(tmp, SESSION)["t2"]
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(f"{SESSION}/task:t2#1").load()
        assert saved is not None and saved.messages[0].text == "What does f1.py return?"  # continued
        assert sorted(store.names_under(f"{SESSION}/")) == [f"{SESSION}/task:t1#1", f"{SESSION}/task:t2#1"]


def test_runs_show_and_report_draw_the_tree(
    tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp / "home"))
    path = script(
        tmp,
        [
            FIRST_TURN,
            call("r1", "read_file", {"path": "f0.py"}, agent="t1"),
            answer("f0 returns 0", agent="t1"),
            answer("f1 returns 1", agent="t2"),
            answer("0 and 1"),
        ],
    )
    log = str(tmp / "runs.db")
    code = main(
        [
            "run",
            "--model",
            f"scripted:{path}",
            "--workspace",
            str(tmp / "ws"),
            "--log",
            log,
            "--quiet",
            "--no-memory",
            "go",
        ]
    )
    assert code == 0
    capsys.readouterr()
    with RunLog(log) as opened:
        runs = opened.list_runs()
    parent, c1, c2 = runs
    assert parent.depth == 0 and (c1.depth, c2.depth) == (1, 1)
    assert c1.parent_run_id == parent.id and {c1.call_id, c2.call_id} == {"t1", "t2"}

    assert main(["runs", "--log", log]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[1].startswith(parent.id) and listing[2].startswith(f"└ {c1.id}")

    assert main(["show", parent.id, "--log", log]) == 0
    shown = capsys.readouterr().out
    assert f"┌ sub-agent run {c1.id}" in shown and "│     -> read_file" in shown

    assert main(["export", parent.id, "--tree", "--log", log]) == 0
    exported = {json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()}
    assert exported == {parent.id, c1.id, c2.id}

    assert main(["report", parent.id, "--log", log, "--width", "80"]) == 0
    report = capsys.readouterr().out
    assert "sub-agents (the tree of runs):" in report and f"└ {c2.id}" in report


def test_a_profile_from_the_config_file_runs_on_its_own_model(
    tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp / "home"
    home.mkdir()
    monkeypatch.setenv("TINYHARNESS_HOME", str(home))
    child = script(tmp, [call("r1", "read_file", {"path": "f0.py"}), answer("f0 returns 0")])
    (home / "config.json").write_text(
        json.dumps(
            {
                "agents": {
                    "reader": {
                        "description": "reads files",
                        "model": f"scripted:{child}",
                        "tools": ["read_file", "grep"],
                    }
                }
            }
        )
    )
    parent = script(tmp, [turn([task("t1", "What does f0 return?", agent="reader")]), answer("0")])
    events = tmp / "events.jsonl"
    argv = ["run", "--model", f"scripted:{parent}", "--workspace", str(tmp / "ws"), "--no-log", "--quiet"]
    assert main([*argv, "--no-memory", "--events", str(events), "go"]) == 0
    assert capsys.readouterr().out.strip() == "0"
    starts = [json.loads(line) for line in events.read_text().splitlines() if '"run_start"' in line]
    assert starts[1]["profile"] == "reader" and starts[1]["tools"] == ["read_file", "grep"]

    (home / "config.json").write_text(
        json.dumps({"agents": {"reader": {"description": "x", "tools": ["shel"]}}})
    )
    assert main([*argv, "--no-memory", "go"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "agents.reader.tools" in err[0] and "'shel'" in err[0]


def test_ctrl_c_stops_the_children_with_their_parent(tmp: Path) -> None:
    """SIGINT (Ctrl-C) while a sub-agent's command runs: the run stops with the usual line and
    exit code 1, and the sub-agent's run ends as cancelled (it does not go on alone)."""
    import os
    import signal
    import time

    responses = [
        turn([task("t1", "wait for the build", tools=["shell"])]),
        call("s1", "shell", {"command": "sleep 30"}, agent="t1"),
        answer("unused", agent="t1"),
        answer("unused"),
    ]
    events = tmp / "events.jsonl"
    argv = [
        sys.executable,
        "-c",
        "import sys; from tinyharness.cli import main; raise SystemExit(main(sys.argv[1:]))",
    ]
    argv += [
        "run",
        "--model",
        f"scripted:{script(tmp, responses)}",
        "--workspace",
        str(tmp / "ws"),
        "--quiet",
    ]
    argv += [
        "--no-log",
        "--no-memory",
        "--shell",
        "--allow",
        "shell:sleep *",
        "--yes",
        "--events",
        str(events),
    ]
    env = {"TINYHARNESS_HOME": str(tmp / "home"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    process = subprocess.Popen(
        [*argv, "go"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and '"call_id": "s1"' not in (
        events.read_text() if events.exists() else ""
    ):
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "interrupted; continue with --resume" in stderr
    ends = [json.loads(line) for line in events.read_text().splitlines() if '"run_end"' in line]
    assert [(e.get("depth"), e["stop"]) for e in ends] == [(1, "cancelled")]


def test_a_new_task_on_a_session_never_reuses_an_earlier_childs_answer(tmp: Path) -> None:
    """Call ids may repeat across the tasks of one session (a JSON-mode model numbers its calls
    from the history it sees): a fresh task call starts a fresh child, #2 beside #1."""
    first = run(
        tmp,
        [turn([task("t1", "What does f0.py return?")]), answer("f0 returns 0", agent="t1"), answer("0")],
        "one",
    )
    assert first.returncode == 0, first.stderr
    second = run(
        tmp,
        [turn([task("t1", "What does f1.py return?")]), answer("f1 returns 1", agent="t1"), answer("1")],
        "two",
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "1"
    with SessionStore(tmp / "runs.sessions.db") as store:
        assert sorted(store.names_under(f"{SESSION}/")) == [f"{SESSION}/task:t1#1", f"{SESSION}/task:t1#2"]
        saved = store.open(f"{SESSION}/task:t1#2").load()
        assert saved is not None and saved.messages[-1].text == "f1 returns 1"


def test_a_pin_given_on_the_command_line_holds_in_a_childs_window_through_its_compaction(
    tmp: Path,
) -> None:
    """--pin reaches the sub-agent's requests, and its compaction (the run's --strategy and
    window) puts the pin back and audits it: the child's context gets the parent's pins."""
    pin = "Never edit anything under tests/"
    child: list[dict[str, Any]] = []
    for i in range(6):  # 2,000 characters each: a read at this window is cut at about that
        (tmp / "ws" / f"big{i}.txt").write_text("".join(f"line {n}: filler\n" for n in range(120)))
        child.append({**call(f"r{i}", "read_file", {"path": f"big{i}.txt"}, agent="t1"), "purpose": "agent"})
    child += [
        {**answer("1. Intent: read the files", agent="t1"), "purpose": "compact"},
        {**answer("all filler", agent="t1"), "purpose": "agent"},
    ]
    parent = {**turn([task("t1", "read big0.txt to big5.txt")]), "purpose": "agent"}
    events = tmp / "events.jsonl"
    options = ["--pin", pin, "--events", str(events), "--trace", "--strategy", "summarize"]
    options += [
        "--context-window",
        "4000",
        "--keep-recent",
        "1",
        "--counter",
        "chars4",
        "--restore-files",
        "0",
    ]
    done = run(tmp, [parent, *child, {**answer("done"), "purpose": "agent"}], *options, "read the big files")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    calls = [
        e for e in lines if e["type"] == "model_call" and e.get("depth") == 1 and e["purpose"] == "agent"
    ]
    assert len(calls) == 7 and all(pin in json.dumps(c["request"]) for c in calls)
    audits = [e for e in lines if e["type"] == "audit" and e.get("depth") == 1]
    assert audits and all(a["ok"] and a["pins"] == 1 for a in audits)
