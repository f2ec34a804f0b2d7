"""The sandboxed side of an evaluation: `python -m search_engine.evaluation.child`.

It receives the problem, the candidate and the trial inputs (never the reference
outputs), runs the candidate, and sends back raw evidence: outputs (to a file), launches,
input mutation and aliasing evidence, timings, profiler kernel times and compiled
metadata. The trusted parent judges all of it.

Order matters: rlimits, the launch recorder and the baselines' timing all happen before
the candidate's code is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any


class Channel:
    """Control pipes to the parent. Under a wrapper such as ncu the pipes may not be
    inherited: then messages are dropped and replies are immediate."""

    def __init__(self, out_fd: int, in_fd: int):
        try:
            os.fstat(out_fd)
            self.out_fd = out_fd
            self.in_file = os.fdopen(in_fd, "r")
        except OSError:
            self.out_fd, self.in_file = None, None

    def send(self, **msg: Any) -> None:
        if self.out_fd is not None:
            os.write(self.out_fd, (json.dumps(msg, default=str) + "\n").encode())

    def wait_reply(self) -> str:
        return self.in_file.readline().strip() if self.in_file else "go"


def _as_tensor_list(out: Any) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise TypeError(f"forward returned {type(out).__name__}, expected a tensor or a tuple of tensors")


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


def _load_models(spec: dict, device: str):
    """The reference model (trusted weights from the parent) and the trial inputs,
    regenerated from the same seeds and checked against the parent's checksums."""
    import torch

    from search_engine.problems import (
        checksums_match, exec_module, inputs_checksum, make_trial_inputs,
    )

    data = torch.load(spec["inputs_file"], weights_only=True)
    problem = exec_module(Path(spec["problem_file"]).read_text(), "kernelhub_problem",
                          spec["problem_file"])
    init_inputs = data["init_inputs"]
    torch.manual_seed(spec["init_seed"])
    reference = problem.Model(*init_inputs)
    reference.load_state_dict(data["state_dict"])
    reference = reference.to(device).eval()
    trials = []
    for (seed, scale, shift), expected in zip(spec["schedule"], spec["checksums"]):
        inputs = make_trial_inputs(problem, seed, scale, shift)
        got = inputs_checksum(inputs)
        if not checksums_match(json.loads(json.dumps(got)), expected):
            raise RuntimeError(f"evaluator defect: trial inputs for seed {seed} differ between "
                               f"parent and sandbox ({got} != {expected})")
        trials.append([x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs])
    return problem, reference, init_inputs, data["state_dict"], trials


def _rel_norm_diff(a_list: list, b_list: list) -> float:
    import torch

    worst = 0.0
    for a, b in zip(a_list, b_list):
        if a.shape != b.shape:
            return float("inf")
        a, b = a.double(), b.double()
        denom = max(float(torch.linalg.vector_norm(b)), 1e-30)
        diff = float(torch.linalg.vector_norm(torch.nan_to_num(a - b, nan=1e30)))
        worst = max(worst, diff / denom)
    return worst


def _build_candidate(spec: dict, init_inputs: list, state_dict: dict, device: str):
    import torch

    from search_engine.problems import exec_module

    module = exec_module(Path(spec["candidate_file"]).read_text(), "kernelhub_candidate",
                         spec["candidate_file"])
    if not hasattr(module, "ModelNew"):
        raise AttributeError("the candidate defines no ModelNew")
    torch.manual_seed(spec["init_seed"])
    model = module.ModelNew(*init_inputs)
    try:
        model.load_state_dict(state_dict, strict=False)
    except RuntimeError:  # shape mismatches: keep what matches, the seed did the rest
        own = model.state_dict()
        model.load_state_dict(
            {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape},
            strict=False)
    return model.to(device).eval()


def _is_triton_compile_error(exc: BaseException) -> bool:
    """Kernels compile at their first launch: their failures are compile errors. The
    interpreter has no compile step; a missing name in a kernel is its equivalent."""
    for e in (exc, exc.__cause__, exc.__context__):
        if e is None:
            continue
        if type(e).__module__.startswith("triton.compiler"):
            return True
        if type(e).__name__ == "InterpreterError" and str(e).startswith(
                ("AttributeError", "NameError", "CompilationError")):
            return True
    return False


def _timing_call(model):
    import torch

    def call(inputs):
        with torch.no_grad():
            return model(*inputs)

    return call


