"""The problem's side of an evaluation: `python -m search_engine.evaluation.reference_child`.

Uploaded problem code is untrusted, so it runs in a sandbox of its own, never in the
evaluator (or the web server, or a worker). This process builds the reference `Model`,
draws every trial's inputs, computes the float64 reference outputs, and times the eager and
torch.compile baselines. It never meets a candidate. The parent keeps what it answers and
passes inputs to the candidate's sandbox one call at a time.

Requests: `setup` (returns the plan as adapted, init inputs, weights, dtypes, FLOPs),
`trial` (one trial's inputs and float64 outputs), `baselines`, `exit`.

With `--resident` (GPU targets) nothing large leaves the device: `setup` keeps no trial;
`open` draws one trial's inputs on the GPU, computes its float64 reference there and
exports the inputs as shared buffers (`device_share`); `judge` imports the candidate's
shared outputs and compares them on the GPU, answering with numbers and small samples
only; `close` frees the trial. Peak memory is a few times one trial, not the whole plan.
Those three requests are `reference_resident.ResidentTrials`'.
"""

from __future__ import annotations

import argparse
import copy
import os
import socket
import sys
import traceback
from pathlib import Path

from search_engine.evaluation import wire
from search_engine.evaluation.reference_resident import ResidentTrials
from search_engine.evaluation.reference_shapes import SecondShapeTrial
from search_engine.evaluation.reference_tensors import (  # noqa: F401 (degenerate_reason: public)
    _as_list, _on, _tensor_bytes, degenerate_reason,
)


# Tried in order when a trial's (scale, shift) makes the reference output degenerate
# (e.g. HardSigmoid of torch.rand + 3 is 1 everywhere): milder versions of the same idea.
# Scale factors multiply sqrt(scale), shift factors multiply shift; the last is the base
# distribution itself.
ADAPTATIONS = ((1.0, 0.25), (1.0, 0.1), (0.5, 0.0), (None, None))


