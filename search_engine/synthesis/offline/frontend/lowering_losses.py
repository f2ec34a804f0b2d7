"""Losses for the lowering (`lowering.py`) as pointwise ops and reductions: cross-entropy and
NLL (class indices or probabilities, class weights, ignore_index, label smoothing, any
trailing dims), KL divergence, binary cross-entropy (on probabilities or logits, weights,
pos_weight), Huber/smooth-L1, MSE, L1; the margin and distance losses live in
`lowering_margin_losses.py`. ``LOSS_FUNCTIONS`` lowers all their ``F.*`` calls, `loss_module`
their ``nn.*Loss`` modules."""

from __future__ import annotations

import torch

from search_engine.synthesis.offline.frontend.builder import _int, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_args import const_float
from search_engine.synthesis.offline.frontend.lowering_index import reshape
from search_engine.synthesis.offline.frontend.lowering_loss_reduction import (
    _reduce_loss, _total, _weighted,
)
from search_engine.synthesis.offline.frontend.lowering_margin_losses import (
    cosine, cosine_embedding, distance, hinge_embedding, margin_ranking, multi_margin,
    multilabel_soft_margin, poisson_nll, soft_margin, triplet,
)

DEFAULT_IGNORE_INDEX = -100


def _class_view(tr, weight, rank, class_dim):
    """A per-class (C,) tensor viewed to broadcast along the class dim."""
    return reshape(tr, weight, tuple(tr.shape(weight)[0] if d == class_dim else 1
                                     for d in range(rank)))


def nll_loss(tr, log_probs, target, reduction="mean", weight=None,
             ignore_index=DEFAULT_IGNORE_INDEX, smoothing=0.0):
    """-w[t] * log_probs[t] per sample over the class dim (1, or 0 for one sample); label
    smoothing mixes in the weighted mean over classes; mean divides by the targets' weights
    (their count without weights), ignored targets excluded."""
    shape = tr.shape(log_probs)
    class_dim = 1 if len(shape) > 1 else 0
    classes = shape[class_dim]
    if tuple(tr.shape(target)) == tuple(shape) and tr.nodes[target].dtype.is_floating_point:
        return _probability_targets(tr, log_probs, target, reduction, weight, smoothing,
                                    class_dim)
    sample_shape = tuple(s for d, s in enumerate(shape) if d != class_dim)
    if tuple(tr.shape(target)) != sample_shape:
        raise _Uncovered("nll_loss (a target shape other than the input's without classes)")
    target_view = reshape(tr, target, tuple(1 if d == class_dim else s
                                            for d, s in enumerate(shape)))
    hit = tr.add("eq", [tr.add("iota", [], shape, dim=class_dim), target_view], shape)
    w_view = _class_view(tr, weight, len(shape), class_dim) if isinstance(weight, int) else None
    if w_view is not None:
        hit = tr.binary("mul", hit, w_view, shape)
    picked = tr.reduce("sum", tr.binary("mul", log_probs, hit, shape), (class_dim,), False)
    per = tr.unary("neg", picked)
    if smoothing:
        spread = log_probs if w_view is None else tr.binary("mul", log_probs, w_view, shape)
        smooth = tr.reduce("sum", spread, (class_dim,), False)
        per = tr.binary("sub", tr.binary("mul", per, Const(1.0 - smoothing), sample_shape),
                        tr.binary("mul", smooth, Const(smoothing / classes), sample_shape),
                        sample_shape)
    valid = None
    if ignore_index != DEFAULT_IGNORE_INDEX:  # a real class may be ignored: mask it out
        valid = tr.add("ne", [target, Const(float(ignore_index))], sample_shape)
        per = tr.binary("mul", per, valid, sample_shape)
    if reduction != "mean":
        return _reduce_loss(tr, per, reduction)
    if w_view is not None:  # the targets' weights: the hit mask holds w[t] at the target
        target_weight = tr.reduce("sum", hit, (class_dim,), False)
        if valid is not None:
            target_weight = tr.binary("mul", target_weight, valid, sample_shape)
        return tr.binary("div", _total(tr, per), _total(tr, target_weight), ())
    if valid is not None:
        return tr.binary("div", _total(tr, per), _total(tr, valid), ())
    return _reduce_loss(tr, per, reduction)


def _probability_targets(tr, log_probs, target, reduction, weight, smoothing, class_dim):
    """-sum_c w[c] * t[c] * log_probs[c]; mean over the samples (not the weights)."""
    shape = tr.shape(log_probs)
    if smoothing:
        target = tr.binary("add", tr.binary("mul", target, Const(1.0 - smoothing), shape),
                           Const(smoothing / shape[class_dim]), shape)
    per = tr.binary("mul", log_probs, target, shape)
    if isinstance(weight, int):
        per = tr.binary("mul", per, _class_view(tr, weight, len(shape), class_dim), shape)
    per = tr.unary("neg", tr.reduce("sum", per, (class_dim,), False))
    return _reduce_loss(tr, per, reduction)


