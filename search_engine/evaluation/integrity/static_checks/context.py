"""What every check reads: the parsed candidate (`StaticContext`), the facts collected once
from its AST (`Facts`: aliases, kernels, definitions, bindings) and the shared AST helpers."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from search_engine.evaluation.integrity.static_checks.policy import (
    INIT_METHODS, NON_TENSOR_CALLS, nn_module_classes,
)
from search_engine.evaluation.result import IntegrityFlag


@dataclass
class StaticContext:
    source: str
    tree: ast.Module
    problem_dtype: str = "float32"
    precision_policy: str = "strict"
    imported_modules: dict[str, str] | None = None  # alias -> qualified name

    @property
    def aliases(self) -> dict[str, str]:
        if self.imported_modules is None:
            self.imported_modules = self.facts.aliases
        return self.imported_modules

    @cached_property
    def facts(self) -> Facts:
        return Facts.of(self.tree)


@dataclass
class Facts:
    """What the checks share: aliases, kernels, names the candidate defines, parents."""

    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    import_bound: set[str] = field(default_factory=set)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    kernels: list[ast.FunctionDef] = field(default_factory=list)
    kernel_ids: set[int] = field(default_factory=set)  # nodes inside jit bodies
    init_ids: set[int] = field(default_factory=set)  # nodes inside __init__-like methods
    functions: set[str] = field(default_factory=set)  # every def in the file
    classes: dict[str, set[str]] = field(default_factory=dict)  # class -> members
    self_attrs: set[str] = field(default_factory=set)
    instances: dict[str, str] = field(default_factory=dict)  # name / self.x -> candidate class
    non_tensor: set[str] = field(default_factory=set)  # names bound only to plain containers
    stored_modules: dict[str, str] = field(default_factory=dict)  # name / self.x -> nn class
    constants: set[str] = field(default_factory=set)  # module-level constant names
    class_nodes: dict[str, ast.ClassDef] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: ast.Module) -> Facts:
        f = cls()
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                f.parents[id(child)] = node
        f._collect_aliases(tree)
        f._collect_definitions(tree)
        f._collect_kernels(tree)
        f._collect_bindings(tree)
        return f

    # aliases ---------------------------------------------------------------------------
    def _collect_aliases(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                        self.import_bound.add(a.asname)
                    else:
                        root = a.name.split(".")[0]
                        self.aliases[root] = root
                        self.import_bound.add(root)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                        self.import_bound.add(a.asname or a.name)
        # simple assignments of aliases: `_t = torch`, `E = torch.empty` (to a fixpoint)
        for _ in range(4):
            changed = False
            for node in ast.walk(tree):
                target = node.targets[0] if isinstance(node, ast.Assign) \
                    and len(node.targets) == 1 else getattr(node, "target", None)
                if isinstance(node, (ast.Assign, ast.NamedExpr)) and isinstance(target, ast.Name):
                    path = self.resolve(node.value)
                    name = target.id
                    if path and self.aliases.get(name) != path and name not in self.import_bound:
                        self.aliases[name] = path
                        changed = True
            if not changed:
                break

    def resolve(self, node: ast.AST) -> str:
        """`torch.nn.functional.softmax` for a chain rooted at an alias, else ''. The chain
        is followed through any expression that only passes a value on: `getattr(m, 'c')`,
        a literal container's subscript (`[torch][0]`, `{'k': torch}['k']`), a walrus."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Call) and _dotted(node.func) in {"getattr", "hasattr"} \
                    and node.args and _const_attr_name(node):
                parts.append(_const_attr_name(node))
                node = node.args[0]
            elif isinstance(node, ast.Subscript) and _literal_item(node) is not None:
                node = _literal_item(node)
            elif isinstance(node, ast.NamedExpr):
                node = node.value
            else:
                break
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id]] + list(reversed(parts)))
        return ""

    # definitions -----------------------------------------------------------------------
    def _collect_definitions(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.add(node.name)
            elif isinstance(node, ast.ClassDef):
                members = set()
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        members.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        members.update(t.id for t in targets if isinstance(t, ast.Name))
                self.classes[node.name] = members
                self.class_nodes[node.name] = node
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and _is_self(node.value):
                self.self_attrs.add(node.attr)
            elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" \
                    and len(node.args) >= 2 and _is_self(node.args[0]) \
                    and isinstance(node.args[1], ast.Constant):
                self.self_attrs.add(str(node.args[1].value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in {"register_buffer", "register_parameter",
                                           "add_module"} \
                    and node.args and isinstance(node.args[0], ast.Constant):
                self.self_attrs.add(str(node.args[0].value))
        for name, node in self.class_nodes.items():
            if not self.is_module_class(name):
                continue  # only an nn.Module's __init__ creates parameters
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and item.name in INIT_METHODS:
                    self.init_ids.update(id(n) for n in _walk_own_body(item))

    def _collect_kernels(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and any(self.is_jit_decorator(d) for d in node.decorator_list):
                self.kernels.append(node)
                for stmt in node.body:
                    self.kernel_ids.update(id(n) for n in ast.walk(stmt))
        for node in tree.body:
            targets, value = [], None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            if value is not None and self._constant_expr(value):
                self.constants.update(t.id for t in targets if isinstance(t, ast.Name))

    def is_jit_decorator(self, decorator: ast.AST) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        path = self.resolve(target) or _dotted(target)
        return path in {"triton.jit", "triton.autotune", "triton.heuristics", "jit",
                        "autotune", "heuristics", "triton.runtime.jit.jit"}

    def _constant_expr(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float, str, bool, type(None)))
        if isinstance(node, ast.UnaryOp):
            return self._constant_expr(node.operand)
        if isinstance(node, ast.BinOp):
            return self._constant_expr(node.left) and self._constant_expr(node.right)
        if isinstance(node, ast.Name):
            return node.id in self.constants
        if isinstance(node, ast.Call) and self.resolve(node.func) in {
                "triton.language.constexpr", "triton.language.core.constexpr"}:
            return all(self._constant_expr(a) for a in node.args) and not node.keywords
        return False

    # bindings --------------------------------------------------------------------------
    def _collect_bindings(self, tree: ast.Module) -> None:
        tensorish: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                key = _binding_key(t)
                if not key:
                    continue
                value = node.value
                if _plain_container(value):
                    self.non_tensor.add(key)
                else:
                    tensorish.add(key)
                if isinstance(value, ast.Call):
                    callee = _dotted(value.func)
                    if callee in self.classes:
                        self.instances[key] = callee
                    path = self.resolve(value.func)
                    if path.startswith("torch.nn.") and path.count(".") == 2 \
                            and path.split(".")[2] in nn_module_classes():
                        self.stored_modules[key] = path.split(".")[2]
        self.non_tensor -= tensorish

    def is_module_class(self, name: str, seen: frozenset = frozenset()) -> bool:
        """A candidate class deriving (through its own classes) from a torch.nn class."""
        node = self.class_nodes.get(name)
        if node is None or name in seen:
            return False
        for base in node.bases:
            if self.resolve(base).startswith("torch.nn.") or (
                    isinstance(base, ast.Name) and self.is_module_class(base.id, seen | {name})):
                return True
        return False

    def method_of(self, node: ast.AST) -> tuple[str, str] | None:
        """(class name, first parameter) of the method whose body holds `node`."""
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef, ast.Lambda)):
            current = self.parents.get(id(current))
        if current is None or isinstance(current, ast.Lambda):
            return None
        owner = self.parents.get(id(current))
        args = current.args.posonlyargs + current.args.args
        if isinstance(owner, ast.ClassDef) and args:
            return owner.name, args[0].arg
        return None

    def class_attrs(self, name: str) -> set[str]:
        """What `self.<x>` may name in class `name`: its members, what its methods assign
        or register on self, and the same of its candidate-defined bases."""
        node = self.class_nodes.get(name)
        if node is None:
            return set()
        out = set(self.classes.get(name, ()))
        for item in ast.walk(node):
            if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) \
                    and isinstance(item.value, ast.Name):
                out.add(item.attr)
            elif isinstance(item, ast.Call) and isinstance(item.func, (ast.Attribute, ast.Name)) \
                    and _dotted(item.func).split(".")[-1] in {
                        "register_buffer", "register_parameter", "add_module", "setattr"}:
                args = item.args[1:] if _dotted(item.func) == "setattr" else item.args
                if args and isinstance(args[0], ast.Constant):
                    out.add(str(args[0].value))
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.class_nodes and base.id != name:
                out |= self.class_attrs(base.id)
        return out

    def in_kernel(self, node: ast.AST) -> bool:
        return id(node) in self.kernel_ids

    def in_init(self, node: ast.AST) -> bool:
        return id(node) in self.init_ids


