"""The bad-input corpus through the full path (CLI or Agent + registry + builtin tools): every
case is its own test and must end in a clear error result or message, with the run going on
and nothing outside the workspace touched or overwritten. Unit-level cases live in
test_workspace.py, test_file_tools.py and test_calculator.py; these add the end-to-end path.
"""

from __future__ import annotations

import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, read_events, tool_turn, write_script
from tinyharness.agent import Agent
from tinyharness.cli import main
from tinyharness.events import EventBus, JsonlSink, ListSink
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry, function_tool
from tinyharness.tools.builtin import builtin_tools

HUGE = 100 * 1024 * 1024


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "README.md").write_text("# demo\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside\n", encoding="utf-8")
    return tmp_path


def cli_run(tmp: Path, responses: list[dict[str, Any]], *extra: str) -> tuple[int, list[dict[str, Any]]]:
    """One CLI run on a script; the exit code and the event stream."""
    script = write_script(tmp / "script.json", [*responses, answer("done", None)])
    events = tmp / "events.jsonl"
    events.unlink(missing_ok=True)
    args = ["run", "--model", f"scripted:{script}", "--workspace", str(tmp / "ws"), "--events", str(events)]
    code = main([*args, "--log", str(tmp / "runs.db"), "--quiet", "--allow-write", *extra, "task"])
    return code, read_events(events)


def results(events: list[dict[str, Any]]) -> dict[str, bool]:
    return {e["call_id"]: e["ok"] for e in events if e["type"] == "tool_result"}


def outside_untouched(tmp: Path) -> None:
    assert sorted(p.name for p in (tmp / "outside").iterdir()) == ["secret.txt"]
    assert (tmp / "outside" / "secret.txt").read_text(encoding="utf-8") == "outside\n"
    assert sorted(p.name for p in tmp.iterdir()) == sorted(
        (
            {"ws", "outside", "home", "script.json", "events.jsonl"}
            | {p.name for p in tmp.iterdir() if p.name.startswith(("runs.db", "runs.sessions.db"))}
        )
        & {p.name for p in tmp.iterdir()}
    )


# --- path escapes -------------------------------------------------------------------------------

ESCAPES = {
    "dotdot": "../outside/secret.txt",
    "dotdot_deep": "a/b/../../../outside/secret.txt",
    "absolute": "/etc/passwd",
    "absolute_tmp": "{tmp}/outside/secret.txt",
    "percent": "%2e%2e%2foutside%2fsecret.txt",
    "double_percent": "%252e%252e%252foutside%252fsecret.txt",
    "backslash": "..\\outside\\secret.txt",
    "nul": "README.md\x00../../outside/secret.txt",
    "fullwidth": "\uff0e\uff0e\uff0foutside\uff0fsecret.txt",
    "one_dot_leader": "\u2025/outside/secret.txt",
    "home": "~/.ssh/id_rsa",
    "drive": "C:\\Windows\\win.ini",
    "very_long": "a/" * 3000 + "x.txt",
    "symlink": "link/secret.txt",
}


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_path_escape_through_the_cli(env: Path, case: str, tool: str) -> None:
    (env / "ws" / "link").symlink_to(env / "outside", target_is_directory=True)
    path = ESCAPES[case].replace("{tmp}", str(env))
    args = {"path": path} if tool == "read_file" else {"path": path, "content": "pwned\n"}
    code, events = cli_run(env, [tool_turn(("t1", tool, args), purpose=None)])
    assert code == 0 and results(events) == {"t1": False}
    outside_untouched(env)
    assert events[-1]["type"] == "run_end" and events[-1]["stop"] == "end_turn"


# --- huge and binary outputs --------------------------------------------------------------------


