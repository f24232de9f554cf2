"""Crash safety: real ``tinyharness run`` processes are SIGKILLed at many points and resumed with
``--resume``. No tool call is ever repeated: a finished call keeps its result, and a call the
kill cut off is answered "outcome unknown" instead of being run again. So a trial in which no
call was cut off ends with exactly the notes and files of an uninterrupted run, and any trial
ends with no note written twice, no note that the uninterrupted run does not write, and no
redaction placeholder anywhere.

The kill point is the k-th event (k drawn from a seed): a tiny wrapper around the command
SIGKILLs its own process right after that event reached every sink, so each trial is exactly
reproducible and every gap between two events (a tool's side effect and the commit of its
result included) can be hit. The resumed process is given the rest of the script, from the
``model_calls`` of the checkpoint the killed run committed last. Kills: 8, times
``TINYHARNESS_SUITE_SCALE``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, read_events, scaled, tool_turn, write_script
from tinyharness.session import UNKNOWN_OUTCOME, SessionStore

KILLS = scaled(8)
SESSION = "crash"
TASK = "Keep notes and edit the files."

# SIGKILL this process right after the CRASH_AFTER_EVENT-th event has reached every sink.
RUNNER = """
import os, signal, sys
from tinyharness import events
after = int(os.environ.get("CRASH_AFTER_EVENT", "0"))
original = events.EventBus.emit
seen = [0]
def emit(self, type, **fields):
    event = original(self, type, **fields)
    seen[0] += 1
    if seen[0] == after:
        os.kill(os.getpid(), signal.SIGKILL)
    return event
events.EventBus.emit = emit
from tinyharness.cli import main
raise SystemExit(main(sys.argv[1:]))
"""

SCRIPT: list[dict[str, Any]] = [
    tool_turn(("u1", "update_notes", {"content": "# Notes"}), purpose=None),
    tool_turn(
        ("n1", "note", {"text": "fact one"}), ("w1", "write_file", {"path": "a.txt", "content": "alpha\n"})
    ),
    tool_turn(("e1", "edit_file", {"path": "a.txt", "old": "alpha", "new": "beta"}), purpose=None),
    tool_turn(("n2", "note", {"text": "fact two"}), ("n3", "note", {"text": "fact three"}), purpose=None),
    tool_turn(("w2", "write_file", {"path": "sub/b.txt", "content": "one\ntwo\n"}), purpose=None),
    tool_turn(
        ("e2", "edit_file", {"path": "sub/b.txt", "old": "two", "new": "2"}),
        ("n4", "note", {"text": "fact four"}),
        purpose=None,
    ),
    tool_turn(
        ("n5", "note", {"text": "fact five"}), ("c1", "calculator", {"expression": "6*7"}), purpose=None
    ),
    answer("All done.", None),
]
for response in SCRIPT:  # the untagged form: every request takes the next response
    response.pop("purpose", None)


def tinyharness(
    tmp: Path, workspace: Path, responses: list[dict[str, Any]], *extra: str, crash_after: int = 0
) -> subprocess.CompletedProcess[str]:
    script = write_script(tmp / f"script{len(list(tmp.glob('script*')))}.json", responses)
    args = [sys.executable, "-c", RUNNER, "run", "--model", f"scripted:{script}", "--quiet"]
    args += ["--workspace", str(workspace), "--log", str(tmp / "runs.db"), "--session", SESSION]
    args += ["--allow-write", "--events", str(tmp / "events.jsonl"), *extra]
    env = {
        "CRASH_AFTER_EVENT": str(crash_after),
        "TINYHARNESS_HOME": str(tmp / "home"),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)


def snapshot(workspace: Path) -> dict[str, str]:
    return {
        p.relative_to(workspace).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(workspace.rglob("*"))
        # An atomic write cut by the kill leaves its hidden temp file, never a half-written file.
        if p.is_file()
        and ".tinyharness" not in p.parts
        and not (p.name.startswith(".") and p.suffix == ".tmp")
    }


def trial(tmp: Path, crash_after: int) -> tuple[dict[str, str], list[dict[str, Any]], str]:
    """Run, kill after event ``crash_after`` (0: never), resume; the workspace afterwards, all
    events of both processes and how the first process ended."""
    tmp.mkdir()
    workspace = tmp / "ws"
    workspace.mkdir()
    first = tinyharness(tmp, workspace, SCRIPT, TASK, crash_after=crash_after)
    how = "killed" if first.returncode == -9 else f"exit {first.returncode}"
    if first.returncode not in (0, -9):
        raise AssertionError(f"first run failed: {first.stderr}")
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(SESSION).load()
    if first.returncode == -9:
        if saved is None:  # killed before the first commit: start again
            second = tinyharness(tmp, workspace, SCRIPT, TASK)
        else:
            second = None
            if saved.interrupted:
                rest = SCRIPT[int(saved.state.get("model_calls", 0)) :]
                second = tinyharness(tmp, workspace, rest, "--resume")
        if second is not None:
            assert second.returncode == 0, second.stderr
            assert second.stdout.strip() == "All done."
    return snapshot(workspace), read_events(tmp / "events.jsonl"), how


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], int]:
    files, events, how = trial(tmp_path_factory.mktemp("crash") / "baseline", 0)
    assert how == "exit 0"
    assert files["NOTES.md"] == "# Notes\nfact one\nfact two\nfact three\nfact four\nfact five\n" or (
        # parallel notes of one turn may land in either order
        sorted(files["NOTES.md"].splitlines())
        == sorted(["# Notes", *(f"fact {w}" for w in ["one", "two", "three", "four", "five"])])
    )
    assert files["a.txt"] == "beta\n" and files["sub/b.txt"] == "one\n2\n"
    return files, len(events)


def kill_points(total_events: int) -> list[int]:
    rng = random.Random(20240611)
    points = list(range(1, total_events))
    rng.shuffle(points)
    return sorted(points[:KILLS])


def test_killed_runs_resume_without_repeating_any_call(
    baseline: tuple[dict[str, str], int], tmp_path: Path
) -> None:
    files, total_events = baseline
    assert total_events > 20
    killed = cut_off_trials = 0
    for point in kill_points(total_events):
        after, events, how = trial(tmp_path / f"kill{point}", point)
        killed += how == "killed"
        results = [e for e in events if e["type"] == "tool_result"]
        cut_off = {e["call_id"] for e in results if e.get("outcome") == "unknown"}
        notes = after.get("NOTES.md", "").splitlines()
        assert len(notes) == len(set(notes)), (point, notes)  # nothing noted twice
        assert set(notes) <= set(files["NOTES.md"].splitlines()), (point, notes)
        assert not any("REDACTED" in text for text in after.values()), point
        # No call ran twice: one ok result per call id at most.
        finished = [e["call_id"] for e in results if e["ok"]]
        assert len(finished) == len(set(finished)), (point, finished)
        if cut_off:
            cut_off_trials += 1
            continue
        assert sorted(notes) == sorted(files["NOTES.md"].splitlines()), (point, events)
        assert after == {**files, "NOTES.md": after["NOTES.md"]}, point
        assert all(e["ok"] for e in results), (point, [e for e in results if not e["ok"]])
    assert killed == len(kill_points(total_events))
    assert UNKNOWN_OUTCOME  # the text the cut-off calls got (see test_resume_safety)


def test_crash_runner_really_kills(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = tinyharness(tmp_path, workspace, SCRIPT, TASK, crash_after=3)
    assert run.returncode == -9
    assert len(read_events(tmp_path / "events.jsonl")) == 3
    json.dumps(snapshot(workspace))  # whatever is there is readable text
