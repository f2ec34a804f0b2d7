"""The synthesizer's door to the frontend: `analyze` runs the problem probe
(`search_engine.problem_probe --task analyze`) in the sandbox, which traces the problem's
`Model` (`frontend/trace.py`) and classifies it (`plan/classify.py`), and checks the JSON it
sends back (`plan.classify.analysis_from_json`: strict checks, then the plan's own
classification, so the family is never taken on the child's word). Answers are cached per
source hash, so a search (and the coverage check before it) probes once.

The problem is untrusted code: tracing it runs `Model`, `get_inputs` and the forward, so it
happens only inside the sandboxed probe; this process reads the op graph back as JSON.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from search_engine import problem_probe  # its names read at call time (tests stand in for them)
from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import Analysis
from search_engine.synthesis.offline.frontend.json_io import CoverageUnknown
from search_engine.synthesis.offline.plan.classify import analysis_from_json


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
    key = hashlib.sha256(problem_source.encode()).hexdigest()
    with _PROBED_LOCK:
        if key in _PROBED:
            _PROBED.move_to_end(key)
            return _PROBED[key]
    try:
        payload = problem_probe.run_probe(problem_source, "analyze", timeout_s=timeout_s,
                                          memory_bytes=memory_bytes).payload
        if not payload["ok"]:
            raise CoverageUnknown(f"coverage unknown: the problem failed while being "
                                  f"analyzed: {problem_probe.error_text(payload)}")
        checked = _check_payload(payload)
    except problem_probe.ProbeFailed as exc:
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

