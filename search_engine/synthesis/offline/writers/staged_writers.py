"""The stage writers the staged family owns itself (`staged.py`; anchors with their own
modules are written there): a pointwise stage over a flat index, and a reduction stage that
streams the reduced elements, split over programs (partials, then a combine kernel) when a
few outputs reduce many elements."""

from __future__ import annotations

import math
from dataclasses import dataclass

from search_engine.synthesis.offline.plan.stages import Stage
from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.staged_context import (
    Context, kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def write_pointwise(ctx: Context, stage: Stage, name: str) -> tuple[str, list[str]]:
    node = ctx.nodes[stage.sink]
    block = min(ctx.params["BLOCK"], p2(math.prod(node.shape)))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK + tl.arange(0, BLOCK)",
            f"mask = offs < {math.prod(node.shape)}"]
    expr = Expr(ctx, body)
    expr.local.add(stage.sink)
    idx = unravel(body, "offs", node.shape, "i")
    value = expr.value(stage.sink, tuple(idx), "mask")
    out = ctx.pointer(stage.sink)
    body.append(f"tl.store({out} + offs, ({value} + tl.zeros([BLOCK], tl.float32))"
                f".to({out}.dtype.element_ty), mask=mask)")
    grid = f"(triton.cdiv({math.prod(node.shape)}, {block}),)"
    return (kernel_source(name, ctx, ["BLOCK"], body),
            [launch(name, ctx, grid, {"BLOCK": block}, ctx.params["num_warps"])])


def write_reduction(ctx: Context, stage: Stage, name: str) -> tuple[str, list[str]]:
    """One program per BLOCK_O outputs; the reduced elements streamed BLOCK_R at a time.

    Few outputs over many elements (a GroupNorm's statistics, a loss) split the reduced
    range over SPLIT programs per output: partial results go to a small fp32 buffer that a
    second kernel combines before the epilogue. Where memory runs along the outputs (a
    column sum of a row-major matrix) the tile is turned (`COLUMNS`) so a warp's lanes read
    neighbouring outputs."""
    node = ctx.nodes[stage.anchor]
    op = node.op
    red = stream_reduction(ctx, node, op, lambda axes: tile_start(op, axes),
                           lambda v, axes: accumulate(op, v, axes))
    body, expr, out_idx, n_out = red.body, red.expr, red.out_idx, red.n_out
    body.extend(tile_finish(op, red.axes))
    consts, split = red.consts, red.split
    warps = ctx.params["num_warps"]
    if split > 1:
        return _split_reduction(ctx, stage, name, body, consts, split, n_out, out_idx)
    expr.body, expr.cache = body, {}
    expr.subst[stage.anchor] = "best" if op in ("argmax", "argmin") else "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", "tl.zeros([BLOCK_O], tl.float32)"
                   if op not in ("argmax", "argmin") else "tl.zeros([BLOCK_O], tl.int64)")
    grid = f"(triton.cdiv({n_out}, {consts['BLOCK_O']}),)"
    return (with_combine(op) + kernel_source(name, ctx, list(consts), body),
            [launch(name, ctx, grid, consts, warps)])


@dataclass
class StreamedReduction:
    """A reduction kernel's body up to the end of its streaming loop (`stream_reduction`):
    what its finish, split and epilogue need."""
    body: list[str]
    expr: Expr
    out_idx: list[str]
    axes: "TileAxes"
    consts: dict[str, int]  # BLOCK_O, BLOCK_R
    split: int  # programs per output (1: no partials)
    n_out: int


