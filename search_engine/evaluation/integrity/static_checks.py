"""Static integrity checks: read the candidate's source (AST) before anything runs.

The checks are an ALLOW-LIST, not a block-list: a candidate may import only a few modules,
call only allocation / view / metadata torch APIs outside its kernels, and use only Triton
inside its ``@triton.jit`` bodies. Anything else is reported with the line and the call.

Each check is a small function `(ctx) -> list[IntegrityFlag]`; `STATIC_CHECKS` lists them.
A structural failure (no parse, no `ModelNew`) is reported as `compile_error` by the
pipeline; every other `hack` flag makes the result `hack_suspected`.

Check names:
  static.syntax_error, static.missing_modelnew   structural (compile_error)
  static.no_triton_kernel, static.kernel_never_launched
  static.forbidden_import      an import outside the allowed modules
  static.forbidden_call        exec/eval/open/__import__/... builtins
  static.dynamic_access        getattr & co. with a computed name, module objects passed around
  static.forbidden_attribute   dunders, frames, private or module-reaching attributes
  static.torch_compute         torch / F / Tensor compute outside the candidate's kernels
  static.monkeypatch, static.timer_patch   assigning to attributes of modules
  static.torch_override        Tensor subclasses, __torch_function__ / __torch_dispatch__
  static.kernel_escape         a jit body using something other than Triton
  static.try_except_fallback   a try/except that could fall back to another implementation
  static.precision_downcast    lower precision than the policy allows
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from search_engine.evaluation.result import IntegrityFlag

STRUCTURAL_CHECKS = {"static.syntax_error", "static.missing_modelnew"}

# -- the allow-lists ------------------------------------------------------------------------

ALLOWED_MODULES = {
    "torch", "torch.nn", "torch.nn.functional", "triton", "triton.language", "math", "typing",
    "functools", "dataclasses", "__future__",
}
# Submodules of triton.language (triton.language.math, triton.language.extra.libdevice,
# triton.language.extra.cuda.libdevice, ...) are Triton device code too.
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
PURE_MODULES = {"math", "typing", "functools", "dataclasses"}  # any public, non-module attr

TORCH_ALLOWED = {
    # allocation
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
    "torch.ones", "torch.ones_like", "torch.full", "torch.full_like", "torch.arange",
    "torch.tensor",
    # types, metadata, context
    "torch.Tensor", "torch.Size", "torch.dtype", "torch.device", "torch.no_grad",
    "torch.inference_mode", "torch.is_tensor", "torch.finfo", "torch.iinfo",
    "torch.contiguous_format", "torch.preserve_format", "torch.strided", "torch.__version__",
    "torch.cuda.current_stream", "torch.cuda.current_device", "torch.cuda.device",
    "torch.cuda.is_available", "torch.cuda.get_device_capability",
    "torch.cuda.get_device_properties", "torch.cuda.device_count",
    # module machinery
    "torch.nn", "torch.nn.functional", "torch.nn.Module", "torch.nn.Parameter",
    "torch.nn.ParameterList", "torch.nn.ParameterDict", "torch.nn.ModuleList",
    "torch.nn.ModuleDict", "torch.nn.Buffer",
}
TORCH_CONTAINER_MODULES = {"Module", "ModuleList", "ModuleDict", "ParameterList",
                           "ParameterDict"}
TRITON_ALLOWED = {
    "triton", "triton.jit", "triton.autotune", "triton.Config", "triton.heuristics",
    "triton.cdiv", "triton.next_power_of_2", "triton.language", "triton.__version__",
}
# Tensor methods and attributes a candidate may use outside its kernels.
TENSOR_ALLOWED = {
    "view", "reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "t", "T",
    "mT", "contiguous", "size", "shape", "stride", "numel", "nelement", "dim", "ndim", "dtype",
    "device", "layout", "is_contiguous", "is_cuda", "element_size", "itemsize", "nbytes",
    "data_ptr", "storage_offset", "is_floating_point", "is_complex", "requires_grad", "detach",
    "data", "to", "cuda", "cpu", "chunk", "split", "unbind", "narrow", "select", "new_empty",
    "new_zeros", "new_ones", "new_full",
    # dtype casts: judged by the precision rules (check_tensor_methods, check_precision_downcast)
    "float", "double", "half", "bfloat16",
}
# `expand` inflates a tensor without copying: allowed only to read the strides/shape of the
# broadcast (`t.expand(shape).stride()`), never as a value a kernel could be launched on.
EXPAND_METHODS = {"expand", "expand_as", "broadcast_to"}
METADATA_ATTRS = {"stride", "size", "shape", "dim", "ndim", "numel", "is_contiguous"}
# On `self`/`super()` (an nn.Module), these module methods are machinery, not compute.
MODULE_MACHINERY = {"__init__", "register_buffer", "register_parameter", "add_module",
                    "parameters", "named_parameters", "buffers", "named_buffers", "children",
                    "named_children", "modules", "named_modules", "state_dict",
                    "load_state_dict", "train", "eval", "training", "forward",
                    "extra_repr", "get_parameter", "get_buffer", "get_submodule"}
INIT_METHODS = {"__init__", "reset_parameters", "_reset_parameters", "_init_weights"}

FORBIDDEN_BUILTINS = {
    "exec", "eval", "compile", "open", "globals", "locals", "vars", "breakpoint", "input",
    "__import__", "exit", "quit", "memoryview",
}
DYNAMIC_ATTR_BUILTINS = {"getattr", "setattr", "delattr", "hasattr"}
HARMLESS_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__version__",
                    "__module__", "__file__", "__all__", "__slots__"}
INTROSPECTION_ATTRS = {
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame",
    "ag_code", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
    "tb_frame", "tb_next", "co_code", "co_consts", "co_names", "func_globals", "func_code",
    "_getframe",
}
PROCESS_ATTRS = {"environ", "getenv", "putenv", "system", "popen", "_exit", "fork", "kill",
                 "execv", "execve", "spawnv"}
# Dunder methods whose definition changes how the evaluator sees or serialises an object.
FORBIDDEN_DUNDER_DEFS = {"__getattr__", "__getattribute__", "__setattr__", "__delattr__",
                         "__del__", "__reduce__", "__reduce_ex__", "__getstate__",
                         "__setstate__", "__init_subclass__", "__class_getitem__"}
OVERRIDE_NAMES = {"__torch_function__", "__torch_dispatch__", "as_subclass", "_make_subclass",
                  "_make_wrapper_subclass", "TorchFunctionMode", "TorchDispatchMode"}
TORCH_SUBCLASS_BASES = {"torch.Tensor", "torch.nn.Parameter", "torch.nn.Buffer"}
TIMER_NAMES = {
    "time", "perf_counter", "perf_counter_ns", "monotonic", "process_time", "Event",
    "synchronize", "elapsed_time", "record", "do_bench", "Timer",
}
STREAM_NAMES = {"Stream", "stream", "Event", "synchronize", "set_stream", "ExternalStream",
                "graph", "CUDAGraph", "graphs"}
# Builtins a jit body may call or name (besides Triton): plain Python on constants.
KERNEL_BUILTINS = {"range", "min", "max", "len", "float", "int", "bool", "abs", "True",
                   "False", "None"}
LOW_PRECISION_NAMES = {
    "float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8e4nv", "float8e5",
    "fp16", "bf16", "fp8e4nv", "fp8e5",
}
LOW_PRECISION_METHODS = {"half", "bfloat16"}
NON_TENSOR_CALLS = {"dict", "list", "set", "tuple", "str", "int", "float", "bool", "sorted",
                    "range", "enumerate", "zip", "frozenset"}


@lru_cache(maxsize=1)
def tensor_names() -> frozenset[str]:
    """Every public and private (non-dunder) attribute of torch.Tensor."""
    import torch

    return frozenset(n for n in dir(torch.Tensor) if not (n.startswith("__") and n.endswith("__")))


@lru_cache(maxsize=1)
def forbidden_tensor_names() -> frozenset[str]:
    return frozenset(tensor_names() - TENSOR_ALLOWED - EXPAND_METHODS)


@lru_cache(maxsize=1)
def torch_dtype_names() -> frozenset[str]:
    import torch

    return frozenset(f"torch.{n}" for n in dir(torch)
                     if isinstance(inspect.getattr_static(torch, n, None), torch.dtype))


@lru_cache(maxsize=1)
def nn_module_classes() -> frozenset[str]:
    """`torch.nn.X` names that are nn.Module subclasses (constructed for parameters only)."""
    from torch import nn

    out = set()
    for name in dir(nn):
        obj = inspect.getattr_static(nn, name, None)
        if isinstance(obj, type) and issubclass(obj, nn.Module) and not name.startswith("_"):
            out.add(name)
    return frozenset(out)


@lru_cache(maxsize=1)
def kernel_attrs() -> frozenset[str]:
    """Attributes a jit body may use on its tensors, pointers, dtypes and constexprs."""
    import triton.language as tl

    names = {"dtype", "shape", "type", "element_ty", "numel", "value", "T"}
    for cls in (tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr):
        names.update(n for n in dir(cls) if not n.startswith("_"))
    return frozenset(names)


def _module_allowed(name: str) -> bool:
    return name in ALLOWED_MODULES or name.startswith(ALLOWED_MODULE_PREFIXES)


# -- context --------------------------------------------------------------------------------


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
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    path = self.resolve(node.value)
                    name = node.targets[0].id
                    if path and self.aliases.get(name) != path and name not in self.import_bound:
                        self.aliases[name] = path
                        changed = True
            if not changed:
                break

    def resolve(self, node: ast.AST) -> str:
        """`torch.nn.functional.softmax` for a chain rooted at an alias, else ''."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
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
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                            and item.name in INIT_METHODS:
                        self.init_ids.update(id(n) for n in ast.walk(item))
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

    def in_kernel(self, node: ast.AST) -> bool:
        return id(node) in self.kernel_ids

    def in_init(self, node: ast.AST) -> bool:
        return id(node) in self.init_ids


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


