"""Lower the reference's ops beyond the first three families into the IR (`analysis.py`).

Called by the tracer (`analysis._Translator`) for every function, method or module it does not
translate itself. Composite ops become primitives the staged family knows:

- anchors with their own kernels: ``conv`` (1-D/2-D/3-D, stride, padding, dilation, groups,
  transposed), ``pool`` (max/avg), ``scan`` (cumsum/cumprod), ``matmul`` (any batch),
  ``attention`` (scaled dot-product), reductions (plus ``prod``);
- index ops inlined into the kernels that read them: ``reshape``, ``permute``, ``expand``,
  ``flip``, ``slice``, ``cat``, ``iota``;
- pointwise ``where`` and comparisons (as 0/1 values);
- norms (BatchNorm with running or batch statistics as the module uses them, GroupNorm,
  InstanceNorm), ``logsumexp``, losses (cross-entropy, KL, Huber/smooth-L1, MSE, L1,
  triplet margin, cosine similarity) and two-operand ``einsum`` as the primitives above.

This module runs in the sandbox only (the tracer runs the problem's code); what it builds is
re-checked by `analysis.analysis_from_json` in the caller's process.
"""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.analysis import Const, _dims, _int, _norm_dims, _Uncovered

COMPARISONS = {"gt": "gt", "lt": "lt", "ge": "ge", "le": "le", "eq": "eq", "ne": "ne",
               "__gt__": "gt", "__lt__": "lt", "__ge__": "ge", "__le__": "le",
               "__eq__": "eq", "__ne__": "ne", "greater": "gt", "less": "lt"}
RESHAPES = ("reshape", "view", "flatten", "unsqueeze", "squeeze", "view_as", "reshape_as")


def _ints(value, rank: int) -> tuple[int, ...]:
    value = _int(value)
    if isinstance(value, (list, tuple)):
        out = tuple(int(_int(v)) for v in value)
        return out if len(out) == rank else out * rank if len(out) == 1 else out
    return (int(value),) * rank


def _node_arg(fx_node, pos, name, default=None):
    if len(fx_node.args) > pos:
        return fx_node.args[pos]
    return fx_node.kwargs.get(name, default)


# -- functions and methods ------------------------------------------------------------------

def function(tr, fx_node, name, args, get, shape):
    x = args[0] if args else tr.value(fx_node.kwargs.get("input"))
    if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] in ("T", "mT"):
        rank = len(tr.shape(x))
        if fx_node.args[1] == "T" and rank != 2:
            raise _Uncovered("getattr (.T of a tensor that is not 2-D)")
        return tr.add("transpose", [x], shape)
    if name == "getattr" and fx_node.args[1] in ("values", "indices") and isinstance(x, tuple):
        return x[0 if fx_node.args[1] == "values" else 1]
    if name in COMPARISONS:
        return tr.add(COMPARISONS[name], [args[0], args[1]], shape)
    if name in RESHAPES:
        return reshape(tr, x, shape)
    if name in ("permute",):
        return tr.transpose(fx_node, name, x, shape)
    if name in ("expand", "expand_as", "broadcast_to"):
        return tr.add("expand", [x], shape)
    if name in ("where",):
        return tr.add("where", [args[0], args[1], args[2]], shape)
    if name == "masked_fill":
        return tr.add("where", [args[1], get(2, "value"), x], shape)
    if name in ("flip",):
        dims = _norm_dims(_dims(get(1, "dims")), len(tr.shape(x)))
        return tr.add("flip", [x], shape, dims=dims)
    if name in ("cumsum", "cumprod"):
        dim = int(_int(get(1, "dim"))) % len(tr.shape(x))
        return tr.add("scan", [x], shape, mode=name[3:], dim=dim)
    if name == "prod":
        return tr.reduce("prod", x, _norm_dims(_dims(get(1, "dim")), len(tr.shape(x))),
                         bool(get(2, "keepdim", False)))
    if name == "logsumexp":
        return logsumexp(tr, x, get(1, "dim"), bool(get(2, "keepdim", False)))
    if name in ("tril", "triu"):
        return triangle(tr, x, name, int(_int(get(1, "diagonal", 0) or 0)))
    if name in ("diag", "diag_embed") and len(tr.shape(x)) == 1:
        return diag(tr, x)
    if name in ("zeros_like", "ones_like"):
        return tr.add("mul", [tr.add("iota", [], shape, dim=0), Const(0.0)], shape) \
            if name == "zeros_like" else tr.add("add", [tr.add("mul", [tr.add(
                "iota", [], shape, dim=0), Const(0.0)], shape), Const(1.0)], shape)
    if name == "cat" or name == "concat":
        return cat(tr, fx_node, shape)
    if name == "select":
        return select(tr, x, int(_int(get(1, "dim"))), int(_int(get(2, "index"))))
    if name == "narrow":
        dim, start, length = (int(_int(get(i, k))) for i, k in ((1, "dim"), (2, "start"),
                                                               (3, "length")))
        return tr.add("slice", [x], shape, dim=dim % len(tr.shape(x)), start=start, step=1)
    if name == "einsum":
        return einsum(tr, fx_node)
    if name in ("sign", "floor", "ceil", "round", "trunc", "erf"):
        return tr.add(name, [x], shape)
    if name == "softsign":
        return tr.add("div", [x, tr.add("add", [tr.unary("abs", x), Const(1.0)],
                                        tr.shape(x))], shape)
    if name == "scaled_dot_product_attention":
        return attention(tr, fx_node, args, get, shape)
    if name.startswith("conv"):
        return conv_function(tr, fx_node, name, args, get, shape)
    if "pool" in name:
        return pool_function(tr, fx_node, name, x, get, shape)
    if name in NORM_FUNCTIONS:
        return NORM_FUNCTIONS[name](tr, fx_node, x, get, shape)
    if name in LOSS_FUNCTIONS:
        return LOSS_FUNCTIONS[name](tr, fx_node, args, get)
    if name == "pairwise_distance":
        return distance(tr, args[0], args[1], _float(get(2, "p", 2.0)), _float(get(3, "eps",
                                                                                  1e-6)))
    if name == "cosine_similarity":
        return cosine(tr, args[0], args[1], int(_int(get(2, "dim", 1))),
                      _float(get(3, "eps", 1e-8)))
    raise _Uncovered(name)


