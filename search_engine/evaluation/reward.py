"""The reward, as in Dr. Kernel:

    reward = w_c·1 + w_s·min(speedup, clip) + w_v·coverage     when status == "correct"
    reward = failure_reward (0)                                 otherwise (incorrect, crash,
                                                                timeout, hack, lazy)

Defaults: w_c = w_s = w_v = 0.5, clip = 3, speedup against eager PyTorch, coverage in
[0, 1]. On the interpreter no speedup is measurable: the term uses
`RewardConfig.interpreter_speedup` (1.0, neutral) and the result's `speedup_label` says so.
"""

from __future__ import annotations

from search_engine.evaluation.config import RewardConfig


def reward_speedup(speedup_vs_eager: float | None, speedup_vs_compile: float | None,
                   config: RewardConfig, interpreter: bool) -> float | None:
    if interpreter:
        return config.interpreter_speedup
    if config.speedup_baseline == "compile":
        return speedup_vs_compile
    if config.speedup_baseline == "best":
        known = [s for s in (speedup_vs_eager, speedup_vs_compile) if s is not None]
        return min(known) if known else None  # the faster baseline gives the smaller speedup
    return speedup_vs_eager


def compute_reward(status: str, speedup: float | None, coverage: float | None,
                   config: RewardConfig) -> float:
    if status != "correct":
        return config.failure_reward
    s = min(max(speedup or 0.0, 0.0), config.speedup_clip)
    c = min(max(coverage if coverage is not None else 0.0, 0.0), 1.0)
    return round(config.correct_weight + config.speedup_weight * s + config.coverage_weight * c, 6)
