"""The workspace: the one folder file tools may touch, and safe writes inside it.

``Workspace.resolve`` is the single gate every file tool passes a model-supplied path through.
It refuses anything that could name a file outside the root, whichever way the path is spelled:
absolute or drive paths, ``..`` segments (with ``/`` or ``\\``), percent-encoded or
double-encoded traversal, NUL bytes, Unicode look-alikes that NFKC-normalise to dots and
slashes, over-long paths, and symlinks whose real target lies outside. Symlinks that stay inside
are followed. ``atomic_write_text`` replaces a file so that a crash never leaves half of it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import threading
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from ..errors import ConfigError
from .base import ToolError

MAX_PATH_CHARS = 1024
_MAX_DECODE_ROUNDS = 4  # more than enough to unwrap double or triple percent-encoding
_DRIVE = re.compile(r"^[A-Za-z]:")
_HOME = re.compile(r"^~(?:$|[/\\])")  # a model writing '~/x' means its home, not a folder '~'
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


class Workspace:
    """A root folder; model-supplied paths are confined to it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real_root = Path(os.path.realpath(root))
        if not real_root.is_dir():
            raise ConfigError(f"workspace {str(root)!r} is not a directory")
        self.root = real_root
        # One lock for read-modify-write tools, so parallel calls in one turn do not lose edits.
        self.write_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The real absolute path for ``path`` (relative to the root), or ToolError."""
        if not isinstance(path, str):
            raise ToolError(f"path must be a string, got {type(path).__name__}")
        _check_spelling(path)
        candidate = self.root / path.replace("\\", "/") if path.strip() else self.root
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError) as exc:
            raise ToolError(f"cannot resolve path {_show(path)}: {exc}") from None
        if not real.is_relative_to(self.root):
            raise _refusal(path, "it leads outside the workspace (through a symbolic link)")
        if must_exist and not real.exists():
            raise ToolError(
                f"{_show(path)} does not exist in the workspace; use list_dir to see what is there"
            )
        return real

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` as shown to the model: relative to the root, with ``/``; ``.`` for the root."""
        absolute = Path(path) if Path(path).is_absolute() else self.root / path
        try:
            shown = absolute.relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).as_posix()
        return shown or "."


def _show(path: str) -> str:
    """A path quoted for an error message, shortened so a huge path cannot flood the context."""
    return repr(path if len(path) <= 120 else path[:100] + "...")


def _refusal(path: str, why: str) -> ToolError:
    return ToolError(
        f"refused path {_show(path)}: {why}. The path must be relative to the workspace "
        "root, without '..', e.g. 'src/main.py'"
    )


def _spellings(path: str) -> set[str]:
    """Every reading of ``path`` some layer might apply: percent-decoding (repeated, for
    double encoding) and NFKC normalisation, in any order."""
    forms = {path}
    frontier = {path}
    for _ in range(_MAX_DECODE_ROUNDS):
        produced: set[str] = set()
        for form in frontier:
            produced.add(unicodedata.normalize("NFKC", form))
            if _PERCENT_ESCAPE.search(form):
                produced.add(unquote(form, errors="replace"))
        frontier = produced - forms
        if not frontier:
            break
        forms |= frontier
    return forms


def _check_spelling(path: str) -> None:
    if len(path) > MAX_PATH_CHARS:
        raise _refusal(path, f"it is longer than {MAX_PATH_CHARS} characters")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise _refusal(path, "it is not valid Unicode (lone surrogate)") from None
    for form in _spellings(path):
        if "\x00" in form:
            raise _refusal(path, "it contains a NUL byte")
        if form.startswith(("/", "\\")) or _DRIVE.match(form) or _HOME.match(form):
            raise _refusal(path, "absolute paths are not allowed")
        for segment in re.split(r"[/\\]", form):
            # Windows strips trailing dots and spaces, so '.. ' or '...' can act as '..'.
            if segment.count(".") >= 2 and not segment.strip(". "):
                raise _refusal(path, "'..' segments are not allowed")


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) via a temp file in the same folder, fsync and
    ``os.replace``: readers see the old file or the new one, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # 0o666 lets the umask decide the mode of a new file, as a plain open() would.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            _write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; not possible on every platform, so best effort."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
