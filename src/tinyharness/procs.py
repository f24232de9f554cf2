"""Child processes never outlive the run.

Every process the harness starts for someone else's code (an MCP server, a shell command) gets
``TINYHARNESS_CHILD=<run tag>.<own tag>`` in its environment, runs in its own session (so its
process group is its own), and is ended as a whole group: SIGTERM, a bounded wait, SIGKILL.
A server that forks a daemon which calls ``setsid`` leaves that group, but keeps the variable:
``end_tagged`` finds it by walking ``/proc``. On Linux the harness also becomes a child
subreaper (``PR_SET_CHILD_SUBREAPER``): a daemon whose parent exited is re-parented to us, not to
init, so ``end_strays`` at the end of the run finds even one that cleared its environment, as
a child of ours that was not there when the run began.

Linux walks ``/proc``; elsewhere the group kill still applies and the walks find nothing.
May import nothing of the package.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TAG_ENV = "TINYHARNESS_CHILD"
RUN_TAG = secrets.token_hex(8)  # this process's runs; a child's tag is RUN_TAG.<its own>
GRACE = 2.0  # seconds between SIGTERM and SIGKILL
_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.02


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int  # clock ticks after boot

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def new_tag() -> str:
    """A tag for one child (an MCP server, a shell command) of this run."""
    return f"{RUN_TAG}.{secrets.token_hex(6)}"


def tagged_env(env: Mapping[str, str] | None, tag: str) -> dict[str, str]:
    """``env`` (None: ours) with the child's tag added."""
    result = dict(os.environ if env is None else env)
    result[TAG_ENV] = tag
    return result


def become_subreaper() -> bool:
    """Ask Linux to re-parent our orphaned descendants to us; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _read_stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def processes() -> list[Proc]:
    """Every process we can see (empty where there is no /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = [_read_stat(int(name)) for name in names if name.isdigit()]
    return [p for p in found if p is not None]


def _tag_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    prefix = TAG_ENV.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("ascii", "replace")
    return None


def tagged(prefix: str) -> list[Proc]:
    """Live processes (not us) whose tag is ``prefix`` or starts with ``prefix.``."""
    me = os.getpid()
    found = []
    for proc in processes():
        if proc.pid == me or not proc.alive:
            continue
        tag = _tag_of(proc.pid)
        if tag is not None and (tag == prefix or tag.startswith(prefix + ".")):
            found.append(proc)
    return found


def _alive(pids: Iterable[int]) -> list[int]:
    left = []
    for pid in pids:
        proc = _read_stat(pid)
        if proc is not None and proc.alive:
            left.append(pid)
    return left


def end(procs: Iterable[Proc], grace: float = GRACE) -> list[int]:
    """SIGTERM each process and its group, wait up to ``grace`` seconds, then SIGKILL what is
    left; the pids signalled. Our own group is never signalled."""
    procs = [p for p in procs if p.pid != os.getpid()]
    own_group = os.getpgrp()
    groups = {p.pgid for p in procs if p.pgid not in (own_group, 0, 1)}
    pids = [p.pid for p in procs]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
        for pid in _alive(pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if sig == signal.SIGKILL:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (_alive(pids) or _groups_alive(groups)):
            time.sleep(_POLL)
    _reap(pids)
    return pids


def _groups_alive(groups: set[int]) -> bool:
    if not groups:
        return False
    return any(p.pgid in groups and p.alive for p in processes())


def _reap(pids: Iterable[int]) -> None:
    """Collect the exit status of those that were re-parented to us (no zombies left)."""
    me = os.getpid()
    for pid in pids:
        proc = _read_stat(pid)
        if proc is not None and proc.ppid == me and not proc.alive:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def end_tagged(tag: str, grace: float = GRACE) -> list[int]:
    """End every process that carries ``tag`` (and their groups)."""
    return end(tagged(tag), grace)


def boot_ticks() -> int:
    """Now, in the clock ticks ``Proc.start`` counts (0 where there is no /proc)."""
    try:
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def end_strays(since: int, grace: float = GRACE) -> list[int]:
    """At the end of a run: every process tagged by this process's runs, and every child of
    ours started after ``since`` (a re-parented daemon, tagged or not), ended."""
    me = os.getpid()
    chosen = {p.pid: p for p in tagged(RUN_TAG)}
    for proc in processes():
        if proc.ppid == me and proc.alive and proc.start >= since:
            chosen.setdefault(proc.pid, proc)
    return end(chosen.values(), grace) if chosen else []
