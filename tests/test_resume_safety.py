"""What a resumed run may and may not do, tried on real ``tinyharness run`` processes that are
SIGKILLed at exact points of a tool call:

- ``save:ID``: as the reply asking for the call is about to be committed, with the call
  recorded as started in the same commit (neither is committed);
- ``started:ID``: as the call is about to run (its reply's commit recorded it as started);
- ``tool_call:ID``: right after the tool_call event (recorded as started, not run yet);
- ``tool_result:ID``: right after the tool_result event (it ran; its result is not recorded).

Then ``--resume``. A call whose reply was never committed is asked of the model again and runs
once, with its exact arguments; a call that started and has no recorded result is never run
again (its result says the outcome is unknown), so no redaction placeholder lands in a file, no
append is doubled, and no identical note is dropped while the model is told it was written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, read_events, tool_turn, write_script
from tinyharness.runlog import RunLog
from tinyharness.session import UNKNOWN_OUTCOME, SessionStore

SESSION = "job"

# Kill this process at CRASH_AT ("event:call_id" or "started:call_id").
RUNNER = """
import os, signal, sys
from tinyharness import events
from tinyharness.session import sqlite as sqlite_session
where, _, target = os.environ.get("CRASH_AT", "").partition(":")
original_emit = events.EventBus.emit
def emit(self, type, **fields):
    event = original_emit(self, type, **fields)
    if type == where and fields.get("call_id") == target:
        os.kill(os.getpid(), signal.SIGKILL)
    return event
events.EventBus.emit = emit
original_started = sqlite_session.SQLiteSession.call_started
def call_started(self, call):
    if where == "started" and call.id == target:
        os.kill(os.getpid(), signal.SIGKILL)
    return original_started(self, call)
sqlite_session.SQLiteSession.call_started = call_started
original_save = sqlite_session.SQLiteSession.save
def save(self, messages, state, *, starting=()):
    if where == "save" and any(call.id == target for call in starting):
        os.kill(os.getpid(), signal.SIGKILL)
    return original_save(self, messages, state, starting=starting)
