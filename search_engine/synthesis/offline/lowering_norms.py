"""Normalizations for the lowering (`lowering.py`): BatchNorm (running or batch statistics
as the module uses them), GroupNorm and InstanceNorm as means, ``rsqrt`` and per-channel
affine ops; ``NORM_FUNCTIONS`` lowers their ``F.*_norm`` calls."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.analysis import Const, _int, _Uncovered
from search_engine.synthesis.offline.lowering_args import const_float
from search_engine.synthesis.offline.lowering_index import reshape


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


NORM_FUNCTIONS = {"batch_norm": _f_batch_norm, "group_norm": _f_group_norm,
                  "instance_norm": _f_instance_norm}
