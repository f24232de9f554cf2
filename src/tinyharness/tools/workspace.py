"""The workspace: the one folder file tools may touch, and safe writes inside it.

``Workspace.inner`` is the single gate every file tool passes a model-supplied path through.
It refuses anything that could name a file outside the root, whichever way the path is spelled:
absolute or drive paths, ``..`` segments (with ``/`` or ``\\``), percent-encoded or
double-encoded traversal, NUL bytes, Unicode look-alikes that NFKC-normalise to dots and
slashes, over-long paths. The file itself is then opened through ``Workspace.folder``
(``tinyharness.safefs``): component by component from directory descriptors with
``O_NOFOLLOW``, so a symbolic link that leads outside is refused at the open itself, even when
another process swaps it in after a check. Symlinks that stay inside are followed (to the file
they name; a write replaces that file, never the link with outside content).
``atomic_write_text`` replaces a file so that a crash never leaves half of it.

A workspace may also offer read-only folders under a prefix no relative path can spell (the
user's skills as ``/skills/...``): ``for_reading`` sends such a path to that folder, confined
there by the same rules, and ``inner`` refuses it for everything else (writes).
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

from ..errors import ConfigError
from ..safefs import Folder, FolderMoved, LockTimeout, NotRegularFile, PathEscape, write_file
from .base import ToolError

MAX_PATH_CHARS = 1024
_MAX_DECODE_ROUNDS = 4  # more than enough to unwrap double or triple percent-encoding
_DRIVE = re.compile(r"^[A-Za-z]:")
_HOME = re.compile(r"^~(?:$|[/\\])")  # a model writing '~/x' means its home, not a folder '~'
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


class Workspace:
    """A root folder; model-supplied paths are confined to it."""

    def __init__(
        self, root: str | os.PathLike[str], *, read_only: Mapping[str, str | os.PathLike[str]] | None = None
    ) -> None:
        try:
            self.folder = Folder(root)
        except OSError:
            raise ConfigError(f"workspace {str(root)!r} is not a directory") from None
        self.root = self.folder.root
        # prefix ("/skills") -> the folder read there; a prefix must be absolute, so no
        # workspace path can name it
        self.read_only: dict[str, Workspace] = {}
        for prefix, folder in (read_only or {}).items():
            if not prefix.startswith("/") or prefix.rstrip("/") != prefix or prefix.count("/") != 1:
                raise ConfigError(f"a read-only folder is offered under '/NAME', got {prefix!r}")
            self.read_only[prefix] = Workspace(folder)

    def for_reading(self, path: str) -> tuple[Workspace, str, str]:
        """Where a read of ``path`` goes: (this workspace, path, "") or, for a path under a
        read-only prefix, (that folder, the rest of the path, the prefix to show it under)."""
        if isinstance(path, str):
            for prefix, space in self.read_only.items():
                if path == prefix or path.startswith(prefix + "/"):
                    return space, path[len(prefix) :].lstrip("/") or ".", prefix
        return self, path, ""

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def inner(self, path: str) -> str:
        """``path`` checked for every spelling that could leave the root, as the relative path
        (with ``/``) to hand to ``self.folder``; ToolError when refused."""
        if not isinstance(path, str):
            raise ToolError(f"path must be a string, got {type(path).__name__}")
        for prefix in self.read_only:
            if path == prefix or path.startswith(prefix + "/"):
                raise _refusal(path, f"{prefix} is read-only (it is not part of the workspace)")
        _check_spelling(path)
        return path.replace("\\", "/") if path.strip() else "."

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The real absolute path for ``path`` (relative to the root), or ToolError. For display
        and permission rules: files are opened through ``self.folder``, never through this path."""
        inner = self.inner(path)
        try:
            real = self.root.joinpath(*self.folder.real_parts(inner))
        except OSError as exc:
            raise self.error(exc, path) from None
        if must_exist and not os.path.lexists(real):
            raise ToolError(
                f"{_show(path)} does not exist in the workspace; use list_dir to see what is there"
            )
        return real

    def error(self, exc: OSError, path: str) -> ToolError:
        """A filesystem error on ``path`` as one line the model can act on."""
        return fs_error(exc, path)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` as shown to the model: relative to the root, with ``/``; ``.`` for the root."""
        absolute = Path(path) if Path(path).is_absolute() else self.root / path
        try:
            shown = absolute.relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).as_posix()
        return shown or "."


def fs_error(exc: OSError, path: str) -> ToolError:
    """An OSError from ``tinyharness.safefs`` as a one-line ToolError (no traceback)."""
    if isinstance(exc, PathEscape):
        return _refusal(path, "it leads outside the workspace (through a symbolic link)")
    if isinstance(exc, FolderMoved):
        return ToolError(
            f"{_show(path)}: the folder {exc.filename!r} was moved or renamed by something else while "
            "this tool used it; nothing is known to be done in the workspace. Check with list_dir, then retry"
        )
    if isinstance(exc, NotRegularFile):
        return ToolError(f"{_show(path)} is not a regular file (a FIFO, device or socket); it is not opened")
    if isinstance(exc, LockTimeout):
        return ToolError(f"{_show(path)} is being changed by another process; try again later")
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"{_show(path)} does not exist in the workspace; use list_dir to see what is there")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{_show(path)} is a folder; use list_dir")
    if isinstance(exc, NotADirectoryError):
        where = f" ({exc.filename!r})" if exc.filename else ""
        return ToolError(f"cannot use {_show(path)}: a part of it{where} is a file, not a folder")
    if exc.errno == errno.ELOOP:
        return ToolError(f"cannot open {_show(path)}: too many symbolic links, or a link changed meanwhile")
    return ToolError(f"cannot access {_show(path)}: {exc.strerror or exc}")


def shown_under(prefix: str, shown: str) -> str:
    """A path of a read-only folder as the model names it (``/skills/pdf/SKILL.md``)."""
    if not prefix:
        return shown
    return prefix if shown in ("", ".") else f"{prefix}/{shown}"


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
    ``os.replace``: readers see the old file or the new one, never a half-written one. A link at
    ``path`` is followed only while it stays in ``path``'s folder."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """``atomic_write_text`` for bytes as they are (a file put back exactly, in any encoding)."""
    write_file(Path(path), data)
