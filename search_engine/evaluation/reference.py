"""The reference side of an evaluation, as the trusted parent keeps it.

The problem's code runs in its own sandbox (`reference_child`): it draws every trial's
inputs and computes float64 outputs and the baselines' timings. The parent keeps the
answers here and hands the candidate's sandbox one trial's inputs at a time; the
candidate never receives the outputs, the weights' origin or the plan.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field

from search_engine.problems import Problem, ProblemError

GHOST_SEED_OFFSET = 104_729  # kept for older callers; the ghost's seed is now a trial seed


@dataclass
class ReferenceData:
    schedule: list[tuple[int, float, float]]
    init_seed: int
    init_inputs: list
    state_dict: dict
    outputs64: list[list]            # per trial: float64 outputs (CPU)
    output_dtypes: list[str]         # native dtype of each output
    output_shapes: list[list[int]]
    input_bytes: int                 # native bytes of one trial's inputs
    flops: int                       # from torch's FlopCounterMode (matmul/conv/attention)
    defects: list[str] = field(default_factory=list)
    inputs: list[list] = field(default_factory=list)  # per trial: the inputs (CPU)
    ghost_inputs: list = field(default_factory=list)
    ghost_outputs64: list = field(default_factory=list)
    baselines: dict = field(default_factory=dict)     # "eager"/"compile" timing stats
    notes: list[str] = field(default_factory=list)    # trial-plan adaptations
    isolation: dict = field(default_factory=dict)
    duration_s: float = 0.0
    link: "ResidentReference | None" = None  # resident: the live problem sandbox
    reference_method: str = "float64, whole trial"
    timing_sets: int = 0                      # input sets the timing rotates (resident)
    # the first trial at a second batch size (`second_shape`): inputs, float64 outputs and
    # both shapes, or {"skipped": why} when the problem's inputs do not allow one
    second_shape: dict = field(default_factory=dict)

    @property
    def resident(self) -> bool:
        return self.link is not None

    @property
    def trial_count(self) -> int:
        return len(self.schedule)

    @property
    def output_bytes(self) -> int:
        import torch

        return sum(int(torch.Size(s).numel()) * torch.empty((), dtype=getattr(torch, d.replace("torch.", ""))).element_size()
                   for s, d in zip(self.output_shapes, self.output_dtypes))


def _ghost_draw(schedule, config) -> tuple[int, float, float]:
    """The ghost replay's inputs are drawn like a trial's: a seed of the same secret kind
    and the scale and shift of a trial picked at random, so they look like any trial's."""
    import secrets

    _, scale, shift = schedule[secrets.randbelow(len(schedule))]
    return (config.trial_seed(len(schedule)), scale, shift)


