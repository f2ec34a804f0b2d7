"""Index and layout ops of the lowering (`lowering.py`): static indexing (``x[...]``),
reshapes, ``select``, ``cat``, ``tril``/``triu``, ``diag`` and two-operand ``einsum`` (as a
batched matmul between permutes and reshapes), all as IR index ops the staged kernels
inline where they read them."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.analysis import Const, _int, _Uncovered
from search_engine.synthesis.offline.lowering_args import node_arg


def getitem(tr, fx_node):
    """`x[...]` with ints, slices, None and Ellipsis (static indexing)."""
    base = tr.env.get(fx_node.args[0].name)
    if not isinstance(base, int):
        raise _Uncovered("getitem (indexing)")
    index = fx_node.args[1]
    index = index if isinstance(index, tuple) else (index,)
    if any(hasattr(i, "op") for i in index):
        raise _Uncovered("getitem (tensor indexing)")
    out, dim = base, 0
    rank = len(tr.shape(base))
    explicit = sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is Ellipsis:
            dim += rank - explicit
        elif item is None:
            shp = list(tr.shape(out))
            shp.insert(dim, 1)
            out = reshape(tr, out, tuple(shp))
            dim += 1
        elif isinstance(item, int):
            out = select(tr, out, dim, item)
        elif isinstance(item, slice):
            size = tr.shape(out)[dim]
            start, stop, step = item.indices(size)
            if step < 1:
                raise _Uncovered("getitem (negative step)")
            length = max(0, (stop - start + step - 1) // step)
            shp = list(tr.shape(out))
            shp[dim] = length
            if (start, step, length) != (0, 1, size):
                out = tr.add("slice", [out], tuple(shp), dim=dim, start=start, step=step)
            dim += 1
        else:
            raise _Uncovered("getitem (indexing)")
    return out


def reshape(tr, x, shape):
    if not isinstance(x, int):
        raise _Uncovered("reshape of a non-tensor")
    if tuple(tr.shape(x)) == tuple(shape):
        return x
    return tr.add("reshape", [x], shape)


def select(tr, x, dim, index):
    shp = list(tr.shape(x))
    dim %= len(shp)
    index %= shp[dim]
    kept = shp[:dim] + [1] + shp[dim + 1:]
    sliced = tr.add("slice", [x], tuple(kept), dim=dim, start=index, step=1)
    return reshape(tr, sliced, tuple(shp[:dim] + shp[dim + 1:]))


def cat(tr, fx_node, shape):
    parts = [tr.value(p) for p in fx_node.args[0]]
    dim = int(_int(node_arg(fx_node, 1, "dim", 0))) % len(shape)
    if not all(isinstance(p, int) for p in parts) or len(parts) > 8:
        raise _Uncovered("cat")
    return tr.add("cat", parts, shape, dim=dim)


def triangle(tr, x, name, diagonal):
    shape = tr.shape(x)
    rows = tr.add("iota", [], shape[-2:], dim=0)
    cols = tr.add("iota", [], shape[-2:], dim=1)
    offset = tr.binary("sub", cols, rows, shape[-2:])
    keep = tr.add("le" if name == "tril" else "ge", [offset, Const(float(diagonal))],
                  shape[-2:])
    return tr.add("where", [keep, x, Const(0.0)], shape)


def diag(tr, v):
    n = tr.shape(v)[0]
    rows = tr.add("iota", [], (n, n), dim=0)
    cols = tr.add("iota", [], (n, n), dim=1)
    on = tr.add("eq", [rows, cols], (n, n))
    column = reshape(tr, v, (n, 1))
    return tr.add("where", [on, column, Const(0.0)], (n, n))


def einsum(tr, fx_node):
    """Two-operand einsum (no repeated index in one operand) as a batched matmul."""
    equation = fx_node.args[0]
    operands = fx_node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    if not isinstance(equation, str) or len(operands) != 2 or "..." in equation:
        raise _Uncovered("einsum (other than two operands)")
    lhs, out = equation.replace(" ", "").split("->")
    sa, sb = lhs.split(",")
    a, b = (tr.value(o) for o in operands)
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        raise _Uncovered("einsum (repeated index)")
    size = dict(zip(sa, tr.shape(a))) | dict(zip(sb, tr.shape(b)))
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in out if c in sa and c not in sb]
    right = [c for c in out if c in sb and c not in sa]
    contract = [c for c in sa if c in sb and c not in out]
    if any(c not in out and c not in contract for c in sa + sb):
        raise _Uncovered("einsum (summed index in one operand)")
    prod = math.prod
    ga = _permute_to(tr, a, sa, batch + left + contract)
    ga = reshape(tr, ga, (prod(size[c] for c in batch), prod(size[c] for c in left),
                          prod(size[c] for c in contract)))
    gb = _permute_to(tr, b, sb, batch + contract + right)
    gb = reshape(tr, gb, (prod(size[c] for c in batch), prod(size[c] for c in contract),
                          prod(size[c] for c in right)))
    mm_shape = (tr.shape(ga)[0], tr.shape(ga)[1], tr.shape(gb)[2])
    mm = tr.add("matmul", [ga, gb], mm_shape)
    order = batch + left + right
    flat = reshape(tr, mm, tuple(size[c] for c in order))
    return _permute_to(tr, flat, "".join(order), list(out))


def _permute_to(tr, x, have: str, want: list[str]):
    perm = tuple(have.index(c) for c in want)
    if perm == tuple(range(len(perm))):
        return x
    shape = tuple(tr.shape(x)[p] for p in perm)
    return tr.add("permute", [x], shape, perm=perm)
