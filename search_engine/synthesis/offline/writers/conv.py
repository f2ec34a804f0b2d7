"""Convolutions as implicit GEMM (a stage of the staged family, see staged.py).

One kernel for 1-D/2-D/3-D, stride, padding, dilation, groups (depthwise included) and
transposed convolutions: per group g, the output positions (batch × spatial) are the GEMM's
M, the group's output channels its N, and (input channels of the group × kernel taps) its K.
The A tile is gathered from the input on the fly (never unfolded in memory): for a plain
convolution input position = out·stride − pad + tap·dilation; for a transposed one the
output gathers from input = (out + pad − tap·dilation) / stride where that divides exactly.
The K loop (`CONV_LOOP`) is flat (each K element's channel and tap unravelled: depthwise and
few channels) or taps-outer (row positions and validity once per tap, a channel tile inside),
optionally over channels-last copies of the input and weight so each A row and B column of a
tile is contiguous (the K-major operands Hopper's tf32 MMAs take), or (3) taps × channel tiles
flattened into one loop over those copies, which Triton can software-pipeline.
Bias and the pointwise epilogue that follows (activations, scales, per-channel terms) are
fused on the accumulator before the single store. A pool whose windows tile the output
(`plan.stages.fused_pool`) is fused too: the M rows walk (batch, pooled position, tap), so a
tile holds whole windows, reduced in registers before the pool's own epilogue and the store.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.ir import LEAVES
from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.staged_context import (
    dot_precision, finish_dot_stage, p2, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


# CONV_LOOP: how the K loop walks (input channels of the group × kernel taps)
FLAT_K, TAPS_OUTER, TAPS_OUTER_CHANNELS_LAST, TAPS_FLATTENED_CHANNELS_LAST, DIRECT = 0, 1, 2, 3, 4
CHANNELS_LAST_LOOPS = (TAPS_OUTER_CHANNELS_LAST, TAPS_FLATTENED_CHANNELS_LAST)
MIN_TAPS_OUTER_CHANNELS = 16  # fewer channels per group (depthwise): a K tile would be mostly
#                               padding, so the flat loop (taps inside K) is kept
MIN_PHASED_CHANNELS = 4  # a strided transposed conv skips taps per phase: a K tile half or
#                          three-quarters padding still does fewer MMAs than the flat loop
# A group with fewer output channels than an MMA's narrowest tile (16) and a short K (a
# depthwise 3x3 has K = 9, N = 1) pads each tensor-core product to 16x16 and more: such a
# conv is a stencil, written DIRECT (one fp32 FMA per tap and output channel, no padding,
# exact under every policy), its rows a wide block of output positions.
MMA_MIN_COLUMNS = 16
DIRECT_MAX_K = 64
DIRECT_UNROLL_K = 64  # a K up to this is a static loop: every tap's load in flight at once


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    at = node.attrs
    x, w = node.refs()[0], node.refs()[1]
    bias = node.refs()[2] if len(node.refs()) > 2 else None
    x_shape, w_shape, out_shape = ctx.nodes[x].shape, ctx.nodes[w].shape, node.shape
    groups = at["groups"]
    cin_g, cout_g = group_channels(ctx.nodes, node)
    taps = tuple(w_shape[2:])
    k_total = cin_g * math.prod(taps)
    p = ctx.params
    strides, spatial = tuple(at["stride"]), tuple(out_shape[2:])
    loop = loop_of(ctx.nodes, node, p)
    pool = ctx.nodes[stage.pool] if stage.pool is not None else None
    window = tuple(pool.attrs["kernel"]) if pool is not None else ()
    # a strided transposed conv, taps outer: one output phase (o mod stride) per program, so
    # a tap either feeds the whole tile or none of it (skipped, instead of masked MMAs)
    phased = pool is None and at["transposed"] and loop not in (FLAT_K, DIRECT) \
        and any(s > 1 for s in strides)
    if pool is not None:  # rows walk whole pool windows: (batch, pooled position, tap)
        rows = (out_shape[0],) + tuple(pool.shape[2:]) + window
    else:
        rows = (out_shape[0],) + (tuple(-(-o // s) for o, s in zip(spatial, strides)) if phased
                                  else spatial)
    m_total = math.prod(rows)
    if loop == DIRECT:  # no MMA: any tile width, the rows a pointwise block's (sized by
        # one image's positions, so the kernel is the same at any batch size: travel.py)
        bm = max(math.prod(window), min(p["BLOCK"], p2(m_total // rows[0])))
        bn, bk = min(p["BLOCK_N"], p2(cout_g)), 1
    else:
        bm = max(16, math.prod(window), min(p["BLOCK_M"], p2(m_total)))
        bn = max(16, min(p["BLOCK_N"], p2(cout_g)))
        bk = max(16, min(p["BLOCK_K"], p2(cin_g if loop != FLAT_K else k_total)))
    if loop in CHANNELS_LAST_LOOPS:  # the K tile's channels contiguous, B K-major
        ctx.dim_innermost(x, 1)
        ctx.dim_innermost(w, 0 if at["transposed"] else 1)
    phases = math.prod(strides) if phased else 1
    body = ["pid_m = tl.program_id(0).to(tl.int64)",
            "pid_n = tl.program_id(1)",
            f"g = (tl.program_id(2) // {phases}).to(tl.int64)" if phased else
            "g = tl.program_id(2).to(tl.int64)",
            "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
            "rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(tl.int64)",
            f"mmask = rm < {m_total}",
            f"nmask = rn < {cout_g}",
            f"co = g * {cout_g} + rn"]
    expr = Expr(ctx, body)
    pos = unravel(body, "rm", rows, "m")
    n_idx, o_idx = pos[0], pos[1:]
    phase_idx = None
    if phased:
        o_idx, phase_idx = _phase_positions(body, strides, spatial, o_idx, phases)
    if pool is not None:
        o_idx = _window_positions(body, o_idx, window)
    body.append("acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)")
    shape = _Shape(x, w, x_shape, taps, cin_g, k_total, n_idx, o_idx, at, pos[1:], phase_idx,
                   unpooled=pool is None)
    if loop == DIRECT:
        _direct_loop(expr, body, shape)
    elif loop == FLAT_K:
        _flat_k_loop(ctx, expr, body, shape)
    elif loop == TAPS_FLATTENED_CHANNELS_LAST and not phased:
        _taps_flattened_loop(ctx, expr, body, shape, bk)
    else:  # a phased transposed conv skips taps per phase: the taps stay an outer loop
        _taps_outer_loop(ctx, expr, body, shape)
    expr.body, expr.cache = body, {}
    body.append("cmask = mmask[:, None] & nmask[None, :]")
    if bias is not None:
        body.append(f"acc += {expr.value(bias, ('co[None, :]',), 'nmask[None, :]')}")
    out_idx = (_col(n_idx), "co[None, :]", *(_col(o) for o in o_idx))
    grid = f"(triton.cdiv({m_total}, {bm}), triton.cdiv({cout_g}, {bn}), {groups * phases})"
    consts = {"BLOCK_M": bm, "BLOCK_N": bn} if loop == DIRECT else \
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
    if pool is not None:
        return _finish_pooled(ctx, stage, name, expr, out_idx, grid, consts)
    return finish_dot_stage(ctx, stage, name, expr, out_idx, "cmask", "BLOCK_M, BLOCK_N",
                            grid, consts)


def _window_positions(body, idx, window) -> list[str]:
    """The conv's output positions o = pooled position · window + tap, per spatial dim, from
    the row index's (pooled..., taps...) parts."""
    nd = len(window)
    positions = []
    for d, (q, t, k) in enumerate(zip(idx[:nd], idx[nd:], window)):
        terms = ([f"{q} * {k}"] if q != "0" else []) + ([t] if t != "0" else [])
        if not terms:
            positions.append("0")
            continue
        body.append(f"o{d} = {' + '.join(terms)}")
        positions.append(f"o{d}")
    return positions


