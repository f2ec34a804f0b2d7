"""Translate a traced torch.fx graph into the op graph (IR), node by node.

`_Translator` maps placeholders to inputs, attributes to parameters and the calls the first
three families need (pointwise ops, reductions, softmax, layer norm, matmul, linear, transposes)
to IR nodes (module calls and reductions in `module_calls.py`); every other call goes
to `lowering.py`. The graph it returns is pruned to the output and not yet classified
(family "traced"): which kernels it becomes is the plan's to say (`plan/classify.py`).
It runs only inside the sandboxed probe, through `trace.trace_module`.
"""

from __future__ import annotations

from typing import Any

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend import inplace, lowering, pointwise
from search_engine.synthesis.offline.frontend.builder import (
    _f, _get_attr, _GraphBuilder, _int, _Uncovered,
)
from search_engine.synthesis.offline.frontend.ir import Analysis, Const, pruned
from search_engine.synthesis.offline.frontend.module_calls import ModuleCalls, ReductionCalls, _arg


def _node_name(fx_node) -> str:
    target = fx_node.target
    if fx_node.op == "call_method":
        return str(target)
    if fx_node.op == "call_function":
        return getattr(target, "__name__", str(target))
    return str(target)


def _number_default(placeholder) -> float | None:
    """The default of a forward argument get_inputs() leaves out, when it is a number."""
    default = placeholder.args[0] if placeholder.args else None
    ok = isinstance(default, (int, float)) and not isinstance(default, bool)
    return float(default) if ok else None