# -- path verdicts --------------------------------------------------------------------------


def _walk_static(root: object, parts: list[str]):
    """Follow `parts` from `root` without running `__getattr__` hooks; None when unknown."""
    obj = root
    for part in parts:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
    return obj


def _import_root(name: str):
    import importlib

    if not _module_allowed(name):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def path_verdict(path: str, in_init: bool = False) -> tuple[str, str] | None:
    """None when `path` (a qualified name) may be used; else (check name, reason)."""
    parts = path.split(".")
    root = parts[0]
    private = [p for p in parts[1:] if p.startswith("_") and p not in HARMLESS_DUNDERS]
    if root == "torch":
        return _torch_verdict(path, parts, private, in_init)
    if root == "triton":
        if path in TRITON_ALLOWED:
            return None
        if path.startswith("triton.language."):
            return _module_tree_verdict(path, "triton.language", private)
        return ("static.forbidden_attribute",
                f"uses {path}: only triton.jit / autotune / heuristics / Config / cdiv / "
                "next_power_of_2 and triton.language may be used (triton.runtime, "
                "triton.testing, triton.compiler... reach the evaluator's machinery)")
    if root in PURE_MODULES:
        return _module_tree_verdict(path, root, private)
    if _module_allowed(path):
        return None
    return ("static.forbidden_attribute", f"uses {path}, outside the allowed modules")


