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
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

from search_engine.evaluation import diagnostics as diag
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation import wire
from search_engine.evaluation.correctness import compare_trial, rel_norm_distance
from search_engine.evaluation.gpu_lock import cuda_device_key, gpu_activity, quiet_gpu
from search_engine.evaluation.integrity import runtime_checks as rc
from search_engine.evaluation.integrity.static_checks import STRUCTURAL_CHECKS, run_static_checks
from search_engine.evaluation.reference import ReferenceCache, ReferenceData, compute_reference
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats
from search_engine.evaluation.reward import compute_reward, reward_speedup
from search_engine.evaluation.sandbox import (
    ProtocolViolation,
    SandboxDied,
    SandboxPool,
    SandboxSession,
    SandboxTimeout,
    make_workdir,
    run_sandboxed_command,
)
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
            try:
                result = run.sandbox_stage(reference, keep_workdir, sandbox_pool)
            except ProblemError as exc:  # the problem's resident sandbox failed mid-way
                result = run.result("runtime_error", f"the evaluation could not finish: {exc}")
        if reference_cache is None and reference.link is not None:
            reference.link.close()
        result.diagnostics.setdefault("phases", {})["reference_s"] = round(reference_s, 3)
    result.duration_s = round(time.monotonic() - started, 3)
    if "measurement_s" in result.diagnostics.get("phases", {}):
        result.diagnostics["phases"]["overhead_s"] = round(
            result.duration_s - result.diagnostics["phases"]["measurement_s"], 3)
    return result


def candidate_pool(target: str | HardwareTarget, config: EvaluationConfig | None = None,
                   size: int = 2) -> SandboxPool:
    """Warm single-use sandboxes for candidates of `target` (the caller closes it)."""
    config = config or EvaluationConfig()
    hw = target if isinstance(target, HardwareTarget) else get_target(target)
    return SandboxPool("search_engine.evaluation.child", _child_args(hw, config), size=size,
                       limits=config.limits, env_extra=_candidate_env(hw),
                       gpu=not hw.is_interpreter, log_chars=config.log_chars,
                       starters=config.warm_starters or None)


def _child_args(hw: HardwareTarget, config: EvaluationConfig) -> list[str]:
    device = "cpu" if hw.is_interpreter else "cuda"
    return ["--device", device] + (["--resident"] if config.resident_on(device) else [])


