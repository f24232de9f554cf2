"""The queue of durable runs, on DBOS, in the PostgreSQL database of the shared run log.

- ``submit``: enqueue a run (a DBOS workflow named ``tinyharness_run`` on the queue
  ``tinyharness``); any process that can reach the database may submit.
- ``Worker``: one process that runs queued runs, up to ``concurrency`` at once on one asyncio
  loop, until it is stopped. A run it was running when it died is taken up by another worker.
- ``list_runs`` / ``cancel``: what the commands ``runs`` and ``cancel`` show and do.

How a dead worker's runs move on: DBOS records which worker (its executor id) runs each
workflow, but plain DBOS recovers a process's workflows only when a process with the same id
starts again. Each worker therefore holds a PostgreSQL advisory lock named after its id, on a
connection of its own, for as long as it lives, and lists itself in ``tinyharness_queue.workers``.
The server releases the lock the moment the process dies (its connection closes), however it
dies. Every worker looks each second for listed workers whose lock it can take: those are dead,
and it hands their unfinished runs back to the queue (``DBOS._recover_pending_workflows``), where
any worker takes them up. Taking the lock first makes sure one worker does it once.

May import ``errors``, ``redact``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..redact import redact

QUEUE = "tinyharness"
WORKFLOW = "tinyharness_run"
APP_NAME = "tinyharness"
# Workers replay a run's recorded steps with their own code: every worker of a queue runs the
# same version of the run workflow. A change to what a run records raises this number.
APP_VERSION = "tinyharness-run-1"
SCHEMA = "tinyharness_queue"
LIVENESS_INTERVAL = 1.0  # seconds between two looks for dead workers

Spec = dict[str, Any]  # run_id, task, argv (the run options), workspace
Runner = Callable[[Spec], Awaitable[dict[str, Any]]]


def _require_dbos() -> Any:
    try:
        import dbos
    except ImportError:
        raise ConfigError("durable runs need DBOS: pip install 'tinyharness[durable]'") from None
    return dbos


def _quiet() -> None:
    # DBOS logs every launch and recovery at INFO on the console; the worker prints its own lines.
    logging.getLogger("dbos").setLevel(logging.WARNING)


@contextmanager
def _database_errors(url: str) -> Iterator[None]:
    """The driver's and SQLAlchemy's errors as one line that names the database."""
    try:
        yield
    except ConfigError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"run queue at {redact(url)}: {first}") from None


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


# --- submitting and listing (any process) -----------------------------------------------------


class Client:
    """A connection to the queue for commands that do not run work (submit, runs, cancel)."""

    def __init__(self, url: str) -> None:
        dbos = _require_dbos()
        _quiet()
        self.url = url
        with _database_errors(url):
            dbos.DBOS.migrate(url)  # the queue's tables, before any worker ever started
            self._client = dbos.DBOSClient(system_database_url=url, application_name=APP_NAME)

    def submit(self, spec: Spec) -> str:
        options = {"queue_name": QUEUE, "workflow_name": WORKFLOW, "workflow_id": spec["run_id"]}
        with _database_errors(self.url):
            self._client.enqueue(options, spec)
        return str(spec["run_id"])

    def wait(self, run_id: str) -> dict[str, Any]:
        """The run's result once it ended (a dict with ``stop``, ``final``, ``ok``)."""
        with _database_errors(self.url):
            result: dict[str, Any] = self._client.retrieve_workflow(run_id).get_result()
        return result

    def list_runs(self, limit: int) -> list[QueuedRun]:
        with _database_errors(self.url):
            statuses = self._client.list_workflows(
                name=WORKFLOW, limit=limit, sort_desc=True, load_input=True, load_output=True
            )
        return [_queued_run(s) for s in statuses]

    def cancel(self, run_id: str) -> str:
        """Cancel a queued or running run; its state before, in the words of ``runs``."""
        with _database_errors(self.url):
            found = self._client.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
            if not found:
                found = self._client.list_workflows(
                    workflow_id_prefix=run_id, name=WORKFLOW, load_input=False, load_output=False
                )
            if len(found) != 1:
                raise ConfigError(
                    f"no queued run {run_id!r}" if not found else f"run id prefix {run_id!r} is ambiguous"
                )
            state = _STATES.get(found[0].status, found[0].status.lower())
            if state in ("queued", "running"):
                self._client.cancel_workflow(found[0].workflow_id)
        return f"{found[0].workflow_id} {state}"

    def close(self) -> None:
        self._client.destroy()


_STATES = {
    "ENQUEUED": "queued",
    "PENDING": "running",
    "SUCCESS": "finished",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed",
}


@dataclass(frozen=True)
class QueuedRun:
    id: str
    state: str  # queued, running, finished, failed, cancelled
    worker: str | None
    task: str
    stop: str | None
    created: float | None


