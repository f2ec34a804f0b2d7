"""One candidate's run: the source checks, then the conversation with its sandbox.

`CandidateRun` holds what a run decides with (problem, target, policy, tolerance, flags);
it starts or takes the candidate's sandbox, loads the candidate, stages the inputs, calls
it on every trial and compares each answer with the reference as it comes. Timing and the
checks on the outputs it keeps are `timed_checks.TimedChecks`; the verdict is
`judgement.Judgement`. `resident.ResidentDrive` drives the same run with device-resident
tensors.
"""

from __future__ import annotations

import secrets
import shutil
import time
from typing import Any

from search_engine.evaluation import second_shape, wire
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.correctness import compare_trial
from search_engine.evaluation.gpu_lock import cuda_device_key, gpu_activity, quiet_gpu
from search_engine.evaluation.integrity.static_checks import STRUCTURAL_CHECKS, run_static_checks
from search_engine.evaluation.isolation.untrusted_files import UntrustedFileError, write_private
from search_engine.evaluation.judgement import Judgement, _timing
from search_engine.evaluation.reference import ReferenceData
from search_engine.evaluation.replies import (
    LOAD_EVIDENCE, PROFILE, checked_call_evidence, checked_evidence, checked_fields,
    merge_evidence, text_of,
)
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag
from search_engine.evaluation.sandbox import (
    ProtocolViolation,
    SandboxDied,
    SandboxSession,
    SandboxTimeout,
    make_workdir,
)
from search_engine.evaluation.call_watch import matching_projections
from search_engine.evaluation.timed_checks import TimedChecks, ghost_position
from search_engine.evaluation.tolerances import precision_class, tolerance_for
from search_engine.hardware import HardwareTarget
from search_engine.problems import Problem


def child_args(hw: HardwareTarget, config: EvaluationConfig) -> list[str]:
    device = "cpu" if hw.is_interpreter else "cuda"
    return ["--device", device] + (["--resident"] if config.resident_on(device) else [])


