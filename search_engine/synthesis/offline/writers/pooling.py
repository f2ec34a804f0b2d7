"""Max and average pooling, 1-D/2-D/3-D (a stage of the staged family, see staged.py).

Three layouts (`POOL_TILE`): one lane per output, the window walked tap by tap (a loop, so
large windows cost no compile time); one program per BLOCK outputs of one output row
(every dim but the last fixed), the window's last dim a tile axis, so neighbouring outputs'
taps load as one coalesced tile and no per-output index is divided; or a row's outputs one
lane each, walked tap by tap like the first (each tap one load along the row, no reduction
across a tile axis) with the row's indices divided once per program like the second. Inputs
are read contiguous, at strides written into the kernel. Padding, dilation (max), ceil
mode, ``count_include_pad`` and ``divisor_override`` follow torch's definitions; the input
is read through `Expr`, so a norm or activation before the pool is computed as it is read,
and the pointwise chain after it is fused before the store.
Adaptive pooling whose windows differ in size walks the largest window and masks each
output's own. Global pooling never gets here: it is a reduction.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.staged_context import (
    kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


# elements of one window tile a program loads at once ([outputs, taps of the last dim])
TILE_ELEMENTS = 4096
# the flat layout's largest block: on the H200 and the H100 (default_kernels_bench,
# 2026-12-05) 256 outputs a program ran 1.8-4x faster than 1024 on MaxPool2d, AvgPool1d
# and AvgPool2d at KernelBench-like official sizes
FLAT_BLOCK = 256
# the input bytes one flat program's windows span, at most: 256 outputs of an 11x11 stride-11
# window span 124 KiB, and there 128 outputs ran 1.24x faster than 256 (AvgPool2d, H200,
# 2026-12-05) where a 4x4 stride-2 window's 8 KiB wanted 256 (MaxPool2d 1.40x): a program's
# window rows must stay in L1 (256 KiB an SM, shared by the programs resident on it) until
# the next taps reuse them
FLAT_FOOTPRINT_BYTES = 64 * 1024
# windows of at most this many taps (per loop) are unrolled (`tl.static_range`): each tap's
# offsets fold to constants added to bases computed once per output, and every tap's load
# can be in flight together (Inductor writes its pools' taps out one by one); larger
# windows keep the rolled loop, which costs no compile time per tap. An unrolled flat
# program holds one output a thread: at two, MaxPool3d's 27 taps ran 3.85 ms where one
# ran 1.73 (AvgPool3d: 7.70 where the rolled loop ran 3.99; H100, 2026-12-06)
UNROLL_TAPS = 32


# `POOL_TILE` values: one lane per output over the flat output; a row of outputs with the
# window's last dim a tile axis; a row of outputs, one lane each, its taps loaded one by one
FLAT, ROW_TILE, ROW_TAPS = 0, 1, 2


def write(ctx, stage, name):
    """The stage in the layout `POOL_TILE` names (`FLAT`, `ROW_TILE`, `ROW_TAPS`). Its inputs
    are read contiguous at strides written into the kernel: a tap's offset is then a
    constant the load's address takes as an immediate (sm_90 compiles: MaxPool3d 3/2/1
    dilation 3 from 321 instructions an output to 209, MaxPool2d 4/2/1 from 137 to 103)."""
    ctx.dense_leaves = True
    layout = ctx.params.get("POOL_TILE", FLAT)
    if layout == ROW_TILE:
        return _write_row_tile(ctx, stage, name)
    return _write_lanes(ctx, stage, name, by_row=layout == ROW_TAPS)


def _write_lanes(ctx, stage, name, by_row: bool):
    """One lane per output, the window walked tap by tap, each tap one load of the block's
    outputs. Flat: a block of the flattened output, each output's index split into every
    dim's (per-element divisions). By row: a block of one output row (every dim but the
    last fixed), whose indices are scalars split once from the program id, so only the last
    dim's index is a vector and no per-element index is divided; a block whose windows all
    lie inside the input loads without masks (`_interior`)."""
    at, src, in_shape, out_shape = _pool(ctx, stage)
    nd = len(at["kernel"])
    lead = len(out_shape) - nd
    n_out = out_shape[-1] if by_row else math.prod(out_shape)
    block = _lanes_block(ctx, at, in_shape, out_shape, n_out, by_row)
    warps = ctx.params["num_warps"]
    if by_row:
        warps = max(1, min(warps, block // 32))  # a short row: no lanes without an output
        body = ["row = tl.program_id(0).to(tl.int64)",
                "ol = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)",
                f"omask = ol < {n_out}",
                "zo = tl.zeros([BLOCK], tl.int64)"]
        expr = Expr(ctx, body)
        out_idx = [*unravel(body, "row", out_shape[:-1], "r"), "ol"]
        grid = f"({math.prod(out_shape[:-1])}, triton.cdiv({n_out}, {block}))"
    else:
        body = ["pid = tl.program_id(0).to(tl.int64)",
                "offs = pid * BLOCK + tl.arange(0, BLOCK)",
                f"omask = offs < {n_out}",
                "zo = tl.zeros([BLOCK], tl.int64)"]
        expr = Expr(ctx, body)
        out_idx = unravel(body, "offs", out_shape, "o")
        grid = f"(triton.cdiv({n_out}, {block}),)"
    expr.tile = "zo" if by_row else ""  # a load at the row's scalar indices is still a block
    is_max = at["mode"] == "max"
    body.append(f"acc = tl.full([BLOCK], {codegen.NEG_INF if is_max else '0.0'}, tl.float32)")
    counted = _counted(at)
    if counted:
        body.append("count = tl.zeros([BLOCK], tl.float32)")
    # "zo" added: every window index a block, so its masks are blocks (a scalar row index
    # in a mask beside blocks is refused by Triton's interpreter)
    bases = [_window_base(body, at, d, _as_block(out_idx[lead + d], d < nd - 1 and by_row),
                          in_shape[lead + d], out_shape[lead + d])
             for d in range(nd)]
    interior = _interior(at, out_idx[lead:], in_shape[lead:], n_out, block) if by_row else None
    walk = lambda mask: _walk_window(expr, at, src, bases, out_idx[:lead], mask)  # noqa: E731
    if interior is None:
        body.extend(walk(None))
    else:  # the same walk twice: unmasked loads inside, the masked walk at the edges
        body.extend([f"if {interior}:", "    tmask = tl.full([BLOCK], 1, tl.int1)"])
        body.extend("    " + line for line in walk("tmask"))
        body.append("else:")
        body.extend("    " + line for line in walk(None))
    expr.body, expr.cache = body, {}
    return _finish(ctx, stage, name, expr, out_idx, grid, block, warps)


def _walk_window(expr: Expr, at, src, bases: list, lead_idx: list[str],
                 inside: str | None) -> list[str]:
    """The tap loop: each tap's input index, its load and the accumulation. `inside`: a mask
    known true (the window inside the input), so no bound is checked and the loads carry a
    constant mask, which Triton drops; their neighbouring taps then merge into wide loads."""
    taps = tuple(at["kernel"])
    lines = [_tap_loop(math.prod(taps))]
    inner: list[str] = []
    expr.body, expr.cache = inner, {}  # nothing computed in the other walk is visible here
    tap = unravel(inner, "w", taps, "k")
    valid, in_idx = ["omask"], list(lead_idx)
    for d in range(len(taps)):
        valid.append(_window_index(inner, d, bases[d], tap[d]))
        in_idx.append(f"i{d}")
    inner.append(f"vmask = {inside}" if inside else "vmask = " + " & ".join(valid))
    v = expr.value(src, tuple(in_idx), "vmask")
    if at["mode"] == "max":
        inner.append(f"acc = tl.maximum(acc, tl.where(vmask, {v}, {codegen.NEG_INF}))")
    else:
        inner.append(f"acc += tl.where(vmask, {v}, 0.0)")
        if _counted(at):
            inner.append("count += tl.where(vmask, 1.0, 0.0)")
    return lines + ["    " + line for line in inner]


def _lanes_block(ctx, at, in_shape, out_shape, n_out: int, by_row: bool) -> int:
    """Outputs a program of `_write_lanes` takes. Flat: at most `FLAT_BLOCK`, within the L1
    footprint, one output a thread when the window is unrolled. By row, unrolled: a thread
    takes as many neighbouring outputs as keep its loads in flight within `UNROLL_TAPS` (a
    1-D window of 8 taps: 4 outputs, whose overlapping windows merge into a few wide loads
    inside the input: AvgPool1d 8/1/4 compiled for sm_90 takes 35 SASS instructions an
    output there, where the row tile takes 56 and one output a thread 100)."""
    warps = ctx.params["num_warps"]
    trips = math.prod(at["kernel"])
    if by_row and _unrolled(trips):
        per_thread = max(1, UNROLL_TAPS // trips)
        return _flat_block(at, in_shape, out_shape,
                           min(ctx.params["BLOCK"], p2(n_out), 32 * warps * per_thread))
    block = _flat_block(at, in_shape, out_shape, min(ctx.params["BLOCK"], FLAT_BLOCK, p2(n_out)))
    if _unrolled(trips):  # every tap's load in flight: one output a thread
        block = min(block, 32 * warps)
    return block


def _interior(at, out_idx: list[str], in_sizes, n_out: int, block: int) -> str | None:
    """The condition (scalars) that every window of a row block lies inside the input: each
    fixed dim's window, and the windows of the block's first and last outputs along the row
    (a full block). None where no block can be inside or windows are adaptive."""
    if at.get("adaptive"):
        return None
    terms = []
    for d, o in enumerate(out_idx):
        k, s, pad, dil = at["kernel"][d], at["stride"][d], at["padding"][d], at["dilation"][d]
        reach, size = (k - 1) * dil, in_sizes[d]
        if d == len(out_idx) - 1:
            start = -(-pad // (block * s)) * block  # the first block past the padding
            if start + block > n_out or (start + block - 1) * s - pad + reach >= size:
                return None
            first = "tl.program_id(1) * BLOCK"
            terms += [f"({first} * {s} - {pad} >= 0)",
                      f"(({first} + BLOCK - 1) * {s} - {pad} + {reach} < {size})",
                      f"({first} + BLOCK <= {n_out})"]
        elif o == "0":  # one output in this dim: its window is known now
            if not (-pad >= 0 and -pad + reach < size):
                return None
        else:
            terms += [f"({o} * {s} - {pad} >= 0)", f"({o} * {s} - {pad} + {reach} < {size})"]
    return " & ".join(terms)


def _as_block(index: str, scalar: bool) -> str:
    """An output index as a block: "zo" for a size-1 dim, a scalar row index plus "zo"."""
    if index == "0":
        return "zo"
    return f"({index} + zo)" if scalar else index


def _write_row_tile(ctx, stage, name):
    """One program per (output row, BLOCK outputs along the last dim): the row's indices are
    scalars split once from the program id, so the taps of every dim but the last are
    scalar offsets; the last dim's taps are a tile axis computed once, so each load reads a
    window row's neighbouring elements together and no per-element index is divided."""
    at, src, in_shape, out_shape = _pool(ctx, stage)
    nd = len(at["kernel"])
    lead = len(out_shape) - nd
    taps = tuple(at["kernel"])
    last = out_shape[-1]
    kp = p2(taps[-1])
    block = max(1, min(ctx.params["BLOCK"], p2(last), TILE_ELEMENTS // kp))
    body = ["row = tl.program_id(0).to(tl.int64)",
            "ol = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)",
            f"omask = ol < {last}",
            f"kk = tl.arange(0, {kp})",
            f"zt = tl.zeros([BLOCK, {kp}], tl.int64)"]
    expr = Expr(ctx, body)
    rows = unravel(body, "row", out_shape[:-1], "r")
    body.extend(_last_dim_taps(at, nd - 1, in_shape[-1], last))
    body.append(f"lmask = omask[:, None] & (kk[None, :] < {taps[-1]}) & {_LAST_VALID}")
    is_max = at["mode"] == "max"
    zero = codegen.NEG_INF if is_max else "0.0"
    body.append(f"acc = tl.full([BLOCK], {zero}, tl.float32)")
    counted = _counted(at)
    if counted:
        body.append("count = tl.zeros([BLOCK], tl.float32)")
    bases = [_window_base(body, at, d, rows[lead + d], in_shape[lead + d], out_shape[lead + d])
             for d in range(nd - 1)]
    body.append(_tap_loop(math.prod(taps[:-1])))
    inner: list[str] = []
    expr.body, expr.tile = inner, "zt"
    tap = unravel(inner, "w", taps[:-1], "k")
    valid, in_idx = ["lmask"], list(rows[:lead])
    for d in range(nd - 1):
        valid.append(_window_index(inner, d, bases[d], tap[d]))
        in_idx.append(f"i{d}")
    in_idx.append("il")
    # the other dims' conditions are scalars: one select of the tile's mask, not an `&` of a
    # scalar with a tile (which Triton's interpreter refuses as a mask)
    inner.append(f"vmask = tl.where({' & '.join(valid[1:])}, lmask, False)" if valid[1:]
                 else "vmask = lmask")
    v = expr.value(src, tuple(in_idx), "vmask")
    if is_max:
        inner.append(f"acc = tl.maximum(acc, tl.max(tl.where(vmask, {v}, {codegen.NEG_INF}), "
                     "axis=1))")
    else:
        inner.append(f"acc += tl.sum(tl.where(vmask, {v}, 0.0), axis=1)")
        if counted:
            inner.append("count += tl.sum(tl.where(vmask, 1.0, 0.0), axis=1)")
    body.extend("    " + line for line in inner)
    expr.body, expr.cache, expr.tile = body, {}, "zo"
    body.append("zo = tl.zeros([BLOCK], tl.int64)")
    grid = f"({math.prod(out_shape[:-1])}, triton.cdiv({last}, {block}))"
    return _finish(ctx, stage, name, expr, [*rows, "ol"], grid, block)


def _flat_block(at, in_shape, out_shape, block: int) -> int:
    """`block` halved (down to a warp) until its outputs' windows span at most
    `FLAT_FOOTPRINT_BYTES` of fp32 input: along the last dim (stride, dilation) times the
    window's taps in the other dims."""
    kernel = at["kernel"]
    stride = -(-in_shape[-1] // out_shape[-1]) if at.get("adaptive") else at["stride"][-1]
    dilation = 1 if at.get("adaptive") else at["dilation"][-1]
    rows = math.prod(kernel[:-1])

    def span(b: int) -> int:
        return ((b - 1) * stride + (kernel[-1] - 1) * dilation + 1) * rows * 4

    while block > 32 and span(block) > FLAT_FOOTPRINT_BYTES:
        block //= 2
    return block


def _pool(ctx, stage):
    """The stage's pool: its attributes, its input node and their shapes."""
    node = ctx.nodes[stage.anchor]
    src = node.refs()[0]
    return node.attrs, src, ctx.nodes[src].shape, node.shape


def _unrolled(trips: int) -> bool:
    """Whether a window loop of `trips` taps is unrolled (`UNROLL_TAPS`)."""
    return trips <= UNROLL_TAPS


def _tap_loop(trips: int) -> str:
    """The window's loop header: unrolled when the window is small."""
    if _unrolled(trips):
        return f"for w in tl.static_range({trips}):"
    return f"for w in range({trips}):"


def _window_base(body: list[str], at, d: int, o: str, size: int, n: int) -> tuple:
    """Append what dim d's window of output index `o` needs before the tap loop (computed
    once, not per tap); return (the window's first input index, its end or None, the
    dilation, the input's size)."""
    if at.get("adaptive"):  # window [floor(o·in/out), ceil((o+1)·in/out))
        body.append(f"wbeg{d} = ({o} * {size}) // {n}")
        body.append(f"wend{d} = (({o} + 1) * {size} + {n - 1}) // {n}")
        return f"wbeg{d}", f"wend{d}", 1, size
    s, pad, dil = at["stride"][d], at["padding"][d], at["dilation"][d]
    body.append(f"wbeg{d} = {o} * {s} - {pad}")
    return f"wbeg{d}", None, dil, size


def _window_index(inner: list[str], d: int, base: tuple, tap: str) -> str:
    """Append dim d's input index `i{d}` at window tap `tap` (from the base `_window_base`
    made); return the condition that it is inside the input (or its adaptive window)."""
    start, end, dil, size = base
    step = tap if dil == 1 else f"{tap} * {dil}"
    inner.append(f"i{d} = {start} + {step}")
    if end is not None:
        return f"(i{d} < {end})"
    return f"(i{d} >= 0) & (i{d} < {size})"


def _counted(at) -> bool:
    """Whether the valid taps are counted: only where they are the divisor."""
    return at["mode"] != "max" and at.get("divisor") is None and not at["count_include_pad"]


def _finish(ctx, stage, name: str, expr: Expr, out_idx: list[str], grid: str, block: int,
            warps: int | None = None):
    """The average's divisor, the pointwise chain after the pool, the store and the launch
    (with `warps`, or the parameters' num_warps)."""
    at, _, in_shape, _ = _pool(ctx, stage)
    nd = len(at["kernel"])
    if at["mode"] != "max":
        expr.body.append(f"acc = acc / {_divisor(at, out_idx[-nd:], in_shape[-nd:])}")
    expr.subst[stage.anchor] = "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", "tl.zeros([BLOCK], tl.float32)")
    source = kernel_source(name, ctx, ["BLOCK"], expr.body)
    return source, [launch(name, ctx, grid, {"BLOCK": block}, warps or ctx.params["num_warps"])]


_LAST_VALID = "(il >= 0) & (il < ilimit)"


def _last_dim_taps(at, d: int, size: int, n_out: int) -> list[str]:
    """`il`, the last dim's input index of every (output, tap) of the tile, and `ilimit`,
    the end of each output's window (the input's end, or an adaptive window's own)."""
    o = "ol[:, None]"
    if at.get("adaptive"):
        return [f"il = ({o} * {size}) // {n_out} + kk[None, :]",
                f"ilimit = tl.minimum((({o} + 1) * {size} + {n_out - 1}) // {n_out}, {size})"]
    s, pad, dil = at["stride"][d], at["padding"][d], at["dilation"][d]
    return [f"il = {o} * {s} - {pad} + kk[None, :] * {dil}", f"ilimit = {size}"]


def _divisor(at, out_idx, in_sizes) -> str:
    """torch's average-pool divisor: the override, the valid taps, or the window clipped to
    the padded input (count_include_pad)."""
    if at.get("divisor") is not None:
        return codegen.lit(at["divisor"])
    if not at["count_include_pad"]:
        return "tl.maximum(count, 1.0)"
    terms = []
    for d, o in enumerate(out_idx):
        o = o if o != "0" else "zo"
        k, s, pad, size = at["kernel"][d], at["stride"][d], at["padding"][d], in_sizes[d]
        start = f"({o} * {s} - {pad})"
        terms.append(f"(tl.minimum({start} + {k}, {size + pad}) - {start})")
    return "(" + " * ".join(f"{t}.to(tl.float32)" for t in terms) + ")" if terms else "1.0"
