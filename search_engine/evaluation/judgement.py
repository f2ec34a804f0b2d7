"""The verdict on one run: integrity flags, speedups, coverage, diagnostics and reward.

`Judgement._judge` turns the evidence the conversation gathered into an `EvaluationResult`;
a correct candidate on a GPU is replayed under ncu (in the same kind of sandbox) when ncu
is there. A mixin of `CandidateRun`.
"""

from __future__ import annotations

import time
from pathlib import Path

from search_engine.batch_shapes import input_shapes
from search_engine.evaluation import diagnostics as diag
from search_engine.evaluation import second_shape
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.integrity import runtime_checks as rc
from search_engine.evaluation.reference import ReferenceData
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats
from search_engine.evaluation.reward import compute_reward, reward_speedup
from search_engine.evaluation.tolerances import policy_loosens


class Judgement:
    """The verdict of `CandidateRun` (its `flags`, `config`, `hw`, `problem`, `policy`,
    `tolerance`, `precision_class`, `lock_wait_s`, `result` and `_env`)."""

    # -- stage 3: judgement
    def _judge(self, report: dict, ref: ReferenceData, workdir: Path) -> EvaluationResult:
        c = self.config
        trials, outputs = report["correctness"], report["outputs"]
        flags = list(self.flags)
        flags += rc.check_own_kernels_ran(report)
        flags += rc.check_profiler_kernel_names(report)
        flags += rc.check_timer_tampering(report)
        flags += rc.check_input_mutation(report)
        flags += rc.check_output_aliasing(report)
        flags += rc.check_timed_outputs(report, self.tolerance.rel_norm)
        flags += rc.check_streams(report)
        flags += rc.check_wallclock(report, c.wallclock_mismatch_factor)
        flags += rc.check_torch_in_kernel(report)
        flags += rc.check_torch_compute(report)
        flags += rc.check_host_compute(report)
        flags += rc.check_dispatch_escapes(report)
        flags += rc.check_ghost_replay(report.get("ghost"))
        flags += rc.check_torch_answer_moved(report)
        flags += rc.check_harness_patch(report)
        flags += rc.check_threads(report)
        flags += rc.check_host_scalar_reads(report)
        flags += rc.check_host_callables(report)
        flags += rc.check_torch_result_flood(report)
        flags += second_shape.flags(report.get("shape_check"))
        references = report.get("sampled_references", ref.outputs64)
        if not all(t.passed for t in trials):
            flags += rc.check_result_reuse(outputs, references, self.tolerance.rel_norm)
            flags += rc.check_constant_output(outputs, references)
        if report.get("timing_error"):
            flags.append(IntegrityFlag("runtime.timing_failed",
                                       f"the candidate failed while being timed: "
                                       f"{report['timing_error'][:300]}"))

        timing = _timing(report)
        cand_ms = timing.get("candidate", TimingStats()).median_ms
        interpreter = self.hw.is_interpreter
        speed_eager = speed_compile = None
        if not interpreter and cand_ms:
            if timing.get("eager") and timing["eager"].median_ms:
                speed_eager = timing["eager"].median_ms / cand_ms
            if timing.get("compile") and timing["compile"].median_ms:
                speed_compile = timing["compile"].median_ms / cand_ms

        kernels = diag.kernel_rows(report.get("kernel_metadata", []))
        out_bytes = ref.output_bytes if ref.resident else \
            sum(o.numel() * o.element_size() for o in outputs[0]) if outputs else 0
        weight_bytes = sum(v.numel() * v.element_size() for v in ref.state_dict.values())
        coverage, coverage_method = _coverage(report, interpreter,
                                              ref.input_bytes + out_bytes + weight_bytes)
        roof = diag.roofline(self.hw, ref.input_bytes + out_bytes + weight_bytes, ref.flops,
                             self.precision_class, None if interpreter else cand_ms)
        if all(t.passed for t in trials):  # a wrong answer already explains a short time
            flags += rc.check_roofline(None if interpreter else cand_ms, roof.get("floor_ms"),
                                       c.roofline_slack)
        diagnostics = {
            "family": self.problem.family, "precision_class": self.precision_class,
            "tolerance": _asdict(self.tolerance), "roofline": roof, "kernels": kernels,
            "own_kernels": report.get("own_kernels", []), "coverage_method": coverage_method,
            "phases": {**report.get("phases", {}), "gpu_lock_wait_s": round(self.lock_wait_s, 3)},
        }
        if report.get("measured_s") is not None:
            diagnostics["phases"]["measurement_s"] = round(report["measured_s"], 3)
        if report.get("resident_steps"):
            diagnostics["resident_steps_s"] = report["resident_steps"]
            diagnostics["resident_trials_open_max"] = report.get("open_max")
            diagnostics["device_memory_peak_gb"] = {
                who: {str(k).replace("_bytes", "_gb"): round(v / 1e9, 2)
                      for k, v in list(memory.items())[:4] if isinstance(v, (int, float))}
                for who, memory in (("candidate", report.get("device_memory")),
                                    ("reference", report.get("reference_device_memory")))
                if isinstance(memory, dict)}
        if ref.notes:
            diagnostics["trial_plan_notes"] = ref.notes
        diagnostics["reference_method"] = ref.reference_method
        if report.get("ghost"):
            diagnostics["ghost_replay"] = report["ghost"]
        if not interpreter and "candidate" in timing:
            diagnostics["timing_quality"] = _timing_quality(report, c)
            diagnostics["gpu_clocks"] = diag.gpu_clocks()
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
            diagnostics["ncu"] = self._ncu(workdir, ref, report.get("own_kernels", []))
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
        shapes = {} if failed else second_shape.result_fields(
            report.get("shape_check"), input_shapes(ref.inputs[0]) if ref.inputs else None)
        if shapes.get("shape_specific"):
            message += (f"; only at the problem's shape: at {shapes['shape_check']['input_shapes']}"
                        f" it {shapes['shape_check']['status']} "
                        f"({shapes['shape_check']['message'][:200]})")
        return self.result(
            status, message, correctness=trials, timing=timing,
            speedup_vs_eager=_round(speed_eager), speedup_vs_compile=_round(speed_compile),
            speedup_label=label, coverage=_round(coverage), diagnostics=diagnostics,
            integrity_flags=flags, reward=compute_reward(status, speedup, coverage, c.reward),
            **shapes,
        )

    def _want_ncu(self) -> bool:
        return self.config.ncu == "auto" and diag.ncu_available()

    def _ncu(self, workdir: Path, ref: ReferenceData, kernel_names: list[str]) -> dict:
        """Replay two calls under ncu in a fresh sandbox workdir (see `ncu_replay`)."""
        from search_engine.evaluation.ncu_replay import run_ncu_replay

        return run_ncu_replay(self.config, self.problem.source, self.candidate, ref,
                              kernel_names, self._env())



