"""Classify an op graph into one fused family (elementwise, rows or matmul), or hand it to
the staged pipeline (`staged.py`) when it needs stages; `NotCoveredError` names what stops it.

Pure: it reads the graph only, no problem code runs, so it is safe on the sandbox's answer.
"""

from __future__ import annotations

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.analysis_ir import LEAVES, REDUCTIONS, Analysis, IRNode


def classify(all_nodes: dict[int, IRNode], output: int, input_count: int,
             op_names: list[str], input_names: list[str], output_dtype: str) -> Analysis:
    """The family of the graph that computes `output` (pure: no problem code runs)."""
    nodes = _prune(all_nodes, output)
    from search_engine.synthesis.offline import staged

    if staged.needs_staging(nodes):
        return staged.classify(nodes, output, input_count, op_names, input_names, output_dtype)
    try:
        return _classify_fused(nodes, output, input_count, op_names, input_names, output_dtype)
    except NotCoveredError as refused:  # beyond one fused kernel: a pipeline of stages
        return staged.classify(nodes, output, input_count, op_names, input_names,
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


def _prune(nodes: dict[int, IRNode], output: int) -> dict[int, IRNode]:
    keep, stack = set(), [output]
    while stack:
        node_id = stack.pop()
        if node_id in keep:
            continue
        keep.add(node_id)
        stack.extend(nodes[node_id].refs())
    return {i: nodes[i] for i in sorted(keep)}


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