def test_a_100_mb_tool_output_is_capped_and_memory_stays_bounded(tmp_path: Path) -> None:
    def flood() -> str:
        """Return 100 MB of text."""
        return "x" * HUGE

    tools = ToolRegistry([function_tool(flood)], result_cap=5000)
    sink = ListSink()
    jsonl = JsonlSink(tmp_path / "e.jsonl")
    model = ScriptedModel({"responses": [tool_turn(("f1", "flood", {}), purpose=None), answer("ok", None)]})
    tracemalloc.start()
    try:
        result = Agent(model, tools, events=EventBus([sink, jsonl])).run("flood me")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        jsonl.close()
    content = result.messages[2].tool_results[0].content
    assert len(content) < 5100 and "characters omitted" in content
    assert sink.of_type("tool_result")[0]["truncated"] is True
    assert peak < 3 * HUGE  # the output itself and one slice, never copies per sink or message
    assert (tmp_path / "e.jsonl").stat().st_size < 100_000


def test_a_100_mb_file_is_read_in_a_capped_part(env: Path) -> None:
    big = env / "ws" / "big.log"
    with big.open("wb") as handle:  # sparse: 100 MB on paper, almost nothing on disk
        handle.write(b"first line\nsecond line\n" + b"more text\n" * 1000)
        handle.truncate(HUGE)  # then NULs: text as far as the binary sniff looks
    code, events = cli_run(
        env,
        [
            tool_turn(
                ("r1", "read_file", {"path": "big.log", "end_line": 2}),
                ("g1", "grep", {"pattern": "second", "path": "."}),
                ("l1", "list_dir", {"path": "."}),
                purpose=None,
            )
        ],
    )
    assert code == 0 and results(events)["r1"] and results(events)["l1"]
    chars = {e["call_id"]: e["chars"] for e in events if e["type"] == "tool_result"}
    assert max(chars.values()) < 25_000


def test_a_100_mb_line_does_not_load_into_memory(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.write(b"header\n" + b"y" * 9000)
        handle.truncate(HUGE)  # then one NUL-filled line of ~100 MB
    tools = builtin_tools(tmp_path)
    tracemalloc.start()
    try:
        import asyncio

        result = asyncio.run(tools.execute("read_file", {"path": "big.txt"}))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result.content) < 25_000
    assert peak < HUGE // 4, f"peak {peak // 2**20} MB for a capped read"


def test_binary_file_through_the_cli(env: Path) -> None:
    (env / "ws" / "blob.bin").write_bytes(bytes(range(256)) * 100)
    code, events = cli_run(env, [tool_turn(("r1", "read_file", {"path": "blob.bin"}), purpose=None)])
    assert code == 0 and results(events) == {"r1": False}


# --- malformed arguments ------------------------------------------------------------------------


def test_10000_nested_lists_as_raw_arguments(env: Path) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    code, events = cli_run(
        env, [tool_turn(("d1", "read_file", deep), ("d2", "calculator", deep), purpose=None)]
    )
    assert code == 0 and results(events) == {"d1": False, "d2": False}


def test_a_deeply_nested_script_file_is_a_configuration_error(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "deep.json").write_text('{"responses": [' + "[" * 100_000 + "]" * 100_000 + "]}", encoding="utf-8")
    code = main(["run", "--model", f"scripted:{env / 'deep.json'}", "--workspace", str(env / "ws"), "task"])
    assert code == 2 and "not valid JSON" in capsys.readouterr().err


# --- calculator abuse ---------------------------------------------------------------------------

CALCULATOR_ABUSE = {
    "tower": "9**9**9**9",
    "huge_power": "2**100000000",
    "factorial_like": "99999999999**99999999",
    "long_sum": "+".join(["1"] * 50_000),
    "deep_parens": "(" * 5000 + "1" + ")" * 5000,
    "huge_shift": "1 << 10**10",
    "huge_repeat": "'a' * 10**10",
    "dunder": "().__class__.__bases__[0].__subclasses__()",
    "import": "__import__('os').system('touch pwned')",
}


@pytest.mark.parametrize("case", sorted(CALCULATOR_ABUSE))
def test_calculator_abuse_through_the_cli(env: Path, case: str) -> None:
    code, events = cli_run(
        env, [tool_turn(("c1", "calculator", {"expression": CALCULATOR_ABUSE[case]}), purpose=None)]
    )
    assert code == 0 and results(events) == {"c1": False}
    assert not (env / "ws" / "pwned").exists()


