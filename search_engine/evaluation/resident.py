"""The candidate driven with tensors that never leave the device (`EvaluationConfig.resident`).

The problem's sandbox (kept alive by `ResidentReference`) draws a trial on the GPU and
exports its inputs; the parent passes the descriptors to the candidate's sandbox, whose
outputs come back the same way and go to the problem's sandbox to be compared there. The
parent sees descriptors, numbers and small samples only, and frees each trial when it is
done with it: peak memory is a few times one trial's tensors, whatever the plan's length.

The same checks as the copying path (`pipeline._Run._drive`): every trial compared in full,
timed outputs and a call after timing compared with the reference, the ghost replay with
its torch-result spotter, mutations of the inputs (seen by the problem's sandbox, which
owns them), and the samples the parent needs for result-reuse and constant-output checks.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict

from search_engine.evaluation import wire
from search_engine.evaluation.replies import checked_call_evidence
from search_engine.evaluation.result import TrialError
from search_engine.evaluation.sandbox import ProtocolViolation
from search_engine.evaluation.timed_checks import ghost_position

SAMPLE_CAP = 16384  # values per output the parent keeps for its cross-trial checks


class ResidentDrive:
    def __init__(self, run, session, ref):
        self.run, self.session, self.ref, self.link = run, session, ref, ref.link
        self.handles: dict[int, str] = {}   # staged set -> the problem sandbox's trial
        self.indices = _sample_indices(ref.output_shapes,
                                       min(run.config.sample_elements, SAMPLE_CAP))
        self.steps: dict[str, float] = {}  # seconds per kind of step, for the phases
        self.open_max = 0  # most trials held at once (the device memory they pin)
        self.reference_memory = None  # the problem's sandbox's device memory, at last close

    def _add(self, name: str, seconds: float) -> None:
        self.steps[name] = round(self.steps.get(name, 0.0) + seconds, 4)

    def _timed(self, name: str):
        from contextlib import contextmanager

        @contextmanager
        def clock():
            t0 = time.monotonic()
            try:
                yield
            finally:
                self._add(name, time.monotonic() - t0)
        return clock()

    # -- the whole conversation
    def drive(self, phases: dict, phase) -> object:
        run, ref = self.run, self.ref
        n = ref.trial_count
        # Set ids are a random permutation and the ghost replay is an ordinary call at a
        # random place among the trials (as on the copying path): nothing tells it apart.
        ids = secrets.SystemRandom().sample(range(n + 1), n + 1)
        ghost_at = self._ghost_position(n) if run.config.ghost_replay else None
        trials, evidence, outputs, references, ghost = [], [], [], [], None
        with self.link.slots:
            try:
                for position in range(n + 1):
                    is_ghost = position == ghost_at
                    index = n if is_ghost else position - (ghost_at is not None
                                                           and position > ghost_at)
                    if index >= n and not is_ghost:
                        break
                    self._open(index, ids[index])
                    if position == 0:  # compile before the first call, whichever it is
                        with self._timed("compile"):
                            warm = run._warm(self.session, ids[index])
                        if warm is not None:
                            return run._failed(warm, phases, 0)
                    if is_ghost:
                        ghost = self._ghost(ids[n])
                        continue
                    reply = self._call(ids[index])
                    if not reply.get("ok"):
                        return run._failed(reply, phases, index)
                    judged, samples = self._judge(ids[index], reply, compare=index)
                    evidence.append({**checked_call_evidence(reply), "trial": index,
                                     "mutations": judged["mutations"],
                                     "torch_answer_moved": judged.get("torch_answer_moved", 0)})
                    trials.append(TrialError(**judged["verdict"]))
                    split = int(judged.get("sampled_outputs", 0))
                    outputs.append(samples[:split])
                    references.append(samples[split:])
                    if index < n - ref.timing_sets:  # the last ones stay for timing,
                        self._drop(ids[index])       # so one trial is open at a time
                phase("correctness")
                report = {"trials": evidence, "phases": phases, "correctness": trials,
                          "outputs": outputs, "sampled_references": references,
                          "timing": dict(ref.baselines), "resident_steps": self.steps}
                if ghost is not None:
                    report["ghost"] = ghost
                if all(t.passed for t in trials):
                    self._timed_checks(report)
                    phase("timing")
                    run._profile(self.session, report, sorted(self.handles))
                    phase("profile")
            finally:
                for as_set in list(self.handles):
                    self._drop(as_set, candidate=False)
        report["open_max"] = self.open_max
        report["reference_device_memory"] = self.reference_memory
        return report

    def _ghost_position(self, n: int) -> int:
        """Where the ghost call goes among the n trials (never first: `ghost_position`).
        Large trials (the timing keeps fewer than all of them) put it before any trial held
        for the timing, so a second trial is never open beside another: peak memory stays
        one trial's."""
        held = self.ref.timing_sets
        return ghost_position(n if held >= n else n - held)

    # -- trials
    def _open(self, index: int, as_set: int) -> None:
        with self._timed("open"):
            reply, _ = self.link.ask("open", {"index": index}, max_reply_fds=wire.MAX_FDS)
        fds = reply.get("fds", [])
        self.handles[as_set] = reply["handle"]
        self.open_max = max(self.open_max, len(self.handles))
        try:
            with self._timed("stage"):
                self.run._request(self.session, "stage", {
                    "set": as_set, "inputs": reply["inputs"], "shared": reply["shared"]},
                    fds=fds)
        finally:
            wire.close_fds(fds)  # the candidate's sandbox holds its own copies now

    def _drop(self, as_set: int, candidate: bool = True) -> None:
        handle = self.handles.pop(as_set, None)
        with self._timed("close"):
            if candidate:
                self.run._request(self.session, "unstage", {"set": as_set})
            if handle is not None:
                reply, _ = self.link.ask("close", {"handle": handle})
                self.reference_memory = reply.get("device_memory")

    def _call(self, as_set: int, ghost: bool = False) -> dict:
        """One call; every call's header has the same fields (the ghost's too)."""
        with self._timed("ghost" if ghost else "call"):
            probe = secrets.randbits(62) + 1
            reply, _ = self.run._request(self.session, "call", {
                "set": as_set, "share": True, "ghost": ghost, "probe": probe},
                max_reply_fds=wire.MAX_FDS, on_wait=lambda s: self._add("call_queue", s))
            reply["probe"] = probe
        if not reply.get("ok"):
            wire.close_fds(reply.get("fds", []))
        return reply

    def _judge(self, as_set: int, reply: dict, compare: int | None = None,
               groups: list[int] | None = None) -> tuple[dict, list]:
        """Hand the candidate's shared outputs to the problem's sandbox; close ours."""
        fds = reply.get("fds", [])
        try:
            shared = reply.get("shared", [])
            if len(shared) != len(fds):
                raise ProtocolViolation(f"{len(fds)} descriptors for {len(shared)} outputs")
            header = {"handle": self.handles[as_set], "shared": shared,
                      "groups": groups or [int(reply.get("n_outputs", len(shared)))],
                      "sample": self.indices}
            if compare is not None and (reply.get("evidence") or {}).get("projections"):
                header.update(projections=reply["evidence"]["projections"][:4096],
                              probe=int(reply.get("probe", 1)))
            if compare is not None:
                seed = self.ref.schedule[compare][0]
                header["compare"] = {"trial": compare, "seed": seed,
                                     "dtypes": self.ref.output_dtypes,
                                     "tolerance": asdict(self.run.tolerance)}
            with self._timed("judge"):
                judged = self.link.ask("judge", header, fds=fds,
                                       on_wait=lambda s: self._add("judge_queue", s))
            for part, seconds in (judged[0].get("seconds") or {}).items():
                self._add(f"judge_{part}", float(seconds))
            return judged
        finally:
            wire.close_fds(fds)

    # -- timing: outputs of the timed loop and of one call after it, judged in place
    def _timed_checks(self, report: dict, after: bool = True) -> None:
        """Time the candidate, judge the timed loop's outputs and (with `after`) one more
        call's after it."""
        run, session = self.run, self.session
        sets = sorted(self.handles)
        header = {"sets": sets, "timing": run.config.timing_spec(run.hw.l2_bytes or 64 << 20),
                  "pad": not _side_streams(report, session)}
        waited = run.lock_wait_s
        with self._timed("time"):  # with its wait for the GPU (the phases split that out)
            timed = run._timing_reply(session, header, report, gated=True)
        # its wait for the GPU to go quiet, and the measurement loop in the sandbox
        self._add("time_queue", run.lock_wait_s - waited)
        if timed is None:
            return
        self._add("time_loop", float(report.get("measured_s") or 0.0))
        consistency = []
        with self._timed("share_kept"):
            kept, _ = run._request(session, "share_kept", {}, max_reply_fds=wire.MAX_FDS)
        fds, metas, offset = kept.get("fds", []), kept.get("shared", []), 0
        try:
            for entry in kept.get("layout", []):
                name, count = str(entry["name"]), int(entry["count"])
                which = int(name.split(":")[1]) if name.startswith("time:") else -1
                part = {"fds": fds[offset:offset + count], "shared": metas[offset:offset + count],
                        "n_outputs": count}
                offset += count
                if which not in self.handles:
                    raise ProtocolViolation(f"timed outputs for an input set {which} never staged")
                judged, _ = self._judge(which, part)
                consistency.append({"trial": which, "rel_norm_diff": judged["distances"][0]})
        finally:
            wire.close_fds(fds[offset:])
        if after:
            later = self._call(sets[0])
            distance = (self._judge(sets[0], later)[0]["distances"][0] if later.get("ok")
                        else float("inf"))
            consistency.append({"trial": sets[0], "after_timing": True,
                                "rel_norm_diff": distance})
        report["timed_consistency"] = consistency

    # -- the ghost replay, on a trial the candidate has never seen
    def _ghost(self, ghost_set: int) -> dict:
        """The ghost's set is open (the plan's last entry: the ghost's seed); judged, then
        dropped at once."""
        try:
            return self._ghost_verdict(ghost_set, self._call(ghost_set, ghost=True))
        finally:
            self._drop(ghost_set)

    def _ghost_verdict(self, ghost_set: int, reply: dict) -> dict:
        if not reply.get("ok"):
            return {"passed": False, "failed": True,
                    "note": f"raised: {reply.get('message', '')[:200]}"}
        n_out = int(reply.get("n_outputs", 0))
        spotted = len(reply.get("shared", [])) - n_out
        judged, _ = self._judge(ghost_set, reply, groups=[n_out] + [1] * spotted)
        distance = judged["distances"][0]
        tol = self.run.tolerance.rel_norm
        evidence = reply["evidence"]
        return {"passed": distance <= tol,
                "note": "outputs matched the reference" if distance <= tol else
                        f"outputs differ from the reference (relative error {distance:.3g})",
                "torch_results_matching": sum(1 for d in judged.get("spot_distances", [])
                                              if d <= tol),
                "torch_bytes": evidence.get("torch_bytes", 0),
                "dispatch_escapes": evidence.get("dispatch_escapes", {})}


def _side_streams(report: dict, session) -> bool:
    default = session.ready.get("default_stream")
    return any(s != default for t in report["trials"] for s in t["streams"])


def _sample_indices(shapes: list[list[int]], count: int) -> dict[str, list[int]]:
    """Flat indices per output size, unpredictable to the candidate, the same for every
    trial (so trials can be compared with each other)."""
    import math

    from search_engine.evaluation.timed_checks import _random_indices

    return {str(math.prod(s)): _random_indices(math.prod(s), count).tolist() for s in shapes}
