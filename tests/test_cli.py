"""The command line end to end on the scripted model: event stream, exit codes, files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tinyharness.cli import _context, _tools, apply_settings, build_parser, main
from tinyharness.context.manager import ContextManager
from tinyharness.events import EventBus
from tinyharness.models.scripted import ScriptedModel


def write_script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return str(path)


def tool_turn(*uses: tuple[str, str, Any]) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses],
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def answer(text: str) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 200, "output_tokens": 10},
    }


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the default run log and memory store out of the user's real data folder."""
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# demo\nA tiny demo project.\n", encoding="utf-8")
    return root


def test_misbehaving_model_run_ends_normally_with_an_error_result_for_each(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "script.json",
        [
            tool_turn(
                ("t1", "launch_rockets", {}),
                ("t2", "read_file", '{"path": "README.md"'),
                ("t3", "calculator", {"expression": "1/0"}),
                ("t4", "read_file", {"path": "../../etc/passwd"}),
            ),
            tool_turn(("t5", "read_file", {"path": "README.md"})),
            answer("A tiny demo project."),
        ],
    )
    events_path = tmp_path / "events.jsonl"
    code = main(
        [
            "run",
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(workspace),
            "--events",
            str(events_path),
            "--quiet",
            "what is this project?",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.strip() == "A tiny demo project."
    events = read_events(events_path)
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert [results[i]["ok"] for i in ("t1", "t2", "t3", "t4", "t5")] == [False] * 4 + [True]
    assert next(e["type"] for e in events) == "run_start" and events[-1]["type"] == "run_end"
    assert events[-1]["stop"] == "end_turn" and events[-1]["model_calls"] == 3
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for event in events:
        assert {"type", "seq", "ts", "run_id"} <= event.keys()
    calls = [e for e in events if e["type"] == "model_call"]
    assert [c["call"] for c in calls] == [1, 2, 3] and all(c["purpose"] == "agent" for c in calls)


def test_trace_writes_the_exact_request(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [answer("hi")])
    events_path = tmp_path / "e.jsonl"
    main(
        [
            "run",
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(workspace),
            "--quiet",
            "--trace",
            "--events",
            str(events_path),
            "hello",
        ]
    )
    call = next(e for e in read_events(events_path) if e["type"] == "model_call")
    assert call["request"]["messages"][-1]["content"][0]["text"] == "hello"


def test_write_needs_permission_and_notes_do_not(tmp_path: Path, workspace: Path) -> None:
    responses = [
        tool_turn(("w", "write_file", {"path": "out.txt", "content": "x"})),
        tool_turn(("n", "note", {"text": "README says: tiny demo"})),
        answer("done"),
    ]
    events_path = tmp_path / "e.jsonl"
    script = write_script(tmp_path / "s.json", responses)
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(workspace), "--quiet"]
    assert main([*argv, "--events", str(events_path), "write it"]) == 0
    assert not (workspace / "out.txt").exists()
    assert (workspace / "NOTES.md").read_text(encoding="utf-8") == "README says: tiny demo\n"
    events = read_events(events_path)
    assert next(e for e in events if e["type"] == "tool_result" and e["call_id"] == "w")["ok"] is False
    assert [e["op"] for e in events if e["type"] == "notes_write"] == ["append"]

    script = write_script(tmp_path / "s2.json", responses)
    argv[2] = f"scripted:{script}"
    assert main([*argv, "--allow-write", "write it"]) == 0
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "x"


def test_limits_exit_1_and_still_answer(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = [tool_turn((f"c{i}", "list_dir", {"path": f"d{i}"})) for i in range(2)]
    script = write_script(tmp_path / "s.json", [*loop, answer("partial answer")])
    code = main(
        [
            "run",
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(workspace),
            "--quiet",
            "--max-iterations",
            "2",
            "loop",
        ]
    )
    out = capsys.readouterr()
    assert code == 1
    assert out.out.strip() == "partial answer"
    assert "max_iterations" in out.err and len(out.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--model", "martian:x", "task"], "model"),
        (["run", "--model", "scripted:/nonexistent/script.json", "task"], "not found"),
        (["run", "--workspace", "/nonexistent/folder", "--model", "scripted:x", "task"], "workspace"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_bad_option_value_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--compact-ratio", "7", "task"])
    assert exit_info.value.code == 2
    assert "compact-ratio" in capsys.readouterr().err


def test_leftover_script_responses_exit_1(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "s.json", [answer("one"), answer("two")])
    code = main(["run", "--model", f"scripted:{script}", "--workspace", str(workspace), "--quiet", "x"])
    assert code == 1
    assert "left unused" in capsys.readouterr().err


def test_help_lists_every_contract_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--model", "--workspace", "--events", "--trace", "--context-window", "--compact-ratio",
        "--compact-buffer", "--keep-recent", "--accounting", "--counter", "--strategy", "--notes",
        "--max-iterations", "--session", "--resume", "--allow-write", "--tool-mode", "--no-memory",
    ):  # fmt: skip
        assert option in text, option


def test_a_session_continues_the_conversation_across_runs(tmp_path: Path, workspace: Path) -> None:
    log = str(tmp_path / "runs.db")
    first = write_script(tmp_path / "one.json", [answer("My name is noted.")])
    second = write_script(tmp_path / "two.json", [answer("You are Ada.")])
    base = ["run", "--workspace", str(workspace), "--log", log, "--session", "s1", "--quiet", "--trace"]
    assert main([*base, "--model", f"scripted:{first}", "I am Ada."]) == 0
    events_path = tmp_path / "e.jsonl"
    assert main([*base, "--model", f"scripted:{second}", "--events", str(events_path), "Who am I?"]) == 0
    request = next(e for e in read_events(events_path) if e["type"] == "model_call")["request"]
    texts = [block["text"] for m in request["messages"] for block in m["content"] if block["type"] == "text"]
    assert texts == ["I am Ada.", "My name is noted.", "Who am I?"]


def test_resume_continues_an_interrupted_run_without_repeating_tools(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(tmp_path / "runs.db")
    note = tool_turn(("n1", "note", {"text": "step one done"}))
    broken = write_script(tmp_path / "one.json", [note])  # the model "dies" after one turn
    base = ["run", "--workspace", str(workspace), "--log", log, "--session", "job", "--quiet"]
    assert main([*base, "--model", f"scripted:{broken}", "two steps"]) == 1
    assert main([*base, "--model", f"scripted:{broken}", "another task"]) == 2
    assert "--resume" in capsys.readouterr().err

    rest = write_script(tmp_path / "two.json", [answer("both steps done")])
    events_path = tmp_path / "e.jsonl"
    code = main([*base, "--model", f"scripted:{rest}", "--resume", "--events", str(events_path)])
    assert code == 0 and capsys.readouterr().out.strip() == "both steps done"
    assert (workspace / "NOTES.md").read_text(encoding="utf-8") == "step one done\n"  # not noted twice
    assert not [e for e in read_events(events_path) if e["type"] == "tool_call"]
    assert main([*base, "--model", f"scripted:{rest}", "--resume"]) == 2  # nothing left to resume


def test_memories_of_one_run_are_recalled_in_a_later_session(tmp_path: Path, workspace: Path) -> None:
    store = str(tmp_path / "memory.db")
    fact = {"facts": [{"text": "The user prefers tabs over spaces for indentation", "kind": "preference"}]}
    first = write_script(
        tmp_path / "one.json",
        [
            {**answer("Noted: tabs."), "purpose": "agent"},
            {**answer(json.dumps(fact)), "purpose": "memory"},
        ],
    )
    base = ["run", "--workspace", str(workspace), "--quiet", "--memory", store]
    events_one = tmp_path / "one.jsonl"
    assert main([*base, "--model", f"scripted:{first}", "--events", str(events_one), "I like tabs."]) == 0
    calls = [e for e in read_events(events_one) if e["type"] == "model_call"]
    assert [c["purpose"] for c in calls] == ["agent", "memory"]
    assert any(e["type"] == "memory_write" for e in read_events(events_one))
    # The run's extraction writes what an import writes: subject, event time, the conversation.
    import time

    from tinyharness.memory import Scope, SQLiteStore

    written = SQLiteStore(store)
    (item,) = written.list_items(Scope())
    written.close()
    assert item.subject and item.subject == item.scope.user
    assert item.event_time is not None and abs(item.event_time - time.time()) < 600
    assert "user asked: I like tabs." in item.context and "assistant answered: Noted: tabs." in item.context

    second = write_script(
        tmp_path / "two.json",
        [{**answer("Use tabs."), "purpose": "agent"}, {**answer('{"facts": []}'), "purpose": "memory"}],
    )
    events_two = tmp_path / "two.jsonl"
    argv = [*base, "--model", f"scripted:{second}", "--trace", "--events", str(events_two)]
    assert main([*argv, "How should I indent the indentation in my code?"]) == 0
    request = next(e for e in read_events(events_two) if e["type"] == "model_call")["request"]
    first_message = " ".join(b["text"] for b in request["messages"][0]["content"])
    assert "prefers tabs over spaces" in first_message
    assert "tabs" not in request["system"]  # recall goes after the stable prefix, not into it


def test_no_memory_makes_no_memory_request(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [answer("done")])
    argv = ["run", "--workspace", str(workspace), "--quiet", "--memory", str(tmp_path / "m.db")]
    assert main([*argv, "--no-memory", "--model", f"scripted:{script}", "task"]) == 0


def test_a_session_step_writes_only_what_changed(tmp_path: Path) -> None:
    from tinyharness.messages import Message
    from tinyharness.session import SessionStore

    store = SessionStore(tmp_path / "s.db")
    written: list[str] = []
    store._db.set_trace_callback(written.append)
    session = store.open("s")

    def inserted() -> int:
        count = sum(s.startswith("INSERT INTO session_messages") for s in written)
        written.clear()
        return count

    history = [Message.user("old task"), Message.assistant("old answer")]
    session.save(history, {})
    assert inserted() == 2
    grown = [*history, Message.user("new task")]
    session.save(grown, {})
    assert inserted() == 1
    session.save([*grown, Message.assistant("reply")], {})
    assert inserted() == 1
    session.save([Message.user("summary")], {})  # compaction replaced the window
    assert inserted() == 1
    loaded = store.open("s").load()
    assert loaded is not None and loaded.messages == [Message.user("summary")]
    store.close()


def test_a_memory_written_by_one_process_is_recalled_by_another(tmp_path: Path, workspace: Path) -> None:
    import os
    import subprocess
    import sys

    store = str(tmp_path / "shared-memory.db")
    fact = {"facts": [{"text": "The deploy target is the staging cluster", "kind": "fact"}]}
    script = write_script(
        tmp_path / "one.json",
        [{**answer("Noted."), "purpose": "agent"}, {**answer(json.dumps(fact)), "purpose": "memory"}],
    )
    argv = [sys.executable, "-m", "tinyharness", "run", "--model", f"scripted:{script}"]
    argv += ["--workspace", str(workspace), "--quiet", "--memory", store, "We deploy to staging."]
    env = {**os.environ, "TINYHARNESS_MEMORY": "off"}  # --memory on the command line wins
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr

    second = write_script(
        tmp_path / "two.json",
        [{**answer("Staging."), "purpose": "agent"}, {**answer('{"facts": []}'), "purpose": "memory"}],
    )
    events = tmp_path / "two.jsonl"
    base = ["run", "--workspace", str(workspace), "--quiet", "--memory", store, "--trace"]
    assert (
        main([*base, "--model", f"scripted:{second}", "--events", str(events), "Where is the deploy target?"])
        == 0
    )
    request = next(e for e in read_events(events) if e["type"] == "model_call")["request"]
    assert "staging cluster" in request["messages"][0]["content"][0]["text"]


def test_the_packaged_local_model_runs_without_memory_unless_a_store_is_named(tmp_path: Path) -> None:
    from tinyharness.cli import _memory, apply_settings, build_parser
    from tinyharness.events import EventBus

    args = build_parser().parse_args(["run", "--memory-user", "u", "task"])
    apply_settings(args)  # no --model, no $TINYHARNESS_MODEL, no config file: local
    args.memory = None  # no store named (the test environment sets TINYHARNESS_MEMORY=off)
    assert args.model == "local" and _memory(args, EventBus(), "s") is None
    args.memory = str(tmp_path / "m.db")
    named = _memory(args, EventBus(), "s")
    assert named is not None and named.scope.user == "u"
    named.manager.store.close()
    args.memory, args.model = None, "openai:gpt-4o-mini"
    other = _memory(args, EventBus(), "s")  # any other model: the default store
    assert other is not None
    other.manager.store.close()


def test_the_notes_flush_is_on_for_local_models_unless_turned_off(tmp_path: Path) -> None:
    def flush_of(*options: str) -> object:
        args = build_parser().parse_args(["run", *options, "task"])
        apply_settings(args)
        events = EventBus()
        tools = _tools(args, tmp_path, events, 20_000)
        context = _context(args, ScriptedModel({"responses": []}), events, tmp_path, tools)
        assert isinstance(context, ContextManager)
        return context.flush

    assert flush_of() is not None  # --model local is the default
    assert flush_of("--no-flush-notes") is None
    assert flush_of("--model", "openai:gpt-4o-mini") is None
    assert flush_of("--model", "openai:gpt-4o-mini", "--flush-notes") is not None
