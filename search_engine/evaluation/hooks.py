"""Runtime evidence collected inside the sandbox child (trusted code, installed before the
candidate is imported).

`LaunchRecorder` wraps `JITFunction.run` and the interpreter's `InterpretedFunction.run`
(the launch path of `kernel[grid](...)`, autotuned or not) so every Triton launch is
recorded with the kernel's name and the file that defined it. That proves the candidate's
own kernels ran — on a GPU and in the interpreter alike — and yields the compiled
metadata (registers, spills, shared memory) for diagnostics.

`AtenWorkRecorder` counts, during the candidate's calls, torch compute and scalar reads
outside its kernels (a violation on every target) and, on the interpreter (where there is no
device time), the bytes touched by torch operators outside any Triton launch; `InterpreterWork` counts
the bytes the candidate's kernels really load and store (masked lanes excluded): together
the coverage proxy. Argument sizes are never counted: `expand` makes them lie.

The ghost replay's switch (`install()` returns it) turns every Triton launch into a no-op;
what watches each call (memory fills, result projections, threads, dispatch escapes) is
`call_watch`'s.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

VIEW_OR_ALLOC_OPS = {
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "slice", "select", "unsqueeze", "squeeze", "detach", "alias", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "_to_copy_meta",
    "contiguous", "unbind", "split", "chunk", "narrow", "view_as", "size", "stride",
    "is_contiguous", "_reshape_alias", "resize_", "set_", "item", "_local_scalar_dense",
}


# aten ops the interpreter's launch path runs to move arguments to and from the host.
INTERPRETER_LAUNCH_OPS = {"copy_", "set_", "new_empty", "_to_copy", "clone", "lift_fresh_copy"}


@dataclass
class KernelLaunch:
    name: str
    filename: str
    own: bool
    stream: int | None
    seconds: float
    arg_bytes: int  # interpreter: bytes really loaded and stored; GPU: argument bytes


@dataclass
class LaunchRecorder:
    own_filename: str = ""
    launches: list[KernelLaunch] = field(default_factory=list)
    compiled: dict[str, Any] = field(default_factory=dict)  # name -> CompiledKernel
    in_launch: bool = False
    own_launches: int = 0  # the candidate's launches so far (the projections note when)
    compile_only: bool = False  # launches compile their kernel and stop (`warm` request)
    work: "InterpreterWork | None" = None
    # Python callables handed to a kernel (or named in its body) that are not kernels:
    # the interpreter would run them on the host (`runtime.python_callable_in_kernel`).
    host_callables: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _installed: list = field(default_factory=list)
    _callables_seen: dict = field(default_factory=dict)

    def install(self):
        """Wrap the launch paths; returns the ghost switch (`switch(True)`: launches do
        nothing). It lives only in the wrappers' closure, not on an attribute."""
        from triton.runtime.jit import JITFunction

        classes = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        global _TRITON_TYPES
        _TRITON_TYPES = triton_types()
        noop = [False]
        for cls in classes:
            original = cls.run
            cls.run = self._wrap(original, noop)
            self._installed.append((cls, original))
        return lambda on: noop.__setitem__(0, bool(on))

    def uninstall(self) -> None:
        for cls, original in self._installed:
            cls.run = original
        self._installed.clear()

    def _wrap(self, original, noop):
        recorder = self

        def run(fn_self, *args, grid, warmup, **kwargs):
            if warmup or recorder.compile_only:
                return original(fn_self, *args, grid=grid, warmup=True, **kwargs)
            py_fn = getattr(fn_self, "fn", None)
            name = getattr(py_fn, "__name__", "?")
            filename = getattr(getattr(py_fn, "__code__", None), "co_filename", "?")
            stream = _current_stream()
            own = filename == recorder.own_filename
            recorder.own_launches += own
            recorder._note_host_callables(fn_self, name, args, kwargs)
            was_in_launch = recorder.in_launch
            recorder.in_launch = True
            work_before = recorder.work.bytes if recorder.work else 0
            if recorder.work:
                was_own, recorder.work.own = recorder.work.own, own
            t0 = time.perf_counter()
            try:
                kernel = None if noop[0] else original(
                    fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                recorder.in_launch = was_in_launch
                if recorder.work:
                    recorder.work.own = was_own
            seconds = time.perf_counter() - t0
            moved = (recorder.work.bytes - work_before) if recorder.work else None
            with recorder._lock:
                recorder.launches.append(KernelLaunch(
                    name=name, filename=filename, own=own,
                    stream=stream, seconds=seconds,
                    arg_bytes=_tensor_bytes(args, kwargs) if moved is None else moved,
                ))
                if own and kernel is not None and hasattr(kernel, "metadata"):
                    recorder.compiled[name] = kernel
            return kernel

        return run

    def _note_host_callables(self, fn_self, name: str, args, kwargs) -> None:
        found = [f"argument {type(v).__name__} {getattr(v, '__name__', '')}".strip()
                 for v in list(args) + list(kwargs.values()) if _is_host_callable(v)]
        if id(fn_self) not in self._callables_seen:
            self._callables_seen[id(fn_self)] = _host_callables_named_in(fn_self)
        found += self._callables_seen[id(fn_self)]
        if found:
            with self._lock:
                self.host_callables[name] = sorted(set(self.host_callables.get(name, []))
                                                   | set(found))

    def mark(self) -> int:
        return len(self.launches)

    def since(self, mark: int) -> list[KernelLaunch]:
        return self.launches[mark:]

    def own_names(self) -> list[str]:
        return sorted({launch.name for launch in self.launches if launch.own})

    def own_symbols(self) -> list[str]:
        """The exact names the compiler gave the candidate's kernels (what a profiler
        shows), from the compiled kernels themselves: coverage matches these whole, never
        as substrings of another kernel's name."""
        names = set()
        for kernel in self.compiled.values():
            name = getattr(kernel, "name", None) or getattr(
                getattr(kernel, "metadata", None), "name", None)
            if isinstance(name, str) and name:
                names.add(name)
        return sorted(names)

    def kernel_metadata(self) -> list[dict]:
        """Registers, spills, shared memory and warps of each compiled own kernel."""
        rows = []
        for name, kernel in sorted(self.compiled.items()):
            try:
                kernel._init_handles()
            except Exception:
                pass
            meta = kernel.metadata
            rows.append({
                "name": name,
                "n_regs": getattr(kernel, "n_regs", None),
                "n_spills": getattr(kernel, "n_spills", None),
                "shared_bytes": getattr(meta, "shared", None),
                "num_warps": getattr(meta, "num_warps", None),
                "num_stages": getattr(meta, "num_stages", None),
            })
        return rows


_TRITON_TYPES: frozenset = frozenset()  # Triton's classes, taken before the candidate loads


def triton_types() -> frozenset:
    """Every class the loaded Triton modules define. Taken when the recorder is installed,
    before the candidate is imported, so no class of the candidate's (whatever `__module__`,
    `run` or `fn` it claims) is among them."""
    import sys

    found = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "triton" or name.startswith("triton.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and (value.__module__ or "").startswith("triton"):
                found.add(value)
    return frozenset(found)


def _is_host_callable(value) -> bool:
    """A plain Python callable (function, lambda, bound method, callable object) that is not
    a Triton kernel, a tensor, a type or one of Triton's own objects."""
    import torch

    if not callable(value) or isinstance(value, (type, torch.Tensor)):
        return False
    return not _is_triton_object(value)


def _is_triton_object(value) -> bool:
    """JITFunction, Autotuner, Heuristics, tl.constexpr and tl's builtins, judged by the
    exact class (taken before the candidate loaded) or by the file a function's code is in,
    never by attributes an object of the candidate's can carry."""
    import os
    import types

    if type(value) in (_TRITON_TYPES or triton_types()):  # outside a sandbox: taken now
        return True
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, types.FunctionType):
        import triton

        return value.__code__.co_filename.startswith(os.path.dirname(triton.__file__) + os.sep)
    return False


def _host_callables_named_in(fn_self) -> list[str]:
    """Globals a kernel's body (and its @triton.jit helpers) names that are plain Python
    callables: inside a compiled kernel they cannot run; the interpreter runs them on the
    host."""
    found, seen, todo = [], set(), [fn_self]
    while todo:
        jit = todo.pop()
        fn = getattr(jit, "fn", None)
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        names = set(code.co_names)
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                names |= set(const.co_names)
        for n in sorted(names):
            value = fn.__globals__.get(n)
            if value is None:
                continue
            if _is_triton_object(value) and hasattr(value, "fn"):
                todo.append(value)  # a @triton.jit helper: look inside it too
            elif _is_host_callable(value) and not _is_library(value):
                found.append(f"global {n}")
    return found


def _is_library(value) -> bool:
    """Callables of Python and the libraries (`range`, `min`, `math.sqrt`) are the
    interpreter's and the compiler's business; what the candidate's own files define is
    not."""
    import types

    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return True
    code = getattr(value, "__code__", None) or getattr(getattr(value, "__call__", None),
                                                       "__code__", None)
    filename = getattr(code, "co_filename", "") or ""
    return "site-packages" in filename or "/lib/python" in filename


def _current_stream() -> int | None:
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return torch.cuda.current_stream().cuda_stream
    except Exception:
        pass
    return None


def _tensor_bytes(args, kwargs) -> int:
    import torch

    total = 0
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
    return total


# What torch may do outside the candidate's kernels during a call: views, allocations, fills,
# copies and layout changes (their bytes still count against coverage). Anything else is
# arithmetic, a reduction or a library kernel: torch doing the problem's work by a side path,
# however the call was reached (a stored function, a module in a container, a partial, an
# operator on a tensor taken out of a list).
MOVEMENT_OPS = VIEW_OR_ALLOC_OPS | INTERPRETER_LAUNCH_OPS | {
    "to", "fill_", "zero_", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "new_zeros", "new_ones", "new_full", "scalar_tensor", "arange", "cat", "stack",
    "constant_pad_nd", "repeat", "split_with_sizes", "_unsafe_split", "unbind_copy",
    "expand_copy", "permute_copy", "view_copy", "alias_copy", "t_copy", "transpose_copy",
    "unsqueeze_copy", "squeeze_copy", "slice_copy", "select_copy", "as_strided_copy",
    "detach_", "lift", "record_stream", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "numel", "dim", "is_same_size", "_has_compatible_shallow_copy_type",
    "resolve_conj", "resolve_neg", "is_nonzero",
}
# Reading a tensor's value into host Python, whichever Python method led there.
SCALAR_READ_OPS = {"_local_scalar_dense", "is_nonzero"}


def _torch_called_from_triton(torch_dir: str, triton_dir: str, skip: str) -> bool:
    """Whether the innermost Python frame outside torch (and this file) that led to a torch
    op is Triton's own code (an autotuner timing its configurations, a launcher's helper),
    not the candidate's: only Triton's direct calls are exempt, so a candidate's function
    that Triton calls back is still the candidate's."""
    import sys

    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(torch_dir) or name == skip):
            return name.startswith(triton_dir)
        frame = frame.f_back
    return False


