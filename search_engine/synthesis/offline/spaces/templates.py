"""The fused families' spaces (elementwise, rows, matmul): parameters, defaults per target,
moves with what each is meant to change (`MOVE_REASONS`), and the resource limits that prune
a GEMM configuration before it is evaluated (`resource_problem`, on `resources.py`).

Each family's parameters are the search space; each move (a transformation) changes one or
two parameters and is a step in the tree. Which moves come first depends on the parent's
diagnosis (see `MOVES_BY_DIAGNOSIS`). The kernels themselves are written by
`writers/fused.py` (`render`, part of this family interface) over elementwise.py, rows.py
and matmul.py.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from search_engine.synthesis.offline.frontend.ir import REDUCTIONS, Analysis
from search_engine.synthesis.offline.plan.gemm_epilogue import matmul_dims
from search_engine.synthesis.offline.spaces import resources
from search_engine.synthesis.offline.spaces.dot_precision import STRICT_DOT_PRECISION
from search_engine.synthesis.offline.writers import codegen, matmul, rows, rows_coop
from search_engine.synthesis.offline.writers.fused import render  # noqa: F401 (their writer)

# matmul BLOCK_M 256: a 256x128 tile over two warpgroups (128 accumulator registers a thread
# at 8 warps; 32-deep fp32 stages fit four in the H200's shared memory) is the shape vendor
# tf32 GEMMs favour; the resource check prunes the tiles it cannot hold.
SPACES: dict[str, dict[str, list]] = {
    "elementwise": {"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8]},
    "rows": {"ROWS": [1, 2, 4, 8, 16, 32, 64, 128, 256],
             "BLOCK_R": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16],
             "SPLIT": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]},
    "matmul": {"BLOCK_M": [16, 32, 64, 128, 256], "BLOCK_N": [16, 32, 64, 128, 256],
               "BLOCK_K": [16, 32, 64, 128], "GROUP_M": [1, 4, 8], "num_warps": [2, 4, 8],
               "num_stages": [1, 2, 3, 4, 5], "SPLIT_K": [1, 2, 4, 8, 16, 32]},
}
MAX_SINGLE_ROW_ELEMENTS = 16384  # ROWS * BLOCK_R kept in registers by the single variant
ROW_VARIANTS = ["single", "looped", "online", "split"]  # random draws; `coop` only by move
# coop rows (writers/rows_coop.py): a row's segments stay in registers across the passes and
# the next row's are prefetched; the segment and warps of the single-read softmax experiment
# (benchmarks/coop_rows.py, H200 2026-12-02: 8192 x 4 warps, 4.21 ms against compile's 4.67)
COOP_BLOCK_R, COOP_WARPS = 8192, 4
# measured per target where another coop configuration beat that one (default_kernels_bench,
# 4096 x 393216): on an H100 4096-element segments over 8 warps, each row's partials
# published a row ahead of its wait (softmax 5.13 ms against 5.33, log-softmax 4.97 against
# 5.07, two runs each, 2026-12-06); the H200 keeps 8192 x 4 warps until measured there
COOP_DEFAULTS = {"h100": {"BLOCK_R": 4096, "num_warps": 8, "COOP_AHEAD": 1}}
COOP_BLOCK_RANGE = (1024, 16384)
COOP_REGISTER_BUDGET = 200  # fp32 values a thread may hold before its tiles spill
# a coop thread's registers beyond its values (indices, partials): at 16384 x 16 warps (32
# values a thread, 96 held) the softmax ran on the H100 and the H200, so 96 + this fits 128
COOP_REGISTER_OVERHEAD = 24
PROGRAMS_PER_SM = 4  # split rows: enough programs to fill every SM a few times
# split rows: short segments (many programs, several waves, no straggler SM) that still
# amortise the partials; 2048-element chunks over 8 warps are two 16-byte loads per thread
SPLIT_CHUNKS_PER_PROGRAM = 8
SPLIT_BLOCK_R = 2048
# Strict fp32 GEMMs run as STRICT_DOT_PRECISION: three tf32 tensor-core products (hi*hi +
# hi*lo + lo*hi) reach fp32 accuracy at several times the speed of "ieee" (SIMT fp32 FMA); a
# kernel that misses its tolerance steps one rung up the ladder (dot_precision.py).


def row_length(an: Analysis) -> int:
    return math.prod(an.row_shape[an.reduce_dims[0]: an.reduce_dims[-1] + 1])


def row_inner(an: Analysis) -> int:
    """Elements between a row's neighbours (1: the reduced dims are innermost)."""
    return math.prod(an.row_shape[an.reduce_dims[-1] + 1:])


