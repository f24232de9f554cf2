"""MCP servers' tools in the agent, against real servers: the npm reference servers
(filesystem and everything, over stdio and Streamable HTTP) and a small server written with the
SDK (tests/mcp_servers/small_server.py) for a crash, a hang, a 10 MB result and a server that
never starts. Runs go through the real CLI with a scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, tool_turn, write_script
from mcp_support import (
    EVERYTHING,
    FILESYSTEM,
    free_port,
    needs_node_servers,
    pids_in,
    processes_with,
    small_server,
    wait_for_port,
    wait_gone,
    write_config,
)
from tinyharness.agent import Agent
from tinyharness.cli import main
from tinyharness.mcp.client import McpServers
from tinyharness.mcp.config import load_config
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def tool_results(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool result the model was sent, by call id (from the ``--trace`` requests)."""
    results: dict[str, dict[str, Any]] = {}
    for event in events:
        for message in event.get("request", {}).get("messages", []):
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
    return results


def run(
    tmp_path: Path, config: str, responses: list[dict[str, Any]], *extra: str
) -> tuple[int, list[dict[str, Any]]]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    script = write_script(tmp_path / f"script{len(list(tmp_path.glob('script*')))}.json", responses)
    events = tmp_path / "events.jsonl"
    events.unlink(missing_ok=True)
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(workspace), "--mcp", config]
    argv += [
        "--events",
        str(events),
        "--trace",
        "--log",
        str(tmp_path / "runs.db"),
        "--quiet",
        *extra,
        "task",
    ]
    return main(argv), read_events(events)