def _finish_pooled(ctx, stage, name, expr, out_idx, grid, consts):
    """The conv's epilogue up to the pool on `acc`, each window reduced in registers (its taps
    are consecutive rows of the tile), then the pool's own epilogue and one store of the
    pooled tile: the conv's full output is never written."""
    pool = ctx.nodes[stage.pool]
    window = math.prod(pool.attrs["kernel"])
    body = expr.body
    expr.subst[stage.anchor] = "acc"
    expr.local |= {stage.pooled, *stage.epilogue}
    value = expr.value(stage.pooled, out_idx, "cmask")
    is_max = pool.attrs["mode"] == "max"
    blank = codegen.lit(float("-inf")) if is_max else "0.0"
    body.append(f"pv = tl.reshape(tl.where(cmask, {value}, {blank}), "
                f"[BLOCK_M // {window}, {window}, BLOCK_N])")
    body.append("pooled = tl.max(pv, axis=1)" if is_max
                else f"pooled = tl.sum(pv, axis=1) * {codegen.lit(1.0 / window)}")
    body.append(f"rq = pid_m * (BLOCK_M // {window}) + tl.arange(0, BLOCK_M // {window})")
    body.append(f"qmask = rq < {math.prod((pool.shape[0], *pool.shape[2:]))}")
    q = unravel(body, "rq", (pool.shape[0], *pool.shape[2:]), "q")
    body.append("pmask = qmask[:, None] & nmask[None, :]")
    idx = (_col(q[0]), "co[None, :]", *(_col(i) for i in q[1:]))
    expr.cache, expr.subst[stage.pool] = {}, "pooled"  # loads after the pool: pooled indices
    return finish_dot_stage(ctx, stage, name, expr, idx, "pmask",
                            f"BLOCK_M // {window}, BLOCK_N", grid, consts)


