"""Pointwise ops beyond the first templates, lowered by the tracer (`translator.py`)
into IR ops or short compositions of them: the shrink activations, CELU, log-sigmoid,
threshold, PReLU, RReLU in eval, GLU, clamp with tensor bounds, other log/exp bases, the
hyperbolic functions, addcmul / addcdiv / lerp, logaddexp, hypot, xlogy, logit, frac and
nan_to_num. Each takes the translator `tr` (its `add` / `unary` / `binary` build nodes)."""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend.builder import _f, _int, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_index import reshape

ACTIVATIONS = ("celu", "log_sigmoid", "logsigmoid", "tanhshrink", "softshrink", "hardshrink",
               "threshold", "_threshold", "prelu", "rrelu", "glu")
SPECIAL = {"expit": "sigmoid"}  # torch.special.<name> → the op's own name


def activation(tr, name, x, get):
    """The activations beyond the first templates, as ops or short compositions."""
    shape = tr.shape(x)
    if name == "celu":
        return tr.unary("celu", x, alpha=_f(get(1, "alpha", 1.0)))
    if name in ("log_sigmoid", "logsigmoid"):
        return tr.unary("logsigmoid", x)
    if name == "tanhshrink":
        return tr.binary("sub", x, tr.unary("tanh", x), shape)
    if name == "softshrink":  # x - clamp(x, -l, l) is x -+ l outside [-l, l], else 0
        lambd = _f(get(1, "lambd", 0.5))
        return tr.binary("sub", x, tr.unary("clamp", x, lo=-lambd, hi=lambd), shape)
    if name == "hardshrink":
        return tr.unary("hardshrink", x, lambd=_f(get(1, "lambd", 0.5)))
    if name in ("threshold", "_threshold"):
        return tr.unary("threshold", x, threshold=_f(get(1, "threshold")),
                        value=_f(get(2, "value")))
    if name == "rrelu":  # eval: a leaky ReLU with the mean slope; training draws random ones
        if get(3, "training", False):
            raise _Uncovered("rrelu in training mode")
        lower, upper = _f(get(1, "lower", 1.0 / 8)), _f(get(2, "upper", 1.0 / 3))
        return tr.unary("leaky_relu", x, slope=(lower + upper) / 2)
    if name == "glu":
        return glu(tr, x, int(_int(get(1, "dim", -1))))
    return prelu(tr, x, get(1, "weight"))


