"""Running one hook command: never in a shell the model controls.

The command is the user's own (argv, or ``sh -c`` of the string in their settings); the model's
words reach it only as JSON on its stdin. It runs in the workspace, in a new session (its own
process group), with ``TINYHARNESS_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` set to the workspace
(so Claude Code hook scripts work as they are). At its timeout the whole group is killed, so a
hook that started children leaves none behind. Output is read up to ``MAX_OUTPUT`` bytes per
stream; the rest is drained and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import HookCommand

MAX_OUTPUT = 64 * 1024


@dataclass(frozen=True)
class HookOutcome:
    """How a command ended: its exit code (None when it could not start or timed out)."""

    code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""  # why it could not start

    @property
    def blocks(self) -> bool:
        return self.code == 2


async def _drain(stream: asyncio.StreamReader | None) -> bytes:
    kept = bytearray()
    if stream is None:
        return b""
    while chunk := await stream.read(65536):
        if len(kept) < MAX_OUTPUT:
            kept.extend(chunk[: MAX_OUTPUT - len(kept)])
    return bytes(kept)


async def run_hook(hook: HookCommand, payload: dict[str, Any], workspace: Path) -> HookOutcome:
    """Run ``hook`` with ``payload`` as JSON on stdin, in ``workspace``."""
    env = dict(os.environ, TINYHARNESS_PROJECT_DIR=str(workspace), CLAUDE_PROJECT_DIR=str(workspace))
    try:
        process = await asyncio.create_subprocess_exec(
            *hook.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workspace,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return HookOutcome(None, error=f"could not start: {exc.strerror or exc}")
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")

    async def talk() -> tuple[bytes, bytes]:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(data)
            await process.stdin.drain()
        with contextlib.suppress(OSError):
            process.stdin.close()
        out, err = await asyncio.gather(_drain(process.stdout), _drain(process.stderr))
        await process.wait()
        return out, err

    try:
        out, err = await asyncio.wait_for(talk(), timeout=hook.timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await asyncio.shield(process.wait())
        if isinstance(exc, asyncio.CancelledError):
            raise
        return HookOutcome(None, timed_out=True)
    return HookOutcome(process.returncode, _text(out), _text(err))


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
