"""AGENTS.md and hooks in ``tinyharness chat`` (a real terminal, a pty driven by pexpect, on the
scripted model): /context counts the project instructions' tokens, a UserPromptSubmit hook
refuses a message (the model never sees it) and the chat goes on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tinyharness.session import SessionStore, store_path_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
PROMPT = "›"


def text(words: str) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": words}], "usage": {}}


def test_chat_counts_agents_md_in_context_and_a_hook_refuses_a_message(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Always answer in French.\n" * 20, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    block = "grep -q prod && { echo 'prod needs a ticket' >&2; exit 2; }; exit 0"
    hooks = {"UserPromptSubmit": [{"hooks": [{"command": block}]}]}
    (home / "config.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [text("Bonjour.")]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TINYHARNESS_MODEL"}
    env.update(
        TINYHARNESS_HOME=str(home), TINYHARNESS_MEMORY="off", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color"
    )
    argv = ["-m", "tinyharness", "chat", "--model", f"scripted:{script}", "--workspace", str(workspace)]
    child = pexpect.spawn(
        sys.executable, [*argv, "--session", "t"], env=env, encoding="utf-8", timeout=30, dimensions=(40, 160)
    )
    child.expect(PROMPT)
    child.sendline("deploy to prod now")
    child.expect(r"stopped: blocked")
    child.expect("prod needs a ticket")
    child.expect(PROMPT)
    child.sendline("hello")
    child.expect("Bonjour")
    child.expect(PROMPT)
    child.sendline("/context")
    child.expect(r"of which project instructions \(AGENTS\.md\)\s+(\d+)")
    assert int(child.match.group(1)) > 100
    child.expect(PROMPT)
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    with SessionStore(store_path_for(home / "runs.db")) as store:
        saved = store.open("t").load()
    assert saved is not None
    said = [m.text for m in saved.messages]
    assert not any("deploy to prod" in t for t in said)  # refused: never part of the conversation
    assert "Always answer in French." in said[0] and said[-1] == "Bonjour."
