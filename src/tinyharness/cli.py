"""The ``tinyharness`` command.

Exit codes: 0 when the task ended normally, 1 when the run stopped early (limits, errors),
2 for bad usage or configuration, always with a one-line reason on stderr.

May import anything: this is the top floor, and nothing imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from . import __version__, procs
from .agent import Agent, AgentConfig, RunResult
from .agent import problem as agent_problem
from .anchors import AnchorError, Anchors
from .context.base import ContextPolicy
from .context.config import DEFAULT_RATIO, DEFAULT_WINDOW, ContextConfig
from .context.config import problem as context_problem
from .context.manager import OFFLOAD_SHARE, build_context
from .context.tokens import HeuristicCounter
from .conventions import ProjectConventions
from .durable import cli as durable_cli
from .durable.policy import WorkerPolicy
from .durable.queue import new_run_id, was_cancelled
from .durable.steps import DurableSteps, OnlyNew
from .errors import ConfigError, HarnessError
from .events import EventBus, EventSink, JsonlSink
from .gitexclude import exclude_run_state
from .guide import KINDS, Guide, PlanGuide, PlanOptions, Ranked, reviewed_run, simple_rank
from .headless import OUTPUT_FORMATS, HeadlessOutput
from .hooks import cli as hooks_cli
from .mcp import cli as mcp_cli
from .mcp.config import McpServerConfig, load_config
from .memory import MemoryManager, MemoryStore, Scope, ScopedMemory, memory_tools, open_store
from .memory import cli as memory_cli
from .memory.factory import default_store_url
from .messages import ToolResultBlock, ToolUseBlock, block_from_dict, messages_from_dicts
from .models import cli as models_cli
from .models.base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Model
from .models.factory import load_model
from .models.first_use import ask_on_terminal, ensure_local_model
from .models.prices import PriceTable
from .models.providers import PROVIDERS, lookup_provider
from .otel import OTelSink, otel_sink_from_env, provider_name
from .paths import data_home
from .profiles import Profile, defined_profiles, profile_for
from .progress import ProgressPrinter
from .redact import redact
from .runlog import RunLog, RunLogError, RunLogStore, default_path, is_postgres_url, open_run_log
from .runlog import cli as runlog_cli
from .safefs import create_new
from .session import (
    SavedSession,
    SessionStore,
    SessionStoreError,
    SQLiteSession,
    StartPoint,
    TurnProgress,
    start_point,
    store_path_for,
)
from .settings import MODEL_ENV, load_settings, resolve_base_url, resolve_model
from .settings import cli as settings_cli
from .skills import cli as skills_cli
from .skills import home_mounts
from .subagents import SubAgentConfig, SubAgentHost, SubAgents, load_profiles
from .terminal import say
from .tools.base import DEFAULT_RESULT_CAP, ToolRegistry
from .tools.builtin import builtin_tools
from .tools.files import ReadState
from .tools.history_search import DroppedHistory
from .tools.notes import NotesFile
from .tools.permissions import Permissions
from .tools.plan import plan_tools
from .tools.shell import check_shell_options
from .tools.workspace import Workspace

if TYPE_CHECKING:  # the MCP SDK is imported only when a run has MCP servers
    from .mcp.client import McpServers

MEMORY_ENV = "TINYHARNESS_MEMORY"
DEBUG_ENV = "TINYHARNESS_DEBUG"  # set: an unexpected error prints its Python trace
CODE_CHARS_PER_TOKEN = 3  # code with line numbers, measured with the Qwen2.5 tokenizer
READ_RESERVE_CHARS = 500  # read_file keeps this much of its cap for the header and the note
EXAMPLES = """\
examples:
  tinyharness run "Read README.md and tell me in one sentence what this project is"
  tinyharness run --model openai:gpt-4o-mini --events run.jsonl "Summarise src/ into NOTES.md"
  tinyharness run --model scripted:script.json --workspace demo --trace --events ev.jsonl "task"
  tinyharness run --pin "Never edit anything under tests/" "Make the failing test pass"
  tinyharness run --model openai:gpt-4o-mini "Have sub-agents say what each folder under src/ does"
  tinyharness notes --workspace demo

model strings:
  local              the embedded llama.cpp server with the default local model
                     (Qwen2.5-Coder-0.5B-Instruct; see `tinyharness models`)
  local:NAME         a named local model: qwen2.5-coder-1.5b (better, slower), smollm2 (fast tests)
  local:PATH.gguf    the embedded server with any GGUF file
  openai:NAME        any OpenAI-compatible server (OPENAI_API_KEY, --base-url or OPENAI_BASE_URL)
  anthropic:NAME     Anthropic Messages (ANTHROPIC_API_KEY, --base-url or ANTHROPIC_BASE_URL)
  scripted:PATH      replay a JSON script of responses (see README, "Scripted model")

environment:
  TINYHARNESS_HOME   where settings, the run log and memories live
  TINYHARNESS_DEBUG  set to 1 to print the Python trace of an unexpected error (by default it
                     is written to a file under TINYHARNESS_HOME/crashes, named on stderr)
