"""`python -m benchmarks run`: the suite against eager and torch.compile on this machine.

For each problem, in one process:

1. the search, through the search engine's own API the way `python -m search_engine
   optimize` calls it (offline synthesizer, strict precision unless told otherwise), with
   a wall-clock share of the run's time limit;
2. eager and torch.compile (`max-autotune-no-cudagraphs`; the first call's time is the
   compile time, reported apart) timed with one method (benchmarks/timing.py);
3. the best kernel re-verified here against a float64 reference with the evaluator's
   tolerance table, then timed by the same method, then eager once more (the noise).

The search's sandboxes skip their own torch.compile baseline (step 2 measures it), so
no GEMM autotunes twice. Results are written after every problem, merged into `--out`.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks import results, timing
from benchmarks.suite import SuiteProblem

# Seconds kept back per problem for the baselines, compile and re-timing (max-autotune
# tunes GEMM templates, so those need more; on the H200 it took 5-50 s on GEMMs, 1-43 s on
# convolutions).
MEASURE_RESERVE_S = {"gemm": 100.0, "conv": 60.0, "other": 45.0}
# The least a search is given: its first evaluation must fit. On a GPU, at official sizes, a
# first evaluation takes 25-40 s (sandbox start, float64 reference, trials, ghost); a 20 s
# search of a convolution on the H200 ended with no kernel at all.
MIN_SEARCH_S = {"cpu": 20.0, "gpu": 45.0}
SEED = 0


@dataclass
class RunOptions:
    families: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    budget: int = 6
    parallel: int = 2
    seed: int = 0
    precision: str = "strict"
    strategy: str = "mcts"
    target: str = "auto"
    scale: str = "official"
    compile_mode: str = "max-autotune-no-cudagraphs"
    compile_backend: str = "inductor"
    time_limit_s: float = 500.0
    search_seconds: float = 240.0
    no_ncu: bool = False
    isolation: str = "auto"
    search_times_compile: bool = False

    def settings(self) -> dict:
        return asdict(self)


def device_name() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def run_suite(problems: list[SuiteProblem], options: RunOptions, out: Path,
              log=print) -> dict:
    """Run `problems`, merging each finished row into `out`; the document written last."""
    device = device_name()
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    use_tf32_baselines(options.precision != "strict")
    started = time.monotonic()
    run = results.new_run(options.settings(), device, timing.measure_ceilings(device),
                          [p.name for p in problems],
                          "python -m benchmarks " + " ".join(sys.argv[1:]))
    log(f"machine {run['machine']}: copy {run['ceilings']['copy_gbs']} GB/s, matmul "
        f"{run['ceilings']['matmul_tflops']} TFLOP/s")
    document = None
    for index, problem in enumerate(problems):
        left = options.time_limit_s - (time.monotonic() - started)
        row = run_problem(problem, options, run, device, left / (len(problems) - index), log)
        document = results.write_rows(out, run, [row])
        log(f"  {results.row_line(row)}")
    return document


def use_tf32_baselines(allowed: bool) -> None:
    """Under `strict`, eager and compile do fp32 math too: cuDNN's convolutions default to
    tf32, which a strict kernel may not use, so that default is switched off."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = allowed
    torch.backends.cudnn.allow_tf32 = allowed


def run_problem(problem: SuiteProblem, options: RunOptions, run: dict, device: str,
                share_s: float, log) -> dict:
    log(f"== {problem.name} ({problem.family}, {problem.dtype}): {share_s:.0f} s share")
    search_s = search_seconds(problem, options, share_s, device)
    if search_s is None:
        return results.skipped_row(problem, options.precision,
                                   f"time limit: {share_s:.0f} s left for it", run)
    try:
        found = search(problem, options, search_s)
    except Exception as exc:  # one problem's failure must not lose the run
        found = {"covered": True, "best": None, "evaluations": 0, "seconds": 0.0,
                 "status": "search_error", "reason": f"{type(exc).__name__}: {exc}"[:500]}
    try:
        measured = measure(problem, found.get("best"), options, device)
    except Exception as exc:
        measured = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    finally:
        _free_device_memory(device)
    return results.problem_row(problem, options.precision, found, measured, run)