def candidate_env(hw: HardwareTarget) -> dict[str, str]:
    if hw.is_interpreter:
        return {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    return {}


class CandidateRun(TimedChecks, Judgement):
    """One candidate judged against one problem on one target, stage by stage."""

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
        eager = fields.get("timing", {}).get("eager")
        fields.setdefault("baseline_precision", getattr(eager, "precision", "") or "")
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
                if outcome.disk_exceeded and status != "hack_suspected":
                    status, message = "runtime_error", (
                        "the candidate exceeded the sandbox disk limit of "
                        f"{self.config.limits.disk_bytes / (1 << 30):.3g} GiB and was killed: "
                        + outcome.disk_exceeded)
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
        """A warm sandbox from `pool` (single use) or a fresh one started by `_drive`, also
        when the pool could not start one (the host's failure, never the candidate's)."""
        if pool is not None:
            try:
                return pool.take(self.timeout_s)
            except (SandboxDied, SandboxTimeout, ProtocolViolation):
                pass  # the pool's start failed before the candidate was in it: a fresh one
        return SandboxSession("search_engine.evaluation.child", child_args(self.hw, self.config),
                              make_workdir(), timeout_s=self.timeout_s,
                              limits=self.config.limits, env_extra=self._env(),
                              gpu=not self.hw.is_interpreter, log_chars=self.config.log_chars)

    def _env(self) -> dict[str, str]:
        return candidate_env(self.hw)

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
        # written after the start (which hands the workdir to the sandbox's user), into a
        # fresh directory of the parent's: the workdir is the sandbox's, a pool's sandbox
        # could have planted links or FIFOs there, and nothing is opened by such a path
        try:
            candidate_file = write_private(session.workdir, "candidate.py",
                                           self.candidate.encode(), prefix="candidate-")
        except UntrustedFileError as exc:
            raise ProtocolViolation(f"the sandbox's workdir was tampered with: {exc}") from None
        except OSError as exc:  # a full disk
            return self.result("runtime_error", f"the candidate could not be written to its "
                               f"sandbox ({exc})", diagnostics={"phases": dict(phases)})
        out_cap = self._output_cap(ref)
        reply = self._load(session, ref, candidate_file)
        if not reply.get("ok"):
            return self._failed(reply, phases)
        load_evidence = checked_fields(reply.get("evidence") or {}, LOAD_EVIDENCE,
                                       "the load's evidence")
        phase("load_candidate")
        if ref.resident:
            from search_engine.evaluation.resident import ResidentDrive

            report = ResidentDrive(self, session, ref).drive(phases, phase)
            if isinstance(report, EvaluationResult):
                return report
            report["load"] = load_evidence
            return self._finish(session, report)
        # Set ids are a random permutation, staged in random order, and the ghost replay is
        # an ordinary call at a random place among the trials: nothing tells it apart.
        n = len(ref.inputs)
        ids = self._stage_sets(session, [*ref.inputs, ref.ghost_inputs])
        self._set_ids = ids[:n]

        warm = self._warm(session, ids[0])
        if warm is not None:
            return self._failed(warm, phases, 0)
        ghost_at = ghost_position(n) if self.config.ghost_replay else None
        trials, outputs, evidence, ghost = [], [], [], None
        for position in range(n + 1):
            if position == ghost_at:
                ghost = self._ghost_call(session, ref, ids[n], out_cap)
                continue
            index = position - (ghost_at is not None and position > ghost_at)
            if index >= n:
                break
            reply, out = self._call(session, ids[index], False, out_cap)
            if not reply.get("ok"):
                return self._failed(reply, phases, index)
            call_evidence = checked_call_evidence(reply)
            # the child's fields first: the parent's own ("trial", what it judged) win
            evidence.append({**call_evidence, "trial": index,
                             "torch_answer_moved": matching_projections(
                                 call_evidence, ref.outputs64[index], reply["probe"],
                                 self.tolerance.rel_norm, launched_after=True)})
            outputs.append(out)
            trials.append(self._compare(index, ref.schedule[index][0], out, ref.outputs64[index]))
        phase("correctness")
        report = {"trials": evidence, "phases": phases, "correctness": trials,
                  "outputs": outputs, "timing": dict(ref.baselines), "load": load_evidence}
        if ghost is not None:
            report["ghost"] = ghost
        if all(t.passed for t in trials):
            self._timed_checks(session, ref, report)
            phase("timing")
            self._profile(session, report, self._set_ids)
            phase("profile")
        return self._finish(session, report)

    @staticmethod
    def _output_cap(ref: ReferenceData) -> int:
        return 2 * ref.output_bytes + (1 << 20)  # a wrong dtype may double them, no more

    def _load(self, session: SandboxSession, ref: ReferenceData, candidate_file) -> dict:
        """Build the candidate in `candidate_file` (its `ModelNew`) with the reference's
        init inputs and weights; the reply says whether it built."""
        init_slots, init_tensors = wire.encode_values(ref.init_inputs)
        reply, _ = self._request(session, "load", {
            "candidate_file": str(candidate_file), "init": init_slots,
            "state_keys": list(ref.state_dict), "state_offset": len(init_tensors),
            "seed": ref.init_seed, "max_outputs": len(ref.output_shapes),
            "output_shapes": ref.output_shapes,
            "max_output_bytes": self._output_cap(ref),
        }, init_tensors + list(ref.state_dict.values()))
        return reply

    def _stage_sets(self, session: SandboxSession, sets: list) -> list[int]:
        """Stage `sets` under a random permutation of ids, in random order (nothing tells a
        trial from the ghost replay); the id of each set, in the order given."""
        n = len(sets)
        ids = secrets.SystemRandom().sample(range(n), n)
        for index in secrets.SystemRandom().sample(range(n), n):
            slots, tensors = wire.encode_values(sets[index])
            self._request(session, "stage", {"set": ids[index], "inputs": slots}, tensors)
        return ids

    def _call(self, session: SandboxSession, set_id: int, ghost: bool, out_cap: int):
        """One call; every call's header has the same fields (the ghost's too)."""
        header = {"set": set_id, "ghost": ghost, "probe": secrets.randbits(62) + 1}
        reply, out = self._request(session, "call", header, max_reply_bytes=out_cap)
        reply["probe"] = header["probe"]
        return reply, out

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
            profile = checked_fields({"profile_us": reply.get("profile_us")}, PROFILE,
                                     "the profile's reply")
            report["profile_us"] = profile["profile_us"]
        else:
            report["profile_error"] = text_of(reply.get("message"), "profiler failed")

    def _finish(self, session: SandboxSession, report: dict) -> dict:
        reply, _ = session.request("evidence")
        if reply.get("ok"):
            merge_evidence(report, checked_evidence(reply))
        if all(t.passed for t in report["correctness"]):
            # last, after the evidence: a candidate that crashes at another shape has
            # already answered everything its official verdict needs
            started = time.monotonic()
            try:
                report["shape_check"] = second_shape.check(self, session, self._ref)
            except SandboxDied as exc:
                report["shape_check"] = {**second_shape.shapes_of(self._ref),
                                         "status": "refused",
                                         "message": f"its sandbox died at the second shape "
                                                    f"({exc})"}
                return report
            report["phases"]["second_shape"] = round(time.monotonic() - started, 4)
        session.request("exit")
        return report

    def _compare(self, index: int, seed: int, out: list, reference: list):
        device = self.device
        return compare_trial(index, seed, [o.to(device) for o in out],
                             [r.to(device) for r in reference], self._ref.output_dtypes, self.tolerance)

    def _request(self, session: SandboxSession, kind: str, header: dict | None = None,
                 tensors: list | None = None, max_reply_bytes: int = 1 << 20,
                 fds: list[int] | None = None, max_reply_fds: int = 0, on_wait=None):
        """A request whose GPU work must not overlap another candidate's timing;
        `on_wait(seconds)` hears how long it waited for one to end."""
        key = None if self.hw.is_interpreter else cuda_device_key()
        queued = time.monotonic()
        with gpu_activity(key):
            if on_wait is not None:
                on_wait(time.monotonic() - queued)
            return session.request(kind, header, tensors, max_reply_bytes=max_reply_bytes,
                                   fds=fds, max_reply_fds=max_reply_fds)

    def _failed(self, reply: dict, phases: dict, trial: int | None = None) -> EvaluationResult:
        error = reply.get("error")
        kind = {"compile": "compile_error", "output": "incorrect"}.get(
            error if isinstance(error, str) else "", "runtime_error")
        message = text_of(reply.get("message"), "the candidate failed")
        if trial is not None:
            message = f"trial {trial}: {message}"
            if kind == "compile_error":
                message = f"Triton could not compile a kernel: {message}"
        return self.result(kind, message, logs=text_of(reply.get("traceback"), "", 8000),
                           timing=_timing({"timing": self._ref.baselines}),
                           diagnostics={"phases": dict(phases)})