def _float(value) -> float:
    return float(value.value if isinstance(value, Const) else value)


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
    dim = int(_int(_node_arg(fx_node, 1, "dim", 0))) % len(shape)
    if not all(isinstance(p, int) for p in parts) or len(parts) > 8:
        raise _Uncovered("cat")
    return tr.add("cat", parts, shape, dim=dim)


def logsumexp(tr, x, dim, keepdim):
    in_shape = tr.shape(x)
    dims = _norm_dims(_dims(dim), len(in_shape))
    peak = tr.reduce("max", x, dims, True)
    total = tr.reduce("sum", tr.unary("exp", tr.binary("sub", x, peak, in_shape)), dims, True)
    out = tr.binary("add", tr.unary("log", total), peak, tr.shape(peak))
    if not keepdim:
        out = reshape(tr, out, tuple(s for d, s in enumerate(in_shape) if d not in dims))
    return out


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


def attention(tr, fx_node, args, get, shape):
    q, k, v = args[0], args[1], args[2]
    if get(3, "attn_mask") is not None or _float(get(4, "dropout_p", 0.0) or 0.0) != 0.0:
        raise _Uncovered("scaled_dot_product_attention (mask or dropout)")
    scale = get(6, "scale")
    head = tr.shape(q)[-1]
    scale = 1.0 / math.sqrt(head) if scale is None else _float(scale)
    causal = bool(_int(get(5, "is_causal", False)))
    return tr.add("attention", [q, k, v], shape, scale=scale, causal=causal)


# -- convolutions and pooling ---------------------------------------------------------------

def conv_node(tr, x, weight, bias, nd, stride, padding, dilation, groups, transposed,
              output_padding, shape):
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        else:
            raise _Uncovered(f"conv padding={padding!r}")
    operands = [x, weight] + ([bias] if isinstance(bias, int) else [])
    return tr.add("conv", operands, shape, stride=_ints(stride, nd), padding=_ints(padding, nd),
                  dilation=_ints(dilation, nd), output_padding=_ints(output_padding, nd),
                  groups=int(groups), transposed=bool(transposed))