def rows_analysis(an: Analysis) -> Analysis | None:
    """For matmul problems with reductions after the matmul: their row shape."""
    return an if an.family == "rows" else getattr(an, "_rows_tail", None)


def default_params(an: Analysis, target: str, policy: str) -> dict[str, Any]:
    if an.family == "elementwise":
        return {"BLOCK": 1024, "num_warps": 4}
    if an.family == "rows":
        few_rows = row_count(an) if rows.splittable(an) else 1 << 30  # argmax: no split
        params = clamp(an, _default_rows(row_length(an), row_inner(an), target, few_rows))
        return _coop_default(an, _column_default(an, params), target)
    params = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
              "num_stages": 3, "SPLIT_K": 1, "PRECISION": STRICT_DOT_PRECISION, "TMA": 0,
              "PERSISTENT": 0, "TMA_STORE": 0}
    if target != "interpreter":
        # H100/H200 class: 128x128x64 tiles, 8 warps, 3 stages keep the tensor cores fed
        # while A+B tiles (2 x 32 KiB fp32 per stage) stay inside shared memory (measured on
        # the H200, strict 4096^2 fp32 with K-major B: 1.70 ms against 2.01 ms with K=32).
        params.update(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8)
        # fp32 operands through TMA: H200 default_kernels_bench 2026-12-01, GEMM + bias +
        # ReLU 1024x8192x8192 1.41 ms against 1.58 (matmul 4096^2 1.52 against 1.71); the
        # H100's 3-minute search of 2026-12-06 found the same tile with TMA 10 % faster
        if _fp32_operands(an) and matmul.tma_eligible(an):
            params["TMA"] = 1
    if policy in ("tf32", "bf16"):
        params["PRECISION"] = "tf32"
        if target != "interpreter" and _fp32_operands(an) and matmul.tma_eligible(an):
            params.update(TF32_GPU_GEMM_DEFAULTS)
    params["B_KMAJOR"] = int(matmul.b_kmajor_pays(an))
    tail = getattr(an, "_rows_tail", None)
    if tail is not None:
        tail_params = _default_rows(row_length(tail), row_inner(tail), target)
        params.update({"tail_" + k: v for k, v in tail_params.items()})
    if target != "interpreter":
        params["SPLIT_K"] = split_k_default(an, clamp(an, params), target)
    return clamp(an, params)


# One tf32 product per MMA waits on loads at strict's 128x128x64 tiles: on the H200
# (default_kernels_bench --precision tf32) TMA-fed 128x256x32 tiles in three stages ran
# 0.37 ms against 0.54 ms on GEMM+bias+ReLU 1024x8192x8192 (cuBLAS tf32 0.36 ms) and 0.49
# against 0.65 ms on a 4096^2 matmul.
TF32_GPU_GEMM_DEFAULTS = {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3}


def _fp32_operands(an: Analysis) -> bool:
    return all(an.nodes[r].dtype == torch.float32 for r in an.nodes[an.matmul].refs())


def row_count(an: Analysis) -> int:
    return math.prod(an.row_shape) // row_length(an)


