"""The fast embedding backend (our int8 ONNX export of the packaged MiniLM) is the default,
agrees with the float model, and falls back to the float model, saying why."""

import numpy as np
import pytest

from knowledge import embeddings

SENTENCES = [
    "Hopper's Tensor Memory Accelerator copies tiles between global and shared memory.",
    "Reduce register pressure to raise occupancy on CDNA2.",
    "How do I avoid shared memory bank conflicts in a matrix transpose?",
    "num_stages",
]


@pytest.fixture
def fresh_backend():
    embeddings._load.cache_clear()
    yield
    embeddings._load.cache_clear()


def float_model():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(embeddings._model_dir()), device="cpu")


def test_onnx_int8_is_the_default_and_matches_the_float_model():
    status = embeddings.backend_status()
    assert status.name == "onnx-int8", status.reason
    assert embeddings.model_id() == "all-MiniLM-L6-v2+onnx-int8"
    fast = embeddings.embed(SENTENCES)
    exact = float_model().encode(SENTENCES, normalize_embeddings=True)
    cosines = np.sum(fast * exact, axis=1)
    assert cosines.min() > 0.97, cosines
    assert np.allclose(np.linalg.norm(fast, axis=1), 1, atol=1e-4)


def test_a_texts_vector_does_not_depend_on_the_others_in_the_call():
    texts = ["short", "a much longer text " * 30, "medium length text about warps", "x"]
    together = embeddings.embed(texts)
    alone = np.stack([embeddings.embed_query(t) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)  # same order, same vectors


def test_token_counts_are_the_models_word_pieces():
    tokenizer = float_model().tokenizer
    expected = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in SENTENCES]
    assert embeddings.token_counts(SENTENCES) == expected
    assert embeddings.token_counts(["word " * 400]) == [400]  # counting never truncates


def test_without_onnx_the_float_model_is_used_and_reported(fresh_backend, monkeypatch):
    def unavailable(self):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(embeddings._OnnxEncoder, "__init__", unavailable)
    status = embeddings.backend_status()
    assert status.name == "torch" and status.model_id == "all-MiniLM-L6-v2"
    assert "ONNX backend unavailable (ImportError: No module named 'onnxruntime')" in status.reason
    vector = embeddings.embed_query(SENTENCES[0])
    assert vector.shape == (384,)


def test_asking_for_onnx_when_it_cannot_load_is_an_error(fresh_backend, monkeypatch):
    monkeypatch.setenv("KB_EMBED_BACKEND", "onnx")

    def unavailable(self):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(embeddings._OnnxEncoder, "__init__", unavailable)
    with pytest.raises(ImportError):
        embeddings.backend_status()


def test_an_export_that_drifts_is_refused(tmp_path):
    from knowledge import onnx_export

    class Drifting:
        tokenizer = float_model().tokenizer

        def encode(self, sentences, **kwargs):
            vectors = np.random.default_rng(0).normal(size=(len(sentences), 384))
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    path = onnx_export.export_path(embeddings._model_dir())
    assert path.exists()  # made by the first test's use
    with pytest.raises(RuntimeError, match="drifts from the float model"):
        onnx_export._check_against_float(Drifting(), path, embeddings.MAX_TOKENS)
