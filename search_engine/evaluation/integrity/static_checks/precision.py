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


def _possible_values(ctx: StaticContext, call: ast.AST, node: ast.AST) -> list | None:
    """Every value `node` (an expression at `call`) may take, or None when one of them is out
    of the checks' sight: parameters are followed to every call of their function (kernel
    launches and helper calls, positional and keyword, through other helpers' parameters),
    defaults, triton.Config dicts, local and module constants."""
    return _Values(ctx).of(_enclosing_function(ctx, call), node, frozenset())


def _enclosing_kernel(ctx: StaticContext, node: ast.AST) -> ast.FunctionDef | None:
    for kernel in ctx.facts.kernels:
        if any(n is node for n in ast.walk(kernel)):
            return kernel
    return None


def _enclosing_function(ctx: StaticContext, node: ast.AST) -> ast.AST | None:
    current = ctx.facts.parents.get(id(node))
    while current is not None and not isinstance(current, (ast.FunctionDef,
                                                           ast.AsyncFunctionDef)):
        current = ctx.facts.parents.get(id(current))
    return current


def _module_constant(ctx: StaticContext, name: str) -> list | None:
    return _Values(ctx).module_constant(name, frozenset())


class _Values:
    def __init__(self, ctx: StaticContext):
        self.ctx = ctx
        self.facts = ctx.facts
        self.functions: dict[str, list[ast.AST]] = {}
        for node in ast.walk(ctx.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)

    def of(self, fn: ast.AST | None, node: ast.AST, seen: frozenset) -> list | None:
        if isinstance(node, ast.Constant):
            return [node.value]
        if isinstance(node, ast.IfExp):
            a, b = self.of(fn, node.body, seen), self.of(fn, node.orelse, seen)
            return None if a is None or b is None else a + b
        if isinstance(node, ast.Call) and self.facts.resolve(node.func) in {
                "triton.language.constexpr", "triton.language.core.constexpr"} \
                and len(node.args) == 1 and not node.keywords:
            return self.of(fn, node.args[0], seen)
        if not isinstance(node, ast.Name):
            return None
        if fn is not None:
            args = fn.args
            params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            if node.id in params:
                return self.parameter(fn, node.id, seen)
            local = self.local_constant(fn, node.id, seen)
            if local is not _NOT_LOCAL:
                return local
        return self.module_constant(node.id, seen)

    def local_constant(self, fn: ast.AST, name: str, seen: frozenset):
        """The values of a name bound in `fn`'s own body; _NOT_LOCAL when not bound there."""
        values: list = []
        bound = False
        for node in ast.walk(fn):
            if node is fn:
                continue
            if isinstance(node, ast.Name) and node.id == name \
                    and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound = True
                parent = self.facts.parents.get(id(node))
                if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is not None \
                        and node in (parent.targets if isinstance(parent, ast.Assign)
                                     else [parent.target]):
                    found = self.of(fn, parent.value, seen | {("local", id(fn), name)}) \
                        if ("local", id(fn), name) not in seen else []
                    if found is None:
                        return None
                    values += found
                else:
                    return None  # a loop variable, an augmented assignment, ...
        return values if bound else _NOT_LOCAL

    def module_constant(self, name: str, seen: frozenset) -> list | None:
        """The values of a module-level name: every binding at module level (or under a
        `global` statement) must be an assignment of a resolvable value."""
        if ("global", name) in seen:
            return None
        seen = seen | {("global", name)}
        declared_global = {id(f) for f in ast.walk(self.ctx.tree)
                           if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and any(isinstance(n, ast.Global) and name in n.names
                                   for n in ast.walk(f))}
        found: list = []
        for node in ast.walk(self.ctx.tree):
            if not (isinstance(node, ast.Name) and node.id == name
                    and isinstance(node.ctx, (ast.Store, ast.Del))):
                continue
            if not self._module_level(node) \
                    and id(_enclosing_function(self.ctx, node)) not in declared_global:
                continue  # a function's own local
            parent = self.facts.parents.get(id(node))
            if not (isinstance(parent, ast.Assign) and node in parent.targets
                    or isinstance(parent, ast.AnnAssign) and parent.target is node
                    and parent.value is not None):
                return None  # a loop variable, an augmented assignment, a del, ...
            values = self.of(None, parent.value, seen)
            if values is None:
                return None
            found += values
        return found or None

    def _module_level(self, node: ast.AST) -> bool:
        current = self.facts.parents.get(id(node))
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                    ast.ClassDef)):
                return False
            current = self.facts.parents.get(id(current))
        return True

    def parameter(self, fn: ast.AST, name: str, seen: frozenset) -> list | None:
        """Every value the file gives parameter `name` of `fn`; None when one is computed or
        out of sight (or when none is found at all)."""
        key = ("param", id(fn), name)
        if key in seen:
            return []  # a cycle through helpers adds nothing new
        seen = seen | {key}
        args = fn.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        position = positional.index(name) if name in positional else None
        nodes: list[tuple[ast.AST | None, ast.AST]] = []  # (function the value is in, value)
        if position is not None:
            first_default = len(positional) - len(args.defaults)
            if position >= first_default:
                nodes.append((None, args.defaults[position - first_default]))
        else:
            for a, d in zip(args.kwonlyargs, args.kw_defaults):
                if a.arg == name and d is not None:
                    nodes.append((None, d))
        sites = self.call_sites(fn.name)
        if sites is None:
            return None  # the function is handed around: its calls are out of sight
        for site in sites:
            if any(isinstance(a, ast.Starred) for a in site.args) \
                    or any(k.arg is None for k in site.keywords):
                return None  # *args / **kwargs: the value is out of sight
            if position is not None and len(site.args) > position:
                nodes.append((_enclosing_function(self.ctx, site), site.args[position]))
        for node in ast.walk(self.ctx.tree):
            if isinstance(node, ast.Call):
                nodes.extend((_enclosing_function(self.ctx, node), k.value)
                             for k in node.keywords if k.arg == name)
            elif isinstance(node, ast.Dict):
                if any(k is None for k in node.keys):
                    continue
                nodes.extend((_enclosing_function(self.ctx, node), v)
                             for k, v in zip(node.keys, node.values)
                             if isinstance(k, ast.Constant) and k.value == name)
        values: list = []
        for where, value in nodes:
            found = self.of(where, value, seen | {"nested"})
            if found is None:
                return None
            values += found
        if not values and "nested" in seen:
            return []  # a helper's parameter nobody passes (the helper is never called)
        return values or None

    def call_sites(self, name: str) -> list[ast.Call] | None:
        """Calls of the function `name`: `f(...)`, `f[grid](...)`, `f.run(...)`, and launches
        through a container or name holding it (`TABLE[k][grid](...)`); None when `name` is
        used any other way (passed, returned, stored where no call can be found)."""
        facts = self.facts
        sites: list[ast.Call] = []
        holders = {name}
        for _ in range(4):  # names bound to containers / aliases holding the function
            grown = False
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name) \
                        and node.targets[0].id not in holders \
                        and _holds(node.value, holders):
                    holders.add(node.targets[0].id)
                    grown = True
            if not grown:
                break
        for node in ast.walk(self.ctx.tree):
            if not (isinstance(node, ast.Name) and node.id in holders
                    and isinstance(node.ctx, ast.Load)):
                continue
            current, parent = node, facts.parents.get(id(node))
            while isinstance(parent, ast.Subscript) and parent.value is current:
                current, parent = parent, facts.parents.get(id(parent))
            if isinstance(parent, ast.Call) and parent.func is current:
                sites.append(parent)
                continue
            if isinstance(parent, ast.Attribute) and parent.value is current \
                    and parent.attr in {"run", "warmup"}:
                grand = facts.parents.get(id(parent))
                if isinstance(grand, ast.Call) and grand.func is parent:
                    sites.append(grand)
                    continue
            if isinstance(parent, ast.Attribute) and parent.value is current:
                continue  # kernel.best_config, kernel.fn: read, not called with arguments
            if isinstance(parent, ast.Assign) and parent.value is current \
                    and all(isinstance(t, ast.Name) and t.id in holders for t in parent.targets):
                continue
            if _inside_holder_literal(facts, node, holders):
                continue
            return None
        return sites


_NOT_LOCAL = object()


def _holds(value: ast.AST, holders: set[str]) -> bool:
    """Is `value` a name in `holders`, or a literal container / conditional of them?"""
    if isinstance(value, ast.Name):
        return value.id in holders
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return any(_holds(e, holders) for e in value.elts)
    if isinstance(value, ast.Dict):
        return any(_holds(v, holders) for v in value.values)
    if isinstance(value, ast.IfExp):
        return _holds(value.body, holders) or _holds(value.orelse, holders)
    return False


def _inside_holder_literal(facts, node: ast.AST, holders: set[str]) -> bool:
    """`node` sits in a literal container (or conditional) assigned to a holder name."""
    current, parent = node, facts.parents.get(id(node))
    while isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.IfExp)) \
            and not (isinstance(parent, ast.IfExp) and parent.test is current) \
            and not (isinstance(parent, ast.Dict) and current in parent.keys):
        current, parent = parent, facts.parents.get(id(parent))
    return current is not node and isinstance(parent, ast.Assign) and parent.value is current \
        and all(isinstance(t, ast.Name) and t.id in holders for t in parent.targets)
