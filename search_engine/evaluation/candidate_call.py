"""One forward of the candidate in its sandbox, and the evidence of what it did.

`call` and `ghost` requests: the outputs are copied at once (or kept on the device, or
exported as shared buffers), and the evidence says which kernels ran, on which streams,
whether the inputs were changed or aliased, and how much torch and host work happened
beside the candidate's kernels. A mixin of `child.CandidateServer`; imports nothing but
the standard library and `wire` at module level (see `child`).
"""

from __future__ import annotations

from search_engine.evaluation import wire


class CandidateCalls:
    """The forward calls of `CandidateServer` (its model, input sets, recorders and kept
    outputs)."""

    def on_call(self, header: dict, tensors: list) -> tuple[dict, list]:
        """One forward. Every call is made the same way: fresh memory filled with data-like
        values, torch results projected, the whole watch on; in the one the parent chose as
        the ghost (`ghost`, present in every call's header) the launches also do nothing.
        The parent decides which call that is, and judges it itself."""
        return self._shared_call(header, ghost=bool(header.get("ghost")))

    def on_ghost(self, header: dict, tensors: list) -> tuple[dict, list]:
        return self._shared_call(header, ghost=True)

    def _shared_call(self, header: dict, ghost: bool) -> tuple[dict, list]:
        reply = self._call(int(header["set"]), ghost=ghost, keep=header.get("keep"),
                           share=bool(header.get("share")), probe=int(header.get("probe", 0)))
        self._return_large_outputs()
        return reply

    def _call(self, which: int, ghost: bool, keep: str | None = None,
              share: bool = False, probe: int = 0) -> tuple[dict, list]:
        torch = self.torch
        from contextlib import ExitStack

        from search_engine.evaluation.call_watch import (
            poisoned_allocations, python_threads, result_spotter, tampered_harness,
        )

        self.profiler_ready.wait()  # no forward beside the profiler's start (its torch calls)
        inputs = self.sets[which]
        # Shared inputs are watched (and restored) by the problem's sandbox, which owns them.
        watched_here = which not in self.staged_shared
        pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs] \
            if watched_here else None
        mark = self.recorder.mark()
        before = self._watched_counts()
        aten_before = dict(self.aten.inside_kernel) if self.aten else {}
        compute_before = dict(self.aten.compute) if self.aten else {}
        scalars_before = dict(self.aten.scalar_reads) if self.aten else {}
        threads_before = python_threads()
        numels = [int(torch.Size(s).numel()) for s in self.output_shapes]
        own_before = self.recorder.own_launches
        spotter = result_spotter(numels, probe or 1, lambda: self.recorder.in_launch,
                                 keep_shapes=self.output_shapes if share and ghost else None,
                                 launches=lambda: self.recorder.own_launches - own_before)
        torch_bytes_before = self.aten.bytes if self.aten else 0
        if self.work is not None:
            self.work.begin()
        with ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            # below the work recorder: its fills are ours, not the candidate's
            stack.enter_context(poisoned_allocations(probe ^ 0x5DEECE66D))
            if ghost:
                self._noop(True)
                stack.callback(self._noop, False)
            stack.enter_context(spotter)
            if self.aten is not None:
                stack.enter_context(self.aten)
            self.in_forward = True
            stack.callback(setattr, self, "in_forward", False)
            out = self.model(*inputs)
        if self.gpu:
            torch.cuda.synchronize()
        new_threads = len(python_threads() - threads_before)
        try:
            outputs = wire.plain_tensors(out, self.max_outputs)
        except TypeError as exc:
            raise OutputRejected(str(exc)) from None
        # Copied now: a later call cannot repair (or spoil) what this one returned.
        if share:  # exporting copies them (after the size check below)
            copies = [o.detach() for o in outputs]
        elif keep:
            copies = [o.detach().clone() for o in outputs]
            self.kept[keep] = copies
        else:
            copies = [o.detach().to("cpu", copy=True) for o in outputs]
        size = sum(o.numel() * o.element_size() for o in copies)
        if size > self.max_output_bytes:
            raise OutputRejected(f"forward returned {size} bytes of outputs, over the "
                            f"{self.max_output_bytes} the reference's outputs allow")
        launches = self.recorder.since(mark)
        after = self._watched_counts()
        evidence = {
            "own_launches": sum(1 for launch in launches if launch.own),
            "other_launches": sorted({launch.name for launch in launches if not launch.own}),
            "streams": sorted({launch.stream for launch in launches
                               if launch.own and launch.stream is not None}),
            "mutations": _mutations(inputs, pristine) if watched_here else [],
            "aliases": _aliases(outputs, inputs),
            "kernel_seconds": sum(launch.seconds for launch in launches if launch.own),
            "kernel_bytes": self.work.unique_bytes() if self.work is not None else
            sum(launch.arg_bytes for launch in launches if launch.own),
            "torch_in_kernel": _grown(aten_before, self.aten.inside_kernel) if self.aten else {},
            "torch_bytes": (self.aten.bytes - torch_bytes_before) if self.aten else 0,
            "torch_compute": _grown(compute_before, self.aten.compute) if self.aten else {},
            "dispatch_scalar_reads": _grown(scalars_before, self.aten.scalar_reads)
            if self.aten else {},
            **{k: _grown(before[k], after[k]) for k in before},
            "threads_alive": new_threads,
            "tampered_harness": tampered_harness(self.harness),
            "host_callables": dict(self.recorder.host_callables),
            # each: numel, projection, norm, the candidate's launches after it
            "projections": [[n, float(p), float(m), self.recorder.own_launches - own_before - k]
                            for n, p, m, k in spotter.found[:MAX_PROJECTIONS]],
            "projections_total": len(spotter.found),
            "spotted": len(spotter.kept),
        }
        if not ghost and watched_here:
            for i, x in enumerate(inputs):  # a mutating candidate must not poison later calls
                if isinstance(x, torch.Tensor):
                    x.copy_(pristine[i])
        if share:
            return {"ok": True, "evidence": evidence, "n_outputs": len(copies),
                    **self._export(copies + spotter.kept)}, []
        if keep:
            return {"ok": True, "evidence": evidence, "kept": keep}, []
        return {"ok": True, "evidence": evidence}, copies


MAX_PROJECTIONS = 4096  # more torch results of an output's size than this is itself flagged


class OutputRejected(TypeError):
    """What forward returned cannot be an answer (not plain tensors, too many, too big)."""


def _grown(before: dict, after: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}


def _storage_span(t) -> tuple[int, int]:
    start = t.untyped_storage().data_ptr()
    return start, start + t.untyped_storage().nbytes()


def _aliases(outputs: list, inputs: list) -> list[str]:
    import torch

    found = []
    for oi, o in enumerate(outputs):
        o0, o1 = _storage_span(o)
        for ii, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.numel() and o.numel():
                x0, x1 = _storage_span(x)
                if o0 < x1 and x0 < o1:
                    found.append(f"output {oi} shares memory with input {ii}")
    return found


def _mutations(inputs: list, pristine: list) -> list[str]:
    import torch

    found = []
    for i, (x, p) in enumerate(zip(inputs, pristine)):
        if isinstance(x, torch.Tensor) and not torch.equal(x, p):
            changed = (x != p).sum().item() if x.shape == p.shape else x.numel()
            found.append(f"input {i}: {changed} of {p.numel()} elements changed")
    return found
