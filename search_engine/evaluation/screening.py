"""Screening: many configurations of one candidate program, ranked cheaply in warm sandboxes.

A search that autotunes within a program (the offline template's parameter space) needs a
timing for each configuration, not a verdict. `screen()` gives that inside the evaluator's
trust boundary, with the full evaluation's own parts:

Parent (trusted)                                    Candidate sandbox (one, warm, many configs)
------------------------------------------------    -------------------------------------------
static checks of every configuration's source
reference (the problem's sandbox, cached)
stage the trials' inputs once                 --->  kept across configurations
for each configuration:
  load it                                     --->  build ModelNew afresh
  one call on a trial the parent drew         --->  outputs back
  compare with the reference (parent only)    <---
  timing and the timed outputs                --->  the full evaluation's `_timed_checks`
  evidence: timers, harness, threads?         --->  touched: failed, this sandbox thrown away

The candidate's process never holds a reference output and decides nothing: the parent
compares, and a configuration that patched the timers or the harness is failed and its
sandbox replaced, so it cannot forge its own timing or another's. Configurations are spread
over `workers` sandboxes whose compile passes run in parallel (timing still takes the GPU
lock one at a time).

A screening is never a reported result: it carries no status, reward or speedup. Only a
full `evaluate()` can make a node correct, best, reviewable or rewarded; the search sends
the best screened configurations to it.
"""

from __future__ import annotations

import contextvars
import os
import secrets
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from search_engine.evaluation.candidate_run import CandidateRun
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.integrity import runtime_checks as rc
from search_engine.evaluation.isolation.untrusted_files import UntrustedFileError, write_private
from search_engine.evaluation.pipeline import _reference, checked_request
from search_engine.evaluation.replies import checked_call_evidence, checked_evidence
from search_engine.evaluation.reference import ReferenceCache, ReferenceData
from search_engine.evaluation.result import TrialError
from search_engine.evaluation.sandbox import (
    ProtocolViolation,
    SandboxDied,
    SandboxSession,
    SandboxTimeout,
)
from search_engine.hardware import HardwareTarget
from search_engine.problems import Problem

DEFAULT_SCREEN_TIMEOUT_S = 60.0  # per configuration


@dataclass
class ScreenedConfiguration:
    """One configuration's screening: passed the spot-check and was timed, or why not."""

    index: int  # its place in the list given to `screen`
    passed: bool
    reason: str
    median_ms: float | None = None
    iqr_ms: float | None = None
    samples: int = 0
    method: str = ""
    seconds: float = 0.0  # its screening's wall time (load and compile, check, timing)
    skipped: bool = False  # never screened: the screening's deadline came first

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ScreenResult:
    """A family's screening; never a reported result (see the module's docstring)."""

    configurations: list[ScreenedConfiguration]
    target: str
    duration_s: float = 0.0
    sandboxes: int = 0
    message: str = ""
    phases: dict = field(default_factory=dict)

    def ranked(self) -> list[ScreenedConfiguration]:
        """The configurations that passed, fastest first (ties keep the given order)."""
        passed = [c for c in self.configurations if c.passed and c.median_ms is not None]
        return sorted(passed, key=lambda c: (c.median_ms, c.index))

    def to_dict(self) -> dict:
        return {"configurations": [c.to_dict() for c in self.configurations],
                "target": self.target, "duration_s": self.duration_s,
                "sandboxes": self.sandboxes, "message": self.message, "phases": self.phases}

    @classmethod
    def from_dict(cls, data: dict) -> ScreenResult:
        """The inverse of `to_dict` (a screening that ran on a remote worker)."""
        fields = {k: data[k] for k in ("duration_s", "sandboxes", "message", "phases")
                  if k in data}
        return cls([ScreenedConfiguration(**c) for c in data.get("configurations", [])],
                   data.get("target", ""), **fields)


def screening_config(config: EvaluationConfig) -> EvaluationConfig:
    """The full evaluation's settings with a short timing: one measurement of
    `screen_min_timing_ms`, no retiming, one interpreter pass."""
    return replace(config, min_timing_ms=min(config.min_timing_ms, config.screen_min_timing_ms),
                   warmup_ms=min(config.warmup_ms, config.screen_warmup_ms),
                   retime_attempts=0, interpreter_reps=1, ghost_replay=False, ncu="off")


