"""Scaled dot-product attention, FlashAttention-style (a stage of the staged family).

One program per (batch·head, BLOCK_M queries): keys and values stream in BLOCK_N blocks;
the softmax is online (running max and sum, the accumulator rescaled when the max grows),
so the L×S score matrix never exists. Causal masking follows torch's ``is_causal`` (key
j > query i is masked); an ``attn_mask`` (bool: keep where True; float: added to the scores)
is read per tile with its broadcast strides; with ``enable_gqa`` a k/v head serves a group of
query heads. Head dims are padded to a power of two with masks. Written-out attention
(matmul → softmax → matmul) is staged matmul/reduction kernels instead.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.matmul_variants import pass_operand
from search_engine.synthesis.offline.writers.staged_context import (
    dot_precision, finish_dot_stage, p2, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    q, k, v = node.refs()[:3]
    out_shape = node.shape
    batch = tuple(out_shape[:-2])
    length, dv = out_shape[-2], out_shape[-1]
    keys, dq = ctx.nodes[k].shape[-2], ctx.nodes[q].shape[-1]
    p = ctx.params
    bm = max(16, min(p["BLOCK_M"], p2(length)))
    bn = max(16, min(p["BLOCK_N"], p2(keys)))
    nb = len(batch)
    body = ["pid_m = tl.program_id(0)", "bid = tl.program_id(1).to(tl.int64)",
            "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)",
            "rd = tl.arange(0, BLOCK_D).to(tl.int64)", "re = tl.arange(0, BLOCK_E).to(tl.int64)",
            f"mmask = rm < {length}", f"dmask = rd < {dq}", f"emask = re < {dv}"]
    batch_idx = unravel(body, "bid", batch, "b") if batch else []
    groups = node.attrs.get("groups", 1)  # grouped-query: k/v head = query head // groups
    kv_idx = batch_idx[:-1] + [f"({batch_idx[-1]} // {groups})"] if groups > 1 else batch_idx
    for which, ref in (("q", q), ("k", k), ("v", v)):
        pass_operand(ctx, stage, which, ref, batch)
        base = " + ".join([f"{i} * {which}_s{d}" for d, i in
                           enumerate(batch_idx if which == "q" else kv_idx)
                           if i != "0"] or ["0"])
        body.append(f"{which}_base = {which}_ptr + {base}")
    masked = len(node.refs()) == 4
    if masked:
        pass_operand(ctx, stage, "w", node.refs()[3], batch, (length, keys))
        base = " + ".join([f"{i} * w_s{d}" for d, i in enumerate(batch_idx)
                           if i != "0"] or ["0"])
        body.append(f"w_base = w_ptr + {base}")
    precision = dot_precision(p)
    body += [f"qv = tl.load(q_base + rm[:, None] * q_s{nb} + rd[None, :] * q_s{nb + 1}, "
             "mask=mmask[:, None] & dmask[None, :], other=0.0).to(tl.float32)",
             f"qv = qv * {codegen.lit(node.attrs['scale'] * math.log2(math.e))}",
             f"peak = tl.full([BLOCK_M], {codegen.NEG_INF}, tl.float32)",
             "total = tl.zeros([BLOCK_M], tl.float32)",
             "acc = tl.zeros([BLOCK_M, BLOCK_E], tl.float32)",
             f"for n0 in range(0, {keys}, BLOCK_N):",
             "    rn = n0 + tl.arange(0, BLOCK_N).to(tl.int64)",
             f"    nmask = rn < {keys}",
             f"    kt = tl.load(k_base + rn[None, :] * k_s{nb} + rd[:, None] * k_s{nb + 1}, "
             "mask=nmask[None, :] & dmask[:, None], other=0.0).to(tl.float32)",
             f"    s = tl.dot(qv, kt, input_precision='{precision}')",
             "    keep = mmask[:, None] & nmask[None, :]"]
    if node.attrs.get("causal"):
        body.append("    keep = keep & (rn[None, :] <= rm[:, None])")
    if masked:
        body += _mask_lines(node.attrs.get("additive_mask"), nb)
    body += [f"    s = tl.where(keep, s, {codegen.NEG_INF})",
             "    new_peak = tl.maximum(peak, tl.max(s, axis=1))",
             "    safe = tl.where(new_peak == float('-inf'), 0.0, new_peak)",
             "    pr = tl.exp2(s - safe[:, None])",
             "    alpha = tl.exp2(tl.where(peak == float('-inf'), safe, peak) - safe)",
             "    total = total * alpha + tl.sum(pr, axis=1)",
             f"    vv = tl.load(v_base + rn[:, None] * v_s{nb} + re[None, :] * v_s{nb + 1}, "
             "mask=nmask[:, None] & emask[None, :], other=0.0).to(tl.float32)",
             f"    acc = acc * alpha[:, None] + tl.dot(pr, vv, input_precision='{precision}')",
             "    peak = new_peak",
             "acc = acc / tl.where(total == 0.0, 1.0, total)[:, None]",  # rows past L: no keys
             "cmask = mmask[:, None] & emask[None, :]"]
    idx = tuple(batch_idx) + ("rm[:, None]", "re[None, :]")
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_D": max(16, p2(dq)),
              "BLOCK_E": max(16, p2(dv))}
    grid = f"(triton.cdiv({length}, {bm}), {max(1, math.prod(batch))})"
    expr = Expr(ctx, body)
    expr.scalar_indices = {i for i in batch_idx if i != "0"}
    return finish_dot_stage(ctx, stage, name, expr, idx, "cmask",
                                   "BLOCK_M, BLOCK_E", grid, consts)


def _mask_lines(additive: bool, nb: int) -> list[str]:
    """The attention mask's tile (read with its broadcast strides): a bool mask drops the
    scores where False, a float mask is added to them (in the kernel's log2 units)."""
    load = (f"    w = tl.load(w_base + rm[:, None] * w_s{nb} + rn[None, :] * w_s{nb + 1}, "
            "mask=keep, other=0)")
    if not additive:
        return [load, "    keep = keep & (w != 0)"]
    return [load, f"    s = s + w.to(tl.float32) * {codegen.lit(math.log2(math.e))}"]
