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
  static.forbidden_attribute   dunders, frames, private or module-reaching attributes, names
                               of pure modules outside their lists, attributes that evaluate
                               or import by name (get_type_hints, import_module, ...)
  static.string_code           strings that could become code: string annotations and typing
                               strings that are not type expressions, format fields reading
                               attributes, dunder names spelled as strings, type(n, b, ns)
  static.torch_compute         torch / F / Tensor compute outside the candidate's kernels,
                               operators and builtins on tensors (`x + 1`, `abs(x)`, `sum(xs)`)
  static.monkeypatch, static.timer_patch   assigning to attributes of modules
  static.torch_override        Tensor subclasses, __torch_function__ / __torch_dispatch__
  static.kernel_escape         a jit body using something other than Triton
  static.try_except_fallback   a try/except that could fall back to another implementation
  static.precision_downcast    lower precision than the policy allows
  static.precision_mismatch    what the interpreter computes unlike the GPU (TF32 dots, fast
                               math) under the strict fp32 policy

Layout: `policy` (the allow-lists), `context` (StaticContext, Facts and the AST helpers),
`verdicts` (may a qualified name be used), and one module per family of checks: `kernels`,
`access` (imports, builtins, attributes), `compute` (torch outside kernels, precision),
`precision` (one semantics on CPU and GPU),
`modules` (torch compute handed around as values: stored functions, modules in containers,
inherited computation), `strings` (strings that could become code) and `tampering`
(fallbacks, monkeypatching, overrides). This module runs them in order.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from search_engine.evaluation.integrity.static_checks.access import (  # noqa: F401
    ALLOWED_IMPORTS_TEXT, check_dynamic_access, check_forbidden_attributes, check_forbidden_calls,
    check_forbidden_imports,
)
from search_engine.evaluation.integrity.static_checks.compute import (  # noqa: F401
    check_precision_downcast, check_torch_compute,
)
from search_engine.evaluation.integrity.static_checks.context import (  # noqa: F401
    Facts, StaticContext,
)
from search_engine.evaluation.integrity.static_checks.descriptors import (  # noqa: F401
    check_tensor_descriptors,
)
from search_engine.evaluation.integrity.static_checks.host_values import (  # noqa: F401
    check_host_operators,
)
from search_engine.evaluation.integrity.static_checks.kernels import (  # noqa: F401
    check_defines_modelnew, check_kernel_bodies, check_uses_triton_kernel,
)
from search_engine.evaluation.integrity.static_checks.policy import (  # noqa: F401
    ALLOWED_MODULES, ALLOWED_MODULE_PREFIXES, DYNAMIC_ATTR_BUILTINS, EXPAND_METHODS,
    FORBIDDEN_BUILTINS, FORBIDDEN_DUNDER_DEFS, HARMLESS_DUNDERS, INIT_METHODS, INTROSPECTION_ATTRS,
    KERNEL_BUILTINS, LOW_PRECISION_METHODS, LOW_PRECISION_NAMES, METADATA_ATTRS, MODULE_MACHINERY,
    NON_TENSOR_CALLS, OVERRIDE_NAMES, PROCESS_ATTRS, PURE_MODULE_NAMES, PURE_MODULES,
    STREAM_NAMES, TENSOR_ALLOWED, TORCH_NON_TENSOR_CALLS, NN_CONTAINER_CLASSES, EVAL_ATTRS,
    TIMER_NAMES, TORCH_ALLOWED, TORCH_CONTAINER_MODULES, TORCH_SUBCLASS_BASES, TRITON_ALLOWED,
    forbidden_tensor_names, kernel_attrs, nn_module_classes, tensor_names, torch_dtype_names,
)
from search_engine.evaluation.integrity.static_checks.modules import (  # noqa: F401
    check_torch_modules,
)
from search_engine.evaluation.integrity.static_checks.precision import (  # noqa: F401
    check_precision_semantics,
)
from search_engine.evaluation.integrity.static_checks.strings import (  # noqa: F401
    check_string_code,
)
from search_engine.evaluation.integrity.static_checks.tampering import (  # noqa: F401
    check_monkeypatching, check_torch_override, check_try_except_fallback,
)
from search_engine.evaluation.integrity.static_checks.verdicts import path_verdict  # noqa: F401
from search_engine.evaluation.result import IntegrityFlag

STRUCTURAL_CHECKS = {"static.syntax_error", "static.missing_modelnew"}


# Kept for callers of the block-list era: the allow-list supersedes it.
check_high_level_torch_compute = check_torch_compute

STATIC_CHECKS: list[Callable[[StaticContext], list[IntegrityFlag]]] = [
    check_defines_modelnew,
    check_uses_triton_kernel,
    check_forbidden_imports,
    check_forbidden_calls,
    check_tensor_descriptors,
    check_dynamic_access,
    check_forbidden_attributes,
    check_string_code,
    check_torch_compute,
    check_torch_modules,
    check_host_operators,
    check_monkeypatching,
    check_torch_override,
    check_kernel_bodies,
    check_try_except_fallback,
    check_precision_downcast,
    check_precision_semantics,
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
