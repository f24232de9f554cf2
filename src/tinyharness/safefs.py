"""Files beneath one folder, opened so that the check and the use cannot differ.

A path is walked one component at a time from a directory file descriptor, each step opened
with ``O_NOFOLLOW``: the kernel never follows a symbolic link on our behalf. A link met on the
way is read relative to the directory already held and resolved by hand; a link whose target
leaves the folder is refused (``PathEscape``), one that stays inside is followed. Because every
step starts from a descriptor already held, a process that swaps a link between a check and an
open can make the open fail, never land it outside.

- Reads refuse anything that is not a regular file (FIFO, device, socket) before opening it and
  again on the opened descriptor (``O_NONBLOCK`` + ``fstat``), so they never block.
- Writes go to a temp file in the target's directory (by descriptor) and are renamed over the
  target relative to that descriptor: a link in the final place is replaced by a file, never
  followed to write its target.
- ``Folder.locked`` takes an OS-level lock (``flock`` on the target's directory) around a
  read-modify-write, so processes, not only threads, do not lose each other's updates.

The harness's own files (results saved under ``.tinyharness/``, the search-history database,
the run log, settings, fetched models, crash reports, ``--events`` files) are written only
through the functions at the end of this module (``make_folder``, ``write_file``,
``open_append``, ``create_new``, ``temp_folder``, ``connect_sqlite``), each given the folder that
owns the path (the workspace, the data home): a link on the way that leads out of it is refused,
at any level. ``tests/test_confined_writes.py`` fails when any other module of the package opens
a file for writing, creates a folder or opens a SQLite database itself.

POSIX only (``dir_fd``, ``O_NOFOLLOW``, ``flock``). May import nothing of the package.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, cast
from urllib.parse import quote

MAX_LINK_HOPS = 40  # as the kernel's own limit on links followed in one lookup
LOCK_TIMEOUT = 30.0  # seconds a read-modify-write waits for another process's edit
_RETRIES = 8  # a final component swapped into a link between resolution and open: resolve again
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class PathEscape(PermissionError):
    """The path, through a symbolic link, leads outside the folder."""


class NotRegularFile(OSError):
    """A FIFO, device or socket where a regular file was expected."""


class LockTimeout(TimeoutError):
    """Another process held the lock for longer than the timeout."""


class FolderMoved(OSError):
    """A folder held open was moved or renamed meanwhile (maybe out of the folder): what was
    done through it may have happened elsewhere, so it is reported, never taken as done here."""


@dataclass(frozen=True)
class Spot:
    """A resolved place: an open directory, the name in it (None: the directory itself) and the
    real path relative to the folder. The descriptor is closed when the ``with`` block ends."""

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]
    root: Path | None = None  # the folder's root, to check the directory is still in place

    def verify(self) -> None:
        """``FolderMoved`` unless the directory held is still the one ``parts`` names beneath
        the root (another process may have renamed it, or moved it out, while it was held)."""
        if self.root is not None:
            verify_held(self.root, self.parts[:-1] if self.name is not None else self.parts, self.dir_fd)

    @property
    def relative(self) -> str:
        return "/".join(self.parts) or "."

    def lstat(self) -> os.stat_result | None:
        """The entry's own status (a link is not followed), or None when it does not exist."""
        if self.name is None:
            return os.fstat(self.dir_fd)
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open_read(self) -> BinaryIO:
        """The regular file here, opened for reading; refuses links, folders, FIFOs, devices."""
        if self.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder", self.relative)
        _check_kind(self.lstat(), self.relative)
        fd = os.open(self.name, _READ_FLAGS, dir_fd=self.dir_fd)
        try:
            _check_kind(os.fstat(fd), self.relative)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def read(self, limit: int) -> tuple[bytes, int]:
        """At most ``limit`` bytes from the start of the file, and the file's whole size."""
        with self.open_read() as handle:
            return handle.read(limit), os.fstat(handle.fileno()).st_size

    def write(self, data: bytes) -> None:
        """Replace the file here atomically, keeping its mode; a link here is replaced, not
        followed."""
        if self.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder", self.relative)
        info = self.lstat()
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", self.relative)
        if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            raise NotRegularFile(errno.EINVAL, "not a regular file", self.relative)
        mode = stat.S_IMODE(info.st_mode) if info is not None and stat.S_ISREG(info.st_mode) else None
        _replace_in(self.dir_fd, self.name, data, mode, self.verify)
        self.verify()  # moved between the check and the rename: say so, the write is not "done here"


