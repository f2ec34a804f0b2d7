"""Module policy: allowed imports, forbidden builtins, dynamic attribute access and
attributes that reach interpreter internals, the process or private module trees."""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _const_attr_name, _describe, _dotted, _dunder, _flag, _outermost_chain,
)
from search_engine.evaluation.integrity.static_checks.descriptors import (
    descriptor_import_allowed,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    DYNAMIC_ATTR_BUILTINS, EVAL_ATTRS, FORBIDDEN_BUILTINS, FORBIDDEN_DUNDER_DEFS,
    HARMLESS_DUNDERS, INTROSPECTION_ATTRS, OVERRIDE_NAMES, PROCESS_ATTRS, _module_allowed,
)
from search_engine.evaluation.integrity.static_checks.verdicts import path_verdict
from search_engine.evaluation.result import IntegrityFlag


ALLOWED_IMPORTS_TEXT = ("only torch, torch.nn, torch.nn.functional, triton, triton.language "
                        "(and its libdevice/math submodules), math, typing, functools, "
                        "dataclasses and __future__ may be imported")


def _import_reason(name: str) -> str:
    if name.startswith("torch.utils.cpp_extension") or name == "torch.utils" \
            or name.startswith("torch.utils.cpp"):
        return (f"imports {name!r}: CUDA C++ (torch.utils.cpp_extension / load_inline) is not "
                "supported yet; candidates must launch Triton kernels")
    if name.split(".")[0] in {"numpy", "scipy", "cupy", "jax", "pandas"}:
        return f"imports {name!r}: host-side numerics outside the candidate's kernels; " \
               + ALLOWED_IMPORTS_TEXT
    return f"imports {name!r}: {ALLOWED_IMPORTS_TEXT}"


def check_forbidden_imports(ctx: StaticContext) -> list[IntegrityFlag]:
    """Imports are an allow-list; a try/except ImportError shim does not excuse them."""
    flags = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not _module_allowed(a.name):
                    flags.append(_flag("static.forbidden_import", node, _import_reason(a.name)))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                flags.append(_flag("static.forbidden_import", node,
                                   f"relative import from {'.' * node.level}{module}: "
                                   + ALLOWED_IMPORTS_TEXT))
                continue
            if descriptor_import_allowed(module, [a.name for a in node.names]):
                continue
            if not _module_allowed(module):
                flags.append(_flag("static.forbidden_import", node, _import_reason(module)))
                continue
            for a in node.names:
                if a.name == "*":
                    flags.append(_flag("static.forbidden_import", node,
                                       f"`from {module} import *` (names must be explicit)"))
                    continue
                if module == "__future__":
                    continue
                qualified = f"{module}.{a.name}"
                if _module_allowed(qualified):
                    continue
                verdict = path_verdict(qualified, ctx.facts.in_init(node))
                if verdict:
                    check, reason = verdict
                    if check == "static.forbidden_attribute":
                        check = "static.forbidden_import"
                    flags.append(_flag(check, node, f"`from {module} import {a.name}`: {reason}"))
    return flags


def check_forbidden_calls(ctx: StaticContext) -> list[IntegrityFlag]:
    """exec/eval/compile/open/__import__/... named anywhere (called or passed around)."""
    flags = []
    defined = ctx.facts.functions | set(ctx.facts.classes)
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id in FORBIDDEN_BUILTINS and node.id not in defined \
                and node.id not in ctx.aliases:
            parent = ctx.facts.parents.get(id(node))
            called = isinstance(parent, ast.Call) and parent.func is node
            flags.append(_flag("static.forbidden_call", node,
                               f"{'calls' if called else 'uses'} the builtin {node.id}"
                               + ("()" if called else "")))
    return flags


def check_dynamic_access(ctx: StaticContext) -> list[IntegrityFlag]:
    """getattr & co. with computed names, and module objects handed around as values."""
    flags = []
    facts = ctx.facts
    modules = {name for name, path in ctx.aliases.items() if _module_allowed(path)}
    defined = facts.functions | set(facts.classes)
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id in DYNAMIC_ATTR_BUILTINS and node.id not in defined:
            parent = facts.parents.get(id(node))
            if not (isinstance(parent, ast.Call) and parent.func is node):
                flags.append(_flag("static.dynamic_access", node,
                                   f"passes the builtin {node.id} around as a value"))
            elif _const_attr_name(parent) is None:
                flags.append(_flag("static.dynamic_access", parent,
                                   f"{_describe(parent)}: {node.id} with a computed attribute "
                                   "name (only constant names can be checked)"))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in modules:
            parent = facts.parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue
            if isinstance(parent, ast.Assign) and parent.value is node \
                    and all(isinstance(t, ast.Name) for t in parent.targets):
                continue  # `_t = torch`: tracked as an alias
            if isinstance(parent, ast.Call) and _dotted(parent.func) in DYNAMIC_ATTR_BUILTINS \
                    and parent.args and parent.args[0] is node:
                continue  # getattr(torch, 'x'): judged as torch.x
            flags.append(_flag("static.dynamic_access", node,
                               f"the module {ctx.aliases[node.id]} is used as a value "
                               f"({_describe(parent) if parent is not None else node.id}): "
                               "modules may only be used through their attributes"))
        elif isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)) \
                and isinstance(getattr(node, "ctx", ast.Load()), ast.Load) \
                and _names_a_module(facts.resolve(node)):
            parent = facts.parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # `torch.nn.functional.softmax`: judged as a path
            if isinstance(parent, ast.Assign) and parent.value is node \
                    and all(isinstance(t, ast.Name) for t in parent.targets):
                continue  # `F = torch.nn.functional`: tracked as an alias
            if isinstance(parent, ast.Call) and _dotted(parent.func) in DYNAMIC_ATTR_BUILTINS \
                    and parent.args and parent.args[0] is node:
                continue
            flags.append(_flag("static.dynamic_access", node,
                               f"the module {facts.resolve(node)} is used as a value "
                               f"({_describe(parent) if parent is not None else ''}): modules "
                               "may only be used through their attributes"))
        elif isinstance(node, ast.Global):
            bound = [n for n in node.names if n in facts.import_bound]
            if bound:
                flags.append(_flag("static.monkeypatch", node,
                                   f"`global {', '.join(bound)}` rebinds imported modules"))
    return flags


