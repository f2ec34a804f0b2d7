"""Classify an op graph into one fused family (elementwise, rows or matmul: one kernel), or
into a staged pipeline (a family named after its main anchor: conv, attention,
batched_matmul, pooling, scan, reduction, pointwise; its stages are `stages.plan`) when it
needs stages; `NotCoveredError` names what stops it.

Pure: it reads the graph only, no problem code runs, so it is safe on the sandbox's answer.
"""

from __future__ import annotations

from typing import Any

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import (
    LEAVES, REDUCTIONS, STAGED_OPS, Analysis, IRNode, deduplicated, pruned,
)
from search_engine.synthesis.offline.frontend.json_io import CoverageUnknown, graph_from_json
from search_engine.synthesis.offline.plan.algebra import simplified
from search_engine.synthesis.offline.plan.stages import (
    ANCHOR_OPS, INDEX_OPS, POINTWISE_OPS, REDUCE_OPS,
)


def classified(traced: Analysis) -> Analysis:
    """The traced graph's family: what the sandboxed probe answers with."""
    an = classify(traced.nodes, traced.output, traced.input_count, traced.op_names,
                  traced.input_names, traced.output_dtype)
    an.materialized_bytes = traced.materialized_bytes
    return an


def analysis_from_json(data: Any) -> Analysis:
    """The sandbox's graph checked strictly (`graph_from_json`) and classified here, so the
    family is never taken on the child's word; CoverageUnknown when anything is out of shape,
    NotCoveredError when the graph does not fit a family."""
    graph = graph_from_json(data)
    try:
        return classify(graph.nodes, graph.output, graph.input_count, graph.op_names,
                        graph.input_names, graph.output_dtype)
    except NotCoveredError:
        raise
    except Exception as exc:  # a well-typed but inconsistent graph (missing attrs, ...)
        raise CoverageUnknown(f"coverage unknown: the sandbox's op graph is inconsistent "
                              f"({type(exc).__name__})") from None


def classify(all_nodes: dict[int, IRNode], output: int, input_count: int,
             op_names: list[str], input_names: list[str], output_dtype: str) -> Analysis:
    """The family of the graph that computes `output` (pure: no problem code runs)."""
    nodes, output = simplified(*deduplicated(pruned(all_nodes, output), output))
    if needs_staging(nodes):
        return classify_staged(nodes, output, input_count, op_names, input_names, output_dtype)
    try:
        return _classify_fused(nodes, output, input_count, op_names, input_names, output_dtype)
    except NotCoveredError as refused:  # beyond one fused kernel: a pipeline of stages
        return classify_staged(nodes, output, input_count, op_names, input_names,
                               output_dtype, refused)


def _classify_fused(nodes, output, input_count, op_names, input_names, output_dtype):
    matmuls = [n for n in nodes.values() if n.op == "matmul"]
    reductions = [n for n in nodes.values() if n.op in REDUCTIONS]
    analysis = Analysis("elementwise", nodes, output, input_count, op_names=op_names,
                        input_names=input_names, output_dtype=output_dtype)
    if len(matmuls) > 1:
        raise NotCoveredError("the offline synthesizer fuses one matmul per problem",
                              ["matmul (more than one)"])
    if matmuls:
        analysis.family = "matmul"
        analysis.matmul = matmuls[0].id
        _check_matmul(analysis)
        return analysis
    if any(n.op == "transpose" for n in nodes.values()):
        raise NotCoveredError("a transpose outside a matmul operand is not covered",
                              ["transpose"])
    if reductions:
        analysis.family = "rows"
        _check_rows(analysis, list(nodes))
    return analysis


def check_rows(analysis: Analysis, ids: list[int]) -> None:
    _check_rows(analysis, ids)