"""


AGENT = AgentConfig()  # the defaults, written once in the config classes
CONTEXT = ContextConfig()
SUBAGENTS = SubAgentConfig()


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _checked(
    problem: Callable[[str, Any], str | None], field: str, convert: Callable[[str], Any]
) -> Callable[[str], Any]:
    """An option parser that refuses what the config would refuse, for the same reason."""

    def parse(text: str) -> Any:
        value = convert(text)  # a ValueError becomes argparse's "invalid int value"
        wrong = problem(field, value)
        if wrong is not None:
            raise argparse.ArgumentTypeError(wrong)
        return value

    parse.__name__ = convert.__name__
    return parse


def _agent_option(field: str) -> Callable[[str], Any]:
    return _checked(agent_problem, field, int)


def _context_option(field: str, convert: Callable[[str], Any] = int) -> Callable[[str], Any]:
    return _checked(context_problem, field, convert)


class _OneLineParser(argparse.ArgumentParser):
    """Usage mistakes in one line, like every other error (subcommands inherit the class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="tinyharness",
        description="An agent harness that keeps long-running LLM agents stable.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tinyharness {__version__}")
    # typed as plain parsers: the commands' modules register on them (they are _OneLineParser)
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    _register_chat(commands)

    run = commands.add_parser(
        "run",
        help="run an agent on a task",
        description="Run an agent on TASK in a workspace folder; the final answer goes to stdout.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("task", nargs="?", help="what the agent should do (optional with --resume)")
    model = run.add_argument_group("model")
    model.add_argument(
        "--model",
        help=f"model string (default: ${MODEL_ENV}, else default_model in the config file, "
        "else local; see below and `tinyharness models default`)",
    )
    model.add_argument(
        "--base-url",
        help="server URL for the model's provider (default: its variable, e.g. $OPENAI_BASE_URL or "
        "$OLLAMA_HOST, else base_urls in the config file, else its default: `tinyharness models "
        "providers`)",
    )
    model.add_argument(
        "--tool-mode",
        choices=["native", "json"],
        help="native tool calls, or schema-constrained JSON actions for models without them "
        "(default: json for local, native otherwise)",
    )
    model.add_argument(
        "--timeout",
        type=float,
        help=f"seconds per model request (default {DEFAULT_TIMEOUT:g}; for local models, fitted "
        "to the model's measured speed and the window)",
    )
    model.add_argument(
        "--max-retries",
        type=int,
        default=DEFAULT_MAX_RETRIES,
        help=f"retries on 429/5xx/timeouts (default {DEFAULT_MAX_RETRIES})",
    )
    model.add_argument(
        "--max-output-tokens",
        type=_agent_option("max_output_tokens"),
        default=AGENT.max_output_tokens,
        help=f"output limit per request (default {AGENT.max_output_tokens})",
    )

    where = run.add_argument_group("workspace and output")
    where.add_argument("--workspace", default=".", help="folder the tools may touch (default: .)")
    _notes_options(where)
    where.add_argument("--events", help="write the event stream to this file as JSON Lines")
    where.add_argument("--trace", action="store_true", help="add each exact request to model_call events")
    where.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    where.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="text",
        help="what stdout gets: text (the final answer), json (one object at the end: answer, stop, "
        "model_calls, usage, cost_usd, run_id, session), stream-json (the event stream as JSON "
        "Lines while it happens, as --events writes it); progress stays on stderr",
    )
    where.add_argument(
        "--log",
        metavar="PATH|URL",
        help=f"run log: a SQLite file or a postgresql://... URL (default: {default_path()})",
    )
    where.add_argument("--no-log", action="store_true", help="do not record this run in the run log")
    where.add_argument(
        "--otel",
        action="store_true",
        help="record OpenTelemetry spans (GenAI conventions): to OTEL_EXPORTER_OTLP_ENDPOINT when set, "
        "else printed on stderr (needs the otel extra)",
    )

    sessions = run.add_argument_group("sessions")
    sessions.add_argument(
        "--session",
        metavar="NAME",
        help="continue the conversation of this session (created if new); one run at a time may use it",
    )
    sessions.add_argument(
        "--resume",
        action="store_true",
        help="continue the session's interrupted run from its last committed step (default "
        "session: the one saved last); a tool call the interruption cut off is not run again: "
        "the model is told its outcome is unknown",
    )

    limits = run.add_argument_group("limits and safety")
    limits.add_argument(
        "--max-iterations",
        type=_agent_option("max_iterations"),
        default=AGENT.max_iterations,
        help=f"agent turns (default {AGENT.max_iterations})",
    )
    limits.add_argument(
        "--token-budget",
        type=_agent_option("token_budget"),
        help="stop after this many billed tokens (input + output of every model call)",
    )
    limits.add_argument(
        "--time-limit",
        type=_seconds,
        metavar="SECONDS",
        help="stop after this many seconds of wall time (checked before each turn)",
    )
    limits.add_argument(
        "--allow-write",
        action="store_true",
        help="let write_file/edit_file run without asking (otherwise asked on a terminal, refused elsewhere)",
    )
    limits.add_argument(
        "--overwrite-files",
        action=argparse.BooleanOptionalAction,
        help="with --allow-write, write_file may replace an existing file whole (default: on, off "
        "for local models, which replaced whole files with a line or two when asked for a small "
        "change; they change files with edit_file)",
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
        help="never ask: fetch the local model if it is not installed yet; with --shell, run the "
        "commands --allow rules match and refuse the rest (then an --allow rule for the shell is needed)",
    )

    helpers = run.add_argument_group("sub-agents")
    helpers.add_argument(
        "--subagents",
        action=argparse.BooleanOptionalAction,
        help="offer the task tool: the agent can hand a self-contained piece of work (reading many "
        "files, a search) to a sub-agent with a fresh window and get back only its answer; kinds of "
        "sub-agent come from 'agents' in the config file (default: on, off for local models)",
    )
    helpers.add_argument(
        "--subagent-depth",
        type=_positive_int,
        default=SUBAGENTS.max_depth,
        metavar="N",
        help=f"how deep sub-agents may nest (default {SUBAGENTS.max_depth}: they cannot start their own)",
    )
    helpers.add_argument(
        "--subagent-concurrency",
        type=_positive_int,
        metavar="N",
        help=f"sub-agents of one agent that run at the same time (default {SUBAGENTS.concurrency}; "
        "1 for local models, whose one server answers one request at a time)",
    )
    helpers.add_argument(
        "--subagent-iterations",
        type=_positive_int,
        default=SUBAGENTS.max_iterations,
        metavar="N",
        help=f"turns one sub-agent may take (default {SUBAGENTS.max_iterations}); they count against "
        "--max-iterations, and its tokens against --token-budget",
    )

    memory = run.add_argument_group("long-term memory")
    memory.add_argument(
        "--memory",
        metavar="URL",
        default=os.environ.get(MEMORY_ENV),
        help="memory store: a SQLite path or postgresql://... URL; 'off' disables "
        f"(default: ${MEMORY_ENV}, else {default_store_url()}; with a local model, "
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

    servers = run.add_argument_group("MCP servers")
    servers.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="FILE",
        help='offer the tools of the MCP servers in FILE, a JSON file {"mcpServers": {NAME: {"command", '
        '"args", "env"} or {"url", "headers"}}} as Claude Desktop, Claude Code and Cursor use '
        "(repeatable; $TINYHARNESS_HOME/mcp.json is read too when it exists). Their tools are named "
        "mcp__NAME__TOOL; those not marked read-only need permission, e.g. --allow 'mcp__NAME__*'",
    )
    servers.add_argument(
        "--mcp-timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="seconds an MCP tool call may take before its server counts as hung and is restarted, "
        'for servers whose config sets no "timeout" (default 60)',
    )

    context = run.add_argument_group("context management")
    context.add_argument(
        "--context-window",
        type=_context_option("window"),
        help=f"window in tokens (default: the model's, else {DEFAULT_WINDOW})",
    )
    context.add_argument(
        "--compact-ratio",
        type=_context_option("ratio", float),
        help=f"compact at this share of the window (default {DEFAULT_RATIO})",
    )
    context.add_argument(
        "--compact-buffer",
        type=_context_option("buffer"),
        help="compact this many tokens below the window (instead of --compact-ratio)",
    )
    context.add_argument(
        "--keep-recent",
        type=_context_option("keep_recent"),
        default=CONTEXT.keep_recent,
        help="latest rounds (a model reply and its tool results) kept word for word at compaction "
        f"(default {CONTEXT.keep_recent})",
    )
    context.add_argument(
        "--accounting",
        choices=["context", "cumulative"],
        default=CONTEXT.accounting,
        help="context: tokens in the current window (default); cumulative: input + output of every "
        "call added up, reset at compaction",
    )
    context.add_argument(
        "--counter",
        choices=["auto", "chars4", "exact"],
        default=CONTEXT.counter,
        help="auto: an estimate (honest for CJK) corrected by reported usage (default); chars4: "
        "characters/4, never corrected; exact: a real tokenizer (the local server's, Anthropic's "
        "count_tokens endpoint, else o200k offline)",
    )
    context.add_argument(
        "--strategy",
        type=_context_option("strategy", str),
        default=CONTEXT.strategy,
        help="summarize, restart, clear-tool-results, sliding-window, offload or none, or a pipeline "
        f"a,b,c (default: {CONTEXT.strategy})",
    )
    context.add_argument("--compact-instructions", help="extra instructions for the summarizer")
    context.add_argument(
        "--restore-files",
        type=_context_option("restore_files"),
        metavar="N",
        help=f"files re-read into the window after a compaction that lost content (default "
        f"{CONTEXT.restore_files}; 0: none)",
    )
    context.add_argument(
        "--path-choices",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="read_file's path limited to the workspace's files not read yet (default: on; the "
        "JSON tool mode's grammar enforces it)",
    )
    context.add_argument(
        "--task-focus",
        action=argparse.BooleanOptionalAction,
        help="a guide that plans for the model: read_file offers the files the task names until "
        "they are read, then a question is answered; for a task over each file of a set, read_file "
        "offers the files not done yet, each read is followed by its note, and the run ends only "
        "when all are done (default: the profile's; on for local models, which cannot tell when "
        "they have the answer; see docs/guide.md)",
    )
    context.add_argument(
        "--profile",
        metavar="NAME",
        help="the per-model defaults: local (small local models: a guide that plans, notes before "
        "each compaction, no sub-agents, no memory...) or default (capable API models), or one "
        'defined under "profiles" in config.json (default: local for a local: model, else default)',
    )
    context.add_argument(
        "--each",
        metavar="GLOB",
        help="the task is over each file GLOB matches (e.g. 'src/**/*.py'): read and note each one "
        "(with --kind answer: read each and answer); states the plan instead of asking the model",
    )
    context.add_argument(
        "--kind",
        choices=list(KINDS),
        help="the task's kind, stated instead of asked: answer, list (list or count), edit, notes "
        "(a note per file of a set), explore",
    )
    context.add_argument(
        "--flush-notes",
        action=argparse.BooleanOptionalAction,
        help="before each compaction, requests in which the model must call the note tool, one per "
        "file still in the window (default: on for local models, which do not take notes when only "
        "asked; off otherwise)",
    )
    context.add_argument(
        "--summary-mode",
        choices=["update", "rewrite"],
        default=CONTEXT.summary_mode,
        help="update: a later summary updates the previous one, keeping what it does not change "
        "word for word (default); rewrite: each summary is written afresh from the previous one "
        "and the new messages",
    )
    structure = run.add_argument_group("plan, pins and earlier conversation")
    structure.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="TEXT",
        help="keep TEXT word for word in the agent's context for the whole run, through every "
        "summary: a requirement it must not lose (repeatable; e.g. --pin 'Never edit tests/')",
    )
    structure.add_argument(
        "--plan",
        action=argparse.BooleanOptionalAction,
        help="offer the todo tool (the agent writes its plan, shown on the progress line and kept "
        "through compaction) and the pin tool (default: on, off for local models, which loop on "
        "them)",
    )
    structure.add_argument(
        "--no-project-instructions",
        action="store_true",
        help="do not read AGENTS.md (or CLAUDE.md) files, the workspace's, its sub-folders' and "
        "$TINYHARNESS_HOME/AGENTS.md (by default they reach the model word for word and are kept "
        "through every compaction; see docs/agents-md.md)",
    )
    structure.add_argument(
        "--search-history",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep what compaction takes out of the context in a searchable file of the run and "
        "offer the search_history tool (default: on)",
    )

    runlog_cli.register(commands)
    durable_cli.register(commands, run)
    memory_cli.register(commands)
    mcp_cli.register(commands)
    models_cli.register(commands)
    settings_cli.register_keys(commands)
    skills_cli.register(commands)
    hooks_cli.register(commands)

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
    outside_ok = getattr(args, "notes_outside_workspace", False)  # `chat` has no such option
    if not Path(os.path.realpath(path.parent)).is_relative_to(root) and not outside_ok:
        raise ConfigError(
            f"--notes {args.notes} is outside the workspace {workspace}; give a path relative to "
            "the workspace, or add --notes-outside-workspace to use that file anyway"
        )
    return path