def _check_kind(info: os.stat_result | None, shown: str) -> None:
    if info is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", shown)
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "turned into a symbolic link while being opened", shown)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder", shown)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file (a FIFO, device or socket)", shown)


class Folder:
    """A directory; every path handed to it is relative to it and stays beneath it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(path))
        if not self.root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))

    def __repr__(self) -> str:
        return f"Folder({str(self.root)!r})"

    # --- resolution ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def at(self, rel: str, *, follow: bool = True, create_dirs: bool = False) -> Iterator[Spot]:
        """The place ``rel`` names, its directory open for the ``with`` block. ``follow``: a link
        in the last component is followed (when it stays inside); else the link itself is meant."""
        fd, name, parts = self._walk(rel, follow=follow, create_dirs=create_dirs, missing_ok=False)
        try:
            spot = Spot(fd, name, parts, self.root)
            yield spot
            spot.verify()  # what the block read or wrote came from the folder, not a moved copy
        finally:
            os.close(fd)

    def real_parts(self, rel: str) -> tuple[str, ...]:
        """The real path of ``rel`` relative to the folder, links resolved; the part that does
        not exist yet is kept as spelled."""
        fd, _name, parts = self._walk(rel, follow=True, create_dirs=False, missing_ok=True)
        os.close(fd)
        return parts

    def _walk(
        self, rel: str, *, follow: bool, create_dirs: bool, missing_ok: bool
    ) -> tuple[int, str | None, tuple[str, ...]]:
        if rel.startswith("/") or "\x00" in rel:
            raise PathEscape(errno.EACCES, "not a path relative to the folder", rel)
        pending = _split(rel)
        for _hop in range(MAX_LINK_HOPS * 2):
            outcome = self._walk_once(pending, follow, create_dirs, missing_ok)
            if isinstance(outcome, list):  # a link or '..': start again from the root
                pending = outcome
                continue
            return outcome
        raise OSError(errno.ELOOP, "too many symbolic links", rel)

    def _walk_once(
        self, pending: list[str], follow: bool, create_dirs: bool, missing_ok: bool
    ) -> list[str] | tuple[int, str | None, tuple[str, ...]]:
        """One walk from the root: the open parent directory, the last name and the real parts;
        or, when a link or '..' is met, the components to walk again from the root."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            outcome = self._steps(fd, pending, follow, create_dirs, missing_ok)
        except BaseException:
            os.close(fd)
            raise
        if isinstance(outcome, list):
            os.close(fd)
            return outcome
        return outcome

    def _steps(
        self, fd: int, pending: list[str], follow: bool, create_dirs: bool, missing_ok: bool
    ) -> list[str] | tuple[int, str | None, tuple[str, ...]]:
        """The walk proper. ``fd`` stays open across it: each step opens the next directory
        and moves the descriptor it holds (dup2), so the caller closes exactly one."""
        real: list[str] = []
        index = 0
        made = 0
        while index < len(pending):
            name = pending[index]
            rest = pending[index + 1 :]
            if name == "..":
                if not real:
                    raise PathEscape(errno.EACCES, "leads outside the folder", "/".join(pending))
                return [*real[:-1], *rest]
            if not rest:  # the last component
                target = _readlink(fd, name) if follow else None
                if target is None:
                    return fd, name, (*real, name)
                return [*self._through_link(real, target, pending), *rest]
            try:
                next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if missing_ok and ".." not in rest:
                    return fd, pending[-1], (*real, *pending[index:])
                if not create_dirs or made > _RETRIES:
                    raise
                made += 1
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                target = _readlink(fd, name)
                if target is None:
                    raise NotADirectoryError(
                        errno.ENOTDIR, "is a file, so it cannot hold other files", "/".join([*real, name])
                    ) from None
                return [*self._through_link(real, target, pending), *rest]
            os.dup2(next_fd, fd, inheritable=False)  # the caller's descriptor now holds the deeper directory
            os.close(next_fd)
            real.append(name)
            index += 1
        return fd, None, tuple(real)

    def _through_link(self, real: list[str], target: str, spelled: list[str]) -> list[str]:
        """The components a link at ``real/...`` points to, relative to the root; '..' in them
        is left for the walk, which resolves it against real folders."""
        if not target.startswith("/"):
            return [*real, *_split(target)]
        parts = _split(target)
        root = _split(str(self.root))
        if parts[: len(root)] != root:
            raise PathEscape(errno.EACCES, "leads outside the folder", "/".join(spelled))
        return parts[len(root) :]

    # --- reading ------------------------------------------------------------------------------

    def open_read(self, rel: str) -> tuple[BinaryIO, str]:
        """A regular file inside the folder, opened for reading (links inside are followed),
        and its real path relative to the folder."""
        for _attempt in range(_RETRIES):
            handle: BinaryIO | None = None
            try:
                with self.at(rel) as spot:  # its exit checks the folder was not moved meanwhile
                    try:
                        handle = spot.open_read()
                    except OSError as exc:
                        if exc.errno != errno.ELOOP:  # ELOOP: became a link since resolution
                            raise
                        continue
                    shown = spot.relative
            except BaseException:
                if handle is not None:  # opened, then the folder turned out moved: no leak
                    handle.close()
                raise
            return handle, shown
        raise OSError(errno.ELOOP, "the path keeps changing", rel)

    def read(self, rel: str, limit: int) -> tuple[bytes, int]:
        """At most ``limit`` bytes from the start of a regular file, and its whole size."""
        handle, _shown = self.open_read(rel)
        with handle:
            return handle.read(limit), os.fstat(handle.fileno()).st_size

    def stat(self, rel: str) -> os.stat_result | None:
        """Status of what ``rel`` names (links inside followed), None when it does not exist."""
        try:
            with self.at(rel) as spot:
                return spot.lstat()
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def open_dir(self, rel: str) -> Iterator[tuple[int, tuple[str, ...]]]:
        """A descriptor of the folder ``rel`` names (for ``os.listdir(fd)``, ``os.stat(name,
        dir_fd=fd)``) and its real path relative to the root."""
        with self.at(rel) as spot:
            if spot.name is None:
                yield spot.dir_fd, spot.parts
                return
            fd = os.open(spot.name, _DIR_FLAGS, dir_fd=spot.dir_fd)
            try:
                yield fd, spot.parts
                verify_held(self.root, spot.parts, fd)
            finally:
                os.close(fd)

    def files(self, rel: str, skip_dir: Callable[[str], bool] = lambda name: False) -> Iterator[str]:
        """Real paths (relative to the root) of the regular files under the folder ``rel``, in a
        stable order; links to files inside are included, links that lead out or to folders are
        not followed, and folders for which ``skip_dir(name)`` is true are not entered."""
        with self.open_dir(rel) as (top, base):
            for current, dirs, names, dir_fd in os.fwalk(".", dir_fd=top):
                dirs[:] = sorted(d for d in dirs if not skip_dir(d))
                prefix = [*base, *_split(current)]
                for name in sorted(names):
                    try:
                        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    path = "/".join([*prefix, name])
                    if stat.S_ISLNK(info.st_mode):
                        target = self.stat(path) if self._inside(path) else None
                        if target is None or not stat.S_ISREG(target.st_mode):
                            continue
                    elif not stat.S_ISREG(info.st_mode):
                        continue
                    yield path

    def _inside(self, rel: str) -> bool:
        try:
            self.real_parts(rel)
        except OSError:
            return False
        return True

    # --- writing ------------------------------------------------------------------------------

    def write(self, rel: str, data: bytes) -> None:
        """Replace (or create) a file atomically, creating missing folders; links inside are
        followed to the file they name, links leading out are refused."""
        with self.at(rel, create_dirs=True) as spot:
            spot.write(data)

    @contextlib.contextmanager
    def locked(self, rel: str, *, create_dirs: bool = False, timeout: float = LOCK_TIMEOUT) -> Iterator[Spot]:
        """The place ``rel`` names with its directory locked (``flock``) against other
        processes and threads for a read-modify-write; read and write through the Spot."""
        with self.at(rel, create_dirs=create_dirs) as spot:
            lock_fd(spot.dir_fd, timeout, spot.relative)
            yield spot  # closing the descriptor at the end of ``at`` releases the lock

    def remove(self, rel: str) -> None:
        """Delete a file, a link (not its target) or a whole folder."""
        with self.at(rel, follow=False) as spot:
            if spot.name is None:
                raise PermissionError(errno.EPERM, "refusing to delete the folder itself", ".")
            info = spot.lstat()
            if info is None:
                raise FileNotFoundError(errno.ENOENT, "no such file", spot.relative)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(spot.name, dir_fd=spot.dir_fd)
            else:
                os.unlink(spot.name, dir_fd=spot.dir_fd)

    def rename(self, old: str, new: str) -> None:
        """Move ``old`` (a link is moved as a link) to ``new``, which must not exist."""
        with self.at(old, follow=False) as source, self.at(new, follow=False, create_dirs=True) as target:
            if source.name is None or target.name is None:
                raise PermissionError(errno.EPERM, "refusing to move the folder itself", ".")
            if source.lstat() is None:
                raise FileNotFoundError(errno.ENOENT, "no such file", source.relative)
            if target.lstat() is not None:
                raise FileExistsError(errno.EEXIST, "already exists", target.relative)
            os.rename(source.name, target.name, src_dir_fd=source.dir_fd, dst_dir_fd=target.dir_fd)