def _phase_positions(body, strides, spatial, q_idx, phases):
    """A phased program's output positions o = q·stride + phase (masked past the output) and
    the phase's per-dim offsets (scalars; "0" where the stride is 1)."""
    body.append(f"phase = tl.program_id(2) % {phases}")
    phase = unravel(body, "phase", strides, "ph")
    o_idx = []
    for d, (s, size) in enumerate(zip(strides, spatial)):
        q = q_idx[d] if q_idx[d] != "0" else "tl.zeros([BLOCK_M], tl.int64)"
        if s == 1:
            o_idx.append(q_idx[d])
            continue
        body.append(f"o{d} = {q} * {s} + {phase[d]}")
        body.append(f"mmask = mmask & (o{d} < {size})")
        o_idx.append(f"o{d}")
    return o_idx, phase


def group_channels(nodes, node) -> tuple[int, int]:
    """(input, output) channels of one group of the conv `node`."""
    groups = node.attrs["groups"]
    return nodes[node.refs()[0]].shape[1] // groups, node.shape[1] // groups


def loop_of(nodes, node, params) -> int:
    """The K loop `conv_loop` picks for the conv `node` (its refs looked up in `nodes`)."""
    at = node.attrs
    cin_g, cout_g = group_channels(nodes, node)
    taps = math.prod(nodes[node.refs()[1]].shape[2:])
    return conv_loop(params, cin_g, cout_g, cin_g * taps,
                     phased=at["transposed"] and any(s > 1 for s in at["stride"]))


def conv_loop(params, cin_g: int, cout_g: int, k_total: int, phased: bool = False) -> int:
    """The K loop written: DIRECT where the space asks for it or an MMA tile would be mostly
    padding (few output channels a group, a short K), the flat loop where a channel tile
    would be, else the space's. A strided transposed conv (`phased`) keeps a taps-outer
    loop down to `MIN_PHASED_CHANNELS`: its programs skip the taps their phase never reads
    (7 of 8 in 3-D at stride 2), which the flat loop can only mask."""
    loop = int(params.get("CONV_LOOP", FLAT_K))
    if loop == DIRECT or (cout_g < MMA_MIN_COLUMNS and k_total <= DIRECT_MAX_K):
        return DIRECT
    min_channels = MIN_PHASED_CHANNELS if phased else MIN_TAPS_OUTER_CHANNELS
    if cin_g >= min_channels:
        return loop
    # the flat loop unravels every K element's channel and tap into a gathered tile; over
    # a group of at most one MMA tile's outputs the stencil's FMAs cost less (H100,
    # 2026-12-07: a Conv3d 3 -> 16 ran 5.99 ms flat, 2.40 direct; 3 -> 64 ran 3.08 flat and
    # 60-80 direct, its 64 accumulators a row spilling)
    return DIRECT if cout_g <= MMA_MIN_COLUMNS and not phased else FLAT_K


