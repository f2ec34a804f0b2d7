"""What a search run may do and what it returns: `SearchConfig` (strategy, budget, seed,
parallelism, stops, outage retries), `SearchOutcome` and the run statuses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from search_engine.search import credit

RUNNING, PAUSED, COMPLETED, CANCELLED_STATUS, FAILED = (
    "running", "paused", "completed", "cancelled", "failed")

GPU_SCREEN = 64  # configurations screened per expansion on a GPU target by default


def default_screen(is_interpreter: bool) -> int:
    """Screening per expansion when nobody chose: off on the interpreter (CPU runs stay
    small; its timings rank nothing), GPU_SCREEN on a GPU."""
    return 0 if is_interpreter else GPU_SCREEN


@dataclass
class SearchConfig:
    strategy: str = "mcts"  # mcts | evolution
    budget: int = 12  # evaluations
    seed: int = 0
    children_per_step: int = 2
    max_in_flight: int = 4
    ordered: bool = True
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    plateau_window: int | None = None
    plateau_epsilon: float = 0.02
    gamma: float = credit.DEFAULT_GAMMA
    precision_policy: str = "strict"
    eval_timeout_s: float = 180.0
    context_k: int = 4
    policy_options: dict[str, Any] = field(default_factory=dict)
    family: str = ""  # the problem's operator family ("" = guessed from the source)
    async_synthesis: bool | None = None  # None: when the synthesizer is `remote` (LLM)
    max_synthesis_in_flight: int = 2  # unordered mode; ordered mode keeps one
    outage_failures: int = 1  # failed expansions in a row (each retried) before pausing
    outage_retry_s: float = 30.0  # first retry after an outage; doubles up to the max
    outage_max_retry_s: float = 300.0
    # screening (evaluation/screening.py): an expansion by a local synthesizer asks for
    # `screen` configurations, screens them in a warm sandbox and fully evaluates only the
    # fastest `screen_finalists` (default: the step's children); 0 = every child evaluated
    screen: int = 0
    screen_finalists: int | None = None
    screen_timeout_s: float = 60.0  # per configuration
    spent_cost_usd: float = 0.0  # already spent before this run (a resumed session)
    clock_started: float | None = None  # time.monotonic() the wall clock counts from
    # (default: when run() starts; the CLI counts its coverage check too)

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError("budget must be at least 1 evaluation")
        if self.children_per_step < 1 or self.max_in_flight < 1:
            raise ValueError("children_per_step and max_in_flight must be at least 1")
        if self.screen < 0 or (self.screen_finalists is not None and self.screen_finalists < 1):
            raise ValueError("screen must be 0 or more and screen_finalists at least 1")


@dataclass
class SearchOutcome:
    status: str
    reason: str
    evaluated: int
    best: dict[str, Any] | None
    nodes: list[dict[str, Any]]
    cost_usd: float
    elapsed_s: float
    baselines: dict[str, Any]
    usage: dict[str, Any] = field(default_factory=dict)  # tokens and requests, failed ones too
    stop: str = ""  # why it ended, as a code: see `stop_code`
    screened: int = 0  # configurations screened (finalists included); `evaluated` counts
    # full evaluations only

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# reason prefix -> the stop's code (outcome.stop, optimize --json's "stop_reason")
_STOP_CODES = (("budget of", "budget"), ("time limit", "time_limit"),
               ("cost limit", "cost_limit"), ("plateau", "plateau"),
               ("exhausted", "exhausted"), ("synthesis failed", "synthesis_failed"))


def stop_code(status: str, reason: str) -> str:
    """A search's end as a short code: budget, time_limit, cost_limit, plateau, exhausted,
    synthesis_failed, cancelled or failed."""
    if status in (CANCELLED_STATUS, FAILED):
        return status
    return next((code for prefix, code in _STOP_CODES if reason.startswith(prefix)), "other")
