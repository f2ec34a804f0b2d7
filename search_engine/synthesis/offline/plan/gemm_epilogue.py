"""A GEMM with its epilogue, planned: the matmul and the pointwise ops after it fuse into one
tiled kernel; reductions after it (a LogSumExp, a softmax, a norm) become a rows tail in a
second kernel over the fused result (`prepare_matmul`). An epilogue that neither can take
turns the problem into a staged pipeline (`prepared`).

Writers read the plan from the analysis: ``an._fused`` (the ids of the fused kernel),
``an._split`` (the node the tail reads) and ``an._rows_tail`` (the tail's own rows analysis).
"""

from __future__ import annotations

import copy
import math

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import LEAVES, REDUCTIONS, Analysis, IRNode
from search_engine.synthesis.offline.plan.classify import check_rows, classify_staged


def matmul_dims(an: Analysis) -> tuple[int, int, int]:
    mm = an.nodes[an.matmul]
    a_shape, b_shape = (an.nodes[r].shape for r in mm.refs())
    m = math.prod(a_shape[:-1]) if len(b_shape) == 2 else a_shape[-2]
    return m, b_shape[-1], a_shape[-1]


def prepare_matmul(an: Analysis) -> None:
    """Split a matmul problem into the fused part and an optional rows tail (in place)."""
    nodes = an.nodes
    mm = an.matmul
    depends_on_reduction: set[int] = set()
    for node in an.topo():
        if node.op in REDUCTIONS or any(r in depends_on_reduction for r in node.refs()):
            depends_on_reduction.add(node.id)
    if not depends_on_reduction:
        an._fused, an._split, an._rows_tail = sorted(nodes), an.output, None
        _check_epilogue(an, an._fused)
        return
    tail_ids = sorted(depends_on_reduction)
    crossing = {r for i in tail_ids for r in nodes[i].refs()
                if r not in depends_on_reduction and nodes[r].op not in LEAVES
                and nodes[r].op != "transpose"}
    split = crossing.pop() if len(crossing) == 1 else mm
    fused = _ancestors(an, split)
    tail = {i: copy.deepcopy(nodes[i]) for i in nodes if i not in fused or
            nodes[i].op in LEAVES}
    tail = {i: n for i, n in tail.items() if i in _ancestors_within(tail, an.output, split)}
    split_node = nodes[split]
    tail[split] = IRNode(split, "input", [], {"index": -1, "temp": True},
                         tuple(split_node.shape), torch.float32)
    tail_an = Analysis("rows", dict(sorted(tail.items())), an.output, an.input_count,
                       op_names=an.op_names, input_names=an.input_names)
    tail_an.output_dtype = an.output_dtype
    check_rows(tail_an, sorted(tail))
    an._fused, an._split, an._rows_tail = sorted(fused), split, tail_an
    _check_epilogue(an, an._fused)


def _ancestors(an: Analysis, node_id: int) -> set[int]:
    seen, stack = set(), [node_id]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(an.nodes[i].refs())
    return seen


def _ancestors_within(nodes: dict, node_id: int, stop: int) -> set[int]:
    seen, stack = set(), [node_id]
    while stack:
        i = stack.pop()
        if i in seen or i not in nodes:
            continue
        seen.add(i)
        if i != stop:
            stack.extend(nodes[i].refs())
    return seen


def _check_epilogue(an: Analysis, fused: list[int]) -> None:
    mm_shape = tuple(an.nodes[an.matmul].shape)
    batched = is_batched(an)
    for i in fused:
        node = an.nodes[i]
        if node.op in LEAVES or i == an.matmul or node.op == "transpose":
            continue
        if tuple(node.shape) != mm_shape:
            raise NotCoveredError("an epilogue op that changes the matmul's output shape",
                                  [node.op])
        for r in node.refs():
            leaf = an.nodes[r]
            if leaf.op in LEAVES and not batched and len(mm_shape) > 2:
                padded = (1,) * (len(mm_shape) - len(leaf.shape)) + tuple(leaf.shape)
                strides = torch.empty(padded).expand(mm_shape).stride()
                for d in range(len(mm_shape) - 2):
                    if mm_shape[d] != 1 and strides[d] != strides[d + 1] * mm_shape[d + 1]:
                        raise NotCoveredError("an epilogue operand that cannot be flattened "
                                              "with the matmul rows", ["broadcast"])


def is_batched(an: Analysis) -> bool:
    mm = an.nodes[an.matmul]
    return len(an.nodes[mm.refs()[1]].shape) == 3


def prepared(an: Analysis) -> Analysis:
    """A matmul problem split into its fused GEMM and epilogue; an epilogue the fused
    template cannot take (a norm, reductions of several shapes) makes it a staged pipeline."""
    if an.family != "matmul":
        return an
    try:
        prepare_matmul(an)
        return an
    except NotCoveredError as refused:
        staged_an = classify_staged(an.nodes, an.output, an.input_count, an.op_names,
                                    an.input_names, an.output_dtype, refused)
        staged_an.batch_variants = getattr(an, "batch_variants", {})
        return staged_an


def prepared_variant(variant: Analysis) -> Analysis:
    """A batch variant of the problem's graph, prepared once like the graph itself."""
    done = getattr(variant, "_prepared", None)
    if done is None:
        done = variant._prepared = prepared(variant)
    return done


def planned(an: Analysis) -> Analysis:
    """`prepared`, with any failure of the planner a refusal naming the stage and ops."""
    try:
        return prepared(an)
    except NotCoveredError:
        raise
    except Exception as exc:  # a form the planner does not know must not crash a search
        raise NotCoveredError(f"the offline planner failed on this {an.family} problem "
                              f"({type(exc).__name__}: {exc})", list(an.op_names)) from exc