def _register_chat(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = commands.add_parser(
        "chat",
        help="talk with the agent in this terminal (also: tinyharness alone)",
        description="An interactive agent: replies stream as the model writes, tool calls show "
        "inline, each write shows its diff and asks (yes / no / always for the folder), Ctrl-C "
        "stops a turn (twice leaves). /help lists the slash commands. Every option of `run` not "
        "listed here takes its default.",
    )
    chat.add_argument("--model", help=f"model string (default: ${MODEL_ENV}, the config file, else local)")
    chat.add_argument("--base-url", help="server URL for openai:/anthropic: models")
    chat.add_argument(
        "--tool-mode", choices=["native", "json"], help="default: json for local, native otherwise"
    )
    chat.add_argument("--workspace", default=".", help="folder the tools may touch (default: .)")
    chat.add_argument("--notes", help="notes file, relative to the workspace (default: NOTES.md)")
    chat.add_argument("--session", metavar="NAME", help="continue this conversation (created if new)")
    chat.add_argument("--log", metavar="PATH", help=f"run log database (default: {default_path()})")
    chat.add_argument("--no-log", action="store_true", help="keep no run log (no /resume)")
    chat.add_argument("--allow-write", action="store_true", help="write without asking")
    chat.add_argument("--allow", action="append", default=[], metavar="RULE", help="allow rule (repeatable)")
    chat.add_argument("--deny", action="append", default=[], metavar="RULE", help="deny rule (repeatable)")
    chat.add_argument("--shell", action="store_true", help="offer the shell tool (each command asked)")
    chat.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="FILE",
        help="offer the tools of the MCP servers in FILE (as for run; repeatable; "
        "$TINYHARNESS_HOME/mcp.json is read too when it exists)",
    )
    chat.add_argument("--memory", metavar="URL", default=os.environ.get(MEMORY_ENV), help="memory store")
    chat.add_argument("--no-memory", action="store_true", help="no long-term memory")
    chat.add_argument(
        "--context-window", type=_context_option("window"), help="window in tokens (default: model's)"
    )
    chat.add_argument("--strategy", help="compaction strategy or pipeline (as for run)")
    chat.add_argument(
        "--profile",
        metavar="NAME",
        help="the per-model defaults, as for run (default: local for a local: model, else default)",
    )
    chat.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="TEXT",
        help="keep TEXT word for word in the agent's context through every summary (repeatable)",
    )
    chat.add_argument(
        "--no-project-instructions",
        action="store_true",
        help="do not read AGENTS.md / CLAUDE.md files (see docs/agents-md.md)",
    )
    chat.add_argument(
        "--max-iterations",
        type=_agent_option("max_iterations"),
        default=50,
        help="agent turns per message (50)",
    )
    chat.add_argument(
        "--max-output-tokens",
        type=_agent_option("max_output_tokens"),
        default=1024,
        help="output limit per request (1024)",
    )


def _chat_args(argv: Sequence[str]) -> argparse.Namespace:
    """The chat's options over the defaults of every `run` option."""
    parser = build_parser()
    args = parser.parse_args(["run", "-", "--quiet"])
    chat = parser.parse_args(["chat", *argv])
    for key, value in vars(chat).items():
        setattr(args, key, value)
    args.task = None
    return args


