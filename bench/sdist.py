"""A pinned registry sdist for the suite's halves on public projects: downloaded at bench time
with ``pip download --no-deps --no-binary :all:``, kept only when its sha256 is the pinned one
(never committed), and unpacked into a task's fresh workspace without escaping it. ``Pinned``
holds one such pin (name, version, sha256) with what a half does with it."""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench import HERE

CACHE_DIR = HERE / ".sdist"

Downloader = Callable[[Path], None]


class SdistError(RuntimeError):
    """The pinned sdist could not be fetched, or is not the pinned file."""


def pip_download(requirement: str) -> Downloader:
    """A downloader: ``pip download`` of the sdist ``requirement`` (``name==version``) into a folder."""

    def download(folder: Path) -> None:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q"]
        done = subprocess.run(
            [*command, "-d", str(folder), requirement], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SdistError(f"pip download {requirement} failed: {last}")

    return download


def verified(archive: Path, sha256: str) -> Path:
    """``archive`` when its sha256 is ``sha256``; SdistError otherwise."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != sha256:
        raise SdistError(f"{archive.name}: sha256 {digest} is not the pinned {sha256}")
    return archive


def fetch(folder: Path, filename: str, sha256: str, download: Downloader) -> Path:
    """The pinned sdist ``filename`` in ``folder``: kept from an earlier fetch when it verifies,
    else downloaded (a file that does not verify is removed, never used)."""
    archive = folder / filename
    if archive.is_file():
        try:
            return verified(archive, sha256)
        except SdistError:
            archive.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    download(folder)
    if not archive.is_file():
        raise SdistError(f"the download left no {filename} in {folder}")
    try:
        return verified(archive, sha256)
    except SdistError:
        archive.unlink()
        raise


def _members(tar: tarfile.TarFile) -> list[tuple[tarfile.TarInfo, tuple[str, ...]]]:
    """The archive's regular files with their paths below its top folder; members that are
    links, devices, absolute or climb out with ``..`` are left out."""
    out = []
    for member in tar.getmembers():
        parts = PurePosixPath(member.name).parts[1:]
        if not member.isfile() or not parts or member.name.startswith("/") or ".." in parts:
            continue
        out.append((member, parts))
    return out


def unpack(archive: Path, workspace: Path) -> list[str]:
    """The sdist's regular files under ``workspace``, without its top folder (see ``_members``
    for what is skipped). Their paths, sorted."""
    names: list[str] = []
    with tarfile.open(archive) as tar:
        for member, parts in _members(tar):
            source = tar.extractfile(member)
            if source is None:
                continue
            target = workspace.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with source, target.open("wb") as out:
                shutil.copyfileobj(source, out)
            names.append("/".join(parts))
    return sorted(names)


def contents(archive: Path) -> dict[str, bytes]:
    """The bytes of each regular file ``unpack`` would write, by its path in the workspace."""
    out: dict[str, bytes] = {}
    with tarfile.open(archive) as tar:
        for member, parts in _members(tar):
            source = tar.extractfile(member)
            if source is not None:
                with source:
                    out["/".join(parts)] = source.read()
    return out


@dataclass(frozen=True)
class Pinned:
    """One pinned sdist of a registry project: ``package`` at ``version`` whose archive has the
    sha256 ``sha256``, cached in ``folder``. What each half on a public project needs of it."""

    package: str
    version: str
    sha256: str
    folder: Path = CACHE_DIR

    @property
    def filename(self) -> str:
        return f"{self.package}-{self.version}.tar.gz"

    def download(self, folder: Path) -> None:
        """``pip download`` of this sdist into ``folder``."""
        pip_download(f"{self.package}=={self.version}")(folder)

    def verified(self, archive: Path) -> Path:
        """``archive`` when its sha256 is the pinned one; SdistError otherwise."""
        return verified(archive, self.sha256)

    def fetch(self, folder: Path | None = None, download: Downloader | None = None) -> Path:
        """The pinned archive in ``folder`` (this pin's cache by default): kept when it
        verifies, else fetched with ``download`` (``pip download`` by default)."""
        return fetch(folder or self.folder, self.filename, self.sha256, download or self.download)

    def build(self, workspace: Path, archive: Path | None = None) -> list[str]:
        """The project's files in ``workspace`` (fetched and verified unless ``archive`` is given)."""
        return unpack(archive or self.fetch(), workspace)

    def originals(self) -> dict[str, bytes]:
        """The project's files as ``build`` writes them (read once, then kept)."""
        return _contents_of(self)


@functools.cache
def _contents_of(pin: Pinned) -> dict[str, bytes]:
    return contents(pin.fetch())