def _candidate_env(hw: HardwareTarget) -> dict[str, str]:
    if hw.is_interpreter:
        return {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    return {}


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
        l2 = hw.l2_bytes or 64 << 20
        if cache is not None:
            return cache.get(problem, schedule, config.seed, device, config, l2_bytes=l2)
        return compute_reference(problem, schedule, config.seed, device, config, l2_bytes=l2)
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

    # -- stage 2: the candidate's sandbox
    def sandbox_stage(self, ref: ReferenceData, keep_workdir: bool,
                      pool=None) -> EvaluationResult:
        self._ref = ref
        self.lock_wait_s = 0.0
        t0 = time.monotonic()
        try:
            session = self._session(pool)
            self.pool_wait_s = time.monotonic() - t0
        except (SandboxDied, SandboxTimeout, ProtocolViolation) as exc:
            return self.result("runtime_error", f"the candidate's sandbox did not start: {exc}")
        workdir = session.workdir
        (workdir / "candidate.py").write_text(self.candidate)
        answered = False
        try:
            try:
                report = self._drive(session, ref)
                failure, answered = None, True
            except SandboxTimeout:
                report, failure = None, ("timeout", f"the candidate did not finish within "
                                         f"{self.timeout_s:g} s (its sandbox was killed)")
            except SandboxDied as exc:
                report, failure = None, ("runtime_error", f"the sandbox process died without "
                                         f"answering ({exc}); see logs")
            except ProtocolViolation as exc:
                self.flags.append(IntegrityFlag("protocol.violation", str(exc)))
                report, failure = None, ("hack_suspected", f"protocol.violation: {exc}")
            finally:  # a sandbox that answered everything is reaped in the background
                outcome = session.close_later() if answered else session.close()
            self.sandbox_s = time.monotonic() - t0
            common = {"isolation": outcome.isolation, "logs": outcome.log}
            if failure is not None:
                status, message = failure
                if outcome.memory_exceeded and status != "hack_suspected":
                    status, message = "runtime_error", self._memory_message()
                return self.result(status, message, **common)
            if isinstance(report, EvaluationResult):
                report.isolation, report.logs = outcome.isolation, (report.logs + "\n" + outcome.log).strip()[-self.config.log_chars:]
                return report
            result = self._judge(report, ref, workdir)
            result.isolation, result.logs = outcome.isolation, outcome.log
            result.diagnostics["phases"]["sandbox_s"] = round(self.sandbox_s, 3)
            result.diagnostics["phases"]["pool_wait_s"] = round(self.pool_wait_s, 3)
            return result
        finally:
            if not keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

    def _session(self, pool) -> SandboxSession:
        """A warm sandbox from `pool` (single use) or a fresh one started by `_drive`."""
        if pool is not None:
            return pool.take(self.timeout_s)
        return SandboxSession("search_engine.evaluation.child", _child_args(self.hw, self.config),
                              make_workdir(), timeout_s=self.timeout_s,
                              limits=self.config.limits, env_extra=self._env(),
                              gpu=not self.hw.is_interpreter, log_chars=self.config.log_chars)

    def _env(self) -> dict[str, str]:
        return _candidate_env(self.hw)

    def _memory_message(self) -> str:
        limit = getattr(self.config.limits, "memory_bytes", None)
        size = f" of {limit / (1 << 30):.3g} GiB" if limit else ""
        return f"the candidate exceeded the sandbox memory limit{size} and was killed"

    @property
    def device(self) -> str:
        return "cpu" if self.hw.is_interpreter else "cuda"

    def _drive(self, session: SandboxSession, ref: ReferenceData):
        """Ask the candidate's sandbox for everything the judgement needs; compare as we go.
        Returns the evidence (a dict) or an early result (build or run failure)."""
        phases: dict[str, float] = {}
        clock = [time.monotonic()]

        def phase(name: str) -> None:
            now = time.monotonic()
            phases[name] = round(now - clock[0], 4)
            clock[0] = now

        if not session.started:
            session.start()
        phase("startup")
        out_cap = 2 * ref.output_bytes + (1 << 20)  # a wrong dtype may double them, no more
        init_slots, init_tensors = wire.encode_values(ref.init_inputs)
        reply, _ = self._request(session, "load", {
            "candidate_file": str(session.workdir / "candidate.py"), "init": init_slots,
            "state_keys": list(ref.state_dict), "state_offset": len(init_tensors),
            "seed": ref.init_seed, "max_outputs": len(ref.output_shapes),
            "output_shapes": ref.output_shapes,
            "max_output_bytes": out_cap,
        }, init_tensors + list(ref.state_dict.values()))
        if not reply.get("ok"):
            return self._failed(reply, phases)
        phase("load_candidate")
        if ref.resident:
            from search_engine.evaluation.resident import ResidentDrive

            report = ResidentDrive(self, session, ref).drive(phases, phase)
            if isinstance(report, EvaluationResult):
                return report
            return self._finish(session, report)
        sets = [*ref.inputs, ref.ghost_inputs]
        for index, inputs in enumerate(sets):
            slots, tensors = wire.encode_values(inputs)
            self._request(session, "stage", {"set": index, "inputs": slots}, tensors)

        warm = self._warm(session, 0)
        if warm is not None:
            return self._failed(warm, phases, 0)
        trials, outputs, evidence = [], [], []
        for index in range(len(ref.inputs)):
            reply, out = self._request(session, "call", {"set": index}, max_reply_bytes=out_cap)
            if not reply.get("ok"):
                return self._failed(reply, phases, index)
            evidence.append({"trial": index, **reply["evidence"]})
            outputs.append(out)
            trials.append(self._compare(index, ref.schedule[index][0], out, ref.outputs64[index]))
        phase("correctness")
        report = {"trials": evidence, "phases": phases, "correctness": trials,
                  "outputs": outputs, "timing": dict(ref.baselines)}
        if all(t.passed for t in trials):
            self._timed_checks(session, ref, report)
            phase("timing")
            if self.config.ghost_replay:
                report["ghost"] = self._ghost(session, ref)
                phase("ghost")
            self._profile(session, report, list(range(len(ref.inputs))))
            phase("profile")
        return self._finish(session, report)

    def _warm(self, session: SandboxSession, input_set: int) -> dict | None:
        """Compile the candidate's Triton kernels before its first call, outside the GPU
        activity lock (no kernel of Triton's runs; see the child's `on_warm`), so that other
        candidates' timings do not wait on our compiler. Returns a compile failure's reply;
        any other failure is left for the real call to report."""
        mode = self.config.compile_pass
        if mode == "off" or (mode == "auto" and self.hw.is_interpreter):
            return None
        reply, _ = session.request("warm", {"set": input_set})
        return reply if not reply.get("ok") and reply.get("error") == "compile" else None

    def _profile(self, session: SandboxSession, report: dict, sets: list[int]) -> None:
        """Device time per kernel (for coverage), with the GPU to ourselves."""
        if self.hw.is_interpreter:
            return
        with quiet_gpu(cuda_device_key(), self.config.quiet_wait_s):
            reply, _ = session.request("profile", {
                "sets": sets, "iterations": self.config.profile_iterations})
        if reply.get("ok"):
            report["profile_us"] = reply["profile_us"]
        else:
            report["profile_error"] = reply.get("message", "profiler failed")

    def _finish(self, session: SandboxSession, report: dict) -> dict:
        reply, _ = session.request("evidence")
        if reply.get("ok"):
            report.update({k: v for k, v in reply.items()
                           if k not in ("ok", "kind", "re", "fds", "fd_count")})
        session.request("exit")
        return report

    def _compare(self, index: int, seed: int, out: list, reference: list):
        device = self.device
        return compare_trial(index, seed, [o.to(device) for o in out],
                             [r.to(device) for r in reference], self._ref.output_dtypes, self.tolerance)

    def _timed_checks(self, session: SandboxSession, ref: ReferenceData, report: dict) -> None:
        """Time the candidate (the parent holds the GPU), check the timed outputs and one
        more call after timing against the reference."""
        n_sets = len(ref.inputs)
        default = session.ready.get("default_stream")
        side_streams = any(s != default for t in report["trials"] for s in t["streams"])
        header = {"sets": list(range(n_sets)), "timing": self.config.timing_spec(
            self.hw.l2_bytes or 64 << 20), "pad": not side_streams}
        if self.hw.is_interpreter:
            reply, _ = session.request("time", header)
        else:
            t0 = time.monotonic()
            with quiet_gpu(cuda_device_key(), self.config.quiet_wait_s) as quiet:
                self.lock_wait_s += time.monotonic() - t0
                reply = self._time_until_steady(session, header, report)
            report["timing_quiet"] = quiet
        if not reply.get("ok"):
            report["timing_error"] = reply.get("message", "timing failed")
            return
        self._record_timing(report, reply)
        for entry in reply.get("last", []):
            if not 0 <= int(entry["set"]) < n_sets:
                raise ProtocolViolation(f"timed outputs for an input set {entry['set']} never "
                                        "staged")
        reply, _ = self._request(session, "call", {"set": 0, "keep": "after"})
        # The timed and the later outputs stay in the sandbox; the parent picks the indices
        # to read only now that they are fixed, so skipped work cannot hide at unread places.
        got, idx = self._sample(session, ref.outputs64[0])
        consistency = []
        for which in range(n_sets):
            kept = got.get(f"time:{which:04d}")
            if kept is not None:
                consistency.append({"trial": which, "rel_norm_diff": _sample_distance(
                    kept, ref.outputs64[which], idx)})
        after = _sample_distance(got["after"], ref.outputs64[0], idx) \
            if reply.get("ok") and "after" in got else float("inf")
        consistency.append({"trial": 0, "after_timing": True, "rel_norm_diff": after})
        report["timed_consistency"] = consistency

    @staticmethod
    def _record_timing(report: dict, reply: dict) -> None:
        report["timing"]["candidate"] = reply["stats"]
        for key in ("host_median_ms", "measured_s"):
            report[key] = reply.get(key)
        report["timing_floor_ms"] = reply.get("floor_ms")
        report["timing_raw_median_ms"] = reply.get("raw_median_ms")
        report["timing_pad_ms"] = reply.get("pad_ms")

    def _sample(self, session: SandboxSession, outputs: list) -> tuple[dict, dict]:
        """Ask for the kept outputs at random indices (per output size) chosen now."""
        idx = {o.numel(): _random_indices(o.numel(), self.config.sample_elements)
               for o in outputs}
        numels = sorted(idx)
        reply, out = self._request(session, "sample", {
            "index_for_numel": {str(n): i for i, n in enumerate(numels)}},
            [idx[n] for n in numels], max_reply_bytes=64 << 20)
        got, offset = {}, 0
        for entry in reply.get("layout", []) if reply.get("ok") else []:
            got[str(entry["name"])] = out[offset:offset + int(entry["count"])]
            offset += int(entry["count"])
        return got, idx

    def _request(self, session: SandboxSession, kind: str, header: dict | None = None,
                 tensors: list | None = None, max_reply_bytes: int = 1 << 20,
                 fds: list[int] | None = None, max_reply_fds: int = 0):
        """A request whose GPU work must not overlap another candidate's timing."""
        key = None if self.hw.is_interpreter else cuda_device_key()
        with gpu_activity(key):
            return session.request(kind, header, tensors, max_reply_bytes=max_reply_bytes,
                                   fds=fds, max_reply_fds=max_reply_fds)

    def _time_until_steady(self, session: SandboxSession, header: dict, report: dict) -> dict:
        """Time; when the samples are too few or their IQR over `noisy_iqr_ratio` of the
        median, time again (up to `retime_attempts`) and keep the steadiest measurement."""
        best = None
        for attempt in range(1 + max(0, self.config.retime_attempts)):
            reply, _ = session.request("time", header)
            if not reply.get("ok"):
                return reply
            noise = _noise(reply["stats"])
            if best is None or noise < best[0]:
                best = (noise, reply)
            if noise <= self.config.noisy_iqr_ratio and \
                    reply["stats"].get("samples", 0) >= self.config.min_reps:
                break
        noise, reply = best
        report["timing_attempts"] = attempt + 1
        report["timing_noise"] = round(noise, 4) if noise != float("inf") else None
        return reply

    def _ghost(self, session: SandboxSession, ref: ReferenceData) -> dict:
        """Every Triton launch a no-op, fresh memory poisoned, inputs never seen: right
        outputs now mean something other than the candidate's kernels computed them."""
        ghost_set = len(ref.inputs)
        reply, _ = self._request(session, "ghost", {"set": ghost_set, "keep": "ghost"})
        if not reply.get("ok"):
            return {"passed": False, "note": f"raised: {reply.get('message', '')[:200]}"}
        evidence = reply["evidence"]
        got, idx = self._sample(session, ref.ghost_outputs64)
        distance = _sample_distance(got.get("ghost", []), ref.ghost_outputs64, idx)
        passed = distance <= self.tolerance.rel_norm
        spotted = [name for name, kept in got.items() if ":spotted:" in name
                   and any(_sample_distance(kept, [r], idx) <= self.tolerance.rel_norm
                           for r in ref.ghost_outputs64)]
        return {"passed": passed,
                "note": "outputs matched the reference" if passed else
                        f"outputs differ from the reference (sampled relative error {distance:.3g})",
                "torch_results_matching": len(spotted),
                "torch_bytes": evidence.get("torch_bytes", 0),
                "dispatch_escapes": evidence.get("dispatch_escapes", {})}

    def _failed(self, reply: dict, phases: dict, trial: int | None = None) -> EvaluationResult:
        kind = {"compile": "compile_error", "output": "incorrect"}.get(reply.get("error"),
                                                                        "runtime_error")
        message = reply.get("message", "the candidate failed")
        if trial is not None:
            message = f"trial {trial}: {message}"
            if kind == "compile_error":
                message = f"Triton could not compile a kernel: {message}"
        return self.result(kind, message, logs=reply.get("traceback", ""),
                           timing=_timing({"timing": self._ref.baselines}),
                           diagnostics={"phases": dict(phases)})

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
        flags += rc.check_host_compute(report)
        flags += rc.check_dispatch_escapes(report)
        flags += rc.check_ghost_replay(report.get("ghost"))
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

        coverage, coverage_method = _coverage(report, interpreter)
        kernels = diag.kernel_rows(report.get("kernel_metadata", []))
        out_bytes = ref.output_bytes if ref.resident else \
            sum(o.numel() * o.element_size() for o in outputs[0]) if outputs else 0
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
        return self.result(
            status, message, correctness=trials, timing=timing,
            speedup_vs_eager=_round(speed_eager), speedup_vs_compile=_round(speed_compile),
            speedup_label=label, coverage=_round(coverage), diagnostics=diagnostics,
            integrity_flags=flags, reward=compute_reward(status, speedup, coverage, c.reward),
        )

    def _want_ncu(self) -> bool:
        return self.config.ncu == "auto" and diag.ncu_available()

    def _ncu(self, workdir: Path, ref: ReferenceData, kernel_names: list[str]) -> dict:
        """Replay two calls under ncu, inside the same kind of sandbox (inputs from a file
        the parent wrote; the parent reads back only ncu's CSV)."""
        import torch

        log_file = workdir / "ncu.csv"
        inputs_file = workdir / "ncu_inputs.pt"
        data = {"init": ref.init_inputs, "state": ref.state_dict, "seed": ref.init_seed}
        if ref.resident:  # the replay draws trial 0 on the device itself
            (workdir / "ncu_problem.py").write_text(self.problem.source)
            data.update(draw=list(ref.schedule[0]), problem_file=str(workdir / "ncu_problem.py"))
        else:
            data["inputs"] = ref.inputs[0]
        torch.save(data, inputs_file)
        argv = [*diag.ncu_command(kernel_names, str(log_file)), sys.executable, "-m",
                "search_engine.evaluation.child", "--mode", "ncu", "--device", "cuda",
                "--inputs", str(inputs_file), "--candidate", str(workdir / "candidate.py")]
        outcome = run_sandboxed_command(argv, workdir, timeout_s=self.config.ncu_timeout_s,
                                        limits=self.config.limits, env_extra=self._env(),
                                        gpu=True, extra_ro_paths=diag.ncu_paths())
        try:
            text = log_file.read_text()
        except OSError:
            return {"error": "ncu wrote no report", "log": outcome.log[-800:]}
        parsed = diag.parse_ncu_csv(text)
        return parsed or {"error": "no ncu metrics parsed", "log": text[-800:]}


INTERPRETER_COVERAGE = ("interpreter: bytes the kernels really load and store vs bytes "
                        "touched by torch ops (no device time on the CPU)")


def _coverage(report: dict, interpreter: bool) -> tuple[float | None, str]:
    if interpreter:
        kernel = sum(t["kernel_bytes"] for t in report.get("trials", []))
        other = sum(t.get("torch_bytes", 0) for t in report.get("trials", []))
        if kernel + other == 0:
            return None, INTERPRETER_COVERAGE
        return kernel / (kernel + other), INTERPRETER_COVERAGE
    profile = report.get("profile_us") or {}
    total = sum(profile.values())
    if not total:
        return None, "device time (profiler unavailable)"
    own = sum(us for name, us in profile.items()
              if any(k in name for k in report.get("own_kernels", [])))
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


def _random_indices(numel: int, count: int):
    """Flat indices to read, from an unpredictable seed (all of them for small outputs)."""
    import os

    import torch

    if numel <= count:
        return torch.arange(numel, dtype=torch.int64)
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    return torch.randint(0, numel, (count,), generator=g, dtype=torch.int64)


def _sample_distance(samples: list, references: list, idx: dict) -> float:
    """Relative norm error of sampled values against the reference at the same indices."""
    if len(samples) != len(references):
        return float("inf")
    picked = []
    for got, ref in zip(samples, references):
        where = idx.get(ref.numel())
        if where is None or got.numel() != where.numel():
            return float("inf")
        picked.append(ref.reshape(-1)[where])
    return rel_norm_distance(samples, picked)


def _noise(stats: dict) -> float:
    """IQR as a fraction of the median (inf when there is no usable median)."""
    median, iqr = stats.get("median_ms"), stats.get("iqr_ms")
    if not median or iqr is None:
        return float("inf")
    return iqr / median


def _distance(outputs: list, reference: list) -> float:
    if len(outputs) != len(reference):
        return float("inf")
    return rel_norm_distance(outputs, reference)


def _asdict(obj) -> dict:
    from dataclasses import asdict

    return asdict(obj)


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