class _Shape:
    """What both K loops need of the convolution."""

    def __init__(self, x, w, x_shape, taps, cin_g, k_total, n_idx, o_idx, attrs, rows,
                 phase, unpooled=True):
        self.x, self.w, self.x_shape, self.taps = x, w, x_shape, taps
        self.cin_g, self.k_total, self.n_idx, self.o_idx, self.attrs = cin_g, k_total, \
            n_idx, o_idx, attrs
        # a phased program's row indices q (o = q·stride + phase) and its phase; else None
        self.rows, self.phase = rows, phase
        self.unpooled = unpooled  # its rows are the conv's own output positions


def _input_positions(lines, shape, tap, rows: str) -> tuple[list[str], list[str]]:
    """Per spatial dim, the input index read for output `o_idx` at `tap` (names) and its
    validity terms; `rows` is the empty-dim placeholder's shape."""
    at, valid, in_idx = shape.attrs, [], []
    for d in range(len(at["stride"])):
        o, t = _col(shape.o_idx[d]), tap[d]
        if o == "0" and t == "0":  # keep the masks tensors
            o = f"tl.zeros([{rows}], tl.int64)[:, None]"
        s, pad, dil, size = at["stride"][d], at["padding"][d], at["dilation"][d], \
            shape.x_shape[2 + d]
        if at["transposed"]:
            lines.append(f"t{d} = {o} + {pad} - {t} * {dil}")
            lines.append(f"i{d} = tl.where(t{d} >= 0, t{d}, 0) // {s}")
            valid.append(f"(t{d} >= 0) & (t{d} % {s} == 0) & (i{d} < {size})")
        else:
            lines.append(f"i{d} = {o} * {s} - {pad} + {t} * {dil}")
            valid.append(f"(i{d} >= 0) & (i{d} < {size})")
        in_idx.append(f"i{d}")
    return in_idx, valid


def _flat_k_loop(ctx, expr, body, shape):
    """K = (channel, taps...) flattened: one loop, each K element's channel and tap unravelled
    (depthwise and few-channel convolutions, where a channel tile would be mostly padding).
    A plain conv over stored operands reads them at separable offsets (`_separable_loads`)."""
    x, w = shape.x, shape.w
    separable = _separable(expr, shape)
    if separable:
        _row_offsets(expr, body, shape)
    body.append(f"for k_start in range(0, {shape.k_total}, BLOCK_K):")
    inner: list[str] = ["rk = k_start + tl.arange(0, BLOCK_K).to(tl.int64)",
                        f"kmask = rk < {shape.k_total}"]
    expr.body = inner
    kk = unravel(inner, "rk", (shape.cin_g,) + shape.taps, "k")
    ci_local, tap = kk[0], kk[1:]
    channel = ci_local if ci_local != "0" else "tl.zeros([BLOCK_K], tl.int64)"  # depthwise
    inner.append(f"ci = g * {shape.cin_g} + {channel}")
    if separable:
        a, b = _separable_loads(ctx, expr, inner, shape, ci_local, tap)
    else:
        in_idx, valid = _input_positions(inner, shape, [_row(t) for t in tap], "BLOCK_M")
        inner.append("amask = " + " & ".join(["mmask[:, None]", "kmask[None, :]", *valid]))
        a = expr.value(x, (_col(shape.n_idx), "(ci)[None, :]", *in_idx), "amask")
        inner.append("bmask = kmask[:, None] & nmask[None, :]")
        tap_rows = tuple(_col(t) for t in tap)
        b = _weight(expr, w, shape, "(ci)[:, None]", _col(ci_local), tap_rows, "bmask")
    inner.append(f"acc += tl.dot({a}, {b}, input_precision='{dot_precision(ctx.params)}')")
    body.extend("    " + line for line in inner)


def _separable(expr, shape) -> bool:
    """A plain (not transposed) conv whose input and weight are both loaded as stored:
    its loads may take separable offsets (input position = out·stride − pad + tap·dilation)."""
    return not shape.attrs["transposed"] and _stored(expr, shape.x) and _stored(expr, shape.w)


