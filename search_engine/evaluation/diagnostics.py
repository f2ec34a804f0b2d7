"""Diagnostics: where a kernel sits on the roofline and what limits it, with the numbers.

Sources: Triton's compiled metadata (registers, spills, shared memory, warps → an
occupancy estimate), the measured time against the minimum bytes and FLOPs of the problem
and the target's ceilings, and Nsight Compute metrics when `ncu` is on the host.
"""

from __future__ import annotations

import csv
import io
import shutil

from search_engine.hardware import HardwareTarget, compute_ceiling

# Hopper/Ampere-class SM limits used by the occupancy estimate.
SM_REGISTERS = 65536
SM_MAX_WARPS = 64
SM_MAX_BLOCKS = 32
SM_SHARED_BYTES = 228 * 1024

NCU_METRICS = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "gpu__time_duration.sum": "duration_ns",
}


def occupancy_estimate(n_regs: int | None, num_warps: int | None, shared_bytes: int | None) -> dict:
    """Resident warps per SM over the maximum, and which resource limits it."""
    if not n_regs or not num_warps:
        return {}
    limits = {
        "registers": SM_REGISTERS // max(n_regs * 32 * num_warps, 1),
        "warps": SM_MAX_WARPS // num_warps,
        "blocks": SM_MAX_BLOCKS,
    }
    if shared_bytes:
        limits["shared_memory"] = SM_SHARED_BYTES // shared_bytes
    blocks = max(min(limits.values()), 0)
    limiter = min(limits, key=limits.get)
    return {"blocks_per_sm": blocks, "occupancy": round(blocks * num_warps / SM_MAX_WARPS, 3),
            "limited_by": limiter}


def peak_tflops(target: HardwareTarget, precision_class: str) -> float:
    """The arithmetic ceiling that applies: the fastest arithmetic the precision class
    accepts (strict fp32 may run on tensor cores as 3xTF32 / bf16x3; `hardware.py`)."""
    return compute_ceiling(target, precision_class)[0]


def roofline(target: HardwareTarget, bytes_moved: int, flops: int, precision_class: str,
             candidate_ms: float | None) -> dict:
    if target.is_interpreter or not target.memory_bandwidth_gbs:
        return {"available": False, "reason": "interpreter: no device ceilings",
                "min_bytes": bytes_moved, "flops": flops}
    peak = peak_tflops(target, precision_class)
    memory_floor_ms = bytes_moved / (target.memory_bandwidth_gbs * 1e9) * 1e3
    compute_floor_ms = flops / (peak * 1e12) * 1e3 if flops else 0.0
    ridge = peak * 1e12 / (target.memory_bandwidth_gbs * 1e9)
    intensity = flops / bytes_moved if bytes_moved else 0.0
    row = {
        "available": True, "min_bytes": bytes_moved, "flops": flops,
        "arithmetic_intensity": round(intensity, 3), "ridge_point": round(ridge, 2),
        "peak_bandwidth_gbs": target.memory_bandwidth_gbs, "peak_tflops": peak,
        "peak_arithmetic": compute_ceiling(target, precision_class)[1],
        "floor_ms": max(memory_floor_ms, compute_floor_ms),
        "memory_floor_ms": memory_floor_ms, "compute_floor_ms": compute_floor_ms,
    }
    if candidate_ms:
        row["achieved_bandwidth_gbs"] = bytes_moved / (candidate_ms * 1e-3) / 1e9
        row["achieved_tflops"] = flops / (candidate_ms * 1e-3) / 1e12
        row["pct_peak_bandwidth"] = 100 * row["achieved_bandwidth_gbs"] / target.memory_bandwidth_gbs
        row["pct_peak_flops"] = 100 * row["achieved_tflops"] / peak
    return row


