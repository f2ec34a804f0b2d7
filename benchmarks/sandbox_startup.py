"""What the sandbox costs: start-up of a sandboxed process, and a whole evaluation, with the
sandbox on (`isolation=auto`: user, PID, mount, network namespaces, memory cgroup) and off
(a plain process group, the old evaluator's sandbox), in the same run.

    python benchmarks/sandbox_startup.py [--repeats 3] [--target auto] [--json-out FILE]

Prints one JSON object: per mode, the median seconds of `python -c "import torch, triton"`
(with a CUDA tensor on a GPU), and of a clean candidate's `evaluate()` (reference cached,
so the candidate's sandbox dominates), with its phases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from search_engine.evaluation.config import EvaluationConfig, SandboxLimits  # noqa: E402
from search_engine.evaluation.isolation import probe, run_sandboxed  # noqa: E402
from search_engine.evaluation.pipeline import evaluate  # noqa: E402
from search_engine.evaluation.reference import ReferenceCache  # noqa: E402
from search_engine.problems_library import library_problem  # noqa: E402

CANDIDATE = Path(__file__).resolve().parents[1] / "tests/search_engine/evaluation/candidates/clean_softmax.py"


def spawn_seconds(isolation: str, gpu: bool, repeats: int) -> float:
    code = "import torch, triton" + ("; torch.ones(1, device='cuda').sum().item()" if gpu else "")
    limits = replace(SandboxLimits(), isolation=isolation)
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as workdir:
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir,
                   "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
            if not gpu:
                env["CUDA_VISIBLE_DEVICES"] = ""
            t0 = time.perf_counter()
            run = run_sandboxed([sys.executable, "-c", code], Path(workdir), timeout_s=120,
                                limits=limits, env=env, gpu=gpu)
            times.append(time.perf_counter() - t0)
            if run.returncode != 0:
                raise SystemExit(f"sandboxed start failed ({isolation}): {run.output[-800:]}")
    return round(statistics.median(times), 3)


def evaluation_seconds(isolation: str, target: str, repeats: int, problem, cache) -> dict:
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, min_timing_ms=30,
                              interpreter_reps=1,
                              limits=replace(SandboxLimits(), isolation=isolation))
    source = CANDIDATE.read_text()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = evaluate(problem, source, target=target, timeout_s=300, config=config,
                     reference_cache=cache)
        runs.append((time.perf_counter() - t0, r))
        if r.status != "correct":
            raise SystemExit(f"clean candidate came back {r.status}: {r.message}")
    wall, result = sorted(runs, key=lambda x: x[0])[len(runs) // 2]
    phases = result.diagnostics.get("phases", {})
    return {"evaluate_s": round(wall, 3), "sandbox_s": phases.get("sandbox_s"),
            "startup_s": phases.get("startup"), "measurement_s": phases.get("measurement_s"),
            "isolation": result.isolation}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.is_available() and args.target != "interpreter"
    problem = library_problem("softmax", scale="small")
    if gpu:
        problem = problem.with_sizes(batch_size=2048, dim=4096)
    cache = ReferenceCache()
    out = {"gpu": torch.cuda.get_device_name() if gpu else None,
           "probe": probe(SandboxLimits(), gpu=gpu)}
    for mode in ("off", "auto"):
        out[mode] = {"spawn_import_s": spawn_seconds(mode, gpu, args.repeats),
                     **evaluation_seconds(mode, args.target, args.repeats, problem, cache)}
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text)


if __name__ == "__main__":
    main()
