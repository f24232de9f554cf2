"""Durable runs: how the queue scales with workers, and what recording each step costs.

    python -m bench.durable_bench [--small]

Needs PostgreSQL: the URL of a database the bench may create databases next to, in
TINYHARNESS_BENCH_PG_URL, else TINYHARNESS_TEST_PG_URL (``scripts/pg-test-server.sh`` exports
it). Without one the section says so and measures nothing.

1. Scaling: runs per minute with 1, 2 and 4 ``tinyharness worker`` processes (each up to 4 runs
   at once), on the scripted model with a fixed latency per request (as a model server would
   take): each run is 3 model requests and 2 calculator calls. Timed from the first submit to the
   last run's end, with the workers already started.
2. Overhead per step: the same agent loop in this process, a long run of instant model turns
   each with one calculator call, timed three ways: the plain loop (no log), the plain loop
   logging to the PostgreSQL run log, and the durable loop (each model call and tool call a
   recorded DBOS step, plus the run log). The difference per step is what durability costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import ROOT, markdown_table, progress

URL_ENVS = ("TINYHARNESS_BENCH_PG_URL", "TINYHARNESS_TEST_PG_URL")
LATENCY = 1.0  # seconds the scripted model takes per request
CONCURRENCY = 4


def server_url() -> str | None:
    for name in URL_ENVS:
        if os.environ.get(name):
            return os.environ[name]
    return None


@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[str]:
    import psycopg

    name = f"th_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{server.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _turns(count: int) -> list[dict[str, Any]]:
    tool = {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "c", "name": "calculator", "input": {"expression": "6*7"}}],
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }
    # different arguments each turn: the same call over and over would trip the repetition guard
    turns = [
        {**tool, "content": [{**tool["content"][0], "id": f"c{i}", "input": {"expression": f"{i}*7"}}]}
        for i in range(count)
    ]
    done = {"stop_reason": "end_turn", "content": [{"type": "text", "text": "42"}], "usage": tool["usage"]}
    return [*turns, done]


# --- 1. scaling -------------------------------------------------------------------------------


@dataclass
class ScaleRow:
    workers: int
    runs: int
    seconds: float

    @property
    def per_minute(self) -> float:
        return self.runs / self.seconds * 60


def _start_worker(url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TINYHARNESS_MEMORY": "off"}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "tinyharness", "worker", "--log", url),
                *("--concurrency", str(CONCURRENCY), "--workspace-root", str(log.parent)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            cwd=ROOT,
        )
    deadline = time.monotonic() + 180
    while "takes runs from" not in log.read_text(encoding="utf-8"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker did not start: {log.read_text(encoding='utf-8')}")
        time.sleep(0.2)
    return proc


def scale_row(server: str, workers: int, runs: int, tmp: Path) -> ScaleRow:
    from tinyharness.durable.queue import Client, new_run_id

    with fresh_database(server) as url:
        client = Client(url)  # creates the queue's tables before the workers start
        folder = tmp / f"w{workers}"
        folder.mkdir()
        procs = [_start_worker(url, folder / f"worker{i}.err") for i in range(workers)]
        try:
            script = folder / "script.json"
            script.write_text(json.dumps({"latency": LATENCY, "responses": _turns(2)}), encoding="utf-8")
            options = ["--model", f"scripted:{script}", "--no-memory", "--max-output-tokens", "256"]
            started = time.perf_counter()
            for index in range(runs):
                spec = {
                    "run_id": new_run_id(),
                    "task": f"task {index}",
                    "argv": [*options, f"task {index}"],
                    "workspace": str(folder),
                    "model": f"scripted:{script}",
                }
                client.submit(spec)
            while True:
                states = [run.state for run in client.list_runs(runs * 2)]
                if sum(state in ("finished", "failed") for state in states) >= runs:
                    break
                time.sleep(0.1)
            seconds = time.perf_counter() - started
            if "failed" in states:
                raise RuntimeError(f"{states.count('failed')} bench run(s) failed; see {folder}")
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
            client.close()
    return ScaleRow(workers, runs, seconds)


# --- 2. overhead per step ---------------------------------------------------------------------


@dataclass
class OverheadRow:
    name: str
    steps: int
    seconds: float

    @property
    def ms_per_step(self) -> float:
        return self.seconds / self.steps * 1000


async def _loop(turns: int, *, log: Any = None, durable: bool = False, run_id: str | None = None) -> float:
    from tinyharness.agent import Agent, AgentConfig
    from tinyharness.durable.steps import DurableSteps, OnlyNew
    from tinyharness.events import EventBus
    from tinyharness.models.scripted import ScriptedModel
    from tinyharness.tools.base import function_tool
    from tinyharness.tools.builtin import calculator

    model = ScriptedModel({"responses": _turns(turns)})
    events = EventBus([log] if log is not None else [], run_id=run_id)
    if durable:
        events.sinks = [OnlyNew(events.run_id, 0, events.sinks)]
    steps = DurableSteps(model, events) if durable else None
    agent = Agent(
        model,
        [function_tool(calculator)],
        AgentConfig(max_iterations=turns + 5),
        events=events,
        steps=steps,
    )
    started = time.perf_counter()
    result = await agent.arun("compute")
    took = time.perf_counter() - started
    assert result.stop == "end_turn", result.detail
    return took


def overhead_rows(server: str, turns: int) -> list[OverheadRow]:
    from dbos import DBOS

    from tinyharness.durable.queue import APP_NAME, APP_VERSION
    from tinyharness.runlog import PostgresRunLog

    steps = turns * 2 + 1  # a model call and a tool call per turn, and the final answer
    rows = [OverheadRow("plain loop, no run log", steps, asyncio.run(_loop(turns)))]
    with fresh_database(server) as url:
        with PostgresRunLog(url) as log:
            rows.append(
                OverheadRow("plain loop + PostgreSQL run log", steps, asyncio.run(_loop(turns, log=log)))
            )
        DBOS(config={"name": APP_NAME, "system_database_url": url, "application_version": APP_VERSION})

        async def bench_durable_run(run_id: str) -> float:
            with PostgresRunLog(url) as log:
                return await _loop(turns, log=log, durable=True, run_id=run_id)

        workflow = DBOS.workflow(name="bench_durable_run")(bench_durable_run)
        DBOS.launch()
        try:
            seconds = asyncio.run(workflow(uuid.uuid4().hex[:12]))
        finally:
            DBOS.destroy()
    rows.append(OverheadRow("durable: DBOS steps + PostgreSQL run log", steps, seconds))
    return rows


# --- report -----------------------------------------------------------------------------------


def run(small: bool = False) -> str:
    server = server_url()
    if server is None:
        return (
            "Skipped: no PostgreSQL configured. Set TINYHARNESS_BENCH_PG_URL (or start one with "
            '`eval "$(scripts/pg-test-server.sh)"`) and run `python -m bench --only durable`.'
        )
    try:
        import dbos  # noqa: F401
    except ImportError:
        return "Skipped: DBOS is not installed (pip install 'tinyharness[durable]')."
    runs = 8 if small else 32
    turns = 20 if small else 100
    with tempfile.TemporaryDirectory(prefix="th-durable-bench-") as tmp:
        scale = []
        for workers in (1, 2, 4):
            progress(f"durable: {runs} runs on {workers} worker(s) ...")
            scale.append(scale_row(server, workers, runs, Path(tmp)))
    progress(f"durable: overhead per step over {turns} turns ...")
    with contextlib.redirect_stderr(io.StringIO()):
        overhead = overhead_rows(server, turns)
    return to_markdown(scale, overhead, runs)


def to_markdown(scale: list[ScaleRow], overhead: list[OverheadRow], runs: int) -> str:
    base = scale[0].per_minute
    table = markdown_table(
        ["workers", "runs", "seconds", "runs per minute", "vs 1 worker"],
        [
            [r.workers, r.runs, f"{r.seconds:.1f}", f"{r.per_minute:.1f}", f"{r.per_minute / base:.2f}x"]
            for r in scale
        ],
        "rrrrr",
    )
    plain = overhead[0].ms_per_step
    steps = markdown_table(
        ["loop", "steps", "ms per step", "more than the plain loop"],
        [[r.name, r.steps, f"{r.ms_per_step:.2f}", f"{r.ms_per_step - plain:+.2f} ms"] for r in overhead],
        "lrrr",
    )
    ideal = CONCURRENCY / (3 * LATENCY) * 60  # runs at once / seconds of model time per run
    return "\n".join(
        [
            f"Scaling: {runs} runs, each 3 scripted model requests of {LATENCY:g} s and 2 calculator "
            f"calls; every worker runs up to {CONCURRENCY} at once; from the first submit to the last "
            f"run's end. With no harness cost at all one worker would finish {ideal:.0f} runs per minute "
            "(model time alone); below that, the harness, DBOS and PostgreSQL share the machine's CPUs.",
            "",
            table,
            "",
            "Overhead per step: one run of instant scripted turns (a model call and a calculator call "
            "each) in this process; the durable loop records every model call and tool call as a DBOS "
            "step (a tool call is two: the started marker and the result).",
            "",
            steps,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.durable_bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args(argv)
    print(run(small=args.small))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