def _names_a_module(path: str) -> bool:
    """Does the qualified name `path` (rooted at an allowed module) name a module object?"""
    import importlib
    import types

    from search_engine.evaluation.integrity.static_checks.verdicts import _walk_static

    if not path or "." not in path or not _module_allowed(path.split(".")[0]):
        return False
    try:
        root = importlib.import_module(path.split(".")[0])
    except ImportError:
        return False
    return isinstance(_walk_static(root, path.split(".")[1:]), types.ModuleType)


def check_forbidden_attributes(ctx: StaticContext) -> list[IntegrityFlag]:
    """Dunders, frames and introspection, private or module-reaching attributes."""
    flags = []
    facts = ctx.facts
    defined = _defined_names(ctx)
    for node in ast.walk(ctx.tree):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Call) and _dotted(node.func) in DYNAMIC_ATTR_BUILTINS:
            name = _const_attr_name(node)
        if name is not None:
            if name in OVERRIDE_NAMES:
                continue  # check_torch_override
            if (_dunder(name) and name not in HARMLESS_DUNDERS) or name in INTROSPECTION_ATTRS:
                flags.append(_flag("static.forbidden_attribute", node,
                                   f"{_describe(node)}: {name} reaches interpreter internals "
                                   "(frames, globals, classes, builtins)"))
            elif name in PROCESS_ATTRS:
                flags.append(_flag("static.forbidden_attribute", node,
                                   f"{_describe(node)}: {name} reaches the process or its "
                                   "environment"))
            elif name in EVAL_ATTRS:
                flags.append(_flag("static.forbidden_attribute", node,
                                   f"{_describe(node)}: {name} turns strings into code, "
                                   "modules or attributes the checks never read"))
            elif _foreign_private(ctx, node, name, defined):
                flags.append(_flag("static.forbidden_attribute", node,
                                   f"{_describe(node)}: {name} is a private attribute of an "
                                   "object the candidate did not define (library internals: "
                                   "a kernel's source, a module's registry, ...)"))
            continue
        if isinstance(node, ast.Name) and _dunder(node.id) and node.id not in HARMLESS_DUNDERS:
            flags.append(_flag("static.forbidden_attribute", node,
                               f"uses {node.id}, an interpreter internal"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name in FORBIDDEN_DUNDER_DEFS:
            flags.append(_flag("static.forbidden_attribute", node,
                               f"defines {node.name}, which changes how the evaluator sees, "
                               "copies or serialises an object"))
    # module paths: torch.os, torch._C, triton.runtime, ...
    for node in ast.walk(ctx.tree):
        if facts.in_kernel(node):
            continue  # check_kernel_bodies
        path = ""
        if isinstance(node, ast.Attribute) and _outermost_chain(node, facts.parents) \
                and isinstance(node.ctx, ast.Load):
            path = facts.resolve(node)
        elif isinstance(node, ast.Call) and _dotted(node.func) in {"getattr", "hasattr"} \
                and node.args and _const_attr_name(node):
            base = facts.resolve(node.args[0])
            path = f"{base}.{_const_attr_name(node)}" if base else ""
        if path and _module_allowed(path.split(".")[0]):  # others: check_forbidden_imports
            verdict = path_verdict(path, facts.in_init(node))
            if verdict and verdict[0] == "static.forbidden_attribute":
                flags.append(_flag(verdict[0], node, verdict[1]))
    return flags


def _defined_names(ctx: StaticContext) -> set[str]:
    """Every name the candidate binds itself: definitions, class members, attributes it
    assigns or registers, module-level names, parameters."""
    facts = ctx.facts
    out = set(facts.functions) | set(facts.classes) | set(facts.self_attrs)
    for members in facts.classes.values():
        out |= members
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" \
                and _const_attr_name(node):
            out.add(_const_attr_name(node))
    return out


def _foreign_private(ctx: StaticContext, node: ast.AST, name: str, defined: set[str]) -> bool:
    """`obj._x` on the host where `_x` is nothing the candidate defined: a library's
    internals (JITFunction._unsafe_update_src, Module._modules, ...). Module paths are judged
    by path_verdict, jit bodies by check_kernel_bodies, dunders above."""
    if not name.startswith("_") or _dunder(name) or name in defined \
            or ctx.facts.in_kernel(node):
        return False
    receiver = node.value if isinstance(node, ast.Attribute) else (
        node.args[0] if isinstance(node, ast.Call) and node.args else None)
    return receiver is not None and not ctx.facts.resolve(receiver)
