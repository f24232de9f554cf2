"""Settings that stay set: the default model, base URLs, permission rules and API keys, with the
precedence --option > environment > config file > built-in default, through the real command."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tinyharness.cli import main
from tinyharness.models.anthropic_messages import AnthropicModel
from tinyharness.models.openai_chat import OpenAIChatModel
from tinyharness.settings import (
    config_path,
    keys_path,
    load_settings,
    resolve_base_url,
    resolve_model,
    set_key,
    stored_key,
)

SECRET = "sk-test-1234567890abcdefABCDEF"


def answer_script(path: Path, text: str) -> str:
    response = {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}], "usage": {}}
    path.write_text(json.dumps({"responses": [response]}), encoding="utf-8")
    return f"scripted:{path}"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path / "home"))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def run_answer(workspace: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["run", "hello", "--workspace", str(workspace), "--quiet", "--no-log", *extra])
    out = capsys.readouterr().out.strip()
    assert code == 0, out
    return out


def test_model_precedence_option_env_config_builtin(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    from_config = answer_script(tmp_path / "config.json", "from the config file")
    from_env = answer_script(tmp_path / "env.json", "from the environment")
    from_option = answer_script(tmp_path / "option.json", "from the option")

    assert resolve_model(None) == ("local", "built-in default")
    assert main(["models", "default", from_config]) == 0
    assert json.loads(config_path().read_text())["default_model"] == from_config
    capsys.readouterr()
    assert run_answer(workspace, capsys) == "from the config file"

    monkeypatch.setenv("TINYHARNESS_MODEL", from_env)
    answer_script(tmp_path / "config.json", "from the config file")
    assert run_answer(workspace, capsys) == "from the environment"
    assert run_answer(workspace, capsys, "--model", from_option) == "from the option"

    assert main(["models", "default"]) == 0
    assert capsys.readouterr().out.strip() == f"{from_env}  (from $TINYHARNESS_MODEL)"
    monkeypatch.delenv("TINYHARNESS_MODEL")
    assert main(["models", "default", "--unset"]) == 0
    assert main(["models", "default"]) == 0
    assert capsys.readouterr().out.strip().endswith("local  (from built-in default)")


def test_setting_the_default_keeps_the_other_keys_of_the_config_file(home: Path) -> None:
    home.mkdir()
    config_path().write_text(json.dumps({"mcpServers": {"fs": {"command": "x"}}, "future": 1}))
    assert main(["models", "default", "anthropic:claude-sonnet-4-5"]) == 0
    data = json.loads(config_path().read_text())
    assert data == {
        "mcpServers": {"fs": {"command": "x"}},
        "future": 1,
        "default_model": "anthropic:claude-sonnet-4-5",
    }
    assert load_settings().mcp_servers == {"fs": {"command": "x"}}


def test_a_bad_model_string_or_a_broken_config_file_is_one_line_and_exit_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "default", "gpt4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a model string" in err
    home.mkdir()
    config_path().write_text("{broken")
    assert main(["run", "hi", "--workspace", str(tmp_path), "--no-log"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.json is not valid JSON" in err
    config_path().write_text(json.dumps({"permissions": {"allow": "write_file"}}))
    assert main(["run", "hi", "--workspace", str(tmp_path), "--no-log"]) == 2
    assert "permissions.allow must be a list" in capsys.readouterr().err
    config_path().write_text(json.dumps({"memory_rerank": 3}))
    db = str(tmp_path / "m.db")
    assert main(["memory", "search", "tea", "--memory", db, "--embedder", "none"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory_rerank must be a model string" in err


def test_base_url_precedence(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir()
    config_path().write_text(json.dumps({"base_urls": {"openai": "http://config:1/v1"}}))
    assert resolve_base_url("openai", None) == "http://config:1/v1"
    assert resolve_base_url("anthropic", None) is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:2/v1")
    assert resolve_base_url("openai", None) == "http://env:2/v1"
    assert resolve_base_url("openai", "http://option:3/v1") == "http://option:3/v1"


def test_config_permission_rules_apply_to_runs(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An allow rule in the config file lets a write run with no --allow-write; a deny rule there
    refuses it even when the command line allows writing."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    call = {
        "type": "tool_use",
        "id": "w1",
        "name": "write_file",
        "input": {"path": "docs/a.md", "content": "x"},
    }
    turns: list[dict[str, Any]] = [
        {"stop_reason": "tool_use", "content": [call], "usage": {}},
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": "ok"}], "usage": {}},
    ]
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": turns}))
    home.mkdir()
    config_path().write_text(json.dumps({"permissions": {"allow": ["write_file:docs/*"]}}))
    run_answer(workspace, capsys, "--model", f"scripted:{script}")
    assert (workspace / "docs" / "a.md").read_text() == "x"

    (workspace / "docs" / "a.md").unlink()
    config_path().write_text(json.dumps({"permissions": {"deny": ["write_file:docs/*"]}}))
    run_answer(workspace, capsys, "--model", f"scripted:{script}", "--allow-write")
    assert not (workspace / "docs" / "a.md").exists()


def test_keys_are_stored_0600_never_printed_and_listed_by_name(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    assert main(["keys", "set", "openai"]) == 0
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert stat.S_IMODE(os.stat(keys_path()).st_mode) == 0o600
    assert json.loads(keys_path().read_text()) == {"openai": SECRET}
    assert main(["keys", "list"]) == 0
    assert capsys.readouterr().out.strip() == "openai"
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["keys", "set", "anthropic"]) == 2
    assert "empty" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse: not a known name
        main(["keys", "set", "mistral"])
    assert exited.value.code == 2
    capsys.readouterr()
    assert main(["keys", "remove", "openai"]) == 0
    assert stored_key("openai") is None


def test_adapters_use_a_stored_key_only_without_the_env_var_and_only_for_their_own_api(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_key("openai", SECRET)
    set_key("anthropic", SECRET + "-a")

    def key_of(model: OpenAIChatModel | AnthropicModel) -> str | None:
        key = model._client.api_key
        asyncio.run(model.aclose())
        return key

    assert key_of(OpenAIChatModel("gpt-4o-mini")) == SECRET
    # A server given by URL never receives the key stored for OpenAI.
    assert key_of(OpenAIChatModel("qwen", base_url="http://127.0.0.1:9/v1")) != SECRET
    assert key_of(AnthropicModel("claude-sonnet-4-5")) == SECRET + "-a"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    assert key_of(OpenAIChatModel("gpt-4o-mini")) == "sk-from-env"


def test_chat_outside_a_terminal_says_to_use_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat"]) == 2  # stdin is not a terminal under pytest
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tinyharness run" in err
