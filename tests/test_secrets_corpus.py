"""Secrets and personal data never reach notes, the run log, the events file or the reports in
clear: a corpus of 39 kinds (tests/secrets_corpus.py) through a real CLI run whose tool results,
notes and final answer all carry them, plus one notes test per kind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hardening_support import answer, tool_turn, write_script
from secrets_corpus import CORPUS
from tinyharness.cli import main
from tinyharness.events import JsonlSink
from tinyharness.tools.notes import NotesFile

ALL = "\n".join(sample for sample, _ in CORPUS.values())


def leaked(text: str | bytes) -> list[str]:
    """The corpus kinds whose secret part appears in ``text`` (also JSON-escaped)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    found = []
    for kind, (_, secret) in CORPUS.items():
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if secret in text or escaped in text:
            found.append(kind)
    return found


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_each_kind_is_redacted_from_notes_and_the_model_is_told(kind: str, tmp_path: Path) -> None:
    sample, secret = CORPUS[kind]
    notes = NotesFile(tmp_path / "NOTES.md")
    told = notes.append(f"remember: {sample} (for later)")
    told += notes.overwrite(f"# Notes\nthe value is {sample}\n")
    written = (tmp_path / "NOTES.md").read_text(encoding="utf-8")
    assert secret not in written
    assert "[REDACTED:" in written and "the value is" in written
    assert told.count("Redacted before writing") == 2


def test_a_clean_note_is_not_touched(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md")
    told = notes.append("the build uses make test; version 1.2.3 released 2024-05-01")
    assert "Redacted" not in told
    assert notes.read() == "the build uses make test; version 1.2.3 released 2024-05-01\n"


def test_jsonl_sink_redacts_what_it_writes(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "e.jsonl")
    sink.emit({"type": "tool_call", "args": {"content": ALL, ALL: [ALL]}})
    sink.close()
    assert leaked((tmp_path / "e.jsonl").read_bytes()) == []


def test_a_full_cli_run_keeps_every_secret_out_of_notes_logs_events_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "config.txt").write_text(ALL + "\n", encoding="utf-8")
    samples = [sample for sample, _ in CORPUS.values()]
    script = [
        tool_turn(("t1", "read_file", {"path": "config.txt"}), ("t2", "grep", {"pattern": ".", "path": "."})),
        tool_turn(*[(f"n{i}", "note", {"text": f"found {s}"}) for i, s in enumerate(samples)]),
        tool_turn(("u1", "update_notes", {"content": "# Secrets seen\n" + ALL})),
        tool_turn(("w1", "write_file", {"path": "copy.txt", "content": ALL})),
        answer(f"Here is everything I found:\n{ALL}"),
    ]
    log_dir = tmp_path / "log"
    log = log_dir / "runs.db"
    events = tmp_path / "events.jsonl"
    args = ["run", "--model", f"scripted:{write_script(tmp_path / 's.json', script)}"]
    args += ["--workspace", str(workspace), "--log", str(log), "--events", str(events), "--trace"]
    args += ["--session", "secrets", "--allow-write", "--context-window", "200000", "collect the config"]
    assert main(args) == 0
    run = capsys.readouterr()
    assert leaked(run.err) == []  # progress lines

    notes = (workspace / "NOTES.md").read_text(encoding="utf-8")
    assert leaked(notes) == []
    assert notes.count("[REDACTED:") >= len(CORPUS)
    for path in log_dir.iterdir():  # runs.db and its -wal/-shm companions
        assert leaked(path.read_bytes()) == [], path.name
    assert leaked(events.read_bytes()) == []
    assert events.read_text(encoding="utf-8").count("[REDACTED:") > len(CORPUS)

    run_id = json.loads(events.read_text(encoding="utf-8").splitlines()[0])["run_id"]
    html = tmp_path / "report.html"
    for command in (
        ["runs"],
        ["show", run_id],
        ["export", run_id],
        ["report", run_id, "--width", "80", "--html", str(html)],
    ):
        assert main([*command, "--log", str(log)]) == 0, command
        shown = capsys.readouterr()
        assert leaked(shown.out + shown.err) == [], command
    assert leaked(html.read_bytes()) == []
    # What the user explicitly asked to be written in the workspace is theirs to keep.
    assert (workspace / "copy.txt").read_text(encoding="utf-8") == ALL