async def _chat(args: argparse.Namespace) -> int:
    from .chat import ChatSetup, WriteReview, run_chat  # only the chat needs rich and prompt_toolkit

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError('chat needs a terminal; for scripts and pipes use tinyharness run "task"')
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    check_shell_options(shell=args.shell, yes=False, allow=args.allow)
    mcp_configs = load_config(args.mcp, timeout=args.mcp_timeout)  # a bad file fails before anything starts
    keep_run_state_out_of_git(args, workspace)
    base_url_option = args.base_url
    apply_settings(args)
    log = None if args.no_log else open_run_log(args.log or default_path())
    sessions = _session_store(log) if log is not None else None
    stores: dict[int, MemoryStore] = {}
    structures: dict[str, _Structure] = {}
    runners: dict[int, SubAgents] = {}
    project = _conventions(args, workspace)

    def build(model_spec: str, name: str, session: SQLiteSession | None, review: WriteReview) -> Agent:
        args.model, args.base_url = model_spec, base_url_option  # /model may switch provider
        apply_settings(args, permissions=False)
        events = EventBus([log] if log is not None else [])
        if session is not None:
            session.run_id = events.run_id
        model = _model_from_args(args)
        if name not in structures:  # one plan per conversation: a /model switch keeps it
            structures[name] = _Structure(args, workspace, name)
            saved = session.load() if session is not None else None
            if saved is not None and isinstance(saved.state.get("anchors"), dict):
                structures[name].anchors.load_state(saved.state["anchors"])  # /resume keeps the plan
        structure = structures[name]
        read_state = ReadState()
        tools = _tools(args, workspace, events, _result_cap(args), structure, read_state=read_state)
        for tool in mcp_servers.tools if mcp_servers is not None else ():
            tools.add(tool)  # the servers started once for the chat; every agent offers their tools

        def attach(registry: ToolRegistry) -> None:
            review.attach(registry)
            project.attach_registry(registry)

        runner = _subagents(args, workspace, attach) if _subagents_on(args) else None
        if runner is not None:
            tools.add(runner.tool())
            runner.check_profiles(tools.names)
        review.attach(tools)
        memory = _memory(args, events, name)
        config = AgentConfig(
            max_iterations=args.max_iterations,
            token_budget=args.token_budget,
            max_output_tokens=args.max_output_tokens,
            prices=getattr(args, "prices", None),
        )
        agent = _assemble(
            args,
            workspace,
            model,
            tools,
            events,
            read_state,
            structure,
            session,
            name=name,
            config=config,
            memory=memory,
        )
        project.attach(agent, events, name, _warn)
        if memory is not None:
            stores[id(agent)] = memory.manager.store
        if runner is not None:
            runners[id(agent)] = runner
        return agent

    async def close(agent: Agent) -> None:
        store = stores.pop(id(agent), None)
        runner = runners.pop(id(agent), None)
        try:
            if runner is not None:
                await runner.aclose()
            await agent.model.aclose()
        finally:
            if store is not None:
                store.close()

    search = None
    if not args.no_memory and (args.memory or "").lower() != "off" and args.memory is not None:
        search = functools.partial(_search_memory, args)
    mcp_servers: McpServers | None = None
    try:
        if mcp_configs:
            print(f"tinyharness: starting {len(mcp_configs)} MCP server(s)…", file=sys.stderr, flush=True)
            server_events = EventBus([log] if log is not None else [])
            capped = ToolRegistry(result_cap=_result_cap(args))
            mcp_servers = await _mcp_servers(mcp_configs, server_events, workspace, capped)
        return await run_chat(
            ChatSetup(
                workspace=workspace,
                model=args.model,
                build=build,
                close=close,
                notes_path=_notes_path(args, workspace),
                sessions=sessions,
                session=args.session,
                history_file=data_home() / "chat_history",
                search_memory=search,
            )
        )
    finally:
        try:
            if mcp_servers is not None:
                await mcp_servers.aclose()
        finally:
            for closable in (sessions, log, *structures.values()):
                if closable is not None:
                    closable.close()


def _search_memory(args: argparse.Namespace, query: str) -> list[str]:
    store = open_store(args.memory)
    try:
        hits = store.search(query, Scope(user=args.memory_user), limit=5)
        return [f"{hit.item.content}  ({hit.item.id})" for hit in hits]
    finally:
        store.close()


def apply_settings(args: argparse.Namespace, *, permissions: bool = True) -> None:
    """Fill what the command line left open from the environment and the config file (in that
    order), and add the config file's permission rules to the command line's."""
    settings = load_settings()
    args.prices = PriceTable.builtin().with_overrides(settings.prices)  # config.json's prices added
    args.model, _ = resolve_model(args.model, settings)
    provider = lookup_provider(args.model.partition(":")[0])
    if provider is not None:  # --base-url, the provider's variable, the config file, its default
        args.base_url = provider.base_url_for(args.base_url, settings.base_urls.get(provider.name))
    if permissions:
        args.allow = [*settings.allow, *args.allow]
        args.deny = [*settings.deny, *args.deny]


def keep_run_state_out_of_git(args: argparse.Namespace, workspace: Path) -> None:
    """Add NOTES.md and .tinyharness/ to .git/info/exclude, saying so the one time it happens."""
    added = exclude_run_state(workspace, _notes_path(args, workspace))
    if added:
        print(
            f"tinyharness: added {' and '.join(added)} to .git/info/exclude (notes and run state "
            "stay out of your commits; remove the lines to track them)",
            file=sys.stderr,
        )


def _warn(line: str) -> None:
    print(f"tinyharness: {line}", file=sys.stderr)


def _conventions(args: argparse.Namespace, workspace: Path, *, ask: bool = True) -> ProjectConventions:
    """AGENTS.md, skills and hooks of the workspace (see ``conventions``); whether to trust a
    project's hooks file is asked on a terminal (not with ``ask`` False); notices go to stderr."""
    on_terminal = ask and sys.stdin.isatty()
    project = ProjectConventions.load(
        workspace,
        instructions=not getattr(args, "no_project_instructions", False),
        ask=_confirm_on_terminal if on_terminal else None,
    )
    for line in project.notices:
        _warn(line)
    return project