def _default_rows(length: int, inner: int = 1, target: str = "interpreter",
                  n_rows: int = 1 << 30) -> dict[str, Any]:
    """Rows that fit stay in registers (one read, one write). Strided rows (a reduction over
    a middle dim) take many neighbouring rows per program so loads coalesce. Long rows
    stream in an online design: max and sum (or mean and variance) in one pass, the output
    pass next; when there are too few rows to fill the SMs, a row is split over programs."""
    block = codegen.next_pow2(length)
    if block <= 8192:
        budget = 16384 if inner > 1 else 2048  # elements per program
        # a strided row keeps its neighbours even where they do not divide the inner size
        # (the writer's general index path): H100, default_kernels_bench 2026-12-05, a sum
        # over the middle dim of 128x4096x4095 took 5.8 ms with 4 rows a program, 17.0 ms
        # with the 1 that halving to a divisor of 4095 left
        rows = max(1, min(256 if inner > 1 else 16, budget // block))
        warps = 4 if block * rows <= 4096 else 8
        return {"variant": "single", "ROWS": rows, "BLOCK_R": block, "num_warps": warps,
                "SPLIT": 1}
    chunk = 2048 if target == "interpreter" else 4096
    params = {"variant": "online", "ROWS": 1, "BLOCK_R": chunk, "num_warps": 8, "SPLIT": 1}
    programs = PROGRAMS_PER_SM * _multiprocessors(target)
    if n_rows < programs and inner == 1:
        fill = codegen.next_pow2(-(-programs // n_rows))
        short = codegen.next_pow2(-(-length // (SPLIT_CHUNKS_PER_PROGRAM * SPLIT_BLOCK_R)))
        params.update(variant="split", BLOCK_R=SPLIT_BLOCK_R,
                      SPLIT=min(max(fill, short), SPACES["rows"]["SPLIT"][-1]))
    return params


# A column reduction (one sum, max or min over a middle dim): many neighbouring rows a
# program in short chunks, so each load is a wide contiguous slice and the input is read
# once (H200, default_kernels_bench 2026-12-05, a sum over dim 1 of 128x4096x4095: 2.03 ms,
# 1.00 of copy and 1.08x compile, against 4.90 ms with 4 whole rows a program, 15.0 with 1)
COLUMN_ROWS, COLUMN_CHUNK = 256, 64
# an index reduction too (each lane keeps its best and its column), in half the chunk for
# the index it holds: as one whole strided row of 4 rows a program, argmax over dim 1 of
# 128x4096x4095 ran 5.71 ms, 0.55x compile (H100, default_kernels_bench 2026-12-06)
COLUMN_REDUCTIONS = {"sum": COLUMN_CHUNK, "max": COLUMN_CHUNK, "min": COLUMN_CHUNK,
                     "argmax": COLUMN_CHUNK // 2, "argmin": COLUMN_CHUNK // 2}


def _column_default(an: Analysis, params: dict[str, Any]) -> dict[str, Any]:
    reductions = [n for n in an.nodes.values() if n.op in REDUCTIONS]
    reduced = math.prod(an.nodes[an.output].shape) * row_length(an) <= math.prod(an.row_shape)
    if row_inner(an) < COLUMN_ROWS or row_length(an) <= COLUMN_CHUNK or not reduced or \
            len(reductions) != 1 or reductions[0].op not in COLUMN_REDUCTIONS:
        return params
    return clamp(an, {**params, "variant": "looped", "ROWS": COLUMN_ROWS,
                      "BLOCK_R": COLUMN_REDUCTIONS[reductions[0].op], "num_warps": 8})


def _coop_default(an: Analysis, params: dict[str, Any], target: str) -> dict[str, Any]:
    """On a GPU, a long row the online design would read twice is read once by cooperating
    programs (default_kernels_bench on the H200, 2026-12-05, 4096 x 393216: softmax 4.36 ms
    against online's 4.77, log-softmax 4.07 against 4.79, torch.compile 4.67)."""
    from search_engine.hardware import get_target

    if params.get("variant") != "online":
        return params
    try:
        gpu = get_target(target)
    except (KeyError, ValueError):
        return params
    measured = COOP_DEFAULTS.get(gpu.name, {"BLOCK_R": COOP_BLOCK_R, "num_warps": COOP_WARPS})
    coop = clamp(an, {**params, "variant": "coop", **measured})
    if not valid(an, coop) or resource_problem(an, coop, gpu):  # the interpreter included
        return params
    return coop


# A GEMM whose output tiles cannot fill the card (a matrix-vector product: 2048 x 1 outputs
# are 16 tiles of 128 rows; a large-K product of small matrices) leaves most SMs idle, each
# busy one streaming all of K: K is split over programs (fp32 atomics into a workspace, then
# the epilogue kernel) until the tiles fill the SMs, each split keeping a few K tiles.
MIN_K_TILES_A_SPLIT = 4


def split_k_default(an: Analysis, params: dict[str, Any], target: str) -> int:
    """The largest power-of-two K split (within the space) whose programs fit one wave."""
    m, n, k = matmul_dims(an)
    mm = an.nodes[an.matmul]
    a_shape, b_shape = (an.nodes[r].shape for r in mm.refs())
    batch = math.prod(a_shape[:-2]) if len(b_shape) > 2 else 1
    tiles = -(-m // params["BLOCK_M"]) * -(-n // params["BLOCK_N"]) * batch
    programs, split = _multiprocessors(target), 1
    while (split * 2 in SPACES["matmul"]["SPLIT_K"] and tiles * split * 2 <= programs
           and k >= params["BLOCK_K"] * MIN_K_TILES_A_SPLIT * split * 2):
        split *= 2
    return split


def _multiprocessors(target: str) -> int:
    from search_engine.hardware import get_target

    try:
        return get_target(target).multiprocessors
    except (KeyError, ValueError):
        return 132


def clamp(an: Analysis, params: dict[str, Any]) -> dict[str, Any]:
    """Keep parameters legal for the problem's shapes (tiles not far beyond the dims)."""
    p = dict(params)
    if an.family == "matmul":
        m, n, k = matmul_dims(an)
        p["BLOCK_M"] = min(p["BLOCK_M"], max(16, codegen.next_pow2(m)))
        p["BLOCK_N"] = min(p["BLOCK_N"], max(16, codegen.next_pow2(n)))
        p["BLOCK_K"] = min(p["BLOCK_K"], max(16, codegen.next_pow2(k)))
        while p["SPLIT_K"] > 1 and p["BLOCK_K"] * p["SPLIT_K"] > max(k, 16):
            p["SPLIT_K"] //= 2
    for prefix, tail in (("", an if an.family == "rows" else None),
                         ("tail_", getattr(an, "_rows_tail", None))):
        if tail is None:
            continue
        length = row_length(tail)
        if p[prefix + "variant"] == "single":
            p[prefix + "BLOCK_R"] = codegen.next_pow2(length)
            while p[prefix + "ROWS"] > 1 and \
                    p[prefix + "ROWS"] * p[prefix + "BLOCK_R"] > MAX_SINGLE_ROW_ELEMENTS:
                p[prefix + "ROWS"] //= 2
        else:
            p[prefix + "BLOCK_R"] = min(p[prefix + "BLOCK_R"], max(256, codegen.next_pow2(length)))
        while p[prefix + "ROWS"] > 1 and \
                p[prefix + "ROWS"] * p[prefix + "BLOCK_R"] > MAX_SINGLE_ROW_ELEMENTS:
            p[prefix + "ROWS"] //= 2  # the streaming variants hold ROWS x BLOCK_R too
        if p.get(prefix + "variant") == "coop":
            lo, hi = COOP_BLOCK_RANGE
            p[prefix + "ROWS"] = 1
            p[prefix + "BLOCK_R"] = max(lo, min(hi, p[prefix + "BLOCK_R"],
                                            codegen.next_pow2(length)))
            p[prefix + "SPLIT"] = -(-length // p[prefix + "BLOCK_R"])
        if p.get(prefix + "variant") == "split":
            p[prefix + "ROWS"] = 1
            p[prefix + "SPLIT"] = max(1, min(p.get(prefix + "SPLIT", 1),
                                             codegen.next_pow2(-(-length // p[prefix + "BLOCK_R"]))))
    return p


def valid(an: Analysis, params: dict[str, Any]) -> bool:
    for prefix, tail in (("", an if an.family == "rows" else None),
                         ("tail_", getattr(an, "_rows_tail", None))):
        if tail is None:
            continue
        variant = params[prefix + "variant"]
        if variant == "single" and codegen.next_pow2(row_length(tail)) > MAX_SINGLE_ROW_ELEMENTS:
            return False
        if variant == "split" and (prefix or not rows.splittable(tail)):
            return False
        if variant == "coop" and (prefix or row_length(tail) <= MAX_SINGLE_ROW_ELEMENTS
                                  or not rows_coop.coop_applies(tail)):
            return False  # a row that fits one program's registers is read once already
    if an.family == "matmul" and params.get("TMA") and not matmul.tma_eligible(an):
        return False
    if an.family == "matmul" and params.get("TMA_STORE") and \
            not matmul.tma_store_applies(an, params):
        return False
    if an.family == "matmul" and params.get("B_KMAJOR") and not matmul.b_kmajor_applies(an):
        return False
    if an.family == "matmul" and params.get("PERSISTENT") and \
            not matmul.persistent_applies(an, params):
        return False
    return True


def random_params(an: Analysis, base: dict[str, Any], rng) -> dict[str, Any]:
    p = dict(base)
    space = SPACES[an.family]
    for key, choices in space.items():
        if key in p:
            p[key] = rng.choice(choices)
    if an.family == "rows":
        p["variant"] = rng.choice(ROW_VARIANTS)
    tail = getattr(an, "_rows_tail", None)
    if tail is not None:
        p["tail_variant"] = rng.choice(ROW_VARIANTS)
        p["tail_num_warps"] = rng.choice(SPACES["rows"]["num_warps"])
        p["tail_ROWS"] = rng.choice(SPACES["rows"]["ROWS"])
        p["tail_BLOCK_R"] = rng.choice(SPACES["rows"]["BLOCK_R"])
    return p


# -- moves ---------------------------------------------------------------------------------

def _step(key: str, direction: int, family: str) -> Callable[[dict], dict | None]:
    def move(p: dict) -> dict | None:
        choices = SPACES[family][key.replace("tail_", "")]
        if key not in p or p[key] not in choices:
            return None
        index = choices.index(p[key]) + direction
        if not 0 <= index < len(choices):
            return None
        return {**p, key: choices[index]}
    return move


def _set(key: str, value) -> Callable[[dict], dict | None]:
    def move(p: dict) -> dict | None:
        if key not in p or p[key] == value:
            return None
        return {**p, key: value}
    return move


def _coop_ahead(value: int) -> Callable[[dict], dict | None]:
    """Publish ahead on (1) or off (0): a move of coop rows only (others never wait)."""
    def move(p: dict) -> dict | None:
        if p.get("variant") != "coop" or int(p.get("COOP_AHEAD", 0)) == value:
            return None
        return {**p, "COOP_AHEAD": value}
    return move


MOVES: dict[str, dict[str, Callable[[dict], dict | None]]] = {
    "elementwise": {
        "block_up": _step("BLOCK", 1, "elementwise"),
        "block_down": _step("BLOCK", -1, "elementwise"),
        "warps_up": _step("num_warps", 1, "elementwise"),
        "warps_down": _step("num_warps", -1, "elementwise"),
    },
    "rows": {
        "rows_up": _step("ROWS", 1, "rows"), "rows_down": _step("ROWS", -1, "rows"),
        "warps_up": _step("num_warps", 1, "rows"), "warps_down": _step("num_warps", -1, "rows"),
        "chunk_up": _step("BLOCK_R", 1, "rows"), "chunk_down": _step("BLOCK_R", -1, "rows"),
        "to_looped": _set("variant", "looped"), "to_single": _set("variant", "single"),
        "to_online": _set("variant", "online"),
        "to_split": _set("variant", "split"),
        "to_coop": lambda p: None if p.get("variant") == "coop" else {
            **p, "variant": "coop", "BLOCK_R": COOP_BLOCK_R, "num_warps": COOP_WARPS},
        "coop_ahead": _coop_ahead(1), "coop_plain": _coop_ahead(0),
        "split_up": _step("SPLIT", 1, "rows"), "split_down": _step("SPLIT", -1, "rows"),
    },
    "matmul": {
        "tile_m_up": _step("BLOCK_M", 1, "matmul"), "tile_m_down": _step("BLOCK_M", -1, "matmul"),
        "tile_n_up": _step("BLOCK_N", 1, "matmul"), "tile_n_down": _step("BLOCK_N", -1, "matmul"),
        "tile_k_up": _step("BLOCK_K", 1, "matmul"), "tile_k_down": _step("BLOCK_K", -1, "matmul"),
        "group_m_up": _step("GROUP_M", 1, "matmul"),
        "group_m_down": _step("GROUP_M", -1, "matmul"),
        "warps_up": _step("num_warps", 1, "matmul"),
        "warps_down": _step("num_warps", -1, "matmul"),
        "stages_up": _step("num_stages", 1, "matmul"),
        "stages_down": _step("num_stages", -1, "matmul"),
        "split_k_up": _step("SPLIT_K", 1, "matmul"),
        "split_k_down": _step("SPLIT_K", -1, "matmul"),
        "tf32": _set("PRECISION", "tf32"),
        "dot_tf32x3": _set("PRECISION", STRICT_DOT_PRECISION),
        "dot_ieee": _set("PRECISION", "ieee"),
        "to_tma": _set("TMA", 1), "tma_off": _set("TMA", 0),
        "tma_store": _set("TMA_STORE", 1), "tma_store_off": _set("TMA_STORE", 0),
        "b_kmajor": _set("B_KMAJOR", 1), "b_as_stored": _set("B_KMAJOR", 0),
        "to_persistent": _set("PERSISTENT", 1), "persistent_off": _set("PERSISTENT", 0),
        "tail_rows_up": _step("tail_ROWS", 1, "rows"),
        "tail_warps_up": _step("tail_num_warps", 1, "rows"),
        "tail_to_looped": _set("tail_variant", "looped"),
        "tail_to_online": _set("tail_variant", "online"),
    },
}

MOVES_BY_DIAGNOSIS = {
    "failure": ["dot_ieee", "tma_off", "block_down", "warps_down", "rows_down", "to_looped",
                "chunk_down", "tile_m_down", "tile_n_down", "tile_k_down", "stages_down",
                "split_k_down", "tail_to_looped"],
    # memory-bound: fewer passes over memory first (online, a long row read once by
    # cooperating programs, whole row in registers), then more bytes in flight per program
    "memory": ["to_online", "to_coop", "coop_ahead", "to_single", "to_split", "block_up",
               "rows_up", "chunk_up", "warps_up", "split_up", "split_down",
               "tile_k_up", "stages_up", "group_m_up", "tile_n_up", "tma_store", "tail_to_online",
               "tail_rows_up"],
    "compute": ["dot_tf32x3", "b_kmajor", "to_tma", "tile_m_up", "tile_n_up", "stages_up", "tf32", "warps_up",
                "tile_k_up", "group_m_up", "to_persistent"],
    "latency": ["coop_ahead", "coop_plain", "to_split", "split_up", "warps_down", "rows_down",
                "split_k_up", "tile_m_down", "tile_n_down", "block_down", "chunk_down",
                "warps_up", "tail_warps_up", "to_persistent"],
}


# Why each kind of move is expected to help (kept with the node, read by skills).
MOVE_REASONS = {
    "to_online": "one read for softmax's max and sum (online rescaling) and independent "
                 "reductions in one pass: fewer passes over HBM",
    "to_single": "the whole row in registers: one read and one write",
    "to_looped": "stream the row in chunks: fewer registers, no spills",
    "to_coop": "a long row read once: its segments stay in registers while the programs "
               "of the row exchange partial results, and the next row's are loaded during "
               "the wait (one read and one write, where online and split read twice)",
    "coop_ahead": "coop rows publish a row's partials an iteration ahead of its wait: the "
                  "siblings' count-ins land before anyone waits, so the wait is one poll",
    "coop_plain": "coop rows wait right after publishing, the next row's load in flight "
                  "during the wait (the ahead form waits for that load first)",
    "to_split": "split each row over several programs: enough programs for every SM when "
                "rows are few and long",
    "split_up": "more programs per row: more SMs busy",
    "split_down": "fewer programs per row: fewer partial results to combine",
    "rows_up": "more rows per program: more bytes in flight, coalesced strided rows",
    "rows_down": "fewer rows per program: fewer registers, more programs",
    "block_up": "wider blocks: more bytes in flight per program",
    "block_down": "smaller blocks: more programs, fewer registers",
    "chunk_up": "larger chunks: more bytes in flight per loop iteration",
    "chunk_down": "smaller chunks: fewer registers",
    "warps_up": "more warps: more loads in flight, more latency hidden",
    "warps_down": "fewer warps: cheaper reductions, more programs per SM",
    "tile_m_up": "taller tiles: more reuse of B per load",
    "tile_n_up": "wider tiles: more reuse of A per load",
    "tile_k_up": "deeper K steps: fewer loop iterations",
    "stages_up": "deeper software pipeline: loads overlap the MMAs",
    "stages_down": "shallower pipeline: less shared memory, more programs per SM",
    "group_m_up": "grouped (swizzled) program order: tiles reuse A and B from L2",
    "split_k_up": "split K over programs: more programs when M x N has too few tiles",
    "dot_tf32x3": "strict fp32 on tensor cores: three tf32 products (hi*hi + hi*lo + lo*hi)",
    "dot_ieee": "fp32 FMA dot products: the exact fallback when tf32x3 misses the tolerance",
    "tf32": "tf32 tensor cores (tf32 policy only)",
    "to_tma": "Hopper TMA descriptors: the copy engine loads the tiles, no address math "
              "or masks in the K loop",
    "tma_off": "pointer loads instead of TMA descriptors",
    "tma_store": "the output tile stored through a TMA descriptor: whole lines written by "
                 "the copy engine from shared memory (a GEMM whose time is its output)",
    "tma_store_off": "the output tile stored through pointers",
    "b_kmajor": "B copied K-major first: fp32 (tf32) tensor-core operands must be K-major "
                "in shared memory, an N-major B falls off the fast MMA path",
    "b_as_stored": "B read as stored: no copy (small M, or 16-bit operands)",
    "to_persistent": "a persistent grid (two programs an SM walking the tiles): a tile's "
                     "epilogue overlaps the next tile's loads, no partial last wave",
    "persistent_off": "one program a tile",
}


def move_record(move: str, parent_params: dict[str, Any], params: dict[str, Any],
                parent_id: int, diagnosis: str) -> dict[str, Any]:
    """What a move changed, from which node and diagnosis, and why (see MOVE_REASONS)."""
    changed = {k: [parent_params.get(k), v] for k, v in sorted(params.items())
               if parent_params.get(k) != v}
    reasons = [MOVE_REASONS[m] for m in move.split("+") if m in MOVE_REASONS]
    return {"name": move, "changed": changed, "parent_id": parent_id,
            "parent_diagnosis": diagnosis, "why": "; ".join(reasons)}


def diagnosis_class(status: str, diagnostics: dict[str, Any]) -> str:
    if status in ("compile_error", "runtime_error", "timeout", "incorrect"):
        return "failure"
    bottleneck = diagnostics.get("bottleneck", "")
    if isinstance(bottleneck, dict):  # the evaluator's {"class": ..., "reason": ...}
        bottleneck = bottleneck.get("class", "")
    text = str(bottleneck).lower()
    for key in ("memory", "compute", "latency"):
        if key in text:
            return key
    if "occupancy" in text:
        return "latency"
    return "unknown"


# Moves that take a split row back to one program per row: a split parent exists because the
# rows are too few to fill the GPU (LayerNorm 16x64x256x256 on the H200: 0.235 ms split,
# 11.6 ms unsplit), so they are tried last there.
UNSPLIT_MOVES = ("to_online", "to_single", "to_looped")


def ordered_moves(an: Analysis, diagnosis: str, policy: str, rng,
                  params: dict[str, Any] | None = None) -> list[str]:
    available = list(MOVES[an.family])
    if policy == "strict":
        available = [m for m in available if m != "tf32"]
    else:  # tf32/bf16 sessions: plain tf32 is faster than the 3-product split, which only a
        # tolerance miss asks for (the synthesizer's precision fallback)
        available = [m for m in available if m != "dot_tf32x3"]
    if getattr(an, "_rows_tail", None) is None:
        available = [m for m in available if not m.startswith("tail_")]
    preferred = [m for m in MOVES_BY_DIAGNOSIS.get(diagnosis, []) if m in available]
    rest = [m for m in available if m not in preferred]
    rng.shuffle(rest)
    ordered = preferred + rest
    if params and params.get("variant") == "split" and diagnosis != "failure":
        ordered = ([m for m in ordered if m not in UNSPLIT_MOVES]
                   + [m for m in ordered if m in UNSPLIT_MOVES])
    return ordered


def apply_move(an: Analysis, params: dict, move: str) -> dict | None:
    new = MOVES[an.family][move](params)
    if new is None:
        return None
    new = clamp(an, new)
    return new if new != params and valid(an, new) else None


def notes(an: Analysis, params: dict[str, Any]) -> str:
    """The proposal's notes: the family, and for GEMMs how the dot products were computed
    (``dot_precision``), so a strict result says which method passed."""
    text = f"family {an.family}"
    if "PRECISION" in params:
        text += f"; dot_precision {params['PRECISION']}"
    return text


def fits_shared_memory(an: Analysis, params: dict[str, Any], limit_bytes: int) -> bool:
    """Matmul tiles must fit the target's shared memory (`resources`: num_stages copies of
    the A and B tiles plus epilogue scratch; 128x128x64 fp32 with 4 stages needs 256 KiB)."""
    if an.family != "matmul" or limit_bytes <= 0:
        return True
    return resources.dot_shared_memory_bytes(params, _operand_bytes(an)) <= limit_bytes


def resource_problem(an: Analysis, params: dict[str, Any], target) -> str:
    """Why this configuration cannot run on `target` (shared memory, registers, programs
    that must run at once), or ''."""
    if an.family == "rows" and params.get("variant") == "coop":
        # registers bound how many programs share an SM (LayerNorm over 16 rows of 4M
        # elements, 512 segments of 8192, did not fit the H100 or the H200 at run time)
        registers = -(-(_coop_held_values(an, params) + COOP_REGISTER_OVERHEAD) // 8) * 8
        return (_coop_spill_problem(an, params)
                or rows_coop.coop_resource_problem(target, params, registers))
    if an.family != "matmul":
        return ""
    return resources.dot_resource_problem(params, _operand_bytes(an),
                                          target.shared_memory_per_block_bytes,
                                          target.max_registers_per_thread)


def _coop_held_values(an: Analysis, params: dict[str, Any]) -> int:
    """A coop program holds each full-size operand's segment twice (this row's and the
    prefetched next row's) and a tile of what it reduces: fp32 values a thread."""
    per_thread = params["BLOCK_R"] // (32 * params["num_warps"])
    return per_thread * (2 * rows_coop.full_operands(an) + 1)


def _coop_spill_problem(an: Analysis, params: dict[str, Any]) -> str:
    """Too many values a thread spill to local memory, which costs more than the read they
    save."""
    held = _coop_held_values(an, params)
    if held <= COOP_REGISTER_BUDGET:
        return ""
    return (f"coop segments of {params['BLOCK_R']} over {params['num_warps']} warps hold "
            f"about {held} values a thread (budget {COOP_REGISTER_BUDGET}): they would spill")


def _operand_bytes(an: Analysis) -> int:
    """Operands are loaded into shared memory as stored."""
    return max(an.nodes[r].dtype.itemsize for r in an.nodes[an.matmul].refs())
