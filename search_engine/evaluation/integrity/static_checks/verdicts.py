"""Path verdicts: may a qualified name (`torch.cuda.Event`, `triton.language.math.exp`) be
used, and if not, which check names it and why."""

from __future__ import annotations

import inspect
import types

from search_engine.evaluation.integrity.static_checks.policy import (
    HARMLESS_DUNDERS, INIT_REFUSED, PURE_MODULE_NAMES, PURE_MODULES, STREAM_NAMES, TIMER_NAMES,
    TORCH_ALLOWED, TRITON_ALLOWED, _module_allowed, nn_module_classes, torch_dtype_names,
)


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
        if len(parts) >= 2 and not private and parts[1] not in PURE_MODULE_NAMES[root]:
            return ("static.forbidden_attribute",
                    f"uses {path}: {parts[1]!r} is not among the names of {root} a candidate "
                    "may use (none may evaluate strings as code, reach other modules or copy "
                    "objects: see PURE_MODULE_NAMES)")
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
    if in_init and (parts[-1] in INIT_REFUSED or parts[-1].startswith("set_")):
        return ("static.forbidden_attribute",
                f"uses {path} in __init__: files, the random generator's state and global "
                "settings are not part of creating parameters")
    if in_init:
        return None  # an nn.Module's parameters may be created with any other public torch API
    return ("static.torch_compute",
            f"uses {path} outside a kernel: torch does the work, not the candidate's kernel "
            "(allowed: allocation, views, metadata)")