def conv_function(tr, fx_node, name, args, get, shape):
    nd = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv_transpose1d": 1, "conv_transpose2d": 2,
          "conv_transpose3d": 3}.get(name)
    if nd is None:
        raise _Uncovered(name)
    x, weight, bias = args[0], get(1, "weight"), get(2, "bias")
    if name.startswith("conv_transpose"):
        return conv_node(tr, x, weight, bias, nd, get(3, "stride", 1), get(4, "padding", 0),
                         get(7, "dilation", 1), _int(get(6, "groups", 1)), True,
                         get(5, "output_padding", 0), shape)
    return conv_node(tr, x, weight, bias, nd, get(3, "stride", 1), get(4, "padding", 0),
                     get(5, "dilation", 1), _int(get(6, "groups", 1)), False, 0, shape)


def pool_node(tr, x, mode, nd, kernel, stride, padding, dilation, ceil_mode,
              count_include_pad, divisor, shape):
    stride = kernel if stride is None or stride == [] or stride == () else stride
    return tr.add("pool", [x], shape, mode=mode, kernel=_ints(kernel, nd),
                  stride=_ints(stride, nd), padding=_ints(padding, nd),
                  dilation=_ints(dilation, nd), ceil_mode=bool(ceil_mode),
                  count_include_pad=bool(count_include_pad),
                  divisor=None if divisor is None else float(_int(divisor)))


