"""Exact rewrites of the op graph before it is planned: work the reference asks for that its
result does not need.

- **A sum over a GEMM's output columns**, through bias adds, subtractions and scalings, is the
  GEMM's input times its weight's column sums: sum_j (x W^T + b)_ij = sum_k x_ik (sum_j W_jk)
  + sum_j b_j. Two reads (the weight, then x) replace M*N*K multiply-adds: KernelBench's
  Gemm + Sum/Mean chains at 1024x8192x8192 do 137 GFLOP for a result 0.3 GB of reads gives.
- **A sum, max or min over dims that are all of size 1** is its input (a reshape when it
  drops them): a LogSumExp, max or mean after such a sum costs nothing.

Both hold up to floating-point rounding order, which the checks' tolerances are for (the
weight's column sums are recomputed on every call: nothing is cached between calls). Pure:
the graph only, no problem code runs; a graph neither rewrite applies to comes back as is.
"""

from __future__ import annotations

import copy

import torch

from search_engine.synthesis.offline.frontend.ir import LEAVES, Const, IRNode, pruned

UNIT_FOLDABLE = ("sum", "max", "min")
_MAX_REWRITES = 64  # each rewrite removes a reduction or a matmul: a bound, never reached


def simplified(nodes: dict[int, IRNode], output: int) -> tuple[dict[int, IRNode], int]:
    """The graph with both rewrites applied until neither applies, renumbered in
    topological order; (nodes, output) themselves when nothing applied."""
    graph = _Rewriter(nodes, output)
    changed = False
    for _ in range(_MAX_REWRITES):
        if not (graph.fold_unit_reduction() or graph.sum_through_matmul()):
            break
        changed = True
    return graph.result() if changed else (nodes, output)