INTERPRETER_COVERAGE = ("interpreter: bytes the kernels really load and store vs bytes "
                        "touched by torch ops (no device time on the CPU)")


def _coverage(report: dict, interpreter: bool,
              required_bytes: int = 0) -> tuple[float | None, str]:
    if interpreter:
        # unique bytes per call (see `hooks.InterpreterWork`), at most a few times what the
        # problem must move: touching a large scratch buffer once does not buy coverage
        cap = 4 * required_bytes if required_bytes else None
        kernel = sum(min(t["kernel_bytes"], cap) if cap else t["kernel_bytes"]
                     for t in report.get("trials", []))
        other = sum(t.get("torch_bytes", 0) for t in report.get("trials", []))
        if kernel + other == 0:
            return None, INTERPRETER_COVERAGE
        return kernel / (kernel + other), INTERPRETER_COVERAGE
    profile = report.get("profile_us") or {}
    total = sum(profile.values())
    if not total:
        return None, "device time (profiler unavailable)"
    own = sum(us for name, us in profile.items() if rc.is_own_kernel(name, report))
    return own / total, "device time (torch.profiler, CUDA activity)"


def _timing(report: dict) -> dict[str, TimingStats]:
    return {k: TimingStats(**v) for k, v in (report.get("timing") or {}).items()}


def _timing_quality(report: dict, config: EvaluationConfig) -> dict:
    noise = report.get("timing_noise")
    samples = report["timing"]["candidate"].get("samples", 0)
    labels = []
    if noise is None or noise > config.noisy_iqr_ratio:
        labels.append(f"noisy: IQR {'?' if noise is None else f'{noise:.0%}'} of the median "
                      f"after {report.get('timing_attempts', 1)} measurement(s)")
    if samples < config.min_reps:
        labels.append(f"few samples ({samples} < {config.min_reps})")
    if report.get("timing_quiet") is False:
        labels.append(f"other work of ours was still on the GPU after {config.quiet_wait_s:g} s")
    return {"samples": samples, "iqr_over_median": noise,
            "attempts": report.get("timing_attempts", 1),
            "quiet": report.get("timing_quiet"), "label": "; ".join(labels) or "steady"}



def _asdict(obj) -> dict:
    from dataclasses import asdict

    return asdict(obj)


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