def _confirm_on_terminal(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


class _Structure:
    """What a run keeps beside its history: the plan and the pins (``--pin``, the todo and pin
    tools), and the searchable file of what compaction takes out of the window, one per
    session, so a resumed run searches what the killed one dropped."""

    def __init__(self, args: argparse.Namespace, workspace: Path, session: str) -> None:
        try:
            self.anchors = Anchors(pins=getattr(args, "pin", None) or ())
        except AnchorError as exc:
            raise ConfigError(f"--pin: {exc}") from None
        self.history: DroppedHistory | None = None
        if getattr(args, "search_history", True):
            name = re.sub(r"[^\w.-]", "_", session)[:100] or "run"
            self.history = DroppedHistory(workspace / ".tinyharness" / "history" / f"{name}.db", workspace)
        self.plan = _plan_tools_on(args)

    def close(self) -> None:
        if self.history is not None:
            self.history.close()


def _plan_tools_on(args: argparse.Namespace) -> bool:
    """--plan / --no-plan, else on, except for local models: asked to plan, Qwen2.5-Coder-0.5B
    in JSON mode wrote the todo tool's own description as its one step and sent the same todo
    call until the iterations ran out (measured; bench/RESULTS.md section 10)."""
    chosen = getattr(args, "plan", None)
    return _profile(args).plan_tools if chosen is None else bool(chosen)


def _context(
    args: argparse.Namespace,
    model: Model,
    events: EventBus,
    workspace: Path,
    tools: ToolRegistry,
    session: SQLiteSession | None = None,
    structure: _Structure | None = None,
    notes: Path | None = None,
    steps: DurableSteps | None = None,
    anchors: Anchors | None = None,
    guide: Guide | None = None,
    run_notes: Path | None = None,
) -> ContextPolicy:
    # No window here: --context-window went to the model (a local server sizes itself by it),
    # and the context takes the model's, so the window is resolved in one place.
    config = ContextConfig(
        strategy=args.strategy,
        ratio=args.compact_ratio,
        buffer=args.compact_buffer,
        keep_recent=args.keep_recent,
        accounting=args.accounting,
        counter=args.counter,
        instructions=args.compact_instructions,
        notes_path=notes or _notes_path(args, workspace),
        workspace=workspace,
        # Local models do not take notes when only asked (measured), so they must by default.
        flush_notes=args.flush_notes if args.flush_notes is not None else _profile(args).flush_notes,
        run_notes_path=run_notes,
        **({"restore_files": args.restore_files} if args.restore_files is not None else {}),
        summary_mode=getattr(args, "summary_mode", CONTEXT.summary_mode),
    )
    run_call: Callable[[ToolUseBlock], Awaitable[ToolResultBlock]] = functools.partial(
        tools.run_call, events=events
    )
    if guide is not None:  # the flush's notes are checked and routed as the loop's are
        run_call = reviewed_run(guide, run_call)
    if steps is not None:  # the notes flush's calls are recorded steps too
        durable_steps, run_now = steps, run_call
        run_call = lambda call: durable_steps.tool_call(call, lambda: run_now(call))  # noqa: E731
    return build_context(
        config,
        model=model,
        events=events,
        run_call=run_call,
        flush_journal=session,
        tool_specs=lambda: tools.specs,
        anchors=structure.anchors if structure is not None else anchors,  # a sub-agent's: its pins
        dropped=structure.history if structure is not None else None,
    )


def _legacy_checkpoint(log: RunLogStore, name: str) -> SavedSession | None:
    """A session saved by an older tinyharness in the run log itself (redacted: secrets in it
    read as placeholders from now on, so say so)."""
    checkpoint = log.load_checkpoint(name)
    if checkpoint is None:
        return None
    state = dict(checkpoint.state)
    turn = TurnProgress(started={str(c) for c in state.pop("started", [])})
    for data in state.pop("finished_results", []):
        block = block_from_dict(data)
        if isinstance(block, ToolResultBlock):
            turn.finished[block.tool_use_id] = block
    print(
        f"tinyharness: session {name!r} was saved by an older version with secrets redacted; "
        "it continues from that copy",
        file=sys.stderr,
    )
    return SavedSession(checkpoint.run_id, messages_from_dicts(checkpoint.messages), state, turn)


def _open_session(
    args: argparse.Namespace, log: RunLogStore | None, store: SessionStore | None, run_id: str
) -> tuple[SQLiteSession | None, StartPoint]:
    """The session this run writes (locked) and what the run starts from."""
    if log is None or store is None:
        if args.session or args.resume:
            raise ConfigError("--session and --resume need the run log; drop --no-log")
        return None, start_point(None, "", resume=False)
    name = args.session
    if args.resume and not name:
        name = store.latest()
        if not name:
            raise ConfigError("nothing to resume: no session has been saved yet; start one with a task")
    session = store.open(name or run_id)
    session.run_id = run_id
    try:
        session.lock()
        saved = session.load() if name else None
        if saved is None and name:
            saved = _legacy_checkpoint(log, name)
        start = start_point(saved, session.name, resume=args.resume)
    except BaseException:
        session.close()
        raise
    if start.closed and not args.quiet:
        print(
            f"tinyharness: session {session.name!r}: {len(start.closed)} tool call(s) cut off earlier "
            "are answered as 'outcome unknown' (not run again)",
            file=sys.stderr,
        )
    return session, start


def _session_store(log: RunLogStore) -> SessionStore:
    """Sessions stay on this machine, beside the SQLite run log (a shared PostgreSQL log is
    redacted; sessions need the exact history, see ``session.sqlite``)."""
    return SessionStore(store_path_for(log.path if isinstance(log, RunLog) else default_path()))


async def _run(
    args: argparse.Namespace,
    *,
    durable_run: str | None = None,
    shared_log: RunLogStore | None = None,
    sinks: Sequence[EventSink] = (),
) -> RunResult:
    """One run of ``tinyharness run``; ``durable_run``: the id of a queued run a worker runs
    (its model and tool calls become recorded steps, see ``durable.steps``), logged to the
    worker's ``shared_log`` (one connection for all its runs); ``sinks``: more listeners to the
    run's events (``--output-format``)."""
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    if args.task is None and not args.resume:
        raise ConfigError("give a task, or --resume to continue an interrupted run")
    _notes_path(args, workspace)  # a --notes outside the workspace is refused before anything starts
    check_shell_options(shell=args.shell, yes=args.yes, allow=args.allow)
    mcp_configs = load_config(args.mcp, timeout=args.mcp_timeout)  # a bad file fails before anything starts
    if shared_log is not None:
        log: RunLogStore | None = shared_log
    else:
        log = None if args.no_log else open_run_log(args.log or default_path())
    store: SessionStore | None = None
    session: SQLiteSession | None = None
    jsonl: JsonlSink | None = None
    model: Model | None = None
    opened: list[MemoryStore] = []
    otel: OTelSink | None = None
    mcp_servers: McpServers | None = None
    structure: _Structure | None = None
    subagents: SubAgents | None = None
    try:
        if log is not None and durable_run is None:
            store = _session_store(log)
        events = EventBus(run_id=durable_run)
        session, start = _open_session(args, log, store, events.run_id)
        jsonl = _events_file(args.events) if args.events else None
        events.sinks.extend(s for s in (log, jsonl, *sinks) if s is not None)
        if args.otel:
            otel = otel_sink_from_env(provider=provider_name(args.model))
            events.sinks.append(otel)
        if not args.quiet:
            events.sinks.append(ProgressPrinter())
        if durable_run is not None and log is not None:  # a replay: what is logged already stays once
            events.sinks = [OnlyNew(durable_run, log.last_seq(durable_run), events.sinks)]
        session_name = session.name if session is not None else events.run_id
        structure = _Structure(args, workspace, session_name)
        project = _conventions(args, workspace, ask=not args.yes)
        read_state = ReadState()
        tools = _tools(args, workspace, events, _result_cap(args), structure, read_state=read_state)
        mcp_servers = await _mcp_servers(mcp_configs, events, workspace, tools)  # before the model: fail fast
        model = _model_from_args(args)
        from .models.local import LocalModel  # here: the module loads the SDK, not every command needs it

        if isinstance(model, LocalModel) and model.notice:  # another local model stands in
            say(f"tinyharness: {model.notice}", err=True)
        if _subagents_on(args):
            subagents = _subagents(args, workspace, project.attach_registry)
            tools.add(subagents.tool())
            subagents.check_profiles(tools.names)
        _check_window(args.context_window or model.context_window, tools, args.max_output_tokens)
        steps = DurableSteps(model, events) if durable_run is not None else None
        memory = _memory(args, events, session_name)
        # Only once the configuration has held: a refused run leaves the user's repository alone.
        keep_run_state_out_of_git(args, workspace)
        if memory is not None:
            opened.append(memory.manager.store)
        agent = _assemble(
            args,
            workspace,
            model,
            tools,
            events,
            read_state,
            structure,
            session,
            name=session_name,
            steps=steps,
            memory=memory,
            config=AgentConfig(
                max_iterations=args.max_iterations,
                token_budget=args.token_budget,
                max_output_tokens=args.max_output_tokens,
                trace=args.trace,
                time_limit=args.time_limit,
                prices=getattr(args, "prices", None),
            ),
        )
        project.attach(agent, events, session_name, _warn)
        task = None if args.resume else args.task
        return await agent.arun(
            task,
            history=start.history,
            state=start.state,
            turn=start.turn,
            session=session_name,
        )
    except BaseException:
        # The error that stopped the run is the one to report: a scripted model's "responses
        # left unused" at close would only hide it.
        if model is not None:
            with contextlib.suppress(Exception):
                await model.aclose()
            model = None
        raise
    finally:
        try:
            if mcp_servers is not None:
                await mcp_servers.aclose()
            if subagents is not None:
                await subagents.aclose()
            if model is not None:
                await model.aclose()
        finally:
            own_log = log if shared_log is None else None  # a worker's log serves all its runs
            for closable in (otel, jsonl, session, store, own_log, structure, *opened):
                if closable is not None:
                    closable.close()


def _assemble(
    args: argparse.Namespace,
    workspace: Path,
    model: Model,
    tools: ToolRegistry,
    events: EventBus,
    read_state: ReadState,
    structure: _Structure,
    session: SQLiteSession | None,
    *,
    name: str,
    config: AgentConfig,
    steps: DurableSteps | None = None,
    memory: ScopedMemory | None = None,
) -> Agent:
    """The Agent of a run, a chat and a durable run alike: the profile's guide (``_guide``),
    the context policy the guide's review also applies to, and the loop. Sub-agents get the
    same guide from ``_subagents``; the library's front door (``tinyharness.Agent("local",
    workspace=...)``) builds its agent here too."""
    guide = _guide(args, workspace, events, read_state, tools, name)
    run_notes = _run_notes_path(workspace, name) if guide is not None and _profile(args).run_notes else None
    context = _context(
        args,
        model,
        events,
        workspace,
        tools,
        session,
        structure,
        steps=steps,
        guide=guide,
        run_notes=run_notes,
    )
    return Agent(
        model,
        tools,
        config,
        context=context,
        events=events,
        checkpoint=session,
        memory=memory,
        anchors=structure.anchors,
        steps=steps,
        guide=guide,
    )


@dataclass
class Assembled:
    """An agent built as ``tinyharness run`` builds it, and what it holds open (``aclose``)."""

    agent: Agent
    subagents: SubAgents | None
    closables: list[Any]

    async def aclose(self) -> None:
        try:
            if self.subagents is not None:
                await self.subagents.aclose()
            await self.agent.model.aclose()
        finally:
            for closable in self.closables:
                closable.close()


def assemble_agent(
    model: str,
    workspace: str | os.PathLike[str] = ".",
    *,
    profile: str | None = None,
    options: Sequence[str] = (),
) -> Assembled:
    """The library's front door (``tinyharness.Agent("local", workspace=...)``): the agent
    ``tinyharness run --model MODEL --workspace WORKSPACE [OPTIONS]`` builds (the same profile,
    tools, guide, context policy and memory; no run log, session or MCP servers, which a run
    opens around it), through the same ``_assemble``. ``options`` are run's options, as words."""
    argv = ["run", "-", "--model", model, "--workspace", str(workspace), "--no-log", "--quiet"]
    args = build_parser().parse_args([*argv, *(["--profile", profile] if profile else []), *options])
    apply_settings(args)
    root = Path(args.workspace).resolve()
    if not root.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    check_shell_options(shell=args.shell, yes=args.yes, allow=args.allow)
    events = EventBus()
    structure = _Structure(args, root, events.run_id)
    closables: list[Any] = [structure]
    read_state = ReadState()
    tools = _tools(args, root, events, _result_cap(args), structure, read_state=read_state)
    subagents = None
    if _subagents_on(args):
        subagents = _subagents(args, root)
        tools.add(subagents.tool())
    memory = _memory(args, events, events.run_id)
    if memory is not None:
        closables.append(memory.manager.store)
    config = AgentConfig(
        max_iterations=args.max_iterations,
        token_budget=args.token_budget,
        max_output_tokens=args.max_output_tokens,
        trace=args.trace,
        time_limit=args.time_limit,
    )
    agent = _assemble(
        args,
        root,
        _model_from_args(args),
        tools,
        events,
        read_state,
        structure,
        None,
        name=events.run_id,
        config=config,
        memory=memory,
    )
    return Assembled(agent, subagents, closables)


def _events_file(path: str) -> JsonlSink:
    try:
        return JsonlSink(path)
    except OSError as exc:
        raise ConfigError(f"cannot write the event stream to {path}: {exc.strerror or exc}") from None


def _check_window(window: int | None, tools: ToolRegistry, max_output: int) -> None:
    """Every request carries the system prompt and the tool list and leaves room for the reply:
    a window smaller than that can never hold a request, whatever the model."""
    if window is None:
        return
    specs = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools.specs
    ]
    counter = HeuristicCounter()
    fixed = counter.count_text(AGENT.system) + counter.count_text(json.dumps(specs))
    if window < fixed + max_output:
        raise ConfigError(
            f"--context-window {window} is too small: the system prompt and the tool list take about "
            f"{fixed} tokens and a reply up to {max_output} (--max-output-tokens); give at least "
            f"{fixed + max_output}"
        )