def _stored(expr, ref: int) -> bool:
    """Whether `ref` is loaded as stored (a leaf or an earlier stage's buffer), not computed
    in this kernel: its elements then sit at offsets its strides give."""
    ctx = expr.ctx
    node = ctx.nodes[ref]
    return ref not in expr.subst and not node.attrs.get("scalar") and (
        node.op in LEAVES or (ref in ctx.stored and ref not in expr.local))


def _row_offsets(expr, body, shape) -> None:
    """Before the K loop, once per program: each row's input offset at tap 0 (`row_off`)
    and, per spatial dim, its first input position (`r<d>`: out·stride − pad)."""
    at, starts = shape.attrs, []
    for d, o in enumerate(shape.o_idx):
        body.append(f"r{d} = tl.zeros([BLOCK_M], tl.int64) + ({o}) * {at['stride'][d]} "
                    f"- {at['padding'][d]}")
        starts.append(f"r{d}")
    body.append("row_off = tl.zeros([BLOCK_M], tl.int64) + "
                + expr.offset(shape.x, [shape.n_idx, "0", *starts]))


def _separable_loads(ctx, expr, inner, shape, ci_local, tap) -> tuple[str, str]:
    """A plain conv's A and B tiles at separable offsets: input position = (out·stride −
    pad) + tap·dilation, so an A element's offset is its row's (`row_off`, once per
    program) plus its K column's (a [BLOCK_K] vector), one add per element where the
    general gather multiplies every dim's 2-D index by its stride; likewise B's. Only a
    padded dim keeps a bounds test: unpadded, every tap of a valid conv is in range."""
    at, reach = shape.attrs, []
    for d, t in enumerate(tap):
        inner.append(f"q{d} = tl.zeros([BLOCK_K], tl.int64) + ({t}) * {at['dilation'][d]}")
        reach.append(f"q{d}")
    inner.append("k_off = tl.zeros([BLOCK_K], tl.int64) + "
                 + expr.offset(shape.x, ["0", "ci", *reach]))
    # CONV_ROWS_FAST (an experiment): the A tile loaded K x M and transposed, so a warp's
    # lanes walk M, along which an output row's input positions are contiguous
    rows, cols = ("[None, :]", "[:, None]") if ctx.params.get("CONV_ROWS_FAST") else \
        ("[:, None]", "[None, :]")
    valid = [f"(r{d}{rows} + q{d}{cols} >= 0) & (r{d}{rows} + q{d}{cols} < "
             f"{shape.x_shape[2 + d]})" for d in range(len(tap))
             if at["padding"][d] > 0 or not shape.unpooled]
    inner.append("amask = " + " & ".join([f"mmask{rows}", f"kmask{cols}", *valid]))
    a = _tile_load(ctx, expr, shape.x, f"row_off{rows} + k_off{cols}", "amask")
    if ctx.params.get("CONV_ROWS_FAST"):
        a = expr.var(f"tl.trans({a})")
    inner.append("w_off = tl.zeros([BLOCK_K], tl.int64) + "
                 + expr.offset(shape.w, ["0", ci_local, *tap]))
    inner.append("bmask = kmask[:, None] & nmask[None, :]")
    co_off = expr.offset(shape.w, ["co", *["0"] * (len(tap) + 1)])
    b = _tile_load(ctx, expr, shape.w, f"w_off[:, None] + (tl.zeros([BLOCK_N], tl.int64) + "
                   f"{co_off})[None, :]", "bmask")
    return a, b


def _tile_load(ctx, expr, ref: int, offset: str, mask: str) -> str:
    return expr.var(f"tl.load({ctx.pointer(ref)} + {offset}, mask={mask}, other=0.0)"
                    ".to(tl.float32)")


