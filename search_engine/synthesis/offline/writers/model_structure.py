"""The reference Model's construction code, copied into a candidate so its parameters,
buffers and submodules (and so its state_dict) match the reference's.

`ModelNew` gets `Model.__init__` and what it needs to run, found by walking names from it:
the Model's class attributes (a ResNet's `expansion`) and the methods `__init__` calls
(`self._make_layer`); the problem file's module-level constants, functions
(`_make_divisible`) and helper module classes (`BasicBlock`, `ChannelShuffle`), each class
kept to its construction code: its class attributes, `__init__` and the methods `__init__`
calls. A helper's `forward` never comes along: the candidate's kernels do the compute, and a
copied forward would be torch compute the evaluator's static checks rightly refuse.
"""

from __future__ import annotations

import ast
import textwrap

IMPORTED_MODULES = {"math", "numpy", "np"}  # module imports a construction may use


def model_init_source(problem_source: str) -> tuple[str, list[str]]:
    """ModelNew's body before forward (the Model's class attributes, `__init__` and the
    methods it calls), and the module-level statements it uses, in the file's order."""
    tree = ast.parse(problem_source)
    lines = problem_source.splitlines()
    model = _class(tree, "Model")
    init = _method(model, "__init__") if model is not None else None
    if init is None:
        return "def __init__(self, *args, **kwargs):\n    super().__init__()\n", []
    kept = _kept(model)
    body = _joined(kept, lines).replace("super(Model, self)", "super()")
    extras = _module_statements(tree, problem_source, lines, _names(kept))
    return body, extras


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name),
                None)


def _kept(cls: ast.ClassDef) -> list[ast.stmt]:
    """A class's construction code: its class attributes, `__init__` and every method
    reached from `__init__` through `self.<method>` (never `forward`)."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    wanted, todo = set(), ["__init__"]
    while todo:
        name = todo.pop()
        if name in wanted or name not in methods or name == "forward":
            continue
        wanted.add(name)
        todo += [a.attr for a in ast.walk(methods[name]) if isinstance(a, ast.Attribute)
                 and isinstance(a.value, ast.Name) and a.value.id == "self"]
    return [n for n in cls.body if isinstance(n, (ast.Assign, ast.AnnAssign))
            or (isinstance(n, ast.FunctionDef) and n.name in wanted)]


def _segment(node: ast.stmt, lines: list[str]) -> str:
    """A statement's full lines (decorators included), dedented."""
    first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) \
        else node.lineno
    return textwrap.dedent("\n".join(lines[first - 1: node.end_lineno]))


def _joined(nodes: list[ast.stmt], lines: list[str]) -> str:
    return "\n\n".join(_segment(n, lines) for n in nodes) + "\n"


def _names(nodes: list[ast.stmt]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _module_statements(tree: ast.Module, source: str, lines: list[str],
                       used: set[str]) -> list[str]:
    """Module-level constants, functions, helper classes (construction code only) and math
    imports that `used` names, and what they use in turn."""
    defined = {}
    for node in tree.body:
        for name in _defines(node):
            defined.setdefault(name, node)
    keep, todo = set(), list(used)
    while todo:
        node = defined.get(todo.pop())
        if node is None or id(node) in keep or (isinstance(node, ast.ClassDef)
                                                 and node.name == "Model"):
            continue
        keep.add(id(node))
        todo += _names(_kept(node) + node.bases) if isinstance(node, ast.ClassDef) \
            else _names([node])
    return [_statement(node, source, lines) for node in tree.body if id(node) in keep]


def _defines(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [(a.asname or a.name).split(".")[0] for a in node.names]
        return [n for n in names if n in IMPORTED_MODULES]
    return []


def _statement(node: ast.stmt, source: str, lines: list[str]) -> str:
    if isinstance(node, ast.FunctionDef):
        return _segment(node, lines)
    if not isinstance(node, ast.ClassDef):
        return ast.get_source_segment(source, node)
    bases = ", ".join(ast.get_source_segment(source, b) for b in node.bases)
    header = f"class {node.name}({bases}):" if bases else f"class {node.name}:"
    # a class with only a forward (a helper activation module) keeps no statement of its own
    body = _joined(_kept(node), lines)
    body = body if body.strip() else "pass"
    return header + "\n" + textwrap.indent(body, "    ").rstrip()
