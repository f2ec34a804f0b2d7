"""Runtime evidence collected inside the sandbox child (trusted code, installed before the
candidate is imported).

`LaunchRecorder` wraps `JITFunction.run` and the interpreter's `InterpretedFunction.run`
(the launch path of `kernel[grid](...)`, autotuned or not) so every Triton launch is
recorded with the kernel's name and the file that defined it. That proves the candidate's
own kernels ran — on a GPU and in the interpreter alike — and yields the compiled
metadata (registers, spills, shared memory) for diagnostics.

`AtenWorkRecorder` (interpreter only, where there is no device time) counts the bytes
touched by torch operators called outside any Triton launch, and `InterpreterWork` counts
the bytes the candidate's kernels really load and store (masked lanes excluded): together
the coverage proxy. Argument sizes are never counted: `expand` makes them lie.

Ghost mode (`LaunchRecorder.ghost`) turns every Triton launch into a no-op, and
`poisoned_allocations` fills fresh tensors with NaN: if a candidate's outputs are still
right, its kernels did not compute them.
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
    ghost: bool = False  # launches do nothing (ghost replay)
    compile_only: bool = False  # launches compile their kernel and stop (`warm` request)
    work: "InterpreterWork | None" = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _installed: list = field(default_factory=list)

    def install(self) -> None:
        from triton.runtime.jit import JITFunction

        classes = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            original = cls.run
            cls.run = self._wrap(original)
            self._installed.append((cls, original))

    def uninstall(self) -> None:
        for cls, original in self._installed:
            cls.run = original
        self._installed.clear()

    def _wrap(self, original):
        recorder = self

        def run(fn_self, *args, grid, warmup, **kwargs):
            if warmup or recorder.compile_only:
                return original(fn_self, *args, grid=grid, warmup=True, **kwargs)
            py_fn = getattr(fn_self, "fn", None)
            name = getattr(py_fn, "__name__", "?")
            filename = getattr(getattr(py_fn, "__code__", None), "co_filename", "?")
            stream = _current_stream()
            own = filename == recorder.own_filename
            was_in_launch = recorder.in_launch
            recorder.in_launch = True
            work_before = recorder.work.bytes if recorder.work else 0
            t0 = time.perf_counter()
            try:
                kernel = None if recorder.ghost else original(
                    fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                recorder.in_launch = was_in_launch
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

    def mark(self) -> int:
        return len(self.launches)

    def since(self, mark: int) -> list[KernelLaunch]:
        return self.launches[mark:]

    def own_names(self) -> list[str]:
        return sorted({launch.name for launch in self.launches if launch.own})

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


def make_aten_work_recorder(launches: LaunchRecorder):
    """A TorchDispatchMode that sums bytes touched by torch ops outside Triton launches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class AtenWorkRecorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bytes = 0
            self.ops: dict[str, int] = {}
            self.inside_kernel: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.__name__.split(".")[0]
            if launches.in_launch:
                # The interpreter itself only moves storages; compute here is the kernel
                # body calling torch, which a real GPU kernel cannot do.
                if name not in INTERPRETER_LAUNCH_OPS and name not in VIEW_OR_ALLOC_OPS:
                    self.inside_kernel[name] = self.inside_kernel.get(name, 0) + 1
                return out
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
    """Bytes the interpreter's loads and stores really move (masked-off lanes excluded)."""

    def __init__(self):
        self.bytes = 0
        self._installed: list = []

    def install(self) -> None:
        import numpy as np
        from triton.runtime.interpreter import InterpreterBuilder

        work = self
        load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store

        def create_masked_load(builder, ptrs, mask, other, *args, **kwargs):
            ret = load(builder, ptrs, mask, other, *args, **kwargs)
            work.bytes += int(np.count_nonzero(mask.data)) * ret.data.dtype.itemsize
            return ret

        def create_masked_store(builder, ptrs, value, mask, *args, **kwargs):
            work.bytes += int(np.count_nonzero(mask.data)) * value.data.dtype.itemsize
            return store(builder, ptrs, value, mask, *args, **kwargs)

        InterpreterBuilder.create_masked_load = create_masked_load
        InterpreterBuilder.create_masked_store = create_masked_store
        self._installed = [(InterpreterBuilder, "create_masked_load", load),
                           (InterpreterBuilder, "create_masked_store", store)]


def poisoned_allocations():
    """A dispatch mode that fills every fresh allocation with NaN (floats) or the largest
    value (integers), so stale memory cannot pass for a result."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    factories = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}

    class Poison(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.__name__.split(".")[0] in factories and isinstance(out, torch.Tensor):
                if out.is_floating_point() or out.is_complex():
                    out.fill_(float("nan"))
                elif out.dtype == torch.bool:
                    out.fill_(True)
                else:
                    out.fill_(torch.iinfo(out.dtype).max)
            return out

    return Poison()


# Ways out of the dispatch modes that count torch's work (and spot its results).
DISPATCH_ESCAPES = (
    ("torch.utils._python_dispatch", "_disable_current_modes"),
    ("torch.utils._python_dispatch", "_pop_mode"),
    ("torch.utils._python_dispatch", "_pop_mode_temporarily"),
    ("torch._C", "_pop_torch_dispatch_stack"),
    ("torch._C", "_unset_dispatch_mode"),
    ("torch._C", "_DisableTorchDispatch"),
    ("torch._C", "_DisablePythonDispatcher"),
    ("torch._C", "_set_dispatch_mode"),
)


def watch_dispatch_escapes(is_candidate_running, counts: dict) -> None:
    """Record every use of a dispatch-mode escape hatch while the candidate's forward runs
    (outside Triton launches). Installed before the candidate is imported, so its
    `from ... import` binds the watched version."""
    import importlib

    for module_name, attr in DISPATCH_ESCAPES:
        module = importlib.import_module(module_name)
        original = getattr(module, attr, None)
        if original is None:
            continue

        def watched(*args, __original=original, __name=f"{module_name}.{attr}", **kwargs):
            if is_candidate_running():
                counts[__name] = counts.get(__name, 0) + 1
            return __original(*args, **kwargs)

        setattr(module, attr, watched)


def result_spotter(shapes: list[list[int]], limit: int = 8):
    """A dispatch mode that keeps copies of torch-op results shaped like an output:
    in the ghost replay, one that matches the reference means torch computed the answer."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    wanted = {tuple(s) for s in shapes}

    class Spotter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.found: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.__name__.split(".")[0]
            if name in VIEW_OR_ALLOC_OPS or name in INTERPRETER_LAUNCH_OPS or name == "fill_":
                return out
            for t in out if isinstance(out, (list, tuple)) else (out,):
                if (isinstance(t, torch.Tensor) and len(self.found) < limit
                        and tuple(t.shape) in wanted and t.is_floating_point()):
                    self.found.append(t.detach().clone())
            return out

    return Spotter()
