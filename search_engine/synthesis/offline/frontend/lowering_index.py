"""Index and layout ops of the lowering (`lowering.py`): static indexing (``x[...]``),
reshapes, ``select``, ``cat``, ``tril``/``triu``, ``diag`` and ``einsum`` (pairwise batched
matmuls between permutes and reshapes), all as IR index ops the staged kernels
inline where they read them."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.builder import _int, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_args import node_arg


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
    """einsum without repeated indices in one term (any number of operands; an implicit
    output keeps the indices seen once, sorted, as torch does)."""
    equation = fx_node.args[0]
    operands = fx_node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    if not isinstance(equation, str) or "..." in equation:
        raise _Uncovered("einsum (ellipsis)")
    equation = equation.replace(" ", "")
    lhs, out = equation.split("->") if "->" in equation else (equation, None)
    subs = lhs.split(",")
    if out is None:
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    values = [tr.value(o) for o in operands]
    if len(subs) != len(values) or not all(isinstance(v, int) for v in values):
        raise _Uncovered("einsum (operands)")
    return contract(tr, values, subs, out)


def contract(tr, values, subs, out: str):
    """The einsum ``subs -> out`` of `values`: indices only one term has are summed first,
    then the terms are contracted pairwise as batched matmuls."""
    if any(len(set(t)) != len(t) for t in subs + [out]):
        raise _Uncovered("einsum (repeated index)")
    terms = list(zip(values, subs))
    for k, (x, sub) in enumerate(terms):
        keep = set(out) | {c for j, (_, other) in enumerate(terms) if j != k for c in other}
        terms[k] = _sum_indices(tr, x, sub, keep)
    while len(terms) > 1:
        (a, sa), (b, sb), rest = terms[0], terms[1], terms[2:]
        needed = set(out) | {c for _, sub in rest for c in sub}
        pair_out = "".join(dict.fromkeys(c for c in sa + sb if c in needed))
        terms = [(_contract_pair(tr, a, sa, b, sb, pair_out), pair_out)] + rest
    x, sub = terms[0]
    return _permute_to(tr, x, sub, list(out))


def _sum_indices(tr, x, sub: str, keep: set) -> tuple[int, str]:
    dims = tuple(d for d, c in enumerate(sub) if c not in keep)
    if not dims:
        return x, sub
    return tr.reduce("sum", x, dims, False), "".join(c for c in sub if c in keep)


def _contract_pair(tr, a, sa: str, b, sb: str, out: str):
    """Two terms as one batched matmul between permutes and reshapes (every index of a term
    is in the other term or in `out`)."""
    size = dict(zip(sa, tr.shape(a))) | dict(zip(sb, tr.shape(b)))
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in out if c in sa and c not in sb]
    right = [c for c in out if c in sb and c not in sa]
    contract_ = [c for c in sa if c in sb and c not in out]
    prod = math.prod
    ga = _permute_to(tr, a, sa, batch + left + contract_)
    ga = reshape(tr, ga, (prod(size[c] for c in batch), prod(size[c] for c in left),
                          prod(size[c] for c in contract_)))
    gb = _permute_to(tr, b, sb, batch + contract_ + right)
    gb = reshape(tr, gb, (prod(size[c] for c in batch), prod(size[c] for c in contract_),
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


def matmul(tr, a, b):
    """``a @ b`` with torch's rules for 1-D operands: a vector is a one-row (left) or
    one-column (right) matrix whose unit dim the result drops (mv, dot, vector @ matrix)."""
    if not (isinstance(a, int) and isinstance(b, int)):
        raise _Uncovered("matmul of a non-tensor")
    sa, sb = tuple(tr.shape(a)), tuple(tr.shape(b))
    a2 = reshape(tr, a, (1,) + sa) if len(sa) == 1 else a
    b2 = reshape(tr, b, sb + (1,)) if len(sb) == 1 else b
    sa2, sb2 = tr.shape(a2), tr.shape(b2)
    batch = _broadcast(sa2[:-2], sb2[:-2])
    mm = tr.add("matmul", [a2, b2], batch + (sa2[-2], sb2[-1]))
    out = batch + (() if len(sa) == 1 else (sa2[-2],)) + (() if len(sb) == 1 else (sb2[-1],))
    return reshape(tr, mm, out)


def _broadcast(x: tuple, y: tuple) -> tuple:
    rank = max(len(x), len(y))
    x, y = (1,) * (rank - len(x)) + x, (1,) * (rank - len(y)) + y
    return tuple(max(p, q) for p, q in zip(x, y))


def outer(tr, a, b):
    return matmul(tr, reshape(tr, a, tuple(tr.shape(a)) + (1,)),
                  reshape(tr, b, (1,) + tuple(tr.shape(b))))


def add_matmul(tr, c, a, b, beta, alpha, summed_batch=False):
    """addmm / addmv / baddbmm / addbmm: ``beta * c + alpha * (a @ b)`` (c is ignored when
    beta is 0, as torch does); addbmm sums the batch of products."""
    product = matmul(tr, a, b)
    if summed_batch:
        product = tr.reduce("sum", product, (0,), False)
    shape = tr.shape(product)
    if alpha != 1.0:
        product = tr.binary("mul", product, Const(alpha), shape)
    if beta == 0.0:
        return product
    if beta != 1.0:
        c = tr.binary("mul", c, Const(beta), tr.shape(c))
    return tr.binary("add", product, c, shape)


def bilinear(tr, x1, x2, weight, bias):
    """nn.Bilinear: ``y[..., a] = x1[..., n] W[a, n, m] x2[..., m] + b[a]``."""
    if not all(isinstance(t, int) for t in (x1, x2, weight)):
        raise _Uncovered("bilinear of a non-tensor")
    lead = "".join(chr(ord("p") + d) for d in range(len(tr.shape(x1)) - 1))
    y = contract(tr, [x1, weight, x2], [lead + "n", "anm", lead + "m"], lead + "a")
    return tr.binary("add", y, bias, tr.shape(y)) if isinstance(bias, int) else y


def multihead_attention(tr, fx_node, sub, path: str):
    """nn.MultiheadAttention without masks (eval, so no dropout): the packed q/k/v
    projections, heads split as (batch, heads, length, head_dim) views, one attention node,
    the heads merged and the output projection; (output, None) as the module's pair."""
    def arg(pos, key):
        return fx_node.args[pos] if len(fx_node.args) > pos else fx_node.kwargs.get(key)

    if any(arg(pos, key) not in (None, False) for pos, key in (
            (3, "key_padding_mask"), (5, "attn_mask"), (7, "is_causal"))) or \
            not sub._qkv_same_embed_dim or sub.bias_k is not None or sub.add_zero_attn:
        raise _Uncovered("MultiheadAttention (masks, kdim/vdim or bias_k)")
    query, key, value = (tr.value(arg(i, k)) for i, k in ((0, "query"), (1, "key"),
                                                           (2, "value")))
    return (attention_block(tr, sub, path, query, key, value), None)


