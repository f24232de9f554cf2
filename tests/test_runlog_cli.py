"""The run-log commands: runs, show, export, report, and their exit codes."""

from __future__ import annotations

import argparse
import asyncio
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tinyharness import runlog
from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.base import Unmanaged
from tinyharness.events import EventBus, JsonlSink
from tinyharness.messages import Message
from tinyharness.models.base import ModelRequest
from tinyharness.models.scripted import ScriptedModel
from tinyharness.runlog import RunLog
from tinyharness.runlog import cli as runlog_cli
from tinyharness.tools.base import ToolRegistry, function_tool

SECRET = "ghp_" + "Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss7"


@function_tool
def fetch(name: str) -> str:
    """Fetch a named value.

    Args:
        name: the value's name
    """
    if name == "broken":
        raise OSError("disk on fire")
    return f"{name} = 42 (token {SECRET})" if name == "token" else f"{name} = 42"


class Summarise(Unmanaged):
    """Compacts once the window reaches 200 tokens, via a compact-purpose call."""

    def __init__(self, bus: EventBus) -> None:
        super().__init__()
        self.bus, self._n = bus, 0

    @property
    def compactions(self) -> int:
        return self._n

    async def prepare(self, system: str, messages: list[Message], call_model: Any) -> list[Message]:
        if self._tokens < 200:
            return messages
        reply = await call_model(ModelRequest((Message.user("summarise"),), "summariser", purpose="compact"))
        before, self._tokens, self._n = self._tokens, 50, self._n + 1
        self.bus.emit("compaction", n=self._n, strategy="summarize", tokens_before=before,
                      tokens_after=50, messages_before=len(messages), messages_after=1)  # fmt: skip
        return [Message.user(f"{messages[0].text}\nSummary: {reply.message.text}")]


def _use(call_id: str, name: str, tokens: int) -> dict[str, Any]:
    return {
        "purpose": "agent",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": f"Let me fetch {name}."},
            {"type": "tool_use", "id": call_id, "name": "fetch", "input": {"name": name}},
        ],
        "usage": {"input_tokens": tokens - 10, "output_tokens": 10},
    }


def _text(text: str, tokens: int, purpose: str) -> dict[str, Any]:
    usage = {"input_tokens": tokens - 5, "output_tokens": 5}
    return {
        "purpose": purpose,
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": usage,
    }


SCRIPT = [
    _use("u1", "token", 100),
    _use("u2", "broken", 220),
    _text("they fetched token and broken", 30, "compact"),
    _text("The value is 42.", 90, "agent"),
]


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, str, Path]:
    """A run log holding one scripted run with a compaction; also its --events file."""
    db, events_file = tmp_path / "runs.db", tmp_path / "events.jsonl"
    jsonl = JsonlSink(events_file)
    with RunLog(db) as log:
        bus = EventBus([jsonl, log])
        model = ScriptedModel({"responses": SCRIPT})
        agent = Agent(
            model, ToolRegistry([fetch]), AgentConfig(trace=True), context=Summarise(bus), events=bus
        )
        result = agent.run("What is the value?")
        asyncio.run(model.aclose())
    jsonl.close()
    assert result.stop == "end_turn" and result.compactions == 1
    return db, bus.run_id, events_file


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = runlog_cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_register_adds_the_commands_to_a_parent_parser(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="tinyharness")
    runlog_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", "abc", "--png", "x.png", "--log", str(tmp_path / "r.db")])
    assert args.handler is runlog_cli.cmd_report and (args.run, args.png, args.html) == ("abc", "x.png", None)
    with pytest.raises(SystemExit):  # --html and --png exclude each other
        parser.parse_args(["report", "abc", "--png", "x.png", "--html", "x.html"])


def test_runs_lists_the_run(capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path]) -> None:
    db, run_id, _ = logged
    code, out, err = run_cli(capsys, "runs", "--log", str(db))
    assert code == 0 and err == ""
    header, row = out.splitlines()
    assert header.split() == ["id", "started", "model", "stop", "calls", "compactions", "cost", "task"]
    # The scripted model runs here: it costs nothing and the column says so.
    assert re.match(
        rf"{run_id}\s+\S+ \S+\s+scripted\s+end_turn\s+4\s+1\s+\$0 local\s+What is the value\?$", row
    )