def _time(spec: dict, fn, trials, gpu: bool, channel: Channel | None, what: str,
          pad: bool = True):
    from search_engine.evaluation.timing import time_gpu, time_interpreter

    t = spec["timing"]
    if not gpu:
        return time_interpreter(fn, trials, reps=t["interpreter_reps"])
    if channel:
        channel.send(event="request_gpu", what=what)
        channel.wait_reply()
    try:
        return time_gpu(fn, trials, l2_bytes=t["l2_bytes"], warmup_ms=t["warmup_ms"],
                        min_timing_ms=t["min_timing_ms"], min_reps=t["min_reps"],
                        max_reps=t["max_reps"], l2_flush_factor=t["l2_flush_factor"], pad=pad)
    finally:
        if channel:
            channel.send(event="release_gpu", what=what)


def _profile_device_time(fn, trials, iterations: int) -> dict[str, float]:
    """Device time per kernel name (microseconds) over a few calls, from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(iterations):
            fn(trials[i % len(trials)])
        torch.cuda.synchronize()
    per_kernel: dict[str, float] = {}
    for evt in prof.events():
        device_type = str(getattr(evt, "device_type", ""))
        if device_type.endswith("CUDA"):
            duration = getattr(evt, "device_time", None)
            if duration is None:
                duration = getattr(evt, "cuda_time", 0.0)
            per_kernel[evt.name] = per_kernel.get(evt.name, 0.0) + float(duration or 0.0)
    return per_kernel


def evaluate_in_child(spec: dict, channel: Channel) -> dict:
    phases: dict[str, float] = {}
    t_phase = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal t_phase
        now = time.perf_counter()
        phases[name] = round(now - t_phase, 4)
        t_phase = now
        channel.send(event="phase", phase=name)

    import torch
    import triton  # noqa: F401  (after TRITON_INTERPRET was set by the parent's environment)

    from search_engine.evaluation import timing  # noqa: F401  (bound before the candidate)
    from search_engine.evaluation.hooks import (
        LaunchRecorder,
        make_aten_work_recorder,
        snapshot_timers,
        tampered_timers,
    )

    gpu = spec["device"] == "cuda"
    device = spec["device"]
    recorder = LaunchRecorder(own_filename=spec["candidate_file"])
    recorder.install()
    timers = snapshot_timers()
    phase("startup")

    _, reference, init_inputs, state_dict, trials = _load_models(spec, device)
    phase("load_reference")

    report: dict[str, Any] = {"timing": {}, "phases": phases}
    if spec["timing"]["time_baselines"]:
        report["timing"]["eager"] = _time(spec, _timing_call(reference), trials, gpu, channel,
                                          "eager").stats()
        if gpu and spec["timing"]["time_compile_baseline"]:
            try:
                compiled = torch.compile(reference)
                _timing_call(compiled)(trials[0])  # compile outside the timing lock
                report["timing"]["compile"] = _time(spec, _timing_call(compiled), trials, gpu,
                                                    channel, "compile").stats()
            except Exception as exc:  # a baseline failure must not sink the candidate
                report["timing"]["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                               "method": f"failed: {type(exc).__name__}: {exc}"[:300]}
        elif not gpu:
            report["timing"]["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                           "method": "interpreter: torch.compile not timed"}
    phase("baselines")

    try:
        model = _build_candidate(spec, init_inputs, state_dict, device)
    except BaseException as exc:  # noqa: BLE001 - report anything the candidate raises
        return {"error": "compile", "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=8), **report}
    phase("load_candidate")

    outputs, device_outputs, trial_evidence = [], [], []
    aten = make_aten_work_recorder(recorder) if not gpu else None
    for index, inputs in enumerate(trials):
        pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        mark = recorder.mark()
        try:
            if aten is not None:
                with aten, torch.no_grad():
                    out = model(*inputs)
            else:
                with torch.no_grad():
                    out = model(*inputs)
            if gpu:
                torch.cuda.synchronize()
            out_list = _as_tensor_list(out)
        except BaseException as exc:  # noqa: BLE001
            if _is_triton_compile_error(exc):
                return {"error": "compile", "trial": index,
                        "message": f"Triton could not compile a kernel: {type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(limit=8), **report}
            return {"error": "runtime", "trial": index,
                    "message": f"trial {index}: {type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(limit=8), **report}
        launches = recorder.since(mark)
        trial_evidence.append({
            "trial": index,
            "own_launches": sum(1 for launch in launches if launch.own),
            "other_launches": sorted({launch.name for launch in launches if not launch.own}),
            "streams": sorted({launch.stream for launch in launches if launch.own
                               and launch.stream is not None}),
            "mutations": _mutations(inputs, pristine),
            "aliases": _aliases(out_list, inputs),
            "kernel_seconds": sum(launch.seconds for launch in launches if launch.own),
            "kernel_bytes": sum(launch.arg_bytes for launch in launches if launch.own),
        })
        device_outputs.append([o.detach() for o in out_list])
        outputs.append([o.detach().cpu() for o in out_list])
    report["trials"] = trial_evidence
    report["tampered_timers"] = tampered_timers(timers)
    report["own_kernels"] = recorder.own_names()
    report["default_stream"] = torch.cuda.current_stream().cuda_stream if gpu else None
    if aten is not None:
        report["aten_bytes"] = aten.bytes
        report["aten_ops"] = dict(sorted(aten.ops.items(), key=lambda kv: -kv[1])[:10])
    phase("correctness")

    try:
        side_streams = any(s != report["default_stream"] for t in trial_evidence for s in t["streams"])
        measurement = _time(spec, _timing_call(model), trials, gpu, channel, "candidate",
                            pad=not side_streams)
        report["timing"]["candidate"] = measurement.stats()
        report["host_median_ms"] = measurement.host_median_ms
        report["measured_s"] = measurement.measured_s
        report["timing_floor_ms"] = measurement.floor_ms
        report["timing_raw_median_ms"] = measurement.raw_median_ms
        report["timing_pad_ms"] = measurement.pad_ms
        # Outputs of the last timed rotation against the same input set's trial output
        # (which the parent checks against the reference): caching inside timed loops shows.
        report["timed_consistency"] = [
            {"trial": which,
             "rel_norm_diff": _rel_norm_diff([o.detach() for o in _as_tensor_list(out)],
                                             device_outputs[which])}
            for which, out in measurement.last_outputs]
    except BaseException as exc:  # noqa: BLE001
        return {"error": "runtime", "message": f"while timing: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=8), **report}
    report["tampered_timers"] = tampered_timers(timers)
    phase("timing")

    if gpu:
        try:
            report["profile_us"] = _profile_device_time(_timing_call(model), trials,
                                                        spec["profile_iterations"])
        except Exception as exc:  # the profiler is evidence, not a requirement
            report["profile_error"] = f"{type(exc).__name__}: {exc}"
        report["kernel_metadata"] = recorder.kernel_metadata()
        phase("profile")

    torch.save({"outputs": outputs},
               Path(spec["workdir"]) / "outputs.pt")
    return report


def ncu_in_child(spec: dict) -> dict:
    """Run the candidate a couple of times: `ncu` (the parent's wrapper) records its kernels."""
    import torch
    import triton  # noqa: F401

    device = spec["device"]
    _, _, init_inputs, state_dict, trials = _load_models(spec, device)
    model = _build_candidate(spec, init_inputs, state_dict, device)
    call = _timing_call(model)
    for i in range(2):
        call(trials[i % len(trials)])
    torch.cuda.synchronize()
    return {"ok": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ctrl-out", type=int, required=True)
    parser.add_argument("--ctrl-in", type=int, required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--mode", default="evaluate", choices=["evaluate", "ncu"])
    args = parser.parse_args(argv)
    channel = Channel(args.ctrl_out, args.ctrl_in)
    spec = json.loads(Path(args.spec).read_text())

    from search_engine.evaluation.config import SandboxLimits
    from search_engine.evaluation.sandbox import apply_rlimits

    limits = apply_rlimits(SandboxLimits(**spec["limits"]), float(spec["timeout_s"]))
    channel.send(event="rlimits", applied=limits)
    try:
        report = ncu_in_child(spec) if args.mode == "ncu" else evaluate_in_child(spec, channel)
    except BaseException as exc:  # noqa: BLE001 - never die silently
        report = {"error": "runtime", "message": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc(limit=8)}
    channel.send(event="result", report=report)
    sys.stdout.flush()
    # Skip interpreter teardown: a candidate's leftover threads must not keep us alive.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
