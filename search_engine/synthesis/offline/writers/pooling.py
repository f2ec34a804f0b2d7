"""Max and average pooling, 1-D/2-D/3-D (a stage of the staged family, see staged.py).

One program per BLOCK outputs; the window is walked tap by tap (a loop, so large windows
cost no compile time). Padding, dilation (max), ceil mode, ``count_include_pad`` and
``divisor_override`` follow torch's definitions; the input is read through `Expr`, so
a norm or activation before the pool is computed as it is read, and the pointwise chain
after it is fused before the store. Adaptive pooling whose windows differ in size walks the
largest window and masks each output's own. Global pooling never gets here: it is a
reduction.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.staged_context import (
    kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    at = node.attrs
    src = node.refs()[0]
    in_shape, out_shape = ctx.nodes[src].shape, node.shape
    nd = len(at["kernel"])
    lead = len(out_shape) - nd
    n_out = math.prod(out_shape)
    block = min(ctx.params["BLOCK"], p2(n_out))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK + tl.arange(0, BLOCK)",
            f"omask = offs < {n_out}"]
    expr = Expr(ctx, body)
    out_idx = unravel(body, "offs", out_shape, "o")
    is_max = at["mode"] == "max"
    body.append(f"acc = tl.full([BLOCK], {codegen.NEG_INF if is_max else '0.0'}, tl.float32)")
    if not is_max:
        body.append("count = tl.zeros([BLOCK], tl.float32)")
    taps = tuple(at["kernel"])
    body.append(f"for w in range({math.prod(taps)}):")
    inner: list[str] = []
    expr.body = inner
    tap = unravel(inner, "w", taps, "k")
    valid, in_idx = ["omask"], list(out_idx[:lead])
    for d in range(nd):
        o = out_idx[lead + d]
        o = o if o != "0" else "tl.zeros([BLOCK], tl.int64)"  # keep the masks tensors
        s, pad, dil, size = at["stride"][d], at["padding"][d], at["dilation"][d], \
            in_shape[lead + d]
        if at.get("adaptive"):  # window [floor(o·in/out), ceil((o+1)·in/out))
            n = out_shape[lead + d]
            inner.append(f"i{d} = ({o} * {size}) // {n} + {tap[d]}")
            valid.append(f"(i{d} < (({o} + 1) * {size} + {n - 1}) // {n})")
        else:
            inner.append(f"i{d} = {o} * {s} - {pad} + {tap[d]} * {dil}")
            valid.append(f"(i{d} >= 0) & (i{d} < {size})")
        in_idx.append(f"i{d}")
    inner.append("vmask = " + " & ".join(valid))
    v = expr.value(src, tuple(in_idx), "vmask")
    if is_max:
        inner.append(f"acc = tl.maximum(acc, tl.where(vmask, {v}, {codegen.NEG_INF}))")
    else:
        inner.append(f"acc += tl.where(vmask, {v}, 0.0)")
        inner.append("count += tl.where(vmask, 1.0, 0.0)")
    body.extend("    " + line for line in inner)
    expr.body, expr.cache = body, {}
    if not is_max:
        body.append(f"acc = acc / {_divisor(at, out_idx[lead:], in_shape[lead:])}")
    expr.subst[stage.anchor] = "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask",
                          "tl.zeros([BLOCK], tl.float32)")
    grid = f"(triton.cdiv({n_out}, {block}),)"
    source = kernel_source(name, ctx, ["BLOCK"], body)
    return source, [launch(name, ctx, grid, {"BLOCK": block}, ctx.params["num_warps"])]


def _divisor(at, out_idx, in_sizes) -> str:
    """torch's average-pool divisor: the override, the valid taps, or the window clipped to
    the padded input (count_include_pad)."""
    if at.get("divisor") is not None:
        return codegen.lit(at["divisor"])
    if not at["count_include_pad"]:
        return "tl.maximum(count, 1.0)"
    terms = []
    for d, o in enumerate(out_idx):
        o = o if o != "0" else "tl.zeros([BLOCK], tl.int64)"
        k, s, pad, size = at["kernel"][d], at["stride"][d], at["padding"][d], in_sizes[d]
        start = f"({o} * {s} - {pad})"
        terms.append(f"(tl.minimum({start} + {k}, {size + pad}) - {start})")
    return "(" + " * ".join(f"{t}.to(tl.float32)" for t in terms) + ")" if terms else "1.0"