# --- tools that hang ----------------------------------------------------------------------------


def test_a_hanging_tool_times_out_and_does_not_hold_the_run(tmp_path: Path) -> None:
    release = threading.Event()
    running = threading.Event()
    finished = threading.Event()

    def hang() -> str:
        """Never answers (until the test lets it)."""
        running.set()
        release.wait(30)
        finished.set()
        return "late"

    tools = ToolRegistry([function_tool(hang)], timeout=0.2)
    model = ScriptedModel({"responses": [tool_turn(("h1", "hang", {}), purpose=None), answer("ok", None)]})
    try:
        result = Agent(model, tools).run("wait for it")
        still_hanging = running.is_set() and not finished.is_set()
    finally:
        release.set()
    assert result.stop == "end_turn" and result.final == "ok"
    assert "timed out after 0.2 s" in result.messages[2].tool_results[0].content
    assert still_hanging  # the run returned while the tool was still stuck


# --- text that is not UTF-8 ---------------------------------------------------------------------


def test_non_utf8_files_are_read_lossily_and_never_rewritten(env: Path) -> None:
    latin = "caf\u00e9 na\u00efve\n".encode("latin-1")
    (env / "ws" / "latin.txt").write_bytes(latin)
    code, events = cli_run(
        env,
        [
            tool_turn(("r1", "read_file", {"path": "latin.txt"}), purpose=None),
            tool_turn(("e1", "edit_file", {"path": "latin.txt", "old": "caf", "new": "tea"}), purpose=None),
        ],
    )
    assert code == 0 and results(events) == {"r1": True, "e1": False}
    assert (env / "ws" / "latin.txt").read_bytes() == latin


def test_lone_surrogates_from_the_model_do_not_break_logs(env: Path) -> None:
    bad = "bad \udcff text"
    code, events = cli_run(
        env,
        [
            tool_turn(
                ("n1", "note", {"text": bad}),
                ("w1", "write_file", {"path": "s.txt", "content": bad}),
                ("r1", "read_file", {"path": bad}),
                purpose=None,
            )
        ],
    )
    assert code == 0 and events[-1]["type"] == "run_end"
    assert set(results(events)) == {"n1", "w1", "r1"}
    (env / "events.jsonl").read_bytes().decode("utf-8")  # valid UTF-8 throughout


# --- corrupt state files ------------------------------------------------------------------------


def test_a_corrupt_run_log_is_refused_and_left_alone(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = b"SQLite format 3\x00" + bytes(range(256)) * 40
    (env / "runs.db").write_bytes(garbage)
    script = write_script(env / "script.json", [answer("done", None)])
    args = ["run", "--model", f"scripted:{script}", "--workspace", str(env / "ws")]
    code = main([*args, "--log", str(env / "runs.db"), "--quiet", "task"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "run log" in err
    assert (env / "runs.db").read_bytes() == garbage


def test_a_binary_notes_file_is_never_overwritten(env: Path) -> None:
    blob = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    (env / "ws" / "NOTES.md").write_bytes(blob)
    code, events = cli_run(
        env,
        [
            tool_turn(("n1", "note", {"text": "remember this"}), purpose=None),
            tool_turn(("u1", "update_notes", {"content": "all new"}), purpose=None),
        ],
    )
    assert code == 0 and results(events) == {"n1": False, "u1": False}
    assert (env / "ws" / "NOTES.md").read_bytes() == blob
    assert main(["notes", "--workspace", str(env / "ws")]) == 0  # still printable


def test_a_script_that_is_not_json_is_a_configuration_error(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "bad.json").write_bytes(b'{"responses": [\xff\xfe')
    code = main(["run", "--model", f"scripted:{env / 'bad.json'}", "--workspace", str(env / "ws"), "task"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not valid JSON" in err
    assert (env / "bad.json").read_bytes() == b'{"responses": [\xff\xfe'
