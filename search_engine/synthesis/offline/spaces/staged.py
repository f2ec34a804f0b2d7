"""The staged families' space (conv, attention, batched_matmul, pooling, scan, reduction,
pointwise): one space of tile sizes, warps, stages and reduction splits serving every stage
(each clamped to its stage's sizes), the defaults per target and precision policy, ``±``
steps ordered by the diagnosis, and the shared-memory limit that prunes before evaluation.
With `render` (`writers/staged.py`) it is the family interface the synthesizer calls."""

from __future__ import annotations

from typing import Any

from search_engine.synthesis.offline.frontend.ir import Analysis
from search_engine.synthesis.offline.plan.classify import FAMILIES  # noqa: F401 (its families)
from search_engine.synthesis.offline.plan.stages import plan
from search_engine.synthesis.offline.spaces import resources
from search_engine.synthesis.offline.spaces.dot_precision import STRICT_DOT_PRECISION
from search_engine.synthesis.offline.writers import conv, recurrence
from search_engine.synthesis.offline.writers.pooling import ROW_TAPS
from search_engine.synthesis.offline.writers.staged import render  # noqa: F401 (its writer)

# Strict fp32 dots (conv, attention, batched matmul) run as three tf32 tensor-core products,
# as the matmul family's do; a kernel that misses its tolerance steps one rung up the dot
# precision ladder (dot_precision.py). Stages without a dot ignore PRECISION.
PRECISION_MOVES = {"dot_ieee": "ieee", "dot_tf32x3": STRICT_DOT_PRECISION, "tf32": "tf32"}
# moves straight to a layout (one step of its parameter may land on another): a pool's row
# block one lane an output, tap by tap; a recurrence's units spread over cooperating
# programs (writers/recurrence.py, GPU only; not a default until timed)
LAYOUT_MOVES = {"pool_row_taps": ("POOL_TILE", ROW_TAPS),
                "recurrence_coop": ("RECURRENCE_COOP", 1)}

STAGED_OPERAND_BYTES = 4  # operands are loaded as fp32, the widest the stages take


SPACE: dict[str, list] = {
    "BLOCK": [128, 256, 512, 1024, 2048], "BLOCK_O": [1, 2, 4, 8, 16, 32, 64],
    "BLOCK_R": [16, 32, 64, 128, 256, 512, 1024, 2048], "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [16, 32, 64, 128], "BLOCK_K": [16, 32, 64], "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2, 3, 4], "SPLIT_R": [1, 16, 64, 256, 1024],
    # a conv's K loop (writers/conv.py): 0 flat (channel × taps), 1 taps outer, 2 taps outer
    # over channels-last copies of the input and weight, 3 taps × channel tiles as one
    # (pipelined) loop over those copies, 4 direct (fp32 FMAs, no MMA: the default where an
    # MMA tile would be mostly padding, e.g. depthwise)
    "CONV_LOOP": [0, 1, 2, 3, 4],
    # a pool's layout (writers/pooling.py): 0 one lane per output, 1 a row of outputs with
    # the window's last dim as a tile axis, 2 a row of outputs one lane each, tap by tap
    "POOL_TILE": [0, 1, 2],
}


# A convolution's defaults on a GPU, measured on the H200 (default_kernels_bench, five
# official-size convs, strict): taps outer over channels-last copies with a 64-deep K tile in
# three stages ran 1.54-3.87x compile max-autotune where the flat loop ran 0.20-0.35x.
CONV_GPU_DEFAULTS = {"CONV_LOOP": 2, "BLOCK_K": 64, "num_stages": 3}
# Under tf32 (one product per MMA) larger tiles pay: 128x128x64 over 8 warps beat the strict
# default's 64x64x64 on all five convs (H200, default_kernels_bench --precision tf32:
# 0.59-1.21x compile at tf32 became 0.71-1.33x).
CONV_TF32_GPU_DEFAULTS = {**CONV_GPU_DEFAULTS, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8}