def test_show_prints_a_readable_transcript(
    capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path]
) -> None:
    db, run_id, _ = logged
    code, out, _ = run_cli(capsys, "show", run_id[:5], "--log", str(db))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"run {run_id} · model scripted")
    assert "task: What is the value?" in lines
    expected_in_order = [
        "[call 1] agent · stop tool_use · in 90 out 10 · tokens 100",
        "    assistant: Let me fetch token.",
        '    -> fetch({"name": "token"})',
        "       <- ok,",
        "[call 2] agent · stop tool_use",
        '    -> fetch({"name": "broken"})',
        "       <- ERROR,",
        "[call 3] compact · stop end_turn",
        "==== compaction #1 (summarize): tokens 220 -> 50, messages 5 -> 1 ====",
        "[call 4] agent · stop end_turn",
        "end: stop end_turn · 4 model calls · 1 compactions",
        "final answer:",
        "  The value is 42.",
    ]
    position = 0
    for expected in expected_in_order:
        found = next(i for i in range(position, len(lines)) if lines[i].startswith(expected))
        position = found + 1
    # a result's text comes from the next traced request; the failed one was compacted away first
    assert re.search(r"\n       <- ok, \d+ chars: token = 42 \(token \[REDACTED", out)
    assert "disk on fire" not in out
    assert SECRET not in out


