"""The ``shell(command)`` tool: off by default, risk "execute".

A command runs through ``/bin/sh -c`` with the workspace as its working directory, no stdin, an
environment without the caller's credentials (variables whose names look like keys, tokens or
passwords are dropped), in its own process group. After ``timeout`` seconds the whole group is
killed. Output (stdout and stderr, interleaved) is read in chunks while the command runs and only
a head and a tail of ``output_cap`` characters are kept, so a command that prints gigabytes
costs bounded memory.

Whether a command may run at all is decided in one place, ``Permissions`` (deny and allow rules
match the ``command`` argument; see ``permissions.command_segments``), before the tool is called.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import IO

from ..errors import ConfigError
from ..procs import end_tagged, new_tag, tagged_env
from .base import DEFAULT_RESULT_CAP, Tool, ToolError, function_tool
from .workspace import Workspace

DEFAULT_SHELL_TIMEOUT = 30.0  # keep it below the registry's timeout (60 s by default)
MAX_COMMAND_CHARS = 10_000
_CHUNK = 65_536
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER", "SHELL", "TZ")


def scrubbed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command sees: the usual variables, never ones named like credentials."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k in _KEEP_ENV and not _SECRET_NAME.search(k)}
    env.setdefault("PATH", os.defpath)
    return env


class _BoundedOutput:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream, and counts the rest."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail.popleft())

    def text(self) -> str:
        tail = b"".join(self.tail)[-self.tail_limit :] if self.tail_limit else b""
        omitted = self.total - len(self.head) - len(tail)
        head_text = self.head.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head_text + tail.decode("utf-8", errors="replace")
        return (
            f"{head_text}\n[... {omitted} bytes of output omitted ...]\n"
            f"{tail.decode('utf-8', errors='replace')}"
        )


def _drain(stream: IO[bytes], sink: _BoundedOutput) -> None:
    read = getattr(stream, "read1", stream.read)  # read1: whatever is there, without waiting
    while True:
        try:
            chunk = read(_CHUNK)
        except (OSError, ValueError):  # closed under us after a kill
            return
        if not chunk:
            return
        sink.add(chunk)


# Commands running now, so the chat's Ctrl-C can stop them (a thread cannot be cancelled).
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def stop_running_commands() -> int:
    """Kill every command the shell tool is running (with its process group); how many. The
    tool then returns what the command printed, as after a timeout."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for process in running:
        _kill_group(process)
    return len(running)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_command(
    command: str,
    cwd: os.PathLike[str] | str,
    *,
    timeout: float = DEFAULT_SHELL_TIMEOUT,
    output_cap: int = DEFAULT_RESULT_CAP,
    env: Mapping[str, str] | None = None,
) -> tuple[int | None, str]:
    """Run ``command`` in ``cwd``; the exit code (None after a timeout) and the bounded output."""
    budget = max(200, output_cap - 300)  # room for the status line and the omission marker
    output = _BoundedOutput(budget * 3 // 4, budget // 4)
    tag = new_tag()  # daemons that leave the group with setsid keep it: found and ended below
    process = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=tagged_env(env if env is not None else scrubbed_environment(), tag),
        start_new_session=True,  # its own process group, killed as a whole
    )
    assert process.stdout is not None
    reader = threading.Thread(target=_drain, args=(process.stdout, output), daemon=True)
    reader.start()
    with _RUNNING_LOCK:
        _RUNNING.add(process)
    code: int | None
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _kill_group(process)  # also ends children left behind by a command that finished
        process.wait()
        end_tagged(tag)
        with _RUNNING_LOCK:
            _RUNNING.discard(process)
    # A grandchild that escaped the group may still hold the pipe open: stop reading after a
    # moment instead of waiting for it.
    reader.join(2.0)
    process.stdout.close()
    return code, output.text()


def shell_tool(
    workspace: Workspace,
    *,
    timeout: float = DEFAULT_SHELL_TIMEOUT,
    output_cap: int = DEFAULT_RESULT_CAP,
    env: Mapping[str, str] | None = None,
) -> Tool:
    """The ``shell`` tool bound to ``workspace`` (risk "execute": refused unless permitted)."""

    def shell(command: str) -> str:
        """Run a shell command (/bin/sh) in the workspace folder and return its exit code and
        output (stdout and stderr together, long output cut in the middle). No input can be
        typed into it; it is killed after a time limit. Every command needs the user's
        permission.

        Args:
            command: The command line, e.g. "ls -la" or "python -m pytest -q tests".
        """
        if not command.strip():
            raise ToolError("the command is empty")
        if "\x00" in command:
            raise ToolError("the command contains a NUL byte")
        if len(command) > MAX_COMMAND_CHARS:
            raise ToolError(f"the command is {len(command)} characters; the limit is {MAX_COMMAND_CHARS}")
        try:
            code, text = run_command(command, workspace.root, timeout=timeout, output_cap=output_cap, env=env)
        except OSError as exc:
            raise ToolError(f"cannot start the shell: {exc.strerror or exc}") from None
        if code is None:
            raise ToolError(
                f"the command timed out after {timeout:g} s and was killed; output so far:\n{text}"
            )
        status = f"exit code {code}" if code >= 0 else f"killed by signal {-code}"
        return f"{status}\n{text}" if text else f"{status} (no output)"

    return function_tool(shell, risk="execute")


def check_shell_options(*, shell: bool, yes: bool, allow: Sequence[str]) -> None:
    """The CLI rule for ``--yes`` with ``--shell``: it never asks, runs the shell commands the
    ``--allow`` rules match and refuses the rest, so it needs at least one ``--allow`` rule for
    the shell tool. (Without ``--shell``, ``--yes`` only agrees to fetch a missing local model.)"""
    if yes and shell and not any(fnmatchcase("shell", rule.strip().partition(":")[0]) for rule in allow):
        raise ConfigError(
            "--yes runs only the commands that --allow rules match and refuses the rest; "
            "add at least one --allow rule for the shell, e.g. --allow 'shell:pytest *'"
        )