def make_aten_work_recorder(launches: LaunchRecorder, *, interpreter: bool = True):
    """A TorchDispatchMode over the candidate's calls: bytes touched by torch ops outside
    Triton launches (the interpreter's coverage proxy), torch inside a kernel's body, and,
    on every target, torch compute and scalar reads outside the candidate's kernels."""
    import os

    import torch
    import triton
    from torch.utils._python_dispatch import TorchDispatchMode

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    triton_dir = os.path.dirname(triton.__file__) + os.sep

    class AtenWorkRecorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes = 0
            self.ops: dict[str, int] = {}
            self.inside_kernel: dict[str, int] = {}
            self.compute: dict[str, int] = {}
            self.scalar_reads: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.__name__.split(".")[0]
            if launches.in_launch:
                # The interpreter itself only moves storages; compute here is the kernel
                # body calling torch, which a real GPU kernel cannot do (on a GPU, a launch
                # runs Triton's host code only).
                if interpreter and name not in INTERPRETER_LAUNCH_OPS and \
                        name not in VIEW_OR_ALLOC_OPS:
                    self.inside_kernel[name] = self.inside_kernel.get(name, 0) + 1
                return out
            watched = name in SCALAR_READ_OPS or name not in MOVEMENT_OPS
            if watched and not _torch_called_from_triton(torch_dir, triton_dir, __file__):
                found = self.scalar_reads if name in SCALAR_READ_OPS else self.compute
                found[name] = found.get(name, 0) + 1
            if name in VIEW_OR_ALLOC_OPS:
                return out
            touched = _nested_bytes(args) + _nested_bytes(kwargs) + _nested_bytes(out)
            self.bytes += touched
            self.ops[name] = self.ops.get(name, 0) + touched
            return out

    def _nested_bytes(value) -> int:
        if isinstance(value, torch.Tensor):
            return value.numel() * value.element_size()
        if isinstance(value, (list, tuple)):
            return sum(_nested_bytes(v) for v in value)
        if isinstance(value, dict):
            return sum(_nested_bytes(v) for v in value.values())
        return 0

    return AtenWorkRecorder()


