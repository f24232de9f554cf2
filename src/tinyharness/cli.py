"""The ``tinyharness`` command.

Exit codes: 0 when the task ended normally, 1 when the run stopped early (limits, errors),
2 for bad usage or configuration, always with a one-line reason on stderr.

May import anything: this is the top floor, and nothing imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__, runlog_cli
from .agent import Agent, Limits, RunResult
from .context.base import ContextPolicy
from .context.flush import NotesFlush
from .context.manager import build_context
from .context.prefix import identical_prefix
from .errors import ConfigError, HarnessError
from .events import EventBus, EventSink, JsonlSink
from .memory import MemoryManager, MemoryStore, Scope, ScopedMemory, memory_tools, open_store
from .memory import cli as memory_cli
from .memory.factory import default_store_url
from .messages import Message, messages_from_dicts, messages_to_dicts
from .models.base import Model
from .models.factory import load_model
from .otel import OTelSink, otel_sink_from_env, provider_name
from .progress import ProgressPrinter
from .runlog import RunLog, RunLogError, default_path
from .tools.base import ToolRegistry
from .tools.builtin import builtin_tools
from .tools.notes import NotesFile
from .tools.permissions import Permissions
from .tools.shell import check_shell_options

MEMORY_ENV = "TINYHARNESS_MEMORY"
EXAMPLES = """\
examples:
  tinyharness run "Read README.md and tell me in one sentence what this project is"
  tinyharness run --model openai:gpt-4o-mini --events run.jsonl "Summarise src/ into NOTES.md"
  tinyharness run --model scripted:script.json --workspace demo --trace --events ev.jsonl "task"
  tinyharness notes --workspace demo

