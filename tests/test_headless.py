"""``tinyharness run --output-format text|json|stream-json`` on the real CLI (scripted model):
what reaches stdout, and that the exit codes stay what they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tinyharness
from hardening_support import answer, tool_turn, write_script
from tinyharness.cli import main
from tinyharness.headless import RESULT_FIELDS, RunSummary

SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_AbCdEf"


def script(path: Path, *responses: dict[str, Any]) -> str:
    return f"scripted:{write_script(path, responses)}"


READ = tool_turn(("t1", "read_file", {"path": "README.md"}))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# demo\nA tiny demo project.\n", encoding="utf-8")
    return root


def run(model: str, workspace: Path, *extra: str) -> int:
    return main(["run", "--model", model, "--workspace", str(workspace), "--no-memory", *extra, "the task"])


def test_json_prints_one_object_with_answer_stop_usage_cost_and_ids(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", READ, answer("A tiny demo project."))
    events = tmp_path / "events.jsonl"
    code = run(model, workspace, "--output-format", "json", "--events", str(events), "--session", "s1")
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("\n") == 1  # one line, one object, nothing else
    result = json.loads(out)
    assert tuple(result) == RESULT_FIELDS
    assert result["answer"] == "A tiny demo project."
    assert (result["stop"], result["ok"], result["model_calls"]) == ("end_turn", True, 2)
    assert result["usage"]["input_tokens"] == 300 and result["usage"]["output_tokens"] == 30
    assert result["usage"]["by_purpose"] == {
        "agent": {"calls": 2, "input_tokens": 300, "output_tokens": 30, "cached_tokens": 0}
    }
    assert result["cost_usd"] is None  # the scripted model has no price
    run_end = [json.loads(line) for line in events.read_text().splitlines()][-1]
    assert result["run_id"] == run_end["run_id"] and result["session"] == "s1"
    assert result["model"]


def test_json_of_a_stopped_run_still_prints_and_exits_1(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", READ, answer("unused"))
    code = run(model, workspace, "--output-format", "json", "--max-iterations", "1", "--no-log")
    captured = capsys.readouterr()
    assert code == 1
    result = json.loads(captured.out)
    assert result["stop"] == "max_iterations" and result["ok"] is False
    assert "stopped early (max_iterations)" in captured.err


def test_json_answer_has_secrets_redacted(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", answer(f"the key is {SECRET}"))
    assert run(model, workspace, "--output-format", "json", "--no-log") == 0
    out = capsys.readouterr().out
    assert SECRET not in out and json.loads(out)["answer"].startswith("the key is ")


def test_stream_json_is_the_events_file_on_stdout_and_nothing_else(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", READ, answer("A tiny demo project."))
    events = tmp_path / "events.jsonl"
    code = run(model, workspace, "--output-format", "stream-json", "--events", str(events), "--no-log")
    out = capsys.readouterr().out
    assert code == 0
    assert out == events.read_text(encoding="utf-8")  # the same schema, the same redaction
    kinds = [json.loads(line)["type"] for line in out.splitlines()]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end" and "model_call" in kinds


def test_text_prints_the_answer_alone(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", answer("A tiny demo project."))
    assert run(model, workspace, "--no-log") == 0
    assert capsys.readouterr().out == "A tiny demo project.\n"


def test_bad_usage_prints_nothing_on_stdout_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path / "s.json", answer("x"))
    code = run(model, tmp_path / "missing", "--output-format", "json")
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1


def test_stream_json_in_a_real_process_writes_only_json_lines_on_stdout(
    tmp_path: Path, workspace: Path
) -> None:
    """The real process, not a captured stream: whatever else writes to the file descriptor
    (progress, notices, libraries) would show up here."""
    model = script(tmp_path / "s.json", READ, answer("done"))
    src = str(Path(tinyharness.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": src, "TINYHARNESS_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "tinyharness", "run", "--model", model, "--workspace", str(workspace)]
    done = subprocess.run(
        [*command, "--output-format", "stream-json", "--no-memory", "the task"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["type"] == "run_start" and lines[-1]["final"] == "done"
    assert [e["seq"] for e in lines] == sorted(e["seq"] for e in lines)
    assert "[done]" in done.stderr  # progress went to stderr


def test_cost_is_known_only_when_every_call_has_a_price() -> None:
    summary = RunSummary()
    summary.emit({"type": "run_start", "run_id": "r", "model": "m", "session": None})
    summary.emit({"type": "model_call", "purpose": "agent", "usage": {"input_tokens": 5}, "cost_usd": 0.25})
    summary.emit({"type": "model_call", "purpose": "compact", "usage": {"output_tokens": 3}, "cost_usd": 0.5})
    summary.emit({"type": "run_end", "run_id": "r", "stop": "end_turn", "final": "ok", "usage": {}})
    assert summary.result()["cost_usd"] == 0.75
    assert set(summary.result()["usage"]["by_purpose"]) == {"agent", "compact"}
    summary.emit({"type": "model_call", "purpose": "memory", "usage": {}})  # a call with no price
    assert summary.result()["cost_usd"] is None