def snapshot_timers() -> dict[str, Any]:
    """The timing primitives as they were before the candidate was imported."""
    import time as time_module

    import torch

    return {
        "time.perf_counter": time_module.perf_counter,
        "time.time": time_module.time,
        "time.monotonic": time_module.monotonic,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
    }


def tampered_timers(snapshot: dict[str, Any]) -> list[str]:
    """Names of timing primitives that are no longer what they were (patched at runtime)."""
    now = snapshot_timers()
    return sorted(name for name, original in snapshot.items() if now[name] is not original)


class InterpreterWork:
    """What the interpreter's loads and stores really touch (masked-off lanes excluded).

    `bytes` is the volume (every load counted); `unique_bytes()` counts each address of
    the candidate's own launches once since `begin()`: re-reading the same data does not
    make a kernel's share of the work larger (coverage measures necessary work)."""

    COMPACT_AT = 1 << 22  # addresses kept before they are deduplicated in place

    def __init__(self):
        self.bytes = 0
        self.own = False  # set by the launch recorder around the candidate's own launches
        self._loads: list = []   # byte-address arrays
        self._stores: list = []
        self._pending = 0
        self._installed: list = []

    def begin(self) -> None:
        self._loads, self._stores, self._pending = [], [], 0

    def unique_bytes(self) -> int:
        import numpy as np

        return sum(int(np.unique(np.concatenate(chunks)).size)
                   for chunks in (self._loads, self._stores) if chunks)

    def _keep(self, chunks: list, ptrs, mask, itemsize: int) -> None:
        """Every byte address the access touches: the same bytes read again through a
        pointer of another width (an int8 view of a float buffer) are not new work."""
        import numpy as np

        addresses = np.asarray(ptrs.data)[np.asarray(mask.data, dtype=bool)].ravel()
        chunks.append((addresses[:, None] + np.arange(itemsize, dtype=addresses.dtype))
                      .ravel())
        self._pending += addresses.size * itemsize
        if self._pending > self.COMPACT_AT:
            for kept in (self._loads, self._stores):
                if kept:
                    kept[:] = [np.unique(np.concatenate(kept))]
            self._pending = 0

    def install(self) -> None:
        import numpy as np
        from triton.runtime.interpreter import InterpreterBuilder

        work = self
        load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store

        def create_masked_load(builder, ptrs, mask, other, *args, **kwargs):
            ret = load(builder, ptrs, mask, other, *args, **kwargs)
            work.bytes += int(np.count_nonzero(mask.data)) * ret.data.dtype.itemsize
            if work.own:
                work._keep(work._loads, ptrs, mask, ret.data.dtype.itemsize)
            return ret

        def create_masked_store(builder, ptrs, value, mask, *args, **kwargs):
            work.bytes += int(np.count_nonzero(mask.data)) * value.data.dtype.itemsize
            if work.own:
                work._keep(work._stores, ptrs, mask, value.data.dtype.itemsize)
            return store(builder, ptrs, value, mask, *args, **kwargs)

        InterpreterBuilder.create_masked_load = create_masked_load
        InterpreterBuilder.create_masked_store = create_masked_store
        self._installed = [(InterpreterBuilder, "create_masked_load", load),
                           (InterpreterBuilder, "create_masked_store", store)]