def default_params(an: Analysis, target: str, policy: str) -> dict[str, Any]:
    gpu = target != "interpreter"
    params = {"BLOCK": 1024 if gpu else 256, "BLOCK_O": 4, "BLOCK_R": 256 if gpu else 64,
              "BLOCK_M": 64 if gpu else 16, "BLOCK_N": 64 if gpu else 16,
              "BLOCK_K": 32 if gpu else 16, "num_warps": 4, "num_stages": 2 if gpu else 1,
              "SPLIT_R": 1024 if gpu else 1, "CONV_LOOP": 0,
              "PRECISION": "tf32" if policy in ("tf32", "bf16") else STRICT_DOT_PRECISION}
    params["POOL_TILE"] = pool_tile_default(an)
    if gpu and params["POOL_TILE"] == ROW_TAPS and _only_pools(an):
        params["num_warps"] = 8  # the row taps' measured width (pool_tile_default)
    if an.family == "conv":
        # the interpreter keeps its small tiles but walks the same K loop as the GPU
        gpu_defaults = CONV_TF32_GPU_DEFAULTS if params["PRECISION"] == "tf32" \
            else CONV_GPU_DEFAULTS
        params.update(gpu_defaults if gpu else {"CONV_LOOP": 2})
        if gpu and _only_narrow_stencils(an, params):
            params["BLOCK"] = NARROW_STENCIL_GPU_BLOCK
    return params


# The rows a program of a direct (stencil) conv with fewer than 16 output channels a group:
# on the H100 (default_kernels_bench, 2026-12-07, strict) a depthwise 3x3 over
# 16x64x512x512 ran 0.99 ms at 512, 1.02 at 256, 1.14 at 1024, 1.70 at 2048 over 8 warps
# (compile max-autotune 2.24); a direct conv of 16 output channels (Conv3d 3 -> 16) kept
# 1024 (2.40 ms; 2.66 at 512).
NARROW_STENCIL_GPU_BLOCK = 512


def _only_narrow_stencils(an: Analysis, params: dict[str, Any]) -> bool:
    """Whether every conv of the problem is a direct one with fewer than 16 output channels a
    group (BLOCK then sizes the convs' rows)."""
    convs = [n for n in an.nodes.values() if n.op == "conv"]
    return bool(convs) and all(
        conv.loop_of(an.nodes, n, params) == conv.DIRECT
        and conv.group_channels(an.nodes, n)[1] < conv.MMA_MIN_COLUMNS for n in convs)


def pool_tile_default(an: Analysis) -> int:
    """The row taps (a row of outputs, one lane each, tap by tap) for 1-D pools, one lane
    per output for 2-D and 3-D ones. Measured on the H100 (default_kernels_bench,
    2026-12-07, official sizes): row taps over 8 warps ran MaxPool1d 2.47 ms where the
    row tile (POOL_TILE 1, the earlier 1-D default) ran 2.99 and compile 2.78, AvgPool1d
    1.72 against 1.95 and 1.82; on MaxPool2d they tied the flat layout (0.99 ms both) and
    on MaxPool3d won by 2 % (1.645 against 1.681), too little to move the 2-D and 3-D
    default (AvgPool2d 11 ran slower in any row layout, 2026-12-05)."""
    pools = _pools(an)
    return ROW_TAPS if pools and all(len(n.attrs["kernel"]) == 1 for n in pools) else 0


def _only_pools(an: Analysis) -> bool:
    """Whether every kernel the plan launches is a pool's (warps then serve the pool alone)."""
    stages = plan(an)
    return bool(stages) and all(an.nodes[s.anchor].op == "pool" for s in stages)


def _pools(an: Analysis) -> list:
    """The pools with kernels of their own (not those a conv's kernel computes)."""
    pools = [n for n in an.nodes.values() if n.op == "pool"]
    fused = {s.pool for s in plan(an)} if pools else set()
    return [n for n in pools if n.id not in fused]


