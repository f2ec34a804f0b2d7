"""Evaluation: sandbox, correctness, timing, diagnostics, integrity checks and reward.

    from search_engine.evaluation import evaluate
    result = evaluate(problem_source, candidate_source, target="auto", precision_policy="strict")

`result` is an `EvaluationResult`; `result.to_dict()` is the CLI's `--json` output.
"""

from search_engine.evaluation.config import EvaluationConfig, RewardConfig, SandboxLimits
from search_engine.evaluation.result import (
    PROBLEM_DEFECT,
    STATUSES,
    EvaluationResult,
    IntegrityFlag,
    TimingStats,
    TrialError,
)


def evaluate(*args, **kwargs) -> EvaluationResult:
    """See `search_engine.evaluation.pipeline.evaluate` (imported lazily: it pulls in torch)."""
    from search_engine.evaluation.pipeline import evaluate as _evaluate

    return _evaluate(*args, **kwargs)


__all__ = [
    "PROBLEM_DEFECT",
    "STATUSES",
    "EvaluationConfig",
    "EvaluationResult",
    "IntegrityFlag",
    "RewardConfig",
    "SandboxLimits",
    "TimingStats",
    "TrialError",
    "evaluate",
]
