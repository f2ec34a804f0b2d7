"""Exact rewrites of the op graph before it is planned: work the reference asks for that its
result does not need.

- **A sum over a GEMM's output columns**, through bias adds, subtractions and scalings, is the
  GEMM's input times its weight's column sums: sum_j (x W^T + b)_ij = sum_k x_ik (sum_j W_jk)
  + sum_j b_j. Two reads (the weight, then x) replace M*N*K multiply-adds: KernelBench's
  Gemm + Sum/Mean chains at 1024x8192x8192 do 137 GFLOP for a result 0.3 GB of reads gives.
- **A sum over a convolution's output channels** (a mean over dim 1) is likewise one
  convolution whose filter is the sum of all filters, with the biases summed: C_out times
  fewer multiply-adds and an output C_out times smaller.
- **An average pool over a GEMM's output columns** whose windows tile them (stride =
  kernel, no padding) is a GEMM with k times fewer columns: each window's weight columns
  summed, its biases summed, the result divided by k (KernelBench's Matmul + AvgPool chains).
- **A sum, max or min over dims that are all of size 1** is its input (a reshape when it
  drops them): a LogSumExp, max or mean after such a sum costs nothing.

Each holds up to floating-point rounding order, which the checks' tolerances are for (the
summed weights are recomputed on every call: nothing is cached between calls). Pure: the
graph only, no problem code runs; a graph no rewrite applies to comes back as is.
"""

from __future__ import annotations

import copy

import torch

from search_engine.synthesis.offline.frontend.ir import LEAVES, Const, IRNode, pruned
from search_engine.synthesis.offline.plan.stages import users

UNIT_FOLDABLE = ("sum", "max", "min")
ANCHORS = ("matmul", "conv")  # whose summed output features a rewrite removes
_MAX_REWRITES = 64  # each rewrite removes a reduction or a matmul: a bound, never reached


def simplified(nodes: dict[int, IRNode], output: int) -> tuple[dict[int, IRNode], int]:
    """The graph with the rewrites applied until none applies, renumbered in
    topological order; (nodes, output) themselves when nothing applied."""
    if not _worth_a_pass(nodes):
        return nodes, output
    graph = _Rewriter(nodes, output)
    changed = False
    for _ in range(_MAX_REWRITES):
        if not (graph.fold_unit_reduction() or graph.sum_through_anchor()
                or graph.pool_through_gemm()):
            break
        changed = True
    return graph.result() if changed else (nodes, output)


def _worth_a_pass(nodes: dict[int, IRNode]) -> bool:
    """Whether any rewrite could apply (most graphs: no; the pass is then free)."""
    ops = {n.op for n in nodes.values()}
    if "pool" in ops and "matmul" in ops:
        return True
    return bool(ops & set(UNIT_FOLDABLE)) and (bool(ops & set(ANCHORS)) or any(
        n.op in UNIT_FOLDABLE and n.attrs.get("dims")
        and all(n.attrs.get("in_shape", ())[d] == 1 for d in n.attrs["dims"])
        for n in nodes.values()))