def _direct_loop(expr, body, shape):
    """Each K element (channel of the group, tap) in turn: the input at that tap for every
    row ([BLOCK_M, 1]) times the weight for every output channel ([1, BLOCK_N]), added in
    fp32 on the CUDA cores; a short K is unrolled so the taps' loads overlap."""
    k_range = (f"tl.static_range({shape.k_total})" if shape.k_total <= DIRECT_UNROLL_K
               else f"range({shape.k_total})")
    separable = _separable(expr, shape)
    if separable:
        _row_offsets(expr, body, shape)
    body.append(f"for kd in {k_range}:")
    inner: list[str] = []
    kk = unravel(inner, "kd", (shape.cin_g,) + shape.taps, "k")
    ci_local, tap = kk[0], kk[1:]
    inner.append(f"ci = g * {shape.cin_g} + {ci_local}")
    if separable:
        body.extend("    " + line for line in inner + _separable_direct_step(
            expr, shape, ci_local, tap))
        return
    in_idx, valid = _input_positions(inner, shape, tap, "BLOCK_M")
    inner.append("amask = " + " & ".join(["mmask[:, None]", *valid]))
    expr.body = inner
    # each load a tile of its own axis even where every index it keeps is a scalar (one
    # output channel a group drops that dim from the weight's offset; one output position)
    expr.tile = "tl.zeros([BLOCK_M, 1], tl.int64)"
    a = expr.value(shape.x, (_col(shape.n_idx), "ci", *in_idx), "amask")
    expr.tile = "tl.zeros([1, BLOCK_N], tl.int64)"
    b = _weight(expr, shape.w, shape, "ci", ci_local, tuple(tap), "nmask[None, :]")
    expr.tile = ""
    inner.append(f"acc += {a} * {b}")
    body.extend("    " + line for line in inner)


def _separable_direct_step(expr, shape, ci_local, tap) -> list[str]:
    """One direct step of a plain conv at separable offsets: the rows' input offsets
    (`row_off`, once a program) plus the step's channel and tap offset, a scalar; bounds
    tests only on padded dims (and a pooled tile's rows)."""
    ctx, at, lines = expr.ctx, shape.attrs, []
    reach = [f"({t}) * {at['dilation'][d]}" if t != "0" else "0" for d, t in enumerate(tap)]
    lines.append("tap_off = " + expr.offset(shape.x, ["0", "ci", *reach]))
    valid = [f"(r{d}[:, None] + {q} >= 0) & (r{d}[:, None] + {q} < {shape.x_shape[2 + d]})"
             for d, q in enumerate(reach) if at["padding"][d] > 0 or not shape.unpooled]
    lines.append("amask = " + " & ".join(["mmask[:, None]", *valid]))
    expr.body = lines
    a = _tile_load(ctx, expr, shape.x, "(row_off + tap_off)[:, None]", "amask")
    co_off = expr.offset(shape.w, ["co", *["0"] * (len(tap) + 1)])
    w_tap = expr.offset(shape.w, ["0", ci_local, *tap])
    b = _tile_load(ctx, expr, shape.w, f"(tl.zeros([BLOCK_N], tl.int64) + {co_off} + {w_tap})"
                   "[None, :]", "nmask[None, :]")
    lines.append(f"acc += {a} * {b}")
    return lines


def _taps_outer_loop(ctx, expr, body, shape):
    """Taps outer (scalar indices, each row's input position and validity once per tap),
    channels inner in BLOCK_K tiles: the inner loop's index math is one add per element, and
    over a channels-last input each row of the A tile is contiguous. A phased transposed conv
    skips the taps that do not divide into its phase."""
    body.append(f"for tap in range({math.prod(shape.taps)}):")
    per_tap: list[str] = []
    tap = unravel(per_tap, "tap", shape.taps, "kt")
    guarded: list[str] = []  # under the phase's `if` when phased
    if shape.phase is not None:
        per_tap.append("if " + _phase_taps(per_tap, shape, tap) + ":")
        in_idx, valid = _phased_inputs(guarded, shape)
    else:
        in_idx, valid = _input_positions(guarded, shape, tap, "BLOCK_M")
    guarded.append("rvalid = " + " & ".join(["mmask[:, None]", *valid]))
    guarded.append(f"for c_start in range(0, {shape.cin_g}, BLOCK_K):")
    inner: list[str] = ["rc = c_start + tl.arange(0, BLOCK_K).to(tl.int64)"]
    _channel_tile_dot(ctx, expr, inner, shape, in_idx, tap, "rvalid")
    guarded.extend("    " + line for line in inner)
    indent = "    " if shape.phase is not None else ""
    per_tap.extend(indent + line for line in guarded)
    body.extend("    " + line for line in per_tap)


