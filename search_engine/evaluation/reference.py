"""The trusted side: reference outputs in float64, computed in the parent process.

The sandbox child receives the reference model's weights and the trial seeds; it never
receives these outputs.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

from search_engine.problems import (
    TORCH_RNG_LOCK, Problem, exec_module, inputs_checksum, make_trial_inputs,
)


@dataclass
class ReferenceData:
    schedule: list[tuple[int, float, float]]
    init_seed: int
    init_inputs: list
    state_dict: dict
    checksums: list
    outputs64: list[list]            # per trial: float64 outputs (CPU)
    output_dtypes: list[str]         # native dtype of each output
    output_shapes: list[list[int]]
    input_bytes: int                 # native bytes of one trial's inputs
    flops: int                       # from torch's FlopCounterMode (matmul/conv/attention)
    defects: list[str] = field(default_factory=list)


def _as_list(out: Any) -> list:
    import torch

    return [out] if isinstance(out, torch.Tensor) else list(out)


def _floating_to(x, dtype, device):
    import torch

    if isinstance(x, torch.Tensor):
        return (x.to(dtype) if x.is_floating_point() else x).to(device)
    return x


def compute_reference(problem: Problem, schedule: list[tuple[int, float, float]],
                      init_seed: int, device: str) -> ReferenceData:
    with TORCH_RNG_LOCK:
        return _compute_reference(problem, schedule, init_seed, device)


def _compute_reference(problem: Problem, schedule: list[tuple[int, float, float]],
                       init_seed: int, device: str) -> ReferenceData:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    module = exec_module(problem.source, f"kernelhub_reference_{problem.source_hash}",
                         problem.path or f"<problem {problem.name}>")
    torch.manual_seed(init_seed)
    init_inputs = list(module.get_init_inputs())
    torch.manual_seed(init_seed)
    model = module.Model(*init_inputs).eval()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model64 = copy.deepcopy(model).double().to(device)
    model_native = model.to(device)

    outputs64, checksums, defects = [], [], []
    dtypes: list[str] = []
    shapes: list[list[int]] = []
    input_bytes = flops = 0
    for index, (seed, scale, shift) in enumerate(schedule):
        inputs = make_trial_inputs(module, seed, scale, shift)
        checksums.append(inputs_checksum(inputs))
        with torch.no_grad():
            if index == 0:
                native = _as_list(model_native(*[_floating_to(x, x.dtype, device) if
                                                 isinstance(x, torch.Tensor) else x
                                                 for x in inputs]))
                dtypes = [str(o.dtype) for o in native]
                shapes = [list(o.shape) for o in native]
                input_bytes = sum(x.numel() * x.element_size() for x in inputs
                                  if isinstance(x, torch.Tensor))
                counter = FlopCounterMode(display=False)
                with counter:
                    out = model64(*[_floating_to(x, torch.float64, device) for x in inputs])
                flops = int(counter.get_total_flops())
            else:
                out = model64(*[_floating_to(x, torch.float64, device) for x in inputs])
        out = [o.detach().cpu() for o in _as_list(out)]
        defect = degenerate_reason(out)
        if defect:
            defects.append(f"trial {index} (seed {seed}, scale {scale:g}, shift {shift:g}): {defect}")
        outputs64.append(out)
    return ReferenceData(
        schedule=list(schedule), init_seed=init_seed, init_inputs=init_inputs, state_dict=state,
        checksums=checksums, outputs64=outputs64, output_dtypes=dtypes, output_shapes=shapes,
        input_bytes=input_bytes, flops=flops, defects=defects,
    )


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


class ReferenceCache:
    """References per (problem, schedule, seed, device): the search evaluates many
    candidates of one problem."""

    def __init__(self, max_entries: int = 4):
        self._entries: dict[tuple, ReferenceData] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self.max_entries = max_entries

    def get(self, problem: Problem, schedule, init_seed: int, device: str) -> ReferenceData:
        key = (problem.source_hash, tuple(map(tuple, schedule)), init_seed, device)
        with self._lock:
            if key in self._entries:
                return self._entries[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # concurrent candidates of one problem compute it once
            with self._lock:
                if key in self._entries:
                    return self._entries[key]
            data = compute_reference(problem, schedule, init_seed, device)
            with self._lock:
                if len(self._entries) >= self.max_entries:
                    self._entries.pop(next(iter(self._entries)))
                self._entries[key] = data
            return data