def search_seconds(problem: SuiteProblem, options: RunOptions, share_s: float,
                   device: str) -> float | None:
    """The search's part of a problem's share (the rest measures), or None when the share
    cannot hold a first evaluation and half the measuring."""
    reserve = MEASURE_RESERVE_S[measure_kind(problem)]
    least = MIN_SEARCH_S["cpu" if device == "cpu" else "gpu"]
    if share_s < reserve / 2 + least:
        return None
    return max(least, min(options.search_seconds, share_s - reserve))


def measure_kind(problem: SuiteProblem) -> str:
    """Which compile reserve a problem needs: max-autotune tunes GEMMs longest."""
    if not problem.min_flops:
        return "other"
    return "conv" if "conv" in problem.family else "gemm"


# -- the search ------------------------------------------------------------------------------

def search(problem: SuiteProblem, options: RunOptions, max_seconds: float) -> dict:
    """One search, built from `python -m search_engine optimize`'s own parser and helpers."""
    from search_engine.cli import build_parser
    from search_engine.search.cli_commands import make_synthesizer, optimize_problem

    argv = ["optimize", "--problem", str(problem.path), "--target", options.target,
            "--budget", str(options.budget), "--parallel", str(options.parallel),
            "--seed", str(options.seed), "--precision", options.precision,
            "--strategy", options.strategy, "--isolation", options.isolation,
            "--max-seconds", f"{max_seconds:.0f}"]
    args = build_parser().parse_args(argv + (["--no-ncu"] if options.no_ncu else []))
    synthesizer = make_synthesizer(args)
    executor = _executor(args, options)
    started = time.perf_counter()
    try:
        summary = optimize_problem(problem.problem, args, executor, synthesizer, sys.stderr)
    finally:
        executor.shutdown()
    seconds = time.perf_counter() - started
    nodes = summary.pop("_nodes_full", None) or []
    best = summary.get("best")
    if best is not None:
        node = next((n for n in nodes if n["id"] == best["node_id"]), {})
        best = {**best, "depth": node.get("depth")}
    failures = [n["message"] for n in summary.get("nodes", [])
                if n["status"] not in ("correct", "reference") and n.get("message")]
    return {"covered": summary["status"] != "not_covered", "best": best,
            "evaluations": summary.get("evaluated", 0), "seconds": round(seconds, 1),
            "status": summary["status"], "reason": summary.get("reason", ""),
            "failures": failures[:3]}


def _executor(args, options: RunOptions):
    from dataclasses import replace

    from search_engine.cli import with_isolation
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor

    config = EvaluationConfig(time_compile_baseline=options.search_times_compile)
    if args.no_ncu:
        config = replace(config, ncu="off")
    if args.target == "interpreter":
        config = replace(config, interpreter_reps=1)
    return LocalExecutor(max_workers=max(1, args.parallel), config=with_isolation(config, args))


# -- baselines and the best kernel, in this process ------------------------------------------

