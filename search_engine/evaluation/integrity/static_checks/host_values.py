"""Host compute that is not a torch call: operators and builtins on tensors, and code that
borrows the __init__ exemption at forward time.

`x + 1`, `-x`, `x ** 2`, `abs(x)`, `sum(xs)`, `max(a, b)`, `sorted(t)` on a torch tensor are
torch kernels launched from the host as surely as `torch.add`. A light inference marks what
is a tensor (forward's inputs, what torch allocations / tensor methods / parameters give,
what flows from them into the candidate's own functions) and flags operators and builtins
applied to one outside the kernels and outside an nn.Module's __init__ (`static.torch_compute`).
Shapes, strides and counts (`x.shape[0] * 2`, `triton.cdiv(n, B)`) are plain integers.

The __init__ exemption (any public torch API may create parameters) belongs to an nn.Module's
construction only: constructing a candidate module, calling an init method, or calling a
method unbound with some other receiver from host code outside __init__ is flagged too.
"""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _describe, _dotted, _flag, _host_nodes,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    INIT_METHODS, TORCH_ALLOWED, TORCH_NON_TENSOR_CALLS,
)
from search_engine.evaluation.result import IntegrityFlag

TENSOR_BUILTINS = {"abs", "sum", "max", "min", "pow", "divmod", "sorted", "round", "any", "all",
                   "map", "filter", "reversed", "iter", "next", "complex"}
# Tensor methods that answer with Python scalars or metadata, not tensors.
SCALAR_METHODS = {"size", "stride", "numel", "nelement", "dim", "ndimension", "element_size",
                  "data_ptr", "storage_offset", "is_contiguous", "is_floating_point",
                  "is_complex", "get_device", "index", "count", "keys", "items", "values"}
SCALAR_ATTRS = {"shape", "ndim", "dtype", "device", "layout", "is_cuda", "itemsize", "nbytes",
                "requires_grad", "training", "type", "element_ty"}
_TENSOR_TORCH = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.arange",
    "torch.tensor", "torch.nn.Parameter", "torch.nn.Buffer", "torch.Tensor"}
TENSOR_ATTRS = {"data", "T", "mT", "H", "mH", "grad", "real", "imag", "weight", "bias"}
# torch paths whose calls never answer with a tensor; every other torch call may (the
# allocators, nn.Parameter / nn.Buffer / torch.Tensor wrapping one, torch.as_tensor, ...).
_NOT_TENSOR_TORCH = TORCH_NON_TENSOR_CALLS | (TORCH_ALLOWED - _TENSOR_TORCH)
_SKIP_COMPARE = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


