"""Evaluator throughput: first and later candidate time by phase, peak memory, and evaluated
candidates per GPU-minute with 1 and with N warm sandboxes.

    python benchmarks/evaluator_throughput.py [--scale mid|official|tiny] [--problems a,b]
        [--later 3] [--parallel 4] [--batch 8] [--target auto] [--json-out FILE]

Problems are our own files with KernelBench's shapes (benchmarks/problems/), candidates our
own clean Triton kernels (benchmarks/candidates/, the library's GEMM). `mid` is the size of
the issue's mid runs; `official` KernelBench's; `tiny` is for the CPU interpreter (a smoke
test of this script). One JSON row per problem and sandbox count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search_engine.evaluation.config import EvaluationConfig  # noqa: E402
from search_engine.evaluation.executor import LocalExecutor  # noqa: E402
from search_engine.problems import Problem  # noqa: E402
from search_engine.problems_library import library_solution  # noqa: E402
from search_engine.protocols import EvaluationRequest  # noqa: E402

HERE = Path(__file__).resolve().parent
PROBLEMS = {
    # name: (problem file, candidate source, precision, sizes per scale)
    "softmax": ("softmax_rows.py", "softmax_online.py", "strict", {
        "tiny": {"batch_size": 8, "dim": 300}, "mid": {"batch_size": 4096, "dim": 16384},
        "official": {"batch_size": 4096, "dim": 393216}}),
    "rmsnorm": ("rmsnorm_channels.py", "rmsnorm_channels.py", "strict", {
        "tiny": {"batch_size": 2, "dim1": 8, "dim2": 8},
        "mid": {"batch_size": 16, "dim1": 256, "dim2": 256},
        "official": {"batch_size": 112, "dim1": 512, "dim2": 512}}),
    "layernorm": ("layernorm_wide.py", "layernorm_wide.py", "strict", {
        "tiny": {"batch_size": 2, "features": 4, "dim1": 8, "dim2": 8},
        "mid": {"batch_size": 16, "features": 64, "dim1": 64, "dim2": 64},
        "official": {"batch_size": 16, "features": 64, "dim1": 256, "dim2": 256}}),
    "matmul": ("matmul_square.py", "matmul_tf32x3.py", "strict", {
        "tiny": {"N": 48}, "mid": {"N": 2048}, "official": {"N": 4096}}),
    "gemm_bias_relu": ("gemm_bias_relu_wide.py", None, "tf32", {
        "tiny": {"batch_size": 16, "in_features": 32, "out_features": 24},
        "mid": {"batch_size": 1024, "in_features": 8192, "out_features": 8192},
        "official": {"batch_size": 1024, "in_features": 8192, "out_features": 8192}}),
}


def candidate_source(name: str) -> str:
    cand = PROBLEMS[name][1]
    if cand is None:  # the library's GEMM in tf32, judged under that policy
        return library_solution("gemm_bias_relu").replace('DOT_PRECISION = "ieee"',
                                                          'DOT_PRECISION = "tf32"')
    return (HERE / "candidates" / cand).read_text()


class PeakMemory:
    """Peak host RSS of this process and all its descendants, and peak GPU memory used."""

    def __init__(self, interval_s: float = 0.25):
        self.interval_s, self.host_bytes, self.gpu_bytes = interval_s, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.host_bytes = max(self.host_bytes, _tree_rss(os.getpid()))
            self.gpu_bytes = max(self.gpu_bytes, _gpu_used())
            self._stop.wait(self.interval_s)


def _tree_rss(root: int) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pid, ppid, pages = int(entry.name), int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def _gpu_used() -> int:
    try:
        import torch

        if not torch.cuda.is_available():
            return 0
        free, total = torch.cuda.mem_get_info()
        return total - free
    except Exception:  # noqa: BLE001 - memory sampling is best effort
        return 0


def run_problem(name: str, scale: str, target: str, later: int, parallel: int,
                batch: int) -> list[dict]:
    problem_file, _, precision, sizes = PROBLEMS[name]
    problem = Problem.from_file(HERE / "problems" / problem_file).with_sizes(**sizes[scale])
    source = candidate_source(name)
    config = EvaluationConfig(ncu="off", baseline_cache_dir=tempfile.mkdtemp(prefix="kh-bl-"))
    rows = []

    def request():
        return EvaluationRequest(problem.source, source, target=target, timeout_s=600,
                                 precision_policy=precision)

    with PeakMemory() as peak, LocalExecutor(max_workers=1, config=config) as ex:
        t0 = time.perf_counter()
        first = ex.submit(request()).result()
        first_s = time.perf_counter() - t0
        laters = []
        for _ in range(later):
            t0 = time.perf_counter()
            r = ex.submit(request()).result()
            laters.append((time.perf_counter() - t0, r))
    later_s = statistics.median(s for s, _ in laters) if laters else None
    later_r = sorted(laters, key=lambda x: x[0])[len(laters) // 2][1] if laters else first
    measured = (later_r.diagnostics.get("phases", {}).get("measurement_s") or 0.0)
    rows.append(_row(name, problem, first, first_s, later_s, later_r, measured, peak, 1,
                     60.0 / later_s if later_s else None))

    if parallel > 1:
        with PeakMemory() as peak_n, LocalExecutor(max_workers=parallel, config=config) as ex:
            ex.submit(request()).result()  # reference and warm pool up: steady state below
            t0 = time.perf_counter()
            results = [f.result() for f in [ex.submit(request()) for _ in range(batch)]]
            wall = time.perf_counter() - t0
            starts = [t for pool in ex._sandbox_pools.values() for t in pool.start_seconds]
        statuses = sorted({r.status for r in results})
        row = _row(name, problem, first, first_s, later_s, later_r, measured, peak_n, parallel,
                   batch * 60.0 / wall)
        row["status"] = ",".join(statuses)
        row["batch_wall_s"] = round(wall, 2)
        # where a batch's time goes when the pool is the bottleneck
        row["pool_start_s_median"] = round(statistics.median(starts), 2) if starts else None
        row["pool_wait_s_median"] = round(statistics.median(
            r.diagnostics.get("phases", {}).get("pool_wait_s", 0.0) for r in results), 3)
        rows.append(row)
    return rows


def _row(name, problem, first, first_s, later_s, later_r, measured, peak, sandboxes, rate):
    return {
        "problem": name, "shape": dict(problem.sizes),
        "status": first.status, "later_status": later_r.status,
        "message": first.message[:200],
        "first_candidate_s": round(first_s, 2),
        "later_candidate_s": round(later_s, 2) if later_s else None,
        "later_measurement_s": round(measured, 3),
        "overhead_s": round(later_s - measured, 2) if later_s else None,
        "phases_first": first.diagnostics.get("phases", {}),
        "phases_later": later_r.diagnostics.get("phases", {}),
        "resident_steps_later": later_r.diagnostics.get("resident_steps_s"),
        "device_memory_peak_gb": first.diagnostics.get("device_memory_peak_gb"),
        "peak_host_gb": round(peak.host_bytes / 1e9, 2),
        "peak_gpu_gb": round(peak.gpu_bytes / 1e9, 2),
        "sandboxes": sandboxes,
        "evaluations_per_gpu_minute": round(rate, 1) if rate else None,
        "candidate_ms": (later_r.timing.get("candidate").median_ms
                         if later_r.timing.get("candidate") else None),
        "speedup_vs_eager": later_r.speedup_vs_eager,
        "timing_quality": later_r.diagnostics.get("timing_quality"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="mid", choices=["tiny", "mid", "official"])
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--later", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    rows = []
    for name in args.problems.split(","):
        for row in run_problem(name, args.scale, args.target, args.later, args.parallel,
                               args.batch):
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items()
                              if k not in ("phases_first", "phases_later")}), flush=True)
    out = {"scale": args.scale, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "rows": rows}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