def _taps_flattened_loop(ctx, expr, body, shape, bk: int):
    """Taps × channel tiles as one loop: Triton pipelines only a kernel's innermost loop, and
    with taps outer a group of up to BLOCK_K channels leaves the channel loop one iteration
    long (every official-size conv measured on the H200), so no load overlapped an MMA;
    here each step's row positions are recomputed from its tap (a few adds per row) and the
    next steps' tiles load while this one multiplies."""
    tiles = -(-shape.cin_g // bk)
    body.append(f"for kk in range({math.prod(shape.taps) * tiles}):")
    inner: list[str] = [f"tap = kk // {tiles}" if tiles > 1 else "tap = kk"]
    tap = unravel(inner, "tap", shape.taps, "kt")
    in_idx, valid = _input_positions(inner, shape, tap, "BLOCK_M")
    inner.append(f"rc = (kk % {tiles}) * BLOCK_K + tl.arange(0, BLOCK_K).to(tl.int64)"
                 if tiles > 1 else "rc = tl.arange(0, BLOCK_K).to(tl.int64)")
    _channel_tile_dot(ctx, expr, inner, shape, in_idx, tap,
                      " & ".join(["mmask[:, None]", *valid]))
    body.extend("    " + line for line in inner)


def _channel_tile_dot(ctx, expr, inner, shape, in_idx, tap, rows_valid: str):
    """One K step over the channel tile `rc` at one tap: the A tile (rows × channels) and
    the B tile (channels × output channels) loaded under their masks, multiplied into acc."""
    inner += [f"kmask = rc < {shape.cin_g}",
              f"ci = g * {shape.cin_g} + rc",
              f"amask = {rows_valid} & kmask[None, :]"]
    expr.body = inner
    a = expr.value(shape.x, (_col(shape.n_idx), "(ci)[None, :]", *in_idx), "amask")
    inner.append("bmask = kmask[:, None] & nmask[None, :]")
    b = _weight(expr, shape.w, shape, "(ci)[:, None]", "(rc)[:, None]", tuple(tap), "bmask")
    inner.append(f"acc += tl.dot({a}, {b}, input_precision='{dot_precision(ctx.params)}')")


def _phase_taps(lines, shape, tap) -> str:
    """Per dim, the scalar t = phase + pad − tap·dilation; the condition that every t divides
    by its stride (the tap feeds this phase)."""
    at, ok = shape.attrs, []
    for d, s in enumerate(at["stride"]):
        lines.append(f"t{d} = {shape.phase[d]} + {at['padding'][d]} - {tap[d]} * "
                     f"{at['dilation'][d]}")
        if s > 1:
            ok.append(f"(t{d} % {s} == 0)")
    return " & ".join(ok)


def _phased_inputs(lines, shape) -> tuple[list[str], list[str]]:
    """Inside a tap that feeds the phase: input = q + t / stride (exact), and its bounds."""
    valid = []
    for d, s in enumerate(shape.attrs["stride"]):
        q = _col(shape.rows[d]) if shape.rows[d] != "0" else \
            "tl.zeros([BLOCK_M], tl.int64)[:, None]"
        lines.append(f"i{d} = {q} + t{d} // {s}")
        valid.append(f"(i{d} >= 0) & (i{d} < {shape.x_shape[2 + d]})")
    return [f"i{d}" for d in range(len(shape.attrs["stride"]))], valid


def _weight(expr, w, shape, ci_col: str, local_col: str, tap_idx, mask: str) -> str:
    if shape.attrs["transposed"]:  # weight (C_in, C_out / groups, taps...)
        return expr.value(w, (ci_col, "rn[None, :]", *tap_idx), mask)
    return expr.value(w, ("co[None, :]", local_col, *tap_idx), mask)  # (C_out, C_in/g, taps)


def _col(i: str) -> str:
    return i if i == "0" else f"({i})[:, None]"


def _row(i: str) -> str:
    return i if i == "0" else f"({i})[None, :]"