model strings:
  local              the embedded llama.cpp server with the packaged SmolLM2-135M model
  local:PATH.gguf    the embedded server with any GGUF file
  openai:NAME        any OpenAI-compatible server (OPENAI_API_KEY, --base-url or OPENAI_BASE_URL)
  anthropic:NAME     Anthropic Messages (ANTHROPIC_API_KEY, --base-url or ANTHROPIC_BASE_URL)
  scripted:PATH      replay a JSON script of responses (see README, "Scripted model")
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _ratio(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tinyharness",
        description="An agent harness that keeps long-running LLM agents stable.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tinyharness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run an agent on a task",
        description="Run an agent on TASK in a workspace folder; the final answer goes to stdout.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("task", nargs="?", help="what the agent should do (optional with --resume)")
    model = run.add_argument_group("model")
    model.add_argument("--model", default="local", help="model string (default: local; see below)")
    model.add_argument("--base-url", help="server URL for openai:/anthropic: models")
    model.add_argument(
        "--tool-mode",
        choices=["native", "json"],
        help="native tool calls, or schema-constrained JSON actions for models without them "
        "(default: json for local, native otherwise)",
    )
    model.add_argument("--timeout", type=float, default=120.0, help="seconds per model request (120)")
    model.add_argument("--max-retries", type=int, default=3, help="retries on 429/5xx/timeouts (3)")
    model.add_argument(
        "--max-output-tokens", type=_positive_int, default=1024, help="output limit per request"
    )

    where = run.add_argument_group("workspace and output")
    where.add_argument("--workspace", default=".", help="folder the tools may touch (default: .)")
    _notes_options(where)
    where.add_argument("--events", help="write the event stream to this file as JSON Lines")
    where.add_argument("--trace", action="store_true", help="add each exact request to model_call events")
    where.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    where.add_argument("--log", metavar="PATH", help=f"run log database (default: {default_path()})")
    where.add_argument("--no-log", action="store_true", help="do not record this run in the run log")
    where.add_argument(
        "--otel",
        action="store_true",
        help="record OpenTelemetry spans (GenAI conventions): to OTEL_EXPORTER_OTLP_ENDPOINT when set, "
        "else printed on stderr (needs the otel extra)",
    )

    sessions = run.add_argument_group("sessions")
    sessions.add_argument(
        "--session", metavar="NAME", help="continue the conversation of this session (created if new)"
    )
    sessions.add_argument(
        "--resume",
        action="store_true",
        help="continue the session's interrupted run from its last committed step "
        "(default session: the latest run's)",
    )

    limits = run.add_argument_group("limits and safety")
    limits.add_argument("--max-iterations", type=_positive_int, default=50, help="agent turns (default 50)")
    limits.add_argument("--token-budget", type=_positive_int, help="stop after this many billed tokens")
    limits.add_argument(
        "--allow-write",
        action="store_true",
        help="let write_file/edit_file run without asking (otherwise asked on a terminal, refused elsewhere)",
    )
    limits.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="RULE",
        help="let matching calls run without asking, e.g. 'write_file:docs/*' (repeatable)",
    )
    limits.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="RULE",
        help="refuse matching calls, e.g. 'edit_file:*.lock'; wins over --allow (repeatable)",
    )
    limits.add_argument(
        "--shell",
        action="store_true",
        help="offer the shell tool (off by default); each command is asked on a terminal unless an "
        "--allow rule matches it, e.g. --allow 'shell:pytest *'; --deny 'shell:rm *' refuses",
    )
    limits.add_argument(
        "--yes",
        action="store_true",
        help="never ask: run the shell commands --allow rules match and refuse the rest "
        "(needs --shell and an --allow rule for the shell)",
    )

    memory = run.add_argument_group("long-term memory")
    memory.add_argument(
        "--memory",
        metavar="URL",
        default=os.environ.get(MEMORY_ENV),
        help="memory store: a SQLite path or postgresql://... URL; 'off' disables "
        f"(default: ${MEMORY_ENV}, else {default_store_url()}; with the default 'local' model, "
        "memory is on only when a store is given)",
    )
    memory.add_argument(
        "--no-memory", action="store_true", help="no long-term memory recall or extraction in this run"
    )
    memory.add_argument(
        "--memory-user",
        default=os.environ.get("USER") or "default",
        help="whose memories to recall and store (default: $USER)",
    )
    memory.add_argument(
        "--memory-dir",
        metavar="DIR",
        help="offer the file-memory tool (view/create/str_replace/insert/delete/rename) on DIR",
    )

    context = run.add_argument_group("context management")
    context.add_argument("--context-window", type=_positive_int, help="window in tokens (default: model's)")
    context.add_argument("--compact-ratio", type=_ratio, help="compact at this share of the window")
    context.add_argument("--compact-buffer", type=_positive_int, help="compact this many tokens below it")
    context.add_argument("--keep-recent", type=_positive_int, help="rounds kept verbatim at compaction")
    context.add_argument(
        "--accounting",
        choices=["context", "cumulative"],
        default="context",
        help="context: tokens in the current window (default); cumulative: the sum of input+output "
        "of every call, reset at compaction (lesson 6)",
    )
    context.add_argument(
        "--counter",
        choices=["auto", "chars4", "exact"],
        default="auto",
        help="auto: an estimate (honest for CJK) corrected by reported usage (default); chars4: "
        "characters/4 (seed 000); exact: a real tokenizer (the local server's, Anthropic's "
        "count_tokens endpoint, else o200k offline)",
    )
    context.add_argument(
        "--strategy",
        help="summarize, restart, clear-tool-results, sliding-window, offload or none, or a pipeline "
        "a,b,c (default: offload,clear-tool-results,summarize,sliding-window)",
    )
    context.add_argument("--compact-instructions", help="extra instructions for the summarizer")
    context.add_argument(
        "--flush-notes",
        action=argparse.BooleanOptionalAction,
        help="before each compaction, requests in which the model must call the note tool, one per "
        "file still in the window (default: on for local models, which do not take notes when only "
        "asked; off otherwise)",
    )

    runlog_cli.register(commands)
    memory_cli.register(commands)

    notes = commands.add_parser("notes", help="print the notes file of a workspace")
    notes.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    _notes_options(notes)
    return parser