def adaptive_pool(tr, x, mode, nd, output_size, shape):
    in_shape = tr.shape(x)
    spatial = in_shape[-nd:]
    out = _ints(output_size, nd)
    out = tuple(s if o is None else o for o, s in zip(out, spatial))
    if any(s % o for s, o in zip(spatial, out)):
        raise _Uncovered(f"adaptive_{mode}_pool (input not a multiple of the output)")
    kernel = tuple(s // o for s, o in zip(spatial, out))
    if all(o == 1 for o in out):  # global pooling is a reduction
        dims = tuple(range(len(in_shape) - nd, len(in_shape)))
        if mode == "avg":
            return tr.mean(x, dims, True)
        return tr.reduce("max", x, dims, True)
    return pool_node(tr, x, mode, nd, kernel, kernel, 0, 1, False, True, None, shape)


def pool_function(tr, fx_node, name, x, get, shape):
    nd = int(name[-2]) if name[-2:] in ("1d", "2d", "3d") else None
    if nd is None:
        raise _Uncovered(name)
    if name.startswith("adaptive_"):
        if fx_node.kwargs.get("return_indices"):
            raise _Uncovered(f"{name} with indices")
        return adaptive_pool(tr, x, "avg" if "avg" in name else "max", nd,
                             get(1, "output_size"), shape)
    if name.startswith("max_pool"):
        if bool(_int(get(6, "return_indices", False))):
            raise _Uncovered(f"{name} with indices")
        return pool_node(tr, x, "max", nd, get(1, "kernel_size"), get(2, "stride"),
                         get(3, "padding", 0), get(4, "dilation", 1),
                         _int(get(5, "ceil_mode", False)), True, None, shape)
    if name.startswith("avg_pool"):
        return pool_node(tr, x, "avg", nd, get(1, "kernel_size"), get(2, "stride"),
                         get(3, "padding", 0), 1, _int(get(4, "ceil_mode", False)),
                         _int(get(5, "count_include_pad", True)),
                         get(6, "divisor_override") if nd > 1 else None, shape)
    raise _Uncovered(name)


# -- normalizations -------------------------------------------------------------------------

def _channel_view(tr, param, rank):
    """A per-channel (C,) tensor viewed as (C, 1, ...) to broadcast along dim 1."""
    c = tr.shape(param)[0]
    return reshape(tr, param, (c,) + (1,) * (rank - 2))


def normalize(tr, x, dims, eps, weight, bias, mean=None, var=None):
    """(x - mean) / sqrt(var + eps) * weight + bias; statistics over `dims` (biased variance)
    unless given (running statistics)."""
    shape = tr.shape(x)
    rank = len(shape)
    if mean is None:
        mean = tr.mean(x, dims, True)
        centered = tr.binary("sub", x, mean, shape)
        var = tr.mean(tr.unary("square", centered), dims, True)
    else:
        mean, var = _channel_view(tr, mean, rank), _channel_view(tr, var, rank)
        centered = tr.binary("sub", x, mean, shape)
    inv = tr.unary("rsqrt", tr.binary("add", var, Const(float(eps)), tr.shape(var)))
    out = tr.binary("mul", centered, inv, shape)
    if isinstance(weight, int):
        out = tr.binary("mul", out, _channel_view(tr, weight, rank), shape)
    if isinstance(bias, int):
        out = tr.binary("add", out, _channel_view(tr, bias, rank), shape)
    return out


def batch_norm(tr, x, running_mean, running_var, weight, bias, use_batch_stats, eps):
    rank = len(tr.shape(x))
    if use_batch_stats:
        return normalize(tr, x, (0,) + tuple(range(2, rank)), eps, weight, bias)
    return normalize(tr, x, (), eps, weight, bias, running_mean, running_var)


def group_norm(tr, x, groups, weight, bias, eps):
    shape = tr.shape(x)
    n, c = shape[0], shape[1]
    grouped = reshape(tr, x, (n, groups, math.prod(shape[1:]) // groups))
    normed = normalize(tr, grouped, (2,), eps, None, None)
    out = reshape(tr, normed, shape)
    return normalize_affine(tr, out, weight, bias)


def normalize_affine(tr, out, weight, bias):
    shape, rank = tr.shape(out), len(tr.shape(out))
    if isinstance(weight, int):
        out = tr.binary("mul", out, _channel_view(tr, weight, rank), shape)
    if isinstance(bias, int):
        out = tr.binary("add", out, _channel_view(tr, bias, rank), shape)
    return out


def instance_norm(tr, x, weight, bias, eps):
    rank = len(tr.shape(x))
    return normalize(tr, x, tuple(range(2, rank)), eps, weight, bias)


def _f_batch_norm(tr, fx_node, x, get, shape):
    training = bool(_int(get(5, "training", False)))
    return batch_norm(tr, x, get(1, "running_mean"), get(2, "running_var"), get(3, "weight"),
                      get(4, "bias"), training or not isinstance(get(1, "running_mean"), int),
                      _float(get(7, "eps", 1e-5)))


def _f_group_norm(tr, fx_node, x, get, shape):
    return group_norm(tr, x, int(_int(get(1, "num_groups"))), get(2, "weight"), get(3, "bias"),
                      _float(get(4, "eps", 1e-5)))


def _f_instance_norm(tr, fx_node, x, get, shape):
    if isinstance(get(1, "running_mean"), int) and not bool(_int(get(5, "use_input_stats",
                                                                     True))):
        raise _Uncovered("instance_norm with running statistics")
    return instance_norm(tr, x, get(3, "weight"), get(4, "bias"), _float(get(7, "eps", 1e-5)))


NORM_FUNCTIONS = {"batch_norm": _f_batch_norm, "group_norm": _f_group_norm,
                  "instance_norm": _f_instance_norm}


# -- losses ---------------------------------------------------------------------------------

def _reduce_loss(tr, per_element, reduction, batch=None):
    if reduction == "none":
        return per_element
    total = tr.reduce("sum", per_element, None, False)
    if reduction == "sum":
        return total
    count = batch if reduction == "batchmean" else math.prod(tr.shape(per_element))
    return tr.binary("div", total, Const(float(count)), ())


def cross_entropy(tr, logits, target, reduction="mean"):
    shape = tr.shape(logits)
    if len(shape) != 2 or len(tr.shape(target)) != 1:
        raise _Uncovered("cross_entropy (other than (N, C) logits and class indices)")
    log_probs = tr.softmax(logits, 1, log=True)
    classes = tr.add("iota", [], shape, dim=1)
    hit = tr.add("eq", [classes, reshape(tr, target, (shape[0], 1))], shape)
    picked = tr.reduce("sum", tr.binary("mul", log_probs, hit, shape), (1,), False)
    return _reduce_loss(tr, tr.unary("neg", picked), reduction)


def kl_div(tr, inp, target, reduction="mean", log_target=False):
    shape = tr.shape(inp)
    if log_target:
        per = tr.binary("mul", tr.unary("exp", target), tr.binary("sub", target, inp, shape),
                        shape)
    else:  # xlogy(t, t) - t * input, with 0 where t == 0
        positive = tr.add("gt", [target, Const(0.0)], tr.shape(target))
        safe = tr.add("where", [positive, target, Const(1.0)], tr.shape(target))
        per = tr.binary("mul", target, tr.binary("sub", tr.unary("log", safe), inp, shape), shape)
    return _reduce_loss(tr, per, reduction, shape[0] if shape else 1)


def smooth_l1(tr, a, b, reduction, beta, huber=False):
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    diff = tr.unary("abs", tr.binary("sub", a, b, shape))
    small = tr.add("lt", [diff, Const(beta)], shape)
    quad = tr.binary("mul", tr.unary("square", diff), Const(0.5 / beta if not huber else 0.5),
                     shape)
    if huber:
        lin = tr.binary("mul", tr.binary("sub", diff, Const(0.5 * beta), shape), Const(beta),
                        shape)
    else:
        lin = tr.binary("sub", diff, Const(0.5 * beta), shape)
    return _reduce_loss(tr, tr.add("where", [small, quad, lin], shape), reduction)


def pointwise_loss(tr, a, b, reduction, op):
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    diff = tr.binary("sub", a, b, shape)
    return _reduce_loss(tr, tr.unary(op, diff), reduction)


def distance(tr, a, b, p, eps):
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    diff = tr.binary("add", tr.binary("sub", a, b, shape), Const(eps), shape)
    last = len(shape) - 1
    if p == 2.0:
        return tr.unary("sqrt", tr.reduce("sum", tr.unary("square", diff), (last,), False))
    if p == 1.0:
        return tr.reduce("sum", tr.unary("abs", diff), (last,), False)
    raise _Uncovered(f"distance with p={p}")


def triplet(tr, anchor, positive, negative, margin, p, eps, reduction):
    d_pos = distance(tr, anchor, positive, p, eps)
    d_neg = distance(tr, anchor, negative, p, eps)
    shape = tr.shape(d_pos)
    gap = tr.binary("add", tr.binary("sub", d_pos, d_neg, shape), Const(margin), shape)
    return _reduce_loss(tr, tr.unary("clamp", gap, lo=0.0, hi=None), reduction)


def cosine(tr, a, b, dim, eps):
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    dim %= len(shape)
    dot = tr.reduce("sum", tr.binary("mul", a, b, shape), (dim,), False)
    na = tr.reduce("sum", tr.unary("square", a), (dim,), False)
    nb = tr.reduce("sum", tr.unary("square", b), (dim,), False)
    out_shape = tr.shape(dot)
    denom = tr.unary("sqrt", tr.unary("clamp", tr.binary("mul", na, nb, out_shape),
                                      lo=eps * eps, hi=None))
    return tr.binary("div", dot, denom, out_shape)


def _loss_reduction(get, pos, default="mean"):
    value = get(pos, "reduction", default)
    return value if isinstance(value, str) else default


LOSS_FUNCTIONS = {
    "cross_entropy": lambda tr, n, a, get: cross_entropy(tr, a[0], a[1],
                                                         _loss_reduction(get, 5)),
    "kl_div": lambda tr, n, a, get: kl_div(tr, a[0], a[1], _loss_reduction(get, 4),
                                           bool(_int(get(5, "log_target", False)))),
    "smooth_l1_loss": lambda tr, n, a, get: smooth_l1(tr, a[0], a[1], _loss_reduction(get, 4),
                                                      _float(get(5, "beta", 1.0))),
    "huber_loss": lambda tr, n, a, get: smooth_l1(tr, a[0], a[1], _loss_reduction(get, 2),
                                                  _float(get(3, "delta", 1.0)), huber=True),
    "mse_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                     "square"),
    "l1_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                    "abs"),
    "triplet_margin_loss": lambda tr, n, a, get: triplet(
        tr, a[0], a[1], a[2], _float(get(3, "margin", 1.0)), _float(get(4, "p", 2.0)),
        _float(get(5, "eps", 1e-6)), _loss_reduction(get, 9)),
}


# -- modules --------------------------------------------------------------------------------

def module(tr, fx_node, sub, x, shape):
    nn = torch.nn
    path = fx_node.target
    kind = type(sub).__name__

    def param(name):
        tensor = getattr(sub, name, None)
        return tr.param(f"{path}.{name}", tensor) if isinstance(tensor, torch.Tensor) else None

    convs = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.ConvTranspose1d: 1,
             nn.ConvTranspose2d: 2, nn.ConvTranspose3d: 3}
    for cls, nd in convs.items():
        if type(sub) is cls:
            if sub.padding_mode != "zeros":
                raise _Uncovered(f"{kind}(padding_mode={sub.padding_mode})")
            transposed = isinstance(sub, nn.modules.conv._ConvTransposeNd)
            return conv_node(tr, x, param("weight"), param("bias"), nd, sub.stride,
                             sub.padding, sub.dilation, sub.groups, transposed,
                             sub.output_padding if transposed else 0, shape)
    pools = {nn.MaxPool1d: ("max", 1), nn.MaxPool2d: ("max", 2), nn.MaxPool3d: ("max", 3),
             nn.AvgPool1d: ("avg", 1), nn.AvgPool2d: ("avg", 2), nn.AvgPool3d: ("avg", 3)}
    for cls, (mode, nd) in pools.items():
        if type(sub) is cls:
            if getattr(sub, "return_indices", False):
                raise _Uncovered(f"{kind} with indices")
            return pool_node(tr, x, mode, nd, sub.kernel_size, sub.stride, sub.padding,
                             getattr(sub, "dilation", 1), sub.ceil_mode,
                             getattr(sub, "count_include_pad", True),
                             getattr(sub, "divisor_override", None), shape)
    adaptive = {nn.AdaptiveAvgPool1d: ("avg", 1), nn.AdaptiveAvgPool2d: ("avg", 2),
                nn.AdaptiveAvgPool3d: ("avg", 3), nn.AdaptiveMaxPool1d: ("max", 1),
                nn.AdaptiveMaxPool2d: ("max", 2), nn.AdaptiveMaxPool3d: ("max", 3)}
    for cls, (mode, nd) in adaptive.items():
        if type(sub) is cls:
            return adaptive_pool(tr, x, mode, nd, sub.output_size, shape)
    if isinstance(sub, nn.modules.batchnorm._BatchNorm):
        batch_stats = sub.training or not sub.track_running_stats
        return batch_norm(tr, x, param("running_mean"), param("running_var"), param("weight"),
                          param("bias"), batch_stats, sub.eps)
    if isinstance(sub, nn.GroupNorm):
        return group_norm(tr, x, sub.num_groups, param("weight"), param("bias"), sub.eps)
    if isinstance(sub, nn.modules.instancenorm._InstanceNorm):
        if sub.track_running_stats and not sub.training:
            raise _Uncovered(f"{kind} with running statistics")
        return instance_norm(tr, x, param("weight"), param("bias"), sub.eps)
    if isinstance(sub, nn.Flatten):
        return reshape(tr, x, shape)
    if isinstance(sub, nn.Softsign):
        return function(tr, fx_node, "softsign", [x], lambda *a: None, shape)
    args = [tr.value(a) for a in fx_node.args]
    losses = {nn.CrossEntropyLoss: lambda: cross_entropy(tr, args[0], args[1], sub.reduction),
              nn.KLDivLoss: lambda: kl_div(tr, args[0], args[1], sub.reduction,
                                           sub.log_target),
              nn.SmoothL1Loss: lambda: smooth_l1(tr, args[0], args[1], sub.reduction, sub.beta),
              nn.HuberLoss: lambda: smooth_l1(tr, args[0], args[1], sub.reduction, sub.delta,
                                              huber=True),
              nn.MSELoss: lambda: pointwise_loss(tr, args[0], args[1], sub.reduction, "square"),
              nn.L1Loss: lambda: pointwise_loss(tr, args[0], args[1], sub.reduction, "abs"),
              nn.TripletMarginLoss: lambda: triplet(tr, args[0], args[1], args[2], sub.margin,
                                                    sub.p, sub.eps, sub.reduction),
              nn.CosineSimilarity: lambda: cosine(tr, args[0], args[1], sub.dim, sub.eps)}
    for cls, build in losses.items():
        if type(sub) is cls:
            return build()
    raise _Uncovered(kind)


# -- constants the forward creates (``torch.tensor(0.5)``) ----------------------------------

def is_traced_constant(gm, target: str) -> bool:
    """fx stores tensors made inside forward as ``_tensor_constant*`` attributes of the traced
    module (not of the Model the candidate copies)."""
    return target.startswith("_tensor_constant")


def traced_constant(tr, fx_node):
    from search_engine.synthesis.offline.analysis import _get_attr

    tensor = _get_attr(tr.gm, fx_node.target)
    if tensor.is_meta or tensor.numel() != 1:
        tr.uncovered.append("a tensor constant made in forward")
        return None
    return Const(float(tensor.reshape(()).item()))
