"""Experiment (issue 31): long-row softmax / log-softmax with ONE read of the input.

Each row of R elements is shared by SPLIT co-resident programs (a persistent grid sized
from the compiled kernel's registers, so every program of a group is on the chip at once).
A program keeps its segment of the row in registers, publishes its partial (max, sum of
exp) to a small workspace, waits on a per-row counter for its siblings, combines the
partials and writes its segment: the input is read once and the output written once (the
copy floor), where the split-row default and torch.compile read it twice.

GPU only (torch, triton, numpy); a plain file run:

    python3 benchmarks/coop_rows.py [--rows 4096 --cols 393216] [--out results.json]

Prints eager, torch.compile (max-autotune-no-cudagraphs), the committed default kernel and
each cooperative configuration: ms, GB/s, fraction of the measured copy bandwidth and
relative L2 error against an fp64 reference (strict fp32 tolerance 1e-5).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

STRICT_REL_NORM = 1e-5
SPIN_LIMIT = tl.constexpr(1 << 26)  # a wait that never ends gives a wrong answer, not a hung GPU


@triton.jit
def _publish(ws_ptr, cnt_ptr, row, part, x, SPLIT: tl.constexpr):
    """This program's partial (max, sum of exp) of its segment of `row`, then its arrival."""
    m = tl.max(x, 0)
    s = tl.sum(tl.exp(x - m), 0)
    slot = ws_ptr + (row.to(tl.int64) * SPLIT + part) * 2
    tl.store(slot, m)
    tl.store(slot + 1, s)
    tl.atomic_add(cnt_ptr + row, 1, sem="release")


@triton.jit
def _finish(x, y_ptr, ws_ptr, cnt_ptr, row, R, cols, cmask, SPLIT: tl.constexpr,
            SPLIT_P2: tl.constexpr, LOG: tl.constexpr):
    """Wait for every sibling's partial of `row`, combine them and write this segment."""
    sib = tl.arange(0, SPLIT_P2)
    smask = sib < SPLIT
    seen = tl.atomic_add(cnt_ptr + row, 0, sem="acquire")
    spins = 0
    while (seen < SPLIT) & (spins < SPIN_LIMIT):
        seen = tl.atomic_add(cnt_ptr + row, 0, sem="acquire")
        spins += 1
    base = ws_ptr + (row.to(tl.int64) * SPLIT + sib) * 2
    pm = tl.load(base, mask=smask, other=float("-inf"), volatile=True)
    ps = tl.load(base + 1, mask=smask, other=0.0, volatile=True)
    big_m = tl.max(pm, 0)
    big_s = tl.sum(ps * tl.exp(pm - big_m), 0)
    if LOG:
        y = x - big_m - tl.log(big_s)
    else:
        y = tl.exp(x - big_m) / big_s
    tl.store(y_ptr + row.to(tl.int64) * R + cols, y, mask=cmask)


@triton.jit
def coop_softmax_kernel(x_ptr, y_ptr, ws_ptr, cnt_ptr, n_rows, R, n_groups,
                        SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, SEG: tl.constexpr,
                        LOG: tl.constexpr, PREFETCH: tl.constexpr):
    """PREFETCH 0: load, publish, wait, write, then load the next row; 1: the next row's
    segment is loaded before the wait; 2 (publish ahead): the next row's partial is also
    published before this row's wait, so the siblings have had a whole row's load to
    arrive by the time a program waits."""
    group = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * SEG + tl.arange(0, SEG)
    cmask = cols < R
    row = group
    x = tl.load(x_ptr + row.to(tl.int64) * R + cols, mask=cmask & (row < n_rows),
                other=float("-inf"))
    if PREFETCH == 2:
        if row < n_rows:
            _publish(ws_ptr, cnt_ptr, row, part, x, SPLIT)
    while row < n_rows:
        nxt = row + n_groups
        if PREFETCH == 2:
            x_next = tl.load(x_ptr + nxt.to(tl.int64) * R + cols, mask=cmask & (nxt < n_rows),
                             other=float("-inf"))
            if nxt < n_rows:
                _publish(ws_ptr, cnt_ptr, nxt, part, x_next, SPLIT)
        else:
            _publish(ws_ptr, cnt_ptr, row, part, x, SPLIT)
            if PREFETCH == 1:
                x_next = tl.load(x_ptr + nxt.to(tl.int64) * R + cols,
                                 mask=cmask & (nxt < n_rows), other=float("-inf"))
        _finish(x, y_ptr, ws_ptr, cnt_ptr, row, R, cols, cmask, SPLIT, SPLIT_P2, LOG)
        if PREFETCH > 0:
            x = x_next
        else:
            x = tl.load(x_ptr + nxt.to(tl.int64) * R + cols, mask=cmask & (nxt < n_rows),
                        other=float("-inf"))
        row = nxt