def _result_cap(args: argparse.Namespace) -> int:
    """Characters one tool result may carry: at most what the offload step lets through at this
    window (OFFLOAD_SHARE of the trigger), so read_file pages a long file itself and every page
    reaches the model whole. Offloaded to a preview, a read could never be read in full (its
    file lives under .tinyharness/, which read_file does not offer); measured at 4096 with the
    0.5B model, 9 of 19 reads were."""
    window = args.context_window or _profile(args).window
    if not window:
        return DEFAULT_RESULT_CAP
    ratio = args.compact_ratio or DEFAULT_RATIO
    tokens = int(window * ratio * OFFLOAD_SHARE)
    return min(DEFAULT_RESULT_CAP, tokens * CODE_CHARS_PER_TOKEN + READ_RESERVE_CHARS)


def _overwrite(args: argparse.Namespace) -> bool:
    """Whether write_file may replace an existing file (--overwrite-files; default: not for
    local models, see tools.files.NO_OVERWRITE). The chat has no such option: its default."""
    wanted: bool | None = getattr(args, "overwrite_files", None)
    return wanted if wanted is not None else _profile(args).overwrite


def _model_from_args(args: argparse.Namespace) -> Model:
    """The run's model as the options (after the settings file) name it: a run and every chat
    agent build it the same way. A local model not yet installed is fetched first when the user
    agrees (``--yes``, the setting, or a question on a terminal)."""
    ensure_local_model(args.model, assume_yes=getattr(args, "yes", False), ask=ask_on_terminal())
    return load_model(
        args.model,
        base_url=args.base_url,
        tool_mode=args.tool_mode,
        timeout=args.timeout,
        max_retries=args.max_retries,
        context_window=args.context_window,
    )


def _guide(
    args: argparse.Namespace,
    workspace: Path,
    events: EventBus,
    read_state: ReadState,
    tools: ToolRegistry,
    run_name: str,
    notes_path: Path | None = None,
) -> Guide | None:
    """The run's guide, as its profile says (--task-focus turns a plan guide on or off; see
    docs/guide.md): handed the task once, it shapes each request. None for no guide."""
    profile = _profile(args)
    wanted = args.task_focus if args.task_focus is not None else profile.guide == "plan"
    if not wanted:
        return None
    notes = NotesFile(notes_path or _notes_path(args, workspace), root=workspace)
    run_notes = NotesFile(_run_notes_path(workspace, run_name), root=workspace) if profile.run_notes else None
    # A note must not be a tool's description (measured: the 0.5B wrote read_file's as a note).
    known = [spec.description.split(". ", 1)[0] for spec in tools.specs]
    window = args.context_window or profile.window
    return PlanGuide(
        workspace,
        read_state=read_state,
        notes=notes,
        run_notes=run_notes,
        classify=profile.classify,
        options=PlanOptions(each=getattr(args, "each", None), kind=getattr(args, "kind", None)),
        events=events,
        may_write=any(tools.get(name) for name in ("write_file", "edit_file")),
        room_chars=window * CODE_CHARS_PER_TOKEN // 2 if window else None,
        known=known,
        rank=_workspace_rank,
    )


