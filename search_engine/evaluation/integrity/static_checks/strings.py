"""Text that becomes code: what the AST checks would never see because it is a string.

The checks read the candidate's parsed source; a string is opaque to them. So every route
from a string to code, an attribute or a class is refused (`static.string_code`), and the
strings Python itself may evaluate are held to a grammar that cannot run anything:

- string annotations (`def f(a: "...")`, `x: "..." = 1`) and strings inside typing
  constructs (`Optional["..."]`, `cast("...", v)`, `TypeVar("T", bound="...")`) must be
  type expressions: dotted public names, subscripts of them, `|`, None, `...` (and Triton's
  type strings such as `"*fp32"`). With `from __future__ import annotations` every
  annotation is a string at run time, so every annotation is held to the same grammar.
  (Whatever evaluates annotations, typing.get_type_hints & co., is refused by the pure
  modules' name lists in policy.py.)
- `"{0.attr}".format(v)`: a format field reading an attribute by name, or a format string the
  checks cannot read (not a constant).
- a string constant spelling an interpreter internal (`"__getattr__"`, `"__globals__"`), which
  only a string-driven route (a namespace dict, setattr) could use.
- `type(name, bases, namespace)`: a class built from strings and a dict.

eval / exec / compile / __import__ (access.FORBIDDEN_BUILTINS), getattr & co. with a computed
name (check_dynamic_access) and attributes that evaluate or import by name
(policy.EVAL_ATTRS, check_forbidden_attributes) are the other routes.
"""

from __future__ import annotations

import ast
import re
import string

from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _describe, _dunder, _flag,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    HARMLESS_DUNDERS, OVERRIDE_NAMES,
)
from search_engine.evaluation.result import IntegrityFlag

CHECK = "static.string_code"
# Dunder spellings that honest code writes as strings.
HARMLESS_DUNDER_STRINGS = HARMLESS_DUNDERS | {"__main__"}
# Triton's own type strings for jit parameters: "i32", "*fp32", "const *fp16", "tl.float32".
_TRITON_TYPE_STRING = re.compile(r"^\s*(const\s+)?\*?\s*[A-Za-z_][A-Za-z0-9_.]*\s*\*?\s*$")
_LITERAL_PATHS = {"typing.Literal", "Literal"}


def check_string_code(ctx: StaticContext) -> list[IntegrityFlag]:
    flags: list[IntegrityFlag] = []
    facts = ctx.facts
    future = _future_annotations(ctx.tree)
    seen: set[int] = set()  # string constants already judged (nested constructs)
    for node in ast.walk(ctx.tree):
        for annotation in _annotations(node):
            flags += _annotation_flags(ctx, annotation, future, seen)
        if isinstance(node, (ast.Subscript, ast.Call)) and _typing_construct(ctx, node):
            flags += _typing_string_flags(ctx, node, seen)
        if isinstance(node, ast.Call):
            flag = _format_flag(ctx, node) or _type_call_flag(ctx, node)
            if flag:
                flags.append(flag)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _dunder(node.value) and node.value not in HARMLESS_DUNDER_STRINGS \
                and node.value not in OVERRIDE_NAMES and not facts.in_kernel(node):
            flags.append(_flag(CHECK, node,
                               f"the string {node.value!r} names an interpreter internal: "
                               "only a route from strings to attributes (a namespace dict, "
                               "setattr) could use it"))
    return flags


def _future_annotations(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "annotations" for a in n.names) for n in ast.walk(tree))