def compute_reference(problem: Problem, schedule: list[tuple[int, float, float]],
                      init_seed: int, device: str, config=None, *,
                      l2_bytes: int = 64 << 20, policy: str = "strict") -> ReferenceData:
    """Run the problem in its sandbox; raise ProblemError when the problem itself fails.
    Baselines are timed at `policy`'s precision (`baseline_precision`)."""
    import time

    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.sandbox import (
        ProtocolViolation, SandboxDied, SandboxSession, SandboxTimeout, make_workdir,
    )

    config = config or EvaluationConfig()
    started = time.monotonic()
    workdir = make_workdir("kernelhub-ref-")
    (workdir / "problem.py").write_text(problem.source)
    ghost = _ghost_draw(schedule, config)
    plan = [list(t) for t in schedule] + [list(ghost)]
    env = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"} \
        if device == "cpu" else {}
    if config.resident_on(device):
        return _compute_resident(problem, schedule, init_seed, device, config, l2_bytes,
                                 plan, env, workdir, started, policy)
    session = SandboxSession("search_engine.evaluation.reference_child", ["--device", device],
                             workdir, timeout_s=config.reference_timeout_s, limits=config.limits,
                             env_extra=env, gpu=device == "cuda", log_chars=config.log_chars)
    from search_engine.evaluation import wire
    from search_engine.evaluation.gpu_lock import cuda_device_key, gpu_activity

    cache = BaselineCache(config.baseline_cache_dir)
    cache_key = cache.key(problem, schedule, init_seed, device, config, l2_bytes, policy)
    try:
        session.start()
        with gpu_activity(None if device == "cpu" else cuda_device_key()):
            meta, tensors = _ask(session, "setup", {"problem_file": str(workdir / "problem.py"),
                                                    "seed": init_seed, "schedule": plan})
            init_inputs = wire.decode_values(meta["init"], tensors)
            state = dict(zip(meta["state_keys"], tensors[meta["state_offset"]:]))
            trials = [_trial(session, i) for i in range(len(plan))]
            second = _second_shape(session, schedule[0][0])
        baselines = {}
        if config.time_baselines:
            baselines = cache.get(cache_key)
            if baselines is None:
                baselines = _baselines(session, config, device, len(schedule), l2_bytes,
                                       policy, problem.dtype)
                cache.put(cache_key, baselines)
        session.request("exit")
    except (SandboxDied, SandboxTimeout, ProtocolViolation) as exc:
        outcome = session.close()
        detail = "out of memory" if outcome.memory_exceeded else str(exc)
        raise ProblemError(f"the problem's reference Model failed to run in its sandbox "
                           f"({detail}); log: {outcome.log[-1500:]}") from None
    finally:
        outcome = session.close()
        shutil.rmtree(workdir, ignore_errors=True)
    (ghost_inputs, ghost_outputs) = trials.pop()
    return ReferenceData(
        schedule=[tuple(t) for t in meta["schedule"][:-1]], init_seed=init_seed,
        init_inputs=init_inputs, state_dict=state,
        outputs64=[out for _, out in trials], output_dtypes=meta["output_dtypes"],
        output_shapes=meta["output_shapes"], input_bytes=meta["input_bytes"],
        flops=meta["flops"], defects=meta["defects"], inputs=[inp for inp, _ in trials],
        ghost_inputs=ghost_inputs, ghost_outputs64=ghost_outputs, baselines=baselines,
        notes=meta["notes"], isolation=outcome.isolation, second_shape=second,
        duration_s=round(time.monotonic() - started, 3),
    )


def _compute_resident(problem: Problem, schedule, init_seed: int, device: str, config,
                      l2_bytes: int, plan: list, env: dict, workdir, started: float,
                      policy: str = "strict") -> ReferenceData:
    """The problem's sandbox set up and kept alive: trials are drawn, shared and judged
    there, per candidate (see `ResidentReference`)."""
    import time

    from search_engine.evaluation import wire
    from search_engine.evaluation.gpu_lock import cuda_device_key, gpu_activity
    from search_engine.evaluation.sandbox import (
        ProtocolViolation, SandboxDied, SandboxSession, SandboxTimeout,
    )

    session = SandboxSession("search_engine.evaluation.reference_child",
                             ["--device", device, "--resident"], workdir,
                             timeout_s=config.reference_timeout_s, limits=config.limits,
                             env_extra=env, gpu=device == "cuda", log_chars=config.log_chars)
    cache = BaselineCache(config.baseline_cache_dir)
    try:
        session.start()
        with gpu_activity(None if device == "cpu" else cuda_device_key()):
            meta, tensors = _ask(session, "setup", {
                "problem_file": str(workdir / "problem.py"), "seed": init_seed,
                "schedule": plan, "reference_chunk_bytes": config.reference_chunk_bytes})
            second = _second_shape(session, schedule[0][0])
        init_inputs = wire.decode_values(meta["init"], tensors)
        state = dict(zip(meta["state_keys"], tensors[meta["state_offset"]:]))
        n_trials = len(schedule)
        sets = n_trials if meta["input_bytes"] * n_trials <= config.resident_timing_bytes else 1
        baselines = {}
        if config.time_baselines:
            key = cache.key(problem, schedule, init_seed, device, config, l2_bytes, policy)
            baselines = cache.get(key)
            if baselines is None:
                baselines = _baselines(session, config, device, sets, l2_bytes, policy,
                                       problem.dtype)
                cache.put(key, baselines)
    except (SandboxDied, SandboxTimeout, ProtocolViolation) as exc:
        outcome = session.close()
        shutil.rmtree(workdir, ignore_errors=True)
        detail = "out of memory" if outcome.memory_exceeded else str(exc)
        raise ProblemError(f"the problem's reference Model failed to run in its sandbox "
                           f"({detail}); log: {outcome.log[-1500:]}") from None
    except BaseException:
        session.close()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    link = ResidentReference(session, workdir, config.reference_timeout_s,
                             slots=_memory_slots(device, meta, config),
                             device_key=None if device == "cpu" else cuda_device_key())
    return ReferenceData(
        schedule=[tuple(t) for t in meta["schedule"][:-1]], init_seed=init_seed,
        init_inputs=init_inputs, state_dict=state, outputs64=[],
        output_dtypes=meta["output_dtypes"], output_shapes=meta["output_shapes"],
        input_bytes=meta["input_bytes"], flops=meta["flops"], defects=meta["defects"],
        baselines=baselines, notes=meta["notes"], isolation=session.isolation,
        duration_s=round(time.monotonic() - started, 3), link=link, timing_sets=sets,
        second_shape=second,
        reference_method=meta.get("reference_method", "float64, whole trial"))