def measure(problem: SuiteProblem, best: dict | None, options: RunOptions,
            device: str) -> dict:
    """Eager, torch.compile and the best kernel timed on the same inputs, eager first and last.

    Tensors are made under `torch.device(device)` (cheap: no host copies) and timed outside
    it: the device context is a torch function mode that would tax every timed call."""
    import torch

    from search_engine.evaluation.tolerances import tolerance_for

    module = problem.module()
    with torch.device(device):
        torch.manual_seed(SEED)
        init_inputs = list(module.get_init_inputs())
        torch.manual_seed(SEED)
        model = module.Model(*init_inputs).eval()
        torch.manual_seed(SEED + 1)
        inputs = list(module.get_inputs())
    with torch.no_grad():
        measured = {"eager_ms": timing.time_ms(lambda: model(*inputs), device)}
        baselines = {"eager": model}
        try:
            baselines["compile"], compiled = _time_compiled(model, inputs, options, device)
            measured.update(compiled)
        except Exception as exc:
            measured["compile_error"] = f"{type(exc).__name__}: {exc}"[:500]
        tolerance = tolerance_for(options.precision, problem.dtype)
        measured.update(_stage("baseline_check_error", lambda: baselines_accuracy(
            baselines, model, accuracy_trials(module, inputs, device), tolerance)))
        if best is not None:
            measured.update(_stage("reverify_error", lambda: _check_and_time(
                problem, best["source"], module, init_inputs, model, inputs, options, device)))
        measured["eager_ms_repeat"] = timing.time_ms(lambda: model(*inputs), device)
    return measured


def _stage(error_key: str, measure_stage) -> dict:
    """One stage's numbers, or its error under `error_key` (the other stages still run)."""
    try:
        return measure_stage()
    except Exception as exc:
        return {error_key: f"{type(exc).__name__}: {exc}"[:500]}


def accuracy_trials(module, inputs: list, device: str):
    """(label, inputs) for the baselines' accuracy check: the timed inputs, then draws scaled
    and shifted as the evaluator's trials are (`DEFAULT_TRIAL_PLAN`), one at a time."""
    import torch

    from search_engine.evaluation.config import DEFAULT_TRIAL_PLAN
    from search_engine.problems import make_trial_inputs

    yield "the timed inputs", inputs
    for k, (scale, shift) in enumerate(DEFAULT_TRIAL_PLAN):
        if (scale, shift) != (1.0, 0.0):
            with torch.device(device):
                trial = make_trial_inputs(module, SEED + 3 + k, scale, shift)
            yield f"inputs x{scale:g} {shift:+g}", trial


def baselines_accuracy(baselines: dict, model, trials, tolerance) -> dict:
    """Each baseline's worst error against the float64 reference over `trials`, whether it
    passed the tolerance the kernel is held to on all of them, and the first it missed: a
    speedup over a baseline that misses it compares a kernel with something less accurate
    (cuDNN's tf32 convolutions under `strict`; any tf32 conv before an InstanceNorm on
    shifted inputs). A trial whose reference raises (inputs outside its domain) is skipped."""
    found = {name: {f"{name}_rel_error": 0.0, f"{name}_within_tolerance": True,
                    f"{name}_missed": None} for name in baselines}
    for label, trial in trials:
        try:
            reference = reference_output(model, trial)
        except Exception:  # noqa: BLE001 - the evaluator draws a milder trial there too
            continue
        for name, baseline in baselines.items():
            passed, error = matches_reference(baseline(*trial), reference, tolerance)
            row = found[name]
            row[f"{name}_rel_error"] = max(row[f"{name}_rel_error"], error)
            if not passed and row[f"{name}_within_tolerance"]:
                row[f"{name}_within_tolerance"], row[f"{name}_missed"] = False, label
        del reference, trial
    return {k: v for row in found.values() for k, v in row.items()}


def _time_compiled(model, inputs: list, options: RunOptions, device: str) -> tuple:
    """The compiled model and its numbers (compile seconds, milliseconds)."""
    import torch

    torch._dynamo.reset()  # each problem compiles from scratch: compile_seconds is its own
    if options.compile_backend == "inductor":
        compiled = torch.compile(model, mode=options.compile_mode)
    else:
        compiled = torch.compile(model, backend=options.compile_backend)
    started = time.perf_counter()
    compiled(*inputs)
    timing.synchronize(device)
    compile_seconds = time.perf_counter() - started
    return compiled, {"compile_seconds": round(compile_seconds, 2),
                      "compile_ms": timing.time_ms(lambda: compiled(*inputs), device)}