def _annotations(node: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        every = args.posonlyargs + args.args + args.kwonlyargs \
            + [a for a in (args.vararg, args.kwarg) if a is not None]
        out += [a.annotation for a in every if a.annotation is not None]
        if node.returns is not None:
            out.append(node.returns)
    elif isinstance(node, ast.AnnAssign):
        out.append(node.annotation)
    return out


def _annotation_flags(ctx: StaticContext, annotation: ast.AST, future: bool,
                      seen: set[int]) -> list[IntegrityFlag]:
    if future:
        seen.update(id(n) for n in ast.walk(annotation))
        bad = _bad_type_expr(ctx, annotation)
        if bad is not None:
            return [_flag(CHECK, annotation,
                          f"the annotation {_describe(annotation)!r} is not a type expression "
                          f"({bad}); under `from __future__ import annotations` every "
                          "annotation is a string something could evaluate")]
        return []
    flags = []
    for text, node in _strings_outside_literals(ctx, annotation, seen):
        bad = _bad_type_string(ctx, text)
        if bad is not None:
            flags.append(_flag(CHECK, node,
                               f"the string annotation {_short(text)!r} is not a type "
                               f"expression ({bad}): evaluating it would run code the checks "
                               "never parse"))
    return flags


def _typing_construct(ctx: StaticContext, node: ast.AST) -> bool:
    target = node.value if isinstance(node, ast.Subscript) else node.func
    path = ctx.facts.resolve(target)
    return path.startswith("typing.") and path not in _LITERAL_PATHS


def _typing_string_flags(ctx: StaticContext, node: ast.AST,
                         seen: set[int]) -> list[IntegrityFlag]:
    parts = [node.slice] if isinstance(node, ast.Subscript) \
        else list(node.args) + [k.value for k in node.keywords]
    flags = []
    for part in parts:
        for text, where in _strings_outside_literals(ctx, part, seen):
            bad = _bad_type_string(ctx, text)
            if bad is not None:
                flags.append(_flag(CHECK, where,
                                   f"{_describe(node)}: the string {_short(text)!r} in a "
                                   f"typing construct is not a type expression ({bad}): "
                                   "typing may evaluate it as code"))
    return flags


def _strings_outside_literals(ctx: StaticContext, node: ast.AST, seen: set[int]):
    """(text, node) of each string constant in `node` not inside a Literal[...] and not
    judged before."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Subscript) \
                and ctx.facts.resolve(current.value) in _LITERAL_PATHS:
            continue
        if isinstance(current, ast.Constant) and isinstance(current.value, str):
            if id(current) not in seen:
                seen.add(id(current))
                yield current.value, current
            continue
        stack.extend(ast.iter_child_nodes(current))


def _bad_type_string(ctx: StaticContext, text: str, depth: int = 0) -> str | None:
    """None when `text` is a type expression (or a Triton type string), else why not."""
    if _TRITON_TYPE_STRING.match(text) and not any(
            part.strip(" *").startswith("_")
            for part in text.replace("const ", "").split(".")):
        return None
    if depth > 4:
        return "nested too deeply"
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return "not an expression"
    return _bad_type_expr(ctx, tree.body, depth + 1)


def _bad_type_expr(ctx: StaticContext, node: ast.AST, depth: int = 0) -> str | None:
    if isinstance(node, ast.Name):
        return f"the name {node.id}" if _dunder(node.id) else None
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            return f"the private attribute .{node.attr}"
        return _bad_type_expr(ctx, node.value, depth)
    if isinstance(node, ast.Subscript):
        bad = _bad_type_expr(ctx, node.value, depth)
        if bad is not None or ctx.facts.resolve(node.value) in _LITERAL_PATHS \
                or (isinstance(node.value, ast.Name) and node.value.id == "Literal"):
            return bad if bad is not None else _bad_literal(node.slice)
        return _bad_type_expr(ctx, node.slice, depth)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return _bad_type_string(ctx, node.value, depth)
        return None
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            bad = _bad_type_expr(ctx, elt, depth)
            if bad is not None:
                return bad
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _bad_type_expr(ctx, node.left, depth) or _bad_type_expr(ctx, node.right, depth)
    return f"{type(node).__name__.lower()} expression"


def _bad_literal(node: ast.AST) -> str | None:
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    for elt in elts:
        if isinstance(elt, ast.UnaryOp) and isinstance(elt.operand, ast.Constant):
            continue
        if not isinstance(elt, ast.Constant):
            return f"{type(elt).__name__.lower()} in Literal[...]"
    return None


def _format_flag(ctx: StaticContext, call: ast.Call) -> IntegrityFlag | None:
    """`"{0.__class__}".format(v)`: format fields read attributes by name."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in {"format", "format_map"}:
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name) and receiver.id == "str":
        receiver = call.args[0] if call.args else None
    elif isinstance(receiver, ast.Name) and receiver.id in {"self", "cls"}:
        return None  # the candidate's own method named format
    if isinstance(receiver, ast.JoinedStr) and all(isinstance(v, ast.Constant)
                                                   for v in receiver.values):
        receiver = ast.Constant("".join(v.value for v in receiver.values))
    if not (isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)):
        return _flag(CHECK, call, f"{_describe(call)}: a format string the checks cannot read "
                     "(format fields can read attributes by name); use a constant string or "
                     "an f-string")
    attrs = _format_attributes(receiver.value)
    if attrs is None:
        return _flag(CHECK, call, f"{_describe(call)}: a malformed format string")
    if attrs:
        return _flag(CHECK, call, f"{_describe(call)}: the format field reads the attribute "
                     f"{attrs[0]!r} by name (use an f-string, whose expressions are checked)")
    return None


def _format_attributes(text: str, depth: int = 0) -> list[str] | None:
    """Attribute names that format fields of `text` read; None when it does not parse."""
    import _string

    out: list[str] = []
    try:
        for _, field, spec, _ in string.Formatter().parse(text):
            if field:
                _, rest = _string.formatter_field_name_split(field)
                out += [str(key) for is_attr, key in rest if is_attr]
            if spec and "{" in spec and depth < 3:
                nested = _format_attributes(spec, depth + 1)
                if nested is None:
                    return None
                out += nested
    except (ValueError, TypeError):
        return None
    return out


def _type_call_flag(ctx: StaticContext, call: ast.Call) -> IntegrityFlag | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "type" and func.id not in ctx.facts.functions \
            and func.id not in ctx.facts.classes and (len(call.args) == 3 or call.keywords):
        return _flag(CHECK, call, f"{_describe(call)}: type(name, bases, namespace) builds a "
                     "class from strings and a dict the checks cannot follow; write a class "
                     "statement")
    return None


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
