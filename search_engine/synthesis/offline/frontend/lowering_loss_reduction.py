"""How a loss's per-element values become its result (none / sum / mean / batchmean) and
how an optional weight tensor applies: shared by `lowering_losses` and
`lowering_margin_losses`."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.ir import Const


def _reduce_loss(tr, per_element, reduction, batch=None):
    """none / sum / mean (over the elements) / batchmean (over `batch`)."""
    if reduction == "none":
        return per_element
    total = _total(tr, per_element)
    if reduction == "sum":
        return total
    count = batch if reduction == "batchmean" else math.prod(tr.shape(per_element))
    return tr.binary("div", total, Const(float(count)), ())


def _total(tr, x):
    return tr.reduce("sum", x, None, False)


def _weighted(tr, per, weight):
    return tr.binary("mul", per, weight, tr.shape(per)) if isinstance(weight, int) else per
