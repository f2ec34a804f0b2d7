"""Timing the candidate, and the checks on the outputs it keeps in its sandbox.

After every trial was right: the timed loop (the parent holds the GPU; measured again
while the samples are noisy), the outputs of the timed loop and of one call after it, and
the ghost replay (every Triton launch a no-op, fresh memory poisoned). Kept outputs are
read at random indices chosen only once they are fixed. A mixin of `CandidateRun`.
"""

from __future__ import annotations

import time

from search_engine.evaluation.call_watch import matching_projections
from search_engine.evaluation.correctness import rel_norm_distance
from search_engine.evaluation.gpu_lock import cuda_device_key, quiet_gpu
from search_engine.evaluation.reference import ReferenceData
from search_engine.evaluation.sandbox import ProtocolViolation, SandboxSession


class TimedChecks:
    """Timing and the kept-output checks of `CandidateRun` (its `config`, `hw`, `tolerance`,
    `lock_wait_s` and `_request`)."""

    def _timed_checks(self, session: SandboxSession, ref: ReferenceData, report: dict,
                      after: bool = True) -> None:
        """Time the candidate (the parent holds the GPU), check the timed outputs and (with
        `after`) one more call after timing against the reference."""
        n_sets = len(ref.inputs)
        ids = getattr(self, "_set_ids", list(range(n_sets)))
        trial_of = {set_id: trial for trial, set_id in enumerate(ids)}
        default = session.ready.get("default_stream")
        side_streams = any(s != default for t in report["trials"] for s in t["streams"])
        header = {"sets": list(ids), "timing": self.config.timing_spec(
            self.hw.l2_bytes or 64 << 20), "pad": not side_streams}
        reply = self._timing_reply(session, header, report)
        if reply is None:
            return
        for entry in reply.get("last", []):
            if int(entry["set"]) not in trial_of:
                raise ProtocolViolation(f"timed outputs for an input set {entry['set']} never "
                                        "staged")
        if after:
            reply, _ = self._request(session, "call", {"set": ids[0], "ghost": False,
                                                       "probe": _probe(), "keep": "after"})
        # The timed and the later outputs stay in the sandbox; the parent picks the indices
        # to read only now that they are fixed, so skipped work cannot hide at unread places.
        got, idx = self._sample(session, ref.outputs64[0])
        consistency = []
        for which in range(n_sets):
            kept = got.get(f"time:{ids[which]:04d}")
            if kept is not None:
                consistency.append({"trial": which, "rel_norm_diff": _sample_distance(
                    kept, ref.outputs64[which], idx)})
        if after:
            later = _sample_distance(got["after"], ref.outputs64[0], idx) \
                if reply.get("ok") and "after" in got else float("inf")
            consistency.append({"trial": 0, "after_timing": True, "rel_norm_diff": later})
        report["timed_consistency"] = consistency

    def _timing_reply(self, session, header: dict, report: dict,
                      gated: bool | None = None) -> dict | None:
        """Time the candidate and record the timing; the reply, or None once `report` says
        why timing failed. Gated (the default on a GPU): under the quiet-GPU gate, repeated
        until steady; else one plain timing request (the interpreter)."""
        if gated is None:
            gated = not self.hw.is_interpreter
        if not gated:
            reply, _ = session.request("time", header)
        else:
            t0 = time.monotonic()
            with quiet_gpu(cuda_device_key(), self.config.quiet_wait_s) as quiet:
                self.lock_wait_s += time.monotonic() - t0
                reply = self._time_until_steady(session, header, report)
            report["timing_quiet"] = quiet
        if not reply.get("ok"):
            report["timing_error"] = reply.get("message", "timing failed")
            return None
        self._record_timing(report, reply)
        return reply

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

    def _ghost_call(self, session: SandboxSession, ref: ReferenceData, set_id: int,
                    out_cap: int) -> dict:
        """The ghost replay: an ordinary call (at a place the parent drew, on inputs drawn
        like a trial's) in which every Triton launch does nothing. The parent judges it:
        right outputs mean the kernels did not compute them; a torch result projected like
        the answer means torch did; a raise or an answer of another shape counts against
        the candidate (`failed`), never as a pass."""
        reply, out = self._call(session, set_id, True, out_cap)
        if not reply.get("ok"):
            return {"passed": False, "failed": True,
                    "note": f"raised: {reply.get('message', '')[:200]}"}
        evidence = reply["evidence"]
        shapes = [tuple(o.shape) for o in out]
        wanted = [tuple(r.shape) for r in ref.ghost_outputs64]
        if shapes != wanted:
            return {"passed": False, "failed": True,
                    "note": f"returned outputs shaped {shapes[:4]}, not {wanted[:4]}"}
        distance = _distance(out, ref.ghost_outputs64)
        passed = distance <= self.tolerance.rel_norm
        return {"passed": passed,
                "note": "outputs matched the reference" if passed else
                        f"outputs differ from the reference (relative error {distance:.3g})",
                "torch_results_matching": matching_projections(
                    evidence, ref.ghost_outputs64, reply["probe"], self.tolerance.rel_norm),
                "torch_results": evidence.get("projections_total", 0),
                "torch_bytes": evidence.get("torch_bytes", 0),
                "dispatch_escapes": evidence.get("dispatch_escapes", {}),
                "threads": evidence.get("threads", {}),
                "threads_alive": evidence.get("threads_alive", 0),
                "tampered_harness": evidence.get("tampered_harness", [])}


def ghost_position(last: int) -> int:
    """Where the ghost replay goes among the calls: a random place from the second call to
    `last`, never the first. A kernel may prepare state on its model's first call (weights
    transposed, a lookup table filled) by launching Triton; were the ghost that call, its
    no-op launches would leave the state unprepared for every trial after it. The first call
    being real tells a candidate nothing: it must compute every real call anyway."""
    import secrets

    return 1 + secrets.randbelow(max(last, 1))


def _probe() -> int:
    import secrets

    return secrets.randbits(62) + 1


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
