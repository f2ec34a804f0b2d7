"""Tampering with the evaluator: try/except fallbacks, monkeypatching modules (timers
included) and torch function/dispatch overrides."""

from __future__ import annotations

import ast

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _const_attr_name, _describe, _dotted, _flag,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    OVERRIDE_NAMES, TIMER_NAMES, TORCH_SUBCLASS_BASES, _module_allowed,
)
from search_engine.evaluation.integrity.static_checks.verdicts import path_verdict
from search_engine.evaluation.result import IntegrityFlag


def check_try_except_fallback(ctx: StaticContext) -> list[IntegrityFlag]:
    """A try/except around the kernel lets a failing kernel silently fall back to torch.

    A version shim (`try: import X / except ImportError: import Y`) is not a fallback: the
    imports themselves are judged by check_forbidden_imports."""
    flags = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Try) and node.handlers:
            only_reraise = all(
                len(h.body) == 1 and isinstance(h.body[0], ast.Raise) for h in node.handlers
            )
            if not only_reraise and not _is_import_shim(ctx, node):
                flags.append(_flag("static.try_except_fallback", node,
                                   "try/except whose handler does something other than re-raise: "
                                   "a failing kernel could fall back to another implementation"))
    return flags


def _is_import_shim(ctx: StaticContext, node: ast.Try) -> bool:
    def shim_body(stmts) -> bool:
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)):
                continue
            if isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets) \
                    and (isinstance(s.value, ast.Constant) or ctx.facts.resolve(s.value)):
                continue
            return False
        return True

    def catches_import_error(handler: ast.ExceptHandler) -> bool:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names = {_dotted(k) for k in kinds if k is not None}
        return names <= {"ImportError", "ModuleNotFoundError", "AttributeError"} \
            and bool(names & {"ImportError", "ModuleNotFoundError"})

    return (any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body)
            and shim_body(node.body) and shim_body(node.orelse) and shim_body(node.finalbody)
            and all(catches_import_error(h) and shim_body(h.body) for h in node.handlers))


def check_monkeypatching(ctx: StaticContext) -> list[IntegrityFlag]:
    """Assigning to attributes of imported modules (timers, torch, triton) is tampering."""
    flags = []
    facts = ctx.facts

    def root_path(target: ast.AST) -> str:
        node = target
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if isinstance(node, ast.Name) and node.id in ctx.aliases:
            return facts.resolve(target.value if isinstance(target, ast.Subscript)
                                 else target) or ctx.aliases[node.id]
        return ""

    def report(node: ast.AST, target_text: str, parts: list[str]) -> None:
        timer = any(p in TIMER_NAMES for p in parts[1:])
        flags.append(_flag(
            "static.timer_patch" if timer else "static.monkeypatch", node,
            f"assigns to {target_text!r}"
            + (" (a timer or synchronization primitive)" if timer else
               " (patching a library changes what the evaluator measures)")))

    kernels = {k.name for k in facts.kernels}

    def kernel_patch(node: ast.AST, name: str) -> None:
        # a jit function's fn / src / cache: what runs would no longer be the checked body
        flags.append(_flag("static.monkeypatch", node,
                           f"{_describe(node)}: changes an attribute of the kernel {name} "
                           "(its function, source or caches are Triton's machinery)"))

    for node in ast.walk(ctx.tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, ast.Call) and _dotted(node.func) in {"setattr", "delattr"} \
                and node.args:
            base = facts.resolve(node.args[0])
            if base:
                name = _const_attr_name(node) or "<computed>"
                report(node, f"{base}.{name}", (base + "." + name).split("."))
            elif isinstance(node.args[0], ast.Name) and node.args[0].id in kernels:
                kernel_patch(node, node.args[0].id)
            continue
        flat = []
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
            elif isinstance(t, ast.Starred):
                targets.append(t.value)
            else:
                flat.append(t)
        for sub in flat:
            root = sub
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if sub is not root and isinstance(root, ast.Name) and root.id in kernels:
                kernel_patch(node, root.id)
                continue
            if isinstance(sub, (ast.Attribute, ast.Subscript)):
                path = root_path(sub)
                if path:
                    dotted = facts.resolve(sub) or _describe(sub)
                    report(node, dotted, (path + "." + dotted).split("."))
            elif isinstance(sub, ast.Name) and sub.id in facts.import_bound \
                    and not isinstance(node, ast.Delete):
                value = getattr(node, "value", None)
                path = facts.resolve(value) if value is not None else ""
                if path and (_module_allowed(path) or path_verdict(path) is None):
                    continue  # a shim rebinding to another allowed module or name
                handler = facts.parents.get(id(node))
                shim = facts.parents.get(id(handler))
                if isinstance(handler, ast.ExceptHandler) and isinstance(shim, ast.Try) \
                        and _is_import_shim(ctx, shim):
                    continue  # `except ImportError: libdevice = None`
                flags.append(_flag("static.monkeypatch", node,
                                   f"rebinds {sub.id!r}, the name of the imported "
                                   f"{ctx.aliases.get(sub.id, sub.id)}"))
    return flags


def check_torch_override(ctx: StaticContext) -> list[IntegrityFlag]:
    """Tensor subclasses and __torch_function__/__torch_dispatch__ intercept torch itself."""
    flags = []
    facts = ctx.facts
    subclasses: set[str] = set()
    for _ in range(3):
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.ClassDef) and node.name not in subclasses:
                for base in node.bases:
                    path = facts.resolve(base)
                    if path in TORCH_SUBCLASS_BASES or (isinstance(base, ast.Name)
                                                        and base.id in subclasses):
                        subclasses.add(node.name)
                        flags.append(_flag("static.torch_override", node,
                                           f"class {node.name}({_describe(base)}) subclasses "
                                           "torch.Tensor: a subclass can intercept every torch "
                                           "call, including the evaluator's comparison"))
                        break
    for node in ast.walk(ctx.tree):
        name = None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name in OVERRIDE_NAMES:
            flags.append(_flag("static.torch_override", node,
                               f"{name}: torch function/dispatch overrides intercept torch "
                               "calls (the evaluator's included)"))
    return flags
