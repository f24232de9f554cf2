"""What a run costs in dollars: the price table and its lookups, config overrides, unknown and
local models, the stale flag, and the cost where users see it (run_end, `runs`, `show`,
`report`, the chat's status line and /cost)."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tinyharness.agent import Agent, AgentConfig
from tinyharness.chat.repl import HELP, ChatSession, ChatSetup
from tinyharness.cli import main
from tinyharness.errors import ConfigError
from tinyharness.events import EventBus, ListSink
from tinyharness.models.base import Usage
from tinyharness.models.cli import prices_line
from tinyharness.models.prices import PriceTable, cost_at, model_cost
from tinyharness.models.scripted import ScriptedModel
from tinyharness.runlog import RunLog
from tinyharness.runlog.report import build_report, metrics_table
from tinyharness.settings import load_settings

TABLE = PriceTable.builtin()


def test_lookup_by_exact_id_dated_id_and_provider_prefix() -> None:
    sonnet = TABLE.lookup("claude-sonnet-4-5")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (3.0, 15.0)
    assert TABLE.lookup("claude-sonnet-4-5-20250929") == sonnet
    assert TABLE.lookup("anthropic:claude-sonnet-4-5") == sonnet
    mini = TABLE.lookup("gpt-4.1-mini-2025-04-14")
    assert mini is not None and mini.model == "gpt-4.1-mini"  # the longest key, never gpt-4.1
    assert TABLE.lookup("claude-opus-4-1-20250805").model == "claude-opus-4-1"  # type: ignore[union-attr]
    assert TABLE.lookup("gpt-4.10") is None  # a key must end at a separator
    assert TABLE.lookup("my-private-model") is None


def test_cost_splits_uncached_input_writes_reads_and_output() -> None:
    price = TABLE.lookup("claude-sonnet-4-6")
    assert price is not None
    usage = Usage(
        1_000_000, 100_000, cached_tokens=800_000, cache_write_tokens=150_000, cache_write_1h_tokens=50_000
    )
    cost = cost_at(price, usage)
    assert cost.uncached_input == pytest.approx(0.05 * 3.0)
    assert cost.cache_writes == pytest.approx(0.1 * 3.75 + 0.05 * 6.0)
    assert cost.cache_reads == pytest.approx(0.8 * 0.30)
    assert cost.output == pytest.approx(0.1 * 15.0)
    assert cost.usd == pytest.approx(0.15 + 0.675 + 0.24 + 1.5)
    event = cost.to_event()
    assert event["status"] == "priced" and event["usd"] == pytest.approx(2.565)
    openai = cost_at(TABLE.lookup("gpt-4.1"), Usage(1_000_000, 0, cached_tokens=500_000))  # type: ignore[arg-type]
    assert openai.usd == pytest.approx(0.5 * 2.0 + 0.5 * 0.5)


def test_unknown_model_shows_tokens_and_says_the_price_is_unknown() -> None:
    cost = TABLE.cost("my-private-model", Usage(1200, 30))
    assert cost.status == "unknown" and cost.usd is None
    assert cost.to_event() == {"usd": None, "status": "unknown"}
    assert "price unknown for my-private-model" in cost.describe() and "1,200 in" in cost.describe()


def test_local_models_cost_nothing_and_say_so() -> None:
    class Local:
        name = "qwen"
        model = "qwen"
        base_url = "http://127.0.0.1:8080/v1"

    class Proxy:  # a known hosted model through a proxy on this machine is still billed
        name = model = "claude-sonnet-4-5"
        base_url = "http://localhost:4000"

    usage = Usage(5000, 100)
    for local in (TABLE.cost("local:qwen2.5-coder-0.5b", usage), model_cost(TABLE, Local(), usage)):
        assert local.status == "local" and local.usd == 0 and "local model" in local.describe()
    assert model_cost(TABLE, Proxy(), usage).status == "priced"


def test_config_prices_add_and_override_and_bad_ones_say_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path))
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"prices": {"my-model": {"input": 1.0, "output": 4.0}, "gpt-4.1": {"input": 9, "output": 9}}}
        )
    )
    table = TABLE.with_overrides(load_settings().prices)
    mine = table.lookup("my-model")
    assert mine is not None and (mine.cache_read, mine.cache_write_5m, mine.cache_write_1h) == (1.0, 1.0, 1.0)
    assert table.lookup("gpt-4.1").input == 9  # type: ignore[union-attr]
    assert TABLE.lookup("gpt-4.1").input == 2.0  # type: ignore[union-attr]  # the built-in table is unchanged
    with pytest.raises(ConfigError, match=r"config prices: my-model\.output must be a number"):
        TABLE.with_overrides({"my-model": {"input": 1, "output": "cheap"}})
    with pytest.raises(ConfigError, match="config prices"):
        TABLE.with_overrides({"my-model": 3})


def test_a_stale_table_is_flagged_in_the_models_listing() -> None:
    fresh = prices_line(TABLE, TABLE.as_of + dt.timedelta(days=10))
    assert "taken " + TABLE.as_of.isoformat() in fresh and "STALE" not in fresh
    stale = prices_line(TABLE, TABLE.as_of + dt.timedelta(days=181))
    assert "STALE: the price table is 181 days old" in stale


def test_bad_config_prices_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.json").write_text(json.dumps({"prices": {"m": {"input": -1, "output": 1}}}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [{"stop_reason": "end_turn", "content": []}]}))
    code = main(["run", "hi", "--model", f"scripted:{script}", "--workspace", str(tmp_path), "--no-log"])
    err = capsys.readouterr().err
    assert code == 2 and "m.input must be a number" in err and err.count("\n") == 1


# --- where users see it -----------------------------------------------------------------------


def reply(text: str, **usage: int) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}], "usage": usage}


SCRIPT = {
    "responses": [
        reply(
            "first",
            input_tokens=20_000,
            output_tokens=500,
            cache_read_input_tokens=0,
            cache_creation_input_tokens=18_000,
        ),
        reply(
            "second",
            input_tokens=21_000,
            output_tokens=400,
            cache_read_input_tokens=18_000,
            cache_creation_input_tokens=2_500,
        ),
    ]
}


def test_run_end_runs_show_and_report_carry_the_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    sink = ListSink()
    with RunLog(db) as log:
        for task in ("one", "two"):
            model = ScriptedModel(
                {"responses": [SCRIPT["responses"][task == "two"]]}, name="claude-sonnet-4-6"
            )
            agent = Agent(model, (), events=EventBus([sink, log]))
            agent.run(task)
    end = [e for e in sink.events if e["type"] == "run_end"][-1]
    price = TABLE.lookup("claude-sonnet-4-6")
    expected = cost_at(price, Usage(21_000, 400, 18_000, 2_500)).usd  # type: ignore[arg-type]
    assert end["cost"]["usd"] == pytest.approx(expected) and end["cost"]["status"] == "priced"
    assert (
        end["usage"]["cache_read_input_tokens"] == 18_000
        and end["usage"]["cache_creation_input_tokens"] == 2_500
    )

    assert main(["runs", "--log", str(db)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-2:] == ["cost", "task"]
    assert f"${expected:.4f}" in out[1]  # newest first
    run_id = end["run_id"]
    assert main(["show", run_id, "--log", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "(cache read 18000, written 2500)" in shown
    assert (
        f"cost: ${expected:.4f} at claude-sonnet-4-6 prices" in shown
        and "cache reads $0.0054 (18,000)" in shown
    )

    with RunLog(db) as log:
        report = build_report(log.events(run_id))
    assert report.cached_share == pytest.approx(18_000 / 21_000)
    table = metrics_table(report)
    assert re.search(r"input read from prompt cache\s+85\.7%", table)
    assert f"${expected:.4f}" in table


def test_chat_status_line_and_cost_command_show_dollars(tmp_path: Path) -> None:
    responses = SCRIPT["responses"]

    def build(model: str, session: str, saved: Any, review: Any) -> Agent:
        scripted = ScriptedModel({"responses": [responses[build.calls]]}, name="claude-sonnet-4-6")  # type: ignore[attr-defined]
        build.calls += 1  # type: ignore[attr-defined]
        return Agent(scripted, (), AgentConfig())

    build.calls = 0  # type: ignore[attr-defined]

    async def close(agent: Agent) -> None:
        await agent.model.aclose()

    output = io.StringIO()
    console = Console(file=output, width=120, force_terminal=False)
    setup = ChatSetup(tmp_path, "claude-sonnet-4-6", build, close, tmp_path / "NOTES.md")
    chat = ChatSession(setup, console)
    asyncio.run(chat.turn("hello"))
    first = chat.cost()
    assert first.usd == pytest.approx(
        cost_at(TABLE.lookup("claude-sonnet-4-6"), Usage(20_000, 500, 0, 18_000)).usd
    )  # type: ignore[arg-type]
    assert first.short() == f"${first.usd:.4f}"
    asyncio.run(chat.command("/model claude-sonnet-4-6"))  # a new agent: the spending goes on
    asyncio.run(chat.turn("again"))
    total = chat.cost()
    assert total.usage == Usage(41_000, 900, 18_000, 20_500)
    output.truncate(0)
    asyncio.run(chat.command("/cost"))
    shown = output.getvalue()
    for part in ("uncached input", "cache writes", "cache reads", "output", "total"):
        assert part in shown
    assert f"${total.usd:.4f}" in shown and "18,000 tokens" in shown
    assert "/cost" in [command for command, _ in HELP]


def test_the_status_line_shows_the_running_cost() -> None:
    from tinyharness.chat.render import TurnView, _Status

    view = TurnView(Console(file=io.StringIO()), tokens=1200, window=8000, cost=lambda: "$0.0123")
    line = _Status(view).__rich__().plain
    assert "1,200 / 8,000 tokens in the window · $0.0123" in line