def _notes_options(group: Any) -> None:
    group.add_argument(
        "--notes",
        help="notes file, relative to the workspace (default: NOTES.md in the workspace)",
    )
    group.add_argument(
        "--notes-outside-workspace",
        action="store_true",
        help="let --notes name a file outside the workspace (by default that is refused)",
    )


def _notes_path(args: argparse.Namespace, workspace: Path) -> Path:
    """``--notes`` relative to the workspace (not to the current folder); a file outside the
    workspace only with ``--notes-outside-workspace``, since the agent's file tools cannot see
    it and it is read back into the model's context."""
    if not args.notes:
        return workspace / "NOTES.md"
    path = Path(os.path.abspath(workspace / Path(args.notes).expanduser()))
    root = Path(os.path.realpath(workspace))
    if not Path(os.path.realpath(path.parent)).is_relative_to(root) and not args.notes_outside_workspace:
        raise ConfigError(
            f"--notes {args.notes} is outside the workspace {workspace}; give a path relative to "
            "the workspace, or add --notes-outside-workspace to use that file anyway"
        )
    return path


def _confirm_on_terminal(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _context(
    args: argparse.Namespace, model: Model, events: EventBus, workspace: Path, tools: ToolRegistry
) -> ContextPolicy:
    flush = args.flush_notes if args.flush_notes is not None else args.model.startswith("local")
    return build_context(
        args.strategy,
        window=args.context_window,
        ratio=args.compact_ratio,
        buffer=args.compact_buffer,
        keep_recent=args.keep_recent,
        accounting=args.accounting,
        counter=args.counter,
        notes_path=_notes_path(args, workspace),
        workspace=workspace,
        events=events,
        compact_instructions=args.compact_instructions,
        model_window=model.context_window,
        exact_counter=getattr(model, "count_tokens", None),
        flush=NotesFlush(functools.partial(tools.run_call, events=events), events) if flush else None,
    )


class SessionCheckpointer:
    """Commits the agent's history and state to the run log after every step. Messages are
    immutable, so the ones already stored are recognised by identity and not written again."""

    def __init__(self, log: RunLog, session: str, events: EventBus, stored: Sequence[Message]) -> None:
        self.log, self.session, self.events = log, session, events
        self.stored: list[Message] = list(stored)
        self.step = 0

    def save(self, messages: Sequence[Message], state: dict[str, Any]) -> None:
        keep = identical_prefix(self.stored, messages)
        self.step += 1
        self.log.save_checkpoint(
            self.events.run_id,
            self.session,
            self.step,
            messages_to_dicts(messages[keep:]),
            state,
            keep=keep,
        )
        self.stored = list(messages)


def _session_start(args: argparse.Namespace, log: RunLog | None) -> tuple[str, list[Message], dict[str, Any]]:
    """The session name, and the history and loop state this run starts from."""
    if log is None:
        if args.session or args.resume:
            raise ConfigError("--session and --resume need the run log; drop --no-log")
        return "", [], {}
    session = args.session
    if args.resume and not session:
        latest = log.list_runs(1)
        if not latest or not latest[0].session:
            raise ConfigError("nothing to resume: the run log has no runs; start one with a task")
        session = latest[0].session
    checkpoint = log.load_checkpoint(session) if session else None
    history = messages_from_dicts(checkpoint.messages) if checkpoint else []
    interrupted = bool(history) and not (history[-1].role == "assistant" and not history[-1].tool_uses)
    if args.resume:
        if not interrupted:
            raise ConfigError(f"session {session!r} has no interrupted run; give a task to continue it")
        return session, history, checkpoint.state if checkpoint else {}
    if interrupted:
        raise ConfigError(f"session {session!r} has an interrupted run; finish it first with --resume")
    return session or "", history, {}


async def _run(args: argparse.Namespace) -> RunResult:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    if args.task is None and not args.resume:
        raise ConfigError("give a task, or --resume to continue an interrupted run")
    _notes_path(args, workspace)  # a --notes outside the workspace is refused before anything starts
    check_shell_options(shell=args.shell, yes=args.yes, allow=args.allow)
    log = None if args.no_log else RunLog(args.log or default_path())
    jsonl = JsonlSink(args.events) if args.events else None
    model: Model | None = None
    opened: list[MemoryStore] = []
    otel: OTelSink | None = None
    try:
        session, history, state = _session_start(args, log)
        sinks: list[EventSink] = [s for s in (log, jsonl) if s is not None]
        if args.otel:
            otel = otel_sink_from_env(provider=provider_name(args.model))
            sinks.append(otel)
        if not args.quiet:
            sinks.append(ProgressPrinter())
        events = EventBus(sinks)
        session = session or events.run_id
        model = load_model(
            args.model,
            base_url=args.base_url,
            tool_mode=args.tool_mode,
            timeout=args.timeout,
            max_retries=args.max_retries,
            context_window=args.context_window,
        )
        tools = _tools(args, workspace, events)
        context = _context(args, model, events, workspace, tools)
        memory = _memory(args, events, session)
        if memory is not None:
            opened.append(memory.manager.store)
        agent = Agent(
            model,
            tools,
            context=context,
            events=events,
            limits=Limits(args.max_iterations, args.token_budget, args.max_output_tokens),
            trace=args.trace,
            checkpoint=SessionCheckpointer(log, session, events, history) if log else None,
            memory=memory,
        )
        task = None if args.resume else args.task
        return await agent.arun(task, history=history, state=state, session=session, **_run_info(context))
    finally:
        try:
            if model is not None:
                await model.aclose()
        finally:
            for closable in (otel, jsonl, log, *opened):
                if closable is not None:
                    closable.close()


def _tools(args: argparse.Namespace, workspace: Path, events: EventBus) -> ToolRegistry:
    notes = NotesFile(
        _notes_path(args, workspace),
        on_write=lambda op, chars: events.emit("notes_write", op=op, chars=chars),
        root=workspace,
    )
    permissions = Permissions(
        allow_write=args.allow_write,
        allow=args.allow,
        deny=args.deny,
        confirm=_confirm_on_terminal if sys.stdin.isatty() and not args.yes else None,
    )
    registry = builtin_tools(workspace, notes=notes, permissions=permissions, shell=args.shell)
    if args.memory_dir:
        for tool in memory_tools(Path(args.memory_dir)):
            registry.add(tool)
    return registry


def _memory(args: argparse.Namespace, events: EventBus, session: str) -> ScopedMemory | None:
    if args.no_memory or (args.memory or "").lower() == "off":
        return None
    if args.memory is None and args.model == "local":
        # Measured: the packaged 135M model extracts junk "facts", and recalling them derailed
        # its next run (2 calls and an answer became a stuck loop). Ask for a store to use it.
        return None
    manager = MemoryManager(open_store(args.memory), events=events)
    return ScopedMemory(manager, Scope(user=args.memory_user, agent="tinyharness", session=session))


def _run_info(context: ContextPolicy) -> dict[str, Any]:
    """Fields for the run_start event that the report draws (window and trigger line)."""
    info: dict[str, Any] = {}
    for name in ("context_window", "compact_at", "strategy"):
        value = getattr(context, name, None)
        if value is not None:
            info[name] = value
    return info


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "notes":
            workspace = Path(args.workspace)
            if not workspace.is_dir():
                raise ConfigError(f"workspace {args.workspace} is not a folder")
            notes_path = _notes_path(args, workspace)
            text = NotesFile(notes_path, root=workspace).read()
            print(text if text else f"(no notes yet in {notes_path})")
            return 0
        if args.command == "memory":
            return memory_cli.handle(args)
        if args.command != "run":
            code: int = args.handler(args)
            return code
        result = asyncio.run(_run(args))
    except (ConfigError, RunLogError) as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tinyharness: interrupted; continue with --resume", file=sys.stderr)
        return 1
    if result.final:
        print(result.final)
    if not result.ok:
        print(f"tinyharness: stopped early ({result.stop}): {result.detail}", file=sys.stderr)
        return 1
    return 0