def cross_entropy(tr, logits, target, reduction="mean", weight=None,
                  ignore_index=DEFAULT_IGNORE_INDEX, smoothing=0.0):
    class_dim = 1 if len(tr.shape(logits)) > 1 else 0
    log_probs = tr.softmax(logits, class_dim, log=True)
    return nll_loss(tr, log_probs, target, reduction, weight, ignore_index, smoothing)


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


def binary_cross_entropy(tr, probs, target, reduction="mean", weight=None):
    """-(t * log(p) + (1 - t) * log(1 - p)), each log clamped at -100 (as torch)."""
    shape = torch.broadcast_shapes(tr.shape(probs), tr.shape(target))
    log_p = tr.unary("clamp", tr.unary("log", probs), lo=-100.0, hi=None)
    one_minus = tr.binary("sub", Const(1.0), probs, tr.shape(probs))
    log_q = tr.unary("clamp", tr.unary("log", one_minus), lo=-100.0, hi=None)
    miss = tr.binary("sub", Const(1.0), target, tr.shape(target))
    both = tr.binary("add", tr.binary("mul", target, log_p, shape),
                     tr.binary("mul", miss, log_q, shape), shape)
    return _reduce_loss(tr, _weighted(tr, tr.unary("neg", both), weight), reduction)


def binary_cross_entropy_logits(tr, logits, target, reduction="mean", weight=None,
                                pos_weight=None):
    """(1 - t) * x + (1 + (pw - 1) * t) * (log1p(exp(-|x|)) + max(-x, 0)): stable both ways."""
    shape = torch.broadcast_shapes(tr.shape(logits), tr.shape(target))
    softplus_neg = tr.binary("add", tr.unary("log1p", tr.unary("exp", tr.unary("neg", tr.unary(
        "abs", logits)))), tr.unary("clamp", tr.unary("neg", logits), lo=0.0, hi=None),
        tr.shape(logits))
    if isinstance(pos_weight, int):
        pw_minus = tr.binary("sub", pos_weight, Const(1.0), tr.shape(pos_weight))
        scale_shape = torch.broadcast_shapes(tr.shape(pos_weight), tr.shape(target))
        scale = tr.binary("add", tr.binary("mul", pw_minus, target, scale_shape), Const(1.0),
                          scale_shape)
        softplus_neg = tr.binary("mul", scale, softplus_neg, shape)
    miss = tr.binary("sub", Const(1.0), target, tr.shape(target))
    per = tr.binary("add", tr.binary("mul", miss, logits, shape), softplus_neg, shape)
    return _reduce_loss(tr, _weighted(tr, per, weight), reduction)


def smooth_l1(tr, a, b, reduction, beta, huber=False):
    shape = torch.broadcast_shapes(tr.shape(a), tr.shape(b))
    diff = tr.unary("abs", tr.binary("sub", a, b, shape))
    if beta == 0.0 and not huber:  # smooth L1 with beta 0 is L1
        return _reduce_loss(tr, diff, reduction)
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


def _loss_reduction(get, pos, default="mean"):
    value = get(pos, "reduction", default)
    return value if isinstance(value, str) else default


def _opt_float(get, pos, key, default):
    value = get(pos, key, default)
    return default if value is None else const_float(value)


def _index(get, pos):
    return int(_int(get(pos, "ignore_index", DEFAULT_IGNORE_INDEX)))


