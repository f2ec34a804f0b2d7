"""Normalizations for the lowering (`lowering.py`): BatchNorm (running or batch statistics
as the module uses them), GroupNorm, InstanceNorm and RMSNorm as means, ``rsqrt`` and
per-channel affine ops; vector norms (``torch.norm``, ``torch.linalg.vector_norm`` /
``norm``, ``F.normalize``) as reductions of ``|x| ** p``; local response norm as a window
sum of shifted slices of the padded squares; ``NORM_FUNCTIONS`` lowers the ``F.*`` and
``torch.linalg.*`` calls, ``REDUCTION_FUNCTIONS`` the reductions the tracer leaves over
(``count_nonzero``, ``nansum``, ``nanmean``, ``aminmax``)."""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend.builder import _dims, _int, _norm_dims, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_args import const_float
from search_engine.synthesis.offline.frontend.lowering_conv_pool import pad_node
from search_engine.synthesis.offline.frontend.lowering_index import reshape


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
    n = shape[0]
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
                      const_float(get(7, "eps", 1e-5)))


def _f_group_norm(tr, fx_node, x, get, shape):
    return group_norm(tr, x, int(_int(get(1, "num_groups"))), get(2, "weight"), get(3, "bias"),
                      const_float(get(4, "eps", 1e-5)))


def _f_instance_norm(tr, fx_node, x, get, shape):
    if isinstance(get(1, "running_mean"), int) and not bool(_int(get(5, "use_input_stats",
                                                                     True))):
        raise _Uncovered("instance_norm with running statistics")
    return instance_norm(tr, x, get(3, "weight"), get(4, "bias"),
                         const_float(get(7, "eps", 1e-5)))


def rms_norm(tr, x, normalized_shape, weight, eps, dtype=torch.float32):
    """x * rsqrt(mean(x ** 2) + eps) * weight over the trailing `normalized_shape` dims; no
    eps means the dtype's machine epsilon (as torch)."""
    shape = tr.shape(x)
    count = 1 if isinstance(_int(normalized_shape), int) else len(tuple(normalized_shape))
    dims = tuple(range(len(shape) - count, len(shape)))
    eps = torch.finfo(dtype).eps if eps is None else float(eps)
    mean_square = tr.mean(tr.unary("square", x), dims, True)
    inv = tr.unary("rsqrt", tr.binary("add", mean_square, Const(eps), tr.shape(mean_square)))
    out = tr.binary("mul", x, inv, shape)
    return tr.binary("mul", out, weight, shape) if isinstance(weight, int) else out


def vector_norm(tr, x, p, dims, keepdim):
    """(sum |x| ** p) ** (1/p) over `dims` (all when None); p = inf, -inf, 0 as torch."""
    p = p.value if isinstance(p, Const) else p
    if p is None or p == "fro":
        p = 2.0
    if isinstance(p, str):
        raise _Uncovered(f"norm(p={p!r})")
    p = float(p)
    dims = _norm_dims(_dims(dims), len(tr.shape(x)))
    if p == 0.0:
        return tr.reduce("sum", tr.add("ne", [x, Const(0.0)], tr.shape(x)), dims, keepdim)
    magnitude = tr.unary("abs", x)
    if math.isinf(p):
        return tr.reduce("max" if p > 0 else "min", magnitude, dims, keepdim)
    if p == 1.0:
        return tr.reduce("sum", magnitude, dims, keepdim)
    if p == 2.0:
        return tr.unary("sqrt", tr.reduce("sum", tr.unary("square", x), dims, keepdim))
    total = tr.reduce("sum", tr.unary("powc", magnitude, exponent=p), dims, keepdim)
    return tr.unary("powc", total, exponent=1.0 / p)


def normalize_vectors(tr, x, p, dim, eps):
    """F.normalize: x / max(||x||_p over dim, eps)."""
    norm = vector_norm(tr, x, p, dim, True)
    floor = tr.unary("clamp", norm, lo=float(eps), hi=None)
    return tr.binary("div", x, floor, tr.shape(x))


def _f_vector_norm(tr, fx_node, x, get, shape):
    return vector_norm(tr, x, get(1, "ord", 2.0), get(2, "dim"), bool(get(3, "keepdim", False)))