class ReferenceServer(ResidentTrials, SecondShapeTrial):
    def __init__(self, sock: socket.socket, device: str, resident: bool = False):
        import torch

        self.sock, self.device, self.torch = sock, device, torch
        self.resident = resident
        self.module = self.model = self.model64 = None
        self.trials: list[tuple[list, list]] = []  # (inputs, float64 outputs) per trial
        self.schedule: list[tuple[int, float, float]] = []  # as adapted by setup
        self.open_trials: dict[str, dict] = {}
        self.chunk_bytes = 0  # inputs above this: float64 reference in batch slices
        self.reference_method = "float64, whole trial"
        # the outputs' dtypes and shapes and the model's FLOPs, from the first trial's draw
        self.output_meta: tuple[list[str], list[list[int]], int] | None = None
        self.sharer = None
        if resident:
            from search_engine.evaluation.device_share import Sharer, backend_for

            self.sharer = Sharer(backend_for(device))

    def serve(self) -> None:
        wire.send(self.sock, {"kind": "ready", "pid": os.getpid()})
        while True:
            header, tensors = wire.recv(self.sock, 1 << 40, max_fds=wire.MAX_FDS)
            kind = header.get("kind")
            if kind == "exit":
                wire.send(self.sock, {"kind": "bye", "re": header.get("id")})
                return
            handler = getattr(self, f"on_{kind}", None) if kind in REQUESTS else None
            fds: list[int] = []
            try:
                if handler is None:
                    raise ValueError(f"unknown request {kind!r}")
                reply, out = handler(header)
                fds = reply.pop("send_fds", [])
            except BaseException as exc:  # noqa: BLE001 - the problem's failure, reported
                reply = {"ok": False, "message": f"{type(exc).__name__}: {exc}"[:2000],
                         "traceback": traceback.format_exc(limit=8)[-4000:]}
                out = []
            wire.close_fds(header.pop("fds", []))  # those no handler took
            wire.send(self.sock, {"kind": "reply", "re": header.get("id"), **reply}, out, fds)

    def on_setup(self, header: dict) -> tuple[dict, list]:
        torch = self.torch
        from search_engine.problems import exec_module

        problem_file = header["problem_file"]
        self.chunk_bytes = int(header.get("reference_chunk_bytes", 0))
        self.module = exec_module(Path(problem_file).read_text(), "kernelhub_problem",
                                  problem_file)
        seed = int(header["seed"])
        torch.manual_seed(seed)
        init_inputs = list(self.module.get_init_inputs())
        torch.manual_seed(seed)
        model = self.module.Model(*init_inputs).eval()
        state = model.state_dict()
        if torch.device(self.device).type == "cpu":  # the model stays here: keep its weights
            state = {k: v.detach().clone() for k, v in state.items()}  # as they were built
        # copies are made on the device, never on the host: a model of gigabytes of weights
        # then holds its host memory once (the weights sent to the parent), not four times
        self.model = model.to(self.device)
        self.model_meta = copy.deepcopy(self.model).to("meta")
        self.model64 = copy.deepcopy(self.model).double()
        self.output_meta = None

        schedule, notes, defects = [], [], []
        input_bytes = 0
        for index, (trial_seed, scale, shift) in enumerate(header["schedule"]):
            inputs, out, used, note = self._informative_trial(int(trial_seed), float(scale),
                                                              float(shift))
            if note:
                notes.append(f"trial {index}: {note}")
            if index == 0:
                input_bytes = sum(x.numel() * x.element_size() for x in inputs
                                  if isinstance(x, torch.Tensor))
            defect = degenerate_reason(out, self.output_meta[0])
            if defect:  # degenerate on the problem's own input distribution
                defects.append(f"trial {index} (seed {trial_seed}, scale {scale:g}, "
                               f"shift {shift:g}): {defect}")
            schedule.append([trial_seed, *used])
            if self.resident:
                del inputs, out  # drawn again on the device when a candidate needs them
                self._free()
            else:
                self.trials.append((inputs, out))
        self.schedule = [tuple(t) for t in schedule]
        dtypes, shapes, flops = self.output_meta
        init_slots, init_tensors = wire.encode_values(init_inputs)
        reply = {"ok": True, "init": init_slots, "state_keys": list(state),
                 "state_offset": len(init_tensors), "schedule": schedule, "notes": notes,
                 "defects": defects, "output_dtypes": dtypes, "output_shapes": shapes,
                 "input_bytes": input_bytes, "flops": flops,
                 "reference_method": self.reference_method}
        return reply, init_tensors + list(state.values())

    def _outputs_and_flops(self, inputs: list) -> tuple[list[str], list[list[int]], int]:
        """The outputs' dtypes and shapes and the model's FLOPs, from a forward on the meta
        device (nothing materialised: a whole-trial float64 forward of an official-size
        problem would need several times the trial on the GPU); on the device when the
        model cannot run on meta (data-dependent shapes)."""
        from torch.utils.flop_counter import FlopCounterMode

        torch = self.torch
        counter = FlopCounterMode(display=False)
        try:
            meta = [torch.empty_like(x, device="meta") if isinstance(x, torch.Tensor) else x
                    for x in inputs]
            with counter, torch.no_grad():
                native = _as_list(self.model_meta(*meta))
        except Exception:  # noqa: BLE001 - any op without a meta kernel: run it for real
            with torch.no_grad():
                native = _as_list(self.model(*_on(inputs, None, self.device)))
            counter = FlopCounterMode(display=False)
            with counter, torch.no_grad():
                self.model64(*_on(inputs, torch.float64, self.device))
        return ([str(o.dtype) for o in native], [list(o.shape) for o in native],
                int(counter.get_total_flops()))

    def _informative_trial(self, seed: int, scale: float, shift: float):
        """The trial's inputs and float64 outputs; when (scale, shift) makes a reference that
        is informative on its own inputs degenerate, or takes its inputs out of the domain
        the reference accepts (probabilities for binary cross-entropy, say: it raises), a
        milder (scale, shift) instead. On the base distribution a raise is the problem's."""
        inputs = self._draw(seed, scale, shift)
        if self.output_meta is None:  # the first trial: what the model returns, in which dtypes
            self.output_meta = self._outputs_and_flops(inputs)
        native = self.output_meta[0]
        if (scale, shift) == (1.0, 0.0):  # the problem's own distribution: no adapting
            return inputs, self._reference64(inputs), (scale, shift), ""
        out, why, failure = self._judged_reference(inputs, native)
        if not why:
            return inputs, out, (scale, shift), ""
        for scale_factor, shift_factor in ADAPTATIONS:
            if scale_factor is None:
                alt_scale, alt_shift = 1.0, 0.0
            else:
                alt_scale, alt_shift = scale_factor * scale ** 0.5, shift_factor * shift
            candidate = self._draw(seed, alt_scale, alt_shift)
            alt_out, alt_why, _ = self._judged_reference(candidate, native)
            if not alt_why:
                return (candidate, alt_out, (alt_scale, alt_shift),
                        f"scale {scale:g}, shift {shift:g} made the reference degenerate "
                        f"({why[:300]}); used scale {alt_scale:.3g}, shift {alt_shift:.3g}")
        if failure is not None:
            raise failure
        return inputs, out, (scale, shift), ""

    def _judged_reference(self, inputs: list, native: list[str]):
        """(float64 outputs, why they cannot judge a kernel or '', the exception raised)."""
        try:
            out = self._reference64(inputs)
        except Exception as exc:  # noqa: BLE001 - an input outside the reference's domain
            if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
                raise  # a milder draw of the same size would not fit either
            return None, f"the reference raised {type(exc).__name__}: {exc}", exc
        return out, degenerate_reason(out, native), None

    def _draw(self, seed: int, scale: float, shift: float) -> list:
        """One trial's inputs; resident: drawn on the device (`get_inputs()` under a CUDA
        default device, so nothing large is made on the host)."""
        from search_engine.problems import make_trial_inputs

        if not self.resident:
            return make_trial_inputs(self.module, seed, scale, shift)
        with self.torch.device(self.device):
            inputs = make_trial_inputs(self.module, seed, scale, shift)
        return _on(inputs, None, self.device)

    def _reference64(self, inputs: list) -> list:
        torch = self.torch
        if self.resident and self.chunk_bytes and _tensor_bytes(inputs) > self.chunk_bytes:
            out = self._reference64_in_batches(inputs)
            if out is not None:
                return out
        with torch.no_grad():
            out = _as_list(self.model64(*_on(inputs, torch.float64, self.device)))
        if self.resident:
            return [o.detach() for o in out]
        return [o.detach().cpu() for o in out]

    def _reference64_in_batches(self, inputs: list) -> list | None:
        """The float64 reference one slice of the batch at a time, so that the float64
        copy of the inputs and the model's temporaries never exist for the whole trial.
        Only for a model whose outputs are row-for-row functions of its inputs' rows,
        which is checked first (a slice's native output must equal the whole batch's);
        None means "compute it whole"."""
        torch = self.torch
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        batch = tensors[0].shape[0] if tensors and tensors[0].dim() else 0
        if batch < 2 or any(t.dim() == 0 or t.shape[0] != batch for t in tensors):
            return None
        step = max(1, int(batch * self.chunk_bytes // max(_tensor_bytes(inputs), 1) // 4))
        if step >= batch:
            return None
        rows = lambda xs, a, b: [x[a:b] if isinstance(x, torch.Tensor) else x for x in xs]
        try:
            with torch.no_grad():
                whole = _as_list(self.model(*inputs))
                part = _as_list(self.model(*rows(inputs, 0, step)))
                if len(whole) != len(part) or any(
                        w.dim() == 0 or w.shape[0] != batch or p.shape != w[:step].shape
                        or not torch.allclose(p, w[:step], rtol=1e-5, atol=1e-6, equal_nan=True)
                        for w, p in zip(whole, part)):
                    return None
                shapes = [w.shape for w in whole]
                del whole, part
                out = [torch.empty(s, dtype=torch.float64, device=self.device) for s in shapes]
                for start in range(0, batch, step):
                    piece = _as_list(self.model64(*_on(rows(inputs, start, start + step),
                                                       torch.float64, self.device)))
                    for o, p in zip(out, piece):
                        o[start:start + step] = p
                    del piece
        except Exception:  # noqa: BLE001 - any doubt: the whole-trial reference decides
            return None
        self.reference_method = f"float64 in batch slices of {step} rows (checked row-wise)"
        return out

    def _free(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.empty_cache()

    def on_trial(self, header: dict) -> tuple[dict, list]:
        inputs, out = self.trials[int(header["index"])]
        slots, tensors = wire.encode_values(inputs)
        return {"ok": True, "inputs": slots, "n_outputs": len(out)}, tensors + list(out)

    def on_baselines(self, header: dict) -> tuple[dict, list]:
        from search_engine.evaluation.baseline_precision import time_baselines
        from search_engine.evaluation.timing import time_gpu, time_interpreter

        torch = self.torch
        t = header["timing"]
        if self.resident:
            sets = [self._draw(*self.schedule[i]) for i in range(int(header["sets"]))]
        else:
            sets = [_on(inputs, None, self.device) for inputs, _ in self.trials[:int(header["sets"])]]
        gpu = self.device == "cuda"

        def measure(model):
            def call(inputs):
                with torch.no_grad():
                    return model(*inputs)
            if not gpu:
                return time_interpreter(call, sets, reps=t["interpreter_reps"],
                                        keep_outputs=False).stats()
            return time_gpu(call, sets, l2_bytes=t["l2_bytes"], warmup_ms=t["warmup_ms"],
                            min_timing_ms=t["min_timing_ms"], min_reps=t["min_reps"],
                            max_reps=t["max_reps"], l2_flush_factor=t["l2_flush_factor"],
                            keep_outputs=False).stats()

        if self.resident:
            reference64 = lambda: self._reference64(sets[0])  # noqa: E731
        else:
            reference64 = lambda: self.trials[0][1]  # noqa: E731
        timing = time_baselines(self.model, sets, measure, reference64,
                                policy=header.get("policy", "strict"), device=self.device,
                                compile_too=header.get("compile", True),
                                expected_dtypes=self.output_meta[0],
                                problem_dtype=header.get("problem_dtype", "float32"))
        sets.clear()  # the trials drawn for timing go before the reply
        self._free()
        return {"ok": True, "timing": timing}, []


REQUESTS = ("setup", "trial", "shape_trial", "baselines", "open", "judge", "close")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sock", type=int, required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--resident", action="store_true",
                        help="keep trials in this process; share buffers, never send tensors")
    args = parser.parse_args(argv)
    wire.run_server(args.sock, lambda sock: ReferenceServer(sock, args.device, args.resident))
    return 0


if __name__ == "__main__":
    sys.exit(main())