sqlite_session.SQLiteSession.save = save
from tinyharness.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def run(
    tmp: Path, responses: list[dict[str, Any]], *args: str, crash_at: str = ""
) -> subprocess.CompletedProcess[str]:
    script = write_script(tmp / f"script{len(list(tmp.glob('script*')))}.json", responses)
    argv = [sys.executable, "-c", RUNNER, "run", "--model", f"scripted:{script}", "--quiet"]
    argv += ["--workspace", str(tmp / "ws"), "--log", str(tmp / "runs.db"), "--session", SESSION]
    argv += ["--allow-write", "--no-memory", "--events", str(tmp / "events.jsonl"), *args]
    env = {"CRASH_AT": crash_at, "TINYHARNESS_HOME": str(tmp / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def kill_and_resume(tmp: Path, turns: list[dict[str, Any]], crash_at: str, *args: str) -> dict[str, str]:
    """Run ``turns`` (then an answer), kill at ``crash_at``, resume with an answer; the results
    the resumed model was sent, by call id."""
    first = run(tmp, [*turns, answer("done", None)], "do it", *args, crash_at=crash_at)
    assert first.returncode == -9, first.stderr
    second = run(tmp, [answer("checked", None)], "--resume", *args)
    assert second.returncode == 0, second.stderr
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(SESSION).load()
    assert saved is not None and not saved.interrupted
    return {r.tool_use_id: r.content for m in saved.messages for r in m.tool_results}


def workspace_text(tmp: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted((tmp / "ws").rglob("*")) if p.is_file())


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path


def turn(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    response = tool_turn((call_id, name, args), purpose=None)
    return response


SECRET_FILE = {"path": "setup.cfg", "content": "author_email = jane@example.com\n"}


def test_a_call_whose_reply_was_never_committed_is_asked_again_and_runs_once(tmp: Path) -> None:
    script = [turn("w1", "write_file", SECRET_FILE), answer("done", None)]
    first = run(tmp, script, "do it", crash_at="save:w1")
    assert first.returncode == -9, first.stderr
    assert not (tmp / "ws" / "setup.cfg").exists()
    again = [turn("w2", "write_file", SECRET_FILE), answer("checked", None)]
    second = run(tmp, again, "--resume")
    assert second.returncode == 0, second.stderr
    assert (tmp / "ws" / "setup.cfg").read_text(encoding="utf-8") == SECRET_FILE["content"]
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(SESSION).load()
    assert saved is not None
    results = {r.tool_use_id: r.content for m in saved.messages for r in m.tool_results}
    assert "w1" not in results  # the uncommitted reply is gone with its call
    assert "REDACTED" not in results["w2"] and results["w2"] != UNKNOWN_OUTCOME


def test_a_call_killed_as_it_starts_is_never_guessed(tmp: Path) -> None:
    """Its reply's commit recorded it as started: the resumed run says its outcome is unknown
    (it may have begun) and does not run it."""
    results = kill_and_resume(tmp, [turn("w1", "write_file", SECRET_FILE)], "started:w1")
    assert results["w1"] == UNKNOWN_OUTCOME
    assert not (tmp / "ws" / "setup.cfg").exists()


@pytest.mark.parametrize("point", ["tool_call", "tool_result"])
def test_a_cut_off_write_is_never_redone_with_redacted_arguments(tmp: Path, point: str) -> None:
    results = kill_and_resume(tmp, [turn("w1", "write_file", SECRET_FILE)], f"{point}:w1")
    assert "REDACTED" not in workspace_text(tmp)
    assert results["w1"] == UNKNOWN_OUTCOME
    written = tmp / "ws" / "setup.cfg"
    # before the effect: no file; after it: the exact content, once
    assert not written.exists() if point == "tool_call" else written.read_text() == SECRET_FILE["content"]


def test_a_cut_off_edit_is_never_redone_with_redacted_arguments(tmp: Path) -> None:
    (tmp / "ws" / "setup.cfg").write_text("author = jane\n", encoding="utf-8")
    edit = {"path": "setup.cfg", "old": "author = jane\n", "new": "author = jane\nemail = jane@example.com\n"}
    results = kill_and_resume(tmp, [turn("e1", "edit_file", edit)], "tool_call:e1")
    assert (tmp / "ws" / "setup.cfg").read_text(encoding="utf-8") == "author = jane\n"
    assert results["e1"] == UNKNOWN_OUTCOME


APPEND = {"path": "log.txt", "old": "line 1\n", "new": "line 1\nline 2\n"}


@pytest.mark.parametrize(
    ("call", "args", "extra", "check"),
    [
        ("edit_file", APPEND, (), ("ws/log.txt", "line 1\nline 2\n")),
        ("note", {"text": "the parser is in src/p.py"}, (), ("ws/NOTES.md", "the parser is in src/p.py\n")),
        ("update_notes", {"content": "# Notes\n"}, (), ("ws/NOTES.md", "# Notes\n")),
        (
            "memory",
            {"command": "insert", "path": "/memories/todo.md", "insert_line": 1, "insert_text": "two"},
            ("--memory-dir", "mem"),
            ("mem/todo.md", "one\ntwo\n"),
        ),
        (
            "shell",
            {"command": 'sed -i -e "\\$a line 2" log.txt'},
            ("--shell", "--yes", "--allow", "shell:sed *"),
            ("ws/log.txt", "line 1\nline 2\n"),
        ),
    ],
    ids=["edit_file-append", "note", "update_notes", "memory-insert", "shell-append"],
)
def test_a_call_killed_after_its_effect_is_not_repeated(
    tmp: Path, call: str, args: dict[str, Any], extra: tuple[str, ...], check: tuple[str, str]
) -> None:
    (tmp / "ws" / "log.txt").write_text("line 1\n", encoding="utf-8")
    (tmp / "mem").mkdir()
    (tmp / "mem" / "todo.md").write_text("one\n", encoding="utf-8")
    extra = tuple(str(tmp / a) if a == "mem" else a for a in extra)
    results = kill_and_resume(tmp, [turn("c1", call, args)], "tool_result:c1", *extra)
    path, expected = check
    assert (tmp / path).read_text(encoding="utf-8") == expected  # applied once, not twice
    assert results["c1"] == UNKNOWN_OUTCOME


def test_an_identical_note_is_not_dropped_as_if_written(tmp: Path) -> None:
    """The model notes the same line twice; the kill comes as the second note starts. The
    resumed run must not claim that note was written (it was not): its outcome is unknown."""
    note = {"text": "tests pass"}
    results = kill_and_resume(tmp, [turn("n1", "note", note), turn("n2", "note", note)], "tool_call:n2")
    assert (tmp / "ws" / "NOTES.md").read_text(encoding="utf-8") == "tests pass\n"
    assert results["n1"] != UNKNOWN_OUTCOME and results["n2"] == UNKNOWN_OUTCOME


def test_the_unknown_outcome_is_reported_in_the_event_stream(tmp: Path) -> None:
    kill_and_resume(tmp, [turn("c1", "note", {"text": "x"})], "tool_result:c1")
    results = [e for e in read_events(tmp / "events.jsonl") if e["type"] == "tool_result"]
    assert [(e["call_id"], e.get("outcome")) for e in results] == [("c1", None), ("c1", "unknown")]


def test_the_session_file_is_private_and_the_run_log_stays_redacted(tmp: Path) -> None:
    kill_and_resume(tmp, [turn("w1", "write_file", SECRET_FILE)], "tool_result:w1")
    store = tmp / "runs.sessions.db"
    assert store.stat().st_mode & 0o777 == 0o600
    assert b"jane@example.com" in store.read_bytes() + b"".join(
        p.read_bytes() for p in tmp.glob("runs.sessions.db-*") if p.is_file()
    )
    for path in tmp.glob("runs.db*"):
        assert b"jane@example.com" not in path.read_bytes(), path


# --- the notes flush before a compaction --------------------------------------------------------


def flush_note(call_id: str, path: str, text: str) -> dict[str, Any]:
    return tool_turn((call_id, "note", {"text": text, "path": path}), purpose="flush")


FLUSH_ARGS = (
    "--flush-notes",
    "--context-window",
    "8000",
    "--compact-ratio",
    "0.2",
    "--strategy",
    "summarize",
)
# Enough files (each read is capped by the window) that the resumed run, which counts its restored
# history, is over the trigger too.
FILES = {f"{letter}.py": f"defines {letter}" for letter in "abcdefghij"}


@pytest.mark.parametrize("point", ["tool_call", "tool_result"])
def test_a_flush_cut_off_by_a_kill_is_finished_on_resume_without_repeating_a_note(
    tmp: Path, point: str
) -> None:
    """Killed while the notes flush before a compaction writes its first note (as it starts, or
    right after it was written). The resumed run finishes the flush: the first file's ask is
    never repeated (its note is in NOTES.md once, or, cut off before it ran, its outcome is
    reported unknown), and the other files still get their notes (the old code skipped the
    rest of the flush on resume, silently)."""
    for name in FILES:
        (tmp / "ws" / name).write_text(f"def {name[0]}(): ...\n" * 400, encoding="utf-8")
    reads = tool_turn(*((f"r{i}", "read_file", {"path": name}) for i, name in enumerate(FILES)))
    notes = [flush_note(f"fn{i}", name, text) for i, (name, text) in enumerate(FILES.items())]
    end = [answer("done", "agent")]  # one round only: the compaction has nothing to summarize
    first = run(tmp, [reads, *notes, *end], "read the files", *FLUSH_ARGS, crash_at=f"{point}:fn0")
    assert first.returncode == -9, first.stderr
    second = run(tmp, [*notes[1:], *end], "--resume", *FLUSH_ARGS)
    assert second.returncode == 0, second.stderr
    written = (tmp / "ws" / "NOTES.md").read_text(encoding="utf-8")
    for name, text in list(FILES.items())[1:]:
        assert written.count(f"{name}: {text}") == 1, written
    if point == "tool_result":  # written before the kill: there once, not twice
        assert written.count("a.py: defines a") == 1
    else:  # cut off before it ran: not asked again, and the run says so
        assert "a.py" not in written
        warnings = [e["message"] for e in read_events(tmp / "events.jsonl") if e["type"] == "context_warning"]
        assert any("cut off by a crash" in w and "a.py" in w for w in warnings), warnings


def test_a_call_killed_as_it_starts_is_in_the_run_log_and_the_session(tmp: Path) -> None:
    """The run log commits a turn's events together, but never after the tool they announce
    has started: killed as the write starts, the log (read by another process) holds the
    reply that asked for it and the call, and the session holds the call as started, so the
    resumed run reports its outcome as unknown instead of writing again."""
    first = run(
        tmp, [turn("w1", "write_file", SECRET_FILE), answer("done", None)], "do it", crash_at="tool_call:w1"
    )
    assert first.returncode == -9, first.stderr
    with RunLog(tmp / "runs.db") as log:
        events = log.events(log.list_runs(1)[0].id)
    assert [(e["type"], e.get("call_id")) for e in events][-2:] == [("model_call", None), ("tool_call", "w1")]
    with SessionStore(tmp / "runs.sessions.db") as store:
        saved = store.open(SESSION).load()
    assert saved is not None and saved.turn.started == {"w1"} and not saved.turn.finished
