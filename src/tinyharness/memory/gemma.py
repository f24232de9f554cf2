"""EmbeddingGemma-300M, run in numpy: the embedder memory search uses when it is installed.

Google's EmbeddingGemma (Gemma Terms of Use) is fetched once by ``tinyharness models fetch
embeddinggemma-300m`` (``make setup`` does it) and checked against its official sha256; this module
reads the fetched folder and computes what the reference implementation (sentence-transformers)
computes, in float32 with numpy's matrix products: no PyTorch, no download at run time.

The model is a 24-layer Gemma 3 encoder with bidirectional attention: token embeddings scaled by
sqrt(width), per layer an RMS-normed attention block (3 query heads sharing one key/value head, RMS
norms on queries and keys, rotary positions with a local base on sliding-window layers and a global
base on every sixth) and an RMS-normed gated-GELU block, each followed by its own norm before the
residual add; then a final norm, the mean over the tokens, two linear maps (768 -> 3072 -> 768) and
unit length. Queries and documents get the model card's prompts (``QUERY_PROMPT``,
``DOCUMENT_PROMPT``). A test compares the vectors with the reference's, to five decimals.

Why it is worth 1.2 GB: on the LoCoMo tuning half, recall@5 through the public import went from 0.783
(multilingual-e5-small, 4-bit) to 0.818; bench/notes/memory.md has the rows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from ..errors import ConfigError
from .embed import Vectors, normalize_rows

QUERY_PROMPT = "task: search result | query: "
DOCUMENT_PROMPT = "title: none | text: "
MAX_TOKENS = 2048  # the model's own limit; longer texts are cut there, as the reference does
BATCH = 16  # texts per forward pass, grouped by length so that little of a batch is padding
REQUIRED_FILES = (
    "config.json",
    "tokenizer.model",
    "model.safetensors",
    "2_Dense/model.safetensors",
    "3_Dense/model.safetensors",
)

F32 = npt.NDArray[np.float32]


def read_safetensors(path: Path) -> dict[str, F32]:
    """The float32 tensors of a safetensors file, as read-only views of a memory map (nothing is
    copied: the pages are read when a tensor is first used). ConfigError for anything else."""
    size = path.stat().st_size
    if size < 8:
        raise ConfigError(f"{path} is not a safetensors file (too short)")
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    length = int(np.frombuffer(raw[:8].tobytes(), dtype="<u8")[0])
    if length > size - 8:
        raise ConfigError(f"{path} is not a safetensors file (its header runs past the end)")
    try:
        header = json.loads(raw[8 : 8 + length].tobytes())
    except ValueError as exc:
        raise ConfigError(f"{path} is not a safetensors file: {exc}") from None
    if not isinstance(header, dict):
        raise ConfigError(f"{path} is not a safetensors file (its header is not an object)")
    header.pop("__metadata__", None)
    start = 8 + length
    tensors: dict[str, F32] = {}
    for name, info in header.items():
        if not isinstance(info, dict) or info.get("dtype") != "F32":
            kind = info.get("dtype") if isinstance(info, dict) else info
            raise ConfigError(f"{path}: tensor {name} is {kind}, expected F32")
        begin, end = (int(x) for x in info["data_offsets"])
        shape = [int(x) for x in info["shape"]]
        if not 0 <= begin <= end <= size - start or end - begin != 4 * int(np.prod(shape)):
            raise ConfigError(f"{path}: tensor {name} does not fit the file")
        tensors[name] = raw[start + begin : start + end].view(np.float32).reshape(shape)
    return tensors


class _Layer:
    """One encoder layer's weights: projections as transposed views (``x @ w``), norms as ``1 + w``
    (Gemma's RMS norm scales by one plus its weight). Each is copied out of the memory map once: a
    tensor there can sit at any byte offset, and numpy multiplies unaligned arrays without BLAS
    (measured: about 7x slower)."""

    def __init__(self, tensors: dict[str, F32], prefix: str) -> None:
        def get(name: str) -> F32:
            return np.array(tensors[prefix + name], dtype=np.float32)

        self.norm_in = 1.0 + get("input_layernorm.weight")
        self.norm_after_attention = 1.0 + get("post_attention_layernorm.weight")
        self.norm_before_mlp = 1.0 + get("pre_feedforward_layernorm.weight")
        self.norm_after_mlp = 1.0 + get("post_feedforward_layernorm.weight")
        self.norm_q = 1.0 + get("self_attn.q_norm.weight")
        self.norm_k = 1.0 + get("self_attn.k_norm.weight")
        self.q = get("self_attn.q_proj.weight").T
        self.k = get("self_attn.k_proj.weight").T
        self.v = get("self_attn.v_proj.weight").T
        self.o = get("self_attn.o_proj.weight").T
        self.gate = get("mlp.gate_proj.weight").T
        self.up = get("mlp.up_proj.weight").T
        self.down = get("mlp.down_proj.weight").T


class GemmaEmbedder:
    """``Embedder`` for EmbeddingGemma-300M from its fetched folder (see the module docstring)."""

    name = "embeddinggemma-300m"
    dim = 768

    def __init__(self, folder: str | Path, *, max_tokens: int = MAX_TOKENS, batch: int = BATCH) -> None:
        """Checks that the files are there; the weights are read at the first text to embed, so
        opening a store that only lists or deletes memories costs nothing."""
        self.folder = Path(folder)
        self.max_tokens, self.batch = max_tokens, batch
        missing = [name for name in REQUIRED_FILES if not (self.folder / name).is_file()]
        if missing:
            raise ConfigError(
                f"EmbeddingGemma is not complete in {self.folder} (missing {', '.join(missing)}); "
                "run `tinyharness models fetch embeddinggemma-300m`"
            )
        self._lock = threading.Lock()  # one load, and one forward pass at a time
        self._loaded = False

    def _load(self) -> None:
        try:
            import sentencepiece
        except ImportError as exc:  # a dependency of the project: only a broken install lacks it
            raise ConfigError(f"the EmbeddingGemma embedder needs the sentencepiece package: {exc}") from exc
        try:
            config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
            # The SentencePiece model, not tokenizer.json: the same ids (checked on 806 texts), but
            # it loads in 0.2 s instead of 2.3 s, and a command-line search pays that each time.
            self._tokenizer = sentencepiece.SentencePieceProcessor(
                model_file=str(self.folder / "tokenizer.model")
            )
            tensors = read_safetensors(self.folder / "model.safetensors")
            self._dense = [
                np.array(read_safetensors(self.folder / part / "model.safetensors")["linear.weight"]).T
                for part in ("2_Dense", "3_Dense")
            ]
            self._heads = int(config["num_attention_heads"])
            self._head_dim = int(config["head_dim"])
            self._eps = np.float32(config["rms_norm_eps"])
            self._window = int(config["sliding_window"])
            self._layer_types: list[str] = list(config["layer_types"])
            self._attention_scale = np.float32(float(config["query_pre_attn_scalar"]) ** -0.5)
            self._embed_scale = np.float32(float(config["hidden_size"]) ** 0.5)
            self._embeddings = tensors["embed_tokens.weight"]
            self._layers = [_Layer(tensors, f"layers.{i}.") for i in range(int(config["num_hidden_layers"]))]
            self._norm_out = 1.0 + np.array(tensors["norm.weight"])
            half = np.arange(0, self._head_dim, 2, dtype=np.float32) / self._head_dim
            self._inverse_frequencies = {
                "sliding_attention": 1.0 / (float(config["rope_local_base_freq"]) ** half),
                "full_attention": 1.0 / (float(config["rope_theta"]) ** half),
            }
        except (ConfigError, OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise ConfigError(
                f"EmbeddingGemma files in {self.folder} are damaged ({exc}); delete that folder and "
                "run `tinyharness models fetch embeddinggemma-300m`"
            ) from None
        if self._dense[-1].shape[1] != self.dim:
            raise ConfigError(
                f"{self.folder} holds a {self._dense[-1].shape[1]}-d model, expected {self.dim}"
            )
        self._loaded = True

    # --- the Embedder protocol -----------------------------------------------------------------

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode([DOCUMENT_PROMPT + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._encode([QUERY_PROMPT + text])[0]

    # --- the model -------------------------------------------------------------------------------

    def _encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # One BLAS thread: OpenBLAS's spinning thread pool ran 10x slower (86 against 7.4 s for 40
        # messages) when the other core was busy, as it is beside a local model or a test run.
        with self._lock, threadpool_limits(limits=1, user_api="blas"):
            if not self._loaded:
                self._load()
            encoded = self._tokenizer.encode(list(texts), add_bos=True, add_eos=True)
            ids = [list(tokens[: self.max_tokens]) for tokens in encoded]
            order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
            for start in range(0, len(order), self.batch):
                chosen = order[start : start + self.batch]
                out[chosen] = self._forward([ids[i] for i in chosen])
        return normalize_rows(out)

    def _rms(self, x: F32, weight: F32) -> F32:
        return (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self._eps) * weight).astype(
            np.float32, copy=False
        )

    def _forward(self, batch: Sequence[Sequence[int]]) -> F32:
        """Pooled, projected (not yet unit-length) vectors of a batch of token id lists."""
        size, length = len(batch), max(len(ids) for ids in batch)
        tokens = np.zeros((size, length), dtype=np.int64)
        present = np.zeros((size, length), dtype=bool)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            present[row, : len(ids)] = True
        hidden = self._embeddings[tokens] * self._embed_scale
        blocked = np.float32(np.finfo(np.float32).min / 2)
        padding = np.where(present[:, None, None, :], np.float32(0), blocked)  # keys that are padding
        positions = np.arange(length, dtype=np.float32)
        distance = np.abs(positions[:, None] - positions[None, :])
        masks = {
            "full_attention": padding,
            # A window of 512 is 256 tokens on each side: what the reference computes (the test's
            # 868-token text matches it this way; with 511 or 513 tokens of reach it does not).
            "sliding_attention": padding + np.where(distance <= self._window // 2, np.float32(0), blocked),
        }
        rotations = {}
        for kind, inverse in self._inverse_frequencies.items():
            angles = positions[:, None] * inverse[None, :]
            angles = np.concatenate([angles, angles], axis=-1)
            rotations[kind] = (np.cos(angles), np.sin(angles))
        for layer, kind in zip(self._layers, self._layer_types, strict=True):
            hidden = hidden + self._rms(
                self._attention(layer, self._rms(hidden, layer.norm_in), masks[kind], rotations[kind]),
                layer.norm_after_attention,
            )
            x = self._rms(hidden, layer.norm_before_mlp)
            gate = x @ layer.gate
            gate = (
                0.5
                * gate
                * (1.0 + np.tanh(np.float32(0.7978845608028654) * (gate + np.float32(0.044715) * gate**3)))
            )
            hidden = hidden + self._rms((gate * (x @ layer.up)) @ layer.down, layer.norm_after_mlp)
        hidden = self._rms(hidden, self._norm_out)
        weights = present[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        for dense in self._dense:
            pooled = pooled @ dense
        return pooled.astype(np.float32, copy=False)

    def _attention(self, layer: _Layer, x: F32, mask: F32, rotation: tuple[F32, F32]) -> F32:
        size, length, _ = x.shape
        heads, width = self._heads, self._head_dim
        q = (x @ layer.q).reshape(size, length, heads, width).transpose(0, 2, 1, 3)
        k = (x @ layer.k).reshape(size, length, 1, width).transpose(0, 2, 1, 3)  # one shared head
        v = (x @ layer.v).reshape(size, length, 1, width).transpose(0, 2, 1, 3)
        q, k = (
            self._rotate(self._rms(q, layer.norm_q), rotation),
            self._rotate(self._rms(k, layer.norm_k), rotation),
        )
        scores = (q @ k.transpose(0, 1, 3, 2)) * self._attention_scale + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        mixed = (scores @ v).transpose(0, 2, 1, 3).reshape(size, length, heads * width)
        out: F32 = mixed @ layer.o
        return out

    @staticmethod
    def _rotate(x: F32, rotation: tuple[F32, F32]) -> F32:
        cos, sin = rotation
        half = x.shape[-1] // 2
        turned = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return (x * cos + turned * sin).astype(np.float32, copy=False)
