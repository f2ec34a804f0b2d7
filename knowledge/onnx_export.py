"""Our int8 ONNX export of the packaged MiniLM, made once from the local model files.

Nothing is downloaded: the export traces the packaged weights (torch), fuses the BERT
graph with ONNX Runtime's transformer optimizer (attention, GELU, layer norms) and
quantizes the matrix multiplies to int8 per channel (per-tensor int8 loses too much:
cosine 0.92 against the float model; per channel 0.99). Mean pooling and L2
normalization are part of the graph, so the output is the sentence embedding.

The file lands in a cache folder (KB_MODEL_CACHE, else ~/.cache/kernelhub) under a name
that changes with the weights and the tool versions, written atomically under a file
lock so two processes starting at once export once. An export that drifts from the
float model (checked on fixed sentences) is refused, so the caller falls back to torch.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

EXPORT_VERSION = "1"  # bump when the export recipe changes
MIN_COSINE = 0.97  # the export's worst sentence against the float model
CHECK_SENTENCES = [
    "Shared memory bank conflicts serialize accesses within a warp.",
    "wgmma on Hopper reads operands from shared memory descriptors",
    "num_stages and waves_per_eu tune Triton kernels on MI300X",
    "x",
]
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_dir() -> Path:
    root = os.environ.get("KB_MODEL_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelhub"
    return Path(root)


def export_path(model_dir: Path) -> Path:
    import onnxruntime
    import torch

    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    key = f"{EXPORT_VERSION}|{stat.st_size}|{_file_digest(weights)}|{onnxruntime.__version__}|{torch.__version__}"
    return cache_dir() / f"minilm-int8-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_export(model_dir: Path, max_tokens: int) -> Path:
    """The int8 model file, exported now if it is not in the cache yet."""
    target = export_path(model_dir)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():  # another process may have finished it while we waited
            _export(model_dir, target, max_tokens)
    return target


def _export(model_dir: Path, target: Path, max_tokens: int) -> None:
    import tempfile

    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from sentence_transformers import SentenceTransformer

    # Eager attention traces to the plain pattern the optimizer fuses into one op.
    model = SentenceTransformer(str(model_dir), device="cpu",
                                model_kwargs={"attn_implementation": "eager"})
    bert = model[0].auto_model.eval()
    config = bert.config
    sample = model.tokenizer(CHECK_SENTENCES[:2], padding=True, return_tensors="pt")
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        traced, fused = Path(work) / "float.onnx", Path(work) / "fused.onnx"
        quantized = Path(work) / "int8.onnx"
        with torch.no_grad():
            torch.onnx.export(
                _pooled(bert), tuple(sample[name] for name in INPUTS), str(traced),
                input_names=list(INPUTS), output_names=["embedding"], opset_version=17,
                dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in INPUTS},
                              "embedding": {0: "batch"}},
                dynamo=False,
            )
        optimized = optimizer.optimize_model(str(traced), model_type="bert",
                                             num_heads=config.num_attention_heads,
                                             hidden_size=config.hidden_size)
        optimized.save_model_to_file(str(fused))
        quantize_dynamic(str(fused), str(quantized), op_types_to_quantize=["MatMul", "Attention"],
                         per_channel=True, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        _check_against_float(model, quantized, max_tokens)
        os.replace(quantized, target)


def _check_against_float(model, path: Path, max_tokens: int) -> None:
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    encoded = model.tokenizer(CHECK_SENTENCES, padding=True, truncation=True,
                              max_length=max_tokens, return_tensors="np")
    fast = session.run(None, {n: encoded[n].astype(np.int64) for n in INPUTS})[0]
    exact = model.encode(CHECK_SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    worst = float(np.min(np.sum(fast * exact, axis=1)))
    if worst < MIN_COSINE:
        raise RuntimeError(f"int8 export drifts from the float model (cosine {worst:.3f} "
                           f"< {MIN_COSINE}); not using it")


def _pooled_class():
    import torch

    class Pooled(torch.nn.Module):
        """BERT, then mean pooling over real tokens and L2 normalization (as the
        sentence-transformers Pooling and Normalize modules of the model do)."""

        def __init__(self, bert) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return Pooled


def _pooled(bert):
    return _pooled_class()(bert)
