"""The result of evaluating one candidate: the contract shared by the CLI, the search,
the web app (stored on `Candidate`) and the REST reward service.

`to_dict()` is exactly what `python -m search_engine evaluate --json` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

STATUSES = (
    "compile_error",
    "runtime_error",
    "timeout",
    "incorrect",
    "hack_suspected",
    "rejected_lazy",
    "correct",
)
# A problem defect (degenerate reference output) is reported, not scored.
PROBLEM_DEFECT = "problem_defect"


@dataclass
class TrialError:
    trial: int
    seed: int
    max_abs_error: float | None
    max_rel_error: float | None
    rel_norm_error: float | None
    passed: bool
    note: str = ""


@dataclass
class TimingStats:
    median_ms: float | None = None
    iqr_ms: float | None = None
    samples: int = 0
    method: str = ""  # "cuda_events+l2_flush", "interpreter", ...
    # baselines only: the math they ran in (`baseline_precision`), the torch switches in
    # effect while timed, and their own error against the float64 reference
    precision: str = ""
    backend: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass
class IntegrityFlag:
    check: str  # the check's name, e.g. "static.forbidden_import"
    evidence: str  # what it saw, readable by a user
    severity: str = "hack"  # "hack" (taints the result) or "warning"


def is_tainted(flags) -> bool:
    """The one rule: a result is tainted by any integrity flag that is not a warning.
    Takes `IntegrityFlag`s or their stored dicts (a dict without a severity is a hack)."""
    for flag in flags or []:
        severity = flag.get("severity", "hack") if isinstance(flag, dict) else \
            getattr(flag, "severity", "hack")
        if severity != "warning":
            return True
    return False


@dataclass
class EvaluationResult:
    status: str
    message: str = ""
    precision_policy: str = "strict"
    target: str = "interpreter"
    correctness: list[TrialError] = field(default_factory=list)
    timing: dict[str, TimingStats] = field(default_factory=dict)  # candidate, eager, compile
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_label: str = ""  # e.g. "depends on tf32 policy", "interpreter: not comparable"
    # what eager / torch.compile were timed in ("" on results stored before baselines
    # followed the policy: PyTorch's defaults, `baseline_precision.LEGACY_PRECISION`)
    baseline_precision: str = ""
    coverage: float | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    integrity_flags: list[IntegrityFlag] = field(default_factory=list)
    reward: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    logs: str = ""
    duration_s: float = 0.0
    # the shapes it was checked and timed at (lists of input shapes; `second_shape.py`)
    verified_shapes: list[list[list[int]]] = field(default_factory=list)
    timed_shapes: list[list[list[int]]] = field(default_factory=list)
    shape_specific: bool = False
    shape_check: dict[str, Any] = field(default_factory=dict)

    @property
    def is_correct(self) -> bool:
        return self.status == "correct"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EvaluationResult":
        data = dict(data)
        data["correctness"] = [TrialError(**t) for t in data.get("correctness", [])]
        data["timing"] = {k: TimingStats(**v) for k, v in (data.get("timing") or {}).items()}
        data["integrity_flags"] = [IntegrityFlag(**f) for f in data.get("integrity_flags", [])]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})