def _check_and_time(problem: SuiteProblem, source: str, module, init_inputs: list, model,
                    inputs: list, options: RunOptions, device: str) -> dict:
    """Re-verify the search's best kernel on the timed inputs and a fresh draw, then time it."""
    import torch

    from search_engine.evaluation.tolerances import tolerance_for

    candidate = load_candidate(problem.name, source, init_inputs, model, device)
    tolerance = tolerance_for(options.precision, problem.dtype)
    worst = 0.0
    for seed in (None, SEED + 2):
        if seed is None:
            trial = inputs
        else:
            torch.manual_seed(seed)
            with torch.device(device):
                trial = list(module.get_inputs())
        passed, error = matches_reference(candidate(*trial), reference_output(model, trial),
                                          tolerance)
        worst = max(worst, error)
        if not passed:
            return {"verified": False, "rel_norm_error": error}
    return {"verified": True, "rel_norm_error": worst,
            "best_ms": timing.time_ms(lambda: candidate(*inputs), device)}


def load_candidate(name: str, source: str, init_inputs: list, model, device: str):
    """`ModelNew` from the kernel source, seeded like the reference and given its weights."""
    import torch

    from search_engine.problems import exec_module

    if device == "cpu":
        from search_engine.evaluation import interpreter_compat

        interpreter_compat.install()
    folder = Path(tempfile.mkdtemp(prefix="benchmarks-kernel-"))
    path = folder / f"{name}_best.py"
    path.write_text(source)  # Triton reads kernel source through inspect: it must be a file
    kernel_module = exec_module(source, f"benchmarks_kernel_{name}", str(path))
    torch.manual_seed(SEED)
    with torch.device(device):
        candidate = kernel_module.ModelNew(*init_inputs).eval()
    state = model.state_dict()
    own = candidate.state_dict()
    candidate.load_state_dict({k: v for k, v in state.items()
                               if k in own and own[k].shape == v.shape}, strict=False)
    return candidate.to(device)


def reference_output(model, inputs: list):
    """The model's output in float64 (the evaluator's reference), from float64 copies."""
    import torch

    wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs]
    output = copy.deepcopy(model).double()(*wide)
    del wide
    return output


COMPARE_CHUNK = 1 << 26  # elements compared at once: official shapes stay within GPU memory


def matches_reference(output, reference, tolerance) -> tuple[bool, float]:
    """The evaluator's test (relative norm and elementwise atol·rms + rtol·|ref|), chunked;
    returns (passed, relative norm error)."""
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]
    references = list(reference) if isinstance(reference, (tuple, list)) else [reference]
    if len(outputs) != len(references):
        return False, math.inf
    worst, passed = 0.0, True
    for out, ref in zip(outputs, references):
        if tuple(out.shape) != tuple(ref.shape):
            return False, math.inf
        ok, error = _compare_flat(out.reshape(-1), ref.reshape(-1), tolerance)
        passed, worst = passed and ok, max(worst, error)
    return passed, worst


def _compare_flat(out, ref, tolerance) -> tuple[bool, float]:
    ref_sq = sum(float((ref[i:i + COMPARE_CHUNK].double() ** 2).sum())
                 for i in range(0, ref.numel(), COMPARE_CHUNK))
    rms = math.sqrt(ref_sq / max(ref.numel(), 1))
    diff_sq, elementwise_ok = 0.0, True
    for i in range(0, ref.numel(), COMPARE_CHUNK):
        r = ref[i:i + COMPARE_CHUNK].double()
        d = (out[i:i + COMPARE_CHUNK].double() - r).abs()
        diff_sq += float((d * d).sum())
        elementwise_ok = elementwise_ok and bool(
            (d <= tolerance.atol_rms * rms + tolerance.rtol * r.abs()).all())
    error = math.sqrt(diff_sq) / max(math.sqrt(ref_sq), 1e-30)
    if math.isnan(error):
        return False, math.inf
    return elementwise_ok and error <= tolerance.rel_norm, error


def _free_device_memory(device: str) -> None:
    import gc

    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