def test_export_matches_the_events_file(
    capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    db, run_id, events_file = logged
    code, out, _ = run_cli(capsys, "export", run_id, "--log", str(db))
    assert code == 0
    target = tmp_path / "export.jsonl"
    assert run_cli(capsys, "export", run_id, "--log", str(db), "-o", str(target))[0] == 0
    assert target.read_text(encoding="utf-8") == out
    original = events_file.read_text(encoding="utf-8")
    # Both are redacted the same way: the export is the events file, byte for byte.
    assert SECRET not in original and SECRET not in out
    assert out == original


def test_report_draws_and_writes_files(
    capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    db, run_id, _ = logged
    png, page = tmp_path / "run.png", tmp_path / "run.html"
    code, out, err = run_cli(capsys, "report", run_id, "--log", str(db), "--png", str(png), "--width", "90")
    assert code == 0 and f"wrote {png}" in err
    assert "C1" in out and re.search(r"compactions\s+1", out) and re.search(r"tool errors\s+1", out)
    assert re.search(r"1\s+summarize\s+3\s+220\s+50\s+4\.40x", out)  # after call 3, the compaction call
    assert re.search(r"repeated prefix share\s+\d+\.\d% \(from requests\)", out)
    assert png.read_bytes()[:4] == b"\x89PNG"
    code, _, err = run_cli(capsys, "report", run_id, "--log", str(db), "--html", str(page))
    assert code == 0 and "<svg" in page.read_text(encoding="utf-8")


def test_unknown_run_exits_1(capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path]) -> None:
    db, _, _ = logged
    for command in ("show", "export", "report"):
        code, out, err = run_cli(capsys, command, "nosuchrun", "--log", str(db))
        assert (code, out) == (1, "")
        assert err.count("\n") == 1 and "no run 'nosuchrun'" in err


def test_missing_log_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    code, out, err = run_cli(capsys, "runs", "--log", str(db))
    assert (code, out) == (0, "") and "no runs logged yet" in err
    code, _, err = run_cli(capsys, "show", "abc", "--log", str(db))
    assert code == 1 and "no run log" in err
    assert not db.exists()  # looking does not create it


def test_bad_database_exits_2_and_is_untouched(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"\x00garbage" * 100)
    newer = tmp_path / "newer.db"
    with closing(sqlite3.connect(newer)) as conn:
        conn.execute(f"PRAGMA user_version = {runlog.SCHEMA_VERSION + 5}")
        conn.commit()
    for path, reason in ((corrupt, "corrupt"), (newer, "newer")):
        before = path.read_bytes()
        for argv in (["runs"], ["show", "x"], ["export", "x"], ["report", "x"]):
            code, out, err = run_cli(capsys, *argv, "--log", str(path))
            assert (code, out) == (2, "") and reason in err and err.count("\n") == 1
        assert path.read_bytes() == before


def test_show_marks_an_unfinished_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunLog(db) as log:
        log.emit({"type": "run_start", "seq": 1, "ts": 1.0, "run_id": "cut", "task": "t", "model": "m"})
        log.emit({"type": "notes_write", "seq": 2, "ts": 2.0, "run_id": "cut", "op": "append", "chars": 9})
        log.emit({"type": "memory_write", "seq": 3, "ts": 3.0, "run_id": "cut", "op": "add", "text": "fact"})
    code, out, _ = run_cli(capsys, "show", "cut", "--log", str(db))
    assert code == 0
    assert "    [notes] append 9 chars" in out and "[memory write]" in out and '"fact"' in out
    assert out.rstrip().endswith("(no run_end: the run is still going, or it was killed)")
    code, out, _ = run_cli(capsys, "runs", "--log", str(db))
    assert re.search(r"cut\s+.*\s+unfinished\s+0\s+0\s+-\s+t$", out.splitlines()[1])  # no cost logged


def test_show_marks_the_context_events_around_a_compaction() -> None:
    def event(kind: str, **fields: object) -> dict[str, object]:
        return {"type": kind, "seq": 1, "ts": 1.0, "run_id": "r", **fields}

    lines = runlog_cli.transcript(
        [
            event("offload", index=3, chars_before=9000, chars_after=400),
            event("compaction_fallback", strategy="summarize", reason="no reduction"),
            event("compaction", n=1, strategy="sliding-window", tokens_before=1594, tokens_after=961),
            event("context_warning", message="after compaction the window still holds ~1500 tokens"),
        ]
    )
    assert lines[:4] == [
        "    [context] offloaded message 3: 9000 -> 400 chars",
        "    [context] summarize: no reduction",
        "==== compaction #1 (sliding-window): tokens 1594 -> 961, messages None -> None ====",
        "    [context] after compaction the window still holds ~1500 tokens",
    ]


def test_runs_n_counts_the_runs_a_person_started_each_with_its_sub_agents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """-n N lists N started runs whole (a sub-agent's run comes with its parent, uncounted),
    says when older ones are left out, and refuses a count that lists nothing."""
    db = tmp_path / "runs.db"
    with RunLog(db) as log:
        for n in range(3):
            log.emit({"type": "run_start", "seq": 1, "ts": 10.0 * n, "run_id": f"p{n}", "task": f"task {n}"})
            for c in range(2):
                child = {"run_id": f"c{n}{c}", "parent_run_id": f"p{n}", "depth": 1, "call_id": f"t{c}"}
                log.emit({"type": "run_start", "seq": 1, "ts": 10.0 * n + c + 1, **child})
    code, out, err = run_cli(capsys, "runs", "-n", "2", "--log", str(db))
    ids = [line.split()[0] if not line.startswith("└") else line.split()[1] for line in out.splitlines()[1:]]
    assert code == 0 and ids == ["p2", "c20", "c21", "p1", "c10", "c11"]
    assert "the 2 newest runs you started; older ones: -n 4" in err
    code, out, err = run_cli(capsys, "runs", "-n", "3", "--log", str(db))
    assert len(out.splitlines()) == 1 + 9 and err == ""  # all of them: nothing left out
    with pytest.raises(SystemExit) as exit_:
        runlog_cli.main(["runs", "-n", "0", "--log", str(db)])
    assert exit_.value.code == 2 and "must be a positive integer" in capsys.readouterr().err


def test_last_names_the_newest_run_and_an_empty_log_says_so(
    capsys: pytest.CaptureFixture[str], logged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    db, run_id, _ = logged
    code, out, _ = run_cli(capsys, "show", "last", "--log", str(db))
    assert code == 0 and run_id in out
    assert (
        run_cli(capsys, "export", "last", "--log", str(db))[1]
        == run_cli(capsys, "export", run_id, "--log", str(db))[1]
    )
    empty = tmp_path / "empty.db"
    RunLog(empty).close()
    code, out, err = run_cli(capsys, "show", "last", "--log", str(empty))
    assert code == 1 and "no runs yet" in err and "Traceback" not in err