def glu(tr, x, dim):
    """first half * sigmoid(second half) along `dim`."""
    shape = list(tr.shape(x))
    dim %= len(shape)
    if shape[dim] % 2:
        raise _Uncovered("glu of an odd size")
    half = shape[:dim] + [shape[dim] // 2] + shape[dim + 1:]
    a = tr.add("slice", [x], tuple(half), dim=dim, start=0, step=1)
    b = tr.add("slice", [x], tuple(half), dim=dim, start=shape[dim] // 2, step=1)
    return tr.binary("mul", a, tr.unary("sigmoid", b), tuple(half))


def prelu(tr, x, weight):
    """relu(x) + w * min(x, 0), the weight along dim 1 (one weight: every element)."""
    if not isinstance(weight, int):
        raise _Uncovered("prelu without a weight tensor")
    shape, w_shape = tr.shape(x), tr.shape(weight)
    if len(w_shape) > 1:
        raise _Uncovered("prelu with a weight that is not 1-D")
    if math.prod(w_shape) != 1:
        if len(shape) < 2 or shape[1] != w_shape[0]:
            raise _Uncovered("prelu with a weight that is not one per channel")
        weight = reshape(tr, weight, (w_shape[0],) + (1,) * (len(shape) - 2))
    negative = tr.binary("minimum", x, Const(0.0), shape)
    return tr.binary("add", tr.unary("relu", x), tr.binary("mul", weight, negative, shape),
                     shape)


def clamp_by_tensors(tr, name, x, get):
    """clamp with tensor bounds: max(x, lo) then min(., hi), as torch.clamp."""
    lo = get(1, "min") if name != "clamp_max" else None
    hi = get(2, "max") if name == "clamp" else get(1, "max") if name == "clamp_max" else None
    out = x
    for op, bound in (("maximum", lo), ("minimum", hi)):
        if bound is not None:
            out = tr.binary(op, out, bound, torch.broadcast_shapes(tr.shape(out),
                                                                   tr.shape(bound)))
    return out


def composite(tr, name, args, get, shape):
    """The other pointwise functions as compositions; None when `name` is none of them."""
    build = _COMPOSITES.get(name)
    return None if build is None else build(tr, args, get, shape)


def _scaled(tr, a, scale, shape):
    return tr.binary("mul", a, scale if isinstance(scale, int) else Const(_f(scale)), shape)


def _exp2(tr, args, get, shape):
    return tr.unary("exp", tr.binary("mul", args[0], Const(math.log(2.0)), shape))


def _log_base(base):
    def build(tr, args, get, shape):
        return tr.binary("mul", tr.unary("log", args[0]), Const(1.0 / math.log(base)), shape)
    return build


def _erfc(tr, args, get, shape):
    return tr.binary("sub", Const(1.0), tr.add("erf", [args[0]], shape), shape)


def _hyperbolic(sign):
    def build(tr, args, get, shape):  # (e^x -+ e^-x) / 2
        x = args[0]
        both = tr.binary("sub" if sign < 0 else "add", tr.unary("exp", x),
                         tr.unary("exp", tr.unary("neg", x)), shape)
        return tr.binary("mul", both, Const(0.5), shape)
    return build


def _tan(tr, args, get, shape):
    return tr.binary("div", tr.unary("sin", args[0]), tr.unary("cos", args[0]), shape)


def _addc(op):
    def build(tr, args, get, shape):  # x + value * (y op z)
        x, y, z = args[0], args[1], args[2]
        inner = tr.binary(op, y, z, torch.broadcast_shapes(tr.shape(y), tr.shape(z)))
        return tr.binary("add", x, _scaled(tr, inner, get(3, "value", Const(1.0)),
                                           tr.shape(inner)), shape)
    return build


def _lerp(tr, args, get, shape):  # x + w * (y - x)
    x, y = args[0], args[1]
    gap = tr.binary("sub", y, x, torch.broadcast_shapes(tr.shape(x), tr.shape(y)))
    return tr.binary("add", x, _scaled(tr, gap, args[2], shape), shape)


def _logaddexp(tr, args, get, shape):  # max + log(1 + exp(-|x - y|))
    x, y = args[0], args[1]
    top = tr.binary("maximum", x, y, shape)
    gap = tr.unary("abs", tr.binary("sub", x, y, shape))
    return tr.binary("add", top, tr.unary("log1p", tr.unary("exp", tr.unary("neg", gap))),
                     shape)


def _hypot(tr, args, get, shape):
    x, y = args[0], args[1]
    return tr.unary("sqrt", tr.binary("add", tr.unary("square", x), tr.unary("square", y),
                                      shape))


def _xlogy(tr, args, get, shape):  # 0 where x == 0, even for y == 0
    x, y = args[0], args[1]
    product = tr.binary("mul", x, tr.unary("log", y) if isinstance(y, int) else
                        Const(math.log(_f(y))), shape)
    return tr.add("where", [tr.add("eq", [x, Const(0.0)], tr.shape(x)), Const(0.0), product],
                  shape)


def _logit(tr, args, get, shape):  # log(p / (1 - p)), p clamped to [eps, 1 - eps] if given
    p, eps = args[0], get(1, "eps")
    if eps is not None:
        p = tr.unary("clamp", p, lo=_f(eps), hi=1.0 - _f(eps))
    return tr.unary("log", tr.binary("div", p, tr.binary("sub", Const(1.0), p, shape), shape))


def _frac(tr, args, get, shape):
    return tr.binary("sub", args[0], tr.add("trunc", [args[0]], shape), shape)


def _nan_to_num(tr, args, get, shape):
    x = args[0]
    big = torch.finfo(torch.float32).max
    out = x
    for compare, bad, value in (("eq", Const(math.inf), get(2, "posinf")),
                                ("eq", Const(-math.inf), get(3, "neginf")),
                                ("ne", x, get(1, "nan", Const(0.0)))):
        default = big if compare == "eq" and bad.value > 0 else -big
        fill = Const(_f(value) if value is not None else default)
        out = tr.add("where", [tr.add(compare, [x, bad], shape), fill, out], shape)
    return out


_COMPOSITES = {
    "exp2": _exp2, "log2": _log_base(2.0), "log10": _log_base(10.0), "erfc": _erfc,
    "sinh": _hyperbolic(-1), "cosh": _hyperbolic(1), "tan": _tan,
    "addcmul": _addc("mul"), "addcdiv": _addc("div"), "lerp": _lerp,
    "logaddexp": _logaddexp, "hypot": _hypot, "xlogy": _xlogy, "logit": _logit,
    "frac": _frac, "nan_to_num": _nan_to_num,
}
