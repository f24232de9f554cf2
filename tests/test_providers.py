"""Provider names (``--model ollama:NAME``, ``groq:NAME``...): where requests go, which key they
carry, what a wrong or unreachable provider says, on the real CLI. The last test runs the real
llama.cpp server standing in for Ollama, reached as Ollama users reach theirs (``OLLAMA_HOST``)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.cli import apply_settings, build_parser, main
from tinyharness.errors import ConfigError
from tinyharness.models.anthropic_messages import AnthropicModel
from tinyharness.models.factory import load_model
from tinyharness.models.local import LocalServer
from tinyharness.models.openai_chat import OpenAIChatModel
from tinyharness.models.providers import ANTHROPIC, OPENAI, PLACEHOLDER_KEY, PROVIDERS, origin_of
from tinyharness.settings import config_path, set_key

SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_AbCdEf"
# The contract in SPEC.md, plus a running llama.cpp server.
OPENAI_COMPATIBLE = (
    "ollama",
    "lmstudio",
    "vllm",
    "openrouter",
    "groq",
    "gemini",
    "deepseek",
    "mistral",
    "together",
    "llamacpp",
)
KEY_VARIABLES = [
    name for p in PROVIDERS.values() for name in (*p.key_env, *p.url_variables, p.token_env) if name
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key or URL of the machine running the tests leaks into them."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def opened(spec: str, **kw: Any) -> tuple[str, str]:
    """The base URL and the key the model's SDK client was built with."""
    model = load_model(spec, **kw)
    assert isinstance(model, OpenAIChatModel | AnthropicModel)
    client: Any = model._client
    url, key = str(client.base_url), client.api_key
    asyncio.run(model.aclose())
    return url, key


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- where requests go --------------------------------------------------------------------------


@pytest.mark.parametrize("name", OPENAI_COMPATIBLE)
def test_each_provider_name_is_the_openai_adapter_at_its_default_url(name: str) -> None:
    provider = PROVIDERS[name]
    assert provider.wire == "openai"
    url, key = opened(f"{name}:some-model", api_key="k")
    assert url.rstrip("/") == provider.base_url.rstrip("/")
    assert key == "k"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1:11435", "http://127.0.0.1:11435/v1/"),
        ("0.0.0.0", "http://0.0.0.0/v1/"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1/"),
        ("https://ollama.example.com/", "https://ollama.example.com/v1/"),
        ("http://gpu-box:11434/v1", "http://gpu-box:11434/v1/"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(monkeypatch: pytest.MonkeyPatch, host: str, url: str) -> None:
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert opened("ollama:qwen2.5")[0] == url


def test_base_url_wins_over_the_variable_and_the_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps({"base_urls": {"ollama": "http://from-config:1/v1"}}))

    def resolved(*words: str) -> str | None:
        args = build_parser().parse_args(["run", "--model", "ollama:qwen2.5", *words, "task"])
        apply_settings(args)
        return str(args.base_url)

    assert resolved() == "http://from-config:1/v1"
    monkeypatch.setenv("OLLAMA_HOST", "from-env:2")
    assert resolved() == "http://from-env:2/v1"
    assert resolved("--base-url", "http://from-option:3/v1") == "http://from-option:3/v1"


# --- which key ------------------------------------------------------------------------------------


def test_a_server_you_run_never_gets_the_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI SDK reads OPENAI_API_KEY by itself; Ollama must not receive it."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    set_key("openai", SECRET)
    assert opened("ollama:qwen2.5")[1] == PLACEHOLDER_KEY
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-key")
    assert opened("ollama:qwen2.5")[1] == "ollama-key"


def test_a_hosted_provider_takes_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert opened("gemini:gemini-2.0-flash")[1] == "g-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")  # the first variable wins
    assert opened("gemini:gemini-2.0-flash")[1] == "gemini-key"


