"""The local model and model strings.

Tests marked ``local_model`` run both SDK adapters against ONE real llama.cpp server (the
session fixture ``local_server``, 127.0.0.1 only, n_ctx 1024): OpenAI Chat Completions in
native and JSON tool mode, and Anthropic Messages on the same server's ``/v1/messages``.
Replies use temperature 0 where the adapter allows it, so they are repeatable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tinyharness.errors import ConfigError, ContextLengthExceeded, ModelError
from tinyharness.messages import Message, TextBlock, ToolUseBlock
from tinyharness.models import local
from tinyharness.models.anthropic_messages import AnthropicModel
from tinyharness.models.base import Model, ModelRequest, ModelResponse, ToolSpec
from tinyharness.models.factory import load_model
from tinyharness.models.json_mode import action_schema
from tinyharness.models.local import LocalModel, LocalServer
from tinyharness.models.openai_chat import OpenAIChatModel, json_schema_format
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "enum": ["Paris", "London", "Tokyo"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
ASK_WEATHER = (Message.user("What is the weather in Paris?"),)


def run(model: Model, request: ModelRequest) -> ModelResponse:
    async def go() -> ModelResponse:
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(go())


# --- model strings (no server) ----------------------------------------------------------------


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "ollama: ", "scripted:"])
def test_bad_model_strings_list_the_valid_forms(spec: str) -> None:
    with pytest.raises(
        ConfigError, match=r"valid forms: openai:NAME, anthropic:NAME, PROVIDER:NAME .*, local"
    ):
        load_model(spec)


def test_an_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown model provider 'olama'.*ollama.*models providers"):
        load_model("olama:llama3")


def test_model_strings_pick_the_adapter_and_tool_mode() -> None:
    openai_model = load_model("openai:qwen2.5", base_url="http://127.0.0.1:9/v1")
    assert isinstance(openai_model, OpenAIChatModel)
    assert (openai_model.model, openai_model.tool_mode) == ("qwen2.5", "native")
    json_model = load_model(
        "anthropic:claude-x", base_url="http://127.0.0.1:9", tool_mode="json", context_window=5000
    )
    assert isinstance(json_model, AnthropicModel)
    assert (json_model.tool_mode, json_model.context_window) == ("json", 5000)
    with pytest.raises(ConfigError, match="tool mode"):
        load_model("openai:x", base_url="http://127.0.0.1:9/v1", tool_mode="xml")
    for model in (openai_model, json_model):
        asyncio.run(model.aclose())


def test_scripted_model_string(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"responses": []}', encoding="utf-8")
    assert isinstance(load_model(f"scripted:{script}"), ScriptedModel)


def test_without_any_local_model_the_default_is_named_with_its_fetch_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After ``pip install`` neither the default model nor the development fallback is there:
    the message names the default, not the fallback's package."""
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == local.DEFAULT_GGUF_PACKAGE else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(
        ConfigError, match=r"qwen2\.5-coder-0\.5b is not installed .*`tinyharness models fetch`"
    ):
        load_model("local")