def _memory_slots(device: str, meta: dict, config) -> int:
    """How many candidates may hold an open trial at once: each needs about four times one
    trial's tensors on the device (shared inputs and the private copy, the float64
    reference, the candidate's outputs and their shared copy)."""
    if device != "cuda":
        return 4
    import torch

    out_bytes = sum(int(torch.Size(s).numel()) * 8 for s in meta["output_shapes"])
    need = 2 * meta["input_bytes"] + 2 * out_bytes + 1
    total = torch.cuda.get_device_properties(0).total_memory
    return max(1, min(8, int(0.6 * total // (2 * need))))


class ResidentReference:
    """The problem's sandbox, alive for as long as the reference is cached: candidates open
    a trial (inputs exported as shared buffers), hand their shared outputs to `judge`, and
    close it. One request at a time; `slots` bounds how many candidates hold trials. Its
    drawing, references and comparisons are GPU work: they wait while a candidate is timed."""

    def __init__(self, session, workdir, timeout_s: float, slots: int,
                 device_key: str | None = None):
        self.session, self.workdir, self.timeout_s = session, workdir, timeout_s
        self.device_key = device_key
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(slots)
        self.slot_count = slots
        self.closed = False
        import atexit

        atexit.register(self.close)  # the problem's sandbox must not outlive the evaluator

    def ask(self, kind: str, header: dict | None = None, fds: list[int] | None = None,
            max_reply_fds: int = 0, on_wait=None) -> tuple[dict, list]:
        """One request; `on_wait(seconds)` hears how long it queued for this sandbox (other
        lanes' requests) and for the GPU (a timing) before it was sent."""
        from search_engine.evaluation.gpu_lock import gpu_activity

        queued = time.monotonic()
        with self.lock, gpu_activity(self.device_key):
            if on_wait is not None:
                on_wait(time.monotonic() - queued)
            if self.closed:
                raise ProblemError("the problem's sandbox was closed")
            self.session.renew(self.timeout_s)
            reply, tensors = self.session.request(kind, header, fds=fds,
                                                  max_reply_bytes=256 << 20,
                                                  max_reply_fds=max_reply_fds)
        if not reply.get("ok"):
            from search_engine.evaluation import wire

            wire.close_fds(reply.get("fds", []))
            raise ProblemError(f"the problem's sandbox failed to {kind}: {reply.get('message')}")
        return reply, tensors

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            try:
                self.session.renew(10.0)
                self.session.request("exit")
            except Exception:  # noqa: BLE001 - it is killed below either way
                pass
            self.session.close()
            shutil.rmtree(self.workdir, ignore_errors=True)


def _ask(session, kind: str, header: dict | None = None) -> tuple[dict, list]:
    reply, tensors = session.request(kind, header, max_reply_bytes=1 << 40)
    if not reply.get("ok"):
        raise ProblemError(f"the problem's reference Model failed to run: {reply.get('message')}"
                           + (f"\n{reply['traceback']}" if reply.get("traceback") else ""))
    return reply, tensors


def _trial(session, index: int) -> tuple[list, list]:
    from search_engine.evaluation import wire

    reply, tensors = _ask(session, "trial", {"index": index})
    n_out = reply["n_outputs"]
    inputs = wire.decode_values(reply["inputs"], tensors[:len(tensors) - n_out])
    return inputs, tensors[len(tensors) - n_out:]


def _second_shape(session, seed: int) -> dict:
    """The problem's first trial at a second batch size, or why there is none (a problem
    without a batch, a reference that does not run there: never the problem's error)."""
    from search_engine.evaluation import wire

    reply, tensors = session.request("shape_trial", {"seed": seed}, max_reply_bytes=1 << 40)
    if not reply.get("ok"):
        return {"skipped": str(reply.get("message", "no second shape"))[:500]}
    n_out = reply["n_outputs"]
    return {"inputs": wire.decode_values(reply["inputs"], tensors[:len(tensors) - n_out]),
            "outputs64": tensors[len(tensors) - n_out:], "how": reply["how"],
            "official_shapes": reply["official_shapes"], "input_shapes": reply["input_shapes"]}


def _baselines(session, config, device: str, n_sets: int, l2_bytes: int,
               policy: str = "strict", problem_dtype: str = "float32") -> dict:
    from search_engine.evaluation.gpu_lock import cuda_device_key, quiet_gpu

    header = {"timing": config.timing_spec(l2_bytes), "sets": n_sets,
              "compile": config.time_compile_baseline, "policy": policy,
              "problem_dtype": problem_dtype}
    if device == "cpu":
        return _ask(session, "baselines", header)[0]["timing"]
    with quiet_gpu(cuda_device_key(), config.quiet_wait_s):
        return _ask(session, "baselines", header)[0]["timing"]


class BaselineCache:
    """Eager and torch.compile timings, once per problem, target, timing method, precision
    policy and library versions, kept on disk across runs and sessions (JSON files, one per
    key). The key carries `BASELINE_VERSION`: baselines measured before they followed the
    policy (PyTorch's TF32 defaults) are never reused. Interpreter timings are not worth
    keeping and are never cached."""

    def __init__(self, directory: str | None = None):
        import os
        from pathlib import Path

        root = directory or os.environ.get("KERNELHUB_CACHE_DIR") or \
            str(Path.home() / ".cache" / "kernelhub")
        self.directory = Path(root) / "baselines"

    def key(self, problem: Problem, schedule, init_seed: int, device: str, config,
            l2_bytes: int, policy: str = "strict") -> str | None:
        import hashlib
        import json

        from search_engine.evaluation.baseline_precision import BASELINE_VERSION

        if device == "cpu":
            return None
        import torch
        import triton

        # Trial seeds are secret and drawn per process: the timing depends on the plan's
        # shapes and scales, not on them.
        ident = {"problem": problem.source_hash, "schedule": [list(t[1:]) for t in schedule],
                 "seed": init_seed, "gpu": torch.cuda.get_device_name(),
                 "visible": __import__("os").environ.get("CUDA_VISIBLE_DEVICES", ""),
                 "torch": torch.__version__, "triton": triton.__version__,
                 "timing": config.timing_spec(l2_bytes),
                 "compile": config.time_compile_baseline,
                 "precision": policy, "version": BASELINE_VERSION}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]

    def get(self, key: str | None) -> dict | None:
        import json

        if key is None:
            return None
        try:
            data = json.loads((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and "eager" in data else None

    def put(self, key: str | None, baselines: dict) -> None:
        import json
        import os

        # eager must have measured; a torch.compile failure is kept (it fails the same way)
        if key is None or not (baselines.get("eager") or {}).get("median_ms"):
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.directory / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(baselines))
            tmp.replace(self.directory / f"{key}.json")
        except OSError:
            pass  # a cache that cannot be written only costs a re-measurement


def degenerate_reason(outputs: list, native_dtypes: list[str] | None = None) -> str:
    from search_engine.evaluation.reference_child import degenerate_reason as reason

    return reason(outputs, native_dtypes)


class ReferenceCache:
    """References per (problem, schedule, seed, device): the search evaluates many
    candidates of one problem."""

    def __init__(self, max_entries: int = 4):
        self._entries: dict[tuple, ReferenceData] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self.max_entries = max_entries

    def get(self, problem: Problem, schedule, init_seed: int, device: str,
            config=None, *, l2_bytes: int = 64 << 20, policy: str = "strict") -> ReferenceData:
        key = (problem.source_hash, tuple(map(tuple, schedule)), init_seed, device,
               bool(config.time_baselines) if config is not None else True, policy)
        with self._lock:
            if key in self._entries:
                return self._entries[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # concurrent candidates of one problem compute it once
            with self._lock:
                if key in self._entries:
                    return self._entries[key]
            data = compute_reference(problem, schedule, init_seed, device, config,
                                     l2_bytes=l2_bytes, policy=policy)
            with self._lock:
                if len(self._entries) >= self.max_entries:
                    evicted = self._entries.pop(next(iter(self._entries)))
                    if evicted.link is not None:
                        evicted.link.close()
                self._entries[key] = data
            return data

    def close(self) -> None:
        """Stop the problems' sandboxes kept alive for resident references."""
        with self._lock:
            entries, self._entries = list(self._entries.values()), {}
        for data in entries:
            if data.link is not None:
                data.link.close()
