"""OpenTelemetry spans from the event stream (the optional ``otel`` extra), over scripted runs
exported to the SDK's in-memory exporter: names, parents, GenAI attributes, timings taken from the
events, error statuses, and every span ended even when the run never reaches ``run_end``."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.errors import ConfigError
from tinyharness.events import EventBus, ListSink
from tinyharness.models.scripted import ScriptedModel
from tinyharness.otel import OTelSink, otel_sink_from_env, provider_name, request_model
from tinyharness.tools.base import ToolRegistry, function_tool

SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_AbCdEf"


@function_tool
def echo(word: str) -> str:
    """Say a word back.

    Args:
        word: the word to repeat
    """
    return f"echo:{word}"


@function_tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@function_tool
def big(part: int) -> str:
    """Return a long text.

    Args:
        part: which part
    """
    return f"part {part} " * 500


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": value}],
        "usage": {"input_tokens": 40, "output_tokens": 5},
        **extra,
    }


def calls(*uses: tuple[str, str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses],
        "usage": {"input_tokens": 30, "output_tokens": 8},
        **extra,
    }


class Traced:
    """A scripted agent whose events go to an OTelSink (in-memory exporter) and a ListSink."""

    def __init__(self, responses: list[dict[str, Any]], *, capture: bool = False, **agent: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.sink = OTelSink(self.provider, capture_content=capture)
        self.events = ListSink()
        self.bus = EventBus([self.sink, self.events])
        self.model = ScriptedModel({"responses": responses})
        tools = ToolRegistry([echo, explode, big])
        self.agent = Agent(self.model, tools, events=self.bus, **agent)

    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: (s.start_time or 0, s.name))

    def root(self) -> ReadableSpan:
        (root,) = [s for s in self.spans() if s.parent is None]
        return root

    def children(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.parent is not None]


def ns(event: dict[str, Any]) -> int:
    return int(event["ts"] * 1e9)


def test_a_run_becomes_a_root_span_with_chat_and_tool_children() -> None:
    run = Traced(
        [
            calls(("t1", "echo", {"word": "hi"}), ("t2", "explode", {})),
            text("done"),
        ]
    )
    result = run.agent.run("say hi", session="s-1")
    assert result.ok
    run.sink.close()
    names = sorted(s.name for s in run.spans())
    assert names == [
        "chat scripted",
        "chat scripted",
        "execute_tool echo",
        "execute_tool explode",
        "invoke_agent tinyharness",
    ]
    root = run.root()
    assert root.kind is SpanKind.INTERNAL
    attrs = dict(root.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "tinyharness"
    assert attrs["gen_ai.agent.id"] == run.bus.run_id
    assert attrs["gen_ai.conversation.id"] == "s-1"
    assert attrs["gen_ai.provider.name"] == "scripted"
    assert attrs["gen_ai.usage.input_tokens"] == 70 and attrs["gen_ai.usage.output_tokens"] == 13
    assert attrs["tinyharness.model_calls"] == 2 and attrs["tinyharness.stop"] == "end_turn"
    assert root.status.status_code is StatusCode.UNSET
    for child in run.children():  # one trace, every span a direct child of the run
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
    # Timings come from the events: the run from run_start to run_end.
    start, end = run.events.of_type("run_start")[0], run.events.of_type("run_end")[0]
    assert (root.start_time, root.end_time) == (ns(start), ns(end))


def test_chat_spans_carry_usage_finish_reasons_and_the_context_counter() -> None:
    run = Traced([calls(("t1", "echo", {"word": "hi"})), text("done")])
    run.agent.run("say hi")
    chats = [s for s in run.spans() if s.name.startswith("chat")]
    model_calls = run.events.of_type("model_call")
    assert len(chats) == len(model_calls) == 2
    first, second = (dict(s.attributes or {}) for s in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "scripted"
    assert first["gen_ai.usage.input_tokens"] == 30 and first["gen_ai.usage.output_tokens"] == 8
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert second["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert first["tinyharness.purpose"] == "agent" and first["tinyharness.call"] == 1
    assert first["tinyharness.context.tokens"] == model_calls[0]["tokens"]
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    # A model call starts at the event before it and ends at its model_call event.
    events = run.events.events
    for span, event in zip(chats, model_calls, strict=True):
        before = events[events.index(event) - 1]
        assert (span.start_time, span.end_time) == (ns(before), ns(event))


def test_tool_spans_run_from_call_to_result_and_a_failed_tool_is_an_error() -> None:
    run = Traced([calls(("t1", "echo", {"word": SECRET}), ("t2", "explode", {})), text("done")])
    run.agent.run("go")
    tools = {s.name: s for s in run.spans() if s.name.startswith("execute_tool")}
    ok, failed = tools["execute_tool echo"], tools["execute_tool explode"]
    attrs = dict(ok.attributes or {})
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "echo" and attrs["gen_ai.tool.call.id"] == "t1"
    assert "gen_ai.tool.call.arguments" not in attrs  # content is opt-in
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})["error.type"] == "tool_error"
    calls_, results = run.events.of_type("tool_call"), run.events.of_type("tool_result")
    for span, call_id in ((ok, "t1"), (failed, "t2")):
        (call,) = [e for e in calls_ if e["call_id"] == call_id]
        (result,) = [e for e in results if e["call_id"] == call_id]
        assert (span.start_time, span.end_time) == (ns(call), ns(result))


def test_content_is_recorded_only_on_request_and_redacted() -> None:
    run = Traced([calls(("t1", "echo", {"word": SECRET})), text("done")], capture=True)
    run.agent.run(f"use the key {SECRET}")
    root = dict(run.root().attributes or {})
    assert "use the key [REDACTED:" in str(root["tinyharness.task"]) and root["tinyharness.final"] == "done"
    (tool,) = [s for s in run.spans() if s.name == "execute_tool echo"]
    arguments = dict(tool.attributes or {})["gen_ai.tool.call.arguments"]
    assert "[REDACTED:" in str(arguments)
    for span in run.spans():
        assert SECRET not in repr(dict(span.attributes or {}))


def test_compactions_are_span_events_and_their_model_calls_chat_spans(tmp_path: Any) -> None:
    agent_turns = [calls((f"b{i}", "big", {"part": i}), purpose="agent") for i in range(6)]
    summaries = [text(f"summary {i}", purpose="compact") for i in range(6)]
    bus_sink = ListSink()
    run = Traced([*agent_turns, text("done", purpose="agent"), *summaries])
    run.bus.sinks.append(bus_sink)
    run.agent.context = build_context(
        ContextConfig("summarize", window=3000, ratio=0.5, keep_recent=1, workspace=tmp_path), events=run.bus
    )
    assert run.agent.run("read all parts").ok
    compactions = run.events.of_type("compaction")
    assert compactions, "the script should compact"
    root = run.root()
    marks = [e for e in root.events if e.name == "tinyharness.compaction"]
    assert len(marks) == len(compactions)
    for mark, event in zip(marks, compactions, strict=True):
        attrs = dict(mark.attributes or {})
        assert mark.timestamp == ns(event)
        assert attrs["tokens_before"] == event["tokens_before"]
        assert attrs["tokens_after"] == event["tokens_after"]
        assert attrs["strategy"] == event["strategy"] == "summarize"
    purposes = [
        dict(s.attributes or {})["tinyharness.purpose"] for s in run.spans() if s.name.startswith("chat")
    ]
    compact_calls = [e for e in run.events.of_type("model_call") if e["purpose"] == "compact"]
    assert purposes.count("compact") == len(compact_calls) >= 1
    assert dict(root.attributes or {})["tinyharness.compactions"] == len(compactions)


def test_memory_and_notes_operations_are_span_events() -> None:
    run = Traced([text("done")])
    bus = run.bus
    bus.emit("run_start", task="t", model="local:qwen.gguf", tools=["note"])
    bus.emit("memory_recall", query_chars=4, hits=2, ids=[3, 7])
    bus.emit("tool_call", call_id="n1", name="note", args={"text": "x"})
    bus.emit("notes_write", op="append", chars=12)
    bus.emit("tool_result", call_id="n1", name="note", ok=True, chars=5, truncated=False)
    bus.emit("memory_write", op="add", id=9, previous_id=None, chars=30)
    bus.emit("run_end", stop="end_turn", final="ok", detail="", model_calls=0, compactions=0, usage={})
    root = run.root()
    assert dict(root.attributes or {})["gen_ai.provider.name"] == "llama.cpp"
    assert dict(root.attributes or {})["gen_ai.request.model"] == "qwen.gguf"
    names = [e.name for e in root.events]
    assert names == ["tinyharness.memory_recall", "tinyharness.memory_write"]
    assert dict(root.events[0].attributes or {})["ids"] == (3, 7)
    (tool,) = run.children()
    assert [e.name for e in tool.events] == ["tinyharness.notes_write"]  # written by that tool


def test_a_run_that_stops_early_is_an_error_span() -> None:
    run = Traced(
        [calls(("t1", "echo", {"word": "a"})), text("final words")], config=AgentConfig(max_iterations=1)
    )
    result = run.agent.run("loop")
    assert result.stop == "max_iterations"
    root = run.root()
    assert root.status.status_code is StatusCode.ERROR
    assert dict(root.attributes or {})["error.type"] == "max_iterations"
    assert [e.name for e in root.events] == ["tinyharness.error"]


def test_a_failed_model_request_is_a_failed_chat_span() -> None:
    run = Traced([calls(("t1", "echo", {"word": "a"}))])  # the second request finds no response
    result = run.agent.run("go")
    assert result.stop == "error"
    chats = [s for s in run.spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    assert chats[0].status.status_code is StatusCode.UNSET
    assert chats[1].status.status_code is StatusCode.ERROR
    assert dict(chats[1].attributes or {})["error.type"] == "ScriptError"
    assert run.root().status.status_code is StatusCode.ERROR


def test_a_killed_run_has_every_span_ended_by_close() -> None:
    run = Traced([text("unused")])
    bus = run.bus
    bus.emit("run_start", task="t", model="scripted", tools=["echo"])
    bus.emit("model_call", call=1, purpose="agent", stop_reason="tool_use", usage={}, tokens=10, messages=1)
    bus.emit("tool_call", call_id="t1", name="echo", args={"word": "a"})
    assert [s.name for s in run.spans()] == ["chat scripted"]  # the rest is still open
    run.sink.close()
    run.sink.close()  # twice is harmless
    spans = {s.name: s for s in run.spans()}
    assert set(spans) == {"invoke_agent tinyharness", "chat scripted", "execute_tool echo"}
    for name in ("invoke_agent tinyharness", "execute_tool echo"):
        assert spans[name].end_time is not None
        assert spans[name].status.status_code is StatusCode.ERROR
        assert dict(spans[name].attributes or {})["tinyharness.interrupted"] is True
    parent = spans["execute_tool echo"].parent
    assert parent is not None and parent.span_id == spans["invoke_agent tinyharness"].context.span_id
    bus.emit("run_end", stop="end_turn")  # events after close are ignored
    assert len(run.spans()) == 3


def test_two_runs_on_one_sink_are_two_traces() -> None:
    run = Traced([text("one"), text("two")])
    run.agent.run("first")
    run.agent.events = EventBus([run.sink, run.events])  # a new run id, as a resumed session has
    run.agent.run("second")
    roots = [s for s in run.spans() if s.parent is None]
    assert len(roots) == 2 and roots[0].context.trace_id != roots[1].context.trace_id


def test_helpers_name_providers_and_models() -> None:
    assert provider_name("local:qwen2.5.gguf") == "llama.cpp"
    assert provider_name("openai:gpt-4o") == "openai" and provider_name("gpt-4o-mini") == "openai"
    assert provider_name("claude-sonnet-4") == "anthropic"
    assert provider_name("mystery") == "_OTHER"
    assert request_model("local:qwen.gguf") == "qwen.gguf" and request_model("gpt-4o") == "gpt-4o"


def test_missing_opentelemetry_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ConfigError, match=r"tinyharness\[otel\]"):
        OTelSink()


def test_from_env_prints_spans_on_stderr_without_an_endpoint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    sink = otel_sink_from_env()
    bus = EventBus([sink])
    bus.emit("run_start", task="t", model="scripted", tools=[])
    bus.emit("run_end", stop="end_turn", final="", detail="", model_calls=0, compactions=0, usage={})
    sink.close()
    out, err = capsys.readouterr()
    assert out == ""  # stdout is the answer's
    assert '"invoke_agent tinyharness"' in err and '"service.name": "tinyharness"' in err


def test_from_env_with_an_endpoint_needs_the_otlp_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(ConfigError, match="opentelemetry-exporter-otlp"):
        otel_sink_from_env()