LOSS_FUNCTIONS = {
    "cross_entropy": lambda tr, n, a, get: cross_entropy(
        tr, a[0], a[1], _loss_reduction(get, 5), get(2, "weight"), _index(get, 3),
        _opt_float(get, 6, "label_smoothing", 0.0)),
    "nll_loss": lambda tr, n, a, get: nll_loss(
        tr, a[0], a[1], _loss_reduction(get, 6), get(2, "weight"), _index(get, 4)),
    "kl_div": lambda tr, n, a, get: kl_div(tr, a[0], a[1], _loss_reduction(get, 4),
                                           bool(_int(get(5, "log_target", False)))),
    "binary_cross_entropy": lambda tr, n, a, get: binary_cross_entropy(
        tr, a[0], a[1], _loss_reduction(get, 5), get(2, "weight")),
    "binary_cross_entropy_with_logits": lambda tr, n, a, get: binary_cross_entropy_logits(
        tr, a[0], a[1], _loss_reduction(get, 5), get(2, "weight"), get(6, "pos_weight")),
    "smooth_l1_loss": lambda tr, n, a, get: smooth_l1(tr, a[0], a[1], _loss_reduction(get, 4),
                                                      const_float(get(5, "beta", 1.0))),
    "huber_loss": lambda tr, n, a, get: smooth_l1(tr, a[0], a[1], _loss_reduction(get, 2),
                                                  const_float(get(3, "delta", 1.0)), huber=True),
    "mse_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                     "square"),
    "l1_loss": lambda tr, n, a, get: pointwise_loss(tr, a[0], a[1], _loss_reduction(get, 4),
                                                    "abs"),
    "margin_ranking_loss": lambda tr, n, a, get: margin_ranking(
        tr, a[0], a[1], a[2], _opt_float(get, 3, "margin", 0.0), _loss_reduction(get, 6)),
    "hinge_embedding_loss": lambda tr, n, a, get: hinge_embedding(
        tr, a[0], a[1], _opt_float(get, 2, "margin", 1.0), _loss_reduction(get, 5)),
    "soft_margin_loss": lambda tr, n, a, get: soft_margin(tr, a[0], a[1],
                                                          _loss_reduction(get, 4)),
    "cosine_embedding_loss": lambda tr, n, a, get: cosine_embedding(
        tr, a[0], a[1], a[2], _opt_float(get, 3, "margin", 0.0), _loss_reduction(get, 6)),
    "multilabel_soft_margin_loss": lambda tr, n, a, get: multilabel_soft_margin(
        tr, a[0], a[1], _loss_reduction(get, 5), get(2, "weight")),
    "multi_margin_loss": lambda tr, n, a, get: multi_margin(
        tr, a[0], a[1], int(_int(get(2, "p", 1))), _opt_float(get, 3, "margin", 1.0),
        _loss_reduction(get, 7)) if get(4, "weight") is None else _no_weight("multi_margin"),
    "poisson_nll_loss": lambda tr, n, a, get: poisson_nll(
        tr, a[0], a[1], bool(_int(get(2, "log_input", True))), bool(_int(get(3, "full", False))),
        _opt_float(get, 6, "eps", 1e-8), _loss_reduction(get, 7)),
    "triplet_margin_loss": lambda tr, n, a, get: triplet(
        tr, a[0], a[1], a[2], const_float(get(3, "margin", 1.0)),
        const_float(get(4, "p", 2.0)),
        const_float(get(5, "eps", 1e-6)), _loss_reduction(get, 9),
        bool(_int(get(6, "swap", False)))),
}


def _no_weight(name):
    raise _Uncovered(f"{name}_loss with class weights")


def loss_module(tr, sub, args, param):
    """An ``nn.*Loss`` module (or CosineSimilarity / PairwiseDistance) called on `args`;
    None when `sub` is none of them. `param(name)` is the module's tensor of that name."""
    nn = torch.nn
    kind = type(sub)
    if kind is nn.CrossEntropyLoss:
        return cross_entropy(tr, args[0], args[1], sub.reduction, param("weight"),
                             sub.ignore_index, sub.label_smoothing)
    if kind is nn.NLLLoss:
        return nll_loss(tr, args[0], args[1], sub.reduction, param("weight"), sub.ignore_index)
    if kind is nn.BCELoss:
        return binary_cross_entropy(tr, args[0], args[1], sub.reduction, param("weight"))
    if kind is nn.BCEWithLogitsLoss:
        return binary_cross_entropy_logits(tr, args[0], args[1], sub.reduction,
                                           param("weight"), param("pos_weight"))
    simple = {
        nn.KLDivLoss: lambda: kl_div(tr, args[0], args[1], sub.reduction, sub.log_target),
        nn.SmoothL1Loss: lambda: smooth_l1(tr, args[0], args[1], sub.reduction, sub.beta),
        nn.HuberLoss: lambda: smooth_l1(tr, args[0], args[1], sub.reduction, sub.delta,
                                        huber=True),
        nn.MSELoss: lambda: pointwise_loss(tr, args[0], args[1], sub.reduction, "square"),
        nn.L1Loss: lambda: pointwise_loss(tr, args[0], args[1], sub.reduction, "abs"),
        nn.MarginRankingLoss: lambda: margin_ranking(tr, args[0], args[1], args[2],
                                                     sub.margin, sub.reduction),
        nn.HingeEmbeddingLoss: lambda: hinge_embedding(tr, args[0], args[1], sub.margin,
                                                       sub.reduction),
        nn.SoftMarginLoss: lambda: soft_margin(tr, args[0], args[1], sub.reduction),
        nn.CosineEmbeddingLoss: lambda: cosine_embedding(tr, args[0], args[1], args[2],
                                                         sub.margin, sub.reduction),
        nn.MultiLabelSoftMarginLoss: lambda: multilabel_soft_margin(
            tr, args[0], args[1], sub.reduction, param("weight")),
        nn.MultiMarginLoss: lambda: multi_margin(tr, args[0], args[1], sub.p, sub.margin,
                                                 sub.reduction) if sub.weight is None
        else _no_weight("multi_margin"),
        nn.PoissonNLLLoss: lambda: poisson_nll(tr, args[0], args[1], sub.log_input, sub.full,
                                               sub.eps, sub.reduction),
        nn.TripletMarginLoss: lambda: triplet(tr, args[0], args[1], args[2], sub.margin,
                                              sub.p, sub.eps, sub.reduction, sub.swap),
        nn.CosineSimilarity: lambda: cosine(tr, args[0], args[1], sub.dim, sub.eps),
        nn.PairwiseDistance: lambda: distance(tr, args[0], args[1], sub.norm, sub.eps,
                                              sub.keepdim),
    }
    build = simple.get(kind)
    return build() if build is not None else None