def _walk_own_body(func: ast.FunctionDef):
    """The nodes of `func` without those of functions and lambdas defined inside it (they run
    later, whenever called: an __init__ exemption must not travel with them)."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef)):
                stack.append(child)


def _literal_item(node: ast.Subscript) -> ast.AST | None:
    """`[a, b][1]` -> b, `{'k': a}['k']` -> a: the element a literal container's constant
    subscript picks, else None."""
    key = node.slice
    if not isinstance(key, ast.Constant):
        return None
    if isinstance(node.value, (ast.List, ast.Tuple)) and isinstance(key.value, int) \
            and -len(node.value.elts) <= key.value < len(node.value.elts):
        return node.value.elts[key.value]
    if isinstance(node.value, ast.Dict):
        for k, v in zip(node.value.keys, node.value.values):
            if isinstance(k, ast.Constant) and k.value == key.value:
                return v
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _binding_key(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return "self." + node.attr
    return ""


def _plain_container(node: ast.AST) -> bool:
    if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.JoinedStr, ast.ListComp,
                         ast.DictComp, ast.SetComp)):
        return True
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id in NON_TENSOR_CALLS


def _flag(check: str, node: ast.AST | None, what: str, severity: str = "hack") -> IntegrityFlag:
    where = f"line {node.lineno}: " if node is not None and hasattr(node, "lineno") else ""
    return IntegrityFlag(check=check, evidence=where + what, severity=severity)


def _dotted(node: ast.AST) -> str:
    """`torch.nn.functional.softmax` for an attribute chain, '' when not a plain chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _describe(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        text = type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _const_attr_name(call: ast.Call) -> str | None:
    """The attribute name of getattr(obj, 'name') & co. when it is a constant string."""
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) \
            and isinstance(call.args[1].value, str):
        return call.args[1].value
    return None


def _outermost_chain(node: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return not (isinstance(parent, ast.Attribute) and parent.value is node)


def _host_nodes(ctx: StaticContext):
    facts = ctx.facts
    for node in ast.walk(ctx.tree):
        if not facts.in_kernel(node):
            yield node
