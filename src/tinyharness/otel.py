"""OpenTelemetry spans for runs, following the GenAI semantic conventions (optional ``otel`` extra).

``OTelSink`` is an ``EventSink``: it turns the event stream into spans after the fact, with
explicit start and end times taken from the events' timestamps.

- one root span per run, ``invoke_agent {agent}`` (``gen_ai.operation.name=invoke_agent``), from
  ``run_start`` to ``run_end``, with the totals of the run;
- one child span per model call, ``chat {model}`` (``gen_ai.operation.name=chat``). The
  ``model_call`` event is emitted when the call has returned, so the span starts at the previous
  event of the run and ends at the ``model_call`` event. A ``ModelError`` (an ``error`` event
  with ``kind``) becomes a failed ``chat`` span the same way;
- one child span per tool execution, ``execute_tool {name}``, from its ``tool_call`` event to
  its ``tool_result`` event, with an error status when the tool failed;
- span events (``tinyharness.compaction``, ``tinyharness.memory_write``, ...) for everything
  else: compactions, memory and notes operations, errors, context warnings.

A run killed between two events never sends ``run_end``: ``close()`` ends whatever is still open
(marked ``tinyharness.interrupted``), so every started span is ended and exported. Strings are
redacted like every other sink's output; the task, the final answer and tool arguments are
recorded only with ``capture_content=True`` (the conventions make content opt-in).

The OpenTelemetry API is imported only when a sink is made: without the extra, a ``ConfigError``
says to install ``tinyharness[otel]``.

May import: ``errors``, ``events`` and ``__version__``. Nothing else of the package.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .events import Event, redact_value

INSTALL_HINT = "install the otel extra: pip install 'tinyharness[otel]'"
AGENT_NAME = "tinyharness"
MAX_TEXT = 1000  # characters of a string attribute (task, final answer, messages, arguments)

# GenAI semantic convention names (opentelemetry-semantic-conventions, gen_ai_attributes).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
ERROR_TYPE = "error.type"

# Events that open or close spans; every other event type becomes a span event.
_SPAN_EVENTS = ("run_start", "model_call", "tool_call", "tool_result", "run_end")


def _require_otel() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigError(f"OpenTelemetry is not installed; {INSTALL_HINT}") from None
    return trace


def _ns(ts: Any) -> int:
    """Event timestamp (seconds since the epoch) in nanoseconds, as OpenTelemetry wants."""
    return int(float(ts) * 1e9)


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = str(redact_value(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _attr(value: Any) -> Any:
    """An OpenTelemetry attribute value (str, bool, int, float or a list of one of them), or None
    when ``value`` has no faithful scalar form (then it is written as redacted JSON text)."""
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list | tuple) and value:
        kinds = {type(v) for v in value}
        if len(kinds) == 1 and kinds <= {str, int, float, bool}:
            return [_text(v) if isinstance(v, str) else v for v in value]
    return _text(value)


def _attrs(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        converted = _attr(value)
        if converted is not None:
            out[key] = converted
    return out


def provider_name(model: str) -> str:
    """``gen_ai.provider.name`` for a model spec (``openai:gpt-4o``) or a model's name
    (``local:qwen.gguf``, ``claude-...``, ``gpt-4o-mini``), as well as it can be told."""
    kind, sep, _rest = model.partition(":")
    if sep and kind in ("openai", "anthropic", "scripted"):
        return kind
    if kind == "local" or model.startswith("local:"):
        return "llama.cpp"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai"
    if model.startswith("scripted"):
        return "scripted"
    return "_OTHER"


def request_model(model: str) -> str:
    """``gen_ai.request.model``: the model's name without a ``kind:`` prefix."""
    kind, sep, rest = model.partition(":")
    return rest if sep and kind in ("local", "openai", "anthropic", "scripted") and rest else model


@dataclass
class _Run:
    root: Any
    context: Any
    model: str
    provider: str
    last_ns: int
    tools: dict[str, Any] = field(default_factory=dict)  # call_id -> open execute_tool span
    session: str | None = None


