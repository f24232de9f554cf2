"""Shared fixtures. Every test gets a private data folder and long-term memory off unless it
asks for a store, so no test touches the user's real run log or memories. ``local_server``:
ONE real llama.cpp server (loopback only) shared by every test marked ``local_model``; skipped,
with the reason, when the local model is not installed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tinyharness.errors import ConfigError
from tinyharness.models.local import LocalServer


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