def _module_tree_verdict(path: str, module: str, private: list[str]) -> tuple[str, str] | None:
    if private:
        return ("static.forbidden_attribute",
                f"uses the private attribute {private[0]!r} of {module} ({path})")
    rest = path[len(module) + 1:].split(".") if path != module else []
    base = _import_root(module)
    if base is None:
        return None
    obj = base
    prefix = module
    for part in rest:
        obj = _walk_static(obj, [part])
        prefix += "." + part
        if obj is None:
            return None  # unknown attribute: fails at run time, not a way out
        if isinstance(obj, types.ModuleType):
            if not _module_allowed(obj.__name__):
                return ("static.forbidden_attribute",
                        f"uses {path}: {prefix} is the module {obj.__name__!r}, outside the "
                        "allowed modules")
        elif callable(obj) and module.startswith("triton.language"):
            owner = getattr(obj, "__module__", "") or ""
            if owner and not owner.startswith("triton") and not isinstance(obj, type):
                return ("static.forbidden_attribute",
                        f"uses {path}: it is {owner}.{getattr(obj, '__name__', part)}, "
                        "not Triton device code")
    return None


def _torch_verdict(path: str, parts: list[str], private: list[str],
                   in_init: bool) -> tuple[str, str] | None:
    if path in TORCH_ALLOWED or path in torch_dtype_names():
        return None
    if private:
        return ("static.forbidden_attribute",
                f"uses {path}: private torch internals ({private[0]!r}) are outside the "
                "allow-list")
    if len(parts) >= 2 and parts[1] in {"ops", "library", "utils", "os", "sys", "overrides",
                                         "multiprocessing", "distributed", "backends", "fx",
                                         "jit", "compiler", "hub", "testing", "profiler",
                                         "package", "autograd", "classes", "export"}:
        extra = " (CUDA C++ through torch.utils.cpp_extension is not supported yet: " \
                "candidates must launch Triton kernels)" if "cpp_extension" in parts else ""
        return ("static.forbidden_attribute",
                f"uses {path}: torch.{parts[1]} reaches operators, the process or the "
                f"runtime directly{extra}")
    if len(parts) >= 3 and parts[1] == "cuda":
        timer = parts[2] in STREAM_NAMES or parts[2] in TIMER_NAMES
        return ("static.forbidden_attribute",
                f"uses {path}"
                + (": streams, events and synchronization belong to the evaluator's timing"
                   if timer else ": only current_stream / current_device / device / "
                   "is_available / get_device_* of torch.cuda may be used"))
    if len(parts) == 3 and parts[1] == "nn" and parts[2] in nn_module_classes():
        return None  # constructing a module for its parameters; calling it is checked
    if len(parts) >= 3 and parts[1] == "nn" and parts[2] == "init" and in_init:
        return None
    obj = _walk_static(__import__("torch"), parts[1:])
    if isinstance(obj, types.ModuleType) and not _module_allowed(obj.__name__):
        return ("static.forbidden_attribute",
                f"uses {path}: it is the module {obj.__name__!r}, outside the allowed modules")
    if in_init:
        return None  # parameters may be created and initialised with any public torch API
    return ("static.torch_compute",
            f"uses {path} outside a kernel: torch does the work, not the candidate's kernel "
            "(allowed: allocation, views, metadata)")