@needs_node_servers
def test_a_run_lists_and_calls_tools_of_both_reference_servers(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello from a file\n", encoding="utf-8")
    config = write_config(
        tmp_path / "servers.json",
        {
            # The user trusts what reads: a server's own readOnlyHint counts for nothing.
            "fs": {
                "command": str(FILESYSTEM),
                "args": [str(workspace)],
                "trust": {"readOnlyTools": ["read_text_file"]},
            },
            "everything": {"command": str(EVERYTHING), "args": ["stdio"], "trust": {"readOnly": True}},
        },
    )
    target = str(workspace / "new.txt")
    responses = [
        tool_turn(
            ("t1", "mcp__fs__read_text_file", {"path": str(workspace / "hello.txt")}),
            ("t2", "mcp__everything__echo", {"message": "ping"}),
            ("t3", "mcp__everything__get-tiny-image", {}),
            ("t4", "mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ),
        tool_turn(("w1", "mcp__fs__write_file", {"path": target, "content": "written"})),
        answer("done"),
    ]
    code, events = run(tmp_path, config, responses)
    assert code == 0
    start = next(e for e in events if e["type"] == "run_start")
    assert {"mcp__fs__read_text_file", "mcp__fs__write_file", "mcp__everything__echo"} <= set(start["tools"])
    assert "read_file" in start["tools"]  # the built-in tools are still there
    started = {e["server"]: e for e in events if e["type"] == "mcp_server" and e["state"] == "started"}
    assert set(started) == {"fs", "everything"} and started["fs"]["tools"] > 5

    results = tool_results(events)
    assert '<tool_output server="fs" tool="read_text_file">\nhello from a file' in results["t1"]["content"]
    assert "Echo: ping" in results["t2"]["content"]
    image = results["t3"]["content"]
    assert "image (image/png" in image and "not shown" in image and "base64" not in image
    saved = workspace / image.split("saved to ")[1].split("]")[0]
    assert saved.read_bytes().startswith(b"\x89PNG")
    assert "Resource 1" in results["t4"]["content"]
    # write_file is not marked read-only: refused without permission, nothing written
    assert results["w1"]["is_error"] and "permission denied" in results["w1"]["content"]
    assert "--allow 'mcp__fs__write_file'" in results["w1"]["content"]
    assert not Path(target).exists()

    calls = {e["call_id"]: e for e in events if e["type"] == "tool_call"}
    assert calls["t1"]["server"] == "fs" and calls["t2"]["server"] == "everything"
    with sqlite3.connect(tmp_path / "runs.db") as db:
        logged = [json.loads(b) for (b,) in db.execute("SELECT body FROM events WHERE type = 'tool_result'")]
    assert {(e["call_id"], e["server"]) for e in logged} >= {("t1", "fs"), ("t2", "everything")}

    # With an allow rule the same call runs; a deny rule wins over it.
    code, events = run(tmp_path, config, responses[1:], "--allow", "mcp__fs__*")
    assert code == 0 and Path(target).read_text(encoding="utf-8") == "written"
    Path(target).unlink()
    code, events = run(tmp_path, config, responses[1:], "--allow", "mcp__fs__*", "--deny", "mcp__fs__write_*")
    assert "deny rule" in tool_results(events)["w1"]["content"] and not Path(target).exists()


@needs_node_servers
@pytest.mark.parametrize(
    ("mode", "path", "kind"), [("streamableHttp", "/mcp", "http"), ("sse", "/sse", "sse")]
)
def test_the_everything_server_over_http(tmp_path: Path, mode: str, path: str, kind: str) -> None:
    port = free_port()
    server = subprocess.Popen(
        [str(EVERYTHING), mode],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        config = write_config(
            tmp_path / "http.json",
            {
                "remote": {
                    "type": kind,
                    "url": f"http://127.0.0.1:{port}{path}",
                    "headers": {"X-Test": "1"},
                    "trust": {"readOnly": True},
                }
            },
        )
        responses = [tool_turn(("s1", "mcp__remote__get-sum", {"a": 2, "b": 40})), answer("42")]
        code, events = run(tmp_path, config, responses)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert code == 0
    assert "42" in tool_results(events)["s1"]["content"]
    assert any(e["type"] == "mcp_server" and e["transport"] == kind for e in events)


def test_a_server_killed_mid_call_gives_an_error_is_restarted_once_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    config = write_config(
        tmp_path / "c.json", {"small": {**small_server("--pid-file", str(pid_file)), "timeout": 3}}
    )
    responses = [
        tool_turn(("c1", "mcp__small__crash", {})),
        tool_turn(("e1", "mcp__small__echo", {"text": "after the crash"})),
        tool_turn(("h1", "mcp__small__hang", {"seconds": 60})),  # the second fault: down for good
        tool_turn(("e2", "mcp__small__echo", {"text": "again"})),
        answer("done"),
    ]
    code, events = run(tmp_path, config, responses)
    assert code == 0
    results = tool_results(events)
    crash = results["c1"]
    assert crash["is_error"] and "failed during this call" in crash["content"]
    assert "not retried" in crash["content"] and "restarted" in crash["content"]
    assert "echo: after the crash" in results["e1"]["content"] and not results["e1"].get("is_error")
    assert results["h1"]["is_error"] and "no answer within 3 s" in results["h1"]["content"]
    assert results["e2"]["is_error"] and "is down" in results["e2"]["content"]
    states = [e["state"] for e in events if e["type"] == "mcp_server"]
    assert states == ["started", "failed", "started", "restarted", "failed", "down"]
    failed = next(e for e in events if e["type"] == "mcp_server" and e["state"] == "failed")
    assert "killing myself on purpose" in failed["stderr"]
    end = next(e for e in events if e["type"] == "run_end")
    assert end["stop"] == "end_turn"
    pids = pids_in(pid_file)
    assert len(pids) == 2 and wait_gone(pids) == []  # both processes are gone, the hung one too


def test_a_hung_server_is_restarted_and_answers_the_next_call(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"small": small_server()})
    responses = [
        tool_turn(("h1", "mcp__small__hang", {"seconds": 60})),
        tool_turn(("n1", "mcp__small__counter", {})),
        answer("done"),
    ]
    code, events = run(tmp_path, config, responses, "--mcp-timeout", "2", "--allow", "mcp__small__counter")
    assert code == 0
    results = tool_results(events)
    assert results["h1"]["is_error"] and "no answer within 2 s" in results["h1"]["content"]
    assert "call 1 in process" in results["n1"]["content"]  # a fresh process
    # The restart finished inside the same call: the registry's own limit leaves room for it.
    states = [e["state"] for e in events if e["type"] == "mcp_server"]
    assert states == ["started", "failed", "started", "restarted"]


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            small_server("--fail-start"),
            "its stderr ends: small server: loading settings | small server: error:",
        ),
        ({"command": "no-such-mcp-server-command"}, "command not found: no-such-mcp-server-command"),
        ({"command": "sleep", "args": ["987654.5"], "startTimeout": 2}, "no answer within 2 s"),
        ({"url": f"http://127.0.0.1:{free_port()}/mcp"}, "ConnectError"),
    ],
)
def test_a_server_that_does_not_start_exits_2_with_its_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: dict[str, Any], expected: str
) -> None:
    config = write_config(tmp_path / "c.json", {"broken": server})
    script = write_script(tmp_path / "s.json", [answer("never asked")])
    argv = ["run", "--model", f"scripted:{script}", "--mcp", config, "--no-log", "--quiet", "task"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tinyharness: MCP server 'broken'") and "did not start" in err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert processes_with("987654.5") == []


def test_a_10_mb_result_is_capped_and_kept_whole_in_a_file(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"small": small_server()})
    responses = [tool_turn(("b1", "mcp__small__big", {"chars": 10_000_000})), answer("done")]
    code, events = run(tmp_path, config, responses)
    assert code == 0
    result = next(e for e in events if e["type"] == "tool_result" and e["call_id"] == "b1")
    assert result["ok"] and result["truncated"] and result["chars"] < 25_000
    content = tool_results(events)["b1"]["content"]
    assert content.startswith(
        "[MCP result of 10,000,000 characters, cut to fit; the whole result is saved in "
    )
    whole = tmp_path / "ws" / content.split("saved in ")[1].split("]")[0]
    text = whole.read_text(encoding="utf-8")
    assert len(text) == 10_000_000 and text.endswith("END")


