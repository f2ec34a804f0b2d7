"""Old and new baselines side by side: `python -m benchmarks baselines`.

For each problem (the suite at official shapes, plus any KernelBench-format files given),
eager and torch.compile (default mode, as the evaluator times them) are timed twice in one
process on the same inputs:

- OLD: PyTorch's defaults, what the evaluator timed before baselines followed the policy
  (cuDNN TF32 on, matmul TF32 off);
- NEW: `search_engine.evaluation.baseline_precision` for the chosen policy (strict: TF32 off
  everywhere; tf32; bf16 autocast).

Each row also carries both baselines' relative-norm error against a float64 reference on the
same inputs and whether that error is inside the candidate's tolerance. A table goes to
stdout, the rows to `--out` (JSON, written after every problem so a cut-off run keeps them).
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

from benchmarks import timing

SEED = 0


def pytorch_defaults():
    """The switches as a fresh PyTorch process has them (the evaluator's old baselines)."""
    from search_engine.evaluation.baseline_precision import torch_switches

    return torch_switches(cudnn_tf32=True, matmul_tf32=False)


def compare_problem(name: str, source: str, policy: str, device: str) -> dict:
    """OLD and NEW eager / torch.compile times and errors of one problem."""
    import torch

    from search_engine.evaluation.baseline_precision import baseline_error, baseline_precision
    from search_engine.problems import Problem, exec_module

    problem = Problem.from_source(source, name=name)
    module = exec_module(source, f"baselines_{abs(hash(name))}", name)
    with torch.device(device):
        torch.manual_seed(SEED)
        model = module.Model(*module.get_init_inputs()).eval()
        torch.manual_seed(SEED + 1)
        inputs = list(module.get_inputs())
    with torch.no_grad():
        model64 = copy.deepcopy(model).double()
        reference = _as_list(model64(*[x.double() if _is_float(x) else x for x in inputs]))
        del model64
        expected = [str(r.dtype) for r in _as_list(model(*inputs))]
    row = {"problem": name, "dtype": problem.dtype, "policy": policy}
    modes = {"old": pytorch_defaults, "new": lambda: baseline_precision(policy, device)}
    kinds = ("eager", "compile") if device == "cuda" else ("eager",)  # as the evaluator
    for label, context in modes.items():
        for kind in kinds:
            try:
                row.update(_time_one(label, kind, model, inputs, context, reference, expected,
                                     policy, problem.dtype, device, baseline_error))
            except Exception as exc:  # one baseline's failure keeps the others
                row[f"{label}_{kind}_error"] = f"{type(exc).__name__}: {exc}"[:300]
    for kind in ("eager", "compile"):
        old, new = row.get(f"old_{kind}_ms"), row.get(f"new_{kind}_ms")
        row[f"{kind}_new_over_old"] = round(new / old, 3) if old and new else None
    return row


def _time_one(label, kind, model, inputs, context, reference, expected, policy, dtype,
              device, baseline_error) -> dict:
    import torch

    torch._dynamo.reset()  # each precision compiles afresh: inductor reads the switches
    with context(), torch.no_grad():
        fn = torch.compile(model) if kind == "compile" else model
        outputs = _as_list(fn(*inputs))
        error = baseline_error(outputs, reference, expected, policy, dtype)
        ms = timing.time_ms(lambda: fn(*inputs), device)
    return {f"{label}_{kind}_ms": round(ms, 4),
            f"{label}_{kind}_rel_norm_error": error["rel_norm_error"],
            f"{label}_{kind}_within_tolerance": error["within_tolerance"]}


def _as_list(out) -> list:
    import torch

    return [out] if isinstance(out, torch.Tensor) else list(out)


def _is_float(x) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and x.is_floating_point()


def table(rows: list[dict]) -> str:
    head = ("| problem | dtype | eager old ms | eager new ms | new/old | compile old ms | "
            "compile new ms | new/old | old eager err (in tol) | new eager err (in tol) |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        def cell(key, digits=4):
            value = r.get(key)
            return "–" if value is None else f"{value:.{digits}g}"

        def err(label):
            e = r.get(f"{label}_eager_rel_norm_error")
            ok = r.get(f"{label}_eager_within_tolerance")
            return "–" if e is None else f"{e:.2g} ({'yes' if ok else 'no'})"

        lines.append(f"| {r['problem']} | {r['dtype']} | {cell('old_eager_ms')} | "
                     f"{cell('new_eager_ms')} | {cell('eager_new_over_old', 3)} | "
                     f"{cell('old_compile_ms')} | {cell('new_compile_ms')} | "
                     f"{cell('compile_new_over_old', 3)} | {err('old')} | {err('new')} |")
    return "\n".join(lines)


def run(sources: list[tuple[str, str]], policy: str, out: Path, time_limit_s: float,
        device: str, log=print) -> list[dict]:
    import torch

    started, rows = time.monotonic(), []
    for name, source in sources:
        if time.monotonic() - started > time_limit_s:
            rows.append({"problem": name, "skipped": "time limit"})
            continue
        try:
            row = compare_problem(name, source, policy, device)
        except Exception as exc:  # a problem that cannot run is reported, not fatal
            row = {"problem": name, "error": f"{type(exc).__name__}: {exc}"[:500]}
        rows.append(row)
        log(json.dumps(row))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"policy": policy, "device": device,
                                   "gpu": torch.cuda.get_device_name() if device == "cuda"
                                   else "cpu", "method": timing.timing_method(device),
                                   "torch": torch.__version__, "rows": rows}, indent=1))
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    from benchmarks.runner import device_name
    from benchmarks.suite import load_suite

    parser = argparse.ArgumentParser(prog="python -m benchmarks baselines",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="strict", choices=["strict", "tf32", "bf16"])
    parser.add_argument("--scale", default="official", choices=["official", "tiny"])
    parser.add_argument("--no-suite", action="store_true", help="only the --files")
    parser.add_argument("--files", nargs="*", type=Path, default=[],
                        help="KernelBench-format problem files to compare too")
    parser.add_argument("--time-limit", type=float, default=540.0, metavar="SECONDS")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sources = [] if args.no_suite else [(p.name, p.source) for p in load_suite(args.scale)]
    for path in args.files:
        if not path.is_file():
            print(f"error: {path} is not a file", file=sys.stderr)
            return 2
        sources.append((path.stem, path.read_text()))
    rows = run(sources, args.policy, args.out, args.time_limit, device_name(),
               log=lambda line: print(line, file=sys.stderr, flush=True))
    print(table([r for r in rows if "error" not in r and "skipped" not in r]))
    for r in rows:
        if "error" in r or "skipped" in r:
            print(f"{r['problem']}: {r.get('error') or r.get('skipped')}")
    print(f"rows written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