def screen(problem_source: Problem | str | Path, sources: list[str],
           target: str | HardwareTarget = "auto", precision_policy: str = "strict",
           timeout_s: float = DEFAULT_SCREEN_TIMEOUT_S, config: EvaluationConfig | None = None,
           *, reference_cache: ReferenceCache | None = None, sandbox_pool=None,
           workers: int | None = None, deadline_s: float | None = None) -> ScreenResult:
    """Screen each of `sources` (Python defining `ModelNew`) against the problem: a
    spot-check of one trial against the reference and a short timing, in warm sandboxes
    (`timeout_s` each configuration). Bad problems, targets or policies raise like
    `evaluate`; every configuration's failure is a `ScreenedConfiguration`, never an
    exception. With `deadline_s`, no configuration starts later than that many seconds
    after the call: the rest come back `skipped` (a search with a time limit keeps the time
    its finalists' full evaluations need)."""
    started = time.monotonic()
    stop_at = None if deadline_s is None else started + max(0.0, deadline_s)
    config = screening_config(config or EvaluationConfig())
    problem, hw = checked_request(problem_source, target, precision_policy, timeout_s)
    runs = [ScreenRun(problem, source, hw, precision_policy, timeout_s, config, index)
            for index, source in enumerate(sources)]
    done: dict[int, ScreenedConfiguration] = {}
    for run in runs:
        static = run.static_stage()
        if static is not None:
            done[run.index] = run.failed(f"{static.status}: {static.message}")
    todo = [r for r in runs if r.index not in done]
    result = ScreenResult([], hw.name)
    if todo:
        reference = _reference(problem, config, hw, reference_cache, precision_policy)
        result.phases["reference_s"] = round(time.monotonic() - started, 3)
        try:
            if reference.defects:
                why = "problem defect: " + "; ".join(reference.defects)
                done.update({r.index: r.failed(why) for r in todo})
            else:
                lanes = workers or config.screen_lanes or _default_workers(hw, len(todo))
                chunks = _chunks(todo, _lanes_with_memory(lanes, reference))
                result.sandboxes = len(chunks)
                with ThreadPoolExecutor(len(chunks), thread_name_prefix="kernelhub-screen") as pool:
                    # each lane in a copy of this context: a cancel (the executor's scope)
                    # reaches the sandboxes the lanes take
                    lanes = [pool.submit(contextvars.copy_context().run, _screen_chunk, chunk,
                                         reference, sandbox_pool, stop_at) for chunk in chunks]
                    for lane in lanes:
                        screened, phases = lane.result()
                        done.update(screened)
                        for name, seconds in phases.items():
                            result.phases[name] = round(result.phases.get(name, 0.0)
                                                        + seconds, 3)
        finally:
            if reference_cache is None and reference.link is not None:
                reference.link.close()
    result.configurations = [done[i] for i in range(len(sources))]
    result.duration_s = round(time.monotonic() - started, 3)
    passed = sum(c.passed for c in result.configurations)
    skipped = sum(c.skipped for c in result.configurations)
    result.message = f"{passed} of {len(sources)} configurations passed the spot-check" + (
        f" ({skipped} not screened: out of time)" if skipped else "")
    return result


def _default_workers(hw: HardwareTarget, count: int) -> int:
    """One sandbox on the interpreter; on a GPU, up to `gpu_lanes()` compile in parallel."""
    if hw.is_interpreter:
        return 1
    return max(1, min(count, gpu_lanes()))


def _lanes_with_memory(lanes: int, reference: ReferenceData) -> int:
    """At most as many lanes as the problem's sandbox has trial slots: a resident lane
    holds its slot (its staged trial) for its whole life, so a lane past them would start
    its sandbox only to wait, compiling nothing, for another lane's whole share (a 4096 x
    393216 softmax has one slot on an 80 GB card)."""
    if not reference.resident or reference.link is None:
        return lanes
    return max(1, min(lanes, reference.link.slot_count))


