"""Resident trials in the problem's sandbox: `open`, `judge` and `close` requests.

`open` draws one trial's inputs on the device, keeps its float64 reference here and exports
the inputs as shared buffers (`device_share`) with a fingerprint of each; `judge` imports
the candidate's shared outputs, compares them on the device and answers with distances,
the inputs' mutations (restored by drawing the trial again) and values at the parent's
sample indices; `close` frees the trial. A mixin of `reference_child.ReferenceServer`;
imports only the standard library and `wire` at module level (see `reference_child`).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from search_engine.evaluation import wire


class ResidentTrials:
    """The resident requests of `ReferenceServer` (its `torch`, `device`, `sharer`, `schedule`,
    `open_trials`, `_draw`, `_reference64` and `_free`)."""

    def on_open(self, header: dict) -> tuple[dict, list]:
        """Trial `index`'s inputs as shared buffers; the reference stays here."""
        index = int(header["index"])
        seed, scale, shift = self.schedule[index]
        inputs = self._draw(int(seed), float(scale), float(shift))
        reference = self._reference64(inputs)
        self._free()
        tensors = [x for x in inputs if isinstance(x, self.torch.Tensor)]
        shared, fds, metas = self.sharer.export_all(tensors)
        slots, _ = wire.encode_values(inputs)
        del inputs, tensors  # the shared copies are the inputs from now on
        self._free()
        handle = f"t{index}-{os.urandom(4).hex()}"
        self.open_trials[handle] = {"reference": reference, "shared": shared,
                                    "draw": (int(seed), float(scale), float(shift)),
                                    "fingerprints": [_fingerprint(x.tensor) for x in shared]}
        return {"ok": True, "handle": handle, "inputs": slots, "shared": metas,
                "n_outputs": len(reference), "send_fds": fds}, []

    def on_judge(self, header: dict) -> tuple[dict, list]:
        """Compare the candidate's shared outputs with the open trial's reference; answer
        with errors, distances and values at the parent's sample indices."""
        from search_engine.evaluation.correctness import compare_trial, rel_norm_distance
        from search_engine.evaluation.result import TrialError
        from search_engine.evaluation.tolerances import Tolerance

        clock = _PartClock()
        trial = self.open_trials[header["handle"]]
        with clock.part("import"):
            got = self.sharer.import_all(header.pop("fds", []), header.get("shared", []))
        try:
            outputs = [s.tensor for s in got]
            reference = trial["reference"]
            groups = header.get("groups") or [len(outputs)]
            first = outputs[:groups[0]]
            with clock.part("inputs"):
                mutations = self._mutations(trial)
            with clock.part("compare"):
                reply: dict = {"ok": True, "mutations": mutations, "distances": [
                    rel_norm_distance(first, reference) if len(first) == len(reference)
                    else float("inf")], "spot_distances": []}
                for t in outputs[groups[0]:]:  # single tensors: do they equal any output?
                    reply["spot_distances"].append(min(
                        (rel_norm_distance([t], [r]) for r in reference if r.shape == t.shape),
                        default=float("inf")))
                if header.get("compare"):
                    tol = Tolerance(**header["compare"]["tolerance"])
                    verdict = compare_trial(int(header["compare"]["trial"]),
                                            int(header["compare"]["seed"]),
                                            first, reference,
                                            header["compare"]["dtypes"], tol)
                    reply["verdict"] = {f: getattr(verdict, f)
                                        for f in TrialError.__dataclass_fields__}
                if header.get("projections"):  # torch results the candidate's process projected
                    from search_engine.evaluation.call_watch import matching_projections

                    tol = float((header.get("compare") or {}).get("tolerance", {}).get(
                        "rel_norm", 1e-6))
                    reply["torch_answer_moved"] = matching_projections(
                        {"projections": header["projections"]}, reference, int(header["probe"]),
                        tol, launched_after=True)
            with clock.part("samples"):
                samples = self._samples(first, reference, header.get("sample"))
            reply["sampled_outputs"] = len(first) if samples else 0
        finally:
            with clock.part("release"):
                self.sharer.release_all(got)
        reply["seconds"] = clock.seconds
        return reply, samples

    def _mutations(self, trial: dict) -> list[str]:
        """Shared inputs the candidate changed (their fingerprint moved), restored by
        drawing the trial again: no private copy of the inputs is kept."""
        found = []
        for i, (shared, before) in enumerate(zip(trial["shared"], trial["fingerprints"])):
            if _fingerprint(shared.tensor) != before:
                found.append(f"input {i}: elements changed (fingerprint {before} -> "
                             f"{_fingerprint(shared.tensor)})")
        if found:
            fresh = [x for x in self._draw(*trial["draw"]) if isinstance(x, self.torch.Tensor)]
            for shared, x in zip(trial["shared"], fresh):
                shared.tensor.copy_(x)
        return found

    def _samples(self, outputs: list, reference: list, indices) -> list:
        """Outputs then references at the flat indices the parent chose (float64, host)."""
        if not indices:
            return []
        torch = self.torch
        picked = []
        for group in (outputs, reference):
            for t in group:
                where = torch.tensor(indices.get(str(t.numel()), []), dtype=torch.int64,
                                     device=t.device)
                flat = t.reshape(-1)
                picked.append(flat[where.clamp(max=max(flat.numel() - 1, 0))].double().cpu()
                              if flat.numel() else flat.double().cpu())
        return picked

    def on_close(self, header: dict) -> tuple[dict, list]:
        trial = self.open_trials.pop(header["handle"], None)
        if trial is not None:
            self.sharer.release_all(trial["shared"])
            del trial
            self._free()
        from search_engine.evaluation.device_share import device_memory

        return {"ok": True, "device_memory": device_memory(self.device == "cuda", self.sharer)}, []


class _PartClock:
    """Seconds per part of one judgement, for the screening's phases (where a judgement's
    time goes: the import of the outputs, the inputs' fingerprints, the comparison...).
    The parts that read the device end in a host read of their result, so their wall time
    holds their GPU time."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def part(self, name: str):
        begun = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - begun, 6)


FINGERPRINT_MODULUS = 1_000_003


def _fingerprint(t) -> list[int]:
    """Two integer sums over the tensor's bytes (plain and position-weighted, in chunks):
    any write a candidate makes to an input moves them."""
    import torch

    if not t.numel():
        return [0, 0]
    flat = t.reshape(-1).view(torch.uint8)
    if flat.numel() % 4 == 0:
        flat = flat.view(torch.int32)
        if flat.is_cuda:  # one read of the trial instead of a dozen
            from search_engine.evaluation.device_reductions import fingerprint_partials

            return fingerprint_partials(flat, FINGERPRINT_MODULUS)
    step = 1 << 24  # int64 temporaries of 128 MB
    plain = weighted = 0
    for start in range(0, flat.numel(), step):
        chunk = flat[start:start + step].to(torch.int64)
        plain += int(chunk.sum())
        weights = (torch.arange(start, start + chunk.numel(), device=chunk.device)
                   % FINGERPRINT_MODULUS + 1)
        weighted += int((chunk * weights).sum())
    return [plain, weighted]
