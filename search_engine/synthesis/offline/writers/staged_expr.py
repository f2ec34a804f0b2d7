"""Expressions of the staged family (`staged.py`): `Expr` turns an IR node at a multi-index
into Triton code inside one kernel's body — loads of stored nodes and leaves with their own
strides, index ops (reshape, permute, expand, flip, slice, cat) as index arithmetic, and
pointwise ops (comparisons as 0/1, ``where``, rounding) on fp32 values. It sits below the
kernel-writing context (`staged_context.Context`), which holds it."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.ir import LEAVES, Const, IRNode
from search_engine.synthesis.offline.plan.stages import (  # noqa: F401 (re-exported)
    COMPARE, INDEX_OPS, contiguous_strides,
)
from search_engine.synthesis.offline.writers import codegen


class Expr:
    """Triton code for IR nodes at a multi-index, written into one kernel's body.

    `idx` is one code string per dim of the node's shape ("0" where the size is 1), each an
    int64 tensor expression of the kernel's tile; `mask` guards the loads. Values are fp32.
    Stored nodes and leaves are loaded; `subst` maps a node to a variable already computed
    (an anchor's accumulator inside its own stage)."""

    def __init__(self, ctx, body: list[str]):  # ctx: the kernel's staged_context.Context
        self.ctx, self.body = ctx, body
        self.cache: dict[tuple, str] = {}
        self.subst: dict[int, str] = {}
        self.local: set[int] = set()  # stored nodes this kernel computes (not loads)
        self.counter = 0
        # a zero tile of the kernel's shape added to every load's offset, so a load whose
        # indices are all scalars (a channel's bias in a kernel of one row) is still a tile
        self.tile = ""
        # index variables that are scalars of the program (a batched dot's batch indices): a
        # load at those alone is one element, read without the tile's mask
        self.scalar_indices: set[str] = set()
        self.loads: list[tuple[int, tuple[str, ...]]] = []  # (tensor, index) of each load
        # (index, shape) a reshape produced -> the (index, shape) it was reshaped from:
        # reshapes compose over the same row-major order, so a later reshape of that index
        # (back through pointwise ops: a GroupNorm's view and its inverse) maps from the
        # origin, and one back to the origin's shape is the origin's index itself
        self.reshaped: dict[tuple, tuple] = {}

    def var(self, code: str) -> str:
        self.counter += 1
        name = f"e{self.counter}"
        self.body.append(f"{name} = {code}")
        return name

    def value(self, ref, idx: tuple[str, ...], mask: str) -> str:
        if isinstance(ref, Const):
            return codegen.lit(ref.value)
        if ref in self.subst:
            return self.subst[ref]
        key = (ref, tuple(idx), mask)
        if key not in self.cache:
            self.cache[key] = self._compute(self.ctx.nodes[ref], tuple(idx), mask)
        return self.cache[key]

    def offset(self, ref: int, idx: tuple[str, ...]) -> str:
        """The element offset of a stored node or tensor leaf at `idx`."""
        strides = self.ctx.strides(ref)
        terms = [f"({i}) * {s}" for i, s, size in zip(idx, strides, self.ctx.nodes[ref].shape)
                 if size != 1 and i != "0"]
        return " + ".join(terms) or "0"

    def load(self, ref: int, idx, mask) -> str:
        ptr = self.ctx.pointer(ref)
        self.loads.append((ref, tuple(idx)))
        if self.offset(ref, idx) == "0":  # one element, the same for the whole tile
            return self.var(f"tl.load({ptr}).to(tl.float32)")
        used = [i for i, size in zip(idx, self.ctx.nodes[ref].shape) if size != 1 and i != "0"]
        if all(i in self.scalar_indices for i in used):  # one element a program
            return self.var(f"tl.load({ptr} + {self.offset(ref, idx)}).to(tl.float32)")
        offset = self.offset(ref, idx) + (f" + {self.tile}" if self.tile else "")
        return self.var(f"tl.load({ptr} + {offset}, mask={mask}, other=0.0).to(tl.float32)")

    def _compute(self, node: IRNode, idx, mask) -> str:
        ctx = self.ctx
        if node.op == "input" and node.attrs.get("scalar"):
            return ctx.scalar(node.id)
        if node.op in LEAVES or (node.id in ctx.stored and node.id not in self.local):
            return self.load(node.id, idx, mask)
        if node.op in INDEX_OPS:
            return self._index_op(node, idx, mask)
        if node.op == "iota":
            return f"({idx[node.attrs['dim']]}).to(tl.float32)"
        operands = [self.value(r, self._bcast(r, node, idx), mask) if isinstance(r, int)
                    else codegen.lit(r.value) for r in node.operands]
        return self.var(pointwise(node, operands))

    def _materialized(self, ref: int) -> bool:
        return ref in self.subst or (ref in self.ctx.stored and ref not in self.local)

    def _bcast(self, ref: int, node: IRNode, idx) -> tuple[str, ...]:
        shape = self.ctx.nodes[ref].shape
        lead = len(node.shape) - len(shape)
        return tuple("0" if s == 1 else idx[lead + j] for j, s in enumerate(shape))

    def _index_op(self, node: IRNode, idx, mask) -> str:
        nodes = self.ctx.nodes
        src = node.operands[0]
        if node.op == "reshape":  # a reshape of a reshape reads the first one's source
            while nodes[src].op == "reshape" and not self._materialized(src):
                src = nodes[src].operands[0]
        src_shape = nodes[src].shape if isinstance(src, int) else ()
        if node.op == "reshape":
            origin = self.reshaped.get((tuple(idx), tuple(node.shape)),
                                       (tuple(idx), tuple(node.shape)))
            inner = reshape_index(*origin, src_shape)
            self.reshaped.setdefault((inner, tuple(src_shape)), origin)
            return self.value(src, inner, mask)
        if node.op in ("permute", "transpose"):
            rank = len(node.shape)
            perm = node.attrs.get("perm") or tuple(range(rank - 2)) + (rank - 1, rank - 2)
            inner = [""] * rank
            for d, p in enumerate(perm):
                inner[p] = idx[d]
            return self.value(src, tuple(inner), mask)
        if node.op == "expand":
            return self.value(src, self._bcast(src, node, idx), mask)
        if node.op == "flip":
            inner = tuple(f"({s - 1} - ({i}))" if d in node.attrs["dims"] and s != 1 else i
                          for d, (i, s) in enumerate(zip(idx, node.shape)))
            return self.value(src, inner, mask)
        if node.op == "slice":
            d, start, step = node.attrs["dim"], node.attrs["start"], node.attrs["step"]
            inner = list(idx)
            inner[d] = f"({start} + ({idx[d]}) * {step})" if idx[d] != "0" else str(start)
            return self.value(src, tuple(inner), mask)
        if node.op == "unfold":  # window j of position i along dim: source index i*step + j
            d, step = node.attrs["dim"], node.attrs["step"]
            inner = list(idx[:-1])
            window, position = idx[-1], idx[d]
            terms = [f"({position}) * {step}"] if position != "0" else []
            if window != "0":
                terms.append(f"({window})")
            inner[d] = " + ".join(terms) or "0"
            return self.value(src, tuple(inner), mask)
        if node.op == "pad":
            return self._pad(node, idx, mask)
        return self._cat(node, idx, mask)

    def _pad(self, node, idx, mask) -> str:
        """F.pad: each padded dim reads the source at its own index less the left pad, mapped
        into range (reflect, replicate, circular) or masked to `value` (constant)."""
        src = node.operands[0]
        src_shape, mode = self.ctx.nodes[src].shape, node.attrs["mode"]
        inner, inside = list(idx), []
        for d, (left, size) in enumerate(zip(node.attrs["padding"], src_shape)):
            if left == 0 and node.shape[d] == size:
                continue
            j = f"(({idx[d]}) - {left})"
            if mode == "reflect":
                j = f"({size - 1} - tl.abs({size - 1} - tl.abs{j}))"
            elif mode == "replicate":
                j = f"tl.minimum(tl.maximum({j}, 0), {size - 1})"
            elif mode == "circular":
                j = f"(({j} + {size}) % {size})"
            else:
                inside.append(f"({j} >= 0) & ({j} < {size})")
            inner[d] = "0" if size == 1 and mode != "constant" else j
        if not inside:
            return self.value(src, tuple(inner), mask)
        within = " & ".join(inside)
        value = self.value(src, tuple(inner), f"({mask}) & {within}")
        return self.var(f"tl.where({within}, {value}, {codegen.lit(node.attrs['value'])})")

    def _cat(self, node, idx, mask) -> str:
        d = node.attrs["dim"]
        out, start = None, 0
        parts = []
        for ref in node.refs():
            size = self.ctx.nodes[ref].shape[d]
            inner = list(idx)
            inner[d] = f"({idx[d]} - {start})"
            inside = f"(({idx[d]}) >= {start}) & (({idx[d]}) < {start + size})"
            parts.append((inside, self.value(ref, tuple(inner), f"({mask}) & {inside}")))
            start += size
        for inside, value in reversed(parts):
            out = value if out is None else f"tl.where({inside}, {value}, {out})"
        return self.var(out)


def reshape_index(idx, shape, src_shape) -> tuple[str, ...]:
    """The source index of a reshape, group by group: the smallest runs of dims whose sizes
    multiply to the same count on both sides map to each other alone (a batch dim kept is
    its own index; 64 channels split into 8 groups of 8 read only the channel and spatial
    indices), so no index is rebuilt through the whole row-major flat offset."""
    dst = [(i, s) for i, s in zip(idx, shape) if s != 1]
    src = [d for d, s in enumerate(src_shape) if s != 1]
    out = ["0"] * len(src_shape)
    a = b = 0
    while a < len(dst) and b < len(src):
        a_end, b_end = a + 1, b + 1
        count_a, count_b = dst[a][1], src_shape[src[b]]
        while count_a != count_b:
            if count_a < count_b:
                count_a *= dst[a_end][1]
                a_end += 1
            else:
                count_b *= src_shape[src[b_end]]
                b_end += 1
        for d, index in zip(src[b:b_end],
                            _group_index(dst[a:a_end], [src_shape[d] for d in src[b:b_end]])):
            out[d] = index
        a, b = a_end, b_end
    return tuple(out)


def _group_index(dst, src_sizes) -> list[str]:
    """The indices of `src_sizes` (row-major) at the element `dst` ((index, size) pairs of
    the same count, row-major) names."""
    if len(dst) == 1 and len(src_sizes) == 1:
        return [dst[0][0]]
    strides = contiguous_strides([s for _, s in dst])
    flat = " + ".join(f"({i}) * {st}" if st != 1 else f"({i})"
                      for (i, _), st in zip(dst, strides) if i != "0") or "0"
    src_strides = contiguous_strides(src_sizes)
    out = []
    for d, (size, st) in enumerate(zip(src_sizes, src_strides)):
        term = f"({flat})" if st == 1 else f"(({flat}) // {st})"
        out.append(term if d == 0 else f"({term} % {size})")  # the first needs no wrap
    return out


def pointwise(node: IRNode, a: list[str]) -> str:
    if node.op in COMPARE:
        return f"tl.where(({a[0]}) {COMPARE[node.op]} ({a[1]}), 1.0, 0.0)"
    if node.op == "where":
        return f"tl.where(({a[0]}) != 0.0, {a[1]}, {a[2]})"
    if node.op == "sign":
        return f"tl.where(({a[0]}) > 0.0, 1.0, tl.where(({a[0]}) < 0.0, -1.0, 0.0))"
    if node.op in ("floor", "ceil", "erf"):
        return f"tl.math.{node.op}({a[0]})" if node.op != "erf" else f"tl.erf({a[0]})"
    if node.op == "trunc":
        return f"tl.where(({a[0]}) >= 0.0, tl.math.floor({a[0]}), tl.math.ceil({a[0]}))"
    if node.op == "round":  # half to even, as torch.round
        up = f"tl.math.floor(({a[0]}) + 0.5)"
        tie = f"((({a[0]}) + 0.5) == {up}) & (({up} % 2.0) != 0.0)"
        return f"({up} - tl.where({tie}, 1.0, 0.0))"
    return codegen.pointwise(node, a)