def clamp(an: Analysis, params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    for key, choices in SPACE.items():
        if out.get(key) not in choices:
            out[key] = min(choices, key=lambda c: abs(c - int(out.get(key, choices[0]))))
    return out


def valid(an: Analysis, params: dict[str, Any]) -> bool:
    return all(params.get(k) in v for k, v in SPACE.items())


def random_params(an: Analysis, base: dict[str, Any], rng) -> dict[str, Any]:
    return {**base, **{k: rng.choice(v) for k, v in SPACE.items()}}


def ordered_moves(an: Analysis, diagnosis: str, policy: str, rng,
                  params: dict | None = None) -> list[str]:
    """Moves as `±` steps of one parameter; the diagnosis picks which come first."""
    order = {"failure": ["BLOCK_M-", "dot_ieee", "BLOCK_N-", "BLOCK_R-", "BLOCK-",
                         "num_warps-"],
             "memory": ["BLOCK+", "BLOCK_O+", "BLOCK_R+", "num_warps+"],
             "compute": ["CONV_LOOP+", "BLOCK_M+", "BLOCK_N+", "num_stages+", "BLOCK_K+"],
             "latency": ["num_warps-", "BLOCK_O-", "BLOCK_M-"]}.get(diagnosis, [])
    pools = bool(_pools(an))
    in_row_taps = params is not None and params.get("POOL_TILE") == ROW_TAPS
    if diagnosis in ("memory", "latency") and pools and not in_row_taps:
        # a pool short of bandwidth is short of instructions (the flat layout's per-output
        # divisions, the row tile's reduction across its tap axis): the row taps first
        order = ["pool_row_taps", *order]
    rest = [f"{k}{s}" for k in SPACE for s in "+-" if f"{k}{s}" not in order]
    rest += [m for m in ("dot_ieee", "dot_tf32x3") if m not in order]
    if pools and "pool_row_taps" not in order:
        rest.append("pool_row_taps")
    if _recurrences(an):
        if diagnosis == "latency":  # one program walks a layer's steps alone: share them out
            order = ["recurrence_coop", *order]
        else:
            rest.append("recurrence_coop")
    if policy != "strict":
        rest.append("tf32")
    rng.shuffle(rest)
    return order + rest


def apply_move(an: Analysis, params: dict[str, Any], move: str) -> dict[str, Any] | None:
    if move in LAYOUT_MOVES:
        key, value = LAYOUT_MOVES[move]
        return None if params.get(key) == value else {**params, key: value}
    if move in PRECISION_MOVES:
        precision = PRECISION_MOVES[move]
        return None if params.get("PRECISION") == precision else {**params,
                                                                   "PRECISION": precision}
    key, step = move[:-1], 1 if move.endswith("+") else -1
    choices = SPACE.get(key)
    if not choices or params.get(key) not in choices:
        return None
    at = choices.index(params[key]) + step
    if not 0 <= at < len(choices):
        return None
    return {**params, key: choices[at]}


def notes(an: Analysis, params: dict[str, Any]) -> str:
    precision = params.get("PRECISION", STRICT_DOT_PRECISION)
    return f"family {an.family} (staged); dot_precision {precision}"


def fits_shared_memory(an: Analysis, params: dict[str, Any], limit_bytes: int) -> bool:
    if limit_bytes <= 0:
        return True
    return resources.dot_shared_memory_bytes(params, STAGED_OPERAND_BYTES) <= limit_bytes


def resource_problem(an: Analysis, params: dict[str, Any], target) -> str:
    """Why this configuration cannot run on `target`'s shared memory, or ''. (Registers are
    not judged here: each stage clamps the tiles to its own sizes.) A cooperative
    recurrence's programs wait for each other: GPU only, and few enough to be co-resident."""
    if params.get("RECURRENCE_COOP"):
        if target.is_interpreter:
            return ("the cooperative recurrence's programs wait for each other, and the "
                    "interpreter runs programs one at a time: GPU only")
        refusals = [recurrence.coop_refusal(n, params) for n in _recurrences(an)]
        if any(refusals):
            return next(r for r in refusals if r)
    return resources.dot_resource_problem(params, STAGED_OPERAND_BYTES,
                                          target.shared_memory_per_block_bytes)


def _recurrences(an: Analysis) -> list:
    return [n for n in an.nodes.values() if n.op == "recurrence"]