class OTelSink:
    """An ``EventSink`` that records runs as OpenTelemetry spans (see the module docstring).

    ``tracer_provider``: where spans go; None uses the global one (``trace.set_tracer_provider``).
    ``provider``: ``gen_ai.provider.name``; None guesses it from the model's name.
    ``owns_provider``: ``close()`` also shuts the provider down (flushing its exporters).
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        agent_name: str = AGENT_NAME,
        provider: str | None = None,
        capture_content: bool = False,
        owns_provider: bool = False,
    ) -> None:
        trace = _require_otel()
        from opentelemetry.trace import SpanKind, Status, StatusCode

        from . import __version__

        self._trace = trace
        self._kind = SpanKind
        self._status = Status
        self._code = StatusCode
        self.tracer_provider = tracer_provider
        self.tracer = trace.get_tracer("tinyharness", __version__, tracer_provider=tracer_provider)
        self.agent_name = agent_name
        self.provider = provider
        self.capture_content = capture_content
        self.owns_provider = owns_provider
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()  # tools may emit events from worker threads
        self._closed = False

    # --- the sink -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        with self._lock:
            if self._closed:
                return
            kind = event.get("type")
            run_id = str(event.get("run_id", ""))
            now = _ns(event.get("ts", time.time()))
            if kind == "run_start":
                self._end_run(run_id, now, interrupted=True)  # a run_start without run_end before
                self._runs[run_id] = self._start_run(event, now)
                return
            run = self._runs.get(run_id) or self._adopt(run_id, event, now)
            if kind == "model_call":
                self._model_call(run, event, now)
            elif kind == "tool_call":
                self._tool_call(run, event, now)
            elif kind == "tool_result":
                self._tool_result(run, event, now)
            elif kind == "run_end":
                self._finish_root(run, event)
                self._end_run(run_id, now)
                return
            else:
                self._span_event(run, event, now)
            run.last_ns = max(run.last_ns, now)

    def close(self) -> None:
        """End every span still open (a run killed or crashed between events) and, when the sink
        owns its tracer provider, flush and shut it down. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            now = time.time_ns()
            for run_id in list(self._runs):
                self._end_run(run_id, now, interrupted=True)
        if self.owns_provider and self.tracer_provider is not None:
            shutdown = getattr(self.tracer_provider, "shutdown", None)
            if shutdown is not None:
                shutdown()

    # --- spans --------------------------------------------------------------------------------

    def _start_run(self, event: Event, now: int) -> _Run:
        model = str(event.get("model") or "unknown")
        provider = self.provider or provider_name(model)
        session = event.get("session") or None
        attrs: dict[str, Any] = {
            OPERATION: "invoke_agent",
            AGENT: self.agent_name,
            AGENT_ID: event.get("run_id"),
            PROVIDER: provider,
            REQUEST_MODEL: request_model(model),
            CONVERSATION: session,
            "tinyharness.run_id": event.get("run_id"),
            "tinyharness.tools": list(event.get("tools") or []) or None,
            "tinyharness.context_window": event.get("context_window"),
            "tinyharness.compact_at": event.get("compact_at"),
            "tinyharness.strategy": event.get("strategy"),
            "tinyharness.resumed": event.get("task") is None or None,
        }
        if self.capture_content and event.get("task") is not None:
            attrs["tinyharness.task"] = event.get("task")
        # A sub-agent's run nests under the task call of its parent that started it, one trace.
        parent = self._runs.get(str(event.get("parent_run_id") or ""))
        caller = parent.tools.get(str(event.get("call_id") or "")) if parent is not None else None
        root = self.tracer.start_span(
            f"invoke_agent {self.agent_name}",
            context=self._trace.set_span_in_context(caller) if caller is not None else None,
            kind=self._kind.INTERNAL,
            attributes=_attrs(attrs),
            start_time=now,
        )
        context = self._trace.set_span_in_context(root)
        return _Run(root, context, model, provider, now, session=session)

    def _adopt(self, run_id: str, event: Event, now: int) -> _Run:
        """A run whose run_start this sink never saw (attached late): a root span from here."""
        run = self._start_run({"run_id": run_id, "task": ""}, now)
        run.root.set_attribute("tinyharness.partial", True)
        self._runs[run_id] = run
        return run

    def _child(self, run: _Run, name: str, kind: Any, attrs: dict[str, Any], start: int) -> Any:
        attrs[CONVERSATION] = run.session
        return self.tracer.start_span(
            name, context=run.context, kind=kind, attributes=_attrs(attrs), start_time=start
        )

    def _model_call(self, run: _Run, event: Event, now: int) -> None:
        usage = event.get("usage") or {}
        stop_reason = event.get("stop_reason")
        attrs = {
            OPERATION: "chat",
            PROVIDER: run.provider,
            REQUEST_MODEL: request_model(run.model),
            INPUT_TOKENS: usage.get("input_tokens"),
            OUTPUT_TOKENS: usage.get("output_tokens"),
            FINISH_REASONS: [str(stop_reason)] if stop_reason else None,
            "tinyharness.call": event.get("call"),
            "tinyharness.purpose": event.get("purpose"),
            "tinyharness.context.tokens": event.get("tokens"),
            "tinyharness.request.messages": event.get("messages"),
            "tinyharness.prefix_share": event.get("prefix_share"),
        }
        span = self._child(run, f"chat {request_model(run.model)}", self._kind.CLIENT, attrs, run.last_ns)
        span.end(end_time=now)

    def _model_error(self, run: _Run, event: Event, now: int) -> None:
        """A model request that failed after the adapter's retries: a failed chat span."""
        attrs = {OPERATION: "chat", PROVIDER: run.provider, REQUEST_MODEL: request_model(run.model)}
        attrs[ERROR_TYPE] = str(event.get("kind"))
        span = self._child(run, f"chat {request_model(run.model)}", self._kind.CLIENT, attrs, run.last_ns)
        span.set_status(self._status(self._code.ERROR, _text(event.get("message", ""), 200)))
        span.end(end_time=now)

    def _tool_call(self, run: _Run, event: Event, now: int) -> None:
        name = str(event.get("name", "tool"))
        call_id = str(event.get("call_id", ""))
        attrs: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            "tinyharness.tool.recovered": event.get("recovered"),
        }
        if self.capture_content and "args" in event:
            attrs[TOOL_ARGUMENTS] = _text(event["args"])
        previous = run.tools.pop(call_id, None)
        if previous is not None:  # the same id twice without a result: close the first
            self._end_tool(previous, now, interrupted=True)
        run.tools[call_id] = self._child(run, f"execute_tool {name}", self._kind.INTERNAL, attrs, now)

    def _tool_result(self, run: _Run, event: Event, now: int) -> None:
        call_id = str(event.get("call_id", ""))
        span = run.tools.pop(call_id, None)
        if span is None:  # its tool_call came before this sink was attached
            self._tool_call(run, {**event, "type": "tool_call"}, now)
            span = run.tools.pop(call_id)
        result = {
            "tinyharness.tool.result_chars": event.get("chars"),
            "tinyharness.tool.truncated": event.get("truncated"),
        }
        span.set_attributes(_attrs(result))
        if event.get("ok") is False:
            span.set_attribute(ERROR_TYPE, "tool_error")
            span.set_status(self._status(self._code.ERROR, "the tool reported an error"))
        span.end(end_time=now)

    def _span_event(self, run: _Run, event: Event, now: int) -> None:
        kind = str(event.get("type"))
        if kind == "error" and event.get("kind"):
            self._model_error(run, event, now)
        fields = {k: v for k, v in event.items() if k not in ("type", "seq", "ts", "run_id")}
        if kind == "error" and "message" in fields:
            fields["message"] = _text(fields["message"], 500)
        target = run.root
        if kind == "notes_write" and len(run.tools) == 1:  # written by the tool running now
            target = next(iter(run.tools.values()))
        target.add_event(f"tinyharness.{kind}", attributes=_attrs(fields), timestamp=now)

    def _finish_root(self, run: _Run, event: Event) -> None:
        usage = event.get("usage") or {}
        stop = event.get("stop")
        attrs = {
            INPUT_TOKENS: usage.get("input_tokens"),
            OUTPUT_TOKENS: usage.get("output_tokens"),
            "tinyharness.stop": stop,
            "tinyharness.model_calls": event.get("model_calls"),
            "tinyharness.compactions": event.get("compactions"),
        }
        if self.capture_content:
            attrs["tinyharness.final"] = event.get("final")
        run.root.set_attributes(_attrs(attrs))
        if stop and stop != "end_turn":
            run.root.set_attribute(ERROR_TYPE, str(stop))
            detail = str(event.get("detail") or stop)
            run.root.set_status(self._status(self._code.ERROR, _text(detail, 200)))

    def _end_tool(self, span: Any, now: int, *, interrupted: bool) -> None:
        if interrupted:
            span.set_attribute("tinyharness.interrupted", True)
            span.set_attribute(ERROR_TYPE, "interrupted")
            span.set_status(self._status(self._code.ERROR, "the run ended before the tool finished"))
        span.end(end_time=now)

    def _end_run(self, run_id: str, now: int, *, interrupted: bool = False) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        end = max(now, run.last_ns)
        for span in run.tools.values():
            self._end_tool(span, end, interrupted=True)
        run.tools.clear()
        if interrupted:
            run.root.set_attribute("tinyharness.interrupted", True)
            run.root.set_attribute(ERROR_TYPE, "interrupted")
            run.root.set_status(self._status(self._code.ERROR, "the run ended without run_end"))
        run.root.end(end_time=end)


def otel_sink_from_env(*, provider: str | None = None, capture_content: bool = False) -> OTelSink:
    """An ``OTelSink`` with its own SDK tracer provider: OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT``
    (or ``..._TRACES_ENDPOINT``) is set, over ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``
    by default, or ``grpc``); else the console exporter, on stderr (stdout has the answer).
    The resource honours ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``. Call
    ``close()`` at the end: it ends open spans and flushes the exporter."""
    _require_otel()
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise ConfigError(f"the OpenTelemetry SDK is not installed; {INSTALL_HINT}") from None
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: AGENT_NAME}
    tracer_provider = TracerProvider(resource=Resource.create(attributes))
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if endpoint:
        tracer_provider.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
    else:
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return OTelSink(tracer_provider, provider=provider, capture_content=capture_content, owns_provider=True)


def _otlp_exporter() -> Any:
    """The OTLP span exporter for the configured protocol; it reads the endpoint, headers and
    timeout from the standard OTEL_EXPORTER_OTLP_* variables itself."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ConfigError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed: "
            "pip install opentelemetry-exporter-otlp (or unset the variable to print spans)"
        ) from None
    return OTLPSpanExporter()
