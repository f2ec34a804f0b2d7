"""`evaluate()`: one candidate, judged end to end.

Parent (trusted judge)              Problem sandbox              Candidate sandbox
--------------------------------    -------------------------    ------------------------------
static checks on the source (AST)
                              --->  run the problem: inputs,
                                    float64 outputs, baselines
keep inputs and reference     <---
load(init inputs, weights)    ------------------------------->   build ModelNew
call(set i) for each trial    ------------------------------->   one forward, outputs back now
compare each with reference   <-------------------------------
time (GPU lock held here)     ------------------------------->   timed loop; last outputs back
compare timed outputs, call again after timing, ghost replay (launches no-op, memory poisoned)
profile / evidence            ------------------------------->
flags, coverage, diagnostics, ncu, reward

The candidate never sees the problem, the reference or the plan; a reply out of order or a
message nobody asked for makes it `hack_suspected`; its death is its own `runtime_error`.

The stages of one run are `candidate_run.CandidateRun`'s: the conversation with the
candidate's sandbox there, timing and the checks on kept outputs in `timed_checks`, the
verdict in `judgement`.
"""

from __future__ import annotations

import time
from pathlib import Path

from search_engine.evaluation.candidate_run import CandidateRun, candidate_env, child_args
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.judgement import _timing_quality
from search_engine.evaluation.reference import ReferenceCache, ReferenceData, compute_reference
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag
from search_engine.evaluation.sandbox_pool import SandboxPool
from search_engine.evaluation.timed_checks import _noise, _random_indices
from search_engine.evaluation.tolerances import check_policy
from search_engine.hardware import DeviceUnavailable, HardwareTarget, get_target
from search_engine.problems import Problem, ProblemError, load_problem

__all__ = [  # the private names are re-exported for the tests and `resident`
    "DEFAULT_TIMEOUT_S", "candidate_pool", "evaluate",
    "_Run", "_noise", "_random_indices", "_timing_quality",
]

DEFAULT_TIMEOUT_S = 180.0


def evaluate(
    problem_source: Problem | str | Path,
    candidate_source: str,
    target: str | HardwareTarget = "auto",
    precision_policy: str = "strict",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    config: EvaluationConfig | None = None,
    *,
    reference_cache: ReferenceCache | None = None,
    baseline_cache: dict | None = None,
    keep_workdir: bool = False,
    sandbox_pool=None,
) -> EvaluationResult:
    """Evaluate `candidate_source` (Python defining `ModelNew`) against a KernelBench problem.

    Raises `ProblemError` / `ValueError` for bad problems, targets or policies; every
    candidate failure is a result with a status, never an exception. `sandbox_pool` (see
    `candidate_pool`) hands out warm single-use sandboxes. `baseline_cache` is accepted for
    older callers and unused: baselines live with the reference (`reference_cache`) and on
    disk (`BaselineCache`).
    """
    started = time.monotonic()
    config = config or EvaluationConfig()
    problem, hw = checked_request(problem_source, target, precision_policy, timeout_s)
    run = CandidateRun(problem, candidate_source, hw, precision_policy, timeout_s, config)

    result = run.static_stage()
    if result is None:
        t0 = time.monotonic()
        reference = _reference(problem, config, hw, reference_cache, precision_policy)
        reference_s = time.monotonic() - t0
        if reference.defects:
            result = run.result("problem_defect",
                                "problem defect: the reference output is degenerate, so it cannot "
                                "tell a right kernel from a wrong one: " + "; ".join(reference.defects))
        else:
            try:
                result = run.sandbox_stage(reference, keep_workdir, sandbox_pool)
            except ProblemError as exc:  # the problem's resident sandbox failed mid-way
                result = run.result("runtime_error", f"the evaluation could not finish: {exc}")
            except Exception as exc:  # noqa: BLE001 - a reply the parent could not read
                result = _unreadable_reply(run, exc)
        if reference_cache is None and reference.link is not None:
            reference.link.close()
        result.diagnostics.setdefault("phases", {})["reference_s"] = round(reference_s, 3)
    result.duration_s = round(time.monotonic() - started, 3)
    if "measurement_s" in result.diagnostics.get("phases", {}):
        result.diagnostics["phases"]["overhead_s"] = round(
            result.duration_s - result.diagnostics["phases"]["measurement_s"], 3)
    return result


def checked_request(problem_source: Problem | str | Path, target: str | HardwareTarget,
                    precision_policy: str, timeout_s: float) -> tuple[Problem, HardwareTarget]:
    """The problem and target of a request, or the error that refuses it (`ProblemError`,
    `ValueError`, `DeviceUnavailable`) before anything runs."""
    problem = load_problem(problem_source)
    hw = target if isinstance(target, HardwareTarget) else get_target(target)
    check_policy(precision_policy)
    if timeout_s <= 0:
        raise ValueError("timeout must be positive")
    _require_device(hw)
    return problem, hw


def _unreadable_reply(run: CandidateRun, exc: Exception) -> EvaluationResult:
    """A reply of the wrong shape or types broke the parent's reading of it: the honest
    harness never sends one, so it is a protocol violation, reported, never a crash."""
    evidence = f"the parent could not use the sandbox's replies: {type(exc).__name__}: {exc}"
    run.flags.append(IntegrityFlag("protocol.violation", evidence[:500]))
    return run.result("hack_suspected", "protocol.violation: " + evidence[:300])


def candidate_pool(target: str | HardwareTarget, config: EvaluationConfig | None = None,
                   size: int = 2) -> SandboxPool:
    """Warm single-use sandboxes for candidates of `target` (the caller closes it)."""
    config = config or EvaluationConfig()
    hw = target if isinstance(target, HardwareTarget) else get_target(target)
    return SandboxPool("search_engine.evaluation.child", child_args(hw, config), size=size,
                       limits=config.limits, env_extra=candidate_env(hw),
                       gpu=not hw.is_interpreter, log_chars=config.log_chars,
                       starters=config.warm_starters or None)


def _require_device(hw: HardwareTarget) -> None:
    if hw.is_interpreter:
        return
    import torch

    if not torch.cuda.is_available():
        raise DeviceUnavailable(f"target {hw.name!r} needs a CUDA GPU and this host has none; "
                         "use --target interpreter (or auto)")


def _reference(problem: Problem, config: EvaluationConfig, hw: HardwareTarget,
               cache: ReferenceCache | None, policy: str = "strict") -> ReferenceData:
    device = "cpu" if hw.is_interpreter else "cuda"
    schedule = config.trial_schedule()
    try:
        l2 = hw.l2_bytes or 64 << 20
        if cache is not None:
            return cache.get(problem, schedule, config.seed, device, config, l2_bytes=l2,
                             policy=policy)
        return compute_reference(problem, schedule, config.seed, device, config, l2_bytes=l2,
                                 policy=policy)
    except ProblemError:
        raise
    except Exception as exc:
        raise ProblemError(f"the problem's reference Model failed to run: "
                           f"{type(exc).__name__}: {exc}") from exc


_Run = CandidateRun  # the name the tests use
