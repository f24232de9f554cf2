"""Secrets and personal data never reach notes, the run log, the events file, the memory store or
the reports in clear: a corpus of 39 kinds (tests/secrets_corpus.py ``CORPUS``) through a real
CLI run whose tool results, notes and final answer all carry them, plus one notes test per kind;
the measured corpus (``SECRETS``, ``LOOK_ALIKES``: 100+ kinds each way, a tuning and a held-out
half) and a run with memory on that plants the formats an outside check found going through.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hardening_support import answer, tool_turn, write_script
from secrets_corpus import CORPUS, LOOK_ALIKES, SECRETS, half
from tinyharness.cli import main
from tinyharness.events import JsonlSink
from tinyharness.redact import redact
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
        if path.name.startswith("runs.sessions.db"):
            # the private session store: resuming needs the exact history (see README, Safety)
            assert path.stat().st_mode & 0o077 == 0, path.name
            continue
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


# --- the measured corpus (tests/secrets_corpus.py SECRETS / LOOK_ALIKES) ------------------------


def _leaks(secret: str, text: str | bytes) -> bool:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return secret in text or json.dumps(secret, ensure_ascii=False)[1:-1] in text


def test_the_measured_corpus_has_a_hundred_kinds_each_way() -> None:
    assert len({kind for kind, _, _ in SECRETS}) >= 100
    assert len({name for name, _ in LOOK_ALIKES}) >= 100


def test_the_tuning_half_is_all_caught_and_its_look_alikes_untouched() -> None:
    missed = [
        kind
        for i, (kind, text, secret) in enumerate(SECRETS)
        if half(i) == "tuning" and _leaks(secret, redact(text))
    ]
    changed = [
        name for i, (name, text) in enumerate(LOOK_ALIKES) if half(i) == "tuning" and redact(text) != text
    ]
    assert missed == [] and changed == []


def test_the_held_out_half_stays_above_its_floor() -> None:
    """The held-out half is measured, not tuned on (bench/RESULTS.md has the numbers); this only
    guards against a large regression."""
    rows = [(kind, text, secret) for i, (kind, text, secret) in enumerate(SECRETS) if half(i) == "held_out"]
    caught = sum(not _leaks(secret, redact(text)) for _, text, secret in rows)
    looks = [text for i, (_, text) in enumerate(LOOK_ALIKES) if half(i) == "held_out"]
    changed = sum(redact(text) != text for text in looks)
    assert caught / len(rows) >= 0.9
    assert changed / len(looks) <= 0.1


# Formats the outside check found going through in clear, and a few of every family.
PLANTED_KINDS = [
    "aws_pair_plain", "aws_console_csv", "aws_sts_json", "aws_session_token", "azure_storage_conn",
    "azure_sas_url", "azure_servicebus", "django_secret_key", "quoted_password_with_spaces",
    "escaped_json_in_json", "basic_auth_header", "slack_app_token", "stripe_webhook_secret", "docker_pat",
    "pem_body_without_begin", "putty_key", "curl_user", "mysql_p", "base64_wrapped_pem",
    "url_password_with_at_slash", "github_classic_pat", "openai_project_key", "jwt", "pem_openssh",
    "gcp_service_account_json", "email",
]  # fmt: skip


def test_planted_formats_reach_no_output_of_a_run_with_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted run reads them from a file, notes them, remembers them (the memory model
    extracts them as facts) and answers with them; then every place the run wrote to and every
    command that prints it is searched for the clear values."""
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    by_kind = {kind: (text, secret) for kind, text, secret in SECRETS}
    planted = [by_kind[kind] for kind in PLANTED_KINDS]
    everything = "\n".join(text for text, _ in planted)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "creds.txt").write_text(everything + "\n", encoding="utf-8")
    facts = {"facts": [{"text": f"The deploy credential is {text}", "kind": "fact"} for text, _ in planted]}
    script = [
        {**tool_turn(("r1", "read_file", {"path": "creds.txt"})), "purpose": "agent"},
        {
            **tool_turn(*[(f"n{i}", "note", {"text": text}) for i, (text, _) in enumerate(planted)]),
            "purpose": "agent",
        },
        {**tool_turn(("u1", "update_notes", {"content": everything})), "purpose": "agent"},
        {**answer(f"Found:\n{everything}"), "purpose": "agent"},
        {**answer(json.dumps(facts)), "purpose": "memory"},
    ]
    log = tmp_path / "log" / "runs.db"
    memory = tmp_path / "mem" / "memory.db"
    events = tmp_path / "events.jsonl"
    args = [
        "run",
        "--model",
        f"scripted:{write_script(tmp_path / 's.json', script)}",
        "--workspace",
        str(workspace),
    ]
    args += ["--log", str(log), "--events", str(events), "--trace", "--memory", str(memory)]
    args += ["--context-window", "200000", "collect the credentials"]
    assert main(args) == 0
    outputs: dict[str, str | bytes] = {"progress": capsys.readouterr().err}
    outputs["NOTES.md"] = (workspace / "NOTES.md").read_bytes()
    outputs["events"] = events.read_bytes()
    for folder in (log.parent, memory.parent):
        for path in folder.iterdir():  # the databases and their -wal/-shm companions
            if path.name.startswith("runs.sessions.db"):  # private, kept in clear for resume
                assert path.stat().st_mode & 0o077 == 0, path.name
                continue
            outputs[path.name] = path.read_bytes()
    run_id = json.loads(events.read_text(encoding="utf-8").splitlines()[0])["run_id"]
    for command in (["show", run_id, "--log", str(log)], ["export", run_id, "--log", str(log)]):
        assert main(command) == 0, command
        outputs[command[0]] = capsys.readouterr().out
    for command in (
        ["memory", "list", "--memory", str(memory), "--all"],
        ["memory", "list", "--memory", str(memory), "--all", "--json"],
    ):
        assert main(command) == 0, command
        outputs[" ".join(command[:2] + command[-1:])] = capsys.readouterr().out
    assert "[REDACTED:" in str(outputs["memory list --json"])  # the facts were stored, redacted
    leaks = [(kind, where) for kind, (_, secret) in zip(PLANTED_KINDS, planted, strict=True)
             for where, text in outputs.items() if _leaks(secret, text)]  # fmt: skip
    assert leaks == []
