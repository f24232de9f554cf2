"""Tools from plain typed functions, and the registry that runs them safely.

``function_tool`` reads a function's signature and docstring into a JSON schema; a parameter
typed as a dataclass or a Pydantic model gets that type's schema and arrives as an instance of
it, and an ``async def`` function is awaited on the event loop. The registry
turns every failure (unknown tool, undecodable or schema-breaking arguments, permission refused,
an exception, a timeout) into an error result the model can read; it never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import json
import operator
import os
import queue
import re
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import jsonschema
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from ..events import EventBus
from ..messages import ToolResultBlock, ToolUseBlock
from ..models.base import Choices, ToolSpec
from .argcheck import ArgsCheck, plain_check

Risk = Literal["read", "write", "execute"]
DEFAULT_RESULT_CAP = 20_000  # characters a tool result may carry into the context


class ToolError(Exception):
    """Raised by a tool to report a failure the model should read (no traceback)."""


class PermissionDenied(ToolError):
    """The permission policy refused a call."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    function: Callable[..., Any]
    risk: Risk = "read"
    choices: Choices | None = None  # values its string arguments can take now (ToolSpec.choices)
    # An MCP tool: the server that provides it (named in events); its function is a coroutine
    # function, awaited on the loop instead of run in a thread.
    server: str | None = None
    timeout: float | None = None  # seconds; None: the registry's
    # A call a killed run cut off is run again on resume, because the tool continues its own
    # recorded work instead of repeating it (``task`` resumes its sub-agent's session); every
    # other tool's cut-off call gets "outcome unknown" instead.
    resumes: bool = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema, self.choices)


@dataclass(frozen=True)
class ToolResult:
    """What a call gave: its text, and what the harness knows of it (see ``ToolResultBlock``).
    A tool function may return one to say where a partial read stops (``next_line``)."""

    content: str
    ok: bool = True
    truncated: bool = False
    next_line: int | None = None


class PermissionPolicy(Protocol):
    """The one place that decides whether a call may run; raises PermissionDenied if not."""

    def check(self, tool: Tool, args: dict[str, Any]) -> None: ...


class CallHook(Protocol):
    """Runs around every call of a registry (user hooks, instruction files found on the way):
    ``before`` may refuse the call (the reason is the error result the model reads; the tool does
    not run), ``after`` may give the result block in a new form (with text added)."""

    async def before(self, call: ToolUseBlock) -> str | None: ...

    async def after(self, call: ToolUseBlock, result: ToolResultBlock) -> ToolResultBlock: ...


class AllowAll:
    def check(self, tool: Tool, args: dict[str, Any]) -> None:
        return None


# --- schema from a typed function -------------------------------------------------------------

_PY_TO_JSON: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}


def _is_pydantic_model(annotation: Any) -> bool:
    base = getattr(annotation, "model_json_schema", None)
    return isinstance(annotation, type) and callable(base) and hasattr(annotation, "model_validate")


def _needs_conversion(annotation: Any) -> bool:
    """Whether JSON arguments must be turned into ``annotation`` (a dataclass or Pydantic model,
    also inside a list or an optional)."""
    if dataclasses.is_dataclass(annotation) or _is_pydantic_model(annotation):
        return True
    return any(_needs_conversion(arg) for arg in typing.get_args(annotation))


