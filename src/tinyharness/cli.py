"""The ``tinyharness`` command.

Exit codes: 0 when the task ended normally, 1 when the run stopped early (limits, errors),
2 for bad usage or configuration, always with a one-line reason on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .agent import Agent, Limits, RunResult
from .context.base import ContextPolicy, Unmanaged
from .errors import ConfigError, HarnessError
from .events import EventBus, EventSink, JsonlSink
from .models.base import Model
from .models.factory import load_model
from .progress import ProgressPrinter
from .tools.builtin import builtin_tools
from .tools.notes import NotesFile
from .tools.permissions import Permissions

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
    run.add_argument("task", help="what the agent should do")
    model = run.add_argument_group("model")
    model.add_argument("--model", default="local", help="model string (default: local; see below)")
    model.add_argument("--base-url", help="server URL for openai:/anthropic: models")
    model.add_argument(
        "--tool-mode",
        choices=["native", "json"],
        help="native tool calls, or schema-constrained JSON actions for models without them "
        "(default: json for local, native otherwise)",
    )
    model.add_argument("--timeout", type=float, default=120.0, help="seconds per model request")
    model.add_argument("--max-retries", type=int, default=3, help="retries on 429/5xx/timeouts")
    model.add_argument(
        "--max-output-tokens", type=_positive_int, default=1024, help="output limit per request"
    )

    where = run.add_argument_group("workspace and output")
    where.add_argument("--workspace", default=".", help="folder the tools may touch (default: .)")
    where.add_argument("--notes", help="notes file (default: NOTES.md in the workspace)")
    where.add_argument("--events", help="write the event stream to this file as JSON Lines")
    where.add_argument("--trace", action="store_true", help="add each exact request to model_call events")
    where.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    limits = run.add_argument_group("limits and safety")
    limits.add_argument("--max-iterations", type=_positive_int, default=50, help="agent turns (default 50)")
    limits.add_argument("--token-budget", type=_positive_int, help="stop after this many billed tokens")
    limits.add_argument(
        "--allow-write",
        action="store_true",
        help="let write_file/edit_file run without asking (otherwise asked on a terminal, refused elsewhere)",
    )
    limits.add_argument(
        "--no-memory", action="store_true", help="no long-term memory recall or extraction in this run"
    )

    context = run.add_argument_group("context management")
    context.add_argument("--context-window", type=_positive_int, help="window in tokens (default: model's)")
    context.add_argument("--compact-ratio", type=_ratio, help="compact at this share of the window")
    context.add_argument("--compact-buffer", type=_positive_int, help="compact this many tokens below it")
    context.add_argument("--keep-recent", type=_positive_int, help="rounds kept verbatim at compaction")
    context.add_argument("--accounting", choices=["context", "cumulative"], default="context")
    context.add_argument("--counter", choices=["auto", "chars4", "exact"], default="auto")
    context.add_argument("--strategy", help="compaction strategy or pipeline a,b,c")
    context.add_argument("--compact-instructions", help="extra instructions for the summarizer")

    notes = commands.add_parser("notes", help="print the notes file of a workspace")
    notes.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    notes.add_argument("--notes", help="notes file (default: NOTES.md in the workspace)")
    return parser


def _notes_path(args: argparse.Namespace, workspace: Path) -> Path:
    return Path(args.notes) if args.notes else workspace / "NOTES.md"


def _confirm_on_terminal(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def build_context(args: argparse.Namespace, model: Model, events: EventBus) -> ContextPolicy:
    return Unmanaged()


async def _run(args: argparse.Namespace) -> RunResult:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    sinks: list[EventSink] = []
    jsonl = JsonlSink(args.events) if args.events else None
    if jsonl:
        sinks.append(jsonl)
    if not args.quiet:
        sinks.append(ProgressPrinter())
    events = EventBus(sinks)
    notes = NotesFile(
        _notes_path(args, workspace),
        on_write=lambda op, chars: events.emit("notes_write", op=op, chars=chars),
    )
    permissions = Permissions(
        allow_write=args.allow_write, confirm=_confirm_on_terminal if sys.stdin.isatty() else None
    )
    tools = builtin_tools(workspace, notes=notes, permissions=permissions)
    model = load_model(
        args.model,
        base_url=args.base_url,
        tool_mode=args.tool_mode,
        timeout=args.timeout,
        max_retries=args.max_retries,
        context_window=args.context_window,
    )
    try:
        agent = Agent(
            model,
            tools,
            context=build_context(args, model, events),
            events=events,
            limits=Limits(args.max_iterations, args.token_budget, args.max_output_tokens),
            trace=args.trace,
        )
        return await agent.arun(args.task)
    finally:
        try:
            await model.aclose()
        finally:
            if jsonl:
                jsonl.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "notes":
            workspace = Path(args.workspace)
            text = NotesFile(_notes_path(args, workspace)).read()
            print(text if text else f"(no notes yet in {_notes_path(args, workspace)})")
            return 0
        result = asyncio.run(_run(args))
    except ConfigError as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tinyharness: interrupted", file=sys.stderr)
        return 1
    if result.final:
        print(result.final)
    if not result.ok:
        print(f"tinyharness: stopped early ({result.stop}): {result.detail}", file=sys.stderr)
        return 1
    return 0
