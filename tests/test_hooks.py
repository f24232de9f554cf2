"""Hooks in Claude Code's settings shape, run as real scripts through the real command line on
the scripted model: a formatter after write_file, a block on ``rm`` the model reads, a
PreCompact hook that saves the transcript, a task refused, a Stop that sends the model back, a
failing and a hanging hook reported and ignored, SessionStart context, and a project's hooks
file that runs only once trusted."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tinyharness.cli import main
from tinyharness.errors import ConfigError
from tinyharness.hooks import parse_hooks

FORMATTER = """\
import json, sys
event = json.load(sys.stdin)
path = event["cwd"] + "/" + event["tool_input"]["path"]
text = open(path, encoding="utf-8").read()
lines = [line.rstrip() for line in text.splitlines()]
open(path, "w", encoding="utf-8").write("\\n".join(lines) + "\\n")
"""
NO_RM = """\
import json, re, sys
event = json.load(sys.stdin)
if re.search(r"(^|[;&|\\s])rm\\s", event["tool_input"].get("command", "") + " "):
    print("rm is not allowed in this repository; move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"""
SAVE_TRANSCRIPT = """\
import json, shutil, sys, pathlib
event = json.load(sys.stdin)
saved = pathlib.Path(event["cwd"]) / "saved"
saved.mkdir(exist_ok=True)
n = len(list(saved.iterdir()))
shutil.copy(event["transcript_path"], saved / f"before-compaction-{n}-{event['trigger']}.jsonl")
"""
STOP_ONCE = """\
import json, sys
event = json.load(sys.stdin)
if not event["stop_hook_active"]:
    print("the tests were not run; run them before you answer", file=sys.stderr)
    sys.exit(2)
"""


def call(call_id: str, name: str, args: dict[str, Any], input_tokens: int = 100) -> dict[str, Any]:
    return {
        "purpose": "agent",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 10},
    }


def say(text: str, purpose: str = "agent") -> dict[str, Any]:
    return {
        "purpose": purpose,
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }


def script_file(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return [sys.executable, str(path)]


def configure(hooks: dict[str, Any]) -> None:
    home = Path(os.environ["TINYHARNESS_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")


def hook(event: str, command: str | list[str], matcher: str = "", timeout: float = 30) -> dict[str, Any]:
    return {
        event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]
    }


def run(
    tmp_path: Path,
    workspace: Path,
    script: list[dict[str, Any]],
    *options: str,
    task: str = "Do it.",
    code: int = 0,
) -> list[dict[str, Any]]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": script}), encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.unlink(missing_ok=True)
    argv = [
        "run",
        "--workspace",
        str(workspace),
        "--log",
        str(tmp_path / "runs.db"),
        "--model",
        f"scripted:{path}",
    ]
    assert main([*argv, "--trace", "--events", str(events), "--quiet", *options, task]) == code
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def last_request(events: list[dict[str, Any]]) -> dict[str, Any]:
    return [e for e in events if e["type"] == "model_call" and e["purpose"] == "agent"][-1]["request"]


def result_of(request: dict[str, Any], call_id: str) -> str:
    for message in request["messages"]:
        for block in message["content"]:
            if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                return str(block["content"])
    raise AssertionError(f"no result for {call_id}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_a_formatter_runs_after_write_file_and_run_start_lists_it(tmp_path: Path, workspace: Path) -> None:
    formatter = script_file(tmp_path, "fmt.py", FORMATTER)
    configure(hook("PostToolUse", formatter, matcher="write_file|edit_file"))
    written = "def f():   \n    return 1   \n"
    events = run(
        tmp_path,
        workspace,
        [call("w1", "write_file", {"path": "m.py", "content": written}), say("ok")],
        "--allow-write",
    )
    assert (workspace / "m.py").read_text(encoding="utf-8") == "def f():\n    return 1\n"
    start = events[0]
    assert start["hooks"] == [
        {
            "event": "PostToolUse",
            "command": " ".join(formatter),
            "timeout": 30.0,
            "matcher": "write_file|edit_file",
            "source": str(Path(os.environ["TINYHARNESS_HOME"]) / "config.json"),
        }
    ]
    ran = [e for e in events if e["type"] == "hook"]
    assert [(e["event"], e["tool"], e["code"], e["blocked"]) for e in ran] == [
        ("PostToolUse", "write_file", 0, False)
    ]


def test_a_pretooluse_hook_blocks_rm_and_the_model_reads_why(tmp_path: Path, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("precious\n", encoding="utf-8")
    configure(hook("PreToolUse", script_file(tmp_path, "no_rm.py", NO_RM), matcher="shell"))
    script = [
        call("s1", "shell", {"command": "rm -f keep.txt"}),
        call("s2", "shell", {"command": "ls"}),
        say("kept it"),
    ]
    events = run(tmp_path, workspace, script, "--shell", "--allow", "shell:*", "--yes")
    assert (workspace / "keep.txt").exists()
    request = last_request(events)
    blocked = result_of(request, "s1")
    assert "PreToolUse hook blocked this call" in blocked and "move files to trash/ instead" in blocked
    assert "keep.txt" in result_of(request, "s2")  # the next command ran
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert results["s1"]["ok"] is False and results["s1"]["blocked"] is True
    assert "blocked" not in results["s2"]


def test_a_precompact_hook_saves_the_transcript(tmp_path: Path, workspace: Path) -> None:
    for n in range(3):
        (workspace / f"f{n}.txt").write_text(f"file {n}\n" * 30, encoding="utf-8")
    configure(hook("PreCompact", script_file(tmp_path, "save.py", SAVE_TRANSCRIPT)))
    script = [
        call("r0", "read_file", {"path": "f0.txt"}),
        call("r1", "read_file", {"path": "f1.txt"}),
        call("r2", "read_file", {"path": "f2.txt"}, input_tokens=3000),
        say("summary of the reads", "compact"),
        say("done"),
    ]
    options = [
        "--context-window",
        "4000",
        "--strategy",
        "summarize",
        "--counter",
        "chars4",  # no usage correction of the estimate
        "--accounting",
        "cumulative",  # the lesson-6 counter: the reported usage of this window's calls
        "--keep-recent",
        "1",
    ]
    events = run(tmp_path, workspace, script, *options)
    assert len([e for e in events if e["type"] == "compaction"]) == 1
    saved = list((workspace / "saved").iterdir())
    assert [p.name for p in saved] == ["before-compaction-0-auto.jsonl"]
    lines = [json.loads(line) for line in saved[0].read_text(encoding="utf-8").splitlines()]
    assert lines[0]["role"] == "user" and "Do it." in json.dumps(lines[0])
    used = [b["id"] for m in lines for b in m["content"] if b.get("type") == "tool_use"]
    assert used == ["r0", "r1", "r2"]  # the whole conversation before the compaction


def test_a_userpromptsubmit_hook_refuses_the_task_before_any_model_call(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(hook("UserPromptSubmit", "echo 'tasks that mention prod need a ticket' >&2; exit 2"))
    events = run(tmp_path, workspace, [], task="deploy to prod", code=1)
    assert not [e for e in events if e["type"] == "model_call"]
    end = events[-1]
    assert end["type"] == "run_end" and end["stop"] == "blocked"
    assert "tasks that mention prod need a ticket" in capsys.readouterr().err


def test_a_stop_hook_sends_the_model_back_once(tmp_path: Path, workspace: Path) -> None:
    configure(hook("Stop", script_file(tmp_path, "stop.py", STOP_ONCE)))
    events = run(tmp_path, workspace, [say("done (untested)"), say("tests run, done")])
    request = last_request(events)
    said = [b.get("text", "") for m in request["messages"] for b in m["content"]]
    assert any("the tests were not run; run them before you answer" in t for t in said)
    assert events[-1]["final"] == "tests run, done"
    assert [e["blocked"] for e in events if e["type"] == "hook"] == [True, False]


def test_sessionstart_stdout_and_userpromptsubmit_stdout_reach_the_model(
    tmp_path: Path, workspace: Path
) -> None:
    configure(
        {**hook("SessionStart", "echo branch: feature-x"), **hook("UserPromptSubmit", "echo ticket: T-42")}
    )
    events = run(tmp_path, workspace, [say("ok")])
    first = last_request(events)["messages"][0]["content"]
    said = [b.get("text", "") for b in first]
    assert said[0] == "Do it." and "branch: feature-x" in said and "ticket: T-42" in said


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs: a killed child left as a zombie (the harness, a child
    subreaper, collects those at exit; here it runs inside the test process) does not."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_other_exit_codes_and_timeouts_are_reported_and_ignored(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid_file = tmp_path / "child.pid"
    hanging = f"sleep 60 & echo $! > {pid_file}; wait"
    configure(
        {
            "PreToolUse": [
                {"matcher": "read_file", "hooks": [{"command": "echo broken >&2; exit 1"}]},
                {"matcher": "read_file", "hooks": [{"command": hanging, "timeout": 1}]},
            ]
        }
    )
    (workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    events = run(tmp_path, workspace, [call("r1", "read_file", {"path": "a.txt"}), say("ok")])
    assert "alpha" in result_of(last_request(events), "r1")  # the call ran
    err = capsys.readouterr().err
    assert "exited 1 (ignored): broken" in err and "timed out after 1 s and was killed" in err
    child = int(pid_file.read_text())
    for _ in range(50):  # the kill reached the hook's own child (its process group)
        if not _running(child):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the hook's child process outlived its timeout")


def test_project_hooks_run_only_once_trusted(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = workspace / "hook-ran"
    (workspace / ".agents").mkdir()
    project = {"hooks": hook("SessionStart", f"touch {marker}")}
    (workspace / ".agents" / "hooks.json").write_text(json.dumps(project), encoding="utf-8")
    run(tmp_path, workspace, [say("ok")])
    assert not marker.exists()
    assert "were not run: project hooks run only once you trust the file" in capsys.readouterr().err

    assert main(["hooks", "list", "--workspace", str(workspace)]) == 0
    assert "(not trusted: not run)" in capsys.readouterr().out
    assert main(["hooks", "trust", "--workspace", str(workspace)]) == 0
    events = run(tmp_path, workspace, [say("ok")])
    assert marker.exists() and events[0]["hooks"][0]["source"] == ".agents/hooks.json"

    marker.unlink()  # a changed file must be trusted again
    project["hooks"]["SessionStart"][0]["hooks"].append({"command": "true"})
    (workspace / ".agents" / "hooks.json").write_text(json.dumps(project), encoding="utf-8")
    run(tmp_path, workspace, [say("ok")])
    assert not marker.exists()


def test_bad_hook_settings_fail_in_one_line(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure({"PreToolUze": []})
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"responses": []}), encoding="utf-8")
    assert main(["run", "--workspace", str(workspace), "--model", f"scripted:{path}", "--no-log", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown hook event 'PreToolUze'" in err
    with pytest.raises(ConfigError, match="timeout must be a positive number"):
        parse_hooks({"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}, "test")
    with pytest.raises(ConfigError, match="not a regular expression"):
        parse_hooks({"PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}]}, "test")


def test_a_broken_untrusted_project_hooks_file_does_not_stop_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / ".agents").mkdir()
    (workspace / ".agents" / "hooks.json").write_text('{"hooks": {"Nope": []}}', encoding="utf-8")
    run(tmp_path, workspace, [say("ok")])
    assert "unknown hook event 'Nope'" in capsys.readouterr().err