def _workspace_rank(root: Path, task: str, k: int) -> list[Ranked | str]:
    """The plan's target candidates: the workspace's files and folders ranked against the task
    by the repository map (BM25 over paths, definitions and heads; any language), then what
    the in-tree ranking offers (named paths, folders, a glob per kind of file, files), up to
    ``k``; folders end in "/". A task no ranking matches still gets every candidate a small
    workspace has."""
    from .retrieval import RepoMap  # here: only a run that plans builds the map

    repo = RepoMap.build(root)
    ranked = [
        Ranked(c.path.rstrip("/") + "/" if c.kind == "dir" else c.path, c.score) for c in repo.rank(task, 10)
    ]
    seen = {r.path for r in ranked}
    listed = [p for p in simple_rank(lambda: [f.path for f in repo.files])(root, task, k) if p not in seen]
    return [*ranked, *listed][:k]


def _run_notes_path(workspace: Path, run_name: str) -> Path:
    """The run's own notes (what a guided run noted for itself on a task that asked for none)."""
    name = re.sub(r"[^\w.-]", "_", run_name)[:100] or "run"
    return workspace / ".tinyharness" / "notes" / f"{name}.md"


def _tools(
    args: argparse.Namespace,
    workspace: Path,
    events: EventBus,
    result_cap: int,
    structure: _Structure | None = None,
    notes_path: Path | None = None,
    *,
    read_state: ReadState | None = None,
) -> ToolRegistry:
    notes = NotesFile(
        notes_path or _notes_path(args, workspace),
        on_write=lambda op, chars: events.emit("notes_write", op=op, chars=chars),
        root=workspace,
    )
    permissions = Permissions(
        allow_write=args.allow_write,
        allow=args.allow,
        deny=args.deny,
        confirm=_confirm_on_terminal if sys.stdin.isatty() and not args.yes else None,
    )
    registry = builtin_tools(
        Workspace(workspace, read_only=home_mounts()),  # the user's skills, read as /skills/...
        notes=notes,
        permissions=permissions,
        shell=args.shell,
        result_cap=result_cap,
        read_state=read_state,
        path_choices=args.path_choices,
        overwrite=_overwrite(args),
    )
    if args.memory_dir:
        for tool in memory_tools(Path(args.memory_dir)):
            registry.add(tool)
    if structure is not None:
        if structure.plan:
            for tool in plan_tools(structure.anchors, events):
                registry.add(tool)
        if structure.history is not None:
            registry.add(structure.history.tool())
    for name in registry.names:
        offered = registry.get(name)
        if offered is not None and permissions.always_refuses(offered):
            registry.remove(name)  # offered, it would only be refused (see always_refuses)
    return registry


async def _mcp_servers(
    configs: list[McpServerConfig], events: EventBus, workspace: Path, tools: ToolRegistry
) -> McpServers | None:
    """Start the configured MCP servers and add their tools; None when there are none."""
    if not configs:
        return None
    from .mcp.client import McpServers, quiet_sdk_logs

    quiet_sdk_logs()
    saved = workspace / ".tinyharness" / "mcp"  # images and whole results, for the model to read
    servers = McpServers(configs, events=events, save_dir=saved, root=workspace, result_cap=tools.result_cap)
    await servers.start()
    for tool in servers.tools:
        tools.add(tool)
    return servers


def _subagents_on(args: argparse.Namespace) -> bool:
    """--subagents, else on for every model but local ones (see the README, "Sub-agents")."""
    chosen: bool | None = args.subagents
    return chosen if chosen is not None else _profile(args).subagents


def _subagents(
    args: argparse.Namespace, workspace: Path, attach: Callable[[ToolRegistry], None] | None = None
) -> SubAgents:
    """The task tool's runner: children get this run's options (permissions, compaction,
    result cap), their own notes under .tinyharness/subagents/, and the profiles of the
    config file (checked now: a bad profile stops the run before it starts). ``attach`` wraps
    each child's tools as the parent's are (the chat's diff review of writes)."""
    config = SubAgentConfig(
        max_depth=args.subagent_depth,
        concurrency=args.subagent_concurrency or _profile(args).subagent_concurrency or SUBAGENTS.concurrency,
        max_iterations=args.subagent_iterations,
        profiles=load_profiles(load_settings().agents),
    )
    result_cap = _result_cap(args)

    guides: dict[int, Guide] = {}  # a child's guide, by its registry: its context reviews with it
    # The read state of the tools made last: a child's guide is made right after its tools, with
    # no await between (see ``SubAgents._child``), so it is that child's.
    state = [ReadState()]

    def tools(notes: Path, events: EventBus) -> ToolRegistry:
        state[0] = ReadState()
        registry = _tools(args, workspace, events, result_cap, notes_path=notes, read_state=state[0])
        if attach is not None:
            attach(registry)
        return registry

    def guide(registry: ToolRegistry, notes: Path, events: EventBus, name: str) -> Guide | None:
        """The child's guide: its profile's, as the parent's (the same ``_guide``)."""
        made = _guide(args, workspace, events, state[0], registry, name, notes)
        if made is not None:
            guides[id(registry)] = made
        return made

    def context(
        model: Model,
        events: EventBus,
        registry: ToolRegistry,
        notes: Path,
        session: SQLiteSession | None,
        pins: Anchors | None,
    ) -> ContextPolicy:
        guided = guides.pop(id(registry), None)
        return _context(
            args, model, events, workspace, registry, session, notes=notes, anchors=pins, guide=guided
        )

    def model(spec: str) -> Model:
        provider = spec.strip().partition(":")[0]
        base_url = resolve_base_url(provider, None) if provider in ("openai", "anthropic") else None
        return load_model(
            spec,
            base_url=base_url,
            timeout=args.timeout,
            max_retries=args.max_retries,
            context_window=args.context_window,
        )

    host = SubAgentHost(
        tools=tools,
        state_dir=workspace / ".tinyharness" / "subagents",
        context=context,
        load_model=model,
        guide=guide,
    )
    return SubAgents(config, host)


def _memory(args: argparse.Namespace, events: EventBus, session: str) -> ScopedMemory | None:
    if args.no_memory or (args.memory or "").lower() == "off":
        return None
    if args.memory is None and not _profile(args).memory:
        # Measured: small local models extract junk "facts" (the 135M model; the 0.5B stored
        # the echoed task as a "preference"), and recalling them derailed the next run.
        # Ask for a store to use it.
        return None
    manager = MemoryManager(open_store(args.memory), events=events)
    return ScopedMemory(manager, Scope(user=args.memory_user, agent="tinyharness", session=session))


def _profile(args: argparse.Namespace) -> Profile:
    """The run's profile: --profile, else the model's kind (``profiles.profile_for``)."""
    defined = defined_profiles(load_settings().profiles)
    return profile_for(getattr(args, "model", None) or "", getattr(args, "profile", None), defined)