def _dataclass_schema(cls: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in dataclasses.fields(cls):
        properties[item.name] = _json_type(hints.get(item.name, str))
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            required.append(item.name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _pydantic_schema(cls: Any) -> dict[str, Any]:
    """The model's schema with its ``$defs`` inlined: the tool schema is a sub-schema, where a
    ``#/$defs/...`` reference would point at the wrong root."""
    schema = cls.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any, depth: int = 0) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 20:
                return inline(defs.get(ref.removeprefix("#/$defs/"), {}), depth + 1)
            return {k: inline(v, depth) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [inline(v, depth) for v in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


def _convert(value: Any, annotation: Any) -> Any:
    """JSON ``value`` as ``annotation`` (dataclasses and Pydantic models, also nested in lists
    and optionals); ToolError with what is wrong when it does not fit."""
    if value is None:
        return None
    if _is_pydantic_model(annotation):
        try:
            return annotation.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise ToolError(f"invalid {annotation.__name__}: {exc}") from None
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        if not isinstance(value, dict):
            raise ToolError(f"{annotation.__name__} must be a JSON object")
        hints = typing.get_type_hints(annotation)
        try:
            return annotation(**{k: _convert(v, hints.get(k, Any)) for k, v in value.items()})
        except TypeError as exc:
            raise ToolError(f"invalid {annotation.__name__}: {exc}") from None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) and args and isinstance(value, list):
        return origin(_convert(item, args[0]) for item in value)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _convert(value, options[0])
    return value


def _json_type(annotation: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(annotation):
        return _dataclass_schema(annotation)
    if _is_pydantic_model(annotation):
        return _pydantic_schema(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(a) for a in options]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        schema: dict[str, Any] = {"type": "array"}
        if args:
            schema["items"] = _json_type(args[0])
        return schema
    if origin is dict:
        return {"type": "object"}
    if annotation in _PY_TO_JSON:
        return {"type": _PY_TO_JSON[annotation]}
    return {}


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and per-argument descriptions."""
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = in_other_section = False
    for raw in inspect.cleandoc(doc).splitlines():
        line = raw.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters):", line):
            in_args, in_other_section = True, False
            continue
        # Returns/Raises/... describe the Python side, not what the model needs to call it.
        if re.fullmatch(r"(Returns|Raises|Yields|Examples?|Notes?):", line):
            in_args, in_other_section = False, True
            continue
        if in_other_section:
            continue
        if in_args:
            match = re.match(r"(\w+)\s*(\([^)]*\))?:\s*(.*)", line)
            if match:
                current = match.group(1)
                params[current] = match.group(3)
            elif current and line:
                params[current] += " " + line
            elif not line:
                in_args = False
            continue
        summary_lines.append(line)
    return " ".join(line for line in summary_lines if line), params


def function_tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = "read",
) -> Any:
    """Make a Tool from a typed function; usable as ``@function_tool`` or with arguments."""

    def build(fn: Callable[..., Any]) -> Tool:
        summary, param_docs = _docstring_parts(fn.__doc__ or "")
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, param in inspect.signature(fn).parameters.items():
            schema = _json_type(hints.get(pname, str))
            if pname in param_docs:
                schema["description"] = param_docs[pname]
            properties[pname] = schema
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        input_schema = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        return Tool(name or fn.__name__, description or summary, input_schema, _typed_call(fn, hints), risk)

    return build(function) if function is not None else build


def _typed_call(fn: Callable[..., Any], hints: dict[str, Any]) -> Callable[..., Any]:
    """``fn``, or a wrapper that turns JSON arguments into the dataclasses and Pydantic models
    its parameters are typed with (async stays async)."""
    typed = {name: hint for name, hint in hints.items() if name != "return" and _needs_conversion(hint)}
    if not typed:
        return fn

    def convert(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {k: _convert(v, typed[k]) if k in typed else v for k, v in kwargs.items()}

    if inspect.iscoroutinefunction(fn):

        async def call_async(**kwargs: Any) -> Any:
            return await fn(**convert(kwargs))

        return functools.wraps(fn)(call_async)

    def call(**kwargs: Any) -> Any:
        return fn(**convert(kwargs))

    return functools.wraps(fn)(call)


# --- running tools ----------------------------------------------------------------------------


def decode_arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a dict, or ToolError with a message that tells the model what to fix."""
    if raw is None:  # some servers send null for a call without arguments
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(
                f"arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
                "send a JSON object that matches the tool's schema"
            ) from None
    if not isinstance(raw, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def _drop_null_optionals(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Treat ``null`` for an optional argument as "not given"; small models often send it."""
    required = set(schema.get("required", ()))
    return {k: v for k, v in args.items() if v is not None or k in required}


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head = text[: limit * 3 // 4]
    tail = text[len(text) - limit // 4 :]  # not text[-0:], which would be the whole text
    omitted = len(text) - len(head) - len(tail)
    return f"{head}\n[... {omitted} characters omitted ...]\n{tail}", True


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, ToolResult):
        return output.content
    # default=str: an unserialisable return value must not turn into an exception here
    return json.dumps(output, ensure_ascii=False, default=str)


class _ToolRaisedTimeout(Exception):
    """A TimeoutError raised inside a tool, kept apart from the registry's own timeout."""


# The stop request of the call running in this thread: set when whoever awaits the call gives up
# (Ctrl-C in the chat cancels the turn; the registry's timeout). A thread cannot be cancelled, so
# tools that loop for long (grep over a tree, reading a big file) ask ``stop_requested()`` and end.
_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("tool_stop", default=None)


class ToolStopped(ToolError):
    """The tool ended early because its caller asked it to stop."""


def stop_requested() -> bool:
    """In a tool's thread: whether its caller has given up on it (the tool should end soon)."""
    event = _STOP.get()
    return event is not None and event.is_set()


def raise_if_stopped() -> None:
    """``ToolStopped`` when the caller has given up on this call: a check for long loops."""
    if stop_requested():
        raise ToolStopped("stopped on request before it finished")


def _call_tool(function: Callable[..., Any], args: dict[str, Any]) -> Any:
    try:
        return function(**args)
    except TimeoutError as exc:
        raise _ToolRaisedTimeout() from exc


async def _await_tool(function: Callable[..., Any], args: dict[str, Any]) -> Any:
    try:
        return await function(**args)
    except TimeoutError as exc:
        raise _ToolRaisedTimeout() from exc


def _settle(future: asyncio.Future[Any], output: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled by the timeout
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(output)


class _DaemonWorkers:
    """Daemon threads that run one tool call at a time and wait for the next when done.

    A tool that hangs keeps its thread (a thread cannot be cancelled) and the process can still
    exit (daemon). Starting a thread per call cost more than the rest of a turn's bookkeeping:
    ``Thread.start`` blocks the event loop until the new thread runs, 0.1 to 1 ms on a shared
    machine. An idle thread takes the next call instead; a new one starts only when none is idle,
    and at most ``MAX_IDLE`` wait."""

    MAX_IDLE = 4

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """No thread yet (also in a forked child, which has none of its parent's threads)."""
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], object]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job, or about to

    def submit(self, job: Callable[[], Callable[[], object]]) -> None:
        """Run ``job`` on an idle thread, else a new one. The job returns what hands its result
        over, which runs once its thread counts as idle again: a caller that submits its next
        job as soon as it has the result then finds the thread idle, not a new one started."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="tool-worker", daemon=True).start()

    def _serve(self) -> None:
        while True:
            hand_over = self._jobs.get()()
            with self._lock:
                retire = self._idle >= self.MAX_IDLE
                if not retire:
                    self._idle += 1
            hand_over()
            if retire:
                return


_WORKERS = _DaemonWorkers()
if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_WORKERS.reset)


async def _in_daemon_thread(function: Callable[..., Any], args: dict[str, Any], timeout: float) -> Any:
    """``function(**args)`` in a daemon thread, awaited without blocking the loop. After
    ``timeout`` seconds it raises TimeoutError and the tool is asked to stop (it finishes in the
    background). The timeout is a timer on the call's own future, not ``asyncio.wait_for``,
    whose task, waiter and extra loop passes cost about as much as the rest of a call's
    handling."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    stop = threading.Event()

    def work() -> Callable[[], None]:
        output: Any = None
        error: BaseException | None = None
        _STOP.set(stop)
        try:
            output = _call_tool(function, args)
        except BaseException as exc:
            error = exc

        def hand_over() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the tool hung
                loop.call_soon_threadsafe(_settle, future, output, error)

        return hand_over

    # The thread runs in a copy of the caller's context, as asyncio.to_thread does (EventBus.hold
    # follows the events a tool emits from its thread).
    context = contextvars.copy_context()
    _WORKERS.submit(functools.partial(context.run, work))
    timer = loop.call_later(timeout, _expire, future, stop)
    try:
        return await future
    except asyncio.CancelledError:  # Ctrl-C: tell the tool to stop
        stop.set()
        raise
    finally:
        timer.cancel()


def _expire(future: asyncio.Future[Any], stop: threading.Event) -> None:
    """The call's time is up: the tool is asked to stop, its caller gets TimeoutError."""
    stop.set()
    if not future.done():
        future.set_exception(TimeoutError())


async def _run_function(function: Callable[..., Any], args: dict[str, Any], timeout: float) -> Any:
    """An ``async def`` tool is awaited on the loop (a timeout cancels it); a plain function runs
    in its own thread, and an awaitable it returns is awaited too, in what is left of the time.
    TimeoutError: the time is up (a TimeoutError the tool raised is ``_ToolRaisedTimeout``)."""
    if inspect.iscoroutinefunction(function):
        return await asyncio.wait_for(_await_tool(function, args), timeout)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    output = await _in_daemon_thread(function, args, timeout)
    if inspect.isawaitable(output):
        return await asyncio.wait_for(_await_output(output), max(0.0, deadline - loop.time()))
    return output


async def _await_output(output: Awaitable[Any]) -> Any:
    try:
        return await output
    except TimeoutError as exc:
        raise _ToolRaisedTimeout() from exc


def _schema_validator(schema: dict[str, Any]) -> Validator | None:
    """A validator for ``schema``, built once; None if the schema itself is invalid (then every
    call goes through ``jsonschema.validate``, which reports the SchemaError as before)."""
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)


def _validators(tool: Tool) -> tuple[Tool, Validator | None, ArgsCheck | None]:
    """The tool, its schema's validator, and the fast check of ``argcheck`` when it has one."""
    validator = _schema_validator(tool.input_schema)
    return tool, validator, plain_check(tool.input_schema) if validator is not None else None


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        permissions: PermissionPolicy | None = None,
        result_cap: int = DEFAULT_RESULT_CAP,
        timeout: float = 60.0,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        # One validator per tool, built when it is added: jsonschema.validate would check the
        # schema and build a validator on every call. Kept with its tool, so a tool replaced by
        # any means never meets another's validator.
        self._validators: dict[str, tuple[Tool, Validator | None, ArgsCheck | None]] = {}
        self.permissions: PermissionPolicy = permissions or AllowAll()
        self.result_cap = result_cap
        self.timeout = timeout
        # Called with each call and its result block before the tool_result event (a UI that
        # keeps whole outputs, as the chat's /show does; events carry only their size).
        self.on_result: Callable[[ToolUseBlock, ToolResultBlock], None] | None = None
        self.hooks: list[CallHook] = []  # run around every call, in order (see CallHook)
        self._specs: tuple[tuple[Tool, ...], tuple[ToolSpec, ...]] = ((), ())  # the tools they are of
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool
        self._validators[tool.name] = _validators(tool)

    def _check_arguments(self, tool: Tool, args: dict[str, Any]) -> None:
        """``jsonschema.validate(args, tool.input_schema)``, with the tool's validator reused:
        the same error (``best_match`` of all errors) or SchemaError."""
        entry = self._validators.get(tool.name)
        if entry is None or entry[0] is not tool:
            entry = _validators(tool)
            self._validators[tool.name] = entry
        _, validator, plain = entry
        if plain is not None and plain(args):
            return  # what jsonschema would accept, checked without it (see argcheck)
        if validator is None:
            jsonschema.validate(args, tool.input_schema)
            return
        error = best_match(validator.iter_errors(args))
        if error is not None:
            raise error

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def remove(self, name: str) -> None:
        """Stop offering ``name`` (no error when it is not there)."""
        self._tools.pop(name, None)
        self._validators.pop(name, None)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools' specs: the same tuple while the tools are the same objects (every request
        carries them, and the token accounting compares them with the last request's)."""
        tools = tuple(self._tools.values())
        known, specs = self._specs
        if len(known) != len(tools) or not all(map(operator.is_, known, tools)):
            specs = tuple(t.spec for t in tools)
            self._specs = (tools, specs)
        return specs

    async def run_call(self, call: ToolUseBlock, events: EventBus) -> ToolResultBlock:
        """``execute`` for a model's tool call, reported as ``tool_call`` and ``tool_result``
        events; the result as the block that answers the call."""
        tool = self._tools.get(call.name)
        origin: dict[str, Any] = {"server": tool.server} if tool is not None and tool.server else {}
        events.emit("tool_call", call_id=call.id, name=call.name, args=call.input, **origin)
        refusal = None
        for hook in self.hooks:
            if (refusal := await hook.before(call)) is not None:
                origin["blocked"] = True
                break
        if refusal is not None:
            result = ToolResult(f"Error: {refusal}", ok=False)
        else:
            result = await self.execute(call.name, call.input)
        block = ToolResultBlock(
            call.id,
            result.content,
            is_error=not result.ok,
            truncated=result.truncated,
            next_line=result.next_line,
            refused=refusal is not None,
        )
        for hook in self.hooks if refusal is None else ():
            block = await hook.after(call, block)
        if self.on_result is not None:
            self.on_result(call, block)
        events.emit(
            "tool_result",
            call_id=call.id,
            name=call.name,
            **origin,
            ok=result.ok,
            chars=len(block.content),
            truncated=result.truncated,
        )
        return block

    async def execute(self, name: str, raw_args: Any) -> ToolResult:
        """Run one call; every failure comes back as ``ok=False`` text, never as an exception."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(f"Error: unknown tool {name!r}. Available tools: {known}.", ok=False)
        try:
            args = _drop_null_optionals(decode_arguments(raw_args), tool.input_schema)
            self._check_arguments(tool, args)
            self.permissions.check(tool, args)
            # On timeout the worker thread cannot be killed; it finishes in the background while
            # the loop moves on with the error result. It is a daemon thread, not the default
            # executor, so neither asyncio.run's shutdown nor the process exit waits for it.
            timeout = tool.timeout or self.timeout
            output = await _run_function(tool.function, args, timeout)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
            return ToolResult(
                f"Error: invalid arguments for {name} ({where}: {exc.message}). "
                f"Expected schema: {json.dumps(tool.input_schema, ensure_ascii=False)}",
                ok=False,
            )
        except TimeoutError:
            return ToolResult(f"Error: {name} timed out after {tool.timeout or self.timeout:g} s", ok=False)
        except _ToolRaisedTimeout as exc:
            return ToolResult(f"Error: {name} raised TimeoutError: {exc.__cause__}", ok=False)
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", ok=False)
        except Exception as exc:  # a tool that raises must never kill the loop
            return ToolResult(f"Error: {name} raised {type(exc).__name__}: {exc}", ok=False)
        next_line = output.next_line if isinstance(output, ToolResult) else None
        capped, truncated = cap_text(_as_text(output), self.result_cap)
        return ToolResult(capped, ok=True, truncated=truncated, next_line=next_line)
