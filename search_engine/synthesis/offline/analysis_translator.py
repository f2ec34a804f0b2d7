"""Translate a traced torch.fx graph into the op graph (IR), node by node.

`_Translator` maps placeholders to inputs, attributes to parameters and the calls the first
three families need (pointwise ops, reductions, softmax, layer norm, matmul, linear, transposes)
to IR nodes; every other call goes to `lowering.py`. It runs only inside the sandboxed probe,
through `analysis_trace.trace_module`.
"""

from __future__ import annotations

from typing import Any

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.analysis_builder import (
    _dims, _f, _GraphBuilder, _int, _norm_dims, _Uncovered,
)
from search_engine.synthesis.offline.analysis_classify import classify
from search_engine.synthesis.offline.analysis_ir import Analysis, Const


def _node_name(fx_node) -> str:
    target = fx_node.target
    if fx_node.op == "call_method":
        return str(target)
    if fx_node.op == "call_function":
        return getattr(target, "__name__", str(target))
    return str(target)


def _arg(fx_node, pos: int, name: str, default=None):
    if len(fx_node.args) > pos:
        return fx_node.args[pos]
    return fx_node.kwargs.get(name, default)


class _Translator(_GraphBuilder):
    def __init__(self, graph_module, input_count: int, inputs=()):
        super().__init__()
        self.gm = graph_module
        self.input_count = input_count
        self.inputs = list(inputs)
        self.env: dict[str, Any] = {}  # fx node name -> IR id (or tuple for max(dim=...))
        self.uncovered: list[str] = []
        self.op_names: list[str] = []
        self.input_names: list[str] = []
        self.output_dtype = "torch.float32"

    def value(self, arg):
        if hasattr(arg, "op") and hasattr(arg, "name"):  # an fx Node
            return self.env[arg.name]
        if isinstance(arg, bool) or arg is None:
            return arg
        if isinstance(arg, (int, float)):
            return Const(float(arg))
        return arg

    def run(self) -> Analysis:
        placeholder_index = 0
        output_ref = None
        for fx_node in self.gm.graph.nodes:
            meta = fx_node.meta.get("tensor_meta")
            shape = tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else ()
            if fx_node.op == "placeholder":
                self.input_names.append(str(fx_node.target))
                dtype = meta.dtype if meta is not None and hasattr(meta, "dtype") else None
                value = self.inputs[placeholder_index] \
                    if placeholder_index < len(self.inputs) else None
                if dtype is None and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):  # a scalar argument, passed as is
                    self.env[fx_node.name] = self.add("input", [], (), torch.float32,
                                                      index=placeholder_index, scalar=True)
                elif dtype is None:
                    self.uncovered.append(f"non-tensor input {fx_node.name}")
                    self.env[fx_node.name] = None
                else:
                    self.env[fx_node.name] = self.add("input", [], shape, dtype,
                                                      index=placeholder_index)
                placeholder_index += 1
            elif fx_node.op == "get_attr" and lowering.is_traced_constant(
                    self.gm, fx_node.target):
                self.env[fx_node.name] = lowering.traced_constant(self, fx_node)
            elif fx_node.op == "get_attr":
                tensor = _get_attr(self.gm, fx_node.target)
                self.env[fx_node.name] = self.add("param", [], tuple(tensor.shape),
                                                  tensor.dtype, path=fx_node.target)
            elif fx_node.op == "output":
                output_ref = fx_node.args[0]
                out_meta = getattr(output_ref, "meta", {}).get("tensor_meta")
                self.output_dtype = str(getattr(out_meta, "dtype", torch.float32))
            else:
                name = _node_name(fx_node)
                self.op_names.append(name)
                if self._downstream_of_uncovered(fx_node):
                    self.env[fx_node.name] = None  # its input already stopped the analysis
                    continue
                try:
                    self.env[fx_node.name] = self.translate(fx_node, name, shape)
                except _Uncovered as exc:
                    self.uncovered.append(str(exc))
                    self.env[fx_node.name] = None
                except Exception as exc:  # an argument form the lowering does not know
                    self.uncovered.append(f"{name} ({type(exc).__name__})")
                    self.env[fx_node.name] = None
        if self.uncovered:
            raise NotCoveredError(
                "the offline synthesizer does not cover this problem", self.uncovered)
        if not (hasattr(output_ref, "name") and isinstance(self.env.get(output_ref.name), int)):
            raise NotCoveredError("the offline synthesizer covers one tensor output only",
                                  ["multiple outputs"])
        return classify(self.nodes, self.env[output_ref.name], self.input_count,
                        self.op_names, self.input_names, self.output_dtype)

    def _downstream_of_uncovered(self, fx_node) -> bool:
        return any(self.env.get(n.name, 0) is None for n in fx_node.all_input_nodes)

    def translate(self, fx_node, name: str, shape):
        if fx_node.op == "call_module":
            return self.translate_module(fx_node, shape)
        args = [self.value(a) for a in fx_node.args]
        x = args[0] if args else self.value(fx_node.kwargs.get("input"))

        def get(pos, key, default=None):
            return self.value(_arg(fx_node, pos, key, default))

        aliases = {"__add__": "add", "iadd": "add", "__radd__": "add",
                   "__mul__": "mul",
                   "truediv": "div", "true_divide": "div", "divide": "div", "multiply": "mul",
                   "subtract": "sub", "negative": "neg", "__matmul__": "matmul",
                   "relu_": "relu", "clip": "clamp", "clamp_min": "clamp_min",
                   "maximum": "maximum", "minimum": "minimum", "amax": "amax", "amin": "amin"}
        name = aliases.get(name, name)
        if name in ("add", "sub", "mul", "div"):
            a, b = args[0], args[1]
            if fx_node.kwargs.get("alpha") not in (None, 1):
                b = self.binary("mul", b, Const(float(fx_node.kwargs["alpha"])), self.shape(b)) \
                    if isinstance(b, int) else Const(b.value * fx_node.kwargs["alpha"])
            if fx_node.kwargs.get("rounding_mode") is not None:
                raise _Uncovered(f"{name}(rounding_mode)")
            return self.binary(name, a, b, shape)
        if name == "rsub":
            return self.binary("sub", args[1], args[0], shape)
        if name in ("maximum", "minimum", "fmax", "fmin"):
            return self.binary({"fmax": "maximum", "fmin": "minimum"}.get(name, name),
                               args[0], args[1], shape)
        if name in ("neg", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs",
                    "square", "reciprocal", "sin", "cos", "silu", "mish", "selu", "log1p",
                    "expm1", "hardswish", "hardsigmoid"):
            return self.unary(name, x)
        if name == "gelu":
            approximate = fx_node.kwargs.get("approximate", _arg(fx_node, 1, "approximate"))
            return self.unary("gelu_tanh" if approximate == "tanh" else "gelu", x)
        if name == "softplus":
            return self.unary("softplus", x, beta=_f(get(1, "beta", 1.0)),
                              threshold=_f(get(2, "threshold", 20.0)))
        if name == "elu":
            return self.unary("elu", x, alpha=_f(get(1, "alpha", 1.0)))
        if name == "leaky_relu":
            return self.unary("leaky_relu", x, slope=_f(get(1, "negative_slope", 0.01)))
        if name in ("clamp", "hardtanh", "clamp_min", "clamp_max", "relu6"):
            lo, hi = {
                "clamp": (get(1, "min"), get(2, "max")),
                "hardtanh": (get(1, "min_val", -1.0), get(2, "max_val", 1.0)),
                "clamp_min": (get(1, "min"), None),
                "clamp_max": (None, get(1, "max")),
                "relu6": (Const(0.0), Const(6.0)),
            }[name]
            if isinstance(lo, int) or isinstance(hi, int):
                raise _Uncovered(f"{name} with tensor bounds")
            return self.unary("clamp", x, lo=_f(lo), hi=_f(hi))
        if name in ("pow", "__pow__"):
            if not isinstance(args[1], Const):
                raise _Uncovered("pow with a tensor exponent")
            return self.unary("powc", x, exponent=args[1].value)
        if name in ("softmax", "log_softmax", "_softmax"):
            dim = get(1, "dim")
            return self.softmax(x, _int(dim), log=name == "log_softmax")
        if name in ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm",
                    "var", "std"):
            return self.reduction_call(fx_node, name, x, args, get)
        if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] == "shape":
            return _Shape(self.shape(args[0]))  # static: the problem's sizes are fixed
        if name == "size" and isinstance(args[0], int):
            dim = get(1, "dim")
            shape = _Shape(self.shape(args[0]))
            return shape if dim is None else Const(float(shape[_int(dim)]))
        if name == "getitem" and isinstance(self.env.get(fx_node.args[0].name), _Shape):
            picked = self.env[fx_node.args[0].name][fx_node.args[1]]
            return _Shape(picked) if isinstance(picked, tuple) else Const(float(picked))
        if name == "getitem":
            base, index = fx_node.args[0], fx_node.args[1]
            pair = self.env.get(base.name)
            if isinstance(pair, tuple) and index in (0, 1):
                return pair[index]
            return lowering.getitem(self, fx_node)
        if name == "layer_norm":
            normalized = get(1, "normalized_shape")
            return self.layer_norm(x, normalized, get(2, "weight"), get(3, "bias"),
                                   _f(get(4, "eps", 1e-5)))
        if name in ("matmul", "mm", "bmm"):
            return self.add("matmul", [args[0], args[1]], shape)
        if name == "linear":
            weight = args[1]
            bias = get(2, "bias")
            w_t = self.add("transpose", [weight], tuple(reversed(self.shape(weight))))
            out = self.add("matmul", [x, w_t], shape)
            return self.binary("add", out, bias, shape) if isinstance(bias, int) else out
        if name in ("t", "transpose", "permute", "swapaxes") or name == "mT":
            return self.transpose(fx_node, name, x, shape)
        if name in ("contiguous", "clone", "float", "detach", "dropout", "identity"):
            if name == "dropout" and fx_node.kwargs.get("training", False):
                raise _Uncovered("dropout in training mode")
            return x
        return lowering.function(self, fx_node, name, args, get, shape)

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
        if isinstance(sub, nn.Hardtanh):  # ReLU6 too
            return self.unary("clamp", x, lo=float(sub.min_val), hi=float(sub.max_val))
        if isinstance(sub, (nn.Softmax, nn.LogSoftmax)):
            return self.softmax(x, sub.dim, log=isinstance(sub, nn.LogSoftmax))
        if isinstance(sub, nn.LayerNorm):
            weight = self.param(f"{path}.weight", sub.weight) if sub.weight is not None else None
            bias = self.param(f"{path}.bias", sub.bias) if sub.bias is not None else None
            return self.layer_norm(x, sub.normalized_shape, weight, bias, float(sub.eps))
        if isinstance(sub, nn.Linear):
            weight = self.param(f"{path}.weight", sub.weight)
            w_t = self.add("transpose", [weight], tuple(reversed(sub.weight.shape)))
            out = self.add("matmul", [x, w_t], shape)
            if sub.bias is not None:
                out = self.binary("add", out, self.param(f"{path}.bias", sub.bias), shape)
            return out
        return lowering.module(self, fx_node, sub, x, shape)

    def reduction_call(self, fx_node, name, x, args, get):
        in_shape = self.shape(x)
        if name in ("max", "min") and len(args) > 1 and (
                isinstance(args[1], int) or hasattr(fx_node.args[1], "op")):
            return self.binary("maximum" if name == "max" else "minimum", args[0], args[1],
                               self.shape(args[0]))
        if name == "norm":
            p = get(1, "p", "fro")
            dims = get(2, "dim")
            keepdim = bool(get(3, "keepdim", False))
            p = p.value if isinstance(p, Const) else p
            dims = _norm_dims(_dims(dims), len(in_shape))
            if p in ("fro", 2, 2.0):
                return self.unary("sqrt", self.reduce("sum", self.unary("square", x), dims,
                                                      keepdim))
            if p in (1, 1.0):
                return self.reduce("sum", self.unary("abs", x), dims, keepdim)
            if p == float("inf"):
                return self.reduce("max", self.unary("abs", x), dims, keepdim)
            raise _Uncovered(f"norm(p={p})")
        dim = get(1, "dim")
        keepdim = bool(get(2, "keepdim", False))
        if name in ("var", "std"):
            correction = fx_node.kwargs.get("correction")
            unbiased = fx_node.kwargs.get("unbiased", True)
            if correction is None:
                correction = 1.0 if unbiased else 0.0
            out = self.var(x, _norm_dims(_dims(dim), len(in_shape)), keepdim, float(correction))
            return self.unary("sqrt", out) if name == "std" else out
        dims = _norm_dims(_dims(dim), len(in_shape))
        if name == "mean":
            return self.mean(x, dims, keepdim)
        if name in ("sum", "amax", "amin"):
            return self.reduce({"amax": "max", "amin": "min"}.get(name, name), x, dims, keepdim)
        if name in ("argmax", "argmin"):
            if dim is None:
                raise _Uncovered(f"{name} without dim")
            return self.reduce(name, x, dims, keepdim)
        # max/min: with a dim they return (values, indices)
        if dim is None:
            return self.reduce(name, x, dims, False)
        values = self.reduce(name, x, dims, keepdim)
        indices = self.reduce("arg" + name, x, dims, keepdim)
        return (values, indices)

    def transpose(self, fx_node, name, x, shape):
        rank = len(self.shape(x))
        if name == "permute":
            order = list(fx_node.args[1:]) if not isinstance(fx_node.args[1], (list, tuple)) \
                else list(fx_node.args[1])
            order = [o % rank for o in order]
            if order != list(range(rank - 2)) + [rank - 1, rank - 2]:
                return self.add("permute", [x], shape, perm=tuple(order))
        elif name in ("transpose", "swapaxes"):
            d0, d1 = sorted(_int(a) % rank for a in fx_node.args[1:3])
            if (d0, d1) != (rank - 2, rank - 1):
                order = list(range(rank))
                order[d0], order[d1] = d1, d0
                return self.add("permute", [x], shape, perm=tuple(order))
        return self.add("transpose", [x], shape)


class _Shape(tuple):
    """A static shape (x.shape, x.size()) flowing through the traced graph."""


def _get_attr(module, target: str):
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


# Imported last, as `analysis.py` imports this module last: lowering imports names from
# `analysis`, which are all bound by then, whichever of the two modules is imported first.
from search_engine.synthesis.offline import lowering  # noqa: E402 (the tracer calls it)
