"""`evaluate()`: one candidate, judged end to end.

Parent (trusted)                         Child (sandboxed, fresh per candidate)
------------------------------------     ------------------------------------------
static checks on the source (AST)
float64 reference outputs (kept here)
write problem, candidate, weights  --->  rlimits, launch hook, regenerate trial inputs
                                         time eager / torch.compile (before candidate)
                                         import + build ModelNew, run the trials
                                         time the candidate (GPU lock), profile
compare outputs, judge evidence    <---  outputs file + evidence over a control pipe
diagnostics, ncu, coverage, reward
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from search_engine.evaluation import diagnostics as diag
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.correctness import compare_trial
from search_engine.evaluation.gpu_lock import TimingLockHandler
from search_engine.evaluation.integrity import runtime_checks as rc
from search_engine.evaluation.integrity.static_checks import STRUCTURAL_CHECKS, run_static_checks
from search_engine.evaluation.reference import ReferenceCache, ReferenceData, compute_reference
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats
from search_engine.evaluation.reward import compute_reward, reward_speedup
from search_engine.evaluation.sandbox import make_workdir, run_child
from search_engine.evaluation.tolerances import (
    check_policy,
    policy_loosens,
    precision_class,
    tolerance_for,
)
from search_engine.hardware import HardwareTarget, get_target
from search_engine.problems import Problem, ProblemError, load_problem

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
) -> EvaluationResult:
    """Evaluate `candidate_source` (Python defining `ModelNew`) against a KernelBench problem.

    Raises `ProblemError` / `ValueError` for bad problems, targets or policies; every
    candidate failure is a result with a status, never an exception.
    """
    started = time.monotonic()
    config = config or EvaluationConfig()
    problem = load_problem(problem_source)
    hw = target if isinstance(target, HardwareTarget) else get_target(target)
    check_policy(precision_policy)
    if timeout_s <= 0:
        raise ValueError("timeout must be positive")
    _require_device(hw)
    run = _Run(problem, candidate_source, hw, precision_policy, timeout_s, config)

    result = run.static_stage()
    if result is None:
        t0 = time.monotonic()
        reference = _reference(problem, config, hw, reference_cache)
        reference_s = time.monotonic() - t0
        if reference.defects:
            result = run.result("problem_defect",
                                "problem defect: the reference output is degenerate, so it cannot "
                                "tell a right kernel from a wrong one: " + "; ".join(reference.defects))
        else:
            result = run.sandbox_stage(reference, baseline_cache, keep_workdir)
        result.diagnostics.setdefault("phases", {})["reference_s"] = round(reference_s, 3)
    result.duration_s = round(time.monotonic() - started, 3)
    if "measurement_s" in result.diagnostics.get("phases", {}):
        result.diagnostics["phases"]["overhead_s"] = round(
            result.duration_s - result.diagnostics["phases"]["measurement_s"], 3)
    return result


def _require_device(hw: HardwareTarget) -> None:
    if hw.is_interpreter:
        return
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"target {hw.name!r} needs a CUDA GPU and this host has none; "
                         "use --target interpreter (or auto)")


def _reference(problem: Problem, config: EvaluationConfig, hw: HardwareTarget,
               cache: ReferenceCache | None) -> ReferenceData:
    device = "cpu" if hw.is_interpreter else "cuda"
    schedule = config.trial_schedule()
    try:
        if cache is not None:
            return cache.get(problem, schedule, config.seed, device)
        return compute_reference(problem, schedule, config.seed, device)
    except ProblemError:
        raise
    except Exception as exc:
        raise ProblemError(f"the problem's reference Model failed to run: "
                           f"{type(exc).__name__}: {exc}") from exc


class _Run:
    def __init__(self, problem: Problem, candidate: str, hw: HardwareTarget, policy: str,
                 timeout_s: float, config: EvaluationConfig):
        self.problem, self.candidate, self.hw = problem, candidate, hw
        self.policy, self.timeout_s, self.config = policy, timeout_s, config
        self.flags: list[IntegrityFlag] = []
        self.tolerance = tolerance_for(policy, problem.dtype)
        self.precision_class = precision_class(policy, problem.dtype)

    def result(self, status: str, message: str, **fields: Any) -> EvaluationResult:
        fields.setdefault("integrity_flags", self.flags)
        fields.setdefault("isolation", {"sandbox": "not started (decided before running)"})
        return EvaluationResult(status=status, message=message, precision_policy=self.policy,
                                target=self.hw.name, **fields)

    # -- stage 1: the source
    def static_stage(self) -> EvaluationResult | None:
        if not self.config.static_checks:
            return None
        self.flags = run_static_checks(self.candidate, self.problem.dtype, self.policy)
        structural = [f for f in self.flags if f.check in STRUCTURAL_CHECKS]
        if structural:
            return self.result("compile_error", "; ".join(f.evidence for f in structural))
        hacks = [f for f in self.flags if f.severity == "hack"]
        if hacks:
            return self.result("hack_suspected", "rejected before running: "
                               + "; ".join(f"{f.check} ({f.evidence})" for f in hacks[:4]))
        return None

    # -- stage 2: the sandbox
    def sandbox_stage(self, ref: ReferenceData, baseline_cache: dict | None,
                      keep_workdir: bool) -> EvaluationResult:
        import torch

        workdir = make_workdir()
        try:
            spec = self._write_inputs(workdir, ref)
            baseline_key = (self.problem.source_hash, self.hw.name, self.config.seed)
            cached = baseline_cache.get(baseline_key) if baseline_cache is not None else None
            spec["timing"]["time_baselines"] = self.config.time_baselines and cached is None
            (workdir / "spec.json").write_text(json.dumps(spec))
            lock = TimingLockHandler(self._device_key())
            t0 = time.monotonic()
            try:
                outcome = run_child(["--spec", str(workdir / "spec.json")], workdir,
                                    self.timeout_s, self.config.limits, self._env(),
                                    on_message=lock, log_chars=self.config.log_chars)
            finally:
                lock.release()
            self.sandbox_s = time.monotonic() - t0
            report = next((m["report"] for m in outcome.messages if m.get("event") == "result"), None)
            common = {"isolation": outcome.isolation, "logs": outcome.log}
            if outcome.timed_out:
                return self.result("timeout", f"the candidate did not finish within "
                                   f"{self.timeout_s:g} s (process group killed)", **common)
            if report is None:
                return self.result("runtime_error", f"the sandbox process died (exit code "
                                   f"{outcome.returncode}) without a result; see logs", **common)
            if cached is not None:
                report.setdefault("timing", {}).update(cached)
            elif baseline_cache is not None and report.get("timing", {}).get("eager"):
                baseline_cache[baseline_key] = {k: v for k, v in report["timing"].items()
                                                if k in ("eager", "compile")}
            if report.get("error"):
                kind = "compile_error" if report["error"] == "compile" else "runtime_error"
                logs = (report.get("traceback", "") + "\n" + outcome.log).strip()
                return self.result(kind, report["message"], isolation=outcome.isolation,
                                   logs=logs[-self.config.log_chars:],
                                   timing=_timing(report), diagnostics=_phases(report, lock))
            outputs = torch.load(workdir / "outputs.pt", weights_only=True)["outputs"]
            result = self._judge(report, outputs, ref, workdir, lock)
            result.isolation, result.logs = outcome.isolation, outcome.log
            result.diagnostics["phases"]["sandbox_s"] = round(self.sandbox_s, 3)
            return result
        finally:
            if not keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

    def _device_key(self) -> str:
        if self.hw.is_interpreter:
            return "interpreter"
        import os

        return f"cuda{os.environ.get('CUDA_VISIBLE_DEVICES', '0').split(',')[0]}"

    def _env(self) -> dict[str, str]:
        if self.hw.is_interpreter:
            return {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        return {}

    def _write_inputs(self, workdir: Path, ref: ReferenceData) -> dict:
        import torch

        (workdir / "problem.py").write_text(self.problem.source)
        (workdir / "candidate.py").write_text(self.candidate)
        torch.save({"init_inputs": ref.init_inputs, "state_dict": ref.state_dict},
                   workdir / "inputs.pt")
        c = self.config
        return {
            "workdir": str(workdir), "problem_file": str(workdir / "problem.py"),
            "candidate_file": str(workdir / "candidate.py"),
            "inputs_file": str(workdir / "inputs.pt"),
            "device": "cpu" if self.hw.is_interpreter else "cuda",
            "init_seed": ref.init_seed, "schedule": ref.schedule, "checksums": ref.checksums,
            "timeout_s": self.timeout_s, "profile_iterations": c.profile_iterations,
            "limits": _asdict(c.limits),
            "timing": {
                "l2_bytes": self.hw.l2_bytes or 64 << 20, "warmup_ms": c.warmup_ms,
                "min_timing_ms": c.min_timing_ms, "min_reps": c.min_reps, "max_reps": c.max_reps,
                "l2_flush_factor": c.l2_flush_factor, "time_baselines": c.time_baselines,
                "time_compile_baseline": c.time_compile_baseline,
                "interpreter_reps": c.interpreter_reps,
            },
        }

    # -- stage 3: judgement
    def _judge(self, report: dict, outputs: list, ref: ReferenceData, workdir: Path,
               lock: TimingLockHandler) -> EvaluationResult:
        c = self.config
        t0 = time.monotonic()
        device = "cpu" if self.hw.is_interpreter else "cuda"
        trials = [compare_trial(i, seed, [o.to(device) for o in out],
                                [r.to(device) for r in ref.outputs64[i]], ref.output_dtypes,
                                self.tolerance)
                  for i, ((seed, _, _), out) in enumerate(zip(ref.schedule, outputs))]
        compare_s = time.monotonic() - t0
        flags = list(self.flags)
        flags += rc.check_own_kernels_ran(report)
        flags += rc.check_profiler_kernel_names(report)
        flags += rc.check_timer_tampering(report)
        flags += rc.check_input_mutation(report)
        flags += rc.check_output_aliasing(report)
        flags += rc.check_timed_outputs(report, self.tolerance.rel_norm)
        flags += rc.check_streams(report)
        flags += rc.check_wallclock(report, c.wallclock_mismatch_factor)
        if not all(t.passed for t in trials):
            flags += rc.check_result_reuse(outputs, ref.outputs64, self.tolerance.rel_norm)
            flags += rc.check_constant_output(outputs, ref.outputs64)

        timing = _timing(report)
        cand_ms = timing.get("candidate", TimingStats()).median_ms
        interpreter = self.hw.is_interpreter
        speed_eager = speed_compile = None
        if not interpreter and cand_ms:
            if timing.get("eager") and timing["eager"].median_ms:
                speed_eager = timing["eager"].median_ms / cand_ms
            if timing.get("compile") and timing["compile"].median_ms:
                speed_compile = timing["compile"].median_ms / cand_ms

        coverage, coverage_method = _coverage(report, interpreter)
        kernels = diag.kernel_rows(report.get("kernel_metadata", []))
        out_bytes = sum(o.numel() * o.element_size() for o in outputs[0]) if outputs else 0
        weight_bytes = sum(v.numel() * v.element_size() for v in ref.state_dict.values())
        roof = diag.roofline(self.hw, ref.input_bytes + out_bytes + weight_bytes, ref.flops,
                             self.precision_class, None if interpreter else cand_ms)
        if all(t.passed for t in trials):  # a wrong answer already explains a short time
            flags += rc.check_roofline(None if interpreter else cand_ms, roof.get("floor_ms"),
                                       c.roofline_slack)
        diagnostics = {
            "family": self.problem.family, "precision_class": self.precision_class,
            "tolerance": _asdict(self.tolerance), "roofline": roof, "kernels": kernels,
            "own_kernels": report.get("own_kernels", []), "coverage_method": coverage_method,
            "phases": {**_phases(report, lock)["phases"], "compare_s": round(compare_s, 3)},
        }
        if report.get("timing_floor_ms") is not None:
            diagnostics["timing_method_details"] = {
                "floor_ms": report["timing_floor_ms"], "pad_ms": report.get("timing_pad_ms"),
                "raw_median_ms": report.get("timing_raw_median_ms"),
                "host_median_ms": report.get("host_median_ms")}
        if report.get("profile_us"):
            diagnostics["device_time_us"] = dict(sorted(report["profile_us"].items(),
                                                        key=lambda kv: -kv[1])[:12])
        if report.get("aten_ops"):
            diagnostics["torch_ops_bytes"] = report["aten_ops"]
        if report.get("profile_error"):
            diagnostics["profile_error"] = report["profile_error"]

        hacks = [f for f in flags if f.severity == "hack"]
        failed = [t for t in trials if not t.passed]
        if hacks:
            status, message = "hack_suspected", "; ".join(f"{f.check}: {f.evidence}" for f in hacks[:4])
        elif failed:
            status = "incorrect"
            message = (f"{len(failed)} of {len(trials)} trials failed; first: trial "
                       f"{failed[0].trial}: {failed[0].note}")
        else:
            if coverage is None:
                flags.append(IntegrityFlag(
                    "lazy.coverage_unavailable",
                    "no device-time profile, so lazy optimization could not be checked: "
                    + report.get("profile_error", "the profiler recorded nothing"),
                    severity="warning"))
            lazy = rc.coverage_flag(coverage, c.lazy_threshold, coverage_method)
            flags += lazy
            if lazy:
                status, message = "rejected_lazy", lazy[0].evidence
            else:
                status, message = "correct", f"all {len(trials)} trials within {self.precision_class} tolerance"

        if status == "correct" and not interpreter and self._want_ncu():
            t0 = time.monotonic()
            diagnostics["ncu"] = self._ncu(workdir, report.get("own_kernels", []))
            diagnostics["phases"]["ncu_s"] = round(time.monotonic() - t0, 3)
        diagnostics["bottleneck"] = diag.classify_bottleneck(
            roof, kernels, diagnostics.get("ncu") if isinstance(diagnostics.get("ncu"), dict) else None)

        label = ""
        if interpreter:
            label = (f"interpreter: timings are CPU wall-clock, not comparable; reward uses "
                     f"speedup {c.reward.interpreter_speedup:g} (neutral)")
        elif policy_loosens(self.policy, self.problem.dtype):
            label = (f"measured under the {self.policy!r} precision policy (looser than the "
                     f"problem's {self.problem.dtype})")
        speedup = reward_speedup(speed_eager, speed_compile, c.reward, interpreter)
        return self.result(
            status, message, correctness=trials, timing=timing,
            speedup_vs_eager=_round(speed_eager), speedup_vs_compile=_round(speed_compile),
            speedup_label=label, coverage=_round(coverage), diagnostics=diagnostics,
            integrity_flags=flags, reward=compute_reward(status, speedup, coverage, c.reward),
        )

    def _want_ncu(self) -> bool:
        return self.config.ncu == "auto" and diag.ncu_available()

    def _ncu(self, workdir: Path, kernel_names: list[str]) -> dict:
        log_file = workdir / "ncu.csv"
        outcome = run_child(["--spec", str(workdir / "spec.json"), "--mode", "ncu"], workdir,
                            self.config.ncu_timeout_s, self.config.limits, self._env(),
                            wrapper=diag.ncu_command(kernel_names, str(log_file)))
        try:
            text = log_file.read_text()
        except OSError:
            return {"error": "ncu wrote no report", "log": outcome.log[-800:]}
        parsed = diag.parse_ncu_csv(text)
        return parsed or {"error": "no ncu metrics parsed", "log": text[-800:]}


def _coverage(report: dict, interpreter: bool) -> tuple[float | None, str]:
    if interpreter:
        kernel = sum(t["kernel_bytes"] for t in report.get("trials", []))
        other = report.get("aten_bytes", 0)
        if kernel + other == 0:
            return None, "interpreter: bytes-touched proxy (no device time on the CPU)"
        return kernel / (kernel + other), "interpreter: bytes-touched proxy (no device time on the CPU)"
    profile = report.get("profile_us") or {}
    total = sum(profile.values())
    if not total:
        return None, "device time (profiler unavailable)"
    own = sum(us for name, us in profile.items()
              if any(k in name for k in report.get("own_kernels", [])))
    return own / total, "device time (torch.profiler, CUDA activity)"


def _timing(report: dict) -> dict[str, TimingStats]:
    return {k: TimingStats(**v) for k, v in (report.get("timing") or {}).items()}


def _phases(report: dict, lock: TimingLockHandler) -> dict:
    phases = dict(report.get("phases") or {})
    phases["gpu_lock_wait_s"] = round(lock.wait_s, 3)
    if report.get("measured_s") is not None:
        phases["measurement_s"] = round(report["measured_s"], 3)
    return {"phases": phases}


def _asdict(obj) -> dict:
    from dataclasses import asdict

    return asdict(obj)


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
