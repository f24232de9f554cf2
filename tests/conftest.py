"""Shared fixtures. Every test gets a private data folder and long-term memory off unless it
asks for a store, so no test touches the user's real run log or memories. ``local_server``:
ONE real llama.cpp server (loopback only) shared by every test marked ``local_model``; skipped,
with the reason, when the local model is not installed. ``database``: a fresh PostgreSQL
database per test on the server ``scripts/pg-test-server.sh`` starts (it exports
TINYHARNESS_TEST_PG_URL); skipped, with that command, when the variable is not set."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tinyharness.errors import ConfigError
from tinyharness.models.local import LocalServer

# No test asserts on a clock: hypothesis's per-example deadline is one, and on a loaded machine it
# failed examples that were only slow. Tests that set their own settings keep them.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


@pytest.fixture(autouse=True)
def private_data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("TINYHARNESS_MEMORY", "off")
    monkeypatch.delenv("TINYHARNESS_MODEL", raising=False)  # the user's default model is not the tests'


# Small, so a context-overflow test needs only a short prompt; large enough for JSON mode.
LOCAL_TEST_N_CTX = 1024


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalServer]:
    try:
        # One thread: this 2-core machine is shared with other test runs, and llama.cpp's
        # spinning thread pool stalls badly when its threads outnumber the free cores.
        server = LocalServer(n_ctx=LOCAL_TEST_N_CTX, threads=1).start()
    except ConfigError as exc:
        pytest.skip(f"local model not available: {exc}")
    try:
        yield server
    finally:
        server.close()


PG_URL_ENV = "TINYHARNESS_TEST_PG_URL"


@pytest.fixture
def database(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a fresh database on the test server, dropped afterwards (named after the test
    module, so a leftover says where it came from)."""
    import psycopg  # here: only the PostgreSQL tests need the driver

    server = os.environ.get(PG_URL_ENV)
    if not server:
        pytest.skip(f"needs PostgreSQL: run scripts/pg-test-server.sh (exports {PG_URL_ENV})")
    module = request.module.__name__.rpartition(".")[2].removeprefix("test_")
    name = f"th_{module}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield f"{server.rsplit('/', 1)[0]}/{name}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