def stream_reduction(ctx: Context, node, op: str, start, step) -> StreamedReduction:
    """The kernel body of a reduction `node` (outputs on BLOCK_O, the tile laid as its loads
    walk memory, split over programs where few outputs reduce many elements) through its
    loop over the reduced elements: `start(axes)` gives the lines before the loop,
    `step(value, axes)` each step's lines on the tile's values (masked by `m2`)."""
    src = node.refs()[0]
    in_shape = ctx.nodes[src].shape
    dims = tuple(node.attrs["dims"])
    kept = [d for d in range(len(in_shape)) if d not in dims]
    n_out, n_red = math.prod(node.shape), math.prod(in_shape[d] for d in dims)
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = offs < {n_out}"]
    expr = Expr(ctx, body)
    out_idx = unravel(body, "offs", node.shape, "o")
    kept_idx = [out_idx[d] for d in kept] if node.attrs.get("keepdim") else list(out_idx)
    axes = COLUMNS if n_out * n_red >= MIN_COLUMNS_ELEMENTS and \
        reads_along_outputs(ctx, src, in_shape, dims, kept_idx) else ROWS
    block_o, block_r = (column_tile if axes is COLUMNS else reduction_tile)(
        ctx.params, n_out, n_red)
    split = reduction_split(ctx.params, op, n_out, n_red, block_o, block_r)
    chunk = -(-(-(-n_red // split)) // block_r) * block_r
    body.extend(start(axes))
    if split > 1:
        body.append(f"r_start = tl.program_id(1).to(tl.int64) * {chunk}")
        body.append(f"for r_start0 in range(0, {chunk}, BLOCK_R):")
    else:
        body.append(f"for r_start0 in range(0, {n_red}, BLOCK_R):")
    inner: list[str] = []
    expr.body = inner
    start_at = "r_start + r_start0" if split > 1 else "r_start0"  # no index shadows the loop
    inner.append(f"rr = {start_at} + tl.arange(0, BLOCK_R).to(tl.int64)")
    inner.append(f"rmask = rr < {n_red}")
    full = tile_index(inner, in_shape, dims, kept_idx, axes)
    inner.append(f"m2 = omask{axes.kept} & rmask{axes.reduced}")
    inner.extend(step(expr.value(src, tuple(full), "m2"), axes))
    body.extend("    " + line for line in inner)
    return StreamedReduction(body, expr, out_idx, axes,
                             {"BLOCK_O": block_o, "BLOCK_R": block_r}, split, n_out)


@dataclass(frozen=True)
class TileAxes:
    """How a reduction's tile lies: the suffixes that put the outputs' (kept) and the
    reduced indices on its axes, its shape, and the axis it is reduced across."""
    kept: str
    reduced: str
    shape: str
    axis: int


# outputs down the tile, reduced elements across it (Triton's lanes walk axis 1): memory
# along the reduced elements (a row sum, a softmax's statistics)
ROWS = TileAxes("[:, None]", "[None, :]", "[BLOCK_O, BLOCK_R]", 1)
# the reduced elements down, outputs across: memory along the outputs (a sum over a matrix's
# rows, a mean over the batch). On the H100 a weight's column sums (8192 x 8192 fp32) ran at
# 1.6 TB/s in the ROWS tile, each lane of a warp reading its own row (default_kernels_bench
# gemm_divide_sum_scaling, 2026-12-07)
COLUMNS = TileAxes("[None, :]", "[:, None]", "[BLOCK_R, BLOCK_O]", 0)
# A reduction reading fewer elements is bound by its launch and its programs' latency, not
# by how its loads coalesce: a transposed conv's 864 filter sums over 64 channels (55,296
# elements) took 1.9 us in the rows tile's 216 programs and 23.8 us in 4 column programs
# (H100, default_kernels_bench conv_transpose3d_mean_softmax, 2026-12-07)
MIN_COLUMNS_ELEMENTS = 1 << 20
# how a reduced dim's index is broadcast across a rows tile (`staged_rows.py` reads it)
ACROSS = ROWS.reduced


def reads_along_outputs(ctx: Context, src: int, in_shape, dims, kept_idx) -> bool:
    """Whether the reduction's loads walk memory along its outputs: each tensor it loads
    (leaves taken row-major, as they almost always are) has its innermost varying index
    from the outputs alone. Found by writing the loads once (the context's arguments put
    back after)."""
    saved = ctx.save()
    probe = Expr(ctx, [])
    lines: list[str] = []
    probe.value(src, tuple(tile_index(lines, in_shape, dims, kept_idx)), "m2")
    ctx.restore(saved)
    along_outputs = along_reduced = 0
    for ref, idx in probe.loads:
        varying = [i for i, size in zip(idx, ctx.nodes[ref].shape) if size != 1 and i != "0"]
        if not varying:
            continue
        if ROWS.reduced in varying[-1]:
            along_reduced += 1
        elif ROWS.kept in varying[-1]:
            along_outputs += 1
    return along_outputs > 0 and along_reduced == 0


def column_tile(params, n_out: int, n_red: int) -> tuple[int, int]:
    """(BLOCK_O, BLOCK_R) of a `COLUMNS` tile: BLOCK_R's value as the outputs' width (the
    contiguous axis), as many reduced rows as fill `MAX_REDUCTION_TILE`."""
    block_o = max(2, min(params["BLOCK_R"], p2(n_out)))
    return block_o, max(2, min(MAX_REDUCTION_TILE // block_o, p2(n_red)))


def tile_index(lines: list[str], in_shape, dims, kept_idx, axes: TileAxes = ROWS) -> list[str]:
    """The index of a reduction's input over its tile: the kept dims from the outputs'
    index (`kept_idx`), the reduced ones unravelled from `rr` (the variable `lines` already
    defines), each on its axis of the tile (`axes`)."""
    red_idx = iter(unravel(lines, "rr", [in_shape[d] for d in dims], "r"))
    kept = iter(kept_idx)
    full = []
    for d in range(len(in_shape)):
        i = next(red_idx) if d in dims else next(kept)
        full.append(i if i == "0" else (f"({i}){axes.reduced}" if d in dims
                                        else f"({i}){axes.kept}"))
    return full


# elements of a reduction's [BLOCK_O, BLOCK_R] tile at most: its accumulator is a tile too
MAX_REDUCTION_TILE = 4096


def reduction_tile(params, n_out: int, n_red: int) -> tuple[int, int]:
    """(BLOCK_O, BLOCK_R) of a reduction over `n_red` elements into `n_out` outputs. Fewer
    outputs than BLOCK_O give their rows the tile's elements (a loss's one output streams
    BLOCK_O x BLOCK_R elements a step, not BLOCK_R: each thread keeps several loads in
    flight)."""
    block_o = min(params["BLOCK_O"], p2(n_out))
    cap = max(2, MAX_REDUCTION_TILE // block_o)
    wide = min(params["BLOCK_R"] * max(1, params["BLOCK_O"] // block_o), cap)
    if p2(n_red) >= wide:  # a long reduction: the wide tile
        return block_o, wide
    # a short one keeps BLOCK_R (so the tile does not change with a batch in the reduction)
    return block_o, max(2, min(params["BLOCK_R"], p2(n_red), cap))


def reduction_split(params, op, n_out, n_red, block_o, block_r) -> int:
    """Programs per output: enough for ~`SPLIT_R` × the outputs' programs to fill the GPU,
    each still streaming at least 4 chunks; never for arg-reductions (their ties)."""
    if op in ("argmax", "argmin") or params.get("SPLIT_R", 1) <= 1:
        return 1
    programs = -(-n_out // block_o)
    split = max(1, min(params["SPLIT_R"] // programs, n_red // (4 * block_r)))
    return 1 << (split.bit_length() - 1)  # a power of two: the combine kernel's tile


def _split_reduction(ctx, stage, name, body, consts, split, n_out, out_idx):
    node = ctx.nodes[stage.anchor]
    op, part = node.op, f"kh_part{stage.anchor}"
    ctx.kernel_params.append("part_ptr")
    ctx.call_args.append(part)
    body.append("tl.store(part_ptr + offs * SPLIT + tl.program_id(1), acc, mask=omask)")
    first = kernel_source(name + "_partial", ctx, list(consts) + ["SPLIT"], body)
    block_o, warps = consts["BLOCK_O"], ctx.params["num_warps"]
    lines = [f"{part} = torch.empty(({n_out * split},), device={ctx.device()}, "
             "dtype=torch.float32)",
             launch(name + "_partial", ctx, f"(triton.cdiv({n_out}, {block_o}), {split})",
                    {**consts, "SPLIT": split}, warps)]
    fill = {"sum": "0.0", "prod": "1.0", "max": codegen.NEG_INF, "min": codegen.POS_INF}[op]
    body = start_combine_kernel(ctx, part, n_out) + [
        "parts = tl.load(part_ptr + offs[:, None] * SPLIT + tl.arange(0, SPLIT)[None, :], "
        f"mask=omask[:, None], other={fill})"]
    body.append({"sum": "acc = tl.sum(parts, axis=1)", "max": "acc = tl.max(parts, axis=1)",
                 "min": "acc = tl.min(parts, axis=1)",
                 "prod": "acc = tl.reduce(parts, 1, _kh_mul)"}[op])
    expr = Expr(ctx, body)
    out_idx = unravel(body, "offs", node.shape, "o")
    expr.subst[stage.anchor] = "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", "tl.zeros([BLOCK_O], tl.float32)")
    second = kernel_source(name, ctx, ["BLOCK_O", "SPLIT"], body)
    lines.append(launch(name, ctx, f"(triton.cdiv({n_out}, {block_o}),)",
                        {"BLOCK_O": block_o, "SPLIT": split}, warps))
    return with_combine(op) + first + "\n\n" + second, lines


def start_combine_kernel(ctx: Context, part: str, n_out: int) -> list[str]:
    """A split reduction's second kernel: fresh arguments (the first kernel's prelude kept)
    reading the partials buffer `part`; the lines that put BLOCK_O outputs on a program."""
    prelude = list(ctx.prelude)
    ctx.start()
    ctx.prelude = prelude
    ctx.kernel_params.append("part_ptr")
    ctx.call_args.append(part)
    return ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = offs < {n_out}"]


# A reduction accumulates elementwise in a [BLOCK_O, BLOCK_R] tile and reduces across it
# once, after its loop: a reduction across the tile at every step made each step wait on
# the block's shuffles and barrier, and one loss (8 GiB into one value) ran at a quarter of
# the card's bandwidth (H100, default_kernels_bench, 2026-12-06).
_IDENTITY = {"sum": "0.0", "prod": "1.0", "max": codegen.NEG_INF, "min": codegen.POS_INF,
             "argmax": codegen.NEG_INF, "argmin": codegen.POS_INF}


def tile_start(op: str, axes: TileAxes = ROWS) -> list[str]:
    """Before the loop: the tile accumulator (and, for an arg-reduction, its indices)."""
    lines = [f"acc_t = tl.full({axes.shape}, {_IDENTITY[op]}, tl.float32)"]
    if op in ("argmax", "argmin"):
        lines.append(f"at_t = tl.zeros({axes.shape}, tl.int64)")
    return lines


def accumulate(op: str, v: str, axes: TileAxes = ROWS) -> list[str]:
    """One step: the tile's values (masked by `m2`) into the tile accumulator."""
    if op == "sum":
        return [f"acc_t += tl.where(m2, {v}, 0.0)"]
    if op == "prod":
        return [f"acc_t *= tl.where(m2, {v}, 1.0)"]
    if op in ("max", "min"):
        return [f"acc_t = tl.{op}imum(acc_t, tl.where(m2, {v}, {_IDENTITY[op]}))"]
    # each lane keeps its first best (strictly better only: its indices only grow)
    better = ">" if op == "argmax" else "<"
    return [f"vals = tl.where(m2, {v}, {_IDENTITY[op]})",
            f"take = vals {better} acc_t",
            f"at_t = tl.where(take, rr{axes.reduced}, at_t)",
            "acc_t = tl.where(take, vals, acc_t)"]


def reduce_once(op: str, v: str) -> list[str]:
    """A whole row in one tile (no loop): `acc` per output straight from the tile's values."""
    values = f"tl.where(m2, {v}, {_IDENTITY[op]})"
    if op == "prod":
        return [f"acc = tl.reduce({values}, 1, _kh_mul)"]
    return [f"acc = tl.{op}({values}, axis=1)"]


def tile_finish(op: str, axes: TileAxes = ROWS) -> list[str]:
    """After the loop: `acc` per output (and `best`, the first index of the best value)."""
    if op == "sum":
        return [f"acc = tl.sum(acc_t, axis={axes.axis})"]
    if op == "prod":
        return [f"acc = tl.reduce(acc_t, {axes.axis}, _kh_mul)"]
    if op in ("max", "min"):
        return [f"acc = tl.{op}(acc_t, axis={axes.axis})"]
    return [f"acc = tl.{op[3:]}(acc_t, axis={axes.axis})",
            f"best = tl.min(tl.where(acc_t == acc{axes.kept}, at_t, 9223372036854775807), "
            f"axis={axes.axis})"]


def with_combine(op: str) -> str:
    if op != "prod":
        return ""
    return "@triton.jit\ndef _kh_mul(a, b):\n    return a * b\n\n\n"