def _queued_run(status: Any) -> QueuedRun:
    inputs = status.input
    args = getattr(inputs, "args", None) or (inputs.get("args") if isinstance(inputs, dict) else None) or ()
    spec = args[0] if args and isinstance(args[0], dict) else {}
    output = status.output if isinstance(status.output, dict) else {}
    state = _STATES.get(status.status, status.status.lower())
    if state == "finished" and output.get("ok") is False:
        state = "failed"
    created = status.created_at / 1000 if status.created_at else None
    return QueuedRun(
        status.workflow_id, state, status.executor_id, str(spec.get("task", "")), output.get("stop"), created
    )


# --- the worker -------------------------------------------------------------------------------


class Worker:
    """A worker process: ``start`` registers the workflow, launches DBOS and the liveness
    watch; ``stop`` shuts it down (its unfinished runs move to other workers)."""

    def __init__(self, url: str, concurrency: int, runner: Runner) -> None:
        if concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
        self.url = url
        self.concurrency = concurrency
        self.runner = runner
        self.executor_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._stop = threading.Event()
        self._life: Any = None
        self._watch: threading.Thread | None = None
        self.recovered = 0

    def start(self) -> None:
        dbos = _require_dbos()
        _quiet()
        import psycopg

        try:
            self._life = psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise ConfigError(f"cannot reach the run queue at {redact(self.url)}: {exc}".strip()) from None
        self._life.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        self._life.execute(
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.workers (executor_id TEXT PRIMARY KEY,
                host TEXT NOT NULL, pid INTEGER NOT NULL, started DOUBLE PRECISION NOT NULL)"""
        )
        # The lock before the row: a worker listed is always one whose lock says if it lives.
        self._life.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (self.executor_id,))
        self._life.execute(
            f"INSERT INTO {SCHEMA}.workers VALUES (%s, %s, %s, extract(epoch from now()))",
            (self.executor_id, socket.gethostname(), os.getpid()),
        )
        runner = self.runner

        async def tinyharness_run(spec: Spec) -> dict[str, Any]:
            return await runner(spec)

        DBOS = dbos.DBOS
        DBOS(
            config={
                "name": APP_NAME,
                "system_database_url": self.url,
                "executor_id": self.executor_id,
                "application_version": APP_VERSION,
                "log_level": "WARNING",
                # Each run at once holds at most one connection at a time (a step's record); a
                # few more for the queue's polling. DBOS's default (20) would let a handful of
                # workers exhaust a server's connections.
                "sys_db_pool_size": self.concurrency + 4,
            }
        )
        DBOS.workflow(name=WORKFLOW)(tinyharness_run)
        DBOS.launch()
        DBOS.register_queue(
            QUEUE, worker_concurrency=self.concurrency, polling_interval_sec=0.2, on_conflict="always_update"
        )
        self._watch = threading.Thread(target=self._watch_workers, name="worker-liveness", daemon=True)
        self._watch.start()

    def _watch_workers(self) -> None:
        import psycopg

        dbos = _require_dbos()
        try:
            conn = psycopg.connect(self.url, autocommit=True)
        except psycopg.Error:
            return
        with conn:
            while not self._stop.wait(LIVENESS_INTERVAL):
                try:
                    self._reap(conn, dbos.DBOS)
                except psycopg.Error:
                    continue  # the database is away for a moment: look again next time

    def _reap(self, conn: Any, DBOS: Any) -> None:
        others = conn.execute(
            f"SELECT executor_id FROM {SCHEMA}.workers WHERE executor_id <> %s", (self.executor_id,)
        ).fetchall()
        for (executor_id,) in others:
            taken = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (executor_id,)
            ).fetchone()[0]
            if not taken:
                continue  # alive
            try:
                handles = DBOS._recover_pending_workflows([executor_id])
                self.recovered += len(handles)
                conn.execute(f"DELETE FROM {SCHEMA}.workers WHERE executor_id = %s", (executor_id,))
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (executor_id,))

    def wait(self) -> None:
        """Until ``stop`` (a signal handler calls it). A worker that loses its own database
        connection counts as dead to the others (its lock is gone), so it stops too."""
        import psycopg

        while not self._stop.wait(1.0):
            try:
                self._life.execute("SELECT 1")
            except psycopg.Error:
                raise ConfigError(
                    "lost the connection to the run queue; stopping (other workers take up its runs)"
                ) from None

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        """Stop running. The row in ``workers`` stays: with the lock gone, the next worker that
        looks hands this worker's unfinished runs back to the queue and removes it."""
        self._stop.set()
        dbos = _require_dbos()
        dbos.DBOS.destroy(workflow_completion_timeout_sec=0)
        if self._life is not None:
            self._life.close()  # the lock goes with it


def was_cancelled(url: str, run_id: str) -> bool:
    """In a worker: the run was cancelled (``tinyharness cancel``). DBOS stops a cancelled run
    at its next step with one of several errors (cancelled, or no longer owned by this
    execution), so the record decides, not the error. Read from the table itself: inside the
    stopped workflow, DBOS's own calls raise the cancellation again."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = %s", (run_id,)
            ).fetchone()
    except psycopg.Error:
        return False
    return row is not None and row[0] == "CANCELLED"