def test_servers_are_stopped_when_the_run_crashes(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"

    class Broken(ScriptedModel):
        async def complete(self, request: Any) -> Any:
            if self.requests:
                raise RuntimeError("a bug in the model adapter")
            return await super().complete(request)

    async def crash() -> None:
        configs = load_config(
            [write_config(tmp_path / "c.json", {"small": small_server("--pid-file", str(pid_file))})]
        )
        async with McpServers(configs) as servers:
            model = Broken(
                {"responses": [tool_turn(("e", "mcp__small__echo", {"text": "x"})), answer("never")]}
            )
            await Agent(model, ToolRegistry(servers.tools)).arun("task")

    with pytest.raises(RuntimeError, match="a bug in the model adapter"):
        asyncio.run(crash())
    pids = pids_in(pid_file)
    assert len(pids) == 1 and wait_gone(pids, timeout=1) == []


def test_ctrl_c_stops_the_servers(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "c.json", {"small": small_server("--pid-file", str(pid_file))})
    # One response only: a script with responses left over at the end is an error of its own.
    script = write_script(tmp_path / "s.json", [tool_turn(("h", "mcp__small__hang", {"seconds": 300}))])
    events = tmp_path / "events.jsonl"
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(tmp_path), "--mcp", config]
    argv += ["--events", str(events), "--no-log", "--quiet", "--mcp-timeout", "600", "task"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyharness", *argv], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        _wait_until(lambda: events.exists() and '"tool_call"' in events.read_text(encoding="utf-8"), process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1 and "interrupted" in err and "Traceback" not in err
    pids = pids_in(pid_file)
    assert len(pids) == 1 and wait_gone(pids, timeout=1) == []


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's"
)
def test_a_run_killed_with_sigkill_leaves_no_server_even_a_hung_one(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    server = small_server("--pid-file", str(pid_file))
    config = write_config(tmp_path / "c.json", {"idle": server, "busy": server})
    script = write_script(tmp_path / "s.json", [tool_turn(("h", "mcp__busy__hang", {"seconds": 300}))])
    events = tmp_path / "events.jsonl"
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(tmp_path), "--mcp", config]
    argv += ["--events", str(events), "--no-log", "--quiet", "--mcp-timeout", "600", "task"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyharness", *argv], stderr=subprocess.DEVNULL, cwd=tmp_path
    )
    try:
        _wait_until(lambda: events.exists() and '"tool_call"' in events.read_text(encoding="utf-8"), process)
        process.kill()  # no clean-up at all: the busy server is asleep and never reads its stdin
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    pids = pids_in(pid_file)
    assert len(pids) == 2 and wait_gone(pids, timeout=10) == []