class TensorValues:
    """Which expressions of the candidate's host code hold torch tensors (an over-approximation
    of nothing: what is not known to be a tensor is not flagged)."""

    def __init__(self, ctx: StaticContext):
        self.ctx, self.facts = ctx, ctx.facts
        self.names: set[tuple[int, str]] = set()  # (scope, name) bound to tensors
        self.attrs: set[str] = set()   # self.<x> bound to tensors / parameters / buffers
        self._functions = {n.name: n for n in ast.walk(ctx.tree)
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and not self.facts.in_kernel(n) and n not in self.facts.kernels}
        for fn in self._functions.values():
            if fn.name == "forward":
                args = (fn.args.posonlyargs + fn.args.args)[1:] + fn.args.kwonlyargs
                args += [fn.args.vararg] if fn.args.vararg else []
                self.names.update((id(fn), a.arg) for a in args)
        for _ in range(6):  # to a fixpoint: assignments, calls into the candidate's functions
            before = (len(self.names), len(self.attrs))
            self._propagate()
            if (len(self.names), len(self.attrs)) == before:
                break

    def _propagate(self) -> None:
        for node in ast.walk(self.ctx.tree):
            if self.facts.in_kernel(node):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) \
                    and node.value is not None and self.holds(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    self._bind(t)
            elif isinstance(node, (ast.For, ast.comprehension)) and self.holds(node.iter):
                self._bind(node.target)
            elif isinstance(node, ast.Call):
                callee = self._functions.get(_dotted(node.func).split(".")[-1])
                if callee is None:
                    continue
                params = callee.args.posonlyargs + callee.args.args
                offset = 1 if params and params[0].arg in {"self", "cls"} \
                    and isinstance(node.func, ast.Attribute) else 0
                for i, arg in enumerate(node.args):
                    if self.holds(arg) and i + offset < len(params):
                        self.names.add((id(callee), params[i + offset].arg))
                by_name = {a.arg for a in params + callee.args.kwonlyargs}
                for k in node.keywords:
                    if k.arg in by_name and self.holds(k.value):
                        self.names.add((id(callee), k.arg))

    def _bind(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.names.add((self._scopes(target)[0], target.id))
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "self":
            self.attrs.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._bind(elt)
        elif isinstance(target, ast.Starred):
            self._bind(target.value)

    def _scopes(self, node: ast.AST) -> list[int]:
        """The functions (innermost first, then the module: 0) whose names `node` sees."""
        out = []
        current = self.facts.parents.get(id(node))
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out.append(id(current))
            current = self.facts.parents.get(id(current))
        return out + [0]

    def holds(self, node: ast.AST) -> bool:
        """Is `node` a tensor, or a container / iterator holding one?"""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self.holds(e) for e in node.elts)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self.holds(node.elt) or any(self.holds(g.iter) for g in node.generators)
        if isinstance(node, ast.Starred):
            return self.holds(node.value)
        return self.is_tensor(node)

    def is_tensor(self, node: ast.AST) -> bool:
        facts = self.facts
        if isinstance(node, ast.Name):
            return any((scope, node.id) in self.names for scope in self._scopes(node))
        if isinstance(node, ast.NamedExpr):
            return self.is_tensor(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in SCALAR_ATTRS:
                return False
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr in self.attrs
            return node.attr in TENSOR_ATTRS and (self.is_tensor(node.value)
                                                   or _is_self_attr(node.value))
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return False  # META['BLOCK'], a dict's entry
            return self.holds(node.value)
        if isinstance(node, ast.Call):
            path = facts.resolve(node.func)
            if path:
                return (path.startswith("torch.") and path not in _NOT_TENSOR_TORCH
                        and not path.startswith(("torch.nn.functional", "torch.cuda"))
                        and path.split(".")[-1][:1].islower()) or path in _TENSOR_TORCH
            if isinstance(node.func, ast.Attribute):
                if node.func.attr in SCALAR_METHODS:
                    return False
                return self.is_tensor(node.func.value)
            if isinstance(node.func, ast.Name) and node.func.id in TENSOR_BUILTINS:
                return any(self.holds(a) for a in node.args)
            return False
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.is_tensor(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) or self.is_tensor(node.orelse)
        return False


def _is_self_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


def check_host_operators(ctx: StaticContext) -> list[IntegrityFlag]:
    facts = ctx.facts
    values = TensorValues(ctx)
    flags = []
    for node in _host_nodes(ctx):
        if facts.in_init(node):
            continue
        hit = None
        if isinstance(node, ast.BinOp) and (values.is_tensor(node.left)
                                            or values.is_tensor(node.right)):
            hit = "an arithmetic operator on a tensor"
        elif isinstance(node, ast.AugAssign) and (values.is_tensor(node.target)
                                                  or values.is_tensor(node.value)):
            hit = "an in-place operator on a tensor"
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) \
                and values.is_tensor(node.operand):
            hit = "a unary operator on a tensor"
        elif isinstance(node, ast.Compare) and not all(isinstance(o, _SKIP_COMPARE)
                                                       for o in node.ops) \
                and any(values.is_tensor(v) for v in (node.left, *node.comparators)):
            hit = "a comparison of tensors (an elementwise torch op)"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in TENSOR_BUILTINS and node.func.id not in facts.functions \
                and any(values.holds(a) for a in node.args):
            hit = f"the builtin {node.func.id}() on tensors"
        if hit:
            flags.append(_flag("static.torch_compute", node,
                               f"{_describe(node)}: {hit} is torch compute on the host, outside "
                               "the candidate's kernels"))
    flags += _borrowed_init(ctx)
    return flags


def _borrowed_init(ctx: StaticContext) -> list[IntegrityFlag]:
    """Constructing a candidate module or calling an init method (or any method unbound,
    with another receiver) from host code outside __init__: the construction's exemption
    would travel into forward."""
    facts = ctx.facts
    flags = []
    modules = {name for name in facts.class_nodes if facts.is_module_class(name)}
    for node in _host_nodes(ctx):
        if not isinstance(node, ast.Call) or facts.in_init(node) \
                or facts.method_of(node) is None and _at_module_level(ctx, node):
            continue
        func = node.func
        what = None
        if isinstance(func, ast.Name) and func.id in modules:
            what = f"constructs {func.id}, whose __init__ may use any torch API"
        elif isinstance(func, ast.Attribute) and func.attr in INIT_METHODS - {"__init__"}:
            what = f"calls {func.attr}() outside __init__"
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in facts.class_nodes \
                and func.attr in facts.classes.get(func.value.id, set()):
            method = facts.method_of(node)
            receiver = node.args[0] if node.args else None
            if not (method and isinstance(receiver, ast.Name) and receiver.id == method[1]):
                what = f"calls {func.value.id}.{func.attr} unbound with another receiver"
        if what:
            flags.append(_flag("static.torch_compute", node, f"{_describe(node)}: {what}"))
    return flags


def _at_module_level(ctx: StaticContext, node: ast.AST) -> bool:
    current = ctx.facts.parents.get(id(node))
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        current = ctx.facts.parents.get(id(current))
    return True
