"""Convolutions as implicit GEMM (a stage of the staged family, see staged.py).

One kernel for 1-D/2-D/3-D, stride, padding, dilation, groups (depthwise included) and
transposed convolutions: per group g, the output positions (batch × spatial) are the GEMM's
M, the group's output channels its N, and (input channels of the group × kernel taps) its K.
The A tile is gathered from the input on the fly (never unfolded in memory): for a plain
convolution input position = out·stride − pad + tap·dilation; for a transposed one the
output gathers from input = (out + pad − tap·dilation) / stride where that divides exactly.
Bias and the pointwise epilogue that follows (activations, scales, per-channel terms) are
fused on the accumulator before the single store.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers.staged_context import (
    dot_precision, finish_dot_stage, p2, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    at = node.attrs
    x, w = node.refs()[0], node.refs()[1]
    bias = node.refs()[2] if len(node.refs()) > 2 else None
    x_shape, w_shape, out_shape = ctx.nodes[x].shape, ctx.nodes[w].shape, node.shape
    nd = len(at["stride"])
    groups, transposed = at["groups"], at["transposed"]
    c_in, c_out = x_shape[1], out_shape[1]
    cin_g, cout_g = c_in // groups, c_out // groups
    taps = tuple(w_shape[2:])
    m_total = out_shape[0] * math.prod(out_shape[2:])
    k_total = cin_g * math.prod(taps)
    p = ctx.params
    bm = max(16, min(p["BLOCK_M"], p2(m_total)))
    bn = max(16, min(p["BLOCK_N"], p2(cout_g)))
    bk = max(16, min(p["BLOCK_K"], p2(k_total)))
    body = ["pid_m = tl.program_id(0).to(tl.int64)",
            "pid_n = tl.program_id(1)",
            "g = tl.program_id(2).to(tl.int64)",
            "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
            "rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(tl.int64)",
            f"mmask = rm < {m_total}",
            f"nmask = rn < {cout_g}",
            f"co = g * {cout_g} + rn"]
    expr = Expr(ctx, body)
    pos = unravel(body, "rm", (out_shape[0],) + tuple(out_shape[2:]), "m")
    n_idx, o_idx = pos[0], pos[1:]
    body.append("acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)")
    body.append(f"for k_start in range(0, {k_total}, BLOCK_K):")
    inner: list[str] = ["rk = k_start + tl.arange(0, BLOCK_K).to(tl.int64)",
                        f"kmask = rk < {k_total}"]
    expr.body = inner
    kk = unravel(inner, "rk", (cin_g,) + taps, "k")
    ci_local, tap = kk[0], kk[1:]
    channel = ci_local if ci_local != "0" else "tl.zeros([BLOCK_K], tl.int64)"  # depthwise
    inner.append(f"ci = g * {cin_g} + {channel}")
    valid = ["mmask[:, None]", "kmask[None, :]"]
    in_idx = []
    for d in range(nd):
        o, t = _col(o_idx[d]), _row(tap[d])
        if o == "0" and t == "0":  # keep the masks tensors
            o = "tl.zeros([BLOCK_M], tl.int64)[:, None]"
        s, pad, dil, size = at["stride"][d], at["padding"][d], at["dilation"][d], x_shape[2 + d]
        if transposed:
            inner.append(f"t{d} = {o} + {pad} - {t} * {dil}")
            inner.append(f"i{d} = tl.where(t{d} >= 0, t{d}, 0) // {s}")
            valid.append(f"(t{d} >= 0) & (t{d} % {s} == 0) & (i{d} < {size})")
        else:
            inner.append(f"i{d} = {o} * {s} - {pad} + {t} * {dil}")
            valid.append(f"(i{d} >= 0) & (i{d} < {size})")
        in_idx.append(f"i{d}")
    inner.append("amask = " + " & ".join(valid))
    a = expr.value(x, (_col(n_idx), "(ci)[None, :]", *in_idx), "amask")
    inner.append("bmask = kmask[:, None] & nmask[None, :]")
    tap_rows = tuple(_col(t) for t in tap)
    if transposed:  # weight (C_in, C_out / groups, taps...)
        b = expr.value(w, ("(ci)[:, None]", "rn[None, :]", *tap_rows), "bmask")
    else:  # weight (C_out, C_in / groups, taps...)
        b = expr.value(w, ("co[None, :]", _col(ci_local), *tap_rows), "bmask")
    precision = dot_precision(p)
    inner.append(f"acc += tl.dot({a}, {b}, input_precision='{precision}')")
    body.extend("    " + line for line in inner)
    expr.body, expr.cache = body, {}
    body.append("cmask = mmask[:, None] & nmask[None, :]")
    if bias is not None:
        body.append(f"acc += {expr.value(bias, ('co[None, :]',), 'nmask[None, :]')}")
    out_idx = (_col(n_idx), "co[None, :]", *(_col(o) for o in o_idx))
    grid = f"(triton.cdiv({m_total}, {bm}), triton.cdiv({cout_g}, {bn}), {groups})"
    return finish_dot_stage(ctx, stage, name, expr, out_idx, "cmask", "BLOCK_M, BLOCK_N",
                                   grid, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk})


def _col(i: str) -> str:
    return i if i == "0" else f"({i})[:, None]"


def _row(i: str) -> str:
    return i if i == "0" else f"({i})[None, :]"