def _f_linalg_norm(tr, fx_node, x, get, shape):
    """torch.linalg.norm: a vector norm for one dim (or a flattened 1-D input / no ord); of
    matrix norms only Frobenius."""
    order, dims = get(1, "ord"), _dims(get(2, "dim"))
    order = order.value if isinstance(order, Const) else order
    vector = order is None or isinstance(dims, int) or (
        dims is None and len(tr.shape(x)) == 1)
    if not vector and order != "fro":
        raise _Uncovered(f"linalg_norm (matrix norm ord={order!r})")
    return vector_norm(tr, x, 2.0 if order is None else order, dims,
                       bool(get(3, "keepdim", False)))


def _f_normalize(tr, fx_node, x, get, shape):
    return normalize_vectors(tr, x, get(1, "p", 2.0), int(_int(get(2, "dim", 1))),
                             const_float(get(3, "eps", 1e-12)))


def _f_rms_norm(tr, fx_node, x, get, shape):
    eps = get(3, "eps")
    return rms_norm(tr, x, get(1, "normalized_shape"), get(2, "weight"),
                    None if eps is None else const_float(eps), tr.nodes[x].dtype)


def local_response_norm(tr, x, size, alpha, beta, k):
    """x / (k + alpha * mean of x**2 over a window of `size` channels) ** beta; the window
    is zero-padded by (size // 2, (size - 1) // 2) channels (as torch)."""
    shape = tr.shape(x)
    if len(shape) < 3 or size > 32:
        raise _Uncovered("local_response_norm (input without channels, or a wide window)")
    square = tr.unary("square", x)
    pairs = [(0, 0)] * len(shape)
    pairs[1] = (size // 2, (size - 1) // 2)
    padded_shape = tuple(s + size - 1 if d == 1 else s for d, s in enumerate(shape))
    padded = pad_node(tr, square, pairs, "constant", 0.0, padded_shape)
    window = None
    for start in range(size):
        part = tr.add("slice", [padded], shape, dim=1, start=start, step=1)
        window = part if window is None else tr.binary("add", window, part, shape)
    scaled = tr.binary("add", tr.binary("mul", window, Const(alpha / size), shape),
                       Const(float(k)), shape)
    return tr.binary("div", x, tr.unary("powc", scaled, exponent=float(beta)), shape)


def _f_local_response_norm(tr, fx_node, x, get, shape):
    return local_response_norm(tr, x, int(_int(get(1, "size"))),
                               const_float(get(2, "alpha", 1e-4)),
                               const_float(get(3, "beta", 0.75)), const_float(get(4, "k", 1.0)))


def _dims_keepdim(tr, x, get):
    return (_norm_dims(_dims(get(1, "dim")), len(tr.shape(x))),
            bool(_int(get(2, "keepdim", False))))


def _nan_sum(tr, x, get, mean):
    """nansum / nanmean: NaNs (the values unequal to themselves) count as absent."""
    in_shape = tr.shape(x)
    dims, keepdim = _dims_keepdim(tr, x, get)
    number = tr.add("eq", [x, x], in_shape)
    total = tr.reduce("sum", tr.add("where", [number, x, Const(0.0)], in_shape), dims, keepdim)
    if not mean:
        return total
    return tr.binary("div", total, tr.reduce("sum", number, dims, keepdim), tr.shape(total))


def _f_count_nonzero(tr, fx_node, x, get, shape):
    nonzero = tr.add("ne", [x, Const(0.0)], tr.shape(x))
    return tr.reduce("sum", nonzero, _dims_keepdim(tr, x, get)[0], False)


def _f_aminmax(tr, fx_node, x, get, shape):
    """(min, max); fx's shape is the pair's."""
    dims, keepdim = _dims_keepdim(tr, x, get)
    return tr.reduce("min", x, dims, keepdim), tr.reduce("max", x, dims, keepdim)


REDUCTION_FUNCTIONS = {
    "count_nonzero": _f_count_nonzero, "aminmax": _f_aminmax,
    "nansum": lambda tr, fx_node, x, get, shape: _nan_sum(tr, x, get, False),
    "nanmean": lambda tr, fx_node, x, get, shape: _nan_sum(tr, x, get, True),
}

NORM_FUNCTIONS = {"batch_norm": _f_batch_norm, "group_norm": _f_group_norm,
                  "instance_norm": _f_instance_norm, "rms_norm": _f_rms_norm,
                  "normalize": _f_normalize, "linalg_vector_norm": _f_vector_norm,
                  "vector_norm": _f_vector_norm, "linalg_norm": _f_linalg_norm,
                  "local_response_norm": _f_local_response_norm}
