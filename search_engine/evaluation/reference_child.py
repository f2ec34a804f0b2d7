"""The problem's side of an evaluation: `python -m search_engine.evaluation.reference_child`.

Uploaded problem code is untrusted, so it runs in a sandbox of its own, never in the
evaluator (or the web server, or a worker). This process builds the reference `Model`,
draws every trial's inputs, computes the float64 reference outputs, and times the eager and
torch.compile baselines. It never meets a candidate. The parent keeps what it answers and
passes inputs to the candidate's sandbox one call at a time.

Requests: `setup` (returns the plan as adapted, init inputs, weights, dtypes, FLOPs),
`trial` (one trial's inputs and float64 outputs), `baselines`, `exit`.
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

# Tried in order when a trial's (scale, shift) makes the reference output degenerate
# (e.g. HardSigmoid of torch.rand + 3 is 1 everywhere): milder versions of the same idea.
# Scale factors multiply sqrt(scale), shift factors multiply shift; the last is the base
# distribution itself.
ADAPTATIONS = ((1.0, 0.25), (1.0, 0.1), (0.5, 0.0), (None, None))


class ReferenceServer:
    def __init__(self, sock: socket.socket, device: str):
        import torch

        self.sock, self.device, self.torch = sock, device, torch
        self.module = self.model = self.model64 = None
        self.trials: list[tuple[list, list]] = []  # (inputs, float64 outputs) per trial

    def serve(self) -> None:
        wire.send(self.sock, {"kind": "ready", "pid": os.getpid()})
        while True:
            header, tensors = wire.recv(self.sock, 1 << 40)
            kind = header.get("kind")
            if kind == "exit":
                wire.send(self.sock, {"kind": "bye", "re": header.get("id")})
                return
            handler = getattr(self, f"on_{kind}", None) if kind in ("setup", "trial",
                                                                     "baselines") else None
            try:
                if handler is None:
                    raise ValueError(f"unknown request {kind!r}")
                reply, out = handler(header)
            except BaseException as exc:  # noqa: BLE001 - the problem's failure, reported
                reply = {"ok": False, "message": f"{type(exc).__name__}: {exc}"[:2000],
                         "traceback": traceback.format_exc(limit=8)[-4000:]}
                out = []
            wire.send(self.sock, {"kind": "reply", "re": header.get("id"), **reply}, out)

    def on_setup(self, header: dict) -> tuple[dict, list]:
        torch = self.torch
        from torch.utils.flop_counter import FlopCounterMode

        from search_engine.problems import exec_module

        problem_file = header["problem_file"]
        self.module = exec_module(Path(problem_file).read_text(), "kernelhub_problem",
                                  problem_file)
        seed = int(header["seed"])
        torch.manual_seed(seed)
        init_inputs = list(self.module.get_init_inputs())
        torch.manual_seed(seed)
        model = self.module.Model(*init_inputs).eval()
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.model64 = copy.deepcopy(model).double().to(self.device)
        self.model = model.to(self.device)

        schedule, notes, defects = [], [], []
        dtypes: list[str] = []
        shapes: list[list[int]] = []
        input_bytes = flops = 0
        for index, (trial_seed, scale, shift) in enumerate(header["schedule"]):
            inputs, out, used, note = self._informative_trial(int(trial_seed), float(scale),
                                                              float(shift))
            if note:
                notes.append(f"trial {index}: {note}")
            if index == 0:
                with torch.no_grad():
                    native = _as_list(self.model(*_on(inputs, None, self.device)))
                dtypes = [str(o.dtype) for o in native]
                shapes = [list(o.shape) for o in native]
                input_bytes = sum(x.numel() * x.element_size() for x in inputs
                                  if isinstance(x, torch.Tensor))
                counter = FlopCounterMode(display=False)
                with counter, torch.no_grad():
                    self.model64(*_on(inputs, torch.float64, self.device))
                flops = int(counter.get_total_flops())
            defect = degenerate_reason(out)
            if defect:  # degenerate on the problem's own input distribution
                defects.append(f"trial {index} (seed {trial_seed}, scale {scale:g}, "
                               f"shift {shift:g}): {defect}")
            schedule.append([trial_seed, *used])
            self.trials.append((inputs, out))
        init_slots, init_tensors = wire.encode_values(init_inputs)
        reply = {"ok": True, "init": init_slots, "state_keys": list(state),
                 "state_offset": len(init_tensors), "schedule": schedule, "notes": notes,
                 "defects": defects, "output_dtypes": dtypes, "output_shapes": shapes,
                 "input_bytes": input_bytes, "flops": flops}
        return reply, init_tensors + list(state.values())

    def _informative_trial(self, seed: int, scale: float, shift: float):
        """The trial's inputs and float64 outputs; when (scale, shift) makes a reference that
        is informative on its own inputs degenerate, a milder (scale, shift) instead."""
        from search_engine.problems import make_trial_inputs

        inputs = make_trial_inputs(self.module, seed, scale, shift)
        out = self._reference64(inputs)
        if not degenerate_reason(out) or (scale, shift) == (1.0, 0.0):
            return inputs, out, (scale, shift), ""
        for scale_factor, shift_factor in ADAPTATIONS:
            if scale_factor is None:
                alt_scale, alt_shift = 1.0, 0.0
            else:
                alt_scale, alt_shift = scale_factor * scale ** 0.5, shift_factor * shift
            candidate = make_trial_inputs(self.module, seed, alt_scale, alt_shift)
            alt_out = self._reference64(candidate)
            if not degenerate_reason(alt_out):
                return (candidate, alt_out, (alt_scale, alt_shift),
                        f"scale {scale:g}, shift {shift:g} made the reference degenerate "
                        f"({degenerate_reason(out)}); used scale {alt_scale:.3g}, "
                        f"shift {alt_shift:.3g}")
        return inputs, out, (scale, shift), ""

    def _reference64(self, inputs: list) -> list:
        torch = self.torch
        with torch.no_grad():
            out = self.model64(*_on(inputs, torch.float64, self.device))
        return [o.detach().cpu() for o in _as_list(out)]

    def on_trial(self, header: dict) -> tuple[dict, list]:
        inputs, out = self.trials[int(header["index"])]
        slots, tensors = wire.encode_values(inputs)
        return {"ok": True, "inputs": slots, "n_outputs": len(out)}, tensors + list(out)

    def on_baselines(self, header: dict) -> tuple[dict, list]:
        from search_engine.evaluation.timing import time_gpu, time_interpreter

        torch = self.torch
        t = header["timing"]
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

        timing = {"eager": measure(self.model)}
        if gpu and header.get("compile", True):
            try:
                compiled = torch.compile(self.model)
                with torch.no_grad():
                    compiled(*sets[0])
                timing["compile"] = measure(compiled)
            except Exception as exc:  # a baseline failure must not sink the candidate
                timing["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                     "method": f"failed: {type(exc).__name__}: {exc}"[:300]}
        elif not gpu:
            timing["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                 "method": "interpreter: torch.compile not timed"}
        return {"ok": True, "timing": timing}, []


def degenerate_reason(outputs: list) -> str:
    """Why a reference output cannot tell right from wrong, or '' when it can."""
    import torch

    for i, o in enumerate(outputs):
        if not o.is_floating_point():
            continue
        if not torch.isfinite(o).all():
            return f"output {i} contains NaN or Inf"
        if o.numel() == 0:
            return f"output {i} is empty"
        peak = float(o.abs().max())
        if peak < 1e-10:
            return f"output {i} is all (near) zero (max |ref| = {peak:.3g})"
        if o.numel() > 1 and float(o.max() - o.min()) <= 1e-12 * peak:
            return f"output {i} is constant ({float(o.flatten()[0]):.6g} everywhere)"
    return ""


def _as_list(out) -> list:
    import torch

    return [out] if isinstance(out, torch.Tensor) else list(out)


def _on(inputs: list, float_dtype, device: str) -> list:
    import torch

    moved = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            x = x.to(float_dtype) if float_dtype is not None and x.is_floating_point() else x
            x = x.to(device)
        moved.append(x)
    return moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sock", type=int, required=True)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args(argv)
    wire.run_server(args.sock, lambda sock: ReferenceServer(sock, args.device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
