"""The translator's calls of nn modules (activations, softmax, LayerNorm, Linear; the rest
go to `lowering.module`) and of reductions (sum, mean, max/min with indices, var/std, any/all,
vector norms): mixins of `translator._Translator`, which holds the graph."""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend import lowering, pointwise
from search_engine.synthesis.offline.frontend.builder import _dims, _norm_dims, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_cells import (
    recurrent_cell, recurrent_sequence,
)


def _arg(fx_node, pos: int, name: str, default=None):
    if len(fx_node.args) > pos:
        return fx_node.args[pos]
    return fx_node.kwargs.get(name, default)


class ModuleCalls:
    """A call of a submodule (`call_module` node) as IR nodes."""

    def translate_module(self, fx_node, shape):
        sub = self.gm.get_submodule(fx_node.target)
        kind = type(sub).__name__
        x = self.value(fx_node.args[0]) if fx_node.args else None
        if x is None:
            raise _Uncovered(kind)
        path = fx_node.target
        nn = torch.nn
        simple = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu",
                  nn.Mish: "mish", nn.SELU: "selu", nn.Hardswish: "hardswish",
                  nn.Hardsigmoid: "hardsigmoid"}
        for cls, op in simple.items():
            if isinstance(sub, cls):
                return self.unary(op, x)
        if isinstance(sub, (nn.Identity, nn.Dropout)):
            return x
        if isinstance(sub, nn.GELU):
            return self.unary("gelu_tanh" if sub.approximate == "tanh" else "gelu", x)
        if isinstance(sub, nn.LeakyReLU):
            return self.unary("leaky_relu", x, slope=float(sub.negative_slope))
        if isinstance(sub, nn.ELU):
            return self.unary("elu", x, alpha=float(sub.alpha))
        if isinstance(sub, nn.Softplus):
            return self.unary("softplus", x, beta=float(sub.beta), threshold=float(sub.threshold))
        shrinks = {nn.CELU: ("celu", {"alpha": "alpha"}), nn.LogSigmoid: ("logsigmoid", {}),
                   nn.Tanhshrink: ("tanhshrink", {}), nn.Softshrink: ("softshrink",
                                                                       {"lambd": "lambd"}),
                   nn.Hardshrink: ("hardshrink", {"lambd": "lambd"}),
                   nn.Threshold: ("threshold", {"threshold": "threshold", "value": "value"})}
        for cls, (op, fields) in shrinks.items():
            if isinstance(sub, cls):
                return pointwise.activation(self, op, x, lambda pos, key, default=None: float(
                    getattr(sub, fields[key])) if key in fields else default)
        if isinstance(sub, nn.PReLU):
            return pointwise.prelu(self, x, self.param(f"{path}.weight", sub.weight))
        if isinstance(sub, nn.RReLU):
            return pointwise.activation(self, "rrelu", x, lambda pos, key, default=None: {
                "lower": sub.lower, "upper": sub.upper, "training": sub.training}.get(key))
        if isinstance(sub, nn.GLU):
            return pointwise.glu(self, x, sub.dim)
        if isinstance(sub, nn.Hardtanh):  # ReLU6 too
            return self.unary("clamp", x, lo=float(sub.min_val), hi=float(sub.max_val))
        if isinstance(sub, (nn.Softmax, nn.LogSoftmax)):
            return self.softmax(x, sub.dim, log=isinstance(sub, nn.LogSoftmax))
        if isinstance(sub, nn.LayerNorm):
            return self.layer_norm_module(sub, x, path)
        if isinstance(sub, nn.Linear):
            weight = self.param(f"{path}.weight", sub.weight)
            w_t = self.add("transpose", [weight], tuple(reversed(sub.weight.shape)))
            out = self.add("matmul", [x, w_t], shape)
            if sub.bias is not None:
                out = self.binary("add", out, self.param(f"{path}.bias", sub.bias), shape)
            return out
        if isinstance(sub, (nn.RNNCell, nn.GRUCell, nn.LSTMCell)):
            return recurrent_cell(self, fx_node, sub, x, path)
        if isinstance(sub, (nn.RNN, nn.GRU, nn.LSTM)):
            return recurrent_sequence(self, fx_node, sub, x, path)
        return lowering.module(self, fx_node, sub, x, shape)

    def layer_norm_module(self, sub, x, path: str):
        """An nn.LayerNorm at `path` applied to x."""
        weight = self.param(f"{path}.weight", sub.weight) if sub.weight is not None else None
        bias = self.param(f"{path}.bias", sub.bias) if sub.bias is not None else None
        return self.layer_norm(x, sub.normalized_shape, weight, bias, float(sub.eps))


class ReductionCalls:
    """Reductions called as functions or methods."""

    def reduction_call(self, fx_node, name, x, args, get):
        in_shape = self.shape(x)
        if name in ("max", "min") and len(args) > 1 and (
                isinstance(args[1], int) or hasattr(fx_node.args[1], "op")):
            return self.binary("maximum" if name == "max" else "minimum", args[0], args[1],
                               self.shape(args[0]))
        if name == "norm":
            return lowering.vector_norm(self, x, get(1, "p", "fro"), get(2, "dim"),
                                        bool(get(3, "keepdim", False)))
        dim = get(1, "dim")
        keepdim = bool(get(2, "keepdim", False))
        if name in ("var", "std", "var_mean", "std_mean"):
            return self.variance_call(fx_node, name, x, dim)
        dims = _norm_dims(_dims(dim), len(in_shape))
        if name in ("any", "all"):  # over 0/1 values: any is their max, all their min
            nonzero = self.add("ne", [x, Const(0.0)], in_shape)
            return self.reduce("max" if name == "any" else "min", nonzero, dims, keepdim)
        if name == "mean":
            return self.mean(x, dims, keepdim)
        if name in ("sum", "amax", "amin"):
            return self.reduce({"amax": "max", "amin": "min"}.get(name, name), x, dims, keepdim)
        if name in ("argmax", "argmin"):
            if dim is None:  # the index into the flattened input
                flat = lowering.reshape(self, x, (math.prod(in_shape),))
                found = self.reduce(name, flat, (0,), False)
                return lowering.reshape(self, found, (1,) * len(in_shape)) if keepdim else found
            return self.reduce(name, x, dims, keepdim)
        # max/min: with a dim they return (values, indices)
        if dim is None:
            return self.reduce(name, x, dims, False)
        values = self.reduce(name, x, dims, keepdim)
        indices = self.reduce("arg" + name, x, dims, keepdim)
        return (values, indices)

    def variance_call(self, fx_node, name, x, dim):
        """var / std (and their ``*_mean`` pairs); positionally (x, dim, unbiased, keepdim)."""
        unbiased = _arg(fx_node, 2, "unbiased", True)
        keepdim = bool(_arg(fx_node, 3, "keepdim", False)) if len(fx_node.args) > 2 \
            else bool(fx_node.kwargs.get("keepdim", False))
        correction = fx_node.kwargs.get("correction")
        if correction is None:
            correction = 1.0 if unbiased else 0.0
        dims = _norm_dims(_dims(dim), len(self.shape(x)))
        out = self.var(x, dims, keepdim, float(correction))
        if name.startswith("std"):
            out = self.unary("sqrt", out)
        return (out, self.mean(x, dims, keepdim)) if name.endswith("_mean") else out
