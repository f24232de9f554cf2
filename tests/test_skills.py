"""Agent Skills through the real command line on the scripted model: found in the workspace's
.agents/skills and .claude/skills and in $TINYHARNESS_HOME/skills, listed in the system prompt
within a budget (bodies cost nothing until read), read on demand by the file tools (the user's
as a read-only /skills/...), confined like every path, and read back after a compaction while
the conversation still names them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.agent import Agent
from tinyharness.anchors import Anchors
from tinyharness.cli import _Structure, _tools, apply_settings, build_parser, main
from tinyharness.conventions import ProjectConventions
from tinyharness.events import EventBus
from tinyharness.models.scripted import ScriptedModel
from tinyharness.skills import home_mounts, parse_skill
from tinyharness.skills.loader import SkillError
from tinyharness.tools.base import ToolError
from tinyharness.tools.files import file_tools
from tinyharness.tools.workspace import Workspace

BODY = "To fill a PDF form: run scripts/fill.py with the field names from forms.md."


def skill(root: Path, name: str, description: str, body: str = BODY) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8"
    )
    return folder


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
    argv = ["run", "--workspace", str(workspace), "--no-log", "--model", f"scripted:{path}", "--quiet"]
    assert main([*argv, "--trace", "--events", str(events), *options, "Do the task."]) == 0
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def agent_requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["request"] for e in events if e["type"] == "model_call" and e["purpose"] == "agent"]


def result_of(request: dict[str, Any], call_id: str) -> str:
    for message in request["messages"]:
        for block in message["content"]:
            if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                return str(block["content"])
    raise AssertionError(f"no result for {call_id}")


@pytest.fixture
def home() -> Path:
    path = Path(os.environ["TINYHARNESS_HOME"])
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    skill(root / ".agents" / "skills", "release-notes", "Write release notes from the git log.")
    skill(root / ".claude" / "skills", "sql-review", "Review SQL migrations for locks and data loss.")
    pdf = skill(home / "skills", "pdf-forms", "Fill PDF forms; use when a task mentions a PDF form.")
    (pdf / "forms.md").write_text("Fields: name, date, signature\n", encoding="utf-8")
    return root


def test_skills_list_shows_every_root_and_what_was_skipped(
    workspace: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skill(workspace / ".claude" / "skills", "release-notes", "A second skill with a taken name.")
    broken = workspace / ".agents" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter here\n", encoding="utf-8")
    assert main(["skills", "list", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert (
        "release-notes  Write release notes from the git log.  [.agents/skills/release-notes/SKILL.md]" in out
    )
    assert "sql-review" in out and "[/skills/pdf-forms/SKILL.md]" in out
    assert "skipped .agents/skills/broken/SKILL.md: no front matter" in out
    assert "skipped .claude/skills/release-notes/SKILL.md: skill 'release-notes' is also in" in out


def test_descriptions_go_in_the_system_prompt_and_bodies_are_read_on_demand(
    tmp_path: Path, workspace: Path
) -> None:
    script = [
        call("r1", "read_file", {"path": "/skills/pdf-forms/SKILL.md"}),
        call("r2", "read_file", {"path": "/skills/pdf-forms/forms.md"}),
        call("r3", "list_dir", {"path": "/skills/pdf-forms"}),
        call("r4", "grep", {"pattern": "signature", "path": "/skills"}),
        call("r5", "read_file", {"path": ".agents/skills/release-notes/SKILL.md"}),
        say("filled"),
    ]
    events = run(tmp_path, workspace, script)
    start = events[0]
    assert [s["name"] for s in start["skills"]] == ["release-notes", "sql-review", "pdf-forms"]
    first, last = agent_requests(events)[0], agent_requests(events)[-1]
    system = first["system"]
    assert (
        "- pdf-forms: Fill PDF forms; use when a task mentions a PDF form. (read /skills/pdf-forms/SKILL.md)"
        in system
    )
    assert "Review SQL migrations" in system and BODY not in system
    assert not any(BODY in json.dumps(m) for m in first["messages"])  # nothing until it is read
    assert BODY in result_of(last, "r1") and "/skills/pdf-forms/SKILL.md (lines 1-" in result_of(last, "r1")
    assert "Fields: name, date, signature" in result_of(last, "r2")
    assert "/skills/pdf-forms/ (2 entries)" in result_of(last, "r3")
    assert "/skills/pdf-forms/forms.md:1: Fields: name, date, signature" in result_of(last, "r4")
    assert BODY in result_of(last, "r5")
    assert all(r["system"] == system for r in agent_requests(events))  # stable prefix


def test_the_users_skills_are_read_only_and_confined(tmp_path: Path, workspace: Path, home: Path) -> None:
    (home / "config.json").write_text('{"secret": "x"}', encoding="utf-8")
    (home / "skills" / "pdf-forms" / "leak.md").symlink_to(home / "config.json")
    script = [
        call("w1", "write_file", {"path": "/skills/pdf-forms/SKILL.md", "content": "hijacked"}),
        call("r1", "read_file", {"path": "/skills/../config.json"}),
        call("r2", "read_file", {"path": "/skills/pdf-forms/leak.md"}),
        call("r3", "read_file", {"path": "/skills/%2e%2e/config.json"}),
        say("no"),
    ]
    last = agent_requests(run(tmp_path, workspace, script, "--allow-write"))[-1]
    assert "/skills is read-only" in result_of(last, "w1")
    assert "'..' segments are not allowed" in result_of(last, "r1")
    assert "leads outside the workspace" in result_of(last, "r2")
    assert "'..' segments are not allowed" in result_of(last, "r3")
    assert (home / "skills" / "pdf-forms" / "SKILL.md").read_text(encoding="utf-8").endswith(BODY + "\n")


def test_past_the_budget_skills_are_listed_by_name_only(tmp_path: Path, workspace: Path) -> None:
    for n in range(20):
        skill(
            workspace / ".agents" / "skills",
            f"extra-{n:02d}",
            f"Skill number {n} does one particular job well. " * 3,
        )
    system = agent_requests(run(tmp_path, workspace, [say("ok")], "--context-window", "8000"))[0]["system"]
    listed, more = system.split("More skills")
    assert "- extra-00: Skill number 0 does one particular job well." in listed
    assert "extra-19 (.agents/skills/extra-19/SKILL.md)" in more and "does one particular job" not in more
    assert "pdf-forms (/skills/pdf-forms/SKILL.md)" in more


def test_front_matter_is_read_safely() -> None:
    assert parse_skill("---\nname: a-b\ndescription: >\n  Two\n  lines.\n---\nbody") == ("a-b", "Two lines.")
    with pytest.raises(SkillError):  # a Python tag is never constructed: the skill is refused
        parse_skill("---\nname: !!python/object/apply:os.system ['true']\ndescription: x\n---\n")
    with pytest.raises(SkillError, match="not valid YAML"):
        parse_skill("---\nname: [unclosed\n---\n")
    plain = "---\nname: pdf\ndescription: Fill forms: any PDF, any field.\n---\n"
    assert parse_skill(plain) == ("pdf", "Fill forms: any PDF, any field.")  # YAML refuses the ': '
    with pytest.raises(SkillError, match="lowercase"):
        parse_skill("---\nname: Bad Name\ndescription: x\n---\n")
    with pytest.raises(SkillError, match="description is missing"):
        parse_skill("---\nname: ok\n---\n")
    with pytest.raises(SkillError, match="no closing"):
        parse_skill("---\nname: ok\n")


def test_a_skill_in_use_is_read_back_after_a_compaction_and_dropped_when_done(
    tmp_path: Path, workspace: Path
) -> None:
    for n in range(6):
        (workspace / f"f{n}.txt").write_text(f"data {n}\n" * 30, encoding="utf-8")
    script = [
        call("s1", "read_file", {"path": "/skills/pdf-forms/SKILL.md"}),
        call("a1", "read_file", {"path": "f0.txt"}),
        call("a2", "read_file", {"path": "f1.txt"}, input_tokens=3000),
        say("1. Intent: fill the form with the pdf-forms skill", "compact"),
        call("b1", "read_file", {"path": "f2.txt"}),
        call("b2", "read_file", {"path": "f3.txt"}),
        call("b3", "read_file", {"path": "f4.txt"}, input_tokens=3000),
        say("1. Intent: the form is filled; now checking data files", "compact"),
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
    events = run(tmp_path, workspace, script, *options, "--no-plan")
    assert len([e for e in events if e["type"] == "compaction"]) == 2
    heads = [json.dumps(r["messages"][0]) for r in agent_requests(events)]
    after_first = heads[3]  # the request right after the first compaction
    assert "[context: skills in use]" in after_first and BODY in after_first
    assert BODY not in heads[-1]  # the second summary no longer names the skill: not read back


def test_json_tool_mode_offers_the_skill_files_among_read_file_paths(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    args = build_parser().parse_args(["run", "--workspace", str(workspace), "task"])  # local: json mode
    apply_settings(args)
    events = EventBus()
    tools = _tools(args, workspace, events, 20_000, _Structure(args, workspace, "s"))
    agent = Agent(ScriptedModel({"responses": []}), tools, anchors=Anchors())
    ProjectConventions.load(workspace).attach(agent, events, "s", print)
    reader = agent.tools.get("read_file")
    assert reader is not None and reader.choices is not None
    offered = reader.choices([])["path"]
    assert "a.txt" in offered and "/skills/pdf-forms/SKILL.md" in offered
    assert ".agents/skills/release-notes/SKILL.md" in offered


SEGMENTS = [
    "..",
    ".",
    "%2e%2e",
    "%252e%252e",
    "pdf-forms",
    "SKILL.md",
    "leak.md",
    "..%2f",
    "\uff0e\uff0e",
    "",
    "~",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5), slash=st.sampled_from(["/", "\\"]))
def test_no_spelling_under_skills_reads_outside_the_skills_folder(
    workspace: Path, home: Path, parts: list[str], slash: str
) -> None:
    secret = "TOP-SECRET-CONFIG-VALUE"
    (home / "config.json").write_text(secret, encoding="utf-8")
    link = home / "skills" / "pdf-forms" / "leak.md"
    if not link.is_symlink():
        link.symlink_to(home / "config.json")
    space = Workspace(workspace, read_only=home_mounts())
    tools = {tool.name: tool for tool in file_tools(space)}
    path = "/skills" + slash + slash.join(parts)
    for name, args in (("read_file", {"path": path}), ("grep", {"pattern": "SECRET", "path": path})):
        try:
            output = str(tools[name].function(**args))
        except ToolError:
            continue
        assert secret not in output, (name, path)
