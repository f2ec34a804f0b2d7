"""Our evaluator's timing against `triton.testing.do_bench`, and its overhead per candidate.

For softmax, layernorm and GEMM+bias+ReLU at GPU sizes (search_engine.problems_library):
1. `evaluate()` the library's clean Triton solution (full pipeline: sandbox, 5 trials,
   eager + torch.compile baselines, profiler, optional ncu);
2. in this process, time the same candidate and eager PyTorch with do_bench (median);
3. print ours vs do_bench, and the evaluator's overhead = total seconds - seconds spent in
   the candidate's measurement loop.

    python benchmarks/eval_vs_do_bench.py [--problems softmax,layernorm,gemm_bias_relu]
                                          [--ncu-for softmax] [--json-out results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.pipeline import evaluate
from search_engine.evaluation.reference import ReferenceCache
from search_engine.problems import exec_module, make_trial_inputs
from search_engine.problems_library import library_problem, library_solution

POLICY = {"softmax": "strict", "layernorm": "strict", "gemm_bias_relu": "tf32"}


def candidate_source(name: str) -> str:
    source = library_solution(name)
    if POLICY[name] == "tf32":  # the fast path: tensor cores in tf32, judged under that policy
        source = source.replace('DOT_PRECISION = "ieee"', 'DOT_PRECISION = "tf32"')
    return source


def do_bench_times(problem, source: str, workdir: Path) -> dict:
    import torch
    import triton.testing

    module = exec_module(problem.source, f"bench_problem_{problem.name}", f"<{problem.name}>")
    path = workdir / f"bench_candidate_{problem.name}.py"
    path.write_text(source)
    cand = exec_module(source, f"bench_candidate_{problem.name}", str(path))
    torch.manual_seed(1234)
    init = module.get_init_inputs()
    torch.manual_seed(1234)
    ref = module.Model(*init).cuda().eval()
    torch.manual_seed(1234)
    new = cand.ModelNew(*init)
    new.load_state_dict(ref.state_dict(), strict=False)
    new = new.cuda().eval()
    x = [t.cuda() for t in make_trial_inputs(module, 1234, 1.0, 0.0)]
    out = {}
    with torch.no_grad():
        compiled = torch.compile(ref)
        compiled(*x)
        for label, fn in (("candidate", lambda: new(*x)), ("eager", lambda: ref(*x)),
                          ("compile", lambda: compiled(*x))):
            out[label] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", default="softmax,layernorm,gemm_bias_relu")
    parser.add_argument("--ncu-for", default="softmax", help="comma list of problems that also "
                        "collect ncu metrics (costs device time)")
    parser.add_argument("--json-out", default="")
    args = parser.parse_args()

    import torch

    workdir = Path("/tmp/kernelhub-bench")
    workdir.mkdir(exist_ok=True)
    rows = []
    for name in args.problems.split(","):
        problem = library_problem(name, scale="gpu")
        source = candidate_source(name)
        config = EvaluationConfig(ncu="auto" if name in args.ncu_for.split(",") else "off")
        references, baselines = ReferenceCache(), {}
        t0 = time.perf_counter()
        result = evaluate(problem, source, target="auto", precision_policy=POLICY[name],
                          timeout_s=500, config=config, reference_cache=references,
                          baseline_cache=baselines)
        wall = time.perf_counter() - t0
        # A second candidate of the same problem, as in a search: reference and baselines
        # are cached, so this is the steady-state overhead per candidate.
        again = evaluate(problem, source, target="auto", precision_policy=POLICY[name],
                         timeout_s=500, config=replace(config, ncu="off"),
                         reference_cache=references, baseline_cache=baselines)
        bench = do_bench_times(problem, source, workdir)
        timing = {k: v.median_ms for k, v in result.timing.items()}
        phases = result.diagnostics.get("phases", {})
        row = {
            "problem": name, "sizes": problem.sizes, "status": result.status,
            "message": result.message[:200], "policy": POLICY[name],
            "ours_ms": timing, "do_bench_ms": bench,
            "ratio_candidate": timing.get("candidate") and timing["candidate"] / bench["candidate"],
            "ratio_eager": timing.get("eager") and timing["eager"] / bench["eager"],
            "samples": result.timing.get("candidate").samples if result.timing.get("candidate") else 0,
            "iqr_ms": result.timing.get("candidate").iqr_ms if result.timing.get("candidate") else None,
            "speedup_vs_eager": result.speedup_vs_eager,
            "speedup_vs_compile": result.speedup_vs_compile, "coverage": result.coverage,
            "reward": result.reward, "duration_s": result.duration_s, "wall_s": round(wall, 2),
            "measurement_s": phases.get("measurement_s"), "overhead_s": phases.get("overhead_s"),
            "second_candidate": {"duration_s": again.duration_s,
                                 "overhead_s": again.diagnostics.get("phases", {}).get("overhead_s"),
                                 "candidate_ms": again.timing["candidate"].median_ms
                                 if again.timing.get("candidate") else None,
                                 "phases": again.diagnostics.get("phases")},
            "timing_method": result.diagnostics.get("timing_method_details"),
            "phases": phases, "bottleneck": result.diagnostics.get("bottleneck"),
            "kernels": result.diagnostics.get("kernels"), "ncu": result.diagnostics.get("ncu"),
            "flags": [(f.check, f.evidence) for f in result.integrity_flags],
            "isolation": result.isolation.get("network"),
        }
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)

    print(f"\n{torch.cuda.get_device_name(0)}  torch {torch.__version__}  "
          f"triton {__import__('triton').__version__}")
    print(f"{'problem':15s} {'status':9s} {'ours ms':>9s} {'do_bench':>9s} {'ratio':>6s} "
          f"{'eager ours':>10s} {'eager db':>9s} {'compile':>8s} {'x eager':>7s} {'cov':>5s} "
          f"{'total s':>7s} {'meas s':>6s} {'overh s':>7s} {'2nd s':>6s}")
    for r in rows:
        o, b = r["ours_ms"], r["do_bench_ms"]
        print(f"{r['problem']:15s} {r['status']:9s} {o.get('candidate') or 0:9.4f} "
              f"{b['candidate']:9.4f} {r['ratio_candidate'] or 0:6.3f} {o.get('eager') or 0:10.4f} "
              f"{b['eager']:9.4f} {o.get('compile') or 0:8.4f} {r['speedup_vs_eager'] or 0:7.2f} "
              f"{r['coverage'] or 0:5.2f} {r['duration_s']:7.1f} {r['measurement_s'] or 0:6.2f} "
              f"{r['overhead_s'] or 0:7.1f} {r['second_candidate']['duration_s']:6.1f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