class _Translator(ModuleCalls, ReductionCalls, _GraphBuilder):
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
            if fx_node.op == "placeholder" and placeholder_index >= len(self.inputs) \
                    and _number_default(fx_node) is not None:  # forward(x, scale=2.0)
                self.env[fx_node.name] = Const(_number_default(fx_node))
            elif fx_node.op == "placeholder":
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
                    self.env[fx_node.name] = self.translate_mutating(fx_node, name, shape)
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
        output = self.env[output_ref.name]
        return Analysis("traced", pruned(self.nodes, output), output, self.input_count,
                        op_names=self.op_names, input_names=self.input_names,
                        output_dtype=self.output_dtype)

    def translate_mutating(self, fx_node, name: str, shape):
        """`translate`, and for an in-place op the written tensor rebound to its result."""
        target = inplace.mutated_argument(self.gm, fx_node, name)
        if target is not None:
            inplace.check_mutation(self.gm, fx_node, target)
        result = self.translate(fx_node, inplace.out_of_place_name(fx_node, name), shape)
        if target is not None and isinstance(result, int):
            for written in inplace.same_tensor(self.gm, target):
                self.env[written.name] = result
        return result

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
        if name.startswith("special_"):  # torch.special.erf and the like
            name = pointwise.SPECIAL.get(name[len("special_"):], name[len("special_"):])
        if name in ("add", "sub", "mul", "div"):
            a, b = args[0], args[1]
            if fx_node.kwargs.get("alpha") not in (None, 1):
                b = self.binary("mul", b, Const(float(fx_node.kwargs["alpha"])), self.shape(b)) \
                    if isinstance(b, int) else Const(b.value * fx_node.kwargs["alpha"])
            rounding = fx_node.kwargs.get("rounding_mode")
            if rounding is not None and name != "div" or rounding not in (None, "floor", "trunc"):
                raise _Uncovered(f"{name}(rounding_mode)")
            out = self.binary(name, a, b, shape)
            return out if rounding is None else self.add(rounding, [out], shape)
        if name in ("floor_divide", "floordiv"):
            return self.add("floor", [self.binary("div", args[0], args[1], shape)], shape)
        if (built := pointwise.composite(self, name, args, get, shape)) is not None:
            return built
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
        if name in pointwise.ACTIVATIONS:
            return pointwise.activation(self, name, x, get)
        if name in ("clamp", "clamp_min", "clamp_max") and any(
                isinstance(b, int) for b in (get(1, "min"), get(2, "max"))):
            return pointwise.clamp_by_tensors(self, name, x, get)
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
        if name in ("pow", "__pow__", "float_power"):
            if isinstance(args[1], Const) and isinstance(args[0], int):
                return self.unary("powc", x, exponent=args[1].value)
            return self.binary("pow", args[0], args[1], shape)
        if name == "__rpow__":
            return self.binary("pow", args[1], args[0], shape)
        if name in ("fmod", "remainder", "mod", "__mod__"):
            return self.binary("fmod" if name == "fmod" else "remainder", args[0], args[1],
                               shape)
        if name == "__rmod__":
            return self.binary("remainder", args[1], args[0], shape)
        if name in ("softmax", "log_softmax", "_softmax"):
            dim = get(1, "dim")
            return self.softmax(x, _int(dim), log=name == "log_softmax")
        if name in ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm",
                    "var", "std", "var_mean", "std_mean", "any", "all"):
            return self.reduction_call(fx_node, name, x, args, get)
        if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] == "shape":
            return _Shape(self.shape(args[0]))  # static: the problem's sizes are fixed
        if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] in ("device",
                                                                              "dtype"):
            return _TensorAttribute(fx_node.args[1])  # read by factories, never computed
        if name in ("dim", "ndimension") or name == "getattr" and fx_node.args[1] == "ndim":
            return Const(float(len(self.shape(args[0]))))
        if name in CASTS:
            return self.cast(fx_node, name, x)
        if name in ("chunk", "split", "tensor_split", "unbind"):
            return self.pieces(fx_node, name, x, get)
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
            if isinstance(pair, tuple) and not isinstance(pair, _Shape) \
                    and isinstance(index, int) and -len(pair) <= index < len(pair):
                return pair[index]
            return lowering.getitem(self, fx_node)
        if name == "layer_norm":
            normalized = get(1, "normalized_shape")
            return self.layer_norm(x, normalized, get(2, "weight"), get(3, "bias"),
                                   _f(get(4, "eps", 1e-5)))
        if name in ("matmul", "mm", "bmm"):
            return lowering.matmul(self, args[0], args[1])
        if name == "linear":  # F.linear(x, w, b) or F.linear(input=x, weight=w, bias=b)
            weight = get(1, "weight")
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

    def cast(self, fx_node, name, x):
        """Kernels compute in fp32 and store the output's dtype: a cast up computes nothing, a
        cast down to fp16/bf16 rounds there (as the reference does); casts to integers or
        bool change values and are not covered."""
        dtype = getattr(fx_node.meta.get("tensor_meta"), "dtype", None)
        source = getattr(fx_node.args[0].meta.get("tensor_meta"), "dtype", None) \
            if fx_node.args and hasattr(fx_node.args[0], "meta") else None
        if dtype is None or not dtype.is_floating_point:
            raise _Uncovered(f"{name} (a cast to {dtype})")
        rounding = {torch.float16: "round_fp16", torch.bfloat16: "round_bf16"}.get(dtype)
        if rounding is None or source == dtype:
            return x
        return self.unary(rounding, x)

    def pieces(self, fx_node, name, x, get):
        """chunk / split / tensor_split / unbind: a tuple of slices (getitem picks one)."""
        metas = fx_node.meta.get("tensor_meta")
        if not isinstance(metas, (list, tuple)) or not isinstance(x, int):
            raise _Uncovered(name)
        dim = int(_int(get(1 if name == "unbind" else 2, "dim", 0))) % len(self.shape(x))
        parts, start = [], 0
        for meta in metas:
            part_shape = tuple(meta.shape)
            if name == "unbind":
                parts.append(lowering.select(self, x, dim, start))
                start += 1
                continue
            size = part_shape[dim]
            parts.append(self.add("slice", [x], part_shape, dim=dim, start=start, step=1))
            start += size
        return tuple(parts)

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


CASTS = ("to", "type", "type_as", "half", "bfloat16", "double")


class _TensorAttribute(str):
    """A tensor's ``.device`` or ``.dtype`` flowing to a factory call's keyword."""


class _Shape(tuple):
    """A static shape (x.shape, x.size()) flowing through the traced graph."""

