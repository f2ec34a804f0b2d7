"""A mean and the variance around it in one read (`plan.stages.moment_pairs`): each lane of
the reduction tile keeps Welford's running count, mean and sum of squared deviations of
the elements it streams; after the loop the lanes merge by Chan's formula, and where the
elements are split over programs each program stores its three partials and a second
kernel merges them the same way. Then the mean stage's epilogue and the variance stage's
(its division, epsilon, rsqrt) run on the merged values, each stored as its own stage
would store it. The two-pass form read the elements once for the mean and again for the
deviations; Welford's update is exact to rounding where summing squares and subtracting
the squared mean cancels."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.plan.stages import Stage
from search_engine.synthesis.offline.writers.staged_context import (
    Context, kernel_source, launch, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr
from search_engine.synthesis.offline.writers.staged_writers import (
    start_combine_kernel, stream_reduction,
)

# Chan et al.'s merge of two (mean, sum of squared deviations, count) summaries
WELFORD_COMBINE = """@triton.jit
def _kh_welford(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    frac = tl.where(n == 0.0, 0.0, n_b / tl.where(n == 0.0, 1.0, n))
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac, n


"""


def write_moments(ctx: Context, stages: list[Stage], name: str) -> tuple[str, list[str]]:
    """The (mean, variance) stage pair's kernel(s): one read of the elements."""
    node = ctx.nodes[stages[0].anchor]
    red = stream_reduction(
        ctx, node, "sum",
        lambda axes: [f"w_{k} = tl.zeros({axes.shape}, tl.float32)" for k in ("n", "mean", "m2")],
        lambda v, axes: ["w_n += tl.where(m2, 1.0, 0.0)",  # Welford's update, lane by lane
                         f"delta = tl.where(m2, {v} - w_mean, 0.0)",
                         "w_mean += delta / tl.maximum(w_n, 1.0)",
                         f"w_m2 += delta * tl.where(m2, {v} - w_mean, 0.0)"])
    body, consts, split, n_out = red.body, red.consts, red.split, red.n_out
    body.append(f"acc_mean, acc_m2, acc_n = tl.reduce((w_mean, w_m2, w_n), {red.axes.axis}, "
                "_kh_welford)")
    warps = ctx.params["num_warps"]
    if split > 1:
        return _split_moments(ctx, stages, name, body, consts, split, n_out)
    _store_both(ctx, Expr(ctx, body), stages)
    grid = f"(triton.cdiv({n_out}, {consts['BLOCK_O']}),)"
    return (WELFORD_COMBINE + kernel_source(name, ctx, list(consts), body),
            [launch(name, ctx, grid, consts, warps)])


def _store_both(ctx: Context, expr: Expr, stages: list[Stage]) -> None:
    """The mean stage's epilogue on the total (mean × count), then the variance stage's on
    the sum of squared deviations; each stores its own sink, at the output index of its own
    shape (one may keep the reduced dims, the other not: the same outputs in the same
    order)."""
    zero = "tl.zeros([BLOCK_O], tl.float32)"
    expr.body.append("acc_sum = acc_mean * acc_n")
    for k, (stage, value) in enumerate(zip(stages, ("acc_sum", "acc_m2"))):
        expr.cache = {}
        expr.subst[stage.anchor] = value
        out_idx = unravel(expr.body, "offs", ctx.nodes[stage.anchor].shape, f"o{k}_")
        store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", zero)


def _split_moments(ctx, stages, name, body, consts, split, n_out):
    """Each program's (mean, m2, count) to a partial buffer; a second kernel merges a
    output's SPLIT partials and writes both stages' epilogues."""
    part = f"kh_part{stages[0].anchor}"
    size = n_out * split
    ctx.kernel_params.append("part_ptr")
    ctx.call_args.append(part)
    body.append("slot = offs * SPLIT + tl.program_id(1)")
    body += [f"tl.store(part_ptr + {k * size} + slot, {value}, mask=omask)"
             for k, value in enumerate(("acc_mean", "acc_m2", "acc_n"))]
    first = kernel_source(name + "_partial", ctx, list(consts) + ["SPLIT"], body)
    block_o, warps = consts["BLOCK_O"], ctx.params["num_warps"]
    lines = [f"{part} = torch.empty(({3 * size},), device={ctx.device()}, "
             "dtype=torch.float32)",
             launch(name + "_partial", ctx, f"(triton.cdiv({n_out}, {block_o}), {split})",
                    {**consts, "SPLIT": split}, warps)]
    body = start_combine_kernel(ctx, part, n_out) + [
        "slots = offs[:, None] * SPLIT + tl.arange(0, SPLIT)[None, :]"]
    body += [f"p_{k} = tl.load(part_ptr + {j * size} + slots, mask=omask[:, None], other=0.0)"
             for j, k in enumerate(("mean", "m2", "n"))]
    body.append("acc_mean, acc_m2, acc_n = tl.reduce((p_mean, p_m2, p_n), 1, _kh_welford)")
    _store_both(ctx, Expr(ctx, body), stages)
    second = kernel_source(name, ctx, ["BLOCK_O", "SPLIT"], body)
    lines.append(launch(name, ctx, f"(triton.cdiv({n_out}, {block_o}),)",
                        {"BLOCK_O": block_o, "SPLIT": split}, warps))
    return WELFORD_COMBINE + first + "\n\n" + second, lines
