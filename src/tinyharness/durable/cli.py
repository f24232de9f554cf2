"""The commands of durable runs: ``submit``, ``worker``, ``cancel``, and ``runs`` on a shared
PostgreSQL run log (queued, running, finished and failed runs of every worker).

``register`` adds the parsers; the top-level CLI calls the handlers and hands them what only it
can do (parse and carry out a run's options).

May import ``errors``, ``redact``, ``paths``, ``terminal``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..paths import data_home
from ..redact import redact
from ..terminal import say
from .policy import WorkerPolicy
from .queue import Client, Runner, Spec, Worker

LOG_HELP = "the PostgreSQL database the workers share: queue and run log (postgresql://...)"


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], run: argparse.ArgumentParser
) -> None:
    submit = commands.add_parser(
        "submit",
        parents=[run],  # shares run's options (and its -h, and --log: here the queue's database)
        add_help=False,
        help="queue a run for the workers (takes every option of run)",
        description="Queue TASK for `tinyharness worker` processes, with the options of `tinyharness "
        "run`. The run is durable: if its worker dies, another one finishes it, without asking the "
        "model again for a recorded step or repeating a tool call. Prints the run id.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  tinyharness submit --log postgresql://host/db --workspace /shared/repo "
        '"Summarise src/ into NOTES.md"\n  tinyharness worker --log postgresql://host/db --concurrency 4\n'
        "  tinyharness runs --log postgresql://host/db",
    )
    submit.add_argument("--wait", action="store_true", help="wait for the run to end; print its answer")

    worker = commands.add_parser(
        "worker",
        help="run queued runs until stopped",
        description="Take runs from the queue and run them, up to --concurrency at once, until "
        "Ctrl-C or SIGTERM. Start as many workers as you like, on any machine that reaches the "
        "database and sees the runs' workspaces at the same paths. A run whose worker dies is taken "
        "up by another worker within seconds.",
    )
    worker.add_argument("--log", metavar="URL", required=True, help=LOG_HELP)
    worker.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="runs at once on each worker (default 4; a setting of the shared queue: the worker "
        "started last sets it for all)",
    )

    worker.add_argument(
        "--workspace-root",
        action="append",
        default=[],
        metavar="DIR",
        help="queued runs may use workspaces beneath DIR only (repeatable; at least one). The "
        "worker's own data folder ($TINYHARNESS_HOME) is never a workspace, nor inside one",
    )
    worker.add_argument(
        "--allow-shell", action="store_true", help="run queued runs that ask for --shell (off by default)"
    )
    worker.add_argument(
        "--allow-mcp",
        action="store_true",
        help="run queued runs that ask for --mcp FILE, which names commands to start (off by default)",
    )

    cancel = commands.add_parser("cancel", help="cancel a queued or running run")
    cancel.add_argument("run", metavar="RUN", help="run id (or a unique prefix of it)")
    cancel.add_argument("--log", metavar="URL", required=True, help=LOG_HELP)


def _need_url(args: argparse.Namespace) -> str:
    url = str(args.log or "")
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{args.command} needs --log postgresql://...: the database the workers share")
    return url


def submit(args: argparse.Namespace, spec: Spec) -> int:
    client = Client(_need_url(args))
    try:
        run_id = client.submit(spec)
        print(run_id)
        if not args.wait:
            return 0
        print(f"tinyharness: waiting for run {run_id}", file=sys.stderr)
        result = client.wait(run_id)
    finally:
        client.close()
    if result.get("final"):
        say(str(result["final"]))
    if not result.get("ok"):
        say(f"tinyharness: stopped early ({result.get('stop')}): {result.get('detail', '')}", err=True)
        return 1
    return 0


def worker(args: argparse.Namespace, runner: Callable[[str, WorkerPolicy], Runner]) -> int:
    url = _need_url(args)
    policy = WorkerPolicy.build(
        args.workspace_root, data_home(), allow_shell=args.allow_shell, allow_mcp=args.allow_mcp
    )
    process = Worker(url, args.concurrency, runner(url, policy))
    process.start()
    stop = lambda *_: process.stop()  # noqa: E731
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"tinyharness: worker {process.executor_id} takes runs from {redact(url)}, "
        f"{args.concurrency} at once; Ctrl-C stops it (its unfinished runs go to other workers)",
        file=sys.stderr,
    )
    try:
        process.wait()
    finally:
        process.close()
    return 0


def cancel(args: argparse.Namespace) -> int:
    client = Client(_need_url(args))
    try:
        run_id, _, state = client.cancel(args.run).partition(" ")
    finally:
        client.close()
    if state in ("queued", "running"):
        say(f"cancelled run {run_id} (was {state})")
        return 0
    say(f"tinyharness: run {run_id} is already {state}; nothing to cancel", err=True)
    return 1


def runs(args: argparse.Namespace, summaries: dict[str, Any]) -> int:
    """The queue's runs, newest first, with what the run log knows of each (``summaries``: run
    id -> ``RunSummary``)."""
    client = Client(_need_url(args))
    try:
        queued = client.list_runs(args.limit)
    finally:
        client.close()
    if not queued:
        print("no runs queued yet", file=sys.stderr)
        return 0
    headers = ["id", "state", "submitted", "stop", "calls", "worker"]
    rows = []
    for run in queued:
        summary = summaries.get(run.id)
        when = "-" if run.created is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created))
        stop = run.stop or (summary.stop if summary is not None else None) or "-"
        calls = str(summary.model_calls) if summary is not None else "-"
        rows.append([run.id, run.state, when, stop, calls, run.worker or "-"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + "  task")
    for run, row in zip(queued, rows, strict=True):
        task = " ".join(run.task.split())
        say("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + f"  {task[:60]}")
    return 0
