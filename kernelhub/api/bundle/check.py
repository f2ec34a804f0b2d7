#!/usr/bin/env python3
"""Re-verify an exported KernelHub kernel, standalone (needs torch and triton only).

    python check.py                 # correctness on 5 trials, then timing vs eager PyTorch
    python check.py --no-timing     # correctness only
    python check.py --json          # also print the report as JSON on the last line

It loads `reference.py` (the problem: Model, get_inputs, get_init_inputs) and `kernel.py`
(ModelNew), builds both with the same seed and weights, and compares ModelNew's outputs
with a float64 run of the reference, within the tolerance recorded in `metrics.json`.
Without a GPU it runs the Triton kernels in the interpreter (TRITON_INTERPRET=1, set
before triton is imported); such timings are for information only.

Exit status: 0 all trials match, 1 a trial does not, 2 the check could not run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--reps", type=int, default=0, help="timed repetitions (default: "
                        "100 on a GPU, 3 in the interpreter)")
    parser.add_argument("--rtol", type=float, default=None)
    parser.add_argument("--atol-rms", type=float, default=None)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def flatten(output):
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in flatten(item)]
    return [output]


def to_device(value, device, double=False):
    import torch

    if isinstance(value, torch.Tensor):
        value = value.to(device)
        return value.double() if double and value.is_floating_point() else value
    return value


def compare(got, expected, rtol, atol_rms) -> tuple[bool, float, str]:
    import torch

    got_list, expected_list = flatten(got), flatten(expected)
    if len(got_list) != len(expected_list):
        return False, float("inf"), f"{len(got_list)} outputs, expected {len(expected_list)}"
    worst = 0.0
    for g, e in zip(got_list, expected_list):
        if not isinstance(e, torch.Tensor):
            if g != e:
                return False, float("inf"), f"non-tensor output {g!r} != {e!r}"
            continue
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(e.shape):
            return False, float("inf"), f"shape {getattr(g, 'shape', type(g))} != {tuple(e.shape)}"
        g64, e64 = g.detach().double().cpu(), e.detach().double().cpu()
        if not torch.isfinite(g64).all() and torch.isfinite(e64).all():
            return False, float("inf"), "non-finite values where the reference has none"
        diff = (g64 - e64).abs()
        rms = e64.pow(2).mean().sqrt().item() if e64.numel() else 0.0
        bound = atol_rms * rms + rtol * e64.abs()
        worst = max(worst, diff.max().item() if diff.numel() else 0.0)
        if (diff > bound).any():
            return False, worst, (f"max abs error {worst:.3e} exceeds "
                                  f"atol {atol_rms}·rms + rtol {rtol}·|ref|")
    return True, worst, ""


def time_ms(fn, device, reps):
    import torch

    fn()  # warm-up (compiles the Triton kernels)
    samples = []
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # must precede `import triton`
    metrics = json.loads((HERE / "metrics.json").read_text())
    tolerance = metrics.get("tolerance", {})
    rtol = args.rtol if args.rtol is not None else tolerance.get("rtol", 1e-3)
    atol_rms = args.atol_rms if args.atol_rms is not None else tolerance.get("atol_rms", 1e-4)

    reference = load_module("kernelhub_reference", HERE / "reference.py")
    kernel = load_module("kernelhub_kernel", HERE / "kernel.py")
    init_inputs = reference.get_init_inputs()
    torch.manual_seed(args.seed)
    ref_model = reference.Model(*init_inputs)
    torch.manual_seed(args.seed)
    new_model = kernel.ModelNew(*init_inputs)
    try:  # same weights when the parameter names match; same seed otherwise
        new_model.load_state_dict(ref_model.state_dict())
    except (RuntimeError, KeyError):
        pass
    ref64 = load_module("kernelhub_reference64", HERE / "reference.py").Model(*init_inputs)
    ref64.load_state_dict(ref_model.state_dict())
    ref64 = ref64.to(device).double().eval()
    ref_model = ref_model.to(device).eval()
    new_model = new_model.to(device).eval()

    report = {"device": device, "interpreter": device == "cpu", "trials": [], "correct": True,
              "tolerance": {"rtol": rtol, "atol_rms": atol_rms}}
    with torch.no_grad():
        for trial in range(args.trials):
            torch.manual_seed(args.seed + 7919 * trial)
            inputs = reference.get_inputs()
            expected = ref64(*[to_device(x, device, double=True) for x in inputs])
            got = new_model(*[to_device(x, device) for x in inputs])
            ok, err, why = compare(got, expected, rtol, atol_rms)
            report["trials"].append({"trial": trial, "passed": ok, "max_abs_error": err,
                                     "note": why})
            report["correct"] &= ok
            print(f"trial {trial}: {'ok' if ok else 'FAILED'}  max abs error {err:.3e}"
                  + (f"  ({why})" if why else ""))

        if report["correct"] and not args.no_timing:
            torch.manual_seed(args.seed)
            inputs = [to_device(x, device) for x in reference.get_inputs()]
            reps = args.reps or (100 if device == "cuda" else 3)
            eager = time_ms(lambda: ref_model(*inputs), device, reps)
            candidate = time_ms(lambda: new_model(*inputs), device, reps)
            report["timing"] = {"eager_ms": eager, "candidate_ms": candidate,
                                "speedup_vs_eager": eager / candidate if candidate else None,
                                "method": "cuda_events" if device == "cuda" else "interpreter"}
            label = "" if device == "cuda" else "  (interpreter: not a GPU timing)"
            print(f"eager {eager:.4f} ms, kernel {candidate:.4f} ms, speedup "
                  f"{eager / candidate:.2f}x{label}")
            recorded = metrics.get("speedup_vs_eager")
            if recorded is not None and device == "cuda":
                print(f"recorded at approval on {metrics.get('hardware')}: {recorded:.2f}x")

    print("correct" if report["correct"] else "INCORRECT")
    if args.json:
        print(json.dumps(report))
    return 0 if report["correct"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception as exc:  # a broken environment is not a verdict on the kernel
        print(f"check could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