def classify_bottleneck(roof: dict, kernels: list[dict], ncu: dict | None = None) -> dict:
    """memory-bound, compute-bound or latency/occupancy-bound, with the numbers."""
    if not roof.get("available") or "pct_peak_bandwidth" not in roof:
        return {"class": "unknown", "reason": roof.get("reason", "no GPU timing")}
    bw, fl = roof["pct_peak_bandwidth"], roof["pct_peak_flops"]
    ai, ridge = roof["arithmetic_intensity"], roof["ridge_point"]
    if ncu:
        bw = max(bw, ncu.get("memory_throughput_pct", 0.0))
        fl = max(fl, ncu.get("sm_throughput_pct", 0.0))
    side = "memory" if ai < ridge else "compute"
    numbers = (f"{bw:.0f}% of peak bandwidth, {fl:.0f}% of peak FLOP/s, arithmetic intensity "
               f"{ai:.1f} FLOP/B vs ridge {ridge:.0f}")
    spills = sum(k.get("n_spills") or 0 for k in kernels)
    occupancy = min((k["occupancy"] for k in kernels if k.get("occupancy") is not None), default=None)
    if max(bw, fl) >= 50:
        klass = "memory-bound" if bw >= fl else "compute-bound"
        reason = f"{numbers}: the {'memory system' if bw >= fl else 'arithmetic units'} is the limit"
    else:
        klass = "latency/occupancy-bound"
        extra = []
        if occupancy is not None:
            extra.append(f"estimated occupancy {occupancy:.0%}")
        if spills:
            extra.append(f"{spills} register spills")
        reason = (f"{numbers}: neither ceiling is near (roofline side: {side})"
                  + (f"; {', '.join(extra)}" if extra else ""))
    return {"class": klass, "reason": reason, "roofline_side": side,
            "pct_peak_bandwidth": round(bw, 2), "pct_peak_flops": round(fl, 2)}


def kernel_rows(metadata: list[dict]) -> list[dict]:
    rows = []
    for row in metadata:
        row = dict(row)
        row.update(occupancy_estimate(row.get("n_regs"), row.get("num_warps"), row.get("shared_bytes")))
        rows.append(row)
    return rows


def ncu_available() -> bool:
    return shutil.which("ncu") is not None


def ncu_command(kernel_names: list[str], log_file: str) -> list[str]:
    regex = "|".join(kernel_names) or ".*"
    return [
        shutil.which("ncu") or "ncu", "--clock-control", "none", "--csv", "--log-file", log_file,
        "--metrics", ",".join(NCU_METRICS), "--kernel-name", f"regex:^({regex})",
        "--launch-count", str(max(2 * len(kernel_names), 2)), "--target-processes", "all",
    ]


_CLOCKS: dict = {}


def gpu_clocks() -> dict:
    """SM and memory clocks of the first visible GPU now (nvidia-smi; cached a few seconds),
    so a timing can be read against the clocks it ran at."""
    import os
    import subprocess
    import time

    if _CLOCKS and time.monotonic() - _CLOCKS["at"] < 5.0:
        return _CLOCKS["value"]
    smi = shutil.which("nvidia-smi")
    value: dict = {"error": "nvidia-smi not found"}
    if smi:
        index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        try:
            out = subprocess.run(
                [smi, "-i", index, "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,"
                 "temperature.gpu,power.draw", "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=10).stdout.strip().split(",")
            keys = ("sm_mhz", "mem_mhz", "max_sm_mhz", "temperature_c", "power_w")
            value = {k: _number(v) for k, v in zip(keys, out)}
        except (OSError, subprocess.TimeoutExpired) as exc:
            value = {"error": str(exc)[:200]}
    _CLOCKS.update(at=time.monotonic(), value=value)
    return value


def _number(text: str):
    try:
        return float(text.strip())
    except ValueError:
        return text.strip()


def ncu_paths() -> tuple[str, ...]:
    """ncu's install tree (it runs inside the sandbox, so its files must be visible there)."""
    import os

    found = shutil.which("ncu")
    if not found:
        return ()
    real = os.path.realpath(found)
    # .../nsight-compute-2025.x/ncu or .../cuda/bin/ncu -> the tree above
    return (os.path.dirname(os.path.dirname(real)), os.path.dirname(real))


def parse_ncu_csv(text: str) -> dict:
    """Average each metric over the profiled launches; keys are our short names."""
    start = text.find('"ID"')
    if start < 0:
        return {}
    sums: dict[str, list[float]] = {}
    kernels = set()
    for row in csv.DictReader(io.StringIO(text[start:])):
        short = NCU_METRICS.get(row.get("Metric Name", ""))
        if not short:
            continue
        kernels.add(row.get("Kernel Name", ""))
        try:
            value = float(str(row.get("Metric Value", "")).replace(",", ""))
        except ValueError:
            continue
        sums.setdefault(short, []).append(value)
    out = {k: round(sum(v) / len(v), 3) for k, v in sums.items()}
    if out:
        out["kernels"] = sorted(kernels)
    return out
