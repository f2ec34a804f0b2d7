"""Kernel checks: a `ModelNew` exists, a @triton.jit kernel is defined and launched, and the
jit bodies use Triton only."""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    Facts, StaticContext, _describe, _dunder, _flag, _outermost_chain,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    KERNEL_BUILTINS, TRITON_ALLOWED, kernel_attrs,
)
from search_engine.evaluation.integrity.static_checks.verdicts import _walk_static, path_verdict
from search_engine.evaluation.result import IntegrityFlag


def check_defines_modelnew(ctx: StaticContext) -> list[IntegrityFlag]:
    if any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ctx.tree.body):
        return []
    return [_flag("static.missing_modelnew", None, "the candidate defines no class ModelNew")]


def _kernel_names(tree: ast.Module) -> set[str]:
    return {k.name for k in Facts.of(tree).kernels}


def _launched_names(tree: ast.Module) -> set[str]:
    """Names launched as `kernel[grid](...)`."""
    return {
        node.func.value.id for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
    }


def check_uses_triton_kernel(ctx: StaticContext) -> list[IntegrityFlag]:
    kernels = {k.name for k in ctx.facts.kernels}
    if not kernels:
        return [_flag("static.no_triton_kernel", None,
                      "no @triton.jit kernel is defined: the work is not done by the candidate's "
                      "own kernels")]
    if not kernels & _launched_names(ctx.tree):
        return [_flag("static.kernel_never_launched", None,
                      f"kernels {sorted(kernels)} are defined but never launched as kernel[grid](...)")]
    return []


def check_kernel_bodies(ctx: StaticContext) -> list[IntegrityFlag]:
    """Inside @triton.jit bodies only Triton: under TRITON_INTERPRET=1 a jit body runs as plain
    Python, so torch, numpy or any other callable there would do the work on the host."""
    flags = []
    facts = ctx.facts
    jit_names = {k.name for k in facts.kernels}
    triton_like = {name for name, path in ctx.aliases.items()
                   if path in TRITON_ALLOWED or path.startswith("triton.language")
                   or path == "math"}
    for kernel in facts.kernels:
        args = kernel.args
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        local = set()
        for stmt in kernel.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    local.add(node.id)
        allowed = params | local | jit_names | facts.constants | triton_like | KERNEL_BUILTINS
        for stmt in kernel.body:
            for node in ast.walk(stmt):
                flag = _kernel_node_flag(ctx, kernel, node, allowed)
                if flag:
                    flags.append(flag)
    return flags


def _kernel_node_flag(ctx: StaticContext, kernel: ast.FunctionDef, node: ast.AST,
                      allowed: set[str]) -> IntegrityFlag | None:
    facts = ctx.facts
    where = f"in kernel {kernel.name}: "
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef,
                         ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Try,
                         ast.With, ast.AsyncWith, ast.Yield, ast.YieldFrom, ast.Await)):
        return _flag("static.kernel_escape", node,
                     where + f"{type(node).__name__.lower()} statements are not Triton")
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in allowed:
        what = ctx.aliases.get(node.id, node.id)
        return _flag("static.kernel_escape", node,
                     where + f"uses {what!r}, which is not a parameter, a local, a module "
                     "constant, another @triton.jit function or triton.language")
    if isinstance(node, ast.Attribute):
        if not _outermost_chain(node, facts.parents) and facts.resolve(node):
            return None
        path = facts.resolve(node)
        if path:
            root = path.split(".")[0]
            if path.startswith("triton.language") or path in TRITON_ALLOWED:
                verdict = path_verdict(path) if path.startswith("triton.language.") else None
                if verdict:
                    return _flag("static.kernel_escape", node, where + verdict[1])
                return None
            if root == "math":
                obj = _walk_static(__import__("math"), path.split(".")[1:])
                if isinstance(obj, float):
                    return None
            return _flag("static.kernel_escape", node,
                         where + f"uses {path} (only triton.language runs in a kernel)")
        if node.attr not in kernel_attrs() or _dunder(node.attr):
            return _flag("static.kernel_escape", node,
                         where + f"{_describe(node)}: .{node.attr} is not an attribute of a "
                         "Triton tensor, pointer or dtype")
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Call, ast.Subscript)):
        return _flag("static.kernel_escape", node,
                     where + f"{_describe(node)}: only Triton functions may be called")
    return None