# ----------------------------------------------------------------------------- checks


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
        elif isinstance(node, ast.Global):
            bound = [n for n in node.names if n in facts.import_bound]
            if bound:
                flags.append(_flag("static.monkeypatch", node,
                                   f"`global {', '.join(bound)}` rebinds imported modules"))
    return flags


def check_forbidden_attributes(ctx: StaticContext) -> list[IntegrityFlag]:
    """Dunders, frames and introspection, private or module-reaching attributes."""
    flags = []
    facts = ctx.facts
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


def check_torch_compute(ctx: StaticContext) -> list[IntegrityFlag]:
    """Outside kernels: torch/F functions and Tensor methods beyond allocation and views,
    `@`, and nn compute modules called (kept for their parameters only)."""
    flags = []
    facts = ctx.facts
    for node in _host_nodes(ctx):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            flags.append(_flag("static.torch_compute", node,
                               f"{_describe(node)}: the @ operator is a torch matmul outside "
                               "the candidate's kernels"))
            continue
        if facts.in_init(node):
            continue
        if isinstance(node, ast.Attribute) and _outermost_chain(node, facts.parents):
            path = facts.resolve(node)
            if path:
                verdict = path_verdict(path)
                if verdict and verdict[0] == "static.torch_compute":
                    flags.append(_flag(verdict[0], node, f"{_describe(node)}: {verdict[1]}"))
        if isinstance(node, ast.Call) and _dotted(node.func) in DYNAMIC_ATTR_BUILTINS \
                and node.args and _const_attr_name(node):
            base = facts.resolve(node.args[0])
            if base:
                verdict = path_verdict(f"{base}.{_const_attr_name(node)}")
                if verdict and verdict[0] == "static.torch_compute":
                    flags.append(_flag(verdict[0], node, f"{_describe(node)}: {verdict[1]}"))
            else:
                flag = _tensor_attribute_flag(ctx, node, node.args[0], _const_attr_name(node))
                if flag:
                    flags.append(flag)
        if isinstance(node, ast.Attribute) and not facts.resolve(node.value):
            flag = _tensor_attribute_flag(ctx, node, node.value, node.attr)
            if flag:
                flags.append(flag)
        if isinstance(node, ast.Call):
            flag = _module_call_flag(ctx, node)
            if flag:
                flags.append(flag)
    return flags