def linear(tr, x, weight, bias):
    """x @ weight.T (+ bias): an nn.Linear on IR values."""
    y = matmul(tr, x, tr.add("transpose", [weight], tuple(reversed(tr.shape(weight)))))
    return tr.binary("add", y, bias, tr.shape(y)) if bias is not None else y


def attention_block(tr, sub, path: str, query, key, value):
    """nn.MultiheadAttention's output (no masks) for IR values query, key and value."""
    if any(not isinstance(t, int) or len(tr.shape(t)) != 3 for t in (query, key, value)):
        raise _Uncovered("MultiheadAttention (unbatched input)")
    embed, heads = sub.embed_dim, sub.num_heads
    weight = tr.param(f"{path}.in_proj_weight", sub.in_proj_weight)
    bias = tr.param(f"{path}.in_proj_bias", sub.in_proj_bias) \
        if sub.in_proj_bias is not None else None
    layout = "ble" if sub.batch_first else "lbe"

    def heads_of(x, part: int):
        rows = tr.add("slice", [weight], (embed, embed), dim=0, start=part * embed, step=1)
        b = None if bias is None else \
            tr.add("slice", [bias], (embed,), dim=0, start=part * embed, step=1)
        y = _permute_to(tr, linear(tr, x, rows, b), layout, list("ble"))
        batch, length, _ = tr.shape(y)
        y = reshape(tr, y, (batch, length, heads, embed // heads))
        return _permute_to(tr, y, "blhd", list("bhld"))

    q, k, v = heads_of(query, 0), heads_of(key, 1), heads_of(value, 2)
    batch, _, length, head_dim = tr.shape(q)
    att = tr.add("attention", [q, k, v], (batch, heads, length, head_dim),
                 scale=1.0 / math.sqrt(head_dim), causal=False)
    merged = reshape(tr, _permute_to(tr, att, "bhld", list("blhd")), (batch, length, embed))
    out = linear(tr, _permute_to(tr, merged, "ble", list(layout)),
                 tr.param(f"{path}.out_proj.weight", sub.out_proj.weight),
                 tr.param(f"{path}.out_proj.bias", sub.out_proj.bias)
                 if sub.out_proj.bias is not None else None)
    return out
