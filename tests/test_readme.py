"""Every command the README shows works on a fresh clone.

The commands are read out of the README's ``sh`` blocks, so a renamed option or command fails
here, not in a newcomer's terminal. Each ``tinyharness`` command (and ``./run``, which is
``tinyharness run``) must parse with the real parser; the ones that need no API key, no running
server and no terminal are run for real, in a scratch folder with a ``myproject`` workspace and a
private data folder, and must end without a traceback. ``run`` commands on the local model are
bounded to two model calls (they show that the command works, not what the model answers).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tinyharness.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# Words after `tinyharness` whose command needs a key, a server the test does not start, a
# terminal, or runs until stopped: parsed, never run.
NOT_RUN = {"chat": "a terminal", "keys": "a key typed in", "mcp": "runs until stopped"}
API_MODELS = re.compile(
    r"--model\s+(openai|anthropic|ollama|lmstudio|vllm|openrouter|groq|gemini|deepseek|mistral|together):"
)


def readme_commands() -> list[str]:
    """The shell commands of the README's ``sh`` blocks, continuations joined, comments dropped."""
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def tinyharness_argv(command: str) -> list[str] | None:
    """The arguments after ``tinyharness`` (``./run X`` is ``tinyharness run X``), or None for
    commands of other programs (make, git, pip)."""
    words = shlex.split(command)
    if words[0] == "./run":
        return ["run", *words[1:]]
    if Path(words[0]).name == "tinyharness":
        return words[1:]
    return None


COMMANDS = [c for c in readme_commands() if tinyharness_argv(c) is not None]


def test_the_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 10  # the extraction itself works
    assert COMMANDS[0].startswith("./run ")  # the first line is the main job


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_parses(command: str) -> None:
    argv = tinyharness_argv(command)
    assert argv is not None
    build_parser().parse_args(argv)  # SystemExit(2) on an unknown command or option


def _runnable(command: str) -> bool:
    argv = tinyharness_argv(command)
    return bool(argv) and argv[0] not in NOT_RUN and not API_MODELS.search(command)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    project = tmp_path / "myproject"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# myproject\n\nA tiny project to try tinyharness on.\n")
    (project / "settings.py").write_text("PAGE_SIZE = 20\n")
    (project / "src" / "config.py").write_text("def load_config(path):\n    return open(path).read()\n")
    return tmp_path


@pytest.mark.parametrize("command", [c for c in COMMANDS if _runnable(c)])
def test_commands_that_need_no_key_run(command: str, scratch: Path) -> None:
    argv = tinyharness_argv(command)
    assert argv is not None
    if argv[0] == "run":
        argv = [*argv, "--max-iterations", "2"]
        if "--workspace" not in argv:
            argv += ["--workspace", "myproject"]
    env = {**os.environ, "TINYHARNESS_DEBUG": ""}
    if argv[0] == "report":  # a report needs a run in the log first
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tinyharness",
                "run",
                "--workspace",
                "myproject",
                "--max-iterations",
                "1",
                "hi",
            ],
            cwd=scratch,
            env=env,
            capture_output=True,
            timeout=900,
        )
    done = subprocess.run(
        [sys.executable, "-m", "tinyharness", *argv],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), f"exit {done.returncode}: {done.stderr[-2000:]}"
