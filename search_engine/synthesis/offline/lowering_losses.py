"""Losses and distances for the lowering (`lowering.py`): cross-entropy, KL divergence,
Huber/smooth-L1, MSE, L1, triplet margin, pairwise distance and cosine similarity as
pointwise ops and reductions; ``LOSS_FUNCTIONS`` lowers their ``F.*`` calls."""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.analysis import Const, _int, _Uncovered
from search_engine.synthesis.offline.lowering_args import const_float
from search_engine.synthesis.offline.lowering_index import reshape


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
                                                      const_float(get(5, "beta", 1.0))),
    "huber_loss": lambda tr, n, a, get: smooth_l1(tr, a[0], a[1], _loss_reduction(get, 2),
                                                  const_float(get(3, "delta", 1.0)), huber=True),
    "mse_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                     "square"),
    "l1_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                    "abs"),
    "triplet_margin_loss": lambda tr, n, a, get: triplet(
        tr, a[0], a[1], a[2], const_float(get(3, "margin", 1.0)),
        const_float(get(4, "p", 2.0)),
        const_float(get(5, "eps", 1e-6)), _loss_reduction(get, 9)),
}