def beneath(path: Path, root: Path | None) -> tuple[Path, str]:
    """The folder to open ``path`` beneath, and ``path`` relative to it: ``root`` when ``path``
    is spelled inside it (so a link on the way that leads out of ``root`` is refused), else
    ``path``'s own (real) folder, for a file the user placed outside on purpose."""
    absolute = Path(os.path.abspath(path))
    if root is not None:
        for spelling in (Path(os.path.abspath(root)), Path(os.path.realpath(root))):
            if absolute.is_relative_to(spelling) and absolute != spelling:
                return spelling, absolute.relative_to(spelling).as_posix()
    return Path(os.path.realpath(absolute.parent)), absolute.name


def verify_held(root: Path, parts: tuple[str, ...], fd: int) -> None:
    """``FolderMoved`` unless walking ``parts`` from ``root`` (no links followed) reaches the
    directory ``fd`` holds."""
    held = os.fstat(fd)
    shown = "/".join(parts) or "."
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            deeper = os.open(part, _DIR_FLAGS, dir_fd=current)
            os.close(current)
            current = deeper
        now = os.fstat(current)
    except OSError:
        now = None
    finally:
        os.close(current)
    if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
        raise FolderMoved(errno.ESTALE, "was moved or renamed while in use (maybe out of the folder)", shown)


