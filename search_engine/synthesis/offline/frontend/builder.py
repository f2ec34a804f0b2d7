"""Build the op graph node by node, and expand composite ops into the primitives the
templates know (mean and var → sum, div; softmax → max, sub, exp, sum, div; layer norm →
mean, var, rsqrt, ...).

`_GraphBuilder` is the base of the fx tracer (`translator._Translator`); the op
lowerings (`lowering.py`) call its methods and the argument helpers below.
"""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend.ir import Const, IRNode


class _Uncovered(Exception):
    pass


def _f(value) -> float | None:
    if value is None:
        return None
    return float(value.value if isinstance(value, Const) else value)


def _int(value):
    return int(value.value) if isinstance(value, Const) else value


def _dims(dim):
    if dim is None or isinstance(dim, (list, tuple)):
        return dim
    return _int(dim)


def _norm_dims(dims, rank: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(rank))
    if isinstance(dims, Const):
        dims = int(dims.value)
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted({int(_int(d)) % rank for d in dims}))


class _GraphBuilder:
    """Appends IR nodes (ids in creation order, so operands always come first)."""

    def __init__(self):
        self.nodes: dict[int, IRNode] = {}

    def add(self, op, operands, shape, dtype=torch.float32, **attrs) -> int:
        node_id = len(self.nodes)
        self.nodes[node_id] = IRNode(node_id, op, list(operands), attrs, tuple(shape), dtype)
        return node_id

    def shape(self, ref) -> tuple[int, ...]:
        return self.nodes[ref].shape if isinstance(ref, int) else ()

    def binary(self, op, a, b, shape):
        return self.add(op, [a, b], shape)

    def unary(self, op, x, shape=None, **attrs):
        return self.add(op, [x], shape if shape is not None else self.shape(x), **attrs)

    def reduce(self, kind, x, dims, keepdim):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        out = [1 if d in dims else s for d, s in enumerate(in_shape)]
        if not keepdim:
            out = [s for d, s in enumerate(in_shape) if d not in dims]
        dtype = torch.int64 if kind in ("argmax", "argmin") else torch.float32
        return self.add(kind, [x], out, dtype, dims=dims, keepdim=keepdim,
                        in_shape=tuple(in_shape))

    def mean(self, x, dims, keepdim):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        count = math.prod(in_shape[d] for d in dims)
        total = self.reduce("sum", x, dims, keepdim)
        return self.binary("div", total, Const(float(count)), self.shape(total))

    def var(self, x, dims, keepdim, correction=1.0):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        count = math.prod(in_shape[d] for d in dims)
        mu = self.mean(x, dims, True)
        centered = self.binary("sub", x, mu, in_shape)
        sq = self.unary("square", centered)
        total = self.reduce("sum", sq, dims, keepdim)
        return self.binary("div", total, Const(float(max(count - correction, 1))),
                           self.shape(total))

    def param(self, path, tensor) -> int:
        return self.add("param", [], tuple(tensor.shape), tensor.dtype, path=path)

    def softmax(self, x, dim, log=False):
        if dim is None:
            raise _Uncovered("softmax without dim")
        in_shape = self.shape(x)
        dims = _norm_dims(dim, len(in_shape))
        peak = self.reduce("max", x, dims, True)
        shifted = self.binary("sub", x, peak, in_shape)
        ex = self.unary("exp", shifted)
        total = self.reduce("sum", ex, dims, True)
        if log:
            return self.binary("sub", shifted, self.unary("log", total), in_shape)
        return self.binary("div", ex, total, in_shape)

    def layer_norm(self, x, normalized_shape, weight, bias, eps):
        in_shape = self.shape(x)
        count = len(tuple(normalized_shape)) if not isinstance(normalized_shape, int) else 1
        dims = tuple(range(len(in_shape) - count, len(in_shape)))
        mu = self.mean(x, dims, True)
        centered = self.binary("sub", x, mu, in_shape)
        variance = self.mean(self.unary("square", centered), dims, True)
        inv = self.unary("rsqrt", self.binary("add", variance, Const(eps), self.shape(variance)))
        out = self.binary("mul", centered, inv, in_shape)
        if isinstance(weight, int):
            out = self.binary("mul", out, weight, in_shape)
        if isinstance(bias, int):
            out = self.binary("add", out, bias, in_shape)
        return out


def _get_attr(module, target: str):
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
