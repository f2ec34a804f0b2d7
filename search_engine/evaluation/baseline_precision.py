"""Baselines at the candidate's precision policy.

A speedup only means something when eager and torch.compile do math of the precision the
candidate is held to. PyTorch's defaults are not that: cuDNN convolutions run in TF32
(`torch.backends.cudnn.allow_tf32` is on by default), which a `strict` candidate may not
use and which would itself fail the strict tolerance. So the problem's sandbox times its
baselines inside `baseline_precision(policy)`:

| policy | baseline math                                                                     |
|--------|-----------------------------------------------------------------------------------|
| strict | fp32: TF32 off in cuDNN and matmul, float32_matmul_precision("highest")          |
| tf32   | tf32: TF32 on in cuDNN and matmul, float32_matmul_precision("high")              |
| bf16   | bf16 autocast: the same inputs under torch.autocast(bfloat16) (matmuls and        |
|        | convolutions in bf16 on tensor cores, what autocast keeps in fp32 may use TF32)   |

The bf16 baseline mirrors how a candidate is judged under `bf16`: it receives the problem's
own (fp32) inputs, may compute in bf16 and is compared in float64 against the bf16
tolerance. Problems whose own dtype is fp16/bf16 run in that dtype under every policy (the
TF32 switches do not touch them). Each baseline's error against the float64 reference is
measured in the same precision and recorded with its timing (`precision`, `error`).
"""

from __future__ import annotations

import contextlib

# Bumped whenever what a baseline measures changes: cached baselines of an older version
# are never reused (the on-disk `BaselineCache` puts it in its key).
BASELINE_VERSION = 2

BASELINE_PRECISION = {
    "strict": "fp32 (TF32 off in cuDNN and matmul)",
    "tf32": "tf32 (TF32 on in cuDNN and matmul)",
    "bf16": "bf16 (torch.autocast bfloat16; TF32 on)",
}
# Results stored before baselines followed the policy: PyTorch's defaults.
LEGACY_PRECISION = "PyTorch defaults (cuDNN TF32 on, matmul TF32 off)"


def precision_label(policy: str) -> str:
    from search_engine.evaluation.tolerances import check_policy

    return BASELINE_PRECISION[check_policy(policy)]


def backend_flags() -> dict:
    """The torch switches that decide a baseline's precision, as they are now."""
    import torch

    return {"cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


@contextlib.contextmanager
def torch_switches(cudnn_tf32: bool, matmul_tf32: bool):
    """TF32 in cuDNN and in matmul set as given (matmul precision "high" when TF32 is on,
    "highest" when off) for the block; the previous switches restored after it."""
    import torch

    before = backend_flags()
    torch.set_float32_matmul_precision("high" if matmul_tf32 else "highest")
    torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before["cudnn_allow_tf32"]
        torch.backends.cuda.matmul.allow_tf32 = before["matmul_allow_tf32"]
        torch.set_float32_matmul_precision(before["float32_matmul_precision"])


@contextlib.contextmanager
def baseline_precision(policy: str, device: str):
    """Run eager / torch.compile baselines at `policy`'s precision; restores the switches."""
    import torch

    precision_label(policy)  # an unknown policy is an error, never PyTorch's defaults
    tf32 = policy != "strict"
    with torch_switches(cudnn_tf32=tf32, matmul_tf32=tf32):
        if policy == "bf16":
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                yield
        else:
            yield


def baseline_error(outputs: list, reference64: list, expected_dtypes: list[str],
                   policy: str, problem_dtype: str) -> dict:
    """A baseline's own error against the float64 reference, judged like a candidate's
    (`within_tolerance`: would it pass the tolerance the candidate is held to?)."""
    import torch

    from search_engine.evaluation.correctness import compare_trial
    from search_engine.evaluation.tolerances import tolerance_for

    tolerance = tolerance_for(policy, problem_dtype)
    cast = []
    for out, dtype in zip(outputs, expected_dtypes):
        target = getattr(torch, str(dtype).removeprefix("torch."), None)
        cast.append(out.to(target) if isinstance(target, torch.dtype) else out)
    device = reference64[0].device if reference64 else "cpu"
    trial = compare_trial(0, 0, [o.to(device) for o in cast], reference64, expected_dtypes,
                          tolerance)
    return {"rel_norm_error": trial.rel_norm_error, "max_abs_error": trial.max_abs_error,
            "within_tolerance": trial.passed, "tolerance_class": tolerance.precision_class,
            "note": trial.note}


def time_baselines(model, sets: list, measure, reference64, *, policy: str, device: str,
                   compile_too: bool, expected_dtypes: list[str], problem_dtype: str) -> dict:
    """Eager and (on a GPU, when asked) torch.compile timings of `model` at `policy`'s
    precision, each with its precision, the switches in effect and its error on the first
    input set (`reference64()`: that set's float64 outputs). `measure(fn)` times `fn`."""
    import torch

    label = precision_label(policy)
    try:  # outside the precision switches: the float64 reference stays float64
        reference = reference64()
    except Exception as exc:  # noqa: BLE001 - the timings stand; the error says why
        reference = exc
    timing = {}
    with baseline_precision(policy, device):
        flags = backend_flags()
        timing["eager"] = _with_error(measure(model), model, sets[0], reference, policy,
                                      expected_dtypes, problem_dtype)
        if device == "cuda" and compile_too:
            try:
                compiled = torch.compile(model)
                with torch.no_grad():
                    compiled(*sets[0])
                timing["compile"] = _with_error(measure(compiled), compiled, sets[0],
                                                reference, policy, expected_dtypes,
                                                problem_dtype)
            except Exception as exc:  # a baseline failure must not sink the candidate
                timing["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                     "method": f"failed: {type(exc).__name__}: {exc}"[:300]}
        elif device != "cuda":
            timing["compile"] = {"median_ms": None, "iqr_ms": None, "samples": 0,
                                 "method": "interpreter: torch.compile not timed"}
    for stats in timing.values():
        stats.update(precision=label, backend=flags)
    return timing


def _with_error(stats: dict, model, inputs: list, reference, policy: str,
                expected_dtypes: list[str], problem_dtype: str) -> dict:
    import torch

    try:
        if isinstance(reference, Exception):
            raise reference
        with torch.no_grad():
            out = model(*inputs)
        outputs = [out] if isinstance(out, torch.Tensor) else list(out)
        stats["error"] = baseline_error(outputs, reference, expected_dtypes, policy,
                                        problem_dtype)
    except Exception as exc:  # noqa: BLE001 - the timing stands; say why no error is known
        stats["error"] = {"note": f"not measured: {type(exc).__name__}: {exc}"[:300]}
    return stats
