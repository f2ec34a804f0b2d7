"""The one mapping between a search node (`search_engine.candidate.CandidateRecord`) and a
`Candidate` row.

Each fact is stored once: the evaluation's headline facts in their columns (status,
message, reward, speedups, coverage, timing, diagnostics, integrity flags: what pages,
filters, OData and exports read), and in `Candidate.result` only the rest of the
`EvaluationResult` (per-trial errors, target, precision policy, speedup label, isolation,
duration). `candidate_result` composes the whole result again for whoever needs it.
"""

from __future__ import annotations

from typing import Any

from kernelhub.optimization.models import Candidate
from search_engine.candidate import CandidateRecord

LIVE_MESSAGE_CHARS = 300  # what a live event carries of a node's message


def candidate_created_fields(record: CandidateRecord, parent_pk: int | None) -> dict[str, Any]:
    """The columns of a new (pending) node: where it sits, its code, who wrote it."""
    usage = record.usage
    pruned = {"message": str(record.origin["pruned"])[:2000]} \
        if record.origin.get("pruned") else {}  # why it could not run on the target
    if record.origin.get("screened"):  # its screening: a timing or why it failed
        pruned = {"message": screen_message(record.origin.get("screen") or {})}
    return {
        **pruned,
        "parent_id": parent_pk, "depth": record.depth, "source": record.source,
        "origin": record.origin, "status": record.status,
        "retrieved_context": record.origin.get("context") or [],
        "prompt_tokens": int(usage.get("prompt_tokens") or 0),
        "completion_tokens": int(usage.get("completion_tokens") or 0),
        "cost_usd": float(usage.get("cost_usd") or 0.0),
        "llm_model": str(record.origin.get("model") or "")[:200],
    }


def screen_message(screen: dict[str, Any]) -> str:
    """A screened configuration's line: its screening timing, or why it failed."""
    if screen.get("passed") and screen.get("median_ms") is not None:
        return (f"screened: {screen['median_ms']:.4g} ms median of {screen.get('samples', 0)} "
                f"({screen.get('method', '')}), rank {screen.get('rank')}; not fully evaluated")
    return f"screened out: {str(screen.get('reason', ''))[:1900]}"


def candidate_result_fields(record: CandidateRecord) -> dict[str, Any]:
    """The columns of an evaluated node; `result` gets only what has no column."""
    return {
        "status": record.status, "message": record.message, "reward": record.reward,
        "advantage": record.advantage, "speedup_vs_eager": record.speedup_vs_eager,
        "speedup_vs_compile": record.speedup_vs_compile, "coverage": record.coverage,
        "timing": record.timing, "diagnostics": record.diagnostics,
        "integrity_flags": record.integrity_flags, "result": record.details,
    }


def candidate_record(candidate: Candidate, *, baselines: dict | None = None) -> CandidateRecord:
    """The row as a record (`baselines`: the session's, for the root)."""
    parent = candidate.parent
    return CandidateRecord(
        node_id=int(candidate.node_id),
        parent_node_id=int(parent.node_id) if parent is not None else None,
        depth=candidate.depth, source=candidate.source, origin=candidate.origin or {},
        status=candidate.status, message=candidate.message, reward=candidate.reward,
        advantage=candidate.advantage, speedup_vs_eager=candidate.speedup_vs_eager,
        speedup_vs_compile=candidate.speedup_vs_compile, coverage=candidate.coverage,
        timing=candidate.timing or {}, diagnostics=candidate.diagnostics or {},
        integrity_flags=list(candidate.integrity_flags or []),
        details=candidate_details(candidate), baselines=dict(baselines or {}),
    )


def candidate_details(candidate: Candidate) -> dict[str, Any]:
    """What of the result has no column (per-trial errors, speedup label, logs, ...)."""
    return dict(candidate.result or {})


def candidate_result(candidate: Candidate) -> dict[str, Any] | None:
    """The whole `EvaluationResult.to_dict()` of the row (None if it was never evaluated),
    composed from the columns and the rest stored in `result`."""
    return candidate_record(candidate).result()


def candidate_live_event(record: CandidateRecord, pk: int, *, advantages: dict,
                         evaluated: int, budget: int, screened: int = 0) -> dict[str, Any]:
    """What the live page needs of a node (sources and full results stay in the rows)."""
    return {
        "candidate_pk": pk, "node_id": str(record.node_id),
        "parent_node_id": None if record.parent_node_id is None else str(record.parent_node_id),
        "depth": record.depth, "status": record.status,
        "reward": record.reward, "advantage": record.advantage,
        "speedup_vs_eager": record.speedup_vs_eager,
        "speedup_vs_compile": record.speedup_vs_compile,
        "coverage": record.coverage, "bottleneck": record.bottleneck,
        "reason": record.bottleneck_reason, "message": record.message[:LIVE_MESSAGE_CHARS],
        "transformation": record.origin.get("transformation", ""),
        "synthesizer": record.origin.get("synthesizer", ""),
        "advantages": advantages or {}, "evaluated": evaluated, "budget": budget,
        "screened": screened,
    }
