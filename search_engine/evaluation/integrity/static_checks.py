"""Static integrity checks: read the candidate's source (AST) before anything runs.

Each check is a small function `(ctx) -> list[IntegrityFlag]`; `STATIC_CHECKS` lists them.
A structural failure (no parse, no `ModelNew`) is reported as `compile_error` by the
pipeline; every other `hack` flag makes the result `hack_suspected`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from search_engine.evaluation.result import IntegrityFlag

STRUCTURAL_CHECKS = {"static.syntax_error", "static.missing_modelnew"}

FORBIDDEN_MODULES = {
    "os", "sys", "subprocess", "socket", "ctypes", "threading", "_thread", "multiprocessing",
    "gc", "inspect", "importlib", "builtins", "signal", "asyncio", "concurrent", "shutil",
    "pty", "mmap", "resource", "urllib", "http", "requests", "pickle", "marshal", "cffi",
    "time", "timeit", "sched", "pathlib", "io", "tempfile", "atexit", "weakref",
}
FORBIDDEN_CALLS = {
    "exec", "eval", "__import__", "compile", "open", "globals", "locals", "vars",
    "breakpoint", "input", "setattr", "delattr",
}
# Attributes that reach the process, the environment or other modules' internals.
FORBIDDEN_ATTRIBUTES = {
    "environ", "getenv", "system", "popen", "_exit", "fork", "__globals__", "__builtins__",
    "__code__", "__subclasses__", "__dict__", "_C", "ops", "multiprocessing",
}
TIMER_NAMES = {
    "time", "perf_counter", "perf_counter_ns", "monotonic", "process_time", "Event",
    "synchronize", "elapsed_time", "record", "do_bench", "Timer",
}
HIGH_LEVEL_TORCH_OPS = {
    "softmax", "log_softmax", "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "einsum",
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm",
    "scaled_dot_product_attention", "cross_entropy", "nll_loss", "tensordot", "chain_matmul",
    "linalg", "cumsum", "cumprod", "logsumexp", "normalize", "multi_head_attention_forward",
    "compile", "sdpa",
}
COMPUTE_MODULES = {
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "Softmax", "LogSoftmax",
    "MultiheadAttention", "Transformer", "TransformerEncoderLayer", "LSTM", "GRU", "RNN",
}
LOW_PRECISION_NAMES = {
    "float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8e4nv", "float8e5",
    "fp16", "bf16", "fp8e4nv", "fp8e5",
}
LOW_PRECISION_METHODS = {"half", "bfloat16"}


@dataclass
class StaticContext:
    source: str
    tree: ast.Module
    problem_dtype: str = "float32"
    precision_policy: str = "strict"
    imported_modules: dict[str, str] | None = None  # alias -> module

    @property
    def aliases(self) -> dict[str, str]:
        if self.imported_modules is None:
            self.imported_modules = _import_aliases(self.tree)
        return self.imported_modules


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


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _is_triton_jit(decorator: ast.AST) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = _dotted(target)
    return name in {"triton.jit", "jit", "triton.autotune", "autotune", "triton.heuristics",
                    "heuristics"}


def _kernel_names(tree: ast.Module) -> set[str]:
    return {
        node.name for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(_is_triton_jit(d) for d in node.decorator_list)
    }


def _launched_names(tree: ast.Module) -> set[str]:
    """Names launched as `kernel[grid](...)`."""
    return {
        node.func.value.id for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
    }


# ----------------------------------------------------------------------------- checks


def check_defines_modelnew(ctx: StaticContext) -> list[IntegrityFlag]:
    if any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ctx.tree.body):
        return []
    return [_flag("static.missing_modelnew", None, "the candidate defines no class ModelNew")]


def check_uses_triton_kernel(ctx: StaticContext) -> list[IntegrityFlag]:
    kernels = _kernel_names(ctx.tree)
    if not kernels:
        return [_flag("static.no_triton_kernel", None,
                      "no @triton.jit kernel is defined: the work is not done by the candidate's "
                      "own kernels")]
    if not kernels & _launched_names(ctx.tree):
        return [_flag("static.kernel_never_launched", None,
                      f"kernels {sorted(kernels)} are defined but never launched as kernel[grid](...)")]
    return []


def check_forbidden_imports(ctx: StaticContext) -> list[IntegrityFlag]:
    flags = []
    for node in ast.walk(ctx.tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            root = name.split(".")[0]
            if root in FORBIDDEN_MODULES or name in {"torch.multiprocessing", "torch.cuda.nvtx"}:
                flags.append(_flag("static.forbidden_import", node,
                                   f"imports {name!r} (process, OS, network, timer or "
                                   "introspection access is not allowed in a kernel)"))
    return flags


def check_forbidden_calls(ctx: StaticContext) -> list[IntegrityFlag]:
    flags = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in FORBIDDEN_CALLS:
            flags.append(_flag("static.forbidden_call", node, f"calls {node.func.id}()"))
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            flags.append(_flag("static.forbidden_call", node,
                               f"touches {_dotted(node) or node.attr!r}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "getattr" and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) \
                and str(node.args[1].value) in FORBIDDEN_ATTRIBUTES | FORBIDDEN_CALLS:
            flags.append(_flag("static.forbidden_call", node,
                               f"getattr(..., {node.args[1].value!r})"))
    return flags


def check_try_except_fallback(ctx: StaticContext) -> list[IntegrityFlag]:
    """A try/except around the kernel lets a failing kernel silently fall back to torch."""
    flags = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Try) and node.handlers:
            only_reraise = all(
                len(h.body) == 1 and isinstance(h.body[0], ast.Raise) for h in node.handlers
            )
            if not only_reraise:
                flags.append(_flag("static.try_except_fallback", node,
                                   "try/except whose handler does something other than re-raise: "
                                   "a failing kernel could fall back to another implementation"))
    return flags


def check_monkeypatching(ctx: StaticContext) -> list[IntegrityFlag]:
    """Assigning to attributes of imported modules (timers, torch, triton) is tampering."""
    flags = []
    modules = set(ctx.aliases)
    for node in ast.walk(ctx.tree):
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for sub in targets:
            if isinstance(sub, ast.Attribute):
                dotted = _dotted(sub)
                root = dotted.split(".")[0] if dotted else ""
                if root not in modules:
                    continue
                timer = sub.attr in TIMER_NAMES or any(
                    part in TIMER_NAMES for part in dotted.split(".")[1:])
                flags.append(_flag(
                    "static.timer_patch" if timer else "static.monkeypatch", node,
                    f"assigns to {dotted!r}"
                    + (" (a timer or synchronization primitive)" if timer else
                       " (patching a library changes what the evaluator measures)"),
                ))
    return flags


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


def check_high_level_torch_compute(ctx: StaticContext) -> list[IntegrityFlag]:
    """torch.softmax, F.linear, torch.matmul, `@`, nn.Linear calls... doing the problem's work."""
    flags = []
    module_attrs = _compute_module_attributes(ctx.tree)
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            flags.append(_flag("static.torch_compute", node, "uses the @ operator (a torch matmul)"))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        dotted = _dotted(func)
        if isinstance(func, ast.Attribute) and func.attr in HIGH_LEVEL_TORCH_OPS:
            root = dotted.split(".")[0] if dotted else ""
            if root in ("tl", "triton") or ctx.aliases.get(root, "").startswith("triton"):
                continue  # tl.cumsum etc. run inside the candidate's own kernel
            flags.append(_flag("static.torch_compute", node,
                               f"calls {dotted or '.' + func.attr}() — torch does the work, "
                               "not the candidate's kernel"))
        elif isinstance(func, ast.Name) and ctx.aliases.get(func.id, "").split(".")[-1] \
                in HIGH_LEVEL_TORCH_OPS and ctx.aliases[func.id].startswith("torch"):
            flags.append(_flag("static.torch_compute", node, f"calls {ctx.aliases[func.id]}()"))
        elif dotted.startswith("self.") and dotted.count(".") == 1 \
                and dotted.split(".")[1] in module_attrs:
            flags.append(_flag("static.torch_compute", node,
                               f"calls {dotted}(), a torch {module_attrs[dotted.split('.')[1]]} "
                               "module (keep it for parameters only)"))
    return flags


def _compute_module_attributes(tree: ast.Module) -> dict[str, str]:
    """`self.x = nn.Linear(...)` assignments: attribute name -> module class."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            cls = _dotted(node.value.func).split(".")[-1]
            if cls in COMPUTE_MODULES:
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and _dotted(t).startswith("self."):
                        found[t.attr] = cls
    return found


STATIC_CHECKS: list[Callable[[StaticContext], list[IntegrityFlag]]] = [
    check_defines_modelnew,
    check_uses_triton_kernel,
    check_forbidden_imports,
    check_forbidden_calls,
    check_try_except_fallback,
    check_monkeypatching,
    check_precision_downcast,
    check_high_level_torch_compute,
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
    for check in STATIC_CHECKS:
        flags.extend(check(ctx))
    return flags
