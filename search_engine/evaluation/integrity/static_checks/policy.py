"""The allow-lists: modules, torch / triton / Tensor names a candidate may use, and the
names (timers, streams, low precision, process) the checks look for."""

from __future__ import annotations

import inspect
from functools import lru_cache


ALLOWED_MODULES = {
    "torch", "torch.nn", "torch.nn.functional", "triton", "triton.language", "math", "typing",
    "functools", "dataclasses", "__future__",
    # host-side TMA descriptors (public Triton API; the offline synthesizer's TMA move):
    # only the names in TRITON_ALLOWED may be used from it
    "triton.tools.tensor_descriptor",
}
# Submodules of triton.language (triton.language.math, triton.language.extra.libdevice,
# triton.language.extra.cuda.libdevice, ...) are Triton device code too.
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
PURE_MODULES = {"math", "typing", "functools", "dataclasses"}
# What each pure module may be used for, name by name: nothing here evaluates a string as
# code, reaches another module or copies objects behind the checks' back. Refused, among
# others: typing.get_type_hints / ForwardRef / get_overloads / no_type_check (string
# annotations are evaluated by the first two), functools.singledispatch(method) (it reads
# annotations through get_type_hints), update_wrapper / wraps (they copy attributes named by
# strings, `__code__` included), functools.namedtuple, dataclasses.make_dataclass (a class
# from strings and a namespace dict), asdict / astuple (deep copies), and the modules and
# foreign helpers these modules import (typing.sys, dataclasses.FunctionType, ...).
PURE_MODULE_NAMES: dict[str, frozenset[str]] = {
    "math": frozenset({
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "comb",
        "copysign", "cos", "cosh", "degrees", "dist", "e", "erf", "erfc", "exp", "exp2",
        "expm1", "fabs", "factorial", "floor", "fmod", "frexp", "fsum", "gamma", "gcd",
        "hypot", "inf", "isclose", "isfinite", "isinf", "isnan", "isqrt", "lcm", "ldexp",
        "lgamma", "log", "log10", "log1p", "log2", "modf", "nan", "nextafter", "perm", "pi",
        "pow", "prod", "radians", "remainder", "sin", "sinh", "sqrt", "sumprod", "tan", "tanh",
        "tau", "trunc", "ulp"}),
    "typing": frozenset({
        "AbstractSet", "Annotated", "Any", "AnyStr", "Callable", "ClassVar", "Collection",
        "Concatenate", "Container", "Dict", "Final", "FrozenSet", "Generator", "Generic",
        "Hashable", "Iterable", "Iterator", "List", "Literal", "LiteralString", "Mapping",
        "MutableMapping", "MutableSequence", "MutableSet", "NamedTuple", "Never", "NewType",
        "NoReturn", "NotRequired", "Optional", "ParamSpec", "Protocol", "Required",
        "Reversible", "Self", "Sequence", "Set", "Sized", "SupportsAbs", "SupportsFloat",
        "SupportsIndex", "SupportsInt", "SupportsRound", "TYPE_CHECKING", "Text", "Tuple",
        "Type", "TypeAlias", "TypeGuard", "TypeVar", "TypeVarTuple", "TypedDict", "Union",
        "Unpack", "assert_never", "cast", "final", "get_args", "get_origin", "overload",
        "runtime_checkable"}),
    "functools": frozenset({
        "cache", "cached_property", "cmp_to_key", "lru_cache", "partial", "partialmethod",
        "reduce", "total_ordering"}),
    "dataclasses": frozenset({
        "Field", "FrozenInstanceError", "InitVar", "KW_ONLY", "MISSING", "dataclass", "field",
        "fields", "is_dataclass", "replace"}),
}

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
# nn classes that only hold other modules / parameters: what they hold decides what calling
# them does (an nn.Sequential runs its children). Every other torch.nn module class computes.
NN_CONTAINER_CLASSES = TORCH_CONTAINER_MODULES | {"Sequential"}
# Allowed torch calls that can never answer with a tensor (so `torch.device(d).type` and
# `torch.finfo(t).max` are not tensor methods). Everything else allowed may: nn.Parameter,
# nn.Buffer and torch.Tensor wrap a tensor, the allocators make one.
TORCH_NON_TENSOR_CALLS = {
    "torch.Size", "torch.dtype", "torch.device", "torch.no_grad", "torch.inference_mode",
    "torch.is_tensor", "torch.finfo", "torch.iinfo", "torch.cuda.current_stream",
    "torch.cuda.current_device", "torch.cuda.device", "torch.cuda.is_available",
    "torch.cuda.get_device_capability", "torch.cuda.get_device_properties",
    "torch.cuda.device_count",
}
TRITON_ALLOWED = {
    "triton", "triton.jit", "triton.autotune", "triton.Config", "triton.heuristics",
    "triton.cdiv", "triton.next_power_of_2", "triton.language", "triton.__version__",
    # tensor descriptors (TMA): see descriptors.py for what stays refused
    "triton.tools.tensor_descriptor.TensorDescriptor.from_tensor", "triton.set_allocator",
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
# torch names refused even in an nn.Module's __init__ (besides every `set_*`): files, the RNG's
# state (the trials' inputs are drawn from it) and process-wide settings.
INIT_REFUSED = {"load", "save", "from_file", "manual_seed", "seed", "initial_seed",
                "get_rng_state", "set_rng_state", "fork_rng", "compile",
                "use_deterministic_algorithms", "Generator"}

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
def _process_attrs() -> frozenset[str]:
    """Every function of `os` / `posix` and the names of the modules that reach the process
    (ctypes, subprocess, ...): an allow-list cannot be walked around by a name nobody listed
    (posix_spawn, mkfifo, symlink). Names a tensor, a module or a kernel also has are left to
    the receiver checks (they are not the process's)."""
    import os
    import posix

    names = {n for mod in (os, posix) for n in dir(mod)
             if not n.startswith("__") and callable(getattr(mod, n, None))}
    names |= {"environ", "environb", "ctypes", "cdll", "CDLL", "pydll", "PyDLL", "windll",
              "subprocess", "signal", "socket", "mmap", "pty", "fcntl", "resource", "shutil",
              "multiprocessing", "threading", "_thread", "importlib", "builtins", "sys", "os",
              "posix", "pathlib", "io", "_io", "marshal", "pickle", "atexit", "gc", "inspect"}
    return frozenset(names - _COMMON_NAMES)


# Words a tensor, an nn.Module, a dict or a kernel use too: judged by the other checks.
_COMMON_NAMES = {"open", "read", "write", "close", "stat", "times", "device_encoding", "remove",
                 "replace", "sync", "truncate", "access", "get", "add", "abs", "index", "dup",
                 "register_at_fork", "fspath", "strerror", "device", "cpu_count", "sep",
                 "name", "path", "error", "fsencode", "fsdecode", "minor", "major", "nice",
                 "isatty", "wait", "rename", "link", "pipe", "lseek", "scandir"}
PROCESS_ATTRS = _process_attrs()
# Attributes, on any object, that turn strings into code, modules or attribute reads: the
# checks read the candidate's source, so nothing may evaluate text they never parse.
EVAL_ATTRS = frozenset({
    "get_type_hints", "get_annotations", "ForwardRef", "_eval_type", "_evaluate",
    "evaluate_forward_ref", "singledispatch", "singledispatchmethod", "make_dataclass",
    "update_wrapper", "import_module", "find_spec", "spec_from_file_location",
    "module_from_spec", "exec_module", "load_module", "attrgetter", "methodcaller",
    "FunctionType", "CodeType", "LambdaType", "new_class", "codecs", "runpy", "codeop",
    "linecache", "zipimport", "pkgutil", "literal_eval", "_unsafe_update_src",
})
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
    descriptor = getattr(tl, "tensor_descriptor", None)  # TMA tiles: .load / .store / ...
    for cls in (tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr,
                *([descriptor] if descriptor is not None else [])):
        names.update(n for n in dir(cls) if not n.startswith("_"))
    return frozenset(names)


def _module_allowed(name: str) -> bool:
    return name in ALLOWED_MODULES or name.startswith(ALLOWED_MODULE_PREFIXES)
