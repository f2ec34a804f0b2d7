"""The watch around every candidate call, inside the sandbox child (trusted code installed
before the candidate is imported; everything it records is a hint the parent weighs, never
the proof of innocence).

`poisoned_allocations` fills fresh memory with data-like values in every call;
`result_spotter` projects every torch result with an output's number of elements on a
random vector the parent drew (the parent, which holds the reference, judges them);
`watch_dispatch_escapes` counts ways out of those dispatch modes; `watch_threads` counts
threads the candidate starts (the modes hold for one thread only).
"""

from __future__ import annotations

import threading

from search_engine.evaluation.hooks import INTERPRETER_LAUNCH_OPS, VIEW_OR_ALLOC_OPS


def poisoned_allocations(seed: int):
    """A dispatch mode that fills every fresh allocation with values that look like data
    (normal floats, small random integers, random booleans), in every call alike: stale
    memory cannot pass for a result, and a fill cannot be told from a trial's (no NaN to
    test for). Drawn from a private generator: the global RNG is untouched."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    factories = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
    generators: dict = {}

    def generator(device):
        if device not in generators:
            generators[device] = torch.Generator(device=device).manual_seed(seed)
        return generators[device]

    class Poison(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.__name__.split(".")[0] in factories and isinstance(out, torch.Tensor) \
                    and out.numel():
                g = generator(out.device)
                if out.is_floating_point() or out.is_complex():
                    try:
                        out.normal_(generator=g)
                    except (RuntimeError, NotImplementedError):  # float8 and the like
                        out.copy_(torch.randn(out.shape, generator=g, device=out.device))
                elif out.dtype == torch.bool:
                    out.copy_(torch.randint(0, 2, out.shape, generator=g, device=out.device))
                else:
                    out.random_(0, 100, generator=g)
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


def result_spotter(numels: list[int], probe_seed: int, in_launch=lambda: False,
                   keep_shapes: list | None = None, keep_limit: int = 64,
                   launches=lambda: 0):
    """A dispatch mode that projects every torch-op result with as many elements as an
    output (any shape, any dtype: complex by its real part, no limit on their number)
    onto a random vector drawn for this call: (numel, <result, r>, |result|). The parent,
    which holds the reference, knows <reference, r>; a match in the ghost replay (no
    kernel ran) means torch computed the answer. Decoys change nothing: every result is
    projected, and a projection is a few floats whatever the result's size. With
    `keep_shapes` (device-resident runs, where the reference lives in the problem's
    sandbox) copies reshaped to the output's shape are kept too, up to `keep_limit`."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    wanted = sorted(set(int(n) for n in numels if int(n) > 0))
    shapes = {int(torch.Size(s).numel()): tuple(s) for s in keep_shapes or []}

    class Spotter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            # (numel, projection, norm, own launches so far); the middle two 0-d tensors
            self.found: list = []
            self.kept: list = []
            self.vectors: dict = {}

        def vector(self, numel: int, device):
            key = (numel, str(device))
            if key not in self.vectors:
                self.vectors[key] = projection(numel, probe_seed).to(device)
            return self.vectors[key]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.__name__.split(".")[0]
            if in_launch() or name in VIEW_OR_ALLOC_OPS or name in INTERPRETER_LAUNCH_OPS \
                    or name == "fill_":
                return out
            for t in out if isinstance(out, (list, tuple)) else (out,):
                if isinstance(t, torch.Tensor) and t.numel() in wanted and \
                        t.dtype != torch.bool:
                    flat = t.detach().reshape(-1)
                    flat = (flat.real if flat.is_complex() else flat).to(torch.float64)
                    # kept as tensors: read as floats after the call, outside the watch
                    self.found.append((t.numel(), flat @ self.vector(t.numel(), flat.device),
                                       flat.norm(), launches()))
                    shape = shapes.get(t.numel())
                    if shape is not None and len(self.kept) < keep_limit:
                        self.kept.append(flat.to(torch.float32).reshape(shape).clone())
            return out

    return Spotter()


def projection(numel: int, seed: int):
    """The random vector results of `numel` elements are projected on (float64, CPU)."""
    import torch

    g = torch.Generator().manual_seed(seed % (1 << 63))
    return torch.randn(numel, dtype=torch.float64, generator=g)


def matching_projections(evidence: dict, references: list, probe: int,
                          tolerance: float, launched_after: bool = False) -> int:
    """How many torch results the child projected match a reference output: the same
    norm and the same projection on the call's random vector, within the tolerance
    (with `launched_after`: only those the candidate's kernels ran after, which then
    only moved an answer torch had computed)."""
    import torch

    tol = max(tolerance, 1e-6)
    reported = {int(e[0]) for e in evidence.get("projections", [])
                if isinstance(e, (list, tuple)) and e and isinstance(e[0], int)}
    known = {}
    for r in references:
        if r.numel() not in reported:
            continue  # the random vector only for sizes the child reported results of
        flat = r.reshape(-1).to(torch.float64)
        vector = projection(flat.numel(), probe).to(flat.device)
        known.setdefault(flat.numel(), []).append((float(flat @ vector), float(flat.norm())))
    matches = 0
    for entry in evidence.get("projections", []):
        try:
            numel, proj, norm = int(entry[0]), float(entry[1]), float(entry[2])
            after = int(entry[3]) if len(entry) > 3 else 0
        except (TypeError, ValueError, IndexError):
            continue
        if launched_after and after <= 0:
            continue
        if any(abs(norm - rn) <= tol * rn and abs(proj - rp) <= 4 * tol * max(rn, 1e-30)
               for rp, rn in known.get(numel, [])):
            matches += 1
    return matches