class _Rewriter:
    def __init__(self, nodes: dict[int, IRNode], output: int):
        self.nodes = {i: copy.deepcopy(n) for i, n in nodes.items()}
        self.output = output
        self.order = {i: float(i) for i in nodes}  # where a node sits in the final numbering

    # -- the rewrites ------------------------------------------------------------------

    def fold_unit_reduction(self) -> bool:
        for node in self._in_order():
            if node.op not in UNIT_FOLDABLE or not isinstance(node.operands[0], int):
                continue
            dims, in_shape = node.attrs.get("dims", ()), node.attrs.get("in_shape", ())
            if not dims or any(in_shape[d] != 1 for d in dims):
                continue
            source = self.nodes[node.operands[0]]
            if source.dtype != node.dtype or not source.dtype.is_floating_point:
                continue
            if node.id == self.output and source.op in LEAVES:
                continue  # the graph would be an identity, which no kernel computes
            replacement = source.id
            if tuple(source.shape) != tuple(node.shape):
                replacement = self._add("reshape", [source.id], node.shape, node.dtype,
                                        self.order[node.id] - 0.5)
            self._replace_uses(node.id, replacement)
            self._renumber()
            return True
        return False

    def sum_through_matmul(self) -> bool:
        for node in self._in_order():
            if node.op != "sum" or not isinstance(node.operands[0], int):
                continue
            found = self._column_sum_chain(node)
            if found is None:
                continue
            matmul, chain = found
            self._rewrite_column_sum(node, matmul, chain)
            self._renumber()
            return True
        return False

    # -- a GEMM whose output columns are summed ------------------------------------------

    def _column_sum_chain(self, total: IRNode):
        """(matmul, [(node, chain operand position)...] in graph order) when `total` sums
        the last dim of a float32 GEMM through ops linear in it, each with one user."""
        source = self.nodes[total.operands[0]]
        shape = tuple(source.shape)
        if len(shape) < 2 or tuple(total.attrs["dims"]) != (len(shape) - 1,):
            return None
        chain: list[tuple[IRNode, int]] = []
        node = source
        while node.op != "matmul":
            position = self._linear_position(node, shape)
            if position is None:
                return None
            chain.append((node, position))
            node = self.nodes[node.operands[position]]
        if not self._plain_matmul(node, shape) or len(self._users(node.id)) != 1:
            return None
        for link, position in chain:
            if len(self._users(link.id)) != 1:
                return None
            others = [a for i, a in enumerate(link.operands) if i != position]
            if any(isinstance(a, int) and node.id in self._ancestors(a) for a in others):
                return None  # the GEMM's output reaches the sum twice: not linear in it
        return node, chain[::-1]

    def _linear_position(self, node: IRNode, shape: tuple[int, ...]) -> int | None:
        """Which operand `node` is linear in, for a sum over the last dim, or None."""
        if tuple(node.shape) != shape or node.dtype != torch.float32:
            return None
        refs = [i for i, a in enumerate(node.operands)
                if isinstance(a, int) and tuple(self.nodes[a].shape) == shape
                and self._reaches_matmul(a)]
        if len(refs) != 1:
            return None
        position = refs[0]
        other = node.operands[1 - position] if len(node.operands) == 2 else None
        if node.op == "neg" and len(node.operands) == 1:
            return position
        if node.op in ("add", "sub") and len(node.operands) == 2:
            return position if self._floating(other) else None
        if node.op == "mul" and len(node.operands) == 2:
            return position if self._constant_along_last(other) else None
        if node.op == "div" and len(node.operands) == 2 and position == 0:
            return position if self._constant_along_last(other) else None
        return None

    def _plain_matmul(self, matmul: IRNode, shape: tuple[int, ...]) -> bool:
        """A float32 [..., M, K] @ [K, N] with both operands in the graph."""
        if len(matmul.operands) != 2 or not all(isinstance(a, int) for a in matmul.operands):
            return False
        a, b = (self.nodes[i] for i in matmul.operands)
        if any(n.dtype != torch.float32 for n in (a, b, matmul)) or len(b.shape) != 2:
            return False
        return (len(a.shape) >= 2 and a.shape[-1] == b.shape[0]
                and tuple(matmul.shape) == tuple(a.shape[:-1]) + (b.shape[1],) == shape)

    def _rewrite_column_sum(self, total: IRNode, matmul: IRNode, chain) -> None:
        at = self.order[total.id] - 0.5
        a, b = (self.nodes[i] for i in matmul.operands)
        width = matmul.shape[-1]
        unit = tuple(matmul.shape[:-1]) + (1,)
        weight = self.nodes[b.operands[0]] if b.op == "transpose" else None
        if weight is not None and len(weight.shape) == 2 and len(self._users(b.id)) == 1:
            # x @ W.T: W's rows are the output columns, so its sum over dim 0
            column_sums = self._reduce(weight, (0,), False, at, column_sums=True)
        else:
            column_sums = self._reduce(b, (1,), False, at, column_sums=True)
        product = self._add("mul", [a.id, column_sums], a.shape, torch.float32, at)
        value = self._reduce(self.nodes[product], (len(a.shape) - 1,), True, at)
        for link, position in chain:
            operands = list(link.operands)
            operands[position] = value
            if link.op in ("add", "sub"):
                other = 1 - position
                operands[other] = self._summed_term(operands[other], width, at)
            value = self._add(link.op, operands, unit, torch.float32, at, **link.attrs)
        total.operands[0] = value
        total.attrs["in_shape"] = unit  # a sum over a unit dim now: the fold removes it

    def _summed_term(self, term, width: int, at: float):
        """An added term's sum over the last dim (it broadcast over `width` columns)."""
        if isinstance(term, Const):
            return Const(term.value * width)
        node = self.nodes[term]
        if not node.shape or node.shape[-1] == 1:
            return self._add("mul", [term, Const(float(width))], node.shape, node.dtype, at)
        return self._reduce(node, (len(node.shape) - 1,), True, at)

    # -- graph helpers -----------------------------------------------------------------

    def _floating(self, operand) -> bool:
        return isinstance(operand, Const) or (
            isinstance(operand, int) and self.nodes[operand].dtype == torch.float32)

    def _constant_along_last(self, operand) -> bool:
        if isinstance(operand, Const):
            return True
        node = self.nodes[operand] if isinstance(operand, int) else None
        return (node is not None and node.dtype == torch.float32
                and (not node.shape or node.shape[-1] == 1))

    def _reaches_matmul(self, node_id: int) -> bool:
        return any(self.nodes[i].op == "matmul" for i in self._ancestors(node_id))

    def _ancestors(self, node_id: int) -> set[int]:
        return set(pruned(self.nodes, node_id))

    def _users(self, node_id: int) -> list[int]:
        users = [n.id for n in self.nodes.values() if node_id in n.refs()]
        return users + ([-1] if node_id == self.output else [])

    def _in_order(self) -> list[IRNode]:
        return [self.nodes[i] for i in sorted(self.nodes, key=self.order.__getitem__)]

    def _add(self, op, operands, shape, dtype, at: float, **attrs) -> int:
        node_id = max(self.nodes) + 1
        self.nodes[node_id] = IRNode(node_id, op, list(operands), dict(attrs), tuple(shape),
                                     dtype)
        self.order[node_id] = at + node_id * 1e-6  # after the nodes added before it
        return node_id

    def _reduce(self, node: IRNode, dims: tuple[int, ...], keepdim: bool, at: float,
                **marks) -> int:
        shape = [1 if d in dims else s for d, s in enumerate(node.shape)]
        if not keepdim:
            shape = [s for d, s in enumerate(node.shape) if d not in dims]
        return self._add("sum", [node.id], shape, torch.float32, at, dims=dims,
                         keepdim=keepdim, in_shape=tuple(node.shape), **marks)

    def _replace_uses(self, old: int, new: int) -> None:
        for node in self.nodes.values():
            node.operands = [new if a == old and isinstance(a, int) else a
                             for a in node.operands]
        if self.output == old:
            self.output = new

    def _renumber(self) -> None:
        """Dead nodes dropped, ids 0.. in topological order (an input keeps its place)."""
        live = pruned(self.nodes, self.output)
        ordered = sorted(live, key=self.order.__getitem__)
        new_id = {old: new for new, old in enumerate(ordered)}
        nodes = {}
        for old in ordered:
            node = live[old]
            node.id = new_id[old]
            node.operands = [new_id[a] if isinstance(a, int) else a for a in node.operands]
            nodes[node.id] = node
        self.nodes, self.output = nodes, new_id[self.output]
        self.order = {i: float(i) for i in nodes}

    def result(self) -> tuple[dict[int, IRNode], int]:
        return self.nodes, self.output