def test_missing_or_broken_gguf_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        LocalServer(tmp_path / "nope.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    with pytest.raises(ModelError, match="could not load"):
        LocalServer(broken, n_ctx=64).start()


# --- the real server --------------------------------------------------------------------------

needs_server = pytest.mark.local_model


@needs_server
def test_server_is_loopback_keyed_and_knows_its_window(local_server: LocalServer) -> None:
    assert local_server.base_url.startswith("http://127.0.0.1:")
    assert local_server.n_ctx == 1024  # read back from /props
    with pytest.raises(urllib.error.HTTPError) as refused:  # no key, no service
        urllib.request.urlopen(f"{local_server.base_url}/props", timeout=5)
    assert refused.value.code == 401
    refused.value.close()


@needs_server
def test_count_tokens_is_exact(local_server: LocalServer) -> None:
    model = LocalModel(local_server, owns_server=False)
    assert model.count_tokens("") == 0
    assert model.count_tokens("Hello") == 1
    assert model.count_tokens("word " * 100) == 101  # " word" is one token, the first "word" too
    assert model.context_window == 1024
    asyncio.run(model.aclose())
    assert local_server.running  # a model that does not own the server leaves it running


@needs_server
def test_openai_native_plain_reply(local_server: LocalServer) -> None:
    model = OpenAIChatModel("local", client=local_server.openai_client(), temperature=0)
    reply = run(model, ModelRequest((Message.user("Say hello."),), max_tokens=12))
    assert reply.message.role == "assistant" and reply.message.text.strip()
    assert reply.stop_reason in ("end_turn", "max_tokens")
    assert reply.usage.input_tokens >= local_server.count_tokens("Say hello.")
    assert 0 < reply.usage.output_tokens <= 12


@needs_server
def test_json_mode_tool_call_validates_against_the_tool_schema(local_server: LocalServer) -> None:
    model = LocalModel(local_server, owns_server=False, temperature=0)  # json mode by default
    assert model.tool_mode == "json"
    reply = run(model, ModelRequest(ASK_WEATHER, tools=(WEATHER,), max_tokens=48))
    assert reply.stop_reason == "tool_use"
    (call,) = reply.message.content
    assert isinstance(call, ToolUseBlock)
    assert (call.id, call.name) == ("call_1", "get_weather")
    jsonschema.validate(call.input, WEATHER.input_schema)
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


@needs_server
def test_a_side_request_keeps_the_agents_prompt_cache(local_server: LocalServer) -> None:
    """The agent's history stays cached across a side request (a file's note asked with only
    that file in view, a summary): the server keeps served prompts in memory, so the next agent
    request does not process its whole history again. ``cached_tokens`` reports it."""
    model = LocalModel(local_server, owns_server=False, temperature=0)
    history = (Message.user("Remember these words: " + "apple pear plum " * 120),)
    agent = ModelRequest(history, max_tokens=2)
    side = ModelRequest((Message.user("Say yes."),), system="You note files.", purpose="flush", max_tokens=2)
    more = ModelRequest((*history, Message.assistant("ok"), Message.user("And more?")), max_tokens=2)

    async def go() -> list[ModelResponse]:
        try:
            return [await model.complete(r) for r in (agent, side, agent, more)]
        finally:
            await model.aclose()

    first, side_reply, _, last = asyncio.run(go())
    assert first.usage.input_tokens > 300
    assert side_reply.usage.cached_tokens < 20  # the side request shares only the template's start
    assert last.usage.cached_tokens >= first.usage.input_tokens - 8


@needs_server
def test_json_mode_final_only_yields_text(local_server: LocalServer) -> None:
    model = LocalModel(local_server, owns_server=False, temperature=0)
    # Room for the envelope: with the tools' protocol kept (a stable prefix), the model writes
    # the action indented, and 24 tokens ended inside '"arguments":'.
    reply = run(model, ModelRequest(ASK_WEATHER, tools=(WEATHER,), final_only=True, max_tokens=64))
    assert reply.message.tool_uses == []
    (text,) = reply.message.content
    assert isinstance(text, TextBlock) and text.text.strip()
    assert not text.text.lstrip().startswith("{")  # the answer, not the JSON envelope


@needs_server
def test_builtin_tool_schemas_are_accepted_by_the_server_grammar(
    local_server: LocalServer, tmp_path: Path
) -> None:
    # llama.cpp rejects a schema its grammar compiler cannot handle with HTTP 400; the
    # xllamacpp build hands schemas to llguidance unchecked, so only the server can tell.
    schema = action_schema(builtin_tools(tmp_path).specs)
    assert len(schema["anyOf"]) == len(builtin_tools(tmp_path).specs) + 1

    async def go() -> Any:
        async with local_server.openai_client(max_retries=0) as client:
            return await client.chat.completions.create(
                model="local",
                messages=[{"role": "user", "content": "hi"}],
                response_format=json_schema_format("action", schema),  # type: ignore[arg-type]
                max_tokens=2,
            )

    reply = asyncio.run(go())
    assert reply.choices[0].finish_reason == "length"


@needs_server
def test_anthropic_messages_on_the_local_server(local_server: LocalServer) -> None:
    model = AnthropicModel("local", client=local_server.anthropic_client())
    reply = run(model, ModelRequest(ASK_WEATHER, tools=(WEATHER,), final_only=True, max_tokens=12))
    assert reply.message.text.strip() and reply.message.tool_uses == []
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


@needs_server
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_context_overflow_is_context_length_exceeded(local_server: LocalServer, wire: str) -> None:
    model: Model
    if wire == "openai":
        model = OpenAIChatModel("local", client=local_server.openai_client())
    else:
        model = AnthropicModel("local", client=local_server.anthropic_client())
    too_long = (Message.user("word " * 1500),)  # 1500+ tokens > n_ctx 1024
    with pytest.raises(ContextLengthExceeded, match="exceeds the available context size"):
        run(model, ModelRequest(too_long, max_tokens=8))


@needs_server
def test_load_model_local_starts_and_stops_its_own_server() -> None:
    model = load_model("local", context_window=256)
    assert isinstance(model, LocalModel)
    server = model.server
    assert model.context_window == 256 and server.running
    health = f"{server.base_url}/health"
    with urllib.request.urlopen(health, timeout=5) as answer:
        assert answer.status == 200
    asyncio.run(model.aclose())
    assert not server.running
    with pytest.raises(urllib.error.URLError):  # the port is closed
        urllib.request.urlopen(health, timeout=5)
    with pytest.raises(ModelError, match="not running"):
        server.count_tokens("hello")


# --- a reply slower than the timeout, still coming ----------------------------------------------


class _SlowServer:
    """Stands in for the llama.cpp server where a test needs a reply that keeps coming, a word
    every 0.1 s, for longer than the client's timeout in total (a real model on a busy machine;
    the real server cannot be slowed on cue). It answers streamed and non-streamed requests."""

    WORDS = tuple(f"w{i} " for i in range(25))

    def __init__(self) -> None:
        import http.server
        import json as _json
        import threading
        import time as _time

        words = self.WORDS

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = _json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                base = {"id": "x", "created": 0, "model": "local"}
                if not body.get("stream"):
                    _time.sleep(0.1 * len(words))
                    reply = {
                        **base,
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "".join(words)},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": len(words), "total_tokens": 30},
                    }
                    data = _json.dumps(reply).encode()
                    try:  # the client gave up at its timeout: nobody reads this
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunk = {**base, "object": "chat.completion.chunk"}
                for i, word in enumerate(words):
                    _time.sleep(0.1)
                    delta = {"role": "assistant", "content": word} if i == 0 else {"content": word}
                    event = {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                    self.wfile.write(f"data: {_json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                usage = {**chunk, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 25}}
                for event in (end, usage):
                    self.wfile.write(f"data: {_json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.model_path = Path("slow.gguf")
        self.n_ctx = 1024

    def start(self) -> _SlowServer:
        return self

    def openai_client(self, timeout: float, max_retries: int) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key="k",
            base_url=f"http://127.0.0.1:{self.httpd.server_address[1]}/v1",
            timeout=timeout,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(trust_env=False),
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_reply_that_keeps_coming_is_not_cut_by_the_timeout() -> None:
    """The timeout bounds the server's silence, not the whole reply: a summary arriving at a few
    tokens a second on a busy machine was cut at the timeout and asked again from the start,
    three times (15 minutes lost in one run). Asked whole, the same reply still times out."""
    server = _SlowServer()
    try:
        request = ModelRequest((Message.user("Summarize."),), max_tokens=64)
        model = LocalModel(server, timeout=1.0, max_retries=0, owns_server=False)  # type: ignore[arg-type]
        reply = run(model, request)
        assert reply.message.text == "".join(_SlowServer.WORDS)
        whole = OpenAIChatModel("local", client=server.openai_client(1.0, 0))
        with pytest.raises(ModelError, match="in time"):
            run(whole, request)
    finally:
        server.close()
