"""Project instructions (AGENTS.md, CLAUDE.md, nested ones, the user's own) through the real
command line on the scripted model: they reach the model in the first request, survive every
compaction word for word (audited), are redacted, capped, switchable off, and the chat's
/context counts them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.anchors import Anchors, Instruction
from tinyharness.cli import main
from tinyharness.context.audit import audit, with_anchors
from tinyharness.messages import Message, TextBlock
from tinyharness.session import SessionStore, store_path_for

RULES = "# Rules for agents\n\n- Run `make check` before you answer.\n- Never touch vendor/.\n"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


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


def run(tmp_path: Path, workspace: Path, script: list[dict[str, Any]], *options: str) -> list[dict[str, Any]]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": script}), encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.unlink(missing_ok=True)
    code = main(
        [
            "run",
            "--workspace",
            str(workspace),
            "--log",
            str(tmp_path / "runs.db"),
            "--model",
            f"scripted:{path}",
            "--trace",
            "--events",
            str(events),
            "--quiet",
            *options,
            "Do the task.",
        ]
    )
    assert code == 0
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["request"] for e in events if e["type"] == "model_call" and e["purpose"] == "agent"]


def texts(request: dict[str, Any]) -> list[str]:
    out = []
    for message in request["messages"]:
        for block in message["content"]:
            out.append(block.get("text") or block.get("content") or "")
    return out


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for n in range(20):
        filler = "".join(f"line {i}: nothing to see in file {n}\n" for i in range(30))
        (root / f"f{n}.txt").write_text(filler, encoding="utf-8")
    return root


def test_agents_md_survives_five_compactions_word_for_word_and_audited(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text(RULES, encoding="utf-8")
    script: list[dict[str, Any]] = []
    for cycle in range(5):
        script += [
            call(f"a{cycle}", "read_file", {"path": f"f{3 * cycle}.txt"}),
            call(f"b{cycle}", "read_file", {"path": f"f{3 * cycle + 1}.txt"}),
            call(f"c{cycle}", "read_file", {"path": f"f{3 * cycle + 2}.txt"}, input_tokens=3000),
            say(f"1. Intent: read the files (summary {cycle})", "compact"),
        ]
    script.append(say("All files read."))
    events = run(
        tmp_path,
        workspace,
        script,
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
        "--no-plan",
    )
    start = events[0]
    assert start["type"] == "run_start" and start["instructions"] == [
        {"source": "AGENTS.md", "chars": len(RULES.strip("\n"))}
    ]
    compactions = [e for e in events if e["type"] == "compaction"]
    audits = [e for e in events if e["type"] == "audit"]
    assert len(compactions) == 5 and all("summarize" in e["strategy"] for e in compactions)
    assert [(a["ok"], a["instructions"]) for a in audits] == [(True, 1)] * 5
    sent = requests(events)
    assert len(sent) == 16
    for request in sent:  # the first request and every one after each compaction
        head = request["messages"][0]["content"]
        assert any(RULES.strip("\n") in block.get("text", "") for block in head)


def test_secrets_in_agents_md_are_redacted_before_the_model_sees_them(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text(f"{RULES}\nDeploy token: {SECRET}\n", encoding="utf-8")
    run(tmp_path, workspace, [say("ok")], "--session", "s")
    with SessionStore(store_path_for(tmp_path / "runs.db")) as store:
        saved = store.open("s").load()
    assert saved is not None
    head = saved.messages[0].text  # the session keeps the exact history the model was sent
    assert "Never touch vendor/." in head and "[REDACTED:" in head
    assert SECRET not in head


def test_claude_md_when_there_is_no_agents_md_and_the_users_own_first(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "CLAUDE.md").write_text("Use tabs, never spaces.\n", encoding="utf-8")
    home = Path(os.environ["TINYHARNESS_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "AGENTS.md").write_text("Answer in short sentences.\n", encoding="utf-8")
    events = run(tmp_path, workspace, [say("ok")])
    assert [i["source"] for i in events[0]["instructions"]] == ["$TINYHARNESS_HOME/AGENTS.md", "CLAUDE.md"]
    head = "\n".join(texts(requests(events)[0]))
    assert head.index("Answer in short sentences.") < head.index("Use tabs, never spaces.")


def test_no_project_instructions_turns_them_off(tmp_path: Path, workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text(RULES, encoding="utf-8")
    events = run(tmp_path, workspace, [say("ok")], "--no-project-instructions")
    assert "instructions" not in events[0]
    assert not any("Never touch vendor/." in t for t in texts(requests(events)[0]))


def test_nested_agents_md_is_added_once_when_the_agent_works_in_its_folder(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text(RULES, encoding="utf-8")
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "AGENTS.md").write_text(
        "In pkg/: every function has a docstring.\n", encoding="utf-8"
    )
    (workspace / "pkg" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (workspace / "pkg" / "b.py").write_text("y = 2\n", encoding="utf-8")
    script = [
        call("r0", "read_file", {"path": "f0.txt"}),
        call("r1", "read_file", {"path": "pkg/a.py"}),
        call("r2", "read_file", {"path": "pkg/b.py"}),
        say("read"),
    ]
    events = run(tmp_path, workspace, script)
    loaded = [e for e in events if e["type"] == "instructions_loaded"]
    assert [e["source"] for e in loaded] == ["pkg/AGENTS.md"]
    last = requests(events)[-1]
    results = {
        block["tool_use_id"]: block["content"]
        for message in last["messages"]
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    assert "every function has a docstring" not in results["r0"]
    assert "every function has a docstring" in results["r1"]
    assert "every function has a docstring" not in results["r2"]  # once


def test_a_huge_agents_md_is_cut_with_a_notice(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "AGENTS.md").write_text(
        "".join(f"rule {i}: be careful\n" for i in range(5000)), encoding="utf-8"
    )
    events = run(tmp_path, workspace, [say("ok")])
    err = capsys.readouterr().err
    assert "AGENTS.md is" in err and "project_instructions_max_bytes" in err
    head = "\n".join(texts(requests(events)[0]))
    assert "rule 0: be careful" in head and "rule 4999" not in head
    assert "only its first" in head  # the model is told the file was cut


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=300).filter(str.strip), min_size=1, max_size=4, unique=True),
    rounds=st.integers(min_value=1, max_value=6),
)
def test_instructions_put_back_by_every_compaction_pass_the_audit_and_a_resume(
    texts: list[str], rounds: int
) -> None:
    items = [Instruction(f"d{n}/AGENTS.md", text) for n, text in enumerate(texts)]
    anchors = Anchors(instructions=items)
    task = (TextBlock("任务: fix it"),)
    messages = [Message("user", task)]
    for n in range(rounds):  # each compaction replaces the rest of the history with a summary
        messages = with_anchors(messages, anchors, task)
        messages = [messages[0], Message("assistant", (TextBlock(f"summary {n}"),))]
        assert audit(messages, anchors, task) == []
    resumed = Anchors()
    resumed.load_state(json.loads(json.dumps(anchors.to_state())))
    assert resumed.instructions == anchors.instructions
    assert audit(messages, resumed, task) == []
    lost = [Message("user", task), *messages[1:]]
    others = [b.text for m in lost for b in m.content if isinstance(b, TextBlock)]  # as the audit reads
    missing = [m["text"] for m in audit(lost, anchors, task) if m["kind"] == "instructions"]
    # the head's copy was the one; an instruction also written in a remaining block is still there
    assert missing == [i.source for i in items if not any(i.text in text for text in others)]