def test_a_hosted_provider_without_a_key_says_which_variable_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="GROQ_API_KEY"):
        load_model("groq:llama-3.3-70b-versatile")
    code = main(["run", "--model", "openrouter:x", "--workspace", str(tmp_path), "--no-log", "task"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "set OPENROUTER_API_KEY" in err


def test_a_hosted_provider_pointed_elsewhere_needs_no_key() -> None:
    """A proxy or gateway of the user's own, given by --base-url."""
    assert opened("groq:x", base_url="http://127.0.0.1:9/v1")[1] == PLACEHOLDER_KEY


OFFICIAL = ["https://api.openai.com/v1", "https://API.OpenAI.com:443/v1/", "https://api.openai.com"]
NOT_OFFICIAL = [
    "http://api.openai.com/v1",  # not over TLS
    "https://api.openai.com:8443/v1",
    "https://api.openai.com.evil.example/v1",
    "https://evil.example/api.openai.com/v1",
    "https://api.openai.com@evil.example/v1",
    "https://openai.com/v1",
]


@pytest.mark.parametrize("url", OFFICIAL)
def test_a_stored_key_goes_to_the_providers_exact_origin(url: str) -> None:
    set_key("openai", SECRET)
    assert opened("openai:gpt-4o-mini", base_url=url)[1] == SECRET


@pytest.mark.parametrize("url", NOT_OFFICIAL)
def test_a_stored_key_never_goes_anywhere_else(url: str) -> None:
    set_key("openai", SECRET)
    assert opened("openai:gpt-4o-mini", base_url=url)[1] != SECRET


@given(
    scheme=st.sampled_from(["http", "https"]),
    host=st.from_regex(r"[a-z0-9.-]{1,30}", fullmatch=True),
    port=st.none() | st.integers(1, 65535),
)
def test_only_the_declared_origin_is_official(scheme: str, host: str, port: int | None) -> None:
    url = f"{scheme}://{host}{f':{port}' if port else ''}/v1"
    for provider in (OPENAI, ANTHROPIC, *PROVIDERS.values()):
        if provider.is_official(url):
            assert origin_of(url) == origin_of(provider.origin)
            assert (scheme, host) == ("https", origin_of(provider.origin)[1]) and port in (None, 443)


def test_every_hosted_provider_declares_an_https_origin_its_url_is_on() -> None:
    for provider in PROVIDERS.values():
        if provider.hosted:
            assert provider.origin.startswith("https://") and provider.origin.count("/") == 2
            assert provider.is_official(provider.base_url)
        else:
            assert not provider.is_official(provider.base_url)


def test_an_adapter_refuses_a_provider_of_the_other_wire() -> None:
    with pytest.raises(ConfigError, match="anthropic wire"):
        OpenAIChatModel("x", provider=ANTHROPIC, api_key="k")


def test_anthropic_auth_token_is_left_to_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "bearer-token")
    model = AnthropicModel("claude-sonnet-4-5")
    assert model._client.auth_token == "bearer-token" and model._client.api_key is None
    asyncio.run(model.aclose())


# --- wrong or unreachable ------------------------------------------------------------------------


def test_an_unknown_provider_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--model", "olama:qwen2.5", "--workspace", str(tmp_path), "--no-log", "task"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'olama'" in err and "ollama" in err and "tinyharness models providers" in err


def test_an_unreachable_server_stops_the_run_saying_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    words = ["run", "--model", "ollama:qwen2.5", "--workspace", str(tmp_path), "--no-log", "--quiet"]
    code = main([*words, "--max-retries", "0", "--no-memory", "task"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert f"cannot reach http://127.0.0.1:{port}/v1" in err and "OLLAMA_HOST" in err


def test_the_default_ollama_url_says_to_start_ollama() -> None:
    advice = PROVIDERS["ollama"].unreachable_advice("http://localhost:11434/v1/")
    assert "ollama serve" in advice and "OLLAMA_HOST" in advice


def test_models_providers_lists_every_name_and_never_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    assert main(["models", "providers"]) == 0
    out = capsys.readouterr().out
    for name in (*OPENAI_COMPATIBLE, "openai", "anthropic"):
        assert f"{name}:MODEL" in out
        assert PROVIDERS[name].base_url in out
    assert SECRET not in out
    assert "GROQ_API_KEY (set)" in out and "MISTRAL_API_KEY (not set)" in out


# --- the real server -----------------------------------------------------------------------------


@pytest.mark.local_model
def test_ollama_name_reaches_a_local_openai_compatible_server(
    local_server: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The embedded llama.cpp server stands in for Ollama: found through OLLAMA_HOST in Ollama's
    host:port form, its key through OLLAMA_API_KEY. Then --base-url wins over OLLAMA_HOST, and
    without the key the server's refusal names the variable."""
    monkeypatch.setenv("OLLAMA_HOST", local_server.base_url.removeprefix("http://"))
    monkeypatch.setenv("OLLAMA_API_KEY", local_server.api_key)
    words = ["run", "--model", "ollama:smollm2", "--workspace", str(tmp_path), "--no-log", "--no-memory"]
    words += ["--tool-mode", "json", "--max-iterations", "1", "--max-output-tokens", "32", "--quiet"]
    main([*words, "--output-format", "json", "Say hello."])
    result = json.loads(capsys.readouterr().out)
    assert result["stop"] != "error", result["detail"]
    assert result["model_calls"] >= 1 and result["usage"]["input_tokens"] > 0  # the server's own count

    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")
    with_url = [*words, "--base-url", f"{local_server.base_url}/v1", "--output-format", "json"]
    main([*with_url, "--max-retries", "0", "Say hello."])
    assert json.loads(capsys.readouterr().out)["stop"] != "error"

    monkeypatch.delenv("OLLAMA_API_KEY")
    code = main([*with_url, "--max-retries", "0", "Say hello."])
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["stop"] == "error"
    assert "OLLAMA_API_KEY" in captured.err and "401" in captured.err


def test_a_provider_name_can_be_the_default_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "default", "ollama:qwen2.5-coder:7b"]) == 0
    assert json.loads(config_path().read_text())["default_model"] == "ollama:qwen2.5-coder:7b"
    assert main(["models", "default", "olama:qwen2.5"]) == 2
    assert "PROVIDER:NAME" in capsys.readouterr().err