class _Rewriter:
    def __init__(self, nodes: dict[int, IRNode], output: int):
        self.nodes = dict(nodes)  # the caller's nodes until a rewrite applies (`_own`)
        self.owned = False
        self.output = output
        self.order = {i: float(i) for i in nodes}  # where a node sits in the final numbering
        self._users_of: dict[int, list[int]] | None = None  # caches, dropped on any change
        self._below_anchor: set[int] | None = None

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
            self._own()
            replacement = source.id
            if tuple(source.shape) != tuple(node.shape):
                replacement = self._add("reshape", [source.id], node.shape, node.dtype,
                                        self.order[node.id] - 0.5)
            self._replace_uses(node.id, replacement)
            self._renumber()
            return True
        return False

    def sum_through_anchor(self) -> bool:
        return self._rewrite_first(
            lambda n: self._feature_sum_chain(n)
            if n.op == "sum" and isinstance(n.operands[0], int) else None,
            self._rewrite_feature_sum)

    def pool_through_gemm(self) -> bool:
        return self._rewrite_first(lambda n: self._pooled_gemm(n) if n.op == "pool" else None,
                                   self._rewrite_pooled_gemm)

    def _rewrite_first(self, find, rewrite) -> bool:
        """`rewrite(node, anchor, chain)` on the first node `find` gives an (anchor, chain)
        for, on the graph's own copies of them; whether one was found."""
        for node in self._in_order():
            found = find(node)
            if found is None:
                continue
            self._own()
            anchor, chain = found
            rewrite(self.nodes[node.id], self.nodes[anchor.id],
                    [(self.nodes[link.id], at) for link, at in chain])
            self._renumber()
            return True
        return False

    # -- a GEMM's output columns or a convolution's output channels, summed ----------------

    def _feature_sum_chain(self, total: IRNode):
        """(anchor, [(node, chain operand position)...] in graph order) when `total` sums a
        float32 GEMM's last dim or a convolution's channels through ops linear in it, each
        with one user."""
        source = self.nodes[total.operands[0]]
        dims = tuple(total.attrs["dims"])
        if len(source.shape) < 2 or len(dims) != 1:
            return None
        return self._linear_chain(source, dims[0])

    def _linear_chain(self, source: IRNode, axis: int):
        """(anchor, [(node, chain operand position)...] in graph order) when `source` is a
        float32 GEMM's output (its last dim the `axis`) or a convolution's (its channels),
        through ops linear in it along `axis`, each with one user."""
        shape = tuple(source.shape)
        chain: list[tuple[IRNode, int]] = []
        node = source
        while node.op not in ANCHORS:
            position = self._linear_position(node, shape, axis)
            if position is None:
                return None
            chain.append((node, position))
            node = self.nodes[node.operands[position]]
        anchor_fits = (self._plain_matmul(node, shape) and axis == len(shape) - 1
                       if node.op == "matmul" else self._plain_conv(node, shape) and axis == 1)
        if not anchor_fits or len(self._users(node.id)) != 1:
            return None
        if any(len(self._users(link.id)) != 1 for link, _ in chain):
            return None
        downstream = self._downstream(node.id)
        for link, position in chain:
            others = [a for i, a in enumerate(link.operands) if i != position]
            if any(isinstance(a, int) and a in downstream for a in others):
                return None  # the anchor's output reaches the sum twice: not linear in it
        return node, chain[::-1]

    def _linear_position(self, node: IRNode, shape: tuple[int, ...], axis: int) -> int | None:
        """Which operand `node` is linear in, for a sum over `axis`, or None."""
        if tuple(node.shape) != shape or node.dtype != torch.float32:
            return None
        refs = [i for i, a in enumerate(node.operands)
                if isinstance(a, int) and tuple(self.nodes[a].shape) == shape
                and self._reaches_anchor(a)]
        if len(refs) != 1:
            return None
        position = refs[0]
        other = node.operands[1 - position] if len(node.operands) == 2 else None
        if node.op == "neg" and len(node.operands) == 1:
            return position
        if node.op in ("add", "sub") and len(node.operands) == 2:
            return position if self._floating(other) else None
        if node.op == "mul" and len(node.operands) == 2:
            return position if self._constant_along(other, axis, len(shape)) else None
        if node.op == "div" and len(node.operands) == 2 and position == 0:
            return position if self._constant_along(other, axis, len(shape)) else None
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

    def _plain_conv(self, conv: IRNode, shape: tuple[int, ...]) -> bool:
        """An ungrouped float32 convolution (transposed or not) whose operands are nodes."""
        if not all(isinstance(a, int) for a in conv.operands) or len(conv.operands) < 2:
            return False
        operands = [self.nodes[i] for i in conv.operands]
        return (conv.attrs.get("groups", 1) == 1 and tuple(conv.shape) == shape
                and all(n.dtype == torch.float32 for n in (*operands, conv)))

    def _rewrite_feature_sum(self, total: IRNode, anchor: IRNode, chain) -> None:
        at = self.order[total.id] - 0.5
        axis = total.attrs["dims"][0]
        width = anchor.shape[axis]
        unit = tuple(1 if d == axis else s for d, s in enumerate(anchor.shape))
        if anchor.op == "matmul":
            value = self._matmul_column_sums(anchor, at)
        else:
            value = self._conv_channel_sums(anchor, unit, at)
        rank = len(anchor.shape)
        total.operands[0] = self._through_chain(
            chain, value, unit, at,
            lambda _, term: self._summed_term(term, axis, rank, width, at))
        total.attrs["in_shape"] = unit  # a sum over a unit dim now: the fold removes it

    def _matmul_column_sums(self, matmul: IRNode, at: float) -> int:
        """sum_j (A @ B)[..., j] as sum_k A[..., k] * (sum_j B[k, j]), keeping the dim."""
        a, b = (self.nodes[i] for i in matmul.operands)
        weight = self.nodes[b.operands[0]] if b.op == "transpose" else None
        if weight is not None and len(weight.shape) == 2 and len(self._users(b.id)) == 1:
            # x @ W.T: W's rows are the output columns, so its sum over dim 0
            column_sums = self._reduce(weight, (0,), False, at, column_sums=True)
        else:
            column_sums = self._reduce(b, (1,), False, at, column_sums=True)
        product = self._add("mul", [a.id, column_sums], a.shape, torch.float32, at)
        return self._reduce(self.nodes[product], (len(a.shape) - 1,), True, at)

    def _conv_channel_sums(self, conv: IRNode, unit: tuple[int, ...], at: float) -> int:
        """The channels' sum of a convolution: one output channel whose filter is the sum
        of all filters (a transposed conv's weight holds them in dim 1), bias summed too."""
        x, weight, *bias = (self.nodes[i] for i in conv.operands)
        out_dim = 1 if conv.attrs.get("transposed") else 0
        operands = [x.id, self._reduce(weight, (out_dim,), True, at, column_sums=True)]
        operands += [self._reduce(b, (0,), True, at) for b in bias]
        return self._add("conv", operands, unit, torch.float32, at, **conv.attrs)

    def _through_chain(self, chain, value: int, shape, at: float, term_for) -> int:
        """The chain's links again over `value` (of `shape`): an addition's or subtraction's
        other term becomes `term_for(link index, term)`."""
        for i, (link, position) in enumerate(chain):
            operands = list(link.operands)
            operands[position] = value
            if link.op in ("add", "sub"):
                operands[1 - position] = term_for(i, operands[1 - position])
            value = self._add(link.op, operands, shape, torch.float32, at, **link.attrs)
        return value

    def _summed_term(self, term, axis: int, rank: int, width: int, at: float):
        """An added term's sum over `axis` (where it broadcast, `width` times itself)."""
        if isinstance(term, Const):
            return Const(term.value * width)
        node = self.nodes[term]
        dim = axis - (rank - len(node.shape))
        if dim < 0 or node.shape[dim] == 1:
            return self._add("mul", [term, Const(float(width))], node.shape, node.dtype, at)
        return self._reduce(node, (dim,), True, at)

    # -- a GEMM's output columns averaged in windows that tile them ----------------------

    def _pooled_gemm(self, pool: IRNode):
        """(anchor, chain) when `pool` averages a float32 GEMM's output columns (through
        `x.unsqueeze(-2)`) in windows that tile them."""
        attrs = pool.attrs
        kernel = tuple(attrs.get("kernel", ()))
        if attrs.get("mode") != "avg" or len(kernel) != 1 or kernel[0] < 2:
            return None
        if (tuple(attrs.get("stride", ())) != kernel or any(attrs.get("padding", (0,)))
                or any(d != 1 for d in attrs.get("dilation", (1,)))
                or attrs.get("ceil_mode") or attrs.get("divisor")):
            return None
        if not isinstance(pool.operands[0], int):
            return None
        source = self.nodes[pool.operands[0]]
        if source.op == "reshape" and len(self._users(source.id)) == 1:
            # x.unsqueeze(1): the pool's one channel (an input of [C, L] is pooled as is)
            view, source = source, self.nodes[source.operands[0]]
            if tuple(view.shape) != tuple(source.shape[:-1]) + (1, source.shape[-1]):
                return None
        shape = tuple(source.shape)
        if len(shape) != 2 or shape[-1] < kernel[0]:
            return None
        found = self._linear_chain(source, len(shape) - 1)
        return found if found is not None and found[0].op == "matmul" else None

    def _rewrite_pooled_gemm(self, pool: IRNode, anchor: IRNode, chain) -> None:
        at = self.order[pool.id] - 0.5
        k = pool.attrs["kernel"][0]
        axis = len(anchor.shape) - 1
        groups = anchor.shape[axis] // k
        grouped = tuple(anchor.shape[:-1]) + (groups,)
        # the added terms' window sums first, so the GEMM's epilogue can take the adds
        terms = [self._window_sums(link.operands[1 - position], k, groups, at)
                 if link.op in ("add", "sub") else None for link, position in chain]
        value = self._through_chain(chain, self._grouped_matmul(anchor, k, groups, grouped, at),
                                    grouped, at, lambda i, _: terms[i])
        mean = self._add("div", [value, Const(float(k))], grouped, torch.float32, at)
        if tuple(pool.shape) != grouped:
            mean = self._add("reshape", [mean], pool.shape, torch.float32, at)
        self._replace_uses(pool.id, mean)

    def _grouped_matmul(self, matmul: IRNode, k: int, groups: int, shape, at: float) -> int:
        """A @ B' where B' sums each window of k of B's columns (A @ W.T: W's rows)."""
        a, b = (self.nodes[i] for i in matmul.operands)
        weight = self.nodes[b.operands[0]] if b.op == "transpose" else None
        if weight is not None and len(weight.shape) == 2 and len(self._users(b.id)) == 1:
            rows = self._window_sums(weight.id, k, groups, at, dim=0, column_sums=True)
            summed = self._add("transpose", [rows], (weight.shape[1], groups),
                               torch.float32, at)
        else:
            summed = self._window_sums(b.id, k, groups, at, dim=1, column_sums=True)
        return self._add("matmul", [a.id, summed], shape, torch.float32, at)

    def _window_sums(self, term, k: int, groups: int, at: float, dim: int | None = None,
                     **marks):
        """`term` summed over each window of k along `dim` (by default its last, which
        broadcasts along the GEMM's columns): a term constant there is k times itself."""
        if isinstance(term, Const):
            return Const(term.value * k)
        node = self.nodes[term]
        if dim is None:
            if not node.shape or node.shape[-1] == 1:
                return self._add("mul", [term, Const(float(k))], node.shape, node.dtype, at)
            dim = len(node.shape) - 1
        shape = list(node.shape)
        if shape[dim] != groups * k:  # a floor-mode pool drops the last partial window
            shape[dim] = groups * k
            term = self._add("slice", [term], shape, node.dtype, at, dim=dim, start=0, step=1)
        split = tuple(shape[:dim]) + (groups, k) + tuple(shape[dim + 1:])
        windows = self._add("reshape", [term], split, node.dtype, at)
        return self._reduce(self.nodes[windows], (dim + 1,), False, at, **marks)

    # -- graph helpers -----------------------------------------------------------------

    def _floating(self, operand) -> bool:
        return isinstance(operand, Const) or (
            isinstance(operand, int) and self.nodes[operand].dtype == torch.float32)

    def _constant_along(self, operand, axis: int, rank: int) -> bool:
        """A factor the same at every index of `axis` (broadcast right-aligned)."""
        if isinstance(operand, Const):
            return True
        node = self.nodes[operand] if isinstance(operand, int) else None
        if node is None or node.dtype != torch.float32:
            return False
        dim = axis - (rank - len(node.shape))
        return dim < 0 or node.shape[dim] == 1

    def _reaches_anchor(self, node_id: int) -> bool:
        """Whether a GEMM or convolution is among `node_id`'s inputs (or is it)."""
        if self._below_anchor is None:
            below = set()
            for node in self._in_order():
                if node.op in ANCHORS or any(r in below for r in node.refs()):
                    below.add(node.id)
            self._below_anchor = below
        return node_id in self._below_anchor

    def _downstream(self, node_id: int) -> set[int]:
        """The nodes that read `node_id`, directly or not."""
        seen, stack = set(), [node_id]
        while stack:
            for user in self._users(stack.pop()):
                if user >= 0 and user not in seen:
                    seen.add(user)
                    stack.append(user)
        return seen

    def _users(self, node_id: int) -> list[int]:
        if self._users_of is None:
            self._users_of = users(self.nodes)
        return self._users_of[node_id] + ([-1] if node_id == self.output else [])

    def _own(self) -> None:
        """Copies of the nodes, before the first change: the caller's graph stays as it was."""
        if not self.owned:
            self.nodes = {i: copy.deepcopy(n) for i, n in self.nodes.items()}
            self.owned = True

    def _changed(self) -> None:
        self._users_of = self._below_anchor = None

    def _in_order(self) -> list[IRNode]:
        return [self.nodes[i] for i in sorted(self.nodes, key=self.order.__getitem__)]

    def _add(self, op, operands, shape, dtype, at: float, **attrs) -> int:
        self._changed()
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
        self._changed()
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
        self._changed()

    def result(self) -> tuple[dict[int, IRNode], int]:
        return self.nodes, self.output
