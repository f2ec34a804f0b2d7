"""The staged family: a problem as a short pipeline of generated Triton kernels.

What one fused kernel cannot do (a convolution followed by a norm and a pool, BatchNorm's
statistics over non-adjacent dims, scans, losses, attention, several matmuls) is cut into
stages at its *anchors*: ``conv`` (conv.py), ``pool`` (pooling.py), ``scan`` (scans.py),
``matmul`` (matmul_variants.py), ``attention`` (attention.py) and reductions
(staged_writers.py). Every other op is pointwise or an index op (reshape, permute, expand,
flip, slice, cat, iota) and is never stored: a kernel computes it where it reads it, through
`Expr` (staged_expr.py), which turns a node at a multi-index into Triton code (loads with
the operands' own strides, so non-contiguous inputs need no copy). A chain of pointwise ops
right after an anchor is its fused epilogue (bias, activation, scale); the op graph's output
and any value a later stage reads is stored in an fp32 buffer (the output in its own dtype).

The family's name is its main anchor (``conv``, ``attention``, ``batched_matmul``,
``pooling``, ``scan``, ``reduction``, ``pointwise``); one parameter set (tile sizes and warps)
serves every stage, each clamped to the stage's sizes.

This module classifies a graph into the family and renders a candidate; the parts live beside
it: the op vocabulary and the plan in `staged_plan.py`, `Expr` in `staged_expr.py`, the
kernel-writing context and helpers in `staged_context.py`, pointwise and reduction stages in
`staged_writers.py`, parameters and moves in `staged_params.py`. Every name the family
modules (as ``staged.Expr``, ``staged.p2``, ...) and the synthesizer use is exported here.
"""

from __future__ import annotations

