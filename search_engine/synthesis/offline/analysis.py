"""Read a KernelBench reference `Model` with torch.fx into a small op graph (the IR).

Composite ops are expanded into primitives the templates know (softmax → max, sub, exp, sum,
div; layer norm → mean, var, rsqrt, ...), shapes come from `ShapeProp` on the problem's own
inputs, and the graph is classified into one family:

- ``elementwise``: a chain/DAG of pointwise ops over broadcastable tensors;
- ``rows``: pointwise ops plus reductions that all reduce the same contiguous dims;
- ``matmul``: one matmul/linear/bmm over inputs or parameters (optionally transposed),
  followed by an epilogue of pointwise ops and reductions.

Anything else raises `NotCoveredError` naming the ops that stopped it.

The problem is untrusted code: tracing it (which runs `Model`, `get_inputs`, the forward)
happens only inside the sandboxed probe (`search_engine.problem_probe --task analyze`, which
calls `trace_module`). This process gets the op graph back as JSON (`analysis_to_json`),
checks it strictly (`analysis_from_json`: known ops, dtypes and attributes, identifiers only
where names reach generated code, references to earlier nodes only) and classifies it again
itself, so the family is never taken on the child's word. `analyze` caches the probe's answer
per source hash, so a search (and the coverage check before it) probes once.

This module is the entry point (`analyze` and its probe cache) and the public face of the
analysis; the parts live beside it, and everything is re-exported from here:

- `analysis_ir`: the IR's types (`Const`, `IRNode`, `Analysis`) and op vocabulary;
- `analysis_builder`: building the IR and expanding composite ops;
- `analysis_translator`: the torch.fx graph → IR translation (`analysis_pointwise`: the
  activations and pointwise functions it lowers to compositions; `analysis_inplace`: in-place
  ops, rebound or refused);
- `analysis_trace`: `trace_module`, which runs the problem on the meta device (sandbox only);
- `analysis_json`: the IR as JSON and its strict checks (`CoverageUnknown`);
- `analysis_classify`: the family of a graph (`classify`, `check_rows`, `op_summary`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.analysis_builder import (  # noqa: F401 (lowering's)
    _dims, _int, _norm_dims, _Uncovered,
)
from search_engine.synthesis.offline.analysis_classify import (  # noqa: F401
    check_rows, classify, op_summary,
)
from search_engine.synthesis.offline.analysis_ir import (  # noqa: F401
    BINARY, FAMILIES, LEAVES, OPS, REDUCTIONS, STAGED_OPS, UNARY, Analysis, Const, IRNode,
)
from search_engine.synthesis.offline.analysis_json import (  # noqa: F401
    DTYPE_NAMES, CoverageUnknown, analysis_from_json, analysis_to_json,
)


ANALYZE_TIMEOUT_S = 120.0
ANALYZE_MEMORY_BYTES = 4 << 30


def analyze(problem_source: str, *, timeout_s: float = ANALYZE_TIMEOUT_S,
            memory_bytes: int = ANALYZE_MEMORY_BYTES) -> Analysis:
    """The problem's op graph, traced in the sandbox; NotCoveredError when not covered."""
    payload = _probe_analysis(problem_source, timeout_s, memory_bytes)
    if not payload["covered"]:
        raise NotCoveredError(payload["message"], payload["ops"])
    analysis = analysis_from_json(payload["analysis"])
    analysis.materialized_bytes = payload.get("materialized_bytes", 0)
    # the same graph traced at other batch sizes: what `travel` renders to learn which
    # generated sizes follow the batch ({} when the problem is fixed at its own)
    analysis.batch_variants = {}
    for variant in payload.get("batch_analyses", []):
        try:
            analysis.batch_variants[variant["batch"]] = analysis_from_json(variant["analysis"])
        except NotCoveredError:
            analysis.batch_variants = {}
            break
    return analysis


_PROBED: OrderedDict[str, dict] = OrderedDict()  # source sha256 -> checked probe payload
_PROBED_LOCK = threading.Lock()
_PROBED_MAX = 256


def _probe_analysis(problem_source: str, timeout_s: float, memory_bytes: int) -> dict:
    from search_engine.problem_probe import ProbeFailed, error_text, run_probe

    key = hashlib.sha256(problem_source.encode()).hexdigest()
    with _PROBED_LOCK:
        if key in _PROBED:
            _PROBED.move_to_end(key)
            return _PROBED[key]
    try:
        payload = run_probe(problem_source, "analyze", timeout_s=timeout_s,
                            memory_bytes=memory_bytes).payload
        if not payload["ok"]:
            raise CoverageUnknown(f"coverage unknown: the problem failed while being "
                                  f"analyzed: {error_text(payload)}")
        checked = _check_payload(payload)
    except ProbeFailed as exc:
        raise CoverageUnknown(f"coverage unknown: the sandboxed analysis {exc}") from None
    with _PROBED_LOCK:
        _PROBED[key] = checked
        while len(_PROBED) > _PROBED_MAX:
            _PROBED.popitem(last=False)
    return checked


def _check_payload(payload: dict) -> dict:
    covered = payload.get("covered")
    if covered is True:
        try:
            analysis_from_json(payload.get("analysis"))  # CoverageUnknown when malformed
        except CoverageUnknown:
            raise
        except NotCoveredError:
            pass  # well-formed; `analyze` refuses it on every call, without probing again
        held = payload.get("materialized_bytes", 0)
        if not isinstance(held, int) or isinstance(held, bool) or held < 0:
            raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")
        return {"covered": True, "analysis": payload["analysis"], "materialized_bytes": held,
                "batch_analyses": _checked_variants(payload.get("batch_analyses"))}
    if covered is False:
        message, ops = payload.get("message"), payload.get("ops")
        if not isinstance(message, str) or not isinstance(ops, list) \
                or not all(isinstance(o, str) for o in ops) or len(ops) > 1000:
            raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")
        return {"covered": False, "message": _clip(message, 2000),
                "ops": [_clip(o, 200) for o in ops]}
    raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")


def _checked_variants(variants) -> list[dict]:
    """The probe's batch variants, each checked as strictly as the main graph; any doubt
    drops them all (the kernels then stay at the problem's own shape)."""
    if not isinstance(variants, list) or len(variants) > 4:
        return []
    checked = []
    for variant in variants:
        batch = variant.get("batch") if isinstance(variant, dict) else None
        if not isinstance(batch, int) or isinstance(batch, bool) or not 0 < batch < 1 << 40:
            return []
        try:
            analysis_from_json(variant.get("analysis"))
        except NotCoveredError:  # CoverageUnknown included
            return []
        checked.append({"batch": batch, "analysis": variant["analysis"]})
    return checked


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["Analysis", "IRNode", "Const", "CoverageUnknown", "analysis_from_json",
           "analysis_to_json", "analyze", "classify", "op_summary", "trace_module"]

# Imported last: the tracer imports `lowering`, which imports names from this module, so
# those must all be bound before it runs.
from search_engine.synthesis.offline.analysis_trace import trace_module  # noqa: E402
from search_engine.synthesis.offline.analysis_translator import _get_attr  # noqa: E402,F401
from search_engine.synthesis.offline import lowering  # noqa: E402,F401 (the tracer calls it)