def test_ctrl_c_while_a_server_starts_stops_it(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"slow": {"command": "sleep", "args": ["876543.5"]}})
    script = write_script(tmp_path / "s.json", [answer("never asked")])
    argv = ["run", "--model", f"scripted:{script}", "--mcp", config, "--no-log", "--quiet", "task"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyharness", *argv], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        _wait_until(lambda: processes_with("876543.5") != [], process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1 and "interrupted" in err and "Traceback" not in err
    assert processes_with("876543.5") == []


def _wait_until(condition: Any, process: subprocess.Popen[Any], timeout: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting (exit code {process.poll()})")
        time.sleep(0.1)


def test_an_mcp_call_cut_off_by_a_kill_is_not_repeated_on_resume(tmp_path: Path) -> None:
    """The run is SIGKILLed while the server works on a call; --resume answers that call
    "outcome unknown" and never sends it to the (new) server again."""
    calls_file = tmp_path / "calls"
    config = write_config(tmp_path / "c.json", {"small": small_server("--calls-file", str(calls_file))})
    first = write_script(tmp_path / "first.json", [tool_turn(("h", "mcp__small__hang", {"seconds": 300}))])
    events = tmp_path / "events.jsonl"
    common = ["--workspace", str(tmp_path), "--mcp", config, "--log", str(tmp_path / "runs.db"), "--quiet"]
    argv = ["run", "--model", f"scripted:{first}", *common, "--session", "s", "--events", str(events), "task"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyharness", *argv], stderr=subprocess.DEVNULL, cwd=tmp_path
    )
    try:
        _wait_until(lambda: calls_file.exists() and calls_file.read_text() == "hang\n", process)
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    second = write_script(tmp_path / "second.json", [answer("done")])
    events.unlink()
    resumed = ["run", "--model", f"scripted:{second}", *common, "--session", "s", "--resume"]
    assert main([*resumed, "--events", str(events), "--trace"]) == 0
    result = tool_results(read_events(events))["h"]
    assert result["content"].startswith("Outcome unknown") and result["is_error"]
    assert calls_file.read_text() == "hang\n"  # asked once, by the killed run only


@needs_node_servers
def test_the_bench_row_measures_all_four_calls() -> None:
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from bench import mcp_overhead

    result = mcp_overhead.run(calls=10)
    assert result is not None and [len(row.times) for row in result.rows] == [10, 10, 10, 10]
    table = mcp_overhead.to_markdown(result)
    assert "MCP tool, stdio" in table and "Streamable HTTP" in table and "bare SDK call" in table
    assert set(result.start_seconds) == {"stdio", "http"}


def test_mcp_tools_lists_the_names_the_model_sees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "c.json", {"small": small_server()})
    assert main(["mcp", "tools", "--mcp", config]) == 0
    out = capsys.readouterr().out
    assert "mcp__small__echo\n" in out and "mcp__small__counter  (not read-only: needs permission)" in out