def gpu_lanes(config: EvaluationConfig | None = None) -> int:
    """The sandboxes a GPU screening of many configurations spreads over: the configured
    `screen_lanes`, else up to half the cores (each sandbox compiles its share, which is
    most of a configuration's time; timing takes the GPU lock in turn)."""
    if config is not None and config.screen_lanes:
        return config.screen_lanes
    return max(1, min((os.cpu_count() or 4) // 2, 8))


def _chunks(runs: list, workers: int) -> list[list]:
    workers = max(1, min(workers, len(runs)))
    return [runs[i::workers] for i in range(workers)]


def _screen_chunk(runs: list["ScreenRun"], ref: ReferenceData, pool,
                  stop_at: float | None = None) -> tuple[dict[int, ScreenedConfiguration], dict]:
    """Screen `runs` one after another in one warm sandbox, replaced whenever a
    configuration killed it, timed out, broke the protocol or tampered with it; none
    started after `stop_at` (time.monotonic()). Also the seconds spent per phase."""
    out: dict[int, ScreenedConfiguration] = {}
    phases: dict[str, float] = {}
    lane: _Lane | None = None
    try:
        for run in runs:
            if stop_at is not None and time.monotonic() >= stop_at:
                out[run.index] = run.skipped()
                continue
            if lane is None:
                begun = time.monotonic()
                lane = _Lane(run, ref, pool)
                _add(phases, "sandbox_s", time.monotonic() - begun)
                if lane.error:
                    out[run.index] = run.failed(lane.error)
                    lane = None
                    continue
            out[run.index] = lane.screen(run)
            for name, seconds in lane.phases.items():
                _add(phases, name, seconds)
            if lane.spoiled:
                _add_steps(phases, lane)
                lane.close()
                lane = None
    finally:
        if lane is not None:
            _add_steps(phases, lane)
            lane.close()
    return out, phases


def _add_steps(phases: dict[str, float], lane: "_Lane") -> None:
    """The lane's resident steps (calls, judgements in the problem's sandbox, ...) as
    `step_<name>_s`: parts of the check and timing phases, not more time."""
    steps = dict(lane.resident.steps) if lane.resident is not None else {}
    steps.update(lane.steps)
    for name, seconds in steps.items():
        _add(phases, f"step_{name}_s", seconds)


def _add(phases: dict[str, float], name: str, seconds: float) -> None:
    phases[name] = phases.get(name, 0.0) + seconds


class ScreenRun(CandidateRun):
    """One configuration, screened: the full evaluation's run with a screening config."""

    def __init__(self, problem: Problem, candidate: str, hw: HardwareTarget, policy: str,
                 timeout_s: float, config: EvaluationConfig, index: int):
        super().__init__(problem, candidate, hw, policy, timeout_s, config)
        self.index = index
        self.lock_wait_s = 0.0

    def failed(self, reason: str) -> ScreenedConfiguration:
        return ScreenedConfiguration(self.index, False, reason[:1000])

    def skipped(self) -> ScreenedConfiguration:
        return ScreenedConfiguration(self.index, False, "not screened: the screening's time "
                                     "ran out", skipped=True)


class _Lane:
    """One warm sandbox with the trials' inputs staged, screening configurations in turn."""

    def __init__(self, first: ScreenRun, ref: ReferenceData, pool):
        self.ref, self.error, self.spoiled = ref, "", False
        self.phases: dict[str, float] = {}  # the last configuration's seconds per phase
        self.steps: dict[str, float] = {}  # seconds per step over all its configurations
        self.resident = None
        first._ref = ref
        try:
            self.session: SandboxSession = first._session(pool)
            if not self.session.started:
                self.session.start()
            self._stage(first)
        except (SandboxDied, SandboxTimeout, ProtocolViolation) as exc:
            self.error = f"the screening sandbox did not start: {exc}"
            self.close()

    def _stage(self, run: ScreenRun) -> None:
        ref = self.ref
        self.trial = secrets.randbelow(len(ref.schedule))  # the spot-checked trial
        if ref.resident:
            from search_engine.evaluation.resident import ResidentDrive

            self.resident = ResidentDrive(run, self.session, ref)
            self.resident.link.slots.acquire()
            self.set_id = secrets.randbelow(1 << 20)
            self.resident._open(self.trial, self.set_id)
        else:
            self.set_ids = run._stage_sets(self.session, list(ref.inputs))
            self.set_id = self.set_ids[self.trial]

    def screen(self, run: ScreenRun) -> ScreenedConfiguration:
        run._ref = self.ref
        session = self.session
        session.renew(run.timeout_s)
        self.phases, self._clock = {}, time.monotonic()
        path = self._write_source(run, session)
        if not isinstance(path, Path):
            return path
        try:
            screened = self._screen(run, session, path)
            self._phase("timing_s")
            self._split_gpu_wait(run)
            planted = _planted(session.workdir)
            if planted:  # harmless now (nothing is opened there), but no honest kernel's
                self.spoiled = True
                screened = run.failed(f"hack_suspected: the configuration planted links or "
                                      f"special files in its sandbox's workdir: {planted}")
            screened.seconds = round(sum(self.phases.values()), 3)
            return screened
        except SandboxTimeout:
            self.spoiled = True
            return run.failed(f"timeout: did not finish within {run.timeout_s:g} s")
        except SandboxDied as exc:
            self.spoiled = True
            return run.failed(f"runtime_error: its sandbox died ({exc})")
        except ProtocolViolation as exc:
            self.spoiled = True
            return run.failed(f"hack_suspected: protocol.violation: {exc}")
        except Exception as exc:  # noqa: BLE001 - a reply the parent could not read
            self.spoiled = True
            return run.failed(f"hack_suspected: the parent could not use the sandbox's "
                              f"replies: {type(exc).__name__}: {exc}")

    def _write_source(self, run: ScreenRun, session: SandboxSession):
        """The configuration's source, where the sandbox will read it; or its failure.

        The workdir is the sandbox's: the configurations before this one ran there and may
        have planted a link (to a host file) or a FIFO (an open that never returns) at any
        name. So the source goes to a fresh subdirectory of the parent's own, reached only
        through descriptors (`write_private`): nothing there is followed, opened or waited
        on. A workdir the parent cannot write that way is this lane's end."""
        try:
            return Path(write_private(session.workdir, f"config_{run.index:04d}.py",
                                      run.candidate.encode(), prefix="config-"))
        except UntrustedFileError as exc:
            self.spoiled = True
            return run.failed(f"hack_suspected: the screening sandbox tampered with its "
                              f"workdir: {exc}")
        except OSError as exc:  # a full disk (the sandbox's writes count there too)
            self.spoiled = True
            return run.failed(f"runtime_error: the configuration could not be written to "
                              f"its sandbox ({exc})")

    def _screen(self, run: ScreenRun, session: SandboxSession,
                path: Path) -> ScreenedConfiguration:
        reply = run._load(session, self.ref, path)
        self._phase("compile_s")
        if not reply.get("ok"):
            return run.failed(_failure(reply))
        begun = time.monotonic()
        warm = run._warm(session, self.set_id)  # the first call: Triton's JIT compile
        _add(self.steps, "warm", time.monotonic() - begun)
        if warm is not None:
            return run.failed(_failure(warm))
        verdict, streams = self._spot_check(run, session)
        self._phase("check_s")
        if verdict is None:
            return run.failed(streams)
        if not verdict.passed:
            return self._tampered(run, session) or run.failed(
                f"incorrect: trial {self.trial}: {verdict.note}")
        report = {"timing": {}, "trials": [{"streams": streams}]}
        run._set_ids = self.set_ids if self.resident is None else [self.set_id]
        # The timed outputs are judged, but no call is made after timing: a screening ranks
        # on its timed loop, and only a full evaluation (which makes that call) reports.
        # Each call and judgement queues in the problem's one sandbox: judgements were 68 %
        # of a matmul screening's lane time (H100, 2026-12-06).
        if self.resident is not None:
            self.resident.run = run
            self.resident._timed_checks(report, after=False)
        else:
            run._timed_checks(session, self.ref, report, after=False)
        tampered = self._tampered(run, session)
        if tampered is not None:
            return tampered
        if report.get("timing_error"):
            return run.failed(f"runtime_error: failed while timed: {report['timing_error']}")
        wrong = [c for c in report.get("timed_consistency", [])
                 if not c["rel_norm_diff"] <= run.tolerance.rel_norm]
        if wrong:
            when = "after timing" if wrong[0].get("after_timing") else "of the timed loop"
            return run.failed(f"incorrect: the outputs {when} differ from the reference "
                              f"(relative error {wrong[0]['rel_norm_diff']:.3g})")
        flags = rc.check_wallclock(report, run.config.wallclock_mismatch_factor)
        if flags:
            return run.failed(f"hack_suspected: {flags[0].check}: {flags[0].evidence}")
        stats = report["timing"]["candidate"]
        return ScreenedConfiguration(run.index, True, "passed the spot-check",
                                     stats.get("median_ms"), stats.get("iqr_ms"),
                                     int(stats.get("samples") or 0), stats.get("method", ""))

    def _split_gpu_wait(self, run: ScreenRun) -> None:
        """The part of the timing phase spent waiting for the GPU (other lanes timing), as
        its own phase: with many lanes the screening is bound by it, not by compiling."""
        waited = min(getattr(run, "lock_wait_s", 0.0), self.phases.get("timing_s", 0.0))
        if waited > 0:
            self.phases["timing_s"] -= waited
            self.phases["gpu_wait_s"] = waited

    def _phase(self, name: str) -> None:
        """The time since the last phase ended, counted to `name`."""
        now = time.monotonic()
        self.phases[name] = self.phases.get(name, 0.0) + now - self._clock
        self._clock = now

    def _spot_check(self, run: ScreenRun, session: SandboxSession) -> tuple:
        """The verdict on one call at the staged trial, and that call's streams; or (None,
        why) when the call failed."""
        if self.resident is not None:
            self.resident.run = run
            reply = self.resident._call(self.set_id)
            if not reply.get("ok"):
                return None, _failure(reply)
            streams = checked_call_evidence(reply).get("streams", [])
            judged, _ = self.resident._judge(self.set_id, reply, compare=self.trial)
            return TrialError(**judged["verdict"]), streams
        reply, out = run._call(session, self.set_id, False, run._output_cap(self.ref))
        if not reply.get("ok"):
            return None, _failure(reply)
        seed = self.ref.schedule[self.trial][0]
        verdict = run._compare(self.trial, seed, out, self.ref.outputs64[self.trial])
        return verdict, checked_call_evidence(reply).get("streams", [])

    def _tampered(self, run: ScreenRun, session: SandboxSession) -> ScreenedConfiguration | None:
        """A configuration that replaced the timers or the harness, or started threads (which
        could slow the configurations after it): failed, and the sandbox is spoiled."""
        reply, _ = session.request("evidence")
        if not reply.get("ok"):  # unread evidence is no evidence of an untouched sandbox
            self.spoiled = True
            return run.failed(f"runtime_error: the sandbox gave no evidence after the "
                              f"configuration ran ({_failure(reply)})")
        reply = checked_evidence(reply)  # ill-typed or unknown fields: protocol.violation
        flags = (rc.check_timer_tampering(reply) + rc.check_harness_patch(reply)
                 + rc.check_threads(reply))
        if not flags:
            return None
        self.spoiled = True
        return run.failed("hack_suspected: " + "; ".join(f"{f.check}: {f.evidence}"
                                                         for f in flags))

    def close(self) -> None:
        session = getattr(self, "session", None)
        if self.resident is not None:
            for index in list(self.resident.handles):
                self.resident._drop(index, candidate=False)
            self.resident.link.slots.release()
            self.resident = None
        if session is not None:
            session.close()
            shutil.rmtree(session.workdir, ignore_errors=True)
            self.session = None


def _planted(workdir: Path, most: int = 8) -> str:
    """Links, FIFOs, sockets and devices at the top of a sandbox's workdir (where the
    parent once wrote by name), listed without following or opening any of them; '' when
    there are none. The directory is read through a descriptor opened with O_NOFOLLOW."""
    try:
        fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return f"its workdir is not a directory ({exc.strerror})"
    found = []
    try:
        with os.scandir(fd) as entries:
            for seen, entry in enumerate(entries):
                if seen >= 100_000:  # the disk watcher's bound on entries
                    break
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISLNK(mode):
                    try:
                        where = os.readlink(entry.name, dir_fd=fd)
                    except OSError:
                        where = "?"
                    found.append(f"{entry.name[:60]} -> {where[:120]}")
                elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    kind = "FIFO" if stat.S_ISFIFO(mode) else "special file"
                    found.append(f"{entry.name[:60]} ({kind})")
    except OSError:
        pass
    finally:
        os.close(fd)
    found.sort()
    return "; ".join(found[:most]) + (f" and {len(found) - most} more" if len(found) > most else "")


def _failure(reply: dict) -> str:
    """A failed reply's status and message (the child's words: strings, bounded, or none)."""
    error, message = reply.get("error"), reply.get("message")
    kind = {"compile": "compile_error", "output": "incorrect"}.get(
        error if isinstance(error, str) else "", "runtime_error")
    message = message[:2000] if isinstance(message, str) else "the configuration failed"
    return f"{kind}: {message}"