def lock_fd(fd: int, timeout: float, shown: str) -> None:
    """An exclusive ``flock`` on ``fd``, polled so that a stuck holder cannot hang us forever."""
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise LockTimeout(
                    errno.ETIMEDOUT, f"another process kept it locked for {timeout:g} s", shown
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _readlink(dir_fd: int, name: str) -> str | None:
    """The target of the link ``name`` in ``dir_fd``, or None when it is not a link (or absent)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (OSError, ValueError):
        return None


def _replace_in(
    dir_fd: int, name: str, data: bytes, mode: int | None, check: Callable[[], None] = lambda: None
) -> None:
    """Write ``data`` to a temp file beside ``name``, fsync, then rename it over ``name``, all
    relative to ``dir_fd``: readers see the old file or the new one, never half of one. ``check``
    runs right before the rename (an error there removes the temp file, the target untouched)."""
    temp = f".{name[:80]}.{secrets.token_hex(6)}.tmp"
    # 0o666 lets the umask decide the mode of a new file, as a plain open() would.
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        check()
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # makes the rename durable; not possible everywhere
        os.fsync(dir_fd)


# --- the harness's own files ----------------------------------------------------------------
#
# Every write of the package goes through these. ``owner`` is the folder that owns ``path`` (the
# workspace for ``.tinyharness/...``, the data home for the run log): ``path`` spelled inside it
# is walked from it, so a link at any level (the ``.tinyharness`` folder itself, a subfolder,
# the final name, dangling or not) that leads out of it is refused with ``PathEscape``. Without
# an owner (a file the user named on the command line), the file is the user's choice: it is
# written where they said (``open_append``, ``create_new``: as named, links and devices
# included; ``write_file``: replaced atomically in its real folder).

_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _place(path: str | os.PathLike[str], owner: str | os.PathLike[str] | None) -> tuple[Folder, str]:
    """The folder to walk from and the path relative to it; the owner (or, without one, the
    path's parent) is created when missing: it is the harness's or the user's own choice."""
    given = Path(os.path.abspath(path))
    root = Path(owner) if owner is not None else None
    if root is not None and not (
        given.is_relative_to(os.path.abspath(root)) or given.is_relative_to(os.path.realpath(root))
    ):
        root = None  # spelled outside its owner (an absolute --notes, say): the user's own place
    os.makedirs(root if root is not None else given.parent, exist_ok=True)
    base, rel = beneath(given, root)
    return Folder(base), rel


def make_folder(path: str | os.PathLike[str], owner: str | os.PathLike[str] | None = None) -> Path:
    """Create the folder ``path`` (and its parents) beneath ``owner``; its real path."""
    folder, rel = _place(path, owner)
    with folder.at(rel, create_dirs=True) as spot:
        if spot.name is not None:
            info = spot.lstat()
            if info is None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(spot.name, 0o777, dir_fd=spot.dir_fd)
                info = spot.lstat()
            if info is None or not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder", spot.relative)
        return folder.root.joinpath(*spot.parts)


def write_file(
    path: str | os.PathLike[str],
    data: bytes,
    owner: str | os.PathLike[str] | None = None,
    *,
    mode: int | None = None,
    keep: bool = False,
) -> Path:
    """Replace (or create) the file ``path`` atomically beneath ``owner``, creating missing
    folders; ``mode`` sets the new file's permission bits (the temp file has them from its
    creation); ``keep`` leaves an existing file as it is. The real path written."""
    folder, rel = _place(path, owner)
    with folder.at(rel, create_dirs=True) as spot:
        if spot.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder", spot.relative)
        info = spot.lstat()
        if not (keep and info is not None and stat.S_ISREG(info.st_mode)):
            if mode is None:
                spot.write(data)
            else:
                _replace_private(spot, data, mode)
        return folder.root.joinpath(*spot.parts)


def _replace_private(spot: Spot, data: bytes, mode: int) -> None:
    assert spot.name is not None
    info = spot.lstat()
    if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise NotRegularFile(errno.EINVAL, "not a regular file", spot.relative)
    temp = f".{spot.name[:80]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, mode, dir_fd=spot.dir_fd)
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have taken bits away; never added any
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        spot.verify()
        os.replace(temp, spot.name, src_dir_fd=spot.dir_fd, dst_dir_fd=spot.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=spot.dir_fd)
        raise


def _open_at(
    path: str | os.PathLike[str], owner: str | os.PathLike[str] | None, flags: int, mode: int
) -> BinaryIO:
    kind = "r+b" if flags & os.O_RDWR else "ab" if flags & os.O_APPEND else "wb"
    if owner is None:
        # A file the user named (--events FILE): opened as named, links and devices included
        # (``--events /dev/stderr``); its folder must exist.
        return cast(BinaryIO, os.fdopen(os.open(path, flags | os.O_CLOEXEC | os.O_NOCTTY, mode), kind))
    folder, rel = _place(path, owner)
    with folder.at(rel, create_dirs=True) as spot:
        if spot.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder", spot.relative)
        fd = os.open(
            spot.name,
            flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY,
            mode,
            dir_fd=spot.dir_fd,
        )
        try:
            _check_kind(os.fstat(fd), spot.relative)
            os.set_blocking(fd, True)
            return cast(BinaryIO, os.fdopen(fd, kind))
        except BaseException:
            os.close(fd)
            raise


def open_append(
    path: str | os.PathLike[str],
    owner: str | os.PathLike[str] | None = None,
    *,
    mode: int = 0o666,
    read: bool = False,
) -> BinaryIO:
    """The regular file ``path`` beneath ``owner`` opened for appending (created when missing,
    a link in its place refused); ``read`` opens it for reading too (a lock file)."""
    flags = os.O_CREAT | os.O_APPEND | (os.O_RDWR if read else os.O_WRONLY)
    return _open_at(path, owner, flags, mode)


def create_new(
    path: str | os.PathLike[str], owner: str | os.PathLike[str] | None = None, *, mode: int = 0o666
) -> BinaryIO:
    """A new file ``path`` beneath ``owner``, opened for writing; ``FileExistsError`` when
    anything (a link included) is already there."""
    return _open_at(path, owner, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)


@contextlib.contextmanager
def temp_folder(
    parent: str | os.PathLike[str],
    prefix: str,
    owner: str | os.PathLike[str] | None = None,
    *,
    keep: bool = False,
) -> Iterator[Path]:
    """A new folder in ``parent`` (beneath ``owner``), removed at the end unless ``keep``."""
    where = make_folder(parent, owner)
    for _attempt in range(100):
        candidate = where / f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(candidate, 0o700)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(where))
    try:
        yield candidate
    finally:
        if not keep:
            shutil.rmtree(candidate, ignore_errors=True)


def connect_sqlite(
    path: str | os.PathLike[str],
    owner: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    private: bool = False,
    timeout: float = 5.0,
    isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = "DEFERRED",
    check_same_thread: bool = True,
) -> tuple[sqlite3.Connection, Path]:
    """A SQLite connection to ``path`` beneath ``owner`` and the real path it opened. The
    folders on the way are walked as for any write; the database and its ``-wal``, ``-shm``
    and ``-journal`` files must not be links (SQLite would follow them to write their target);
    the database is opened with ``nofollow``. ``private`` creates a new file with mode 0600."""
    folder, rel = _place(path, owner)
    with folder.at(rel, create_dirs=create) as spot:
        if spot.name is None:
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", spot.relative)
        for suffix in _SQLITE_SIDE_FILES:
            try:
                side = os.stat(spot.name + suffix, dir_fd=spot.dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(side.st_mode):
                raise PathEscape(errno.EACCES, "is a link or not a regular file", spot.relative + suffix)
        info = spot.lstat()
        if info is None:
            if not create:
                raise FileNotFoundError(errno.ENOENT, "no such file", spot.relative)
            with contextlib.suppress(FileExistsError):
                os.close(
                    os.open(
                        spot.name,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                        0o600 if private else 0o666,
                        dir_fd=spot.dir_fd,
                    )
                )
        real = folder.root.joinpath(*spot.parts)
        _check_kind(spot.lstat(), spot.relative)
    uri = "file:" + quote(str(real)) + "?nofollow=1"
    db = sqlite3.connect(
        uri, uri=True, timeout=timeout, isolation_level=isolation_level, check_same_thread=check_same_thread
    )
    return db, real
