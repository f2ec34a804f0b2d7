"""Matmul variants: batched, 3-D/4-D and broadcast operands, matmuls inside a pipeline,
einsum contractions (lowered to batched matmuls), diagonal and triangular structure (index
ops around the matmul). A stage of the staged family (see staged.py).

Operands are read with their own strides (a transposed or reshaped operand is a torch
view, never a copy); batch dims are flattened into the grid's second axis and unravelled
in the kernel; the pointwise chain after the matmul is fused on the accumulator.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.plan.stages import operand_chain
from search_engine.synthesis.offline.writers.staged_context import (
    dot_precision, finish_dot_stage, p2, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def operand_view(ctx, ref: int) -> str:
    """A forward expression viewing the stored node or leaf that operand `ref` reads."""
    base, chain = operand_chain(ctx.nodes, ref, ctx.stored)
    text = ctx.tensor(base.id)
    for view in chain:
        if view.op == "transpose":
            text += ".transpose(-1, -2)"
        elif view.op == "permute":
            text += f".permute{tuple(view.attrs['perm'])!r}"
        elif view.op == "slice":
            text += _slice_text(view)
        else:
            text += f".reshape({tuple(view.shape)!r})"
    return text


def _slice_text(view) -> str:
    """`[:, start:stop:step]`: the slice node's elements along its dim, as a torch view."""
    dim, start, step = view.attrs["dim"], view.attrs["start"], view.attrs["step"]
    stop = start + (view.shape[dim] - 1) * step + 1
    return "[" + ":, " * dim + f"{start}:{stop}:{step}]"


def pass_operand(ctx, stage, which: str, ref: int, batch: tuple[int, ...],
                 rows_cols: tuple[int, int] | None = None) -> None:
    """The operand's pointer and one stride per (batch..., rows, cols) dim of the output's
    batch: 0 where the operand broadcasts (a missing or size-1 batch dim; rows or cols too
    when `rows_cols` gives the sizes it broadcasts to, as an attention mask's)."""
    view = f"kh_view{which}{stage.anchor}"
    ctx.prelude.append(f"{view} = {operand_view(ctx, ref)}")
    ctx.kernel_params.append(f"{which}_ptr")
    ctx.call_args.append(view)
    shape = ctx.nodes[ref].shape
    full = tuple(batch) + tuple(rows_cols or shape[-2:])
    lead = len(full) - len(shape)
    for d, size in enumerate(full):
        j = d - lead
        ctx.kernel_params.append(f"{which}_s{d}")
        broadcast = j < 0 or (shape[j] == 1 and size != 1)
        ctx.call_args.append("0" if broadcast else f"{view}.stride({j})")


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    a, b = node.refs()
    out_shape = node.shape
    batch = tuple(out_shape[:-2])
    m, n = out_shape[-2], out_shape[-1]
    k = ctx.nodes[a].shape[-1]
    p = ctx.params
    bm = max(16, min(p["BLOCK_M"], p2(m)))
    bn = max(16, min(p["BLOCK_N"], p2(n)))
    bk = max(16, min(p["BLOCK_K"], p2(k)))
    nb = len(batch)
    body = ["pid = tl.program_id(0)",
            "bid = tl.program_id(1).to(tl.int64)",
            f"pid_m = pid // {-(-n // bn)}",
            f"pid_n = pid % {-(-n // bn)}",
            "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)",
            "rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(tl.int64)",
            f"mmask = rm < {m}", f"nmask = rn < {n}"]
    batch_idx = unravel(body, "bid", batch, "b") if batch else []
    for which, ref in (("a", a), ("b", b)):
        pass_operand(ctx, stage, which, ref, batch)
    a_base = " + ".join([f"{i} * a_s{d}" for d, i in enumerate(batch_idx) if i != "0"] or ["0"])
    b_base = " + ".join([f"{i} * b_s{d}" for d, i in enumerate(batch_idx) if i != "0"] or ["0"])
    body += [f"a_base = a_ptr + {a_base}", f"b_base = b_ptr + {b_base}",
             "acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)",
             f"for k0 in range(0, {k}, BLOCK_K):",
             "    rk = k0 + tl.arange(0, BLOCK_K).to(tl.int64)",
             f"    kmask = rk < {k}",
             f"    av = tl.load(a_base + rm[:, None] * a_s{nb} + rk[None, :] * a_s{nb + 1}, "
             "mask=mmask[:, None] & kmask[None, :], other=0.0).to(tl.float32)",
             f"    bv = tl.load(b_base + rk[:, None] * b_s{nb} + rn[None, :] * b_s{nb + 1}, "
             "mask=kmask[:, None] & nmask[None, :], other=0.0).to(tl.float32)",
             f"    acc += tl.dot(av, bv, input_precision='{dot_precision(p)}')",
             "cmask = mmask[:, None] & nmask[None, :]"]
    idx = tuple(batch_idx) + ("rm[:, None]", "rn[None, :]")
    grid = f"(triton.cdiv({m}, {bm}) * triton.cdiv({n}, {bn}), {max(1, math.prod(batch))})"
    expr = Expr(ctx, body)
    expr.scalar_indices = {i for i in batch_idx if i != "0"}
    return finish_dot_stage(ctx, stage, name, expr, idx, "cmask",
                                   "BLOCK_M, BLOCK_N", grid,
                                   {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk})
