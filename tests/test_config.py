"""One config object per component: every default in it, every value checked by it, and the CLI
refusing exactly what the library refuses, for the same reason."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tinyharness.agent import Agent, AgentConfig
from tinyharness.cli import build_parser, main
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.errors import ConfigError
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry

BAD = [
    # (CLI option, value, config class, field, value, the reason both give)
    ("--keep-recent", "0", ContextConfig, "keep_recent", 0, "must be at least 1 round, got 0"),
    ("--compact-ratio", "1.5", ContextConfig, "ratio", 1.5, "must be in (0, 1], got 1.5"),
    ("--compact-buffer", "-1", ContextConfig, "buffer", -1, "must not be negative, got -1"),
    ("--context-window", "0", ContextConfig, "window", 0, "must be a positive number of tokens, got 0"),
    ("--strategy", "compress", ContextConfig, "strategy", "compress", "unknown compaction strategy compress"),
    ("--max-iterations", "0", AgentConfig, "max_iterations", 0, "must be a positive integer, got 0"),
    ("--token-budget", "-5", AgentConfig, "token_budget", -5, "must be a positive integer, got -5"),
    ("--max-output-tokens", "0", AgentConfig, "max_output_tokens", 0, "must be a positive integer, got 0"),
]


@pytest.mark.parametrize(("option", "text", "cls", "field", "value", "reason"), BAD)
def test_the_cli_and_the_library_refuse_the_same_values_for_the_same_reason(
    option: str,
    text: str,
    cls: type,
    field: str,
    value: object,
    reason: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ConfigError) as refused:
        cls(**{field: value})
    assert reason in str(refused.value) and option in str(refused.value)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", option, text, "task"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {reason}" in err


def test_the_cli_defaults_are_the_configs_defaults() -> None:
    """An option left out means the config's default, read from the config, not a copy."""
    args = build_parser().parse_args(["run", "task"])
    agent, context = AgentConfig(), ContextConfig()
    assert (args.max_iterations, args.max_output_tokens, args.token_budget) == (
        agent.max_iterations,
        agent.max_output_tokens,
        agent.token_budget,
    )
    assert (args.keep_recent, args.accounting, args.counter, args.strategy) == (
        context.keep_recent,
        context.accounting,
        context.counter,
        context.strategy,
    )
    assert args.context_window is context.window is None


def test_configs_are_frozen_and_checked_once_made() -> None:
    config = ContextConfig(keep_recent=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.keep_recent = 0  # type: ignore[misc]
    with pytest.raises(ConfigError, match="not both"):
        ContextConfig(ratio=0.5, buffer=100)
    with pytest.raises(ConfigError, match="below the window"):
        ContextConfig(window=1000, buffer=1000)
    assert ContextConfig(notes_path="n.md").notes_path is not None  # type: ignore[arg-type]


def test_the_window_is_resolved_once_the_users_then_the_models_then_the_default() -> None:
    model = ScriptedModel({"responses": []}, context_window=8192)
    assert build_context(ContextConfig(), model=model).context_window == 8192
    assert build_context(ContextConfig(window=4000), model=model).context_window == 4000
    assert build_context(ContextConfig()).context_window == 32_768
    # a buffer checked against the model's window when the config left the window open
    with pytest.raises(ConfigError, match="below the window"):
        build_context(ContextConfig(buffer=9000), model=model)


def test_the_agent_reads_its_config() -> None:
    agent = Agent(ScriptedModel({"responses": []}), ToolRegistry([]), AgentConfig(system="be brief"))
    assert agent._request().system == "be brief"
    assert agent._request().max_tokens == AgentConfig().max_output_tokens


def test_the_cli_window_reaches_the_context_through_the_model(tmp_path: Path) -> None:
    """--context-window is given to the model once; the context reads it from there."""
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps({"responses": [{"stop_reason": "end_turn", "content": [{"type": "text", "text": "ok"}]}]})
    )
    events = tmp_path / "ev.jsonl"
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(tmp_path), "--no-log", "--quiet"]
    assert (
        main([*argv, "--events", str(events), "--context-window", "5000", "--compact-ratio", "0.5", "hi"])
        == 0
    )
    start = json.loads(events.read_text(encoding="utf-8").splitlines()[0])
    assert start["type"] == "run_start" and (start["context_window"], start["compact_at"]) == (5000, 2500)