def _check_rows(analysis: Analysis, ids: list[int]) -> None:
    """All reductions read one shape over the same dims; reduced values broadcast per row."""
    nodes = analysis.nodes
    reductions = [nodes[i] for i in ids if nodes[i].op in REDUCTIONS]
    row_shape = reductions[0].attrs["in_shape"]
    dims = reductions[0].attrs["dims"]
    for red in reductions:
        if red.attrs["in_shape"] != row_shape or red.attrs["dims"] != dims:
            raise NotCoveredError("reductions over different shapes or dims are not covered",
                                  [red.op])
        if dims != tuple(range(dims[0], dims[-1] + 1)):
            raise NotCoveredError("reductions over non-adjacent dims are not covered", [red.op])
    analysis.row_shape, analysis.reduce_dims = tuple(row_shape), tuple(dims)
    level = {}  # "full" or "row" (one value per row)
    for node_id in ids:
        node = nodes[node_id]
        if node.op in LEAVES:
            level[node_id] = "leaf"
            continue
        if node.op in REDUCTIONS:
            if level[node.refs()[0]] == "row":
                raise NotCoveredError("a reduction of an already reduced value", [node.op])
            level[node_id] = "row"
            if node.op in ("argmax", "argmin") and node_id != analysis.output:
                raise NotCoveredError(f"{node.op} feeding further ops is not covered",
                                      [node.op])
            continue
        operand_levels = {level[r] for r in node.refs()}
        if "full" in operand_levels or "leaf" in operand_levels:
            level[node_id] = "full"
            if tuple(node.shape) != tuple(row_shape):
                raise NotCoveredError(
                    "an op whose output is not the reduced tensor's shape", [node.op])
            for ref in node.refs():
                if level[ref] == "row" and not _per_row_shape(nodes[ref].shape, row_shape, dims):
                    raise NotCoveredError(
                        "a reduced value (without keepdim) broadcast against the full tensor",
                        [nodes[ref].op])
        else:
            level[node_id] = "row"
    out_level = level[analysis.output]
    if out_level == "leaf":
        raise NotCoveredError("the output is an input", ["identity"])
    for node_id in ids:
        if level[node_id] == "leaf":
            _check_broadcast(nodes[node_id], row_shape)


def _per_row_shape(shape, row_shape, dims) -> bool:
    shape = (1,) * (len(row_shape) - len(shape)) + tuple(shape)
    if len(shape) != len(row_shape):
        return False
    return all((s == 1) if d in dims else (s == row_shape[d] or row_shape[d] == 1)
               for d, s in enumerate(shape))


def _check_broadcast(leaf: IRNode, shape) -> None:
    if len(leaf.shape) > len(shape) or torch.broadcast_shapes(leaf.shape, shape) != tuple(shape):
        raise NotCoveredError(f"an operand of shape {list(leaf.shape)} that does not broadcast "
                              f"to {list(shape)}", ["broadcast"])


def _check_matmul(analysis: Analysis) -> None:
    nodes = analysis.nodes
    mm = nodes[analysis.matmul]
    for operand in mm.refs():
        node = nodes[operand]
        if node.op == "transpose":
            node = nodes[node.refs()[0]]
        if node.op not in LEAVES:
            raise NotCoveredError("a matmul operand computed by other ops (a prologue) is not "
                                  "covered", [node.op])
    a_shape, b_shape = (_operand_shape(nodes, r) for r in mm.refs())
    if len(b_shape) == 2 and len(a_shape) >= 2:
        return
    if len(a_shape) == len(b_shape) == 3 and a_shape[0] == b_shape[0]:
        return
    raise NotCoveredError(f"matmul of shapes {list(a_shape)} @ {list(b_shape)}",
                          ["matmul (broadcast batch)"])


def _operand_shape(nodes, ref):
    return nodes[ref].shape


def op_summary(analysis: Analysis) -> str:
    ops = [n.op for n in analysis.topo() if n.op not in LEAVES]
    return " → ".join(ops)


FAMILY_ORDER = (("recurrence", "recurrence"), ("conv", "conv"), ("attention", "attention"),
                ("matmul", "batched_matmul"), ("pool", "pooling"), ("scan", "scan"))


FAMILIES = ("recurrence", "conv", "attention", "batched_matmul", "pooling", "scan", "reduction",
            "pointwise")


MAX_CONV_RANK = 3


def needs_staging(nodes: dict[int, IRNode]) -> bool:
    return any(n.op in STAGED_OPS or n.attrs.get("scalar") for n in nodes.values())


def family_of(nodes: dict[int, IRNode]) -> str:
    ops = {n.op for n in nodes.values()}
    for op, family in FAMILY_ORDER:
        if op in ops:
            return family
    return "reduction" if ops & REDUCE_OPS else "pointwise"


def classify_staged(nodes, output, input_count, op_names, input_names, output_dtype,
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
