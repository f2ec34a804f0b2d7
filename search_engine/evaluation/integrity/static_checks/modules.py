"""Torch compute reached through values: modules, functions and classes handed around.

An nn module class may be constructed in an nn.Module's __init__ for its parameters, and
any torch API may be called there to create them; neither may do the work in forward. The
checks here follow torch compute that travels as a VALUE (`static.torch_compute`):

- a torch compute function, Tensor method or compute-module class used as a value rather
  than called where it stands: stored (`self.f = torch.log_softmax` in __init__), put in a
  container, passed to functools.partial, returned. (Outside __init__ a compute function is
  refused wherever it is named, by check_torch_compute.) isinstance / issubclass and
  annotations may name them.
- an nn compute module constructed outside __init__ (or the helpers only __init__ calls).
- an nn compute module, or a container holding one (nn.ModuleList / ModuleDict / Sequential,
  a list, a dict, ...), CALLED however it is reached: a name or self attribute, a subscript,
  a loop variable, a container's .values(), self.modules() / .children(), the candidate's own
  functions (arguments and return values are followed), getattr with a constant name; or
  handed to something that could call it (functools.partial, map, a library function).
  Reading its parameters (`layer.weight`, `self.fc.bias`) is what it is kept for.
- a candidate class deriving from an nn compute class that runs the inherited computation:
  one without its own forward, `super().forward(x)`, an inherited private helper
  (`self._conv_forward(...)`).
- calling what a torch call made in __init__ (`self.f = torch.vmap(g)`; `self.f(x)`).

Honest code keeps its own Triton nn.Module subclasses in ModuleLists and calls them: those
are the candidate's classes, not torch's, and pass.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from search_engine.evaluation.integrity.static_checks.compute import _receiver_exempt
from search_engine.evaluation.integrity.static_checks.context import (
    StaticContext, _const_attr_name, _describe, _dotted, _flag, _is_self,
)
from search_engine.evaluation.integrity.static_checks.policy import (
    INIT_METHODS, MODULE_MACHINERY, NN_CONTAINER_CLASSES, forbidden_tensor_names,
    nn_module_classes,
)
from search_engine.evaluation.integrity.static_checks.verdicts import path_verdict
from search_engine.evaluation.result import IntegrityFlag

CHECK = "static.torch_compute"
MODULE, RESULT = "module", "result"
# Attributes of an nn module that hold its parameters, buffers and settings (not modules,
# not methods): reading them is what a weight holder is for.
DATA_ATTRS = {
    "weight", "bias", "running_mean", "running_var", "num_batches_tracked", "in_features",
    "out_features", "in_channels", "out_channels", "kernel_size", "stride", "padding",
    "dilation", "groups", "padding_mode", "output_padding", "transposed", "eps", "momentum",
    "affine", "track_running_stats", "num_features", "normalized_shape",
    "elementwise_affine", "num_groups", "num_channels", "num_embeddings", "embedding_dim",
    "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse", "dim",
    "training", "negative_slope", "inplace", "p", "approximate", "embed_dim", "num_heads",
    "head_dim", "batch_first", "kdim", "vdim", "in_proj_weight", "in_proj_bias", "bias_k",
    "bias_v", "hidden_size", "input_size", "num_layers", "proj_size", "bidirectional",
    "dropout", "beta", "threshold", "alpha", "lambd", "min_val", "max_val",
    "upscale_factor", "downscale_factor", "scale_factor", "size", "mode", "align_corners",
    "weight_g", "weight_v", "shape", "dtype", "device", "start_dim", "end_dim",
}
_DATA_PATTERN = re.compile(r"^(weight|bias)_")
# Builtins that only look at a value (never call it).
LOOKING_BUILTINS = {"isinstance", "issubclass", "len", "id", "print", "repr", "str",
                    "hasattr", "callable", "bool", "type"}
# Builtins whose answer holds what they were given.
HOLDING_BUILTINS = {"list", "tuple", "dict", "set", "frozenset", "iter", "next", "reversed",
                    "sorted", "enumerate", "zip"}
# Methods that put a value into their receiver (a container, or `self`).
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "add_module",
            "register_module"}
# Methods of a module or container that neither run it nor hand it to anything that would.
SAFE_METHODS = (MODULE_MACHINERY - {"forward"}) | INIT_METHODS | MUTATORS | {
    "pop", "get", "keys", "values", "items", "index", "count", "clear", "apply", "to",
    "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "requires_grad_",
    "zero_grad", "modules", "children", "named_modules", "named_children", "get_submodule"}
# Methods whose answer is the modules a module holds.
SUBMODULE_METHODS = {"modules", "children", "named_modules", "named_children",
                     "get_submodule"}
PAIR_METHODS = {"items", "named_modules", "named_children"}  # (name, module) pairs


@lru_cache(maxsize=1)
def compute_module_classes() -> frozenset[str]:
    return frozenset(nn_module_classes() - NN_CONTAINER_CLASSES)


@lru_cache(maxsize=1)
def tensor_method_names() -> frozenset[str]:
    """Forbidden Tensor names that are methods (a bound method is a callable value)."""
    import inspect

    import torch

    return frozenset(n for n in forbidden_tensor_names()
                     if callable(inspect.getattr_static(torch.Tensor, n, None)))


def _nn_class(ctx: StaticContext, node: ast.AST) -> str | None:
    path = ctx.facts.resolve(node)
    if path.startswith("torch.nn.") and path.count(".") == 2:
        return path.split(".")[2]
    return None


class ModuleValues:
    """Which host expressions may hold a torch compute module (or a container of them), or
    what a torch call made under __init__'s exemption. Labels are (kind, description)."""

    def __init__(self, ctx: StaticContext):
        self.ctx, self.facts = ctx, ctx.facts
        facts = self.facts
        self.functions = [n for n in ast.walk(ctx.tree)
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                          and not facts.in_kernel(n) and n not in facts.kernels]
        self.locals: dict[int, set[str]] = {id(f): _local_names(f) for f in self.functions}
        self.by_name: dict[str, list[ast.AST]] = {}
        for f in self.functions:
            if not isinstance(f, ast.Lambda):
                self.by_name.setdefault(f.name, []).append(f)
        self.names: dict[tuple, tuple[str, str]] = {}
        self.attrs: dict[tuple, tuple[str, str]] = {}
        self.returns: dict[str, tuple[str, str]] = {}
        self.inherited = {name: base for name in facts.class_nodes
                          if (base := self.compute_base(name)) is not None}
        # candidate subclasses of nn containers, and those known to hold a compute module
        self.containers = {name for name in facts.class_nodes
                           if self.compute_base(name, classes=NN_CONTAINER_CLASSES)}
        self.holding: dict[str, tuple[str, str]] = {}
        self.any_module = False
        for _ in range(8):
            before = (len(self.names), len(self.attrs), len(self.returns), len(self.holding),
                      self.any_module)
            self._propagate()
            if (len(self.names), len(self.attrs), len(self.returns), len(self.holding),
                    self.any_module) == before:
                break

    # classes ---------------------------------------------------------------------------
    def compute_base(self, name: str, seen: frozenset = frozenset(),
                     classes: frozenset | set | None = None) -> str | None:
        """The torch nn compute class (or one of `classes`) a candidate class derives from."""
        node = self.facts.class_nodes.get(name)
        if node is None or name in seen:
            return None
        wanted = compute_module_classes() if classes is None else classes
        for base in node.bases:
            cls = _nn_class(self.ctx, base)
            if cls in wanted and cls != "Module":
                return cls
            if isinstance(base, ast.Name):
                found = self.compute_base(base.id, seen | {name}, classes)
                if found:
                    return found
        return None

    def defines(self, name: str, attr: str, seen: frozenset = frozenset()) -> bool:
        """Does candidate class `name` (or a candidate base) define `attr`?"""
        if name in seen or name not in self.facts.class_nodes:
            return False
        if attr in self.facts.class_attrs(name):
            return True
        return any(isinstance(b, ast.Name) and self.defines(b.id, attr, seen | {name})
                   for b in self.facts.class_nodes[name].bases)

    # scopes ----------------------------------------------------------------------------
    def _scope(self, node: ast.AST, name: str) -> int:
        current = self.facts.parents.get(id(node))
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                    and name in self.locals.get(id(current), ()):
                return id(current)
            current = self.facts.parents.get(id(current))
        return 0

    def _function_of(self, node: ast.AST) -> ast.AST | None:
        current = self.facts.parents.get(id(node))
        while current is not None and not isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            current = self.facts.parents.get(id(current))
        return current

    def _self_class(self, node: ast.AST) -> str | None:
        """The class when `node` is a method's own receiver (`self`)."""
        if not isinstance(node, ast.Name):
            return None
        current = self.facts.parents.get(id(node))
        while isinstance(current, ast.AST) and not isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(current, ast.Lambda) and node.id in self.locals.get(id(current), ()):
                return None  # a lambda's own parameter of that name
            current = self.facts.parents.get(id(current))
        owner = self.facts.parents.get(id(current)) if current is not None else None
        if not isinstance(owner, ast.ClassDef):
            return None
        args = current.args.posonlyargs + current.args.args
        return owner.name if args and args[0].arg == node.id else None

    # labels ----------------------------------------------------------------------------
    def label(self, node: ast.AST | None):
        if node is None:
            return None
        facts = self.facts
        if isinstance(node, ast.Name):
            return self.names.get((self._scope(node, node.id), node.id))
        if isinstance(node, ast.Attribute):
            cls = self._self_class(node.value)
            if cls is not None:
                return self.attrs.get((cls, node.attr))
            if node.attr in DATA_ATTRS or _DATA_PATTERN.match(node.attr):
                return None
            inner = self.label(node.value)
            return inner if inner and inner[0] == MODULE else None
        if isinstance(node, ast.Subscript):
            return self.label(node.value)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return self.label(node.value)
        if isinstance(node, ast.IfExp):
            return self.label(node.body) or self.label(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next((lab for v in node.values if (lab := self.label(v))), None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return next((lab for e in node.elts if (lab := self.label(e))), None)
        if isinstance(node, ast.Dict):
            return next((lab for v in node.values if (lab := self.label(v))), None)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.label(node.elt)
        if isinstance(node, ast.DictComp):
            return self.label(node.value)
        if isinstance(node, ast.Lambda):
            return self.label(node.body)
        if isinstance(node, ast.Call):
            return self._call_label(node)
        return None

    def _call_label(self, call: ast.Call):
        facts = self.facts
        func = call.func
        cls = _nn_class(self.ctx, func)
        if cls in compute_module_classes():
            return (MODULE, f"torch {cls}")
        args = list(call.args) + [k.value for k in call.keywords]
        if isinstance(func, ast.Name) and func.id in HOLDING_BUILTINS \
                and func.id not in facts.functions:
            args = list(call.args)  # sorted(xs, key=f): the answer holds xs, not f
        if cls in NN_CONTAINER_CLASSES or (isinstance(func, ast.Name)
                                           and func.id in HOLDING_BUILTINS
                                           and func.id not in facts.functions):
            return next((lab for a in args if (lab := self.label(a))), None)
        if isinstance(func, ast.Name) and func.id == "getattr" and _const_attr_name(call):
            return self.label(ast.Attribute(value=call.args[0], attr=_const_attr_name(call),
                                            ctx=ast.Load()))
        if isinstance(func, ast.Name) and func.id in self.holding:
            return self.holding[func.id]
        if isinstance(func, ast.Name) and func.id in self.containers \
                and not self.defines(func.id, "__init__"):
            return next((lab for a in args if (lab := self.label(a))), None)
        if isinstance(func, ast.Name) and func.id in self.inherited \
                and not self.defines(func.id, "forward"):
            return (MODULE, f"{func.id} (a torch {self.inherited[func.id]} without its own "
                            "forward)")
        if isinstance(func, ast.Attribute):
            if func.attr in SUBMODULE_METHODS and self.any_module:
                return (MODULE, f"a submodule from .{func.attr}()")
            if self._self_class(func.value) is None:
                inner = self.label(func.value)
                if inner and func.attr in SAFE_METHODS and func.attr not in {
                        "parameters", "named_parameters", "buffers", "named_buffers",
                        "state_dict", "keys", "index", "count"}:
                    return inner  # .values(), .get(k), .to(device): the modules again
        if isinstance(func, ast.Lambda):
            return self.label(func.body)
        name = _dotted(func).split(".")[-1] if isinstance(func, (ast.Name, ast.Attribute)) \
            else ""
        if name in self.returns and (isinstance(func, ast.Name)
                                     or self._self_class(func.value) is not None):
            return self.returns[name]
        if facts.in_init(call):
            path = facts.resolve(func)
            if path.startswith("torch."):
                verdict = path_verdict(path)
                if verdict and verdict[0] == CHECK:
                    return (RESULT, f"what {path}() made in __init__")
        return None

    def elements(self, node: ast.AST):
        """The label structure of one element of iterating `node`."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id not in self.facts.functions:
            if node.func.id == "enumerate" and node.args:
                return (None, self.elements(node.args[0]))
            if node.func.id == "zip":
                return tuple(self.elements(a) for a in node.args)
            if node.func.id in {"reversed", "sorted", "list", "tuple", "iter", "set"} \
                    and node.args:
                return self.elements(node.args[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in PAIR_METHODS:
            lab = self.label(node)
            return (None, lab) if lab else None
        return self.label(node)

    # propagation -----------------------------------------------------------------------
    def _set(self, table: dict, key, lab) -> None:
        if lab is None or key in table and (table[key][0] == MODULE or lab[0] == RESULT):
            return
        table[key] = lab
        if lab[0] == MODULE:
            self.any_module = True

    def _bind(self, target: ast.AST, struct) -> None:
        if struct is None:
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not _is_label(struct) and len(struct) == len(target.elts):
                for t, s in zip(target.elts, struct):
                    self._bind(t, s)
            else:
                for t in target.elts:
                    self._bind(t, struct)
            return
        lab = _first_label(struct)
        if lab is None:
            return
        if isinstance(target, ast.Name):
            self._set(self.names, (self._scope(target, target.id), target.id), lab)
        elif isinstance(target, ast.Attribute):
            cls = self._self_class(target.value)
            if cls is not None:
                self._set(self.attrs, (cls, target.attr), lab)
            else:
                self._bind(target.value, lab)  # ns.m = module: ns holds a module
        elif isinstance(target, (ast.Subscript, ast.Starred)):
            self._bind(target.value, lab)

    def _propagate(self) -> None:
        facts = self.facts
        for node in ast.walk(self.ctx.tree):
            if facts.in_kernel(node):
                continue
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, (ast.Tuple, ast.List)) \
                            and isinstance(node.value, (ast.Tuple, ast.List)) \
                            and len(t.elts) == len(node.value.elts):
                        self._bind(t, tuple(self.label(v) for v in node.value.elts))
                    else:
                        self._bind(t, self.label(node.value))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) \
                    and node.value is not None:
                self._bind(node.target, self.label(node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind(node.target, self.elements(node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind(node.optional_vars, self.label(node.context_expr))
            elif isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) \
                    and node.value is not None:
                fn = self._function_of(node)
                lab = self.label(node.value)
                if fn is not None and not isinstance(fn, ast.Lambda) and lab:
                    self._set(self.returns, fn.name, lab)
            elif isinstance(node, ast.Call):
                self._call_bindings(node)

    def _call_bindings(self, call: ast.Call) -> None:
        func = call.func
        args = call.args
        # setattr(self, 'x', m), self.add_module('x', m), container.append(m), ...
        if isinstance(func, ast.Name) and func.id == "setattr" and len(args) >= 3 \
                and _const_attr_name(call):
            self._bind(ast.Attribute(value=args[0], attr=_const_attr_name(call),
                                     ctx=ast.Store()), self.label(args[2]))
        labs = [self.label(a) for a in list(args) + [k.value for k in call.keywords]]
        lab = next((x for x in labs if x), None)
        if lab is not None and isinstance(func, ast.Attribute) and (
                func.attr in MUTATORS | {"__init__"}) and (
                _dotted(getattr(func.value, "func", None) or ast.Pass()) == "super"
                or self._self_class(func.value) is not None):
            # super().__init__(m) / self.append(m) in a container subclass: it holds m
            owner = self._function_of(call)
            cls = self.facts.parents.get(id(owner)) if owner is not None else None
            if isinstance(cls, ast.ClassDef) and cls.name in self.containers \
                    and lab[0] == MODULE and cls.name not in self.holding:
                self.holding[cls.name] = lab
                self.any_module = True
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
            if lab is not None:
                if func.attr in {"add_module", "register_module"} and args \
                        and isinstance(args[0], ast.Constant) \
                        and self._self_class(func.value) is not None:
                    self._set(self.attrs, (self._self_class(func.value), str(args[0].value)),
                              lab)
                else:
                    self._bind(func.value, lab)
        # X.apply(fn): fn is called with every submodule
        if isinstance(func, ast.Attribute) and func.attr == "apply" and args and self.any_module:
            self._bind_params(args[0], [(MODULE, "a submodule passed by .apply()")], 0)
        # arguments of the candidate's own functions, methods and classes
        callee, offset = self._candidate_callee(func)
        if callee is not None:
            labs = [self.label(a) for a in args]
            self._bind_params(callee, labs, offset, call.keywords)

    def _candidate_callee(self, func: ast.AST):
        """(function node(s), how many leading parameters the call does not pass)."""
        facts = self.facts
        if isinstance(func, ast.Lambda):
            return [func], 0
        if isinstance(func, ast.Name):
            if func.id in facts.class_nodes:
                inits = [item for item in facts.class_nodes[func.id].body
                         if isinstance(item, ast.FunctionDef) and item.name == "__init__"]
                return inits, 1
            if func.id in self.by_name:
                return self.by_name[func.id], 0
        if isinstance(func, ast.Attribute) and func.attr in self.by_name:
            bound = not (isinstance(func.value, ast.Name) and func.value.id in facts.class_nodes)
            return self.by_name[func.attr], 1 if bound else 0
        return None, 0

    def _bind_params(self, target, labs, offset, keywords=()) -> None:
        functions = target if isinstance(target, list) else None
        if functions is None:
            if isinstance(target, ast.Lambda):
                functions = [target]
            elif isinstance(target, (ast.Name, ast.Attribute)):
                functions, extra = self._candidate_callee(target)
                offset += extra
            if not functions:
                return
        for fn in functions:
            params = fn.args.posonlyargs + fn.args.args
            for i, lab in enumerate(labs):
                if lab is not None and i + offset < len(params):
                    self._set(self.names, (id(fn), params[i + offset].arg), lab)
                elif lab is not None and fn.args.vararg is not None:
                    self._set(self.names, (id(fn), fn.args.vararg.arg), lab)
            names = {a.arg for a in params + fn.args.kwonlyargs}
            for k in keywords:
                lab = self.label(k.value)
                if lab is not None and k.arg in names:
                    self._set(self.names, (id(fn), k.arg), lab)


def _is_label(x) -> bool:
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)


def _first_label(struct):
    """The first label in a label structure (a label, None, or a tuple of structures)."""
    if struct is None or _is_label(struct):
        return struct
    for part in struct:
        found = _first_label(part)
        if found is not None:
            return found
    return None


def _local_names(fn: ast.AST) -> set[str]:
    args = fn.args
    out = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    out |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    stack = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out - declared


# -- the check ---------------------------------------------------------------------------


def check_torch_modules(ctx: StaticContext) -> list[IntegrityFlag]:
    facts = ctx.facts
    values = ModuleValues(ctx)
    init_like = _init_like(ctx, values)
    annotations = _annotation_ids(ctx.tree)
    flags: list[IntegrityFlag] = []
    for node in ast.walk(ctx.tree):
        if facts.in_kernel(node) or id(node) in annotations:
            continue
        if isinstance(node, ast.Call):
            flags += _call_flags(ctx, values, node, init_like)
        if isinstance(node, (ast.Attribute, ast.Name, ast.Call)):
            flag = _value_flag(ctx, node)
            if flag:
                flags.append(flag)
    flags += _inherited_flags(ctx, values, init_like)
    return flags


def _call_flags(ctx: StaticContext, values: ModuleValues, call: ast.Call,
                init_like: set[int]) -> list[IntegrityFlag]:
    facts = ctx.facts
    flags = []
    func = call.func
    cls = _nn_class(ctx, func)
    if cls in compute_module_classes() and id(call) not in init_like:
        flags.append(_flag(CHECK, call, f"{_describe(call)}: constructs a torch {cls} module "
                           "outside __init__ (modules are kept for their parameters; torch "
                           "would do the work, not the candidate's kernel)"))
    # the callee: a module (or what torch made in __init__) called, however it is reached
    if isinstance(func, ast.Attribute) and values._self_class(func.value) is None:
        inner = values.label(func.value)
        if inner and inner[0] == MODULE and func.attr not in SAFE_METHODS \
                and func.attr not in DATA_ATTRS:
            flags.append(_flag(CHECK, call, f"{_describe(call)}: runs .{func.attr} of "
                               f"{_describe(func.value)}, a {inner[1]} module (keep it for "
                               "its parameters only)"))
            return flags
        if inner and func.attr in SAFE_METHODS:
            return flags
    lab = values.label(func)
    if lab is not None:
        what = f"a {lab[1]} module (keep it for its parameters only)" if lab[0] == MODULE \
            else lab[1]
        shown = "" if isinstance(func, ast.Call) else f"calls {_describe(func)}, "
        flags.append(_flag(CHECK, call, f"{_describe(call)}: {shown}{what}: torch does the "
                           "work, not the candidate's kernel"))
        return flags
    # a torch module built in __init__ from modules (nn.TransformerEncoder(layer, n)) runs
    # none of them: it copies them as weight holders, and what forward does with the result
    # is followed like any module value
    if cls is not None and id(call) in init_like:
        return flags
    # a module handed to something that could call it (a builtin's keyword, sorted(key=m),
    # or iter(m, sentinel), calls it)
    handed = list(call.args) + [k.value for k in call.keywords]
    if _passes_through(ctx, values, func):
        if not (isinstance(func, ast.Name) and func.id in LOOKING_BUILTINS | HOLDING_BUILTINS):
            return flags
        # dict's keywords are its entries, held and never called (a ModuleDict's modules)
        handed = ([] if func.id == "dict" else [k.value for k in call.keywords]) \
            + (call.args[1:] if func.id == "iter" else [])
    for arg in handed:
        lab = values.label(arg)
        if lab is not None and lab[0] == MODULE:
            flags.append(_flag(CHECK, call, f"{_describe(call)}: hands {_describe(arg)}, a "
                               f"{lab[1]} module, to {_describe(func)}, which could run it"))
            break
    return flags


def _passes_through(ctx: StaticContext, values: ModuleValues, func: ast.AST) -> bool:
    facts = ctx.facts
    if isinstance(func, ast.Name):
        if func.id in facts.functions or func.id in facts.classes:
            return True
        if func.id in LOOKING_BUILTINS | HOLDING_BUILTINS | {"getattr", "setattr", "super"} \
                and func.id not in ctx.aliases:
            return True
    if _nn_class(ctx, func) in NN_CONTAINER_CLASSES:
        return True
    if isinstance(func, ast.Attribute):
        if func.attr in MUTATORS or func.attr == "apply":
            return True
        if func.attr in values.by_name and (
                values._self_class(func.value) is not None
                or (isinstance(func.value, ast.Name) and func.value.id in facts.class_nodes)
                or func.attr not in nn_attribute_names()):
            return True  # the candidate's own method: its parameters are followed
    return False


@lru_cache(maxsize=1)
def nn_attribute_names() -> frozenset[str]:
    """Public attribute names of torch's nn module classes (`forward`, `extra_repr`, ...): a
    call `<anything>.forward(m, x)` is not known to be the candidate's own method."""
    import inspect

    from torch import nn

    names: set[str] = set()
    for cls_name in nn_module_classes():
        cls = inspect.getattr_static(nn, cls_name, None)
        names.update(n for n in dir(cls) if not n.startswith("_"))
    return frozenset(names)


def _value_flag(ctx: StaticContext, node: ast.AST) -> IntegrityFlag | None:
    """A torch compute function / Tensor method / compute-module class used as a value."""
    facts = ctx.facts
    parent = facts.parents.get(id(node))
    if isinstance(parent, ast.Call) and parent.func is node:
        return None  # called where it stands: judged as a call
    if isinstance(node, ast.Attribute) and isinstance(parent, ast.Attribute) \
            and parent.value is node:
        return None  # inner part of a longer chain
    if isinstance(node, ast.Call):
        if not (_dotted(node.func) == "getattr" and _const_attr_name(node) and node.args):
            return None
        base = facts.resolve(node.args[0])
        path = f"{base}.{_const_attr_name(node)}" if base else ""
    elif isinstance(getattr(node, "ctx", None), ast.Load):
        path = facts.resolve(node)
    else:
        return None
    if _type_test_argument(facts, node) or isinstance(parent, (ast.ClassDef, ast.Compare)):
        return None  # isinstance(m, nn.Linear), class X(nn.Linear), type(m) is nn.Linear
    if not path:
        # a Tensor method taken as a value in __init__ (`self.f = self.w.softmax`)
        if isinstance(node, ast.Attribute) and facts.in_init(node) \
                and node.attr in tensor_method_names() \
                and not facts.resolve(node.value):
            if not _receiver_exempt(ctx, node.value, node.attr):
                return _flag(CHECK, node, f"{_describe(node)}: takes the Tensor method "
                             f".{node.attr} as a value in __init__ (calling it later would be "
                             "torch compute outside the candidate's kernels)")
        return None
    if not path.startswith("torch."):
        return None
    cls = path.split(".")[2] if path.startswith("torch.nn.") and path.count(".") == 2 else None
    if cls in compute_module_classes():
        return _flag(CHECK, node, f"{_describe(node)}: uses the torch {cls} module class as a "
                     "value (construct it in __init__ for its parameters, never pass it on)")
    if facts.in_init(node):
        verdict = path_verdict(path)
        if verdict and verdict[0] == CHECK:
            return _flag(CHECK, node, f"{_describe(node)}: takes the torch compute function "
                         f"{path} as a value in __init__ (only its results may be kept, as "
                         "parameters)")
    return None


def _type_test_argument(facts, node: ast.AST) -> bool:
    """The class argument of isinstance / issubclass (alone or in a tuple)."""
    parent = facts.parents.get(id(node))
    if isinstance(parent, ast.Tuple):
        node, parent = parent, facts.parents.get(id(parent))
    return isinstance(parent, ast.Call) and _dotted(parent.func) in {"isinstance", "issubclass"} \
        and node in parent.args[1:]


def _annotation_ids(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        parts = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            parts.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            parts.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        for part in parts:
            out.update(id(n) for n in ast.walk(part))
    return out


def _init_like(ctx: StaticContext, values: ModuleValues) -> set[int]:
    """Nodes of __init__-like methods and of the helpers only they call (where constructing
    an nn module for its parameters belongs)."""
    facts = ctx.facts
    inside = set(facts.init_ids)
    done: set[int] = set()
    for _ in range(6):
        changed = False
        for fn in values.functions:
            if isinstance(fn, ast.Lambda) or id(fn) in done or fn.name in {"forward",
                                                                            "__call__"}:
                continue
            refs = [n for n in ast.walk(ctx.tree)
                    if (isinstance(n, ast.Name) and n.id == fn.name
                        and isinstance(n.ctx, ast.Load))
                    or (isinstance(n, ast.Attribute) and n.attr == fn.name)]
            if refs and all(isinstance(facts.parents.get(id(r)), ast.Call)
                            and facts.parents[id(r)].func is r and id(r) in inside
                            for r in refs):
                done.add(id(fn))
                for stmt in fn.body:
                    inside.update(id(n) for n in ast.walk(stmt))
                changed = True
        if not changed:
            break
    return inside


def _inherited_flags(ctx: StaticContext, values: ModuleValues,
                     init_like: set[int]) -> list[IntegrityFlag]:
    """In a class deriving from a torch compute class: running the inherited computation."""
    facts = ctx.facts
    flags = []
    allowed = (MODULE_MACHINERY - {"forward"}) | INIT_METHODS
    for name, base in values.inherited.items():
        for node in ast.walk(facts.class_nodes[name]):
            if not isinstance(node, ast.Call) or id(node) in init_like:
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                    and _dotted(func.value.func) == "super" and func.attr not in allowed:
                flags.append(_flag(CHECK, node, f"{_describe(node)}: runs the inherited torch "
                                   f"{base}.{func.attr} (torch does the work, not the "
                                   "candidate's kernel)"))
            elif isinstance(func, ast.Attribute) and _is_self(func.value) \
                    and values._self_class(func.value) == name and func.attr not in allowed \
                    and not values.defines(name, func.attr):
                flags.append(_flag(CHECK, node, f"{_describe(node)}: runs {func.attr}, "
                                   f"inherited from torch {base} (torch does the work, not "
                                   "the candidate's kernel)"))
            elif _is_self(func) and values._self_class(func) == name \
                    and not values.defines(name, "forward"):
                flags.append(_flag(CHECK, node, f"{_describe(node)}: calls itself, a torch "
                                   f"{base} without its own forward"))
    return flags
