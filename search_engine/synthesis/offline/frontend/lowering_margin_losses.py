"""Margin and distance losses for the lowering, as pointwise ops and reductions: margin
ranking, hinge embedding, soft margin, multi-class and multi-label margin, Poisson NLL,
pairwise distance, triplet margin, cosine similarity and cosine embedding (dispatched by
`lowering_losses`)."""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend.builder import _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_index import reshape
from search_engine.synthesis.offline.frontend.lowering_loss_reduction import (
    _reduce_loss, _weighted,
)
from search_engine.synthesis.offline.frontend.lowering_norms import vector_norm


def margin_ranking(tr, a, b, target, margin, reduction):
    """max(0, -y * (a - b) + margin)."""
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b), tr.shape(target))
    gap = tr.binary("mul", tr.unary("neg", target), tr.binary("sub", a, b, shape), shape)
    per = tr.unary("clamp", tr.binary("add", gap, Const(margin), shape), lo=0.0, hi=None)
    return _reduce_loss(tr, per, reduction)


def hinge_embedding(tr, x, target, margin, reduction):
    """x where y != -1, plus max(0, margin - x) where y != 1 (as torch)."""
    shape = torch.broadcast_shapes(tr.shape(x), tr.shape(target))
    room = tr.unary("clamp", tr.binary("sub", Const(margin), x, tr.shape(x)), lo=0.0, hi=None)
    not_pos = tr.add("ne", [target, Const(1.0)], tr.shape(target))
    not_neg = tr.add("ne", [target, Const(-1.0)], tr.shape(target))
    per = tr.binary("add", tr.add("where", [not_pos, room, Const(0.0)], shape),
                    tr.add("where", [not_neg, x, Const(0.0)], shape), shape)
    return _reduce_loss(tr, per, reduction)


def soft_margin(tr, x, target, reduction):
    """log(1 + exp(-y * x))."""
    shape = torch.broadcast_shapes(tr.shape(x), tr.shape(target))
    per = tr.unary("log1p", tr.unary("exp", tr.unary("neg", tr.binary("mul", x, target, shape))))
    return _reduce_loss(tr, per, reduction)


def _log_sigmoid(tr, x):
    """min(x, 0) - log1p(exp(-|x|)): no overflow either side."""
    shape = tr.shape(x)
    soft = tr.unary("log1p", tr.unary("exp", tr.unary("neg", tr.unary("abs", x))))
    return tr.binary("sub", tr.unary("clamp", x, lo=None, hi=0.0), soft, shape)


def multilabel_soft_margin(tr, x, target, reduction, weight=None):
    """-mean over classes of t * logsigmoid(x) + (1 - t) * logsigmoid(-x), per sample."""
    shape = torch.broadcast_shapes(tr.shape(x), tr.shape(target))
    miss = tr.binary("sub", Const(1.0), target, tr.shape(target))
    both = tr.binary("add", tr.binary("mul", target, _log_sigmoid(tr, x), shape),
                     tr.binary("mul", miss, _log_sigmoid(tr, tr.unary("neg", x)), shape), shape)
    both = _weighted(tr, both, weight)
    per = tr.unary("neg", tr.mean(both, (len(shape) - 1,), False))
    return _reduce_loss(tr, per, reduction)


def multi_margin(tr, x, target, p, margin, reduction):
    """sum over j != y of max(0, margin - x[y] + x[j]) ** p, over the classes (N, C)."""
    shape = tr.shape(x)
    if len(shape) != 2 or p not in (1, 2):
        raise _Uncovered("multi_margin_loss (other than (N, C) input and p 1 or 2)")
    hit = tr.add("eq", [tr.add("iota", [], shape, dim=1),
                        reshape(tr, target, (shape[0], 1))], shape)
    picked = tr.reduce("sum", tr.binary("mul", x, hit, shape), (1,), True)
    gap = tr.binary("add", tr.binary("sub", x, picked, shape), Const(margin), shape)
    gap = tr.unary("clamp", gap, lo=0.0, hi=None)
    if p == 2:
        gap = tr.unary("square", gap)
    others = tr.binary("mul", gap, tr.binary("sub", Const(1.0), hit, shape), shape)
    return _reduce_loss(tr, tr.mean(others, (1,), False), reduction)


def poisson_nll(tr, x, target, log_input, full, eps, reduction):
    shape = torch.broadcast_shapes(tr.shape(x), tr.shape(target))
    if log_input:
        per = tr.binary("sub", tr.unary("exp", x), tr.binary("mul", target, x, shape), shape)
    else:
        log_x = tr.unary("log", tr.binary("add", x, Const(eps), tr.shape(x)))
        per = tr.binary("sub", x, tr.binary("mul", target, log_x, shape), shape)
    if full:  # Stirling's term t*log(t) - t + 0.5*log(2*pi*t), where t > 1
        stirling = tr.binary("add", tr.binary("sub", tr.binary(
            "mul", target, tr.unary("log", target), tr.shape(target)), target, tr.shape(target)),
            tr.binary("mul", tr.unary("log", tr.binary("mul", target, Const(2 * math.pi),
                                                       tr.shape(target))), Const(0.5),
                      tr.shape(target)), tr.shape(target))
        above = tr.add("gt", [target, Const(1.0)], tr.shape(target))
        per = tr.binary("add", per, tr.add("where", [above, stirling, Const(0.0)],
                                           tr.shape(target)), shape)
    return _reduce_loss(tr, per, reduction)


def distance(tr, a, b, p, eps, keepdim=False):
    """||a - b + eps||_p over the last dim (F.pairwise_distance)."""
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    diff = tr.binary("add", tr.binary("sub", a, b, shape), Const(eps), shape)
    return vector_norm(tr, diff, p, len(shape) - 1, keepdim)


def triplet(tr, anchor, positive, negative, margin, p, eps, reduction, swap=False):
    d_pos = distance(tr, anchor, positive, p, eps)
    d_neg = distance(tr, anchor, negative, p, eps)
    shape = tr.shape(d_pos)
    if swap:
        d_neg = tr.binary("minimum", d_neg, distance(tr, positive, negative, p, eps), shape)
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


def cosine_embedding(tr, a, b, target, margin, reduction):
    """1 - cos where y == 1, max(0, cos - margin) where y == -1; cos with 1e-12 added to
    each squared norm (as torch)."""
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    dim = len(shape) - 1
    dot = tr.reduce("sum", tr.binary("mul", a, b, shape), (dim,), False)
    squares = [tr.binary("add", tr.reduce("sum", tr.unary("square", v), (dim,), False),
                         Const(1e-12), tr.shape(dot)) for v in (a, b)]
    out_shape = tr.shape(dot)
    cos = tr.binary("div", dot, tr.unary("sqrt", tr.binary("mul", *squares, out_shape)),
                    out_shape)
    pos = tr.binary("sub", Const(1.0), cos, out_shape)
    neg = tr.unary("clamp", tr.binary("sub", cos, Const(margin), out_shape), lo=0.0, hi=None)
    is_pos = tr.add("eq", [target, Const(1.0)], out_shape)
    is_neg = tr.add("eq", [target, Const(-1.0)], out_shape)
    per = tr.binary("add", tr.add("where", [is_pos, pos, Const(0.0)], out_shape),
                    tr.add("where", [is_neg, neg, Const(0.0)], out_shape), out_shape)
    return _reduce_loss(tr, per, reduction)
