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


def _launched_names(tree: ast.Module, kernels: set[str] | None = None) -> set[str]:
    """Kernels launched as `E[grid](...)`, where E is the kernel, or any expression naming it:
    a dispatch table (`TABLE[key][grid](...)`), a conditional, a name, self attribute or
    parameter bound to it (`self.kernel = k`, `for k in (a, b)`, `def go(k): k[grid](...)`).
    Over-approximated on purpose: a runtime check verifies that the candidate's own kernels
    really run."""
    if kernels is None:
        kernels = _kernel_names(tree)
    bindings = _bindings(tree)
    launched: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            launched |= _kernels_named(node.func.value, kernels, bindings, set())
    return launched


def _binding_key(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _bindings(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """name / obj.attr -> the expressions bound to it (assignments, loops, with, the
    arguments of calls to the candidate's functions)."""
    out: dict[str, list[ast.AST]] = {}

    def bind(target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                bind(elt, value)
            return
        if isinstance(target, ast.Starred):
            target = target.value
        key = _binding_key(target)
        if key:
            out.setdefault(key, []).append(value)
        elif isinstance(target, ast.Subscript):  # TABLE[key] = kernel
            bind(target.value, value)

    functions = {n.name: n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                bind(t, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) \
                and node.value is not None:
            bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, node.iter)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, node.context_expr)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            fn = functions.get(name)
            if fn is not None:
                params = [a.arg for a in fn.args.posonlyargs + fn.args.args
                          + fn.args.kwonlyargs]
                for value in list(node.args) + [k.value for k in node.keywords]:
                    for p in params:  # any parameter may receive it (over-approximated)
                        out.setdefault(p, []).append(value)
            if isinstance(node.func, ast.Attribute) and node.func.attr in {
                    "append", "extend", "insert", "update", "setdefault", "add"}:
                for value in list(node.args) + [k.value for k in node.keywords]:
                    bind(node.func.value, value)
    return out


def _kernels_named(expr: ast.AST, kernels: set[str], bindings: dict[str, list[ast.AST]],
                   seen: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(expr):
        key = _binding_key(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
        if isinstance(node, ast.Name) and node.id in kernels:
            found.add(node.id)
        if key and key not in seen:
            seen.add(key)
            for value in bindings.get(key, ()):
                found |= _kernels_named(value, kernels, bindings, seen)
    return found


def check_uses_triton_kernel(ctx: StaticContext) -> list[IntegrityFlag]:
    kernels = {k.name for k in ctx.facts.kernels}
    if not kernels:
        return [_flag("static.no_triton_kernel", None,
                      "no @triton.jit kernel is defined: the work is not done by the candidate's "
                      "own kernels")]
    if not kernels & _launched_names(ctx.tree, kernels):
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
