"""``tinyharness chat`` in a real terminal (a pty driven by pexpect), on the scripted model:
the reply streams word by word, a slash command answers, a write shows its diff and waits for
yes / no / always, /undo puts the file back, and Ctrl-C stops a turn (during a reply or during
the write question) and the chat goes on with a valid conversation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tinyharness.session import SessionStore, store_path_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
PROMPT = "›"


def text(words: str, **usage: int) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": words}], "usage": usage}


def write_call(path: str, content: str) -> dict[str, Any]:
    call = {"type": "tool_use", "id": "w1", "name": "write_file", "input": {"path": path, "content": content}}
    return {"stop_reason": "tool_use", "content": [{"type": "text", "text": "Writing."}, call], "usage": {}}


def spawn(
    tmp_path: Path,
    responses: list[dict[str, Any]],
    *,
    delay: float = 0.0,
    extra: Sequence[str] = (),
    ready: float = 30,
) -> pexpect.spawn:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": responses, "stream_delay": delay}), encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "TINYHARNESS_MODEL"}
    env.update(
        TINYHARNESS_HOME=str(tmp_path / "home"),
        TINYHARNESS_MEMORY="off",
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect answers no cursor-position requests
        TERM="xterm-256color",
    )
    argv = ["-m", "tinyharness", "chat", "--model", f"scripted:{script}", "--workspace", str(workspace)]
    child = pexpect.spawn(
        sys.executable,
        [*argv, "--session", "t", *extra],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    child.expect(PROMPT, timeout=ready)
    return child


def leave(child: pexpect.spawn) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before


def saved_conversation(tmp_path: Path) -> list[Any]:
    with SessionStore(store_path_for(tmp_path / "home" / "runs.db")) as store:
        saved = store.open("t").load()
    assert saved is not None
    return saved.messages


def test_streaming_a_slash_command_diff_approval_and_undo(tmp_path: Path) -> None:
    words = "alpha beta gamma delta epsilon zeta"
    child = spawn(
        tmp_path,
        [text(words, input_tokens=100), write_call("docs/a.md", "line one\nline two\n"), text("Written.")],
        delay=0.3,
    )
    child.sendline("hello")
    child.expect("alpha")
    # Streamed: when the first word is on the screen, the last one has not been written yet.
    assert "zeta" not in child.before + child.after + child.buffer
    child.expect("zeta")
    child.expect(PROMPT)

    child.sendline("/context")
    child.expect("history")
    child.expect("compaction trigger")
    child.expect(PROMPT)

    child.sendline("write the doc")
    child.expect(r"\+\+\+ b/docs/a\.md")
    child.expect(r"\+line one")
    child.expect(r"\[n\]o / \[a\]lways for docs/\*: ")
    assert not (tmp_path / "ws" / "docs" / "a.md").exists()  # nothing written before the yes
    child.sendline("y")
    child.expect("Written")
    child.expect(PROMPT)
    assert (tmp_path / "ws" / "docs" / "a.md").read_text() == "line one\nline two\n"

    child.sendline("/undo")
    child.expect("put back: docs/a.md")
    child.expect(PROMPT)
    assert not (tmp_path / "ws" / "docs" / "a.md").exists()
    leave(child)


def test_ctrl_c_stops_a_streaming_turn_and_the_chat_goes_on(tmp_path: Path) -> None:
    slow = " ".join(f"word{i}" for i in range(60))
    child = spawn(tmp_path, [text(slow), text("second answer")], delay=0.2)
    child.sendline("talk slowly")
    child.expect("word1 ")
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    assert "word59" not in child.before
    child.sendline("and now?")
    child.expect("second answer")
    child.expect(PROMPT)
    leave(child)
    roles_and_text = [(m.role, m.text) for m in saved_conversation(tmp_path)]
    assert roles_and_text == [
        ("user", "talk slowly"),
        ("assistant", "(interrupted by the user)"),
        ("user", "and now?"),
        ("assistant", "second answer"),
    ]


def test_ctrl_c_at_the_write_question_refuses_the_write_and_closes_the_call(tmp_path: Path) -> None:
    child = spawn(tmp_path, [write_call("x.txt", "data"), text("next answer")])
    child.sendline("write x")
    child.expect(r"\[a\]lways for x\.txt: ")
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    assert not (tmp_path / "ws" / "x.txt").exists()
    child.sendline("go on")
    child.expect("next answer")
    child.expect(PROMPT)
    leave(child)
    history = saved_conversation(tmp_path)
    (result,) = history[2].tool_results  # the call is answered: the conversation stays valid
    assert result.tool_use_id == "w1" and result.is_error
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_ctrl_c_twice_at_the_prompt_leaves(tmp_path: Path) -> None:
    child = spawn(tmp_path, [])
    child.sendintr()
    child.expect("Ctrl-C again")
    child.expect(PROMPT)  # the prompt is back (sent before it, on a loaded machine, the key was lost)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_slash_commands_compact_model_clear_and_resume(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"responses": [text("from the other model")]}), encoding="utf-8")
    summary = {**text("SUMMARY: the user said hello three times."), "purpose": "compact"}
    agent = [{**text(f"reply {i}"), "purpose": "agent"} for i in range(3)]
    child = spawn(tmp_path, [*agent, summary])
    for i in range(3):
        child.sendline(f"hello {i}")
        child.expect(f"reply {i}")
        child.expect(PROMPT)
    child.sendline("/help")
    child.expect("/undo")
    child.expect(PROMPT)
    child.sendline("/plan")
    child.expect("no plan yet")
    child.expect(PROMPT)
    child.sendline("/notes")
    child.expect("no notes yet")
    child.expect(PROMPT)
    child.sendline("/memory search anything")
    child.expect("memory is off")
    child.expect(PROMPT)
    child.sendline("/compact keep the greetings")
    child.expect(r"\[compact\] tokens")
    child.expect(PROMPT)
    child.sendline(f"/model scripted:{other}")
    child.expect(f"model: scripted:{other}")
    child.expect(PROMPT)
    child.sendline("and you?")
    child.expect("from the other model")
    child.expect(PROMPT)
    child.sendline("/clear")
    child.expect("new conversation")
    child.expect(PROMPT)
    child.sendline("/resume t")
    child.expect(r"resumed session t \(\d+ messages\)")
    child.expect(PROMPT)
    child.sendline("still there?")  # the resumed conversation goes on (a fresh copy of the script)
    child.expect("from the other model")
    child.expect(PROMPT)
    child.sendline("/nonsense")
    child.expect("unknown command")
    child.expect(PROMPT)
    leave(child)  # exit 0: every scripted response, the summary included, was used
    history = saved_conversation(tmp_path)
    assert "SUMMARY: the user said hello three times." in history[0].text + history[1].text
    assert [m.text for m in history[-4:]] == [
        "and you?",
        "from the other model",
        "still there?",
        "from the other model",
    ]


def test_plan_shows_the_plan_and_pins_and_the_status_line_its_current_step(tmp_path: Path) -> None:
    items = [
        {"content": "Read the code", "status": "done"},
        {"content": "Write the fix", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    ]
    todo = {"type": "tool_use", "id": "t1", "name": "todo", "input": {"items": items}}
    plan = {"stop_reason": "tool_use", "content": [todo], "usage": {}}
    child = spawn(
        tmp_path,
        [plan, text("working on it now, one word at a time")],
        delay=0.3,
        extra=["--pin", "Never edit tests/"],
    )
    child.sendline("fix the bug")
    child.expect("plan: 1/3 Write the fix")  # the live status line while the reply streams
    child.expect(PROMPT)
    child.sendline("/plan")
    child.expect(r"plan: 1/3 done · now: Write the fix")
    child.expect(r"\[x\] Read the code")
    child.expect(r"\[>\] Write the fix")
    child.expect("Never edit tests/")
    child.expect(PROMPT)
    leave(child)


@pytest.mark.local_model
def test_chat_on_the_local_model_streams_a_reply(tmp_path: Path) -> None:
    """The packaged model through the embedded llama.cpp server: a turn streams its answer
    (the status line says "writing" once text arrives) and the prompt comes back."""
    from tinyharness.models.local import default_gguf_path

    try:
        default_gguf_path()
    except Exception as exc:  # the packaged model is not installed here
        pytest.skip(str(exc))
    (tmp_path / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TINYHARNESS_MODEL"}
    env.update(TINYHARNESS_HOME=str(tmp_path / "home"), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    child = pexpect.spawn(
        sys.executable,
        [
            *("-m", "tinyharness", "chat", "--model", "local", "--workspace", str(tmp_path / "ws")),
            *("--context-window", "2048", "--max-iterations", "2", "--max-output-tokens", "48", "--no-log"),
        ],
        env=env,
        encoding="utf-8",
        timeout=240,
        dimensions=(40, 120),
    )
    child.expect(PROMPT)
    child.sendline("Say hello in one short sentence.")
    child.expect("writing")
    child.expect(PROMPT)
    leave(child)


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep")
def test_ctrl_c_during_a_shell_command_kills_it(tmp_path: Path) -> None:
    """A tool's thread cannot be cancelled, so Ctrl-C also kills the command the shell tool is
    running: nothing of it is left behind."""
    marker = "sleep 37.25"
    call = {"type": "tool_use", "id": "s1", "name": "shell", "input": {"command": marker}}
    child = spawn(
        tmp_path,
        [{"stop_reason": "tool_use", "content": [call], "usage": {}}, text("after")],
        extra=["--shell", "--allow", "shell:sleep *"],
    )
    child.sendline("wait a bit")
    child.expect("running shell")
    for _ in range(200):  # the tool_call line comes just before the command starts
        if _running(marker):
            break
        time.sleep(0.05)
    assert _running(marker)
    child.sendintr()
    child.expect("interrupted")
    child.expect(PROMPT)
    assert not _running(marker)
    child.sendline("go on")
    child.expect("after")
    child.expect(PROMPT)
    leave(child)


def _running(command: str) -> bool:
    found = subprocess.run(["pgrep", "-f", command], capture_output=True, text=True)
    return bool(found.stdout.strip())


def _calls(*uses: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses]
    return {"stop_reason": "tool_use", "content": content, "usage": {}}


def test_mcp_tools_ctrl_c_on_a_running_call_show_and_resume_by_number(tmp_path: Path) -> None:
    """The chat starts the MCP servers of --mcp like a run does; Ctrl-C stops an MCP call that
    would hang for a minute (the call is cancelled, not waited for); a tool's output shows as
    one line and /show N prints all of it; /resume lists the saved conversations and picks
    one by its number."""
    from mcp_support import small_server, write_config

    config = write_config(tmp_path / "mcp.json", {"small": small_server()})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 41)), encoding="utf-8")
    child = spawn(
        tmp_path,
        [
            _calls(("e1", "mcp__small__echo", {"text": "hi"}), ("r1", "read_file", {"path": "long.txt"})),
            text("both done"),
            _calls(("h1", "mcp__small__hang", {"seconds": 60})),
        ],
        extra=["--mcp", config],
        ready=180,  # the server starts first (its SDK is slow to import on a busy machine)
    )
    child.sendline("echo and read")
    child.expect(r"lines 1-40 of 40.*\(/show 2 for all of it\)")
    child.expect(r"echo: hi")
    child.expect("both done")
    child.expect(PROMPT)
    child.sendline("/show 2")
    child.expect("line 40")
    child.expect(PROMPT)
    child.sendline("wait for the server")
    child.expect("running mcp__small__hang")
    time.sleep(0.5)
    child.sendintr()
    child.expect("interrupted", timeout=15)  # far below the minute the call would take
    child.expect(PROMPT)
    child.sendline("/show 3")
    child.expect("no longer kept|mcp__small__hang")
    child.expect(PROMPT)
    child.sendline("/show 99")
    child.expect("usage: /show N")
    child.expect(PROMPT)
    other = tmp_path / "other.json"  # every agent from here on replays this one-reply script
    other.write_text(json.dumps({"responses": [text("still here")]}), encoding="utf-8")
    child.sendline(f"/model scripted:{other}")
    child.expect(PROMPT)
    child.sendline("/clear")
    child.expect("new conversation")
    child.expect(PROMPT)
    child.sendline("/resume")
    child.expect(r"1 +t .*echo and read")
    child.expect(PROMPT)
    child.sendline("/resume 1")
    child.expect(r"resumed session t \(\d+ messages\)")
    child.expect(PROMPT)
    child.sendline("are you there?")
    child.expect("still here")
    child.expect(PROMPT)
    leave(child)
