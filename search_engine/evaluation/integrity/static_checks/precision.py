"""One semantics on the CPU and the GPU: what the interpreter computes differently.

Under TRITON_INTERPRET=1 `tl.dot` multiplies in full fp32 whatever `input_precision` says,
and libdevice's `fast_*` approximations, inline PTX and scaled low-precision dots have no
faithful CPU counterpart. So a kernel can pass strict fp32 on the interpreter and fail (or
compute something else) on the GPU. Under the `strict` policy of an fp32 problem such code
is refused before it runs (`static.precision_mismatch`):

- `tl.dot` must say `input_precision="ieee"` or `"tf32x3"` (3xTF32 keeps fp32 accuracy, the
  offline synthesizer's strict GEMMs use it) or `allow_tf32=False`; its GPU default is TF32.
  A constexpr parameter is followed to every value the file binds it to (launch keywords or
  positions, `triton.Config` dicts, the default): each must be one of those constants.
- `fast_*` math, `inline_asm_elementwise` and `dot_scaled` are refused.

The `tf32` and `bf16` policies accept all of these (their tolerance covers TF32 and fast math).
"""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _describe, _flag,
)
from search_engine.evaluation.result import IntegrityFlag

STRICT_DOT_PRECISIONS = {"ieee", "tf32x3"}
APPROXIMATE_NAMES = {"inline_asm_elementwise", "dot_scaled"}
_DOT_PATHS = {"triton.language.dot", "triton.language.core.dot"}
_PRECISION_POSITION = 3  # tl.dot(input, other, acc, input_precision, allow_tf32, ...)


def check_precision_semantics(ctx: StaticContext) -> list[IntegrityFlag]:
    if ctx.precision_policy != "strict" or ctx.problem_dtype not in ("float32", "float64"):
        return []
    flags = []
    facts = ctx.facts
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call) and _is_dot(ctx, node.func):
            flag = _dot_flag(ctx, node)
            if flag:
                flags.append(flag)
        elif isinstance(node, ast.Attribute):
            path = facts.resolve(node)
            name = node.attr
            if path.startswith("triton.language") and (name.startswith("fast_")
                                                        or name in APPROXIMATE_NAMES):
                flags.append(_flag("static.precision_mismatch", node,
                                   f"{_describe(node)}: an approximation the interpreter does "
                                   "not reproduce; refused under the strict fp32 policy "
                                   "(choose the tf32 policy to allow it)"))
    return flags


def _is_dot(ctx: StaticContext, func: ast.AST) -> bool:
    return ctx.facts.resolve(func) in _DOT_PATHS


def _dot_flag(ctx: StaticContext, call: ast.Call) -> IntegrityFlag | None:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    precision = keywords.get("input_precision")
    if precision is None and len(call.args) > _PRECISION_POSITION:
        precision = call.args[_PRECISION_POSITION]
    if precision is not None and not (isinstance(precision, ast.Constant)
                                      and precision.value is None):
        bad = _values_outside(ctx, call, precision, STRICT_DOT_PRECISIONS)
        if not bad:
            return None
        return _flag("static.precision_mismatch", call,
                     f"{_describe(call)}: input_precision may be {', '.join(sorted(bad))}; "
                     "the interpreter multiplies in fp32 whatever it says, the GPU does not. "
                     "Under the strict fp32 policy use 'ieee' or 'tf32x3' (or the tf32 policy)")
    allow = keywords.get("allow_tf32")
    if allow is not None and not _values_outside(ctx, call, allow, {False}):
        return None
    return _flag("static.precision_mismatch", call,
                 f"{_describe(call)}: tl.dot on fp32 defaults to TF32 on the GPU while the "
                 "interpreter multiplies in fp32; under the strict fp32 policy say "
                 "input_precision='ieee' or 'tf32x3' (or choose the tf32 policy)")


def _values_outside(ctx: StaticContext, call: ast.Call, node: ast.AST, allowed: set) -> set[str]:
    """The values `node` may take that are not in `allowed` ('<computed>' when unknown)."""
    values = _possible_values(ctx, call, node)
    if values is None:
        return {"<computed>"}
    return {repr(v) for v in values if v not in allowed}


def _possible_values(ctx: StaticContext, call: ast.Call, node: ast.AST) -> list | None:
    if isinstance(node, ast.Constant):
        return [node.value]
    if not isinstance(node, ast.Name):
        return None
    kernel = _enclosing_kernel(ctx, call)
    params = [a.arg for a in kernel.args.args] if kernel is not None else []
    if node.id not in params:
        return _module_constant(ctx, node.id)
    return _bound_values(ctx, kernel, node.id, params.index(node.id))


def _enclosing_kernel(ctx: StaticContext, node: ast.AST) -> ast.FunctionDef | None:
    for kernel in ctx.facts.kernels:
        if any(n is node for n in ast.walk(kernel)):
            return kernel
    return None


def _module_constant(ctx: StaticContext, name: str) -> list | None:
    found = []
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in stmt.targets):
            if not isinstance(stmt.value, ast.Constant):
                return None
            found.append(stmt.value.value)
    return found or None


def _bound_values(ctx: StaticContext, kernel: ast.FunctionDef, name: str,
                  position: int) -> list | None:
    """Every value the file gives the kernel parameter `name`; None when one is computed
    (or when none is found: then the value comes from somewhere this check cannot see)."""
    nodes: list[ast.AST] = []
    defaults = kernel.args.defaults
    first_default = len(kernel.args.args) - len(defaults)
    if position >= first_default:
        nodes.append(defaults[position - first_default])
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call):
            nodes.extend(k.value for k in node.keywords if k.arg == name)
            if isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == kernel.name:
                if len(node.args) > position:
                    nodes.append(node.args[position])
                if any(k.arg is None for k in node.keywords) \
                        or any(isinstance(a, ast.Starred) for a in node.args):
                    return None  # *args / **kwargs at the launch: the value is out of sight
        elif isinstance(node, ast.Dict):
            nodes.extend(v for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and k.value == name)
    values = []
    for value in nodes:
        if isinstance(value, ast.Constant):
            values.append(value.value)
        elif isinstance(value, ast.Name) and _module_constant(ctx, value.id) is not None:
            values.extend(_module_constant(ctx, value.id))
        else:
            return None
    return values or None
