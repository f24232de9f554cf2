"""The peer comparison feeds every harness the same workload and counts it the same way.

Each peer row is only worth something if LangChain, Pydantic AI and the OpenAI Agents SDK ran the
very tool calls tinyharness ran, saw the very same outputs, and were billed by the same rule. A
driver that fed a peer a different workload (another file, a truncated output, a dropped call) or
reported usage its own way fails here. Peers are an optional install (`pip install -e '.[peers]'`):
each peer's test skips, saying so, when it is missing.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import peers_bench  # noqa: E402
from bench.context_bench import FILE_CONSTRAINTS, Workload  # noqa: E402

SMALL = Workload(24, 8_000, files=6)

PEERS = {
    "langchain": (peers_bench.run_langchain, "LangChain 1 create_agent"),
    "pydantic-ai": (peers_bench.run_pydantic_ai, "Pydantic AI + Harness"),
    "openai-agents": (peers_bench.run_openai_agents, "OpenAI Agents SDK"),
}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    """Every row of the table (tinyharness's strategies and each peer setup), at a small size."""
    return peers_bench.run_all(SMALL)


@pytest.fixture(scope="module")
def reference(rows: list[dict[str, object]]) -> dict[str, object]:
    """tinyharness with no strategy: every tool output reaches the model untouched."""
    row = next(r for r in rows if r["harness"] == "tinyharness" and r["setup"] == "none")
    log = row["tool_log"]
    assert isinstance(log, list) and len(log) == SMALL.rounds
    assert any(all(c in output for c in FILE_CONSTRAINTS) for _name, _args, output in log)
    return row


def test_every_tinyharness_strategy_runs_the_same_tool_calls(
    rows: list[dict[str, object]], reference: dict[str, object]
) -> None:
    ours = [r for r in rows if r["harness"] == "tinyharness"]
    assert [r["setup"] for r in ours] == peers_bench.TINYHARNESS_STRATEGIES
    for row in ours:
        assert row["stop"] == "end_turn" and row["tool_log"] == reference["tool_log"], row["setup"]


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_each_peer_setup_runs_the_same_tool_calls_and_is_shown_the_same_outputs(
    peer: str, rows: list[dict[str, object]], reference: dict[str, object]
) -> None:
    label = PEERS[peer][1]
    mine = [r for r in rows if r["harness"] == label]
    assert mine, f"no row for {label}"
    if any("skipped" in r for r in mine):
        pytest.skip(str(mine[0]["skipped"]))
    expected = {f"t{i}": output for i, (_name, _args, output) in enumerate(reference["tool_log"])}  # type: ignore[arg-type]
    for row in mine:
        assert row["stop"] == "end_turn" and isinstance(row["billed"], int) and row["billed"] > 0
        assert row["tool_log"] == reference["tool_log"], row["setup"]  # same calls, arguments, outputs
        # ... and what the peer's model was first shown of each result is that output, unchanged
        assert row["seen_results"] == expected, row["setup"]
        assert isinstance(row["cpu_us"], float) and row["cpu_us"] > 0


def _run(peer: str, setup: str) -> dict[str, object]:
    driver, _label = PEERS[peer]
    try:
        return driver(setup, SMALL)
    except peers_bench.PeerMissing as missing:
        pytest.skip(str(missing))


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_without_compaction_every_harness_is_billed_exactly_the_same(
    peer: str, reference: dict[str, object]
) -> None:
    """Same system prompt, same tools, same messages: the fake models report usage by one rule,
    so a peer with nothing to compact costs what tinyharness with nothing to compact costs."""
    row = _run(peer, "none")
    for column in ("billed", "peak", "over", "calls", "prefix"):
        assert row[column] == reference[column], column


def test_a_missing_peer_is_a_skipped_row_that_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # import agents -> ImportError
    with pytest.raises(peers_bench.PeerMissing, match="openai-agents is not installed"):
        peers_bench.run_openai_agents("SQLiteSession + ToolOutputTrimmer", SMALL)
    row = {"harness": "OpenAI Agents SDK", "setup": "x", "skipped": "skipped: openai-agents is not installed"}
    table = peers_bench.to_markdown([row])
    assert "| OpenAI Agents SDK | x | skipped: openai-agents is not installed |" in table


def test_every_compacting_setup_did_compact(rows: list[dict[str, object]]) -> None:
    """A setup name the driver does not wire (or wires to nothing) would show up as a peer that
    never rewrites its history; only the Agents SDK row is expected to (it has nothing to run)."""
    for row in rows:
        if "skipped" in row or row["setup"] == "none" or row["harness"] == "OpenAI Agents SDK":
            continue
        assert isinstance(row["rewrites"], int) and row["rewrites"] > 0, (row["harness"], row["setup"])


def test_the_peer_table_is_a_part_of_python_m_bench() -> None:
    main = importlib.import_module("bench.__main__")
    assert "peers" in main.PARTS and main.SECTIONS["peers"][1] == "python -m bench.peers_bench"
