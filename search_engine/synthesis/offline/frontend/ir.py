"""The op graph (IR) the offline synthesizer works on: its nodes, the `Analysis` that holds a
classified graph, and the vocabulary of ops a graph may use.

The frontend builds graphs of these types; the plan (`plan/`) classifies them, setting the
`Analysis` fields that say which kernels the graph becomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

UNARY = {
    "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "gelu",
    "gelu_tanh", "silu", "softplus", "elu", "leaky_relu", "clamp", "square", "reciprocal",
    "sin", "cos", "hardsigmoid", "hardswish", "mish", "selu", "powc", "log1p", "expm1",
    "celu", "logsigmoid", "hardshrink", "threshold", "round_fp16", "round_bf16",
}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "fmod", "remainder"}
REDUCTIONS = {"sum", "max", "min", "argmax", "argmin"}
LEAVES = {"input", "param"}

# ops only the staged family (staged.py) renders; a graph with any of them is staged
STAGED_OPS = {"conv", "pool", "scan", "attention", "recurrence", "prod", "reshape", "permute",
              "expand", "flip", "slice", "unfold", "cat", "pad", "iota", "where", "gt", "lt",
              "ge", "le", "eq", "ne", "sign", "floor", "ceil", "round", "trunc", "erf"}
OPS = UNARY | BINARY | REDUCTIONS | LEAVES | {"matmul", "transpose"} | STAGED_OPS
FAMILIES = ("elementwise", "rows", "matmul")


@dataclass(frozen=True)
class Const:
    value: float


@dataclass
class IRNode:
    id: int
    op: str
    operands: list[Any] = field(default_factory=list)  # int (node id) or Const
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] = ()
    dtype: torch.dtype = torch.float32

    def refs(self) -> list[int]:
        return [a for a in self.operands if isinstance(a, int)]


@dataclass
class Analysis:
    family: str  # "traced" (the frontend's), then the plan's: elementwise | rows | matmul | staged
    nodes: dict[int, IRNode]
    output: int
    input_count: int
    reduce_dims: tuple[int, ...] = ()  # for rows: the reduced dims of `row_shape`
    row_shape: tuple[int, ...] = ()  # the shape the reductions read
    matmul: int | None = None
    op_names: list[str] = field(default_factory=list)  # the reference's ops, for origin
    input_names: list[str] = field(default_factory=list)  # forward's argument names
    output_dtype: str = "torch.float32"
    materialized_bytes: int = 0  # real tensor data the sandboxed tracing held (meta: 0)

    def topo(self) -> list[IRNode]:
        return [self.nodes[i] for i in sorted(self.nodes)]

    def users(self, node_id: int) -> list[int]:
        return [n.id for n in self.nodes.values() if node_id in n.refs()]


def pruned(nodes: dict[int, IRNode], output: int) -> dict[int, IRNode]:
    """The nodes `output` depends on (dead code dropped), in id order."""
    keep, stack = set(), [output]
    while stack:
        node_id = stack.pop()
        if node_id in keep:
            continue
        keep.add(node_id)
        stack.extend(nodes[node_id].refs())
    return {i: nodes[i] for i in sorted(keep)}


def deduplicated(nodes: dict[int, IRNode], output: int) -> tuple[dict[int, IRNode], int]:
    """The graph with each repeated computation kept once (common subexpressions: the same op
    over the same operands with the same attributes), its users pointed at the first copy.
    A reference that writes `(x - x.mean()) / x.std()` computes the mean twice, and `std`
    its own `x - mean` again: kept once, the planner sees one mean its variance pairs with
    and no kernel reads x for a result it already has. Every op is a pure function of its
    operands and attributes (the frontend traces no random ops), so merging is exact."""
    first: dict[tuple, int] = {}
    replaced: dict[int, int] = {}
    out: dict[int, IRNode] = {}
    for node_id in sorted(nodes):
        node = nodes[node_id]
        operands = [replaced.get(a, a) if isinstance(a, int) else a for a in node.operands]
        key = (node.op, tuple(operands), repr(sorted(node.attrs.items())), node.shape,
               node.dtype)
        if key in first:
            replaced[node_id] = first[key]
            continue
        first[key] = node_id
        out[node_id] = node if operands == node.operands else \
            IRNode(node.id, node.op, operands, dict(node.attrs), node.shape, node.dtype)
    if not replaced:
        return nodes, output
    output = replaced.get(output, output)
    return pruned(out, output), output