def watch_tensor_reads(recorder, host_reads: dict, scalar_reads: dict, watching) -> None:
    """Count Tensor -> host-Python conversions made outside kernels (NumPy or lists doing
    the math, always); scalars read out of tensors (`item()`, `float()`, `int()`,
    `__index__`) feed host arithmetic no kernel sees, and count while `watching()` (the
    candidate's import, construction and calls: the harness reads scalars of its own
    between them). The interpreter's own launches are exempt."""
    import torch

    def watch(name, counts, when=lambda: True):
        original = getattr(torch.Tensor, name)

        def wrapper(tensor, *args, **kwargs):
            if not recorder.in_launch and when():
                counts[name] = counts.get(name, 0) + 1
            return original(tensor, *args, **kwargs)
        setattr(torch.Tensor, name, wrapper)

    for name in ("numpy", "tolist", "__array__"):
        watch(name, host_reads)
    for name in ("item", "__float__", "__int__", "__index__", "__complex__"):
        watch(name, scalar_reads, watching)


def watch_threads(candidate_file, counts: dict) -> None:
    """Count threads the candidate's code starts (`threading.Thread.start`,
    `_thread.start_new_thread`): torch's dispatch modes, which count its work, spot its
    results and poison its memory, hold for one thread only, so a second thread is itself
    the violation. Installed before the candidate is imported."""
    import _thread
    import sys

    def from_candidate() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == candidate_file():
                return True
            frame = frame.f_back
        return False

    def note(name: str) -> None:
        if candidate_file() and from_candidate():
            counts[name] = counts.get(name, 0) + 1

    original_start = threading.Thread.start

    def start(thread, *args, **kwargs):
        note("threading.Thread.start")
        return original_start(thread, *args, **kwargs)

    threading.Thread.start = start
    for attr in ("start_new_thread", "start_new", "start_joinable_thread"):
        original = getattr(_thread, attr, None)
        if original is None:
            continue

        def started(*args, __original=original, __name=f"_thread.{attr}", **kwargs):
            note(__name)
            return __original(*args, **kwargs)

        setattr(_thread, attr, started)
        private = "_" + attr.replace("start_new", "start_new_thread").replace(
            "start_new_thread_thread", "start_new_thread")
        if getattr(threading, private, None) is original:
            setattr(threading, private, started)


def python_threads() -> set[int]:
    """Idents of the Python threads alive now (those `threading` does not know included)."""
    import sys

    return set(sys._current_frames())


def snapshot_harness(server) -> dict:
    """Where the harness's own code lives (the call wrapper and its requests, the wire
    helpers, the launch and load/store hooks, the tensor watchers, thread start), as it is
    before the candidate is imported: (owner, attribute) -> object."""
    import sys

    import torch

    from search_engine.evaluation import wire

    owners = [(type(server), [n for n in dir(type(server))
                              if n.startswith(("on_", "_call", "_shared_call", "_watched"))
                              or n in ("serve", "_export", "_failure")]),
              (wire, ["send", "recv", "plain_tensors", "decode_values", "encode_values"]),
              (sys.modules[__name__], ["poisoned_allocations", "result_spotter", "projection",
                                       "python_threads"]),
              (torch.Tensor, ["item", "tolist", "numpy", "__float__", "__int__", "__index__"]),
              (threading.Thread, ["start"])]
    try:
        from triton.runtime.jit import JITFunction

        owners.append((JITFunction, ["run"]))
        from triton.runtime.interpreter import InterpretedFunction, InterpreterBuilder

        owners += [(InterpretedFunction, ["run"]),
                   (InterpreterBuilder, ["create_masked_load", "create_masked_store"])]
    except ImportError:
        pass
    return {(owner, attr): getattr(owner, attr) for owner, attrs in owners for attr in attrs
            if hasattr(owner, attr)}


def tampered_harness(snapshot: dict) -> list[str]:
    """Names of harness code that is no longer what it was: the candidate replaced it
    (only a hint: a candidate that can do this can also hide it; the parent's own
    comparisons decide)."""
    changed = []
    for (owner, attr), original in snapshot.items():
        if owner.__dict__.get(attr, getattr(owner, attr, None)) is not original and \
                getattr(owner, attr, None) is not original:
            changed.append(f"{getattr(owner, '__name__', owner)}.{attr}")
    return sorted(changed)
