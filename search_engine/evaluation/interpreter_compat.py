"""Make Triton's interpreter (``TRITON_INTERPRET=1``) run what a GPU run would run.

The sandbox child calls :func:`install` at start-up, before the candidate is imported, when
it runs under the interpreter. What it fixes (checked against the installed Triton, 3.x):

- ``@triton.autotune`` with more than one ``triton.Config``: ``Autotuner.run`` benchmarks
  each config with ``driver.active.get_benchmarker()`` (``triton.testing.do_bench``), and
  the interpreter has no driver, so the first launch fails with ``RuntimeError: 0 active
  drivers``. Under the interpreter timings mean nothing, so by default the autotuner keeps
  the first config that survives the candidate's own pruning (``mode="first"``, no
  benchmarking, deterministic); ``mode="time"`` times every config once with
  ``time.perf_counter`` instead. Either way no driver is needed, and a ``do_bench`` passed
  by the candidate is not used.

- 2-D masks combined with ``&`` (``(rows[:, None] < M) & (cols[None, :] < N)``) were
  checked and run correctly under the interpreter of this Triton; no workaround is needed
  (``tests/search_engine/evaluation/test_static_checks.py`` keeps a regression test).

- ``triton.language.extra.libdevice`` functions are stubs (``def exp(arg0): ...``) that the
  compiler swaps for the backend's libdevice; the interpreter patches ``tl.math`` but not
  libdevice, so ``libdevice.exp(x)`` returns None (and ``extra.cuda.libdevice`` raises
  "extern_elementwise not supported in interpreter mode"). While a kernel runs, the libdevice
  modules it can see are pointed at the interpreter's ``tl.math`` functions of the same name,
  or at numpy for the common math functions tl.math lacks (tanh, log1p, pow, ...).

`install` is idempotent, does nothing when ``TRITON_INTERPRET`` is not set (unless
``force=True``) and returns what it patched.
"""

from __future__ import annotations

import os
import time

import numpy as np

_MARK = "_kernelhub_interpreter_compat"


def interpreter_enabled() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in {"1", "true", "yes", "on"}


def perf_counter_bench(kernel_call, quantiles=None, reps: int = 1, **_ignored):
    """A driver-free stand-in for ``triton.testing.do_bench``: milliseconds, wall clock."""
    kernel_call()  # warm-up (the interpreter has nothing to compile, but hooks may run)
    times = []
    for _ in range(max(1, reps)):
        start = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    if quantiles is None:
        return times[len(times) // 2]
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]


def install(mode: str = "first", force: bool = False) -> list[str]:
    """Patch Triton for the interpreter; returns the names of what was patched."""
    if mode not in {"first", "time"}:
        raise ValueError(f"mode must be 'first' or 'time', not {mode!r}")
    if not (force or interpreter_enabled()):
        return []
    from triton.runtime import autotuner

    tuner = autotuner.Autotuner
    patched = []
    if getattr(tuner, _MARK, None) != mode:
        original_prune = getattr(tuner.prune_configs, "__wrapped__", tuner.prune_configs)

        def prune_configs(self, kwargs):
            pruned = original_prune(self, kwargs)
            # One config left: Autotuner.run takes it without benchmarking.
            return list(pruned)[:1] if mode == "first" else pruned

        prune_configs.__wrapped__ = original_prune

        def do_bench(self):  # replaces a cached_property that asks the (absent) driver
            return perf_counter_bench

        tuner.prune_configs = prune_configs
        tuner.do_bench = property(do_bench)
        setattr(tuner, _MARK, mode)
        patched += ["triton.runtime.autotuner.Autotuner.prune_configs",
                    "triton.runtime.autotuner.Autotuner.do_bench"]
    patched += _install_libdevice()
    return patched


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


NUMPY_LIBDEVICE = {
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "log1p": np.log1p, "expm1": np.expm1, "log10": np.log10,
    "exp10": lambda x: np.power(np.asarray(10, x.dtype), x), "cbrt": np.cbrt,
    "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint, "round": _round_half_away,
    "fabs": np.abs, "isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit,
    "pow": np.power, "fmax": np.fmax, "fmin": np.fmin, "fmod": np.fmod, "atan2": np.arctan2,
    "hypot": np.hypot, "copysign": np.copysign, "fast_expf": np.exp, "fast_logf": np.log,
    "fast_tanhf": np.tanh, "fast_powf": np.power, "fast_dividef": np.divide,
}
BOOL_RESULTS = {"isnan", "isinf", "signbit"}


def _numpy_libdevice(name, np_fn):
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def fn(*args, _semantic=None, **_kwargs):
        args = [a.value if isinstance(a, tl.constexpr) else a for a in args]
        first = next((a for a in args if isinstance(a, tl.tensor)), None)
        if first is None:
            raise TypeError(f"libdevice.{name} needs a tensor argument under the interpreter")
        np_dtype = first.handle.data.dtype
        data = [a.handle.data if isinstance(a, tl.tensor) else np.asarray(a, dtype=np_dtype)
                for a in args]
        out = np.asarray(np_fn(*data))
        dtype = tl.int1 if name in BOOL_RESULTS else first.dtype
        out = out.astype(np.bool_ if name in BOOL_RESULTS else np_dtype)
        ty = tl.block_type(dtype, list(out.shape)) if out.ndim and first.type.is_block() \
            else dtype
        return tl.tensor(TensorHandle(out, dtype.scalar), ty)

    return fn


def _libdevice_modules(fn) -> list:
    import sys

    names = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
             "triton.language.extra.hip.libdevice")
    mods = [sys.modules[n] for n in names if n in sys.modules]
    mods += [v for v in getattr(fn, "__globals__", {}).values()
             if isinstance(v, type(sys)) and v.__name__.endswith("libdevice") and v not in mods]
    return mods


def _install_libdevice() -> list[str]:
    from triton.runtime import interpreter

    if getattr(interpreter._patch_lang, _MARK, False):
        return []
    original = interpreter._patch_lang

    def _patch_lang(fn):
        import triton.language as tl

        scope = original(fn)  # tl.math is patched now (interpreter builtins)
        for module in _libdevice_modules(fn):
            for name in dir(module):
                if name.startswith("_"):
                    continue
                if name in NUMPY_LIBDEVICE:
                    scope.set_attr(module, name, _numpy_libdevice(name, NUMPY_LIBDEVICE[name]))
                elif hasattr(tl.math, name) and callable(getattr(tl.math, name)):
                    scope.set_attr(module, name, getattr(tl.math, name))
        return scope

    setattr(_patch_lang, _MARK, True)
    interpreter._patch_lang = _patch_lang
    return ["triton.runtime.interpreter._patch_lang (libdevice)"]