from typing import Any

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import codegen
from search_engine.synthesis.offline.analysis import LEAVES, STAGED_OPS, Analysis, IRNode
from search_engine.synthesis.offline.staged_context import (
    Context, finish_dot_stage, kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.staged_expr import (
    Expr, contiguous_strides, pointwise, reshape_index,
)
from search_engine.synthesis.offline.staged_params import (
    SPACE, apply_move, clamp, default_params, fits_shared_memory, notes, ordered_moves,
    random_params, resource_problem, valid,
)
from search_engine.synthesis.offline.staged_plan import (
    ANCHOR_OPS, COMPARE, EXTRA_UNARY, INDEX_OPS, POINTWISE_OPS, REDUCE_OPS, VIEW_OPS, Stage,
    plan, users,
)
from search_engine.synthesis.offline.staged_writers import (
    reduction_split, write_pointwise, write_reduction,
)

__all__ = [
    # the family's interface (synthesizer.FAMILY_MODULES, analysis.classify)
    "FAMILIES", "apply_move", "clamp", "classify", "default_params", "family_of",
    "fits_shared_memory", "needs_staging", "notes", "ordered_moves", "random_params", "render",
    "resource_problem", "valid", "SPACE",
    # what the family modules (conv, pooling, scans, matmul_variants, attention) write with
    "Context", "Expr", "Stage", "finish_dot_stage", "kernel_source", "launch", "p2",
    "store_epilogue", "unravel", "VIEW_OPS",
    # the op vocabulary, the plan and the stage writers
    "ANCHOR_OPS", "COMPARE", "EXTRA_UNARY", "FAMILY_ORDER", "INDEX_OPS", "MAX_CONV_RANK",
    "POINTWISE_OPS", "REDUCE_OPS", "contiguous_strides", "plan", "pointwise", "reduction_split",
    "reshape_index", "users", "write_pointwise", "write_reduction", "writer_for",
]

FAMILY_ORDER = (("conv", "conv"), ("attention", "attention"), ("matmul", "batched_matmul"),
                ("pool", "pooling"), ("scan", "scan"))
FAMILIES = ("conv", "attention", "batched_matmul", "pooling", "scan", "reduction", "pointwise")
MAX_CONV_RANK = 3


def needs_staging(nodes: dict[int, IRNode]) -> bool:
    return any(n.op in STAGED_OPS or n.attrs.get("scalar") for n in nodes.values())


def family_of(nodes: dict[int, IRNode]) -> str:
    ops = {n.op for n in nodes.values()}
    for op, family in FAMILY_ORDER:
        if op in ops:
            return family
    return "reduction" if ops & REDUCE_OPS else "pointwise"


def classify(nodes, output, input_count, op_names, input_names, output_dtype,
             refused: NotCoveredError | None = None) -> Analysis:
    """The staged analysis, or NotCoveredError naming what no stage can do."""
    problems = []
    for node in nodes.values():
        if node.op not in POINTWISE_OPS | INDEX_OPS | ANCHOR_OPS | LEAVES:
            problems.append(node.op)
        elif node.op in ANCHOR_OPS:
            reason = _anchor_problem(nodes, node)
            if reason:
                problems.append(reason)
    if nodes[output].op in LEAVES:
        problems.append("identity")
    if problems:
        ops = sorted(set(problems) | set(refused.ops if refused else []))
        raise NotCoveredError("no staged template covers this problem", ops)
    return Analysis(family_of(nodes), nodes, output, input_count, op_names=op_names,
                    input_names=input_names, output_dtype=output_dtype)


def _anchor_problem(nodes, node) -> str | None:
    shapes = [nodes[r].shape for r in node.refs()]
    if node.op == "conv":
        nd = len(node.attrs["stride"])
        if not 1 <= nd <= MAX_CONV_RANK or len(shapes[0]) != nd + 2 \
                or len(shapes[1]) != nd + 2:
            return "conv (input without a batch dim)"
    elif node.op == "pool":
        if len(shapes[0]) < len(node.attrs["kernel"]) + 1:
            return "pool (rank)"
    elif node.op in ("matmul", "attention"):
        if any(len(s) < 2 for s in shapes):
            return f"{node.op} (1-D operand)"
    return None


def writer_for(op: str):
    from search_engine.synthesis.offline import attention, conv, matmul_variants, pooling, scans

    return {"conv": conv.write, "pool": pooling.write, "scan": scans.write,
            "matmul": matmul_variants.write, "attention": attention.write}.get(
        op, write_reduction if op in REDUCE_OPS else write_pointwise)


def render(problem_source: str, an: Analysis, params: dict[str, Any]) -> str:
    ctx = Context(an, params)
    kernels, forward = [], []
    result = f"kh_b{an.output}"
    last, out = ctx.stages[-1], an.nodes[an.output]
    if last.anchor == an.output and out.op == "reshape" and out.refs()[0] in ctx.stored \
            and an.output_dtype == "torch.float32":  # the output is a view of a stored node
        ctx.stages.pop()
        result = f"kh_b{out.refs()[0]}.reshape({tuple(out.shape)!r})"
    for k, stage in enumerate(ctx.stages):
        ctx.start()
        op = ctx.nodes[stage.anchor].op
        name = f"kh_stage{k}_{op}"
        forward.append(ctx.buffer_line(stage.sink))
        source, lines = writer_for(op if stage.anchor != stage.sink or op in ANCHOR_OPS
                                   else "pointwise")(ctx, stage, name)
        kernels.append(_Source(source))
        forward.extend(ctx.prelude + lines)
    forward.append(f"return {result}")
    header = (f"Generated by KernelHub's offline synthesizer.\n\nFamily: {an.family} "
              f"(staged: {len(ctx.stages)} kernels); reference ops: "
              f"{', '.join(an.op_names)}.\nTemplate parameters: {sorted(params.items())}.\n")
    return codegen.assemble(problem_source, an, kernels, forward, header)


class _Source:
    def __init__(self, text: str):
        self.text = text

    def source(self) -> str:
        return self.text