def blocks_per_sm(compiled, num_warps: int) -> int:
    """Resident programs per SM from the compiled kernel's registers and shared memory."""
    props = torch.cuda.get_device_properties(0)
    regs_per_warp = -(-compiled.n_regs * 32 // 256) * 256
    by_regs = (props.regs_per_multiprocessor // max(regs_per_warp, 1)) // num_warps
    by_threads = props.max_threads_per_multi_processor // (32 * num_warps)
    shared = compiled.metadata.shared
    by_smem = (props.shared_memory_per_multiprocessor // shared) if shared else 32
    return max(0, min(by_regs, by_threads, by_smem, 32))


class CoopSoftmax:
    def __init__(self, seg: int, num_warps: int, prefetch: int, log: bool, fill: float = 1.0):
        self.seg, self.num_warps, self.prefetch, self.log, self.fill = (
            seg, num_warps, prefetch, log, fill)
        self.info: dict = {}

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, r = x.shape
        split = -(-r // self.seg)
        split_p2 = max(2, 1 << (split - 1).bit_length())
        y = torch.empty_like(x)
        ws = torch.empty((n_rows, split, 2), device=x.device, dtype=torch.float32)
        cnt = torch.zeros(n_rows, device=x.device, dtype=torch.int32)
        consts = dict(SPLIT=split, SPLIT_P2=split_p2, SEG=self.seg, LOG=self.log,
                      PREFETCH=int(self.prefetch), num_warps=self.num_warps)
        if "groups" not in self.info:
            compiled = coop_softmax_kernel.warmup(x, y, ws, cnt, n_rows, r, 1, grid=(1, split),
                                                  **consts)
            if hasattr(compiled, "_init_handles"):
                compiled._init_handles()  # n_regs is known once the module is loaded
            per_sm = blocks_per_sm(compiled, self.num_warps)
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            groups = min(n_rows, int(sms * per_sm * self.fill) // split)
            self.info = {"n_regs": compiled.n_regs, "spills": compiled.n_spills,
                         "per_sm": per_sm, "split": split, "groups": groups}
        groups = self.info["groups"]
        if groups < 1:
            raise RuntimeError(f"a row's {split} programs do not fit on the chip at once")
        coop_softmax_kernel[(groups, split)](x, y, ws, cnt, n_rows, r, groups, **consts)
        return y


def _bench(fn) -> float:
    return float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"))


def _rel_error(out, ref) -> float:
    return float(torch.linalg.vector_norm((out.double() - ref).flatten())
                 / torch.linalg.vector_norm(ref.flatten()).clamp_min(1e-30))


def copy_bandwidth(nbytes: int) -> float:
    a = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32)
    b = torch.empty_like(a)
    ms = _bench(lambda: b.copy_(a))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def default_kernel(name: str, folder: Path):
    data = json.loads((Path(__file__).resolve().parents[1] / "search_engine" / "synthesis"
                       / "offline" / "default_kernels_h200.json").read_text())
    path = folder / f"default_{name}.py"
    path.write_text(data[name]["kernels"]["default"]["source"])
    spec = importlib.util.spec_from_file_location(f"default_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ModelNew().cuda()


def run(rows: int, cols: int, configs, with_compile: bool,
        logs=(False, True)) -> list[dict]:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    nbytes = rows * cols * 4
    floor_gbs = copy_bandwidth(nbytes)
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}"
          f"; copy {floor_gbs:.0f} GB/s; floor {2 * nbytes / floor_gbs / 1e6:.3f} ms")
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device="cuda")
    results = []
    for log in logs:
        op = torch.log_softmax if log else torch.softmax
        name = "log_softmax" if log else "softmax"
        ref = op(x.double(), dim=1)

        def record(label, fn, extra=None):
            entry = {"problem": name, "kernel": label, **(extra or {})}
            try:
                out = fn()
                entry["rel_error"] = _rel_error(out, ref)
                del out
                entry["ms"] = _bench(fn)
                entry["gbs"] = 2 * nbytes / (entry["ms"] * 1e-3) / 1e9
                entry["of_copy"] = entry["gbs"] / floor_gbs
            except Exception as exc:  # one failing variant must not end the run
                entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            results.append(entry)
            if "ms" in entry:
                ok = "ok" if entry["rel_error"] <= STRICT_REL_NORM else "WRONG"
                print(f"{name:12s} {label:34s} {entry['ms']:.3f} ms {entry['gbs']:6.0f} GB/s "
                      f"{entry['of_copy']:.2f} of copy  err {entry['rel_error']:.1e} {ok} "
                      f"{extra or ''}")
            else:
                print(f"{name:12s} {label:34s} FAILED {entry['error']}")
            return entry

        record("eager", lambda: op(x, dim=1))
        if with_compile:
            started = time.perf_counter()
            compiled = torch.compile(lambda t: op(t, dim=1), mode="max-autotune-no-cudagraphs")
            compiled(x)
            record("compile", lambda: compiled(x),
                   {"compile_s": round(time.perf_counter() - started, 1)})
        with tempfile.TemporaryDirectory() as tmp:
            try:
                default = default_kernel(name, Path(tmp))
                record("default", lambda: default(x))
            except Exception as exc:
                print(f"default kernel unavailable: {exc}")
        for seg, warps, prefetch, fill in configs:
            coop = CoopSoftmax(seg, warps, prefetch, log, fill)
            label = f"coop seg{seg} w{warps} pf{int(prefetch)} fill{fill}"
            entry = record(label, lambda: coop(x))
            entry.update(coop.info)
        del ref
        torch.cuda.empty_cache()
    return results


# (segment, warps, prefetch mode, fill): the last session's best (8192, 4, prefetch 1) against
# publish-ahead at the segments and warps around it.
CONFIGS = [(8192, 4, 1, 1.0)] + [(seg, warps, 2, 1.0) for seg, warps in (
    (8192, 4), (8192, 8), (4096, 4), (16384, 8), (16384, 16), (4096, 2))] + [(8192, 4, 2, 0.5)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=393216)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", choices=("softmax", "log_softmax"),
                        help="time one of the two operators")
    args = parser.parse_args()
    logs = {None: (False, True), "softmax": (False,), "log_softmax": (True,)}[args.only]
    results = run(args.rows, args.cols, CONFIGS, not args.no_compile, logs)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