def _receiver_exempt(ctx: StaticContext, receiver: ast.AST, name: str) -> bool:
    """Receivers that are not torch tensors: the candidate's own objects, plain containers."""
    facts = ctx.facts
    if _is_self(receiver):
        return name in facts.self_attrs or name in MODULE_MACHINERY or any(
            name in members for members in facts.classes.values())
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) \
            and receiver.func.id == "super":
        return name in MODULE_MACHINERY or name not in tensor_names()
    if isinstance(receiver, ast.Name) and receiver.id in facts.classes:
        return name in facts.classes[receiver.id]
    key = _binding_key(receiver)
    if key and key in facts.instances:
        return name in facts.classes.get(facts.instances[key], set())
    if key and key in facts.non_tensor:
        return True
    if _plain_container(receiver) and not isinstance(receiver, ast.Call):
        return True
    if isinstance(receiver, ast.Attribute) and receiver.attr in {"device", "dtype", "shape",
                                                                  "layout"}:
        return True  # x.device.type, x.shape.index(...)
    if isinstance(receiver, ast.Call) and (ctx.facts.resolve(receiver.func) in TORCH_ALLOWED
                                           and ctx.facts.resolve(receiver.func) not in {
                                               "torch.empty", "torch.empty_like",
                                               "torch.zeros", "torch.zeros_like", "torch.ones",
                                               "torch.ones_like", "torch.full",
                                               "torch.full_like", "torch.arange",
                                               "torch.tensor", "torch.empty_strided"}):
        return True  # torch.device('cuda').type, torch.finfo(x.dtype).max
    return False


def _tensor_attribute_flag(ctx: StaticContext, node: ast.AST, receiver: ast.AST,
                           name: str) -> IntegrityFlag | None:
    facts = ctx.facts
    if _dunder(name) or name in OVERRIDE_NAMES:
        return None  # check_forbidden_attributes / check_torch_override
    parent = facts.parents.get(id(node))
    if name in EXPAND_METHODS:
        # t.expand(shape).stride(): only the broadcast strides are read
        grand = facts.parents.get(id(parent)) if isinstance(parent, ast.Call) else None
        if isinstance(grand, ast.Attribute) and grand.value is parent \
                and grand.attr in METADATA_ATTRS:
            return None
        if _receiver_exempt(ctx, receiver, name):
            return None
        return _flag("static.torch_compute", node,
                     f"{_describe(parent if isinstance(parent, ast.Call) else node)}: .{name}() "
                     "is allowed only to read a broadcast's strides (t.expand(s).stride())")
    if name in {"float", "double", "to"} and isinstance(parent, ast.Call) \
            and parent.func is node and not _is_self(receiver):
        return _cast_flag(ctx, parent, name)
    if name not in forbidden_tensor_names() or _receiver_exempt(ctx, receiver, name):
        return None
    shown = _describe(parent if isinstance(parent, ast.Call) and parent.func is node else node)
    if name in {"numpy", "tolist", "item"}:
        why = "copies the tensor to the host (Python/numpy computes outside the kernel)"
    elif name.startswith("_"):
        why = "a private Tensor method"
    else:
        why = "a torch Tensor method doing work outside the candidate's kernels (allowed: " \
              "allocation, views, metadata)"
    return _flag("static.torch_compute", node, f"{shown}: .{name} is {why}")


def _cast_flag(ctx: StaticContext, call: ast.Call, name: str) -> IntegrityFlag | None:
    """Under the strict policy a cast may not change the dtype (a device move is fine)."""
    if ctx.precision_policy != "strict":
        return None
    problem = f"torch.{ctx.problem_dtype}"
    if name == "float":
        target = "torch.float32"
    elif name == "double":
        target = "torch.float64"
    else:
        dtype_args = [a for a in call.args if _looks_like_dtype(ctx, a)]
        dtype_args += [k.value for k in call.keywords if k.arg == "dtype"]
        if not dtype_args:
            return None
        arg = dtype_args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "dtype":
            return None  # .to(x.dtype): back to a tensor's own dtype
        target = ctx.facts.resolve(arg) or _describe(arg)
    if target == problem or target.split(".")[-1] in LOW_PRECISION_NAMES \
            or (ctx.problem_dtype == "float32" and target == "torch.float"):
        return None  # unchanged, or judged by check_precision_downcast
    return _flag("static.torch_compute", call,
                 f"{_describe(call)}: a dtype change to {target} outside a kernel in a "
                 f"{ctx.problem_dtype} problem under the strict policy")