def main(argv: Sequence[str] | None = None) -> int:
    """The command. Every user mistake, whatever command it reaches, ends as one line on stderr:
    typed errors, and OSError on a path the user gave (a folder that does not exist, a file
    where a folder should be, a full disk). A closed stdout (``tinyharness runs | head``) ends
    the command quietly. ``tinyharness`` alone in a terminal is ``tinyharness chat``."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not words and sys.stdin.isatty() and sys.stdout.isatty():
        words = ["chat"]
    args = _chat_args(words[1:]) if words[:1] == ["chat"] else build_parser().parse_args(words)
    if args.command == "submit":
        args.words = words[1:]  # the run's options as given, for the worker to parse again
    # Children never outlive the command: orphaned daemons come back to us and are ended.
    procs.become_subreaper()
    began = procs.boot_ticks()
    try:
        code = _command(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away: nothing more to say. Point stdout at /dev/null so the
        # interpreter's final flush does not complain either.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ConfigError, RunLogError, SessionStoreError) as exc:
        return _fail(str(exc), 2)
    except HarnessError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", 2)
    except KeyboardInterrupt:  # only a run has a --resume to continue with
        return _fail("interrupted" + ("; continue with --resume" if args.command == "run" else ""), 1)
    except Exception as exc:  # a bug, not the user's mistake: one line, the trace in a file
        if os.environ.get(DEBUG_ENV):
            raise
        return _fail(_crash_line(exc), 1)
    finally:
        procs.end_strays(began)


def _crash_line(exc: Exception) -> str:
    """The one line for an unexpected error, naming the file that holds its full trace (redacted:
    the trace may quote tool arguments), or saying how to see it when no file can be written."""
    what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    trace = redact("".join(traceback.format_exception(exc)))
    folder = data_home() / "crashes"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path = folder / f"crash-{stamp}-{os.getpid()}.txt"
    try:
        with create_new(path, data_home(), mode=0o600) as file:
            file.write(trace.encode("utf-8", "replace"))
    except OSError:
        return f"unexpected error ({redact(what)}); run again with {DEBUG_ENV}=1 to see the trace"
    return f"unexpected error ({redact(what)}); the full trace is in {path} (set {DEBUG_ENV}=1 to print it)"


def _fail(message: str, code: int) -> int:
    say(f"tinyharness: {message}", err=True)
    return code


def _rerank_model(spec: str) -> Model:
    """The model ``memory search --rerank`` names, with the base URL the settings give its
    provider (the API key comes from the environment or the keys file, as for a run)."""
    provider = spec.partition(":")[0]
    base_url = resolve_base_url(provider, None) if provider in ("openai", "anthropic") else None
    return load_model(spec, base_url=base_url)


def _command(args: argparse.Namespace) -> int:
    if args.command == "notes":
        workspace = Path(args.workspace)
        if not workspace.is_dir():
            raise ConfigError(f"workspace {args.workspace} is not a folder")
        notes_path = _notes_path(args, workspace)
        text = NotesFile(notes_path, root=workspace).read()
        say(text if text else f"(no notes yet in {notes_path})")
        return 0
    if args.command == "memory":
        rerank = load_settings().memory_rerank if args.memory_command == "search" else None
        return memory_cli.handle(args, load_model=_rerank_model, rerank_default=rerank)
    if args.command == "chat":
        try:
            chat_code: int = asyncio.run(_chat(args))
        except KeyboardInterrupt:
            # The chat handles Ctrl-C at its prompt and during a turn; one that lands between the
            # two (a fast second Ctrl-C while the prompt redraws) means leave, as at the prompt.
            return 0
        return chat_code
    if args.command == "submit":
        return durable_cli.submit(args, _queued_run(args))
    if args.command == "worker":
        return durable_cli.worker(args, _durable_runner)
    if args.command == "cancel":
        return durable_cli.cancel(args)
    if args.command == "runs" and args.log and is_postgres_url(args.log):
        with open_run_log(args.log) as log:
            summaries = {r.id: r for r in log.list_runs(max(args.limit, 1) * 4)}
        return durable_cli.runs(args, summaries)
    if args.command == "models" and args.action == "default":  # the settings side of `models`
        return settings_cli.models_default(
            args.name, unset=args.unset, kinds=(*PROVIDERS, "local", "scripted")
        )
    if args.command != "run":
        code: int = args.handler(args)
        return code
    apply_settings(args)
    output = HeadlessOutput(args.output_format, sys.stdout)
    result = asyncio.run(_run(args, sinks=output.sinks))
    output.finish(result.final)
    if not result.ok:
        say(f"tinyharness: stopped early ({result.stop}): {result.detail}", err=True)
        return 1
    return 0


# --- durable runs -----------------------------------------------------------------------------


def _queued_run(args: argparse.Namespace) -> dict[str, Any]:
    """What ``submit`` queues: the run's options as given (a worker parses them again), with
    the model resolved here and the workspace as an absolute path every worker must see."""
    if not args.task:
        raise ConfigError("give a task to submit")
    if args.session or args.resume:
        raise ConfigError("a queued run cannot use --session or --resume: the queue resumes it itself")
    if args.no_log:
        raise ConfigError("a queued run is always logged; drop --no-log")
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(
            f"workspace {args.workspace} is not a folder here; workers run in it at the same path "
            "(a shared file system)"
        )
    check_shell_options(shell=args.shell, yes=args.yes, allow=args.allow)
    apply_settings(args, permissions=False)
    options = [w for w in args.words if w != "--wait"]
    return {
        "run_id": new_run_id(),
        "task": args.task,
        "argv": options,
        "workspace": str(workspace),
        "model": args.model,
    }


def _durable_runner(url: str, policy: WorkerPolicy) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """What a worker does with a queued run: the run of ``tinyharness run``, logged to the
    shared run log, its calls recorded as steps."""

    shared: list[RunLogStore] = []  # the worker's one run log connection, opened by its first run

    async def run(spec: dict[str, Any]) -> dict[str, Any]:
        args = build_parser().parse_args(["run", *spec["argv"]])
        args.workspace, args.model, args.log, args.quiet = spec["workspace"], spec["model"], url, True
        run_id = str(spec["run_id"])
        if not Path(args.workspace).is_dir():
            why = f"workspace {args.workspace} is not reachable from this worker"
            return _refused(url, run_id, spec, why)
        refusal = policy.refusal(args.workspace, args)  # queued work widens no rights
        if refusal is not None:
            return _refused(url, run_id, spec, refusal, same_path=False)
        apply_settings(args)
        if not shared:
            shared.append(open_run_log(url))
        try:
            result = await _run(args, durable_run=run_id, shared_log=shared[0])
        except BaseException:
            if was_cancelled(url, run_id):
                _log_end(url, run_id, "cancelled", "cancelled by `tinyharness cancel`")
            raise
        return {"stop": result.stop, "final": result.final, "ok": result.ok, "detail": result.detail}

    return run


def _refused(
    url: str, run_id: str, spec: dict[str, Any], why: str, *, same_path: bool = True
) -> dict[str, Any]:
    """A run a worker cannot start: said in the run log and in the run's result."""
    detail = f"{why} ({socket.gethostname()})"
    if same_path:
        detail += "; every worker must see the workspace at the same path"
    with open_run_log(url) as log:
        events = EventBus([log], run_id=run_id, after_seq=log.last_seq(run_id))
        events.emit("run_start", task=spec.get("task"), model=spec.get("model"), workspace=spec["workspace"])
        events.emit("error", stop="error", message=detail)
        events.emit("run_end", stop="error", final="", detail=detail, model_calls=0, compactions=0)
    return {"stop": "error", "final": "", "ok": False, "detail": detail}


def _log_end(url: str, run_id: str, stop: str, detail: str) -> None:
    with open_run_log(url) as log:
        events = EventBus([log], run_id=run_id, after_seq=log.last_seq(run_id))
        events.emit("run_end", stop=stop, final="", detail=detail)