def _looks_like_dtype(ctx: StaticContext, node: ast.AST) -> bool:
    path = ctx.facts.resolve(node)
    if path:
        return path in torch_dtype_names()
    return isinstance(node, ast.Attribute) and node.attr == "dtype"


def _module_call_flag(ctx: StaticContext, call: ast.Call) -> IntegrityFlag | None:
    """Calling an nn compute module (nn.Softmax(-1)(x), self.fc(x), self.fc.forward(x))."""
    facts = ctx.facts
    func = call.func
    if isinstance(func, ast.Call):
        path = facts.resolve(func.func)
        if path.startswith("torch.nn.") and path.split(".")[-1] in nn_module_classes():
            return _flag("static.torch_compute", call,
                         f"{_describe(call)}: calls a torch {path.split('.')[-1]} module "
                         "(torch does the work, not the candidate's kernel)")
    target = func
    if isinstance(target, ast.Subscript):
        target = target.value
    key = _binding_key(target)
    if key in facts.stored_modules and facts.stored_modules[key] not in TORCH_CONTAINER_MODULES:
        return _flag("static.torch_compute", call,
                     f"{_describe(call)}: calls {key}, a torch {facts.stored_modules[key]} "
                     "module (keep it for its parameters only)")
    if isinstance(func, ast.Attribute):
        key = _binding_key(func.value)
        if key in facts.stored_modules and func.attr not in MODULE_MACHINERY - {"forward"} \
                and facts.stored_modules[key] not in TORCH_CONTAINER_MODULES:
            return _flag("static.torch_compute", call,
                         f"{_describe(call)}: runs {key}, a torch {facts.stored_modules[key]} "
                         "module (keep it for its parameters only)")
    return None


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


def check_precision_downcast(ctx: StaticContext) -> list[IntegrityFlag]:
    """Lower precision than the policy allows in an fp32 problem (fp16/bf16/fp8 casts)."""
    if ctx.problem_dtype != "float32" or ctx.precision_policy == "bf16":
        return []
    flags = []
    for node in ast.walk(ctx.tree):
        hit = None
        if isinstance(node, ast.Attribute) and node.attr in LOW_PRECISION_NAMES:
            hit = _dotted(node) or node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in LOW_PRECISION_METHODS:
            hit = f".{node.func.attr}()"
        elif isinstance(node, ast.Constant) and node.value in {"fp16", "bf16", "float16",
                                                                 "bfloat16"}:
            hit = repr(node.value)
        if hit:
            flags.append(_flag("static.precision_downcast", node,
                               f"uses {hit} in an fp32 problem under the "
                               f"{ctx.precision_policy!r} precision policy"))
    return flags


# Kept for callers of the block-list era: the allow-list supersedes it.
check_high_level_torch_compute = check_torch_compute

STATIC_CHECKS: list[Callable[[StaticContext], list[IntegrityFlag]]] = [
    check_defines_modelnew,
    check_uses_triton_kernel,
    check_forbidden_imports,
    check_forbidden_calls,
    check_dynamic_access,
    check_forbidden_attributes,
    check_torch_compute,
    check_monkeypatching,
    check_torch_override,
    check_kernel_bodies,
    check_try_except_fallback,
    check_precision_downcast,
]


def run_static_checks(source: str, problem_dtype: str = "float32",
                      precision_policy: str = "strict") -> list[IntegrityFlag]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [IntegrityFlag("static.syntax_error",
                              f"line {exc.lineno}: {exc.msg}: {(exc.text or '').strip()}")]
    ctx = StaticContext(source=source, tree=tree, problem_dtype=problem_dtype,
                        precision_policy=precision_policy)
    flags: list[IntegrityFlag] = []
    seen: set[tuple[str, str]] = set()
    for check in STATIC_CHECKS:
        for flag in check(ctx):
            if (flag.check, flag.evidence) not in seen:
                seen.add((flag.check, flag.evidence))
                flags.append(flag)
    return flags
